#!/bin/sh
# test-kernels-compile.sh: every kernel of kernels_src/MANIFEST compiled through a real
# kjitd for every target the project promises, fetched with `kjit get --kernel`, and
# checked:
#   hip    lines: hiprtc for gfx90a, gfx908, gfx1030 (wave64, wave64, wave32): an
#                 AMDGPU ELF (e_machine 224) holding every entry point;
#   cuda   lines: NVRTC for sm_80 and sm_90: a cubin (e_machine 190) holding them;
#   vulkan lines: shaderc for vulkan1.1: SPIR-V that passes spirv-val.
# `kjit warm` compiles them first on every worker in parallel; the fetches are hits.
# With KJIT_OBJ_DIR set, the objects are also kept there as NAME.ARCH.{hsaco,cubin} and
# NAME.spv (examples/cuda_launch can run from that directory).
. "$(dirname "$0")/../e2e/lib.sh"
KDIR="$TOP/kernels_src"
CHECK_ENTRIES="$TOP/$BUILD/tests/kernels/entries-check"
HIP_ARCHS=${KJIT_TEST_HIP_ARCHS:-"gfx90a gfx908 gfx1030"}
CUDA_ARCHS=${KJIT_TEST_CUDA_ARCHS:-"sm_80 sm_90"}
OBJ=${KJIT_OBJ_DIR:-}
[ -x "$CHECK_ENTRIES" ] || { not_ok test-kernels-compile "$CHECK_ENTRIES not built"; exit 1; }
[ -n "$OBJ" ] && mkdir -p "$OBJ"
start_daemon || { not_ok start "kjitd did not start"; exit 1; }

targets=""
for a in $HIP_ARCHS $CUDA_ARCHS vulkan1.1; do targets="$targets --target $a"; done
# shellcheck disable=SC2086
"$KJIT" warm $targets -j 2 >"$T/warm" 2>&1
check "kjit warm of the whole library for $HIP_ARCHS $CUDA_ARCHS vulkan1.1" [ $? -eq 0 ]
grep -v '^warm:' "$T/warm" | grep -i 'fail' | head -n 20 >&2
compiles_after_warm=$(stat_value compiles)

one() { # LABEL BACKEND NAME ARCH OUT ENTRIES: fetch and check one object
	label=$1 backend=$2 name=$3 arch=$4 out=$5 entries=$6
	if ! "$KJIT" get --kernel "$name" --backend "$backend" --target "$arch" -o "$out" >"$T/log" 2>&1; then
		not_ok "$label" "$(head -c 400 "$T/log")"
		return
	fi
	case $backend in
	vulkan) spirv-val --target-env vulkan1.1 "$out" >"$T/val" 2>&1 || { not_ok "$label" "spirv-val: $(head -c 300 "$T/val")"; return; } ;;
	*)
		want=224
		[ "$backend" = cuda ] && want=190
		[ "$(elf_u16 "$out" 18)" = "$want" ] || { not_ok "$label" "e_machine $(elf_u16 "$out" 18), want $want"; return; }
		# shellcheck disable=SC2046
		"$CHECK_ENTRIES" "$out" $(echo "$entries" | tr ',' ' ') >"$T/ent" 2>&1 ||
			{ not_ok "$label" "$(head -c 300 "$T/ent")"; return; }
		;;
	esac
	ok "$label"
}

while read -r name backend file entries opts; do
	case $name in ''|'#'*) continue ;; esac
	case $backend in
	hip) archs=$HIP_ARCHS ext=hsaco ;;
	cuda) archs=$CUDA_ARCHS ext=cubin ;;
	vulkan) archs=vulkan1.1 ext=spv ;;
	*) not_ok "$name" "unknown backend $backend"; continue ;;
	esac
	for arch in $archs; do
		out="$T/$name.$arch.$ext"
		one "$name $backend $arch" "$backend" "$name" "$arch" "$out" "$entries"
		if [ -n "$OBJ" ] && [ -f "$out" ]; then
			if [ "$backend" = vulkan ]; then cp "$out" "$OBJ/$name.spv"; else cp "$out" "$OBJ/"; fi
		fi
	done
done <"$KDIR/MANIFEST"

check "every fetch after the warm-up was a hit (compiles $compiles_after_warm -> $(stat_value compiles))" \
	[ "$(stat_value compiles)" = "$compiles_after_warm" ]

# The check must be able to fail: a broken source does not "compile".
printf 'extern "C" __global__ void broken(float *y) { y[0] = no_such_name; }\n' >"$T/broken.cu"
"$KJIT" get --source "$T/broken.cu" --backend cuda --target sm_90 >"$T/log" 2>&1
check "a broken CUDA source is a compile error (exit 1)" [ $? -eq 1 ]
finish
