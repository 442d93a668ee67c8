/* The qkv kernel's internal state (kernels/qkv/qkv.c the plan and the
 * loops, qkv_prep.c the token tiles, qkv_out.c the evacuation). Internal to
 * the family. */
#ifndef NXSIM_KERNELS_QKV_IMPL_H
#define NXSIM_KERNELS_QKV_IMPL_H

#include "qkv.h"

#include "kernels/norms/rows.h"

#define QKV_ACC_BANKS 6 /* PSUM accumulators; two more banks take the transposes */
#define QKV_MB_MAX 8    /* token tiles per block */
#define QKV_RING_MAX 128
#define QKV_OUT_BUFS 4 /* result tiles (2 super-tiles when KI > 1) */
#define QKV_ROT_BUFS 3 /* the rotation's fp32 scratch */
#define QKV_TP_GROUP 4  /* transposes per PSUM bank (128 fp32 columns each) */
#define QKV_W_LANE 0u   /* weights: the first queue of every DMA engine */
#define QKV_X_LANE 16u  /* x, cos, sin: the second queue of engines 0-7 */
#define QKV_ST_LANE 24u /* stores: the second queue of engines 8-15 */
#define QKV_LANE_GROUP 8u
#define QKV_NORM_PIECE 1024u /* columns of one GpSimd pass of the norm (qkv_prep.c) */

typedef struct qkv_state {
    nx_kctx *k;
    nx_rows r;
    const nx_qkv_params *p;
    const nx_tensor_ref *x, *w, *gamma, *bias, *cos, *sin, *out[3];
    nx_dtype dt;
    uint64_t es;
    nx_qkv_wview wv; /* w's row pitch and head blocks' columns (qkv.h) */
    uint32_t P, TN, hpt, G, MB, R, nk, KI;
    uint64_t t_lo, t_hi, h_lo, h_hi; /* this core's tokens and heads */
    int split_cols;                  /* the grid's cores take head ranges (decode) */
    /* decode with narrow per-core columns: the cores split K instead (each
     * multiplies all heads over its K chunks [k_lo, k_lo + nkc)) and
     * exchange the partial sums through HBM scratch at xoff, each then
     * finishing heads [f_lo, f_hi) (nx_qkv_exchange, qkv_out.c) */
    int lazy_tp; /* decode: each transpose group emitted before its chunks' first multiplies (qkv.c) */
    int split_k;
    uint32_t k_lo, nkc;
    uint64_t f_lo, f_hi, xoff;
    nx_tile stage[2];
    uint64_t ntt, ntiles, ngroups, nblocks;
    nx_tile gamma_t, bias_t;
    nx_tile xt[2], small[2]; /* x, normed in place into h */
    nx_tile hT[QKV_MB_MAX], cs[QKV_MB_MAX], sr[QKV_MB_MAX], sn[QKV_MB_MAX];
    nx_tile ring[QKV_RING_MAX];
    nx_tile tp[2], acc[QKV_ACC_BANKS];
    nx_tile pf[QKV_ROT_BUFS], at[QKV_ROT_BUFS], bt[QKV_ROT_BUFS], ot[QKV_OUT_BUFS];
    uint32_t nout; /* result tiles in use */
    uint64_t loaded, released, pieces; /* the weight stream */
    uint64_t trs, outs, accs;
} qkv_state;

static inline uint32_t qkv_clip(uint64_t v, uint64_t cap) { return (uint32_t)(v < cap ? v : cap); }

/* Token tile tt of this core: the token of partition 0 and the count.
 * Partition p holds token tok0 + KI p: with KI > 1 (the heads layout's
 * prefill) the KI tiles of a super-tile of KI x 128 tokens interleave, so
 * each partition ends up holding KI consecutive positions, one run of KI d
 * elements per head in q, k and v (a DMA-efficient store). */
static inline uint64_t qkv_tok0(const qkv_state *s, uint64_t tt) {
    return s->t_lo + tt / s->KI * s->KI * s->P + tt % s->KI;
}
static inline uint32_t qkv_ntok(const qkv_state *s, uint64_t tt) {
    return s->KI > 1 ? s->P : qkv_clip(s->t_hi - qkv_tok0(s, tt), s->P);
}

/* Token tile tt into block slot m: the x rows (and cos, sin rows) loaded. */
int nx_qkv_prep_load(qkv_state *s, uint64_t tt, uint32_t m, nx_error *err);
/* Its norm (h = x * rstd * gamma, rounded to the dtype) and the signed sin. */
int nx_qkv_prep_norm(qkv_state *s, uint64_t tt, uint32_t m, nx_error *err);
/* h transposed on the PE into hT[m] (H on the partitions, K-major chunks):
 * the chunks this core multiplies, or chunks [kc0, kc1). */
int nx_qkv_prep_transpose(qkv_state *s, uint64_t tt, uint32_t m, nx_error *err);
int nx_qkv_prep_transpose_range(qkv_state *s, uint64_t tt, uint32_t m, uint32_t kc0, uint32_t kc1, nx_error *err);

/* Column tile `tile` of this core's heads, accumulated for token tile tt
 * (slot m) in PSUM bank `bank`: bias, RoPE on its q/k heads, the store. */
int nx_qkv_evacuate(qkv_state *s, uint64_t tt, uint32_t m, uint64_t tile, uint32_t bank, nx_error *err);
/* split_k: the tiles [t0, t1) of token tile tt accumulated in banks
 * bank[0 ..]: the other core's heads' partial sums stored to the scratch,
 * a barrier on it, the other core's partials of this core's heads added
 * into the banks, and those heads evacuated. */
int nx_qkv_exchange(qkv_state *s, uint64_t tt, uint32_t m, uint64_t t0, uint64_t t1, const uint32_t *bank,
                    nx_error *err);

#endif
