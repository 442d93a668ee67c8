/* select_and_scatter_kernel: XLA SelectAndScatter (select = GE, scatter =
 * add) on NCHW operands, the max-pool gradient.
 *
 * Follows the public NKI vision kernel of the same name (aws-neuron
 * nki-samples, reference/vision.py): (n, c) planes on partitions, the window
 * maximum by a reduction over a strided window view, an equality mask, the
 * first maximum by a priority, and the scatter as shifted multiply-adds of
 * the source into the output planes. That kernel fixes a 3x3 window, stride
 * 2, padding 1, C = 64 and an even N (two images on 128 partitions) and
 * goes through HBM for its partial sums. Past it:
 *  - any window, stride and padding (negative crops) over H and W, windows
 *    of 1 over N and C with any stride and padding (source planes map to
 *    operand planes; planes no window reaches are init_value), any N, C, H,
 *    W, every float dtype, any init_value;
 *  - planes that do not fit SBUF are cut into bands of owned rows (and
 *    columns) that recompute the windows at their edges, so no partial sums
 *    leave the chip; bands of the same geometry from any planes share a tile,
 *    so few planes still fill the partitions;
 *  - padding is never selectable: the padded copy holds the dtype's lowest
 *    value there, and the first-maximum selection runs per window position
 *    only over the windows where that position is real;
 *  - sums follow XLA's order (the source's row-major order) exactly, so the
 *    result is bit-exact (also the sign of zeros for init_value +0).
 *
 * Per tile (up to 128 bands of one class on partitions), engine by engine:
 *   SP    loads the operand rows (real part only, contiguous) and the source
 *   ACT   copies them into the padded layout, fills the padding with -inf
 *   DVE   mx  = max over each window (tensor_reduce over [wr, wc, i, j])
 *   POOL  eq  = (window element == mx) for all windows and positions at once
 *   DVE   sel = the first window position k with eq, by selects in
 *               descending k, each over the windows where k is real
 *   POOL  for k descending: out[k's positions] (+)= source * (sel == k);
 *         the first position of each stride-residue class writes, the
 *         others add (descending k is the source's row-major order)
 *   ACT   copies the owned rows out (adding +0: -0 sums become +0, as XLA's)
 *   SP    stores them
 * Tiles are software-pipelined over three SBUF slots: loads and padding two
 * tiles ahead, the max and mask of the next tile before the selection of
 * this one (so DVE and POOL overlap), stores one tile behind. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isa/opcodes.h"
#include "plan.h"
#include "select_and_scatter.h"

#define SAS_SLOTS 3
#define SAS_PIECE_BYTES 65536
#define SAS_MAX_PIECES 8

/* Buffers of a slot. The window maxima and the scatter's partial products
 * share their space: POOL reads the maxima for the mask before it writes the
 * products, in its own stream order, and the next tile of the slot computes
 * its maxima (DVE) after that scatter in emission order. */
enum { B_XIN, B_XPAD, B_SRC, B_MX, B_EQ, B_SEL, B_OPAD, B_OUT, B_COUNT, B_GTMP = B_MX };

typedef struct sas_unit {
    uint64_t op_plane, src_plane; /* plane indices in the operand / source */
    uint32_t bh, bw;              /* row band, column band */
} sas_unit;

typedef struct sas_tile {
    uint32_t first, count; /* units */
    uint32_t ch, cw;       /* classes */
} sas_tile;

typedef struct sas_state {
    nx_kctx *k;
    nx_dtype dt;
    uint64_t es;
    uint64_t H, W, SH, SW;
    uint64_t x_off, s_off, o_off; /* HBM bytes */
    nx_sas_params prm;
    sas_dim dh, dw;
    sas_dim_plan ph, pw;
    int64_t K, wh, ww, sh, sw;
    int init_zero;
    uint32_t p;
    sas_unit *units;
    uint32_t nunits;
    sas_tile *tiles;
    uint32_t ntiles;
    uint64_t cap[B_COUNT]; /* elements per buffer */
    nx_tile buf[SAS_SLOTS][B_COUNT];
    nx_tile konst;         /* [p x 3]: 0, the padding fill, init_value */
    uint32_t lanes, load_lanes, next_load, next_store;
} sas_state;

/* The masks are bytes; window positions (0..K) are exact in bf16 up to 256. */
static nx_dtype buf_dtype(const sas_state *s, int b) {
    return b == B_EQ ? NX_DT_UINT8 : b == B_SEL ? (s->K < 256 ? NX_DT_BF16 : NX_DT_FP32) : s->dt;
}

/* ---- views ---- */

static nx_operand view(const nx_tile *t, uint32_t np, uint64_t off, uint32_t nd, const int32_t *st,
                       const uint32_t *ct) {
    return nx_tile_view(t, (nx_dtype)t->dtype, 0, np, off, nd, st, ct);
}

static nx_operand v2(const nx_tile *t, uint32_t np, uint64_t off, int32_t s0, uint32_t c0, int32_t s1, uint32_t c1) {
    int32_t st[2] = {s0, s1};
    uint32_t ct[2] = {c0, c1};
    return view(t, np, off, 2, st, ct);
}

static nx_operand konst(const sas_state *s, uint32_t np, int which, uint32_t rows, uint32_t cols) {
    return v2(&s->konst, np, (uint64_t)which, 0, rows, 0, cols);
}

/* ---- DMA ---- */

/* HBM element offsets of a unit in the operand (its loaded real part), the
 * source (its windows) and the output (its owned part). */
static void unit_offsets(const sas_state *s, const sas_unit *u, int64_t off[3]) {
    const sas_band *bh = &s->ph.bands[u->bh], *bw = &s->pw.bands[u->bw];
    off[0] = (int64_t)(u->op_plane * s->H * s->W) + bh->yreal0 * (int64_t)s->W + bw->yreal0;
    off[1] = (int64_t)(u->src_plane * s->SH * s->SW) + bh->r_lo * (int64_t)s->SW + bw->r_lo;
    off[2] = (int64_t)(u->op_plane * s->H * s->W) + bh->y0 * (int64_t)s->W + bw->y0;
}

/* A transfer of `rows` partitions between HBM [rows x nr x nc] (row pitch
 * `pitch` elements per partition, `ld` elements per row) and a contiguous
 * SBUF tile, cut into pieces over the lanes. */
static int transfer(sas_state *s, int store, const nx_tile *t, uint32_t p0, uint32_t rows, uint64_t hbm_byte,
                    int64_t pstride, uint32_t nr, uint32_t nc, uint64_t ld, nx_error *err) {
    if (rows == 0 || nr == 0 || nc == 0) return 0;
    uint64_t bytes = (uint64_t)rows * nr * nc * s->es;
    uint32_t pieces = (uint32_t)((bytes + SAS_PIECE_BYTES - 1) / SAS_PIECE_BYTES);
    if (pieces > SAS_MAX_PIECES) pieces = SAS_MAX_PIECES;
    if (pieces > rows) pieces = rows;
    if (pieces < 1) pieces = 1;
    int32_t st[2] = {(int32_t)ld, 1};
    uint32_t ct[2] = {nr, nc};
    uint32_t nd = 2;
    if (ld == nc) { /* whole rows: one contiguous run */
        ct[0] = nr * nc;
        st[0] = 1;
        nd = 1;
    }
    uint32_t base = rows / pieces, extra = rows % pieces, r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t n = base + (i < extra);
        nx_operand sb = nx_tile_view(t, s->dt, p0 + r0, n, 0, 1, (int32_t[1]){1}, (uint32_t[1]){nr * nc});
        nx_operand hb = nx_ap(NX_OPK_HBM, s->dt, 0, n, (int32_t)pstride, hbm_byte + (uint64_t)r0 * pstride * s->es,
                              nd, st, ct);
        uint32_t lane;
        if (store) {
            uint32_t sl = s->lanes - s->load_lanes;
            lane = sl ? s->load_lanes + s->next_store++ % sl : 0;
        } else {
            lane = s->next_load++ % s->load_lanes;
        }
        if (store ? nx_kctx_dma_on(s->k, lane, &hb, &sb, err) : nx_kctx_dma_on(s->k, lane, &sb, &hb, err)) return -1;
        r0 += n;
    }
    return 0;
}

/* Calls fn for each run of units of the tile whose HBM offsets step evenly
 * in all three tensors. */
typedef int (*run_fn)(sas_state *s, const sas_tile *t, uint32_t slot, uint32_t p0, uint32_t n, const int64_t *off,
                      const int64_t *step, nx_error *err);

static int for_runs(sas_state *s, const sas_tile *t, uint32_t slot, run_fn fn, nx_error *err) {
    uint32_t i = 0;
    while (i < t->count) {
        int64_t off[3], step[3] = {0, 0, 0}, nxt[3], prev[3];
        unit_offsets(s, &s->units[t->first + i], off);
        memcpy(prev, off, sizeof off);
        uint32_t n = 1;
        while (i + n < t->count) {
            unit_offsets(s, &s->units[t->first + i + n], nxt);
            int ok = 1;
            for (int m = 0; m < 3; m++) {
                int64_t d = nxt[m] - prev[m];
                if (n == 1 ? (d <= 0 || d > INT32_MAX) : d != step[m]) ok = 0;
            }
            if (!ok) break;
            if (n == 1)
                for (int m = 0; m < 3; m++) step[m] = nxt[m] - prev[m];
            memcpy(prev, nxt, sizeof nxt);
            n++;
        }
        if (n == 1)
            for (int m = 0; m < 3; m++) step[m] = 1;
        if (fn(s, t, slot, i, n, off, step, err) != 0) return -1;
        i += n;
    }
    return 0;
}

static int load_run(sas_state *s, const sas_tile *t, uint32_t slot, uint32_t p0, uint32_t n, const int64_t *off,
                    const int64_t *step, nx_error *err) {
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    if (transfer(s, 0, &s->buf[slot][B_XIN], p0, n, s->x_off + (uint64_t)off[0] * s->es, step[0], gh->ra1 - gh->ra0,
                 gw->ra1 - gw->ra0, s->W, err) != 0)
        return -1;
    return transfer(s, 0, &s->buf[slot][B_SRC], p0, n, s->s_off + (uint64_t)off[1] * s->es, step[1], gh->nwin,
                    gw->nwin, s->SW, err);
}

static int store_run(sas_state *s, const sas_tile *t, uint32_t slot, uint32_t p0, uint32_t n, const int64_t *off,
                     const int64_t *step, nx_error *err) {
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    return transfer(s, 1, &s->buf[slot][B_OUT], p0, n, s->o_off + (uint64_t)off[2] * s->es, step[2], gh->nown,
                    gw->nown, s->W, err);
}

static int has_windows(const sas_state *s, const sas_tile *t) {
    return s->ph.geo[t->ch].nwin && s->pw.geo[t->cw].nwin;
}

/* ---- the stages of a tile ---- */

static int emit_loads(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!has_windows(s, t)) return 0;
    return for_runs(s, t, ti % SAS_SLOTS, load_run, err);
}

/* ACT: fill rows x cols of the padded operand at (r, c) with the fill. */
static int fill_rect(sas_state *s, const nx_tile *dst, uint32_t np, uint32_t ld, uint32_t r, uint32_t c, uint32_t rows,
                     uint32_t cols, int which, nx_error *err) {
    if (rows == 0 || cols == 0) return 0;
    nx_operand d = v2(dst, np, (uint64_t)r * ld + c, (int32_t)ld, rows, 1, cols);
    nx_operand f = konst(s, np, which, rows, cols);
    return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &d, &f, err);
}

static int emit_pad(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count, nrr = gh->ra1 - gh->ra0, nrc = gw->ra1 - gw->ra0;
    if (nrr && nrc) {
        nx_operand d = v2(&b[B_XPAD], np, (uint64_t)gh->ra0 * gw->nx + gw->ra0, (int32_t)gw->nx, nrr, 1, nrc);
        nx_operand x = v2(&b[B_XIN], np, 0, (int32_t)nrc, nrr, 1, nrc);
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
    return view(xpad, np, 0, 4, st, ct);
}

static int emit_max_eq(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count;
    nx_operand win = windows_view(s, &b[B_XPAD], np, gh, gw);
    nx_operand mx = v2(&b[B_MX], np, 0, (int32_t)gw->nwin, gh->nwin, 1, gw->nwin);
    nx_insn r = nx_insn_make(NX_OP_TENSOR_REDUCE);
    r.alu0 = NX_ALU_MAX;
    r.iparam[0] = (1 << 2) | (1 << 3);
    r.op[0] = mx;
    r.op[1] = win;
    if (nx_kctx_emit(s->k, NX_ENG_DVE, &r, err) != 0) return -1;
    int32_t bst[4] = {(int32_t)gw->nwin, 1, 0, 0};
    uint32_t bct[4] = {gh->nwin, gw->nwin, (uint32_t)s->wh, (uint32_t)s->ww};
    nx_operand mxb = view(&b[B_MX], np, 0, 4, bst, bct);
    uint32_t neq = gh->nwin * gw->nwin * (uint32_t)s->K;
    nx_operand eq = view(&b[B_EQ], np, 0, 1, (int32_t[1]){1}, &neq);
    return nx_kctx_tensor_tensor(s->k, NX_ENG_POOL, NX_ALU_IS_EQUAL, &eq, &win, &mxb, err);
}

static int emit_select(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count, nw = gw->nwin;
    if (sas_has_padding_only_window(gh, &s->dh) || sas_has_padding_only_window(gw, &s->dw)) {
        nx_operand all = v2(&b[B_SEL], np, 0, (int32_t)nw, gh->nwin, 1, nw);
        if (nx_kctx_memset(s->k, NX_ENG_DVE, &all, (double)s->K, err) != 0) return -1;
    }
    for (int64_t k = s->K - 1; k >= 0; k--) {
        uint32_t a, bb, c, d;
        sas_valid_windows(gh, &s->dh, k / s->ww, &a, &bb);
        sas_valid_windows(gw, &s->dw, k % s->ww, &c, &d);
        if (a >= bb || c >= d) continue;
        nx_insn sel = nx_insn_make(NX_OP_SELECT);
        sel.op[0] = v2(&b[B_SEL], np, (uint64_t)a * nw + c, (int32_t)nw, bb - a, 1, d - c);
        sel.op[1] = v2(&b[B_EQ], np, ((uint64_t)a * nw + c) * (uint64_t)s->K + (uint64_t)k, (int32_t)(nw * s->K), bb - a,
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

static int emit_init(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!has_windows(s, t)) return 0;
    return init_output(s, t, &s->buf[ti % SAS_SLOTS][B_OPAD], err);
}

static int emit_scatter(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!has_windows(s, t)) return 0;
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count, nw = gw->nwin, wo = gw->no;
    nx_operand sel = v2(&b[B_SEL], np, 0, (int32_t)nw, gh->nwin, 1, nw);
    nx_operand src = v2(&b[B_SRC], np, 0, (int32_t)nw, gh->nwin, 1, nw);
    nx_operand g = v2(&b[B_GTMP], np, 0, (int32_t)nw, gh->nwin, 1, nw);
    for (int64_t k = s->K - 1; k >= 0; k--) {
        int64_t i = k / s->ww, j = k % s->ww;
        int first = s->init_zero && i + s->sh >= s->wh && j + s->sw >= s->ww;
        uint32_t a, bb, c, d;
        sas_valid_windows(gh, &s->dh, i, &a, &bb);
        sas_valid_windows(gw, &s->dw, j, &c, &d);
        if (!first && (a >= bb || c >= d)) continue; /* sel never equals k */
        nx_operand o = v2(&b[B_OPAD], np, (uint64_t)(gh->xoff + i) * wo + gw->xoff + (uint64_t)j,
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
static int emit_out(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    const sas_geo *gh = &s->ph.geo[t->ch], *gw = &s->pw.geo[t->cw];
    nx_tile *b = s->buf[ti % SAS_SLOTS];
    uint32_t np = t->count;
    nx_operand dst = v2(&b[B_OUT], np, 0, (int32_t)gw->nown, gh->nown, 1, gw->nown);
    if (!has_windows(s, t)) {
        nx_operand f = konst(s, np, s->init_zero ? 0 : 2, gh->nown, gw->nown);
        return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &dst, &f, err);
    }
    nx_operand src = v2(&b[B_OPAD], np, (uint64_t)gh->own0 * gw->no + gw->own0, (int32_t)gw->no, gh->nown, 1, gw->nown);
    if (s->init_zero) return nx_kctx_activation(s->k, NX_ACT_IDENTITY, &dst, &src, 1.0, 0.0, err);
    return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &dst, &src, err);
}

static int emit_store(sas_state *s, uint32_t ti, nx_error *err) {
    return for_runs(s, &s->tiles[ti], ti % SAS_SLOTS, store_run, err);
}

/* ---- planning ---- */

static void sizes_of(const sas_state *s, uint64_t cap[B_COUNT]) {
    memset(cap, 0, B_COUNT * sizeof cap[0]);
    for (uint32_t a = 0; a < s->ph.ngeo; a++)
        for (uint32_t c = 0; c < s->pw.ngeo; c++) {
            const sas_geo *gh = &s->ph.geo[a], *gw = &s->pw.geo[c];
            uint64_t v[B_COUNT];
            uint64_t real = (uint64_t)(gh->ra1 - gh->ra0) * (gw->ra1 - gw->ra0);
            uint64_t own = (uint64_t)gh->nown * gw->nown, win = (uint64_t)gh->nwin * gw->nwin;
            v[B_XIN] = real;
            v[B_XPAD] = (uint64_t)gh->nx * gw->nx;
            v[B_OUT] = own;
            v[B_SRC] = v[B_MX] = v[B_SEL] = win;
            v[B_EQ] = win * (uint64_t)s->K;
            v[B_OPAD] = (uint64_t)gh->no * gw->no;
            for (int b = 0; b < B_COUNT; b++)
                if (v[b] > cap[b]) cap[b] = v[b];
        }
    for (int b = 0; b < B_COUNT; b++)
        if (cap[b] == 0) cap[b] = 1;
}

static uint64_t slot_bytes(const sas_state *s, const uint64_t cap[B_COUNT]) {
    uint64_t n = 0;
    for (int b = 0; b < B_COUNT; b++) n += (cap[b] * nx_dtype_size(buf_dtype(s, b)) + 63) / 64 * 64;
    return n;
}

static int fits(const sas_state *s, const uint64_t cap[B_COUNT], const nx_geometry *geo, uint64_t budget) {
    for (int b = 0; b < B_COUNT; b++)
        if (cap[b] > geo->sbuf_free_elems_max) return 0;
    return SAS_SLOTS * slot_bytes(s, cap) <= budget;
}

/* Band sizes: whole planes if they fit and there are enough planes to fill
 * the partitions; else rows (a multiple of the stride, so interior bands share
 * a class) and, if a single row band is too big, columns. */
static int plan_fits(sas_state *s, int64_t rh, int64_t rw, const nx_geometry *geo, uint64_t budget, int keep,
                     nx_error *err) {
    if (sas_plan_dim(&s->dh, rh, &s->ph, err) != 0) return -1;
    if (sas_plan_dim(&s->dw, rw, &s->pw, err) != 0) return -1;
    sizes_of(s, s->cap);
    int ok = fits(s, s->cap, geo, budget);
    if (!ok || !keep) {
        sas_dim_plan_free(&s->ph);
        sas_dim_plan_free(&s->pw);
    }
    return ok;
}

/* The largest band of `len` rows (a multiple of `step` below len) for which
 * fit(r) holds, or 0; fit is monotone (thinner bands need less SBUF). */
static int64_t largest_fit(sas_state *s, int64_t len, int64_t step, int64_t other, int rows, const nx_geometry *geo,
                           uint64_t budget, nx_error *err) {
    int f = rows ? plan_fits(s, len, other, geo, budget, 0, err) : plan_fits(s, other, len, geo, budget, 0, err);
    if (f < 0) return -1;
    if (f) return len;
    int64_t lo = 0, hi = (len - 1) / step; /* candidates k * step, k in [1, hi]; then thinner than the stride */
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2, r = mid * step;
        f = rows ? plan_fits(s, r, other, geo, budget, 0, err) : plan_fits(s, other, r, geo, budget, 0, err);
        if (f < 0) return -1;
        if (f) lo = mid;
        else hi = mid - 1;
    }
    if (lo > 0) return lo * step;
    for (int64_t r = step - 1; r >= 1; r--) {
        f = rows ? plan_fits(s, r, other, geo, budget, 0, err) : plan_fits(s, other, r, geo, budget, 0, err);
        if (f < 0) return -1;
        if (f) return r;
    }
    return 0;
}

/* Band sizes: whole planes if they fit and there are enough planes to fill
 * the partitions; else the tallest bands of rows that fit (a multiple of the
 * stride, so interior bands share a class), and columns only if a band of
 * one row is still too big. */
static int plan_bands(sas_state *s, uint64_t planes, const nx_geometry *geo, nx_error *err) {
    uint64_t budget = geo->sbuf_partition_bytes * 3 / 4;
    int64_t rh = s->dh.len, rw = s->dw.len;
    if (planes > 0 && planes < s->p) {
        /* more bands for parallelism, but not so thin that most windows are
         * computed twice */
        int64_t want = (int64_t)((s->p + planes - 1) / planes);
        int64_t r = (s->dh.len + want - 1) / want, floor_r = 2 * (s->wh > s->sh ? s->wh : s->sh);
        if (r < floor_r) r = floor_r;
        r = (r + s->sh - 1) / s->sh * s->sh;
        if (r < rh) rh = r;
    }
    int64_t r = largest_fit(s, rh, s->sh, rw, 1, geo, budget, err);
    if (r < 0) return -1;
    if (r == 0) {
        rh = 1;
        rw = largest_fit(s, rw, s->sw, 1, 0, geo, budget, err);
        if (rw < 0) return -1;
        if (rw == 0)
            return nx_fail(err, "select_and_scatter_kernel: a window of %lld x %lld (stride %lld x %lld) does not fit "
                           "SBUF even for one output element per band",
                           (long long)s->wh, (long long)s->ww, (long long)s->sh, (long long)s->sw);
    } else {
        rh = r;
    }
    return plan_fits(s, rh, rw, geo, budget, 1, err) == 1 ? 0 : nx_fail(err, "select_and_scatter_kernel: band planning failed");
}

/* Units (one per hit plane and band), grouped by class into tiles. */
static int plan_units(sas_state *s, const uint64_t *shape, const uint64_t *src_shape, nx_error *err) {
    uint64_t hit = 0;
    for (uint64_t n2 = 0; n2 < src_shape[0]; n2++)
        for (uint64_t c2 = 0; c2 < src_shape[1]; c2++) {
            int64_t n = (int64_t)n2 * s->prm.stride[0] - s->prm.lo[0], c = (int64_t)c2 * s->prm.stride[1] - s->prm.lo[1];
            hit += n >= 0 && n < (int64_t)shape[0] && c >= 0 && c < (int64_t)shape[1];
        }
    if (plan_bands(s, hit, nx_kctx_geometry(s->k), err) != 0) return -1;
    uint64_t per_plane = (uint64_t)s->ph.nbands * s->pw.nbands;
    uint64_t total = hit * per_plane;
    if (total > UINT32_MAX / 2) return nx_fail(err, "select_and_scatter_kernel: %llu bands are too many", (unsigned long long)total);
    s->units = calloc(total ? total : 1, sizeof *s->units);
    s->tiles = calloc(total ? total : 1, sizeof *s->tiles);
    if (!s->units || !s->tiles) return nx_fail(err, "select_and_scatter_kernel: out of memory planning %llu bands", (unsigned long long)total);
    /* band-major (all planes of a band, then the next band) when the planes
     * alone fill the partitions, else plane-major: either way runs of units
     * step evenly through HBM */
    int band_major = hit >= s->p;
    uint32_t ncls = s->ph.ngeo * s->pw.ngeo;
    for (uint32_t cls = 0; cls < ncls; cls++) {
        uint32_t ch = cls / s->pw.ngeo, cw = cls % s->pw.ngeo, start = s->nunits;
        for (uint64_t outer = 0; outer < (band_major ? per_plane : hit); outer++)
            for (uint64_t inner = 0; inner < (band_major ? hit : per_plane); inner++) {
                uint64_t band = band_major ? outer : inner, pl = band_major ? inner : outer;
                uint32_t bh = (uint32_t)(band / s->pw.nbands), bw = (uint32_t)(band % s->pw.nbands);
                if (s->ph.bands[bh].cls != ch || s->pw.bands[bw].cls != cw) continue;
                sas_unit *u = &s->units[s->nunits++];
                u->bh = bh;
                u->bw = bw;
                u->src_plane = pl; /* a placeholder: the hit planes in order, mapped below */
            }
        for (uint32_t f = start; f < s->nunits; f += s->p) {
            sas_tile *t = &s->tiles[s->ntiles++];
            t->first = f;
            t->count = s->nunits - f < s->p ? s->nunits - f : s->p;
            t->ch = ch;
            t->cw = cw;
        }
    }
    /* hit plane index -> (source plane, operand plane) */
    uint64_t *src_of = malloc((hit ? hit : 1) * sizeof *src_of), *op_of = malloc((hit ? hit : 1) * sizeof *op_of);
    if (!src_of || !op_of) {
        free(src_of);
        free(op_of);
        return nx_fail(err, "select_and_scatter_kernel: out of memory");
    }
    uint64_t h = 0;
    for (uint64_t n2 = 0; n2 < src_shape[0]; n2++)
        for (uint64_t c2 = 0; c2 < src_shape[1]; c2++) {
            int64_t n = (int64_t)n2 * s->prm.stride[0] - s->prm.lo[0], c = (int64_t)c2 * s->prm.stride[1] - s->prm.lo[1];
            if (n < 0 || n >= (int64_t)shape[0] || c < 0 || c >= (int64_t)shape[1]) continue;
            src_of[h] = n2 * src_shape[1] + c2;
            op_of[h] = (uint64_t)n * shape[1] + (uint64_t)c;
            h++;
        }
    for (uint32_t i = 0; i < s->nunits; i++) {
        uint64_t pl = s->units[i].src_plane;
        s->units[i].src_plane = src_of[pl];
        s->units[i].op_plane = op_of[pl];
    }
    free(src_of);
    free(op_of);
    return 0;
}

/* Operand planes no source plane selects from hold init_value: stored from
 * a tile of it, runs of evenly spaced planes at a time. */
static int fill_unhit_planes(sas_state *s, const uint64_t *shape, const uint64_t *src_shape, nx_error *err) {
    uint64_t planes = shape[0] * shape[1], hw = s->H * s->W;
    uint8_t *hitp = calloc(planes, 1);
    if (!hitp) return nx_fail(err, "select_and_scatter_kernel: out of memory");
    uint64_t nhit = 0;
    for (uint64_t n2 = 0; n2 < src_shape[0]; n2++)
        for (uint64_t c2 = 0; c2 < src_shape[1]; c2++) {
            int64_t n = (int64_t)n2 * s->prm.stride[0] - s->prm.lo[0], c = (int64_t)c2 * s->prm.stride[1] - s->prm.lo[1];
            if (n >= 0 && n < (int64_t)shape[0] && c >= 0 && c < (int64_t)shape[1]) {
                hitp[(uint64_t)n * shape[1] + (uint64_t)c] = 1;
                nhit++;
            }
        }
    int rc = 0;
    if (nhit < planes) {
        uint64_t chunk = hw < 4096 ? hw : 4096;
        nx_tile fill;
        memset(&fill, 0, sizeof fill);
        rc = nx_kctx_alloc(s->k, NX_OPK_SBUF, "sas_init", s->dt, s->p, chunk, &fill, err);
        if (rc == 0) {
            nx_operand all = view(&fill, s->p, 0, 1, (int32_t[1]){1}, (uint32_t[1]){(uint32_t)chunk});
            nx_operand f = v2(&s->konst, s->p, 2, 0, 1, 0, (uint32_t)chunk);
            rc = nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &all, &f, err);
        }
        for (uint64_t pl = 0; pl < planes && rc == 0;) {
            if (hitp[pl]) {
                pl++;
                continue;
            }
            uint64_t n = 1;
            while (pl + n < planes && !hitp[pl + n] && n < s->p) n++;
            for (uint64_t e = 0; e < hw && rc == 0; e += chunk) {
                uint32_t w = (uint32_t)(hw - e < chunk ? hw - e : chunk);
                nx_operand src = nx_tile_view(&fill, s->dt, 0, (uint32_t)n, 0, 1, (int32_t[1]){1}, &w);
                nx_operand dst = nx_ap(NX_OPK_HBM, s->dt, 0, (uint32_t)n, (int32_t)hw,
                                       s->o_off + (pl * hw + e) * s->es, 1, (int32_t[1]){1}, &w);
                uint32_t sl = s->lanes - s->load_lanes;
                rc = nx_kctx_dma_on(s->k, sl ? s->load_lanes + s->next_store++ % sl : 0, &dst, &src, err);
            }
            pl += n;
        }
        nx_error rerr;
        if (fill.bytes) nx_kctx_release(s->k, &fill, &rerr);
    }
    free(hitp);
    return rc;
}

/* ---- the call ---- */

static int check_call(const nx_kernel_call *call, nx_sas_params *prm, uint64_t *src_shape, nx_error *err) {
    uint32_t outs = call->nargs >= call->n_inputs ? call->nargs - call->n_inputs : 0;
    if (call->nargs != 3 || call->n_inputs != 2)
        return nx_fail(err, "select_and_scatter_kernel: expects 2 inputs (operand, source) and 1 output, got %u input%s "
                       "and %u output%s",
                       call->n_inputs, call->n_inputs == 1 ? "" : "s", outs, outs == 1 ? "" : "s");
    const nx_tensor_ref *x = &call->args[0], *src = &call->args[1], *y = &call->args[2];
    if (x->ndims != 4)
        return nx_fail(err, "operand 0 (%s): select_and_scatter_kernel takes a rank-4 NCHW operand, got %u dims", x->name,
                       x->ndims);
    if (!nx_dtype_is_float(x->dtype))
        return nx_fail(err, "operand 0 (%s): dtype %s: select_and_scatter_kernel takes float dtypes (fp32, bf16, fp16, "
                       "fp8_e4m3, fp8_e5m2)",
                       x->name, nx_dtype_name(x->dtype));
    if (src->dtype != x->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from operand 0 (%s)'s %s", src->name,
                       nx_dtype_name(src->dtype), x->name, nx_dtype_name(x->dtype));
    if (y->dtype != x->dtype || y->ndims != 4 || memcmp(y->shape, x->shape, sizeof x->shape[0] * 4) != 0)
        return nx_fail(err, "result (%s): must have operand 0 (%s)'s shape and dtype", y->name, x->name);
    /* the seed gives this leaf no builder arguments: its attributes are the op's */
    if (nx_sas_params_read(call->attrs ? call->attrs : call->additional_args, 4, prm, err) != 0) return -1;
    for (int d = 0; d < 2; d++)
        if (prm->window[d] != 1)
            return nx_fail(err, "attribute window_dimensions: dim %d (%s) has a window of %lld: select_and_scatter_kernel "
                           "windows H and W only (windows of 1 over N and C)",
                           d, d ? "C" : "N", (long long)prm->window[d]);
    if (nx_sas_source_shape(prm, x->shape, src_shape, err) != 0) return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    if (src->ndims != 4 || memcmp(src->shape, src_shape, 4 * sizeof *src_shape) != 0)
        return nx_fail(err, "operand 1 (%s): shape must be the window counts [%llu,%llu,%llu,%llu]", src->name,
                       (unsigned long long)src_shape[0], (unsigned long long)src_shape[1],
                       (unsigned long long)src_shape[2], (unsigned long long)src_shape[3]);
    for (int d = 2; d < 4; d++)
        if (x->shape[d] > INT32_MAX / 4 || prm->window[d] > 65536 || prm->stride[d] > INT32_MAX / 4 ||
            llabs(prm->lo[d]) > INT32_MAX / 4)
            return nx_fail(err, "operand 0 (%s): dim %d beyond the access patterns' 32-bit strides", x->name, d);
    return 0;
}

int select_and_scatter_kernel(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    sas_state s;
    memset(&s, 0, sizeof s);
    uint64_t src_shape[4];
    if (check_call(call, &s.prm, src_shape, err) != 0) return -1;
    const nx_tensor_ref *x = &call->args[0];
    s.k = k;
    s.dt = x->dtype;
    s.es = nx_dtype_size(x->dtype);
    s.H = x->shape[2];
    s.W = x->shape[3];
    s.SH = src_shape[2];
    s.SW = src_shape[3];
    s.x_off = x->hbm_offset;
    s.s_off = call->args[1].hbm_offset;
    s.o_off = call->args[2].hbm_offset;
    s.wh = s.prm.window[2];
    s.ww = s.prm.window[3];
    s.sh = s.prm.stride[2];
    s.sw = s.prm.stride[3];
    s.K = s.wh * s.ww;
    s.dh = (sas_dim){(int64_t)s.H, s.wh, s.sh, s.prm.lo[2], (int64_t)s.SH};
    s.dw = (sas_dim){(int64_t)s.W, s.ww, s.sw, s.prm.lo[3], (int64_t)s.SW};
    s.init_zero = s.prm.init == 0 && !signbit(s.prm.init);
    s.p = nx_kctx_geometry(k)->partitions;
    s.lanes = nx_kctx_lanes(k);
    s.load_lanes = s.lanes > 1 ? s.lanes / 2 : 1;
    if (s.K > 65536)
        return nx_fail(err, "attribute window_dimensions: a window of %lld positions exceeds 65536", (long long)s.K);

    int rc = -1;
    uint32_t nslots = 0, nb = 0, have_konst = 0;
    if (plan_units(&s, x->shape, src_shape, err) != 0) goto done;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "sas_const", s.dt, s.p, 3, &s.konst, err) != 0) goto done;
    have_konst = 1;
    static const char *const names[B_COUNT] = {"sas_in", "sas_pad_out", "sas_src", "sas_max_part",
                                               "sas_mask", "sas_sel", "sas_acc", "sas_out"};
    for (; nslots < SAS_SLOTS; nslots++)
        for (nb = 0; nb < B_COUNT; nb++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, names[nb], buf_dtype(&s, nb), s.p, s.cap[nb], &s.buf[nslots][nb], err) != 0)
                goto done;
    nb = 0;
    {
        /* the constants: 0, the padding fill (the dtype's lowest value;
         * -inf where the dtype has it) and init_value */
        nx_operand c0 = v2(&s.konst, s.p, 0, 1, 1, 1, 1), c1 = v2(&s.konst, s.p, 1, 1, 1, 1, 1);
        nx_operand c2 = v2(&s.konst, s.p, 2, 1, 1, 1, 1);
        if (nx_kctx_memset(k, NX_ENG_POOL, &c0, 0.0, err) != 0 || nx_kctx_memset(k, NX_ENG_POOL, &c1, -INFINITY, err) != 0 ||
            nx_kctx_memset(k, NX_ENG_POOL, &c2, s.prm.init, err) != 0)
            goto done;
    }
    if (fill_unhit_planes(&s, x->shape, src_shape, err) != 0) goto done;
    /* the software pipeline (see the file's comment): step st loads tile
     * st + 2 and pads it, prepares the output and computes the max and mask
     * of tile st + 1, selects and scatters tile st, stores tile st - 1.
     * Every engine's next instruction then depends on work that is already
     * one step old, except POOL's scatter on DVE's select of the same step. */
    for (int64_t st = -2; st <= (int64_t)s.ntiles; st++) {
        int64_t T = (int64_t)s.ntiles;
        if (st + 2 >= 0 && st + 2 < T && emit_loads(&s, (uint32_t)(st + 2), err) != 0) goto done;
        if (st + 1 >= 0 && st + 1 < T && emit_init(&s, (uint32_t)(st + 1), err) != 0) goto done;
        if (st + 2 >= 0 && st + 2 < T && emit_pad(&s, (uint32_t)(st + 2), err) != 0) goto done;
        if (st + 1 >= 0 && st + 1 < T && emit_max_eq(&s, (uint32_t)(st + 1), err) != 0) goto done;
        if (st >= 0 && st < T) {
            uint32_t t0 = (uint32_t)st;
            if (emit_select(&s, t0, err) != 0 || emit_scatter(&s, t0, err) != 0 || emit_out(&s, t0, err) != 0)
                goto done;
        }
        if (st - 1 >= 0 && st - 1 < T && emit_store(&s, (uint32_t)(st - 1), err) != 0) goto done;
    }
    rc = 0;
done:;
    nx_error rerr;
    if (nslots < SAS_SLOTS)
        while (nb > 0) nx_kctx_release(k, &s.buf[nslots][--nb], &rerr);
    while (nslots > 0) {
        nslots--;
        for (int b = B_COUNT; b-- > 0;) nx_kctx_release(k, &s.buf[nslots][b], &rerr);
    }
    if (have_konst) nx_kctx_release(k, &s.konst, &rerr);
    sas_dim_plan_free(&s.ph);
    sas_dim_plan_free(&s.pw);
    free(s.units);
    free(s.tiles);
    return rc;
}
