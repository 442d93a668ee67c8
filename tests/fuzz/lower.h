/* What the op and attribute harnesses do with an op once it parses: the
 * run path's steps up to execution, without the SystemC model. */
#ifndef NXSIM_TESTS_FUZZ_LOWER_H
#define NXSIM_TESTS_FUZZ_LOWER_H

#include <stdint.h>

#include "registry/macro_op.h"

/* The default bound of nx_fuzz_lower_and_run: 2 MiB of tensors (the
 * default ops are within it and trace in milliseconds). */
#define NX_FUZZ_LOWER_MAX_BYTES ((uint64_t)2 << 20)

/* Prepares op against the live registry and composites (registry/prepare.h:
 * the lookup, the attribute check, the results; an op without operands
 * gets the default op) and, when its tensors (operands and results) hold
 * at most max_bytes, lowers it on trn2 and runs the program on the
 * functional executor. Every refusal must have a one-line message. op is
 * only read. Returns the prepared op's tensor bytes (UINT64_MAX when it did
 * not get that far). */
uint64_t nx_fuzz_lower_and_run(const nx_macro_op *op, uint64_t max_bytes);

#endif
