/* Bands and their classes along one spatial dim (plan.h). */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "isa/intmath.h"

/* ceil(a / b) for b > 0 and any sign of a. */

static void band_of(const sas_dim *d, int64_t y0, int64_t y1, sas_geo *g, sas_band *b) {
    memset(g, 0, sizeof *g);
    int64_t u0 = y0 + d->lo, u1 = y1 + d->lo; /* padded coordinates of the owned rows */
    int64_t r_lo = nx_max_i64(0, nx_ceil_div_i64(u0 - d->win + 1, d->stride));
    int64_t r_hi = nx_min_i64(d->nsrc, nx_ceil_div_i64(u1, d->stride));
    b->y0 = y0;
    g->nown = (uint32_t)(y1 - y0);
    if (r_lo >= r_hi) { /* no window touches these rows: they stay init_value */
        g->no = g->nown;
        b->r_lo = 0;
        b->yreal0 = 0;
        return;
    }
    int64_t a0 = r_lo * d->stride, a1 = (r_hi - 1) * d->stride + d->win;
    int64_t real0 = nx_max_i64(a0, d->lo), real1 = nx_min_i64(a1, d->lo + d->len);
    if (real1 < real0) real1 = real0;
    int64_t base = nx_min_i64(a0, u0), end = nx_max_i64(a1, u1);
    g->nwin = (uint32_t)(r_hi - r_lo);
    g->nx = (uint32_t)(a1 - a0);
    g->ra0 = (uint32_t)(real0 - a0);
    g->ra1 = (uint32_t)(real1 - a0);
    g->no = (uint32_t)(end - base);
    g->xoff = (uint32_t)(a0 - base);
    g->own0 = (uint32_t)(u0 - base);
    b->r_lo = r_lo;
    b->yreal0 = real0 - d->lo;
}

int sas_plan_dim(const sas_dim *d, int64_t rows, sas_dim_plan *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    if (rows < 1) rows = 1;
    uint32_t n = (uint32_t)((d->len + rows - 1) / rows);
    out->bands = calloc(n, sizeof *out->bands);
    out->geo = calloc(n, sizeof *out->geo);
    if (!out->bands || !out->geo) {
        sas_dim_plan_free(out);
        return nx_fail(err, "select_and_scatter_kernel: out of memory planning %u bands", n);
    }
    out->nbands = n;
    for (uint32_t i = 0; i < n; i++) {
        int64_t y0 = (int64_t)i * rows, y1 = nx_min_i64(d->len, y0 + rows);
        sas_geo g;
        band_of(d, y0, y1, &g, &out->bands[i]);
        uint32_t c = 0;
        while (c < out->ngeo && memcmp(&out->geo[c], &g, sizeof g) != 0) c++;
        if (c == out->ngeo) out->geo[out->ngeo++] = g;
        out->bands[i].cls = c;
    }
    return 0;
}

void sas_dim_plan_free(sas_dim_plan *p) {
    free(p->bands);
    free(p->geo);
    memset(p, 0, sizeof *p);
}

void sas_valid_windows(const sas_geo *g, const sas_dim *d, int64_t i, uint32_t *a, uint32_t *b) {
    int64_t lo = nx_max_i64(0, nx_ceil_div_i64((int64_t)g->ra0 - i, d->stride));
    int64_t hi = nx_min_i64(g->nwin, nx_ceil_div_i64((int64_t)g->ra1 - i, d->stride));
    if (hi < lo) hi = lo;
    *a = (uint32_t)lo;
    *b = (uint32_t)hi;
}

int sas_has_padding_only_window(const sas_geo *g, const sas_dim *d) {
    for (uint32_t r = 0; r < g->nwin; r++) {
        int64_t s0 = (int64_t)r * d->stride, s1 = s0 + d->win;
        if (s1 <= g->ra0 || s0 >= g->ra1) return 1;
    }
    return 0;
}
