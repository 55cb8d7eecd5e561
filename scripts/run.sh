#!/bin/sh
# `make run`: starts the per-user kjitd (unless one answers already) and warms
# the bundled kernel library, so the first job starts with a warm cache.
# Each backend is warmed for the target this machine resolves (environment,
# kjitd's configuration, detection); a backend with none (no GPU of that
# kind here) is warmed for representative targets instead, so the cache is
# ready to ship (kjit export).  KJIT_WARM_TARGETS overrides the whole list.
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
"$KJIT" targets
targets=$("$KJIT" targets 2>/dev/null)
set --
if [ -n "${KJIT_WARM_TARGETS:-}" ]; then
	for t in $KJIT_WARM_TARGETS; do set -- "$@" --target "$t"; done
else
	for spec in "hip:gfx90a gfx1030" "cuda:sm_90 compute_90" "vulkan:vulkan1.2"; do
		backend=${spec%%:*}
		resolved=$(echo "$targets" | sed -n "s/^$backend *daemon *target \([^ ]*\) .*/\1/p" | head -n 1)
		if [ -n "$resolved" ]; then
			set -- "$@" --target "$resolved"
		else
			echo "no $backend target on this machine: warming ${spec#*:} (set KJIT_WARM_TARGETS to choose)"
			for t in ${spec#*:}; do set -- "$@" --target "$t"; done
		fi
	done
fi
"$KJIT" warm "$@"
"$KJIT" stats
