/* wgrad_core.h: the weight-gradient leaves' call checks. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wgrad_core.h"

static void fmt_shape(char *buf, size_t len, uint32_t nd, const uint64_t *s) {
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < nd && n + 1 < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "[", (unsigned long long)s[i]);
    if (n + 1 < len) snprintf(buf + n, len - n, "]");
}

int nx_wg_prepare(const char *leaf, nx_wg_kind kind, const char *labels, const nx_kernel_call *call,
                  nx_wg_problem *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    p->leaf = leaf;
    p->kind = kind;
    if (call->n_inputs != 2 || call->nargs != 3)
        return nx_fail(err, "%s: expects 2 inputs (img, filt) and 1 output, got %u inputs and %u outputs", leaf,
                       call->n_inputs, call->nargs - call->n_inputs);
    const nx_tensor_ref *img = &call->args[0], *flt = &call->args[1], *out = &call->args[2];
    nx_conv_layout L;
    if (nx_conv_layout_parse(labels, &L, err) != 0) return nx_fail_prefix(err, "%s", leaf);
    if (L.spatial != 2) return nx_fail(err, "%s: labels %s are not 2-D", leaf, labels);
    nx_conv_params *cp = &p->params;
    if (nx_conv_params_read(call->additional_args, 2, NULL, cp, err) != 0) return nx_fail_prefix(err, "%s", leaf);
    unsigned refuse = NX_CONV_LHS_DILATION | NX_CONV_FEATURE_GROUPS | (kind == NX_WG_DENSE ? NX_CONV_BATCH_GROUPS : 0);
    if (nx_conv_require_default(cp, refuse, leaf, err) != 0) return -1;
    nx_dtype dt = img->dtype;
    if (!nx_dtype_is_float(dt))
        return nx_fail(err, "%s: operand 0 (%s): dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, "
                            "fp8_e5m2)",
                       leaf, img->name, nx_dtype_name(dt) ? nx_dtype_name(dt) : "?");
    for (int i = 1; i < 3; i++)
        if (call->args[i].dtype != dt)
            return nx_fail(err, "%s: operand %d (%s): dtype %s differs from operand 0 (%s)'s %s", leaf, i,
                           call->args[i].name, nx_dtype_name(call->args[i].dtype), img->name, nx_dtype_name(dt));
    char in_name[96], f_name[96], lay[240];
    snprintf(in_name, sizeof in_name, "operand 0 (%s)", img->name);
    snprintf(f_name, sizeof f_name, "operand 1 (%s)", flt->name);
    nx_conv_layout_text(&L, in_name, f_name, lay, sizeof lay);
    for (int i = 0; i < 2; i++)
        if (call->args[i].ndims != 4)
            return nx_fail(err, "%s: operand %d (%s) has %u dims, the labels %s need 4 (%s)", leaf, i,
                           call->args[i].name, call->args[i].ndims, labels, lay);
    if (kind == NX_WG_DEPTHWISE) {
        /* one lhs batch (channel) per group, one filter per group */
        uint64_t n = img->shape[L.lhs_batch], co = flt->shape[L.rhs_out];
        if (cp->batch_group_count != (int64_t)n || co != n) {
            char v[32];
            nx_conv_format_attr(cp, NX_CONV_BATCH_GROUPS, v, sizeof v);
            return nx_fail(err, "%s: attribute batch_group_count=%s is not supported (the depthwise weight gradient "
                                "needs batch_group_count = N = C_out; operand 0 (%s) has N = %llu, operand 1 (%s) "
                                "C_out = %llu)",
                           leaf, v, img->name, (unsigned long long)n, flt->name, (unsigned long long)co);
        }
    }
    uint64_t want[NX_KERNEL_MAX_DIMS];
    if (nx_conv_result_shape(&L, cp, img->ndims, img->shape, flt->ndims, flt->shape, in_name, f_name, want, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    int same = out->ndims == 4;
    for (int i = 0; same && i < 4; i++) same = out->shape[i] == want[i];
    if (!same) {
        char a[96], b[96];
        fmt_shape(a, sizeof a, out->ndims, out->shape);
        fmt_shape(b, sizeof b, 4, want);
        return nx_fail(err, "%s: operand 2 (%s): shape %s must be %s (the convolution's result; %s)", leaf, out->name,
                       a, b, lay);
    }
    p->dt = dt;
    p->es = nx_dtype_size(dt);
    p->CI = img->shape[L.lhs_feature];
    p->N = img->shape[L.lhs_batch];
    p->H = (int64_t)img->shape[L.lhs_spatial[0]];
    p->W = (int64_t)img->shape[L.lhs_spatial[1]];
    p->CO = flt->shape[L.rhs_out];
    p->HF = (int64_t)flt->shape[L.rhs_spatial[0]];
    p->WF = (int64_t)flt->shape[L.rhs_spatial[1]];
    p->K0 = (int64_t)want[L.out_spatial[0]];
    p->K1 = (int64_t)want[L.out_spatial[1]];
    p->sy = cp->stride[0], p->sx = cp->stride[1];
    p->rdy = cp->rhs_dilation[0], p->rdx = cp->rhs_dilation[1];
    p->ply = cp->pad_lo[0], p->plx = cp->pad_lo[1];
    p->img = img->hbm_offset;
    p->filt = flt->hbm_offset;
    p->out = out->hbm_offset;
    p->img_name = img->name;
    p->filt_name = flt->name;
    /* access patterns carry 32-bit element strides: a feature's slice of
     * each operand, and the distances the window steps over */
    uint64_t span[3] = {p->N * (uint64_t)p->H * (uint64_t)p->W, p->CO * (uint64_t)p->HF * (uint64_t)p->WF,
                        (uint64_t)p->K1 * p->N * p->CO};
    for (int i = 0; i < 3; i++)
        if (span[i] > INT32_MAX)
            return nx_fail(err, "%s: operand %d (%s): a slice of %llu elements exceeds 32-bit access-pattern strides",
                           leaf, i, call->args[i].name, (unsigned long long)span[i]);
    uint64_t reach[4] = {(uint64_t)p->sy, (uint64_t)p->sx, (uint64_t)p->rdy, (uint64_t)p->rdx};
    for (int i = 0; i < 4; i++)
        if (reach[i] * (uint64_t)p->W > INT32_MAX / 2) {
            char st[64], rd[64];
            nx_conv_format_attr(cp, NX_CONV_STRIDE, st, sizeof st);
            nx_conv_format_attr(cp, NX_CONV_RHS_DILATION, rd, sizeof rd);
            return nx_fail(err, "%s: attributes stride=%s, rhs_dilation=%s with operand 0 (%s) need access-pattern "
                                "strides beyond 32 bits",
                           leaf, st, rd, img->name);
        }
    return 0;
}
