/* nxsim-bench-tutorial: the four kernels of the NKI matrix-multiplication
 * tutorial (kernels/tutorial/tutorial.h) at the tutorial's published size,
 * [4096, 8192] @ [8192, 8192] bf16 (lhsT [8192, 4096], rhs [8192, 8192]),
 * on the trn1 preset (the tutorial measured one Trainium1 NeuronCore) and on
 * trn2 for comparison, through the composite table (the ops `nxsim run`
 * builds) and the SystemC model. Per kernel and machine it prints the
 * simulated latency, the % of peak, the published figure and the ratio
 * simulated / published, and where the time goes (engine busy and stall %,
 * DMA engine busy and queue occupancy, achieved DMA bandwidth), then one line
 *   tutorial NAME: simulated S ms, published P ms, ratio R
 * for scripts (trn1; the trn2 lines read "tutorial-trn2 NAME: ..."), then
 * the documented micro-figures (bench/micro_figures.h), one line each. Values
 * are checked against OpenBLAS (the family's reference and tolerance,
 * registry/families/tutorial.c). Figures only: times never decide the exit
 * status, a wrong result does. docs/parts/fidelity.md discusses the
 * figures. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "leaf_benches.h"
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/rules.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "sim/profile.h"
#include "micro_figures.h"
#include "wall_clock.h"
#include "dma_bound.h"

/* The tutorial's table (matrix_multiplication.rst, "Testing Correctness and
 * Benchmarking"): latency and hardware FLOPs utilisation on Trn1. */
typedef struct published {
    const char *key;
    const char *label;
    double ms, hfu_percent;
} published;

static const published kernels[] = {
    {"nki_matmul_tiled", "original tiled", 51.80, 10.98},
    {"nki_matmul_hoist_load", "optimization 1: hoisted loads", 42.96, 13.24},
    {"nki_matmul_block_free_dimension", "optimization 2: blocked free dims", 22.07, 26.51},
    {"nki_matmul_fully_optimized", "optimization 3: fully optimised", 6.97, 85.24},
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

typedef struct shape {
    uint64_t K, M, N;
    uint64_t blocking[3]; /* the fully optimised kernel's tiles_in_block_m/n/k (0: its defaults) */
} shape;

static int build_op(const char *key, const shape *s, nx_macro_op *op, nx_error *err) {
    nx_macro_op_init(op);
    const uint64_t lhsT[2] = {s->K, s->M}, rhs[2] = {s->K, s->N};
    if (nx_macro_op_set_func_name(op, key, err) != 0 ||
        nx_macro_op_add_operand(op, "lhsT", NX_DT_BF16, 2, lhsT, err) != 0 ||
        nx_macro_op_add_operand(op, "rhs", NX_DT_BF16, 2, rhs, err) != 0)
        return -1;
    static const char *const names[3] = {"tiles_in_block_m", "tiles_in_block_n", "tiles_in_block_k"};
    for (int i = 0; i < 3 && s->blocking[i] && strcmp(key, "nki_matmul_fully_optimized") == 0; i++) {
        nx_value v = {.kind = NX_VAL_INT, .i = (int64_t)s->blocking[i]};
        if (nx_attrs_set(&op->attrs, names[i], &v, err) != 0) return -1;
    }
    return 0;
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

/* Where the time goes, from the run's statistics (no log needed). */
static void print_profile(const nx_machine *m, const nx_sim_result *r) {
    const double T = r->total_ns;
    static const nx_engine eng[] = {NX_ENG_PE, NX_ENG_DVE, NX_ENG_ACT, NX_ENG_POOL, NX_ENG_SP};
    printf("  engines (busy / stalled, %% of the run):");
    for (size_t i = 0; i < sizeof eng / sizeof eng[0]; i++) {
        const nx_sim_engine_stats *e = &r->engine[0][eng[i]];
        if (!e->instructions) continue;
        printf(" %s %.1f/%.1f", nx_engine_name(eng[i]), pct(e->busy_ns, T), pct(e->stall_ns, T));
    }
    printf("\n");
    double eb_sum = 0, eb_min = 1e300, eb_max = 0;
    uint32_t ne = r->dma_engines ? r->dma_engines : 0;
    for (uint32_t e = 0; e < ne; e++) {
        double b = nx_sim_dma_engine_busy_ns(r, 0, e);
        eb_sum += b;
        if (b < eb_min) eb_min = b;
        if (b > eb_max) eb_max = b;
    }
    uint64_t bytes = 0, transfers = 0;
    uint32_t active = 0;
    double qb_sum = 0;
    for (uint32_t q = 0; q < r->dma_queues; q++) {
        uint64_t n = nx_sim_queue_transfers(r, 0, q);
        if (!n) continue;
        active++;
        transfers += n;
        bytes += nx_sim_queue_bytes(r, 0, q);
        qb_sum += nx_sim_queue_busy_ns(r, 0, q);
    }
    double peak_bw = nx_bench_core_dma_bytes_per_ns(m);
    if (ne)
        printf("  DMA: %u engines busy %.1f%% on average (%.1f .. %.1f%%); %u queues used, each holding a transfer "
               "%.1f%% of the run on average\n",
               ne, pct(eb_sum / ne, T), pct(eb_min, T), pct(eb_max, T), active, active ? pct(qb_sum / active, T) : 0.0);
    printf("  DMA: %.2f GB in %llu transfers (%.1f KiB each), %.1f GB/s = %.1f%% of the %.0f GB/s of the "
           "engines/HBM\n",
           (double)bytes / 1e9, (unsigned long long)transfers, transfers ? (double)bytes / transfers / 1024.0 : 0.0,
           T > 0 ? (double)bytes / T : 0.0, T > 0 ? pct((double)bytes / T, peak_bw) : 0.0, peak_bw);
}

typedef struct outcome {
    double sim_ms;
    int ok;
} outcome;

/* The reference of the last check, reused while the operands are the same
 * (every kernel of a shape gets the same seeded operands): the full-size
 * OpenBLAS GEMM takes minutes on a host without a tuned core. */
typedef struct ref_cache {
    uint64_t key; /* FNV-1a of the operands' bytes and the result size; 0: empty */
    uint64_t bytes;
    void *data;
} ref_cache;

static uint64_t fnv1a(uint64_t h, const void *p, uint64_t n) {
    const unsigned char *c = p;
    for (uint64_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

/* The check, timed apart from the model: the family's reference (OpenBLAS)
 * on the operands in HBM (the kernels do not write their inputs), every
 * element under the family's tolerance. *wall_s is 0 when the cached
 * reference served. */
static int check(const nx_macro_op *op, const nx_run_result *res, ref_cache *cache, nx_tolerance *tol,
                 nx_check_result *cr, double *wall_s, nx_error *err) {
    const nx_op_rules *rules = res->target.rules;
    const nx_program *prog = res->prog;
    const void *ins[2];
    const nx_tensor_decl *t = &prog->tensors[res->result_tensor[0]];
    uint64_t bytes = nx_tensor_bytes(t), key = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < 2; i++) {
        const nx_tensor_decl *in = &prog->tensors[res->operand_tensor[i]];
        ins[i] = res->state.hbm + in->offset;
        key = fnv1a(key, ins[i], nx_tensor_bytes(in));
    }
    key = fnv1a(key, &bytes, sizeof bytes) | 1;
    *wall_s = 0;
    if (cache->key != key || cache->bytes != bytes) {
        free(cache->data);
        cache->key = 0;
        cache->data = calloc(1, bytes ? bytes : 1);
        if (!cache->data) return nx_fail(err, "out of memory for the reference");
        void *outs[1] = {cache->data};
        double t0 = nx_bench_now_s();
        if (rules->reference(op, ins, outs, err) != 0) return -1;
        *wall_s = nx_bench_now_s() - t0;
        cache->key = key;
        cache->bytes = bytes;
    }
    if (nx_op_rules_tolerance(rules, op, 0, tol, err) != 0) return -1;
    nx_dtype dt = (nx_dtype)t->dtype;
    nx_check_compare(dt, res->results[0], cache->data, bytes / nx_dtype_size(dt), tol, cr);
    return 0;
}

static int run_one(const nx_machine *m, const published *pk, const shape *s, int summary, ref_cache *cache,
                   outcome *o, nx_error *err) {
    nx_macro_op given;
    nx_prepared op;
    nx_prepared_init(&op);
    nx_lowerer *L = NULL;
    int rc = -1;
    o->ok = 0;
    if (build_op(pk->key, s, &given, err) != 0) goto out;
    L = nx_lowerer_new(&m->geo, NULL);
    if (!L) {
        nx_fail(err, "out of memory");
        goto out;
    }
    if (nx_op_prepare(L, &given, NULL, &op, err) != 0) goto out;
    double t0 = nx_bench_now_s();
    const nx_program *prog;
    if (nx_lower(L, &op.target, &op.op, &prog, NULL, err) != 0) goto out;
    double trace_s = nx_bench_now_s() - t0;
    uint64_t insns = 0;
    for (uint32_t e = 0; e < NX_ENG_COUNT; e++) insns += prog->stream[0][e].count;
    nx_run_options opt = {.backend = NX_RUN_MODEL, .check = 0, .seed = 1};
    nx_run_result res;
    t0 = nx_bench_now_s();
    if (nx_run_op(L, m, &op, NULL, &opt, &res, err) != 0) {
        nx_run_result_free(&res);
        goto out;
    }
    double run_s = nx_bench_now_s() - t0, check_s = 0;
    nx_tolerance tol;
    nx_check_result cr;
    if (check(&op.op, &res, cache, &tol, &cr, &check_s, err) != 0) {
        nx_run_result_free(&res);
        goto out;
    }
    const nx_sim_result *r = &res.trace.sim;
    nx_profile_peak peak;
    nx_profile_peak_of(m, prog, &peak);
    double tflops = r->total_ns > 0 ? (double)r->flops / r->total_ns / 1000.0 : 0.0;
    o->sim_ms = r->total_ns / 1e6;
    o->ok = cr.bad == 0;
    printf("%s (%s) on %s: lhsT [%llu, %llu] @ rhs [%llu, %llu] bf16\n", pk->key, pk->label, m->geo.name,
           (unsigned long long)s->K, (unsigned long long)s->M, (unsigned long long)s->K, (unsigned long long)s->N);
    char ref_s[48];
    if (check_s > 0) snprintf(ref_s, sizeof ref_s, "%.2f s", check_s);
    else snprintf(ref_s, sizeof ref_s, "reused (same operands)");
    printf("  wall: trace %.2f s (%llu instructions), model run %.2f s (placing the operands included), "
           "OpenBLAS reference %s\n",
           trace_s, (unsigned long long)insns, run_s, ref_s);
    printf("  values %s: max abs error %.3g, %llu elements beyond the tolerance (%s)\n", o->ok ? "ok" : "WRONG",
           cr.max_abs, (unsigned long long)cr.bad, tol.text);
    printf("  simulated %.3f ms, %.2f TFLOPS = %.2f%% of the %.2f TFLOPS peak; published %.2f ms (%.2f%% HFU, trn1)\n",
           o->sim_ms, tflops, pct(tflops, peak.tflops), peak.tflops, pk->ms, pk->hfu_percent);
    print_profile(m, r);
    if (summary) nx_profile_summary(stdout, m, prog, r);
    nx_run_result_free(&res);
    rc = 0;
out:
    nx_lowerer_free(L);
    nx_prepared_free(&op);
    nx_macro_op_free(&given);
    return rc;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-tutorial [--case NAME]... [--machine NAME|FILE]... [--quick] [--summary]\n"
          "Runs the NKI matmul tutorial's four kernels on [4096, 8192] @ [8192, 8192] bf16 on trn1 and trn2.\n"
          "  --case NAME     a kernel or a prefix (nki_matmul_tiled, nki_matmul_fully, ...); 'tutorial'\n"
          "                  selects all four, 'micro' the documented micro-figures (default: everything)\n"
          "  --machine SPEC  trn1, trn2 or a machine file (repeatable; default trn1 then trn2)\n"
          "  --quick         [512, 512] @ [512, 1024], the fully optimised kernel with blocks of\n"
          "                  2 x 1 x 2 tiles (the ctest smoke run; values only)\n"
          "  --summary       also print each run's profile summary\n",
          f);
}

/* A kernel is selected by no --case, by "tutorial", or by a prefix of its
 * name; the micro-figures by no --case or by "micro". */
static int selected(const char *key, char *const *names, int n) {
    if (n == 0) return 1;
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], "tutorial") == 0 && strcmp(key, "micro") != 0) return 1;
        if (strncmp(key, names[i], strlen(names[i])) == 0) return 1;
    }
    return 0;
}

int nx_bench_tutorial_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_CASE | NX_BENCH_OPT_MACHINE | NX_BENCH_OPT_QUICK |
                                                 NX_BENCH_OPT_SUMMARY, usage, &a);
    if (st >= 0) return st;
    char *names[NX_BENCH_MAX_REPEAT];
    const char *machines[NX_BENCH_MAX_REPEAT];
    int nn = a.n_cases, nm = a.n_machines, quick = a.quick, summary = a.summary;
    for (int i = 0; i < nn; i++) names[i] = (char *)a.cases[i];
    for (int i = 0; i < nm; i++) machines[i] = a.machines[i];
    int any = selected("micro", names, nn);
    for (size_t i = 0; i < NKERNELS; i++) any |= selected(kernels[i].key, names, nn);
    if (!any) {
        fprintf(stderr, "nxsim-bench-tutorial: no kernel matches the --case options\n");
        return 2;
    }
    if (nm == 0) {
        machines[nm++] = "trn1";
        if (!quick) machines[nm++] = "trn2";
    }
    /* --quick: every loop of every kernel more than once, the fully
     * optimised one with blocks of 2 x 1 x 2 tiles */
    const shape full = {8192, 4096, 8192, {0, 0, 0}}, small = {512, 512, 1024, {2, 1, 2}};
    const shape *s = quick ? &small : &full;
    const char *threads = getenv("OPENBLAS_NUM_THREADS"), *core = getenv("OPENBLAS_CORETYPE");
    printf("nxsim-bench-tutorial: OpenBLAS %s, core %s, %d thread%s (OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s)\n\n",
           openblas_get_config(), openblas_get_corename(), openblas_get_num_threads(),
           openblas_get_num_threads() == 1 ? "" : "s", threads && *threads ? threads : "unset",
           core && *core ? core : "unset");
    int status = 0;
    ref_cache cache = {0, 0, NULL};
    char lines[NKERNELS * 8][160];
    int nlines = 0;
    for (int mi = 0; mi < nm; mi++) {
        nx_machine m;
        nx_error err;
        if (nx_machine_load(machines[mi], &m, &err) != 0) {
            fprintf(stderr, "nxsim-bench-tutorial: %s\n", err.msg);
            return 2;
        }
        for (size_t i = 0; i < NKERNELS; i++) {
            if (!selected(kernels[i].key, names, nn)) continue;
            outcome o;
            if (run_one(&m, &kernels[i], s, summary, &cache, &o, &err) != 0) {
                printf("%s on %s: error: %s\n", kernels[i].key, m.geo.name, err.msg);
                status = 1;
                continue;
            }
            if (!o.ok) status = 1;
            if (quick) continue; /* the published figures are for the full size only */
            const char *tag = strcmp(m.geo.name, "trn1") == 0 ? "tutorial" : "tutorial-";
            snprintf(lines[nlines++], sizeof lines[0], "%s%s %s: simulated %.3f ms, published %.2f ms, ratio %.3f%s",
                     tag, strcmp(m.geo.name, "trn1") == 0 ? "" : m.geo.name, kernels[i].key, o.sim_ms, kernels[i].ms,
                     o.sim_ms / kernels[i].ms, "");
            fflush(stdout);
        }
    }
    free(cache.data);
    if (nlines) printf("\n");
    for (int i = 0; i < nlines; i++) printf("%s\n", lines[i]);
    if (selected("micro", names, nn)) {
        printf("\n");
        if (nx_bench_micro_figures() != 0) status = 1;
    }
    return status;
}
