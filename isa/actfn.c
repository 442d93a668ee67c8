/* The Scalar Engine's activation functions (nx_act_apply).
 *
 * Contract (docs/parts/insns-act-pool.md, "Activation functions"): the input
 * is rounded to fp32, the function is evaluated in double precision and the
 * result is rounded once to fp32. The formulas below are arranged so that the
 * double evaluation has no catastrophic cancellation (e.g. gelu uses erfc for
 * negative inputs instead of 1 + erf), so the fp32 result is the correctly
 * rounded value except when the exact value lies within double precision of
 * an fp32 rounding boundary. Special values follow IEEE 754 where a limit
 * exists; the choices where it does not are listed per function. */
#include <math.h>

#include "dtype.h"
#include "insn.h"

/* x * P(X <= x) for a standard normal X; exact-limit handling of -inf
 * (x * 0 would be NaN; the limit from below is -0). */
static double gelu_erf(double x) {
    if (isinf(x)) return x > 0 ? x : -0.0;
    /* 0.5 * erfc(-x / sqrt 2) == 0.5 * (1 + erf(x / sqrt 2)) without the
     * cancellation of 1 + erf for negative x. */
    return x * 0.5 * erfc(-x / sqrt(2.0));
}

/* 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), written as
 * x / (1 + exp(-2u)) (the identity 1 + tanh(u) = 2 / (1 + exp(-2u))), which
 * stays accurate where tanh(u) is close to -1. */
static double gelu_tanh(double x) {
    if (isinf(x)) return x > 0 ? x : -0.0;
    const double k = sqrt(2.0 / 3.14159265358979323846); /* sqrt(2/pi) */
    double u = k * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* x * sigmoid(x); -inf gives -0 (the limit) rather than -inf / inf = NaN. */
static double silu(double x) {
    if (isinf(x)) return x > 0 ? x : -0.0;
    return x / (1.0 + exp(-x));
}

static double relu(double x) {
    if (isnan(x)) return x;
    return x > 0 ? x : 0.0; /* -0 and negatives give +0 */
}

static double sign_of(double x) {
    if (isnan(x)) return x;
    if (x > 0) return 1.0;
    if (x < 0) return -1.0;
    return 0.0; /* +0 for both zeros */
}

static inline __attribute__((always_inline)) double act_elem(nx_act_func f, double x) {
    x = nx_fp32_round(x);
    double y;
    switch (f) {
    case NX_ACT_IDENTITY: y = x; break;
    case NX_ACT_EXP: y = exp(x); break;
    case NX_ACT_LOG: y = log(x); break;          /* log(+-0) = -inf, log(<0) = NaN */
    case NX_ACT_RELU: y = relu(x); break;
    case NX_ACT_GELU: y = gelu_erf(x); break;
    case NX_ACT_GELU_TANH: y = gelu_tanh(x); break;
    case NX_ACT_SILU: y = silu(x); break;
    case NX_ACT_SIGMOID: y = sigmoid(x); break;
    case NX_ACT_TANH: y = tanh(x); break;
    case NX_ACT_SQUARE: y = x * x; break;        /* exact in double for fp32 x */
    case NX_ACT_SQRT: y = sqrt(x); break;        /* sqrt(-0) = -0, sqrt(<0) = NaN */
    case NX_ACT_RSQRT: y = 1.0 / sqrt(x); break; /* +0 -> +inf, -0 -> -inf */
    case NX_ACT_RECIPROCAL: y = 1.0 / x; break;
    case NX_ACT_ABS: y = fabs(x); break;
    case NX_ACT_SIGN: y = sign_of(x); break;
    default: y = NAN; break;                     /* validation rejects unknown codes */
    }
    return nx_fp32_round(y);
}

double nx_act_apply(nx_act_func f, double x) { return act_elem(f, x); }

/* One loop per function, the function fixed in each (act_elem folds to
 * its case); the libm calls stay one per element. */
#define CASE_RUN(F)                                                                           \
    case F:                                                                                   \
        for (uint64_t i = 0; i < n; i++) x[i] = act_elem(F, x[i]);                            \
        return

void nx_act_apply_run(nx_act_func f, double *x, uint64_t n) {
    switch (f) {
    CASE_RUN(NX_ACT_IDENTITY);
    CASE_RUN(NX_ACT_EXP);
    CASE_RUN(NX_ACT_LOG);
    CASE_RUN(NX_ACT_RELU);
    CASE_RUN(NX_ACT_GELU);
    CASE_RUN(NX_ACT_GELU_TANH);
    CASE_RUN(NX_ACT_SILU);
    CASE_RUN(NX_ACT_SIGMOID);
    CASE_RUN(NX_ACT_TANH);
    CASE_RUN(NX_ACT_SQUARE);
    CASE_RUN(NX_ACT_SQRT);
    CASE_RUN(NX_ACT_RSQRT);
    CASE_RUN(NX_ACT_RECIPROCAL);
    CASE_RUN(NX_ACT_ABS);
    CASE_RUN(NX_ACT_SIGN);
    default: break;
    }
    for (uint64_t i = 0; i < n; i++) x[i] = act_elem(f, x[i]); /* unknown code: as nx_act_apply */
}
