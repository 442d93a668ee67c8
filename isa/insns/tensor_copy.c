/* tensor_copy: dst = in, converted to dst's dtype by the store rules of
 * isa/dtype.h (no fp32 rounding on the way: int32 copies are exact; with
 * equal dtypes that is the bits with NaNs made canonical).
 * docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

int nx_validate_TENSOR_COPY(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                            nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (in->partition_count != dst->partition_count)
        return nx_fail(err, "in has %u partitions, dst has %u", in->partition_count,
                       dst->partition_count);
    uint64_t ei = nx_operand_free_elems(in), ed = nx_operand_free_elems(dst);
    if (ei != ed)
        return nx_fail(err, "in has %" PRIu64 " elements per partition, dst has %" PRIu64, ei,
                       ed);
    return 0;
}

int nx_exec_TENSOR_COPY(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    uint64_t n = dst.free_elems;
    if (dst.dtype == in.dtype) {
        /* load + store of one dtype: the bits, NaNs made canonical */
        const nx_dtype dt = (nx_dtype)dst.dtype;
        const uint64_t size = nx_dtype_size(dt);
        uint8_t *bits = malloc(n * size > 0 ? n * size : 1);
        if (!bits) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
        for (uint32_t p = 0; p < dst.partitions; p++) {
            nx_view_load_bits(&in, p, bits);
            nx_dtype_canonical_nans(dt, bits, n);
            nx_view_store_bits(&dst, p, bits);
        }
        free(bits);
        return 0;
    }
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        nx_view_load(&in, p, x);
        nx_view_store(&dst, p, x);
    }
    free(x);
    return 0;
}
