#!/bin/sh
# `make stress`: the long forms, counted like tests/run.sh counts `make test`.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
pass=0
fail=0
# harden-daemon.sh at its stress size: 15,000 silent connections of the
# owner, 20,000 of another user, 600 sources of 4 MiB (docs/reliability.md).
export HARDEN_SILENT=${HARDEN_SILENT:-15000} HARDEN_SILENT_USER=${HARDEN_SILENT_USER:-20000} HARDEN_FLOOD=${HARDEN_FLOOD:-600}
for t in tests/stress/run-stress.sh tests/e2e/crash.sh tests/e2e/badinput.sh tests/e2e/harden-daemon.sh; do
	name=$(basename "$t" .sh)
	start=$(date +%s)
	out=$(mktemp)
	sh "$t" >"$out" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$out")
	f=$(grep -c '^not ok ' "$out")
	grep -E '^(ok|not ok|#|stress:) ' "$out" | sed "s|^|[$name] |"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "[$name] not ok $name: exited $rc with no failed test named"
		tail -n 30 "$out"
		f=1
	fi
	echo "# $name: $p passed, $f failed ($(($(date +%s) - start)) s)"
	pass=$((pass + p))
	fail=$((fail + f))
	rm -f "$out"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
