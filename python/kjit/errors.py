"""errors: the exceptions of kjit, one per kind of failure a caller handles
differently.

Every failure libkjit or kjitd reports becomes a kjit.Error (or a subclass)
whose message is the one line the daemon or libkjit wrote (str(e)), with the
negative KJIT_E* code in .code and its symbolic name in .code_name:

- CompileError: the compiler rejected the source; .log holds its log.
- TargetError: no target was given, configured or detected, or it is not
  one the compiler supports, or the backend's compiler is not installed.
- DaemonError: kjitd could not be reached or did not answer properly
  (unreachable, timed out, protocol mismatch, shutting down, worker crash,
  refused, busy, internal error, I/O error on the socket).
- Error itself for the rest (bad argument, no such bundled kernel, source
  too big, an #include outside the allowed directories, no such entry,
  corruption found).

Mistakes Python can see before calling libkjit (a wrong type, an unknown
backend name) raise TypeError or ValueError as usual.
"""
from __future__ import annotations

import ctypes
from typing import Dict, Optional

__all__ = ["Error", "CompileError", "TargetError", "DaemonError", "codes", "code_name", "error_for"]


def code_name(code: Optional[int]) -> str:
    """The KJIT_E* name of a libkjit code ("KJIT_ECOMPILE"), as libkjit
    itself spells it (kjit_error_name: the names are written once, in
    include/kjit.h's enum); "" for None or a code libkjit does not know."""
    if code is None:
        return ""
    from . import _lib  # late: _lib may fail to load, and errors must not
    try:
        name = _lib.lib().kjit_error_name(code)
    except (OSError, ctypes.ArgumentError):
        return ""
    return name.decode() if name else ""


def codes() -> Dict[int, str]:
    """Every KJIT_E* code libkjit knows: {code: name}, names as code_name gives them."""
    out = {}
    for code in range(-1, -1000, -1):
        name = code_name(code)
        if not name:
            break
        out[code] = name
    return out


class Error(Exception):
    """A kjit failure: str(e) is the one-line message, e.code the KJIT_E*
    code (negative int; None for a failure outside libkjit, such as
    libkjit.so not being found)."""

    def __init__(self, message: str, code: Optional[int] = None, log: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.log = log

    @property
    def code_name(self) -> str:
        """"KJIT_ECOMPILE" etc., or "" when code is not a kjit code."""
        return code_name(self.code)


class CompileError(Error):
    """The compiler rejected the source (KJIT_ECOMPILE); .log is its log."""


class TargetError(Error):
    """No usable target: none given, configured or detected
    (KJIT_ENOTARGET), one the compiler does not support (KJIT_ETARGET), or
    the backend's compiler is missing (KJIT_EBACKEND)."""


class DaemonError(Error):
    """kjitd could not be reached or failed to answer: KJIT_ECONNECT,
    KJIT_ETIMEDOUT, KJIT_EPROTO, KJIT_EWORKER, KJIT_ESHUTDOWN, KJIT_EBUSY,
    KJIT_EDENIED, KJIT_EINTERNAL, KJIT_EIO."""


#: The exception class of each code that has one other than Error, by name
#: (tests/python/test_kjit.py checks each name against libkjit).
_CLASS = {
    "KJIT_ECOMPILE": CompileError,
    "KJIT_ENOTARGET": TargetError, "KJIT_ETARGET": TargetError, "KJIT_EBACKEND": TargetError,
    "KJIT_EIO": DaemonError, "KJIT_ECONNECT": DaemonError, "KJIT_EPROTO": DaemonError,
    "KJIT_EWORKER": DaemonError, "KJIT_ETIMEDOUT": DaemonError, "KJIT_EBUSY": DaemonError,
    "KJIT_EDENIED": DaemonError, "KJIT_EINTERNAL": DaemonError, "KJIT_ESHUTDOWN": DaemonError,
}


def error_for(code: int, message: str, log: str = "") -> Error:
    """The exception for a negative libkjit code and its one-line message."""
    return _CLASS.get(code_name(code), Error)(message, code, log)
