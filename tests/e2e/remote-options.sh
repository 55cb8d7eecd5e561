#!/bin/sh
# The fleet tier's kjitd options (docs/remote.md): each bad value is refused
# with one line and exit status 2 before anything starts; good values start
# a daemon that serves.  The remote itself is exercised by
# build/tests/test-remote and, on the request path, tests/e2e/fleet.sh,
# both against a real redis-server; this file checks only the options.
. "$(dirname "$0")/lib.sh"

refused() { # name, expected words, kjitd options...
	name=$1
	words=$2
	shift 2
	"$KJITD" --foreground --socket "$T/none.sock" --cache-dir "$T/none" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq 2 ] && head -n 1 "$T/err" | grep -q "$words" && [ ! -e "$T/none.sock" ]; then
		ok "$name"
	else
		not_ok "$name" "exit $rc: $(head -n 1 "$T/err")"
	fi
}

refused remote-bad-scheme "expected redis://" --remote http://:s3cretpw@cache:6379
if grep -q s3cretpw "$T/err"; then not_ok remote-no-password-echo "the password was echoed"; else ok remote-no-password-echo; fi
refused remote-tls "no TLS" --remote rediss://cache:6380
refused remote-bad-port "port must be" --remote redis://cache:70000
refused remote-bad-db "database must be" --remote redis://cache/x
refused remote-bad-mode "expected ro or rw" --remote-mode rx
refused remote-bad-ttl "expected a duration" --remote-ttl 5y
refused remote-bad-timeout "1 to 60000" --remote-timeout 0
refused remote-bad-lookup "milliseconds per MiB" --remote-lookup-timeout 5+
refused remote-bad-lookup2 "1 to 60000" --remote-lookup-timeout 0
refused remote-bad-max "expected a size" --remote-max-object lots
KJITD_REMOTE=unix://relative.sock refused remote-bad-env "KJITD_REMOTE" --remote-mode ro

# Good values: the daemon starts and answers (with no Redis there: it serves locally).
if start_daemon --hip-compiler test --remote "unix://$T/no-redis.sock" --remote-prefix t:v1: \
	--remote-ttl 30d --remote-mode ro --remote-timeout 150 --remote-lookup-timeout 20+2 --remote-max-object 8M --no-compile; then
	pings() { "$KJIT" ping >/dev/null; }
	check remote-options-accepted pings
else
	not_ok remote-options-accepted "kjitd refused good remote options"
fi
stop_daemon
[ "$FAILS" -eq 0 ]
