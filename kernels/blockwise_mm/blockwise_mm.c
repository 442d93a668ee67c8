/* blockwise_mm: MoE prefill on one core. For every block of B routed token
 * positions: gather the tokens' hidden rows, gate and up projections of the
 * block's expert, silu(gate) * up, down projection, scale by the tokens'
 * affinities and add into the tokens' output rows (semantics:
 * kernels/blockwise_mm/blockwise_mm_params.h).
 *
 * It follows the public NKI blockwise matmul kernels of the Neuron kernel
 * library (nkilib moe_cte "bwmm_shard_on_block"; neuronx-distributed's
 * blockwise_mm): per block an indirect-DMA gather of the hidden rows by token
 * id, PE transposes putting H on partitions, gate and up projections with
 * the weights as the stationary tile and x^T moving, accumulated over H in
 * 128-row chunks in PSUM ([i, tokens]), silu on ACT and the product on DVE
 * into h^T, the down projection with h^T stationary ([tokens, 512 columns]
 * per PSUM bank), the affinity gathered per token and applied as a
 * per-partition scalar, and a DMA scatter-add of the rows; the expert and
 * the token ids are runtime data read by DMA, and out-of-bounds indices
 * (token id -1 or T, an expert outside [0, E)) are skipped by the DMA's
 * out-of-bounds skip mode, as the public kernel's skip_dma does.
 *
 * Where it goes past the public kernel (block sizes 128..1024, 4096 <= H <=
 * 8192, H % 512 == 0, weights in SBUF):
 *  - any B >= 1, H, I, E >= 1, T: blocks are cut into work items of at most
 *    one PSUM bank of tokens (512 fp32), every tile edge may be partial,
 *    and the item size halves until the working set fits SBUF
 *    (kernels/blockwise_mm/blockwise_mm_plan.c);
 *  - weights larger than SBUF (Mixtral-like experts: 44 MB) stream through
 *    two rings of pieces (gate/up: one 128-row chunk of H for one group of
 *    i-tiles; down: all of I for one 2 KiB chunk of H columns) loaded
 *    `ring` pieces ahead, across item boundaries, so the next item's first
 *    pieces load while this one computes. When an expert fits, the rings
 *    hold it whole (resident) and an item whose expert equals the previous
 *    item's turns its loads into skipped rows (row offset -2^24): the
 *    weights stay;
 *  - when one group of i-tiles cannot hold all of I, gate and up run as two
 *    passes over H, so a weight row is read as one run per pass (DMA pays
 *    per run below 2 KiB);
 *  - the output accumulates in a scratch tensor of the output's dtype laid
 *    out in column chunks, (nrep, H / c, T+1, c) with c = one 2 KiB row: a
 *    scatter-add's footprint covers every row of the chunk it indexes
 *    (isa/validate.h), so chunks on separate DMA queues never wait for each
 *    other while one chunk's scatters stay in queue order (nrep replicas,
 *    items alternating, when H has few chunks); a final pass copies and adds
 *    them into the (T+1, H) output. The scratch starts zeroed (docs/ISA.md,
 *    "Programs and execution": every memory starts zeroed), which is the
 *    output's zero initialisation; a port to memory that does not start
 *    zeroed adds one memset pass of the scratch;
 *  - the public kernel's load-add-store of the output becomes a DMA
 *    accumulate, and the routing's small per-token loads (ids, expert,
 *    affinities) travel on queues of their own so the in-order DVE and
 *    POOL never wait behind a weight transfer;
 *  - all three scaling modes, fp32 and bf16, E = 1, blocks of padding only,
 *    expert ids outside [0, E) (the block contributes nothing).
 *
 * Ordering comes from the authoring layer (kernels/author/author.h): emission
 * order is program order, so the code emits in the order the work should
 * happen (run() below): weight loads right after the matmuls that free
 * their ring slot, scatters right after their evacuations, an item's
 * gathers a whole gate/up phase before its transposes. */
#include <stdlib.h>
#include <string.h>

#include "blockwise_mm.h"
#include "blockwise_mm_phases.h"

#define ACC_TENSOR "blockwise_mm.acc"

/* ---- call checks ---- */

static int read_call(const nx_kernel_call *call, nx_bwmm_params *p, nx_error *err) {
    if (call->n_inputs != NX_BWMM_OPERANDS || call->nargs != NX_BWMM_OPERANDS + 1)
        return nx_fail(err, "blockwise_mm: expects %d inputs and 1 output, got %u inputs and %u outputs",
                       NX_BWMM_OPERANDS, call->n_inputs, call->nargs - call->n_inputs);
    nx_bwmm_tensor ops[NX_BWMM_OPERANDS];
    for (uint32_t i = 0; i < NX_BWMM_OPERANDS; i++)
        ops[i] = (nx_bwmm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims,
                                  call->args[i].shape};
    if (nx_bwmm_params_read(call->additional_args, ops, NX_BWMM_OPERANDS, p, err) != 0) return -1;
    const nx_tensor_ref *o = &call->args[NX_BWMM_OPERANDS];
    uint64_t shape[2];
    nx_bwmm_result_shape(p, shape);
    if (o->ndims != 2 || o->shape[0] != shape[0] || o->shape[1] != shape[1])
        return nx_fail(err, "output 0 (%s): shape must be [T+1, H] = [%llu,%llu]", o->name,
                       (unsigned long long)shape[0], (unsigned long long)shape[1]);
    if (o->dtype != p->dtype)
        return nx_fail(err, "output 0 (%s): dtype %s differs from operand 0's %s", o->name,
                       nx_dtype_name(o->dtype), nx_dtype_name(p->dtype));
    return 0;
}

/* ---- tiles ---- */

static int alloc(bw *s, const char *name, nx_dtype dt, uint64_t elems, nx_tile *t, nx_error *err) {
    return nx_kctx_alloc(s->k, NX_OPK_SBUF, name, dt, s->pl->tp, elems ? elems : 1, t, err);
}

static int alloc_set(bw *s, bw_set *q, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    uint64_t nt = pl->nt, E = pl->p.E;
    int bad =
        alloc(s, "bwmm_e1", NX_DT_INT32, 1, &q->e1, err) ||
        alloc(s, "bwmm_ids", NX_DT_INT32, nt, &q->ids, err) ||
        alloc(s, "bwmm_sc", NX_DT_INT32, nt, &q->sc, err) || alloc(s, "bwmm_e", NX_DT_INT32, 1, &q->e, err) ||
        alloc(s, "bwmm_valid", NX_DT_FP32, 1, &q->valid, err) ||
        alloc(s, "bwmm_load", NX_DT_FP32, 1, &q->load, err) ||
        alloc(s, "bwmm_vm1", NX_DT_FP32, 1, &q->vm1, err) ||
        alloc(s, "bwmm_ne", NX_DT_FP32, 1, &q->ne, err) || alloc(s, "bwmm_mg", NX_DT_INT32, 1, &q->mg, err) ||
        alloc(s, "bwmm_md", NX_DT_INT32, 1, &q->md, err) ||
        alloc(s, "bwmm_gb", NX_DT_INT32, 1, &q->gb, err) ||
        alloc(s, "bwmm_db", NX_DT_INT32, 1, &q->db, err) ||
        alloc(s, "bwmm_goff", NX_DT_INT32, pl->nh, &q->goff, err) ||
        alloc(s, "bwmm_doff", NX_DT_INT32, pl->ni, &q->doff, err) ||
        alloc(s, "bwmm_mask", NX_DT_FP32, E, &q->mask, err) ||
        alloc(s, "bwmm_affrow", pl->p.aff_dtype, nt * E, &q->affrow, err) ||
        alloc(s, "bwmm_affsel", NX_DT_FP32, nt * E, &q->affsel, err) ||
        alloc(s, "bwmm_aff", NX_DT_FP32, nt, &q->aff, err);
    return bad ? -1 : 0;
}

static int iota(bw *s, const nx_tile *t, int32_t cm, int32_t step, uint32_t n, nx_error *err) {
    nx_operand dst = bw_v(t, NX_DT_INT32, s->pl->tp, 0, n);
    nx_operand pat = nx_pattern(0, cm, s->pl->tp, 1, &step, &n);
    return nx_kctx_iota(s->k, &dst, &pat, err);
}

static int alloc_all(bw *s, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    int32_t tp = (int32_t)pl->tp;
    /* constants first: they live for the whole kernel */
    if (alloc(s, "bwmm_iota_p", NX_DT_INT32, 1, &s->iota_p, err) ||
        alloc(s, "bwmm_hc", NX_DT_INT32, pl->nh, &s->hc, err) ||
        alloc(s, "bwmm_ic", NX_DT_INT32, pl->ni, &s->ic, err) ||
        alloc(s, "bwmm_iota_e", NX_DT_INT32, pl->p.E, &s->iota_e, err))
        return -1;
    if (iota(s, &s->iota_p, 1, 0, 1, err) || iota(s, &s->hc, 0, tp, pl->nh, err) ||
        iota(s, &s->ic, 0, tp, pl->ni, err) || iota(s, &s->iota_e, 0, 1, (uint32_t)pl->p.E, err))
        return -1;
    if (alloc(s, "bwmm_id_rows", NX_DT_INT32, pl->tp, &s->id_rows, err) != 0) return -1;
    for (int q = 0; q < BW_SETS; q++)
        if (alloc_set(s, &s->set[q], err) != 0) return -1;
    if (alloc(s, "bwmm_x", s->dt, (uint64_t)pl->nt * pl->p.H, &s->x, err) ||
        alloc(s, "bwmm_xT", s->dt, (uint64_t)pl->nh * pl->bs, &s->xt, err) ||
        alloc(s, "bwmm_hT", s->dt, (uint64_t)pl->ni * pl->bs, &s->ht, err))
        return -1;
    s->nsg = pl->gu_split ? pl->g_tiles : BW_SILU_TILES;
    s->sg = calloc(s->nsg, sizeof *s->sg);
    if (!s->sg) return nx_fail(err, "blockwise_mm: out of memory planning the tiles");
    for (uint32_t i = 0; i < s->nsg; i++)
        if (alloc(s, "bwmm_silu", NX_DT_FP32, pl->bs, &s->sg[i], err) != 0) return -1;
    for (uint32_t i = 0; i < pl->nstage; i++) {
        if (pl->stage_in_x) { /* views of x's bytes (see run) */
            s->stage[i] = s->x;
            s->stage[i].offset = s->x.offset + (uint64_t)i * pl->bank_bytes;
            s->stage[i].free_elems = pl->c;
            s->stage[i].bytes = pl->bank_bytes;
        } else if (alloc(s, "bwmm_stage", s->dt, pl->c, &s->stage[i], err) != 0) {
            return -1;
        }
    }
    s->gu_ring = calloc(pl->rg, sizeof *s->gu_ring);
    s->dn_ring = calloc(pl->rd, sizeof *s->dn_ring);
    if (!s->gu_ring || !s->dn_ring) return nx_fail(err, "blockwise_mm: out of memory planning the rings");
    for (uint32_t i = 0; i < pl->rg; i++)
        if (alloc(s, "bwmm_gate_up_w", s->dt, pl->gu_slot / pl->s, &s->gu_ring[i], err) != 0) return -1;
    for (uint32_t i = 0; i < pl->rd; i++)
        if (alloc(s, "bwmm_down_w", s->dt, pl->dn_slot / pl->s, &s->dn_ring[i], err) != 0) return -1;
    return nx_kctx_alloc(s->k, NX_OPK_PSUM, "bwmm_psum", NX_DT_FP32, pl->tp,
                         (uint64_t)pl->nbanks * pl->bank_bytes / 4, &s->psum, err);
}

/* ---- the final pass: replicas (nrep, nc, T+1, c) -> output (T+1, H) ---- */

/* Row group [r0, r0 + nr) of replica k into the output (k > 0 adds): the
 * full-width chunks in one transfer, the narrower last one in another on
 * the same lane (the same output rows). */
static int copy_rows(bw *s, uint32_t k, uint64_t r0, uint32_t nr, uint32_t lane, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    uint64_t rows = pl->p.T + 1, H = pl->p.H, c = pl->c, sz = pl->s;
    uint32_t full = (uint32_t)(H % c == 0 ? pl->nc : pl->nc - 1);
    uint16_t acc = k > 0 ? NX_FLAG_ACCUMULATE : 0;
    if (full > 0) {
        int32_t ds[2] = {(int32_t)c, 1}, ss[2] = {(int32_t)(rows * c), 1};
        uint32_t cn[2] = {full, (uint32_t)c};
        nx_operand dst = nx_ap(NX_OPK_HBM, s->dt, 0, nr, (int32_t)H, s->out + r0 * H * sz, 2, ds, cn);
        nx_operand src = nx_ap(NX_OPK_HBM, s->dt, 0, nr, (int32_t)c, bw_acc_row(s, k, 0, r0), 2, ss, cn);
        if (bw_dma(s, lane, &dst, &src, NULL, 0, acc, err) != 0) return -1;
    }
    if (full < pl->nc) {
        uint32_t last_w = (uint32_t)(H - (uint64_t)(pl->nc - 1) * c);
        nx_operand dst = nx_ap_hbm_rows(s->dt, s->out + (r0 * H + (uint64_t)(pl->nc - 1) * c) * sz, nr,
                                        (int32_t)H, last_w);
        nx_operand src = nx_ap_hbm_rows(s->dt, bw_acc_row(s, k, pl->nc - 1, r0), nr, (int32_t)c, last_w);
        if (bw_dma(s, lane, &dst, &src, NULL, 0, acc, err) != 0) return -1;
    }
    return 0;
}

static int copy_out(bw *s, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    uint64_t rows = pl->p.T + 1;
    for (uint64_t r0 = 0; r0 < rows; r0 += pl->tp) {
        uint32_t nr = (uint32_t)(rows - r0 < pl->tp ? rows - r0 : pl->tp), lane = bw_load_lane(s);
        for (uint32_t k = 0; k < pl->nrep; k++)
            if (copy_rows(s, k, r0, nr, lane, err) != 0) return -1;
    }
    return 0;
}

/* ---- the leaf ---- */

/* Lanes (lane l is DMA engine l mod the engine count, kernels/author/author.h):
 * the output's nc * nrep scatter queues take the last of the first half of the lanes
 * (the last engines); three lanes after them carry the small loads an
 * item's DVE/POOL work waits for, which behind a bulk transfer would stall
 * those in-order engines: one the ids and the expert, two the affinity rows
 * (a descriptor per token: 128 rows take as long as 256 KiB); every other
 * lane carries the bulk (hidden rows, weights, the final copy), round
 * robin. */
static void plan_lanes(bw *s) {
    uint32_t n = nx_kctx_lanes(s->k), scat = s->pl->nc * s->pl->nrep;
    s->nload = 0;
    if (n < 5) {
        s->scatter_lanes = s->aff_lanes = 1;
        s->small_lane = s->aff_lane = n - 1;
        s->load[s->nload++] = n - 1;
        return;
    }
    s->scatter_lanes = n / 2;
    s->small_lane = n / 2;
    s->aff_lane = n / 2 + 1;
    s->aff_lanes = 2;
    for (uint32_t l = n / 2 + 3; l < n; l++) s->load[s->nload++] = l;
    for (uint32_t l = 0; scat < s->scatter_lanes && l < s->scatter_lanes - scat; l++) s->load[s->nload++] = l;
}

/* Program order, which the authoring layer turns into the engines' order
 * (its waits follow the footprints):
 *   setup 0, transposes 0, setup 1;
 *   for each item w: gate/up w; transposes w+1; down w; setup w+2.
 * The transposes of the next item fill the PE while the last gate/up
 * results are evacuated, and free x for the down projection's staging
 * (stage_in_x); the gather of item w+2 into x follows the scatters of w,
 * a whole gate/up phase before its transposes. The affinities are taken
 * where they are first used (their gathers cost a descriptor per token and
 * must not stall the in-order DVE early). */
static int prepare(bw *s, uint64_t w, nx_error *err) {
    if (s->pl->p.scaling == NX_BWMM_PRE_SCALE &&
        (bw_affinities(s, w, err) != 0 || bw_pre_scale(s, w, err) != 0))
        return -1;
    return bw_transpose(s, w, err);
}

static int run(bw *s, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    if (alloc_all(s, err) != 0) return -1;
    /* T = 0: every token id is padding; nothing but the zero copy */
    uint64_t items = pl->p.T > 0 ? pl->items : 0;
    if (items > 0) {
        if (bw_setup(s, 0, err) != 0) return -1;
        for (uint64_t k = 0; k < pl->rg && k < items * pl->pg; k++)
            if (bw_load_gate_up(s, k, err) != 0) return -1;
        for (uint64_t k = 0; k < pl->rd && k < items * pl->pd; k++)
            if (bw_load_down(s, k, err) != 0) return -1;
        if (prepare(s, 0, err) != 0) return -1;
        if (items > 1 && bw_setup(s, 1, err) != 0) return -1;
    }
    for (uint64_t w = 0; w < items; w++) {
        if (bw_gate_up(s, w, err) != 0) return -1;
        if (w + 1 < items && prepare(s, w + 1, err) != 0) return -1;
        if (pl->p.scaling != NX_BWMM_PRE_SCALE && bw_affinities(s, w, err) != 0) return -1;
        if (bw_down(s, w, err) != 0) return -1;
        if (w + 2 < items && bw_setup(s, w + 2, err) != 0) return -1;
    }
    return copy_out(s, err);
}

int blockwise_mm(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (nx_kctx_num_programs(k) != 1)
        return nx_fail(err, "blockwise_mm: runs on one core (traced for a grid of %u)",
                       nx_kctx_num_programs(k));
    nx_bwmm_params p;
    if (read_call(call, &p, err) != 0) return -1;
    nx_bwmm_plan pl;
    if (nx_bwmm_plan_make(&p, nx_kctx_geometry(k), &pl, err) != 0) return -1;
    bw s;
    memset(&s, 0, sizeof s);
    s.k = k;
    s.pl = &pl;
    s.p = &pl.p;
    s.dt = p.dtype;
    s.hs = call->args[0].hbm_offset;
    s.aff = call->args[1].hbm_offset;
    s.gu = call->args[2].hbm_offset;
    s.dn = call->args[3].hbm_offset;
    s.tpid = call->args[4].hbm_offset;
    s.bte = call->args[5].hbm_offset;
    s.out = call->args[NX_BWMM_OPERANDS].hbm_offset;
    uint64_t acc_shape[4] = {pl.nrep, pl.nc, p.T + 1, pl.c};
    if (nx_kctx_scratch(k, ACC_TENSOR, p.dtype, 4, acc_shape, &s.acc, err) != 0)
        return nx_fail_prefix(err, "blockwise_mm: output accumulator");
    plan_lanes(&s);
    int rc = run(&s, err);
    free(s.gu_ring);
    free(s.dn_ring);
    free(s.sg);
    return rc;
}
