/* select_and_scatter_kernel's planning: the tallest bands whose SBUF slots
 * fit, the units (one per selected plane and band) and the tiles (up to 128
 * units of one class). */
#include <stdlib.h>
#include <string.h>

#include "state.h"

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
    for (int b = 0; b < B_COUNT; b++) n += (cap[b] * nx_dtype_size(sas_buf_dtype(s, b)) + 63) / 64 * 64;
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
    uint64_t budget = geo->sbuf_partition_bytes * 7 / 8;
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
int sas_plan_units(sas_state *s, const uint64_t *shape, const uint64_t *src_shape, nx_error *err) {
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
                u->src_plane = pl; /* the hit-plane index for now; the loop below maps it to (source, operand) planes */
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

