/* load_stationary src=SBUF[K, M]: caches a tile in the PE as fp32 values.
 *
 * K = src partitions (<= pe_rows), M = src elements per partition
 * (<= pe_cols), src dtype one of the PE input types (fp32, bf16, fp16,
 * fp8_e4m3, fp8_e5m2). Every PE input type is exactly representable in fp32,
 * so the cached tile loses nothing.
 *
 * This file also defines nx_pe_rows_to_f32() (pe_convert.h), the fast "PE
 * input rows -> fp32" converter that multiply_moving.c shares. */
#include "insn_impl.h"
#include "pe_convert.h"
#include "../pe/datapath.h"

static uint16_t load_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static float f32_from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* IEEE binary16 -> binary32, exact (every fp16 value is an fp32 value). */
static float fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in fp32 */
        float f = (float)man * 0x1p-24f;
        return sign ? -f : f;
    }
    return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* Converts n elements of dtype dt, `step` bytes apart starting at p. */
static void run_to_f32(nx_dtype dt, const uint8_t *p, int64_t step, uint64_t n, float *out,
                       const float *fp8_table) {
    switch (dt) {
    case NX_DT_FP32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (step == 4) {
            memcpy(out, p, n * 4);
            return;
        }
        for (uint64_t i = 0; i < n; i++) memcpy(&out[i], p + (int64_t)i * step, 4);
#else
        for (uint64_t i = 0; i < n; i++) out[i] = (float)nx_dtype_load(NX_DT_FP32, p + (int64_t)i * step);
#endif
        return;
    case NX_DT_BF16:
        for (uint64_t i = 0; i < n; i++)
            out[i] = f32_from_bits((uint32_t)load_le16(p + (int64_t)i * step) << 16);
        return;
    case NX_DT_FP16:
        for (uint64_t i = 0; i < n; i++) out[i] = fp16_to_f32(load_le16(p + (int64_t)i * step));
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

int nx_validate_LOAD_STATIONARY(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                                nx_error *err) {
    (void)engine;
    const nx_operand *src = &insn->op[0];
    if (!nx_dtype_is_float((nx_dtype)src->dtype))
        return nx_fail(err, "src dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                       nx_dtype_name((nx_dtype)src->dtype));
    if (src->partition_count > geo->pe_rows)
        return nx_fail(err, "src has %u partitions (K), more than the PE's %u rows",
                       (unsigned)src->partition_count, geo->pe_rows);
    uint64_t m = nx_operand_free_elems(src);
    if (m > geo->pe_cols)
        return nx_fail(err, "src has %llu elements per partition (M), more than the PE's %u columns",
                       (unsigned long long)m, geo->pe_cols);
    return 0;
}

int nx_exec_LOAD_STATIONARY(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_core_state *cs = &ctx->state->core[ctx->core];
    nx_pe_kernel kernel;
    if (nx_pe_kernel_active(&kernel, ctx->err) != 0) return -1;
    nx_view src;
    nx_view_init(&src, ctx, &insn->op[0]);
    nx_pe_convert(kernel, &src, src.partitions, cs->stationary, ctx->state->geo.pe_cols);
    cs->stationary_k = src.partitions;
    cs->stationary_m = (uint32_t)src.free_elems;
    cs->stationary_dtype = src.dtype;
    cs->stationary_valid = 1;
    return 0;
}
