#!/bin/sh
# `make run`: starts the per-user kjitd (unless one answers already) and warms
# the bundled kernel library, so the first job starts with a warm cache.
# On a machine with no GPU there is nothing to detect: the representative
# targets below are warmed instead (override with KJIT_WARM_TARGETS).
set -eu
BUILD=${1:-build}
KJIT="$BUILD/kjit"
KJITD="$BUILD/kjitd"

if "$KJIT" ping >/dev/null 2>&1; then
	echo "kjitd already running"
else
	"$KJITD"
	echo "kjitd started"
fi
"$KJIT" targets || true
set --
if [ -n "${KJIT_WARM_TARGETS:-}" ]; then
	for t in $KJIT_WARM_TARGETS; do set -- "$@" --target "$t"; done
elif ! "$KJIT" targets --json | grep -q '"from":"detected"'; then
	echo "no GPU detected: warming gfx90a, gfx1030, sm_90, compute_90 and vulkan1.2 (set KJIT_WARM_TARGETS to choose)"
	set -- --target gfx90a --target gfx1030 --target sm_90 --target compute_90 --target vulkan1.2
fi
"$KJIT" warm "$@"
"$KJIT" stats
