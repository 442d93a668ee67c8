"""SelectAndScatter, ResizeNearest and the transposes: bit-exact against
the XLA, ONNX and numpy definitions."""
import numpy as np

import check
from harness import LeafCase, SWEEP
import models as M
import nxnp

# Disagreements found and reported, pinned so the suite stays green while
# they are open: case name -> what differs (docs/parts/numpy-check.md).
KNOWN = {
    # docs/parts/data-movement.md: "Values must be NaN-free (the leaf
    # selects by the window maximum)" - but NaN is not refused.
    "nan fp32": "SelectAndScatter with NaN operands: silently not XLA's selection (no refusal either)",
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

            def f(v, s):
                m = pool_windows(v, window, strides, pads, -np.inf).max(axis=tuple(range(4, 8)))
                return np.sum(np.where(np.isfinite(m), m, 0.0) * s)
            h = 2.0 ** -10
            grad = np.empty(n)
            absgrad = np.empty(n)       # the same selection of |src|: the sum of |terms|
            for i in range(n):
                e = np.zeros(n)
                e[i] = h
                for g, s in ((grad, src), (absgrad, np.abs(src))):
                    g[i] = (f(x + e.reshape(shape), s) - f(x - e.reshape(shape), s)) / (2 * h)
            grad = grad.reshape(shape)
            absgrad = absgrad.reshape(shape)
            attrs = {"window_dimensions": window, "window_strides": strides, "padding": pads}
            # m fp32 adds of the sources whose window selects the element (at
            # most the window's size, plus the init value): (m + 1) u32 of the
            # sum of their magnitudes (Higham 3.1); 1e-9 for float64's
            # central differences
            m = int(np.prod(window))
            tol = 1e-9 * (1 + absgrad) + (m + 1) * nxnp.unit_roundoff("fp32") * absgrad

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
