/* libnxsim (include/nxsim/nxsim.h): nx_session_geometry, the machine's
 * sizes and limits by name, for front ends that allocate on-chip memory
 * themselves (nxsim.nki, docs/parts/nki.md). The names are the "geometry"
 * keys of a machine file (docs/parts/machine.md). */
#include <string.h>

#include "api_impl.h"

NXSIM_API uint64_t nx_session_geometry(const nx_session *s, const char *name) {
    if (!s || !name) return 0;
    const nx_geometry *g = &s->machine.geo;
    static const struct {
        const char *name;
        size_t offset;
        int wide; /* uint64_t, else uint32_t */
    } fields[] = {
        {"cores", offsetof(nx_geometry, cores), 0},
        {"partitions", offsetof(nx_geometry, partitions), 0},
        {"sbuf_partition_bytes", offsetof(nx_geometry, sbuf_partition_bytes), 1},
        {"psum_partition_bytes", offsetof(nx_geometry, psum_partition_bytes), 1},
        {"psum_bank_bytes", offsetof(nx_geometry, psum_bank_bytes), 1},
        {"sbuf_free_elems_max", offsetof(nx_geometry, sbuf_free_elems_max), 0},
        {"psum_free_elems_max", offsetof(nx_geometry, psum_free_elems_max), 0},
        {"pe_rows", offsetof(nx_geometry, pe_rows), 0},
        {"pe_cols", offsetof(nx_geometry, pe_cols), 0},
        {"pe_moving_free_max", offsetof(nx_geometry, pe_moving_free_max), 0},
        {"dve_transpose_max", offsetof(nx_geometry, dve_transpose_max), 0},
        {"dma_queues", offsetof(nx_geometry, dma_queues), 0},
        {"dma_engines", offsetof(nx_geometry, dma_engines), 0},
        {"dma_queues_per_engine", offsetof(nx_geometry, dma_queues_per_engine), 0},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strcmp(fields[i].name, name) != 0) continue;
        const char *at = (const char *)g + fields[i].offset;
        if (fields[i].wide) {
            uint64_t v;
            memcpy(&v, at, sizeof v);
            return v;
        }
        uint32_t v;
        memcpy(&v, at, sizeof v);
        return v;
    }
    return 0;
}
