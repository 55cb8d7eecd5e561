#!/bin/bash
# issue35.sh: the 16 KB hit ratios of issue 35, R alternating rounds in one
# run (ratios within a round; bench/rounds.md, "Issue 35").
#
#   bash bench/issue35.sh uid [R]   per-user kjitd vs a --system kjitd (each
#                                   uid its own table; run as root), fast
#                                   path with and without the process memo,
#                                   and the --system socket path
#   bash bench/issue35.sh py [R]    kjit_get (bench-hitlat) vs kjit.Client.get
#                                   (bench/pyhit.py), same daemon, same request:
#                                   through the C extension kjit._hit (bytes,
#                                   then view=True) and through ctypes
#                                   (KJIT_PYTHON_EXT=0, a pure-Python install);
#                                   with PYBASE=DIR also DIR/bench/pyhit.py (a
#                                   `git archive BASE python bench` there: the
#                                   package before, on this build's libkjit)
#
# Uses $BUILD (default build) of this tree: make && make bench first.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
B="$TOP/${BUILD:-build}"
MODE=${1:-uid}
R=${2:-3}
T=$(mktemp -d /tmp/kjit-issue35.XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.3
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
mkdir -p "$T/k"
head -c 16384 /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c 16384 >"$T/k/blob16384.src"
echo "blob16384 hip blob16384.src main" >"$T/k/MANIFEST"
daemon() { # NAME [options]: a kjitd on $T/NAME.sock; its pid joins PIDS
	local n=$1 out
	shift
	out=$("$B/bench/bench-startd" "$T/$n.sock" 120 -- "$B/kjitd" --foreground --socket "$T/$n.sock" \
		--cache-dir "$T/c$n" --log "$T/$n.log" --hip-compiler test --kernels-dir "$T/k" "$@") || exit 1
	PIDS="$PIDS ${out#* }"
}
hit() { # SOCKET [env...] -- N W: p50 us of bench-hitlat
	local s=$1
	shift
	env KJIT_SOCKET="$s" "$@" | cut -d' ' -f1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
HL="$B/bench/bench-hitlat --kernel blob16384 --target gfx90a"
case $MODE in
uid)
	[ "$(id -u)" = 0 ] || { echo "issue35.sh uid: run as root (a --system kjitd)" >&2; exit 2; }
	daemon u
	daemon s --system
	echo "round  per-user  system  ratio | memo off: per-user  system  ratio | system socket path"
	for i in $(seq "$R"); do
		u=$(hit "$T/u.sock" $HL -n 3000 -w 100)
		s=$(hit "$T/s.sock" $HL -n 3000 -w 100)
		mu=$(hit "$T/u.sock" KJIT_PROCESS_MEMO=0 $HL -n 3000 -w 100)
		ms=$(hit "$T/s.sock" KJIT_PROCESS_MEMO=0 $HL -n 3000 -w 100)
		so=$(hit "$T/s.sock" KJIT_PROCESS_MEMO=0 KJIT_FAST_PATH=0 $HL -n 1000 -w 50)
		echo "$i      $u     $s    $(ratio "$s" "$u")x | $mu     $ms    $(ratio "$ms" "$mu")x | $so"
	done
	grep -h "hit table on" "$T/s.log" | head -n 1
	;;
py)
	daemon p
	py() { # TREE [pyhit options]: p50 us of TREE/bench/pyhit.py (its own python/ package)
		local tree=$1
		shift
		KJIT_SOCKET="$T/p.sock" KJIT_LIBRARY="$B/libkjit.so" \
			python3 "$tree/bench/pyhit.py" --kernel blob16384 --target gfx90a -n 3000 -w 100 "$@" 2>/dev/null |
			cut -d' ' -f1
	}
	KJIT_PYTHON_EXT=1 py "$TOP" -n 1 -w 1 >/dev/null || { echo "issue35.sh py: the C extension did not load (make)" >&2; exit 1; }
	echo "round  C kjit_get | Python get: C ext  ratio | ext view  ratio | ctypes  ratio${PYBASE:+ | base  ratio}"
	for i in $(seq "$R"); do
		c=$(hit "$T/p.sock" $HL -n 3000 -w 100)
		e=$(KJIT_PYTHON_EXT=1 py "$TOP")
		v=$(KJIT_PYTHON_EXT=1 py "$TOP" --view)
		t=$(KJIT_PYTHON_EXT=0 py "$TOP")
		b=""
		[ -n "${PYBASE:-}" ] && b=$(py "$PYBASE") && b=" | $b  $(ratio "$b" "$c")x"
		echo "$i      $c       | $e  $(ratio "$e" "$c")x | $v  $(ratio "$v" "$c")x | $t  $(ratio "$t" "$c")x$b"
	done
	;;
*)
	echo "usage: bash bench/issue35.sh uid|py [ROUNDS]" >&2
	exit 2
	;;
esac
