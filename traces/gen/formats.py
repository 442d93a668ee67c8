"""Storage formats of the nxsim ISA, written from the format tables in
docs/parts/dtypes.md (not from the simulator's C code), and .npy I/O.

Engine values are numpy float64 arrays (an fp32 number or an exact 32-bit
integer, as docs/parts/dtypes.md "Engine values" says). `store(dt, v)` turns
engine values into the array a .npy file of that dtype holds (one rounding
from the exact value, then the per-format overflow / saturation / NaN rules);
`load(dt, a)` turns such an array back into engine values (exact).

Narrow float formats are handled by one table-driven encoder: every code of
the format is decoded from its (sign, exponent, mantissa) fields, and a value
is encoded by picking the nearest representable value, ties going to the
even code (= the even mantissa). This is round-to-nearest-even by definition,
with no bit tricks to get wrong; the self-test at the bottom cross-checks it
against numpy's own float16 and float32 casts and a bit-level bf16 rounding.
"""
import numpy as np

FLOAT_DTYPES = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")
INT_RANGES = {
    "int8": (-128, 127, "|i1"),
    "uint8": (0, 255, "|u1"),
    "int16": (-32768, 32767, "<i2"),
    "uint16": (0, 65535, "<u2"),
    "int32": (-2147483648, 2147483647, "<i4"),
    "uint32": (0, 4294967295, "<u4"),
}
# .npy descrs (isa/npy.h): numpy types where numpy has one, else a one-field
# structured type whose field name says what the raw bits are.
NPY_DTYPE = {
    "fp32": np.dtype("<f4"),
    "fp16": np.dtype("<f2"),
    "bf16": np.dtype([("bf16", "<u2")]),
    "fp8_e4m3": np.dtype([("fp8_e4m3", "|u1")]),
    "fp8_e5m2": np.dtype([("fp8_e5m2", "|u1")]),
}
for _name, (_lo, _hi, _descr) in INT_RANGES.items():
    NPY_DTYPE[_name] = np.dtype(_descr)

SIZE = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1,
        "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4}


class FloatFormat:
    """A binary float format with `ebits` exponent and `mbits` mantissa bits.

    ieee=True: all-ones exponent is Inf (mantissa 0) or NaN; overflow -> Inf.
    ieee=False (OCP e4m3fn): all-ones exponent is an ordinary binade except
    the single NaN code (all ones); no Inf; beyond max saturates to max.
    """

    def __init__(self, ebits, mbits, bias, ieee, canonical_nan):
        self.ebits, self.mbits, self.bias, self.ieee = ebits, mbits, bias, ieee
        self.nbits = 1 + ebits + mbits
        self.sign_bit = 1 << (ebits + mbits)
        self.canonical_nan = canonical_nan
        emax_field = (1 << ebits) - 1
        if ieee:
            self.max_code = (emax_field << mbits) - 1  # largest finite
            self.inf_code = emax_field << mbits
        else:
            self.max_code = (emax_field << mbits) | ((1 << mbits) - 2)
            self.inf_code = None
        codes = np.arange(self.sign_bit, dtype=np.int64)  # the positive half
        self.positive = self.decode(codes)
        self.finite = self.positive[: self.max_code + 1]  # increasing in code order
        assert np.all(np.diff(self.finite) > 0)

    def decode(self, codes):
        codes = np.asarray(codes, dtype=np.int64)
        m = codes & ((1 << self.mbits) - 1)
        e = (codes >> self.mbits) & ((1 << self.ebits) - 1)
        neg = (codes & self.sign_bit) != 0
        emax_field = (1 << self.ebits) - 1
        sub = m * 2.0 ** (1 - self.bias - self.mbits)
        norm = (1.0 + m / 2.0 ** self.mbits) * 2.0 ** (e - self.bias)
        v = np.where(e == 0, sub, norm)
        if self.ieee:
            v = np.where(e == emax_field, np.where(m == 0, np.inf, np.nan), v)
        else:
            v = np.where((e == emax_field) & (m == (1 << self.mbits) - 1), np.nan, v)
        return np.where(neg, -v, v)

    def encode(self, x):
        """Engine values (float64) -> codes, round to nearest, ties to even."""
        x = np.asarray(x, dtype=np.float64)
        a = np.abs(x)
        out = np.zeros(x.shape, dtype=np.int64)
        finite = np.isfinite(a)
        # nearest representable magnitude: finite[i-1] < a <= finite[i]
        af = np.where(finite, a, 0.0)
        hi = np.searchsorted(self.finite, af, side="left")
        top = hi >= len(self.finite)  # beyond the largest finite value
        hi_c = np.minimum(hi, len(self.finite) - 1)
        lo_c = np.maximum(hi_c - 1, 0)
        d_hi = self.finite[hi_c] - af
        d_lo = af - self.finite[lo_c]
        pick_lo = (d_lo < d_hi) | ((d_lo == d_hi) & (lo_c % 2 == 0))
        code = np.where((d_hi == 0) | ~pick_lo, hi_c, lo_c)
        if self.ieee:
            # Past max: the next value up would be 2^(emax+1), which is where
            # Inf's code sits; RNE between max (odd code) and it picks it
            # exactly when a >= max + ulp(max)/2.
            vmax = self.finite[-1]
            next_up = 2.0 ** ((1 << self.ebits) - 1 - self.bias)
            overflow = top & (af - vmax >= next_up - af)
            code = np.where(overflow, self.inf_code, code)
            code = np.where(np.isinf(a), self.inf_code, code)
        else:
            code = np.where(top | np.isinf(a), self.max_code, code)
        code = np.where(np.signbit(x), code | self.sign_bit, code)
        nan = np.isnan(x)
        code = np.where(nan, self.canonical_nan | np.where(np.signbit(x), self.sign_bit, 0), code)
        out[...] = code
        return out

    def round(self, x):
        """Engine values -> the values this format stores (float64)."""
        return self.decode(self.encode(x))


BF16 = FloatFormat(8, 7, 127, True, 0x7FC0)
FP16 = FloatFormat(5, 10, 15, True, 0x7E00)
E4M3 = FloatFormat(4, 3, 7, False, 0x7F)
E5M2 = FloatFormat(5, 2, 15, True, 0x7E)
NARROW = {"bf16": BF16, "fp16": FP16, "fp8_e4m3": E4M3, "fp8_e5m2": E5M2}


def r32(x):
    """Round engine values to fp32 (RNE, overflow to Inf), canonical NaN."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(np.float32).astype(np.float64)
    return np.where(np.isnan(x), np.copysign(np.nan, x), y)


def round_to(dt, x):
    """The engine value after storing x as dt and loading it back."""
    x = np.asarray(x, dtype=np.float64)
    if dt == "fp32":
        return r32(x)
    if dt in NARROW:
        return NARROW[dt].round(x)
    lo, hi, _ = INT_RANGES[dt]
    r = np.rint(np.where(np.isnan(x), 0.0, x))  # rint: ties to even
    return np.clip(r, lo, hi) + 0.0  # + 0.0 turns -0 into +0


def store(dt, x):
    """Engine values -> numpy array in dt's .npy representation."""
    x = np.asarray(x, dtype=np.float64)
    if dt == "fp32":
        v = r32(x).astype(np.float32)
        bits = v.view(np.uint32)
        canon = np.where(np.signbit(x), 0xFFC00000, 0x7FC00000).astype(np.uint32)
        bits = np.where(np.isnan(x), canon, bits)
        return bits.astype("<u4").view("<f4")
    if dt == "fp16":
        return FP16.encode(x).astype("<u2").view("<f2")
    if dt in NARROW:
        a = np.zeros(x.shape, dtype=NPY_DTYPE[dt])
        a[dt] = NARROW[dt].encode(x)
        return a
    return round_to(dt, x).astype(NPY_DTYPE[dt])


def load(dt, a):
    """numpy array in dt's .npy representation -> engine values (exact)."""
    if dt in ("bf16", "fp8_e4m3", "fp8_e5m2"):
        return NARROW[dt].decode(a[dt].astype(np.int64))
    return np.asarray(a).astype(np.float64)


def exact(dt, x):
    """store() for values that must be exactly representable (inputs)."""
    x = np.asarray(x, dtype=np.float64)
    back = load(dt, store(dt, x))
    same = (back == x) | (np.isnan(back) & np.isnan(x))
    same &= np.signbit(back) == np.signbit(x)
    assert np.all(same), f"value not exactly representable in {dt}: {x[~same][:4]}"
    return store(dt, x)


def save(path, dt, x, representable=False):
    """Writes engine values x as a .npy of dtype dt (C order, v1.0)."""
    arr = exact(dt, x) if representable else store(dt, x)
    assert arr.dtype == NPY_DTYPE[dt]
    np.save(path, np.ascontiguousarray(arr), allow_pickle=False)


def _self_test():
    rng = np.random.default_rng(0)
    # fp16: the table encoder agrees with numpy's float64 -> float16 cast.
    x = np.concatenate([rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000),
                        [65504, 65519.99, 65520, 1e6, -1e6, 2.0 ** -25, 2.0 ** -24 * 1.5,
                         2049, 2051, 0.0, -0.0, np.inf, -np.inf]])
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16).astype(np.int64)
    assert np.array_equal(FP16.encode(x), want)
    # bf16 from fp32 values: bit-level RNE (add 0x7fff + lsb, truncate).
    f = rng.standard_normal(20000).astype(np.float32) * np.float32(3.0) ** rng.integers(-40, 40, 20000).astype(np.float32)
    f = f[np.isfinite(f)]
    bits = f.view(np.uint32).astype(np.int64)
    want = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    assert np.array_equal(BF16.encode(f.astype(np.float64)), want)
    # Documented examples (docs/parts/dtypes.md).
    assert BF16.encode(16842753.0) == 0x4B81
    assert BF16.encode(1 + 2.0 ** -8) == 0x3F80 and BF16.encode(1 + 3 * 2.0 ** -8) == 0x3F82
    assert E4M3.round(np.array([449, 464, 480, 1e6, np.inf, 432, 1.0625])).tolist() == \
        [448, 448, 448, 448, 448, 448, 1.0]
    assert E4M3.encode(np.nan) == 0x7F and E4M3.encode(-np.nan) == 0xFF
    assert E5M2.round(np.array([61439.996, 61440])).tolist() == [57344, np.inf]
    assert FP16.round(np.array([2.0 ** -25])).tolist() == [0.0]
    assert E4M3.finite[-1] == 448 and E5M2.finite[-1] == 57344
    assert E4M3.finite[1] == 2.0 ** -9 and E5M2.finite[1] == 2.0 ** -16
    assert round_to("int8", np.array([300, -0.5, 2.5, 3.5, -2.5, np.nan, np.inf])).tolist() == \
        [127, 0, 2, 4, -2, 0, 127]


_self_test()
