/* What the three top-k leaves share (internal to kernels/topk/): the call
 * checks, the keys, the scanning selection and its scheduler
 * (topk_select.c), a row routine that streams rows of any length from HBM
 * through it (topk_rows.c), the fold choice (topk_folds.c), the DMA and
 * store helpers (topk_core.c). docs/parts/topk.md explains the keys and
 * the tie order.
 *
 * Keys: a selection ranks fp32 keys computed on POOL from the input
 * elements (largest: max(x, -B); smallest: max(-x, -B) with NaN -> -FLT_MAX),
 * B = FLT_MAX for fp32, else a value between the type's largest finite
 * value and FLT_MAX, so -inf stays free as the knock-out. A selection of L
 * of n candidates:
 *   POOL  keys K = key(x)                               (stage 1 only, see below)
 *   DVE   ceil(L/8) rounds: max8 V <- K; match_replace8 K <- K, -inf, positions
 *         (values and positions through reversed views: match_replace8 takes
 *         its values j = 7..0, so reversed, equal values pair with
 *         ascending positions: the lower position first)
 *   POOL  the indices at those positions (base + position, or a gather).
 * Among equal keys the lower position wins, so a caller keeps candidates in
 * index order among equal keys (rows in element order, candidate lists in
 * the order of the ranges they came from).
 *
 * Candidates (what lists between stages hold) are (key, index) pairs when
 * the keys are exact (every type but fp32, the KEY MODE): the keys max8
 * returns are the candidates, later selections rank them in place, and the
 * values are the keys mapped back at the end (tk_store_*). For fp32 (the
 * PAYLOAD MODE) the candidates are (input element, index) pairs: every
 * selection recomputes keys and gathers the elements (local_gather) at the
 * chosen positions, so -inf and -FLT_MAX (which share a key) come back as
 * themselves. t->cand_dt is fp32 or x's dtype accordingly. */
#ifndef NXSIM_KERNELS_TOPK_TOPK_CORE_H
#define NXSIM_KERNELS_TOPK_TOPK_CORE_H

#include <stdint.h>

#include "topk.h"
#include "isa/intmath.h"

/* One program's trace of a top-k leaf. */
typedef struct tk {
    nx_kctx *k;
    const nx_geometry *geo;
    const char *leaf;
    nx_dtype dt;      /* x's dtype */
    nx_dtype bits;    /* the unsigned type of its size (bit-exact moves) */
    uint32_t es;
    int largest, is_float;
    int key_mode;     /* candidates are fp32 keys (every type but fp32) */
    nx_dtype cand_dt; /* fp32 (key mode) or x's dtype */
    uint32_t cand_es;
    uint64_t k_sel;   /* k */
    uint64_t n;       /* row length */
    uint64_t rows;    /* rows of x (all programs) */
    uint64_t row_lo, row_hi; /* this program's rows */
    uint32_t scan_max; /* the largest free size one max8 takes (machine or attribute chunk) */
    uint32_t folds;    /* the folds attribute (0 = the leaf's choice) */
    double clamp;      /* B: keys are >= -B */
    double pad;        /* an input value whose key ties with the lowest real key (fills) */
    uint64_t x_off, v_off, i_off; /* HBM offsets of x, values, indices */
    nx_tile pmod;      /* int32 [partitions x 1]: p mod the GpSimd core width */
    int have_pmod;
    uint32_t lane;     /* next DMA lane */
    uint64_t reserved; /* SBUF bytes per partition the leaf holds outside tk_rows */
} tk;

/* Checks the leaf call (x, values, indices; attributes; axis = last) and
 * fills t for this program. */
int tk_init(tk *t, struct nx_kctx *k, const char *leaf, const nx_kernel_call *call, nx_error *err);

/* Columns [off, off + ...) of partitions [0, P) of a tile. */
typedef struct tk_cols {
    const nx_tile *t;
    uint64_t off;
} tk_cols;

/* ---- selections (topk_select.c) ---- */

/* One selection: the L best of n candidates per partition. */
typedef struct tk_job {
    tk_cols x;          /* input elements (raw = 1) or candidates (t->cand_dt) */
    int raw;            /* 1: input elements of x's dtype (keys are computed) */
    tk_cols idx;        /* candidate indices (int32), or idx.t NULL: implicit */
    const nx_tile *base; /* implicit indices: base[p] (int32 [P x 1], NULL = 0) */
    uint64_t add;       /*   + add + position */
    uint64_t n, L;
    uint32_t P;         /* partitions (0: the scheduler's) */
    tk_cols out_x, out_i; /* L candidates; in key mode out_x needs ceil8(L) columns */
    /* set by the scheduler */
    uint32_t slot;
    void (*on_post)(void *ctx, int arg); /* called once the job's last instruction is emitted */
    void *ctx;
    int arg;
} tk_job;

/* Workspace and scheduler of selections. Jobs are emitted in groups of up
 * to G whose DVE rounds interleave (independent selections hide each
 * other's instruction latency), and the keys of a group are emitted before
 * the gathers of the group before it, so POOL works while the DVE scans.
 * A job that reads what earlier jobs write is added with depends = 1 (the
 * earlier jobs are completed in program order first). */
typedef struct tk_sched {
    tk *t;
    uint32_t P, G, S;          /* partitions, group size, slots (2G) */
    uint64_t kcap, lcap;       /* largest n (keys computed) and ceil8(L) */
    nx_tile K[8], mask[8], V[8], pos[8], roff[8];
    int have_K, have_mask, have_V;
    tk_job form[4], pend[4];
    uint32_t nform, npend, next_slot;
} tk_sched;

/* SBUF bytes per partition of a scheduler with S slots, kcap, lcap. */
uint64_t tk_sched_bytes(const tk *t, uint32_t S, uint64_t kcap, uint64_t lcap, int need_K);
/* S: 2G slots (a group's keys overlap the rounds of the group before) or G
 * (less space; groups run one after the other). */
int tk_sched_init(tk *t, tk_sched *s, uint32_t P, uint32_t G, uint32_t S, uint64_t kcap, uint64_t L, int need_K,
                  nx_error *err);
int tk_sched_add(tk_sched *s, const tk_job *job, int depends, nx_error *err);
/* The candidates a job leaves: min(ceil8(L), n) (every round's 8 are
 * genuine, so all are kept). */
uint64_t tk_job_width(const tk_job *j);
/* Completes every queued job. */
int tk_sched_flush(tk_sched *s, nx_error *err);
void tk_sched_release(tk_sched *s);

/* ---- rows from HBM (topk_rows.c) ---- */

/* Rows (or folds of rows) streamed from HBM: partition p = r * nf + f holds
 * elements [f*sf, min((f+1)*sf, len)) of row r (row r starts at byte
 * x_off + r*pitch*es of the source's dtype). raw: the source holds input
 * elements (x's dtype) and the indices are base[p] (int32 [P x 1], NULL =
 * 0) plus the position in the fold; else it holds candidates (cand_dt)
 * with their int32 indices at i_off in the same layout. */
typedef struct tk_layout {
    uint64_t x_off, pitch, len;
    uint32_t rows, nf;
    uint64_t sf;
    int raw;
    uint64_t i_off;
    const nx_tile *base;
} tk_layout;

/* Called per tile when its lists (partition = the tile's partition p,
 * columns [0, L) of out_x / out_i) are complete. */
typedef int (*tk_tile_done)(tk *t, void *ctx, uint32_t tile, tk_cols out_x, tk_cols out_i, nx_error *err);

/* The best L = min(k, sf) per partition of every tile: tile i's layout is
 * `tiles[i]`. Tiles and the chunks of rows longer than one scan stream
 * through double-buffered loads and the selection scheduler; a row's chunks'
 * best L go into a candidate buffer in chunk order, reduced to L whenever
 * it fills. done() runs per tile, in order. */
int tk_rows(tk *t, const tk_layout *tiles, uint32_t ntiles, uint64_t L, tk_tile_done done, void *ctx,
            nx_error *err);

/* The scanning method on t's rows (naive_scanning_topk's body; the other
 * leaves fall back to it when a row does not fold). */
int tk_scanning(tk *t, nx_error *err);

/* ---- folds (topk_folds.c) ---- */

/* 1 if nf folds of ceil(n/nf) elements leave no fold empty and fit the
 * partitions. */
int tk_fold_ok(const tk *t, uint32_t nf);
/* DVE cycles of one selection of L out of n (the public cost model's
 * ceil(L/8) * 2 * (n + 144)). */
uint64_t tk_scan_cycles(uint64_t L, uint64_t n);
/* The fold count: the folds attribute (checked), else the power of two with
 * the lowest cost(t, nf, rows) estimate (1 = no folding). */
int tk_choose_folds(const tk *t, uint64_t (*cost)(const tk *, uint32_t nf, uint64_t rows), uint32_t *nf_out,
                    nx_error *err);
/* The leaves' cost estimates (DVE cycles of one program's rows). */
uint64_t tk_cascaded_cost(const tk *t, uint32_t nf, uint64_t rows);
uint64_t tk_rotational_cost(const tk *t, uint32_t nf, uint64_t rows);

/* ---- helpers (topk_core.c) ---- */

/* The view of columns [off, off + n) of partitions [0, P) as dtype `as`. */
nx_operand tk_view(const tk_cols *c, nx_dtype as, uint32_t P, uint64_t n);
/* An HBM <-> SBUF transfer of P rows cut over several lanes (rows first; a
 * single row by columns), so that large transfers use several DMA engines. */
int tk_dma(tk *t, const nx_operand *dst, const nx_operand *src, nx_error *err);
/* int32 [P x 1] tile: p mod the GpSimd core width (made once). */
int tk_pmod(tk *t, nx_error *err);
/* int32 [P x 1]: (p mod nf) * sf, the first index of fold p of its row
 * (nf a power of two). */
int tk_fold_base(tk *t, uint32_t P, uint32_t nf, uint64_t sf, nx_tile *out, nx_error *err);
/* Stores lists to the values / indices outputs: partition p0 + j as row
 * r0 + j for j < count, every `step` partitions (step 1: one transfer),
 * the first k columns; in key mode the keys are mapped back to values (in
 * the staging tile `stage` of x's dtype, at least [p0 + step*count x k]). */
int tk_store(tk *t, uint64_t r0, uint32_t p0, uint32_t step, uint32_t count, tk_cols lx, tk_cols li,
             const nx_tile *stage, nx_error *err);
/* The layouts of this program's rows of x in tiles of rows_per_tile rows,
 * each row folded over nf partitions of sf elements (nf 1: a row per
 * partition), indices base[p] + position (malloc'd, *ntiles entries; NULL on
 * out-of-memory). */
tk_layout *tk_fold_tiles(const tk *t, uint32_t rows_per_tile, uint32_t nf, uint64_t sf, const nx_tile *base,
                         uint32_t *ntiles);
/* An SBUF tile of `cols` columns for candidate lists (key mode: + 8 slack
 * columns, which max8 writes in the last round). */
int tk_alloc_list(tk *t, const char *name, nx_dtype dt, uint32_t P, uint64_t cols, nx_tile *out, nx_error *err);

static inline uint64_t tk_tile_bytes(uint64_t elems, uint64_t es) { return (elems * es + 63) / 64 * 64; }

#endif
