/* Internals of the authoring layer shared by kernels/author*.c (not for
 * leaves: they use kernels/author/author.h). */
#ifndef NXSIM_KERNELS_AUTHOR_IMPL_H
#define NXSIM_KERNELS_AUTHOR_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* The authoring layer's own files call the helpers as functions: a helper
 * that calls another must not move the location the leaf's call recorded
 * (kernels/author/author.h, "Source locations"). */
#define NX_KCTX_NO_SRC_MACROS
#include "author.h"
#include "isa/validate.h"

/* Agents: the four compute engines (indices = their nx_engine codes) and one
 * per DMA lane. The SP is not an agent: it only issues transfers, and a
 * transfer belongs to the lane it runs on. Issuers are the five instruction
 * streams (nx_engine codes, SP included). */
#define K_COMPUTE_AGENTS 4
#define K_LANES_MAX 64
#define K_AGENTS_MAX (K_COMPUTE_AGENTS + K_LANES_MAX)
#define K_ISSUERS NX_ENG_COUNT
#define K_DEFAULT_LANES 32

/* A vector clock snapshot: vc[a] = how many instructions of agent a are
 * known complete when the owning instruction starts (its own agent's entry
 * counts the instruction itself). Shared by the footprints of one
 * instruction; reference counted. */
typedef struct ksnap {
    uint32_t refs;
    uint32_t vc[];
} ksnap;

/* One tracked memory access: a footprint box of an instruction. */
typedef struct kaccess {
    nx_footprint box;
    uint16_t agent;
    uint32_t count; /* the instruction is the count-th of its agent */
    ksnap *snap;
} kaccess;

/* Free extents of one memory, sorted by offset, never adjacent. */
typedef struct kext {
    uint64_t lo, hi;
} kext;

typedef struct kpool {
    kext *ext;
    uint32_t n, cap;
    uint64_t top; /* end of the space taken from the builder so far */
} kpool;

typedef struct ktile_rec {
    uint8_t mem;
    uint64_t offset, bytes;
    char name[48];
} ktile_rec;

struct nx_kctx {
    nx_builder *b;
    nx_geometry geo;
    nx_machine machine; /* copy: the figures plans read (nx_kctx_machine) */
    uint32_t pid, nprog;
    int solo;           /* nx_kctx_set_solo: the leaf sees a grid of one */
    int wait_spans;     /* nx_kctx_set_wait_spans: waits of equal value on
                           consecutive semaphores become one span wait */
    uint32_t nlanes, next_lane;
    uint32_t nagents;

    int32_t sem[K_AGENTS_MAX];             /* semaphore index, -1 until used */
    uint32_t count[K_AGENTS_MAX];          /* instructions of each agent so far */
    uint32_t vc[K_ISSUERS][K_AGENTS_MAX];  /* what each stream's next instruction follows */
    uint8_t used[K_ISSUERS];
    uint32_t lane_vc[K_LANES_MAX][K_AGENTS_MAX]; /* clock of each lane's last transfer */
    ksnap *last[K_AGENTS_MAX];             /* snapshot of each agent's last instruction */
    uint32_t retired[K_AGENTS_MAX];        /* pruned accesses are at or below these counts */
    uint32_t barrier_count;                /* POOL count of the last barrier (0: none) */
    ksnap *barrier_snap;

    kaccess *live;
    size_t nlive, live_cap, sweep_at;

    kpool pool[2]; /* 0: SBUF, 1: PSUM */
    ktile_rec *tiles;
    uint32_t ntiles, tiles_cap;

    nx_kctx_stats stats;
    nx_src_here src;     /* where the leaf's current helper call is (src_depth > 0) */
    uint32_t src_depth;  /* helper calls open through the author.h macros */
    const char *region;  /* nx_kctx_set_region (borrowed), or NULL */
    char region_func[2][160];
    int region_buf;
    int finished;
    int broken;
};

/* What an instruction must additionally wait for, per agent (count 0: none). */
typedef struct kneed {
    uint32_t count;
    const ksnap *snap; /* may be NULL: then only the agent's own count is known */
} kneed;

/* Emits insn on `engine` (for DMA opcodes: engine SP, on `lane`), adding
 * the waits its footprint and `extra` (may be NULL) require, and the
 * increment of its agent. insn must carry no semaphores. */
int k_emit(nx_kctx *k, nx_engine engine, int lane, nx_insn *insn, const kneed *extra,
           nx_error *err);
/* Agent index of a DMA lane. */
static inline uint32_t k_lane_agent(uint32_t lane) { return K_COMPUTE_AGENTS + lane; }

void k_pool_free_all(nx_kctx *k);

#endif
