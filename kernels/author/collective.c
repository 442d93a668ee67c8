/* Collectives between the grid's cores (kernels/author/collective.h):
 * staged through HBM scratch, one ranged core barrier per round, the sums
 * done by the DMA engines' accumulate. The exchange follows what NCCL's
 * two-rank ring reduces to (each rank sends the other what it needs once,
 * the receive adds into the destination) and the Neuron collectives that
 * run on the DMA engines; it goes past them in letting the caller split a
 * round into begin / end around its own work. */
#include "collective.h"

#include <stdio.h>
#include <string.h>

#include "isa/intmath.h"
#include "isa/opcodes.h"

static const char *kind_name(nx_coll_kind kind) {
    switch (kind) {
    case NX_COLL_ALL_REDUCE: return "all_reduce";
    case NX_COLL_ALL_GATHER: return "all_gather";
    default: return "reduce_scatter";
    }
}

nx_coll_buf nx_coll_tile(const nx_tile *t, uint32_t p0, uint64_t rows, uint64_t c0, uint64_t cols) {
    return (nx_coll_buf){.mem = t->mem, .dtype = t->dtype, .p0 = p0, .rows = rows, .cols = cols,
                         .offset = t->offset + c0 * nx_dtype_size((nx_dtype)t->dtype)};
}

nx_coll_buf nx_coll_hbm(nx_dtype dt, uint64_t offset, uint64_t rows, uint64_t cols, uint64_t pitch, int shared) {
    return (nx_coll_buf){.mem = NX_OPK_HBM, .shared = (uint8_t)(shared != 0), .dtype = (uint8_t)dt, .rows = rows,
                         .cols = cols, .offset = offset, .pitch = pitch};
}

nx_coll_buf nx_coll_rows(const nx_coll_buf *b, uint64_t r0, uint64_t n) {
    nx_coll_buf r = *b;
    r.rows = n;
    if (b->mem == NX_OPK_HBM) r.offset += r0 * b->pitch * nx_dtype_size((nx_dtype)b->dtype);
    else r.p0 += (uint32_t)r0;
    return r;
}

/* Columns [c0, c0 + n) of a buffer. */
static nx_coll_buf cols_of(const nx_coll_buf *b, uint64_t c0, uint64_t n) {
    nx_coll_buf r = *b;
    r.cols = n;
    r.offset += c0 * nx_dtype_size((nx_dtype)b->dtype);
    return r;
}

void nx_coll_share(const nx_kctx *k, uint32_t core, uint64_t R, uint64_t *lo, uint64_t *hi) {
    const uint64_t n = nx_kctx_num_programs(k);
    const uint64_t split = n < 2 ? R : nx_min_u64(nx_round_up_u64(nx_cdiv_u64(R, n), 32), R);
    *lo = core == 0 ? 0 : split;
    *hi = core == 0 ? split : R;
}

static int same_bytes(const nx_coll_buf *a, const nx_coll_buf *b) {
    return a->mem == b->mem && a->dtype == b->dtype && a->offset == b->offset && a->rows == b->rows &&
           a->cols == b->cols && (a->mem == NX_OPK_HBM ? a->pitch == b->pitch : a->p0 == b->p0);
}

/* Rows [r0, r0 + n) (n <= 128) of a buffer as an access pattern. */
static nx_operand ap_of(const nx_coll_buf *b, uint64_t r0, uint32_t n) {
    const nx_dtype dt = (nx_dtype)b->dtype;
    const uint32_t cols = (uint32_t)b->cols;
    if (b->mem == NX_OPK_HBM)
        return nx_ap_hbm_rows(dt, b->offset + r0 * b->pitch * nx_dtype_size(dt), n, (int32_t)b->pitch, cols);
    const int32_t one = 1;
    return nx_ap((nx_operand_kind)b->mem, dt, b->p0 + (uint32_t)r0, n, 0, b->offset, 1, &one, &cols);
}

/* dst <- src (acc: dst += src in fp32), the rows cut into pieces of at most
 * 128 over the collective's lanes. */
static int coll_dma(nx_kctx *k, nx_coll *c, const nx_coll_buf *dst, const nx_coll_buf *src, int acc, nx_error *err) {
    const uint64_t R = dst->rows;
    if (R == 0 || dst->cols == 0) return 0;
    uint64_t pieces = nx_max_u64(nx_cdiv_u64(R, 128), nx_min_u64(R, c->lanes));
    for (uint64_t i = 0, r0 = 0; i < pieces; i++) {
        const uint64_t n = R / pieces + (i < R % pieces);
        nx_insn in = nx_insn_make(NX_OP_DMA_COPY);
        in.op[0] = ap_of(dst, r0, (uint32_t)n);
        in.op[1] = ap_of(src, r0, (uint32_t)n);
        if (acc) in.flags |= NX_FLAG_ACCUMULATE;
        if (nx_kctx_dma_insn(k, c->lane0 + (uint32_t)(c->rounds + i) % c->lanes, &in, err) != 0) return -1;
        r0 += n;
    }
    return 0;
}

int nx_coll_init(nx_kctx *k, nx_coll *c, const char *name, uint64_t slot_bytes, nx_error *err) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->slot_bytes = nx_round_up_u64(slot_bytes ? slot_bytes : 1, 64);
    const nx_geometry *g = nx_kctx_geometry(k);
    const uint32_t engines = g->dma_engines ? g->dma_engines : 1, lanes = nx_kctx_lanes(k);
    c->lanes = engines < lanes ? engines : lanes;
    c->lane0 = lanes >= 2 * engines ? engines : 0;
    if (nx_kctx_num_programs(k) < 2) return 0; /* no exchange, no scratch */
    const uint64_t words = nx_kctx_num_programs(k) * 2 * c->slot_bytes / 4;
    if (nx_kctx_scratch(k, name, NX_DT_FP32, 1, &words, &c->base, err) != 0)
        return nx_fail_prefix(err, "collective '%s'", name);
    return 0;
}

/* The bytes of core `core`'s slot for round r, buffer at byte `at` of it,
 * as a dense [rows x cols] buffer. */
static nx_coll_buf slot_buf(const nx_coll *c, uint32_t core, uint64_t at, nx_dtype dt, uint64_t rows, uint64_t cols) {
    const uint64_t off = c->base + ((uint64_t)core * 2 + c->rounds % 2) * c->slot_bytes + at;
    return nx_coll_hbm(dt, off, rows, cols, cols, 0);
}

/* Rows this core stages of buffer src (the other core's share, or all),
 * and the rows each core reserves for it in a slot (the same on every
 * core). */
static uint64_t staged_rows(const nx_kctx *k, nx_coll_kind kind, const nx_coll_buf *src, const nx_coll_buf *dst,
                            uint64_t *reserve_rows) {
    const int scatter = kind == NX_COLL_REDUCE_SCATTER || (kind == NX_COLL_ALL_REDUCE && dst->shared);
    if (kind == NX_COLL_ALL_GATHER && dst->shared) return *reserve_rows = 0;
    if (!scatter) return *reserve_rows = src->rows;
    uint64_t lo, hi; /* core 0's share is the larger */
    nx_coll_share(k, 0, src->rows, &lo, &hi);
    *reserve_rows = hi - lo;
    nx_coll_share(k, 1 - nx_kctx_program_id(k), src->rows, &lo, &hi);
    return hi - lo;
}

static int check_buf(nx_kctx *k, const nx_coll *c, nx_coll_kind kind, const char *what, const nx_coll_buf *b,
                     nx_error *err) {
    const nx_geometry *g = nx_kctx_geometry(k);
    const char *kn = kind_name(kind);
    if (b->mem != NX_OPK_SBUF && b->mem != NX_OPK_HBM)
        return nx_fail(err, "%s '%s': %s is in %s; SBUF or HBM (the DMA queues move it)", kn, c->name, what,
                       b->mem == NX_OPK_PSUM ? "PSUM" : "no memory");
    if (b->dtype != NX_DT_FP32 && b->dtype != NX_DT_BF16)
        return nx_fail(err, "%s '%s': %s is %s; fp32 or bf16", kn, c->name, what, nx_dtype_name((nx_dtype)b->dtype));
    if (b->mem == NX_OPK_SBUF && (b->shared || b->p0 + b->rows > g->partitions))
        return nx_fail(err, "%s '%s': %s rows [%u, %llu) %s", kn, c->name, what, b->p0,
                       (unsigned long long)(b->p0 + b->rows),
                       b->shared ? "are SBUF, which no core shares" : "pass the SBUF's partitions");
    if (b->mem == NX_OPK_HBM && (b->pitch < b->cols || b->pitch > INT32_MAX))
        return nx_fail(err, "%s '%s': %s pitch %llu elements (%llu..%d)", kn, c->name, what,
                       (unsigned long long)b->pitch, (unsigned long long)b->cols, INT32_MAX);
    return 0;
}

/* The shape dst must have for src. */
static int check_pair(nx_kctx *k, const nx_coll *c, nx_coll_kind kind, const nx_coll_buf *src,
                      const nx_coll_buf *dst, nx_error *err) {
    if (check_buf(k, c, kind, "src", src, err) != 0 || check_buf(k, c, kind, "dst", dst, err) != 0) return -1;
    const char *kn = kind_name(kind);
    if (src->shared) return nx_fail(err, "%s '%s': src is shared; each core's src is its own data", kn, c->name);
    if (src->dtype != dst->dtype)
        return nx_fail(err, "%s '%s': dst is %s, src %s; one dtype", kn, c->name, nx_dtype_name((nx_dtype)dst->dtype),
                       nx_dtype_name((nx_dtype)src->dtype));
    const uint64_t n = nx_kctx_num_programs(k);
    uint64_t rows = src->rows, lo, hi;
    if (kind == NX_COLL_ALL_GATHER) rows = n * src->rows;
    if (kind == NX_COLL_REDUCE_SCATTER && !dst->shared) {
        nx_coll_share(k, nx_kctx_program_id(k), src->rows, &lo, &hi);
        rows = hi - lo;
    }
    if (dst->rows != rows || dst->cols != src->cols)
        return nx_fail(err, "%s '%s': dst is %llu x %llu, must be %llu x %llu for src %llu x %llu on %llu cores", kn,
                       c->name, (unsigned long long)dst->rows, (unsigned long long)dst->cols, (unsigned long long)rows,
                       (unsigned long long)src->cols, (unsigned long long)src->rows, (unsigned long long)src->cols,
                       (unsigned long long)n);
    return 0;
}

/* This core's own part: dst's rows that take src's rows directly. */
static void own_part(const nx_kctx *k, nx_coll_kind kind, const nx_coll_buf *src, const nx_coll_buf *dst,
                     nx_coll_buf *from, nx_coll_buf *to) {
    const uint32_t me = nx_kctx_program_id(k);
    uint64_t lo, hi;
    nx_coll_share(k, me, src->rows, &lo, &hi);
    if (kind == NX_COLL_ALL_GATHER) {
        *from = *src;
        *to = nx_coll_rows(dst, me * src->rows, src->rows);
    } else if (kind == NX_COLL_REDUCE_SCATTER || dst->shared) {
        *from = nx_coll_rows(src, lo, hi - lo);
        *to = dst->shared ? nx_coll_rows(dst, lo, hi - lo) : *dst;
    } else {
        *from = *src;
        *to = *dst;
    }
}

/* Bytes of the scratch of every core: the range the round's barrier orders. */
static void scratch_range(const nx_kctx *k, const nx_coll *c, uint64_t *lo, uint64_t *hi) {
    *lo = c->base;
    *hi = c->base + (uint64_t)nx_kctx_num_programs(k) * 2 * c->slot_bytes;
}

int nx_coll_begin(nx_kctx *k, nx_coll *c, nx_coll_kind kind, uint32_t n, const nx_coll_buf *src,
                  const nx_coll_buf *dst, nx_error *err) {
    const char *kn = kind_name(kind);
    if (c->open) return nx_fail(err, "%s '%s': a round is open (nx_coll_end first)", kn, c->name);
    if (n < 1 || n > NX_COLL_GROUP_MAX)
        return nx_fail(err, "%s '%s': %u buffers in a round (1..%d)", kn, c->name, n, NX_COLL_GROUP_MAX);
    const uint32_t np = nx_kctx_num_programs(k), me = nx_kctx_program_id(k);
    uint64_t need = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (check_pair(k, c, kind, &src[i], &dst[i], err) != 0) return -1;
        uint64_t reserve;
        staged_rows(k, kind, &src[i], &dst[i], &reserve);
        need += nx_round_up_u64(reserve * src[i].cols * nx_dtype_size((nx_dtype)src[i].dtype), 64);
    }
    if (np > 1 && need > c->slot_bytes)
        return nx_fail(err, "%s '%s': the round stages %llu bytes per core, a slot holds %llu", kn, c->name,
                       (unsigned long long)need, (unsigned long long)c->slot_bytes);
    uint64_t at = 0;
    int staged = 0;
    for (uint32_t i = 0; i < n; i++) {
        nx_coll_buf from, to;
        own_part(k, kind, &src[i], &dst[i], &from, &to);
        if (np > 1) {
            uint64_t reserve;
            staged_rows(k, kind, &src[i], &dst[i], &reserve);
            if (reserve) {
                /* what the other core needs: all of src, or (scatter) its share */
                nx_coll_buf give = src[i];
                if (kind == NX_COLL_REDUCE_SCATTER || dst[i].shared) {
                    uint64_t lo, hi;
                    nx_coll_share(k, 1 - me, src[i].rows, &lo, &hi);
                    give = nx_coll_rows(&src[i], lo, hi - lo);
                }
                nx_coll_buf slot = slot_buf(c, me, at, (nx_dtype)src[i].dtype, give.rows, give.cols);
                if (coll_dma(k, c, &slot, &give, 0, err) != 0) return -1;
                at += nx_round_up_u64(reserve * src[i].cols * nx_dtype_size((nx_dtype)src[i].dtype), 64);
                staged = 1;
            }
        }
        if (!same_bytes(&from, &to) && coll_dma(k, c, &to, &from, 0, err) != 0) return -1;
    }
    uint64_t lo, hi;
    scratch_range(k, c, &lo, &hi);
    if (staged && nx_kctx_barrier_hbm(k, lo, hi, err) != 0) return -1;
    c->open = 1;
    c->kind = kind;
    c->n = n;
    memcpy(c->src, src, n * sizeof *src);
    memcpy(c->dst, dst, n * sizeof *dst);
    return 0;
}

/* The other core's contribution to dst: its rows (gather) or the rows
 * this core sums, with the slot buffer they come from. */
static void other_part(const nx_kctx *k, const nx_coll *c, const nx_coll_buf *src, const nx_coll_buf *dst,
                       uint64_t at, nx_coll_buf *from, nx_coll_buf *to) {
    const uint32_t me = nx_kctx_program_id(k), other = 1 - me;
    const nx_dtype dt = (nx_dtype)src->dtype;
    if (c->kind == NX_COLL_ALL_GATHER) {
        *to = nx_coll_rows(dst, other * src->rows, src->rows);
    } else if (c->kind == NX_COLL_REDUCE_SCATTER || dst->shared) {
        uint64_t lo, hi;
        nx_coll_share(k, me, src->rows, &lo, &hi);
        *to = dst->shared ? nx_coll_rows(dst, lo, hi - lo) : *dst;
    } else {
        *to = *dst;
    }
    *from = slot_buf(c, other, at, dt, to->rows, to->cols);
}

int nx_coll_end(nx_kctx *k, nx_coll *c, nx_error *err) {
    if (!c->open) return nx_fail(err, "collective '%s': no round is open (nx_coll_begin first)", c->name);
    const uint32_t np = nx_kctx_num_programs(k);
    uint64_t at = 0;
    for (uint32_t i = 0; np > 1 && i < c->n; i++) {
        const nx_coll_buf *src = &c->src[i], *dst = &c->dst[i];
        uint64_t reserve;
        staged_rows(k, c->kind, src, dst, &reserve);
        if (reserve) {
            nx_coll_buf from, to;
            other_part(k, c, src, dst, at, &from, &to);
            if (coll_dma(k, c, &to, &from, c->kind != NX_COLL_ALL_GATHER, err) != 0) return -1;
            at += nx_round_up_u64(reserve * src->cols * nx_dtype_size((nx_dtype)src->dtype), 64);
        }
    }
    /* a shared result: every core's rows are in place before anyone reads */
    for (uint32_t i = 0; np > 1 && i < c->n; i++) {
        const nx_coll_buf *dst = &c->dst[i];
        if (!dst->shared || c->kind == NX_COLL_REDUCE_SCATTER) continue;
        const uint64_t es = nx_dtype_size((nx_dtype)dst->dtype);
        const uint64_t lo = dst->offset, hi = lo + ((dst->rows - 1) * dst->pitch + dst->cols) * es;
        if (dst->rows && dst->cols && nx_kctx_barrier_hbm(k, lo, hi, err) != 0) return -1;
    }
    c->open = 0;
    c->rounds++;
    return 0;
}

/* The whole collective in rounds of column blocks that fit a slot. */
static int whole(nx_kctx *k, nx_coll *c, nx_coll_kind kind, const nx_coll_buf *src, const nx_coll_buf *dst,
                 nx_error *err) {
    if (check_pair(k, c, kind, src, dst, err) != 0) return -1;
    uint64_t reserve;
    staged_rows(k, kind, src, dst, &reserve);
    const uint64_t col_bytes = reserve * nx_dtype_size((nx_dtype)src->dtype);
    uint64_t cc = col_bytes ? c->slot_bytes / col_bytes : src->cols;
    if (nx_kctx_num_programs(k) < 2) cc = src->cols;
    if (cc == 0)
        return nx_fail(err, "%s '%s': one column stages %llu bytes, a slot holds %llu", kind_name(kind), c->name,
                       (unsigned long long)col_bytes, (unsigned long long)c->slot_bytes);
    /* a 64-byte pad per round: keep a block's bytes within the slot */
    while (cc > 1 && nx_round_up_u64(cc * col_bytes, 64) > c->slot_bytes) cc--;
    for (uint64_t c0 = 0; c0 < src->cols; c0 += cc) {
        const uint64_t w = nx_min_u64(cc, src->cols - c0);
        nx_coll_buf s = cols_of(src, c0, w), d = cols_of(dst, c0, w);
        if (nx_coll_begin(k, c, kind, 1, &s, &d, err) != 0 || nx_coll_end(k, c, err) != 0) return -1;
    }
    return 0;
}

int nx_coll_all_reduce(nx_kctx *k, nx_coll *c, const nx_coll_buf *src, const nx_coll_buf *dst, nx_error *err) {
    return whole(k, c, NX_COLL_ALL_REDUCE, src, dst, err);
}

int nx_coll_all_gather(nx_kctx *k, nx_coll *c, const nx_coll_buf *src, const nx_coll_buf *dst, nx_error *err) {
    return whole(k, c, NX_COLL_ALL_GATHER, src, dst, err);
}

int nx_coll_reduce_scatter(nx_kctx *k, nx_coll *c, const nx_coll_buf *src, const nx_coll_buf *dst, nx_error *err) {
    return whole(k, c, NX_COLL_REDUCE_SCATTER, src, dst, err);
}
