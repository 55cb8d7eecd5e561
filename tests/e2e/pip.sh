#!/bin/sh
# pip.sh: `pip install ./python` into a fresh venv, offline (pip's isolated
# build must download nothing: the in-tree backend, python/_build/), as the
# plain command a user types; then the installed module: kjit.__version__ is
# the package's, libkjit is the wheel's own copy, LibraryNotFound is a
# kjit.Error, and a get against a test kjitd compiles, then hits, through
# the wheel's C extension kjit._hit (built by the backend for this python3),
# also as a view.  The same again for a wheel without the library
# (KJIT_WHEEL_LIBRARY=none) and with no compiler to build the extension
# (CC=false): pip still installs it, the backend says why, and it finds a
# library by KJIT_LIBRARY and takes the ctypes path.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3)
# a sanitized libkjit (make test-asan) needs its runtimes in the interpreter
for v in $(san_python_env); do export "$v"; done
if [ -z "$PY" ] || ! "$PY" -m venv --help >/dev/null 2>&1; then
	not_ok "python3 -m venv" "python3 or its venv module is missing: pip install NOT tested"
	exit 1
fi
VERSION=$(sed -n 's/^__version__ = "\([^"]*\)"$/\1/p' "$TOP/python/kjit/_version.py")
start_daemon || { not_ok "start kjitd" "see above"; exit 1; }
# Nothing from the network: no index, no proxy that could answer.
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
unset PYTHONPATH KJIT_LIBRARY

"$PY" -m venv "$T/venv" || { not_ok "python3 -m venv" "failed"; exit 1; }
cd "$TOP" || exit 1
"$T/venv/bin/pip" install ./python >"$T/pip.out" 2>&1
rc=$?
check "pip install ./python into a venv, offline (rc $rc: $(tail -n 2 "$T/pip.out" | tr '\n' ' ' | head -c 300))" [ $rc -eq 0 ]
cd "$T" || exit 1 # not the tree: the import must come from the venv
cat >"$T/use.py" <<PYEOF
import os, sys
import kjit
where = os.path.dirname(kjit.__file__)
assert where.startswith(sys.argv[2]), "imported from " + where
assert kjit.__version__ == "$VERSION", kjit.__version__
assert issubclass(kjit.LibraryNotFound, kjit.Error) and issubclass(kjit.LibraryNotFound, OSError)
print("library", kjit.library_path())
src = "__global__ void k_pip(float *x) { x[threadIdx.x] *= %s; }\n" % sys.argv[1]
print(kjit.get(src, backend="hip", target="gfx90a").status)
print(kjit.get(src, backend="hip", target="gfx90a").status)
v = kjit.get(src, backend="hip", target="gfx90a", view=True)
print(kjit.default_client().hit_path, type(v.data).__name__, bytes(v.data) == kjit.get(src, backend="hip", target="gfx90a").data)
ext = kjit._lib.extension()
print("extension", ext.__file__ if ext else None)
PYEOF
"$T/venv/bin/python" "$T/use.py" 2.0 "$T/venv/" >"$T/use.out" 2>&1
check "the venv's kjit: version $VERSION, LibraryNotFound is a kjit.Error ($(tail -n 1 "$T/use.out" | head -c 200))" \
	grep -q '^library ' "$T/use.out"
check "the venv's kjit loads the wheel's own libkjit" \
	grep -q "^library $T/venv/.*/kjit/libkjit.so.0\$" "$T/use.out"
check "the venv's kjit: a get compiles, the repeat hits" \
	sh -c "sed -n '2,3p' '$T/use.out' | tr '\n' ' ' | grep -qx 'compiled hit '"
check "the venv's kjit: gets go through the wheel's C extension, a view is the bytes ($(sed -n '4,5p' "$T/use.out" | tr '\n' ' ' | head -c 200))" \
	sh -c "sed -n 4p '$T/use.out' | grep -qx 'extension memoryview True' &&
		sed -n 5p '$T/use.out' | grep -q '^extension $T/venv/.*/kjit/_hit\..*\.so\$'"

# The pure wheel: no library inside, no extension (no compiler); KJIT_LIBRARY names one.
"$PY" -m venv "$T/venv2" || { not_ok "python3 -m venv" "failed"; exit 1; }
(cd "$TOP" && KJIT_WHEEL_LIBRARY=none CC=false "$T/venv2/bin/pip" install -v ./python) >"$T/pip2.out" 2>&1
rc=$?
check "pip install ./python, pure wheel (rc $rc)" [ $rc -eq 0 ]
check "pure wheel: no libkjit inside" sh -c "! ls '$T'/venv2/lib/python3*/site-packages/kjit/libkjit.so.0 2>/dev/null"
check "pure wheel: no extension inside, and the backend said why" sh -c "
	! ls '$T'/venv2/lib/python3*/site-packages/kjit/_hit* 2>/dev/null &&
	grep -q 'kjit backend: the C extension kjit._hit is not in the wheel (false .*failed' '$T/pip2.out'"
KJIT_LIBRARY=/nonexistent/libkjit.so "$T/venv2/bin/python" -c "
import kjit
try:
    kjit.ping()
except kjit.Error as e:
    print('Error', type(e).__name__, e.code)
" >"$T/nf.out" 2>&1
check "pure wheel: no library is a kjit.Error (LibraryNotFound) ($(head -c 200 "$T/nf.out"))" \
	grep -qx 'Error LibraryNotFound None' "$T/nf.out"
# a copy of the library with no build folder beside it: nothing but ctypes
mkdir -p "$T/lib" && cp "$TOP/$BUILD/libkjit.so" "$T/lib/libkjit.so"
KJIT_LIBRARY="$T/lib/libkjit.so" "$T/venv2/bin/python" "$T/use.py" 3.0 "$T/venv2/" >"$T/use2.out" 2>&1
check "pure wheel with KJIT_LIBRARY: compiled, then hit, through ctypes ($(tr '\n' ' ' <"$T/use2.out" | head -c 200))" \
	sh -c "sed -n '2,5p' '$T/use2.out' | tr '\n' ' ' | grep -qx 'compiled hit ctypes memoryview True extension None '"
[ "$FAILS" -eq 0 ]
