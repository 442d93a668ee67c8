/* npycmp: compares an actual .npy output of a conformance trace with the
 * expected one.
 *
 *   npycmp [--exact | --bits | --ulp N | --abs A --rel R] [--name NAME] EXPECTED ACTUAL
 *
 * Both files must have the same dtype and shape. Element comparison:
 *   --exact (default)  integers equal; floats bit-identical, except that any
 *                      NaN equals any NaN (so -0 and +0 differ, NaN payloads
 *                      and signs do not matter);
 *   --bits             every byte identical (NaN payloads too);
 *   --ulp N            floats: both NaN, or the same sign of zero-or-more
 *                      within N units in the last place of the file's dtype
 *                      (distance between the ordered bit patterns, so Inf is
 *                      1 ulp above the largest finite value); integers:
 *                      |a - e| <= N;
 *   --abs A --rel R    |a - e| <= A + R |e| for finite values; infinities
 *                      must match exactly, NaN matches only NaN.
 * Prints one summary line (element count, mismatches, max abs error, max ulp
 * error over the elements where both values are finite numbers) and the first
 * few mismatches. Exit status: 0 match, 1 mismatch, 2 usage or load error. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/dtype.h"
#include "isa/error.h"
#include "isa/npy.h"

typedef enum cmp_mode { MODE_EXACT, MODE_BITS, MODE_ULP, MODE_ABSREL } cmp_mode;

typedef struct cmp_opts {
    cmp_mode mode;
    double ulp, abs_tol, rel_tol;
    const char *name;
} cmp_opts;

#define SHOW_MISMATCHES 5

static int usage(const char *msg) {
    fprintf(stderr,
            "npycmp: %s\nusage: npycmp [--exact | --bits | --ulp N | --abs A --rel R] "
            "[--name NAME] EXPECTED.npy ACTUAL.npy\n",
            msg);
    return 2;
}

static int parse_number(const char *opt, const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0.0) || isinf(v)) {
        fprintf(stderr, "npycmp: %s expects a non-negative number, got '%s'\n", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* The raw bits of element i (dtype size <= 4 bytes, little-endian). */
static uint32_t raw_bits(const nx_npy *a, uint64_t i) {
    size_t size = nx_dtype_size(a->dtype);
    const uint8_t *p = a->data + i * size;
    uint32_t v = 0;
    for (size_t k = 0; k < size; k++) v |= (uint32_t)p[k] << (8 * k);
    return v;
}

/* Float bit patterns mapped to integers that are consecutive for adjacent
 * values: +x -> bits, -x -> -(bits without the sign). */
static int64_t ordered(uint32_t bits, size_t size) {
    uint32_t sign = 1u << (8 * size - 1);
    return (bits & sign) ? -(int64_t)(bits & ~sign) : (int64_t)bits;
}

static void format_index(const nx_npy *a, uint64_t flat, char *buf, size_t len) {
    uint64_t idx[NX_NPY_MAX_DIMS];
    for (uint32_t d = a->ndims; d-- > 0;) {
        idx[d] = flat % a->shape[d];
        flat /= a->shape[d];
    }
    size_t used = (size_t)snprintf(buf, len, "[");
    for (uint32_t d = 0; d < a->ndims && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64, d ? "," : "", idx[d]);
    if (used < len) snprintf(buf + used, len - used, "]");
}

static void format_shape(const nx_npy *a, char *buf, size_t len) {
    size_t used = (size_t)snprintf(buf, len, "[");
    for (uint32_t d = 0; d < a->ndims && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64, d ? "," : "", a->shape[d]);
    if (used < len) snprintf(buf + used, len - used, "]");
}

/* Whether actual element matches expected element under the options;
 * also reports the errors of a finite pair. */
static int element_ok(const cmp_opts *o, nx_dtype dt, uint32_t eb, uint32_t ab, double e,
                      double a, double *abs_err, double *ulp_err) {
    int is_float = nx_dtype_is_float(dt);
    size_t size = nx_dtype_size(dt);
    *abs_err = 0.0;
    *ulp_err = 0.0;
    if (!is_float || (isfinite(e) && isfinite(a))) {
        *abs_err = fabs(a - e);
        *ulp_err = is_float ? fabs((double)(ordered(ab, size) - ordered(eb, size))) : *abs_err;
    }
    if (o->mode == MODE_BITS) return eb == ab;
    if (!is_float) {
        if (o->mode == MODE_ULP) return *abs_err <= o->ulp;
        if (o->mode == MODE_ABSREL) return *abs_err <= o->abs_tol + o->rel_tol * fabs(e);
        return eb == ab;
    }
    if (isnan(e) || isnan(a)) return isnan(e) && isnan(a);
    switch (o->mode) {
    case MODE_EXACT: return eb == ab;
    case MODE_ULP:
        if (e == 0.0 && a == 0.0) return 1; /* +-0: one value for a tolerance */
        return fabs((double)(ordered(ab, size) - ordered(eb, size))) <= o->ulp;
    case MODE_ABSREL:
        if (isinf(e) || isinf(a)) return e == a;
        return *abs_err <= o->abs_tol + o->rel_tol * fabs(e);
    case MODE_BITS: break;
    }
    return 0;
}

static int compare(const cmp_opts *o, const nx_npy *exp, const nx_npy *act) {
    const char *name = o->name;
    char es[96], as[96];
    format_shape(exp, es, sizeof es);
    format_shape(act, as, sizeof as);
    if (exp->dtype != act->dtype) {
        printf("%s: dtype %s, expected %s\n", name, nx_dtype_name(act->dtype),
               nx_dtype_name(exp->dtype));
        return 1;
    }
    if (exp->ndims != act->ndims || strcmp(es, as) != 0) {
        printf("%s: shape %s, expected %s\n", name, as, es);
        return 1;
    }
    uint64_t n = nx_npy_elems(exp), bad = 0;
    double max_abs = 0.0, max_ulp = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        size_t size = nx_dtype_size(exp->dtype);
        uint32_t eb = raw_bits(exp, i), ab = raw_bits(act, i);
        double e = nx_dtype_load(exp->dtype, exp->data + i * size);
        double a = nx_dtype_load(act->dtype, act->data + i * size);
        double abs_err, ulp_err;
        int ok = element_ok(o, exp->dtype, eb, ab, e, a, &abs_err, &ulp_err);
        if (abs_err > max_abs) max_abs = abs_err;
        if (ulp_err > max_ulp) max_ulp = ulp_err;
        if (ok) continue;
        if (bad < SHOW_MISMATCHES) {
            char idx[96];
            format_index(exp, i, idx, sizeof idx);
            int hex = (int)(2 * size);
            printf("  %s%s: expected %.9g (0x%0*" PRIx32 "), got %.9g (0x%0*" PRIx32 ")\n", name,
                   idx, e, hex, eb, a, hex, ab);
        }
        bad++;
    }
    printf("%s: %s %s, %" PRIu64 " elements, %" PRIu64 " mismatches, max abs err %.6g, "
           "max ulp err %.6g\n",
           name, nx_dtype_name(exp->dtype), es, n, bad, max_abs, max_ulp);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    cmp_opts o = {MODE_EXACT, 0.0, 0.0, 0.0, NULL};
    const char *paths[2];
    int npaths = 0, have_abs = 0, have_rel = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int takes_value = !strcmp(arg, "--ulp") || !strcmp(arg, "--abs") ||
                          !strcmp(arg, "--rel") || !strcmp(arg, "--name");
        if (takes_value && i + 1 >= argc) return usage("option needs a value");
        if (!strcmp(arg, "--exact")) {
            o.mode = MODE_EXACT;
        } else if (!strcmp(arg, "--bits")) {
            o.mode = MODE_BITS;
        } else if (!strcmp(arg, "--ulp")) {
            o.mode = MODE_ULP;
            if (parse_number(arg, argv[++i], &o.ulp) != 0) return 2;
        } else if (!strcmp(arg, "--abs")) {
            o.mode = MODE_ABSREL;
            have_abs = 1;
            if (parse_number(arg, argv[++i], &o.abs_tol) != 0) return 2;
        } else if (!strcmp(arg, "--rel")) {
            o.mode = MODE_ABSREL;
            have_rel = 1;
            if (parse_number(arg, argv[++i], &o.rel_tol) != 0) return 2;
        } else if (!strcmp(arg, "--name")) {
            o.name = argv[++i];
        } else if (arg[0] == '-' && arg[1] == '-') {
            return usage("unknown option");
        } else if (npaths < 2) {
            paths[npaths++] = arg;
        } else {
            return usage("expected two files");
        }
    }
    if (npaths != 2) return usage("expected two files");
    if (o.mode == MODE_ABSREL && !(have_abs || have_rel)) return usage("--abs/--rel missing");
    if (!o.name) o.name = paths[1];

    nx_npy exp, act;
    nx_error err;
    memset(&exp, 0, sizeof exp);
    memset(&act, 0, sizeof act);
    if (nx_npy_load(paths[0], &exp, &err) != 0) {
        fprintf(stderr, "npycmp: %s\n", err.msg);
        return 2;
    }
    if (nx_npy_load(paths[1], &act, &err) != 0) {
        fprintf(stderr, "npycmp: %s\n", err.msg);
        nx_npy_free(&exp);
        return 2;
    }
    int rc = compare(&o, &exp, &act);
    nx_npy_free(&exp);
    nx_npy_free(&act);
    return rc;
}
