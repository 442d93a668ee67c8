/* nxsim-bench collective (also nxsim-bench-collective): the
 * `collective_matmul` composite (kernels/collective/collective_matmul.h,
 * docs/parts/collectives.md) on the VNC grid's two cores beside the same
 * product on one core through the `matmul` composite, in the same process,
 * bf16, trn2 unless --machine: 2048 x 8192 x 2048 and 4096 x 4096 x 4096.
 * Per case: the one-core matmul's simulated time, collective_matmul's with
 * each exchange plan (reduce_scatter 1 and 0), the speedup, the PE bound of
 * two cores (M N K MACs over both PE arrays, bench/dma_bound.h) and the
 * share of it reached, and the all-reduce's exposed time: collective_matmul's
 * time less one core's share of the work alone (the matmul composite on
 * A [M, K/2] x B [K/2, N], no exchange). Sim wall time beside the
 * reference's (OpenBLAS). Figures only: times never decide the exit
 * status; wrong values do. --quick: small shapes (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"

static int run(const nx_machine *m, const char *func, uint64_t M, uint64_t K, uint64_t N, int scatter,
               nx_bench_run *r, nx_error *err) {
    nx_macro_op op;
    nx_macro_op_init(&op);
    const uint64_t a[2] = {M, K}, b[2] = {K, N};
    nx_value v = nx_value_int(scatter);
    int rc = nx_macro_op_set_func_name(&op, func, err) != 0 ||
                     nx_macro_op_add_operand(&op, "A", NX_DT_BF16, 2, a, err) != 0 ||
                     nx_macro_op_add_operand(&op, "B", NX_DT_BF16, 2, b, err) != 0 ||
                     (scatter >= 0 && nx_attrs_set(&op.attrs, "reduce_scatter", &v, err) != 0) ||
                     nx_bench_run_op(&op, m, NULL, NULL, r, err) != 0
                 ? -1
                 : 0;
    nx_macro_op_free(&op);
    return rc;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-collective [--quick] [--machine NAME|FILE]\n"
          "Runs collective_matmul (K split over the two cores, bf16) 2048x8192x2048 and 4096x4096x4096\n"
          "beside the matmul composite on one core, on the SystemC model (default trn2), against the\n"
          "PE bound of two cores; prints the exposed time of the exchange. --quick: small shapes.\n",
          f);
}

int nx_bench_collective_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    static const uint64_t full[][3] = {{2048, 8192, 2048}, {4096, 4096, 4096}};
    static const uint64_t quick[][3] = {{256, 1024, 512}};
    const uint64_t(*cases)[3] = a.quick ? quick : full;
    const size_t n = a.quick ? 1 : 2;
    const uint32_t cores = m.geo.cores ? m.geo.cores : 1;
    printf("%s: machine %s, %u cores: PE %ux%u at %.2f GHz each\n", argv[0], m.geo.name, cores, m.geo.pe_rows,
           m.geo.pe_cols, m.clock_ghz[NX_ENG_PE]);
    printf("%-16s %-18s %10s %8s %11s %9s %10s %10s %8s %8s %s\n", "case", "kernel", "sim_us", "speedup", "pe_bound_us",
           "of_bound", "half_us", "exposed_us", "sim_s", "ref_s", "result");
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t M = cases[i][0], K = cases[i][1], N = cases[i][2];
        char label[48];
        snprintf(label, sizeof label, "%llux%llux%llu", (unsigned long long)M, (unsigned long long)K,
                 (unsigned long long)N);
        nx_error err;
        nx_bench_run one, half, r;
        if (run(&m, "matmul", M, K, N, -1, &one, &err) != 0 || run(&m, "matmul", M, K / 2, N, -1, &half, &err) != 0) {
            printf("%-16s error: %s\n", label, err.msg);
            status = 1;
            continue;
        }
        const double bound = nx_bench_pe_bound_ns(&m, (double)M * N * K, NX_DT_BF16) / cores;
        printf("%-16s %-18s %10.1f %8s %11.1f %8.1f%% %10s %10s %8.3f %8.3f %s\n", label, "matmul (1 core)",
               one.sim_ns / 1e3, "1.00", 2 * bound / 1e3, 100.0 * 2 * bound / one.sim_ns, "", "", one.sim_s, one.ref_s,
               one.ok ? "ok" : "WRONG");
        for (int scatter = 1; scatter >= 0; scatter--) {
            if (run(&m, "collective_matmul", M, K, N, scatter, &r, &err) != 0) {
                printf("%-16s error: %s\n", label, err.msg);
                status = 1;
                continue;
            }
            printf("%-16s %-18s %10.1f %8.2f %11.1f %8.1f%% %10.1f %10.1f %8.3f %8.3f %s\n", label,
                   scatter ? "collective (r-s)" : "collective (a-r)", r.sim_ns / 1e3, one.sim_ns / r.sim_ns,
                   bound / 1e3, 100.0 * bound / r.sim_ns, half.sim_ns / 1e3, (r.sim_ns - half.sim_ns) / 1e3, r.sim_s,
                   r.ref_s, r.ok ? "ok" : "WRONG");
            if (!r.ok) status = 1;
        }
        if (!one.ok) status = 1;
        fflush(stdout);
    }
    printf("pe_bound: M N K MACs on the PE arrays of the cores the kernel uses (1 for matmul, %u for collective);\n"
           "half_us: matmul on one core of A [M, K/2] x B [K/2, N] (one core's share, no exchange); exposed_us:\n"
           "collective's time less half_us (the exchange the multiplies did not hide); r-s: each core owns half of\n"
           "every tile's rows (reduce-scatter); a-r: every tile all-reduced. sim_s: wall time of the trace and model\n"
           "run; ref_s: the reference (OpenBLAS) on the same operands.\n",
           cores);
    return status;
}
