/* The depthwise leaves' shared call checks and axis arithmetic
 * (kernels/conv/depthwise/depthwise_plan.h). */
#include "depthwise_plan.h"

#include <math.h>

#include <stdio.h>
#include <string.h>

#include "isa/opcodes.h"
#include "kernels/transpose/transpose_plan.h"
#include "isa/intmath.h"

/* ---- axis arithmetic ---- */

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
    int64_t o_min = base >= 0 ? 0 : nx_ceil_div_i64(-base, s);
    int64_t o_max = nx_floor_div_i64((a->in - 1) * ld - base, s);
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

/* ---- the call ---- */

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

static const char *dt_name(nx_dtype dt) { return nx_dtype_name(dt) ? nx_dtype_name(dt) : "?"; }

int nx_dw_prepare(const char *leaf, const nx_kernel_call *call, const char *labels, nx_dw_problem *p,
                  nx_error *err) {
    memset(p, 0, sizeof *p);
    p->leaf = leaf;
    uint32_t outs = call->nargs >= call->n_inputs ? call->nargs - call->n_inputs : 0;
    if (call->n_inputs != 2 || outs != 1)
        return nx_fail(err, "%s: expects 2 inputs (image, filter) and 1 output, got %u input%s and %u output%s",
                       leaf, call->n_inputs, call->n_inputs == 1 ? "" : "s", outs, outs == 1 ? "" : "s");
    nx_conv_layout L;
    if (nx_conv_layout_parse(labels, &L, err) != 0) return nx_fail_prefix(err, "%s", leaf);
    const nx_tensor_ref *img = &call->args[0], *filt = &call->args[1], *out = &call->args[2];
    p->img = img;
    p->filt = filt;
    p->out = out;
    p->dtype = img->dtype;
    if (!is_pe_float(p->dtype))
        return nx_fail(err, "%s: operand 0 (%s): dtype %s is not one of fp32, bf16, fp16, fp8_e4m3, fp8_e5m2", leaf,
                       img->name, dt_name(p->dtype));
    for (int i = 1; i < 3; i++)
        if (call->args[i].dtype != p->dtype)
            return nx_fail(err, "%s: operand %d (%s): dtype %s differs from operand 0 (%s)'s %s", leaf, i,
                           call->args[i].name, dt_name(call->args[i].dtype), img->name, dt_name(p->dtype));
    nx_conv_params cp;
    if (nx_conv_params_read(call->additional_args, L.spatial, NULL, &cp, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    char iname[96], fname[96];
    snprintf(iname, sizeof iname, "operand 0 (%s)", img->name);
    snprintf(fname, sizeof fname, "operand 1 (%s)", filt->name);
    uint64_t want[NX_KERNEL_MAX_DIMS];
    if (nx_conv_result_shape(&L, &cp, img->ndims, img->shape, filt->ndims, filt->shape, iname, fname, want, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    p->n = img->shape[L.lhs_batch];
    p->c = img->shape[L.lhs_feature];
    char v[128];
    if (cp.feature_group_count != (int64_t)p->c) {
        nx_conv_format_attr(&cp, NX_CONV_FEATURE_GROUPS, v, sizeof v);
        return nx_fail(err, "%s: attribute feature_group_count=%s is not supported (a depthwise conv needs "
                            "feature_group_count = C = %llu)",
                       leaf, v, (unsigned long long)p->c);
    }
    if (filt->shape[L.rhs_out] != p->c) {
        char lay[240];
        nx_conv_layout_text(&L, iname, fname, lay, sizeof lay);
        return nx_fail(err, "%s: operand 1 (%s): dim %u (o) is %llu: channel multiplier %llu is not supported "
                            "(this leaf takes o = C = %llu; %s)",
                       leaf, filt->name, L.rhs_out, (unsigned long long)filt->shape[L.rhs_out],
                       (unsigned long long)(filt->shape[L.rhs_out] / p->c), (unsigned long long)p->c, lay);
    }
    int same = out->ndims == img->ndims;
    for (uint32_t i = 0; same && i < out->ndims; i++) same = out->shape[i] == want[i];
    if (!same) {
        char got[128], w[128];
        nx_format_u64_list(got, sizeof got, out->shape, out->ndims <= NX_KERNEL_MAX_DIMS ? out->ndims : 0);
        nx_format_u64_list(w, sizeof w, want, img->ndims);
        char lay[240];
        nx_conv_layout_text(&L, iname, fname, lay, sizeof lay);
        return nx_fail(err, "%s: operand 2 (%s): shape %s must be %s (the convolution's result; %s)", leaf, out->name,
                       got, w, lay);
    }
    uint32_t di[4] = {L.lhs_batch, L.lhs_feature, L.lhs_spatial[0], L.lhs_spatial[1]};
    uint32_t df[4] = {L.rhs_out, L.rhs_in, L.rhs_spatial[0], L.rhs_spatial[1]};
    uint32_t dout[4] = {L.out_batch, L.out_feature, L.out_spatial[0], L.out_spatial[1]};
    strides_of(img, di, p->img_stride);
    strides_of(filt, df, p->filt_stride);
    strides_of(out, dout, p->out_stride);
    for (uint32_t d = 0; d < 2; d++) {
        nx_dw_axis *a = &p->ax[d];
        a->in = (int64_t)img->shape[di[2 + d]];
        a->k = (int64_t)filt->shape[df[2 + d]];
        a->out = (int64_t)want[dout[2 + d]];
        a->stride = cp.stride[d];
        a->pad_lo = cp.pad_lo[d];
        a->pad_hi = cp.pad_hi[d];
        a->lhs_dil = cp.lhs_dilation[d];
        a->rhs_dil = cp.rhs_dilation[d];
    }
    p->params = cp;
    return 0;
}

int nx_dw_check_strides(const nx_dw_problem *p, const uint64_t *spans, uint32_t n, nx_error *err) {
    for (uint32_t i = 0; i < n; i++)
        if (spans[i] > INT32_MAX) {
            char st[64], ld[64], rd[64];
            nx_conv_format_attr(&p->params, NX_CONV_STRIDE, st, sizeof st);
            nx_conv_format_attr(&p->params, NX_CONV_LHS_DILATION, ld, sizeof ld);
            nx_conv_format_attr(&p->params, NX_CONV_RHS_DILATION, rd, sizeof rd);
            return nx_fail(err, "%s: attributes stride=%s, lhs_dilation=%s, rhs_dilation=%s with operand 0 (%s) "
                                "need access-pattern strides beyond 32 bits",
                           p->leaf, st, ld, rd, p->img->name);
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

int nx_dw_identity(nx_kctx *k, const nx_tile *t, nx_dtype dt, uint32_t p0, uint32_t n, nx_error *err) {
    int32_t one = 1, neg = -1;
    nx_operand blk = nx_tile_view(t, dt, p0, n, 0, 1, &one, &n);
    if (nx_kctx_memset(k, NX_ENG_POOL, &blk, 1.0, err) != 0) return -1;
    nx_insn a = nx_insn_make(NX_OP_AFFINE_SELECT);
    a.alu0 = NX_ALU_IS_EQUAL;
    a.op[0] = blk;
    a.op[1] = nx_pattern(0, 1, n, 1, &neg, &n); /* p - m: keep the diagonal */
    a.op[2] = blk;
    a.op[3] = nx_imm(0.0, dt);
    return nx_kctx_emit(k, NX_ENG_POOL, &a, err);
}

uint32_t nx_dw_half_lanes(const nx_kctx *k) {
    /* lane l is on DMA engine l mod E: with at least 2E lanes, lanes [0, E)
     * are one queue of every engine and [E, 2E) another */
    uint32_t lanes = nx_kctx_lanes(k), e = nx_kctx_geometry(k)->dma_engines;
    if (e >= 1 && lanes >= 2 * e) return e;
    return lanes > 1 ? lanes / 2 : 1;
}

int nx_dw_dma(nx_kctx *k, nx_dw_dir dir, uint32_t first, uint32_t pieces, const nx_operand *dst,
              const nx_operand *src, nx_error *err) {
    uint32_t half = nx_dw_half_lanes(k), base = dir == NX_DW_STORE && nx_kctx_lanes(k) > 1 ? half : 0;
    uint32_t rows = dst->partition_count;
    if (src->partition_count != rows)
        return nx_fail(err, "sp dma_copy: dst has %u partitions but src has %u", rows, (unsigned)src->partition_count);
    if (pieces == 0 || pieces > half) pieces = half;
    if (pieces > rows) pieces = rows;
    uint32_t per = rows / pieces, extra = rows % pieces, r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t n = per + (i < extra);
        nx_operand d = nx_operand_rows(dst, r0, n), sr = nx_operand_rows(src, r0, n);
        if (nx_kctx_dma_on(k, base + (first + i) % half, &d, &sr, err) != 0) return -1;
        r0 += n;
    }
    return 0;
}

uint32_t nx_dw_partition_align(const nx_geometry *geo, uint32_t count) {
    uint32_t quarter = geo->partitions / 4 ? geo->partitions / 4 : 1;
    uint32_t half = geo->partitions / 2 ? geo->partitions / 2 : 1;
    return count <= quarter ? quarter : count <= half ? half : geo->partitions;
}

void nx_dw_ratio(double x, uint32_t *num, uint32_t *den) {
    /* convergents p/q of x's continued fraction */
    uint64_t p0 = 0, q0 = 1, p1 = 1, q1 = 0;
    double r = x;
    *num = 0, *den = 1;
    for (int i = 0; i < 32 && x > 0; i++) {
        double a = floor(r);
        uint64_t ai = (uint64_t)a, p = ai * p1 + p0, q = ai * q1 + q0;
        if (q > 64) break;
        *num = (uint32_t)p, *den = (uint32_t)q;
        if (fabs(x - (double)p / (double)q) < 1e-9 || r - a < 1e-12) break;
        p0 = p1, q0 = q1, p1 = p, q1 = q;
        r = 1.0 / (r - a);
    }
}
