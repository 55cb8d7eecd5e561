#!/bin/sh
# The spine, end to end, with real hiprtc compiles: single-flight across 16
# processes, hits across restarts, the object's ELF header, compile errors,
# unsupported targets, and corruption on disk.
. "$(dirname "$0")/lib.sh"

SRC="$TOP/tests/e2e/data/scale.hip"
start_daemon || { not_ok start "kjitd did not start"; exit 1; }

# 16 processes released at once: each waits for the file "go".
i=0
pids=""
while [ $i -lt 16 ]; do
	( while [ ! -e "$T/go" ]; do sleep 0.01; done
	  "$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/out.$i" >"$T/res.$i" 2>&1 ) &
	pids="$pids $!"
	i=$((i + 1))
done
sleep 0.5
touch "$T/go"
wait $pids
compiled=$(grep -l '^compiled ' "$T"/res.* | wc -l)
joined=$(grep -l '^joined ' "$T"/res.* | wc -l)
hits=$(grep -l '^hit ' "$T"/res.* | wc -l)
check "16 clients: exactly one reports compiled" [ "$compiled" -eq 1 ]
check "16 clients: the other 15 report joined or hit ($joined joined, $hits hit)" [ $((joined + hits)) -eq 15 ]
check "16 clients: at least some joined the compile" [ "$joined" -ge 1 ]
check "16 clients: one compile in the daemon's stats" [ "$(stat_value compiles)" = 1 ]
n_distinct=$(sha256sum "$T"/out.* | awk '{print $1}' | sort -u | wc -l)
check "16 clients: identical bytes" [ "$n_distinct" -eq 1 ]

# The object: AMDGPU ELF with the target in e_flags (LLVM AMDGPUUsage:
# EF_AMDGPU_MACH_AMDGCN_GFX90A 0x3f | XNACK_ANY_V4 0x100 | SRAMECC_ANY_V4 0x400).
check "object is ELF" [ "$(head -c 4 "$T/out.0" | od -An -c | tr -d ' ')" = "177ELF" ]
check "e_machine is 224 (EM_AMDGPU)" [ "$(elf_u16 "$T/out.0" 18)" = 224 ]
check "e_flags 0x53f for gfx90a" [ "$(elf_u32 "$T/out.0" 48)" = 0000053f ]
for spec in "gfx90a:xnack-:0000063f" "gfx90a:sramecc+:xnack-:00000e3f"; do
	tgt=${spec%:*}
	want=${spec##*:}
	"$KJIT" get --source "$SRC" --backend hip --target "$tgt" -o "$T/t.o" >/dev/null 2>&1
	check "e_flags 0x$want for $tgt" [ "$(elf_u32 "$T/t.o" 48)" = "$want" ]
done

# A repeat is a hit, also after a restart.
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/again" >"$T/r" 2>&1
check "repeat is a hit" grep -q '^hit ' "$T/r"
check "hit has the same bytes" cmp -s "$T/again" "$T/out.0"
stop_daemon
start_daemon || { not_ok restart "kjitd did not restart"; exit 1; }
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/again2" >"$T/r" 2>&1
check "hit after restart" grep -q '^hit ' "$T/r"
check "hit after restart has the same bytes" cmp -s "$T/again2" "$T/out.0"

# A syntax error returns the compiler's message and caches nothing.
before=$("$KJIT" ls | wc -l)
"$KJIT" get --source "$TOP/tests/e2e/data/syntax_error.hip" --backend hip --target gfx90a >"$T/r" 2>&1
rc=$?
check "syntax error exits 1" [ "$rc" -eq 1 ]
check "syntax error shows the compiler's message" grep -q 'undeclared_variable_kjit' "$T/r"
check "syntax error caches nothing" [ "$("$KJIT" ls | wc -l)" -eq "$before" ]

# gfx1100 (which hiprtc 5.2 would abort on) is refused by name; the daemon serves on.
"$KJIT" get --source "$SRC" --backend hip --target gfx1100 >"$T/r" 2>&1
rc=$?
check "gfx1100 exits 1" [ "$rc" -eq 1 ]
check "gfx1100 error names the target" grep -q 'gfx1100' "$T/r"
check "gfx1100 error is one line" [ "$(wc -l <"$T/r")" -eq 1 ]
for bad in gfx940 gfx942 "gfx1030:xnack-" "amdgcn-amd-amdhsa--gfx90a" banana; do
	"$KJIT" get --source "$SRC" --backend hip --target "$bad" >"$T/r" 2>&1
	check "target $bad refused with exit 1" [ $? -eq 1 ]
done
check "daemon still answers after bad targets" "$KJIT" ping
"$KJIT" get --source "$SRC" --backend hip --target gfx90a >"$T/r" 2>&1
check "daemon still serves hits after bad targets" grep -q '^hit ' "$T/r"
check "no worker crashed on the bad targets" [ "$(stat_value errors_worker)" = 0 ]

# An object corrupted on disk is detected and recompiled, never served.
obj=$(find "$KJIT_CACHE_DIR" -name '*.hsaco' -path '*gfx90a-*' | head -n 1)
printf 'garbage' | dd of="$obj" bs=1 seek=100 conv=notrunc 2>/dev/null
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o "$T/fixed" >"$T/r" 2>&1
check "corrupt object is recompiled" grep -q '^compiled ' "$T/r"
check "recompiled object equals the original" cmp -s "$T/fixed" "$T/out.0"
check "corruption is logged" grep -q 'corrupt' "$T/kjitd.log"
"$KJIT" get --source "$SRC" --backend hip --target gfx90a >"$T/r" 2>&1
check "after recompiling it is a hit again" grep -q '^hit ' "$T/r"
finish
