#!/bin/sh
# systemd.sh: kjitd under systemd, as far as a machine without systemd as
# PID 1 can show it.
#   1. units: `systemd-analyze verify` on the system and user units (PREFIX
#      substituted as `make install` does, pointing at the built kjitd), with
#      a broken copy as a control that the check can fail; the offline
#      security score; sysusers.d creating the group; the socket path of
#      each .socket matching its service's --socket.
#   2. socket activation: systemd-socket-activate holds the listening socket
#      and hands it to kjitd (LISTEN_FDS) on the first connection; ping, a
#      real hiprtc compile and a hit go through it; `kjit stop` ends kjitd
#      and leaves the socket, which belongs to systemd, in place.
#   3. readiness: with NOTIFY_SOCKET set kjitd stays in the foreground and
#      sends READY=1 from its main process once it serves, and never when
#      it fails to start.
# Units are verified offline, never started: starting them needs a running
# systemd, which this test does not assume (a line starting "# NOTE" says so).
. "$(dirname "$0")/lib.sh"

SRC="$TOP/tests/e2e/data/scale.hip"
PREFIX_DIR="$T/prefix"
mkdir -p "$PREFIX_DIR/bin" "$T/units/system" "$T/units/user" "$T/xdg"
ln -s "$KJITD" "$PREFIX_DIR/bin/kjitd"

# wait_for SECONDS CMD...: polls CMD every 50 ms.
wait_for() {
	n=$(($1 * 20))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}

# wait_exit PID SECONDS: waits for our child PID; its status in $WAIT_RC
# (255 if it had to be killed).
wait_exit() {
	wait_for "$2" sh -c "! kill -0 $1 2>/dev/null"
	if kill -0 "$1" 2>/dev/null; then
		kill -9 "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		WAIT_RC=255
		return 1
	fi
	wait "$1"
	WAIT_RC=$?
	return 0
}

# ---- 1. the units ----------------------------------------------------------

if [ "$(cat /proc/1/comm 2>/dev/null)" != systemd ]; then
	echo "# NOTE: systemd is not PID 1 here ($(cat /proc/1/comm 2>/dev/null)): the units are"
	echo "# NOTE: verified offline only; starting them through systemctl is not tested."
fi

for f in kjitd.socket kjitd.service; do
	sed "s|@PREFIX@|$PREFIX_DIR|g" "$TOP/systemd/$f" >"$T/units/system/$f"
	sed "s|@PREFIX@|$PREFIX_DIR|g" "$TOP/systemd/user/$f" >"$T/units/user/$f"
done
check "system units: @PREFIX@ substituted" sh -c "! grep -q @PREFIX@ '$T/units/system/'*"

# verify_units NAME [--user] FILE...: exit status 0 and not one line about
# our units (systemd-analyze only warns, exit 0, on unknown keys and bad
# values, so the lines matter as much as the status).
verify_units() {
	name=$1
	shift
	XDG_RUNTIME_DIR="$T/xdg" systemd-analyze "$@" >"$T/verify.out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		not_ok "$name" "systemd-analyze exited $rc: $(tr '\n' ' ' <"$T/verify.out" | head -c 600)"
	elif grep -q 'kjitd\.' "$T/verify.out"; then
		not_ok "$name" "$(grep 'kjitd\.' "$T/verify.out" | tr '\n' ' ' | head -c 600)"
	else
		ok "$name"
	fi
}

if command -v systemd-analyze >/dev/null 2>&1; then
	S="$T/units/system"
	U="$T/units/user"
	verify_units "systemd-analyze verify: system kjitd.socket + kjitd.service" \
		verify --man=no "$S/kjitd.socket" "$S/kjitd.service"
	verify_units "systemd-analyze --user verify: user kjitd.socket + kjitd.service" \
		--user verify --man=no "$U/kjitd.socket" "$U/kjitd.service"

	# Controls: the same check must fail on a unit with a missing binary,
	# and on one with an unknown key.
	mkdir -p "$T/bad1" "$T/bad2"
	cp "$S/kjitd.socket" "$T/bad1/"
	sed "s|^ExecStart=$PREFIX_DIR|ExecStart=$T/nonexistent|" "$S/kjitd.service" >"$T/bad1/kjitd.service"
	cp "$S/kjitd.socket" "$T/bad2/"
	sed 's|^Type=notify|Type=notify\nFrobnicate=yes|' "$S/kjitd.service" >"$T/bad2/kjitd.service"
	XDG_RUNTIME_DIR="$T/xdg" systemd-analyze verify --man=no "$T/bad1/kjitd.socket" "$T/bad1/kjitd.service" >"$T/bad1.out" 2>&1
	check "control: verify fails on a unit whose ExecStart binary is missing" [ $? -ne 0 ]
	XDG_RUNTIME_DIR="$T/xdg" systemd-analyze verify --man=no "$T/bad2/kjitd.socket" "$T/bad2/kjitd.service" >"$T/bad2.out" 2>&1
	check "control: verify reports an unknown key in our unit" grep -q "kjitd.service.*Frobnicate" "$T/bad2.out"

	# Offline exposure score, 0 (locked down) to 10 (unconfined); --threshold
	# is in tenths.  Below 2.0 is systemd's "OK".
	if systemd-analyze security --offline=true --no-pager "$S/kjitd.service" >"$T/security.out" 2>&1; then
		score=$(sed -n 's/.*Overall exposure level for kjitd.service: \([0-9.]*\).*/\1/p' "$T/security.out")
		systemd-analyze security --offline=true --threshold=20 --no-pager "$S/kjitd.service" >/dev/null 2>&1
		check "systemd-analyze security: system service exposure ${score:-?} is at most 2.0" [ $? -eq 0 ]
	else
		not_ok "systemd-analyze security --offline" "$(tail -n 3 "$T/security.out" | tr '\n' ' ')"
	fi
else
	not_ok "systemd-analyze" "not installed (package systemd; scripts/deps.sh installs it): units NOT verified"
fi

# The socket each .socket listens on is the one its service passes kjitd.
for mode in system user; do
	listen=$(sed -n 's/^ListenStream=//p' "$T/units/$mode/kjitd.socket")
	exec_sock=$(sed -n 's/^ExecStart=.* --socket \([^ ]*\).*/\1/p' "$T/units/$mode/kjitd.service")
	same=no
	[ -n "$listen" ] && [ "$listen" = "$exec_sock" ] && same=yes
	check "$mode units: ListenStream ($listen) is the service's --socket ($exec_sock)" [ $same = yes ]
	check "$mode kjitd.service: Type=notify and --foreground" \
		sh -c "grep -qx 'Type=notify' '$T/units/$mode/kjitd.service' && grep -q '^ExecStart=.* --foreground' '$T/units/$mode/kjitd.service'"
done
check "system kjitd.service: --system, cache /var/cache/kjit" \
	grep -q '^ExecStart=.* --system .*--cache-dir /var/cache/kjit' "$T/units/system/kjitd.service"

if command -v systemd-sysusers >/dev/null 2>&1; then
	mkdir -p "$T/sysroot/etc"
	systemd-sysusers --root="$T/sysroot" "$TOP/systemd/kjit.sysusers" >"$T/sysusers.out" 2>&1
	gid=$(sed -n 's/^kjit:x:\([0-9]*\):.*/\1/p' "$T/sysroot/etc/group" 2>/dev/null)
	check "sysusers.d: creates the system group kjit (gid ${gid:-none})" [ "${gid:-1000}" -lt 1000 ]
else
	not_ok "systemd-sysusers" "not installed: kjit.sysusers NOT checked"
fi

# ---- 2. socket activation ------------------------------------------------------

SA=$(command -v systemd-socket-activate 2>/dev/null)
[ -z "$SA" ] && [ -x /lib/systemd/systemd-socket-activate ] && SA=/lib/systemd/systemd-socket-activate
if [ -z "$SA" ]; then
	not_ok "systemd-socket-activate" "not installed (package systemd): socket activation NOT tested"
else
	mkdir -p "$T/sa"
	SOCK="$T/sa/kjitd.sock"
	"$SA" -l "$SOCK" "$KJITD" --foreground --socket "$SOCK" --cache-dir "$T/sa-cache" \
		--log "$T/sa.log" >"$T/sa.out" 2>&1 &
	DAEMON_PID=$!
	wait_for 10 test -S "$SOCK"
	check "socket activation: the socket exists before kjitd runs" [ -S "$SOCK" ]
	check "socket activation: kjitd has not started before the first connection" [ ! -e "$T/sa.log" ]
	inode=$(stat -c %i "$SOCK" 2>/dev/null)
	KJIT_SOCKET="$SOCK" "$KJIT" ping >"$T/r" 2>&1
	check "socket activation: kjit ping through the passed socket" [ $? -eq 0 ]
	check "socket activation: kjitd's log says it took systemd's socket" \
		grep -q 'listening on the socket passed by systemd' "$T/sa.log"
	check "socket activation: kjitd serves the same socket (inode unchanged)" \
		[ "${inode:-none}" = "$(stat -c %i "$SOCK" 2>/dev/null)" ]
	KJIT_SOCKET="$SOCK" "$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/sa.o" >"$T/r" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && grep -q '^compiled ' "$T/r"; then
		ok "socket activation: kjit get compiles scale.hip for gfx90a"
	else
		not_ok "socket activation: kjit get compiles scale.hip for gfx90a" "rc $rc: $(head -c 300 "$T/r")"
	fi
	check "socket activation: the object is ELF" \
		[ "$(head -c 4 "$T/sa.o" 2>/dev/null | od -An -c | tr -d ' ')" = "177ELF" ]
	KJIT_SOCKET="$SOCK" "$KJIT" get --source "$SRC" --backend hip --target gfx90a >"$T/r" 2>&1
	check "socket activation: the repeat is a hit" grep -q '^hit ' "$T/r"
	KJIT_SOCKET="$SOCK" "$KJIT" stop >"$T/r" 2>&1
	check "socket activation: kjit stop succeeds" [ $? -eq 0 ]
	wait_exit "$DAEMON_PID" 10
	check "socket activation: kjitd exits 0 after kjit stop (status $WAIT_RC)" [ "$WAIT_RC" -eq 0 ]
	DAEMON_PID=""
	# systemd keeps listening after the service stops and starts it again on
	# the next connection: kjitd must leave the socket file alone.
	check "socket activation: kjitd leaves systemd's socket file in place on stop" [ -S "$SOCK" ]
fi

# ---- 3. sd_notify readiness ------------------------------------------------

LISTEN="$T/notify-listen"
if ! cc -std=c11 -O2 -Wall -o "$LISTEN" "$TOP/tests/e2e/notify-listen.c" 2>"$T/cc.err"; then
	not_ok "build tests/e2e/notify-listen.c" "$(head -c 300 "$T/cc.err"): sd_notify NOT tested"
else
	NS="$T/notify.sock"
	SOCK="$T/n/kjitd.sock"
	mkdir -p "$T/n"
	"$LISTEN" "$NS" 60 >"$T/notify.out" 2>&1 &
	LPID=$!
	wait_for 10 test -S "$NS"
	# No --foreground: NOTIFY_SOCKET alone must keep kjitd in the foreground.
	NOTIFY_SOCKET="$NS" "$KJITD" --socket "$SOCK" --cache-dir "$T/n-cache" --log "$T/n.log" &
	DAEMON_PID=$!
	wait_exit "$LPID" 60
	check "sd_notify: READY=1 arrives (listener status $WAIT_RC)" \
		sh -c "[ $WAIT_RC -eq 0 ] && grep -qx 'READY=1' '$T/notify.out'"
	KJIT_SOCKET="$SOCK" "$KJIT" ping >/dev/null 2>&1
	check "sd_notify: kjitd answers as soon as it said READY=1" [ $? -eq 0 ]
	check "sd_notify: READY=1 comes from the process started (NotifyAccess=main)" \
		grep -qx "SENDER_PID=$DAEMON_PID" "$T/notify.out"
	check "sd_notify: kjitd stays in the foreground without --foreground" kill -0 "$DAEMON_PID"
	KJIT_SOCKET="$SOCK" "$KJIT" stop >/dev/null 2>&1
	wait_exit "$DAEMON_PID" 10
	check "sd_notify: kjitd exits 0 after kjit stop (status $WAIT_RC)" [ "$WAIT_RC" -eq 0 ]
	DAEMON_PID=""

	# A kjitd that cannot start says nothing to systemd and exits non-zero.
	touch "$T/not-a-dir"
	"$LISTEN" "$NS" 3 >"$T/notify2.out" 2>&1 &
	LPID=$!
	wait_for 10 test -S "$NS"
	NOTIFY_SOCKET="$NS" "$KJITD" --socket "$T/n/k2.sock" --cache-dir "$T/not-a-dir/cache" \
		--log "$T/n2.log" &
	DAEMON_PID=$!
	wait_exit "$DAEMON_PID" 30
	krc=$WAIT_RC
	DAEMON_PID=""
	wait_exit "$LPID" 10
	check "sd_notify: a kjitd that cannot open its cache exits non-zero by itself (status $krc)" \
		sh -c "[ $krc -ne 0 ] && [ $krc -ne 255 ]"
	check "sd_notify: ... and never sends READY=1" sh -c "! grep -q 'READY=1' '$T/notify2.out'"
fi

finish
