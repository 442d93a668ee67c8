/* The blockwise_mm family's rules (registry key blockwise_mm, #10): MoE
 * prefill over blocks of routed tokens. The operands and attributes are
 * read by kernels/blockwise_mm/blockwise_mm_params.c, the one home of those rules (the
 * leaf reads them with the same function when it is traced). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "families.h"

#include "isa/rng.h"
#include "kernels/ref/ref.h"
#include "kernels/blockwise_mm/blockwise_mm.h"

static const char *const bwmm_attrs[] = {"block_size", "expert_affinities_scaling_mode", NULL};

static int bwmm_read(const nx_macro_op *op, nx_bwmm_params *p, nx_error *err) {
    nx_bwmm_tensor t[NX_BWMM_OPERANDS];
    uint32_t n = op->n_operands < NX_BWMM_OPERANDS ? op->n_operands : NX_BWMM_OPERANDS;
    for (uint32_t i = 0; i < n; i++)
        t[i] = (nx_bwmm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                op->operands[i].shape};
    return nx_bwmm_params_read(&op->attrs, t, op->n_operands, p, err);
}

/* Result = output (T+1, H) in hidden_states' dtype. */
static int bwmm_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_bwmm_params p;
    if (bwmm_read(op, &p, err) != 0) return -1;
    uint64_t shape[2];
    nx_bwmm_result_shape(&p, shape);
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "output", p.dtype, 2, shape, err);
}

static int bwmm_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs,
                          nx_error *err) {
    nx_bwmm_params p;
    if (bwmm_read(op, &p, err) != 0) return -1;
    return nx_ref_blockwise_mm(&p, inputs, outputs[0], err);
}

/* ---- the default op: a top-2 routing of 100 tokens over 4 experts ---- */

#define DEF_T 100
#define DEF_H 256
#define DEF_I 192
#define DEF_E 4
#define DEF_B 32
#define DEF_NB 9 /* 2 blocks per expert (50 tokens each) and one block of padding only */

/* fp32, 288 positions in blocks of 32 with both padding conventions (-1
 * and T) and a last block of no expert: traces and simulates in about a
 * second. */
static int bwmm_default(nx_macro_op *op, nx_error *err) {
    const uint64_t hs[2] = {DEF_T + 1, DEF_H}, aff[2] = {(DEF_T + 1) * DEF_E, 1},
                   gu[4] = {DEF_E, DEF_H, 2, DEF_I};
    const uint64_t dn[3] = {DEF_E, DEF_I, DEF_H}, tp[1] = {DEF_NB * DEF_B}, be[2] = {DEF_NB, 1};
    if (nx_macro_op_add_operand(op, "hidden_states", NX_DT_FP32, 2, hs, err) != 0 ||
        nx_macro_op_add_operand(op, "expert_affinities_masked", NX_DT_FP32, 2, aff, err) != 0 ||
        nx_macro_op_add_operand(op, "gate_up_proj_weight", NX_DT_FP32, 4, gu, err) != 0 ||
        nx_macro_op_add_operand(op, "down_proj_weight", NX_DT_FP32, 3, dn, err) != 0 ||
        nx_macro_op_add_operand(op, "token_position_to_id", NX_DT_INT32, 1, tp, err) != 0 ||
        nx_macro_op_add_operand(op, "block_to_expert", NX_DT_INT32, 2, be, err) != 0)
        return -1;
    nx_value b = nx_value_int(DEF_B);
    return nx_attrs_set(&op->attrs, "block_size", &b, err);
}

/* The built-in routing, for any shapes: token t goes to experts t mod E and
 * (3t + 1) mod E (one expert when E = 1), with affinities 0.5 + f and
 * 0.5 - f, f in [0, 0.4) from the seed; tokens are grouped by expert into
 * blocks of B, a partial block padded with -1 (even experts) or T (odd
 * ones); blocks past the routing get expert -1 and padding ids; a routing
 * needing more blocks than there are drops what does not fit. */
static uint64_t expert_of(uint64_t t, uint32_t k, uint64_t E) { return k == 0 ? t % E : (3 * t + 1) % E; }

static void put_f(nx_dtype dt, uint8_t *data, uint64_t i, double v) {
    nx_dtype_store(dt, data + i * nx_dtype_size(dt), v);
}

static int bwmm_values(const nx_macro_op *op, uint32_t operand, void *data, uint64_t seed) {
    nx_bwmm_params p;
    nx_error err;
    if (operand < 1 || operand > 5 || bwmm_read(op, &p, &err) != 0) return 0;
    if (!data) return 1;
    uint8_t *d = data;
    uint32_t topk = p.E > 1 ? 2 : 1;
    uint64_t s = seed ^ (0xB10C0000ull + operand);
    if (operand == 2 || operand == 3) { /* weights ~ U(-1, 1) / sqrt(fan-in) keep values O(1) */
        uint64_t n = operand == 2 ? p.E * p.H * 2 * p.inter : p.E * p.inter * p.H;
        double scale = 1.0 / sqrt((double)(operand == 2 ? p.H : p.inter));
        for (uint64_t i = 0; i < n; i++) put_f(p.dtype, d, i, scale * (2.0 * nx_splitmix64_unit(&s) - 1.0));
        return 1;
    }
    if (operand == 1) {
        uint64_t seed1 = seed ^ 0xAFF1ull;
        for (uint64_t i = 0; i < (p.T + 1) * p.E; i++) put_f(p.aff_dtype, d, i, 0.0);
        for (uint64_t t = 0; t < p.T; t++) {
            double f = 0.4 * nx_splitmix64_unit(&seed1);
            for (uint32_t k = 0; k < topk; k++)
                put_f(p.aff_dtype, d, t * p.E + expert_of(t, k, p.E),
                      topk == 1 ? 1.0
                      : k == 0  ? 0.5 + f
                                : 0.5 - f);
        }
        return 1;
    }
    /* the routing: operand 4 the positions, operand 5 the experts */
    int32_t *ids = operand == 4 ? (int32_t *)d : NULL, *exp = operand == 5 ? (int32_t *)d : NULL;
    uint64_t n = 0;
    for (uint64_t e = 0; e < p.E && n < p.NB; e++) {
        uint64_t pos = 0;
        for (uint64_t t = 0; t < p.T; t++)
            for (uint32_t k = 0; k < topk; k++)
                if (expert_of(t, k, p.E) == e && n + pos / p.B < p.NB) {
                    if (ids) ids[n * p.B + pos] = (int32_t)t;
                    pos++;
                }
        uint64_t blocks = (pos + p.B - 1) / p.B;
        if (n + blocks > p.NB) blocks = p.NB - n;
        for (; pos < blocks * p.B; pos++)
            if (ids) ids[n * p.B + pos] = e % 2 ? (int32_t)p.T : -1;
        for (uint64_t b = 0; b < blocks; b++)
            if (exp) exp[n + b] = (int32_t)e;
        n += blocks;
    }
    for (; n < p.NB; n++) {
        if (exp) exp[n] = -1;
        for (uint64_t j = 0; ids && j < p.B; j++) ids[n * p.B + j] = j % 2 ? (int32_t)p.T : -1;
    }
    return 1;
}

/* |got - ref| <= max(abs, rel |ref|), abs = rel =
 *   (2 k + 2) eps(dtype) + sqrt(H + I) (H + I) 2^-24
 * k = min(NB, E) contributions per token, each rounded to the output dtype
 * and added with one more rounding, plus h's rounding to the input dtype
 * (2 eps); the fp32 dot products of lengths H and I differ from the
 * reference's sgemm order by about sqrt(length) roundings of the
 * magnitudes, which are up to sqrt(H + I) times the result for values of
 * random sign. The tests bound every element exactly instead
 * (tests/test_blockwise_mm.c). */
static int bwmm_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_bwmm_params p;
    if (bwmm_read(op, &p, err) != 0) return -1;
    double k = (double)(p.NB < p.E ? p.NB : p.E), n = (double)(p.H + p.inter);
    double eps = nx_dtype_epsilon(p.dtype), m = (2 * k + 2) + sqrt(n) * n * 0x1p-24 / eps;
    nx_tolerance_eps(out, m, p.dtype);
    snprintf(out->text, sizeof out->text, "%.4g x eps(%s): k=%.0f, H+I=%.0f", m, nx_dtype_name(p.dtype), k,
             n);
    return 0;
}

static const nx_op_rules nx_rules_blockwise_mm = {
    .attrs = bwmm_attrs,
    .infer_results = bwmm_infer,
    .default_op = bwmm_default,
    .reference = bwmm_reference,
    .reference_name = "nx_ref_blockwise_mm",
    .tolerance = bwmm_tolerance,
    .default_values = bwmm_values,
};

/* The registry row: the seed's #10 (there is no MLP entry: the seed's
 * compiler inlines MLP by name elsewhere). */
static const nx_registry_entry blockwise_mm_rows[] = {
    {.seed_index = 10, .key = "blockwise_mm",
     .config = NX_CONFIG(NX_LEAF(blockwise_mm), NX_OPERANDS_ALL, &nx_args_attrs, false), .rules = &nx_rules_blockwise_mm},
};

const nx_family nx_family_blockwise_mm = {.name = "blockwise_mm", NX_FAMILY_ROWS(blockwise_mm_rows)};
