#!/usr/bin/python3
"""Generates every nxsim conformance trace under traces/.

    /usr/bin/python3 traces/gen/generate.py            # all traces
    /usr/bin/python3 traces/gen/generate.py NAME...    # some of them

Each function below writes one trace directory: the program (program.nxs),
its inputs (in_<tensor>.npy) and the expected outputs (expected_<tensor>.npy)
computed here in numpy from the semantics the ISA documents state
(docs/parts/*.md), NOT by running the simulator. The comment above each
function states the semantics it encodes. Helpers:
  formats.py    dtype storage rules (RNE, overflow, saturation, NaN) and .npy
  semantics.py  the ALU, reductions, PE matmul order, activation functions
  tracekit.py   writing a trace directory
Needs numpy only (Debian's /usr/bin/python3 has numpy 1.24).
"""
import math
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep traces/gen free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import formats  # noqa: E402
from formats import BF16, E4M3, FP16, r32, round_to  # noqa: E402
from semantics import REDUCE_IDENTITY, act, alu, bits_to, fold, ieee_max, pe_matmul  # noqa: E402
from tracekit import Trace  # noqa: E402

NAN, INF = math.nan, math.inf

# Values that exercise the conversion rules of docs/parts/dtypes.md.
SPECIAL_F32 = [
    [0.0, -0.0, INF, -INF, NAN, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 448, 449, 464, 480, 1e6, 2.5, 3.5, -2.5, -0.5],
    [65504, 65520 - 2 ** -8, 65520, 57344, 61440 - 2 ** -8, 61440, 2 ** -24, 2 ** -25, 3 * 2 ** -26,
     2 ** -9, 2 ** -10, 3 * 2 ** -11, 2 ** -149, 300, -129, 127.5],
]
SPECIAL_I32 = [16777217, 16842753, -16842753, 2147483647, -2147483648, 70000, -70000, 255,
               256, -1, 0, 65535, 65536, 127, -128, 33554435]


def with_rows(rows, rest):
    """rest with its first len(rows) rows replaced by rows."""
    out = np.array(rest, dtype=np.float64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


# ---------------------------------------------------------------- DMA

def dma_cast():
    """dma_copy between HBM and SBUF (and HBM->HBM) with casting and unusual
    access patterns (insns-pe-dma.md "dma_copy", dtypes.md):
      - different dtypes: value converted by the store rules (fp32 -> bf16 /
        fp16 / fp8 RNE, e4m3 saturates at 448, e5m2/fp16 overflow to Inf,
        NaN -> canonical NaN, float -> int RNE + saturation, int -> float one
        rounding from the exact integer);
      - equal dtypes: an exact bit copy (a NaN payload survives);
      - rows of an HBM AP are partition_stride elements apart (negative and
        1 here: a reversed and a transposed read); free dims may differ on
        the two sides, elements pair up in row-major order."""
    t = Trace("dma_cast")
    x = with_rows(SPECIAL_F32, t.normal((32, 16)) * 10.0 ** t.ints((32, 16), -3, 3))
    x = round_to("fp32", x)
    xi = with_rows([SPECIAL_I32], t.ints((32, 16), -1000, 1000))
    xi[1:4] = t.ints((3, 16), -2 ** 31, 2 ** 31 - 1)
    raw = formats.exact("fp32", np.where(np.isnan(x), 0.0, x))
    bits = raw.view(np.uint32).copy()
    bits[0, 4] = 0x7FA00001  # a NaN with a payload (signalling, even)
    bits[5, 5] = 0xFFC12345  # a negative quiet NaN with a payload
    raw = bits.view("<f4")
    x[5, 5] = -NAN
    t.input_raw("x", raw)
    t.input("xi", "int32", xi)
    t.program("""
        ; dma_copy casts, strides and HBM partition strides. The SBUF copy of x
        ; lives at partitions 96..127 (a DMA has no start-partition rule).
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [32,16]
        .tensor xi input int32 [32,16]
        .tensor y_bf16 output bf16 [32,16]
        .tensor y_fp16 output fp16 [32,16]
        .tensor y_e4m3 output fp8_e4m3 [32,16]
        .tensor y_e5m2 output fp8_e5m2 [32,16]
        .tensor y_i8 output int8 [32,16]
        .tensor y_u16 output uint16 [32,16]
        .tensor y_i32 output int32 [32,16]
        .tensor yi_f32 output fp32 [32,16]
        .tensor yi_bf16 output bf16 [32,16]
        .tensor yi_u8 output uint8 [32,16]
        .tensor yi_fp16 output fp16 [32,16]
        .tensor y_rev output fp32 [32,16]
        .tensor y_t output fp32 [16,32]
        .tensor y_il output fp32 [32,16]
        .engine sp
            dma_copy dst=sbuf:fp32[96:128]@0{1:16} src=hbm:fp32[32/16]@x{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@64{1:16} src=hbm:int32[32/16]@xi{1:16} queue=1 bound=0 inc=sem0
            ; transposed read: 16 rows 1 element apart, 32 elements 16 apart
            dma_copy dst=sbuf:fp32[0:16]@128{1:32} src=hbm:fp32[16/1]@x{16:32} queue=2 bound=0 inc=sem0
            ; HBM -> HBM with a cast (int32 70000 -> fp16 Inf)
            dma_copy dst=hbm:fp16[32/16]@yi_fp16{1:16} src=hbm:int32[32/16]@xi{1:16} queue=3 bound=0
            dma_copy dst=hbm:bf16[32/16]@y_bf16{1:16} src=sbuf:fp32[96:128]@0{1:16} queue=4 bound=0 wait=sem0>=3
            dma_copy dst=hbm:fp16[32/16]@y_fp16{1:16} src=sbuf:fp32[96:128]@0{1:16} queue=4 bound=0
            dma_copy dst=hbm:fp8_e4m3[32/16]@y_e4m3{1:16} src=sbuf:fp32[96:128]@0{1:16} queue=5 bound=0
            dma_copy dst=hbm:fp8_e5m2[32/16]@y_e5m2{1:16} src=sbuf:fp32[96:128]@0{1:16} queue=5 bound=0
            dma_copy dst=hbm:int8[32/16]@y_i8{1:16} src=sbuf:fp32[96:128]@0{1:16} queue=6 bound=0
            dma_copy dst=hbm:uint16[32/16]@y_u16{1:16} src=sbuf:fp32[96:128]@0{1:16} queue=6 bound=0
            dma_copy dst=hbm:int32[32/16]@y_i32{1:16} src=sbuf:fp32[96:128]@0{1:16} queue=7 bound=0
            dma_copy dst=hbm:fp32[32/16]@yi_f32{1:16} src=sbuf:int32[0:32]@64{1:16} queue=7 bound=0
            dma_copy dst=hbm:bf16[32/16]@yi_bf16{1:16} src=sbuf:int32[0:32]@64{1:16} queue=8 bound=0
            dma_copy dst=hbm:uint8[32/16]@yi_u8{1:16} src=sbuf:int32[0:32]@64{1:16} queue=8 bound=0
            ; rows and elements reversed: partition stride -16, free stride -1,
            ; starting at the last element of y_rev (31*64 + 15*4 = 2044 bytes in)
            dma_copy dst=hbm:fp32[32/-16]@y_rev+2044{-1:16} src=sbuf:fp32[96:128]@0{1:16} queue=9 bound=0
            dma_copy dst=hbm:fp32[16/32]@y_t{1:32} src=sbuf:fp32[0:16]@128{1:32} queue=9 bound=0
            ; y_il[p, 2i+j] = x[p, i+8j]: src dims (stride 1 count 8, stride 8 count 2)
            dma_copy dst=hbm:fp32[32/16]@y_il{1:16} src=sbuf:fp32[96:128]@0{1:8,8:2} queue=10 bound=0
    """)
    for name, dt in (("y_bf16", "bf16"), ("y_fp16", "fp16"), ("y_e4m3", "fp8_e4m3"),
                     ("y_e5m2", "fp8_e5m2"), ("y_i8", "int8"), ("y_u16", "uint16"),
                     ("y_i32", "int32")):
        t.expect(name, dt, x)  # x: fp32 values (the NaN payloads are just NaN here)
    t.expect("yi_f32", "fp32", xi)
    t.expect("yi_bf16", "bf16", xi)
    t.expect("yi_u8", "uint8", xi)
    t.expect("yi_fp16", "fp16", xi)
    # equal dtypes: bit copies of the raw input (payloads kept)
    t.expect_raw("y_rev", raw[::-1, ::-1])
    t.expect_raw("y_t", raw.T)
    t.expect_raw("y_il", raw.reshape(32, 2, 8).transpose(0, 2, 1).reshape(32, 16))
    t.tolerance("""
        # Exact comparison everywhere; the equal-dtype copies must also keep
        # NaN payloads bit for bit (insns-pe-dma.md: "an exact bit copy").
        y_rev bits
        y_t bits
        y_il bits
    """)


def dma_gather():
    """Indirect dma_copy, gather (insns-pe-dma.md "Indirect"): row p reads src
    row idx[p] = offsets[p, 0]; an HBM row r starts partition_stride * r
    elements in, an SBUF row r is partition start + r. With oob_skip an index
    outside [0, bound) leaves dst row p untouched (here: the memset value).
    uint32 offsets 4294967295 and 2147483648 are out of bounds, not negative."""
    t = Trace("dma_gather")
    tab = t.normal((20, 8), 4.0)
    idx = np.array([3, 0, 19, -1, 20, 7, 7, 12, 25, 1, 2, -5, 18, 5, 4, 19], dtype=np.float64)
    uidx = np.array([19, 0, 4294967295, 3, 20, 8, 8, 1, 2147483648, 11, 10, 9, 6, 5, 4, 3],
                    dtype=np.float64)
    t.input("tab", "fp32", tab)
    t.input("idx", "int32", idx.reshape(16, 1))
    t.input("uidx", "uint32", uidx.reshape(16, 1))
    t.program("""
        ; gather 16 rows out of a 20-row table, from HBM (int32 offsets) and
        ; from SBUF (uint32 offsets, fp32 -> bf16 cast); out-of-bounds rows skipped
        .machine trn2
        .semaphores 3
        .tensor tab input fp32 [20,8]
        .tensor idx input int32 [16,1]
        .tensor uidx input uint32 [16,1]
        .tensor y_hbm output fp32 [16,8]
        .tensor y_sbuf output bf16 [16,8]
        .engine dve
            memset dst=sbuf:fp32[0:16]@128{1:8} value=#-1 wait=sem0>=3 inc=sem1
            memset dst=sbuf:bf16[0:32]@192{1:8} value=#-2:bf16 inc=sem1
        .engine sp
            dma_copy dst=sbuf:int32[0:16]@0{} src=hbm:int32[16/1]@idx{} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:uint32[0:16]@4{1:1} src=hbm:uint32[16/1]@uidx{1:1} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:20]@64{1:8} src=hbm:fp32[20/8]@tab{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@128{1:8} src=hbm:fp32[16/8]@tab{1:8} offsets=sbuf:int32[0:16]@0{} queue=2 bound=20 oob_skip=1 wait=sem1>=2 inc=sem2
            dma_copy dst=sbuf:bf16[0:16]@192{1:8} src=sbuf:fp32[0:16]@64{1:8} offsets=sbuf:uint32[0:16]@4{1:1} queue=3 bound=20 oob_skip=1 inc=sem2
            dma_copy dst=hbm:fp32[16/8]@y_hbm{1:8} src=sbuf:fp32[0:16]@128{1:8} queue=4 bound=0 wait=sem2>=2
            dma_copy dst=hbm:bf16[16/8]@y_sbuf{1:8} src=sbuf:bf16[0:16]@192{1:8} queue=4 bound=0
    """)
    y_hbm = np.full((16, 8), -1.0)
    y_sbuf = np.full((16, 8), -2.0)
    for p in range(16):
        if 0 <= idx[p] < 20:
            y_hbm[p] = tab[int(idx[p])]
        if 0 <= uidx[p] < 20:
            y_sbuf[p] = tab[int(uidx[p])]
    t.expect("y_hbm", "fp32", y_hbm)
    t.expect("y_sbuf", "bf16", y_sbuf)


def dma_scatter_acc():
    """Indirect dma_copy, scatter (insns-pe-dma.md): row p writes dst row
    idx[p]. With acc=1, dst = store(fp32(fp32(dst) + fp32(src))), duplicate
    indices accumulating in order p = 0..P-1 (each step rounded to fp32,
    then to dst's dtype: bf16 for out_bf16). Without acc a duplicate index
    ends with the last row written. oob_skip skips -1, 12 and 100 (bound 12).
    Also HBM -> HBM copies (with a cast) to initialise the destinations."""
    t = Trace("dma_scatter_acc")
    base = t.normal((12, 8), 100.0)
    vals = t.normal((16, 8), 1.0) * 10.0 ** t.ints((16, 8), -4, 2)
    vals = round_to("fp32", vals)
    idx = np.array([2, 5, 2, 11, -1, 0, 5, 12, 2, 7, 100, 3, 3, 9, 0, 6], dtype=np.float64)
    t.input("base", "fp32", base)
    t.input("vals", "fp32", vals)
    t.input("idx", "int32", idx.reshape(16, 1))
    t.program("""
        ; scatter-add of 16 rows into a 12-row table, duplicates accumulate in order
        .machine trn2
        .semaphores 3
        .tensor base input fp32 [12,8]
        .tensor vals input fp32 [16,8]
        .tensor idx input int32 [16,1]
        .tensor out output fp32 [12,8]
        .tensor out_bf16 output bf16 [12,8]
        .tensor out_sb output fp32 [16,8]
        .engine pool
            memset dst=sbuf:fp32[32:48]@64{1:8} value=#9 inc=sem1
        .engine sp
            dma_copy dst=hbm:fp32[12/8]@out{1:8} src=hbm:fp32[12/8]@base{1:8} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:bf16[12/8]@out_bf16{1:8} src=hbm:fp32[12/8]@base{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@0{1:8} src=hbm:fp32[16/8]@vals{1:8} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:16]@32{1:1} src=hbm:int32[16/1]@idx{1:1} queue=3 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[16/8]@out{1:8} src=sbuf:fp32[0:16]@0{1:8} offsets=sbuf:int32[0:16]@32{1:1} queue=4 bound=12 acc=1 oob_skip=1 scatter=1 wait=sem0>=4 inc=sem2
            dma_copy dst=hbm:bf16[16/8]@out_bf16{1:8} src=sbuf:fp32[0:16]@0{1:8} offsets=sbuf:int32[0:16]@32{1:1} queue=5 bound=12 acc=1 oob_skip=1 scatter=1 inc=sem2
            ; plain scatter into SBUF rows = partitions 32 + idx
            dma_copy dst=sbuf:fp32[32:48]@64{1:8} src=sbuf:fp32[0:16]@0{1:8} offsets=sbuf:int32[0:16]@32{1:1} queue=6 bound=12 oob_skip=1 scatter=1 wait=sem1>=1 inc=sem2
            dma_copy dst=hbm:fp32[16/8]@out_sb{1:8} src=sbuf:fp32[32:48]@64{1:8} queue=7 bound=0 wait=sem2>=3
    """)
    out = base.copy()
    out_b = round_to("bf16", base)
    out_sb = np.full((16, 8), 9.0)
    for p in range(16):
        i = int(idx[p])
        if not 0 <= i < 12:
            continue
        out[i] = r32(r32(out[i]) + r32(vals[p]))
        out_b[i] = round_to("bf16", r32(out_b[i] + vals[p]))
        out_sb[i] = vals[p]
    t.expect("out", "fp32", out)
    t.expect("out_bf16", "bf16", out_b)
    t.expect("out_sb", "fp32", out_sb)


def dma_transpose():
    """dma_transpose (insns-pe-dma.md): src [P, F] -> dst [F, P],
    dst[f, p] = src[p, f], bit-exact, 2-byte dtypes; HBM->SBUF, SBUF->HBM,
    HBM->HBM; a strided source (every other column) transposes the view."""
    t = Trace("dma_transpose")
    a = t.normal((8, 24), 3.0, "bf16")
    a[0, :4] = [-0.0, INF, -INF, 2 ** -133]  # -0, infinities, smallest subnormal
    b = t.ints((16, 12), -32768, 32767)
    c = t.normal((4, 6), 100.0, "fp16")
    d = t.ints((8, 10), 0, 65535)
    raw_a = formats.exact("bf16", a)
    raw_a["bf16"][2, 5] = 0x7F81  # a signalling-NaN pattern with a payload
    t.input_raw("a", raw_a)
    t.input("b", "int16", b)
    t.input("c", "fp16", c)
    t.input("d", "uint16", d)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor a input bf16 [8,24]
        .tensor b input int16 [16,12]
        .tensor c input fp16 [4,6]
        .tensor d input uint16 [8,10]
        .tensor y_a output bf16 [24,8]
        .tensor y_b output int16 [12,16]
        .tensor y_c output fp16 [6,4]
        .tensor y_d output uint16 [5,8]
        .engine sp
            dma_transpose dst=sbuf:bf16[0:24]@0{1:8} src=hbm:bf16[8/24]@a{1:24} queue=0 inc=sem0
            dma_copy dst=sbuf:int16[32:48]@0{1:12} src=hbm:int16[16/12]@b{1:12} queue=1 bound=0 inc=sem0
            ; in place: c's 24 elements become c^T, laid out [6,4] (the source is
            ; read completely before anything is written), then copied to y_c
            dma_transpose dst=hbm:fp16[6/4]@c{1:4} src=hbm:fp16[4/6]@c{1:6} queue=2 inc=sem1
            ; every other column of d: src [8 rows, 5 elements 2 apart]
            dma_transpose dst=hbm:uint16[5/8]@y_d{1:8} src=hbm:uint16[8/10]@d{2:5} queue=3
            dma_copy dst=hbm:bf16[24/8]@y_a{1:8} src=sbuf:bf16[0:24]@0{1:8} queue=4 bound=0 wait=sem0>=2
            dma_transpose dst=hbm:int16[12/16]@y_b{1:16} src=sbuf:int16[32:48]@0{1:12} queue=5
            dma_copy dst=hbm:fp16[6/4]@y_c{1:4} src=hbm:fp16[6/4]@c{1:4} queue=2 bound=0 wait=sem1>=1
    """)
    t.expect_raw("y_a", raw_a.T)
    t.tolerance("""
        # dma_transpose is bit-exact and so is an equal-dtype dma_copy
        # (insns-pe-dma.md): y_a keeps a's NaN payload.
        * bits
    """)
    t.expect("y_b", "int16", b.T)
    t.expect("y_c", "fp16", c.T)
    t.expect("y_d", "uint16", d[:, ::2].T)


# ---------------------------------------------------------------- PE

def matmul():
    """load_stationary + multiply_moving (insns-pe-dma.md): with the
    stationary W [K, M] and moving X [K, N],
      partial[m, n] = fp32 sum over k of fp32(W[k, m] X[k, n]), added in k
                      order starting from the k = 0 product (no FMA);
      dst = acc ? fp32(dst + partial) : partial      (fp32 in PSUM).
    C = A1^T B1 (bf16, K=64) + A2^T B2 (fp16, K=32, acc=1) into one PSUM
    tile; an fp32 matmul at PSUM partitions 64.. of bank 1 (product rounding
    matters); an fp8 matmul (e4m3 stationary, e5m2 moving) at partitions 32..
    of bank 2. PSUM is read back by tensor_copy on DVE (fp32) and ACT (bf16)."""
    t = Trace("matmul")
    a1 = t.normal((64, 32), 1.0, "bf16")
    b1 = t.normal((64, 48), 1.0, "bf16")
    a2 = t.normal((32, 32), 1.0, "fp16")
    b2 = t.normal((32, 48), 1.0, "fp16")
    a3 = t.normal((16, 16), 1.0)
    b3 = t.normal((16, 16), 1.0)
    a4 = t.normal((16, 8), 2.0, "fp8_e4m3")
    b4 = t.normal((16, 8), 2.0, "fp8_e5m2")
    for n, dt, v in (("a1", "bf16", a1), ("b1", "bf16", b1), ("a2", "fp16", a2), ("b2", "fp16", b2),
                     ("a3", "fp32", a3), ("b3", "fp32", b3), ("a4", "fp8_e4m3", a4),
                     ("b4", "fp8_e5m2", b4)):
        t.input(n, dt, v)
    t.program("""
        ; SBUF bytes per partition: a1 @0 (64) b1 @64 (96) a2 @256 b2 @320
        ; a3 @512 b3 @576 a4 @640 b4 @656; results @1024..
        .machine trn2
        .semaphores 3
        .tensor a1 input bf16 [64,32]
        .tensor b1 input bf16 [64,48]
        .tensor a2 input fp16 [32,32]
        .tensor b2 input fp16 [32,48]
        .tensor a3 input fp32 [16,16]
        .tensor b3 input fp32 [16,16]
        .tensor a4 input fp8_e4m3 [16,8]
        .tensor b4 input fp8_e5m2 [16,8]
        .tensor c output fp32 [32,48]
        .tensor c_bf16 output bf16 [32,48]
        .tensor c3 output fp32 [16,16]
        .tensor c4 output fp32 [8,8]
        .engine pe
            load_stationary src=sbuf:bf16[0:64]@0{1:32} wait=sem0>=8
            multiply_moving dst=psum:fp32[0:32]@0{1:48} moving=sbuf:bf16[0:64]@64{1:48}
            load_stationary src=sbuf:fp16[0:32]@256{1:32}
            multiply_moving dst=psum:fp32[0:32]@0{1:48} moving=sbuf:fp16[0:32]@320{1:48} acc=1 inc=sem1
            load_stationary src=sbuf:fp32[0:16]@512{1:16}
            multiply_moving dst=psum:fp32[64:80]@2048{1:16} moving=sbuf:fp32[0:16]@576{1:16} inc=sem1
            load_stationary src=sbuf:fp8_e4m3[0:16]@640{1:8}
            multiply_moving dst=psum:fp32[32:40]@4096{1:8} moving=sbuf:fp8_e5m2[0:16]@656{1:8} inc=sem1
        .engine dve
            tensor_copy dst=sbuf:fp32[0:32]@1024{1:48} in=psum:fp32[0:32]@0{1:48} wait=sem1>=3 inc=sem2
            tensor_copy dst=sbuf:fp32[64:80]@1024{1:16} in=psum:fp32[64:80]@2048{1:16} inc=sem2
            tensor_copy dst=sbuf:fp32[32:40]@1024{1:8} in=psum:fp32[32:40]@4096{1:8} inc=sem2
        .engine act
            tensor_copy dst=sbuf:bf16[0:32]@1280{1:48} in=psum:fp32[0:32]@0{1:48} wait=sem1>=3 inc=sem2
        .engine sp
            dma_copy dst=sbuf:bf16[0:64]@0{1:32} src=hbm:bf16[64/32]@a1{1:32} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:bf16[0:64]@64{1:48} src=hbm:bf16[64/48]@b1{1:48} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp16[0:32]@256{1:32} src=hbm:fp16[32/32]@a2{1:32} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:fp16[0:32]@320{1:48} src=hbm:fp16[32/48]@b2{1:48} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@512{1:16} src=hbm:fp32[16/16]@a3{1:16} queue=4 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@576{1:16} src=hbm:fp32[16/16]@b3{1:16} queue=5 bound=0 inc=sem0
            dma_copy dst=sbuf:fp8_e4m3[0:16]@640{1:8} src=hbm:fp8_e4m3[16/8]@a4{1:8} queue=6 bound=0 inc=sem0
            dma_copy dst=sbuf:fp8_e5m2[0:16]@656{1:8} src=hbm:fp8_e5m2[16/8]@b4{1:8} queue=7 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/48]@c{1:48} src=sbuf:fp32[0:32]@1024{1:48} queue=0 bound=0 wait=sem2>=4
            dma_copy dst=hbm:bf16[32/48]@c_bf16{1:48} src=sbuf:bf16[0:32]@1280{1:48} queue=1 bound=0
            dma_copy dst=hbm:fp32[16/16]@c3{1:16} src=sbuf:fp32[64:80]@1024{1:16} queue=2 bound=0
            dma_copy dst=hbm:fp32[8/8]@c4{1:8} src=sbuf:fp32[32:40]@1024{1:8} queue=3 bound=0
    """)
    c = r32(pe_matmul(a1, b1) + pe_matmul(a2, b2))
    # sanity: the fp32 result is close to the exact product (not part of the check)
    assert np.allclose(c, a1.T @ b1 + a2.T @ b2, rtol=1e-4, atol=1e-4)
    t.expect("c", "fp32", c)
    t.expect("c_bf16", "bf16", c)
    t.expect("c3", "fp32", pe_matmul(a3, b3))
    t.expect("c4", "fp32", pe_matmul(a4, b4))


def transpose():
    """transpose (insns-pe-dma.md): dst[f, p] = src[p, f] for src [P, F].
    PE: SBUF -> PSUM, dst dtype equal to src's (bit move) or fp32 (exact
    widening). DVE: <= 32 x 32, SBUF or PSUM on either side, same dtype,
    bit-exact (an fp8 NaN code and -0 survive); a DVE transpose of a PSUM
    block of the PE result gives back the source rows widened to fp32, and of
    the bf16 PE result the source rows bit for bit (a bf16 NaN payload
    survives PE transpose + DVE transpose; tensor_copy, by contrast,
    canonicalises NaNs, so t_pe_bf16 is compared with NaN == NaN)."""
    t = Trace("transpose")
    s = t.normal((64, 32), 2.0, "bf16")
    s[0, :3] = [-0.0, INF, -INF]
    s[1, 2] = NAN
    si = t.ints((32, 16), -2 ** 31, 2 ** 31 - 1)
    s8 = t.normal((8, 24), 8.0, "fp8_e4m3")
    s8[0, :3] = [-0.0, NAN, -448]
    raw = formats.exact("bf16", np.where(np.isnan(s), 0.0, s))
    raw["bf16"][1, 2] = 0xFFA1  # a negative NaN with a payload
    t.input_raw("s", raw)
    t.input("si", "int32", si)
    t.input("s8", "fp8_e4m3", s8)
    t.program("""
        .machine trn2
        .semaphores 3
        .tensor s input bf16 [64,32]
        .tensor si input int32 [32,16]
        .tensor s8 input fp8_e4m3 [8,24]
        .tensor t_pe_f32 output fp32 [32,64]
        .tensor t_pe_bf16 output bf16 [32,64]
        .tensor t_dve_i32 output int32 [16,32]
        .tensor t_dve_psum output fp32 [32,32]
        .tensor t_dve_e4m3 output fp8_e4m3 [24,8]
        .tensor t_pe_dve_bf16 output bf16 [32,32]
        .engine pe
            transpose dst=psum:fp32[0:32]@0{1:64} src=sbuf:bf16[0:64]@0{1:32} wait=sem0>=3 inc=sem1
            transpose dst=psum:bf16[0:32]@2048{1:64} src=sbuf:bf16[0:64]@0{1:32} inc=sem1
        .engine dve
            transpose dst=sbuf:int32[64:80]@256{1:32} src=sbuf:int32[32:64]@64{1:16} wait=sem0>=3
            transpose dst=sbuf:fp8_e4m3[0:24]@512{1:8} src=sbuf:fp8_e4m3[96:104]@128{1:24}
            tensor_copy dst=sbuf:fp32[0:32]@1024{1:64} in=psum:fp32[0:32]@0{1:64} wait=sem1>=2
            tensor_copy dst=sbuf:bf16[0:32]@1536{1:64} in=psum:bf16[0:32]@2048{1:64}
            transpose dst=sbuf:fp32[0:32]@768{1:32} src=psum:fp32[0:32]@0{1:32}
            transpose dst=sbuf:bf16[0:32]@1792{1:32} src=psum:bf16[0:32]@2048{1:32} inc=sem2
        .engine sp
            dma_copy dst=sbuf:bf16[0:64]@0{1:32} src=hbm:bf16[64/32]@s{1:32} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[32:64]@64{1:16} src=hbm:int32[32/16]@si{1:16} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp8_e4m3[96:104]@128{1:24} src=hbm:fp8_e4m3[8/24]@s8{1:24} queue=2 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/64]@t_pe_f32{1:64} src=sbuf:fp32[0:32]@1024{1:64} queue=0 bound=0 wait=sem2>=1
            dma_copy dst=hbm:bf16[32/64]@t_pe_bf16{1:64} src=sbuf:bf16[0:32]@1536{1:64} queue=1 bound=0
            dma_copy dst=hbm:int32[16/32]@t_dve_i32{1:32} src=sbuf:int32[64:80]@256{1:32} queue=2 bound=0
            dma_copy dst=hbm:fp32[32/32]@t_dve_psum{1:32} src=sbuf:fp32[0:32]@768{1:32} queue=3 bound=0
            dma_copy dst=hbm:fp8_e4m3[24/8]@t_dve_e4m3{1:8} src=sbuf:fp8_e4m3[0:24]@512{1:8} queue=4 bound=0
            dma_copy dst=hbm:bf16[32/32]@t_pe_dve_bf16{1:32} src=sbuf:bf16[0:32]@1792{1:32} queue=5 bound=0
    """)
    t.expect("t_pe_f32", "fp32", s.T)
    t.expect("t_pe_bf16", "bf16", s.T)
    t.expect("t_dve_i32", "int32", si.T)
    t.expect("t_dve_psum", "fp32", s[:32, :32])
    t.expect("t_dve_e4m3", "fp8_e4m3", s8.T)
    t.expect_raw("t_pe_dve_bf16", raw[:32, :32])
    t.tolerance("""
        # Bit-exact moves (insns-pe-dma.md: PE transpose to the same dtype and
        # DVE transpose keep NaN payloads and -0; equal-dtype DMA copies are
        # bit copies). The rest is compared exactly (any NaN == any NaN).
        t_pe_dve_bf16 bits
        t_dve_i32 bits
        t_dve_e4m3 bits
    """)


# ---------------------------------------------------------------- DVE

TT_FLOAT_OPS = ["add", "subtract", "multiply", "divide", "max", "min", "abs_max", "pow",
                "is_equal", "not_equal", "is_ge", "is_gt", "is_le", "is_lt"]
TT_INT_OPS = ["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"]


def tensor_tensor():
    """tensor_tensor: dst[p, e] = in0[p, e] op0 in1[p, e] with the ALU of
    insns-dve.md: arithmetic ops round inputs and result to fp32 (x/0 = Inf,
    0/0 = NaN); max/min propagate NaN and order -0 < +0; abs_max =
    max(|a|, |b|); comparisons give 1.0/0.0 (NaN compares false, -0 == +0);
    bitwise ops and shifts act on 32-bit patterns, shift_right is logical,
    and an int32 dst gets the result's 32 bits. pow uses operands whose result is exact. One op on
    POOL (same semantics), writing bf16 at partitions 64..95."""
    t = Trace("tensor_tensor")
    a = t.normal((32, 16), 3.0)
    b = t.normal((32, 16), 3.0)
    b[:, :3] = a[:, :3]  # equal values for the comparisons
    a[0, 3:8] = [-0.0, 0.0, 5.0, 0.0, INF]
    b[0, 3:8] = [0.0, -0.0, 0.0, 0.0, 1.0]
    a[1, 3:6] = [NAN, 2.0, -INF]
    b[1, 3:6] = [1.0, NAN, INF]
    a[2, 3:5] = [-3.0, 1e30]
    b[2, 3:5] = [2.0, 1e30]
    a, b = round_to("fp32", a), round_to("fp32", b)
    # pow operands whose exact result is an fp32 number (so any correct pow
    # gives it): a^0 = 1, a^1 = a, squares, cubes, square roots of squares,
    # negative powers of two, a negative base with an integer exponent,
    # -2^0.5 = NaN, 0^-1 = Inf
    pairs = [(2, 3), (4, 0.5), (9, 0.5), (16, 0.5), (0.25, 0.5), (0.5, -1), (2, -2), (3, 2),
             (1.5, 2), (-2, 3), (-2, 2), (7.25, 0), (-3.5, 1), (-2, 0.5), (0, -1), (0, 2),
             (2.25, 0.5), (10, 3), (0.125, -2), (-0.5, -3)]
    pick = t.rng.integers(0, len(pairs), (32, 16))
    pa = np.array([[pairs[k][0] for k in row] for row in pick], dtype=np.float64)
    pb = np.array([[pairs[k][1] for k in row] for row in pick], dtype=np.float64)
    pa[0, :2], pb[0, :2] = [-2.0, -2.0], [3.0, 0.5]  # -8 and NaN
    ai = t.ints((32, 16), -2 ** 20, 2 ** 20)
    bi = t.ints((32, 16), -2 ** 20, 2 ** 20)
    sh = t.ints((32, 16), 0, 9)
    ai[0, :4], bi[0, :4] = [-1, -8, -16, 5], [5, 3, 0x7FFF, -1]
    sh[0, :4] = [0, 1, 2, 3]
    for n, dt, v in (("a", "fp32", a), ("b", "fp32", b), ("pa", "fp32", pa), ("pb", "fp32", pb),
                     ("ai", "int32", ai), ("bi", "int32", bi), ("sh", "int32", sh)):
        t.input(n, dt, v)
    lines = []
    for k, op in enumerate(TT_FLOAT_OPS):
        src = "@128{1:16} in1=sbuf:fp32[0:32]@192{1:16}" if op == "pow" else \
              "@0{1:16} in1=sbuf:fp32[0:32]@64{1:16}"
        lines.append(f"    tensor_tensor dst=sbuf:fp32[0:32]@{512 + 64 * k}{{1:16}} "
                     f"in0=sbuf:fp32[0:32]{src} op0={op}")
    for k, op in enumerate(TT_INT_OPS):
        in1 = "@384" if op.startswith("shift") else "@320"
        lines.append(f"    tensor_tensor dst=sbuf:int32[0:32]@{1536 + 64 * k}{{1:16}} "
                     f"in0=sbuf:int32[0:32]@256{{1:16}} in1=sbuf:int32[0:32]{in1}{{1:16}} op0={op}")
    lines[0] += " wait=sem0>=7"
    lines[-1] += " inc=sem1"
    body = "\n".join("        " + ln for ln in lines)
    t.program(f"""
        ; SBUF per partition: a @0 b @64 pa @128 pb @192 ai @256 bi @320 sh @384;
        ; fp32 results of op k at 512 + 64k ({len(TT_FLOAT_OPS)} ops, written out as
        ; y[32, op, 16]); int32 results at 1536 + 64k (yi[32, op, 16])
        .machine trn2
        .semaphores 3
        .tensor a input fp32 [32,16]
        .tensor b input fp32 [32,16]
        .tensor pa input fp32 [32,16]
        .tensor pb input fp32 [32,16]
        .tensor ai input int32 [32,16]
        .tensor bi input int32 [32,16]
        .tensor sh input int32 [32,16]
        .tensor y output fp32 [32,{len(TT_FLOAT_OPS)},16]
        .tensor yi output int32 [32,{len(TT_INT_OPS)},16]
        .tensor y_pool output bf16 [32,16]
        .engine dve
{body}
        .engine pool
            tensor_tensor dst=sbuf:bf16[64:96]@0{{1:16}} in0=sbuf:fp32[0:32]@0{{1:16}} in1=sbuf:fp32[0:32]@64{{1:16}} op0=subtract wait=sem0>=7 inc=sem2
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{{1:16}} src=hbm:fp32[32/16]@a{{1:16}} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@64{{1:16}} src=hbm:fp32[32/16]@b{{1:16}} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@128{{1:16}} src=hbm:fp32[32/16]@pa{{1:16}} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@192{{1:16}} src=hbm:fp32[32/16]@pb{{1:16}} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@256{{1:16}} src=hbm:int32[32/16]@ai{{1:16}} queue=4 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@320{{1:16}} src=hbm:int32[32/16]@bi{{1:16}} queue=5 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@384{{1:16}} src=hbm:int32[32/16]@sh{{1:16}} queue=6 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/{16 * len(TT_FLOAT_OPS)}]@y{{1:{16 * len(TT_FLOAT_OPS)}}} src=sbuf:fp32[0:32]@512{{1:{16 * len(TT_FLOAT_OPS)}}} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:int32[32/{16 * len(TT_INT_OPS)}]@yi{{1:{16 * len(TT_INT_OPS)}}} src=sbuf:int32[0:32]@1536{{1:{16 * len(TT_INT_OPS)}}} queue=1 bound=0
            dma_copy dst=hbm:bf16[32/16]@y_pool{{1:16}} src=sbuf:bf16[64:96]@0{{1:16}} queue=2 bound=0 wait=sem2>=1
    """)
    y = np.stack([alu(op, pa if op == "pow" else a, pb if op == "pow" else b)
                  for op in TT_FLOAT_OPS], axis=1)
    with np.errstate(all="ignore"):
        exact_pow = np.power(pa, pb)  # float64: exact for these pairs
    assert np.array_equal(y[:, 7, :], exact_pow, equal_nan=True)
    yi = np.stack([bits_to("int32", alu(op, ai, sh if op.startswith("shift") else bi))
                   for op in TT_INT_OPS], axis=1)
    # spot checks written out by hand
    # y[p, op, e] with op 3 = divide, 4 = max, 5 = min, 7 = pow
    assert np.isnan(y[0, 3, 3]) and y[0, 3, 5] == INF and np.isnan(y[0, 3, 6]) and y[0, 3, 7] == INF
    assert y[0, 4, 3] == 0 and not np.signbit(y[0, 4, 3]) and np.signbit(y[0, 5, 3])
    assert not np.signbit(y[0, 4, 4]) and np.signbit(y[0, 5, 4])
    assert y[0, 7, 0] == -8.0 and math.isnan(y[0, 7, 1])
    # yi[p, op, e] with op 0 and, 1 or, 2 xor, 3 shl, 4 shr
    assert yi[0, 0, 0] == 5 and yi[0, 1, 1] == -5 and yi[0, 2, 3] == -6
    assert yi[0, 3, 0] == -1 and yi[0, 3, 3] == 40
    assert yi[0, 4, 2] == 0x3FFFFFFC and yi[0, 4, 1] == 0x7FFFFFFC  # -16 >> 2, -8 >> 1: logical
    t.expect("y", "fp32", y)
    t.expect("yi", "int32", yi)
    t.expect("y_pool", "bf16", alu("subtract", a, b))


def tensor_scalar():
    """tensor_scalar (insns-dve.md): t = rev0 ? s0 op0 x : x op0 s0, then (with
    scalar1) dst = rev1 ? s1 op1 t : t op1 s1; scalars are immediates or a
    per-partition value (one element per partition). Results: multiply by a
    per-partition scalar then add 0.5; 1 / (s - x) with both ops reversed,
    into PSUM at partitions 64..127; relu6 = min(max(x, 0), 6) on POOL into
    bf16; (xi & 0xff) >> 2 on int32; x > s2 on POOL; x / 3 into fp8_e5m2."""
    t = Trace("tensor_scalar")
    x = t.normal((64, 16), 4.0)
    s = t.uniform((64, 1), 0.5, 2.0)
    s2 = t.normal((64, 1), 1.0)
    xi = t.ints((64, 16), -2 ** 31, 2 ** 31 - 1)
    s_far = round_to("fp32", s + 20.0)  # keeps s - x away from 0
    t.input("x", "fp32", x)
    t.input("s", "fp32", s)
    t.input("s2", "fp32", s2)
    t.input("sf", "fp32", s_far)
    t.input("xi", "int32", xi)
    t.program("""
        ; SBUF per partition: x @0 (also at partitions 64..127), s @64, s2 @68,
        ; sf @72 (partitions 64..127), xi @128; results @256..
        .machine trn2
        .semaphores 4
        .tensor x input fp32 [64,16]
        .tensor s input fp32 [64,1]
        .tensor s2 input fp32 [64,1]
        .tensor sf input fp32 [64,1]
        .tensor xi input int32 [64,16]
        .tensor r_muladd output fp32 [64,16]
        .tensor r_recip output fp32 [64,16]
        .tensor r_relu6 output bf16 [64,16]
        .tensor r_bits output int32 [64,16]
        .tensor r_gt output fp32 [64,16]
        .tensor r_e5m2 output fp8_e5m2 [64,16]
        .engine dve
            tensor_scalar dst=sbuf:fp32[0:64]@256{1:16} in=sbuf:fp32[0:64]@0{1:16} scalar0=sbuf:fp32[0:64]@64{} scalar1=#0.5 op0=multiply op1=add wait=sem0>=7
            tensor_scalar dst=psum:fp32[64:128]@0{1:16} in=sbuf:fp32[64:128]@0{1:16} scalar0=sbuf:fp32[64:128]@72{1:1} scalar1=#1 op0=subtract op1=divide rev0=1 rev1=1
            tensor_copy dst=sbuf:fp32[64:128]@256{1:16} in=psum:fp32[64:128]@0{1:16}
            tensor_scalar dst=sbuf:int32[0:64]@384{1:16} in=sbuf:int32[0:64]@128{1:16} scalar0=#0xff:int32 scalar1=#2:int32 op0=bitwise_and op1=shift_right
            tensor_scalar dst=sbuf:fp8_e5m2[0:64]@448{1:16} in=sbuf:fp32[0:64]@0{1:16} scalar0=#3 op0=divide inc=sem1
        .engine pool
            tensor_scalar dst=sbuf:bf16[0:64]@320{1:16} in=sbuf:fp32[0:64]@0{1:16} scalar0=#0 scalar1=#6 op0=max op1=min wait=sem0>=7
            tensor_scalar dst=sbuf:fp32[64:128]@320{1:16} in=sbuf:fp32[64:128]@0{1:16} scalar0=sbuf:fp32[64:128]@68{1:1} op0=is_gt inc=sem2
        .engine sp
            dma_copy dst=sbuf:fp32[0:64]@0{1:16} src=hbm:fp32[64/16]@x{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[64:128]@0{1:16} src=hbm:fp32[64/16]@x{1:16} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:64]@64{1:1} src=hbm:fp32[64/1]@s{1:1} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:64]@68{1:1} src=hbm:fp32[64/1]@s2{1:1} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[64:128]@68{1:1} src=hbm:fp32[64/1]@s2{1:1} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[64:128]@72{1:1} src=hbm:fp32[64/1]@sf{1:1} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:64]@128{1:16} src=hbm:int32[64/16]@xi{1:16} queue=4 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[64/16]@r_muladd{1:16} src=sbuf:fp32[0:64]@256{1:16} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[64/16]@r_recip{1:16} src=sbuf:fp32[64:128]@256{1:16} queue=1 bound=0
            dma_copy dst=hbm:int32[64/16]@r_bits{1:16} src=sbuf:int32[0:64]@384{1:16} queue=2 bound=0
            dma_copy dst=hbm:fp8_e5m2[64/16]@r_e5m2{1:16} src=sbuf:fp8_e5m2[0:64]@448{1:16} queue=3 bound=0
            dma_copy dst=hbm:bf16[64/16]@r_relu6{1:16} src=sbuf:bf16[0:64]@320{1:16} queue=4 bound=0 wait=sem2>=1
            dma_copy dst=hbm:fp32[64/16]@r_gt{1:16} src=sbuf:fp32[64:128]@320{1:16} queue=5 bound=0
    """)
    t.expect("r_muladd", "fp32", alu("add", alu("multiply", x, s), 0.5))
    t.expect("r_recip", "fp32", alu("divide", 1.0, alu("subtract", s_far, x)))
    t.expect("r_relu6", "bf16", alu("min", alu("max", x, 0.0), 6.0))
    t.expect("r_bits", "int32", bits_to("int32", alu("shift_right", alu("bitwise_and", xi, 255.0), 2.0)))
    t.expect("r_gt", "fp32", alu("is_gt", x, s2))
    t.expect("r_e5m2", "fp8_e5m2", alu("divide", x, 3.0))


def scalar_tensor_tensor():
    """scalar_tensor_tensor (insns-dve.md): t = rev0 ? (s op0 in0) : (in0 op0 s);
    dst = t op1 in1, s an immediate or a per-partition scalar. Four cases:
    (x * 2) + y; (s - x) * y reversed with per-partition s; on POOL
    max(x, s) + y into bf16 at partitions 32..63; (x >= 0) * y into PSUM."""
    t = Trace("scalar_tensor_tensor")
    x = t.normal((32, 16), 2.0)
    y = t.normal((32, 16), 2.0)
    s = t.normal((32, 1), 1.0)
    x[0, :2] = [0.0, -0.0]
    t.input("x", "fp32", x)
    t.input("y", "fp32", y)
    t.input("s", "fp32", s)
    t.program("""
        .machine trn2
        .semaphores 3
        .tensor x input fp32 [32,16]
        .tensor y input fp32 [32,16]
        .tensor s input fp32 [32,1]
        .tensor r1 output fp32 [32,16]
        .tensor r2 output fp32 [32,16]
        .tensor r3 output bf16 [32,16]
        .tensor r4 output fp32 [32,16]
        .engine dve
            scalar_tensor_tensor dst=sbuf:fp32[0:32]@256{1:16} in0=sbuf:fp32[0:32]@0{1:16} scalar=#2 in1=sbuf:fp32[0:32]@64{1:16} op0=multiply op1=add wait=sem0>=3
            scalar_tensor_tensor dst=sbuf:fp32[0:32]@320{1:16} in0=sbuf:fp32[0:32]@0{1:16} scalar=sbuf:fp32[0:32]@128{} in1=sbuf:fp32[0:32]@64{1:16} op0=subtract op1=multiply rev0=1
            scalar_tensor_tensor dst=psum:fp32[0:32]@512{1:16} in0=sbuf:fp32[0:32]@0{1:16} scalar=#0 in1=sbuf:fp32[0:32]@64{1:16} op0=is_ge op1=multiply
            tensor_copy dst=sbuf:fp32[0:32]@384{1:16} in=psum:fp32[0:32]@512{1:16} inc=sem1
        .engine pool
            scalar_tensor_tensor dst=sbuf:bf16[32:64]@0{1:16} in0=sbuf:fp32[0:32]@0{1:16} scalar=sbuf:fp32[0:32]@128{1:1} in1=sbuf:fp32[0:32]@64{1:16} op0=max op1=add wait=sem0>=3 inc=sem2
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@x{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@64{1:16} src=hbm:fp32[32/16]@y{1:16} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@128{1:1} src=hbm:fp32[32/1]@s{1:1} queue=2 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/16]@r1{1:16} src=sbuf:fp32[0:32]@256{1:16} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[32/16]@r2{1:16} src=sbuf:fp32[0:32]@320{1:16} queue=1 bound=0
            dma_copy dst=hbm:fp32[32/16]@r4{1:16} src=sbuf:fp32[0:32]@384{1:16} queue=2 bound=0
            dma_copy dst=hbm:bf16[32/16]@r3{1:16} src=sbuf:bf16[32:64]@0{1:16} queue=3 bound=0 wait=sem2>=1
    """)
    t.expect("r1", "fp32", alu("add", alu("multiply", x, 2.0), y))
    t.expect("r2", "fp32", alu("multiply", alu("subtract", s, x), y))
    t.expect("r3", "bf16", alu("add", alu("max", x, s), y))
    t.expect("r4", "fp32", alu("multiply", alu("is_ge", x, 0.0), y))


def tensor_reduce():
    """tensor_reduce (insns-dve.md): reduce the free dims named by the `axes`
    bit mask (bit k = dim k, dim 0 outermost); dst holds the kept dims
    row-major; each output r = identity, then r = r op0 x over the reduced
    elements in row-major order of in's access pattern (each step an ALU op:
    fp32 rounding); negate stores -r. A reversed access pattern (stride -1)
    therefore sums in the reverse order. Identities: add -0, multiply 1,
    max -Inf, min +Inf, abs_max +0, bitwise_and all ones, or/xor 0."""
    t = Trace("tensor_reduce")
    x = t.normal((32, 64), 1.0) * 10.0 ** t.ints((32, 64), -4, 4)
    x[5] = -0.0  # sums of -0 stay -0; the negated one is +0
    x = round_to("fp32", x)
    m = t.uniform((32, 8), 0.5, 2.0)
    xi = t.ints((32, 16), -2 ** 31, 2 ** 31 - 1)
    xb = t.normal((32, 16), 30.0, "bf16")
    t.input("x", "fp32", x)
    t.input("m", "fp32", m)
    t.input("xi", "int32", xi)
    t.input("xb", "bf16", xb)
    x3 = x.reshape(32, 2, 4, 8)  # in = {32:2, 8:4, 1:8}
    res = {
        "r_sum_inner": (fold("add", [x3[:, :, :, k] for k in range(8)], -0.0).reshape(32, 8)),
        "r_max_mid": fold("max", [x3[:, :, j, :] for j in range(4)], -INF).reshape(32, 16),
        "r_min_outer_inner": fold("min", [x3[:, i, :, k] for i in range(2) for k in range(8)], INF),
        "r_neg_sum_all": -fold("add", [x[:, e] for e in range(64)], -0.0).reshape(32, 1),
        "r_absmax": fold("abs_max", [x3[:, :, j, k] for j in range(4) for k in range(8)], 0.0),
        "r_sum_rev": fold("add", [x[:, e] for e in range(63, -1, -1)], -0.0).reshape(32, 1),
        "r_prod": fold("multiply", [m[:, e] for e in range(8)], 1.0).reshape(32, 1),
    }
    ints = {op: fold(op, [xi[:, e] for e in range(16)], REDUCE_IDENTITY[op]).reshape(32, 1)
            for op in ("bitwise_and", "bitwise_or", "bitwise_xor")}
    rb = fold("add", [xb[:, e] for e in range(16)], -0.0).reshape(32, 1)
    # the reversed sum really differs from the forward one somewhere
    assert np.any(res["r_sum_rev"][:, 0] != -res["r_neg_sum_all"][:, 0])
    t.program("""
        ; x [32, 64] at @0 seen as dims (2 x 4 x 8) = {32:2,8:4,1:8}; m @256,
        ; xi @288, xb @352; results from @512
        .machine trn2
        .semaphores 3
        .tensor x input fp32 [32,64]
        .tensor m input fp32 [32,8]
        .tensor xi input int32 [32,16]
        .tensor xb input bf16 [32,16]
        .tensor r_sum_inner output fp32 [32,8]
        .tensor r_max_mid output fp32 [32,16]
        .tensor r_min_outer_inner output fp32 [32,4]
        .tensor r_neg_sum_all output fp32 [32,1]
        .tensor r_absmax output fp32 [32,2]
        .tensor r_sum_rev output fp32 [32,1]
        .tensor r_prod output fp32 [32,1]
        .tensor r_and output int32 [32,1]
        .tensor r_or output int32 [32,1]
        .tensor r_xor output int32 [32,1]
        .tensor r_bf16 output bf16 [32,1]
        .engine dve
            tensor_reduce dst=sbuf:fp32[0:32]@512{1:8} in=sbuf:fp32[0:32]@0{32:2,8:4,1:8} op0=add axes=4 wait=sem0>=4
            tensor_reduce dst=sbuf:fp32[0:32]@544{1:16} in=sbuf:fp32[0:32]@0{32:2,8:4,1:8} op0=max axes=2
            tensor_reduce dst=sbuf:fp32[0:32]@608{1:4} in=sbuf:fp32[0:32]@0{32:2,8:4,1:8} op0=min axes=5
            tensor_reduce dst=psum:fp32[0:32]@0{1:1} in=sbuf:fp32[0:32]@0{32:2,8:4,1:8} op0=add negate=1 axes=7
            tensor_copy dst=sbuf:fp32[0:32]@624{1:1} in=psum:fp32[0:32]@0{1:1}
            tensor_reduce dst=sbuf:fp32[0:32]@628{1:2} in=sbuf:fp32[0:32]@0{32:2,8:4,1:8} op0=abs_max axes=6
            tensor_reduce dst=sbuf:fp32[0:32]@636{1:1} in=sbuf:fp32[0:32]@252{-1:64} op0=add axes=1
            tensor_reduce dst=sbuf:fp32[0:32]@640{1:1} in=sbuf:fp32[0:32]@256{1:8} op0=multiply axes=1
            tensor_reduce dst=sbuf:int32[0:32]@644{1:1} in=sbuf:int32[0:32]@288{1:16} op0=bitwise_and axes=1
            tensor_reduce dst=sbuf:int32[0:32]@648{1:1} in=sbuf:int32[0:32]@288{1:16} op0=bitwise_or axes=1
            tensor_reduce dst=sbuf:int32[0:32]@652{1:1} in=sbuf:int32[0:32]@288{1:16} op0=bitwise_xor axes=1 inc=sem1
        .engine pool
            tensor_reduce dst=sbuf:bf16[64:96]@0{1:1} in=sbuf:bf16[0:32]@352{1:16} op0=add axes=1 wait=sem0>=4 inc=sem2
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:64} src=hbm:fp32[32/64]@x{1:64} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@256{1:8} src=hbm:fp32[32/8]@m{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@288{1:16} src=hbm:int32[32/16]@xi{1:16} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:bf16[0:32]@352{1:16} src=hbm:bf16[32/16]@xb{1:16} queue=3 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/8]@r_sum_inner{1:8} src=sbuf:fp32[0:32]@512{1:8} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[32/16]@r_max_mid{1:16} src=sbuf:fp32[0:32]@544{1:16} queue=1 bound=0
            dma_copy dst=hbm:fp32[32/4]@r_min_outer_inner{1:4} src=sbuf:fp32[0:32]@608{1:4} queue=2 bound=0
            dma_copy dst=hbm:fp32[32/1]@r_neg_sum_all{1:1} src=sbuf:fp32[0:32]@624{1:1} queue=3 bound=0
            dma_copy dst=hbm:fp32[32/2]@r_absmax{1:2} src=sbuf:fp32[0:32]@628{1:2} queue=4 bound=0
            dma_copy dst=hbm:fp32[32/1]@r_sum_rev{1:1} src=sbuf:fp32[0:32]@636{1:1} queue=5 bound=0
            dma_copy dst=hbm:fp32[32/1]@r_prod{1:1} src=sbuf:fp32[0:32]@640{1:1} queue=6 bound=0
            dma_copy dst=hbm:int32[32/1]@r_and{1:1} src=sbuf:int32[0:32]@644{1:1} queue=7 bound=0
            dma_copy dst=hbm:int32[32/1]@r_or{1:1} src=sbuf:int32[0:32]@648{1:1} queue=8 bound=0
            dma_copy dst=hbm:int32[32/1]@r_xor{1:1} src=sbuf:int32[0:32]@652{1:1} queue=9 bound=0
            dma_copy dst=hbm:bf16[32/1]@r_bf16{1:1} src=sbuf:bf16[64:96]@0{1:1} queue=10 bound=0 wait=sem2>=1
    """)
    for name, v in res.items():
        t.expect(name, "fp32", v)
    t.expect("r_and", "int32", bits_to("int32", ints["bitwise_and"]))
    t.expect("r_or", "int32", bits_to("int32", ints["bitwise_or"]))
    t.expect("r_xor", "int32", bits_to("int32", ints["bitwise_xor"]))
    t.expect("r_bf16", "bf16", rb)


def tensor_copy():
    """tensor_copy on DVE, ACT and POOL (insns-dve.md): dst = in converted to
    dst's dtype by the store rules, once (no fp32 rounding on the way, so
    int32 -> bf16 rounds the exact integer: 16842753 -> 16908288). Covers
    fp32 -> bf16 / fp8_e4m3 / int8 / fp16 (via PSUM and back), int32 ->
    fp32 / bf16 / uint8, partition offsets 32/64/96 and strided / reversed
    access patterns."""
    t = Trace("tensor_copy")
    x = with_rows(SPECIAL_F32, t.normal((32, 16)) * 10.0 ** t.ints((32, 16), -3, 3))
    x = round_to("fp32", x)
    xi = with_rows([SPECIAL_I32], t.ints((32, 16), -2 ** 31, 2 ** 31 - 1))
    t.input("x", "fp32", x)
    t.input("xi", "int32", xi)
    t.program("""
        .machine trn2
        .semaphores 5
        .tensor x input fp32 [32,16]
        .tensor xi input int32 [32,16]
        .tensor y_bf16 output bf16 [32,16]
        .tensor y_e4m3 output fp8_e4m3 [32,16]
        .tensor y_i8 output int8 [32,16]
        .tensor y_fp16 output fp32 [32,16]
        .tensor yi_f32 output fp32 [32,16]
        .tensor yi_bf16 output bf16 [32,16]
        .tensor yi_u8 output uint8 [32,16]
        .tensor y_str output fp32 [32,8]
        .engine dve
            tensor_copy dst=sbuf:bf16[32:64]@0{1:16} in=sbuf:fp32[0:32]@0{1:16} wait=sem0>=2
            tensor_copy dst=psum:fp16[0:32]@0{1:16} in=sbuf:fp32[0:32]@0{1:16} inc=sem1
            tensor_copy dst=sbuf:bf16[32:64]@256{1:16} in=sbuf:int32[0:32]@64{1:16} inc=sem2
        .engine act
            tensor_copy dst=sbuf:fp8_e4m3[64:96]@0{1:16} in=sbuf:fp32[0:32]@0{1:16} wait=sem0>=2
            ; even elements of x, written in reverse order (dst stride -1)
            tensor_copy dst=sbuf:fp32[0:32]@796{-1:8} in=sbuf:fp32[0:32]@0{2:8}
            tensor_copy dst=sbuf:uint8[0:32]@900{1:16} in=sbuf:int32[0:32]@64{1:16}
            tensor_copy dst=sbuf:fp32[0:32]@512{1:16} in=psum:fp16[0:32]@0{1:16} wait=sem1>=1 inc=sem3
        .engine pool
            tensor_copy dst=sbuf:int8[96:128]@0{1:16} in=sbuf:fp32[0:32]@0{1:16} wait=sem0>=2
            tensor_copy dst=sbuf:fp32[32:64]@128{1:16} in=sbuf:int32[0:32]@64{1:16} inc=sem4
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@x{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@64{1:16} src=hbm:int32[32/16]@xi{1:16} queue=1 bound=0 inc=sem0
            dma_copy dst=hbm:bf16[32/16]@y_bf16{1:16} src=sbuf:bf16[32:64]@0{1:16} queue=0 bound=0 wait=sem2>=1
            dma_copy dst=hbm:bf16[32/16]@yi_bf16{1:16} src=sbuf:bf16[32:64]@256{1:16} queue=1 bound=0
            dma_copy dst=hbm:fp8_e4m3[32/16]@y_e4m3{1:16} src=sbuf:fp8_e4m3[64:96]@0{1:16} queue=2 bound=0 wait=sem3>=1
            dma_copy dst=hbm:fp32[32/8]@y_str{1:8} src=sbuf:fp32[0:32]@768{1:8} queue=2 bound=0
            dma_copy dst=hbm:uint8[32/16]@yi_u8{1:16} src=sbuf:uint8[0:32]@900{1:16} queue=3 bound=0
            dma_copy dst=hbm:fp32[32/16]@y_fp16{1:16} src=sbuf:fp32[0:32]@512{1:16} queue=3 bound=0
            dma_copy dst=hbm:int8[32/16]@y_i8{1:16} src=sbuf:int8[96:128]@0{1:16} queue=4 bound=0 wait=sem4>=1
            dma_copy dst=hbm:fp32[32/16]@yi_f32{1:16} src=sbuf:fp32[32:64]@128{1:16} queue=4 bound=0
    """)
    t.expect("y_bf16", "bf16", x)
    t.expect("y_e4m3", "fp8_e4m3", x)
    t.expect("y_i8", "int8", x)
    t.expect("y_fp16", "fp32", round_to("fp16", x))
    t.expect("yi_f32", "fp32", xi)
    t.expect("yi_bf16", "bf16", xi)
    assert formats.load("bf16", formats.store("bf16", [16842753.0]))[0] == 16908288.0
    t.expect("yi_u8", "uint8", xi)
    t.expect("y_str", "fp32", x[:, 0::2][:, ::-1])


def tensor_tensor_scan():
    """tensor_tensor_scan (insns-dve.md): per partition acc = initial; for each
    element e in order: acc = (acc op0 in0[e]) op1 in1[e]; dst[e] = acc.
    acc stays an engine value between steps (only dst is converted), and
    every arithmetic step rounds to fp32 - also for int32 data, so a running
    sum past 2^24 loses the small addends (the int32 scan below)."""
    t = Trace("tensor_tensor_scan")
    a = t.uniform((16, 32), 0.5, 1.0)
    b = t.normal((16, 32), 1.0)
    init = t.normal((16, 1), 1.0)
    ai = t.ints((16, 32), 1_000_000, 3_000_000)
    bi = t.ints((16, 32), -3, 3)
    for n, dt, v in (("a", "fp32", a), ("b", "fp32", b), ("init", "fp32", init),
                     ("ai", "int32", ai), ("bi", "int32", bi)):
        t.input(n, dt, v)
    t.program("""
        ; a @0 b @128 init @256 ai @260 bi @388; results @640 @768 @832
        .machine trn2
        .semaphores 2
        .tensor a input fp32 [16,32]
        .tensor b input fp32 [16,32]
        .tensor init input fp32 [16,1]
        .tensor ai input int32 [16,32]
        .tensor bi input int32 [16,32]
        .tensor r_lin output fp32 [16,32]
        .tensor r_max output bf16 [16,32]
        .tensor r_int output int32 [16,32]
        .engine dve
            tensor_tensor_scan dst=sbuf:fp32[0:16]@640{1:32} in0=sbuf:fp32[0:16]@0{1:32} in1=sbuf:fp32[0:16]@128{1:32} initial=sbuf:fp32[0:16]@256{} op0=multiply op1=add wait=sem0>=5
            tensor_tensor_scan dst=psum:bf16[0:16]@0{1:32} in0=sbuf:fp32[0:16]@0{1:32} in1=sbuf:fp32[0:16]@128{1:32} initial=#0 op0=add op1=max
            tensor_copy dst=sbuf:bf16[0:16]@768{1:32} in=psum:bf16[0:16]@0{1:32}
            tensor_tensor_scan dst=sbuf:int32[0:16]@832{1:32} in0=sbuf:int32[0:16]@260{1:32} in1=sbuf:int32[0:16]@388{1:32} initial=#0:int32 op0=add op1=add inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:16]@0{1:32} src=hbm:fp32[16/32]@a{1:32} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@128{1:32} src=hbm:fp32[16/32]@b{1:32} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@256{1:1} src=hbm:fp32[16/1]@init{1:1} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:16]@260{1:32} src=hbm:int32[16/32]@ai{1:32} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:16]@388{1:32} src=hbm:int32[16/32]@bi{1:32} queue=4 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[16/32]@r_lin{1:32} src=sbuf:fp32[0:16]@640{1:32} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:bf16[16/32]@r_max{1:32} src=sbuf:bf16[0:16]@768{1:32} queue=1 bound=0
            dma_copy dst=hbm:int32[16/32]@r_int{1:32} src=sbuf:int32[0:16]@832{1:32} queue=2 bound=0
    """)

    def scan(op0, op1, x0, x1, acc):
        out = np.zeros(x0.shape)
        acc = np.asarray(acc, dtype=np.float64).reshape(-1)
        for e in range(x0.shape[1]):
            acc = alu(op1, alu(op0, acc, x0[:, e]), x1[:, e])
            out[:, e] = acc
        return out

    r_int = scan("add", "add", ai, bi, np.zeros(16))
    assert np.any(r_int[:, -1] != np.cumsum(ai + bi, axis=1)[:, -1])  # fp32 rounding shows
    t.expect("r_lin", "fp32", scan("multiply", "add", a, b, init))
    t.expect("r_max", "bf16", scan("add", "max", a, b, np.zeros(16)))
    t.expect("r_int", "int32", r_int)


def select():
    """select (insns-dve.md): dst = pred != 0 ? on_true : on_false (NaN counts
    as nonzero, -0 as zero); immediates allowed for on_true / on_false;
    without on_false only the selected elements are written (predicated
    copy: the others keep what dst held)."""
    t = Trace("select")
    pred = t.rng.choice([0.0, -0.0, 1.0, -3.0, NAN, 0.5, INF], (32, 16))
    predu = t.ints((32, 16), 0, 1)
    x = t.normal((32, 16), 5.0)
    y = t.normal((32, 16), 5.0)
    z = t.normal((32, 16), 5.0)
    for n, dt, v in (("pred", "fp32", pred), ("predu", "uint8", predu), ("x", "fp32", x),
                     ("y", "fp32", y), ("z", "fp32", z)):
        t.input(n, dt, v)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor pred input fp32 [32,16]
        .tensor predu input uint8 [32,16]
        .tensor x input fp32 [32,16]
        .tensor y input fp32 [32,16]
        .tensor z input fp32 [32,16]
        .tensor r_mem output fp32 [32,16]
        .tensor r_imm output bf16 [32,16]
        .tensor r_pred output fp32 [32,16]
        .tensor r_psum output fp32 [32,16]
        .engine dve
            select dst=sbuf:fp32[0:32]@512{1:16} pred=sbuf:fp32[0:32]@0{1:16} on_true=sbuf:fp32[0:32]@64{1:16} on_false=sbuf:fp32[0:32]@128{1:16} wait=sem0>=5
            select dst=sbuf:bf16[0:32]@576{1:16} pred=sbuf:fp32[0:32]@0{1:16} on_true=#7.5 on_false=sbuf:fp32[0:32]@128{1:16}
            select dst=sbuf:fp32[0:32]@256{1:16} pred=sbuf:fp32[0:32]@0{1:16} on_true=sbuf:fp32[0:32]@64{1:16}
            select dst=psum:fp32[0:32]@0{1:16} pred=sbuf:uint8[0:32]@320{1:16} on_true=sbuf:fp32[0:32]@64{1:16} on_false=#-inf
            tensor_copy dst=sbuf:fp32[0:32]@640{1:16} in=psum:fp32[0:32]@0{1:16} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@pred{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@64{1:16} src=hbm:fp32[32/16]@x{1:16} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@128{1:16} src=hbm:fp32[32/16]@y{1:16} queue=2 bound=0 inc=sem0
            ; the predicated copy's destination starts out as z
            dma_copy dst=sbuf:fp32[0:32]@256{1:16} src=hbm:fp32[32/16]@z{1:16} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:uint8[0:32]@320{1:16} src=hbm:uint8[32/16]@predu{1:16} queue=4 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/16]@r_mem{1:16} src=sbuf:fp32[0:32]@512{1:16} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:bf16[32/16]@r_imm{1:16} src=sbuf:bf16[0:32]@576{1:16} queue=1 bound=0
            dma_copy dst=hbm:fp32[32/16]@r_pred{1:16} src=sbuf:fp32[0:32]@256{1:16} queue=2 bound=0
            dma_copy dst=hbm:fp32[32/16]@r_psum{1:16} src=sbuf:fp32[0:32]@640{1:16} queue=3 bound=0
    """)
    on = (pred != 0) | np.isnan(pred)
    t.expect("r_mem", "fp32", np.where(on, x, y))
    t.expect("r_imm", "bf16", np.where(on, 7.5, y))
    t.expect("r_pred", "fp32", np.where(on, x, z))
    t.expect("r_psum", "fp32", np.where(predu != 0, x, -INF))


def memset():
    """memset on DVE and POOL (insns-dve.md): every dst element = the
    immediate's value converted to dst's dtype by the store rules: fp32 1.1
    -> bf16 1.1015625; -0 stays -0 (in PSUM); int32 300 -> uint8 255
    (saturation); 500 -> fp8_e4m3 448 (saturation); Inf -> fp8_e5m2 Inf;
    a strided dst (stride 2) writes only every other element."""
    t = Trace("memset")
    x = t.normal((32, 16), 1.0)
    t.input("x", "fp32", x)
    t.program("""
        .machine trn2
        .semaphores 3
        .tensor x input fp32 [32,16]
        .tensor m_bf16 output bf16 [32,8]
        .tensor m_negz output fp32 [32,8]
        .tensor m_i32 output int32 [32,8]
        .tensor m_u8 output uint8 [32,8]
        .tensor m_e4m3 output fp8_e4m3 [32,8]
        .tensor m_e5m2 output fp8_e5m2 [32,8]
        .tensor m_stride output fp32 [32,16]
        .engine dve
            memset dst=sbuf:bf16[0:32]@0{1:8} value=#1.1
            memset dst=psum:fp32[0:32]@0{1:8} value=#-0
            tensor_copy dst=sbuf:fp32[0:32]@256{1:8} in=psum:fp32[0:32]@0{1:8}
            memset dst=sbuf:fp8_e5m2[96:128]@0{1:8} value=#inf
            memset dst=sbuf:fp32[0:32]@128{2:8} value=#nan wait=sem0>=1 inc=sem1
        .engine pool
            memset dst=sbuf:int32[32:64]@0{1:8} value=#-7:int32
            memset dst=sbuf:uint8[0:32]@64{1:8} value=#300:int32
            memset dst=sbuf:fp8_e4m3[64:96]@0{1:8} value=#500 inc=sem2
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@128{1:16} src=hbm:fp32[32/16]@x{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:bf16[32/8]@m_bf16{1:8} src=sbuf:bf16[0:32]@0{1:8} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[32/8]@m_negz{1:8} src=sbuf:fp32[0:32]@256{1:8} queue=1 bound=0
            dma_copy dst=hbm:fp8_e5m2[32/8]@m_e5m2{1:8} src=sbuf:fp8_e5m2[96:128]@0{1:8} queue=2 bound=0
            dma_copy dst=hbm:fp32[32/16]@m_stride{1:16} src=sbuf:fp32[0:32]@128{1:16} queue=3 bound=0
            dma_copy dst=hbm:int32[32/8]@m_i32{1:8} src=sbuf:int32[32:64]@0{1:8} queue=4 bound=0 wait=sem2>=1
            dma_copy dst=hbm:uint8[32/8]@m_u8{1:8} src=sbuf:uint8[0:32]@64{1:8} queue=5 bound=0
            dma_copy dst=hbm:fp8_e4m3[32/8]@m_e4m3{1:8} src=sbuf:fp8_e4m3[64:96]@0{1:8} queue=6 bound=0
    """)
    full = np.ones((32, 8))
    t.expect("m_bf16", "bf16", full * r32(1.1))
    assert formats.load("bf16", formats.store("bf16", [r32(1.1)]))[0] == 1.1015625
    t.expect("m_negz", "fp32", full * -0.0)
    t.expect("m_i32", "int32", full * -7)
    t.expect("m_u8", "uint8", full * 300)
    t.expect("m_e4m3", "fp8_e4m3", full * 500)
    t.expect("m_e5m2", "fp8_e5m2", full * INF)
    ms = x.copy()
    ms[:, 0::2] = NAN
    t.expect("m_stride", "fp32", ms)


def _max8_ref(row):
    """The 8 largest of a row, descending; NaN ranks above everything; equal
    values (also -0 and +0) keep element order (a stable sort)."""
    order = sorted(range(len(row)), key=lambda i: (0 if math.isnan(row[i]) else 1,
                                                    -row[i] if not math.isnan(row[i]) else 0))
    return [row[i] for i in order[:8]]


def max8():
    """max8 (insns-dve.md): the 8 largest values of each partition in
    descending order, duplicates kept, NaN above +Inf, equal values
    (including -0 and +0) in element order. Rows with many duplicates, a
    row whose top values are zeros of both signs, rows with NaN and Inf; a
    bf16 row of exactly 8 elements (a plain sort) at partitions 0..15."""
    t = Trace("max8")
    x = t.ints((16, 24), 0, 5)  # lots of duplicates
    x[1] = -t.ints((24,), 1, 9)
    x[1, [3, 7, 11, 20]] = [-0.0, 0.0, -0.0, 0.0]
    x[2, [0, 5, 9]] = [NAN, INF, -INF]
    x[3] = t.normal((24,), 100.0)
    x[4] = 7.0
    x[5, :] = t.normal((24,), 1.0)
    x[5, [2, 6]] = [-0.0, 0.0]
    xb = t.normal((16, 8), 4.0, "bf16")
    xb[0, :4] = [1.0, 1.0, -0.0, 0.0]
    t.input("x", "fp32", x)
    t.input("xb", "bf16", xb)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [16,24]
        .tensor xb input bf16 [16,8]
        .tensor top output fp32 [16,8]
        .tensor top_b output bf16 [16,8]
        .engine dve
            max8 dst=sbuf:fp32[32:48]@256{1:8} in=sbuf:fp32[32:48]@0{1:24} wait=sem0>=2
            max8 dst=sbuf:bf16[0:16]@288{1:8} in=sbuf:bf16[0:16]@128{1:8} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[32:48]@0{1:24} src=hbm:fp32[16/24]@x{1:24} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:bf16[0:16]@128{1:8} src=hbm:bf16[16/8]@xb{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[16/8]@top{1:8} src=sbuf:fp32[32:48]@256{1:8} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:bf16[16/8]@top_b{1:8} src=sbuf:bf16[0:16]@288{1:8} queue=1 bound=0
    """)
    top = np.array([_max8_ref(list(r)) for r in x])
    assert [np.signbit(v) for v in top[1, :4]] == [True, False, True, False]
    t.expect("top", "fp32", top)
    t.expect("top_b", "bf16", np.array([_max8_ref(list(r)) for r in xb]))


def _first_match(row, v, taken=()):
    for e, xe in enumerate(row):
        if e not in taken and (xe == v or (math.isnan(v) and math.isnan(xe))):
            return e
    return None


def _find_index8_ref(row, vals):
    """find_index8's pairing (insns-dve.md): values j = 0..7 in ascending
    order, each taking the first equal element no earlier value took."""
    taken, out = [], []
    for v in vals:
        e = _first_match(row, v, taken)
        if e is not None:
            taken.append(e)
        out.append(e)
    return out


def find_index8():
    """find_index8 (insns-dve.md): for each of the 8 values of a partition,
    the index of the first element of in equal to it (numeric equality:
    -0 == +0; NaN matches NaN), or -1 (int32 dst) / 0xFFFFFFFF (uint32 dst)
    when there is none. The values are taken in ascending order j = 0..7 and
    an element taken by an earlier value is skipped, so duplicated values
    pair with successive occurrences (the lowest index to the lowest j)."""
    t = Trace("find_index8")
    x = t.ints((16, 24), -20, 20)
    x[0, [4, 9]] = [NAN, 0.0]
    vals = np.zeros((16, 8))
    for p in range(16):
        picks = t.rng.choice(24, 5)
        vals[p, :5] = x[p, picks]
        vals[p, 5] = x[p, picks[0]]  # a duplicate value
        vals[p, 6] = 1000 + p  # absent
        vals[p, 7] = -0.0 if p % 2 else NAN
    vals[0, 7] = NAN  # matches the NaN at element 4
    t.input("x", "fp32", x)
    t.input("vals", "fp32", vals)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [16,24]
        .tensor vals input fp32 [16,8]
        .tensor idx output int32 [16,8]
        .tensor uidx output uint32 [16,8]
        .engine dve
            find_index8 dst=sbuf:int32[0:16]@256{1:8} in=sbuf:fp32[0:16]@0{1:24} values=sbuf:fp32[0:16]@96{1:8} wait=sem0>=2
            find_index8 dst=psum:uint32[0:16]@0{1:8} in=sbuf:fp32[0:16]@0{1:24} values=sbuf:fp32[0:16]@96{1:8}
            tensor_copy dst=sbuf:uint32[0:16]@288{1:8} in=psum:uint32[0:16]@0{1:8} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:16]@0{1:24} src=hbm:fp32[16/24]@x{1:24} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@96{1:8} src=hbm:fp32[16/8]@vals{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=hbm:int32[16/8]@idx{1:8} src=sbuf:int32[0:16]@256{1:8} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:uint32[16/8]@uidx{1:8} src=sbuf:uint32[0:16]@288{1:8} queue=1 bound=0
    """)
    idx = np.array([_find_index8_ref(list(x[p]), list(vals[p])) for p in range(16)], dtype=object)
    assert idx[0, 7] == 4
    t.expect("idx", "int32", np.where(idx == None, -1, idx).astype(np.float64))  # noqa: E711
    t.expect("uidx", "uint32", np.where(idx == None, 4294967295, idx).astype(np.float64))  # noqa: E711


def match_replace8():
    """match_replace8 (insns-dve.md): for j = 7, 6, .., 0 (the reverse order
    of the NKI nc_match_replace8 documentation), the first element equal to
    values[j] that has not been matched yet is replaced by the immediate;
    duplicated values therefore replace successive occurrences, the first
    occurrence going to the highest j. The optional indices output gets each
    replaced index, or -1 (int32) / 0xFFFFFFFF (uint32) when values[j]
    matched nothing. Replacement happens after all matching (a replacement
    never matches a later value)."""
    t = Trace("match_replace8")
    x = t.ints((16, 24), 0, 9)
    vals = np.zeros((16, 8))
    for p in range(16):
        v = x[p, t.rng.integers(0, 24)]
        vals[p] = [v, v, v, x[p, 3], x[p, 3], 50 + p, x[p, 10], v]
    xb = t.ints((16, 16), -4, 4)
    vb = t.ints((16, 8), -5, 5)
    # values[7] = -inf, the replacement value: matching compares the original
    # values, so it never hits an element replaced by values[0..6], but it does
    # hit an element that was -inf from the start (rows 0..3, element 15)
    vb[:, 7] = -INF
    xb[:4, 15] = -INF
    t.input("x", "fp32", x)
    t.input("vals", "fp32", vals)
    t.input("xb", "bf16", xb)
    t.input("vb", "fp32", vb)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [16,24]
        .tensor vals input fp32 [16,8]
        .tensor xb input bf16 [16,16]
        .tensor vb input fp32 [16,8]
        .tensor y output fp32 [16,24]
        .tensor y_idx output int32 [16,8]
        .tensor yb output bf16 [16,16]
        .tensor yb_idx output uint32 [16,8]
        .engine dve
            match_replace8 dst=sbuf:fp32[0:16]@256{1:24} in=sbuf:fp32[0:16]@0{1:24} values=sbuf:fp32[0:16]@96{1:8} replacement=#-1000000000 indices=sbuf:int32[0:16]@384{1:8} wait=sem0>=4
            match_replace8 dst=sbuf:bf16[32:48]@0{1:16} in=sbuf:bf16[32:48]@64{1:16} values=sbuf:fp32[32:48]@96{1:8} replacement=#-inf indices=sbuf:uint32[32:48]@128{1:8} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:16]@0{1:24} src=hbm:fp32[16/24]@x{1:24} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@96{1:8} src=hbm:fp32[16/8]@vals{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:bf16[32:48]@64{1:16} src=hbm:bf16[16/16]@xb{1:16} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[32:48]@96{1:8} src=hbm:fp32[16/8]@vb{1:8} queue=3 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[16/24]@y{1:24} src=sbuf:fp32[0:16]@256{1:24} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:int32[16/8]@y_idx{1:8} src=sbuf:int32[0:16]@384{1:8} queue=1 bound=0
            dma_copy dst=hbm:bf16[16/16]@yb{1:16} src=sbuf:bf16[32:48]@0{1:16} queue=2 bound=0
            dma_copy dst=hbm:uint32[16/8]@yb_idx{1:8} src=sbuf:uint32[32:48]@128{1:8} queue=3 bound=0
    """)

    def ref(rows, values, replacement, none):
        out = np.array(rows, dtype=np.float64)
        idx = np.full(values.shape, float(none))
        for p in range(rows.shape[0]):
            taken = []
            for j in range(7, -1, -1):
                e = _first_match(list(rows[p]), values[p, j], taken)
                if e is not None:
                    taken.append(e)
                    idx[p, j] = e
            out[p, taken] = replacement
        return out, idx

    y, yi = ref(x, vals, -1e9, -1)
    yb, ybi = ref(xb, vb, -INF, 4294967295)
    assert np.all(ybi[:4, 7] == 15)
    t.expect("y", "fp32", y)
    t.expect("y_idx", "int32", yi)
    t.expect("yb", "bf16", yb)
    t.expect("yb_idx", "uint32", ybi)


def _welford(x):
    """bn_stats' summary of the columns of x [P, n] (insns-dve.md): fp32
    Welford in element order, every operation rounded to fp32 (float32 numpy
    arrays: one correctly rounded operation per step)."""
    f = np.float32
    n = np.zeros(x.shape[0], f)
    mean = np.zeros(x.shape[0], f)
    m2 = np.zeros(x.shape[0], f)
    for e in range(x.shape[1]):
        v = x[:, e].astype(f)
        n = n + f(1)
        delta = v - mean
        mean = mean + delta / n
        m2 = m2 + delta * (v - mean)
    return [n.astype(np.float64), mean.astype(np.float64), m2.astype(np.float64)]


def _bn_stats(x):
    half = (x.shape[1] + 1) // 2
    return np.stack(_welford(x[:, :half]) + _welford(x[:, half:]), axis=1)


def _bn_aggr(t):
    """bn_aggr of the triples in t [P, 3k] (insns-dve.md): Chan et al.'s
    pairwise combination in fp32, in order, skipping count-0 triples."""
    f = np.float32
    out = np.zeros((t.shape[0], 2))
    for p in range(t.shape[0]):
        n = mean = m2 = f(0)
        for g in range(t.shape[1] // 3):
            nb, mb, m2b = (f(v) for v in t[p, 3 * g: 3 * g + 3])
            if nb == 0:
                continue
            if n == 0:
                n, mean, m2 = nb, mb, m2b
                continue
            total = n + nb
            delta = mb - mean
            w = nb / total
            mean = mean + delta * w
            m2 = (m2 + m2b) + ((delta * delta) * n) * w
            n = total
        out[p] = (0.0, 0.0) if n == 0 else (mean, m2 / n)
    return out


def bn_stats_aggr():
    """bn_stats and bn_aggr (insns-dve.md). bn_stats: per partition, Welford
    (count, mean, m2) in fp32 of the halves [0, ceil(F/2)) and [ceil(F/2), F)
    of the elements; an empty half (F = 1) gives (0, 0, 0). bn_aggr: folds
    (count, mean, m2) triples in order with Chan's pairwise formula in fp32,
    skipping count 0, and writes (mean, m2 / n), or (0, 0) when n = 0. Rows
    with a large mean (50) make the fp32 rounding order matter; row 0 of x5
    is the document's example 1..5 -> (3, 2, 2, 2, 4.5, 0.5) -> (3, 2)."""
    t = Trace("bn_stats_aggr")
    x = t.normal((32, 15), 5.0) + 50.0
    x = round_to("fp32", x)
    x2 = round_to("fp32", t.normal((32, 10), 1.0) * 10.0 ** t.ints((32, 1), -2, 2) + 50.0)
    x1 = t.normal((32, 1), 3.0)
    x5 = t.normal((32, 5), 2.0)
    x5[0] = [1, 2, 3, 4, 5]
    trip = np.zeros((32, 9))
    trip[:, 0::3] = t.ints((32, 3), 1, 40)
    trip[:, 1::3] = t.normal((32, 3), 4.0)
    trip[:, 2::3] = np.abs(t.normal((32, 3), 30.0))
    trip[0, 0::3] = 0  # every count 0: (0, 0)
    trip[1, 0] = 0  # the first triple skipped
    for n, v in (("x", x), ("x2", x2), ("x1", x1), ("x5", x5), ("trip", trip)):
        t.input(n, "fp32", v)
    t.program("""
        ; x @0 (15), x2 @64 (10), x1 @104, x5 @108 (5), trip @128 (9);
        ; stats of x, x2, x1 side by side at @256 (18 values = 6 triples)
        .machine trn2
        .semaphores 3
        .tensor x input fp32 [32,15]
        .tensor x2 input fp32 [32,10]
        .tensor x1 input fp32 [32,1]
        .tensor x5 input fp32 [32,5]
        .tensor trip input fp32 [32,9]
        .tensor st output fp32 [32,18]
        .tensor st5 output fp32 [32,6]
        .tensor agg output fp32 [32,2]
        .tensor agg_trip output fp32 [32,2]
        .engine dve
            bn_stats dst=sbuf:fp32[0:32]@256{1:6} in=sbuf:fp32[0:32]@0{1:15} wait=sem0>=5
            bn_stats dst=sbuf:fp32[0:32]@280{1:6} in=sbuf:fp32[0:32]@64{1:10}
            bn_stats dst=sbuf:fp32[0:32]@304{1:6} in=sbuf:fp32[0:32]@104{1:1}
            bn_stats dst=psum:fp32[0:32]@0{1:6} in=sbuf:fp32[0:32]@108{1:5}
            bn_aggr dst=sbuf:fp32[0:32]@384{1:2} in=sbuf:fp32[0:32]@256{1:18}
            bn_aggr dst=psum:fp32[0:32]@64{1:2} in=sbuf:fp32[0:32]@128{1:9}
            tensor_copy dst=sbuf:fp32[0:32]@328{1:6} in=psum:fp32[0:32]@0{1:6}
            tensor_copy dst=sbuf:fp32[0:32]@392{1:2} in=psum:fp32[0:32]@64{1:2} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:15} src=hbm:fp32[32/15]@x{1:15} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@64{1:10} src=hbm:fp32[32/10]@x2{1:10} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@104{1:1} src=hbm:fp32[32/1]@x1{1:1} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@108{1:5} src=hbm:fp32[32/5]@x5{1:5} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@128{1:9} src=hbm:fp32[32/9]@trip{1:9} queue=4 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/18]@st{1:18} src=sbuf:fp32[0:32]@256{1:18} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[32/6]@st5{1:6} src=sbuf:fp32[0:32]@328{1:6} queue=1 bound=0
            dma_copy dst=hbm:fp32[32/2]@agg{1:2} src=sbuf:fp32[0:32]@384{1:2} queue=2 bound=0
            dma_copy dst=hbm:fp32[32/2]@agg_trip{1:2} src=sbuf:fp32[0:32]@392{1:2} queue=3 bound=0
    """)
    st = np.concatenate([_bn_stats(x), _bn_stats(x2), _bn_stats(x1)], axis=1)
    st5 = _bn_stats(x5)
    assert st5[0].tolist() == [3, 2, 2, 2, 4.5, 0.5]  # insns-dve.md example
    assert _bn_aggr(st5[:1]).tolist() == [[3, 2]]
    assert np.all(st[:, 15:18] == 0)  # x1's second half is empty
    agg = _bn_aggr(st)
    allx = np.concatenate([x, x2, x1], axis=1)  # sanity vs. exact statistics
    assert np.allclose(agg[:, 0], allx.mean(axis=1), rtol=1e-5)
    assert np.allclose(agg[:, 1], allx.var(axis=1), rtol=1e-3, atol=1e-3)
    t.expect("st", "fp32", st)
    t.expect("st5", "fp32", st5)
    t.expect("agg", "fp32", agg)
    agg_trip = _bn_aggr(trip)
    assert agg_trip[0].tolist() == [0, 0]
    t.expect("agg_trip", "fp32", agg_trip)


# ---------------------------------------------------------------- ACT

def act_exact():
    """activation (insns-act-pool.md) with functions whose fp32 result is
    exact or correctly rounded (identity, relu, square, abs, sign, sqrt,
    reciprocal): t = fp32(fp32(in * scale) + bias) (two roundings, no FMA),
    y = f(t) rounded once to fp32, dst = y converted to dst's dtype.
    scale / bias are immediates or per-partition scalars. acc_out folds the
    fp32 y values of a partition in element order from op0's identity (add
    -0, max -Inf, min +Inf, multiply 1, abs_max +0: a row of -0 sums to -0).
    Also: in from PSUM,
    dst at partitions 64..95, bf16 / fp16 / int32 outputs."""
    t = Trace("act_exact")
    x = t.normal((32, 16), 3.0)
    x[0] = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, 2 ** -140, -(2 ** -140), 1e30, -1e30,
            3.0, -3.0, 0.1, 4.0]
    x[1] = -0.0  # identity with bias -0 keeps -0: its add acc_out is -0 (identity -0)
    x = round_to("fp32", x)
    s = t.uniform((32, 1), -2.0, 2.0)
    b = t.normal((32, 1), 1.0)
    t.input("x", "fp32", x)
    t.input("s", "fp32", s)
    t.input("b", "fp32", b)
    specs = [  # name, func, scale, bias, acc op, dst dtype
        ("identity", "identity", s, b, "add", "fp32"),
        ("relu", "relu", 2.0, -0.5, "max", "bf16"),
        ("square", "square", 1.0, 0.0, "add", "fp32"),
        ("abs", "abs", 1.0, 0.0, "abs_max", "fp32"),
        ("sign", "sign", -1.0, 0.0, "min", "int32"),
        ("sqrt", "sqrt", 1.0, 0.0, "multiply", "fp32"),
        ("reciprocal", "reciprocal", s, 0.25, "add", "fp32"),
    ]
    t.program("""
        ; x @0 (and a copy in PSUM @0), s @64, b @68; function k writes its
        ; result at 512 + 64k and its acc_out at 1024 + 4k (k = 7: the fp16 one)
        .machine trn2
        .semaphores 3
        .tensor x input fp32 [32,16]
        .tensor s input fp32 [32,1]
        .tensor b input fp32 [32,1]
        .tensor y_identity output fp32 [32,16]
        .tensor y_relu output bf16 [32,16]
        .tensor y_square output fp32 [32,16]
        .tensor y_abs output fp32 [32,16]
        .tensor y_sign output int32 [32,16]
        .tensor y_sqrt output fp32 [32,16]
        .tensor y_reciprocal output fp32 [32,16]
        .tensor y_fp16 output fp16 [32,16]
        .tensor acc output fp32 [32,8]
        .engine dve
            tensor_copy dst=psum:fp32[0:32]@0{1:16} in=sbuf:fp32[0:32]@0{1:16} wait=sem0>=3 inc=sem1
        .engine act
            activation dst=sbuf:fp32[0:32]@512{1:16} in=sbuf:fp32[0:32]@0{1:16} scale=sbuf:fp32[0:32]@64{} bias=sbuf:fp32[0:32]@68{1:1} acc_out=sbuf:fp32[0:32]@1024{} op0=add func=identity wait=sem1>=1
            activation dst=sbuf:bf16[0:32]@576{1:16} in=sbuf:fp32[0:32]@0{1:16} scale=#2 bias=#-0.5 acc_out=sbuf:fp32[0:32]@1028{} op0=max func=relu
            activation dst=sbuf:fp32[0:32]@640{1:16} in=psum:fp32[0:32]@0{1:16} scale=#1 bias=#0 acc_out=psum:fp32[0:32]@256{} op0=add func=square
            activation dst=sbuf:fp32[0:32]@704{1:16} in=sbuf:fp32[0:32]@0{1:16} scale=#1 bias=#0 acc_out=sbuf:fp32[0:32]@1036{} op0=abs_max func=abs
            activation dst=sbuf:int32[0:32]@768{1:16} in=sbuf:fp32[0:32]@0{1:16} scale=#-1 bias=#0 acc_out=sbuf:fp32[0:32]@1040{} op0=min func=sign
            activation dst=sbuf:fp32[0:32]@832{1:16} in=sbuf:fp32[0:32]@0{1:16} scale=#1 bias=#0 acc_out=sbuf:fp32[0:32]@1044{} op0=multiply func=sqrt
            activation dst=sbuf:fp32[0:32]@896{1:16} in=psum:fp32[0:32]@0{1:16} scale=sbuf:fp32[0:32]@64{} bias=#0.25 acc_out=sbuf:fp32[0:32]@1048{} op0=add func=reciprocal
            activation dst=sbuf:fp16[64:96]@0{1:16} in=sbuf:fp32[0:32]@0{1:16} scale=#0.5 bias=#-0 acc_out=sbuf:fp32[0:32]@1052{} op0=add func=identity
            tensor_copy dst=sbuf:fp32[0:32]@1032{} in=psum:fp32[0:32]@256{} inc=sem2
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@x{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@64{1:1} src=hbm:fp32[32/1]@s{1:1} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@68{1:1} src=hbm:fp32[32/1]@b{1:1} queue=2 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/16]@y_identity{1:16} src=sbuf:fp32[0:32]@512{1:16} queue=0 bound=0 wait=sem2>=1
            dma_copy dst=hbm:bf16[32/16]@y_relu{1:16} src=sbuf:bf16[0:32]@576{1:16} queue=1 bound=0
            dma_copy dst=hbm:fp32[32/16]@y_square{1:16} src=sbuf:fp32[0:32]@640{1:16} queue=2 bound=0
            dma_copy dst=hbm:fp32[32/16]@y_abs{1:16} src=sbuf:fp32[0:32]@704{1:16} queue=3 bound=0
            dma_copy dst=hbm:int32[32/16]@y_sign{1:16} src=sbuf:int32[0:32]@768{1:16} queue=4 bound=0
            dma_copy dst=hbm:fp32[32/16]@y_sqrt{1:16} src=sbuf:fp32[0:32]@832{1:16} queue=5 bound=0
            dma_copy dst=hbm:fp32[32/16]@y_reciprocal{1:16} src=sbuf:fp32[0:32]@896{1:16} queue=6 bound=0
            dma_copy dst=hbm:fp16[32/16]@y_fp16{1:16} src=sbuf:fp16[64:96]@0{1:16} queue=7 bound=0
            dma_copy dst=hbm:fp32[32/8]@acc{1:8} src=sbuf:fp32[0:32]@1024{1:8} queue=8 bound=0
    """)
    acc = np.zeros((32, 8))
    for k, (name, f, sc, bi, op, dt) in enumerate(specs):
        tv = alu("add", alu("multiply", x, sc), bi)  # fp32(fp32(x s) + b)
        y = act(f, tv)
        t.expect("y_" + name, dt, y)
        acc[:, k] = fold(op, [y[:, e] for e in range(16)], REDUCE_IDENTITY[op])
    y = act("identity", alu("add", alu("multiply", x, 0.5), -0.0))
    acc[:, 7] = fold("add", [y[:, e] for e in range(16)], REDUCE_IDENTITY["add"])
    assert np.signbit(acc[1, 7]) and acc[1, 7] == 0
    t.expect("acc", "fp32", acc)
    t.expect("y_fp16", "fp16", y)


def act_transcendental():
    """activation with transcendental functions (insns-act-pool.md): exp,
    log, tanh, sigmoid, silu, gelu (erf form), gelu_tanh, rsqrt, each
    y = f(fp32(fp32(x s) + b)) evaluated in double and rounded once to fp32,
    plus the table's special values (exp(-Inf) = 0, log(0) = -Inf,
    log(-1) = NaN, gelu/silu(-Inf) = -0, rsqrt(0) = Inf, tanh(Inf) = 1 ...).
    The reference is Python's math module (double) rounded once, compared
    within the tolerance derived in ./tolerance."""
    t = Trace("act_transcendental")
    x = t.uniform((32, 16), -6.0, 6.0)
    x[0] = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, 88.8, -104.0, 2 ** -140, -(2 ** -140),
            10.0, -10.0, 20.0, -20.0]
    x = round_to("fp32", x)
    xp = t.uniform((32, 16), 0.0, 50.0)
    xp[0] = x[0]
    xp = round_to("fp32", xp)
    t.input("x", "fp32", x)
    t.input("xp", "fp32", xp)
    funcs = [("exp", "x", 0.5, 0.0), ("log", "xp", 1.0, 0.0), ("tanh", "x", 1.0, 0.0),
             ("sigmoid", "x", 1.0, 0.0), ("silu", "x", 1.0, 0.0), ("gelu", "x", 1.0, 0.0),
             ("gelu_tanh", "x", 1.0, 0.0), ("rsqrt", "xp", 1.0, 0.0)]
    lines = []
    tensors = []
    outs = []
    for k, (f, src, sc, bi) in enumerate(funcs):
        off_in = 0 if src == "x" else 64
        lines.append(f"activation dst=sbuf:fp32[0:32]@{256 + 64 * k}{{1:16}} "
                     f"in=sbuf:fp32[0:32]@{off_in}{{1:16}} scale=#{sc:g} bias=#{bi:g} func={f}")
        tensors.append(f".tensor y_{f} output fp32 [32,16]")
        outs.append(f"dma_copy dst=hbm:fp32[32/16]@y_{f}{{1:16}} "
                    f"src=sbuf:fp32[0:32]@{256 + 64 * k}{{1:16}} queue={k} bound=0")
    lines[0] = lines[0].replace("func=exp", "acc_out=sbuf:fp32[0:32]@128{} op0=add func=exp wait=sem0>=2")
    lines.append("activation dst=sbuf:bf16[32:64]@0{1:16} in=sbuf:fp32[0:32]@0{1:16} "
                 "scale=#1 bias=#0.5 func=gelu inc=sem1")
    outs[0] += " wait=sem1>=1"
    outs.append("dma_copy dst=hbm:bf16[32/16]@y_gelu_bf16{1:16} src=sbuf:bf16[32:64]@0{1:16} "
                "queue=8 bound=0")
    outs.append("dma_copy dst=hbm:fp32[32/1]@exp_sum{1:1} src=sbuf:fp32[0:32]@128{1:1} "
                "queue=9 bound=0")
    ind = "\n" + " " * 12
    tensor_lines = ("\n" + " " * 8).join(tensors)
    t.program(f"""
        ; x @0, xp (positive, for log and rsqrt) @64; exp's acc_out (add) @128;
        ; function k writes at 256 + 64k
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [32,16]
        .tensor xp input fp32 [32,16]
        {tensor_lines}
        .tensor y_gelu_bf16 output bf16 [32,16]
        .tensor exp_sum output fp32 [32,1]
        .engine act
            {ind.join(lines)}
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{{1:16}} src=hbm:fp32[32/16]@x{{1:16}} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@64{{1:16}} src=hbm:fp32[32/16]@xp{{1:16}} queue=1 bound=0 inc=sem0
            {ind.join(outs)}
    """)
    for f, src, sc, bi in funcs:
        v = x if src == "x" else xp
        y = act(f, alu("add", alu("multiply", v, sc), bi))
        t.expect("y_" + f, "fp32", y)
        if f == "exp":
            t.expect("exp_sum", "fp32",
                     fold("add", [y[:, e] for e in range(16)], REDUCE_IDENTITY["add"]).reshape(32, 1))
    t.expect("y_gelu_bf16", "bf16", act("gelu", alu("add", x, 0.5)))
    t.tolerance("""
        # Tolerance derivation. nx_act_apply evaluates f in double and rounds
        # once to fp32 (insns-act-pool.md), which is the correctly rounded
        # fp32 value except when f(t) lies within double precision of an fp32
        # rounding boundary; the expected values here come from Python's math
        # module (double libm, < 1 double ulp) rounded once to fp32. The two
        # roundings can therefore land on adjacent values: 1 ulp of the output
        # dtype (fp32; for y_gelu_bf16 a 1-fp32-ulp difference can move the
        # bf16 rounding by at most 1 bf16 ulp). Special values (Inf, NaN, -0,
        # exact 0/1) are exact under ulp 1 as well: an ulp distance of 0 or 1
        # from Inf/NaN/0 is checked by the bit patterns.
        * ulp 1
        # exp_sum = acc_out: the fp32 sum, in element order, of 16 positive exp
        # values y_e, folded from -0 (so the first step is exact and 15 round).
        # Each addend may differ by 1 ulp (<= 2^-23 |y_e|): at most 2^-23 S in
        # total, S the sum. Two roundings to nearest of exact partial sums that
        # already differ by d give results at most d + 2 * (half an ulp of the
        # partial sum) apart, i.e. each of the 15 rounded additions adds at most
        # 2^-23 S: |err| <= 2^-23 S + 15 * 2^-23 S = 16 * 2^-23 S ~ 1.91e-6 S.
        # With a little margin:
        exp_sum rel 2.1e-6
    """)


# ---------------------------------------------------------------- POOL

def iota():
    """iota (insns-act-pool.md): dst[p, e] = base + cm * p + sum_k stride_k i_k
    for the pattern's multi-index (i_0 outermost), converted to dst's dtype:
    int32 as is, fp32 exact, bf16 rounds to nearest even (2^24 + 1 + 65536 p
    + i: odd p lands past a halfway point), int8 saturates. Negative strides
    and channel multiplier; partition offsets 96 and 32."""
    t = Trace("iota")
    t.program("""
        .machine trn2
        .semaphores 1
        .tensor y1 output int32 [128,16]
        .tensor y2 output fp32 [32,8]
        .tensor y3 output bf16 [16,8]
        .tensor y4 output int8 [16,8]
        .engine pool
            iota dst=sbuf:int32[0:128]@0{1:16} pattern=pat:int32[128](5,16){1:16}
            iota dst=sbuf:fp32[96:128]@64{1:8} pattern=pat:int32[32](-3,-2){3:2,-1:4}
            iota dst=sbuf:bf16[0:16]@96{1:8} pattern=pat:int32[16](16777217,65536){1:8}
            iota dst=sbuf:int8[32:48]@112{1:8} pattern=pat:int32[16](100,10){-7:8} inc=sem0
        .engine sp
            dma_copy dst=hbm:int32[128/16]@y1{1:16} src=sbuf:int32[0:128]@0{1:16} queue=0 bound=0 wait=sem0>=1
            dma_copy dst=hbm:fp32[32/8]@y2{1:8} src=sbuf:fp32[96:128]@64{1:8} queue=1 bound=0
            dma_copy dst=hbm:bf16[16/8]@y3{1:8} src=sbuf:bf16[0:16]@96{1:8} queue=2 bound=0
            dma_copy dst=hbm:int8[16/8]@y4{1:8} src=sbuf:int8[32:48]@112{1:8} queue=3 bound=0
    """)
    p = np.arange(128)[:, None]
    i = np.arange(16)[None, :]
    t.expect("y1", "int32", 5 + 16 * p + i)
    p32 = np.arange(32)[:, None, None]
    i0 = np.arange(2)[None, :, None]
    i1 = np.arange(4)[None, None, :]
    t.expect("y2", "fp32", (-3 - 2 * p32 + 3 * i0 - i1).reshape(32, 8))
    p16 = np.arange(16)[:, None]
    i8 = np.arange(8)[None, :]
    y3 = (16777217 + 65536 * p16 + i8).astype(np.float64)
    t.expect("y3", "bf16", y3)  # the store rounds the exact integer once
    assert formats.load("bf16", formats.store("bf16", [16777217.0 + 65536]))[0] == 16908288.0
    t.expect("y4", "int8", 100 + 10 * p16 - 7 * i8)


def affine_select():
    """affine_select (insns-act-pool.md): dst = (pattern(p, e) CMP 0) ? in : fill.
    Causal mask: pattern p - e with is_ge keeps e <= p, -Inf above; a band
    (p - e - 4 < 0) at partitions 64..95; not_equal blanks the diagonal into
    a bf16 dst; a two-dim pattern p - 16 i0 - i1 with is_le."""
    t = Trace("affine_select")
    x = t.normal((64, 64), 2.0)
    t.input("x", "fp32", x)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [64,64]
        .tensor y_causal output fp32 [64,64]
        .tensor y_band output fp32 [32,64]
        .tensor y_diag output bf16 [64,64]
        .tensor y_2d output fp32 [64,64]
        .engine pool
            affine_select dst=sbuf:fp32[0:64]@256{1:64} pattern=pat:int32[64](0,1){-1:64} in=sbuf:fp32[0:64]@0{1:64} fill=#-inf op0=is_ge wait=sem0>=2
            affine_select dst=sbuf:fp32[64:96]@256{1:64} pattern=pat:int32[32](-4,1){-1:64} in=sbuf:fp32[64:96]@0{1:64} fill=#0 op0=is_lt
            affine_select dst=sbuf:bf16[0:64]@512{1:64} pattern=pat:int32[64](0,1){-1:64} in=sbuf:fp32[0:64]@0{1:64} fill=#-1 op0=not_equal
            affine_select dst=sbuf:fp32[0:64]@640{1:64} pattern=pat:int32[64](0,1){-16:4,-1:16} in=sbuf:fp32[0:64]@0{1:64} fill=#9 op0=is_le inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:64]@0{1:64} src=hbm:fp32[64/64]@x{1:64} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[64:96]@0{1:64} src=hbm:fp32[32/64]@x{1:64} queue=1 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[64/64]@y_causal{1:64} src=sbuf:fp32[0:64]@256{1:64} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[32/64]@y_band{1:64} src=sbuf:fp32[64:96]@256{1:64} queue=1 bound=0
            dma_copy dst=hbm:bf16[64/64]@y_diag{1:64} src=sbuf:bf16[0:64]@512{1:64} queue=2 bound=0
            dma_copy dst=hbm:fp32[64/64]@y_2d{1:64} src=sbuf:fp32[0:64]@640{1:64} queue=3 bound=0
    """)
    p = np.arange(64)[:, None]
    e = np.arange(64)[None, :]
    t.expect("y_causal", "fp32", np.where(p - e >= 0, x, -INF))
    t.expect("y_band", "fp32", np.where(-4 + p[:32] - e < 0, x[:32], 0.0))
    t.expect("y_diag", "bf16", np.where(p - e != 0, x, -1.0))
    pat2 = p - 16 * (e // 16) - (e % 16)  # = p - e, built from the 2-dim pattern
    t.expect("y_2d", "fp32", np.where(pat2 <= 0, x, 9.0))


def local_gather():
    """local_gather (insns-act-pool.md): each GpSimd core g (16 partitions)
    gathers only from its own partitions: dst[q, n] = in[16 g + idx / F,
    idx % F] with idx = indices[q, n], g = q / 16 (absolute partitions).
    Partitions 32..63 (cores 2 and 3) with int32 indices; then 24 partitions
    from 0 (core 1 only sees partitions 16..23: valid indices 0..8F-1) with
    int16 indices and a bf16 dst."""
    t = Trace("local_gather")
    xa = t.normal((32, 4), 3.0)
    ia = t.ints((32, 6), 0, 63)
    xb = t.normal((24, 4), 3.0)
    ib = np.concatenate([t.ints((16, 5), 0, 63), t.ints((8, 5), 0, 31)])
    t.input("xa", "fp32", xa)
    t.input("ia", "int32", ia)
    t.input("xb", "fp32", xb)
    t.input("ib", "int16", ib)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor xa input fp32 [32,4]
        .tensor ia input int32 [32,6]
        .tensor xb input fp32 [24,4]
        .tensor ib input int16 [24,5]
        .tensor ya output fp32 [32,6]
        .tensor yb output bf16 [24,5]
        .engine pool
            local_gather dst=sbuf:fp32[32:64]@48{1:6} in=sbuf:fp32[32:64]@0{1:4} indices=sbuf:int32[32:64]@16{1:6} wait=sem0>=4
            local_gather dst=sbuf:bf16[0:24]@176{1:5} in=sbuf:fp32[0:24]@128{1:4} indices=sbuf:int16[0:24]@160{1:5} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[32:64]@0{1:4} src=hbm:fp32[32/4]@xa{1:4} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[32:64]@16{1:6} src=hbm:int32[32/6]@ia{1:6} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:24]@128{1:4} src=hbm:fp32[24/4]@xb{1:4} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:int16[0:24]@160{1:5} src=hbm:int16[24/5]@ib{1:5} queue=3 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/6]@ya{1:6} src=sbuf:fp32[32:64]@48{1:6} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:bf16[24/5]@yb{1:5} src=sbuf:bf16[0:24]@176{1:5} queue=1 bound=0
    """)

    def gather(x, idx, start):
        F = x.shape[1]
        out = np.zeros(idx.shape)
        for r in range(idx.shape[0]):
            q = start + r
            g = q // 16
            for n in range(idx.shape[1]):
                i = int(idx[r, n])
                src = 16 * g + i // F  # absolute partition
                assert start <= src < start + x.shape[0]
                out[r, n] = x[src - start, i % F]
        return out

    t.expect("ya", "fp32", gather(xa, ia, 32))
    t.expect("yb", "bf16", gather(xb, ib, 0))


def partition_all_reduce():
    """partition_all_reduce (insns-act-pool.md): r[e] = identity; for each
    partition q in order r[e] = r[e] op0 in[q, e]; every dst partition gets
    r. add (fp32 rounding per step, in partition order; identity -0, so a
    column of -0 sums to -0), max, abs_max (into
    bf16), multiply, and bitwise and/or/xor on int32 (32-bit patterns;
    and's identity is all ones). dst partitions may differ from in's."""
    t = Trace("partition_all_reduce")
    x = t.normal((32, 8), 1.0) * 10.0 ** t.ints((32, 8), -3, 3)
    x[:, 0] = -0.0  # a sum of only -0 is -0 (add's identity is -0)
    x = round_to("fp32", x)
    m = t.uniform((32, 8), 0.8, 1.25)
    xi = t.ints((32, 8), -2 ** 31, 2 ** 31 - 1)
    t.input("x", "fp32", x)
    t.input("m", "fp32", m)
    t.input("xi", "int32", xi)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [32,8]
        .tensor m input fp32 [32,8]
        .tensor xi input int32 [32,8]
        .tensor r_add output fp32 [32,8]
        .tensor r_max output fp32 [32,8]
        .tensor r_absmax output bf16 [32,8]
        .tensor r_mul output fp32 [32,8]
        .tensor r_and output int32 [32,8]
        .tensor r_or output int32 [32,8]
        .tensor r_xor output int32 [32,8]
        .engine pool
            partition_all_reduce dst=sbuf:fp32[64:96]@0{1:8} in=sbuf:fp32[0:32]@0{1:8} op0=add wait=sem0>=3
            partition_all_reduce dst=sbuf:fp32[0:32]@128{1:8} in=sbuf:fp32[0:32]@0{1:8} op0=max
            partition_all_reduce dst=sbuf:bf16[0:32]@160{1:8} in=sbuf:fp32[0:32]@0{1:8} op0=abs_max
            partition_all_reduce dst=sbuf:fp32[0:32]@192{1:8} in=sbuf:fp32[0:32]@32{1:8} op0=multiply
            partition_all_reduce dst=sbuf:int32[0:32]@224{1:8} in=sbuf:int32[0:32]@64{1:8} op0=bitwise_and
            partition_all_reduce dst=sbuf:int32[0:32]@256{1:8} in=sbuf:int32[0:32]@64{1:8} op0=bitwise_or
            partition_all_reduce dst=sbuf:int32[96:128]@0{1:8} in=sbuf:int32[0:32]@64{1:8} op0=bitwise_xor inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:8} src=hbm:fp32[32/8]@x{1:8} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@32{1:8} src=hbm:fp32[32/8]@m{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@64{1:8} src=hbm:int32[32/8]@xi{1:8} queue=2 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/8]@r_add{1:8} src=sbuf:fp32[64:96]@0{1:8} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[32/8]@r_max{1:8} src=sbuf:fp32[0:32]@128{1:8} queue=1 bound=0
            dma_copy dst=hbm:bf16[32/8]@r_absmax{1:8} src=sbuf:bf16[0:32]@160{1:8} queue=2 bound=0
            dma_copy dst=hbm:fp32[32/8]@r_mul{1:8} src=sbuf:fp32[0:32]@192{1:8} queue=3 bound=0
            dma_copy dst=hbm:int32[32/8]@r_and{1:8} src=sbuf:int32[0:32]@224{1:8} queue=4 bound=0
            dma_copy dst=hbm:int32[32/8]@r_or{1:8} src=sbuf:int32[0:32]@256{1:8} queue=5 bound=0
            dma_copy dst=hbm:int32[32/8]@r_xor{1:8} src=sbuf:int32[96:128]@0{1:8} queue=6 bound=0
    """)
    ones = np.ones((32, 1))
    def red(op, v):
        return ones * fold(op, list(v), REDUCE_IDENTITY[op])[None, :]

    assert np.signbit(red("add", x)[0, 0])
    t.expect("r_add", "fp32", red("add", x))
    t.expect("r_max", "fp32", red("max", x))
    t.expect("r_absmax", "bf16", red("abs_max", x))
    t.expect("r_mul", "fp32", red("multiply", m))
    t.expect("r_and", "int32", bits_to("int32", red("bitwise_and", xi)))
    t.expect("r_or", "int32", bits_to("int32", red("bitwise_or", xi)))
    xor = np.bitwise_xor.reduce(xi.astype(np.int64), axis=0)  # two's complement check
    assert np.array_equal(red("bitwise_xor", xi)[0], xor.astype(np.float64))
    t.expect("r_xor", "int32", bits_to("int32", red("bitwise_xor", xi)))


def partition_broadcast():
    """partition_broadcast (insns-act-pool.md): dst[p, e] = in[0, e] for every
    dst partition; in has one partition (here partition 32). Converted to
    dst's dtype: bf16 over all 128 partitions, int32 (RNE) at 96..111."""
    t = Trace("partition_broadcast")
    v = t.normal((1, 16), 50.0)
    v[0, :4] = [2.5, 3.5, -2.5, 1 + 2 ** -8]
    v = round_to("fp32", v)
    t.input("v", "fp32", v)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor v input fp32 [1,16]
        .tensor y_all output bf16 [128,16]
        .tensor y_i32 output int32 [16,16]
        .engine pool
            partition_broadcast dst=sbuf:bf16[0:128]@64{1:16} in=sbuf:fp32[32:33]@0{1:16} wait=sem0>=1
            partition_broadcast dst=sbuf:int32[96:112]@128{1:16} in=sbuf:fp32[32:33]@0{1:16} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[32:33]@0{1:16} src=hbm:fp32[1/16]@v{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:bf16[128/16]@y_all{1:16} src=sbuf:bf16[0:128]@64{1:16} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:int32[16/16]@y_i32{1:16} src=sbuf:int32[96:112]@128{1:16} queue=1 bound=0
    """)
    t.expect("y_all", "bf16", np.repeat(v, 128, axis=0))
    t.expect("y_i32", "int32", np.repeat(v, 16, axis=0))


# ---------------------------------------------------------------- control

def sem_pipeline():
    """Semaphores across all five engines, nop and end (assembly.md, exec.h):
    an instruction with wait=semS>=V starts only when semaphore S >= V and
    inc=semS+A adds A when it completes. DMA in -> DVE (2x) -> ACT (+1) ->
    POOL (+x) -> PE transpose into PSUM -> DVE copy -> ACT nop (inc by 2) ->
    DMA out; `end` closes three streams. y = (fp32(fp32(2x) + 1) + x)^T."""
    t = Trace("sem_pipeline")
    x = t.normal((32, 32), 3.0)
    t.input("x", "fp32", x)
    t.program("""
        .machine trn2
        .semaphores 8
        .tensor x input fp32 [32,32]
        .tensor y output fp32 [32,32]
        .engine pe
            transpose dst=psum:fp32[0:32]@0{1:32} src=sbuf:fp32[0:32]@384{1:32} wait=sem3>=1 inc=sem4
            end
        .engine dve
            tensor_scalar dst=sbuf:fp32[0:32]@128{1:32} in=sbuf:fp32[0:32]@0{1:32} scalar0=#2 op0=multiply wait=sem0>=1 inc=sem1
            tensor_copy dst=sbuf:fp32[0:32]@512{1:32} in=psum:fp32[0:32]@0{1:32} wait=sem4>=1 inc=sem5
        .engine act
            activation dst=sbuf:fp32[0:32]@256{1:32} in=sbuf:fp32[0:32]@128{1:32} scale=#1 bias=#1 func=identity wait=sem1>=1 inc=sem2
            nop wait=sem5>=1 inc=sem6+2
        .engine pool
            tensor_tensor dst=sbuf:fp32[0:32]@384{1:32} in0=sbuf:fp32[0:32]@256{1:32} in1=sbuf:fp32[0:32]@0{1:32} op0=add wait=sem2>=1 inc=sem3
            end
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:32} src=hbm:fp32[32/32]@x{1:32} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/32]@y{1:32} src=sbuf:fp32[0:32]@512{1:32} queue=1 bound=0 wait=sem6>=2 inc=sem7
            end wait=sem7>=1
    """)
    v = alu("add", alu("add", alu("multiply", x, 2.0), 1.0), x)
    t.expect("y", "fp32", v.T)


def sem_span():
    """A wait on a span of semaphores (assembly.md, docs/ISA.md "Machine
    model"): wait=semA..B>=V starts only when every semaphore A..B is >= V.
    Four DMA transfers on four engines' queues each load a quarter of x's
    rows and increment their own semaphore (sem0..sem3); the last three
    are issued only after a POOL nop that waits for the first (sem6), so a
    DVE instruction that waited on sem0 alone would double zeros in rows
    16..64 on either backend. DVE waits on sem0..3 and doubles the whole
    tile; ACT adds 1 to rows 32..64; SP's end waits on the span too. y = 2x on rows 0..32, 2x + 1 on
    rows 32..64."""
    t = Trace("sem_span")
    x = t.normal((64, 16), 3.0)
    t.input("x", "fp32", x)
    t.program("""
        .machine trn2
        .semaphores 7
        .tensor x input fp32 [64,16]
        .tensor y output fp32 [64,16]
        .engine dve
            tensor_scalar dst=sbuf:fp32[0:64]@128{1:16} in=sbuf:fp32[0:64]@0{1:16} scalar0=#2 op0=multiply wait=sem0..3>=1 inc=sem4
        .engine act
            activation dst=sbuf:fp32[32:64]@128{1:16} in=sbuf:fp32[32:64]@128{1:16} scale=#1 bias=#1 func=identity wait=sem4>=1 inc=sem5
        .engine pool
            nop wait=sem0>=1 inc=sem6
        .engine sp
            dma_copy dst=sbuf:fp32[0:16]@0{1:16} src=hbm:fp32[16/16]@x{1:16} queue=0 bound=0 inc=sem0
            nop wait=sem6>=1
            dma_copy dst=sbuf:fp32[16:32]@0{1:16} src=hbm:fp32[16/16]@x+1024{1:16} queue=16 bound=0 inc=sem1
            dma_copy dst=sbuf:fp32[32:48]@0{1:16} src=hbm:fp32[16/16]@x+2048{1:16} queue=32 bound=0 inc=sem2
            dma_copy dst=sbuf:fp32[48:64]@0{1:16} src=hbm:fp32[16/16]@x+3072{1:16} queue=48 bound=0 inc=sem3
            dma_copy dst=hbm:fp32[32/16]@y{1:16} src=sbuf:fp32[0:32]@128{1:16} queue=1 bound=0 wait=sem4>=1
            dma_copy dst=hbm:fp32[32/16]@y+2048{1:16} src=sbuf:fp32[32:64]@128{1:16} queue=2 bound=0 wait=sem5>=1
            end wait=sem0..3>=1
    """)
    v = alu("multiply", x, 2.0)
    v[32:] = alu("add", v[32:], 1.0)
    t.expect("y", "fp32", v)


def two_core_barrier():
    """Two cores (.cores 2) sharing HBM, synchronised by core_barrier (every
    core waits until all cores reached their matching barrier). Core 0
    writes 2a to scratch s0, core 1 writes 3b to s1; after the barrier each
    reads the other's scratch: y0 = 2a + 3b (core 0), y1 = 3b - 2a (core 1).
    Each barrier waits for its core's DMA to have completed (semaphore)."""
    t = Trace("two_core_barrier")
    a = t.normal((32, 16), 2.0)
    b = t.normal((32, 16), 2.0)
    t.input("a", "fp32", a)
    t.input("b", "fp32", b)
    t.program("""
        .machine trn2
        .cores 2
        .semaphores 5
        .tensor a input fp32 [32,16]
        .tensor b input fp32 [32,16]
        .tensor s0 scratch fp32 [32,16]
        .tensor s1 scratch fp32 [32,16]
        .tensor y0 output fp32 [32,16]
        .tensor y1 output fp32 [32,16]
        .core 0
        .engine dve
            tensor_scalar dst=sbuf:fp32[0:32]@64{1:16} in=sbuf:fp32[0:32]@0{1:16} scalar0=#2 op0=multiply wait=sem0>=1 inc=sem1
            tensor_tensor dst=sbuf:fp32[0:32]@192{1:16} in0=sbuf:fp32[0:32]@64{1:16} in1=sbuf:fp32[0:32]@128{1:16} op0=add wait=sem3>=1 inc=sem4
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@a{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/16]@s0{1:16} src=sbuf:fp32[0:32]@64{1:16} queue=0 bound=0 wait=sem1>=1 inc=sem2
            core_barrier wait=sem2>=1
            dma_copy dst=sbuf:fp32[0:32]@128{1:16} src=hbm:fp32[32/16]@s1{1:16} queue=1 bound=0 inc=sem3
            dma_copy dst=hbm:fp32[32/16]@y0{1:16} src=sbuf:fp32[0:32]@192{1:16} queue=0 bound=0 wait=sem4>=1
        .core 1
        .engine dve
            tensor_scalar dst=sbuf:fp32[0:32]@64{1:16} in=sbuf:fp32[0:32]@0{1:16} scalar0=#3 op0=multiply wait=sem0>=1 inc=sem1
            tensor_tensor dst=sbuf:fp32[0:32]@192{1:16} in0=sbuf:fp32[0:32]@64{1:16} in1=sbuf:fp32[0:32]@128{1:16} op0=subtract wait=sem3>=1 inc=sem4
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@b{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/16]@s1{1:16} src=sbuf:fp32[0:32]@64{1:16} queue=0 bound=0 wait=sem1>=1 inc=sem2
            core_barrier wait=sem2>=1
            dma_copy dst=sbuf:fp32[0:32]@128{1:16} src=hbm:fp32[32/16]@s0{1:16} queue=1 bound=0 inc=sem3
            dma_copy dst=hbm:fp32[32/16]@y1{1:16} src=sbuf:fp32[0:32]@192{1:16} queue=0 bound=0 wait=sem4>=1
    """)
    a2 = alu("multiply", a, 2.0)
    b3 = alu("multiply", b, 3.0)
    t.expect("y0", "fp32", alu("add", a2, b3))
    t.expect("y1", "fp32", alu("subtract", b3, a2))


# ---------------------------------------------------------------- errors

def errors():
    """Negative traces (traces/errors/*, not conformance runs): `nxsim exec`
    must exit non-zero and print exactly expected_error.txt on stderr."""
    t = Trace("errors/oob_access")
    t.input("x", "fp32", t.normal((32, 16)))
    t.program("""
        ; tensor_copy whose input walks backwards (stride -1) from byte 8 of
        ; each partition: elements at bytes 8, 4, 0, -4, ... leave SBUF
        .machine trn2
        .semaphores 1
        .tensor x input fp32 [32,16]
        .tensor y output fp32 [32,16]
        .engine dve
            tensor_copy dst=sbuf:fp32[0:32]@256{1:16} in=sbuf:fp32[0:32]@8{-1:16} wait=sem0>=1 inc=sem0
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@x{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/16]@y{1:16} src=sbuf:fp32[0:32]@256{1:16} queue=0 bound=0 wait=sem0>=2
    """)
    # elements at byte 8 - 4 i for i = 0..15: [8 - 60, 8 + 4) = [-52, 12)
    t.expected_error("nxsim: program.nxs: core 0 dve #0 (tensor_copy): in: bytes [-52, 12) of "
                     "each partition outside SBUF's 229376 bytes per partition")
    t = Trace("errors/sbuf_overflow")
    t.program("""
        ; memset of 128 fp32 per partition starting 256 bytes before the end of
        ; trn2's 224 KiB (229376-byte) SBUF partition
        .machine trn2
        .semaphores 1
        .tensor y output fp32 [128,128]
        .engine pool
            memset dst=sbuf:fp32[0:128]@229120{1:128} value=#1 inc=sem0
        .engine sp
            dma_copy dst=hbm:fp32[128/128]@y{1:128} src=sbuf:fp32[0:128]@229120{1:128} queue=0 bound=0 wait=sem0>=1
    """)
    # 128 fp32 from byte 229120: [229120, 229120 + 512); trn2 SBUF partition: 224 KiB
    t.expected_error("nxsim: program.nxs: core 0 pool #0 (memset): dst: bytes [229120, 229632) of "
                     "each partition outside SBUF's 229376 bytes per partition")
    t = Trace("errors/gather_oob")
    t.input("tab", "fp32", t.normal((8, 4)))
    t.input("idx", "int32", np.array([[0], [7], [8], [1]], dtype=np.float64))
    t.program("""
        ; gather without oob_skip: offsets[2] = 8 is outside [0, 8) - a fault
        ; at run time, naming the instruction
        .machine trn2
        .semaphores 1
        .tensor tab input fp32 [8,4]
        .tensor idx input int32 [4,1]
        .tensor y output fp32 [4,4]
        .engine sp
            dma_copy dst=sbuf:int32[0:4]@0{1:1} src=hbm:int32[4/1]@idx{1:1} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:4]@16{1:4} src=hbm:fp32[4/4]@tab{1:4} offsets=sbuf:int32[0:4]@0{1:1} queue=1 bound=8 wait=sem0>=1
            dma_copy dst=hbm:fp32[4/4]@y{1:4} src=sbuf:fp32[0:4]@16{1:4} queue=1 bound=0
    """)
    t.expected_error("nxsim: program.nxs: core 0 sp #1 (dma_copy): offsets[2] = 8 is out of bounds [0, 8)")
    t = Trace("errors/partition_broadcast_start")
    t.input("v", "fp32", t.normal((1, 8)))
    t.program("""
        ; partition_broadcast's one source partition obeys the start-partition
        ; rule of a 1-partition operand (0, 32, 64 or 96): partition 5 is a
        ; validation error; the data must first move to one of those by DMA
        .machine trn2
        .semaphores 1
        .tensor v input fp32 [1,8]
        .tensor y output fp32 [16,8]
        .engine pool
            partition_broadcast dst=sbuf:fp32[0:16]@64{1:8} in=sbuf:fp32[5:6]@0{1:8} wait=sem0>=1 inc=sem0
        .engine sp
            dma_copy dst=sbuf:fp32[5:6]@0{1:8} src=hbm:fp32[1/8]@v{1:8} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[16/8]@y{1:8} src=sbuf:fp32[0:16]@64{1:8} queue=0 bound=0 wait=sem0>=2
    """)
    t.expected_error("nxsim: program.nxs: core 0 pool #0 (partition_broadcast): in: start partition 5 "
                     "not allowed for 1 partitions (> 64 partitions: 0; > 32: a multiple of 64; "
                     "else a multiple of 32)")



# ------------------------------------------- NaN, bitvec, reduce and DMA rules (docs/parts/dtypes.md)

def _f32_bits_to_values(bits):
    """Engine values of raw fp32 bit patterns (NaN keeps its sign)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs widen quietly, sign kept
        return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(np.float64)


def _canonical_f32(bits):
    """The fp32 store rule on raw bits: a NaN becomes the canonical quiet NaN
    of its sign (dtypes.md), everything else is kept."""
    bits = np.asarray(bits, dtype=np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (bits & 0x80000000) | 0x7FC00000, bits).astype(np.uint32)


def fp32_nan():
    """The NaN rules, compared bit for bit (tolerance `bits`). dtypes.md: a
    store of an engine value to fp32 writes the canonical quiet NaN of the
    NaN's sign, 0x7fc00000 / 0xffc00000, whatever the payload (signalling,
    quiet with payload bits): tensor_copy on DVE (SBUF and PSUM), ACT and
    POOL, activation identity with scale 1 and bias -0 (x * 1 + -0 is x for
    every x, -0 included; a NaN passes with its sign), tensor_scalar add 0 and
    max -inf. A DMA between
    equal dtypes is a bit copy and keeps the payload. insns-dve.md "The ALU":
    an arithmetic op returns a's NaN if a is NaN, else b's, and an invalid
    operation on non-NaN operands (0/0, Inf - Inf, 0 * Inf) the positive NaN;
    max/min propagate a's NaN first; abs_max drops the sign."""
    t = Trace("fp32_nan")
    special = np.array([0x7F812345, 0xFF812345, 0x7FC12345, 0xFFC00001, 0x7FA00000, 0xFFC00000,
                        0x7FC00000, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x3F800000,
                        0xBF800000, 0x40490FDB, 0x00000001, 0x7F7FFFFF], dtype=np.uint32)
    # a: every special value in every column position over 16 partitions; b:
    # the same set rotated, so every pair (NaN, NaN), (NaN, x), (x, NaN),
    # (0, 0), (Inf, Inf), (0, Inf) ... occurs
    a_bits = np.array([np.roll(special, p) for p in range(16)], dtype=np.uint32)
    b_bits = np.array([np.roll(special[::-1], 3 * p) for p in range(16)], dtype=np.uint32)
    t.input_raw("a", a_bits.view("<f4"))
    t.input_raw("b", b_bits.view("<f4"))
    a, b = _f32_bits_to_values(a_bits), _f32_bits_to_values(b_bits)
    ops = ["add", "subtract", "multiply", "divide", "max", "min", "abs_max"]
    lines = [f"    tensor_tensor dst=sbuf:fp32[0:16]@{512 + 64 * k}{{1:16}} in0=sbuf:fp32[0:16]@0{{1:16}} "
             f"in1=sbuf:fp32[0:16]@64{{1:16}} op0={op}" for k, op in enumerate(ops)]
    body = "\n".join("        " + ln for ln in lines)
    t.program(f"""
        ; SBUF per partition: a @0, b @64; copies @128.. ; ALU results @512 + 64k
        .machine trn2
        .semaphores 4
        .tensor a input fp32 [16,16]
        .tensor b input fp32 [16,16]
        .tensor y_copy_dve output fp32 [16,16]
        .tensor y_copy_psum output fp32 [16,16]
        .tensor y_copy_act output fp32 [16,16]
        .tensor y_copy_pool output fp32 [16,16]
        .tensor y_act output fp32 [16,16]
        .tensor y_add0 output fp32 [16,16]
        .tensor y_max output fp32 [16,16]
        .tensor y_dma output fp32 [16,16]
        .tensor y_alu output fp32 [16,{len(ops)},16]
        .engine dve
            tensor_copy dst=sbuf:fp32[0:16]@128{{1:16}} in=sbuf:fp32[0:16]@0{{1:16}} wait=sem0>=2
            tensor_copy dst=psum:fp32[0:16]@0{{1:16}} in=sbuf:fp32[0:16]@0{{1:16}}
            tensor_copy dst=sbuf:fp32[0:16]@384{{1:16}} in=psum:fp32[0:16]@0{{1:16}}
            tensor_scalar dst=sbuf:fp32[0:16]@320{{1:16}} in=sbuf:fp32[0:16]@0{{1:16}} scalar0=#0 op0=add
{body}
            nop inc=sem1
        .engine act
            tensor_copy dst=sbuf:fp32[0:16]@192{{1:16}} in=sbuf:fp32[0:16]@0{{1:16}} wait=sem0>=2
            activation dst=sbuf:fp32[0:16]@256{{1:16}} in=sbuf:fp32[0:16]@0{{1:16}} scale=#1 bias=#-0 func=identity inc=sem2
        .engine pool
            tensor_copy dst=sbuf:fp32[32:48]@128{{1:16}} in=sbuf:fp32[0:16]@0{{1:16}} wait=sem0>=2
            tensor_scalar dst=sbuf:fp32[32:48]@192{{1:16}} in=sbuf:fp32[0:16]@0{{1:16}} scalar0=#-inf op0=max inc=sem3
        .engine sp
            dma_copy dst=sbuf:fp32[0:16]@0{{1:16}} src=hbm:fp32[16/16]@a{{1:16}} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@64{{1:16}} src=hbm:fp32[16/16]@b{{1:16}} queue=1 bound=0 inc=sem0
            ; an equal-dtype DMA is a bit copy: payloads kept
            dma_copy dst=hbm:fp32[16/16]@y_dma{{1:16}} src=sbuf:fp32[0:16]@0{{1:16}} queue=2 bound=0 wait=sem0>=2
            dma_copy dst=hbm:fp32[16/16]@y_copy_dve{{1:16}} src=sbuf:fp32[0:16]@128{{1:16}} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[16/16]@y_add0{{1:16}} src=sbuf:fp32[0:16]@320{{1:16}} queue=1 bound=0
            dma_copy dst=hbm:fp32[16/16]@y_copy_psum{{1:16}} src=sbuf:fp32[0:16]@384{{1:16}} queue=1 bound=0
            dma_copy dst=hbm:fp32[16/{16 * len(ops)}]@y_alu{{1:{16 * len(ops)}}} src=sbuf:fp32[0:16]@512{{1:{16 * len(ops)}}} queue=2 bound=0
            dma_copy dst=hbm:fp32[16/16]@y_copy_act{{1:16}} src=sbuf:fp32[0:16]@192{{1:16}} queue=3 bound=0 wait=sem2>=1
            dma_copy dst=hbm:fp32[16/16]@y_act{{1:16}} src=sbuf:fp32[0:16]@256{{1:16}} queue=3 bound=0
            dma_copy dst=hbm:fp32[16/16]@y_copy_pool{{1:16}} src=sbuf:fp32[32:48]@128{{1:16}} queue=4 bound=0 wait=sem3>=1
            dma_copy dst=hbm:fp32[16/16]@y_max{{1:16}} src=sbuf:fp32[32:48]@192{{1:16}} queue=4 bound=0
    """)
    canon = _canonical_f32(a_bits).view("<f4")
    for name in ("y_copy_dve", "y_copy_psum", "y_copy_act", "y_copy_pool", "y_act"):
        t.expect_raw(name, canon)
    t.expect("y_add0", "fp32", alu("add", a, 0.0))
    t.expect("y_max", "fp32", alu("max", a, -INF))
    t.expect_raw("y_dma", a_bits.view("<f4"))
    y = np.stack([alu(op, a, b) for op in ops], axis=1)
    # spot checks of the rule, by hand: a = +NaN payload (col 0 of row 0),
    # b = special[::-1] rolled: row 0 col 0 is 0x7F7FFFFF (max finite)
    assert not np.signbit(y[0, 0, 0]) and np.isnan(y[0, 0, 0])
    assert np.signbit(y[0, 0, 1]) and np.isnan(y[0, 0, 1])  # -NaN payload + x
    t.expect("y_alu", "fp32", y)
    t.tolerance("""
        # Bit for bit: the NaN sign and the canonical payload are the rule
        # under test (dtypes.md, insns-dve.md "The ALU").
        * bits
    """)


def bitvec():
    """The bitvec ops (insns-dve.md "Bitvec ops"): bitwise_and/or/xor,
    shift_left, shift_right work on 32-bit patterns (an integer input's
    two's-complement bits widened to 32, a float input rounded to an integer
    and saturated first); the shift count is the count's pattern & 31;
    shift_right is logical; the result reads back as int32 if an input was
    negative, else uint32; a store of the result into an integer dtype keeps
    the pattern's low 8/16/32 bits (no saturation). Full-range int32/uint32
    operands on DVE (tensor_tensor and tensor_scalar take bitvec ops on DVE
    and integer dtypes only, as the public nki.isa pages say); masks with
    two ops; xorshift32; scalar_tensor_tensor; a running xor scan; reductions
    over uint32 into int32; 8/16-bit destinations; a POOL partition reduce."""
    t = Trace("bitvec")
    ai = t.ints((32, 16), -2 ** 31, 2 ** 31 - 1)
    bi = t.ints((32, 16), -2 ** 31, 2 ** 31 - 1)
    ui = t.ints((32, 16), 0, 2 ** 32 - 1)
    sh = t.ints((32, 16), 0, 40)  # counts past 31 wrap (& 31)
    ai[0, :4], sh[0, :4] = [1, 0x40000000, -1, 0x7FFFFFFF], [31, 1, 0, 1]  # the documented example (docs/parts/insns-dve.md)
    ai[1, :4], sh[1, :4] = [-256, -2 ** 31, -1, 5], [4, 31, 0, 1]
    u8 = t.ints((32, 16), 0, 255)
    seed = t.ints((32, 16), 1, 2 ** 32 - 1)
    for n, dt, v in (("ai", "int32", ai), ("bi", "int32", bi), ("ui", "uint32", ui),
                     ("sh", "int32", sh), ("u8", "uint8", u8), ("seed", "uint32", seed)):
        t.input(n, dt, v)
    ops = ["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"]
    lines = []
    for k, op in enumerate(ops):
        in1 = "@192" if op.startswith("shift") else "@64"
        lines.append(f"    tensor_tensor dst=sbuf:int32[0:32]@{1024 + 64 * k}{{1:16}} in0=sbuf:int32[0:32]@0{{1:16}} "
                     f"in1=sbuf:int32[0:32]{in1}{{1:16}} op0={op}")
    lines[0] += " wait=sem0>=6"
    body = "\n".join("        " + ln for ln in lines)
    # xorshift32 (x ^= x << 13; x ^= x >> 17; x ^= x << 5), two steps, on the
    # uint32 seed at @384 and the same bits read as int32 at @448
    rng = []
    for step in range(2):
        for op, c in (("shift_left", 13), ("shift_right", 17), ("shift_left", 5)):
            for dt, off in (("uint32", 384), ("int32", 448)):
                rng.append(f"    tensor_scalar dst=sbuf:{dt}[0:32]@512{{1:16}} in=sbuf:{dt}[0:32]@{off}{{1:16}} scalar0=#{c}:int32 op0={op}")
                rng.append(f"    tensor_tensor dst=sbuf:{dt}[0:32]@{off}{{1:16}} in0=sbuf:{dt}[0:32]@{off}{{1:16}} in1=sbuf:{dt}[0:32]@512{{1:16}} op0=bitwise_xor")
    rng_body = "\n".join("        " + ln for ln in rng)
    t.program(f"""
        ; SBUF partitions 0..31: ai @0, bi @64, ui @128, sh @192, u8 @256,
        ; seed @384 (and a copy @448 read as int32), scratch @512;
        ; int32 results of op k @1024 + 64k; other results @1536..
        .machine trn2
        .semaphores 3
        .tensor ai input int32 [32,16]
        .tensor bi input int32 [32,16]
        .tensor ui input uint32 [32,16]
        .tensor sh input int32 [32,16]
        .tensor u8 input uint8 [32,16]
        .tensor seed input uint32 [32,16]
        .tensor y_tt output int32 [32,{len(ops)},16]
        .tensor y_byte output int32 [32,16]
        .tensor y_low24 output int32 [32,16]
        .tensor y_rng_u output uint32 [32,16]
        .tensor y_rng_i output int32 [32,16]
        .tensor y_stt output int32 [32,16]
        .tensor y_scan output int32 [32,16]
        .tensor y_red_or output int32 [32,1]
        .tensor y_red_xor output int32 [32,1]
        .tensor y_u8 output uint8 [32,16]
        .tensor y_i8 output int8 [32,16]
        .tensor y_i16 output int16 [32,16]
        .tensor y_all_xor output int32 [32,16]
        .engine dve
{body}
            tensor_scalar dst=sbuf:int32[0:32]@1536{{1:16}} in=sbuf:int32[0:32]@0{{1:16}} scalar0=#24:int32 scalar1=#255:int32 op0=shift_right op1=bitwise_and
            tensor_scalar dst=sbuf:int32[0:32]@1600{{1:16}} in=sbuf:int32[0:32]@0{{1:16}} scalar0=#8:int32 scalar1=#8:int32 op0=shift_left op1=shift_right
            tensor_copy dst=sbuf:uint32[0:32]@448{{1:16}} in=sbuf:uint32[0:32]@384{{1:16}}
{rng_body}
            scalar_tensor_tensor dst=sbuf:int32[0:32]@1664{{1:16}} in0=sbuf:int32[0:32]@0{{1:16}} scalar=#31:int32 in1=sbuf:int32[0:32]@64{{1:16}} op0=shift_left op1=bitwise_or
            tensor_tensor_scan dst=sbuf:int32[0:32]@1728{{1:16}} in0=sbuf:uint32[0:32]@128{{1:16}} in1=sbuf:uint32[0:32]@128{{1:16}} initial=#0:int32 op0=bitwise_xor op1=bypass
            tensor_reduce dst=sbuf:int32[0:32]@1792{{1:1}} in=sbuf:uint32[0:32]@128{{1:16}} op0=bitwise_or axes=1
            tensor_reduce dst=sbuf:int32[0:32]@1796{{1:1}} in=sbuf:uint32[0:32]@128{{1:16}} op0=bitwise_xor axes=1
            tensor_scalar dst=sbuf:uint8[0:32]@1856{{1:16}} in=sbuf:uint8[0:32]@256{{1:16}} scalar0=#1:int32 op0=shift_left
            tensor_scalar dst=sbuf:int8[0:32]@1872{{1:16}} in=sbuf:uint8[0:32]@256{{1:16}} scalar0=#1:int32 op0=shift_left
            tensor_scalar dst=sbuf:int16[0:32]@1888{{1:16}} in=sbuf:uint8[0:32]@256{{1:16}} scalar0=#1:int32 op0=shift_left inc=sem1
        .engine pool
            partition_all_reduce dst=sbuf:int32[32:64]@320{{1:16}} in=sbuf:uint32[0:32]@128{{1:16}} op0=bitwise_xor wait=sem0>=6 inc=sem2
        .engine sp
            dma_copy dst=sbuf:int32[0:32]@0{{1:16}} src=hbm:int32[32/16]@ai{{1:16}} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@64{{1:16}} src=hbm:int32[32/16]@bi{{1:16}} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:uint32[0:32]@128{{1:16}} src=hbm:uint32[32/16]@ui{{1:16}} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:32]@192{{1:16}} src=hbm:int32[32/16]@sh{{1:16}} queue=3 bound=0 inc=sem0
            dma_copy dst=sbuf:uint8[0:32]@256{{1:16}} src=hbm:uint8[32/16]@u8{{1:16}} queue=4 bound=0 inc=sem0
            dma_copy dst=sbuf:uint32[0:32]@384{{1:16}} src=hbm:uint32[32/16]@seed{{1:16}} queue=5 bound=0 inc=sem0
            dma_copy dst=hbm:int32[32/{16 * len(ops)}]@y_tt{{1:{16 * len(ops)}}} src=sbuf:int32[0:32]@1024{{1:{16 * len(ops)}}} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:int32[32/16]@y_byte{{1:16}} src=sbuf:int32[0:32]@1536{{1:16}} queue=1 bound=0
            dma_copy dst=hbm:int32[32/16]@y_low24{{1:16}} src=sbuf:int32[0:32]@1600{{1:16}} queue=1 bound=0
            dma_copy dst=hbm:uint32[32/16]@y_rng_u{{1:16}} src=sbuf:uint32[0:32]@384{{1:16}} queue=2 bound=0
            dma_copy dst=hbm:int32[32/16]@y_rng_i{{1:16}} src=sbuf:int32[0:32]@448{{1:16}} queue=2 bound=0
            dma_copy dst=hbm:int32[32/16]@y_stt{{1:16}} src=sbuf:int32[0:32]@1664{{1:16}} queue=3 bound=0
            dma_copy dst=hbm:int32[32/16]@y_scan{{1:16}} src=sbuf:int32[0:32]@1728{{1:16}} queue=3 bound=0
            dma_copy dst=hbm:int32[32/1]@y_red_or{{1:1}} src=sbuf:int32[0:32]@1792{{1:1}} queue=4 bound=0
            dma_copy dst=hbm:int32[32/1]@y_red_xor{{1:1}} src=sbuf:int32[0:32]@1796{{1:1}} queue=4 bound=0
            dma_copy dst=hbm:uint8[32/16]@y_u8{{1:16}} src=sbuf:uint8[0:32]@1856{{1:16}} queue=5 bound=0
            dma_copy dst=hbm:int8[32/16]@y_i8{{1:16}} src=sbuf:int8[0:32]@1872{{1:16}} queue=5 bound=0
            dma_copy dst=hbm:int16[32/16]@y_i16{{1:16}} src=sbuf:int16[0:32]@1888{{1:16}} queue=6 bound=0
            dma_copy dst=hbm:int32[32/16]@y_all_xor{{1:16}} src=sbuf:int32[32:64]@320{{1:16}} queue=9 bound=0 wait=sem2>=1
    """)
    y_tt = np.stack([bits_to("int32", alu(op, ai, sh if op.startswith("shift") else bi)) for op in ops], axis=1)
    # the documented example, by hand: 1 << 31, 0x40000000 << 1, -1 << 0, 0x7fffffff << 1
    assert list(y_tt[0, 3, :4]) == [-2 ** 31, -2 ** 31, -1, -2]  # 0x80000000 0x80000000 0xffffffff 0xfffffffe
    assert list(y_tt[1, 4, :4]) == [0x0FFFFFF0, 1, -1, 2]  # logical shift right
    t.expect("y_tt", "int32", y_tt)
    t.expect("y_byte", "int32", bits_to("int32", alu("bitwise_and", alu("shift_right", ai, 24.0), 255.0)))
    t.expect("y_low24", "int32", bits_to("int32", alu("shift_right", alu("shift_left", ai, 8.0), 8.0)))
    xu = seed.astype(np.uint64)
    for _ in range(2):  # xorshift32 in numpy uint64 masked to 32 bits
        xu ^= (xu << np.uint64(13)) & np.uint64(0xFFFFFFFF)
        xu ^= xu >> np.uint64(17)
        xu ^= (xu << np.uint64(5)) & np.uint64(0xFFFFFFFF)
    t.expect("y_rng_u", "uint32", xu.astype(np.float64))
    t.expect("y_rng_i", "int32", bits_to("int32", xu.astype(np.float64)))
    t.expect("y_stt", "int32", bits_to("int32", alu("bitwise_or", alu("shift_left", ai, 31.0), bi)))
    acc = np.zeros(32)
    scan = np.zeros((32, 16))
    for e in range(16):
        acc = alu("bitwise_xor", acc, ui[:, e])
        scan[:, e] = acc
    t.expect("y_scan", "int32", bits_to("int32", scan))
    t.expect("y_red_or", "int32", bits_to("int32", fold("bitwise_or", [ui[:, e] for e in range(16)], 0.0)).reshape(32, 1))
    t.expect("y_red_xor", "int32", bits_to("int32", fold("bitwise_xor", [ui[:, e] for e in range(16)], 0.0)).reshape(32, 1))
    shl8 = alu("shift_left", u8, 1.0)
    t.expect("y_u8", "uint8", bits_to("uint8", shl8))
    t.expect("y_i8", "int8", bits_to("int8", shl8))
    t.expect("y_i16", "int16", bits_to("int16", shl8))
    allx = fold("bitwise_xor", [ui[q] for q in range(32)], 0.0)
    t.expect("y_all_xor", "int32", bits_to("int32", np.repeat(allx[None, :], 32, axis=0)))


def reduce_negate_int():
    """tensor_reduce with negate=1 (insns-dve.md): -r. For the bitwise ops
    the result is an integer and the negation is an integer one, 0 - r: a
    result of 0 stores +0 into fp32 and bf16 (integers have no -0), 0x80000000
    (read signed, -2^31) negates to 2^31, which an int32 dst holds as the
    pattern 0x80000000. For add the result is an fp32 value and -(+0) is -0
    (IEEE), so the add row of zeros stores -0."""
    t = Trace("reduce_negate_int")
    xi = t.ints((32, 8), -2 ** 31, 2 ** 31 - 1)
    xi[0] = [6, 9, 0, 0, 0, 0, 0, 0]   # and = 0
    xi[1] = [7, 7, 0, 0, 0, 0, 0, 0]   # xor = 0
    xi[2] = [-2 ** 31, 0, 0, 0, 0, 0, 0, 0]  # xor = 0x80000000
    xi[3] = 0                          # everything 0; add gives +0, negated -0
    t.input("xi", "int32", xi)
    t.program("""
        .machine trn2
        .semaphores 3
        .tensor xi input int32 [32,8]
        .tensor y_and_f32 output fp32 [32,1]
        .tensor y_xor_f32 output fp32 [32,1]
        .tensor y_and_bf16 output bf16 [32,1]
        .tensor y_xor_bf16 output bf16 [32,1]
        .tensor y_xor_i32 output int32 [32,1]
        .tensor y_or_u32 output uint32 [32,1]
        .tensor y_add_f32 output fp32 [32,1]
        .engine dve
            tensor_reduce dst=sbuf:fp32[0:32]@64{1:1} in=sbuf:int32[0:32]@0{1:8} op0=bitwise_and negate=1 axes=1 wait=sem0>=1
            tensor_reduce dst=sbuf:fp32[0:32]@68{1:1} in=sbuf:int32[0:32]@0{1:8} op0=bitwise_xor negate=1 axes=1
            tensor_reduce dst=psum:int32[0:32]@0{1:1} in=sbuf:int32[0:32]@0{1:8} op0=bitwise_xor negate=1 axes=1
            tensor_copy dst=sbuf:int32[0:32]@72{1:1} in=psum:int32[0:32]@0{1:1}
            tensor_reduce dst=sbuf:uint32[0:32]@76{1:1} in=sbuf:int32[0:32]@0{1:8} op0=bitwise_or negate=1 axes=1
            tensor_reduce dst=sbuf:fp32[0:32]@80{1:1} in=sbuf:int32[0:32]@0{1:8} op0=add negate=1 axes=1 inc=sem1
        .engine pool
            tensor_reduce dst=sbuf:bf16[32:64]@0{1:1} in=sbuf:int32[0:32]@0{1:8} op0=bitwise_and negate=1 axes=1 wait=sem0>=1
            tensor_reduce dst=sbuf:bf16[32:64]@2{1:1} in=sbuf:int32[0:32]@0{1:8} op0=bitwise_xor negate=1 axes=1 inc=sem2
        .engine sp
            dma_copy dst=sbuf:int32[0:32]@0{1:8} src=hbm:int32[32/8]@xi{1:8} queue=0 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/1]@y_and_f32{1:1} src=sbuf:fp32[0:32]@64{1:1} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:fp32[32/1]@y_xor_f32{1:1} src=sbuf:fp32[0:32]@68{1:1} queue=1 bound=0
            dma_copy dst=hbm:int32[32/1]@y_xor_i32{1:1} src=sbuf:int32[0:32]@72{1:1} queue=2 bound=0
            dma_copy dst=hbm:uint32[32/1]@y_or_u32{1:1} src=sbuf:uint32[0:32]@76{1:1} queue=3 bound=0
            dma_copy dst=hbm:fp32[32/1]@y_add_f32{1:1} src=sbuf:fp32[0:32]@80{1:1} queue=4 bound=0
            dma_copy dst=hbm:bf16[32/1]@y_and_bf16{1:1} src=sbuf:bf16[32:64]@0{1:1} queue=5 bound=0 wait=sem2>=1
            dma_copy dst=hbm:bf16[32/1]@y_xor_bf16{1:1} src=sbuf:bf16[32:64]@2{1:1} queue=6 bound=0
    """)
    cols = [xi[:, e] for e in range(8)]

    def neg_int(op):
        return (0.0 - fold(op, cols, REDUCE_IDENTITY[op])).reshape(32, 1)  # 0 - 0 = +0

    r_and, r_xor, r_or = neg_int("bitwise_and"), neg_int("bitwise_xor"), neg_int("bitwise_or")
    assert r_and[0, 0] == 0 and not np.signbit(r_and[0, 0]) and r_xor[1, 0] == 0
    assert r_xor[2, 0] == 2 ** 31
    t.expect("y_and_f32", "fp32", r_and)
    t.expect("y_xor_f32", "fp32", r_xor)
    t.expect("y_and_bf16", "bf16", r_and)
    t.expect("y_xor_bf16", "bf16", r_xor)
    t.expect("y_xor_i32", "int32", bits_to("int32", r_xor))
    t.expect("y_or_u32", "uint32", bits_to("uint32", r_or))
    r_add = -fold("add", cols, -0.0).reshape(32, 1)
    assert np.signbit(r_add[3, 0])  # -(+0): -0 for an fp32 result
    t.expect("y_add_f32", "fp32", r_add)


def match_replace8_order():
    """match_replace8 takes the 8 values in reverse order, j = 7 .. 0 (the
    NKI nc_match_replace8 documentation): with duplicated values the first
    occurrence goes to the highest j. The document's example, data
    [1,2,3,4,8,8,8,8,8,8,8] and vals [3,8,8,8,8,8,8,8], gives the indices
    [2,10,9,8,7,6,5,4]; the replaced set is the same as in any order.
    find_index8 on the same operands pairs the duplicates in ascending
    order ([2,4,5,6,7,8,9,10]). Random rows of few distinct values check the rule
    more widely."""
    t = Trace("match_replace8_order")
    x = t.ints((16, 11), 0, 3)
    x[0] = [1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]
    vals = t.ints((16, 8), 0, 4)  # 4 is absent: no match
    vals[0] = [3, 8, 8, 8, 8, 8, 8, 8]
    t.input("x", "fp32", x)
    t.input("vals", "fp32", vals)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor x input fp32 [16,11]
        .tensor vals input fp32 [16,8]
        .tensor y output fp32 [16,11]
        .tensor y_idx output uint32 [16,8]
        .tensor y_first output int32 [16,8]
        .engine dve
            match_replace8 dst=sbuf:fp32[0:16]@128{1:11} in=sbuf:fp32[0:16]@0{1:11} values=sbuf:fp32[0:16]@64{1:8} replacement=#-1 indices=sbuf:uint32[0:16]@192{1:8} wait=sem0>=2
            find_index8 dst=sbuf:int32[0:16]@224{1:8} in=sbuf:fp32[0:16]@0{1:11} values=sbuf:fp32[0:16]@64{1:8} inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:16]@0{1:11} src=hbm:fp32[16/11]@x{1:11} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:16]@64{1:8} src=hbm:fp32[16/8]@vals{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[16/11]@y{1:11} src=sbuf:fp32[0:16]@128{1:11} queue=0 bound=0 wait=sem1>=1
            dma_copy dst=hbm:uint32[16/8]@y_idx{1:8} src=sbuf:uint32[0:16]@192{1:8} queue=1 bound=0
            dma_copy dst=hbm:int32[16/8]@y_first{1:8} src=sbuf:int32[0:16]@224{1:8} queue=2 bound=0
    """)
    y = np.array(x)
    idx = np.full((16, 8), 4294967295.0)
    first = np.full((16, 8), -1.0)
    for p in range(16):
        taken = []
        for j in range(7, -1, -1):
            e = _first_match(list(x[p]), vals[p, j], taken)
            if e is not None:
                taken.append(e)
                idx[p, j] = e
        y[p, taken] = -1.0
        for j, e in enumerate(_find_index8_ref(list(x[p]), list(vals[p]))):
            if e is not None:
                first[p, j] = e
    assert list(idx[0]) == [2, 10, 9, 8, 7, 6, 5, 4]  # the NKI document's example
    assert list(first[0]) == [2, 4, 5, 6, 7, 8, 9, 10]
    t.expect("y", "fp32", y)
    t.expect("y_idx", "uint32", idx)
    t.expect("y_first", "int32", first)


def dma_acc_int():
    """DMA accumulate on integer dtypes (insns-pe-dma.md): dst =
    store(fp32(fp32(dst) + fp32(src))): both operands rounded to fp32, the
    sum rounded to fp32, then converted (RNE, saturation) to dst's dtype, so
    it is exact only while operands and sum stay within 2^24: int32 around
    2^24 and 2^31 (2147483647 + 0 saturates back), int16 and uint8 sums that
    saturate, a scatter-add of int32 rows with duplicate indices."""
    t = Trace("dma_acc_int")
    d = t.ints((8, 8), -2 ** 31, 2 ** 31 - 1)
    s = t.ints((8, 8), -2 ** 20, 2 ** 20)
    # 2^25 + 1 rounds to 2^25 first; 2^25 + 2 is then a tie, to even 2^25
    d[0] = [2 ** 24, 2 ** 24 + 2, 2 ** 31 - 1, -2 ** 24 - 1, 1000, 2 ** 24 - 1, 2 ** 25 + 1, 7]
    s[0] = [1, 1, 0, 0, -2000, 1, 2, -7]
    d16 = t.ints((8, 8), -32768, 32767)
    s16 = t.ints((8, 8), -32768, 32767)
    u8d = t.ints((8, 8), 0, 255)
    u8s = t.ints((8, 8), 0, 255)
    rows = t.ints((4, 8), -2 ** 26, 2 ** 26)
    idx = np.array([[1], [3], [1], [0]], dtype=np.float64)
    for n, dt, v in (("d", "int32", d), ("s", "int32", s), ("d16", "int16", d16), ("s16", "int16", s16),
                     ("u8d", "uint8", u8d), ("u8s", "uint8", u8s), ("rows", "int32", rows),
                     ("idx", "int32", idx)):
        t.input(n, dt, v)
    t.program("""
        .machine trn2
        .semaphores 1
        .tensor d input int32 [8,8]
        .tensor s input int32 [8,8]
        .tensor d16 input int16 [8,8]
        .tensor s16 input int16 [8,8]
        .tensor u8d input uint8 [8,8]
        .tensor u8s input uint8 [8,8]
        .tensor rows input int32 [4,8]
        .tensor idx input int32 [4,1]
        .tensor y output int32 [8,8]
        .tensor y16 output int16 [8,8]
        .tensor y8 output uint8 [8,8]
        .tensor y_scatter output int32 [4,8]
        .engine sp
            dma_copy dst=sbuf:int32[0:8]@0{1:8} src=hbm:int32[8/8]@d{1:8} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:int16[0:8]@64{1:8} src=hbm:int16[8/8]@d16{1:8} queue=1 bound=0 inc=sem0
            dma_copy dst=sbuf:uint8[0:8]@96{1:8} src=hbm:uint8[8/8]@u8d{1:8} queue=2 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:4]@128{1:1} src=hbm:int32[4/1]@idx{1:1} queue=3 bound=0 inc=sem0
            dma_copy dst=hbm:int32[4/8]@y_scatter{1:8} src=hbm:int32[4/8]@rows{1:8} queue=4 bound=0 inc=sem0
            dma_copy dst=sbuf:int32[0:8]@0{1:8} src=hbm:int32[8/8]@s{1:8} queue=0 bound=0 acc=1 wait=sem0>=5 inc=sem0
            dma_copy dst=sbuf:int16[0:8]@64{1:8} src=hbm:int16[8/8]@s16{1:8} queue=1 bound=0 acc=1 inc=sem0
            dma_copy dst=sbuf:uint8[0:8]@96{1:8} src=hbm:uint8[8/8]@u8s{1:8} queue=2 bound=0 acc=1 inc=sem0
            dma_copy dst=hbm:int32[4/8]@y_scatter{1:8} src=hbm:int32[4/8]@rows{1:8} offsets=sbuf:int32[0:4]@128{1:1} queue=4 bound=4 acc=1 scatter=1 inc=sem0
            dma_copy dst=hbm:int32[8/8]@y{1:8} src=sbuf:int32[0:8]@0{1:8} queue=0 bound=0 wait=sem0>=9
            dma_copy dst=hbm:int16[8/8]@y16{1:8} src=sbuf:int16[0:8]@64{1:8} queue=1 bound=0
            dma_copy dst=hbm:uint8[8/8]@y8{1:8} src=sbuf:uint8[0:8]@96{1:8} queue=2 bound=0
    """)

    def acc(a, b):
        with np.errstate(over="ignore"):
            return (a.astype(np.float32) + b.astype(np.float32)).astype(np.float64)

    y = acc(d, s)
    assert list(formats.round_to("int32", y[0])) == [2 ** 24, 2 ** 24 + 4, 2 ** 31 - 1, -2 ** 24, -1000,
                                                     2 ** 24, 2 ** 25, 0]
    t.expect("y", "int32", y)
    t.expect("y16", "int16", acc(d16, s16))
    t.expect("y8", "uint8", acc(u8d, u8s))
    ys = rows.copy()  # the plain copy first, then row p added into row idx[p], p in order
    for p in range(4):
        r = int(idx[p, 0])
        ys[r] = formats.round_to("int32", acc(ys[r], rows[p]))
    t.expect("y_scatter", "int32", ys)


def pow_ulp():
    """pow (insns-dve.md "The ALU"): the host libm's powf of the fp32-rounded
    operands, within 1 ulp of the exact power but not always correctly
    rounded: exact halfway cases such as 65^4 = 17850625 (between 17850624
    and 17850626) and 142^4 = 406586896 may go to either neighbour. Integer
    bases to the powers 2..5 below 2^31; expected is the exact power rounded
    to nearest even, compared within 1 ulp."""
    t = Trace("pow_ulp")
    base = np.arange(2, 2 + 32 * 16, dtype=np.float64).reshape(32, 16)
    ex = np.tile(np.array([2, 3, 4, 5], dtype=np.float64), (32, 4))
    base[0, :2], ex[0, :2] = [65, 142], [4, 4]
    exact = np.power(base, ex)
    ex = np.where(exact < 2 ** 31, ex, 2.0)
    exact = np.power(base, ex)  # exact in float64 (< 2^53)
    t.input("base", "fp32", base)
    t.input("ex", "fp32", ex)
    t.program("""
        .machine trn2
        .semaphores 2
        .tensor base input fp32 [32,16]
        .tensor ex input fp32 [32,16]
        .tensor y output fp32 [32,16]
        .engine dve
            tensor_tensor dst=sbuf:fp32[0:32]@128{1:16} in0=sbuf:fp32[0:32]@0{1:16} in1=sbuf:fp32[0:32]@64{1:16} op0=pow wait=sem0>=2 inc=sem1
        .engine sp
            dma_copy dst=sbuf:fp32[0:32]@0{1:16} src=hbm:fp32[32/16]@base{1:16} queue=0 bound=0 inc=sem0
            dma_copy dst=sbuf:fp32[0:32]@64{1:16} src=hbm:fp32[32/16]@ex{1:16} queue=1 bound=0 inc=sem0
            dma_copy dst=hbm:fp32[32/16]@y{1:16} src=sbuf:fp32[0:32]@128{1:16} queue=0 bound=0 wait=sem1>=1
    """)
    t.expect("y", "fp32", r32(exact))
    t.tolerance("""
        # pow is within 1 ulp of the exact power (insns-dve.md "The ALU"): the
        # host's powf is not correctly rounded on exact halfway cases.
        y ulp 1
    """)


TRACES = [dma_cast, dma_gather, dma_scatter_acc, dma_transpose, matmul, transpose,
          tensor_tensor, tensor_scalar, scalar_tensor_tensor, tensor_reduce, tensor_copy,
          tensor_tensor_scan, select, memset, max8, find_index8, match_replace8,
          bn_stats_aggr, act_exact, act_transcendental, iota, affine_select, local_gather,
          partition_all_reduce, partition_broadcast, sem_pipeline, sem_span, two_core_barrier,
          fp32_nan, bitvec, reduce_negate_int, match_replace8_order, dma_acc_int, pow_ulp, errors]


def main(argv):
    want = set(argv[1:])
    known = {f.__name__ for f in TRACES}
    unknown = want - known
    if unknown:
        sys.exit(f"unknown trace(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    for f in TRACES:
        if not want or f.__name__ in want:
            f()
            print("wrote", f.__name__)


if __name__ == "__main__":
    main(sys.argv)
