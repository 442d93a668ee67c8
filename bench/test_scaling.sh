#!/usr/bin/env bash
# nxsim-bench-scaling (ctest bench_scaling_smoke): the quick sizes run with
# every value checked ("ok" on each of the 12 rows), --out-dir creating its
# directory, the plot holding exactly the table's "rel" column (3 series of 4
# points), and a bad --out-dir refused with one line, exit 2, before any run.
# Usage: test_scaling.sh NXSIM_BENCH_SCALING TMPDIR
source "$(dirname "$0")/../tests/cli/lib.sh" "$@"
export OPENBLAS_NUM_THREADS=1

expect 0 "--quick" --quick --out-dir "$T/plots/a"
rows=$(grep -cE '^(gemm bf16|dve chain|tiled_pf_transpose fp32 grid 2) +[0-9^]+ .* ok$' "$T/out")
[ "$rows" -eq 12 ] && pass || fail "$rows rows ok, expected 12"
stdout_has_line "plot: $T/plots/a/scaling.svg"
# the rel column (second-to-last field of each row) against the plot's markers, in order
awk '/ ok$/ { print $(NF - 1) }' "$T/out" >"$T/rel.table"
grep -o 'data-value="[^"]*"' "$T/plots/a/scaling.svg" | sed 's/data-value="\(.*\)"/\1/' |
    awk '{ printf "%.2f\n", $1 }' >"$T/rel.plot"
[ "$(wc -l <"$T/rel.plot")" -eq 12 ] && pass || fail "the plot has $(wc -l <"$T/rel.plot") markers, expected 12"
same_file "$T/rel.table" "$T/rel.plot"
# each series' last point is its own reference (rel 1.00)
[ "$(awk 'NR % 4 == 0' "$T/rel.table" | sort -u)" = "1.00" ] && pass || fail "the largest sizes are not rel 1.00"

touch "$T/plain"
expect 2 "--out-dir under a file" --quick --out-dir "$T/plain/sub"
stderr_is "nxsim-bench-scaling: --out-dir $T/plain/sub: $T/plain is not a directory"
[ -s "$T/out" ] && fail "--out-dir under a file: printed on stdout" || pass
expect 2 "--out-dir empty" --quick --out-dir ""
stderr_is "nxsim-bench-scaling: --out-dir '': empty path"

echo "bench_scaling_smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
