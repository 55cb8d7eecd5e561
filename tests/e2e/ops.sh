#!/bin/sh
# Cache operations end to end: warm (twice: the second compiles nothing),
# stats (persistent, --json, --prometheus, --zero), ls/show, gc under a cap
# keeping the recent entries, verify finding planted corruption, clear by
# target, export/import into an empty cache (hits, same bytes), and damaged
# bundles refused with the cache unchanged.
. "$(dirname "$0")/lib.sh"

SRC="$TOP/tests/e2e/data/scale.hip"
start_daemon || { not_ok start "kjitd did not start"; exit 1; }

# warm: the bundled Vulkan kernels (shaderc), twice.
"$KJIT" warm --backend vulkan --target vulkan1.2 -j 2 >"$T/w1" 2>&1
rc=$?
check "warm exits 0" [ "$rc" -eq 0 ]
n_kernels=$("$KJIT" ls --target vulkan1.2 | wc -l)
check "warm compiled the vulkan library ($n_kernels entries)" [ "$n_kernels" -ge 10 ]
compiles1=$(stat_value compiles)
"$KJIT" warm --backend vulkan --target vulkan1.2 --json >"$T/w2" 2>&1
check "second warm exits 0" [ $? -eq 0 ]
check "second warm compiles nothing" [ "$(stat_value compiles)" = "$compiles1" ]
check "second warm --json says all cached" grep -q "\"cached\":$n_kernels" "$T/w2"
"$KJIT" warm --backend vulkan --target vulkan1.2 --kernel no_such_kernel >"$T/w3" 2>&1
check "warm of an unknown kernel exits 1" [ $? -eq 1 ]

# stats survive a restart; --prometheus; --zero.
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/a.o" >/dev/null 2>&1
"$KJIT" get --source "$SRC" --backend hip --target gfx90a >/dev/null 2>&1
hits=$(stat_value hits)
check "stats counts the hit" [ "${hits:-0}" -ge 1 ]
stop_daemon
start_daemon || exit 1
check "stats persist across a restart" [ "$(stat_value hits)" = "$hits" ]
"$KJIT" stats --prometheus "$T/kjit.prom" >/dev/null 2>&1
check "stats --prometheus writes the textfile format" grep -q "^kjit_hits_total $hits\$" "$T/kjit.prom"
"$KJIT" stats --zero >/dev/null 2>&1
check "stats --zero zeroes" [ "$(stat_value hits)" = 0 ]

# ls / show.
key=$("$KJIT" ls --target gfx90a | awk '{print $1}' | head -n 1)
check "ls lists the HIP entry" [ -n "$key" ]
"$KJIT" show "$key" >"$T/show" 2>&1
check "show prints metadata" grep -q "scale.hip" "$T/show"
"$KJIT" show 0123 >/dev/null 2>&1
check "show of a bad key exits 1" [ $? -eq 1 ]

# export, then import into an empty cache: hits with identical bytes.
"$KJIT" export -o "$T/all.kjb" >"$T/e" 2>&1
check "export exits 0" [ $? -eq 0 ]
stop_daemon
KJIT_CACHE_DIR="$T/cache2"
export KJIT_CACHE_DIR
start_daemon || exit 1
cp "$T/all.kjb" "$T/trunc.kjb"
truncate -s -100 "$T/trunc.kjb"
"$KJIT" import "$T/trunc.kjb" >"$T/i" 2>&1
check "a truncated bundle is refused" [ $? -eq 1 ]
check "the refusal is one line" [ "$(wc -l <"$T/i")" -eq 1 ]
cp "$T/all.kjb" "$T/tamper.kjb"
size=$(stat -c %s "$T/tamper.kjb")
printf 'X' | dd of="$T/tamper.kjb" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$KJIT" import "$T/tamper.kjb" >/dev/null 2>&1
check "a tampered bundle is refused" [ $? -eq 1 ]
check "the cache is unchanged by refused bundles" [ "$("$KJIT" ls | wc -l)" -eq 0 ]
"$KJIT" import "$T/all.kjb" >"$T/i" 2>&1
check "import exits 0" [ $? -eq 0 ]
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/b.o" >"$T/r" 2>&1
check "imported entry is a hit" grep -q '^hit ' "$T/r"
check "imported entry has identical bytes" cmp -s "$T/a.o" "$T/b.o"
check "imported vulkan entries" [ "$("$KJIT" ls --target vulkan1.2 | wc -l)" -eq "$n_kernels" ]
"$KJIT" import "$T/all.kjb" >"$T/i" 2>&1
check "importing twice adds nothing" grep -q "0 entries added" "$T/i"

# verify finds planted corruption, drops it, exits 1; then all clean.
check "verify on a clean cache exits 0" "$KJIT" verify
obj=$(find "$KJIT_CACHE_DIR" -name '*.spv' | head -n 1)
printf 'rot' | dd of="$obj" bs=1 seek=20 conv=notrunc 2>/dev/null
"$KJIT" verify >"$T/v" 2>&1
check "verify finds the planted corruption (exit 1)" [ $? -eq 1 ]
check "verify names the corrupt object" grep -q "corrupt" "$T/v"
check "verify afterwards is clean" "$KJIT" verify

# gc: under the cap, keeping the most recently used.
"$KJIT" get --source "$SRC" --backend hip --target gfx90a >/dev/null 2>&1
total=$(stat_value bytes)
"$KJIT" gc --max-size $((total / 2)) >"$T/g" 2>&1
check "gc exits 0" [ $? -eq 0 ]
check "gc keeps the cache under the cap" [ "$(stat_value bytes)" -le $((total / 2)) ]
"$KJIT" get --source "$SRC" --backend hip --target gfx90a >"$T/r" 2>&1
check "gc kept the most recently used entry" grep -q '^hit ' "$T/r"

# The cap is kept by the daemon itself, off the request path (the flush timer).
stop_daemon
start_daemon --max-size 12k || exit 1
"$KJIT" warm --backend vulkan --target vulkan1.1 -j 2 >/dev/null 2>&1
sleep 1.5
check "kjitd --max-size 12k: the daemon evicts on its own ($(stat_value bytes) bytes left)" \
	[ "$(stat_value bytes)" -le 12288 ]
check "the evictions are counted" [ "$(stat_value evictions)" -gt 0 ]
check "and logged" grep -q 'over the 12288-byte cap' "$T/kjitd.log"

# clear by target.
"$KJIT" clear --target gfx90a >/dev/null 2>&1
check "clear --target removes that target" [ "$("$KJIT" ls --target gfx90a | wc -l)" -eq 0 ]
finish
