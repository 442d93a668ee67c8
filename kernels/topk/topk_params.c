/* The top-k attributes (kernels/topk/topk.h): one reader for the leaves,
 * the composite and the registry's rules. */
#include <string.h>

#include "topk.h"

int nx_topk_dtype_ok(nx_dtype dt) {
    switch (dt) {
    case NX_DT_FP32: case NX_DT_BF16: case NX_DT_FP16: case NX_DT_FP8_E4M3: case NX_DT_FP8_E5M2:
    case NX_DT_INT8: case NX_DT_UINT8: case NX_DT_INT16: case NX_DT_UINT16:
        return 1;
    default:
        return 0;
    }
}

int nx_topk_read_attrs(const nx_attrs *attrs, const char *x_name, nx_dtype dtype, uint32_t ndims,
                       const uint64_t *shape, nx_topk_attrs *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    out->largest = 1;
    strcpy(out->method, "AUTO");
    if (!nx_topk_dtype_ok(dtype))
        return nx_fail(err, "operand 0 (%s): dtype %s is not a top-k type (fp32, bf16, fp16, fp8_e4m3, "
                            "fp8_e5m2, int8, uint8, int16, uint16: the keys are fp32)",
                       x_name, nx_dtype_name(dtype));
    if (ndims < 1) return nx_fail(err, "operand 0 (%s): a top-k needs at least one dim", x_name);
    int64_t v = 0; /* set by nx_attrs_get_int when have; initialised for GCC 12 -O3's maybe-uninitialized */
    int have = 0;
    if (nx_attrs_get_int(attrs, "axis", &v, &have, err) != 0) return -1;
    if (!have) v = -1;
    if (v < -(int64_t)ndims || v >= (int64_t)ndims)
        return nx_fail(err, "attribute axis: %lld is outside -%u..%u for operand 0 (%s) of %u dims", (long long)v,
                       ndims, ndims - 1, x_name, ndims);
    out->axis = (int32_t)(v < 0 ? v + ndims : v);
    uint64_t n = shape[out->axis];
    if (nx_attrs_get_int(attrs, "k", &v, &have, err) != 0) return -1;
    if (!have) return nx_fail(err, "attribute k: required (the number of elements to select, e.g. -a k=8)");
    if (v < 1) return nx_fail(err, "attribute k: %lld must be at least 1", (long long)v);
    if ((uint64_t)v > n)
        return nx_fail(err, "attribute k: %lld is larger than the axis length %llu of operand 0 (%s)", (long long)v,
                       (unsigned long long)n, x_name);
    out->k = (uint64_t)v;
    if (n > (1u << 24))
        return nx_fail(err, "operand 0 (%s): an axis of %llu elements is longer than 2^24 (the top-k kernels "
                            "compute indices in fp32)",
                       x_name, (unsigned long long)n);
    const nx_value *lg = nx_attrs_get(attrs, "largest");
    if (lg) {
        if (lg->kind == NX_VAL_BOOL || (lg->kind == NX_VAL_INT && (lg->i == 0 || lg->i == 1)))
            out->largest = lg->i != 0;
        else
            return nx_fail(err, "attribute largest: must be true/false or 0/1");
    }
    const nx_value *m = nx_attrs_get(attrs, "method");
    if (m) {
        if (m->kind != NX_VAL_STRING || strlen(m->s) >= sizeof out->method)
            return nx_fail(err, "attribute method: must be \"AUTO\", \"SCANNING\", \"CASCADED\" or \"ROTATIONAL\"");
        strcpy(out->method, m->s);
    }
    if (nx_attrs_get_int(attrs, "folds", &v, &have, err) != 0) return -1;
    if (have) {
        if (v < 1 || v > 4096 || (v & (v - 1)) != 0)
            return nx_fail(err, "attribute folds: %lld must be a power of two in 1..4096", (long long)v);
        out->folds = (uint32_t)v;
    }
    if (nx_attrs_get_int(attrs, "chunk", &v, &have, err) != 0) return -1;
    if (have) {
        if (v < 8 || v > (1 << 20)) return nx_fail(err, "attribute chunk: %lld must be in 8..1048576", (long long)v);
        out->chunk = (uint32_t)v;
    }
    const nx_value *s = nx_attrs_get(attrs, "sorted");
    if (s && !(s->kind == NX_VAL_BOOL || (s->kind == NX_VAL_INT && (s->i == 0 || s->i == 1))))
        return nx_fail(err, "attribute sorted: must be true/false or 0/1 (the output is always sorted)");
    return 0;
}

void nx_topk_result_shape(uint32_t ndims, const uint64_t *shape, const nx_topk_attrs *a, uint64_t *out) {
    for (uint32_t d = 0; d < ndims; d++) out[d] = shape[d];
    out[a->axis] = a->k;
}
