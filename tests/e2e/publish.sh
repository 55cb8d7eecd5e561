#!/bin/sh
# publish.sh: the publish of a compiled object runs off kjitd's loop
# (daemon/miss/publish.c, cache/publish.c; issue 25).  kjitd runs on a slow
# disk: tests/e2e/slowfsync.c, preloaded into kjitd only, makes each fsync
# of an object's temporary file sleep 3 s.  Checked: the client has its
# object long before the publish ends; a stream of requests for it during
# the publish is answered (hits, bytes identical, nothing recompiled, no
# file on disk yet: they come from memory); ping is answered meanwhile;
# the publish then completes (file, row, verify clean, a hit after a
# restart); a stop waits for a publish in flight; kill -9 mid-publish,
# then a restart: no corrupt object is served, no temporary file is left,
# verify finds the index consistent.
. "$(dirname "$0")/lib.sh"

SHIM="$T/slowfsync.so"
if ! cc -shared -fPIC -O2 -o "$SHIM" "$TOP/tests/e2e/slowfsync.c" -ldl 2>"$T/cc.err"; then
	echo "# skip publish: cannot build the slow-disk shim: $(head -c 200 "$T/cc.err")"
	exit 0
fi
if nm "$KJITD" 2>/dev/null | grep -q '__asan_init'; then
	echo "# skip publish: a sanitized kjitd (the shim is not preloaded under ASan)"
	exit 0
fi
SLOW_MS=3000
SRC="$T/src"
mkdir -p "$SRC"

# start_slow: kjitd with the slow disk (the shim in its environment only).
start_slow() {
	export LD_PRELOAD="$SHIM" KJIT_TEST_SLOW_FSYNC_MS=$SLOW_MS
	start_daemon --hip-compiler test --jobs 2 --no-shared-hit-table
	rc=$?
	unset LD_PRELOAD KJIT_TEST_SLOW_FSYNC_MS
	return $rc
}
# src NAME SIZE: a source the test compiler turns into SIZE bytes.
src() { printf '#pragma kjit_test size %s\n// %s\n' "$2" "$1" >"$SRC/$1.hip"; }
get() { # NAME OUT: status line to OUT.get, object to OUT
	"$KJIT" get --source "$SRC/$1.hip" --backend hip --target gfx90a -o "$2" >"$2.get" 2>&1
}
objects() { find "$KJIT_CACHE_DIR" -path "$KJIT_CACHE_DIR/recipes" -prune -o -type f -name '*.hsaco' -print | wc -l; }
tmps() { find "$KJIT_CACHE_DIR" -type f -name '*.tmp.*' | wc -l; }
now_ms() { date +%s%3N; }
verify_quiet() { "$KJIT" verify >/dev/null 2>&1; }

# ---- hits during a slow publish ----
start_slow || { not_ok start "kjitd did not start"; exit 1; }
src big 4000000
t0=$(now_ms)
get big "$T/a"
t1=$(now_ms)
check "compiled-before-publish" grep -q '^compiled' "$T/a.get"
check "answer-not-held-by-publish ($((t1 - t0)) ms < $SLOW_MS)" [ $((t1 - t0)) -lt $((SLOW_MS - 500)) ]
served=0 same=1 i=0
while [ $i -lt 10 ]; do
	get big "$T/b$i"
	grep -q '^hit' "$T/b$i.get" && served=$((served + 1))
	cmp -s "$T/a" "$T/b$i" || same=0
	i=$((i + 1))
done
on_disk=$(objects)
check "stream-served-during-publish ($served/10 hits)" [ "$served" -eq 10 ]
check "stream-bytes-identical" [ "$same" -eq 1 ]
check "served-from-memory (no object file yet: $on_disk)" [ "$on_disk" -eq 0 ]
t0=$(now_ms)
"$KJIT" ping >/dev/null 2>&1
t1=$(now_ms)
check "ping-during-publish ($((t1 - t0)) ms)" [ $((t1 - t0)) -lt 1000 ]
check "nothing-recompiled" [ "$(stat_value compiles)" = 1 ]
KEY=$(awk 'NR == 1 { print $2 }' "$T/a.get")
"$KJIT" ls >"$T/ls" 2>&1
check "ls-sees-answered-object" grep -q "$KEY" "$T/ls"
check "stats-counts-answered-object" [ "$(stat_value entries)" = 1 ]
# admin commands begin once the publishes in flight have finished: they see the object
"$KJIT" export -o "$T/x.kjb" >/dev/null 2>&1
check "export-waits-for-publish" [ "$(wc -c <"$T/x.kjb" 2>/dev/null || echo 0)" -ge 4000000 ]
i=0
while [ "$(objects)" -eq 0 ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.3
check "publish-completes" [ "$(objects)" -eq 1 ]
get big "$T/c"
check "hit-after-publish" grep -q '^hit' "$T/c.get"
check "bytes-after-publish" cmp -s "$T/a" "$T/c"
check "no-publish-error" [ "$(stat_value publish_errors)" = 0 ]
check "verify-clean" verify_quiet

# ---- a stop waits for the publish in flight ----
src stopped 2000000
get stopped "$T/s"
check "compiled-before-stop" grep -q '^compiled' "$T/s.get"
stop_daemon
check "stop-left-no-tmp" [ "$(tmps)" -eq 0 ]
start_daemon --hip-compiler test || { not_ok restart "kjitd did not start"; exit 1; }
get stopped "$T/s2"
check "stop-finished-publish (hit after restart)" grep -q '^hit' "$T/s2.get"
check "stop-bytes-identical" cmp -s "$T/s" "$T/s2"
get big "$T/c2"
check "earlier-publish-kept" grep -q '^hit' "$T/c2.get"
stop_daemon

# ---- kill -9 mid-publish ----
start_slow || { not_ok start2 "kjitd did not start"; exit 1; }
src killed 3000000
get killed "$T/k"
check "compiled-before-kill" grep -q '^compiled' "$T/k.get"
sleep 0.5
check "killed-mid-publish (a temporary file exists)" [ "$(tmps)" -ge 1 ]
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=""
start_daemon --hip-compiler test || { not_ok restart2 "kjitd did not start"; exit 1; }
check "kill-left-no-tmp (swept at open)" [ "$(tmps)" -eq 0 ]
get killed "$T/k2"
check "kill-then-recompiled (no row, no object served)" grep -q '^compiled' "$T/k2.get"
check "kill-bytes-identical" cmp -s "$T/k" "$T/k2"
sleep 0.5
check "kill-verify-clean" verify_quiet
get big "$T/c3"
check "kill-kept-others" cmp -s "$T/a" "$T/c3"
finish
