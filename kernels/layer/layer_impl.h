/* decoder_layer's internal state and the glue between its sub-kernels
 * (kernels/layer/layer.c the composition, layer_moves.c the HBM moves and
 * the residual add). Internal to the family. */
#ifndef NXSIM_KERNELS_LAYER_IMPL_H
#define NXSIM_KERNELS_LAYER_IMPL_H

#include "layer.h"

typedef struct layer_run {
    nx_kctx *k;
    const nx_tensor_ref *a; /* the call's 13 operands, then out, k_cache, v_cache */
    nx_layer_params p;
    nx_dtype dt;
    uint64_t es, T;
    uint32_t core;          /* the core traced (nx_kctx_core) */
    uint64_t nqc, nkvc, Ic; /* this core's shard: all with tp 1, half with tp 2 */
} layer_run;

/* n rows of cols elements from src (rows sp elements apart) to dst (dp
 * apart), byte offsets; DMAs of up to 128 rows on the context's lanes. */
int nx_layer_copy_rows(nx_kctx *k, nx_dtype dt, uint64_t dst, uint64_t dp, uint64_t src, uint64_t sp, uint64_t n,
                       uint64_t cols, nx_error *err);
/* n contiguous elements, cut into runs of 8192 elements. */
int nx_layer_copy_flat(nx_kctx *k, nx_dtype dt, uint64_t dst, uint64_t src, uint64_t n, nx_error *err);
/* Attention rows [B, nh, sc, d] (src) into the token layout [B, S, W] at
 * token t0 and column c0 (dst): the rows of batches [b0, b1). */
int nx_layer_heads_to_tokens(const layer_run *L, uint64_t src, uint64_t nh, uint64_t sc, uint64_t dst, uint64_t W,
                             uint64_t t0, uint64_t c0, uint64_t b0, uint64_t b1, nx_error *err);
/* Prefill's attention (layer_prefill.c): q [B, nqc, S, d], kn and vn
 * [B, nkvc, S, d] against the input caches and each other, the result rows
 * into att (tokens [B, S, nqc d]); this core's kv heads of the result
 * caches copied through and the new rows written at L_b + t. */
int nx_layer_prefill_attention(layer_run *L, const nx_tensor_ref *q, const nx_tensor_ref *kn, const nx_tensor_ref *vn,
                               const nx_tensor_ref *att, nx_error *err);
/* out rows [r0, r1) = h + m (each [T, H] at its byte offset), one rounding. */
int nx_layer_residual(const layer_run *L, uint64_t out, uint64_t h, uint64_t m, uint64_t r0, uint64_t r1, nx_error *err);

#endif
