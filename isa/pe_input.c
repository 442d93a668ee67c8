/* The PE's input conversion (pe_input.h): one run of elements at a time,
 * with the fp32 run copied as is and the fp8 formats through a 256-entry
 * table built once per call. */
#include "pe_input.h"

#include <string.h>

#include "bytes.h"
#include "dtype.h"

/* Converts n elements of dtype dt, `step` bytes apart starting at p. */
static void run_to_f32(nx_dtype dt, const uint8_t *p, int64_t step, uint64_t n, float *out,
                       const float *fp8_table) {
    switch (dt) {
    case NX_DT_FP32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (step == 4) { /* a contiguous run is already fp32 in host order */
            memcpy(out, p, n * 4);
            return;
        }
#endif
        for (uint64_t i = 0; i < n; i++) out[i] = nx_f32_from_bits(nx_load_le32(p + (int64_t)i * step));
        return;
    case NX_DT_BF16:
        for (uint64_t i = 0; i < n; i++) out[i] = nx_bf16_bits_to_f32(nx_load_le16(p + (int64_t)i * step));
        return;
    case NX_DT_FP16:
        for (uint64_t i = 0; i < n; i++) out[i] = nx_fp16_bits_to_f32(nx_load_le16(p + (int64_t)i * step));
        return;
    case NX_DT_FP8_E4M3:
    case NX_DT_FP8_E5M2:
        for (uint64_t i = 0; i < n; i++) out[i] = fp8_table[p[(int64_t)i * step]];
        return;
    default:
        /* not a PE input type: validation rejects it; convert generically */
        for (uint64_t i = 0; i < n; i++) out[i] = (float)nx_dtype_load(dt, p + (int64_t)i * step);
        return;
    }
}

/* Row r (partition r of the view), element e goes to out[r * ld + e]. The
 * free dims are walked outermost first; the innermost one is converted as a
 * run. */
void nx_pe_rows_to_f32(const nx_view *v, uint32_t rows, float *out, uint64_t ld) {
    nx_dtype dt = (nx_dtype)v->dtype;
    float fp8_table[256];
    if (dt == NX_DT_FP8_E4M3 || dt == NX_DT_FP8_E5M2) {
        for (unsigned b = 0; b < 256; b++)
            fp8_table[b] = dt == NX_DT_FP8_E4M3 ? nx_fp8_e4m3_to_f32((uint8_t)b)
                                                : nx_fp8_e5m2_to_f32((uint8_t)b);
    }
    /* pad to 4 dims, outermost first; ndims == 0 is one element */
    int64_t step[NX_MAX_FREE_DIMS];
    uint32_t count[NX_MAX_FREE_DIMS];
    uint32_t pad = NX_MAX_FREE_DIMS - v->ndims;
    for (uint32_t k = 0; k < NX_MAX_FREE_DIMS; k++) {
        step[k] = k < pad ? 0 : v->stride_bytes[k - pad];
        count[k] = k < pad ? 1 : v->count[k - pad];
    }
    for (uint32_t r = 0; r < rows; r++) {
        const uint8_t *row = v->base + (int64_t)r * v->partition_step;
        float *o = out + (uint64_t)r * ld;
        for (uint32_t i0 = 0; i0 < count[0]; i0++)
            for (uint32_t i1 = 0; i1 < count[1]; i1++)
                for (uint32_t i2 = 0; i2 < count[2]; i2++) {
                    const uint8_t *run = row + (int64_t)i0 * step[0] + (int64_t)i1 * step[1] +
                                         (int64_t)i2 * step[2];
                    run_to_f32(dt, run, step[3], count[3], o, fp8_table);
                    o += count[3];
                }
    }
}
