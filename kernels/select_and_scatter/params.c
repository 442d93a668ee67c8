/* SelectAndScatter's attributes and the source shape they imply. */
#include <string.h>

#include "params.h"

#include <math.h>

/* One int per dim, each >= min. */
static int read_ints(const nx_value *v, const char *name, uint32_t rank, int64_t min, int64_t *out,
                     nx_error *err) {
    if (v->kind != NX_VAL_LIST) return nx_fail(err, "attribute %s: must be a list of %u ints", name, rank);
    if (v->count != rank)
        return nx_fail(err, "attribute %s: has %u entries, the operand has %u dims", name, v->count, rank);
    for (uint32_t i = 0; i < rank; i++) {
        if (v->items[i].kind != NX_VAL_INT) return nx_fail(err, "attribute %s: must be a list of %u ints", name, rank);
        if (v->items[i].i < min)
            return nx_fail(err, "attribute %s: entry %u is %lld (must be >= %lld)", name, i, (long long)v->items[i].i,
                           (long long)min);
        out[i] = v->items[i].i;
    }
    return 0;
}

/* [[lo, hi], ...] per dim, or the flat [lo0, hi0, lo1, hi1, ...]. */
static int read_padding(const nx_value *v, uint32_t rank, nx_sas_params *p, nx_error *err) {
    static const char *const form = "attribute padding: must be [[lo, hi], ...] with one pair of ints per dim";
    if (v->kind != NX_VAL_LIST) return nx_fail(err, "%s", form);
    int flat = v->count == 2 * rank && rank > 0 && v->items[0].kind == NX_VAL_INT;
    if (!flat && v->count != rank)
        return nx_fail(err, "attribute padding: has %u entries, the operand has %u dims", v->count, rank);
    for (uint32_t i = 0; i < rank; i++) {
        const nx_value *lo, *hi;
        if (flat) {
            lo = &v->items[2 * i];
            hi = &v->items[2 * i + 1];
        } else {
            const nx_value *pair = &v->items[i];
            if (pair->kind != NX_VAL_LIST || pair->count != 2) return nx_fail(err, "%s", form);
            lo = &pair->items[0];
            hi = &pair->items[1];
        }
        if (lo->kind != NX_VAL_INT || hi->kind != NX_VAL_INT) return nx_fail(err, "%s", form);
        p->lo[i] = lo->i;
        p->hi[i] = hi->i;
    }
    return 0;
}

int nx_sas_params_read(const nx_attrs *attrs, uint32_t rank, nx_sas_params *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    if (rank < 1 || rank > NX_SAS_MAX_DIMS)
        return nx_fail(err, "SelectAndScatter: the operand has %u dims (1..%d)", rank, NX_SAS_MAX_DIMS);
    p->rank = rank;
    for (uint32_t i = 0; i < rank; i++) p->stride[i] = 1;
    const nx_value *w = nx_attrs_get_given(attrs, NX_SAS_ATTR_WINDOW), *s = nx_attrs_get_given(attrs, NX_SAS_ATTR_STRIDES);
    const nx_value *pad = nx_attrs_get_given(attrs, NX_SAS_ATTR_PADDING), *init = nx_attrs_get_given(attrs, NX_SAS_ATTR_INIT);
    if (!w) return nx_fail(err, "attribute window_dimensions: missing (one window size per operand dim)");
    if (read_ints(w, NX_SAS_ATTR_WINDOW, rank, 1, p->window, err) != 0) return -1;
    if (s && read_ints(s, NX_SAS_ATTR_STRIDES, rank, 1, p->stride, err) != 0) return -1;
    if (pad && read_padding(pad, rank, p, err) != 0) return -1;
    if (init) {
        if (init->kind == NX_VAL_INT) p->init = (double)init->i;
        else if (init->kind == NX_VAL_FLOAT) p->init = init->f;
        else return nx_fail(err, "attribute init_value: must be a number");
    }
    return 0;
}

/* The largest finite magnitude of a float dtype (docs/parts/dtypes.md). */
static double max_finite(nx_dtype dt) {
    switch (dt) {
    case NX_DT_FP32: return 0x1.fffffep127;
    case NX_DT_BF16: return 0x1.fep127;
    case NX_DT_FP16: return 65504.0;
    case NX_DT_FP8_E4M3: return 448.0;
    case NX_DT_FP8_E5M2: return 57344.0;
    default: return INFINITY;
    }
}

int nx_sas_init_check(const nx_sas_params *p, nx_dtype dt, nx_error *err) {
    double max = max_finite(dt);
    if (!(fabs(p->init) <= max))
        return nx_fail(err, "attribute init_value: %g is outside %s's finite range (+-%g)", p->init, nx_dtype_name(dt),
                       max);
    return 0;
}

int nx_sas_source_shape(const nx_sas_params *p, const uint64_t *operand, uint64_t *source, nx_error *err) {
    for (uint32_t i = 0; i < p->rank; i++) {
        int64_t padded = (int64_t)operand[i] + p->lo[i] + p->hi[i];
        if (padded < p->window[i])
            return nx_fail(err, "dim %u: the window of %lld does not fit the padded operand (%llu + %lld + %lld = %lld)",
                           i, (long long)p->window[i], (unsigned long long)operand[i], (long long)p->lo[i],
                           (long long)p->hi[i], (long long)padded);
        source[i] = (uint64_t)((padded - p->window[i]) / p->stride[i] + 1);
    }
    return 0;
}
