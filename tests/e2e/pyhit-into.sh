#!/bin/sh
# pyhit-into.sh: kjit.Client.get's bytes made through libkjit's kj__get_into
# (client/getinto.h, issue 35): the object copied once, straight into the
# bytes object, from the process memo, the shared hit table and the socket.
# Each path's bytes and fields are the C client's (`kjit get`), byte for
# byte, for objects of 100 B, 16 KB and 300 KB; the kjit_result path
# (view=True) agrees; and Python readers with the memo off, hitting the
# table while the daemon invalidates and rewrites it under them (`kjit
# clear` and recompiles, real processes), never get other bytes.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || { not_ok "python3" "not installed: NOT tested"; exit 1; }
mkdir -p "$T/k"
for n in 100 16384 300000; do
	head -c $n /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c $n >"$T/k/blob$n.src"
	echo "blob$n hip blob$n.src main" >>"$T/k/MANIFEST"
done
start_daemon --hip-compiler test --kernels-dir "$T/k" || { not_ok start "kjitd did not start"; exit 1; }
check "the table is on" grep -q "shared hit table on" "$T/kjitd.log"
for n in 100 16384 300000; do
	"$KJIT" get --backend hip --target gfx90a --kernel blob$n --json -o "$T/c$n" >"$T/c$n.json" 2>"$T/c$n.err" ||
		cat "$T/c$n.err" >&2
done
check "the C client got the three objects" [ -s "$T/c100" -a -s "$T/c16384" -a -s "$T/c300000" ]

export PYTHONPATH="$TOP/python" PYTHONDONTWRITEBYTECODE=1 KJIT_PYTHON_EXT=1 KJIT_LIBRARY="$TOP/$BUILD/libkjit.so"
cat >"$T/same.py" <<'PY'
# same.py MODE DIR: every blob got twice by one Client (MODE: memo, table,
# socket) equal to the C client's; prints "into" when the bytes came
# through kj__get_into.
import json, sys, kjit
mode, d = sys.argv[1], sys.argv[2]
c = kjit.Client()
bad = []
for n in (100, 16384, 300000):
    want = open(f"{d}/c{n}", "rb").read()
    meta = json.load(open(f"{d}/c{n}.json"))
    for i in range(3):
        o = c.get(kernel=f"blob{n}", backend="hip", target="gfx90a", view=(i == 2))
        got = bytes(o.data)
        if i < 2 and type(o.data) is not bytes:
            bad.append(f"blob{n}: data is {type(o.data).__name__}")
        if got != want:
            bad.append(f"blob{n} call {i}: {len(got)} bytes, not the C client's {len(want)}")
        if (o.key, o.target, o.status) != (meta["key"], meta["target"], "hit"):
            bad.append(f"blob{n} call {i}: {o.key} {o.target} {o.status}, not {meta['key']} {meta['target']} hit")
print("\n".join(bad) if bad else ("into" if c._hitter.into else "not into"))
PY
# mode ENV...: same.py under ENV; its output, and the GETs the socket and
# the table answered meanwhile.
mode() {
	m=$1
	shift
	f0=$(stat_value fast_hits)
	r0=$(stat_value requests)
	env $(san_python_env) "$@" python3 "$T/same.py" $m "$T" >"$T/$m.out" 2>&1
	f1=$(stat_value fast_hits)
	r1=$(stat_value requests)
	echo $((f1 - f0)) >"$T/$m.fast"
	echo $((r1 - r0 - (f1 - f0))) >"$T/$m.sock" # requests counts the table's hits too
}
mode memo KJIT_FAST_PATH=0
mode table KJIT_PROCESS_MEMO=0
mode socket KJIT_PROCESS_MEMO=0 KJIT_FAST_PATH=0
for m in memo table socket; do
	[ "$(cat "$T/$m.out")" = into ] || cat "$T/$m.out" >&2
	check "$m answers: bytes through kj__get_into, the C client's" [ "$(tail -n 1 "$T/$m.out" | head -c 200)" = into ]
done
check "the memo answered 6 of 9 (table off; the socket $(cat "$T/memo.sock"))" [ "$(cat "$T/memo.sock")" -eq 3 ]
check "the table answered 9 of 9 (fast hits $(cat "$T/table.fast"), the socket $(cat "$T/table.sock"))" \
	[ "$(cat "$T/table.fast")" -eq 9 -a "$(cat "$T/table.sock")" -eq 0 ]
check "the socket answered 9 of 9 (fast hits $(cat "$T/socket.fast"), the socket $(cat "$T/socket.sock"))" \
	[ "$(cat "$T/socket.fast")" -eq 0 -a "$(cat "$T/socket.sock")" -eq 9 ]

# -- the table rewritten under Python readers (memo off): entries cleared,
#    the table invalidated, the objects compiled and published again.
cat >"$T/race.py" <<'PY'
# race.py DIR SECONDS: gets blob16384 and blob300000 for SECONDS; prints
# the number of gets, or the first mismatch.
import sys, time, kjit
d, secs = sys.argv[1], float(sys.argv[2])
want = {n: open(f"{d}/c{n}", "rb").read() for n in (16384, 300000)}
c = kjit.Client()
assert c._hitter.into
end, k = time.monotonic() + secs, 0
while time.monotonic() < end:
    for n, w in want.items():
        got = c.get(kernel=f"blob{n}", backend="hip", target="gfx90a").data
        if got != w:
            print(f"blob{n}: other bytes ({len(got)}) after {k} gets")
            sys.exit(1)
        k += 1
print(k)
PY
( i=0; while [ $i -lt 8 ]; do sleep 0.3; "$KJIT" clear --target gfx90a >/dev/null 2>&1;
	"$KJIT" get --backend hip --target gfx90a --kernel blob100 >/dev/null 2>&1; i=$((i + 1)); done ) &
inval=$!
f0=$(stat_value fast_hits)
env $(san_python_env) KJIT_PROCESS_MEMO=0 python3 "$T/race.py" "$T" 3 >"$T/race1" 2>&1 &
r1=$!
env $(san_python_env) KJIT_PROCESS_MEMO=0 python3 "$T/race.py" "$T" 3 >"$T/race2" 2>&1
rc2=$?
wait $r1
rc1=$?
wait $inval
f1=$(stat_value fast_hits)
check "two Python readers under a rewriting daemon always get the C client's bytes ($(tail -qn 1 "$T/race1" "$T/race2" | tr '\n' ' '))" \
	[ $rc1 -eq 0 -a $rc2 -eq 0 ]
check "the table was invalidated meanwhile" grep -q "hit table invalidated" "$T/kjitd.log"
check "the readers went through the table ($((f1 - f0)) fast hits)" [ $((f1 - f0)) -gt 1000 ]
finish
