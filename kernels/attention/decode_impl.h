/* attention_decode's internals (kernels/attention/decode*.c): the plan, the
 * tiles a core keeps and the cache pieces (copy-through, the new entries'
 * writes, the paged gathers). docs/parts/attention-decode.md explains them. */
#ifndef NXSIM_KERNELS_ATTENTION_DECODE_IMPL_H
#define NXSIM_KERNELS_ATTENTION_DECODE_IMPL_H

#include "decode.h"
#include "kernels/norms/rows.h"

#define DEC_BUFS 10             /* cache tiles in flight: loads issued 9 steps ahead (a transfer's ~1.3 us fixed phase, the five-stage pipeline's depth) */
#define DEC_OUTS 4              /* output rows in flight: a store is issued DEC_STORE_LAG steps after its item */
#define DEC_STORE_LAG 5u
#define DEC_ISETS (DEC_BUFS + 1) /* per-item operand sets in flight */
#define DEC_NEG_INIT (-1e30)    /* the running max before any score (no sink) */
/* DMA lanes (lane l: engine l mod 16, queue l / 16 on trn2): K tiles and
 * the item loads on queue 0, stores on queue 1 (nx_rows' groups), V tiles
 * on queue 2, the cache copy on queue 3, so no tile load or store waits in
 * a FIFO behind a 0.5 MiB copy piece; the block-id probes (slow: 2 bytes a
 * partition) on two store lanes of their own. */
#define DEC_LANES NX_DECODE_LANES
#define DEC_V_LANE 32u
#define DEC_COPY_LANE 48u
#define DEC_PROBES 2u            /* probe sets in flight */

typedef struct dec_plan {
    nx_decode_params p;
    uint32_t es;
    uint32_t Pt, c;            /* a cache tile: Pt partitions of c positions */
    uint32_t cpb, nb;          /* paged: chunks per block, blocks per tile */
    uint64_t Ft, T;            /* positions per tile, tiles per row */
    uint32_t gh, R, nhc;       /* q heads per item, its rows (gh x s), head chunks per kv head */
    uint32_t nd, Dp;           /* D pieces of Dp rows (the PE's contraction) */
    uint64_t items;            /* B x Hkv x nhc */
    /* PSUM arena offsets (bytes per partition) */
    uint64_t ps_kt, ps_s, ps_s_step, ps_pt, ps_o, ps_l;
    uint32_t s_bufs;           /* score buffers: 2 lets stage A run a step ahead */
} dec_plan;

typedef struct dec_item {
    uint64_t b, g, hc, h0; /* h0: first q head */
} dec_item;

/* What one core keeps for the whole trace. */
typedef struct dec_core {
    nx_kctx *k;
    nx_rows r;
    const nx_kernel_call *call;
    dec_plan pl;
    nx_tile psum;                 /* the whole PSUM, carved by pl.ps_* */
    nx_tile lf;                   /* [Pt, B] fp32 lengths in every partition */
    nx_tile posmap;               /* [Pt, c] fp32: position of (p, e) in its tile */
    nx_tile pchunk, ucol;         /* paged: [Pt, 1] chunk start, sub-chunk index */
    nx_tile tpat;                 /* [Pt, R] fp32: row r's token t */
    nx_tile newmask;              /* [s, R] the new block's 0/1 mask */
    nx_tile ones;                 /* [Pt, 1] of the dtype */
    nx_tile kt[DEC_BUFS], vt[DEC_BUFS];   /* [Pt, c D] cache tiles */
    nx_tile idx[DEC_BUFS], vtmp[DEC_BUFS]; /* paged gather indices */
    nx_tile prb_id[DEC_PROBES], prb_f[DEC_PROBES], prb_sink[DEC_PROBES]; /* paged: block-id probes */
    uint32_t nprobes;
    nx_tile qt[DEC_ISETS], kn[DEC_ISETS], vn[DEC_ISETS], sk[DEC_ISETS], bt[DEC_ISETS]; /* per item */
    nx_tile btf[DEC_ISETS];       /* paged: [Pt, T] fp32 block ids */
    nx_tile btrf, btx, sel;       /* paged: the table row as [T, nb], as [nb, T], the one-hot spread */
    nx_tile qT[2], knT[2];        /* [Dp, nd x R], [Dp, nd x s], by item parity */
    nx_tile ktT_s[2];             /* [Dp, nd x Ft] by step parity */
    nx_tile pb[2], ptb_s[2];      /* P [R, Ft], P^T [Pt, c R] by step parity */
    nx_tile stat_s[2];            /* [R, 8] fp32 running statistics by item parity */
    nx_tile oacc_s[2], osb[DEC_OUTS]; /* [R, D] fp32 by item parity, [R, D] dtype */
    nx_tile ktT, ptb, stat, oacc; /* the sets of the step being emitted (dec_use) */
    uint64_t nends, nstores;      /* items ended, stores issued */
    dec_item due[DEC_OUTS];       /* the ended items whose stores are pending */
    uint64_t due_q[DEC_OUTS];     /* the step each ended at */
    nx_tile thr, posabs, m01, mw; /* per tile masks */
    nx_tile woff;                 /* [hg s, chunks x B] int32 rows of the new entries */
    nx_tile wgrp;                 /* one chunk: [G Hkv s, groups] the same rows, G batch rows a column */
    uint32_t wg;                  /* G (0: scatter per batch row from woff) */
    uint32_t whg, wch;            /* kv heads per write chunk, chunks */
    uint64_t lo, hi;              /* this core's items */
    uint64_t probed;              /* paged: the table row probed last */
} dec_core;

dec_item dec_item_at(const dec_plan *pl, uint64_t i);

/* Copies this core's share of k_cache and v_cache to the results
 * (HBM -> HBM, long runs on the store lanes). */
int dec_copy_caches(dec_core *c, nx_error *err);
/* Program 0: the rows (of D elements) of the results where every new
 * entry goes, into c->woff (and the probes that fault on a bad length). */
int dec_write_rows(dec_core *c, nx_error *err);
/* Program 0: those rows regrouped (one chunk of kv heads only) so one
 * scatter per tensor writes G batch rows: scatters into one tensor run one
 * after another (each may write anywhere in it), so fewer is faster. */
int dec_group_rows(dec_core *c, nx_error *err);
/* Program 0: the scatters of k_new / v_new into the results at those rows. */
int dec_write_new(dec_core *c, nx_error *err);
/* Paged: the probe of table row b (once per row and core): every used
 * block id (block j with j N < L_b) gathered from k_cache with the bound
 * num_blocks, so an id outside the cache faults before anything is kept. */
int dec_probe_blocks(dec_core *c, uint64_t b, nx_error *err);
/* Paged: item it's block ids into c->btf[set]. */
int dec_load_blocks(dec_core *c, const dec_item *it, uint32_t set, nx_error *err);
/* Cache tile tau of item it into buffer buf (contiguous: plain loads;
 * paged: the gathers, chunks at or past L_b skipped). */
int dec_load_tile(dec_core *c, const dec_item *it, uint32_t set, uint64_t tau, uint32_t buf, nx_error *err);

/* Views */
nx_operand dec_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t e0, uint64_t n);
nx_operand dec_psum(const dec_core *c, nx_dtype as, uint64_t byte_off, uint32_t np, uint64_t n);

#endif
