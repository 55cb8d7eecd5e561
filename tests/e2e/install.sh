#!/bin/sh
# install.sh: `make install DESTDIR=... PREFIX=/usr` into a temporary root,
# from a build of its own made for that PREFIX (kjit and kjitd have PREFIX
# compiled in), then: every file in place, PREFIX substituted in kjit.pc and
# the units, the man pages render without a warning, a C program builds with
# `pkg-config --cflags --libs kjit` (shared) and against libkjit.a (static)
# and talks to the installed kjitd, which serves a bundled kernel from the
# installed kernels_src; `make uninstall` removes it all again.
. "$(dirname "$0")/lib.sh"

# expect NAME WHY CMD...: ok NAME if CMD succeeds, else not ok NAME: WHY.
expect() {
	name=$1 why=$2
	shift 2
	if "$@"; then ok "$name"; else not_ok "$name" "$why"; fi
}

ROOT="$T/root"
P="$ROOT/usr"
IBUILD="$T/build"
JOBS=$(nproc 2>/dev/null || echo 2)

cd "$TOP" || exit 1
# A plain build, whatever make (test-asan's SAN=1...) started this test.
unset MAKEFLAGS MFLAGS MAKELEVEL
make -s -j"$JOBS" SAN= OPT=-O2 BUILD="$IBUILD" PREFIX=/usr DESTDIR="$ROOT" install >"$T/make.out" 2>&1
rc=$?
expect "make install DESTDIR=... PREFIX=/usr succeeds" "rc $rc: $(tail -n 3 "$T/make.out" | tr '\n' ' ' | head -c 300)" [ $rc -eq 0 ]

for f in bin/kjitd bin/kjit lib/libkjit.so.0 lib/libkjit.a include/kjit.h lib/pkgconfig/kjit.pc \
	share/man/man1/kjit.1 share/man/man8/kjitd.8 lib/systemd/system/kjitd.socket \
	lib/systemd/system/kjitd.service lib/systemd/user/kjitd.socket lib/systemd/user/kjitd.service \
	lib/sysusers.d/kjit.conf share/kjit/kernels_src/MANIFEST; do
	check "installed: /usr/$f" [ -f "$P/$f" ]
done
check "installed: bin/kjitd and bin/kjit are executable" sh -c "[ -x '$P/bin/kjitd' ] && [ -x '$P/bin/kjit' ]"
# The tests' fake compiler family stays in the build (issue 33).
check "installed kjitd has no \"test\" compiler family" sh -c "! grep -q 'kjit_test' '$P/bin/kjitd'"
check "installed: lib/libkjit.so -> libkjit.so.0" [ "$(readlink "$P/lib/libkjit.so" 2>/dev/null)" = libkjit.so.0 ]
soname=$(readelf -d "$P/lib/libkjit.so.0" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\].*/\1/p')
check "libkjit.so.0: SONAME is libkjit.so.0 (${soname:-none})" [ "$soname" = libkjit.so.0 ]
check "kjit.pc: prefix=/usr" grep -qx 'prefix=/usr' "$P/lib/pkgconfig/kjit.pc"
check "units: no @PREFIX@ left" sh -c "! grep -rq @PREFIX@ '$P/lib/systemd'"
check "system kjitd.service: ExecStart=/usr/bin/kjitd ..." \
	grep -q '^ExecStart=/usr/bin/kjitd --foreground --system ' "$P/lib/systemd/system/kjitd.service"
check "user kjitd.service: ExecStart=/usr/bin/kjitd ..." \
	grep -q '^ExecStart=/usr/bin/kjitd --foreground ' "$P/lib/systemd/user/kjitd.service"
n_src=$(cd "$TOP/kernels_src" && find . -type f | wc -l)
n_dst=$(cd "$P/share/kjit/kernels_src" 2>/dev/null && find . -type f | wc -l)
check "share/kjit/kernels_src: all $n_src files of kernels_src ($n_dst)" [ "$n_src" = "$n_dst" ]

# ---- man pages ---------------------------------------------------------------
for page in man1/kjit.1 man8/kjitd.8; do
	f="$P/share/man/$page"
	if command -v groff >/dev/null 2>&1; then
		groff -ww -z -man "$f" >"$T/groff.err" 2>&1
		rc=$?
		expect "$page: groff -ww renders it without a warning" "rc $rc: $(head -c 300 "$T/groff.err")" \
			sh -c "[ $rc -eq 0 ] && [ ! -s '$T/groff.err' ]"
	else
		not_ok "$page: groff" "not installed (package groff-base): the page was NOT checked"
	fi
	if command -v man >/dev/null 2>&1; then
		MANWIDTH=80 man --warnings -l "$f" >"$T/man.out" 2>"$T/man.err"
		rc=$?
		expect "$page: man -l --warnings renders it cleanly" "rc $rc: $(head -c 300 "$T/man.err")" \
			sh -c "[ $rc -eq 0 ] && [ ! -s '$T/man.err' ] && grep -q '^NAME' '$T/man.out'"
	else
		echo "# NOTE: man (man-db) is not installed: $page checked with groff only"
	fi
done

# ---- pkg-config and the library ------------------------------------------------
cat >"$T/prog.c" <<'EOF'
/* Pings the kjitd of argv[1] through the installed libkjit. */
#include <kjit.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	kjit_open_options o = { .socket_path = argc > 1 ? argv[1] : NULL, .no_autostart = 1 };
	kjit_client *c;
	int r = kjit_open(&c, &o);

	if (r == 0)
		r = kjit_ping(c);
	printf("ping: %s\n", r == 0 ? "ok" : kjit_strerror(r));
	kjit_close(c);
	return r == 0 ? 0 : 1;
}
EOF
export PKG_CONFIG_PATH="$P/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$ROOT"
if ! command -v pkg-config >/dev/null 2>&1; then
	not_ok "pkg-config" "not installed: linking against the installed library NOT tested"
else
	flags=$(pkg-config --cflags --libs kjit 2>"$T/pc.err")
	expect "pkg-config --cflags --libs kjit: -I and -L into DESTDIR" "got: $flags $(cat "$T/pc.err")" sh -c "echo '$flags' | grep -q -- '-I$P/include' && echo '$flags' | grep -q -- '-L$P/lib'"
	# shellcheck disable=SC2086
	cc -o "$T/prog-shared" "$T/prog.c" $flags 2>"$T/cc.err"
	expect "a C program links with pkg-config's flags" "$(head -c 300 "$T/cc.err")" [ -x "$T/prog-shared" ]
	check "... against the installed libkjit.so.0" \
		sh -c "LD_LIBRARY_PATH='$P/lib' ldd '$T/prog-shared' | grep -q '$P/lib/libkjit.so.0'"
	static=$(pkg-config --static --libs kjit | sed "s|-lkjit|$P/lib/libkjit.a|")
	# shellcheck disable=SC2046,SC2086
	cc -o "$T/prog-static" "$T/prog.c" $(pkg-config --cflags kjit) $static 2>"$T/cc2.err"
	expect "a C program links libkjit.a with pkg-config --static's flags" "$(head -c 300 "$T/cc2.err")" \
		[ -x "$T/prog-static" ]
	check "... and needs no libkjit.so" sh -c "! ldd '$T/prog-static' | grep -q libkjit"
fi

# ---- the installed programs work together -----------------------------------
KJITD="$P/bin/kjitd"
KJIT="$P/bin/kjit"
export KJIT_KJITD="$KJITD"
start_daemon --kernels-dir "$P/share/kjit/kernels_src" || not_ok "installed kjitd starts" "see stderr"
if [ -n "$DAEMON_PID" ]; then
	ok "installed kjitd starts and installed kjit pings it"
	for prog in prog-shared prog-static; do
		[ -x "$T/$prog" ] || continue
		LD_LIBRARY_PATH="$P/lib" "$T/$prog" "$KJIT_SOCKET" >"$T/r" 2>&1
		expect "$prog pings the installed kjitd" "$(head -c 200 "$T/r")" grep -qx 'ping: ok' "$T/r"
	done
	"$KJIT" get --kernel add_f32 --backend vulkan --target vulkan1.3 -o "$T/add.spv" >"$T/r" 2>&1
	expect "installed kjitd serves a bundled kernel from share/kjit" "$(head -c 200 "$T/r")" \
		grep -q '^compiled ' "$T/r"
	check "... a SPIR-V module" [ "$(od -An -tx4 -N4 "$T/add.spv" 2>/dev/null | tr -d ' ')" = 07230203 ]
	stop_daemon
fi

# ---- the Python module, inside PREFIX ----------------------------------------
pyinit=$(find "$ROOT" -path '*/kjit/__init__.py' 2>/dev/null | head -n 1)
check "the Python module is installed inside PREFIX (${pyinit:-none})" sh -c "echo '$pyinit' | grep -q '^$P/lib/python3[^/]*/site-packages/kjit/__init__.py\$'"
if [ -n "$pyinit" ]; then
	pydir=$(dirname "$(dirname "$pyinit")")
	PYTHONPATH="$pydir" python3 -c "
import kjit, kjit._lib as l
assert kjit.__version__
print(l._candidates()[0])" >"$T/py.out" 2>&1
	check "the installed module names PREFIX/lib/libkjit.so.0 first ($(head -c 200 "$T/py.out"))" \
		grep -qx '/usr/lib/libkjit.so.0' "$T/py.out"
fi
check "the configuration file is installed (SYSCONFDIR=/etc for PREFIX=/usr)" [ -f "$ROOT/etc/kjit/kjitd.conf" ]
check "bash completion and tmpfiles.d are installed" \
	sh -c "[ -f '$P/share/bash-completion/completions/kjit' ] && [ -f '$P/lib/tmpfiles.d/kjit.conf' ]"

# ---- install for another PREFIX, and uninstall ------------------------------
make -s SAN= OPT=-O2 BUILD="$IBUILD" PREFIX=/opt/kjit DESTDIR="$T/root2" install >"$T/make2.out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
	check "install for a PREFIX the build was not made for is refused, nothing installed" \
		sh -c "grep -q 'built for another PREFIX' '$T/make2.out' && [ ! -e '$T/root2/opt/kjit/bin/kjit' ]"
else
	check "install for another PREFIX installs binaries built for it" \
		sh -c "tr '\\000' '\\n' <'$T/root2/opt/kjit/bin/kjit' | grep -qx /opt/kjit/bin/kjitd"
fi

make -s SAN= OPT=-O2 BUILD="$IBUILD" PREFIX=/usr DESTDIR="$ROOT" uninstall >"$T/make3.out" 2>&1
rc=$?
left=$(find "$ROOT" ! -type d | head -n 5 | tr '\n' ' ')
expect "make uninstall succeeds and leaves no file" "rc $rc, left: $left" sh -c "[ $rc -eq 0 ] && [ -z '$left' ]"

finish
