#!/bin/sh
# layering.sh: private structs stay private (issue 25).  A flight and its
# waiters belong to the miss (issue 33): `struct kj__flight {` and
# `struct kj__waiter {` are defined in daemon/miss/miss-int.h and nowhere
# else, and only daemon/miss/miss*.c (and the machine's unit test,
# tests/test-miss.c) include that header, so every other file holds a
# flight as an opaque pointer and the compiler refuses any field use
# outside the miss.  A definition or an include that leaks fails
# here, naming the file.  The fleet tier is an interface (issue 33): no
# daemon file names Redis, the backends' table and private headers are
# remote/'s own (remote/backend.h, remote/redis/redis-int.h included only
# inside remote/ and by the tier's unit test).  struct kj__daemon's rooms
# (issue 33): the top, net, miss, admin and work rooms' parts are structs
# private to their rooms, and the struct holds nothing else but its core.
# Reads the source tree only (no daemon).
. "$(dirname "$0")/lib.sh"

cd "$TOP" || exit 1
# Every C source and header of the tree, build outputs left out.
find . \( -path './build*' -o -path './.git' \) -prune -o \( -name '*.c' -o -name '*.h' \) -type f -print |
	sed 's|^\./||' | sort >"$T/src"
check "the tree has its C sources ($(wc -l <"$T/src") files)" [ "$(wc -l <"$T/src")" -gt 100 ]

# defined_in STRUCT: the files that define struct STRUCT (its opening brace).
defined_in() {
	xargs grep -lE "^[[:space:]]*struct $1[[:space:]]*\{" <"$T/src" | tr '\n' ' ' | sed 's/ $//'
}
for s in kj__flight kj__waiter; do
	where=$(defined_in "$s")
	check "struct $s is defined only in daemon/miss/miss-int.h (defined in: ${where:-nowhere})" \
		[ "$where" = "daemon/miss/miss-int.h" ]
done

# Who includes the private header: daemon/miss/miss*.c and tests/test-miss.c only.
inc=$(xargs grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]*/)?miss-int\.h[">]' <"$T/src" |
	tr '\n' ' ' | sed 's/ $//')
bad=""
for f in $inc; do
	case "$f" in
	daemon/miss/miss*.c | tests/test-miss.c) ;;
	*) bad="$bad $f" ;;
	esac
done
check "daemon/miss/miss-int.h is included by daemon/miss/miss*.c and tests/test-miss.c only (also by:${bad:- none})" [ -z "$bad" ]
check "daemon/miss/miss.c includes daemon/miss/miss-int.h (included by: ${inc:-none})" \
	sh -c 'case " $1 " in *" daemon/miss/miss.c "*) exit 0 ;; esac; exit 1' sh "$inc"
# The miss is one machine: the five files it replaced stay gone.
old=$(ls daemon/miss/flight*.c daemon/miss/flight-int.h daemon/miss/fleet.c 2>/dev/null | tr '\n' ' ')
check "the miss is daemon/miss/miss.c and miss-help.c (left over: ${old:-none})" [ -z "$old" ]
# daemon.h declares the struct for everyone else, never its fields.
check "daemon/daemon.h declares struct kj__flight only as an opaque type" \
	sh -c 'grep -q "^struct kj__flight;" daemon/daemon.h && ! grep -qE "struct kj__(flight|waiter)[[:space:]]*\{" daemon/daemon.h'

# The fleet tier: the daemon sees remote/remote.h only and never Redis.
named=$(grep -lis redis daemon/*.c daemon/*.h daemon/*/*.c daemon/*/*.h 2>/dev/null | tr '\n' ' ' | sed 's/ $//')
check "no daemon file names Redis (named in: ${named:-none})" [ -z "$named" ]
inc=$(xargs grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*/)?(backend|redis-int)\.h"' <"$T/src" |
	grep -vE '^(remote/|tests/test-remote\.c$)' | tr '\n' ' ' | sed 's/ $//')
check "remote/backend.h and redis-int.h are included inside remote/ only (also by: ${inc:-none})" [ -z "$inc" ]
# includers HEADER-REGEX: the files that include a header whose name matches.
includers() {
	xargs grep -lE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]([^\">]*/)?($1)[\">]" <"$T/src" |
		tr '\n' ' ' | sed 's/ $//'
}
# outside PREFIX FILES...: those of FILES not under PREFIX (a folder or file
# glob), tests/ and bench/ left out (a test may open any layer).
outside() {
	p=$1
	shift
	for f in "$@"; do
		case "$f" in
		$p | tests/* | bench/*) ;;
		*) printf ' %s' "$f" ;;
		esac
	done
}

# docs/design.md's layer rules for remote/ and dropin/ (issue 33).
# remote/: daemon/ reaches it through remote.h alone; remote-int.h stays in
# remote/; remote/ itself includes common/ and its own headers only.
bad=$(outside 'daemon/*' $(includers 'remote\.h') | sed 's| remote/[^ ]*||g')
check "remote/remote.h is included by daemon/ and remote/ only (also by:${bad:- none})" [ -z "$bad" ]
bad=$(outside 'remote/*' $(includers 'remote-int\.h'))
check "remote/remote-int.h is included inside remote/ only (also by:${bad:- none})" [ -z "$bad" ]
own=$( (cd common && ls ./*.h) | sed 's|^\./||'; (cd remote && ls ./*.h) | sed 's|^\./||')
bad=""
for h in $(grep -hoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' remote/*.c remote/*.h | sed 's/.*"\(.*\)"/\1/' | sort -u); do
	printf '%s\n' "$own" | grep -qxF "$h" || bad="$bad $h"
done
check "remote/ includes common/ and remote/ headers only (also:${bad:- none})" [ -z "$bad" ]
# dropin/: its private headers are included inside dropin/ only.
bad=$(outside 'dropin/*' $(includers 'dropin\.h|nvrtc-int\.h|hiprtc-int\.h'))
check "dropin/'s headers are included inside dropin/ only (also by:${bad:- none})" [ -z "$bad" ]
# compilers/compint.h is compilers/'s own (issue 33): what the daemon needs
# of compilers/ (the entry points of an object) is in compilers/compiler.h.
bad=$(outside 'compilers/*' $(includers 'compint\.h'))
check "compilers/compint.h is included inside compilers/ only (also by:${bad:- none})" [ -z "$bad" ]
# ... and nothing outside it keeps a copy of what it needs from there: the
# name expressions' option is common/lowered.h's alone.
bad=$(outside 'common/lowered.h' $(xargs grep -lE '#[[:space:]]*define[[:space:]]+[A-Z_]+[[:space:]]+"--name-expression="' <"$T/src"))
check "the name-expression option is defined in common/lowered.h only (also in:${bad:- none})" [ -z "$bad" ]
# The families' skeletons (issue 33, docs/compilers.md): hiprtc and NVRTC
# make and compile programs only through compilers/rtc.c, hipcc and nvcc
# run their compiler only through compilers/spawn-family.c.
bad=$(outside 'compilers/rtc.c' $(grep -lE 'api(\.|->)(create|compile)\(' compilers/*.c))
check "runtime compilers compile through compilers/rtc.c only (also in:${bad:- none})" [ -z "$bad" ]
bad=$(outside 'compilers/spawn*.c' $(grep -l 'kj__run_capture(' compilers/*.c))
check "spawned compilers run through compilers/spawn-family.c only (also in:${bad:- none})" [ -z "$bad" ]
# python/kjit: libkjit through kjit.h's functions only, never a kj__ symbol
# but kj__get_into and kj__get_into_kept (client/getinto.h, exported for the C extension).
bad=$(grep -oE 'kj__[a-z_]+' python/kjit/*.py | grep -vE ':kj__get_into(_kept)?$' | cut -d: -f1 | sort -u | tr '\n' ' ')
check "python/kjit names no internal kj__ symbol but kj__get_into and kj__get_into_kept (named in: ${bad:-none})" [ -z "$bad" ]
# daemon/'s rooms (issue 33): each room's private headers stay in it, and no
# folder of the tree holds more than 20 .c files.
for pair in net:conn-int miss:miss-int admin:bundle-int; do
	room=${pair%%:*} h=${pair#*:}
	bad=$(outside "daemon/$room/*" $(includers "$h\\.h"))
	check "daemon/$room/$h.h is included inside daemon/$room/ only (also by:${bad:- none})" [ -z "$bad" ]
done
# struct kj__daemon's rooms (issue 33, docs/house-plan.md): a room's part
# of the context is a struct defined in its private header alone (the work
# room's in daemon/offwork.c, a room of one file; the miss room's in
# daemon/miss/missroom-int.h; the top room is daemon/'s
# own files: main.c, log.c, config.c, detect-run.c), daemon.h holds only a
# pointer to it, the header is included inside the room (and by the room's
# unit test), and no file outside the room names a field through the
# pointer (d->net->..., d.admin->...).  A field moved back into daemon.h,
# a header included elsewhere or a reach across rooms fails here.
for spec in 'kj__toproom:top:daemon/daemon-int.h:daemon/*.c:-' \
	'kj__netroom:net:daemon/net/net-int.h:daemon/net/*:tests/test-quota.c' \
	'kj__missroom:miss:daemon/miss/missroom-int.h:daemon/miss/*:-' \
	'kj__adminroom:admin:daemon/admin/admin-int.h:daemon/admin/*:-' \
	'kj__offwork_set:work:daemon/offwork.c:daemon/offwork.c:tests/test-offwork.c'; do
	IFS=: read -r s ptr hdr room test <<EOF_SPEC
$spec
EOF_SPEC
	where=$(defined_in "$s")
	check "struct $s is defined only in $hdr (defined in: ${where:-nowhere})" [ "$where" = "$hdr" ]
	check "daemon/daemon.h holds struct $s as a pointer (d->$ptr)" \
		grep -qE "^[[:space:]]*struct $s \*$ptr;" daemon/daemon.h
	bad=""
	case "$hdr" in
	*.h)
		for f in $(includers "$(basename "$hdr" .h)\.h"); do
			case "$f" in $room | "$test") ;; *) bad="$bad $f" ;; esac
		done
		check "$hdr is included inside $room (and by its test: ${test#-}) only (also by:${bad:- none})" [ -z "$bad" ]
		;;
	esac
	bad=""
	for f in $(xargs grep -lE "(->|\.)$ptr->[a-z_]" <"$T/src"); do
		case "$f" in $room | "$test") ;; *) bad="$bad $f" ;; esac
	done
	check "no file outside $room names d->$ptr's fields (named in:${bad:- none})" [ -z "$bad" ]
done
# What is left in struct kj__daemon (issue 33): the core every room reads
# and the five rooms' pointers, nothing else; a field added there instead
# of in its room's struct fails here, named.
members=$(sed -n '/^struct kj__daemon {/,/^};/p' daemon/daemon.h | grep -vE '^[[:space:]]*\*' | sed 's|/\*.*||' |
	grep ';' | sed -E 's/\[.*//; s/;.*//' | awk 'NF > 1 { print $NF }' | sed 's/^\**//' | sort | tr '\n' ' ' | sed 's/ $//')
core='admin cache cfg last_active_us lat_hist loop miss net started stats stopping top work'
check "struct kj__daemon holds the core and the five rooms' pointers only (holds: ${members:-nothing})" [ "$members" = "$core" ]
# One door to libuv's thread pool (issue 33): daemon/offwork.c alone queues
# work (uv_queue_work) or holds a uv_work_t; offhash.c, publish.c and
# offloop.c hand it their steps.
bad=$(xargs grep -lE 'uv_queue_work|uv_work_t' <"$T/src" | grep -vxE 'daemon/offwork\.[ch]' | tr '\n' ' ' | sed 's/ $//')
check "only daemon/offwork.c puts work on libuv's pool (also: ${bad:-none})" [ -z "$bad" ]
check "daemon/offwork.c calls uv_queue_work" grep -q 'uv_queue_work(' daemon/offwork.c
# ... and, like libuv under it, knows no daemon state: it includes its own
# header, common/kj_types.h and system headers only (docs/design.md's walk
# passes it as it passes libuv).
inc=$(grep -hE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' daemon/offwork.c daemon/offwork.h |
	sed -E 's/.*"(.*)".*/\1/' | grep -vxE 'offwork\.h|kj_types\.h' | tr '\n' ' ' | sed 's/ $//')
check "daemon/offwork.[ch] include no daemon header (include: ${inc:-only offwork.h, kj_types.h})" [ -z "$inc" ]
# OpenSSL's EVP is the fleet tier's alone (its HMAC and GCM): its provider
# set-up costs a process ~4 ms the first time it fetches anything (about
# half of a `kjit get` hit), so libkjit, the drop-ins and the key hash
# SHA-256 through common/sha.c's SHA256_* calls (issue 35).
bad=$(grep -v -e '^tests/' -e '^bench/' -e '^remote/' "$T/src" | xargs grep -lE 'EVP_[A-Za-z_0-9]+[[:space:]]*\(' |
	tr '\n' ' ' | sed 's/ $//')
check "only remote/ calls OpenSSL's EVP functions (also: ${bad:-none})" [ -z "$bad" ]
big=$(sed -n 's|/[^/]*\.c$||p' "$T/src" | grep -v '^tests' | sort | uniq -c | awk '$1 > 20 { printf " %s (%d)", $2, $1 }')
check "no product folder holds more than 20 .c files (over:${big:- none})" [ -z "$big" ]
exit 0
