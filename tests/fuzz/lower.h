/* What the op and attribute harnesses do with an op once it parses: the
 * run path's steps up to execution, without the SystemC model. */
#ifndef NXSIM_TESTS_FUZZ_LOWER_H
#define NXSIM_TESTS_FUZZ_LOWER_H

#include "registry/macro_op.h"

/* Looks op->func_name up in the live registry and composites; checks its
 * attributes against the rules, infers its results, and, when its tensors
 * are small, lowers it on trn2 and runs the program on the functional
 * executor. Every refusal must have a one-line message. op is modified
 * (its results are replaced by the rule's). */
void nx_fuzz_lower_and_run(nx_macro_op *op);

#endif
