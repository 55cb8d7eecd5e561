#!/bin/sh
# The compile workers' sandbox, seen from inside a worker (the test compiler
# family's "probe" and "fds" directives): Landlock keeps files outside the
# system trees out of reach, only the job channel and stdio are inherited,
# workers run with an empty environment, and each worker's private temporary
# directory is gone once the worker is.
. "$(dirname "$0")/lib.sh"

start_daemon --hip-compiler test || { not_ok start "kjitd did not start"; exit 1; }

probe() { # PATH -> the worker's log line
	printf '#pragma kjit_test probe %s\n' "$1" >"$T/probe.src"
	"$KJIT" get --source "$T/probe.src" --backend hip --target gfx90a 2>&1 | grep '^probe '
}
echo "secret" >"$T/secret.txt"
out=$(probe /usr/include/stdio.h)
check "a worker reads /usr/include ($out)" [ "$out" = "probe /usr/include/stdio.h: opened" ]
# The walls are only as good as the kernel: each worker logs what it got.
if grep -q 'Landlock unavailable' "$T/kjitd.log"; then
	echo "NOT RUN (kernel without Landlock; counted neither passed nor failed): file-wall checks" >&2
	grep 'Landlock unavailable' "$T/kjitd.log" | head -n 1 >&2
else
	check "the worker logs its Landlock walls" grep -q 'Landlock ABI' "$T/kjitd.log"
	# Outside its root (namespaces) the path does not exist; with Landlock
	# alone it exists but is refused.
	out=$(probe "$T/secret.txt")
	check "a worker cannot read a file outside its walls ($out)" \
		sh -c "[ '$out' = 'probe $T/secret.txt: No such file or directory' ] || [ '$out' = 'probe $T/secret.txt: Permission denied' ]"
	out=$(probe "$KJIT_CACHE_DIR/index.sqlite")
	check "a worker cannot read the cache ($out)" sh -c "[ '$out' = 'probe $KJIT_CACHE_DIR/index.sqlite: No such file or directory' ] || \
		[ '$out' = 'probe $KJIT_CACHE_DIR/index.sqlite: Permission denied' ]"
fi

printf '#pragma kjit_test fds\n' >"$T/fds.src"
fds=$("$KJIT" get --source "$T/fds.src" --backend hip --target gfx90a 2>&1 | grep '^fds:')
check "a worker inherits only stdio and its job channel ($fds)" [ "$fds" = "fds: 0 1 2 3" ]

check "compiles are logged with the client's uid and pid (SO_PEERCRED)" \
	grep -q "compile [0-9a-f]*: probe.src for gfx90a (test), uid $(id -u) pid [0-9]" "$T/kjitd.log"
check "refused requests too" sh -c "'$KJIT' get --source '$T/fds.src' --backend hip --target banana >/dev/null 2>&1; \
	grep -q 'refused a get from uid $(id -u) pid [0-9]' '$T/kjitd.log'"

dirs=$(ls "$KJIT_CACHE_DIR/tmp" | grep -c '^worker-')
check "each live worker has a private directory ($dirs)" [ "$dirs" -ge 1 ]
stop_daemon
check "worker directories are removed with their workers" [ "$(ls "$KJIT_CACHE_DIR/tmp" | grep -c '^worker-')" -eq 0 ]
# A daemon killed outright leaves its workers' directories; the next start clears them.
start_daemon --hip-compiler test || exit 1
"$KJIT" get --source "$T/fds.src" --backend hip --target gfx90a >/dev/null 2>&1
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=""
sleep 0.2
left=$(ls "$KJIT_CACHE_DIR/tmp" | grep -c '^worker-')
start_daemon --hip-compiler test || exit 1
check "a restart clears what a killed daemon's workers left ($left before)" [ "$(ls "$KJIT_CACHE_DIR/tmp" | grep -c '^worker-')" -eq 0 ]
finish
