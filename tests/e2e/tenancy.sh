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
#      one with 256 long options, are printed as "# bench" figures;
#   3. subordinate uids (newuidmap, as podman runs them): a client in a
#      child user namespace mapped to the owner's subuids is charged to the
#      owner: two subuids holding the owner's two connections
#      (--max-conns-per-uid 2) leave none to the owner or a third subuid;
#      and --allow-gid admits a subuid that kept the group only if its
#      owner's account is in the group.
# Docs: docs/protocol.md ("--explain"), docs/reliability.md.
. "$(dirname "$0")/lib.sh"

users_or_skip tenancy
KJITC="$T/kjit"
cp "$KJIT" "$KJITC" && chmod 0755 "$T" "$KJITC"
A="$T/a" # sources, readable by both users
mkdir -p "$A/v" "$A/o" && chmod -R 0755 "$A"
OWN="kjto$$" OTH="kjtx$$" OUT="kjtn$$"
cleanup_more() { userdel "$OUT" 2>/dev/null; } # made later, without the group (with its /etc/subuid and /etc/subgid ranges)
make_users "kjtg$$" "$OWN" "$OTH" || exit 1
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
# the same request shape without --explain (another source: a miss too), for the explain's own share
printf 'int big2;\n' >"$A/o/big2.hip" && chmod 0644 "$A/o/big2.hip"
b0=$(now_ms)
(
	IFS='
'
	# shellcheck disable=SC2046
	as_user "$OTH" "$KJITC" get --source "$A/o/big2.hip" --backend hip --target gfx90a $(cat "$T/opts.l") -o /dev/null
) >/dev/null 2>&1
b1=$(now_ms)
echo "# bench: --explain with 256 options of 1000 bytes against 32 entries: $((t1 - t0)) ms (the client's get);" \
	"the same miss without --explain $((b1 - b0)) ms: the explain's own about $((t1 - t0 - b1 + b0)) ms"
check "explain-long-answered" grep -q "^explain: " "$T/long.out"
check "explain-long-capped-said" grep -q "compared the first [0-9]* words" "$T/long.out"
check "daemon-alive" "$KJIT" ping

# ---- 3. subordinate uids are charged to their owner ----
if ! command -v newuidmap >/dev/null || ! command -v python3 >/dev/null ||
	! unshare --help 2>/dev/null | grep -q -- --map-users; then
	echo "# skip subuid checks: needs newuidmap (package uidmap), python3 and util-linux unshare --map-users"
	finish
	exit $?
fi
useradd -M -N -g nogroup -s /bin/sh "$OUT" || { not_ok users "cannot create $OUT"; finish; exit 1; }
# a subordinate range for each (useradd gives one where /etc/subuid exists)
n=0
for u in "$OWN" "$OUT"; do
	n=$((n + 1))
	if ! grep -q "^$u:" /etc/subuid 2>/dev/null || ! grep -q "^$u:" /etc/subgid 2>/dev/null; then
		lo=$((3000000 + ($$ % 1000) * 131072 + n * 65536))
		usermod --add-subuids "$lo-$((lo + 65535))" --add-subgids "$lo-$((lo + 65535))" "$u" ||
			{ not_ok subuids "cannot give $u a subordinate range"; finish; exit 1; }
	fi
done
HOLD="$T/hold.py"
cp "$TOP/tests/e2e/hold.py" "$HOLD" && chmod 0755 "$HOLD"
U="$T/u"
mkdir -p "$U" && chmod 0777 "$U"
# in_subuid USER N [GROUPS] command...: command as USER's Nth subordinate uid,
# in a child user namespace of its own made by newuidmap (the uid keeps the
# supplementary groups it had: GROUPS, comma-separated, or USER's own)
# Inside the child namespace root (the socket's folder, kjitd) shows as the
# overflow uid: the client trusts it only when told to (KJIT_TRUST_UID).
OVERFLOW=$(cat /proc/sys/kernel/overflowuid 2>/dev/null || echo 65534)
in_subuid() {
	u=$1 k=$2 g=$3
	shift 3
	sub=$(grep "^$u:" /etc/subuid | head -n 1 | cut -d: -f2)
	gopt=--init-groups
	[ -n "$g" ] && gopt="--groups=$g"
	setpriv --reuid="$u" --regid="$(id -g "$u")" "$gopt" \
		unshare --user --map-users="$((sub + k)),1,1" -S 1 env KJIT_SOCKET="$KJIT_SOCKET" KJIT_NO_AUTOSTART=1 HOME=/ \
		KJIT_TRUST_UID="$OVERFLOW" "$@"
}
stop_daemon
start_daemon --allow-gid "$GID" --hip-compiler test --max-conns-per-uid 2 ||
	{ not_ok start "kjitd did not start"; finish; exit 1; }
chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"
check "subuid-alone-admitted" in_subuid "$OWN" 1 "" "$KJITC" ping
# without KJIT_TRUST_UID the client cannot tell root from another user there: it refuses
in_subuid "$OWN" 1 "" env -u KJIT_TRUST_UID "$KJITC" ping >"$U/notrust.out" 2>&1
check "subuid client without KJIT_TRUST_UID refuses the overflow-uid daemon (exit 3, one line)" \
	sh -c "[ $? -eq 3 ] && grep -q 'refusing to talk to kjitd' '$U/notrust.out'"
in_subuid "$OWN" 1 "" python3 "$HOLD" silent "$KJIT_SOCKET" 1 6 "$U/h1" &
H1=$!
in_subuid "$OWN" 2 "" python3 "$HOLD" silent "$KJIT_SOCKET" 1 6 "$U/h2" &
H2=$!
i=0
while { [ ! -f "$U/h1" ] || [ ! -f "$U/h2" ]; } && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
check "subuid-two-connections-held" sh -c "head -n 1 '$U/h1' | grep -qx '1 0' && head -n 1 '$U/h2' | grep -qx '1 0'"
as_user "$OWN" "$KJITC" ping >"$T/ownping.out" 2>&1
check "subuid-charged-to-owner-owner-refused" sh -c "! grep -q 'answered' '$T/ownping.out'"
check "subuid-refusal-says-busy" grep -qi "busy\|connections" "$T/ownping.out"
in_subuid "$OWN" 3 "" "$KJITC" ping >"$T/sub3.out" 2>&1
check "subuid-charged-to-owner-third-subuid-refused" sh -c "! grep -q 'answered' '$T/sub3.out'"
check "subuid-other-user-unaffected" as_user "$OTH" "$KJITC" ping
grep -q "refused uid $(id -u "$OWN") " "$T/kjitd.log" && ok "subuid-refusal-logged-as-owner" ||
	not_ok "subuid-refusal-logged-as-owner" "no 'refused uid $(id -u "$OWN")' in the log"
wait "$H1" "$H2"
# --allow-gid: OUT's account is not in the group; a subuid of OUT that holds
# the group anyway (kept from a session) is not admitted, though a process
# of OUT's own uid holding it is (its groups are its own)
check "allowgid-direct-kept-group-admitted" setpriv --reuid="$OUT" --regid=nogroup --groups="$GID" \
	env KJIT_SOCKET="$KJIT_SOCKET" KJIT_NO_AUTOSTART=1 HOME=/ "$KJITC" ping
in_subuid "$OUT" 1 "$GID" "$KJITC" ping >"$T/outsub.out" 2>&1
check "allowgid-subuid-kept-group-refused" grep -q "access denied" "$T/outsub.out"
check "allowgid-subuid-of-member-admitted" in_subuid "$OWN" 4 "$GID" "$KJITC" ping

finish
