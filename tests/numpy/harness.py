"""The harness of the numpy cross-check (docs/parts/numpy-check.md): the
run configuration, the case runner that compares every mode and honours a
family's KNOWN disagreements, and the entry point (run.py)."""
import argparse
import os
import sys
import unittest

import numpy as np

import nxnp

NXSIM = None       # the nxsim binary under test (set by main)
WORKDIR = None     # where the cases' files go
SWEEP = int(os.environ.get("NXSIM_NUMPY_SWEEP", "0"))
SEED = int(os.environ.get("NXSIM_NUMPY_SEED", "20240611"))
MODES = os.environ.get("NXSIM_NUMPY_MODES", "race,functional").split(",")
EXTRA = os.environ.get("NXSIM_NUMPY_EXTRA", "").split()
PE_DTYPES = ["fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"]


def zeros(dt, *shape):
    return nxnp.encode(np.zeros(shape), dt)


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
            # the marker is ctest's SKIP_REGULAR_EXPRESSION (a skipped method
            # elsewhere must not mark a family that ran as skipped)
            reason = "not in this build's `nxsim kernels`: %s" % ", ".join(missing)
            print("NXSIM-SKIP: %s: %s" % (cls.__name__, reason), flush=True)
            raise unittest.SkipTest(reason)
        cls.runner = nxnp.Runner(NXSIM, os.path.join(WORKDIR, cls.__name__))
        cls.rng = np.random.default_rng([SEED, sum(map(ord, cls.__name__))])

    def known(self):
        """The family's pinned disagreements: its module's KNOWN."""
        return getattr(sys.modules[type(self).__module__], "KNOWN", {})

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
        self.judge(name, problems)

    def judge(self, name, problems):
        """Reports a case: its problems (one message per failed run) fail it,
        unless it is pinned in KNOWN; a pinned case must have problems."""
        known = self.known()
        with self.subTest(case=name):      # a failing case does not stop the others
            if name in known:
                if not problems:
                    self.fail("%s: pinned as a known disagreement (%s) but now agrees: remove it from KNOWN"
                              % (name, known[name]))
                print("known disagreement %s (%s): %s" % (name, known[name], problems[0].splitlines()[0]),
                      file=sys.stderr)
            elif problems:
                self.fail("%s:\n%s" % (name, "\n".join(problems)))

    def refuse(self, name, key, inputs, attrs, codes, text, raw_inputs=None):
        """A bad input: exit code in codes, one line on stderr starting with
        'nxsim: ' and containing text, no output file. raw_inputs: bytes
        for the first input file instead of the array."""
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
        if problems:
            problems = ["; ".join(problems) + "\n  reproduce: " + r.describe()]
        else:
            r.cleanup()
        self.judge(name, problems)


def main(modules):
    """Entry point: --nxsim BINARY [--workdir DIR] [unittest arguments, e.g.
    a family's class name]; modules: the family modules to load."""
    global NXSIM, WORKDIR
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--nxsim", required=True)
    ap.add_argument("--workdir", default=None)
    args, rest = ap.parse_known_args()
    NXSIM = os.path.abspath(args.nxsim)
    WORKDIR = os.path.abspath(args.workdir or os.path.join(os.path.dirname(NXSIM), "numpy-check"))
    namespace = type(sys)("families")    # every family class, by name
    for mod in modules:
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and issubclass(obj, LeafCase) and obj.__module__ == mod.__name__:
                setattr(namespace, name, obj)
    unittest.main(module=namespace, argv=[sys.argv[0]] + rest, verbosity=2)

