/* nxsim-bench scaling: does the simulator's host time grow with the work it
 * simulates, and no faster? Three series at four sizes each, on the SystemC
 * model, one host thread:
 *   gemm   the tiled bf16 GEMM of nxsim-bench (bench/programs.h (a)), n^3,
 *          host time per MAC;
 *   chain  the chain of dependent one-element DVE instructions (programs.h
 *          (b)), host time per instruction;
 *   leaf   the registry's grid transpose tiled_pf_transpose, fp32 n x n on
 *          the VNC(2) grid (the main job of the README), host time per byte
 *          it moves (2 n^2 x 4: read and written once).
 * Each point also prints host time per simulated instruction. A series is
 * flat when its largest per-unit time is within 20% of its smallest
 * (docs/parts/bench.md, "Scaling"). The per-unit times, each divided by the
 * series' value at its largest size, are drawn to DIR/scaling.svg
 * (--out-dir, default the current directory).
 *
 * A point's host time is the least wall time of repeated runs (at least
 * MIN_REPEAT_S of runs in all, at most MAX_REPEATS), so the small sizes are
 * not at the mercy of one scheduler hiccup. Values are checked every time
 * against independent references (OpenBLAS, the count, the input bytes);
 * figures never decide the exit status, values do. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leaf_benches.h"
#include "programs.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/run/run.h"
#include "sim/model.h"
#include "sim/profile.h"
#include "wall_clock.h"

#define SIZES 4
#define MIN_REPEAT_S 0.3
#define MAX_REPEATS 5
#define FLAT_SPREAD 0.20

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-scaling [--quick] [--machine NAME|FILE] [--out-dir DIR]\n"
          "Host time per simulated instruction and per unit of work (MAC, instruction, byte) of a GEMM,\n"
          "a DVE chain and the grid transpose at four sizes each; draws DIR/scaling.svg.\n"
          "--quick: smaller sizes (the ctest smoke).\n",
          f);
}

typedef struct point {
    uint64_t size;       /* n (gemm, leaf) or instructions (chain) */
    double units;        /* MACs, instructions or bytes */
    uint64_t insns;      /* simulated instructions (DMA transfers included) */
    double sim_ns;
    double host_s;       /* least wall time of the repeats */
    int repeats;
    int ok;
    char why[NX_ERROR_MAX + 32];
} point;

typedef struct series {
    const char *name, *unit;
    point pt[SIZES];
} series;

/* Runs fn(ctx) until MIN_REPEAT_S have passed or MAX_REPEATS runs; the least
 * wall time. reset(ctx) (untimed, may be NULL) comes before each run: a
 * program's semaphores only count up, so a rerun needs a reset state. fn
 * and reset return 0 or -1. */
typedef int (*run_fn)(void *ctx);
static int repeat(run_fn reset, run_fn fn, void *ctx, point *p) {
    double spent = 0, best = 0;
    p->repeats = 0;
    while (p->repeats < MAX_REPEATS && (p->repeats == 0 || spent < MIN_REPEAT_S)) {
        if (reset && reset(ctx) != 0) return -1;
        double t0 = nx_bench_now_s();
        if (fn(ctx) != 0) return -1;
        double t = nx_bench_now_s() - t0;
        spent += t;
        if (p->repeats == 0 || t < best) best = t;
        p->repeats++;
    }
    p->host_s = best;
    return 0;
}

/* ---- the GEMM and the chain: a program on the model ---- */

typedef struct sim_ctx {
    const nx_machine *m;
    const nx_program *prog;
    nx_state *st;
    void (*put_inputs)(const void *arg, nx_state *st);
    const void *arg;
    int have_state;
    nx_sim_result r;
    nx_error err;
} sim_ctx;

static int sim_reset(void *v) {
    sim_ctx *c = v;
    if (c->have_state) {
        nx_state_reset(c->st);
    } else {
        if (nx_state_init(c->st, &c->m->geo, c->prog->cores, c->prog->hbm_bytes, c->prog->sem_count, &c->err) != 0)
            return -1;
        c->have_state = 1;
    }
    if (c->put_inputs) c->put_inputs(c->arg, c->st);
    return 0;
}

static int sim_once(void *v) {
    sim_ctx *c = v;
    nx_sim_result_free(&c->r);
    memset(&c->r, 0, sizeof c->r);
    nx_sim_options so = {0, 0};
    return nx_sim_run(c->m, c->prog, c->st, &so, &c->r, &c->err);
}

/* Runs prog on reset states *st (left holding the last run's; the caller
 * frees it) filled by put_inputs(arg, st). */
static int run_program(const nx_machine *m, const nx_program *prog, nx_state *st,
                       void (*put_inputs)(const void *arg, nx_state *st), const void *arg, point *p, nx_error *err) {
    sim_ctx c = {.m = m, .prog = prog, .st = st, .put_inputs = put_inputs, .arg = arg};
    memset(&c.r, 0, sizeof c.r);
    int rc = repeat(sim_reset, sim_once, &c, p);
    if (rc != 0) *err = c.err;
    if (!c.have_state) memset(st, 0, sizeof *st);
    p->insns = c.r.instructions;
    p->sim_ns = c.r.total_ns;
    nx_sim_result_free(&c.r);
    return rc;
}

static void gemm_inputs(const void *g, nx_state *st) { bench_gemm_put_inputs(g, st); }

static void gemm_point(const nx_machine *m, uint32_t n, point *p) {
    bench_gemm g = {.M = n, .K = n, .N = n, .dtype = NX_DT_BF16, .dma_engines = 16};
    nx_program prog;
    nx_state st;
    nx_error err;
    p->size = n;
    p->units = (double)n * n * n;
    if (bench_gemm_build(m, &g, &prog, &err) != 0) {
        snprintf(p->why, sizeof p->why, "build: %s", err.msg);
        return;
    }
    float *c = NULL;
    if (run_program(m, &prog, &st, gemm_inputs, &g, p, &err) != 0) {
        snprintf(p->why, sizeof p->why, "run: %s", err.msg);
    } else if (!(c = malloc((size_t)n * n * sizeof *c))) {
        snprintf(p->why, sizeof p->why, "result: out of memory");
    } else {
        bench_gemm_get_output(&g, &st, c);
    }
    nx_state_free(&st);
    nx_program_free(&prog);
    if (!c) return;
    bench_gemm_check chk;
    if (bench_gemm_check_values(&g, c, &chk, &err) != 0)
        snprintf(p->why, sizeof p->why, "%s", err.msg);
    else if (!(p->ok = chk.ok))
        snprintf(p->why, sizeof p->why, "values: max |sim - sgemm| / (|A||B|) = %.3g > %.3g", chk.max_rel_err,
                 chk.err_bound);
    free(c);
}

static void chain_point(const nx_machine *m, uint32_t count, point *p) {
    nx_program prog;
    nx_state st;
    nx_error err;
    uint64_t x_off;
    p->size = count;
    p->units = count;
    if (bench_chain_build(m, count, &prog, &x_off, &err) != 0) {
        snprintf(p->why, sizeof p->why, "build: %s", err.msg);
        return;
    }
    if (run_program(m, &prog, &st, NULL, NULL, p, &err) != 0) {
        snprintf(p->why, sizeof p->why, "run: %s", err.msg);
    } else {
        double x = nx_dtype_load(NX_DT_FP32, nx_sbuf_at(&st, 0, 0, x_off));
        p->ok = x == (double)count;
        if (!p->ok) snprintf(p->why, sizeof p->why, "values: x = %.17g after %u increments", x, count);
    }
    nx_state_free(&st);
    nx_program_free(&prog);
}

/* ---- the leaf: the grid transpose through the run path ---- */

typedef struct leaf_ctx {
    nx_lowerer *L;
    const nx_machine *m;
    const nx_prepared *op;
    const void *inputs[1];
    nx_run_result res;
    int have_res;
    nx_error err;
} leaf_ctx;

static int leaf_once(void *v) {
    leaf_ctx *c = v;
    if (c->have_res) nx_run_result_free(&c->res);
    nx_run_options opt = {.backend = NX_RUN_MODEL, .grid = 2, .threads = 1};
    c->have_res = 1;
    return nx_run_op(c->L, c->m, c->op, c->inputs, &opt, &c->res, &c->err);
}

/* Pseudo-random fp32 bits, exponents kept away from NaN/Inf. */
static void fill_fp32(uint32_t *x, uint64_t n) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < n; i++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        x[i] = (uint32_t)((s * 0x2545f4914f6cdd1dull) >> 32) & 0xbfffffffu;
    }
}

static void leaf_point(nx_lowerer *L, const nx_machine *m, uint32_t n, point *p) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    nx_prepared op;
    nx_prepared_init(&op);
    uint64_t shape[2] = {n, n};
    static const uint64_t perm[2] = {1, 0};
    nx_value v;
    nx_error err;
    p->size = n;
    p->units = 2.0 * n * n * 4;
    uint32_t *x = NULL;
    leaf_ctx c = {.L = L, .m = m, .op = &op};
    const nx_program *prog;
    if (nx_macro_op_set_func_name(&given, "tiled_pf_transpose", &err) != 0 ||
        nx_macro_op_add_operand(&given, "x", NX_DT_FP32, 2, shape, &err) != 0 ||
        nx_macro_op_add_result(&given, "y", NX_DT_FP32, 2, shape, &err) != 0 ||
        nx_value_int_list(&v, perm, 2, &err) != 0)
        goto fail;
    if (nx_attrs_set(&given.attrs, "permutation", &v, &err) != 0) {
        nx_value_free(&v);
        goto fail;
    }
    /* traced once before the timed runs: they are the simulation's time */
    if (nx_op_prepare(L, &given, NULL, &op, &err) != 0 || nx_lower_on_grid(L, &op.target, &op.op, 2, &prog, &err) != 0)
        goto fail;
    if (!(x = malloc((size_t)n * n * sizeof *x))) {
        nx_fail(&err, "out of memory for a %u x %u input", n, n);
        goto fail;
    }
    fill_fp32(x, (uint64_t)n * n);
    c.inputs[0] = x;
    if (repeat(NULL, leaf_once, &c, p) != 0) {
        err = c.err;
        goto fail;
    }
    p->insns = c.res.trace.sim.instructions;
    p->sim_ns = c.res.trace.sim.total_ns;
    const uint32_t *y = (const uint32_t *)(const void *)c.res.results[0];
    p->ok = 1;
    for (uint64_t i = 0; i < n && p->ok; i++)
        for (uint64_t j = 0; j < n && p->ok; j++) p->ok = y[j * n + i] == x[i * n + j];
    if (!p->ok) snprintf(p->why, sizeof p->why, "values: y differs from x transposed");
    goto out;
fail:
    snprintf(p->why, sizeof p->why, "%s", err.msg);
out:
    if (c.have_res) nx_run_result_free(&c.res);
    free(x);
    nx_prepared_free(&op);
    nx_macro_op_free(&given);
}

/* ---- figures ---- */

static double per_unit_ns(const point *p) { return p->units > 0 ? 1e9 * p->host_s / p->units : 0; }
static double per_insn_ns(const point *p) { return p->insns > 0 ? 1e9 * p->host_s / (double)p->insns : 0; }

static void size_text(const series *s, const point *p, char *buf, size_t len) {
    if (strcmp(s->unit, "MAC") == 0) snprintf(buf, len, "%" PRIu64 "^3", p->size);
    else if (strcmp(s->unit, "byte") == 0) snprintf(buf, len, "%" PRIu64 "^2", p->size);
    else snprintf(buf, len, "%" PRIu64, p->size);
}

/* max/min - 1 of f over the points that ran; -1 when one did not. */
static double spread(const series *s, double (*f)(const point *)) {
    double lo = 0, hi = 0;
    for (int i = 0; i < SIZES; i++) {
        if (!s->pt[i].ok) return -1;
        double v = f(&s->pt[i]);
        if (i == 0 || v < lo) lo = v;
        if (i == 0 || v > hi) hi = v;
    }
    return lo > 0 ? hi / lo - 1 : -1;
}

static int write_svg(const char *dir, const nx_machine *m, series *S, int ns, nx_error *err) {
    double rel[3][SIZES];
    char names[3][160];
    nx_plot_series ps[3];
    for (int s = 0; s < ns; s++) {
        double last = per_unit_ns(&S[s].pt[SIZES - 1]);
        int len = snprintf(names[s], sizeof names[s], "%s, per %s (sizes", S[s].name, S[s].unit);
        for (int i = 0; i < SIZES; i++) {
            rel[s][i] = last > 0 ? per_unit_ns(&S[s].pt[i]) / last : 0;
            char sz[32];
            size_text(&S[s], &S[s].pt[i], sz, sizeof sz);
            if (len > 0 && (size_t)len < sizeof names[s])
                len += snprintf(names[s] + len, sizeof names[s] - (size_t)len, "%s%s", i ? ", " : " ", sz);
        }
        if (len > 0 && (size_t)len < sizeof names[s]) snprintf(names[s] + len, sizeof names[s] - (size_t)len, ")");
        ps[s] = (nx_plot_series){names[s], SIZES, rel[s]};
    }
    char path[4096], sub[256];
    snprintf(path, sizeof path, "%s/scaling.svg", dir);
    snprintf(sub, sizeof sub, "machine %s, SystemC model, one host thread; host time per unit of work over the "
                              "same at the largest size (green: within 20%%)", m->geo.name);
    nx_plot p = {"nxsim scaling: host time per unit of simulated work", sub, "size step (each about 4-8x the work)",
                 "host time per unit / at the largest size", ps, (size_t)ns, 0.8, 1.2};
    if (nx_profile_write_plot(path, &p, err) != 0) return -1;
    printf("plot: %s\n", path);
    return 0;
}

int nx_bench_scaling_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE | NX_BENCH_OPT_OUT_DIR,
                                    usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if (nx_bench_machine(argv[0], a.machine, &m) != 0) return 2;
    const char *out_dir = a.out_dir ? a.out_dir : ".";
    if (nx_bench_prepare_dir(argv[0], "--out-dir", out_dir, sizeof "scaling.svg") != 0) return 2;
    static const uint32_t gemm_full[SIZES] = {512, 1024, 2048, 4096}, gemm_quick[SIZES] = {128, 256, 512, 1024};
    static const uint32_t chain_full[SIZES] = {25000, 100000, 400000, 1600000},
                          chain_quick[SIZES] = {2500, 5000, 10000, 20000};
    static const uint32_t leaf_full[SIZES] = {512, 1024, 2048, 4096}, leaf_quick[SIZES] = {128, 256, 512, 1024};
    const uint32_t *gs = a.quick ? gemm_quick : gemm_full, *cs = a.quick ? chain_quick : chain_full,
                   *ls = a.quick ? leaf_quick : leaf_full;
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    if (!L) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    series S[3] = {{"gemm bf16", "MAC", {{0}}}, {"dve chain", "insn", {{0}}}, {"tiled_pf_transpose fp32 grid 2", "byte", {{0}}}};
    printf("%s: machine %s, SystemC model, one host thread; host time = least wall of up to %d runs (>= %.1f s)\n",
           argv[0], m.geo.name, MAX_REPEATS, MIN_REPEAT_S);
    printf("%-32s %10s %14s %10s %12s %10s %4s %10s %10s %6s %s\n", "series", "size", "work", "insns", "sim_us",
           "host_s", "reps", "ns/insn", "ns/unit", "rel", "result");
    int status = 0;
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < SIZES; i++) {
            point *p = &S[s].pt[i];
            if (s == 0) gemm_point(&m, gs[i], p);
            else if (s == 1) chain_point(&m, cs[i], p);
            else leaf_point(L, &m, ls[i], p);
        }
        double last = per_unit_ns(&S[s].pt[SIZES - 1]);
        for (int i = 0; i < SIZES; i++) {
            const point *p = &S[s].pt[i];
            char sz[32];
            size_text(&S[s], p, sz, sizeof sz);
            if (!p->ok) {
                printf("%-32s %10s  error: %s\n", S[s].name, sz, p->why);
                status = 1;
                continue;
            }
            printf("%-32s %10s %9.4g %-4s %10" PRIu64 " %12.1f %10.4f %4d %10.1f %10.4g %6.2f ok\n", S[s].name, sz,
                   p->units, S[s].unit, p->insns, p->sim_ns / 1e3, p->host_s, p->repeats, per_insn_ns(p),
                   per_unit_ns(p), last > 0 ? per_unit_ns(p) / last : 0);
        }
        fflush(stdout);
    }
    printf("%-32s %14s %14s %s\n", "spread (max/min - 1)", "per unit", "per insn", "flat (per unit, <= 20%)");
    for (int s = 0; s < 3; s++) {
        double u = spread(&S[s], per_unit_ns), k = spread(&S[s], per_insn_ns);
        if (u < 0) {
            printf("%-32s %14s %14s -\n", S[s].name, "-", "-");
            continue;
        }
        printf("%-32s %13.1f%% %13.1f%% %s\n", S[s].name, 100 * u, 100 * k, u <= FLAT_SPREAD ? "yes" : "no");
    }
    if (status == 0) {
        nx_error err;
        if (write_svg(out_dir, &m, S, 3, &err) != 0) {
            fprintf(stderr, "%s: %s\n", argv[0], err.msg);
            status = 1;
        }
    }
    nx_lowerer_free(L);
    return status;
}
