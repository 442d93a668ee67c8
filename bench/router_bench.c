/* nxsim-bench router (also nxsim-bench-router): the router_topk composite
 * (kernels/moe/router.h, docs/parts/moe.md) on token-generation router
 * shapes, bf16, through the registry and the SystemC model (trn2 unless
 * --machine) on the VNC(2) grid: x [T, H] for T = 1, 8, 32, 128 with
 *   w [4096, 8]   k 2 softmax            (Mixtral-like),
 *   w [4096, 16]  k 4 softmax            (DBRX-like),
 *   w [4096, 128] k 8 softmax,
 *   w [7168, 256] k 8 sigmoid norm_topk  (DeepSeek-like).
 * Prints per case the simulated time; the DMA bound: every byte of the
 * operands and results over one core's DMA rate (bench/dma_bound.h); its
 * share of the simulated time beside the target (>= 75%); the split's
 * floor (the tokens are split between the cores, so each core reads all
 * of w and its half of x: the larger core's bytes over one core's rate,
 * HBM shared); the wall time of the model's run and of the rules'
 * reference on the same operands and their ratio; and the check (`ok` /
 * `WRONG`). Figures only: times never decide the exit status. --quick:
 * small shapes (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"

typedef struct router_case {
    const char *label;
    uint64_t T, H, E, k;
    const char *act;
    int norm_topk;
} router_case;

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-router [--quick] [--machine NAME|FILE]\n"
          "Runs router_topk (bf16) on x [T, H], T = 1, 8, 32, 128, with w [4096, 8] k 2, [4096, 16] k 4,\n"
          "[4096, 128] k 8 (softmax) and [7168, 256] k 8 (sigmoid, norm_topk) on the SystemC model (default\n"
          "trn2, both cores) against the DMA bound and the reference's wall time. --quick: small shapes.\n",
          f);
}

static int build(const router_case *c, nx_macro_op *op, nx_error *err) {
    const uint64_t x[2] = {c->T, c->H}, w[2] = {c->H, c->E};
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\"", c->act);
    nx_value k = nx_value_int((int64_t)c->k), act = {0}, nt = nx_value_bool(c->norm_topk);
    int rc = nx_macro_op_set_func_name(op, "router_topk", err) != 0 ||
                     nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err) != 0 ||
                     nx_macro_op_add_operand(op, "w", NX_DT_BF16, 2, w, err) != 0 ||
                     nx_attrs_set(&op->attrs, "k", &k, err) != 0 || nx_value_parse("act", quoted, &act, err) != 0 ||
                     nx_attrs_set(&op->attrs, "act", &act, err) != 0 || nx_attrs_set(&op->attrs, "norm_topk", &nt, err) != 0
                 ? -1
                 : 0;
    nx_value_free(&act);
    return rc;
}

int nx_bench_router_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    static const router_case shapes[] = {{"mixtral", 0, 4096, 8, 2, "softmax", 0},
                                         {"dbrx", 0, 4096, 16, 4, "softmax", 0},
                                         {"e128", 0, 4096, 128, 8, "softmax", 0},
                                         {"deepseek", 0, 7168, 256, 8, "sigmoid", 1}};
    static const uint64_t Ts[] = {1, 8, 32, 128};
    router_case cases[16];
    size_t n = 0;
    if (a.quick) {
        cases[n++] = (router_case){"quick", 8, 512, 16, 4, "softmax", 0};
        cases[n++] = (router_case){"quick", 130, 640, 64, 8, "sigmoid", 1};
    } else {
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (size_t t = 0; t < sizeof Ts / sizeof *Ts; t++) {
                cases[n] = shapes[s];
                cases[n++].T = Ts[t];
            }
    }
    const double rate = nx_bench_core_dma_bytes_per_ns(&m);
    const uint32_t cores = m.geo.cores ? m.geo.cores : 1;
    /* one core of the grid: its engines, or its share of the shared HBM */
    const double core_rate = nx_bench_dma_bytes_per_ns(&m, cores, m.geo.dma_engines) / cores;
    printf("%s: machine %s, %u cores: DMA %.0f B/ns per core (bench/dma_bound.h)\n", argv[0], m.geo.name, cores, rate);
    printf("%-32s %9s %9s %9s %7s %9s %8s %8s %8s %s\n", "case", "sim_us", "bound_us", "of_bound", "target",
           "split_us", "sim_s", "ref_s", "sim/ref", "result");
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        const router_case *c = &cases[i];
        char label[64];
        snprintf(label, sizeof label, "%s T%llu [%llu,%llu] k%llu %s", c->label, (unsigned long long)c->T,
                 (unsigned long long)c->H, (unsigned long long)c->E, (unsigned long long)c->k, c->act);
        nx_macro_op op;
        nx_macro_op_init(&op);
        nx_error err;
        nx_bench_run r;
        int rc = build(c, &op, &err) != 0 || nx_bench_run_op(&op, &m, NULL, NULL, &r, &err) != 0 ? -1 : 0;
        nx_macro_op_free(&op);
        if (rc != 0) {
            printf("%-32s error: %s\n", label, err.msg);
            status = 1;
            continue;
        }
        const double es = 2, out_row = (double)c->E * 8 + (double)c->k * 4;
        const double bytes = (double)c->T * (double)c->H * es + (double)c->H * (double)c->E * es + (double)c->T * out_row;
        const double Tc = (double)((c->T + cores - 1) / cores);
        const double core_bytes = Tc * (double)c->H * es + (double)c->H * (double)c->E * es + Tc * out_row;
        const double bound = bytes / rate, split = core_bytes / core_rate;
        printf("%-32s %9.2f %9.2f %8.1f%% %6s%% %9.2f %8.3f %8.3f %8.2f %s\n", label, r.sim_ns / 1e3, bound / 1e3,
               100.0 * bound / r.sim_ns, ">=75", split / 1e3, r.sim_s, r.ref_s, r.ref_s > 0 ? r.sim_s / r.ref_s : 0.0,
               r.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!r.ok) status = 1;
    }
    printf("bound: the bytes of x, w, logits, affinities and indices over one core's DMA rate; of_bound: its share\n"
           "of the simulated time; split: the larger core's bytes (all of w, its half of x and of the results) over\n"
           "a core's share of the DMA/HBM rate, the floor of the token split; sim_s: wall time of nx_run_op (trace\n"
           "and model); ref_s: the rules' reference on the same operands.\n");
    return status;
}
