/* The fused elementwise kernel (isa/ew.h).
 *
 * Why it is exact: every input has a float dtype, so every engine value is
 * an fp32 value and the fp32 lanes hold it exactly; each ALU step on fp32
 * values gives what nx_alu_apply gives (arithmetic: the fp32 operation is
 * the correctly rounded double result; max/min/abs_max and the
 * comparisons: on the exact values), and its result is again an fp32
 * value, so the chain stays exact in fp32 lanes to the store. Where that
 * does not hold, the group of four goes through the element routines
 * instead: a NaN anywhere (the ALU's NaN rule picks which NaN), a store to
 * a narrow format that lands between its subnormals, and the tail. A
 * scalar enters arithmetic as fp32(s), as in the ALU; a comparison, or a
 * bypass that returns the scalar, needs its exact value, so a partition
 * whose such scalar is not an fp32 value takes the element routines.
 * In-place operands are read a group at a time before the group is
 * written, which is the row-buffer order for the same elements. */
#include "ew.h"

#include <stdint.h>
#include <string.h>

#include "alu_elem.h"
#include "dtype_lanes.h"
#include "vec4.h"

static int op_fused(nx_alu_op op) {
    switch (op) {
    case NX_ALU_BYPASS:
    case NX_ALU_ADD:
    case NX_ALU_SUBTRACT:
    case NX_ALU_MULTIPLY:
    case NX_ALU_DIVIDE:
    case NX_ALU_MAX:
    case NX_ALU_MIN:
    case NX_ALU_ABS_MAX:
    case NX_ALU_IS_EQUAL:
    case NX_ALU_NOT_EQUAL:
    case NX_ALU_IS_GE:
    case NX_ALU_IS_GT:
    case NX_ALU_IS_LE:
    case NX_ALU_IS_LT: return 1;
    default: return 0;
    }
}

/* The step needs the scalar's exact value, not fp32(s). */
static int needs_exact_scalar(const nx_ew_step *s) {
    return s->scalar && (s->op >= NX_ALU_IS_EQUAL || (s->op == NX_ALU_BYPASS && s->rev));
}

/* One contiguous run of a float dtype per partition. */
static int float_run(const nx_view *v) {
    if ((v->kind != NX_OPK_SBUF && v->kind != NX_OPK_PSUM && v->kind != NX_OPK_HBM) || !nx_dtype_is_float_code(v->dtype))
        return 0;
    return v->walk_nd == 1 && v->walk_step[0] == (int64_t)nx_dtype_size((nx_dtype)v->dtype);
}

/* x is dst in place, or no byte of x's row p is in dst's row p. */
static int apart_or_same(const nx_view *x, const nx_view *dst) {
    if (x->base == dst->base && x->dtype == dst->dtype && x->partition_step == dst->partition_step) return 1;
    const uint64_t xz = nx_dtype_size((nx_dtype)x->dtype), dz = nx_dtype_size((nx_dtype)dst->dtype);
    for (uint32_t p = 0; p < dst->partitions; p++) {
        const uint8_t *x0 = x->base + (int64_t)p * x->partition_step, *d0 = dst->base + (int64_t)p * dst->partition_step;
        if (x0 < d0 + dst->free_elems * dz && d0 < x0 + x->free_elems * xz) return 0;
    }
    return 1;
}

/* t op x on fp32 lanes (x op t when rev); lanes with a NaN are not used. */
NX_V4_INLINE nx_v4f step_lanes(nx_alu_op op, int rev, nx_v4f t, nx_v4f x) {
    const nx_v4f l = rev ? x : t, r = rev ? t : x;
    const nx_v4i bl = nx_v4f_bits(l), br = nx_v4f_bits(r), one = (nx_v4i){0} + 0x3f800000; /* 1.0f */
    switch (op) {
    case NX_ALU_ADD: return l + r;
    case NX_ALU_SUBTRACT: return l - r;
    case NX_ALU_MULTIPLY: return l * r;
    case NX_ALU_DIVIDE: return l / r;
    case NX_ALU_MAX: return nx_v4f_from_bits(nx_v4i_select(l == r, bl & br, nx_v4i_select(l > r, bl, br)));
    case NX_ALU_MIN: return nx_v4f_from_bits(nx_v4i_select(l == r, bl | br, nx_v4i_select(l < r, bl, br)));
    case NX_ALU_ABS_MAX: {
        const nx_v4i al = bl & INT32_MAX, ar = br & INT32_MAX;
        return nx_v4f_from_bits(nx_v4i_select(al > ar, al, ar));
    }
    case NX_ALU_IS_EQUAL: return nx_v4f_from_bits((l == r) & one);
    case NX_ALU_NOT_EQUAL: return nx_v4f_from_bits((l != r) & one);
    case NX_ALU_IS_GE: return nx_v4f_from_bits((l >= r) & one);
    case NX_ALU_IS_GT: return nx_v4f_from_bits((l > r) & one);
    case NX_ALU_IS_LE: return nx_v4f_from_bits((l <= r) & one);
    case NX_ALU_IS_LT: return nx_v4f_from_bits((l < r) & one);
    default: return l; /* NX_ALU_BYPASS: the left operand */
    }
}

typedef struct ew_row {
    unsigned char *dst;
    const unsigned char *a, *tensor[NX_EW_MAX_STEPS];
    double scalar[NX_EW_MAX_STEPS];
    nx_v4f splat[NX_EW_MAX_STEPS];
} ew_row;

/* Elements [from, to) of one partition by the element routines. */
static void row_elems(const nx_view *dst, const nx_view *a, const nx_ew_step *steps, int nsteps, const ew_row *row,
                      uint64_t from, uint64_t to) {
    const nx_dtype dd = (nx_dtype)dst->dtype, ad = (nx_dtype)a->dtype;
    const uint64_t dz = nx_dtype_size(dd), az = nx_dtype_size(ad);
    for (uint64_t e = from; e < to; e++) {
        double t = elem_load(ad, row->a + e * az);
        for (int k = 0; k < nsteps; k++) {
            double x = row->scalar[k];
            if (steps[k].tensor) {
                const nx_dtype td = (nx_dtype)steps[k].tensor->dtype;
                x = elem_load(td, row->tensor[k] + e * nx_dtype_size(td));
            }
            t = steps[k].rev ? alu_elem(steps[k].op, x, t) : alu_elem(steps[k].op, t, x);
        }
        elem_store(dd, row->dst + e * dz, t);
    }
}

static void row_lanes(const nx_view *dst, const nx_view *a, const nx_ew_step *steps, int nsteps, const ew_row *row) {
    const nx_dtype dd = (nx_dtype)dst->dtype, ad = (nx_dtype)a->dtype;
    const uint64_t n = dst->free_elems, dz = nx_dtype_size(dd), az = nx_dtype_size(ad);
    uint64_t e = 0;
    for (; e + 4 <= n; e += 4) {
        nx_v4f t = float_lanes_load(ad, row->a + e * az);
        nx_v4i nan = t != t;
        for (int k = 0; k < nsteps; k++) {
            nx_v4f x = row->splat[k];
            if (steps[k].tensor) {
                const nx_dtype td = (nx_dtype)steps[k].tensor->dtype;
                x = float_lanes_load(td, row->tensor[k] + e * nx_dtype_size(td));
            }
            nan |= x != x;
            t = step_lanes(steps[k].op, steps[k].rev, t, x);
            nan |= t != t;
        }
        if (nx_v4i_any(nan) || float_lanes_store(dd, row->dst + e * dz, t))
            row_elems(dst, a, steps, nsteps, row, e, e + 4);
    }
    row_elems(dst, a, steps, nsteps, row, e, n);
}

/* reads_first (nx_ew_fused): x is not in a row of dst that the partition
 * order writes before x is read. */
static int read_in_time(const nx_view *x, const nx_view *dst) {
    return x->kind == NX_OPK_IMM || x->kind != dst->kind || x->base >= dst->base;
}

int nx_ew_fused(const nx_view *dst, const nx_view *a, const nx_ew_step *steps, int nsteps, int reads_first) {
    if (nsteps > NX_EW_MAX_STEPS || !NX_LANES_LE) return 0;
    if (!float_run(dst) || !float_run(a) || !apart_or_same(a, dst)) return 0;
    if (reads_first && !read_in_time(a, dst)) return 0;
    for (int k = 0; k < nsteps; k++) {
        const nx_ew_step *s = &steps[k];
        if (!op_fused(s->op)) return 0;
        if (s->tensor && (!float_run(s->tensor) || !apart_or_same(s->tensor, dst))) return 0;
        if (!s->tensor && !s->scalar) return 0;
        if (reads_first && !read_in_time(s->tensor ? s->tensor : s->scalar, dst)) return 0;
    }
    for (uint32_t p = 0; p < dst->partitions; p++) {
        ew_row row;
        int exact = 1;
        row.dst = dst->base + (int64_t)p * dst->partition_step;
        row.a = a->base + (int64_t)p * a->partition_step;
        for (int k = 0; k < nsteps; k++) {
            row.tensor[k] = steps[k].tensor ? steps[k].tensor->base + (int64_t)p * steps[k].tensor->partition_step : NULL;
            row.scalar[k] = steps[k].scalar ? nx_view_scalar(steps[k].scalar, p) : 0.0;
            row.splat[k] = nx_v4f_splat((float)row.scalar[k]);
            if (needs_exact_scalar(&steps[k]) && (double)(float)row.scalar[k] != row.scalar[k]) exact = 0;
        }
        if (exact) row_lanes(dst, a, steps, nsteps, &row);
        else row_elems(dst, a, steps, nsteps, &row, 0, dst->free_elems);
    }
    return 1;
}
