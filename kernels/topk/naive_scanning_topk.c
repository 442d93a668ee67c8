/* naive_scanning_topk (SupportedTopkMethods.SCANNING): rows on partitions,
 * up to one row per partition per tile; every row is scanned by ceil(k/8)
 * rounds of max8 (the 8 largest keys) and match_replace8 (knock them out
 * with -inf and capture their positions).
 *
 * Follows the public NKI library's naive_scanning_topk / topk_core (AWS
 * nki-library, core/topk: a row per partition, rounds of max8 +
 * nc_match_replace8, sharded over the logical cores). Goes past it:
 *  - ties come out lower index first: match_replace8 takes its 8 values
 *    j = 7 .. 0 (so within a round equal values pair with descending
 *    positions); the kernel hands it the values and receives the positions
 *    through reversed access patterns, so each round pairs them ascending.
 *    The public kernel's last round uses find_index8, which gives every
 *    copy of a repeated value the same first position: here every round,
 *    the last too, uses match_replace8, which gives distinct ones;
 *  - rows longer than max8's limit (16384) are cut into chunks, each
 *    scanned for its best k, the chunks' candidates collected in chunk
 *    order and scanned again whenever their buffer fills (the public kernel
 *    refuses such rows);
 *  - keys: the row is scanned as fp32 keys computed on POOL, with a value
 *    below every key left free for the knock-out, so -inf, +inf and NaN
 *    inputs keep exact indices (docs/parts/topk.md); the values are the
 *    keys mapped back (every type but fp32, whose keys are exact) or the
 *    input elements gathered at the chosen positions (fp32);
 *  - selections of independent tiles interleave their DVE rounds, and POOL
 *    computes the next keys while the DVE scans (topk_select.c);
 *  - largest = false, any row count, any k <= n. */
#include <stdlib.h>

#include "topk_core.h"

typedef struct scan {
    uint32_t Pt;
    nx_tile stage[2];
} scan;

static int scan_done(tk *t, void *ctx, uint32_t tile, tk_cols ox, tk_cols oi, nx_error *err) {
    scan *s = ctx;
    uint64_t r0 = t->row_lo + (uint64_t)tile * s->Pt;
    uint32_t rows = (uint32_t)nx_min_u64(s->Pt, t->row_hi - r0);
    return tk_store(t, r0, 0, 1, rows, ox, oi, &s->stage[tile % 2], err);
}

int tk_scanning(tk *t, nx_error *err) {
    uint64_t R = t->row_hi - t->row_lo;
    if (R == 0) return 0;
    scan s = {.Pt = (uint32_t)nx_min_u64(R, t->geo->partitions)};
    if (t->key_mode)
        for (int i = 0; i < 2; i++) {
            if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_values", t->dt, s.Pt, t->k_sel, &s.stage[i], err) != 0)
                return nx_fail_prefix(err, "%s", t->leaf);
            t->reserved += s.stage[i].bytes + 64;
        }
    uint32_t ntiles;
    tk_layout *tiles = tk_fold_tiles(t, s.Pt, 1, t->n, NULL, &ntiles);
    if (!tiles) return nx_fail(err, "%s: out of memory", t->leaf);
    int rc = tk_rows(t, tiles, ntiles, t->k_sel, scan_done, &s, err);
    free(tiles);
    return rc;
}

int naive_scanning_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tk t;
    if (tk_init(&t, k, "naive_scanning_topk", call, err) != 0) return -1;
    return tk_scanning(&t, err);
}
