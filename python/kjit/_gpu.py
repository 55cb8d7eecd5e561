"""_gpu: what kjit.cuda and kjit.hip share: the driver error, launch
geometry, and packing kernel arguments into the void *[] both drivers take.

Kernel arguments are C values of exact sizes, and a Python int cannot say
whether it is a pointer, an int or a long.  So an argument is converted
either by the function's signature, one letter per argument:

    P  pointer (8 bytes): an int address, a torch tensor (data_ptr()), any
       object with __cuda_array_interface__ (CuPy, Numba), an object with
       .ptr (kjit's DeviceBuffer, CuPy memory), or None (NULL)
    i  int32    I  uint32    q  int64    Q  uint64    f  float32    d  float64

or, without a signature, by its type: ctypes instances (ctypes.c_int32(n),
ctypes.c_float(x)) as they are, NumPy scalars by their dtype, pointer-like
objects (above) as pointers; a bare Python int or float is refused, since
its C type is a guess.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional, Sequence, Tuple, Union

from .errors import Error

__all__ = ["DriverError", "Dim", "dim3", "pack_args", "pointer_of", "stream_of", "image_of"]

Dim = Union[int, Sequence[int]]

_SIG = {
    "P": ctypes.c_uint64, "i": ctypes.c_int32, "I": ctypes.c_uint32, "q": ctypes.c_int64,
    "Q": ctypes.c_uint64, "f": ctypes.c_float, "d": ctypes.c_double,
}


class DriverError(Error):
    """A GPU driver call failed, or there is no driver or device.  .code is
    the driver's status (CUresult, hipError_t; None when the driver is
    missing) and .name its name ("CUDA_ERROR_NO_DEVICE")."""

    def __init__(self, message: str, code: Optional[int] = None, name: str = "") -> None:
        super().__init__(message, code)
        self.name = name

    @property
    def code_name(self) -> str:
        return self.name


def dim3(d: Dim, what: str) -> Tuple[int, int, int]:
    """(x, y, z) from an int or a sequence of 1 to 3 positive ints."""
    t = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(t) <= 3 or not all(isinstance(v, int) and v > 0 for v in t):
        raise ValueError(f"{what} must be a positive int or 1 to 3 positive ints, not {d!r}")
    return (t + (1, 1))[:3]  # type: ignore[return-value]


def pointer_of(a: Any) -> Optional[int]:
    """The device address a pointer-like argument stands for, or None when
    a is not pointer-like."""
    if a is None:
        return 0
    if hasattr(a, "data_ptr") and callable(a.data_ptr):  # torch.Tensor
        return int(a.data_ptr())
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    ptr = getattr(a, "ptr", None)
    if isinstance(ptr, int):
        return ptr
    return None


def stream_of(s: Any) -> Optional[int]:
    """A stream handle from None (the default stream), an int, a
    torch.cuda.Stream (.cuda_stream) or a CuPy stream (.ptr)."""
    if s is None:
        return None
    if isinstance(s, int):
        return s or None
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(s, attr, None)
        if isinstance(v, int):
            return v or None
    raise TypeError(f"stream must be None, an int handle or a stream object, not {type(s).__name__}")


def _convert(a: Any, letter: Optional[str], i: int) -> Any:
    if letter is not None:
        ct = _SIG[letter]
        if letter == "P":
            p = pointer_of(a)
            if p is None:
                if isinstance(a, int):
                    p = a
                else:
                    raise TypeError(f"argument {i}: expected a pointer (int, tensor, array), "
                                    f"not {type(a).__name__}")
            return ct(p)
        if isinstance(a, ctypes._SimpleCData):
            a = a.value
        return ct(a)
    if isinstance(a, (ctypes._SimpleCData, ctypes.Structure, ctypes.Array)):
        return a
    p = pointer_of(a)
    if p is not None:
        return ctypes.c_uint64(p)
    if hasattr(a, "dtype") and hasattr(a, "tobytes") and getattr(a, "ndim", None) == 0:
        raw = a.tobytes()  # a NumPy scalar
        return (ctypes.c_char * len(raw)).from_buffer_copy(raw)
    if isinstance(a, (bool, int, float)):
        raise TypeError(f"argument {i}: a bare Python {type(a).__name__} has no C type; wrap it "
                        f"(ctypes.c_int32({a!r}), ctypes.c_float(...)) or give the function a "
                        f"signature such as 'PPPiif'")
    raise TypeError(f"argument {i}: cannot pass a {type(a).__name__} to a kernel")


def pack_args(args: Sequence[Any], signature: Optional[str]) -> Tuple[Any, List[Any]]:
    """The void *[] of the arguments and the objects it points into (keep
    them alive until the launch returns)."""
    if signature is not None and len(signature) != len(args):
        raise ValueError(f"the signature {signature!r} has {len(signature)} arguments, "
                         f"the launch gave {len(args)}")
    vals = [_convert(a, signature[i] if signature else None, i) for i, a in enumerate(args)]
    params = (ctypes.c_void_p * max(len(vals), 1))(*[ctypes.addressof(v) for v in vals])
    return params, vals


def check_signature(signature: Optional[str]) -> Optional[str]:
    if signature is not None and any(c not in _SIG for c in signature):
        raise ValueError(f"bad signature {signature!r}: use the letters {''.join(_SIG)}")
    return signature


def image_of(obj: Any) -> bytes:
    """The bytes of a kjit.Object (or bytes-like): a text image (PTX) gets
    the NUL its driver expects at the end."""
    data = obj.data if hasattr(obj, "data") and isinstance(obj.data, bytes) else bytes(obj)
    if not data:
        raise ValueError("the code object is empty")
    if data[:4] != b"\x7fELF" and not data.endswith(b"\0"):
        data += b"\0"
    return data


def load_library(names: Sequence[str], what: str) -> ctypes.CDLL:
    """The first of names that loads; DriverError naming them otherwise."""
    errs = []
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError as e:
            errs.append(str(e))
    raise DriverError(f"no {what} driver: {' / '.join(names)} not found ({errs[0] if errs else ''})")
