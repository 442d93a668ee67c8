/* The two-core VNC grid on the model: one stream set per core, shared HBM,
 * core_barrier. Each core writes its half of a shared HBM tensor, passes a
 * barrier, reads the other core's half and transforms it, for several
 * rounds; the values are exact, equal to the functional executor's, and the
 * barrier timing follows barrier_latency_ns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "sim/model.h"
#include "support.h"

enum { P = 128, F = 64, ROUNDS = 3 };

static void emit(nx_builder *b, uint32_t core, nx_engine e, const nx_insn *in) {
    nx_error err;
    if (nx_builder_emit(b, core, e, in, NULL, &err) != 0) fail_msg("emit: %s", err.msg);
}

static uint32_t sem(nx_builder *b) {
    uint32_t s;
    nx_error err;
    if (nx_builder_semaphore(b, &s, &err) != 0) fail_msg("%s", err.msg);
    return s;
}

static nx_operand tile(uint64_t off) { return nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, P, off, F); }

/* Barrier engines per round and core: SP on both, then POOL / ACT, then DVE / SP. */
static const nx_engine barrier_engine[ROUNDS][2] = {
    {NX_ENG_SP, NX_ENG_SP}, {NX_ENG_POOL, NX_ENG_ACT}, {NX_ENG_DVE, NX_ENG_SP}};

static void build(const nx_geometry *geo, nx_program *prog, uint64_t *out_off) {
    nx_builder *b = nx_builder_new(geo, 2);
    nx_error err;
    uint64_t shared_off[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        char name[16];
        snprintf(name, sizeof name, "shared%d", r);
        uint64_t shape[2] = {2 * P, F};
        if (nx_builder_tensor(b, name, NX_DT_FP32, 2, shape, NX_ROLE_SCRATCH, &shared_off[r], &err) != 0)
            fail_msg("%s", err.msg);
    }
    uint64_t shape[2] = {2 * P, F};
    if (nx_builder_tensor(b, "out", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, out_off, &err) != 0)
        fail_msg("%s", err.msg);
    uint32_t ready[ROUNDS + 1], written[ROUNDS], passed[ROUNDS], got[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        ready[r] = sem(b);
        written[r] = sem(b);
        passed[r] = sem(b);
        got[r] = sem(b);
    }
    ready[ROUNDS] = sem(b);
    for (uint32_t c = 0; c < 2; c++) {
        /* S_0 = 10000 c + 64 p + e */
        const int32_t one = 1;
        const uint32_t n = F;
        nx_insn io = nx_insn_make(NX_OP_IOTA);
        io.op[0] = tile(0);
        io.op[1] = nx_pattern(10000 * (int64_t)c, F, P, 1, &one, &n);
        nx_insn_inc(&io, ready[0], 1);
        emit(b, c, NX_ENG_POOL, &io);
        for (int r = 0; r < ROUNDS; r++) {
            uint64_t s_off = (uint64_t)r * 2 * F * 4, t_off = s_off + F * 4, next = s_off + 2 * F * 4;
            nx_insn w = nx_insn_make(NX_OP_DMA_COPY);
            w.op[0] = nx_ap_hbm_rows(NX_DT_FP32, shared_off[r] + (uint64_t)c * P * F * 4, P, F, F);
            w.op[1] = tile(s_off);
            w.iparam[0] = 0;
            nx_insn_wait(&w, ready[r], 1);
            nx_insn_inc(&w, written[r], 1);
            emit(b, c, NX_ENG_SP, &w);
            nx_insn bar = nx_insn_make(NX_OP_CORE_BARRIER);
            nx_insn_wait(&bar, written[r], 1);
            nx_insn_inc(&bar, passed[r], 1);
            emit(b, c, barrier_engine[r][c], &bar);
            nx_insn rd = nx_insn_make(NX_OP_DMA_COPY);
            rd.op[0] = tile(t_off);
            rd.op[1] = nx_ap_hbm_rows(NX_DT_FP32, shared_off[r] + (uint64_t)(1 - c) * P * F * 4, P, F, F);
            rd.iparam[0] = 17;
            nx_insn_wait(&rd, passed[r], 1);
            nx_insn_inc(&rd, got[r], 1);
            emit(b, c, NX_ENG_SP, &rd);
            /* S_{r+1} = 2 T_r + c */
            nx_insn ts = nx_insn_make(NX_OP_TENSOR_SCALAR);
            ts.alu0 = NX_ALU_MULTIPLY;
            ts.alu1 = NX_ALU_ADD;
            ts.op[0] = tile(next);
            ts.op[1] = tile(t_off);
            ts.op[2] = nx_imm(2.0, NX_DT_FP32);
            ts.op[3] = nx_imm((double)c, NX_DT_FP32);
            nx_insn_wait(&ts, got[r], 1);
            nx_insn_inc(&ts, ready[r + 1], 1);
            emit(b, c, NX_ENG_DVE, &ts);
        }
        nx_insn st = nx_insn_make(NX_OP_DMA_COPY);
        st.op[0] = nx_ap_hbm_rows(NX_DT_FP32, *out_off + (uint64_t)c * P * F * 4, P, F, F);
        st.op[1] = tile((uint64_t)ROUNDS * 2 * F * 4);
        st.iparam[0] = 3;
        nx_insn_wait(&st, ready[ROUNDS], 1);
        emit(b, c, NX_ENG_SP, &st);
    }
    if (nx_builder_finish(b, prog, &err) != 0) fail_msg("finish: %s", err.msg);
    nx_builder_free(b);
}

static void barrier_ordered_exchange(void **state) {
    (void)state;
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    nx_program prog;
    uint64_t out_off;
    build(&m.geo, &prog, &out_off);
    nx_state st, ref;
    if (nx_state_init(&st, &m.geo, 2, prog.hbm_bytes, prog.sem_count, &err) != 0 ||
        nx_state_init(&ref, &m.geo, 2, prog.hbm_bytes, prog.sem_count, &err) != 0)
        fail_msg("%s", err.msg);
    nx_sim_options opt = {1, 0};
    nx_sim_result r;
    if (nx_sim_run(&m, &prog, &st, &opt, &r, &err) != 0) fail_msg("model: %s", err.msg);
    if (nx_exec_program(&prog, &ref, &err) != 0) fail_msg("functional: %s", err.msg);

    /* exact values: v_0[c] = 10000 c + 64 p + e, v_{r+1}[c] = 2 v_r[1-c] + c */
    for (uint32_t c = 0; c < 2; c++)
        for (uint32_t p = 0; p < P; p++)
            for (uint32_t e = 0; e < F; e++) {
                double v[2] = {64.0 * p + e, 10000.0 + 64.0 * p + e};
                for (int k = 0; k < ROUNDS; k++) {
                    double n0 = 2 * v[1] + 0, n1 = 2 * v[0] + 1;
                    v[0] = n0;
                    v[1] = n1;
                }
                float got;
                memcpy(&got, st.hbm + out_off + ((uint64_t)(c * P + p) * F + e) * 4, 4);
                if ((double)got != v[c]) fail_msg("out[%u][%u][%u] = %g, want %g", c, p, e, got, v[c]);
            }
    /* the functional executor agrees on every byte */
    assert_memory_equal(st.hbm, ref.hbm, prog.hbm_bytes);
    for (uint32_t c = 0; c < 2; c++) {
        assert_memory_equal(st.core[c].sbuf, ref.core[c].sbuf, (size_t)m.geo.partitions * m.geo.sbuf_partition_bytes);
        assert_memory_equal(st.core[c].sems, ref.core[c].sems, prog.sem_count * sizeof(uint32_t));
        assert_int_equal(st.core[c].barriers_done, ROUNDS);
        assert_int_equal(ref.core[c].barriers_done, ROUNDS);
    }

    /* timing: a core passes barrier k once the other core's arrival is
     * visible, barrier_latency_ns after it; both arrive together here (the
     * program is symmetric), so each passes 250 ns after arriving. The
     * arrival is the semaphore of its write: write end + 10 ns. */
    for (int k = 0; k < ROUNDS; k++) {
        const nx_sim_record *bar[2] = {NULL, NULL}, *wr[2] = {NULL, NULL};
        for (uint32_t c = 0; c < 2; c++) {
            /* round k's barrier is the core's k-th by time (rounds are sequential);
             * its write is the core's k-th transfer on queue 0 (records of a core's
             * transfers are in issue order) */
            int nb = 0, nw = 0;
            const nx_sim_record *bars[ROUNDS] = {NULL};
            for (size_t i = 0; i < r.log_count; i++) {
                const nx_sim_record *q = &r.log[i];
                if (q->core != c) continue;
                if (q->opcode == NX_OP_CORE_BARRIER && nb < ROUNDS) bars[nb++] = q;
                if (q->queue == 0 && nw++ == k) wr[c] = q;
            }
            assert_int_equal(nb, ROUNDS);
            for (int x = 0; x < ROUNDS; x++) {
                int before = 0;
                for (int y = 0; y < ROUNDS; y++) before += bars[y]->t_start_ns < bars[x]->t_start_ns;
                if (before == k) bar[c] = bars[x];
            }
            assert_int_equal(bar[c]->engine, barrier_engine[k][c]);
        }
        assert_non_null(bar[0]);
        assert_non_null(bar[1]);
        assert_non_null(wr[0]);
        assert_non_null(wr[1]);
        for (uint32_t c = 0; c < 2; c++) {
            double arrive_self = wr[c]->t_end_ns + 10.0, arrive_other = wr[1 - c]->t_end_ns + 10.0;
            double want = fmax(arrive_self, arrive_other + 250.0);
            if (fabs(bar[c]->t_start_ns - want) > 1e-3)
                fail_msg("round %d core %u passes at %.3f ns, want %.3f", k, c, bar[c]->t_start_ns, want);
            assert_int_equal(bar[c]->waited, 1);
            /* happens-before: it saw the other core's arrival */
            assert_true(bar[1 - c]->inc_seq > 0);
            assert_true(bar[c]->wait_seq >= bar[1 - c]->inc_seq);
        }
    }
    printf("2-core exchange, %d rounds: %.1f ns simulated\n", ROUNDS, r.total_ns);
    nx_sim_result_free(&r);
    nx_state_free(&st);
    nx_state_free(&ref);
    nx_program_free(&prog);
}

/* The barrier latency is a machine parameter. */
static void barrier_latency_parameter(void **state) {
    (void)state;
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    double total[2];
    for (int k = 0; k < 2; k++) {
        m.barrier_latency_ns = k ? 1000.0 : 250.0;
        nx_builder *b = nx_builder_new(&m.geo, 2);
        for (uint32_t c = 0; c < 2; c++) {
            nx_insn bar = nx_insn_make(NX_OP_CORE_BARRIER);
            emit(b, c, NX_ENG_ACT, &bar);
        }
        nx_program prog;
        if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s", err.msg);
        nx_builder_free(b);
        nx_state st;
        if (nx_state_init(&st, &m.geo, 2, prog.hbm_bytes, prog.sem_count, &err) != 0) fail_msg("%s", err.msg);
        nx_sim_options opt = {0, 0};
        nx_sim_result r;
        if (nx_sim_run(&m, &prog, &st, &opt, &r, &err) != 0) fail_msg("%s", err.msg);
        total[k] = r.total_ns;
        nx_sim_result_free(&r);
        nx_state_free(&st);
        nx_program_free(&prog);
    }
    /* arrive at 0, pass at the latency, then one ACT cycle */
    assert_true(fabs(total[0] - (250.0 + 1 / 1.2)) < 1e-3);
    assert_true(fabs(total[1] - (1000.0 + 1 / 1.2)) < 1e-3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(barrier_ordered_exchange),
        cmocka_unit_test(barrier_latency_parameter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
