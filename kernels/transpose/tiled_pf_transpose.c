/* tiled_pf_transpose: out[b][c][r] = in[b][r][c] through the PE array.
 *
 * Tiling (docs/parts/kernels.md): the program's output rows (b, c) are cut
 * into super-blocks of W input rows x W input columns, W = one PSUM bank of
 * elements (2048 bytes / element size: 512 fp32, 1024 for 2-byte types,
 * 2048 for 1-byte types), so every HBM transfer moves rows of 2 KiB, the
 * size DMA needs for full efficiency. Per super-block:
 *   load:    W/128 transfers HBM -> SBUF, in[b][r0+128t .. +128][c0 .. +W]
 *            on partitions r;
 *   compute: for each 128-column block: W/128 PE transposes SBUF [r, c] ->
 *            PSUM [c, r] side by side in one bank, then one PSUM -> SBUF
 *            copy of [c, W] on DVE or ACT (alternating);
 *   store:   W/128 transfers SBUF -> HBM of out[b][c .. +128][r0 .. +W].
 * Super-blocks rotate over `stages` SBUF buffers and the copies over 4 PSUM
 * banks; transfers are emitted `stages - 1` super-blocks ahead of the stores
 * that wait for their results, so the SP keeps many transfers in flight.
 *
 * Bit-exactness for every dtype: the PE moves bits on a transpose whose dst
 * dtype equals its src dtype, so the tiles are viewed on the PE as the float
 * type of the same size (fp32 / bf16 / fp8_e4m3), and the PSUM -> SBUF copy
 * as the unsigned integer of that size (integers convert exactly), whatever
 * the tensor's dtype. DMA copies equal dtypes as bits. */
#include <stdlib.h>

#include "transpose.h"
#include "transpose_plan.h"
#include "isa/intmath.h"

#define PF_MAX_STAGES 6
#define PF_PSUM_BUFS 4
#define PF_PACK_PIECES 8

typedef struct pf_block {
    uint64_t b, c0, r0;
    uint32_t cw, rw;
} pf_block;

typedef struct pf_state {
    nx_kctx *k;
    const nx_transpose_plan *pl;
    nx_dtype dt, pe_dt, cp_dt;
    uint64_t size;
    uint32_t tb;     /* block edge: partitions and PE array (128) */
    uint32_t w;      /* super-block edge, a multiple of tb */
    uint32_t stages;
    nx_tile in[PF_MAX_STAGES], out[PF_MAX_STAGES], ps[PF_PSUM_BUFS];
    uint64_t cblocks; /* column blocks computed so far (PSUM and engine rotation) */
    uint32_t in_lanes, next_in;
    uint32_t piece; /* rows per store piece (0: whole stores) */
    int by_rows;    /* the grid splits the input rows, not the output rows */
    uint32_t kp;    /* input rows per partition and segment (packed loads; 1: one row) */
    uint64_t ostride; /* output tile elements per 128-column block: kp x w */
    uint64_t rstep;   /* by_rows: input rows per super-block */
} pf_state;

static nx_dtype same_size_type(uint64_t size, nx_dtype f4, nx_dtype f2, nx_dtype f1) {
    return size == 4 ? f4 : size == 2 ? f2 : f1;
}

static int pf_load(pf_state *s, const pf_block *sb, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    int32_t one = 1;
    if (s->kp > 1) { /* whole rows, kp of them per partition: runs of kp x C */
        uint32_t seg = s->tb * s->kp, nr = (uint32_t)nx_cdiv_u64(sb->rw, seg), f = s->kp * (uint32_t)pl->cols;
        for (uint32_t t = 0; t < nr; t++) {
            uint64_t el = (sb->b * pl->rows + sb->r0 + (uint64_t)t * seg) * pl->cols;
            nx_operand src = nx_ap_hbm_rows(s->dt, pl->in_offset + el * s->size, s->tb, (int32_t)f, f);
            nx_operand dst = nx_tile_view(tile, s->dt, 0, s->tb, (uint64_t)t * s->w, 1, &one, &f);
            /* a segment is kp rows per partition: cut it over PF_PACK_PIECES lanes */
            if (nx_kctx_dma_split(s->k, s->next_in, PF_PACK_PIECES, &dst, &src, err) != 0) return -1;
            s->next_in = (s->next_in + PF_PACK_PIECES) % s->in_lanes;
        }
        return 0;
    }
    uint32_t nr = (uint32_t)nx_cdiv_u64(sb->rw, s->tb);
    for (uint32_t t = 0; t < nr; t++) {
        uint32_t rp = sb->rw - t * s->tb < s->tb ? sb->rw - t * s->tb : s->tb;
        uint64_t el = (sb->b * pl->rows + sb->r0 + (uint64_t)t * s->tb) * pl->cols + sb->c0;
        nx_operand src = nx_ap_hbm_rows(s->dt, pl->in_offset + el * s->size, rp, (int32_t)pl->cols,
                                        sb->cw);
        nx_operand dst = nx_tile_view(tile, s->dt, 0, rp, (uint64_t)t * s->w, 1, &one, &sb->cw);
        if (nx_kctx_dma_on(s->k, s->next_in, &dst, &src, err) != 0) return -1;
        s->next_in = (s->next_in + 1) % s->in_lanes;
    }
    return 0;
}

/* Packed rows: partition p of segment t holds input rows 128 kp t + kp p + j
 * (j < kp); the transposed block of (t, j) lands in PSUM side by side with
 * the others of its bank, and one copy per bank scatters them to output
 * columns 128 kp t + kp p + j. */
static int pf_compute_packed(pf_state *s, const pf_block *sb, const nx_tile *in, const nx_tile *out, nx_error *err) {
    int32_t one = 1;
    const uint32_t kp = s->kp, tbk = s->tb;
    const uint32_t nt = (uint32_t)nx_cdiv_u64(sb->rw, (uint64_t)tbk * kp), nc = (uint32_t)nx_cdiv_u64(sb->cw, tbk);
    const uint32_t per_bank = s->w / tbk / kp; /* segments per PSUM bank */
    for (uint32_t kk = 0; kk < nc; kk++) {
        uint32_t cp = sb->cw - kk * tbk < tbk ? sb->cw - kk * tbk : tbk;
        for (uint32_t t0 = 0; t0 < nt; t0 += per_bank) {
            uint32_t ntb = nt - t0 < per_bank ? nt - t0 : per_bank;
            const nx_tile *ps = &s->ps[s->cblocks % PF_PSUM_BUFS];
            nx_engine copier = s->cblocks % 2 ? NX_ENG_ACT : NX_ENG_DVE;
            s->cblocks++;
            for (uint32_t t = 0; t < ntb; t++)
                for (uint32_t j = 0; j < kp; j++) {
                    nx_operand src = nx_tile_view(in, s->pe_dt, 0, tbk,
                                                  (uint64_t)(t0 + t) * s->w + (uint64_t)j * s->pl->cols + kk * tbk, 1,
                                                  &one, &cp);
                    nx_operand dst = nx_tile_view(ps, s->pe_dt, 0, cp, (uint64_t)(t * kp + j) * tbk, 1, &one, &tbk);
                    if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
                }
            const int32_t fs[3] = {(int32_t)(kp * tbk), (int32_t)tbk, 1}, ts[3] = {(int32_t)(kp * tbk), 1, (int32_t)kp};
            const uint32_t cnt[3] = {ntb, kp, tbk};
            nx_operand from = nx_tile_view(ps, s->cp_dt, 0, cp, 0, 3, fs, cnt);
            nx_operand to = nx_tile_view(out, s->cp_dt, 0, cp, (uint64_t)kk * s->ostride + (uint64_t)t0 * kp * tbk, 3, ts, cnt);
            if (nx_kctx_tensor_copy(s->k, copier, &to, &from, err) != 0) return -1;
        }
    }
    return 0;
}

static int pf_compute(pf_state *s, const pf_block *sb, const nx_tile *in, const nx_tile *out,
                      nx_error *err) {
    if (s->kp > 1) return pf_compute_packed(s, sb, in, out, err);
    int32_t one = 1;
    uint32_t nr = (uint32_t)nx_cdiv_u64(sb->rw, s->tb), nc = (uint32_t)nx_cdiv_u64(sb->cw, s->tb);
    for (uint32_t kk = 0; kk < nc; kk++) {
        uint32_t cp = sb->cw - kk * s->tb < s->tb ? sb->cw - kk * s->tb : s->tb;
        const nx_tile *ps = &s->ps[s->cblocks % PF_PSUM_BUFS];
        nx_engine copier = s->cblocks % 2 ? NX_ENG_ACT : NX_ENG_DVE;
        s->cblocks++;
        for (uint32_t t = 0; t < nr; t++) {
            uint32_t rp = sb->rw - t * s->tb < s->tb ? sb->rw - t * s->tb : s->tb;
            nx_operand src = nx_tile_view(in, s->pe_dt, 0, rp, (uint64_t)t * s->w + kk * s->tb, 1,
                                          &one, &cp);
            nx_operand dst = nx_tile_view(ps, s->pe_dt, 0, cp, (uint64_t)t * s->tb, 1, &one, &rp);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
        }
        nx_operand from = nx_tile_view(ps, s->cp_dt, 0, cp, 0, 1, &one, &sb->rw);
        nx_operand to = nx_tile_view(out, s->cp_dt, 0, cp, (uint64_t)kk * s->w, 1, &one, &sb->rw);
        if (nx_kctx_tensor_copy(s->k, copier, &to, &from, err) != 0) return -1;
    }
    return 0;
}

static int pf_store(pf_state *s, const pf_block *sb, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    int32_t one = 1;
    uint32_t nc = (uint32_t)nx_cdiv_u64(sb->cw, s->tb);
    uint32_t lanes = nx_kctx_lanes(s->k), out_lanes = lanes - s->in_lanes;
    for (uint32_t kk = 0; kk < nc; kk++) {
        uint32_t cp = sb->cw - kk * s->tb < s->tb ? sb->cw - kk * s->tb : s->tb;
        uint64_t row = sb->b * pl->cols + sb->c0 + (uint64_t)kk * s->tb; /* first output row */
        nx_operand src = nx_tile_view(tile, s->dt, 0, cp, (uint64_t)kk * s->ostride, 1, &one, &sb->rw);
        nx_operand dst = nx_ap_hbm_rows(s->dt, pl->out_offset + (row * pl->rows + sb->r0) * s->size,
                                        cp, (int32_t)pl->rows, sb->rw);
        /* transfers writing the same output rows share a lane (they would
         * otherwise wait for each other); other rows spread over the lanes.
         * A program with fewer row blocks than output lanes cuts each store
         * into pieces of `piece` rows, each on its rows' lane: the pieces'
         * footprint boxes are disjoint (every piece's columns lie within one
         * output row pitch), so all the lanes work. */
        if (s->piece && out_lanes) {
            for (uint32_t p0 = 0; p0 < cp; p0 += s->piece) {
                uint32_t n = cp - p0 < s->piece ? cp - p0 : s->piece;
                nx_operand ps = nx_operand_rows(&src, p0, n), pd = nx_operand_rows(&dst, p0, n);
                uint32_t lane = s->in_lanes + (uint32_t)(((row + p0) / s->piece) % out_lanes);
                if (nx_kctx_dma_on(s->k, lane, &pd, &ps, err) != 0) return -1;
            }
            continue;
        }
        uint32_t lane = out_lanes ? s->in_lanes + (uint32_t)((row / s->tb) % out_lanes) : 0;
        if (nx_kctx_dma_on(s->k, lane, &dst, &src, err) != 0) return -1;
    }
    return 0;
}

static int pf_push(pf_block **v, size_t *n, size_t *cap, pf_block b, nx_error *err) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        pf_block *g = realloc(*v, *cap * sizeof *g);
        if (!g) {
            free(*v);
            *v = NULL;
            return nx_fail(err, "tiled_pf_transpose: out of memory planning blocks");
        }
        *v = g;
    }
    (*v)[(*n)++] = b;
    return 0;
}

/* This program's super-blocks, in emission order. */
static int pf_blocks(pf_state *s, pf_block **out, size_t *n_out, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    uint64_t lo, hi;
    size_t n = 0, cap = 0;
    pf_block *v = NULL;
    if (s->by_rows) {
        /* every batch's rows [lo, hi) in super-block rows: the programs
         * write disjoint column ranges of every output row */
        const uint64_t rstep = s->rstep;
        uint64_t wblocks = nx_cdiv_u64(pl->rows, rstep);
        nx_kctx_rows(s->k, wblocks, &lo, &hi);
        for (uint64_t b = 0; b < pl->batch; b++)
            for (uint64_t rb = lo; rb < hi; rb++)
                for (uint64_t c0 = 0; c0 < pl->cols; c0 += s->w) {
                    uint64_t r0 = rb * rstep;
                    pf_block sb = {b, c0, r0, (uint32_t)(pl->cols - c0 < s->w ? pl->cols - c0 : s->w),
                                   (uint32_t)(pl->rows - r0 < rstep ? pl->rows - r0 : rstep)};
                    if (pf_push(&v, &n, &cap, sb, err) != 0) return -1;
                }
        *out = v;
        *n_out = n;
        return 0;
    }
    nx_kctx_rows(s->k, pl->batch * pl->cols, &lo, &hi);
    for (uint64_t u = lo; u < hi;) {
        uint64_t b = u / pl->cols, c_lo = u % pl->cols;
        uint64_t c_hi = hi - b * pl->cols < pl->cols ? hi - b * pl->cols : pl->cols;
        /* column groups innermost: consecutive super-blocks store to
         * different output rows, hence different lanes */
        for (uint64_t r0 = 0; r0 < pl->rows; r0 += s->w) {
            for (uint64_t c0 = c_lo; c0 < c_hi; c0 += s->w) {
                pf_block sb = {b, c0, r0, (uint32_t)(c_hi - c0 < s->w ? c_hi - c0 : s->w),
                               (uint32_t)(pl->rows - r0 < s->w ? pl->rows - r0 : s->w)};
                if (pf_push(&v, &n, &cap, sb, err) != 0) return -1;
            }
        }
        u = b * pl->cols + c_hi;
    }
    *out = v;
    *n_out = n;
    return 0;
}

int tiled_pf_transpose(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_transpose_plan pl;
    if (nx_transpose_prepare("tiled_pf_transpose", call, &pl, err) != 0) return -1;
    if (pl.copy) return nx_transpose_emit_copy(k, &pl, err);
    const nx_geometry *geo = nx_kctx_geometry(k);
    if (pl.rows > INT32_MAX || pl.cols > INT32_MAX)
        return nx_fail(err, "operand 0 (%s): rows of %llu x %llu elements exceed 32-bit access-pattern strides",
                       call->args[0].name, (unsigned long long)pl.rows, (unsigned long long)pl.cols);
    pf_state s = {0};
    s.k = k;
    s.pl = &pl;
    s.dt = pl.dtype;
    s.size = nx_dtype_size(pl.dtype);
    s.pe_dt = same_size_type(s.size, NX_DT_FP32, NX_DT_BF16, NX_DT_FP8_E4M3);
    s.cp_dt = same_size_type(s.size, NX_DT_UINT32, NX_DT_UINT16, NX_DT_UINT8);
    s.tb = geo->partitions;
    if (geo->pe_rows < s.tb) s.tb = geo->pe_rows;
    if (geo->pe_cols < s.tb) s.tb = geo->pe_cols;
    uint64_t bank_elems = geo->psum_bank_bytes / s.size;
    if (geo->psum_free_elems_max < bank_elems) bank_elems = geo->psum_free_elems_max;
    s.w = (uint32_t)(bank_elems / s.tb * s.tb);
    if (s.w == 0)
        return nx_fail(err, "tiled_pf_transpose: a PSUM bank of %llu bytes cannot hold a %u-element transpose row",
                       (unsigned long long)geo->psum_bank_bytes, s.tb);
    uint64_t stage_bytes = (uint64_t)(s.w / s.tb) * s.w * s.size;
    uint64_t stages = geo->sbuf_partition_bytes * 5 / 8 / (2 * stage_bytes);
    s.stages = (uint32_t)(stages < 2 ? 2 : stages > PF_MAX_STAGES ? PF_MAX_STAGES : stages);
    uint32_t lanes = nx_kctx_lanes(k);
    s.in_lanes = lanes > 1 ? lanes / 2 : 1;
    s.kp = 1;

    {
        uint64_t lo, hi;
        nx_kctx_rows(k, pl.batch * pl.cols, &lo, &hi);
        uint32_t out_lanes = lanes - s.in_lanes;
        /* few output rows per program but long ones: split the input rows
         * instead, so each program loads whole input rows (longer runs) */
        if (nx_kctx_num_programs(k) > 1 && pl.cols <= s.w && nx_cdiv_u64(pl.rows, s.w) >= nx_kctx_num_programs(k) &&
            pl.batch * pl.cols < pl.rows) {
            s.by_rows = 1;
            lo = 0;
            hi = pl.batch * pl.cols;
            /* rows of C elements shorter than an efficient run: kp of them per
             * partition (kp a power of two with kp C <= w, dividing the
             * segments of a PSUM bank; whole segments only) */
            const uint32_t eff = nx_kctx_machine(k)->dma_efficient_bytes_per_partition;
            while (pl.cols * s.size * s.kp * 2 <= eff && pl.cols * s.kp * 2 <= s.w &&
                   (s.w / s.tb) % (s.kp * 2) == 0 && pl.rows % ((uint64_t)s.tb * s.kp * 2) == 0 &&
                   nx_cdiv_u64(pl.cols, s.tb) * s.kp * 2 <= s.w / s.tb)
                s.kp *= 2;
        }
        if (s.by_rows) {
            s.piece = 1; /* one output row each: the two programs' boxes must not overlap */
        } else if (out_lanes > 1 && nx_cdiv_u64(hi - lo, s.tb) < out_lanes) {
            s.piece = (s.tb + out_lanes - 1) / out_lanes;
            if (s.piece < 8) s.piece = 8;
        }
    }
    s.ostride = (uint64_t)s.kp * s.w;
    s.rstep = s.ostride;
    if (s.by_rows) {
        /* enough super-blocks per program to fill the pipeline, each output
         * row piece still at least one efficient run */
        const uint64_t rows_prog = nx_cdiv_u64(pl.rows, nx_kctx_num_programs(k));
        const uint64_t eff_elems = nx_kctx_machine(k)->dma_efficient_bytes_per_partition / s.size;
        const uint64_t floor_rows = (uint64_t)s.tb * s.kp > eff_elems ? (uint64_t)s.tb * s.kp : eff_elems;
        while (s.rstep / 2 >= floor_rows && (s.rstep / 2) % ((uint64_t)s.tb * s.kp) == 0 &&
               nx_cdiv_u64(rows_prog, s.rstep) < 3)
            s.rstep /= 2;
    }
    pf_block *blocks = NULL;
    size_t n = 0;
    if (pf_blocks(&s, &blocks, &n, err) != 0) return -1;
    int rc = -1;
    uint32_t ni = 0, no = 0, np = 0;
    uint32_t stages_used = n < s.stages ? (uint32_t)(n ? n : 1) : s.stages;
    for (; ni < stages_used; ni++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "pf_in", s.dt, s.tb, (uint64_t)(s.w / s.tb) * s.w, &s.in[ni],
                          err) != 0)
            goto done;
    for (; no < stages_used; no++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "pf_out", s.dt, s.tb, (uint64_t)(s.w / s.tb) * s.w,
                          &s.out[no], err) != 0)
            goto done;
    for (; np < PF_PSUM_BUFS; np++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "pf_psum", s.pe_dt, s.tb, s.w, &s.ps[np], err) != 0) goto done;

    /* software pipeline: stores run `ahead` super-blocks behind the loads */
    uint32_t ahead = stages_used - 1;
    for (size_t i = 0; i < n + ahead; i++) {
        if (i < n) {
            const nx_tile *in = &s.in[i % stages_used], *out = &s.out[i % stages_used];
            if (pf_load(&s, &blocks[i], in, err) != 0) goto done;
            if (pf_compute(&s, &blocks[i], in, out, err) != 0) goto done;
        }
        if (i >= ahead) {
            size_t j = i - ahead;
            if (pf_store(&s, &blocks[j], &s.out[j % stages_used], err) != 0) goto done;
        }
    }
    rc = 0;
done:
    free(blocks);
    nx_error rerr;
    while (np > 0) nx_kctx_release(k, &s.ps[--np], &rerr);
    while (no > 0) nx_kctx_release(k, &s.out[--no], &rerr);
    while (ni > 0) nx_kctx_release(k, &s.in[--ni], &rerr);
    return rc;
}
