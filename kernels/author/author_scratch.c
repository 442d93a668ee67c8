/* HBM scratch tensors of a program (kernels/author/author.h). */
#include <stdio.h>

#include "author_impl.h"

int nx_kctx_scratch(nx_kctx *k, const char *name, nx_dtype dtype, uint32_t ndims, const uint64_t *shape,
                    uint64_t *off, nx_error *err) {
    nx_builder *b = nx_kctx_builder(k);
    if (nx_kctx_solo(k)) { /* a grid of one per core: each core's own tensor */
        char own[160];
        snprintf(own, sizeof own, "%s.core%u", name, nx_kctx_core(k));
        return nx_builder_tensor(b, own, dtype, ndims, shape, NX_ROLE_SCRATCH, off, err);
    }
    /* program 0 declares it; the others find it */
    if (nx_kctx_program_id(k) > 0 && nx_builder_find_tensor(b, name, off) == 0) return 0;
    return nx_builder_tensor(b, name, dtype, ndims, shape, NX_ROLE_SCRATCH, off, err);
}
