#!/bin/sh
# `kjit warm --replay`: after a compiler change (here: hiprtc replaced by
# hipcc, as after a ROCm upgrade the identity in every key changes), replay
# compiles again what was used recently, so the next request is a hit.
. "$(dirname "$0")/lib.sh"

SRC="$TOP/tests/e2e/data/scale.hip"
start_daemon || { not_ok start "kjitd did not start"; exit 1; }
"$KJIT" get --source "$SRC" --backend hip --target gfx90a >/dev/null 2>&1
"$KJIT" get --kernel rms_norm_f32 --backend vulkan --target vulkan1.2 >/dev/null 2>&1
"$KJIT" warm --replay >"$T/r1" 2>&1
check "replay with nothing changed exits 0" [ $? -eq 0 ]
check "replay with nothing changed compiles nothing" grep -q '0 compiled, 2 already cached' "$T/r1"
stop_daemon

# The "upgrade": the HIP compiler's identity changes.
start_daemon --hip-compiler hipcc || exit 1
compiles=$(stat_value compiles)
"$KJIT" warm --replay >"$T/r2" 2>&1
check "replay after the upgrade exits 0" [ $? -eq 0 ]
check "replay recompiled the HIP source for the new compiler" grep -q '1 compiled, 1 already cached' "$T/r2"
check "replay compiled once" [ "$(stat_value compiles)" -eq $((compiles + 1)) ]
"$KJIT" get --source "$SRC" --backend hip --target gfx90a >"$T/g" 2>&1
check "the first request after the upgrade is a hit" grep -q '^hit ' "$T/g"
finish
