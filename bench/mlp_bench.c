/* nxsim-bench mlp (also nxsim-bench-mlp): the `mlp` composite
 * (kernels/mlp/mlp.h, docs/parts/mlp.md) in bf16 through the registry and
 * the SystemC model (trn2 unless --machine) on both cores of the VNC grid:
 *   Llama-3-8B MLP, H 4096, I 14336: T = 1, 8, 32 (decode), T = 2048 (prefill);
 *   a tensor-parallel shard of a 70B MLP, H 8192, I 3584: T = 8, 2048;
 *   and T = 32 of the 8B shape on the prefill plan (the tokens split across
 *   the cores instead of the weights: the comparison docs/parts/mlp.md
 *   makes), T = 128 (the decode plan's largest) and T = 512 (prefill).
 * Prints per case the simulated time; its bound: decode, the weight bytes
 * (3 H I) over the grid's DMA rate capped by HBM; prefill, the MACs (3 T H
 * I) on the grid's PE arrays at peak (bench/dma_bound.h); the ratio
 * (of_bound) beside the target (>= 80%); the wall time of the model's run
 * and of the rules' reference (kernels/ref/mlp_ref.c) and their ratio; and
 * whether the results are within the rules' tolerance. Figures only: times
 * never decide the exit status. --quick: small shapes (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"

typedef struct mlp_case {
    const char *label;
    uint64_t T, H, I;
    const char *plan; /* NULL: auto */
} mlp_case;

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-mlp [--quick] [--machine NAME|FILE]\n"
          "Runs the mlp composite (bf16, silu) on the Llama-3-8B shapes (H 4096, I 14336; T 1, 8, 32, 2048) and\n"
          "a 70B tensor-parallel shard (H 8192, I 3584; T 8, 2048) on the SystemC model (default trn2, both\n"
          "cores) against the weight-streaming bound (decode) or the PE peak (prefill) and the reference's\n"
          "wall time. --quick: small shapes (the ctest smoke run).\n",
          f);
}

static int run_case(const mlp_case *c, const nx_machine *m, nx_bench_run *r, nx_error *err) {
    nx_macro_op op;
    nx_macro_op_init(&op);
    const uint64_t x[2] = {c->T, c->H}, w[2] = {c->H, c->I}, wd[2] = {c->I, c->H};
    int rc = nx_macro_op_set_func_name(&op, "mlp", err) != 0 ||
             nx_macro_op_add_operand(&op, "x", NX_DT_BF16, 2, x, err) != 0 ||
             nx_macro_op_add_operand(&op, "w_gate", NX_DT_BF16, 2, w, err) != 0 ||
             nx_macro_op_add_operand(&op, "w_up", NX_DT_BF16, 2, w, err) != 0 ||
             nx_macro_op_add_operand(&op, "w_down", NX_DT_BF16, 2, wd, err) != 0;
    if (!rc && c->plan) {
        nx_value v = {.kind = NX_VAL_STRING, .s = strdup(c->plan)};
        rc = !v.s || nx_attrs_set(&op.attrs, "plan", &v, err) != 0;
        nx_value_free(&v);
    }
    if (!rc) rc = nx_bench_run_op(&op, m, NULL, NULL, r, err) != 0;
    nx_macro_op_free(&op);
    return rc ? -1 : 0;
}

int nx_bench_mlp_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    static const mlp_case full[] = {
        {"8B decode T=1", 1, 4096, 14336, NULL},      {"8B decode T=8", 8, 4096, 14336, NULL},
        {"8B decode T=32", 32, 4096, 14336, NULL},    {"8B T=32 tokens split", 32, 4096, 14336, "prefill"},
        {"8B decode T=128", 128, 4096, 14336, NULL},  {"8B prefill T=512", 512, 4096, 14336, NULL},
        {"8B prefill T=2048", 2048, 4096, 14336, NULL}, {"70B/8 decode T=8", 8, 8192, 3584, NULL},
        {"70B/8 prefill T=2048", 2048, 8192, 3584, NULL},
    };
    static const mlp_case quick[] = {{"decode T=8", 8, 1024, 2048, NULL}, {"prefill T=512", 512, 512, 1024, NULL}};
    const mlp_case *cases = a.quick ? quick : full;
    const size_t n = a.quick ? sizeof quick / sizeof *quick : sizeof full / sizeof *full;
    const uint32_t cores = m.geo.cores ? m.geo.cores : 1;
    printf("%s: machine %s, %u cores: DMA %.0f B/ns (HBM-capped), PE %ux%u at %.2f GHz each\n", argv[0], m.geo.name,
           cores, nx_bench_dma_bytes_per_ns(&m, cores, m.geo.dma_engines), m.geo.pe_rows, m.geo.pe_cols,
           m.clock_ghz[NX_ENG_PE]);
    printf("%-24s %11s %11s %5s %9s %7s %9s %9s %8s %s\n", "case", "sim_us", "bound_us", "of", "of_bound", "target",
           "sim_s", "ref_s", "sim/ref", "result");
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        const mlp_case *c = &cases[i];
        nx_error err;
        nx_bench_run r;
        if (run_case(c, &m, &r, &err) != 0) {
            printf("%-24s error: %s\n", c->label, err.msg);
            status = 1;
            continue;
        }
        const double wbytes = 3.0 * (double)c->H * (double)c->I * 2.0;
        const double dma = nx_bench_dma_bound_ns(&m, cores, wbytes);
        const double pe = nx_bench_pe_bound_ns(&m, 3.0 * (double)c->T * (double)c->H * (double)c->I, NX_DT_BF16) / cores;
        const int decode = c->T <= m.geo.pe_cols;
        const double bound = decode ? dma : pe;
        printf("%-24s %11.1f %11.1f %5s %8.1f%% %6s%% %9.3f %9.3f %8.2f %s\n", c->label, r.sim_ns / 1e3, bound / 1e3,
               decode ? "dma" : "pe", 100.0 * bound / r.sim_ns, ">=80", r.sim_s, r.ref_s,
               r.ref_s > 0 ? r.sim_s / r.ref_s : 0.0, r.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!r.ok) status = 1;
    }
    printf("of_bound: the bound's share of the simulated time; dma = the weights (3 H I x 2 bytes) over the grid's\n"
           "DMA engines capped by the shared HBM rate; pe = 3 T H I MACs on the grid's PE arrays at peak; sim_s:\n"
           "wall time of nx_run_op (trace and model); ref_s: the rules' reference on the same operands.\n");
    return status;
}
