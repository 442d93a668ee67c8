/* conv2d_pbp_0f1b_0i1o_01fb_experimental_1: a dense 2-D convolution on the
 * PE array, img (H, C, W, N), filt (KH, C/G, KW, O) -> out (OH, OW, O, N).
 *
 * Follows the public AWS Neuron kernel of the same name
 * (neuronxcc.nki._private_kernels.conv): "pixel by pixel" (pbp), each
 * output pixel's [C_out, N] block accumulated in a PSUM bank over the
 * filter taps, the filter prefetched into SBUF, C_out in tiles of 128 on
 * the PSUM partitions, the batch N on the moving free axis in tiles of 512.
 * That kernel contracts over the filter height on the partitions (K =
 * KH), takes stride 1 and symmetric padding only, and loads each pixel's
 * window separately. This one goes past it:
 *  - contraction over C_in in tiles of pe_rows (128) on the partitions:
 *    stationary = filter slice [C_in tile, C_out tile] of one tap, moving =
 *    image slice [C_in tile, pixels x N], accumulated in PSUM over taps and
 *    C_in tiles (start flag on the first, accumulate after);
 *  - several output pixels per moving tile (q rows x pw cols x nb batch up
 *    to one fp32 bank, 512 columns) when N < 512, read straight out of an
 *    SBUF band through a strided access pattern (stride, rhs_dilation);
 *  - input bands of R output rows with their halo, zero-padded in SBUF
 *    (asymmetric and negative padding: crop = a shifted window), loaded
 *    with long runs over many DMA queues, double-buffered so the next
 *    band's load overlaps this band's matmuls;
 *  - feature_group_count G: groups that fit a PE tile are packed
 *    block-diagonally into one stationary (depthwise with a channel
 *    multiplier included); larger groups are tiled like a dense conv;
 *  - PSUM evacuated by ACT and DVE in turn (converting to the out dtype)
 *    into a staging tile per band; stored directly (C_out on partitions)
 *    when N is long enough for efficient DMA runs, else PE-transposed so
 *    that each partition stores k pixels x C_out x N contiguous bytes;
 *  - every size from the machine description: its geometry and its DMA
 *    row figure (kernels/conv/forward/conv2d_pbp_plan.c).
 * This file is the driver (the jobs, the tiles, the software pipeline) and
 * the leaf; the other parts are listed in conv2d_pbp_emit.h.
 * docs/parts/conv.md describes the tiling and its measured speed. */
#include <stdlib.h>
#include <string.h>

#include "conv2d_pbp_emit.h"

static int make_jobs(const pbp_plan *pl, pbp_job **out, size_t *n_out, nx_error *err) {
    uint64_t nnb = nx_cdiv_u64(pl->N, pl->NB), nch = nx_cdiv_u64(pl->couts, pl->chunk);
    /* row bands: a short first band (the PE starts as soon as it is in),
     * then bands of R rows */
    uint64_t nrb = pl->OH > pl->R0 ? 1 + nx_cdiv_u64(pl->OH - pl->R0, pl->R) : 1, ncb = nx_cdiv_u64(pl->OW, pl->CW);
    uint64_t total = nnb * pl->nsg * nch * nrb * ncb;
    if (total > (UINT64_C(1) << 24))
        return nx_fail(err, "conv: %llu bands to trace (more than 2^24)", (unsigned long long)total);
    pbp_job *v = malloc((size_t)total * sizeof *v);
    if (!v) return nx_fail(err, "conv: out of memory planning %llu bands", (unsigned long long)total);
    size_t n = 0;
    uint32_t fb = 0;
    uint64_t res_rows = 0;
    for (uint64_t nbk = 0; nbk < nnb; nbk++)
        for (uint64_t sg = 0; sg < pl->nsg; sg++)
            for (uint64_t ch = 0; ch < nch; ch++) {
                int first = 1;
                for (uint64_t rb = 0; rb < nrb; rb++)
                    for (uint64_t cb = 0; cb < ncb; cb++) {
                        pbp_job *j = &v[n++];
                        j->n0 = nbk * pl->NB;
                        j->nbb = nx_min_u64(pl->NB, pl->N - j->n0);
                        j->sg = sg;
                        j->t0 = (uint32_t)(ch * pl->chunk);
                        j->nt = (uint32_t)nx_min_u64(pl->chunk, pl->couts - j->t0);
                        j->oy0 = rb ? pl->R0 + (rb - 1) * pl->R : 0;
                        j->rb = nx_min_u64(rb ? pl->R : pl->R0, pl->OH - j->oy0);
                        j->ox0 = cb * pl->CW;
                        j->cwb = nx_min_u64(pl->CW, pl->OW - j->ox0);
                        if (pl->resident) {
                            /* one tile holds the whole padded image: a
                             * band loads the rows no earlier band loaded */
                            uint64_t rin = (j->rb - 1) * (uint64_t)pl->sy + (pl->KH - 1) * (uint64_t)pl->rdy + 1;
                            j->trow0 = j->oy0 * (uint64_t)pl->sy;
                            j->load_lo = res_rows > j->trow0 ? res_rows - j->trow0 : 0;
                            if (j->load_lo > rin) j->load_lo = rin;
                            if (j->trow0 + rin > res_rows) res_rows = j->trow0 + rin;
                        } else {
                            j->trow0 = 0;
                            j->load_lo = 0;
                        }
                        /* the filter chunk is reloaded per batch block only
                         * when there are several chunks */
                        int reload = first && (nbk == 0 || pl->nsg * nch > 1);
                        if (reload && n > 1) fb = (fb + 1) % pl->filt_bufs;
                        j->fbuf = fb;
                        j->new_chunk = reload;
                        first = 0;
                    }
            }
    *out = v;
    *n_out = n;
    return 0;
}

int nx_conv_pbp_emit(nx_kctx *k, const nx_conv_pbp *pb, nx_error *err) {
    pbp_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    s.pb = pb;
    pbp_plan *pl = &s.pl;
    if (pbp_plan_make(pb, nx_kctx_machine(k), nx_kctx_lanes(k), pl, err) != 0) return -1;
    if (pb->out_01bf && !pl->out_01bf)
        return nx_fail(err, "conv: an (OH, OW, N, O) result needs the transposed store (nx_conv_pbp_takes_01bf)");
    if (pb->filt_iohw && !pl->filt_iohw)
        return nx_fail(err, "conv: a (C/G, O, KH, KW) filter needs one resident ungrouped chunk (nx_conv_pbp_takes_iohw)");
    if (pb->img_cnhw && !pl->cnhw)
        return nx_fail(err, "conv: a (C, N, H, W) image needs the resident plan (nx_conv_pbp_takes_cnhw)");
    pbp_job *jobs = NULL;
    size_t nj = 0;
    if (make_jobs(pl, &jobs, &nj, err) != 0) return -1;

    int rc = -1;
    nx_tile *made[32];
    uint32_t nmade = 0;
#define ALLOC(mem, name, dt, parts, elems, t)                                                 \
    do {                                                                                      \
        if (nx_kctx_alloc(k, mem, name, dt, parts, elems, t, err) != 0) goto done;            \
        made[nmade++] = (t);                                                                  \
    } while (0)
    uint32_t bands = nj > 1 && !pl->resident ? 2 : 1;
    for (uint32_t i = 0; i < pl->filt_bufs; i++) ALLOC(NX_OPK_SBUF, "conv_filt", pl->dt, pl->PR, pl->filt_elems, &s.filt[i]);
    for (uint32_t i = 0; i < bands; i++) ALLOC(NX_OPK_SBUF, "conv_band", pl->dt, pl->PR, pl->band_elems, &s.band[i]);
    for (uint32_t i = 0; i < pl->stage_bufs; i++) ALLOC(NX_OPK_SBUF, "conv_stage", pl->dt, pl->PC, pl->stage_elems, &s.stage[i]);
    if (pl->gp > 1 && pl->Cg == 1)
        ALLOC(NX_OPK_SBUF, "conv_filt_compact", pl->dt, pl->PR, pl->KH * pl->KW * pl->Og, &s.compact);
    for (uint32_t i = 0; i < pl->psum_bufs; i++) ALLOC(NX_OPK_PSUM, "conv_psum", NX_DT_FP32, pl->PC, pl->FM, &s.psum[i]);
    if (pl->rt) {
        const nx_geometry *geo = nx_kctx_geometry(k);
        for (uint32_t i = 0; i < pl->rt_bufs; i++)
            ALLOC(NX_OPK_SBUF, "conv_raw_rows", pl->dt, pl->rt_rows * pl->rt_spu, pl->rt_elems, &s.raw[i]);
        for (uint32_t i = 0; i < 2; i++)
            ALLOC(NX_OPK_PSUM, "conv_rt_psum", pl->dt, pl->PR, geo->psum_bank_bytes / pl->es, &s.rt_psum[i]);
    }
    if (pl->cnhw)
        for (uint32_t i = 0; i < pl->cn_bufs; i++)
            ALLOC(NX_OPK_SBUF, "conv_raw_cnhw", pl->dt, pl->PR, pl->cn_elems, &s.raw[i]);
    if (pl->store == PBP_STORE_TRANSPOSED) {
        const nx_geometry *geo = nx_kctx_geometry(k);
        for (uint32_t i = 0; i < 2; i++) {
            ALLOC(NX_OPK_SBUF, "conv_tstore", pl->dt, pl->PC, pl->tstore_elems, &s.tstore[i]);
            ALLOC(NX_OPK_PSUM, "conv_tpsum", pl->dt, pl->PC, geo->psum_bank_bytes / pl->es, &s.tpsum[i]);
        }
    }
#undef ALLOC

    if (pl->resident) {
        /* the whole image at once, band by band: each band's matmuls wait
         * only for the transfers of the rows they read */
        if (pl->nph > 1) {
            /* batch parts: every band's tiles of one part after the other,
             * each part reordered just before them; the bands are stored
             * with the last part's tiles */
            if (nx_pbp_load_image_cnhw_parts(&s, &s.band[0], &jobs[0], err) != 0) goto done;
            s.phased = 1;
            for (uint32_t ph = 0; ph < pl->nph; ph++) {
                if (nx_pbp_reorder_cnhw_part(&s, &s.band[0], ph, err) != 0) goto done;
                s.phase = ph;
                for (size_t i = 0; i < nj; i++) {
                    s.phase_stg = &s.stage[i];
                    if (nx_pbp_compute_job(&s, &jobs[i], &s.band[0], err) != 0) goto done;
                }
            }
            s.tail = 1;
            if (nx_pbp_flush_store(&s, err) != 0) goto done;
            rc = 0;
            goto done;
        }
        if (pl->rt) {
            if (nx_pbp_load_image_rt(&s, &s.band[0], &jobs[0], err) != 0) goto done;
        } else if (pl->cnhw) {
            if (nx_pbp_load_image_cnhw(&s, &s.band[0], &jobs[0], err) != 0) goto done;
        } else {
            if (nx_pbp_load_filters(&s, &jobs[0], err) != 0) goto done;
            for (size_t i = 0; i < nj; i++)
                if (nx_pbp_load_band(&s, &jobs[i], &s.band[0], err) != 0) goto done;
        }
        for (size_t i = 0; i < nj; i++)
            if (nx_pbp_compute_job(&s, &jobs[i], &s.band[0], err) != 0) goto done;
        s.tail = 1;
        if (nx_pbp_flush_store(&s, err) != 0) goto done;
        rc = 0;
        goto done;
    }
    /* software pipeline: job i + 1's filters and band are requested before
     * job i's matmuls, so they load while job i computes */
    if (jobs[0].new_chunk && nx_pbp_load_filters(&s, &jobs[0], err) != 0) goto done;
    if (nx_pbp_load_band(&s, &jobs[0], &s.band[0], err) != 0) goto done;
    for (size_t i = 0; i < nj; i++) {
        /* a next chunk in the same (single) filter buffer must follow this
         * job's reads of it in emission order, which is the program's meaning */
        int late = i + 1 < nj && jobs[i + 1].new_chunk && jobs[i + 1].fbuf == jobs[i].fbuf;
        if (i + 1 < nj) {
            if (jobs[i + 1].new_chunk && !late && nx_pbp_load_filters(&s, &jobs[i + 1], err) != 0) goto done;
            if (nx_pbp_load_band(&s, &jobs[i + 1], &s.band[(i + 1) % bands], err) != 0) goto done;
        }
        if (nx_pbp_compute_job(&s, &jobs[i], &s.band[i % bands], err) != 0) goto done;
        if (late && nx_pbp_load_filters(&s, &jobs[i + 1], err) != 0) goto done;
    }
    s.tail = 1;
    if (nx_pbp_flush_store(&s, err) != 0) goto done;
    rc = 0;
done:
    free(jobs);
    nx_error rerr;
    while (nmade > 0) nx_kctx_release(k, made[--nmade], &rerr);
    return rc;
}

int conv2d_pbp_0f1b_0i1o_01fb_experimental_1(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_conv_pbp pb;
    if (nx_conv_pbp_from_call("conv2d_pbp_0f1b_0i1o_01fb_experimental_1", "0f1b_0i1o->01fb", call, &pb, err) != 0)
        return -1;
    return nx_conv_pbp_emit(k, &pb, err);
}
