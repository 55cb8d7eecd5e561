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
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/${BUILD:-build}/bench"
OLD=$1 NEW=$2 N=${N:-20}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-rcompat.XXXXXX")
export KJIT_NO_AUTOSTART=1
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.5
	rm -rf "$T"
}
trap cleanup EXIT
RS="$T/redis.sock"
redis-server --port 0 --unixsocket "$RS" --unixsocketperm 700 --save "" --appendonly no --dir "$T" \
	--logfile "$T/redis.log" &
PIDS="$PIDS $!"
until [ "$(redis-cli -s "$RS" ping 2>/dev/null)" = PONG ]; do sleep 0.05; done
mkdir -p "$T/k"
head -c 300000 /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c 300000 >"$T/k/blob.src"
echo "blob hip blob.src main" >"$T/k/MANIFEST"
node() { # NAME KJITD
	local out
	out=$("$BIN/bench-startd" "$T/$1.sock" 120 -- "$2" --foreground --socket "$T/$1.sock" --cache-dir "$T/$1" \
		--log "$T/$1.log" --hip-compiler test --kernels-dir "$T/k" --remote "unix://$RS" \
		--remote-lookup-timeout 500) || { echo "kjitd $1 did not start" >&2; exit 1; }
	PIDS="$PIDS ${out#* }"
}
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
