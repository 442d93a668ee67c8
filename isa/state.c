#include "state.h"

#include <stdlib.h>
#include <string.h>

int nx_state_init(nx_state *st, const nx_geometry *geo, uint32_t cores, uint64_t hbm_bytes,
                  uint32_t sem_count, nx_error *err) {
    memset(st, 0, sizeof *st);
    if (cores < 1 || cores > NX_MAX_CORES || cores > geo->cores)
        return nx_fail(err, "state: %u cores requested, machine '%s' has %u", cores, geo->name,
                       geo->cores);
    if (sem_count > NX_MAX_SEMAPHORES)
        return nx_fail(err, "state: %u semaphores requested, at most %u", sem_count,
                       NX_MAX_SEMAPHORES);
    if (hbm_bytes > geo->hbm_bytes)
        return nx_fail(err, "state: %llu bytes of HBM requested, machine '%s' has %llu",
                       (unsigned long long)hbm_bytes, geo->name,
                       (unsigned long long)geo->hbm_bytes);
    st->geo = *geo;
    st->cores = cores;
    st->sem_count = sem_count;
    st->hbm_bytes = hbm_bytes;
    /* calloc of at least 1 byte so an empty HBM is still a valid pointer. */
    st->hbm = calloc(hbm_bytes ? hbm_bytes : 1, 1);
    if (!st->hbm) goto oom;
    for (uint32_t c = 0; c < cores; c++) {
        nx_core_state *cs = &st->core[c];
        cs->sbuf = calloc((size_t)geo->partitions * geo->sbuf_partition_bytes, 1);
        cs->psum = calloc((size_t)geo->partitions * geo->psum_partition_bytes, 1);
        cs->sems = calloc(sem_count ? sem_count : 1, sizeof *cs->sems);
        cs->stationary = calloc((size_t)geo->pe_rows * geo->pe_cols, sizeof *cs->stationary);
        if (!cs->sbuf || !cs->psum || !cs->sems || !cs->stationary) goto oom;
    }
    return 0;
oom:
    nx_state_free(st);
    return nx_fail(err, "state: out of memory allocating %llu bytes of HBM and %u cores' SBUF/PSUM",
                   (unsigned long long)hbm_bytes, cores);
}

void nx_state_reset(nx_state *st) {
    memset(st->hbm, 0, st->hbm_bytes);
    for (uint32_t c = 0; c < st->cores; c++) {
        nx_core_state *cs = &st->core[c];
        memset(cs->sbuf, 0, (size_t)st->geo.partitions * st->geo.sbuf_partition_bytes);
        memset(cs->psum, 0, (size_t)st->geo.partitions * st->geo.psum_partition_bytes);
        memset(cs->sems, 0, (st->sem_count ? st->sem_count : 1) * sizeof *cs->sems);
        memset(cs->stationary, 0, (size_t)st->geo.pe_rows * st->geo.pe_cols * sizeof *cs->stationary);
        cs->stationary_k = cs->stationary_m = 0;
        cs->stationary_dtype = 0;
        cs->stationary_valid = 0;
        cs->barriers_done = 0;
    }
}

void nx_state_free(nx_state *st) {
    free(st->hbm);
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        free(st->core[c].sbuf);
        free(st->core[c].psum);
        free(st->core[c].sems);
        free(st->core[c].stationary);
    }
    memset(st, 0, sizeof *st);
}
