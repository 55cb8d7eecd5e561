#!/bin/sh
# entries.sh: entry points leave the key of NVRTC, hiprtc and nvcc objects
# (issue 25; docs/cache.md, "Entry points").  With the real compilers:
#   - N requests for different entries of one module: 1 compile, 1 object,
#     one key; the repeats are hits (socket and memo paths alike)
#   - the same N at once: one compile, every answer the same key
#   - an entry the module lacks: one line naming it and the entries there
#     are, from the compile and from the cache, never a compile again
#   - an old cache: an object under the legacy key (entries in it) and an
#     index of schema 4 still serve, the entries column filled on first use
#   - the fleet: a node asking for another entry of a module another node
#     compiled gets a remote hit (the value lists the module's entries)
# A compiler not installed here is said, and its checks skipped.
. "$(dirname "$0")/lib.sh"

# wait_row KEY: the index row and file are written when the publish (off
# kjitd's loop) finishes, after the answer: wait for the row (5 s at most).
wait_row() {
	_i=0
	while [ -z "$(sqlite3 "$KJIT_CACHE_DIR/index.sqlite" "SELECT 1 FROM objects WHERE key = '$1'" 2>/dev/null)" ] &&
		[ $_i -lt 100 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
}

have_nvrtc=0 have_hiprtc=0
ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && have_nvrtc=1
ldconfig -p 2>/dev/null | grep -q 'libamdhip64\.so\|libhiprtc\.so' && have_hiprtc=1

# get ARGS...: "STATUS KEY" of `kjit get`, or "error" (stderr in $T/err).
get() {
	"$KJIT" get "$@" >"$T/out" 2>"$T/err" && cut -d' ' -f1,2 "$T/out" || echo error
}
status() { echo "$1" | cut -d' ' -f1; }
key() { echo "$1" | cut -d' ' -f2; }
module() { # FILE TAG: a module of three kernels
	printf 'extern "C" __global__ void ka_%s(float *x) { x[0] = 1.f; }\n' "$2" >"$1"
	printf 'extern "C" __global__ void kb_%s(float *x) { x[0] = 2.f; }\n' "$2" >>"$1"
	printf 'extern "C" __global__ void kc_%s(float *x) { x[0] = 3.f; }\n' "$2" >>"$1"
}

# family NAME BACKEND TARGET EXT [get options]: the checks for one compiler
family() {
	fam=$1 be=$2 tg=$3 ext=$4
	shift 4
	src="$T/$fam.cu"
	module "$src" "$fam"
	c0=$(stat_value compiles)
	a=$(get --source "$src" --backend "$be" --target "$tg" --entry "ka_$fam" "$@")
	check "$fam: the first entry compiles" [ "$(status "$a")" = compiled ]
	[ "$(status "$a")" = compiled ] || sed 's/^/# /' "$T/err"
	b=$(get --source "$src" --backend "$be" --target "$tg" --entry "kb_$fam" "$@")
	check "$fam: another entry of the module is a hit of the same key" [ "$b" = "hit $(key "$a")" ]
	b=$(get --source "$src" --backend "$be" --target "$tg" --entry "kc_$fam" --entry "ka_$fam" "$@")
	check "$fam: two entries at once: the same hit" [ "$b" = "hit $(key "$a")" ]
	b=$(get --source "$src" --backend "$be" --target "$tg" "$@")
	check "$fam: no entry: the same hit" [ "$b" = "hit $(key "$a")" ]
	b=$(get --source "$src" --backend "$be" --target "$tg" --entry "kb_$fam" "$@")
	check "$fam: a repeat (the memo) is the same hit" [ "$b" = "hit $(key "$a")" ]
	check "$fam: 1 compile" [ "$(stat_value compiles)" = $((c0 + 1)) ]
	wait_row "$(key "$a")"
	check "$fam: 1 object" [ "$(ls "$KJIT_CACHE_DIR"/*/*."$ext" | grep -c "$(key "$a")")" = 1 ] &&
		[ "$("$KJIT" ls | grep -c "$fam.cu")" = 1 ]
	check "$fam: the index lists the module's entries" [ "$(sqlite3 "$KJIT_CACHE_DIR/index.sqlite" \
		"SELECT entries FROM objects WHERE key = '$(key "$a")'" | grep . | sort | tr '\n' ' ')" = "ka_$fam kb_$fam kc_$fam " ]
	for i in 1 2; do
		x=$(get --source "$src" --backend "$be" --target "$tg" --entry "kd_$fam" "$@")
		check "$fam: a missing entry, try $i: one line naming it and what there is" sh -c "[ '$x' = error ] &&
			[ \$(wc -l <'$T/err') = 1 ] && grep -q \"no entry point 'kd_$fam'.*it has: .*ka_$fam\" '$T/err'"
	done
	check "$fam: and no compile for it" [ "$(stat_value compiles)" = $((c0 + 1)) ]
	# N at once, for a new module: one compile, one key; one asks a missing entry
	src2="$T/${fam}2.cu"
	module "$src2" "${fam}2"
	c0=$(stat_value compiles)
	pids=
	k=0
	for e in ka kb kc kd ka kb; do
		k=$((k + 1))
		"$KJIT" get --source "$src2" --backend "$be" --target "$tg" --entry "${e}_${fam}2" "$@" \
			>"$T/par.$e.$k" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	check "$fam: 6 at once: 1 compile" [ "$(stat_value compiles)" = $((c0 + 1)) ]
	check "$fam: 5 served one key" [ "$(cat "$T"/par.k[abc].* | cut -d' ' -f2 | sort -u | wc -l)" = 1 ] &&
		[ "$(cat "$T"/par.k[abc].* | grep -c '^[a-z ]* [0-9a-f]\{64\} ')" = 5 ]
	check "$fam: the missing one its error" grep -q "no entry point 'kd_${fam}2'" "$T"/par.kd.*
	# its bytes opened or joined the flight: never in the shared hit table
	x=$(get --source "$src2" --backend "$be" --target "$tg" --entry "kd_${fam}2" "$@")
	check "$fam: its repeat (fast path first) still its error" [ "$x" = error ]
	x=$(get --source "$src2" --backend "$be" --target "$tg" --entry "kb_${fam}2" "$@")
	check "$fam: a joiner's repeat a hit" [ "$(status "$x")" = hit ]
	rm -f "$T"/par.*
}

start_daemon || { not_ok start "kjitd did not start"; exit 1; }
if [ $have_nvrtc = 1 ]; then
	family nvrtc cuda sm_90 cubin
else
	echo "# skip entries nvrtc: NVRTC not installed"
fi
if [ $have_hiprtc = 1 ]; then
	family hiprtc hip gfx90a hsaco
else
	echo "# skip entries hiprtc: hiprtc not installed"
fi
if [ $have_nvrtc = 1 ] && [ -x /usr/local/cuda/bin/nvcc ]; then
	family nvcc cuda sm_90 cubin --compiler nvcc
else
	echo "# skip entries nvcc: no CUDA toolkit"
fi

# ---- an old cache: the legacy key, schema 4 ----
if [ $have_nvrtc = 1 ]; then
	src="$T/old.cu"
	module "$src" old
	a=$(get --source "$src" --backend cuda --target sm_90 --entry ka_old)
	k0=$(key "$a")
	# a cache written by this kjit holds no legacy key: none is computed
	# (a second SHA-256 of every source with entries, cache/index.c)
	check "new cache: no legacy key computed (legacy_keys $(stat_value legacy_keys))" [ "$(stat_value legacy_keys)" = 0 ]
	# the key kjit gave this request before: the same encoding with the
	# entries in it (docs/cache.md), then the object moved under it and the
	# index put back to schema 4, as the kjit before this one left it
	wait_row "$k0"
	row=$(sqlite3 -separator '|' "$KJIT_CACHE_DIR/index.sqlite" "SELECT version, compiler FROM objects WHERE key = '$k0'")
	k1=$(python3 - "$src" "$row" <<'EOF'
import hashlib, struct, sys
def f(tag, b):
    b = b.encode() if isinstance(b, str) else b
    return bytes([tag]) + struct.pack('<Q', len(b)) + b
version, compiler = sys.argv[2].split('|', 1)
m = b'kjit-key-v1' + f(1, 'cuda') + f(2, compiler) + f(3, 'sm_90') + f(4, version) + f(6, 'ka_old') \
    + f(7, open(sys.argv[1], 'rb').read())
print(hashlib.sha256(m).hexdigest())
EOF
)
	stop_daemon
	mv "$KJIT_CACHE_DIR"/sm_90-*/"$k0.cubin" "$T/obj"
	mv "$T/obj" "$(dirname "$(ls "$KJIT_CACHE_DIR"/sm_90-*/*.cubin | head -n 1)")/$k1.cubin"
	sqlite3 "$KJIT_CACHE_DIR/index.sqlite" "UPDATE objects SET key = '$k1' WHERE key = '$k0';
		ALTER TABLE objects DROP COLUMN entries; PRAGMA user_version=4;"
	start_daemon || { not_ok start "kjitd did not start on the schema 4 index"; exit 1; }
	check "old cache: schema 4 upgraded to 6" [ "$(sqlite3 "$KJIT_CACHE_DIR/index.sqlite" 'PRAGMA user_version')" = 6 ]
	c0=$(stat_value compiles)
	b=$(get --source "$src" --backend cuda --target sm_90 --entry ka_old)
	check "old cache: the request's object, under its legacy key, is a hit ($b)" [ "$b" = "hit $k1" ]
	check "old cache: its legacy key computed (legacy_keys $(stat_value legacy_keys))" [ "$(stat_value legacy_keys)" -ge 1 ]
	check "old cache: its entries filled on that first use" [ "$(sqlite3 "$KJIT_CACHE_DIR/index.sqlite" \
		"SELECT entries FROM objects WHERE key = '$k1'" | grep . | sort | tr '\n' ' ')" = "ka_old kb_old kc_old " ]
	b=$(get --source "$src" --backend cuda --target sm_90 --entry ka_old)
	check "old cache: its repeat too" [ "$b" = "hit $k1" ]
	x=$(get --source "$src" --backend cuda --target sm_90 --entry kb_old)
	check "old cache: another entry compiles once under the new key" [ "$x" = "compiled $k0" ]
	check "old cache: 1 compile" [ "$(stat_value compiles)" = $((c0 + 1)) ]
fi
stop_daemon

# ---- an object whose entries cannot be listed: no legacy key after it ----
# The test family echoes its source: no symbols, so its row has no entries.
# A publish is under the key this kjit computed, so later requests with
# entries must not pay a legacy key's second SHA-256 (issue 35, round ten).
stop_daemon
old_cache=$KJIT_CACHE_DIR
KJIT_CACHE_DIR="$T/cache-nolist"
start_daemon --hip-compiler test ||
	{ not_ok start "kjitd (test family) did not start"; exit 1; }
printf 'one\n' >"$T/nolist1.hip"
printf 'two\n' >"$T/nolist2.hip"
a=$(get --source "$T/nolist1.hip" --backend hip --target gfx90a --entry main)
check "unlisted: the first compiles ($a)" [ "$(status "$a")" = compiled ]
wait_row "$(key "$a")"
check "unlisted: its row has no entries" [ "$(sqlite3 "$T/cache-nolist/index.sqlite" \
	"SELECT entries IS NULL FROM objects WHERE key = '$(key "$a")'")" = 1 ]
b=$(get --source "$T/nolist2.hip" --backend hip --target gfx90a --entry main)
check "unlisted: another with entries compiles ($b)" [ "$(status "$b")" = compiled ]
check "unlisted: no legacy key computed for it (legacy_keys $(stat_value legacy_keys))" [ "$(stat_value legacy_keys)" = 0 ]
stop_daemon
KJIT_CACHE_DIR=$old_cache
start_daemon || { not_ok start "kjitd did not start again"; exit 1; }

# ---- the fleet: another node, another entry of the module ----
if [ $have_nvrtc = 1 ] && command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
	RS="$T/redis.sock"
	redis-server --port 0 --unixsocket "$RS" --unixsocketperm 700 --save "" --appendonly no --dir "$T" \
		--logfile "$T/redis.log" &
	REDIS_PID=$!
	i=0
	until [ "$(redis-cli -s "$RS" ping 2>/dev/null)" = PONG ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
	head -c 32 /dev/urandom | base64 >"$T/secret"
	chmod 600 "$T/secret"
	P1= P2=
	fleet_cleanup() {
		for p in $P1 $P2; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
		kill "$REDIS_PID" 2>/dev/null
		wait "$REDIS_PID" 2>/dev/null
		cleanup
	}
	trap fleet_cleanup EXIT INT TERM
	mkdir -p "$T/n"
	for n in 1 2; do
		"$KJITD" --foreground --socket "$T/n/$n.sock" --cache-dir "$T/c/$n" --log "$T/log.$n" \
			--remote "unix://$RS" --remote-secret "$T/secret" --remote-timeout 3000 &
		eval "P$n=$!"
		i=0
		until KJIT_SOCKET="$T/n/$n.sock" "$KJIT" ping >/dev/null 2>&1 || [ $i -ge 300 ]; do sleep 0.05; i=$((i + 1)); done
	done
	src="$T/fleet.cu"
	module "$src" fleet
	a=$(KJIT_SOCKET="$T/n/1.sock" get --source "$src" --backend cuda --target sm_90 --entry ka_fleet)
	check "fleet: node 1 compiles one entry" [ "$(status "$a")" = compiled ]
	i=0
	until [ "$(redis-cli -s "$RS" exists "kjit:v2:$(key "$a")")" = 1 ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
	b=$(KJIT_SOCKET="$T/n/2.sock" get --source "$src" --backend cuda --target sm_90 --entry kc_fleet)
	check "fleet: node 2 asking another entry gets a remote hit ($b)" [ "$(echo "$b" | cut -d' ' -f1-2)" = "remote hit" ]
	x=$(KJIT_SOCKET="$T/n/2.sock" get --source "$src" --backend cuda --target sm_90 --entry kz_fleet)
	check "fleet: a missing entry on node 2: its error, no compile" sh -c "[ '$x' = error ] &&
		grep -q \"no entry point 'kz_fleet'\" '$T/err' && ! grep -q 'remote forged' '$T/log.2'"
else
	echo "# skip entries fleet: NVRTC, redis-server or redis-cli not installed"
fi
[ "$FAILS" = 0 ]
