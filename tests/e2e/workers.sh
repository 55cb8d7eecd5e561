#!/bin/sh
# workers.sh: no uid holds a compiler family's workers from the others, and
# a worker cannot be held by a job that makes no progress or keeps a
# compile's memory (issue 29 item 6), with the test family's compiler:
#   1. two uids contending for --jobs 2: while one uid's two slow compiles
#      (8 s, no CPU) hold both workers, another uid's trivial miss is
#      compiled within 4 s (one more worker starts for it: --worker-share
#      50 %), not after the 8 s;
#   2. a compile that uses no CPU (sleeping, as nvcc blocked reading
#      /proc/self/fd/2) fails after --job-idle-timeout 2, with one line
#      saying so, long before the compile timeout;
#   3. a worker that keeps 128 MiB after its job is replaced under
#      --worker-max-rss 64M, and the next compile is served;
#   4. /proc and /dev paths never reach a compiler: a raw GET (no client
#      checks) with a header named /proc/self/fd/2, or //dev/./stdin, is
#      refused with one line; so is a source including one.
# The second uid is a temporary user (root only; as another user part 1 is
# said skipped).  Docs: docs/reliability.md ("Workers").
. "$(dirname "$0")/lib.sh"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
mkdir -p "$T/src" && chmod 0755 "$T" "$T/src"

# ---- 1. two uids contending for the workers ----
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	OTH="kjwk$$"
	trap 'stop_daemon; userdel "$OTH" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
	useradd -M -N -g nogroup -s /bin/sh "$OTH" || { not_ok users "cannot create a user"; exit 1; }
	KJITC="$T/kjit"
	cp "$KJIT" "$KJITC" && chmod 0755 "$KJITC"
	start_daemon --hip-compiler test --jobs 2 --allow-uid "$(id -u "$OTH")" ||
		{ not_ok start "kjitd did not start"; exit 1; }
	chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"
	for i in 1 2; do
		printf '#pragma kjit_test sleep 8000\n// slow %s %s\n' "$i" "$$" >"$T/src/slow$i.hip"
	done
	printf 'int quick_%s;\n' "$$" >"$T/src/quick.hip"
	chmod 0644 "$T"/src/*
	t0=$(now_ms)
	spids=""
	for i in 1 2; do
		setpriv --reuid="$OTH" --regid=nogroup --clear-groups env KJIT_SOCKET="$KJIT_SOCKET" KJIT_NO_AUTOSTART=1 \
			HOME=/ "$KJITC" get --source "$T/src/slow$i.hip" --backend hip --target gfx90a -o /dev/null \
			>"$T/slow$i.out" 2>&1 &
		spids="$spids $!"
	done
	# both workers busy with the other uid's compiles
	i=0
	while ! "$KJIT" stats 2>/dev/null | grep -q "^workers test .*busy 2" && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	check "fair: the other uid holds both workers" sh -c "'$KJIT' stats | grep -q '^workers test .*busy 2'"
	q0=$(now_ms)
	"$KJIT" get --source "$T/src/quick.hip" --backend hip --target gfx90a -o /dev/null >"$T/quick.out" 2>&1
	q1=$(now_ms)
	echo "# the trivial miss took $((q1 - q0)) ms while the other uid's 8 s compiles held the 2 workers"
	check "fair: the trivial miss compiled" grep -q '^compiled' "$T/quick.out"
	check "fair: the trivial miss within 4 s" [ $((q1 - q0)) -lt 4000 ]
	for p in $spids; do wait "$p"; done
	check "fair: the slow compiles finished" sh -c "grep -q '^compiled' '$T/slow1.out' && grep -q '^compiled' '$T/slow2.out'"
	"$KJIT" stats >"$T/stats1" 2>&1
	check "fair: the extra worker retired" grep -q "^workers test *alive [0-2] " "$T/stats1"
	stop_daemon
else
	echo "# skip fair: needs root, useradd and setpriv (a second uid)"
fi

# ---- 2. a job that makes no CPU progress ----
start_daemon --hip-compiler test --jobs 1 --job-idle-timeout 2 || { not_ok start "kjitd did not start"; exit 1; }
printf '#pragma kjit_test sleep 30000\n// idle %s\n' "$$" >"$T/src/idle.hip"
t0=$(now_ms)
"$KJIT" get --source "$T/src/idle.hip" --backend hip --target gfx90a -o /dev/null >"$T/idle.out" 2>&1
t1=$(now_ms)
echo "# a job sleeping 30 s failed after $((t1 - t0)) ms (--job-idle-timeout 2)"
check "idle: the job failed, saying why" grep -q "used no CPU for 2000 ms" "$T/idle.out"
check "idle: within 6 s" [ $((t1 - t0)) -lt 6000 ]
printf 'int next_%s;\n' "$$" >"$T/src/next.hip"
"$KJIT" get --source "$T/src/next.hip" --backend hip --target gfx90a -o /dev/null >"$T/after.out" 2>&1
check "idle: the next compile is served" grep -q '^compiled\|^hit' "$T/after.out"
stop_daemon

# ---- 3. a worker that keeps a compile's memory ----
start_daemon --hip-compiler test --jobs 1 --worker-max-rss 64M || { not_ok start "kjitd did not start"; exit 1; }
printf '#pragma kjit_test alloc 128\n// big %s\n' "$$" >"$T/src/big.hip"
"$KJIT" get --source "$T/src/big.hip" --backend hip --target gfx90a -o /dev/null >"$T/big.out" 2>&1
check "rss: the big job compiled" grep -q '^compiled' "$T/big.out"
check "rss: its worker replaced" grep -q "kept [0-9]* MiB after its job, over --worker-max-rss 64 MiB: replaced" \
	"$T/kjitd.log"
printf 'int after_%s;\n' "$$" >"$T/src/after.hip"
"$KJIT" get --source "$T/src/after.hip" --backend hip --target gfx90a -o /dev/null >"$T/after2.out" 2>&1
check "rss: the next compile is served" grep -q '^compiled' "$T/after2.out"
check "rss: by a new worker" sh -c "'$KJIT' stats | grep -q '^workers test .*started 2 '"

# ---- 4. /proc and /dev paths refused before a compiler ----
RAW="$T/rawclient"
build_helper rawclient "$RAW" || exit 1
"$RAW" "$KJIT_SOCKET" get backend=1 target=gfx90a name=p.hip 'src=#include "x.h"\n' \
	hname=/proc/self/fd/2 hdata=x >"$T/raw1.out" 2>&1
check "proc: a /proc header name refused with one line" sh -c \
	"grep -q 'a header named under /proc or /dev is refused: such paths never reach a compiler' '$T/raw1.out' && [ \$(wc -l <'$T/raw1.out') -eq 1 ]"
"$RAW" "$KJIT_SOCKET" get backend=1 target=gfx90a name=p.hip 'src=int v;\n' hname=//dev/./stdin hdata=x >"$T/raw2.out" 2>&1
check "proc: a /dev header name refused" grep -q 'under /proc or /dev is refused' "$T/raw2.out"
"$RAW" "$KJIT_SOCKET" get backend=1 target=gfx90a name=p.hip 'src=#include "/proc/self/fd/2"\n' >"$T/raw3.out" 2>&1
check "proc: a /proc include refused" grep -q 'reply .*code=-[0-9]* error=.*/proc/self/fd/2' "$T/raw3.out"
check "proc: no compile started" sh -c "! grep -q 'compile .*p.hip' '$T/kjitd.log'"
stop_daemon
finish
