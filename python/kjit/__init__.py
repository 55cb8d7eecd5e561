"""kjit: fetch compiled GPU kernels from kjitd, the shared JIT cache.

    import kjit
    obj = kjit.get(source, backend="cuda")          # compiled once per machine
    obj.status, obj.key, obj.target, len(obj.data)  # "hit" | "compiled" | "joined" | "remote hit"
    rms = kjit.get_kernel("rms_norm_f32", backend="cuda")   # a bundled kernel
    kjit.stats()["hits"]; kjit.targets()

    with kjit.Client(socket="/run/kjit/kjitd.sock") as c:  # an explicit connection
        c.get(source, backend="hip", target="gfx90a")

The module-level functions use one default Client per process, created on
first use (starting a per-user kjitd when none answers, as libkjit does).
Launch what you get with kjit.cuda.load(obj) or kjit.hip.load(obj), which
need only the driver.  Errors raise kjit.CompileError (with .log),
kjit.TargetError, kjit.DaemonError or their base kjit.Error, each carrying
the daemon's one-line message.

This package is ctypes over libkjit.so, with one small C extension,
kjit._hit, under the hit path of Client.get (used when it loads; the
ctypes path gives the same results without it); see kjit._lib for where
the library and the extension are found (KJIT_LIBRARY overrides).
get(..., view=True) gives Object.data as a read-only memoryview over
libkjit's result instead of a bytes copy, valid until released.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._lib import LibraryNotFound, library_path
from .client import BACKENDS, STATUSES, Backend, Client, Object, Source
from .errors import CompileError, DaemonError, Error, TargetError

__all__ = ["Client", "Object", "Error", "CompileError", "TargetError", "DaemonError",
           "LibraryNotFound", "get", "get_kernel", "get_many", "stats", "targets", "ping", "default_client",
           "library_path", "Backend", "Source", "BACKENDS", "STATUSES"]
from ._version import __version__

_default: Optional[Client] = None
_default_lock = threading.Lock()


def default_client() -> Client:
    """The process's default Client (created on first use; a fresh one in a
    child after fork)."""
    global _default
    c = _default
    if c is not None:
        return c
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default


def _reset_after_fork() -> None:
    global _default_lock
    _default_lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_after_fork)


def get(source: Optional[Source] = None, backend: Optional[Backend] = None, target: Optional[str] = None,
        options: Optional[Sequence[str]] = None,
        headers: Optional[Mapping[str, Union[str, bytes]]] = None, name: Optional[str] = None,
        **kw: Any) -> Object:
    """Client.get on the default client: the code object of source compiled
    for backend ("hip", "cuda" or "vulkan"; required); see Client.get."""
    return default_client().get(source, backend, target, options, headers, name, **kw)


def get_kernel(kernel: str, backend: Optional[Backend] = None, target: Optional[str] = None,
               options: Optional[Sequence[str]] = None, **kw: Any) -> Object:
    """Client.get_kernel on the default client: a bundled kernel by name."""
    return default_client().get_kernel(kernel, backend, target, options, **kw)


def get_many(requests: Sequence[Mapping[str, Any]], **kw: Any) -> List[Any]:
    """Client.get_many on the default client: several objects in one round
    trip, each request a mapping of get()'s keyword arguments."""
    return default_client().get_many(requests, **kw)


def stats(zero: bool = False) -> Dict[str, Any]:
    """kjitd's counters as a dict (the `kjit stats --json` object)."""
    return default_client().stats(zero)


def targets() -> Dict[str, Any]:
    """kjitd's targets as a dict (the `kjit targets --json` object less
    "client"; see Client.targets)."""
    return default_client().targets()


def ping() -> None:
    """Raises DaemonError unless kjitd answers."""
    default_client().ping()
