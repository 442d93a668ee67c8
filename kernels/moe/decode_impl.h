/* moe_decode's internals (kernels/moe/decode*.c): the plan, the tiles a
 * core keeps, and the pieces: the run-time routing (decode_route.c), one
 * work item of an expert pass (decode_expert.c), the entry point with the
 * cross-core sum (decode.c). docs/parts/moe-decode.md explains them. */
#ifndef NXSIM_KERNELS_MOE_DECODE_IMPL_H
#define NXSIM_KERNELS_MOE_DECODE_IMPL_H

#include "moe_decode.h"

#define MD_RING_MAX 32  /* weight tiles in flight per ring (gate/up, down), SBUF allowing */
#define MD_GROUP 8      /* passes whose items interleave (see md_item) */
#define MD_OFFSETS (2 * MD_GROUP) /* per-pass row-offset sets: this group's and the next's */
#define MD_NIT 8        /* i-tiles per work item: 8 x 128 columns = 2 KiB rows of bf16 */
/* lane groups (lane l = DMA engine l mod 16, its queue l / 16): the three
 * weight streams, then the routing's small loads, then the stores */
#define MD_LANE_GATE 0u
#define MD_LANE_UP 16u
#define MD_LANE_DOWN 32u
#define MD_LANE_ROUTE 48u
#define MD_LANE_STORE 64u

typedef struct md_plan {
    nx_moe_decode_params p;
    uint32_t es, P;        /* dtype bytes, partitions */
    uint32_t S;            /* expert passes */
    int runtime;           /* selected: the pass's expert is run-time data (row offsets) */
    int slot_list;         /* selected with T k < E: pass s = slot s of the flat [T k], deduplicated */
    uint32_t nhc;          /* 128-row chunks of H */
    uint64_t ilo, ihi;     /* this core's columns of I */
    uint32_t nic, nblk;    /* its i-tiles, its work items per pass (MD_NIT i-tiles each, the last the rest) */
    uint32_t nit;          /* most i-tiles of an item (MD_NIT, or 2 MD_NIT - 1: the last absorbs a remainder) */
    uint32_t dcols, ndc;   /* down tiles: columns of H per tile (2 KiB rows), tiles across H */
    uint32_t stride;       /* PSUM bytes of one [i, T] fp32 accumulator (a power of two) */
    uint32_t gu_sets;      /* gate/up accumulator sets (2: the next item's matmuls overlap the act) */
    uint64_t ps_gu, ps_d;  /* PSUM byte offsets: gate/up sets, down banks */
    uint32_t d_banks;      /* PSUM banks of one down tile ([T, 512] fp32 each) */
    uint32_t ring;         /* tiles per weight ring */
} md_plan;

typedef struct md_core {
    nx_kctx *k;
    const nx_kernel_call *call;
    md_plan pl;
    nx_tile psum;                  /* the whole PSUM, carved by pl.ps_* */
    nx_tile xt;                    /* [P, nhc T] x^T, chunk c at columns c T */
    nx_tile coef;                  /* [T, S] fp32: pass s's weight of token t */
    nx_tile eidh, eidi;            /* runtime: [P, S] fp32 expert x H, expert x I (-H, -I: none) */
    nx_tile iog, iod;              /* runtime: [P, nhc], [P, nic] fp32 c P + p (down: + ilo) */
    nx_tile offg[MD_OFFSETS], offd[MD_OFFSETS]; /* runtime: int32 row offsets of a pass */
    nx_tile gu[MD_RING_MAX], dn[MD_RING_MAX];
    nx_tile ht[2];                 /* [P, nit T] of the dtype: h^T of an item, by parity */
    nx_tile sg;                    /* [P, nit T] fp32 act(gate) */
    nx_tile acc;                   /* [T, H] fp32 */
    nx_tile eid;                   /* runtime: [P, S] fp32 expert of pass s, -1 none */
    uint64_t ngu, nd, ndg;         /* loads issued per ring, down tiles done */
} md_core;

/* The routing: loads indices and affinities, faults on an index outside
 * [-1, E) (the probe), fills c->coef and (runtime) c->eid, c->eidh,
 * c->eidi, c->iog, c->iod. */
int md_route(md_core *c, nx_error *err);
/* Item w: its pass s and work item b (columns [ilo + b 1024, ...) of I).
 * Items run group by group of MD_GROUP passes, block b of every pass of
 * the group before block b + 1: an unused expert's pass (no bytes, but
 * its fixed PE work) then sits between used passes' items, and the rings
 * keep the used ones' loads running while the PE does it. */
void md_item(const md_plan *pl, uint64_t w, uint32_t *s, uint32_t *b);

/* Row offsets of pass s into set s % MD_OFFSETS (runtime only; POOL). */
int md_offsets(md_core *c, uint32_t s, nx_error *err);
/* Item w = s nblk + b: its gate/up loads and matmuls into gate/up set
 * w % gu_sets; md_act: h^T = act(g) u into ht[w % 2]; md_down: the down
 * tiles, matmuls and the coef-weighted accumulation into acc. */
int md_gate_up(md_core *c, uint64_t w, nx_error *err);
int md_act(md_core *c, uint64_t w, nx_error *err);
int md_down(md_core *c, uint64_t w, nx_error *err);

nx_operand md_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t e0, uint64_t n);
nx_operand md_psum(const md_core *c, uint64_t byte_off, uint32_t np, uint64_t n);

#endif
