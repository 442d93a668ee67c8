/* The blockwise_mm operand and attribute reader (blockwise_mm_params.h). */
#include "blockwise_mm_params.h"

#include <stdio.h>
#include <string.h>

#include "kernels/transpose/transpose_plan.h" /* nx_format_u64_list */

static const char *const OPERAND_NAMES[NX_BWMM_OPERANDS] = {
    "hidden_states",    "expert_affinities_masked", "gate_up_proj_weight",
    "down_proj_weight", "token_position_to_id",     "block_to_expert"};

const char *nx_bwmm_scaling_name(nx_bwmm_scaling s) {
    switch (s) {
    case NX_BWMM_POST_SCALE: return "POST_SCALE";
    case NX_BWMM_PRE_SCALE: return "PRE_SCALE";
    case NX_BWMM_NO_SCALE: return "NO_SCALE";
    }
    return "?";
}

/* "operand i (name)" of the op, with the role when the op names it
 * differently. */
static void who(char *buf, size_t len, const nx_bwmm_tensor *ops, uint32_t i) {
    if (strcmp(ops[i].name, OPERAND_NAMES[i]) == 0)
        snprintf(buf, len, "operand %u (%s)", i, ops[i].name);
    else
        snprintf(buf, len, "operand %u (%s, the %s)", i, ops[i].name, OPERAND_NAMES[i]);
}

static int bad_shape(const nx_bwmm_tensor *ops, uint32_t i, const char *want, nx_error *err) {
    char w[160], s[160];
    who(w, sizeof w, ops, i);
    nx_format_u64_list(s, sizeof s, ops[i].shape, ops[i].ndims);
    return nx_fail(err, "%s: shape %s must be %s", w, s, want);
}

static int read_attrs(const nx_attrs *attrs, nx_bwmm_params *p, nx_error *err) {
    const nx_value *b = nx_attrs_get(attrs, "block_size");
    if (!b) return nx_fail(err, "attribute block_size: is missing (blockwise_mm needs the block size B)");
    if (b->kind != NX_VAL_INT) return nx_fail(err, "attribute block_size: must be an int");
    if (b->i < 1) return nx_fail(err, "attribute block_size: is %lld, must be >= 1", (long long)b->i);
    p->B = (uint64_t)b->i;
    p->scaling = NX_BWMM_POST_SCALE;
    const nx_value *m = nx_attrs_get(attrs, "expert_affinities_scaling_mode");
    if (m) {
        if (m->kind != NX_VAL_STRING)
            return nx_fail(err, "attribute expert_affinities_scaling_mode: must be a string "
                                "(\"POST_SCALE\", \"PRE_SCALE\" or \"NO_SCALE\")");
        static const nx_bwmm_scaling modes[3] = {NX_BWMM_POST_SCALE, NX_BWMM_PRE_SCALE, NX_BWMM_NO_SCALE};
        int found = 0;
        for (int k = 0; k < 3 && !found; k++) {
            if (strcmp(m->s, nx_bwmm_scaling_name(modes[k])) == 0) {
                p->scaling = modes[k];
                found = 1;
            }
        }
        if (!found) { /* the value is the user's: escaped, so the message stays one line */
            nx_quoted q;
            return nx_fail(err,
                           "attribute expert_affinities_scaling_mode: \"%s\" is not one of "
                           "\"POST_SCALE\", \"PRE_SCALE\", \"NO_SCALE\"",
                           nx_quote(&q, m->s, NX_QUOTE_NAME));
        }
    }
    return 0;
}

/* 1-D (n,) or 2-D (n, 1) int32 vector. */
static int int_vector(const nx_bwmm_tensor *ops, uint32_t i, uint64_t *n, const char *want, nx_error *err) {
    const nx_bwmm_tensor *t = &ops[i];
    char w[160];
    if (t->dtype != NX_DT_INT32) {
        who(w, sizeof w, ops, i);
        return nx_fail(err, "%s: dtype %s must be int32", w, nx_dtype_name(t->dtype));
    }
    if (t->ndims == 1)
        *n = t->shape[0];
    else if (t->ndims == 2 && t->shape[1] == 1)
        *n = t->shape[0];
    else
        return bad_shape(ops, i, want, err);
    return 0;
}

int nx_bwmm_params_read(const nx_attrs *attrs, const nx_bwmm_tensor *ops, uint32_t n_ops, nx_bwmm_params *p,
                        nx_error *err) {
    memset(p, 0, sizeof *p);
    if (n_ops != NX_BWMM_OPERANDS)
        return nx_fail(err,
                       "blockwise_mm takes %d operands (hidden_states, expert_affinities_masked, "
                       "gate_up_proj_weight, down_proj_weight, token_position_to_id, "
                       "block_to_expert), got %u",
                       NX_BWMM_OPERANDS, n_ops);
    if (read_attrs(attrs, p, err) != 0) return -1;
    char w[160], want[200];

    const nx_bwmm_tensor *hs = &ops[0];
    if (hs->ndims != 2 || hs->shape[0] < 1) return bad_shape(ops, 0, "[T+1, H]", err);
    if (hs->dtype != NX_DT_FP32 && hs->dtype != NX_DT_BF16) {
        who(w, sizeof w, ops, 0);
        return nx_fail(err, "%s: dtype %s is not supported (fp32 or bf16)", w, nx_dtype_name(hs->dtype));
    }
    p->dtype = hs->dtype;
    p->T = hs->shape[0] - 1;
    p->H = hs->shape[1];

    const nx_bwmm_tensor *gu = &ops[2];
    if (gu->ndims != 4 || gu->shape[1] != p->H || gu->shape[2] != 2) {
        snprintf(want, sizeof want, "[E, H, 2, I] = [E,%llu,2,I] (H from operand 0)",
                 (unsigned long long)p->H);
        return bad_shape(ops, 2, want, err);
    }
    p->E = gu->shape[0];
    p->inter = gu->shape[3];

    const nx_bwmm_tensor *dn = &ops[3];
    if (dn->ndims != 3 || dn->shape[0] != p->E || dn->shape[1] != p->inter || dn->shape[2] != p->H) {
        snprintf(want, sizeof want, "[E, I, H] = [%llu,%llu,%llu] (E and I from operand 2, H from operand 0)",
                 (unsigned long long)p->E, (unsigned long long)p->inter, (unsigned long long)p->H);
        return bad_shape(ops, 3, want, err);
    }

    const nx_bwmm_tensor *af = &ops[1];
    uint64_t rows = p->T + 1;
    int aff_ok = (af->ndims == 2 && af->shape[0] == rows * p->E && af->shape[1] == 1) ||
                 (af->ndims == 2 && af->shape[0] == rows && af->shape[1] == p->E) ||
                 (af->ndims == 1 && af->shape[0] == rows * p->E);
    if (!aff_ok) {
        snprintf(want, sizeof want, "[(T+1)*E, 1] = [%llu,1] (T+1 from operand 0, E from operand 2)",
                 (unsigned long long)(rows * p->E));
        return bad_shape(ops, 1, want, err);
    }
    if (!nx_dtype_is_float(af->dtype)) {
        who(w, sizeof w, ops, 1);
        return nx_fail(err, "%s: dtype %s must be a float type", w, nx_dtype_name(af->dtype));
    }
    p->aff_dtype = af->dtype;

    for (uint32_t i = 2; i <= 3; i++) {
        if (ops[i].dtype != p->dtype) {
            who(w, sizeof w, ops, i);
            return nx_fail(err, "%s: dtype %s differs from operand 0's %s", w, nx_dtype_name(ops[i].dtype),
                           nx_dtype_name(p->dtype));
        }
    }

    uint64_t npos, nblk;
    snprintf(want, sizeof want, "[NB*B] (B = block_size = %llu)", (unsigned long long)p->B);
    if (int_vector(ops, 4, &npos, want, err) != 0) return -1;
    if (npos % p->B != 0) {
        who(w, sizeof w, ops, 4);
        return nx_fail(err, "%s: %llu positions are not a whole number of blocks of block_size %llu", w,
                       (unsigned long long)npos, (unsigned long long)p->B);
    }
    p->NB = npos / p->B;
    snprintf(want, sizeof want, "[NB, 1] = [%llu,1] (NB = %llu positions / block_size %llu)",
             (unsigned long long)p->NB, (unsigned long long)npos, (unsigned long long)p->B);
    if (int_vector(ops, 5, &nblk, want, err) != 0) return -1;
    if (nblk != p->NB) return bad_shape(ops, 5, want, err);
    return 0;
}

void nx_bwmm_result_shape(const nx_bwmm_params *p, uint64_t shape[2]) {
    shape[0] = p->T + 1;
    shape[1] = p->H;
}
