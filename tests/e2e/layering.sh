#!/bin/sh
# layering.sh: private structs stay private (issue 25).  A flight and its
# waiters belong to the flight module: `struct kj__flight {` and
# `struct kj__waiter {` are defined in daemon/flight-int.h and nowhere
# else, and only daemon/flight*.c include that header, so every other file
# holds a flight as an opaque pointer and the compiler refuses any field
# use outside the module.  A definition or an include that leaks fails
# here, naming the file.  The fleet tier is an interface (issue 33): no
# daemon file names Redis, the backends' table and private headers are
# remote/'s own (remote/backend.h, remote/redis/redis-int.h included only
# inside remote/ and by the tier's unit test).  Reads the source tree only
# (no daemon).
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
	check "struct $s is defined only in daemon/flight-int.h (defined in: ${where:-nowhere})" \
		[ "$where" = "daemon/flight-int.h" ]
done

# Who includes the private header: daemon/flight*.c only.
inc=$(xargs grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]*/)?flight-int\.h[">]' <"$T/src" |
	tr '\n' ' ' | sed 's/ $//')
bad=""
for f in $inc; do
	case "$f" in
	daemon/flight*.c) ;;
	*) bad="$bad $f" ;;
	esac
done
check "daemon/flight-int.h is included by daemon/flight*.c only (also by:${bad:- none})" [ -z "$bad" ]
check "daemon/flight.c includes daemon/flight-int.h (included by: ${inc:-none})" \
	sh -c 'case " $1 " in *" daemon/flight.c "*) exit 0 ;; esac; exit 1' sh "$inc"
# daemon.h declares the struct for everyone else, never its fields.
check "daemon/daemon.h declares struct kj__flight only as an opaque type" \
	sh -c 'grep -q "^struct kj__flight;" daemon/daemon.h && ! grep -qE "struct kj__(flight|waiter)[[:space:]]*\{" daemon/daemon.h'

# The fleet tier: the daemon sees remote/remote.h only and never Redis.
named=$(grep -lis redis daemon/*.c daemon/*.h daemon/*/*.c daemon/*/*.h 2>/dev/null | tr '\n' ' ' | sed 's/ $//')
check "no daemon file names Redis (named in: ${named:-none})" [ -z "$named" ]
inc=$(xargs grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*/)?(backend|redis-int)\.h"' <"$T/src" |
	grep -vE '^(remote/|tests/test-remote\.c$)' | tr '\n' ' ' | sed 's/ $//')
check "remote/backend.h and redis-int.h are included inside remote/ only (also by: ${inc:-none})" [ -z "$inc" ]
exit 0
