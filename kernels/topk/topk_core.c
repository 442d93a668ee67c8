/* The shared parts of the top-k leaves (kernels/topk/topk_core.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
    t->key_mode = x->dtype != NX_DT_FP32;
    t->cand_dt = t->key_mode ? NX_DT_FP32 : x->dtype;
    t->cand_es = (uint32_t)nx_dtype_size(t->cand_dt);
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
    uint32_t engines = t->geo->dma_engines ? t->geo->dma_engines : 1;
    /* pieces of at least two efficient rows (run = the machine's
     * dma.efficient_bytes_per_partition, docs/parts/machine.md: 2 KiB, and
     * 4 KiB saturates) over the DMA engines, round robin over all lanes (two
     * queues per engine overlap their transfers' fixed costs): each transfer
     * pays the fixed cost once, and one engine's bandwidth is a sixteenth of
     * a core's. A row shorter than one run costs as much as a run (DMA
     * efficiency). */
    uint64_t run = nx_kctx_machine(t->k)->dma_efficient_bytes_per_partition;
    uint64_t bytes = (uint64_t)P * nx_max_u64(F * nx_dtype_size((nx_dtype)dst->dtype), run);
    uint32_t pieces = (uint32_t)nx_min_u64(nx_max_u64(bytes / (2 * run), 1), engines);
    if (pieces > lanes) pieces = lanes;
    if (pieces > 1 && P == 1 && dst->ndims == 1 && src->ndims == 1 && dst->stride[0] == 1 && src->stride[0] == 1) {
        /* one row: by columns, pieces of at least one run */
        uint64_t dsz = nx_dtype_size((nx_dtype)dst->dtype), ssz = nx_dtype_size((nx_dtype)src->dtype);
        uint64_t per = nx_max_u64(nx_cdiv_u64(F, pieces), nx_cdiv_u64(run, dsz));
        for (uint64_t c0 = 0; c0 < F; c0 += per) {
            uint64_t cn = nx_min_u64(per, F - c0);
            nx_operand d = *dst, s = *src;
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
    /* a bitvec op: on DVE, integer dtypes only (docs/parts/insns-dve.md, "Bitvec ops") */
    nx_operand m = nx_imm(W - 1, NX_DT_INT32);
    if (nx_kctx_tensor_scalar(t->k, NX_ENG_DVE, &d, &d, NX_ALU_BITWISE_AND, &m, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    t->have_pmod = 1;
    return 0;
}

/* ---- stores ------------------------------------------------------------------------ */


int tk_fold_base(tk *t, uint32_t P, uint32_t nf, uint64_t sf, nx_tile *out, nx_error *err) {
    if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_fold_base", NX_DT_INT32, P, 1, out, err) != 0) return -1;
    nx_operand d = nx_tile_ap(out);
    nx_operand pat = nx_pattern(0, 1, P, 0, NULL, NULL);
    if (nx_kctx_iota(t->k, &d, &pat, err) != 0) return -1;
    /* (p & (nf - 1)) * sf: the bitvec op on DVE, the arithmetic one after it
     * (a tensor_scalar does not mix them: docs/parts/insns-dve.md, "Bitvec ops") */
    nx_operand m = nx_imm(nf - 1, NX_DT_INT32), f = nx_imm((double)sf, NX_DT_FP32);
    if (nx_kctx_tensor_scalar(t->k, NX_ENG_DVE, &d, &d, NX_ALU_BITWISE_AND, &m, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    return nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &d, &d, NX_ALU_MULTIPLY, &f, NX_ALU_BYPASS, NULL, err);
}

int tk_alloc_list(tk *t, const char *name, nx_dtype dt, uint32_t P, uint64_t cols, nx_tile *out, nx_error *err) {
    return nx_kctx_alloc(t->k, NX_OPK_SBUF, name, dt, P, nx_max_u64(cols, 1) + 8, out, err);
}

/* stage[:, 0:k] = the values of the keys lx[:, 0:k] on partitions [0, P):
 * largest: the key, -B -> -inf; smallest: -key, -B -> +inf, -FLT_MAX -> NaN
 * (the keys of +inf and NaN). Exact: every key came from a value of x's
 * dtype. */
static int keys_to_values(tk *t, uint32_t P, tk_cols lx, const nx_tile *stage, nx_error *err) {
    uint64_t K = t->k_sel;
    tk_cols sc = {stage, 0};
    nx_operand kv = tk_view(&lx, NX_DT_FP32, P, K), sv = tk_view(&sc, t->dt, P, K);
    nx_operand sign = nx_imm(t->largest ? 1.0 : -1.0, NX_DT_FP32);
    if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &sv, &kv, NX_ALU_MULTIPLY, &sign, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    if (!t->is_float) return 0;
    nx_tile mask;
    if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_value_mask", NX_DT_UINT8, P, K, &mask, err) != 0) return -1;
    tk_cols mc = {&mask, 0};
    nx_operand mv = tk_view(&mc, NX_DT_UINT8, P, K);
    for (int pass = 0; pass < (t->largest ? 1 : 2); pass++) {
        nx_operand key = nx_imm(pass == 0 ? -t->clamp : -FLT_MAX, NX_DT_FP32);
        if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &mv, &kv, NX_ALU_IS_EQUAL, &key, NX_ALU_BYPASS, NULL, err) != 0) return -1;
        nx_insn sel = nx_insn_make(NX_OP_SELECT);
        sel.op[0] = sv;
        sel.op[1] = mv;
        sel.op[2] = nx_imm(pass == 0 ? (t->largest ? -INFINITY : INFINITY) : NAN, t->dt);
        if (nx_kctx_emit(t->k, NX_ENG_DVE, &sel, err) != 0) return -1;
    }
    return nx_kctx_release(t->k, &mask, err);
}

int tk_store(tk *t, uint64_t r0, uint32_t p0, uint32_t step, uint32_t count, tk_cols lx, tk_cols li,
             const nx_tile *stage, nx_error *err) {
    uint64_t K = t->k_sel;
    tk_cols vx = lx;
    if (t->key_mode) {
        if (keys_to_values(t, p0 + step * (count - 1) + 1, lx, stage, err) != 0) return -1;
        vx = (tk_cols){stage, 0};
    }
    int32_t one = 1;
    uint32_t c = (uint32_t)K;
    for (uint32_t j = 0; j < count; j += step == 1 ? count : 1) {
        uint32_t rows = step == 1 ? count : 1, p = p0 + j * step;
        nx_operand sx = nx_tile_view(vx.t, t->dt, p, rows, vx.off, 1, &one, &c);
        nx_operand si = nx_tile_view(li.t, NX_DT_INT32, p, rows, li.off, 1, &one, &c);
        nx_operand dx = nx_ap_hbm_rows(t->dt, t->v_off + (r0 + j) * K * t->es, rows, (int32_t)K, c);
        nx_operand di = nx_ap_hbm_rows(NX_DT_INT32, t->i_off + (r0 + j) * K * 4, rows, (int32_t)K, c);
        if (tk_dma(t, &dx, &sx, err) != 0 || tk_dma(t, &di, &si, err) != 0) return -1;
    }
    return 0;
}

tk_layout *tk_fold_tiles(const tk *t, uint32_t rows_per_tile, uint32_t nf, uint64_t sf, const nx_tile *base,
                         uint32_t *ntiles) {
    uint64_t R = t->row_hi - t->row_lo;
    *ntiles = (uint32_t)nx_cdiv_u64(R, rows_per_tile);
    tk_layout *tiles = calloc(*ntiles ? *ntiles : 1, sizeof *tiles);
    for (uint32_t i = 0; tiles && i < *ntiles; i++) {
        uint64_t r0 = t->row_lo + (uint64_t)i * rows_per_tile;
        tiles[i] = (tk_layout){.x_off = t->x_off + r0 * t->n * t->es, .pitch = t->n, .len = t->n,
                               .rows = (uint32_t)nx_min_u64(rows_per_tile, t->row_hi - r0), .nf = nf, .sf = sf,
                               .raw = 1, .base = base};
    }
    return tiles;
}
