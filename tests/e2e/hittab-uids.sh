#!/bin/sh
# hittab-uids.sh: per-uid hit tables on a shared daemon (issue 35, item 1;
# docs/hitpath.md, "Who may map it").  A root kjitd with --system and
# --allow-gid G, two real users A and B in G (temporary, removed however
# the test ends):
#   - each gets fast-path hits for its own objects (kjit stats' fast_hits);
#   - the table ATTACH hands A holds A's object and nothing of B's, and the
#     other way round (every mapped byte scanned for the other's marker);
#   - B's first request of an object A compiled is not a fast hit (it is
#     not in B's table before B asked); B's second one is;
#   - neither can open the daemon's descriptors through /proc/<kjitd>/fd
#     (where every table's memfd is);
#   - the tables are bounded: uids past KJ_HITTAB_UIDS_MAX (16) get none
#     ("taken", logged once) and keep their socket hits.
# Helper: attack.c (attach-scan).
. "$(dirname "$0")/lib.sh"

users_or_skip hittab-uids
AT="$T/attack"
build_helper attack "$AT" || exit 1
KJITC="$T/kjit"
cp "$KJIT" "$KJITC" && chmod 0755 "$T" "$KJITC" "$AT"
A="$T/a"
mkdir -p "$A" && chmod 0777 "$A"
UA="kjha$$" UB="kjhb$$"
make_users "kjhg$$" "$UA" "$UB" || exit 1
as_uid() { # numeric uid (no passwd entry), command...
	u=$1
	shift
	setpriv --reuid="$u" --regid="$GID" --clear-groups env KJIT_SOCKET="$KJIT_SOCKET" KJIT_NO_AUTOSTART=1 HOME=/ "$@"
}

# Each user's source: the test compiler's object holds the source text, so
# a marker in the source is in the object, and in every table holding it.
MA="k_uida_$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
MB="k_uidb_$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
printf 'extern "C" __global__ void %s(int *p) { p[0] = 1; }\n' "$MA" >"$A/a.hip"
printf 'extern "C" __global__ void %s(int *p) { p[0] = 2; }\n' "$MB" >"$A/b.hip"
chmod 0644 "$A"/*.hip
# get USER SRC OUT: prints the first word of kjit's answer (compiled, hit).
get() {
	as_user "$1" "$KJITC" get --source "$A/$2" --backend hip --target gfx90a -o "$A/$3" 2>&1 | cut -d' ' -f1
}

start_daemon --system --allow-gid "$GID" --hip-compiler test --jobs 2 ||
	{ not_ok start "kjitd --system did not start"; exit 1; }
chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"
check "one table per uid is logged" grep -q "shared hit table on, one per uid" "$T/kjitd.log"

for u in "$UA" "$UB"; do
	s=a.hip
	[ "$u" = "$UB" ] && s=b.hip
	check "$u: compiled" [ "$(get "$u" $s "$u-1")" = compiled ]
	check "$u: then a hit" [ "$(get "$u" $s "$u-2")" = hit ]
	f0=$(stat_value fast_hits)
	check "$u: then a hit again" [ "$(get "$u" $s "$u-3")" = hit ]
	check "$u: served by the fast path of its own table ($f0 -> $(stat_value fast_hits))" \
		[ "$(stat_value fast_hits)" -gt "$f0" ]
	check "$u: the same bytes" cmp -s "$A/$u-1" "$A/$u-3"
done

as_user "$UA" "$AT" attach-scan "$MA" "$MB" >"$T/scan-a" 2>&1
as_user "$UB" "$AT" attach-scan "$MA" "$MB" >"$T/scan-b" 2>&1
check "A maps a table of its own" grep -q mapped "$T/scan-a"
check "A's table holds A's object (the scan finds what is there)" grep -q "FOUND $MA" "$T/scan-a"
check "A's table holds nothing of B's" sh -c "! grep -q 'FOUND $MB' '$T/scan-a'"
check "B's table holds B's object" grep -q "FOUND $MB" "$T/scan-b"
check "B's table holds nothing of A's" sh -c "! grep -q 'FOUND $MA' '$T/scan-b'"

# B asks for the object A compiled (the same source): not in B's table
# before B asked, so not a fast hit; then it is, and only then B's table
# holds it.
f0=$(stat_value fast_hits)
check "B asks for A's object: a hit" [ "$(get "$UB" a.hip b-of-a-1)" = hit ]
check "through the socket, not B's table (fast hits $f0 -> $(stat_value fast_hits))" [ "$(stat_value fast_hits)" -eq "$f0" ]
check "B's second request: a hit" [ "$(get "$UB" a.hip b-of-a-2)" = hit ]
check "now from B's table" [ "$(stat_value fast_hits)" -gt "$f0" ]
as_user "$UB" "$AT" attach-scan "$MA" >"$T/scan-b2" 2>&1
check "B's table holds A's object once B asked for it" grep -q "FOUND $MA" "$T/scan-b2"

# The daemon's descriptors, each table's memfd among them, through /proc.
n_memfd=0
opened=""
for f in /proc/"$DAEMON_PID"/fd/*; do
	case $(readlink "$f") in "/memfd:"*) n_memfd=$((n_memfd + 1)) ;; esac
	as_user "$UA" head -c 8 "$f" >/dev/null 2>&1 && opened="$opened $f"
	as_user "$UB" dd if="$f" of=/dev/null bs=8 count=1 2>/dev/null && opened="$opened $f"
done
check "kjitd holds a memfd per table ($n_memfd)" [ "$n_memfd" -ge 3 ]
check "no user opens any of kjitd's descriptors through /proc${opened:+: $opened}" [ -z "$opened" ]
cant_list() { ! as_user "$UA" ls "/proc/$DAEMON_PID/fd" >/dev/null 2>&1; }
check "nor lists them" cant_list

# The bound: the daemon's own uid, A and B hold 3 tables; 13 more uids get
# one, every later uid none (its hits go through the socket), logged once.
mapped=0 none=0
for u in $(seq 60001 60020); do
	as_uid "$u" "$AT" attach-scan "$MA" >"$T/scan-$u" 2>&1
	grep -q mapped "$T/scan-$u" && mapped=$((mapped + 1))
	grep -q "no table.*taken" "$T/scan-$u" && none=$((none + 1))
done
check "13 more uids get a table, 7 get none ($mapped, $none)" [ "$mapped.$none" = 13.7 ]
check "none of those holds A's object" sh -c "! grep -q FOUND '$T'/scan-600*"
check "tables taken: logged once" [ "$(grep -c "every per-uid hit table is taken" "$T/kjitd.log")" -eq 1 ]
check "a uid without a table still gets its hits (socket)" \
	sh -c "setpriv --reuid=60020 --regid=$GID --clear-groups env KJIT_SOCKET='$KJIT_SOCKET' KJIT_NO_AUTOSTART=1 HOME=/ \
	'$KJITC' get --source '$A/a.hip' --backend hip --target gfx90a -o /dev/null | grep -q '^hit '"
check "A still gets fast hits" [ "$(get "$UA" a.hip a-4)" = hit ]
check "the daemon is alive" "$KJIT" ping
stop_daemon
exit_code=0
finish || exit_code=1
exit $exit_code
