/* Tiling plan of the dense pixel-by-pixel convolution (conv2d_pbp_plan.h).
 *
 * Channels: a group whose in- and out-features both fit a PE tile is
 * packed with others into a block-diagonal stationary (gp groups per
 * super-group: depthwise with C = 128 runs as one 128 x 128 tile per tap);
 * otherwise each group is cut into contraction steps of pe_rows in-features
 * and cout tiles of pe_cols out-features.
 *
 * SBUF (per partition, of sbuf_partition_bytes less 1/16 for alignment):
 * the filters of `chunk` cout tiles (all of them when they fit 3/8 of it;
 * double-buffered when several chunks follow each other), then 3/4 of the
 * rest for two band buffers and 1/4 for two output staging buffers and the
 * transposed store's two store tiles. A band is R output rows x CW output
 * cols x NB batch: full width and the whole batch first, as many rows as
 * fit but at most a quarter of the output (so that loads overlap compute
 * over at least four bands) and at least one PSUM tile's worth; narrower or
 * batch-split bands only when a full row does not fit.
 *
 * PSUM: one fp32 bank per accumulation tile of q rows x pw cols x nb batch
 * (<= FM = min(pe_moving_free_max, bank / 4) columns), rotating over up to
 * four banks; two more banks for the transposed store.
 *
 * DMA: whether a run is long enough is read against the machine's
 * dma.efficient_bytes_per_partition (pl->dma_run; docs/parts/machine.md). */
#include "conv2d_pbp_plan.h"
#include "isa/intmath.h"

#include <string.h>


static uint64_t rows_in(const pbp_plan *pl, uint64_t R) {
    return (R - 1) * (uint64_t)pl->sy + (pl->KH - 1) * (uint64_t)pl->rdy + 1;
}
static uint64_t cols_in(const pbp_plan *pl, uint64_t CW) {
    return (CW - 1) * (uint64_t)pl->sx + (pl->KW - 1) * (uint64_t)pl->rdx + 1;
}

typedef struct budget {
    uint64_t band, stage; /* bytes per partition per buffer */
    uint64_t free_max;    /* elements one SBUF access may touch */
} budget;

static int band_fits(const pbp_plan *pl, const budget *b, uint64_t R, uint64_t CW, uint64_t NB) {
    uint64_t per_step = rows_in(pl, R) * cols_in(pl, CW) * NB;
    uint64_t stage = R * CW * NB;
    return per_step <= b->free_max && per_step * pl->steps * pl->es <= b->band && stage <= b->free_max &&
           stage * pl->es <= b->stage;
}


/* PSUM tiles of q rows x pw cols x nb batch values (<= FM columns) in a
 * band of R rows x CW cols x NB batch values. */
static void psum_tiles(const pbp_plan *pl, uint64_t R, uint64_t CW, uint64_t NB, uint64_t *q_out, uint64_t *pw_out,
                       uint64_t *nb_out) {
    uint64_t nsub = nx_cdiv_u64(NB, pl->FM);
    uint64_t nb = nx_cdiv_u64(NB, nsub);
    uint64_t pw = nx_min_u64(CW, pl->FM / nb);
    pw = nx_cdiv_u64(CW, nx_cdiv_u64(CW, pw));
    uint64_t q = nx_min_u64(R, pl->FM / (nb * pw));
    if (pl->resident) {
        /* resident image: PSUM tiles of as few rows as keep a matmul at
         * least 64 columns (the PE's minimum initiation interval, below
         * which a narrower multiply costs the same), so that the first
         * tile's rows arrive early and every later tile's rows arrive
         * while the one before computes */
        uint64_t qmin = nx_cdiv_u64(64, nb * pw);
        if (qmin < q) q = qmin;
    }
    *q_out = nx_cdiv_u64(R, nx_cdiv_u64(R, q));
    *pw_out = pw;
    *nb_out = nb;
}

int pbp_plan_make(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes, pbp_plan *pl,
                  nx_error *err) {
    const nx_geometry *geo = &m->geo;
    memset(pl, 0, sizeof *pl);
    pl->dt = pb->dtype;
    pl->es = nx_dtype_size(pb->dtype);
    pl->H = pb->H;
    pl->C = pb->C;
    pl->W = pb->W;
    pl->N = pb->N;
    pl->KH = pb->KH;
    pl->KW = pb->KW;
    pl->O = pb->O;
    pl->OH = pb->OH;
    pl->OW = pb->OW;
    pl->sy = pb->p.stride[0];
    pl->sx = pb->p.stride[1];
    pl->ply = pb->p.pad_lo[0];
    pl->plx = pb->p.pad_lo[1];
    pl->rdy = pb->p.rhs_dilation[0];
    pl->rdx = pb->p.rhs_dilation[1];
    pl->G = (uint64_t)pb->p.feature_group_count;
    pl->Cg = pb->C / pl->G;
    pl->Og = pb->O / pl->G;

    pl->PR = geo->pe_rows < geo->partitions ? geo->pe_rows : geo->partitions;
    pl->PC = geo->pe_cols < geo->partitions ? geo->pe_cols : geo->partitions;
    uint64_t bank_fp32 = geo->psum_bank_bytes / 4;
    pl->FM = (uint32_t)nx_min_u64(geo->pe_moving_free_max, nx_min_u64(bank_fp32, geo->psum_free_elems_max));
    if (pl->FM == 0 || pl->PR == 0 || pl->PC == 0)
        return nx_fail(err, "conv: the machine geometry has no room for a PE tile (pe %ux%u, moving %u)", geo->pe_rows,
                       geo->pe_cols, geo->pe_moving_free_max);
    pl->lanes = lanes ? lanes : 1;
    /* the context's lanes cover every DMA engine twice (kernels/author/author.h:
     * lane l is engine l mod 16, queue l / 16): a spread over half of them
     * uses each engine once */
    pl->pieces = pl->lanes > 1 ? pl->lanes / 2 : 1;
    pl->dma_run = m->dma_efficient_bytes_per_partition;

    /* ---- channel blocks ---- */
    if (pl->G > 1 && pl->Cg <= pl->PR && pl->Og <= pl->PC) {
        pl->gp = nx_min_u64(pl->G, nx_min_u64(pl->PR / pl->Cg, pl->PC / pl->Og));
        pl->nsg = nx_cdiv_u64(pl->G, pl->gp);
        pl->steps = 1;
        pl->kc = (uint32_t)(pl->gp * pl->Cg);
        pl->mo = (uint32_t)(pl->gp * pl->Og);
        pl->couts = 1;
    } else {
        pl->gp = 1;
        pl->nsg = pl->G;
        pl->steps = (uint32_t)nx_cdiv_u64(pl->Cg, pl->PR);
        pl->kc = (uint32_t)nx_min_u64(pl->Cg, pl->PR);
        pl->couts = (uint32_t)nx_cdiv_u64(pl->Og, pl->PC);
        pl->mo = (uint32_t)nx_min_u64(pl->Og, pl->PC);
    }

    /* ---- SBUF budgets ---- */
    uint64_t avail = geo->sbuf_partition_bytes - geo->sbuf_partition_bytes / 16;
    uint64_t taps = pl->KH * pl->KW;
    uint64_t per_cout = (uint64_t)pl->steps * taps * pl->mo; /* filter elements of one cout tile */
    uint64_t filt_cap = avail * 3 / 8;
    if (per_cout * pl->es > filt_cap)
        return nx_fail(err, "conv: the filter of one %u-wide cout tile (%llu taps x %u in-features) needs %llu bytes per "
                       "partition, more than the %llu SBUF bytes it may take",
                       pl->mo, (unsigned long long)taps, (unsigned)(pl->steps * pl->kc),
                       (unsigned long long)(per_cout * pl->es), (unsigned long long)filt_cap);
    if (per_cout * pl->couts * pl->es <= filt_cap && pl->nsg == 1) {
        pl->chunk = pl->couts; /* every filter resident: one buffer */
        pl->filt_bufs = 1;
    } else {
        uint64_t c = (filt_cap / 2) / (per_cout * pl->es); /* double-buffered chunks */
        if (c == 0) {
            pl->chunk = 1;
            pl->filt_bufs = 1;
        } else {
            pl->chunk = (uint32_t)nx_min_u64(c, pl->couts);
            pl->filt_bufs = pl->nsg * nx_cdiv_u64(pl->couts, pl->chunk) > 1 ? 2 : 1;
        }
    }
    pl->filt_elems = per_cout * pl->chunk;
    /* #4's filter as it lies: one run of O x KH x KW per in-feature */
    pl->filt_iohw = pb->filt_iohw && pl->gp == 1 && pl->nsg == 1 && pl->chunk == pl->couts && pl->filt_bufs == 1;
    if (pl->filt_elems > geo->sbuf_free_elems_max && pl->gp > 1)
        return nx_fail(err, "conv: a block-diagonal filter tile of %llu elements per partition exceeds the %u-element "
                       "SBUF access limit", (unsigned long long)pl->filt_elems, geo->sbuf_free_elems_max);
    uint64_t rest = avail - pl->filt_bufs * pl->filt_elems * pl->es;
    budget b = {rest * 3 / 8, rest / 16, geo->sbuf_free_elems_max}; /* 2 bands, 2 stages + 2 store tiles */

    /* ---- bands ---- */
    pl->band_bufs = 2;
    pl->stage_bufs = 2;
    pl->nph = 1;
    uint64_t NB = pl->N, CW = pl->OW, R = 1;
    if (!band_fits(pl, &b, 1, CW, NB)) {
        /* narrower bands, then batch-split ones */
        while (CW > 1 && !band_fits(pl, &b, 1, CW, NB)) CW = (CW + 1) / 2;
        while (NB > 1 && !band_fits(pl, &b, 1, CW, NB)) NB = (NB + 1) / 2;
        if (!band_fits(pl, &b, 1, CW, NB))
            return nx_fail(err, "conv: one output pixel's input window (%llu x %llu taps apart by rhs_dilation, %u "
                           "in-feature steps) needs %llu bytes per partition, more than the %llu SBUF bytes a band may take",
                           (unsigned long long)rows_in(pl, 1), (unsigned long long)cols_in(pl, 1), pl->steps,
                           (unsigned long long)(rows_in(pl, 1) * cols_in(pl, 1) * pl->steps * pl->es),
                           (unsigned long long)b.band);
        /* grow back as far as it fits (CW only shrank by halving) */
        while (CW < pl->OW && band_fits(pl, &b, 1, CW + 1, NB)) CW++;
    }
    while (R < pl->OH && band_fits(pl, &b, R + 1, CW, NB)) R++;
    /* pipelining: at least four bands when the output has four rows, but
     * each band at least one full PSUM tile */
    uint64_t r_psum = nx_cdiv_u64(pl->FM, CW * NB);
    uint64_t r_cap = nx_max_u64(nx_cdiv_u64(pl->OH, 4), r_psum);
    if (R > r_cap) R = r_cap;
    uint64_t nbands = nx_cdiv_u64(pl->OH, R);
    R = nx_cdiv_u64(pl->OH, nbands);
    uint64_t ncb = nx_cdiv_u64(pl->OW, CW);
    CW = nx_cdiv_u64(pl->OW, ncb);
    uint64_t nnb = nx_cdiv_u64(pl->N, NB);
    NB = nx_cdiv_u64(pl->N, nnb);
    /* the whole padded image resident in SBUF: one tile, no halo loaded
     * twice, every band's load issued at once (a single channel block) */
    uint64_t all_rows = rows_in(pl, pl->OH), all_cols = cols_in(pl, pl->OW);
    uint64_t whole = (uint64_t)pl->steps * all_rows * all_cols * pl->N;
    if (pl->nsg == 1 && pl->chunk == pl->couts && NB == pl->N && CW == pl->OW && whole * pl->es <= 2 * b.band) {
        pl->resident = 1;
        /* stores in bands of about a quarter of the image, or a third when
         * that makes fewer store groups (pixels in pieces of PC partitions)
         * with a batch: a transposed store costs N PE transposes per group
         * whatever its pixels, so fewer groups mean fewer transposes, while
         * the first two bands' stores still overlap the matmuls (28x28x128
         * s2, batch 8, #4: 17.0 -> 16.6 us bf16, 39.2 -> 39.1 fp32); with
         * N = 1 that is one transpose a group and the shorter last band of
         * quarters wins (56x56x64: 59.2 against 59.9 us, #3 fp32), and at
         * equal groups too (28x28x128 stride 1, batch 8: 280-pixel bands
         * of thirds need 3 groups each) */
        uint64_t r_stage = nx_min_u64(b.stage / (CW * NB * pl->es), b.free_max / (CW * NB));
        uint64_t best = 0;
        for (uint64_t parts = 4; parts >= 3; parts--) {
            uint64_t r = nx_cdiv_u64(pl->OH, parts);
            if (r > r_stage) r = r_stage;
            if (r > pl->OH) r = pl->OH;
            if (r < 1) r = 1;
            r = nx_cdiv_u64(pl->OH, nx_cdiv_u64(pl->OH, r));
            uint64_t groups = 0;
            for (uint64_t y = 0; y < pl->OH; y += r) groups += nx_cdiv_u64(nx_min_u64(r, pl->OH - y) * CW, pl->PC);
            if (parts == 4 || (pl->N > 1 && groups < best)) {
                R = r;
                best = groups;
            }
        }
        nbands = nx_cdiv_u64(pl->OH, R);
    }
    pl->R = R;
    /* the first band: just enough rows for matmuls of at least the PE's
     * minimum initiation interval's worth of columns (64), so that the PE
     * starts early; only when the bands are many */
    pl->R0 = R;
    if (nbands >= 3 && !pl->resident) {
        uint64_t r0 = nx_cdiv_u64(64, CW * NB);
        pl->R0 = r0 < R ? r0 : R;
    }
    pl->CW = CW;
    pl->NB = NB;
    pl->rows_in = pl->resident ? all_rows : rows_in(pl, R);
    pl->cols_in = cols_in(pl, CW);
    pl->band_elems = (uint64_t)pl->steps * pl->rows_in * pl->cols_in * NB;
    pl->stage_elems = R * CW * NB;

    /* ---- PSUM tiles ---- */
    psum_tiles(pl, R, CW, NB, &pl->q, &pl->pw, &pl->nb);
    uint32_t banks = (uint32_t)(geo->psum_partition_bytes / geo->psum_bank_bytes);

    /* ---- rows-first loading of the resident image ---- */
    /* When the image's runs of W x N elements are short (a quarter of an
     * efficient DMA row), load whole image rows (runs of C x W x N) with H
     * on the partitions and put C on the partitions by PE transposes (one
     * per (w, n) column, at least 64 PE cycles each) instead. */
    uint64_t rt_raw = (uint64_t)pl->kc * pl->W * pl->N;
    uint64_t cn_raw = pl->N * pl->H * pl->W;
    if (pb->img_cnhw) {
        /* #4's image: C already on the partitions with long runs; only the
         * reorder into the padded band is left (no rows-first transposes) */
        if (pl->resident && cn_raw <= b.free_max && (whole + cn_raw) * pl->es <= 2 * b.band) {
            pl->cnhw = 1;
            pl->cn_elems = cn_raw;
            pl->cn_bufs = pl->steps > 1 && (whole + 2 * cn_raw) * pl->es <= 2 * b.band ? 2 : 1;
            /* one step and one cout tile: the first matmul waits for the
             * whole image and the filter (one DMA-bound stretch, 6.5 us at
             * 28x28x128 s2 bf16, batch 8). Loaded filter first, then the
             * image in batch parts (each a contiguous run per partition):
             * the first as small as keeps an efficient DMA row, the next as
             * large as the parts before it together (so each arrives while
             * the PE computes those), at most PBP_MAX_PARTS; every band's
             * tiles of one part compute while the next part loads; each
             * band's stage stays until the last part, then it is stored as
             * before. Ungrouped only: a packed grouped filter (a POOL memset,
             * one transfer per group) loaded first holds the image back
             * (28x28x128 G = 32, batch 8: 50.7 against 44.6 us) */
            uint64_t nbands = nx_cdiv_u64(pl->OH, R), per_n = pl->H * pl->W * pl->es;
            uint64_t m0 = nx_cdiv_u64(pl->dma_run, per_n);
            if (pl->steps == 1 && pl->chunk == 1 && pl->couts == 1 && pl->G == 1 && 2 * m0 <= pl->N &&
                nbands <= PBP_MAX_STAGES && nbands * pl->stage_elems * pl->es <= 2 * b.stage) {
                uint32_t k = 0;
                uint64_t n0 = 0, base = 0;
                while (n0 < pl->N) {
                    uint64_t size = k == 0 ? m0 : n0;
                    if (k + 1 == PBP_MAX_PARTS || n0 + size + m0 > pl->N) size = pl->N - n0;
                    pl->ph_n0[k] = n0;
                    pl->ph_base[k] = base;
                    psum_tiles(pl, R, CW, size, &pl->ph_q[k], &pl->ph_pw[k], &pl->ph_nb[k]);
                    base += pl->rows_in * pl->cols_in * size;
                    n0 += size;
                    k++;
                }
                pl->ph_n0[k] = pl->N;
                pl->nph = k;
                pl->stage_bufs = (uint32_t)nbands;
            }
        }
    } else if (pl->resident && pl->W * pl->N * pl->es < pl->dma_run / 4 && banks >= 7 &&
        rt_raw <= b.free_max && (whole + rt_raw) * pl->es <= 2 * b.band) {
        pl->rt = 1;
        pl->rt_rows = (uint32_t)nx_min_u64(nx_min_u64(pl->PR, geo->partitions), pl->H);
        /* a short image: several full contraction steps' rows stacked on
         * the partitions, so that one transpose (whose cost does not grow
         * with its partitions up to the PE's minimum interval) moves them
         * all */
        pl->rt_spu = 1;
        if (pl->Cg % pl->kc == 0 && pl->steps > 1)
            pl->rt_spu = (uint32_t)nx_min_u64(pl->steps, nx_min_u64(pl->PR, geo->partitions) / pl->rt_rows);
        if (pl->rt_spu < 1) pl->rt_spu = 1;
        pl->rt_pad = nx_pow2_ceil_u32(pl->rt_rows * pl->rt_spu);
        pl->rt_elems = rt_raw;
        uint64_t units = nx_cdiv_u64(pl->steps, pl->rt_spu) * nx_cdiv_u64(pl->H, pl->rt_rows);
        pl->rt_bufs = units > 1 && (whole + 2 * rt_raw) * pl->es <= 2 * b.band ? 2 : 1;
        if ((uint64_t)pl->rt_pad * pl->es > geo->psum_bank_bytes || geo->psum_bank_bytes % (pl->rt_pad * pl->es))
            pl->rt = 0;
    }
    uint32_t reserve = pl->rt ? 2 : 0; /* the transposed store's 2 banks come on top below */
    pl->psum_bufs = banks >= 6 + reserve ? 4 : banks > 2 + reserve ? banks - 2 - reserve : 1;

    /* ---- output store ---- */
    pl->store = PBP_STORE_DIRECT;
    uint64_t direct_run = NB * pl->es;
    if (NB == pl->N && direct_run < pl->dma_run && banks >= 3 && pl->mo > 1) {
        uint32_t mo_pad = nx_pow2_ceil_u32(pl->mo);
        uint64_t block = (uint64_t)mo_pad * pl->es;
        int whole = pl->mo == pl->O && CW == pl->OW; /* runs continue across pixels */
        if (block <= geo->psum_bank_bytes && geo->psum_bank_bytes % block == 0) {
            uint64_t k = 1;
            if (whole) {
                k = nx_cdiv_u64(pl->dma_run, pl->O * pl->N * pl->es);
                k = nx_min_u64(k, geo->psum_bank_bytes / block);
                k = nx_min_u64(k, nx_cdiv_u64(R * CW, pl->PC));
                if (k < 1) k = 1;
            }
            uint64_t tstore = k * pl->mo * pl->N;
            while (k > 1 && (tstore > b.free_max || tstore * pl->es > b.stage)) {
                k--;
                tstore = k * pl->mo * pl->N;
            }
            uint64_t run_t = whole ? k * pl->O * pl->N : (uint64_t)pl->mo * pl->N;
            if (tstore <= b.free_max && tstore * pl->es <= b.stage && run_t > NB) {
                pl->store = PBP_STORE_TRANSPOSED;
                pl->kpack = (uint32_t)k;
                pl->mo_pad = mo_pad;
                pl->ns = nx_min_u64(pl->N, geo->psum_bank_bytes / (k * block));
                if (pl->ns < 1) pl->ns = 1;
                pl->tstore_elems = tstore;
            }
        }
    }
    pl->out_01bf = pb->out_01bf && pl->store == PBP_STORE_TRANSPOSED && NB == pl->N;
    /* runs of mo x N per pixel are short: keep the band's cout tiles staged
     * together and store each pixel's N x O run at once, when the extra
     * stages and the wider store tile fit the staging budget */
    if (pl->out_01bf && pl->couts > 1 && pl->chunk == pl->couts && pl->nsg == 1 && pl->kpack == 1 && CW == pl->OW &&
        pl->couts + 1 <= PBP_MAX_STAGES && (uint64_t)(pl->couts + 1) * pl->stage_elems * pl->es <= 2 * b.stage &&
        pl->N * pl->O <= b.free_max && pl->N * pl->O * pl->es <= b.stage) {
        pl->out_comb = 1;
        pl->stage_bufs = pl->couts + 1;
        pl->tstore_elems = pl->N * pl->O;
    }
    return 0;
}

/* Which of #4's in-place routes the plan grants when asked for one. */
typedef enum pbp_route { PBP_ROUTE_CNHW, PBP_ROUTE_IOHW, PBP_ROUTE_01BF } pbp_route;

static int takes_route(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes, pbp_route r) {
    nx_conv_pbp q = *pb;
    if (r == PBP_ROUTE_CNHW) q.img_cnhw = 1;
    if (r == PBP_ROUTE_IOHW) q.filt_iohw = 1;
    if (r == PBP_ROUTE_01BF) q.out_01bf = 1;
    pbp_plan pl;
    nx_error err;
    if (pbp_plan_make(&q, m, lanes, &pl, &err) != 0) return 0;
    return r == PBP_ROUTE_CNHW ? pl.cnhw : r == PBP_ROUTE_IOHW ? pl.filt_iohw : pl.out_01bf;
}

int nx_conv_pbp_takes_cnhw(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes) {
    return takes_route(pb, m, lanes, PBP_ROUTE_CNHW);
}

int nx_conv_pbp_takes_iohw(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes) {
    return takes_route(pb, m, lanes, PBP_ROUTE_IOHW);
}

int nx_conv_pbp_takes_01bf(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes) {
    return takes_route(pb, m, lanes, PBP_ROUTE_01BF);
}
