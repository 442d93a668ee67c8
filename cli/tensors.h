/* HBM tensors <-> .npy files and output summaries for `nxsim exec` and
 * `nxsim run` (pseudo-random inputs: isa/tensor_random.h). `data` always
 * points at the tensor's bytes in HBM
 * (state.hbm + decl.offset, nx_tensor_bytes(decl) long). */
#ifndef NXSIM_CLI_TENSORS_H
#define NXSIM_CLI_TENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isa/error.h"
#include "isa/npy.h"
#include "isa/program.h"

/* "fp32 [128,64]" into buf. */
void cli_format_decl_type(char *buf, size_t len, const nx_tensor_decl *t);

/* Loads `path` into the tensor: dtype and shape must equal the declaration
 * exactly (the message names the tensor, the file, expected and found). */
int cli_tensor_load(const char *path, const nx_tensor_decl *t, uint8_t *data, nx_error *err);

/* A read-only nx_npy view of the tensor (data is borrowed: never free it). */
nx_npy cli_tensor_view(const nx_tensor_decl *t, const uint8_t *data);

/* One line on f: "NAME DTYPE [SHAPE] checksum=S min=A max=B first=[v0, v1, ...]"
 * (checksum is the sum of all values as doubles; NaNs are left out of it and
 * of min/max and counted as nans=K). Returns 0 or -1 on a write error. */
int cli_tensor_summary(FILE *f, const nx_tensor_decl *t, const uint8_t *data);

#endif
