#!/bin/bash
# offhash.sh: a memo miss's include scan and hashing off kjitd's loop
# (issue 25, daemon/miss/offhash.c), the daemon under test against a baseline
# kjitd, in one run, alternating R rounds (default 2).
#
#   bench/offhash.sh BASE_KJITD [R]
#   PARTS=hop bench/offhash.sh BASE_KJITD 6     (only the thread hop; PARTS=ping: only the pings)
#
# For each daemon, a fresh cache, --hip-compiler test (it echoes the
# source), 2 compile workers:
#  - ping under load: bench-hashping, 2 clients each sending 60 memo misses
#    of distinct 1 MiB sources (each a key miss too) one at a time, while
#    another connection pings back to back;
#  - the thread hop: bench-hitlat, 2000 gets of one 16 KiB source, each a
#    memo miss (--memo-size 1: nothing is remembered; no shared hit table,
#    no client memo) and a key hit from the hot set.
# Prints one line per measure; the caller copies them into bench/RESULTS.md.
set -u
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/$BUILD/bench"
KJIT="$TOP/$BUILD/kjit"
BASE=${1:?usage: offhash.sh BASE_KJITD [ROUNDS]}
R=${2:-2}
PARTS=${PARTS:-ping hop}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-offhash.XXXXXX")
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0
. "$TOP/bench/ablib.sh"
trap 'stop_daemon; rm -rf "$T"' EXIT

# start_fresh KJITD NAME [options]: ablib.sh's start_daemon on an empty
# cache, two workers, the test family.
start_fresh() {
	rm -rf "$T/$2"
	start_daemon "$@" --jobs 2 --hip-compiler test
}

# The 16 KiB source: text, no directives.
head -c 12288 /dev/urandom | base64 -w 100 | head -c 16384 >"$T/k16.hip"

one() { # KJITD NAME
	local salt out
	salt=$(( $(date +%s%N) % 1000000000 + 1 ))
	case " $PARTS " in *" ping "*)
		start_fresh "$1" "$2"
		"$KJIT" get --source "$T/k16.hip" --backend hip --target gfx90a -o /dev/null >/dev/null 2>&1 # workers up
		out=$("$BIN/bench-hashping" --salt "$salt" -c 2 -n 60) || out="failed"
		printf '%-4s ping while 2 clients send 1 MiB memo misses: pings p50_us p99_us max_us streams_ms: %s\n' "$2" "$out"
		stop_daemon
	esac
	case " $PARTS " in *" hop "*) ;; *) return 0 ;; esac
	start_fresh "$1" "$2" --memo-size 1 --no-shared-hit-table
	out=$("$BIN/bench-hitlat" --source "$T/k16.hip" --backend hip --target gfx90a -n 2000 -w 20 --want hit) ||
		out="failed"
	printf '%-4s 16 KiB memo miss, key hit: p50_us p99_us mean_us n bytes: %s\n' "$2" "$out"
	stop_daemon
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores; base $BASE, new $TOP/$BUILD/kjitd"
for r in $(seq 1 "$R"); do
	one "$BASE" base
	one "$TOP/$BUILD/kjitd" new
done
