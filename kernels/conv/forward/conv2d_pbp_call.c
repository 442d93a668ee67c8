/* The dense convolutions' call decoded (conv2d_pbp.h nx_conv_pbp_from_call):
 * the operand count, the conv attributes, dtypes and the result shape
 * checked against `labels`, then the problem in #3's layout terms. */
#include <stdio.h>
#include <string.h>

#include "conv2d_pbp_emit.h"

static void fmt_shape(char *buf, size_t len, uint32_t nd, const uint64_t *s) {
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < nd && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "[", (unsigned long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

int nx_conv_pbp_from_call(const char *leaf, const char *labels, const nx_kernel_call *call,
                          nx_conv_pbp *pb, nx_error *err) {
    memset(pb, 0, sizeof *pb);
    if (call->n_inputs != 2 || call->nargs != 3)
        return nx_fail(err, "%s: expects 2 inputs (img, filt) and 1 output, got %u inputs and %u outputs", leaf,
                       call->n_inputs, call->nargs - call->n_inputs);
    const nx_tensor_ref *img = &call->args[0], *flt = &call->args[1], *out = &call->args[2];
    nx_conv_layout L;
    if (nx_conv_layout_parse(labels, &L, err) != 0) return -1;
    if (nx_conv_params_read(call->additional_args, 2, NULL, &pb->p, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    if (nx_conv_require_default(&pb->p, NX_CONV_LHS_DILATION | NX_CONV_BATCH_GROUPS, leaf, err) != 0) return -1;
    nx_dtype dt = img->dtype;
    if (dt > NX_DT_FP8_E5M2 || !nx_dtype_is_float(dt))
        return nx_fail(err, "operand 0 (%s): dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                       img->name, nx_dtype_name(dt) ? nx_dtype_name(dt) : "?");
    for (int i = 1; i < 3; i++)
        if (call->args[i].dtype != dt)
            return nx_fail(err, "operand %d (%s): dtype %s differs from operand 0 (%s)'s %s", i, call->args[i].name,
                           nx_dtype_name(call->args[i].dtype), img->name, nx_dtype_name(dt));
    char in_name[96], f_name[96];
    snprintf(in_name, sizeof in_name, "operand 0 (%s)", img->name);
    snprintf(f_name, sizeof f_name, "operand 1 (%s)", flt->name);
    uint64_t want[NX_KERNEL_MAX_DIMS];
    if (nx_conv_result_shape(&L, &pb->p, img->ndims, img->shape, flt->ndims, flt->shape, in_name, f_name, want,
                             err) != 0)
        return -1;
    int same = out->ndims == 4;
    for (int i = 0; same && i < 4; i++) same = out->shape[i] == want[i];
    if (!same) {
        char a[96], b[96], c[96], d[96];
        fmt_shape(a, sizeof a, out->ndims, out->shape);
        fmt_shape(b, sizeof b, 4, want);
        fmt_shape(c, sizeof c, img->ndims, img->shape);
        fmt_shape(d, sizeof d, flt->ndims, flt->shape);
        char lay[240];
        nx_conv_layout_text(&L, in_name, f_name, lay, sizeof lay);
        return nx_fail(err, "operand 2 (%s): shape %s must be %s (the convolution of %s %s and %s %s; %s)", out->name,
                       a, b, in_name, c, f_name, d, lay);
    }
    pb->dtype = dt;
    pb->H = img->shape[L.lhs_spatial[0]];
    pb->W = img->shape[L.lhs_spatial[1]];
    pb->C = img->shape[L.lhs_feature];
    pb->N = img->shape[L.lhs_batch];
    pb->KH = flt->shape[L.rhs_spatial[0]];
    pb->KW = flt->shape[L.rhs_spatial[1]];
    pb->O = flt->shape[L.rhs_out];
    pb->OH = want[L.out_spatial[0]];
    pb->OW = want[L.out_spatial[1]];
    pb->img = img->hbm_offset;
    pb->filt = flt->hbm_offset;
    pb->out = out->hbm_offset;
    /* access-pattern strides are 32-bit element counts */
    uint64_t pitch[3] = {pb->C * pb->W * pb->N, pb->C / (uint64_t)pb->p.feature_group_count * pb->KW * pb->O,
                         pb->OW * pb->O * pb->N};
    for (int i = 0; i < 3; i++)
        if (pitch[i] > INT32_MAX)
            return nx_fail(err, "operand %d (%s): a row of %llu elements exceeds 32-bit access-pattern strides", i,
                           call->args[i].name, (unsigned long long)pitch[i]);
    return 0;
}
