/* local_gather dst in indices (POOL): each GpSimd core gathers from the data
 * of its own partitions only.
 *   in [P, F], indices [P, N] (integer dtype), dst [P, N]; the three share
 *   start partition and partition count; the start is a multiple of the core
 *   width W (geo->pool_partitions_per_core, 16).
 *   For dst partition q (absolute), core g = q / W, idx = indices[q, n]:
 *     dst[q, n] = in[W*g + idx / F, idx % F]
 *   The source partition must lie inside in's partitions (and idx >= 0), else
 *   the instruction faults and writes nothing.
 * Contract: docs/parts/insns-act-pool.md. */
#include "insn_impl.h"

static int check_same_partitions(const nx_operand *op, const nx_operand *dst, const char *what,
                                 nx_error *err) {
    if (op->start_partition != dst->start_partition || op->partition_count != dst->partition_count)
        return nx_fail(err,
                       "%s: partitions %u..%u differ from dst's %u..%u (local_gather keeps "
                       "each partition on its GpSimd core)",
                       what, op->start_partition, op->start_partition + op->partition_count - 1,
                       dst->start_partition, dst->start_partition + dst->partition_count - 1);
    return 0;
}

int nx_validate_LOCAL_GATHER(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                             nx_error *err) {
    (void)engine;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1], *idx = &insn->op[2];
    if (nx_dtype_is_float((nx_dtype)idx->dtype))
        return nx_fail(err, "indices: dtype %s is not an integer type",
                       nx_dtype_name((nx_dtype)idx->dtype));
    if (check_same_partitions(in, dst, "in", err) ||
        check_same_partitions(idx, dst, "indices", err))
        return -1;
    uint32_t width = geo->pool_partitions_per_core;
    if (width == 0 || dst->start_partition % width != 0)
        return nx_fail(err, "dst: start partition %u is not a multiple of the GpSimd core width %u",
                       dst->start_partition, width);
    uint64_t fi = nx_operand_free_elems(idx), fd = nx_operand_free_elems(dst);
    if (fi != fd)
        return nx_fail(err, "indices: has %llu elements per partition but dst has %llu",
                       (unsigned long long)fi, (unsigned long long)fd);
    return 0;
}

int nx_exec_LOCAL_GATHER(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in, ix;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    nx_view_init(&ix, ctx, &insn->op[2]);
    uint32_t parts = dst.partitions, first = insn->op[0].start_partition;
    uint32_t width = ctx->state->geo.pool_partitions_per_core;
    uint64_t f = in.free_elems, n = dst.free_elems;
    /* All of in, then all of indices; the gathered rows overwrite the index
     * buffer, and nothing is stored until every index has been checked. */
    double *src = nx_buf_alloc((uint64_t)parts * f + (uint64_t)parts * n);
    if (!src)
        return nx_fail(ctx->err, "out of memory for local_gather (%u partitions)", parts);
    double *out = src + (uint64_t)parts * f;
    for (uint32_t p = 0; p < parts; p++) {
        nx_view_load(&in, p, src + (uint64_t)p * f);
        nx_view_load(&ix, p, out + (uint64_t)p * n);
    }
    for (uint32_t p = 0; p < parts; p++) {
        uint32_t q = first + p, core = q / width;
        /* in's partitions that belong to this core, relative to in's start
         * (the start is a multiple of width, so the core's first one is in). */
        uint32_t lo = core * width - first;
        uint32_t hi = lo + width < parts ? lo + width : parts; /* exclusive */
        int64_t limit = (int64_t)((hi - lo) * f);              /* valid idx: [0, limit) */
        for (uint64_t e = 0; e < n; e++) {
            double v = out[(uint64_t)p * n + e];
            if (!(v >= 0 && v < (double)limit)) {
                free(src);
                return nx_fail(ctx->err,
                               "indices[%u, %llu] = %.0f is outside core %u's data (in has "
                               "partitions %u..%u of that core, %llu elements each: valid "
                               "indices 0..%lld)",
                               q, (unsigned long long)e, v, core, first + lo, first + hi - 1,
                               (unsigned long long)f, (long long)limit - 1);
            }
            /* in[core's first + idx / F, idx % F] == row-major element lo*F + idx */
            out[(uint64_t)p * n + e] = src[(uint64_t)lo * f + (uint64_t)v];
        }
    }
    for (uint32_t p = 0; p < parts; p++) nx_view_store(&dst, p, out + (uint64_t)p * n);
    free(src);
    return 0;
}
