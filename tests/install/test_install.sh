#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then a program outside the tree
# (tests/install/example.c) built against the installed nxsim twice: with
# pkg-config and with find_package(nxsim) (tests/install/consumer/); both
# binaries run and must print a transposition with no differing element.
# Also checks that the installed tree holds what docs/parts/install.md says.
#
# Then the installed Python package, on PYTHONPATH, runs a registry leaf on
# NumPy arrays and must match NumPy.
#
# Usage: test_install.sh BUILD_DIR TMPDIR [EXTRA_CFLAGS [PYTHON3]]
#   EXTRA_CFLAGS: flags the external build needs too (the sanitizer build's
#   -fsanitize=..., since the library is instrumented).
#   PYTHON3: an interpreter with NumPy ("" or absent: that part is skipped)
set -u
build=$1 T=$2 extra=${3:-} py=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$T" && mkdir -p "$T"
P=$T/prefix
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

cmake --install "$build" --prefix "$P" >"$T/install.log" 2>&1 || { cat "$T/install.log"; echo "FAIL: cmake --install"; exit 1; }
for f in bin/nxsim lib/libnxsim.so lib/libnxsim.so.0 include/nxsim/nxsim.h include/nxsim/version.h \
         lib/pkgconfig/nxsim.pc lib/cmake/nxsim/nxsimConfig.cmake lib/cmake/nxsim/nxsimTargets.cmake \
         share/nxsim/machines/trn1.json share/nxsim/machines/trn2.json share/man/man1/nxsim.1 \
         share/doc/nxsim/README.md share/doc/nxsim/docs/ISA.md lib/python3/dist-packages/nxsim/__init__.py \
         lib/python3/dist-packages/nxsim/_paths.py; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
"$P/bin/nxsim" --version | grep -qx 'nxsim [0-9.]*' || fail "installed nxsim --version"

cflags="-std=c11 -Wall -Wextra -Werror $extra"
# 1. pkg-config
export PKG_CONFIG_PATH=$P/lib/pkgconfig
if pc=$(pkg-config --cflags --libs nxsim); then
  # shellcheck disable=SC2086
  cc $cflags "$here/example.c" -o "$T/example-pc" $pc -Wl,-rpath,"$(pkg-config --variable=libdir nxsim)" \
    || fail "pkg-config build"
  out=$("$T/example-pc") && echo "pkg-config:    $out" || fail "pkg-config build: the program failed: $out"
  echo "$out" | grep -q ', 0 of 3840 elements differ$' || fail "pkg-config build printed '$out'"
else
  fail "pkg-config --cflags --libs nxsim"
fi
# 2. find_package
mkdir -p "$T/consumer"
if cmake -S "$here/consumer" -B "$T/consumer" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_FLAGS="$extra" \
     -DCMAKE_EXE_LINKER_FLAGS="$extra" >"$T/consumer.log" 2>&1 &&
   cmake --build "$T/consumer" >>"$T/consumer.log" 2>&1; then
  out=$("$T/consumer/example") && echo "find_package:  $out" || fail "find_package build: the program failed: $out"
  echo "$out" | grep -q ', 0 of 3840 elements differ$' || fail "find_package build printed '$out'"
else
  sed 's/^/    /' "$T/consumer.log" | tail -20
  fail "find_package build"
fi
# 3. the installed Python package
if [ -n "$py" ]; then
  out=$(PYTHONPATH=$P/lib/python3/dist-packages "$py" -c '
import numpy as np, nxsim
x = np.random.default_rng(0).standard_normal((200, 72)).astype(np.float32)
y, run = nxsim.run("tiled_pf_transpose", x, permutation=[1, 0])
assert nxsim.__file__.startswith("'"$P"'"), nxsim.__file__
assert np.array_equal(y, x.T)
print("python: %s matches numpy, %.3f us simulated" % (run.kernel, run.total_ns / 1000))') \
    && echo "$out" || fail "the installed Python package: $out"
fi
[ "$failed" -eq 0 ] && echo "test_install: ok"
[ "$failed" -eq 0 ]
