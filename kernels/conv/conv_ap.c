/* conv_ap.h: views without their count-1 dims. */
#include "conv_ap.h"

#include "isa/builder.h"

/* Copies the dims of (st, ct) whose count is not 1; at least one dim. */
static uint32_t squeeze(uint32_t nd, const int32_t *st, const uint32_t *ct, int32_t *s2, uint32_t *c2) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < nd && n < NX_MAX_FREE_DIMS; i++)
        if (ct[i] != 1) {
            s2[n] = st[i];
            c2[n++] = ct[i];
        }
    if (n == 0) {
        s2[0] = 1;
        c2[n++] = 1;
    }
    return n;
}

nx_operand nx_conv_tile_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t elem_offset,
                             uint32_t nd, const int32_t *st, const uint32_t *ct) {
    int32_t s2[NX_MAX_FREE_DIMS];
    uint32_t c2[NX_MAX_FREE_DIMS];
    uint32_t n = squeeze(nd, st, ct, s2, c2);
    return nx_tile_view(t, as, p0, np, elem_offset, n, s2, c2);
}

nx_operand nx_conv_hbm_view(nx_dtype dt, uint64_t byte_offset, uint32_t rows, int64_t pitch, uint32_t nd,
                            const int32_t *st, const uint32_t *ct) {
    int32_t s2[NX_MAX_FREE_DIMS];
    uint32_t c2[NX_MAX_FREE_DIMS];
    uint32_t n = squeeze(nd, st, ct, s2, c2);
    return nx_ap(NX_OPK_HBM, dt, 0, rows, (int32_t)pitch, byte_offset, n, s2, c2);
}
