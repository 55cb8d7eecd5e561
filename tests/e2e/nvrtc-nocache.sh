#!/bin/sh
# nvrtc-nocache.sh: kjitd's nvrtc worker compiles with --no-cache (NVRTC
# 12.9+, compilers/nvrtc.c; docs/dropin.md "NVRTC's own cache"), so it never
# loads the CUDA driver nor reads or fills the driver's compute cache, and
# its objects are the bytes the real NVRTC gives in-process.  The CUDA
# driver is the toolkit's stub (lib64/stubs/libcuda.so) linked as
# libcuda.so.1 in a folder on the library path: a plain NVRTC 13 compile
# loads it (NVRTC's cache asks the driver, CUDA_CACHE_DISABLE=1 too);
# kjitd's worker, given the same library path, must not.  Needs no GPU.
. "$(dirname "$0")/lib.sh"

REAL_NVRTC_DIR=${KJIT_TEST_NVRTC_DIR:-/usr/local/cuda/lib64}
NV="$TOP/$BUILD/dropin/nvrtc"
STUB=$(realpath "$REAL_NVRTC_DIR/stubs/libcuda.so" 2>/dev/null)
export KJIT_DROPIN_STATS="$T/dropin.stats"
unset KJIT_REAL_NVRTC KJIT_DROPIN_DIR LD_PRELOAD CUDA_CACHE_DISABLE
if ! command -v python3 >/dev/null || [ ! -e "$REAL_NVRTC_DIR/libnvrtc.so.13" ] || [ -z "$STUB" ] ||
	[ ! -e "$NV/libnvrtc.so.13" ] || [ -n "$(san_flags)" ]; then
	echo "# skip nvrtc-nocache: needs python3, $REAL_NVRTC_DIR/libnvrtc.so.13 with stubs/libcuda.so, a plain build"
	exit 0
fi
mkdir -p "$T/drv" && ln -s "$STUB" "$T/drv/libcuda.so.1" || exit 1
DRV="$T/drv:$REAL_NVRTC_DIR"

# The control: in-process, NVRTC 13 loads the driver for its cache.
cat >"$T/maps.py" <<'EOF'
import ctypes, sys
lib = ctypes.CDLL("libnvrtc.so.13")
p = ctypes.c_void_p()
lib.nvrtcCreateProgram(ctypes.byref(p), b'extern "C" __global__ void k(float *x) { x[0] = 2.0f; }', b"k.cu", 0, None, None)
opts = [o.encode() for o in sys.argv[1:]]
rc = lib.nvrtcCompileProgram(p, len(opts), (ctypes.c_char_p * len(opts))(*opts))
n = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(p, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
lib.nvrtcGetProgramLog(p, log)
with open("/proc/self/maps") as f:
    drv = any("libcuda" in line for line in f)
print("rc=%d driver=%d trace=%d" % (rc, drv, b"[nvrtc cache]" in log.value))
EOF
LD_LIBRARY_PATH="$DRV" python3 "$T/maps.py" --gpu-architecture=sm_90 --enable-cache-trace >"$T/ctl" 2>&1
LD_LIBRARY_PATH="$DRV" python3 "$T/maps.py" --gpu-architecture=sm_90 --no-cache --enable-cache-trace >"$T/ctl2" 2>&1
if ! grep -q 'rc=0 driver=1 trace=1' "$T/ctl"; then
	echo "# skip nvrtc-nocache: this NVRTC does not load the driver for a cache ($(cat "$T/ctl"))"
	exit 0
fi
check "nvrtc-nocache: --no-cache is accepted and keeps NVRTC off the driver in-process" grep -q 'rc=0 driver=0 trace=0' "$T/ctl2"

# kjitd with the driver on its library path (the worker keeps that path and
# binds its folders): served compiles through the drop-in.
LD_LIBRARY_PATH="$DRV" start_daemon || { not_ok "nvrtc-nocache: start" "kjitd did not start"; exit 1; }
LD_LIBRARY_PATH="$DRV" python3 "$TOP/tests/dropin/nvrtc_ctypes.py" >"$T/real.txt" 2>&1
c0=$(stat_value compiles)
LD_LIBRARY_PATH="$NV" python3 "$TOP/tests/dropin/nvrtc_ctypes.py" >"$T/kj.txt" 2>&1
check "nvrtc-nocache: the worker compiled the program" [ "$(stat_value compiles)" -gt "$c0" ]
check "nvrtc-nocache: PTX, CUBIN, log and lowered name = the real NVRTC's in-process" cmp -s "$T/real.txt" "$T/kj.txt"
check "nvrtc-nocache: it compiled (not an empty run)" grep -q '^CUBIN 0 0 [1-9]' "$T/kj.txt"
pids=$(pgrep -P "$DAEMON_PID" -f -- '--worker nvrtc' | tr '\n' ' ') # this kjitd's, and their children
for p in $pids; do pids="$pids $(pgrep -P "$p" | tr '\n' ' ')"; done
nw=0 nd=0
for p in $pids; do
	[ -r "/proc/$p/maps" ] || continue
	grep -q 'libnvrtc' "/proc/$p/maps" && nw=$((nw + 1))
	grep -q 'libcuda' "/proc/$p/maps" && nd=$((nd + 1))
done
if [ "$nw" = 0 ]; then
	echo "# skip nvrtc-nocache: the worker's maps are not readable here (pids:$pids)"
else
	check "nvrtc-nocache: kjitd's nvrtc worker never loaded the CUDA driver ($nd of $nw workers did)" [ "$nd" = 0 ]
fi
# The library folder lies under /tmp, so the walls mount it read-only inside
# the worker's own /tmp: emptying that /tmp after a job leaves the mount alone
# (it used to walk into it and log "cannot remove ...: Read-only file system").
check "nvrtc-nocache: the worker's clean-up after a job stays off the mounted library folder" \
	sh -c '! grep -q "cannot remove" "$1"' sh "$T/kjitd.log"
finish
