/* nxsim-bench conv-onnx (also nxsim-bench-conv-onnx): the `conv` composite
 * (ONNX Conv on NCHW / OIHW, docs/parts/conv.md "The conv composite") on
 * ResNet-50 and MobileNet layer shapes through the registry (the ops
 * `nxsim run conv` builds) and the SystemC model (trn2 unless --machine):
 * per case the leaf chosen, the simulated time, the bound (dense: the PE
 * array's peak for N O OH OW C/g KH KW MACs, or the DMA time of X, W, B and
 * Y if longer; depthwise: that DMA time; bench/dma_bound.h), of_bound, the
 * simulated time of the chosen leaf alone on operands already in its
 * layouts (`leaf_us`, the registry key run the same way, one image times N
 * for #9, which runs once per image: what the layout steps and B add is
 * the difference), the wall times of the model and of
 * the reference nx_ref_conv_onnx, and whether the result is within the
 * rules' tolerance (`ok` / `WRONG`). Figures only: times never decide the
 * exit status. --quick: small shapes (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dma_bound.h"
#include "kernels/conv/onnx/conv_onnx.h"
#include "leaf_benches.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "wall_clock.h"

typedef struct cv_case {
    const char *label;
    nx_dtype dt;
    uint64_t x[4], w[4]; /* X [N, C, H, W] and W [O, C/g, KH, KW]; 1-D: x[2] = 1 and w[3] = 0 (W [O, 1, KW]) */
    int bias;
    const char *attrs;
} cv_case;

typedef struct cv_result {
    double sim_ns, bound_ns, leaf_ns, sim_s, ref_s;
    int ok;
    char leaf[64];
} cv_result;

static int build_op(const cv_case *c, nx_macro_op *op, nx_error *err) {
    nx_macro_op_init(op);
    if (nx_macro_op_set_func_name(op, "conv", err) != 0) return -1;
    uint32_t nd = c->w[3] ? 4 : 3;
    uint64_t x[4] = {c->x[0], c->x[1], c->x[2], c->x[3]}, w[4] = {c->w[0], c->w[1], c->w[2], c->w[3]}, b[1] = {c->w[0]};
    if (nd == 3) x[2] = c->x[3], w[2] = c->w[2];
    if (nx_macro_op_add_operand(op, "X", c->dt, nd, x, err) != 0 || nx_macro_op_add_operand(op, "W", c->dt, nd, w, err) != 0 ||
        (c->bias && nx_macro_op_add_operand(op, "B", c->dt, 1, b, err) != 0))
        return -1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", c->attrs);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        if (!eq) return nx_fail(err, "bad case attribute %s", tok);
        *eq = 0;
        nx_value v;
        if (nx_value_parse(tok, eq + 1, &v, err) != 0 || nx_attrs_set(&op->attrs, tok, &v, err) != 0) return -1;
    }
    return 0;
}

/* The chosen leaf alone: its registry key on the same problem in its own
 * layouts (pseudo-random operands, no check), its simulated time. */
static int leaf_alone(const nx_conv_onnx_params *p, const nx_conv_onnx_choice *ch, const nx_machine *m, double *ns,
                      nx_error *err) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    nx_prepared op;
    nx_prepared_init(&op);
    nx_run_result res;
    memset(&res, 0, sizeof res);
    nx_lowerer *L = NULL;
    int rc = -1;
    uint64_t img[4], flt[4];
    int64_t groups = p->group;
    if (ch->leaf == NX_CONV_ONNX_PBP_FB01) {
        uint64_t a[4] = {p->C, p->N, p->H, p->W}, b[4] = {p->Cg, p->O, p->KH, p->KW};
        memcpy(img, a, sizeof a), memcpy(flt, b, sizeof b);
    } else {
        uint64_t a[4] = {ch->leaf == NX_CONV_ONNX_DW_CP1 ? 1 : p->N, p->C, p->H, p->W}, b[4] = {p->C, 1, p->KH, p->KW};
        memcpy(img, a, sizeof a), memcpy(flt, b, sizeof b);
    }
    if (nx_macro_op_set_func_name(&given, ch->key, err) != 0 ||
        nx_macro_op_add_operand(&given, "img", p->dtype, 4, img, err) != 0 ||
        nx_macro_op_add_operand(&given, "filt", p->dtype, 4, flt, err) != 0)
        goto out;
    uint64_t st[2] = {(uint64_t)p->stride[0], (uint64_t)p->stride[1]};
    uint64_t dl[2] = {(uint64_t)p->dilation[0], (uint64_t)p->dilation[1]};
    uint64_t pd[4] = {(uint64_t)p->pad_lo[0], (uint64_t)p->pad_hi[0], (uint64_t)p->pad_lo[1], (uint64_t)p->pad_hi[1]};
    nx_value g = nx_value_int(groups);
    if (nx_attrs_set_int_list(&given.attrs, "stride", st, 2, err) != 0 ||
        nx_attrs_set_int_list(&given.attrs, "rhs_dilation", dl, 2, err) != 0 ||
        nx_attrs_set_int_list(&given.attrs, "padding", pd, 4, err) != 0 ||
        nx_attrs_set(&given.attrs, "feature_group_count", &g, err) != 0)
        goto out;
    if (!(L = nx_lowerer_new(&m->geo, NULL))) {
        nx_fail(err, "out of memory");
        goto out;
    }
    if (nx_op_prepare(L, &given, NULL, &op, err) != 0) goto out;
    nx_run_options opt = {.backend = NX_RUN_MODEL, .seed = 1};
    if (nx_run_op(L, m, &op, NULL, &opt, &res, err) != 0) goto out;
    *ns = res.trace.sim.total_ns;
    if (ch->leaf == NX_CONV_ONNX_DW_CP1) *ns *= (double)p->N; /* one call per image */
    rc = 0;
out:
    nx_run_result_free(&res);
    nx_lowerer_free(L);
    nx_prepared_free(&op);
    nx_macro_op_free(&given);
    return rc;
}

/* The bound and the leaf's choice, from the op as prepared (bench/dma_bound.h). */
typedef struct cv_bounds_ctx {
    const nx_machine *m;
    cv_result *r;
    nx_conv_onnx_params p;
    nx_conv_onnx_choice ch;
    int have;
    nx_error err;
} cv_bounds_ctx;

static void cv_bounds(const nx_macro_op *op, uint32_t grid, void *ctx) {
    (void)grid;
    cv_bounds_ctx *b = ctx;
    nx_norm_tensor in[3];
    for (uint32_t i = 0; i < op->n_operands && i < 3; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    if (nx_conv_onnx_read(&op->attrs, in, op->n_operands, &b->p, &b->err) != 0) return;
    const nx_conv_onnx_params *p = &b->p;
    nx_conv_onnx_choose(p, &b->ch);
    snprintf(b->r->leaf, sizeof b->r->leaf, "%s", b->ch.key);
    double macs = (double)(p->N * p->O * p->OH * p->OW) * (double)(p->Cg * p->KH * p->KW);
    double es = (double)nx_dtype_size(p->dtype);
    double bytes = es * (double)(p->N * p->C * p->H * p->W + p->O * p->Cg * p->KH * p->KW +
                                 p->N * p->O * p->OH * p->OW + (p->has_bias ? p->O : 0));
    double dma = bytes / nx_bench_core_dma_bytes_per_ns(b->m);
    double pe = b->ch.leaf == NX_CONV_ONNX_PBP_FB01 ? nx_bench_pe_bound_ns(b->m, macs, p->dtype) : 0;
    b->r->bound_ns = pe > dma ? pe : dma;
    b->have = 1;
}

static int run_case(const cv_case *c, const nx_machine *m, cv_result *r, nx_error *err) {
    memset(r, 0, sizeof *r);
    nx_macro_op given;
    cv_bounds_ctx ctx = {.m = m, .r = r};
    nx_bench_run run;
    int rc = -1;
    if (build_op(c, &given, err) != 0 || nx_bench_run_op(&given, m, cv_bounds, &ctx, &run, err) != 0) goto out;
    if (!ctx.have) {
        *err = ctx.err;
        goto out;
    }
    r->sim_ns = run.sim_ns, r->sim_s = run.sim_s, r->ref_s = run.ref_s, r->ok = run.ok;
    rc = leaf_alone(&ctx.p, &ctx.ch, m, &r->leaf_ns, err);
out:
    nx_macro_op_free(&given);
    return rc;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-conv-onnx [--quick] [--machine NAME|FILE]\n"
          "Runs the conv composite (ONNX Conv, NCHW / OIHW) on ResNet-50 and MobileNet layer shapes on the\n"
          "SystemC model (default trn2): the leaf it chooses, its time against the PE / DMA bound and against\n"
          "the leaf alone on operands in its own layouts. --quick: small shapes (the ctest smoke run).\n",
          f);
}

static const cv_case full_cases[] = {
    {"resnet 56x56x64->64 3x3 b1", NX_DT_BF16, {1, 64, 56, 56}, {64, 64, 3, 3}, 1, "pads=[1,1,1,1]"},
    {"resnet 28x28x128->128 3x3 b8", NX_DT_BF16, {8, 128, 28, 28}, {128, 128, 3, 3}, 1, "pads=[1,1,1,1]"},
    {"resnet 56x56x64->128 3x3 s2 b8", NX_DT_BF16, {8, 64, 56, 56}, {128, 64, 3, 3}, 0,
     "strides=[2,2];auto_pad=\"SAME_UPPER\""},
    {"resnet 14x14x256->256 3x3 b8", NX_DT_FP32, {8, 256, 14, 14}, {256, 256, 3, 3}, 1, "pads=[1,1,1,1]"},
    {"resnext 28x28x128 g32 b8", NX_DT_BF16, {8, 128, 28, 28}, {128, 4, 3, 3}, 1, "group=32;pads=[1,1,1,1]"},
    {"mobilenet dw 112x112x32 b1", NX_DT_BF16, {1, 32, 112, 112}, {32, 1, 3, 3}, 1, "group=32;pads=[1,1,1,1]"},
    {"mobilenet dw 56x56x128 b8", NX_DT_BF16, {8, 128, 56, 56}, {128, 1, 3, 3}, 1, "group=128;pads=[1,1,1,1]"},
    {"mamba conv1d 1024x512 b4", NX_DT_FP32, {4, 512, 1, 1024}, {512, 1, 4, 0}, 1, "group=512;pads=[3,0]"},
};

static const cv_case quick_cases[] = {
    {"dense 10x12x40->24 b2", NX_DT_BF16, {2, 40, 10, 12}, {24, 40, 3, 3}, 1, "pads=[1,1,1,1]"},
    {"dw 12x12x16 b2", NX_DT_FP32, {2, 16, 12, 12}, {16, 1, 3, 3}, 1, "group=16;auto_pad=\"SAME_LOWER\""},
    {"dw 12x12x16 b1", NX_DT_FP32, {1, 16, 12, 12}, {16, 1, 3, 3}, 0, "group=16;pads=[1,1,1,1]"},
    {"conv1d 64x32 b2", NX_DT_FP32, {2, 32, 1, 64}, {32, 1, 4, 0}, 1, "group=32;pads=[3,0]"},
};

int nx_bench_conv_onnx_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    const cv_case *cases = a.quick ? quick_cases : full_cases;
    size_t n = a.quick ? sizeof quick_cases / sizeof quick_cases[0] : sizeof full_cases / sizeof full_cases[0];
    printf("%s: machine %s, one core: DMA %.0f B/ns (bench/dma_bound.h), PE %ux%u at %.2f GHz\n", argv[0], m.geo.name,
           nx_bench_core_dma_bytes_per_ns(&m), m.geo.pe_rows, m.geo.pe_cols, m.clock_ghz[NX_ENG_PE]);
    printf("%-32s %-5s %-40s %9s %9s %8s %9s %7s %7s %s\n", "case", "dtype", "leaf", "sim_us", "bound_us", "of_bound",
           "leaf_us", "sim_s", "ref_s", "result");
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        cv_result r;
        nx_error err;
        if (run_case(&cases[i], &m, &r, &err) != 0) {
            printf("%-32s %-5s error: %s\n", cases[i].label, nx_dtype_name(cases[i].dt), err.msg);
            status = 1;
            continue;
        }
        printf("%-32s %-5s %-40s %9.1f %9.1f %7.1f%% %9.1f %7.3f %7.3f %s\n", cases[i].label,
               nx_dtype_name(cases[i].dt), r.leaf, r.sim_ns / 1e3, r.bound_ns / 1e3, 100.0 * r.bound_ns / r.sim_ns,
               r.leaf_ns / 1e3, r.sim_s, r.ref_s, r.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!r.ok) status = 1;
    }
    printf("of_bound: the bound's share of the simulated time; leaf_us: the chosen leaf alone on operands already\n"
           "in its layouts (the difference is the layout steps and B); sim_s / ref_s: wall time of the model's run\n"
           "and of nx_ref_conv_onnx.\n");
    return status;
}
