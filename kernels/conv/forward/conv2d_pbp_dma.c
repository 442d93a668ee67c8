/* The emitter's DMA: the lane rotation shared by loads and stores, and the
 * split of one transfer by partitions over the DMA engines. */
#include "conv2d_pbp_emit.h"

/* Lanes rotate over all of the context's lanes, loads and stores alike: a
 * spread of `pieces` (one per DMA engine) takes the next lanes, so
 * successive transfers of an engine sit on its two queues in turn and one
 * queue's fixed phase overlaps the other's data phase. */
uint32_t nx_pbp_lane_next(pbp_state *s) {
    uint32_t l = s->next_lane;
    s->next_lane = (s->next_lane + 1) % s->pl.lanes;
    return l;
}

/* DMA split by partitions over up to `pieces` input or output lanes (one
 * DMA engine each), no piece smaller than one efficient run per partition
 * (pl->dma_run): each piece pays the fixed cost of a transfer, and pieces
 * much smaller than that gain nothing from another engine. */
/* One contiguous run per partition on both sides: the run's elements. */
static uint64_t single_run(const nx_operand *op) {
    return op->ndims == 1 && op->stride[0] == 1 ? op->count[0] : 0;
}

/* Columns [c0, c0 + nc) of every partition of a single-run operand. */
static nx_operand run_cols(const nx_operand *op, uint64_t c0, uint32_t nc) {
    nx_operand r = *op;
    r.offset += c0 * nx_dtype_size((nx_dtype)op->dtype);
    r.count[0] = nc;
    return r;
}

int nx_pbp_dma_spread(pbp_state *s, const nx_operand *dst, const nx_operand *src, uint32_t pieces,
                      nx_error *err) {
    uint32_t rows = dst->partition_count;
    uint64_t bytes = (uint64_t)rows * nx_operand_free_elems(dst) * s->pl.es;
    uint64_t by_size = bytes / s->pl.dma_run;
    if (by_size < pieces) pieces = by_size ? (uint32_t)by_size : 1;
    uint64_t run = single_run(dst);
    if (pieces > 1 && rows % pieces != 0 && run && single_run(src) == run &&
        run / pieces * s->pl.es >= s->pl.dma_run) {
        /* few or unevenly dividing rows of long runs (a rows-first image:
         * 28 rows over 16 engines would give 12 engines two rows and 4 one,
         * the load lasting the two-row engines' time): every engine takes
         * the same columns of all the rows instead, runs still efficient */
        uint64_t c0 = 0;
        for (uint32_t i = 0; i < pieces; i++) {
            uint32_t nc = (uint32_t)(run / pieces + (i < run % pieces));
            nx_operand d = run_cols(dst, c0, nc), sr = run_cols(src, c0, nc);
            if (nx_kctx_dma_on(s->k, nx_pbp_lane_next(s), &d, &sr, err) != 0) return -1;
            c0 += nc;
        }
        return 0;
    }
    if (pieces > rows) pieces = rows;
    if (pieces < 1) pieces = 1;
    uint32_t base = rows / pieces, extra = rows % pieces, r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t n = base + (i < extra);
        nx_operand d = nx_operand_rows(dst, r0, n), sr = nx_operand_rows(src, r0, n);
        if (nx_kctx_dma_on(s->k, nx_pbp_lane_next(s), &d, &sr, err) != 0) return -1;
        r0 += n;
    }
    return 0;
}
