#!/bin/sh
# The request memo (daemon/miss/memo.c) never serves a stale key: a bundled
# kernel whose source, or a header it includes from the kernels directory,
# changes on disk is resolved (and compiled) again; going back to the old
# bytes is a hit on the old object; an edit whose mtime is put back is seen.
. "$(dirname "$0")/lib.sh"

K="$T/kernels"
mkdir -p "$K/include"
echo "k hip k.hip k" >"$K/MANIFEST"
printf '#include "defs.h"\nextern "C" __global__ void k(float *x) { x[0] = SCALE; }\n' >"$K/k.hip"
echo '#define SCALE 2' >"$K/include/defs.h"
start_daemon --hip-compiler test --kernels-dir "$K" || { not_ok start "kjitd did not start"; exit 1; }

get() { "$KJIT" get --kernel k --backend hip --target gfx90a -o "$T/$1" 2>&1 | cut -d' ' -f1; }
check "first request compiles" [ "$(get a)" = compiled ]
check "repeat is a hit" [ "$(get a2)" = hit ]
check "repeat again is a hit (memo)" [ "$(get a3)" = hit ]
sleep 0.01
echo '#define SCALE 3' >"$K/include/defs.h"
check "a changed header is compiled again" [ "$(get b)" = compiled ]
check "and then hits" [ "$(get b2)" = hit ]
sleep 0.01
printf '#include "defs.h"\nextern "C" __global__ void k(float *x) { x[1] = SCALE; }\n' >"$K/k.hip"
check "a changed kernel source is compiled again" [ "$(get c)" = compiled ]
check "its object is the new source" grep -q 'x\[1\]' "$T/c"
sleep 0.01
echo '#define SCALE 2' >"$K/include/defs.h"
printf '#include "defs.h"\nextern "C" __global__ void k(float *x) { x[0] = SCALE; }\n' >"$K/k.hip"
check "going back to the first bytes is a hit" [ "$(get d)" = hit ]
check "on the first object" cmp -s "$T/a" "$T/d"
check "compiles counted: 3" [ "$(stat_value compiles)" = 3 ]

# Issue 35: a source settled for more than a second is not re-read when its
# stat proves it unchanged since the read (memo.c, file_unchanged_since), and
# an edit of the same size whose mtime is put back (touch -r) is still seen:
# the memo keeps the file's ctime, which no call sets back.
printf 'extern "C" __global__ void k(float *x) { x[2] = 7.0f; }\n' >"$K/k.hip"
touch -r "$K/include/defs.h" "$K/k.hip"
sleep 1.2
check "a settled source compiles" [ "$(get e)" = compiled ]
check "and then hits (memo)" [ "$(get e2)" = hit ]
# Round thirteen: a new request of the settled kernel (another -D: a memo
# miss) is served the source kept from the read before (request.c), and
# the object shows it is that source.
check "another request of the settled source compiles" \
	[ "$("$KJIT" get --kernel k --backend hip --target gfx90a -D KEPT=1 -o "$T/e3" 2>&1 | cut -d' ' -f1)" = compiled ]
check "from the kept source" grep -q 'x\[2\]' "$T/e3"
printf 'extern "C" __global__ void k(float *x) { x[3] = 7.0f; }\n' >"$K/k.hip"
touch -r "$K/include/defs.h" "$K/k.hip"
check "same size, mtime put back: compiled again" [ "$(get f)" = compiled ]
check "its object is the new source" grep -q 'x\[3\]' "$T/f"
finish
