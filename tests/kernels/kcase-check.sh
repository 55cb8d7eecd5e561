#!/bin/sh
# kcase-check.sh: the launchers' variant and target choices for the Hopper GEMM, on the
# CPU (build/tests/kernels/kcase-check; the kernels themselves run in make test-gpu).
. "$(dirname "$0")/../e2e/lib.sh"
BIN="$TOP/$BUILD/tests/kernels/kcase-check"
[ -x "$BIN" ] || { not_ok kcase-check "$BIN not built"; exit 1; }
"$BIN"
