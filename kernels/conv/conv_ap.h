/* Access-pattern helpers of the conv leaves: views whose count-1 dims are
 * dropped, so that a leaf can always describe a slice with its full
 * (row, col, batch) pattern and stay within the 4 free dims an access
 * pattern has (isa/insn.h NX_MAX_FREE_DIMS). A pattern whose every count
 * is 1 becomes one dim of one element. Callers pass at most
 * NX_MAX_FREE_DIMS dims with counts != 1. */
#ifndef NXSIM_KERNELS_CONV_CONV_AP_H
#define NXSIM_KERNELS_CONV_CONV_AP_H

#include <stdint.h>

#include "kernels/author/author.h"

/* nx_tile_view with the count-1 dims of (st, ct)[0..nd) dropped. */
nx_operand nx_conv_tile_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t elem_offset,
                             uint32_t nd, const int32_t *st, const uint32_t *ct);

/* An HBM pattern: `rows` rows `pitch` elements apart from byte `byte_offset`,
 * each row the (st, ct) pattern with its count-1 dims dropped. */
nx_operand nx_conv_hbm_view(nx_dtype dt, uint64_t byte_offset, uint32_t rows, int64_t pitch, uint32_t nd,
                            const int32_t *st, const uint32_t *ct);

#endif
