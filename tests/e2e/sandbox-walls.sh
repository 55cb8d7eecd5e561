#!/bin/sh
# The walls around a compile (docs/reliability.md, "What a compile can
# touch"), asserted from inside a compile: the test compiler family's
# "report" directive (compilers/testcomp.c) says, from within a job, its
# uid, namespaces, NoNewPrivs/Seccomp, what sockets and ptrace do, what /dev
# holds and which private paths open; "bg" leaves a setsid'd `sleep` and a
# file behind.  Against a root daemon (as CI runs) and a daemon of a
# temporary ordinary user.  Then the assembler's .incbin of a 0600 root file
# and of /etc/shadow through hiprtc, hipcc and nvcc gets an error whose log
# and object hold none of the file's bytes, and a real compile of every
# family still works inside the walls.
. "$(dirname "$0")/lib.sh"

SECRET=/root/kjit-secret-$$
MARK=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
UNAME=""
cleanup_walls() {
	rm -f "$SECRET"
	[ -n "$UNAME" ] && userdel "$UNAME" 2>/dev/null
	UNAME=""
}
trap 'cleanup_walls; cleanup' EXIT INT TERM
SLEEP_S=$((4200000 + $$ % 100000)) # a `sleep` argument no one else uses

if [ "$(id -u)" -ne 0 ]; then
	echo "# skip sandbox-walls: needs root (a root daemon, a temporary user, a root-only file)"
	exit 0
fi
WUID=$(id -u kjit-worker 2>/dev/null) || {
	not_ok "worker user" "no kjit-worker user: run scripts/deps.sh"
	exit 1
}
ns_of() { stat -L -c %i "/proc/self/ns/$1"; }
field() { grep -F "$1: " "$2" | head -n 1 | sed 's/^[^:]*: *//'; }
N=0
SAN=0
nm "$TOP/$BUILD/kjitd" 2>/dev/null | grep -q __asan_init && SAN=1

# report FILE [PATHS]: a report from inside a compile into FILE.
report() {
	N=$((N + 1)) # a different source each time: a failed compile is cached for a while
	printf '// %s\n#pragma kjit_test report %s\n' "$N" "${2:-}" >"$T/report.src"
	"$KJIT" get --source "$T/report.src" --backend hip --target gfx90a >"$1" 2>&1
	sed -i 's/\t/ /' "$1"
}

# walls WHO FILE UID NEWUSER: the checks every namespaced worker must pass.
walls() {
	who=$1 f=$2 uid=$3
	for ns in mnt pid net ipc uts; do
		check "$who: a new $ns namespace" sh -c "[ -n '$(field ns-$ns "$f")' ] && [ '$(field ns-$ns "$f")' != '$(ns_of $ns)' ]"
	done
	if [ "$4" = 1 ]; then
		check "$who: a new user namespace" [ "$(field ns-user "$f")" != "$(ns_of user)" ]
	fi
	dev=$(field dev "$f" | tr ' ' '\n' | sort | tr '\n' ' ')
	check "$who: /dev holds null, urandom and zero only ($dev)" [ "$dev" = "null urandom zero " ]
	inner_walls "$@"
}

# inner_walls WHO FILE UID: what holds with or without namespaces.
inner_walls() {
	who=$1 f=$2 uid=$3
	check "$who: a compile runs as uid $uid ($(field uid "$f"))" [ "$(field uid "$f")" = "$uid" ]
	check "$who: never as root" [ "$(field uid "$f")" != 0 ]
	check "$who: NoNewPrivs" [ "$(field NoNewPrivs "$f")" = 1 ]
	check "$who: a seccomp filter" [ "$(field Seccomp "$f")" = 2 ]
	for s in unix-stream unix-dgram inet-stream inet-dgram inet6-stream inet6-dgram; do
		check "$who: socket $s refused ($(field socket-$s "$f"))" [ "$(field socket-$s "$f")" = "Operation not permitted" ]
	done
	check "$who: socketpair refused" [ "$(field socketpair "$f")" = "Operation not permitted" ]
	if [ "$SAN" = 0 ]; then
		check "$who: ptrace refused" [ "$(field ptrace "$f")" = "Operation not permitted" ]
	fi
	for p in /etc/shadow /root /sys /home /etc/passwd "$KJIT_CACHE_DIR" "$KJIT_CACHE_DIR/tmp" "$T"; do
		r=$(field "read $p" "$f")
		check "$who: $p out of reach ($r)" sh -c "[ -n '$r' ] && [ '$r' != opened ]"
	done
}

# bg_leaves WHO: a job's setsid'd grandchild and its files die with the job.
bg_leaves() {
	N=$((N + 1))
	printf '// %s\n#pragma kjit_test bg %s\n' "$N" "$SLEEP_S" >"$T/bg.src"
	"$KJIT" get --source "$T/bg.src" --backend hip --target gfx90a >"$T/bg.out" 2>&1
	check "$1: the job started a background sleep" grep -q "^bg: sleep $SLEEP_S started" "$T/bg.out"
	left=$(pgrep -f "^sleep $SLEEP_S\$" | tr '\n' ' ')
	check "$1: no process of the job outlives it ($left)" [ -z "$left" ]
	report "$T/after-bg"
	beside=$(field beside "$T/after-bg")
	check "$1: the next job finds nothing an earlier one left beside it ($beside)" \
		sh -c "echo '$beside' | grep -qv left-by-a-job"
	inside=$(field inside "$T/after-bg")
	check "$1: the next job's directory holds nothing an earlier one left in it ($inside)" \
		[ "$inside" = "(nothing)" ]
	j1=$(field tmpdir "$T/after-bg")
	report "$T/after-bg2"
	# one fixed path for every job (reproducible objects, issue 30), made fresh
	check "$1: every job compiles at one fixed path ($j1, then $(field tmpdir "$T/after-bg2"))" \
		sh -c "[ '$j1' = '$(field tmpdir "$T/after-bg2")' ] && [ '${j1##*/}' = job ]"
}

# ---- a root daemon, as CI runs it ----
start_daemon --hip-compiler test --jobs 1 || { not_ok start "kjitd did not start"; exit 1; }
report "$T/root.rep" "$KJIT_CACHE_DIR $KJIT_CACHE_DIR/tmp $T"
walls "root daemon" "$T/root.rep" "$WUID" 0
bg_leaves "root daemon"
check "root daemon: the workers' walls are logged" grep -q "namespaces mount pid net ipc uts (made as root)" "$T/kjitd.log"
"$KJIT" targets --json | tr -d '\n ' >"$T/targets.json"
check "kjit targets --json shows the test family's readable trees" grep -q '"family":"test","reads":\["/usr"' "$T/targets.json"
stop_daemon

# --worker-user names another user.
start_daemon --hip-compiler test --jobs 1 --worker-user nobody || { not_ok start "kjitd did not start"; exit 1; }
report "$T/nobody.rep"
check "--worker-user nobody: a compile runs as nobody ($(field uid "$T/nobody.rep"))" \
	[ "$(field uid "$T/nobody.rep")" = "$(id -u nobody)" ]
stop_daemon

# A root daemon refuses to start without its worker user, saying why.
out=$("$KJITD" --foreground --socket "$T/x.sock" --cache-dir "$T/xc" --worker-user "nosuch$$" 2>&1)
check "a root daemon without its worker user refuses to start ($out)" sh -c \
	"echo '$out' | grep -q 'nosuch$$' && [ \$(echo '$out' | wc -l) -eq 1 ]"

# ---- a daemon of an ordinary user: namespaces, then Landlock alone ----
# user_daemon WHO [ENV...]: that user's kjitd, the checks, stopped again.
user_daemon() {
	who=$1
	shift
	rm -rf "$U/cache" "$U/log" && mkdir -p "$U/log" && chown "$UNAME" "$U/log"
	setpriv --reuid="$UID2" --regid="$(id -g "$UNAME")" --clear-groups env HOME=/ "$@" "$U/kjitd" --foreground \
		--socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --log "$U/log/kjitd.log" --hip-compiler test --jobs 1 &
	DAEMON_PID=$!
	i=0
	until "$KJIT" ping >/dev/null 2>&1 || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
	report "$T/u.rep" "$KJIT_CACHE_DIR $KJIT_CACHE_DIR/tmp $T"
	if grep -q "namespaces user mount" "$U/log/kjitd.log"; then
		walls "$who" "$T/u.rep" "$UID2" 1
	elif grep -q "no user namespaces here.*Landlock walls only" "$U/log/kjitd.log"; then
		[ $# -gt 0 ] || echo "# skip $who: namespace checks: no unprivileged user namespaces on this kernel"
		inner_walls "$who" "$T/u.rep" "$UID2"
	else
		not_ok "$who" "no worker walls logged: $(tail -n 3 "$U/log/kjitd.log" 2>/dev/null)"
	fi
	bg_leaves "$who"
	"$KJIT" stop >/dev/null 2>&1
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=""
}
UNAME="kjw$$"
if useradd -M -N -g nogroup -s /bin/sh "$UNAME" 2>/dev/null; then
	UID2=$(id -u "$UNAME")
	U="$T/u"
	mkdir -p "$U/sock" && chown -R "$UNAME" "$U" && chmod 0755 "$T" "$U"
	cp "$KJITD" "$U/kjitd" && cp "$KJIT" "$U/kjit" && chmod 0755 "$U/kjitd" "$U/kjit"
	# The user's daemon is talked to as the user: a client refuses a listener of
	# another uid, root's client too (docs/protocol.md, "Whom a client talks to").
	printf '#!/bin/sh\nexec setpriv --reuid=%s --regid=%s --clear-groups "%s" "$@"\n' "$UID2" \
		"$(id -g "$UNAME")" "$U/kjit" >"$U/kjit-as-user" && chmod 0755 "$U/kjit-as-user"
	KJIT_SAVE=$KJIT
	KJIT="$U/kjit-as-user"
	export KJIT_SOCKET="$U/sock/kjitd.sock" KJIT_CACHE_DIR="$U/cache"
	user_daemon "user daemon"
	user_daemon "user daemon, no namespaces" KJIT_WORKER_NO_NAMESPACES=1
	check "user daemon, no namespaces: says it has Landlock walls only" grep -q "Landlock walls only" "$U/log/kjitd.log"
	KJIT=$KJIT_SAVE
	export KJIT_SOCKET="$T/sock/kjitd.sock" KJIT_CACHE_DIR="$T/cache"
else
	not_ok "temporary user" "useradd $UNAME failed"
fi

# ---- reading a root-only file through the assembler ----
head -c 4096 /dev/urandom >"$SECRET"
printf '%s\n' "$MARK" >>"$SECRET"
chmod 0600 "$SECRET"
SHADOW_LINE=$(head -n 1 /etc/shadow)
printf '%s\n%s\n' "$MARK" "$SHADOW_LINE" >"$T/secret.pat"
# clean FILE...: none holds the secret's marker or shadow's first line
clean() { for x in "$@"; do [ ! -e "$x" ] || ! grep -a -q -F -f "$T/secret.pat" "$x" || return 1; done; }
start_daemon || { not_ok start "kjitd did not start"; exit 1; }
incbin_hip() {
	cat >"$T/inc.hip" <<EOF
#include <hip/hip_runtime.h>
extern "C" __global__ void leak(int *x)
{
	asm volatile(".pushsection .rodata\\n.incbin \"$1\"\\n.popsection");
	x[0] = 1;
}
EOF
}
# The control: a file the walls let compilers read does land in the object,
# so a refusal below is the walls' doing, not the assembler's.
incbin_hip /usr/include/stdio.h
for c in hiprtc hipcc; do
	"$KJIT" get --source "$T/inc.hip" --backend hip --target gfx90a --compiler "$c" -o "$T/inc.o" >/dev/null 2>&1
	check "$c .incbin of a readable header embeds it (the attack works)" grep -a -q 'Free Software' "$T/inc.o"
done
for f in "$SECRET" /etc/shadow; do
	incbin_hip "$f"
	for c in hiprtc hipcc; do
		rm -f "$T/inc.o"
		"$KJIT" get --source "$T/inc.hip" --backend hip --target gfx90a --compiler "$c" -o "$T/inc.o" >"$T/inc.log" 2>&1
		rc=$?
		check "$c .incbin $f: refused (exit $rc)" [ "$rc" -ne 0 ]
		check "$c .incbin $f: none of its bytes in the log or object" clean "$T/inc.log" "$T/inc.o"
	done
	cat >"$T/inc.cu" <<EOF
asm(".section .rodata\n.incbin \"$f\"\n.text");
extern "C" __global__ void leak(int *x) { x[0] = 1; }
EOF
	rm -f "$T/inc.o"
	"$KJIT" get --source "$T/inc.cu" --backend cuda --target sm_90 --compiler nvcc -o "$T/inc.o" >"$T/inc.log" 2>&1
	check "nvcc host .incbin $f: none of its bytes in the log or object" clean "$T/inc.log" "$T/inc.o"
done
check "none of the files' bytes in kjitd's log" clean "$T/kjitd.log"

# ---- every family still compiles inside the walls ----
cat >"$T/ok.hip" <<'EOF'
#include <hip/hip_runtime.h>
extern "C" __global__ void ok(float *x) { x[threadIdx.x] *= 2.0f; }
EOF
cat >"$T/ok.cu" <<'EOF'
extern "C" __global__ void ok(float *x) { x[threadIdx.x] *= 2.0f; }
EOF
for c in hiprtc hipcc; do
	out=$("$KJIT" get --source "$T/ok.hip" --backend hip --target gfx90a --compiler "$c" -o "$T/ok.$c" 2>&1)
	check "$c compiles gfx90a in the walls ($out)" [ -s "$T/ok.$c" ]
done
for c in nvrtc nvcc; do
	out=$("$KJIT" get --source "$T/ok.cu" --backend cuda --target sm_90 --compiler "$c" -o "$T/ok.$c" 2>&1)
	check "$c compiles sm_90 in the walls ($out)" [ -s "$T/ok.$c" ]
done
out=$("$KJIT" warm --backend vulkan --target vulkan1.2 -j 1 2>&1 | tail -n 1)
check "shaderc compiles the Vulkan kernels in the walls ($out)" sh -c "echo '$out' | grep -q ' 0 failed'"
check "no worker ran unwalled" sh -c "! grep -q 'Landlock walls only\|cannot create the worker' '$T/kjitd.log'"
stop_daemon

# ---- a library folder under /tmp on kjitd's LD_LIBRARY_PATH ----
# Bound into the worker inside its private /tmp (it used to be bound first
# and then to stand in the way of that tmpfs: "tmpfs at /tmp: File exists",
# no compile at all, for a tree cloned under /tmp).
LIBT=$(mktemp -d /tmp/kjit-walls-lib.XXXXXX)
echo "a library folder" >"$LIBT/README"
LD_LIBRARY_PATH="$LIBT" start_daemon || not_ok "walls: start with a /tmp folder on LD_LIBRARY_PATH" "no kjitd"
for c in nvrtc hiprtc; do
	b=$([ $c = nvrtc ] && echo cuda || echo hip); t=$([ $c = nvrtc ] && echo sm_90 || echo gfx90a)
	{ cat "$T/ok.$([ $c = nvrtc ] && echo cu || echo hip)"; echo "// $LIBT"; } >"$T/tmplib.$c.src"
	"$KJIT" get --source "$T/tmplib.$c.src" --backend $b --target $t --compiler $c -o "$T/tmplib.$c" \
		>"$T/tmplib.$c.line" 2>&1
	check "$c compiles with $LIBT on kjitd's LD_LIBRARY_PATH ($(head -c 150 "$T/tmplib.$c.line"))" \
		sh -c "[ -s '$T/tmplib.$c' ] && grep -q '^compiled ' '$T/tmplib.$c.line'"
done
stop_daemon
rm -rf "$LIBT"

# ---- a root kjitd under umask 027 (a hardened unit's UMask=0027, a root shell) ----
# The worker's new root is made as root before the drop to the worker user:
# under kjitd's umask its folders were 0750 root and every compile failed.
if [ "$(id -u)" -eq 0 ]; then
	(umask 027 && start_daemon) || not_ok "walls: start under umask 027" "no kjitd"
	[ -n "$DAEMON_PID" ] || DAEMON_PID=$(pgrep -n -f "kjitd --foreground --socket $KJIT_SOCKET" || true)
	for c in nvrtc hiprtc; do
		b=$([ $c = nvrtc ] && echo cuda || echo hip); t=$([ $c = nvrtc ] && echo sm_90 || echo gfx90a)
		"$KJIT" get --source "$T/ok.$([ $c = nvrtc ] && echo cu || echo hip)" --backend $b --target $t --compiler $c \
			--opt -DUMASK_027 -o "$T/umask.$c" >"$T/umask.$c.line" 2>&1
		check "$c compiles under a root kjitd started with umask 027 ($(head -c 150 "$T/umask.$c.line"))" \
			sh -c "[ -s '$T/umask.$c' ] && grep -q '^compiled ' '$T/umask.$c.line'"
	done
	"$KJIT" stop >/dev/null 2>&1
	sleep 0.5
	DAEMON_PID=""
fi
finish
