/* The mlp composite's internal state (kernels/mlp/mlp.c, the plans;
 * kernels/mlp/mlp_prep.c, the token prep). Internal to the family. */
#ifndef NXSIM_KERNELS_MLP_MLP_IMPL_H
#define NXSIM_KERNELS_MLP_MLP_IMPL_H

#include "mlp.h"
#include "mlp_decode.h"

#include "kernels/norms/rows.h"

#define MLP_TP_GROUP 4 /* transposes per PSUM bank */

typedef struct mlp_state {
    nx_kctx *k;
    nx_rows r;
    nx_mlp_params p;
    uint64_t es;
    uint32_t P, TI, Tl;  /* contraction rows, I-tile width, tokens per tile */
    uint64_t bank_elems;
    uint64_t nk, ni;     /* K-chunks of H, I-tiles */
    uint64_t x, wg, wu, wd, gamma_hbm, r_hbm, out, xo; /* HBM bytes */
    uint64_t ring_bytes;
    /* the prep: x rows, r rows (or the squares), h rows, gamma, stats */
    nx_tile xr, wr, hr, gamma, small, tp;
    nx_tile xT[2], aT[2];
    uint64_t trs;
    /* decode: this core's I-tiles and the exchange tensor */
    uint64_t t_lo, t_hi, xoff;
} mlp_state;

/* Offsets, tile geometry (fails when H and I leave SBUF too little room). */
int mlp_state_init(mlp_state *s, const nx_kernel_call *call, nx_error *err);
/* Allocates the prep tiles, `bufs` x^T tiles of Tl tokens, the transposes'
 * PSUM bank, and sets ring_bytes from what SBUF has left (the a^T tiles,
 * `bufs` of them, counted). */
int mlp_prep_alloc(mlp_state *s, uint32_t bufs, nx_error *err);
/* Tokens [r0, r0 + n) (n <= Tl): x' (rows [slo, shi) of them stored by this
 * core), h, h^T into xT (K-chunk c at elements c * Tl). */
int mlp_prep(mlp_state *s, uint64_t r0, uint32_t n, uint64_t slo, uint64_t shi, const nx_tile *xT, nx_error *err);

#endif
