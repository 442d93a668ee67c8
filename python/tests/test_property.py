"""A property test over the Python entry points (docs/parts/python.md): with
random arguments of random types, every call of nxsim.run, exec_program and
convert either returns or raises one of nxsim's documented exceptions
(nxsim.Error and its subclasses, or MemoryError), never AttributeError,
ctypes.ArgumentError, OverflowError or a crash. Fixed seeds, small operands
and the functional backend keep it under a few seconds."""
import os
import random
import unittest

import numpy as np

import nxsim

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "..", "..", "traces", "tensor_copy", "program.nxs")

NAMES = ["tiled_pf_transpose", "tiled_dve_transpose_10", "topk", "ResizeNearest", "SelectAndScatter", "",
         "tiled_pf_transpose\0x", "no_such_kernel", "\x1b[31m", "a" * 300]
ATTR_NAMES = ["permutation", "k", "axis", "mode", "init_value", "stride", "", "permutaton", "a\0b", "\n"]


def value(rng, depth=0):
    """A random attribute value of a random type (JSON-able or not)."""
    kinds = ["int", "float", "str", "bool", "none", "list", "nan", "big", "obj", "bytes"]
    k = rng.choice(kinds if depth < 2 else kinds[:5])
    if k == "int":
        return rng.randint(-5, 5)
    if k == "float":
        return rng.uniform(-10, 10)
    if k == "str":
        return rng.choice(["nearest", "POST_SCALE", "x\ny", "\0", "", "é" * 40])
    if k == "bool":
        return rng.random() < 0.5
    if k == "none":
        return None
    if k == "list":
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if k == "nan":
        return float("nan")
    if k == "big":
        return rng.choice([2 ** 63, -2 ** 64, 1e308, 10 ** 30])
    if k == "obj":
        return object()
    return b"\x00\x01"


def operand(rng):
    kind = rng.randint(0, 5)
    shape = tuple(rng.randint(1, 8) for _ in range(rng.randint(1, 3)))
    if kind == 0:
        return np.zeros(shape)  # float64: refused
    if kind == 1:
        return rng.choice([None, "x", 3, [1, 2], np.zeros(())])
    dt = rng.choice([np.float32, np.float16, np.int32, np.uint8, np.int8])
    return (np.arange(int(np.prod(shape))) % 7).astype(dt).reshape(shape)


def anything(rng, good):
    return good if rng.random() < 0.6 else rng.choice([-1, 2 ** 64, 1.5, True, "1", None, [0], np.int64(1), 3])


ALLOWED = (nxsim.Error, MemoryError)


class TestEntryPointsProperty(unittest.TestCase):
    def check(self, call, what):
        try:
            call()
        except ALLOWED:
            pass
        except Exception as e:  # the property: nothing else escapes
            self.fail("%s raised %s: %s" % (what, type(e).__name__, e))

    def test_run(self):
        rng = random.Random(20261201)
        for i in range(150):
            name = rng.choice(NAMES) if rng.random() < 0.8 else rng.choice([None, 7, b"topk"])
            ops = [operand(rng) for _ in range(rng.randint(0, 2))]
            attrs = {rng.choice(ATTR_NAMES): value(rng) for _ in range(rng.randint(0, 2))}
            kw = dict(backend=anything(rng, "functional"), seed=anything(rng, rng.randint(0, 2 ** 64 - 1)),
                      grid=anything(rng, rng.randint(0, 2)), check=anything(rng, rng.random() < 0.3),
                      machine=anything(rng, rng.choice([None, "trn1", "trn2", "nosuch", "trn2\0"])))
            if kw["backend"] != "functional":
                kw["backend"] = "functional" if rng.random() < 0.5 else kw["backend"]
            if not ops and name not in ("tiled_pf_transpose", "tiled_dve_transpose_10"):
                ops = [np.zeros((4, 4), np.float32)]  # default ops of other kernels are large
            self.check(lambda: nxsim.run(name, *ops, attrs=attrs, progress=False, **kw), "run #%d" % i)

    def test_exec_and_convert(self):
        rng = random.Random(7)
        for i in range(60):
            path = rng.choice([PROGRAM, PROGRAM + "\0", "/no/such.nxs", 5, None, HERE])
            inputs = rng.choice([None, {}, {"x": operand(rng)}, {"nosuch": 1}, [1], {"x\0": 1}])
            self.check(lambda: nxsim.exec_program(path, inputs, backend="functional", progress=False,
                                                  seed=anything(rng, 1)), "exec_program #%d" % i)
            a = operand(rng)
            self.check(lambda: nxsim.convert(a, rng.choice(["bf16", "fp32", "fp8_e4m3", "nosuch", np.float64])),
                       "convert #%d" % i)


if __name__ == "__main__":
    unittest.main()
