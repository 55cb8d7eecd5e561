#!/bin/sh
# offloop.sh: gc, verify, clear, export and import run off kjitd's loop
# (daemon/admin/offloop.c, cache/job.c, cache/bulk.c, daemon/admin/bundle.c; issue
# 25).  On a cache of some thousands of entries, `kjit ping` is answered
# while each of them is still running, within PING_MAX_MS; the commands'
# results stay right (planted corruption found and dropped, gc under its
# cap keeping the entry used last, an orphan file swept, clear leaving
# nothing, an export imported back whole, with the same bytes).
. "$(dirname "$0")/lib.sh"

N=${OFFLOOP_N:-20000}           # synthetic entries
SIZE=${OFFLOOP_SIZE:-4096}      # bytes each
PING_MAX_MS=${PING_MAX_MS:-1000} # generous: a whole `kjit ping` process on 2 shared cores; the loop's own answer is ~1 ms

command -v python3 >/dev/null 2>&1 || { echo "# skip offloop: python3 is needed to populate the cache"; exit 0; }

start_daemon || { not_ok "kjitd starts" "see log"; exit 1; }
stop_daemon
# Synthetic entries (the layout of bench/populate.c): N files in 8 object
# directories and their rows, used a day ago.
python3 - "$KJIT_CACHE_DIR" "$N" "$SIZE" <<'EOF' || { not_ok "populate" "python failed"; exit 1; }
import hashlib, os, sqlite3, sys, time
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db = sqlite3.connect(os.path.join(d, "index.sqlite"))
db.execute("PRAGMA synchronous=OFF")
when = int(time.time()) - 86400
base = os.urandom(size)
rows = []
for i in range(n):
    ver = "syn%d" % (i % 8)
    sub = os.path.join(d, "gfx90a-" + ver)
    os.makedirs(sub, exist_ok=True)
    key = hashlib.sha256(b"kjit-offloop-%d" % i).hexdigest()
    data = i.to_bytes(8, "little") + base[8:]
    with open(os.path.join(sub, key + ".hsaco"), "wb") as f:
        f.write(data)
    rows.append((key, ver, size, hashlib.sha256(data).hexdigest(), when, when, i))
db.executemany("INSERT OR REPLACE INTO objects(key, backend, target, version, ext, size, sha256, created,"
               " last_used, used_seq, hits, compile_ms, source_name, options, compiler)"
               " VALUES(?1, 1, 'gfx90a', ?2, 'hsaco', ?3, ?4, ?5, ?6, ?7, 0, 250, 'synthetic.cu', '-O3', 'test 1')", rows)
db.commit()
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
EOF
# Two planted corruptions and one orphan file (no row names it).
set -- "$KJIT_CACHE_DIR"/gfx90a-syn3/*.hsaco
printf 'XXXXXXXX' | dd of="$1" bs=1 seek=100 conv=notrunc 2>/dev/null
rm -f "$2"
ORPHAN="$KJIT_CACHE_DIR/gfx90a-syn5/$(printf '%064d' 7).hsaco"
echo orphan >"$ORPHAN"

start_daemon || { not_ok "kjitd starts on the populated cache" "see log"; exit 1; }
check "the populated entries are loaded" [ "$("$KJIT" stats --json | grep -o '"entries":[0-9]*' | head -n 1 | cut -d: -f2)" -ge "$N" ]

ms_now() { date +%s%N | cut -c1-13; }

# pings_during CMD...: runs the admin command in the background and pings
# until it ends.  Sets PINGS (answered while it still ran: a loop busy with
# the command answers none), PMAX (the slowest of the pings sent while it
# ran, ms, the one a busy loop answers late included), RC (the command's
# exit status).
pings_during() {
	"$KJIT" "$@" >"$T/cmd.out" 2>&1 &
	cpid=$!
	PINGS=0
	PMAX=0
	sleep 0.05
	while kill -0 "$cpid" 2>/dev/null; do
		t0=$(ms_now)
		"$KJIT" ping >/dev/null 2>&1 || { PMAX=999999; break; }
		dt=$(($(ms_now) - t0))
		[ "$dt" -gt "$PMAX" ] && PMAX=$dt
		kill -0 "$cpid" 2>/dev/null && PINGS=$((PINGS + 1))
	done
	wait "$cpid"
	RC=$?
}

pings_during verify
check "verify finds the planted corruption (exit 1)" [ "$RC" -eq 1 ]
check "verify drops both corrupt objects" grep -q "2 corrupt or missing" "$T/cmd.out"
check "pings answered while verify ran ($PINGS)" [ "$PINGS" -ge 1 ]
check "each within ${PING_MAX_MS} ms during verify (slowest ${PMAX} ms)" [ "$PMAX" -le "$PING_MAX_MS" ]
check "verify swept the orphan file" [ ! -e "$ORPHAN" ]
check "verify afterwards is clean" "$KJIT" verify

# A real entry, used last: gc must keep it.
if "$KJIT" get --kernel add_f32 --backend vulkan --target vulkan1.2 -o "$T/a.spv" >/dev/null 2>&1; then
	HAVE_REAL=1
else
	HAVE_REAL=0
	echo "# skip offloop gc-keeps-recent: no Vulkan compile here"
fi
total=$("$KJIT" stats --json | grep -o '"bytes":[0-9]*' | head -n 1 | cut -d: -f2)
pings_during gc --max-size $((total / 2))
check "gc exits 0" [ "$RC" -eq 0 ]
check "each within ${PING_MAX_MS} ms during gc (slowest ${PMAX} ms)" [ "$PMAX" -le "$PING_MAX_MS" ]
bytes=$("$KJIT" stats --json | grep -o '"bytes":[0-9]*' | head -n 1 | cut -d: -f2)
check "gc keeps the cache under the cap ($bytes <= $((total / 2)))" [ "$bytes" -le $((total / 2)) ]
files=$(find "$KJIT_CACHE_DIR" -name '*.hsaco' | wc -l)
entries=$("$KJIT" stats --json | grep -o '"entries":[0-9]*' | head -n 1 | cut -d: -f2)
check "gc removed the files of what it evicted ($files files, $entries entries)" [ "$files" -le "$entries" ]
if [ "$HAVE_REAL" = 1 ]; then
	"$KJIT" get --kernel add_f32 --backend vulkan --target vulkan1.2 -o "$T/b.spv" >"$T/r" 2>&1
	check "gc kept the entry used last (a hit)" grep -q '^hit' "$T/r"
fi
check "verify after gc is clean" "$KJIT" verify

before=$("$KJIT" stats --json | grep -o '"entries":[0-9]*' | head -n 1 | cut -d: -f2)
pings_during export -o "$T/all.kjb"
check "export exits 0" [ "$RC" -eq 0 ]
check "each within ${PING_MAX_MS} ms during export (slowest ${PMAX} ms)" [ "$PMAX" -le "$PING_MAX_MS" ]
check "export wrote every entry" grep -q "export: $before entries" "$T/cmd.out"

pings_during clear
check "clear exits 0" [ "$RC" -eq 0 ]
check "clear leaves no entry" [ "$("$KJIT" stats --json | grep -o '"entries":[0-9]*' | head -n 1 | cut -d: -f2)" -eq 0 ]
check "clear leaves no object file" [ "$(find "$KJIT_CACHE_DIR" -name '*.hsaco' -o -name '*.spv' | wc -l)" -eq 0 ]

pings_during import "$T/all.kjb"
check "import exits 0" [ "$RC" -eq 0 ]
check "pings answered while import ran ($PINGS)" [ "$PINGS" -ge 1 ]
check "each within ${PING_MAX_MS} ms during import (slowest ${PMAX} ms)" [ "$PMAX" -le "$PING_MAX_MS" ]
check "import adds every entry back" grep -q "import: $before entries added" "$T/cmd.out"
check "the entries are in the table" [ "$("$KJIT" stats --json | grep -o '"entries":[0-9]*' | head -n 1 | cut -d: -f2)" -eq "$before" ]
check "verify after import is clean" "$KJIT" verify
if [ "$HAVE_REAL" = 1 ]; then
	"$KJIT" get --kernel add_f32 --backend vulkan --target vulkan1.2 -o "$T/c.spv" >"$T/r" 2>&1
	check "an imported entry is a hit" grep -q '^hit' "$T/r"
	check "with the same bytes" cmp -s "$T/a.spv" "$T/c.spv"
fi
"$KJIT" import "$T/all.kjb" >"$T/cmd.out" 2>&1
check "importing twice adds nothing" grep -q "import: 0 entries added, $before already cached" "$T/cmd.out"
check "kjitd still answers" "$KJIT" ping
stop_daemon
exit 0
