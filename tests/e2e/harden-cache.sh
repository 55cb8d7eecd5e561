#!/bin/sh
# Issue 16 (items 1, 4, 5, 6): `-o` writes as cp does (a FIFO, a symlink, a
# character device made with mknod and /dev/null are written, never
# replaced); the cache is 0700 with 0600 files; a target directory or
# recipes/ replaced by a symlink is refused and nothing is written where it
# points; a loose cache directory is refused in one line; a user other than
# kjitd's owner cannot stop, clear, gc or verify it and lists only its own
# entries (a temporary user, removed however the test ends).  About 5 s.
. "$(dirname "$0")/lib.sh"

TUSER=kjt$$
TGROUP=kjg$$
user_cleanup() {
	userdel "$TUSER" >/dev/null 2>&1
	groupdel "$TGROUP" >/dev/null 2>&1
	cleanup
}
trap user_cleanup EXIT INT TERM

umask 022
start_daemon --hip-compiler test || { not_ok start "kjitd did not start"; exit 1; }
printf 'kernel one\n' >"$T/one.hip"
GET="$KJIT get --backend hip --target gfx90a"

# ---- item 1: -o ----
$GET --source "$T/one.hip" -o "$T/plain.bin" >/dev/null 2>"$T/err"
check "-o FILE writes the object" cmp -s "$T/plain.bin" "$T/one.hip"
check "-o FILE is 0644 under umask 022 (not the temporary's 0600)" [ "$(stat -c %a "$T/plain.bin")" = 644 ]
chmod 0640 "$T/plain.bin"
$GET --source "$T/one.hip" -o "$T/plain.bin" >/dev/null 2>&1
check "-o over an existing file keeps its mode" [ "$(stat -c %a "$T/plain.bin")" = 640 ]
check "-o leaves no temporary beside the file" [ -z "$(ls "$T" | grep 'plain.bin.tmp')" ]

echo old >"$T/real.bin"
ln -s real.bin "$T/link.bin"
$GET --source "$T/one.hip" -o "$T/link.bin" >/dev/null 2>&1
check "-o SYMLINK writes the link's target" cmp -s "$T/real.bin" "$T/one.hip"
check "-o SYMLINK keeps the link" [ -L "$T/link.bin" ]
ln -s "$T/made.bin" "$T/dangling.bin"
$GET --source "$T/one.hip" -o "$T/dangling.bin" >/dev/null 2>&1
check "-o DANGLING-SYMLINK creates its target and keeps the link" sh -c "[ -L '$T/dangling.bin' ] && cmp -s '$T/made.bin' '$T/one.hip'"

mkfifo "$T/fifo"
cat "$T/fifo" >"$T/fifo.out" &
reader=$!
$GET --source "$T/one.hip" -o "$T/fifo" >/dev/null 2>"$T/err"
rc=$?
wait $reader
check "-o FIFO exits 0" [ $rc -eq 0 ]
check "-o FIFO: the reader got the object" cmp -s "$T/fifo.out" "$T/one.hip"
check "-o FIFO: still a FIFO" [ -p "$T/fifo" ]

if mknod "$T/null" c 1 3 2>/dev/null; then
	$GET --source "$T/one.hip" -o "$T/null" >/dev/null 2>&1
	check "-o CHAR-DEVICE (mknod c 1 3) exits 0 and stays a character device" sh -c "[ -c '$T/null' ] && [ ! -s '$T/null' ]"
else
	ok "-o CHAR-DEVICE skipped: mknod not permitted here"
fi
if [ -c /dev/null ]; then
	$GET --source "$T/one.hip" -o /dev/null >/dev/null 2>&1
	check "-o /dev/null stays a character device" [ -c /dev/null ]
else # another program (an old kjit...) replaced it: not ours to judge
	not_ok "-o /dev/null" "/dev/null was not a character device before this test (replaced by another program); restore it: mknod -m 666 /dev/null c 1 3"
fi
$GET --source "$T/one.hip" -o - >"$T/stdout.bin" 2>"$T/err"
check "-o - writes the object on stdout" cmp -s "$T/stdout.bin" "$T/one.hip"
check "-o -: the status line goes to stderr" grep -q '^hit ' "$T/err"
$GET --source "$T/one.hip" -o "$KJIT_SOCKET" >/dev/null 2>"$T/err"
check "-o SOCKET is refused in one line" sh -c "[ \$(wc -l <'$T/err') -eq 1 ] && grep -q 'is a socket' '$T/err' && [ -S '$KJIT_SOCKET' ]"
mkdir "$T/adir"
$GET --source "$T/one.hip" -o "$T/adir" >/dev/null 2>"$T/err"
check "-o DIRECTORY is refused" sh -c "grep -q 'is a directory' '$T/err' && [ -d '$T/adir' ]"

"$KJIT" export -o "$T/fifo" >/dev/null 2>"$T/err"
check "export -o FIFO is refused by kjitd (it must not block)" sh -c "grep -q 'writes only regular files' '$T/err' && [ -p '$T/fifo' ]"
ln -s bundle.real "$T/bundle.link"
"$KJIT" export -o "$T/bundle.link" >/dev/null 2>&1
check "export -o SYMLINK writes the target, keeps the link" sh -c "[ -L '$T/bundle.link' ] && [ \"\$(head -c 8 '$T/bundle.real')\" = KJITBNDL ]"
"$KJIT" export -o - >"$T/bundle.out" 2>"$T/err"
check "export -o - writes the bundle on stdout" cmp -s "$T/bundle.out" "$T/bundle.real"

# ---- item 6: modes ----
key=$($KJIT ls | awk '{print $1; exit}')
obj=$(ls "$KJIT_CACHE_DIR"/gfx90a-*/*.hsaco 2>/dev/null | head -n 1)
check "the per-user cache is 0700" [ "$(stat -c %a "$KJIT_CACHE_DIR")" = 700 ]
check "its object files are 0600" [ -n "$obj" -a "$(stat -c %a "$obj" 2>/dev/null)" = 600 ]
check "its index is 0600" [ "$(stat -c %a "$KJIT_CACHE_DIR/index.sqlite")" = 600 ]
rec=$(ls "$KJIT_CACHE_DIR"/recipes/*.req 2>/dev/null | head -n 1)
check "its recipes are 0600" [ -n "$rec" -a "$(stat -c %a "$rec" 2>/dev/null)" = 600 ]

# ---- item 5: symlinks inside the cache ----
sub=$(dirname "$obj")
mkdir "$T/elsewhere" "$T/elsewhere2"
mv "$sub" "$T/moved-sub"
ln -s "$T/elsewhere" "$sub"
printf 'kernel two\n' >"$T/two.hip"
$GET --source "$T/two.hip" -o "$T/two.bin" >/dev/null 2>&1
check "a compile into a symlinked target directory is still served" cmp -s "$T/two.bin" "$T/two.hip"
check "nothing was written where the symlinked target directory points" [ -z "$(ls -A "$T/elsewhere")" ]
check "kjitd says it refused the symlink" grep -q "refusing $sub: a symlink" "$T/kjitd.log"
rm "$sub"
mv "$T/moved-sub" "$sub"
mv "$KJIT_CACHE_DIR/recipes" "$T/moved-recipes"
ln -s "$T/elsewhere2" "$KJIT_CACHE_DIR/recipes"
printf 'kernel three\n' >"$T/three.hip"
$GET --source "$T/three.hip" >/dev/null 2>&1
check "nothing was written where a symlinked recipes/ points" [ -z "$(ls -A "$T/elsewhere2")" ]
rm "$KJIT_CACHE_DIR/recipes"
mv "$T/moved-recipes" "$KJIT_CACHE_DIR/recipes"

# ---- item 5: a loose cache directory ----
stop_daemon
chmod 0777 "$KJIT_CACHE_DIR"
"$KJITD" --foreground --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --hip-compiler test >"$T/loose.out" 2>&1
rc=$?
check "kjitd refuses a cache directory others may write" [ $rc -ne 0 ]
check "... in one line that says why" sh -c "[ \$(wc -l <'$T/loose.out') -eq 1 ] && grep -q 'writable by its group or others' '$T/loose.out'"
chmod 0700 "$KJIT_CACHE_DIR"

# ---- item 4: roles ----
if ! groupadd "$TGROUP" 2>/dev/null || ! useradd -M -N -g "$TGROUP" -s /usr/sbin/nologin "$TUSER" 2>/dev/null; then
	ok "roles skipped: cannot create a temporary user (not root?)"
	finish
	exit $?
fi
uid=$(id -u "$TUSER")
gid=$(getent group "$TGROUP" | cut -d: -f3)
groupadd "${TGROUP}a" 2>/dev/null
agid=$(getent group "${TGROUP}a" | cut -d: -f3)
chmod 0755 "$T" "$T/sock"
start_daemon --hip-compiler test --admin-gid "$agid" || { not_ok start2 "kjitd did not restart"; groupdel "${TGROUP}a"; exit 1; }
chmod 0666 "$KJIT_SOCKET"
as_user() { setpriv --reuid "$uid" --regid "$gid" --clear-groups env HOME=/nonexistent "$@"; }
as_admin_member() { setpriv --reuid "$uid" --regid "$gid" --groups "$agid" env HOME=/nonexistent "$@"; }
mkdir "$T/u" && printf 'kernel of the user\n' >"$T/u/mine.hip" && chmod -R a+rX "$T/u"
as_user "$KJIT" get --source "$T/u/mine.hip" --backend hip --target gfx90a >"$T/ug" 2>&1
check "a non-owner compiles" grep -q '^compiled ' "$T/ug"
mykey=$(awk '{print $2}' "$T/ug")
as_user "$KJIT" ls >"$T/uls" 2>&1
check "a non-owner's ls shows its own entry" grep -q "^$mykey " "$T/uls"
check "a non-owner's ls shows nothing else" [ "$(wc -l <"$T/uls")" -eq 1 ]
"$KJIT" ls >"$T/ols" 2>&1
check "the owner's ls shows every entry, the user's too" sh -c "grep -q '^$mykey ' '$T/ols' && grep -q '^$key ' '$T/ols'"
as_user "$KJIT" show "$key" >"$T/ushow" 2>&1
check "a non-owner cannot show another's entry" grep -q "no cache entry $key" "$T/ushow"
as_user "$KJIT" show "$mykey" >/dev/null 2>&1
check "a non-owner shows its own entry" [ $? -eq 0 ]
for cmd in stop clear gc verify "stats --zero" "warm --replay"; do
	as_user "$KJIT" $cmd >"$T/uadm" 2>&1
	rc=$?
	check "a non-owner's $cmd is refused in one line" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$T/uadm') -eq 1 ] && grep -q 'reserved to kjitd.s owner' '$T/uadm'"
done
"$KJIT" ping >/dev/null 2>&1
check "kjitd still serves after the refused stop" [ $? -eq 0 ]
as_user "$KJIT" stats >/dev/null 2>&1
check "a non-owner reads the counters" [ $? -eq 0 ]
as_admin_member "$KJIT" gc >/dev/null 2>&1
check "an --admin-gid member (supplementary group) may gc" [ $? -eq 0 ]
as_admin_member "$KJIT" export -o "$T/u/b.bundle" >"$T/uexp" 2>&1
check "an --admin-gid member may not make kjitd write a file" grep -q 'reserved to kjitd' "$T/uexp"
as_admin_member "$KJIT" stop >/dev/null 2>&1
check "an --admin-gid member may stop kjitd" [ $? -eq 0 ]
i=0
while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
check "kjitd stopped for the admin group member" sh -c "! kill -0 $DAEMON_PID 2>/dev/null"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=""
groupdel "${TGROUP}a" 2>/dev/null
finish
