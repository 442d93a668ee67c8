"""python3 -m nxsim.nki FILE.py:KERNEL -i a.npy ...: run an NKI kernel from
a file on .npy inputs (docs/parts/nki.md, "From the shell").

Exit codes as the nxsim command's (docs/parts/cli.md): 0 ok, 1 a runtime
failure or a failed --check, 2 usage, 3 bad input (a kernel's mistake, a
file that does not load). Errors are one line on stderr.
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import traceback

import numpy as np

from .. import Error, InputError, UsageError
from .._dtypes import name_of
from . import KernelError, profile_kernel, simulate_kernel, trace

# tolerance of --check by result dtype: a few units of the dtype's precision
_RTOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 2e-2, "fp8_e4m3": 0.13, "fp8_e5m2": 0.25}


class _Parser(argparse.ArgumentParser):
    """argparse with the nxsim command's one-line usage errors (exit 2)."""

    def error(self, message):
        print("nxsim nki: %s; try '%s --help'" % (message, self.prog), file=sys.stderr)
        sys.exit(2)


def _parser():
    # `nxsim nki` (cli/cmd_nki.c) runs this module with NXSIM_NKI_PROG set
    p = _Parser(prog=os.environ.get("NXSIM_NKI_PROG") or "python3 -m nxsim.nki",
                description="Run an NKI kernel on nxsim.")
    p.add_argument("kernel", metavar="FILE.py:KERNEL", help="the file and the kernel's name in it")
    p.add_argument("-i", "--input", action="append", default=[], metavar="A.npy",
                   help="an input array, in the kernel's parameter order (repeat)")
    p.add_argument("-o", "--output", action="append", default=[], metavar="OUT.npy",
                   help="where to write the kernel's results, in order (repeat)")
    p.add_argument("--grid", metavar="N[,M]", help="the launch grid (kernel[N, M])")
    p.add_argument("--machine", help="a preset (trn2, trn1) or a machine file")
    p.add_argument("--functional", action="store_true", help="the functional executor (no time)")
    p.add_argument("--profile", metavar="TRACE.json", help="write the Perfetto trace")
    p.add_argument("--timeline", metavar="RUN.svg", help="write the SVG timeline")
    p.add_argument("--by-source", action="store_true", help="print busy time per kernel source line")
    p.add_argument("--summary", action="store_true", help="print the profile summary")
    p.add_argument("--check", metavar="FUNCTION", help="compare with a NumPy function of the file")
    p.add_argument("--save", metavar="PROG.nxs", help="write the traced program (.nxs or .nxb)")
    return p


def _load(spec):
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise UsageError("%s: expected FILE.py:KERNEL" % spec)
    if not os.path.isfile(path):
        raise InputError("%s: no such file" % path)
    mspec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(mspec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        mspec.loader.exec_module(module)
    except SyntaxError as e:
        raise InputError("%s:%s: %s" % (e.filename or path, e.lineno or 0, e.msg)) from None
    except Exception as e:  # the file's own code failed: its line, not our traceback
        frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) == os.path.abspath(path)]
        line = frames[-1].lineno if frames else 0
        raise InputError("%s:%d: loading the file raised %s: %s" % (path, line, type(e).__name__, e)) from None
    finally:
        sys.path.pop(0)
    if not hasattr(module, name):
        raise InputError("%s: no kernel '%s' in the file" % (path, name))
    return module, getattr(module, name)


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _check_paths(args):
    """Refuses (exit 2) an output that is an input or another output, before
    anything runs: nothing the command line reads is overwritten."""
    outs = [("-o", p) for p in args.output] + [(o, getattr(args, k)) for o, k in
                                                (("--profile", "profile"), ("--timeline", "timeline"),
                                                 ("--save", "save")) if getattr(args, k)]
    ins = [("-i", p) for p in args.input] + [("the kernel file", args.kernel.rpartition(":")[0])]
    for j, (olabel, opath) in enumerate(outs):
        if os.path.exists(opath) and not os.path.isfile(opath) and opath not in ("/dev/null", "/dev/stdout"):
            raise UsageError("%s %r is not a regular file" % (olabel, opath))
        for ilabel, ipath in ins:
            if ipath and _same_file(opath, ipath):
                raise UsageError("%s %r is the input %s %r: refusing to overwrite it" % (olabel, opath, ilabel, ipath))
        for olabel2, opath2 in outs[:j]:
            if _same_file(opath, opath2):
                raise UsageError("%s %r is also %s: two outputs in one file" % (olabel, opath, olabel2))


def _save_npy(path, array):
    """np.save through a temporary file renamed into place: a failed write
    leaves no partial .npy (devices are written through)."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as f:
            np.save(f, array)
        return
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".nxsim-", suffix=".npy", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _check(results, expected, name):
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    if len(expected) != len(results):
        raise InputError("--check %s: returned %d arrays, the kernel %d" % (name, len(expected), len(results)))
    ok = True
    for j, (got, want) in enumerate(zip(results, expected)):
        want = np.asarray(want)
        if want.shape != got.shape:
            print("check result %d: shape %s, %s gives %s" % (j, list(got.shape), name, list(want.shape)))
            ok = False
            continue
        dt = name_of(got.dtype) or "fp32"
        g = got.astype(np.float64) if dt not in ("bf16", "fp8_e4m3", "fp8_e5m2") else \
            __import__("nxsim").to_float32(got).astype(np.float64)
        w = want.astype(np.float64)
        rtol = _RTOL.get(dt, 0.0)
        bad = ~np.isclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
        err = float(np.nanmax(np.abs(g - w))) if g.size else 0.0
        print("check result %d: %s, max abs error %g, %d of %d beyond rtol=atol=%g"
              % (j, "ok" if not bad.any() else "FAILED", err, int(bad.sum()), g.size, rtol))
        ok = ok and not bad.any()
    return ok


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        _check_paths(args)
        module, kernel = _load(args.kernel)
        if args.grid:
            try:
                grid = tuple(int(x) for x in args.grid.split(","))
            except ValueError:
                raise UsageError("--grid %s: expected N or N,M" % args.grid) from None
            kernel = kernel[grid if len(grid) > 1 else grid[0]]
        arrays = []
        for f in args.input:
            try:
                arrays.append(np.load(f, allow_pickle=False))
            except (OSError, ValueError) as e:
                raise InputError("%s: %s" % (f, e)) from None
        backend = "functional" if args.functional else "model"
        if args.save:
            trace(kernel, *arrays, machine=args.machine).save(args.save)
        wants_run = args.profile or args.timeline or args.by_source or args.summary
        if wants_run or not args.functional:
            values, run = profile_kernel(kernel, *arrays, machine=args.machine, backend=backend,
                                         trace_file=args.profile, timeline_file=args.timeline)
        else:
            values, run = simulate_kernel(kernel, *arrays, machine=args.machine, backend=backend), None
        results = list(values) if isinstance(values, (tuple, list)) else [values]
        if len(args.output) > len(results):
            raise UsageError("%d -o given, the kernel returns %d results" % (len(args.output), len(results)))
        for path, a in zip(args.output, results):
            try:
                _save_npy(path, a)
            except OSError as e:
                raise Error("-o %s: %s" % (path, e.strerror or e)) from None
        if run is not None and run.on_model:
            print("simulated: %.3f us on %s, %d core%s" % (run.total_ns / 1000, run.machine, run.cores,
                                                          "" if run.cores == 1 else "s"))
            if args.summary:
                print(run.summary)
            if args.by_source:
                print(run.by_source_text)
        for j, a in enumerate(results[len(args.output):]):
            print("result %d: %s %s" % (len(args.output) + j, name_of(a.dtype) or a.dtype, list(a.shape)))
        if args.check:
            ref = getattr(module, args.check, None)
            if not callable(ref):
                raise InputError("--check %s: no such function in %s" % (args.check, args.kernel))
            if not _check(results, ref(*arrays), args.check):
                return 1
        return 0
    except UsageError as e:
        print("nxsim nki: %s" % e, file=sys.stderr)
        return 2
    except (KernelError, InputError) as e:
        print("nxsim nki: %s" % e, file=sys.stderr)
        return 3
    except Error as e:
        print("nxsim nki: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
