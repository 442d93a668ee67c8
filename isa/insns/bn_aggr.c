/* bn_aggr: combines consecutive (count, mean, m2) triples (bn_stats output)
 * in order with Chan et al.'s pairwise formula in fp32, and writes (mean,
 * population variance = m2 / count); a total count of 0 gives (0, 0).
 * docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

int nx_validate_BN_AGGR(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                        nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (in->partition_count != dst->partition_count)
        return nx_fail(err, "in has %u partitions, dst has %u", in->partition_count,
                       dst->partition_count);
    uint64_t n = nx_operand_free_elems(in);
    if (n % 3 != 0)
        return nx_fail(err,
                       "in has %" PRIu64 " elements per partition, bn_aggr takes (count, mean, "
                       "m2) triples (a multiple of 3)",
                       n);
    uint64_t d = nx_operand_free_elems(dst);
    if (d != 2)
        return nx_fail(err, "dst has %" PRIu64 " elements per partition, bn_aggr writes 2", d);
    return 0;
}

/* Folds the triples t[0..3*groups) into (mean, variance), fp32 throughout
 * (-ffp-contract=off: no FMA). */
static void aggregate(const double *t, uint64_t groups, double out[2]) {
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (uint64_t g = 0; g < groups; g++) {
        float nb = (float)nx_fp32_round(t[3 * g]);
        float mb = (float)nx_fp32_round(t[3 * g + 1]);
        float m2b = (float)nx_fp32_round(t[3 * g + 2]);
        if (nb == 0.0f) continue;
        if (n == 0.0f) {
            n = nb;
            mean = mb;
            m2 = m2b;
            continue;
        }
        float total = n + nb;
        float delta = mb - mean;
        float wb = nb / total;
        mean = mean + delta * wb;
        m2 = (m2 + m2b) + ((delta * delta) * n) * wb;
        n = total;
    }
    out[0] = n == 0.0f ? 0.0 : (double)mean;
    out[1] = n == 0.0f ? 0.0 : (double)(m2 / n);
}

int nx_exec_BN_AGGR(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    uint64_t n = in.free_elems;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double out[2];
        nx_view_load(&in, p, x);
        aggregate(x, n / 3, out);
        nx_view_store(&dst, p, out);
    }
    free(x);
    return 0;
}
