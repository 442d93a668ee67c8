/* dma_copy dst src [offsets] queue=Q bound=B [acc] [scatter] [oob_skip]
 *
 * Moves P rows (partitions) of F elements between any HBM/SBUF pair, element
 * by element in row-major order, converting to dst's dtype (equal dtypes: an
 * exact bit copy). acc: dst = dst + src in fp32 (the ALU's add, NaN rule
 * included), then converted to dst's dtype. Indirect: with `offsets` (SBUF
 * int32/uint32, one element per partition, P partitions) row p reads src
 * row offsets[p] (gather) or, with
 * scatter, writes dst row offsets[p]. Rows of an HBM AP are partition_stride
 * elements apart; rows of an SBUF AP are partitions start_partition + idx.
 * An index outside [0, bound) skips the row with oob_skip and is an error
 * otherwise (then nothing is written). Rows are done in order p = 0..P-1, so
 * a scatter with acc accumulates duplicate indices in that order. The source
 * is read completely before anything is written: if source and destination
 * bytes may overlap, the source is first staged in a buffer. Worker threads
 * may share out the rows of a large copy (the same bytes). */
#include "insn_impl.h"

#include "../workers.h"

/* One side of the transfer: rows of F elements, free dims normalised
 * (count-1 dims dropped, contiguous neighbours merged), innermost last. */
typedef struct dma_side {
    uint8_t *base;     /* row 0, element 0 */
    int64_t row_step;  /* bytes from row r to row r+1 */
    nx_dtype dt;
    int64_t size;
    uint32_t nd;       /* >= 1 */
    int64_t step[NX_MAX_FREE_DIMS];  /* bytes */
    uint64_t count[NX_MAX_FREE_DIMS];
} dma_side;

/* The view's walk dims (isa/access.h) are this normalisation. */
static void side_from_view(dma_side *s, const nx_view *v) {
    s->base = v->base;
    s->row_step = v->partition_step;
    s->dt = (nx_dtype)v->dtype;
    s->size = (int64_t)nx_dtype_size(s->dt);
    s->nd = v->walk_nd;
    for (uint32_t k = 0; k < v->walk_nd; k++) {
        s->step[k] = v->walk_step[k];
        s->count[k] = v->walk_count[k];
    }
}

/* Byte range [lo, hi) of one row relative to the row start. */
static void side_row_span(const dma_side *s, int64_t *lo, int64_t *hi) {
    int64_t a = 0, b = 0;
    for (uint32_t k = 0; k < s->nd; k++) {
        int64_t ext = s->step[k] * (int64_t)(s->count[k] - 1);
        if (ext < 0) a += ext; else b += ext;
    }
    *lo = a;
    *hi = b + s->size;
}

/* Host address range of rows [0, rows): for the overlap test. */
static void side_host_range(const dma_side *s, uint64_t rows, uintptr_t *lo, uintptr_t *hi) {
    int64_t rlo, rhi, last = s->row_step * (int64_t)(rows - 1);
    side_row_span(s, &rlo, &rhi);
    *lo = (uintptr_t)s->base + (uintptr_t)(intptr_t)((last < 0 ? last : 0) + rlo);
    *hi = (uintptr_t)s->base + (uintptr_t)(intptr_t)((last > 0 ? last : 0) + rhi);
}

/* Walks one row run by run: the innermost dim is a run of count elements
 * `step` bytes apart; the outer dims advance like an odometer. */
typedef struct dma_cursor {
    const dma_side *s;
    uint8_t *row;
    uint64_t idx[NX_MAX_FREE_DIMS];
    uint8_t *run;    /* next element */
    uint64_t left;   /* elements left in this run */
} dma_cursor;

static void cursor_init(dma_cursor *c, const dma_side *s, uint8_t *row) {
    c->s = s;
    c->row = row;
    memset(c->idx, 0, sizeof c->idx);
    c->run = row;
    c->left = s->count[s->nd - 1];
}

static void cursor_advance(dma_cursor *c, uint64_t n) {
    const dma_side *s = c->s;
    uint32_t inner = s->nd - 1;
    if (n < c->left) {
        c->run += (int64_t)n * s->step[inner];
        c->left -= n;
        return;
    }
    /* run finished: next odometer position (wraps to 0 after the last) */
    for (uint32_t d = inner; d-- > 0;) {
        if (++c->idx[d] < s->count[d]) break;
        c->idx[d] = 0;
    }
    int64_t off = 0;
    for (uint32_t d = 0; d < inner; d++) off += (int64_t)c->idx[d] * s->step[d];
    c->run = c->row + off;
    c->left = s->count[inner];
}

enum { DMA_CHUNK = 256 }; /* engine values converted at a time (on the stack) */

/* n elements: dst run at dp (dstep bytes apart) from src run at sp. Source
 * and destination bytes do not overlap (the caller stages the source). */
static void move_run(const dma_side *d, uint8_t *dp, int64_t dstep, const dma_side *s,
                     const uint8_t *sp, int64_t sstep, uint64_t n, int acc) {
    if (!acc && d->dt == s->dt) {
        int64_t z = d->size;
        if (dstep == z && sstep == z) {
            memcpy(dp, sp, n * (uint64_t)z);
            return;
        }
        switch (z) {
        case 1: for (uint64_t i = 0; i < n; i++) dp[(int64_t)i * dstep] = sp[(int64_t)i * sstep]; return;
        case 2: for (uint64_t i = 0; i < n; i++) memcpy(dp + (int64_t)i * dstep, sp + (int64_t)i * sstep, 2); return;
        default: for (uint64_t i = 0; i < n; i++) memcpy(dp + (int64_t)i * dstep, sp + (int64_t)i * sstep, 4); return;
        }
    }
    if (acc && dstep == 0) {
        /* every element adds into the same dst element, in order */
        for (uint64_t i = 0; i < n; i++)
            nx_dtype_store(d->dt, dp, nx_alu_apply(NX_ALU_ADD, nx_dtype_load(d->dt, dp),
                                                   nx_dtype_load(s->dt, sp + (int64_t)i * sstep)));
        return;
    }
    /* a conversion (or an accumulation) through engine values, a chunk at a
     * time; the dst elements of a run are distinct, so this is the element
     * order's result */
    double v[DMA_CHUNK], w[DMA_CHUNK];
    for (uint64_t i = 0; i < n; i += DMA_CHUNK) {
        const uint64_t m = n - i < DMA_CHUNK ? n - i : DMA_CHUNK;
        uint8_t *q = dp + (int64_t)i * dstep;
        nx_dtype_load_run(s->dt, sp + (int64_t)i * sstep, sstep, m, v);
        if (acc) {
            nx_dtype_load_run(d->dt, q, dstep, m, w);
            nx_alu_run(NX_ALU_ADD, w, w, v, m);
            nx_dtype_store_run(d->dt, q, dstep, m, w);
        } else {
            nx_dtype_store_run(d->dt, q, dstep, m, v);
        }
    }
}

static void copy_row(const dma_side *d, uint8_t *drow, const dma_side *s, uint8_t *srow, uint64_t f,
                     int acc) {
    dma_cursor cd, cs;
    cursor_init(&cd, d, drow);
    cursor_init(&cs, s, srow);
    uint32_t di = d->nd - 1, si = s->nd - 1;
    for (uint64_t done = 0; done < f;) {
        uint64_t n = cd.left < cs.left ? cd.left : cs.left;
        move_run(d, cd.run, d->step[di], s, cs.run, s->step[si], n, acc);
        cursor_advance(&cd, n);
        cursor_advance(&cs, n);
        done += n;
    }
}

/* Bytes [lo, hi) of HBM that rows [0, rows) of an HBM AP touch, with 64-bit
 * overflow checks. Returns -1 on overflow. */
static int hbm_rows_span(const nx_operand *op, uint64_t rows, int64_t *lo, int64_t *hi) {
    int64_t size = (int64_t)nx_dtype_size((nx_dtype)op->dtype);
    int64_t emin = 0, emax = 0, ext;
    if (__builtin_mul_overflow((int64_t)op->partition_stride, (int64_t)rows - 1, &ext)) return -1;
    if (ext < 0) emin = ext; else emax = ext;
    for (uint32_t k = 0; k < op->ndims; k++) {
        if (__builtin_mul_overflow((int64_t)op->stride[k], (int64_t)op->count[k] - 1, &ext)) return -1;
        if (ext < 0 ? __builtin_add_overflow(emin, ext, &emin) : __builtin_add_overflow(emax, ext, &emax))
            return -1;
    }
    int64_t off = (int64_t)op->offset, blo, bhi;
    if (__builtin_mul_overflow(emin, size, &blo) || __builtin_add_overflow(blo, off, &blo)) return -1;
    if (__builtin_add_overflow(emax, 1, &emax) || __builtin_mul_overflow(emax, size, &bhi) ||
        __builtin_add_overflow(bhi, off, &bhi))
        return -1;
    *lo = blo;
    *hi = bhi;
    return 0;
}

/* Rows [0, bound) of the indexed operand lie inside memory (hbm_bytes for an
 * HBM AP, `partitions` for an SBUF AP). */
static int check_indexed_rows(const nx_operand *op, const char *what, int32_t bound,
                              uint32_t partitions, uint64_t hbm_bytes, nx_error *err) {
    if (op->kind == NX_OPK_SBUF) {
        if ((uint64_t)op->start_partition + (uint64_t)bound > partitions)
            return nx_fail(err, "bound %d: %s rows [0, %d) are partitions %u..%llu, past the %u partitions",
                           bound, what, bound, (unsigned)op->start_partition,
                           (unsigned long long)op->start_partition + (uint64_t)bound - 1, partitions);
        return 0;
    }
    int64_t lo, hi;
    if (hbm_rows_span(op, (uint64_t)bound, &lo, &hi) != 0)
        return nx_fail(err, "bound %d: %s rows [0, %d) overflow 64-bit byte addresses", bound, what, bound);
    if (lo < 0 || (uint64_t)hi > hbm_bytes)
        return nx_fail(err, "bound %d: %s rows [0, %d) touch HBM bytes [%lld, %lld), outside [0, %llu)",
                       bound, what, bound, (long long)lo, (long long)hi, (unsigned long long)hbm_bytes);
    return 0;
}

int nx_validate_DMA_COPY(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                         nx_error *err) {
    (void)engine;
    const nx_operand *dst = &insn->op[0], *src = &insn->op[1], *off = &insn->op[2];
    int32_t queue = insn->iparam[0], bound = insn->iparam[1];
    if (queue < 0 || (uint32_t)queue >= geo->dma_queues)
        return nx_fail(err, "queue %d is outside [0, %u)", queue, geo->dma_queues);
    if (dst->partition_count != src->partition_count)
        return nx_fail(err, "dst has %u partitions but src has %u",
                       (unsigned)dst->partition_count, (unsigned)src->partition_count);
    uint64_t fd = nx_operand_free_elems(dst), fs = nx_operand_free_elems(src);
    if (fd != fs)
        return nx_fail(err, "dst has %llu elements per partition but src has %llu",
                       (unsigned long long)fd, (unsigned long long)fs);
    int indirect = off->kind != NX_OPK_NONE;
    if (!indirect) {
        if (insn->flags & NX_FLAG_SCATTER) return nx_fail(err, "scatter needs an offsets operand");
        if (insn->flags & NX_FLAG_OOB_SKIP) return nx_fail(err, "oob_skip needs an offsets operand");
        if (bound != 0) return nx_fail(err, "bound %d must be 0 without offsets", bound);
        return 0;
    }
    if (off->dtype != NX_DT_INT32 && off->dtype != NX_DT_UINT32)
        return nx_fail(err, "offsets dtype %s must be int32 or uint32", nx_dtype_name((nx_dtype)off->dtype));
    if (off->partition_count != dst->partition_count)
        return nx_fail(err, "offsets has %u partitions but the transfer has %u",
                       (unsigned)off->partition_count, (unsigned)dst->partition_count);
    if (nx_operand_free_elems(off) != 1)
        return nx_fail(err, "offsets has %llu elements per partition, must have 1",
                       (unsigned long long)nx_operand_free_elems(off));
    if (bound < 1) return nx_fail(err, "bound %d must be >= 1 with offsets", bound);
    int scatter = (insn->flags & NX_FLAG_SCATTER) != 0;
    return check_indexed_rows(scatter ? dst : src, scatter ? "dst" : "src", bound, geo->partitions,
                              geo->hbm_bytes, err);
}

/* Worker threads (isa/workers.h) share out the rows of a large copy, in
 * contiguous ranges, when the destination rows are distinct and their bytes
 * disjoint (no scatter; SBUF partitions, or HBM rows at least a row's span
 * apart), so that no two rows' order matters: the same bytes as row by row. */
enum { DMA_SPLIT_MIN_ELEMS = 1 << 18 };

typedef struct dma_rows {
    const dma_side *d, *s;
    const int64_t *drow, *srow;
    const uint8_t *skip;
    uint32_t rows, tasks;
    uint64_t f;
    int acc;
} dma_rows;

static void dma_rows_task(void *arg, unsigned i) {
    const dma_rows *j = arg;
    for (uint32_t p = j->rows * i / j->tasks; p < j->rows * (i + 1) / j->tasks; p++)
        if (!j->skip[p])
            copy_row(j->d, j->d->base + j->drow[p] * j->d->row_step, j->s, j->s->base + j->srow[p] * j->s->row_step,
                     j->f, j->acc);
}

static uint32_t dma_row_tasks(const nx_exec_ctx *ctx, const dma_side *d, uint32_t rows, uint64_t f, int scatter) {
    uint32_t t = nx_workers_threads(ctx->state->workers);
    int64_t lo, hi;
    side_row_span(d, &lo, &hi);
    if (t < 2 || scatter || (uint64_t)rows * f < DMA_SPLIT_MIN_ELEMS ||
        (d->row_step < 0 ? -d->row_step : d->row_step) < hi - lo)
        return 1;
    return t < rows ? t : rows;
}

int nx_exec_DMA_COPY(const nx_exec_ctx *ctx, const nx_insn *insn) {
    const nx_operand *dop = &insn->op[0], *sop = &insn->op[1], *oop = &insn->op[2];
    nx_view dv, sv;
    nx_view_init(&dv, ctx, dop);
    nx_view_init(&sv, ctx, sop);
    dma_side d, s;
    side_from_view(&d, &dv);
    side_from_view(&s, &sv);
    uint32_t rows = dv.partitions;
    uint64_t f = dv.free_elems;
    int acc = (insn->flags & NX_FLAG_ACCUMULATE) != 0;
    int indirect = oop->kind != NX_OPK_NONE, scatter = (insn->flags & NX_FLAG_SCATTER) != 0;
    int skip_oob = (insn->flags & NX_FLAG_OOB_SKIP) != 0;
    int32_t bound = insn->iparam[1];

    /* row p: src row srow[p] -> dst row drow[p]; skip[p] leaves it out */
    int64_t srow[256], drow[256];
    uint8_t skip[256];
    for (uint32_t p = 0; p < rows; p++) {
        srow[p] = drow[p] = p;
        skip[p] = 0;
    }
    uint64_t src_rows = rows, dst_rows = rows; /* rows the overlap test covers */
    if (indirect) {
        const nx_operand *indexed = scatter ? dop : sop;
        /* validation checked the bound against the machine's HBM; the
         * program's HBM extent is only known here */
        if (indexed->kind == NX_OPK_HBM &&
            check_indexed_rows(indexed, scatter ? "dst" : "src", bound, ctx->state->geo.partitions,
                               ctx->state->hbm_bytes, ctx->err) != 0)
            return -1;
        nx_view ov;
        nx_view_init(&ov, ctx, oop);
        for (uint32_t p = 0; p < rows; p++) {
            double v = nx_dtype_load((nx_dtype)ov.dtype, nx_view_addr(&ov, p, 0));
            int64_t idx = (int64_t)v;
            if (idx < 0 || idx >= bound) {
                if (!skip_oob)
                    return nx_fail(ctx->err, "offsets[%u] = %lld is out of bounds [0, %d)", p,
                                   (long long)idx, bound);
                skip[p] = 1;
            }
            if (scatter) drow[p] = idx; else srow[p] = idx;
        }
        if (scatter) dst_rows = (uint64_t)bound; else src_rows = (uint64_t)bound;
    }

    /* stage the source if its bytes may overlap the destination's */
    uint8_t *stage = NULL;
    uintptr_t slo, shi, dlo, dhi;
    side_host_range(&s, src_rows, &slo, &shi);
    side_host_range(&d, dst_rows, &dlo, &dhi);
    if (slo < dhi && dlo < shi) {
        uint64_t row_bytes = f * (uint64_t)s.size;
        stage = malloc(rows * row_bytes > 0 ? rows * row_bytes : 1);
        if (stage == NULL)
            return nx_fail(ctx->err, "out of memory staging %llu bytes of overlapping source",
                           (unsigned long long)(rows * row_bytes));
        dma_side packed = s;
        packed.base = stage;
        packed.row_step = (int64_t)row_bytes;
        packed.nd = 1;
        packed.step[0] = s.size;
        packed.count[0] = f;
        for (uint32_t p = 0; p < rows; p++) {
            if (skip[p]) continue;
            copy_row(&packed, stage + p * row_bytes, &s, s.base + srow[p] * s.row_step, f, 0);
            srow[p] = p;
        }
        s = packed;
    }
    dma_rows job = {&d, &s, drow, srow, skip, rows, dma_row_tasks(ctx, &d, rows, f, scatter), f, acc};
    nx_workers_run(ctx->state->workers, job.tasks, dma_rows_task, &job);
    free(stage);
    return 0;
}
