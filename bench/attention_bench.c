/* nxsim-bench attention (also nxsim-bench-attention): the `attention`
 * composite (kernels/attention/flash.h, docs/parts/attention.md) on the
 * context-encoding shapes of its plan, bf16, through the registry and the
 * SystemC model (trn2 unless --machine) on both cores of the VNC grid:
 *   1 x 32 heads x 4096 x 128 causal, 1 x 8 x 16384 x 128 causal,
 *   1 x 8 x 4096 x 256 causal and not.
 * Prints per case the simulated time, the PE bound (2 x 128 x 128 x D MACs
 * per 128 x 128 (query, key) tile the masks leave at least one visible
 * pair in: the tiles above the diagonal and outside the window do not
 * count; on the grid's cores together; bench/dma_bound.h), of_bound beside
 * the target (>= 60%), the wall time of the model's run and of the rules'
 * reference (kernels/ref/attention_ref.c, same operands) and their ratio,
 * and whether the results are within the rules' tolerance. Figures only:
 * times never decide the exit status. --quick: small shapes (the ctest
 * smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "dma_bound.h"
#include "kernels/attention/flash.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"

typedef struct attn_case {
    uint64_t B, H, S, D;
    int causal;
} attn_case;

/* MACs of the 128 x 128 tiles with a visible pair (QK^T and PV). */
static double pe_macs(const attn_case *c) {
    nx_attention_params p = {.B = c->B, .Hq = c->H, .Hkv = c->H, .Sq = c->S, .Skv = c->S, .D = c->D,
                             .causal = c->causal};
    double tiles = 0;
    for (uint64_t r0 = 0; r0 < p.Sq; r0 += 128) {
        uint64_t r1 = r0 + 128 < p.Sq ? r0 + 128 : p.Sq;
        for (uint64_t k0 = 0; k0 < p.Skv; k0 += 128) {
            int any = 0;
            for (uint64_t r = r0; r < r1 && !any; r++) {
                int64_t lo, hi;
                nx_attention_keys(&p, r, &lo, &hi);
                any = lo < (int64_t)(k0 + 128) && hi > (int64_t)k0;
            }
            tiles += any;
        }
    }
    return tiles * 2.0 * 128 * 128 * (double)c->D * (double)(c->B * c->H);
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-attention [--quick] [--machine NAME|FILE]\n"
          "Runs attention (flash, bf16) 1x32x4096x128 causal, 1x8x16384x128 causal and 1x8x4096x256\n"
          "(causal and not) on the SystemC model (default trn2, both cores) against the PE bound\n"
          "and the reference's wall time. --quick: small shapes (the ctest smoke run).\n",
          f);
}

int nx_bench_attention_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    static const attn_case full[] = {
        {1, 32, 4096, 128, 1}, {1, 8, 16384, 128, 1}, {1, 8, 4096, 256, 1}, {1, 8, 4096, 256, 0}};
    static const attn_case quick[] = {{1, 2, 1024, 128, 1}, {1, 2, 512, 256, 0}};
    const attn_case *cases = a.quick ? quick : full;
    const size_t n = a.quick ? sizeof quick / sizeof *quick : sizeof full / sizeof *full;
    const uint32_t cores = m.geo.cores ? m.geo.cores : 1;
    printf("%s: machine %s, %u cores: PE %ux%u at %.2f GHz each\n", argv[0], m.geo.name, cores, m.geo.pe_rows,
           m.geo.pe_cols, m.clock_ghz[NX_ENG_PE]);
    printf("%-30s %11s %11s %9s %7s %9s %9s %8s %s\n", "case", "sim_us", "pe_bound_us", "of_bound", "target",
           "sim_s", "ref_s", "sim/ref", "result");
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        const attn_case *c = &cases[i];
        char label[64];
        snprintf(label, sizeof label, "%llux%llux%llux%llu %s", (unsigned long long)c->B, (unsigned long long)c->H,
                 (unsigned long long)c->S, (unsigned long long)c->D, c->causal ? "causal" : "full");
        nx_macro_op op;
        nx_macro_op_init(&op);
        nx_error err;
        const uint64_t shape[4] = {c->B, c->H, c->S, c->D};
        nx_value cv = nx_value_bool(c->causal);
        nx_bench_run r;
        int rc = nx_macro_op_set_func_name(&op, "attention", &err) != 0 ||
                         nx_macro_op_add_operand(&op, "q", NX_DT_BF16, 4, shape, &err) != 0 ||
                         nx_macro_op_add_operand(&op, "k", NX_DT_BF16, 4, shape, &err) != 0 ||
                         nx_macro_op_add_operand(&op, "v", NX_DT_BF16, 4, shape, &err) != 0 ||
                         nx_attrs_set(&op.attrs, "causal", &cv, &err) != 0 || nx_bench_run_op(&op, &m, NULL, NULL, &r, &err) != 0
                     ? -1
                     : 0;
        nx_macro_op_free(&op);
        if (rc != 0) {
            printf("%-30s error: %s\n", label, err.msg);
            status = 1;
            continue;
        }
        double bound = nx_bench_pe_bound_ns(&m, pe_macs(c), NX_DT_BF16) / cores;
        printf("%-30s %11.1f %11.1f %8.1f%% %6s%% %9.3f %9.3f %8.2f %s\n", label, r.sim_ns / 1e3, bound / 1e3,
               100.0 * bound / r.sim_ns, ">=60", r.sim_s, r.ref_s, r.ref_s > 0 ? r.sim_s / r.ref_s : 0.0,
               r.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!r.ok) status = 1;
    }
    printf("of_bound: the PE bound's share of the simulated time; PE bound = the MACs of the 128x128 tiles with a\n"
           "visible pair (Q K^T and P V) on the grid's full PE arrays; sim_s: wall time of nx_run_op (trace and\n"
           "model); ref_s: the rules' reference on the same operands.\n");
    return status;
}
