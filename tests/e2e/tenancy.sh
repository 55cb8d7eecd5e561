#!/bin/sh
# tenancy.sh: no user reads, starves or outgrows another (issue 29), two
# temporary users in a group a root kjitd admits (--allow-gid), the test
# family's compiler:
#   1. `kjit get --explain` by a second user shows nothing of the first
#      user's entries (options, header names, key); an administrator's
#      compares against all;
#   2. another user's ping answers within 500 ms while an --explain
#      compares 32 -D options of 500 words each against 32 entries (the
#      comparison is linear and off the loop); the explain's own time, and
#      one with 256 long options, are printed as "# bench" figures.
# Docs: docs/protocol.md ("--explain"), docs/reliability.md.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
	echo "# skip tenancy: needs root, useradd and setpriv (temporary users)"
	exit 0
fi
KJITC="$T/kjit"
cp "$KJIT" "$KJITC" && chmod 0755 "$T" "$KJITC"
A="$T/a" # sources, readable by both users
mkdir -p "$A/v" "$A/o" && chmod -R 0755 "$A"
GNAME="kjtg$$" OWN="kjto$$" OTH="kjtx$$"
cleanup_all() {
	stop_daemon
	userdel "$OWN" 2>/dev/null
	userdel "$OTH" 2>/dev/null
	groupdel "$GNAME" 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "# kept $T" >&2 || rm -rf "$T"
}
trap cleanup_all EXIT INT TERM
groupadd "$GNAME" && useradd -M -N -g nogroup -G "$GNAME" -s /bin/sh "$OWN" &&
	useradd -M -N -g nogroup -G "$GNAME" -s /bin/sh "$OTH" || { not_ok users "cannot create users"; exit 1; }
GID=$(getent group "$GNAME" | cut -d: -f3)

as_user() { # user, command...
	u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups env KJIT_SOCKET="$KJIT_SOCKET" \
		KJIT_NO_AUTOSTART=1 HOME=/ "$@"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

start_daemon --allow-gid "$GID" --hip-compiler test --jobs 2 || { not_ok start "kjitd did not start"; exit 1; }
chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"

# ---- 1. --explain shows a user only its own entries ----
MARK="kjtok$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
printf '#include "hdr_%s.h"\nint v;\n' "$MARK" >"$A/v/k.hip"
printf 'int h;\n' >"$A/v/hdr_$MARK.h"
printf 'int o;\n' >"$A/o/k.hip"
chmod 0644 "$A"/v/* "$A"/o/*
as_user "$OWN" "$KJITC" get --source "$A/v/k.hip" --backend hip --target gfx90a -I "$A/v" -DAPI_TOKEN="$MARK" \
	-o /dev/null >"$T/own.out" 2>&1
VKEY=$(sed -n 's/^compiled \([0-9a-f]\{16\}\).*/\1/p' "$T/own.out")
check "explain-owner-compiled" [ -n "$VKEY" ]
as_user "$OTH" "$KJITC" get --source "$A/o/k.hip" --backend hip --target gfx90a -DOTHER=1 --explain \
	-o /dev/null >"$T/oth.out" 2>&1
check "explain-other-user-sees-no-options" sh -c "! grep -q '$MARK' '$T/oth.out'"
check "explain-other-user-sees-no-key" sh -c "! grep -q '$VKEY' '$T/oth.out'"
check "explain-other-user-sees-no-header" sh -c "! grep -q 'hdr_' '$T/oth.out'"
check "explain-other-user-first-compile" grep -q "^explain: no earlier entry of k.hip .*the entries you requested" "$T/oth.out"
# the owner, again with another option: its own entry is the nearest
as_user "$OWN" "$KJITC" get --source "$A/v/k.hip" --backend hip --target gfx90a -I "$A/v" -DAPI_TOKEN="$MARK" \
	-DAGAIN --explain -o /dev/null >"$T/own2.out" 2>&1
check "explain-owner-sees-own" grep -q "^explain: nearest earlier entry of k.hip: $VKEY" "$T/own2.out"
# an administrator (root) compares against every entry
"$KJIT" get --source "$A/o/k.hip" --backend hip --target gfx90a -DROOT=1 --explain -o /dev/null >"$T/root.out" 2>&1
check "explain-admin-sees-all" grep -q "^explain: nearest earlier entry of k.hip" "$T/root.out"

# ---- 2. a large --explain: linear, off the loop ----
# 32 options of 500 one-letter words each (1006 bytes, under the 1024 of
# one option): the entries' words all differ from the request's, the worst
# case of a pairwise comparison (each word against every word there).
words() { # letter: 500 words of it
	yes "$1" | head -n 500 | tr '\n' ' ' | sed 's/ $//'
}
WB=$(words b)
WA=$(words a)
printf 'int big;\n' >"$A/o/big.hip" && chmod 0644 "$A/o/big.hip"
mkopts() { # file, words, tag: 32 -D options of the words, then -DTAG=tag (one per line)
	: >"$1"
	for j in $(seq 1 32); do printf -- '-DV%s=%s\n' "$j" "$2" >>"$1"; done
	printf -- '-DTAG=%s\n' "$3" >>"$1"
}
getopts_as() { # user, optsfile, extra args...: a get with the options in the file
	u=$1 f=$2
	shift 2
	(
		IFS='
'
		# shellcheck disable=SC2046
		as_user "$u" "$KJITC" get --source "$A/o/big.hip" --backend hip --target gfx90a $(cat "$f") "$@"
	)
}
n=0
for i in $(seq 1 32); do
	mkopts "$T/opts.b" "$WB" "$i"
	getopts_as "$OTH" "$T/opts.b" -o /dev/null >/dev/null 2>&1 && n=$((n + 1))
done
check "explain-big-entries-made" [ "$n" = 32 ]
mkopts "$T/opts.a" "$WA" probe
t0=$(now_ms)
getopts_as "$OTH" "$T/opts.a" --explain -o /dev/null >"$T/big.out" 2>&1 &
XP=$!
worst=0
while kill -0 "$XP" 2>/dev/null; do
	p0=$(now_ms)
	as_user "$OWN" "$KJITC" ping >/dev/null 2>&1
	d=$(($(now_ms) - p0))
	[ "$d" -gt "$worst" ] && worst=$d
	sleep 0.02
done
wait "$XP"
t1=$(now_ms)
echo "# bench: --explain of 32 options x 500 words against 32 such entries: $((t1 - t0)) ms (the client's get); slowest ping meanwhile $worst ms"
check "explain-big-answered" grep -q "^explain: nearest earlier entry of big.hip" "$T/big.out"
check "explain-big-ping-within-500ms" [ "$worst" -lt 500 ]
# 256 long options (the most a request may carry), 1000 bytes each
: >"$T/opts.l"
for j in $(seq 1 256); do printf -- '-DL%s=%s\n' "$j" "$WA" | cut -c1-1000 >>"$T/opts.l"; done
t0=$(now_ms)
getopts_as "$OTH" "$T/opts.l" --explain -o /dev/null >"$T/long.out" 2>&1
t1=$(now_ms)
echo "# bench: --explain with 256 options of 1000 bytes against 32 entries: $((t1 - t0)) ms (the client's get)"
check "explain-long-answered" grep -q "^explain: " "$T/long.out"
check "explain-long-capped-said" grep -q "compared the first [0-9]* words" "$T/long.out"
check "daemon-alive" "$KJIT" ping

finish
