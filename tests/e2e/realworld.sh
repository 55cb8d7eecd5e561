#!/bin/sh
# realworld.sh: the kernels of tests/realworld, as users write them, through
# a real kjitd with the real compilers: NVRTC (CUDA's own headers, a header
# guarded by #ifndef __CUDACC_RTC__), hiprtc (hipify's quoted
# "hip/hip_runtime.h"), shaderc (-I and eight -D's in glslc's spellings),
# nvcc (a full .cu with host code) and hipcc --genco (a HIP program with
# <cstdint> and <iostream>), as the daemon's compiler and per request.  Each compiles, repeats as a hit, and a change
# to a header found through -I changes the key.  Then what must stay
# refused: a missing entry point, names leaving the tree, /etc/passwd, and
# -I /etc (the client reads and sends; the daemon reads nothing outside its
# roots).  A compiler not installed here is said and its checks skipped.
. "$(dirname "$0")/lib.sh"

R="$T/rw"
cp -r "$TOP/tests/realworld" "$R"
INC="$R/include"

# get ARGS...: "STATUS KEY" of `kjit get`, or "error" (stderr in $T/err).
get() {
	"$KJIT" get "$@" >"$T/out" 2>"$T/err" && cut -d' ' -f1,2 "$T/out" || echo error
}
status() { echo "$1" | cut -d' ' -f1; }
key() { echo "$1" | cut -d' ' -f2; }

# roundtrip NAME HEADER ARGS...: compiles, hits, and a changed HEADER (under
# $INC) compiles again under another key; restored, it hits the first key.
roundtrip() {
	rt=$1 hdr=$2
	shift 2
	a=$(get "$@")
	check "$rt compiles" [ "$(status "$a")" = compiled ]
	[ "$(status "$a")" = compiled ] || sed 's/^/# /' "$T/err"
	b=$(get "$@")
	check "$rt repeats as a hit" [ "$b" = "hit $(key "$a")" ]
	[ -n "$hdr" ] || return 0
	cp "$INC/$hdr" "$T/saved"
	printf '\n// changed\n' >>"$INC/$hdr"
	c=$(get "$@")
	check "$rt: a change to $hdr changes the key" \
		[ "$(status "$c")" = compiled ] && [ "$(key "$c")" != "$(key "$a")" ]
	cp "$T/saved" "$INC/$hdr"
	d=$(get "$@")
	check "$rt: $hdr restored hits the first key" [ "$d" = "hit $(key "$a")" ]
}

have_nvrtc=0 have_hiprtc=0
ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && have_nvrtc=1
ldconfig -p 2>/dev/null | grep -q 'libamdhip64\.so\|libhiprtc\.so' && have_hiprtc=1

start_daemon || { not_ok start "kjitd did not start"; exit 1; }

if [ $have_nvrtc = 1 ]; then
	roundtrip "nvrtc: cuda_fp16/bf16, cooperative_groups, -I" rw/common.cuh \
		--source "$R/half_reduce.cu" --backend cuda --target sm_90 -I "$INC" --entry half_row_sum -std=c++17
	# the guarded header is read (and keyed) though NVRTC skips its body
	roundtrip "nvrtc: #ifndef __CUDACC_RTC__ header" rw/host_only.cuh \
		--source "$R/half_reduce.cu" --backend cuda --target sm_90 -I "$INC" --entry half_row_sum -DRW_BLOCK=128
	# a templated kernel fetched by name expression: the lowered names come
	# back with the object, on the compile and on a hit
	t1=$("$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$INC" \
		--name-expression 'scale<float, 4>' --name-expression 'scale<__half, 2>' 2>&1)
	check "--name-expression: compiled with its lowered names" sh -c "echo '$t1' | grep -q '^compiled' &&
		echo '$t1' | grep -q '^lowered scale<float, 4> _Z5scaleIfLi4EEvPT_S0_i\$' &&
		echo '$t1' | grep -q '^lowered scale<__half, 2> _Z5scaleI6__halfLi2EEvPT_S1_i\$'"
	t2=$("$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$INC" \
		--name-expression 'scale<float, 4>' --name-expression 'scale<__half, 2>' --entry _Z5scaleIfLi4EEvPT_S0_i 2>&1)
	check "--name-expression: the same names on a hit (from the index)" sh -c "echo '$t2' | grep -q '^compiled\|^hit' &&
		echo '$t2' | grep -q '^lowered scale<float, 4> _Z5scaleIfLi4EEvPT_S0_i\$'"
	t3=$("$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$INC" \
		--name-expression 'scale<float, 4>' --name-expression 'scale<__half, 2>' 2>&1)
	check "--name-expression: a hit" sh -c "echo '$t3' | grep -q '^hit' && echo '$t3' | grep -q '^lowered scale<__half, 2> _Z5scaleI6__halfLi2EEvPT_S1_i\$'"
	k3=$(echo "$t3" | head -n 1 | cut -d' ' -f2)
	# with -o - standard output is the object's alone: the lowered lines
	# go to stderr with the status line
	"$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$INC" \
		--name-expression 'scale<float, 4>' -o "$T/t.cubin" >/dev/null 2>&1
	"$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$INC" \
		--name-expression 'scale<float, 4>' -o - >"$T/t.out" 2>"$T/t.err"
	check "-o - with --name-expression: the object alone on stdout" cmp -s "$T/t.cubin" "$T/t.out"
	check "and the lowered line on stderr" grep -q '^lowered scale<float, 4> _Z5scaleIfLi4EEvPT_S0_i$' "$T/t.err"
	"$KJIT" show "$k3" >"$T/show" 2>&1
	check "kjit show lists the lowered names" grep -q '^lowered *scale<float, 4> = _Z5scaleIfLi4EEvPT_S0_i$' "$T/show"
	check "in their own place, not in the log" sh -c "! grep -q 'kjit: lowered name' '$T/show'"
	"$KJIT" show --json "$k3" >"$T/show.json" 2>&1
	check "kjit show --json: a lowered object" grep -q '"lowered":{"scale<float, 4>":"_Z5scaleIfLi4EEvPT_S0_i","scale<__half, 2>":"_Z5scaleI6__halfLi2EEvPT_S1_i"}' "$T/show.json"
	# an index of schema 2 (lowered names as lines of the log) still serves
	# them: kjitd moves them into their column when it opens it
	if command -v sqlite3 >/dev/null 2>&1; then
		stop_daemon
		sqlite3 "$KJIT_CACHE_DIR/index.sqlite" "UPDATE objects SET log = coalesce(log, '') ||
			'kjit: lowered name: ' || replace(replace(rtrim(lowered, char(10)), char(9), ' = '), char(10),
			char(10) || 'kjit: lowered name: ') || char(10) WHERE lowered IS NOT NULL;
			ALTER TABLE objects DROP COLUMN lowered; PRAGMA user_version=2;" >"$T/sq" 2>&1
		check "(an index put back to schema 2)" [ "$(sqlite3 "$KJIT_CACHE_DIR/index.sqlite" 'PRAGMA user_version')" = 2 ]
		start_daemon || { not_ok start "kjitd did not start on a schema 2 index"; exit 1; }
		t4=$("$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$INC" \
			--name-expression 'scale<float, 4>' --name-expression 'scale<__half, 2>' 2>&1)
		check "schema 2 index: the entry kept, a hit with its lowered names" sh -c "echo '$t4' | grep -q '^hit $k3' &&
			echo '$t4' | grep -q '^lowered scale<__half, 2> _Z5scaleI6__halfLi2EEvPT_S1_i\$'"
		check "schema 2 index: now schema 6" [ "$(sqlite3 "$KJIT_CACHE_DIR/index.sqlite" 'PRAGMA user_version')" = 6 ]
		"$KJIT" show "$k3" >"$T/show" 2>&1
		check "schema 2 index: the names moved out of the log" sh -c "grep -q '^lowered *scale<float, 4> = ' '$T/show' &&
			! grep -q 'kjit: lowered name' '$T/show'"
	fi
	# and through a bundle, into another cache
	"$KJIT" export -o "$T/rw.kjb" >/dev/null 2>&1
	stop_daemon
	saved_cache=$KJIT_CACHE_DIR
	export KJIT_CACHE_DIR="$T/cache2"
	start_daemon || { not_ok start "kjitd did not start on a second cache"; exit 1; }
	"$KJIT" import "$T/rw.kjb" >/dev/null 2>&1
	"$KJIT" show "$k3" >"$T/show" 2>&1
	check "a bundle carries the lowered names" grep -q '^lowered *scale<__half, 2> = _Z5scaleI6__halfLi2EEvPT_S1_i$' "$T/show"
	t5=$("$KJIT" get --source "$R/templated.cu" --backend cuda --target sm_90 -I "$INC" \
		--name-expression 'scale<float, 4>' --name-expression 'scale<__half, 2>' 2>&1)
	check "an imported entry: a hit with its lowered names" sh -c "echo '$t5' | grep -q '^hit $k3' &&
		echo '$t5' | grep -q '^lowered scale<float, 4> _Z5scaleIfLi4EEvPT_S0_i\$'"
	stop_daemon
	export KJIT_CACHE_DIR="$saved_cache"
	start_daemon || { not_ok start "kjitd did not start again"; exit 1; }
	x=$(get --source "$R/half_reduce.cu" --backend cuda --target sm_90 -I "$INC" --fatbin)
	check "NVRTC makes no fatbin and says who does" [ "$x" = error ] && grep -q 'fatbin needs nvcc (--compiler nvcc)' "$T/err"
	n0=$("$KJIT" ls | grep -c half_reduce)
	x=$(get --source "$R/half_reduce.cu" --backend cuda --target sm_90 -I "$INC" --entry half_row_summ)
	check "a missing entry point is an error" [ "$x" = error ]
	check "that names the entry points there are" grep -q "no entry point 'half_row_summ'.*it has: half_row_sum" "$T/err"
	# entry points are not in NVRTC's key: the module's object is cached
	# once (right for its other entries), and a repeat is answered from it
	# with the same error, not compiled again
	n=$("$KJIT" ls | grep -c half_reduce)
	x=$(get --source "$R/half_reduce.cu" --backend cuda --target sm_90 -I "$INC" --entry half_row_summ)
	check "a repeat: the same error from the cached module" [ "$x" = error ] && grep -q "no entry point 'half_row_summ'" "$T/err"
	check "and adds one cache entry, the module's, once" [ "$n" = "$((n0 + 1))" ] && [ "$("$KJIT" ls | grep -c half_reduce)" = "$n" ]
	# -I /etc: nothing the source includes comes from there: same key as without
	y0=$(get --source "$R/half_reduce.cu" --backend cuda --target sm_90 -I "$INC" --entry half_row_sum -std=c++17)
	y=$(get --source "$R/half_reduce.cu" --backend cuda --target sm_90 -I "$INC" -I /etc --entry half_row_sum -std=c++17)
	check "-I /etc adds nothing unread" [ "$y" = "$y0" ] && [ "$(status "$y")" = hit ]
	# the daemon alone never finds /etc/passwd: the compiler cannot open it
	printf '#include "passwd"\nextern "C" __global__ void k() {}\n' >"$T/p.cu"
	z=$(get --source "$T/p.cu" --backend cuda --target sm_90)
	check "the daemon does not read /etc/passwd by itself" [ "$z" = error ] && grep -q 'cannot open source file "passwd"' "$T/err"
	check "nor shows it" sh -c "! grep -q 'root:' '$T/err'"
else
	echo "# NVRTC not installed: its realworld checks skipped"
fi

if [ $have_hiprtc = 1 ]; then
	roundtrip "hiprtc: hipify's quoted hip/hip_runtime.h" rw/scale.h \
		--source "$R/hipified.hip" --backend hip --target gfx90a -I "$INC" --entry scale_rows
else
	echo "# hiprtc not installed: its realworld checks skipped"
fi

D8="-DBLOCK_SIZE=128 -DA_TYPE=float -DD_TYPE=float -DUSE_MAX4=1 -DEPS_SCALE=0 -DEPS=1e-6 -DOUT_SCALE=1.0 -DFAST_EXP"
# shellcheck disable=SC2086
roundtrip "shaderc: -I and eight -D in glslc's spellings" rw/common.glsl \
	--source "$R/softmax.comp" --backend vulkan -fshader-stage=compute --target-env=vulkan1.2 -std=450 -O \
	-I "$INC" $D8 --entry main
# shellcheck disable=SC2086
v=$(get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -std=450 -O -I "$INC" \
	$D8 -DBLOCK_SIZE=64 --entry main)
check "shaderc: another -D value is another key" [ "$(status "$v")" = compiled ]
# -o /dev/stdout into a pipe writes through, as cp does: the bytes of -o FILE
# shellcheck disable=SC2086
"$KJIT" get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -I "$INC" $D8 -o "$T/sm.spv" >/dev/null 2>&1
# shellcheck disable=SC2086
"$KJIT" get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -I "$INC" $D8 -o /dev/stdout 2>"$T/so.err" |
	cat >"$T/so.spv"
check "-o /dev/stdout into a pipe: the bytes of -o FILE" [ -s "$T/sm.spv" ] && cmp -s "$T/sm.spv" "$T/so.spv"
check "-o /dev/stdout: the status line on stderr" grep -q '^hit ' "$T/so.err"
# and into a socket (a parent's socketpair: /proc/self/fd/1 cannot be opened there)
python3 - "$KJIT" "$R/softmax.comp" "$INC" "$T/sock.spv" $D8 <<'PYEOF' 2>"$T/sock.err"
import socket, subprocess, sys
kjit, src, inc, out, defs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
a, b = socket.socketpair()
p = subprocess.Popen([kjit, "get", "--source", src, "--backend", "vulkan", "--target", "vulkan1.2", "-I", inc,
                      *defs, "-o", "/dev/stdout"], stdout=a, stderr=subprocess.DEVNULL)
a.close()
data = b""
while True:
    x = b.recv(65536)
    if not x:
        break
    data += x
p.wait()
open(out, "wb").write(data)
PYEOF
check "-o /dev/stdout into a socket: the bytes of -o FILE" cmp -s "$T/sm.spv" "$T/sock.spv"

# glslc's HLSL habits: -x hlsl / -xhlsl (the suffix says nothing), -fentry-point=
h1=$(get --source "$R/saxpy_cs.fx" --backend vulkan --target vulkan1.2 -x hlsl -fentry-point=CSMain)
check "shaderc: an HLSL compute shader with -x hlsl -fentry-point=CSMain" [ "$(status "$h1")" = compiled ]
h2=$(get --source "$R/saxpy_cs.fx" --backend vulkan --target vulkan1.2 -xhlsl -fentry-point=CSMain)
check "-xhlsl is -x hlsl: the same key, a hit" [ "$h2" = "hit $(key "$h1")" ]
h3=$(get --source "$R/saxpy_cs.fx" --backend vulkan --target vulkan1.2 -x hlsl -fentry-point=CSMain -fhlsl-iomap -O0 -g)
check "-fhlsl-iomap -O0 -g: accepted, another key" [ "$(status "$h3")" = compiled ] && [ "$(key "$h3")" != "$(key "$h1")" ]
h4=$(get --source "$R/saxpy_cs.fx" --backend vulkan --target vulkan1.2 -fentry-point=CSMain)
check "without -x hlsl it is GLSL, and fails" [ "$h4" = error ]
h5=$(get --source "$R/saxpy_cs.fx" --backend vulkan --target vulkan1.2 -x hlsl -fentry-point=CSMain --entry main)
check "-fentry-point= and another --entry: a usage error" [ "$h5" = error ] && grep -q 'fentry-point= and the first --entry disagree' "$T/err"
# shellcheck disable=SC2086
w1=$(get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -I "$INC" $D8 -Werror -w)
check "shaderc: -Werror and -w accepted, in the key" [ "$(status "$w1")" = compiled ]

# Warning flags, per family: as its own compiler takes them; in the key.
if [ $have_hiprtc = 1 ]; then
	w2=$(get --source "$R/warn_scale.hip" --backend hip --target gfx90a -Wall -Wextra -Werror -Wno-unused-parameter --entry warn_scale)
	check "hiprtc: -Wall -Wextra -Werror -Wno-unused-parameter" [ "$(status "$w2")" = compiled ]
	w3=$(get --source "$R/warn_scale.hip" --backend hip --target gfx90a -Wall -Wextra -Werror --entry warn_scale)
	check "hiprtc: -Werror makes -Wextra's warning an error" [ "$w3" = error ] && grep -q "Werror,-Wunused-parameter" "$T/err"
	w4=$(get --source "$R/warn_scale.hip" --backend hip --target gfx90a -Wl,-rpath=/tmp --entry warn_scale)
	check "hiprtc: -Wl, (the linker's) is no warning flag: refused" [ "$w4" = error ] && grep -q "option '-Wl,-rpath=/tmp' is not allowed" "$T/err"
fi
if [ $have_nvrtc = 1 ]; then
	w5=$(get --source "$R/warn_unused.cu" --backend cuda --target sm_90 -w)
	w6=$(get --source "$R/warn_unused.cu" --backend cuda --target sm_90 --diag-suppress=177)
	check "nvrtc: -w and --diag-suppress=177, two keys" [ "$(status "$w5")" = compiled ] && [ "$(status "$w6")" = compiled ] &&
		[ "$(key "$w5")" != "$(key "$w6")" ]
	w7=$(get --source "$R/warn_unused.cu" --backend cuda --target sm_90 -Wall)
	check "nvrtc has no -Wall: refused in one line naming it" [ "$w7" = error ] && grep -q "option '-Wall' is not allowed for nvrtc" "$T/err"
fi
if [ -x /usr/local/cuda/bin/nvcc ] || [ -x /usr/bin/nvcc ]; then
	w8=$(get --source "$R/warn_unused.cu" --backend cuda --target sm_90 --compiler nvcc -Werror=all-warnings)
	check "nvcc: -Werror=all-warnings makes #177 an error" [ "$w8" = error ] && grep -q 'error #177-D' "$T/err"
	w9=$(get --source "$R/warn_unused.cu" --backend cuda --target sm_90 --compiler nvcc -w -Wno-deprecated-gpu-targets)
	check "nvcc: -w -Wno-deprecated-gpu-targets" [ "$(status "$w9")" = compiled ]
fi
if [ -x /usr/bin/hipcc ] || [ -x /opt/rocm/bin/hipcc ]; then
	w10=$(get --source "$R/warn_scale.hip" --backend hip --target gfx90a --compiler hipcc -Wall -Wextra -Werror -Wno-unused-parameter --entry warn_scale)
	check "hipcc: -Wall -Wextra -Werror -Wno-unused-parameter" [ "$(status "$w10")" = compiled ]
	# hipcc's messages name the user's file, x.cpp as HIP programs are named
	e1=$(get --source "$R/bad_axpy.cpp" --backend hip --target gfx90a --compiler hipcc)
	check "hipcc: a .cpp's error names bad_axpy.cpp" [ "$e1" = error ] && grep -q "^bad_axpy.cpp:9:[0-9]*: error: use of undeclared identifier 'y_missing'" "$T/err"
	check "hipcc: and never source.hip" sh -c "! grep -q source.hip '$T/err'"
fi

# The per-request compiler choice (--compiler), beside the daemon's default.
if [ -x /usr/local/cuda/bin/nvcc ] || [ -x /usr/bin/nvcc ]; then
	roundtrip "--compiler nvcc on a daemon defaulting to nvrtc" "" \
		--source "$R/host_axpy.cu" --backend cuda --target sm_90 -I "$INC" --compiler nvcc --entry _Z4axpyfPKfPfj
	check "both CUDA families have workers" sh -c "'$KJIT' stats | grep -q 'workers nvcc' && '$KJIT' stats | grep -q 'workers nvrtc'"
fi
w=$(get --source "$R/half_reduce.cu" --backend cuda --target sm_90 --compiler shaderc)
check "a compiler of another backend is refused" [ "$w" = error ] && grep -q "compiler 'shaderc' does not build for cuda" "$T/err"

# kjit get --explain: why a request was not a hit (issue 22 item 8)
cp -r "$INC" "$T/xinc"
cp "$R/softmax.comp" "$T/fresh.comp"
# shellcheck disable=SC2086
"$KJIT" get --source "$T/fresh.comp" --backend vulkan --target vulkan1.2 -I "$T/xinc" $D8 -DFRESH --explain >"$T/x0" 2>&1
check "--explain on a first compile: no earlier entry" grep -q "^explain: no earlier entry of fresh.comp" "$T/x0"
# shellcheck disable=SC2086
"$KJIT" get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -I "$T/xinc" $D8 -DEXPLAIN_BASE --explain >"$T/x1" 2>&1
check "--explain on a miss: the nearest earlier entry, the option" grep -q "^explain:   options: here -DEXPLAIN_BASE$" "$T/x1"
# x1's publish (off kjitd's loop) may still be in flight after its answer: its
# entry is seen, its recipe not yet, and x3 would be compared with it on four
# components only.  An admin command begins once the publishes in flight have
# finished (daemon/miss/publish.c kj__publish_when_idle).
"$KJIT" stats >/dev/null 2>&1
# shellcheck disable=SC2086
"$KJIT" get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -I "$T/xinc" $D8 -DEXPLAIN_BASE --explain >"$T/x2" 2>&1
check "--explain on a hit: nothing to explain" grep -q '^explain: a hit' "$T/x2"
# shellcheck disable=SC2086
"$KJIT" get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -I "$T/xinc" $D8 -DEXPLAIN_BASE -DEXPLAIN_OTHER --explain >"$T/x3" 2>&1
check "--explain names the differing option" grep -q '^explain:   options: here -DEXPLAIN_OTHER$' "$T/x3"
check "--explain: and nothing else" [ "$(grep -c '^explain:   ' "$T/x3")" = 1 ]
printf '\n// explain me\n' >>"$T/xinc/rw/common.glsl"
# the same for x3's publish (else x4's nearest could be x3, compared on four components, not x1)
"$KJIT" stats >/dev/null 2>&1
# shellcheck disable=SC2086
"$KJIT" get --source "$R/softmax.comp" --backend vulkan --target vulkan1.2 -I "$T/xinc" $D8 -DEXPLAIN_BASE --explain --json >"$T/x4" 2>/dev/null
check "--explain --json names the differing header" grep -q '"explain":"nearest earlier entry of softmax.comp: [0-9a-f]* (vulkan1.2, [0-9.]*); what differs:\\u000a  header rw/common.glsl: its bytes\\u000a"' "$T/x4"

# Include resolution as the compilers do it (issue 22 items 1, 2): a
# src/ + include/ program reaching "../include/util.hpp" (the source gets
# its place in the tree, src/main.hip; "detail/../config.hpp" inside the
# tree), headers beside the source found without -I; the key covers them.
A="$R/app"
if [ $have_hiprtc = 1 ]; then
	roundtrip "hiprtc: src/main.hip with ../include/util.hpp" rw/../../app/include/detail/math.hpp \
		--source "$A/src/main.hip" --backend hip --target gfx90a -I "$A/include" --entry app_scale
fi
if [ $have_nvrtc = 1 ]; then
	p1=$(get --source "$A/src/scale.cu" --backend cuda --target sm_90 -I "$A/include" --entry app_scale_cu)
	check "nvrtc: src/scale.cu with ../include/util.hpp" [ "$(status "$p1")" = compiled ]
	cp "$A/include/config.hpp" "$T/cfg.saved"
	sed -i 's/0.0f/1.0f/' "$A/include/config.hpp"
	p2=$(get --source "$A/src/scale.cu" --backend cuda --target sm_90 -I "$A/include" --entry app_scale_cu)
	check "nvrtc: a change to config.hpp (reached by detail/../) changes the key" \
		[ "$(status "$p2")" = compiled ] && [ "$(key "$p2")" != "$(key "$p1")" ]
	cp "$T/cfg.saved" "$A/include/config.hpp"
	b1=$(get --source "$R/beside/stencil.cu" --backend cuda --target sm_90 --entry stencil3)
	check "nvrtc: a header beside the source, no -I" [ "$(status "$b1")" = compiled ]
	printf '\n#define STENCIL_EXTRA 1\n' >>"$R/beside/stencil_common.h"
	b2=$(get --source "$R/beside/stencil.cu" --backend cuda --target sm_90 --entry stencil3)
	check "nvrtc: a change to the header beside it changes the key" \
		[ "$(status "$b2")" = compiled ] && [ "$(key "$b2")" != "$(key "$b1")" ]
fi
g1=$(get --source "$A/shaders/gain.comp" --backend vulkan --target vulkan1.2 -I "$A/include")
check "shaderc: shaders/gain.comp with ../include/gain.glsl" [ "$(status "$g1")" = compiled ]
g2=$(get --source "$R/beside/blur.comp" --backend vulkan --target vulkan1.2)
check "shaderc: a header beside the source, no -I" [ "$(status "$g2")" = compiled ]
# issue 30: without -I, "../include/x" from the source's folder is found as
# glslc finds it (the includer's folder first): the same tree, the same key
g3=$(get --source "$A/shaders/gain.comp" --backend vulkan --target vulkan1.2)
check "../include without -I: found, the key of the -I build" [ "$g3" = "hit $(key "$g1")" ]
# a file beside the roots (app/secret.glsl: neither shaders/ nor include/) is
# read as the compiler reads it: the client reads what its user can read
printf '// SECRET-BYTES-%s\nfloat secret_gain(float x) { return x; }\n' $$ >"$A/secret.glsl"
printf '#version 450\n#include "../secret.glsl"\nlayout(local_size_x = 1) in;\nvoid main() {}\n' >"$A/shaders/leak.comp"
g4=$(get --source "$A/shaders/leak.comp" --backend vulkan --target vulkan1.2 -I "$A/include")
check "a .. to the user's own file beside the roots compiles" [ "$(status "$g4")" = compiled ]
rm -f "$A/secret.glsl" "$A/shaders/leak.comp"

# What stays refused, whatever -I says.
printf 'int secret;\n' >"$T/outside.h"
ln -s "$T/outside.h" "$INC/leak.h"
printf '#include "leak.h"\nvoid main() {}\n' >"$T/l.comp"
w=$(get --source "$T/l.comp" --backend vulkan --target vulkan1.2 -I "$INC")
check "a header leaving the -I directory is refused" [ "$w" = error ] && grep -q 'outside the allowed include directories' "$T/err"
printf '#include "../outside.h"\nvoid main() {}\n' >"$T/u.comp"
w=$(get --source "$T/u.comp" --backend vulkan --target vulkan1.2 -I "$INC")
check "a .. escape is refused" [ "$w" = error ] && grep -q '"\.\." in path' "$T/err"
printf '#version 450\n#include "/etc/passwd"\nvoid main() {}\n' >"$T/e.comp"
w=$(get --source "$T/e.comp" --backend vulkan --target vulkan1.2 -I /etc)
check "#include \"/etc/passwd\" is refused" [ "$w" = error ] && grep -q 'e.comp:2: #include "/etc/passwd": absolute path' "$T/err"
check "without its contents" sh -c "! grep -q 'root:' '$T/err'"

# A broken source: one compile for a burst of requests (negcache.c).
printf '#version 450\nvoid main() { nope }\n' >"$T/b.comp"
for i in 1 2 3 4 5; do get --source "$T/b.comp" --backend vulkan --target vulkan1.2 >/dev/null; done
check "a broken source's error names its file and line" grep -q 'shaderc rejected b.comp for vulkan1.2: b.comp:2: error' "$T/err"
check "five requests of a broken source: one compile" [ "$(grep -c 'failed: shaderc rejected b.comp' "$T/kjitd.log")" = 1 ]
stop_daemon

if [ -x /usr/local/cuda/bin/nvcc ] || [ -x /usr/bin/nvcc ]; then
	start_daemon --cuda-compiler nvcc || { not_ok start "kjitd --cuda-compiler nvcc did not start"; exit 1; }
	roundtrip "nvcc: a full .cu with host code and <stdint.h>" rw/common.cuh \
		--source "$R/host_axpy.cu" --backend cuda --target sm_90 -I "$INC" --entry _Z4axpyfPKfPfj -O3
	a2=$(get --source "$R/app/src/scale.cu" --backend cuda --target sm_90 -I "$R/app/include" --entry app_scale_cu)
	check "nvcc: src/scale.cu with ../include/util.hpp (written at its place)" [ "$(status "$a2")" = compiled ]
	p=$(get --source "$R/host_axpy.cu" --backend cuda --target compute_90 -I "$INC")
	check "nvcc: PTX for compute_90" [ "$(status "$p")" = compiled ]
	# a fatbin, as nvcc --fatbin makes it: SASS for sm_90 and PTX for
	# compute_90 (the driver's forward compatibility) in one file
	c=$(get --source "$R/host_axpy.cu" --backend cuda --target sm_90 -I "$INC" --entry _Z4axpyfPKfPfj -O3)
	set -- --source "$R/host_axpy.cu" --backend cuda --target sm_90 -I "$INC" --entry _Z4axpyfPKfPfj -O3 --fatbin
	f=$(get "$@" -o "$T/axpy.fatbin")
	check "nvcc --fatbin: compiled" [ "$(status "$f")" = compiled ]
	check "nvcc --fatbin: a CUDA fatbin (magic 0xBA55ED50)" [ "$(elf_u32 "$T/axpy.fatbin" 0)" = ba55ed50 ]
	check "nvcc --fatbin: holding the sm_90 SASS" sh -c "LC_ALL=C grep -q 'ELF' '$T/axpy.fatbin'"
	check "nvcc --fatbin: its own key, not the cubin's" [ "$(status "$c")" = hit ] && [ "$(key "$f")" != "$(key "$c")" ]
	# the file is written when the publish (off kjitd's loop) finishes, after the answer
	i=0
	while [ -z "$(find "$KJIT_CACHE_DIR" -name "$(key "$f").fatbin")" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	check "nvcc --fatbin: stored as KEY.fatbin" [ -n "$(find "$KJIT_CACHE_DIR" -name "$(key "$f").fatbin")" ]
	f2=$(get "$@")
	check "nvcc --fatbin: repeats as a hit" [ "$f2" = "hit $(key "$f")" ]
	"$KJIT" show "$(key "$f")" >"$T/show" 2>&1
	check "kjit show: a fatbin with SASS and PTX" grep -q '^object *fatbin: CUDA fatbin: SASS for sm_90, PTX for compute_90$' "$T/show"
	"$KJIT" show "$(key "$c")" >"$T/show" 2>&1
	check "kjit show: a cubin" grep -q '^object *cubin: CUDA ELF (SASS)$' "$T/show"
	g=$(get --source "$R/host_axpy.cu" --backend cuda --target compute_90 -I "$INC" --fatbin)
	check "nvcc --fatbin for compute_90: another key than its PTX" [ "$(status "$g")" = compiled ] &&
		[ "$(key "$g")" != "$(key "$p")" ]
	"$KJIT" show "$(key "$g")" >"$T/show" 2>&1
	check "kjit show: a fatbin of PTX alone" grep -q '^object *fatbin: CUDA fatbin: PTX for compute_90$' "$T/show"
	set --
	stop_daemon
else
	echo "# nvcc not installed: its realworld checks skipped"
fi

if [ -x /usr/bin/hipcc ] || [ -x /opt/rocm/bin/hipcc ]; then
	start_daemon --hip-compiler hipcc || { not_ok start "kjitd --hip-compiler hipcc did not start"; exit 1; }
	roundtrip "hipcc --genco: a HIP program with <cstdint>, <iostream>, main" "" \
		--source "$R/vecadd_main.hip" --backend hip --target gfx90a --entry _Z6vecaddPKfS0_Pfj
	roundtrip "hipcc: hipify's quoted include" rw/scale.h \
		--source "$R/hipified.hip" --backend hip --target gfx90a -I "$INC" --entry scale_rows
	a1=$(get --source "$R/app/src/main.hip" --backend hip --target gfx90a -I "$R/app/include" --entry app_scale)
	check "hipcc: src/main.hip with ../include/util.hpp (written at its place)" [ "$(status "$a1")" = compiled ]
	stop_daemon
else
	echo "# hipcc not installed: its realworld checks skipped"
fi

# A bundled kernel's include found nowhere is in the key: when it appears
# in the kernels directory, the request compiles again (memo included).
K="$T/kernels"
mkdir -p "$K/include"
echo "k hip k.hip k" >"$K/MANIFEST"
printf '#if __has_include("opt.h")\n#include "opt.h"\n#endif\nextern "C" __global__ void k(float *x) {}\n' >"$K/k.hip"
start_daemon --hip-compiler test --kernels-dir "$K" || { not_ok start "kjitd did not start"; exit 1; }
m1=$(get --kernel k --backend hip --target gfx90a)
m2=$(get --kernel k --backend hip --target gfx90a)
check "an include found nowhere: compiled, then a hit" [ "$(status "$m1")" = compiled ] && [ "$m2" = "hit $(key "$m1")" ]
sleep 0.01
echo '#define OPT 1' >"$K/include/opt.h"
m3=$(get --kernel k --backend hip --target gfx90a)
check "once it appears, the key changes" [ "$(status "$m3")" = compiled ] && [ "$(key "$m3")" != "$(key "$m1")" ]
# Issue 22: the habits of the tools users come from.
# ping, stats and targets never start a daemon (autostart on, no daemon).
NS="$T/nosock/kjitd.sock"
for c in ping stats targets; do
	KJIT_NO_AUTOSTART= KJIT_SOCKET="$NS" KJIT_CACHE_DIR="$T/nocache" "$KJIT" $c >"$T/np.out" 2>"$T/np.err"
	rc=$?
	check "kjit $c with no daemon: exit 3" [ $rc = 3 ]
	check "kjit $c: says no kjitd on the socket" grep -q "no kjitd on $NS" "$T/np.err"
done
sleep 0.3
check "ping/stats/targets started nothing: no socket" [ ! -e "$NS" ]
check "and no kjitd on that socket" sh -c "! pgrep -f -- '--socke[t] $NS' >/dev/null"

finish
