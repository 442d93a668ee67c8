#!/usr/bin/env bash
# The pip path (pyproject.toml, python/build_backend/nxsim_pep517.py): build the
# wheel from this source tree with build isolation and no index (offline),
# install it into a fresh venv, run an NKI kernel and the nxsim command from
# it. The wheel reuses this build tree (NXSIM_BUILD_DIR), so the test costs
# the packing, not a build. Usage: test_wheel.sh SOURCE_DIR BUILD_DIR PYTHON3
set -euo pipefail
src=$1 build=$2 py=$3
if ! "$py" -c "import venv, ensurepip" 2>/dev/null; then
  echo "NXSIM-SKIP: python3-venv is missing (apt-get install python3-venv, or scripts/setup.sh)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --system-site-packages: numpy comes from the system (python3-numpy); the
# wheel itself needs nothing beyond the standard library to install
# The system's pip (python3-pip) serves the venv when there is one: seeding
# the venv with its own pip (ensurepip) is most of this test's time otherwise.
if "$py" -c "import pip" 2>/dev/null; then
  "$py" -m venv --system-site-packages --without-pip "$tmp/v"
else
  "$py" -m venv --system-site-packages "$tmp/v"
fi
pip=("$tmp/v/bin/python" -m pip)
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CACHE_DIR="$tmp/cache"
NXSIM_BUILD_DIR="$build" NXSIM_BUILD_JOBS=1 "${pip[@]}" wheel -q -w "$tmp/wheels" "$src"
wheel=$(ls "$tmp"/wheels/nxsim-*.whl)
"${pip[@]}" install -q "$wheel"
cd "$tmp"
cat > kernel.py <<'PY'
import numpy as np
import nxsim
import nxsim.nki as nki
import nxsim.nki.language as nl

@nki.jit
def scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), 3.0))
    return out

a = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)
out, run = nki.profile_kernel(scale, a)
assert (out == a * np.float32(3.0)).all(), "wrong values"
assert run.total_ns > 0
assert "/site-packages/nxsim/_libs/" in nxsim._lib.path, nxsim._lib.path
print("wheel ok:", nxsim._lib.path, "%.3f us" % (run.total_ns / 1000))
PY
env -u PYTHONPATH -u NXSIM_LIBRARY "$tmp/v/bin/python" kernel.py
"$tmp/v/bin/nxsim" --version
# `nxsim nki` from the venv: the python3 beside the command, the package in
# its site-packages (cli/cmd_nki.c); values checked by the file's function
cat > nkicmd.py <<'PY'
import nxsim.nki as nki
import nxsim.nki.language as nl

@nki.jit
def scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), 3.0))
    return out

def scale_ref(a):
    return a * 3.0
PY
"$tmp/v/bin/python" -c "import numpy as np; np.save('a.npy', np.arange(128 * 16, dtype=np.float32).reshape(128, 16))"
env -u PYTHONPATH -u NXSIM_LIBRARY -u NXSIM_PYTHON "$tmp/v/bin/nxsim" nki nkicmd.py:scale -i a.npy --check scale_ref | tee nki.out
grep -q "^check result 0: ok" nki.out
