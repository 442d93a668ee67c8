/* transpose.h: a transpose leaf traced on two given HBM tensors. */
#include <string.h>

#include "transpose.h"

#include "kernels/author/author.h"

int nx_transpose_tensors(struct nx_kctx *k, nx_leaf_fn leaf, const nx_tensor_ref *in, const nx_tensor_ref *out,
                         const int64_t *perm, uint32_t ndims, nx_error *err) {
    if (ndims > NX_KERNEL_MAX_DIMS) return nx_fail(err, "a permutation of %u dims is too long", ndims);
    nx_tensor_ref args[2] = {*in, *out};
    nx_value items[NX_KERNEL_MAX_DIMS];
    memset(items, 0, sizeof items);
    for (uint32_t i = 0; i < ndims; i++) {
        items[i].kind = NX_VAL_INT;
        items[i].i = perm[i];
    }
    nx_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.name = (char *)"permutation";
    attr.value.kind = NX_VAL_LIST;
    attr.value.items = items;
    attr.value.count = ndims;
    nx_attrs attrs = {&attr, 1};
    nx_kernel_call call = {.args = args, .nargs = 2, .n_inputs = 1, .additional_args = &attrs};
    return leaf(k, &call, err);
}

int nx_transpose_tensors_sized(struct nx_kctx *k, const nx_tensor_ref *in, const nx_tensor_ref *out,
                               const int64_t *perm, uint32_t ndims, uint64_t matrix_bytes, nx_error *err) {
    int small = matrix_bytes <= nx_kctx_geometry(k)->sbuf_partition_bytes / 16;
    return nx_transpose_tensors(k, small ? tiled_dve_transpose_10 : tiled_pf_transpose, in, out, perm, ndims, err);
}
