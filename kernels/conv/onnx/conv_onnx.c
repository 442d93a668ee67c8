/* The `conv` composite's trace function (conv_onnx.h): ONNX Conv run on the
 * registry leaf nx_conv_onnx_choose picks, with the layout steps between
 * ONNX's NCHW / OIHW tensors and the leaf's (HBM scratch tensors of the
 * program), then B. Follows the ONNX Conv operator (onnx/onnx
 * docs/Operators.md); the leaves follow the public NKI conv kernels of
 * their names (docs/parts/conv.md, depthwise.md). Beyond them: the leaf and
 * layout choice of a compiler's middle end, made here per call. */
#include <stdio.h>
#include <string.h>

#include "conv_onnx.h"
#include "isa/builder.h"
#include "kernels/conv/conv_ap.h"
#include "kernels/conv/conv_params.h"
#include "kernels/conv/depthwise/depthwise.h"
#include "kernels/conv/forward/conv2d_pbp.h"
#include "kernels/transpose/transpose.h"

static nx_tensor_ref tensor(const char *name, nx_dtype dt, uint32_t nd, const uint64_t *shape, uint64_t off) {
    nx_tensor_ref t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.dtype = dt;
    t.ndims = nd;
    memcpy(t.shape, shape, nd * sizeof *shape);
    t.hbm_offset = off;
    return t;
}

static int scratch(nx_kctx *k, const char *name, nx_dtype dt, uint32_t nd, const uint64_t *shape, nx_tensor_ref *t,
                   nx_error *err) {
    uint64_t off;
    if (nx_kctx_scratch(k, name, dt, nd, shape, &off, err) != 0) return nx_fail_prefix(err, "conv");
    *t = tensor(name, dt, nd, shape, off);
    return 0;
}

static int set_list(nx_attrs *a, const char *name, const int64_t *v, uint32_t n, nx_error *err) {
    uint64_t u[4];
    for (uint32_t i = 0; i < n; i++) u[i] = (uint64_t)v[i];
    return nx_attrs_set_int_list(a, name, u, n, err);
}

/* The leaf's attributes (XLA conv names, kernels/conv/conv_params.h). */
static int leaf_attrs(const nx_conv_onnx_params *p, int64_t groups, const uint64_t *out_shape, nx_attrs *a, nx_error *err) {
    nx_attrs_init(a);
    int64_t pad[4] = {p->pad_lo[0], p->pad_hi[0], p->pad_lo[1], p->pad_hi[1]};
    nx_value g = nx_value_int(groups);
    if (set_list(a, NX_CONV_ATTR_STRIDE, p->stride, 2, err) != 0 || set_list(a, NX_CONV_ATTR_PADDING, pad, 4, err) != 0 ||
        set_list(a, NX_CONV_ATTR_RHS_DILATION, p->dilation, 2, err) != 0 ||
        nx_attrs_set(a, NX_CONV_ATTR_FEATURE_GROUPS, &g, err) != 0 ||
        (out_shape && nx_attrs_set_int_list(a, NX_CONV_ATTR_OUT_SHAPE, out_shape, 4, err) != 0)) {
        nx_attrs_free(a);
        return -1;
    }
    return 0;
}

static int run_leaf(nx_kctx *k, nx_leaf_fn fn, const nx_tensor_ref t[3], const nx_attrs *a, nx_error *err) {
    nx_kernel_call c = {.args = t, .nargs = 3, .n_inputs = 2, .additional_args = a, .attrs = a};
    return fn(k, &c, err);
}

int nx_conv_onnx(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs < 2 || call->n_inputs > 3 || call->nargs != call->n_inputs + 1)
        return nx_fail(err, "conv: expects 2 or 3 inputs (X, W [, B]) and 1 output, got %u inputs and %u outputs",
                       call->n_inputs, call->nargs - call->n_inputs);
    nx_norm_tensor in[3];
    for (uint32_t i = 0; i < call->n_inputs; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_conv_onnx_params p;
    if (nx_conv_onnx_read(call->additional_args, in, call->n_inputs, &p, err) != 0) return -1;
    const nx_tensor_ref *X = &call->args[0], *Wt = &call->args[1], *Y = &call->args[call->n_inputs];
    int same = Y->ndims == p.out_ndims && Y->dtype == p.dtype;
    for (uint32_t d = 0; same && d < p.out_ndims; d++) same = Y->shape[d] == p.out_shape[d];
    if (!same) return nx_fail(err, "conv: operand %u (%s): not the convolution's result", call->n_inputs, Y->name);
    nx_conv_onnx_choice ch;
    nx_conv_onnx_choose(&p, &ch);
    nx_dtype dt = p.dtype;
    uint64_t es = nx_dtype_size(dt);
    uint64_t S = p.OH * p.OW;
    /* where the leaf's NCHW result goes: Y, or a scratch tensor B is added to */
    uint64_t nchw[4] = {p.N, p.O, p.OH, p.OW};
    nx_tensor_ref y_nchw = tensor(Y->name, dt, 4, nchw, Y->hbm_offset);
    if (p.has_bias && scratch(k, "conv.y_before_bias", dt, 4, nchw, &y_nchw, err) != 0) return -1;

    nx_attrs a;
    int rc = 0;
    if (ch.leaf == NX_CONV_ONNX_PBP_FB01) {
        uint64_t xs[4] = {p.C, p.N, p.H, p.W}, ws[4] = {p.Cg, p.O, p.KH, p.KW}, ys[4] = {p.OH, p.OW, p.N, p.O};
        nx_tensor_ref t[3] = {tensor(X->name, dt, 4, xs, X->hbm_offset), tensor(Wt->name, dt, 4, ws, Wt->hbm_offset),
                              tensor("", dt, 4, ys, 0)};
        if ((ch.move_x && scratch(k, "conv.x_cnhw", dt, 4, xs, &t[0], err) != 0) ||
            (ch.move_w && scratch(k, "conv.w_iohw", dt, 4, ws, &t[1], err) != 0) ||
            scratch(k, "conv.y_01bf", dt, 4, ys, &t[2], err) != 0)
            return -1;
        int sb;
        if (ch.move_x && nx_conv_onnx_swap(k, dt, p.N, p.C, p.H * p.W, X->hbm_offset, t[0].hbm_offset, 1, &sb, err) != 0)
            return nx_fail_prefix(err, "conv: X NCHW -> CNHW");
        if (ch.move_w && nx_conv_onnx_swap(k, dt, p.O, p.Cg, p.KH * p.KW, Wt->hbm_offset, t[1].hbm_offset, 1, &sb, err) != 0)
            return nx_fail_prefix(err, "conv: W OIHW -> IOHW");
        if (leaf_attrs(&p, p.group, NULL, &a, err) != 0) return -1;
        rc = run_leaf(k, conv2d_pbp_fb01_io01_01bf_kernel_experimental_1, t, &a, err);
        nx_attrs_free(&a);
        if (rc != 0) return nx_fail_prefix(err, "conv (leaf %s)", ch.key);
        /* Y: [OH OW][N O] -> [N O][OH OW], the SBUF swap (several pixels per
         * partition: long runs), else a registry transpose */
        int yr = nx_conv_onnx_swap(k, dt, S, p.N * p.O, 1, t[2].hbm_offset, y_nchw.hbm_offset, 0, &sb, err);
        if (yr < 0) return nx_fail_prefix(err, "conv (Y OH,OW,N,O -> NCHW)");
        static const int64_t perm[4] = {2, 3, 0, 1};
        if (yr == 1 && nx_transpose_tensors_sized(k, &t[2], &y_nchw, perm, 4, S * p.N * p.O * es, err) != 0)
            return nx_fail_prefix(err, "conv (Y OH,OW,N,O -> NCHW)");
    } else {
        nx_leaf_fn fn = ch.leaf == NX_CONV_ONNX_DW_1D ? conv1d_depthwise_bf01_oi01_bf01 : conv2d_column_packing_1;
        /* #6 takes the whole batch; #9 one image per call (N = 1) */
        uint64_t per = ch.leaf == NX_CONV_ONNX_DW_1D ? p.N : 1;
        uint64_t xs[4] = {per, p.C, p.H, p.W}, ws[4] = {p.C, 1, p.KH, p.KW}, ys[4] = {per, p.O, p.OH, p.OW};
        uint64_t xstep = per * p.C * p.H * p.W * es, ystep = per * p.O * S * es;
        if (leaf_attrs(&p, (int64_t)p.C, ys, &a, err) != 0) return -1;
        for (uint64_t n = 0; n < p.N && rc == 0; n += per) {
            nx_tensor_ref t[3] = {tensor(X->name, dt, 4, xs, X->hbm_offset + (n / per) * xstep),
                                  tensor(Wt->name, dt, 4, ws, Wt->hbm_offset),
                                  tensor(y_nchw.name, dt, 4, ys, y_nchw.hbm_offset + (n / per) * ystep)};
            rc = run_leaf(k, fn, t, &a, err);
        }
        nx_attrs_free(&a);
        if (rc != 0) return nx_fail_prefix(err, "conv (leaf %s)", ch.key);
    }
    if (p.has_bias &&
        nx_conv_onnx_bias(k, dt, p.N, p.O, S, y_nchw.hbm_offset, call->args[2].hbm_offset, Y->hbm_offset, err) != 0)
        return nx_fail_prefix(err, "conv (B)");
    return 0;
}
