/* The flash attention kernel's internals (kernels/attention/flash.c): its
 * plan (flash_plan.c: work units dealt to the cores, key blocks, steps),
 * its stages (flash_stages.c) and the pipeline that emits them (flash.c).
 * Internal to kernels/attention/. */
#ifndef NXSIM_KERNELS_ATTENTION_FLASH_IMPL_H
#define NXSIM_KERNELS_ATTENTION_FLASH_IMPL_H

#include "flash.h"

#include "kernels/norms/rows.h"

#define FA_BK 512u   /* key block: one PSUM bank of fp32 scores */
#define FA_GMAX 8u   /* query tiles per unit */
#define FA_KBUFS 3u  /* K blocks */
#define FA_KTBUFS 4u /* K^T blocks */
#define FA_VBUFS 6u  /* V blocks (live until their last P V) */
#define FA_RING 6u   /* P, P^T, output rows */
#define FA_SMAX 4u   /* score banks */
#define FA_QG 4u     /* query tiles per Q load group (512 rows, loaded like a K block) */
#define FA_BIG 3.0e38
#define FA_STORE_LAG 8u /* slots from a tile's end to its store */

/* stats columns of a tile (fp32): four nm, four alpha and four row sums
 * (rotating over the tile's steps, so a late stage reads its own step's),
 * negmax, the sink, the running sum l */
enum { ST_NM = 0, ST_ALPHA = 4, ST_RS = 8, ST_NEGMAX = 12, ST_SINK = 13, ST_L = 14, ST_COLS = 16 };

typedef struct fa_unit {
    uint64_t b, h, t0;
    uint32_t nt, par;   /* tiles; the parity of its SBUF state set */
    uint64_t first_step;
} fa_unit;

typedef struct fa_block {
    uint64_t unit, first_step;
    int64_t c0;
    uint32_t w;
    uint8_t perm; /* a full block: partition p holds keys c0 + 4p .. 4p + 3 */
} fa_block;

typedef struct fa_step {
    uint64_t unit, block;
    uint32_t g;           /* tile within the unit */
    uint32_t a_al, wa;    /* block columns [a_al, a_al + wa) */
    uint32_t nm_old, nm_new, alpha, rs;
    uint8_t first, last;  /* the tile's first / last step */
    uint64_t prev;        /* the tile's previous step (UINT64_MAX: none) */
} fa_step;

typedef struct fa_plan {
    fa_unit *units;
    fa_block *blocks;
    fa_step *steps;
    uint64_t nunits, nblocks, nsteps;
} fa_plan;

typedef struct fa_ctx {
    nx_kctx *k;
    nx_rows r;
    const nx_attention_params *p;
    const nx_tensor_ref *q, *kk, *v, *sink, *out;
    nx_dtype dt;
    uint32_t P, nd, G, nS, nkt; /* nkt: kt_ps sets (2 when PSUM has room beside G accumulators) */
    uint64_t nrt;              /* K^T and Q^T transposes so far (the kt_ps set rotates) */
    uint32_t kt_set[FA_KTBUFS]; /* the kt_ps set of a block's K^T */
    uint64_t es;
    double dve_ns, act_ns; /* work dealt so far, for the copies */
    nx_tile ident, um, lm;
    nx_tile k_sb[FA_KBUFS], v_sb[FA_VBUFS], kt_sb[FA_KTBUFS][2];
    nx_tile p_sb[FA_RING], pt_sb[FA_RING], out_sb[FA_RING], norm_sb[FA_RING];
    nx_tile s_ps[FA_SMAX], pt_ps[2], kt_ps[2][2]; /* kt_ps[set][D-chunk]: K^T and Q^T round trips */
    /* a unit's Q rows and Q^T per group of FA_QG tiles (tile g: group g / FA_QG,
     * Q^T columns (g % FA_QG) P ..) */
    nx_tile q_sb[2][FA_GMAX / FA_QG], qt[2][FA_GMAX / FA_QG][2], st[2][FA_GMAX], o_ps[FA_GMAX];
    uint64_t nouts;
    /* stores of normalised rows not yet emitted (outputs [nstored, nouts)):
     * DMA triggers issue in program order, so a store emitted with its
     * tile's end would hold the block loads behind it until ScalarE
     * reaches the normalisation; it goes out `FA_STORE_LAG` slots later */
    struct fa_pending {
        const fa_unit *u;
        uint32_t g;
        uint64_t due;
    } pend[FA_RING];
    uint64_t nstored, slot;
    /* a cache prefix (nx_attention_flash_cached; NULL: none): key columns
     * [0, Sc) from it, masked at run time by each row's length, then the
     * Skv_new keys of k and v */
    const nx_attention_cache *cache;
    uint64_t Sc, Skv_new;
    nx_tile fill_ident, key_cols, len_f, len_mask[FA_KTBUFS];
} fa_ctx;

/* A query tile's rows and key range. */
typedef struct fa_tile {
    uint64_t r0;
    uint32_t n;
    int64_t lo, hi, pos0;
} fa_tile;
void fa_tile_at(const fa_ctx *c, uint64_t t, fa_tile *ft);

/* The steps of this core (program) in emission order. */
int fa_plan_build(const fa_ctx *c, fa_plan *pl, nx_error *err);
void fa_plan_free(fa_plan *pl);

/* views */
nx_operand fa_col(const nx_tile *t, uint32_t n, uint32_t c);
nx_operand fa_view(const nx_tile *t, nx_dtype as, uint32_t n, uint64_t off, uint32_t cols);
uint64_t fa_head_base(const fa_ctx *c, const nx_tensor_ref *t, uint64_t b, uint64_t head, uint64_t H, uint64_t S);
/* DVE or ACT for a copy of `elems` per partition, whichever has less work. */
nx_engine fa_copy_engine(fa_ctx *c, uint64_t elems);

/* stages (flash_stages.c) */
int fa_block_load(fa_ctx *c, const fa_block *bl, uint64_t bi, const fa_unit *u, nx_error *err);
int fa_block_kt(fa_ctx *c, uint64_t bi, const fa_block *bl, nx_error *err);
int fa_block_kt_copy(fa_ctx *c, uint64_t bi, const fa_block *bl, nx_error *err);
/* A cached block's run-time length mask (1 where the key is at or past
 * L_b), beside its K^T; and its fill x mask accumulated into the scores. */
int fa_block_len_mask(fa_ctx *c, uint64_t bi, const fa_block *bl, const fa_unit *u, nx_error *err);
int fa_scores_len_mask(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err);
int fa_unit_load(fa_ctx *c, const fa_unit *u, nx_error *err);
int fa_unit_begin(fa_ctx *c, const fa_unit *u, nx_error *err);
int fa_scores(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err);
int fa_softmax_stats(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err);
int fa_softmax_nm(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err);
int fa_softmax_exp(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err);
int fa_transpose_p(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err);
int fa_copy_pt(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err);
int fa_rescale(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err);
int fa_pv(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err);
/* The tile's rows o / l (nm_col: its last step's nm; -1: a tile that saw no key, 0), stored. */
int fa_tile_end(fa_ctx *c, const fa_unit *u, uint32_t g, int nm_col, nx_error *err);
/* The pending stores due by slot `slot` (UINT64_MAX: all). */
int fa_stores_due(fa_ctx *c, uint64_t slot, nx_error *err);

#endif
