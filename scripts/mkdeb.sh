#!/bin/sh
# mkdeb.sh BUILD VERSION: the Debian package of kjit, BUILD/kjit_VERSION_ARCH.deb.
#
# A `make install PREFIX=/usr` staged into BUILD/root (the same install
# rule as everyone's, so the package cannot drift from it), then Debian's
# layout on top (units in /lib/systemd as bookworm's lintian wants, the
# Python module in /usr/lib/python3/dist-packages, man pages and the
# changelog gzipped, binaries stripped), the control files from
# packaging/deb/, and dpkg-deb.  Why not debhelper: docs/packaging.md.
# lintian runs on the result when it is installed (scripts/deps.sh --test
# installs it); an error from it fails the build.
set -eu
B=${1:?usage: mkdeb.sh BUILD VERSION}
VERSION=${2:?usage: mkdeb.sh BUILD VERSION}
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
ROOT="$B/root"
ARCH=$(dpkg --print-architecture)
DEB="$B/kjit_${VERSION}_$ARCH.deb"
# Reproducible: timestamps from the last commit (or now, outside git).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

unset MAKEFLAGS MFLAGS MAKELEVEL
# A first build here starts from the objects of the plain build (SEED_BUILD,
# default build/) when it is a gcc build without sanitizers: only the files
# with PREFIX compiled in (the Makefile's .prefix rule) are rebuilt for /usr.
SEED=${SEED_BUILD:-build}
if [ ! -d "$B/obj" ] && [ -f "$SEED/libkjit.a" ] && [ -f "$SEED/kjitd" ] &&
	! nm "$SEED/libkjit.a" 2>/dev/null | grep -q "__asan_init\|__gcov_" &&
	readelf -p .comment "$SEED/kjitd" 2>/dev/null | grep -q GCC && ! readelf -p .comment "$SEED/kjitd" | grep -qi clang; then
	mkdir -p "$B" && cp -a "$SEED/obj" "$B/obj"
	cp -a "$SEED/.deps-ok" "$B/" 2>/dev/null || true # its objects count as built after deps.sh
fi
make -s -j"$(nproc)" BUILD="$B" PREFIX=/usr SAN= OPT=-O2 all >/dev/null
rm -rf "$ROOT"
make -s BUILD="$B" PREFIX=/usr DESTDIR="$TOP/$ROOT" UNITDIR=/lib/systemd \
	PYTHONDIR=/usr/lib/python3/dist-packages install >"$B/install.log"

# Debian's layout.
find "$ROOT/usr/bin" "$ROOT/usr/lib" -type f \( -name '*.so*' -o -perm -u+x \) ! -name '*.py' |
	while read -r f; do
		if file -b "$f" | grep -q '^ELF'; then
			strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
		fi
	done
strip --strip-debug "$ROOT/usr/lib/libkjit.a"
find "$ROOT/usr/lib" -type f -name '*.so.*' -exec chmod 644 {} + # Debian: shared libraries are not executable
gzip -9n "$ROOT/usr/share/man/man1/kjit.1" "$ROOT/usr/share/man/man8/kjitd.8"
DOC="$ROOT/usr/share/doc/kjit"
install -d "$DOC"
install -m 644 packaging/deb/copyright "$DOC/copyright"
sed -e "s|@VERSION@|$VERSION|" -e "s|@DATE@|$(date -R -u -d "@$SOURCE_DATE_EPOCH")|" \
	packaging/deb/changelog | gzip -9n >"$DOC/changelog.gz"
chmod 644 "$DOC/changelog.gz"
find "$ROOT" -name __pycache__ -prune -exec rm -rf {} +

# Control files.
M="$B/meta"
rm -rf "$M" && mkdir -p "$M/debian" "$ROOT/DEBIAN"
printf 'Source: kjit\n\nPackage: kjit\nArchitecture: any\n' >"$M/debian/control"
elfs=$(find "$ROOT/usr/bin" "$ROOT/usr/lib" -type f -name '*.so*' -o -type f -path '*/bin/*' | sed "s|^|$TOP/|")
# shellcheck disable=SC2086
depends=$(cd "$M" && dpkg-shlibdeps -O --ignore-missing-info -xkjit $elfs 2>"$TOP/$B/shlibdeps.err" |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies:" >&2; cat "$B/shlibdeps.err" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$depends|" \
	packaging/deb/control.in >"$ROOT/DEBIAN/control"
for s in postinst prerm postrm; do install -m 755 "packaging/deb/$s" "$ROOT/DEBIAN/$s"; done
echo /etc/kjit/kjitd.conf >"$ROOT/DEBIAN/conffiles"
echo "activate-noawait ldconfig" >"$ROOT/DEBIAN/triggers"
echo "libkjit 0 kjit (>= $VERSION)" >"$ROOT/DEBIAN/shlibs"
chmod 644 "$ROOT/DEBIAN/conffiles" "$ROOT/DEBIAN/triggers" "$ROOT/DEBIAN/shlibs" "$ROOT/DEBIAN/control"
(cd "$ROOT" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
	xargs md5sum >DEBIAN/md5sums)
chmod 644 "$ROOT/DEBIAN/md5sums"
find "$ROOT" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

rm -f "$DEB"
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$DEB" >/dev/null
echo "mkdeb: $DEB"
if command -v lintian >/dev/null 2>&1; then
	lintian --fail-on error "$DEB"
	echo "mkdeb: lintian: no errors"
else
	echo "mkdeb: lintian is not installed (scripts/deps.sh --test): the package was NOT checked" >&2
fi
