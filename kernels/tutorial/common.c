/* The parts the four tutorial kernels share (tut_common.h). */
#include "tut_common.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *const nx_tutorial_matmul_attrs[] = {"tiles_in_block_m", "tiles_in_block_n", "tiles_in_block_k",
                                                NULL};

int nx_tutorial_result_shape(const char *lhs_name, uint32_t lhs_ndims, const uint64_t *lhs_shape,
                             const char *rhs_name, uint32_t rhs_ndims, const uint64_t *rhs_shape,
                             uint64_t out[2], nx_error *err) {
    if (lhs_ndims != 2)
        return nx_fail(err, "operand 0 (%s): lhsT must be 2-D [K, M], it has %u dims", lhs_name, lhs_ndims);
    if (rhs_ndims != 2)
        return nx_fail(err, "operand 1 (%s): rhs must be 2-D [K, N], it has %u dims", rhs_name, rhs_ndims);
    if (lhs_shape[0] != rhs_shape[0])
        return nx_fail(err,
                       "operand 1 (%s): contraction dim K = %llu differs from operand 0 (%s)'s K = %llu "
                       "(lhsT is [K, M], rhs [K, N])",
                       rhs_name, (unsigned long long)rhs_shape[0], lhs_name, (unsigned long long)lhs_shape[0]);
    if (lhs_shape[0] == 0 || lhs_shape[1] == 0 || rhs_shape[1] == 0)
        return nx_fail(err, "operand 0 (%s): empty matmul [%llu, %llu] @ [%llu, %llu]", lhs_name,
                       (unsigned long long)lhs_shape[0], (unsigned long long)lhs_shape[1],
                       (unsigned long long)rhs_shape[0], (unsigned long long)rhs_shape[1]);
    out[0] = lhs_shape[1];
    out[1] = rhs_shape[1];
    return 0;
}

int nx_tutorial_blocking_read(const nx_attrs *attrs, nx_tutorial_blocking *out, nx_error *err) {
    /* the tutorial's meta-parameter defaults */
    out->tiles_m = 16;
    out->tiles_n = 2;
    out->tiles_k = 8;
    uint64_t *slot[3] = {&out->tiles_m, &out->tiles_n, &out->tiles_k};
    for (uint32_t i = 0; attrs && i < attrs->count; i++) {
        const nx_attr *a = &attrs->items[i];
        for (int j = 0; j < 3; j++) {
            if (strcmp(a->name, nx_tutorial_matmul_attrs[j]) != 0) continue;
            if (a->value.kind != NX_VAL_INT || a->value.i < 1 || a->value.i > 4096)
                return nx_fail(err, "attribute %s: must be an integer in [1, 4096]", a->name);
            *slot[j] = (uint64_t)a->value.i;
        }
    }
    return 0;
}

int tut_init(tut *t, nx_kctx *k, const char *name, const nx_kernel_call *call, nx_error *err) {
    memset(t, 0, sizeof *t);
    t->k = k;
    t->name = name;
    if (call->n_inputs != 2 || call->nargs != 3)
        return nx_fail(err, "%s: expects 2 inputs (lhsT, rhs) and 1 output, got %u inputs and %u outputs", name,
                       call->n_inputs, call->nargs - call->n_inputs);
    const nx_tensor_ref *l = &call->args[0], *r = &call->args[1], *o = &call->args[2];
    uint64_t want[2];
    if (nx_tutorial_result_shape(l->name, l->ndims, l->shape, r->name, r->ndims, r->shape, want, err) != 0)
        return -1;
    nx_dtype dt = l->dtype;
    if (dt > NX_DT_FP8_E5M2 || !nx_dtype_is_float(dt))
        return nx_fail(err, "operand 0 (%s): dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                       l->name, nx_dtype_name(dt) ? nx_dtype_name(dt) : "?");
    for (int i = 1; i < 3; i++)
        if (call->args[i].dtype != dt)
            return nx_fail(err, "operand %d (%s): dtype %s differs from operand 0 (%s)'s %s", i, call->args[i].name,
                           nx_dtype_name(call->args[i].dtype), l->name, nx_dtype_name(dt));
    if (o->ndims != 2 || o->shape[0] != want[0] || o->shape[1] != want[1])
        return nx_fail(err, "operand 2 (%s): the result must be [%llu, %llu] (lhsT [K, M] @ rhs [K, N])", o->name,
                       (unsigned long long)want[0], (unsigned long long)want[1]);
    t->dt = dt;
    t->es = nx_dtype_size(dt);
    t->K = l->shape[0];
    t->M = l->shape[1];
    t->N = r->shape[1];
    t->lhsT = l->hbm_offset;
    t->rhs = r->hbm_offset;
    t->out = o->hbm_offset;
    const nx_geometry *g = nx_kctx_geometry(k);
    t->tile_k = g->partitions;
    t->tile_m = g->pe_cols;
    t->tile_n = g->pe_moving_free_max;
    /* a PSUM tile of TILE_N fp32 must fit one bank (the tutorial's [128, 512]) */
    if ((uint64_t)t->tile_n * 4 > g->psum_bank_bytes) t->tile_n = (uint32_t)(g->psum_bank_bytes / 4);
    t->sbuf_bytes = g->sbuf_partition_bytes;
    t->engines = g->dma_engines ? g->dma_engines : 1;
    uint32_t lanes = nx_kctx_lanes(k);
    if (t->engines > lanes) t->engines = lanes;
    t->groups = lanes / t->engines;
    if (t->groups == 0) t->groups = 1;
    t->share = g->partitions / t->engines ? g->partitions / t->engines : 1;
    /* access-pattern row pitches are 32-bit element counts */
    if (t->M > INT32_MAX || t->N > INT32_MAX)
        return nx_fail(err, "%s: rows of %llu elements exceed 32-bit access-pattern strides", name,
                       (unsigned long long)(t->M > t->N ? t->M : t->N));
    return 0;
}

int tut_require_multiple(const tut *t, const char *dim, uint64_t value, uint64_t unit, const char *unit_name,
                         nx_error *err) {
    if (unit && value % unit == 0) return 0;
    return nx_fail(err, "%s: %s = %llu must be a multiple of %llu (%s)", t->name, dim, (unsigned long long)value,
                   (unsigned long long)unit, unit_name);
}

int tut_require_sbuf(const tut *t, uint64_t need, const char *what, nx_error *err) {
    if (need <= t->sbuf_bytes) return 0;
    return nx_fail(err, "%s: %s need %llu bytes per partition, SBUF has %llu", t->name, what,
                   (unsigned long long)need, (unsigned long long)t->sbuf_bytes);
}

uint64_t tut_tile_bytes(uint64_t elems, uint64_t es) { return (elems * es + 63) / 64 * 64; }

nx_operand tut_lhsT(const tut *t, uint64_t k0, uint32_t rows, uint64_t c0, uint32_t cols) {
    return nx_ap_hbm_rows(t->dt, t->lhsT + (k0 * t->M + c0) * t->es, rows, (int32_t)t->M, cols);
}

nx_operand tut_rhs(const tut *t, uint64_t k0, uint32_t rows, uint64_t c0, uint32_t cols) {
    return nx_ap_hbm_rows(t->dt, t->rhs + (k0 * t->N + c0) * t->es, rows, (int32_t)t->N, cols);
}

nx_operand tut_result(const tut *t, uint64_t m0, uint32_t rows, uint64_t n0, uint32_t cols) {
    return nx_ap_hbm_rows(t->dt, t->out + (m0 * t->N + n0) * t->es, rows, (int32_t)t->N, cols);
}

nx_operand tut_cols(const nx_tile *tile, uint64_t c0, uint32_t n) {
    const int32_t one = 1;
    return nx_tile_view(tile, (nx_dtype)tile->dtype, 0, tile->partitions, c0, 1, &one, &n);
}

int tut_dma(tut *t, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    uint32_t first = t->group * t->engines;
    t->group = (t->group + 1) % t->groups;
    uint32_t rows = dst->partition_count;
    if (src->partition_count != rows)
        return nx_fail(err, "sp dma_copy: dst has %u partitions but src has %u", rows, (unsigned)src->partition_count);
    for (uint32_t i = 0, r0 = 0; r0 < rows; i++, r0 += t->share) {
        uint32_t n = rows - r0 < t->share ? rows - r0 : t->share;
        nx_operand d = nx_operand_rows(dst, r0, n), s = nx_operand_rows(src, r0, n);
        if (nx_kctx_dma_on(t->k, first + i, &d, &s, err) != 0) return -1;
    }
    return 0;
}

int tut_defer_store(tut *t, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    if (t->npending == TUT_MAX_PENDING && tut_flush_stores(t, err) != 0) return -1;
    t->pending[t->npending].dst = *dst;
    t->pending[t->npending].src = *src;
    t->npending++;
    return 0;
}

int tut_flush_stores(tut *t, nx_error *err) {
    for (uint32_t i = 0; i < t->npending; i++)
        if (tut_dma(t, &t->pending[i].dst, &t->pending[i].src, err) != 0) return -1;
    t->npending = 0;
    return 0;
}

int tut_before_write(tut *t, const nx_tile *tile, nx_error *err) {
    for (uint32_t i = 0; i < t->npending; i++) {
        const nx_operand *s = &t->pending[i].src;
        if (s->kind == tile->mem && s->offset >= tile->offset && s->offset < tile->offset + tile->bytes)
            return tut_flush_stores(t, err);
    }
    return 0;
}

int tut_matmul(tut *t, const nx_operand *psum, const nx_operand *stationary, const nx_operand *moving,
               int accumulate, nx_error *err) {
    if (nx_kctx_load_stationary(t->k, stationary, err) != 0) return -1;
    return nx_kctx_multiply_moving(t->k, psum, moving, accumulate, err);
}

int tut_alloc_ring(tut *t, nx_operand_kind mem, const char *name, nx_dtype dt, uint32_t partitions,
                   uint64_t elems, nx_tile *tiles, uint32_t n, nx_error *err) {
    for (uint32_t i = 0; i < n; i++)
        if (nx_kctx_alloc(t->k, mem, name, dt, partitions, elems, &tiles[i], err) != 0) return -1;
    return 0;
}
