#!/bin/sh
# test-kernels-vulkan.sh: run build/tests/kernels/test-kernels-vulkan (every Vulkan
# kernel of kernels_src/MANIFEST on lavapipe or the local GPU, checked against the CPU
# oracle) so that tests/run.sh, which runs tests/kernels/*.sh, picks it up.
BIN=${BUILD:-build}/tests/kernels/test-kernels-vulkan
if [ ! -x "$BIN" ]; then
    echo "not ok test-kernels-vulkan: $BIN not built (make -f tests/kernels/Makefile.part kernels-tests)"
    echo "0 passed, 1 failed"
    exit 1
fi
exec "$BIN"
