/* moe_decode (kernels/moe/moe_decode.h): the expert MLPs of MoE token
 * generation, after the public NKI MoE token-generation kernels (nkilib's
 * router-fed expert MLPs for decode; the inventory's expert_mlps), each
 * expert's gate/up/down on mlp's decode piece (kernels/mlp/mlp_decode.h:
 * weights stationary against x^T for gate and up, h^T stationary against
 * the down rows, the weights streamed a ring ahead of the PE across jobs;
 * kernels/moe/decode_piece.c).
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
 *  - in which order: work items (1024 columns of I of one pass) run
 *    group by group of 8 passes, block b of every pass of the group before
 *    block b + 1, so an unused expert's items (no bytes, but their PE work:
 *    there are no branches) sit between used experts' items whose loads
 *    the piece's ring keeps running (Mixtral T 4: 88.0% of the streaming
 *    bound with pass after pass, 92.3% interleaved);
 *  - on which queues: every weight slab is cut over the 16 DMA engines
 *    (the piece), the routing's small loads and our stores on queues of
 *    their own;
 *  - on which core: the VNC grid's two programs split I (each reads its
 *    half of every needed expert's three matrices: the two cores' DMA
 *    engines share the HBM bandwidth evenly whatever the routing, which an
 *    expert split cannot promise when the number of distinct experts is
 *    odd or run-time), and the two partial [T, H] sums meet through a
 *    shared HBM scratch: each core sends the other the tokens the other
 *    finalises, a core barrier, then each adds them by a DMA accumulate,
 *    rounds and stores its tokens.
 * Where it goes past the public kernel: any T up to 128, ragged H and I, fp32 and bf16, k up
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
    /* items of MD_NIT i-tiles (2 KiB rows of bf16: the DMA's efficient
     * run), the last taking the remainder (up to 2 MD_NIT - 1 tiles), so no
     * item has shorter rows (I = 10752 leaves each core 42 tiles, 5 x 8 + 2) */
    pl->nblk = (uint32_t)(pl->nic / MD_NIT);
    if (pl->nblk == 0 && pl->nic) pl->nblk = 1;
    pl->ps_route = 0;
    if (g->psum_partition_bytes < 8192) return nx_fail(err, "moe_decode: plans for at least 8 KiB of PSUM per partition");
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
        nx_operand d = md_view(&c->psum, p->dtype, 0, hw, (pl->ps_route + (hc % 16) * 512ull) / pl->es, T);
        nx_operand o = md_view(&c->xt, p->dtype, 0, hw, (uint64_t)hc * T, T);
        if (nx_kctx_transpose(c->k, NX_ENG_PE, &d, &s, err) != 0 ||
            nx_kctx_tensor_copy(c->k, NX_ENG_ACT, &o, &d, err) != 0)
            return -1;
    }
    return nx_kctx_release(c->k, &xs, err);
}

static int alloc_acc(md_core *c, nx_error *err) {
    nx_operand a;
    if (alloc(c, "moe_acc", NX_DT_FP32, (uint32_t)c->pl.p.T, c->pl.p.H, &c->acc, err) != 0) return -1;
    a = nx_tile_ap(&c->acc);
    return nx_kctx_memset(c->k, NX_ENG_POOL, &a, 0.0, err);
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
    if (md_route(&c, err) != 0 || transpose_x(&c, err) != 0 || alloc_acc(&c, err) != 0 || md_passes(&c, err) != 0)
        return -1;
    return combine(&c, err);
}
