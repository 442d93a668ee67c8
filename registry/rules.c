/* Ready-made tolerances and small helpers over nx_op_rules (registry/rules.h). */
#include "rules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
    if (!rules || !rules->tolerance) return nx_tolerance_exact(op, result, out, err);
    return rules->tolerance(op, result, out, err);
}

int nx_op_rules_reads_attr(const nx_op_rules *rules, const char *name) {
    for (const char *const *a = rules ? rules->attrs : NULL; a && *a; a++)
        if (strcmp(*a, name) == 0) return 1;
    return 0;
}
