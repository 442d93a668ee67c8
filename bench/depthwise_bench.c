/* nxsim-bench-depthwise: the depthwise forward conv leaves at realistic
 * sizes, lowered through the registry and run on the SystemC model:
 *   dw3x3-112x112x32   a MobileNet depthwise 3x3, padding 1, 32 channels
 *                      of 112 x 112, batch 1: conv2d_column_packing_1 (#9,
 *                      img 1,C,H,W) and conv2d_depthwise_f01b_o01i_bf01
 *                      (#11, img C,H,W,N);
 *   conv1d-4096x1024   a causal depthwise conv1d (Mamba-style: 4 taps,
 *                      padding [3, 0]) over 4096 positions x 1024 channels,
 *                      batch 1: Conv1d_depthwise_bf01_oi01_bf01 (#6);
 * each in fp32 and bf16. Per case it prints the trace and model wall times,
 * the simulated time, every engine's busy time, the DMA/HBM bound, the
 * bound (the largest of those, named), the achieved fraction bound /
 * simulated, the reference's wall time (nx_ref_conv, OpenBLAS) on the same
 * convolution and the ratio of the two wall times. Figures only: the exit
 * status is 1 only if a result is wrong (checked against the reference
 * under the key's --check tolerance).
 *
 * The DMA/HBM bound: the image, filter and output move through DMA at
 * least once, at most min(dma_engines x engine bandwidth, HBM bandwidth)
 * on one core; beside it, the same for the bytes the leaf actually moves
 * (conv2d_column_packing_1 loads each image row once per replica). The
 * engine-busy figures are the model's busy time of each engine for this
 * leaf's instructions (PE: the matmul costs of its schedule; DVE/ACT/POOL:
 * its products, accumulations and PSUM evacuations). The bound printed is
 * the largest of the engine-busy figures and the DMA/HBM bound of the
 * compulsory bytes. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leaf_benches.h"
#include "isa/state.h"
#include "registry/check.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/prepare.h"
#include "registry/registry.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "dma_bound.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the process (every thread): robust where the host is shared. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct dw_bench {
    const char *name;
    const char *key;
    uint64_t img[4], filt[4];
    int64_t pad[4];       /* [lo_h, hi_h, lo_w, hi_w] */
    int64_t groups;
} dw_bench;

static const dw_bench CASES[] = {
    {"dw3x3-112x112x32", "conv2d_column_packing_1", {1, 32, 112, 112}, {32, 1, 3, 3}, {1, 1, 1, 1}, 32},
    {"dw3x3-112x112x32", "conv2d_depthwise_f01b_o01i_bf01", {32, 112, 112, 1}, {32, 3, 3, 1}, {1, 1, 1, 1}, 32},
    {"conv1d-4096x1024", "Conv1d_depthwise_bf01_oi01_bf01", {1, 1024, 1, 4096}, {1024, 1, 1, 4}, {0, 0, 3, 0}, 1024},
};
static const dw_bench QUICK[] = {
    {"dw3x3-28x28x32", "conv2d_column_packing_1", {1, 32, 28, 28}, {32, 1, 3, 3}, {1, 1, 1, 1}, 32},
    {"dw3x3-28x28x32", "conv2d_depthwise_f01b_o01i_bf01", {32, 28, 28, 1}, {32, 3, 3, 1}, {1, 1, 1, 1}, 32},
    {"conv1d-512x256", "Conv1d_depthwise_bf01_oi01_bf01", {1, 256, 1, 512}, {256, 1, 1, 4}, {0, 0, 3, 0}, 256},
};

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-depthwise [--quick] [--case PREFIX] [--race-check] [--machine NAME|FILE]\n"
          "Runs the depthwise conv leaves (#6, #9, #11) on the SystemC model and prints\n"
          "simulated time against the engine-busy and DMA/HBM bounds, and the model's wall\n"
          "time against the conv reference's.\n",
          f);
}

static int build_op(const dw_bench *c, nx_dtype dt, nx_macro_op *op, nx_error *err) {
    nx_macro_op_init(op);
    uint64_t u[2] = {0, 0};
    nx_value pad;
    if (nx_macro_op_set_func_name(op, c->key, err) != 0 || nx_macro_op_add_operand(op, "img", dt, 4, c->img, err) != 0 ||
        nx_macro_op_add_operand(op, "filt", dt, 4, c->filt, err) != 0 || nx_value_int_list(&pad, u, 2, err) != 0)
        return -1;
    for (int d = 0; d < 2; d++) {
        nx_value_free(&pad.items[d]);
        if (nx_value_int_list(&pad.items[d], u, 2, err) != 0) return -1;
        pad.items[d].items[0].i = c->pad[2 * d];
        pad.items[d].items[1].i = c->pad[2 * d + 1];
    }
    if (nx_attrs_set(&op->attrs, "padding", &pad, err) != 0) return -1;
    nx_value g = nx_value_int(c->groups);
    if (nx_attrs_set(&op->attrs, "feature_group_count", &g, err) != 0) return -1;
    return 0;
}

static uint64_t elems(const nx_op_tensor *t) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->ndims; i++) n *= t->shape[i];
    return n;
}

static void fill(uint8_t *p, uint64_t n, nx_dtype dt, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t sz = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        double v = (double)((s * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        nx_dtype_store(dt, p + i * sz, v);
    }
}

static int run_case(nx_lowerer *L, const nx_machine *m, const dw_bench *c, nx_dtype dt, int race, int *wrong,
                    nx_error *err) {
    nx_macro_op given;
    nx_prepared prep;
    if (build_op(c, dt, &given, err) != 0 || nx_op_prepare(L, &given, NULL, &prep, err) != 0) {
        nx_macro_op_free(&given);
        return -1;
    }
    nx_macro_op_free(&given);
    nx_macro_op op = prep.op; /* the prepared op, owned here from now on */
    nx_macro_op_init(&prep.op);
    int rc = -1;
    nx_state st;
    int have_state = 0;
    uint8_t *ref = NULL;
    nx_sim_result res;
    memset(&res, 0, sizeof res);
    double t0 = now_s();
    const nx_program *prog;
    if (nx_lower(L, &prep.target, &op, &prog, NULL, err) != 0) goto out;
    double trace_s = now_s() - t0;
    if (nx_state_init(&st, &m->geo, prog->cores, prog->hbm_bytes, prog->sem_count, err) != 0) goto out;
    have_state = 1;
    const nx_tensor_decl *ti = &prog->tensors[nx_program_find_tensor(prog, "img")];
    const nx_tensor_decl *tf = &prog->tensors[nx_program_find_tensor(prog, "filt")];
    const nx_tensor_decl *to = &prog->tensors[nx_program_find_tensor(prog, "out0")];
    size_t sz = nx_dtype_size(dt);
    uint64_t ni = elems(&op.operands[0]), nf = elems(&op.operands[1]), no = elems(&op.results[0]);
    fill(st.hbm + ti->offset, ni, dt, 1);
    fill(st.hbm + tf->offset, nf, dt, 2);
    nx_sim_options opt = {race, 0};
    t0 = now_s();
    double c0 = cpu_s();
    if (nx_sim_run(m, prog, &st, &opt, &res, err) != 0) goto out;
    double sim_wall = now_s() - t0, sim_cpu = cpu_s() - c0;
    const char *race_txt = "not run";
    if (race) {
        nx_error rerr;
        race_txt = nx_race_check(prog, res.log, res.log_count, &rerr) == 0 ? "race-free" : "RACE";
        if (race_txt[0] == 'R') *wrong = 1, fprintf(stderr, "  race: %s\n", rerr.msg);
    }

    /* the reference on the same convolution, timed */
    const nx_op_rules *rules = prep.target.rules;
    ref = calloc(no, sz);
    if (!ref) {
        nx_fail(err, "out of memory");
        goto out;
    }
    const void *ins[2] = {st.hbm + ti->offset, st.hbm + tf->offset};
    void *outs[1] = {ref};
    t0 = now_s();
    c0 = cpu_s();
    if (rules->reference(&op, ins, outs, err) != 0) goto out;
    double ref_wall = now_s() - t0, ref_cpu = cpu_s() - c0;
    nx_tolerance tol;
    if (nx_op_rules_tolerance(rules, &op, 0, &tol, err) != 0) goto out;
    nx_check_result cr;
    nx_check_compare(dt, st.hbm + to->offset, ref, no, &tol, &cr);
    if (cr.bad) *wrong = 1;

    /* bounds */
    double dma_bw = nx_bench_core_dma_bytes_per_ns(m);
    double dma_ns = (double)((ni + nf + no) * sz) / dma_bw;
    static const char *const names[4] = {"PE", "DVE", "ACT", "POOL"};
    double busy[4], bound = dma_ns;
    const char *which = "DMA/HBM";
    for (int k = 0; k < 4; k++) {
        busy[k] = res.engine[0][k].busy_ns;
        if (busy[k] > bound) bound = busy[k], which = names[k];
    }
    printf("%-18s %-32s %-5s trace %6.3f s  model %7.3f s wall  simulated %9.1f us\n", c->name, c->key,
           nx_dtype_name(dt), trace_s, sim_wall, res.total_ns / 1e3);
    double moved = 0;
    for (uint32_t q = 0; q < res.dma_queues; q++) moved += (double)nx_sim_queue_bytes(&res, 0, q);
    printf("    busy: PE %.1f us, DVE %.1f us, ACT %.1f us, POOL %.1f us; DMA/HBM bound %.1f us (%.1f MB at %.0f B/ns; "
           "the leaf moves %.1f MB: %.1f us)\n",
           busy[0] / 1e3, busy[1] / 1e3, busy[2] / 1e3, busy[3] / 1e3, dma_ns / 1e3,
           (double)((ni + nf + no) * sz) / 1e6, dma_bw, moved / 1e6, moved / dma_bw / 1e3);
    printf("    bound %.1f us (%s%s): achieved %.0f%% of the bound; %llu instructions\n", bound / 1e3, which,
           strcmp(which, "DMA/HBM") == 0 ? "" : "-busy", 100.0 * bound / res.total_ns,
           (unsigned long long)res.instructions);
    printf("    reference nx_ref_conv %.3f s wall (%.3f s CPU), model %.3f s CPU: model / reference = %.2f wall, "
           "%.2f CPU\n",
           ref_wall, ref_cpu, sim_cpu, ref_wall > 0 ? sim_wall / ref_wall : 0, ref_cpu > 0 ? sim_cpu / ref_cpu : 0);
    printf("    values %s (max abs err %.3g, tolerance %s), %s\n", cr.bad ? "WRONG" : "ok", cr.max_abs, tol.text,
           race_txt);
    fflush(stdout);
    rc = 0;
out:
    free(ref);
    nx_sim_result_free(&res);
    if (have_state) nx_state_free(&st);
    nx_macro_op_free(&op);
    return rc;
}

int nx_bench_depthwise_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_RACE | NX_BENCH_OPT_CASE |
                                                 NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    const char *machine = a.machine, *only = a.n_cases ? a.cases[a.n_cases - 1] : NULL;
    int quick = a.quick, race = a.race_check;
    nx_error err;
    nx_machine m;
    if (nx_bench_machine(argv[0], machine, &m) != 0) return 2;
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    if (!L) {
        fprintf(stderr, "nxsim-bench-depthwise: out of memory\n");
        return 1;
    }
    const char *threads = getenv("OPENBLAS_NUM_THREADS"), *core = getenv("OPENBLAS_CORETYPE");
    printf("nxsim-bench-depthwise: machine %s; reference OpenBLAS (OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s)\n",
           m.geo.name, threads ? threads : "unset", core ? core : "unset");
    const dw_bench *cases = quick ? QUICK : CASES;
    size_t n = quick ? sizeof QUICK / sizeof QUICK[0] : sizeof CASES / sizeof CASES[0];
    static const nx_dtype dts[2] = {NX_DT_FP32, NX_DT_BF16};
    int status = 0, wrong = 0;
    for (size_t i = 0; i < n; i++) {
        if (only && strncmp(cases[i].name, only, strlen(only)) != 0 && strncmp(cases[i].key, only, strlen(only)) != 0)
            continue;
        for (int d = 0; d < 2; d++)
            if (run_case(L, &m, &cases[i], dts[d], race, &wrong, &err) != 0) {
                fprintf(stderr, "nxsim-bench-depthwise: %s %s: %s\n", cases[i].name, cases[i].key, err.msg);
                status = 1;
            }
    }
    nx_lowerer_free(L);
    return status || wrong;
}
