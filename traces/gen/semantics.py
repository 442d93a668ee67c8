"""Reference semantics used by generate.py, written from the ISA documents
(docs/parts/dtypes.md, insns-dve.md, insns-pe-dma.md, insns-act-pool.md and
the contract comments of isa/insn.h), in numpy, without reading the
simulator's implementation. Engine values are float64 arrays holding fp32
numbers or exact 32-bit integers.

Arithmetic is done in numpy float32, whose +, -, *, / and sqrt are IEEE
correctly rounded: that is "inputs and result rounded to fp32".
"""
import math

import numpy as np

from formats import r32

F64 = np.float64


def _f(x):
    """Engine values -> float32 (the fp32 rounding of an ALU input)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, dtype=F64).astype(np.float32)


def _d(x):
    return np.asarray(x, dtype=np.float32).astype(F64)


def ieee_max(a, b):
    """max with NaN propagation and -0 < +0 (insns-dve.md, "The ALU")."""
    a = np.asarray(a, F64)
    b = np.asarray(b, F64)
    r = np.where(a > b, a, b)
    r = np.where(a == b, np.where(np.signbit(a), b, a), r)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))


def ieee_min(a, b):
    a = np.asarray(a, F64)
    b = np.asarray(b, F64)
    r = np.where(a < b, a, b)
    r = np.where(a == b, np.where(np.signbit(a), a, b), r)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))


def _pattern(v):
    """An engine value as a 32-bit pattern: round to integer (ties to even),
    saturate to [-2^31, 2^32-1], NaN -> 0; also whether it was negative."""
    v = np.asarray(v, F64)
    r = np.rint(np.where(np.isnan(v), 0.0, v))
    neg = r < 0
    r = np.clip(r, -2147483648.0, 4294967295.0).astype(np.int64)
    return r & 0xFFFFFFFF, neg


def _from_pattern(bits, signed):
    bits = np.asarray(bits, np.int64)
    return np.where(signed & (bits >= 2 ** 31), bits - 2 ** 32, bits).astype(F64)


def nan_result(r, a, b):
    """The NaN rule of the arithmetic ALU ops (insns-dve.md, "The ALU"): a NaN
    result is a if a is NaN, else b if b is NaN, else (an invalid operation:
    0/0, Inf - Inf, 0 * Inf, ...) the positive quiet NaN. Only the sign
    survives a store (the payload becomes the canonical one)."""
    return np.where(np.isnan(r), np.where(np.isnan(a), a, np.where(np.isnan(b), b, np.nan)), r)


def alu(op, a, b):
    """nx_alu_apply: a op b on engine values (broadcasting)."""
    a = np.asarray(a, F64)
    b = np.asarray(b, F64)
    with np.errstate(all="ignore"):
        if op == "bypass":
            return a + 0 * b
        if op in ("add", "subtract", "multiply", "divide"):
            A, B = _f(a), _f(b)
            r = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                 "divide": np.divide}[op](A, B)
            return nan_result(_d(r), a, b)
        if op == "pow":
            # fp32(a^b) of the fp32-rounded inputs, evaluated in double; the
            # traces only use operands whose exact result is an fp32 number
            # or an exact halfway case with a 1-ulp tolerance
            return nan_result(r32(np.power(r32(a), r32(b))), a, b)
        if op == "max":
            return ieee_max(r32(a), r32(b))
        if op == "min":
            return ieee_min(r32(a), r32(b))
        if op == "abs_max":
            return ieee_max(np.abs(r32(a)), np.abs(r32(b)))
        cmp = {"is_equal": np.equal, "not_equal": np.not_equal, "is_ge": np.greater_equal,
               "is_gt": np.greater, "is_le": np.less_equal, "is_lt": np.less}
        if op in cmp:
            return cmp[op](a, b).astype(F64)
        pa, na = _pattern(a)
        pb, nb = _pattern(b)
        signed = na | nb
        if op == "bitwise_and":
            r = pa & pb
        elif op == "bitwise_or":
            r = pa | pb
        elif op == "bitwise_xor":
            r = pa ^ pb
        elif op == "shift_left":
            r = (pa << (pb & 31)) & 0xFFFFFFFF
        elif op == "shift_right":
            # logical: zeros shift in, also for a negative a
            r = pa >> (pb & 31)
        else:
            raise ValueError(op)
        return _from_pattern(r, signed)


BITVEC_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")


def bits_to(dt, v):
    """What the store of a bitvec result into dt holds, as an engine value
    (insns-dve.md, "Bitvec ops"): for an integer dt the low 8/16/32 bits of
    the result's pattern read as dt (two's-complement wrap, not
    saturation); a float dt takes the value (rounded by the store)."""
    v = np.asarray(v, F64)
    if dt not in INT_BITS:
        return v
    bits, signed = INT_BITS[dt]
    w = np.asarray(v, np.int64) & ((1 << bits) - 1)
    if signed:
        w = np.where(w >= 1 << (bits - 1), w - (1 << bits), w)
    return w.astype(F64)


INT_BITS = {"int8": (8, True), "uint8": (8, False), "int16": (16, True),
            "uint16": (16, False), "int32": (32, True), "uint32": (32, False)}


REDUCE_IDENTITY = {"add": -0.0, "multiply": 1.0, "max": -np.inf, "min": np.inf,
                   "abs_max": 0.0, "bitwise_and": 4294967295.0, "bitwise_or": 0.0,
                   "bitwise_xor": 0.0}


def fold(op, xs, identity):
    """r = identity; r = r op x for x in xs (xs: list of arrays, in order)."""
    r = np.full(np.shape(xs[0]), identity, dtype=F64)
    for x in xs:
        r = alu(op, r, x)
    return r


# ---- PE ----

def pe_matmul(w, x):
    """multiply_moving partial sums (insns-pe-dma.md): W [K, M], X [K, N]:
    partial = fp32(W[0][m] X[0][n]); partial = fp32(partial + fp32(W[k][m] X[k][n]))."""
    W, X = _f(w), _f(x)
    acc = np.multiply.outer(W[0], X[0])
    for k in range(1, W.shape[0]):
        acc = acc + np.multiply.outer(W[k], X[k])  # float32 ops: each rounded
    return _d(acc)


# ---- ACT ----

def _act_scalar(f, x):
    """f(x) of one fp32 value, in double precision, per the insns-act-pool.md
    table (special values written out as the table gives them)."""
    if math.isnan(x):
        return math.nan
    if f == "identity":
        return x
    if f == "exp":
        return math.exp(x) if x < 709 else math.inf
    if f == "log":
        if x < 0:
            return math.nan
        return -math.inf if x == 0 else math.log(x)
    if f == "relu":
        return x if x > 0 else 0.0
    if f == "gelu":
        if x == -math.inf:
            return -0.0
        return x * 0.5 * math.erfc(-x / math.sqrt(2.0))
    if f == "gelu_tanh":
        if x == -math.inf:
            return -0.0
        if x == math.inf:
            return math.inf
        u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))
        # 0.5 (1 + tanh u) == 1 / (1 + e^(-2u)), without cancellation
        return x / (1.0 + math.exp(-2.0 * u)) if -2.0 * u < 709 else x * 0.0
    if f == "silu":
        if x == -math.inf:
            return -0.0
        return x / (1.0 + math.exp(-x)) if -x < 709 else x * 0.0
    if f == "sigmoid":
        return 1.0 / (1.0 + math.exp(-x)) if -x < 709 else 0.0
    if f == "tanh":
        return math.tanh(x)
    if f == "square":
        return x * x
    if f == "sqrt":
        if x < 0:
            return math.nan
        return math.sqrt(x) if x != 0 else x  # sqrt(-0) = -0
    if f == "rsqrt":
        if x < 0:
            return math.nan
        if x == 0:
            return math.copysign(math.inf, x)
        return 1.0 / math.sqrt(x)
    if f == "reciprocal":
        if x == 0:
            return math.copysign(math.inf, x)
        return 1.0 / x
    if f == "abs":
        return abs(x)
    if f == "sign":
        return -1.0 if x < 0 else (1.0 if x > 0 else 0.0)
    raise ValueError(f)


def act(f, t):
    """nx_act_apply over an array of fp32 values: f in double, one rounding to fp32."""
    t = r32(t)
    out = np.array([_act_scalar(f, float(v)) for v in t.ravel()], dtype=F64)
    return r32(out.reshape(t.shape))
