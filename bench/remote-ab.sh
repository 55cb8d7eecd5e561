#!/bin/bash
# bench/remote-ab.sh BASE_KJITD NEW_KJITD [NEW_KJITD options...]: remote hit
# latency of two kjitd builds on one private redis-server (Unix socket),
# at 16 KB and 1 MB, in one run, against a bare GET of the same size
# (redis-benchmark, one client, a hot loop; and bench-spacedget, a GET spaced
# as the hits are; and the same GET behind a relay that does only what a
# remote hit cannot skip, bench-spacedget --relay): scenario 8's measurement (bench.sh
# fleet_hit, spaced by 20 ms) for an A/B of a change to the fleet tier.
# Each build gets its own pair of daemons: RA compiles N salted blobs of the
# test family and publishes them, RB (empty cache) then asks for each once,
# so every timed get is a remote hit.  The options after NEW_KJITD go to
# the new build's daemons only (e.g. --remote-secret FILE); $BASE_OPTS go to
# the base build's (e.g. the same secret, to compare like with like).
# $KERNELS (default "blob16384 blob1048576 small1m": a 16 KiB object from
# a 16 KiB source, a 1 MiB object from a 1 MiB source, whose SHA-256 is
# the key's, and a 1 MiB object from a 16 KiB source, the common shape;
# any other name is a hip kernel of kernels_src/MANIFEST, its source and
# kernels_src/include copied: e.g. rms_norm_f32, whose headers are read
# from <kernels>/include).
# $ROUNDS rounds (default 2), the two builds alternating in each; $GAP ms
# between gets (default 20; 0: back to back).  Prints one line per (build,
# size, round): p50 / p99 us and the serving kjitd's CPU time per hit
# (/proc, its publishes included), the load average, and the floors.  Needs
# `make bench-bins`.  Lookups wait up to 200 ms, as in scenario 8 (a loaded
# machine must not turn a remote hit into a compile).
set -u
BASE=$1 NEW=$2
shift 2
. "$(dirname "$0")/remote-lib.sh"
blob blob16384 16384
blob blob1048576 1048576
fat small1m 16384 1048576
# bundled NAME: kernels_src's hip kernel NAME as $T/k/NAME.src, with its
# manifest line and kernels_src/include (the test compiler's object is the source).
bundled() {
	local line
	line=$(grep "^$1 hip " "$TOP/kernels_src/MANIFEST") || { echo "remote-ab.sh: no hip kernel $1 in kernels_src" >&2; exit 2; }
	mkdir -p "$T/k/include"
	cp "$TOP/kernels_src/include/"*.h "$T/k/include/"
	cp "$TOP/kernels_src/$(echo "$line" | awk '{ print $3 }')" "$T/k/$1.src"
	echo "$line" | awk '{ $3 = $1 ".src"; print }' >>"$T/k/MANIFEST"
}
for kern in ${KERNELS:-}; do case $kern in blob16384 | blob1048576 | small1m) ;; *) bundled "$kern" ;; esac; done
objsize() { case $1 in blob*) echo "${1#blob}" ;; small1m) echo 1048576 ;; *) wc -c <"$T/k/$1.src" ;; esac; }
hits() { # LABEL A B KERNEL N SALT
	local label=$1 a=$2 b=$3 kern=$4 n=$5 salt=$6 sz
	sz=$(objsize "$kern")
	redis-cli -s "$RS" flushall >/dev/null
	KJIT_SOCKET="$T/$a.sock" "$BIN/bench-hitlat" --kernel "$kern" --backend hip --target gfx90a --salt "$salt" \
		-n "$n" -w 0 >/dev/null
	local i=0
	while [ "$(redis-cli -s "$RS" dbsize)" -lt "$n" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	local lat c0 c1
	c0=$(cpu_ms "$b")
	lat=$(KJIT_SOCKET="$T/$b.sock" "$BIN/bench-hitlat" --kernel "$kern" --backend hip --target gfx90a \
		--salt "$salt" -n "$n" -w 0 --want remote --gap "${GAP:-20}")
	sleep 1 # the last publishes
	c1=$(cpu_ms "$b")
	echo "$label $((sz / 1024))KB ($kern) remote hit p50 / p99 us: $(echo "$lat" | awk '{ print $1 " / " $2 }');" \
		"kjitd CPU per hit $(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / n }') ms"
}
# shellcheck disable=SC2086 # BASE_OPTS: words
node BA "$BASE" --remote-prefix base: --remote-timeout 2000 ${BASE_OPTS:-}
# shellcheck disable=SC2086
node BB "$BASE" --remote-prefix base: --remote-timeout 2000 ${BASE_OPTS:-}
node NA "$NEW" --remote-timeout 2000 --remote-lookup-timeout 2000 "$@"
node NB "$NEW" --remote-timeout 2000 --remote-lookup-timeout 2000 "$@"
KERNELS=${KERNELS:-blob16384 blob1048576 small1m}
for round in $(seq 1 "${ROUNDS:-2}"); do
	echo "round $round, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	k=0
	for kern in $KERNELS; do
		n=40
		[ "$(objsize "$kern")" -le 65536 ] && n=200
		hits base BA BB "$kern" $n $((round * 1000 + k))
		hits new NA NB "$kern" $n $((round * 1000 + 500 + k))
		k=$((k + 100))
	done
done
for sz in $(for kern in $KERNELS; do objsize "$kern"; done | sort -nu); do
	echo "floor $((sz / 1024))KB redis-benchmark GET p50 us: $(redis-benchmark -s "$RS" -c 1 -n 2000 -d "$sz" -t set,get \
		--csv 2>/dev/null | awk -F'"' '$2 == "GET" { printf "%.1f\n", $10 * 1000 }')"
	echo "floor $((sz / 1024))KB bare GET spaced ${GAP:-20} ms as the hits (bench-spacedget) p50 / p99 us: $("$BIN/bench-spacedget" \
		"$RS" "$sz" -n 200 --gap "${GAP:-20}" | awk '{ print $1 " / " $2 }')"
done
for kern in $KERNELS; do
	echo "floor $kern relay: source read, SHA-256, GET, GMAC (bench-spacedget --relay) p50 / p99 us: $("$BIN/bench-spacedget" \
		"$RS" "$(objsize "$kern")" -n 200 --gap "${GAP:-20}" --relay "$T/k/$kern.src" | awk '{ print $1 " / " $2 }')"
done
