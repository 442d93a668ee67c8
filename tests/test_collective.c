/* The collectives between the grid's cores (kernels/author/collective.h)
 * and the collective_matmul composite (kernels/collective/).
 *
 * The collectives as unit tests on the authoring layer: two-core programs
 * that all-reduce, all-gather and reduce-scatter SBUF, private HBM and
 * shared HBM buffers (fp32 and bf16, ragged rows, slots small enough to
 * need several rounds), checked by the static order check, run on the
 * functional executor and on the SystemC model through the race detector,
 * the results compared exactly: all-gather moves bits, the sum is
 * fp32(x0 + x1) rounded once to the dtype (both cores, the same bits). The
 * ranged barrier orders its range and nothing else; without it the order
 * check finds the cross-core race. Every refusal's text.
 *
 * collective_matmul through the run path (tests/roster_case.h): ragged M,
 * K, N, fp32 and bf16, both exchange plans, against nx_ref_collective_matmul
 * on both backends with the race check; its refusals. */
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
#include "kcheck.h"
#include "kernels/author/collective.h"
#include "roster_case.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "support.h"

#define OK(call)                                                   \
    do {                                                           \
        if ((call) != 0) fail_msg("%s: %s", #call, err.msg);       \
    } while (0)

static nx_kctx *new_ctx(nx_builder *b, uint32_t pid) {
    nx_machine km = test_machine_of(nx_builder_geometry(b));
    nx_kctx *k = nx_kctx_new_machine(b, &km, pid, 2);
    assert_non_null(k);
    return k;
}

/* ---- the collectives on the authoring layer ---- */

enum { MEM_SBUF, MEM_HBM, MEM_SHARED };

typedef struct coll_case {
    nx_coll_kind kind;
    int src_mem, dst_mem; /* src: SBUF or HBM; dst: any */
    nx_dtype dt;
    uint64_t R, C;
    uint64_t slot; /* bytes per slot (small: several rounds) */
    int in_place;  /* SBUF dst = src (all_reduce) or src's share (reduce_scatter) */
} coll_case;

static void share(uint32_t core, uint64_t R, uint64_t *lo, uint64_t *hi) {
    uint64_t split = (R + 1) / 2;
    split = (split + 31) / 32 * 32;
    if (split > R) split = R;
    *lo = core ? split : 0;
    *hi = core ? R : split;
}

/* Result rows of core c (for a shared dst: of the one tensor). */
static uint64_t out_rows(const coll_case *c, uint32_t core) {
    uint64_t lo, hi;
    share(core, c->R, &lo, &hi);
    if (c->kind == NX_COLL_ALL_GATHER) return 2 * c->R;
    if (c->kind == NX_COLL_REDUCE_SCATTER && c->dst_mem != MEM_SHARED) return hi - lo;
    return c->R;
}

/* Builds the two programs: x [2, R, C] in HBM holds core c's data at x[c];
 * y holds core c's result at y[c] (a shared dst: y is the one result). */
static void build(const coll_case *c, nx_program *prog, uint64_t *xo, uint64_t *yo) {
    nx_geometry g = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&g, 2);
    nx_error err;
    const size_t es = nx_dtype_size(c->dt);
    const uint64_t rmax = out_rows(c, 0), xs[3] = {2, c->R, c->C};
    const uint64_t ys[3] = {c->dst_mem == MEM_SHARED ? 1 : 2, rmax, c->C};
    OK(nx_builder_tensor(b, "x", c->dt, 3, xs, NX_ROLE_INPUT, xo, &err));
    OK(nx_builder_tensor(b, "y", c->dt, 3, ys, NX_ROLE_OUTPUT, yo, &err));
    for (uint32_t pid = 0; pid < 2; pid++) {
        nx_kctx *k = new_ctx(b, pid);
        nx_coll coll;
        OK(nx_coll_init(k, &coll, "test.coll", c->slot, &err));
        const uint64_t xmine = *xo + pid * c->R * c->C * es;
        nx_coll_buf src = nx_coll_hbm(c->dt, xmine, c->R, c->C, c->C, 0), dst;
        nx_tile ts, td;
        if (c->src_mem == MEM_SBUF) {
            OK(nx_kctx_alloc(k, NX_OPK_SBUF, "src", c->dt, (uint32_t)c->R, c->C, &ts, &err));
            nx_operand to = nx_tile_ap(&ts), from = nx_ap_hbm_rows(c->dt, xmine, (uint32_t)c->R, (int32_t)c->C, (uint32_t)c->C);
            OK(nx_kctx_dma(k, &to, &from, &err));
            src = nx_coll_tile(&ts, 0, c->R, 0, c->C);
        }
        const uint64_t rows = out_rows(c, pid);
        const uint64_t ymine = *yo + (c->dst_mem == MEM_SHARED ? 0 : pid * rmax * c->C * es);
        if (c->dst_mem == MEM_SBUF && c->in_place) {
            uint64_t lo, hi;
            share(pid, c->R, &lo, &hi);
            dst = c->kind == NX_COLL_REDUCE_SCATTER ? nx_coll_rows(&src, lo, hi - lo) : src;
        } else if (c->dst_mem == MEM_SBUF) {
            OK(nx_kctx_alloc(k, NX_OPK_SBUF, "dst", c->dt, (uint32_t)rows, c->C, &td, &err));
            dst = nx_coll_tile(&td, 0, rows, 0, c->C);
        } else {
            dst = nx_coll_hbm(c->dt, ymine, rows, c->C, c->C, c->dst_mem == MEM_SHARED);
        }
        int rc = c->kind == NX_COLL_ALL_REDUCE   ? nx_coll_all_reduce(k, &coll, &src, &dst, &err)
                 : c->kind == NX_COLL_ALL_GATHER ? nx_coll_all_gather(k, &coll, &src, &dst, &err)
                                                 : nx_coll_reduce_scatter(k, &coll, &src, &dst, &err);
        if (rc != 0) fail_msg("collective: %s", err.msg);
        if (c->dst_mem == MEM_SBUF) {
            nx_operand to = nx_ap_hbm_rows(c->dt, ymine, (uint32_t)rows, (int32_t)c->C, (uint32_t)c->C);
            nx_operand from = c->in_place ? nx_ap_tile(NX_OPK_SBUF, c->dt, dst.p0, (uint32_t)rows, dst.offset, (uint32_t)c->C)
                                          : nx_tile_ap(&td);
            OK(nx_kctx_dma(k, &to, &from, &err));
        }
        OK(nx_kctx_finish(k, &err));
        nx_kctx_free(k);
    }
    OK(nx_builder_finish(b, prog, &err));
    nx_builder_free(b);
}

static double round_to(nx_dtype dt, double v) {
    uint8_t buf[8];
    nx_dtype_store(dt, buf, v);
    return nx_dtype_load(dt, buf);
}

/* What y must hold, element by element. */
static void expected(const coll_case *c, const double *x, double *y) {
    const uint64_t rmax = out_rows(c, 0), RC = c->R * c->C;
    for (uint32_t core = 0; core < (c->dst_mem == MEM_SHARED ? 1u : 2u); core++) {
        double *yc = y + core * rmax * c->C;
        uint64_t lo, hi;
        share(core, c->R, &lo, &hi);
        for (uint64_t r = 0; r < out_rows(c, core); r++)
            for (uint64_t j = 0; j < c->C; j++) {
                double v;
                if (c->kind == NX_COLL_ALL_GATHER) {
                    v = x[(r / c->R) * RC + (r % c->R) * c->C + j];
                } else {
                    uint64_t src = c->kind == NX_COLL_REDUCE_SCATTER && c->dst_mem != MEM_SHARED ? lo + r : r;
                    float s = (float)x[src * c->C + j] + (float)x[RC + src * c->C + j]; /* core 0's + core 1's, in fp32 */
                    v = round_to(c->dt, s);
                }
                yc[r * c->C + j] = v;
            }
    }
}

static void compare(const coll_case *c, nx_state *st, uint64_t yo, const double *want, const char *backend) {
    const uint64_t n = (c->dst_mem == MEM_SHARED ? 1 : 2) * out_rows(c, 0) * c->C;
    double *got = malloc(n * sizeof *got);
    test_hbm_get(st, c->dt, yo, n, got);
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want[i]) fail_msg("%s: y[%llu] = %.9g, want %.9g", backend, (unsigned long long)i, got[i], want[i]);
    free(got);
}

static void run_case(const coll_case *c) {
    nx_program prog;
    uint64_t xo, yo;
    nx_error err;
    build(c, &prog, &xo, &yo);
    if (test_kcheck_program(&prog, &err) != 0) fail_msg("order check: %s", err.msg);
    const uint64_t nx = 2 * c->R * c->C, ny = 2 * out_rows(c, 0) * c->C;
    double *x = malloc(nx * sizeof *x), *want = calloc(ny, sizeof *want);
    test_rng rng = {0x5eed0000u + c->R * 131 + c->C};
    for (uint64_t i = 0; i < nx; i++) x[i] = round_to(c->dt, test_rng_uniform(&rng, -2.0, 2.0));
    expected(c, x, want);
    nx_geometry g = test_geometry("trn2");
    nx_state st;
    OK(nx_state_init(&st, &g, 2, prog.hbm_bytes, prog.sem_count, &err));
    test_hbm_put(&st, c->dt, xo, nx, x);
    OK(nx_exec_program(&prog, &st, &err));
    compare(c, &st, yo, want, "functional");
    nx_state_reset(&st);
    test_hbm_put(&st, c->dt, xo, nx, x);
    nx_machine m = test_machine("trn2");
    nx_sim_options opt = {1, 0};
    nx_sim_result res;
    memset(&res, 0, sizeof res);
    OK(nx_sim_run(&m, &prog, &st, &opt, &res, &err));
    if (nx_race_check(&prog, res.log, res.log_count, &err) != 0) fail_msg("race detector: %s", err.msg);
    nx_sim_result_free(&res);
    compare(c, &st, yo, want, "model");
    nx_state_free(&st);
    nx_program_free(&prog);
    free(x), free(want);
}

static void test_all_reduce(void **state) {
    (void)state;
    const coll_case cases[] = {
        {NX_COLL_ALL_REDUCE, MEM_SBUF, MEM_SBUF, NX_DT_FP32, 128, 96, 1 << 20, 1},
        {NX_COLL_ALL_REDUCE, MEM_SBUF, MEM_SBUF, NX_DT_BF16, 77, 130, 1 << 20, 0},
        {NX_COLL_ALL_REDUCE, MEM_SBUF, MEM_HBM, NX_DT_BF16, 128, 200, 4096, 0},  /* 13 rounds of 16 columns */
        {NX_COLL_ALL_REDUCE, MEM_HBM, MEM_HBM, NX_DT_FP32, 300, 40, 6400, 0},    /* rows past 128, 8 rounds of 5 columns */
        {NX_COLL_ALL_REDUCE, MEM_HBM, MEM_SHARED, NX_DT_FP32, 5, 33, 1 << 16, 0},
        {NX_COLL_ALL_REDUCE, MEM_SBUF, MEM_SHARED, NX_DT_BF16, 1, 64, 1 << 16, 0}, /* core 1's share is empty */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

static void test_all_gather(void **state) {
    (void)state;
    const coll_case cases[] = {
        {NX_COLL_ALL_GATHER, MEM_SBUF, MEM_SBUF, NX_DT_FP32, 64, 50, 1 << 20, 0},
        {NX_COLL_ALL_GATHER, MEM_SBUF, MEM_HBM, NX_DT_BF16, 37, 300, 2048, 0},
        {NX_COLL_ALL_GATHER, MEM_HBM, MEM_SHARED, NX_DT_FP32, 200, 24, 1 << 16, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

static void test_reduce_scatter(void **state) {
    (void)state;
    const coll_case cases[] = {
        {NX_COLL_REDUCE_SCATTER, MEM_SBUF, MEM_SBUF, NX_DT_FP32, 128, 512, 1 << 20, 1},
        {NX_COLL_REDUCE_SCATTER, MEM_SBUF, MEM_SBUF, NX_DT_BF16, 93, 70, 1 << 20, 0},
        {NX_COLL_REDUCE_SCATTER, MEM_HBM, MEM_HBM, NX_DT_BF16, 257, 16, 1024, 0},
        {NX_COLL_REDUCE_SCATTER, MEM_SBUF, MEM_SHARED, NX_DT_FP32, 99, 128, 8192, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

/* The model costs the exchange: load, staging, barrier, read and store are
 * in series, each DMA with its fixed cost, the bytes over the core's DMA
 * engines; the same all-reduce with the barrier latency raised by 10 us
 * takes 10 us longer. */
static void test_model_cost(void **state) {
    (void)state;
    const coll_case c = {NX_COLL_ALL_REDUCE, MEM_SBUF, MEM_SBUF, NX_DT_FP32, 128, 2048, 1 << 20, 1};
    nx_program prog;
    uint64_t xo, yo;
    nx_error err;
    build(&c, &prog, &xo, &yo);
    nx_geometry g = test_geometry("trn2");
    nx_machine m = test_machine("trn2");
    double t[2];
    for (int i = 0; i < 2; i++) {
        nx_state st;
        OK(nx_state_init(&st, &g, 2, prog.hbm_bytes, prog.sem_count, &err));
        nx_sim_options opt = {0, 0};
        nx_sim_result res;
        memset(&res, 0, sizeof res);
        OK(nx_sim_run(&m, &prog, &st, &opt, &res, &err));
        t[i] = res.total_ns;
        nx_sim_result_free(&res);
        nx_state_free(&st);
        m.barrier_latency_ns += 10000;
    }
    const double bytes = 128.0 * 2048 * 4, rate = g.dma_engines * test_machine("trn2").dma_engine_bytes_per_ns;
    const double chain = 4 * m.dma_fixed_ns + test_machine("trn2").barrier_latency_ns + 4 * bytes / rate;
    if (t[0] < chain) fail_msg("all-reduce of 1 MiB: %.0f ns, below its chain of %.0f ns", t[0], chain);
    if (t[1] - t[0] < 9999 || t[1] - t[0] > 10001) fail_msg("barrier +10 us: %.0f -> %.0f ns", t[0], t[1]);
    nx_program_free(&prog);
}

/* The ranged barrier: a DMA into its range waits for it, unrelated work
 * does not; an exchange fenced over the wrong range is a race the order
 * check reports, over the right one it is clean. */
static void exchange(uint64_t fence_lo, uint64_t fence_hi, nx_program *prog, int *dve_waits, int *dma_waits) {
    nx_geometry g = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&g, 2);
    nx_error err;
    uint64_t shape[2] = {256, 64}, so;
    OK(nx_builder_tensor(b, "s", NX_DT_FP32, 2, shape, NX_ROLE_SCRATCH, &so, &err));
    for (uint32_t pid = 0; pid < 2; pid++) {
        nx_kctx *k = new_ctx(b, pid);
        nx_tile t, u;
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "t", NX_DT_FP32, 128, 64, &t, &err));
        OK(nx_kctx_alloc(k, NX_OPK_SBUF, "u", NX_DT_FP32, 128, 64, &u, &err));
        nx_operand ta = nx_tile_ap(&t), ua = nx_tile_ap(&u);
        OK(nx_kctx_memset(k, NX_ENG_DVE, &ta, pid + 1.0, &err));
        nx_operand mine = nx_ap_hbm_rows(NX_DT_FP32, so + pid * 128 * 64 * 4, 128, 64, 64);
        nx_operand other = nx_ap_hbm_rows(NX_DT_FP32, so + (1 - pid) * 128 * 64 * 4, 128, 64, 64);
        OK(nx_kctx_dma(k, &mine, &ta, &err));
        OK(nx_kctx_barrier_hbm(k, so + fence_lo, so + fence_hi, &err));
        nx_builder *bb = nx_kctx_builder(k);
        uint32_t dve0 = nx_builder_stream_len(bb, pid, NX_ENG_DVE), sp0 = nx_builder_stream_len(bb, pid, NX_ENG_SP);
        OK(nx_kctx_memset(k, NX_ENG_DVE, &ua, 3.0, &err)); /* unrelated */
        OK(nx_kctx_dma(k, &ua, &other, &err));
        if (pid == 0) {
            nx_insn scratch;
            *dve_waits = nx_builder_insn(bb, 0, NX_ENG_DVE, dve0, &scratch)->wait_sem != NX_SEM_NONE;
            *dma_waits = 0;
            for (uint32_t i = sp0; i < nx_builder_stream_len(bb, 0, NX_ENG_SP); i++)
                *dma_waits += nx_builder_insn(bb, 0, NX_ENG_SP, i, &scratch)->wait_sem ==
                              (uint32_t)nx_kctx_engine_semaphore(k, NX_ENG_POOL);
        }
        OK(nx_kctx_finish(k, &err));
        nx_kctx_free(k);
    }
    OK(nx_builder_finish(b, prog, &err));
    nx_builder_free(b);
}

static void test_ranged_barrier(void **state) {
    (void)state;
    nx_program prog;
    nx_error err;
    int dve, dma;
    exchange(0, 2 * 128 * 64 * 4, &prog, &dve, &dma);
    assert_int_equal(dve, 0);
    assert_int_equal(dma, 1);
    assert_int_equal(test_kcheck_program(&prog, &err), 0);
    nx_program_free(&prog);
    /* fenced over core 0's half only: core 0's read of core 1's half races */
    exchange(0, 128 * 64 * 4, &prog, &dve, &dma);
    assert_int_equal(test_kcheck_program(&prog, &err), 1);
    assert_non_null(strstr(err.msg, "race: "));
    nx_program_free(&prog);
}

static void test_collective_refusals(void **state) {
    (void)state;
    nx_geometry g = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&g, 2);
    nx_error err;
    nx_kctx *k = new_ctx(b, 0);
    nx_coll c;
    OK(nx_coll_init(k, &c, "r", 1024, &err));
    nx_tile t, p;
    OK(nx_kctx_alloc(k, NX_OPK_SBUF, "t", NX_DT_FP32, 128, 512, &t, &err));
    OK(nx_kctx_alloc(k, NX_OPK_PSUM, "p", NX_DT_FP32, 128, 512, &p, &err));
    nx_coll_buf s = nx_coll_tile(&t, 0, 128, 0, 64), d = nx_coll_tile(&t, 0, 128, 64, 64);
    nx_coll_buf ps = nx_coll_tile(&p, 0, 128, 0, 64), narrow = nx_coll_tile(&t, 0, 100, 64, 64);
    nx_coll_buf deep = nx_coll_tile(&t, 100, 64, 0, 8), big = nx_coll_tile(&t, 0, 128, 0, 8);
    nx_coll_buf i32 = s, bf = s, sh = nx_coll_hbm(NX_DT_FP32, 0, 128, 64, 64, 1), pitch = nx_coll_hbm(NX_DT_FP32, 0, 4, 64, 32, 0);
    i32.dtype = NX_DT_INT32;
    bf.dtype = NX_DT_BF16;
    struct {
        nx_coll_kind kind;
        const nx_coll_buf *src, *dst;
        const char *msg;
    } bad[] = {
        {NX_COLL_ALL_REDUCE, &ps, &d, "all_reduce 'r': src is in PSUM; SBUF or HBM (the DMA queues move it)"},
        {NX_COLL_ALL_REDUCE, &i32, &d, "all_reduce 'r': src is int32; fp32 or bf16"},
        {NX_COLL_ALL_GATHER, &s, &bf, "all_gather 'r': dst is bf16, src fp32; one dtype"},
        {NX_COLL_ALL_GATHER, &s, &d, "all_gather 'r': dst is 128 x 64, must be 256 x 64 for src 128 x 64 on 2 cores"},
        {NX_COLL_REDUCE_SCATTER, &s, &narrow, "reduce_scatter 'r': dst is 100 x 64, must be 64 x 64 for src 128 x 64 on 2 cores"},
        {NX_COLL_ALL_REDUCE, &deep, &deep, "all_reduce 'r': src rows [100, 164) pass the SBUF's partitions"},
        {NX_COLL_ALL_REDUCE, &sh, &d, "all_reduce 'r': src is shared; each core's src is its own data"},
        {NX_COLL_ALL_REDUCE, &pitch, &pitch, "all_reduce 'r': src pitch 32 elements (64..2147483647)"},
        {NX_COLL_ALL_REDUCE, &big, &big, "all_reduce 'r': the round stages 4096 bytes per core, a slot holds 1024"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(nx_coll_begin(k, &c, bad[i].kind, 1, bad[i].src, bad[i].dst, &err), -1);
        assert_string_equal(err.msg, bad[i].msg);
    }
    assert_int_equal(nx_coll_end(k, &c, &err), -1);
    assert_string_equal(err.msg, "collective 'r': no round is open (nx_coll_begin first)");
    assert_int_equal(nx_coll_begin(k, &c, NX_COLL_ALL_REDUCE, 0, &s, &d, &err), -1);
    assert_string_equal(err.msg, "all_reduce 'r': 0 buffers in a round (1..8)");
    nx_coll_buf one = nx_coll_tile(&t, 0, 2, 0, 8);
    OK(nx_coll_begin(k, &c, NX_COLL_ALL_REDUCE, 1, &one, &one, &err));
    assert_int_equal(nx_coll_begin(k, &c, NX_COLL_ALL_REDUCE, 1, &one, &one, &err), -1);
    assert_string_equal(err.msg, "all_reduce 'r': a round is open (nx_coll_end first)");
    OK(nx_coll_end(k, &c, &err));
    nx_coll_buf wide = nx_coll_hbm(NX_DT_FP32, 0, 512, 8, 8, 0);
    assert_int_equal(nx_coll_all_reduce(k, &c, &wide, &wide, &err), -1);
    assert_string_equal(err.msg, "all_reduce 'r': one column stages 2048 bytes, a slot holds 1024");
    assert_int_equal(nx_kctx_barrier_hbm(k, 64, 64, &err), -1);
    assert_string_equal(err.msg, "pool core_barrier: HBM range [64, 64) is empty or beyond HBM (25769803776 bytes)");
    nx_kctx_free(k);
    nx_builder_free(b);
}

/* ---- collective_matmul ---- */

static void cm(nx_dtype dt, uint64_t M, uint64_t K, uint64_t N, const char *attrs) {
    roster_operand ops[2] = {{"A", dt, 2, {M, K}, NULL}, {"B", dt, 2, {K, N}, NULL}};
    roster_check("trn2", "collective_matmul", ops, 2, attrs);
}

static void test_collective_matmul(void **state) {
    (void)state;
    cm(NX_DT_BF16, 256, 512, 384, NULL);
    cm(NX_DT_FP32, 130, 300, 520, NULL);   /* ragged M, K, N tiles */
    cm(NX_DT_BF16, 1, 2, 1, NULL);         /* one row; K split 1 + 1 */
    cm(NX_DT_BF16, 129, 3, 1030, NULL);    /* K 2 + 1, core 1's share of the last row tile is empty */
    cm(NX_DT_FP32, 900, 257, 130, NULL);   /* two row blocks */
    cm(NX_DT_BF16, 200, 1000, 600, "reduce_scatter=0");
    cm(NX_DT_FP32, 64, 129, 64, "reduce_scatter=0");
    roster_operand ops[2] = {{"A", NX_DT_BF16, 2, {128, 256}, NULL}, {"B", NX_DT_BF16, 2, {256, 128}, NULL}};
    roster_check("trn1", "collective_matmul", ops, 2, NULL);
}

/* The sum of two K halves equals the plain matmul within its tolerance:
 * tp 2 against tp 1 on the same operands. */
static void test_against_matmul(void **state) {
    (void)state;
    roster_operand ops[2] = {{"A", NX_DT_FP32, 2, {96, 640}, NULL}, {"B", NX_DT_FP32, 2, {640, 72}, NULL}};
    roster_outcome a, b;
    roster_run("trn2", "collective_matmul", ops, 2, NULL, &a);
    roster_run("trn2", "matmul", ops, 2, NULL, &b);
    double worst = 0;
    for (uint64_t e = 0; e < 96 * 72; e++) {
        double d = roster_value_at(&a, 0, e) - roster_value_at(&b, 0, e);
        if (d < 0) d = -d;
        if (d > worst) worst = d;
    }
    assert_true(worst < 1e-3);
    roster_outcome_free(&a);
    roster_outcome_free(&b);
}

static void test_collective_matmul_refusals(void **state) {
    (void)state;
    roster_operand r3[2] = {{"A", NX_DT_BF16, 3, {2, 4, 8}, NULL}, {"B", NX_DT_BF16, 2, {8, 4}, NULL}};
    roster_refused("trn2", "collective_matmul", r3, 2, NULL,
                   "operand 0 (A): rank 3; collective_matmul takes A [M, K] and B [K, N]");
    roster_operand k1[2] = {{"A", NX_DT_FP32, 2, {4, 1}, NULL}, {"B", NX_DT_FP32, 2, {1, 4}, NULL}};
    roster_refused("trn2", "collective_matmul", k1, 2, NULL, "operand 0 (A): K = 1 is split over 2 cores; K >= 2");
    roster_operand ok[2] = {{"A", NX_DT_FP32, 2, {4, 8}, NULL}, {"B", NX_DT_FP32, 2, {8, 4}, NULL}};
    roster_refused("trn2", "collective_matmul", ok, 2, "reduce_scatter=2", "attribute reduce_scatter: 2; 0 or 1");
    roster_refused("trn2", "collective_matmul", ok, 1, NULL, "collective_matmul: expects 2 operands (A, B), got 1");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_reduce),
        cmocka_unit_test(test_all_gather),
        cmocka_unit_test(test_reduce_scatter),
        cmocka_unit_test(test_model_cost),
        cmocka_unit_test(test_ranged_barrier),
        cmocka_unit_test(test_collective_refusals),
        cmocka_unit_test(test_collective_matmul),
        cmocka_unit_test(test_against_matmul),
        cmocka_unit_test(test_collective_matmul_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
