#!/bin/sh
# flood-replies.sh: issue 21's unread-replies flood against a kjitd with its
# default budgets (bench/RESULTS.md, "Issue 21").  8 connections each
# pipeline 255 GETs of one not yet compiled 480 KB object (test compiler,
# 1 s compile) and never read; prints kjitd's RSS before, during (with its
# peak) and after, and how long another request took meanwhile.
#   BUILD=build sh bench/flood-replies.sh [CONNS] [REQS] [BYTES]
. "$(dirname "$0")/../tests/e2e/lib.sh"
TOP=$(cd "$(dirname "$0")/.." && pwd) # lib.sh assumes a script two levels down
KJIT="$TOP/$BUILD/kjit" KJITD="$TOP/$BUILD/kjitd"
export KJIT_KJITD="$KJITD"
CONNS=${1:-8} REQS=${2:-255} BYTES=${3:-491520}
start_daemon --hip-compiler test --jobs 2 || exit 1
kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$DAEMON_PID/status"; }
printf '__global__ void warm() {}\n' >"$T/w.hip"
"$KJIT" get --source "$T/w.hip" --backend hip --target gfx90a -o "$T/w.out" >/dev/null || exit 1
sleep 1
echo "before: RSS $(kb VmRSS) kB"
python3 "$TOP/tests/e2e/flood.py" "$KJIT_SOCKET" "$CONNS" "$REQS" "$BYTES" 1000 "$T/ready" 8 &
FP=$!
while [ ! -f "$T/ready" ]; do sleep 0.1; done
sleep 3
echo "during: RSS $(kb VmRSS) kB, peak $(kb VmHWM) kB ($CONNS x $REQS unread replies of $BYTES bytes)"
printf '__global__ void k() {}\n' >"$T/b.hip"
t0=$(date +%s%N)
timeout 10 "$KJIT" get --source "$T/b.hip" --backend hip --target gfx90a -o "$T/b.out" >/dev/null
echo "another request meanwhile: rc $?, $((($(date +%s%N) - t0) / 1000000)) ms"
wait $FP
sleep 2
echo "after: RSS $(kb VmRSS) kB, peak $(kb VmHWM) kB"
