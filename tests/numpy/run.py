#!/usr/bin/env python3
"""The independent numpy cross-check of every registry leaf through
`nxsim run` (issues 10-14: "an independent script compares each leaf with
numpy on cases it makes up, public ONNX/XLA cases among them";
docs/parts/numpy-check.md).

Each case: random inputs (or a published example) written as .npy, the leaf
run by `nxsim run KEY -i ... -o ... -a ...` on the SystemC model with
--race-check and on the functional executor, the result compared with the
numpy model of models.py (written from the public operator definitions,
never from nxsim's code or kernels/ref): exactly for data movement, within
a bound derived from the dtypes and the contraction length otherwise
(check.sum_tolerance).

Usage: run.py --nxsim build/nxsim [--workdir DIR] [unittest arguments, e.g.
the family ConvDense]. Environment:
  NXSIM_NUMPY_SWEEP=N   add N random cases per leaf (the big sweep; manual)
  NXSIM_NUMPY_SEED=S    seed of the random cases (default 20240611)
  NXSIM_NUMPY_MODES=... comma list of run modes (default race,functional;
                        also model = SystemC without the race detector)
  NXSIM_NUMPY_EXTRA=... more nxsim run options for every case (e.g.
                        "--machine trn1")
  NXSIM_NUMPY_KEEP=1    keep every case's directory, not only failing ones
A failing case keeps its .npy inputs and cmd.txt under the work directory
and names them in the failure message.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy  # noqa: F401
except ImportError:
    sys.exit("run.py: %s has no numpy (apt-get install -y python3-numpy: /usr/bin/python3's)" % sys.executable)
import harness  # noqa: E402
import test_blockwise_mm  # noqa: E402
import test_cli  # noqa: E402
import test_conv  # noqa: E402
import test_data_movement  # noqa: E402
import test_topk  # noqa: E402

if __name__ == "__main__":
    harness.main([test_conv, test_data_movement, test_blockwise_mm, test_topk, test_cli])
