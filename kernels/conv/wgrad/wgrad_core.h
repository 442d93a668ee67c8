/* What the three weight-gradient leaves share (kernels/conv/wgrad/wgrad.h): the
 * problem in one canonical form, the call checks, the tiling plan and the
 * emitter of the replicated PE contraction ("rep_nhwc_Pcinh").
 *
 * Canonical form: img (CI, N, H, W) contiguous, filt (CI, CO, HF, WF)
 * contiguous (#8 hands in a transposed copy), out (K0, K1, N, CO) for the
 * dense kind or (K0, K1, 1, C) for the depthwise kind (N = CO = C, channel
 * c of the image pairs with channel c of the filter only).
 *
 * The contraction runs over (ci, y, x). Its rows on the PE are (r, ci): R
 * replica blocks of the image's ci features, block r holding the image rows
 * that filter rows [r*B, r*B + B) of the current row block meet, so one
 * matmul contracts R*CI rows at once. Per step (filter row b, column x) the
 * stationary holds the filter [(r, ci), (gx, gy, co)]: Gx*Gy column groups,
 * group (gx, gy) the filter at (b + gy, x + gx), each paired with the same
 * moving image window, i.e. with the output shifted by (gy*ry, gx*rx)
 * (ry = rdy/sy, rx = rdx/sx); the moving tile is the image window
 * [(r, ci), (k0e, k1e, n)] of an accumulator's extended outputs, at most one
 * PSUM bank (512 fp32). A fold after the contraction adds the groups with
 * their shifts and transposes to the output's layout (matmuls against
 * identity columns); the depthwise kind first keeps the diagonal n == c
 * (DVE select against a mask) and reduces n. */
#ifndef NXSIM_KERNELS_CONV_WGRAD_CORE_H
#define NXSIM_KERNELS_CONV_WGRAD_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/conv/conv_params.h"
#include "kernels/kernel.h"

typedef enum nx_wg_kind {
    NX_WG_DENSE = 0,     /* #5: every (n, co) pair */
    NX_WG_DEPTHWISE = 1, /* #7/#8: n == co only */
} nx_wg_kind;

typedef struct nx_wg_problem {
    const char *leaf;            /* the registry key, for messages */
    nx_wg_kind kind;
    nx_dtype dt;                 /* img, filt, out */
    uint64_t es;                 /* element bytes */
    uint64_t CI, N, CO;          /* img features, img batch, filt out-features */
    int64_t H, W, HF, WF, K0, K1;
    int64_t sy, sx, rdy, rdx, ply, plx;
    uint64_t img, filt, out;     /* HBM byte offsets of the canonical tensors */
    const char *img_name, *filt_name;
    nx_conv_params params;       /* as read, for messages */
} nx_wg_problem;

/* Checks a call under `labels` ("fb01_io01->01bf" or "fb01_io10->01bf"):
 * 2 inputs and 1 output of 4 dims; one float dtype for all three; the conv
 * attributes (any conv name, out_shape included); the result shape equal
 * to the output's; lhs_dilation and feature_group_count 1; batch_group_count
 * 1 (dense) or N = CO (depthwise); strides that fit 32-bit access patterns.
 * Fills *p with the canonical form (p->filt is operand 1's offset: #8
 * replaces it). Messages name the leaf, the operand or attribute and the
 * rule. */
int nx_wg_prepare(const char *leaf, nx_wg_kind kind, const char *labels, const nx_kernel_call *call,
                  nx_wg_problem *p, nx_error *err);

/* Buffer sets of the filter and image tiles (double buffering). */
#define NX_WG_BUFFERS 2

/* The tiling (nx_wg_plan_make), from the machine description: its geometry
 * sizes the tiles; its DMA and PE figures rank the candidates. */
typedef struct nx_wg_plan {
    uint32_t P;          /* contraction rows: min(pe_rows, partitions) */
    uint32_t Mmax;       /* stationary columns / PSUM partitions */
    uint32_t Fmax;       /* moving elements per matmul: one PSUM bank of fp32 */
    uint32_t cit, nct;   /* ci per tile, ci tiles */
    uint32_t R;          /* replica blocks (> 1 only with one ci tile) */
    uint32_t B;          /* filter rows per replica block (a multiple of Gy) */
    uint32_t nhb;        /* row blocks: ceil(HF / (R B)) */
    uint32_t WFb, nwb;   /* filter columns per block, column blocks */
    uint32_t Gx, Gy;     /* column groups of the stationary */
    int64_t rx, ry;      /* their output shifts */
    uint32_t cot, ncot;  /* co (dense) or channels (depthwise) per tile; tiles */
    int64_t ck0, ck1, cn; /* an accumulator's outputs: k0, k1, n (depthwise: cn = cot) */
    uint32_t na0, na1, nan; /* accumulators per co tile along k0, k1, n */
    uint32_t A;          /* accumulators of a co tile per pass */
    uint32_t T;          /* co tiles per pass (share each image block; depthwise: 1) */
    uint32_t npass;      /* passes: ceil(ncot / T) x ceil(na0 na1 nan / A) */
    uint32_t nps;        /* PSUM accumulator tiles (T A, or 2 T A to overlap passes) */
    uint64_t grad_elems; /* per partition, per buffer: cot x B x WFb */
    uint64_t img_elems;  /* per partition, per buffer */
    uint64_t fold_elems; /* per partition: the largest accumulator F */
    double est;          /* the plan's estimated cost (DMA byte equivalents) */
} nx_wg_plan;

/* One PSUM accumulator: outputs k0 in [k0a, k0a + nk0), k1 in [k1a, k1a +
 * nk1), n in [n0, n0 + nn) (depthwise: the channel tile) of co/channel tile
 * [co0, co0 + cot); its moving tile covers the extended outputs k0e in
 * [k0a, k0a + K0c), k1e in [k1a, k1a + K1c) (K0c = nk0 + (Gy - 1) ry, K1c =
 * nk1 + (Gx - 1) rx), laid out (k0e, k1e, n) on F = K0c K1c nn elements of
 * M = Gx Gy cot partitions (gx, gy, co). */
typedef struct nx_wg_acc {
    int64_t k0a, nk0, k1a, nk1, n0, nn, K0c, K1c;
    uint64_t co0;
    uint32_t cot, M, F;
} nx_wg_acc;

/* A contraction pass: accumulators [a0, a0 + na) of each co tile [t0, t0 +
 * nt) share one sweep over the contraction; its image window is batch [n0,
 * n0 + nn) and the extended outputs [k0lo, k0hi) x [k1lo, k1hi). */
typedef struct nx_wg_pass {
    uint32_t t0, nt, a0, na;
    int64_t n0, nn, k0lo, k0hi, k1lo, k1hi;
} nx_wg_pass;

/* The filter rows of row block hb: from hf0, Bh per replica block (pl->B;
 * a last block with fewer than R B rows spreads them over all R replica
 * blocks in fewer rows each, in whole steps of Gy, so its steps are as few
 * as its rows allow and every PE row it can fill is used), Rl replica
 * blocks live, the last of them with vb_last live rows (the rest of its Bh
 * rows are dead: zero filter rows). */
typedef struct nx_wg_rows {
    int64_t hf0, Bh, vb_last;
    uint32_t Rl;
} nx_wg_rows;
void nx_wg_block_rows(const nx_wg_problem *p, const nx_wg_plan *pl, uint32_t hb, nx_wg_rows *out);

/* Accumulator a of co tile `tile`; pass q (0 <= q < pl->npass). */
void nx_wg_acc_get(const nx_wg_problem *p, const nx_wg_plan *pl, uint32_t tile, uint32_t a, nx_wg_acc *out);
void nx_wg_pass_get(const nx_wg_problem *p, const nx_wg_plan *pl, uint32_t q, nx_wg_pass *out);

/* Image rows a replica block holds for B filter rows and an extended k0
 * span; image columns [*c0, *c0 + *nc) (clipped to the image; *nc 0 if
 * none) that filter columns [wf0, wf0 + nwf) and the extended k1 span
 * [k1lo, k1hi) read. */
int64_t nx_wg_rows_band(const nx_wg_problem *p, int64_t B, int64_t k0span);
void nx_wg_img_cols(const nx_wg_problem *p, int64_t k1lo, int64_t k1hi, int64_t wf0, int64_t nwf, int64_t *c0,
                    int64_t *nc);

/* Constraints on the plan search (0 = free), for tests that pin a tiling:
 * the column groups, the co/channel tile, accumulators per co tile and co
 * tiles per pass, the largest row block and column block, the SBUF bytes
 * per partition the input buffers may use, the replica blocks. */
typedef struct nx_wg_limits {
    uint32_t gx, gy, cot, A, T, b_max, wfb_max;
    uint64_t input_bytes;
    uint32_t R;
} nx_wg_limits;

/* Chooses the plan with the lowest estimated time among the column groups,
 * co tilings, accumulator groupings and block heights that fit SBUF and
 * PSUM (and `lim`, which may be NULL). Fails (-1) only when even one filter
 * row and one output per accumulator do not fit SBUF, naming the
 * operand. */
int nx_wg_plan_make_machine(const nx_machine *m, const nx_wg_problem *p, const nx_wg_limits *lim,
                            nx_wg_plan *pl, nx_error *err);
/* The same for a caller that holds only a geometry: the preset it names,
 * else the default preset (sim/machine.h nx_machine_of_geometry; defined by
 * registry/of_geometry.c, transitional for the weight-gradient bench). */
int nx_wg_plan_make(const nx_geometry *geo, const nx_wg_problem *p, const nx_wg_limits *lim, nx_wg_plan *pl,
                    nx_error *err);

/* One line naming the plan's choices, e.g. "ci 16x1 R 8 B 7 (2 blocks) WF
 * 112 groups 2x2 co 32x2 acc 7x7x3 (1 per pass, 2 passes)", for benches and
 * tests. */
void nx_wg_plan_describe(const nx_wg_plan *pl, char *buf, size_t len);

/* Emits the whole weight gradient of p under pl into k. */
int nx_wg_emit(nx_kctx *k, const nx_wg_problem *p, const nx_wg_plan *pl, nx_error *err);

/* nx_wg_plan_make then nx_wg_emit. */
int nx_wg_run(nx_kctx *k, const nx_wg_problem *p, nx_error *err);

#endif
