/* The documented micro-figures on the model (bench/micro_figures.h). */
#include "micro_figures.h"

#include <stdio.h>
#include <string.h>

#include "isa/builder.h"
#include "isa/state.h"
#include "kernels/author/author.h"
#include "kernels/tutorial/tut_common.h"
#include "sim/machine.h"
#include "sim/model.h"

/* Runs program p (built by b) on machine m with the log kept; fills *r.
 * The caller frees r and st. */
static int run(const nx_machine *m, nx_builder *b, nx_program *p, nx_state *st, nx_sim_result *r, nx_error *err) {
    int rc = nx_builder_finish(b, p, err);
    nx_builder_free(b);
    if (rc != 0) return -1;
    if (nx_state_init(st, &m->geo, p->cores, p->hbm_bytes, p->sem_count, err) != 0) {
        nx_program_free(p);
        return -1;
    }
    nx_sim_options opt = {1, 0};
    memset(r, 0, sizeof *r);
    if (nx_sim_run(m, p, st, &opt, r, err) != 0) {
        nx_state_free(st);
        nx_program_free(p);
        return -1;
    }
    return 0;
}

static void done(nx_program *p, nx_state *st, nx_sim_result *r) {
    nx_sim_result_free(r);
    nx_state_free(st);
    nx_program_free(p);
}

static void line(const char *name, double sim, double published, const char *unit, const char *note) {
    printf("micro %s: simulated %.1f %s, published %.1f %s, ratio %.3f%s%s\n", name, sim, unit, published, unit,
           sim / published, note ? "  " : "", note ? note : "");
}

static int load(const char *preset, nx_machine *m, nx_error *err) { return nx_machine_load(preset, m, err); }

/* A[4, 4096] bf16 HBM -> SBUF on one queue: the transfer's data phase. */
static int dma_32k(nx_error *err) {
    nx_machine m;
    if (load("trn2", &m, err) != 0) return -1;
    nx_builder *b = nx_builder_new(&m.geo, 1);
    uint64_t shape[2] = {4, 4096}, src;
    if (!b || nx_builder_tensor(b, "A", NX_DT_BF16, 2, shape, NX_ROLE_INPUT, &src, err) != 0) {
        nx_builder_free(b);
        return b ? -1 : nx_fail(err, "out of memory");
    }
    nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
    d.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 4, 0, 4096);
    d.op[1] = nx_ap_hbm_rows(NX_DT_BF16, src, 4, 4096, 4096);
    if (nx_builder_emit(b, 0, NX_ENG_SP, &d, NULL, err) != 0) {
        nx_builder_free(b);
        return -1;
    }
    nx_program p;
    nx_state st;
    nx_sim_result r;
    if (run(&m, b, &p, &st, &r, err) != 0) return -1;
    double busy = 0;
    for (size_t i = 0; i < r.log_count; i++)
        if (r.log[i].queue >= 0) busy = r.log[i].busy_ns;
    line("dma-32k-one-engine (trn2)", busy, 1416.0, "ns",
         "(the transfer's data phase: 32 KiB at 23 B/ns; its 1300 ns trigger-to-start latency comes before)");
    done(&p, &st, &r);
    return 0;
}

/* A[128, 128] bf16 through the tutorial kernels' load helper. */
static int dma_spread(nx_error *err) {
    nx_machine m;
    if (load("trn2", &m, err) != 0) return -1;
    nx_builder *b = nx_builder_new(&m.geo, 1);
    uint64_t shape[2] = {128, 128}, src;
    nx_kctx *k = NULL;
    int rc = -1;
    if (!b) return nx_fail(err, "out of memory");
    if (nx_builder_tensor(b, "A", NX_DT_BF16, 2, shape, NX_ROLE_INPUT, &src, err) != 0) goto out;
    k = nx_kctx_new(b, 0, 1);
    if (!k) {
        nx_fail(err, "out of memory");
        goto out;
    }
    nx_tile t;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "A", NX_DT_BF16, 128, 128, &t, err) != 0) goto out;
    tut tt;
    memset(&tt, 0, sizeof tt);
    tt.k = k;
    tt.engines = m.geo.dma_engines;
    tt.groups = 1;
    tt.share = m.geo.partitions / m.geo.dma_engines;
    nx_operand dst = nx_tile_ap(&t), s = nx_ap_hbm_rows(NX_DT_BF16, src, 128, 128, 128);
    if (tut_dma(&tt, &dst, &s, err) != 0 || nx_kctx_finish(k, err) != 0) goto out;
    nx_kctx_free(k);
    k = NULL;
    nx_program p;
    nx_state st;
    nx_sim_result r;
    if (run(&m, b, &p, &st, &r, err) != 0) return -1;
    b = NULL;
    uint32_t transfers = 0, engines = 0;
    uint64_t bytes = 0;
    double data_ns = 0;
    for (size_t i = 0; i < r.log_count; i++) {
        const nx_sim_record *x = &r.log[i];
        if (x->queue < 0) continue;
        transfers++;
        bytes = x->bytes;
        data_ns = x->busy_ns;
        engines |= 1u << nx_dma_queue_engine(&m.geo, (uint32_t)x->queue);
    }
    char note[160];
    snprintf(note, sizeof note, "(of %llu B each on %d engines, %.0f ns of data each at 256 B per row)", (unsigned long long)bytes, __builtin_popcount(engines), data_ns);
    line("dma-128x128-spread (trn2)", transfers, 16.0, "transfers", note);
    done(&p, &st, &r);
    rc = 0;
out:
    nx_kctx_free(k);
    nx_builder_free(b);
    return rc;
}

/* n one-element dependent instructions on engine e (ACT activation or DVE
 * tensor_scalar), each reading the previous one's result: ns per instruction. */
static int chain(const nx_machine *m, nx_engine e, int n, double *per_ns, nx_error *err) {
    nx_builder *b = nx_builder_new(&m->geo, 1);
    if (!b) return nx_fail(err, "out of memory");
    for (int i = 0; i < n; i++) {
        nx_insn in = nx_insn_make(e == NX_ENG_ACT ? NX_OP_ACTIVATION : NX_OP_TENSOR_SCALAR);
        in.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, (uint64_t)((i + 1) & 1) * 4, 1);
        in.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, (uint64_t)(i & 1) * 4, 1);
        in.op[2] = nx_imm(1.0, NX_DT_FP32);
        if (e == NX_ENG_ACT) {
            in.func = NX_ACT_IDENTITY;
            in.op[3] = nx_imm(1.0, NX_DT_FP32);
        } else {
            in.alu0 = NX_ALU_ADD;
        }
        if (nx_builder_emit(b, 0, e, &in, NULL, err) != 0) {
            nx_builder_free(b);
            return -1;
        }
    }
    nx_program p;
    nx_state st;
    nx_sim_result r;
    if (run(m, b, &p, &st, &r, err) != 0) return -1;
    *per_ns = r.total_ns / n;
    done(&p, &st, &r);
    return 0;
}

static int chains(nx_error *err) {
    nx_machine m;
    double per;
    if (load("trn1", &m, err) != 0 || chain(&m, NX_ENG_ACT, 200, &per, err) != 0) return -1;
    line("act-dependent-chain (trn1)", per, 189.0, "ns", "(NKI performance guide: 264 ScalarE cycles at 1.4 GHz)");
    if (load("trn2", &m, err) != 0 || chain(&m, NX_ENG_ACT, 200, &per, err) != 0) return -1;
    line("act-dependent-chain (trn2)", per, 222.0, "ns", "(the guide's v3 figure: 266 ScalarE cycles at 1.2 GHz)");
    static const char *const presets[2] = {"trn1", "trn2"};
    for (int i = 0; i < 2; i++) {
        if (load(presets[i], &m, err) != 0 || chain(&m, NX_ENG_DVE, 200, &per, err) != 0) return -1;
        char name[64];
        snprintf(name, sizeof name, "dve-dependent-chain (%s)", presets[i]);
        line(name, per * m.clock_ghz[NX_ENG_DVE], 100.0, "DVE cycles",
             "(architecture guide: a static overhead of about 100 cycles per dependent instruction; one element)");
    }
    return 0;
}

/* load_stationary [128, 128] bf16 then multiply_moving of N = 128: PE cycles of each. */
static int fast_load(nx_error *err) {
    nx_machine m;
    if (load("trn1", &m, err) != 0) return -1;
    m.pe_background_load = 0; /* the load's own cost, not hidden under a multiply */
    nx_builder *b = nx_builder_new(&m.geo, 1);
    if (!b) return nx_fail(err, "out of memory");
    nx_insn ls = nx_insn_make(NX_OP_LOAD_STATIONARY);
    ls.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 128, 0, 128);
    nx_insn mm = nx_insn_make(NX_OP_MULTIPLY_MOVING);
    mm.op[0] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 128, 0, 128);
    mm.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 128, 256, 128);
    if (nx_builder_emit(b, 0, NX_ENG_PE, &ls, NULL, err) != 0 || nx_builder_emit(b, 0, NX_ENG_PE, &mm, NULL, err) != 0) {
        nx_builder_free(b);
        return -1;
    }
    nx_program p;
    nx_state st;
    nx_sim_result r;
    if (run(&m, b, &p, &st, &r, err) != 0) return -1;
    double ls_ns = 0, mm_ns = 0;
    for (size_t i = 0; i < r.log_count; i++) {
        const nx_sim_record *x = &r.log[i];
        if (x->engine != NX_ENG_PE || x->queue >= 0) continue;
        if (x->opcode == NX_OP_LOAD_STATIONARY) ls_ns = x->busy_ns;
        if (x->opcode == NX_OP_MULTIPLY_MOVING) mm_ns = x->busy_ns;
    }
    char note[128];
    snprintf(note, sizeof note, "(load_stationary %.0f, multiply_moving %.0f PE cycles, free size 128)",
             ls_ns * m.clock_ghz[NX_ENG_PE], mm_ns * m.clock_ghz[NX_ENG_PE]);
    line("fast-load-stationary (trn1)", ls_ns > 0 ? mm_ns / ls_ns : 0.0, 4.0, "x (multiply / load)", note);
    done(&p, &st, &r);
    return 0;
}

int nx_bench_micro_figures(void) {
    nx_error err;
    int (*const cases[])(nx_error *) = {dma_32k, dma_spread, chains, fast_load};
    int status = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i](&err) != 0) {
            printf("micro: error: %s\n", err.msg);
            status = -1;
        }
    return status;
}
