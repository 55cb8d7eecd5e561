#!/bin/sh
# recipe-gc.sh: recipes (the requests behind objects, cache/recipe.c) count
# in the cache's size and their owner's share and go with the last object
# that refers to them (issue 29 item 5): ten compiles with 2 MiB headers on
# an 8 MiB cache leave under 16 MiB on disk after `kjit gc` (before, every
# recipe stayed: 20 MiB and more, gc freeing nothing), the recipes kept are
# in `kjit stats`'s bytes, and `kjit clear` leaves no recipe behind.
# Docs: docs/cache.md ("Recipes").
. "$(dirname "$0")/lib.sh"

start_daemon --hip-compiler test --max-size 8M || { not_ok start "kjitd did not start"; exit 1; }
mkdir -p "$T/src/inc"
for i in $(seq 1 10); do
	# a header of 2 MiB, different each time (so is each recipe)
	{ printf '// header %s\n' "$i"; head -c 2097152 /dev/zero | tr '\0' 'x' | fold -w 1000; printf '\n'; } \
		>"$T/src/inc/h$i.h"
	printf '#include "h%s.h"\nint v%s;\n' "$i" "$i" >"$T/src/k$i.hip"
	"$KJIT" get --source "$T/src/k$i.hip" --backend hip --target gfx90a -I "$T/src/inc" -o /dev/null >/dev/null 2>&1 ||
		not_ok "compile $i" "kjit get failed"
done
"$KJIT" gc >/dev/null 2>&1 || not_ok gc "kjit gc failed"
kb=$(du -sk "$KJIT_CACHE_DIR" | cut -f1)
echo "# cache directory after gc: $kb KiB (recipes: $(ls "$KJIT_CACHE_DIR/recipes" 2>/dev/null | wc -l) files)"
check "recipes: under 16 MiB on disk after gc" [ "$kb" -lt 16384 ]
nrec=$(ls "$KJIT_CACHE_DIR/recipes" | grep -c '\.req$')
check "recipes: the latest kept" [ "$nrec" -ge 1 ]
bytes=$(stat_value bytes)
check "recipes: counted in the cache's bytes" [ "${bytes:-0}" -gt 2097152 ]
check "recipes: the cache's bytes within its cap" [ "${bytes:-0}" -le 8388608 ]
"$KJIT" clear >/dev/null 2>&1 || not_ok clear "kjit clear failed"
nrec=$(ls "$KJIT_CACHE_DIR/recipes" | grep -c '\.req$')
check "recipes: none left after clear" [ "$nrec" -eq 0 ]
finish
