/* How the folding leaves (CASCADED, ROTATIONAL) cut a row (topk_core.h). */
#include "topk_core.h"

int tk_fold_ok(const tk *t, uint32_t nf) {
    uint64_t sf = nx_cdiv_u64(t->n, nf);
    return nf >= 1 && nf <= t->geo->partitions && (uint64_t)(nf - 1) * sf < t->n;
}

uint64_t tk_scan_cycles(uint64_t L, uint64_t n) {
    /* ceil(L/8) rounds of two streamed passes, plus the per-instruction
     * overhead of the public cost model (144 DVE cycles) */
    return nx_cdiv_u64(L, 8) * 2 * (nx_max_u64(n, 8) + 144);
}

int tk_choose_folds(const tk *t, uint64_t (*cost)(const tk *, uint32_t nf, uint64_t rows), uint32_t *nf_out,
                    nx_error *err) {
    uint64_t R = t->row_hi - t->row_lo;
    uint32_t P = t->geo->partitions;
    if (t->folds) {
        if (!tk_fold_ok(t, t->folds))
            return nx_fail(err, "%s: attribute folds: %u folds of a row of %llu elements on %u partitions leave "
                                "a fold empty or need more partitions",
                           t->leaf, t->folds, (unsigned long long)t->n, P);
        *nf_out = t->folds;
        return 0;
    }
    uint32_t best = 1;
    uint64_t best_cost = cost(t, 1, R);
    for (uint32_t nf = 2; nf <= P && tk_fold_ok(t, nf); nf *= 2) {
        uint64_t c = cost(t, nf, R);
        if (c < best_cost) {
            best_cost = c;
            best = nf;
        }
    }
    *nf_out = best;
    return 0;
}

uint32_t nx_topk_folds(int rotational, const nx_geometry *geo, uint64_t rows, uint64_t n, uint64_t k) {
    tk t = {0};
    t.geo = geo;
    t.leaf = rotational ? "rotational_topk" : "cascaded_2_stage_topk";
    t.n = n;
    t.k_sel = k;
    t.row_hi = rows;
    uint32_t nf = 1;
    nx_error e;
    if (rows == 0 || tk_choose_folds(&t, rotational ? tk_rotational_cost : tk_cascaded_cost, &nf, &e) != 0) return 1;
    return nf;
}
