#!/bin/sh
# deb.sh: the Debian package (`make deb`) installed on this machine as an
# admin would, used as a group member would, and purged.
#   1. `make deb` builds build-deb/kjit_VERSION_ARCH.deb and lintian finds no
#      error in it (mkdeb.sh fails on one); the package holds what issue 32
#      asks for (binaries, libkjit, header, kjit.pc, the Python module, man
#      pages, units, sysusers.d, tmpfiles.d, the conffile, bash completion).
#   2. dpkg -i: the group kjit and the user kjit-worker exist, /run/kjit was
#      made, nothing is enabled or started, --version on both programs is
#      the package's, pkg-config knows kjit.
#   3. The system kjitd run exactly as its units say (systemd is not PID 1
#      here): kjitd.socket's socket (systemd-socket-activate, then the
#      SocketGroup/SocketMode chown/chmod), kjitd.service's UMask and
#      ExecStart read from the installed unit, DynamicUser= as a throw-away
#      system user that owns the cache (CacheDirectory=, CacheDirectoryMode=;
#      systemd's /var/cache/private indirection is not reproduced).  An ordinary member of the
#      group compiles, hits, uses the Python module and a C program built
#      with pkg-config; a user outside the group is refused.
#   4. dpkg --purge leaves nothing behind: every path the package listed is
#      gone, and so are /etc/kjit, the cache and /run/kjit.
# It changes the machine (a package, two users), so it refuses to run where
# a kjit package or a system socket already exists, and its trap stops the
# daemon, purges the package and removes the users however it exits.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v dpkg >/dev/null || ! command -v setpriv >/dev/null; then
	echo "# skip deb: needs root, dpkg and setpriv"
	exit 0
fi
if dpkg-query -W -f='${Status}' kjit 2>/dev/null | grep -q installed || [ -e /run/kjit/kjitd.sock ]; then
	not_ok "deb" "a kjit package or /run/kjit/kjitd.sock is already here: not touching it"
	exit 1
fi
SA=$(command -v systemd-socket-activate 2>/dev/null)
[ -z "$SA" ] && [ -x /lib/systemd/systemd-socket-activate ] && SA=/lib/systemd/systemd-socket-activate

MEM="kjdm$$" OUT="kjdo$$" DYN="kjdy$$"
SA_PID=""
INSTALLED=""
# The package's group and user stay after a purge (Debian leaves system
# users); the test removes those that were not here before it.
HAD_GROUP=$(getent group kjit >/dev/null && echo 1)
HAD_WORKER=$(getent passwd kjit-worker >/dev/null && echo 1)
cleanup_deb() {
	if [ -n "$SA_PID" ]; then
		kill "$SA_PID" 2>/dev/null
		wait "$SA_PID" 2>/dev/null
	fi
	[ -n "$INSTALLED" ] && dpkg --purge kjit >/dev/null 2>&1
	userdel "$MEM" 2>/dev/null
	userdel "$OUT" 2>/dev/null
	userdel "$DYN" 2>/dev/null
	[ -n "$HAD_WORKER" ] || userdel kjit-worker 2>/dev/null
	[ -n "$HAD_GROUP" ] || groupdel kjit 2>/dev/null
	cleanup
}
trap cleanup_deb EXIT INT TERM

# ---- 1. build -----------------------------------------------------------------
cd "$TOP" || exit 1
unset MAKEFLAGS MFLAGS MAKELEVEL
make -s deb >"$T/mkdeb.out" 2>&1
rc=$?
VERSION=$(sed -n 's/^__version__ = "\([^"]*\)"$/\1/p' "$TOP/python/kjit/_version.py")
DEB="$TOP/build-deb/kjit_${VERSION}_$(dpkg --print-architecture).deb"
check "make deb succeeds (rc $rc: $(tail -n 3 "$T/mkdeb.out" | tr '\n' ' ' | head -c 300))" [ $rc -eq 0 ]
check "make deb: $DEB exists" [ -f "$DEB" ]
[ -f "$DEB" ] || exit 1
if command -v lintian >/dev/null 2>&1; then
	check "lintian: no error" grep -q 'mkdeb: lintian: no errors' "$T/mkdeb.out"
else
	not_ok "lintian" "not installed (scripts/deps.sh --test installs it): the package was NOT checked"
fi
dpkg-deb -c "$DEB" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^$' >"$T/contents"
for f in /usr/bin/kjitd /usr/bin/kjit /usr/lib/libkjit.so.0 /usr/lib/libkjit.so /usr/include/kjit.h \
	/usr/lib/pkgconfig/kjit.pc /usr/lib/python3/dist-packages/kjit/__init__.py \
	/usr/share/man/man1/kjit.1.gz /usr/share/man/man8/kjitd.8.gz /lib/systemd/system/kjitd.service \
	/lib/systemd/system/kjitd.socket /usr/lib/sysusers.d/kjit.conf /usr/lib/tmpfiles.d/kjit.conf \
	/etc/kjit/kjitd.conf /usr/share/bash-completion/completions/kjit /usr/share/doc/kjit/copyright \
	/usr/share/kjit/kernels_src/MANIFEST /usr/lib/kjit/nvrtc/libnvrtc.so.13; do
	check "package holds $f" grep -qxF "$f" "$T/contents"
done
check "package holds the Python package's C extension (kjit._hit)" \
	grep -q '^/usr/lib/python3/dist-packages/kjit/_hit\..*\.so$' "$T/contents"
check "package: /etc/kjit/kjitd.conf is a conffile" \
	sh -c "dpkg-deb -I '$DEB' conffiles | grep -qx /etc/kjit/kjitd.conf"

# ---- 2. install -----------------------------------------------------------------
# What is on the machine before, in the places a package may leave things.
snapshot() {
	find /etc /lib/systemd /usr/lib/sysusers.d /usr/lib/tmpfiles.d /usr/lib/python3/dist-packages \
		/usr/share/bash-completion/completions /usr/share/doc /var/cache /run/kjit -maxdepth 3 \
		! -path '/run/user/*' ! -path '/var/cache/apt*' ! -path '/var/cache/man*' ! -path '/var/cache/debconf*' \
		! -path '/etc/ld.so.cache' 2>/dev/null | grep -v '/kjit-e2e\.\|/kjit-attack-' | LC_ALL=C sort
}
snapshot >"$T/before"
while read -r f; do
	if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
done <"$T/contents" >"$T/existed"
INSTALLED=1
dpkg -i "$DEB" >"$T/dpkg.out" 2>&1
rc=$?
check "dpkg -i succeeds (rc $rc: $(tail -n 2 "$T/dpkg.out" | tr '\n' ' ' | head -c 300))" [ $rc -eq 0 ]
check "installed: dpkg says kjit is installed" \
	sh -c "dpkg-query -W -f='\${Status}' kjit | grep -q 'install ok installed'"
check "installed: the group kjit exists (sysusers.d)" sh -c "getent group kjit >/dev/null"
check "installed: the user kjit-worker exists (sysusers.d)" sh -c "getent passwd kjit-worker >/dev/null"
check "installed: /run/kjit made (tmpfiles.d)" [ -d /run/kjit ]
check "installed: no unit enabled (no symlink into sockets.target.wants or multi-user.target.wants)" \
	sh -c "! ls /etc/systemd/system/*.wants/kjitd.* >/dev/null 2>&1"
started=""
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = /usr/bin/kjitd ] && started="$started ${p#/proc/}"
done
check "installed: nothing started (no /usr/bin/kjitd process:${started:- none})" [ -z "$started" ]
check "kjitd --version: kjitd $VERSION" [ "$(/usr/bin/kjitd --version 2>&1)" = "kjitd $VERSION" ]
check "kjit --version: kjit $VERSION" [ "$(/usr/bin/kjit --version 2>&1)" = "kjit $VERSION" ]
check "pkg-config --modversion kjit: $VERSION" [ "$(pkg-config --modversion kjit 2>&1)" = "$VERSION" ]

# ---- 3. the system kjitd as its units run it ---------------------------------------
UNIT=/lib/systemd/system/kjitd.service
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
LISTEN=$(sed -n 's/^ListenStream=//p' /lib/systemd/system/kjitd.socket)
SGROUP=$(sed -n 's/^SocketGroup=//p' /lib/systemd/system/kjitd.socket)
SMODE=$(sed -n 's/^SocketMode=//p' /lib/systemd/system/kjitd.socket)
UMASK=$(sed -n 's/^UMask=//p' "$UNIT")
CMODE=$(sed -n 's/^CacheDirectoryMode=//p' "$UNIT")
CDIR=/var/cache/$(sed -n 's/^CacheDirectory=//p' "$UNIT")
check "unit: DynamicUser=yes, CacheDirectory=kjit (what this test reproduces)" \
	sh -c "grep -qx DynamicUser=yes '$UNIT' && [ '$CDIR' = /var/cache/kjit ]"
check "unit: ExecStart runs /usr/bin/kjitd ($EXEC)" sh -c "echo '$EXEC' | grep -q '^/usr/bin/kjitd '"
useradd -M -N -g nogroup -G kjit -s /bin/sh "$MEM" && useradd -M -N -g nogroup -s /bin/sh "$OUT" &&
	useradd --system -M -U -s /usr/sbin/nologin "$DYN" ||
	{ not_ok users "cannot create users"; exit 1; }
as_user() { # user, command...
	u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups env -u KJIT_SOCKET -u KJIT_CACHE_DIR \
		KJIT_SOCKET="$LISTEN" KJIT_NO_AUTOSTART=1 HOME=/ PATH=/usr/bin:/bin "$@"
}
PUB="$T/pub"
mkdir -p "$PUB" && cp "$TOP/tests/e2e/data/scale.hip" "$PUB/" && chmod 0755 "$T" "$PUB" && chmod 0644 "$PUB/scale.hip"
if [ -z "$SA" ]; then
	not_ok "systemd-socket-activate" "not installed (package systemd): the system kjitd was NOT run"
	exit 1
fi
# shellcheck disable=SC2086
install -d -m "$CMODE" -o "$DYN" -g "$DYN" "$CDIR"
# The admin's setting in the conffile, read by the system kjitd (--system).
echo "max-size = 3G" >>/etc/kjit/kjitd.conf
cline=$(grep -c '' /etc/kjit/kjitd.conf)
# shellcheck disable=SC2086
(umask "$UMASK" && exec "$SA" -l "$LISTEN" setpriv --reuid="$DYN" --regid="$DYN" --clear-groups \
	--no-new-privs $EXEC) >"$T/kjitd.out" 2>&1 &
SA_PID=$!
i=0
while [ ! -S "$LISTEN" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
chgrp "$SGROUP" "$LISTEN" && chmod "$SMODE" "$LISTEN"
check "socket: $LISTEN is $SMODE root:$SGROUP" [ "$(stat -c '%a %U:%G' "$LISTEN")" = "${SMODE#0} root:$SGROUP" ]

as_user "$MEM" /usr/bin/kjit get --source "$PUB/scale.hip" --backend hip --target gfx90a -o /dev/null >"$T/g1" 2>&1
rc=$?
check "member of kjit: kjit get compiles through the system kjitd (rc $rc: $(head -c 200 "$T/g1"))" \
	sh -c "[ $rc -eq 0 ] && grep -q '^compiled ' '$T/g1'"
as_user "$MEM" /usr/bin/kjit get --source "$PUB/scale.hip" --backend hip --target gfx90a -o /dev/null >"$T/g2" 2>&1
check "member of kjit: the repeat is a hit" grep -q '^hit ' "$T/g2"
as_user "$MEM" /usr/bin/python3 -c "
import kjit, sys
assert kjit.__version__ == '$VERSION', kjit.__version__
assert kjit.library_path() == '/usr/lib/libkjit.so.0', kjit.library_path()
o = kjit.get(open('$PUB/scale.hip').read(), backend='hip', target='gfx90a')
print(o.status)
print(kjit.default_client().hit_path)
" >"$T/py" 2>&1
check "member of kjit: Debian's python3 imports the packaged kjit, loads /usr/lib/libkjit.so.0, gets a hit" \
	grep -qx 'hit' "$T/py"
check "member of kjit: ... through the packaged C extension ($(tail -n 1 "$T/py" | head -c 100))" \
	grep -qx 'extension' "$T/py"
cat >"$PUB/prog.c" <<'EOF'
#include <kjit.h>
#include <stdio.h>
int main(void)
{
	kjit_open_options o = { .socket_path = "/run/kjit/kjitd.sock", .no_autostart = 1 };
	kjit_client *c;
	int r = kjit_open(&c, &o);
	if (r == 0)
		r = kjit_ping(c);
	printf("%s\n", r == 0 ? "pong" : kjit_strerror(r));
	return r != 0;
}
EOF
chmod 0644 "$PUB/prog.c" && chmod 0777 "$PUB"
as_user "$MEM" sh -c "cc -o '$PUB/prog' '$PUB/prog.c' \$(pkg-config --cflags --libs kjit) && '$PUB/prog'" >"$T/prog" 2>&1
check "member of kjit: a C program built with pkg-config kjit pings the system kjitd ($(head -c 200 "$T/prog"))" \
	grep -qx pong "$T/prog"
as_user "$MEM" /usr/bin/kjit config >"$T/config" 2>&1
check "kjit config: max-size 3G from /etc/kjit/kjitd.conf:$cline ($(grep '^max-size ' "$T/config" | tr -s ' '))" \
	grep -q "^max-size  *3G  *'*/etc/kjit/kjitd.conf:$cline\$" "$T/config"
check "kjit config: the unit's --system from the command line" grep -q '^system  *yes  *command line$' "$T/config"
kill -HUP "$SA_PID" # socket-activate and setpriv exec'd: it is kjitd now
sleep 0.3
as_user "$MEM" /usr/bin/kjit ping >/dev/null 2>&1
check "SIGHUP (systemctl reload): the system kjitd serves on" [ $? -eq 0 ]
check "SIGHUP: it says it reread /etc/kjit/kjitd.conf" grep -q 'configuration reread from /etc/kjit/kjitd.conf' "$T/kjitd.out"
as_user "$OUT" /usr/bin/kjit ping >"$T/out" 2>&1
rc=$?
check "a user outside the group kjit cannot use the socket (rc $rc)" [ $rc -ne 0 ]
kill "$SA_PID" 2>/dev/null
wait "$SA_PID" 2>/dev/null
SA_PID=""

# ---- 4. purge -------------------------------------------------------------------
dpkg --purge kjit >"$T/purge.out" 2>&1
rc=$?
check "dpkg --purge kjit succeeds (rc $rc: $(tail -n 2 "$T/purge.out" | tr '\n' ' ' | head -c 300))" [ $rc -eq 0 ]
INSTALLED=""
left=""
while read -r f; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	# a folder that was here before (/usr/bin, /lib/systemd/system) stays
	grep -qxF "$f" "$T/existed" && continue
	left="$left $f"
done <"$T/contents"
check "purge: nothing of the package's file list is left (${left:-none})" [ -z "$left" ]
for f in /etc/kjit /var/cache/kjit /var/cache/private/kjit /run/kjit; do
	check "purge: $f is gone" sh -c "[ ! -e '$f' ]"
done
snapshot >"$T/after"
diff "$T/before" "$T/after" >"$T/diff"
check "purge: the group kjit and the user kjit-worker stay (Debian's way with system users)" \
	sh -c "getent group kjit >/dev/null && getent passwd kjit-worker >/dev/null"
check "purge: /etc, /lib/systemd, /var/cache, /run... as before the install ($(head -c 300 "$T/diff" | tr '\n' ' '))" \
	[ ! -s "$T/diff" ]
[ "$FAILS" -eq 0 ]
