"""nxsim.nki.language: the nki.language calls nxsim traces
(docs/parts/nki.md lists each with the nxsim instruction it becomes).

Names NKI defines that are not here are refused by name when a kernel
reaches for them (module __getattr__), never approximated.
"""
import builtins
import inspect
import numbers
import re

import numpy as _np

from . import _emit
from ._dtype import (DType, bfloat16, bool_, dtype_of, float8_e4m3, float8_e5m2, float16, float32, int8, int16,
                     int32, promote, uint8, uint16, uint32)
from ._errors import refuse, user_error
from ._index import arange, ds, mgrid
from ._tensor import AP, HbmTensor, Storage, Tile, broadcast, column, finalize, read
from ._trace import current as _current_trace_var
from ._trace import trace


def _current_trace():
    return _current_trace_var.get()

# ---- memory ----
sbuf = "sbuf"
psum = "psum"
hbm = "hbm"
shared_hbm = "shared_hbm"
private_hbm = "private_hbm"


class par_dim(int):
    """nl.par_dim(n): marks the partition dimension of a tile shape."""


class fp32:
    """nl.fp32: FP32 constants. min is the bit pattern 0xff7fffff, the most
    negative finite fp32 value (the NKI reference's nki.language.fp32), the
    "minus infinity" flash attention starts its running maxima from."""
    min = float(_np.finfo(_np.float32).min)


class tile_size:
    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1


# ---- launch grid ----
def program_id(axis=0):
    t = trace()
    if not 0 <= axis < len(t.grid):
        user_error("nl.program_id(%d): the launch grid has %d dimension(s)" % (axis, len(t.grid)))
    return t.program_id[axis]


def num_programs(axes=None):
    t = trace()
    if axes is None:
        n = 1
        for g in t.grid:
            n *= g
        return n
    if not 0 <= axes < len(t.grid):
        user_error("nl.num_programs(%d): the launch grid has %d dimension(s)" % (axes, len(t.grid)))
    return t.grid[axes]


class _Cores(int):
    """A launch-grid size with cores in it: nl.nc(n) (n programs, one per
    core) or nl.spmd_dim with an nl.nc factor. count is the core factor,
    stride the product of the factors after it: program i of the dimension
    runs on core (i // stride) % count."""

    def __new__(cls, n, count=None, stride=1):
        v = int.__new__(cls, n)
        v.count, v.stride = (n if count is None else count), stride
        return v


def nc(n):
    """nl.nc(n): n programs, one per core of the VNC grid (kernel[nl.nc(2)])."""
    if not isinstance(n, int) or n < 1:
        user_error("nl.nc(%r): a core count is a positive integer" % (n,))
    return _Cores(n)


def spmd_dim(*factors):
    """nl.spmd_dim(nl.nc(2), 2) or nl.spmd_dim(2, nl.nc(2)): one launch-grid
    dimension of the factors' product. With the cores outermost, program i of
    4 runs on core i // 2 (consecutive programs on one core); with the cores
    last, on core i % 2 (the public multi-core tensor-addition tutorial's
    even and odd programs); in general core (i // (the factors after the
    core factor)) % cores (docs/parts/nki.md)."""
    if not factors or builtins.any(not isinstance(f, int) or f < 1 for f in factors):
        user_error("nl.spmd_dim%r: the factors are positive integers (nl.nc(n) for the cores)" % (factors,))
    at = [i for i, f in enumerate(factors) if isinstance(f, _Cores)]
    if len(at) > 1:
        user_error("nl.spmd_dim%r: at most one nl.nc factor" % (factors,))
    n = 1
    for f in factors:
        n *= f
    if not at:
        return n
    stride = 1
    for f in factors[at[0] + 1:]:
        stride *= f
    return _Cores(n, int(factors[at[0]]), stride)


def program_ndim():
    return len(trace().grid)


# ---- loops (unrolled at trace time; the program order is the loop order) ----
def affine_range(*args, **kwargs):
    return range(*args)


def sequential_range(*args, **kwargs):
    return range(*args)


def static_range(*args, **kwargs):
    return range(*args)


# ---- tensors ----
def _shape(shape):
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return tuple(shape)


def ndarray(shape, dtype, buffer=None, name="", **kwargs):
    shape = _shape(shape)
    dt = dtype_of(dtype)
    buffer = buffer or sbuf
    t = trace()
    if buffer in (shared_hbm, hbm, private_hbm):
        if builtins.any(not isinstance(s, numbers.Integral) or s < 1 for s in shape):
            user_error("nl.ndarray: a tensor dimension must be a positive integer, got %s" % (list(shape),))
        if buffer == shared_hbm:
            k = t.out_ordinal
            t.out_ordinal += 1
            if k < len(t.shared):
                st = t.shared[k]
                if st.shape != shape or st.dtype != dt.nx:
                    user_error("nl.ndarray: program %s declares shared_hbm tensor %d as %s %s, program 0 as %s %s"
                               % (list(t.program_id), k, list(shape), dt, list(st.shape), st.dtype))
            else:
                st = Storage(_tensor_name(name, "out%d" % k, t), "output", dt, shape)
                t.shared.append(st)
                t.tensors.append(st)
        else:
            st = Storage(_tensor_name(name, "scratch%d" % t.scratch_count, t), "scratch", dt, shape)
            t.scratch_count += 1
            t.tensors.append(st)
        return HbmTensor(st, dt, shape)
    if buffer not in (sbuf, psum):
        user_error("nl.ndarray: unknown buffer %r (nl.sbuf, nl.psum, nl.shared_hbm, nl.hbm, nl.private_hbm)"
                   % (buffer,))
    pdims = [i for i, s in enumerate(shape) if isinstance(s, par_dim)]
    if len(pdims) > 1:
        user_error("nl.ndarray: more than one nl.par_dim in %s" % (list(shape),))
    return Tile(buffer, dt, shape, pdim=pdims[0] if pdims else 0, name=name or "tile")


def _tensor_name(name, default, t):
    n = "".join(c if c.isalnum() or c in "_." else "_" for c in (name or default))[:63]
    if not n or not (n[0].isalpha() or n[0] == "_"):
        n = "t_" + n
    taken = {s.name for s in t.tensors}
    base, i = n, 1
    while n in taken:
        n = "%s_%d" % (base[:58], i)
        i += 1
    return n


def full(shape, fill_value, dtype, buffer=None, name="", **kwargs):
    x = ndarray(shape, dtype, buffer=buffer, name=name)
    if isinstance(x, HbmTensor):
        if fill_value != 0:
            refuse("nl.full in HBM with a nonzero value")
        return x  # HBM starts zeroed (docs/parts/nki.md)
    insn = _emit.memset(x, fill_value)
    return _emit.produced(x, insn, None)


def zeros(shape, dtype, buffer=None, name="", **kwargs):
    return full(shape, 0, dtype, buffer=buffer, name=name)


def ones(shape, dtype, buffer=None, name="", **kwargs):
    return full(shape, 1, dtype, buffer=buffer, name=name)


def empty_like(a, dtype=None, buffer=None, name="", **kwargs):
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or (a.buffer if a.buffer != "hbm" else shared_hbm),
                   name=name)


def zeros_like(a, dtype=None, buffer=None, name="", **kwargs):
    return zeros(a.shape, dtype or a.dtype, buffer=buffer or (a.buffer if a.buffer != "hbm" else shared_hbm),
                 name=name)


def ones_like(a, dtype=None, buffer=None, name="", **kwargs):
    return ones(a.shape, dtype or a.dtype, buffer=buffer or (a.buffer if a.buffer != "hbm" else shared_hbm),
                name=name)


# ---- movement ----
def load(src, mask=None, dtype=None, **kwargs):
    if not isinstance(src, AP):
        user_error("nl.load: expected an HBM tensor, got %r" % (src,))
    if src.mem != "hbm":
        user_error("nl.load reads HBM; %s is in %s (use nl.copy on chip)" % (src.name or "the operand", src.mem))
    if src.ndim == 0:
        # one element (flash attention loads its seed[0]): a [1, 1] tile,
        # on partition 0
        src = AP("hbm", src.dtype, [[1, 1], [1, 1]], offset=src.offset, pdim=None, storage=src.storage,
                 checks=src.checks, name=src.name)
    dst = _emit.new_tile(sbuf, dtype or src.dtype, src.shape, "nl.load result")
    return _emit.produced(dst, _emit.dma(dst, src, mask), mask)


def store(dst, value, mask=None, **kwargs):
    if not isinstance(dst, AP) or dst.mem != "hbm":
        user_error("nl.store writes HBM; dst is %s" % (getattr(dst, "mem", None) or repr(dst)))
    if isinstance(value, numbers.Number):
        v = _emit.new_tile(sbuf, dst.dtype, dst.shape, "nl.store value")
        _emit.memset(v, value)
        value = v
    value = read(value)
    if not isinstance(value, AP) or value.mem == "hbm":
        user_error("nl.store: value must be an SBUF or PSUM tile")
    if value.mem == "psum":  # the DMA cannot read PSUM: a copy to SBUF first, as NKI does
        tmp = _emit.new_tile(sbuf, value.dtype, value.shape, "PSUM staging tile")
        _emit.tensor_copy(tmp, value, mask=mask)
        value = tmp
    if value.shape != dst.shape:
        value = broadcast(value, dst.shape) if len(value.shape) == len(dst.shape) else value
    _emit.dma(dst, value, mask)


def load_transpose2d(src, mask=None, dtype=None, **kwargs):
    """dma_transpose (SP) of a 2-D [A, B] HBM region into a [B, A] SBUF tile."""
    if mask is not None:
        refuse("nl.load_transpose2d with mask=")
    if not isinstance(src, AP) or src.mem != "hbm" or src.ndim != 2:
        user_error("nl.load_transpose2d reads a 2-D region of an HBM tensor")
    if src.dtype.itemsize != 2 or (dtype is not None and dtype_of(dtype).nx != src.dtype.nx):
        return _load_transpose_pe(src, dtype)
    dst = _emit.new_tile(sbuf, src.dtype, (src.shape[1], src.shape[0]), "nl.load_transpose2d result")
    return _emit.produced(dst, _emit.dma(dst, src, None, "dma_transpose"), None)


def _load_transpose_pe(src, dtype):
    """load_transpose2d of what the DMA transpose cannot move (4-byte data,
    or a conversion on the way: the SD-attention tutorial loads fp32 q and k
    as bf16): the [A, B] region loaded as it is, transposed on the PE into
    PSUM (exact) and copied out in the result dtype."""
    from . import isa

    a, b = src.shape
    g = trace().geo
    if a > g["partitions"] or b > g["partitions"]:
        user_error("nl.load_transpose2d of a [%d, %d] region of %s data: each side at most %d (it goes through a PE "
                   "transpose; the DMA transpose of 2-byte data has no such limit)" % (a, b, src.dtype, g["partitions"]))
    t = load(src)
    pt = isa.nc_transpose(t, engine="pe", dtype=float32)
    return copy(pt, dtype=dtype_of(dtype) if dtype is not None else src.dtype)


def copy(src, dtype=None, mask=None, **kwargs):
    src = read(_emit.on_chip(src, "nl.copy"))
    dst = _emit.new_tile(sbuf, dtype or src.dtype, src.shape, "nl.copy result")
    return _emit.produced(dst, _emit.tensor_copy(dst, src, mask=mask), mask)


def static_cast(x, dtype, **kwargs):
    """A tile: nl.copy into dtype. A NumPy array outside a kernel (the
    public flash-attention test casts its inputs so before the launch):
    the array converted with the engines' rounding (nxsim.convert: round
    to nearest even; float64 is first rounded to fp32), in nxsim's NumPy
    dtype for it (nxsim.bf16 for nl.bfloat16)."""
    if isinstance(x, _np.ndarray) and _current_trace() is None:
        from .._dtypes import convert

        return convert(x, dtype_of(dtype).nx)
    return copy(x, dtype=dtype)


# ---- elementwise ----
_ALU = {}  # nl function -> nxsim ALU op (docs/ISA.md, "ALU operations")


def _binary(alu, x, y, dtype=None, mask=None, engine="dve", what=None):
    what = what or alu
    x_num, y_num = isinstance(x, numbers.Number), isinstance(y, numbers.Number)
    if x_num and y_num:
        refuse("nl.%s of two Python numbers (compute them in Python)" % what)
    if x_num or y_num:
        t = read(_emit.on_chip(y if x_num else x, "nl." + what))
        dt = dtype_of(dtype) if dtype else t.dtype
        dst = _emit.new_tile(sbuf, dt, t.shape, "nl.%s result" % what)
        params = [("op0", alu)] + ([("rev0", "1")] if x_num else [])
        insn = _emit.compute(engine, "tensor_scalar", dst, [("in", t), ("scalar0", _emit.imm(x if x_num else y))],
                             params, mask)
        return _emit.produced(dst, insn, mask)
    a = read(_emit.on_chip(x, "nl." + what))
    b = read(_emit.on_chip(y, "nl." + what))
    shape = _broadcast_shape(a.shape, b.shape, what)
    dt = dtype_of(dtype) if dtype else promote(a.dtype, b.dtype)
    dst = _emit.new_tile(sbuf, dt, shape, "nl.%s result" % what)
    # a [P, 1] operand is a per-partition scalar: tensor_scalar streams one input
    if b.free_size() == 1 and a.shape == shape and a.free_size() > 1:
        insn = _emit.compute(engine, "tensor_scalar", dst, [("in", a), ("scalar0", b)], [("op0", alu)], mask)
    elif a.free_size() == 1 and b.shape == shape and b.free_size() > 1:
        insn = _emit.compute(engine, "tensor_scalar", dst, [("in", b), ("scalar0", a)],
                             [("op0", alu), ("rev0", "1")], mask)
    else:
        insn = _emit.compute(engine, "tensor_tensor", dst, [("in0", broadcast(a, shape)),
                                                            ("in1", broadcast(b, shape))], [("op0", alu)], mask)
    return _emit.produced(dst, insn, mask)


def _broadcast_shape(s, t, what):
    if len(s) != len(t):
        user_error("nl.%s: operands of %d and %d dimensions (%s, %s)" % (what, len(s), len(t), list(s), list(t)))
    out = []
    for a, b in zip(s, t):
        if a != b and 1 not in (a, b):
            user_error("nl.%s: shapes %s and %s do not broadcast" % (what, list(s), list(t)))
        out.append(builtins.max(a, b))
    return tuple(out)


def _make_binary(name, alu):
    def f(x, y, dtype=None, mask=None, **kwargs):
        return _binary(alu, x, y, dtype=dtype, mask=mask, what=name)

    f.__name__ = name
    f.__doc__ = "nl.%s: tensor_tensor / tensor_scalar op0=%s on DVE." % (name, alu)
    _ALU[f] = alu
    return f


add = _make_binary("add", "add")
subtract = _make_binary("subtract", "subtract")
multiply = _make_binary("multiply", "multiply")
divide = _make_binary("divide", "divide")
maximum = _make_binary("maximum", "max")
minimum = _make_binary("minimum", "min")
power = _make_binary("power", "pow")
equal = _make_binary("equal", "is_equal")
not_equal = _make_binary("not_equal", "not_equal")
greater = _make_binary("greater", "is_gt")
greater_equal = _make_binary("greater_equal", "is_ge")
less = _make_binary("less", "is_lt")
less_equal = _make_binary("less_equal", "is_le")
bitwise_and = _make_binary("bitwise_and", "bitwise_and")
bitwise_or = _make_binary("bitwise_or", "bitwise_or")
bitwise_xor = _make_binary("bitwise_xor", "bitwise_xor")
left_shift = _make_binary("left_shift", "shift_left")
right_shift = _make_binary("right_shift", "shift_right")

# NumPy's functions name the same operators where NKI takes an op= (the
# "Supported Math Operators" table of the NKI reference lists both)

for _f, _op in ((_np.add, "add"), (_np.subtract, "subtract"), (_np.multiply, "multiply"), (_np.divide, "divide"),
                (_np.maximum, "max"), (_np.minimum, "min"), (_np.power, "pow"), (_np.equal, "is_equal"),
                (_np.not_equal, "not_equal"), (_np.greater, "is_gt"), (_np.greater_equal, "is_ge"),
                (_np.less, "is_lt"), (_np.less_equal, "is_le"), (_np.bitwise_and, "bitwise_and"),
                (_np.bitwise_or, "bitwise_or"), (_np.bitwise_xor, "bitwise_xor"), (_np.left_shift, "shift_left"),
                (_np.right_shift, "shift_right"),
                # the reductions' names for the same operators (np.max as a
                # tensor_reduce op, as the SD-attention tutorial passes it)
                (_np.max, "max"), (_np.min, "min"), (_np.sum, "add"), (_np.prod, "multiply")):
    _ALU[_f] = _op

_ACT = {}  # nl function -> nxsim activation function (docs/ISA.md, "Activation functions")


def activate(func, x, bias=None, scale=1.0, reduce_op=None, reduce_res=None, dtype=None, mask=None, what="nl"):
    """ACT's activation: func(x * scale + bias), optionally reducing into reduce_res."""
    a = read(_emit.on_chip(x, what))
    dst = _emit.new_tile(sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "%s result" % what)
    ins = [("in", a), ("scale", _emit.scalar_operand(scale, a, what + " scale")),
           ("bias", _emit.scalar_operand(0.0 if bias is None else bias, a, what + " bias"))]
    params = [("func", func)]
    if reduce_res is not None:
        if mask is not None:
            refuse("%s with reduce_res and mask= (slice the operand instead)" % what)
        r = _emit.on_chip(reduce_res, what + " reduce_res")
        if r.partitions() != a.partitions() or r.free_size() != 1:
            user_error("%s: reduce_res must be a [%d, 1] tile, got %s" % (what, a.partitions(), list(r.shape)))
        op = _ALU.get(reduce_op, reduce_op if isinstance(reduce_op, str) else None)
        if op not in ("add", "max", "min", "multiply", "abs_max"):
            user_error("%s: reduce_op must be nl.add, nl.maximum, nl.minimum or nl.multiply" % what)
        ins.append(("acc_out", r))
        params.append(("op0", op))
    insn = _emit.compute("act", "activation", dst, ins, params, mask)
    return _emit.produced(dst, insn, mask)


def _make_unary(name, func):
    def f(x, dtype=None, mask=None, **kwargs):
        return activate(func, x, dtype=dtype, mask=mask, what="nl." + name)

    f.__name__ = name
    f.__doc__ = "nl.%s: activation func=%s on ACT." % (name, func)
    _ACT[f] = func
    return f


exp = _make_unary("exp", "exp")
log = _make_unary("log", "log")
sqrt = _make_unary("sqrt", "sqrt")
rsqrt = _make_unary("rsqrt", "rsqrt")
reciprocal = _make_unary("reciprocal", "reciprocal")
square = _make_unary("square", "square")
abs = _make_unary("abs", "abs")  # noqa: A001 (NKI's name)
tanh = _make_unary("tanh", "tanh")
sigmoid = _make_unary("sigmoid", "sigmoid")
silu = _make_unary("silu", "silu")
gelu = _make_unary("gelu", "gelu")
gelu_apprx_tanh = _make_unary("gelu_apprx_tanh", "gelu_tanh")
relu = _make_unary("relu", "relu")
sign = _make_unary("sign", "sign")
identity = _make_unary("identity", "identity")


for _f, _fn in ((_np.exp, "exp"), (_np.log, "log"), (_np.sqrt, "sqrt"), (_np.square, "square"), (_np.abs, "abs"),
                 (_np.tanh, "tanh"), (_np.reciprocal, "reciprocal"), (_np.sign, "sign")):
    _ACT[_f] = _fn


def negative(x, dtype=None, mask=None, **kwargs):
    return _binary("multiply", x, -1.0, dtype=dtype, mask=mask, what="negative")


def where(condition, x, y, dtype=None, mask=None, **kwargs):
    """select on DVE: condition != 0 ? x : y (tiles of one shape, or numbers)."""
    c = read(_emit.on_chip(condition, "nl.where condition"))
    ops = []
    for v, name in ((x, "x"), (y, "y")):
        if isinstance(v, numbers.Number):
            ops.append(_emit.imm(v))
        else:
            v = read(_emit.on_chip(v, "nl.where " + name))
            if v.shape != c.shape:
                v = broadcast(v, c.shape)
            ops.append(v)
    dts = [o.dtype for o in ops if isinstance(o, AP)]
    dt = dtype_of(dtype) if dtype else (dts[0] if dts else float32)
    dst = _emit.new_tile(sbuf, dt, c.shape, "nl.where result")
    insn = _emit.compute("dve", "select", dst, [("pred", c), ("on_true", ops[0]), ("on_false", ops[1])], mask=mask)
    return _emit.produced(dst, insn, mask)


# ---- reductions over free axes ----
def reduce(alu, x, axis, dtype=None, keepdims=False, mask=None, negate=False, what="reduce"):
    a = read(_emit.on_chip(x, "nl." + what))
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = tuple(d + a.ndim if d < 0 else d for d in axes)
    if 0 in axes:
        refuse("nl.%s over the partition axis (axis 0)" % what)
    if builtins.any(not 0 < d < a.ndim for d in axes):
        user_error("nl.%s: axis %s out of range for a tile of %d dimensions" % (what, list(axes), a.ndim))
    kept = [d for d in range(1, a.ndim) if d not in axes]
    out_shape = tuple(1 if (d in axes) else n for d, n in enumerate(a.shape)) if keepdims else \
        tuple(a.shape[d] for d in [0] + kept)
    if len(out_shape) == 1:
        out_shape = (out_shape[0], 1)
    dst = _emit.new_tile(sbuf, dtype_of(dtype) if dtype else a.dtype, out_shape, "nl.%s result" % what)
    narrowed = finalize([a], mask)
    if narrowed is None:
        return dst
    na = narrowed[0]
    d = dst if mask is None else dst[na.pstart - a.pstart:na.pstart - a.pstart + na.partitions()]
    # runs of kept / reduced axes render as their own merged dims; the axes
    # bit mask counts the rendered dims
    groups, run = [], []
    for k in range(1, na.ndim):
        if run and (run[-1] in axes) != (k in axes):
            groups.append(run)
            run = []
        run.append(k)
    if run:
        groups.append(run)
    bits, k = 0, 0
    for g, dims in zip(groups, na.free_dims(groups)):
        for _ in dims:
            if g[0] in axes:
                bits |= 1 << k
            k += 1
    if k > 4:
        refuse("nl.%s over a tile of more than 4 free dimensions" % what)
    params = [("op0", alu), ("axes", str(bits))] + ([("negate", "1")] if negate else [])
    insn = _emit.compute("dve", "tensor_reduce", d, [("in", na)], params, None, groups=[None, groups])
    return _emit.produced(dst, insn, mask)


def sum(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):  # noqa: A001 (NKI's name)
    return reduce("add", x, axis, dtype, keepdims, mask, what="sum")


def max(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):  # noqa: A001
    return reduce("max", x, axis, dtype, keepdims, mask, what="max")


def min(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):  # noqa: A001
    return reduce("min", x, axis, dtype, keepdims, mask, what="min")


def prod(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):
    return reduce("multiply", x, axis, dtype, keepdims, mask, what="prod")


def _truth_reduce(alu, x, axis, dtype, keepdims, mask, what):
    """x != 0 (1 or 0, DVE), then its min (all) or max (any) over the axes:
    two instructions, as NKI's own lowering of a boolean reduction needs a
    comparison before the reduce."""
    a = read(_emit.on_chip(x, "nl." + what))
    truth = _binary("not_equal", a, 0, dtype=float32, mask=mask, what=what)
    return reduce(alu, truth, axis, dtype or bool_, keepdims, mask, what=what)


def all(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):  # noqa: A001 (NKI's name)
    return _truth_reduce("min", x, axis, dtype, keepdims, mask, "all")


def any(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):  # noqa: A001 (NKI's name)
    return _truth_reduce("max", x, axis, dtype, keepdims, mask, "any")


def mean(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):
    a = x if isinstance(x, AP) else None
    s = reduce("add", x, axis, float32, keepdims, mask, what="mean")
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    n = 1
    for d in axes:
        n *= a.shape[d]
    return divide(s, n, dtype=dtype or a.dtype)


def softmax(x, axis, dtype=None, compute_dtype=None, mask=None, **kwargs):
    """max, exp(x - max) with its row sum on ACT, reciprocal, multiply."""
    a = _emit.on_chip(x, "nl.softmax")
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    if a.ndim != 2 or axes not in ((1,), (-1,)):
        refuse("nl.softmax other than over axis 1 of a 2-D tile")
    m = reduce("max", a, 1, float32, True, mask, what="softmax")
    negm = _binary("multiply", m, -1.0, dtype=float32, what="softmax")
    ssum = _emit.new_tile(sbuf, float32, (a.shape[0], 1), "nl.softmax sum")
    e = activate("exp", a, bias=negm, reduce_op="add", reduce_res=ssum, dtype=float32, mask=mask, what="nl.softmax")
    r = activate("reciprocal", ssum, dtype=float32, what="nl.softmax")
    return _binary("multiply", e, r, dtype=dtype or a.dtype, mask=mask, what="softmax")


# ---- matrix multiply and transpose ----
def matmul(x, y, transpose_x=False, mask=None, **kwargs):
    from . import isa

    if transpose_x:
        return isa.nc_matmul(x, y, mask=mask)
    xt = transpose(x)
    xs = copy(xt, dtype=x.dtype)
    return isa.nc_matmul(xs, y, mask=mask)


def transpose(x, dtype=None, mask=None, **kwargs):
    from . import isa

    return isa.nc_transpose(x, mask=mask)


# ---- assignments ([...] = and +=) ----
_RETARGETABLE = {"select", "dma_copy", "tensor_tensor", "tensor_scalar", "scalar_tensor_tensor", "tensor_reduce",
                 "tensor_copy", "tensor_tensor_scan", "activation", "memset", "iota", "affine_select",
                 "bn_stats", "bn_aggr", "multiply_moving", "transpose"}


def _can_retarget(value, dst):
    p = getattr(value, "producer", None)
    if p is None or not isinstance(value, Tile) or value.shape != dst.shape or p.mnemonic not in _RETARGETABLE:
        return False
    if trace().insns[-1] is not p.last():  # moving an earlier write could pass reads of dst in between
        return False
    if p.mnemonic == "dma_copy":
        return dst.mem == "sbuf" and dst.dtype.nx == value.dtype.nx
    if p.mnemonic in ("multiply_moving",) or (p.mnemonic == "transpose" and p.engine == "pe"):
        return dst.mem == "psum" and (dst.dtype.nx == "fp32" or dst.dtype.nx == value.dtype.nx)
    if p.mnemonic == "iota":
        return dst.mem == "sbuf"
    return True


def _assign(dst, value):
    """dst[...] = value: the instruction that made value writes dst instead
    (when value is a fresh tile nothing read yet), else a tensor_copy. A
    value computed under mask=False (no instruction ran) writes nothing."""
    dst = column(dst)
    if isinstance(value, Tile) and getattr(value, "masked_off", False):
        return
    if dst.tile is not None:
        dst.tile.masked_off = False
    if isinstance(value, AP) and value.assigned and value.render() == dst.render():
        return
    if dst.mem == "hbm":
        user_error("assignment into an HBM tensor (use nl.store)")
    if isinstance(value, numbers.Number):
        _emit.memset(dst, value)
        return
    if not isinstance(value, AP):
        user_error("cannot assign %r to a tile" % (value,))
    if _can_retarget(value, dst):
        value.producer.retarget(dst)
        value.producer = None
        value.redirect = dst
        return
    v = read(value)
    if v.mem == "hbm":
        user_error("assigning an HBM tensor to a tile (use nl.load)")
    if v.shape != dst.shape:
        v = broadcast(v, dst.shape)
    _emit.tensor_copy(dst, v)


_PSUM_AT = re.compile(r"^psum:[^@]*@(\d+)")


def _immediate(text):
    """The value of an immediate slot ("#0.0", "#0:int32"), or None."""
    try:
        return float(text[1:].split(":")[0]) if text.startswith("#") else None
    except ValueError:
        return None


def _zeroed_untouched(dst, t):
    """The memset of nl.zeros that wrote all of PSUM tile dst, if nothing has
    touched dst's bytes since (read() clears the producer; a write into part
    of the tile, or any other access of its bytes, shows in the slots of
    the instructions after the memset): then the first matmul may start the
    accumulation itself (acc=0) and the memset goes, as the NKI compiler
    folds the zeros into the matmul group (docs/parts/nki.md). dst may be
    a view of all of the tile (flash attention's pv_psum[:, :] += ...)."""
    if not isinstance(dst, Tile):
        base = dst.tile
        if not isinstance(base, Tile) or base.redirect is not None or dst.render() != base.render():
            return None
        dst = base
    z = getattr(dst, "producer", None)
    if z is None or z.mnemonic != "memset" or _immediate(dict(z.slots).get("value", "")) != 0.0:
        return None
    at = len(t.insns) - 1
    while at >= 0 and t.insns[at] is not z:  # searched from the end: the memset is near
        at -= 1
    if at < 0:
        return None
    lo = dst.offset_bytes
    hi = lo + dst.free_size() * dst.dtype.itemsize
    for insn in t.insns[at + 1:-1]:  # the last one is the matmul itself
        if insn.core != dst.core:
            continue
        for _, text in insn.slots:
            m = _PSUM_AT.match(text)
            if m and lo <= int(m.group(1)) < hi:
                return None
    return at


def _accumulate(dst, value):
    """dst += value: a fresh matmul result accumulates in PSUM (acc=1), or
    starts the accumulation when dst is nl.zeros nothing touched since."""
    target, dst = dst, column(dst)
    if isinstance(value, Tile) and getattr(value, "masked_off", False):
        return target
    p = getattr(value, "producer", None)
    t = trace()
    if p is not None and p.mnemonic == "multiply_moving" and isinstance(value, Tile) and dst.mem == "psum" \
            and dst.dtype.nx == "fp32" and value.shape == dst.shape and t.insns[-1] is p:
        p.retarget(dst)
        zero_at = _zeroed_untouched(dst, t)
        if zero_at is not None:
            del t.insns[zero_at]
        else:
            p.set_param("acc", "1")
        # an accumulation group is no single instruction's: nothing to retarget
        if dst.tile is not None:
            dst.tile.producer = None
        value.producer = None
        value.redirect = dst
    else:
        if isinstance(value, numbers.Number):
            s = _binary("add", dst, value, dtype=dst.dtype)
        else:
            s = _binary("add", dst, value, dtype=dst.dtype)
        _assign(dst, s)
    dst.assigned = target.assigned = True
    return target  # what `x += v` rebinds x to: the object it named


# ---- random numbers: refused ----
def _no_rng(what):
    refuse("%s (the engines' random number generator: nxsim does not model its stream, so the values could "
           "only be made up)" % what)


def random_seed(seed=None, mask=None, **kwargs):
    _no_rng("nl.random_seed")


def dropout(x, rate=None, dtype=None, mask=None, **kwargs):
    _no_rng("nl.dropout")


def rand(shape=None, dtype=None, **kwargs):
    _no_rng("nl.rand")


# ---- debugging and the rest ----
def device_print(prefix, x, **kwargs):
    """Prints x's values as they are at this point of the program, after the
    run (a DMA into an extra output tensor; PSUM is copied to SBUF first)."""
    t = trace()
    v = read(x) if isinstance(x, AP) else None
    if v is None:
        user_error("nl.device_print: expected a tensor, got %r" % (x,))
    if v.mem == "psum":
        tmp = _emit.new_tile(sbuf, v.dtype, v.shape, "nl.device_print staging tile")
        _emit.tensor_copy(tmp, v)
        v = tmp
    st = Storage(_tensor_name("", "print%d" % len(t.prints), t), "output", v.dtype, v.shape)
    t.tensors.append(st)
    t.prints.append((str(prefix), st, list(t.program_id)))
    _emit.dma(HbmTensor(st, v.dtype, v.shape), v)


_emit.wrap_bool_masks(globals(), (_ALU, _ACT))


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    refuse("nl.%s" % name)


__all__ = sorted(n for n, v in list(globals().items())
                 if not n.startswith("_") and not inspect.ismodule(v) and n not in ("AP", "HbmTensor", "Storage", "Tile",
                                                                                 "broadcast", "finalize", "read",
                                                                                 "refuse", "user_error", "trace",
                                                                                 "promote", "dtype_of", "activate",
                                                                                 "reduce"))
