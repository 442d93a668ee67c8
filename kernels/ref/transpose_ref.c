/* Reference transpose: walks the output in row-major order with an
 * odometer over its indices and reads each element from the input through
 * the input strides (no dim merging, no tiling: the leaves do those). */
#include <string.h>

#include "ref.h"

int nx_ref_transpose(const void *in, nx_dtype dtype, uint32_t ndims, const uint64_t *shape,
                     const int64_t *perm, void *out, nx_error *err) {
    size_t size = nx_dtype_size(dtype);
    if (size == 0) return nx_fail(err, "transpose reference: invalid dtype code %d", (int)dtype);
    if (ndims < 1 || ndims > NX_REF_MAX_DIMS)
        return nx_fail(err, "transpose reference: %u dims (1..%d)", ndims, NX_REF_MAX_DIMS);
    uint32_t p[NX_REF_MAX_DIMS];
    int used[NX_REF_MAX_DIMS] = {0};
    for (uint32_t k = 0; k < ndims; k++) {
        int64_t v = perm ? perm[k] : (int64_t)(ndims - 1 - k);
        if (v < 0) v += ndims;
        if (v < 0 || v >= (int64_t)ndims || used[v])
            return nx_fail(err, "transpose reference: permutation entry %u (%lld) is out of range or repeated",
                           k, (long long)(perm ? perm[k] : v));
        used[v] = 1;
        p[k] = (uint32_t)v;
    }
    /* input strides in elements */
    uint64_t in_stride[NX_REF_MAX_DIMS], total = 1;
    for (uint32_t d = ndims; d-- > 0;) {
        in_stride[d] = total;
        total *= shape[d];
    }
    if (total == 0) return 0;
    /* output dim k walks input dim p[k] */
    uint64_t out_shape[NX_REF_MAX_DIMS], step[NX_REF_MAX_DIMS], idx[NX_REF_MAX_DIMS] = {0};
    for (uint32_t k = 0; k < ndims; k++) {
        out_shape[k] = shape[p[k]];
        step[k] = in_stride[p[k]];
    }
    const unsigned char *src = in;
    unsigned char *dst = out;
    uint64_t from = 0;
    for (uint64_t o = 0; o < total; o++) {
        memcpy(dst + o * size, src + from * size, size);
        for (uint32_t k = ndims; k-- > 0;) {
            from += step[k];
            if (++idx[k] < out_shape[k]) break;
            from -= step[k] * out_shape[k];
            idx[k] = 0;
        }
    }
    return 0;
}
