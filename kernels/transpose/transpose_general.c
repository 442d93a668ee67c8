/* The `transpose` composite's trace function (transpose_steps.h): ONNX
 * Transpose (onnx/docs/Operators.md, "Transpose": perm defaults to the dims
 * reversed) as the planned steps, each a registry transpose leaf or a dma
 * step, through HBM scratch, a grid barrier between steps. Goes past the
 * public NKI transpose tutorial (one 2-D swap) to any permutation of up to
 * 6 dims. */
#include <stdio.h>
#include <string.h>

#include "transpose.h"
#include "transpose_plan.h"
#include "transpose_steps.h"

int nx_transpose_general(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->nargs != 2 || call->n_inputs != 1)
        return nx_fail(err, "transpose: expects 1 input and 1 output, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[1];
    int64_t perm[NX_KERNEL_MAX_DIMS];
    uint64_t want[NX_KERNEL_MAX_DIMS];
    if (x->ndims < 1 || x->ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "operand 0 (%s): rank %u, transpose takes 1..%d", x->name, x->ndims, NX_KERNEL_MAX_DIMS);
    if (nx_transpose_out_shape_named(call->additional_args, "perm", x->ndims, x->shape, perm, want, err) != 0) return -1;
    int same = y->dtype == x->dtype && y->ndims == x->ndims;
    for (uint32_t i = 0; same && i < x->ndims; i++) same = y->shape[i] == want[i];
    if (!same) return nx_fail(err, "operand 1 (%s): must be operand 0 (%s) permuted, of its dtype", y->name, x->name);
    nx_transpose_steps s;
    const uint32_t es = (uint32_t)nx_dtype_size(x->dtype), np = nx_kctx_num_programs(k);
    if (nx_transpose_steps_plan(nx_kctx_machine(k), np, x->ndims, x->shape, es, perm, &s, err) != 0) return -1;
    uint64_t src = x->hbm_offset;
    for (uint32_t i = 0; i < s.n; i++) {
        const nx_transpose_step *st = &s.step[i];
        uint64_t dst = y->hbm_offset;
        if (i + 1 < s.n) {
            char name[32];
            snprintf(name, sizeof name, "transpose.step%u", i + 1);
            if (nx_kctx_scratch(k, name, x->dtype, 1, &s.elems, &dst, err) != 0) return nx_fail_prefix(err, "transpose");
        }
        if (i > 0 && np > 1 && nx_kctx_barrier(k, err) != 0) return -1;
        int rc;
        if (st->kind == NX_TSTEP_LEAF) {
            uint64_t oshape[NX_KERNEL_MAX_DIMS];
            for (uint32_t d = 0; d < st->ndims; d++) oshape[d] = st->shape[st->perm[d]];
            nx_tensor_ref a = nx_tensor_ref_at(i == 0 ? x->name : "transpose.step", x->dtype, st->ndims, st->shape, src);
            nx_tensor_ref b = nx_tensor_ref_at(i + 1 == s.n ? y->name : "transpose.step", x->dtype, st->ndims, oshape, dst);
            rc = nx_transpose_tensors(k, st->leaf, &a, &b, st->perm, st->ndims, err);
        } else {
            rc = nx_transpose_dma_step(k, x->dtype, src, dst, st->ndims, st->shape, st->perm, err);
        }
        if (rc != 0) return nx_fail_prefix(err, "transpose step %u of %u", i + 1, s.n);
        src = dst;
    }
    return 0;
}
