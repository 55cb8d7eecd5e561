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

from typing import Optional

__all__ = ["Error", "CompileError", "TargetError", "DaemonError", "CODES", "error_for"]

#: The KJIT_E* codes of kjit.h, by value.
CODES = {
    -1: "KJIT_ENOMEM", -2: "KJIT_EINVAL", -3: "KJIT_EIO", -4: "KJIT_ECONNECT", -5: "KJIT_EPROTO",
    -6: "KJIT_ECOMPILE", -7: "KJIT_ENOTARGET", -8: "KJIT_ETARGET", -9: "KJIT_EBACKEND",
    -10: "KJIT_ENOKERNEL", -11: "KJIT_EWORKER", -12: "KJIT_ETIMEDOUT", -13: "KJIT_ETOOBIG",
    -14: "KJIT_EINCLUDE", -15: "KJIT_ENOENT", -16: "KJIT_ECORRUPT", -17: "KJIT_EBUSY",
    -18: "KJIT_EDENIED", -19: "KJIT_EINTERNAL", -20: "KJIT_ESHUTDOWN",
}


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
        return CODES.get(self.code, "") if self.code is not None else ""


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


_CLASS = {
    -6: CompileError,
    -7: TargetError, -8: TargetError, -9: TargetError,
    -3: DaemonError, -4: DaemonError, -5: DaemonError, -11: DaemonError, -12: DaemonError,
    -17: DaemonError, -18: DaemonError, -19: DaemonError, -20: DaemonError,
}


def error_for(code: int, message: str, log: str = "") -> Error:
    """The exception for a negative libkjit code and its one-line message."""
    return _CLASS.get(code, Error)(message, code, log)
