#!/bin/sh
# run-long.sh NAME...: `make fuzz`.  Runs build/fuzz/fuzz-NAME for
# FUZZ_SECONDS each, FUZZ_JOBS at a time, on build/fuzz/corpus/NAME (the
# seeds copied in, plus what earlier runs found), then prints per harness
# the executions libFuzzer reports (stat::number_of_executed_units, from
# -print_final_stats=1) and the total.  Exit 1 if any harness crashed,
# leaked, timed out or hit undefined behaviour; its log and the input are
# kept under build/fuzz/logs and build/fuzz/artifacts.
set -u
FUZZ_DIR=${FUZZ_DIR:-build/fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-300}
FUZZ_JOBS=${FUZZ_JOBS:-2}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
mkdir -p "$FUZZ_DIR/logs" "$FUZZ_DIR/artifacts"
for n in "$@"; do
	mkdir -p "$FUZZ_DIR/corpus/$n"
	cp -n "$FUZZ_DIR/seeds/$n"/* "$FUZZ_DIR/corpus/$n/" 2>/dev/null
	rm -f "$FUZZ_DIR/logs/$n.log"
done
echo "fuzz: $# harnesses, $FUZZ_SECONDS s each, $FUZZ_JOBS at a time"
# One harness: libFuzzer's own limits, then its exit status in the log.
printf '%s\n' "$@" | xargs -P "$FUZZ_JOBS" -I NAME sh -c '
	d=$1; s=$2; n=NAME
	"$d/fuzz-$n" -max_total_time="$s" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 \
		-artifact_prefix="$d/artifacts/$n-" "$d/corpus/$n" >"$d/logs/$n.log" 2>&1
	echo "exit status $?" >>"$d/logs/$n.log"
' sh "$FUZZ_DIR" "$FUZZ_SECONDS"
total=0
bad=0
for n in "$@"; do
	log="$FUZZ_DIR/logs/$n.log"
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	execs=${execs:-0}
	corpus=$(ls "$FUZZ_DIR/corpus/$n" | wc -l)
	total=$((total + execs))
	if grep -q '^exit status 0$' "$log"; then
		echo "fuzz-$n: $execs executions, corpus $corpus inputs, no crash, leak or UB"
	else
		bad=$((bad + 1))
		why=$(grep -m1 -E '^SUMMARY|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error|invariant broken' "$log")
		echo "fuzz-$n: FAILED after $execs executions: $why (log $log, inputs $FUZZ_DIR/artifacts/$n-*)"
	fi
done
echo "fuzz: $total executions in all, $bad harnesses failed"
[ "$bad" -eq 0 ]
