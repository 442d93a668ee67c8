/* Registry rules shared by every convolution entry (#3-#9, #11): the
 * result shape, the reference adapter and the --check tolerance of a
 * convolution macro-op whose two operands are (lhs, rhs) in the entry's
 * dimension labels (kernels/conv/conv_params.h; docs/parts/conv.md).
 * A conv family's rule file binds them to its labels, e.g.
 *
 *   static int infer_3(nx_macro_op *op, const char *const *names, nx_error *err) {
 *       return nx_conv_rule_infer(op, "0f1b_0i1o->01fb", names, err);
 *   }
 *
 * Attributes are read with nx_conv_params_read (any conv attribute name,
 * `out_shape` included; a name that is not a conv attribute is refused).
 * Messages name the operand ("operand 1 (filt): dim 1 (i) is 3 but operand
 * 0 (img) features 8 / feature_group_count 2 = 4") or the attribute
 * ("attribute stride=[0,1]: entries must be >= 1"). */
#ifndef NXSIM_REGISTRY_CONV_RULES_H
#define NXSIM_REGISTRY_CONV_RULES_H

#include "isa/error.h"
#include "kernels/conv/conv_params.h"
#include "macro_op.h"
#include "rules.h"

/* The op's two operands and conv attributes under `labels`: fills *L, *p
 * and out_shape (the result's shape). -1 with the message otherwise. */
int nx_conv_rule_read(const nx_macro_op *op, const char *labels, nx_conv_layout *L,
                      nx_conv_params *p, uint64_t *out_shape, nx_error *err);

/* infer_results: one result, names[0] (or "out0"), dtype of operand 0,
 * shape by the output-size formula. */
int nx_conv_rule_infer(nx_macro_op *op, const char *labels, const char *const *names,
                       nx_error *err);

/* reference: nx_ref_conv on the op's operand bytes into outputs[0]. */
int nx_conv_rule_reference(const nx_macro_op *op, const char *labels, const void *const *inputs,
                           void *const *outputs, nx_error *err);

/* The contraction length K of one output element: rhs in-features x taps
 * (0 if the op does not read). */
uint64_t nx_conv_rule_contraction(const nx_macro_op *op, const char *labels);

/* The --check tolerance, in units of eps(result dtype) x max(1, |ref|)
 * (registry.h): a leaf and the reference sum the same K fp32 products in
 * different orders, so they differ by at most 2 K u sum|terms| (u = 2^-24)
 * before the result is rounded, and by one ulp of the result dtype after:
 *   tolerance_eps = 1 + 2 K u sqrt(K) / eps(dtype)
 * taking sum|terms| <= sqrt(K) max(1, |ref|), which holds with a wide
 * margin for inputs of mixed sign such as the default op's uniform
 * [-1, 1) values (|ref| is then about sqrt(K)/3 and sum|terms| about K/4).
 * E.g. K = 1152 (3x3 x 128): 2 K sqrt(K) u = 0.0047, so 1.6 for a bf16
 * result (eps 2^-7) and 39000 for fp32 (eps 2^-23: 0.0047 absolute). */
double nx_conv_rule_tolerance_eps(uint64_t K, nx_dtype result_dtype);

/* The same as an nx_tolerance for result 0 of op (abs = rel = that many
 * eps(result dtype)), text "K=1152: 1.6 x eps(bf16)". */
int nx_conv_rule_tolerance(const nx_macro_op *op, const char *labels, uint32_t result, nx_tolerance *out,
                           nx_error *err);

/* The attribute names every conv reader accepts (NULL-terminated), for
 * nx_op_rules.attrs. */
extern const char *const nx_conv_rule_attrs[];

#endif
