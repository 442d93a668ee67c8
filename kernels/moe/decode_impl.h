/* moe_decode's internals (kernels/moe/decode*.c): the plan, the tiles a
 * core keeps, and the pieces: the run-time routing (decode_route.c), the
 * expert passes on mlp's decode piece (decode_piece.c), the entry point
 * with the cross-core sum (decode.c). docs/parts/moe-decode.md explains
 * them. */
#ifndef NXSIM_KERNELS_MOE_DECODE_IMPL_H
#define NXSIM_KERNELS_MOE_DECODE_IMPL_H

#include "moe_decode.h"

#define MD_NIT 8        /* i-tiles per work item: 8 x 128 columns = 2 KiB rows of bf16 */
#define MD_GROUP 8      /* passes whose items interleave (see md_item) */
#define MD_OFFSETS (2 * MD_GROUP) /* per-pass row-offset sets: this group's and the next's */
/* lane groups of the routing's small loads (lane l = DMA engine l mod 16,
 * its queue l / 16), after the piece's weight loads (queue 0 of every
 * engine) and stores; then our stores */
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
    uint64_t ps_route;     /* PSUM byte offset of the routing's matmul and the x transposes */
} md_plan;

typedef struct md_core {
    nx_kctx *k;
    const nx_kernel_call *call;
    md_plan pl;
    nx_tile psum;                  /* the whole PSUM until the passes (the piece takes it then) */
    nx_tile xt;                    /* [P, nhc T] x^T, chunk c at columns c T */
    nx_tile coef;                  /* [T, S] fp32: pass s's weight of token t */
    nx_tile eidh, eidi;            /* runtime: [P, S] fp32 expert x H, expert x I (-H, -I: none) */
    nx_tile iog, iod;              /* runtime: [P, nhc], [P, nic] fp32 c P + p (down: + ilo) */
    nx_tile offg[MD_OFFSETS], offd[MD_OFFSETS]; /* runtime: int32 row offsets of a pass */
    nx_tile acc;                   /* [T, H] fp32 */
    nx_tile eid;                   /* runtime: [P, S] fp32 expert of pass s, -1 none */
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
/* The expert passes on mlp's decode piece (kernels/moe/decode_piece.c):
 * every item's gate/up and down, acc += coef[:, s] y. */
int md_passes(md_core *c, nx_error *err);

nx_operand md_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t e0, uint64_t n);
nx_operand md_psum(const md_core *c, uint64_t byte_off, uint32_t np, uint64_t n);

#endif
