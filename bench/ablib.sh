# bench/ablib.sh: what the A/B bench scripts (issue25.sh, offhash.sh,
# publish.sh) share, sourced after they set T (their temporary folder),
# BIN (the bench programs) and KJIT (the kjit command).  One kjitd at a
# time: start_daemon KJITD NAME [options] starts it on $T/NAME.sock with the
# cache $T/NAME (kept if there), exports KJIT_SOCKET and KJIT_CACHE_DIR for
# the clients, and sets DPID and START_MS (its start to first ping);
# stop_daemon stops it, by `kjit stop`, else a signal.

DPID=""
START_MS=""

stop_daemon() {
	[ -n "$DPID" ] || return 0
	"$KJIT" stop >/dev/null 2>&1 || kill "$DPID" 2>/dev/null
	local i=0
	while kill -0 "$DPID" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
	kill -9 "$DPID" 2>/dev/null
	DPID=""
}

start_daemon() { # KJITD NAME [options]
	local k=$1 name=$2 out
	shift 2
	export KJIT_SOCKET="$T/$name.sock" KJIT_CACHE_DIR="$T/$name"
	out=$("$BIN/bench-startd" "$KJIT_SOCKET" 300 -- "$k" --foreground --socket "$KJIT_SOCKET" \
		--cache-dir "$KJIT_CACHE_DIR" --log "$T/$name.log" --max-size 100G "$@") ||
		{ echo "kjitd $name did not start" >&2; exit 1; }
	START_MS=${out% *}
	DPID=${out#* }
}
