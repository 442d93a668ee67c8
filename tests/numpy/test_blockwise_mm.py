"""blockwise_mm (MoE prefill) against a numpy MoE."""
import numpy as np

import check
from harness import LeafCase, SWEEP
import models as M
import nxnp

# Disagreements found and reported, pinned so the suite stays green while
# they are open: case name -> what differs (docs/parts/numpy-check.md).
KNOWN = {

}


# ----------------------------------------------------------- blockwise_mm
class BlockwiseMM(LeafCase):
    """#10 blockwise_mm (MoE prefill) against a numpy MoE, tolerance from
    the error analysis in `tolerance`."""
    KEY = "blockwise_mm"

    def tolerance(self, out, parts, wgu, wd, H, I, dt, mode):
        """Per output element: the gate/up sums over H and the down sum over I
        in fp32 (gamma_n = (n + 1) u32 each, products included); PRE_SCALE's
        x a and h rounded to the PE's input dtype (u_in); silu on ACT within
        1 fp32 ulp (2 u32) and |silu'| <= 1.1; the POST_SCALE product (u32);
        each contribution rounded to the output dtype and their sum in it
        (u_out per contribution and per add); then the final value (u_out)."""
        u32, uin = nxnp.unit_roundoff("fp32"), nxnp.unit_roundoff(dt)
        gH, gI = (H + 1) * u32, (I + 1) * u32
        tol = np.zeros_like(out)
        for tok, lst in parts.items():
            mags = []
            for (x, e, g, u, h, a) in lst:
                ax = np.abs(x)
                dg = (gH + (uin if mode == "PRE_SCALE" else 0)) * (ax @ np.abs(wgu[e, :, 0, :]))
                du = (gH + (uin if mode == "PRE_SCALE" else 0)) * (ax @ np.abs(wgu[e, :, 1, :]))
                sg = np.abs(M.silu(g))
                dh = 1.1 * dg * (np.abs(u) + du) + (sg + 1.1 * dg) * du + (2 * u32 + uin + u32) * np.abs(h)
                habs = np.abs(h) + dh
                sc = abs(a) if mode == "POST_SCALE" else 1.0
                y = np.abs(h @ wd[e]) * sc
                tol[tok] += sc * (dh @ np.abs(wd[e]) + gI * (habs @ np.abs(wd[e]))) + (u32 + uin) * y
                mags.append(y)
            tol[tok] += uin * len(lst) * np.sum(mags, axis=0)
        return tol + uin * np.abs(out) + nxnp.tiny(dt)

    def bmm(self, name, T, H, I, E, B, tok_ids, b2e, dt, mode=None, aff_dt=None, hs=None, expect=None):
        rng = self.rng
        aff_dt = aff_dt or dt
        if hs is None:
            hs = nxnp.random_values(rng, (T + 1, H), dt)
        hs[T] = nxnp.random_values(rng, H, dt)       # the padding row must not matter
        aff = nxnp.random_values(rng, ((T + 1) * E, 1), aff_dt, 0, 1)
        wgu = nxnp.round_to(nxnp.random_values(rng, (E, H, 2, I), dt) / np.sqrt(H), dt)
        wd = nxnp.round_to(nxnp.random_values(rng, (E, I, H), dt) / np.sqrt(I), dt)
        tok_ids = np.asarray(tok_ids, np.int64)
        b2e = np.asarray(b2e, np.int64).reshape(-1, 1)
        m = mode or "POST_SCALE"
        out, parts = M.blockwise_mm(hs, aff, wgu, wd, tok_ids, b2e, B, m)
        tol = self.tolerance(out, parts, wgu, wd, H, I, dt, m)
        attrs = {"block_size": B}
        if mode:
            attrs["expert_affinities_scaling_mode"] = mode
        inputs = [nxnp.encode(hs, dt), nxnp.encode(aff, aff_dt), nxnp.encode(wgu, dt), nxnp.encode(wd, dt),
                  nxnp.encode(tok_ids, "int32"), nxnp.encode(b2e, "int32")]

        def compare(outs):
            got = outs[0]
            if got is None or nxnp.dtype_name(got) != dt:
                return "result %s, expected dtype %s" % (None if got is None else nxnp.dtype_name(got), dt)
            msg = check.within(nxnp.decode(got), out, tol, "output")
            if msg is None and expect is not None:
                msg = check.within(nxnp.decode(got), expect(hs, aff, wgu, wd), tol, "dense MoE")
            return msg
        self.run_case("%s %s %s" % (name, dt, m), self.KEY, inputs, attrs, compare)

    def test_routing_example(self):
        # the contract's worked routing example (docs/parts/kernels.md): B = 2, block_to_expert [0,0,1,2],
        # token_position_to_id [0,2,4,-1,1,5,3,-1]
        for dt in ("fp32", "bf16"):
            for mode in (None, "PRE_SCALE", "NO_SCALE"):
                self.bmm("routing_example", 6, 40, 24, 3, 2, [0, 2, 4, -1, 1, 5, 3, -1], [0, 0, 1, 2], dt, mode)

    def test_dense_moe_identity(self):
        """A top-2 MoE computed densely (token by token over its two experts)
        equals blockwise_mm over the routing that groups tokens by expert."""
        rng = self.rng
        T, H, I, E, B = 37, 72, 40, 4, 8
        for dt, pad in (("fp32", -1), ("bf16", T)):
            choice = np.array([rng.choice(E, 2, replace=False) for _ in range(T)])
            ids, b2e = [], []
            for e in range(E):
                toks = [t for t in range(T) if e in choice[t]]
                for s in range(0, max(len(toks), 1), B):
                    blk = toks[s:s + B]
                    ids += blk + [pad] * (B - len(blk))
                    b2e.append(e)

            def dense(hs, aff, wgu, wd, choice=choice):
                out = np.zeros((T + 1, H))
                for t in range(T):
                    for e in choice[t]:
                        x = hs[t]
                        out[t] += (M.silu(x @ wgu[e, :, 0, :]) * (x @ wgu[e, :, 1, :])) @ wd[e] * aff[t * E + e, 0]
                return out
            self.bmm("dense_moe_top2", T, H, I, E, B, ids, b2e, dt, expect=dense)

    def test_shapes(self):
        rng = self.rng
        cases = [
            # name, T, H, I, E, B, NB
            ("E1_B1", 5, 16, 8, 1, 1, 7),
            ("odd_sizes", 29, 130, 67, 3, 5, 6),
            ("wide_H", 9, 600, 20, 2, 4, 3),
            ("B_129", 150, 24, 16, 2, 129, 2),
        ]
        for i in range(1 + SWEEP):
            big = i % 3 == 2
            cases.append(("random%d" % i, int(rng.integers(1, 600 if big else 60)),
                          int(rng.integers(1, 2200 if big else 200)), int(rng.integers(1, 400 if big else 100)),
                          int(rng.integers(1, 9 if big else 5)), int(rng.integers(1, 300 if big else 20)),
                          int(rng.integers(1, 6))))
        for i, (name, T, H, I, E, B, NB) in enumerate(cases):
            ids = rng.integers(-1, T + 1, size=NB * B)                # repeats, -1 and T padding
            b2e = rng.integers(-1 if i % 2 else 0, E, size=NB)        # a block without an expert
            dt = ("fp32", "bf16")[i % 2]
            self.bmm(name, T, H, I, E, B, ids, b2e, dt, (None, "PRE_SCALE", "NO_SCALE")[i % 3],
                     aff_dt=("fp32", "bf16", "fp16")[i % 3])
        self.bmm("all_padding_blocks", 4, 16, 8, 2, 3, [-1, 4, -1, 4, 4, -1], [0, 1], "fp32")
        self.bmm("ids_and_experts_out_of_range", 5, 16, 8, 2, 2, [0, 99, -7, 2 ** 31 - 1, 3, 1], [0, 5, -3], "fp32")
        self.bmm("same_token_twice_in_a_block", 6, 32, 16, 2, 4, [1, 1, 3, 1, 2, 2, 2, 5], [1, 1], "fp32")
