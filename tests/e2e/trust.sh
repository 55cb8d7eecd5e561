#!/bin/sh
# trust.sh: a client talks only to a daemon it can trust, finds the shared
# daemon by itself, and a failed autostart says why at once (issues 29.1,
# 32.2, 32.3; docs/protocol.md, "Whom a client talks to").  As an attacker
# would: two temporary users (useradd, removed however the test ends), a
# victim and an attacker; the attacker squats /tmp/kjit-<victim uid> with a
# listener (squat.py) that records every byte it receives.
#   1. a squatted folder (the attacker's, 0755): the victim's `kjit get`,
#      `kjit ping`, the Python package and a drop-in NVRTC program (no XDG_RUNTIME_DIR, no
#      KJIT_SOCKET) exit 3 / go to the real NVRTC; the listener gets no
#      connection and no byte;
#   2. a folder that passes (the victim's, 0700) but a listener of the
#      attacker (bound before root gave the folder to the victim): refused
#      by SO_PEERCRED, zero bytes; a folder of the victim's that others may
#      write: refused;
#   3. the victim's own per-user daemon is found and used (the control);
#   4. the system socket (KJIT_SYSTEM_SOCKET here) of a root kjitd with
#      --socket-group: a member of the group finds it with nothing set;
#      a non-member is told the group, `usermod -aG` and `newgrp`;
#   5. a failed autostart says kjitd's reason within 3 s: a cache path
#      that is a file, a missing worker user (--worker-user through
#      KJIT_KJITD); the same user under another XDG_RUNTIME_DIR reaches
#      the daemon that holds the cache, and a second kjitd on that cache
#      exits at once naming its socket.
. "$(dirname "$0")/lib.sh"

# The system's python3: one under root's home (pyenv) is not the users'.
PY=/usr/bin/python3
if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null || [ ! -x "$PY" ]; then
	echo "# skip trust: needs root, useradd, setpriv and $PY (temporary users)"
	exit 0
fi
ATK="kjta$$" VIC="kjtv$$" GNAME="kjtg$$"
LPID=""
stop_listener() {
	[ -n "$LPID" ] && kill "$LPID" 2>/dev/null && wait "$LPID" 2>/dev/null
	LPID=""
}
cleanup_trust() {
	stop_listener
	stop_daemon
	[ -n "${VUID:-}" ] && rm -rf "/tmp/kjit-$VUID"
	userdel "$ATK" 2>/dev/null
	userdel "$VIC" 2>/dev/null
	groupdel "$GNAME" 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "# kept $T" >&2 || rm -rf "$T"
}
trap cleanup_trust EXIT INT TERM
groupadd "$GNAME" && useradd -M -N -g nogroup -s /bin/sh "$ATK" &&
	useradd -M -N -g nogroup -G "$GNAME" -s /bin/sh "$VIC" || { not_ok "trust: users" "cannot create users"; exit 1; }
VUID=$(id -u "$VIC")
AUID=$(id -u "$ATK")
SQ="/tmp/kjit-$VUID"
rm -rf "$SQ"
chmod 0755 "$T"
mkdir -p "$T/atk" "$T/vhome" "$T/vrun"
chown "$ATK" "$T/atk"
chown "$VIC" "$T/vhome" "$T/vrun"
chmod 0700 "$T/vrun"
SECRET="kjsecret$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
printf 'extern "C" __global__ void k%s(float *x) { x[0] = SECRET_VALUE; }\n' "$$" >"$T/k.cu"
chmod 0644 "$T/k.cu"

# as USER [VAR=VALUE]... COMMAND...: runs as USER with a bare environment:
# no XDG_RUNTIME_DIR, no KJIT_SOCKET (the cron/su/Slurm case).
as() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups env -i PATH="$PATH" HOME="$T/vhome" \
		KJIT_SYSTEM_SOCKET="$T/nosys/kjitd.sock" KJIT_KJITD="$KJITD" "$@"
}
# squat DIR: the attacker listens on DIR/kjitd.sock, recording into $T/atk/rec.
squat() {
	rm -f "$T/atk/rec" "$T/atk/rec.conns" "$T/atk/rec.ready"
	setpriv --reuid="$ATK" --regid="$(id -g "$ATK")" --init-groups "$PY" "$TOP/tests/e2e/squat.py" \
		"$1/kjitd.sock" "$T/atk/rec" 2>"$T/atk/squat.err" &
	LPID=$!
	i=0
	while [ ! -e "$T/atk/rec.ready" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	[ -e "$T/atk/rec.ready" ] || { cat "$T/atk/squat.err" >&2; return 1; }
}
received() { wc -c <"$T/atk/rec" | tr -d ' '; }
conns() { wc -l <"$T/atk/rec.conns" | tr -d ' '; }
victim_get() { # out err
	as "$VIC" "$KJIT" get --source "$T/k.cu" --backend cuda --target sm_90 -DSECRET_VALUE="$SECRET" \
		-o "$T/vhome/k.cubin" >"$1" 2>"$2"
}

# ---- 1. the attacker's folder ----
setpriv --reuid="$ATK" --regid="$(id -g "$ATK")" --init-groups mkdir -m 0755 "$SQ"
squat "$SQ" || { not_ok "trust: squatter listens" "squat.py did not start"; exit 1; }
victim_get "$T/g.out" "$T/g.err"
rc=$?
check "trust: get with a squatted /tmp/kjit-UID exits 3 (exit $rc: $(cat "$T/g.err"))" [ "$rc" = 3 ]
check "trust: its error is one line naming the folder and its owner" \
	sh -c "one_line() { [ \"\$(wc -l <\"\$1\")\" -eq 1 ]; }; one_line '$T/g.err' && grep -qF '$SQ' '$T/g.err' && grep -q 'owned by uid $AUID' '$T/g.err'"
as "$VIC" "$KJIT" ping >"$T/p.out" 2>"$T/p.err"
rc=$?
check "trust: ping with a squatted folder exits 3, one line naming it (exit $rc)" \
	sh -c "[ $rc = 3 ] && [ \$(wc -l <'$T/p.err') -eq 1 ] && grep -qF '$SQ' '$T/p.err'"
# shellcheck disable=SC2046
as "$VIC" $(san_python_env) PYTHONPATH="$TOP/python" PYTHONDONTWRITEBYTECODE=1 KJIT_LIBRARY="$TOP/$BUILD/libkjit.so" "$PY" -c '
import sys, kjit
try:
    kjit.Client().ping()
except kjit.Error as e:
    print(e, file=sys.stderr)
    sys.exit(3)
' >"$T/py.out" 2>"$T/py.err"
rc=$?
check "trust: the Python package is refused too (exit $rc: $(cat "$T/py.err"))" \
	sh -c "[ $rc = 3 ] && grep -qF 'refusing to talk to kjitd at $SQ/kjitd.sock' '$T/py.err'"
API="$TOP/$BUILD/tests/dropin/nvrtc-api"
NV="$TOP/$BUILD/dropin/nvrtc"
REAL_NVRTC_DIR=${KJIT_TEST_NVRTC_DIR:-/usr/local/cuda/lib64}
if [ -x "$API" ] && [ -e "$REAL_NVRTC_DIR/libnvrtc.so" ] && [ -z "$(san_flags)" ]; then
	unset KJIT_REAL_NVRTC KJIT_DROPIN_DIR LD_PRELOAD
	LD_LIBRARY_PATH="$REAL_NVRTC_DIR" "$API" >"$T/real.txt" 2>"$T/real.err"
	as "$VIC" LD_LIBRARY_PATH="$NV" KJIT_DROPIN_DEBUG=1 KJIT_DROPIN_STATS="$T/vhome/ds" "$API" \
		>"$T/dp.txt" 2>"$T/dp.err"
	check "trust: a drop-in NVRTC program with a squatted folder gets the real NVRTC's answers" \
		cmp -s "$T/real.txt" "$T/dp.txt"
	check "trust: the drop-in counts the untrusted daemon as its reason" grep -q "untrusted" "$T/dp.err"
else
	echo "# skip trust: drop-in case (needs $API, the real NVRTC, an unsanitized build)"
fi
check "trust: the squatter got no connection ($(conns)) and no byte ($(received))" \
	[ "$(conns)" = 0 -a "$(received)" = 0 ]
stop_listener

# ---- 2. a trusted-looking folder, the attacker's listener ----
rm -rf "$SQ"
mkdir -m 0700 "$SQ" && chown "$ATK" "$SQ"
squat "$SQ" || { not_ok "trust: squatter listens (2)" "squat.py did not start"; exit 1; }
chown "$VIC" "$SQ" && chmod 0700 "$SQ"
victim_get "$T/g2.out" "$T/g2.err"
rc=$?
check "trust: a listener of another uid in the victim's own folder is refused: exit 3 ($(cat "$T/g2.err"))" \
	sh -c "[ $rc = 3 ] && grep -q 'served by uid $AUID' '$T/g2.err'"
check "trust: it connected ($(conns)) but received no byte ($(received))" [ "$(conns)" -ge 1 -a "$(received)" = 0 ]
stop_listener
rm -rf "$SQ"
mkdir -m 0777 "$SQ" && chown "$VIC" "$SQ" && chmod 0777 "$SQ"
as "$VIC" "$KJIT" ping >"$T/p3.out" 2>"$T/p3.err"
rc=$?
check "trust: a folder of the victim's that others may write is refused (exit $rc: $(cat "$T/p3.err"))" \
	sh -c "[ $rc = 3 ] && grep -q 'writable by others' '$T/p3.err'"
rm -rf "$SQ"
check "trust: the secret -D value appears in no error" sh -c "! grep -q '$SECRET' '$T'/*.err"

# ---- 3. the control: the victim's own daemon ----
as "$VIC" XDG_RUNTIME_DIR="$T/vrun" "$KJIT" get --source "$T/k.cu" --backend cuda --target sm_90 \
	-DSECRET_VALUE=1 -o "$T/vhome/k.cubin" >"$T/c.out" 2>"$T/c.err"
check "trust: the victim's own autostarted daemon serves it ($(cat "$T/c.out" "$T/c.err"))" [ -s "$T/vhome/k.cubin" ]
as "$VIC" XDG_RUNTIME_DIR="$T/vrun" "$KJIT" ping >"$T/c2.out" 2>&1
check "trust: ping names the per-user socket it found ($(cat "$T/c2.out"))" \
	grep -qF "on $T/vrun/kjit/kjitd.sock (found: per-user)" "$T/c2.out"
# ---- 5c. the same user, another XDG_RUNTIME_DIR, the same cache ----
mkdir -m 0700 "$T/vrun2" && chown "$VIC" "$T/vrun2"
t0=$(date +%s%N)
as "$VIC" XDG_RUNTIME_DIR="$T/vrun2" "$KJIT" get --source "$T/k.cu" --backend cuda --target sm_90 \
	-DSECRET_VALUE=1 -o "$T/vhome/k2.cubin" >"$T/r.out" 2>"$T/r.err"
ms=$((($(date +%s%N) - t0) / 1000000))
check "trust: under another XDG_RUNTIME_DIR the daemon holding the cache answers, a hit in ${ms} ms ($(cat "$T/r.out" "$T/r.err"))" \
	sh -c "grep -q '^hit ' '$T/r.out' && [ $ms -lt 3000 ]"
as "$VIC" XDG_RUNTIME_DIR="$T/vrun2" "$KJIT" ping >"$T/r2.out" 2>&1
check "trust: ping says it was found by the cache's record ($(cat "$T/r2.out"))" \
	grep -q "found: recorded by the cache's kjitd" "$T/r2.out"
t0=$(date +%s%N)
as "$VIC" "$KJITD" --foreground --socket "$T/vrun2/other.sock" >"$T/k2.out" 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "trust: a second kjitd on that cache exits 4 at once (${ms} ms) naming the socket ($(cat "$T/k2.out"))" \
	sh -c "[ $rc = 4 ] && [ $ms -lt 2000 ] && grep -qF '$T/vrun/kjit/kjitd.sock' '$T/k2.out'"
as "$VIC" XDG_RUNTIME_DIR="$T/vrun" "$KJIT" stop >/dev/null 2>&1

# ---- 5a, 5b. failed autostarts (as root, in this test's folders) ----
autostart_fails() { # name, what the reason must say, env...
	n=$1 want=$2
	shift 2
	mkdir -p "$T/arun" && chmod 0700 "$T/arun"
	t0=$(date +%s%N)
	env -u KJIT_SOCKET -u KJIT_NO_AUTOSTART XDG_RUNTIME_DIR="$T/arun" KJIT_SYSTEM_SOCKET="$T/nosys/kjitd.sock" "$@" \
		"$KJIT" get --source "$T/k.cu" --backend cuda --target sm_90 -DSECRET_VALUE=1 -o "$T/a.cubin" \
		>"$T/a.out" 2>"$T/a.err"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	check "trust: failed autostart ($n): exit 3 in ${ms} ms (< 3000) with kjitd's reason ($(cat "$T/a.err"))" \
		sh -c "[ $rc = 3 ] && [ $ms -lt 3000 ] && grep -q '$want' '$T/a.err'"
}
: >"$T/notadir"
autostart_fails "a cache path that is a file" "not a directory" KJIT_CACHE_DIR="$T/notadir"
printf '#!/bin/sh\nexec "%s" --worker-user kjit-no-such-user-%s "$@"\n' "$KJITD" "$$" >"$T/kjitd-wrap"
chmod 0755 "$T/kjitd-wrap"
autostart_fails "root without its worker user" "no such user" KJIT_CACHE_DIR="$T/acache" KJIT_KJITD="$T/kjitd-wrap"

# ---- 4. the system socket ----
if id kjit-worker >/dev/null 2>&1; then
	GID=$(getent group "$GNAME" | cut -d: -f3)
	KJIT_SOCKET="$T/sys/kjitd.sock" start_daemon --system --socket-group "$GNAME" --allow-gid "$GID" ||
		not_ok "trust: a system kjitd with --socket-group starts" "see the log above"
	check "trust: --socket-group gives the socket to the group, mode 0660 ($(stat -c '%G %a' "$T/sys/kjitd.sock"))" \
		[ "$(stat -c '%G %a' "$T/sys/kjitd.sock")" = "$GNAME 660" ]
	as "$VIC" XDG_RUNTIME_DIR="$T/vrun" KJIT_SYSTEM_SOCKET="$T/sys/kjitd.sock" "$KJIT" ping >"$T/s.out" 2>&1
	check "trust: a member of the group finds the system daemon with nothing set ($(cat "$T/s.out"))" \
		grep -qF "on $T/sys/kjitd.sock (found: system)" "$T/s.out"
	as "$ATK" XDG_RUNTIME_DIR="$T/atk" KJIT_SYSTEM_SOCKET="$T/sys/kjitd.sock" "$KJIT" ping >"$T/s2.out" 2>&1
	rc=$?
	check "trust: a non-member is told the group, usermod -aG and newgrp (exit $rc: $(cat "$T/s2.out"))" \
		sh -c "[ $rc = 3 ] && grep -q 'group $GNAME' '$T/s2.out' && grep -q 'usermod -aG $GNAME $ATK' '$T/s2.out' &&
			grep -q 'newgrp $GNAME' '$T/s2.out'"
	as "$ATK" KJIT_SOCKET="$T/sys/kjitd.sock" "$KJIT" ping >"$T/s3.out" 2>&1
	check "trust: so is one who names the socket with KJIT_SOCKET ($(cat "$T/s3.out"))" \
		grep -q "usermod -aG $GNAME $ATK" "$T/s3.out"
	KJIT_SOCKET="$T/sys/kjitd.sock" stop_daemon
else
	echo "# skip trust: system socket case (no kjit-worker user for a root --system kjitd)"
fi
exit $((FAILS > 0))
