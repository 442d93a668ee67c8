/* Operand views: host addresses and row load/store for the semantics. The
 * row loops switch on the dtype once per contiguous run, not per element. */
#include "access.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"

void nx_view_init(nx_view *v, const nx_exec_ctx *ctx, const nx_operand *op) {
    memset(v, 0, sizeof *v);
    v->kind = op->kind;
    v->dtype = op->dtype;
    v->ndims = op->ndims;
    v->partitions = op->partition_count;
    v->free_elems = 1;
    size_t size = nx_dtype_size((nx_dtype)op->dtype);
    for (unsigned k = 0; k < op->ndims && k < NX_MAX_FREE_DIMS; k++) {
        v->count[k] = op->count[k];
        v->stride_bytes[k] = (int64_t)op->stride[k] * (int64_t)size;
        v->pattern_stride[k] = op->stride[k];
        v->free_elems *= op->count[k];
    }
    nx_state *st = ctx->state;
    switch (op->kind) {
    case NX_OPK_HBM:
        v->base = st->hbm + op->offset;
        v->partition_step = (int64_t)op->partition_stride * (int64_t)size;
        break;
    case NX_OPK_SBUF:
        v->base = nx_sbuf_at(st, ctx->core, op->start_partition, op->offset);
        v->partition_step = (int64_t)st->geo.sbuf_partition_bytes;
        break;
    case NX_OPK_PSUM:
        v->base = nx_psum_at(st, ctx->core, op->start_partition, op->offset);
        v->partition_step = (int64_t)st->geo.psum_partition_bytes;
        break;
    case NX_OPK_IMM:
        v->imm = op->imm;
        v->partitions = 1;
        break;
    case NX_OPK_PATTERN:
        v->pattern_base = op->pattern_base;
        v->pattern_cm = op->partition_stride;
        break;
    default:
        break;
    }
}

uint8_t *nx_view_addr(const nx_view *v, uint32_t p, uint64_t e) {
    int64_t off = (int64_t)p * v->partition_step;
    for (int k = (int)v->ndims - 1; k >= 0; k--) {
        off += (int64_t)(e % v->count[k]) * v->stride_bytes[k];
        e /= v->count[k];
    }
    return v->base + off;
}

static void load_run(nx_dtype dt, const uint8_t *src, int64_t step, uint32_t n, double *out) {
    switch (dt) {
    case NX_DT_FP32:
        for (uint32_t i = 0; i < n; i++, src += step) {
            float f;
            memcpy(&f, src, sizeof f);
            out[i] = f;
        }
        break;
    case NX_DT_INT32:
        for (uint32_t i = 0; i < n; i++, src += step) {
            int32_t x;
            memcpy(&x, src, sizeof x);
            out[i] = x;
        }
        break;
    default:
        for (uint32_t i = 0; i < n; i++, src += step) out[i] = nx_dtype_load(dt, src);
        break;
    }
}

/* The fp32 store of one engine value (docs/parts/dtypes.md): C's
 * double->float conversion is the single RNE rounding with overflow to
 * infinity, except that it keeps a NaN's payload where the rule stores the
 * canonical quiet NaN of the NaN's sign (0x7fc00000 / 0xffc00000), as
 * nx_dtype_store does. */
static inline float fp32_store_value(double v) {
    float f = (float)v;
    if (v != v) f = signbit(v) ? -NAN : NAN;
    return f;
}

/* Four lanes of the same rule for contiguous runs (GCC/Clang vector types;
 * without wider SIMD flags they compile to SSE2 pairs): convert, then blend
 * the canonical NaN into the lanes that are NaN. Measured faster than the
 * scalar cast loop it replaces, which had no NaN rule at all. */
typedef double nx_v4d __attribute__((vector_size(32)));
typedef float nx_v4f __attribute__((vector_size(16)));
typedef int32_t nx_v4i __attribute__((vector_size(16)));

static void store_run(nx_dtype dt, uint8_t *dst, int64_t step, uint32_t n, const double *in) {
    switch (dt) {
    case NX_DT_FP32: {
        uint32_t i = 0;
        if (step == 4) {
            const nx_v4i sign = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
            for (; i + 4 <= n; i += 4, dst += 16) {
                nx_v4d d;
                memcpy(&d, in + i, sizeof d);
                nx_v4f f = __builtin_convertvector(d, nx_v4f);
                nx_v4i b, nan = (nx_v4i)(f != f); /* all ones in NaN lanes */
                memcpy(&b, &f, sizeof b);
                b = (b & ~nan) | (nan & ((b & sign) | 0x7fc00000));
                memcpy(dst, &b, sizeof b);
            }
        }
        for (; i < n; i++, dst += step) {
            float f = fp32_store_value(in[i]);
            memcpy(dst, &f, sizeof f);
        }
        break;
    }
    default:
        for (uint32_t i = 0; i < n; i++, dst += step) nx_dtype_store(dt, dst, in[i]);
        break;
    }
}

/* Calls run(ptr, step, n, index) for every innermost run of partition p. */
#define FOR_EACH_RUN(v, p, BODY)                                                          \
    do {                                                                                  \
        uint32_t c_[NX_MAX_FREE_DIMS] = {1, 1, 1, 1};                                     \
        int64_t s_[NX_MAX_FREE_DIMS] = {0, 0, 0, 0};                                      \
        unsigned lead_ = NX_MAX_FREE_DIMS - (v)->ndims;                                   \
        for (unsigned k_ = 0; k_ < (v)->ndims; k_++) {                                    \
            c_[lead_ + k_] = (v)->count[k_];                                              \
            s_[lead_ + k_] = (v)->stride_bytes[k_];                                       \
        }                                                                                 \
        const uint8_t *row_ = (v)->base + (int64_t)(p) * (v)->partition_step;             \
        uint64_t idx_ = 0;                                                                \
        for (uint32_t i0 = 0; i0 < c_[0]; i0++)                                           \
            for (uint32_t i1 = 0; i1 < c_[1]; i1++)                                       \
                for (uint32_t i2 = 0; i2 < c_[2]; i2++) {                                 \
                    uint8_t *run_ptr = (uint8_t *)row_ + i0 * s_[0] + i1 * s_[1] + i2 * s_[2]; \
                    int64_t run_step = s_[3];                                             \
                    uint32_t run_n = c_[3];                                               \
                    uint64_t run_idx = idx_;                                              \
                    BODY;                                                                 \
                    idx_ += run_n;                                                        \
                }                                                                         \
    } while (0)

void nx_view_load(const nx_view *v, uint32_t p, double *out) {
    if (v->kind == NX_OPK_IMM) {
        for (uint64_t i = 0; i < v->free_elems; i++) out[i] = v->imm;
        return;
    }
    if (v->kind == NX_OPK_PATTERN) {
        uint32_t c[NX_MAX_FREE_DIMS] = {1, 1, 1, 1};
        int64_t s[NX_MAX_FREE_DIMS] = {0, 0, 0, 0};
        unsigned lead = NX_MAX_FREE_DIMS - v->ndims;
        for (unsigned k = 0; k < v->ndims; k++) {
            c[lead + k] = v->count[k];
            s[lead + k] = v->pattern_stride[k];
        }
        int64_t base = v->pattern_base + v->pattern_cm * (int64_t)p;
        uint64_t i = 0;
        for (uint32_t a = 0; a < c[0]; a++)
            for (uint32_t b = 0; b < c[1]; b++)
                for (uint32_t d = 0; d < c[2]; d++)
                    for (uint32_t e = 0; e < c[3]; e++)
                        out[i++] = (double)(base + a * s[0] + b * s[1] + d * s[2] + e * s[3]);
        return;
    }
    FOR_EACH_RUN(v, p, load_run((nx_dtype)v->dtype, run_ptr, run_step, run_n, out + run_idx));
}

void nx_view_store(const nx_view *v, uint32_t p, const double *in) {
    FOR_EACH_RUN(v, p, store_run((nx_dtype)v->dtype, run_ptr, run_step, run_n, in + run_idx));
}

double nx_view_scalar(const nx_view *v, uint32_t p) {
    if (v->kind == NX_OPK_IMM) return v->imm;
    return nx_dtype_load((nx_dtype)v->dtype, v->base + (int64_t)p * v->partition_step);
}

double *nx_buf_alloc(uint64_t n) {
    if (n == 0) n = 1;
    if (n > SIZE_MAX / sizeof(double)) return NULL;
    return malloc((size_t)n * sizeof(double));
}
