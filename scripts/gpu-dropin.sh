#!/bin/sh
# gpu-dropin.sh: issues 23 and 31's GPU part (docs/dropin.md), on the GPU
# machine (an H100 or H200 with PyTorch, CUDA 13 in /usr/local/cuda; no
# libuv or hiredis there).  Run from a folder holding this build's kjit,
# kjitd, dropin/ (the drop-in libraries), kernels_src/, python/ (the kjit
# package), tests/ (jiterator.py, nvrtc_inc.py, cupy_like.py,
# nvrtc_cache.py, nvrtc-api, bench-dropin, bench-dropmiss) and debs/
# (libuv1, libhiredis0.14 of Debian 12), which `sh scripts/gpu-dropin.sh
# pack DIR` makes here (after `make all build/bench/bench-dropmiss
# build/tests/dropin/bench-dropin build/tests/dropin/nvrtc-api`; with
# KJITD_OLD=PATH also that kjitd as kjitd-old, measured beside this one);
# there, as root:
#   sh DIR/gpu-dropin.sh [OUTDIR]
# kjitd starts with --prestart nvrtc, as `kjit run` starts one.
#
# Issue 31, "NVRTC's own cache": NVRTC 12.9+ keeps its bitcode->PTX and
# PTX->cubin results in the CUDA driver's compute cache (~/.nv/ComputeCache),
# keyed by the bitcode.  So a kernel differing from an earlier one by a
# comment, or compiled again in a later process, is a cache hit for NVRTC,
# and only new code (or a new working directory, which the bitcode names)
# is a real compile.  kjitd's worker compiles with --no-cache (it never
# loads the driver).  The sections:
#  1. NVRTC's cache in-process: tests/nvrtc_cache.py (a hit, a miss and
#     --no-cache give the same bytes) and bench-dropmiss with
#     --enable-cache-trace (which compiles hit, which miss);
#  2. a C program's new kernels (bench-dropmiss, new code, the driver
#     initialised first as any program that launches does, -c): without
#     kjit with NVRTC's cache cold, with it warm (the same kernels again),
#     with CUDA_CACHE_DISABLE=1, with --no-cache; through the drop-in with
#     kjitd's worker warm, for a kernel new to both and for one already in
#     NVRTC's cache (the transition cost); and a process's first call;
#  3. the Python programs (PyTorch jiterator with its kernel cache off,
#     tests/cupy_like.py), each kernel new code: without kjit, the same
#     kernel again (NVRTC's cache hit), CUDA_CACHE_DISABLE=1; `kjit run` with
#     a kernel new to both, one in NVRTC's cache only, then a kjit hit;
#  4. kjitd-old (if packed) beside this kjitd: does any worker load libcuda;
#  5. nvrtc_inc.py and nvrtc-api against the real NVRTC, bench-dropin.
# The pack also holds bench/dropmiss-pairs.sh (`sh DIR/dropmiss-pairs.sh`):
# the worker's compile against the program's own, pair by pair in one
# process, which the two-speed CPU of the H200's VM cannot blur.
# Prints "ok NAME" / "not ok NAME: why" lines and `summary` lines (medians,
# min-max) and writes everything to OUTDIR (default $OUT or /tmp).  ROUNDS
# (default 4) and PYROUNDS (3): rounds of sections 2 and 3.
set -u
if [ "${1:-}" = pack ]; then # here: DIR gets what the GPU machine needs
	P=$2 B=${BUILD:-build}
	mkdir -p "$P/tests" "$P/debs" "$P/dropin" || exit 1
	cp "$B/kjit" "$B/kjitd" "$0" "$P/" && cp -r "$B/dropin/nvrtc" "$P/dropin/" && cp -r kernels_src python "$P/" &&
		cp tests/dropin/jiterator.py tests/dropin/nvrtc_inc.py tests/dropin/cupy_like.py tests/dropin/nvrtc_cache.py \
			"$B/tests/dropin/nvrtc-api" "$B/tests/dropin/bench-dropin" "$B/bench/bench-dropmiss" "$P/tests/" || exit 1
	cp bench/dropmiss-pairs.sh "$P/" || exit 1
	[ -z "${KJITD_OLD:-}" ] || cp "$KJITD_OLD" "$P/kjitd-old" || exit 1
	{ git rev-parse --short HEAD; git diff --quiet HEAD || echo +uncommitted; } | tr -d '\n' >"$P/commit"
	(cd "$P/debs" && apt-get download libuv1 libhiredis0.14 >/dev/null) || exit 1
	exit 0
fi
D=$(cd "$(dirname "$0")" && pwd)
O=${1:-${OUT:-/tmp}}
W=$(mktemp -d /tmp/kjit-gpu-dropin.XXXXXX)
mkdir -p "$O" || exit 1
FAILS=0
ok() { echo "ok $1"; }
not_ok() { echo "not ok $1: $2"; FAILS=$((FAILS + 1)); }

for f in "$D"/debs/*.deb; do dpkg -x "$f" "$W/libs" || exit 1; done
export LD_LIBRARY_PATH="$W/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KJIT_SOCKET="$W/sock/kjitd.sock" KJIT_CACHE_DIR="$W/cache" KJIT_DROPIN_STATS="$W/dropin.stats"
export KJIT_NO_AUTOSTART=1 USE_PYTORCH_KERNEL_CACHE=0 PYTHONDONTWRITEBYTECODE=1
unset CUDA_CACHE_DISABLE CUDA_CACHE_PATH
R="/usr/local/cuda/lib64:$LD_LIBRARY_PATH" K="$D/dropin/nvrtc:$LD_LIBRARY_PATH" B="$D/tests/bench-dropmiss"
TB=$(( ($$ % 900 + 100) * 100 )) # kernel tags, numbers (they are constants in the kernels): new on this machine
mkdir -p "$W/sock"
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__)'; echo "commit $(cat "$D/commit" 2>/dev/null)"
	date -u; ls -d ~/.nv/ComputeCache 2>/dev/null; } >"$O/gpu-dropin-machine.txt" 2>&1
cat "$O/gpu-dropin-machine.txt"
[ "$(id -u)" != 0 ] || getent passwd kjit-worker >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin kjit-worker
start_kjitd() { # binary, log: a kjitd as `kjit run` starts one, its nvrtc worker up
	"$1" --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --kernels-dir "$D/kernels_src" --log "$2" \
		--prestart nvrtc || return 1
	for _ in $(seq 100); do "$D/kjit" stats 2>/dev/null | grep -q '^workers nvrtc *alive 1' && break; sleep 0.1; done
	sleep 1
	WK=$(pgrep -n -f -- '--worker nvrtc') # the compiling one: the newest (PID 1 of the worker's namespace)
}
wticks() { awk '{print $14 + $15}' "/proc/$WK/stat" 2>/dev/null || echo 0; }
drivers() { # how many of the running nvrtc workers have libcuda mapped, of how many
	n=0 d=0
	for p in $(pgrep -f -- '--worker nvrtc'); do
		n=$((n + 1))
		grep -q libcuda "/proc/$p/maps" 2>/dev/null && d=$((d + 1))
	done
	echo "$d of $n"
}
start_kjitd "$D/kjitd" "$O/gpu-dropin-kjitd.log" || { not_ok "gpu-dropin: kjitd" "did not start"; exit 1; }

# ---- 1. NVRTC's own cache, in-process ----
LD_LIBRARY_PATH="$R" python3 "$D/tests/nvrtc_cache.py" "$TB" >"$O/gpu-dropin-nvcache.txt" 2>&1
cat "$O/gpu-dropin-nvcache.txt"
grep -q 'same=True' "$O/gpu-dropin-nvcache.txt" &&
	ok "gpu-dropin: NVRTC's cache hit, miss and --no-cache give the same bytes (sm_90 cubin, compute_90 PTX)" ||
	not_ok "gpu-dropin: NVRTC's cache" "objects differ or a compile failed"
trc() { # label, bench-dropmiss arguments...: one traced process
	l=$1
	shift
	LD_LIBRARY_PATH="$R" "$B" "$@" | sed "s/^/$l /"
}
T1="-n 3 -- --enable-cache-trace"
{
	# shellcheck disable=SC2086
	{
		trc comment-salt -S -s "t$$" $T1
		trc comment-salt-process2 -S -s "t$$" $T1
		trc comment-salt-fresh-cwd -S -s "t$$" -j $T1
		trc code-salt-new -s "u$$" $T1
		trc code-salt-process2 -s "u$$" $T1
		trc code-salt-new-fresh-cwd -s "v$$" -j $T1
		LD_LIBRARY_PATH="$R" CUDA_CACHE_DISABLE=1 "$B" -s "w$$" $T1 | sed "s/^/code-salt-CUDA_CACHE_DISABLE=1 /"
		trc code-salt-no-cache -s "x$$" -n 3 -- --no-cache --enable-cache-trace
	}
} >"$O/gpu-dropin-trace.txt" 2>&1
sed 's/ create_ms.*total1_ms=[0-9.]*//; s/ lib=.*//; s/ cpus=.*cache=/ cache=/; s/ huge_kb=.*//' "$O/gpu-dropin-trace.txt"

# ---- 2. a C program's new kernels: without kjit (NVRTC's cache cold, warm, off) and through kjit ----
M="$O/gpu-dropin-miss.txt"
for r in $(seq "${ROUNDS:-4}"); do
	for a in sm_90 compute_90; do
		s="$r$a$$"
		{
			LD_LIBRARY_PATH="$R" "$B" -a $a -s "n$s" -c -n 4 | sed "s/^/real-new $a /"
			LD_LIBRARY_PATH="$R" "$B" -a $a -s "n$s" -c -n 4 | sed "s/^/real-nvcached $a /"
			LD_LIBRARY_PATH="$R" CUDA_CACHE_DISABLE=1 "$B" -a $a -s "d$s" -c -n 4 | sed "s/^/real-CUDA_CACHE_DISABLE=1 $a /"
			LD_LIBRARY_PATH="$R" "$B" -a $a -s "c$s" -c -n 4 -- --no-cache | sed "s/^/real-no-cache $a /"
			LD_LIBRARY_PATH="$R" "$B" -a $a -s "f$s" | sed "s/^/real-first-nocuinit $a /"
			LD_LIBRARY_PATH="$R" "$B" -a $a -s "g$s" -- --no-cache | sed "s/^/real-first-nocuinit-no-cache $a /"
			t0=$(wticks)
			LD_LIBRARY_PATH="$K" "$B" -a $a -s "k$s" -c -n 4 | sed "s/^/kjit-new $a /"
			echo "kjit-new $a worker cpu_ms=$((($(wticks) - t0) * 10)) compiles=6"
			t0=$(wticks)
			LD_LIBRARY_PATH="$K" "$B" -a $a -s "n$s" -c -n 4 | sed "s/^/kjit-nvcached $a /"
			echo "kjit-nvcached $a worker cpu_ms=$((($(wticks) - t0) * 10)) compiles=6"
			LD_LIBRARY_PATH="$K" "$B" -a $a -s "m$s" | sed "s/^/kjit-first-nocuinit $a /"
		} >>"$M" 2>&1
	done
done
echo "worker drivers: $(drivers) nvrtc workers have libcuda mapped (this kjitd)" | tee -a "$M"
summary() { # FILE: per label and arch, warm compiles (the second and the -n ones) wall and CPU, first calls
	awk 'function med(s,   v, n, i, j, t) { n = split(s, v, " "); for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			return n == 0 ? "-" : sprintf("%.1f (%.1f-%.1f, n=%d)", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n], n) }
		function f(k,   m) { return match($0, " " k "=[0-9.,]*") ? substr($0, RSTART + length(k) + 2, RLENGTH - length(k) - 2) : "" }
		$3 == "dropmiss" { k = $1 " " $2; keys[k] = 1; w[k] = w[k] " " f("compile2_ms"); c[k] = c[k] " " f("compile2_cpu_ms")
			t[k] = t[k] " " f("total1_ms") }
		$3 == "dropmiss-cuda" { cu[$1 " " $2] = cu[$1 " " $2] " " f("cuinit_ms") }
		$3 == "dropmiss-later" { k = $1 " " $2; x = f("ms"); gsub(",", " ", x); w[k] = w[k] " " x; x = f("cpu_ms"); gsub(",", " ", x); c[k] = c[k] " " x }
		$3 == "worker" { k = $1 " " $2; split($4, a, "="); split($5, b, "="); wk[k] = wk[k] " " a[2] / b[2] }
		END { for (k in keys) { printf "summary %s: new-kernel compile wall %s ms, CPU %s ms; first call (load+version+compile+get) %s ms", k, med(w[k]), med(c[k]), med(t[k])
			if (wk[k] != "") printf "; worker CPU per compile %s ms", med(wk[k]); if (cu[k] != "") printf "; cuInit first %s ms", med(cu[k]); print "" } }' "$1" | sort
}
summary "$M" | tee "$O/gpu-dropin-summary.txt"

# ---- 3. the Python programs, every kernel new code ----
export PYTHONPATH="$D/python${PYTHONPATH:+:$PYTHONPATH}"
compiles() { "$D/kjit" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"compiles":\([0-9]*\)$/\1/p'; }
hits() { "$D/kjit" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"hits":\([0-9]*\)$/\1/p'; }
py() { # label, program tag, [env...]: one process, its line into the log; fails on a wrong result
	l=$1 prog=$2 tag=$3
	shift 3
	case $prog in
	jiterator) set -- "$@" python3 "$D/tests/jiterator.py" "$tag" ;;
	*) set -- "$@" python3 "$D/tests/cupy_like.py" "$W/tree" "$tag" ;;
	esac
	case $l in kjit-*) set -- "$D/kjit" run --quiet -- "$@" ;; esac
	line=$(env "$@" 2>>"$O/gpu-dropin-stderr.txt" | grep "^$prog ")
	echo "$l $prog $line" >>"$O/gpu-dropin-py.txt"
	echo "$line" | grep -q 'ok=True'
}
mkdir -p "$W/tree" && : >"$O/gpu-dropin-py.txt"
for r in $(seq "${PYROUNDS:-3}"); do
	for prog in jiterator cupy_like; do
		a=$((TB + r * 10 + 1)) b=$((TB + r * 10 + 2)) c=$((TB + r * 10 + 3))
		py real-new $prog $a || not_ok "gpu-dropin: $prog without kjit" "wrong result"
		py real-nvcached $prog $a
		py real-CUDA_CACHE_DISABLE=1 $prog $b CUDA_CACHE_DISABLE=1
		c0=$(compiles)
		py kjit-new $prog $c || not_ok "gpu-dropin: $prog under kjit run, a new kernel" "wrong result"
		c1=$(compiles) h1=$(hits)
		py kjit-nvcached $prog $a || not_ok "gpu-dropin: $prog under kjit run, a kernel in NVRTC's cache" "wrong result"
		c2=$(compiles)
		py kjit-hit $prog $c || not_ok "gpu-dropin: $prog under kjit run, a kjit hit" "wrong result"
		[ "$c1" -gt "$c0" ] && [ "$c2" -gt "$c1" ] && [ "$(compiles)" = "$c2" ] && [ "$(hits)" -gt "$h1" ] &&
			ok "gpu-dropin: $prog round $r: new kernels compiled through kjitd, the repeat a kjit hit, results right" ||
			not_ok "gpu-dropin: $prog round $r served" "compiles $c0 -> $c1 -> $c2 -> $(compiles), hits $h1 -> $(hits)"
	done
done
awk '{ k = $1 " " $2; if (match($0, /first_call_ms=[0-9.]*/)) v[k] = v[k] " " substr($0, RSTART + 14, RLENGTH - 14); keys[k] = 1 }
	END { for (k in keys) { n = split(v[k], a, " "); for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		printf "summary python %s: first call %.1f ms (%.1f-%.1f, n=%d)\n", k, (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n], n } }' \
	"$O/gpu-dropin-py.txt" | sort | tee -a "$O/gpu-dropin-summary.txt"
echo "worker drivers: $(drivers) nvrtc workers have libcuda mapped (this kjitd, after the Python programs)"
[ "$(drivers | cut -d' ' -f1)" = 0 ] && ok "gpu-dropin: kjitd's nvrtc worker never loaded the CUDA driver" ||
	not_ok "gpu-dropin: the nvrtc worker" "has libcuda mapped"
"$D/kjit" stats >"$O/gpu-dropin-stats.txt" 2>&1

# ---- 5. every NVRTC answer, real vs drop-in, on this machine's NVRTC ----
LD_LIBRARY_PATH="$R" python3 "$D/tests/nvrtc_inc.py" "$W/inc" >"$W/inc-real.txt" 2>&1
"$D/kjit" run --quiet -- python3 "$D/tests/nvrtc_inc.py" "$W/inc" >"$W/inc1.txt" 2>&1
"$D/kjit" run --quiet -- python3 "$D/tests/nvrtc_inc.py" "$W/inc" >"$W/inc2.txt" 2>&1
cmp -s "$W/inc-real.txt" "$W/inc1.txt" && cmp -s "$W/inc-real.txt" "$W/inc2.txt" &&
	ok "gpu-dropin: nvrtc_inc.py (CuPy, Warp layouts) through kjit = the real NVRTC there" ||
	{ not_ok "gpu-dropin: nvrtc_inc.py" "differs from the real NVRTC"; diff "$W/inc-real.txt" "$W/inc1.txt" | head; }
LD_LIBRARY_PATH="$R" "$D/tests/nvrtc-api" >"$W/real.txt" 2>&1
LD_LIBRARY_PATH="$K" "$D/tests/nvrtc-api" >"$W/kj1.txt" 2>&1
LD_LIBRARY_PATH="$K" "$D/tests/nvrtc-api" >"$W/kj2.txt" 2>&1
cmp -s "$W/real.txt" "$W/kj1.txt" && cmp -s "$W/real.txt" "$W/kj2.txt" &&
	ok "gpu-dropin: nvrtc-api through kjit = the real NVRTC there, byte for byte" ||
	{ not_ok "gpu-dropin: nvrtc-api" "differs from the real NVRTC"; diff "$W/real.txt" "$W/kj1.txt" | head -20; }
LD_LIBRARY_PATH="$K" "$D/tests/bench-dropin" 2000 >"$O/gpu-dropin-bench.txt" 2>&1
grep -E '^(hits|compiles|dropin)' "$O/gpu-dropin-stats.txt"
"$D/kjit" stop >/dev/null 2>&1

# ---- 4. the kjitd before --no-cache, same measurement ----
if [ -x "$D/kjitd-old" ]; then
	sleep 1
	export KJIT_SOCKET="$W/sock/old.sock" KJIT_CACHE_DIR="$W/cache-old"
	start_kjitd "$D/kjitd-old" "$O/gpu-dropin-kjitd-old.log" || not_ok "gpu-dropin: kjitd-old" "did not start"
	echo "old worker drivers: $(drivers) nvrtc workers have libcuda mapped (kjitd-old, after its warm-up)" | tee -a "$M"
	for r in $(seq "${ROUNDS:-4}"); do
		for a in sm_90 compute_90; do
			t0=$(wticks)
			LD_LIBRARY_PATH="$K" "$B" -a $a -s "o$r$a$$" -c -n 4 | sed "s/^/kjit-old-new $a /" >>"$M" 2>&1
			echo "kjit-old-new $a worker cpu_ms=$((($(wticks) - t0) * 10)) compiles=6" >>"$M"
		done
	done
	echo "old worker drivers: $(drivers) nvrtc workers have libcuda mapped (kjitd-old, after compiles)" | tee -a "$M"
	summary "$M" | grep kjit-old | tee -a "$O/gpu-dropin-summary.txt"
	"$D/kjit" stop >/dev/null 2>&1
fi
echo "# gpu-dropin: $FAILS failed"
exit "$((FAILS > 0))"
