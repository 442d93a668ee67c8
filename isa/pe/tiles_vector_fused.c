/* The vector kernel's fused tile: tile_vector.h compiled with
 * -ffp-contract=fast (isa/CMakeLists.txt), so `p + a * b` may become the
 * target's fused multiply-add. The driver calls it only where every product
 * is exact, where the fused and the separate step give the same bits. */
#include "tile_vector.h"

void nx_pe_tile_vector_fused(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                             int acc) {
    pe_tile_vector(K, a, b, ldb, c, ldc, acc);
}
