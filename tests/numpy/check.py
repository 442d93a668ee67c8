"""Comparison helpers of the numpy cross-check: a tolerance check that
reports the worst element, and bit-exact comparison."""
import numpy as np

import nxnp


def describe_index(shape, flat):
    return "[" + ",".join(str(i) for i in np.unravel_index(flat, shape)) + "]"


def within(got, want, tol, what):
    """None if |got - want| <= tol everywhere (NaN where want is NaN, same
    infinities), else a message naming the worst element."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return "%s: shape %s, numpy %s" % (what, list(got.shape), list(want.shape))
    tol = np.broadcast_to(np.asarray(tol, np.float64), want.shape)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want)
        bad = ~(err <= tol)
    same_special = (np.isnan(got) & np.isnan(want)) | ((got == want) & np.isinf(want))
    bad &= ~same_special
    if not bad.any():
        return None
    with np.errstate(invalid="ignore"):
        excess = np.where(bad, np.nan_to_num(err / np.where(tol > 0, tol, np.inf), nan=np.inf, posinf=np.inf), -1)
    w = int(np.argmax(excess))
    return "%s: %d of %d elements beyond tolerance; worst %s: nxsim %r, numpy %r (|diff| %.3g, tolerance %.3g)" % (
        what, int(bad.sum()), bad.size, describe_index(want.shape, w), got.flat[w], want.flat[w],
        err.flat[w], tol.flat[w])


def bit_exact(got_arr, want_arr, what):
    """None if the two storage arrays hold the same bits, else a message."""
    if got_arr is None:
        return "%s: no output file" % what
    if nxnp.dtype_name(got_arr) != nxnp.dtype_name(want_arr):
        return "%s: dtype %s, expected %s" % (what, nxnp.dtype_name(got_arr), nxnp.dtype_name(want_arr))
    if got_arr.shape != want_arr.shape:
        return "%s: shape %s, expected %s" % (what, list(got_arr.shape), list(want_arr.shape))
    g, w = nxnp.bits_of(got_arr), nxnp.bits_of(want_arr)
    bad = g != w
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    return "%s: %d of %d elements differ; first %s: nxsim bits 0x%x (%r), numpy 0x%x (%r)" % (
        what, int(bad.sum()), bad.size, describe_index(w.shape, i), int(g.flat[i]),
        nxnp.decode(got_arr).flat[i], int(w.flat[i]), nxnp.decode(want_arr).flat[i])


def sum_tolerance(ref, absum, k, out_dt, product_dt=None):
    """Tolerance of a K-term dot product of exact inputs computed with each
    product rounded to fp32 (or to product_dt), summed in fp32 in any order,
    and rounded once to out_dt:

      |got - ref| <= (K + 1) u32 S / (1 - (K + 1) u32) (1 + u_out)   products + sums
                   + u_p S (1 + u_out)                          products rounded to product_dt
                   + u_out |ref| + tiny_out                      the final rounding

    with S the sum of |terms| (the same convolution of |x| and |w|), u the
    unit roundoff (half an ulp of 1) of each dtype and tiny_out the smallest
    subnormal of out_dt: a worst-case bound (Higham, Accuracy and Stability of
    Numerical Algorithms, 2nd ed., section 3.1), no assumption on the order
    or the signs of the terms."""
    u = nxnp.unit_roundoff("fp32")
    uo = nxnp.unit_roundoff(out_dt)
    g = (k + 1) * u / (1 - (k + 1) * u)
    if product_dt is not None:
        g += nxnp.unit_roundoff(product_dt)
    return g * absum * (1 + uo) + uo * np.abs(ref) + nxnp.tiny(out_dt)
