/* The depthwise leaves' shared call checks and axis arithmetic
 * (kernels/conv/depthwise_plan.h). */
#include "depthwise_plan.h"

#include <stdio.h>
#include <string.h>

#include "isa/opcodes.h"
#include "kernels/transpose_plan.h"

/* ---- axis arithmetic ---- */

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void nx_dw_axis_run(const nx_dw_axis *a, int64_t t, int64_t lo, int64_t hi, nx_dw_run *r) {
    memset(r, 0, sizeof *r);
    /* v(o) = o * s + base is the dilated-input coordinate output o reads with
     * tap t; it is a real element when v >= 0, v % lhs_dil == 0 and
     * v / lhs_dil < in. */
    int64_t s = a->stride, ld = a->lhs_dil, base = t * a->rhs_dil - a->pad_lo;
    int64_t o_min = base >= 0 ? 0 : ceil_div(-base, s);
    int64_t o_max = floor_div((a->in - 1) * ld - base, s);
    if (o_min < lo) o_min = lo;
    if (o_max > hi - 1) o_max = hi - 1;
    if (o_min > o_max) return;
    int64_t step = ld / gcd64(s, ld), first = -1;
    for (int64_t o = o_min; o < o_min + step && o <= o_max; o++)
        if ((o * s + base) % ld == 0) {
            first = o;
            break;
        }
    if (first < 0) return;
    r->first = first;
    r->step = step;
    r->count = (o_max - first) / step + 1;
    r->in_first = (first * s + base) / ld;
    r->in_step = step * s / ld;
}

void nx_dw_axis_input_span(const nx_dw_axis *a, int64_t lo, int64_t hi, int64_t *in_lo,
                           int64_t *in_hi) {
    int64_t l = a->in, h = 0;
    for (int64_t t = 0; t < a->k; t++) {
        nx_dw_run r;
        nx_dw_axis_run(a, t, lo, hi, &r);
        if (r.count == 0) continue;
        int64_t last = r.in_first + (r.count - 1) * r.in_step;
        if (r.in_first < l) l = r.in_first;
        if (last + 1 > h) h = last + 1;
    }
    if (l >= h) l = h = 0;
    *in_lo = l;
    *in_hi = h;
}

/* ---- conv attributes ----
 * TEMPORARY reader until kernels/conv/conv_params.h lands (it will replace
 * this section): list-per-spatial-dim attributes, an int meaning the same
 * value on every axis, absent/none meaning the default. */

static int read_axis_list(const nx_attrs *attrs, const char *name, int64_t dflt, int64_t out[2],
                          nx_error *err) {
    out[0] = out[1] = dflt;
    const nx_value *v = NULL;
    for (uint32_t i = 0; attrs && i < attrs->count; i++)
        if (strcmp(attrs->items[i].name, name) == 0) v = &attrs->items[i].value;
    if (!v || v->kind == NX_VAL_NONE) return 0;
    if (v->kind == NX_VAL_INT) {
        out[0] = out[1] = v->i;
        return 0;
    }
    if (v->kind != NX_VAL_LIST || v->count != 2 || v->items[0].kind != NX_VAL_INT ||
        v->items[1].kind != NX_VAL_INT)
        return nx_fail(err, "attribute %s: must be a list of 2 ints (one per spatial dim)", name);
    out[0] = v->items[0].i;
    out[1] = v->items[1].i;
    return 0;
}

static int read_padding(const nx_attrs *attrs, int64_t lo[2], int64_t hi[2], nx_error *err) {
    lo[0] = lo[1] = hi[0] = hi[1] = 0;
    const nx_value *v = NULL;
    for (uint32_t i = 0; attrs && i < attrs->count; i++)
        if (strcmp(attrs->items[i].name, "padding") == 0) v = &attrs->items[i].value;
    if (!v || v->kind == NX_VAL_NONE) return 0;
    if (v->kind == NX_VAL_LIST && v->count == 2) {
        int ok = 1;
        for (int d = 0; d < 2; d++) {
            const nx_value *p = &v->items[d];
            ok &= p->kind == NX_VAL_LIST && p->count == 2 && p->items[0].kind == NX_VAL_INT &&
                  p->items[1].kind == NX_VAL_INT;
            if (ok) {
                lo[d] = p->items[0].i;
                hi[d] = p->items[1].i;
            }
        }
        if (ok) return 0;
    }
    return nx_fail(err, "attribute padding: must be [[lo, hi], [lo, hi]] (one pair per spatial dim)");
}

static int read_int(const nx_attrs *attrs, const char *name, int64_t dflt, int64_t *out,
                    nx_error *err) {
    *out = dflt;
    const nx_value *v = NULL;
    for (uint32_t i = 0; attrs && i < attrs->count; i++)
        if (strcmp(attrs->items[i].name, name) == 0) v = &attrs->items[i].value;
    if (!v || v->kind == NX_VAL_NONE) return 0;
    if (v->kind != NX_VAL_INT) return nx_fail(err, "attribute %s: must be an int", name);
    *out = v->i;
    return 0;
}

static const nx_value *find_attr(const nx_attrs *attrs, const char *name) {
    for (uint32_t i = 0; attrs && i < attrs->count; i++)
        if (strcmp(attrs->items[i].name, name) == 0) return &attrs->items[i].value;
    return NULL;
}

/* ---- the call ---- */

void nx_dw_format_pair(char *buf, size_t len, int64_t a, int64_t b) {
    snprintf(buf, len, "[%lld,%lld]", (long long)a, (long long)b);
}

/* Position of each of the 4 labels `want` in `labels`. */
static void label_dims(const char *labels, const char *want, uint32_t dim[4]) {
    for (int i = 0; i < 4; i++) dim[i] = (uint32_t)(strchr(labels, want[i]) - labels);
}

static void strides_of(const nx_tensor_ref *t, const uint32_t dim[4], uint64_t out[4]) {
    uint64_t s[4], acc = 1;
    for (int d = 3; d >= 0; d--) {
        s[d] = acc;
        acc *= t->shape[d];
    }
    for (int i = 0; i < 4; i++) out[i] = s[dim[i]];
}

static int is_pe_float(nx_dtype dt) {
    return dt == NX_DT_FP32 || dt == NX_DT_BF16 || dt == NX_DT_FP16 || dt == NX_DT_FP8_E4M3 ||
           dt == NX_DT_FP8_E5M2;
}

int nx_dw_prepare(const char *leaf, const nx_kernel_call *call, const nx_dw_layout *lay,
                  nx_dw_problem *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    p->leaf = leaf;
    uint32_t outs = call->nargs >= call->n_inputs ? call->nargs - call->n_inputs : 0;
    if (call->n_inputs != 2 || outs != 1)
        return nx_fail(err, "%s: expects 2 inputs (image, filter) and 1 output, got %u input%s and %u output%s",
                       leaf, call->n_inputs, call->n_inputs == 1 ? "" : "s", outs, outs == 1 ? "" : "s");
    const nx_tensor_ref *t[3] = {&call->args[0], &call->args[1], &call->args[2]};
    const char *labels[3] = {lay->img, lay->filt, lay->out};
    static const char *const role[3] = {"image", "filter", "output"};
    for (int i = 0; i < 3; i++)
        if (t[i]->ndims != 4)
            return nx_fail(err, "operand %d (%s): the %s has %u dims, layout %s needs 4", i, t[i]->name,
                           role[i], t[i]->ndims, labels[i]);
    p->img = t[0];
    p->filt = t[1];
    p->out = t[2];
    p->dtype = t[0]->dtype;
    if (!is_pe_float(p->dtype))
        return nx_fail(err, "operand 0 (%s): dtype %s is not one of fp32, bf16, fp16, fp8_e4m3, fp8_e5m2",
                       t[0]->name, nx_dtype_name(p->dtype) ? nx_dtype_name(p->dtype) : "?");
    for (int i = 1; i < 3; i++)
        if (t[i]->dtype != p->dtype)
            return nx_fail(err, "operand %d (%s): dtype %s differs from operand 0 (%s)'s %s", i, t[i]->name,
                           nx_dtype_name(t[i]->dtype) ? nx_dtype_name(t[i]->dtype) : "?", t[0]->name,
                           nx_dtype_name(p->dtype));
    uint32_t di[4], df[4], dout[4];
    label_dims(lay->img, "bf01", di);
    label_dims(lay->filt, "oi01", df);
    label_dims(lay->out, "bf01", dout);
    strides_of(t[0], di, p->img_stride);
    strides_of(t[1], df, p->filt_stride);
    strides_of(t[2], dout, p->out_stride);
    p->n = t[0]->shape[di[0]];
    p->c = t[0]->shape[di[1]];
    if (t[1]->shape[df[0]] != p->c)
        return nx_fail(err, "operand 1 (%s): filter dim %u (o) is %llu, must be the image's C = %llu", t[1]->name,
                       df[0], (unsigned long long)t[1]->shape[df[0]], (unsigned long long)p->c);
    if (t[1]->shape[df[1]] != 1)
        return nx_fail(err, "operand 1 (%s): filter dim %u (i) is %llu, a depthwise filter has 1 input feature per group",
                       t[1]->name, df[1], (unsigned long long)t[1]->shape[df[1]]);

    int64_t stride[2], lhs[2], rhs[2], lo[2], hi[2], fgc, bgc;
    if (read_axis_list(call->additional_args, "stride", 1, stride, err) != 0 ||
        read_axis_list(call->additional_args, "lhs_dilation", 1, lhs, err) != 0 ||
        read_axis_list(call->additional_args, "rhs_dilation", 1, rhs, err) != 0 ||
        read_padding(call->additional_args, lo, hi, err) != 0 ||
        read_int(call->additional_args, "feature_group_count", 1, &fgc, err) != 0 ||
        read_int(call->additional_args, "batch_group_count", 1, &bgc, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    static const char *const names[3] = {"stride", "lhs_dilation", "rhs_dilation"};
    const int64_t *lists[3] = {stride, lhs, rhs};
    for (int i = 0; i < 3; i++)
        if (lists[i][0] < 1 || lists[i][1] < 1) {
            char v[48];
            nx_dw_format_pair(v, sizeof v, lists[i][0], lists[i][1]);
            return nx_fail(err, "%s: attribute %s %s: every entry must be >= 1", leaf, names[i], v);
        }
    if (fgc != (int64_t)p->c)
        return nx_fail(err, "%s: attribute feature_group_count %lld: a depthwise conv needs feature_group_count = C = %llu",
                       leaf, (long long)fgc, (unsigned long long)p->c);
    if (bgc != 1)
        return nx_fail(err, "%s: attribute batch_group_count %lld: a forward depthwise conv needs batch_group_count = 1",
                       leaf, (long long)bgc);
    uint64_t want[4];
    want[dout[0]] = p->n;
    want[dout[1]] = p->c;
    for (int d = 0; d < 2; d++) {
        nx_dw_axis *a = &p->ax[d];
        a->in = (int64_t)t[0]->shape[di[2 + d]];
        a->k = (int64_t)t[1]->shape[df[2 + d]];
        a->stride = stride[d];
        a->pad_lo = lo[d];
        a->pad_hi = hi[d];
        a->lhs_dil = lhs[d];
        a->rhs_dil = rhs[d];
        int64_t span = (a->in - 1) * a->lhs_dil + 1 + a->pad_lo + a->pad_hi;
        int64_t window = (a->k - 1) * a->rhs_dil + 1;
        if (span < window) {
            char v[48];
            nx_dw_format_pair(v, sizeof v, lo[d], hi[d]);
            return nx_fail(err, "%s: spatial dim %d: the dilated window of %lld exceeds the padded input of %lld "
                                "(input %lld, lhs_dilation %lld, padding %s)",
                           leaf, d, (long long)window, (long long)span, (long long)a->in, (long long)a->lhs_dil, v);
        }
        a->out = (span - window) / a->stride + 1;
        want[dout[2 + d]] = (uint64_t)a->out;
    }
    int same = 1;
    for (int i = 0; i < 4; i++) same &= t[2]->shape[i] == want[i];
    if (!same) {
        char got[128], w[128];
        nx_format_u64_list(got, sizeof got, t[2]->shape, 4);
        nx_format_u64_list(w, sizeof w, want, 4);
        return nx_fail(err, "operand 2 (%s): shape %s must be %s (the conv output size of the image and filter "
                            "under the stride, padding and dilations)",
                       t[2]->name, got, w);
    }
    const nx_value *os = find_attr(call->additional_args, "out_shape");
    if (os && os->kind != NX_VAL_NONE) {
        int ok = os->kind == NX_VAL_LIST && os->count == 4;
        for (uint32_t i = 0; ok && i < 4; i++)
            ok = os->items[i].kind == NX_VAL_INT && os->items[i].i == (int64_t)want[i];
        if (!ok) {
            char w[128];
            nx_format_u64_list(w, sizeof w, want, 4);
            return nx_fail(err, "%s: attribute out_shape: must equal the output's shape %s", leaf, w);
        }
    }
    return 0;
}

/* ---- emit helpers ---- */

int nx_dw_scale(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *in,
                const nx_operand *scalar, nx_error *err) {
    nx_insn s = nx_insn_make(NX_OP_TENSOR_SCALAR);
    s.alu0 = NX_ALU_MULTIPLY;
    s.op[0] = *dst;
    s.op[1] = *in;
    s.op[2] = *scalar;
    return nx_kctx_emit(k, engine, &s, err);
}

int nx_dw_scale_act(nx_kctx *k, const nx_operand *dst, const nx_operand *in,
                    const nx_operand *scale, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = NX_ACT_IDENTITY;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = *scale;
    a.op[3] = nx_imm(0.0, NX_DT_FP32);
    return nx_kctx_emit(k, NX_ENG_ACT, &a, err);
}

int nx_dw_mac(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *in0,
              const nx_operand *scalar, const nx_operand *in1, nx_error *err) {
    nx_insn s = nx_insn_make(NX_OP_SCALAR_TENSOR_TENSOR);
    s.alu0 = NX_ALU_MULTIPLY;
    s.alu1 = NX_ALU_ADD;
    s.op[0] = *dst;
    s.op[1] = *in0;
    s.op[2] = *scalar;
    s.op[3] = *in1;
    return nx_kctx_emit(k, engine, &s, err);
}

int nx_dw_dma_rows(nx_kctx *k, uint32_t *lane, uint32_t pieces, uint32_t min_rows,
                   const nx_operand *dst, const nx_operand *src, nx_error *err) {
    uint32_t rows = dst->partition_count;
    if (min_rows < 1) min_rows = 1;
    uint32_t n = rows / min_rows;
    if (n > pieces) n = pieces;
    if (n < 1) n = 1;
    if (nx_kctx_dma_split(k, *lane, n, dst, src, err) != 0) return -1;
    *lane = (*lane + n) % nx_kctx_lanes(k);
    return 0;
}

uint32_t nx_dw_partition_align(const nx_geometry *geo, uint32_t count) {
    uint32_t quarter = geo->partitions / 4 ? geo->partitions / 4 : 1;
    uint32_t half = geo->partitions / 2 ? geo->partitions / 2 : 1;
    return count <= quarter ? quarter : count <= half ? half : geo->partitions;
}
