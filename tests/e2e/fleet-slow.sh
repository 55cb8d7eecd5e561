#!/bin/sh
# fleet-slow.sh: the remote-hit path against a real redis-server that
# answers slowly (issue 35, item 2): a lookup's deadline holds whatever the
# server does, and a slow answer within it is still a remote hit.
#   - a proxy written here delays every reply of the real Redis by D ms:
#     D = 60, within a 700 ms lookup deadline: a remote hit, same bytes,
#     no compile; D = 4000, past it: the node compiles and answers long
#     before the delayed reply would have come, the timeout counted;
#   - DEBUG SLEEP 4 on the real Redis (it answers nothing meanwhile): a
#     node asked for a published object answers by compiling within its
#     deadline; once Redis is awake the node serves remote hits again.
# Nothing here measures speed: the bounds are the deadlines (ms), with room
# for a loaded machine, each far below the delay it must not wait for.
. "$(dirname "$0")/lib.sh"

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 ||
	! command -v python3 >/dev/null 2>&1; then
	echo "ok fleet-slow # SKIP redis-server/redis-cli/python3 not installed (scripts/deps.sh installs them)"
	exit 0
fi

RS="$T/redis.sock"
PS="$T/proxy.sock"
REDIS_PID="" PROXY_PID="" NODES=""
ms() { date +%s%3N; }
rcli() { redis-cli -s "$RS" "$@"; }

# DEBUG SLEEP needs enable-debug-command on Redis 7 (an older one has no
# such setting and allows DEBUG).
DBG=""
redis-server --version 2>&1 | grep -q 'v=[0-6]\.' || DBG="--enable-debug-command local"
# shellcheck disable=SC2086
redis-server --port 0 --unixsocket "$RS" --unixsocketperm 700 --save "" --appendonly no \
	--dir "$T" --logfile "$T/redis.log" $DBG &
REDIS_PID=$!
i=0
until [ "$(rcli ping 2>/dev/null)" = PONG ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done

# The proxy: every byte from Redis reaches the client D ms later, D read
# from $T/delay_ms for each chunk; requests pass at once.
cat >"$T/proxy.py" <<'EOF'
import os, socket, sys, threading, time
listen, upstream, delay_file = sys.argv[1:4]

def delay():
    try:
        with open(delay_file) as f:
            return int(f.read().strip() or 0) / 1000.0
    except (OSError, ValueError):
        return 0.0

def pump(src, dst, slow):
    try:
        while True:
            b = src.recv(1 << 20)
            if not b:
                break
            if slow:
                time.sleep(delay())
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

srv = socket.socket(socket.AF_UNIX)
srv.bind(listen)
srv.listen(16)
while True:
    c, _ = srv.accept()
    u = socket.socket(socket.AF_UNIX)
    u.connect(upstream)
    threading.Thread(target=pump, args=(c, u, False), daemon=True).start()
    threading.Thread(target=pump, args=(u, c, True), daemon=True).start()
EOF
echo 0 >"$T/delay_ms"
python3 "$T/proxy.py" "$PS" "$RS" "$T/delay_ms" &
PROXY_PID=$!
i=0
until [ -S "$PS" ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done

# node N URL-SOCKET [kjitd options]
node() {
	n=$1 sock=$2
	shift 2
	mkdir -p "$T/n"
	"$KJITD" --foreground --socket "$T/n/$n.sock" --cache-dir "$T/c/$n" --log "$T/log.$n" \
		--hip-compiler test --remote "unix://$sock" --remote-timeout 3000 "$@" &
	eval "PID_$n=$!"
	NODES="$NODES $n"
	i=0
	until kj "$n" ping >/dev/null 2>&1 || [ $i -ge 300 ]; do sleep 0.05; i=$((i + 1)); done
	kj "$n" ping >/dev/null 2>&1
}
kj() { n=$1; shift; KJIT_SOCKET="$T/n/$n.sock" "$KJIT" "$@"; }
rstat() { kj "$1" stats --json | sed 's/.*"remote"://' | tr ',{}' '\n\n\n' | sed -n "s/^\"$2\":\([0-9]*\)$/\1/p" | head -n 1; }
nstat() { kj "$1" stats --json | tr ',{}' '\n\n\n' | sed -n "s/^\"$2\":\([0-9]*\)$/\1/p" | head -n 1; }
src() { printf '// %s %s\nint x_%s;\n' "$1" "$$" "$1" >"$T/$1.src"; echo "$T/$1.src"; }
get() { # N SRC OUT: the object to OUT, kjit's line to OUT.line, the wall ms to OUT.ms
	t0=$(ms)
	kj "$1" get --source "$2" --backend hip --target gfx90a -o "$3" >"$3.line" 2>&1
	echo $(($(ms) - t0)) >"$3.ms"
}
wait_key() { i=0; until [ "$(rcli exists "kjit:v2:$1")" = 1 ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done; }
publish() { # NAME: compiled on node 1, in Redis once this returns
	get 1 "$(src "$1")" "$T/$1.ref"
	wait_key "$(cut -d' ' -f2 "$T/$1.ref.line")"
}
cleanup_all() {
	for n in $NODES; do
		p=$(eval "echo \${PID_$n:-}")
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
	[ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "# kept $T" >&2 || rm -rf "$T"
}
trap cleanup_all EXIT INT TERM

node 1 "$RS" || { not_ok fleet-slow "node 1 did not start"; exit 1; }
node 2 "$PS" --remote-lookup-timeout 700 || { not_ok fleet-slow "node 2 did not start"; exit 1; }
node 3 "$RS" --remote-lookup-timeout 700 || { not_ok fleet-slow "node 3 did not start"; exit 1; }
for s in slow1 slow2 sleep1 sleep2; do publish $s; done

# -- a slow Redis within the deadline: still a remote hit
echo 60 >"$T/delay_ms"
get 2 "$T/slow1.src" "$T/slow1.b"
check "60 ms late, 700 ms deadline: a remote hit ($(cat "$T/slow1.b.line"), $(cat "$T/slow1.b.ms") ms)" \
	grep -q '^remote hit ' "$T/slow1.b.line"
check "the same bytes as the node that compiled it" cmp -s "$T/slow1.ref" "$T/slow1.b"
check "it waited for the slow reply ($(cat "$T/slow1.b.ms") ms >= 60)" [ "$(cat "$T/slow1.b.ms")" -ge 60 ]
check "no compile on the slow node" [ "$(nstat 2 compiles)" = 0 ]

# -- a Redis slower than the deadline: compiled here, long before the reply
echo 4000 >"$T/delay_ms"
get 2 "$T/slow2.src" "$T/slow2.b"
check "4 s late, 700 ms deadline: compiled here ($(cat "$T/slow2.b.line"))" grep -q '^compiled ' "$T/slow2.b.line"
check "answered within the deadline and a compile, not after the 4 s reply ($(cat "$T/slow2.b.ms") ms < 3000)" \
	[ "$(cat "$T/slow2.b.ms")" -lt 3000 ]
check "the same bytes" cmp -s "$T/slow2.ref" "$T/slow2.b"
check "the timeout counted ($(rstat 2 timeouts))" [ "$(rstat 2 timeouts)" -ge 1 ]
echo 0 >"$T/delay_ms"

# -- the real Redis asleep (DEBUG SLEEP): its clients get nothing meanwhile
if [ "$(rcli debug sleep 0 2>&1)" = OK ]; then
	rcli debug sleep 4 >/dev/null 2>&1 &
	SLEEPER=$!
	sleep 0.3
	get 3 "$T/sleep1.src" "$T/sleep1.b"
	check "Redis asleep 4 s: compiled here ($(cat "$T/sleep1.b.line"))" grep -q '^compiled ' "$T/sleep1.b.line"
	check "within the deadline and a compile ($(cat "$T/sleep1.b.ms") ms < 3000)" [ "$(cat "$T/sleep1.b.ms")" -lt 3000 ]
	check "the same bytes" cmp -s "$T/sleep1.ref" "$T/sleep1.b"
	wait "$SLEEPER"
	# awake: the node reconnects (backoff) and serves remote hits again
	i=0
	until [ $i -ge 40 ]; do
		get 3 "$T/sleep2.src" "$T/sleep2.b"
		grep -q '^remote hit ' "$T/sleep2.b.line" && break
		kj 3 clear >/dev/null 2>&1
		sleep 0.25
		i=$((i + 1))
	done
	check "Redis awake again: remote hits again ($(cat "$T/sleep2.b.line"))" grep -q '^remote hit ' "$T/sleep2.b.line"
else
	echo "# skip DEBUG SLEEP checks: this redis-server refuses DEBUG (enable-debug-command)"
fi
check "every node alive" sh -c "'$KJIT' --version >/dev/null; for n in 1 2 3; do KJIT_SOCKET='$T/n/'\$n.sock '$KJIT' ping >/dev/null || exit 1; done"
exit_code=0
finish || exit_code=1
exit $exit_code
