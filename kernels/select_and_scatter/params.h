/* SelectAndScatter's attributes (XLA's names), shared by the leaf, the
 * reference (kernels/ref/ref.h) and the registry's rules; semantics in
 * kernels/select_and_scatter/select_and_scatter.h. */
#ifndef NXSIM_KERNELS_SELECT_AND_SCATTER_PARAMS_H
#define NXSIM_KERNELS_SELECT_AND_SCATTER_PARAMS_H

#include <stdint.h>

#include "isa/error.h"
#include "kernels/kernel.h"

#define NX_SAS_MAX_DIMS NX_KERNEL_MAX_DIMS

#define NX_SAS_ATTR_WINDOW "window_dimensions"
#define NX_SAS_ATTR_STRIDES "window_strides"
#define NX_SAS_ATTR_PADDING "padding"
#define NX_SAS_ATTR_INIT "init_value"

typedef struct nx_sas_params {
    uint32_t rank;
    int64_t window[NX_SAS_MAX_DIMS];
    int64_t stride[NX_SAS_MAX_DIMS];
    int64_t lo[NX_SAS_MAX_DIMS], hi[NX_SAS_MAX_DIMS];
    double init;
} nx_sas_params;

/* Reads the attributes for an operand of `rank` dims (1..NX_SAS_MAX_DIMS).
 * Errors name the attribute and the rule, e.g.
 *   attribute window_strides: entry 2 is 0 (must be >= 1) */
int nx_sas_params_read(const nx_attrs *attrs, uint32_t rank, nx_sas_params *p, nx_error *err);
/* p->init within the finite range of dtype dt ([-max, max]: fp32 3.4e38,
 * bf16 3.39e38, fp16 65504, fp8_e4m3 448, fp8_e5m2 57344), else -1:
 * "attribute init_value: 1e+308 is outside fp32's finite range (+-3.40282e+38)"
 * (stored, it would fill the output with +-inf, or saturate, silently). */
int nx_sas_init_check(const nx_sas_params *p, nx_dtype dt, nx_error *err);

/* The source shape the window gives for `operand`: 0, or -1 when the window
 * does not fit the padded operand in some dim. */
int nx_sas_source_shape(const nx_sas_params *p, const uint64_t *operand, uint64_t *source, nx_error *err);

#endif
