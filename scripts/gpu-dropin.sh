#!/bin/sh
# gpu-dropin.sh: issues 23 and 31's GPU part (docs/dropin.md), on the GPU
# machine (an H100 or H200 with PyTorch, CUDA 13 in /usr/local/cuda; no
# libuv or hiredis there).  Run from a folder holding this build's kjit,
# kjitd, dropin/ (the drop-in libraries), kernels_src/, python/ (the kjit
# package), tests/ (jiterator.py, nvrtc_inc.py, cupy_like.py, nvrtc-api,
# bench-dropin, bench-dropmiss) and debs/ (libuv1, libhiredis0.14 of Debian
# 12), which `sh scripts/gpu-dropin.sh pack DIR` makes here (after `make all
# build/bench/bench-dropmiss build/tests/dropin/bench-dropin
# build/tests/dropin/nvrtc-api`); there, as root:
#   sh DIR/gpu-dropin.sh [OUTDIR]
# It checks how PyTorch loads NVRTC (LD_DEBUG), times a jiterator kernel's
# first call with PyTorch's kernel cache off (USE_PYTORCH_KERNEL_CACHE=0):
# twice without kjit, twice under `kjit run` (the second process must be a
# kjit hit, with the right result), once under `kjit run --no-preload` (does
# the library path alone reach PyTorch?); issue 31: a CuPy-style program
# (tests/cupy_like.py: -I folders, name expression, kernels launched with
# kjit.cuda) timed the same way, nvrtc_inc.py's answers against the real
# NVRTC, and the miss's breakdown (bench-dropmiss, real vs drop-in in fresh
# processes, the drop-in's phases, kjitd's compile time, the worker's page
# faults and CPU time); compares nvrtc-api's answers with the real NVRTC
# there; runs the drop-in bench.  kjitd starts with --prestart nvrtc, as
# `kjit run` starts one.  Prints "ok NAME" / "not ok NAME: why" lines and
# writes everything to OUTDIR (default $OUT or /tmp).
set -u
if [ "${1:-}" = pack ]; then # here: DIR gets what the GPU machine needs
	P=$2 B=${BUILD:-build}
	mkdir -p "$P/tests" "$P/debs" "$P/dropin" || exit 1
	cp "$B/kjit" "$B/kjitd" "$0" "$P/" && cp -r "$B/dropin/nvrtc" "$P/dropin/" && cp -r kernels_src python "$P/" &&
		cp tests/dropin/jiterator.py tests/dropin/nvrtc_inc.py tests/dropin/cupy_like.py "$B/tests/dropin/nvrtc-api" \
			"$B/tests/dropin/bench-dropin" "$B/bench/bench-dropmiss" "$P/tests/" || exit 1
	(cd "$P/debs" && apt-get download libuv1 libhiredis0.14 >/dev/null) || exit 1
	exit 0
fi
D=$(cd "$(dirname "$0")" && pwd)
O=${1:-${OUT:-/tmp}}
W=$(mktemp -d /tmp/kjit-gpu-dropin.XXXXXX)
FAILS=0
ok() { echo "ok $1"; }
not_ok() { echo "not ok $1: $2"; FAILS=$((FAILS + 1)); }

for f in "$D"/debs/*.deb; do dpkg -x "$f" "$W/libs" || exit 1; done
export LD_LIBRARY_PATH="$W/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KJIT_SOCKET="$W/sock/kjitd.sock" KJIT_CACHE_DIR="$W/cache" KJIT_DROPIN_STATS="$W/dropin.stats"
export KJIT_NO_AUTOSTART=1 USE_PYTORCH_KERNEL_CACHE=0 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$W/sock"
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__)'; date -u; } >"$O/gpu-dropin-machine.txt" 2>&1
cat "$O/gpu-dropin-machine.txt"
[ "$(id -u)" != 0 ] || getent passwd kjit-worker >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin kjit-worker
# --prestart nvrtc: what `kjit run` gives a kjitd it starts (KJITD_PRESTART)
"$D/kjitd" --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --kernels-dir "$D/kernels_src" --log "$O/gpu-dropin-kjitd.log" \
	--prestart nvrtc ||
	{ not_ok "gpu-dropin: kjitd" "did not start"; exit 1; }

# How PyTorch finds NVRTC: which files, by name or by path.
LD_DEBUG=libs python3 "$D/tests/jiterator.py" 0 2>&1 | grep -iE 'nvrtc' | head -40 >"$O/gpu-dropin-lddebug.txt"

run() { # label, command...: one jiterator process, its line into the log
	label=$1
	shift
	line=$("$@" 2>>"$O/gpu-dropin-stderr.txt" | grep '^jiterator')
	echo "$label: $line" | tee -a "$O/gpu-dropin-runs.txt"
	echo "$line" | sed -n 's/.*first_call_ms=\([0-9.]*\).*/\1/p' >"$W/ms"
	echo "$line" | grep -q 'ok=True'
}
hits() { "$D/kjit" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"hits":\([0-9]*\)$/\1/p'; }
compiles() { "$D/kjit" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"compiles":\([0-9]*\)$/\1/p'; }

run "without kjit, process 1" python3 "$D/tests/jiterator.py" 1 || not_ok "gpu-dropin: jiterator without kjit" "wrong result"
run "without kjit, process 2" python3 "$D/tests/jiterator.py" 1
c0=$(compiles)
h0=$(hits)
export KJIT_DROPIN_DEBUG=1
run "kjit run, process 1" "$D/kjit" run -- python3 "$D/tests/jiterator.py" 2 &&
	ok "gpu-dropin: jiterator under kjit run, first process, right result" ||
	not_ok "gpu-dropin: jiterator under kjit run, first process" "wrong result or no run"
c1=$(compiles)
h1=$(hits)
run "kjit run, process 2" "$D/kjit" run -- python3 "$D/tests/jiterator.py" 2 &&
	ok "gpu-dropin: jiterator under kjit run, second process, right result" ||
	not_ok "gpu-dropin: jiterator under kjit run, second process" "wrong result or no run"
c2=$(compiles)
h2=$(hits)
[ "$c1" -gt "$c0" ] && ok "gpu-dropin: the first process compiled through kjitd ($c0 -> $c1)" ||
	not_ok "gpu-dropin: the first process compiled through kjitd" "compiles $c0 -> $c1"
[ "$c2" = "$c1" ] && [ "$h2" -gt "$h1" ] && ok "gpu-dropin: the second process was a kjit hit (hits $h1 -> $h2)" ||
	not_ok "gpu-dropin: the second process was a kjit hit" "compiles $c1 -> $c2, hits $h1 -> $h2"
run "kjit run, a new kernel, kjitd's worker warm" "$D/kjit" run -- python3 "$D/tests/jiterator.py" 4
run "kjit run --no-preload, process 1" "$D/kjit" run --no-preload -- python3 "$D/tests/jiterator.py" 3
run "kjit run --no-preload, process 2" "$D/kjit" run --no-preload -- python3 "$D/tests/jiterator.py" 3
unset KJIT_DROPIN_DEBUG

# ---- issue 31: a CuPy-style program (-I folders), kernels launched with kjit.cuda ----
export PYTHONPATH="$D/python${PYTHONPATH:+:$PYTHONPATH}"
cl() { # label, command...: one cupy_like process, its line into the log
	label=$1
	shift
	line=$("$@" 2>>"$O/gpu-dropin-stderr.txt" | grep '^cupy_like')
	echo "$label: $line" | tee -a "$O/gpu-dropin-runs.txt"
	echo "$line" | grep -q 'ok=True'
}
mkdir -p "$W/tree"
cl "cupy_like without kjit, process 1" python3 "$D/tests/cupy_like.py" "$W/tree" 1 ||
	not_ok "gpu-dropin: cupy_like without kjit" "wrong result"
cl "cupy_like without kjit, process 2" python3 "$D/tests/cupy_like.py" "$W/tree" 1
c0=$(compiles)
export KJIT_DROPIN_DEBUG=1
cl "cupy_like kjit run, process 1" "$D/kjit" run -- python3 "$D/tests/cupy_like.py" "$W/tree" 2 &&
	ok "gpu-dropin: cupy_like under kjit run, first process, right result" ||
	not_ok "gpu-dropin: cupy_like under kjit run, first process" "wrong result"
c1=$(compiles)
h1=$(hits)
cl "cupy_like kjit run, process 2" "$D/kjit" run -- python3 "$D/tests/cupy_like.py" "$W/tree" 2 &&
	ok "gpu-dropin: cupy_like under kjit run, second process, right result" ||
	not_ok "gpu-dropin: cupy_like under kjit run, second process" "wrong result"
[ "$(compiles)" = "$c1" ] && [ "$(hits)" -gt "$h1" ] && [ "$c1" -gt "$c0" ] &&
	ok "gpu-dropin: cupy_like (-I folders): first process compiled through kjitd, second a kjit hit" ||
	not_ok "gpu-dropin: cupy_like served" "compiles $c0 -> $c1 -> $(compiles), hits $h1 -> $(hits)"
cl "cupy_like kjit run, a new kernel, worker warm" "$D/kjit" run -- python3 "$D/tests/cupy_like.py" "$W/tree" 3
unset KJIT_DROPIN_DEBUG
grep '^kjit libnvrtc' "$O/gpu-dropin-stderr.txt" | tail -8 >"$O/gpu-dropin-debug.txt"
LD_LIBRARY_PATH="/usr/local/cuda/lib64:$LD_LIBRARY_PATH" python3 "$D/tests/nvrtc_inc.py" "$W/inc" >"$W/inc-real.txt" 2>&1
"$D/kjit" run --quiet -- python3 "$D/tests/nvrtc_inc.py" "$W/inc" >"$W/inc1.txt" 2>&1
"$D/kjit" run --quiet -- python3 "$D/tests/nvrtc_inc.py" "$W/inc" >"$W/inc2.txt" 2>&1
cmp -s "$W/inc-real.txt" "$W/inc1.txt" && cmp -s "$W/inc-real.txt" "$W/inc2.txt" &&
	ok "gpu-dropin: nvrtc_inc.py (CuPy, Warp layouts) through kjit = the real NVRTC there" ||
	{ not_ok "gpu-dropin: nvrtc_inc.py" "differs from the real NVRTC"; diff "$W/inc-real.txt" "$W/inc1.txt" | head; }

# ---- issue 31: the miss's breakdown, fresh processes, real and drop-in alternating ----
cms() { "$D/kjit" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"compile_ms":\([0-9]*\)$/\1/p'; }
WK=$(pgrep -n -f -- '--worker nvrtc') # the compiling one: the newest (PID 1 of the worker's namespace)
wst() { awk '{print "minflt=" $10, "cpu_ticks=" ($14 + $15)}' "/proc/$WK/stat" 2>/dev/null; }
for i in 1 2 3 4 5 6; do
	for arch in sm_90 compute_90; do
		LD_LIBRARY_PATH="/usr/local/cuda/lib64:$LD_LIBRARY_PATH" "$D/tests/bench-dropmiss" -a $arch -s "r$i$$" |
			sed "s/^/real $arch /" >>"$O/gpu-dropin-miss.txt"
		m0=$(cms)
		echo "kjit $arch worker before: $(wst)" >>"$O/gpu-dropin-miss.txt"
		KJIT_DROPIN_DEBUG=1 LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/bench-dropmiss" -a $arch \
			-s "k$i$$" 2>"$W/dbg" | sed "s/^/kjit $arch /" >>"$O/gpu-dropin-miss.txt"
		echo "kjit $arch worker compile_ms(2 kernels)=$(($(cms) - m0)) after: $(wst) $(tr '\n' ' ' <"$W/dbg")" >>"$O/gpu-dropin-miss.txt"
	done
done
cat "$O/gpu-dropin-miss.txt"

# ---- issue 31: why the warm worker's compile costs 2.5-3x a warm in-process one ----
# Same NVRTC, source and options; on the Debian VM both take the same CPU,
# and the same instructions (docs/dropin.md).  In-process, the worker's
# conditions one at a time (6 new kernels after the first two): back to
# back; an idle gap before each (the worker waits for requests); a fresh
# working directory and TMPDIR each (its job-N); its environment (kjitd
# gives workers only PATH, LANG, HOME, LD_LIBRARY_PATH, TMPDIR); its
# rlimits; its malloc settings (compilers/nvrtc.c's mallopt); the CUDA
# driver initialised first (-c: the Python programs' state); then the
# drop-in with the worker's CPU ticks, CPU, faults and huge pages around.
{
	echo "cpus $(nproc) $(grep -m1 'model name' /proc/cpuinfo)"
	grep -H . /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
		/sys/kernel/mm/transparent_hugepage/hugepages-*/enabled /sys/devices/system/cpu/vulnerabilities/spec_store_bypass \
		/sys/devices/system/cpu/vulnerabilities/spectre_v2 /sys/devices/system/clocksource/clocksource0/current_clocksource \
		/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
	env | grep -E '^(GLIBC_TUNABLES|MALLOC_[A-Z_]*|LD_BIND_NOW|LD_PRELOAD|CUDA_[A-Z_]*|NVRTC[A-Z_]*)='
	grep -E 'Seccomp|Speculation|Cpus_allowed_list|THP' "/proc/$WK/status"
	R="/usr/local/cuda/lib64:$LD_LIBRARY_PATH" K="$D/dropin/nvrtc:$LD_LIBRARY_PATH" B="$D/tests/bench-dropmiss"
	wk() {
		awk '{print "worker minflt=" $10, "majflt=" $12, "cpu_ticks=" ($14 + $15), "on_cpu=" $39}' "/proc/$WK/stat"
		grep -E 'AnonHuge|FilePmd' "/proc/$WK/smaps_rollup" | tr -s ' \n' '  '
		grep -E 'ctxt' "/proc/$WK/status" | tr -s '\t\n' '  '
		for p in $(pgrep -x kjitd); do printf 'kjitd pid %s ticks %s; ' "$p" "$(awk '{print $14 + $15}' "/proc/$p/stat")"; done
		echo
	}
	for r in 1 2; do
		for v in "" "-g 300" "-j"; do
			# shellcheck disable=SC2086
			LD_LIBRARY_PATH="$R" "$B" -a sm_90 -s "w$r$$${v#-}" -n 6 $v | grep later | sed "s/^/real [$v] /"
		done
		# the CUDA driver up first, as in PyTorch and CuPy (their first compile: 18-37 ms)
		LD_LIBRARY_PATH="$R" "$B" -a sm_90 -s "c$r$$" -n 6 -c | sed "s/^/real [-c] /"
		env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C HOME=/nonexistent TMPDIR=/tmp LD_LIBRARY_PATH="$R" \
			"$B" -a sm_90 -s "e$r$$" -n 6 | grep later | sed "s/^/real [worker env] /"
		LD_LIBRARY_PATH="$R" prlimit --as=17179869184 --fsize=1073741824 --core=0 "$B" -a sm_90 -s "l$r$$" -n 6 |
			grep later | sed "s/^/real [worker rlimits] /"
		LD_LIBRARY_PATH="$R" MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_MMAP_THRESHOLD_=33554432 "$B" -a sm_90 -s "m$r$$" -n 6 |
			grep later | sed "s/^/real [worker mallopt] /"
		for v in "" "-g 300"; do
			wk
			# shellcheck disable=SC2086
			LD_LIBRARY_PATH="$K" "$B" -a sm_90 -s "x$r$$${v#-}" -n 6 $v | grep later | sed "s/^/kjit [$v] /"
			wk
		done
	done
} >"$O/gpu-dropin-worker.txt" 2>&1
cat "$O/gpu-dropin-worker.txt"
worker_summary() { # CPU ms per warm compile: in-process lines' mean, the worker's ticks over its 8 compiles
	awk '/^real .*dropmiss-later/ {l = $0; sub(/ dropmiss-later.*/, "", l); c = $0; sub(/.*cpu_ms=/, "", c); sub(/ .*/, "", c)
			n = split(c, v, ","); t = 0; for (i = 1; i <= n; i++) t += v[i]; printf "summary %s: %.1f ms CPU per compile\n", l, t / n }
		/^worker minflt/ {tk = $0; sub(/.*cpu_ticks=/, "", tk); sub(/ .*/, "", tk)
			if (lab != "") printf "summary %s worker: %.1f ms CPU per compile\n", lab, (tk - t0) * 10 / 8; lab = ""; t0 = tk }
		/^kjit .*dropmiss-later/ {lab = $0; sub(/ dropmiss-later.*/, "", lab)}' "$O/gpu-dropin-worker.txt"
}
worker_summary
"$D/kjit" stats >"$O/gpu-dropin-stats.txt" 2>&1

# Every NVRTC answer, real vs drop-in, on this machine's NVRTC.
LD_LIBRARY_PATH="/usr/local/cuda/lib64:$LD_LIBRARY_PATH" "$D/tests/nvrtc-api" >"$W/real.txt" 2>&1
LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/nvrtc-api" >"$W/kj1.txt" 2>&1
LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/nvrtc-api" >"$W/kj2.txt" 2>&1
cmp -s "$W/real.txt" "$W/kj1.txt" && cmp -s "$W/real.txt" "$W/kj2.txt" &&
	ok "gpu-dropin: nvrtc-api through kjit = the real NVRTC there, byte for byte" ||
	{ not_ok "gpu-dropin: nvrtc-api" "differs from the real NVRTC"; diff "$W/real.txt" "$W/kj1.txt" | head -20; }
LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/bench-dropin" 2000 | tee "$O/gpu-dropin-bench.txt"
cat "$O/gpu-dropin-stats.txt" | grep -E '^(hits|compiles|dropin)'
"$D/kjit" stop >/dev/null 2>&1

# ---- issue 31: the same worker with glibc's malloc on transparent huge pages ----
# (a second kjitd whose workers get GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
export KJIT_SOCKET="$W/sock/huge.sock"
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$D/kjitd" --socket "$KJIT_SOCKET" --cache-dir "$W/cache-huge" \
	--kernels-dir "$D/kernels_src" --log "$O/gpu-dropin-kjitd-huge.log" --prestart nvrtc &&
	for i in $(seq 100); do "$D/kjit" stats 2>/dev/null | grep -q '^workers nvrtc *alive 1' && break; sleep 0.1; done
sleep 2
WK=$(pgrep -n -f -- '--worker nvrtc')
{
	tr '\0' '\n' <"/proc/$WK/environ" | grep GLIBC
	for r in 1 2 3; do
		wk
		LD_LIBRARY_PATH="$K" "$B" -a sm_90 -s "h$r$$" -n 6 | grep later | sed "s/^/kjit hugetlb=1 /"
		wk
	done
} >>"$O/gpu-dropin-worker.txt" 2>&1
worker_summary | grep hugetlb
"$D/kjit" stop >/dev/null 2>&1
echo "# gpu-dropin: $FAILS failed"
exit "$((FAILS > 0))"
