/* The mlp composite's internal state (kernels/mlp/mlp.c, the plans;
 * kernels/mlp/mlp_prep.c, the token prep). Internal to the family. */
#ifndef NXSIM_KERNELS_MLP_MLP_IMPL_H
#define NXSIM_KERNELS_MLP_MLP_IMPL_H

#include "mlp.h"
#include "mlp_decode.h"

#include "kernels/norms/rows.h"

#define MLP_SUB_MAX 4 /* token sub-tiles (of pe_cols rows) per block */

typedef struct mlp_state {
    nx_kctx *k;
    nx_rows r;
    nx_mlp_params p;
    uint64_t es;
    uint32_t P, TI, Tl;  /* contraction rows, I-tile width, tokens per tile */
    uint64_t bank_elems;
    uint64_t nk, ni;     /* K-chunks of H, I-tiles */
    uint64_t x, wg, wu, wd, gamma_hbm, r_hbm, out, xo; /* HBM bytes */
    uint64_t gu_ld;      /* w_gate's and w_up's row pitch, elements (I unless a caller's) */
    uint64_t ring_bytes;
    /* the prep, per token sub-tile: x rows, h rows; shared: r rows (or
     * the squares), gamma, stats; the transposes' PSUM bank (tpp: its own
     * tp, or the piece's bank 0) */
    nx_tile xr[MLP_SUB_MAX], hr[MLP_SUB_MAX], wr, gamma, small, tp;
    const nx_tile *tpp;
    uint32_t nsub;
    nx_tile xT[1], aT[1];
    uint64_t trs;
    /* decode: this core's I-tiles and the exchange tensor */
    uint64_t t_lo, t_hi, xoff;
} mlp_state;

/* Offsets, tile geometry (fails when H and I leave SBUF too little room). */
int mlp_state_init(mlp_state *s, const nx_kernel_call *call, nx_error *err);
/* SBUF bytes per partition the prep, x^T, a^T and the piece's staging take
 * for Tl tokens per block (what the weight ring does not get). */
uint64_t mlp_need(const mlp_state *s, uint32_t Tl);
/* Allocates the prep tiles for Tl tokens (s->Tl), x^T, the transposes'
 * PSUM bank when own_tp, and sets ring_bytes from what SBUF has left. */
int mlp_prep_alloc(mlp_state *s, int own_tp, nx_error *err);
/* Sub-tile u of a block, tokens [r0, r0 + n) (n <= pe_cols): x loaded,
 * x' (its rows in [slo, shi) stored by this core, unless defer_x: then by
 * mlp_prep_store_x later), h rows. */
int mlp_prep_rows(mlp_state *s, uint32_t u, uint64_t r0, uint32_t n, uint64_t slo, uint64_t shi, int defer_x,
                  nx_error *err);
/* The store of x' = x + r (with a residual) of sub-tile u's rows in [slo,
 * shi). DMA transfers are triggered in program order, so a store that
 * waits for VectorE's add holds back every transfer emitted after it:
 * decode emits it after the weight stream's first loads. */
int mlp_prep_store_x(mlp_state *s, uint32_t u, uint64_t r0, uint32_t n, uint64_t slo, uint64_t shi, nx_error *err);
/* Sub-tile u's h rows (n of them) -> x^T at tokens [u * pe_cols, + n)
 * (K-chunk c at elements c * Tl), through the PSUM bank s->tpp. */
int mlp_prep_transpose(mlp_state *s, uint32_t u, uint32_t n, nx_error *err);

#endif
