"""Tests of the nxsim Python package (python/nxsim) against NumPy references:
registry leaves on NumPy arrays (a transpose in fp32 and bf16, the
depthwise conv1d against a convolution written here with NumPy), the Run
object (times, busy, summary, by-source, trace and timeline files), an ISA
program through exec_program, dtype conversions, the registry listings,
errors as exceptions with the library's one-line messages, and two threads.

Run by ctest (python_nxsim) with PYTHONPATH=build/python. Without NumPy the
whole module is skipped with a message ctest reports as a skip."""
import json
import os
import sys
import tempfile
import threading
import unittest
import xml.etree.ElementTree as ET

try:
    import numpy as np
except ImportError:  # pragma: no cover
    # unittest reports a module that raises SkipTest as skipped (exit 0);
    # ctest turns the marker into a skip (python/CMakeLists.txt)
    WHY = ("NXSIM-SKIP: python3-numpy is not installed (apt-get install -y python3-numpy; scripts/setup.sh does): "
           "the nxsim package needs it")
    print(WHY, file=sys.stderr)
    raise unittest.SkipTest(WHY)

import nxsim

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "traces")


def conv1d_depthwise_ref(img, filt, stride, pad, dil):
    """out[n, c, 0, w] = sum_k img[n, c, 0, w * stride + k * dil - pad_lo] * filt[c, 0, 0, k]
    (cross-correlation as XLA's ConvGeneralDilated; zero outside the image)."""
    n, c, _, w = img.shape
    wf = filt.shape[3]
    lo, hi = pad
    padded = np.zeros((n, c, w + lo + hi), dtype=np.float64)
    padded[:, :, lo:lo + w] = img[:, :, 0, :]
    span = (wf - 1) * dil + 1
    wout = (w + lo + hi - span) // stride + 1
    out = np.zeros((n, c, 1, wout), dtype=np.float64)
    for k in range(wf):
        taps = padded[:, :, k * dil: k * dil + (wout - 1) * stride + 1: stride]
        out[:, :, 0, :] += taps * filt[None, :, 0, 0, k, None]
    return out


class TestRun(unittest.TestCase):
    def test_transpose_fp32_matches_numpy(self):
        rng = np.random.default_rng(7)
        x = rng.standard_normal((300, 136)).astype(np.float32)
        y, run = nxsim.run("tiled_pf_transpose", x, permutation=[1, 0], check=True, race_check=True)
        self.assertEqual(y.dtype, np.float32)
        self.assertEqual(y.shape, (136, 300))
        np.testing.assert_array_equal(y, x.T)
        self.assertIsInstance(run, nxsim.Run)
        self.assertEqual(run.kernel, "tiled_pf_transpose")
        self.assertEqual(run.cores, 2)
        self.assertGreater(run.total_ns, 0)
        self.assertTrue(run.race_checked)
        self.assertEqual(run.check[0]["tolerance"], "exact")
        self.assertEqual(run.check[0]["mismatches"], 0)
        self.assertEqual(set(run.engines), {(c, e) for c in range(2) for e in ("pe", "dve", "act", "pool", "sp")})
        self.assertGreater(sum(run.busy.values()), 0)
        for st in run.engines.values():
            self.assertTrue(0 <= st["busy_pct"] <= 100)
        self.assertIn("simulated:", run.summary)
        self.assertAlmostEqual(run.summary_json["total_ns"], run.total_ns, places=6)
        self.assertEqual(run.op["results"][0]["shape"], [136, 300])

    def test_bf16_raw_type(self):
        x = nxsim.to_bf16(np.linspace(-4, 4, 128 * 64, dtype=np.float32).reshape(128, 64))
        self.assertEqual(x.dtype, nxsim.bf16)
        y, run = nxsim.run("tiled_dve_transpose_10", x, permutation=[1, 0])
        self.assertEqual(y.dtype, nxsim.bf16)
        np.testing.assert_array_equal(y["bf16"], x["bf16"].T)
        # round to nearest even: 1 + 2^-8 is a tie between 1 and 1 + 2^-7
        b = nxsim.to_bf16(np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5], dtype=np.float32))
        self.assertEqual(list(b["bf16"]), [0x3F80, 0x3F80, 0x3F82, 0xC020])
        np.testing.assert_array_equal(nxsim.to_float32(b), np.array([1.0, 1.0, 1 + 2 ** -6, -2.5], np.float32))
        e4 = nxsim.convert(np.array([1.0, 448.0, 1000.0], np.float32), "fp8_e4m3")
        self.assertEqual(e4.dtype, nxsim.fp8_e4m3)
        self.assertEqual(list(nxsim.to_float32(e4)), [1.0, 448.0, 448.0])  # saturates (e4m3fn)

    def test_conv1d_depthwise_matches_numpy(self):
        rng = np.random.default_rng(3)
        img = rng.standard_normal((2, 160, 1, 50)).astype(np.float32)
        filt = rng.standard_normal((160, 1, 1, 4)).astype(np.float32)
        out, run = nxsim.run("Conv1d_depthwise_bf01_oi01_bf01", img, filt, stride=[1, 1],
                             padding=[[0, 0], [3, 0]], check=True)
        ref = conv1d_depthwise_ref(img.astype(np.float64), filt.astype(np.float64), 1, (3, 0), 1)
        self.assertEqual(out.shape, ref.shape)
        # fp32 products summed over K = 4 taps: a few ulps of the largest term
        scale = np.abs(img).max() * np.abs(filt).max() * 4
        np.testing.assert_allclose(out, ref, rtol=0, atol=8 * np.finfo(np.float32).eps * scale)
        self.assertEqual(run.check[0]["mismatches"], 0)
        # strided and dilated
        out2, _ = nxsim.run("Conv1d_depthwise_bf01_oi01_bf01", img, filt, stride=[1, 2], rhs_dilation=[1, 2],
                            padding=[[0, 0], [1, 2]])
        ref2 = conv1d_depthwise_ref(img.astype(np.float64), filt.astype(np.float64), 2, (1, 2), 2)
        np.testing.assert_allclose(out2, ref2, rtol=0, atol=8 * np.finfo(np.float32).eps * scale)

    def test_functional_backend_same_bits(self):
        x = np.arange(64 * 96, dtype=np.float32).reshape(64, 96)
        y_model, run_m = nxsim.run("tiled_pf_transpose", x)
        y_func, run_f = nxsim.run("tiled_pf_transpose", x, backend="functional")
        np.testing.assert_array_equal(y_model, y_func)
        self.assertFalse(run_f.on_model)
        self.assertIsNone(run_f.summary)

    def test_default_op(self):
        y, run = nxsim.run("tiled_pf_transpose", seed=4)
        self.assertEqual(y.shape, (384, 512))
        y2, _ = nxsim.run("tiled_pf_transpose", seed=4)
        np.testing.assert_array_equal(y, y2)

    def test_files_and_by_source(self):
        x = np.ones((128, 128), np.float32)
        _, run = nxsim.run("tiled_pf_transpose", x)
        rows = run.by_source()
        self.assertTrue(rows)
        self.assertTrue(any(r["file"] == "kernels/transpose/tiled_pf_transpose.c" for r in rows))
        self.assertAlmostEqual(sum(r["share"] for r in rows), 1.0, places=9)
        self.assertIn("busy time by source line", run.by_source_text)
        with tempfile.TemporaryDirectory() as d:
            run.save_trace(os.path.join(d, "t.json"))
            with open(os.path.join(d, "t.json")) as f:
                trace = json.load(f)
            sources = {e["args"].get("source") for e in trace["traceEvents"] if e.get("ph") == "X" and "args" in e}
            self.assertTrue(any(s and s.startswith("kernels/transpose/tiled_pf_transpose.c:") for s in sources))
            run.save_timeline(os.path.join(d, "t.svg"))
            root = ET.parse(os.path.join(d, "t.svg")).getroot()
            lanes = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "lane"]
            self.assertEqual({g.get("data-core") for g in lanes}, {"0", "1"})
            with self.assertRaises(nxsim.RunError) as cm:
                run.save_timeline(os.path.join(d, "no", "such", "t.svg"))
            self.assertIn("timeline ", str(cm.exception))


class TestErrors(unittest.TestCase):
    def test_unknown_kernel_is_the_registry_miss(self):
        with self.assertRaises(nxsim.InputError) as cm:
            nxsim.run("NoSuchKernel", np.zeros((4, 4), np.float32))
        self.assertTrue(str(cm.exception).startswith(
            "Internal NKI kernel 'NoSuchKernel' is not registered. Available kernels: dict_keys(["))
        self.assertNotIn("\n", str(cm.exception))

    def test_bad_inputs(self):
        with self.assertRaises(nxsim.InputError) as cm:
            nxsim.run("tiled_pf_transpose", np.zeros((4, 4)))  # float64
        self.assertIn("float64 has no nxsim type", str(cm.exception))
        with self.assertRaises(nxsim.InputError) as cm:
            nxsim.run("tiled_pf_transpose", np.zeros((4, 4), np.float32), permutation=[0, 0])
        self.assertNotIn("\n", str(cm.exception))
        with self.assertRaises(nxsim.InputError):
            nxsim.run("tiled_pf_transpose", np.zeros((4, 4), np.float32), machine="no-such-machine")
        with self.assertRaises(nxsim.UsageError):
            nxsim.run("tiled_pf_transpose", backend="gpu")
        with self.assertRaises(nxsim.InputError):
            nxsim.run("tiled_pf_transpose", np.zeros((4, 4), np.float32), permutation=object())

    def test_nul_in_names_refused(self):
        # the library reads C strings: a NUL would cut the name there
        x = np.zeros((4, 4), np.float32)
        with self.assertRaises(nxsim.InputError) as cm:
            nxsim.run("tiled_pf_transpose\0junk", x)
        self.assertEqual(str(cm.exception), "kernel name 'tiled_pf_transpose\\x00junk' holds a NUL byte")
        with self.assertRaises(nxsim.InputError) as cm:
            nxsim.run("tiled_pf_transpose", x, attrs={"permutation\0x": [1, 0]})
        self.assertIn("attribute name 'permutation\\x00x' holds a NUL byte", str(cm.exception))
        with self.assertRaises(nxsim.InputError):
            nxsim.run("tiled_pf_transpose", x, machine="trn2\0junk")
        with self.assertRaises(nxsim.InputError):
            nxsim.exec_program(os.path.join(TRACES, "tensor_copy", "program.nxs") + "\0x")

    def test_seed_grid_and_types_checked(self):
        x = np.zeros((4, 4), np.float32)
        for bad in (-1, 2**64, 1.5, True, "1", None):
            with self.assertRaises(nxsim.UsageError) as cm:
                nxsim.run("tiled_pf_transpose", x, seed=bad, backend="functional")
            self.assertTrue(str(cm.exception).startswith("seed must be an integer in [0, 2**64), got "))
        for bad in (-1, 3, 2**32, 1.0):
            with self.assertRaises(nxsim.UsageError) as cm:
                nxsim.run("tiled_pf_transpose", x, grid=bad, backend="functional")
            self.assertTrue(str(cm.exception).startswith("grid must be an integer 0 (the kernel's), 1 or 2, got "))
        y, _ = nxsim.run("tiled_pf_transpose", x, seed=2**64 - 1, grid=np.int64(1), backend="functional")
        self.assertTrue((y == x.T).all())
        for call in (lambda: nxsim.run(42, x), lambda: nxsim.run(b"tiled_pf_transpose", x),
                     lambda: nxsim.run("tiled_pf_transpose", x, attrs=[("permutation", [1, 0])]),
                     lambda: nxsim.run("tiled_pf_transpose", x, attrs={1: 2}),
                     lambda: nxsim.run("tiled_pf_transpose", x, machine=3),
                     lambda: nxsim.run("tiled_pf_transpose", x, check=np.zeros(2)),
                     lambda: nxsim.run("tiled_pf_transpose", x, backend=np.zeros(2)),
                     lambda: nxsim.exec_program(None),
                     lambda: nxsim.exec_program(os.path.join(TRACES, "tensor_copy", "program.nxs"), inputs=[1])):
            with self.assertRaises(nxsim.UsageError):
                call()


class TestPrograms(unittest.TestCase):
    def test_exec_program_matches_numpy(self):
        path = os.path.join(TRACES, "tensor_copy", "program.nxs")
        rng = np.random.default_rng(1)
        x = rng.uniform(-3, 3, (32, 16)).astype(np.float32)
        xi = rng.integers(-300, 300, (32, 16)).astype(np.int32)
        outs, run = nxsim.exec_program(path, {"x": x, "xi": xi})
        self.assertGreater(run.total_ns, 0)
        np.testing.assert_array_equal(outs["yi_f32"], xi.astype(np.float32))
        np.testing.assert_array_equal(outs["yi_u8"], np.clip(xi, 0, 255).astype(np.uint8))
        np.testing.assert_array_equal(outs["y_bf16"]["bf16"], nxsim.to_bf16(x)["bf16"])
        np.testing.assert_array_equal(outs["y_str"], x[:, ::2][:, ::-1])
        with self.assertRaises(nxsim.InputError) as cm:
            nxsim.exec_program(path, {"x": x.astype(np.float16)})
        self.assertIn("input x: a fp16 array of shape [32, 16], the tensor is fp32 [32, 16]", str(cm.exception))
        with self.assertRaises(nxsim.InputError):
            nxsim.exec_program(os.path.join(TRACES, "no-such", "program.nxs"))


class TestListings(unittest.TestCase):
    def test_registry_and_kernels(self):
        live = nxsim.registry()
        keys = [e["key"] for e in live]
        self.assertIn("tiled_pf_transpose", keys)
        self.assertIn("Conv1d_depthwise_bf01_oi01_bf01", keys)
        self.assertTrue(all(e["registered"] for e in live))
        everything = nxsim.registry(all=True)
        self.assertEqual(len(everything), 13)
        self.assertEqual(everything[0]["key"], "SelectAndScatter")
        self.assertEqual([e["index"] for e in everything], list(range(1, 14)))
        tiers = {k["tier"] for k in nxsim.kernels()}
        self.assertTrue({"reference", "leaf"} <= tiers)
        self.assertIn("trn2", nxsim.machines())
        self.assertRegex(nxsim.version(), r"^\d+\.\d+\.\d+$")


class TestThreads(unittest.TestCase):
    def test_two_threads(self):
        xs = [np.full((128, 64), float(i), np.float32) for i in range(2)]
        got = [None, None]

        def work(i):
            got[i] = nxsim.run("tiled_pf_transpose", xs[i])[0]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(2):
            np.testing.assert_array_equal(got[i], xs[i].T)


if __name__ == "__main__":
    unittest.main()
