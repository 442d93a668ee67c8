/* Architectural state a program runs against: shared HBM plus, per core,
 * SBUF, PSUM, semaphores, the PE's stationary tile and the barrier count.
 * The functional executor and the SystemC model both run instructions on an
 * nx_state through nx_insn_execute(); the state owns its buffers. */
#ifndef NXSIM_ISA_STATE_H
#define NXSIM_ISA_STATE_H

#include <stdint.h>

#include "error.h"
#include "geometry.h"
#include "insn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nx_core_state {
    uint8_t *sbuf;        /* partitions * sbuf_partition_bytes, partition-major */
    uint8_t *psum;        /* partitions * psum_partition_bytes, partition-major */
    uint32_t *sems;       /* sem_count counters */
    /* PE stationary tile, kept as fp32 values (exact for every PE input type):
     * stationary[k * pe_cols + m], k < stationary_k, m < stationary_m. */
    float *stationary;
    uint32_t stationary_k, stationary_m;
    uint8_t stationary_dtype; /* nx_dtype the tile was loaded from (cost model) */
    int stationary_valid;
    uint64_t barriers_done; /* core_barrier instructions this core completed */
} nx_core_state;

typedef struct nx_state {
    nx_geometry geo;       /* copy */
    uint32_t cores;
    uint32_t sem_count;
    uint8_t *hbm;          /* hbm_bytes, shared by all cores */
    uint64_t hbm_bytes;
    nx_core_state core[NX_MAX_CORES];
    /* Worker threads a large instruction may share its host work out to
     * (isa/workers.h), lent by whoever runs the program; NULL (what
     * nx_state_init leaves): one thread. Never owned or freed by the state. */
    struct nx_workers *workers;
} nx_state;

/* Allocates zeroed memories. hbm_bytes is the program's HBM extent (not the
 * machine's HBM size). Returns 0 or -1 (out of memory, bad sizes). */
int nx_state_init(nx_state *st, const nx_geometry *geo, uint32_t cores,
                  uint64_t hbm_bytes, uint32_t sem_count, nx_error *err);
/* Zeroes every memory, semaphore and PE/barrier state (for a rerun). */
void nx_state_reset(nx_state *st);
void nx_state_free(nx_state *st);

/* Byte address helpers (no checks: callers validated the access). */
static inline uint8_t *nx_sbuf_at(nx_state *st, uint32_t core, uint32_t partition, uint64_t byte) {
    return st->core[core].sbuf + (uint64_t)partition * st->geo.sbuf_partition_bytes + byte;
}
static inline uint8_t *nx_psum_at(nx_state *st, uint32_t core, uint32_t partition, uint64_t byte) {
    return st->core[core].psum + (uint64_t)partition * st->geo.psum_partition_bytes + byte;
}

#ifdef __cplusplus
}
#endif

#endif
