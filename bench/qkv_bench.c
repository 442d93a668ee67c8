/* nxsim-bench qkv (also nxsim-bench-qkv): the `qkv` composite
 * (kernels/qkv/qkv.h, docs/parts/qkv.md) on the Llama-3-8B-like QKV
 * projection of the production roster, bf16, through the registry and the
 * SystemC model (trn2 unless --machine) on both cores of the VNC grid:
 * H 4096, 32 q heads, 8 kv heads, d 128, fused RMSNorm and RoPE, B 1, S =
 * 1, 8, 32 (the decode plan) and 2048 (prefill), layout bsd, and S = 2048
 * with layout heads. Prints per case the simulated time and its bound:
 * decode, the weight bytes over both cores' DMA rate capped by HBM
 * (bench/dma_bound.h: what streaming the weights once costs); prefill, the
 * projection's MACs on both cores' full PE arrays. Then of_bound beside the
 * target (>= 80%), the wall time of the model's run and of the rules'
 * reference (kernels/ref/qkv_ref.c, same operands) and their ratio, and
 * whether the results are within the rules' tolerance. Figures only: times
 * never decide the exit status. --quick: H 512, 8 q / 2 kv heads, d 64,
 * S = 1 and 512 (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"

typedef struct qkv_case {
    uint64_t S, H, nq, nkv, d;
    int heads;
} qkv_case;

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-qkv [--quick] [--machine NAME|FILE]\n"
          "Runs qkv (fused RMSNorm + QKV projection + RoPE, bf16) for H 4096, 32 q heads, 8 kv heads, d 128,\n"
          "B 1, S = 1, 8, 32 (decode: against the weight-streaming bound) and 2048 (prefill: against the PE\n"
          "bound) on the SystemC model (default trn2, both cores) beside the reference's wall time.\n"
          "--quick: small shapes (the ctest smoke run).\n",
          f);
}

static int run_case(const qkv_case *c, const nx_machine *m, nx_bench_run *r, nx_error *err) {
    const uint64_t N = (c->nq + 2 * c->nkv) * c->d;
    const uint64_t x[3] = {1, c->S, c->H}, w[2] = {c->H, N}, g[1] = {c->H}, cs[2] = {c->S, c->d / 2};
    nx_macro_op op;
    nx_macro_op_init(&op);
    nx_value nq = nx_value_int((int64_t)c->nq), nkv = nx_value_int((int64_t)c->nkv), hd = nx_value_int((int64_t)c->d),
             rope = nx_value_bool(1), layout = {.kind = NX_VAL_STRING, .s = strdup(c->heads ? "heads" : "bsd")};
    int rc = nx_macro_op_set_func_name(&op, "qkv", err) != 0 ||
                     nx_macro_op_add_operand(&op, "x", NX_DT_BF16, 3, x, err) != 0 ||
                     nx_macro_op_add_operand(&op, "w", NX_DT_BF16, 2, w, err) != 0 ||
                     nx_macro_op_add_operand(&op, "gamma", NX_DT_BF16, 1, g, err) != 0 ||
                     nx_macro_op_add_operand(&op, "cos", NX_DT_BF16, 2, cs, err) != 0 ||
                     nx_macro_op_add_operand(&op, "sin", NX_DT_BF16, 2, cs, err) != 0 ||
                     nx_attrs_set(&op.attrs, "n_q_heads", &nq, err) != 0 ||
                     nx_attrs_set(&op.attrs, "n_kv_heads", &nkv, err) != 0 ||
                     nx_attrs_set(&op.attrs, "head_dim", &hd, err) != 0 || nx_attrs_set(&op.attrs, "rope", &rope, err) != 0 ||
                     nx_attrs_set(&op.attrs, "layout", &layout, err) != 0 || nx_bench_run_op(&op, m, NULL, NULL, r, err) != 0
                 ? -1
                 : 0;
    nx_value_free(&layout);
    nx_macro_op_free(&op);
    return rc;
}

int nx_bench_qkv_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    static const qkv_case full[] = {{1, 4096, 32, 8, 128, 0},    {8, 4096, 32, 8, 128, 0}, {32, 4096, 32, 8, 128, 0},
                                    {2048, 4096, 32, 8, 128, 0}, {2048, 4096, 32, 8, 128, 1}};
    static const qkv_case quick[] = {{1, 512, 8, 2, 64, 0}, {512, 512, 8, 2, 64, 1}};
    const qkv_case *cases = a.quick ? quick : full;
    const size_t n = a.quick ? sizeof quick / sizeof *quick : sizeof full / sizeof *full;
    const uint32_t cores = m.geo.cores ? m.geo.cores : 1;
    printf("%s: machine %s, %u cores: PE %ux%u at %.2f GHz each, DMA %.0f B/ns (both cores, HBM-capped)\n", argv[0],
           m.geo.name, cores, m.geo.pe_rows, m.geo.pe_cols, m.clock_ghz[NX_ENG_PE],
           nx_bench_dma_bytes_per_ns(&m, cores, m.geo.dma_engines));
    printf("%-34s %10s %10s %6s %9s %7s %9s %9s %8s %s\n", "case", "sim_us", "bound_us", "by", "of_bound", "target",
           "sim_s", "ref_s", "sim/ref", "result");
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        const qkv_case *c = &cases[i];
        const uint64_t N = (c->nq + 2 * c->nkv) * c->d;
        const int decode = c->S <= m.geo.partitions;
        char label[80];
        snprintf(label, sizeof label, "S=%llu H=%llu %llu/%llu/%llu %s", (unsigned long long)c->S,
                 (unsigned long long)c->H, (unsigned long long)c->nq, (unsigned long long)c->nkv,
                 (unsigned long long)c->d, c->heads ? "heads" : "bsd");
        nx_error err;
        nx_bench_run r;
        if (run_case(c, &m, &r, &err) != 0) {
            printf("%-34s error: %s\n", label, err.msg);
            status = 1;
            continue;
        }
        const double wbytes = (double)c->H * (double)N * 2.0, macs = (double)c->S * (double)c->H * (double)N;
        const double bound = decode ? nx_bench_dma_bound_ns(&m, cores, wbytes)
                                    : nx_bench_pe_bound_ns(&m, macs, NX_DT_BF16) / cores;
        printf("%-34s %10.1f %10.1f %6s %8.1f%% %6s%% %9.3f %9.3f %8.2f %s\n", label, r.sim_ns / 1e3, bound / 1e3,
               decode ? "DMA" : "PE", 100.0 * bound / r.sim_ns, ">=80", r.sim_s, r.ref_s,
               r.ref_s > 0 ? r.sim_s / r.ref_s : 0.0, r.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!r.ok) status = 1;
    }
    printf("of_bound: the bound's share of the simulated time. Decode (S <= 128): the weight bytes over both cores'\n"
           "DMA engines capped by HBM; prefill: the projection's MACs on both cores' full PE arrays. sim_s: wall\n"
           "time of nx_run_op (trace and model); ref_s: the rules' reference on the same operands.\n");
    return status;
}
