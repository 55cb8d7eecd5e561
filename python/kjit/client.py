"""client: kjit.Client, one connection to kjitd through libkjit, and
kjit.Object, the code object a get returns.

A Client owns one kjit_client handle.  libkjit's handles are not
thread-safe, so every call takes the Client's lock (ctypes releases the GIL
during the call: other threads run meanwhile).  A Client used in a child
after fork() drops the inherited connection (the socket is shared with the
parent, so replies would interleave) and connects again on first use.

Strings are passed to libkjit as UTF-8.  Every failure raises a kjit.Error
subclass carrying libkjit's or kjitd's one-line message (kjit.errors).

The hit path of get() costs little more than libkjit's own hit (issue 35):
the kjit_request of a call is built once and kept (per Client, keyed on the
call's arguments; up to _PREPARED_MAX of them), and the call goes through
the C extension kjit._hit (python/kjit/_hit.c; kjit._lib.extension() says
where it is found) when it loads: one kjit_get on the kept request with the
GIL released, the Object made in C, its data copied once, from the
process memo, the shared table or the reply straight into the bytes get()
returns (libkjit's kj__get_into); a repeat of an answer of the process
memo or of the shared table returns the same bytes object again, not a
new copy (bytes are immutable; libkjit's kj__get_into_kept says when the
answer is the one those bytes were copied from).  get(..., view=True) gives Object.data as
a read-only memoryview over the kjit_result instead (libkjit's own one copy:
no fewer copies than the bytes, and a little slower at 16 KB; for a caller
that wants the memory back at a release of its choosing), which is freed when the
view is released (Object.release(), memoryview.release()) or collected;
the view keeps the result alive, so it can never point into freed memory,
and a released view raises ValueError on use.  Without the extension (a
pure-Python install, another interpreter, $KJIT_PYTHON_EXT=0) the same
calls go through ctypes: kjit_get and kjit_result_free through prototypes
taking plain addresses (ctypes' per-call checks of POINTER arguments cost
more than the hit itself), into one kjit_result per Client reused under its
lock; view=True there gives a memoryview over a bytes copy, with the same
release semantics.  Both paths give the same Objects and raise the same
errors.
"""
from __future__ import annotations

import ctypes
import json as _json
import os
import threading
from ctypes import byref, c_char_p, c_void_p
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

try:
    from typing import Literal
except ImportError:  # Python < 3.8
    Literal = None  # type: ignore[assignment]

from . import _lib
from .errors import DaemonError, Error, error_for

__all__ = ["Client", "Object", "Backend", "Source", "BACKENDS", "STATUSES"]

#: Prepared requests kept per Client (the dict is emptied when full).
_PREPARED_MAX = 256


class _HitResult(ctypes.Structure):
    """struct kjit_result with data as a plain address (c_void_p), so the
    object is copied straight into a bytes; the layout is _lib.Result's."""
    _fields_ = [(n, c_void_p if n == "data" else t) for n, t in _lib.Result._fields_]  # type: ignore[misc]


# bytes from (address, size): one copy, holding the GIL (pythonapi).
_bytes_at = ctypes.pythonapi.PyBytes_FromStringAndSize
_bytes_at.restype = ctypes.py_object
_bytes_at.argtypes = [c_void_p, ctypes.c_ssize_t]
# kjit_get(client, request, result) and kjit_result_free(result) on
# addresses: the GIL is released during the call, as for every libkjit call.
_GetFn = ctypes.CFUNCTYPE(ctypes.c_int, c_void_p, c_void_p, c_void_p)
_FreeFn = ctypes.CFUNCTYPE(None, c_void_p)


# Forks of this process so far, counted in the child (os.register_at_fork):
# a Client notices it runs in a child by an int compare, not a getpid()
# system call per get.
_forks = [0]


def _count_fork() -> None:
    _forks[0] += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_count_fork)
    _FORK_CHECK = False
else:  # Python < 3.7
    _FORK_CHECK = True


#: Backend names and their enum kjit_backend values.
BACKENDS = {"hip": 1, "cuda": 2, "vulkan": 3}
#: enum kjit_status values and their names.
STATUSES = {1: "hit", 2: "compiled", 3: "joined", 4: "remote hit"}

Source = Union[str, bytes, bytearray, memoryview]
#: "hip", "cuda" or "vulkan".
Backend = Literal["hip", "cuda", "vulkan"] if Literal is not None else str  # type: ignore[misc]


def _b(s: Union[str, bytes], what: str) -> bytes:
    if isinstance(s, bytes):
        return s
    if isinstance(s, str):
        return s.encode()
    raise TypeError(f"{what} must be str or bytes, not {type(s).__name__}")


def _strv(items: Optional[Iterable[Union[str, bytes]]], what: str):
    """A char *[] for a list of strings, and its length."""
    if items is None:
        return None, 0
    if isinstance(items, (str, bytes)):
        raise TypeError(f"{what} must be a list of strings, not a single string")
    enc = [_b(x, what) for x in items]
    if not enc:
        return None, 0
    return (c_char_p * len(enc))(*enc), len(enc)


def _backend(backend: Optional[str]) -> int:
    if backend is None:
        raise ValueError("backend is required: 'hip', 'cuda' or 'vulkan'")
    try:
        return BACKENDS[backend]
    except (KeyError, TypeError):
        raise ValueError(f"unknown backend {backend!r}; use 'hip', 'cuda' or 'vulkan'") from None


class Object:
    """A compiled code object and how it was obtained.

    data: the object's bytes (HSACO, cubin, PTX or SPIR-V), ready for
    hipModuleLoadData / cuModuleLoadData / vkCreateShaderModule; with
    get(..., view=True) a read-only memoryview of them instead, valid until
    released (Object.release(), or a with block).
    status: "hit" (served from the cache), "compiled" (compiled for this
    request) or "joined" (waited on a compile another request started).
    key: the hex SHA-256 cache key.  target: the canonical target it was
    built for ("gfx90a", "sm_90", "vulkan1.2").  version: the runtime
    version it was built for.  log: the compiler's log ("" if none).
    backend: the backend asked for.  lowered_names: {name expression:
    lowered (mangled) name} for the name_expressions asked for (None where
    the compiler gave none).  explain: with get(..., explain=True), for an
    object that was not a hit, kjitd's lines saying the nearest earlier
    entry of the same source name and which part of the key differs; None
    for a hit or when not asked.
    """

    __slots__ = ("data", "status", "key", "target", "version", "log", "backend", "lowered_names", "explain")

    def __init__(self, data: bytes, status: str, key: str, target: str, version: str, log: str,
                 backend: str, lowered_names: Optional[Dict[str, Optional[str]]] = None,
                 explain: Optional[str] = None) -> None:
        self.data = data
        self.status = status
        self.key = key
        self.target = target
        self.version = version
        self.log = log
        self.backend = backend
        self.lowered_names = lowered_names if lowered_names is not None else {}
        self.explain = explain

    def __len__(self) -> int:
        return len(self.data)

    def __bytes__(self) -> bytes:
        d = self.data
        return d if type(d) is bytes else bytes(d)

    def release(self) -> None:
        """With get(..., view=True), releases Object.data (a memoryview over
        libkjit's result, which is freed now unless another view of it is
        open); using data afterwards raises ValueError.  A no-op for bytes."""
        d = self.data
        if type(d) is memoryview:
            d.release()

    def __enter__(self) -> "Object":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return (f"<kjit.Object {self.status} {self.key[:12]} {self.backend} {self.target} "
                f"{len(self.data)} bytes>")

    def as_json(self) -> Dict[str, Any]:
        """The `kjit get --json` object: status, key, target, version, size, log
        (and explain, when kjitd gave one)."""
        j = {"status": self.status, "key": self.key, "target": self.target,
             "version": self.version, "size": len(self.data), "log": self.log}
        if self.explain is not None:
            j["explain"] = self.explain
        return j


class Client:
    """A connection to kjitd.

    Client(socket=None, autostart=True, timeout_ms=0): socket None means
    $KJIT_SOCKET, else the per-user socket; without autostart (or with
    $KJIT_NO_AUTOSTART=1) no daemon is started when none answers.
    timeout_ms bounds each wait on the socket (0: libkjit's default, 10
    minutes).  Connects at once: raises DaemonError when kjitd is
    unreachable.  Use it as a context manager, or call close().
    """

    def __init__(self, socket: Optional[Union[str, os.PathLike]] = None, *, autostart: bool = True,
                 timeout_ms: int = 0) -> None:
        self._lib = _lib.lib()
        self._socket = os.fsencode(socket) if socket is not None else None
        self._autostart = autostart
        self._timeout_ms = int(timeout_ms)
        self._lock = threading.Lock()
        self._h: Optional[int] = None
        self._pid = os.getpid()
        self._forks = _forks[0]
        self._closed = False
        self._prepared: Dict[Any, Any] = {}
        self._res = _HitResult()
        self._res_at = ctypes.addressof(self._res)
        self._kget = _GetFn(("kjit_get", self._lib))
        self._kfree = _FreeFn(("kjit_result_free", self._lib))
        ext = _lib.extension()
        self._hitter = None
        if ext is not None:
            # libkjit's kj__get_into (client/getinto.h): the object copied
            # straight into the bytes get() returns; and kj__get_into_kept:
            # a repeat of a memo or table answer returns the bytes returned
            # before, not a new copy; 0 for a libkjit without them
            into = getattr(self._lib, "kj__get_into", None)
            kept = getattr(self._lib, "kj__get_into_kept", None)
            args = (ctypes.cast(self._lib.kjit_get, c_void_p).value,
                    ctypes.cast(self._lib.kjit_result_free, c_void_p).value, Object, STATUSES)
            kw = {"prepared": self._prepared, "forks": _forks,
                  "get_into": (ctypes.cast(into, c_void_p).value or 0) if into else 0}
            try:
                self._hitter = ext.Hitter(*args, **kw, get_kept=(ctypes.cast(kept, c_void_p).value or 0) if kept else 0)
            except TypeError:  # an extension from before kj__get_into_kept: it copies every hit
                self._hitter = ext.Hitter(*args, **kw)
            self._lock = self._hitter  # type: ignore[assignment]  # a lock C takes without a call
            if not _FORK_CHECK and not isinstance(Client.__dict__["get"], ext.Get):
                # c.get(...) in C for a Client with a Hitter and a prepared
                # request (_hitcall.c); everything else comes to this get
                Client.get = ext.Get(Client.__dict__["get"])  # type: ignore[method-assign]
        self._open()

    @property
    def hit_path(self) -> str:
        """"extension" when get() goes through the C extension kjit._hit,
        "ctypes" when through ctypes (kjit._lib.extension())."""
        return "ctypes" if self._hitter is None else "extension"

    # ---- the handle ------------------------------------------------------

    def _open(self) -> None:
        opt = _lib.OpenOptions(self._socket, 0 if self._autostart else 1, self._timeout_ms)
        h = c_void_p()
        r = self._lib.kjit_open(byref(h), byref(opt))
        if r < 0:
            raise error_for(r, self._message(r, self._lib.kjit_last_error(None)))
        self._h = h.value
        if self._hitter is not None:  # the C path's copy of the handle
            self._hitter.bind(self._h, self._forks)

    def _handle(self) -> int:
        """The live handle (called with the lock held)."""
        if self._closed:
            raise Error("this kjit.Client is closed")
        if self._h is None:
            self._open()
        assert self._h is not None
        return self._h

    def _locked(self) -> threading.Lock:
        if self._forks != _forks[0] or (_FORK_CHECK and self._pid != os.getpid()):
            # A forked child: the parent's lock may be held by a thread that
            # does not exist here, and the socket is shared with the parent.
            if self._hitter is not None:
                self._hitter.renew()  # a new lock; no handle for the C path
                self._lock = self._hitter  # type: ignore[assignment]
            else:
                self._lock = threading.Lock()
            if self._h is not None:
                self._lib.kjit_close(self._h)  # closes only this process's descriptor
                self._h = None
            self._pid = os.getpid()
            self._forks = _forks[0]
        return self._lock

    def _message(self, code: int, msg: Optional[bytes]) -> str:
        if msg:
            return msg.decode(errors="replace")
        return self._lib.kjit_strerror(code).decode(errors="replace")

    def _fail(self, h: int, code: int) -> Error:
        return error_for(code, self._message(code, self._lib.kjit_last_error(h)))

    def close(self) -> None:
        """Closes the connection; further calls raise kjit.Error.  Idempotent."""
        with self._locked():
            if self._h is not None:
                self._lib.kjit_close(self._h)
                self._h = None
            self._closed = True
            if self._hitter is not None:
                self._hitter.bind(None, None)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._h is not None and self._pid == os.getpid():
                if self._hitter is not None:
                    self._hitter.bind(None, None)
                self._lib.kjit_close(self._h)
                self._h = None
        except Exception:  # interpreter shutdown
            pass

    # ---- get -------------------------------------------------------------

    def get(self, source: Optional[Source] = None, backend: Optional[Backend] = None,
            target: Optional[str] = None,
            options: Optional[Sequence[str]] = None,
            headers: Optional[Mapping[str, Union[str, bytes]]] = None, name: Optional[str] = None,
            *, kernel: Optional[str] = None, entries: Optional[Sequence[str]] = None,
            runtime_version: Optional[str] = None, no_env: bool = False,
            include_dirs: Optional[Sequence[Union[str, os.PathLike]]] = None,
            compiler: Optional[str] = None,
            name_expressions: Optional[Sequence[str]] = None, explain: bool = False,
            view: bool = False) -> Object:
        """Fetches the code object of source (str or bytes) compiled for
        backend ("hip", "cuda" or "vulkan"; required), or of the bundled
        kernel named kernel.

        target: the canonical target ("gfx90a", "sm_90", "vulkan1.2"); None
        resolves it as libkjit does: this process's environment
        (KJIT_HIP_ARCH, KJIT_CUDA_ARCH, KJIT_VULKAN_ENV, ...), then the
        daemon's configuration and detection.  options: compiler options.
        headers: {include name: text} the source may #include.  name: the
        source's file name, for logs and `kjit ls` ([A-Za-z0-9._+-]).
        entries: the entry points (kernel names).  runtime_version: as
        target.  no_env: ignore the environment's overrides.
        include_dirs: directories searched (as -I, after headers) for what
        the source includes; this process reads what is found and sends
        it.  compiler: "hiprtc" or "hipcc" for hip, "nvrtc" or "nvcc" for
        cuda (None: the daemon's choice).  name_expressions: C++ names to
        instantiate ("scale<float>"), whose lowered names come back in
        Object.lowered_names.  Macros and the like go in options
        ("-DN=4", "-std=c++17").  explain: for a result that is not a hit,
        Object.explain says why (`kjit get --explain`).  view: Object.data
        is a read-only memoryview over libkjit's result instead of a bytes
        copy, valid until released (Object.release(), a with block, or
        data.release()); using it afterwards raises ValueError.

        Raises CompileError (with .log), TargetError, DaemonError or
        kjit.Error with the daemon's one-line message.
        """
        try:
            k = (source, backend, target, tuple(options) if options else None, name, kernel,
                 tuple(entries) if entries else None, runtime_version, no_env,
                 tuple(include_dirs) if include_dirs else None, compiler,
                 tuple(name_expressions) if name_expressions else None, explain)
            prep = None if headers else self._prepared.get(k)
        except TypeError:  # unhashable: a bytearray source, a list inside a list...
            k = prep = None
        if prep is None:
            req = self._request(source, backend, target, options, headers, name, kernel=kernel, entries=entries,
                                runtime_version=runtime_version, no_env=no_env, include_dirs=include_dirs,
                                compiler=compiler, name_expressions=name_expressions)
            req.explain = 1 if explain else 0
            prep = (req, ctypes.addressof(req), list(name_expressions) if name_expressions else None)
            if k is not None and not headers:
                if len(self._prepared) >= _PREPARED_MAX:
                    self._prepared.clear()
                self._prepared[k] = prep
        return self._get_prepared(prep[1], backend, prep[2], view)  # type: ignore[arg-type]

    def _request(self, source: Optional[Source] = None, backend: Optional[Backend] = None,
                 target: Optional[str] = None,
                 options: Optional[Sequence[str]] = None,
                 headers: Optional[Mapping[str, Union[str, bytes]]] = None, name: Optional[str] = None,
                 *, kernel: Optional[str] = None, entries: Optional[Sequence[str]] = None,
                 runtime_version: Optional[str] = None, no_env: bool = False,
                 include_dirs: Optional[Sequence[Union[str, os.PathLike]]] = None,
                 compiler: Optional[str] = None,
                 name_expressions: Optional[Sequence[str]] = None) -> _lib.Request:
        """The kjit_request of get()'s arguments (ctypes keeps what it points to)."""
        be = _backend(backend)
        req = _lib.Request()
        req.backend = be
        if (source is None) == (kernel is None):
            raise ValueError("give exactly one of source and kernel")
        if source is not None:
            src = source.encode() if isinstance(source, str) else bytes(source)
            req.source = src
            req.source_size = len(src)
        else:
            req.kernel = _b(kernel, "kernel")  # type: ignore[arg-type]
        if target is not None:
            req.target = _b(target, "target")
        if runtime_version is not None:
            req.runtime_version = _b(runtime_version, "runtime_version")
        if name is not None:
            req.source_name = _b(name, "name")
        if options:
            req.options, req.n_options = _strv(options, "options")
        if entries:
            req.entries, req.n_entries = _strv(entries, "entries")
        if headers:
            hv = (_lib.Header * len(headers))()
            for i, (hn, hd) in enumerate(headers.items()):
                data = _b(hd, "header data")
                hv[i].name = _b(hn, "header name")
                hv[i].data = data
                hv[i].size = len(data)
            req.headers = hv
            req.n_headers = len(headers)
        req.no_env = 1 if no_env else 0
        if include_dirs:
            dirs = [os.fsencode(d) for d in include_dirs]
            req.include_dirs, req.n_include_dirs = _strv(dirs, "include_dirs")
        if compiler is not None:
            req.compiler = _b(compiler, "compiler")
        if name_expressions:
            req.name_expressions, req.n_name_expressions = _strv(name_expressions, "name_expressions")
        return req

    def get_kernel(self, kernel: str, backend: Optional[Backend] = None, target: Optional[str] = None,
                   options: Optional[Sequence[str]] = None, *, runtime_version: Optional[str] = None,
                   no_env: bool = False) -> Object:
        """Fetches the bundled kernel named kernel (kernels_src/MANIFEST:
        "rms_norm_f32", "add_f32", ...) for backend; the rest as get()."""
        return self.get(None, backend, target, options, kernel=kernel,
                        runtime_version=runtime_version, no_env=no_env)

    def _outcome(self, h: int, r: int, res: _lib.Result, backend: Backend,
                 exprs: Sequence[str] = ()) -> Union[Object, Error]:
        """The Object of a successful result, else the Error to raise."""
        if r < 0:
            msg = self._message(r, res.error or self._lib.kjit_last_error(h))
            log = res.log.decode(errors="replace") if res.log else ""
            return error_for(r, msg, log)
        return Object(ctypes.string_at(res.data, res.size),
                      STATUSES.get(res.status, str(res.status)),
                      res.key.decode(),
                      res.target.decode() if res.target else "",
                      res.runtime_version.decode() if res.runtime_version else "",
                      res.log.decode(errors="replace") if res.log else "",
                      backend,
                      {e: (res.lowered_names[i].decode() if res.lowered_names[i] else None)
                       for i, e in enumerate(exprs) if i < res.n_lowered_names},
                      res.explain.decode(errors="replace") if res.explain else None)

    def _get_prepared(self, req_at: int, backend: Backend, exprs: Optional[Sequence[str]], view: bool) -> Object:
        """kjit_get of the request at address req_at (kept alive by the
        caller), through the extension or ctypes; the result freed before
        returning, or with view=True when its memoryview is released."""
        lock = self._lock if self._forks == _forks[0] and not _FORK_CHECK else self._locked()
        with lock:
            h = self._h
            if h is None or self._closed:
                h = self._handle()
            hitter = self._hitter
            out = (hitter.get(h, req_at, backend, exprs, view) if hitter is not None
                   else self._get_ctypes(h, req_at, backend, exprs, view))
            if type(out) is tuple:  # (code, error, log): read kjit_last_error(h) under the lock
                raise self._failure(h, *out)
        return out

    def _failure(self, h: int, code: int, err: Optional[bytes], log: Optional[bytes]) -> Error:
        """The exception of a failed kjit_get on h (the lock held): libkjit's
        message, else kjit_last_error(h), else kjit_strerror(code)."""
        return error_for(code, self._message(code, err or self._lib.kjit_last_error(h)),
                         log.decode(errors="replace") if log else "")

    def _get_ctypes(self, h: int, req_at: int, backend: Backend, exprs: Optional[Sequence[str]],
                    view: bool) -> Union[Object, tuple]:
        """_get_prepared's ctypes path (the lock held): the Object, or
        (code, error, log) of a failure."""
        res, at = self._res, self._res_at
        r = self._kget(h, req_at, at)
        try:
            if r < 0:
                return (r, res.error, res.log)
            size, tg, ver, log, ex = res.size, res.target, res.runtime_version, res.log, res.explain
            data = _bytes_at(res.data, size) if size else b""
            return Object(memoryview(data) if view else data,
                          STATUSES.get(res.status) or str(res.status),
                          res.key.decode(),
                          tg.decode() if tg else "",
                          ver.decode() if ver else "",
                          log.decode(errors="replace") if log else "",
                          backend,
                          {e: (res.lowered_names[i].decode() if res.lowered_names[i] else None)
                           for i, e in enumerate(exprs) if i < res.n_lowered_names} if exprs else None,
                          ex.decode(errors="replace") if ex else None)
        finally:
            self._kfree(at)

    def get_many(self, requests: Sequence[Mapping[str, Any]], *, return_exceptions: bool = False,
                 on_ready: Optional[Any] = None) -> List[Any]:
        """Fetches several objects in one round trip (kjit_get_many): each
        request is a mapping of get()'s keyword arguments ({"kernel":
        "add_f32", "backend": "vulkan"}, {"source": ..., "backend": "hip",
        "target": "gfx90a"}, ...).  Hits come from the process memo or the
        shared hit table at once; the rest go to kjitd together, which
        compiles the misses in parallel.

        Returns the Objects in the order of requests.  A failed request
        raises its error once the whole batch is answered (the first failure
        in order), or with return_exceptions=True stands in the list as its
        kjit.Error.  on_ready(i, object_or_error), when given, is called as
        each result arrives (in completion order, from this thread).
        """
        reqs = list(requests)
        n = len(reqs)
        if n == 0:
            return []
        backends = [r.get("backend") for r in reqs]
        keep = [self._request(**kw) for kw in reqs]  # what the copies point to stays alive
        carray = (_lib.Request * n)(*keep)
        results = (_lib.Result * n)()
        codes = (ctypes.c_int * n)()
        out: List[Any] = [None] * n
        lib = self._lib
        with self._locked():
            h = self._handle()

            def ready(_arg: Any, i: int, code: int, res_p: Any) -> None:
                out[i] = self._outcome(h, code, res_p.contents, backends[i],  # type: ignore[arg-type]
                                       list(reqs[i].get("name_expressions") or ()))
                if on_ready is not None:
                    on_ready(i, out[i])

            cb = _lib.GetManyFn(ready)
            try:
                lib.kjit_get_many(h, carray, n, results, codes, cb, None)
            finally:
                for i in range(n):
                    lib.kjit_result_free(byref(results[i]))
        if not return_exceptions:
            for o in out:
                if isinstance(o, Error):
                    raise o
        return out

    # ---- the rest of kjit.h ---------------------------------------------

    def ping(self) -> None:
        """One round trip to kjitd; raises DaemonError when it does not answer."""
        with self._locked():
            h = self._handle()
            r = self._lib.kjit_ping(h)
            if r < 0:
                raise self._fail(h, r)

    def stop(self) -> None:
        """Asks kjitd to exit once in-flight requests are answered."""
        with self._locked():
            h = self._handle()
            r = self._lib.kjit_stop(h)
            if r < 0:
                raise self._fail(h, r)

    def admin(self, cmd: str, arg: Optional[str] = None, *, json: bool = True) -> Any:
        """One administrative request (docs/cli.md: "stats", "targets",
        "kernels", "ls", "show", "gc", "verify", "clear", "replay",
        "export", "import").  Returns the daemon's JSON answer as Python
        objects, or with json=False its text."""
        text, js = c_void_p(), c_void_p()
        lib, free = self._lib, _lib.libc().free
        with self._locked():
            h = self._handle()
            try:
                r = lib.kjit_admin(h, _b(cmd, "cmd"), None if arg is None else _b(arg, "arg"),
                                   None if json else byref(text), byref(js) if json else None)
                if r < 0:
                    raise self._fail(h, r)
                out = js if json else text
                s = ctypes.string_at(out.value).decode(errors="replace") if out.value else ""
            finally:
                free(text)
                free(js)
        if not json:
            return s
        try:
            return _json.loads(s) if s.strip() else {}
        except ValueError as e:
            raise DaemonError(f"kjitd's {cmd} answer is not JSON: {e}", -5) from None

    def stats(self, zero: bool = False) -> Dict[str, Any]:
        """kjitd's counters, as `kjit stats --json` prints them (hits,
        misses, compiles, joined, errors by kind, bytes, entries, hit-latency
        histogram).  zero=True also resets them."""
        return self.admin("stats", "zero" if zero else None)

    def targets(self) -> Dict[str, Any]:
        """kjitd's view of the targets, as in `kjit targets --json`, less its
        "client" member: that one is this process's own environment
        resolution, which libkjit does not export (kjit.h has no call for
        it); kjit.get() still applies it to every request."""
        return self.admin("targets")

    def kernels(self, backend: Backend) -> List[str]:
        """The names of the bundled kernels kjitd serves for backend."""
        _backend(backend)
        text = self.admin("kernels", backend, json=False)
        return [ln.split()[0] for ln in text.splitlines() if ln.strip()]
