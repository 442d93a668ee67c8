"""numpy models of the registry leaves, written from the public operator
definitions (not from nxsim's code or its kernels/ref references):

- conv_general: StableHLO `convolution` / XLA ConvGeneralDilated
  (openxla/stablehlo docs/spec.md "convolution"): dimension labels, window
  strides, padding per side (negative crops), lhs_dilation (transposed
  convolution), rhs_dilation (atrous), feature_group_count,
  batch_group_count; no kernel flip.
- select_and_scatter: StableHLO `select_and_scatter` / XLA SelectAndScatter
  with select = GE and scatter = add (the max-pool gradient).
- resize_src_index: ONNX Resize (mode nearest) coordinate transformations
  and nearest modes, and the fp32 PyTorch `nearest` rule nxsim documents
  as the default (docs/parts/data-movement.md).
- transpose: np.transpose.
- blockwise_mm: the MoE prefill of docs/parts/kernels.md (blockwise_mm).
- topk: ONNX TopK (ties: the lower index first).

Every model computes in float64 on exact input values and also returns, where
it matters, the sum of |terms| from which the tests derive their tolerance.
"""
from fractions import Fraction
import math

import numpy as np


# ---------------------------------------------------------------- conv
def parse_labels(labels):
    """'bf01_oi01->bf01' -> (lhs, rhs, out) dicts role -> dim index, and the
    number of spatial dims."""
    lr, out = labels.split("->")
    lhs, rhs = lr.split("_")
    nsp = sum(c.isdigit() for c in lhs)
    assert len(lhs) == len(rhs) == len(out) == nsp + 2, labels
    return ({c: i for i, c in enumerate(lhs)}, {c: i for i, c in enumerate(rhs)},
            {c: i for i, c in enumerate(out)}, nsp)


def _per_dim(v, nsp, default):
    if v is None:
        return [default] * nsp
    if isinstance(v, int):
        return [v] * nsp
    return list(v)


def _pad_pairs(padding, nsp):
    if padding is None:
        return [(0, 0)] * nsp
    if isinstance(padding, int):
        return [(padding, padding)] * nsp
    if len(padding) and not isinstance(padding[0], (list, tuple)):
        return [(padding[2 * i], padding[2 * i + 1]) for i in range(nsp)]
    return [tuple(p) for p in padding]


def conv_out_size(n, k, s, lo, hi, ld, rd):
    """XLA's output size of one spatial dim (None: the window does not fit)."""
    span = (n - 1) * ld + 1 + lo + hi - ((k - 1) * rd + 1)
    return span // s + 1 if span >= 0 else None


def conv_general(lhs, rhs, labels, stride=None, padding=None, lhs_dilation=None,
                 rhs_dilation=None, feature_group_count=1, batch_group_count=1):
    """ConvGeneralDilated in float64. Returns the result in the out labels'
    layout."""
    L, R, O, nsp = parse_labels(labels)
    sp = [str(i) for i in range(nsp)]
    x = np.transpose(np.asarray(lhs, np.float64), [L["b"], L["f"]] + [L[d] for d in sp])
    w = np.transpose(np.asarray(rhs, np.float64), [R["o"], R["i"]] + [R[d] for d in sp])
    s = _per_dim(stride, nsp, 1)
    ld = _per_dim(lhs_dilation, nsp, 1)
    rd = _per_dim(rhs_dilation, nsp, 1)
    pads = _pad_pairs(padding, nsp)
    N, C = x.shape[:2]
    Oc, I = w.shape[:2]
    G, B = feature_group_count, batch_group_count
    assert C == I * G and Oc % G == 0 and Oc % B == 0 and N % B == 0, (x.shape, w.shape, G, B)
    # lhs dilation: ld - 1 zeros between elements
    dshape = [N, C] + [(n - 1) * d + 1 for n, d in zip(x.shape[2:], ld)]
    xd = np.zeros(dshape)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in ld)] = x
    # padding: positive pads with zeros, negative crops
    xd = np.pad(xd, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in pads])
    xd = xd[(slice(None), slice(None)) + tuple(
        slice(max(-lo, 0), xd.shape[2 + i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pads))]
    K = w.shape[2:]
    osz = []
    for i in range(nsp):
        span = xd.shape[2 + i] - ((K[i] - 1) * rd[i] + 1)
        assert span >= 0, "window does not fit"
        osz.append(span // s[i] + 1)
    out = np.zeros([N // B, Oc] + osz)
    for tap in np.ndindex(*K):
        win = xd[(slice(None), slice(None)) + tuple(
            slice(t * r, t * r + (o - 1) * st + 1, st) for t, r, o, st in zip(tap, rd, osz, s))]
        wt = w[(slice(None), slice(None)) + tap]                      # [O, I]
        if B > 1:
            xb = win.reshape((B, N // B, C) + win.shape[2:])
            wb = wt.reshape(B, Oc // B, I)
            out += np.einsum("bnc...,boc->nbo...", xb, wb).reshape(out.shape)
        else:
            xg = win.reshape((N, G, I) + win.shape[2:])
            wg = wt.reshape(G, Oc // G, I)
            out += np.einsum("ngi...,goi->ngo...", xg, wg).reshape(out.shape)
    inv = [0] * (nsp + 2)
    inv[O["b"]], inv[O["f"]] = 0, 1
    for i, d in enumerate(sp):
        inv[O[d]] = 2 + i
    return np.transpose(out, inv)                     # out dim j = canonical dim inv[j]


def conv_and_bound(lhs, rhs, labels, **attrs):
    """(result, sum of |terms|) of the convolution, both float64."""
    ref = conv_general(lhs, rhs, labels, **attrs)
    absum = conv_general(np.abs(lhs), np.abs(rhs), labels, **attrs)
    return ref, absum


def contraction_length(rhs_shape, labels, feature_group_count=1):
    """K = in-features x taps of one output element."""
    _, R, _, nsp = parse_labels(labels)
    k = rhs_shape[R["i"]]
    for i in range(nsp):
        k *= rhs_shape[R[str(i)]]
    return k


# ---------------------------------------------------- select_and_scatter
def select_and_scatter(operand, source, window, strides=None, padding=None,
                       init_value=0.0, add=None):
    """XLA SelectAndScatter, select = GE, scatter = add, any rank. `add(a, b)`
    is the scatter's addition in the result dtype (default: float64 add).
    Windows of padding only select nothing."""
    x = np.asarray(operand, np.float64)
    src = np.asarray(source, np.float64)
    rank = x.ndim
    strides = strides or [1] * rank
    pads = _pad_pairs(padding, rank) if padding is not None else [(0, 0)] * rank
    cnt = [(x.shape[d] + lo + hi - window[d]) // strides[d] + 1 for d, (lo, hi) in enumerate(pads)]
    assert list(src.shape) == cnt, (src.shape, cnt)
    add = add or (lambda a, b: a + b)
    out = np.full(x.shape, float(init_value))
    for si in np.ndindex(*src.shape):                 # source in row-major order
        sel = None
        for wi in np.ndindex(*window):                # window in row-major order
            pos = tuple(si[d] * strides[d] + wi[d] - pads[d][0] for d in range(rank))
            if any(p < 0 or p >= x.shape[d] for d, p in enumerate(pos)):
                continue                              # padding: never selectable
            if sel is None or not (x[sel] >= x[pos]):
                sel = pos
        if sel is not None:
            out[sel] = add(out[sel], src[si])
    return out


def max_pool(operand, window, strides, padding):
    """The forward of select_and_scatter: max over each window's real
    elements (-inf where a window is padding only)."""
    x = np.asarray(operand, np.float64)
    rank = x.ndim
    pads = _pad_pairs(padding, rank)
    cnt = [(x.shape[d] + lo + hi - window[d]) // strides[d] + 1 for d, (lo, hi) in enumerate(pads)]
    out = np.full(cnt, -np.inf)
    for si in np.ndindex(*cnt):
        for wi in np.ndindex(*window):
            pos = tuple(si[d] * strides[d] + wi[d] - pads[d][0] for d in range(rank))
            if all(0 <= p < x.shape[d] for d, p in enumerate(pos)):
                out[si] = max(out[si], x[pos])
    return out


# --------------------------------------------------------------- resize
ONNX_CT = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
ONNX_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_src_onnx(out_len, in_len, ct, nearest, scale=None):
    """ONNX Resize (nearest) source index of every output coordinate of one
    axis, in exact rational arithmetic. scale: the given scale (a float32
    value) or None (sizes given: scale = out/in)."""
    sc = Fraction(out_len, in_len) if scale is None else Fraction(float(np.float32(scale)))
    res = []
    for x in range(out_len):
        if ct == "half_pixel":
            t = (Fraction(x) + Fraction(1, 2)) / sc - Fraction(1, 2)
        elif ct == "pytorch_half_pixel":
            # 0 when the resized length is 1; from scales that length is
            # in * scale as a real number (ONNX's reference, op_resize.py,
            # compares scale * input_width with 1), from sizes the size
            lr = Fraction(in_len) * sc
            t = (Fraction(x) + Fraction(1, 2)) / sc - Fraction(1, 2) if lr != 1 else Fraction(0)
        elif ct == "align_corners":
            # ONNX: x * (length_original - 1) / (length_resized - 1), where
            # length_resized = in * scale as a real number (ONNX's
            # reference, op_resize.py: output_width = scale * input_width)
            lr = Fraction(in_len) * sc
            t = Fraction(0) if lr == 1 else Fraction(x) * (in_len - 1) / (lr - 1)
        elif ct == "asymmetric":
            t = Fraction(x) / sc
        else:
            raise ValueError(ct)
        fl = math.floor(t)
        f = t - fl
        if nearest == "floor":
            i = fl
        elif nearest == "ceil":
            i = math.ceil(t)
        elif nearest == "round_prefer_floor":
            i = fl + (1 if f > Fraction(1, 2) else 0)
        elif nearest == "round_prefer_ceil":
            i = fl + (1 if f >= Fraction(1, 2) else 0)
        else:
            raise ValueError(nearest)
        res.append(min(max(i, 0), in_len - 1))
    return np.array(res, dtype=np.int64)


def resize_src_default(out_len, in_len):
    """The default rule: src = min(floor(fp32(dst) * fp32(in/out)), in - 1),
    every step in fp32 (PyTorch 'nearest')."""
    a = np.float32(np.float64(in_len) / np.float64(out_len))
    t = np.arange(out_len, dtype=np.float32) * a
    return np.minimum(np.floor(t).astype(np.int64), in_len - 1)


def resize_nearest(data, sy, sx):
    """data [N, H, W, C] gathered at rows sy and columns sx."""
    return data[:, sy][:, :, sx]


# ------------------------------------------------------------ blockwise_mm
def silu(v):
    return v / (1.0 + np.exp(-v))


def blockwise_mm(hs, aff, wgu, wd, tok_ids, b2e, block_size, mode="POST_SCALE"):
    """The MoE prefill (docs/parts/kernels.md, blockwise_mm) in float64: returns (out, bound) where
    bound holds, per element, the sums of |terms| the tolerance needs (see
    tests)."""
    T1, H = hs.shape
    T = T1 - 1
    E = wgu.shape[0]
    out = np.zeros((T1, H))
    parts = {}
    for n, e in enumerate(np.asarray(b2e).reshape(-1)):
        if not 0 <= e < E:
            continue
        for tok in tok_ids[n * block_size:(n + 1) * block_size]:
            if not 0 <= tok < T:
                continue
            a = aff[tok * E + e, 0]
            x = hs[tok] * a if mode == "PRE_SCALE" else hs[tok]
            g = x @ wgu[e, :, 0, :]
            u = x @ wgu[e, :, 1, :]
            h = silu(g) * u
            y = h @ wd[e]
            if mode == "POST_SCALE":
                y = y * a
            out[tok] += y
            parts.setdefault(tok, []).append((x, e, g, u, h, a))
    return out, parts


# ------------------------------------------------------------------ topk
def topk(x, k, largest=True):
    """ONNX TopK along the last axis, sorted, ties to the lower index. NaN
    is taken as larger than every number (numpy's sort order) for
    largest=True and as larger than every number for largest=False too."""
    x = np.asarray(x, np.float64)
    idx = np.arange(x.shape[-1])
    if largest:
        keyv = np.where(np.isnan(x), np.inf, x)
        nanfirst = np.isnan(x)
        order = np.lexsort((np.broadcast_to(idx, x.shape), -keyv, ~nanfirst), axis=-1)
    else:
        order = np.lexsort((np.broadcast_to(idx, x.shape), x), axis=-1)  # NaN last
    sel = order[..., :k]
    return np.take_along_axis(x, sel, -1), sel
