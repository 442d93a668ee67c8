/* The kernel-authoring layer (kernels/author/author.h): the tile allocator, the
 * inferred synchronisation (exact waits on small hand-written kernels),
 * engine overlap, grid barriers, semaphore sharing across the grid, and the
 * static order check (which must also catch a missing wait). Programs are
 * executed with the functional executor and, when the SystemC model is
 * linked, run on it through the race detector. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "isa/opcodes.h"
#include "kernels/author/author.h"
#include "kcheck.h"
#include "support.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"

static nx_geometry geo2(void) { return test_geometry("trn2"); }

static nx_kctx *new_ctx(nx_builder *b, uint32_t pid, uint32_t n) {
    nx_machine km = test_machine_of(nx_builder_geometry(b));
    nx_kctx *k = nx_kctx_new_machine(b, &km, pid, n);
    assert_non_null(k);
    return k;
}

#define OK(call)                                             \
    do {                                                     \
        nx_error e_;                                         \
        (void)e_;                                            \
        if ((call) != 0) fail_msg("%s: %s", #call, err.msg); \
    } while (0)

/* Finishes the builder, checks the order statically (and on the model). */
static void finish_and_check(nx_builder *b, nx_program *prog) {
    nx_error err;
    if (nx_builder_finish(b, prog, &err) != 0) fail_msg("finish: %s", err.msg);
    int rc = test_kcheck_program(prog, &err);
    if (rc != 0) fail_msg("order check: %s", err.msg);
}

static void model_race_check(const nx_program *prog, nx_state *st) {
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    nx_sim_options opt = {1, 0};
    nx_sim_result res;
    memset(&res, 0, sizeof res);
    if (nx_sim_run(&m, prog, st, &opt, &res, &err) != 0) fail_msg("model: %s", err.msg);
    int race = nx_race_check(prog, res.log, res.log_count, &err);
    if (race != 0) fail_msg("race detector: %s", err.msg);
    nx_sim_result_free(&res);
}

/* ---- allocator ---- */

/* A released extent at the top of the pool grows into fresh space: a leaf
 * that releases a first stage's tiles (a transpose through scratch) and
 * allocates larger ones still has the whole SBUF. */
static void test_alloc_top_extent_grows(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_kctx *k = new_ctx(b, 0, 1);
    nx_error err;
    nx_tile a, c, d, e;
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "a", NX_DT_FP32, 128, 10000, &a, &err)); /* [0, 40000) */
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "c", NX_DT_FP32, 128, 27500, &c, &err)); /* [40000, 150016) */
    OK(nx_kctx_release(k, &c, &err));
    /* 180000 bytes: the released 110016 at the top and 69984 fresh above it
     * (neither alone holds it: 79360 are left in the builder) */
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "d", NX_DT_FP32, 128, 45000, &d, &err));
    assert_int_equal(d.offset, 40000);
    /* the pool's top moved to 220000: the next tile comes after it */
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "e", NX_DT_FP32, 128, 2000, &e, &err));
    assert_int_equal(e.offset, 220032); /* 220000 rounded up to 64 bytes */
    nx_kctx_free(k);
    nx_builder_free(b);
}

static void test_alloc_overflow_and_reuse(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_kctx *k = new_ctx(b, 0, 1);
    nx_error err;
    nx_tile a, bt, d;
    assert_int_equal(nx_kctx_alloc(k, NX_OPK_SBUF, "huge", NX_DT_FP32, 128, 60000, &d, &err), -1);
    assert_string_equal(err.msg, "SBUF tile 'huge': 60000 elements of fp32 per partition (1..57344)");
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "a", NX_DT_FP32, 128, 50000, &a, &err));
    assert_int_equal(a.offset, 0);
    assert_int_equal(a.bytes, 200000);
    assert_int_equal(nx_kctx_alloc(k, NX_OPK_SBUF, "b", NX_DT_FP32, 128, 10000, &bt, &err), -1);
    assert_string_equal(err.msg,
                        "SBUF tile 'b' (128 x 10000 fp32, 40000 bytes per partition) does not fit: SBUF "
                        "overflow on core 0: 40000 bytes per partition requested, 29376 of 229376 left; "
                        "released: 0 bytes per partition in 0 extents (largest 0)");
    OK(nx_kctx_release(k, &a, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "b", NX_DT_FP32, 128, 10000, &bt, &err));
    assert_int_equal(bt.offset, 0); /* reuses the released space */
    assert_int_equal(nx_kctx_alloc(k, NX_OPK_SBUF, "d", NX_DT_FP32, 128, 55000, &d, &err), -1);
    assert_string_equal(err.msg,
                        "SBUF tile 'd' (128 x 55000 fp32, 220032 bytes per partition) does not fit: SBUF "
                        "overflow on core 0: 220032 bytes per partition requested, 29376 of 229376 left; "
                        "released: 160000 bytes per partition in 1 extent (largest 160000)");
    OK(nx_kctx_release(k, &bt, &err));
    assert_int_equal(nx_kctx_release(k, &bt, &err), -1);
    assert_string_equal(err.msg, "release of the SBUF tile at byte 0 (40000 bytes per partition): it is not "
                                 "allocated (released twice?)");
    /* a loop over many tiles never runs out */
    for (int i = 0; i < 20000; i++) {
        nx_tile t[3];
        for (int j = 0; j < 3; j++) OK(nx_kctx_alloc(k, NX_OPK_SBUF, "loop", NX_DT_BF16, 128, 30000, &t[j], &err));
        for (int j = 0; j < 3; j++) OK(nx_kctx_release(k, &t[j], &err));
    }
    /* PSUM: a tile of at most a bank never straddles one */
    nx_tile p1, p2, p3;
    OK(nx_kctx_alloc(k, NX_OPK_PSUM, "p1", NX_DT_FP32, 128, 375, &p1, &err)); /* 1500 bytes */
    OK(nx_kctx_alloc(k, NX_OPK_PSUM, "p2", NX_DT_FP32, 128, 250, &p2, &err)); /* 1000 bytes */
    assert_int_equal(p1.offset, 0);
    assert_int_equal(p2.offset, 2048);
    OK(nx_kctx_alloc(k, NX_OPK_PSUM, "p3", NX_DT_FP32, 128, 100, &p3, &err)); /* fits after p1 */
    assert_int_equal(p3.offset, 2048 + 1000);
    OK(nx_kctx_release(k, &p1, &err));
    nx_tile p4;
    OK(nx_kctx_alloc(k, NX_OPK_PSUM, "p4", NX_DT_FP32, 128, 512, &p4, &err)); /* a whole bank: the next free one */
    assert_int_equal(p4.offset, 4096);
    OK(nx_kctx_alloc(k, NX_OPK_PSUM, "p1", NX_DT_FP32, 128, 300, &p1, &err)); /* reuses p1's old space */
    assert_int_equal(p1.offset, 0);
    nx_kctx_free(k);
    nx_builder_free(b);
}

/* ---- a small kernel with known waits ---- */

typedef struct pipe {
    nx_builder *b;
    nx_kctx *k;
    nx_geometry g;
    uint64_t x_off, y_off;
} pipe_t;

enum { PIPE_TILES = 6, PIPE_F = 512 };

static void pipe_init(pipe_t *p, uint32_t cores) {
    memset(p, 0, sizeof *p);
    p->g = geo2();
    p->b = nx_builder_new(&p->g, cores);
    assert_non_null(p->b);
    nx_error err;
    uint64_t shape[2] = {PIPE_TILES * 128, PIPE_F};
    OK(nx_builder_tensor(p->b, "x", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &p->x_off, &err));
    OK(nx_builder_tensor(p->b, "y", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &p->y_off, &err));
}

static nx_operand hbm_tile(uint64_t base, uint32_t i) {
    return nx_ap_hbm_rows(NX_DT_FP32, base + (uint64_t)i * 128 * PIPE_F * 4, 128, PIPE_F, PIPE_F);
}

/* Runs p's program functionally: y must be x * 2 + 1 for every tile. */
static void pipe_run(nx_program *prog, const pipe_t *p) {
    nx_state st;
    nx_error err;
    OK(nx_state_init(&st, &p->g, prog->cores, prog->hbm_bytes, prog->sem_count, &err));
    uint64_t n = (uint64_t)PIPE_TILES * 128 * PIPE_F;
    double *v = malloc(n * sizeof *v), *y = malloc(n * sizeof *y);
    for (uint64_t i = 0; i < n; i++) v[i] = (double)(i % 1000) - 500.0;
    test_hbm_put(&st, NX_DT_FP32, p->x_off, n, v);
    OK(nx_exec_program(prog, &st, &err));
    test_hbm_get(&st, NX_DT_FP32, p->y_off, n, y);
    for (uint64_t i = 0; i < n; i++)
        if (y[i] != v[i] * 2 + 1) fail_msg("y[%llu] = %g, want %g", (unsigned long long)i, y[i], v[i] * 2 + 1);
    nx_state_reset(&st);
    test_hbm_put(&st, NX_DT_FP32, p->x_off, n, v);
    model_race_check(prog, &st);
    test_hbm_get(&st, NX_DT_FP32, p->y_off, n, y);
    for (uint64_t i = 0; i < n; i++)
        if (y[i] != v[i] * 2 + 1) fail_msg("model: y[%llu] = %g", (unsigned long long)i, y[i]);
    free(v);
    free(y);
    nx_state_free(&st);
}

/* The waits an SP transfer carries: its own and those of the nops right
 * before it, as (semaphore, value) pairs. */
typedef struct waitset {
    uint32_t n;
    uint32_t sem[8], value[8];
} waitset;

static waitset waits_before(const nx_program *prog, uint32_t core, nx_engine e, uint32_t index) {
    waitset w = {0};
    const nx_stream *s = &prog->stream[core][e];
    uint32_t i = index;
    for (;;) {
        const nx_insn_rec *in = &s->recs[i];
        if (in->wait_sem != NX_SEM_NONE && w.n < 8) {
            w.sem[w.n] = in->wait_sem;
            w.value[w.n] = in->wait_value;
            w.n++;
        }
        if (i == 0 || s->recs[i - 1].opcode != NX_OP_NOP) break;
        i--;
    }
    return w;
}

/* Index of the n-th instruction with opcode op in a stream. */
static uint32_t nth(const nx_program *prog, uint32_t core, nx_engine e, nx_opcode op, uint32_t n) {
    const nx_stream *s = &prog->stream[core][e];
    for (uint32_t i = 0; i < s->count; i++)
        if (s->recs[i].opcode == op && n-- == 0) return i;
    fail_msg("no such instruction");
    return 0;
}

/* Index of the n-th SP transfer that loads (src HBM) or stores (dst HBM). */
static uint32_t nth_dma(const nx_program *prog, int store, uint32_t n) {
    const nx_stream *s = &prog->stream[0][NX_ENG_SP];
    for (uint32_t i = 0; i < s->count; i++) {
        nx_insn scratch;
        const nx_insn *in = nx_program_expand(prog, &s->recs[i], &scratch);
        if (in->opcode != NX_OP_DMA_COPY) continue;
        if ((store ? in->op[0].kind : in->op[1].kind) == NX_OPK_HBM && n-- == 0) return i;
    }
    fail_msg("no such transfer");
    return 0;
}

/* Double-buffered pipeline: load(i); compute(i) on DVE; store(i-1). The
 * layer must make store(i) wait exactly for compute(i), and load(i+2) (which
 * reuses compute(i)'s input buffer) must need no wait of its own: the SP
 * already waited for compute(i) before store(i). */
static void test_pipeline_waits(void **state) {
    (void)state;
    pipe_t p;
    pipe_init(&p, 1);
    nx_kctx *k = new_ctx(p.b, 0, 1);
    nx_error err;
    nx_tile in[2], out[2];
    for (int j = 0; j < 2; j++) {
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "in", NX_DT_FP32, 128, PIPE_F, &in[j], &err));
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "out", NX_DT_FP32, 128, PIPE_F, &out[j], &err));
    }
    for (uint32_t i = 0; i <= PIPE_TILES; i++) {
        if (i < PIPE_TILES) {
            nx_operand src = hbm_tile(p.x_off, i), dst = nx_tile_ap(&in[i % 2]);
            OK(nx_kctx_dma(k, &dst, &src, &err));
            nx_operand a = nx_tile_ap(&in[i % 2]), o = nx_tile_ap(&out[i % 2]);
            nx_insn ts = nx_insn_make(NX_OP_TENSOR_SCALAR);
            ts.alu0 = NX_ALU_MULTIPLY;
            ts.alu1 = NX_ALU_ADD;
            ts.op[0] = o;
            ts.op[1] = a;
            ts.op[2] = nx_imm(2.0, NX_DT_FP32);
            ts.op[3] = nx_imm(1.0, NX_DT_FP32);
            OK(nx_kctx_emit(k, NX_ENG_DVE, &ts, &err));
        }
        if (i >= 1) {
            nx_operand src = nx_tile_ap(&out[(i - 1) % 2]), dst = hbm_tile(p.y_off, i - 1);
            OK(nx_kctx_dma(k, &dst, &src, &err));
        }
    }
    int dve_sem = nx_kctx_engine_semaphore(k, NX_ENG_DVE);
    assert_true(dve_sem >= 0);
    OK(nx_kctx_finish(k, &err));
    nx_kctx_stats st;
    nx_kctx_get_stats(k, &st);
    nx_kctx_free(k);
    nx_program prog;
    finish_and_check(p.b, &prog);
    nx_builder_free(p.b);

    /* SP order: load0, load1, store0, load2, store1, ... */
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        uint32_t li = nth_dma(&prog, 0, i), si = nth_dma(&prog, 1, i);
        assert_true(i < 2 || li > nth_dma(&prog, 1, i - 2)); /* SP order: store(i-2) before load(i) */
        waitset wl = waits_before(&prog, 0, NX_ENG_SP, li), ws = waits_before(&prog, 0, NX_ENG_SP, si);
        /* a load never waits: its buffer's last reader (compute i-2) is
         * already covered by the SP's wait before store(i-2) */
        assert_int_equal(wl.n, 0);
        assert_int_equal(ws.n, 1);
        assert_int_equal(ws.sem[0], (uint32_t)dve_sem);
        assert_int_equal(ws.value[0], i + 1);
    }
    /* compute i waits for its load only (its output buffer's last reader,
     * store(i-2), runs on a lane: one wait may imply the other, never more) */
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        uint32_t ci = nth(&prog, 0, NX_ENG_DVE, NX_OP_TENSOR_SCALAR, i);
        waitset w = waits_before(&prog, 0, NX_ENG_DVE, ci);
        assert_true(w.n >= 1 && w.n <= 2);
    }
    assert_int_equal(st.instructions, 3 * PIPE_TILES);
    pipe_run(&prog, &p);
    nx_program_free(&prog);
}

/* Independent work is not ordered: all loads first, then computes
 * alternating DVE / ACT, then stores. Loads carry no waits; the ACT compute
 * of tile 1 does not wait for the DVE compute of tile 0; each store waits
 * exactly for its own compute. */
static void test_engines_overlap(void **state) {
    (void)state;
    pipe_t p;
    pipe_init(&p, 1);
    nx_kctx *k = new_ctx(p.b, 0, 1);
    nx_error err;
    nx_tile in[PIPE_TILES], out[PIPE_TILES];
    for (int j = 0; j < PIPE_TILES; j++) {
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "in", NX_DT_FP32, 128, PIPE_F, &in[j], &err));
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "out", NX_DT_FP32, 128, PIPE_F, &out[j], &err));
    }
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        nx_operand src = hbm_tile(p.x_off, i), dst = nx_tile_ap(&in[i]);
        OK(nx_kctx_dma(k, &dst, &src, &err));
    }
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        nx_operand a = nx_tile_ap(&in[i]), o = nx_tile_ap(&out[i]);
        if (i % 2) {
            OK(nx_kctx_activation(k, NX_ACT_IDENTITY, &o, &a, 2.0, 1.0, &err));
        } else {
            nx_insn ts = nx_insn_make(NX_OP_TENSOR_SCALAR);
            ts.alu0 = NX_ALU_MULTIPLY;
            ts.alu1 = NX_ALU_ADD;
            ts.op[0] = o;
            ts.op[1] = a;
            ts.op[2] = nx_imm(2.0, NX_DT_FP32);
            ts.op[3] = nx_imm(1.0, NX_DT_FP32);
            OK(nx_kctx_emit(k, NX_ENG_DVE, &ts, &err));
        }
    }
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        nx_operand src = nx_tile_ap(&out[i]), dst = hbm_tile(p.y_off, i);
        OK(nx_kctx_dma(k, &dst, &src, &err));
    }
    int dve = nx_kctx_engine_semaphore(k, NX_ENG_DVE), act = nx_kctx_engine_semaphore(k, NX_ENG_ACT);
    int lane_sem[PIPE_TILES];
    for (uint32_t i = 0; i < PIPE_TILES; i++) lane_sem[i] = nx_kctx_lane_semaphore(k, i);
    OK(nx_kctx_finish(k, &err));
    nx_kctx_free(k);
    nx_program prog;
    finish_and_check(p.b, &prog);
    nx_builder_free(p.b);
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        waitset w = waits_before(&prog, 0, NX_ENG_SP, nth(&prog, 0, NX_ENG_SP, NX_OP_DMA_COPY, i));
        assert_int_equal(w.n, 0);
    }
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        nx_engine e = i % 2 ? NX_ENG_ACT : NX_ENG_DVE;
        nx_opcode op = i % 2 ? NX_OP_ACTIVATION : NX_OP_TENSOR_SCALAR;
        waitset w = waits_before(&prog, 0, e, nth(&prog, 0, e, op, i / 2));
        assert_int_equal(w.n, 1); /* only its own load's lane */
        assert_int_equal(w.sem[0], (uint32_t)lane_sem[i]);
        assert_int_equal(w.value[0], 1);
    }
    for (uint32_t i = 0; i < PIPE_TILES; i++) {
        waitset w = waits_before(&prog, 0, NX_ENG_SP, nth(&prog, 0, NX_ENG_SP, NX_OP_DMA_COPY, PIPE_TILES + i));
        assert_int_equal(w.n, 1);
        assert_int_equal(w.sem[0], (uint32_t)(i % 2 ? act : dve));
        assert_int_equal(w.value[0], i / 2 + 1);
    }
    pipe_run(&prog, &p);
    nx_program_free(&prog);
}

/* Transitive waits are skipped; several independent ones become nops. */
static void test_transitive_and_nops(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_error err;
    uint64_t shape[2] = {128, 64}, xo, yo;
    OK(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &xo, &err));
    OK(nx_builder_tensor(b, "y", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &yo, &err));
    nx_kctx *k = new_ctx(b, 0, 1);
    nx_tile ta, tb, tc, td;
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "a", NX_DT_FP32, 128, 64, &ta, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "b", NX_DT_FP32, 128, 64, &tb, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "c", NX_DT_FP32, 128, 64, &tc, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "d", NX_DT_FP32, 128, 64, &td, &err));
    nx_operand x = nx_ap_hbm_rows(NX_DT_FP32, xo, 128, 64, 64), y = nx_ap_hbm_rows(NX_DT_FP32, yo, 128, 64, 64);
    nx_operand a = nx_tile_ap(&ta), bb = nx_tile_ap(&tb), c = nx_tile_ap(&tc), d = nx_tile_ap(&td);
    OK(nx_kctx_dma(k, &a, &x, &err));                        /* a = x           (lane 0) */
    OK(nx_kctx_tensor_copy(k, NX_ENG_DVE, &bb, &a, &err));   /* b = a           waits lane 0 */
    OK(nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_ADD, &c, &a, &bb, &err)); /* c = a + b: waits DVE only */
    OK(nx_kctx_memset(k, NX_ENG_DVE, &d, 1.0, &err));        /* d = 1 (DVE) */
    OK(nx_kctx_activation(k, NX_ACT_IDENTITY, &bb, &a, 1.0, 0.0, &err)); /* b = a on ACT: WAR vs POOL, WAW vs DVE */
    OK(nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_ADD, &c, &bb, &d, &err)); /* c = b + d: ACT and DVE */
    OK(nx_kctx_dma(k, &y, &c, &err));
    int lane0 = nx_kctx_lane_semaphore(k, 0), dve = nx_kctx_engine_semaphore(k, NX_ENG_DVE);
    int lane1 = nx_kctx_lane_semaphore(k, 1);
    int act = nx_kctx_engine_semaphore(k, NX_ENG_ACT), pool = nx_kctx_engine_semaphore(k, NX_ENG_POOL);
    OK(nx_kctx_finish(k, &err));
    nx_kctx_stats st;
    nx_kctx_get_stats(k, &st);
    nx_kctx_free(k);
    nx_program prog;
    finish_and_check(b, &prog);
    nx_builder_free(b);

    /* DVE: copy waits lane0 >= 1; memset needs nothing */
    const nx_stream *dv = &prog.stream[0][NX_ENG_DVE];
    assert_int_equal(dv->recs[0].opcode, NX_OP_TENSOR_COPY);
    assert_int_equal(dv->recs[0].wait_sem, lane0);
    assert_int_equal(dv->recs[0].wait_value, 1);
    assert_int_equal(dv->recs[1].opcode, NX_OP_MEMSET);
    assert_int_equal(dv->recs[1].wait_sem, NX_SEM_NONE);
    /* POOL #0: reads a (lane 0) and b (DVE #1, which followed lane 0): one wait */
    const nx_stream *pl = &prog.stream[0][NX_ENG_POOL];
    assert_int_equal(pl->recs[0].opcode, NX_OP_TENSOR_TENSOR);
    assert_int_equal(pl->recs[0].wait_sem, dve);
    assert_int_equal(pl->recs[0].wait_value, 1);
    /* ACT: writes b, last read by POOL #1 and written by DVE #1: waiting for
     * POOL (which followed DVE #1) is enough */
    const nx_stream *ac = &prog.stream[0][NX_ENG_ACT];
    assert_int_equal(ac->recs[0].opcode, NX_OP_ACTIVATION);
    assert_int_equal(ac->recs[0].wait_sem, pool);
    assert_int_equal(ac->recs[0].wait_value, 1);
    /* POOL #2 reads b (ACT #1) and d (DVE #2): neither implies the other, so
     * a nop carries one wait and the instruction the other */
    assert_int_equal(pl->count, 4); /* tensor_tensor, nop, tensor_tensor, end */
    assert_int_equal(pl->recs[1].opcode, NX_OP_NOP);
    assert_int_equal(pl->recs[1].inc_sem, NX_SEM_NONE);
    uint32_t s1 = pl->recs[1].wait_sem, s2 = pl->recs[2].wait_sem;
    assert_true((s1 == (uint32_t)act && s2 == (uint32_t)dve) || (s1 == (uint32_t)dve && s2 == (uint32_t)act));
    assert_int_equal(st.nops, 2); /* that one, and finish's SP wait for lane 1 */
    const nx_stream *sp = &prog.stream[0][NX_ENG_SP];
    assert_int_equal(sp->count, 4); /* dma, dma, nop (lane 1 >= 1), end */
    assert_int_equal(sp->recs[2].opcode, NX_OP_NOP);
    assert_int_equal(sp->recs[2].wait_sem, lane1);
    /* every used stream ends with `end`; PE was not used */
    assert_int_equal(prog.stream[0][NX_ENG_PE].count, 0);
    for (unsigned e = NX_ENG_DVE; e < NX_ENG_COUNT; e++) {
        const nx_stream *s = &prog.stream[0][e];
        assert_true(s->count > 0);
        assert_int_equal(s->recs[s->count - 1].opcode, NX_OP_END);
    }

    nx_state sst;
    OK(nx_state_init(&sst, &g, 1, prog.hbm_bytes, prog.sem_count, &err));
    double xv[128 * 64], yv[128 * 64];
    for (int i = 0; i < 128 * 64; i++) xv[i] = i * 0.5;
    test_hbm_put(&sst, NX_DT_FP32, xo, 128 * 64, xv);
    OK(nx_exec_program(&prog, &sst, &err));
    test_hbm_get(&sst, NX_DT_FP32, yo, 128 * 64, yv);
    for (int i = 0; i < 128 * 64; i++) assert_true(yv[i] == xv[i] + 1.0);
    nx_state_reset(&sst);
    test_hbm_put(&sst, NX_DT_FP32, xo, 128 * 64, xv);
    model_race_check(&prog, &sst);
    test_hbm_get(&sst, NX_DT_FP32, yo, 128 * 64, yv);
    for (int i = 0; i < 128 * 64; i++) assert_true(yv[i] == xv[i] + 1.0);
    nx_state_free(&sst);
    nx_program_free(&prog);
}

/* A transfer cut over 16 lanes, then read by DVE: with spans one wait on
 * the 16 lane semaphores (no nop), and finish's SP waits once too; without,
 * 15 nops before the copy and 16 at finish. Both compute y = x. */
static void span_case(int spans) {
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_error err;
    uint64_t shape[2] = {128, 64}, xo, yo;
    OK(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &xo, &err));
    OK(nx_builder_tensor(b, "y", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &yo, &err));
    nx_kctx *k = new_ctx(b, 0, 1);
    nx_kctx_set_wait_spans(k, spans);
    nx_tile ta, tb;
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "a", NX_DT_FP32, 128, 64, &ta, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "b", NX_DT_FP32, 128, 64, &tb, &err));
    nx_operand x = nx_ap_hbm_rows(NX_DT_FP32, xo, 128, 64, 64), y = nx_ap_hbm_rows(NX_DT_FP32, yo, 128, 64, 64);
    nx_operand a = nx_tile_ap(&ta), bb = nx_tile_ap(&tb);
    OK(nx_kctx_dma_split(k, 0, 16, &a, &x, &err));
    OK(nx_kctx_tensor_copy(k, NX_ENG_DVE, &bb, &a, &err));
    OK(nx_kctx_dma_split(k, 16, 16, &y, &bb, &err));
    int lane0 = nx_kctx_lane_semaphore(k, 0);
    for (uint32_t l = 1; l < 16; l++) assert_int_equal(nx_kctx_lane_semaphore(k, l), lane0 + (int)l);
    OK(nx_kctx_finish(k, &err));
    nx_kctx_stats st;
    nx_kctx_get_stats(k, &st);
    nx_kctx_free(k);
    nx_program prog;
    finish_and_check(b, &prog);
    nx_builder_free(b);
    const nx_stream *dv = &prog.stream[0][NX_ENG_DVE];
    if (spans) {
        assert_int_equal(dv->count, 2); /* tensor_copy, end */
        assert_int_equal(dv->recs[0].wait_sem, lane0);
        assert_int_equal(dv->recs[0].wait_span, 16);
        assert_int_equal(dv->recs[0].wait_value, 1);
        assert_int_equal(st.nops, 1); /* finish: the 16 store lanes, one span */
    } else {
        assert_int_equal(dv->count, 17); /* 15 nops, tensor_copy, end */
        assert_int_equal(dv->recs[15].wait_span, 0);
        assert_int_equal(st.nops, 15 + 16);
    }
    nx_state sst;
    OK(nx_state_init(&sst, &g, 1, prog.hbm_bytes, prog.sem_count, &err));
    double xv[128 * 64], yv[128 * 64];
    for (int i = 0; i < 128 * 64; i++) xv[i] = i * 0.25;
    test_hbm_put(&sst, NX_DT_FP32, xo, 128 * 64, xv);
    OK(nx_exec_program(&prog, &sst, &err));
    test_hbm_get(&sst, NX_DT_FP32, yo, 128 * 64, yv);
    for (int i = 0; i < 128 * 64; i++) assert_true(yv[i] == xv[i]);
    nx_state_reset(&sst);
    test_hbm_put(&sst, NX_DT_FP32, xo, 128 * 64, xv);
    model_race_check(&prog, &sst);
    test_hbm_get(&sst, NX_DT_FP32, yo, 128 * 64, yv);
    for (int i = 0; i < 128 * 64; i++) assert_true(yv[i] == xv[i]);
    nx_state_free(&sst);
    nx_program_free(&prog);
}

static void test_wait_spans(void **state) {
    (void)state;
    span_case(1);
    span_case(0);
}

/* The order check catches a missing wait (it is not a check that cannot fail). */
static void test_order_check_catches_race(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_error err;
    uint64_t shape[2] = {128, 64}, xo;
    OK(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &xo, &err));
    uint32_t sem;
    OK(nx_builder_semaphore(b, &sem, &err));
    nx_insn dma = nx_insn_make(NX_OP_DMA_COPY);
    dma.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 0, 64);
    dma.op[1] = nx_ap_hbm_rows(NX_DT_FP32, xo, 128, 64, 64);
    dma.iparam[0] = 3;
    nx_insn_inc(&dma, sem, 1);
    OK(nx_builder_emit(b, 0, NX_ENG_SP, &dma, NULL, &err));
    nx_insn cp = nx_insn_make(NX_OP_TENSOR_COPY);
    cp.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 1024, 64);
    cp.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 0, 64); /* no wait: a race */
    OK(nx_builder_emit(b, 0, NX_ENG_DVE, &cp, NULL, &err));
    nx_program prog;
    OK(nx_builder_finish(b, &prog, &err));
    assert_int_equal(test_kcheck_program(&prog, &err), 1);
    assert_string_equal(err.msg,
                        "race: core 0 dve #0 (tensor_copy) reads sbuf[0:128]@[0, 256) and core 0 sp #0 "
                        "(dma_copy) on queue 3 writes sbuf[0:128]@[0, 256) with nothing ordering them");
    /* with the wait it is ordered */
    prog.stream[0][NX_ENG_DVE].recs[0].wait_sem = (uint8_t)sem;
    prog.stream[0][NX_ENG_DVE].recs[0].wait_value = 1;
    assert_int_equal(test_kcheck_program(&prog, &err), 0);
    nx_program_free(&prog);
    nx_builder_free(b);
}

/* Two programs exchange data through HBM across a barrier: program p writes
 * its half of a scratch tensor, both pass the barrier, then p copies the
 * OTHER half to the output. Without the barrier the order check finds the
 * cross-core race. Both programs use the same semaphore indices. */
static void build_exchange(int with_barrier, nx_program *prog, uint64_t *xo, uint64_t *yo) {
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 2);
    nx_error err;
    uint64_t shape[2] = {256, 64}, so;
    OK(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, xo, &err));
    OK(nx_builder_tensor(b, "s", NX_DT_FP32, 2, shape, NX_ROLE_SCRATCH, &so, &err));
    OK(nx_builder_tensor(b, "y", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, yo, &err));
    int sems[2][3];
    for (uint32_t pid = 0; pid < 2; pid++) {
        nx_kctx *k = new_ctx(b, pid, 2);
        nx_tile t, u;
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "t", NX_DT_FP32, 128, 64, &t, &err));
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "u", NX_DT_FP32, 128, 64, &u, &err));
        uint64_t mine = (uint64_t)pid * 128 * 64 * 4, other = (uint64_t)(1 - pid) * 128 * 64 * 4;
        nx_operand xin = nx_ap_hbm_rows(NX_DT_FP32, *xo + mine, 128, 64, 64);
        nx_operand sout = nx_ap_hbm_rows(NX_DT_FP32, so + mine, 128, 64, 64);
        nx_operand sin = nx_ap_hbm_rows(NX_DT_FP32, so + other, 128, 64, 64);
        nx_operand yout = nx_ap_hbm_rows(NX_DT_FP32, *yo + other, 128, 64, 64);
        nx_operand ta = nx_tile_ap(&t), ua = nx_tile_ap(&u);
        OK(nx_kctx_dma(k, &ta, &xin, &err));
        OK(nx_kctx_tensor_copy(k, NX_ENG_ACT, &ua, &ta, &err));
        OK(nx_kctx_dma(k, &sout, &ua, &err));
        if (with_barrier) OK(nx_kctx_barrier(k, &err));
        OK(nx_kctx_dma(k, &ta, &sin, &err));
        OK(nx_kctx_dma(k, &yout, &ta, &err));
        OK(nx_kctx_finish(k, &err));
        sems[pid][0] = nx_kctx_engine_semaphore(k, NX_ENG_ACT);
        sems[pid][1] = nx_kctx_lane_semaphore(k, 0);
        sems[pid][2] = nx_kctx_lane_semaphore(k, 1);
        nx_kctx_free(k);
    }
    for (int i = 0; i < 3; i++) {
        assert_true(sems[0][i] >= 0);
        assert_int_equal(sems[0][i], sems[1][i]);
    }
    OK(nx_builder_finish(b, prog, &err));
    nx_builder_free(b);
    /* one index per agent, shared by the two programs */
    assert_int_equal(prog->sem_count, with_barrier ? 6u : 5u); /* lanes 0-3, ACT (, POOL) */
}

static void test_barrier_exchange(void **state) {
    (void)state;
    nx_program prog;
    uint64_t xo, yo;
    nx_error err;
    build_exchange(0, &prog, &xo, &yo);
    assert_int_equal(test_kcheck_program(&prog, &err), 1);
    assert_non_null(strstr(err.msg, "race: "));
    nx_program_free(&prog);

    build_exchange(1, &prog, &xo, &yo);
    assert_int_equal(test_kcheck_program(&prog, &err), 0);
    nx_geometry g = geo2();
    nx_state st;
    OK(nx_state_init(&st, &g, 2, prog.hbm_bytes, prog.sem_count, &err));
    double xv[256 * 64], yv[256 * 64];
    for (int i = 0; i < 256 * 64; i++) xv[i] = i;
    test_hbm_put(&st, NX_DT_FP32, xo, 256 * 64, xv);
    OK(nx_exec_program(&prog, &st, &err));
    test_hbm_get(&st, NX_DT_FP32, yo, 256 * 64, yv);
    for (int i = 0; i < 256 * 64; i++) assert_true(yv[i] == xv[i]);
    nx_state_reset(&st);
    test_hbm_put(&st, NX_DT_FP32, xo, 256 * 64, xv);
    model_race_check(&prog, &st);
    test_hbm_get(&st, NX_DT_FP32, yo, 256 * 64, yv);
    for (int i = 0; i < 256 * 64; i++) assert_true(yv[i] == xv[i]);
    nx_state_free(&st);
    nx_program_free(&prog);
}

/* Tracking stays small on a long loop (pruning), and the result is right. */
static void test_long_loop_pruning(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_error err;
    enum { N = 3000, F = 16 };
    uint64_t shape[2] = {N, F}, xo, yo;
    OK(nx_builder_tensor(b, "x", NX_DT_INT32, 2, shape, NX_ROLE_INPUT, &xo, &err));
    OK(nx_builder_tensor(b, "y", NX_DT_INT32, 2, shape, NX_ROLE_OUTPUT, &yo, &err));
    nx_kctx *k = new_ctx(b, 0, 1);
    for (uint32_t i = 0; i < N; i++) {
        nx_tile t;
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "row", NX_DT_INT32, 1, F, &t, &err));
        nx_operand src = nx_ap_hbm_rows(NX_DT_INT32, xo + (uint64_t)i * F * 4, 1, F, F);
        nx_operand dst = nx_ap_hbm_rows(NX_DT_INT32, yo + (uint64_t)i * F * 4, 1, F, F);
        nx_operand ta = nx_tile_ap(&t);
        OK(nx_kctx_dma(k, &ta, &src, &err));
        OK(nx_kctx_tensor_tensor(k, i % 2 ? NX_ENG_POOL : NX_ENG_DVE, NX_ALU_ADD, &ta, &ta, &ta, &err));
        OK(nx_kctx_dma(k, &dst, &ta, &err));
        OK(nx_kctx_release(k, &t, &err));
    }
    OK(nx_kctx_finish(k, &err));
    nx_kctx_stats st;
    nx_kctx_get_stats(k, &st);
    nx_kctx_free(k);
    assert_true(st.live_max < 1200); /* without pruning: 2 * 3 * N */
    nx_program prog;
    finish_and_check(b, &prog);
    nx_builder_free(b);
    nx_state sst;
    OK(nx_state_init(&sst, &g, 1, prog.hbm_bytes, prog.sem_count, &err));
    static double xv[N * F], yv[N * F];
    for (int i = 0; i < N * F; i++) xv[i] = i - 7000;
    test_hbm_put(&sst, NX_DT_INT32, xo, N * F, xv);
    OK(nx_exec_program(&prog, &sst, &err));
    test_hbm_get(&sst, NX_DT_INT32, yo, N * F, yv);
    for (int i = 0; i < N * F; i++) assert_true(yv[i] == 2 * xv[i]);
    nx_state_free(&sst);
    nx_program_free(&prog);
}

static void test_misuse_errors(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_kctx *k = new_ctx(b, 0, 1);
    nx_error err;
    nx_tile t;
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "t", NX_DT_FP32, 128, 64, &t, &err));
    nx_operand a = nx_tile_ap(&t);
    nx_operand small = nx_tile_view(&t, NX_DT_FP32, 0, 4, 0, 0, NULL, NULL);
    assert_int_equal(nx_kctx_tensor_copy(k, NX_ENG_DVE, &a, &small, &err), -1);
    assert_string_equal(err.msg, "dve tensor_copy: in has 4 partitions, dst has 128");
    nx_insn in = nx_insn_make(NX_OP_TENSOR_COPY);
    in.op[0] = a;
    in.op[1] = a;
    nx_insn_wait(&in, 0, 1);
    assert_int_equal(nx_kctx_emit(k, NX_ENG_DVE, &in, &err), -1);
    assert_string_equal(err.msg, "dve tensor_copy: carries a semaphore; the authoring layer adds them");
    nx_insn dma = nx_insn_make(NX_OP_DMA_COPY);
    assert_int_equal(nx_kctx_emit(k, NX_ENG_DVE, &dma, &err), -1);
    assert_string_equal(err.msg, "dve dma_copy: DMA goes through nx_kctx_dma*");
    OK(nx_kctx_finish(k, &err));
    assert_int_equal(nx_kctx_tensor_copy(k, NX_ENG_DVE, &a, &a, &err), -1);
    assert_string_equal(err.msg, "kernel context: the trace is finished");
    /* grid rows */
    nx_kctx *k0 = new_ctx(b, 0, 2), *k1 = new_ctx(b, 1, 2);
    uint64_t lo, hi;
    nx_kctx_rows(k0, 7, &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 4);
    nx_kctx_rows(k1, 7, &lo, &hi);
    assert_int_equal(lo, 4);
    assert_int_equal(hi, 7);
    nx_kctx_rows(k1, 1, &lo, &hi);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 1);
    {
        nx_machine km = test_machine_of(nx_builder_geometry(b));
        assert_null(nx_kctx_new_machine(b, &km, 2, 2));
        assert_null(nx_kctx_new_machine(b, NULL, 0, 2));
    }
    nx_kctx_free(k0);
    nx_kctx_free(k1);
    nx_kctx_free(k);
    nx_builder_free(b);
}

/* The PE, POOL and DMA helpers through the layer: iota builds a matrix on
 * POOL, the PE multiplies it (load_stationary + multiply_moving) into PSUM,
 * ACT copies PSUM out; a bf16 matrix goes through dma_transpose; a split
 * transfer lands on consecutive lanes. Values are checked by hand-computed
 * formulas. */
static void test_helpers(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_error err;
    uint64_t sm[2] = {8, 16}, st2[2] = {16, 8}, sq[2] = {128, 40}, mo, to, xo, qo, ro;
    OK(nx_builder_tensor(b, "m", NX_DT_FP32, 2, sm, NX_ROLE_OUTPUT, &mo, &err));
    OK(nx_builder_tensor(b, "t_in", NX_DT_BF16, 2, sm, NX_ROLE_INPUT, &xo, &err));
    OK(nx_builder_tensor(b, "t_out", NX_DT_BF16, 2, st2, NX_ROLE_OUTPUT, &to, &err));
    OK(nx_builder_tensor(b, "q_in", NX_DT_INT32, 2, sq, NX_ROLE_INPUT, &qo, &err));
    OK(nx_builder_tensor(b, "q_out", NX_DT_INT32, 2, sq, NX_ROLE_OUTPUT, &ro, &err));
    nx_kctx *k = new_ctx(b, 0, 1);
    /* A[k][m] = k + 10 m (4 x 8, stationary), X[k][n] = 2 k - n (4 x 16, moving) */
    nx_tile A, X, P, M, T;
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "A", NX_DT_FP32, 4, 8, &A, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "X", NX_DT_FP32, 4, 16, &X, &err));
    OK(nx_kctx_alloc(k, NX_OPK_PSUM, "P", NX_DT_FP32, 8, 16, &P, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "M", NX_DT_FP32, 8, 16, &M, &err));
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "T", NX_DT_BF16, 16, 8, &T, &err));
    int32_t neg = -1;
    uint32_t c8 = 8, c16 = 16;
    nx_operand pa = nx_pattern(0, 1, 4, 1, (int32_t[]){10}, &c8);
    nx_operand px = nx_pattern(0, 2, 4, 1, &neg, &c16);
    nx_operand Aap = nx_tile_ap(&A), Xap = nx_tile_ap(&X), Pap = nx_tile_ap(&P), Map = nx_tile_ap(&M);
    OK(nx_kctx_iota(k, &Aap, &pa, &err));
    OK(nx_kctx_iota(k, &Xap, &px, &err));
    OK(nx_kctx_load_stationary(k, &Aap, &err));
    OK(nx_kctx_multiply_moving(k, &Pap, &Xap, 0, &err));
    OK(nx_kctx_tensor_copy(k, NX_ENG_ACT, &Map, &Pap, &err));
    nx_operand mout = nx_ap_hbm_rows(NX_DT_FP32, mo, 8, 16, 16);
    OK(nx_kctx_dma(k, &mout, &Map, &err));
    /* dma_transpose: t_in [8,16] -> T [16,8] in SBUF -> t_out */
    nx_operand tin = nx_ap_hbm_rows(NX_DT_BF16, xo, 8, 16, 16), Tap = nx_tile_ap(&T);
    OK(nx_kctx_dma_transpose(k, 3, &Tap, &tin, &err));
    nx_operand tout = nx_ap_hbm_rows(NX_DT_BF16, to, 16, 8, 8);
    OK(nx_kctx_dma(k, &tout, &Tap, &err));
    /* a split transfer: 128 rows in 3 pieces on lanes 5, 6, 7, HBM -> HBM */
    nx_operand qin = nx_ap_hbm_rows(NX_DT_INT32, qo, 128, 40, 40), qout = nx_ap_hbm_rows(NX_DT_INT32, ro, 128, 40, 40);
    OK(nx_kctx_dma_split(k, 5, 3, &qout, &qin, &err));
    OK(nx_kctx_finish(k, &err));
    nx_kctx_free(k);
    nx_program prog;
    finish_and_check(b, &prog);
    nx_builder_free(b);
    const nx_stream *sp = &prog.stream[0][NX_ENG_SP];
    uint32_t seen = 0;
    for (uint32_t i = 0; i < sp->count; i++) {
        nx_insn scratch;
        const nx_insn *in = nx_program_expand(&prog, &sp->recs[i], &scratch);
        if (in->opcode != NX_OP_DMA_COPY || in->op[1].kind != NX_OPK_HBM || in->op[1].dtype != NX_DT_INT32) continue;
        static const uint32_t rows[3] = {43, 43, 42}, queue[3] = {5 * 16, 6 * 16, 7 * 16};
        assert_int_equal(in->op[0].partition_count, rows[seen]);
        assert_int_equal(in->iparam[0], queue[seen]);
        seen++;
    }
    assert_int_equal(seen, 3);

    nx_state st;
    OK(nx_state_init(&st, &g, 1, prog.hbm_bytes, prog.sem_count, &err));
    double tv[128], qv[128 * 40], got[128 * 40];
    for (int i = 0; i < 128; i++) tv[i] = i - 64;
    for (int i = 0; i < 128 * 40; i++) qv[i] = i * 3 - 1000;
    test_hbm_put(&st, NX_DT_BF16, xo, 128, tv);
    test_hbm_put(&st, NX_DT_INT32, qo, 128 * 40, qv);
    OK(nx_exec_program(&prog, &st, &err));
    test_hbm_get(&st, NX_DT_FP32, mo, 128, got);
    for (int m = 0; m < 8; m++)
        for (int n = 0; n < 16; n++) {
            double want = 0; /* sum_k (k + 10 m) (2 k - n) */
            for (int kk = 0; kk < 4; kk++) want += (kk + 10.0 * m) * (2.0 * kk - n);
            assert_true(got[m * 16 + n] == want);
        }
    test_hbm_get(&st, NX_DT_BF16, to, 128, got);
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 8; c++) assert_true(got[r * 8 + c] == tv[c * 16 + r]);
    test_hbm_get(&st, NX_DT_INT32, ro, 128 * 40, got);
    for (int i = 0; i < 128 * 40; i++) assert_true(got[i] == qv[i]);
    nx_state_reset(&st);
    test_hbm_put(&st, NX_DT_BF16, xo, 128, tv);
    test_hbm_put(&st, NX_DT_INT32, qo, 128 * 40, qv);
    model_race_check(&prog, &st);
    nx_state_free(&st);
    nx_program_free(&prog);
}

/* Lanes spread over the 16 DMA engines (queue = engine * 16 + queue in engine). */
static void test_lanes(void **state) {
    (void)state;
    nx_geometry g = geo2();
    nx_builder *b = nx_builder_new(&g, 1);
    nx_kctx *k = new_ctx(b, 0, 1);
    assert_int_equal(nx_kctx_lanes(k), 32);
    assert_int_equal(nx_kctx_lane_queue(k, 0), 0);
    assert_int_equal(nx_kctx_lane_queue(k, 1), 16);
    assert_int_equal(nx_kctx_lane_queue(k, 15), 240);
    assert_int_equal(nx_kctx_lane_queue(k, 16), 1);
    assert_int_equal(nx_kctx_lane_queue(k, 31), 241);
    /* 64 lanes: queues 2 and 3 of every engine */
    nx_error err;
    assert_int_equal(nx_kctx_set_lanes(k, 64, &err), 0);
    assert_int_equal(nx_kctx_lanes(k), 64);
    assert_int_equal(nx_kctx_lane_queue(k, 32), 2);
    assert_int_equal(nx_kctx_lane_queue(k, 63), 243);
    /* clipped to the most the context tracks */
    assert_int_equal(nx_kctx_set_lanes(k, 1000, &err), 0);
    assert_int_equal(nx_kctx_lanes(k), 64);
    /* not once the trace holds an instruction */
    nx_tile t;
    assert_int_equal(nx_kctx_alloc(k, NX_OPK_SBUF, "t", NX_DT_FP32, 4, 4, &t, &err), 0);
    nx_operand a = nx_tile_ap(&t);
    assert_int_equal(nx_kctx_memset(k, NX_ENG_DVE, &a, 0.0, &err), 0);
    assert_int_equal(nx_kctx_set_lanes(k, 32, &err), -1);
    assert_string_equal(err.msg, "nx_kctx_set_lanes: the trace already holds instructions");
    assert_int_equal(nx_kctx_lanes(k), 64);
    nx_kctx_free(k);
    nx_builder_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_overflow_and_reuse),
        cmocka_unit_test(test_alloc_top_extent_grows),
        cmocka_unit_test(test_pipeline_waits),
        cmocka_unit_test(test_engines_overlap),
        cmocka_unit_test(test_transitive_and_nops),
        cmocka_unit_test(test_wait_spans),
        cmocka_unit_test(test_order_check_catches_race),
        cmocka_unit_test(test_barrier_exchange),
        cmocka_unit_test(test_long_loop_pruning),
        cmocka_unit_test(test_misuse_errors),
        cmocka_unit_test(test_lanes),
        cmocka_unit_test(test_helpers),
    };
    /* NX_TEST_FILTER=pattern runs a subset (development aid) */
    const char *filter = getenv("NX_TEST_FILTER");
    if (filter) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
