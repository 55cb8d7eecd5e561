#!/bin/sh
# test-kernels-vulkan.sh: every Vulkan kernel of kernels_src/MANIFEST, fetched from a
# real kjitd through libkjit (compiled there by shaderc), run on lavapipe through the
# Vulkan loader and checked against the CPU oracle (build/tests/kernels/test-kernels-vulkan).
. "$(dirname "$0")/../e2e/lib.sh"
BIN="$TOP/$BUILD/tests/kernels/test-kernels-vulkan"
if [ ! -x "$BIN" ]; then
	not_ok test-kernels-vulkan "$BIN not built"
	exit 1
fi
start_daemon || { not_ok start "kjitd did not start"; exit 1; }
# Under make test-asan: the Vulkan driver (lavapipe) leaks an allocation that
# LeakSanitizer only sees after the loader has unloaded the driver, so it can
# be neither attributed nor suppressed by name.  Leak detection is off for
# this test program alone (kjitd and every other test keep it), and says so.
if nm "$BIN" 2>/dev/null | grep -q '__asan_init'; then
	echo "NOTE: LeakSanitizer off for test-kernels-vulkan (leaks inside the unloaded Vulkan driver)" >&2
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
cd "$TOP" && "$BIN"
rc=$?
check "the kernels came from kjitd (compiles counted there)" [ "$(stat_value compiles)" -ge 10 ]
[ "$rc" -eq 0 ] && finish
