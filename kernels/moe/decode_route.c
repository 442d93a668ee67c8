/* moe_decode's run-time routing (kernels/moe/decode_impl.h). indices and
 * affinities are data the trace never sees, so everything that depends on
 * them is computed on chip and reaches the weight streams as DMA row
 * offsets, as blockwise_mm's block-to-expert gathers and attention_decode's
 * block tables do:
 *  - a probe gather per slot j, offsets indices[:, j] + 1 against a bound of
 *    E + 1 without the out-of-bounds skip: an index outside [-1, E) faults
 *    the run before anything is stored (no partial output);
 *  - cnt[t, e] = the slots of token t naming e (is_equal against an iota,
 *    summed over the k slots), coef[t, e] = affinities[t, e] cnt[t, e];
 *  - T k >= E ("expert loop"): pass e is expert e when some slot names it
 *    (the column sums of cnt, broadcast to every partition by a ones
 *    matmul), else -1: its weight gathers skip every row (no bytes move);
 *  - T k < E ("slot list"): pass s is slot s of the flat [T k] indices when
 *    no earlier slot names the same expert (a pairwise is_equal under a
 *    strictly lower mask, max-reduced), else -1; its weight is
 *    coef[t, expert of s], gathered by a one-hot over E.
 * Each expert's weights are so read at most once however many tokens chose
 * it, and only the experts some slot names are read. The expert of a pass
 * becomes row offsets (md_offsets): e H + c 128 + p for the gate/up rows of
 * H-chunk c, e I + i + p for the down rows; -1 gives negative rows, which
 * the gathers skip. fp32 holds them exactly (E max(H, I) < 2^24, checked by
 * the reader). */
#include "decode_impl.h"

#define MD_CHUNK 4096u /* elements per partition of a routing temporary */

nx_operand md_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t e0, uint64_t n) {
    const int32_t one = 1;
    const uint32_t cnt = (uint32_t)n;
    return nx_tile_view(t, as, p0, np, e0, 1, &one, &cnt);
}

nx_operand md_psum(const md_core *c, uint64_t byte_off, uint32_t np, uint64_t n) {
    return md_view(&c->psum, NX_DT_FP32, 0, np, byte_off / 4, n);
}

/* [np] x [a, b] view with element strides sa, sb from e0. */
static nx_operand view2(const nx_tile *t, nx_dtype as, uint32_t np, uint64_t e0, uint32_t a, int32_t sa, uint32_t b,
                        int32_t sb) {
    const int32_t st[2] = {sa, sb};
    const uint32_t cn[2] = {a, b};
    return nx_tile_view(t, as, 0, np, e0, 2, st, cn);
}

static int iota2(nx_kctx *k, const nx_operand *dst, int64_t base, int32_t cm, uint32_t a, int32_t sa, uint32_t b,
                 int32_t sb, nx_error *err) {
    const int32_t st[2] = {sa, sb};
    const uint32_t cn[2] = {a, b};
    nx_operand pat = nx_pattern(base, cm, dst->partition_count, 2, st, cn);
    pat.dtype = NX_DT_INT32;
    return nx_kctx_iota(k, dst, &pat, err);
}

static int reduce(nx_kctx *k, nx_alu_op op, const nx_operand *dst, const nx_operand *in, nx_error *err) {
    nx_insn r = nx_insn_make(NX_OP_TENSOR_REDUCE);
    r.alu0 = (uint8_t)op;
    r.iparam[0] = 2; /* the inner of two free dims */
    r.op[0] = *dst;
    r.op[1] = *in;
    return nx_kctx_emit(k, NX_ENG_DVE, &r, err);
}

static int gather(nx_kctx *k, uint32_t lane, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                  uint64_t bound, uint16_t flags, nx_error *err) {
    nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
    d.op[0] = *dst;
    d.op[1] = *src;
    d.op[2] = *off;
    d.iparam[1] = (int32_t)bound;
    d.flags = flags;
    return nx_kctx_dma_insn(k, lane, &d, err);
}

static int alloc(md_core *c, const char *name, nx_dtype dt, uint32_t np, uint64_t n, nx_tile *t, nx_error *err) {
    return nx_kctx_alloc(c->k, NX_OPK_SBUF, name, dt, np, n ? n : 1, t, err);
}

/* The probes: a gather of one affinity element (every row the same: row
 * stride 0) at row indices[t, j] + 1 of E + 1, which faults outside. */
static int probe(md_core *c, const nx_tile *idxf, nx_tile *tmp, nx_error *err) {
    const md_plan *pl = &c->pl;
    const uint32_t T = (uint32_t)pl->p.T, K = (uint32_t)pl->p.k;
    nx_kctx *k = c->k;
    nx_operand o = md_view(tmp, NX_DT_INT32, 0, T, 0, K), f = md_view(idxf, NX_DT_FP32, 0, T, 0, K);
    nx_operand one = nx_imm(1.0, NX_DT_FP32);
    if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &o, &f, NX_ALU_ADD, &one, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    nx_operand src = nx_ap_hbm_rows(NX_DT_FP32, c->call->args[4].hbm_offset, T, 1, 1);
    src.partition_stride = 0;
    for (uint32_t j = 0; j < K; j++) {
        nx_operand d = md_view(tmp, NX_DT_FP32, 0, T, K + j, 1), off = md_view(tmp, NX_DT_INT32, 0, T, j, 1);
        if (gather(k, MD_LANE_ROUTE + 2 + j % 4, &d, &src, &off, pl->p.E + 1, 0, err) != 0) return -1;
    }
    return 0;
}

/* cnt[t, e] (fp32 [T, E]) from the indices (fp32 [T, k]). */
static int counts(md_core *c, const nx_tile *idxf, const nx_tile *cnt, nx_error *err) {
    const md_plan *pl = &c->pl;
    const uint32_t T = (uint32_t)pl->p.T, K = (uint32_t)pl->p.k;
    const uint64_t E = pl->p.E;
    uint32_t ec = MD_CHUNK / K;
    if (ec > E) ec = (uint32_t)E;
    nx_tile io, eq;
    if (alloc(c, "moe_route_iota", NX_DT_FP32, T, (uint64_t)ec * K, &io, err) != 0 ||
        alloc(c, "moe_route_eq", NX_DT_FP32, T, (uint64_t)ec * K, &eq, err) != 0)
        return -1;
    for (uint64_t e0 = 0; e0 < E; e0 += ec) {
        const uint32_t n = (uint32_t)(E - e0 < ec ? E - e0 : ec);
        nx_operand iv = view2(&io, NX_DT_FP32, T, 0, n, (int32_t)K, K, 1);
        nx_operand ev = view2(&eq, NX_DT_FP32, T, 0, n, (int32_t)K, K, 1);
        nx_operand xv = view2(idxf, NX_DT_FP32, T, 0, n, 0, K, 1);
        nx_operand cv = md_view(cnt, NX_DT_FP32, 0, T, e0, n);
        if (iota2(c->k, &iv, (int64_t)e0, 0, n, 1, K, 0, err) != 0 ||
            nx_kctx_tensor_tensor(c->k, NX_ENG_DVE, NX_ALU_IS_EQUAL, &ev, &iv, &xv, err) != 0 ||
            reduce(c->k, NX_ALU_ADD, &cv, &ev, err) != 0)
            return -1;
    }
    return nx_kctx_release(c->k, &eq, err) != 0 || nx_kctx_release(c->k, &io, err) != 0 ? -1 : 0;
}

/* Expert loop: eid[p, e] = e if some slot names e, else -1, in every
 * partition: the column sums of cnt through a ones matmul (exact: sums of
 * small integers in fp32). */
static int expert_loop(md_core *c, const nx_tile *cnt, nx_error *err) {
    const md_plan *pl = &c->pl;
    const uint32_t T = (uint32_t)pl->p.T, P = pl->P;
    const uint64_t E = pl->p.E;
    nx_kctx *k = c->k;
    nx_tile ones, io;
    if (alloc(c, "moe_route_ones", NX_DT_FP32, T, P, &ones, err) != 0 ||
        alloc(c, "moe_route_eiota", NX_DT_FP32, P, E, &io, err) != 0)
        return -1;
    nx_operand o = nx_tile_ap(&ones), iv = nx_tile_ap(&io), zero = nx_imm(0.0, NX_DT_FP32);
    nx_operand mone = nx_imm(-1.0, NX_DT_FP32);
    if (nx_kctx_memset(k, NX_ENG_POOL, &o, 1.0, err) != 0 || iota2(k, &iv, 1, 0, 1, 0, (uint32_t)E, 1, err) != 0 ||
        nx_kctx_load_stationary(k, &o, err) != 0)
        return -1;
    for (uint64_t e0 = 0; e0 < E; e0 += 512) {
        const uint32_t n = (uint32_t)(E - e0 < 512 ? E - e0 : 512);
        nx_operand ps = md_psum(c, pl->ps_route, P, n), mv = md_view(cnt, NX_DT_FP32, 0, T, e0, n);
        nx_operand u = md_view(&c->eid, NX_DT_FP32, 0, P, e0, n), ie = md_view(&io, NX_DT_FP32, 0, P, e0, n);
        /* eid = (e + 1) (count > 0) - 1 */
        if (nx_kctx_multiply_moving(k, &ps, &mv, 0, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_DVE, &u, &ps, NX_ALU_IS_GT, &zero, NX_ALU_BYPASS, NULL, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &u, &u, &ie, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_DVE, &u, &u, NX_ALU_ADD, &mone, NX_ALU_BYPASS, NULL, err) != 0)
            return -1;
    }
    return nx_kctx_release(k, &io, err) != 0 || nx_kctx_release(k, &ones, err) != 0 ? -1 : 0;
}

/* Slot list: eid[p, s] = indices_flat[s] unless an earlier slot names the
 * same expert (then -1); coef[t, s] = coefTE[t, eid[s]] (0 for -1). */
static int slot_list(md_core *c, const nx_tile *cte, nx_error *err) {
    const md_plan *pl = &c->pl;
    const uint32_t T = (uint32_t)pl->p.T, P = pl->P, S = pl->S;
    const uint64_t E = pl->p.E;
    nx_kctx *k = c->k;
    uint32_t sc = MD_CHUNK / S, sce = (uint32_t)(MD_CHUNK / E);
    if (sc < 1) sc = 1;
    if (sce < 1) sce = 1;
    if (sc > S) sc = S;
    if (sce > S) sce = S;
    const uint32_t big = sc * S > sce * (uint32_t)E ? sc * S : sce * (uint32_t)E;
    nx_tile ib, ibf, a, m;
    if (alloc(c, "moe_route_flat", NX_DT_INT32, P, S, &ib, err) != 0 ||
        alloc(c, "moe_route_flatf", NX_DT_FP32, P, S, &ibf, err) != 0 ||
        alloc(c, "moe_route_pair", NX_DT_FP32, P, big, &a, err) != 0 ||
        alloc(c, "moe_route_mask", NX_DT_FP32, P, big, &m, err) != 0)
        return -1;
    /* the flat indices in every partition (row stride 0) */
    nx_operand src = nx_ap_hbm_rows(NX_DT_INT32, c->call->args[5].hbm_offset, P, (int32_t)S, S);
    src.partition_stride = 0;
    nx_operand ibv = nx_tile_ap(&ib), fv = nx_tile_ap(&ibf);
    if (nx_kctx_dma_on(k, MD_LANE_ROUTE + 1, &ibv, &src, err) != 0 ||
        nx_kctx_tensor_copy(k, NX_ENG_DVE, &fv, &ibv, err) != 0)
        return -1;
    nx_operand zero = nx_imm(0.0, NX_DT_FP32), one = nx_imm(1.0, NX_DT_FP32), mone = nx_imm(-1.0, NX_DT_FP32);
    for (uint32_t s0 = 0; s0 < S; s0 += sc) {
        const uint32_t n = S - s0 < sc ? S - s0 : sc;
        nx_operand av = view2(&a, NX_DT_FP32, P, 0, n, (int32_t)S, S, 1), mv = view2(&m, NX_DT_FP32, P, 0, n, (int32_t)S, S, 1);
        nx_operand xs = view2(&ibf, NX_DT_FP32, P, s0, n, 1, S, 0), xr = view2(&ibf, NX_DT_FP32, P, 0, n, 0, S, 1);
        nx_operand dup = md_view(&c->eid, NX_DT_FP32, 0, P, s0, n);
        /* mask[s, r] = r < s, i.e. r - s0 - s < 0 */
        if (iota2(k, &mv, -(int64_t)s0, 0, n, -1, S, 1, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_POOL, &mv, &mv, NX_ALU_IS_LT, &zero, NX_ALU_BYPASS, NULL, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_IS_EQUAL, &av, &xs, &xr, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &av, &av, &mv, err) != 0 ||
            reduce(k, NX_ALU_MAX, &dup, &av, err) != 0)
            return -1;
    }
    /* eid = (idx + 1)(1 - dup) - 1 */
    nx_operand ev = md_view(&c->eid, NX_DT_FP32, 0, P, 0, S);
    if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &ev, &ev, NX_ALU_MULTIPLY, &mone, NX_ALU_ADD, &one, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &ev, &fv, NX_ALU_ADD, &one, NX_ALU_MULTIPLY, &ev, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_DVE, &ev, &ev, NX_ALU_ADD, &mone, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    /* coef[t, s] = sum_e coefTE[t, e] (e == eid[s]) */
    for (uint32_t s0 = 0; s0 < S; s0 += sce) {
        const uint32_t n = S - s0 < sce ? S - s0 : sce;
        nx_operand iv = view2(&m, NX_DT_FP32, T, 0, n, (int32_t)E, (uint32_t)E, 1);
        nx_operand av = view2(&a, NX_DT_FP32, T, 0, n, (int32_t)E, (uint32_t)E, 1);
        nx_operand es = view2(&c->eid, NX_DT_FP32, T, s0, n, 1, (uint32_t)E, 0);
        nx_operand cv = view2(cte, NX_DT_FP32, T, 0, n, 0, (uint32_t)E, 1);
        nx_operand dst = md_view(&c->coef, NX_DT_FP32, 0, T, s0, n);
        if (iota2(k, &iv, 0, 0, n, 0, (uint32_t)E, 1, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_IS_EQUAL, &av, &iv, &es, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &av, &av, &cv, err) != 0 ||
            reduce(k, NX_ALU_ADD, &dst, &av, err) != 0)
            return -1;
    }
    return nx_kctx_release(k, &m, err) != 0 || nx_kctx_release(k, &a, err) != 0 ||
                   nx_kctx_release(k, &ibf, err) != 0 || nx_kctx_release(k, &ib, err) != 0
               ? -1
               : 0;
}

int md_route(md_core *c, nx_error *err) {
    const md_plan *pl = &c->pl;
    const uint32_t T = (uint32_t)pl->p.T, K = (uint32_t)pl->p.k, P = pl->P;
    const uint64_t E = pl->p.E;
    nx_kctx *k = c->k;
    const nx_kernel_call *call = c->call;
    nx_tile idx, idxf, tmp, aff, cnt;
    if (alloc(c, "moe_indices", NX_DT_INT32, T, K, &idx, err) != 0 ||
        alloc(c, "moe_indices_f", NX_DT_FP32, T, K, &idxf, err) != 0 ||
        alloc(c, "moe_probe", NX_DT_FP32, T, 2 * K, &tmp, err) != 0 ||
        alloc(c, "moe_coef", NX_DT_FP32, T, pl->S, &c->coef, err) != 0)
        return -1;
    nx_operand iv = nx_tile_ap(&idx), fv = nx_tile_ap(&idxf);
    nx_operand is = nx_ap_hbm_rows(NX_DT_INT32, call->args[5].hbm_offset, T, (int32_t)K, K);
    if (nx_kctx_dma_on(k, MD_LANE_ROUTE, &iv, &is, err) != 0 || nx_kctx_tensor_copy(k, NX_ENG_DVE, &fv, &iv, err) != 0 ||
        probe(c, &idxf, &tmp, err) != 0)
        return -1;
    nx_operand as = nx_ap_hbm_rows(NX_DT_FP32, call->args[4].hbm_offset, T, (int32_t)E, (uint32_t)E);
    if (pl->p.all) { /* every token through every expert, weighted by its affinity */
        nx_operand cv = nx_tile_ap(&c->coef);
        if (nx_kctx_dma_on(k, MD_LANE_ROUTE + 1, &cv, &as, err) != 0) return -1;
    } else {
        if (alloc(c, "moe_aff", NX_DT_FP32, T, E, &aff, err) != 0 || alloc(c, "moe_cnt", NX_DT_FP32, T, E, &cnt, err) != 0 ||
            alloc(c, "moe_eid", NX_DT_FP32, P, pl->S, &c->eid, err) != 0)
            return -1;
        nx_operand av = nx_tile_ap(&aff), cv = nx_tile_ap(&cnt);
        if (nx_kctx_dma_on(k, MD_LANE_ROUTE + 1, &av, &as, err) != 0 || counts(c, &idxf, &cnt, err) != 0) return -1;
        if (!pl->slot_list) {
            /* pass e = expert e: coef = affinities x counts */
            nx_operand co = nx_tile_ap(&c->coef);
            if (nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &co, &av, &cv, err) != 0 ||
                expert_loop(c, &cnt, err) != 0)
                return -1;
        } else {
            if (nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &av, &av, &cv, err) != 0 ||
                slot_list(c, &aff, err) != 0)
                return -1;
        }
        /* expert x H and expert x I per pass, and the iotas of the rows */
        nx_operand ev = nx_tile_ap(&c->eid);
        nx_operand hv = nx_imm((double)pl->p.H, NX_DT_FP32), Iv = nx_imm((double)pl->p.inter, NX_DT_FP32);
        if (alloc(c, "moe_eid_h", NX_DT_FP32, P, pl->S, &c->eidh, err) != 0 ||
            alloc(c, "moe_eid_i", NX_DT_FP32, P, pl->S, &c->eidi, err) != 0 ||
            alloc(c, "moe_iota_g", NX_DT_FP32, P, pl->nhc, &c->iog, err) != 0 ||
            alloc(c, "moe_iota_d", NX_DT_FP32, P, pl->nic, &c->iod, err) != 0)
            return -1;
        nx_operand eh = nx_tile_ap(&c->eidh), ei = nx_tile_ap(&c->eidi), ig = nx_tile_ap(&c->iog), id = nx_tile_ap(&c->iod);
        if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &eh, &ev, NX_ALU_MULTIPLY, &hv, NX_ALU_BYPASS, NULL, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_DVE, &ei, &ev, NX_ALU_MULTIPLY, &Iv, NX_ALU_BYPASS, NULL, err) != 0 ||
            iota2(k, &ig, 0, 1, 1, 0, pl->nhc, (int32_t)P, err) != 0 ||
            (pl->nic && iota2(k, &id, (int64_t)pl->ilo, 1, 1, 0, pl->nic, (int32_t)P, err) != 0))
            return -1;
        for (uint32_t i = 0; i < MD_OFFSETS; i++)
            if (alloc(c, "moe_off_g", NX_DT_INT32, P, pl->nhc, &c->offg[i], err) != 0 ||
                alloc(c, "moe_off_d", NX_DT_INT32, P, pl->nic, &c->offd[i], err) != 0)
                return -1;
        if (nx_kctx_release(k, &cnt, err) != 0 || nx_kctx_release(k, &aff, err) != 0) return -1;
    }
    return nx_kctx_release(k, &tmp, err) != 0 || nx_kctx_release(k, &idxf, err) != 0 ||
                   nx_kctx_release(k, &idx, err) != 0
               ? -1
               : 0;
}

int md_offsets(md_core *c, uint32_t s, nx_error *err) {
    const md_plan *pl = &c->pl;
    const uint32_t set = s % MD_OFFSETS, P = pl->P;
    nx_operand og = nx_tile_ap(&c->offg[set]), ig = nx_tile_ap(&c->iog);
    nx_operand eh = md_view(&c->eidh, NX_DT_FP32, 0, P, s, 1), ei = md_view(&c->eidi, NX_DT_FP32, 0, P, s, 1);
    if (nx_kctx_tensor_scalar(c->k, NX_ENG_POOL, &og, &ig, NX_ALU_ADD, &eh, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    if (!pl->nic) return 0;
    nx_operand od = nx_tile_ap(&c->offd[set]), id = nx_tile_ap(&c->iod);
    return nx_kctx_tensor_scalar(c->k, NX_ENG_POOL, &od, &id, NX_ALU_ADD, &ei, NX_ALU_BYPASS, NULL, err);
}
