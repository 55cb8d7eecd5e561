#!/bin/bash
# issue25.sh: kjitd's loop while admin commands run (issue 25), the daemon
# under test against a baseline kjitd, in one run.
#
#   bench/issue25.sh BASE_KJITD [N | hits]
#
# For each daemon (BASE_KJITD, then this tree's build/kjitd): a cache of N
# entries (default 100000: one real Vulkan entry plus N-1 synthetic ones of
# 256 bytes, bench-populate), the hit latency of the real entry (fast path
# and socket path, bench-hitlat), then ping latency while verify, export,
# gc to half the size, clear and import of the export run (bench-maintping:
# pings, p50, p99, max in microseconds, the command's own time in ms).
# Prints one table; the caller copies it into bench/RESULTS.md.
set -u
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/$BUILD/bench"
KJIT="$TOP/$BUILD/kjit"
BASE=${1:?usage: issue25.sh BASE_KJITD [N]}
N=${2:-100000}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-i25.XXXXXX")
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0
. "$TOP/bench/ablib.sh"
trap 'stop_daemon; rm -rf "$T"' EXIT


REQ="--kernel add_f32 --backend vulkan --target vulkan1.2"
one() { # KJITD NAME
	start_daemon "$1" "$2"
	"$KJIT" get $REQ -o /dev/null >/dev/null || { echo "no real entry" >&2; exit 1; }
	stop_daemon
	pop=$("$BIN/bench-populate" "$T/$2" $((N - 1)) -s 256 -d 16) || exit 1
	start_daemon "$1" "$2"
	printf '%-6s start to first ping (%s entries, populated in %ss): %s ms\n' "$2" "$N" "$pop" "$START_MS"
	fast=$("$BIN/bench-hitlat" $REQ -n 20000 -w 200)
	sock=$(KJIT_FAST_PATH=0 "$BIN/bench-hitlat" $REQ -n 5000 -w 100)
	printf '%-6s hit p50/p99 us: fast path %s / %s, socket path %s / %s\n' "$2" \
		"$(echo "$fast" | cut -d' ' -f1)" "$(echo "$fast" | cut -d' ' -f2)" \
		"$(echo "$sock" | cut -d' ' -f1)" "$(echo "$sock" | cut -d' ' -f2)"
	bytes=$("$KJIT" stats --json | grep -o '"bytes":[0-9]*' | head -n 1 | cut -d: -f2)
	cmds=("verify" "export $T/$2.kjb" "gc $((bytes / 2))" "clear" "import $T/$2.kjb")
	# The baseline's import publishes one object at a time on its loop
	# (about 4 ms each here): BASE_IMPORT=0 leaves it out at large N.
	[ "$2" = base ] && [ "${BASE_IMPORT:-1}" = 0 ] && unset 'cmds[4]'
	for c in "${cmds[@]}"; do
		set -- $c
		r=$("$BIN/bench-maintping" "$@") || r="failed"
		set -- $r
		printf '%-6s ping during %-7s: %6s pings, p50 %6s us, p99 %9s us, max %9s us; the command %7s ms (code %s)\n' \
			"$NAME" "${c%% *}" "$1" "$2" "$3" "$4" "$5" "${6:-?}"
	done
	stop_daemon
	rm -rf "${T:?}/$NAME" "$T/$NAME.kjb"
}

# bench/issue25.sh BASE_KJITD hits: hit latency only, the two daemons
# alternating for three rounds on a one-entry cache (less noise than the
# figure of a single run).
hits() { # KJITD NAME
	start_daemon "$1" "$2"
	"$KJIT" get $REQ -o /dev/null >/dev/null || { echo "no real entry" >&2; exit 1; }
	fast=$("$BIN/bench-hitlat" $REQ -n 20000 -w 200)
	sock=$(KJIT_FAST_PATH=0 "$BIN/bench-hitlat" $REQ -n 10000 -w 200)
	printf '%-6s hit p50/p99 us: fast path %s / %s, socket path %s / %s\n' "$2" \
		"$(echo "$fast" | cut -d' ' -f1)" "$(echo "$fast" | cut -d' ' -f2)" \
		"$(echo "$sock" | cut -d' ' -f1)" "$(echo "$sock" | cut -d' ' -f2)"
	stop_daemon
	rm -rf "${T:?}/$2"
}

date -u "+# %Y-%m-%d %H:%M UTC, $(nproc) cores, N=$N"
if [ "$N" = hits ]; then
	for round in 1 2 3; do
		hits "$BASE" base
		hits "$TOP/$BUILD/kjitd" new
	done
	exit 0
fi
NAME=base one "$BASE" base
NAME=new one "$TOP/$BUILD/kjitd" new
