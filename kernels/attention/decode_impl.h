/* attention_decode's internals (kernels/attention/decode*.c): the plan, the
 * tiles a core keeps and the cache pieces (copy-through, the new entries'
 * writes, the paged gathers). docs/parts/attention-decode.md explains them. */
#ifndef NXSIM_KERNELS_ATTENTION_DECODE_IMPL_H
#define NXSIM_KERNELS_ATTENTION_DECODE_IMPL_H

#include "decode.h"
#include "kernels/norms/rows.h"

#define DEC_BUFS 12             /* cache tiles in flight: loads issued 11 steps ahead (a transfer's ~1.3 us fixed phase, the five-stage pipeline's depth, a paged gather's rows on POOL) */
#define DEC_OUTS 4              /* output rows in flight: a store is issued DEC_STORE_LAG steps after its item */
#define DEC_STORE_LAG 5u
#define DEC_ISETS (DEC_BUFS + 1) /* per-item operand sets in flight */
#define DEC_NEG_INIT (-1e30)    /* the running max before any score (no sink) */
/* DMA lanes (lane l: engine l mod 16, queue l / 16 on trn2): K tiles on
 * queue 0, stores and the item loads (q, k_new, v_new, sinks, the block
 * table row) on queue 1 (nx_rows' store group: one store an item, so an
 * item load never waits behind the tiles issued ahead of it, as it did on
 * queue 0), V tiles on queue 2, the cache copy on queue 3, so no tile load
 * or store waits in a FIFO behind a 0.5 MiB copy piece; the block-id
 * probes (slow: 2 bytes a partition) on two store lanes of their own. */
#define DEC_LANES NX_DECODE_LANES
#define DEC_V_LANE 32u
#define DEC_COPY_LANE 48u
#define DEC_PROBES 2u            /* probe sets in flight */
#define DEC_PROBE_LAG 9u         /* steps from a probe's id loads to its check (dec_probe_blocks) */
#define DEC_SETS 5               /* running statistics and O_acc sets (by item): lanes keep an item's
                                  * until its merge, DEC_MERGE_STAGES iterations after its end */
#define DEC_MERGE_STAGES 6u      /* the lanes' merge of an item, one stage an iteration (dec_lane_merge) */
#define DEC_MERGES 3             /* merge piece sets (PSUM and SBUF) */
#define DEC_MQ 8                 /* merges in flight (their queue) */
#define DEC_WRITE_LEAD DEC_BUFS /* five stages: the new entries' scatters in the iteration that issues the last tile load */
#define DEC_LANE_Q 32u           /* lanes: a lane group's first partition is a multiple of this (a PE
                                  * result of up to 32 partitions starts at one) */

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
    uint64_t ps_kt2;           /* lanes, a bank to spare: odd steps' K^T (0: one K^T buffer) */
    uint64_t ps_bt, ps_bt2;    /* paged: the table rows' transpose, their spread (dec_load_blocks) */
    uint32_t s_bufs;           /* score buffers: 2 lets stage A run a step ahead, 3 the five stages */
    uint32_t lanes;            /* 0, or 32 lg: the five stages with the scores of chunk group g
                                * in partitions 32 g .. 32 g + R - 1 (decode_lanes.c) */
    uint32_t lg, cg;           /* lanes: chunk groups, chunks a group (c = lg cg) */
    uint32_t cn;               /* lanes, contiguous: the last tile's chunks when fewer than c (a multiple
                                * of lg) hold its positions, else 0 (dec_tile_chunks) */
    uint32_t nsets;            /* statistics / O_acc sets in use (2, or DEC_SETS with lanes) */
    uint32_t nm;               /* lanes: merge sets (PSUM pieces) */
    uint64_t ps_fin, ps_m, fin_b, m_b; /* lanes: the merge's PSUM banks and the bytes of a set in each */
} dec_plan;

typedef struct dec_item {
    uint64_t b, g, hc, h0; /* h0: first q head */
} dec_item;

/* Step q of this core: item lo + q / (T + 1), j = q % (T + 1) (0: the new
 * block, else cache tile j - 1), its buffers. */
typedef struct dec_step {
    dec_item it;
    uint32_t set, ip, buf, ps, sidx;
    uint32_t np; /* cache tile: its partitions (the last tile of a row may hold fewer) */
    uint32_t cc, cg; /* cache tile: its chunks (dec_tile_chunks), chunks a lane group */
    uint64_t j, soff;
} dec_step;

/* Lanes: an item whose merge is pending (dec_lane_merge). */
typedef struct dec_merge {
    dec_item it;
    uint32_t sidx, mcol, mset; /* its statistics / O_acc set, the column of its running max, its merge set */
    uint64_t q_end;            /* the iteration it ended in */
} dec_merge;

/* What one core keeps for the whole trace. */
typedef struct dec_core {
    nx_kctx *k;
    nx_rows r;
    const nx_kernel_call *call;
    dec_plan pl;
    nx_tile psum;                 /* the whole PSUM, carved by pl.ps_* */
    nx_tile lf;                   /* [Pt, B] fp32 lengths in every partition */
    nx_tile posmap;               /* [Pt, c] fp32: position of (p, e) in its tile */
    nx_tile posmap_n;             /* pl.cn: [Pt, cn] the same for the last tile (p cn + e) */
    nx_tile ucol;                 /* paged: [Pt, 1] sub-chunk index */
    nx_tile tpat;                 /* [Pt, R] fp32: row r's token t */
    nx_tile newmask;              /* [s, R] the new block's 0/1 mask */
    nx_tile ones;                 /* [Pt, 1] of the dtype */
    nx_tile kt[DEC_BUFS], vt[DEC_BUFS];   /* [Pt, c D] cache tiles */
    nx_tile rix[DEC_ISETS];       /* paged: [Pt, T] int32 gather rows of every tile of the item */
    nx_tile rmath, pgrid;         /* paged: [Pt, 3 T] fp32 their arithmetic, [Pt, T] p c + tau Ft */
    nx_tile prb_id[DEC_PROBES], prb_f[DEC_PROBES], prb_sink[DEC_PROBES]; /* paged: block-id probes */
    uint32_t nprobes;
    nx_tile qt[DEC_ISETS], kn[DEC_ISETS], vn[DEC_ISETS], sk[DEC_ISETS], bt[DEC_ISETS]; /* per item */
    nx_tile btf[DEC_ISETS];       /* paged: [Pt, T] fp32 block ids */
    nx_tile btx, sel;             /* paged: the table row as [nb, T], the one-hot spread */
    uint64_t bt_a, bt_b, bt_c;    /* paged: the next items (from lo) whose table row to load, to
                                   * transpose, to spread (with their gather rows) */
    nx_tile qT[2], knT[2];        /* [Dp, nd x R], [Dp, nd x s], by item parity */
    nx_tile ktT_s[2];             /* [Dp, nd x Ft] by step parity */
    nx_tile pb[2], ptb_s[2];      /* P [R, Ft], P^T [Pt, c R] (lanes: [Pt, c 32]) by step parity */
    nx_tile stat_s[DEC_SETS];     /* [R or lanes, 11] fp32 running statistics by item */
    nx_tile oacc_s[DEC_SETS], osb[DEC_OUTS]; /* [R or lanes, D] fp32 by item, [R, D] dtype */
    nx_tile lsel, ones_r;         /* lanes: [lanes, R] fp32 lsel[e R + r][r] = 1, [1, R] fp32 ones */
    nx_tile zq[2][2][4];          /* lanes: [Dp, lanes] Q^T in group g's columns, zeros elsewhere,
                                   * by item parity and D piece */
    nx_tile mrow[DEC_MERGES], dT[DEC_MERGES], wT[DEC_MERGES], W[DEC_MERGES], lcol[DEC_MERGES]; /* merge pieces */
    dec_merge mq[DEC_MQ];         /* merges in flight */
    uint64_t nmq, nmdone;         /* merges queued, finished */
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
    uint64_t probe_row, probe_due; /* paged: the row whose ids are loading (UINT64_MAX: none), the
                                    * step whose loads check it */
} dec_core;

dec_item dec_item_at(const dec_plan *pl, uint64_t i);
/* The chunks (positions a partition) of cache tile tau: c, or pl->cn for
 * the last tile of a contiguous row whose few positions would leave c
 * chunks of nearly empty partitions (every chunk costs the PE its
 * minimum: K^T, scores, P V, l). */
uint32_t dec_tile_chunks(const dec_plan *pl, uint64_t tau);

/* Lanes (decode_lanes.c): the scores of a cache tile, chunk e into lanes
 * e R .. e R + R - 1; P^T times the mask of one (an iteration before) and
 * its P V; the constants and pieces of the merge; merge stage `stage`
 * (1..DEC_MERGE_STAGES) of m. */
int dec_lane_scores(dec_core *c, const dec_step *st, nx_error *err);
int dec_lane_pt(dec_core *c, const dec_step *st, nx_error *err);
int dec_lane_pv(dec_core *c, const dec_step *st, nx_error *err);
int dec_lane_alloc(dec_core *c, nx_error *err);
int dec_lane_constants(dec_core *c, nx_error *err);
int dec_lane_merge(dec_core *c, const dec_merge *m, uint32_t stage, nx_error *err);
/* The mask of step st's tile (position < L_b, the window) into c->m01 /
 * c->mw, on POOL; and its view repeated over the R rows ([w, ne x R]). */
int dec_tile_mask(dec_core *c, const dec_step *st, nx_error *err);
/* Every pending output store, now. */
int dec_store_all(dec_core *c, nx_error *err);
nx_operand dec_mask_view(const dec_core *c, uint32_t w, uint32_t ne, int is_new);

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
 * num_blocks, so an id outside the cache faults before anything is kept.
 * Part 0 loads the ids (one per partition: a DMA of 4-byte rows, ~12 us),
 * part 1, DEC_PROBE_LAG steps later, masks them (POOL) and gathers: POOL's
 * in-order stream, the tiles' gather rows in it, never waits for that load
 * (the first DEC_PROBES chunks of a row; a longer row's others load in
 * part 1). */
int dec_probe_blocks(dec_core *c, uint64_t b, int part, nx_error *err);
/* Paged: item it's table row into c->bt[set] (part 0), transposed into
 * c->btx (part 1), its block ids in the tile layout from there into
 * c->btf[set] (part 2). */
int dec_load_blocks(dec_core *c, const dec_item *it, uint32_t set, int part, nx_error *err);
/* Paged: the gather rows of every tile of item it into c->rix[set] (POOL,
 * one pass over the item's T tiles, not one per tile), from c->btf[set]. */
int dec_tile_rows(dec_core *c, const dec_item *it, uint32_t set, nx_error *err);
/* Cache tile tau of item it into buffer buf (contiguous: plain loads;
 * paged: the gathers, chunks at or past L_b skipped). */
int dec_load_tile(dec_core *c, const dec_item *it, uint32_t set, uint64_t tau, uint32_t buf, nx_error *err);

/* Views */
nx_operand dec_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t e0, uint64_t n);
nx_operand dec_psum(const dec_core *c, nx_dtype as, uint64_t byte_off, uint32_t np, uint64_t n);

#endif
