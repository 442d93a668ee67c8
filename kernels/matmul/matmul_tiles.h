/* The matmul composite's internal state (kernels/matmul/matmul.c, the
 * tiling; kernels/matmul/matmul_prep.c, the K-major A tiles). Internal to
 * the family and to the kernels that reuse its tiling on a part of the
 * contraction (kernels/collective: each core its K range, its own result
 * tiles' fate through the hooks). */
#ifndef NXSIM_KERNELS_MATMUL_TILES_H
#define NXSIM_KERNELS_MATMUL_TILES_H

#include "matmul.h"

#include "kernels/norms/rows.h"

#define MM_BBUFS 16   /* B tiles in flight */
#define MM_OBUFS 12   /* result tiles */
#define MM_MB_MAX 6   /* row tiles per block */
#define MM_TP_GROUP 4 /* transposes per PSUM bank */
#define MM_ABUFS 3    /* A row tiles in flight */

typedef struct mm_state mm_state;
/* A result tile's fate: acc (PSUM fp32, mw x nw) holds rows [m0, m0 + mw)
 * and columns [n0, n0 + nw) of result matrix bi over this program's K range. */
typedef int (*mm_tile_fn)(mm_state *s, uint64_t bi, uint64_t m0, uint32_t mw, uint64_t n0, uint32_t nw,
                          const nx_operand *acc, nx_error *err);

struct mm_state {
    nx_kctx *k;
    nx_rows r;
    const nx_matmul_params *p;
    const nx_tensor_ref *A, *B, *C;
    nx_dtype dt;
    uint64_t es, nk, mtiles, ntiles;
    uint32_t TK, TM, TN, MB, abufs;
    nx_tile at[MM_ABUFS], aT[2][MM_MB_MAX], bt[MM_BBUFS], ot[MM_OBUFS], acc[MM_MB_MAX], tp[2];
    uint64_t loads, trs, bsteps, outs;
    uint64_t lo, blocks, bsteps_total, bloaded; /* the B load stream */
    uint64_t k0, Kp;     /* the contraction range: A columns, B rows [k0, k0 + Kp) */
    mm_tile_fn tile_out; /* NULL: copy in the result dtype and store into C */
    int (*ntile_end)(mm_state *s, nx_error *err); /* after an N tile's result tiles (may be NULL) */
    void *user;
};

static inline uint32_t mm_clip32(uint64_t v, uint32_t cap) { return (uint32_t)(v < cap ? v : cap); }

/* A block's prep, emitted one unit (a group of up to 4 transposes and its
 * copy) at a time so that it interleaves with the multiplies of the block
 * before it: the PE never waits for a copy, and the A row loads (row tile
 * m + 1 is loaded when m starts, into one of three rotating buffers) have
 * a row tile's time to arrive. */
typedef struct mm_prep {
    int active;
    uint64_t bi, mt0, kt;
    uint32_t nm, buf, m, at0;
} mm_prep;

/* Starts the prep of row tiles [mt0, mt0 + nm) of batch bi into aT[buf]
 * (loads row tile 0); each unit then emits one group; flush emits the rest. */
int nx_matmul_prep_begin(mm_state *s, mm_prep *pr, uint64_t bi, uint64_t mt0, uint32_t nm, uint32_t buf, nx_error *err);
int nx_matmul_prep_unit(mm_state *s, mm_prep *pr, nx_error *err);
int nx_matmul_prep_flush(mm_state *s, mm_prep *pr, nx_error *err);

/* Plans the tiling of p (on K range [k0, k0 + Kp), Kp >= 1) leaving
 * `reserve` bytes per partition of SBUF to the caller, and allocates its
 * tiles; s's hooks are the caller's to set afterwards. */
int nx_matmul_setup(mm_state *s, nx_kctx *k, const nx_matmul_params *p, const nx_tensor_ref *A, const nx_tensor_ref *B,
                    const nx_tensor_ref *C, uint64_t k0, uint64_t Kp, uint64_t reserve, nx_error *err);
/* Units (batch, row block) [lo, hi) of s->blocks per batch. */
int nx_matmul_blocks(mm_state *s, uint64_t lo, uint64_t hi, nx_error *err);

#endif
