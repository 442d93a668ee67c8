/* Ready-made tolerances and small helpers over nx_op_rules (registry/rules.h). */
#include "rules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isa/strbuf.h"
#include "isa/tensor_random.h"

double nx_dtype_epsilon(nx_dtype dt) {
    switch (dt) {
    case NX_DT_FP32: return ldexp(1.0, -23);
    case NX_DT_BF16: return ldexp(1.0, -7);
    case NX_DT_FP16: return ldexp(1.0, -10);
    case NX_DT_FP8_E4M3: return ldexp(1.0, -3);
    case NX_DT_FP8_E5M2: return ldexp(1.0, -2);
    default: return 1.0; /* integers */
    }
}

int nx_tolerance_exact(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)op;
    (void)result;
    (void)err;
    memset(out, 0, sizeof *out);
    snprintf(out->text, sizeof out->text, "exact");
    return 0;
}

void nx_tolerance_eps(nx_tolerance *out, double multiple, nx_dtype dt) {
    memset(out, 0, sizeof *out);
    out->abs = out->rel = multiple * nx_dtype_epsilon(dt);
    const char *name = nx_dtype_name(dt);
    snprintf(out->text, sizeof out->text, "%g x eps(%s)", multiple, name ? name : "?");
}

int nx_op_rules_tolerance(const nx_op_rules *rules, const nx_macro_op *op, uint32_t result,
                          nx_tolerance *out, nx_error *err) {
    return nx_op_rules_tolerance_on(rules, op, NULL, result, out, err);
}

int nx_op_rules_tolerance_on(const nx_op_rules *rules, const nx_macro_op *op, const nx_geometry *geo,
                             uint32_t result, nx_tolerance *out, nx_error *err) {
    if (rules && rules->tolerance_on) return rules->tolerance_on(op, geo, result, out, err);
    if (!rules || !rules->tolerance) return nx_tolerance_exact(op, result, out, err);
    return rules->tolerance(op, result, out, err);
}

int nx_op_rules_reads_attr(const nx_op_rules *rules, const char *name) {
    for (const char *const *a = rules ? rules->attrs : NULL; a && *a; a++)
        if (strcmp(*a, name) == 0) return 1;
    return 0;
}

static int same_type(const nx_op_tensor *a, const nx_op_tensor *b) {
    if (a->dtype != b->dtype || a->ndims != b->ndims) return 0;
    for (uint32_t d = 0; d < a->ndims; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

int nx_op_rules_apply_results(const nx_op_rules *rules, const char *key, const char *source,
                              nx_macro_op *op, nx_error *err) {
    if (!rules || !rules->infer_results)
        return nx_fail(err, "%s: nxsim has no result-shape rule for this kernel yet", key);
    nx_op_tensor declared[NX_OP_MAX_TENSORS];
    uint32_t n_declared = op->n_results;
    memcpy(declared, op->results, sizeof declared);
    const char *names[NX_OP_MAX_TENSORS] = {0};
    for (uint32_t j = 0; j < n_declared; j++) names[j] = declared[j].name;
    op->n_results = 0;
    if (rules->infer_results(op, names, err) != 0) return -1;
    int rc = 0;
    if (n_declared > op->n_results) {
        rc = nx_fail(err, "%u results given, %s produces %u", n_declared, key, op->n_results);
    }
    for (uint32_t j = 0; j < n_declared && rc == 0; j++) {
        const nx_op_tensor *d = &declared[j], *t = &op->results[j];
        if (d->dtype != NX_OP_DTYPE_UNSET && d->dtype != t->dtype) {
            rc = nx_fail(err, "result %u (%s) is declared %s, but %s produces %s", j, t->name,
                         nx_dtype_name(d->dtype), key, nx_dtype_name(t->dtype));
        } else if (d->ndims != 0) {
            nx_op_tensor want = *d;
            want.dtype = t->dtype;
            if (!same_type(&want, t)) {
                char want_s[128], got_s[128];
                nx_op_tensor_format(want_s, sizeof want_s, &want);
                nx_op_tensor_format(got_s, sizeof got_s, t);
                rc = nx_fail(err, "result %u (%s) is declared %s, but %s produces %s", j, t->name, want_s,
                             key, got_s);
            }
        }
    }
    for (uint32_t j = 0; j < op->n_results && rc == 0 && rules->aliases; j++) {
        const int32_t a = rules->aliases(op, j);
        if (a >= (int32_t)op->n_operands)
            rc = nx_fail(err, "%s: result %u (%s) aliases operand %d, the op has %u", key, j, op->results[j].name, a,
                         op->n_operands);
        else
            op->results[j].alias = a >= 0 ? (uint32_t)a + 1 : 0;
    }
    if (rc != 0 && source) nx_fail_prefix(err, "%s", source);
    return rc;
}

/* Edit distance of a and b (insertions, deletions, substitutions), capped:
 * only small distances matter for a suggestion. */
static size_t edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return 64;
    size_t row[64];
    for (size_t j = 0; j <= m; j++) row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

int nx_op_rules_check_attrs(const nx_op_rules *rules, const char *key, const nx_attrs *attrs, nx_error *err) {
    if (!rules || !attrs) return 0;
    for (uint32_t i = 0; i < attrs->count; i++) {
        const char *name = attrs->items[i].name;
        if (nx_op_rules_reads_attr(rules, name)) continue;
        nx_strbuf known = NX_STRBUF_INIT;
        const char *closest = NULL;
        size_t best = 3; /* a suggestion within 2 edits */
        for (const char *const *a = rules->attrs; a && *a; a++) {
            nx_sb_printf(&known, "%s%s", a == rules->attrs ? "" : ", ", *a);
            size_t d = edit_distance(name, *a);
            if (d < best && d < strlen(*a)) {
                best = d;
                closest = *a;
            }
        }
        nx_quoted q;
        nx_fail(err, "%s: unknown attribute '%s'%s%s%s; %s %s%s", key, nx_quote(&q, name, NX_QUOTE_NAME),
                closest ? " (did you mean '" : "", closest ? closest : "", closest ? "'?)" : "", key,
                known.len ? "reads: " : "reads no attributes", known.failed ? "..." : nx_sb_str(&known));
        nx_sb_free(&known);
        return -1;
    }
    return 0;
}

int nx_op_rules_builtin_values(const nx_op_rules *rules, const nx_macro_op *op, uint32_t i) {
    return rules && rules->default_values && rules->default_values(op, i, NULL, 0) == 1;
}

void nx_op_rules_fill_operand(const nx_op_rules *rules, const nx_macro_op *op, uint32_t i,
                              const nx_tensor_decl *t, uint8_t *data, uint64_t seed, uint32_t index) {
    if (nx_op_rules_builtin_values(rules, op, i) && rules->default_values(op, i, data, seed) == 1) return;
    nx_tensor_fill_random(t, data, seed, index);
}
