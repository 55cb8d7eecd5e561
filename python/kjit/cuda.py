"""kjit.cuda: launch what kjit compiled, with nothing but the NVIDIA driver
(libcuda.so.1 through ctypes: no toolkit, no CuPy, no PyTorch needed).

    import kjit, kjit.cuda
    obj = kjit.get_kernel("rms_norm_f32", backend="cuda", target=kjit.cuda.arch())
    fn = kjit.cuda.load(obj).function("rms_norm_f32", "PPPiif")
    fn.launch(rows, 256, [x, w, y, rows, cols, 1e-6],
              stream=torch.cuda.current_stream().cuda_stream)

Modules are loaded into the device's primary context (the one the CUDA
runtime, and so PyTorch and CuPy, use), made current on the calling thread
when it is not.  Pointers may be ints, torch tensors, objects with
__cuda_array_interface__ or with .ptr (see kjit._gpu for how arguments are
converted).  DeviceBuffer is a minimal cuMemAlloc'd buffer for programs
without an array library.

Importing this module touches no driver: the driver is loaded on first use,
and a machine without one gets DriverError("no CUDA driver: ...").
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p
from typing import Any, Dict, Optional, Sequence, Union

from ._gpu import (Dim, DriverError, check_signature, dim3, image_of, load_library, pack_args,
                   stream_of)

__all__ = ["DriverError", "Module", "Function", "DeviceBuffer", "load", "arch", "device_count",
           "synchronize"]

_NAMES = ("libcuda.so.1", "libcuda.so")
_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*


class _Driver:
    """libcuda, its prototypes, and the primary context of each device used."""

    def __init__(self) -> None:
        lib = load_library(_NAMES, "CUDA")
        P = ctypes.POINTER
        protos = {
            "cuInit": [c_uint],
            "cuDeviceGetCount": [P(c_int)],
            "cuDeviceGet": [P(c_int), c_int],
            "cuDeviceGetAttribute": [P(c_int), c_int, c_int],
            "cuDevicePrimaryCtxRetain": [P(c_void_p), c_int],
            "cuCtxSetCurrent": [c_void_p],
            "cuCtxGetCurrent": [P(c_void_p)],
            "cuCtxSynchronize": [],
            "cuModuleLoadData": [P(c_void_p), c_char_p],
            "cuModuleUnload": [c_void_p],
            "cuModuleGetFunction": [P(c_void_p), c_void_p, c_char_p],
            "cuLaunchKernel": [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
                               c_void_p, c_void_p, c_void_p],
            "cuGetErrorName": [c_int, P(c_char_p)],
            "cuMemAlloc_v2": [P(c_uint64), c_size_t],
            "cuMemFree_v2": [c_uint64],
            "cuMemcpyHtoD_v2": [c_uint64, c_char_p, c_size_t],
            "cuMemcpyDtoH_v2": [c_void_p, c_uint64, c_size_t],
        }
        for name, args in protos.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise DriverError(f"libcuda has no {name}: the driver is too old") from None
            fn.restype = c_int
            fn.argtypes = args
        self.lib = lib
        self.ctx: Dict[int, int] = {}
        self.check("cuInit", lib.cuInit(0))

    def check(self, what: str, r: int) -> None:
        if r == 0:
            return
        name = c_char_p()
        n = name.value.decode() if self.lib.cuGetErrorName(r, byref(name)) == 0 and name.value \
            else f"CUresult {r}"
        hint = "; no NVIDIA GPU is visible (check nvidia-smi, CUDA_VISIBLE_DEVICES)" \
            if n in ("CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_INVALID_DEVICE") else ""
        raise DriverError(f"{what}: {n}{hint}", r, n)

    def context(self, device: int) -> int:
        """The primary context of device, retained once and made current."""
        ctx = self.ctx.get(device)
        if ctx is None:
            n = c_int()
            self.check("cuDeviceGetCount", self.lib.cuDeviceGetCount(byref(n)))
            if not 0 <= device < n.value:
                raise DriverError(f"no CUDA device {device} ({n.value} visible)", None,
                                  "CUDA_ERROR_INVALID_DEVICE")
            dev, c = c_int(), c_void_p()
            self.check("cuDeviceGet", self.lib.cuDeviceGet(byref(dev), device))
            self.check("cuDevicePrimaryCtxRetain", self.lib.cuDevicePrimaryCtxRetain(byref(c), dev))
            ctx = self.ctx[device] = c.value or 0
        self.make_current(ctx)
        return ctx

    def make_current(self, ctx: int) -> None:
        cur = c_void_p()
        self.check("cuCtxGetCurrent", self.lib.cuCtxGetCurrent(byref(cur)))
        if cur.value != ctx:
            self.check("cuCtxSetCurrent", self.lib.cuCtxSetCurrent(ctx))


_driver_obj: Optional[_Driver] = None
_driver_lock = threading.Lock()


def _driver() -> _Driver:
    global _driver_obj
    with _driver_lock:
        if _driver_obj is None:
            _driver_obj = _Driver()
        return _driver_obj


def device_count() -> int:
    """The number of CUDA devices visible; DriverError without a driver."""
    d, n = _driver(), c_int()
    d.check("cuDeviceGetCount", d.lib.cuDeviceGetCount(byref(n)))
    return n.value


def arch(device: int = 0) -> str:
    """The kjit target of device: "sm_90" for compute capability 9.0."""
    d = _driver()
    d.context(device)
    dev, major, minor = c_int(), c_int(), c_int()
    d.check("cuDeviceGet", d.lib.cuDeviceGet(byref(dev), device))
    d.check("cuDeviceGetAttribute", d.lib.cuDeviceGetAttribute(byref(major), _ATTR_CC_MAJOR, dev))
    d.check("cuDeviceGetAttribute", d.lib.cuDeviceGetAttribute(byref(minor), _ATTR_CC_MINOR, dev))
    return f"sm_{major.value}{minor.value}"


def synchronize(device: int = 0) -> None:
    """Waits for all work on device (cuCtxSynchronize)."""
    d = _driver()
    d.context(device)
    d.check("cuCtxSynchronize", d.lib.cuCtxSynchronize())


class Function:
    """A kernel entry point of a loaded Module."""

    def __init__(self, module: "Module", name: str, handle: int, signature: Optional[str]) -> None:
        self.module = module
        self.name = name
        self.handle = handle
        self.signature = signature

    def launch(self, grid: Dim, block: Dim, args: Sequence[Any], shared: int = 0,
               stream: Any = None) -> None:
        """cuLaunchKernel: grid and block as an int or (x[, y[, z]]), args
        as described in kjit._gpu, shared bytes of dynamic shared memory,
        stream None (the default stream), a CUstream int or a stream object
        (torch.cuda.Stream, CuPy).  Asynchronous, as CUDA launches are."""
        g, b = dim3(grid, "grid"), dim3(block, "block")
        params, keep = pack_args(args, self.signature)
        d = self.module._d
        d.make_current(self.module.context)
        r = d.lib.cuLaunchKernel(self.handle, g[0], g[1], g[2], b[0], b[1], b[2], int(shared),
                                 stream_of(stream), params, None)
        del keep
        d.check(f"cuLaunchKernel({self.name})", r)

    __call__ = launch

    def __repr__(self) -> str:
        return f"<kjit.cuda.Function {self.name}>"


class Module:
    """A code object (cubin or PTX) loaded with cuModuleLoadData."""

    def __init__(self, obj: Any, device: int = 0) -> None:
        self._d = _driver()
        self.device = device
        self.context = self._d.context(device)
        m = c_void_p()
        self._d.check("cuModuleLoadData", self._d.lib.cuModuleLoadData(byref(m), image_of(obj)))
        self.handle: Optional[int] = m.value

    def function(self, name: str, signature: Optional[str] = None) -> Function:
        """The entry point name (cuModuleGetFunction); signature as in
        kjit._gpu ("PPPiif"), or None to pass ctypes values."""
        if self.handle is None:
            raise DriverError("this kjit.cuda.Module was unloaded")
        f = c_void_p()
        self._d.make_current(self.context)
        self._d.check(f"cuModuleGetFunction({name})",
                      self._d.lib.cuModuleGetFunction(byref(f), self.handle, name.encode()))
        return Function(self, name, f.value or 0, check_signature(signature))

    def unload(self) -> None:
        """cuModuleUnload; its functions must not be launched afterwards."""
        if self.handle is not None:
            self._d.make_current(self.context)
            self._d.check("cuModuleUnload", self._d.lib.cuModuleUnload(self.handle))
            self.handle = None

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unload()


def load(obj: Any, device: int = 0) -> Module:
    """Loads a kjit.Object (or cubin/PTX bytes) on device; returns the Module."""
    return Module(obj, device)


class DeviceBuffer:
    """nbytes of device memory (cuMemAlloc), for programs without an array
    library; .ptr is its address (pass the buffer itself as a kernel
    argument).  Free it with free() or a with block."""

    def __init__(self, nbytes: int, device: int = 0) -> None:
        self._d = _driver()
        self._d.context(device)
        p = c_uint64()
        self._d.check("cuMemAlloc", self._d.lib.cuMemAlloc_v2(byref(p), int(nbytes)))
        self.ptr: int = p.value
        self.nbytes = int(nbytes)

    @classmethod
    def from_bytes(cls, data: Union[bytes, bytearray, memoryview], device: int = 0) -> "DeviceBuffer":
        """A buffer holding a copy of data."""
        raw = bytes(data)
        buf = cls(len(raw), device)
        buf._d.check("cuMemcpyHtoD", buf._d.lib.cuMemcpyHtoD_v2(buf.ptr, raw, len(raw)))
        return buf

    def to_bytes(self) -> bytes:
        """A copy of the buffer's contents (synchronous)."""
        out = ctypes.create_string_buffer(self.nbytes)
        self._d.check("cuMemcpyDtoH", self._d.lib.cuMemcpyDtoH_v2(out, self.ptr, self.nbytes))
        return out.raw

    def free(self) -> None:
        if self.ptr:
            self._d.check("cuMemFree", self._d.lib.cuMemFree_v2(self.ptr))
            self.ptr = 0

    def __enter__(self) -> "DeviceBuffer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()
