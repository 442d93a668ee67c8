/* Operand views: host addresses and row load/store for the semantics. A
 * row is a walk over its merged dims (nx_view's walk_*), converted by the
 * walk converters of isa/dtype.h: the dtype switch is once per row and
 * contiguous runs vectorise. */
#include "access.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"

/* The walk dims of a memory view (nx_view, walk_*). */
static void walk_dims(nx_view *v, int64_t size) {
    uint32_t nd = 0;
    for (unsigned k = 0; k < v->ndims && k < NX_MAX_FREE_DIMS; k++) {
        if (v->count[k] == 1) continue;
        if (nd > 0 && v->walk_step[nd - 1] == v->stride_bytes[k] * (int64_t)v->count[k]) {
            v->walk_step[nd - 1] = v->stride_bytes[k];
            v->walk_count[nd - 1] *= v->count[k];
            continue;
        }
        v->walk_step[nd] = v->stride_bytes[k];
        v->walk_count[nd] = v->count[k];
        nd++;
    }
    if (nd == 0) {
        v->walk_step[0] = size;
        v->walk_count[0] = 1;
        nd = 1;
    }
    v->walk_nd = nd;
}

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
    walk_dims(v, (int64_t)size);
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
    nx_dtype_load_walk((nx_dtype)v->dtype, v->base + (int64_t)p * v->partition_step, v->walk_nd, v->walk_count,
                       v->walk_step, out);
}

void nx_view_store(const nx_view *v, uint32_t p, const double *in) {
    nx_dtype_store_walk((nx_dtype)v->dtype, v->base + (int64_t)p * v->partition_step, v->walk_nd, v->walk_count,
                        v->walk_step, in);
}

void nx_view_store_where(const nx_view *v, uint32_t p, const double *in, const double *pred) {
    nx_dtype_store_walk_where((nx_dtype)v->dtype, v->base + (int64_t)p * v->partition_step, v->walk_nd,
                              v->walk_count, v->walk_step, in, pred);
}

/* The walk of partition p with each run handed to RUN(mem, step, n, buf):
 * buf advances by n elements of `size` bytes per run. */
#define BITS_WALK(v, p, buf, RUN)                                                         \
    do {                                                                                  \
        uint64_t c_[4] = {1, 1, 1, 1};                                                    \
        int64_t s_[4] = {0, 0, 0, 0};                                                     \
        const uint32_t nd_ = (v)->walk_nd;                                                \
        for (uint32_t k_ = 0; k_ < nd_; k_++) {                                           \
            c_[4 - nd_ + k_] = (v)->walk_count[k_];                                       \
            s_[4 - nd_ + k_] = (v)->walk_step[k_];                                        \
        }                                                                                 \
        uint8_t *row_ = (v)->base + (int64_t)(p) * (v)->partition_step;                   \
        for (uint64_t a_ = 0; a_ < c_[0]; a_++)                                           \
            for (uint64_t b_ = 0; b_ < c_[1]; b_++)                                       \
                for (uint64_t d_ = 0; d_ < c_[2]; d_++) {                                 \
                    RUN(row_ + (int64_t)a_ * s_[0] + (int64_t)b_ * s_[1] + (int64_t)d_ * s_[2], s_[3], c_[3], buf); \
                    buf += c_[3] * size;                                                  \
                }                                                                         \
    } while (0)

/* n elements of `size` bytes, `step` apart at mem <-> packed at buf. */
#define GATHER_RUN(mem, step, n, buf)                                                     \
    do {                                                                                  \
        if ((step) == (int64_t)size) memcpy(buf, mem, (n) * size);                        \
        else                                                                              \
            for (uint64_t i_ = 0; i_ < (n); i_++) memcpy(buf + i_ * size, (mem) + (int64_t)i_ * (step), size); \
    } while (0)
#define SCATTER_RUN(mem, step, n, buf)                                                    \
    do {                                                                                  \
        if ((step) == (int64_t)size) memcpy(mem, buf, (n) * size);                        \
        else                                                                              \
            for (uint64_t i_ = 0; i_ < (n); i_++) memcpy((mem) + (int64_t)i_ * (step), buf + i_ * size, size); \
    } while (0)

void nx_view_load_bits(const nx_view *v, uint32_t p, void *packed) {
    const uint64_t size = nx_dtype_size((nx_dtype)v->dtype);
    uint8_t *buf = packed;
    BITS_WALK(v, p, buf, GATHER_RUN);
}

void nx_view_store_bits(const nx_view *v, uint32_t p, const void *packed) {
    const uint64_t size = nx_dtype_size((nx_dtype)v->dtype);
    const uint8_t *buf = packed;
    BITS_WALK(v, p, buf, SCATTER_RUN);
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
