#!/bin/sh
# design-map.sh: docs/design.md's "Map of the tree" names every .c and .h
# outside tests/ (issue 25) and every module of the Python package,
# python/kjit/*.py (issue 33): each file tracked by git appears in the map's
# section as `NAME` or `.../NAME`.  A file added without its map line fails
# here, naming it.  Needs git and the repository (a source tree without
# .git is skipped loudly).
. "$(dirname "$0")/lib.sh"

cd "$TOP" || exit 1
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "# skip design-map: $TOP is not a git checkout"
	exit 0
fi
# The map's section: from its heading to the next "## ".
sed -n '/^## Map of the tree/,/^## /p' docs/design.md >"$T/map"
check "docs/design.md has its map section" [ -s "$T/map" ]
missing=""
n=0
for f in $(git ls-files '*.c' '*.h' 'python/kjit/*.py' | grep -v '^tests/'); do
	b=$(basename "$f")
	n=$((n + 1))
	grep -qF -e "\`$b\`" -e "/$b\`" "$T/map" || missing="$missing $f"
done
npy=$(git ls-files 'python/kjit/*.py' | wc -l)
check "the map names all $n source files ($npy of them python/kjit/*.py) (missing:${missing:- none})" [ -z "$missing" ]
exit 0
