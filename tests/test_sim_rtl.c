/* `--pe rtl`: the SystemC model with the PE engine's load_stationary and
 * multiply_moving going through the Verilated RTL array (nx_sim_run_pe,
 * sim/model.h; docs/parts/rtl.md).
 *
 * One matmul program (bf16 and fp32 tiles, K = M = 128, N = 64, a second
 * multiply accumulating onto the first) runs on the model with the
 * functional PE and with the RTL PE from identical states: every byte of
 * SBUF, PSUM and HBM must be equal afterwards (the inputs avoid NaN, whose
 * payload the RTL canonicalises), and the PSUM values must match a plain
 * double-precision reference within fp32 accumulation error. The RTL run's
 * PE cycles must be those docs/parts/rtl.md states for the wrapper (load
 * R - 1, multiply N + R + C, R = C = 128) and its VCD must be written.
 * Runtime errors must read the same on both datapaths. Every PE matmul
 * kernel the host runs (isa/pe/datapath.h) must leave the model's state
 * equal to the RTL run's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/pe/datapath.h"
#include "sim/model.h"
#include "support.h"

enum { K = 128, M = 128, N = 64 };

/* SBUF layout (bytes per partition) and PSUM banks of the program */
typedef struct layout {
    uint64_t st_bf16, st_f32;       /* stationary [K, M] */
    uint64_t mv_bf16[2], mv_f32[2]; /* moving [K, N] */
    uint64_t ps_bf16, ps_f32;       /* dst [M, N] fp32 */
} layout;

static void emit(nx_builder *b, const nx_insn *in) {
    nx_error err;
    if (nx_builder_emit(b, 0, NX_ENG_PE, in, NULL, &err) != 0) fail_msg("emit: %s", err.msg);
}

static void emit_load(nx_builder *b, nx_dtype dt, uint64_t off) {
    nx_insn ld = nx_insn_make(NX_OP_LOAD_STATIONARY);
    ld.op[0] = nx_ap_tile(NX_OPK_SBUF, dt, 0, K, off, M);
    emit(b, &ld);
}

static void emit_multiply(nx_builder *b, nx_dtype dt, uint64_t mv_off, uint64_t ps_off, int acc) {
    nx_insn mm = nx_insn_make(NX_OP_MULTIPLY_MOVING);
    mm.op[0] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, M, ps_off, N);
    mm.op[1] = nx_ap_tile(NX_OPK_SBUF, dt, 0, K, mv_off, N);
    if (acc) mm.flags = NX_FLAG_ACCUMULATE;
    emit(b, &mm);
}

/* load bf16; mm; mm acc; load fp32; mm; mm acc (6 PE instructions) */
static void matmul_program(const nx_machine *m, nx_program *p, layout *l) {
    nx_builder *b = nx_builder_new(&m->geo, 1);
    nx_error err;
    if (nx_builder_sbuf_alloc(b, 0, M * 2, 64, &l->st_bf16, &err) != 0 ||
        nx_builder_sbuf_alloc(b, 0, M * 4, 64, &l->st_f32, &err) != 0 ||
        nx_builder_sbuf_alloc(b, 0, N * 2, 64, &l->mv_bf16[0], &err) != 0 ||
        nx_builder_sbuf_alloc(b, 0, N * 2, 64, &l->mv_bf16[1], &err) != 0 ||
        nx_builder_sbuf_alloc(b, 0, N * 4, 64, &l->mv_f32[0], &err) != 0 ||
        nx_builder_sbuf_alloc(b, 0, N * 4, 64, &l->mv_f32[1], &err) != 0 ||
        nx_builder_psum_alloc(b, 0, N * 4, &l->ps_bf16, &err) != 0 ||
        nx_builder_psum_alloc(b, 0, N * 4, &l->ps_f32, &err) != 0)
        fail_msg("alloc: %s", err.msg);
    emit_load(b, NX_DT_BF16, l->st_bf16);
    emit_multiply(b, NX_DT_BF16, l->mv_bf16[0], l->ps_bf16, 0);
    emit_multiply(b, NX_DT_BF16, l->mv_bf16[1], l->ps_bf16, 1);
    emit_load(b, NX_DT_FP32, l->st_f32);
    emit_multiply(b, NX_DT_FP32, l->mv_f32[0], l->ps_f32, 0);
    emit_multiply(b, NX_DT_FP32, l->mv_f32[1], l->ps_f32, 1);
    if (nx_builder_finish(b, p, &err) != 0) fail_msg("finish: %s", err.msg);
    nx_builder_free(b);
}

/* Values in [-1, 1) with some exact zeros of both signs and fp32 subnormals
 * (bf16 has fp32's exponent range), never NaN or Inf. */
static void random_values(test_rng *r, double *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t pick = test_rng_next(r) % 32;
        if (pick == 0) v[i] = 0.0;
        else if (pick == 1) v[i] = -0.0;
        else if (pick == 2) v[i] = test_rng_uniform(r, -1.0, 1.0) * 0x1p-127;
        else v[i] = test_rng_uniform(r, -1.0, 1.0);
    }
}

static void fill_rows(nx_state *st, test_rng *r, nx_dtype dt, uint64_t off, uint32_t rows, uint32_t n) {
    double v[M > N ? M : N];
    for (uint32_t p = 0; p < rows; p++) {
        random_values(r, v, n);
        test_sbuf_put(st, 0, dt, p, off, n, v);
    }
}

static void fill_inputs(nx_state *st, const layout *l, uint64_t seed) {
    test_rng r = {seed};
    fill_rows(st, &r, NX_DT_BF16, l->st_bf16, K, M);
    fill_rows(st, &r, NX_DT_FP32, l->st_f32, K, M);
    for (int i = 0; i < 2; i++) {
        fill_rows(st, &r, NX_DT_BF16, l->mv_bf16[i], K, N);
        fill_rows(st, &r, NX_DT_FP32, l->mv_f32[i], K, N);
    }
}

/* out[m][n] = sum over both multiplies of sum_k st[k][m] * mv_i[k][n], in
 * double, plus the sum of |terms| (the error bound's scale). */
static void reference(nx_state *st, nx_dtype dt, uint64_t st_off, const uint64_t mv_off[2], double *out,
                      double *mag) {
    static double w[K][M], x[2][K][N];
    for (uint32_t k = 0; k < K; k++) {
        test_sbuf_get(st, 0, dt, k, st_off, M, w[k]);
        for (int i = 0; i < 2; i++) test_sbuf_get(st, 0, dt, k, mv_off[i], N, x[i][k]);
    }
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            double s = 0.0, a = 0.0;
            for (int i = 0; i < 2; i++)
                for (uint32_t k = 0; k < K; k++) {
                    s += w[k][m] * x[i][k][n];
                    a += fabs(w[k][m] * x[i][k][n]);
                }
            out[m * N + n] = s;
            mag[m * N + n] = a;
        }
}

static void check_reference(nx_state *st, const layout *l) {
    static double want[M * N], mag[M * N], got[N];
    const struct {
        nx_dtype dt;
        uint64_t st_off, ps_off;
        const uint64_t *mv;
    } tiles[2] = {{NX_DT_BF16, l->st_bf16, l->ps_bf16, l->mv_bf16}, {NX_DT_FP32, l->st_f32, l->ps_f32, l->mv_f32}};
    for (int t = 0; t < 2; t++) {
        reference(st, tiles[t].dt, tiles[t].st_off, tiles[t].mv, want, mag);
        for (uint32_t m = 0; m < M; m++) {
            test_psum_get(st, 0, NX_DT_FP32, m, tiles[t].ps_off, N, got);
            for (uint32_t n = 0; n < N; n++) {
                /* 2K + 1 fp32 roundings of partial sums bounded by mag */
                double tol = (2.0 * K + 2.0) * 0x1p-24 * mag[m * N + n] + 0x1p-149;
                if (fabs(got[n] - want[m * N + n]) > tol)
                    fail_msg("%s tile psum[%u][%u] = %.9g, reference %.9g (tolerance %.3g)",
                             t ? "fp32" : "bf16", m, n, got[n], want[m * N + n], tol);
            }
        }
    }
}

static void assert_states_equal(const nx_state *a, const nx_state *b) {
    size_t sbuf = (size_t)a->geo.partitions * a->geo.sbuf_partition_bytes;
    size_t psum = (size_t)a->geo.partitions * a->geo.psum_partition_bytes;
    assert_memory_equal(a->core[0].psum, b->core[0].psum, psum);
    assert_memory_equal(a->core[0].sbuf, b->core[0].sbuf, sbuf);
    assert_int_equal(a->hbm_bytes, b->hbm_bytes);
    if (a->hbm_bytes) assert_memory_equal(a->hbm, b->hbm, a->hbm_bytes);
    assert_int_equal(a->core[0].stationary_k, b->core[0].stationary_k);
    assert_int_equal(a->core[0].stationary_m, b->core[0].stationary_m);
    assert_memory_equal(a->core[0].stationary, b->core[0].stationary,
                        (size_t)a->geo.pe_rows * a->geo.pe_cols * sizeof(float));
}

static void run(const nx_machine *m, const nx_program *p, nx_state *st, const nx_sim_pe_options *pe,
                nx_sim_result *r) {
    nx_sim_options opt = {1, 0};
    nx_error err;
    if (nx_sim_run_pe(m, p, st, &opt, pe, r, &err) != 0) fail_msg("run: %s", err.msg);
}

static void rtl_equals_model(void **state) {
    (void)state;
    const char *vcd = "test_sim_rtl.vcd";
    nx_machine m = test_machine("trn2");
    nx_program p;
    layout l;
    matmul_program(&m, &p, &l);
    nx_state st_model, st_rtl;
    test_state(&st_model, 1, p.hbm_bytes, p.sem_count);
    test_state(&st_rtl, 1, p.hbm_bytes, p.sem_count);
    fill_inputs(&st_model, &l, 7);
    fill_inputs(&st_rtl, &l, 7);

    nx_sim_result rm, rr;
    run(&m, &p, &st_model, NULL, &rm);
    remove(vcd);
    nx_sim_pe_options pe = {1, vcd};
    run(&m, &p, &st_rtl, &pe, &rr);

    assert_states_equal(&st_model, &st_rtl);
    check_reference(&st_rtl, &l);

    /* docs/parts/rtl.md (nx_rtl_pe): load R - 1 cycles, multiply N + R + C */
    const uint64_t R = 128, C = 128;
    const uint64_t want[6] = {R - 1, N + R + C, N + R + C, R - 1, N + R + C, N + R + C};
    const double ghz = m.clock_ghz[NX_ENG_PE];
    uint32_t seen = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < rr.log_count; i++) {
        const nx_sim_record *rec = &rr.log[i];
        if (rec->engine != NX_ENG_PE || rec->queue != -1) continue;
        assert_true(rec->index < 6);
        double cyc = rec->busy_ns * ghz, span = (rec->t_end_ns - rec->t_start_ns) * ghz;
        assert_true(fabs(cyc - round(cyc)) < 1e-3);
        assert_int_equal((uint64_t)llround(cyc), want[rec->index]);
        assert_int_equal((uint64_t)llround(span), want[rec->index]);
        total += want[rec->index];
        seen |= 1u << rec->index;
    }
    assert_int_equal(seen, 0x3f);
    double pe_cycles = rr.engine[0][NX_ENG_PE].busy_ns * ghz;
    assert_int_equal((uint64_t)llround(pe_cycles), total);
    assert_int_equal(rr.flops, rm.flops);
    /* the model's cost formulas differ from the RTL's cycles: the RTL ran */
    assert_true(llround(rm.engine[0][NX_ENG_PE].busy_ns * ghz) != (long long)total);

    FILE *f = fopen(vcd, "rb");
    assert_non_null(f);
    char head[16] = {0};
    size_t got = fread(head, 1, sizeof head - 1, f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_true(got >= 5);
    assert_true(strncmp(head, "$date", 5) == 0 || strncmp(head, "$version", 8) == 0);
    assert_true(size > 4096); /* more than a header: the run's value changes */
    remove(vcd);

    nx_sim_result_free(&rm);
    nx_sim_result_free(&rr);
    nx_state_free(&st_model);
    nx_state_free(&st_rtl);
    nx_program_free(&p);
}

/* Every PE matmul kernel this host runs (isa/pe/datapath.h, forced with
 * NXSIM_MM_KERNEL) leaves the model's state byte for byte equal to the RTL
 * run's. */
static void every_kernel_equals_rtl(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_program p;
    layout l;
    matmul_program(&m, &p, &l);
    nx_state st_rtl;
    test_state(&st_rtl, 1, p.hbm_bytes, p.sem_count);
    fill_inputs(&st_rtl, &l, 13);
    nx_sim_result rr;
    nx_sim_pe_options pe = {1, NULL};
    run(&m, &p, &st_rtl, &pe, &rr);
    const char *saved = getenv("NXSIM_MM_KERNEL");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    int ran = 0;
    for (int k = 0; k < NX_PE_KERNEL_COUNT; k++) {
        if (!nx_pe_kernel_available((nx_pe_kernel)k)) continue;
        assert_int_equal(setenv("NXSIM_MM_KERNEL", nx_pe_kernel_name((nx_pe_kernel)k), 1), 0);
        nx_state st;
        test_state(&st, 1, p.hbm_bytes, p.sem_count);
        fill_inputs(&st, &l, 13);
        nx_sim_result rm;
        run(&m, &p, &st, NULL, &rm);
        assert_states_equal(&st, &st_rtl);
        nx_sim_result_free(&rm);
        nx_state_free(&st);
        ran++;
    }
    assert_true(ran >= 2); /* scalar and vector run everywhere */
    if (saved) setenv("NXSIM_MM_KERNEL", keep, 1);
    else unsetenv("NXSIM_MM_KERNEL");
    nx_sim_result_free(&rr);
    nx_state_free(&st_rtl);
    nx_program_free(&p);
}

/* A signalling NaN with a payload in one moving column: every result of that
 * column is the canonical quiet NaN 0x7fc00000 on both datapaths (the model
 * canonicalises NaN results as the RTL array does; x86 alone would return the
 * quietened payload 0x7fe00001), and every other byte is equal. */
static void nan_results_are_canonical_on_both(void **state) {
    (void)state;
    const uint32_t nan_col = 5;
    const uint32_t payload_nan = 0x7fa00001u; /* signalling, payload 0x200001 */
    nx_machine m = test_machine("trn2");
    nx_program p;
    layout l;
    matmul_program(&m, &p, &l);
    nx_state st[2];
    for (int i = 0; i < 2; i++) {
        test_state(&st[i], 1, p.hbm_bytes, p.sem_count);
        fill_inputs(&st[i], &l, 11);
        memcpy(nx_sbuf_at(&st[i], 0, 3, l.mv_f32[0] + nan_col * 4), &payload_nan, 4);
    }
    nx_sim_result r[2];
    nx_sim_pe_options pe[2] = {{0, NULL}, {1, NULL}};
    for (int i = 0; i < 2; i++) run(&m, &p, &st[i], &pe[i], &r[i]);
    for (uint32_t row = 0; row < M; row++) {
        for (uint32_t n = 0; n < N; n++) {
            uint32_t bits[2];
            for (int i = 0; i < 2; i++) memcpy(&bits[i], nx_psum_at(&st[i], 0, row, l.ps_f32 + n * 4), 4);
            /* both datapaths give the canonical quiet NaN, not x86's
             * quieted payload 0x7fe00001 */
            if (n == nan_col) assert_int_equal(bits[0], 0x7fc00000u);
            assert_int_equal(bits[0], bits[1]);
        }
        /* the bf16 tile has no NaN: equal */
        assert_memory_equal(nx_psum_at(&st[0], 0, row, l.ps_bf16), nx_psum_at(&st[1], 0, row, l.ps_bf16), N * 4);
    }
    for (int i = 0; i < 2; i++) {
        nx_sim_result_free(&r[i]);
        nx_state_free(&st[i]);
    }
    nx_program_free(&p);
}

/* A multiply with no stationary tile: the same message on both datapaths. */
static void errors_match_model(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_error err_model, err_rtl;
    uint64_t mv, ps;
    if (nx_builder_sbuf_alloc(b, 0, N * 4, 64, &mv, &err_model) != 0 ||
        nx_builder_psum_alloc(b, 0, N * 4, &ps, &err_model) != 0)
        fail_msg("alloc: %s", err_model.msg);
    emit_multiply(b, NX_DT_FP32, mv, ps, 0);
    nx_program p;
    if (nx_builder_finish(b, &p, &err_model) != 0) fail_msg("finish: %s", err_model.msg);
    nx_builder_free(b);
    nx_state st;
    test_state(&st, 1, p.hbm_bytes, p.sem_count);
    nx_sim_options opt = {0, 0};
    nx_sim_result r;
    nx_sim_pe_options model = {0, NULL}, rtl = {1, NULL};
    assert_int_equal(nx_sim_run_pe(&m, &p, &st, &opt, &model, &r, &err_model), -1);
    assert_int_equal(nx_sim_run_pe(&m, &p, &st, &opt, &rtl, &r, &err_rtl), -1);
    assert_non_null(strstr(err_model.msg, "no stationary tile"));
    assert_string_equal(err_model.msg, err_rtl.msg);

    /* a waveform needs the RTL */
    nx_sim_pe_options bad = {0, "never.vcd"};
    assert_int_equal(nx_sim_run_pe(&m, &p, &st, &opt, &bad, &r, &err_rtl), -1);
    assert_non_null(strstr(err_rtl.msg, "needs pe_rtl"));
    nx_state_free(&st);
    nx_program_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rtl_equals_model),
        cmocka_unit_test(every_kernel_equals_rtl),
        cmocka_unit_test(nan_results_are_canonical_on_both),
        cmocka_unit_test(errors_match_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
