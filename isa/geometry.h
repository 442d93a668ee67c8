/* The memory and array geometry of one machine, as the ISA layer needs it to
 * validate and execute programs. It is filled from a machine description
 * (sim/machines/NAME.json, loaded by sim/machine.h); isa/ itself never hard-codes
 * a machine. Sizes are in bytes, limits in elements. */
#ifndef NXSIM_ISA_GEOMETRY_H
#define NXSIM_ISA_GEOMETRY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nx_geometry {
    char name[16];                     /* "trn1", "trn2", or a user file's name */
    uint32_t cores;                    /* physical cores a program may use (VNC grid) */
    uint32_t partitions;               /* SBUF/PSUM partitions (128) */
    uint64_t sbuf_partition_bytes;     /* e.g. 224 KiB on trn2 */
    uint64_t psum_partition_bytes;     /* 16 KiB */
    uint64_t psum_bank_bytes;          /* 2 KiB: one PE accumulation group */
    uint64_t hbm_bytes;                /* device HBM the program may declare */
    uint32_t sbuf_free_elems_max;      /* per-partition elements one access may touch (64K) */
    uint32_t psum_free_elems_max;      /* (4K) */
    uint32_t pe_rows;                  /* contraction / stationary partitions (128) */
    uint32_t pe_cols;                  /* stationary free size M max (128) */
    uint32_t pe_moving_free_max;       /* N max per multiply_moving (512) */
    uint32_t dve_transpose_max;        /* DVE transpose block edge (32) */
    uint32_t pool_partitions_per_core; /* GpSimd core width (16) */
    uint32_t max8_min_elems;           /* max8 input elements per partition: min (8) */
    uint32_t max8_max_elems;           /* ... and max (16384) */
    /* DMA, per core: dma_engines engines of dma_queues_per_engine queues
     * each; dma_queues = their product (the machine loader checks it) is
     * the range of a DMA instruction's queue number. Use the helpers
     * below, never a literal. */
    uint32_t dma_queues;               /* 256 = 16 x 16 on trn1/trn2 */
    uint32_t dma_engines;              /* 16 */
    uint32_t dma_queues_per_engine;    /* 16 */
} nx_geometry;

/* Queue q of a core belongs to DMA engine q / dma_queues_per_engine of that
 * core, as its (q % dma_queues_per_engine)-th queue: the numbering of
 * docs/parts/machine.md ("DMA engines and queues"). */

/* Queues per core: valid queue numbers are 0 .. this - 1. */
static inline uint32_t nx_geometry_dma_queues(const nx_geometry *geo) { return geo->dma_queues; }

/* The engine (within its core) queue q runs on. */
static inline uint32_t nx_dma_queue_engine(const nx_geometry *geo, uint32_t q) {
    return geo->dma_queues_per_engine ? q / geo->dma_queues_per_engine : 0;
}

/* The position of queue q among its engine's queues. */
static inline uint32_t nx_dma_queue_slot(const nx_geometry *geo, uint32_t q) {
    return geo->dma_queues_per_engine ? q % geo->dma_queues_per_engine : q;
}

/* The queue number of `engine`'s slot-th queue (the inverse of the two above). */
static inline uint32_t nx_dma_queue_of(const nx_geometry *geo, uint32_t engine, uint32_t slot) {
    return engine * geo->dma_queues_per_engine + slot;
}

#ifdef __cplusplus
}
#endif

#endif
