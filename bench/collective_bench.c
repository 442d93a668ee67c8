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
 * reference's (OpenBLAS). First the collectives themselves
 * (kernels/author/collective.h) on SBUF tiles [128 x 2048] and
 * [128 x 8192] fp32: simulated time beside two DMA fixed costs, the
 * barrier and the bytes over one core's DMA engines. Figures only: times
 * never decide the exit status; wrong values do. --quick: small shapes
 * (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "dma_bound.h"
#include "isa/builder.h"
#include "isa/state.h"
#include "kernels/author/collective.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"
#include "sim/model.h"

/* One collective on each of the two cores, traced and run on the model:
 * all_reduce of an SBUF tile [128 x C] fp32 in place, reduce_scatter of it
 * into its own share rows, all_gather of [64 x C] into a [128 x C] tile.
 * Its simulated time and the bytes each core moves through its DMA queues:
 * all_reduce stages the tile and reads the other's (2 tiles); reduce_scatter
 * half and half (1 tile); all_gather stages, copies its own rows into dst
 * and reads the other's (3 halves). */
static int coll_time(const nx_machine *m, nx_coll_kind kind, uint64_t C, double *ns, double *bytes, nx_error *err) {
    nx_builder *b = nx_builder_new(&m->geo, 2);
    if (!b) return nx_fail(err, "out of memory");
    nx_program prog;
    memset(&prog, 0, sizeof prog);
    int rc = -1;
    const uint64_t R = kind == NX_COLL_ALL_GATHER ? 64 : 128, T = 128 * C * 4;
    for (uint32_t pid = 0; pid < 2; pid++) {
        nx_kctx *k = nx_kctx_new_machine(b, m, pid, 2);
        nx_coll c;
        nx_tile t, d;
        if (!k) goto out;
        int bad = nx_coll_init(k, &c, "bench.coll", T, err) != 0 ||
                  nx_kctx_alloc(k, NX_OPK_SBUF, "src", NX_DT_FP32, (uint32_t)R, C, &t, err) != 0 ||
                  nx_kctx_alloc(k, NX_OPK_SBUF, "dst", NX_DT_FP32, 128, C, &d, err) != 0;
        nx_coll_buf src = nx_coll_tile(&t, 0, R, 0, C), dst = nx_coll_tile(&d, 0, 128, 0, C);
        if (!bad) {
            uint64_t lo, hi;
            nx_coll_share(k, pid, R, &lo, &hi);
            nx_coll_buf share = nx_coll_rows(&src, lo, hi - lo);
            bad = kind == NX_COLL_ALL_REDUCE   ? nx_coll_all_reduce(k, &c, &src, &src, err)
                  : kind == NX_COLL_ALL_GATHER ? nx_coll_all_gather(k, &c, &src, &dst, err)
                                               : nx_coll_reduce_scatter(k, &c, &src, &share, err);
            bad = bad || nx_kctx_finish(k, err) != 0;
        }
        nx_kctx_free(k);
        if (bad) goto out;
    }
    if (nx_builder_finish(b, &prog, err) != 0) goto out;
    nx_state st;
    if (nx_state_init(&st, &m->geo, 2, prog.hbm_bytes, prog.sem_count, err) != 0) goto out;
    nx_sim_options opt = {0, 0};
    nx_sim_result res;
    memset(&res, 0, sizeof res);
    rc = nx_sim_run(m, &prog, &st, &opt, &res, err);
    *ns = res.total_ns;
    *bytes = kind == NX_COLL_ALL_REDUCE ? 2.0 * T : kind == NX_COLL_ALL_GATHER ? 1.5 * T : 1.0 * T;
    nx_sim_result_free(&res);
    nx_state_free(&st);
out:
    nx_program_free(&prog);
    nx_builder_free(b);
    return rc;
}

static int collectives(const nx_machine *m, int quick) {
    static const char *const names[3] = {"all_reduce", "all_gather", "reduce_scatter"};
    static const uint64_t cols[2] = {2048, 8192};
    printf("%-16s %-14s %10s %11s %9s %9s %9s\n", "collective", "tile", "sim_us", "bytes/core", "dma_us", "chain_us",
           "of_bound");
    for (int c = 0; c < (quick ? 1 : 2); c++)
        for (int kind = 0; kind < 3; kind++) {
            double ns = 0, bytes = 0;
            nx_error err;
            char size[32];
            snprintf(size, sizeof size, "128x%llu fp32", (unsigned long long)cols[c]);
            if (coll_time(m, (nx_coll_kind)kind, cols[c], &ns, &bytes, &err) != 0) {
                printf("%-16s error: %s\n", names[kind], err.msg);
                return 1;
            }
            const double dma = nx_bench_dma_bound_ns(m, 1, bytes), chain = 2 * m->dma_fixed_ns + m->barrier_latency_ns;
            printf("%-16s %-14s %10.2f %11.0f %9.2f %9.2f %8.1f%%\n", names[kind], size, ns / 1e3, bytes, dma / 1e3,
                   chain / 1e3, 100.0 * (dma > chain ? dma : chain) / ns);
        }
    printf("bytes/core: through the core's DMA queues; dma_us: those bytes over one core's DMA engines\n"
           "(bench/dma_bound.h); chain_us: a staging transfer's fixed cost, the barrier latency, a read's fixed\n"
           "cost; of_bound: the larger of the two over the simulated time.\n\n");
    return 0;
}

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
    int status = collectives(&m, a.quick);
    printf("%-16s %-18s %10s %8s %11s %9s %10s %10s %8s %8s %s\n", "case", "kernel", "sim_us", "speedup", "pe_bound_us",
           "of_bound", "half_us", "exposed_us", "sim_s", "ref_s", "result");
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
