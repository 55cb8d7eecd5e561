#!/bin/sh
# Crash consistency (docs/reliability.md, "Crash consistency"): CRASH_TRIALS
# times (default 5; `make stress` runs 100), a warm-up of many distinct
# compiles from several client processes (the test compiler family, "sleep
# 2", plus the real Vulkan library through shaderc) is cut by SIGKILL of
# kjitd at a random moment; its workers must die with it (PR_SET_PDEATHSIG);
# kjitd is restarted and then:
#   - no temporary file is left anywhere in the cache tree (those of
#     recipes/ are counted over all trials and checked once at the end);
#   - every row `kjit ls` lists has its file, of its size;
#   - `kjit verify` exits 0 (nothing corrupt);
#   - after verify, files and rows agree exactly (docs/cache.md: files
#     without a row are orphans that open ignores and gc/verify delete);
#   - every test-family entry, fetched again, is a hit whose bytes equal
#     its source (the test compiler echoes the source);
#   - every Vulkan entry on disk and every Vulkan kernel served equals a
#     fresh compile made before the trials in a separate clean cache.
# The cache carries over from trial to trial (Vulkan entries are cleared
# after each so they are compiled again; test entries past 1500 too).
. "$(dirname "$0")/lib.sh"

TRIALS=${CRASH_TRIALS:-5}
CLIENTS=${CRASH_CLIENTS:-4}
PER_CLIENT=${CRASH_PER_CLIENT:-60}
RAW="$T/rawclient"
mkdir -p "$T/src" "$T/vref"

# shellcheck disable=SC2046
build_helper rawclient "$RAW" || exit 1

# ---- the reference: the Vulkan library compiled once in a clean cache ----
MAIN_CACHE=$KJIT_CACHE_DIR
KJIT_CACHE_DIR="$T/ref"
start_daemon || { not_ok "reference daemon" "kjitd did not start"; exit 1; }
"$KJIT" warm --backend vulkan --target vulkan1.2 -j 2 >"$T/warm.ref" 2>&1
sed -n 's/^\[[0-9]*\/[0-9]*\] [a-z]* \([^ ]*\) vulkan .*/\1/p' "$T/warm.ref" | sort -u >"$T/vkernels"
for k in $(cat "$T/vkernels"); do
	"$KJIT" get --kernel "$k" --backend vulkan --target vulkan1.2 -o "$T/vref/$k.spv" >/dev/null 2>&1
done
n_vk=$(wc -l <"$T/vkernels")
check "reference: the Vulkan library compiled in a clean cache ($n_vk kernels)" [ "$n_vk" -ge 10 ]
stop_daemon
KJIT_CACHE_DIR=$MAIN_CACHE
export KJIT_CACHE_DIR

rand() { od -An -N2 -tu2 /dev/urandom | tr -d ' '; }
# proc_dead PID: gone or a zombie.
proc_dead() {
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}

# load TRIAL CLIENT: PER_CLIENT distinct test compiles, until $T/stop.
load() {
	i=0
	while [ $i -lt "$PER_CLIENT" ] && [ ! -e "$T/stop" ]; do
		f="$T/src/t$1-c$2-$i.src"
		printf '#pragma kjit_test sleep 2\n// crash trial %s client %s request %s\nint x_%s_%s_%s;\n' \
			"$1" "$2" "$i" "$1" "$2" "$i" >"$f"
		"$KJIT" get --source "$f" --backend hip --target gfx90a >/dev/null 2>&1 || [ -e "$T/stop" ] || sleep 0.01
		i=$((i + 1))
	done
}

# check_cache TRIAL: prints one line per problem into $T/problems.
check_cache() {
	: >"$T/problems"
	tmps=$(find "$KJIT_CACHE_DIR" -name '*.tmp*' ! -path '*/recipes/*' | head -n 5)
	[ -z "$tmps" ] || echo "temporary files left after restart: $tmps" >>"$T/problems"
	# recipes/ temporaries are counted apart (see the check after the trials)
	find "$KJIT_CACHE_DIR/recipes" -name '*.tmp*' 2>/dev/null >>"$T/recipe-tmps"
	"$KJIT" ls >"$T/ls" 2>&1 || echo "kjit ls failed: $(cat "$T/ls")" >>"$T/problems"
	# every row has its file, of its size
	while read -r key backend target version size name; do
		case $backend in hip) ext=hsaco ;; vulkan) ext=spv ;; *) ext=unknown ;; esac
		f="$KJIT_CACHE_DIR/$target-$version/$key.$ext"
		if [ ! -f "$f" ]; then
			echo "row $key ($name) has no file $f" >>"$T/problems"
		elif [ "$(stat -c %s "$f")" != "$size" ]; then
			echo "row $key ($name): file is $(stat -c %s "$f") bytes, row says $size" >>"$T/problems"
		fi
	done <"$T/ls"
	# files without a row before verify: orphans (allowed, counted)
	awk '{print $1}' "$T/ls" | sort >"$T/rows"
	find "$KJIT_CACHE_DIR" -mindepth 2 -maxdepth 2 \( -name '*.hsaco' -o -name '*.spv' \) |
		sed 's|.*/||; s|\..*||' | sort >"$T/files"
	orphans=$(comm -13 "$T/rows" "$T/files" | wc -l)
	"$KJIT" verify >"$T/verify" 2>&1 || echo "kjit verify failed: $(tail -n 3 "$T/verify" | tr '\n' ' ')" >>"$T/problems"
	"$KJIT" ls | awk '{print $1}' | sort >"$T/rows"
	find "$KJIT_CACHE_DIR" -mindepth 2 -maxdepth 2 \( -name '*.hsaco' -o -name '*.spv' \) |
		sed 's|.*/||; s|\..*||' | sort >"$T/files"
	cmp -s "$T/rows" "$T/files" ||
		echo "after verify, files and rows differ: $(diff "$T/rows" "$T/files" | grep '^[<>]' | head -n 3 | tr '\n' ' ')" >>"$T/problems"
	# test-family entries: hits, bytes == source
	"$KJIT" ls --target gfx90a | awk '{print $6}' >"$T/names"
	n_hip=$(wc -l <"$T/names")
	"$RAW" "$KJIT_SOCKET" fetch "$T/src" <"$T/names" >"$T/fetch" 2>&1 ||
		echo "test entries: $(grep -v '^fetched' "$T/fetch" | head -n 3 | tr '\n' ' ') $(tail -n 1 "$T/fetch")" >>"$T/problems"
	# Vulkan: files on disk and bytes served equal the reference
	n_vkrows=0
	for key in $("$KJIT" ls --target vulkan1.2 | awk '{print $1}'); do
		n_vkrows=$((n_vkrows + 1))
		f=$(ls "$KJIT_CACHE_DIR"/vulkan1.2-*/"$key.spv" 2>/dev/null | head -n 1)
		r=$(ls "$T"/ref/vulkan1.2-*/"$key.spv" 2>/dev/null | head -n 1)
		if [ -z "$r" ]; then
			echo "vulkan entry $key is not in the reference cache (a different key for the same kernel?)" >>"$T/problems"
		elif ! cmp -s "$f" "$r"; then
			echo "vulkan entry $key differs from the reference compile" >>"$T/problems"
		fi
	done
	for k in $(cat "$T/vkernels"); do
		"$KJIT" get --kernel "$k" --backend vulkan --target vulkan1.2 -o "$T/vk.spv" >/dev/null 2>&1
		cmp -s "$T/vk.spv" "$T/vref/$k.spv" || echo "vulkan kernel $k served differs from the reference" >>"$T/problems"
	done
}

start_daemon --hip-compiler test || { not_ok start "kjitd did not start"; exit 1; }
survived=0
total_hip=0
total_orphans=0
t=1
while [ $t -le "$TRIALS" ]; do
	rm -f "$T/stop"
	pids=""
	c=0
	while [ $c -lt "$CLIENTS" ]; do
		load "$t" "$c" &
		pids="$pids $!"
		c=$((c + 1))
	done
	"$KJIT" warm --backend vulkan --target vulkan1.2 -j 2 >/dev/null 2>&1 &
	pids="$pids $!"
	ms=$((30 + $(rand) % 900))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	workers=$(cat /proc/"$DAEMON_PID"/task/*/children 2>/dev/null)
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=""
	touch "$T/stop"
	wait $pids 2>/dev/null
	# its workers die with it
	i=0
	alive=""
	while [ $i -lt 40 ]; do
		alive=""
		for w in $workers; do proc_dead "$w" || alive="$alive $w"; done
		[ -z "$alive" ] && break
		sleep 0.05
		i=$((i + 1))
	done
	if [ -n "$alive" ]; then
		not_ok "trial $t: workers die with kjitd" "still alive 2 s after SIGKILL:$alive"
		for w in $alive; do kill -9 "$w" 2>/dev/null; done
	fi
	if ! start_daemon --hip-compiler test; then
		not_ok "trial $t: restart after SIGKILL at $ms ms" "kjitd did not start: $(tail -n 3 "$T/kjitd.log" | tr '\n' ' ')"
		break
	fi
	check_cache "$t"
	if [ -s "$T/problems" ]; then
		not_ok "trial $t (SIGKILL after $ms ms)" "$(head -n 5 "$T/problems" | tr '\n' ';')"
	else
		survived=$((survived + 1))
		total_hip=$((total_hip + n_hip))
		total_orphans=$((total_orphans + orphans))
		[ "$TRIALS" -le 10 ] && ok "trial $t: SIGKILL after $ms ms; restart consistent ($n_hip test entries checked byte for byte, $n_vkrows vulkan, $orphans orphans removed by verify)"
	fi
	"$KJIT" clear --target vulkan1.2 >/dev/null 2>&1
	[ "$n_hip" -gt 1500 ] && "$KJIT" clear >/dev/null 2>&1
	t=$((t + 1))
done
leaked=$(sort -u "$T/recipe-tmps" 2>/dev/null | wc -l)
check "no temporary file left in recipes/ after $TRIALS restarts ($leaked left: $(sort -u "$T/recipe-tmps" 2>/dev/null | head -n 2 | sed 's|.*/||' | tr '\n' ' '))" \
	[ "$leaked" -eq 0 ]
check "$survived of $TRIALS SIGKILL trials survived ($total_hip test-entry fetches checked byte for byte, $total_orphans orphans found and removed by verify)" \
	[ "$survived" -eq "$TRIALS" ]

# Temporaries a crash can leave, planted by hand so the check does not rely
# on the kill landing inside a publish: the open after a crash must sweep them
# all.  (After a clean stop nothing can be left, and open skips the sweep.)
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=""
key=$(printf 'planted' | sha256sum | awk '{print $1}')
mkdir -p "$KJIT_CACHE_DIR/gfx90a-0.0" "$KJIT_CACHE_DIR/recipes"
echo torn >"$KJIT_CACHE_DIR/gfx90a-0.0/$key.hsaco.tmp.99999.1"
echo torn >"$KJIT_CACHE_DIR/recipes/$key.req.tmp.99999.1"
start_daemon --hip-compiler test || { not_ok restart "kjitd did not start"; exit 1; }
check "a stale object temporary (<key>.hsaco.tmp.<pid>.<n>) is removed at the open after a crash" \
	[ ! -e "$KJIT_CACHE_DIR/gfx90a-0.0/$key.hsaco.tmp.99999.1" ]
check "a stale recipe temporary (recipes/<hash>.req.tmp.<pid>.<n>) is removed at the open after a crash" \
	[ ! -e "$KJIT_CACHE_DIR/recipes/$key.req.tmp.99999.1" ]
finish
