/* selective_scan's operand and attribute rules (kernels/scan/scan.h),
 * shared by the rules and the kernel. */
#include <stdio.h>
#include <string.h>

#include "scan.h"

const char *const nx_scan_attrs[] = {"delta_softplus", "skip", "initial_state", NULL};

/* An upper bound on L, C and N that keeps every HBM pitch an int32. */
#define SCAN_DIM_MAX (1ull << 30)

static void shape_text(const nx_norm_tensor *t, char *buf, size_t len) {
    int k = snprintf(buf, len, "[");
    for (uint32_t d = 0; d < t->ndims && k > 0 && (size_t)k < len; d++)
        k += snprintf(buf + k, len - (size_t)k, d ? ", %llu" : "%llu", (unsigned long long)t->shape[d]);
    if (k > 0 && (size_t)k < len) snprintf(buf + k, len - (size_t)k, "]");
}

static int same_shape(const nx_norm_tensor *t, uint32_t nd, const uint64_t *want) {
    if (t->ndims != nd) return 0;
    for (uint32_t d = 0; d < nd; d++)
        if (t->shape[d] != want[d]) return 0;
    return 1;
}

/* Operand i must be `nd`-D of shape want (`form` names the dims). */
static int want_shape(const nx_norm_tensor *t, uint32_t i, const char *what, uint32_t nd, const uint64_t *want,
                      const char *form, nx_error *err) {
    if (same_shape(t, nd, want)) return 0;
    char got[96], exp[96];
    nx_norm_tensor w = {t->name, t->dtype, nd, want};
    shape_text(t, got, sizeof got);
    shape_text(&w, exp, sizeof exp);
    return nx_fail(err, "operand %u (%s): %s must be %s (%s), got %s", i, t->name, what, exp, form, got);
}

static const char *dt_name(nx_dtype dt) { return nx_dtype_name(dt) ? nx_dtype_name(dt) : "?"; }

int nx_scan_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_scan_params *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    if (nx_norm_attr_bool(attrs, "delta_softplus", 0, &p->delta_softplus, err) != 0 ||
        nx_norm_attr_bool(attrs, "skip", 0, &p->skip, err) != 0 ||
        nx_norm_attr_bool(attrs, "initial_state", 0, &p->initial_state, err) != 0)
        return -1;
    p->n_operands = 5u + (uint32_t)p->skip + (uint32_t)p->initial_state;
    p->d_operand = p->skip ? 5 : 0;
    p->h0_operand = p->initial_state ? 5u + (uint32_t)p->skip : 0;
    if (n_in < 5)
        return nx_fail(err, "selective_scan takes u, delta, A, Bm, Cm [, D (skip=true)] [, h0 (initial_state=true)]; "
                            "the op has %u operands", n_in);
    if (p->skip && n_in <= p->d_operand)
        return nx_fail(err, "attribute skip: true, but the op has no operand %u (D [C])", p->d_operand);
    if (p->initial_state && n_in <= p->h0_operand)
        return nx_fail(err, "attribute initial_state: true, but the op has no operand %u (h0 [B, C, N] fp32)",
                       p->h0_operand);
    if (n_in > p->n_operands)
        return nx_fail(err, "operand %u (%s): no attribute asks for it (skip=true takes D [C], initial_state=true "
                            "h0 [B, C, N] fp32)", p->n_operands, in[p->n_operands].name);
    const nx_norm_tensor *u = &in[0];
    if (u->dtype != NX_DT_FP32 && u->dtype != NX_DT_BF16)
        return nx_fail(err, "operand 0 (%s): dtype %s, selective_scan takes fp32 or bf16", u->name, dt_name(u->dtype));
    if (u->ndims != 3)
        return nx_fail(err, "operand 0 (%s): rank %u, selective_scan takes u [B, C, L]", u->name, u->ndims);
    p->dtype = u->dtype;
    p->B = u->shape[0], p->C = u->shape[1], p->L = u->shape[2];
    if (p->B == 0 || p->C == 0 || p->L == 0)
        return nx_fail(err, "operand 0 (%s): a zero dim in u [B, C, L]", u->name);
    if (p->L > SCAN_DIM_MAX || p->C > SCAN_DIM_MAX)
        return nx_fail(err, "operand 0 (%s): C = %llu, L = %llu beyond %llu", u->name, (unsigned long long)p->C,
                       (unsigned long long)p->L, SCAN_DIM_MAX);
    const nx_norm_tensor *A = &in[2];
    if (A->ndims != 2 || A->shape[0] != p->C || A->shape[1] == 0 || A->shape[1] > SCAN_DIM_MAX) {
        char got[96];
        shape_text(A, got, sizeof got);
        return nx_fail(err, "operand 2 (%s): A must be [%llu, N] ([C, N], N >= 1), got %s", A->name,
                       (unsigned long long)p->C, got);
    }
    p->N = A->shape[1];
    const uint64_t bcl[3] = {p->B, p->C, p->L}, bnl[3] = {p->B, p->N, p->L}, c1[1] = {p->C};
    const uint64_t bcn[3] = {p->B, p->C, p->N};
    if (want_shape(&in[1], 1, "delta", 3, bcl, "u's [B, C, L]", err) != 0 ||
        want_shape(&in[3], 3, "Bm", 3, bnl, "[B, N, L]", err) != 0 ||
        want_shape(&in[4], 4, "Cm", 3, bnl, "[B, N, L]", err) != 0)
        return -1;
    static const uint32_t same[3] = {1, 3, 4};
    for (uint32_t k = 0; k < 3; k++)
        if (in[same[k]].dtype != p->dtype)
            return nx_fail(err, "operand %u (%s): dtype %s differs from u's %s", same[k], in[same[k]].name,
                           dt_name(in[same[k]].dtype), dt_name(p->dtype));
    if (A->dtype != NX_DT_FP32 && A->dtype != NX_DT_BF16)
        return nx_fail(err, "operand 2 (%s): dtype %s, A takes fp32 or bf16", A->name, dt_name(A->dtype));
    p->a_dtype = A->dtype;
    if (p->skip) {
        const nx_norm_tensor *D = &in[p->d_operand];
        if (want_shape(D, p->d_operand, "D", 1, c1, "[C]", err) != 0) return -1;
        if (D->dtype != NX_DT_FP32 && D->dtype != NX_DT_BF16)
            return nx_fail(err, "operand %u (%s): dtype %s, D takes fp32 or bf16", p->d_operand, D->name,
                           dt_name(D->dtype));
        p->d_dtype = D->dtype;
    }
    if (p->initial_state) {
        const nx_norm_tensor *h = &in[p->h0_operand];
        if (want_shape(h, p->h0_operand, "h0", 3, bcn, "[B, C, N]", err) != 0) return -1;
        if (h->dtype != NX_DT_FP32)
            return nx_fail(err, "operand %u (%s): dtype %s, h0 must be fp32", p->h0_operand, h->name,
                           dt_name(h->dtype));
    }
    return 0;
}
