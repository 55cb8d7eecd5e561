#!/bin/sh
# warm-ident.sh: a fresh kjitd keys requests and serves hits while its
# compile workers warm up (issue 35: a fresh node's warm-up from the fleet
# tier spent ~80% of its time waiting for the workers' warm-up compiles).
# The worker tells kjitd its compiler's identity (IDENT) before the warm-up
# and says HELLO after it (compilers/worker.c); only compiles wait for the
# HELLO (daemon/miss/pool.c).  The test family's warm-up is set by
# KJIT_TEST_WARM in kjitd's environment (compilers/testcomp.c): N sleeps N
# ms, "fail" fails.  Checked:
#   - with a 4 s warm-up, a cached object is a hit before the worker's
#     HELLO (the worker logs its walls just before it, so the line is not in
#     the log yet), and a new source compiles once the warm-up is done;
#   - a warm-up that fails: hits are still served; a compile gets one line
#     naming the failed warm-up, and kjitd keeps serving.
. "$(dirname "$0")/lib.sh"

SRC="$T/src"
mkdir -p "$SRC"
src() { printf '// warm-ident %s\nint x_%s;\n' "$1" "$1" >"$SRC/$1.hip"; }
get() { # NAME OUT: status line to OUT.get, object to OUT
	"$KJIT" get --source "$SRC/$1.hip" --backend hip --target gfx90a -o "$2" >"$2.get" 2>&1
}
said_hello() { grep -q 'kjit worker test (pid' "$T/kjitd.log"; }

src cached
start_daemon --hip-compiler test || { not_ok start "kjitd did not start"; exit 1; }
get cached "$T/a"
check "first request compiles" grep -q '^compiled' "$T/a.get"
stop_daemon

# ---- a slow warm-up: hits do not wait for it ----
: >"$T/kjitd.log"
export KJIT_TEST_WARM=4000
start_daemon --hip-compiler test --no-shared-hit-table || { not_ok restart "kjitd did not start"; exit 1; }
get cached "$T/b"
if said_hello; then hello_first=1; else hello_first=0; fi
check "a hit is served while the worker warms up" grep -q '^hit' "$T/b.get"
check "the hit came before the worker's HELLO (warm-up 4 s)" [ "$hello_first" -eq 0 ]
check "the hit's bytes are the compiled ones" cmp -s "$T/a" "$T/b"
check "kjitd logged the identity before the HELLO" grep -q 'test ready: test 1' "$T/kjitd.log"
src fresh
get fresh "$T/c"
unset KJIT_TEST_WARM
check "a new source compiles after the warm-up" grep -q '^compiled' "$T/c.get"
check "the worker said HELLO before that compile" said_hello
stop_daemon

# ---- a failed warm-up: hits served, compiles refused in one line ----
: >"$T/kjitd.log"
export KJIT_TEST_WARM=fail
start_daemon --hip-compiler test --no-shared-hit-table || { not_ok restart2 "kjitd did not start"; exit 1; }
unset KJIT_TEST_WARM
get cached "$T/d"
check "a hit is served though the warm-up failed" grep -q '^hit' "$T/d.get"
src another
get another "$T/e"
check "the compile is refused" sh -c '[ ! -s "$1" ] && ! grep -q "^compiled" "$1.get"' _ "$T/e"
check "in one line naming the warm-up" \
	sh -c '[ "$(wc -l <"$1")" -eq 1 ] && grep -q "warm-up failed" "$1"' _ "$T/e.get"
check "kjitd keeps serving (ping)" "$KJIT" ping
stop_daemon
finish
