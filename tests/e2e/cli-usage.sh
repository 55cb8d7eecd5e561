#!/bin/sh
# cli-usage.sh: the exit codes of the kjit command that need no daemon:
# 2 for usage errors (with exactly one line on stderr), 3 when kjitd is
# unreachable and autostart is off.  Prints "ok NAME" / "not ok NAME: why"
# per check, as tests/test.h does, and exits 1 if any failed.
#   BUILD=build sh tests/e2e/cli-usage.sh
set -u
KJIT="${BUILD:-build}/kjit"
T=$(mktemp -d /tmp/kjit-cli-usage.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

# expect NAME WANT_RC CMD...: runs CMD, checks its exit code and that it
# printed exactly one line starting "kjit: " on stderr.
expect() {
	name=$1 want=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	lines=$(wc -l <"$T/err")
	if [ "$rc" != "$want" ]; then
		echo "not ok $name: exit $rc, expected $want ($(head -c 200 "$T/err"))"
		fail=$((fail + 1))
	elif [ "$lines" != 1 ] || ! grep -q '^kjit: .*; ' "$T/err"; then
		echo "not ok $name: expected one line 'kjit: ...; ...' on stderr, got: $(head -c 300 "$T/err")"
		fail=$((fail + 1))
	else
		echo "ok $name"
		pass=$((pass + 1))
	fi
}

export KJIT_NO_AUTOSTART=1
export KJIT_SOCKET="$T/none/kjitd.sock"
printf '__global__ void k() {}\n' >"$T/k.hip"

expect usage-no-command 2 "$KJIT"
expect usage-unknown-command 2 "$KJIT" frobnicate
expect usage-get-unknown-option 2 "$KJIT" get --kernel gelu --backend hip --bogus
expect usage-get-missing-arg 2 "$KJIT" get --kernel gelu --backend
expect usage-get-bad-backend 2 "$KJIT" get --kernel gelu --backend opencl
expect usage-get-no-backend 2 "$KJIT" get --kernel gelu
expect usage-get-both 2 "$KJIT" get --kernel gelu --source "$T/k.hip" --backend hip
expect usage-get-neither 2 "$KJIT" get --backend hip
expect usage-get-extra-arg 2 "$KJIT" get --kernel gelu --backend hip extra
expect usage-warm-bad-j 2 "$KJIT" warm -j 0
expect usage-warm-bad-backend 2 "$KJIT" warm --backend metal
expect usage-warm-unknown-target 2 "$KJIT" warm --target foo
expect usage-gc-bad-size 2 "$KJIT" gc --max-size 5Q
expect usage-show-no-key 2 "$KJIT" show
expect usage-export-no-output 2 "$KJIT" export
expect usage-stats-unknown 2 "$KJIT" stats --frob
expect usage-ls-two-targets 2 "$KJIT" ls --target gfx90a --target gfx1030

expect down-ping 3 "$KJIT" ping
expect down-get 3 "$KJIT" get --source "$T/k.hip" --backend hip --target gfx90a
expect down-stats 3 "$KJIT" stats
expect down-stop 3 "$KJIT" stop
expect down-warm 3 "$KJIT" warm --backend hip
expect down-verify 3 "$KJIT" verify
# The system socket is never autostarted (skipped where the service runs).
[ -e /run/kjit/kjitd.sock ] ||
	expect down-system-socket 3 env KJIT_NO_AUTOSTART= KJIT_SOCKET=/run/kjit/kjitd.sock "$KJIT" ping

expect missing-source-file 1 "$KJIT" get --source "$T/nope.hip" --backend hip

# Issue 30: --backend from the file's suffix or the target (so these reach
# the missing daemon), target-like flags, and a bad option named whole.
expect down-get-backend-from-suffix 3 "$KJIT" get --source "$T/k.hip"
expect down-get-backend-from-arch 3 "$KJIT" get --source "$T/k.hip" --offload-arch=gfx90a
expect down-get-nvcc-habits 3 "$KJIT" get --source "$T/k.hip" -arch=sm_90 -lineinfo --use_fast_math \
	-Xcompiler -fPIC --expt-relaxed-constexpr
expect usage-get-arch-disagrees 2 "$KJIT" get --source "$T/k.hip" -arch=sm_90 --target sm_80
expect usage-get-gencode 2 "$KJIT" get --source "$T/k.hip" -gencode arch=compute_90,code=sm_90
# named_whole NAME ARG: the one-line error names ARG, not its first letter
named_whole() {
	"$KJIT" get --source "$T/k.hip" --backend hip "$2" >/dev/null 2>"$T/err"
	if grep -q -e "unknown option $2;" "$T/err"; then
		echo "ok $1"
		pass=$((pass + 1))
	else
		echo "not ok $1: $(head -c 200 "$T/err")"
		fail=$((fail + 1))
	fi
}
named_whole usage-get-whole-option -lfoo
named_whole usage-get-whole-option-last -qz

# Help is not an error.
if "$KJIT" --help >/dev/null 2>&1 && "$KJIT" get --help >/dev/null 2>&1; then
	echo "ok help"
	pass=$((pass + 1))
else
	echo "not ok help: --help did not exit 0"
	fail=$((fail + 1))
fi

echo "# cli-usage.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
