/* nxsim-bench-wgrad: the weight-gradient convolutions (kernels/conv/wgrad/wgrad.h)
 * at full size, through the registry's run path (nx_run_op: lower, run on
 * the SystemC model) against the conv reference:
 *
 *   resnet50-conv1   #5 Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: out
 *                    [7,7,3,64] from img [16,3,224,224] and the output
 *                    gradient [16,64,112,112], padding [[3,2],[3,2]],
 *                    rhs_dilation [2,2] (ResNet-50 conv1's weight gradient)
 *   mobilenet-dw     #7 conv2d_column_packing: a 3x3 depthwise layer of
 *                    112x112x32, batch 32, padding 1 (out [3,3,1,32])
 *   mobilenet-dw-io10  #8 conv2d_column_packing_io10: the same layer with
 *                    the gradient's spatial dims swapped
 *
 * in bf16 and fp32. Per case: the trace's wall time, the simulator's wall
 * and CPU time, the simulated time beside its bound and the fraction
 * achieved, the reference's (nx_ref_conv: im2col + OpenBLAS sgemm) wall and
 * CPU time and the simulator/reference ratio, and the values against the
 * reference under the key's --check tolerance, with the largest error in
 * ulps of the output dtype at the result's largest magnitude.
 *
 * The bound is the larger of
 *   PE:  useful MACs / (pe_rows x pe_cols) PE cycles (x pe_fp32_factor for
 *        fp32): the array full every cycle with products that are kept;
 *   DMA: (img + filt + out bytes) / min(dma_engines x engine bytes/ns, HBM
 *        bytes/ns): every byte moved once at full DMA efficiency.
 * Targets (docs/parts/wgrad.md): #5 >= 50% of its bound, #7/#8 >= 30%; simulator wall
 * <= 3x the reference's. Figures only: the exit status is 1 only for wrong
 * values. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leaf_benches.h"
#include "isa/dtype.h"
#include "kernels/conv/wgrad/wgrad_core.h"
#include "registry/check.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/profile.h"
#include "wall_clock.h"
#include "dma_bound.h"

typedef struct wg_case {
    const char *name;
    const char *key;
    uint64_t img[4], filt[4];
    const char *attrs; /* name=JSON;... */
    int depthwise;
    double target; /* the target fraction of the bound (docs/parts/wgrad.md) */
} wg_case;

static const wg_case CASES[] = {
    {"resnet50-conv1", "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh", {16, 3, 224, 224}, {16, 64, 112, 112},
     "padding=[[3,2],[3,2]];rhs_dilation=[2,2]", 0, 0.50},
    {"mobilenet-dw", "conv2d_column_packing", {32, 32, 112, 112}, {32, 32, 112, 112},
     "padding=[[1,1],[1,1]];batch_group_count=32", 1, 0.30},
    {"mobilenet-dw-io10", "conv2d_column_packing_io10", {32, 32, 112, 112}, {32, 32, 112, 112},
     "padding=[[1,1],[1,1]];batch_group_count=32", 1, 0.30},
};

typedef struct wg_result {
    double trace_s, sim_s, sim_cpu_s, sim_ns, ref_s, ref_cpu_s, pe_ns, dma_ns, pe_busy_ns, max_err_ulp;
    uint64_t bad, insns;
    int ok;
    char tol[64];
} wg_result;

typedef struct bench_opts {
    int summary;           /* print each run's profile summary */
    const char *trace_dir; /* write DIR/<case>-<dtype>.json */
} bench_opts;

static int build_op(const wg_case *c, nx_dtype dt, nx_macro_op *op, nx_error *err) {
    nx_macro_op_init(op);
    if (nx_macro_op_set_func_name(op, c->key, err) != 0 ||
        nx_macro_op_add_operand(op, "img", dt, 4, c->img, err) != 0 ||
        nx_macro_op_add_operand(op, "filt", dt, 4, c->filt, err) != 0)
        return -1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", c->attrs);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        nx_value v;
        if (nx_value_parse(tok, eq + 1, &v, err) != 0) return -1;
        if (nx_attrs_set(&op->attrs, tok, &v, err) != 0) {
            nx_value_free(&v);
            return -1;
        }
    }
    return 0;
}

static uint64_t elems(const uint64_t *s, uint32_t nd) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < nd; i++) n *= s[i];
    return n;
}

static int run_case(nx_lowerer *L, const nx_machine *m, const wg_case *c, nx_dtype dt, const bench_opts *bo,
                    wg_result *r, nx_error *err) {
    memset(r, 0, sizeof *r);
    nx_macro_op given;
    nx_prepared p;
    nx_prepared_init(&p);
    int rc = -1;
    uint8_t *want = NULL;
    if (build_op(c, dt, &given, err) != 0 || nx_op_prepare(L, &given, NULL, &p, err) != 0) goto out;
    const nx_kernel_target tgt = p.target;
    const nx_macro_op *op = &p.op;
    size_t es = nx_dtype_size(dt);
    uint64_t n_in[2] = {elems(c->img, 4), elems(c->filt, 4)};
    uint64_t n_out = elems(op->results[0].shape, op->results[0].ndims);
    want = calloc(n_out, es);
    if (!want) {
        nx_fail(err, "out of memory");
        goto out;
    }
    /* the trace, timed on its own; the run is then a cache hit */
    double t0 = nx_bench_now_s();
    const nx_program *prog;
    if (nx_lower(L, &tgt, op, &prog, NULL, err) != 0) goto out;
    r->trace_s = nx_bench_now_s() - t0;

    /* operands: nx_run_op's pseudo-random values in [-1, 1) from the seed */
    nx_run_options opt = {.backend = NX_RUN_MODEL, .keep_log = bo->trace_dir != NULL, .seed = 1};
    nx_run_result res;
    t0 = nx_bench_now_s();
    double c0 = nx_bench_cpu_s();
    if (nx_run_op(L, m, &p, NULL, &opt, &res, err) != 0) {
        nx_run_result_free(&res);
        goto out;
    }
    r->sim_cpu_s = nx_bench_cpu_s() - c0;
    r->sim_s = nx_bench_now_s() - t0;
    r->sim_ns = res.trace.sim.total_ns;
    r->insns = res.trace.sim.instructions;
    r->pe_busy_ns = res.trace.sim.engine[0][NX_ENG_PE].busy_ns;
    if (bo->summary) nx_profile_summary(stdout, m, res.prog, &res.trace.sim);
    if (bo->trace_dir) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s-%s.json", bo->trace_dir, c->name, nx_dtype_name(dt));
        if (nx_profile_write_trace(path, m, res.prog, &res.trace.sim, err) != 0)
            fprintf(stderr, "nxsim-bench-wgrad: %s\n", err->msg);
    }

    /* the reference on the same operands (still in the final HBM: the leaf
     * only reads them), timed */
    const void *inputs[2];
    for (int i = 0; i < 2; i++)
        inputs[i] = res.state.hbm + res.prog->tensors[res.operand_tensor[i]].offset;
    void *outs[1] = {want};
    t0 = nx_bench_now_s();
    c0 = nx_bench_cpu_s();
    int rrc = tgt.rules->reference(op, inputs, outs, err);
    r->ref_cpu_s = nx_bench_cpu_s() - c0;
    r->ref_s = nx_bench_now_s() - t0;
    if (rrc != 0) {
        nx_run_result_free(&res);
        goto out;
    }
    nx_tolerance tol;
    nx_check_result chk;
    if (nx_op_rules_tolerance(tgt.rules, op, 0, &tol, err) != 0) {
        nx_run_result_free(&res);
        goto out;
    }
    nx_check_compare(dt, res.results[0], want, n_out, &tol, &chk);
    snprintf(r->tol, sizeof r->tol, "%s", tol.text);
    r->bad = chk.bad;
    r->ok = chk.bad == 0;
    /* the largest error in ulps of dt at the largest |ref| */
    double big = 0;
    for (uint64_t i = 0; i < n_out; i++) big = fmax(big, fabs(nx_dtype_load(dt, want + i * es)));
    double ulp = big > 0 ? ldexp(1.0, ilogb(big)) * nx_dtype_epsilon(dt) : 1;
    r->max_err_ulp = chk.max_abs / ulp;
    nx_run_result_free(&res);

    /* the bound: useful MACs on a full PE array, or every byte moved once */
    double macs = (double)n_out * (double)c->filt[0] * (double)(c->filt[2] * c->filt[3]);
    r->pe_ns = nx_bench_pe_bound_ns(m, macs, dt);
    double bytes = (double)(n_in[0] + n_in[1] + n_out) * (double)es;
    double bw = nx_bench_core_dma_bytes_per_ns(m);
    r->dma_ns = bytes / bw;
    rc = 0;
out:
    free(want);
    nx_prepared_free(&p);
    nx_macro_op_free(&given);
    return rc;
}

/* The plan the leaf chooses for the case, for the report. */
static void describe_plan(const nx_machine *m, const wg_case *c, nx_dtype dt, char *buf, size_t len) {
    nx_wg_problem p;
    memset(&p, 0, sizeof p);
    p.leaf = c->key, p.kind = c->depthwise ? NX_WG_DEPTHWISE : NX_WG_DENSE, p.dt = dt, p.es = nx_dtype_size(dt);
    p.CI = c->img[0], p.N = c->img[1], p.H = (int64_t)c->img[2], p.W = (int64_t)c->img[3];
    p.CO = c->filt[1], p.HF = (int64_t)c->filt[2], p.WF = (int64_t)c->filt[3];
    p.sy = p.sx = p.rdy = p.rdx = 1;
    if (!c->depthwise) p.rdy = p.rdx = 2, p.ply = p.plx = 3, p.K0 = p.K1 = 7;
    else p.ply = p.plx = 1, p.K0 = p.K1 = 3;
    p.img_name = "img", p.filt_name = "filt";
    nx_wg_plan pl;
    nx_error err;
    if (nx_wg_plan_make(&m->geo, &p, NULL, &pl, &err) != 0) snprintf(buf, len, "%.200s", err.msg);
    else nx_wg_plan_describe(&pl, buf, len);
}

static void usage(FILE *f) {
    fprintf(f, "Usage: nxsim-bench-wgrad [--machine NAME|FILE] [--case PREFIX] [--dtype bf16|fp32]"
               " [--summary] [--trace-dir DIR]\n");
}

int nx_bench_wgrad_main(int argc, char **argv) {
    nx_bench_args a;
    const unsigned takes = NX_BENCH_OPT_MACHINE | NX_BENCH_OPT_CASE | NX_BENCH_OPT_DTYPE |
                           NX_BENCH_OPT_SUMMARY | NX_BENCH_OPT_TRACE_DIR;
    int st = nx_bench_args_or_usage(argc, argv, takes, usage, &a);
    if (st >= 0) return st;
    const char *machine = a.machine, *only = a.n_cases ? a.cases[a.n_cases - 1] : NULL, *dtype = a.dtype;
    bench_opts bo = {.summary = a.summary, .trace_dir = a.trace_dir};
    nx_error err;
    nx_machine m;
    if (nx_bench_machine(argv[0], machine, &m) != 0) return 2;
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    if (!L) {
        fprintf(stderr, "nxsim-bench-wgrad: out of memory\n");
        return 1;
    }
    const char *nt = getenv("OPENBLAS_NUM_THREADS"), *ct = getenv("OPENBLAS_CORETYPE");
    printf("nxsim-bench-wgrad: machine %s (PE %ux%u at %.2f GHz; DMA %u x %.0f B/ns, HBM %.0f B/ns); reference: "
           "nx_ref_conv (OpenBLAS sgemm), OPENBLAS_NUM_THREADS=%s OPENBLAS_CORETYPE=%s\n",
           m.geo.name, m.geo.pe_rows, m.geo.pe_cols, m.clock_ghz[NX_ENG_PE], m.geo.dma_engines, m.dma_engine_bytes_per_ns,
           m.hbm_bytes_per_ns, nt ? nt : "(unset)", ct ? ct : "(unset)");
    printf("%-18s %-5s %8s %8s %8s %9s %9s %9s %8s %6s %-4s %7s %8s %8s %7s %7s %s\n", "case", "dtype", "trace_s",
           "sim_s", "sim_cpu", "sim_us", "pe_us", "dma_us", "of_bound", "target", "met", "pe_busy", "ref_s", "ref_cpu",
           "wall_x", "cpu_x", "values");
    int status = 0;
    static const nx_dtype dts[] = {NX_DT_BF16, NX_DT_FP32};
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        if (only && strncmp(CASES[c].name, only, strlen(only)) != 0) continue;
        for (size_t d = 0; d < 2; d++) {
            if (dtype && strcmp(dtype, nx_dtype_name(dts[d])) != 0) continue;
            wg_result r;
            if (run_case(L, &m, &CASES[c], dts[d], &bo, &r, &err) != 0) {
                printf("%-18s %-5s error: %s\n", CASES[c].name, nx_dtype_name(dts[d]), err.msg);
                status = 1;
                continue;
            }
            double bound = r.pe_ns > r.dma_ns ? r.pe_ns : r.dma_ns, frac = bound / r.sim_ns;
            printf("%-18s %-5s %8.2f %8.2f %8.2f %9.1f %9.1f %9.1f %7.1f%% %5.0f%% %-4s %6.0f%% %8.3f %8.3f %6.2fx "
                   "%6.2fx %s (max err %.2g ulp; %s)\n",
                   CASES[c].name, nx_dtype_name(dts[d]), r.trace_s, r.sim_s, r.sim_cpu_s, r.sim_ns / 1e3,
                   r.pe_ns / 1e3, r.dma_ns / 1e3, 100.0 * frac, 100.0 * CASES[c].target,
                   frac >= CASES[c].target ? "yes" : "NO", 100.0 * r.pe_busy_ns / r.sim_ns, r.ref_s,
                   r.ref_cpu_s, r.sim_s / r.ref_s, r.sim_cpu_s / r.ref_cpu_s, r.ok ? "ok" : "WRONG", r.max_err_ulp,
                   r.tol);
            char plan[256];
            describe_plan(&m, &CASES[c], dts[d], plan, sizeof plan);
            printf("    plan: %s; %llu instructions\n", plan, (unsigned long long)r.insns);
            fflush(stdout);
            if (!r.ok) status = 1;
        }
    }
    printf("of_bound: the bound (max of pe_us and dma_us) over the simulated time; target, met: the target "
           "(#5 50%%, #7/#8 30%%) and whether of_bound reaches it; pe_busy: PE busy time over the simulated time; wall_x, cpu_x: the simulator's wall and CPU time over the reference's.\n");
    nx_lowerer_free(L);
    return status;
}
