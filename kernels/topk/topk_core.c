/* The shared parts of the top-k leaves (kernels/topk/topk_core.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "topk_core.h"

/* ---- the call ------------------------------------------------------------------ */

static nx_dtype same_size(uint32_t es, nx_dtype d4, nx_dtype d2, nx_dtype d1) {
    return es == 4 ? d4 : es == 2 ? d2 : d1;
}

static int same_shape(const nx_tensor_ref *a, uint32_t nd, const uint64_t *shape) {
    if (a->ndims != nd) return 0;
    for (uint32_t d = 0; d < nd; d++)
        if (a->shape[d] != shape[d]) return 0;
    return 1;
}

static void fmt_shape(char *buf, size_t len, uint32_t nd, const uint64_t *s) {
    size_t n = 0;
    for (uint32_t d = 0; d < nd && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", d ? "," : "[", (unsigned long long)s[d]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

int tk_init(tk *t, struct nx_kctx *k, const char *leaf, const nx_kernel_call *call, nx_error *err) {
    memset(t, 0, sizeof *t);
    t->k = k;
    t->geo = nx_kctx_geometry(k);
    t->leaf = leaf;
    if (call->n_inputs != 1 || call->nargs != 3)
        return nx_fail(err, "%s: expects 1 input and 2 outputs (values, indices), got %u inputs and %u outputs", leaf,
                       call->n_inputs, call->nargs - call->n_inputs);
    const nx_tensor_ref *x = &call->args[0], *v = &call->args[1], *ix = &call->args[2];
    nx_topk_attrs a;
    if (nx_topk_read_attrs(call->additional_args, x->name, x->dtype, x->ndims, x->shape, &a, err) != 0) return -1;
    if (a.axis != (int32_t)x->ndims - 1)
        return nx_fail(err, "%s: attribute axis %d is not the last axis of operand 0 (%s) (the topk composite "
                            "transposes other axes to the end)",
                       leaf, a.axis, x->name);
    uint64_t rs[NX_KERNEL_MAX_DIMS];
    nx_topk_result_shape(x->ndims, x->shape, &a, rs);
    char want[96], got[96];
    fmt_shape(want, sizeof want, x->ndims, rs);
    if (v->dtype != x->dtype || !same_shape(v, x->ndims, rs)) {
        fmt_shape(got, sizeof got, v->ndims, v->shape);
        return nx_fail(err, "%s: result 0 (%s) is %s%s, must be %s%s (operand 0 (%s) with its last axis cut to k)",
                       leaf, v->name, nx_dtype_name(v->dtype), got, nx_dtype_name(x->dtype), want, x->name);
    }
    if (ix->dtype != NX_DT_INT32 || !same_shape(ix, x->ndims, rs)) {
        fmt_shape(got, sizeof got, ix->ndims, ix->shape);
        return nx_fail(err, "%s: result 1 (%s) is %s%s, must be int32%s", leaf, ix->name, nx_dtype_name(ix->dtype),
                       got, want);
    }
    t->dt = x->dtype;
    t->es = (uint32_t)nx_dtype_size(x->dtype);
    t->bits = same_size(t->es, NX_DT_UINT32, NX_DT_UINT16, NX_DT_UINT8);
    t->pe_dt = same_size(t->es, NX_DT_FP32, NX_DT_BF16, NX_DT_FP8_E4M3);
    t->is_float = nx_dtype_is_float(x->dtype);
    t->largest = a.largest;
    t->k_sel = a.k;
    t->n = x->shape[x->ndims - 1];
    t->rows = 1;
    for (uint32_t d = 0; d + 1 < x->ndims; d++) t->rows *= x->shape[d];
    t->folds = a.folds;
    t->scan_max = t->geo->max8_max_elems;
    if (a.chunk && a.chunk < t->scan_max) t->scan_max = a.chunk;
    if (t->scan_max < 8 || t->geo->max8_min_elems > 8)
        return nx_fail(err, "%s: max8 takes %u..%u elements on machine '%.16s'; the top-k needs 8", leaf,
                       t->geo->max8_min_elems, t->geo->max8_max_elems, t->geo->name);
    /* B: FLT_MAX for fp32 (no room), else (2 - 2^-8) 2^127, above bf16's
     * largest finite (2 - 2^-7) 2^127 and every narrower type's. */
    t->clamp = x->dtype == NX_DT_FP32 ? FLT_MAX : ldexp(2.0 - 0x1p-8, 127);
    if (t->is_float)
        t->pad = t->largest ? -INFINITY : NAN;
    else
        t->pad = t->largest ? (x->dtype == NX_DT_INT8 ? -128 : x->dtype == NX_DT_INT16 ? -32768 : 0)
                            : (x->dtype == NX_DT_INT8 ? 127 : x->dtype == NX_DT_UINT8 ? 255
                                                       : x->dtype == NX_DT_INT16 ? 32767 : 65535);
    t->x_off = x->hbm_offset;
    t->v_off = v->hbm_offset;
    t->i_off = ix->hbm_offset;
    nx_kctx_rows(k, t->rows, &t->row_lo, &t->row_hi);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------- */

nx_operand tk_view(const tk_cols *c, nx_dtype as, uint32_t P, uint64_t n) {
    int32_t one = 1;
    uint32_t cnt = (uint32_t)n;
    return nx_tile_view(c->t, as, 0, P, c->off, 1, &one, &cnt);
}

int tk_dma(tk *t, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    uint32_t lanes = nx_kctx_lanes(t->k), P = dst->partition_count;
    uint64_t F = nx_operand_free_elems(dst);
    uint64_t bytes = (uint64_t)P * F * t->es;
    uint32_t pieces = (uint32_t)tk_min(tk_max(bytes / 32768, 1), 16);
    if (pieces > lanes) pieces = lanes;
    if (pieces > 1 && P == 1 && dst->ndims == 1 && src->ndims == 1 && dst->stride[0] == 1 && src->stride[0] == 1) {
        /* one row: by columns, pieces of at least 2 KiB */
        uint64_t per = tk_ceil(F, pieces);
        if (per * t->es < 2048) per = tk_ceil(2048, t->es);
        for (uint64_t c0 = 0; c0 < F; c0 += per) {
            uint64_t cn = tk_min(per, F - c0);
            nx_operand d = *dst, s = *src;
            uint64_t dsz = nx_dtype_size((nx_dtype)d.dtype), ssz = nx_dtype_size((nx_dtype)s.dtype);
            d.offset += c0 * dsz;
            s.offset += c0 * ssz;
            d.count[0] = s.count[0] = (uint32_t)cn;
            if (nx_kctx_dma_on(t->k, t->lane++ % lanes, &d, &s, err) != 0) return -1;
        }
        return 0;
    }
    if (pieces > P) pieces = P;
    if (pieces <= 1) return nx_kctx_dma_on(t->k, t->lane++ % lanes, dst, src, err);
    int rc = nx_kctx_dma_split(t->k, t->lane % lanes, pieces, dst, src, err);
    t->lane += pieces;
    return rc;
}

int tk_pmod(tk *t, nx_error *err) {
    if (t->have_pmod) return 0;
    uint32_t P = t->geo->partitions, W = t->geo->pool_partitions_per_core;
    if (W == 0 || (W & (W - 1)) != 0)
        return nx_fail(err, "%s: the GpSimd core width %u is not a power of two", t->leaf, W);
    if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_pmod", NX_DT_INT32, P, 1, &t->pmod, err) != 0) return -1;
    nx_operand d = nx_tile_ap(&t->pmod);
    nx_operand pat = nx_pattern(0, 1, P, 0, NULL, NULL);
    if (nx_kctx_iota(t->k, &d, &pat, err) != 0) return -1;
    nx_insn a = nx_insn_make(NX_OP_TENSOR_SCALAR);
    a.alu0 = NX_ALU_BITWISE_AND;
    a.op[0] = d;
    a.op[1] = d;
    a.op[2] = nx_imm(W - 1, NX_DT_INT32);
    if (nx_kctx_emit(t->k, NX_ENG_POOL, &a, err) != 0) return -1;
    t->have_pmod = 1;
    return 0;
}

/* ---- one selection -------------------------------------------------------------- */

static uint64_t tile_bytes(uint64_t elems, uint64_t es) { return (elems * es + 63) / 64 * 64; }

uint64_t tk_sel_bytes(const tk *t, uint32_t slots, uint64_t kcap, uint64_t lcap) {
    kcap = tk_max(kcap, 8);
    lcap = tk_ceil(lcap, 8) * 8;
    uint64_t b = slots * (tile_bytes(kcap, 4) + tile_bytes(lcap, 4) + tile_bytes(1, 4)) + tile_bytes(8, 4);
    if (t->is_float && !t->largest) b += tile_bytes(kcap, 1);
    return b;
}

int tk_sel_alloc(tk *t, tk_sel *s, uint32_t slots, uint32_t P, uint64_t kcap, uint64_t L, nx_error *err) {
    memset(s, 0, sizeof *s);
    s->P = P;
    s->slots = slots < 1 ? 1 : slots > 2 ? 2 : slots;
    s->kcap = tk_max(kcap, 8);
    s->lcap = tk_ceil(L, 8) * 8;
    for (uint32_t i = 0; i < s->slots; i++) {
        if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_keys", NX_DT_FP32, P, s->kcap, &s->K[i], err) != 0 ||
            nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_pos", NX_DT_INT32, P, s->lcap, &s->pos[i], err) != 0 ||
            nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_roff", NX_DT_FP32, P, 1, &s->roff[i], err) != 0)
            return -1;
    }
    if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_max8", NX_DT_FP32, P, 8, &s->V, err) != 0) return -1;
    if (t->is_float && !t->largest) {
        if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_nan", NX_DT_UINT8, P, s->kcap, &s->mask, err) != 0) return -1;
        s->have_mask = 1;
    }
    return 0;
}

void tk_sel_release(tk *t, tk_sel *s) {
    nx_error e;
    for (uint32_t i = 0; i < s->slots; i++) {
        nx_kctx_release(t->k, &s->K[i], &e);
        nx_kctx_release(t->k, &s->pos[i], &e);
        nx_kctx_release(t->k, &s->roff[i], &e);
    }
    nx_kctx_release(t->k, &s->V, &e);
    if (s->have_mask) nx_kctx_release(t->k, &s->mask, &e);
}

static int tensor_scalar(tk *t, nx_engine eng, const nx_operand *dst, const nx_operand *in, nx_alu_op op0,
                         const nx_operand *s0, nx_alu_op op1, const nx_operand *s1, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_TENSOR_SCALAR);
    a.alu0 = (uint8_t)op0;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = *s0;
    if (s1) {
        a.alu1 = (uint8_t)op1;
        a.op[3] = *s1;
    }
    return nx_kctx_emit(t->k, eng, &a, err);
}

/* K[:, 0:n] = key(x); pads K[:, n:8] with the knock-out. */
static int keys(tk *t, tk_sel *s, const nx_tile *K, tk_cols x, uint64_t n, nx_error *err) {
    uint32_t P = s->P;
    tk_cols kc = {K, 0};
    nx_operand kv = tk_view(&kc, NX_DT_FP32, P, n), xv = tk_view(&x, t->dt, P, n);
    nx_operand lo = nx_imm(-t->clamp, NX_DT_FP32), neg = nx_imm(-1.0, NX_DT_FP32);
    if (t->largest) {
        if (tensor_scalar(t, NX_ENG_POOL, &kv, &xv, NX_ALU_MAX, &lo, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    } else {
        if (tensor_scalar(t, NX_ENG_POOL, &kv, &xv, NX_ALU_MULTIPLY, &neg, NX_ALU_MAX, &lo, err) != 0) return -1;
        if (s->have_mask) {
            /* NaN is the largest value: with largest = false it ranks last
             * among the real elements (-FLT_MAX, below -B), still above the
             * knock-out */
            tk_cols mc = {&s->mask, 0};
            nx_operand mv = tk_view(&mc, NX_DT_UINT8, P, n);
            if (nx_kctx_tensor_tensor(t->k, NX_ENG_POOL, NX_ALU_NOT_EQUAL, &mv, &xv, &xv, err) != 0) return -1;
            nx_insn sel = nx_insn_make(NX_OP_SELECT);
            sel.op[0] = kv;
            sel.op[1] = mv;
            sel.op[2] = nx_imm(-FLT_MAX, NX_DT_FP32);
            if (nx_kctx_emit(t->k, NX_ENG_DVE, &sel, err) != 0) return -1;
        }
    }
    if (n < 8) {
        tk_cols pc = {K, n};
        nx_operand pv = tk_view(&pc, NX_DT_FP32, P, 8 - n);
        if (nx_kctx_memset(t->k, NX_ENG_POOL, &pv, -INFINITY, err) != 0) return -1;
    }
    return 0;
}

int tk_select(tk *t, tk_sel *s, tk_cols x, tk_cols idx, const nx_tile *base, uint64_t add, uint64_t n,
              uint64_t L, tk_cols out_x, tk_cols out_i, nx_error *err) {
    if (L > n || n > s->kcap || tk_ceil(L, 8) * 8 > s->lcap)
        return nx_fail(err, "%s: internal: a selection of %llu of %llu candidates exceeds its workspace", t->leaf,
                       (unsigned long long)L, (unsigned long long)n);
    if (tk_pmod(t, err) != 0) return -1;
    uint32_t P = s->P, slot = s->turn++ % s->slots;
    const nx_tile *K = &s->K[slot], *pos = &s->pos[slot], *roff = &s->roff[slot];
    if (keys(t, s, K, x, n, err) != 0) return -1;
    uint64_t kn = tk_max(n, 8), rounds = tk_ceil(L, 8);
    int32_t one = 1, back = -1;
    uint32_t cnt = (uint32_t)kn, eight = 8;
    nx_operand kv = nx_tile_view(K, NX_DT_FP32, 0, P, 0, 1, &one, &cnt);
    nx_operand v = nx_tile_view(&s->V, NX_DT_FP32, 0, P, 0, 1, &one, &eight);
    nx_operand vrev = nx_tile_view(&s->V, NX_DT_FP32, 0, P, 7, 1, &back, &eight);
    for (uint64_t r = 0; r < rounds; r++) {
        nx_insn m = nx_insn_make(NX_OP_MAX8);
        m.op[0] = v;
        m.op[1] = kv;
        if (nx_kctx_emit(t->k, NX_ENG_DVE, &m, err) != 0) return -1;
        nx_insn mr = nx_insn_make(NX_OP_MATCH_REPLACE8);
        mr.op[0] = kv;
        mr.op[1] = kv;
        mr.op[2] = vrev;
        mr.op[3] = nx_imm(-INFINITY, NX_DT_FP32);
        mr.op[4] = nx_tile_view(pos, NX_DT_INT32, 0, P, r * 8 + 7, 1, &back, &eight);
        if (nx_kctx_emit(t->k, NX_ENG_DVE, &mr, err) != 0) return -1;
    }
    tk_cols pc = {pos, 0};
    nx_operand pv = tk_view(&pc, NX_DT_INT32, P, L);
    /* implicit indices from the raw positions */
    if (!idx.t) {
        nx_operand ov = tk_view(&out_i, NX_DT_INT32, P, L);
        nx_operand a = nx_imm((double)add, NX_DT_FP32);
        if (base) {
            nx_operand bv = nx_tile_view(base, NX_DT_INT32, 0, P, 0, 0, NULL, NULL);
            if (tensor_scalar(t, NX_ENG_POOL, &ov, &pv, NX_ALU_ADD, &bv, NX_ALU_ADD, &a, err) != 0) return -1;
        } else if (tensor_scalar(t, NX_ENG_POOL, &ov, &pv, NX_ALU_ADD, &a, NX_ALU_BYPASS, NULL, err) != 0) {
            return -1;
        }
    }
    /* gather indices: local_gather addresses the GpSimd core's partitions
     * flattened, so partition p's own data starts at (p mod W) n */
    nx_operand rv = nx_tile_view(roff, NX_DT_FP32, 0, P, 0, 0, NULL, NULL);
    nx_operand pm = nx_tile_view(&t->pmod, NX_DT_INT32, 0, P, 0, 0, NULL, NULL);
    nx_operand nn = nx_imm((double)n, NX_DT_FP32);
    if (tensor_scalar(t, NX_ENG_POOL, &rv, &pm, NX_ALU_MULTIPLY, &nn, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    if (tensor_scalar(t, NX_ENG_POOL, &pv, &pv, NX_ALU_ADD, &rv, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    nx_insn g = nx_insn_make(NX_OP_LOCAL_GATHER);
    g.op[0] = tk_view(&out_x, t->bits, P, L);
    g.op[1] = tk_view(&x, t->bits, P, n);
    g.op[2] = pv;
    if (nx_kctx_emit(t->k, NX_ENG_POOL, &g, err) != 0) return -1;
    if (idx.t) {
        g.op[0] = tk_view(&out_i, NX_DT_INT32, P, L);
        g.op[1] = tk_view(&idx, NX_DT_INT32, P, n);
        if (nx_kctx_emit(t->k, NX_ENG_POOL, &g, err) != 0) return -1;
    }
    return 0;
}

/* ---- rows from HBM ----------------------------------------------------------------- */

/* The valid length of fold f. */
static uint64_t fold_len(const tk_layout *lay, uint32_t f) {
    uint64_t start = (uint64_t)f * lay->sf;
    return start >= lay->len ? 0 : tk_min(lay->sf, lay->len - start);
}

/* Chunk [c0, c0 + cn) of every partition into xb (and ib). */
static int load_chunk(tk *t, const tk_layout *lay, uint64_t c0, uint64_t cn, const nx_tile *xb, const nx_tile *ib,
                      nx_error *err) {
    uint32_t P = lay->rows * lay->nf;
    tk_cols xc = {xb, 0}, ic = {ib, 0};
    int uniform = lay->nf == 1 || (lay->len == lay->nf * lay->sf && lay->pitch == lay->len);
    if (uniform) {
        uint64_t ps = lay->nf == 1 ? lay->pitch : lay->sf;
        if (lay->nf == 1 && c0 + cn > lay->len) cn = lay->len - c0;
        nx_operand d = tk_view(&xc, t->dt, P, cn);
        nx_operand s = nx_ap_hbm_rows(t->dt, lay->x_off + c0 * t->es, P, (int32_t)ps, (uint32_t)cn);
        if (tk_dma(t, &d, &s, err) != 0) return -1;
        if (lay->has_idx) {
            nx_operand di = tk_view(&ic, NX_DT_INT32, P, cn);
            nx_operand si = nx_ap_hbm_rows(NX_DT_INT32, lay->i_off + c0 * 4, P, (int32_t)ps, (uint32_t)cn);
            if (tk_dma(t, &di, &si, err) != 0) return -1;
        }
        return 0;
    }
    /* The last fold of each row is shorter: fill, then load the valid parts
     * row by row. A fill ties with the lowest real key and sits at the end
     * of the row, so it is never chosen before a real element (k <= len). */
    uint64_t last = fold_len(lay, lay->nf - 1);
    if (c0 + cn > last) {
        nx_operand d = tk_view(&xc, t->dt, P, cn);
        if (nx_kctx_memset(t->k, NX_ENG_POOL, &d, t->pad, err) != 0) return -1;
    }
    for (uint32_t r = 0; r < lay->rows; r++) {
        uint64_t row = lay->x_off + (uint64_t)r * lay->pitch * t->es;
        uint32_t p0 = r * lay->nf;
        if (lay->nf > 1) {
            int32_t one = 1;
            uint32_t c = (uint32_t)cn;
            nx_operand dd = nx_tile_view(xb, t->dt, p0, lay->nf - 1, 0, 1, &one, &c);
            nx_operand s = nx_ap_hbm_rows(t->dt, row + c0 * t->es, lay->nf - 1, (int32_t)lay->sf, (uint32_t)cn);
            if (tk_dma(t, &dd, &s, err) != 0) return -1;
        }
        if (c0 < last) {
            int32_t one = 1;
            uint32_t c = (uint32_t)tk_min(cn, last - c0);
            nx_operand dd = nx_tile_view(xb, t->dt, p0 + lay->nf - 1, 1, 0, 1, &one, &c);
            nx_operand s = nx_ap_hbm_rows(t->dt, row + ((uint64_t)(lay->nf - 1) * lay->sf + c0) * t->es, 1,
                                          (int32_t)lay->sf, c);
            if (tk_dma(t, &dd, &s, err) != 0) return -1;
        }
    }
    return 0;
}

typedef struct rows_plan {
    uint64_t F;  /* chunk length */
    uint64_t nc; /* chunks */
    uint64_t C;  /* candidate buffer (0: one chunk) */
} rows_plan;

static uint64_t plan_bytes(const tk *t, const tk_layout *lay, uint64_t L, const rows_plan *p) {
    uint32_t bufs = p->nc > 1 ? 2 : 1;
    uint64_t b = bufs * tile_bytes(p->F, t->es);
    if (lay->has_idx) b += bufs * tile_bytes(p->F, 4);
    if (p->nc > 1) b += 2 * (tile_bytes(p->C, t->es) + tile_bytes(p->C, 4));
    b += tk_sel_bytes(t, bufs, tk_max(p->F, p->C), L);
    return b;
}

static int plan_rows(const tk *t, const tk_layout *lay, uint64_t L, rows_plan *p, nx_error *err) {
    /* Every chunk must give back fewer candidates than it holds, and the
     * candidate buffer must take at least two chunks' worth. */
    uint64_t sb = t->geo->sbuf_partition_bytes;
    uint64_t budget = sb > t->reserved ? (sb - t->reserved) * 7 / 8 : 0;
    uint64_t Fmax = t->scan_max;
    for (;;) {
        p->nc = tk_ceil(lay->sf, Fmax);
        p->F = tk_ceil(lay->sf, p->nc);
        p->C = 0;
        if (p->nc > 1) {
            uint64_t all = p->nc * tk_min(L, p->F);
            p->C = tk_min(all, t->scan_max);
            if (p->C < 2 * L) p->C = 2 * L;
        }
        int shrinks = p->nc == 1 || (L < p->F && 2 * L <= t->scan_max);
        while (shrinks && p->nc > 1 && plan_bytes(t, lay, L, p) > budget && p->C > 2 * L) p->C = tk_max(2 * L, p->C / 2);
        if (shrinks && plan_bytes(t, lay, L, p) <= budget) return 0;
        if (Fmax / 2 < tk_max(8, 2 * L) || Fmax / 2 < 8) break;
        Fmax /= 2;
    }
    return nx_fail(err, "%s: k = %llu over rows of %llu elements does not fit one partition's SBUF (%llu bytes) "
                        "with scans of at most %u elements (max8's limit): rows longer than one scan need k <= %u",
                   t->leaf, (unsigned long long)t->k_sel, (unsigned long long)lay->sf,
                   (unsigned long long)t->geo->sbuf_partition_bytes, t->scan_max, t->scan_max / 2);
}

int tk_rows(tk *t, const tk_layout *lay, uint64_t L, tk_cols out_x, tk_cols out_i, nx_error *err) {
    rows_plan pl;
    if (plan_rows(t, lay, L, &pl, err) != 0) return -1;
    uint32_t P = lay->rows * lay->nf;
    int rc = -1;
    nx_tile xb[2], ib[2], cbx[2], cbi[2];
    int nx = 0, ni = 0, nb = 0, have_sel = 0;
    tk_sel s;
    for (; nx < 2 && (nx == 0 || pl.nc > 1); nx++)
        if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_chunk", t->dt, P, pl.F, &xb[nx], err) != 0) goto done;
    for (; lay->has_idx && ni < nx; ni++)
        if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_chunk_idx", NX_DT_INT32, P, pl.F, &ib[ni], err) != 0) goto done;
    for (; pl.nc > 1 && nb < 2; nb++)
        if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_cand", t->dt, P, pl.C, &cbx[nb], err) != 0 ||
            nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_cand_idx", NX_DT_INT32, P, pl.C, &cbi[nb], err) != 0)
            goto done;
    if (tk_sel_alloc(t, &s, pl.nc > 1 ? 2 : 1, P, tk_max(pl.F, pl.C), L, err) != 0) goto done;
    have_sel = 1;
    if (load_chunk(t, lay, 0, tk_min(pl.F, lay->sf), &xb[0], lay->has_idx ? &ib[0] : NULL, err) != 0) goto done;
    if (pl.nc == 1) {
        tk_cols xc = {&xb[0], 0}, ic = {lay->has_idx ? &ib[0] : NULL, 0};
        rc = tk_select(t, &s, xc, ic, lay->base, 0, lay->sf, L, out_x, out_i, err);
        goto done;
    }
    uint32_t cur = 0;
    uint64_t fill = 0;
    for (uint64_t c = 0; c < pl.nc; c++) {
        uint64_t c0 = c * pl.F, cn = tk_min(pl.F, lay->sf - c0);
        if (c + 1 < pl.nc) {
            uint64_t n0 = c0 + pl.F;
            if (load_chunk(t, lay, n0, tk_min(pl.F, lay->sf - n0), &xb[(c + 1) % 2],
                           lay->has_idx ? &ib[(c + 1) % 2] : NULL, err) != 0)
                goto done;
        }
        uint64_t Lc = tk_min(L, cn);
        if (fill + Lc > pl.C) {
            /* reduce the buffer to its best L, into the other buffer */
            tk_cols fx = {&cbx[cur], 0}, fi = {&cbi[cur], 0}, tx = {&cbx[cur ^ 1], 0}, ti = {&cbi[cur ^ 1], 0};
            if (tk_select(t, &s, fx, fi, NULL, 0, fill, L, tx, ti, err) != 0) goto done;
            cur ^= 1;
            fill = L;
        }
        tk_cols xc = {&xb[c % 2], 0}, ic = {lay->has_idx ? &ib[c % 2] : NULL, 0};
        tk_cols tx = {&cbx[cur], fill}, ti = {&cbi[cur], fill};
        if (tk_select(t, &s, xc, ic, lay->base, c0, cn, Lc, tx, ti, err) != 0) goto done;
        fill += Lc;
    }
    {
        tk_cols fx = {&cbx[cur], 0}, fi = {&cbi[cur], 0};
        rc = tk_select(t, &s, fx, fi, NULL, 0, fill, L, out_x, out_i, err);
    }
done:
    if (have_sel) tk_sel_release(t, &s);
    nx_error e;
    for (int i = 0; i < nx; i++) nx_kctx_release(t->k, &xb[i], &e);
    for (int i = 0; i < ni; i++) nx_kctx_release(t->k, &ib[i], &e);
    for (int i = 0; i < nb; i++) {
        nx_kctx_release(t->k, &cbx[i], &e);
        nx_kctx_release(t->k, &cbi[i], &e);
    }
    return rc;
}

/* ---- stores ------------------------------------------------------------------------ */

int tk_fold_base(tk *t, uint32_t P, uint32_t nf, uint64_t sf, nx_tile *out, nx_error *err) {
    if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_fold_base", NX_DT_INT32, P, 1, out, err) != 0) return -1;
    nx_operand d = nx_tile_ap(out);
    nx_operand pat = nx_pattern(0, 1, P, 0, NULL, NULL);
    if (nx_kctx_iota(t->k, &d, &pat, err) != 0) return -1;
    nx_operand m = nx_imm(nf - 1, NX_DT_INT32), f = nx_imm((double)sf, NX_DT_FP32);
    return tensor_scalar(t, NX_ENG_POOL, &d, &d, NX_ALU_BITWISE_AND, &m, NX_ALU_MULTIPLY, &f, err);
}

int tk_store_rows(tk *t, uint64_t r0, uint32_t P, tk_cols lx, tk_cols li, nx_error *err) {
    uint64_t K = t->k_sel;
    nx_operand sx = tk_view(&lx, t->dt, P, K), si = tk_view(&li, NX_DT_INT32, P, K);
    nx_operand dx = nx_ap_hbm_rows(t->dt, t->v_off + r0 * K * t->es, P, (int32_t)K, (uint32_t)K);
    nx_operand di = nx_ap_hbm_rows(NX_DT_INT32, t->i_off + r0 * K * 4, P, (int32_t)K, (uint32_t)K);
    if (tk_dma(t, &dx, &sx, err) != 0) return -1;
    return tk_dma(t, &di, &si, err);
}

int tk_store_row(tk *t, uint64_t r, uint32_t p, tk_cols lx, tk_cols li, nx_error *err) {
    uint64_t K = t->k_sel;
    int32_t one = 1;
    uint32_t c = (uint32_t)K;
    nx_operand sx = nx_tile_view(lx.t, t->dt, p, 1, lx.off, 1, &one, &c);
    nx_operand si = nx_tile_view(li.t, NX_DT_INT32, p, 1, li.off, 1, &one, &c);
    nx_operand dx = nx_ap_hbm_rows(t->dt, t->v_off + r * K * t->es, 1, (int32_t)K, c);
    nx_operand di = nx_ap_hbm_rows(NX_DT_INT32, t->i_off + r * K * 4, 1, (int32_t)K, c);
    if (tk_dma(t, &dx, &sx, err) != 0) return -1;
    return tk_dma(t, &di, &si, err);
}
