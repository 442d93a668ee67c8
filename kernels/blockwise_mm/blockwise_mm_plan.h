/* The blockwise_mm plan (kernels/blockwise_mm/blockwise_mm_plan.c): how the
 * leaf tiles one problem on one machine geometry, exposed for the leaf's
 * phases, tests and docs. */
#ifndef NXSIM_KERNELS_BLOCKWISE_MM_PLAN_H
#define NXSIM_KERNELS_BLOCKWISE_MM_PLAN_H

#include "blockwise_mm_params.h"
#include "isa/error.h"
#include "isa/geometry.h"

/* How the leaf tiles one problem on one machine geometry. Sizes per SBUF
 * partition are in bytes; counts in elements unless named otherwise. */
typedef struct nx_bwmm_plan {
    nx_bwmm_params p;
    uint32_t s;          /* bytes of p.dtype */
    uint32_t tp;         /* tile edge: min(partitions, pe_rows, pe_cols) */
    uint32_t nbanks;     /* PSUM banks */
    uint32_t bank_bytes; /* one PSUM bank per partition */
    uint32_t bank_f32;   /* fp32 elements of a bank, capped by the PE's moving N */
    /* work items: each block's B positions in items of at most bs tokens */
    uint32_t bs;
    uint64_t ns;     /* items per block: ceil(B / bs) */
    uint64_t items;  /* NB * ns */
    uint32_t nt;     /* token tiles (of tp) of a full item */
    uint32_t nh, ni; /* chunks of tp rows of H and of I */
    /* gate/up: groups of g_tiles i-tiles whose accumulators [i-tile, bs]
     * fp32 fill the PSUM banks but two. Joint (gu_split 0): gate and up
     * accumulate together (2 * g_tiles accumulators); the piece of group g
     * and h-chunk c is W[e][c-chunk][0..1][group's columns]. Split: gate
     * over all of H, then up (g_tiles accumulators each); the piece of group
     * g, pass q and h-chunk c is W[e][c-chunk][q][group's columns]. */
    int gu_split;
    uint32_t g_tiles, ngroups;
    uint32_t gw; /* widest group's columns */
    /* down + output: H in nc chunks of c columns (one PSUM bank of the
     * dtype: a 2 KiB row, what DMA needs for full efficiency); the piece of
     * chunk j is Wd[e][all I][chunk j's columns] */
    uint32_t c, nc;
    /* output accumulator replicas: item w adds into replica w mod nrep, so
     * narrow outputs (few chunks) still scatter on several queues; the
     * final pass adds the replicas */
    uint32_t nrep;
    uint32_t pg, pd;    /* pieces per item: ngroups * nh (twice that split), nc */
    uint32_t rg, rd;    /* ring slots (resident: rg = pg, rd = pd) */
    int resident;       /* an expert's weights stay in SBUF across items */
    uint32_t nstage;    /* output staging tiles (of one PSUM bank's bytes) */
    int stage_in_x;     /* ... in the bytes of the x tile, else tiles of their own */
    uint64_t gu_slot;   /* bytes of a gate/up ring slot: 2 * gw * s (split: gw * s) */
    uint64_t dn_slot;   /* bytes of a down ring slot: ni * c * s */
    uint64_t sbuf_used; /* bytes per partition the leaf allocates */
} nx_bwmm_plan;

/* Chooses the plan: items of bs = min(B, bank_f32) tokens (halved until the
 * working set fits), the weights resident when both rings can hold a whole
 * expert, else streamed through rings of at least 16 gate/up pieces and 2
 * down pieces (at least 2 and 1 as a last resort). Errors: a problem the
 * leaf cannot run (sizes beyond the exact fp32 index range, or one token's
 * working set larger than SBUF), naming the sizes. */
int nx_bwmm_plan_make(const nx_bwmm_params *p, const nx_geometry *geo, nx_bwmm_plan *pl, nx_error *err);

#endif
