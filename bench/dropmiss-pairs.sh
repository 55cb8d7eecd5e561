#!/bin/sh
# dropmiss-pairs.sh: issue 31, "NVRTC's own cache": is kjitd's nvrtc worker's
# compile of a kernel new to everyone slower than the same compile in the
# program's own process?  On the H200 machine (and on the shared development
# VM) a process's CPU time per compile takes one of two levels for seconds at
# a time (sm_90 44-48 or 65-74 ms there, compute_90 23-25 or 36-40 ms),
# whoever compiles, so separate processes compare badly.  Here one process
# (bench-dropmiss -P) compiles new kernels in turn with the real NVRTC
# loaded in-process and through kjit's drop-in (kjitd's worker warm), each
# pair tens of milliseconds apart, and reports the per-pair ratios: with the
# real NVRTC given --no-cache (the worker's own options: the same work) and
# with NVRTC's cache on (a new kernel: a miss, what a program pays).  The
# driver is initialised first (-c), as in any program that launches.  Each
# of ROUNDS rounds (default 3), per arch, unpinned and with the program and
# every worker process pinned to one CPU (taskset; CPU $PIN, default 3).
# Run from a folder made by `sh scripts/gpu-dropin.sh pack DIR` (which
# copies this script), as root on the GPU machine:
#   sh DIR/dropmiss-pairs.sh [OUTFILE]
# Prints `pairs` summary lines: the median of the rounds' median ratios
# (kjit / real), and the medians of the compile times.
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=${1:-/tmp/dropmiss-pairs.txt}
W=$(mktemp -d /tmp/kjit-pairs.XXXXXX)
for f in "$D"/debs/*.deb; do dpkg -x "$f" "$W/libs" || exit 1; done
export LD_LIBRARY_PATH="$W/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KJIT_SOCKET="$W/kjitd.sock" KJIT_CACHE_DIR="$W/cache" KJIT_DROPIN_STATS="$W/dropin.stats" KJIT_NO_AUTOSTART=1
unset CUDA_CACHE_DISABLE CUDA_CACHE_PATH
R="/usr/local/cuda/lib64:$LD_LIBRARY_PATH" B="$D/tests/bench-dropmiss"
getent passwd kjit-worker >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin kjit-worker
"$D/kjitd" --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --log "$W/kjitd.log" --prestart nvrtc || exit 1
for _ in $(seq 100); do "$D/kjit" stats 2>/dev/null | grep -q '^workers nvrtc *alive 1' && break; sleep 0.1; done
sleep 1
: >"$O"
P="/usr/local/cuda/lib64/libnvrtc.so.13,$D/dropin/nvrtc/libnvrtc.so.13"
for r in $(seq "${ROUNDS:-3}"); do
	for pin in "" "${PIN:-3}"; do
		tk=""
		if [ -n "$pin" ]; then
			for p in $(pgrep -f -- '--worker nvrtc'); do taskset -pc "$pin" "$p" >/dev/null; done
			tk="taskset -c $pin"
		else
			for p in $(pgrep -f -- '--worker nvrtc'); do taskset -pc "0-$(($(nproc) - 1))" "$p" >/dev/null; done
		fi
		for a in sm_90 compute_90; do
			l="${pin:+pinned-}$a"
			# shellcheck disable=SC2086 # tk: the taskset words or nothing
			{
				LD_LIBRARY_PATH="$R" $tk "$B" -a $a -s "x$r$pin$a$$" -c -n 10 -P "$P" -R --no-cache |
					grep pairs | sed "s/^/no-cache $l /"
				LD_LIBRARY_PATH="$R" $tk "$B" -a $a -s "y$r$pin$a$$" -c -n 10 -P "$P" | grep pairs | sed "s/^/cache-on $l /"
			} >>"$O" 2>&1
		done
	done
done
"$D/kjit" stop >/dev/null 2>&1
cat "$O"
awk 'function med(s,   v, n, i, j, t) { n = split(s, v, " "); for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return n == 0 ? "-" : sprintf("%.2f (%.2f-%.2f, n=%d)", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n], n) }
	function f(k) { return match($0, " " k "=[0-9.,]*") ? substr($0, RSTART + length(k) + 2, RLENGTH - length(k) - 2) : "" }
	$3 == "dropmiss-pairs" { k = $1 " " $2; keys[k] = 1; r[k] = r[k] " " f("ratio_median"); x = f("real_ms"); gsub(",", " ", x); re[k] = re[k] " " x
		x = f("kjit_ms"); gsub(",", " ", x); kj[k] = kj[k] " " x }
	END { for (k in keys) printf "pairs %s: kjit/real per-pair ratio, rounds'"'"' medians %s; compile real %s ms, through kjit %s ms\n", k, med(r[k]), med(re[k]), med(kj[k]) }' "$O" | sort
sleep 1
rm -rf "$W"
