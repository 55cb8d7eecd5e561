#!/bin/sh
# Runs every test of `make test` and ends with the line "N passed, N failed".
# Unit tests are build/tests/test-* (one binary per module, each test in its
# own child process); end-to-end tests are tests/e2e/*.sh, which start the
# real kjitd on a temporary socket and cache directory.  Every test prints
# "ok NAME" or "not ok NAME: why"; this script counts them.
set -u
BUILD=${BUILD:-build}
export BUILD
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
log=$(mktemp -d "${TMPDIR:-/tmp}/kjit-test.XXXXXX")
pass=0
fail=0
failed_names=""

run_one() { # name, command...
	name=$1
	shift
	start=$(date +%s)
	"$@" >"$log/out" 2>"$log/err"
	rc=$?
	p=$(grep -c '^ok ' "$log/out")
	f=$(grep -c '^not ok ' "$log/out")
	grep -E '^(ok|not ok|# skip) ' "$log/out" | sed "s|^|[$name] |"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "[$name] not ok $name: exited $rc with no failed test named"
		f=1
	fi
	if [ "$f" -gt 0 ]; then
		echo "---- $name stderr (last 30 lines) ----"
		tail -n 30 "$log/err"
		echo "----"
		failed_names="$failed_names $name"
	fi
	echo "# $name: $p passed, $f failed ($(($(date +%s) - start)) s)"
	pass=$((pass + p))
	fail=$((fail + f))
}

for t in "$BUILD"/tests/test-*; do
	[ -x "$t" ] || continue
	run_one "$(basename "$t")" "$t"
done
for t in tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	[ "$(basename "$t")" = lib.sh ] && continue
	run_one "$(basename "$t" .sh)" sh "$t"
done
for t in tests/kernels/*.sh; do
	[ -f "$t" ] || continue
	run_one "$(basename "$t" .sh)" sh "$t"
done
rm -rf "$log"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
