#!/bin/sh
# offhash-stale.sh: a header edited while a request's key is resolved on a
# pool thread (daemon/miss/offhash.c) never puts the old object in the shared hit
# table under the request's bytes.  The resolve reads a.h, then waits on a
# slow second header (tests/e2e/slowopen.c, preloaded into kjitd only);
# a.h is edited meanwhile.  The request itself may be answered with what it
# read (as one that came a moment earlier would be), but the next request
# with the same bytes, fast path allowed, must get what they mean now: the
# key a socket-only request gets, not a fast hit of the old one.  Both ways
# a key ends a miss (the flight's put) and a hit (answer_hit's put).
. "$(dirname "$0")/lib.sh"

SHIM="$T/slowopen.so"
if ! cc -shared -fPIC -O2 -o "$SHIM" "$TOP/tests/e2e/slowopen.c" -ldl 2>"$T/cc.err"; then
	echo "# skip offhash-stale: cannot build the slow-open shim: $(head -c 200 "$T/cc.err")"
	exit 0
fi
KERNELS="$T/kernels"
mkdir -p "$KERNELS/include" "$T/src"
echo '#define V 1' >"$KERNELS/include/a.h"
echo '#define S 1' >"$KERNELS/include/kjit-slow.h"
printf '#include "a.h"\n#include "kjit-slow.h"\nint x;\n' >"$T/src/s.hip"
FLAG="$T/slow.flag"
export LD_PRELOAD="$SHIM" KJIT_TEST_SLOW_OPEN_MS=1500 KJIT_TEST_SLOW_OPEN_FLAG="$FLAG"
# a sanitized kjitd takes the shim after its runtime
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"
start_daemon --hip-compiler test --jobs 1 --kernels-dir "$KERNELS" || exit 1
unset LD_PRELOAD KJIT_TEST_SLOW_OPEN_MS KJIT_TEST_SLOW_OPEN_FLAG

G() { KJIT_PROCESS_MEMO=0 "$KJIT" get --source "$T/src/s.hip" --backend hip --target gfx90a -o "$T/$1.out"; }
key_of() { awk '{ print $2 }' "$1"; }

# edited V: A's resolve waits on the slow header while a.h becomes V.
edited() {
	touch "$FLAG"
	G "$1.a" >"$T/$1.a.get" 2>&1 &
	A=$!
	sleep 0.5
	echo "#define V $2 /* edited during the resolve */" >"$KERNELS/include/a.h"
	wait "$A"
	rm -f "$FLAG"
	sleep 0.3 # the inotify event read by the loop
}

# 1. The miss path: the flight's put.
edited miss 2
f0=$(stat_value fast_hits)
G miss.b >"$T/miss.b.get" 2>&1
f1=$(stat_value fast_hits)
KJIT_FAST_PATH=0 G miss.c >"$T/miss.c.get" 2>&1
check "miss: A answered ($(cat "$T/miss.a.get"))" grep -q '^compiled ' "$T/miss.a.get"
check "miss: the next request is no fast hit of the old object (fast hits $f0 -> $f1)" [ "$f0" = "$f1" ]
check "miss: it gets what its bytes mean now ($(cat "$T/miss.b.get") / $(cat "$T/miss.c.get"))" \
	[ "$(key_of "$T/miss.b.get")" = "$(key_of "$T/miss.c.get")" ]
check "miss: which is not what A read" [ "$(key_of "$T/miss.b.get")" != "$(key_of "$T/miss.a.get")" ]

# 2. The hit path: V 1's object is cached and A resolves to it, but a.h
# becomes V 3 while A's resolve waits on the slow header.
echo '#define V 1' >"$KERNELS/include/a.h"
sleep 0.3
G hit.0 >"$T/hit.0.get" 2>&1
touch "$KERNELS/include/kjit-slow.h" # the memo's entry and the table's dropped
sleep 0.3
echo '#define V 1' >"$KERNELS/include/a.h"
edited hit 3
f0=$(stat_value fast_hits)
G hit.b >"$T/hit.b.get" 2>&1
f1=$(stat_value fast_hits)
KJIT_FAST_PATH=0 G hit.c >"$T/hit.c.get" 2>&1
check "hit: A answered from the cache ($(cat "$T/hit.a.get"))" grep -q '^hit ' "$T/hit.a.get"
check "hit: the next request is no fast hit of the old object (fast hits $f0 -> $f1)" [ "$f0" = "$f1" ]
check "hit: it gets what its bytes mean now ($(cat "$T/hit.b.get") / $(cat "$T/hit.c.get"))" \
	[ "$(key_of "$T/hit.b.get")" = "$(key_of "$T/hit.c.get")" ]
check "hit: which is not what A read" [ "$(key_of "$T/hit.b.get")" != "$(key_of "$T/hit.a.get")" ]
stop_daemon
finish
