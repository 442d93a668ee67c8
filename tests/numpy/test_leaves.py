#!/usr/bin/env python3
"""The independent numpy cross-check of every registry leaf through
`nxsim run` (issues 10-14: "an independent script compares each leaf with
numpy on cases it makes up, public ONNX/XLA cases among them").

Each case: random inputs (or a published example) written as .npy, the leaf
run by `nxsim run KEY -i ... -o ... -a ...` on the SystemC model with
--race-check and on the functional executor, the result compared with the
numpy model of tests/numpy/models.py (written from the public operator
definitions, never from nxsim's code or kernels/ref) exactly for data
movement and within a tolerance derived from the dtype and the contraction
length otherwise (check.sum_tolerance).

Usage: test_leaves.py --nxsim build/nxsim [--workdir DIR] [unittest args,
e.g. ConvDense]. Environment:
  NXSIM_NUMPY_SWEEP=N   add N random cases per leaf (the big sweep; manual)
  NXSIM_NUMPY_SEED=S    seed of the random cases (default 20240611)
  NXSIM_NUMPY_MODES=... comma list of run modes (default race,functional;
                        also model = SystemC without the race detector)
  NXSIM_NUMPY_EXTRA=... more nxsim run options for every case (e.g.
                        "--machine trn1")
  NXSIM_NUMPY_KEEP=1    keep every case's directory, not only failing ones
A failing case keeps its .npy inputs and cmd.txt under the work directory
and names them in the failure message.
"""
import argparse
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
import models as M  # noqa: E402
import nxnp  # noqa: E402

NXSIM = None
WORKDIR = None
SWEEP = int(os.environ.get("NXSIM_NUMPY_SWEEP", "0"))
SEED = int(os.environ.get("NXSIM_NUMPY_SEED", "20240611"))
MODES = os.environ.get("NXSIM_NUMPY_MODES", "race,functional").split(",")
EXTRA = os.environ.get("NXSIM_NUMPY_EXTRA", "").split()
PE_DTYPES = ["fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"]

# Disagreements found and reported, pinned so the suite stays green while
# they are open: case name -> the report. A pinned case must still fail
# (an unexpected pass fails the test, so a fix shows up and the entry goes).
KNOWN = {
    # The PE's 0 x Inf = NaN: leaves that multiply other channels' (or
    # groups') values by the zeros of a block-diagonal or identity
    # stationary spread an Inf or NaN of one channel to the others.
    "#3 inf_nan_in_channel_0 fp32": "grouped conv: the Inf/NaN of group 0 makes group 1's outputs NaN",
    "#4 inf_nan_in_channel_0 fp32": "grouped conv: the Inf/NaN of group 0 makes group 1's outputs NaN",
    "#9 inf_nan_in_channel_0 fp32": "depthwise: the Inf/NaN of channel 0 makes channel 1's outputs NaN",
    "#11 inf_nan_in_channel_0 fp32": "depthwise: the Inf/NaN of channel 0 makes channel 1's outputs NaN",
    # docs/parts/data-movement.md: "Values must be NaN-free (the leaf
    # selects by the window maximum)" - but NaN is not refused.
    "nan fp32": "SelectAndScatter with NaN operands: silently not XLA's selection (no refusal either)",
    # docs/parts/topk.md "fp32 extremes": fp32 keys leave no value below
    # -inf for the knock-out, so -inf ranks as -FLT_MAX (largest) and +inf
    # and NaN as FLT_MAX (smallest); ONNX orders the distinct values.
    "fp32_extremes fp32 k=6 default": "-FLT_MAX (index 1) and -inf (index 0) tie: -inf comes first",
    "fp32_extremes fp32 k=6 smallest default": "FLT_MAX (index 1) and +inf (index 0) tie: +inf comes first",
    # Unknown attributes pass silently on every leaf but the convolutions
    # (issue 9's strict inputs, being added by helper harden).
    "sas unknown attribute": "accepted: exit 0, the misspelt window_strides ignored",
    "resize unknown attribute": "accepted: exit 0, mode=linear ignored (the result is nearest)",
    "transpose unknown attribute": "accepted: exit 0, perm ignored (the default reversal is used)",
    "bmm unknown attribute": "accepted: exit 0, scaling_mode ignored",
    # ResizeNearest computes the ONNX source coordinate in fp32; where the
    # exact value lies within half an fp32 ulp of a rounding boundary the
    # fp32 value lands on it and the neighbouring pixel is taken. ONNX's
    # reference (float64) and exact arithmetic agree with numpy here.
    # From out_shape the numerator x * a (a = in - 1, 2 in, in) is an fp32
    # product, inexact once it passes 2^24: the exact ties and integers of
    # the ONNX rules are missed (1023 of 8191 columns for 4096 -> 8191).
    "exact boundary align_corners/round_prefer_floor 4096->8191 uint16":
        "1023 of 8191 columns: t = x/2 exactly, nxsim rounds x * 4095 in fp32 and takes x/2 + 1/2 for odd x > 4097",
    "exact boundary half_pixel/round_prefer_floor 3000->7001 uint16":
        "x = 3500: t = 1499.5 exactly (a tie: floor), nxsim takes 1500",
    "exact boundary asymmetric/ceil 8191->4096 uint16":
        "x = 4095: t = 8189.00024 (ceil 8190), nxsim takes 8189",
    "scales half_pixel/round_prefer_ceil (2.5, 0.3) fp32":
        "fp32 coordinate: (1 + 0.5) / 0.3f - 0.5 = 4.4999998 exactly, fp32 gives 4.5: column 5 instead of 4",
    "onnx half_pixel/round_prefer_ceil (1, 1, 4097, 1)->1x4099 fp8_e5m2":
        "fp32 quotient: x = 3074, t = 3074.5 * 4097/4099 - 0.5 = 3072.49988, fp32 gives 3072.5: column 3073 not 3072",
}


def available_kernels():
    """Registry keys and composites the built nxsim can run."""
    out = nxnp.subprocess.run([NXSIM, "kernels"], capture_output=True, text=True, timeout=60).stdout
    names = set()
    for ln in out.splitlines():
        f = ln.split()
        if len(f) >= 4 and f[0] in ("leaf", "composite") and "not" not in f:
            names.add(f[3] if f[0] == "leaf" else f[1])
    return names


class LeafCase(unittest.TestCase):
    """Runs cases through nxsim in every mode and collects disagreements."""
    REQUIRES = ()        # keys that must be runnable (else the class is skipped)

    @classmethod
    def setUpClass(cls):
        missing = [k for k in cls.REQUIRES if k not in available_kernels()]
        if missing:
            raise unittest.SkipTest("not in this build's `nxsim kernels`: %s" % ", ".join(missing))
        cls.runner = nxnp.Runner(NXSIM, os.path.join(WORKDIR, cls.__name__))
        cls.rng = np.random.default_rng([SEED, sum(map(ord, cls.__name__))])

    def run_case(self, name, key, inputs, attrs, compare, nouts=1, modes=None):
        """compare(outs) -> None or a message. Runs every mode; a KNOWN case
        must disagree in at least one mode."""
        problems = []
        for mode in modes or MODES:
            r = self.runner.run(key, inputs, attrs, nouts=nouts, mode=mode, extra=EXTRA)
            if r.rc != 0:
                problems.append("[%s] nxsim failed: %s" % (mode, r.describe()))
                continue
            msg = compare(r.outs)
            if msg:
                problems.append("[%s] %s\n  reproduce: %s" % (mode, msg, r.describe()))
            else:
                r.cleanup()
        with self.subTest(case=name):      # a failing case does not stop the others
            if name in KNOWN:
                if not problems:
                    self.fail("%s: pinned as a known disagreement (%s) but now agrees: remove it from KNOWN"
                              % (name, KNOWN[name]))
                print("known disagreement %s (%s): %s" % (name, KNOWN[name], problems[0].splitlines()[0]),
                      file=sys.stderr)
                return
            if problems:
                self.fail("%s:\n%s" % (name, "\n".join(problems)))

    def refuse(self, name, key, inputs, attrs, codes, text, raw_inputs=None):
        r = self.runner.run(key, inputs, attrs, mode="functional", raw=raw_inputs and {0: raw_inputs})
        lines = r.stderr.strip().splitlines()
        problems = []
        if r.rc not in codes:
            problems.append("exit %d, expected %s" % (r.rc, " or ".join(map(str, codes))))
        if len(lines) != 1:
            problems.append("%d lines on stderr, expected one" % len(lines))
        elif not (lines[0].startswith("nxsim: ") and text in lines[0]):
            problems.append("error %r does not start with 'nxsim: ' and name %r" % (lines[0], text))
        if any(o is not None for o in r.outs):
            problems.append("an output file was written")
        with self.subTest(case=name):
            if name in KNOWN:
                if not problems:
                    self.fail("%s: pinned as a known disagreement (%s) but now agrees: remove it from KNOWN"
                              % (name, KNOWN[name]))
                print("known disagreement %s (%s): %s" % (name, KNOWN[name], "; ".join(problems)),
                      file=sys.stderr)
                return
            if problems:
                self.fail("%s: %s\n  reproduce: %s" % (name, "; ".join(problems), r.describe()))
            r.cleanup()


# ------------------------------------------------------------------ conv
def role_shape(label, sizes):
    return [sizes[c] for c in label]


class ConvLeaf:
    """A conv leaf: its key, labels and what it takes (docs/parts/conv.md,
    depthwise.md; issue 10)."""

    def __init__(self, key, labels, kind, lhs_dilation=False, product_rounding=False):
        self.key, self.labels, self.kind = key, labels, kind
        self.lhs_dilation = lhs_dilation
        self.product_rounding = product_rounding
        lr, self.out_label = labels.split("->")
        self.lhs_label, self.rhs_label = lr.split("_")


CONV_LEAVES = {
    "#3": ConvLeaf("Conv2d_pbp_0f1b_0i1o_01fb_experimental_1", "0f1b_0i1o->01fb", "dense"),
    "#4": ConvLeaf("Conv2d_pbp_fb01_io01_01bf_experimental_1", "fb01_io01->01bf", "dense"),
    "#6": ConvLeaf("Conv1d_depthwise_bf01_oi01_bf01", "bf01_oi01->bf01", "dw1d"),
    "#9": ConvLeaf("conv2d_column_packing_1", "bf01_oi01->bf01", "dw_n1"),
    # #11 rounds each per-tap product to the input dtype for bf16/fp16
    # inputs before the fp32 sum (docs/parts/depthwise.md, "Numerics", as
    # the public kernel does): its tolerance has one such rounding per term.
    "#11": ConvLeaf("conv2d_depthwise_f01b_o01i_bf01", "f01b_o01i->bf01", "dw", lhs_dilation=True,
                    product_rounding=True),
}


def conv_inputs(leaf, rng, N, C, H, W, O, KH, KW, G, dt, x=None, w=None):
    """Random (or given canonical NCHW / OIHW) operands in the leaf's layout."""
    if x is None:
        x = nxnp.random_values(rng, (N, C, H, W), dt)
    if w is None:
        w = nxnp.random_values(rng, (O, C // G, KH, KW), dt)
    lperm = ["bf01".index(c) for c in leaf.lhs_label]
    rperm = ["oi01".index(c) for c in leaf.rhs_label]
    return np.transpose(x, lperm), np.transpose(w, rperm)


class ConvCase:
    def __init__(self, name, N, C, H, W, O, KH, KW, G=1, stride=(1, 1), padding=((0, 0), (0, 0)),
                 lhs_dilation=(1, 1), rhs_dilation=(1, 1), x=None, w=None, expect=None, pass_fgc=True):
        self.__dict__.update(locals())
        del self.__dict__["self"]

    def attrs(self):
        a = {}
        if tuple(self.stride) != (1, 1):
            a["stride"] = list(self.stride)
        if tuple(map(tuple, self.padding)) != ((0, 0), (0, 0)):
            a["padding"] = [list(p) for p in self.padding]
        if tuple(self.lhs_dilation) != (1, 1):
            a["lhs_dilation"] = list(self.lhs_dilation)
        if tuple(self.rhs_dilation) != (1, 1):
            a["rhs_dilation"] = list(self.rhs_dilation)
        if self.G != 1 and self.pass_fgc:
            a["feature_group_count"] = self.G
        return a


def fits(n, k, s, p, ld, rd):
    return M.conv_out_size(n, k, s, p[0], p[1], ld, rd) not in (None, 0) and \
        (n - 1) * ld + 1 + min(p[0], 0) + min(p[1], 0) > 0


def random_conv_case(leaf, rng, name, big=False):
    """A random case within what the leaf takes; big: sizes past one PE
    tile, one PSUM bank and one partition tile (the sweep)."""
    while True:
        kind = leaf.kind
        N = int(rng.choice([1, 1, 2, 3, 5] + ([40, 130, 513] if big else []))) if kind != "dw_n1" else 1
        if kind == "dense":
            G = int(rng.choice([1, 1, 1, 2, 3]))
            C = G * int(rng.choice([1, 2, 3, 7, 17, 45] + ([100, 150] if big else [])))
            O = G * int(rng.choice([1, 2, 5, 9, 33] + ([70, 129] if big else [])))
        else:
            C = int(rng.choice([1, 2, 5, 33, 70, 129] + ([200, 300] if big else [])))
            G, O = C, C
        if kind == "dw1d":
            H, KH = 1, 1
            W = int(rng.integers(1, 3000 if big else 300))
            KW = int(rng.integers(1, 7))
        else:
            hi = 60 if big and N < 40 else 13
            H, W = int(rng.integers(1, hi)), int(rng.integers(1, hi))
            KH, KW = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        if big and N * C * H * W * max(1, O // max(G, 1)) > 3e6:
            continue
        stride = [int(rng.integers(1, 4)) for _ in range(2)]
        rd = [int(rng.integers(1, 3)) for _ in range(2)]
        ld = [int(rng.integers(1, 4)) for _ in range(2)] if leaf.lhs_dilation else [1, 1]
        pad = [[int(rng.integers(-1, 4)), int(rng.integers(-1, 4))] for _ in range(2)]
        if kind == "dw1d":
            stride[0], rd[0], pad[0] = 1, 1, [0, 0]
        if not all(fits(n, k, s, p, l, r) for n, k, s, p, l, r in
                   zip((H, W), (KH, KW), stride, pad, ld, rd)):
            continue
        return ConvCase(name, N, C, H, W, O, KH, KW, G, stride, pad, ld, rd,
                        pass_fgc=bool(rng.integers(0, 2)) or kind == "dense")


# Published examples: ONNX Conv / ConvTranspose node tests
# (onnx/onnx onnx/backend/test/case/node/conv.py, convtranspose.py) and
# StableHLO's convolution interpreter tests
# (openxla/stablehlo stablehlo/tests/interpret/convolution.mlir), as
# (name, x [N,C,H,W], w [O,I,KH,KW], attrs, expected [N,O,OH,OW]).
X5 = np.arange(25.0).reshape(1, 1, 5, 5)
X75 = np.arange(35.0).reshape(1, 1, 7, 5)
W33 = np.ones((1, 1, 3, 3))
X9 = np.arange(9.0).reshape(1, 1, 3, 3)
SHLO = np.array([[1, 2, 5, 6], [3, 4, 7, 8], [10, 11, 14, 15], [12, 13, 16, 17]], float).reshape(1, 1, 4, 4)
PUBLIC_CONV = [
    ("onnx_basic_conv_with_padding", X5, W33, dict(padding=((1, 1), (1, 1))),
     [[12, 21, 27, 33, 24], [33, 54, 63, 72, 51], [63, 99, 108, 117, 81], [93, 144, 153, 162, 111],
      [72, 111, 117, 123, 84]]),
    ("onnx_basic_conv_without_padding", X5, W33, {}, [[54, 63, 72], [99, 108, 117], [144, 153, 162]]),
    ("onnx_conv_with_strides_padding", X75, W33, dict(stride=(2, 2), padding=((1, 1), (1, 1))),
     [[12, 27, 24], [63, 108, 81], [123, 198, 141], [112, 177, 124]]),
    ("onnx_conv_with_strides_no_padding", X75, W33, dict(stride=(2, 2)), [[54, 72], [144, 162], [234, 252]]),
    ("onnx_conv_with_strides_and_asymmetric_padding", X75, W33, dict(stride=(2, 2), padding=((1, 1), (0, 0))),
     [[21, 33], [99, 117], [189, 207], [171, 183]]),
    # ConvTranspose as the lhs-dilated convolution with the flipped kernel
    # (all ones here): lhs_dilation = strides, padding (k-1)d - pads.
    ("onnx_convtranspose", X9, W33, dict(padding=((2, 2), (2, 2))),
     [[0, 1, 3, 3, 2], [3, 8, 15, 12, 7], [9, 21, 36, 27, 15], [9, 20, 33, 24, 13], [6, 13, 21, 15, 8]]),
    ("onnx_convtranspose_pads", X9, W33, dict(lhs_dilation=(3, 2), padding=((1, 1), (0, 0))),
     [[1, 1, 3], [1, 1, 3], [7, 4, 9], [7, 4, 9], [7, 4, 9], [13, 7, 15], [13, 7, 15]]),
    ("stablehlo_convolution_op_test", SHLO, W33, dict(stride=(4, 4), lhs_dilation=(2, 2)), [[10, 26], [46, 62]]),
    ("stablehlo_convolution_op_test_padding", SHLO, W33,
     dict(stride=(4, 4), lhs_dilation=(2, 2), padding=((1, 1), (1, 1))), [[1, 5], [10, 14]]),
]


class ConvBase(LeafCase):
    leaves = ()

    def conv_run(self, tag, leaf, case, dt):
        rng = self.rng
        x, w = conv_inputs(leaf, rng, case.N, case.C, case.H, case.W, case.O, case.KH, case.KW,
                           case.G, dt, case.x, case.w)
        kw = dict(stride=case.stride, padding=case.padding, lhs_dilation=case.lhs_dilation,
                  rhs_dilation=case.rhs_dilation, feature_group_count=case.G)
        ref, absum = M.conv_and_bound(x, w, leaf.labels, **kw)
        k = M.contraction_length(w.shape, leaf.labels)
        pdt = dt if leaf.product_rounding and dt in ("bf16", "fp16") else None
        tol = check.sum_tolerance(ref, absum, k, dt, pdt)
        name = "%s %s %s" % (tag, case.name, dt)

        def compare(outs):
            got = outs[0]
            if got is None:
                return "no output file"
            if nxnp.dtype_name(got) != dt:
                return "result dtype %s, expected %s" % (nxnp.dtype_name(got), dt)
            msg = check.within(nxnp.decode(got), ref, tol, "out (K=%d)" % k)
            if msg is None and case.expect is not None:
                want = np.transpose(np.asarray(case.expect, float).reshape(1, 1, *np.shape(case.expect)),
                                    ["bf01".index(c) for c in leaf.out_label])
                msg = check.within(nxnp.decode(got), nxnp.round_to(want, dt), 0, "published result")
            return msg
        self.run_case(name, leaf.key, [nxnp.encode(x, dt), nxnp.encode(w, dt)], case.attrs(), compare)

    def public_cases(self, tag, leaf):
        for name, x, w, attrs, expect in PUBLIC_CONV:
            if "lhs_dilation" in attrs and not leaf.lhs_dilation:
                continue
            if leaf.kind == "dw1d":
                continue
            c = ConvCase(name, 1, 1, x.shape[2], x.shape[3], 1, 3, 3, 1, x=x, w=w, expect=expect, **attrs)
            for dt in ("fp32", "bf16"):
                self.conv_run(tag, leaf, c, dt)

    def exact_integers(self, tag, leaf):
        """Small integers: every product and sum is exact in fp32 (and in
        #11's product types), so the result must be the exact sum rounded
        once to the output dtype (ties to even, fp16/e5m2 overflow to Inf,
        e4m3 saturating at 448), bit for bit but the sign of zero."""
        rng = self.rng
        dw = leaf.kind != "dense"
        for i, dt in enumerate(PE_DTYPES):
            C = 3 if dw else 6
            G = C if dw else (2 if i % 2 else 1)
            O = C if dw else 4
            H, W, KH = (1, 11, 1) if leaf.kind == "dw1d" else (6, 5, 3)
            x = rng.integers(-8, 9, size=(1, C, H, W)).astype(float)
            w = rng.integers(-8, 9, size=(O, C // G, KH, 3)).astype(float)
            if i == 2:   # fp16: sums past 65504 -> Inf
                x[:] = 8.0
                w[:] = 8.0
                C = 130 if not dw else C
            if dt == "fp8_e4m3":    # sums past 448 saturate
                x = np.abs(x)
                w = np.abs(w)
            if i == 2 and not dw:
                x = np.full((1, 130, H, W), 8.0)
                w = np.full((O, 130 // G, KH, 3), 8.0)
            case = ConvCase("exact_integers", 1, x.shape[1], H, W, O, KH, 3, G=G,
                            padding=((0, 0), (1, 1)) if leaf.kind == "dw1d" else ((1, 0), (0, 1)), x=x, w=w)
            xl, wl = conv_inputs(leaf, rng, 1, x.shape[1], H, W, O, KH, 3, G, dt, x, w)
            kw = dict(stride=case.stride, padding=case.padding, feature_group_count=G)
            want = nxnp.round_to(M.conv_general(xl, wl, leaf.labels, **kw), dt)

            def compare(outs, want=want):
                if outs[0] is None:
                    return "no output file"
                return check.within(nxnp.decode(outs[0]), want, 0, "out (exact sums)")
            self.run_case("%s exact_integers %s" % (tag, dt), leaf.key, [nxnp.encode(xl, dt), nxnp.encode(wl, dt)],
                          case.attrs(), compare)

    def nonfinite(self, tag, leaf):
        self.conv_run(tag, leaf, nonfinite_case(leaf, self.rng), "fp32")
        self.exact_integers(tag, leaf)

    def random_cases(self, tag, leaf, n):
        for i in range(n):
            c = random_conv_case(leaf, self.rng, "random%d" % i, big=SWEEP > 0 and i % 3 == 2)
            self.conv_run(tag, leaf, c, PE_DTYPES[i % len(PE_DTYPES)])


def nonfinite_case(leaf, rng):
    """Two channels (two groups where the leaf groups), all ones but one
    +Inf and one NaN in channel 0: IEEE arithmetic makes exactly the outputs
    whose window holds them Inf/NaN, and channel 1 stays finite."""
    dense = leaf.kind == "dense"
    G, C = 2, 2
    O = 2 * G if dense else C
    H, W = (1, 9) if leaf.kind == "dw1d" else (5, 6)
    KH = 1 if leaf.kind == "dw1d" else 2
    x = np.ones((1, C, H, W))
    x[0, 0, 0, 1] = np.inf
    x[0, 0, H - 1, W - 2] = np.nan
    w = nxnp.round_to(rng.uniform(0.5, 1, (O, C // G, KH, 2)), "fp32")
    pad = ((0, 0), (1, 1)) if leaf.kind == "dw1d" else ((1, 0), (0, 1))
    return ConvCase("inf_nan_in_channel_0", 1, C, H, W, O, KH, 2, G=G, padding=pad, x=x, w=w)


class ConvDense(ConvBase):
    """#3 and #4: dense and grouped convolutions on the PE."""

    def edge_cases(self):
        return [
            ConvCase("1x1_kernel_C129", 3, 129, 4, 5, 7, 1, 1),
            ConvCase("kernel_larger_than_image_padded", 1, 3, 2, 3, 4, 4, 5, padding=((2, 1), (3, 2))),
            ConvCase("stride_gt_kernel", 2, 5, 9, 8, 3, 2, 2, stride=(3, 4)),
            ConvCase("C1_N513", 513, 1, 3, 2, 2, 2, 2),
            ConvCase("C300_O130_crop", 1, 300, 4, 4, 130, 3, 3, padding=((-1, 1), (1, -1))),
            ConvCase("grouped_G3_dilated", 2, 6, 7, 9, 9, 2, 3, G=3, rhs_dilation=(2, 3), stride=(1, 2)),
            ConvCase("depthwise_multiplier2", 3, 8, 6, 5, 16, 3, 3, G=8, padding=((1, 1), (1, 1))),
        ]

    def test_pbp_0f1b(self):
        self.leaf_all("#3")

    def test_pbp_fb01(self):
        self.leaf_all("#4")

    def leaf_all(self, tag):
        leaf = CONV_LEAVES[tag]
        self.public_cases(tag, leaf)
        for i, c in enumerate(self.edge_cases()):
            self.conv_run(tag, leaf, c, PE_DTYPES[i % len(PE_DTYPES)])
        self.random_cases(tag, leaf, 3 + SWEEP)
        self.nonfinite(tag, leaf)


class ConvDepthwise(ConvBase):
    """#6, #9, #11: depthwise forward convolutions."""

    def test_conv1d_depthwise(self):
        leaf = CONV_LEAVES["#6"]
        cases = [
            ConvCase("causal_C160_N2", 2, 160, 1, 300, 160, 1, 4, G=160, padding=((0, 0), (3, 0))),
            ConvCase("stride3_dilated_crop", 3, 33, 1, 50, 33, 1, 5, G=33, stride=(1, 3), rhs_dilation=(1, 2),
                     padding=((0, 0), (-1, 2))),
            ConvCase("kernel_longer_than_input", 1, 5, 1, 3, 5, 1, 7, G=5, padding=((0, 0), (2, 3))),
            ConvCase("C1_W1", 1, 1, 1, 1, 1, 1, 1, G=1),
        ]
        for i, c in enumerate(cases):
            for dt in (PE_DTYPES if i == 0 else [PE_DTYPES[i % 5]]):
                self.conv_run("#6", leaf, c, dt)
        self.random_cases("#6", leaf, 3 + SWEEP)
        self.nonfinite("#6", leaf)

    def test_column_packing_1(self):
        leaf = CONV_LEAVES["#9"]
        self.public_cases("#9", leaf)
        cases = [
            ConvCase("C48_28x28_pad1", 1, 48, 28, 28, 48, 3, 3, G=48, padding=((1, 1), (1, 1))),
            ConvCase("C129_stride2_dilated", 1, 129, 11, 10, 129, 3, 2, G=129, stride=(2, 2),
                     rhs_dilation=(2, 1), padding=((1, 0), (0, 2))),
            ConvCase("kernel_larger_than_image", 1, 3, 2, 2, 3, 4, 3, G=3, padding=((2, 1), (1, 1))),
            ConvCase("1x1", 1, 70, 1, 1, 70, 1, 1, G=70),
        ]
        for i, c in enumerate(cases):
            for dt in (PE_DTYPES if i == 0 else [PE_DTYPES[i % 5]]):
                self.conv_run("#9", leaf, c, dt)
        self.random_cases("#9", leaf, 3 + SWEEP)
        self.nonfinite("#9", leaf)

    def test_depthwise_f01b(self):
        leaf = CONV_LEAVES["#11"]
        self.public_cases("#11", leaf)
        cases = [
            ConvCase("input_gradient_3x3_s2", 2, 40, 14, 14, 40, 3, 3, G=40, lhs_dilation=(2, 2),
                     padding=((1, 2), (1, 2))),
            ConvCase("N513_C3", 513, 3, 3, 2, 3, 2, 2, G=3, padding=((1, 0), (0, 1))),
            ConvCase("C129_stride_dilation", 3, 129, 9, 8, 129, 3, 3, G=129, stride=(2, 3),
                     rhs_dilation=(1, 2), padding=((0, -1), (2, 1))),
            ConvCase("lhs3_crop", 1, 5, 4, 5, 5, 2, 3, G=5, lhs_dilation=(3, 2), padding=((-1, 0), (1, -2))),
        ]
        for i, c in enumerate(cases):
            for dt in (PE_DTYPES if i == 0 else [PE_DTYPES[i % 5]]):
                self.conv_run("#11", leaf, c, dt)
        self.random_cases("#11", leaf, 3 + SWEEP)
        self.nonfinite("#11", leaf)


# ----------------------------------------------------- select_and_scatter
def pool_windows(x, window, strides, pads, fill):
    """x padded with `fill` (negative padding crops) and cut into windows:
    [counts..., window...] (vectorised; for the finite-difference check)."""
    padded = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in pads], constant_values=fill)
    padded = padded[tuple(slice(max(-lo, 0), padded.shape[d] - max(-hi, 0)) for d, (lo, hi) in enumerate(pads))]
    v = np.lib.stride_tricks.sliding_window_view(padded, window)
    return v[tuple(slice(None, None, s) for s in strides)]


class SelectAndScatter(LeafCase):
    """#1: XLA SelectAndScatter (select = GE, scatter = add) on rank-4 NCHW
    operands, bit-exact against the model."""
    KEY = "SelectAndScatter"

    def sas(self, name, x, src, window, strides, pads, dt, init=0.0, expect=None):
        add = (lambda a, b: float(nxnp.round_to(a + b, dt)))
        want = M.select_and_scatter(x, src, window, strides, pads, nxnp.round_to(init, dt), add)
        attrs = {"window_dimensions": list(window), "window_strides": list(strides),
                 "padding": [list(p) for p in pads]}
        if init != 0.0:
            attrs["init_value"] = init
        want_arr = nxnp.encode(want, dt)

        def compare(outs):
            if init == 0.0:
                msg = check.bit_exact(outs[0], want_arr, "out")
            else:  # docs/parts/data-movement.md: only the sign of a zero may differ
                msg = check.bit_exact(outs[0], want_arr, "out") if outs[0] is None else \
                    check.within(nxnp.decode(outs[0]), want, 0, "out")
            if msg is None and expect is not None:
                msg = check.within(nxnp.decode(outs[0]), np.asarray(expect, float).reshape(want.shape), 0,
                                   "published result")
            return msg
        self.run_case("%s %s" % (name, dt), self.KEY, [nxnp.encode(x, dt), nxnp.encode(src, dt)], attrs, compare)

    def source_for(self, shape, window, strides, pads, dt):
        cnt = [(shape[d] + lo + hi - window[d]) // strides[d] + 1 for d, (lo, hi) in enumerate(pads)]
        return nxnp.random_values(self.rng, cnt, dt, -2, 2)

    def test_stablehlo_example(self):
        # openxla/stablehlo docs/spec.md "select_and_scatter", as rank 4
        x = np.array([[1, 5], [2, 5], [3, 6], [4, 4]], float).reshape(1, 1, 4, 2)
        src = np.array([[5, 6], [7, 8]], float).reshape(1, 1, 2, 2)
        for dt in nxnp.FLOATS:
            self.sas("stablehlo_example", x, src, [1, 1, 3, 1], [1, 1, 2, 1],
                     [[0, 0], [0, 0], [0, 1], [0, 0]], dt, expect=[[0, 0], [0, 0], [5, 14], [7, 0]])

    def test_maxpool_gradient_shapes(self):
        rng = self.rng
        P = [[0, 0], [0, 0], [1, 1], [1, 1]]
        cases = [
            # name, operand shape, window, strides, padding, value generator
            ("resnet_3x3s2p1", (2, 3, 9, 11), [1, 1, 3, 3], [1, 1, 2, 2], P, "uniform"),
            ("ties", (1, 4, 7, 6), [1, 1, 3, 3], [1, 1, 1, 1], P, "ties"),
            ("all_negative_border", (1, 2, 5, 5), [1, 1, 3, 3], [1, 1, 2, 2], [[0, 0], [0, 0], [2, 2], [2, 2]],
             "negative"),
            ("all_minus_inf", (1, 2, 4, 4), [1, 1, 3, 3], [1, 1, 2, 2], P, "-inf"),
            ("window_larger_than_image", (2, 1, 2, 3), [1, 1, 4, 5], [1, 1, 1, 2], [[0, 0], [0, 0], [2, 1], [1, 2]],
             "uniform"),
            ("stride_gt_window", (1, 3, 10, 9), [1, 1, 2, 2], [1, 1, 3, 4], [[0, 0]] * 4, "uniform"),
            ("1x1_image", (3, 2, 1, 1), [1, 1, 1, 1], [1, 1, 1, 1], [[0, 0]] * 4, "uniform"),
            ("negative_padding", (1, 2, 8, 7), [1, 1, 3, 2], [1, 1, 2, 1], [[0, 0], [0, 0], [-1, 0], [1, -2]],
             "uniform"),
            ("padding_only_windows", (1, 1, 3, 3), [1, 1, 2, 2], [1, 1, 2, 2], [[0, 0], [0, 0], [3, 2], [2, 3]],
             "uniform"),
            ("strides_pads_over_N_C", (3, 4, 5, 5), [1, 1, 2, 2], [2, 3, 1, 2], [[1, 0], [0, 2], [0, 0], [1, 1]],
             "uniform"),
            ("210_planes", (3, 70, 4, 5), [1, 1, 2, 3], [1, 1, 2, 2], [[0, 0], [0, 0], [0, 1], [1, 1]], "ties"),
            ("tall_plane", (1, 1, 300, 3), [1, 1, 5, 2], [1, 1, 3, 1], [[0, 0], [0, 0], [2, 2], [0, 1]], "uniform"),
        ]
        for i, (name, shape, window, strides, pads, gen) in enumerate(cases):
            for dt in (nxnp.FLOATS if i < 2 else [nxnp.FLOATS[i % 5]]):
                if gen == "ties":
                    x = rng.integers(-1, 2, size=shape).astype(float)
                elif gen == "negative":
                    x = -1 - np.abs(nxnp.random_values(rng, shape, dt))
                    x = nxnp.round_to(x, dt)
                elif gen == "-inf":
                    x = np.full(shape, -np.inf)
                    x[..., 1, 1] = nxnp.round_to(-1e30 if dt in ("fp32", "bf16") else -100, dt)
                    x = nxnp.round_to(x, dt) if dt != "fp8_e4m3" else np.where(np.isinf(x), -448.0, x)
                else:
                    x = nxnp.random_values(rng, shape, dt)
                src = self.source_for(shape, window, strides, pads, dt)
                self.sas(name, x, src, window, strides, pads, dt)
        self.sas("init_value", nxnp.random_values(rng, (1, 2, 6, 6), "fp32"),
                 self.source_for((1, 2, 6, 6), [1, 1, 3, 3], [1, 1, 2, 2], P, "fp32"),
                 [1, 1, 3, 3], [1, 1, 2, 2], P, "fp32", init=1.5)

    def test_random(self):
        rng = self.rng
        for i in range(4 + SWEEP):
            while True:
                shape = [int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 14)),
                         int(rng.integers(1, 14))]
                window = [1, 1, int(rng.integers(1, 5)), int(rng.integers(1, 5))]
                strides = [int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 4)),
                           int(rng.integers(1, 4))]
                pads = [[int(rng.integers(0, 2)), int(rng.integers(0, 2))] for _ in range(2)] + \
                       [[int(rng.integers(-1, 3)), int(rng.integers(-1, 3))] for _ in range(2)]
                if all(shape[d] + pads[d][0] + pads[d][1] >= window[d] for d in range(4)):
                    break
            dt = nxnp.FLOATS[i % 5]
            x = nxnp.random_values(rng, shape, dt) if i % 2 else rng.integers(-2, 3, size=shape).astype(float)
            self.sas("random%d" % i, x, self.source_for(shape, window, strides, pads, dt), window, strides, pads, dt)

    def test_nan(self):
        """XLA's select (GE) on NaN: `selected >= e` is false for a NaN on
        either side, so the scan moves on to e (a NaN is selected when it
        comes later, and left for any later element when it is selected)."""
        x = nxnp.random_values(self.rng, (1, 1, 6, 6), "fp32")
        x[0, 0, 1, 1] = np.nan
        x[0, 0, 4, 2] = np.nan
        P = [[0, 0], [0, 0], [1, 1], [1, 1]]
        self.sas("nan", x, self.source_for(x.shape, [1, 1, 3, 3], [1, 1, 2, 2], P, "fp32"), [1, 1, 3, 3],
                 [1, 1, 2, 2], P, "fp32")

    def test_finite_difference_gradient(self):
        """select_and_scatter(x, s) is the gradient of f(x) = sum(maxpool(x) * s):
        central differences of f (float64, distinct values so no window's
        argmax moves) against nxsim, element by element."""
        rng = self.rng
        for name, shape, window, strides, pads in [
                ("3x3s2p1", (2, 2, 7, 6), [1, 1, 3, 3], [1, 1, 2, 2], [[0, 0], [0, 0], [1, 1], [1, 1]]),
                ("2x3s1_overlap", (1, 3, 5, 6), [1, 1, 2, 3], [1, 1, 1, 1], [[0, 0], [0, 0], [0, 1], [1, 0]])]:
            n = int(np.prod(shape))
            x = (rng.permutation(n).reshape(shape) - n / 2) / 64.0      # distinct, 1/64 apart: exact in fp32
            src = self.source_for(shape, window, strides, pads, "fp32")

            def f(v):
                m = pool_windows(v, window, strides, pads, -np.inf).max(axis=tuple(range(4, 8)))
                return np.sum(np.where(np.isfinite(m), m, 0.0) * src)
            h = 2.0 ** -10
            grad = np.empty(n)
            for i in range(n):
                e = np.zeros(n)
                e[i] = h
                grad[i] = (f(x + e.reshape(shape)) - f(x - e.reshape(shape))) / (2 * h)
            grad = grad.reshape(shape)
            attrs = {"window_dimensions": window, "window_strides": strides, "padding": pads}
            tol = 1e-9 * (1 + np.abs(grad)) + 4 * nxnp.unit_roundoff("fp32") * np.abs(grad) * 4

            def compare(outs):
                return check.within(nxnp.decode(outs[0]), grad, tol, "gradient by central differences")
            self.run_case("fd " + name, self.KEY, [nxnp.encode(x, "fp32"), nxnp.encode(src, "fp32")], attrs,
                          compare)


# ------------------------------------------------------------- resize
class ResizeNearest(LeafCase):
    """#2: ResizeNearest, [N,H,W,C] -> [N,OH,OW,C], bit-exact on every dtype."""
    KEY = "ResizeNearest"

    def resize(self, name, data_arr, oh, ow, attrs, sy, sx, expect=None):
        want = M.resize_nearest(data_arr, sy, sx)

        def compare(outs):
            msg = check.bit_exact(outs[0], want, "out")
            if msg is None and expect is not None:
                msg = check.within(nxnp.decode(outs[0])[0, :, :, 0], np.asarray(expect, float), 0,
                                   "published result")
            return msg
        self.run_case("%s %s" % (name, nxnp.dtype_name(data_arr)), self.KEY, [data_arr], attrs, compare)

    def onnx(self, name, x, out_hw=None, scales=None, ct="half_pixel", nm="round_prefer_floor", expect=None):
        H, W = x.shape
        data = nxnp.encode(x.reshape(1, H, W, 1), "fp32")
        attrs = {"coordinate_transformation_mode": ct, "nearest_mode": nm}
        if scales is not None:
            attrs["scales"] = [1, scales[0], scales[1], 1]
            oh, ow = (int(np.floor(H * np.float64(np.float32(s)))) for s in scales) if False else \
                (M.math.floor(M.Fraction(H) * M.Fraction(float(np.float32(scales[0])))),
                 M.math.floor(M.Fraction(W) * M.Fraction(float(np.float32(scales[1])))))
            sy = M.resize_src_onnx(oh, H, ct, nm, scales[0])
            sx = M.resize_src_onnx(ow, W, ct, nm, scales[1])
        else:
            oh, ow = out_hw
            attrs["out_shape"] = [1, oh, ow, 1]
            sy = M.resize_src_onnx(oh, H, ct, nm)
            sx = M.resize_src_onnx(ow, W, ct, nm)
        self.resize(name, data, oh, ow, attrs, sy, sx, expect)

    def test_onnx_examples(self):
        # onnx/onnx onnx/backend/test/case/node/resize.py, the nearest cases
        x22 = np.array([[1, 2], [3, 4]], float)
        x24 = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], float)
        x44 = np.arange(1, 17, dtype=float).reshape(4, 4)
        self.onnx("onnx_upsample_scales_nearest", x22, scales=(2, 3),
                  expect=[[1, 1, 1, 2, 2, 2]] * 2 + [[3, 3, 3, 4, 4, 4]] * 2)
        self.onnx("onnx_downsample_scales_nearest", x24, scales=(0.6, 0.6), expect=[[1, 3]])
        self.onnx("onnx_upsample_sizes_nearest", x22, (7, 8),
                  expect=[[1] * 4 + [2] * 4] * 4 + [[3] * 4 + [4] * 4] * 3)
        self.onnx("onnx_downsample_sizes_nearest", x24, (1, 3), expect=[[1, 2, 4]])
        r = [1, 2, 2, 3, 3, 4, 4, 4]
        self.onnx("onnx_upsample_sizes_nearest_ceil_half_pixel", x44, (8, 8), ct="half_pixel", nm="ceil",
                  expect=[[v + 4 * k for v in r] for k in (0, 1, 1, 2, 2, 3, 3, 3)])
        r = [1, 1, 1, 2, 2, 3, 3, 4]
        self.onnx("onnx_upsample_sizes_nearest_floor_align_corners", x44, (8, 8), ct="align_corners",
                  nm="floor", expect=[[v + 4 * k for v in r] for k in (0, 0, 0, 1, 1, 2, 2, 3)])
        r = [1, 2, 2, 3, 3, 4, 4, 4]
        self.onnx("onnx_upsample_sizes_nearest_round_prefer_ceil_asymmetric", x44, (8, 8), ct="asymmetric",
                  nm="round_prefer_ceil", expect=[[v + 4 * k for v in r] for k in (0, 1, 1, 2, 2, 3, 3, 3)])

    def test_default_rule_every_dtype(self):
        rng = self.rng
        for dt in nxnp.ALL_DTYPES:
            N, H, W, C, OH, OW = 2, 30, 20, 3, 59, 38            # the public kernel's shape, C small
            data = nxnp.from_bits(nxnp.random_bits(rng, (N, H, W, C), dt), dt)
            self.resize("public_30x20_to_59x38", data, OH, OW, {"out_shape": [N, OH, OW, C]},
                        M.resize_src_default(OH, H), M.resize_src_default(OW, W))

    def test_every_mode_pair(self):
        rng = self.rng
        for i, (ct, nm) in enumerate([(c, n) for c in M.ONNX_CT for n in M.ONNX_NEAREST]):
            N, H, W, C = 1, 5, 7, 2
            OH, OW = [(11, 3), (1, 9), (4, 1), (23, 7)][i % 4]
            dt = nxnp.ALL_DTYPES[i % len(nxnp.ALL_DTYPES)]
            data = nxnp.from_bits(nxnp.random_bits(rng, (N, H, W, C), dt), dt)
            self.resize("sizes %s/%s %dx%d" % (ct, nm, OH, OW), data, OH, OW,
                        {"out_shape": [N, OH, OW, C], "coordinate_transformation_mode": ct, "nearest_mode": nm},
                        M.resize_src_onnx(OH, H, ct, nm), M.resize_src_onnx(OW, W, ct, nm))

    def test_scales(self):
        rng = self.rng
        for i, (ct, s) in enumerate([("asymmetric", (1.7, 0.45)), ("half_pixel", (2.5, 0.3)),
                                     ("align_corners", (1.5, 3.25)), ("pytorch_half_pixel", (0.2, 1.9)),
                                     ("half_pixel", (4.3, 1.0))]):
            nm = M.ONNX_NEAREST[i % 4]
            N, H, W, C = 2, 6, 9, 3
            OH = M.math.floor(M.Fraction(H) * M.Fraction(float(np.float32(s[0]))))
            OW = M.math.floor(M.Fraction(W) * M.Fraction(float(np.float32(s[1]))))
            data = nxnp.from_bits(nxnp.random_bits(rng, (N, H, W, C), "fp32"), "fp32")
            self.resize("scales %s/%s %s" % (ct, nm, s), data, OH, OW,
                        {"scales": [1, s[0], s[1], 1], "coordinate_transformation_mode": ct, "nearest_mode": nm},
                        M.resize_src_onnx(OH, H, ct, nm, s[0]), M.resize_src_onnx(OW, W, ct, nm, s[1]))

    def test_exact_boundaries_of_large_sizes(self):
        """From out_shape the ONNX coordinates are exact rationals; exact
        ties (x.5) and integers must be taken as ties and integers whatever
        the sizes (docs/parts/data-movement.md claims exactly that)."""
        rng = self.rng
        for W, OW, ct, nm in [(4096, 8191, "align_corners", "round_prefer_floor"),   # t = x / 2
                              (3000, 7001, "half_pixel", "round_prefer_floor"),      # x = 3500: t = 1499.5
                              (8191, 4096, "asymmetric", "ceil")]:                   # x = 4095: t = 8189.0002..
            data = nxnp.from_bits(nxnp.random_bits(rng, (1, 1, W, 1), "uint16"), "uint16")
            self.resize("exact boundary %s/%s %d->%d" % (ct, nm, W, OW), data, 1, OW,
                        {"out_shape": [1, 1, OW, 1], "coordinate_transformation_mode": ct, "nearest_mode": nm},
                        M.resize_src_onnx(1, 1, ct, nm), M.resize_src_onnx(OW, W, ct, nm))

    def test_edges_and_random(self):
        rng = self.rng
        shapes = [((1, 1, 1, 4), (5, 3)), ((3, 4, 6, 5), (1, 1)), ((1, 3, 2, 1), (13, 1)), ((2, 1, 1, 7), (1, 1)),
                  ((1, 1, 4097, 1), (1, 4099)), ((1, 1, 5000, 2), (1, 2999))]
        for i in range(3 + SWEEP):
            shapes.append(((int(rng.integers(1, 4)), int(rng.integers(1, 20)), int(rng.integers(1, 20)),
                            int(rng.integers(1, 70))), (int(rng.integers(1, 40)), int(rng.integers(1, 40)))))
        for i, ((N, H, W, C), (OH, OW)) in enumerate(shapes):
            dt = nxnp.ALL_DTYPES[i % len(nxnp.ALL_DTYPES)]
            data = nxnp.from_bits(nxnp.random_bits(rng, (N, H, W, C), dt), dt)
            self.resize("default %s->%dx%d" % ((N, H, W, C), OH, OW), data, OH, OW, {"out_shape": [N, OH, OW, C]},
                        M.resize_src_default(OH, H), M.resize_src_default(OW, W))
            ct, nm = M.ONNX_CT[i % 4], M.ONNX_NEAREST[(i // 4) % 4]
            self.resize("onnx %s/%s %s->%dx%d" % (ct, nm, (N, H, W, C), OH, OW), data, OH, OW,
                        {"out_shape": [N, OH, OW, C], "coordinate_transformation_mode": ct, "nearest_mode": nm},
                        M.resize_src_onnx(OH, H, ct, nm), M.resize_src_onnx(OW, W, ct, nm))


# ------------------------------------------------------------ transposes
class Transposes(LeafCase):
    """#12 tiled_pf_transpose and #13 tiled_dve_transpose_10: np.transpose,
    bit-exact on every dtype (random bit patterns: NaN payloads too)."""
    KEYS = ("tiled_pf_transpose", "tiled_dve_transpose_10")

    def tr(self, key, shape, perm, dt, name=""):
        x = nxnp.from_bits(nxnp.random_bits(self.rng, shape, dt), dt)
        want = np.ascontiguousarray(np.transpose(x, perm))
        attrs = {} if perm is None else {"permutation": list(perm)}
        self.run_case("%s %s %s perm %s %s" % (key, name, list(shape), perm, dt), key, [x], attrs,
                      lambda outs: check.bit_exact(outs[0], want, "out"))

    def test_every_dtype(self):
        for key in self.KEYS:
            for dt in nxnp.ALL_DTYPES:
                self.tr(key, (129, 257), [1, 0], dt)

    def test_shapes(self):
        cases = [((2, 4, 8, 16, 32), [0, 1, 4, 2, 3]), ((4, 5, 6, 7), [2, 3, 0, 1]), ((4, 5, 6), [2, 0, 1]),
                 ((3, 1, 200), [2, 1, 0]), ((1, 1), [1, 0]), ((1, 300), [1, 0]), ((300, 1), [1, 0]),
                 ((5, 130, 3), [0, 2, 1]), ((7, 9), [-1, -2]), ((6, 5), None), ((33, 17), [0, 1]),
                 ((3, 4, 5), [0, 1, 2]), ((600, 130), [1, 0])]
        for i, (shape, perm) in enumerate(cases):
            for key in self.KEYS:
                self.tr(key, shape, perm, nxnp.ALL_DTYPES[i % len(nxnp.ALL_DTYPES)])

    def test_random(self):
        rng = self.rng
        for i in range(3 + SWEEP):
            shape = [int(rng.integers(1, 40)) for _ in range(int(rng.integers(2, 5)))]
            if i % 4 == 3:
                shape = [int(rng.integers(1, 1500)), int(rng.integers(1, 1500))]
            # a permutation that reduces to a swap of two groups: rotate
            r = len(shape)
            cut = int(rng.integers(1, r))
            lead = int(rng.integers(0, cut))
            perm = list(range(lead)) + list(range(cut, r)) + list(range(lead, cut))
            for key in self.KEYS:
                self.tr(key, shape, perm, nxnp.ALL_DTYPES[i % len(nxnp.ALL_DTYPES)], "random%d" % i)


# ----------------------------------------------------------- blockwise_mm
class BlockwiseMM(LeafCase):
    """#10 blockwise_mm (MoE prefill) against a numpy MoE, tolerance from
    the error analysis in `tolerance`."""
    KEY = "blockwise_mm"

    def tolerance(self, out, parts, wgu, wd, H, I, dt, mode):
        """Per output element: the gate/up sums over H and the down sum over I
        in fp32 (gamma_n = (n + 1) u32 each, products included); PRE_SCALE's
        x a and h rounded to the PE's input dtype (u_in); silu on ACT within
        1 fp32 ulp (2 u32) and |silu'| <= 1.1; the POST_SCALE product (u32);
        each contribution rounded to the output dtype and their sum in it
        (u_out per contribution and per add); then the final value (u_out)."""
        u32, uin = nxnp.unit_roundoff("fp32"), nxnp.unit_roundoff(dt)
        gH, gI = (H + 1) * u32, (I + 1) * u32
        tol = np.zeros_like(out)
        for tok, lst in parts.items():
            mags = []
            for (x, e, g, u, h, a) in lst:
                ax = np.abs(x)
                dg = (gH + (uin if mode == "PRE_SCALE" else 0)) * (ax @ np.abs(wgu[e, :, 0, :]))
                du = (gH + (uin if mode == "PRE_SCALE" else 0)) * (ax @ np.abs(wgu[e, :, 1, :]))
                sg = np.abs(M.silu(g))
                dh = 1.1 * dg * (np.abs(u) + du) + (sg + 1.1 * dg) * du + (2 * u32 + uin + u32) * np.abs(h)
                habs = np.abs(h) + dh
                sc = abs(a) if mode == "POST_SCALE" else 1.0
                y = np.abs(h @ wd[e]) * sc
                tol[tok] += sc * (dh @ np.abs(wd[e]) + gI * (habs @ np.abs(wd[e]))) + (u32 + uin) * y
                mags.append(y)
            tol[tok] += uin * len(lst) * np.sum(mags, axis=0)
        return tol + uin * np.abs(out) + nxnp.tiny(dt)

    def bmm(self, name, T, H, I, E, B, tok_ids, b2e, dt, mode=None, aff_dt=None, hs=None, expect=None):
        rng = self.rng
        aff_dt = aff_dt or dt
        if hs is None:
            hs = nxnp.random_values(rng, (T + 1, H), dt)
        hs[T] = nxnp.random_values(rng, H, dt)       # the padding row must not matter
        aff = nxnp.random_values(rng, ((T + 1) * E, 1), aff_dt, 0, 1)
        wgu = nxnp.round_to(nxnp.random_values(rng, (E, H, 2, I), dt) / np.sqrt(H), dt)
        wd = nxnp.round_to(nxnp.random_values(rng, (E, I, H), dt) / np.sqrt(I), dt)
        tok_ids = np.asarray(tok_ids, np.int64)
        b2e = np.asarray(b2e, np.int64).reshape(-1, 1)
        m = mode or "POST_SCALE"
        out, parts = M.blockwise_mm(hs, aff, wgu, wd, tok_ids, b2e, B, m)
        tol = self.tolerance(out, parts, wgu, wd, H, I, dt, m)
        attrs = {"block_size": B}
        if mode:
            attrs["expert_affinities_scaling_mode"] = mode
        inputs = [nxnp.encode(hs, dt), nxnp.encode(aff, aff_dt), nxnp.encode(wgu, dt), nxnp.encode(wd, dt),
                  nxnp.encode(tok_ids, "int32"), nxnp.encode(b2e, "int32")]

        def compare(outs):
            got = outs[0]
            if got is None or nxnp.dtype_name(got) != dt:
                return "result %s, expected dtype %s" % (None if got is None else nxnp.dtype_name(got), dt)
            msg = check.within(nxnp.decode(got), out, tol, "output")
            if msg is None and expect is not None:
                msg = check.within(nxnp.decode(got), expect(hs, aff, wgu, wd), tol, "dense MoE")
            return msg
        self.run_case("%s %s %s" % (name, dt, m), self.KEY, inputs, attrs, compare)

    def test_routing_example(self):
        # KERNELS.md / issue 13: B = 2, block_to_expert [0,0,1,2],
        # token_position_to_id [0,2,4,-1,1,5,3,-1]
        for dt in ("fp32", "bf16"):
            for mode in (None, "PRE_SCALE", "NO_SCALE"):
                self.bmm("routing_example", 6, 40, 24, 3, 2, [0, 2, 4, -1, 1, 5, 3, -1], [0, 0, 1, 2], dt, mode)

    def test_dense_moe_identity(self):
        """A top-2 MoE computed densely (token by token over its two experts)
        equals blockwise_mm over the routing that groups tokens by expert."""
        rng = self.rng
        T, H, I, E, B = 37, 72, 40, 4, 8
        for dt, pad in (("fp32", -1), ("bf16", T)):
            choice = np.array([rng.choice(E, 2, replace=False) for _ in range(T)])
            ids, b2e = [], []
            for e in range(E):
                toks = [t for t in range(T) if e in choice[t]]
                for s in range(0, max(len(toks), 1), B):
                    blk = toks[s:s + B]
                    ids += blk + [pad] * (B - len(blk))
                    b2e.append(e)

            def dense(hs, aff, wgu, wd, choice=choice):
                out = np.zeros((T + 1, H))
                for t in range(T):
                    for e in choice[t]:
                        x = hs[t]
                        out[t] += (M.silu(x @ wgu[e, :, 0, :]) * (x @ wgu[e, :, 1, :])) @ wd[e] * aff[t * E + e, 0]
                return out
            self.bmm("dense_moe_top2", T, H, I, E, B, ids, b2e, dt, expect=dense)

    def test_shapes(self):
        rng = self.rng
        cases = [
            # name, T, H, I, E, B, NB
            ("E1_B1", 5, 16, 8, 1, 1, 7),
            ("odd_sizes", 29, 130, 67, 3, 5, 6),
            ("wide_H", 9, 600, 20, 2, 4, 3),
            ("B_129", 150, 24, 16, 2, 129, 2),
        ]
        for i in range(1 + SWEEP):
            big = i % 3 == 2
            cases.append(("random%d" % i, int(rng.integers(1, 600 if big else 60)),
                          int(rng.integers(1, 2200 if big else 200)), int(rng.integers(1, 400 if big else 100)),
                          int(rng.integers(1, 9 if big else 5)), int(rng.integers(1, 300 if big else 20)),
                          int(rng.integers(1, 6))))
        for i, (name, T, H, I, E, B, NB) in enumerate(cases):
            ids = rng.integers(-1, T + 1, size=NB * B)                # repeats, -1 and T padding
            b2e = rng.integers(-1 if i % 2 else 0, E, size=NB)        # a block without an expert
            dt = ("fp32", "bf16")[i % 2]
            self.bmm(name, T, H, I, E, B, ids, b2e, dt, (None, "PRE_SCALE", "NO_SCALE")[i % 3],
                     aff_dt=("fp32", "bf16", "fp16")[i % 3])
        self.bmm("all_padding_blocks", 4, 16, 8, 2, 3, [-1, 4, -1, 4, 4, -1], [0, 1], "fp32")
        self.bmm("ids_and_experts_out_of_range", 5, 16, 8, 2, 2, [0, 99, -7, 2 ** 31 - 1, 3, 1], [0, 5, -3], "fp32")
        self.bmm("same_token_twice_in_a_block", 6, 32, 16, 2, 4, [1, 1, 3, 1, 2, 2, 2, 5], [1, 1], "fp32")


# ------------------------------------------------------ weight gradients
class Wgrad(LeafCase):
    """#5, #7, #8: weight gradients as convolutions (docs/parts/wgrad.md's
    layouts; issue 11). Cases are made from a forward convolution: x
    [B, Cin, H, W], forward stride s, dilation d, padding p, filter K, output
    gradient g [B, Cout, OH, OW]; the weight gradient is the convolution of
    x (fb01: the forward batch is the contraction) with g (io01) with
    stride d, rhs_dilation s, padding [p_lo, the rest of the span]. Each is
    checked against the conv model and, for some, by central differences of
    L(W) = <forward conv(x, W), g>."""
    REQUIRES = ("Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh", "conv2d_column_packing", "conv2d_column_packing_io10")
    KEYS = {"#5": ("Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh", "fb01_io01->01bf"),
            "#7": ("conv2d_column_packing", "fb01_io01->01bf"),
            "#8": ("conv2d_column_packing_io10", "fb01_io10->01bf")}

    def wg(self, tag, name, B, Cin, Cout, H, W, KH, KW, s=(1, 1), d=(1, 1), p=(0, 0), dt="fp32", fd=False,
           x=None, g=None, pass_bgc=True):
        key, labels = self.KEYS[tag]
        depthwise = tag != "#5"
        if depthwise:
            Cout = Cin
        OH = (H + 2 * p[0] - ((KH - 1) * d[0] + 1)) // s[0] + 1
        OW = (W + 2 * p[1] - ((KW - 1) * d[1] + 1)) // s[1] + 1
        assert OH >= 1 and OW >= 1, (name, OH, OW)
        # the high padding that makes the gradient's window count K
        hi = [(k - 1) * dd + (o - 1) * ss + 1 - n - pl for k, dd, o, ss, n, pl in
              zip((KH, KW), d, (OH, OW), s, (H, W), p)]
        pads = [[p[0], hi[0]], [p[1], hi[1]]]
        rng = self.rng
        if x is None:
            x = nxnp.random_values(rng, (B, Cin, H, W), dt)
        if g is None:
            g = nxnp.random_values(rng, (B, Cout, OH, OW), dt)
        filt = np.swapaxes(g, 2, 3) if tag == "#8" else g
        bgc = Cin if depthwise else 1
        kw = dict(stride=d, padding=pads, rhs_dilation=s, batch_group_count=bgc)
        ref, absum = M.conv_and_bound(x, filt, labels, **kw)
        assert ref.shape[:2] == (KH, KW), (ref.shape, KH, KW)
        k = B * OH * OW
        tol = check.sum_tolerance(ref, absum, k, dt)
        want_fd = None
        if fd:
            # L(W) = <conv(x, W), g> with W [Cout, Cin/G, KH, KW] (forward
            # labels bf01_oi01, feature groups Cin when depthwise): linear in
            # W, so the central difference with h = 1 is exact up to the
            # float64 rounding of L
            G = Cin if depthwise else 1
            wshape = (Cout, Cin // G, KH, KW)
            grad = np.zeros(wshape)
            w0 = np.zeros(wshape)
            for idx in np.ndindex(*wshape):
                e = np.zeros(wshape)
                e[idx] = 1.0
                lp = np.sum(M.conv_general(x, w0 + e, "bf01_oi01->bf01", stride=s, padding=[[p[0]] * 2, [p[1]] * 2],
                                           rhs_dilation=d, feature_group_count=G) * g)
                lm = np.sum(M.conv_general(x, w0 - e, "bf01_oi01->bf01", stride=s, padding=[[p[0]] * 2, [p[1]] * 2],
                                           rhs_dilation=d, feature_group_count=G) * g)
                grad[idx] = (lp - lm) / 2
            # into the leaf's out layout 01bf: (KH, KW, Cin, Cout) or (KH, KW, 1, C)
            want_fd = np.transpose(grad, (2, 3, 1, 0))
        attrs = {}
        if tuple(d) != (1, 1):
            attrs["stride"] = list(d)
        if tuple(s) != (1, 1):
            attrs["rhs_dilation"] = list(s)
        if pads != [[0, 0], [0, 0]]:
            attrs["padding"] = pads
        if depthwise and pass_bgc:
            attrs["batch_group_count"] = Cin

        def compare(outs):
            got = outs[0]
            if got is None or nxnp.dtype_name(got) != dt:
                return "result %s, expected dtype %s" % (None if got is None else nxnp.dtype_name(got), dt)
            msg = check.within(nxnp.decode(got), ref, tol, "dW (K=%d)" % k)
            if msg is None and want_fd is not None:
                msg = check.within(nxnp.decode(got), want_fd, tol + 1e-12 * absum, "dW by central differences")
            return msg
        self.run_case("%s %s %s" % (tag, name, dt), key, [nxnp.encode(x, dt), nxnp.encode(filt, dt)], attrs, compare)

    def cases(self, tag):
        rng = self.rng
        fixed = [
            # name, B, Cin, Cout, H, W, KH, KW, s, d, p
            ("3x3_s1_p1", 2, 3, 5, 6, 7, 3, 3, (1, 1), (1, 1), (1, 1)),
            ("1x1_N1", 1, 1, 4, 5, 4, 1, 1, (1, 1), (1, 1), (0, 0)),
            ("stride2_crop", 3, 2, 3, 9, 8, 3, 2, (2, 2), (1, 1), (1, 0)),
            ("stride3_dilated", 2, 3, 2, 11, 10, 2, 3, (3, 2), (2, 1), (2, 1)),
            ("kernel_larger_than_gradient", 1, 2, 3, 4, 5, 4, 5, (1, 1), (1, 1), (2, 2)),
            ("C130", 2, 130, 3, 4, 4, 2, 2, (1, 1), (1, 1), (0, 1)),
            ("batch129", 129, 2, 3, 3, 3, 2, 2, (1, 1), (1, 1), (0, 0)),
        ]
        for i, (name, B, Cin, Cout, H, W, KH, KW, s, d, p) in enumerate(fixed):
            dts = PE_DTYPES if i == 0 else [PE_DTYPES[i % 5]]
            for dt in dts:
                self.wg(tag, name, B, Cin, Cout, H, W, KH, KW, s, d, p, dt, pass_bgc=i % 2 == 0)
        self.wg(tag, "finite_differences", 2, 3, 2, 7, 6, 3, 2, (2, 1), (1, 2), (1, 1), "fp32", fd=True)
        for i in range(2 + SWEEP):
            while True:
                B, Cin, Cout = (int(rng.integers(1, 6)), int(rng.choice([1, 2, 3, 17, 130])),
                                int(rng.choice([1, 3, 8, 129])))
                H, W, KH, KW = (int(rng.integers(1, 14)), int(rng.integers(1, 14)), int(rng.integers(1, 5)),
                                int(rng.integers(1, 5)))
                s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
                d = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
                p = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
                if (H + 2 * p[0] >= (KH - 1) * d[0] + 1) and (W + 2 * p[1] >= (KW - 1) * d[1] + 1):
                    break
            self.wg(tag, "random%d" % i, B, Cin, Cout, H, W, KH, KW, s, d, p, PE_DTYPES[i % 5])

    def test_refusals(self):
        z = (lambda *shape: zeros("fp32", *shape))
        K5, K7, K8 = (self.KEYS[t][0] for t in ("#5", "#7", "#8"))
        for name, key, inputs, attrs, text in [
                ("lhs_dilation on #5", K5, [z(2, 3, 6, 6), z(2, 4, 4, 4)], {"lhs_dilation": [2, 1]}, "lhs_dilation"),
                ("batch_group_count 2 on #7", K7, [z(2, 4, 6, 6), z(2, 4, 4, 4)], {"batch_group_count": 2},
                 "batch_group_count"),
                ("channels differ on #7", K7, [z(2, 4, 6, 6), z(2, 3, 4, 4)], {}, "operand 1"),
                ("contraction differs on #5", K5, [z(2, 3, 6, 6), z(3, 4, 4, 4)], {}, "operand 1"),
                ("int8 on #8", K8, [zeros("int8", 2, 4, 6, 6), zeros("int8", 2, 4, 4, 4)], {}, "int8"),
                ("unknown attribute on #5", K5, [z(2, 3, 6, 6), z(2, 4, 4, 4)], {"strides": [1, 1]}, "strides"),
                ("window larger than the image on #5", K5, [z(2, 3, 3, 3), z(2, 4, 4, 4)], {}, "window")]:
            self.refuse(name, key, inputs, attrs, (3,), text)

    def test_dw_pcinh(self):
        self.cases("#5")
        if SWEEP:
            # the seed's example at full size: ResNet-50 conv1's weight gradient
            self.wg("#5", "resnet50_conv1", 16, 3, 64, 224, 224, 7, 7, (2, 2), (1, 1), (3, 3), "bf16")

    def test_column_packing(self):
        self.cases("#7")

    def test_column_packing_io10(self):
        self.cases("#8")


# ------------------------------------------------------------------ top-k
class TopK(LeafCase):
    """The `topk` composite (issue 14) and each method against ONNX TopK:
    the k largest (or smallest) along an axis, sorted, ties to the lower
    index; NaN as the largest value (docs/parts/topk.md's stated order)."""
    KEY = "topk"
    REQUIRES = ("topk",)
    METHODS = ("SCANNING", "CASCADED", "ROTATIONAL", "AUTO")

    def topk(self, name, x, dt, k, largest=True, axis=-1, method=None, expect=None):
        vals, idx = M.topk(np.moveaxis(x, axis, -1), k, largest)
        vals, idx = np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)
        attrs = {"k": k}
        if not largest:
            attrs["largest"] = False
        if axis != -1:
            attrs["axis"] = axis
        if method:
            attrs["method"] = method
        xa = nxnp.encode(x, dt)

        def compare(outs):
            v, i = outs
            if v is None or i is None:
                return "missing output"
            if nxnp.dtype_name(i) != "int32":
                return "indices dtype %s, expected int32" % nxnp.dtype_name(i)
            msg = check.within(nxnp.decode(i), idx, 0, "indices")
            if msg is None:     # the selected elements, bit for bit (NaN: any NaN)
                want = np.take_along_axis(nxnp.bits_of(xa), idx.astype(np.int64), axis)
                got = nxnp.bits_of(v)
                nan = np.isnan(vals)
                bad = (got != want) & ~(nan & np.isnan(nxnp.decode(v)))
                if got.shape != want.shape or bad.any():
                    msg = check.bit_exact(v, nxnp.from_bits(want, dt), "values")
            if msg is None and expect is not None:
                msg = check.within(nxnp.decode(v), expect[0], 0, "published values") or \
                    check.within(nxnp.decode(i), expect[1], 0, "published indices")
            return msg
        self.run_case("%s %s k=%d%s%s %s" % (name, dt, k, "" if largest else " smallest",
                                            "" if axis == -1 else " axis=%d" % axis, method or "default"),
                      self.KEY, [xa], attrs, compare, nouts=2)

    def test_onnx_examples(self):
        # onnx/onnx onnx/backend/test/case/node/topk.py
        x = np.arange(12, dtype=float).reshape(3, 4)
        for m in self.METHODS:
            self.topk("onnx_top_k", x, "fp32", 3, method=m,
                      expect=([[3, 2, 1], [7, 6, 5], [11, 10, 9]], [[3, 2, 1]] * 3))
        self.topk("onnx_top_k_negative_axis", x, "fp32", 3, axis=-1,
                  expect=([[3, 2, 1], [7, 6, 5], [11, 10, 9]], [[3, 2, 1]] * 3))
        xs = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [11, 10, 9, 8]], float)
        for m in self.METHODS:
            self.topk("onnx_top_k_smallest", xs, "fp32", 3, largest=False, method=m,
                      expect=([[0, 1, 2], [4, 5, 6], [8, 9, 10]], [[0, 1, 2], [0, 1, 2], [3, 2, 1]]))

    def test_methods_dtypes_k(self):
        rng = self.rng
        i = 0
        for m in self.METHODS:
            for n, ks in ((8, (1, 7, 8)), (9, (8, 9)), (300, (1, 9, 64, 300)), (4095, (50,))):
                for k in ks:
                    dt = nxnp.FLOATS[i % 5]
                    i += 1
                    rows = int(rng.choice([1, 3, 130]))
                    x = nxnp.random_values(rng, (rows, n), dt)
                    self.topk("random %dx%d" % (rows, n), x, dt, k, largest=bool(i % 3), method=m)

    def test_ties_and_specials(self):
        rng = self.rng
        for m in self.METHODS:
            for dt in ("fp32", "bf16", "fp8_e4m3"):
                x = rng.integers(-2, 3, size=(5, 40)).astype(float)       # many ties
                x[0] = 1.0                                                  # an all-equal row
                x[1, [3, 17, 30]] = np.inf
                x[2, [5, 6]] = -np.inf if dt != "fp8_e4m3" else -448
                x[3, [0, 9, 39]] = np.nan
                x[4, [1, 2]] = [-0.0, 0.0]
                if dt == "fp8_e4m3":
                    x = np.where(np.isinf(x), 448.0, x)
                for k, largest in ((10, True), (12, False), (40, True)):
                    self.topk("ties_specials", x, dt, k, largest, method=m)

    def test_fp32_extremes(self):
        """-inf and -FLT_MAX (and +inf, FLT_MAX) are distinct fp32 values."""
        big = float(np.finfo(np.float32).max)
        x = np.array([[-np.inf, -big, 1.0, -np.inf, -big, 2.0, 0.5, 0.25]])
        self.topk("fp32_extremes", x, "fp32", 6)
        self.topk("fp32_extremes", -x, "fp32", 6, largest=False)

    def test_auto_picks_the_fastest(self):
        """AUTO's choice is the method with the lowest simulated time
        (issue 14): AUTO's run within 5% of the fastest forced method."""
        rng = self.rng
        for rows, n, k, dt in ((256, 128, 8, "bf16"), (4, 16384, 8, "bf16"), (1, 65536, 200, "bf16"),
                               (4, 16384, 8, "fp32")):
            xa = nxnp.encode(nxnp.random_values(rng, (rows, n), dt), dt)
            times = {}
            for m in self.METHODS:
                r = self.runner.run(self.KEY, [xa], {"k": k, "method": m}, nouts=2, mode="model")
                t = [float(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("simulated:")]
                self.assertEqual(r.rc, 0, r.describe())
                times[m] = t[0]
                why = [ln.strip() for ln in r.stdout.splitlines() if "dispatch" in ln]
                r.cleanup()
            name = "auto %dx%d k=%d %s" % (rows, n, k, dt)
            best = min(times[m] for m in self.METHODS[:3])
            with self.subTest(case=name):
                ok = times["AUTO"] <= 1.05 * best
                msg = "%s: AUTO %.0f ns (%s), the fastest method %.0f ns (%s)" % (
                    name, times["AUTO"], why[0] if why else "?", best,
                    ", ".join("%s %.0f" % (m, times[m]) for m in self.METHODS[:3]))
                if name in KNOWN:
                    if ok:
                        self.fail("%s: pinned (%s) but now agrees: remove it from KNOWN" % (name, KNOWN[name]))
                    print("known disagreement %s" % msg, file=sys.stderr)
                else:
                    self.assertTrue(ok, msg)

    def test_axes_ints_rows(self):
        rng = self.rng
        x = nxnp.random_values(rng, (4, 37, 3), "fp32")
        self.topk("axis", x, "fp32", 5, axis=1)
        self.topk("axis", x, "bf16", 2, axis=0, largest=False)
        for dt in ("int8", "uint8", "int16", "uint16"):
            xi = nxnp.random_values(rng, (7, 50), dt)
            self.topk("ints", xi, dt, 9)
        for i in range(SWEEP):
            n = int(rng.choice([8, 9, 4095, 16384, 65536, 151936]))
            k = int(min(n, rng.choice([1, 7, 8, 9, 64, 2048])))
            rows = int(rng.choice([1, 2, 300]))
            if rows * n > 2e6:
                rows = 1
            dt = nxnp.FLOATS[i % 5]
            self.topk("sweep %dx%d" % (rows, n), nxnp.random_values(rng, (rows, n), dt), dt, k,
                      largest=bool(i % 2), method=self.METHODS[i % 4])


# ------------------------------------------------------- the command
def zeros(dt, *shape):
    return nxnp.encode(np.zeros(shape), dt)


BMM_OK = [zeros("fp32", 5, 16), zeros("fp32", 10, 1), zeros("fp32", 2, 16, 2, 8), zeros("fp32", 2, 8, 16),
          zeros("int32", 4), zeros("int32", 2, 1)]
K3 = CONV_LEAVES["#3"].key
# A hostile-but-reasonable user: (name, key, inputs, attrs, exit codes
# allowed, text the one-line error must contain).
BAD_INPUTS = [
    ("conv filter in-features", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 4, 3, 4)], {}, (3,), "operand 1"),
    ("conv one operand", K3, [zeros("fp32", 5, 3, 6, 2)], {}, (3,), "1"),
    ("conv int8", K3, [zeros("int8", 5, 3, 6, 2), zeros("int8", 3, 3, 3, 4)], {}, (3,), "int8"),
    ("conv mixed dtypes", K3, [zeros("fp32", 5, 3, 6, 2), zeros("bf16", 3, 3, 3, 4)], {}, (3,), "operand 1"),
    ("conv unknown attribute", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"strides": [2, 2]},
     (3,), "strides"),
    ("conv stride 0", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"stride": [0, 1]}, (3,),
     "stride"),
    ("conv stride not a list", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"stride": "two"},
     (3,), "stride"),
    ("conv padding one pair", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"padding": [[1, 1]]},
     (3,), "padding"),
    ("conv huge padding", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"padding": [[10 ** 9, 10 ** 9], [0, 0]]}, (3,), "out"),
    ("conv crop everything", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"padding": [[-10 ** 9, 0], [0, 0]]}, (3,), "padding"),
    ("conv window larger than input", K3, [zeros("fp32", 2, 3, 2, 2), zeros("fp32", 3, 3, 3, 4)], {}, (3,),
     "window"),
    ("conv out_shape wrong", CONV_LEAVES["#6"].key, [zeros("fp32", 1, 4, 1, 10), zeros("fp32", 4, 1, 1, 3)],
     {"out_shape": [1, 4, 1, 9]}, (3,), "out_shape"),
    ("conv lhs_dilation on #3", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"lhs_dilation": [2, 1]}, (3,), "lhs_dilation"),
    ("conv groups not dividing", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"feature_group_count": 2}, (3,), "feature_group_count"),
    ("depthwise other group count", CONV_LEAVES["#9"].key, [zeros("fp32", 1, 4, 5, 5), zeros("fp32", 4, 1, 3, 3)],
     {"feature_group_count": 2}, (3,), "feature_group_count"),
    ("depthwise batch 2 on #9", CONV_LEAVES["#9"].key, [zeros("fp32", 2, 4, 5, 5), zeros("fp32", 4, 1, 3, 3)],
     {}, (3,), "operand 0"),
    ("attribute JSON malformed", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"stride": nxnp.RawAttr("[2,")}, (2,), "stride"),
    ("sas window missing", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 2, 2)], {}, (3,),
     "window_dimensions"),
    ("sas window rank 3", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 2, 2]}, (3,), "window_dimensions"),
    ("sas source shape", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 3, 2)],
     {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2]}, (3,), "operand 1"),
    ("sas unknown attribute", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2], "windw_strides": [1, 1, 1, 1]}, (3,),
     "windw_strides"),
    ("sas integer dtype", "SelectAndScatter", [zeros("int32", 1, 1, 4, 4), zeros("int32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2]}, (3,), "int32"),
    ("sas window over C", "SelectAndScatter", [zeros("fp32", 1, 2, 4, 4), zeros("fp32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 2, 2, 2], "window_strides": [1, 1, 2, 2]}, (3,), "window_dimensions"),
    ("sas rank 2", "SelectAndScatter", [zeros("fp32", 4, 2), zeros("fp32", 2, 2)],
     {"window_dimensions": [3, 1], "window_strides": [2, 1]}, (3,), "operand 0"),
    ("resize no size", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {}, (3,), "out_shape"),
    ("resize huge output", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"out_shape": [1, 100000, 100000, 2]},
     (3,), "out"),
    ("resize huge scale", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"scales": [1, 1e30, 2, 1]}, (3,),
     "scales"),
    ("resize changes C", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"out_shape": [1, 8, 8, 3]}, (3,),
     "out_shape"),
    ("resize bad nearest_mode", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)],
     {"out_shape": [1, 8, 8, 2], "nearest_mode": "up"}, (3,), "nearest_mode"),
    ("resize unknown attribute", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)],
     {"out_shape": [1, 8, 8, 2], "mode": "linear"}, (3,), "mode"),
    ("resize scale 0", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"scales": [1, 0, 2, 1]}, (3,), "scales"),
    ("resize scales and size disagree", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)],
     {"scales": [1, 2, 2, 1], "out_shape": [1, 9, 8, 2]}, (3,), "out_shape"),
    ("resize rank 3", "ResizeNearest", [zeros("fp32", 4, 4, 2)], {"out_shape": [8, 8, 2]}, (3,), "operand 0"),
    ("transpose not a swap", "tiled_pf_transpose", [zeros("fp32", 3, 4, 5)], {"permutation": [1, 0, 2]}, (3,),
     "permutation"),
    ("transpose repeated dim", "tiled_pf_transpose", [zeros("fp32", 3, 4)], {"permutation": [1, 1]}, (3,),
     "permutation"),
    ("transpose unknown attribute", "tiled_dve_transpose_10", [zeros("fp32", 3, 4)], {"perm": [1, 0]}, (3,),
     "perm"),
    ("transpose two operands", "tiled_dve_transpose_10", [zeros("fp32", 3, 4), zeros("fp32", 3, 4)], {}, (3,),
     "2"),
    ("bmm block_size missing", "blockwise_mm", BMM_OK, {}, (3,), "block_size"),
    ("bmm unknown attribute", "blockwise_mm", BMM_OK, {"block_size": 2, "scaling_mode": "POST_SCALE"}, (3,),
     "scaling_mode"),
    ("bmm bad scaling mode", "blockwise_mm", BMM_OK, {"block_size": 2, "expert_affinities_scaling_mode": "post"},
     (3,), "expert_affinities_scaling_mode"),
    ("bmm block_size 0", "blockwise_mm", BMM_OK, {"block_size": 0}, (3,), "block_size"),
    ("bmm positions not whole blocks", "blockwise_mm", BMM_OK, {"block_size": 3}, (3,), "block_size"),
    ("bmm ids not int32", "blockwise_mm", BMM_OK[:4] + [zeros("fp32", 4), BMM_OK[5]], {"block_size": 2}, (3,),
     "operand 4"),
    ("bmm five operands", "blockwise_mm", BMM_OK[:5], {"block_size": 2}, (3,), "6"),
    ("bmm fp16", "blockwise_mm", [zeros("fp16", 5, 16), BMM_OK[1], zeros("fp16", 2, 16, 2, 8),
                                  zeros("fp16", 2, 8, 16)] + BMM_OK[4:], {"block_size": 2}, (3,), "fp16"),
    ("bmm weights of the wrong H", "blockwise_mm", BMM_OK[:2] + [zeros("fp32", 2, 15, 2, 8)] + BMM_OK[3:],
     {"block_size": 2}, (3,), "operand 2"),
]


def npy_header(d):
    h = repr(d).encode()
    h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h


BAD_NPY = [
    ("npy shape overflows 64 bits", npy_header({"descr": "<f4", "fortran_order": False, "shape": (2 ** 62, 4)}),
     "shape"),
    ("npy truncated", npy_header({"descr": "<f4", "fortran_order": False, "shape": (1000,)}) + bytes(64),
     "truncated"),
    ("npy empty dim", npy_header({"descr": "<f4", "fortran_order": False, "shape": (0, 3)}), "dim"),
    ("npy float64", npy_header({"descr": "<f8", "fortran_order": False, "shape": (2, 2)}) + bytes(32), "<f8"),
    ("npy big-endian", npy_header({"descr": ">f4", "fortran_order": False, "shape": (2, 2)}) + bytes(16), ">f4"),
    ("npy not npy", b"hello world", "npy"),
]


class Cli(LeafCase):
    """`nxsim run` as a hostile-but-reasonable user drives it: every bad
    input gets a one-line error naming the input and the problem, the
    documented exit code, no output file; and every key's default op passes
    its own --check."""

    def test_bad_inputs(self):
        for name, key, inputs, attrs, codes, text in BAD_INPUTS:
            self.refuse(name, key, inputs, attrs, codes, text)

    def test_bad_npy_files(self):
        for name, raw, text in BAD_NPY:
            self.refuse(name, "tiled_pf_transpose", [zeros("fp32", 2, 2)], {}, (3,), text, raw_inputs=raw)

    def test_output_path(self):
        x = zeros("fp32", 3, 4)
        for name, where, text in [("output in a missing directory", "nodir/out.npy", "nodir"),
                                  ("output is a directory", "", "")]:
            r = self.runner.run("tiled_pf_transpose", [x], mode="functional")
            argv = [a for a in r.argv if not a.endswith("out0.npy") and a != "-o"] + ["-o", os.path.join(r.dir, where)]
            proc = nxnp.subprocess.run(argv, capture_output=True, text=True, timeout=120)
            lines = proc.stderr.strip().splitlines()
            with self.subTest(case=name):
                self.assertEqual(proc.returncode, 1, " ".join(argv))
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertTrue(lines[0].startswith("nxsim: ") and text in lines[0], lines[0])
                self.assertFalse(os.path.exists(os.path.join(r.dir, "nodir")))
            r.cleanup()

    def test_default_ops_check(self):
        """`nxsim run KEY --check` on the built-in default op of every
        registered key (issues 10-14, "How it will be checked")."""
        proc = nxnp.subprocess.run([NXSIM, "list"], capture_output=True, text=True, timeout=60)
        keys = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.strip()[:1].isdigit()]
        self.assertGreaterEqual(len(keys), 10, proc.stdout)
        for key in keys:
            p = nxnp.subprocess.run([NXSIM, "run", key, "--check"], capture_output=True, text=True, timeout=600)
            with self.subTest(key=key):
                self.assertEqual(p.returncode, 0, "nxsim run %s --check: %s" % (key, p.stderr.strip()))
                self.assertIn(": ok", p.stdout)


def main():
    global NXSIM, WORKDIR
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--nxsim", required=True)
    ap.add_argument("--workdir", default=None)
    args, rest = ap.parse_known_args()
    NXSIM = os.path.abspath(args.nxsim)
    WORKDIR = os.path.abspath(args.workdir or os.path.join(os.path.dirname(NXSIM), "numpy-check"))
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
