/* The `topk` composite's trace function (kernels/topk/topk_composite.h). */
#include "topk_composite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/values.h"
#include "kernels/topk/topk.h"
#include "kernels/transpose/transpose.h"
#include "topk_auto.h"
#include "topk_methods.h"

int nx_topk_composite(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs != 1 || call->nargs != 3)
        return nx_fail(err, "topk: expects 1 input and 2 outputs (values, indices), got %u inputs and %u outputs",
                       call->n_inputs, call->nargs - call->n_inputs);
    const nx_tensor_ref *x = &call->args[0];
    nx_topk_attrs a;
    if (nx_topk_read_attrs(call->additional_args, x->name, x->dtype, x->ndims, x->shape, &a, err) != 0) return -1;
    uint64_t n = x->shape[a.axis], rows = 1;
    for (uint32_t d = 0; d < x->ndims; d++)
        if (d != (uint32_t)a.axis) rows *= x->shape[d];
    nx_topk_choice ch;
    if (nx_topk_choose(a.method, nx_kctx_geometry(k), x->dtype, rows, n, a.k, &ch, err) != 0) return -1;
    const nx_topk_method *m = nx_topk_method_get(ch.method);
    if (!m || !m->fn) return nx_fail(err, "topk: method %s has no leaf", m ? m->member : "?");
    if (a.axis == (int32_t)x->ndims - 1) return m->fn(k, call, err);

    /* the axis to the end: perm = the other dims in order, then the axis */
    uint32_t nd = x->ndims;
    int64_t perm[NX_KERNEL_MAX_DIMS], inv[NX_KERNEL_MAX_DIMS];
    uint64_t xs[NX_KERNEL_MAX_DIMS], vs[NX_KERNEL_MAX_DIMS];
    uint32_t j = 0;
    for (uint32_t d = 0; d < nd; d++)
        if (d != (uint32_t)a.axis) perm[j++] = d;
    perm[nd - 1] = a.axis;
    for (uint32_t d = 0; d < nd; d++) {
        inv[perm[d]] = d;
        xs[d] = x->shape[perm[d]];
        vs[d] = xs[d];
    }
    vs[nd - 1] = a.k;
    uint64_t inner = 1, es = nx_dtype_size(x->dtype);
    for (uint32_t d = (uint32_t)a.axis + 1; d < nd; d++) inner *= x->shape[d];
    uint64_t ox, ov, oi;
    if (nx_kctx_scratch(k, "topk.x_axis_last", x->dtype, nd, xs, &ox, err) != 0 ||
        nx_kctx_scratch(k, "topk.values_axis_last", x->dtype, nd, vs, &ov, err) != 0 ||
        nx_kctx_scratch(k, "topk.indices_axis_last", NX_DT_INT32, nd, vs, &oi, err) != 0)
        return nx_fail_prefix(err, "topk");
    nx_tensor_ref t[3] = {nx_tensor_ref_at("topk.x_axis_last", x->dtype, nd, xs, ox),
                          nx_tensor_ref_at("topk.values_axis_last", x->dtype, nd, vs, ov),
                          nx_tensor_ref_at("topk.indices_axis_last", NX_DT_INT32, nd, vs, oi)};
    if (nx_transpose_tensors_sized(k, x, &t[0], perm, x->ndims, n * inner * es, err) != 0 || nx_kctx_barrier(k, err) != 0)
        return nx_fail_prefix(err, "topk (axis %d to the end)", a.axis);
    nx_attrs attrs;
    nx_attrs_init(&attrs);
    nx_value last = nx_value_int(-1);
    /* the leaf's attributes: the op's, with axis -1 (isa/values.h, below kernels/) */
    if (nx_attrs_copy(&attrs, call->additional_args, err) != 0 || nx_attrs_set(&attrs, "axis", &last, err) != 0) {
        nx_attrs_free(&attrs);
        return -1;
    }
    nx_kernel_call inner_call = {.args = t, .nargs = 3, .n_inputs = 1, .additional_args = &attrs, .attrs = &attrs};
    int rc = m->fn(k, &inner_call, err);
    nx_attrs_free(&attrs);
    if (rc != 0) return -1;
    if (nx_kctx_barrier(k, err) != 0 || nx_transpose_tensors_sized(k, &t[1], &call->args[1], inv, t[1].ndims, a.k * inner * es, err) != 0 ||
        nx_transpose_tensors_sized(k, &t[2], &call->args[2], inv, t[2].ndims, a.k * inner * 4, err) != 0)
        return nx_fail_prefix(err, "topk (results back to axis %d)", a.axis);
    return 0;
}
