/* select_and_scatter_kernel's compute per tile (see leaf.c for the
 * algorithm): padding, window maxima, the equality mask, the first-maximum
 * selection, the scatter, and the copy of the owned output. */
#include <stdlib.h>
#include <string.h>

#include "isa/opcodes.h"
#include "state.h"

/* ---- views ---- */

nx_operand sas_view(const nx_tile *t, uint32_t np, uint64_t off, uint32_t nd, const int32_t *st,
                       const uint32_t *ct) {
    return nx_tile_view(t, (nx_dtype)t->dtype, 0, np, off, nd, st, ct);
}

nx_operand sas_v2(const nx_tile *t, uint32_t np, uint64_t off, int32_t s0, uint32_t c0, int32_t s1, uint32_t c1) {
    int32_t st[2] = {s0, s1};
    uint32_t ct[2] = {c0, c1};
    return sas_view(t, np, off, 2, st, ct);
}

nx_operand sas_konst(const sas_state *s, uint32_t np, int which, uint32_t rows, uint32_t cols) {
    return sas_v2(&s->konst, np, (uint64_t)which, 0, rows, 0, cols);
}

/* ACT: fill rows x cols of the padded operand at (r, c) with the fill. */
static int fill_rect(sas_state *s, const nx_tile *dst, uint32_t np, uint32_t ld, uint32_t r, uint32_t c, uint32_t rows,
                     uint32_t cols, int which, nx_error *err) {
    if (rows == 0 || cols == 0) return 0;
    nx_operand d = sas_v2(dst, np, (uint64_t)r * ld + c, (int32_t)ld, rows, 1, cols);
    nx_operand f = sas_konst(s, np, which, rows, cols);
    return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &d, &f, err);
}

int sas_emit_pad(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!sas_has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count, nrr = gh->ra1 - gh->ra0, nrc = gw->ra1 - gw->ra0;
    if (nrr && nrc) {
        nx_operand d = sas_v2(&b[B_XPAD], np, (uint64_t)gh->ra0 * gw->nx + gw->ra0, (int32_t)gw->nx, nrr, 1, nrc);
        nx_operand x = sas_v2(&b[B_XIN], np, 0, (int32_t)nrc, nrr, 1, nrc);
        if (nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &d, &x, err) != 0) return -1;
    }
    if (fill_rect(s, &b[B_XPAD], np, gw->nx, 0, 0, gh->ra0, gw->nx, 1, err) != 0) return -1;
    if (fill_rect(s, &b[B_XPAD], np, gw->nx, gh->ra1, 0, gh->nx - gh->ra1, gw->nx, 1, err) != 0) return -1;
    if (fill_rect(s, &b[B_XPAD], np, gw->nx, gh->ra0, 0, nrr, gw->ra0, 1, err) != 0) return -1;
    return fill_rect(s, &b[B_XPAD], np, gw->nx, gh->ra0, gw->ra1, nrr, gw->nx - gw->ra1, 1, err);
}

/* The window view of the padded operand: [nwin_h, nwin_w, wh, ww]. */
static nx_operand windows_view(const sas_state *s, const nx_tile *xpad, uint32_t np, const sas_geo *gh,
                               const sas_geo *gw) {
    int32_t st[4] = {(int32_t)(s->sh * gw->nx), (int32_t)s->sw, (int32_t)gw->nx, 1};
    uint32_t ct[4] = {gh->nwin, gw->nwin, (uint32_t)s->wh, (uint32_t)s->ww};
    return sas_view(xpad, np, 0, 4, st, ct);
}

int sas_emit_max_eq(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!sas_has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count;
    nx_operand win = windows_view(s, &b[B_XPAD], np, gh, gw);
    nx_operand mx = sas_v2(&b[B_MX], np, 0, (int32_t)gw->nwin, gh->nwin, 1, gw->nwin);
    nx_insn r = nx_insn_make(NX_OP_TENSOR_REDUCE);
    r.alu0 = NX_ALU_MAX;
    r.iparam[0] = (1 << 2) | (1 << 3);
    r.op[0] = mx;
    r.op[1] = win;
    if (nx_kctx_emit(s->k, NX_ENG_DVE, &r, err) != 0) return -1;
    int32_t bst[4] = {(int32_t)gw->nwin, 1, 0, 0};
    uint32_t bct[4] = {gh->nwin, gw->nwin, (uint32_t)s->wh, (uint32_t)s->ww};
    nx_operand mxb = sas_view(&b[B_MX], np, 0, 4, bst, bct);
    uint32_t neq = gh->nwin * gw->nwin * (uint32_t)s->K;
    nx_operand eq = sas_view(&b[B_EQ], np, 0, 1, (int32_t[1]){1}, &neq);
    return nx_kctx_tensor_tensor(s->k, NX_ENG_POOL, NX_ALU_IS_EQUAL, &eq, &win, &mxb, err);
}

int sas_emit_select(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!sas_has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count, nw = gw->nwin;
    if (sas_has_padding_only_window(gh, &s->dh) || sas_has_padding_only_window(gw, &s->dw)) {
        nx_operand all = sas_v2(&b[B_SEL], np, 0, (int32_t)nw, gh->nwin, 1, nw);
        if (nx_kctx_memset(s->k, NX_ENG_DVE, &all, (double)s->K, err) != 0) return -1;
    }
    for (int64_t k = s->K - 1; k >= 0; k--) {
        uint32_t a, bb, c, d;
        sas_valid_windows(gh, &s->dh, k / s->ww, &a, &bb);
        sas_valid_windows(gw, &s->dw, k % s->ww, &c, &d);
        if (a >= bb || c >= d) continue;
        nx_insn sel = nx_insn_make(NX_OP_SELECT);
        sel.op[0] = sas_v2(&b[B_SEL], np, (uint64_t)a * nw + c, (int32_t)nw, bb - a, 1, d - c);
        sel.op[1] = sas_v2(&b[B_EQ], np, ((uint64_t)a * nw + c) * (uint64_t)s->K + (uint64_t)k, (int32_t)(nw * s->K), bb - a,
                       (int32_t)s->K, d - c);
        sel.op[2] = nx_imm((double)k, NX_DT_FP32);
        if (nx_kctx_emit(s->k, NX_ENG_DVE, &sel, err) != 0) return -1;
    }
    return 0;
}

/* Output-buffer rows (or columns) that the first window position of each
 * stride residue does not write: marks[0..no). */
static void uncovered(const sas_geo *g, int64_t win, int64_t stride, uint8_t *marks) {
    memset(marks, 1, g->no);
    for (int64_t i = win - stride > 0 ? win - stride : 0; i < win; i++)
        for (uint32_t r = 0; r < g->nwin; r++) marks[g->xoff + r * stride + i] = 0;
}

static uint32_t count_runs(const uint8_t *m, uint32_t n) {
    uint32_t runs = 0;
    for (uint32_t i = 0; i < n; i++) runs += m[i] && (i == 0 || !m[i - 1]);
    return runs;
}

/* The output buffer before the scatter: init_value everywhere, or (+0
 * init) only where the first positions of the residues will not write. */
static int init_output(sas_state *s, const sas_tile *t, nx_tile *opad, nx_error *err) {
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    uint32_t np = t->count;
    if (s->init_zero) {
        uint8_t *mr = malloc(gh->no), *mc = malloc(gw->no);
        if (!mr || !mc) {
            free(mr);
            free(mc);
            return nx_fail(err, "select_and_scatter_kernel: out of memory");
        }
        uncovered(gh, s->wh, s->sh, mr);
        uncovered(gw, s->ww, s->sw, mc);
        int rc = 0;
        if (count_runs(mr, gh->no) + count_runs(mc, gw->no) <= 6) {
            for (uint32_t i = 0; i < gh->no && rc == 0; i++)
                if (mr[i] && (i == 0 || !mr[i - 1])) {
                    uint32_t j = i;
                    while (j < gh->no && mr[j]) j++;
                    rc = fill_rect(s, opad, np, gw->no, i, 0, j - i, gw->no, 0, err);
                }
            for (uint32_t i = 0; i < gw->no && rc == 0; i++)
                if (mc[i] && (i == 0 || !mc[i - 1])) {
                    uint32_t j = i;
                    while (j < gw->no && mc[j]) j++;
                    rc = fill_rect(s, opad, np, gw->no, 0, i, gh->no, j - i, 0, err);
                }
            free(mr);
            free(mc);
            return rc;
        }
        free(mr);
        free(mc);
    }
    return fill_rect(s, opad, np, gw->no, 0, 0, gh->no, gw->no, s->init_zero ? 0 : 2, err);
}

int sas_emit_init(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!sas_has_windows(s, t)) return 0;
    return init_output(s, t, &s->buf[ti % SAS_SLOTS][B_OPAD], err);
}

int sas_emit_scatter(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!sas_has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count, nw = gw->nwin, wo = gw->no;
    nx_operand sel = sas_v2(&b[B_SEL], np, 0, (int32_t)nw, gh->nwin, 1, nw);
    nx_operand src = sas_v2(&b[B_SRC], np, 0, (int32_t)nw, gh->nwin, 1, nw);
    nx_operand g = sas_v2(&b[B_GTMP], np, 0, (int32_t)nw, gh->nwin, 1, nw);
    for (int64_t k = s->K - 1; k >= 0; k--) {
        int64_t i = k / s->ww, j = k % s->ww;
        int first = s->init_zero && i + s->sh >= s->wh && j + s->sw >= s->ww;
        uint32_t a, bb, c, d;
        sas_valid_windows(gh, &s->dh, i, &a, &bb);
        sas_valid_windows(gw, &s->dw, j, &c, &d);
        if (!first && (a >= bb || c >= d)) continue; /* sel never equals k */
        nx_operand o = sas_v2(&b[B_OPAD], np, (uint64_t)(gh->xoff + i) * wo + gw->xoff + (uint64_t)j,
                          (int32_t)(s->sh * wo), gh->nwin, (int32_t)s->sw, nw);
        nx_operand kk = nx_imm((double)k, NX_DT_FP32);
        if (first) {
            if (nx_kctx_scalar_tensor_tensor(s->k, NX_ENG_POOL, &o, &sel, NX_ALU_IS_EQUAL, &kk, NX_ALU_MULTIPLY, &src,
                                             err) != 0)
                return -1;
            continue;
        }
        if (nx_kctx_scalar_tensor_tensor(s->k, NX_ENG_POOL, &g, &sel, NX_ALU_IS_EQUAL, &kk, NX_ALU_MULTIPLY, &src,
                                         err) != 0 ||
            nx_kctx_tensor_tensor(s->k, NX_ENG_POOL, NX_ALU_ADD, &o, &o, &g, err) != 0)
            return -1;
    }
    return 0;
}

/* ACT: the owned part into the contiguous store buffer. */
int sas_emit_out(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count;
    nx_operand dst = sas_v2(&b[B_OUT], np, 0, (int32_t)gw->nown, gh->nown, 1, gw->nown);
    if (!sas_has_windows(s, t)) {
        nx_operand f = sas_konst(s, np, s->init_zero ? 0 : 2, gh->nown, gw->nown);
        return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &dst, &f, err);
    }
    nx_operand src = sas_v2(&b[B_OPAD], np, (uint64_t)gh->own0 * gw->no + gw->own0, (int32_t)gw->no, gh->nown, 1, gw->nown);
    if (s->init_zero) return nx_kctx_activation(s->k, NX_ACT_IDENTITY, &dst, &src, 1.0, 0.0, err);
    return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &dst, &src, err);
}

