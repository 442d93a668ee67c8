/* The PE's input conversion: a PE-input view (fp32, bf16, fp16, fp8_e4m3,
 * fp8_e5m2) widened to fp32 rows. load_stationary caches its tile with it,
 * multiply_moving converts its moving tile with it, and the SystemC model
 * feeds the RTL PE array with it (sim/engine.cpp), so all three read a tile
 * the same way. Every PE input type is exactly representable in fp32; a NaN
 * of a 16-bit or fp8 input becomes the canonical quiet NaN with its sign
 * (isa/bytes.h, docs/parts/dtypes.md), an fp32 input is copied bit for bit. */
#ifndef NXSIM_ISA_PE_INPUT_H
#define NXSIM_ISA_PE_INPUT_H

#include <stdint.h>

#include "access.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Converts `rows` partitions of view v to fp32: partition r, element e (in
 * row-major order over v's free dims) goes to out[r * ld + e]. out holds
 * rows * ld floats (ld >= v->free_elems), owned by the caller. */
void nx_pe_rows_to_f32(const nx_view *v, uint32_t rows, float *out, uint64_t ld);

#ifdef __cplusplus
}
#endif

#endif
