/* --check's element comparison (registry/check.h). */
#include "check.h"

#include <math.h>
#include <string.h>

void nx_check_compare(nx_dtype dt, const uint8_t *got, const uint8_t *ref, uint64_t n,
                      const nx_tolerance *tol, nx_check_result *c) {
    size_t es = nx_dtype_size(dt);
    memset(c, 0, sizeof *c);
    for (uint64_t i = 0; i < n; i++) {
        double g = nx_dtype_load(dt, got + i * es), w = nx_dtype_load(dt, ref + i * es);
        double abs_err;
        if (isnan(g) || isnan(w))
            abs_err = isnan(g) && isnan(w) ? 0 : INFINITY;
        else if (isinf(g) || isinf(w))
            abs_err = g == w ? 0 : INFINITY;
        else
            abs_err = fabs(g - w);
        double rel_err = abs_err == 0 ? 0 : w != 0 && isfinite(w) ? abs_err / fabs(w) : INFINITY;
        if (abs_err > c->max_abs) c->max_abs = abs_err;
        if (rel_err > c->max_rel) c->max_rel = rel_err;
        double by_rel = isfinite(w) ? tol->rel * fabs(w) : 0;
        double limit = by_rel > tol->abs ? by_rel : tol->abs;
        if (!(abs_err <= limit)) {
            if (c->bad == 0) c->first_bad = i;
            c->bad++;
        }
    }
}
