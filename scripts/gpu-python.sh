#!/bin/sh
# gpu-python.sh: the Python package on a machine with an NVIDIA GPU and
# PyTorch: examples/python/torch_rms_norm.py (kjit's rms_norm in place of
# torch.nn.functional.rms_norm, checked against torch and timed next to it)
# and examples/python/fleet_compile.py (one source, 8 processes, one NVRTC
# compile, then a saxpy launch checked on the CPU), against kjitd.
#
# On the lent H200 (no -dev packages there, see ../shared/gpu-run.md) it runs
# from the binaries carried in .gpu/, which need libkjit.so besides what
# scripts/gpu-run.sh packs:
#     scripts/gpu-run.sh pack && scripts/gpu-python.sh pack    # here
#     scripts/gpu-python.sh                                     # there
# Elsewhere it uses $BUILD (build/).  It uses the kjitd that $KJIT_SOCKET
# names when one answers there (as inside scripts/gpu-run.sh), else starts
# its own on a temporary socket and cache.  Output goes to stdout and, when
# $OUT is set, to $OUT/gpu-python.log.  Exit status: 0 when both examples
# pass, 1 otherwise.
set -u
MODE=${1:-run}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

if [ "$MODE" = pack ]; then
	BUILD=${BUILD:-build}
	[ -f "$BUILD/libkjit.so" ] || { echo "gpu-python.sh: $BUILD/libkjit.so missing; run make" >&2; exit 1; }
	mkdir -p .gpu/bin
	# a worktree has .git as a file, a fresh clone may lack .git/info: ask git
	if excl=$(git rev-parse --git-path info/exclude 2>/dev/null); then
		mkdir -p "$(dirname "$excl")" || exit 1
		grep -qx '/.gpu/' "$excl" 2>/dev/null || echo '/.gpu/' >>"$excl" || exit 1
	fi
	cp "$BUILD/libkjit.so" .gpu/bin/
	ls -l .gpu/bin/libkjit.so
	exit 0
fi

if [ -d .gpu/bin ]; then
	B=$top/.gpu/bin
	for f in .gpu/*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/gpu; done
	export LD_LIBRARY_PATH="/tmp/gpu/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
else
	B=$top/${BUILD:-build}
fi
log=${OUT:+$OUT/gpu-python.log}
log=${log:-/dev/null}
say() { echo "$*" | tee -a "$log"; }
lib=$B/libkjit.so
[ -f "$lib" ] || lib=$top/${BUILD:-build}/libkjit.so   # a build/ carried along
for f in "$B/kjitd" "$B/kjit" "$lib"; do
	[ -f "$f" ] || { say "gpu-python.sh: $f missing (here: scripts/gpu-python.sh pack)"; exit 1; }
done
export KJIT_LIBRARY="$lib" KJIT_KJITD="$B/kjitd" PYTHONPATH="$top/python" KJIT_NO_AUTOSTART=1

T=$(mktemp -d /tmp/kjit-gpu-python.XXXXXX)
pid=""
if [ -z "${KJIT_SOCKET:-}" ] || ! "$B/kjit" ping >/dev/null 2>&1; then
	export KJIT_SOCKET="$T/sock/kjitd.sock" KJIT_CACHE_DIR="$T/cache"
	mkdir -p "$T/sock"
	"$B/kjitd" --foreground --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" \
		--kernels-dir "$top/kernels_src" --log "$T/kjitd.log" &
	pid=$!
	i=0
	until "$B/kjit" ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -gt 200 ] && { tee -a "$log" <"$T/kjitd.log"; say "gpu-python.sh: kjitd did not start"; exit 1; }
		sleep 0.05
	done
fi

rc=0
say "== python: torch.nn.functional.rms_norm replaced by kjit's rms_norm (examples/python/torch_rms_norm.py)"
python3 examples/python/torch_rms_norm.py >"$T/torch.out" 2>&1 || rc=1
tee -a "$log" <"$T/torch.out"
say "== python: one source, 8 processes, one compile, then a launch (examples/python/fleet_compile.py)"
python3 examples/python/fleet_compile.py --procs 8 >"$T/fleet.out" 2>&1 || rc=1
tee -a "$log" <"$T/fleet.out"
say "== python: $([ $rc = 0 ] && echo ok || echo FAILED)"

if [ -n "$pid" ]; then
	"$B/kjit" stop >/dev/null 2>&1 || kill "$pid"
	wait "$pid"
fi
rm -rf "$T"
exit $rc
