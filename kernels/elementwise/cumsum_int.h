/* cumsum's int32 plan (kernels/elementwise/cumsum_int.c), called by
 * nx_cumsum for an int32 x: exact, two's-complement wrap. */
#ifndef NXSIM_KERNELS_ELEMENTWISE_CUMSUM_INT_H
#define NXSIM_KERNELS_ELEMENTWISE_CUMSUM_INT_H

#include "elementwise.h"

int nx_cumsum_int32(nx_kctx *k, const nx_cumsum_params *p, const nx_tensor_ref *x, const nx_tensor_ref *y,
                    nx_error *err);

#endif
