#!/bin/sh
# The shared read-only hit table (docs/hitpath.md) against a real kjitd:
# the fast path gives the socket's bytes for every bundled kernel that
# compiles here, counts its hits in `kjit stats`, never serves a corrupted
# file or an object built from a header that has since changed, never
# tears under a writer racing 16 readers, cannot be written by a client;
# a batch (kjit get --kernel A --kernel B ...) mixes hits and misses; and
# KJIT_PROCESS_MEMO=0 turns the process memo off.  Helper: hitpath.c.
. "$(dirname "$0")/lib.sh"

HP="$T/hitpath"
build_helper hitpath "$HP" || exit 1

start_daemon --jobs 2 || { not_ok start "kjitd did not start"; exit 1; }
check "the table is on for a per-user daemon" grep -q "shared hit table on" "$T/kjitd.log"

# -- every bundled kernel of each backend that compiles here: one batch to
#    compile, then the fast path against the socket, byte for byte.
kernels_of() { awk -v b="$1" '$2 == b { print $1 }' "$TOP/kernels_src/MANIFEST"; }
target_of() { case $1 in hip) echo gfx90a ;; cuda) echo sm_90 ;; *) echo vulkan1.3 ;; esac; }
for b in vulkan cuda hip; do
	t=$(target_of $b)
	names=$(kernels_of $b)
	n=$(echo "$names" | wc -l)
	args=""
	for k in $names; do args="$args --kernel $k"; done
	mkdir -p "$T/batch-$b" "$T/fast-$b" "$T/sock-$b"
	# shellcheck disable=SC2086
	if ! "$KJIT" get --backend $b --target $t $args -o "$T/batch-$b" >"$T/batch-$b.out" 2>&1; then
		if [ $b = vulkan ]; then
			not_ok "vulkan kernels compile in one batch" "$(tail -n 3 "$T/batch-$b.out")"
		else
			echo "# $b: not every bundled kernel compiles here (no $b compiler?): skipped"
		fi
		continue
	fi
	check "$b: a batch of $n kernels answers each once" [ "$(wc -l <"$T/batch-$b.out")" -eq "$n" ]
	before=$(stat_value fast_hits)
	same=0
	for k in $names; do
		"$KJIT" get --backend $b --target $t --kernel $k -o "$T/fast-$b/$k" >/dev/null 2>&1
		KJIT_FAST_PATH=0 "$KJIT" get --backend $b --target $t --kernel $k -o "$T/sock-$b/$k" >/dev/null 2>&1
		cmp -s "$T/fast-$b/$k" "$T/sock-$b/$k" && cmp -s "$T/fast-$b/$k" "$T/batch-$b/$k" && same=$((same + 1))
	done
	check "$b: fast path = socket = batch bytes for all $n kernels" [ "$same" -eq "$n" ]
	after=$(stat_value fast_hits)
	check "$b: every fast-path hit counted in kjit stats ($before -> $after)" [ "$after" -ge $((before + n)) ]
done

# -- a batch with hits, misses and a failure.
one=$(kernels_of vulkan | head -n 1)
"$KJIT" clear --target vulkan1.2 >/dev/null 2>&1
mix="--kernel $one --kernel no_such_kernel"
for k in $(kernels_of vulkan | sed -n 2,4p); do mix="$mix --kernel $k"; done
# shellcheck disable=SC2086
"$KJIT" get --backend vulkan --target vulkan1.2 $mix >"$T/mix1" 2>&1
st=$?
check "a batch with a failure exits non-zero" [ $st -ne 0 ]
check "and names the failed kernel" grep -q "no_such_kernel" "$T/mix1"
check "and answers the others (4 misses compiled)" [ "$(grep -c ' compiled ' "$T/mix1")" -eq 4 ]
mix2="--kernel $one"
for k in $(kernels_of vulkan | sed -n 2,6p); do mix2="$mix2 --kernel $k"; done
# shellcheck disable=SC2086
"$KJIT" get --backend vulkan --target vulkan1.2 $mix2 >"$T/mix2" 2>&1
check "a mixed batch: 4 hits and 2 misses" [ "$(grep -c ' hit ' "$T/mix2")" -eq 4 ] && [ "$(grep -c ' compiled ' "$T/mix2")" -eq 2 ]

# -- a client cannot write the table; the daemon does not notice.
# handle_segv=0: under make test-asan the storer must die of the signal
# itself, not of AddressSanitizer's report of it.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0" "$HP" scribble >"$T/scribble" 2>&1
check "a client cannot write the table (each attempt refused, the storer dies of SIGSEGV)" [ $? -eq 0 ]
grep -q ALLOWED "$T/scribble" && cat "$T/scribble" >&2
quiet_ping() { "$KJIT" ping >/dev/null 2>&1; }
check "the daemon is unaffected" quiet_ping

# -- 16 readers against a writer: never a torn object.
race_kernels=$(kernels_of vulkan | head -n 6 | tr '\n' ' ')
# Meanwhile entries come and go: each clear removes one and invalidates.
( i=0; while [ $i -lt 6 ]; do sleep 0.4; "$KJIT" get --backend vulkan --target vulkan1.2 --kernel $one >/dev/null 2>&1;
	"$KJIT" clear --target vulkan1.2 >/dev/null 2>&1; i=$((i + 1)); done ) &
inval=$!
f0=$(stat_value fast_hits)
# shellcheck disable=SC2086
"$HP" race 3 16 vulkan vulkan1.3 $race_kernels >"$T/race" 2>&1
rc=$?
wait $inval
check "16 readers racing a rewriting daemon never see a torn object" [ $rc -eq 0 ]
[ $rc -eq 0 ] || tail -n 5 "$T/race" >&2
check "the table was invalidated meanwhile" grep -q "hit table invalidated" "$T/kjitd.log"
f1=$(stat_value fast_hits)
check "the readers went through the fast path ($((f1 - f0)) hits)" [ $((f1 - f0)) -gt 1000 ]

# -- a corrupted object on disk is never served, through the fast path or not.
k=$(kernels_of vulkan | sed -n 7p)
"$KJIT" get --backend vulkan --target vulkan1.3 --kernel $k -o "$T/good" >/dev/null 2>&1
key=$("$KJIT" get --backend vulkan --target vulkan1.3 --kernel $k --json 2>/dev/null | sed -n 's/.*"key":"\([0-9a-f]*\)".*/\1/p')
obj=$(find "$KJIT_CACHE_DIR" -name "$key*" -type f | head -n 1)
check "found the object file" [ -n "$obj" ]
printf 'rot' | dd of="$obj" bs=1 seek=20 conv=notrunc 2>/dev/null
"$KJIT" get --backend vulkan --target vulkan1.3 --kernel $k -o "$T/after" >"$T/after.out" 2>&1
check "a file corrupted under the running kjitd loses its table entry: found and recompiled" grep -q '^compiled' "$T/after.out"
check "with the good bytes" cmp -s "$T/good" "$T/after"
check "the corruption is logged" grep -q corrupt "$T/kjitd.log"
"$KJIT" get --backend vulkan --target vulkan1.3 --kernel $k -o "$T/after3" >"$T/after3.out" 2>&1
check "then the fast path serves the good bytes again" cmp -s "$T/good" "$T/after3"

# -- KJIT_PROCESS_MEMO=0: the process memo is off (the socket must answer).
check "the process memo answers after kjitd stopped" [ "$("$HP" memo vulkan vulkan1.3 $k)" = served ]
DAEMON_PID_OLD=$DAEMON_PID; wait "$DAEMON_PID_OLD" 2>/dev/null; DAEMON_PID=""
start_daemon --jobs 2 || { not_ok restart "kjitd did not start"; exit 1; }
check "KJIT_PROCESS_MEMO=0: nothing answers after kjitd stopped" \
	[ "$(KJIT_PROCESS_MEMO=0 "$HP" memo vulkan vulkan1.3 $k)" = failed ]
wait "$DAEMON_PID" 2>/dev/null; DAEMON_PID=""

# -- a header under the kernels directory changes: not served stale.
K="$T/kernels_src"
cp -r "$TOP/kernels_src" "$K"
start_daemon --jobs 2 --hip-compiler test --kernels-dir "$K" || { not_ok start "kjitd did not start"; exit 1; }
hk=$(awk '$2 == "hip" && $3 ~ /rms_norm/ { print $1; exit }' "$K/MANIFEST")
hget() { "$KJIT" get --backend hip --target gfx90a --kernel "$hk" -o "$T/$1" >"$T/$1.out" 2>&1; cut -d' ' -f1 "$T/$1.out"; }
hkey() { cut -d' ' -f2 "$T/$1.out"; }
check "hip $hk via the test compiler: compiled" [ "$(hget h1)" = compiled ]
check "then a hit" [ "$(hget h2)" = hit ]
f0=$(stat_value fast_hits)
check "then a hit again" [ "$(hget h3)" = hit ]
check "served by the fast path" [ "$(stat_value fast_hits)" -gt "$f0" ]
echo '/* changed */' >>"$K/include/kjit_prelude.h"
check "after a header change: compiled again, not the stale object" [ "$(hget h4)" = compiled ]
check "under another key" [ "$(hkey h1)" != "$(hkey h4)" ]
check "then hits the new object" [ "$(hget h5)" = hit ] && [ "$(hkey h5)" = "$(hkey h4)" ]
# -- a request with name expressions never comes from the table (it holds no
# lowered names): each new process asks the socket, and the lowered names come
# back on every hit.  Needs NVRTC.
if ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
	R="$T/rw"
	cp -r "$TOP/tests/realworld" "$R"
	nget() { "$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$R/include" \
		--name-expression 'scale<float, 4>' >"$T/$1.out" 2>&1; cut -d' ' -f1 "$T/$1.out" | head -n 1; }
	nget n1 >/dev/null
	nget n2 >/dev/null
	f0=$(stat_value fast_hits)
	check "--name-expression: a hit" [ "$(nget n3)" = hit ]
	check "with its lowered name" grep -q '^lowered scale<float, 4> _Z5scaleIfLi4EEvPT_S0_i$' "$T/n3.out"
	check "not from the shared table" [ "$(stat_value fast_hits)" = "$f0" ]
else
	echo "# --name-expression checks skipped: no NVRTC here"
fi
finish
