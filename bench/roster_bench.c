/* nxsim-bench roster (also nxsim-bench-roster): the row-wise composites of
 * docs/parts/norms.md on their benchmark shapes, through the registry (the
 * ops `nxsim run` would build: registry/prepare.h, registry/run/run.h) and
 * the SystemC model (trn2 unless --machine):
 *   rmsnorm   x [2048,4096] and [2048,8192], bf16 and fp32, gamma [H];
 *   layernorm X [2048,4096] and [2048,8192], bf16 and fp32, Scale and B [H];
 *   softmax   x [4096,4096] bf16;
 *   rope      x [1,32,2048,128] bf16, cos and sin [2048,64];
 *   cumsum    x [2048,8192] fp32;
 *   matmul    A [4096,4096] @ B [4096,4096] bf16;
 *   transpose data [64,128,256] perm [2,0,1], fp32 and bf16 (on the VNC(2)
 *             grid: bounded by the grid's DMA rate, "DMAx2").
 * Prints per case the simulated time, its bound (the memory-bound ones: the
 * bytes of every operand and result over one core's DMA rate; matmul: the
 * PE array's peak; bench/dma_bound.h), of_bound beside the target (>= 70%
 * memory-bound, >= 85% matmul), the wall time of the model's run and of
 * the rules' reference (kernels/ref/, in this process on the same
 * operands) and their ratio, and whether the results are within the rules'
 * tolerance (`ok` / `WRONG`). Figures only: times never decide the exit
 * status. --quick: small shapes (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/check.h"
#include "registry/prepare.h"
#include "registry/rules.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "wall_clock.h"

#define ROSTER_MAX_OPERANDS 3

typedef struct roster_operand {
    const char *name;
    uint32_t ndims;
    uint64_t shape[4];
} roster_operand;

typedef struct roster_case {
    const char *key; /* the composite: rmsnorm, layernorm, softmax, rope, cumsum, matmul */
    nx_dtype dt;
    uint32_t n_operands;
    roster_operand operand[ROSTER_MAX_OPERANDS];
    int pe_bound;    /* 1: bounded by the PE array (matmul), 0: by DMA */
    uint32_t nperm;  /* transpose: attribute perm */
    uint64_t perm[4];
    uint32_t cores;  /* the DMA bound's cores (0: 1) */
} roster_case;

typedef struct roster_result {
    double sim_ns, bound_ns, sim_s, ref_s;
    int ok;
} roster_result;

static uint64_t count(uint32_t nd, const uint64_t *s) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < nd; d++) n *= s[d];
    return n;
}

static int build_op(const roster_case *c, nx_macro_op *op, nx_error *err) {
    nx_macro_op_init(op);
    if (nx_macro_op_set_func_name(op, c->key, err) != 0) return -1;
    for (uint32_t i = 0; i < c->n_operands; i++)
        if (nx_macro_op_add_operand(op, c->operand[i].name, c->dt, c->operand[i].ndims, c->operand[i].shape, err) != 0)
            return -1;
    if (c->nperm && nx_attrs_set_int_list(&op->attrs, "perm", c->perm, c->nperm, err) != 0) return -1;
    return 0;
}

/* The rules' reference on the operands the run placed (made again from the
 * seed, as nx_run_op's --check does), timed, and each result compared under
 * the rules' tolerance. */
static int reference(const nx_prepared *p, const nx_run_result *res, uint64_t seed, double *ref_s, int *ok,
                     nx_error *err) {
    const nx_macro_op *op = &p->op;
    const nx_op_rules *rules = p->target.rules;
    if (!rules || !rules->reference) return nx_fail(err, "%s has no reference", op->func_name);
    uint8_t *bufs[2 * NX_OP_MAX_TENSORS] = {0};
    const void *ins[NX_OP_MAX_TENSORS] = {0};
    void *outs[NX_OP_MAX_TENSORS] = {0};
    uint32_t nb = 0;
    int rc = -1;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        const nx_tensor_decl *t = &res->prog->tensors[res->operand_tensor[i]];
        if (!(bufs[nb] = malloc(nx_tensor_bytes(t) + 1))) goto oom;
        nx_op_rules_fill_operand(rules, op, i, t, bufs[nb], seed, (uint32_t)res->operand_tensor[i]);
        ins[i] = bufs[nb++];
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        if (!(bufs[nb] = calloc(1, nx_tensor_bytes(&res->prog->tensors[res->result_tensor[j]]) + 1))) goto oom;
        outs[j] = bufs[nb++];
    }
    double t0 = nx_bench_now_s();
    if (rules->reference(op, ins, outs, err) != 0) goto done;
    *ref_s = nx_bench_now_s() - t0;
    *ok = 1;
    for (uint32_t j = 0; j < op->n_results; j++) {
        const nx_tensor_decl *t = &res->prog->tensors[res->result_tensor[j]];
        nx_tolerance tol;
        nx_check_result cr;
        if (nx_op_rules_tolerance(rules, op, j, &tol, err) != 0) goto done;
        nx_dtype dt = (nx_dtype)t->dtype;
        nx_check_compare(dt, res->results[j], outs[j], nx_tensor_bytes(t) / nx_dtype_size(dt), &tol, &cr);
        if (cr.bad) *ok = 0;
    }
    rc = 0;
    goto done;
oom:
    nx_fail(err, "out of memory for the reference of %s", op->func_name);
done:
    for (uint32_t k = 0; k < nb; k++) free(bufs[k]);
    return rc;
}

int nx_bench_run_op(const nx_macro_op *given, const nx_machine *m, nx_bench_bounds_fn bounds, void *ctx,
                    nx_bench_run *out, nx_error *err) {
    return nx_bench_run_op_inspect(given, m, bounds, NULL, ctx, out, err);
}

int nx_bench_run_op_inspect(const nx_macro_op *given, const nx_machine *m, nx_bench_bounds_fn bounds,
                            nx_bench_inspect_fn inspect, void *ctx, nx_bench_run *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    nx_prepared op;
    nx_prepared_init(&op);
    nx_run_result res;
    memset(&res, 0, sizeof res);
    nx_lowerer *L = nx_lowerer_new(&m->geo, NULL);
    int rc = -1;
    if (!L) {
        nx_fail(err, "out of memory");
        goto out;
    }
    if (nx_op_prepare(L, given, NULL, &op, err) != 0) goto out;
    /* operands: nx_run_op's pseudo-random values from the seed */
    nx_run_options opt = {.backend = NX_RUN_MODEL, .seed = 1, .keep_log = inspect != NULL};
    double t0 = nx_bench_now_s();
    if (nx_run_op(L, m, &op, NULL, &opt, &res, err) != 0) goto out;
    out->sim_s = nx_bench_now_s() - t0; /* the trace and the model's run */
    out->sim_ns = res.trace.sim.total_ns;
    out->grid = res.grid;
    if (reference(&op, &res, opt.seed, &out->ref_s, &out->ok, err) != 0) goto out;
    if (bounds) bounds(&op.op, res.grid, ctx);
    if (inspect) inspect(&res, ctx);
    rc = 0;
out:
    nx_run_result_free(&res);
    nx_lowerer_free(L);
    nx_prepared_free(&op);
    return rc;
}

typedef struct roster_bounds_ctx {
    const roster_case *c;
    const nx_machine *m;
    roster_result *r;
} roster_bounds_ctx;

static void roster_bounds(const nx_macro_op *op, uint32_t grid, void *ctx) {
    (void)grid;
    const roster_bounds_ctx *b = ctx;
    if (b->c->pe_bound) {
        const uint64_t *a = op->operands[0].shape, *bb = op->operands[1].shape;
        b->r->bound_ns = nx_bench_pe_bound_ns(b->m, (double)a[0] * (double)a[1] * (double)bb[1], b->c->dt);
        return;
    }
    double bytes = 0;
    for (uint32_t i = 0; i < op->n_operands; i++)
        bytes += (double)(count(op->operands[i].ndims, op->operands[i].shape) * nx_dtype_size(op->operands[i].dtype));
    for (uint32_t j = 0; j < op->n_results; j++)
        bytes += (double)(count(op->results[j].ndims, op->results[j].shape) * nx_dtype_size(op->results[j].dtype));
    b->r->bound_ns = nx_bench_dma_bound_ns(b->m, b->c->cores ? b->c->cores : 1, bytes);
}

static int run_case(const roster_case *c, const nx_machine *m, roster_result *r, nx_error *err) {
    memset(r, 0, sizeof *r);
    nx_macro_op given;
    roster_bounds_ctx ctx = {c, m, r};
    nx_bench_run run;
    int rc = build_op(c, &given, err) == 0 ? nx_bench_run_op(&given, m, roster_bounds, &ctx, &run, err) : -1;
    nx_macro_op_free(&given);
    if (rc != 0) return -1;
    r->sim_ns = run.sim_ns, r->sim_s = run.sim_s, r->ref_s = run.ref_s, r->ok = run.ok;
    return 0;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-roster [--quick] [--machine NAME|FILE]\n"
          "Runs rmsnorm and layernorm [2048,4096] and [2048,8192] (bf16, fp32), softmax [4096,4096]\n"
          "bf16, rope [1,32,2048,128] bf16, cumsum [2048,8192] fp32, matmul 4096^3 bf16 and transpose\n"
          "[64,128,256] perm [2,0,1] (fp32, bf16) on the\n"
          "SystemC model (default trn2) against their bounds and their references' wall time.\n"
          "--quick: small shapes (the ctest smoke run).\n",
          f);
}

/* The cases at rows R, hidden size H (matmul: M = K = N = H; rope: S = R,
 * head dimension 128 in 32 heads, or 2 in --quick). */
static uint32_t roster_cases(uint64_t R, uint64_t H, uint64_t heads, roster_case *out) {
    uint32_t n = 0;
    const uint64_t hs[2] = {H, 2 * H};
    const nx_dtype dts[2] = {NX_DT_BF16, NX_DT_FP32};
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < 2; d++)
            for (int h = 0; h < 2; h++)
                out[n++] = k == 0 ? (roster_case){"rmsnorm", dts[d], 2, {{"x", 2, {R, hs[h]}}, {"gamma", 1, {hs[h]}}}, 0, 0, {0}, 0}
                                  : (roster_case){"layernorm", dts[d], 3,
                                                  {{"X", 2, {R, hs[h]}}, {"Scale", 1, {hs[h]}}, {"B", 1, {hs[h]}}}, 0, 0, {0}, 0};
    out[n++] = (roster_case){"softmax", NX_DT_BF16, 1, {{"x", 2, {2 * R, H}}}, 0, 0, {0}, 0};
    out[n++] = (roster_case){"rope", NX_DT_BF16, 3,
                             {{"x", 4, {1, heads, R, 128}}, {"cos", 2, {R, 64}}, {"sin", 2, {R, 64}}}, 0, 0, {0}, 0};
    out[n++] = (roster_case){"cumsum", NX_DT_FP32, 1, {{"x", 2, {R, 2 * H}}}, 0, 0, {0}, 0};
    out[n++] = (roster_case){"matmul", NX_DT_BF16, 2, {{"A", 2, {H, H}}, {"B", 2, {H, H}}}, 1, 0, {0}, 0};
    for (int d = 0; d < 2; d++)
        out[n++] = (roster_case){"transpose", dts[1 - d], 1, {{"data", 3, {H / 64, R / 16, 256}}}, 0, 3, {2, 0, 1}, 2};
    return n;
}

static void shape_text(const roster_case *c, char *buf, size_t len) {
    const roster_operand *x = &c->operand[0];
    if (c->pe_bound) {
        snprintf(buf, len, "%s %llu^3", c->key, (unsigned long long)x->shape[0]);
        return;
    }
    int k = snprintf(buf, len, "%s [", c->key);
    for (uint32_t d = 0; d < x->ndims && k > 0 && (size_t)k < len; d++)
        k += snprintf(buf + k, len - (size_t)k, d ? ",%llu" : "%llu", (unsigned long long)x->shape[d]);
    if (k > 0 && (size_t)k < len) snprintf(buf + k, len - (size_t)k, "]");
}

int nx_bench_roster_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    roster_case cases[16];
    uint32_t n = a.quick ? roster_cases(256, 512, 2, cases) : roster_cases(2048, 4096, 32, cases);
    printf("%s: machine %s, one core: DMA %.0f B/ns (bench/dma_bound.h), PE %ux%u at %.2f GHz\n", argv[0], m.geo.name,
           nx_bench_core_dma_bytes_per_ns(&m), m.geo.pe_rows, m.geo.pe_cols, m.clock_ghz[NX_ENG_PE]);
    printf("%-26s %-5s %11s %11s %5s %9s %7s %9s %9s %8s %s\n", "case", "dtype", "sim_us", "bound_us", "by",
           "of_bound", "target", "sim_s", "ref_s", "sim/ref", "result");
    int status = 0;
    for (uint32_t i = 0; i < n; i++) {
        char label[64];
        shape_text(&cases[i], label, sizeof label);
        roster_result r;
        nx_error err;
        if (run_case(&cases[i], &m, &r, &err) != 0) {
            printf("%-26s %-5s error: %s\n", label, nx_dtype_name(cases[i].dt), err.msg);
            status = 1;
            continue;
        }
        printf("%-26s %-5s %11.1f %11.1f %5s %8.1f%% %6s%% %9.3f %9.3f %8.2f %s\n", label, nx_dtype_name(cases[i].dt),
               r.sim_ns / 1e3, r.bound_ns / 1e3, cases[i].pe_bound ? "PE" : cases[i].cores > 1 ? "DMAx2" : "DMA", 100.0 * r.bound_ns / r.sim_ns,
               cases[i].pe_bound ? ">=85" : ">=70", r.sim_s, r.ref_s, r.ref_s > 0 ? r.sim_s / r.ref_s : 0.0,
               r.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!r.ok) status = 1;
    }
    printf("of_bound: the bound's share of the simulated time (100%% = at the limit); DMA bound = the bytes of\n"
           "every operand and result / one core's DMA rate (DMAx2: the VNC(2) grid's); PE bound = M N K MACs on the full PE array;\n"
           "sim_s: wall time of nx_run_op (trace and model); ref_s: the rules' reference on the same operands.\n");
    return status;
}
