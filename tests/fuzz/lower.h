/* What the op and attribute harnesses do with an op once it parses: the
 * run path's steps up to execution, without the SystemC model. */
#ifndef NXSIM_TESTS_FUZZ_LOWER_H
#define NXSIM_TESTS_FUZZ_LOWER_H

#include <stdint.h>

#include "registry/macro_op.h"

/* The default bound of nx_fuzz_lower_and_run: 2 MiB of tensors (the
 * default ops are within it and trace in milliseconds). */
#define NX_FUZZ_LOWER_MAX_BYTES ((uint64_t)2 << 20)

/* Looks op->func_name up in the live registry and composites; checks its
 * attributes against the rules, infers its results, and, when its tensors
 * (operands and results) hold at most max_bytes, lowers it on trn2 and runs
 * the program on the functional executor. Every refusal must have a
 * one-line message. op is modified (its results are replaced by the
 * rule's). Returns the op's tensor bytes (UINT64_MAX when it did not get
 * that far). */
uint64_t nx_fuzz_lower_and_run(nx_macro_op *op, uint64_t max_bytes);

#endif
