#!/bin/sh
# harden-daemon.sh: kjitd against a hostile local user (issue 16, items 2, 3,
# 7, 8, 9; issue 13 item 4): silent connections, a flood of large sources,
# --allow-gid with supplementary groups, a removed socket, a second daemon
# on the same socket, --idle-timeout, and workers reaped before exit.  The
# multi-user parts create a temporary user and group (we run as root here
# and in CI) and remove them however the test ends; without root they say
# so and are skipped.  HARDEN_SILENT (5000, the owner's silent connections),
# HARDEN_SILENT_USER (300, another user's) and HARDEN_FLOOD (300 sources)
# size the floods; `make stress` runs it with 15,000, 20,000 and 600.
. "$(dirname "$0")/lib.sh"

SILENT=${HARDEN_SILENT:-5000}
SILENT_USER=${HARDEN_SILENT_USER:-300}
FLOOD=${HARDEN_FLOOD:-300}
HOLD="$TOP/tests/e2e/hold.py"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
KJITC="$T/kjit" # a copy the temporary user can run
cp "$KJIT" "$KJITC" && chmod 0755 "$T" "$KJITC"
U="$T/u" # where the temporary user writes
mkdir -p "$U" && chmod 0777 "$U"
UNAME="" GNAME="" UNAME2=""
cleanup_users() {
	[ -n "$UNAME" ] && userdel "$UNAME" 2>/dev/null
	[ -n "$UNAME2" ] && userdel "$UNAME2" 2>/dev/null
	[ -n "$GNAME" ] && groupdel "$GNAME" 2>/dev/null
	UNAME="" UNAME2="" GNAME=""
}
trap 'cleanup_users; cleanup' EXIT INT TERM

# Enough descriptors for the silent connections in this shell's children.
want=$((SILENT > SILENT_USER ? SILENT : SILENT_USER))
ulimit -n $((want + 1000)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

as_user() { # user, command...: runs with the user's uid, gid and groups
	u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups env KJIT_SOCKET="$KJIT_SOCKET" \
		KJIT_NO_AUTOSTART=1 HOME=/ "$@"
}

MULTI=0
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	GNAME="kjg$$"
	UNAME="kju$$"
	UNAME2="kjv$$"
	if groupadd "$GNAME" && useradd -M -N -g nogroup -G "$GNAME" -s /bin/sh "$UNAME" &&
		useradd -M -N -g nogroup -s /bin/sh "$UNAME2"; then
		MULTI=1
	else
		echo "could not create a temporary user and group" >&2
	fi
else
	echo "# multi-user checks skipped: not root, or no useradd/setpriv" >&2
fi

src() { printf '__global__ void k_%s() {}\n' "$1" >"$T/$1.hip"; echo "$T/$1.hip"; }
get() { "$KJIT" get --source "$(src "$1")" --backend hip --target gfx90a -o "$T/$1.out"; }
open_socket() { chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"; }

# ---- item 2: silent connections ----
start_daemon --hip-compiler test --jobs 2 || exit 1
open_socket
rm -f "$T/ready"
$PY "$HOLD" silent "$KJIT_SOCKET" "$SILENT" 30 "$T/ready" &
HOLDER=$!
i=0
while [ ! -f "$T/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
t0=$(date +%s%N)
get silent1 >"$T/get.out" 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "silent-connections-held" [ "$(cut -d' ' -f1 "$T/ready" | head -n 1)" -eq "$SILENT" ]
check "get-during-$SILENT-silent-connections" [ $rc -eq 0 -a $ms -lt 1000 ]
echo "# get with $SILENT silent connections open: $ms ms" >&2
if [ "$MULTI" -eq 1 ]; then
	# Another user is capped at 256 connections; the rest are told why.
	rm -f "$U/ready2"
	as_user "$UNAME" $PY "$HOLD" silent "$KJIT_SOCKET" "$SILENT_USER" 30 "$U/ready2" &
	HOLDER2=$!
	i=0
	while [ ! -f "$U/ready2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	check "per-uid-cap-256" [ "$(head -n 1 "$U/ready2" | cut -d' ' -f1)" = 256 ]
	check "per-uid-refusal-says-why" grep -q "uid [0-9]* already has 256 connections open" "$U/ready2"
	as_user "$UNAME" "$KJITC" ping >"$T/ping.out" 2>&1
	check "kjit-prints-the-cap" grep -q "already has 256 connections open, the limit per user" "$T/ping.out"
	check "no-generic-closed-message" sh -c "! grep -q 'closed the connection' '$T/ping.out'"
	check "owner-served-while-user-capped" get silent2
	kill "$HOLDER2" 2>/dev/null
	wait "$HOLDER2" 2>/dev/null
fi
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
stop_daemon

# Idle connections are closed (clients reconnect).
start_daemon --hip-compiler test --conn-idle-timeout 1 || exit 1
check "idle-connection-closed" [ "$($PY "$HOLD" closed-after "$KJIT_SOCKET" 4)" = closed ]
check "served-after-idle-close" get idle1
stop_daemon

# ---- item 3: a flood of 4 MiB sources while the workers are busy ----
# Small caches: what is measured is the buffering, not the hot set and memo
# filling with the compiled 4 MiB objects (256M + 64M by default).
start_daemon --hip-compiler test --jobs 1 --hot-size 1M --memo-size 1M || exit 1
open_socket
printf '#pragma kjit_test sleep 2000\n__global__ void busy() {}\n' >"$T/busy.hip"
"$KJIT" get --source "$T/busy.hip" --backend hip --target gfx90a -o "$T/busy.out" >/dev/null 2>&1 &
BUSY=$!
sleep 0.3
rss0=$(sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$DAEMON_PID/status")
FLOODER=root
[ "$MULTI" -eq 1 ] && FLOODER=$UNAME
if [ "$FLOODER" = root ]; then
	$PY "$HOLD" flood "$KJIT_SOCKET" "$FLOOD" 4 "$U/flood.out" &
else
	as_user "$UNAME" $PY "$HOLD" flood "$KJIT_SOCKET" "$FLOOD" 4 "$U/flood.out" &
fi
FLOODP=$!
sleep 1
# A normal compile by another user, queued behind the flood, finishes.
t0=$(date +%s)
get normal1 >/dev/null 2>&1
rc=$?
secs=$(($(date +%s) - t0))
wait "$FLOODP"
wait "$BUSY"
hwm=$(sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$DAEMON_PID/status")
sleep 2.5 # the flush timer trims once the load has passed
rss1=$(sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$DAEMON_PID/status")
echo "# flood of $FLOOD x 4 MiB by $FLOODER: RSS before ${rss0} kB, peak ${hwm} kB, after ${rss1} kB; normal compile ${secs} s" >&2
sed 's/^/# flood replies: /' "$U/flood.out" >&2
check "flood-normal-compile-finished" [ $rc -eq 0 -a "$secs" -le 20 ]
check "flood-rss-peak-bounded" [ "$hwm" -lt $((rss0 + 700 * 1024)) ]
if [ -n "$(san_flags)" ]; then
	# ASan keeps freed blocks in its quarantine: RSS cannot fall back here.
	echo "# skip flood-rss-returned: NOT checked under AddressSanitizer (its quarantine holds freed memory); the plain suite checks it"
else
	check "flood-rss-returned" [ "$rss1" -lt $((rss0 + 64 * 1024)) ]
fi
check "flood-some-compiled" grep -q '^0 ' "$U/flood.out"
check "flood-busy-said-retry" grep -q '^-17 .*kjitd is busy: .*retry' "$U/flood.out"
check "flood-nothing-lost" sh -c "! grep -qE '^(closed|error|connect|None) ' '$U/flood.out'"
check "flood-daemon-alive" "$KJIT" ping
stop_daemon

# ---- item 7: --allow-gid checks supplementary groups ----
if [ "$MULTI" -eq 1 ]; then
	start_daemon --hip-compiler test --allow-gid "$(getent group "$GNAME" | cut -d: -f3)" || exit 1
	open_socket
	check "supplementary-group-accepted" as_user "$UNAME" "$KJITC" ping
	as_user "$UNAME2" "$KJITC" ping >"$T/denied.out" 2>&1
	rc=$?
	check "other-user-denied" [ $rc -ne 0 ]
	check "denied-message" grep -q "access denied: uid $(id -u "$UNAME2") is not allowed by kjitd (--allow-uid/--allow-gid)" "$T/denied.out"
	check "denied-not-protocol-error" sh -c "! grep -q 'message type' '$T/denied.out'"
	stop_daemon
fi

# ---- item 8: a removed socket; a second daemon on the same socket ----
start_daemon --hip-compiler test || exit 1
"$KJITD" --foreground --socket "$KJIT_SOCKET" --cache-dir "$T/other-cache" --log "$T/second.log"
rc=$?
check "second-daemon-refused" [ $rc -eq 4 ]
check "second-daemon-names-socket-in-use" grep -q "the socket $KJIT_SOCKET is in use by another kjitd (pid $DAEMON_PID, cache $(realpath "$KJIT_CACHE_DIR"))" "$T/second.log"
check "second-daemon-not-same-cache" sh -c "! grep -q 'already serves this cache' '$T/second.log'"
rm -f "$KJIT_SOCKET"
i=0
while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 60 ]; do sleep 0.1; i=$((i + 1)); done
check "removed-socket-daemon-exits" sh -c "! kill -0 $DAEMON_PID 2>/dev/null"
check "removed-socket-logged" grep -q "the socket $KJIT_SOCKET was removed: no client can reach this kjitd; exiting" "$T/kjitd.log"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=""
# Replaced under a live daemon, then two clients at once: one daemon.
start_daemon --hip-compiler test || exit 1
OLD=$DAEMON_PID
rm -f "$KJIT_SOCKET"
(KJIT_NO_AUTOSTART=0 "$KJIT" ls >"$T/auto1.out" 2>&1) &
A1=$!
(KJIT_NO_AUTOSTART=0 "$KJIT" ls >"$T/auto2.out" 2>&1) &
A2=$!
wait $A1
r1=$?
wait $A2
r2=$?
sleep 1.5
n=$(pgrep -f -- "--socket $KJIT_SOCKET" | wc -l)
check "autostart-after-removal" [ $r1 -eq 0 -a $r2 -eq 0 ]
check "exactly-one-daemon" [ "$n" -eq 1 ]
check "old-daemon-gone" sh -c "! kill -0 $OLD 2>/dev/null"
NEW=$(pgrep -f -- "--socket $KJIT_SOCKET" | head -n 1)
check "autostarted-has-idle-timeout" grep -q -- "--idle-timeout" "/proc/$NEW/cmdline"
wait "$OLD" 2>/dev/null
"$KJIT" stop >/dev/null 2>&1
i=0
while kill -0 "$NEW" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
DAEMON_PID=""

# --idle-timeout: exits once nothing happened for that long.
start_daemon --hip-compiler test --idle-timeout 1 || exit 1
i=0
while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 60 ]; do sleep 0.1; i=$((i + 1)); done
check "idle-timeout-exits" sh -c "! kill -0 $DAEMON_PID 2>/dev/null"
check "idle-timeout-logged" grep -q "no client for 1 s (--idle-timeout); exiting" "$T/kjitd.log"
check "idle-timeout-removed-socket" [ ! -e "$KJIT_SOCKET" ]
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=""

# ---- item 9: every worker reaped before exit ----
( sleep 1.5
  printf '#pragma kjit_test sleep 5000\n__global__ void slow() {}\n' >"$T/slow.hip"
  "$KJIT" get --source "$T/slow.hip" --backend hip --target gfx90a -o "$T/slow.out" >/dev/null 2>&1 &
  get reap1 >/dev/null 2>&1
  sleep 0.5
  "$KJIT" stop >/dev/null 2>&1 ) &
Z=$($PY "$HOLD" reaper "$KJITD" --foreground --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" \
	--log "$T/reap.log" --hip-compiler test --jobs 2)
wait
check "no-defunct-worker-after-stop" [ "$Z" = none ]
[ "$Z" = none ] || echo "# zombies left: $Z" >&2

cleanup_users
finish
