/* select_and_scatter_kernel's transfers: loads of the operand and source
 * and stores of the owned output, in runs of units whose HBM offsets step
 * evenly, cut into pieces over the DMA engines; and the stores of init_value
 * into operand planes no source plane selects from. */
#include <stdlib.h>
#include <string.h>

#include "state.h"

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

int sas_emit_loads(sas_state *s, uint32_t ti, nx_error *err) {
    const sas_tile *t = &s->tiles[ti];
    if (!sas_has_windows(s, t)) return 0;
    return for_runs(s, t, ti % SAS_SLOTS, load_run, err);
}

int sas_emit_store(sas_state *s, uint32_t ti, nx_error *err) {
    return for_runs(s, &s->tiles[ti], ti % SAS_SLOTS, store_run, err);
}

/* Operand planes no source plane selects from hold init_value: stored from
 * a tile of it, runs of evenly spaced planes at a time. */
int sas_fill_unhit_planes(sas_state *s, const uint64_t *shape, const uint64_t *src_shape, nx_error *err) {
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
            nx_operand all = sas_view(&fill, s->p, 0, 1, (int32_t[1]){1}, (uint32_t[1]){(uint32_t)chunk});
            nx_operand f = sas_v2(&s->konst, s->p, 2, 0, 1, 0, (uint32_t)chunk);
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
