/* Reference top-k (ONNX TopK, docs/parts/topk.md): for every line along
 * `axis`, the k preferred elements in order, the values copied as bytes
 * from the input and the indices as int32. Written from the stated order,
 * not from the kernels' keys: each element gets a (class, score) pair and
 * the line is ordered by class, then score, then index (qsort with the
 * index as the last comparison, so the result is deterministic). With
 * k * 8 < n a bounded insertion keeps only the best k seen so far. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

typedef struct rank {
    int cls;      /* higher is preferred */
    double score; /* higher is preferred; -0 == +0 */
    uint64_t idx;
} rank;

/* The order of docs/parts/topk.md: NaN is larger than +inf; largest=0
 * prefers small values (NaN last). fp32 has no key below -inf for the
 * kernels' knock-out, so there -inf ranks as -FLT_MAX (largest) and
 * FLT_MAX, +inf and NaN rank alike (smallest); narrower types are exact. */
static rank rank_of(double x, nx_dtype dt, int largest, uint64_t idx) {
    rank r = {1, 0, idx};
    int fp32 = dt == NX_DT_FP32;
    if (largest) {
        if (isnan(x)) r.cls = 2;
        else r.score = (fp32 && x == -INFINITY) ? -FLT_MAX : x;
    } else if (isnan(x)) {
        if (fp32) r.score = -FLT_MAX;
        else r.cls = 0;
    } else {
        r.score = (fp32 && x >= FLT_MAX) ? -FLT_MAX : -x;
    }
    return r;
}

/* <0 when a comes first. */
static int before(const rank *a, const rank *b) {
    if (a->cls != b->cls) return a->cls > b->cls ? -1 : 1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_rank(const void *a, const void *b) { return before(a, b); }

/* The k best of line[0..n) into best[0..k), in order. */
static void select_line(rank *line, uint64_t n, uint64_t k, rank *best) {
    if (k * 8 >= n) {
        qsort(line, n, sizeof *line, cmp_rank);
        memcpy(best, line, k * sizeof *best);
        return;
    }
    uint64_t have = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (have == k && before(&line[i], &best[k - 1]) >= 0) continue;
        uint64_t lo = 0, hi = have; /* first position that line[i] comes before */
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if (before(&line[i], &best[mid]) < 0) hi = mid;
            else lo = mid + 1;
        }
        uint64_t keep = have < k ? have : k - 1;
        memmove(best + lo + 1, best + lo, (keep - lo) * sizeof *best);
        best[lo] = line[i];
        if (have < k) have++;
    }
}

int nx_ref_topk(const void *in, nx_dtype dtype, uint32_t ndims, const uint64_t *shape, int32_t axis,
                uint64_t k, int largest, void *values, int32_t *indices, nx_error *err) {
    size_t es = nx_dtype_size(dtype);
    if (es == 0) return nx_fail(err, "topk reference: invalid dtype code %d", (int)dtype);
    if (ndims < 1 || ndims > NX_REF_MAX_DIMS)
        return nx_fail(err, "topk reference: %u dims (1..%d)", ndims, NX_REF_MAX_DIMS);
    int64_t a = axis < 0 ? axis + (int64_t)ndims : axis;
    if (a < 0 || a >= (int64_t)ndims)
        return nx_fail(err, "topk reference: axis %d is outside the %u dims", axis, ndims);
    uint64_t n = shape[a], outer = 1, inner = 1;
    for (int64_t d = 0; d < a; d++) outer *= shape[d];
    for (uint32_t d = (uint32_t)a + 1; d < ndims; d++) inner *= shape[d];
    if (k < 1 || k > n)
        return nx_fail(err, "topk reference: k = %llu is outside 1..%llu (the axis length)",
                       (unsigned long long)k, (unsigned long long)n);
    if (n > INT32_MAX)
        return nx_fail(err, "topk reference: an axis of %llu elements has indices beyond int32",
                       (unsigned long long)n);
    rank *line = malloc(n * sizeof *line), *best = malloc(k * sizeof *best);
    if (!line || !best) {
        free(line);
        free(best);
        return nx_fail(err, "topk reference: out of memory for a line of %llu elements", (unsigned long long)n);
    }
    const unsigned char *src = in;
    unsigned char *dst = values;
    for (uint64_t o = 0; o < outer; o++) {
        for (uint64_t i = 0; i < inner; i++) {
            uint64_t base = o * n * inner + i;
            for (uint64_t e = 0; e < n; e++)
                line[e] = rank_of(nx_dtype_load(dtype, src + (base + e * inner) * es), dtype, largest, e);
            select_line(line, n, k, best);
            uint64_t obase = o * k * inner + i;
            for (uint64_t j = 0; j < k; j++) {
                memcpy(dst + (obase + j * inner) * es, src + (base + best[j].idx * inner) * es, es);
                indices[obase + j * inner] = (int32_t)best[j].idx;
            }
        }
    }
    free(line);
    free(best);
    return 0;
}
