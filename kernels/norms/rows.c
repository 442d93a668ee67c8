/* The row-wise kernels' shared parts (kernels/norms/rows.h). */
#include "rows.h"

void nx_rows_init(nx_rows *r, nx_kctx *k) {
    const nx_geometry *g = nx_kctx_geometry(k);
    uint32_t lanes = nx_kctx_lanes(k);
    r->k = k;
    r->partitions = g->partitions;
    r->engines = g->dma_engines ? g->dma_engines : 1;
    if (r->engines > lanes) r->engines = lanes;
    r->store_lane = lanes >= 2 * r->engines ? r->engines : 0;
    r->sbuf_bytes = g->sbuf_partition_bytes;
}

nx_operand nx_rows_hbm(nx_dtype dt, uint64_t base, uint64_t r0, uint32_t n, uint64_t cols) {
    return nx_ap_hbm_rows(dt, base + r0 * cols * nx_dtype_size(dt), n, (int32_t)cols, (uint32_t)cols);
}

nx_operand nx_rows_view(const nx_tile *t, nx_dtype as, uint32_t n, uint64_t c0, uint64_t cols) {
    const int32_t one = 1;
    const uint32_t count = (uint32_t)cols;
    return nx_tile_view(t, as, 0, n, c0, 1, &one, &count);
}

nx_operand nx_rows_run(const nx_tile *t, nx_dtype as, uint32_t lines, uint64_t first, uint64_t n, int dir) {
    const int32_t stride = dir;
    const uint32_t count = (uint32_t)n;
    return nx_tile_view(t, as, 0, lines, first, 1, &stride, &count);
}

int nx_rows_load(nx_rows *r, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    return nx_kctx_dma_split(r->k, NX_ROWS_LOAD_LANE, r->engines, dst, src, err);
}

int nx_rows_store(nx_rows *r, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    return nx_kctx_dma_split(r->k, r->store_lane, r->engines, dst, src, err);
}

uint64_t nx_lines_count(const nx_lines *l, uint32_t P) {
    return l->inner == 1 ? (l->outer + P - 1) / P : l->outer * ((l->inner + P - 1) / P);
}

nx_lines_tile nx_lines_at(const nx_lines *l, uint32_t P, uint64_t t) {
    if (l->inner == 1) {
        uint64_t r0 = t * P, n = l->outer - r0 < P ? l->outer - r0 : P;
        return (nx_lines_tile){r0 * l->A, (uint32_t)n};
    }
    uint64_t per = (l->inner + P - 1) / P, o = t / per, i0 = (t % per) * P;
    uint64_t n = l->inner - i0 < P ? l->inner - i0 : P;
    return (nx_lines_tile){o * l->A * l->inner + i0, (uint32_t)n};
}

nx_operand nx_lines_hbm(const nx_lines *l, nx_dtype dt, uint64_t base, const nx_lines_tile *t, uint64_t a0,
                        uint64_t count) {
    uint64_t at = base + (t->offset + a0 * l->inner) * nx_dtype_size(dt);
    if (l->inner == 1) return nx_ap_hbm_rows(dt, at, t->n, (int32_t)l->A, (uint32_t)count);
    const int32_t stride = (int32_t)l->inner;
    const uint32_t c = (uint32_t)count;
    return nx_ap(NX_OPK_HBM, dt, 0, t->n, 1, at, 1, &stride, &c);
}

int nx_rows_activation_acc(nx_kctx *k, nx_act_func func, const nx_operand *dst, const nx_operand *in,
                           const nx_operand *bias, const nx_operand *acc, nx_alu_op op, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)func;
    a.alu0 = (uint8_t)op;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = nx_imm(1.0, NX_DT_FP32);
    a.op[3] = *bias;
    a.op[4] = *acc;
    return nx_kctx_emit(k, NX_ENG_ACT, &a, err);
}

int nx_rows_store_cols(nx_rows *r, const nx_tile *src, uint32_t n, uint64_t c0, uint32_t ncols, const nx_tile *ps,
                       const nx_tile *sb, nx_dtype out_dt, const uint64_t *hbm, nx_error *err) {
    nx_operand s = nx_rows_view(src, NX_DT_FP32, n, c0, ncols), pt = nx_rows_view(ps, NX_DT_FP32, ncols, 0, n);
    nx_operand st = nx_rows_view(sb, out_dt, ncols, 0, n);
    if (nx_kctx_transpose(r->k, NX_ENG_PE, &pt, &s, err) != 0 || nx_kctx_tensor_copy(r->k, NX_ENG_ACT, &st, &pt, err) != 0)
        return -1;
    for (uint32_t j = 0; j < ncols; j++) {
        const int32_t one = 1;
        nx_operand from = nx_tile_view(sb, out_dt, j, 1, 0, 1, &one, &n);
        nx_operand to = nx_ap_hbm_rows(out_dt, hbm[j], 1, (int32_t)n, n);
        if (nx_kctx_dma_on(r->k, r->store_lane + j, &to, &from, err) != 0) return -1;
    }
    return 0;
}

uint64_t nx_rows_tile_bytes(uint64_t elems, nx_dtype dt) { return (elems * nx_dtype_size(dt) + 63) / 64 * 64; }

int nx_rows_broadcast(nx_rows *r, const char *name, uint64_t vec, nx_dtype vdt, uint64_t H, nx_dtype dt,
                      nx_tile *out, nx_error *err) {
    nx_kctx *k = r->k;
    const nx_geometry *g = nx_kctx_geometry(k);
    uint32_t P = r->partitions, bank = g->pe_moving_free_max;
    if ((uint64_t)bank * 4 > g->psum_bank_bytes) bank = (uint32_t)(g->psum_bank_bytes / 4);
    nx_tile row, ones, ps[2];
    /* out first: the temporaries released below leave a hole at the end */
    if (nx_kctx_alloc(k, NX_OPK_SBUF, name, dt, P, H, out, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "vector_row", vdt, 1, H, &row, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "ones", vdt, 1, P, &ones, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_PSUM, "broadcast_psum", NX_DT_FP32, P, bank, &ps[0], err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_PSUM, "broadcast_psum", NX_DT_FP32, P, bank, &ps[1], err) != 0)
        return -1;
    nx_operand rd = nx_tile_ap(&row), rs = nx_ap_hbm_rows(vdt, vec, 1, (int32_t)H, (uint32_t)H);
    nx_operand od = nx_tile_ap(&ones);
    if (nx_kctx_dma_on(k, NX_ROWS_LOAD_LANE, &rd, &rs, err) != 0 ||
        nx_kctx_memset(k, NX_ENG_DVE, &od, 1.0, err) != 0 || nx_kctx_load_stationary(k, &od, err) != 0)
        return -1;
    for (uint64_t c0 = 0, i = 0; c0 < H; c0 += bank, i++) {
        uint64_t n = H - c0 < bank ? H - c0 : bank;
        nx_operand mv = nx_rows_view(&row, vdt, 1, c0, n), acc = nx_rows_view(&ps[i % 2], NX_DT_FP32, P, 0, n);
        nx_operand dst = nx_rows_view(out, dt, P, c0, n);
        if (nx_kctx_multiply_moving(k, &acc, &mv, 0, err) != 0 ||
            nx_kctx_tensor_copy(k, NX_ENG_ACT, &dst, &acc, err) != 0)
            return -1;
    }
    if (nx_kctx_release(k, &ps[1], err) != 0 || nx_kctx_release(k, &ps[0], err) != 0 ||
        nx_kctx_release(k, &ones, err) != 0 || nx_kctx_release(k, &row, err) != 0)
        return -1;
    return 0;
}

int nx_rows_broadcast_rows(nx_rows *r, const char *name, uint64_t vec, nx_dtype vdt, uint64_t H, nx_dtype dt,
                           uint32_t rows, nx_tile *out, nx_error *err) {
    if (vdt != dt || !rows || rows > r->partitions || (uint64_t)rows * H * nx_dtype_size(dt) > NX_ROWS_BROADCAST_DMA_MAX)
        return nx_rows_broadcast(r, name, vec, vdt, H, dt, out, err);
    if (nx_kctx_alloc(r->k, NX_OPK_SBUF, name, dt, r->partitions, H, out, err) != 0) return -1;
    nx_operand d = nx_rows_view(out, dt, rows, 0, H), s = nx_ap_hbm_rows(dt, vec, rows, 0, (uint32_t)H);
    return nx_rows_load(r, &d, &s, err);
}
