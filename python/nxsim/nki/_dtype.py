"""NKI dtypes as nxsim dtypes (docs/parts/dtypes.md): nl.float32 is fp32,
nl.bfloat16 bf16, ...; NumPy dtypes and their names are accepted wherever
NKI accepts a dtype."""
import numpy as np

from .._dtypes import name_of
from ._errors import refuse, user_error


class DType(str):
    """An NKI dtype: the str is NKI's name; .nx the nxsim dtype name."""

    def __new__(cls, nki_name, nx):
        s = super().__new__(cls, nki_name)
        s.nx = nx
        return s

    @property
    def itemsize(self):
        return SIZES[self.nx]


SIZES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1, "uint8": 1, "int16": 2,
         "uint16": 2, "int32": 4, "uint32": 4}

float32 = DType("float32", "fp32")
bfloat16 = DType("bfloat16", "bf16")
float16 = DType("float16", "fp16")
float8_e4m3 = DType("float8_e4m3", "fp8_e4m3")
float8_e5m2 = DType("float8_e5m2", "fp8_e5m2")
int8 = DType("int8", "int8")
uint8 = DType("uint8", "uint8")
int16 = DType("int16", "int16")
uint16 = DType("uint16", "uint16")
int32 = DType("int32", "int32")
uint32 = DType("uint32", "uint32")
bool_ = DType("bool_", "uint8")

BY_NX = {d.nx: d for d in (float32, bfloat16, float16, float8_e4m3, float8_e5m2, int8, uint8, int16, uint16,
                           int32, uint32)}
_BY_NAME = {str(d): d for d in BY_NX.values()}
_BY_NAME["bool_"] = bool_
_BY_NAME["bool"] = bool_
FLOATS = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")


def dtype_of(x):
    """The DType of an NKI/NumPy dtype or name; refuses what nxsim lacks."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        if x in _BY_NAME:
            return _BY_NAME[x]
        if x in BY_NX:
            return BY_NX[x]
        if x in ("tfloat32", "float64", "int64", "uint64", "float8_e4m3fn"):
            refuse("dtype %s" % x)
        user_error("unknown dtype %r" % x)
    if x is bool or x is np.bool_:
        return bool_
    try:
        dt = np.dtype(x)
    except TypeError:
        user_error("unknown dtype %r" % (x,))
    if dt == np.bool_:
        return bool_
    nx = name_of(dt)
    if nx is None:
        refuse("dtype %s" % dt)
    return BY_NX[nx]


def promote(a, b):
    """The result dtype of an elementwise op of two dtypes: equal ones stay,
    otherwise fp32 (the engines compute in fp32)."""
    return a if a.nx == b.nx else float32
