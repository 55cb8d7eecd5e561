#!/bin/sh
# dropin.sh: kjit's drop-in libnvrtc.so.13 and libhiprtc.so.6 (dropin/,
# docs/dropin.md) against the real libraries.  Programs written for this
# project (tests/dropin/) call every API function and print every answer;
# each runs against the real library and through kjit's, and the outputs
# must be identical byte for byte.  Also: the second process is a hit, 16
# processes at once cause one compile, a Python ctypes program that loads
# NVRTC by name works the same, `kjit run` sets the library path, a kjitd
# started with the drop-in on its library path still compiles with the
# real NVRTC, and with kjitd stopped the programs still work.
. "$(dirname "$0")/lib.sh"

NV="$TOP/$BUILD/dropin/nvrtc"
HIP="$TOP/$BUILD/dropin/hiprtc"
API="$TOP/$BUILD/tests/dropin/nvrtc-api"
HAPI="$TOP/$BUILD/tests/dropin/hiprtc-api"
REAL_NVRTC_DIR=${KJIT_TEST_NVRTC_DIR:-/usr/local/cuda/lib64}
export KJIT_DROPIN_STATS="$T/dropin.stats"
unset KJIT_REAL_NVRTC KJIT_REAL_HIPRTC KJIT_DROPIN_DIR LD_PRELOAD

for f in "$NV/libnvrtc.so.13" "$HIP/libhiprtc.so.6" "$API" "$HAPI"; do
	[ -e "$f" ] || { not_ok "dropin: build" "$f missing; run make test"; exit 1; }
done
# A sanitized build's drop-in carries the sanitizers: their runtime must
# come first in the (unsanitized) test programs that load it.
SANPRE=""
if [ -n "$(san_flags)" ]; then
	SANPRE="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
real() { LD_LIBRARY_PATH="$REAL_NVRTC_DIR" "$@"; }
dropin() { LD_PRELOAD="$SANPRE" LD_LIBRARY_PATH="$NV:$HIP" "$@"; }
same() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -20 >&2; return 1; }; }
ds() { # counter NAME of the drop-in's stats file, as `kjit stats` prints it
	"$KJIT" stats 2>/dev/null | sed -n "s/^dropin_$1 *\([0-9]*\).*/\1/p"
}
reason() { "$KJIT" stats 2>/dev/null | grep '^dropin_forwarded' | grep -o "$1 [0-9]*" | cut -d' ' -f2; }

start_daemon || { not_ok "dropin: start" "kjitd did not start"; exit 1; }

# ---- hiprtc: served through kjitd; the rest forwarded to the hiprtc inside libamdhip64.so.5 ----
# The one thing masked: comgr's random temporary folder, which hiprtc 5.2
# names in every log (a log kjit could only ever equal up to it is the real
# library's: such compiles are forwarded, so the masked text is the real
# one's both times).
hip_norm() { sed 's|/tmp/comgr-[A-Za-z0-9]*/|/tmp/comgr-X/|g'; }
have_hip=0
[ -e /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 ] && have_hip=1
if [ $have_hip = 1 ]; then
	"$HAPI" libamdhip64.so.5 2>"$T/h.err" | hip_norm >"$T/hreal.txt"
	s0=$(ds served)
	c0=$(stat_value compiles)
	dropin "$HAPI" 2>>"$T/h.err" | hip_norm >"$T/hkj.txt"
	check "dropin: hiprtc-api through kjit's libhiprtc.so.6 = the real hiprtc, byte for byte (first process)" \
		same "$T/hreal.txt" "$T/hkj.txt"
	check "dropin: hiprtc compiled (not an empty run)" grep -q '^  code size rc=0 size=[1-9]' "$T/hkj.txt"
	check "dropin: hiprtc compiles were served by kjit (6 of them)" [ "$(($(ds served) - s0))" = 6 ]
	c1=$(stat_value compiles)
	h1=$(stat_value hits)
	check "dropin: the first hiprtc process compiled through kjitd" [ "$c1" -gt "$c0" ]
	dropin "$HAPI" 2>>"$T/h.err" | hip_norm >"$T/hkj2.txt"
	check "dropin: hiprtc-api through kjit = real hiprtc (second process: hits)" same "$T/hreal.txt" "$T/hkj2.txt"
	check "dropin: the second hiprtc process compiled nothing, was served hits" \
		[ "$(stat_value compiles)" = "$c1" -a "$(stat_value hits)" -gt "$h1" ]
	dropin "$HAPI" libhiprtc.so.5 | hip_norm >"$T/hkj5.txt"
	check "dropin: libhiprtc.so.5 by name is the drop-in too" same "$T/hreal.txt" "$T/hkj5.txt"
	check "dropin: hiprtc's forwarded compiles counted with why (log, no-arch, option, input, api)" \
		[ "$(reason log)" -ge 6 -a "$(reason no-arch)" -ge 3 -a "$(reason option)" -ge 6 \
		-a "$(reason input)" -ge 6 -a "$(reason api)" -ge 9 ]
	"$KJIT" clear >/dev/null
	"$HAPI" libamdhip64.so.5 one >"$T/hone-real.txt" 2>&1
	c0=$(stat_value compiles)
	i=0
	pids=""
	while [ $i -lt 16 ]; do
		dropin "$HAPI" libhiprtc.so.6 one >"$T/hone.$i" 2>&1 &
		pids="$pids $!"
		i=$((i + 1))
	done
	for p in $pids; do wait "$p"; done
	check "dropin: 16 hiprtc processes at once cause one compile" [ "$(($(stat_value compiles) - c0))" = 1 ]
	bad=0
	i=0
	while [ $i -lt 16 ]; do
		cmp -s "$T/hone-real.txt" "$T/hone.$i" || bad=$((bad + 1))
		i=$((i + 1))
	done
	check "dropin: all 16 got the real hiprtc's answers" [ "$bad" = 0 ]
	check "dropin: the 16 compiled (not an empty run)" grep -q 'lowered scale<int> rc=0 _Z' "$T/hone.0"
else
	echo "# skip dropin: hiprtc: no libamdhip64.so.5 (ROCm's hiprtc) on this machine"
fi

if [ ! -e "$REAL_NVRTC_DIR/libnvrtc.so.13" ]; then
	echo "# skip dropin: nvrtc: no real NVRTC 13 in $REAL_NVRTC_DIR (KJIT_TEST_NVRTC_DIR): nothing to compare with"
	exit "$((FAILS > 0))"
fi

# ---- NVRTC: every call, real vs kjit, twice ----
# nvrtc-api's -I case reads this folder (the same path in every run)
export KJD_INC_DIR="$T/inc"
mkdir -p "$KJD_INC_DIR"
printf '#pragma once\n__device__ float from_inc(float x) { return x * 5.0f; }\n' >"$KJD_INC_DIR/kjd_inc.h"
printf '#pragma once\n__device__ float from_inc(float x) { int unused_w; return x; }\n' >"$KJD_INC_DIR/kjd_warn.h"
real "$API" >"$T/real.txt" 2>"$T/real.err" || not_ok "dropin: nvrtc-api (real)" "exit $?"
c0=$(stat_value compiles)
dropin "$API" >"$T/kj1.txt" 2>"$T/kj1.err"
check "dropin: nvrtc-api through kjit = real NVRTC, byte for byte (first process)" same "$T/real.txt" "$T/kj1.txt"
c1=$(stat_value compiles)
h1=$(stat_value hits)
check "dropin: the first process compiled through kjitd" [ "$c1" -gt "$c0" ]
dropin "$API" >"$T/kj2.txt" 2>"$T/kj2.err"
check "dropin: nvrtc-api through kjit = real NVRTC, byte for byte (second process: hits)" same "$T/real.txt" "$T/kj2.txt"
check "dropin: the second process compiled nothing" [ "$(stat_value compiles)" = "$c1" ]
check "dropin: the second process was served hits" [ "$(stat_value hits)" -gt "$h1" ]
if [ -x "$TOP/$BUILD/tests/dropin/nvrtc-api-linked" ]; then
	dropin "$TOP/$BUILD/tests/dropin/nvrtc-api-linked" >"$T/kjl.txt" 2>&1
	check "dropin: a program linked against the real libnvrtc.so.13 (versioned symbols) gets kjit's" \
		same "$T/real.txt" "$T/kjl.txt"
fi
check "dropin: kjit stats counts served compiles" [ "$(ds served)" -ge 8 ]
check "dropin: kjit stats counts forwarded compiles with why (option)" [ "$(reason option)" -ge 8 ]
check "dropin: kjit stats counts forwarded compiles with why (api)" [ "$(reason api)" -ge 4 ]

# ---- threads: 8 programs compiled at once in one process ----
real "$API" threads >"$T/th-real.txt" 2>&1
dropin "$API" threads >"$T/th-kj.txt" 2>&1
check "dropin: 8 threads compiling at once through kjit = real NVRTC" same "$T/th-real.txt" "$T/th-kj.txt"
check "dropin: the threads' programs compiled (not an empty run)" grep -q 'compile 0 ptx [1-9].*_Z' "$T/th-kj.txt"

# ---- 16 processes at once: one compile ----
"$KJIT" clear >/dev/null
real "$API" one >"$T/one-real.txt"
c0=$(stat_value compiles)
i=0
pids=""
while [ $i -lt 16 ]; do
	dropin "$API" one >"$T/one.$i" 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
for p in $pids; do wait "$p"; done # not bare wait: kjitd is a child too
check "dropin: 16 processes at once cause one compile" [ "$(($(stat_value compiles) - c0))" = 1 ]
bad=0
i=0
while [ $i -lt 16 ]; do
	cmp -s "$T/one-real.txt" "$T/one.$i" || bad=$((bad + 1))
	i=$((i + 1))
done
check "dropin: all 16 got the real NVRTC's answers" [ "$bad" = 0 ]

# ---- Python, loading NVRTC by name with ctypes as CuPy does ----
if command -v python3 >/dev/null 2>&1; then
	real python3 "$TOP/tests/dropin/nvrtc_ctypes.py" >"$T/py-real.txt" 2>&1
	dropin python3 "$TOP/tests/dropin/nvrtc_ctypes.py" >"$T/py1.txt" 2>&1
	h1=$(stat_value hits)
	dropin python3 "$TOP/tests/dropin/nvrtc_ctypes.py" >"$T/py2.txt" 2>&1
	check "dropin: python ctypes.CDLL('libnvrtc.so.13') through kjit = real" same "$T/py-real.txt" "$T/py1.txt"
	check "dropin: python ctypes, second process: same answers, a hit" \
		sh -c "cmp -s '$T/py-real.txt' '$T/py2.txt' && [ $(stat_value hits) -gt $h1 ]"
else
	echo "# skip dropin: python ctypes: no python3"
fi

# ---- kjit run ----
if [ -z "$SANPRE" ]; then
	"$KJIT" run -- sh -c 'echo "$LD_LIBRARY_PATH|$LD_PRELOAD"' >"$T/run.txt" 2>"$T/run.err"
	check "dropin: kjit run puts the drop-in folders first and preloads libnvrtc" \
		grep -q "^$NV:$HIP.*|$NV/libnvrtc.so.13" "$T/run.txt"
else # a sanitized libnvrtc cannot be preloaded ahead of the sanitizers' runtime
	"$KJIT" run --no-preload -- sh -c 'echo "$LD_LIBRARY_PATH|$LD_PRELOAD"' >"$T/run.txt" 2>"$T/run.err"
	check "dropin: kjit run puts the drop-in folders first" grep -q "^$NV:$HIP" "$T/run.txt"
fi
check "dropin: kjit run says which folder" grep -q "kjit run: .* from $TOP/$BUILD/dropin first" "$T/run.err"
LD_PRELOAD="$SANPRE" "$KJIT" run --quiet --no-preload -- "$API" >"$T/kjrun.txt" 2>"$T/kjrun.err"
check "dropin: a program under kjit run = real NVRTC" same "$T/real.txt" "$T/kjrun.txt"
"$KJIT" run --quiet -- /nonexistent/prog 2>/dev/null
check "dropin: kjit run of a missing command exits 127" [ $? = 127 ]
KJIT_DROPIN_DIR=/nonexistent "$KJIT" run -- true 2>"$T/nodir.err"
check "dropin: kjit run without the drop-in libraries: exit 1, one line" \
	sh -c "[ $? = 1 ] && [ \$(wc -l <'$T/nodir.err') = 1 ] && grep -q KJIT_DROPIN_DIR '$T/nodir.err'"

# ---- a kjitd started with the drop-in on its library path ----
stop_daemon
LD_LIBRARY_PATH="$NV:$HIP" start_daemon || not_ok "dropin: start with the drop-in on LD_LIBRARY_PATH" "no kjitd"
printf 'extern "C" __global__ void w%s(int *x) { *x = 1; }\n' "$$" >"$T/w.cu"
s0=$(ds served)
f0=$(ds forwarded)
timeout 120 "$KJIT" get --source "$T/w.cu" --backend cuda --target sm_90 --compiler nvrtc -o "$T/w.cubin" >/dev/null 2>"$T/w.err"
s1=$(ds served)
f1=$(ds forwarded)
check "dropin: kjitd's nvrtc worker skips the drop-in on its library path and compiles with the real NVRTC" \
	[ -s "$T/w.cubin" -a "$s0:$f0" = "$s1:$f1" ]

# ---- kjitd stopped: everything goes to the real library ----
stop_daemon
u0=$(reason unreachable)
u0=${u0:-0}
dropin "$API" >"$T/down.txt" 2>"$T/down.err"
check "dropin: with kjitd stopped, nvrtc-api through the drop-in = real NVRTC" same "$T/real.txt" "$T/down.txt"
u1=$(reason unreachable)
check "dropin: the unreachable daemon is counted as the reason" [ "$u0" -lt "${u1:-0}" ]
if [ $have_hip = 1 ]; then
	dropin "$HAPI" 2>>"$T/h.err" | hip_norm >"$T/hdown.txt"
	check "dropin: with kjitd stopped, hiprtc-api through the drop-in = real hiprtc" same "$T/hreal.txt" "$T/hdown.txt"
fi
exit "$((FAILS > 0))"
