/* The moe_decode family's rules (kernels/moe/moe_decode.h):
 *   result     out [T, H] of x's dtype;
 *   reference  nx_ref_moe_decode (sgemm per expert in fp32, h rounded to the
 *              dtype, kernels/ref/ref.h);
 *   tolerance  both sides round h to the dtype from fp32 sums taken in
 *              different orders (a rounding flip moves a term by eps), k
 *              experts' contributions each rounded once in fp32 and the
 *              result rounded once: (2k + 4) + sqrt(n) n u / eps units of
 *              eps(dtype), n = H + I, u = 2^-24, relative above |ref| = 1
 *              and absolute below (with weights scaled like a model's,
 *              U(-1, 1) / sqrt(fan-in), the outputs are O(1));
 *   default    T 4, H 256, I 384, E 8, k 2, bf16, routing drawn without
 *              repeats per token, affinities a softmax over the chosen two.
 * The values of indices are run-time data: an index outside [-1, E) is a
 * fault of the kernel's probe when the op runs (and a refusal of the
 * reference). */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/rng.h"
#include "kernels/moe/moe_decode.h"
#include "kernels/ref/ref.h"

static int md_read(const nx_macro_op *op, nx_moe_decode_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_moe_decode_read(&op->attrs, in, op->n_operands, p, err);
}

static int md_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_moe_decode_params p;
    if (md_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out", x->dtype, 2, x->shape, err);
}

static int md_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_moe_decode_params p;
    if (md_read(op, &p, err) != 0) return -1;
    return nx_ref_moe_decode(&p, in, out[0], err);
}

static int md_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {4, 256}, gu[3] = {8, 256, 384}, dn[3] = {8, 384, 256}, af[2] = {4, 8}, ix[2] = {4, 2};
    if (nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err) != 0 ||
        nx_macro_op_add_operand(op, "w_gate", NX_DT_BF16, 3, gu, err) != 0 ||
        nx_macro_op_add_operand(op, "w_up", NX_DT_BF16, 3, gu, err) != 0 ||
        nx_macro_op_add_operand(op, "w_down", NX_DT_BF16, 3, dn, err) != 0 ||
        nx_macro_op_add_operand(op, "affinities", NX_DT_FP32, 2, af, err) != 0)
        return -1;
    return nx_macro_op_add_operand(op, "indices", NX_DT_INT32, 2, ix, err);
}

/* Token t's slot j: k distinct experts drawn from the seed (a partial
 * Fisher-Yates over E). */
static void routing(const nx_moe_decode_params *p, uint64_t seed, int32_t *idx) {
    uint64_t st = seed ^ 0x30edull;
    int32_t perm[4096];
    const uint64_t E = p->E < 4096 ? p->E : 4096;
    for (uint64_t t = 0; t < p->T; t++) {
        for (uint64_t e = 0; e < E; e++) perm[e] = (int32_t)e;
        for (uint64_t j = 0; j < p->k; j++) {
            uint64_t r = j + nx_splitmix64(&st) % (E - j);
            int32_t v = perm[r];
            perm[r] = perm[j], perm[j] = v;
            idx[t * p->k + j] = v;
        }
    }
}

/* Weights U(-1, 1) / sqrt(fan-in) (a model's scale: outputs O(1)); the
 * routing as above, affinities a softmax over the chosen experts' random
 * logits, zero elsewhere. */
static int md_values(const nx_macro_op *op, uint32_t operand, void *data, uint64_t seed) {
    nx_moe_decode_params p;
    if (operand < 1 || md_read(op, &p, NULL) != 0) return 0;
    if (!data) return 1;
    const size_t es = nx_dtype_size(p.dtype);
    uint64_t st = seed ^ (0x3e0ull << 8) ^ operand;
    if (operand <= 3) {
        const double scale = 1.0 / sqrt((double)(operand == 3 ? p.inter : p.H));
        const uint64_t n = p.E * p.H * p.inter;
        for (uint64_t i = 0; i < n; i++)
            nx_dtype_store(p.dtype, (uint8_t *)data + i * es, scale * (2.0 * nx_splitmix64_unit(&st) - 1.0));
        return 1;
    }
    if (p.E > 4096) return 0;
    int32_t *idx = malloc(p.T * p.k * sizeof *idx);
    if (!idx) return 0;
    routing(&p, seed, idx);
    if (operand == 5) {
        memcpy(data, idx, p.T * p.k * sizeof *idx);
    } else {
        float *a = data;
        memset(a, 0, p.T * p.E * sizeof *a);
        for (uint64_t t = 0; t < p.T; t++) {
            double z[NX_MOE_DECODE_MAX_K], sum = 0;
            for (uint64_t j = 0; j < p.k; j++) sum += (z[j] = exp(2.0 * nx_splitmix64_unit(&st)));
            for (uint64_t j = 0; j < p.k; j++) a[t * p.E + (uint64_t)idx[t * p.k + j]] = (float)(z[j] / sum);
        }
    }
    free(idx);
    return 1;
}

static int md_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_moe_decode_params p;
    memset(out, 0, sizeof *out);
    if (md_read(op, &p, err) != 0) return -1;
    const double n = (double)(p.H + p.inter), eps = nx_dtype_epsilon(p.dtype);
    const double k = (double)(p.all ? p.E : p.k), m = (2 * k + 4) + sqrt(n) * n * 0x1p-24 / eps;
    nx_tolerance_eps(out, m, p.dtype);
    snprintf(out->text, sizeof out->text, "%.4g x eps(%s): k=%.0f, H+I=%.0f", m, nx_dtype_name(p.dtype), k, n);
    return 0;
}

static int md_explain(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len, nx_error *err) {
    (void)geo;
    nx_moe_decode_params p;
    if (md_read(op, &p, err) != 0) return -1;
    if (p.all)
        snprintf(buf, len, "all: %llu expert passes, every expert's weights streamed, I split across the grid",
                 (unsigned long long)p.E);
    else if (p.T * p.k < p.E)
        snprintf(buf, len, "selected, slot list: %llu passes (one per slot, repeats empty), I split across the grid",
                 (unsigned long long)(p.T * p.k));
    else
        snprintf(buf, len, "selected, expert loop: %llu passes (unused experts' gathers skipped), I split across the grid",
                 (unsigned long long)p.E);
    return 0;
}

static const nx_op_rules nx_rules_moe_decode = {
    .attrs = nx_moe_decode_attrs,
    .infer_results = md_infer,
    .default_op = md_default,
    .reference = md_reference,
    .reference_name = "nx_ref_moe_decode",
    .tolerance = md_tolerance,
    .default_values = md_values,
    .explain = md_explain,
};

/* The composite: the decode expert MLPs (kernels/moe/). */
static const nx_composite moe_decode_composites[] = {
    {.name = "moe_decode",
     .config = NX_CONFIG(NX_LEAF(nx_moe_decode), NX_OPERANDS_ALL, NULL, true),
     .rules = &nx_rules_moe_decode,
     .via = "nxsim run moe_decode (attributes act, mode)"},
};

const nx_family nx_family_moe_decode = {.name = "moe_decode", NX_FAMILY_COMPOSITES(moe_decode_composites)};
