/* transpose.h: a transpose leaf traced on two given HBM tensors. */
#include <stdio.h>
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

nx_tensor_ref nx_tensor_ref_at(const char *name, nx_dtype dt, uint32_t nd, const uint64_t *shape, uint64_t off) {
    nx_tensor_ref t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.dtype = dt;
    t.ndims = nd <= NX_KERNEL_MAX_DIMS ? nd : NX_KERNEL_MAX_DIMS;
    memcpy(t.shape, shape, t.ndims * sizeof *shape);
    t.hbm_offset = off;
    return t;
}

nx_leaf_fn nx_transpose_leaf_for(const nx_geometry *g, uint64_t matrix_bytes, const char **name) {
    int small = matrix_bytes <= g->sbuf_partition_bytes / 16;
    if (name) *name = small ? "tiled_dve_transpose_10" : "tiled_pf_transpose";
    return small ? tiled_dve_transpose_10 : tiled_pf_transpose;
}

int nx_transpose_tensors_sized(struct nx_kctx *k, const nx_tensor_ref *in, const nx_tensor_ref *out,
                               const int64_t *perm, uint32_t ndims, uint64_t matrix_bytes, nx_error *err) {
    return nx_transpose_tensors(k, nx_transpose_leaf_for(nx_kctx_geometry(k), matrix_bytes, NULL), in, out, perm,
                                ndims, err);
}
