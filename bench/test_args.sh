#!/usr/bin/env bash
# nxsim-bench's command line (ctest bench_args): options, one-line errors with
# exit status 2 before any case runs, --trace-dir creating its directory,
# NXSIM_MM_KERNEL forcing (or refusing) a PE matmul kernel, the header naming
# the kernel and the build; --threads and NXSIM_THREADS.
# Usage: test_args.sh NXSIM_BENCH TMPDIR
source "$(dirname "$0")/../tests/cli/lib.sh" "$@"
export OPENBLAS_NUM_THREADS=1
SMALL=(--quick --case gemm-256x512x1024-bf16)

# expect_error DESCRIPTION MESSAGE ARGS...: exit 2, exactly MESSAGE on one line, nothing on stdout
expect_error() {
    local what=$1 msg=$2
    shift 2
    run "$@"
    if [ "$rc" -ne 2 ]; then fail "$what: exit $rc, expected 2"; return; fi
    if [ "$(cat "$T/err")" != "$msg" ]; then fail "$what: stderr '$(cat "$T/err")', expected '$msg'"; return; fi
    if [ -s "$T/out" ]; then fail "$what: printed on stdout"; return; fi
    pass
}

expect 0 "--help" --help
grep -q '^usage: nxsim-bench' "$T/out" && grep -q NXSIM_MM_KERNEL "$T/out" && pass || fail "--help text"

expect_error "unknown option" \
    "nxsim-bench: unknown option '--bogus' (nxsim-bench --help lists the options)" --bogus
expect_error "missing value" \
    "nxsim-bench: option '--case' needs a value (nxsim-bench --help lists the options)" --quick --case
expect_error "stray argument" \
    "nxsim-bench: unexpected argument 'gemm' (nxsim-bench --help lists the options)" --quick gemm
expect_error "no such case" \
    "nxsim-bench: no case matches (nxsim-bench --help lists the options)" --quick --case nosuch
# the leaf benches are cases of nxsim-bench with their options parsed in one place
expect_error "a leaf case's unknown option" \
    "nxsim-bench-conv: unknown option '--bogus' (nxsim-bench-conv --help lists the options)" conv --bogus
expect_error "an option the case does not take" \
    "nxsim-bench-transpose: unknown option '--quick' (nxsim-bench-transpose --help lists the options)" transpose --quick
expect_error "a leaf case's missing value" \
    "nxsim-bench-moe: option '--case' needs a value (nxsim-bench-moe --help lists the options)" moe --case
expect_error "a leaf case's --case" \
    "nxsim-bench-topk: --case expects ROWS,VOCAB,K with 1 <= K <= VOCAB" --case topk/1,2
expect 0 "a leaf case's --help" depthwise --help
grep -q '^Usage: nxsim-bench-depthwise' "$T/out" && pass || fail "depthwise --help text"
NXSIM_MM_KERNEL=avx3 expect_error "unknown kernel" \
    "nxsim-bench: NXSIM_MM_KERNEL: unknown matmul kernel 'avx3' (one of avx512, avx2, vector, scalar)" "${SMALL[@]}"

# --trace-dir: created with its parents; the trace is written there
expect 0 "--trace-dir creates the directory" "${SMALL[@]}" --trace-dir "$T/traces/a/b"
[ -s "$T/traces/a/b/gemm-256x512x1024-bf16.json" ] && pass || fail "no trace in the created directory"
: >"$T/plain"
expect_error "--trace-dir under a file" \
    "nxsim-bench: --trace-dir $T/plain/sub: $T/plain is not a directory" "${SMALL[@]}" --trace-dir "$T/plain/sub"
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$T/ro" && chmod 0555 "$T/ro"
    expect_error "--trace-dir not writable" \
        "nxsim-bench: --trace-dir $T/ro: cannot write there: Permission denied" "${SMALL[@]}" --trace-dir "$T/ro"
fi

# NXSIM_MM_KERNEL forces the kernel; the header says which, and the build
NXSIM_MM_KERNEL=scalar expect 0 "scalar kernel" "${SMALL[@]}" --json "$T/scalar.json"
grep -q '^PE matmul kernel: scalar (NXSIM_MM_KERNEL=scalar)$' "$T/out" && pass || fail "header lacks the forced kernel"
grep -q '^build: ' "$T/out" && pass || fail "header lacks the build"
grep -q '"pe_kernel":[[:space:]]*"scalar"' "$T/scalar.json" && pass || fail "JSON lacks the kernel"
expect 0 "default kernel" "${SMALL[@]}"
grep -q '^PE matmul kernel: [a-z0-9]* (NXSIM_MM_KERNEL=unset)$' "$T/out" && pass || fail "header lacks the kernel"

# --threads / NXSIM_THREADS: bad counts refused before any case; the header
# names the count and OpenBLAS runs as many threads; the same values
expect_error "--threads 0" \
    "nxsim-bench: --threads '0': must be a thread count in [1, 64] (nxsim-bench --help lists the options)" \
    "${SMALL[@]}" --threads 0
NXSIM_THREADS=two expect_error "NXSIM_THREADS=two" \
    "nxsim-bench: NXSIM_THREADS 'two': must be a thread count in [1, 64] (nxsim-bench --help lists the options)" \
    "${SMALL[@]}"
expect 0 "--threads 2" "${SMALL[@]}" --threads 2 --json "$T/threads.json"
grep -q '^threads: 2 for the model' "$T/out" && pass || fail "header lacks the thread count"
grep -q '^OpenBLAS .*, 2 threads (as --threads' "$T/out" && pass || fail "OpenBLAS not on 2 threads"
grep -q '"threads":[[:space:]]*2' "$T/threads.json" && pass || fail "JSON lacks the thread count"
grep -q 'values: .*: right$' "$T/out" && pass || fail "values on 2 threads"
NXSIM_THREADS=3 expect 0 "NXSIM_THREADS=3" "${SMALL[@]}"
grep -q '^threads: 3 for the model.*NXSIM_THREADS=3)$' "$T/out" && pass || fail "header lacks NXSIM_THREADS"

echo "bench_args: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
