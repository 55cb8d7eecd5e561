#!/bin/sh
# isolation-attacks.sh: the attacker's suite of issue 20 against a root
# kjitd in --system mode with --allow-gid G, an attacking and a victim user
# in G (temporary, removed however the test ends).  Each attack must give
# an error or a result holding none of what it went for:
#   1. macro injection ($(...), backticks, ;, |, &&, quotes, newline, \)
#      for nvcc and hipcc: no command runs (a marker file it would create
#      stays absent; no uid= in any reply or the log);
#   2. a 0600 root file of random marker bytes read by every means:
#      #include of an absolute path, with .., the spellings a text scan may
#      miss (digraph, comment or form feed or line continuation between #
#      and include, a macro naming the file, #import), __has_include,
#      .incbin in inline asm (hiprtc, hipcc), #embed, #pragma GCC
#      dependency, GLSL #include (shaderc): no marker byte in the reply,
#      the log, or any object;
#   3. the victim's object stays byte-identical to a reference compile of a
#      fresh daemon while the attacker runs;
#   4. background processes an attacker tries to leave (setsid, double
#      fork) do not survive;
#   5. the shared hit table: one per uid whenever other users are admitted,
#      so ATTACH hands the attacker its own table, holding nothing of the
#      victim's (and the owner of a private daemon does find its own: the
#      scan works).
# A secret under /tmp is behind today's Landlock walls; one under /etc needs
# the worker-user wall (helper iso): while workers run as root, its checks
# say "# skip" loudly.  Helper: attack.c.  Docs: docs/reliability.md,
# "Attacks tried and their results".
. "$(dirname "$0")/lib.sh"

users_or_skip isolation-attacks
AT="$T/attack"
build_helper attack "$AT" || exit 1
KJITC="$T/kjit"
cp "$KJIT" "$KJITC" && chmod 0755 "$T" "$KJITC" "$AT"
A="$T/a" # sources, readable by both users
U="$T/u" # where the users write
mkdir -p "$A" "$U" && chmod 0755 "$A" && chmod 0777 "$U"
ATK="kjat$$" VIC="kjvi$$"
ETC_SECRET="/etc/kjit-attack-$$.secret"
cleanup_more() { rm -f "$ETC_SECRET" /tmp/kjit-attack-$$.pwned; }
make_users "kjag$$" "$ATK" "$VIC" || exit 1
# waitall: waits for the jobs in $pids (not for kjitd, also a job here).
pids=""
waitall() {
	for p in $pids; do wait "$p"; done
	pids=""
}

open_socket() { chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"; }

# The secrets: random bytes as one C identifier (a compiler that reads the
# file names it in its error), 0600 root.
# 48 bytes, no newline: an AMDGPU .incbin in a kernel needs a multiple of 4.
MARK="kjsecret$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')"
SECRET="$T/secret"
printf '%s' "$MARK" >"$SECRET" && chmod 0600 "$SECRET"
printf '%s' "$MARK" >"$ETC_SECRET" && chmod 0600 "$ETC_SECRET"
PWNED=/tmp/kjit-attack-$$.pwned

# leaks FILE...: 0 if any of them holds the marker.
leaks() { grep -qsa "$MARK" "$@"; }

# ---- 3 (first half). The victim's sources, compiled by a fresh private
# daemon for reference; its hit table, which the owner maps, must hold the
# victim's entry name (the scan of 5 can find what is there).
VM="k_victim_$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
printf 'extern "C" __global__ void %s(int *p) { p[threadIdx.x] = VICTIM_V * 3 + 1; }\n' "$VM" >"$A/victim.cu"
{ echo '#include <hip/hip_runtime.h>'; cat "$A/victim.cu"; } >"$A/victim.hip"
chmod 0644 "$A"/victim.*
# vget DIR NAME COMPILER V [kjit]: compiles the victim's source into DIR/NAME-COMPILER-V.
vget() {
	case $3 in hip*) b=hip t=gfx90a s=victim.hip ;; *) b=cuda t=sm_90 s=victim.cu ;; esac
	${5:-"$KJIT"} get --source "$A/$s" --backend $b --target $t --compiler "$3" "-DVICTIM_V=$4" \
		-o "$1/$2-$3-$4.out" >"$1/$2-$3-$4.log" 2>&1
}
mkdir -p "$T/ref" && chmod 0777 "$T/ref"
SYS_SOCKET=$KJIT_SOCKET
export KJIT_SOCKET="$T/refsock/kjitd.sock" # not in $T/ref (0777): a client refuses a socket in a folder others may write
"$KJITD" --foreground --socket "$KJIT_SOCKET" --cache-dir "$T/refcache" --log "$T/ref.log" &
REFD=$!
i=0
while ! "$KJIT" ping >/dev/null 2>&1 && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
for c in nvcc hipcc; do for v in 1 2; do
	vget "$T/ref" ref $c $v &
	pids="$pids $!"
done; done
vget "$T/ref" ref nvrtc 1
waitall
vget "$T/ref" hit nvrtc 1 # a hit: in the table too
"$AT" attach-scan "$VM" >"$T/ref/scan.out" 2>&1
"$KJIT" stop >/dev/null 2>&1
wait $REFD
export KJIT_SOCKET=$SYS_SOCKET
check "reference-compiles" sh -c "ls '$T/ref/'ref-*.out | wc -l | grep -qx 5"
check "hittab-owner-finds-own-entry" grep -q "FOUND $VM" "$T/ref/scan.out"

start_daemon --system --allow-gid "$GID" --jobs 2 || { not_ok start "kjitd --system did not start"; exit 1; }
open_socket

# Do the workers run as root?  (The worker-user wall: compilers/walls.c.)
printf '__global__ void warm() {}\n' >"$A/warm.cu"
"$KJIT" get --source "$A/warm.cu" --backend cuda --target sm_90 -o "$T/warm.out" >/dev/null 2>&1
# A worker says its walls in the log: "kjit worker F (pid N): ..., uid U, ...".
ROOTW=1
grep -q "kjit worker .*, uid [1-9][0-9]*," "$T/kjitd.log" && ROOTW=0
[ "$ROOTW" -eq 1 ] && echo "# NOTE: the workers of this kjitd run as root: the /etc secret is readable to them"

# ---- 1. macro injection, nvcc and hipcc ----
printf '__global__ void k(int *p) { p[0] = X; }\n' >"$A/inj.cu"
cp "$A/inj.cu" "$A/inj.hip"
chmod 0644 "$A"/*
nl='
'
n=0
for v in "\$(touch $PWNED; id >&2)1" "\`touch $PWNED; id >&2\`1" "1; touch $PWNED; id >&2" "1 | touch $PWNED" \
	"1 && touch $PWNED" "1\"; touch $PWNED; id >&2; echo \"" "1'; touch $PWNED; id >&2; echo '" \
	"1${nl}touch $PWNED" "1\\" "\\\$(touch $PWNED)1"; do
	n=$((n + 1))
	for c in nvcc hipcc; do
		b=cuda t=sm_90 s=inj.cu
		[ $c = hipcc ] && b=hip t=gfx90a s=inj.hip
		as_user "$ATK" "$KJITC" get --source "$A/$s" --backend $b --target $t --compiler $c "-DX=$v" \
			-o "$U/inj-$c-$n.out" >"$U/inj-$c-$n.log" 2>&1 &
		pids="$pids $!"
	done
	waitall
	for c in nvcc hipcc; do
		if [ -e "$PWNED" ] || grep -q "uid=" "$U/inj-$c-$n.log"; then
			not_ok "injection-$c-$n" "a command ran: $(head -c 300 "$U/inj-$c-$n.log")"
			rm -f "$PWNED"
		else
			ok "injection-$c-$n"
		fi
	done
done
# a newline is refused, by kjit itself or by kjitd naming it
check "injection-newline-refused" grep -qE "printable|holds a newline" "$U/inj-nvcc-8.log" "$U/inj-hipcc-8.log"
check "injection-nothing-in-log" sh -c "! grep -q 'uid=' '$T/kjitd.log'"

# ---- 2. reading a root file ----
# attack NAME FAMILY BACKEND TARGET FILE: the attacker compiles FILE.
attack() {
	name=$1 c=$2 b=$3 t=$4 f=$5
	as_user "$ATK" "$KJITC" get --source "$f" --backend "$b" --target "$t" --compiler "$c" --json \
		-o "$U/$name.out" >"$U/$name.log" 2>&1
	echo $? >"$U/$name.rc"
}
# spell NAME PATH: the attack sources for PATH, one file per spelling.
spell() {
	d="$A/$1"
	mkdir -p "$d"
	p=$2
	printf '#include "%s"\n' "$p" >"$d/abs.cu"
	printf '#include "../../../../../../../../..%s"\n' "$p" >"$d/dotdot.cu"
	printf '%%:include "%s"\n' "$p" >"$d/digraph.cu"
	printf '# /* c */ include "%s"\n' "$p" >"$d/comment.cu"
	printf '#inc\\\nlude "%s"\n' "$p" >"$d/splice.cu"
	printf '#\fin\\\nclude "%s"\n' "$p" >"$d/formfeed.cu"
	printf '#define H "%s"\n#include H\n' "$p" >"$d/macro.cu"
	printf '#define S(x) #x\n#define Q(x) S(x)\n#include Q(%s)\n' "$p" >"$d/stringize.cu"
	printf '#import "%s"\n' "$p" >"$d/import.cu"
	printf '#if __has_include("%s")\n#error present\n#endif\n__global__ void k() {}\n' "$p" >"$d/hasinclude.cu"
	printf '__global__ void k() { __asm__ volatile(".incbin \\"%s\\""); }\n' "$p" >"$d/incbin.cu"
	printf 'static const char s[] = {\n#embed "%s"\n};\n__global__ void k(char *o) { o[0] = s[0]; }\n' "$p" \
		>"$d/embed.cu"
	printf '#pragma GCC dependency "%s"\n__global__ void k() {}\n' "$p" >"$d/pragma.cu"
	printf '#version 450\n#extension GL_GOOGLE_include_directive : require\n#include "%s"\nvoid main() {}\n' \
		"$p" >"$d/glsl.comp"
	chmod 0755 "$d" && chmod 0644 "$d"/*
}
spell tmp "$SECRET"
spell etc "$ETC_SECRET"
WHERE="tmp etc"
if [ "$ROOTW" -eq 1 ]; then
	WHERE=tmp
	echo "# skip read-etc-*: the workers run as root here, so a 0600 root file under /etc is theirs to read (needs the worker-user wall, helper iso)"
fi
read_attacks() {
for where in $WHERE; do
	for f in abs dotdot digraph comment splice formfeed macro stringize import hasinclude incbin embed pragma; do
		for c in hiprtc hipcc nvrtc nvcc; do
			case $c in hip*) b=hip t=gfx90a ;; *) b=cuda t=sm_90 ;; esac
			case $c.$f in nvrtc.incbin | nvcc.incbin) continue ;; esac # PTX has no .incbin
			attack "$where-$f-$c" $c $b $t "$A/$where/$f.cu" &
			pids="$pids $!"
		done
		waitall
	done
	attack "$where-glsl-shaderc" shaderc vulkan vulkan1.3 "$A/$where/glsl.comp"
done
}
read_attacks &
ATTACKS=$!
# ---- 3. the victim compiles while the attacker attacks ----
mkdir -p "$U/v" && chmod 0777 "$U/v"
for c in nvcc hipcc; do for v in 1 2; do
	sleep 1
	as_user "$VIC" "$KJITC" get --source "$A/victim.$([ $c = hipcc ] && echo hip || echo cu)" \
		--backend "$([ $c = hipcc ] && echo hip || echo cuda)" --target "$([ $c = hipcc ] && echo gfx90a || echo sm_90)" \
		--compiler $c "-DVICTIM_V=$v" -o "$U/v/vic-$c-$v.out" >"$U/v/vic-$c-$v.log" 2>&1
	check "victim-$c-$v-identical-to-reference" cmp -s "$U/v/vic-$c-$v.out" "$T/ref/ref-$c-$v.out"
done; done
wait $ATTACKS
# ---- 5. the hit table: the attacker maps nothing of the victim's ----
as_user "$VIC" "$KJITC" get --source "$A/victim.cu" --backend cuda --target sm_90 --compiler nvrtc -DVICTIM_V=1 \
	-o "$U/v/vic-nvrtc.out" >/dev/null 2>&1
as_user "$VIC" "$KJITC" get --source "$A/victim.cu" --backend cuda --target sm_90 --compiler nvrtc -DVICTIM_V=1 \
	-o "$U/v/vic-nvrtc.out" >/dev/null 2>&1
as_user "$ATK" "$AT" attach-scan "$VM" >"$U/scan.out" 2>&1
check "hittab-system-attacker-finds-nothing" sh -c "! grep -q FOUND '$U/scan.out' && grep -q 'mapped' '$U/scan.out'"
check "hittab-system-per-uid-logged" grep -q "shared hit table on, one per uid" "$T/kjitd.log"
for where in $WHERE; do
	for f in abs dotdot digraph comment splice formfeed macro stringize import hasinclude incbin embed pragma glsl; do
		for c in hiprtc hipcc nvrtc nvcc shaderc; do
			name="$where-$f-$c"
			[ -f "$U/$name.rc" ] || continue
			if ! leaks "$U/$name.log" "$U/$name.out"; then
				ok "read-$name"
			elif [ "$where" = etc ] && [ "$ROOTW" -eq 1 ]; then
				echo "# skip read-$name: LEAKED, workers run as root here (needs iso's worker user)"
			else
				not_ok "read-$name" "the secret leaked: $(head -c 300 "$U/$name.log")"
			fi
		done
	done
done
if leaks "$T/kjitd.log" && [ "$ROOTW" -eq 1 ]; then
	echo "# skip read-nothing-in-daemon-log: LEAKED (a compile error quoting the /etc secret), workers run as root"
elif leaks "$T/kjitd.log"; then
	not_ok "read-nothing-in-daemon-log" "the secret is in kjitd's log"
else
	ok "read-nothing-in-daemon-log"
fi
if grep -rqsa "$MARK" "$KJIT_CACHE_DIR"; then
	if [ "$ROOTW" -eq 1 ]; then
		echo "# skip read-nothing-in-cache: LEAKED (an .incbin of the /etc secret), workers run as root"
	else
		not_ok "read-nothing-in-cache" "an object in the cache holds the secret"
	fi
else
	ok "read-nothing-in-cache"
fi

# ---- 4. background processes ----
tag="kjbg$$"
for c in nvcc hipcc; do
	b=cuda t=sm_90 s=inj.cu
	[ $c = hipcc ] && b=hip t=gfx90a s=inj.hip
	for v in "\$(setsid sh -c 'exec -a $tag sleep 300' >/dev/null 2>&1 &)1" \
		"\$( (sh -c 'exec -a $tag sleep 300' &) )1"; do
		as_user "$ATK" "$KJITC" get --source "$A/$s" --backend $b --target $t --compiler $c "-DX=$v" \
			-o "$U/bg.out" >/dev/null 2>&1
	done
done
sleep 0.5
check "background-none-survive" sh -c "! pgrep -f '^$tag' >/dev/null"
for p in $(pgrep -f "^$tag"); do kill "$p"; done # by id; the tag holds this shell's pid

stop_daemon
# A per-user daemon whose socket admits a group, even with --shared-hit-table.
start_daemon --allow-gid "$GID" --shared-hit-table --hip-compiler test ||
	{ not_ok start "kjitd --allow-gid did not start"; exit 1; }
open_socket
# The test family's "bg": a job that double-forks a `sleep` into a session
# of its own, with a duration no other process here has.
BG_S=$((86400 + $$ % 10000))
printf '// %s\n#pragma kjit_test bg %s\n' "$$" "$BG_S" >"$A/bg.hip" && chmod 0644 "$A/bg.hip"
as_user "$ATK" "$KJITC" get --source "$A/bg.hip" --backend hip --target gfx90a -o "$U/bg2.out" >"$U/bg2.log" 2>&1
sleep 0.5
if grep -q "^bg: sleep $BG_S started" "$U/bg2.log"; then
	check "background-setsid-double-fork-gone" sh -c "! pgrep -f '^sleep $BG_S\$' >/dev/null"
else
	echo "# skip background-setsid-double-fork-gone: this build's test family has no 'bg' ($(head -c 200 "$U/bg2.log"))"
fi
for p in $(pgrep -f "^sleep $BG_S\$"); do kill "$p"; done # by id: the duration is ours
as_user "$VIC" "$KJITC" get --source "$A/victim.cu" --backend cuda --target sm_90 --compiler nvrtc -DVICTIM_V=1 \
	-o "$U/v/vic-nvrtc2.out" >/dev/null 2>&1
as_user "$VIC" "$KJITC" get --source "$A/victim.cu" --backend cuda --target sm_90 --compiler nvrtc -DVICTIM_V=1 \
	-o "$U/v/vic-nvrtc2.out" >/dev/null 2>&1
as_user "$ATK" "$AT" attach-scan "$VM" >"$U/scan2.out" 2>&1
check "hittab-allow-gid-attacker-finds-nothing" sh -c "! grep -q FOUND '$U/scan2.out' && grep -q 'mapped' '$U/scan2.out'"
stop_daemon
echo "# $(date +%T) attacks done" >&2
exit_code=0
finish || exit_code=1
exit $exit_code
