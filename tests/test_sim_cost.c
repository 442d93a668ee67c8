/* The cost model (sim/cost.h) formula by formula, with cycle counts worked
 * out by hand from the preset figures (docs/parts/machine.md), and the same figures
 * seen through the SystemC model: engine busy time, pipelined completion,
 * background LoadStationary, the published dependent-chain micro-figures, semaphore
 * latency and the v2/v3 structural conflicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "sim/cost.h"
#include "sim/model.h"
#include "support.h"

/* Time comparisons: model times are femtosecond integers turned into ns, so
 * each instruction may be off by half a femtosecond. */
#define NS_TOL 1e-4

static nx_insn_cost cost_of(const nx_machine *m, nx_engine e, const nx_insn *in, nx_pe_cost_state *pe) {
    nx_insn_cost c;
    nx_cost_insn(m, e, in, pe, &c);
    return c;
}

/* ---- formulas ---------------------------------------------------------- */

static void pe_multiply_and_load(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_pe_cost_state pe;
    nx_pe_cost_reset(&pe);
    /* load bf16 [128 x 128]: fast load = max(128, 64) / 4 = 32 cycles */
    nx_insn ld = nx_insn_make(NX_OP_LOAD_STATIONARY);
    ld.op[0] = test_sb(NX_DT_BF16, 0, 128, 0, 128);
    nx_insn_cost c = cost_of(&m, NX_ENG_PE, &ld, &pe);
    assert_int_equal(c.occupancy, 32);
    assert_int_equal(c.background, 0); /* nothing to hide under */
    /* multiply N = 512 bf16: II max(512, 64) = 512, visible 256 later */
    nx_insn mm = test_insn2(NX_OP_MULTIPLY_MOVING, test_ps(NX_DT_FP32, 0, 128, 0, 512), test_sb(NX_DT_BF16, 0, 128, 0, 512));
    c = cost_of(&m, NX_ENG_PE, &mm, &pe);
    assert_int_equal(c.occupancy, 512);
    assert_int_equal(c.latency, 512 + 256);
    assert_int_equal(c.flops, 2ull * 128 * 128 * 512);
    /* fast LoadStationary about 4x quicker than a multiply of the same free
     * size (the architecture guide's published micro-figure, docs/parts/
     * fidelity.md): free size 128, 128 / 32 = 4 */
    nx_insn mm128 = test_insn2(NX_OP_MULTIPLY_MOVING, test_ps(NX_DT_FP32, 0, 128, 0, 128), test_sb(NX_DT_BF16, 0, 128, 0, 128));
    nx_insn_cost c128 = cost_of(&m, NX_ENG_PE, &mm128, &pe);
    assert_int_equal(c128.occupancy, 4 * 32);
    /* N = 32: the minimum initiation interval 64 */
    mm.op[0] = test_ps(NX_DT_FP32, 0, 128, 0, 32);
    mm.op[1] = test_sb(NX_DT_BF16, 0, 128, 0, 32);
    c = cost_of(&m, NX_ENG_PE, &mm, &pe);
    assert_int_equal(c.occupancy, 64);
    /* a load right after a multiply may run in the background */
    c = cost_of(&m, NX_ENG_PE, &ld, &pe);
    assert_int_equal(c.background, 1);
    /* fp32 moving: x4 -> max(100, 64) * 4 = 400 */
    mm.op[0] = test_ps(NX_DT_FP32, 0, 128, 0, 100);
    mm.op[1] = test_sb(NX_DT_FP32, 0, 128, 0, 100);
    assert_int_equal(cost_of(&m, NX_ENG_PE, &mm, &pe).occupancy, 400);
    /* fp32 stationary (load costs max(128, 64) * 4 / 4 = 128) makes a bf16 multiply x4 too */
    ld.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 128);
    assert_int_equal(cost_of(&m, NX_ENG_PE, &ld, &pe).occupancy, 128);
    mm.op[1] = test_sb(NX_DT_BF16, 0, 128, 0, 100);
    assert_int_equal(cost_of(&m, NX_ENG_PE, &mm, &pe).occupancy, 400);
    /* narrow stationary, M = 10 bf16: max(10, 64) / 4 = 16 */
    ld.op[0] = test_sb(NX_DT_BF16, 0, 128, 0, 10);
    assert_int_equal(cost_of(&m, NX_ENG_PE, &ld, &pe).occupancy, 16);
    /* without background load the flag stays off */
    m.pe_background_load = 0;
    nx_pe_cost_reset(&pe);
    (void)cost_of(&m, NX_ENG_PE, &mm, &pe);
    assert_int_equal(cost_of(&m, NX_ENG_PE, &ld, &pe).background, 0);
}

static void pe_transpose(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_pe_cost_state pe;
    nx_pe_cost_reset(&pe);
    /* max(P, min(64, F)): [128 x 32] -> 128; [16 x 100] -> 64; [16 x 40] -> 40 */
    nx_insn t = test_insn2(NX_OP_TRANSPOSE, test_ps(NX_DT_FP32, 0, 32, 0, 128), test_sb(NX_DT_FP32, 0, 128, 0, 32));
    nx_insn_cost c = cost_of(&m, NX_ENG_PE, &t, &pe);
    assert_int_equal(c.occupancy, 128);
    assert_int_equal(c.latency, 128 + 256);
    assert_int_equal(c.flops, 0);
    t = test_insn2(NX_OP_TRANSPOSE, test_ps(NX_DT_FP32, 0, 100, 0, 16), test_sb(NX_DT_FP32, 0, 16, 0, 100));
    assert_int_equal(cost_of(&m, NX_ENG_PE, &t, &pe).occupancy, 64);
    t = test_insn2(NX_OP_TRANSPOSE, test_ps(NX_DT_FP32, 0, 40, 0, 16), test_sb(NX_DT_FP32, 0, 16, 0, 40));
    assert_int_equal(cost_of(&m, NX_ENG_PE, &t, &pe).occupancy, 40);
}

static void dve_formulas(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    /* two inputs, 1000 fp32: 2N = 2000; a dependent instruction 100 later */
    nx_insn tt = nx_insn_make(NX_OP_TENSOR_TENSOR);
    tt.alu0 = NX_ALU_ADD;
    tt.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 1000);
    tt.op[1] = test_sb(NX_DT_FP32, 0, 128, 4000, 1000);
    tt.op[2] = test_ps(NX_DT_FP32, 0, 128, 0, 1000);
    nx_insn_cost c = cost_of(&m, NX_ENG_DVE, &tt, NULL);
    assert_int_equal(c.occupancy, 2000);
    assert_int_equal(c.latency, 2100);
    /* one input (the scalar operands are not streamed): N = 1000 */
    nx_insn ts = nx_insn_make(NX_OP_TENSOR_SCALAR);
    ts.alu0 = NX_ALU_MULTIPLY;
    ts.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 1000);
    ts.op[1] = test_sb(NX_DT_FP32, 0, 128, 4000, 1000);
    ts.op[2] = test_sb(NX_DT_FP32, 0, 128, 8000, 1);
    assert_int_equal(cost_of(&m, NX_ENG_DVE, &ts, NULL).occupancy, 1000);
    /* short: the minimum initiation interval 64; latency 10 + 100 */
    nx_insn ms = test_insn2(NX_OP_MEMSET, test_sb(NX_DT_FP32, 0, 128, 0, 10), nx_imm(1.0, NX_DT_FP32));
    c = cost_of(&m, NX_ENG_DVE, &ms, NULL);
    assert_int_equal(c.occupancy, 64);
    assert_int_equal(c.latency, 110);
    /* v3 performance modes: bf16 SBUF contiguous: copy / scalar 4x, tensor_tensor 2x */
    nx_insn cp = test_insn2(NX_OP_TENSOR_COPY, test_sb(NX_DT_BF16, 0, 128, 0, 1000), test_sb(NX_DT_BF16, 0, 128, 4000, 1000));
    assert_int_equal(cost_of(&m, NX_ENG_DVE, &cp, NULL).occupancy, 250);
    ts.op[0] = test_sb(NX_DT_FP16, 0, 128, 0, 1000);
    ts.op[1] = test_sb(NX_DT_FP16, 0, 128, 4000, 1000);
    assert_int_equal(cost_of(&m, NX_ENG_DVE, &ts, NULL).occupancy, 250);
    tt.op[0] = test_sb(NX_DT_BF16, 0, 128, 0, 1000);
    tt.op[1] = test_sb(NX_DT_BF16, 0, 128, 4000, 1000);
    tt.op[2] = test_sb(NX_DT_BF16, 0, 128, 8000, 1000);
    assert_int_equal(cost_of(&m, NX_ENG_DVE, &tt, NULL).occupancy, 1000);
    /* not in the modes: a PSUM operand, a strided innermost dim, fp32 */
    tt.op[2] = test_ps(NX_DT_BF16, 0, 128, 0, 1000);
    assert_int_equal(cost_of(&m, NX_ENG_DVE, &tt, NULL).occupancy, 2000);
    int32_t stride = 2;
    uint32_t count = 1000;
    cp.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_BF16, 0, 128, 0, 4000, 1, &stride, &count);
    assert_int_equal(cost_of(&m, NX_ENG_DVE, &cp, NULL).occupancy, 1000);
    cp.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 1000);
    cp.op[1] = test_sb(NX_DT_FP32, 0, 128, 4000, 1000);
    assert_int_equal(cost_of(&m, NX_ENG_DVE, &cp, NULL).occupancy, 1000);
    /* trn1 has no performance modes */
    nx_machine v2 = test_machine("trn1");
    cp.op[0] = test_sb(NX_DT_BF16, 0, 128, 0, 1000);
    cp.op[1] = test_sb(NX_DT_BF16, 0, 128, 4000, 1000);
    assert_int_equal(cost_of(&v2, NX_ENG_DVE, &cp, NULL).occupancy, 1000);
    /* the fixed overhead adds to every instruction */
    m.dve_fixed_overhead = 144;
    c = cost_of(&m, NX_ENG_DVE, &ms, NULL);
    assert_int_equal(c.occupancy, 64 + 144);
    assert_int_equal(c.latency, 10 + 144 + 100);
}

static void act_and_pool_formulas(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = NX_ACT_EXP;
    a.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 10);
    a.op[1] = test_sb(NX_DT_FP32, 0, 128, 64, 10);
    a.op[2] = nx_imm(1.0, NX_DT_FP32);
    a.op[3] = nx_imm(0.0, NX_DT_FP32);
    nx_insn_cost ca = cost_of(&m, NX_ENG_ACT, &a, NULL);
    assert_int_equal(ca.occupancy, 64); /* max(64, 10) */
    assert_int_equal(ca.latency, 10 + 265); /* a dependent instruction: + act.dependency_overhead (trn2) */
    a.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 1000);
    a.op[1] = test_sb(NX_DT_FP32, 0, 128, 4000, 1000);
    assert_int_equal(cost_of(&m, NX_ENG_ACT, &a, NULL).occupancy, 1000);
    a.alu0 = NX_ALU_ADD;
    a.op[4] = test_sb(NX_DT_FP32, 0, 128, 8000, 1);
    nx_insn_cost c = cost_of(&m, NX_ENG_ACT, &a, NULL);
    assert_int_equal(c.occupancy, 1064); /* + 64 with acc_out */
    assert_int_equal(c.latency, 1064 + 265);
    /* POOL: 150 + N */
    const int32_t one = 1;
    const uint32_t n = 100;
    nx_insn io = test_insn2(NX_OP_IOTA, test_sb(NX_DT_INT32, 0, 128, 0, 100), nx_pattern(0, 1, 128, 1, &one, &n));
    assert_int_equal(cost_of(&m, NX_ENG_POOL, &io, NULL).occupancy, 250);
    /* control: nop one cycle, end none */
    nx_insn nop = nx_insn_make(NX_OP_NOP), end = nx_insn_make(NX_OP_END);
    assert_int_equal(cost_of(&m, NX_ENG_POOL, &nop, NULL).occupancy, 1);
    assert_int_equal(cost_of(&m, NX_ENG_POOL, &end, NULL).occupancy, 0);
}

static void dma_cost_and_rates(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_dma_cost d;
    /* 128 rows x 512 fp32 = 2 KiB per row: full efficiency */
    nx_insn ld = test_insn2(NX_OP_DMA_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 512), nx_ap_hbm_rows(NX_DT_FP32, 0, 128, 512, 512));
    nx_cost_dma(&m, &ld, &d);
    assert_int_equal(d.bytes, 128 * 2048);
    assert_int_equal(d.row_bytes, 2048);
    assert_true(d.efficiency == 1.0);
    assert_int_equal(d.touches_hbm, 1);
    /* 64-byte rows: 64 / 2048 of the bandwidth */
    ld = test_insn2(NX_OP_DMA_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 16), nx_ap_hbm_rows(NX_DT_FP32, 0, 128, 512, 16));
    nx_cost_dma(&m, &ld, &d);
    assert_int_equal(d.row_bytes, 64);
    assert_true(d.efficiency == 64.0 / 2048.0);
    /* a strided side limits the run to one element; a cast moves the wider size */
    int32_t stride = 2;
    uint32_t cnt = 600;
    ld = test_insn2(NX_OP_DMA_COPY, test_sb(NX_DT_BF16, 0, 4, 0, 600),
               nx_ap(NX_OPK_HBM, NX_DT_FP32, 0, 4, 1200, 0, 1, &stride, &cnt));
    nx_cost_dma(&m, &ld, &d);
    assert_int_equal(d.bytes, 4 * 600 * 4);
    assert_int_equal(d.row_bytes, 4);
    /* SBUF to SBUF does not touch HBM */
    ld = test_insn2(NX_OP_DMA_COPY, test_sb(NX_DT_FP32, 0, 4, 0, 8), test_sb(NX_DT_FP32, 0, 4, 64, 8));
    nx_cost_dma(&m, &ld, &d);
    assert_int_equal(d.touches_hbm, 0);

    /* rates: round-robin on one engine, then HBM max-min fair */
    double rates[4], scratch[4];
    nx_dma_flow f[4] = {{2, 1.0, 1}, {2, 1.0, 1}, {1, 0.5, 0}, {1, 1.0, 1}};
    nx_cost_dma_rates(&m, f, 4, rates, scratch);
    assert_true(rates[0] == 11.5 && rates[1] == 11.5);
    assert_true(rates[2] == 11.5); /* 23 * 0.5, SBUF only */
    assert_true(rates[3] == 23.0);
    /* HBM of 20 B/ns shared by caps 2.875, 2.875 and 23: level 14.25 */
    m.hbm_bytes_per_ns = 20.0;
    nx_dma_flow g[3] = {{1, 0.125, 1}, {1, 1.0, 1}, {1, 0.125, 1}};
    nx_cost_dma_rates(&m, g, 3, rates, scratch);
    assert_true(fabs(rates[0] - 2.875) < 1e-12 && fabs(rates[2] - 2.875) < 1e-12);
    assert_true(fabs(rates[1] - 14.25) < 1e-12);
    /* equal caps above the fair share: an even split */
    nx_dma_flow h[4] = {{1, 1.0, 1}, {1, 1.0, 1}, {1, 1.0, 1}, {1, 1.0, 1}};
    nx_cost_dma_rates(&m, h, 4, rates, scratch);
    for (int i = 0; i < 4; i++) assert_true(fabs(rates[i] - 5.0) < 1e-12);
}

/* A lone transfer's duration and the DMA bound, against the figures of the
 * presets written out (docs/parts/machine.md): fixed 1300 ns, 23 B/ns per
 * engine (trn2), 17 (trn1), 16 engines, HBM 720 / 820 B/ns. */
static void dma_alone_and_peak(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_dma_cost d;
    nx_insn ld = test_insn2(NX_OP_DMA_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 512), nx_ap_hbm_rows(NX_DT_FP32, 0, 128, 512, 512));
    nx_cost_dma(&m, &ld, &d);
    assert_true(d.fixed_ns == 1300.0);
    assert_true(nx_cost_dma_alone_ns(&m, &d) == 1300.0 + 262144.0 / 23.0);
    /* 64-byte rows: 1/32 of the engine */
    ld = test_insn2(NX_OP_DMA_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 16), nx_ap_hbm_rows(NX_DT_FP32, 0, 128, 512, 16));
    nx_cost_dma(&m, &ld, &d);
    assert_true(fabs(nx_cost_dma_alone_ns(&m, &d) - (1300.0 + 8192.0 * 32.0 / 23.0)) < 1e-9);
    /* HBM below one engine caps a transfer touching it */
    m.hbm_bytes_per_ns = 10.0;
    ld = test_insn2(NX_OP_DMA_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 512), nx_ap_hbm_rows(NX_DT_FP32, 0, 128, 512, 512));
    nx_cost_dma(&m, &ld, &d);
    assert_true(nx_cost_dma_alone_ns(&m, &d) == 1300.0 + 262144.0 / 10.0);
    m = test_machine("trn2");
    assert_true(nx_cost_dma_peak_bytes_per_ns(&m, 1) == 368.0);
    assert_true(nx_cost_dma_peak_bytes_per_ns(&m, 2) == 720.0); /* 736 capped by HBM */
    m = test_machine("trn1");
    assert_true(nx_cost_dma_peak_bytes_per_ns(&m, 1) == 272.0);
    assert_true(nx_cost_dma_peak_bytes_per_ns(&m, 2) == 544.0);
}

static void conflict_access(void **state) {
    (void)state;
    nx_geometry g = test_geometry("trn2");
    nx_insn_access a;
    nx_insn cp = test_insn2(NX_OP_TENSOR_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 8), test_ps(NX_DT_FP32, 0, 128, 2048 * 3 + 8, 8));
    nx_cost_access(&g, &cp, &a);
    assert_int_equal(a.sbuf, 1);
    assert_int_equal(a.psum_banks, 1u << 3);
    cp = test_insn2(NX_OP_TENSOR_COPY, test_ps(NX_DT_FP32, 0, 128, 2040, 4), test_ps(NX_DT_FP32, 0, 128, 0, 8));
    nx_cost_access(&g, &cp, &a);
    assert_int_equal(a.sbuf, 0);
    assert_int_equal(a.psum_banks, 0x3u); /* [2040, 2056) spans banks 0 and 1 */
}

/* ---- the same figures on the model -------------------------------------- */

typedef struct run_out {
    nx_sim_result r;
    nx_state st;
    nx_program p;
} run_out;

static void run_model(const nx_machine *m, nx_builder *b, run_out *o) {
    nx_error err;
    if (nx_builder_finish(b, &o->p, &err) != 0) fail_msg("finish: %s", err.msg);
    nx_builder_free(b);
    if (nx_state_init(&o->st, &m->geo, o->p.cores, o->p.hbm_bytes, o->p.sem_count, &err) != 0)
        fail_msg("state: %s", err.msg);
    nx_sim_options opt = {1, 0};
    if (nx_sim_run(m, &o->p, &o->st, &opt, &o->r, &err) != 0) fail_msg("run: %s", err.msg);
}

static void run_free(run_out *o) {
    nx_sim_result_free(&o->r);
    nx_state_free(&o->st);
    nx_program_free(&o->p);
}

/* The record of (engine, index) on core 0. */
static const nx_sim_record *rec(const run_out *o, nx_engine e, uint32_t index) {
    for (size_t i = 0; i < o->r.log_count; i++)
        if (o->r.log[i].engine == e && o->r.log[i].index == index && o->r.log[i].queue < 0)
            return &o->r.log[i];
    fail_msg("no record for engine %d #%u", (int)e, index);
    return NULL;
}

static void emit(nx_builder *b, nx_engine e, const nx_insn *in) {
    nx_error err;
    if (nx_builder_emit(b, 0, e, in, NULL, &err) != 0) fail_msg("emit: %s", err.msg);
}

static void assert_ns(double got, double want) {
    if (fabs(got - want) > NS_TOL) fail_msg("%.6f ns, want %.6f ns", got, want);
}

static void model_one_instruction_per_engine(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    /* DVE tensor_tensor 1000 fp32: busy 2000 cycles, visible after 2100 */
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_insn tt = nx_insn_make(NX_OP_TENSOR_TENSOR);
    tt.alu0 = NX_ALU_ADD;
    tt.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 1000);
    tt.op[1] = test_sb(NX_DT_FP32, 0, 128, 4000, 1000);
    tt.op[2] = test_sb(NX_DT_FP32, 0, 128, 8000, 1000);
    emit(b, NX_ENG_DVE, &tt);
    /* ACT activation 1000 with acc_out: 1064 cycles at 1.2 GHz, visible after 1064 + 265 */
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = NX_ACT_RELU;
    a.alu0 = NX_ALU_ADD;
    a.op[0] = test_sb(NX_DT_FP32, 0, 128, 12000, 1000);
    a.op[1] = test_sb(NX_DT_FP32, 0, 128, 16000, 1000);
    a.op[2] = nx_imm(1.0, NX_DT_FP32);
    a.op[3] = nx_imm(0.0, NX_DT_FP32);
    a.op[4] = test_sb(NX_DT_FP32, 0, 128, 20000, 1);
    emit(b, NX_ENG_ACT, &a);
    /* POOL iota 100: 250 cycles at 1.2 GHz */
    const int32_t one = 1;
    const uint32_t n = 100;
    nx_insn io = test_insn2(NX_OP_IOTA, test_sb(NX_DT_INT32, 0, 128, 24000, 100), nx_pattern(0, 1, 128, 1, &one, &n));
    emit(b, NX_ENG_POOL, &io);
    run_out o;
    run_model(&m, b, &o);
    assert_ns(o.r.engine[0][NX_ENG_DVE].busy_ns, 2000 / 0.96);
    assert_ns(rec(&o, NX_ENG_DVE, 0)->t_end_ns, 2100 / 0.96);
    assert_ns(rec(&o, NX_ENG_ACT, 0)->t_end_ns, (1064 + 265) / 1.2);
    assert_ns(o.r.engine[0][NX_ENG_ACT].busy_ns, 1064 / 1.2);
    assert_ns(o.r.engine[0][NX_ENG_POOL].busy_ns, 250 / 1.2);
    /* they run in parallel: the run lasts as long as the slowest */
    assert_ns(o.r.total_ns, 2100 / 0.96);
    assert_int_equal(o.r.instructions, 3);
    for (int e = 0; e < NX_ENG_COUNT; e++) assert_true(o.r.engine[0][e].stall_ns == 0.0);
    run_free(&o);
}

/* load, multiply 512, load (hidden under the multiply), multiply 512 */
static void pe_program(nx_builder *b) {
    nx_insn ld = nx_insn_make(NX_OP_LOAD_STATIONARY);
    ld.op[0] = test_sb(NX_DT_BF16, 0, 128, 0, 128);
    nx_insn mm = test_insn2(NX_OP_MULTIPLY_MOVING, test_ps(NX_DT_FP32, 0, 128, 0, 512), test_sb(NX_DT_BF16, 0, 128, 256, 512));
    emit(b, NX_ENG_PE, &ld);
    emit(b, NX_ENG_PE, &mm);
    emit(b, NX_ENG_PE, &ld);
    mm.op[0] = test_ps(NX_DT_FP32, 0, 128, 2048, 512);
    emit(b, NX_ENG_PE, &mm);
}

static void model_pe_pipeline_and_background_load(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    run_out o;
    nx_builder *b = nx_builder_new(&m.geo, 1);
    pe_program(b);
    run_model(&m, b, &o);
    const double c = 1 / 2.4; /* ns per PE cycle */
    assert_ns(rec(&o, NX_ENG_PE, 1)->t_start_ns, 32 * c);
    assert_ns(rec(&o, NX_ENG_PE, 1)->t_end_ns, (32 + 512 + 256) * c); /* fill latency after the stream */
    /* the second load starts with the first multiply and hides under it */
    assert_ns(rec(&o, NX_ENG_PE, 2)->t_ready_ns, 32 * c);
    assert_ns(rec(&o, NX_ENG_PE, 2)->t_start_ns, 32 * c);
    assert_ns(rec(&o, NX_ENG_PE, 2)->busy_ns, 0);
    assert_ns(rec(&o, NX_ENG_PE, 3)->t_start_ns, 544 * c);
    assert_ns(o.r.total_ns, (544 + 512 + 256) * c);
    assert_ns(o.r.engine[0][NX_ENG_PE].busy_ns, (32 + 512 + 512) * c);
    assert_int_equal(o.r.flops, 2 * 2ull * 128 * 128 * 512);
    run_free(&o);
    /* without background load the second load costs its 32 cycles in line */
    m.pe_background_load = 0;
    b = nx_builder_new(&m.geo, 1);
    pe_program(b);
    run_model(&m, b, &o);
    assert_ns(rec(&o, NX_ENG_PE, 2)->t_start_ns, 544 * c);
    assert_ns(o.r.total_ns, (576 + 512 + 256) * c);
    assert_ns(o.r.engine[0][NX_ENG_PE].busy_ns, (32 + 512 + 32 + 512) * c);
    run_free(&o);
}

/* n one-element tensor_scalar on DVE; dependent: each reads the previous
 * one's result. */
static void dve_chain(nx_builder *b, int n, int dependent) {
    for (int i = 0; i < n; i++) {
        nx_insn ts = nx_insn_make(NX_OP_TENSOR_SCALAR);
        ts.alu0 = NX_ALU_ADD;
        uint64_t src = dependent ? (uint64_t)(i & 1) * 4 : 8 * (uint64_t)i;
        uint64_t dst = dependent ? (uint64_t)((i + 1) & 1) * 4 : 8 * (uint64_t)i + 4;
        ts.op[0] = test_sb(NX_DT_FP32, 0, 1, dst, 1);
        ts.op[1] = test_sb(NX_DT_FP32, 0, 1, src, 1);
        ts.op[2] = nx_imm(1.0, NX_DT_FP32);
        emit(b, NX_ENG_DVE, &ts);
    }
}

/* n one-element activations on ACT; dependent: each reads the previous one's result. */
static void act_chain(nx_builder *b, int n) {
    for (int i = 0; i < n; i++) {
        nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
        a.func = NX_ACT_IDENTITY;
        a.op[0] = test_sb(NX_DT_FP32, 0, 1, (uint64_t)((i + 1) & 1) * 4, 1);
        a.op[1] = test_sb(NX_DT_FP32, 0, 1, (uint64_t)(i & 1) * 4, 1);
        a.op[2] = nx_imm(1.0, NX_DT_FP32);
        a.op[3] = nx_imm(1.0, NX_DT_FP32);
        emit(b, NX_ENG_ACT, &a);
    }
}

/* Published micro-figures of dependent tiny instructions (docs/parts/
 * hardware.md, docs/parts/fidelity.md), each within 10%:
 *  - VectorE: "a static instruction overhead of 100 engine cycles" for
 *    instructions that depend on the previous one (the architecture guide,
 *    Trainium/Inferentia2 Vector Engine performance notes): the model's
 *    chain of one-element instructions is 1 + dve.dependency_overhead = 101
 *    DVE cycles per instruction on both presets;
 *  - ScalarE: serially dependent tiny instructions issue "around 189 ns
 *    (264 ScalarE cycles on NC-v2)" and 222 ns (266 cycles) on NC-v3 (the
 *    NKI performance guide, Opt #5a): 1 + act.dependency_overhead = 264 / 266
 *    ACT cycles. The often-quoted 264-cycle chain is this ScalarE figure,
 *    not a VectorE one.
 * Independent one-element instructions issue one minimum interval (64
 * cycles) apart. */
static void dependent_chain_micro_figures(void **state) {
    (void)state;
    const char *presets[2] = {"trn2", "trn1"};
    const double act_published_ns[2] = {222.0, 189.0};
    for (int k = 0; k < 2; k++) {
        nx_machine m = test_machine(presets[k]);
        const double c = 1 / m.clock_ghz[NX_ENG_DVE];
        run_out o;
        nx_builder *b = nx_builder_new(&m.geo, 1);
        dve_chain(b, 100, 1);
        run_model(&m, b, &o);
        double per = o.r.total_ns / c / 100;
        assert_ns(o.r.total_ns, 100 * 101 * c);
        assert_true(fabs(per - 100) / 100 < 0.10);
        /* stalls: each waits 101 - 64 cycles for its predecessor */
        assert_ns(o.r.engine[0][NX_ENG_DVE].stall_ns, 99 * (101 - 64) * c);
        double last; /* 100 increments of 0 along the chain; the last one wrote offset 0 */
        test_sbuf_get(&o.st, 0, NX_DT_FP32, 0, 0, 1, &last);
        assert_true(last == 100.0);
        run_free(&o);
        /* independent: one per minimum interval, the last visible 101 later */
        b = nx_builder_new(&m.geo, 1);
        dve_chain(b, 100, 0);
        run_model(&m, b, &o);
        assert_ns(o.r.total_ns, (99 * 64 + 101) * c);
        run_free(&o);
        /* ScalarE */
        const double a = 1 / m.clock_ghz[NX_ENG_ACT];
        b = nx_builder_new(&m.geo, 1);
        act_chain(b, 100);
        run_model(&m, b, &o);
        double act_ns = o.r.total_ns / 100;
        assert_ns(o.r.total_ns, 100 * (1.0 + m.act_dependency_overhead) * a);
        assert_true(fabs(act_ns - act_published_ns[k]) / act_published_ns[k] < 0.10);
        test_sbuf_get(&o.st, 0, NX_DT_FP32, 0, 0, 1, &last);
        assert_true(last == 100.0);
        run_free(&o);
        /* with the public kernel library's fixed overhead of 144 cycles */
        m.dve_fixed_overhead = 144;
        b = nx_builder_new(&m.geo, 1);
        dve_chain(b, 10, 1);
        run_model(&m, b, &o);
        assert_ns(o.r.total_ns, 10 * (1 + 144 + 100) * c);
        run_free(&o);
    }
}

/* DVE memset of one element (visible at 1 + 100 DVE cycles) increments a
 * semaphore; ACT waits for it: it starts semaphore_latency_ns later. */
static void semaphore_latency(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    for (int k = 0; k < 2; k++) {
        m.semaphore_latency_ns = k ? 100.0 : 10.0;
        nx_builder *b = nx_builder_new(&m.geo, 1);
        uint32_t sem;
        nx_error err;
        assert_int_equal(nx_builder_semaphore(b, &sem, &err), 0);
        nx_insn ms = test_insn2(NX_OP_MEMSET, test_sb(NX_DT_FP32, 0, 1, 0, 1), nx_imm(2.0, NX_DT_FP32));
        nx_insn_inc(&ms, sem, 1);
        emit(b, NX_ENG_DVE, &ms);
        nx_insn cp = test_insn2(NX_OP_TENSOR_COPY, test_sb(NX_DT_FP32, 0, 1, 64, 1), test_sb(NX_DT_FP32, 0, 1, 0, 1));
        nx_insn_wait(&cp, sem, 1);
        emit(b, NX_ENG_ACT, &cp);
        run_out o;
        run_model(&m, b, &o);
        const nx_sim_record *w = rec(&o, NX_ENG_ACT, 0), *i = rec(&o, NX_ENG_DVE, 0);
        assert_ns(w->t_start_ns, 101 / 0.96 + m.semaphore_latency_ns);
        assert_ns(o.r.total_ns, 101 / 0.96 + m.semaphore_latency_ns + (1 + 265) / 1.2);
        assert_ns(o.r.engine[0][NX_ENG_ACT].stall_ns, w->t_start_ns);
        assert_int_equal(w->waited, 1);
        assert_true(i->inc_seq > 0 && i->inc_seq <= w->wait_seq);
        double got;
        test_sbuf_get(&o.st, 0, NX_DT_FP32, 0, 64, 1, &got);
        assert_true(got == 2.0);
        run_free(&o);
    }
}

/* Two independent instructions that both hold a shared resource. */
static void conflict_pair(const nx_machine *m, nx_engine e0, nx_insn i0, nx_engine e1, nx_insn i1,
                          double *s0, double *s1, double *b0, double *b1) {
    nx_builder *b = nx_builder_new(&m->geo, 1);
    emit(b, e0, &i0);
    emit(b, e1, &i1);
    run_out o;
    run_model(m, b, &o);
    *s0 = rec(&o, e0, 0)->t_start_ns;
    *s1 = rec(&o, e1, 0)->t_start_ns;
    *b0 = rec(&o, e0, 0)->busy_ns;
    *b1 = rec(&o, e1, 0)->busy_ns;
    run_free(&o);
}

static int serialised(double s0, double b0, double s1, double b1) {
    return s1 >= s0 + b0 - NS_TOL || s0 >= s1 + b1 - NS_TOL;
}

static void structural_conflicts(void **state) {
    (void)state;
    nx_machine v2 = test_machine("trn1"), v3 = test_machine("trn2");
    double s0, s1, b0, b1;
    /* DVE and POOL on SBUF, disjoint data: serialised on v2, parallel on v3 */
    nx_insn d = test_insn2(NX_OP_TENSOR_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 640), test_sb(NX_DT_FP32, 0, 128, 4096, 640));
    nx_insn p = test_insn2(NX_OP_TENSOR_COPY, test_sb(NX_DT_FP32, 0, 128, 8192, 640), test_sb(NX_DT_FP32, 0, 128, 12288, 640));
    conflict_pair(&v2, NX_ENG_DVE, d, NX_ENG_POOL, p, &s0, &s1, &b0, &b1);
    assert_ns(b0, 640 / 1.12);
    assert_ns(b1, (150 + 640) / 1.4);
    assert_true(serialised(s0, b0, s1, b1));
    assert_true(s0 == 0.0 || s1 == 0.0);
    conflict_pair(&v3, NX_ENG_DVE, d, NX_ENG_POOL, p, &s0, &s1, &b0, &b1);
    assert_true(s0 == 0.0 && s1 == 0.0);
    /* DVE and ACT reading PSUM: v2 serialises any banks; v3 only the same bank */
    nx_insn dv = test_insn2(NX_OP_TENSOR_COPY, test_sb(NX_DT_FP32, 0, 128, 0, 256), test_ps(NX_DT_FP32, 0, 128, 0, 256));
    nx_insn ac = test_insn2(NX_OP_TENSOR_COPY, test_sb(NX_DT_FP32, 0, 128, 4096, 256), test_ps(NX_DT_FP32, 0, 128, 4096, 256));
    conflict_pair(&v2, NX_ENG_DVE, dv, NX_ENG_ACT, ac, &s0, &s1, &b0, &b1);
    assert_true(serialised(s0, b0, s1, b1));
    conflict_pair(&v3, NX_ENG_DVE, dv, NX_ENG_ACT, ac, &s0, &s1, &b0, &b1);
    assert_true(s0 == 0.0 && s1 == 0.0); /* banks 0 and 2 */
    ac.op[1] = test_ps(NX_DT_FP32, 0, 128, 1024, 256); /* bank 0 too */
    conflict_pair(&v3, NX_ENG_DVE, dv, NX_ENG_ACT, ac, &s0, &s1, &b0, &b1);
    assert_true(serialised(s0, b0, s1, b1));
    assert_ns(b0, 256 / 0.96);
    assert_ns(b1, 256 / 1.2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pe_multiply_and_load),
        cmocka_unit_test(pe_transpose),
        cmocka_unit_test(dve_formulas),
        cmocka_unit_test(act_and_pool_formulas),
        cmocka_unit_test(dma_cost_and_rates),
        cmocka_unit_test(dma_alone_and_peak),
        cmocka_unit_test(conflict_access),
        cmocka_unit_test(model_one_instruction_per_engine),
        cmocka_unit_test(model_pe_pipeline_and_background_load),
        cmocka_unit_test(dependent_chain_micro_figures),
        cmocka_unit_test(semaphore_latency),
        cmocka_unit_test(structural_conflicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
