#!/bin/bash
# bench/remote-compat.sh OLD_KJITD NEW_KJITD: whether two kjitd builds read
# each other's fleet values (a rolling upgrade), without a secret, on one
# private redis-server: OLD compiles and publishes N salted keys and NEW must
# answer each as a remote hit, then NEW publishes and OLD must.  Prints
# "ok"/"not ok" per direction and each node's remote counters (corrupt,
# forged).  For a change to the value layout (docs/remote.md, "Old and new
# nodes"); needs `make bench-bins`, the old build made from a checkout of
# the older commit (git archive | tar -x; make build/kjitd).
set -u
OLD=$1 NEW=$2 N=${N:-20}
LOOKUP_MS=500
. "$(dirname "$0")/remote-lib.sh"
blob blob 300000
node O "$OLD"
node N "$NEW"
way() { # LABEL WRITER READER SALT
	redis-cli -s "$RS" flushall >/dev/null
	KJIT_SOCKET="$T/$2.sock" "$BIN/bench-hitlat" --kernel blob --backend hip --target gfx90a --salt "$4" -n "$N" -w 0 \
		>/dev/null || { echo "not ok $1: the writer failed"; return; }
	local i=0
	while [ "$(redis-cli -s "$RS" dbsize)" -lt "$N" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	if KJIT_SOCKET="$T/$3.sock" "$BIN/bench-hitlat" --kernel blob --backend hip --target gfx90a --salt "$4" -n "$N" \
		-w 0 --want remote >/dev/null; then
		echo "ok $1: $N remote hits"
	else
		echo "not ok $1"
	fi
}
way "old writes, new reads" O N 1000
way "new writes, old reads" N O 2000
for n in O N; do
	echo "$n: $(KJIT_SOCKET="$T/$n.sock" "$TOP/${BUILD:-build}/kjit" stats --json |
		grep -o '"\(hits\|corrupt\|forged\|publishes\)":[0-9]*' | tr '\n' ' ')"
done
