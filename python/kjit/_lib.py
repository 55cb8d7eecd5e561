"""_lib: finds libkjit and declares its C interface (include/kjit.h) to ctypes.

Nothing here talks to kjitd; kjit.client does.  The library is loaded once,
on first use, from the first of:

1. ``$KJIT_LIBRARY`` (a path to libkjit.so);
2. the package's own copy, ``kjit/libkjit.so.0`` beside this file (a wheel
   of ``pip install ./python`` built after ``make`` carries one);
3. the library of the install this package came with (``make install`` and
   the Debian package record ``PREFIX/lib/libkjit.so.0`` in kjit/_install.py);
4. the build tree this package sits in: ``<repo>/$BUILD/libkjit.so``, then
   ``<repo>/build/libkjit.so``, when the package is ``<repo>/python/kjit``
   (``PYTHONPATH=python`` after ``make``);
5. ``libkjit.so.0`` through the dynamic loader's search path.

libkjit starts a per-user kjitd when none answers, looking for it beside
the running executable first.  For Python that executable is python3, so
when the loaded library has an executable ``kjitd`` beside it (a build
tree) and ``$KJIT_KJITD`` is unset, this module sets ``$KJIT_KJITD`` to that
kjitd: the daemon of the same build as the library.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from ctypes import (POINTER, Structure, c_char, c_char_p, c_int, c_size_t,
                    c_uint8, c_void_p)
from typing import Any, Optional

from .errors import Error

__all__ = ["lib", "libc", "library_path", "extension", "LibraryNotFound", "OpenOptions", "Header", "Request",
           "Result"]


class LibraryNotFound(Error, OSError):
    """libkjit.so could not be found or loaded (a kjit.Error with code None,
    and an OSError as it always was)."""

    def __init__(self, message: str) -> None:
        Error.__init__(self, message)


class OpenOptions(Structure):
    """struct kjit_open_options."""
    _fields_ = [("socket_path", c_char_p), ("no_autostart", c_int), ("timeout_ms", c_int)]


class Header(Structure):
    """struct kjit_header: data is a pointer to bytes of size size."""
    _fields_ = [("name", c_char_p), ("data", c_char_p), ("size", c_size_t)]


class Request(Structure):
    """struct kjit_request.  source is declared char * (it is const void *
    in C: the same pointer) so that a bytes object can be assigned."""
    _fields_ = [
        ("backend", c_int),
        ("target", c_char_p),
        ("runtime_version", c_char_p),
        ("kernel", c_char_p),
        ("source", c_char_p),
        ("source_size", c_size_t),
        ("source_name", c_char_p),
        ("entries", POINTER(c_char_p)),
        ("n_entries", c_size_t),
        ("options", POINTER(c_char_p)),
        ("n_options", c_size_t),
        ("headers", POINTER(Header)),
        ("n_headers", c_size_t),
        ("no_env", c_int),
        ("include_dirs", POINTER(c_char_p)),
        ("n_include_dirs", c_size_t),
        ("compiler", c_char_p),
        ("name_expressions", POINTER(c_char_p)),
        ("n_name_expressions", c_size_t),
        ("explain", c_int),
    ]


class Result(Structure):
    """struct kjit_result: owned by libkjit until kjit_result_free()."""
    _fields_ = [
        ("status", c_int),
        ("data", POINTER(c_uint8)),
        ("size", c_size_t),
        ("key", c_char * 65),
        ("target", c_char_p),
        ("runtime_version", c_char_p),
        ("log", c_char_p),
        ("error", c_char_p),
        ("sys_errno", c_int),
        ("lowered_names", POINTER(c_char_p)),
        ("n_lowered_names", c_size_t),
        ("explain", c_char_p),
    ]


_ClientP = c_void_p  # kjit_client * is opaque

# kjit_get_many_fn: void (*)(void *arg, size_t i, int code, const kjit_result *res)
GetManyFn = ctypes.CFUNCTYPE(None, c_void_p, c_size_t, c_int, POINTER(Result))


def _declare(dll: ctypes.CDLL) -> None:
    """Gives every function of kjit.h its prototype."""
    protos = {
        "kjit_strerror": (c_char_p, [c_int]),
        "kjit_error_name": (c_char_p, [c_int]),
        "kjit_backend_name": (c_char_p, [c_int]),
        "kjit_backend_from_name": (c_int, [c_char_p]),
        "kjit_status_name": (c_char_p, [c_int]),
        "kjit_open": (c_int, [POINTER(_ClientP), POINTER(OpenOptions)]),
        "kjit_close": (None, [_ClientP]),
        "kjit_get": (c_int, [_ClientP, POINTER(Request), POINTER(Result)]),
        "kjit_result_free": (None, [POINTER(Result)]),
        "kjit_get_many": (c_int, [_ClientP, POINTER(Request), c_size_t, POINTER(Result), POINTER(c_int),
                                  GetManyFn, c_void_p]),
        "kjit_ping": (c_int, [_ClientP]),
        "kjit_stop": (c_int, [_ClientP]),
        "kjit_admin": (c_int, [_ClientP, c_char_p, c_char_p, POINTER(c_void_p), POINTER(c_void_p)]),
        "kjit_last_error": (c_char_p, [_ClientP]),
    }
    for name, (res, args) in protos.items():
        fn = getattr(dll, name)
        fn.restype = res
        fn.argtypes = args


def _candidates() -> list:
    """Paths to try, in order (see the module's docstring)."""
    out = []
    env = os.environ.get("KJIT_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    bundled = os.path.join(here, "libkjit.so.0")
    if os.path.exists(bundled):
        out.append(bundled)
    try:
        from . import _install  # written by `make install`
        out.append(_install.LIBRARY)
    except ImportError:
        pass
    repo = os.path.dirname(os.path.dirname(here))
    build = os.environ.get("BUILD") or "build"
    for b in dict.fromkeys([build, "build"]):
        p = os.path.join(repo, b, "libkjit.so")
        if os.path.exists(p):
            out.append(p)
    out.append("libkjit.so.0")
    return out


class _Loaded:
    dll: Optional[ctypes.CDLL] = None
    path: Optional[str] = None
    libc: Optional[ctypes.CDLL] = None
    ext: Any = None  # kjit._hit, once loaded
    ext_tried: bool = False
    ext_why: str = ""  # why it did not load


_state = _Loaded()
_load_lock = threading.Lock()


def _load() -> ctypes.CDLL:
    with _load_lock:
        if _state.dll is not None:
            return _state.dll
        tried = []
        for path in _candidates():
            try:
                dll = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path}: {e}")
                continue
            _declare(dll)
            _state.path = path
            kjitd = os.path.join(os.path.dirname(path), "kjitd")
            if os.path.isabs(path) and "KJIT_KJITD" not in os.environ and os.access(kjitd, os.X_OK):
                os.environ["KJIT_KJITD"] = kjitd
            libc = ctypes.CDLL(None)
            libc.free.restype = None
            libc.free.argtypes = [c_void_p]
            _state.libc = libc
            _state.dll = dll
            return dll
        raise LibraryNotFound("libkjit not found (" + "; ".join(tried) +
                              "); run `make`, `make install`, or set KJIT_LIBRARY to libkjit.so")


def lib() -> ctypes.CDLL:
    """The loaded libkjit (loading it on first use); raises LibraryNotFound."""
    dll = _state.dll
    return dll if dll is not None else _load()


def libc() -> ctypes.CDLL:
    """The C library (for free() of what kjit_admin returns)."""
    lib()
    assert _state.libc is not None
    return _state.libc


def library_path() -> str:
    """The path libkjit was loaded from (loading it on first use)."""
    lib()
    assert _state.path is not None
    return _state.path


def _load_extension() -> Any:
    """kjit._hit from the package, else from beside the library; None when
    neither loads (_state.ext_why says why)."""
    import importlib.machinery
    import importlib.util
    import sysconfig
    why = []
    try:
        from . import _hit  # type: ignore[attr-defined]
        return _hit
    except ImportError as e:
        why.append(f"kjit._hit: {e}")
    path = library_path()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not os.path.isabs(path) or not suffix:
        _state.ext_why = "; ".join(why + [f"no build folder beside {path}"])
        return None
    so = os.path.join(os.path.dirname(path), "python", "kjit", "_hit" + suffix)
    if not os.path.exists(so):
        _state.ext_why = "; ".join(why + [f"{so}: not built"])
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader("kjit._hit", so)
        spec = importlib.util.spec_from_file_location("kjit._hit", so, loader=loader)
        assert spec is not None
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except ImportError as e:
        _state.ext_why = "; ".join(why + [f"{so}: {e}"])
        return None
    sys.modules.setdefault("kjit._hit", mod)
    return mod


def extension() -> Any:
    """The C extension kjit._hit, or None for the ctypes path: always None
    with $KJIT_PYTHON_EXT=0; with $KJIT_PYTHON_EXT=1 a missing one raises
    kjit.Error saying why.  Loads libkjit first (LibraryNotFound)."""
    want = os.environ.get("KJIT_PYTHON_EXT", "")
    if want == "0":
        return None
    lib()
    with _load_lock:
        if not _state.ext_tried:
            _state.ext = _load_extension()
            _state.ext_tried = True
    if _state.ext is None and want == "1":
        raise Error("KJIT_PYTHON_EXT=1 but the C extension kjit._hit did not load: " + _state.ext_why)
    return _state.ext
