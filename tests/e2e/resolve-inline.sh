#!/bin/sh
# resolve-inline.sh: a small memo miss is resolved on kjitd's loop, a large
# or include-heavy one still on a pool thread (daemon/miss/offhash.c, issue
# 35: the thread hop cost more than a 16 KB resolve).  Checked, with the
# "test" compiler (it echoes the source as the object) and `kjit stats`'
# resolved_inline / resolved_pool counters:
#  - a 1 KiB source with no header on disk: resolved inline, right bytes;
#  - a 100 KiB source (over KJ_RESOLVE_INLINE_BYTES): on a thread;
#  - a 1 KiB source including a header of <kernels>/include: on a thread
#    (the loop never opens a header), right bytes, and its memo still
#    watches the header (changed: a new key);
#  - a small source including a slow header (tests/e2e/slowopen.c) and a
#    1 MiB one: `kjit ping` and a memo hit are answered while they resolve;
#  - a header of <kernels>/include settled on disk, read once on a thread:
#    kept (daemon/miss/hdrkeep.c), so the next small request including it is
#    resolved on the loop, to the key a fresh read gives (--explain resolves
#    on a thread); changed on disk, it is read again on a thread: a new key.
. "$(dirname "$0")/lib.sh"

SHIM="$T/slowopen.so"
if ! cc -shared -fPIC -O2 -o "$SHIM" "$TOP/tests/e2e/slowopen.c" -ldl 2>"$T/cc.err"; then
	echo "# skip resolve-inline: cannot build the slow-open shim: $(head -c 200 "$T/cc.err")"
	exit 0
fi
SLOW_MS=1500
SRC="$T/src"
KERNELS="$T/kernels"
FLAG="$T/slow.flag"
mkdir -p "$SRC" "$KERNELS/include"
echo '#define KJIT_INLINE_COMMON 1' >"$KERNELS/include/common.h"
echo '#define KJIT_INLINE_SLOW 1' >"$KERNELS/include/kjit-slow.h"
echo '#define KJIT_INLINE_KEPT 1' >"$KERNELS/include/kept.h"

# mk NAME BYTES [HEADER]: a distinct source of about BYTES bytes (no '#'
# but the include).
mk() {
	{
		printf '// %s %s\n' "$1" "$$"
		[ -n "${3:-}" ] && printf '#include "%s"\n' "$3"
		head -c $(($2 * 3 / 4 + 100)) /dev/urandom | base64 -w 100 | head -c "$2"
		echo
	} >"$SRC/$1.hip"
}
get() { # NAME: object to $SRC/NAME.out, status and errors to NAME.get
	"$KJIT" get --source "$SRC/$1.hip" --backend hip --target gfx90a -o "$SRC/$1.out" >"$SRC/$1.get" 2>&1
	echo $? >"$SRC/$1.rc"
}
right() { [ "$(cat "$SRC/$1.rc")" = 0 ] && cmp -s "$SRC/$1.hip" "$SRC/$1.out"; }
counts() { echo "$(stat_value resolved_inline) $(stat_value resolved_pool)"; }
ms_now() { date +%s%N | cut -c1-13; }

export LD_PRELOAD="$SHIM" KJIT_TEST_SLOW_OPEN_MS=$SLOW_MS KJIT_TEST_SLOW_OPEN_FLAG="$FLAG"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"
start_daemon --hip-compiler test --jobs 2 --kernels-dir "$KERNELS"
rc=$?
unset LD_PRELOAD KJIT_TEST_SLOW_OPEN_MS KJIT_TEST_SLOW_OPEN_FLAG
[ $rc = 0 ] || { not_ok "kjitd starts" "see log"; exit 1; }

mk small 1024
get small
check "a 1 KiB request: right bytes" right small
check "resolved on the loop (resolved_inline resolved_pool: $(counts))" [ "$(counts)" = "1 0" ]

mk big 102400
get big
check "a 100 KiB request: right bytes" right big
check "resolved on a thread ($(counts))" [ "$(counts)" = "1 1" ]

mk withhdr 1024 common.h
get withhdr
check "a 1 KiB request including a header on disk: right bytes" right withhdr
check "resolved on a thread: the loop opens no header ($(counts))" [ "$(counts)" = "1 2" ]
get withhdr
check "asked again: a memo hit, nothing resolved ($(counts))" sh -c "grep -q '^hit' '$SRC/withhdr.get' && [ '$(counts)' = '1 2' ]"
c0=$(stat_value compiles)
echo '#define KJIT_INLINE_COMMON 2' >"$KERNELS/include/common.h"
get withhdr
check "the header changed: resolved again and compiled (compiles $c0 -> $(stat_value compiles))" \
	[ "$(stat_value compiles)" = $((c0 + 1)) ]

# -- the loop answers while resolves run on threads --
mk slowsmall 1024 kjit-slow.h
mk slowbig 1048576 kjit-slow.h
touch "$FLAG"
get slowsmall &
P1=$!
get slowbig &
P2=$!
sleep 0.3
t0=$(ms_now)
"$KJIT" ping >/dev/null 2>&1
prc=$?
get small
t1=$(ms_now)
rm -f "$FLAG"
check "ping and a memo hit answered while 2 requests wait $SLOW_MS ms on a header ($((t1 - t0)) ms)" \
	[ "$prc" = 0 -a $((t1 - t0)) -lt $((SLOW_MS / 2)) ]
check "the hit's bytes" sh -c "grep -q '^hit' '$SRC/small.get' && cmp -s '$SRC/small.hip' '$SRC/small.out'"
wait $P1 $P2
check "the requests through the slow header get their bytes" sh -c "$(command -v cmp) -s '$SRC/slowsmall.hip' '$SRC/slowsmall.out' && cmp -s '$SRC/slowbig.hip' '$SRC/slowbig.out'"
check "both on threads ($(counts))" [ "$(counts)" = "1 5" ]

# -- a kept header: its ctime must be a second before the read that keeps it --
while [ $(($(date +%s) - $(stat -c %Z "$KERNELS/include/kept.h"))) -lt 2 ]; do sleep 0.2; done
key() { head -n1 "$SRC/$1.get" | cut -d' ' -f2; }
mk kept1 1024 kept.h
get kept1
check "a request including a settled header: read on a thread ($(counts))" [ "$(counts)" = "1 6" ]
check "... right bytes" right kept1
mk kept2 1024 kept.h
get kept2
check "another including it: the kept text, resolved on the loop ($(counts))" [ "$(counts)" = "2 6" ]
check "... right bytes" right kept2
k_inline=$(key kept2)
"$KJIT" get --source "$SRC/kept2.hip" --backend hip --target gfx90a --explain -o "$SRC/kept2.x" >"$SRC/kept2.get" 2>&1
check "the key of the kept text is a fresh read's (--explain, on a thread: $k_inline $(key kept2), $(counts))" \
	sh -c "[ -n '$k_inline' ] && [ '$k_inline' = '$(key kept2)' ] && [ '$(counts)' = '2 7' ]"
c0=$(stat_value compiles)
echo '#define KJIT_INLINE_KEPT 3' >"$KERNELS/include/kept.h"
get kept2
check "the kept header changed on disk: read again on a thread ($(counts)), a new key, compiled" \
	sh -c "[ '$(counts)' = '2 8' ] && [ '$(key kept2)' != '$k_inline' ] && [ $(stat_value compiles) = $((c0 + 1)) ]"
check "... right bytes" right kept2
finish
