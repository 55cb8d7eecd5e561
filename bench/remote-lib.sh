# bench/remote-lib.sh: what remote-ab.sh and remote-compat.sh share, sourced
# by them (bash): a temporary folder $T removed on exit with every process
# in $PIDS, a private redis-server on the Unix socket $RS, the test
# family's blob kernels in $T/k, and kjitd nodes on that Redis.  Needs
# `make bench-bins`.  With KEEP set, $T (logs included) is kept and named.
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/${BUILD:-build}/bench"
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-remote.XXXXXX")
export KJIT_NO_AUTOSTART=1
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.5
	if [ -n "${KEEP:-}" ]; then echo "kept: $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
RS="$T/redis.sock"
redis-server --port 0 --unixsocket "$RS" --unixsocketperm 700 --save "" --appendonly no --dir "$T" \
	--logfile "$T/redis.log" &
PIDS="$PIDS $!"
until [ "$(redis-cli -s "$RS" ping 2>/dev/null)" = PONG ]; do sleep 0.05; done
mkdir -p "$T/k"
: >"$T/k/MANIFEST"

# blob NAME BYTES: a hip kernel NAME of BYTES random hex characters (the test
# compiler's object holds its source, so the object is as large).
blob() {
	head -c "$2" /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c "$2" >"$T/k/$1.src"
	echo "$1 hip $1.src main" >>"$T/k/MANIFEST"
}

# fat NAME SRCBYTES OBJBYTES: a hip kernel NAME whose SRCBYTES source (hex
# text) makes an OBJBYTES object (the test compiler's size directive).
fat() {
	{ printf '#pragma kjit_test size %s\n' "$3"; head -c "$2" /dev/urandom | od -An -tx1 -v | tr -d ' \n' |
		head -c "$2"; } >"$T/k/$1.src"
	echo "$1 hip $1.src main" >>"$T/k/MANIFEST"
}

# node NAME KJITD [options]: a kjitd of the build KJITD on $T/NAME.sock with
# its own cache, the test compiler, the blobs and the Redis ($LOOKUP_MS, the
# remote lookup's timeout, default 200 ms: a loaded machine must not turn a
# remote hit into a compile); options after KJITD go to it.
node() {
	local name=$1 kjitd=$2 out
	shift 2
	out=$("$BIN/bench-startd" "$T/$name.sock" 120 -- "$kjitd" --foreground --socket "$T/$name.sock" \
		--cache-dir "$T/$name" --log "$T/$name.log" --hip-compiler test --kernels-dir "$T/k" \
		--remote "unix://$RS" --remote-lookup-timeout "${LOOKUP_MS:-200}" "$@") ||
		{ echo "kjitd $name did not start" >&2; exit 1; }
	PIDS="$PIDS ${out#* }"
	eval "PID_$name=${out#* }"
}

# cpu_ms NAME: the CPU time (user + system, ms) node NAME has used so far.
cpu_ms() {
	local pid
	pid=$(eval "echo \$PID_$1")
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$pid/stat"
}
