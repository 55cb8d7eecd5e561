#!/bin/sh
# offhash.sh: a memo miss's key is resolved off kjitd's loop
# (daemon/miss/offhash.c, daemon/miss/memo.c; issue 25): the include scan (headers
# read from <kernels>/include), the SHA-256 over source and headers and the
# memo's file checks run on libuv's thread pool.  Checked, with the "test"
# compiler (it echoes the source as the object):
#  - many concurrent memo misses of distinct 1 MiB sources (and a pair of
#    the same) all get their own bytes back; repeated, all are hits;
#  - with a slow disk for one header (tests/e2e/slowopen.c, preloaded into
#    kjitd only), `kjit ping` is answered while requests including it
#    resolve, and those requests still get the right bytes;
#  - --max-resolves-per-uid: one request over the cap gets the busy line,
#    the ones under it their answers, and once they are done a request
#    passes again;
#  - a client that leaves mid-resolve costs nothing (no compile for no one,
#    the daemon serves on);
#  - SIGTERM with resolves in flight: kjitd exits cleanly (status 0), its
#    clients get an error, not a hang.
. "$(dirname "$0")/lib.sh"

SHIM="$T/slowopen.so"
if ! cc -shared -fPIC -O2 -o "$SHIM" "$TOP/tests/e2e/slowopen.c" -ldl 2>"$T/cc.err"; then
	echo "# skip offhash: cannot build the slow-open shim: $(head -c 200 "$T/cc.err")"
	exit 0
fi
N=${OFFHASH_N:-16}       # concurrent distinct 1 MiB misses
SLOW_MS=1500
SRC="$T/src"
KERNELS="$T/kernels"
mkdir -p "$SRC" "$KERNELS/include"
echo '#define KJIT_OFFHASH_COMMON 1' >"$KERNELS/include/common.h"
echo '#define KJIT_OFFHASH_SLOW 1' >"$KERNELS/include/kjit-slow.h"
FLAG="$T/slow.flag"
# A 1 MiB body shared by every source (no '#': nothing for the scanner).
head -c 786432 /dev/urandom | base64 -w 100 | head -c 1048576 >"$T/body"

# mk NAME HEADER: a distinct source of about 1 MiB including HEADER.
mk() { { printf '// %s %s\n#include "%s"\n' "$1" "$$" "$2"; cat "$T/body"; } >"$SRC/$1.hip"; }
get() { # NAME: object to $SRC/NAME.out, status and errors to NAME.get
	"$KJIT" get --source "$SRC/$1.hip" --backend hip --target gfx90a -o "$SRC/$1.out" >"$SRC/$1.get" 2>&1
	echo $? >"$SRC/$1.rc"
}
right() { [ "$(cat "$SRC/$1.rc")" = 0 ] && cmp -s "$SRC/$1.hip" "$SRC/$1.out"; }
right2() { right "$1" && right "$2"; }

# start_shim [options]: kjitd with the slow header shim in its environment
# only (a sanitized kjitd takes it after its runtime).
start_shim() {
	export LD_PRELOAD="$SHIM" KJIT_TEST_SLOW_OPEN_MS=$SLOW_MS KJIT_TEST_SLOW_OPEN_FLAG="$FLAG"
	export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"
	start_daemon --hip-compiler test --jobs 2 --kernels-dir "$KERNELS" "$@"
	rc=$?
	unset LD_PRELOAD KJIT_TEST_SLOW_OPEN_MS KJIT_TEST_SLOW_OPEN_FLAG
	return $rc
}
ms_now() { date +%s%N | cut -c1-13; }

start_shim || { not_ok "kjitd starts" "see log"; exit 1; }

# -- many concurrent misses of distinct large sources --
i=0
while [ $i -lt "$N" ]; do mk "m$i" common.h; i=$((i + 1)); done
cp "$SRC/m0.hip" "$SRC/twin.hip"
# waitall: the gets started in the background (not kjitd, also a child)
PIDS=""
waitall() { for p in $PIDS; do wait "$p"; done; PIDS=""; }
i=0
while [ $i -lt "$N" ]; do get "m$i" & PIDS="$PIDS $!"; i=$((i + 1)); done
get twin &
PIDS="$PIDS $!"
waitall
bad=0
i=0
while [ $i -lt "$N" ]; do right "m$i" || bad=$((bad + 1)); i=$((i + 1)); done
check "$N concurrent 1 MiB misses: each gets its own bytes ($bad wrong)" [ "$bad" = 0 ]
check "the same source twice at once: the same bytes" right twin
check "one compile per distinct source" [ "$(stat_value compiles)" = "$N" ]
i=0
while [ $i -lt "$N" ]; do get "m$i" & PIDS="$PIDS $!"; i=$((i + 1)); done
waitall
hits=0
i=0
while [ $i -lt "$N" ]; do right "m$i" && grep -q '^hit' "$SRC/m$i.get" && hits=$((hits + 1)); i=$((i + 1)); done
check "repeated at once: $hits of $N hits with the same bytes" [ "$hits" = "$N" ]

# -- a slow header: the loop answers meanwhile --
touch "$FLAG"
mk s1 kjit-slow.h
mk s2 kjit-slow.h
get s1 &
P1=$!
get s2 &
P2=$!
sleep 0.3
t0=$(ms_now)
"$KJIT" ping >/dev/null 2>&1
prc=$?
t1=$(ms_now)
rm -f "$FLAG"
check "ping answered while 2 requests wait $SLOW_MS ms on a header ($((t1 - t0)) ms)" \
	[ "$prc" = 0 -a $((t1 - t0)) -lt $((SLOW_MS / 2)) ]
wait $P1 $P2
check "requests through the slow header get their bytes" right2 s1 s2

# -- the per-uid cap on resolves --
stop_daemon
start_shim --max-resolves-per-uid 2 || { not_ok "kjitd starts with --max-resolves-per-uid 2" "see log"; exit 1; }
mk w1 common.h
get w1 # the pool says hello: later requests go straight to resolving
touch "$FLAG"
mk s3 kjit-slow.h
mk s4 kjit-slow.h
mk s5 common.h
get s3 &
P1=$!
get s4 &
P2=$!
sleep 0.5
get s5
rm -f "$FLAG"
busy() { [ "$(cat "$SRC/s5.rc")" = 1 ] && grep -q 'kjitd is busy: uid [0-9]* has 2 requests being resolved' "$SRC/s5.get"; }
check "a third resolve of the uid gets the busy line" busy
grep -q 'busy' "$SRC/s5.get" || sed 's/^/# /' "$SRC/s5.get"
wait $P1 $P2
check "the two under the cap get their bytes" right2 s3 s4
get s5
check "once they are answered, the third passes" right s5

# -- a client that leaves mid-resolve --
touch "$FLAG"
mk d1 kjit-slow.h
c0=$(stat_value compiles)
"$KJIT" get --source "$SRC/d1.hip" --backend hip --target gfx90a -o "$SRC/d1.out" >/dev/null 2>&1 &
P1=$!
sleep 0.5
kill -9 $P1 2>/dev/null
wait $P1 2>/dev/null
rm -f "$FLAG"
sleep $((SLOW_MS / 1000 + 1))
check "a client gone mid-resolve: kjitd serves on" "$KJIT" ping
check "and compiles nothing for no one" [ "$(stat_value compiles)" = "$c0" ]
get d1
check "the same request later gets its bytes" right d1

# -- SIGTERM with resolves in flight --
touch "$FLAG"
mk e1 kjit-slow.h
mk e2 kjit-slow.h
get e1 &
P1=$!
get e2 &
P2=$!
sleep 0.5
kill -TERM "$DAEMON_PID"
rm -f "$FLAG"
i=0
while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
alive=0
kill -0 "$DAEMON_PID" 2>/dev/null && alive=1 && kill -9 "$DAEMON_PID"
wait "$DAEMON_PID"
drc=$?
DAEMON_PID=""
check "SIGTERM mid-resolve: kjitd exits within 10 s" [ "$alive" = 0 ]
check "with status 0" [ "$drc" = 0 ]
check "with no handle left open" sh -c "! grep -q 'handles still open' '$T/kjitd.log'"
wait $P1 $P2
check "its clients get an error, not a hang" [ "$(cat "$SRC/e1.rc")" != 0 -a "$(cat "$SRC/e2.rc")" != 0 ]
finish
