/* The conv composite's operand and attribute rules (conv_onnx.h): ONNX Conv
 * (onnx/onnx docs/Operators.md "Conv"; auto_pad as in onnx/reference
 * ops/_op_common_pool / the shape inference of onnx/defs/nn/defs.cc). */
#include <stdio.h>
#include <string.h>

#include "conv_onnx.h"
#include "isa/intmath.h"
#include "kernels/transpose/transpose_plan.h"

const char *const nx_conv_onnx_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL};

static const char *const layout_x[3] = {"", "NCW: [N, C, W]", "NCHW: [N, C, H, W]"};
static const char *const layout_w[3] = {"", "OIW: [O, C/group, KW]", "OIHW: [O, C/group, KH, KW]"};

static const char *dt_name(nx_dtype dt) { return nx_dtype_name(dt) ? nx_dtype_name(dt) : "?"; }

/* A list attribute of exactly n ints >= lo (absent: *given 0). */
static int int_list(const nx_attrs *attrs, const char *name, uint32_t n, int64_t lo, int64_t *out, int *given,
                    nx_error *err) {
    *given = 0;
    const nx_value *v = nx_attrs_get_given(attrs, name);
    if (!v) return 0;
    char what[64];
    snprintf(what, sizeof what, "attribute %s", name);
    uint32_t cnt = 0;
    int64_t items[8];
    if (nx_value_get_int_list(v, what, items, 8, &cnt, err) != 0) return -1;
    if (cnt != n)
        return nx_fail(err, "attribute %s: has %u entries, it must be a list of %u ints (%s)", name, cnt, n,
                       strcmp(name, "pads") == 0 ? "the begins, then the ends, of the spatial dims"
                                                 : "one per spatial dim");
    for (uint32_t i = 0; i < n; i++)
        if (items[i] < lo) {
            char b[160];
            nx_format_i64_list(b, sizeof b, items, n);
            return nx_fail(err, "attribute %s=%s: entries must be >= %lld", name, b, (long long)lo);
        }
    memcpy(out, items, n * sizeof *out);
    *given = 1;
    return 0;
}

static int read_auto_pad(const nx_attrs *attrs, nx_conv_onnx_pad_mode *mode, nx_error *err) {
    static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    *mode = NX_CONV_ONNX_NOTSET;
    const nx_value *v = nx_attrs_get_given(attrs, "auto_pad");
    if (!v) return 0;
    if (v->kind != NX_VAL_STRING)
        return nx_fail(err, "attribute auto_pad: must be a string (NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
    for (int i = 0; i < 4; i++)
        if (strcmp(v->s, names[i]) == 0) {
            *mode = (nx_conv_onnx_pad_mode)i;
            return 0;
        }
    nx_quoted q;
    return nx_fail(err, "attribute auto_pad: '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                   nx_quote(&q, v->s, NX_QUOTE_NAME));
}

static int float_operand(const nx_norm_tensor *t, uint32_t i, nx_error *err) {
    if (t->dtype == NX_DT_FP32 || t->dtype == NX_DT_BF16 || t->dtype == NX_DT_FP16) return 0;
    return nx_fail(err, "operand %u (%s): dtype %s, conv takes fp32, bf16 or fp16", i, t->name, dt_name(t->dtype));
}

int nx_conv_onnx_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_conv_onnx_params *p,
                      nx_error *err) {
    memset(p, 0, sizeof *p);
    if (n_in != 2 && n_in != 3) return nx_fail(err, "conv takes 2 or 3 operands (X, W [, B]), the op has %u", n_in);
    const nx_norm_tensor *x = &in[0], *w = &in[1];
    if (x->ndims != 3 && x->ndims != 4)
        return nx_fail(err, "operand 0 (%s): rank %u, conv takes X in NCW [N, C, W] or NCHW [N, C, H, W] "
                            "(1-D and 2-D convolutions)", x->name, x->ndims);
    uint32_t sp = x->ndims - 2;
    p->spatial = sp;
    if (w->ndims != x->ndims)
        return nx_fail(err, "operand 1 (%s): rank %u, X of rank %u needs W in %s", w->name, w->ndims, x->ndims,
                       layout_w[sp]);
    for (uint32_t i = 0; i < n_in; i++)
        if (float_operand(&in[i], i, err) != 0) return -1;
    for (uint32_t i = 1; i < n_in; i++)
        if (in[i].dtype != x->dtype)
            return nx_fail(err, "operand %u (%s): dtype %s differs from operand 0 (%s)'s %s", i, in[i].name,
                           dt_name(in[i].dtype), x->name, dt_name(x->dtype));
    p->dtype = x->dtype;
    p->N = x->shape[0];
    p->C = x->shape[1];
    p->H = sp == 2 ? x->shape[2] : 1;
    p->W = x->shape[x->ndims - 1];
    p->O = w->shape[0];
    p->Cg = w->shape[1];
    p->KH = sp == 2 ? w->shape[2] : 1;
    p->KW = w->shape[w->ndims - 1];

    int given;
    int64_t v[4];
    if (nx_attrs_get_int(attrs, "group", &p->group, &given, err) != 0) return -1;
    if (!given) p->group = 1;
    if (p->group < 1) return nx_fail(err, "attribute group=%lld: must be >= 1", (long long)p->group);
    if (p->C % (uint64_t)p->group != 0)
        return nx_fail(err, "attribute group=%lld: does not divide operand 0 (%s)'s C = %llu (X is %s)",
                       (long long)p->group, x->name, (unsigned long long)p->C, layout_x[sp]);
    uint64_t g = (uint64_t)p->group;
    if (p->Cg != p->C / g)
        return nx_fail(err, "operand 1 (%s): dim 1 is %llu but C / group = %llu / %lld = %llu (X is %s, W is %s)",
                       w->name, (unsigned long long)p->Cg, (unsigned long long)p->C, (long long)p->group,
                       (unsigned long long)(p->C / g), layout_x[sp], layout_w[sp]);
    if (p->O % g != 0)
        return nx_fail(err, "operand 1 (%s): dim 0 (O = %llu) is not divisible by group %lld (W is %s)", w->name,
                       (unsigned long long)p->O, (long long)p->group, layout_w[sp]);
    if (n_in == 3) {
        const nx_norm_tensor *b = &in[2];
        if (b->ndims != 1 || b->shape[0] != p->O) {
            char s[128];
            nx_format_u64_list(s, sizeof s, b->shape, b->ndims <= NX_KERNEL_MAX_DIMS ? b->ndims : 0);
            return nx_fail(err, "operand 2 (%s): shape %s must be [O] = [%llu] (W's dim 0)", b->name, s,
                           (unsigned long long)p->O);
        }
        p->has_bias = 1;
    }

    uint64_t kern[2] = {p->KH, p->KW};
    if (int_list(attrs, "kernel_shape", sp, 1, v, &given, err) != 0) return -1;
    if (given)
        for (uint32_t d = 0; d < sp; d++)
            if ((uint64_t)v[d] != kern[2 - sp + d]) {
                char a[96], b[96];
                nx_format_i64_list(a, sizeof a, v, sp);
                nx_format_u64_list(b, sizeof b, kern + 2 - sp, sp);
                return nx_fail(err, "attribute kernel_shape=%s: differs from operand 1 (%s)'s kernel %s (W is %s)", a,
                               w->name, b, layout_w[sp]);
            }
    for (int d = 0; d < 2; d++) p->stride[d] = p->dilation[d] = 1;
    if (int_list(attrs, "strides", sp, 1, v, &given, err) != 0) return -1;
    if (given)
        for (uint32_t d = 0; d < sp; d++) p->stride[2 - sp + d] = v[d];
    if (int_list(attrs, "dilations", sp, 1, v, &given, err) != 0) return -1;
    if (given)
        for (uint32_t d = 0; d < sp; d++) p->dilation[2 - sp + d] = v[d];
    if (read_auto_pad(attrs, &p->auto_pad, err) != 0) return -1;
    int pads_given;
    if (int_list(attrs, "pads", 2 * sp, 0, v, &pads_given, err) != 0) return -1;
    if (pads_given) {
        int nonzero = 0;
        for (uint32_t d = 0; d < 2 * sp; d++) nonzero |= v[d] != 0;
        if (nonzero && p->auto_pad != NX_CONV_ONNX_NOTSET) {
            char a[128];
            nx_format_i64_list(a, sizeof a, v, 2 * sp);
            return nx_fail(err, "attribute pads=%s: not allowed with auto_pad=%s (pads apply only with auto_pad NOTSET)",
                           a, p->auto_pad == NX_CONV_ONNX_VALID        ? "VALID"
                              : p->auto_pad == NX_CONV_ONNX_SAME_UPPER ? "SAME_UPPER"
                                                                       : "SAME_LOWER");
        }
        for (uint32_t d = 0; d < sp; d++) {
            p->pad_lo[2 - sp + d] = v[d];
            p->pad_hi[2 - sp + d] = v[sp + d];
        }
    }
    uint64_t in_sz[2] = {p->H, p->W};
    uint64_t out_sz[2];
    for (int d = 0; d < 2; d++) {
        int64_t s = p->stride[d], dil = p->dilation[d];
        uint64_t in_d = in_sz[d];
        if (kern[d] > ((uint64_t)1 << 31) || (uint64_t)dil > ((uint64_t)1 << 31) || in_d > ((uint64_t)1 << 40) ||
            (uint64_t)s > ((uint64_t)1 << 40) || (uint64_t)p->pad_lo[d] > ((uint64_t)1 << 40) ||
            (uint64_t)p->pad_hi[d] > ((uint64_t)1 << 40))
            return nx_fail(err, "operand 0 (%s): spatial dim sizes, kernel, strides, dilations or pads too large",
                           x->name);
        uint64_t dk = (kern[d] - 1) * (uint64_t)dil + 1;
        if (p->auto_pad == NX_CONV_ONNX_SAME_UPPER || p->auto_pad == NX_CONV_ONNX_SAME_LOWER) {
            uint64_t o = (in_d + (uint64_t)s - 1) / (uint64_t)s;
            uint64_t need = (o - 1) * (uint64_t)s + dk, total = need > in_d ? need - in_d : 0;
            uint64_t small = total / 2, big = total - small;
            p->pad_lo[d] = (int64_t)(p->auto_pad == NX_CONV_ONNX_SAME_UPPER ? small : big);
            p->pad_hi[d] = (int64_t)(p->auto_pad == NX_CONV_ONNX_SAME_UPPER ? big : small);
        } else if (p->auto_pad == NX_CONV_ONNX_VALID) {
            p->pad_lo[d] = p->pad_hi[d] = 0;
        }
        uint64_t padded = in_d + (uint64_t)p->pad_lo[d] + (uint64_t)p->pad_hi[d];
        if (padded < dk) {
            const char *dim = d == 0 ? "H" : "W";
            return nx_fail(err, "operand 0 (%s): the %llu-tap window (dilation %lld) does not fit %s = %llu with pads "
                                "[%lld,%lld]: no output (X is %s, W is %s)",
                           x->name, (unsigned long long)kern[d], (long long)dil, dim, (unsigned long long)in_d,
                           (long long)p->pad_lo[d], (long long)p->pad_hi[d], layout_x[sp], layout_w[sp]);
        }
        out_sz[d] = (padded - dk) / (uint64_t)s + 1;
    }
    p->OH = out_sz[0];
    p->OW = out_sz[1];
    p->out_ndims = x->ndims;
    p->out_shape[0] = p->N;
    p->out_shape[1] = p->O;
    if (sp == 2) p->out_shape[2] = p->OH;
    p->out_shape[x->ndims - 1] = p->OW;
    return 0;
}
