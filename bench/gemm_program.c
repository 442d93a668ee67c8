/* The tiled, double-buffered GEMM program of programs.h (a). */
#include <string.h>

#include "isa/builder.h"
#include "programs.h"

enum { CORE = 0 };

/* Semaphores of the pipeline (per core; all only ever count up). */
enum { SEM_A0, SEM_A1, SEM_B0, SEM_B1, SEM_C0, SEM_C1, SEM_PE, SEM_DVE, SEM_COUNT };

typedef struct gemm_ctx {
    nx_builder *b;
    const bench_gemm *g;
    nx_dtype dt;
    size_t es;                  /* input element size */
    uint32_t mtiles, ktiles, ntiles, engines, part_per_engine, qpe;
    uint64_t abuf[2], bbuf[2], cbuf[2], psum[2];
    nx_error *err;
} gemm_ctx;

static int emit(gemm_ctx *c, nx_engine e, const nx_insn *insn) {
    return nx_builder_emit(c->b, CORE, e, insn, NULL, c->err);
}

static int nop_wait(gemm_ctx *c, nx_engine e, uint32_t sem, uint32_t value) {
    nx_insn i = nx_insn_make(NX_OP_NOP);
    nx_insn_wait(&i, sem, value);
    return emit(c, e, &i);
}

/* One DMA per engine group of partitions; the first carries the wait (the
 * SP issues in order), each increments `inc` on completion. `rows` is the
 * HBM view of partition group 0; group g starts g*part_per_engine rows on. */
static int dma_groups(gemm_ctx *c, int to_sbuf, nx_dtype dt, uint64_t hbm_off, int32_t pitch, uint32_t cols,
                      uint64_t sbuf_off, uint32_t queue_in_engine, int wait_sem, uint32_t wait_value,
                      uint32_t inc) {
    size_t es = nx_dtype_size(dt);
    for (uint32_t gi = 0; gi < c->engines; gi++) {
        uint32_t p0 = gi * c->part_per_engine;
        nx_operand hbm = nx_ap_hbm_rows(dt, hbm_off + (uint64_t)p0 * (uint64_t)pitch * es, c->part_per_engine,
                                        pitch, cols);
        nx_operand sb = nx_ap_tile(NX_OPK_SBUF, dt, p0, c->part_per_engine, sbuf_off, cols);
        nx_insn i = nx_insn_make(NX_OP_DMA_COPY);
        i.op[0] = to_sbuf ? sb : hbm;
        i.op[1] = to_sbuf ? hbm : sb;
        i.iparam[0] = (int32_t)nx_dma_queue_of(nx_builder_geometry(c->b), gi, queue_in_engine);
        if (gi == 0 && wait_sem >= 0) nx_insn_wait(&i, (uint32_t)wait_sem, wait_value);
        nx_insn_inc(&i, inc, 1);
        if (emit(c, NX_ENG_SP, &i) != 0) return -1;
    }
    return 0;
}

/* A panel of m-tile i (all K) into A buffer `buf`. */
static int load_a(gemm_ctx *c, uint32_t i, uint32_t buf, int wait_sem, uint32_t wait_value) {
    const bench_gemm *g = c->g;
    uint32_t run = c->ktiles * g->mt;
    uint64_t off = g->a_off + (uint64_t)i * g->kt * run * c->es;
    return dma_groups(c, 1, c->dt, off, (int32_t)run, run, c->abuf[buf], 0, wait_sem, wait_value, SEM_A0 + buf);
}

/* B panel of n-block j (all K) into B buffer `buf`. */
static int load_b(gemm_ctx *c, uint32_t j, uint32_t buf, int wait_sem, uint32_t wait_value) {
    const bench_gemm *g = c->g;
    uint32_t run = c->ktiles * g->nt;
    uint64_t off = g->b_off + (uint64_t)j * g->kt * run * c->es;
    return dma_groups(c, 1, c->dt, off, (int32_t)run, run, c->bbuf[buf], 1, wait_sem, wait_value, SEM_B0 + buf);
}

/* C tile of step s (m-tile i, n-block j) from C buffer s%2 to HBM. */
static int store_c(gemm_ctx *c, uint32_t s, uint32_t i, uint32_t j) {
    const bench_gemm *g = c->g;
    uint64_t off = g->c_off + ((uint64_t)i * g->mt * g->N + (uint64_t)j * g->nt) * 4;
    return dma_groups(c, 0, NX_DT_FP32, off, (int32_t)g->N, g->nt, c->cbuf[s % 2], 2, SEM_DVE, s + 1,
                      SEM_C0 + s % 2);
}

static int emit_sp(gemm_ctx *c) {
    uint32_t steps = c->mtiles * c->ntiles;
    if (load_b(c, 0, 0, -1, 0) != 0 || load_a(c, 0, 0, -1, 0) != 0) return -1;
    for (uint32_t s = 0; s < steps; s++) {
        uint32_t j = s / c->mtiles, i = s % c->mtiles;
        /* The next B panel goes where block j-1's was: wait until the PE
         * finished block j-1 (steps < j*mtiles); likewise A panel s+1
         * replaces step s-1's. */
        if (i == 0 && j + 1 < c->ntiles &&
            load_b(c, j + 1, (j + 1) % 2, j >= 1 ? SEM_PE : -1, j * c->mtiles) != 0)
            return -1;
        if (s + 1 < steps && load_a(c, (s + 1) % c->mtiles, (s + 1) % 2, s >= 1 ? SEM_PE : -1, s) != 0) return -1;
        if (store_c(c, s, i, j) != 0) return -1;
    }
    return 0;
}

static int emit_pe(gemm_ctx *c) {
    const bench_gemm *g = c->g;
    uint32_t steps = c->mtiles * c->ntiles, E = c->engines;
    for (uint32_t s = 0; s < steps; s++) {
        uint32_t j = s / c->mtiles, b = s % 2, jb = j % 2;
        if (s % c->mtiles == 0 && nop_wait(c, NX_ENG_PE, SEM_B0 + jb, E * (j / 2 + 1)) != 0) return -1;
        for (uint32_t q = 0; q < c->ktiles; q++) {
            nx_insn ls = nx_insn_make(NX_OP_LOAD_STATIONARY);
            ls.op[0] = nx_ap_tile(NX_OPK_SBUF, c->dt, 0, g->kt, c->abuf[b] + (uint64_t)q * g->mt * c->es, g->mt);
            if (q == 0) nx_insn_wait(&ls, SEM_A0 + b, E * (s / 2 + 1));
            if (emit(c, NX_ENG_PE, &ls) != 0) return -1;
            nx_insn mm = nx_insn_make(NX_OP_MULTIPLY_MOVING);
            mm.op[0] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, g->mt, c->psum[b], g->nt);
            mm.op[1] = nx_ap_tile(NX_OPK_SBUF, c->dt, 0, g->kt, c->bbuf[jb] + (uint64_t)q * g->nt * c->es, g->nt);
            if (q > 0) mm.flags = NX_FLAG_ACCUMULATE;
            /* PSUM bank b is free once the DVE copied step s-2 out */
            if (q == 0 && s >= 2) nx_insn_wait(&mm, SEM_DVE, s - 1);
            if (q + 1 == c->ktiles) nx_insn_inc(&mm, SEM_PE, 1);
            if (emit(c, NX_ENG_PE, &mm) != 0) return -1;
        }
    }
    return 0;
}

static int emit_dve(gemm_ctx *c) {
    const bench_gemm *g = c->g;
    uint32_t steps = c->mtiles * c->ntiles, E = c->engines;
    for (uint32_t s = 0; s < steps; s++) {
        uint32_t b = s % 2;
        /* C buffer b is free once step s-2's stores completed */
        if (s >= 2 && nop_wait(c, NX_ENG_DVE, SEM_C0 + b, E * (s / 2)) != 0) return -1;
        nx_insn cp = nx_insn_make(NX_OP_TENSOR_COPY);
        cp.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, g->mt, c->cbuf[b], g->nt);
        cp.op[1] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, g->mt, c->psum[b], g->nt);
        nx_insn_wait(&cp, SEM_PE, s + 1);
        nx_insn_inc(&cp, SEM_DVE, 1);
        if (emit(c, NX_ENG_DVE, &cp) != 0) return -1;
    }
    return 0;
}

static uint32_t tile(uint32_t size, uint32_t limit) { return size < limit ? size : limit; }

static int declare(gemm_ctx *c) {
    bench_gemm *g = (bench_gemm *)c->g;
    uint64_t a_shape[4] = {c->mtiles, g->kt, c->ktiles, g->mt};
    uint64_t b_shape[4] = {c->ntiles, g->kt, c->ktiles, g->nt};
    uint64_t c_shape[2] = {g->M, g->N};
    if (nx_builder_tensor(c->b, "at_tiles", c->dt, 4, a_shape, NX_ROLE_INPUT, &g->a_off, c->err) != 0 ||
        nx_builder_tensor(c->b, "b_tiles", c->dt, 4, b_shape, NX_ROLE_INPUT, &g->b_off, c->err) != 0 ||
        nx_builder_tensor(c->b, "c", NX_DT_FP32, 2, c_shape, NX_ROLE_OUTPUT, &g->c_off, c->err) != 0)
        return -1;
    for (int k = 0; k < 2; k++) {
        if (nx_builder_sbuf_alloc(c->b, CORE, (uint64_t)c->ktiles * g->nt * c->es, 64, &c->bbuf[k], c->err) != 0 ||
            nx_builder_sbuf_alloc(c->b, CORE, (uint64_t)c->ktiles * g->mt * c->es, 64, &c->abuf[k], c->err) != 0 ||
            nx_builder_sbuf_alloc(c->b, CORE, (uint64_t)g->nt * 4, 64, &c->cbuf[k], c->err) != 0 ||
            nx_builder_psum_alloc(c->b, CORE, (uint64_t)g->nt * 4, &c->psum[k], c->err) != 0)
            return -1;
    }
    for (uint32_t k = 0; k < SEM_COUNT; k++) {
        uint32_t sem;
        if (nx_builder_semaphore(c->b, &sem, c->err) != 0) return -1;
        if (sem != k) return nx_fail(c->err, "gemm: semaphore %u allocated as %u", k, sem);
    }
    return 0;
}

int bench_gemm_build(const nx_machine *m, bench_gemm *g, nx_program *out, nx_error *err) {
    if (g->dtype != NX_DT_FP32 && g->dtype != NX_DT_BF16)
        return nx_fail(err, "gemm: dtype %s (fp32 or bf16)", nx_dtype_name(g->dtype));
    const nx_geometry *geo = &m->geo;
    uint32_t nt_max = tile(geo->pe_moving_free_max, (uint32_t)(geo->psum_bank_bytes / 4));
    g->mt = tile(g->M, geo->pe_cols);
    g->kt = tile(g->K, geo->pe_rows);
    g->nt = tile(g->N, nt_max);
    if (!g->M || !g->K || !g->N || g->M % g->mt || g->K % g->kt || g->N % g->nt)
        return nx_fail(err, "gemm %ux%ux%u: M, K, N must be multiples of the %ux%ux%u tiles (or smaller)", g->M,
                       g->K, g->N, g->mt, g->kt, g->nt);
    gemm_ctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.dt = g->dtype;
    c.es = nx_dtype_size(g->dtype);
    c.err = err;
    c.mtiles = g->M / g->mt;
    c.ktiles = g->K / g->kt;
    c.ntiles = g->N / g->nt;
    c.qpe = m->geo.dma_queues_per_engine;
    if (c.qpe < 3) return nx_fail(err, "gemm: needs 3 queues per DMA engine, the machine has %u", c.qpe);
    /* as many engines as asked that split both the K and the M partitions */
    uint32_t E = tile(g->dma_engines ? g->dma_engines : 1, m->geo.dma_engines);
    while (E > 1 && (g->kt % E || g->mt % E)) E--;
    c.engines = E;
    c.part_per_engine = g->kt / E;
    if (g->mt / E != c.part_per_engine)
        return nx_fail(err, "gemm %ux%ux%u: the M tile (%u) and K tile (%u) differ; use equal tiles", g->M, g->K,
                       g->N, g->mt, g->kt);
    g->dma_engines = E;
    c.b = nx_builder_new(geo, 1);
    if (!c.b) return nx_fail(err, "gemm: out of memory");
    int rc = declare(&c);
    if (rc == 0) rc = emit_sp(&c);
    if (rc == 0) rc = emit_pe(&c);
    if (rc == 0) rc = emit_dve(&c);
    if (rc == 0) rc = nx_builder_finish(c.b, out, err);
    nx_builder_free(c.b);
    return rc;
}

/* Offset in elements of A[r][k] / B[k][n] in the tiled layouts. */
static uint64_t a_index(const bench_gemm *g, uint32_t r, uint32_t k) {
    uint32_t kt = g->K / g->kt;
    return (((uint64_t)(r / g->mt) * g->kt + k % g->kt) * kt + k / g->kt) * g->mt + r % g->mt;
}

static uint64_t b_index(const bench_gemm *g, uint32_t k, uint32_t n) {
    uint32_t kt = g->K / g->kt;
    return (((uint64_t)(n / g->nt) * g->kt + k % g->kt) * kt + k / g->kt) * g->nt + n % g->nt;
}

static void put(nx_dtype dt, uint8_t *base, uint64_t index, float v) {
    if (dt == NX_DT_FP32) {
        memcpy(base + index * 4, &v, 4);
    } else {
        uint16_t h = nx_f32_to_bf16(v);
        base[index * 2] = (uint8_t)(h & 0xff);
        base[index * 2 + 1] = (uint8_t)(h >> 8);
    }
}

float bench_gemm_value(uint32_t which, uint64_t index, nx_dtype dt) {
    /* splitmix64 of (which, index): stateless, so any element can be
     * regenerated in any order */
    uint64_t z = index * 2 + which + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    float v = (float)((double)(z >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
    return dt == NX_DT_BF16 ? nx_bf16_to_f32(nx_f32_to_bf16(v)) : v;
}

void bench_gemm_put_inputs(const bench_gemm *g, nx_state *st) {
    uint8_t *A = st->hbm + g->a_off, *B = st->hbm + g->b_off;
    for (uint32_t r = 0; r < g->M; r++)
        for (uint32_t k = 0; k < g->K; k++)
            put(g->dtype, A, a_index(g, r, k), bench_gemm_value(0, (uint64_t)r * g->K + k, g->dtype));
    for (uint32_t k = 0; k < g->K; k++)
        for (uint32_t n = 0; n < g->N; n++)
            put(g->dtype, B, b_index(g, k, n), bench_gemm_value(1, (uint64_t)k * g->N + n, g->dtype));
}

void bench_gemm_get_output(const bench_gemm *g, const nx_state *st, float *c) {
    memcpy(c, st->hbm + g->c_off, (size_t)g->M * g->N * sizeof *c);
}
