/* moe_decode (kernels/moe/moe_decode.h): the expert MLPs of MoE token
 * generation, after the public NKI MoE token-generation kernels (nkilib's
 * router-fed expert MLPs for decode; the inventory's expert_mlps), with
 * gate/up/down per expert as kernels/moe/decode_expert.c lays them out.
 *
 * The whole thing is weight-streaming bound: T <= 128 tokens meet E
 * experts of 3 H I weights each, so the plan is about the weight streams:
 *  - which experts: mode "selected" reads only experts some slot names,
 *    each once, however many tokens chose it; the choice is run-time data
 *    (indices), so the passes are fixed at trace time and their experts
 *    are DMA row offsets computed on chip (kernels/moe/decode_route.c): one
 *    pass per expert when T k >= E (an unused expert's gathers skip every
 *    row), else one pass per slot of the flat [T k] indices with repeats
 *    turned into empty passes. Mode "all" streams every expert with plain
 *    DMAs, weighted by the affinities;
 *  - on which queues: every weight tile is cut over the 16 DMA engines,
 *    gate, up and down on a queue group each, in rings deep enough to run
 *    ahead of the PE;
 *  - on which core: the VNC grid's two programs split I (each reads its
 *    half of every needed expert's three matrices: the two cores' DMA
 *    engines share the HBM bandwidth evenly whatever the routing, which an
 *    expert split cannot promise when the number of distinct experts is
 *    odd or run-time), and the two partial [T, H] sums meet through a
 *    shared HBM scratch: each core sends the other the tokens the other
 *    finalises, a core barrier, then each adds them by a DMA accumulate,
 *    rounds and stores its tokens.
 * Where it goes past the public kernel: any T up to 128 (accumulators
 * strided by a power of two in PSUM), ragged H and I, fp32 and bf16, k up
 * to 16, the four activations, slots of -1, repeated experts, and
 * out-of-range indices as a run-time fault. */
#include <string.h>

#include "decode_impl.h"
#include "isa/intmath.h"

static int plan(md_plan *pl, nx_kctx *k, nx_error *err) {
    const nx_geometry *g = nx_kctx_geometry(k);
    const nx_moe_decode_params *p = &pl->p;
    pl->es = (uint32_t)nx_dtype_size(p->dtype);
    pl->P = g->partitions;
    pl->runtime = !p->all;
    pl->slot_list = !p->all && p->T * p->k < p->E;
    pl->S = (uint32_t)(pl->slot_list ? p->T * p->k : p->E);
    pl->nhc = (uint32_t)nx_cdiv_u64(p->H, pl->P);
    uint64_t lo, hi;
    nx_kctx_rows(k, nx_cdiv_u64(p->inter, pl->P), &lo, &hi);
    pl->ilo = lo * pl->P;
    pl->ihi = nx_min_u64(hi * pl->P, p->inter);
    if (pl->ihi < pl->ilo) pl->ihi = pl->ilo;
    pl->nic = (uint32_t)(hi > lo ? hi - lo : 0);
    const uint32_t bank = g->psum_bank_bytes ? g->psum_bank_bytes : 2048;
    if (bank != 2048 || g->psum_partition_bytes < 8 * 2048ull || g->pe_moving_free_max < 512)
        return nx_fail(err, "moe_decode: plans for 2 KiB PSUM banks, 8 of them, and 512-column multiplies");
    pl->dcols = 2048 / pl->es; /* 2 KiB rows: the DMA's efficient run */
    pl->ndc = (uint32_t)nx_cdiv_u64(p->H, pl->dcols);
    pl->d_banks = pl->dcols * 4 / bank;
    pl->stride = nx_pow2_ceil_u32((uint32_t)p->T * 4);
    /* items of MD_NIT i-tiles; a remainder joins the last item (up to
     * 2 MD_NIT - 1 tiles) when its accumulators fit, so no item has rows
     * shorter than 2 KiB (a DMA run below that moves at a fraction of the
     * rate: I = 10752 leaves each core 42 tiles, 5 x 8 + 2) */
    pl->nit = 2 * MD_NIT - 1;
    if (2ull * pl->nit * pl->stride > 4ull * bank) pl->nit = MD_NIT;
    pl->nblk = pl->nit > MD_NIT ? (uint32_t)(pl->nic / MD_NIT) : (uint32_t)nx_cdiv_u64(pl->nic, MD_NIT);
    if (pl->nblk == 0 && pl->nic) pl->nblk = 1;
    const uint64_t set = 2ull * pl->nit * pl->stride;
    pl->gu_sets = 2 * set <= 4ull * bank ? 2 : 1;
    pl->ps_gu = 0;
    pl->ps_d = 4ull * bank;
    /* the rings take what SBUF leaves after the other tiles (x, x^T, acc,
     * the output rows, h^T, act, the routing's and the offsets', 32 KiB
     * for the routing temporaries released before), up to MD_RING_MAX */
    const uint64_t T = p->T, es = pl->es, S = pl->S;
    const uint64_t other = 2 * p->H * es + pl->nhc * T * es + p->H * 4 + 2 * pl->nit * T * es + pl->nit * T * 4 +
                           4 * S * 4 + (MD_OFFSETS + 1) * (uint64_t)(pl->nhc + pl->nic) * 4 + 32768 + 4096;
    const uint64_t pair = (uint64_t)pl->nit * pl->P * es + 2048, sb = g->sbuf_partition_bytes;
    uint64_t ring = sb > other ? (sb - other) / (pair + 128) : 0;
    if (ring > MD_RING_MAX) ring = MD_RING_MAX;
    if (ring < 2)
        return nx_fail(err, "moe_decode: H = %llu and T = %llu leave no SBUF for the weight rings (%llu bytes per partition "
                       "of %llu needed for the rest)", (unsigned long long)p->H, (unsigned long long)T,
                       (unsigned long long)other, (unsigned long long)sb);
    pl->ring = (uint32_t)ring;
    return 0;
}

static int alloc(md_core *c, const char *name, nx_dtype dt, uint32_t np, uint64_t n, nx_tile *t, nx_error *err) {
    return nx_kctx_alloc(c->k, NX_OPK_SBUF, name, dt, np, n ? n : 1, t, err);
}

/* x [T, H] -> x^T: PE transposes of [T, 128] pieces, copied out by ACT. */
static int transpose_x(md_core *c, nx_error *err) {
    const md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    const uint32_t T = (uint32_t)p->T, P = pl->P;
    nx_tile xs;
    if (alloc(c, "moe_x", p->dtype, T, p->H, &xs, err) != 0 ||
        alloc(c, "moe_xt", p->dtype, P, (uint64_t)pl->nhc * T, &c->xt, err) != 0)
        return -1;
    nx_operand xv = nx_tile_ap(&xs);
    nx_operand src = nx_ap_hbm_rows(p->dtype, c->call->args[0].hbm_offset, T, (int32_t)p->H, (uint32_t)p->H);
    if (nx_kctx_dma_split(c->k, MD_LANE_ROUTE + 8, T < 8 ? T : 8, &xv, &src, err) != 0) return -1;
    for (uint32_t hc = 0; hc < pl->nhc; hc++) {
        const uint32_t hw = (uint32_t)nx_min_u64(P, p->H - (uint64_t)hc * P);
        nx_operand s = md_view(&xs, p->dtype, 0, T, (uint64_t)hc * P, hw);
        nx_operand d = md_view(&c->psum, p->dtype, 0, hw, (pl->ps_d + (hc % 16) * 512ull) / pl->es, T);
        nx_operand o = md_view(&c->xt, p->dtype, 0, hw, (uint64_t)hc * T, T);
        if (nx_kctx_transpose(c->k, NX_ENG_PE, &d, &s, err) != 0 ||
            nx_kctx_tensor_copy(c->k, NX_ENG_ACT, &o, &d, err) != 0)
            return -1;
    }
    return nx_kctx_release(c->k, &xs, err);
}

static int alloc_stream(md_core *c, nx_error *err) {
    const md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    const uint32_t P = pl->P, T = (uint32_t)p->T;
    for (uint32_t i = 0; i < pl->ring; i++)
        if (alloc(c, "moe_gate_up_ring", p->dtype, P, (uint64_t)pl->nit * P, &c->gu[i], err) != 0 ||
            alloc(c, "moe_down_ring", p->dtype, P, pl->dcols, &c->dn[i], err) != 0)
            return -1;
    if (alloc(c, "moe_h", p->dtype, P, (uint64_t)pl->nit * T, &c->ht[0], err) != 0 ||
        alloc(c, "moe_h", p->dtype, P, (uint64_t)pl->nit * T, &c->ht[1], err) != 0 ||
        alloc(c, "moe_act", NX_DT_FP32, P, (uint64_t)pl->nit * T, &c->sg, err) != 0 ||
        alloc(c, "moe_acc", NX_DT_FP32, T, p->H, &c->acc, err) != 0)
        return -1;
    nx_operand a = nx_tile_ap(&c->acc);
    return nx_kctx_memset(c->k, NX_ENG_POOL, &a, 0.0, err);
}

/* Row offsets of the passes of group g (runtime only). */
static int group_offsets(md_core *c, uint32_t g, nx_error *err) {
    for (uint32_t s = g * MD_GROUP; s < c->pl.S && s < (g + 1) * MD_GROUP; s++)
        if (md_offsets(c, s, err) != 0) return -1;
    return 0;
}

/* The passes, items in md_item's order; emission order gate/up(w),
 * down(w - 1), act(w), so the PE runs the next item's gate/up while ACT
 * and DVE make this one's h. A group's offsets are made (on POOL) when the
 * group before begins. */
static int passes(md_core *c, nx_error *err) {
    const md_plan *pl = &c->pl;
    const uint64_t W = (uint64_t)pl->S * pl->nblk, span = (uint64_t)MD_GROUP * pl->nblk;
    if (pl->runtime && W > 0 && group_offsets(c, 0, err) != 0) return -1;
    for (uint64_t w = 0; w < W; w++) {
        if (pl->runtime && w % span == 0 && group_offsets(c, (uint32_t)(w / span) + 1, err) != 0) return -1;
        if (md_gate_up(c, w, err) != 0) return -1;
        if (w > 0 && md_down(c, w - 1, err) != 0) return -1;
        if (md_act(c, w, err) != 0) return -1;
    }
    return W > 0 ? md_down(c, W - 1, err) : 0;
}

/* Rows [t0, t1) of acc rounded to the dtype and stored to out (the
 * rounding runs over partitions from 0: compute engines start at 0, 32, 64
 * or 96; the store picks the rows). */
static int store(md_core *c, uint32_t t0, uint32_t t1, nx_error *err) {
    const md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    if (t1 <= t0) return 0;
    nx_tile o;
    if (alloc(c, "moe_out", p->dtype, t1, p->H, &o, err) != 0) return -1;
    nx_operand ov = nx_tile_ap(&o), a = md_view(&c->acc, NX_DT_FP32, 0, t1, 0, p->H);
    nx_operand src = md_view(&o, p->dtype, t0, t1 - t0, 0, p->H);
    nx_operand dst = nx_ap_hbm_rows(p->dtype, c->call->args[NX_MOE_DECODE_OPERANDS].hbm_offset + (uint64_t)t0 * p->H * pl->es,
                                    t1 - t0, (int32_t)p->H, (uint32_t)p->H);
    if (nx_kctx_tensor_copy(c->k, NX_ENG_ACT, &ov, &a, err) != 0 ||
        nx_kctx_dma_split(c->k, MD_LANE_STORE, t1 - t0 < 16 ? t1 - t0 : 16, &dst, &src, err) != 0)
        return -1;
    return 0;
}

/* The two cores' partial sums, split by tokens (whole rows: every
 * transfer's bytes are one contiguous range): each sends the other the
 * rows the other finalises through a shared scratch, a core barrier, then
 * each adds the rows it received into its own by a DMA accumulate. */
static int combine(md_core *c, nx_error *err) {
    const md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    const uint32_t T = (uint32_t)p->T, pid = nx_kctx_program_id(c->k);
    if (nx_kctx_num_programs(c->k) == 1) return store(c, 0, T, err);
    const uint32_t half = (T + 1) / 2;
    const uint32_t own0 = pid ? half : 0, own1 = pid ? T : half, oth0 = pid ? 0 : half, oth1 = pid ? half : T;
    const uint64_t shape[3] = {2, T, p->H}, row = p->H * 4;
    uint64_t off;
    if (nx_kctx_scratch(c->k, "moe_decode.partial", NX_DT_FP32, 3, shape, &off, err) != 0) return -1;
    const uint64_t mine = off + (uint64_t)pid * T * row, theirs = off + (uint64_t)(1 - pid) * T * row;
    if (oth1 > oth0) {
        nx_operand a = md_view(&c->acc, NX_DT_FP32, oth0, oth1 - oth0, 0, p->H);
        nx_operand d = nx_ap_hbm_rows(NX_DT_FP32, mine + oth0 * row, oth1 - oth0, (int32_t)p->H, (uint32_t)p->H);
        if (nx_kctx_dma_split(c->k, MD_LANE_STORE, oth1 - oth0 < 16 ? oth1 - oth0 : 16, &d, &a, err) != 0) return -1;
    }
    if (nx_kctx_barrier(c->k, err) != 0) return -1;
    if (own1 <= own0) return 0;
    const uint32_t n = own1 - own0, pieces = n < 16 ? n : 16;
    for (uint32_t i = 0; i < pieces; i++) {
        const uint32_t r0 = own0 + n * i / pieces, r1 = own0 + n * (i + 1) / pieces;
        nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
        d.op[0] = md_view(&c->acc, NX_DT_FP32, r0, r1 - r0, 0, p->H);
        d.op[1] = nx_ap_hbm_rows(NX_DT_FP32, theirs + r0 * row, r1 - r0, (int32_t)p->H, (uint32_t)p->H);
        d.flags = NX_FLAG_ACCUMULATE;
        if (nx_kctx_dma_insn(c->k, MD_LANE_ROUTE + 8 + i, &d, err) != 0) return -1;
    }
    return store(c, own0, own1, err);
}

int nx_moe_decode(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_norm_tensor in[NX_KERNEL_MAX_ARGS];
    for (uint32_t i = 0; i < call->n_inputs && i < NX_KERNEL_MAX_ARGS; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    md_core c;
    memset(&c, 0, sizeof c);
    if (nx_moe_decode_read(call->attrs, in, call->n_inputs, &c.pl.p, err) != 0) return -1;
    if (call->nargs != NX_MOE_DECODE_OPERANDS + 1)
        return nx_fail(err, "moe_decode: expects 1 result (out), got %u", call->nargs - call->n_inputs);
    c.k = k;
    c.call = call;
    if (plan(&c.pl, k, err) != 0) return -1;
    const nx_geometry *g = nx_kctx_geometry(k);
    if (nx_kctx_alloc(k, NX_OPK_PSUM, "moe_psum", NX_DT_FP32, c.pl.P, g->psum_partition_bytes / 4, &c.psum, err) != 0)
        return -1;
    if (md_route(&c, err) != 0 || transpose_x(&c, err) != 0 || alloc_stream(&c, err) != 0 || passes(&c, err) != 0)
        return -1;
    return combine(&c, err);
}
