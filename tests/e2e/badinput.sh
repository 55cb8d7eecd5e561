#!/bin/sh
# The bad-input matrix (docs/reliability.md, "Bad input"): one check per
# hostile or broken input, each answered with one clear line while a good
# client keeps getting hits in the background; after each input the daemon
# must still answer a `kjit ping` and serve a hit.  Raw frames come from
# tests/e2e/rawclient.c, built here into $T.  The test compiler family
# (`--hip-compiler test`, compilers/testcomp.c) plays the compiler that
# spins, aborts or echoes.
#
# BADINPUT_SLOW=1 (set by `make stress`) adds the checks that need the
# 30 s idle timeout (KJ_CLIENT_IDLE_TIMEOUT_MS has no option to shorten it).
. "$(dirname "$0")/lib.sh"

SLOW=${BADINPUT_SLOW:-0}
RAW="$T/rawclient"
FULL="$T/full"
mounted=0
cleanup_badinput() {
	[ -n "${GOOD_PID:-}" ] && { touch "$T/stop-good"; wait "$GOOD_PID" 2>/dev/null; }
	stop_daemon
	[ "$mounted" = 1 ] && umount "$FULL" 2>/dev/null
	rm -rf "$T"
}
trap cleanup_badinput EXIT INT TERM

# shellcheck disable=SC2046
build_helper rawclient "$RAW" || exit 1

start_daemon --hip-compiler test --compile-timeout 2 || { not_ok start "kjitd did not start"; exit 1; }
raw() { "$RAW" "$KJIT_SOCKET" "$@"; }
rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$DAEMON_PID/status"; }
hwm_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$DAEMON_PID/status"; }
nfds() { ls "/proc/$DAEMON_PID/fd" | wc -l; }
one_line() { [ "$(wc -l <"$1")" -eq 1 ] && [ -s "$1" ]; }

# The good client: a hit, over and over, for the whole matrix.
printf '// the good client\nint good;\n' >"$T/good.src"
"$KJIT" get --source "$T/good.src" --backend hip --target gfx90a >/dev/null 2>&1
"$RAW" "$KJIT_SOCKET" good "$T/stop-good" "$T/good.src" >"$T/good.out" 2>&1 &
GOOD_PID=$!

# after NAME: the daemon still answers a ping and serves a hit.
after() {
	"$KJIT" ping >/dev/null 2>&1 || { not_ok "$1: daemon answers ping afterwards" "ping failed"; return; }
	"$KJIT" get --source "$T/good.src" --backend hip --target gfx90a >"$T/after" 2>&1
	if grep -q '^hit ' "$T/after"; then ok "$1: ping and a hit afterwards"; else not_ok "$1: a hit afterwards" "$(cat "$T/after")"; fi
}
# expect NAME FILE PATTERN: FILE is one reply line matching PATTERN.
expect() {
	if one_line "$2" && grep -Eq -- "$3" "$2"; then ok "$1 ($(cut -c1-150 "$2"))"; else not_ok "$1" "got: $(head -c 300 "$2")"; fi
}
fds0=$(nfds)

# ---- framing ----
raw trunc >"$T/r"
expect "truncated frame (header only, then close): daemon drops it silently" "$T/r" '^sent'
after "truncated frame"

hwm0=$(hwm_kb)
raw hdr $((64 * 1024 * 1024 + 1)) 2 1 >"$T/r"
expect "frame over the 64 MiB cap: one error, then closed" "$T/r" 'code=-13 .*over the 67108864-byte limit.*\| closed$'
raw hdr 4294967295 2 1 4096 >"$T/r"
expect "frame of 4 GiB - 1: one error, then closed" "$T/r" 'code=-13 .*over .*\| closed$'
hwm1=$(hwm_kb)
check "frames over the cap allocate nothing (peak RSS $hwm0 -> $hwm1 kB)" [ $((hwm1 - hwm0)) -lt 16384 ]
after "frame over the cap"

raw hdr 0 99 1 >"$T/r"
expect "unknown message type 99: one error, then closed" "$T/r" 'code=-5 .*unknown message type 99.*\| closed$'
raw hdr 0 0x80 1 >"$T/r"
expect "a REPLY sent to the daemon: one error, then closed" "$T/r" 'code=-5 .*unknown message type.*\| closed$'
after "unknown message type"
raw hdr 0 1 2 >"$T/r"
expect "protocol version 2: one error, then closed" "$T/r" 'code=-5 .*protocol version 2 not supported.*\| closed$'
raw hdr 0 1 0 >"$T/r"
expect "protocol version 0: one error, then closed" "$T/r" 'code=-5 .*protocol version 0 not supported.*\| closed$'
after "wrong protocol version"
raw hdr 10 1 1 10 >"$T/r"
expect "malformed body (a field longer than the body): one error, then closed" "$T/r" 'code=-5 .*malformed.*\| closed$'

# A silent client is allowed to stay (the idle timeout is for partial frames).
raw idle 3 >"$T/r"
expect "client silent for 3 s: still served (idle timeout applies to partial frames only)" "$T/r" 'after 3 s idle: reply type=0x80 code=0$'
after "silent client"
if [ "$SLOW" = 1 ]; then
	raw idle 35 >"$T/r"
	expect "client silent for 35 s (> KJ_CLIENT_IDLE_TIMEOUT_MS): still served" "$T/r" 'code=0$'
	raw half 45 >"$T/r"
	expect "half a frame: timeout error after ~30 s, then closed" "$T/r" 'code=-12 .*incomplete after 30 s.* after 3[0-9]\.[0-9] s \| closed$'
	check "half frame: the drop is logged" grep -q 'partial frame sat for 30000 ms' "$T/kjitd.log"
	after "half frame"
else
	echo "# skipped (make stress runs them): silent 35 s, half frame closed after the 30 s idle timeout"
fi

# ---- back-pressure: a client that never reads ----
printf '// big hit\n' >"$T/big.src"
head -c 180000 /dev/zero | tr '\0' 'b' >>"$T/big.src"
"$KJIT" get --source "$T/big.src" --backend hip --target gfx90a >/dev/null 2>&1
rss0=$(rss_kb)
# 1000 GETs of the cached 180 KB object, none read: the daemon must stop
# reading once the first reply is stuck, so the client's sends stall.
"$RAW" "$KJIT_SOCKET" noread 1000 "$T/big.src" 5 >"$T/nr" 2>&1 &
nr_pid=$!
sleep 4
rss1=$(rss_kb)
wait $nr_pid
sent=$(awk '{print $2}' "$T/nr")
total=$(awk '{print $4}' "$T/nr")
check "client that never reads (1000 GETs of a 180 KB object): the daemon stops reading ($(cat "$T/nr"))" \
	[ -n "$sent" ] && [ "$sent" -lt "$total" ]
check "never-reading client: daemon RSS bounded ($rss0 -> $rss1 kB, < +16 MB)" [ $((rss1 - rss0)) -lt 16384 ]
after "never-reading client"
# The same while the object is still compiling (1.5 s, under --compile-timeout 2): no reply is
# outstanding yet, so nothing stops the daemon from reading; every GET joins
# the flight and, when it lands, all their replies are queued at once.
# docs/protocol.md promises one reply outstanding at a time.
printf '#pragma kjit_test sleep 1500\n// never read, slow\n' >"$T/slow.src"
head -c 180000 /dev/zero | tr '\0' 's' >>"$T/slow.src"
rss0=$(rss_kb)
"$RAW" "$KJIT_SOCKET" noread 1000 "$T/slow.src" 4 >"$T/nr2" 2>&1 &
nr_pid=$!
sleep 4
rss1=$(rss_kb)
wait $nr_pid
check "client that never reads, pipelining GETs during a 1.5 s compile: daemon RSS bounded ($rss0 -> $rss1 kB, < +16 MB; $(cut -d'(' -f1 "$T/nr2"))" \
	[ $((rss1 - rss0)) -lt 16384 ]
after "never-reading client during a compile"

# ---- sources ----
: >"$T/empty.src"
"$KJIT" get --source "$T/empty.src" --backend hip --target gfx90a >"$T/r" 2>&1
check "empty source (kjit): exit 1" [ $? -eq 1 ]
expect "empty source (kjit): one line" "$T/r" 'empty'
raw get target=gfx90a src= >"$T/r"
expect "empty source (raw): KJIT_EINVAL" "$T/r" 'code=-2 error=the source is empty$'
after "empty source"

raw get target=gfx90a srcfill=$((4 * 1024 * 1024 + 1)) >"$T/r"
expect "source of 4 MiB + 1 (raw): refused as too big" "$T/r" 'code=-13 .*over the 4194304-byte limit$'
head -c $((4 * 1024 * 1024 + 1)) /dev/zero | tr '\0' 'x' >"$T/huge.src"
"$KJIT" get --source "$T/huge.src" --backend hip --target gfx90a >"$T/r" 2>&1
check "source of 4 MiB + 1 (kjit): exit 1" [ $? -eq 1 ]
expect "source of 4 MiB + 1 (kjit): one line" "$T/r" 'cap|limit|big'
after "source over the cap"
# Sources under the cap must compile (the test family echoes them).
for n in 200000 300000 $((4 * 1024 * 1024 - 1)); do
	raw get target=gfx90a srcfill=$n >"$T/r"
	expect "source of $n bytes (under the cap) compiles" "$T/r" "code=0 status=2 size=$n bytes=same$"
done
after "large sources"

printf '#pragma kjit_test spin\n// spin\n' >"$T/spin.src"
t0=$(date +%s)
"$KJIT" get --source "$T/spin.src" --backend hip --target gfx90a >"$T/r" 2>&1
rc=$?
t1=$(date +%s)
check "spinning compiler: exit 1 after the 2 s timeout ($((t1 - t0)) s)" [ $rc -eq 1 ] && [ $((t1 - t0)) -le 10 ]
expect "spinning compiler: one line saying it timed out" "$T/r" 'time'
check "spinning compiler: counted in stats (errors_timeout)" [ "$(stat_value errors_timeout)" -ge 1 ]
after "spinning compiler"

printf '#pragma kjit_test abort\n// abort\n' >"$T/abort.src"
"$KJIT" get --source "$T/abort.src" --backend hip --target gfx90a >"$T/r" 2>&1
check "aborting compiler: exit 1" [ $? -eq 1 ]
expect "aborting compiler: one line naming the crash" "$T/r" 'crash|signal|abort'
after "aborting compiler"

printf '#pragma kjit_test error\n// error\n' >"$T/err.src"
"$KJIT" get --source "$T/err.src" --backend hip --target gfx90a >"$T/r" 2>&1
check "compile error: exit 1, log then one kjit: line" [ $? -eq 1 ] && [ "$(grep -c '^kjit:' "$T/r")" -eq 1 ]

# ---- includes: refused before compiling, no file content anywhere ----
printf '#include "/etc/passwd"\n' >"$T/inc1.src"
printf '#include "../../x"\n' >"$T/inc2.src"
printf '#include </etc/passwd>\n' >"$T/inc3.src"
printf '#include "x.h"\n' >"$T/inc4.src"
compiles0=$(stat_value compiles)
for f in inc1 inc2 inc3; do
	"$KJIT" get --source "$T/$f.src" --backend hip --target gfx90a >"$T/r.$f" 2>&1
	check "$(head -n 1 "$T/$f.src"): exit 1" [ $? -eq 1 ]
	expect "$(head -n 1 "$T/$f.src"): one line" "$T/r.$f" 'include'
	raw get target=gfx90a srcfile="$T/$f.src" >"$T/raw.$f"
	expect "$(head -n 1 "$T/$f.src") (raw): KJIT_EINCLUDE" "$T/raw.$f" 'code=-14 '
done
# a header named /etc/passwd in the request cannot smuggle it either
raw get target=gfx90a srcfile="$T/inc4.src" hname=/etc/passwd hdata=x >"$T/raw.inc4"
expect "#include \"x.h\" with a request header named /etc/passwd: refused" "$T/raw.inc4" 'code=-14 '
check "includes refused before compiling (no compile counted)" [ "$(stat_value compiles)" = "$compiles0" ]
grep ':' /etc/passwd | grep -v '^$' >"$T/passwd.lines"
leak=no
for f in "$T"/r.inc* "$T"/raw.inc* "$T/kjitd.log"; do
	grep -Fqx -f "$T/passwd.lines" "$f" && leak="$f"
	grep -Fq "$(head -n 1 /etc/passwd)" "$f" && leak="$f"
done
check "no line of /etc/passwd in any reply or in the daemon log" [ "$leak" = no ]
after "includes"

# ---- names and targets ----
# A source name may carry its place in the include tree ("src/x.cu", issue 22),
# never a ".." or an absolute or empty component.
for spec in "name=../x" "name=a/../b" "name=/a" "name=a//b" "name=a/b/" "name=a\\0b" "name=a\\x01b" "name=a\\nb" \
	"entry=../x" "entry=a/b" "entry=a\\0b" "entry=a\\x07b" \
	"kernel=../x" "kernel=a/b" "kernel=a\\0b" "kernel=a\\x1bb"; do
	case $spec in
	kernel=*) raw get target=gfx90a "$spec" >"$T/r" ;;
	*) raw get target=gfx90a "src=int x;" "$spec" >"$T/r" ;;
	esac
	expect "name $(printf '%s' "$spec" | sed 's/\\/\\\\/g'): refused" "$T/r" 'code=-(2|5) error=.*(malformed|NUL)'
done
for spec in "../gfx90a" "gfx90a/x" "gfx90a\\0" "gfx\\n90a" "gfx90a\\x7f" "" "gfx90a:bogus+" "banana" "gfx90a:xnack" "gfx90a::" ; do
	raw get target="$spec" "src=int x;" >"$T/r"
	expect "target '$(printf '%s' "$spec" | sed 's/\\/\\\\/g')': refused" "$T/r" 'code=-(2|5|8) error=.*(target|malformed)'
done
raw get target=gfx90a version=../x "src=int x;" >"$T/r"
expect "version ../x: refused" "$T/r" 'code=-2 error=the runtime version is malformed'
for t in "gfx90a:bogus+" banana "gfx90a/../x" "$(printf 'gfx90a\001')"; do
	"$KJIT" get --source "$T/good.src" --backend hip --target "$t" >"$T/r" 2>&1
	rc=$?
	check "kjit get --target '$t': exit 1 or 2" [ $rc -eq 1 ] || [ $rc -eq 2 ]
	expect "kjit get --target '$t': one line" "$T/r" 'target'
done
"$KJIT" get --kernel ../x --backend vulkan --target vulkan1.2 >"$T/r" 2>&1
check "kjit get --kernel ../x: exit 1 or 2" [ $? -ge 1 ]
expect "kjit get --kernel ../x: one line" "$T/r" 'kernel'
check "no file outside the cache was created by the bad names" [ ! -e "$T/x" ] && [ ! -e "$KJIT_CACHE_DIR/../x" ]
after "names and targets"
echo "# a corrupted object file: covered by tests/e2e/spine.sh (recompiled, never served) and ops.sh (verify)"

# ---- the good client saw nothing of it ----
touch "$T/stop-good"
wait "$GOOD_PID"
GOOD_PID=""
expect "good client served throughout, every answer a hit with the right bytes" "$T/good.out" '^good client: [1-9][0-9]* ok, 0 failed$'
fds1=$(nfds)
check "no descriptor leaked over the matrix ($fds0 -> $fds1)" [ "$fds1" -le "$fds0" ]

# ---- the index, damaged or gone while the daemon is stopped ----
stop_daemon
truncate -s 1000 "$KJIT_CACHE_DIR/index.sqlite"
rm -f "$KJIT_CACHE_DIR/index.sqlite-wal" "$KJIT_CACHE_DIR/index.sqlite-shm"
start_daemon --hip-compiler test --compile-timeout 2 || { not_ok "truncated index: restart" "kjitd did not start"; exit 1; }
check "truncated index.sqlite: warning logged, moved aside" grep -q 'warning: index .* was damaged; moved aside' "$T/kjitd.log"
"$KJIT" get --source "$T/good.src" --backend hip --target gfx90a -o "$T/g.o" >"$T/r" 2>&1
check "truncated index.sqlite: daemon serves (recompiled, same bytes)" cmp -s "$T/g.o" "$T/good.src"
check "truncated index.sqlite: verify clean afterwards" "$KJIT" verify
stop_daemon
rm -f "$KJIT_CACHE_DIR"/index.sqlite*
start_daemon --hip-compiler test --compile-timeout 2 || { not_ok "deleted index: restart" "kjitd did not start"; exit 1; }
"$KJIT" get --source "$T/good.src" --backend hip --target gfx90a -o "$T/g2.o" >"$T/r" 2>&1
check "deleted index.sqlite: daemon serves (same bytes)" cmp -s "$T/g2.o" "$T/good.src"
"$KJIT" get --source "$T/good.src" --backend hip --target gfx90a >"$T/r" 2>&1
check "deleted index.sqlite: then a hit" grep -q '^hit ' "$T/r"
stop_daemon

# ---- a full disk ----
mkdir -p "$FULL"
if mount -t tmpfs -o size=256k tmpfs "$FULL" 2>"$T/mount.err"; then
	mounted=1
	KJIT_CACHE_DIR="$FULL/cache"
	export KJIT_CACHE_DIR
	start_daemon --hip-compiler test --compile-timeout 2 || { not_ok "full disk: start" "kjitd did not start"; exit 1; }
	printf '// before the disk filled\n' >"$T/pre.src"
	"$KJIT" get --source "$T/pre.src" --backend hip --target gfx90a >/dev/null 2>&1
	# (the publish follows the reply: wait until it is a hit before filling the disk)
	i=0
	until "$KJIT" get --source "$T/pre.src" --backend hip --target gfx90a 2>&1 | grep -q '^hit ' || [ $i -gt 50 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	dd if=/dev/zero of="$FULL/filler" bs=4k 2>/dev/null
	pe0=$(stat_value publish_errors)
	head -c 20000 /dev/zero | tr '\0' 'f' >"$T/full.src"
	"$KJIT" get --source "$T/full.src" --backend hip --target gfx90a -o "$T/full.o" >"$T/r" 2>&1
	rc=$?
	check "full disk: the compile still returns its object (exit $rc)" [ $rc -eq 0 ] && cmp -s "$T/full.o" "$T/full.src"
	check "full disk: counted in stats publish_errors ($pe0 -> $(stat_value publish_errors))" \
		[ "$(stat_value publish_errors)" -gt "${pe0:-0}" ]
	check "full disk: the error is logged" grep -q 'could not store' "$T/kjitd.log"
	check "full disk: no temporary file left" [ -z "$(find "$FULL/cache" -name '*.tmp*')" ]
	"$KJIT" get --source "$T/pre.src" --backend hip --target gfx90a >"$T/r" 2>&1
	check "full disk: earlier objects still served as hits" grep -q '^hit ' "$T/r"
	rm -f "$FULL/filler"
	"$KJIT" get --source "$T/full.src" --backend hip --target gfx90a >/dev/null 2>&1
	"$KJIT" get --source "$T/full.src" --backend hip --target gfx90a >"$T/r" 2>&1
	check "full disk: once space is back, stored again (then a hit)" grep -q '^hit ' "$T/r"
	check "full disk: verify clean" "$KJIT" verify
	stop_daemon
else
	not_ok "full disk" "cannot mount a tmpfs here ($(cat "$T/mount.err")): the full-disk case was NOT tested"
fi
finish
