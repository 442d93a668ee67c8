/* The DMA-bound copy HBM -> SBUF -> HBM of programs.h (c). */
#include <string.h>

#include "isa/builder.h"
#include "programs.h"

enum { COLS = 8192, ROWS_PER_CHUNK = 128, BUFFERS = 4 };

/* Semaphores, per core: loads done into buffer k (SEM_LOAD + k), stores
 * done from buffer k (SEM_STORE + k). */
enum { SEM_LOAD = 0, SEM_STORE = BUFFERS, SEM_COUNT = 2 * BUFFERS };

typedef struct copy_ctx {
    nx_builder *b;
    bench_copy *c;
    uint32_t core, engines, parts, qpe;
    uint64_t buf[BUFFERS];
    nx_error *err;
} copy_ctx;

/* Moves chunk `chunk` (global row chunk index) between HBM and SBUF buffer
 * `k` with one transfer per engine; the first waits, each increments. */
static int move(copy_ctx *x, int to_sbuf, uint64_t chunk, uint32_t k, int wait_sem, uint32_t wait_value) {
    uint64_t row0 = chunk * ROWS_PER_CHUNK;
    for (uint32_t g = 0; g < x->engines; g++) {
        uint32_t p0 = g * x->parts;
        uint64_t hbm_off = (to_sbuf ? x->c->src_off : x->c->dst_off) + (row0 + p0) * (uint64_t)COLS * 4;
        nx_operand hbm = nx_ap_hbm_rows(NX_DT_FP32, hbm_off, x->parts, COLS, COLS);
        nx_operand sb = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, p0, x->parts, x->buf[k], COLS);
        nx_insn i = nx_insn_make(NX_OP_DMA_COPY);
        i.op[0] = to_sbuf ? sb : hbm;
        i.op[1] = to_sbuf ? hbm : sb;
        i.iparam[0] = (int32_t)nx_dma_queue_of(nx_builder_geometry(x->b), g, to_sbuf ? 0 : 1);
        if (g == 0 && wait_sem >= 0) nx_insn_wait(&i, (uint32_t)wait_sem, wait_value);
        nx_insn_inc(&i, (to_sbuf ? SEM_LOAD : SEM_STORE) + k, 1);
        if (nx_builder_emit(x->b, x->core, NX_ENG_SP, &i, NULL, x->err) != 0) return -1;
        x->c->transfers++;
    }
    return 0;
}

/* Core `core` copies chunks [first, first + count): loads run up to four
 * chunks ahead of the stores. */
static int emit_core(copy_ctx *x, uint64_t first, uint64_t count) {
    uint32_t E = x->engines;
    for (uint64_t k = 0; k < count && k < BUFFERS; k++)
        if (move(x, 1, first + k, (uint32_t)k, -1, 0) != 0) return -1;
    for (uint64_t k = 0; k < count; k++) {
        uint32_t b = (uint32_t)(k % BUFFERS), round = (uint32_t)(k / BUFFERS) + 1;
        if (move(x, 0, first + k, b, SEM_LOAD + b, E * round) != 0) return -1;
        if (k + BUFFERS < count && move(x, 1, first + k + BUFFERS, b, SEM_STORE + b, E * round) != 0) return -1;
    }
    return 0;
}

int bench_copy_build(const nx_machine *m, bench_copy *c, nx_program *out, nx_error *err) {
    uint64_t chunk_bytes = (uint64_t)ROWS_PER_CHUNK * COLS * 4;
    uint32_t cores = c->cores ? c->cores : 1;
    if (cores > m->geo.cores || cores > NX_MAX_CORES)
        return nx_fail(err, "copy: %u cores, the machine has %u", cores, m->geo.cores);
    if (c->bytes == 0 || c->bytes % (chunk_bytes * cores) != 0)
        return nx_fail(err, "copy: %llu bytes is not a multiple of %u cores x %llu-byte chunks",
                       (unsigned long long)c->bytes, cores, (unsigned long long)chunk_bytes);
    copy_ctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.err = err;
    x.qpe = m->geo.dma_queues_per_engine;
    uint32_t E = c->dma_engines ? c->dma_engines : 1;
    if (E > m->geo.dma_engines) E = m->geo.dma_engines;
    while (E > 1 && ROWS_PER_CHUNK % E) E--;
    x.engines = c->dma_engines = E;
    x.parts = ROWS_PER_CHUNK / E;
    if (x.qpe < 2) return nx_fail(err, "copy: needs 2 queues per DMA engine, the machine has %u", x.qpe);
    c->transfers = 0;
    x.b = nx_builder_new(&m->geo, cores);
    if (!x.b) return nx_fail(err, "copy: out of memory");
    uint64_t rows = c->bytes / ((uint64_t)COLS * 4);
    uint64_t shape[2] = {rows, COLS};
    int rc = nx_builder_tensor(x.b, "src", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &c->src_off, err);
    if (rc == 0) rc = nx_builder_tensor(x.b, "dst", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &c->dst_off, err);
    for (uint32_t k = 0; k < SEM_COUNT && rc == 0; k++) {
        uint32_t sem;
        rc = nx_builder_semaphore(x.b, &sem, err);
    }
    uint64_t chunks_per_core = rows / ROWS_PER_CHUNK / cores;
    for (uint32_t core = 0; core < cores && rc == 0; core++) {
        x.core = core;
        for (uint32_t k = 0; k < BUFFERS && rc == 0; k++)
            rc = nx_builder_sbuf_alloc(x.b, core, (uint64_t)COLS * 4, 64, &x.buf[k], err);
        if (rc == 0) rc = emit_core(&x, core * chunks_per_core, chunks_per_core);
    }
    if (rc == 0) rc = nx_builder_finish(x.b, out, err);
    nx_builder_free(x.b);
    return rc;
}
