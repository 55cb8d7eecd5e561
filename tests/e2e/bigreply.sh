#!/bin/sh
# bigreply.sh: large answers (issue 35, the 1 MB remote hit).
#  - An answer larger than a socket's default send buffer leaves in one
#    write: kjitd raises the connection's send buffer for it (charged to its
#    uid, daemon/net/conn-out.c), so the whole frame sits in the client's
#    socket even while the client reads nothing.  Before, ~200-400 KiB did
#    and kjitd kept the rest queued, written one socket-full per turn of its
#    loop, after its work that follows an answer.
#  - A remote hit of 1 MiB and of 3.8 MiB (near the request cap; many socket-fulls
#    of Redis's replies) read from a real redis-server with the bulk read
#    straight into a buffer made for it (remote/redis/redis-conn.c) is
#    byte-equal to the object the other node compiled, with and without a
#    fleet secret.
. "$(dirname "$0")/lib.sh"

start_daemon --hip-compiler test || { not_ok bigreply "kjitd did not start"; exit 1; }
RAW="$T/rawclient"
cc -D_GNU_SOURCE -I"$TOP/include" -I"$TOP/client" -I"$TOP/common" "$TOP/tests/e2e/rawclient.c" \
	"$TOP/$BUILD/libkjit.a" -lcrypto -pthread $(san_flags) -o "$RAW" 2>"$T/cc.err" ||
	{ cat "$T/cc.err" >&2; not_ok bigreply "cannot build rawclient"; exit 1; }
# hexsrc FILE BYTES: a source of BYTES random hex digits (the test compiler's
# object holds its source, so the object is as large)
hexsrc() { head -c "$2" /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c "$2" >"$1"; }

hexsrc "$T/big.src" 1048576
"$KJIT" get --source "$T/big.src" --backend hip --target gfx90a -o "$T/big.o" >"$T/big.line" 2>&1
size=$(stat -c %s "$T/big.o" 2>/dev/null || echo 0)
check "a 1 MiB object compiled ($(cat "$T/big.line"))" [ "$size" -ge 1048576 ]
if command -v ss >/dev/null 2>&1; then
	"$RAW" "$KJIT_SOCKET" noread 1 "$T/big.src" 3 >"$T/raw.out" 2>&1 &
	raw=$!
	q=0
	i=0
	while [ $i -lt 60 ]; do
		n=$(ss -xnp 2>/dev/null | awk -v p="pid=$raw," 'index($0, p) { print $3; exit }')
		[ "${n:-0}" -gt "$q" ] && q=$n
		[ "$q" -ge "$size" ] && break
		sleep 0.05
		i=$((i + 1))
	done
	check "a 1 MiB answer lies whole in the socket of a client that reads nothing (its receive queue: at most $q of $size bytes)" \
		[ "$q" -ge "$size" ]
	wait "$raw"
else
	echo "ok bigreply-socket # SKIP ss (iproute2) not installed"
fi
"$KJIT" get --source "$T/big.src" --backend hip --target gfx90a -o "$T/big2.o" >"$T/big2.line" 2>&1
check "then a hit on a new connection, byte-equal ($(cat "$T/big2.line"))" cmp -s "$T/big.o" "$T/big2.o"
check "kjitd still up" sh -c "\"$KJIT\" ping >/dev/null"
stop_daemon

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	echo "ok bigreply-remote # SKIP redis-server/redis-cli not installed (scripts/deps.sh installs them)"
	finish
	exit
fi
RS="$T/redis.sock"
redis-server --port 0 --unixsocket "$RS" --unixsocketperm 700 --save "" --appendonly no --dir "$T" \
	--logfile "$T/redis.log" &
REDIS_PID=$!
cleanup_more() {
	for p in $NODE_PIDS; do kill "$p" 2>/dev/null; done
	kill "$REDIS_PID" 2>/dev/null
	wait 2>/dev/null
}
NODE_PIDS=""
i=0
until [ "$(redis-cli -s "$RS" ping 2>/dev/null)" = PONG ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
printf 'bigreply test secret, 32 bytes!!' >"$T/secret"
chmod 600 "$T/secret"
node() { # NAME [options]
	n=$1
	shift
	mkdir -p "$T/n"
	"$KJITD" --foreground --socket "$T/n/$n.sock" --cache-dir "$T/c/$n" --log "$T/log.$n" --hip-compiler test \
		--remote "unix://$RS" --remote-timeout 3000 --remote-lookup-timeout 3000 "$@" &
	NODE_PIDS="$NODE_PIDS $!"
	i=0
	until KJIT_SOCKET="$T/n/$n.sock" "$KJIT" ping >/dev/null 2>&1 || [ $i -ge 300 ]; do sleep 0.05; i=$((i + 1)); done
}
node a
node b
node sa --remote-secret "$T/secret" --remote-prefix s:
node sb --remote-secret "$T/secret" --remote-prefix s:
hexsrc "$T/r1.src" 1048576
hexsrc "$T/r4.src" 4000000
for pair in "a b kjit:v2:" "sa sb s:"; do
	set -- $pair
	for s in r1 r4; do
		KJIT_SOCKET="$T/n/$1.sock" "$KJIT" get --source "$T/$s.src" --backend hip --target gfx90a -o "$T/$1.$s.o" \
			>"$T/$1.$s.line" 2>&1
		k=$(awk '{ print $(NF-3) }' "$T/$1.$s.line")
		i=0
		until [ "$(redis-cli -s "$RS" exists "$3$k")" = 1 ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
		KJIT_SOCKET="$T/n/$2.sock" "$KJIT" get --source "$T/$s.src" --backend hip --target gfx90a -o "$T/$2.$s.o" \
			>"$T/$2.$s.line" 2>&1
		check "$2: a $s remote hit ($(cat "$T/$2.$s.line"))" grep -q '^remote hit ' "$T/$2.$s.line"
		check "$2: its bytes are the object $1 compiled" cmp -s "$T/$1.$s.o" "$T/$2.$s.o"
	done
done
finish
