#!/bin/sh
# service.sh: kjitd as a service (issue 32 item 4, issue 29 item 7).
#   1. --version on kjitd and kjit: the package's version (python/kjit/_version.py).
#   2. --log FILE is created 0600 under umask 022 (never 0644), and an
#      existing 0644 one is brought to 0600.
#   3. An option with a newline (a raw frame) is logged escaped: no forged line.
#   4. The configuration file: its settings apply, the command line wins,
#      `kjit config` names where each came from (text and --json), a bad
#      line stops kjitd with FILE:LINE, an absent named file is an error.
#   5. SIGHUP: the log moved away (as logrotate does), HUP, the new file
#      receives the next lines, kjitd still serves with the same pid; the
#      file's new --log-level takes effect.
#   6. Journal: on a stderr that is the journal stream ($JOURNAL_STREAM)
#      lines carry "<N>" priorities and no timestamp, warnings "<4>".
#   7. Detached from a terminal (a pty from script(1)): nothing kjitd logs
#      after it serves reaches that terminal (its start-up lines do, before
#      it leaves); it goes to the socket folder's kjitd.log.
. "$(dirname "$0")/lib.sh"

# The daemons this test starts besides start_daemon's: stopped however it ends.
JPID=""
cleanup_service() {
	KJIT_SOCKET="$T/d/k.sock" "$KJIT" stop >/dev/null 2>&1
	KJIT_SOCKET="$T/j/k.sock" "$KJIT" stop >/dev/null 2>&1
	[ -n "$JPID" ] && kill "$JPID" 2>/dev/null
	cleanup
}
trap cleanup_service EXIT INT TERM

VERSION=$(sed -n 's/^__version__ = "\([^"]*\)"$/\1/p' "$TOP/python/kjit/_version.py")
SRC="$TOP/tests/e2e/data/scale.hip"

# ---- 1. --version ---------------------------------------------------------
check "kjitd --version prints kjitd $VERSION" [ "$("$KJITD" --version 2>&1)" = "kjitd $VERSION" ]
check "kjit --version prints kjit $VERSION" [ "$("$KJIT" --version 2>&1)" = "kjit $VERSION" ]

# ---- 2, 3: log mode and escaping ----------------------------------------------
umask 022
printf 'old line\n' >"$T/kjitd.log" && chmod 0644 "$T/kjitd.log"
start_daemon --log-level info || { not_ok "start kjitd" "see above"; exit 1; }
check "an existing 0644 --log file is made 0600 ($(stat -c %a "$T/kjitd.log"))" [ "$(stat -c %a "$T/kjitd.log")" = 600 ]
stop_daemon
rm -f "$T/kjitd.log"
start_daemon || { not_ok "start kjitd" "see above"; exit 1; }
check "--log FILE created 0600 under umask 022 ($(stat -c %a "$T/kjitd.log"))" [ "$(stat -c %a "$T/kjitd.log")" = 600 ]
# libkjit refuses control bytes in names; a raw frame (rawclient.c) sends
# one in an option, which the compile's failure line quotes.
RAW="$T/rawclient"
cc -D_GNU_SOURCE -I"$TOP/include" -I"$TOP/client" -I"$TOP/common" "$TOP/tests/e2e/rawclient.c" \
	"$TOP/$BUILD/libkjit.a" -lcrypto -pthread $(san_flags) -o "$RAW" 2>"$T/cc.err" || cat "$T/cc.err" >&2
"$RAW" "$KJIT_SOCKET" get backend=1 target=gfx90a src='__global__ void k(){}' name=a.hip \
	'option=-DX\nkjitd[1]: FORGED line' >"$T/r" 2>&1
check "a raw GET with a newline in an option is refused ($(tr '\n' ' ' <"$T/r" | head -c 100))" grep -q 'code=-2' "$T/r"
check "the newline is logged escaped, as \\n" grep -qF -- '-DX\nkjitd[1]: FORGED line' "$T/kjitd.log"
check "no log line starts with the forged text" sh -c "! grep -q '^kjitd\[1\]: FORGED' '$T/kjitd.log'"
stop_daemon

# ---- 4. configuration file -------------------------------------------------------
CONF="$T/kjitd.conf"
cat >"$CONF" <<EOF
# a comment
max-size = 3G
jobs = 3   # trailing comment
log-level = warning
EOF
rm -f "$T/kjitd.log"
KJITD_CONFIG="$CONF" start_daemon --jobs 2 || { not_ok "start kjitd with a configuration" "see above"; exit 1; }
"$KJIT" config >"$T/config" 2>&1
check "kjit config names the file" grep -q "^configuration file: $CONF\$" "$T/config"
check "kjit config: max-size 3G from $CONF:2" grep -q "^max-size  *3G  *$CONF:2\$" "$T/config"
check "kjit config: jobs 2 from the command line (it wins over $CONF:3)" grep -q '^jobs  *2  *command line$' "$T/config"
check "kjit config: in effect, max size 3221225472 and 2 workers" \
	grep -q 'max size 3221225472, 2 workers per compiler' "$T/config"
"$KJIT" config --json >"$T/config.json" 2>&1
check "kjit config --json: each setting with its origin" \
	grep -q "{\"name\":\"log-level\",\"value\":\"warning\",\"origin\":\"$CONF:4\"}" "$T/config.json"
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o /dev/null >/dev/null 2>&1
check "log-level warning from the file: no info line logged" sh -c "! grep -q 'compile ' '$T/kjitd.log'"

# ---- 5. SIGHUP ---------------------------------------------------------------------
pid=$DAEMON_PID
mv "$T/kjitd.log" "$T/kjitd.log.1"
sed -i 's/^log-level = warning$/log-level = info/' "$CONF"
kill -HUP "$DAEMON_PID"
i=0
while [ ! -e "$T/kjitd.log" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
check "SIGHUP: kjitd still runs (pid $pid)" kill -0 "$pid"
"$KJIT" ping >/dev/null 2>&1
check "SIGHUP: kjitd still serves" [ $? -eq 0 ]
check "SIGHUP: a new log file was opened, 0600" [ "$(stat -c %a "$T/kjitd.log" 2>/dev/null)" = 600 ]
check "SIGHUP: the new --log-level (info) took effect" grep -q 'SIGHUP: log-level is now info' "$T/kjitd.log"
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -D N=2 -o /dev/null >/dev/null 2>&1
check "SIGHUP: the next compile is logged in the new file" grep -q 'compile .*scale.hip' "$T/kjitd.log"
check "SIGHUP: the moved file got nothing after the move" sh -c "! grep -q 'scale.hip' '$T/kjitd.log.1'"
"$KJIT" config >"$T/config2" 2>&1
check "kjit config after SIGHUP: log-level info from $CONF:4" grep -q "^log-level  *info  *$CONF:4\$" "$T/config2"
stop_daemon

printf 'max-size = 3G\nfrobnicate = 1\n' >"$T/bad.conf"
KJITD_CONFIG="$T/bad.conf" "$KJITD" --foreground --socket "$T/b.sock" --cache-dir "$T/bc" >"$T/bad.out" 2>&1
rc=$?
check "an unknown setting stops kjitd (rc $rc) naming FILE:LINE" \
	sh -c "[ $rc -eq 2 ] && grep -q '$T/bad.conf:2: unknown setting .frobnicate.' '$T/bad.out'"
"$KJITD" --foreground --config "$T/absent.conf" --socket "$T/b.sock" --cache-dir "$T/bc" >"$T/abs.out" 2>&1
rc=$?
check "--config naming an absent file is an error (rc $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q 'cannot read the configuration' '$T/abs.out'"
printf 'max-size = lots\n' >"$T/bad2.conf"
"$KJITD" --foreground --config "$T/bad2.conf" --socket "$T/b.sock" --cache-dir "$T/bc" >"$T/bad2.out" 2>&1
rc=$?
check "a bad value in the file: rc 2, the option's message and the line ($(head -n 1 "$T/bad2.out"))" \
	sh -c "[ $rc -eq 2 ] && grep -q 'max-size .lots.' '$T/bad2.out' && grep -q 'bad2.conf:1' '$T/bad2.out'"

# ---- 6. journal stream -------------------------------------------------------------
J="$T/journal.out"
: >"$J"
ino=$(stat -c '%d:%i' "$J")
mkdir -p "$T/j"
JOURNAL_STREAM="$ino" "$KJITD" --foreground --socket "$T/j/k.sock" --cache-dir "$T/jc" 2>>"$J" &
JPID=$!
i=0
while ! KJIT_SOCKET="$T/j/k.sock" "$KJIT" ping >/dev/null 2>&1 && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
KJIT_SOCKET="$T/j/k.sock" "$KJIT" get --source "$T/nonexistent-include.hip" --backend hip --target gfx90a \
	>/dev/null 2>&1
printf '#include "nope.h"\n__global__ void k(){}\n' >"$T/bad.hip"
KJIT_SOCKET="$T/j/k.sock" "$KJIT" get --source "$T/bad.hip" --backend hip --target gfx90a --opt=-Wnope \
	>/dev/null 2>&1
KJIT_SOCKET="$T/j/k.sock" "$KJIT" stop >/dev/null 2>&1
i=0
while kill -0 "$JPID" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
check "journal stream: kjitd stopped" sh -c "! kill -0 $JPID 2>/dev/null"
kill -9 "$JPID" 2>/dev/null
wait "$JPID" 2>/dev/null
JPID=""
check "journal stream: the serving line is <6> without a timestamp" grep -q '^<6>serving ' "$J"
check "journal stream: no line carries a timestamp" sh -c "! grep -q '^[0-9-]*T[0-9:]* kjitd' '$J'"
check "journal stream: a failure is marked <4> or <3> ($(grep -c '^<[34]>' "$J") lines)" grep -q '^<[34]>' "$J"

# ---- 7. detached from a terminal ---------------------------------------------------
mkdir -p "$T/d"
script -qec "'$KJITD' --socket '$T/d/k.sock' --cache-dir '$T/dc'" "$T/tty.out" >/dev/null 2>&1
rc=$?
check "detached kjitd started from a terminal (rc $rc)" [ $rc -eq 0 ]
KJIT_SOCKET="$T/d/k.sock" "$KJIT" get --source "$SRC" --backend hip --target gfx90a -o /dev/null >/dev/null 2>&1
KJIT_SOCKET="$T/d/k.sock" "$KJIT" stop >/dev/null 2>&1
sleep 0.3
check "detached: the terminal got no log line after start ($(tr '\r\n' '  ' <"$T/tty.out" | head -c 200))" \
	sh -c "! grep -q 'compile ' '$T/tty.out'"
check "detached: the terminal was told where the log is" grep -q "the log is $T/d/kjitd.log" "$T/tty.out"
check "detached: the compile is in $T/d/kjitd.log" grep -q 'compile .*scale.hip' "$T/d/kjitd.log"
check "detached: that log is 0600" [ "$(stat -c %a "$T/d/kjitd.log" 2>/dev/null)" = 600 ]
[ "$FAILS" -eq 0 ]
