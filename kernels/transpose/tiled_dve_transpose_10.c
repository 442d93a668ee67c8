/* tiled_dve_transpose_10: out[b][c][r] = in[b][r][c] with the swap done in
 * each partition's free dims on the DVE.
 *
 * A partition's free space can only reorder what it holds, so every
 * partition holds a block that is closed under the transpose: nb whole
 * matrices (nb x R x C) when one fits the per-partition tile, else an
 * rr x cc sub-block of one matrix. A tile puts up to 128 such blocks of one
 * shape on its partitions; per tile:
 *   load:    per run of blocks whose HBM offsets step evenly, transfers
 *            HBM -> SBUF (partition = block, free = [nb][rr][cc]), cut into
 *            pieces of at most 8 partitions on different DMA lanes;
 *   swap:    one DVE tensor_copy reading [nb][cc][rr] with strides
 *            (rr*cc, 1, cc) and writing contiguously;
 *   store:   the same pieces SBUF -> HBM (free = [nb][cc][rr] at out strides).
 * Sub-blocks are about square (rr ~ cc ~ sqrt(tile elements)), because a
 * transfer's efficiency is set by its shorter contiguous run: cc elements
 * on the input side, rr on the output side; among nearby block-column
 * counts the one the output lanes' DMA engines share most evenly wins.
 * Tiles rotate over 2 SBUF buffers each for input and output (42 KiB per
 * partition each on trn2, or one whole matrix up to 7/8 of SBUF over the
 * four); the loads of a tile are emitted before the stores of the
 * previous one.
 *
 * Split over the grid: whole matrices -> units are batches; sub-blocks ->
 * units are output rows (b, c), so the two programs write disjoint rows.
 * Output transfers that write the same rows (one block column, successive
 * block rows) use one lane, where they run in order and need no semaphores
 * between them; block columns spread over the output lanes. A column strip
 * (one block column, many block rows) with narrow blocks is stored row by
 * row instead, which makes every transfer's rows disjoint.
 *
 * Bit-exactness: DMA copies equal dtypes as bits; the DVE copy views the
 * data as the unsigned integer type of the same size (exact). */
#include <stdlib.h>
#include <string.h>

#include "transpose.h"
#include "transpose_plan.h"
#include "dve_blocks.h"
#include "isa/intmath.h"

#define DV_STAGES 2
#define DV_TILE_BYTES (48u * 1024u) /* per partition, per buffer */
#define DV_PIECE 8u                 /* partitions per transfer */
#define DV_ROWWISE_MAX_CC 64u       /* column strips this narrow are stored row by row */
#define DV_PENDING 16               /* tiles being filled at once (one per block shape) */
#define DV_DMA_ENGINES 16u      /* lanes l and l + 16 share a DMA engine (author.h) */

typedef struct dv_block {
    uint64_t in_off, out_off; /* elements */
    uint64_t key;             /* equal keys = same output rows */
} dv_block;

typedef struct dv_tile {
    uint32_t nb, rr, cc; /* block shape */
    uint32_t np;         /* blocks (partitions) */
    int strip;           /* blocks are one column strip (same output rows) */
    dv_block blk[NX_MAX_PARTITIONS];
} dv_tile;

typedef struct dv_state {
    nx_kctx *k;
    const nx_transpose_plan *pl;
    nx_dtype dt, cp_dt;
    uint64_t size;
    uint32_t parts;
    nx_tile in[DV_STAGES], out[DV_STAGES];
    uint32_t stages;
    dv_tile *ring;     /* the last `stages` tiles emitted (for their stores) */
    uint64_t emitted;  /* tiles loaded so far */
    uint64_t stored;   /* tiles stored so far */
    dv_tile *pending;  /* tiles being filled */
    uint32_t npending;
    uint32_t in_lanes, next_in;
    uint32_t group; /* blocks with keys in [g*group, (g+1)*group) share an output lane */
} dv_state;

static nx_dtype uint_of_size(uint64_t size) {
    return size == 4 ? NX_DT_UINT32 : size == 2 ? NX_DT_UINT16 : NX_DT_UINT8;
}

/* A piece: blocks [p, p + n) of t whose offsets step evenly by (din, dout),
 * so one access pattern (partition stride = the step) covers them. Pieces
 * end at DV_PIECE blocks, where the step changes or does not fit an int32
 * stride, and (outside column strips) at a key multiple of the lane group,
 * so pieces over the same output rows line up from tile to tile and share
 * a lane. Returns n; *din / *dout get the steps (0 for one block). */
static uint32_t dv_piece(const dv_tile *t, uint32_t p, int strip, uint32_t group, int64_t *din,
                         int64_t *dout) {
    uint32_t n = 1;
    *din = *dout = 0;
    while (p + n < t->np && n < DV_PIECE) {
        const dv_block *a = &t->blk[p + n - 1], *b = &t->blk[p + n];
        int64_t di = (int64_t)(b->in_off - a->in_off), dq = (int64_t)(b->out_off - a->out_off);
        if (di <= 0 || dq <= 0 || di > INT32_MAX || dq > INT32_MAX) break;
        if (n > 1 && (di != *din || dq != *dout)) break;
        if (!strip && b->key % group == 0) break;
        *din = di;
        *dout = dq;
        n++;
    }
    return n;
}

static int dv_load(dv_state *s, const dv_tile *t, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    int32_t strides[3] = {(int32_t)(t->nb > 1 ? pl->rows * pl->cols : 0), (int32_t)pl->cols, 1};
    uint32_t counts[3] = {t->nb, t->rr, t->cc};
    uint32_t f = t->nb * t->rr * t->cc;
    int32_t one = 1;
    for (uint32_t p = 0; p < t->np;) {
        int64_t din, dout;
        uint32_t n = dv_piece(t, p, t->strip, s->group, &din, &dout);
        nx_operand src = nx_ap(NX_OPK_HBM, s->dt, 0, n, (int32_t)din,
                               pl->in_offset + t->blk[p].in_off * s->size, 3, strides, counts);
        nx_operand dst = nx_tile_view(tile, s->dt, p, n, 0, 1, &one, &f);
        if (nx_kctx_dma_on(s->k, s->next_in, &dst, &src, err) != 0) return -1;
        s->next_in = (s->next_in + 1) % s->in_lanes;
        p += n;
    }
    return 0;
}

static int dv_swap(dv_state *s, const dv_tile *t, const nx_tile *in, const nx_tile *out,
                   nx_error *err) {
    int32_t rstr[3] = {(int32_t)(t->rr * t->cc), 1, (int32_t)t->cc};
    uint32_t rcnt[3] = {t->nb, t->cc, t->rr};
    int32_t one = 1;
    uint32_t f = t->nb * t->rr * t->cc;
    nx_operand src = nx_tile_view(in, s->cp_dt, 0, t->np, 0, 3, rstr, rcnt);
    nx_operand dst = nx_tile_view(out, s->cp_dt, 0, t->np, 0, 1, &one, &f);
    return nx_kctx_tensor_copy(s->k, NX_ENG_DVE, &dst, &src, err);
}

static uint32_t dv_out_lane(const dv_state *s, uint64_t key) {
    uint32_t lanes = nx_kctx_lanes(s->k), out_lanes = lanes - s->in_lanes;
    return out_lanes ? s->in_lanes + (uint32_t)(key % out_lanes) : 0;
}

static int dv_store(dv_state *s, const dv_tile *t, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    int32_t one = 1;
    if (t->strip && t->cc <= DV_ROWWISE_MAX_CC && t->np > 1) {
        /* one transfer per output row: partition = block (rows r), free = rr */
        for (uint32_t p = 0; p < t->np;) {
            int64_t dout = 0;
            uint32_t n = t->np - p, m;
            /* the whole strip steps evenly unless a stride overflowed */
            for (m = 1; m < n; m++) {
                int64_t dq = (int64_t)(t->blk[p + m].out_off - t->blk[p + m - 1].out_off);
                if (dq <= 0 || dq > INT32_MAX || (m > 1 && dq != dout)) break;
                dout = dq;
            }
            n = m;
            if (n == 1) dout = 0;
            for (uint32_t c = 0; c < t->cc; c++) {
                nx_operand src = nx_tile_view(tile, s->dt, p, n, (uint64_t)c * t->rr, 1, &one, &t->rr);
                nx_operand dst = nx_ap(NX_OPK_HBM, s->dt, 0, n, (int32_t)dout,
                                       pl->out_offset + (t->blk[p].out_off + (uint64_t)c * pl->rows) * s->size,
                                       1, &one, &t->rr);
                if (nx_kctx_dma_on(s->k, dv_out_lane(s, t->blk[p].key * t->cc + c), &dst, &src, err) != 0)
                    return -1;
            }
            p += n;
        }
        return 0;
    }
    int32_t strides[3] = {(int32_t)(t->nb > 1 ? pl->rows * pl->cols : 0), (int32_t)pl->rows, 1};
    uint32_t counts[3] = {t->nb, t->cc, t->rr};
    uint32_t f = t->nb * t->rr * t->cc;
    for (uint32_t p = 0; p < t->np;) {
        int64_t din, dout;
        uint32_t n = dv_piece(t, p, t->strip, s->group, &din, &dout);
        nx_operand src = nx_tile_view(tile, s->dt, p, n, 0, 1, &one, &f);
        nx_operand dst = nx_ap(NX_OPK_HBM, s->dt, 0, n, (int32_t)dout,
                               pl->out_offset + t->blk[p].out_off * s->size, 3, strides, counts);
        uint64_t lane_key = t->strip ? t->blk[p].key : t->blk[p].key / s->group;
        if (nx_kctx_dma_on(s->k, dv_out_lane(s, lane_key), &dst, &src, err) != 0) return -1;
        p += n;
    }
    return 0;
}

/* Emits a full tile: load and swap now, the store `stages - 1` tiles later. */
static int dv_emit(dv_state *s, const dv_tile *t, nx_error *err) {
    uint32_t slot = (uint32_t)(s->emitted % s->stages);
    s->ring[slot] = *t;
    if (dv_load(s, &s->ring[slot], &s->in[slot], err) != 0) return -1;
    if (dv_swap(s, &s->ring[slot], &s->in[slot], &s->out[slot], err) != 0) return -1;
    s->emitted++;
    if (s->emitted - s->stored >= s->stages) {
        uint32_t j = (uint32_t)(s->stored % s->stages);
        if (dv_store(s, &s->ring[j], &s->out[j], err) != 0) return -1;
        s->stored++;
    }
    return 0;
}

static int dv_drain(dv_state *s, nx_error *err) {
    while (s->stored < s->emitted) {
        uint32_t j = (uint32_t)(s->stored % s->stages);
        if (dv_store(s, &s->ring[j], &s->out[j], err) != 0) return -1;
        s->stored++;
    }
    return 0;
}

/* Adds a block to the pending tile of its shape; emits tiles as they fill. */
static int dv_add(dv_state *s, uint32_t nb, uint32_t rr, uint32_t cc, int strip, const dv_block *b,
                  nx_error *err) {
    dv_tile *t = NULL;
    for (uint32_t i = 0; i < s->npending && !t; i++) {
        dv_tile *c = &s->pending[i];
        if (c->nb == nb && c->rr == rr && c->cc == cc && c->strip == strip) t = c;
    }
    if (!t) {
        if (s->npending == DV_PENDING) { /* flush the oldest */
            if (dv_emit(s, &s->pending[0], err) != 0) return -1;
            memmove(&s->pending[0], &s->pending[1], (DV_PENDING - 1) * sizeof *s->pending);
            s->npending--;
        }
        t = &s->pending[s->npending++];
        t->nb = nb;
        t->rr = rr;
        t->cc = cc;
        t->strip = strip;
        t->np = 0;
    }
    t->blk[t->np++] = *b;
    if (t->np == s->parts) {
        if (dv_emit(s, t, err) != 0) return -1;
        t->np = 0;
    }
    return 0;
}

static int dv_flush(dv_state *s, nx_error *err) {
    for (uint32_t i = 0; i < s->npending; i++)
        if (s->pending[i].np && dv_emit(s, &s->pending[i], err) != 0) return -1;
    s->npending = 0;
    return dv_drain(s, err);
}

static uint64_t isqrt(uint64_t v) {
    uint64_t r = 0;
    while ((r + 1) * (r + 1) <= v) r++;
    return r;
}

/* Whole matrices per partition: units are batches. */
static int dv_whole(dv_state *s, uint64_t tile_elems, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    uint64_t lo, hi, mat = pl->rows * pl->cols;
    nx_kctx_rows(s->k, pl->batch, &lo, &hi);
    uint64_t kb_max = tile_elems / mat;
    /* enough tiles to pipeline (about 4 of 128 partitions) before packing more per partition */
    uint64_t kb = (hi - lo + 4 * s->parts - 1) / (4 * s->parts);
    kb = kb < 1 ? 1 : kb > kb_max ? kb_max : kb;
    s->group = DV_PIECE; /* blocks are disjoint batches: any grouping spreads */
    for (uint64_t b = lo; b < hi; b += kb) {
        uint32_t nb = (uint32_t)nx_min_u64(kb, hi - b);
        dv_block blk = {b * mat, b * mat, b / kb};
        if (dv_add(s, nb, (uint32_t)pl->rows, (uint32_t)pl->cols, 0, &blk, err) != 0) return -1;
    }
    return 0;
}

/* rr x cc sub-blocks: units are output rows (b, c). */
/* n split into blocks of at most `block`: the equal block size with the same count. */
static uint64_t even_block(uint64_t n, uint64_t block) {
    uint64_t count = (n + block - 1) / block;
    return (n + count - 1) / count;
}

static int dv_sub(dv_state *s, uint64_t tile_elems, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    uint64_t R = pl->rows, C = pl->cols, L = isqrt(tile_elems), rr, cc;
    uint64_t lo, hi;
    nx_kctx_rows(s->k, pl->batch * C, &lo, &hi);
    uint64_t cols = nx_min_u64(C, hi - lo); /* widest column range of one matrix here */
    uint32_t out_lanes = nx_kctx_lanes(s->k) - s->in_lanes;
    uint64_t engines = out_lanes < DV_DMA_ENGINES ? out_lanes : DV_DMA_ENGINES;
    if (R <= L) {
        rr = R;
        cc = even_block(cols, nx_min_u64(cols, tile_elems / R));
    } else if (cols <= L) {
        cc = cols;
        rr = even_block(R, nx_min_u64(R, tile_elems / cols));
    } else {
        /* about square blocks; among block-column counts near cols / L,
         * prefer one that the output lanes' DMA engines share evenly (all
         * transfers of one block column run on one lane), scoring the
         * shorter run divided by the busiest engine's excess load */
        uint64_t nj0 = (cols + L - 1) / L;
        uint64_t cand[3] = {nj0, engines ? nj0 / engines * engines : 0,
                            engines ? (nj0 + engines - 1) / engines * engines : 0};
        double best_score = -1.0;
        rr = cc = L;
        for (int i = 0; i < 3; i++) {
            if (cand[i] == 0 || cand[i] > cols) continue;
            uint64_t c = even_block(cols, (cols + cand[i] - 1) / cand[i]);
            uint64_t r = even_block(R, nx_min_u64(R, tile_elems / c));
            uint64_t nj = (cols + c - 1) / c;
            double load = engines ? (double)((nj + engines - 1) / engines * engines) / (double)nj : 1.0;
            double score = (double)nx_min_u64(r, c) / load;
            if (score > best_score) {
                best_score = score;
                rr = r;
                cc = c;
            }
        }
    }
    /* pieces over the same block columns share a lane; make the groups of
     * columns small enough that a program's columns cover every output lane */
    uint64_t nj = (cols + cc - 1) / cc;
    uint64_t g = out_lanes ? nj / out_lanes : DV_PIECE;
    s->group = (uint32_t)(g < 1 ? 1 : g > DV_PIECE ? DV_PIECE : g);
    for (uint64_t u = lo; u < hi;) {
        uint64_t b = u / C, c_lo = u % C, c_hi = nx_min_u64(hi - b * C, C);
        uint64_t nj = (c_hi - c_lo + cc - 1) / cc;
        int strip = nj == 1;
        for (uint64_t r0 = 0; r0 < R; r0 += rr) {
            for (uint64_t c0 = c_lo; c0 < c_hi; c0 += cc) {
                dv_block blk;
                blk.in_off = (b * R + r0) * C + c0;
                blk.out_off = (b * C + c0) * R + r0;
                blk.key = (b * C + c0) / cc; /* +1 per block column of the segment */
                if (dv_add(s, 1, (uint32_t)nx_min_u64(rr, R - r0), (uint32_t)nx_min_u64(cc, c_hi - c0), strip,
                           &blk, err) != 0)
                    return -1;
            }
        }
        u = b * C + c_hi;
    }
    return 0;
}

int tiled_dve_transpose_10(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_transpose_plan pl;
    if (nx_transpose_prepare("tiled_dve_transpose_10", call, &pl, err) != 0) return -1;
    if (pl.copy) return nx_transpose_emit_copy(k, &pl, err);
    if (pl.rows > INT32_MAX || pl.cols > INT32_MAX)
        return nx_fail(err, "operand 0 (%s): rows of %llu x %llu elements exceed 32-bit access-pattern strides",
                       call->args[0].name, (unsigned long long)pl.rows, (unsigned long long)pl.cols);
    const nx_geometry *geo = nx_kctx_geometry(k);
    dv_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    s.pl = &pl;
    s.dt = pl.dtype;
    s.size = nx_dtype_size(pl.dtype);
    s.cp_dt = uint_of_size(s.size);
    s.parts = geo->partitions < NX_MAX_PARTITIONS ? geo->partitions : NX_MAX_PARTITIONS;
    s.stages = DV_STAGES;
    uint32_t lanes = nx_kctx_lanes(k);
    s.in_lanes = lanes > 1 ? lanes / 2 : 1;
    uint64_t tile_bytes = geo->sbuf_partition_bytes * 3 / 4 / (2 * DV_STAGES);
    if (tile_bytes > DV_TILE_BYTES) tile_bytes = DV_TILE_BYTES;
    uint64_t tile_elems = nx_min_u64(tile_bytes / s.size, geo->sbuf_free_elems_max);
    int whole = pl.rows * pl.cols <= tile_elems;
    /* a matrix just past the default tile (112 x 112 fp32 on trn2) still
     * goes whole when the four tiles fit 7/8 of SBUF: its transfers stay
     * contiguous, where sub-blocks would run DMA at a fraction of peak */
    uint64_t big = nx_min_u64(geo->sbuf_partition_bytes * 7 / 8 / (2 * DV_STAGES) / s.size, geo->sbuf_free_elems_max);
    if (!whole && pl.rows * pl.cols <= big) {
        tile_elems = pl.rows * pl.cols;
        whole = 1;
    }

    if (!whole) {
        /* the block route where the machine's figures favour it (dve_blocks.c) */
        uint64_t lo, hi;
        nx_kctx_rows(k, pl.batch * pl.cols, &lo, &hi);
        const nx_machine *m = nx_kctx_machine(k);
        if (nx_dve_blocks_fit(geo, &pl, lo, hi) &&
            nx_dve_blocks_ns(m, &pl, hi - lo) < nx_dve_free_ns(m, &pl, hi - lo, tile_elems))
            return nx_dve_blocks_emit(k, &pl, lo, hi, err);
    }
    int rc = -1;
    uint32_t ni = 0, no = 0;
    s.ring = calloc(DV_STAGES, sizeof *s.ring);
    s.pending = calloc(DV_PENDING, sizeof *s.pending);
    if (!s.ring || !s.pending) {
        nx_fail(err, "tiled_dve_transpose_10: out of memory");
        goto done;
    }
    for (; ni < DV_STAGES; ni++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "dve_in", s.dt, s.parts, tile_elems, &s.in[ni], err) != 0)
            goto done;
    for (; no < DV_STAGES; no++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "dve_out", s.dt, s.parts, tile_elems, &s.out[no], err) != 0)
            goto done;
    if ((whole ? dv_whole(&s, tile_elems, err) : dv_sub(&s, tile_elems, err)) != 0) goto done;
    if (dv_flush(&s, err) != 0) goto done;
    rc = 0;
done:
    free(s.ring);
    free(s.pending);
    nx_error rerr;
    while (no > 0) nx_kctx_release(k, &s.out[--no], &rerr);
    while (ni > 0) nx_kctx_release(k, &s.in[--ni], &rerr);
    return rc;
}
