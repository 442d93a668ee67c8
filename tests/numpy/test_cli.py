"""`nxsim run` driven by a hostile-but-reasonable user."""
import os

import harness
from harness import LeafCase, zeros
import nxnp
from test_conv import CONV_LEAVES

# Disagreements found and reported, pinned so the suite stays green while
# they are open: case name -> what differs (docs/parts/numpy-check.md).
KNOWN = {}


# ------------------------------------------------------- the command
BMM_OK = [zeros("fp32", 5, 16), zeros("fp32", 10, 1), zeros("fp32", 2, 16, 2, 8), zeros("fp32", 2, 8, 16),
          zeros("int32", 4), zeros("int32", 2, 1)]
K3 = CONV_LEAVES["#3"].key
# A hostile-but-reasonable user: (name, key, inputs, attrs, exit codes
# allowed, text the one-line error must contain).
BAD_INPUTS = [
    ("conv filter in-features", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 4, 3, 4)], {}, (3,), "operand 1"),
    ("conv one operand", K3, [zeros("fp32", 5, 3, 6, 2)], {}, (3,), "1"),
    ("conv int8", K3, [zeros("int8", 5, 3, 6, 2), zeros("int8", 3, 3, 3, 4)], {}, (3,), "int8"),
    ("conv mixed dtypes", K3, [zeros("fp32", 5, 3, 6, 2), zeros("bf16", 3, 3, 3, 4)], {}, (3,), "operand 1"),
    ("conv unknown attribute", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"strides": [2, 2]},
     (3,), "strides"),
    ("conv stride 0", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"stride": [0, 1]}, (3,),
     "stride"),
    ("conv stride not a list", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"stride": "two"},
     (3,), "stride"),
    ("conv padding one pair", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)], {"padding": [[1, 1]]},
     (3,), "padding"),
    ("conv huge padding", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"padding": [[10 ** 9, 10 ** 9], [0, 0]]}, (3,), "out"),
    ("conv crop everything", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"padding": [[-10 ** 9, 0], [0, 0]]}, (3,), "padding"),
    ("conv window larger than input", K3, [zeros("fp32", 2, 3, 2, 2), zeros("fp32", 3, 3, 3, 4)], {}, (3,),
     "window"),
    ("conv out_shape wrong", CONV_LEAVES["#6"].key, [zeros("fp32", 1, 4, 1, 10), zeros("fp32", 4, 1, 1, 3)],
     {"out_shape": [1, 4, 1, 9]}, (3,), "out_shape"),
    ("conv lhs_dilation on #3", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"lhs_dilation": [2, 1]}, (3,), "lhs_dilation"),
    ("conv groups not dividing", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"feature_group_count": 2}, (3,), "feature_group_count"),
    ("depthwise other group count", CONV_LEAVES["#9"].key, [zeros("fp32", 1, 4, 5, 5), zeros("fp32", 4, 1, 3, 3)],
     {"feature_group_count": 2}, (3,), "feature_group_count"),
    ("depthwise batch 2 on #9", CONV_LEAVES["#9"].key, [zeros("fp32", 2, 4, 5, 5), zeros("fp32", 4, 1, 3, 3)],
     {}, (3,), "operand 0"),
    ("attribute JSON malformed", K3, [zeros("fp32", 5, 3, 6, 2), zeros("fp32", 3, 3, 3, 4)],
     {"stride": nxnp.RawAttr("[2,")}, (2,), "stride"),
    ("sas window missing", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 2, 2)], {}, (3,),
     "window_dimensions"),
    ("sas window rank 3", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 2, 2]}, (3,), "window_dimensions"),
    ("sas source shape", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 3, 2)],
     {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2]}, (3,), "operand 1"),
    ("sas unknown attribute", "SelectAndScatter", [zeros("fp32", 1, 1, 4, 4), zeros("fp32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2], "windw_strides": [1, 1, 1, 1]}, (3,),
     "windw_strides"),
    ("sas integer dtype", "SelectAndScatter", [zeros("int32", 1, 1, 4, 4), zeros("int32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2]}, (3,), "int32"),
    ("sas window over C", "SelectAndScatter", [zeros("fp32", 1, 2, 4, 4), zeros("fp32", 1, 1, 2, 2)],
     {"window_dimensions": [1, 2, 2, 2], "window_strides": [1, 1, 2, 2]}, (3,), "window_dimensions"),
    ("sas rank 2", "SelectAndScatter", [zeros("fp32", 4, 2), zeros("fp32", 2, 2)],
     {"window_dimensions": [3, 1], "window_strides": [2, 1]}, (3,), "operand 0"),
    ("resize no size", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {}, (3,), "out_shape"),
    ("resize huge output", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"out_shape": [1, 100000, 100000, 2]},
     (3,), "out"),
    ("resize huge scale", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"scales": [1, 1e30, 2, 1]}, (3,),
     "scales"),
    ("resize changes C", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"out_shape": [1, 8, 8, 3]}, (3,),
     "out_shape"),
    ("resize bad nearest_mode", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)],
     {"out_shape": [1, 8, 8, 2], "nearest_mode": "up"}, (3,), "nearest_mode"),
    ("resize unknown attribute", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)],
     {"out_shape": [1, 8, 8, 2], "mode": "linear"}, (3,), "mode"),
    ("resize scale 0", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)], {"scales": [1, 0, 2, 1]}, (3,), "scales"),
    ("resize scales and size disagree", "ResizeNearest", [zeros("fp32", 1, 4, 4, 2)],
     {"scales": [1, 2, 2, 1], "out_shape": [1, 9, 8, 2]}, (3,), "out_shape"),
    ("resize rank 3", "ResizeNearest", [zeros("fp32", 4, 4, 2)], {"out_shape": [8, 8, 2]}, (3,), "operand 0"),
    ("transpose not a swap", "tiled_pf_transpose", [zeros("fp32", 3, 4, 5)], {"permutation": [1, 0, 2]}, (3,),
     "permutation"),
    ("transpose repeated dim", "tiled_pf_transpose", [zeros("fp32", 3, 4)], {"permutation": [1, 1]}, (3,),
     "permutation"),
    ("transpose unknown attribute", "tiled_dve_transpose_10", [zeros("fp32", 3, 4)], {"perm": [1, 0]}, (3,),
     "perm"),
    ("transpose two operands", "tiled_dve_transpose_10", [zeros("fp32", 3, 4), zeros("fp32", 3, 4)], {}, (3,),
     "2"),
    ("bmm block_size missing", "blockwise_mm", BMM_OK, {}, (3,), "block_size"),
    ("bmm unknown attribute", "blockwise_mm", BMM_OK, {"block_size": 2, "scaling_mode": "POST_SCALE"}, (3,),
     "scaling_mode"),
    ("bmm bad scaling mode", "blockwise_mm", BMM_OK, {"block_size": 2, "expert_affinities_scaling_mode": "post"},
     (3,), "expert_affinities_scaling_mode"),
    ("bmm block_size 0", "blockwise_mm", BMM_OK, {"block_size": 0}, (3,), "block_size"),
    ("bmm positions not whole blocks", "blockwise_mm", BMM_OK, {"block_size": 3}, (3,), "block_size"),
    ("bmm ids not int32", "blockwise_mm", BMM_OK[:4] + [zeros("fp32", 4), BMM_OK[5]], {"block_size": 2}, (3,),
     "operand 4"),
    ("bmm five operands", "blockwise_mm", BMM_OK[:5], {"block_size": 2}, (3,), "6"),
    ("bmm fp16", "blockwise_mm", [zeros("fp16", 5, 16), BMM_OK[1], zeros("fp16", 2, 16, 2, 8),
                                  zeros("fp16", 2, 8, 16)] + BMM_OK[4:], {"block_size": 2}, (3,), "fp16"),
    ("bmm weights of the wrong H", "blockwise_mm", BMM_OK[:2] + [zeros("fp32", 2, 15, 2, 8)] + BMM_OK[3:],
     {"block_size": 2}, (3,), "operand 2"),
]


def npy_header(d):
    h = repr(d).encode()
    h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h


BAD_NPY = [
    ("npy shape overflows 64 bits", npy_header({"descr": "<f4", "fortran_order": False, "shape": (2 ** 62, 4)}),
     "shape"),
    ("npy truncated", npy_header({"descr": "<f4", "fortran_order": False, "shape": (1000,)}) + bytes(64),
     "truncated"),
    ("npy empty dim", npy_header({"descr": "<f4", "fortran_order": False, "shape": (0, 3)}), "dim"),
    ("npy float64", npy_header({"descr": "<f8", "fortran_order": False, "shape": (2, 2)}) + bytes(32), "<f8"),
    ("npy big-endian", npy_header({"descr": ">f4", "fortran_order": False, "shape": (2, 2)}) + bytes(16), ">f4"),
    ("npy not npy", b"hello world", "npy"),
]


class Cli(LeafCase):
    """`nxsim run` as a hostile-but-reasonable user drives it: every bad
    input gets a one-line error naming the input and the problem, the
    documented exit code, no output file; and every key's default op passes
    its own --check."""

    def test_bad_inputs(self):
        for name, key, inputs, attrs, codes, text in BAD_INPUTS:
            self.refuse(name, key, inputs, attrs, codes, text)

    def test_bad_npy_files(self):
        for name, raw, text in BAD_NPY:
            self.refuse(name, "tiled_pf_transpose", [zeros("fp32", 2, 2)], {}, (3,), text, raw_inputs=raw)

    def test_output_path(self):
        x = zeros("fp32", 3, 4)
        for name, where, text in [("output in a missing directory", "nodir/out.npy", "nodir"),
                                  ("output is a directory", "", "")]:
            r = self.runner.run("tiled_pf_transpose", [x], mode="functional")
            argv = [a for a in r.argv if not a.endswith("out0.npy") and a != "-o"] + ["-o", os.path.join(r.dir, where)]
            proc = nxnp.subprocess.run(argv, capture_output=True, text=True, timeout=120)
            lines = proc.stderr.strip().splitlines()
            with self.subTest(case=name):
                self.assertEqual(proc.returncode, 1, " ".join(argv))
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertTrue(lines[0].startswith("nxsim: ") and text in lines[0], lines[0])
                self.assertFalse(os.path.exists(os.path.join(r.dir, "nodir")))
            r.cleanup()

    def test_default_ops_check(self):
        """`nxsim run KEY --check` on the built-in default op of every
        registered key (issues 10-14, "How it will be checked")."""
        proc = nxnp.subprocess.run([harness.NXSIM, "list"], capture_output=True, text=True, timeout=60)
        keys = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.strip()[:1].isdigit()]
        self.assertGreaterEqual(len(keys), 10, proc.stdout)
        for key in keys:
            p = nxnp.subprocess.run([harness.NXSIM, "run", key, "--check"], capture_output=True, text=True, timeout=600)
            with self.subTest(key=key):
                self.assertEqual(p.returncode, 0, "nxsim run %s --check: %s" % (key, p.stderr.strip()))
                self.assertIn(": ok", p.stdout)
