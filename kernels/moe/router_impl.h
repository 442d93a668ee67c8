/* The router kernel's state (internal to kernels/moe/): the plan and tiles
 * of kernels/moe/router_topk.c (loads, transposes, the router matmul) and
 * kernels/moe/router_select.c (selection, affinities, stores). */
#ifndef NXSIM_KERNELS_MOE_ROUTER_IMPL_H
#define NXSIM_KERNELS_MOE_ROUTER_IMPL_H

#include "router.h"

#include "kernels/norms/rows.h"

#define RT_WBUFS 6     /* streamed w chunks in flight */
/* PSUM banks the x transposes rotate over, at most: all the banks but
 * the two logits accumulators on trn1/trn2 */
#define RT_TP_BANKS 6
/* transposes per bank (one copy each group): copies of 4 let the first
 * matmuls start sooner and the last copy end sooner than 16 or 8, at no
 * cost in throughput (a copy's dependency overhead is latency, not
 * occupancy, docs/parts/model.md); over 4 banks they left the PE waiting
 * for a bank, over 6 not (nxsim-bench router, T 32 to 128) */
#define RT_TP_MAX 4
#define RT_SPLIT_MIN_E 64 /* experts from which the mask and affinities split over DVE and POOL */

typedef struct rt_state {
    nx_kctx *k;
    nx_rows r;
    const nx_router_params *p;
    const nx_tensor_ref *x, *w, *b, *lg, *af, *ix;
    uint64_t es;       /* x's element size */
    uint32_t KP;       /* partitions of a K tile: h = p R + j for main tile j */
    uint64_t R;        /* main K tiles */
    uint32_t tail;     /* rows of the last K tile (h = R KP + p), 0: none */
    uint64_t nk;       /* K tiles */
    uint32_t TT;       /* tokens per tile */
    uint32_t Epad;     /* max(E, 8): max8 scans at least 8 */
    uint64_t cj;       /* main K tiles per w chunk */
    int resident;      /* w loaded once; else streamed per token tile */
    uint32_t wbufs;
    uint32_t wlane;    /* first lane of the w loads */
    uint32_t aff_lane; /* first lane of the affinity stores */
    nx_tile wt, wtail, wc[RT_WBUFS];
    nx_tile xt[2], xT[2], tp[RT_TP_BANKS], acc[2], ones, brow;
    nx_tile keys[2], lsb[2], ex[2], mk[2], aff[2], vals[2], vact[2], idx[2], st[2];
    uint64_t trs;      /* transpose groups so far (bank rotation) */
    uint32_t ntp;      /* transpose banks: RT_TP_BANKS, or what PSUM leaves */
    uint64_t wq, wused, wtotal; /* streamed chunk loads: issued, consumed, total */
    uint64_t lo, hi;   /* this program's tokens */
} rt_state;

/* A token tile's transposes: tw tokens in xt[b] / xT[b], K tiles below
 * next_j done. */
typedef struct rt_prep {
    uint32_t tw, b;
    uint64_t next_j;
} rt_prep;

static inline uint32_t rt_clip32(uint64_t v, uint32_t cap) { return (uint32_t)(v < cap ? v : cap); }

/* The plan of this program (s->p, s->x, s->w, s->r, s->es set): fails
 * with the operand and what does not fit. */
int nx_router_plan(rt_state *s, nx_error *err);
/* Allocates every tile of the plan (router_plan.c). */
int nx_router_alloc(rt_state *s, nx_error *err);
/* Once per program: the bias row and its ones, the -inf logit padding. */
int nx_router_setup(rt_state *s, nx_error *err);

/* Selection, affinities and the three stores of token tile `tile` (tokens
 * [t0, t0 + tw), its logits in acc[b]). */
int nx_router_select(rt_state *s, uint64_t t0, uint32_t tw, uint32_t b, nx_error *err);
/* Allocates the selection's tiles (two sets). */
int nx_router_select_alloc(rt_state *s, nx_error *err);
/* SBUF bytes per partition of the selection's tiles. */
uint64_t nx_router_select_bytes(const rt_state *s);

#endif
