/* nxsim-bench scan (also nxsim-bench-scan): selective_scan (kernels/scan/,
 * docs/parts/scan.md) on the shapes of the public fused Mamba kernels,
 * [B, C, L, N] = [1, 256, 512, 16], [1, 4096, 512, 16], [1, 256, 8192, 16]
 * and [4, 2048, 2048, 16], fp32 and bf16 (A and D fp32, skip and
 * delta_softplus: a Mamba layer's configuration), on trn2 and trn1 (or the
 * --machine given), through the registry and the SystemC model. Per case:
 * the simulated time; the engine bound (per core, its rows' N L elements
 * per partition: the scan's 2 VectorE cycles each, exp's 1 ScalarE cycle,
 * and the products delta u Bm, h Cm and the sum over n, 1 GpSimd cycle each
 * or 2, 2 and 1 VectorE cycles, the sum split between the two engines so
 * they finish together, or all of it added up where the two cannot touch
 * SBUF at once (trn1): docs/parts/scan.md "Bounds"); the DMA bound (every
 * operand and result byte once over the grid's DMA engines, capped by HBM;
 * bench/dma_bound.h); which is larger; the bound's share of the simulated
 * time beside the target (>= 60%); the broadcast's own DMA time per core
 * (Bm and Cm to every partition: bc_us); the wall time of the model's run
 * and of the reference and their ratio; and whether the results are within
 * the rules' tolerance. Figures only: times never decide the exit status.
 * --quick: [1, 256, 512, 16] on trn2 (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"
#include "sim/machine.h"

typedef struct scan_case {
    uint64_t B, C, L, N;
    nx_dtype dt;
} scan_case;

typedef struct scan_figures {
    double sim_ns, eng_ns, dma_ns, bc_ns, sim_s, ref_s;
    uint32_t cores;
    int ok;
} scan_figures;

static int build_op(const scan_case *c, nx_macro_op *op, nx_error *err) {
    const uint64_t bcl[3] = {c->B, c->C, c->L}, cn[2] = {c->C, c->N}, bnl[3] = {c->B, c->N, c->L}, c1[1] = {c->C};
    nx_macro_op_init(op);
    nx_value t = nx_value_bool(1), sp = nx_value_bool(1); /* nx_attrs_set moves the value */
    if (nx_macro_op_set_func_name(op, "selective_scan", err) != 0 ||
        nx_macro_op_add_operand(op, "u", c->dt, 3, bcl, err) != 0 ||
        nx_macro_op_add_operand(op, "delta", c->dt, 3, bcl, err) != 0 ||
        nx_macro_op_add_operand(op, "A", NX_DT_FP32, 2, cn, err) != 0 ||
        nx_macro_op_add_operand(op, "Bm", c->dt, 3, bnl, err) != 0 ||
        nx_macro_op_add_operand(op, "Cm", c->dt, 3, bnl, err) != 0 ||
        nx_macro_op_add_operand(op, "D", NX_DT_FP32, 1, c1, err) != 0 || nx_attrs_set(&op->attrs, "skip", &t, err) != 0)
        return -1;
    return nx_attrs_set(&op->attrs, "delta_softplus", &sp, err);
}

static uint64_t elems(const nx_op_tensor *t) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->ndims; d++) n *= t->shape[d];
    return n;
}

/* The bounds of c on m over `cores` cores (docs/parts/scan.md "Bounds"). */
static void bounds(const scan_case *c, const nx_machine *m, uint32_t cores, const nx_macro_op *op, scan_figures *f) {
    const double P = m->geo.partitions, rows = (double)((c->B * c->C + cores - 1) / cores);
    const double E = rows / P * (double)c->N * (double)c->L; /* elements per partition per core */
    const double fd = m->clock_ghz[NX_ENG_DVE], fp = m->clock_ghz[NX_ENG_POOL], fa = m->clock_ghz[NX_ENG_ACT];
    double x = (3 * fd - 2 * fp) / (fp + fd); /* the share of the sum over n on VectorE */
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    double dve = (2 + x) * E / fd, pool = (3 - x) * E / fp, act = E / fa;
    f->eng_ns = dve > pool ? dve : pool;
    /* VectorE and GpSimd that cannot touch SBUF at once (trn1) add up: the
     * scan on VectorE, each product and the sum on the quicker engine */
    if (m->sbuf_dve_pool_conflict) f->eng_ns = 2 * E / fd + 2 * E / (fp > fd / 2 ? fp : fd / 2) + E / (fp > fd ? fp : fd);
    if (act > f->eng_ns) f->eng_ns = act;
    double bytes = 0;
    for (uint32_t i = 0; i < op->n_operands; i++) bytes += (double)(elems(&op->operands[i]) * nx_dtype_size(op->operands[i].dtype));
    for (uint32_t j = 0; j < op->n_results; j++) bytes += (double)(elems(&op->results[j]) * nx_dtype_size(op->results[j].dtype));
    f->dma_ns = nx_bench_dma_bound_ns(m, cores, bytes);
    /* the core's batch segments each broadcast Bm and Cm to its partitions */
    const double part = rows < P ? rows : P, segs = rows >= (double)c->C ? rows / (double)c->C : 1;
    f->bc_ns = 2 * part * (double)(c->N * c->L * nx_dtype_size(c->dt)) * segs / nx_bench_core_dma_bytes_per_ns(m);
}

typedef struct scan_bounds_ctx {
    const scan_case *c;
    const nx_machine *m;
    scan_figures *f;
} scan_bounds_ctx;

static void scan_bounds(const nx_macro_op *op, uint32_t grid, void *ctx) {
    const scan_bounds_ctx *b = ctx;
    bounds(b->c, b->m, grid, op, b->f);
}

static int run_case(const scan_case *c, const nx_machine *m, scan_figures *f, nx_error *err) {
    memset(f, 0, sizeof *f);
    nx_macro_op given;
    scan_bounds_ctx ctx = {c, m, f};
    nx_bench_run run;
    int rc = build_op(c, &given, err) == 0 ? nx_bench_run_op(&given, m, scan_bounds, &ctx, &run, err) : -1;
    nx_macro_op_free(&given);
    if (rc != 0) return -1;
    f->sim_ns = run.sim_ns, f->sim_s = run.sim_s, f->ref_s = run.ref_s, f->ok = run.ok, f->cores = run.grid;
    return 0;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-scan [--quick] [--machine NAME|FILE]\n"
          "Runs selective_scan [B, C, L, N] = [1,256,512,16], [1,4096,512,16], [1,256,8192,16] and\n"
          "[4,2048,2048,16], fp32 and bf16 (skip, delta_softplus), on the SystemC model of trn2 and trn1\n"
          "(or the --machine given) against the engine and DMA bounds and the reference's wall time.\n"
          "--quick: [1,256,512,16] on trn2 (the ctest smoke run).\n",
          f);
}

static int run_machine(const char *prog, const char *spec, int quick) {
    nx_machine m;
    int st = nx_bench_machine(prog, spec, &m);
    if (st != 0) return st;
    static const scan_case shapes[4] = {{1, 256, 512, 16, NX_DT_FP32},
                                        {1, 4096, 512, 16, NX_DT_FP32},
                                        {1, 256, 8192, 16, NX_DT_FP32},
                                        {4, 2048, 2048, 16, NX_DT_FP32}};
    printf("%s: machine %s, DVE %.2f GHz, ACT %.2f GHz, POOL %.2f GHz, DMA %.0f B/ns per core\n", prog, m.geo.name,
           m.clock_ghz[NX_ENG_DVE], m.clock_ghz[NX_ENG_ACT], m.clock_ghz[NX_ENG_POOL], nx_bench_core_dma_bytes_per_ns(&m));
    printf("%-35s %-5s %5s %10s %10s %10s %4s %8s %6s %10s %8s %8s %8s %s\n", "case", "dtype", "cores", "sim_us", "eng_us",
           "dma_us", "by", "of_bound", "target", "bc_us", "sim_s", "ref_s", "sim/ref", "result");
    int status = 0;
    for (int s = 0; s < (quick ? 1 : 4); s++)
        for (int d = 0; d < 2; d++) {
            scan_case c = shapes[s];
            c.dt = d ? NX_DT_BF16 : NX_DT_FP32;
            char label[64];
            snprintf(label, sizeof label, "selective_scan [%llu,%llu,%llu,%llu]", (unsigned long long)c.B,
                     (unsigned long long)c.C, (unsigned long long)c.L, (unsigned long long)c.N);
            scan_figures f;
            nx_error err;
            if (run_case(&c, &m, &f, &err) != 0) {
                printf("%-35s %-5s error: %s\n", label, nx_dtype_name(c.dt), err.msg);
                status = 1;
                continue;
            }
            const double bound = f.eng_ns > f.dma_ns ? f.eng_ns : f.dma_ns;
            printf("%-35s %-5s %5u %10.1f %10.1f %10.1f %4s %7.1f%% %5s%% %10.1f %8.3f %8.3f %8.2f %s\n", label,
                   nx_dtype_name(c.dt), f.cores, f.sim_ns / 1e3, f.eng_ns / 1e3, f.dma_ns / 1e3,
                   f.eng_ns >= f.dma_ns ? "ENG" : "DMA", 100.0 * bound / f.sim_ns, ">=60", f.bc_ns / 1e3, f.sim_s,
                   f.ref_s, f.ref_s > 0 ? f.sim_s / f.ref_s : 0.0, f.ok ? "ok" : "WRONG");
            fflush(stdout);
            if (!f.ok) status = 1;
        }
    return status;
}

int nx_bench_scan_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    int status = 0;
    if (a.machine || a.quick) {
        status = run_machine(argv[0], a.machine ? a.machine : "trn2", a.quick);
    } else {
        static const char *const presets[2] = {"trn2", "trn1"};
        for (int i = 0; i < 2; i++) {
            int s = run_machine(argv[0], presets[i], 0);
            if (s > status) status = s;
        }
    }
    printf("of_bound: the larger bound's share of the simulated time; eng: per core, the scan's 2 VectorE cycles,\n"
           "exp's ScalarE cycle and the three products' GpSimd/VectorE cycles per element of its N L rows per\n"
           "partition, shared so the engines finish together; dma: every operand and result byte once over the\n"
           "grid's DMA engines (HBM-capped); bc_us: the Bm and Cm broadcasts' own DMA time per core; sim_s: wall\n"
           "time of nx_run_op (trace and model); ref_s: the reference on the same operands.\n");
    return status;
}
