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

# cleanup: the daemon stopped, the temporary users and group removed (see
# make_users), the script's own cleanup_more (a function it may redefine)
# run, $T removed (kept with KEEP=1).
TMP_USERS="" TMP_GROUP=""
cleanup_more() { :; }
cleanup() {
	stop_daemon
	for u in $TMP_USERS; do userdel "$u" 2>/dev/null; done
	[ -z "$TMP_GROUP" ] || groupdel "$TMP_GROUP" 2>/dev/null
	cleanup_more
	[ -n "${KEEP:-}" ] && echo "# kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT INT TERM

# users_or_skip NAME: the script ends here, skipped loudly, unless it runs as
# root with useradd and setpriv (a second user is a real account, as an
# attacker's would be).
users_or_skip() {
	if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "# skip $1: needs root, useradd and setpriv (temporary users)"
		exit 0
	fi
}

# make_users GROUP USER...: a new group and users without a home, primary
# group nogroup, each a member of GROUP; GID is the group's id.  All are
# removed on exit.  Non-zero (after a "not ok users" line) if one cannot be
# made.
make_users() {
	TMP_GROUP=$1
	shift
	groupadd "$TMP_GROUP" || { TMP_GROUP=""; not_ok users "cannot create group"; return 1; }
	for u in "$@"; do
		useradd -M -N -g nogroup -G "$TMP_GROUP" -s /bin/sh "$u" || { not_ok users "cannot create $u"; return 1; }
		TMP_USERS="$TMP_USERS $u"
	done
	GID=$(getent group "$TMP_GROUP" | cut -d: -f3)
}

# as_user USER COMMAND...: COMMAND as USER with its groups, this test's
# socket and no autostart.
as_user() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups env KJIT_SOCKET="$KJIT_SOCKET" \
		KJIT_NO_AUTOSTART=1 HOME=/ "$@"
}

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

# build_helper NAME OUT: tests/e2e/NAME.c, a test's helper program linked
# with $BUILD/libkjit.a (and the sanitizers when it has them), into OUT.
# Non-zero, after a "not ok build NAME" line and the compiler's errors, if
# it does not build.
build_helper() {
	cc -std=c11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE $(san_flags) -I"$TOP/include" \
		-I"$TOP/client" -I"$TOP/common" "$TOP/tests/e2e/$1.c" "$TOP/$BUILD/libkjit.a" -lcrypto -pthread \
		-o "$2" 2>"$T/cc.err" || { cat "$T/cc.err" >&2; not_ok "build $1" "cc failed"; return 1; }
}

finish() {
	[ "$FAILS" -eq 0 ]
}
