#!/bin/sh
# cli-python.sh: `python3 -m kjit` and the kjit binary are one command
# (issue 33): both run libkjit's kjit_cli_main, so each command line below,
# accepted or refused, gives the same exit status, the same stdout and the
# same stderr byte for byte through both.  Also: the Python entry point
# called twice in one process parses the second command line afresh
# (getopt's state is reset), and libkjit exports kjit_cli_main.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || { not_ok python3 "not installed: NOT tested"; exit 1; }
start_daemon || { not_ok start "kjitd did not start"; exit 1; }
export PYTHONPATH="$TOP/python" PYTHONDONTWRITEBYTECODE=1 KJIT_LIBRARY="$TOP/$BUILD/libkjit.so"
if [ -n "$(san_flags)" ]; then
	export LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

key=$("$KJIT" get --kernel add_f32 --backend vulkan -o /dev/null | cut -d' ' -f2)

# One command line a line ("|" between words: some hold spaces).
n=0
while IFS= read -r line; do
	n=$((n + 1))
	old_ifs=$IFS
	IFS='|'
	# shellcheck disable=SC2086
	set -- $line
	IFS=$old_ifs
	"$KJIT" "$@" >/dev/null 2>&1 # a first compile, so both see a hit
	"$KJIT" "$@" >"$T/c.out" 2>"$T/c.err"
	crc=$?
	python3 -m kjit "$@" >"$T/p.out" 2>"$T/p.err"
	prc=$?
	# a sanitized build's runtime notes (==PID== ...) name each process's own pid
	for f in "$T/c.err" "$T/p.err"; do
		grep -v '^==[0-9]*==' "$f" >"$f.k"
		mv "$f.k" "$f"
	done
	if [ "$crc" != "$prc" ]; then
		not_ok "same: $line" "exit $crc from kjit, $prc from python3 -m kjit: $(head -c 300 "$T/p.err")"
	elif ! cmp -s "$T/c.out" "$T/p.out"; then
		not_ok "same: $line" "stdout differs: $(head -c 200 "$T/c.out") / $(head -c 200 "$T/p.out")"
	elif ! cmp -s "$T/c.err" "$T/p.err"; then
		not_ok "same: $line" "stderr differs: $(head -c 200 "$T/c.err") / $(head -c 200 "$T/p.err")"
	else
		ok "same (exit $crc): $line"
	fi
done <<LINES
get|--kernel|add_f32|--backend|vulkan
get|--kernel|add_f32|--backend|vulkan|--json|-o|-
get|--kernel|add_f32|--backend|vulkan|-O3|-DX=1|-std=450|-o|/dev/null
get|--kernel|add_f32
get|--kernel|add_f32|--backend|vulkan|--bogus
get|--kernel|add_f32|--backend|nosuch
get|--source|$T/none.hip|--backend|hip|--target|gfx90a
get|--kernel|add_f32|--backend|hip|--target|gfx90a|-I
get|--kernel|add_f32|--backend|hip|--target|gfx90a|--target-env=vulkan1.2
get|--kernel|add_f32|--backend|vulkan|extra
get|--help
--help
--version
frobnicate
targets|--json
ls
ls|--json
show|$key
show
show|a|b
stats|--bogus
warm|-j
warm|--kernel|add_f32|--backend|nosuch
export
verify|--json
gc|--max-size|nonsense
run
run|--quiet|--|sh|-c|echo "\$LD_LIBRARY_PATH"
LINES

# No arguments at all: the same usage error.
"$KJIT" >/dev/null 2>"$T/c.err"; crc=$?
python3 -m kjit >/dev/null 2>"$T/p.err"; prc=$?
check "same: no command" sh -c "[ $crc = $prc ] && [ $crc = 2 ] && cmp -s '$T/c.err' '$T/p.err'"

# Two calls in one process: a refused line, then one that must be parsed
# from its first option again.
out=$(python3 -c '
import sys
from kjit.__main__ import main
a = main(["get", "--kernel", "add_f32", "--bogus"])
b = main(["get", "--kernel", "add_f32", "--backend", "vulkan", "-o", "/dev/null"])
c = main(["get", "-Ibad", "--kernel"])
print(a, b, c)' 2>"$T/twice.err" | tail -n 1)
check "two calls in one process: 2 then 0 then 2 ($out)" [ "$out" = "2 0 2" ]

check "libkjit.so exports kjit_cli_main" sh -c "nm -D '$TOP/$BUILD/libkjit.so' | grep -q ' T kjit_cli_main$'"
check "the kjit binary has no command code of its own (kjit-main.c only)" \
	sh -c "[ \$(grep -c . '$TOP/client/kjit-main.c') -lt 20 ]"
finish
