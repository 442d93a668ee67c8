/* nxsim-bench-data-movement: the two data-movement leaves on their
 * benchmark shapes (docs/parts/data-movement.md), on trn1 and trn2, through the registry (the ops `nxsim run` would
 * build) and the SystemC model:
 *   SelectAndScatter [8, 64, 112, 112] fp32, 3x3 window, stride 2, pad 1
 *     (the max-pool gradient of ResNet-50's stem);
 *   ResizeNearest 30x20 -> 59x38, C = 1280: batch 10 fp32, batch 1 bf16.
 * Prints per case: trace wall time, the wall time of the run (the model and
 * the reference check), simulated time, the
 * DMA/HBM bound of the machine description beside it and the achieved
 * fraction; each result (on nx_run_op's pseudo-random operands) is compared
 * with the family's reference and said
 * `ok` / `WRONG`. Figures only: times never decide the exit status.
 *
 * Bounds (bytes / min(dma_engines x dma_engine_bytes_per_ns, hbm_bytes_per_ns)
 * of one core):
 *   SelectAndScatter reads the operand and the source and writes the
 *   result once: (2 x operand + source) bytes;
 *   ResizeNearest gathers one source row per output pixel and writes it:
 *   2 x result bytes. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leaf_benches.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/prepare.h"
#include "registry/registry.h"
#include "registry/rules.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "wall_clock.h"
#include "dma_bound.h"

typedef struct bench_case {
    const char *label;
    const char *key;
    nx_dtype dt;
    uint32_t nops;
    uint64_t shape[2][4];
    int sas;           /* 1: SelectAndScatter, 0: ResizeNearest */
    uint64_t out[4];   /* ResizeNearest out_shape */
} bench_case;

static int build_op(const bench_case *c, nx_macro_op *op, nx_error *err) {
    nx_macro_op_init(op);
    if (nx_macro_op_set_func_name(op, c->key, err) != 0) return -1;
    static const char *const names[2] = {"operand", "source"};
    for (uint32_t i = 0; i < c->nops; i++)
        if (nx_macro_op_add_operand(op, c->sas ? names[i] : "data", c->dt, 4, c->shape[i], err) != 0) return -1;
    if (c->sas) {
        static const uint64_t win[4] = {1, 1, 3, 3}, st[4] = {1, 1, 2, 2}, flat[8] = {0, 0, 0, 0, 1, 1, 1, 1};
        if (nx_attrs_set_int_list(&op->attrs, "window_dimensions", win, 4, err) != 0 ||
            nx_attrs_set_int_list(&op->attrs, "window_strides", st, 4, err) != 0 || nx_attrs_set_int_list(&op->attrs, "padding", flat, 8, err) != 0)
            return -1;
    } else if (nx_attrs_set_int_list(&op->attrs, "out_shape", c->out, 4, err) != 0) {
        return -1;
    }
    return 0;
}

static uint64_t elems(const uint64_t *s) { return s[0] * s[1] * s[2] * s[3]; }

typedef struct bench_result {
    double trace_s, sim_s, sim_ns, bound_ns;
    uint64_t instructions;
    int ok;
} bench_result;

/* Traced first on its own (to time the trace), then run through nx_run_op
 * (a cache hit) with the reference check. */
static int run_case(const bench_case *c, const nx_machine *m, bench_result *r, nx_error *err) {
    memset(r, 0, sizeof *r);
    nx_macro_op given;
    nx_prepared op;
    nx_prepared_init(&op);
    nx_lowerer *L = NULL;
    int rc = -1;
    if (build_op(c, &given, err) != 0) goto out;
    L = nx_lowerer_new(&m->geo, NULL);
    if (!L) {
        nx_fail(err, "out of memory");
        goto out;
    }
    if (nx_op_prepare(L, &given, NULL, &op, err) != 0) goto out;
    double t0 = nx_bench_now_s();
    const nx_program *prog;
    if (nx_lower(L, &op.target, &op.op, &prog, NULL, err) != 0) goto out;
    r->trace_s = nx_bench_now_s() - t0;
    /* operands: nx_run_op's pseudo-random values in [-1, 1) from the seed */
    nx_run_options opt = {.backend = NX_RUN_MODEL, .check = 1, .seed = 1};
    nx_run_result res;
    t0 = nx_bench_now_s();
    if (nx_run_op(L, m, &op, NULL, &opt, &res, err) != 0) {
        nx_run_result_free(&res);
        goto out;
    }
    r->sim_s = nx_bench_now_s() - t0; /* the model's run plus the reference check */
    r->sim_ns = res.trace.sim.total_ns;
    r->instructions = res.trace.sim.instructions;
    r->ok = res.checked && res.check_failures == 0;
    uint64_t out_bytes = elems(op.op.results[0].shape) * nx_dtype_size(c->dt);
    nx_run_result_free(&res);

    double bytes = c->sas ? (double)(2 * elems(c->shape[0]) + elems(c->shape[1])) * (double)nx_dtype_size(c->dt)
                          : 2.0 * (double)out_bytes;
    double bw = nx_bench_core_dma_bytes_per_ns(m);
    r->bound_ns = bytes / bw;
    rc = 0;
out:
    nx_lowerer_free(L);
    nx_prepared_free(&op);
    nx_macro_op_free(&given);
    return rc;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-data-movement [--quick] [--machine NAME|FILE]\n"
          "Runs SelectAndScatter [8,64,112,112] fp32 (3x3, stride 2, pad 1) and ResizeNearest\n"
          "30x20 -> 59x38 with C = 1280 (batch 10 fp32, batch 1 bf16) on trn1 and trn2.\n"
          "--quick: small shapes (the ctest smoke run).\n",
          f);
}

int nx_bench_data_movement_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    int quick = a.quick;
    const char *only = a.machine;
    bench_case cases[3] = {
        {"SelectAndScatter 3x3/2 pad 1", "SelectAndScatter", NX_DT_FP32, 2,
         {{8, 64, 112, 112}, {8, 64, 56, 56}}, 1, {0}},
        {"ResizeNearest 30x20->59x38 b10", "ResizeNearest", NX_DT_FP32, 1, {{10, 30, 20, 1280}}, 0,
         {10, 59, 38, 1280}},
        {"ResizeNearest 30x20->59x38 b1", "ResizeNearest", NX_DT_BF16, 1, {{1, 30, 20, 1280}}, 0, {1, 59, 38, 1280}},
    };
    if (quick) {
        cases[0].shape[0][0] = cases[0].shape[1][0] = 1;
        cases[0].shape[0][1] = cases[0].shape[1][1] = 8;
        cases[0].shape[0][2] = cases[0].shape[0][3] = 12;
        cases[0].shape[1][2] = cases[0].shape[1][3] = 6;
        cases[1].shape[0][0] = cases[1].out[0] = 2;
        cases[1].shape[0][3] = cases[1].out[3] = 16;
        cases[2].shape[0][3] = cases[2].out[3] = 16;
    }
    const char *machines[2] = {"trn1", "trn2"};
    int nm = 2;
    if (only) {
        machines[0] = only;
        nm = 1;
    }
    int status = 0;
    printf("%-32s %-5s %-5s %9s %10s %12s %11s %9s %9s %s\n", "case", "dtype", "mach", "trace_s", "run_wall_s",
           "sim_us", "bound_us", "of_bound", "insns", "result");
    for (int mi = 0; mi < nm; mi++) {
        nx_error err;
        nx_machine m;
        if (nx_machine_load(machines[mi], &m, &err) != 0) {
            fprintf(stderr, "nxsim-bench-data-movement: %s\n", err.msg);
            return 2;
        }
        for (int ci = 0; ci < 3; ci++) {
            bench_result r;
            if (run_case(&cases[ci], &m, &r, &err) != 0) {
                printf("%-32s %-5s %-5s error: %s\n", cases[ci].label, nx_dtype_name(cases[ci].dt), m.geo.name, err.msg);
                status = 1;
                continue;
            }
            printf("%-32s %-5s %-5s %9.2f %10.2f %12.1f %11.1f %8.0f%% %9llu %s\n", cases[ci].label,
                   nx_dtype_name(cases[ci].dt), m.geo.name, r.trace_s, r.sim_s, r.sim_ns / 1e3, r.bound_ns / 1e3,
                   100.0 * r.bound_ns / r.sim_ns, (unsigned long long)r.instructions, r.ok ? "ok" : "WRONG");
            fflush(stdout);
            if (!r.ok) status = 1;
        }
    }
    printf("of_bound: the DMA/HBM bound's share of the simulated time (100%% = at the limit); bound = bytes moved\n"
           "once / min(DMA engines x engine rate, HBM) of one core; run_wall_s: the model's run and the\n"
           "reference check (nx_run_op).\n");
    return status;
}
