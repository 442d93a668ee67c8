/* HBM tensors <-> .npy, output summaries (see cli/tensors.h). */
#include "tensors.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "isa/dtype.h"

#define SUMMARY_FIRST_VALUES 8

static void format_type(char *buf, size_t len, nx_dtype dt, uint32_t ndims, const uint64_t *shape) {
    const char *name = nx_dtype_name(dt);
    int n = snprintf(buf, len, "%s [", name ? name : "?");
    for (uint32_t i = 0; i < ndims && n >= 0 && (size_t)n < len; i++)
        n += snprintf(buf + n, len - (size_t)n, i ? ",%" PRIu64 : "%" PRIu64, shape[i]);
    if (n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, "]");
}

void cli_format_decl_type(char *buf, size_t len, const nx_tensor_decl *t) {
    format_type(buf, len, (nx_dtype)t->dtype, t->ndims, t->shape);
}

int cli_tensor_load(const char *path, const nx_tensor_decl *t, uint8_t *data, nx_error *err) {
    nx_npy a;
    /* never more than the tensor and a generous header */
    uint64_t cap = nx_tensor_bytes(t) + ((uint64_t)1 << 20);
    if (nx_npy_load_max(path, cap, "the size of its tensor plus 1 MiB of header", &a, err) != 0) return -1;
    int same = a.dtype == (nx_dtype)t->dtype && a.ndims == t->ndims;
    for (uint32_t i = 0; same && i < a.ndims; i++) same = a.shape[i] == t->shape[i];
    if (!same) {
        char want[160], found[160];
        cli_format_decl_type(want, sizeof want, t);
        format_type(found, sizeof found, a.dtype, a.ndims, a.shape);
        nx_npy_free(&a);
        return nx_fail(err, "%s: tensor '%s' is %s, the file holds %s", path, t->name, want, found);
    }
    /* Same dtype and shape, so the byte counts agree. */
    memcpy(data, a.data, (size_t)a.nbytes);
    nx_npy_free(&a);
    return 0;
}

nx_npy cli_tensor_view(const nx_tensor_decl *t, const uint8_t *data) {
    nx_npy a;
    memset(&a, 0, sizeof a);
    a.dtype = (nx_dtype)t->dtype;
    a.ndims = t->ndims;
    for (uint32_t i = 0; i < t->ndims && i < NX_NPY_MAX_DIMS; i++) a.shape[i] = t->shape[i];
    a.data = (uint8_t *)data; /* borrowed; nx_npy_serialize only reads it */
    a.nbytes = nx_tensor_bytes(t);
    return a;
}

static void print_value(FILE *f, nx_dtype dt, double v) {
    if (isnan(v))
        fputs("nan", f);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", f);
    else if (nx_dtype_is_float(dt))
        fprintf(f, "%.9g", v);
    else
        fprintf(f, "%.0f", v);
}

int cli_tensor_summary(FILE *f, const nx_tensor_decl *t, const uint8_t *data) {
    nx_dtype dt = (nx_dtype)t->dtype;
    size_t size = nx_dtype_size(dt);
    uint64_t n = nx_tensor_bytes(t) / size;
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    uint64_t nans = 0;
    for (uint64_t i = 0; i < n; i++) {
        double v = nx_dtype_load(dt, data + i * size);
        if (isnan(v)) {
            nans++;
            continue;
        }
        sum += v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    char type[160];
    cli_format_decl_type(type, sizeof type, t);
    fprintf(f, "%s %s checksum=%.17g", t->name, type, sum);
    if (n > nans) {
        fputs(" min=", f);
        print_value(f, dt, lo);
        fputs(" max=", f);
        print_value(f, dt, hi);
    }
    if (nans) fprintf(f, " nans=%" PRIu64, nans);
    fputs(" first=[", f);
    for (uint64_t i = 0; i < n && i < SUMMARY_FIRST_VALUES; i++) {
        if (i) fputs(", ", f);
        print_value(f, dt, nx_dtype_load(dt, data + i * size));
    }
    fputs(n > SUMMARY_FIRST_VALUES ? ", ...]\n" : "]\n", f);
    return ferror(f) ? -1 : 0;
}
