/* PE input conversion shared by load_stationary and multiply_moving. */
#ifndef NXSIM_ISA_INSNS_PE_CONVERT_H
#define NXSIM_ISA_INSNS_PE_CONVERT_H

#include <stdint.h>

#include "../access.h"

/* Converts `rows` partitions of a PE-input view (fp32, bf16, fp16, fp8) to
 * fp32: partition r, element e goes to out[r * ld + e]. Exact for every PE
 * input type. Defined in load_stationary.c. */
void nx_pe_rows_to_f32(const nx_view *v, uint32_t rows, float *out, uint64_t ld);

#endif
