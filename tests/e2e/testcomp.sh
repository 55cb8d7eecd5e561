#!/bin/sh
# testcomp.sh: the "test" compiler family (compilers/testcomp.c, the fake
# compiler the crash, hang and budget tests drive) is in the build's kjitd
# only (issue 33): $BUILD/kjitd-dist, the kjitd `make install` installs,
# refuses `--hip-compiler test` and `--worker test` and carries none of its
# code, while $BUILD/kjitd, which the tests run, serves through it.
. "$(dirname "$0")/lib.sh"

DIST="$TOP/$BUILD/kjitd-dist"
[ -x "$DIST" ] || { not_ok kjitd-dist "$DIST missing; run make"; exit 1; }
mkdir -p "$T/d"
"$DIST" --foreground --socket "$T/d/s" --cache-dir "$T/d/c" --hip-compiler test >"$T/d.out" 2>&1 &
pid=$!
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
kill "$pid" 2>/dev/null
wait "$pid"
rc=$?
check "kjitd-dist --hip-compiler test is a usage error (exit $rc)" [ "$rc" = 2 ]
check "kjitd-dist says which families there are" grep -q "^kjitd: --hip-compiler 'test': expected hiprtc or hipcc$" "$T/d.out"
"$DIST" --worker test </dev/null >/dev/null 2>&1
rc=$?
check "kjitd-dist --worker test fails (exit $rc)" [ "$rc" != 0 ]
check "kjitd-dist carries no test-family code" sh -c "! grep -q 'kjit_test' '$DIST'"
check "the build's kjitd has it (the tests need it)" grep -q 'kjit_test' "$KJITD"
check "make install installs kjitd-dist as kjitd" grep -q 'install -m 755 $(BUILD)/kjitd-dist $(DESTDIR)$(PREFIX)/bin/kjitd$' "$TOP/Makefile"

start_daemon --hip-compiler test || { not_ok start "the build's kjitd did not start with --hip-compiler test"; exit 1; }
printf 'echo me\n' >"$T/e.hip"
out=$("$KJIT" get --source "$T/e.hip" --backend hip --target gfx90a -o "$T/e.o" 2>&1)
check "the build's kjitd compiles through the test family ($out)" cmp -s "$T/e.hip" "$T/e.o"
finish
