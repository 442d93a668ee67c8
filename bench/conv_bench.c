/* nxsim-bench-conv: the dense PE convolutions (#3
 * conv2d_pbp_0f1b_0i1o_01fb_experimental_1, #4
 * conv2d_pbp_fb01_io01_01bf_kernel_experimental_1) on ResNet-50 stage
 * shapes, traced on one core and run on the SystemC model:
 *
 *   resnet-56x56x64    56x56x64 -> 64, 3x3, padding 1, batch 1
 *   resnet-28x28x128s2 28x28x128 -> 128, 3x3, stride 2, padding 1, batch 8
 *   resnet-14x14x256   14x14x256 -> 256, 3x3, padding 1, batch 8 (stage 3)
 *
 * in bf16 and fp32. Per case: trace and simulation wall time, simulated
 * time beside its bound and the fraction achieved, the reference's wall
 * time on the same convolution (nx_ref_conv: im2col + OpenBLAS sgemm) and
 * the ratio of the two walls, and whether the values match the reference
 * (the exit status is 1 only on wrong values; times never decide it).
 *
 * The bound is the larger of
 *   PE:  MACs / (pe_rows x pe_cols) PE cycles (x pe_fp32_factor for fp32),
 *        the array fully used by every cycle;
 *   DMA: (img + filt + out bytes) / min(dma_engines x engine bytes/ns,
 *        HBM bytes/ns), every byte moved once at full DMA efficiency.
 * Targets (docs/parts/conv.md): >= 60% of the bound for C_in, C_out >= 128;
 * simulator wall <= 3x the reference's. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leaf_benches.h"
#include "isa/asm.h"
#include "isa/builder.h"
#include "isa/state.h"
#include "kernels/author/author.h"
#include "kernels/conv/forward/conv2d_pbp.h"
#include "kernels/ref/ref.h"
#include "registry/macro_op.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/profile.h"
#include "dma_bound.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the dense-conv target (docs/parts/conv.md): C_in, C_out >= 128 reach this fraction of the bound */
#define TARGET_OF_BOUND 0.60

typedef struct conv_shape {
    const char *name;
    uint64_t H, W, C, O, N, K;
    const char *attrs; /* name=JSON;... */
} conv_shape;

static const conv_shape SHAPES[] = {
    {"resnet-56x56x64", 56, 56, 64, 64, 1, 3, "padding=[[1,1],[1,1]]"},
    {"resnet-28x28x128s2", 28, 28, 128, 128, 8, 3, "stride=[2,2];padding=[[1,1],[1,1]]"},
    {"resnet-14x14x256", 14, 14, 256, 256, 8, 3, "padding=[[1,1],[1,1]]"},
};

typedef struct leaf_desc {
    const char *key;
    const char *labels;
    nx_leaf_fn fn;
    int fb01; /* 1: img C,N,H,W; filt I,O,KH,KW; out OH,OW,N,O */
} leaf_desc;

static const leaf_desc LEAVES[] = {
    {"#3 0f1b_0i1o->01fb", "0f1b_0i1o->01fb", conv2d_pbp_0f1b_0i1o_01fb_experimental_1, 0},
    {"#4 fb01_io01->01bf", "fb01_io01->01bf", conv2d_pbp_fb01_io01_01bf_kernel_experimental_1, 1},
};

typedef struct result {
    double trace_s, sim_s, sim_ns, ref_s, pe_ns, dma_ns, pe_busy_ns;
    uint64_t insns;
    int ok;
    double max_err;
} result;

static void parse_attrs(const char *text, nx_attrs *a) {
    nx_attrs_init(a);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        nx_value v;
        nx_error err;
        if (nx_value_parse(tok, eq + 1, &v, &err) == 0) nx_attrs_set(a, tok, &v, &err);
    }
}

static uint64_t elems(const uint64_t *s) { return s[0] * s[1] * s[2] * s[3]; }

/* splitmix64 values in [-1, 1), stored in dt */
static void fill(uint8_t *p, uint64_t n, nx_dtype dt, uint64_t seed) {
    size_t es = nx_dtype_size(dt);
    uint64_t s = seed;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        nx_dtype_store(dt, p + i * es, -1.0 + 2.0 * (double)(z >> 11) * 0x1.0p-53);
    }
}

typedef struct bench_opts {
    int summary;           /* print each run's profile summary */
    const char *dump;      /* write the program's assembly to this file */
    const char *trace_dir; /* write DIR/<case>-<leaf>-<dtype>.json */
} bench_opts;

static int run_case(const nx_machine *m, const leaf_desc *ld, const conv_shape *cs, nx_dtype dt,
                    const bench_opts *bo, result *r, nx_error *err) {
    memset(r, 0, sizeof *r);
    nx_conv_layout L;
    nx_conv_params p;
    nx_attrs attrs;
    parse_attrs(cs->attrs, &attrs);
    if (nx_conv_layout_parse(ld->labels, &L, err) != 0 || nx_conv_params_read(&attrs, 2, NULL, &p, err) != 0) return -1;
    uint64_t lhs[4], rhs[4], out[4];
    if (ld->fb01) {
        uint64_t a[4] = {cs->C, cs->N, cs->H, cs->W}, b[4] = {cs->C, cs->O, cs->K, cs->K};
        memcpy(lhs, a, sizeof a);
        memcpy(rhs, b, sizeof b);
    } else {
        uint64_t a[4] = {cs->H, cs->C, cs->W, cs->N}, b[4] = {cs->K, cs->C, cs->K, cs->O};
        memcpy(lhs, a, sizeof a);
        memcpy(rhs, b, sizeof b);
    }
    if (nx_conv_result_shape(&L, &p, 4, lhs, 4, rhs, "img", "filt", out, err) != 0) return -1;

    nx_builder *b = nx_builder_new(&m->geo, 1);
    if (!b) return nx_fail(err, "out of memory");
    nx_tensor_ref args[3];
    memset(args, 0, sizeof args);
    static const char *const names[3] = {"img", "filt", "out"};
    const uint64_t *shapes[3] = {lhs, rhs, out};
    for (int i = 0; i < 3; i++) {
        strcpy(args[i].name, names[i]);
        args[i].dtype = dt;
        args[i].ndims = 4;
        memcpy(args[i].shape, shapes[i], sizeof lhs);
        if (nx_builder_tensor(b, names[i], dt, 4, shapes[i], i < 2 ? NX_ROLE_INPUT : NX_ROLE_OUTPUT,
                              &args[i].hbm_offset, err) != 0) {
            nx_builder_free(b);
            return -1;
        }
    }
    nx_kernel_call call = {.args = args, .nargs = 3, .n_inputs = 2, .additional_args = &attrs};
    double t0 = now_s();
    nx_kctx *k = nx_kctx_new(b, 0, 1);
    int rc = k ? ld->fn(k, &call, err) : nx_fail(err, "out of memory");
    if (rc == 0) rc = nx_kctx_finish(k, err);
    nx_kctx_free(k);
    nx_program prog;
    if (rc == 0) rc = nx_builder_finish(b, &prog, err);
    nx_builder_free(b);
    if (rc != 0) return -1;
    r->trace_s = now_s() - t0;
    if (bo->dump) {
        FILE *f = fopen(bo->dump, "w");
        if (f) {
            nx_disassemble(&prog, f, err);
            fclose(f);
        }
    }

    size_t es = nx_dtype_size(dt);
    uint64_t nl = elems(lhs), nr = elems(rhs), no = elems(out);
    nx_state st;
    if (nx_state_init(&st, &m->geo, 1, prog.hbm_bytes, prog.sem_count, err) != 0) {
        nx_program_free(&prog);
        return -1;
    }
    fill(st.hbm + args[0].hbm_offset, nl, dt, 1);
    fill(st.hbm + args[1].hbm_offset, nr, dt, 2);
    nx_sim_options opt = {bo->trace_dir != NULL, 0};
    nx_sim_result res;
    t0 = now_s();
    rc = nx_sim_run(m, &prog, &st, &opt, &res, err);
    r->sim_s = now_s() - t0;
    if (rc != 0) {
        nx_state_free(&st);
        nx_program_free(&prog);
        return -1;
    }
    r->sim_ns = res.total_ns;
    r->insns = res.instructions;
    r->pe_busy_ns = res.engine[0][NX_ENG_PE].busy_ns;
    if (bo->summary) nx_profile_summary(stdout, m, &prog, &res);
    if (bo->trace_dir) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s-%c-%s.json", bo->trace_dir, cs->name, ld->key[1], nx_dtype_name(dt));
        if (nx_profile_write_trace(path, m, &prog, &res, err) != 0) fprintf(stderr, "nxsim-bench-conv: %s\n", err->msg);
    }
    nx_sim_result_free(&res);

    /* the reference on the same inputs, timed */
    uint8_t *want = malloc(no * es);
    if (!want) {
        nx_state_free(&st);
        nx_program_free(&prog);
        return nx_fail(err, "out of memory");
    }
    nx_ref_operand a = {st.hbm + args[0].hbm_offset, dt, 4, lhs}, f = {st.hbm + args[1].hbm_offset, dt, 4, rhs};
    t0 = now_s();
    rc = nx_ref_conv(ld->labels, &p, &a, &f, want, dt, 4, out, err);
    r->ref_s = now_s() - t0;
    if (rc == 0) {
        /* tests/conv_check.h's tolerance: 2 K u sum|terms| + one rounding
         * to the output dtype, sum|terms| = the conv of |img| and |filt| */
        float *ax = malloc(nl * sizeof *ax), *aw = malloc(nr * sizeof *aw), *mag = malloc(no * sizeof *mag);
        rc = ax && aw && mag ? 0 : nx_fail(err, "out of memory");
        for (uint64_t i = 0; rc == 0 && i < nl; i++) ax[i] = (float)fabs(nx_dtype_load(dt, (const uint8_t *)a.data + i * es));
        for (uint64_t i = 0; rc == 0 && i < nr; i++) aw[i] = (float)fabs(nx_dtype_load(dt, (const uint8_t *)f.data + i * es));
        nx_ref_operand aa = {ax, NX_DT_FP32, 4, lhs}, af = {aw, NX_DT_FP32, 4, rhs};
        if (rc == 0) rc = nx_ref_conv(ld->labels, &p, &aa, &af, mag, NX_DT_FP32, 4, out, err);
        uint64_t K = cs->C * cs->K * cs->K;
        double e = dt == NX_DT_FP32 ? 0 : 0x1p-8;
        r->ok = rc == 0;
        const uint8_t *got = st.hbm + args[2].hbm_offset;
        for (uint64_t i = 0; rc == 0 && i < no; i++) {
            double g = nx_dtype_load(dt, got + i * es), w = nx_dtype_load(dt, want + i * es);
            double d = fabs(g - w), lim = 2.0 * (double)K * 0x1p-24 * mag[i] * (1 + 2 * e) + 2 * e * fabs(w) + 1e-30;
            if (d > r->max_err) r->max_err = d;
            if (!(d <= lim)) r->ok = 0;
        }
        free(ax);
        free(aw);
        free(mag);
    }
    free(want);

    /* the bound */
    double macs = (double)out[0] * out[1] * out[2] * out[3] / (double)cs->O * (double)cs->O * (double)cs->C *
                  (double)(cs->K * cs->K);
    r->pe_ns = nx_bench_pe_bound_ns(m, macs, dt);
    double bytes = (double)(nl + nr + no) * (double)es;
    double bw = nx_bench_core_dma_bytes_per_ns(m);
    r->dma_ns = bytes / bw;
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_attrs_free(&attrs);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f, "Usage: nxsim-bench-conv [--machine NAME|FILE] [--case PREFIX]"
               " [--summary] [--trace-dir DIR] [--dump FILE.nxs]\n");
}

int nx_bench_conv_main(int argc, char **argv) {
    nx_bench_args a;
    const unsigned takes = NX_BENCH_OPT_MACHINE | NX_BENCH_OPT_CASE | NX_BENCH_OPT_DUMP |
                           NX_BENCH_OPT_SUMMARY | NX_BENCH_OPT_TRACE_DIR;
    int st = nx_bench_args_or_usage(argc, argv, takes, usage, &a);
    if (st >= 0) return st;
    const char *machine = a.machine, *only = a.n_cases ? a.cases[a.n_cases - 1] : NULL;
    bench_opts bo = {.summary = a.summary, .dump = a.dump, .trace_dir = a.trace_dir};
    nx_error err;
    nx_machine m;
    if (nx_bench_machine(argv[0], machine, &m) != 0) return 2;
    const char *nt = getenv("OPENBLAS_NUM_THREADS"), *ct = getenv("OPENBLAS_CORETYPE");
    printf("nxsim-bench-conv: machine %s (PE %ux%u at %.2f GHz; DMA %u x %.0f B/ns, HBM %.0f B/ns); reference: "
           "OpenBLAS sgemm, OPENBLAS_NUM_THREADS=%s OPENBLAS_CORETYPE=%s\n",
           m.geo.name, m.geo.pe_rows, m.geo.pe_cols, m.clock_ghz[NX_ENG_PE], m.geo.dma_engines, m.dma_engine_bytes_per_ns,
           m.hbm_bytes_per_ns, nt ? nt : "(unset)", ct ? ct : "(unset)");
    printf("%-20s %-20s %-5s %8s %8s %9s %9s %9s %8s %6s %-4s %7s %8s %6s %s\n", "case", "leaf", "dtype", "trace_s",
           "sim_s", "sim_us", "pe_us", "dma_us", "of_bound", "target", "met", "pe_busy", "ref_s", "sim/ref", "values");
    int status = 0;
    static const nx_dtype dts[] = {NX_DT_BF16, NX_DT_FP32};
    for (size_t c = 0; c < sizeof SHAPES / sizeof SHAPES[0]; c++) {
        if (only && strncmp(SHAPES[c].name, only, strlen(only)) != 0) continue;
        for (size_t l = 0; l < sizeof LEAVES / sizeof LEAVES[0]; l++)
            for (size_t d = 0; d < 2; d++) {
                result r;
                if (run_case(&m, &LEAVES[l], &SHAPES[c], dts[d], &bo, &r, &err) != 0) {
                    printf("%-20s %-20s %-5s error: %s\n", SHAPES[c].name, LEAVES[l].key, nx_dtype_name(dts[d]),
                           err.msg);
                    status = 1;
                    continue;
                }
                double bound = r.pe_ns > r.dma_ns ? r.pe_ns : r.dma_ns, frac = bound / r.sim_ns;
                /* the target applies to C_in, C_out >= 128 */
                int targeted = SHAPES[c].C >= 128 && SHAPES[c].O >= 128;
                char tgt[16], met[8];
                snprintf(tgt, sizeof tgt, "%s", targeted ? "60%" : "-");
                snprintf(met, sizeof met, "%s", !targeted ? "-" : frac >= TARGET_OF_BOUND ? "yes" : "NO");
                printf("%-20s %-20s %-5s %8.2f %8.2f %9.1f %9.1f %9.1f %7.1f%% %6s %-4s %6.0f%% %8.3f %6.2fx %s (max err "
                       "%.2g)\n",
                       SHAPES[c].name, LEAVES[l].key, nx_dtype_name(dts[d]), r.trace_s, r.sim_s, r.sim_ns / 1e3,
                       r.pe_ns / 1e3, r.dma_ns / 1e3, 100.0 * frac, tgt, met, 100.0 * r.pe_busy_ns / r.sim_ns, r.ref_s,
                       r.sim_s / r.ref_s, r.ok ? "ok" : "WRONG", r.max_err);
                fflush(stdout);
                if (!r.ok) status = 1;
            }
    }
    printf("of_bound: the bound (max of pe_us and dma_us) over the simulated time; target, met: the target "
           "(60%% for C_in, C_out >= 128) and whether of_bound reaches it; pe_busy: PE busy time over the simulated "
           "time; sim/ref: simulator wall over the reference's wall.\n");
    return status;
}
