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
# blob16384's twins in size, for the kept bytes at the end
for n in twin16384 ka kb kc; do
	head -c 16384 /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c 16384 >"$T/k/$n.src"
	echo "$n hip $n.src main" >>"$T/k/MANIFEST"
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

# -- kept bytes (kj__get_into_kept): a repeat of a process memo answer, or
#    with the memo off of a table answer, returns the bytes object returned
#    before; a forked child's new handle, whose memo numbers its entries
#    from 1 again, never gets the parent's bytes for its own entry of the
#    same number and size; after the kernel changes (same size), the new
#    bytes, never the kept ones.
"$KJIT" get --backend hip --target gfx90a --kernel twin16384 -o "$T/ctwin" >/dev/null 2>"$T/ctwin.err" || cat "$T/ctwin.err" >&2
cat >"$T/kept.py" <<'PY'
# kept.py DIR KERNEL: prints "kept ok", or what went wrong; leaves
# KERNEL's source rewritten.
import os, sys, time, kjit
d, kern = sys.argv[1], sys.argv[2]
def get(c, name):
    return c.get(kernel=name, backend="hip", target="gfx90a")
c = kjit.Client()
bad = []
blob, twin = open(f"{d}/k/{kern}.src", "rb").read(), open(f"{d}/ctwin", "rb").read()
a = [get(c, kern) for _ in range(4)]  # the first from the table: the memo's entry 1
if [x.data for x in a] != [blob] * 4:
    bad.append(f"{kern}: other bytes")
if not (a[2].data is a[1].data and a[3].data is a[1].data):
    bad.append("a repeat of a memo answer was copied again")
if type(a[3].data) is not bytes:
    bad.append(f"data is {type(a[3].data).__name__}")
r, w = os.pipe()
pid = os.fork()
if pid == 0:  # a new handle: its first entry, twin16384, is number 1 too
    os.close(r)
    t = [get(c, "twin16384").data for _ in range(3)]
    os.write(w, b"ok" if t == [twin] * 3 else b"the child got other bytes for twin16384")
    os._exit(0)
os.close(w)
msg = os.read(r, 200).decode()
os.waitpid(pid, 0)
if msg != "ok":
    bad.append(msg or "the child said nothing")
if get(c, kern).data is not a[1].data:
    bad.append("the parent's kept bytes went with the child's fork")
new = os.urandom(8192).hex().encode()
with open(f"{d}/k/{kern}.src.new", "wb") as f:
    f.write(new)
os.rename(f"{d}/k/{kern}.src.new", f"{d}/k/{kern}.src")
end, seen = time.monotonic() + 10, None
while time.monotonic() < end:
    seen = get(c, kern).data
    if seen not in (blob, new):
        bad.append(f"{kern} rewritten: {len(seen)} bytes that are neither the old nor the new")
        break
    if seen == new:
        break
    time.sleep(0.05)
if seen != new:
    bad.append(f"{kern} rewritten: the old bytes for 10 s")
else:  # kept again once the daemon answers from its table (or the memo) again
    end, same = time.monotonic() + 5, False
    while not same and time.monotonic() < end:
        x, y = get(c, kern).data, get(c, kern).data
        same = x is y and x == new
        if x != new or y != new:
            bad.append(f"{kern} rewritten: the old bytes again")
            break
    if not same:
        bad.append("the new entry's repeats were copied again for 5 s")
print("\n".join(bad) or "kept ok")
PY
env $(san_python_env) python3 "$T/kept.py" "$T" blob16384 >"$T/kept.out" 2>&1
[ "$(cat "$T/kept.out")" = "kept ok" ] || cat "$T/kept.out" >&2
check "a repeat of a memo answer is the same bytes; a child's handle, a rewritten kernel get their own ($(head -c 200 "$T/kept.out"))" \
	[ "$(cat "$T/kept.out")" = "kept ok" ]
head -c 16384 /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c 16384 >"$T/k/blob100.src.new"
mv "$T/k/blob100.src.new" "$T/k/blob100.src"
"$KJIT" get --backend hip --target gfx90a --kernel blob100 -o /dev/null >/dev/null 2>&1
env $(san_python_env) KJIT_PROCESS_MEMO=0 python3 "$T/kept.py" "$T" blob100 >"$T/kept0.out" 2>&1
[ "$(cat "$T/kept0.out")" = "kept ok" ] || cat "$T/kept0.out" >&2
check "the same with the memo off, from the table ($(head -c 200 "$T/kept0.out"))" [ "$(cat "$T/kept0.out")" = "kept ok" ]

# -- kept bytes across a reconnect: one Client keeps ka's and kc's bytes,
#    kjitd restarts (a new table; the memo emptied), then kb, of the same
#    size, must come back as kb's bytes, with no error for the restart: the
#    memo's numbers go on over the reconnect, the new table is a reader of
#    another id, and the request meeting the old connection is sent again.
cat >"$T/reconnect.py" <<'PY'
# reconnect.py DIR: prints "reconnect ok", or what went wrong.
import os, sys, time, kjit
d = sys.argv[1]
want = {n: open(f"{d}/k/{n}.src", "rb").read() for n in ("ka", "kb", "kc")}
c = kjit.Client()
def get(n):
    return c.get(kernel=n, backend="hip", target="gfx90a").data
before = [get(n) for n in ("ka", "ka", "ka", "kc", "kc", "kc")]
open(f"{d}/restart", "w").close()
end = time.monotonic() + 30
while not os.path.exists(f"{d}/restarted") and time.monotonic() < end:
    time.sleep(0.05)
# the Client's connection (kjit_open's, which carried no request: its hits
# came from the table and the memo) is the old daemon's: libkjit sends again
# on a new one, no error
after = [get("kb") for _ in range(4)]
bad = []
if before != [want["ka"]] * 3 + [want["kc"]] * 3:
    bad.append("ka or kc: other bytes")
if after != [want["kb"]] * 4:
    bad.append("kb after the restart: " + ", ".join("kc's" if x == want["kc"] else "ka's" if x == want["ka"]
                                                   else "kb's" if x == want["kb"] else "other" for x in after))
print("\n".join(bad) or "reconnect ok")
PY
for n in ka kb kc; do "$KJIT" get --backend hip --target gfx90a --kernel $n -o /dev/null >/dev/null 2>&1; done
rm -f "$T/restart" "$T/restarted"
env $(san_python_env) python3 "$T/reconnect.py" "$T" >"$T/reconnect.out" 2>&1 &
rpy=$!
i=0
while [ ! -e "$T/restart" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
stop_daemon
start_daemon --hip-compiler test --kernels-dir "$T/k" || not_ok restart "kjitd did not start again"
for n in ka kb kc; do "$KJIT" get --backend hip --target gfx90a --kernel $n -o /dev/null >/dev/null 2>&1; done
: >"$T/restarted"
wait $rpy
[ "$(cat "$T/reconnect.out")" = "reconnect ok" ] || cat "$T/reconnect.out" >&2
check "kept bytes across kjitd's restart: the reconnected Client's answers are its own ($(head -c 200 "$T/reconnect.out"))" \
	[ "$(cat "$T/reconnect.out")" = "reconnect ok" ]
finish
