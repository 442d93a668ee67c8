/* Deterministic pseudo-random tensor values: the inputs `nxsim exec` and
 * `nxsim run` fill when none are given (--seed), and the same values again
 * for `--check`'s reference. */
#ifndef NXSIM_ISA_TENSOR_RANDOM_H
#define NXSIM_ISA_TENSOR_RANDOM_H

#include <stdint.h>

#include "program.h"

/* Fills the tensor's nx_tensor_bytes(t) bytes at data from (seed, index):
 * floats uniform in [-1, 1) rounded to the dtype, signed integers uniform in
 * [-8, 8], unsigned integers uniform in [0, 16]. Each index (the tensor's
 * position in its program's table) has its own stream, so one tensor's
 * values do not depend on which other tensors were given. */
void nx_tensor_fill_random(const nx_tensor_decl *t, uint8_t *data, uint64_t seed, uint32_t index);

#endif
