/* nx_transpose_call (kernels/transpose.h): a transpose leaf called by
 * another kernel, with the permutation as its attribute. */
#include <string.h>

#include "transpose.h"

int nx_transpose_call(struct nx_kctx *k, const nx_tensor_ref *in, const nx_tensor_ref *out, const int64_t *perm,
                      uint64_t matrix_bytes, nx_error *err) {
    nx_tensor_ref args[2] = {*in, *out};
    nx_value items[NX_KERNEL_MAX_DIMS];
    memset(items, 0, sizeof items);
    for (uint32_t d = 0; d < in->ndims && d < NX_KERNEL_MAX_DIMS; d++) {
        items[d].kind = NX_VAL_INT;
        items[d].i = perm[d];
    }
    nx_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.name = (char *)"permutation";
    attr.value.kind = NX_VAL_LIST;
    attr.value.items = items;
    attr.value.count = in->ndims;
    nx_attrs attrs = {&attr, 1};
    nx_kernel_call call = {.args = args, .nargs = 2, .n_inputs = 1, .additional_args = &attrs, .attrs = &attrs};
    int small = matrix_bytes <= nx_kctx_geometry(k)->sbuf_partition_bytes / 16;
    return small ? tiled_dve_transpose_10(k, &call, err) : tiled_pf_transpose(k, &call, err);
}
