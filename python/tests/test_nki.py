"""nxsim.nki against NumPy (docs/parts/nki.md): every kernel of
nki_kernels.py on the functional executor and the SystemC model, the two
bit for bit equal, the values against a NumPy reference (exact where one
fp32 rounding per op matches NumPy's float32 arithmetic; otherwise a
tolerance from fp32's epsilon and the op's error, stated per test); errors
of a user's kernel name its file:line; the traced program carries that
line into the profile."""
import inspect
import os
import sys
import tempfile
import traceback
import unittest

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("NXSIM-SKIP: numpy is not installed")
    raise SystemExit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nxsim  # noqa: E402
import nxsim.nki as nki  # noqa: E402
import nxsim.nki.isa as nisa  # noqa: E402
import nxsim.nki.language as nl  # noqa: E402
import nki_kernels as K  # noqa: E402

EPS = float(np.finfo(np.float32).eps)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def both(kernel, *args):
    """Values on the functional executor and on the model, asserted equal bit
    for bit; the model run with the race check (the synchronisation the
    layer added orders every conflicting pair of accesses)."""
    fun = nki.simulate_kernel(kernel, *args, backend="functional")
    mod, run = nki.profile_kernel(kernel, *args, backend="model", race_check=True)
    assert run.race_checked
    fs = fun if isinstance(fun, tuple) else (fun,)
    ms = mod if isinstance(mod, tuple) else (mod,)
    for a, b in zip(fs, ms):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), \
            "functional and model results differ"
    return fun, run


class Surface(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(7)

    def test_launch_grid_add(self):
        a, b = f32(self.rng, 512, 256), f32(self.rng, 512, 256)
        out, run = both(K.add_rows[4], a, b)
        np.testing.assert_array_equal(out, a + b)  # one fp32 add per element, as NumPy's
        self.assertEqual(run.cores, 2)  # 4 programs on the 2 cores of the VNC grid

    def test_two_dimensional_grid(self):
        a, b = f32(self.rng, 256, 768), f32(self.rng, 256, 768)
        out, run = both(K.add_2d_grid[2, 3], a, b)
        np.testing.assert_array_equal(out, a - b)
        self.assertEqual(run.cores, 2)

    def test_spmd_dim_and_nc(self):
        # nl.spmd_dim(nl.nc(2), 2): one dimension of 4, the cores outermost:
        # the same programs on the same cores as kernel[4]
        a, b = f32(self.rng, 512, 256), f32(self.rng, 512, 256)
        grid = nl.spmd_dim(nl.nc(2), 2)
        self.assertEqual(grid, 4)
        self.assertEqual(nki.trace(K.add_rows[grid], a, b).text, nki.trace(K.add_rows[4], a, b).text)
        out, run = both(K.add_rows[grid], a, b)
        np.testing.assert_array_equal(out, a + b)
        self.assertEqual(run.cores, 2)
        with self.assertRaises(nki.Unsupported) as cm:
            K.add_2d_grid[2, nl.nc(3)]
        self.assertIn("nl.nc on a grid dimension after the first", str(cm.exception))
        # the cores last (the public multi-core tensor-addition tutorial's
        # nl.spmd_dim(grid, nl.nc(2))): even programs on core 0, odd on core 1
        inner = nl.spmd_dim(2, nl.nc(2))
        self.assertEqual(inner, 4)

        def cores_of(text):
            return [int(line.split()[1]) for line in text.splitlines() if line.startswith(".core ")]

        # the program text switches core at each change (kernel[4]: programs
        # 0, 1 on core 0, then 2, 3 on core 1)
        self.assertEqual(cores_of(nki.trace(K.add_rows[inner], a, b).text), [0, 1, 0, 1])
        self.assertEqual(cores_of(nki.trace(K.add_rows[4], a, b).text), [0, 1])
        out, run = both(K.add_rows[inner], a, b)
        np.testing.assert_array_equal(out, a + b)
        self.assertEqual(run.cores, 2)
        with self.assertRaises(nki.KernelError):
            nl.spmd_dim(nl.nc(2), nl.nc(2))
        with self.assertRaises(nki.KernelError):
            nl.spmd_dim(nl.nc(2), 0)

    def test_tile_of_a_loop_takes_its_previous_buffer(self):
        # 120 KiB per partition twice does not fit SBUF: the second
        # iteration's tile reuses the first's buffer, the values stay right
        a = f32(self.rng, 128, 512)
        out, _ = both(K.big_tile_per_iteration, a)
        np.testing.assert_array_equal(out[0], a + np.float32(1))
        np.testing.assert_array_equal(out[1], a + np.float32(2))

    def test_elementwise(self):
        a, s = f32(self.rng, 128, 64), f32(self.rng, 128, 1)
        out, _ = both(K.elementwise, a, s)
        e = np.exp(a.astype(np.float64)).astype(np.float32)  # ACT's exp: within 1 ulp of the rounded exact value
        ref = -(np.maximum(e * np.float32(0.5), a) - s) + np.float32(1.0)
        np.testing.assert_allclose(out, ref, rtol=4 * EPS, atol=4 * EPS)

    def test_masked_ragged_tail(self):
        a = f32(self.rng, 300, 40)
        out, _ = both(K.ragged_copy, a)
        np.testing.assert_array_equal(out, a * np.float32(3.0))

    def test_tiled_matmul_psum_accumulation(self):
        lhsT, rhs = f32(self.rng, 256, 256), f32(self.rng, 256, 1024)
        out, run = both(K.tiled_matmul, lhsT, rhs)
        ref = lhsT.T.astype(np.float64) @ rhs.astype(np.float64)
        # fp32 products summed in k order: |error| <= K eps sum|a||b|
        bound = 256 * EPS * (np.abs(lhsT.T) @ np.abs(rhs))
        self.assertTrue(np.all(np.abs(out - ref) <= bound))
        self.assertGreater(run.engines[(0, "pe")]["instructions"], 0)

    def test_psum_zeros_fold_into_the_matmul(self):
        # nl.zeros then += matmul: the first matmul starts the accumulation,
        # no memset; values as with the zeros
        lhsT, rhs = f32(self.rng, 256, 256), f32(self.rng, 256, 1024)
        text = nki.trace(K.tiled_matmul, lhsT, rhs).text
        self.assertNotIn("memset", text)
        starts = [ln for ln in text.splitlines() if "multiply_moving" in ln and "acc=1" not in ln]
        self.assertEqual(len(starts), 2 * 2)  # one per (m, n) PSUM tile
        # touched between the zeros and the +=: the memset stays
        a, b = f32(self.rng, 128, 128), f32(self.rng, 128, 512)
        self.assertEqual(nki.trace(K.zeros_then_touched, a, b).text.count("memset"), 1)
        out, _ = both(K.zeros_then_touched, a, b)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        ref = a64.T @ b64
        ref[:, 0:256] = (a64.T @ b64[:, 0:256]).astype(np.float32)  # the half written, then accumulated
        ref[:, 0:256] += a64.T @ b64[:, 0:256]
        bound = 2 * 128 * EPS * (np.abs(a.T) @ np.abs(b))
        self.assertTrue(np.all(np.abs(out - ref) <= bound))

    def test_dma_cut_over_the_engines(self):
        # [128, 128]: 16 transfers of 8 partitions, one per DMA engine, on one
        # queue of each; [4, 4096]: fewer partitions than a share, one transfer
        a, b = f32(self.rng, 128, 128), f32(self.rng, 4, 4096)
        t = nki.trace(K.copy_tiles, a, b)
        with tempfile.TemporaryDirectory() as tmp:
            t.save(os.path.join(tmp, "copy.nxs"))
            with open(os.path.join(tmp, "copy.nxs")) as f:
                dmas = [ln.split() for ln in f if "dma_copy" in ln]
        queues = [int(next(w for w in d if w.startswith("queue="))[6:]) for d in dmas]
        rows = [d[1] for d in dmas]
        self.assertEqual(len(dmas), 16 + 16 + 1 + 1)
        load_a = queues[:16]
        self.assertEqual(sorted(q // 16 for q in load_a), list(range(16)))  # every engine once
        self.assertEqual(len({q % 16 for q in load_a}), 1)  # one queue of each
        self.assertTrue(all("[%d:%d]" % (8 * i, 8 * i + 8) in rows[i] for i in range(16)), rows[:16])
        oa, ob = both(K.copy_tiles, a, b)[0]
        np.testing.assert_array_equal(oa, a)
        np.testing.assert_array_equal(ob, b)

    def test_tutorial_ladder_small(self):
        # the four tutorial loop nests of bench/nki/tutorial_matmul.py, against
        # NumPy: bf16 products exact in fp32, sums over K in fp32
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "nki"))
        try:
            import tutorial_matmul as T
        finally:
            sys.path.pop(0)
        lhsT = nxsim.to_bf16(f32(self.rng, 256, 256))
        rhs = nxsim.to_bf16(f32(self.rng, 256, 1024))
        la, ra = nxsim.to_float32(lhsT).astype(np.float64), nxsim.to_float32(rhs).astype(np.float64)
        # fp32 sums of K = 256 exact products, then one bf16 rounding; the
        # fully optimised kernel at one K tile per block also rounds its
        # bf16 SBUF partial sum after the first K block
        kernels = [(k, None) for _, k, _, _, _ in T.LADDER[:3]] + [(T.matmul_fully_optimized(2, 1, 1), 128)]
        for k, sbuf_block_k in kernels:
            ref, bound = T.error_bound(la, ra, sbuf_block_k)
            out, _ = both(k, lhsT, rhs)
            err = np.abs(nxsim.to_float32(out).astype(np.float64) - ref)
            self.assertTrue(np.all(err <= bound), "%s: %g" % (k, (err - bound).max()))

    def test_matmul_with_transpose(self):
        x, y = f32(self.rng, 128, 128), f32(self.rng, 128, 256)
        out, _ = both(K.matmul_forms, x, y)
        ref = x.astype(np.float64) @ y.astype(np.float64)
        bound = 128 * EPS * (np.abs(x) @ np.abs(y))
        self.assertTrue(np.all(np.abs(out - ref) <= bound))

    def test_transposes(self):
        a, s = f32(self.rng, 128, 64), f32(self.rng, 32, 32)
        (t, u), _ = both(K.transposes, a, s)
        np.testing.assert_array_equal(t, a.T)
        np.testing.assert_array_equal(u, s.T)

    def test_reductions(self):
        a = f32(self.rng, 128, 64)
        (s, m, r), _ = both(K.reductions, a)
        np.testing.assert_array_equal(m, a.max(axis=1, keepdims=True))
        # sequential fp32 sums: |error| <= n eps sum|x|
        self.assertTrue(np.all(np.abs(s[:, 0] - a.astype(np.float64).sum(axis=1)) <= 64 * EPS * np.abs(a).sum(axis=1)))
        a3 = a.reshape(128, 8, 8)
        self.assertTrue(np.all(np.abs(r - a3.astype(np.float64).sum(axis=1)) <= 8 * EPS * np.abs(a3).sum(axis=1)))

    def test_softmax(self):
        a = f32(self.rng, 128, 100)
        out, _ = both(K.softmax_rows, a)
        e = np.exp(a - a.max(axis=1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=100 * EPS, atol=1e-7)

    def test_rmsnorm(self):
        a, w = f32(self.rng, 128, 64), f32(self.rng, 128, 64)
        out, _ = both(K.rmsnorm, a, w)
        a64 = a.astype(np.float64)
        ref = a64 / np.sqrt((a64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
        np.testing.assert_allclose(out, ref, rtol=80 * EPS, atol=1e-6)

    def test_layernorm_bn_stats(self):
        a = f32(self.rng, 128, 64) * 3 + 1
        out, _ = both(K.layernorm, a)
        a64 = a.astype(np.float64)
        ref = (a64 - a64.mean(axis=1, keepdims=True)) / np.sqrt(a64.var(axis=1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(out, ref, rtol=100 * EPS, atol=1e-5)

    def test_bn_stats_masked_ragged_chunk(self):
        a = f32(self.rng, 96, 1300) * 2 + 0.5
        out, _ = both(K.bn_stats_ragged, a)
        a64 = a.astype(np.float64)
        np.testing.assert_allclose(out[:, 0], a64.mean(axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out[:, 1], a64.var(axis=1), rtol=1e-4, atol=1e-6)

    def test_dst_forms(self):
        lhsT, rhs, a = f32(self.rng, 384, 64), f32(self.rng, 384, 256), f32(self.rng, 128, 40)
        (prod, first, ew), _ = both(K.dst_forms, lhsT, rhs, a)
        l64, r64 = lhsT.astype(np.float64), rhs.astype(np.float64)
        np.testing.assert_allclose(prod, l64.T @ r64, rtol=1e-5, atol=1e-4)  # the K loop accumulated
        np.testing.assert_allclose(first, l64[:128].T @ r64[:128], rtol=1e-5, atol=1e-4)
        two_e = 2 * np.exp(0.5 * a.astype(np.float64))
        np.testing.assert_allclose(ew, two_e + 1 / two_e, rtol=8 * EPS)  # nisa.reciprocal into dst, then + into dst
        # nki.simulate(kernel)(...): the newer package's entry point
        np.testing.assert_array_equal(nki.simulate(K.dst_forms)(lhsT, rhs, a)[2], ew)

    def test_jitted_helper_runs_inline(self):
        a = f32(self.rng, 128, 48)
        (out, last), _ = both(K.calls_a_jitted_helper, a)
        np.testing.assert_array_equal(out[0], a)
        np.testing.assert_array_equal(out[1], a * np.float32(2))
        np.testing.assert_array_equal(last[:, 0], a[:, 47] * np.float32(2))

    def test_transposed_fp32_load_psum_select_np_max(self):
        q, k = f32(self.rng, 96, 64), f32(self.rng, 96, 64)
        (masked, rowmax), _ = both(K.scores_masked, q, k)
        qb = nxsim.to_float32(nxsim.to_bf16(q)).astype(np.float64)
        kb = nxsim.to_float32(nxsim.to_bf16(k)).astype(np.float64)
        want = qb @ kb.T
        want[np.triu_indices(96, 1)] = -9984.0
        np.testing.assert_allclose(masked, want, rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(rowmax[:, 0], masked.max(axis=1))

    def test_tensor_tensor_scan(self):
        a, b = f32(self.rng, 128, 32) * 0.5, f32(self.rng, 128, 32)
        out, _ = both(K.scan, a, b)
        h = np.zeros(128, np.float32)
        ref = np.empty_like(a)
        for t in range(32):  # fp32 at every step, as the engine
            h = h * a[:, t] + b[:, t]
            ref[:, t] = h
        np.testing.assert_array_equal(out, ref)

    def test_affine_select_and_iota(self):
        a = f32(self.rng, 128, 128)
        (out, idx), _ = both(K.causal, a)
        np.testing.assert_array_equal(out, np.where(np.tril(np.ones((128, 128), bool)), a, -np.inf))
        np.testing.assert_array_equal(idx, np.arange(128 * 128, dtype=np.int32).reshape(128, 128))

    def test_avgpool_mgrid(self):
        a = f32(self.rng, 128, 8, 8)
        out, _ = both(K.avgpool, a)
        ref = ((a[:, 0::2, 0::2] + a[:, 0::2, 1::2]) + a[:, 1::2, 0::2] + a[:, 1::2, 1::2]) * np.float32(0.25)
        np.testing.assert_array_equal(out, ref)

    def test_rmsnorm_partition_broadcast(self):
        a, g = f32(self.rng, 128, 64), f32(self.rng, 64)
        out, _ = both(K.rmsnorm_bcast, a, g)
        a64 = a.astype(np.float64)
        ref = a64 / np.sqrt((a64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * g
        np.testing.assert_allclose(out, ref, rtol=80 * EPS, atol=1e-6)

    def test_avgpool_five_dim_index(self):
        a = f32(self.rng, 128, 8, 12)
        out, _ = both(K.avgpool_reduce, a)
        # the reduce folds (ph, pw) in row-major order, one fp32 add per step
        ref = (((a[:, 0::2, 0::2] + a[:, 0::2, 1::2]) + a[:, 1::2, 0::2]) + a[:, 1::2, 1::2]) * np.float32(0.25)
        np.testing.assert_array_equal(out, ref)

    def test_load_transpose2d_bf16(self):
        w = nxsim.to_bf16(f32(self.rng, 64, 128))
        out, _ = both(K.load_transposed, w)
        self.assertEqual(out.dtype, nxsim.bf16)
        self.assertEqual(out.tobytes(), np.ascontiguousarray(w.T).tobytes())  # a bit-exact move

    def test_partition_reductions(self):
        a = f32(self.rng, 128, 48)
        (s, m), _ = both(K.across_partitions, a)
        # partition by partition in order, one fp32 add per step (the instruction's contract)
        ref = np.zeros(48, np.float32)
        for p in range(128):
            ref = ref + a[p]
        np.testing.assert_array_equal(s, np.broadcast_to(ref, (128, 48)))
        np.testing.assert_array_equal(m, a.max(axis=0, keepdims=True))

    def test_all_any(self):
        a = f32(self.rng, 128, 40)
        a[3, :] = 0.0          # no nonzero: any 0, all 0
        a[5, 7] = 0.0          # one zero: all 0, any 1
        a[9, :] = 0.0
        a[9, 39] = -2.5        # one nonzero: any 1
        (every, some), _ = both(K.truth_reductions, a)
        np.testing.assert_array_equal(every[:, 0], np.all(a != 0, axis=1).astype(np.uint8))
        np.testing.assert_array_equal(some[:, 0], np.any(a != 0, axis=1).astype(np.uint8))
        self.assertEqual((every[3, 0], every[5, 0], some[3, 0], some[5, 0], some[9, 0]), (0, 0, 0, 1, 1))

    def test_dma_transpose(self):
        w = nxsim.to_bf16(f32(self.rng, 96, 112))
        (t, back), _ = both(K.dma_transposed, w)
        self.assertEqual(t.tobytes(), np.ascontiguousarray(w.T).tobytes())  # bit-exact moves
        self.assertEqual(back.tobytes(), w.tobytes())

    def test_top8(self):
        a = f32(self.rng, 128, 300)
        (vals, idx), _ = both(K.top8, a)
        order = np.argsort(-a, axis=1, kind="stable")[:, :8]
        np.testing.assert_array_equal(vals, np.take_along_axis(a, order, axis=1))
        np.testing.assert_array_equal(idx, order.astype(np.uint32))

    def test_top16_match_replace8(self):
        a = f32(self.rng, 128, 200)
        (vals, idx), _ = both(K.top16, a)
        order = np.argsort(-a, axis=1, kind="stable")[:, :16]  # distinct random values: no ties
        np.testing.assert_array_equal(vals, np.take_along_axis(a, order, axis=1))
        np.testing.assert_array_equal(idx, order.astype(np.uint32))

    def test_operators(self):
        a = f32(self.rng, 128, 16)
        out, _ = both(K.operators, a)
        ref = np.where(a > 0, a.astype(np.float64) ** 2, 2 * a - 1)
        np.testing.assert_allclose(out, ref, rtol=2 * EPS, atol=0)  # pow: the host powf, within 1 ulp

    def test_sbuf_reused_across_iterations(self):
        a = f32(self.rng, 128, 8192)
        out, _ = both(K.reuse_sbuf, a)
        np.testing.assert_array_equal(out, a[None] + np.arange(10, dtype=np.float32)[:, None, None])

    def test_device_print(self):
        import contextlib
        import io

        a = np.arange(8, dtype=np.float32).reshape(2, 4)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            nki.simulate_kernel(K.printing, a, backend="functional")
        self.assertEqual(buf.getvalue(), "x = %s\n" % a)

    def test_assignment_keeps_program_order(self):
        a = f32(self.rng, 128, 16)
        (y1, y), _ = both(K.assign_after_read, a)
        np.testing.assert_array_equal(y1, a + np.float32(1))
        np.testing.assert_array_equal(y, a * np.float32(2))

    def test_blocked_matmul_block_tiles(self):
        lhsT, rhs = f32(self.rng, 256, 256), f32(self.rng, 256, 1024)
        out, _ = both(K.blocked_matmul, lhsT, rhs)
        ref = lhsT.T.astype(np.float64) @ rhs.astype(np.float64)
        self.assertTrue(np.all(np.abs(out - ref) <= 256 * EPS * (np.abs(lhsT.T) @ np.abs(rhs))))
        # the same k-order fp32 sums as the unblocked kernel: the same bits
        ref_bits, _ = both(K.tiled_matmul, lhsT, rhs)
        self.assertEqual(out.tobytes(), ref_bits.tobytes())

    def test_causal_attention(self):
        qT, kT, v = f32(self.rng, 64, 128), f32(self.rng, 64, 128), f32(self.rng, 128, 64)
        out, _ = both(K.causal_attention, qT, kT, v)
        s = (qT.T.astype(np.float64) @ kT) / 8.0
        s = np.where(np.tril(np.ones((128, 128), bool)), s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        ref = (p @ v) / p.sum(axis=1, keepdims=True)
        # fp32 matmuls of 64 and 128 terms and an exp within 1 ulp: a few hundred eps of the magnitudes
        np.testing.assert_allclose(out, ref, rtol=0, atol=512 * EPS * np.abs(v).max())

    def test_output_argument_and_where(self):
        a = f32(self.rng, 128, 64)
        res = np.zeros_like(a)
        self.assertIsNone(nki.simulate_kernel(K.into_output_argument, a, res, backend="functional"))
        ref = np.where(a > 0, a, a * np.float32(0.1))
        np.testing.assert_array_equal(res, ref)
        res2 = np.zeros_like(a)
        nki.simulate_kernel(K.into_output_argument, a, res2)
        self.assertEqual(res.tobytes(), res2.tobytes())


class FlashPieces(unittest.TestCase):
    """The forms the public flash-attention forward kernel takes (docs/parts/nki.md,
    "Python values in kernels"), each in a kernel of nki_kernels.py."""

    def setUp(self):
        self.rng = np.random.default_rng(11)

    def test_columns_fp32_min_and_reduce_res_slices(self):
        x = f32(self.rng, 128, 2048) * np.float32(3)
        (maxes, stats, e, sums), _ = both(K.block_row_stats, x)
        np.testing.assert_array_equal(maxes, x.reshape(128, 4, 512).max(axis=2))  # [P, 1] results into t[:, j]
        m = x.max(axis=1)
        np.testing.assert_array_equal(stats[:, 0], m)  # folded from nl.fp32.min through [P] columns
        ef = np.exp(x.astype(np.float64) - m[:, None])
        # exp within 1 ulp of fp32, then one rounding to bf16 (2^-8 relative at most, the values <= 1)
        np.testing.assert_allclose(nxsim.to_float32(e), ef, rtol=2.0 ** -8, atol=0)
        # each block's row sum of the fp32 exp values in column j: 512 fp32 adds of values <= 1
        np.testing.assert_allclose(sums, ef.reshape(128, 4, 512).sum(axis=2), rtol=600 * EPS, atol=0)
        # log-sum-exp from the fp32.min start: exp(fp32.min - m) is exactly 0
        np.testing.assert_allclose(stats[:, 1], m + np.log(ef.sum(axis=1)), rtol=0, atol=8 * EPS * np.abs(m).max())

    def test_bool_masks_psum_slices_lazy_zeros(self):
        # small integers: every product and sum is exact in fp32
        a = self.rng.integers(-4, 5, (128, 128)).astype(np.float32)
        b = self.rng.integers(-4, 5, (128, 512)).astype(np.float32)
        (res, acc, kept), _ = both(K.bool_masked_blocks, a, b)
        c = a.T @ b
        ref = np.concatenate([c[:, 0:128] + 1, -c[:, 128:256], np.ones((128, 128), np.float32), -c[:, 384:512]], 1)
        np.testing.assert_array_equal(res, ref)
        np.testing.assert_array_equal(acc, c.reshape(128, 4, 128).sum(axis=1))
        np.testing.assert_array_equal(kept, np.full((128, 512), 2.0, np.float32))
        text = nki.trace(K.bool_masked_blocks, a, b).text
        self.assertNotIn(" activation", text)  # nl.exp(..., mask=False) emits nothing
        # nl.zeros for res and kept_all, ps[:, :] = 0, the four nl.full; the lazily
        # initialised accumulator's zeros are folded into its first matmul
        # (acc[:, :] += ... views all of it)
        self.assertEqual(text.count("memset"), 7)

    def test_nc_version_and_scalar_load(self):
        a = np.arange(4, dtype=np.int32) * 7
        self.assertTrue(nisa.nc_version.gen2 < nisa.nc_version.gen3 < nisa.nc_version.gen4)
        for machine, gen in (("trn1", 2), ("trn2", 3)):
            out = nki.simulate_kernel(K.nc_generation, a, machine=machine)
            np.testing.assert_array_equal(out, [[gen * 10 + (gen >= 3), 14 + gen]])
        # a machine file that is not a preset: its generation is unknown, refused
        import json
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "..", "sim", "machines", "trn2.json")) as f:
            m = json.load(f)
        m["name"] = "custom_core"
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "custom.json")
            with open(path, "w") as f:
                json.dump(m, f)
            with self.assertRaises(nki.Unsupported) as cm:
                nki.simulate_kernel(K.nc_generation, a, machine=path, backend="functional")
        self.assertIn("nisa.get_nc_version on machine 'custom_core'", str(cm.exception))

    def test_streaming_causal_attention(self):
        # the forms together, in an online-softmax attention of this file's own
        q_t = f32(self.rng, 64, 512) / np.float32(8)
        k_t, v = f32(self.rng, 64, 512), f32(self.rng, 512, 64)
        out, _ = both(K.streaming_causal_attention, q_t, k_t, v)
        s = q_t.T.astype(np.float64) @ k_t
        s = np.where(np.tril(np.ones((512, 512), bool)), s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        ref = (p @ v) / p.sum(axis=1, keepdims=True)
        # fp32 matmuls of 64 and 256 terms, exp within 1 ulp, the rescaling of
        # the running sums: tens of eps of the magnitudes
        np.testing.assert_allclose(out, ref, rtol=0, atol=64 * EPS * np.abs(v).max())

    def test_random_numbers_refused(self):
        with self.assertRaises(nki.Unsupported) as cm:
            nki.simulate_kernel(K.uses_random_seed, np.zeros(1, np.int32), backend="functional")
        self.assertIn("nl.random_seed (the engines' random number generator", str(cm.exception))
        for name in ("dropout", "rand"):
            with self.assertRaises(nki.Unsupported):
                getattr(nl, name)(None)


class EntryPoints(unittest.TestCase):
    def test_call_benchmark_baremetal_trace(self):
        rng = np.random.default_rng(3)
        a, b = f32(rng, 256, 128), f32(rng, 256, 128)
        np.testing.assert_array_equal(K.add_rows[2](a, b), a + b)  # a direct call runs it
        np.testing.assert_array_equal(nki.baremetal(K.add_rows[2])(a, b), a + b)
        bench = nki.benchmark(warmup=2, iters=5, save_neff_name="x.neff")(K.add_rows[2])
        bench(a, b)
        lat = bench.benchmark_result.nc_latency
        self.assertGreater(lat.get_latency_percentile(50), 0)
        self.assertEqual(lat.get_latency_percentile(99), lat.get_latency_percentile(50))
        _, run = nki.profile_kernel(K.add_rows[2], a, b, machine="trn1")
        self.assertEqual(run.machine, "trn1")
        with tempfile.TemporaryDirectory() as d:
            t = nki.trace(K.add_rows[2], a, b)
            path = os.path.join(d, "k.nxs")
            t.save(path)
            outs, _ = nxsim.exec_program(path, {"a": a, "b": b}, backend="functional")
            np.testing.assert_array_equal(outs["out0"], a + b)
            t.save(os.path.join(d, "k.nxb"))  # the container, too, with the same waits
            outs, run = nxsim.exec_program(os.path.join(d, "k.nxb"), {"a": a, "b": b}, race_check=True)
            np.testing.assert_array_equal(outs["out0"], a + b)
            self.assertTrue(run.race_checked)

    def test_baremetal_grid_and_static_cast_of_arrays(self):
        # the public flash-attention test's calls: nl.static_cast of NumPy
        # arrays before the launch, baremetal(kernel)[grid] run directly and
        # handed to simulate_kernel
        a64 = np.random.default_rng(5).standard_normal((256, 128))
        a = nl.static_cast(a64, nl.float32)
        self.assertEqual(a.dtype, np.float32)
        np.testing.assert_array_equal(a, a64.astype(np.float32))
        h = nl.static_cast(a, nl.bfloat16)
        self.assertEqual(h.dtype, nxsim.bf16)
        self.assertEqual(h.tobytes(), nxsim.to_bf16(a).tobytes())  # round to nearest even
        run = nki.baremetal(K.add_rows)
        np.testing.assert_array_equal(run[2](a, a), a + a)
        np.testing.assert_array_equal(nki.simulate_kernel(run[2], a, a, backend="functional"), a + a)
        np.testing.assert_array_equal(nki.simulate_kernel(nki.simulate(K.add_rows)[2], a, a), a + a)

    def test_benchmark_on_typed_arguments(self):
        # nki.benchmark(...)(kernel) called with nki.typing.tensor[[shape],
        # dtype] instead of arrays (the public profiling example's form): the
        # inputs get deterministic pseudo-random values, the latency is set
        import nxsim.nki.typing as nt
        bench = nki.benchmark(save_neff_name="file.neff", save_trace_name="profile.ntff")(K.add_rows)
        out = bench(nt.tensor[[128, 64], nl.float32], nt.tensor[[128, 64], nl.float32])
        self.assertEqual(out.shape, (128, 64))
        again = bench(nt.tensor[[128, 64], nl.float32], nt.tensor[[128, 64], nl.float32])
        np.testing.assert_array_equal(out, again)
        self.assertTrue(np.all(np.abs(out) < 2))
        self.assertGreater(bench.benchmark_result.nc_latency.get_latency_percentile(50), 0)
        with self.assertRaises(nki.KernelError):
            bench(nt.tensor[[128, 0], nl.float32], nt.tensor[[128, 64], nl.float32])

    def test_profile_names_kernel_lines(self):
        rng = np.random.default_rng(4)
        a, b = f32(rng, 128, 64), f32(rng, 128, 64)
        _, run = nki.profile_kernel(K.add_rows, a, b)
        rows = run.by_source()
        src, first = inspect.getsourcelines(K.add_rows.fn)
        store_line = first + next(i for i, s in enumerate(src) if "nl.store" in s)
        self.assertTrue(any(r["file"].endswith("nki_kernels.py") and r["line"] == store_line for r in rows), rows)
        with tempfile.TemporaryDirectory() as d:
            run.save_trace(os.path.join(d, "t.json"))
            with open(os.path.join(d, "t.json")) as f:
                self.assertIn("nki_kernels.py:%d" % store_line, f.read())


PUBLIC_NAMES_KERNEL = """
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
from neuronxcc.nki.typing import tensor

@nki.jit
def relu_rows(a_tensor: tensor):
    out = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a_tensor.shape[0] // 128):
        t = nl.load(a_tensor[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nisa.activation(op=nl.relu, data=t))
    return out
"""


class PublicNames(unittest.TestCase):
    def test_aliased_modules(self):
        """A kernel written against neuronxcc.nki runs with the names aliased by the user."""
        import types

        import nxsim.nki.typing

        saved = {k: sys.modules.get(k) for k in ("neuronxcc", "neuronxcc.nki", "neuronxcc.nki.language",
                                                 "neuronxcc.nki.isa", "neuronxcc.nki.typing", "public_kernel")}
        root = types.ModuleType("neuronxcc")
        root.nki = nki
        sys.modules.update({"neuronxcc": root, "neuronxcc.nki": nki, "neuronxcc.nki.language": nl,
                            "neuronxcc.nki.isa": nisa, "neuronxcc.nki.typing": nxsim.nki.typing})
        try:
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "public_kernel.py"), "w") as f:
                    f.write(PUBLIC_NAMES_KERNEL)
                sys.path.insert(0, d)
                try:
                    import public_kernel
                finally:
                    sys.path.remove(d)
                a = np.random.default_rng(5).standard_normal((256, 64)).astype(np.float32)
                out, _ = both(public_kernel.relu_rows, a)
                np.testing.assert_array_equal(out, np.maximum(a, 0))
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v


CLI_KERNEL = """
import numpy as np
import nxsim.nki as nki
import nxsim.nki.language as nl

@nki.jit
def halve(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), 0.5))
    return out

@nki.jit
def bad(a):
    t = nl.ndarray((129, 2), dtype=nl.float32, buffer=nl.sbuf)
    return t

def halve_ref(a):
    return a / 2

def wrong_ref(a):
    return a
"""


class Command(unittest.TestCase):
    def test_python_m_nxsim_nki(self):
        import subprocess

        with tempfile.TemporaryDirectory() as d:
            kf = os.path.join(d, "k.py")
            with open(kf, "w") as f:
                f.write(CLI_KERNEL)
            a = np.random.default_rng(2).standard_normal((128, 32)).astype(np.float32)
            np.save(os.path.join(d, "a.npy"), a)

            def run(*argv):
                return subprocess.run([sys.executable, "-m", "nxsim.nki"] + list(argv), cwd=d, capture_output=True,
                                      text=True, env=dict(os.environ))

            r = run("k.py:halve", "-i", "a.npy", "-o", "o.npy", "--by-source", "--check", "halve_ref", "--save",
                    "k.nxs")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("k.py:9 (halve)", r.stdout)
            self.assertIn("check result 0: ok", r.stdout)
            np.testing.assert_array_equal(np.load(os.path.join(d, "o.npy")), a * np.float32(0.5))
            outs, _ = nxsim.exec_program(os.path.join(d, "k.nxs"), {"a": a}, backend="functional")
            np.testing.assert_array_equal(outs["out0"], a * np.float32(0.5))
            r = run("k.py:halve", "-i", "a.npy", "--functional", "--check", "wrong_ref")
            self.assertEqual(r.returncode, 1)
            self.assertIn("FAILED", r.stdout)
            r = run("k.py:bad", "-i", "a.npy")
            self.assertEqual(r.returncode, 3)
            self.assertTrue(r.stderr.startswith("nxsim nki: %s:14: partition dimension 129" % kf), r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1)
            self.assertEqual(run("k.py", "-i", "a.npy").returncode, 2)


# ---- errors: one message starting with this file's line ----
def _line_of(fn, text):
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(src) if text in s)


@nki.jit
def big_tile_kept(a):
    """The same, but the first iteration's tile named by a second variable
    and used after its buffer went to the second's: refused at the use (a
    tile a list holds keeps its buffer: sbuf_overflow)."""
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    first = None
    for i in nl.affine_range(2):
        big = nl.zeros((2, nl.par_dim(128), 15360), dtype=nl.float32, buffer=nl.sbuf)
        if first is None:
            first = big
    nl.store(out, value=first[1, :, 0:512])  # ERR
    return out


@nki.jit
def add_missing_operand(a):
    x = nl.load(a)
    return nl.add(x)  # ERR


@nki.jit
def iota_newer_signature(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.iota(dst=t, pattern=[[1, 64]], offset=0)  # ERR
    return t


@nki.jit
def too_many_partitions(a):
    t = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)  # ERR
    return t


@nki.jit
def asserts_its_shape(a):
    assert a.shape[0] == 256, "needs 256 rows"  # ERR
    return a


@nki.jit
def psum_too_big(a):
    t = nl.zeros((128, 1024), dtype=nl.float32, buffer=nl.psum)  # ERR
    return t


@nki.jit
def out_of_bounds(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    x = nl.load(a[i_p, i_f + 8])  # ERR
    nl.store(out, x)
    return out


@nki.jit
def sbuf_overflow(a):
    keep = [nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf) for _ in range(4)]  # ERR
    return keep


@nki.jit
def matmul_from_psum(a):
    x = nl.load(a)
    p = nl.transpose(x)
    r = nisa.nc_matmul(p, x)  # ERR
    return r


@nki.jit
def unsupported_call(a):
    x = nl.load(a)
    y = nl.cumsum(x, axis=1)  # ERR
    return y


@nki.jit
def dma_transpose_3d(a):
    x = nl.load(a.reshape((128, 8, 8)))
    y = nisa.dma_transpose(x, axes=(2, 1, 0))  # ERR
    return y


@nki.jit
def partition_reduce_in_psum(a):
    y = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
    z = nisa.partition_all_reduce(np.add, y)  # ERR
    return z


@nki.jit
def engine_refuses(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    y = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
    z = nisa.tensor_copy(y, engine=nisa.gpsimd_engine)  # ERR
    nl.store(out, z)
    return out


@nki.jit
def int_matmul(a):
    x = nl.load(a)
    xi = nl.copy(x, dtype=nl.int32)
    r = nisa.nc_matmul(xi, xi)  # ERR
    out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


class Errors(unittest.TestCase):
    def check(self, kernel, cls, words, call=None):
        a = np.zeros((128, 64), np.float32)
        # caught here, not by assertRaises: it drops the traceback this checks
        try:
            if call is None:
                nki.simulate_kernel(kernel, a, backend="functional")
            else:
                call(a)
        except cls as e:
            raised, tb = e, e.__traceback__
        else:
            self.fail("%s raised nothing" % kernel)
        msg = str(raised)
        want = "%s:%d: " % (os.path.abspath(__file__), _line_of(kernel.fn, "# ERR"))
        self.assertTrue(msg.startswith(want), "%r does not start with %r" % (msg, want))
        for w in words:
            self.assertIn(w, msg)
        # raised from the entry point: the user's frames and one of nxsim's
        # (the entry point's), the kernel's own line among them
        frames = traceback.extract_tb(tb)
        package = os.path.dirname(os.path.abspath(nxsim.__file__)) + os.sep
        ours = [f for f in frames if os.path.abspath(f.filename).startswith(package)]
        self.assertEqual(len(ours), 1, [(f.filename, f.name) for f in frames])
        # below it, only the kernel's frames (a mistake found while tracing),
        # the innermost at the line; none for one found when the traced
        # program is checked (the message names the line)
        below = frames[frames.index(ours[0]) + 1:]
        self.assertTrue(all(os.path.abspath(f.filename) == os.path.abspath(__file__) for f in below), below)
        if below:
            self.assertEqual(below[-1].lineno, _line_of(kernel.fn, "# ERR"))
        self.assertIsInstance(raised, nxsim.Error)

    def test_reclaimed_tile_used(self):
        self.check(big_tile_kept, nki.KernelError, ["used after its buffer went to the tile this line allocates"])

    def test_partition_dim(self):
        self.check(too_many_partitions, nki.KernelError, ["partition dimension 256", "exceeds 128"])

    def test_entry_points_nested(self):
        # a jitted kernel called directly (its call runs simulate_kernel), on a
        # grid, through baremetal and benchmark: still one frame of nxsim
        words = ["partition dimension 256", "exceeds 128"]
        self.check(too_many_partitions, nki.KernelError, words, call=too_many_partitions)
        self.check(too_many_partitions, nki.KernelError, words, call=too_many_partitions[1])
        self.check(too_many_partitions, nki.KernelError, words, call=nki.baremetal(too_many_partitions))
        self.check(too_many_partitions, nki.KernelError, words, call=nki.benchmark(too_many_partitions))

    def test_kernel_assert(self):
        # the kernel's own assert: a KernelError naming its line, not a
        # traceback through the tracer
        self.check(asserts_its_shape, nki.KernelError, ["assertion failed: needs 256 rows"])

    def test_psum_bank(self):
        self.check(psum_too_big, nki.KernelError, ["PSUM tile of 4096 bytes", "2048-byte PSUM bank"])

    def test_out_of_bounds(self):
        self.check(out_of_bounds, nki.KernelError, ["index out of bounds", "dimension 1 takes 8..71, its size is 64"])

    def test_sbuf_capacity(self):
        self.check(sbuf_overflow, nki.KernelError, ["SBUF allocation of 65536 bytes", "does not fit"])

    def test_matmul_operand_buffer(self):
        self.check(matmul_from_psum, nki.KernelError, ["stationary is in psum", "reads SBUF"])

    def test_unsupported_by_name(self):
        self.check(unsupported_call, nki.Unsupported, ["nl.cumsum is not supported"])
        self.assertTrue(issubclass(nki.Unsupported, NotImplementedError))

    def test_wrong_arguments(self):
        # a call with the wrong arguments (a missing operand; the newer
        # package's iota(pattern, offset)) is the kernel's line, not a
        # TypeError out of nxsim's wrappers
        self.check(add_missing_operand, nki.KernelError, ["nl.add", "missing a required argument: 'y'"])
        self.check(iota_newer_signature, nki.KernelError, ["nisa.iota", "missing a required argument: 'expr'"])

    def test_refused_surface(self):
        self.check(dma_transpose_3d, nki.Unsupported, ["nisa.dma_transpose with axes=(2, 1, 0)"])
        self.check(partition_reduce_in_psum, nki.KernelError, ["reads SBUF only; data is in psum"])

    def test_dtype_an_engine_cannot_take(self):
        self.check(int_matmul, nki.KernelError, ["int32 is not a PE input type"])

    def test_engine_rule(self):
        # found by libnxsim's validation when the trace is assembled, named by the .src line
        self.check(engine_refuses, nki.KernelError, ["engine pool cannot read psum"])


if __name__ == "__main__":
    unittest.main()
