/* Reference of SelectAndScatter, written from XLA's definition: for each
 * source index in row-major order, scan its window in row-major order over
 * the padded operand, skipping padding; the first valid element is the
 * selection, and each later valid element e replaces it unless
 * select(selected, e) = (selected >= e) holds; then
 * out[selected] = out[selected] + source[index] (in fp32, stored in the
 * dtype). out starts as init_value everywhere. Any rank, any dtype. */
#include <string.h>

#include "ref.h"

/* Row-major odometer step over counts[0..n); 0 when it wraps around. */
static int next_index(uint64_t *idx, const uint64_t *counts, uint32_t n) {
    for (uint32_t d = n; d-- > 0;) {
        if (++idx[d] < counts[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

int nx_ref_select_and_scatter(const void *operand, const void *source, nx_dtype dtype, const uint64_t *shape,
                              const nx_sas_params *p, void *out, nx_error *err) {
    size_t es = nx_dtype_size(dtype);
    if (es == 0) return nx_fail(err, "select_and_scatter reference: invalid dtype code %d", (int)dtype);
    uint32_t rank = p->rank;
    uint64_t src_shape[NX_SAS_MAX_DIMS], win[NX_SAS_MAX_DIMS], strides[NX_SAS_MAX_DIMS];
    if (nx_sas_source_shape(p, shape, src_shape, err) != 0) return -1;
    uint64_t total = 1;
    for (uint32_t d = rank; d-- > 0;) {
        strides[d] = total;
        total *= shape[d];
        win[d] = (uint64_t)p->window[d];
    }
    const uint8_t *x = operand, *s = source;
    uint8_t *o = out;
    for (uint64_t i = 0; i < total; i++) nx_dtype_store(dtype, o + i * es, p->init);

    uint64_t si[NX_SAS_MAX_DIMS] = {0}, wi[NX_SAS_MAX_DIMS];
    uint64_t src_flat = 0;
    do {
        int have = 0;
        uint64_t sel = 0;
        double sel_v = 0;
        memset(wi, 0, sizeof wi);
        do {
            uint64_t flat = 0;
            int valid = 1;
            for (uint32_t d = 0; d < rank && valid; d++) {
                int64_t pos = (int64_t)(si[d] * (uint64_t)p->stride[d] + wi[d]) - p->lo[d];
                valid = pos >= 0 && pos < (int64_t)shape[d];
                flat += (uint64_t)pos * strides[d];
            }
            if (!valid) continue;
            double v = nx_dtype_load(dtype, x + flat * es);
            if (!have || !(sel_v >= v)) {
                sel = flat;
                sel_v = v;
                have = 1;
            }
        } while (next_index(wi, win, rank));
        if (have) {
            float acc = (float)nx_dtype_load(dtype, o + sel * es) + (float)nx_dtype_load(dtype, s + src_flat * es);
            nx_dtype_store(dtype, o + sel * es, (double)acc);
        }
        src_flat++;
    } while (next_index(si, src_shape, rank));
    return 0;
}
