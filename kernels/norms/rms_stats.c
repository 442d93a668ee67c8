/* The statistics step of rmsnorm (kernels/norms/rmsnorm.c) as a piece other
 * kernels call (qkv fuses the norm before its projection): the square-sum on
 * ScalarE's accumulate form, then rsqrt(ss / H + eps), both on ScalarE. */
#include "norms.h"
#include "rows.h"

int nx_rms_stats(nx_kctx *k, const nx_operand *sq, const nx_operand *x, const nx_operand *ss, const nx_operand *rstd,
                 uint64_t H, double eps, nx_error *err) {
    const nx_operand zero = nx_imm(0.0, NX_DT_FP32);
    if (nx_rows_activation_acc(k, NX_ACT_SQUARE, sq, x, &zero, ss, NX_ALU_ADD, err) != 0 ||
        nx_kctx_activation(k, NX_ACT_RSQRT, rstd, ss, 1.0 / (double)H, eps, err) != 0)
        return -1;
    return 0;
}
