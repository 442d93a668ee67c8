/* dma_transpose dst src queue=Q: the DMA engines' 2-byte transpose.
 *
 * src [P rows, F elements] -> dst [F rows, P elements], dst[f][p] = src[p][f],
 * for 2-byte dtypes only (bf16, fp16, int16, uint16), dst dtype == src dtype,
 * bit-exact; HBM or SBUF on either side. The source is read completely
 * before anything is written, so the two may overlap. */
#include "insn_impl.h"

static int is_two_byte(nx_dtype dt) {
    return dt == NX_DT_BF16 || dt == NX_DT_FP16 || dt == NX_DT_INT16 || dt == NX_DT_UINT16;
}

int nx_validate_DMA_TRANSPOSE(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                              nx_error *err) {
    (void)engine;
    const nx_operand *dst = &insn->op[0], *src = &insn->op[1];
    int32_t queue = insn->iparam[0];
    if (queue < 0 || (uint32_t)queue >= geo->dma_queues)
        return nx_fail(err, "queue %d is outside [0, %u)", queue, geo->dma_queues);
    if (!is_two_byte((nx_dtype)src->dtype))
        return nx_fail(err, "src dtype %s is not a 2-byte type (bf16, fp16, int16, uint16)",
                       nx_dtype_name((nx_dtype)src->dtype));
    if (dst->dtype != src->dtype)
        return nx_fail(err, "dst dtype %s must equal src dtype %s", nx_dtype_name((nx_dtype)dst->dtype),
                       nx_dtype_name((nx_dtype)src->dtype));
    uint64_t f = nx_operand_free_elems(src);
    if (dst->partition_count != f)
        return nx_fail(err, "dst has %u partitions but src has %llu elements per partition",
                       (unsigned)dst->partition_count, (unsigned long long)f);
    if (nx_operand_free_elems(dst) != src->partition_count)
        return nx_fail(err, "dst has %llu elements per partition but src has %u partitions",
                       (unsigned long long)nx_operand_free_elems(dst), (unsigned)src->partition_count);
    return 0;
}

int nx_exec_DMA_TRANSPOSE(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, src;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&src, ctx, &insn->op[1]);
    uint32_t p_count = src.partitions, f_count = (uint32_t)src.free_elems;
    uint16_t *tile = malloc(((size_t)p_count * f_count + p_count) * sizeof *tile);
    if (tile == NULL) return nx_fail(ctx->err, "out of memory for the transpose buffer");
    uint16_t *row = tile + (size_t)p_count * f_count;
    for (uint32_t p = 0; p < p_count; p++) nx_view_load_bits(&src, p, &tile[(size_t)p * f_count]);
    for (uint32_t f = 0; f < f_count; f++) {
        for (uint32_t p = 0; p < p_count; p++) row[p] = tile[(size_t)p * f_count + f];
        nx_view_store_bits(&dst, f, row);
    }
    free(tile);
    return 0;
}
