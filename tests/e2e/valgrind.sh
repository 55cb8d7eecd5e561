#!/bin/sh
# valgrind.sh: kjitd under valgrind (memcheck) for a short session: ping,
# a compile of a small HIP source, a hit of the same, stats, stop.  Checks
# that kjitd exits cleanly with no memory error and no definite leak.
# Compile workers and the detection child are other processes, exec'd
# without valgrind (--trace-children=no); each process that valgrind does
# follow writes its own log (vg.PID.log) and forked children stay silent.
# Skipped (no test line) when valgrind is not installed.
. "$(dirname "$0")/lib.sh"

if ! command -v valgrind >/dev/null 2>&1; then
	echo "# valgrind not installed: skipped"
	exit 0
fi
# Valgrind cannot run a sanitizer build (make test-asan): ASan checks it there.
if grep -q __asan_init "$KJITD" 2>/dev/null; then
	echo "# $KJITD is built with AddressSanitizer: valgrind run skipped"
	exit 0
fi
VG_EXIT=""

# Replaces lib.sh's start_daemon: the same, under valgrind (slower to start).
start_daemon() {
	mkdir -p "$T/sock"
	valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
		--trace-children=no --child-silent-after-fork=yes --num-callers=30 \
		--log-file="$T/vg.%p.log" \
		"$KJITD" --foreground --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" \
		--log "$T/kjitd.log" "$@" &
	DAEMON_PID=$!
	i=0
	while [ $i -lt 600 ]; do
		"$KJIT" ping >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	echo "kjitd did not start under valgrind; log:" >&2
	cat "$T/kjitd.log" "$T"/vg.*.log >&2 2>/dev/null
	return 1
}

# `kjit stop`, then the exit status valgrind gives kjitd (99: errors found).
stop_daemon_vg() {
	"$KJIT" stop >/dev/null 2>&1
	i=0
	while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		VG_EXIT="hung"
		kill -9 "$DAEMON_PID" 2>/dev/null
	fi
	wait "$DAEMON_PID"
	rc=$?
	[ -n "$VG_EXIT" ] || VG_EXIT=$rc
	DAEMON_PID=""
}

SRC="$TOP/tests/e2e/data/scale.hip"
start_daemon || { not_ok "valgrind: kjitd starts" "it did not answer a ping within 30 s"; exit 1; }
VG_LOG="$T/vg.$DAEMON_PID.log"
check "valgrind: ping" "$KJIT" ping
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/a.hsaco" >"$T/r1" 2>&1
check "valgrind: get compiles ($(head -n 1 "$T/r1"))" grep -q '^compiled ' "$T/r1"
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/b.hsaco" >"$T/r2" 2>&1
check "valgrind: repeat is a hit" grep -q '^hit ' "$T/r2"
check "valgrind: hit has the same bytes" cmp -s "$T/a.hsaco" "$T/b.hsaco"
"$KJIT" stats --json >"$T/stats" 2>&1
check "valgrind: stats answers" grep -q '"hits"' "$T/stats"
stop_daemon_vg
check "valgrind: kjitd stopped by kjit stop (exit $VG_EXIT)" [ "$VG_EXIT" != hung ]
check "valgrind: exit status is not 99 (memory errors or definite leaks)" [ "$VG_EXIT" != 99 ]
check "valgrind: no memory errors" grep -q 'ERROR SUMMARY: 0 errors' "$VG_LOG"
if grep -q 'definitely lost:' "$VG_LOG"; then
	check "valgrind: definitely lost: 0 bytes" grep -q 'definitely lost: 0 bytes' "$VG_LOG"
else
	ok "valgrind: no leak summary (nothing lost)"
fi
if [ "$FAILS" -gt 0 ]; then
	echo "---- valgrind log of kjitd ----" >&2
	tail -n 80 "$VG_LOG" >&2
fi
finish
