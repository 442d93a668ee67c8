"""The NKI matmul tutorial ladder written in NKI (tutorial_matmul.py) traced
by nxsim.nki and run on the model, beside the C composites of the same loop
nests (docs/parts/tutorial.md) run in the same process and the latencies
the tutorial publishes for one Trainium1 NeuronCore.

    PYTHONPATH=build/python python3 bench/nki/tutorial_bench.py            # the published shape on trn1
    PYTHONPATH=build/python python3 bench/nki/tutorial_bench.py --shape 2048,2048,2048 --machine trn2

Prints, per kernel: the NKI version's simulated time, the C composite's,
their ratio, the published time and the NKI version's ratio to it (only at
the published shape on trn1), how far each result is from the exact
product against the bound its arithmetic allows (below), the largest
difference between the two results, and the host wall time of tracing plus
running. Exit 1 if a result is outside its bound or a kernel is refused.

The bound, per element, is tutorial_matmul.error_bound's: the fp32 sum of K
products in any order or blocking, one rounding to the result dtype, and
for the fully optimised kernel one rounding of its SBUF partial sum per K
block. Two results can both be within it and differ by more than one
rounding of the output, so they are not held to each other.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nxsim  # noqa: E402
import nxsim.nki as nki  # noqa: E402
import tutorial_matmul  # noqa: E402

PUBLISHED_SHAPE = (8192, 4096, 8192)  # K, M, N: lhsT [8192, 4096] @ rhs [8192, 8192]


def worst(out, exact, bound):
    """The largest |got - exact| / bound over the elements (<= 1: within)."""
    got = nxsim.to_float32(out).astype(np.float64)
    if got.shape != exact.shape:
        raise ValueError("result shape %s, expected %s" % (got.shape, exact.shape))
    err = np.abs(got - exact)
    if not np.isfinite(err).all():
        return float("inf")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err == 0, 0.0, err / bound)  # a nonzero error on a zero bound: inf
    return float(ratio.max())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="%d,%d,%d" % PUBLISHED_SHAPE, help="K,M,N (default: the tutorial's)")
    p.add_argument("--machine", default="trn1")
    p.add_argument("--only", action="append", default=[], help="a kernel name (repeat)")
    args = p.parse_args()
    K, M, N = (int(x) for x in args.shape.split(","))
    published = (K, M, N) == PUBLISHED_SHAPE and args.machine == "trn1"
    rng = np.random.default_rng(1)
    lhsT = nxsim.to_bf16(rng.standard_normal((K, M)).astype(np.float32))
    rhs = nxsim.to_bf16(rng.standard_normal((K, N)).astype(np.float32))
    print("NKI tutorial ladder: lhsT [%d, %d] @ rhs [%d, %d] bf16 on %s" % (K, M, K, N, args.machine))
    a64, b64 = (nxsim.to_float32(x).astype(np.float64) for x in (lhsT, rhs))
    bounds = {}  # sbuf_block_k -> (exact, bound); the results are bf16 (lhsT's dtype)
    ok = True
    for name, kernel, composite, published_ms, sbuf_block_k in tutorial_matmul.LADDER:
        if args.only and name not in args.only:
            continue
        if sbuf_block_k not in bounds:
            bounds[sbuf_block_k] = tutorial_matmul.error_bound(a64, b64, sbuf_block_k)
        exact, bound = bounds[sbuf_block_k]
        t0 = time.time()
        try:
            out, run = nki.profile_kernel(kernel, lhsT, rhs, machine=args.machine)
        except nxsim.Error as e:
            print("%-22s refused: %s" % (name, e))
            ok = False
            continue
        wall = time.time() - t0
        nki_ms = run.total_ns / 1e6
        try:
            ref, base = nxsim.run(composite, lhsT, rhs, machine=args.machine, keep_log=False)
        except nxsim.Error as e:
            ref, base, refused = None, None, str(e)
        nki_err = worst(out, exact, bound)
        ok = ok and nki_err <= 1
        line = "%-22s nki %9.3f ms" % (name, nki_ms)
        if base is not None:
            c_err = worst(ref, exact, bound)
            ok = ok and c_err <= 1
            c_ms = base.total_ns / 1e6
            line += "  C %9.3f ms  nki/C %.3f" % (c_ms, nki_ms / c_ms)
        else:
            line += "  C refused (%s)" % refused
        if published:
            line += "  published %6.2f ms  nki/published %.3f" % (published_ms, nki_ms / published_ms)
        line += "  error/bound nki %.3f" % nki_err
        if base is not None:
            got, want = nxsim.to_float32(out).astype(np.float64), nxsim.to_float32(ref).astype(np.float64)
            diff = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            line += " C %.3f  nki vs C %.2g" % (c_err, diff)
        line += "  %s" % ("ok" if nki_err <= 1 and (base is None or c_err <= 1) else "WRONG")
        print(line + "  wall %.1f s (%.2f us per instruction, %d instructions)"
              % (wall, wall * 1e6 / max(run.instructions, 1), run.instructions))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
