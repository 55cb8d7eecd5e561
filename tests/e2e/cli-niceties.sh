#!/bin/sh
# cli-niceties.sh: the smaller items of issue 32 item 6.
#   show KEY-PREFIX (16 hex digits as --explain prints; among the caller's
#   entries only: another user's prefix is "no entry"); stats names the
#   socket, the cache folder and a hit rate, and asking does not count as a
#   request; --json prints a JSON error object on failure; `kjit kernels`
#   lists the bundled kernels without compiling; every command's --help
#   says what it does; kjit(1) documents -I/-D/-std/--compiler/--explain;
#   bash completion completes commands and options.
. "$(dirname "$0")/lib.sh"

SRC="$TOP/tests/e2e/data/scale.hip"
start_daemon || { not_ok "start kjitd" "see above"; exit 1; }

# ---- kernels: listed, nothing compiled --------------------------------------
"$KJIT" kernels >"$T/k" 2>&1
n=$(grep -c . "$T/k")
m=$(grep -v '^#' "$TOP/kernels_src/MANIFEST" | grep -c .)
check "kjit kernels lists every bundled kernel ($n lines, MANIFEST $m)" [ "$n" -ge 10 ]
check "kjit kernels: NAME BACKEND lines" grep -q '^rms_norm_f32 \(hip\|cuda\)$' "$T/k"
check "kjit kernels compiled nothing" [ "$(stat_value compiles)" = 0 ]
"$KJIT" kernels --json >"$T/kj" 2>&1
check "kjit kernels --json" grep -q '"kernels":\[{"name":' "$T/kj"

# ---- stats ---------------------------------------------------------------------
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o /dev/null >"$T/g1" 2>&1
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o /dev/null >/dev/null 2>&1
"$KJIT" get --source "$SRC" --backend hip --target gfx90a -o /dev/null >/dev/null 2>&1
"$KJIT" stats >"$T/s" 2>&1
check "stats names the socket" grep -q "^socket  *$KJIT_SOCKET\$" "$T/s"
check "stats names the cache folder" grep -q "^cache  *$KJIT_CACHE_DIR\$" "$T/s"
check "stats: hit rate 66.7% (2 of 3)" grep -q '^hit rate  *66.7% (2 of 3)$' "$T/s"
"$KJIT" stats --json >"$T/sj" 2>&1
check "stats --json: socket, cache_dir, hit_rate" \
	sh -c "grep -q '\"socket\":\"$KJIT_SOCKET\"' '$T/sj' && grep -q '\"cache_dir\":\"$KJIT_CACHE_DIR\"' '$T/sj' && grep -q '\"hit_rate\":0.6667' '$T/sj'"
r1=$(stat_value requests)
"$KJIT" stats >/dev/null 2>&1
"$KJIT" stats >/dev/null 2>&1
r2=$(stat_value requests)
check "stats calls are not counted as requests ($r1 then $r2)" [ "$r1" = "$r2" ]

# ---- show by prefix --------------------------------------------------------------
key=$(awk '{ print $2 }' "$T/g1")
p16=$(echo "$key" | cut -c1-16)
"$KJIT" show "$p16" >"$T/sh" 2>&1
check "show takes the 16-digit prefix --explain prints" grep -q "^key  *$key\$" "$T/sh"
"$KJIT" show "$(echo "$key" | cut -c1-6)" >/dev/null 2>&1
check "show takes a 6-digit prefix" [ $? -eq 0 ]
"$KJIT" show 12345 >"$T/sh2" 2>&1
check "show refuses a 5-digit prefix" grep -q 'unique prefix of 6 or more' "$T/sh2"
zero=0000000000000000
[ "$p16" = "$zero" ] && zero=1111111111111111
"$KJIT" show "$zero" >"$T/sh3" 2>&1
check "show of a prefix matching nothing: no cache entry" grep -q "no cache entry $zero" "$T/sh3"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	OTH="kjcn$$"
	useradd -M -N -g nogroup -s /bin/sh "$OTH" &&
		trap 'userdel "$OTH" 2>/dev/null; cleanup' EXIT INT TERM
	cp "$KJIT" "$T/kjit" && chmod 0755 "$T" "$T/kjit" "$T/sock" && chmod 0666 "$KJIT_SOCKET"
	stop_daemon
	start_daemon --allow-uid "$(id -u "$OTH")" && chmod 0755 "$T/sock" && chmod 0666 "$KJIT_SOCKET"
	setpriv --reuid="$OTH" --regid="$(id -g "$OTH")" --init-groups env KJIT_SOCKET="$KJIT_SOCKET" \
		KJIT_NO_AUTOSTART=1 HOME=/ "$T/kjit" show "$p16" >"$T/sh4" 2>&1
	check "another user's show of my prefix: no entry (it sees only its own)" grep -q "no cache entry $p16" "$T/sh4"
else
	echo "# skip: show as another user needs root and setpriv"
fi

# ---- --json on failure ---------------------------------------------------------------
KJIT_SOCKET="$T/none/k.sock" "$KJIT" stats --json >"$T/je" 2>"$T/je.err"
rc=$?
check "--json failure: exit 3 and one JSON object on stdout ($(head -c 150 "$T/je"))" \
	sh -c "[ $rc -eq 3 ] && grep -q '^{\"error\":\"no kjitd on .*\",\"exit\":3}\$' '$T/je' && [ \$(wc -l <'$T/je') -eq 1 ]"
check "--json failure: the line on stderr too" grep -q '^kjit: no kjitd' "$T/je.err"
"$KJIT" show "$zero" --json >"$T/je2" 2>/dev/null
check "--json failure of show: error object" grep -q "^{\"error\":\"no cache entry $zero" "$T/je2"
"$KJIT" show "$p16" --json >"$T/js" 2>/dev/null
check "--json success prints no error object" sh -c "! grep -q '\"error\"' '$T/js'"

# ---- --help per command ----------------------------------------------------------------
short=""
for c in $("$KJIT" --help | sed -n 's/^  kjit \([a-z]*\).*/\1/p'); do
	"$KJIT" "$c" --help >"$T/h" 2>&1
	[ "$(grep -c . "$T/h")" -ge 3 ] && grep -q "^usage: kjit $c" "$T/h" || short="$short $c"
done
check "every command's --help has its usage and what it does (short:${short:- none})" [ -z "$short" ]

# ---- kjit(1) -----------------------------------------------------------------------------
groff -man -Tascii -P-cbu "$TOP/man/kjit.1" 2>/dev/null | sed -n '/^COMMANDS/,/^ *warm /p' | tr -s ' \n' '  ' >"$T/man"
for o in '-I DIR' '-D NAME' '-U NAME' '-std=STD' '--compiler C' '--explain' '--name-expression EXPR'; do
	check "kjit(1) documents $o in get's description" grep -qF -- "$o" "$T/man"
done

# ---- bash completion -----------------------------------------------------------------------
if command -v bash >/dev/null 2>&1; then
	PATH="$TOP/$BUILD:$PATH" bash -c ". '$TOP/scripts/kjit.bash-completion'
		COMP_WORDS=(kjit st); COMP_CWORD=1; _kjit; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(kjit get --ba); COMP_CWORD=2; _kjit; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(kjit get --backend h); COMP_CWORD=3; _kjit; echo \"\${COMPREPLY[*]}\"" >"$T/bc" 2>&1
	check "completion: kjit st<TAB> -> stats stop" grep -qx 'stats stop' "$T/bc"
	check "completion: kjit get --ba<TAB> -> --backend" grep -qx -- '--backend' "$T/bc"
	check "completion: --backend h<TAB> -> hip" grep -qx 'hip' "$T/bc"
fi
[ "$FAILS" -eq 0 ]
