# lib.sh: helpers for end-to-end tests, sourced by tests/e2e/*.sh.
# Each test file starts its own kjitd on a temporary socket and cache
# directory, prints "ok NAME" / "not ok NAME: why" per check, and cleans up
# (daemon stopped, temporary directory removed) however it exits.
set -u
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
KJIT="$TOP/$BUILD/kjit"
KJITD="$TOP/$BUILD/kjitd"
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-e2e.XXXXXX")
export KJIT_SOCKET="$T/sock/kjitd.sock"
export KJIT_CACHE_DIR="$T/cache"
export KJIT_NO_AUTOSTART=1
export KJIT_KJITD="$KJITD"
export KJIT_DROPIN_STATS="$T/dropin.stats" # the drop-in's counters: this test's own, not the user's
unset KJIT_HIP_ARCH KJIT_CUDA_ARCH KJIT_VULKAN_ENV HSA_OVERRIDE_GFX_VERSION CANDLE_ROCM_ARCH HSA_XNACK
DAEMON_PID=""
FAILS=0

ok() { echo "ok $1"; }
not_ok() { echo "not ok $1: $2"; FAILS=$((FAILS + 1)); }
check() { # name, condition-command...
	name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" "$*"; fi
}

# start_daemon [kjitd options...]: starts kjitd in the foreground (in the
# background of this shell) and waits until it answers.
start_daemon() {
	mkdir -p "$T/sock"
	"$KJITD" --foreground --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --log "$T/kjitd.log" "$@" &
	DAEMON_PID=$!
	i=0
	while [ $i -lt 300 ]; do
		"$KJIT" ping >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	echo "kjitd did not start; log:" >&2
	cat "$T/kjitd.log" >&2
	return 1
}

stop_daemon() {
	[ -n "$DAEMON_PID" ] || return 0
	"$KJIT" stop >/dev/null 2>&1 || kill "$DAEMON_PID" 2>/dev/null
	i=0
	while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -9 "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=""
}

cleanup() {
	stop_daemon
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

# stat_value NAME: one counter from `kjit stats --json`.
stat_value() {
	"$KJIT" stats --json | tr ',{}' '\n\n\n' | sed -n "s/^\"$1\":\([0-9]*\)$/\1/p" | head -n 1
}

# elf_u16 FILE OFFSET / elf_u32 FILE OFFSET: little-endian fields.
elf_u16() { od -An -tu2 -j "$2" -N2 "$1" | tr -d ' '; }
elf_u32() { od -An -tx4 -j "$2" -N4 "$1" | tr -d ' '; }

# Compiler flags for a test program linked with $BUILD/libkjit.a: the
# sanitizers' when that library was built with them (make test-asan).
san_flags() {
	if nm "$TOP/$BUILD/libkjit.a" 2>/dev/null | grep -q '__asan_init'; then
		echo "-fsanitize=address,undefined -fno-omit-frame-pointer"
	fi
}

# san_python_env: the VAR=VALUE words a Python process (or any program
# not built with the sanitizers) needs to load a sanitized libkjit: the
# sanitizers' runtimes first (LD_PRELOAD, colon-separated), leaks not
# reported (the interpreter's own); nothing for a plain build.
san_python_env() {
	if [ -n "$(san_flags)" ]; then
		echo "LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so):$(${CC:-cc} -print-file-name=libubsan.so)" \
			"ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	fi
}

finish() {
	[ "$FAILS" -eq 0 ]
}
