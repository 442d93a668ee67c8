"""Shared pieces of the numpy cross-check (tests/numpy/): the ISA dtypes as
numpy arrays, .npy files as `nxsim` reads them, and a runner for
`nxsim run`.

Written from docs/parts/dtypes.md (formats, rounding rules, the .npy form of
the types numpy lacks: a one-field structured dtype, e.g.
[('bf16', '<u2')]) and `nxsim run --help`; nothing here comes from nxsim's
code. Values travel as float64 arrays of exactly representable values plus
the dtype's name; `encode` turns them into the storage array, `decode` back.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

import numpy as np

# name -> (mantissa bits, min normal exponent, max finite, saturating)
FLOAT_FORMATS = {
    "fp32": (23, -126, float(np.finfo(np.float32).max), False),
    "bf16": (7, -126, 3.3895313892515355e38, False),
    "fp16": (10, -14, 65504.0, False),
    "fp8_e4m3": (3, -6, 448.0, True),
    "fp8_e5m2": (2, -14, 57344.0, False),
}
FLOATS = list(FLOAT_FORMATS)
INTS = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16,
        "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32}
ALL_DTYPES = FLOATS + list(INTS)
STRUCT = {"bf16": np.dtype([("bf16", "<u2")]),
          "fp8_e4m3": np.dtype([("fp8_e4m3", "u1")]),
          "fp8_e5m2": np.dtype([("fp8_e5m2", "u1")])}
BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32}
SIZE = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1,
        "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4}


def eps(dt):
    """Machine epsilon (the ulp of 1) of a float dtype."""
    return 2.0 ** -FLOAT_FORMATS[dt][0]


def unit_roundoff(dt):
    """Half an ulp of 1: the relative error bound of one rounding."""
    return eps(dt) / 2


def tiny(dt):
    """The smallest subnormal: the absolute error floor of one rounding."""
    m, emin, _, _ = FLOAT_FORMATS[dt]
    return 2.0 ** (emin - m)


def round_to(x, dt):
    """float64 -> the nearest value of float dtype dt (round to nearest,
    ties to even, subnormals kept, one rounding; overflow to +-Inf, or to
    +-448 for the saturating fp8_e4m3; NaN stays NaN), as float64."""
    x = np.asarray(x, dtype=np.float64)
    m, emin, fmax, sat = FLOAT_FORMATS[dt]
    ax = np.abs(x)
    fin = np.isfinite(ax) & (ax > 0)
    _, e = np.frexp(np.where(fin, ax, 1.0))          # ax = f 2^e, f in [0.5, 1)
    q = np.maximum(e - 1 - m, emin - m)               # exponent of the ulp
    r = np.where(fin, np.ldexp(np.round(np.ldexp(np.where(fin, ax, 0.0), -q)), q), ax)
    if sat:
        r = np.where(np.isnan(r), r, np.minimum(r, fmax))
    else:
        r = np.where(r > fmax, np.inf, r)
    return np.copysign(r, x)


def _e4m3_table():
    v = np.empty(256)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        if e == 15 and m == 7:
            val = np.nan
        elif e == 0:
            val = m / 8 * 2.0 ** -6
        else:
            val = (1 + m / 8) * 2.0 ** (e - 7)
        v[c] = -val if s else val
    return v


E4M3 = _e4m3_table()
_E4M3_CODE = {E4M3[c]: c for c in range(0x7f)}


def encode(values, dt):
    """float64 (or int) values -> the storage array nxsim reads for dtype dt
    (values are rounded to dt first; integers must be in range)."""
    x = np.asarray(values)
    if dt in INTS:
        return np.ascontiguousarray(x.astype(INTS[dt]))
    r = round_to(x, dt)
    if dt == "fp32":
        return r.astype(np.float32)
    if dt == "fp16":
        return r.astype(np.float16)
    if dt == "bf16":
        bits = (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    elif dt == "fp8_e5m2":
        bits = (r.astype(np.float16).view(np.uint16) >> 8).astype(np.uint8)
    else:  # fp8_e4m3
        flat = r.ravel()
        bits = np.empty(flat.shape, np.uint8)
        for i, v in enumerate(flat):
            if np.isnan(v):
                bits[i] = 0xff if np.signbit(v) else 0x7f
            else:
                bits[i] = _E4M3_CODE[abs(v)] | (0x80 if np.signbit(v) else 0)
        bits = bits.reshape(r.shape)
    return from_bits(bits, dt)


def from_bits(bits, dt):
    """An unsigned-integer array of raw encodings -> the storage array."""
    bits = np.ascontiguousarray(bits, dtype=BITS[SIZE[dt]])
    if dt in STRUCT:
        return bits.view(STRUCT[dt]).reshape(bits.shape)
    if dt == "fp32":
        return bits.view(np.float32)
    if dt == "fp16":
        return bits.view(np.float16)
    return bits.view(INTS[dt])


def bits_of(arr):
    """The raw encodings of a storage array, as unsigned integers."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.names:
        arr = arr[arr.dtype.names[0]]
    return arr.view(BITS[arr.dtype.itemsize]).copy()


def dtype_name(arr):
    """The ISA dtype name of a storage array."""
    if arr.dtype.names:
        return arr.dtype.names[0]
    return {np.dtype(np.float32): "fp32", np.dtype(np.float16): "fp16"}.get(
        arr.dtype, next((k for k, t in INTS.items() if np.dtype(t) == arr.dtype), None))


def decode(arr):
    """A storage array -> float64 values (exact)."""
    dt = dtype_name(arr)
    if dt in INTS or dt in ("fp32", "fp16"):
        return np.asarray(arr).astype(np.float64)
    b = bits_of(arr)
    if dt == "bf16":
        return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dt == "fp8_e5m2":
        return (b.astype(np.uint16) << 8).view(np.float16).astype(np.float64)
    return E4M3[b]


def random_values(rng, shape, dt, lo=-1.0, hi=1.0):
    """Uniform values in [lo, hi) rounded to dt (integers for int dtypes)."""
    if dt in INTS:
        info = np.iinfo(INTS[dt])
        return rng.integers(info.min, info.max, size=shape, endpoint=True)
    return round_to(rng.uniform(lo, hi, size=shape), dt)


def random_bits(rng, shape, dt):
    """Arbitrary bit patterns of dt (NaN payloads, subnormals, infinities)."""
    size = SIZE[dt]
    return rng.integers(0, 1 << (8 * size), size=shape, dtype=np.uint64).astype(BITS[size])


class RunResult:
    def __init__(self, argv, proc, outs, workdir):
        self.argv = argv
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.outs = outs
        self.dir = workdir

    def command(self):
        return shlex.join(self.argv)

    def describe(self):
        return "%s\n  exit %d; stderr: %s\n  (inputs kept in %s)" % (
            self.command(), self.rc, self.stderr.strip(), self.dir)

    def cleanup(self):
        """Removes the case's files (called when the case passed)."""
        if self.dir and not os.environ.get("NXSIM_NUMPY_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


class Runner:
    """Runs `nxsim run` on .npy files in a scratch directory per case under
    workdir; a passing case's directory is removed, a failing one is kept
    with its command line (cmd.txt), so every failure has a reproducer."""

    def __init__(self, nxsim, workdir):
        self.nxsim = nxsim
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)

    def run(self, key, inputs=(), attrs=None, nouts=1, mode="model", extra=(), timeout=900, raw=None):
        """mode: 'model' (SystemC, the default), 'race' (model +
        --race-check) or 'functional'. inputs: storage arrays. Returns a
        RunResult whose outs are the loaded result arrays (None where no
        file was written). raw: {input index: bytes} written as that .npy
        file instead of the array (malformed files)."""
        d = tempfile.mkdtemp(prefix=re.sub(r"\W", "_", key)[:24] + "-", dir=self.workdir)
        argv = [self.nxsim, "run", key]
        for i, a in enumerate(inputs):
            p = os.path.join(d, "in%d.npy" % i)
            if raw and i in raw:
                with open(p, "wb") as f:
                    f.write(raw[i])
            else:
                np.save(p, np.ascontiguousarray(a))
            argv += ["-i", p]
        outs = [os.path.join(d, "out%d.npy" % i) for i in range(nouts)]
        for p in outs:
            argv += ["-o", p]
        for k, v in (attrs or {}).items():
            argv += ["-a", "%s=%s" % (k, v if isinstance(v, RawAttr) else json.dumps(v))]
        if mode == "functional":
            argv.append("--functional")
        elif mode == "race":
            argv.append("--race-check")
        argv += list(extra)
        with open(os.path.join(d, "cmd.txt"), "w") as f:
            f.write(shlex.join(argv) + "\n")      # a shell command line
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        loaded = [np.load(p) if os.path.exists(p) else None for p in outs]
        return RunResult(argv, proc, loaded, d)


class RawAttr(str):
    """An attribute value passed to -a as written (not JSON-encoded)."""
