/* AUTO dispatch of the topk composite from the measured cost table
 * (kernels/topk/topk_auto.h). */
#include "topk_auto.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/topk/topk.h"

const nx_topk_cost_table *nx_topk_cost_table_find(const char *machine, nx_dtype dt) {
    nx_dtype want = nx_dtype_size(dt) == 4 ? NX_DT_FP32 : NX_DT_BF16;
    for (uint32_t i = 0; i < nx_topk_cost_table_count; i++)
        if (strcmp(nx_topk_cost_tables[i].machine, machine) == 0 && nx_topk_cost_tables[i].dtype == want)
            return &nx_topk_cost_tables[i];
    return NULL;
}

/* The cell of q on an ascending axis: lower index and the weight of the
 * upper one, in log space, clamped to the axis. */
static void cell(const uint64_t *a, uint32_t m, double q, uint32_t *lo, double *w) {
    *lo = 0;
    *w = 0;
    if (m < 2 || q <= (double)a[0]) return;
    if (q >= (double)a[m - 1]) {
        *lo = m - 2;
        *w = 1;
        return;
    }
    uint32_t i = 0;
    while (i + 2 < m && q > (double)a[i + 1]) i++;
    *lo = i;
    *w = (log(q) - log((double)a[i])) / (log((double)a[i + 1]) - log((double)a[i]));
}

double nx_topk_table_estimate(const nx_topk_cost_table *t, nx_topk_method_id m, uint64_t rows, uint64_t n,
                              uint64_t k) {
    uint32_t r0, n0, k0;
    double wr, wn, wk;
    cell(t->rows, t->nrows, (double)rows, &r0, &wr);
    cell(t->n, t->nn, (double)n, &n0, &wn);
    cell(t->k, t->nk, (double)k, &k0, &wk);
    double acc = 0;
    for (int c = 0; c < 8; c++) {
        uint32_t ri = r0 + (c & 1), ni = n0 + ((c >> 1) & 1), ki = k0 + ((c >> 2) & 1);
        double w = ((c & 1) ? wr : 1 - wr) * (((c >> 1) & 1) ? wn : 1 - wn) * (((c >> 2) & 1) ? wk : 1 - wk);
        if (w == 0) continue;
        if (ri >= t->nrows) ri = t->nrows - 1;
        if (ni >= t->nn) ni = t->nn - 1;
        if (ki >= t->nk) ki = t->nk - 1;
        double v = t->ns[((ri * t->nn + ni) * t->nk + ki) * NX_TOPK_METHOD_COUNT + m];
        acc += w * log(v > 0 ? v : 1);
    }
    double est = exp(acc);
    uint64_t rmax = t->rows[t->nrows - 1];
    if (rows > rmax) est *= (double)rows / (double)rmax;
    return est;
}

int nx_topk_choose(const char *method, const nx_geometry *geo, nx_dtype dt, uint64_t rows, uint64_t n, uint64_t k,
                   nx_topk_choice *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    if (strcmp(method, "AUTO") != 0) {
        nx_topk_method_id m;
        nx_quoted q; /* the user's text, escaped: the message stays one line */
        if (nx_topk_method_from_name(method, &m, err) != 0)
            return nx_fail(err, "attribute method: unknown top-k method '%s' (AUTO, SCANNING, CASCADED, ROTATIONAL)",
                           nx_quote(&q, method, NX_QUOTE_NAME));
        out->method = m;
        out->from_attr = 1;
        return 0;
    }
    uint64_t per_program = (rows + 1) / 2;
    if (nx_topk_folds(0, geo, per_program, n, k) == 1 && nx_topk_folds(1, geo, per_program, n, k) == 1) {
        out->method = NX_TOPK_SCANNING;
        out->same_program = 1;
        return 0;
    }
    const nx_topk_cost_table *t = nx_topk_cost_table_find(geo->name, dt);
    if (!t) {
        t = nx_topk_cost_table_find("trn2", dt);
        out->other_machine = 1;
    }
    out->table = t;
    out->method = NX_TOPK_SCANNING;
    if (!t) return 0;
    for (int m = 0; m < NX_TOPK_METHOD_COUNT; m++) {
        out->ns[m] = nx_topk_table_estimate(t, (nx_topk_method_id)m, rows, n, k);
        if (out->ns[m] < out->ns[out->method]) out->method = (nx_topk_method_id)m;
    }
    return 0;
}

static void fmt_time(char *buf, size_t len, double ns) {
    if (ns >= 1e6) snprintf(buf, len, "%.2f ms", ns / 1e6);
    else snprintf(buf, len, "%.1f us", ns / 1e3);
}

void nx_topk_choice_text(const nx_topk_choice *c, char *buf, size_t len) {
    const char *name = nx_topk_method_get(c->method)->member;
    if (c->from_attr) {
        snprintf(buf, len, "method %s (attribute method)", name);
        return;
    }
    if (c->same_program) {
        snprintf(buf, len, "method %s: AUTO; no method folds rows of this shape, all three run the scanning program",
                 name);
        return;
    }
    if (!c->table) {
        snprintf(buf, len, "method %s: AUTO; no cost table for this dtype", name);
        return;
    }
    char t[32];
    fmt_time(t, sizeof t, c->ns[c->method]);
    size_t n = (size_t)snprintf(buf, len, "method %s: %s vs", name, t);
    int first = 1;
    for (int m = 0; m < NX_TOPK_METHOD_COUNT && n < len; m++) {
        if (m == (int)c->method) continue;
        fmt_time(t, sizeof t, c->ns[m]);
        n += (size_t)snprintf(buf + n, len - n, "%s %s %s", first ? "" : ",", nx_topk_method_get((nx_topk_method_id)m)->member,
                              t);
        first = 0;
    }
    if (n < len)
        snprintf(buf + n, len - n, " (table %s %s%s)", c->table->machine, nx_dtype_name(c->table->dtype),
                 c->other_machine ? ", measured on another machine" : "");
}
