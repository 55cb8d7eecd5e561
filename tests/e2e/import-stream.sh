#!/bin/sh
# import-stream.sh: `kjit import` reads the bundle in the client and streams
# it (issue 32 item 5).  A root kjitd with --admin-gid; a second user of that
# group imports a bundle from a folder only they can read, and from a
# private mount (unshare -m: a tmpfs kjitd cannot see at all, as a
# sandboxed system kjitd cannot see /home), so kjitd cannot have opened the
# path; `import -` reads stdin; a user outside the group is refused; a
# streamed bundle that is not a bundle is refused and kjitd serves on.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! command -v unshare >/dev/null; then
	echo "# skip import-stream: needs root, setpriv and unshare (temporary users, a private mount)"
	exit 0
fi
GNAME="kjig$$" ADM="kjia$$" OTH="kjio$$"
cleanup_is() {
	stop_daemon
	userdel "$ADM" 2>/dev/null
	userdel "$OTH" 2>/dev/null
	groupdel "$GNAME" 2>/dev/null
	rm -rf "$T"
}
trap cleanup_is EXIT INT TERM
groupadd "$GNAME" && useradd -M -N -g nogroup -G "$GNAME" -s /bin/sh "$ADM" &&
	useradd -M -N -g nogroup -s /bin/sh "$OTH" || { not_ok users "cannot create users"; exit 1; }
GID=$(getent group "$GNAME" | cut -d: -f3)
KJITC="$T/kjit"
cp "$KJIT" "$KJITC" && chmod 0755 "$T" "$KJITC"
as_user() { # user, command...
	u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups env KJIT_SOCKET="$KJIT_SOCKET" \
		KJIT_NO_AUTOSTART=1 HOME=/ "$@"
}

start_daemon --allow-gid "$GID" --allow-uid "$(id -u "$OTH")" --admin-gid "$GID" || { not_ok "start kjitd" "see above"; exit 1; }
chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"
SRC="$TOP/tests/e2e/data/scale.hip"
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o /dev/null >/dev/null 2>&1
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -D SCALE=3 -o /dev/null >/dev/null 2>&1
"$KJIT" export -o "$T/all.kjb" >"$T/exp" 2>&1
check "export of 2 entries" grep -q 'export' "$T/exp"
"$KJIT" clear >/dev/null 2>&1
check "cleared: no entry left" sh -c "[ -z \"\$('$KJIT' ls 2>/dev/null)\" ]"

# A folder only the user can read.
P="$T/private"
mkdir -p "$P" && cp "$T/all.kjb" "$P/x.kjb" && chown -R "$ADM" "$P" && chmod 0700 "$P" && chmod 0600 "$P/x.kjb"
as_user "$ADM" "$KJITC" import "$P/x.kjb" >"$T/imp1" 2>&1
rc=$?
check "an --admin-gid user imports a bundle from their 0700 folder (rc $rc: $(head -c 200 "$T/imp1"))" \
	sh -c "[ $rc -eq 0 ] && grep -q 'import: 2 entries added' '$T/imp1'"
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o /dev/null >"$T/r" 2>&1
check "an imported entry is a hit" grep -q '^hit ' "$T/r"

# A path kjitd cannot see at all: a tmpfs in the user's own mount namespace.
"$KJIT" clear >/dev/null 2>&1
M="$T/mnt"
mkdir -p "$M" && chmod 0755 "$M"
unshare -m sh -c "mount -t tmpfs -o mode=0700 none '$M' && cp '$T/all.kjb' '$M/y.kjb' &&
	chown -R $ADM '$M' && setpriv --reuid=$ADM --regid=\$(id -g $ADM) --init-groups \
	env KJIT_SOCKET='$KJIT_SOCKET' KJIT_NO_AUTOSTART=1 HOME=/ '$KJITC' import '$M/y.kjb'" >"$T/imp2" 2>&1
rc=$?
check "a bundle on a mount kjitd cannot see imports (rc $rc: $(head -c 200 "$T/imp2"))" \
	sh -c "[ $rc -eq 0 ] && grep -q 'import: 2 entries added' '$T/imp2'"
check "(kjitd's view of that folder is empty)" [ ! -e "$M/y.kjb" ]

# import - : standard input.
"$KJIT" clear >/dev/null 2>&1
as_user "$ADM" sh -c "cat '$P/x.kjb' 2>/dev/null" | as_user "$ADM" "$KJITC" import - --json >"$T/imp3" 2>&1
rc=$?
check "import - reads the bundle from stdin (rc $rc: $(head -c 200 "$T/imp3"))" \
	sh -c "[ $rc -eq 0 ] && grep -q '\"imported\":2' '$T/imp3'"

# Refusals.
as_user "$OTH" "$KJITC" import - <"$T/all.kjb" >"$T/imp4" 2>&1
rc=$?
check "a user outside --admin-gid is refused in one line (rc $rc)" \
	sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$T/imp4') -eq 1 ] && grep -q 'reserved to kjitd' '$T/imp4'"
head -c 5000 /dev/urandom >"$T/junk.kjb"
"$KJIT" import "$T/junk.kjb" >"$T/imp5" 2>&1
rc=$?
check "a streamed file that is no bundle is refused (rc $rc: $(head -c 150 "$T/imp5"))" [ $rc -eq 1 ]
: >"$T/empty.kjb"
"$KJIT" import "$T/empty.kjb" >"$T/imp6" 2>&1
check "an empty file is refused by the client" grep -q 'is empty' "$T/imp6"
"$KJIT" import - </dev/null >"$T/imp7" 2>&1
check "import - with nothing on stdin is refused" grep -q 'stdin is empty' "$T/imp7"
"$KJIT" ping >/dev/null 2>&1
check "kjitd still serves" [ $? -eq 0 ]
n=$(ls -A "$KJIT_CACHE_DIR/tmp" 2>/dev/null | grep -vc '^worker-')
check "no upload left in the cache's tmp (O_TMPFILE: $n named files besides the workers')" [ "$n" -eq 0 ]
[ "$FAILS" -eq 0 ]
