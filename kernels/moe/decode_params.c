/* moe_decode's operand and attribute rules (kernels/moe/moe_decode.h): one
 * home for what the rules check on an op and the kernel on a call. The
 * values of indices are run-time data: what a shape cannot say (an index
 * outside [-1, E)) the kernel's probe faults on when it runs
 * (kernels/moe/decode_route.c). */
#include <stdio.h>
#include <string.h>

#include "moe_decode.h"

const char *const nx_moe_decode_attrs[] = {"act", "mode", NULL};

static const char *const names_[NX_MOE_DECODE_OPERANDS] = {"x", "w_gate", "w_up", "w_down", "affinities", "indices"};

static int string_attr(const nx_attrs *attrs, const char *name, const char *dflt, const char *const *allowed,
                       const char *list, uint32_t *out, nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, name);
    const char *s = dflt;
    if (v) {
        if (v->kind != NX_VAL_STRING) return nx_fail(err, "attribute %s: must be a string (one of %s)", name, list);
        s = v->s;
    }
    for (uint32_t i = 0; allowed[i]; i++)
        if (strcmp(s, allowed[i]) == 0) {
            *out = i;
            return 0;
        }
    return nx_fail(err, "attribute %s: '%s' is not one of %s", name, s, list);
}

static int shape_is(const nx_norm_tensor *t, uint32_t i, uint32_t rank, const uint64_t *want, const char *form,
                    const char *const *why, nx_error *err) {
    if (t->ndims != rank) return nx_fail(err, "operand %u (%s): rank %u, %s must be %s", i, t->name, t->ndims, names_[i], form);
    for (uint32_t d = 0; d < rank; d++)
        if (t->shape[d] != want[d])
            return nx_fail(err, "operand %u (%s): dim %u is %llu, must be %llu (%s)", i, t->name, d,
                           (unsigned long long)t->shape[d], (unsigned long long)want[d], why[d]);
    return 0;
}

int nx_moe_decode_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_moe_decode_params *p,
                       nx_error *err) {
    memset(p, 0, sizeof *p);
    static const char *const acts[] = {"silu", "gelu", "gelu_tanh", "relu", NULL};
    static const nx_act_func act_of[] = {NX_ACT_SILU, NX_ACT_GELU, NX_ACT_GELU_TANH, NX_ACT_RELU};
    static const char *const modes[] = {"selected", "all", NULL};
    uint32_t a = 0, m = 0;
    if (string_attr(attrs, "act", "silu", acts, "silu, gelu, gelu_tanh, relu", &a, err) != 0 ||
        string_attr(attrs, "mode", "selected", modes, "selected, all", &m, err) != 0)
        return -1;
    p->act = act_of[a];
    p->all = m == 1;
    if (n_in != NX_MOE_DECODE_OPERANDS)
        return nx_fail(err, "moe_decode takes 6 operands (x, w_gate, w_up, w_down, affinities, indices), the op has %u",
                       n_in);
    const nx_norm_tensor *x = &in[0];
    if (nx_norm_float_operand(x, 0, "moe_decode", err) != 0) return -1;
    if (x->ndims != 2) return nx_fail(err, "operand 0 (%s): rank %u, x must be [T, H]", x->name, x->ndims);
    p->dtype = x->dtype;
    p->T = x->shape[0], p->H = x->shape[1];
    if (p->T < 1 || p->T > NX_MOE_DECODE_MAX_T)
        return nx_fail(err, "operand 0 (%s): T = %llu tokens, moe_decode takes 1 to %d", x->name,
                       (unsigned long long)p->T, NX_MOE_DECODE_MAX_T);
    if (p->H == 0) return nx_fail(err, "operand 0 (%s): H is 0", x->name);
    for (uint32_t i = 1; i < 4; i++)
        if (in[i].dtype != p->dtype)
            return nx_fail(err, "operand %u (%s): dtype %s differs from operand 0 (%s)'s %s", i, in[i].name,
                           nx_dtype_name(in[i].dtype), x->name, nx_dtype_name(p->dtype));
    const nx_norm_tensor *wg = &in[1];
    if (wg->ndims != 3) return nx_fail(err, "operand 1 (%s): rank %u, w_gate must be [E, H, I]", wg->name, wg->ndims);
    p->E = wg->shape[0], p->inter = wg->shape[2];
    if (p->E == 0 || p->inter == 0)
        return nx_fail(err, "operand 1 (%s): E = %llu and I = %llu must be at least 1", wg->name,
                       (unsigned long long)p->E, (unsigned long long)p->inter);
    static const char *const why_gu[3] = {"w_gate's E", "x's H", "w_gate's I"}, *const why_d[3] = {"w_gate's E", "w_gate's I", "x's H"};
    const uint64_t gu[3] = {p->E, p->H, p->inter}, dn[3] = {p->E, p->inter, p->H};
    if (shape_is(wg, 1, 3, gu, "[E, H, I]", why_gu, err) != 0 || shape_is(&in[2], 2, 3, gu, "[E, H, I]", why_gu, err) != 0 ||
        shape_is(&in[3], 3, 3, dn, "[E, I, H]", why_d, err) != 0)
        return -1;
    const nx_norm_tensor *af = &in[4], *ix = &in[5];
    if (af->dtype != NX_DT_FP32 || af->ndims != 2 || af->shape[0] != p->T || af->shape[1] != p->E)
        return nx_fail(err, "operand 4 (%s): affinities must be fp32 [T, E] = [%llu, %llu]", af->name,
                       (unsigned long long)p->T, (unsigned long long)p->E);
    if (ix->dtype != NX_DT_INT32 || ix->ndims != 2 || ix->shape[0] != p->T)
        return nx_fail(err, "operand 5 (%s): indices must be int32 [T, k] with T = %llu", ix->name,
                       (unsigned long long)p->T);
    p->k = ix->shape[1];
    if (p->k < 1 || p->k > NX_MOE_DECODE_MAX_K)
        return nx_fail(err, "operand 5 (%s): k = %llu experts per token, moe_decode takes 1 to %d", ix->name,
                       (unsigned long long)p->k, NX_MOE_DECODE_MAX_K);
    if (p->k > p->E)
        return nx_fail(err, "operand 5 (%s): k = %llu experts per token exceeds E = %llu experts", ix->name,
                       (unsigned long long)p->k, (unsigned long long)p->E);
    /* the selected experts' weight rows are addressed by on-chip row
     * offsets computed in fp32: exact below 2^24 */
    const uint64_t rows = p->E * (p->H > p->inter ? p->H : p->inter);
    if (rows >= (1ull << 24))
        return nx_fail(err, "operand 1 (%s): E x max(H, I) = %llu weight rows, moe_decode addresses fewer than 2^24",
                       wg->name, (unsigned long long)rows);
    return 0;
}
