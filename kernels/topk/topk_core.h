/* What the three top-k leaves share (internal to kernels/topk/): the call
 * checks, the keys, one scanning selection over SBUF-resident candidates
 * (tk_select), a row routine that streams rows of any length from HBM
 * through it (tk_rows) and the DMA helpers. docs/parts/topk.md explains the
 * keys and the tie order.
 *
 * Candidates are (payload, index) pairs: the payload is the input element
 * itself (x's dtype, moved as bits), the index its position in its row
 * (int32). Keys are never carried: every selection computes fp32 keys from
 * the payload on POOL (largest: max(x, -B); smallest: max(-x, -B) and NaN ->
 * -FLT_MAX), with B = FLT_MAX for fp32 and a value between the type's
 * largest finite value and FLT_MAX otherwise, so -inf stays free as the
 * knock-out. A selection of L out of n candidates:
 *   POOL  keys K = key(payload)                        (+ NaN mask, largest = false)
 *   DVE   ceil(L/8) rounds: max8 V <- K; match_replace8 K <- K, -inf, positions
 *         (values and positions through reversed views: match_replace8 takes
 *         its values j = 7..0, so reversed, equal values pair with
 *         ascending positions: the lower position first)
 *   POOL  local_gather of the payload and index at those positions.
 * Among equal keys the lower position wins, so a caller keeps candidates
 * in index order among equal keys (rows in element order, candidate lists
 * in the order of the ranges they came from). */
#ifndef NXSIM_KERNELS_TOPK_TOPK_CORE_H
#define NXSIM_KERNELS_TOPK_TOPK_CORE_H

#include <stdint.h>

#include "topk.h"

/* One program's trace of a top-k leaf. */
typedef struct tk {
    nx_kctx *k;
    const nx_geometry *geo;
    const char *leaf;
    nx_dtype dt;      /* x's dtype: the payload */
    nx_dtype bits;    /* the unsigned type of its size (bit-exact moves) */
    nx_dtype pe_dt;   /* the float type of its size (PE transposes move bits) */
    uint32_t es;
    int largest, is_float;
    uint64_t k_sel;   /* k */
    uint64_t n;       /* row length */
    uint64_t rows;    /* rows of x (all programs) */
    uint64_t row_lo, row_hi; /* this program's rows */
    uint32_t scan_max; /* the largest free size one max8 takes (machine or attribute chunk) */
    uint32_t folds;    /* the folds attribute (0 = the leaf's choice) */
    double clamp;      /* B: keys are >= -B */
    double pad;        /* a payload whose key ties with the lowest real key (fills) */
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

/* Workspace of tk_select: two of each so that the keys of one selection
 * (POOL) overlap the rounds of the previous (DVE). */
typedef struct tk_sel {
    uint32_t P, slots;
    uint64_t kcap, lcap; /* largest n and ceil8(L) */
    nx_tile K[2], mask, V, pos[2], roff[2];
    int have_mask;
    uint32_t turn;
} tk_sel;

/* SBUF bytes per partition tk_sel_alloc takes. */
uint64_t tk_sel_bytes(const tk *t, uint32_t slots, uint64_t kcap, uint64_t lcap);
/* slots 2: consecutive selections overlap (keys of the next on POOL while
 * the DVE scans the last); 1 for a single selection. */
int tk_sel_alloc(tk *t, tk_sel *s, uint32_t slots, uint32_t P, uint64_t kcap, uint64_t L, nx_error *err);
void tk_sel_release(tk *t, tk_sel *s);

/* The L best of n candidates per partition: payload x (columns of a tile of
 * x's dtype) and index idx (int32 columns) or, with idx.t NULL, implicit
 * indices base[p] + add + position (base NULL: add + position). Writes L
 * payloads to out_x and L indices to out_i, best first. L <= n <= kcap. */
int tk_select(tk *t, tk_sel *s, tk_cols x, tk_cols idx, const nx_tile *base, uint64_t add, uint64_t n,
              uint64_t L, tk_cols out_x, tk_cols out_i, nx_error *err);

/* Rows (or folds of rows) streamed from HBM: partition p = r * nf + f holds
 * elements [f*sf, min((f+1)*sf, len)) of row r (row r starts at byte
 * x_off + r*pitch*es). With idx (has_idx) the candidates' indices come from
 * an int32 tensor of the same layout; otherwise they are base[p] (int32
 * [P x 1], NULL = 0) plus the position in the fold. */
typedef struct tk_layout {
    uint64_t x_off, pitch, len;
    uint32_t rows, nf;
    uint64_t sf;
    int has_idx;
    uint64_t i_off;
    const nx_tile *base;
} tk_layout;

/* The best L = min(k, sf) per partition of a layout into out_x / out_i
 * (columns of tiles the caller allocated). Rows longer than one scan are
 * cut into chunks, double-buffered; every chunk's best L go into a
 * candidate buffer in chunk order, reduced to L whenever it fills. */
int tk_rows(tk *t, const tk_layout *lay, uint64_t L, tk_cols out_x, tk_cols out_i, nx_error *err);

/* The scanning method on t's rows (naive_scanning_topk's body; the other
 * leaves fall back to it when a row does not fold). */
int tk_scanning(tk *t, nx_error *err);

/* ---- folds (kernels/topk/topk_folds.c) ---- */

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

/* ---- helpers ---- */

/* The view of columns [off, off + n) of partitions [0, P) as dtype `as`. */
nx_operand tk_view(const tk_cols *c, nx_dtype as, uint32_t P, uint64_t n);
/* An HBM -> SBUF or SBUF -> HBM transfer of P rows cut over several lanes
 * (rows first; a single row by columns), so that large transfers use
 * several DMA engines. */
int tk_dma(tk *t, const nx_operand *dst, const nx_operand *src, nx_error *err);
/* int32 [P x 1] tile: p mod the GpSimd core width (made once). */
int tk_pmod(tk *t, nx_error *err);
/* int32 [P x 1]: (p mod nf) * sf, the first index of fold p of its row
 * (nf a power of two). */
int tk_fold_base(tk *t, uint32_t P, uint32_t nf, uint64_t sf, nx_tile *out, nx_error *err);
/* Stores rows of lists (partition = row) to the values / indices outputs:
 * rows [r0, r0 + P) of the op, the first k columns. */
int tk_store_rows(tk *t, uint64_t r0, uint32_t P, tk_cols lx, tk_cols li, nx_error *err);
/* Stores one list of partition p as row r. */
int tk_store_row(tk *t, uint64_t r, uint32_t p, tk_cols lx, tk_cols li, nx_error *err);

static inline uint64_t tk_ceil(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static inline uint64_t tk_min(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t tk_max(uint64_t a, uint64_t b) { return a > b ? a : b; }

#endif
