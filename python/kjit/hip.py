"""kjit.hip: launch what kjit compiled for AMD GPUs with nothing but the HIP
runtime (libamdhip64 through ctypes: no hipcc, no PyTorch needed).

    import kjit, kjit.hip
    obj = kjit.get_kernel("rms_norm_f32", backend="hip")   # target: KFD detection or KJIT_HIP_ARCH
    fn = kjit.hip.load(obj).function("rms_norm_f32", "PPPiif")
    fn.launch(rows, 256, [x, w, y, rows, cols, 1e-6])

The same shape as kjit.cuda: hipModuleLoadData, hipModuleGetFunction,
hipModuleLaunchKernel on the device made current with hipSetDevice.
Arguments are converted as described in kjit._gpu (PyTorch's ROCm build
exposes HIP tensors through data_ptr(), and its streams as .cuda_stream).

Importing this module touches no runtime: it is loaded on first use, and a
machine without it (or without an AMD GPU) gets DriverError.
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p
from typing import Any, Dict, Optional, Sequence, Union

from ._gpu import (Dim, DriverError, check_signature, dim3, image_of, load_library, pack_args,
                   stream_of)

__all__ = ["DriverError", "Module", "Function", "DeviceBuffer", "load", "device_count",
           "synchronize"]

_NAMES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5")


class _Runtime:
    """libamdhip64 and its prototypes."""

    def __init__(self) -> None:
        lib = load_library(_NAMES, "HIP")
        P = ctypes.POINTER
        protos = {
            "hipInit": [c_uint],
            "hipGetDeviceCount": [P(c_int)],
            "hipSetDevice": [c_int],
            "hipGetDevice": [P(c_int)],
            "hipDeviceSynchronize": [],
            "hipModuleLoadData": [P(c_void_p), c_char_p],
            "hipModuleUnload": [c_void_p],
            "hipModuleGetFunction": [P(c_void_p), c_void_p, c_char_p],
            "hipModuleLaunchKernel": [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
                                      c_uint, c_void_p, c_void_p, c_void_p],
            "hipMalloc": [P(c_void_p), c_size_t],
            "hipFree": [c_void_p],
            "hipMemcpyHtoD": [c_uint64, c_char_p, c_size_t],
            "hipMemcpyDtoH": [c_void_p, c_uint64, c_size_t],
        }
        for name, args in protos.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise DriverError(f"libamdhip64 has no {name}: the HIP runtime is too old") from None
            fn.restype = c_int
            fn.argtypes = args
        lib.hipGetErrorName.restype = c_char_p
        lib.hipGetErrorName.argtypes = [c_int]
        self.lib = lib
        self.check("hipInit", lib.hipInit(0))
        n = c_int()
        self.check("hipGetDeviceCount", lib.hipGetDeviceCount(byref(n)))
        if n.value == 0:
            raise DriverError("no HIP device: the HIP runtime sees no AMD GPU (check rocminfo, "
                              "HIP_VISIBLE_DEVICES)", None, "hipErrorNoDevice")
        self.count = n.value

    def check(self, what: str, r: int) -> None:
        if r == 0:
            return
        raw = self.lib.hipGetErrorName(r)
        n = raw.decode() if raw else f"hipError_t {r}"
        hint = "; no AMD GPU is visible (check rocminfo, HIP_VISIBLE_DEVICES)" \
            if n in ("hipErrorNoDevice", "hipErrorInvalidDevice") else ""
        raise DriverError(f"{what}: {n}{hint}", r, n)

    def use(self, device: int) -> None:
        """Makes device current on this thread."""
        if not 0 <= device < self.count:
            raise DriverError(f"no HIP device {device} ({self.count} visible)", None,
                              "hipErrorInvalidDevice")
        cur = c_int(-1)
        self.check("hipGetDevice", self.lib.hipGetDevice(byref(cur)))
        if cur.value != device:
            self.check("hipSetDevice", self.lib.hipSetDevice(device))


_rt_obj: Optional[_Runtime] = None
_rt_lock = threading.Lock()


def _runtime() -> _Runtime:
    global _rt_obj
    with _rt_lock:
        if _rt_obj is None:
            _rt_obj = _Runtime()
        return _rt_obj


def device_count() -> int:
    """The number of HIP devices; DriverError without a runtime or device."""
    return _runtime().count


def synchronize(device: int = 0) -> None:
    """Waits for all work on device (hipDeviceSynchronize)."""
    rt = _runtime()
    rt.use(device)
    rt.check("hipDeviceSynchronize", rt.lib.hipDeviceSynchronize())


class Function:
    """A kernel entry point of a loaded Module."""

    def __init__(self, module: "Module", name: str, handle: int, signature: Optional[str]) -> None:
        self.module = module
        self.name = name
        self.handle = handle
        self.signature = signature

    def launch(self, grid: Dim, block: Dim, args: Sequence[Any], shared: int = 0,
               stream: Any = None) -> None:
        """hipModuleLaunchKernel; the arguments as kjit.cuda.Function.launch."""
        g, b = dim3(grid, "grid"), dim3(block, "block")
        params, keep = pack_args(args, self.signature)
        rt = self.module._rt
        rt.use(self.module.device)
        r = rt.lib.hipModuleLaunchKernel(self.handle, g[0], g[1], g[2], b[0], b[1], b[2],
                                         int(shared), stream_of(stream), params, None)
        del keep
        rt.check(f"hipModuleLaunchKernel({self.name})", r)

    __call__ = launch

    def __repr__(self) -> str:
        return f"<kjit.hip.Function {self.name}>"


class Module:
    """A code object (HSACO) loaded with hipModuleLoadData."""

    def __init__(self, obj: Any, device: int = 0) -> None:
        self._rt = _runtime()
        self.device = device
        self._rt.use(device)
        m = c_void_p()
        self._rt.check("hipModuleLoadData", self._rt.lib.hipModuleLoadData(byref(m), image_of(obj)))
        self.handle: Optional[int] = m.value

    def function(self, name: str, signature: Optional[str] = None) -> Function:
        """The entry point name (hipModuleGetFunction); signature as in kjit._gpu."""
        if self.handle is None:
            raise DriverError("this kjit.hip.Module was unloaded")
        f = c_void_p()
        self._rt.use(self.device)
        self._rt.check(f"hipModuleGetFunction({name})",
                       self._rt.lib.hipModuleGetFunction(byref(f), self.handle, name.encode()))
        return Function(self, name, f.value or 0, check_signature(signature))

    def unload(self) -> None:
        """hipModuleUnload; its functions must not be launched afterwards."""
        if self.handle is not None:
            self._rt.use(self.device)
            self._rt.check("hipModuleUnload", self._rt.lib.hipModuleUnload(self.handle))
            self.handle = None

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unload()


def load(obj: Any, device: int = 0) -> Module:
    """Loads a kjit.Object (or HSACO bytes) on device; returns the Module."""
    return Module(obj, device)


class DeviceBuffer:
    """nbytes of device memory (hipMalloc); .ptr is its address."""

    def __init__(self, nbytes: int, device: int = 0) -> None:
        self._rt = _runtime()
        self._rt.use(device)
        p = c_void_p()
        self._rt.check("hipMalloc", self._rt.lib.hipMalloc(byref(p), int(nbytes)))
        self.ptr: int = p.value or 0
        self.nbytes = int(nbytes)

    @classmethod
    def from_bytes(cls, data: Union[bytes, bytearray, memoryview], device: int = 0) -> "DeviceBuffer":
        raw = bytes(data)
        buf = cls(len(raw), device)
        buf._rt.check("hipMemcpyHtoD", buf._rt.lib.hipMemcpyHtoD(buf.ptr, raw, len(raw)))
        return buf

    def to_bytes(self) -> bytes:
        out = ctypes.create_string_buffer(self.nbytes)
        self._rt.check("hipMemcpyDtoH", self._rt.lib.hipMemcpyDtoH(out, self.ptr, self.nbytes))
        return out.raw

    def free(self) -> None:
        if self.ptr:
            self._rt.check("hipFree", self._rt.lib.hipFree(self.ptr))
            self.ptr = 0

    def __enter__(self) -> "DeviceBuffer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()
