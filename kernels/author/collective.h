/* Collectives between the cores of a grid (VNC(2)): all-reduce (sum),
 * all-gather and reduce-scatter of SBUF or HBM tensors, through shared HBM
 * scratch and the core barrier, for any kernel written against the
 * authoring layer (kernels/author/author.h). docs/parts/collectives.md
 * describes the protocol and its measured cost.
 *
 * Buffers. A collective moves 2-D buffers [rows x cols] of one dtype
 * (fp32 or bf16) described by nx_coll_buf: an SBUF region (row r on
 * partition p0 + r, cols contiguous elements from a byte offset within the
 * partition) or an HBM region (rows `pitch` elements apart). Every program
 * of the grid makes the same calls with buffers of the same shapes; an
 * SBUF or a private HBM buffer holds this core's data, a *shared* HBM
 * buffer is the same bytes on every core (the grid's one tensor).
 *
 * Which core holds what (two cores, this core c; the shares of R rows:
 * core 0 takes rows [0, s), core 1 [s, R), s = ceil(R/2) rounded up to a
 * multiple of 32, at most R, so that a share of an SBUF tile starts on a
 * partition an engine instruction may start at (nx_coll_share)):
 *   all_reduce      src [R x C]; dst [R x C] = the sum over the cores' src.
 *                   A shared dst is written share by share (each core its
 *                   rows), then a barrier over dst: every core may read the
 *                   whole afterwards.
 *   all_gather      src [R x C]; dst [n R x C], rows [c' R, (c'+1) R) =
 *                   core c''s src, exact bits. A shared dst: each core
 *                   writes its rows, then a barrier over dst.
 *   reduce_scatter  src [R x C]; dst = the sum of share c: [share x C]
 *                   (SBUF or private HBM), or a shared [R x C] of which
 *                   core c writes its share's rows (no barrier after: the
 *                   caller orders later reads of the other core's rows).
 * dst may be src itself (all_reduce in place; reduce_scatter's dst = src's
 * share rows) or must not overlap it. src and dst have one dtype.
 *
 * The sum: dst = own + other in fp32 (the DMA engine's accumulate,
 * isa/insns/dma_copy.c), rounded once to the dtype: for bf16, fp32
 * accumulation of the two bf16 values. With two cores both get the same
 * bits (fp32 addition commutes), equal to fp32(x0 + x1) rounded to dtype.
 *
 * Protocol of one round (nx_coll_begin / nx_coll_end): begin stages what
 * the other core needs into this core's slot of the scratch (DMA), copies
 * this core's own part into dst when dst is not src, and passes a barrier
 * ranged over the scratch (nx_kctx_barrier_hbm); end reads the other
 * core's slot into dst (an accumulating DMA for the sums, a copy for the
 * gather). Only the DMA queues and POOL take part: the engines' work
 * emitted between begin and end overlaps the exchange. Two slots per core
 * alternate between rounds, so round r + 1 stages while round r's slot is
 * still read; the barrier of round r + 1 follows round r's reads.
 *
 * Scratch ownership: the nx_coll declares one HBM scratch tensor `name`
 * [cores x 2 slots x slot_bytes] (program 0 declares it, the others find
 * it by name: nx_kctx_scratch); it belongs to the collective for the whole
 * program, is never read by anything else, and its contents are
 * meaningless between rounds. Cost: per round per core the staged bytes
 * written and read once each over the DMA queues, one barrier
 * (machine sync.barrier_latency_ns), the DMA fixed costs.
 *
 * On a grid of one core every collective is dst = src (a copy unless dst
 * is src) and passes no barrier. Errors: -1 with one line naming the
 * collective, the buffer and the limit; nothing is emitted then. */
#ifndef NXSIM_KERNELS_AUTHOR_COLLECTIVE_H
#define NXSIM_KERNELS_AUTHOR_COLLECTIVE_H

#include <stdint.h>

#include "author.h"

typedef enum nx_coll_kind {
    NX_COLL_ALL_REDUCE,
    NX_COLL_ALL_GATHER,
    NX_COLL_REDUCE_SCATTER,
} nx_coll_kind;

typedef struct nx_coll_buf {
    uint8_t mem;     /* NX_OPK_SBUF or NX_OPK_HBM */
    uint8_t shared;  /* HBM: the same bytes on every core */
    uint8_t dtype;   /* NX_DT_FP32 or NX_DT_BF16 */
    uint32_t p0;     /* SBUF: partition of row 0 */
    uint64_t rows, cols;
    uint64_t offset; /* SBUF: byte of column 0 within each partition; HBM: byte of [0, 0] */
    uint64_t pitch;  /* HBM: elements from one row to the next */
} nx_coll_buf;

/* Rows [p0, p0 + rows) and columns [c0, c0 + cols) of a tile, as its dtype. */
nx_coll_buf nx_coll_tile(const nx_tile *t, uint32_t p0, uint64_t rows, uint64_t c0, uint64_t cols);
/* An HBM region: rows of cols elements, pitch apart, at byte offset. */
nx_coll_buf nx_coll_hbm(nx_dtype dt, uint64_t offset, uint64_t rows, uint64_t cols, uint64_t pitch, int shared);
/* Rows [r0, r0 + n) of a buffer. */
nx_coll_buf nx_coll_rows(const nx_coll_buf *b, uint64_t r0, uint64_t n);

#define NX_COLL_GROUP_MAX 8

typedef struct nx_coll {
    char name[48];
    uint64_t base;       /* HBM byte offset of the scratch */
    uint64_t slot_bytes; /* per core per slot */
    uint32_t lane0, lanes; /* DMA lanes [lane0, lane0 + lanes) (mod the context's) */
    uint64_t rounds;     /* rounds begun */
    /* the round in flight (begun, not yet ended) */
    int open;
    nx_coll_kind kind;
    uint32_t n;
    nx_coll_buf src[NX_COLL_GROUP_MAX], dst[NX_COLL_GROUP_MAX];
} nx_coll;

/* Declares (or finds) the scratch `name` with slots of slot_bytes (rounded
 * up to 64) per core; DMA on the context's second lane group (lanes E ..
 * 2E - 1, E = the machine's DMA engines: the queues the kernels' stores
 * use) until the caller sets lane0 / lanes. */
int nx_coll_init(nx_kctx *k, nx_coll *c, const char *name, uint64_t slot_bytes, nx_error *err);

/* One round over a group of n buffers (1..NX_COLL_GROUP_MAX; their staged
 * bytes together within a slot): begin, then the caller's other work, then
 * end. One round is open at a time: end before the next begin. */
int nx_coll_begin(nx_kctx *k, nx_coll *c, nx_coll_kind kind, uint32_t n, const nx_coll_buf *src,
                  const nx_coll_buf *dst, nx_error *err);
int nx_coll_end(nx_kctx *k, nx_coll *c, nx_error *err);

/* The whole collective of one buffer, in as many rounds as the slots need
 * (row blocks: a row must fit a slot). */
int nx_coll_all_reduce(nx_kctx *k, nx_coll *c, const nx_coll_buf *src, const nx_coll_buf *dst, nx_error *err);
int nx_coll_all_gather(nx_kctx *k, nx_coll *c, const nx_coll_buf *src, const nx_coll_buf *dst, nx_error *err);
int nx_coll_reduce_scatter(nx_kctx *k, nx_coll *c, const nx_coll_buf *src, const nx_coll_buf *dst, nx_error *err);

/* Core c's share [*lo, *hi) of R rows (above; all of them on one core). */
void nx_coll_share(const nx_kctx *k, uint32_t core, uint64_t R, uint64_t *lo, uint64_t *hi);

#endif
