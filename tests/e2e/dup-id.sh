#!/bin/sh
# dup-id.sh: a request id reused on one connection cannot get a client
# around its uid's byte budget (--max-request-bytes-per-uid).  A request's
# bytes stay charged until it is answered (daemon/net/conn.c); a second frame
# with the id of one in flight, refused as over the budget, gets its busy
# reply at once, and that reply must not release the first request's
# charge: else a third request that does not fit is let in.  The control
# sends the same without the second frame.  tests/e2e/dupid.py plays the
# client with raw frames.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3) || { echo "# skip dup-id: no python3"; exit 0; }
# 16 requests of S = 64 KiB waiting to compile hold about 3 S each (the
# frame until answered, the flight's source and recipe), 48 S in all; the
# budget is 50.5 S.  A request of 3 S then does not fit; had 16 busy replies
# each released one of the 16 frames' charges, it would (32 S + 5 x 3 S).
start_daemon --hip-compiler test --jobs 1 --max-request-bytes-per-uid 3232K || exit 1
"$PY" "$TOP/tests/e2e/dupid.py" "$KJIT_SOCKET" 65536 16 0 >"$T/control" 2>&1
stop_daemon
start_daemon --hip-compiler test --jobs 1 --max-request-bytes-per-uid 3232K || exit 1
"$PY" "$TOP/tests/e2e/dupid.py" "$KJIT_SOCKET" 65536 16 1 >"$T/attack" 2>&1
check "control: the request over the budget is refused busy ($(tr '\n' ' ' <"$T/control"))" \
	grep -q '^6 -17$' "$T/control"
check "reused ids: each second id 5 is refused busy ($(grep -c '^5 -17$' "$T/attack") of 16)" \
	[ "$(grep -c '^5 -17$' "$T/attack")" = 16 ]
check "reused ids: their replies released nothing, so id 6 is refused as well ($(tail -n 1 "$T/attack"))" \
	grep -q '^6 -17$' "$T/attack"
check "kjitd still serves" "$KJIT" ping
stop_daemon
finish
