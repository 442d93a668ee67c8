"""Writing one trace directory: program.nxs, in_<tensor>.npy,
expected_<tensor>.npy and an optional tolerance file (see traces/README.md)."""
import os
import textwrap
import zlib

import numpy as np

import formats

TRACES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = ("program.nxs", "tolerance", "expected_error.txt")


class Trace:
    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(TRACES, name)
        os.makedirs(self.dir, exist_ok=True)
        for f in os.listdir(self.dir):  # drop files of an earlier version
            if f.endswith(".npy") or f in GENERATED:
                os.remove(os.path.join(self.dir, f))
        # deterministic per trace, independent of the order traces are built in
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))

    def program(self, text):
        with open(os.path.join(self.dir, "program.nxs"), "w") as f:
            f.write(textwrap.dedent(text).strip("\n") + "\n")

    def input(self, tensor, dt, values):
        """Writes in_<tensor>.npy; values must be exactly representable in dt.
        Returns the engine values (what a load of each element gives)."""
        values = np.asarray(values, dtype=np.float64)
        formats.save(os.path.join(self.dir, f"in_{tensor}.npy"), dt, values, representable=True)
        return values

    def input_raw(self, tensor, arr):
        """Writes in_<tensor>.npy from an array already in .npy form (used for
        NaN payloads, which engine values cannot carry)."""
        np.save(os.path.join(self.dir, f"in_{tensor}.npy"), np.ascontiguousarray(arr),
                allow_pickle=False)

    def expect(self, tensor, dt, values):
        """Writes expected_<tensor>.npy: the engine values converted to dt by
        the store rules (the conversion every write to memory does)."""
        formats.save(os.path.join(self.dir, f"expected_{tensor}.npy"), dt,
                     np.asarray(values, dtype=np.float64))

    def expect_raw(self, tensor, arr):
        np.save(os.path.join(self.dir, f"expected_{tensor}.npy"), np.ascontiguousarray(arr),
                allow_pickle=False)

    def tolerance(self, text):
        with open(os.path.join(self.dir, "tolerance"), "w") as f:
            f.write(textwrap.dedent(text).strip("\n") + "\n")

    def expected_error(self, line):
        assert "\n" not in line
        with open(os.path.join(self.dir, "expected_error.txt"), "w") as f:
            f.write(line + "\n")

    # random inputs that are exact in their dtype
    def normal(self, shape, scale=1.0, dt="fp32"):
        return formats.round_to(dt, self.rng.standard_normal(shape) * scale)

    def uniform(self, shape, lo, hi, dt="fp32"):
        return formats.round_to(dt, self.rng.uniform(lo, hi, shape))

    def ints(self, shape, lo, hi):
        return self.rng.integers(lo, hi + 1, shape).astype(np.float64)
