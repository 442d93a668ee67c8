/* The rotation of kernels/elementwise/rope.c as a piece other kernels call
 * (qkv rotates its q and k heads with it before they leave SBUF): three
 * elementwise products over whole rows through views, never copies (the
 * plan and its reasons: rope.c's opening comment, docs/parts/norms.md). */
#include "elementwise.h"

static nx_operand view(const nx_tile *t, nx_dtype dt, uint32_t n, uint64_t first, uint32_t nd, const int32_t *st,
                       const uint32_t *ct) {
    return nx_tile_view(t, dt, 0, n, first, nd, st, ct);
}

int nx_rope_signed_sin(nx_kctx *k, const nx_rope_rows *g, const nx_tile *sn, const nx_tile *sr, nx_dtype cdt,
                       nx_error *err) {
    const uint32_t R = g->shared ? 1 : g->R, h = g->D / 2;
    const int32_t sgn_st[2] = {(int32_t)g->D, g->interleaved ? 2 : 1}, raw_st[2] = {(int32_t)h, 1};
    const uint32_t sgn_ct[2] = {R, h};
    const nx_operand minus = nx_imm(-1.0, NX_DT_FP32);
    nx_operand sv = view(sr, cdt, g->n, 0, 2, raw_st, sgn_ct);
    nx_operand neg = view(sn, cdt, g->n, 0, 2, sgn_st, sgn_ct);
    nx_operand pos = view(sn, cdt, g->n, g->interleaved ? 1 : h, 2, sgn_st, sgn_ct);
    if (nx_kctx_tensor_scalar(k, NX_ENG_POOL, &neg, &sv, NX_ALU_MULTIPLY, &minus, NX_ALU_BYPASS, NULL, err) != 0 ||
        nx_kctx_tensor_copy(k, NX_ENG_POOL, &pos, &sv, err) != 0)
        return -1;
    return 0;
}

int nx_rope_products(nx_kctx *k, const nx_rope_rows *g, const nx_tile *x, nx_dtype dt, uint64_t x0,
                     const nx_tile *cs, const nx_tile *sn, nx_dtype cdt, const nx_operand *a, const nx_operand *b,
                     nx_error *err) {
    const uint32_t R = g->R, n = g->n, D = g->D, h = D / 2;
    /* consecutive rows read their own cos row (D/2 apart) or, shared, one */
    const int32_t cg = g->shared ? 0 : (int32_t)h;
    nx_operand xv, cv, xsw, sv;
    if (!g->interleaved) {
        /* each row as [2, D/2]: cos read twice through a stride-0 dim, the
         * halves swapped through a negative stride */
        const int32_t xs_[3] = {(int32_t)D, (int32_t)h, 1}, cs_[3] = {cg, 0, 1}, ws_[3] = {(int32_t)D, -(int32_t)h, 1};
        const uint32_t ct[3] = {R, 2, h};
        xv = view(x, dt, n, x0, 3, xs_, ct);
        cv = view(cs, cdt, n, 0, 3, cs_, ct);
        xsw = view(x, dt, n, x0 + h, 3, ws_, ct);
    } else {
        /* each row as [D/2, 2]: the pair members swapped */
        const int32_t xs_[3] = {(int32_t)D, 2, 1}, cs_[3] = {cg, 1, 0}, ws_[3] = {(int32_t)D, 2, -1};
        const uint32_t ct[3] = {R, h, 2};
        xv = view(x, dt, n, x0, 3, xs_, ct);
        cv = view(cs, cdt, n, 0, 3, cs_, ct);
        xsw = view(x, dt, n, x0 + 1, 3, ws_, ct);
    }
    if (g->shared) {
        const int32_t st[2] = {0, 1};
        const uint32_t ct[2] = {R, D};
        sv = view(sn, cdt, n, 0, 2, st, ct);
    } else {
        const int32_t one = 1;
        const uint32_t rd = R * D;
        sv = view(sn, cdt, n, 0, 1, &one, &rd);
    }
    if (nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, a, &xv, &cv, err) != 0 ||
        nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_MULTIPLY, b, &xsw, &sv, err) != 0)
        return -1;
    return 0;
}
