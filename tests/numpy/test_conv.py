"""The convolution leaves: #3 #4 (dense), #6 #9 #11 (depthwise), #5 #7 #8
(weight gradients) against the StableHLO/XLA convolution model."""
import numpy as np

import check
from harness import LeafCase, PE_DTYPES, SWEEP, zeros
import models as M
import nxnp

# Disagreements found and reported, pinned so the suite stays green while
# they are open: case name -> what differs (docs/parts/numpy-check.md).
KNOWN = {
    # The PE's 0 x Inf = NaN: leaves that multiply other channels' (or
    # groups') values by the zeros of a block-diagonal or identity
    # stationary spread an Inf or NaN of one channel to the others.
    "#3 inf_nan_in_channel_0 fp32": "grouped conv: the Inf/NaN of group 0 makes group 1's outputs NaN",
    "#4 inf_nan_in_channel_0 fp32": "grouped conv: the Inf/NaN of group 0 makes group 1's outputs NaN",
    "#9 inf_nan_in_channel_0 fp32": "depthwise: the Inf/NaN of channel 0 makes channel 1's outputs NaN",
    "#11 inf_nan_in_channel_0 fp32": "depthwise: the Inf/NaN of channel 0 makes channel 1's outputs NaN",
    # The weight gradients: one +Inf in the image (x [2, 2, 6, 6], no
    # padding, no forward stride or dilation, 3x3 taps) makes every filter
    # tap NaN, of every channel; numpy: only channel 0's taps, +-Inf.
    # docs/parts/wgrad.md says #7/#8's channel select "never multiplies, so
    # a non-finite value of another channel cannot leak in".
    "#5 inf_nan fp32": "an Inf of x[0, 0, 2, 3]: all 54 taps NaN; numpy: ci 0 +-Inf, ci 1 finite but co 1 (the NaN of g)",
    "#7 inf_nan fp32": "an Inf of x[0, 0, 2, 3]: all 18 taps NaN; numpy: channel 0 +-Inf, channel 1 finite",
    "#8 inf_nan fp32": "an Inf of x[0, 0, 2, 3]: all 18 taps NaN; numpy: channel 0 +-Inf, channel 1 finite",
}


# ------------------------------------------------------------------ conv
def role_shape(label, sizes):
    return [sizes[c] for c in label]


class ConvLeaf:
    """A conv leaf: its key, labels and what it takes (docs/parts/conv.md,
    depthwise.md)."""

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
        """The published examples (integers: exact in fp32, and in bf16 and
        fp16 up to 256 and 2048), the dtype rotating over the three."""
        for i, (name, x, w, attrs, expect) in enumerate(PUBLIC_CONV):
            if "lhs_dilation" in attrs and not leaf.lhs_dilation:
                continue
            if leaf.kind == "dw1d":
                continue
            c = ConvCase(name, 1, 1, x.shape[2], x.shape[3], 1, 3, 3, 1, x=x, w=w, expect=expect, **attrs)
            self.conv_run(tag, leaf, c, ("fp32", "bf16", "fp16")[i % 3])

    def run_leaf(self, tag, cases, first_in_every_dtype=True):
        """A leaf's whole check: the published examples, its fixed cases
        (dtypes rotating; the first in every dtype), random cases, Inf/NaN
        and exact integer sums."""
        leaf = CONV_LEAVES[tag]
        self.public_cases(tag, leaf)
        for i, c in enumerate(cases):
            for dt in (PE_DTYPES if i == 0 and first_in_every_dtype else [PE_DTYPES[i % 5]]):
                self.conv_run(tag, leaf, c, dt)
        self.random_cases(tag, leaf, 3 + SWEEP)
        self.nonfinite(tag, leaf)

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

    EDGE_CASES = [
        ConvCase("1x1_kernel_C129", 3, 129, 4, 5, 7, 1, 1),
        ConvCase("kernel_larger_than_image_padded", 1, 3, 2, 3, 4, 4, 5, padding=((2, 1), (3, 2))),
        ConvCase("stride_gt_kernel", 2, 5, 9, 8, 3, 2, 2, stride=(3, 4)),
        ConvCase("C1_N513", 513, 1, 3, 2, 2, 2, 2),
        ConvCase("C300_O130_crop", 1, 300, 4, 4, 130, 3, 3, padding=((-1, 1), (1, -1))),
        ConvCase("grouped_G3_dilated", 2, 6, 7, 9, 9, 2, 3, G=3, rhs_dilation=(2, 3), stride=(1, 2)),
        ConvCase("depthwise_multiplier2", 3, 8, 6, 5, 16, 3, 3, G=8, padding=((1, 1), (1, 1))),
    ]

    def test_pbp_0f1b(self):
        self.run_leaf("#3", self.EDGE_CASES, first_in_every_dtype=False)

    def test_pbp_fb01(self):
        self.run_leaf("#4", self.EDGE_CASES, first_in_every_dtype=False)


class ConvDepthwise(ConvBase):
    """#6, #9, #11: depthwise forward convolutions."""

    def test_conv1d_depthwise(self):
        cases = [
            ConvCase("causal_C160_N2", 2, 160, 1, 300, 160, 1, 4, G=160, padding=((0, 0), (3, 0))),
            ConvCase("stride3_dilated_crop", 3, 33, 1, 50, 33, 1, 5, G=33, stride=(1, 3), rhs_dilation=(1, 2),
                     padding=((0, 0), (-1, 2))),
            ConvCase("kernel_longer_than_input", 1, 5, 1, 3, 5, 1, 7, G=5, padding=((0, 0), (2, 3))),
            ConvCase("C1_W1", 1, 1, 1, 1, 1, 1, 1, G=1),
        ]
        self.run_leaf("#6", cases)

    def test_column_packing_1(self):
        cases = [
            ConvCase("C48_28x28_pad1", 1, 48, 28, 28, 48, 3, 3, G=48, padding=((1, 1), (1, 1))),
            ConvCase("C129_stride2_dilated", 1, 129, 11, 10, 129, 3, 2, G=129, stride=(2, 2),
                     rhs_dilation=(2, 1), padding=((1, 0), (0, 2))),
            ConvCase("kernel_larger_than_image", 1, 3, 2, 2, 3, 4, 3, G=3, padding=((2, 1), (1, 1))),
            ConvCase("1x1", 1, 70, 1, 1, 70, 1, 1, G=70),
        ]
        self.run_leaf("#9", cases)

    def test_depthwise_f01b(self):
        cases = [
            ConvCase("input_gradient_3x3_s2", 2, 40, 14, 14, 40, 3, 3, G=40, lhs_dilation=(2, 2),
                     padding=((1, 2), (1, 2))),
            ConvCase("N513_C3", 513, 3, 3, 2, 3, 2, 2, G=3, padding=((1, 0), (0, 1))),
            ConvCase("C129_stride_dilation", 3, 129, 9, 8, 129, 3, 3, G=129, stride=(2, 3),
                     rhs_dilation=(1, 2), padding=((0, -1), (2, 1))),
            ConvCase("lhs3_crop", 1, 5, 4, 5, 5, 2, 3, G=5, lhs_dilation=(3, 2), padding=((-1, 0), (1, -2))),
        ]
        self.run_leaf("#11", cases)


# ------------------------------------------------------ weight gradients
def depthwise_tag(tag):
    return tag != "#5"


class Wgrad(LeafCase):
    """#5, #7, #8: weight gradients as convolutions (docs/parts/wgrad.md's
    layouts). Cases are made from a forward convolution: x
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
        depthwise = depthwise_tag(tag)
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

    def wg_conv(self, tag, name, CI, N, H, W, FH, FW, stride, padding, rhs_dilation, dt):
        """The leaf as the convolution itself (any padding, negative low
        padding included), not built from a forward convolution."""
        key, labels = self.KEYS[tag]
        depthwise = depthwise_tag(tag)
        CO = N if depthwise else 5
        x = nxnp.random_values(self.rng, (CI, N, H, W), dt)
        filt = nxnp.random_values(self.rng, (CI, CO, FW, FH) if tag == "#8" else (CI, CO, FH, FW), dt)
        kw = dict(stride=stride, padding=padding, rhs_dilation=rhs_dilation, batch_group_count=N if depthwise else 1)
        ref, absum = M.conv_and_bound(x, filt, labels, **kw)
        tol = check.sum_tolerance(ref, absum, CI * FH * FW, dt)
        attrs = {"stride": list(stride), "padding": [list(p) for p in padding], "rhs_dilation": list(rhs_dilation)}
        self.run_case("%s %s %s" % (tag, name, dt), key, [nxnp.encode(x, dt), nxnp.encode(filt, dt)], attrs,
                      lambda outs: check.within(nxnp.decode(outs[0]), ref, tol, "out") if outs[0] is not None
                      else "no output file")

    def cases(self, tag):
        rng = self.rng
        self.wg_conv(tag, "negative_low_padding", 3, 4, 12, 11, 4, 3, (1, 2), ((-2, 1), (-1, -1)), (2, 2), "fp32")
        self.wg_conv(tag, "forward_rows_unused", 2, 3, 10, 11, 4, 3, (1, 1), ((0, -1), (0, -2)), (2, 3), "bf16")
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
        # Non-finite values (no padding, no forward stride: nothing is
        # multiplied by a padding zero or a dilation hole): an Inf of image
        # channel 0 makes only channel 0's filter taps non-finite, a NaN of
        # gradient channel 1 (#5) only output channel 1's.
        x = nxnp.round_to(rng.uniform(0.5, 1, (2, 2, 6, 6)), "fp32")
        x[0, 0, 2, 3] = np.inf
        g = nxnp.round_to(rng.uniform(-1, 1, (2, 2 if depthwise_tag(tag) else 3, 4, 4)), "fp32")
        if not depthwise_tag(tag):
            g[1, 1, 0, 0] = np.nan
        self.wg(tag, "inf_nan", 2, 2, g.shape[1], 6, 6, 3, 3, dt="fp32", x=x, g=g)
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
