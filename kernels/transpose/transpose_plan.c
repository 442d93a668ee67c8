/* Permutation analysis and call checks shared by the transpose leaves. */
#include "transpose_plan.h"

#include <stdio.h>
#include <string.h>

#include "isa/builder.h"

static void format_list(char *buf, size_t len, uint32_t n, int is_signed, const void *v) {
    size_t used = 0;
    if (len == 0) return;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < n && used < len; i++) {
        if (is_signed)
            used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? "," : "",
                                     (long long)((const int64_t *)v)[i]);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? "," : "",
                                     (unsigned long long)((const uint64_t *)v)[i]);
    }
    if (used < len) snprintf(buf + used, len - used, "]");
}

void nx_format_u64_list(char *buf, size_t len, const uint64_t *v, uint32_t n) {
    format_list(buf, len, n, 0, v);
}

void nx_format_i64_list(char *buf, size_t len, const int64_t *v, uint32_t n) {
    format_list(buf, len, n, 1, v);
}

/* The one check that `perm` is a permutation of ndims dims (negative
 * entries counted from the end); p gets the entries in [0, ndims). */
static int normalise_perm(uint32_t ndims, const int64_t *perm, uint32_t *p, nx_error *err) {
    if (ndims < 1 || ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "%u dims (1..%d)", ndims, NX_KERNEL_MAX_DIMS);
    uint8_t seen[NX_KERNEL_MAX_DIMS] = {0};
    for (uint32_t i = 0; i < ndims; i++) {
        int64_t v = perm[i] < 0 ? perm[i] + (int64_t)ndims : perm[i];
        if (v < 0 || v >= (int64_t)ndims || seen[v]) {
            char ptxt[128];
            nx_format_i64_list(ptxt, sizeof ptxt, perm, ndims);
            return nx_fail(err, "permutation %s is not a permutation of the %u dims", ptxt, ndims);
        }
        seen[v] = 1;
        p[i] = (uint32_t)v;
    }
    return 0;
}

void nx_transpose_groups(uint32_t ndims, const uint64_t *shape, const uint32_t *p, uint32_t *ng_out,
                         uint64_t *in_size, int64_t *gperm) {
    /* rank of each dim among the dims of size > 1, in input order */
    int rank[NX_KERNEL_MAX_DIMS];
    int kept = 0;
    for (uint32_t d = 0; d < ndims; d++) rank[d] = shape[d] > 1 ? kept++ : -1;
    /* groups in output order: runs of consecutive ranks */
    int first[NX_KERNEL_MAX_DIMS];
    uint64_t size[NX_KERNEL_MAX_DIMS];
    int ng = 0, prev = -2;
    for (uint32_t k = 0; k < ndims; k++) {
        int r = rank[p[k]];
        if (r < 0) continue;
        if (ng > 0 && r == prev + 1) {
            size[ng - 1] *= shape[p[k]];
        } else {
            first[ng] = r;
            size[ng] = shape[p[k]];
            ng++;
        }
        prev = r;
    }
    /* gperm[k]: input position of output group k; in_size: sizes in input order */
    for (int k = 0; k < ng; k++) {
        int pos = 0;
        for (int j = 0; j < ng; j++) pos += first[j] < first[k];
        gperm[k] = pos;
        in_size[pos] = size[k];
    }
    *ng_out = (uint32_t)ng;
}

int nx_transpose_reduce(uint32_t ndims, const uint64_t *shape, const int64_t *perm,
                        nx_transpose_plan *plan, nx_error *err) {
    char ptxt[128];
    nx_format_i64_list(ptxt, sizeof ptxt, perm, ndims);
    uint32_t p[NX_KERNEL_MAX_DIMS];
    if (normalise_perm(ndims, perm, p, err) != 0) return -1;
    uint64_t elems = 1;
    for (uint32_t i = 0; i < ndims; i++) elems *= shape[i];
    plan->batch = plan->rows = plan->cols = 1;
    plan->elems = elems;
    plan->copy = 1;
    if (elems == 0) {
        plan->batch = 0;
        return 0;
    }
    int64_t gperm[NX_KERNEL_MAX_DIMS];
    uint64_t in_size[NX_KERNEL_MAX_DIMS];
    uint32_t ngu;
    nx_transpose_groups(ndims, shape, p, &ngu, in_size, gperm);
    int ng = (int)ngu;
    if (ng <= 1) {
        plan->rows = elems;
        return 0;
    }
    if (ng == 2) { /* gperm is [1,0]: an identity would have merged */
        plan->rows = in_size[0];
        plan->cols = in_size[1];
    } else if (ng == 3 && gperm[0] == 0 && gperm[1] == 2 && gperm[2] == 1) {
        plan->batch = in_size[0];
        plan->rows = in_size[1];
        plan->cols = in_size[2];
    } else {
        char stxt[160], gtxt[128];
        nx_format_u64_list(stxt, sizeof stxt, in_size, (uint32_t)ng);
        nx_format_i64_list(gtxt, sizeof gtxt, gperm, (uint32_t)ng);
        return nx_fail(err,
                       "permutation %s does not reduce to a swap of the last two dim groups "
                       "(merged: shape %s, permutation %s)",
                       ptxt, stxt, gtxt);
    }
    plan->copy = 0;
    return 0;
}

static int perm_attr(const nx_attrs *attrs, const char *name, uint32_t ndims, int64_t *perm, nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, name);
    if (!v) {
        for (uint32_t i = 0; i < ndims; i++) perm[i] = (int64_t)(ndims - 1 - i);
        return 0;
    }
    if (v->kind != NX_VAL_LIST) return nx_fail(err, "attribute %s: must be a list of ints", name);
    for (uint32_t i = 0; i < v->count; i++)
        if (v->items[i].kind != NX_VAL_INT) return nx_fail(err, "attribute %s: must be a list of ints", name);
    if (v->count != ndims)
        return nx_fail(err, "attribute %s: has %u entries, the input has %u dims", name, v->count, ndims);
    for (uint32_t i = 0; i < ndims; i++) perm[i] = v->items[i].i;
    return 0;
}

int nx_transpose_perm_attr(const nx_attrs *attrs, uint32_t ndims, int64_t *perm, nx_error *err) {
    return perm_attr(attrs, "permutation", ndims, perm, err);
}

int nx_transpose_out_shape(const nx_attrs *attrs, uint32_t ndims, const uint64_t *shape, int64_t *perm,
                           uint64_t *out_shape, nx_error *err) {
    return nx_transpose_out_shape_named(attrs, "permutation", ndims, shape, perm, out_shape, err);
}

int nx_transpose_out_shape_named(const nx_attrs *attrs, const char *name, uint32_t ndims, const uint64_t *shape,
                                 int64_t *perm, uint64_t *out_shape, nx_error *err) {
    uint32_t p[NX_KERNEL_MAX_DIMS];
    if (perm_attr(attrs, name, ndims, perm, err) != 0) return -1;
    if (normalise_perm(ndims, perm, p, err) != 0)
        return strcmp(name, "permutation") == 0 ? -1 : nx_fail_prefix(err, "attribute %s", name);
    for (uint32_t i = 0; i < ndims; i++) {
        perm[i] = p[i];
        out_shape[i] = shape[p[i]];
    }
    return 0;
}

int nx_transpose_prepare(const char *leaf, const nx_kernel_call *call, nx_transpose_plan *plan,
                         nx_error *err) {
    uint32_t outs = call->nargs >= call->n_inputs ? call->nargs - call->n_inputs : 0;
    if (call->nargs != 2 || call->n_inputs != 1)
        return nx_fail(err, "%s: expects 1 input and 1 output, got %u input%s and %u output%s", leaf,
                       call->n_inputs, call->n_inputs == 1 ? "" : "s", outs, outs == 1 ? "" : "s");
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[1];
    if (x->ndims < 1 || x->ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "operand 0 (%s): %u dims (1..%d)", x->name, x->ndims, NX_KERNEL_MAX_DIMS);
    if (!nx_dtype_is_valid(x->dtype))
        return nx_fail(err, "operand 0 (%s): invalid dtype code %d", x->name, (int)x->dtype);
    /* a bad permutation is reported before the output is compared with it */
    int64_t perm[NX_KERNEL_MAX_DIMS];
    uint64_t want[NX_KERNEL_MAX_DIMS];
    if (nx_transpose_out_shape(call->additional_args, x->ndims, x->shape, perm, want, err) != 0)
        return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    nx_transpose_plan tmp;
    nx_error rerr;
    int refused = nx_transpose_reduce(x->ndims, x->shape, perm, &tmp, &rerr) != 0;
    if (y->dtype != x->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from operand 0 (%s)'s %s", y->name,
                       nx_dtype_name(y->dtype), x->name, nx_dtype_name(x->dtype));
    int same = y->ndims == x->ndims;
    for (uint32_t i = 0; same && i < x->ndims; i++) same = y->shape[i] == want[i];
    if (!same) {
        char ytxt[160], wtxt[160], xtxt[160], ptxt[128];
        nx_format_u64_list(ytxt, sizeof ytxt, y->shape, y->ndims <= NX_KERNEL_MAX_DIMS ? y->ndims : 0);
        nx_format_u64_list(wtxt, sizeof wtxt, want, x->ndims);
        nx_format_u64_list(xtxt, sizeof xtxt, x->shape, x->ndims);
        nx_format_i64_list(ptxt, sizeof ptxt, perm, x->ndims);
        return nx_fail(err, "operand 1 (%s): shape %s must be %s (operand 0 (%s) of shape %s permuted by %s)",
                       y->name, ytxt, wtxt, x->name, xtxt, ptxt);
    }
    if (refused) {
        *err = rerr;
        return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    }
    *plan = tmp;
    plan->dtype = x->dtype;
    plan->in_offset = x->hbm_offset;
    plan->out_offset = y->hbm_offset;
    return 0;
}

int nx_transpose_emit_copy(nx_kctx *k, const nx_transpose_plan *plan, nx_error *err) {
    uint64_t lo, hi;
    nx_kctx_rows(k, plan->elems, &lo, &hi);
    uint64_t size = nx_dtype_size(plan->dtype);
    uint64_t row = 32768 / size; /* elements per row of a transfer */
    uint64_t maxrows = nx_kctx_geometry(k)->partitions;
    for (uint64_t pos = lo; pos < hi;) {
        uint64_t left = hi - pos, rows = 1, cols = left;
        if (left >= row) {
            rows = left / row < maxrows ? left / row : maxrows;
            cols = row;
        }
        nx_operand src = nx_ap_hbm_rows(plan->dtype, plan->in_offset + pos * size, (uint32_t)rows,
                                        (int32_t)row, (uint32_t)cols);
        nx_operand dst = nx_ap_hbm_rows(plan->dtype, plan->out_offset + pos * size, (uint32_t)rows,
                                        (int32_t)row, (uint32_t)cols);
        if (nx_kctx_dma(k, &dst, &src, err) != 0) return -1;
        pos += rows * cols;
    }
    return 0;
}
