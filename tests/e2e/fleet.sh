#!/bin/sh
# The fleet tier end to end (docs/remote.md): several kjitd, each with its
# own cache directory, on one real redis-server that this test starts on a
# private Unix socket and stops at exit (even on failure).  The remote's
# per-operation timeout is raised to 3 s: on a loaded machine 200 ms can
# pass, and a timed-out lookup or lease is (by design) a node compiling
# alone, which these checks would count as a second compile.  The test
# compiler family (`--hip-compiler test`, compilers/testcomp.c) compiles:
# its "#pragma kjit_test sleep N" makes a compile slow on purpose.
#   - compiled on A is a `remote hit` on B (same bytes, no compile on B),
#     then a local hit after B restarts; `kjit show` works there
#   - ten daemons asked at once for one source: one compile in the fleet
#   - the lease owner SIGKILLed mid-compile: another takes over
#   - a corrupt value planted in Redis: not served, counted, overwritten
#   - a failed compile releases the lease at once
#   - Redis stopped mid-run and restarted: every request answered, the
#     remote resumes, stats show the outage
#   - --remote-mode ro never writes (INFO commandstats)
#   - --no-compile refuses a miss with the promised line, serves an import
#   - kjit warm --remote-only fills a cache without compiling
. "$(dirname "$0")/lib.sh"

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	echo "ok fleet # SKIP redis-server/redis-cli not installed (scripts/deps.sh installs them)"
	exit 0
fi

RS="$T/redis.sock"
REDIS_PID=""
NODES=""

start_redis() {
	redis-server --port 0 --unixsocket "$RS" --unixsocketperm 700 --save "" --appendonly no \
		--dir "$T" --logfile "$T/redis.log" &
	REDIS_PID=$!
	i=0
	while [ $i -lt 200 ]; do
		[ "$(redis-cli -s "$RS" ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
stop_redis() {
	[ -n "$REDIS_PID" ] || return 0
	kill "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	REDIS_PID=""
}
rcli() { redis-cli -s "$RS" "$@"; }

# node N [kjitd options]: starts kjitd number N (socket n/N.sock, cache c/N)
# on the Redis; waits until it answers.
node() {
	n=$1
	shift
	mkdir -p "$T/n"
	"$KJITD" --foreground --socket "$T/n/$n.sock" --cache-dir "$T/c/$n" --log "$T/log.$n" \
		--hip-compiler test --compile-timeout 30 --remote "unix://$RS" --remote-timeout 3000 --remote-lookup-timeout 3000 "$@" &
	eval "PID_$n=$!"
	NODES="$NODES $n"
	i=0
	while [ $i -lt 300 ]; do
		kj "$n" ping >/dev/null 2>&1 && return 0
		sleep 0.05
		i=$((i + 1))
	done
	echo "kjitd $n did not start:" >&2
	cat "$T/log.$n" >&2
	return 1
}
pid_of() { eval "echo \${PID_$1:-}"; }
kj() { n=$1; shift; KJIT_SOCKET="$T/n/$n.sock" "$KJIT" "$@"; }
unnode() { # N [signal]
	p=$(pid_of "$1")
	[ -n "$p" ] || return 0
	if [ "${2:-}" = KILL ]; then kill -9 "$p" 2>/dev/null; else kj "$1" stop >/dev/null 2>&1 || kill "$p" 2>/dev/null; fi
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	eval "PID_$1="
}
fleet_cleanup() {
	for n in $NODES; do unnode "$n"; done
	stop_redis
	rm -rf "$T"
}
trap fleet_cleanup EXIT INT TERM

# nstat N NAME: a counter of node N's `kjit stats --json` (remote ones too).
nstat() { kj "$1" stats --json | tr ',{}' '\n\n\n' | sed -n "s/^\"$2\":\([0-9]*\)$/\1/p" | head -n 1; }
# rstat N NAME: a counter of the "remote" block of node N's stats.
rstat() { kj "$1" stats --json | sed 's/.*"remote"://' | tr ',{}' '\n\n\n' | sed -n "s/^\"$2\":\([0-9]*\)$/\1/p" | head -n 1; }
key_of() { awk '{print $(NF-3)}' "$1"; } # "STATUS[ hit] KEY TARGET N bytes"
# wait_key KEY: until Redis holds the object (publishes are in the background).
wait_key() {
	i=0
	while [ $i -lt 100 ]; do
		[ "$(rcli exists "kjit:v2:$1")" = 1 ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
get() { # N SRC OUT: kjit get on node N, object to OUT, status line to OUT.line
	kj "$1" get --source "$2" --backend hip --target gfx90a -o "$3" >"$3.line" 2>&1
}
src() { printf '%s\n// %s\nint x;\n' "${2:-}" "$1" >"$T/$1.src"; echo "$T/$1.src"; }
t_start=$(date +%s)

start_redis || { not_ok fleet "redis-server did not start: $(cat "$T/redis.log" 2>/dev/null)"; exit 1; }

# ---- two nodes: compiled on A, a remote hit on B, a local hit after B restarts ----
node 1 && node 2 || { not_ok fleet "kjitd did not start"; exit 1; }
s=$(src ab)
get 1 "$s" "$T/a.o"
check "A compiles" grep -q '^compiled ' "$T/a.o.line"
k=$(key_of "$T/a.o.line")
check "A publishes to Redis in the background" wait_key "$k"
get 2 "$s" "$T/b.o"
check "B: remote hit ($(cat "$T/b.o.line"))" grep -q '^remote hit ' "$T/b.o.line"
check "B: identical bytes" cmp -s "$T/a.o" "$T/b.o"
check "B: no compile" [ "$(nstat 2 compiles)" = 0 ]
check "B: remote_hits 1 in stats" [ "$(nstat 2 remote_hits)" = 1 ]
check "B: kjit show works for the remote object" sh -c "KJIT_SOCKET=$T/n/2.sock $KJIT show $k | grep -q 'source *ab.src'"
check "B: the log says remote hit" grep -q "remote hit $k" "$T/log.2"
# A remote hit is published as a compile is (daemon/miss/miss.c): the same
# request again is answered from the shared hit table, without the socket.
get 2 "$s" "$T/b1.o"
check "B: the remote hit entered the shared hit table (fast hits $(nstat 2 fast_hits))" [ "$(nstat 2 fast_hits)" -ge 1 ]
# The lowered names of C++ name expressions go with the object: in the KJO2
# value's field of their own (not in its log), back out on B (NVRTC, when here).
if ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
	printf 'template <typename T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n' >"$T/t.cu"
	kj 1 get --source "$T/t.cu" --backend cuda --target sm_90 --name-expression 'scale<float>' >"$T/t1" 2>&1
	check "A: compiled with its lowered name" grep -q '^lowered scale<float> _Z5scaleIfEvPT_S0_$' "$T/t1"
	kt=$(head -n 1 "$T/t1" | key_of /dev/stdin)
	wait_key "$kt"
	check "A publishes it, its name in the value's own field" sh -c "redis-cli -s '$RS' --raw get 'kjit:v2:$kt' |
		grep -aq 'scale<float>	_Z5scaleIfEvPT_S0_' && ! redis-cli -s '$RS' --raw get 'kjit:v2:$kt' |
		grep -aq 'kjit: lowered name'"
	kj 2 get --source "$T/t.cu" --backend cuda --target sm_90 --name-expression 'scale<float>' >"$T/t2" 2>&1
	check "B: a remote hit with its lowered name" sh -c "grep -q '^remote hit ' '$T/t2' &&
		grep -q '^lowered scale<float> _Z5scaleIfEvPT_S0_\$' '$T/t2'"
	kj 2 show "$kt" >"$T/t2.show" 2>&1
	check "B: the name in its index's column, not in the log" sh -c "grep -q '^lowered *scale<float> = _Z5scaleIfEvPT_S0_\$' '$T/t2.show' &&
		! grep -q 'kjit: lowered name' '$T/t2.show'"
fi
unnode 2
node 2
get 2 "$s" "$T/b2.o"
check "B after restart: local hit" grep -q '^hit ' "$T/b2.o.line"
check "B after restart: same bytes" cmp -s "$T/a.o" "$T/b2.o"
kj 2 ping --json >"$T/ping.json"
check "ping --json: remote up ($(cat "$T/ping.json"))" grep -q "\"remote\":{\"url\":\"unix://$RS[^\"]*\",\"up\":true" "$T/ping.json"
kj 2 targets >"$T/targets.txt"
check "targets: remote line ($(grep '^remote' "$T/targets.txt"))" grep -q "^remote .*unix://$RS.* up" "$T/targets.txt"
kj 2 stats --prometheus "$T/prom.txt" >/dev/null
check "prometheus: remote counters" grep -q '^kjit_remote_hits_total 0' "$T/prom.txt"

# ---- kjit warm --remote-only: fetched without compiling; misses reported ----
kj 1 warm --backend hip --target gfx90a -j 2 >"$T/warm1" 2>&1
node 3
kj 3 warm --remote-only --backend hip --target gfx90a -j 2 --json >"$T/warm3.json" 2>&1
# Kernels of one module share its key (entries are not in it for hip): the
# first fetches the module, the others join its flight ("fetched") or, once
# it is in the fresh node's cache, are hits there ("cached"); none is
# missing, since the module's value lists every entry of its manifest lines
# whichever kernel node 1 compiled it for.
check "warm --remote-only: everything fetched ($(cat "$T/warm3.json" | cut -c1-100))" \
	grep -q '"compiled":0,"cached":[0-9]*,"fetched":[1-9][0-9]*,"missing":0,"failed":0' "$T/warm3.json"
kj 3 warm --remote-only --backend hip --target gfx942 -j 2 >"$T/warm3b" 2>&1
check "warm --remote-only: misses reported, not compiled ($(head -n 1 "$T/warm3b"))" \
	grep -q '0 compiled.* [1-9][0-9]* missing' "$T/warm3b"
check "warm --remote-only: node 3 compiled nothing" [ "$(nstat 3 compiles)" = 0 ]
unnode 3

# ---- ten daemons stampede one uncompiled source: one compile fleet-wide ----
for n in 10 11 12 13 14 15 16 17 18 19; do node $n || break; done
s=$(src stampede '#pragma kjit_test sleep 1500')
gets=""
for n in 10 11 12 13 14 15 16 17 18 19; do
	get $n "$s" "$T/s.$n" &
	gets="$gets $!"
done
# shellcheck disable=SC2086
wait $gets
total=0
same=1
tmo=0
for n in 10 11 12 13 14 15 16 17 18 19; do
	total=$((total + $(nstat $n compiles)))
	tmo=$((tmo + $(rstat $n timeouts)))
	cmp -s "$T/s.10" "$T/s.$n" || same=0
done
check "stampede: exactly one compile in the fleet ($total; remote timeouts $tmo)" [ "$total" = 1 ]
check "stampede: all ten identical" [ "$same" = 1 ]
waits=0
for n in 10 11 12 13 14 15 16 17 18 19; do waits=$((waits + $(rstat $n lease_waits))); done
check "stampede: lease waits counted ($waits)" [ "$waits" -ge 1 ]
nc=$(cat "$T"/s.1?.line | grep -c '^compiled ')
nr=$(cat "$T"/s.1?.line | grep -c '^remote hit ')
check "stampede: one compiled, nine remote hits ($nc, $nr)" test "$nc" = 1 -a "$nr" = 9
for n in 11 12 13 14 15 16 17 18 19; do unnode $n; done

# ---- the lease owner killed mid-compile: another takes over after expiry ----
s=$(src killed '#pragma kjit_test sleep 2000')
get 10 "$s" "$T/k.10" &
owner=$!
i=0
while ! grep -q 'fleet lease held' "$T/log.10" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
t0=$(date +%s)
get 1 "$s" "$T/k.1" &
gpid=$!
sleep 0.3
unnode 10 KILL
wait "$gpid"
wait "$owner" 2>/dev/null
dt=$(($(date +%s) - t0))
check "takeover: the waiter compiled after the lease expired ($(cat "$T/k.1.line"), ${dt}s)" grep -q '^compiled ' "$T/k.1.line"
check "takeover: within a lease life plus the compile" [ "$dt" -le 16 ]
check "takeover counted (remote timeouts $(rstat 1 timeouts))" [ "$(rstat 1 lease_takeovers)" = 1 ]

# ---- a corrupt value in Redis: not served, counted, recompiled, overwritten ----
s=$(src corrupt)
get 1 "$s" "$T/c.1"
k=$(key_of "$T/c.1.line")
wait_key "$k"
rcli set "kjit:v2:$k" "KJO2 this is not an object" >/dev/null
get 2 "$s" "$T/c.2"
check "corrupt: not served, recompiled ($(cat "$T/c.2.line"))" grep -q '^compiled ' "$T/c.2.line"
check "corrupt: counted ($(rstat 2 corrupt): the lookup and the owner's second look)" [ "$(rstat 2 corrupt)" -ge 1 ]
i=0
while [ "$(rcli strlen "kjit:v2:$k")" -lt 72 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
node 4
kj 4 get --source "$s" --backend hip --target gfx90a -o "$T/c.4" --json >"$T/c.4.json" 2>/dev/null
check "corrupt: overwritten by the recompile (a remote hit elsewhere, --json: $(cut -c1-40 "$T/c.4.json"))" \
	grep -q '"status":"remote hit"' "$T/c.4.json"
check "corrupt: same bytes" cmp -s "$T/c.1" "$T/c.4"
h=$(rstat 4 hits)
us=$(rstat 4 hit_us_total)
check "stats: remote hits and their latency ($h, $us us)" test "$h" = 1 -a "$us" -gt 0
unnode 4

# ---- a failed compile releases its lease: the next node compiles at once ----
s=$(src failing '#pragma kjit_test error')
get 1 "$s" "$T/f.1"
t0=$(date +%s)
get 2 "$s" "$T/f.2"
dt=$(($(date +%s) - t0))
check "failed compile: the lease was released, no wait on B (${dt}s: $(tail -n 1 "$T/f.2.line" | cut -c1-80))" test "$dt" -le 3

# ---- Redis stopped mid-run (during a compile that holds the lease), then restarted ----
s=$(src midrun '#pragma kjit_test sleep 1200')
get 1 "$s" "$T/m.1" &
mid=$!
i=0
while ! grep -q 'midrun.src.*fleet lease held' "$T/log.1" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
stop_redis
wait "$mid"
check "outage: the compile under way when Redis stopped is answered ($(cat "$T/m.1.line"))" grep -q '^compiled ' "$T/m.1.line"
s=$(src outage)
ok_all=1
for r in 1 2 3; do
	get 1 "$s" "$T/o.$r" || ok_all=0
	get 1 "$T/ab.src" "$T/o.ab.$r" || ok_all=0
done
check "outage: every request answered" [ "$ok_all" = 1 ]
kj 1 stats --json >"$T/o.json"
check "outage: stats say down and count the outage" \
	sh -c "grep -q '\"up\":false' '$T/o.json' && grep -q '\"outages\":[1-9]' '$T/o.json'"
check "outage: warned once, not per request" [ "$(grep -c 'unreachable' "$T/log.1")" = 1 ]
start_redis
i=0
while ! kj 1 ping --json | grep -q '"up":true' && [ $i -lt 150 ]; do sleep 0.05; i=$((i + 1)); done
check "outage: the remote resumes by itself" sh -c "KJIT_SOCKET=$T/n/1.sock $KJIT ping --json | grep -q '\"up\":true'"
s=$(src after-outage)
get 1 "$s" "$T/r.1"
check "outage: publishes resume" wait_key "$(key_of "$T/r.1.line")"
get 2 "$s" "$T/r.2"
check "outage: remote hits resume" grep -q '^remote hit ' "$T/r.2.line"

# ---- --remote-mode ro never writes ----
unnode 2
node 5 --remote-mode ro
rcli config resetstat >/dev/null
s=$(src ro)
get 5 "$s" "$T/ro.5"
get 5 "$T/after-outage.src" "$T/ro.5b"
sleep 0.3
rcli info commandstats >"$T/ro.stats"
check "ro: compiled ($(cat "$T/ro.5.line"))" grep -q '^compiled ' "$T/ro.5.line"
check "ro: remote hits still served" grep -q '^remote hit ' "$T/ro.5b.line"
check "ro: no write reached Redis" sh -c "! grep -Eiq 'cmdstat_(set|eval|evalsha|del|pexpire|expire|publish):' '$T/ro.stats'"
check "ro: nothing stored" [ "$(rcli exists "kjit:v2:$(key_of "$T/ro.5.line")")" = 0 ]
unnode 5

# ---- --no-compile: a miss refused with the promised line; an import served ----
node 6 --no-compile
s=$(src serveonly)
get 6 "$s" "$T/nc.6"
rc=$?
check "no-compile: a miss refused ($(cut -c1-200 "$T/nc.6.line"))" [ "$rc" -ne 0 ]
check "no-compile: the line names the key, the target and the ways to warm" \
	sh -c "[ \$(wc -l <'$T/nc.6.line') -eq 1 ] && grep -q 'gfx90a' '$T/nc.6.line' && grep -q '[0-9a-f]\{64\}' '$T/nc.6.line' && grep -q 'kjit warm' '$T/nc.6.line' && grep -q 'kjit import' '$T/nc.6.line'"
check "no-compile: no compile" [ "$(nstat 6 compiles)" = 0 ]
get 1 "$s" "$T/nc.1"
kj 1 export -o "$T/bundle.kjb" >/dev/null 2>&1
rcli flushall >/dev/null
kj 6 import "$T/bundle.kjb" >/dev/null 2>&1
get 6 "$s" "$T/nc.6b"
check "no-compile: an imported object is a hit ($(cat "$T/nc.6b.line"))" grep -q '^hit ' "$T/nc.6b.line"
check "no-compile: same bytes" cmp -s "$T/nc.1" "$T/nc.6b"
unnode 6

echo "# fleet.sh took $(($(date +%s) - t_start)) s"
[ "$FAILS" -eq 0 ]
