#!/bin/sh
# run-short.sh: the short fuzz run of `make test` (through
# tests/e2e/fuzz-short.sh).  Builds the harnesses if needed (`make
# fuzz-build`), runs each for FUZZ_SHORT_SECONDS (6) on its seeds plus the
# corpus of earlier `make fuzz` runs (read only), and prints
# "ok fuzz-NAME (N execs)" or "not ok fuzz-NAME: what libFuzzer reported".
set -u
FUZZ_DIR=${FUZZ_DIR:-build/fuzz}
FUZZ_SHORT_SECONDS=${FUZZ_SHORT_SECONDS:-6}
NAMES="frame get include target manifest bundle hittab"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
if ! command -v clang-14 >/dev/null 2>&1; then
	echo "# fuzz: clang-14 not installed, short fuzz run skipped"
	exit 0
fi
# Not the caller's make flags (BUILD, SAN, a jobserver): the fuzz build is its own, on
# both cores (the suite runs one test at a time): 33 s where one core took 73.
unset MAKEFLAGS MFLAGS MAKELEVEL
if ! make -s -j2 fuzz-build >"${TMPDIR:-/tmp}/kjit-fuzz-build.$$" 2>&1; then
	tail -n 30 "${TMPDIR:-/tmp}/kjit-fuzz-build.$$" >&2
	rm -f "${TMPDIR:-/tmp}/kjit-fuzz-build.$$"
	for n in $NAMES; do
		echo "not ok fuzz-$n: the fuzz harnesses did not build (make fuzz-build)"
	done
	exit 1
fi
rm -f "${TMPDIR:-/tmp}/kjit-fuzz-build.$$"
work=$(mktemp -d "${TMPDIR:-/tmp}/kjit-fuzz-short.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
fails=0
for n in $NAMES; do
	mkdir -p "$work/$n"
	cp "$FUZZ_DIR/seeds/$n"/* "$work/$n/"
	extra=""
	[ -d "$FUZZ_DIR/corpus/$n" ] && extra="$FUZZ_DIR/corpus/$n"
	"$FUZZ_DIR/fuzz-$n" -max_total_time="$FUZZ_SHORT_SECONDS" -print_final_stats=1 -timeout=20 \
		-rss_limit_mb=4096 -artifact_prefix="$work/" "$work/$n" $extra >"$work/$n.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$work/$n.log" | tail -n 1)
	if [ "$rc" -eq 0 ] && [ -n "$execs" ]; then
		echo "ok fuzz-$n ($execs execs)"
	else
		fails=$((fails + 1))
		why=$(grep -m1 -E '^SUMMARY|invariant broken|runtime error' "$work/$n.log")
		echo "not ok fuzz-$n: ${why:-exit $rc}"
		# The log and the input (base64) on stderr, for tests/run.sh to show.
		tail -n 40 "$work/$n.log" >&2
		for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
			[ -f "$a" ] || continue
			echo "input $(basename "$a") (base64): $(base64 -w0 "$a")" >&2
			mkdir -p "$FUZZ_DIR/artifacts" && cp "$a" "$FUZZ_DIR/artifacts/short-$n-$(basename "$a")"
		done
		rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
	fi
done
[ "$fails" -eq 0 ]
