/* collective_matmul: the tensor-parallel matmul with the contraction split
 * over the cores (Megatron-LM's row-parallel linear layer, Shoeybi et al.
 * 2019: each rank holds a K slice of A and B, the partial products are
 * all-reduced), with the all-reduce overlapped with the matmuls as the
 * "collective matmul" decomposition does (Wang et al., "Overlap
 * Communication with Dependent Computation via Decomposition in Large Deep
 * Learning Models", ASPLOS 2023): the exchange of result tile i runs while
 * the PE multiplies tile i + 1. Goes past the paper's ring in a two-core
 * grid: each core owns a share of the rows of every result tile (a
 * reduce-scatter into the output), so it sends and receives half a tile.
 *
 * Plan per core (collective_matmul.h): the matmul composite's tiling
 * (kernels/matmul/matmul_tiles.h: blocks of up to 6 row tiles x N tiles of
 * 512, K tiles of 128 on the partitions, B loads 14 steps ahead) on this
 * core's K range, over every result tile. After an N tile's multiplies each
 * PSUM tile is copied (ACT / DVE alternately) to an fp32 SBUF partial tile,
 * freeing the bank; the N tile's tiles are one collective round (a group of
 * up to 6 buffers): begin stages the other core's rows to the scratch and
 * passes the ranged barrier, and the round is ended one N tile later (the
 * other core's rows added into this core's share by an accumulating DMA),
 * then the share is rounded to the result dtype and stored. So the PE only
 * waits for an exchange at the very end. */
#include "collective_matmul.h"

#include <string.h>

#include "kernels/author/collective.h"
#include "kernels/matmul/matmul_tiles.h"

#define CM_GROUP MM_MB_MAX

typedef struct cm_tile {
    uint64_t bi, m0, n0;
    uint32_t mw, nw;
} cm_tile;

typedef struct cm_state {
    nx_coll coll;
    int scatter;
    nx_tile part[2][CM_GROUP]; /* fp32 partial products of two N tiles' groups */
    cm_tile tiles[2][CM_GROUP];
    uint32_t ntiles[2];
    uint32_t cur;   /* the group being filled */
    int pending;    /* the other group's round is open */
    uint64_t copies;
} cm_state;

/* This core's share of a tile's rows. */
static void cm_share(const mm_state *s, uint32_t mw, uint64_t *lo, uint64_t *hi) {
    nx_coll_share(s->k, nx_kctx_program_id(s->k), mw, lo, hi);
}

static int cm_tile_out(mm_state *s, uint64_t bi, uint64_t m0, uint32_t mw, uint64_t n0, uint32_t nw,
                       const nx_operand *acc, nx_error *err) {
    cm_state *c = s->user;
    const uint32_t i = c->ntiles[c->cur]++;
    c->tiles[c->cur][i] = (cm_tile){bi, m0, n0, mw, nw};
    nx_operand pd = nx_rows_view(&c->part[c->cur][i], NX_DT_FP32, mw, 0, nw);
    return nx_kctx_tensor_copy(s->k, c->copies++ % 2 ? NX_ENG_DVE : NX_ENG_ACT, &pd, acc, err);
}

/* The shares of group g, rounded to the result dtype and stored. */
static int cm_store(mm_state *s, cm_state *c, uint32_t g, nx_error *err) {
    const nx_matmul_params *p = s->p;
    for (uint32_t i = 0; i < c->ntiles[g]; i++, s->outs++) {
        const cm_tile *t = &c->tiles[g][i];
        uint64_t lo, hi;
        cm_share(s, t->mw, &lo, &hi);
        if (hi == lo) continue;
        const nx_tile *ot = &s->ot[s->outs % MM_OBUFS];
        const int32_t one = 1;
        const uint32_t nw = t->nw;
        nx_operand from = nx_tile_view(&c->part[g][i], NX_DT_FP32, (uint32_t)lo, (uint32_t)(hi - lo), 0, 1, &one, &nw);
        nx_operand to = nx_tile_view(ot, s->dt, (uint32_t)lo, (uint32_t)(hi - lo), 0, 1, &one, &nw);
        nx_operand cd = nx_ap_hbm_rows(s->dt, s->C->hbm_offset + ((t->bi * p->M + t->m0 + lo) * p->N + t->n0) * s->es,
                                       (uint32_t)(hi - lo), (int32_t)p->N, nw);
        if (nx_kctx_tensor_copy(s->k, s->outs % 2 ? NX_ENG_DVE : NX_ENG_ACT, &to, &from, err) != 0 ||
            nx_rows_store(&s->r, &cd, &to, err) != 0)
            return -1;
    }
    c->ntiles[g] = 0;
    return 0;
}

/* Ends the open round (the other group) and stores it. */
static int cm_finish_pending(mm_state *s, cm_state *c, nx_error *err) {
    if (!c->pending) return 0;
    c->pending = 0;
    return nx_coll_end(s->k, &c->coll, err) != 0 ? -1 : cm_store(s, c, 1 - c->cur, err);
}

static int cm_ntile_end(mm_state *s, nx_error *err) {
    cm_state *c = s->user;
    const uint32_t g = c->cur;
    /* the last round's reads come before this round's barrier (collective.h) */
    if (c->pending && nx_coll_end(s->k, &c->coll, err) != 0) return -1;
    nx_coll_buf src[CM_GROUP], dst[CM_GROUP];
    for (uint32_t i = 0; i < c->ntiles[g]; i++) {
        const cm_tile *t = &c->tiles[g][i];
        src[i] = nx_coll_tile(&c->part[g][i], 0, t->mw, 0, t->nw);
        uint64_t lo, hi;
        cm_share(s, t->mw, &lo, &hi);
        dst[i] = c->scatter ? nx_coll_rows(&src[i], lo, hi - lo) : src[i];
    }
    if (nx_coll_begin(s->k, &c->coll, c->scatter ? NX_COLL_REDUCE_SCATTER : NX_COLL_ALL_REDUCE, c->ntiles[g], src,
                      dst, err) != 0)
        return -1;
    /* the last round's stores after this round's staging: the SP never
     * holds this round back behind them */
    if (c->pending && cm_store(s, c, 1 - g, err) != 0) return -1;
    c->pending = 1;
    c->cur = 1 - g;
    return 0;
}

int nx_collective_matmul(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs != 2 || call->nargs != 3)
        return nx_fail(err, "collective_matmul: expects 2 operands and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    nx_norm_tensor in[2];
    for (uint32_t i = 0; i < 2; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    const uint32_t np = nx_kctx_num_programs(k);
    nx_matmul_params p;
    int scatter;
    if (nx_collective_matmul_read(in, 2, call->attrs, np, &p, &scatter, err) != 0) return -1;
    uint64_t k0, k1;
    nx_kctx_rows(k, p.K, &k0, &k1);
    mm_state s;
    const nx_geometry *g = nx_kctx_geometry(k);
    const uint64_t part_bytes = 2ull * MM_MB_MAX * ((uint64_t)g->pe_moving_free_max * 4 + 63) / 64 * 64;
    if (nx_matmul_setup(&s, k, &p, &call->args[0], &call->args[1], &call->args[2], k0, k1 - k0,
                        np > 1 ? part_bytes : 0, err) != 0)
        return -1;
    if (np == 1) return nx_matmul_blocks(&s, 0, s.blocks, err);
    cm_state c;
    memset(&c, 0, sizeof c);
    c.scatter = scatter;
    /* a round stages up to MB tiles' rows (all of them without the scatter) */
    uint64_t lo0, rows;
    nx_coll_share(k, 0, s.TM, &lo0, &rows);
    if (!scatter) rows = s.TM;
    if (nx_coll_init(k, &c.coll, "collective_matmul.exchange", (uint64_t)s.MB * ((rows * s.TN * 4 + 63) / 64 * 64),
                     err) != 0)
        return -1;
    for (uint32_t j = 0; j < 2; j++)
        for (uint32_t i = 0; i < s.MB; i++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "partial", NX_DT_FP32, s.TM, s.TN, &c.part[j][i], err) != 0) return -1;
    s.tile_out = cm_tile_out;
    s.ntile_end = cm_ntile_end;
    s.user = &c;
    if (nx_matmul_blocks(&s, 0, s.blocks, err) != 0) return -1;
    return cm_finish_pending(&s, &c, err);
}
