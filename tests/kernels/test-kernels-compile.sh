#!/bin/sh
# test-kernels-compile.sh: compile every kernel in kernels_src/MANIFEST for every
# target the project promises, and check the result.
#   hip    lines: hiprtc for gfx90a, gfx908, gfx1030 (wave64, wave64, wave32);
#   cuda   lines: NVRTC for sm_80 and sm_90 (cubin);
#   vulkan lines: glslangValidator (--target-env vulkan1.1) then spirv-val.
# Each distinct (file, target, options) is compiled once, in its own process (build/tests/kernels/rtc-check, a
# stand-in for `kjit get`), which also checks that every entry point is in the code
# object.  With KJIT_OBJ_DIR set, the objects are kept there as
# NAME.ARCH.{hsaco,cubin} and NAME.spv (the CUDA example can run from that directory).
# Prints one line per check ("ok ..." / "not ok ...") and ends with "N passed, N failed"; exit 1 on any failure.
# Run from the repository root; KJIT_KERNELS_DIR overrides ./kernels_src.
set -u
KDIR=${KJIT_KERNELS_DIR:-kernels_src}
RTC=${KJIT_RTC_CHECK:-${BUILD:-build}/tests/kernels/rtc-check}
HIP_ARCHS=${KJIT_TEST_HIP_ARCHS:-"gfx90a gfx908 gfx1030"}
CUDA_ARCHS=${KJIT_TEST_CUDA_ARCHS:-"sm_80 sm_90"}
OBJ=${KJIT_OBJ_DIR:-}
TMP=$(mktemp -d /tmp/kjit-compile.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
pass=0
fail=0

[ -x "$RTC" ] || { echo "not ok test-kernels-compile: $RTC not built (make -f tests/kernels/Makefile.part kernels-tests)"; echo "0 passed, 1 failed"; exit 1; }
[ -n "$OBJ" ] && mkdir -p "$OBJ"

check() { # check LABEL LOGFILE COMMAND...: run it, print one line, count it
    label=$1 log=$2
    shift 2
    if "$@" >"$log" 2>&1; then
        echo "ok $label"
        pass=$((pass + 1))
    else
        echo "not ok $label"
        sed 's/^/     | /' "$log" | head -20
        fail=$((fail + 1))
    fi
}

vk_compile() { # vk_compile SRC OUT OPTIONS...
    src=$1 out=$2
    shift 2
    glslangValidator --target-env vulkan1.1 -V -I"$KDIR/include" "$@" -o "$out" "$src" &&
        spirv-val --target-env vulkan1.1 "$out"
}

while read -r name backend file entries opts; do
    case $name in ''|'#'*) continue ;; esac
    eflags=$(echo "$entries" | tr ',' '\n' | sed 's/^/-e /' | tr '\n' ' ')
    case $backend in
    hip|cuda)
        if [ "$backend" = hip ]; then archs=$HIP_ARCHS ext=hsaco; else archs=$CUDA_ARCHS ext=cubin; fi
        for arch in $archs; do
            # one compile per (backend, file, target, options); names sharing it
            # (add_f32 and sub_f32 both build binary.cu) only check their entries
            key=$(printf '%s|%s|%s|%s' "$backend" "$file" "$arch" "$opts" | cksum | cut -d' ' -f1)
            out=$TMP/obj-$key.$ext
            if [ -f "$out" ]; then
                # shellcheck disable=SC2086
                check "$name $backend $arch (shared object)" "$TMP/log" "$RTC" --entries-in "$out" $eflags
            else
                # shellcheck disable=SC2086 # options and entry flags are word lists on purpose
                check "$name $backend $arch" "$TMP/log" "$RTC" "$backend" "$KDIR/$file" "$arch" \
                    -o "$out" $eflags -- -I"$KDIR/include" $opts
            fi
            [ -n "$OBJ" ] && [ -f "$out" ] && cp "$out" "$OBJ/$name.$arch.$ext"
        done
        ;;
    vulkan)
        out=$TMP/$name.spv
        # shellcheck disable=SC2086
        check "$name vulkan spirv-val" "$TMP/log" vk_compile "$KDIR/$file" "$out" $opts
        [ -n "$OBJ" ] && [ -f "$out" ] && cp "$out" "$OBJ/"
        ;;
    *)
        echo "not ok $name: unknown backend $backend"
        fail=$((fail + 1))
        ;;
    esac
done <"$KDIR/MANIFEST"

# The harness must be able to fail: a source with an error must not "compile".
printf 'extern "C" __global__ void broken(float *y) { y[0] = no_such_name; }\n' >"$TMP/broken.cu"
if "$RTC" cuda "$TMP/broken.cu" sm_90 >"$TMP/log" 2>&1; then
    echo "not ok compile-error-detected: a broken source compiled"
    fail=$((fail + 1))
else
    echo "ok compile-error-detected"
    pass=$((pass + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
