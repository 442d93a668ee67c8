/* Run forms of the ALU (insn.h: nx_alu_run, nx_alu_run_scalar,
 * nx_alu_fold): nx_alu_apply over whole rows, bit for bit, with the op
 * switch outside the loops.
 *
 * The ops the leaves use most have four-lane kernels (isa/vec4.h):
 *   add, subtract, multiply, divide  in fp32 lanes: fp32(fp32(a) op fp32(b))
 *       computed in double and rounded once (the element rule) is the fp32
 *       operation itself, since double has more than 2 x 24 + 2 bits;
 *   max, min, abs_max  in fp32 lanes, on the bit patterns for the -0/+0 tie;
 *   the comparisons    in double lanes, on the exact engine values.
 * A group of four with a NaN operand or result is redone by the element
 * rule (alu_elem.h), which fixes which NaN comes out; so is the tail. The
 * other ops (bypass aside) run the element rule in a loop of their own. */
#include <stdint.h>
#include <string.h>

#include "alu_elem.h"
#include "insn.h"
#include "vec4.h"

/* A four-lane operand: contiguous from p (step 1) or one value repeated
 * (step 0). */
typedef struct lanes {
    const double *p;
    int step;
    nx_v4f f;  /* step 0: fp32(p[0]) in every lane */
    nx_v2d d;  /* step 0: p[0] in both lanes */
} lanes;

NX_V4_INLINE lanes lanes_of(const double *p, int step) {
    lanes l = {p, step, {0}, {0}};
    if (!step) {
        l.f = nx_v4f_splat((float)p[0]);
        l.d = (nx_v2d){p[0], p[0]};
    }
    return l;
}

NX_V4_INLINE nx_v4f lanes_f(const lanes *l, uint64_t i) { return l->step ? nx_v4_narrow(l->p + i) : l->f; }

NX_V4_INLINE nx_v2d lanes_d(const lanes *l, uint64_t i) {
    if (!l->step) return l->d;
    nx_v2d d;
    memcpy(&d, l->p + i, sizeof d);
    return d;
}

/* Elements [from, to) by the element rule. */
#define ELEMS(OP, FROM, TO)                                                                   \
    for (uint64_t e_ = (FROM); e_ < (TO); e_++)                                               \
    out[e_] = alu_elem(OP, a.p[a.step ? e_ : 0], b.p[b.step ? e_ : 0])

/* out = a op b, op one of the arithmetic ops with a kernel. */
NX_V4_INLINE void run_arith(nx_alu_op op, double *out, lanes a, lanes b, uint64_t n) {
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const nx_v4f x = lanes_f(&a, i), y = lanes_f(&b, i);
        nx_v4f r;
        switch (op) {
        case NX_ALU_ADD: r = x + y; break;
        case NX_ALU_SUBTRACT: r = x - y; break;
        case NX_ALU_MULTIPLY: r = x * y; break;
        default: r = x / y; break; /* NX_ALU_DIVIDE */
        }
        if (nx_v4i_any(r != r)) {
            ELEMS(op, i, i + 4);
            continue;
        }
        nx_v4_widen(out + i, r);
    }
    ELEMS(op, i, n);
}

/* out = max / min / abs_max (a, b): on equal values (only -0 and +0 differ
 * in bits) max takes the AND of the patterns (+0 unless both are -0), min
 * the OR; abs_max compares |x| patterns, which order as the values do. */
NX_V4_INLINE void run_minmax(nx_alu_op op, double *out, lanes a, lanes b, uint64_t n) {
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const nx_v4f x = lanes_f(&a, i), y = lanes_f(&b, i);
        if (nx_v4i_any((x != x) | (y != y))) {
            ELEMS(op, i, i + 4);
            continue;
        }
        const nx_v4i bx = nx_v4f_bits(x), by = nx_v4f_bits(y);
        nx_v4i r;
        if (op == NX_ALU_MAX) {
            r = nx_v4i_select(x == y, bx & by, nx_v4i_select(x > y, bx, by));
        } else if (op == NX_ALU_MIN) {
            r = nx_v4i_select(x == y, bx | by, nx_v4i_select(x < y, bx, by));
        } else { /* NX_ALU_ABS_MAX */
            const nx_v4i ax = bx & INT32_MAX, ay = by & INT32_MAX;
            r = nx_v4i_select(ax > ay, ax, ay);
        }
        nx_v4_widen(out + i, nx_v4f_from_bits(r));
    }
    ELEMS(op, i, n);
}

/* out = (a cmp b) ? 1.0 : 0.0 on the exact doubles. */
NX_V4_INLINE void run_compare(nx_alu_op op, double *out, lanes a, lanes b, uint64_t n) {
    const nx_v2l one = (nx_v2l){0} + (int64_t)0x3ff0000000000000; /* 1.0 */
    uint64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        const nx_v2d x = lanes_d(&a, i), y = lanes_d(&b, i);
        nx_v2l m;
        switch (op) {
        case NX_ALU_IS_EQUAL: m = x == y; break;
        case NX_ALU_NOT_EQUAL: m = x != y; break;
        case NX_ALU_IS_GE: m = x >= y; break;
        case NX_ALU_IS_GT: m = x > y; break;
        case NX_ALU_IS_LE: m = x <= y; break;
        default: m = x < y; break; /* NX_ALU_IS_LT */
        }
        const nx_v2l r = m & one;
        memcpy(out + i, &r, sizeof r);
    }
    ELEMS(op, i, n);
}

/* The loop of one op's element rule. */
#define CASE_ELEMS(OP)                                                                        \
    case OP: ELEMS(OP, 0, n); return

NX_V4_INLINE void run(nx_alu_op op, double *out, lanes a, lanes b, uint64_t n) {
    switch (op) {
    case NX_ALU_BYPASS:
        if (a.step && out == a.p) return;
        for (uint64_t e = 0; e < n; e++) out[e] = a.p[a.step ? e : 0];
        return;
    case NX_ALU_ADD:
    case NX_ALU_SUBTRACT:
    case NX_ALU_MULTIPLY:
    case NX_ALU_DIVIDE: run_arith(op, out, a, b, n); return;
    case NX_ALU_MAX:
    case NX_ALU_MIN:
    case NX_ALU_ABS_MAX: run_minmax(op, out, a, b, n); return;
    case NX_ALU_IS_EQUAL:
    case NX_ALU_NOT_EQUAL:
    case NX_ALU_IS_GE:
    case NX_ALU_IS_GT:
    case NX_ALU_IS_LE:
    case NX_ALU_IS_LT: run_compare(op, out, a, b, n); return;
    CASE_ELEMS(NX_ALU_POW);
    CASE_ELEMS(NX_ALU_BITWISE_AND);
    CASE_ELEMS(NX_ALU_BITWISE_OR);
    CASE_ELEMS(NX_ALU_BITWISE_XOR);
    CASE_ELEMS(NX_ALU_SHIFT_LEFT);
    CASE_ELEMS(NX_ALU_SHIFT_RIGHT);
    case NX_ALU_COUNT: break;
    }
    for (uint64_t e = 0; e < n; e++) out[e] = NAN; /* as nx_alu_apply: not reached when validated */
}

void nx_alu_run(nx_alu_op op, double *out, const double *a, const double *b, uint64_t n) {
    run(op, out, lanes_of(a, 1), lanes_of(b, 1), n);
}

void nx_alu_run_scalar(nx_alu_op op, double *out, const double *x, double s, int scalar_first,
                       uint64_t n) {
    if (scalar_first) run(op, out, lanes_of(&s, 0), lanes_of(x, 1), n);
    else run(op, out, lanes_of(x, 1), lanes_of(&s, 0), n);
}

/* add / subtract / multiply / divide folded in fp32: each step is the
 * fp32 operation (as in run_arith) until a NaN comes up; from there the
 * element rule picks the NaN and carries it. */
NX_V4_INLINE double fold_arith(nx_alu_op op, double acc, const double *x, uint64_t n) {
    if (n == 0) return acc;
    float f = (float)acc;
    uint64_t e = 0;
    for (; e < n; e++) {
        const float y = (float)x[e];
        float r;
        switch (op) {
        case NX_ALU_ADD: r = f + y; break;
        case NX_ALU_SUBTRACT: r = f - y; break;
        case NX_ALU_MULTIPLY: r = f * y; break;
        default: r = f / y; break; /* NX_ALU_DIVIDE */
        }
        if (r != r) break;
        f = r;
    }
    if (e == n) return (double)f;
    double a = e == 0 ? acc : (double)f;
    for (; e < n; e++) a = alu_elem(op, a, x[e]);
    return a;
}

/* max / min / abs_max are folds of a total order (-0 below +0; abs_max on
 * magnitudes) while no NaN is involved, so the order of the steps does not
 * matter: four lanes, then the lanes and acc by the element rule. With a
 * NaN anywhere, the element rule in order (the first NaN wins). */
NX_V4_INLINE double fold_minmax(nx_alu_op op, double acc, const double *x, uint64_t n) {
    if (n < 8) {
        for (uint64_t e = 0; e < n; e++) acc = alu_elem(op, acc, x[e]);
        return acc;
    }
    nx_v4f m = nx_v4_narrow(x);
    nx_v4i nan = m != m;
    uint64_t e = 4;
    for (; e + 4 <= n; e += 4) {
        const nx_v4f y = nx_v4_narrow(x + e);
        nan |= y != y;
        const nx_v4i bm = nx_v4f_bits(m), by = nx_v4f_bits(y);
        nx_v4i r;
        if (op == NX_ALU_MAX) {
            r = nx_v4i_select(m == y, bm & by, nx_v4i_select(m > y, bm, by));
        } else if (op == NX_ALU_MIN) {
            r = nx_v4i_select(m == y, bm | by, nx_v4i_select(m < y, bm, by));
        } else { /* NX_ALU_ABS_MAX */
            const nx_v4i am = bm & INT32_MAX, ay = by & INT32_MAX;
            r = nx_v4i_select(am > ay, am, ay);
        }
        m = nx_v4f_from_bits(r);
    }
    if (nx_v4i_any(nan) || acc != acc) {
        for (e = 0; e < n; e++) acc = alu_elem(op, acc, x[e]);
        return acc;
    }
    for (int l = 0; l < 4; l++) acc = alu_elem(op, acc, (double)m[l]);
    for (; e < n; e++) acc = alu_elem(op, acc, x[e]);
    return acc;
}

/* The other folds: the element rule in a loop, with the op fixed per loop. */
#define CASE_FOLD(OP)                                                                         \
    case OP:                                                                                  \
        for (uint64_t e = 0; e < n; e++) acc = alu_elem(OP, acc, x[e]);                       \
        return acc

double nx_alu_fold(nx_alu_op op, double acc, const double *x, uint64_t n) {
    switch (op) {
    case NX_ALU_ADD:
    case NX_ALU_SUBTRACT:
    case NX_ALU_MULTIPLY:
    case NX_ALU_DIVIDE: return fold_arith(op, acc, x, n);
    case NX_ALU_MAX:
    case NX_ALU_MIN:
    case NX_ALU_ABS_MAX: return fold_minmax(op, acc, x, n);
    CASE_FOLD(NX_ALU_BYPASS);
    CASE_FOLD(NX_ALU_POW);
    CASE_FOLD(NX_ALU_BITWISE_AND);
    CASE_FOLD(NX_ALU_BITWISE_OR);
    CASE_FOLD(NX_ALU_BITWISE_XOR);
    CASE_FOLD(NX_ALU_SHIFT_LEFT);
    CASE_FOLD(NX_ALU_SHIFT_RIGHT);
    CASE_FOLD(NX_ALU_IS_EQUAL);
    CASE_FOLD(NX_ALU_NOT_EQUAL);
    CASE_FOLD(NX_ALU_IS_GE);
    CASE_FOLD(NX_ALU_IS_GT);
    CASE_FOLD(NX_ALU_IS_LE);
    CASE_FOLD(NX_ALU_IS_LT);
    case NX_ALU_COUNT: break;
    }
    return n ? NAN : acc;
}
