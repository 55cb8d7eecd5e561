#!/bin/sh
# sources.sh: sources written in the styles of issue 30 (tests/realworld/styles),
# each compiled through a real kjitd as a user would type it, then a hit, and
# the object compared with the raw compiler's (nvcc's cubin byte for byte;
# hipcc's bundle unbundled): a computed include through libcu++ and a
# computed project header (CUTLASS/CuTe style, NVRTC and nvcc), a backslash
# and blank before a newline and a trigraph under -std=c++14 (nvcc, hipcc),
# "../include/" from the source's folder with no -I (nvcc, hipcc), a
# function-like -D naming a header and used in code, -include FILE (nvcc,
# hipcc, hiprtc) and NVRTC's --pre-include=FILE; a second user's "../" to
# a file it cannot read.
# Then the key completeness check: for every source of tests/realworld, the
# styles and kernels_src, the compiler's own dependency list (nvcc -M,
# hipcc -M) must name no file outside the toolchain that kjit did not send
# (`kjit get --print-headers`).  A compiler not installed here is said and
# its checks skipped.
. "$(dirname "$0")/lib.sh"

R="$T/rw"
cp -r "$TOP/tests/realworld" "$R"
S="$R/styles"
INC="$R/include"

have_nvcc=0 have_hipcc=0 have_nvrtc=0
command -v nvcc >/dev/null 2>&1 && have_nvcc=1
command -v hipcc >/dev/null 2>&1 && have_hipcc=1
ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && have_nvrtc=1
BUNDLER=$(ls /usr/bin/clang-offload-bundler* 2>/dev/null | head -1)

# get ARGS...: "STATUS KEY" of `kjit get`, or "error" (stderr in $T/err).
get() {
	"$KJIT" get "$@" >"$T/out" 2>"$T/err" && cut -d' ' -f1,2 "$T/out" || echo error
}
status() { echo "$1" | cut -d' ' -f1; }
key() { echo "$1" | cut -d' ' -f2; }

# twice NAME ARGS...: compiles (object in $T/obj), then a hit of the same key.
twice() {
	tw=$1
	shift
	a=$(get "$@" -o "$T/obj")
	check "$tw: compiles" [ "$(status "$a")" = compiled ]
	[ "$(status "$a")" = compiled ] || sed 's/^/# /' "$T/err"
	b=$(get "$@" -o "$T/obj2")
	check "$tw: repeats as a hit" [ "$b" = "hit $(key "$a")" ]
}

# same_as_raw NAME RAW_OBJECT: kjit's object ($T/obj) is the raw compiler's
# (an offload bundle is unbundled for the target first).
same_as_raw() {
	raw=$2
	if [ "${raw##*.}" = hsaco ]; then
		if [ -z "$BUNDLER" ]; then
			echo "# skip $1: byte-identical to raw hipcc (no clang-offload-bundler)"
			return 0
		fi
		"$BUNDLER" --unbundle --type=o --targets=hipv4-amdgcn-amd-amdhsa--gfx90a --inputs="$raw" \
			--outputs="$raw.co" && raw="$raw.co"
	fi
	check "$1: byte-identical to the raw compiler's" cmp -s "$T/obj" "$raw"
}

start_daemon || { not_ok start "kjitd did not start"; exit 1; }

if [ $have_nvrtc = 1 ]; then
	twice "nvrtc: #include STD_HEADER(cstdint) through libcu++, a computed project header" \
		--source "$S/stl_computed.cu" --backend cuda --target sm_90 -I "$INC" --entry stl_twice
	k1=$(key "$a")
	printf '\n// changed\n' >>"$INC/rw/host_only.cuh"
	c=$(get --source "$S/stl_computed.cu" --backend cuda --target sm_90 -I "$INC" --entry stl_twice)
	check "nvrtc: a change to a header reached through a computed include changes the key" \
		[ "$(status "$c")" = compiled ] && [ "$(key "$c")" != "$k1" ]
	cp "$TOP/tests/realworld/include/rw/host_only.cuh" "$INC/rw/host_only.cuh"
	# the header named by -D: kjitd's own scan takes the request's -D too
	twice "nvrtc: #include STR(rw/CONFIG) with -DSTYLES_CONFIG=common.cuh" --source "$S/cfg_by_define.cu" \
		--backend cuda --target sm_90 -I "$INC" -DSTYLES_CONFIG=common.cuh --entry cfg_sum
else
	echo "# skip NVRTC checks: libnvrtc not installed"
fi

if [ $have_nvcc = 1 ]; then
	nvcc --cubin -arch=sm_90 -I "$INC" -o "$T/raw1.cubin" "$S/stl_computed.cu" 2>/dev/null
	twice "nvcc: computed includes" --source "$S/stl_computed.cu" --backend cuda --target sm_90 -I "$INC" \
		--compiler nvcc --entry stl_twice
	same_as_raw "nvcc: computed includes" "$T/raw1.cubin"
	nvcc --cubin -arch=sm_90 -std=c++14 -o "$T/raw2.cubin" "$S/lexer_habits.cu" 2>/dev/null
	twice "nvcc -std=c++14: a trigraph ??=include and a backslash-blank splice" \
		--source "$S/lexer_habits.cu" --backend cuda --target sm_90 -std=c++14 --compiler nvcc --entry lexer_scale
	same_as_raw "nvcc: trigraph and splice" "$T/raw2.cubin"
	grep -q '^header: lexer_habits_tri.h$' "$T/err" 2>/dev/null || "$KJIT" get --source "$S/lexer_habits.cu" \
		--backend cuda --target sm_90 -std=c++14 --compiler nvcc --print-headers >/dev/null 2>"$T/err"
	check "the trigraph's header is sent and keyed" grep -q '^header: lexer_habits_tri.h$' "$T/err"
	(cd "$S/app/src" && nvcc --cubin -arch=sm_90 -o "$T/raw3.cubin" saxpy.cu 2>/dev/null)
	twice "nvcc: \"../include/\" from the source's folder, no -I" \
		--source "$S/app/src/saxpy.cu" --backend cuda --target sm_90 --compiler nvcc --entry app_saxpy
	same_as_raw "nvcc: ../include with no -I" "$T/raw3.cubin"
	# a function-like -D naming a header and one used in code (the option's
	# whitelist is issue 30's other half: said, not failed, where it refuses)
	f=$(get --source "$S/func_macro.cu" --backend cuda --target sm_90 -I "$INC" '-DSTYLES_LD(p)=__ldg(p)' \
		'-DSTYLES_CFG(x)=<rw/x>' --compiler nvcc --entry func_copy -o "$T/obj")
	if [ "$f" = error ] && grep -q 'is not allowed for' "$T/err"; then
		echo "# skip function-like -D through nvcc: its whitelist refuses it here ($(head -1 "$T/err"))"
	else
		nvcc --cubin -arch=sm_90 -I "$INC" '-DSTYLES_LD(p)=__ldg(p)' '-DSTYLES_CFG(x)=<rw/x>' \
			-o "$T/raw4.cubin" "$S/func_macro.cu" 2>/dev/null
		check "nvcc: a function-like -D in an #include and in code" [ "$(status "$f")" = compiled ]
		same_as_raw "nvcc: function-like -D" "$T/raw4.cubin"
	fi
else
	echo "# skip nvcc checks: nvcc not installed"
fi

if [ $have_hipcc = 1 ]; then
	(cd "$S/app/src" && hipcc --genco --offload-arch=gfx90a -o "$T/raw5.hsaco" saxpy.hip 2>/dev/null)
	twice "hipcc: \"../include/\" from the source's folder, no -I" \
		--source "$S/app/src/saxpy.hip" --backend hip --target gfx90a --compiler hipcc --entry app_saxpy
	same_as_raw "hipcc: ../include with no -I" "$T/raw5.hsaco"
else
	echo "# skip hipcc checks: hipcc not installed"
fi

# -include FILE (nvcc, hipcc), NVRTC's --pre-include=FILE: the file and what
# it includes are sent and keyed, and the compile in the job reads them first.
PRE="$S/preinc"
if [ $have_nvcc = 1 ]; then
	(cd "$PRE" && nvcc --cubin -arch=sm_90 -include prelude.h -o "$T/raw6.cubin" scale.cu 2>/dev/null)
	twice "nvcc -include prelude.h" --source "$PRE/scale.cu" --backend cuda --target sm_90 --compiler nvcc \
		-include "$PRE/prelude.h" --entry pre_scale
	same_as_raw "nvcc -include" "$T/raw6.cubin"
fi
if [ $have_nvrtc = 1 ]; then
	p1=$(cd "$PRE" && get --source scale.cu --backend cuda --target sm_90 --pre-include=prelude.h --entry pre_scale)
	check "nvrtc --pre-include=prelude.h compiles" [ "$(status "$p1")" = compiled ]
	printf '\n// changed\n' >>"$PRE/precision.h"
	p2=$(cd "$PRE" && get --source scale.cu --backend cuda --target sm_90 --pre-include=prelude.h --entry pre_scale)
	check "a change to a header the pre-included file includes changes the key" \
		[ "$(status "$p2")" = compiled ] && [ "$(key "$p2")" != "$(key "$p1")" ]
	cp "$TOP/tests/realworld/styles/preinc/precision.h" "$PRE/precision.h"
fi
if [ $have_hipcc = 1 ]; then
	(cd "$PRE" && hipcc --genco --offload-arch=gfx90a -include prelude.h -o "$T/raw7.hsaco" scale.hip 2>/dev/null)
	twice "hipcc -include prelude.h" --source "$PRE/scale.hip" --backend hip --target gfx90a --compiler hipcc \
		-include "$PRE/prelude.h" --entry pre_scale
	same_as_raw "hipcc -include" "$T/raw7.hsaco"
fi
if ldconfig -p 2>/dev/null | grep -q 'libamdhip64\.so\|libhiprtc\.so'; then
	twice "hiprtc -include prelude.h" --source "$PRE/scale.hip" --backend hip --target gfx90a \
		-include "$PRE/prelude.h" --entry pre_scale
fi
w=$(get --source "$PRE/scale.cu" --backend cuda --target sm_90 -include "$PRE/absent.h")
check "-include of a path found nowhere is said" [ "$w" = error ] && grep -q 'absent.h: not found' "$T/err"
if [ $have_nvrtc = 1 ]; then # a toolkit header: the compiler's to find, as with the raw compiler
	printf 'extern "C" __global__ void h2(__half *x) { x[0] = __float2half(1.0f); }\n' >"$T/h2.cu"
	w=$(get --source "$T/h2.cu" --backend cuda --target sm_90 -include cuda_fp16.h --entry h2)
	check "-include cuda_fp16.h (the toolkit's) compiles" [ "$(status "$w")" = compiled ]
fi

# The key completeness check.  covered NAME SOURCE "KJIT ARGS" "DEP ARGS":
# every file `DEPTOOL -M DEP_ARGS SOURCE` lists (but the toolchain's, which
# the compiler's identity covers) is the source or a header kjit sent.  The
# request names a target no compiler has (sm_10): the client prints what it
# sends before the daemon says no, so nothing compiles.
covered() {
	cname=$1 src=$2 kargs=$3 dargs=$4
	case "$src" in *.hip) tool=hipcc backend=hip target=gfx0 ;; *) tool=nvcc backend=cuda target=sm_10 ;; esac
	if [ $tool = nvcc ] && [ $have_nvcc = 0 ] || [ $tool = hipcc ] && [ $have_hipcc = 0 ]; then
		echo "# skip completeness of $cname: $tool not installed"
		return 0
	fi
	# shellcheck disable=SC2086
	(cd "$(dirname "$src")" && "$KJIT" get --source "$src" --backend $backend --target $target $kargs \
		--print-headers >/dev/null 2>"$T/sent") || true
	sed -n 's/^header: //p' "$T/sent" >"$T/sent.names"
	dir=$(dirname "$src")
	# shellcheck disable=SC2086
	(cd "$dir" && $tool -M $dargs "$(basename "$src")" 2>/dev/null) | tr ' \\' '\n\n' |
		awk 'NF && seen && !/:$/ { print } /:$/ { seen = 1 }' >"$T/deps"
	miss=""
	srcreal=$(realpath "$src")
	while read -r f; do
		p=$(cd "$dir" && realpath "$f" 2>/dev/null) || continue
		case "$p" in "$srcreal" | /usr/* | /opt/*) continue ;; esac
		hit=0
		while read -r h; do
			case "$p" in */"$h") hit=1 && break ;; esac
		done <"$T/sent.names"
		[ $hit = 1 ] || miss="$miss $f"
	done <"$T/deps"
	check "completeness: $cname: every file $tool -M lists is keyed" [ -z "$miss" ] && [ -s "$T/deps" ]
	[ -z "$miss" ] || echo "# not sent:$miss"
}

covered stl_computed.cu "$S/stl_computed.cu" "-I $INC" "-I $INC"
covered cfg_by_define.cu "$S/cfg_by_define.cu" "-I $INC -DSTYLES_CONFIG=common.cuh" "-I $INC -DSTYLES_CONFIG=common.cuh"
covered lexer_habits.cu "$S/lexer_habits.cu" "-std=c++14" "-std=c++14"
covered "app/src/saxpy.cu" "$S/app/src/saxpy.cu" "" ""
covered "app/src/saxpy.hip" "$S/app/src/saxpy.hip" "" "--offload-arch=gfx90a"
covered half_reduce.cu "$R/half_reduce.cu" "-I $INC -std=c++17" "-I $INC -std=c++17"
covered host_axpy.cu "$R/host_axpy.cu" "-I $INC" "-I $INC"
covered templated.cu "$R/templated.cu" "-I $INC" "-I $INC"
covered warn_unused.cu "$R/warn_unused.cu" "" ""
covered beside/stencil.cu "$R/beside/stencil.cu" "" ""
covered app/src/scale.cu "$R/app/src/scale.cu" "-I $R/app/include" "-I $R/app/include"
covered app/src/main.hip "$R/app/src/main.hip" "-I $R/app/include" "-I $R/app/include --offload-arch=gfx90a"
covered preinc/scale.cu "$PRE/scale.cu" "-include prelude.h" "-include prelude.h"
covered preinc/scale.hip "$PRE/scale.hip" "-include prelude.h" "-include prelude.h --offload-arch=gfx90a"
covered vecadd_main.hip "$R/vecadd_main.hip" "" "--offload-arch=gfx90a"
covered hipified.hip "$R/hipified.hip" "" "--offload-arch=gfx90a"
covered warn_scale.hip "$R/warn_scale.hip" "" "--offload-arch=gfx90a"
for k in "$TOP"/kernels_src/*.cu; do
	covered "kernels_src/$(basename "$k")" "$k" "-I $TOP/kernels_src/include" "-I $TOP/kernels_src/include"
done

# "..": the client reads what its user can read, and only that.  A second
# user (useradd, setpriv) includes "../readable.h" (0644) and "../secret.h"
# (0600 root) from its source's folder: the first compiles, the second
# fails in the client as the raw compiler fails, its bytes nowhere.
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	U="kjin$$"
	trap 'userdel "$U" 2>/dev/null; cleanup' EXIT INT TERM
	useradd -M -N -g nogroup -s /bin/sh "$U" || not_ok users "cannot create a user"
	P="$T/proj"
	mkdir -p "$P/src" && cp "$KJIT" "$T/kjit" && chmod 0755 "$T" "$T/kjit" "$P" "$P/src" "$T/sock" &&
		chmod 0666 "$KJIT_SOCKET"
	MARK="kjsecret$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
	printf '#define READABLE_GAIN 2.0f\n' >"$P/readable.h"
	printf '#define %s 1\n' "$MARK" >"$P/secret.h"
	chmod 0644 "$P/readable.h" && chmod 0600 "$P/secret.h"
	printf '#include "../readable.h"\n__global__ void rk(float *x) { x[0] *= READABLE_GAIN; }\n' >"$P/src/r.cu"
	printf '#include "../secret.h"\n__global__ void sk(float *x) { x[0] = 1; }\n' >"$P/src/s.cu"
	chmod 0644 "$P/src/r.cu" "$P/src/s.cu"
	as_user() {
		setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups env KJIT_SOCKET="$KJIT_SOCKET" \
			KJIT_NO_AUTOSTART=1 HOME=/ "$@"
	}
	as_user "$T/kjit" get --source "$P/src/r.cu" --backend cuda --target sm_10 --print-headers \
		>/dev/null 2>"$T/u.err"
	check "another user: \"../readable.h\" is read and sent" grep -q '^header: readable.h$' "$T/u.err"
	as_user "$T/kjit" get --source "$P/src/s.cu" --backend cuda --target sm_90 >"$T/u.out" 2>"$T/u.err"
	check "another user: \"../secret.h\" (0600 root) is refused by the client" \
		grep -q 'secret.h": cannot read it: Permission denied' "$T/u.err"
	check "and its bytes appear nowhere" sh -c "! grep -rq '$MARK' '$T/u.err' '$T/u.out' '$KJIT_CACHE_DIR' '$T/kjitd.log'"
else
	echo "# skip the second user's checks: needs root, useradd and setpriv"
fi

stop_daemon
finish
