/* nxsim-bench moe-decode (also nxsim-bench-moe-decode): the moe_decode
 * composite (docs/parts/moe-decode.md) on MoE token-generation shapes
 * through the registry and the SystemC model (trn2 unless --machine), bf16:
 * Mixtral-like (H 4096, I 14336, E 8, top-2) at T = 1, 4, 8, 32 and DBRX-like
 * (H 6144, I 10752, E 16, top-4) at T = 1, 8, mode "selected", and the
 * Mixtral T = 4 case in mode "all". The routing is nxsim run's built-in one
 * (rules: k distinct experts per token drawn uniformly, affinities a
 * softmax over them). Prints the experts the routing names, the simulated
 * time, the weight-streaming bound (the bytes of those experts' three
 * matrices, or of all E for "all", over both cores' DMA rate capped by HBM,
 * bench/dma_bound.h), its share of the simulated time, the wall time of
 * the model's run and of the reference (nx_ref_moe_decode) and the check
 * (`ok` / `WRONG`). --quick: H 512, I 1024 (the ctest smoke). Figures only:
 * times never decide the exit status. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/composites.h"
#include "registry/prepare.h"
#include "sim/machine.h"

typedef struct md_case {
    const char *label;
    uint64_t T, H, I, E, k;
    int all;
} md_case;

typedef struct md_bounds_ctx {
    const nx_machine *m;
    double bytes, experts;
} md_bounds_ctx;

/* The experts the built-in routing (seed 1, the run's) names: the rules'
 * default values of operand 5. */
static void md_bounds(const nx_macro_op *op, uint32_t grid, void *ctx) {
    md_bounds_ctx *b = ctx;
    const uint64_t *w = op->operands[1].shape, T = op->operands[5].shape[0], K = op->operands[5].shape[1];
    const nx_value *mode = nx_attrs_get(&op->attrs, "mode");
    const int all = mode && mode->kind == NX_VAL_STRING && strcmp(mode->s, "all") == 0;
    const nx_composite *c = nx_composite_get(nx_composites(), "moe_decode");
    uint64_t used = 0;
    int32_t *idx = malloc(T * K * sizeof *idx);
    char *seen = calloc(w[0], 1);
    if (idx && seen && c && c->rules->default_values && c->rules->default_values(op, 5, idx, 1) == 1)
        for (uint64_t i = 0; i < T * K; i++)
            if (idx[i] >= 0 && (uint64_t)idx[i] < w[0] && !seen[idx[i]]) seen[idx[i]] = 1, used++;
    free(idx), free(seen);
    if (all) used = w[0];
    b->experts = (double)used;
    b->bytes = (double)used * 3.0 * (double)(w[1] * w[2]) * (double)nx_dtype_size(op->operands[1].dtype);
    (void)grid;
}

static int build_op(const md_case *c, nx_macro_op *op, nx_error *err) {
    nx_macro_op_init(op);
    const uint64_t x[2] = {c->T, c->H}, gu[3] = {c->E, c->H, c->I}, dn[3] = {c->E, c->I, c->H}, af[2] = {c->T, c->E},
                   ix[2] = {c->T, c->k};
    if (nx_macro_op_set_func_name(op, "moe_decode", err) != 0 ||
        nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err) != 0 ||
        nx_macro_op_add_operand(op, "w_gate", NX_DT_BF16, 3, gu, err) != 0 ||
        nx_macro_op_add_operand(op, "w_up", NX_DT_BF16, 3, gu, err) != 0 ||
        nx_macro_op_add_operand(op, "w_down", NX_DT_BF16, 3, dn, err) != 0 ||
        nx_macro_op_add_operand(op, "affinities", NX_DT_FP32, 2, af, err) != 0 ||
        nx_macro_op_add_operand(op, "indices", NX_DT_INT32, 2, ix, err) != 0)
        return -1;
    if (c->all) {
        nx_value v = {.kind = NX_VAL_STRING, .s = strdup("all")};
        if (!v.s || nx_attrs_set(&op->attrs, "mode", &v, err) != 0) return -1;
    }
    return 0;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-moe-decode [--quick] [--machine NAME|FILE] [--case LABEL]...\n"
          "Runs moe_decode (bf16; Mixtral-like H 4096 I 14336 E 8 k 2 at T 1, 4, 8, 32; DBRX-like H 6144\n"
          "I 10752 E 16 k 4 at T 1, 8; Mixtral T 4 in mode all) on the SystemC model (default trn2) against\n"
          "the bound of streaming the named experts' weights, and the reference's wall time. --case runs\n"
          "the cases whose label starts with LABEL. --quick: H 512, I 1024 (the ctest smoke).\n",
          f);
}

int nx_bench_moe_decode_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE | NX_BENCH_OPT_CASE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    static const md_case full[] = {
        {"mixtral T1", 1, 4096, 14336, 8, 2, 0},  {"mixtral T4", 4, 4096, 14336, 8, 2, 0},
        {"mixtral T8", 8, 4096, 14336, 8, 2, 0},  {"mixtral T32", 32, 4096, 14336, 8, 2, 0},
        {"mixtral T4 all", 4, 4096, 14336, 8, 2, 1},
        {"dbrx T1", 1, 6144, 10752, 16, 4, 0},     {"dbrx T8", 8, 6144, 10752, 16, 4, 0},
    };
    static const md_case quick[] = {
        {"quick T1", 1, 512, 1024, 8, 2, 0},
        {"quick T4", 4, 512, 1024, 8, 2, 0},
        {"quick T4 all", 4, 512, 1024, 8, 2, 1},
    };
    const md_case *cases = a.quick ? quick : full;
    const uint32_t n = a.quick ? 3 : (uint32_t)(sizeof full / sizeof full[0]);
    const double rate = nx_bench_dma_bytes_per_ns(&m, 2, m.geo.dma_engines);
    printf("%s: machine %s, two cores: DMA %.0f B/ns (bench/dma_bound.h)\n", argv[0], m.geo.name, rate);
    printf("%-16s %7s %12s %12s %8s %8s %8s %8s %s\n", "case", "experts", "sim_us", "stream_us", "of_bound", "sim_s",
           "ref_s", "sim/ref", "result");
    int status = 0;
    for (uint32_t i = 0; i < n; i++) {
        const md_case *c = &cases[i];
        int want = a.n_cases == 0;
        for (int q = 0; q < a.n_cases; q++) want |= strncmp(c->label, a.cases[q], strlen(a.cases[q])) == 0;
        if (!want) continue;
        nx_macro_op given;
        nx_error err;
        md_bounds_ctx ctx = {.m = &m};
        nx_bench_run run;
        int rc = build_op(c, &given, &err);
        if (rc == 0) rc = nx_bench_run_op(&given, &m, md_bounds, &ctx, &run, &err);
        nx_macro_op_free(&given);
        if (rc != 0) {
            printf("%-16s error: %s\n", c->label, err.msg);
            status = 1;
            continue;
        }
        const double bound = ctx.bytes / rate;
        printf("%-16s %7.0f %12.1f %12.1f %7.1f%% %8.2f %8.2f %8.2f %s\n", c->label, ctx.experts, run.sim_ns / 1e3,
               bound / 1e3, 100.0 * bound / run.sim_ns, run.sim_s, run.ref_s, run.ref_s > 0 ? run.sim_s / run.ref_s : 0.0,
               run.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!run.ok) status = 1;
    }
    printf("experts: those the routing names (all E for mode all); stream: their gate, up and down bytes /\n"
           "both cores' DMA rate (the weight-streaming bound); of_bound: its share of the simulated time.\n");
    return status;
}
