#!/bin/bash
# bench/remote-warm.sh [KJITD] [N]: where scenario 8's warm-up from the
# remote goes.  One node (WC) compiles the bundled library for gfx90a, sm_90
# and vulkan1.2 with the real compilers and publishes it to a private
# redis-server (Unix socket); then N fresh nodes (empty caches) each run
# `kjit warm --remote-only` of the same library, timed, as scenario 8's
# fetch side does.  With PRESTART=1 the fresh nodes start their compile
# workers first (--prestart hiprtc,nvrtc,shaderc, then $PRESTART_WAIT s,
# default 6): the difference is what a fresh node spends starting workers
# only to learn the compilers' identities (docs/remote.md, "Round eight").
# PERF=1 records the first fresh node with `perf record -g` into
# $T/warm.perf; with PERF or KEEP set, $T (logs included) is kept and named.  Prints the compile side, then
# one line per fresh node: wall ms, fetched, and the load average.  Needs
# `make bench-bins` and the real compilers.
set -u
KJITD=${1:-$(cd "$(dirname "$0")/.." && pwd)/${BUILD:-build}/kjitd}
N=${2:-3}
[ -n "${PERF:-}" ] && KEEP=1
# $T, $PIDS, the private Redis on $RS and the cleanup (node() is redefined
# below: real compilers, not remote-lib.sh's test family and blobs).
. "$(dirname "$0")/remote-lib.sh"
KJIT="$TOP/${BUILD:-build}/kjit"

LASTPID=""
node() { # NAME [options]: a kjitd on the Redis, as bench.sh's fleet_node makes it
	local name=$1 out
	shift
	out=$("$BIN/bench-startd" "$T/$name.sock" 120 -- "$KJITD" --foreground --socket "$T/$name.sock" \
		--cache-dir "$T/$name" --log "$T/$name.log" --remote "unix://$RS" --remote-lookup-timeout 200 \
		--jobs 2 "$@") || { echo "kjitd $name did not start" >&2; exit 1; }
	LASTPID=${out#* }
	PIDS="$PIDS $LASTPID"
}
TARGETS=(--target gfx90a --target sm_90 --target vulkan1.2)
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

node WC
t0=$(date +%s%N)
KJIT_SOCKET="$T/WC.sock" "$KJIT" warm "${TARGETS[@]}" -j 2 --json >"$T/WC.warm" 2>&1
echo "compile side: $(ms_since "$t0") ms; $(head -c 120 "$T/WC.warm")"
# Wait until the publishes stop growing the Redis (keys are per distinct key, not per kernel).
prev=-1
while [ "$(redis-cli -s "$RS" dbsize)" != "$prev" ]; do prev=$(redis-cli -s "$RS" dbsize); sleep 1; done
echo "values in Redis: $prev"
for i in $(seq 1 "$N"); do
	if [ -n "${PRESTART:-}" ]; then
		node "WR$i" --prestart hiprtc,nvrtc,shaderc
		sleep "${PRESTART_WAIT:-6}"
	else
		node "WR$i"
	fi
	pp=""
	if [ -n "${PERF:-}" ] && [ "$i" = 1 ]; then
		perf record -F 10000 -g -p "$LASTPID" -o "$T/warm.perf" 2>/dev/null &
		pp=$!
		sleep 0.3
	fi
	t0=$(date +%s%N)
	KJIT_SOCKET="$T/WR$i.sock" "$KJIT" warm --remote-only "${TARGETS[@]}" -j 2 --json >"$T/WR$i.warm" 2>&1
	echo "fresh node $i: $(ms_since "$t0") ms; $(grep -o '"fetched":[0-9]*,"[a-z]*":[0-9]*' "$T/WR$i.warm" | head -1);" \
		"$(grep -o '"cached":[0-9]*' "$T/WR$i.warm" | head -1); load $(cut -d' ' -f1 /proc/loadavg)"
	if [ -n "$pp" ]; then
		kill -INT "$pp"
		wait "$pp" 2>/dev/null
		echo "perf data: $T/warm.perf (perf report -i $T/warm.perf --sort dso)"
	fi
done
