/* The blockwise_mm item state's helpers (kernels/blockwise_mm/blockwise_mm_phases.h):
 * work items, PSUM banks, views, DMA lanes and the accumulator's rows, used
 * by the driver and the phases alike. */
#include "blockwise_mm_phases.h"

void bw_item(const nx_bwmm_plan *pl, uint64_t w, uint64_t *block, uint64_t *pos0, uint32_t *count) {
    *block = w / pl->ns;
    *pos0 = *block * pl->p.B + (w % pl->ns) * pl->bs;
    *count = bw_item_tokens(pl, w);
}

uint32_t bw_psum_take(bw *s, uint32_t bytes) {
    uint32_t bank = s->pl->bank_bytes;
    if (s->psum_used + bytes > bank) {
        s->psum_bank = (s->psum_bank + 1) % s->pl->nbanks;
        s->psum_used = 0;
    }
    uint32_t off = s->psum_bank * bank + s->psum_used;
    s->psum_used += (bytes + 3) & ~3u;
    return off;
}

nx_operand bw_v(const nx_tile *t, nx_dtype dt, uint32_t np, uint64_t elem_off, uint32_t n) {
    int32_t one = 1;
    return nx_tile_view(t, dt, 0, np, elem_off, 1, &one, &n);
}

nx_operand bw_psum(const bw *s, nx_dtype dt, uint32_t np, uint32_t byte_off, uint32_t n) {
    return bw_v(&s->psum, dt, np, byte_off / nx_dtype_size(dt), n);
}

uint32_t bw_load_lane(bw *s) {
    uint32_t l = s->load[s->next_load];
    s->next_load = (s->next_load + 1) % s->nload;
    return l;
}

nx_engine bw_evac_engine(bw *s) { return (s->flip++ & 1) ? NX_ENG_DVE : NX_ENG_ACT; }

/* Byte offset of row r of chunk j of replica k. */
uint64_t bw_acc_row(const bw *s, uint32_t k, uint32_t j, uint64_t r) {
    const nx_bwmm_plan *pl = s->pl;
    return s->acc + (((uint64_t)k * pl->nc + j) * (pl->p.T + 1) + r) * pl->c * pl->s;
}

uint32_t bw_scatter_lane(const bw *s, uint32_t replica, uint32_t chunk) {
    uint32_t q = replica * s->pl->nc + chunk;
    return s->scatter_lanes - 1 - q % s->scatter_lanes;
}
