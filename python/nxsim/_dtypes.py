"""nxsim dtypes as NumPy dtypes (docs/parts/dtypes.md, docs/parts/python.md).

NumPy has no bf16 or fp8: nxsim's .npy files (isa/npy.c) store them as
one-field structured types whose field names the type and holds the raw
bits, and the Python package uses the same dtypes, so an array saved with
np.save opens in `nxsim exec` and back:

    bf16      np.dtype([("bf16", "<u2")])
    fp8_e4m3  np.dtype([("fp8_e4m3", "u1")])
    fp8_e5m2  np.dtype([("fp8_e5m2", "u1")])

The other types are NumPy's own (fp32 float32, fp16 float16, int8 ...
uint32). convert() changes the type with the engines' rounding (the
library's nx_convert: round to nearest even, saturation as documented)."""
import ctypes

import numpy as np

from . import _lib

bf16 = np.dtype([("bf16", "<u2")])
fp8_e4m3 = np.dtype([("fp8_e4m3", "u1")])
fp8_e5m2 = np.dtype([("fp8_e5m2", "u1")])

BY_NAME = {
    "fp32": np.dtype("<f4"),
    "bf16": bf16,
    "fp16": np.dtype("<f2"),
    "fp8_e4m3": fp8_e4m3,
    "fp8_e5m2": fp8_e5m2,
    "int8": np.dtype("i1"),
    "uint8": np.dtype("u1"),
    "int16": np.dtype("<i2"),
    "uint16": np.dtype("<u2"),
    "int32": np.dtype("<i4"),
    "uint32": np.dtype("<u4"),
}


def name_of(dtype):
    """The nxsim name of a NumPy dtype, or None if nxsim has no such type."""
    dtype = np.dtype(dtype)
    for name, dt in BY_NAME.items():
        if dtype == dt:  # "<f4" and "=f4" are equal on a little-endian host; ">f4" is not
            return name
    return None


def numpy_of(name):
    return BY_NAME[name]


def convert(array, dtype):
    """array (any nxsim dtype, or float64, which is first rounded to fp32)
    converted to nxsim dtype `dtype` (a name or a NumPy dtype)."""
    from . import InputError, _raise  # late: the package imports this module

    target = dtype if isinstance(dtype, str) else name_of(dtype)
    if target not in BY_NAME:
        raise InputError("convert: unknown nxsim dtype %r" % (dtype,))
    a = np.asarray(array)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    source = name_of(a.dtype)
    if source is None:
        raise InputError("convert: dtype %s has no nxsim type" % (a.dtype,))
    a = np.ascontiguousarray(a)
    out = np.empty(a.shape, dtype=BY_NAME[target])
    msg = _lib.Message()
    st = _lib.lib.nx_convert(source.encode(), a.ctypes.data_as(ctypes.c_void_p), target.encode(),
                             out.ctypes.data_as(ctypes.c_void_p), a.size, ctypes.byref(msg))
    _raise(st, msg)
    return out
