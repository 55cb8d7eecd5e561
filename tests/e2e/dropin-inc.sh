#!/bin/sh
# dropin-inc.sh: the drop-in NVRTC and hiprtc with include folders (issue 31,
# docs/dropin.md).  tests/dropin/nvrtc_inc.py compiles as CuPy does (-I to
# its include tree and to the CUDA headers, <cupy/...> includes, name
# expressions, --std=c++17, -arch=compute_XX), as Warp does
# (--include-path=DIR), with two folders in the split spellings (-I DIR,
# --include-path DIR), and the cases whose output depends on where a file
# lies (a quoted include NVRTC finds in an earlier folder than the tree kjit
# scans, __FILE__ in a header, a warning naming the header's path, line
# info, a file of the current folder).  It runs against the real NVRTC, then
# twice under `kjit run`: the answers must be identical byte for byte, the
# first four served (the second process as hits, nothing compiled), the
# rest forwarded with the reason "path"; the same tree in another folder is
# served from the same entries.  hiprtc: tests/dropin/hiprtc-api's "inc"
# program (-I, -I DIR) against the real hiprtc.  Last, a kjitd given
# KJITD_PRESTART=nvrtc has its nvrtc worker up before any request.
. "$(dirname "$0")/lib.sh"

NV="$TOP/$BUILD/dropin/nvrtc"
PY="$TOP/tests/dropin/nvrtc_inc.py"
HAPI="$TOP/$BUILD/tests/dropin/hiprtc-api"
REAL_NVRTC_DIR=${KJIT_TEST_NVRTC_DIR:-/usr/local/cuda/lib64}
unset KJIT_REAL_NVRTC KJIT_REAL_HIPRTC KJIT_DROPIN_DIR LD_PRELOAD KJIT_DROPIN_DEBUG

if ! command -v python3 >/dev/null 2>&1 || [ ! -e "$REAL_NVRTC_DIR/libnvrtc.so.13" ]; then
	echo "# skip dropin-inc: needs python3 and $REAL_NVRTC_DIR/libnvrtc.so.13"
	exit 0
fi
[ -e "$NV/libnvrtc.so.13" ] || { not_ok "dropin-inc: build" "$NV/libnvrtc.so.13 missing"; exit 1; }
SAN="" SANPRE=""
if [ -n "$(san_flags)" ]; then # a sanitized drop-in: its runtime first, and not preloaded itself
	SAN="--no-preload"
	SANPRE="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
same() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -20 >&2; return 1; }; }
ds() { "$KJIT" stats 2>/dev/null | sed -n "s/^dropin_$1 *\([0-9]*\).*/\1/p"; }
reason() { "$KJIT" stats 2>/dev/null | grep '^dropin_forwarded' | grep -o "$1 [0-9]*" | cut -d' ' -f2; }
kjrun() { # tree, out: the program under kjit run, its debug lines in out.err
	LD_PRELOAD="$SANPRE" KJIT_DROPIN_DEBUG=1 "$KJIT" run --quiet $SAN -- python3 "$PY" "$1" >"$2" 2>"$2.err"
}

start_daemon || { not_ok "dropin-inc: start" "kjitd did not start"; exit 1; }
mkdir -p "$T/tree" "$T/moved"
LD_LIBRARY_PATH="$REAL_NVRTC_DIR" python3 "$PY" "$T/tree" >"$T/real.txt" 2>&1
check "dropin-inc: the real NVRTC compiles every scenario" [ "$(grep -c ' compile 0 NVRTC_SUCCESS' "$T/real.txt")" = 9 ]

s0=$(ds served)
p0=$(reason path)
kjrun "$T/tree" "$T/kj1.txt"
check "dropin-inc: under kjit run = the real NVRTC, byte for byte (first process)" same "$T/real.txt" "$T/kj1.txt"
check "dropin-inc: CuPy's layout (-I tree, -I CUDA headers, <cupy/...>, name expressions) served" \
	sh -c "head -n 2 '$T/kj1.txt.err' | grep -c '^kjit libnvrtc: served compiled' | grep -qx 2" # cupy, cupy-sm
check "dropin-inc: 4 served (cupy, cupy-sm, warp, split), 5 forwarded for path" \
	[ "$(($(ds served) - s0))" = 4 -a "$((${p0:-0} + 5))" = "$(reason path)" ]

c1=$(stat_value compiles)
kjrun "$T/tree" "$T/kj2.txt"
check "dropin-inc: under kjit run = the real NVRTC (second process)" same "$T/real.txt" "$T/kj2.txt"
check "dropin-inc: the second process's four served compiles are kjit hits, nothing compiled" \
	[ "$(grep -c '^kjit libnvrtc: served hit' "$T/kj2.txt.err")" = 4 -a "$(stat_value compiles)" = "$c1" ]
for why in "__FILE__" "another file than kjit's worker" "only a success with an empty log" "line info" \
	"a file of the current folder"; do
	check "dropin-inc: forwarded, and said why: $why" grep -q "forwarded to the real library: path.*$why" "$T/kj2.txt.err"
done

# The same headers in another folder: nothing in the answer depends on it.
LD_LIBRARY_PATH="$REAL_NVRTC_DIR" python3 "$PY" "$T/moved" >"$T/real-moved.txt" 2>&1
kjrun "$T/moved" "$T/kj3.txt"
check "dropin-inc: the tree in another folder: = the real NVRTC there" same "$T/real-moved.txt" "$T/kj3.txt"
check "dropin-inc: the tree in another folder: served from the same entries" \
	[ "$(grep -c '^kjit libnvrtc: served hit' "$T/kj3.txt.err")" = 4 -a "$(stat_value compiles)" = "$c1" ]

# A header changed in place: a new compile, never the old entry.
echo '#define KJD_TWO 3' >"$T/tree/d2/two.h"
LD_LIBRARY_PATH="$REAL_NVRTC_DIR" python3 "$PY" "$T/tree" split >"$T/real-ch.txt" 2>&1
LD_PRELOAD="$SANPRE" KJIT_DROPIN_DEBUG=1 "$KJIT" run --quiet $SAN -- python3 "$PY" "$T/tree" split >"$T/kj4.txt" 2>"$T/kj4.err"
old=$(grep '^split PTX' "$T/real.txt")
new=$(grep '^split PTX' "$T/real-ch.txt")
check "dropin-inc: a header changed in its folder: the new answer (a new object), compiled" \
	sh -c "cmp -s '$T/real-ch.txt' '$T/kj4.txt' && grep -q 'served compiled' '$T/kj4.err' && [ '$old' != '$new' ]"

# ---- hiprtc with -I ----
if [ -e /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 ] && [ -e "$HAPI" ]; then
	mkdir -p "$T/hinc"
	(cd "$T/hinc" && "$HAPI" libamdhip64.so.5 inc 2>&1 | sed 's|/tmp/comgr-[A-Za-z0-9]*/|/tmp/comgr-X/|g') >"$T/hreal.txt"
	s0=$(ds served)
	(cd "$T/hinc" && LD_PRELOAD="$SANPRE" KJIT_DROPIN_DEBUG=1 "$KJIT" run --quiet --no-preload -- "$HAPI" libhiprtc.so.6 inc 2>"$T/h1.err" |
		sed 's|/tmp/comgr-[A-Za-z0-9]*/|/tmp/comgr-X/|g') >"$T/h1.txt"
	(cd "$T/hinc" && LD_PRELOAD="$SANPRE" KJIT_DROPIN_DEBUG=1 "$KJIT" run --quiet --no-preload -- "$HAPI" libhiprtc.so.6 inc 2>"$T/h2.err" |
		sed 's|/tmp/comgr-[A-Za-z0-9]*/|/tmp/comgr-X/|g') >"$T/h2.txt"
	check "dropin-inc: hiprtc -I through kjit = the real hiprtc (both processes)" \
		sh -c "cmp -s '$T/hreal.txt' '$T/h1.txt' && cmp -s '$T/hreal.txt' '$T/h2.txt'"
	check "dropin-inc: hiprtc -I served, the second process from hits" \
		sh -c "grep -q 'served compiled' '$T/h1.err' && grep -q 'served hit' '$T/h2.err' && ! grep -q 'served compiled' '$T/h2.err'"
	check "dropin-inc: hiprtc -I whose header uses __FILE__ forwarded for path" \
		grep -q "forwarded to the real library: path.*__FILE__" "$T/h2.err"
else
	echo "# skip dropin-inc: hiprtc: no libamdhip64.so.5"
fi

# ---- --prestart / KJITD_PRESTART (what `kjit run` gives a kjitd it starts) ----
stop_daemon
export KJITD_PRESTART=nvrtc KJIT_CACHE_DIR="$T/cache2" GLIBC_TUNABLES=glibc.malloc.hugetlb=1
start_daemon || { not_ok "dropin-inc: prestart" "kjitd did not start"; exit 1; }
unset KJITD_PRESTART GLIBC_TUNABLES
i=0
while [ $i -lt 200 ] && ! "$KJIT" stats | grep -q '^workers nvrtc *alive 1'; do
	sleep 0.05
	i=$((i + 1))
done
# The admin's GLIBC_TUNABLES reaches the workers (issue 31: the nvrtc
# worker's heap on huge pages), nothing else of kjitd's environment does.
wp=$(pgrep -P "$DAEMON_PID" -f -- '--worker nvrtc' | head -n 1)
if [ -n "$wp" ] && [ -r "/proc/$wp/environ" ]; then
	tr '\0' '\n' <"/proc/$wp/environ" >"$T/wenv"
	check "dropin-inc: kjitd passes GLIBC_TUNABLES on to its workers" grep -qx 'GLIBC_TUNABLES=glibc.malloc.hugetlb=1' "$T/wenv"
	check "dropin-inc: and not KJITD_PRESTART (the worker's environment stays kjitd's list)" \
		sh -c "! grep -q '^KJITD_PRESTART=' '$T/wenv'"
else
	echo "# skip dropin-inc: the worker's environment is not readable here"
fi
w=$("$KJIT" stats | grep '^workers nvrtc')
check "dropin-inc: KJITD_PRESTART=nvrtc: the nvrtc worker is up before any request ($w)" \
	sh -c "echo '$w' | grep -q 'alive 1 .*started 1' && [ '$(stat_value misses)' = 0 ]"
LD_PRELOAD="$SANPRE" KJIT_DROPIN_DEBUG=1 "$KJIT" run --quiet $SAN -- python3 "$PY" "$T/tree" cupy >/dev/null 2>"$T/pre.err"
w=$("$KJIT" stats | grep '^workers nvrtc')
check "dropin-inc: the first request used the prestarted worker, none started since ($w)" \
	sh -c "grep -q 'served compiled' '$T/pre.err' && echo '$w' | grep -q 'alive 1 .*started 1'"
check "dropin-inc: the debug line gives the served compile's phases" \
	grep -q "served compiled (checks and headers [0-9.]* ms, kjitd [0-9.]* ms)" "$T/pre.err"
stop_daemon
[ "$FAILS" = 0 ]
