#!/bin/sh
# One command for the benchmarks: configures a Release build of nxsim (in
# $NXSIM_BENCH_BUILD, default ../build-bench beside the source tree), builds
# nxsim-bench and runs it with the given arguments, e.g.
#   bench/run.sh                      every case (a few minutes)
#   bench/run.sh --quick              the small smoke cases
#   bench/run.sh --case gemm --json gemm.json
# OpenBLAS's OPENBLAS_NUM_THREADS / OPENBLAS_CORETYPE are taken from the
# environment and printed by nxsim-bench.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${NXSIM_BENCH_BUILD:-$src/../build-bench}
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target nxsim_bench -j"${JOBS:-2}" >/dev/null
exec "$build/nxsim-bench" "$@"
