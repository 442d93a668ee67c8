/* The model computes what the functional executor computes, bit for bit: the
 * same builder-made programs run on both, then HBM, every core's SBUF and
 * PSUM, the semaphores and the barrier counts are compared byte for byte.
 *
 * Programs are race-free by construction: they are written as a list of
 * instructions in a logical order and an "author" below adds the
 * synchronisation from the footprints (isa/validate.h): every compute
 * engine and every DMA queue counts its completed instructions on a
 * semaphore of its own, and an instruction that conflicts with earlier ones
 * on other engines or queues first waits for their counts (extra waits go on
 * nops in front of it). The programs: one covering every opcode, random
 * programs of every engine on one and two cores on both presets, and a
 * thousand small ones in one process (the platform is elaborated once). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/asm.h"
#include "isa/builder.h"
#include "isa/exec.h"
#include "isa/opcodes.h"
#include "isa/validate.h"
#include "sim/model.h"
#include "support.h"

/* ---- the author: logical order -> race-free program --------------------- */

enum { QUEUE_SET = 6, DOMAINS = 4 + QUEUE_SET, MAX_OPS = 4096 };
static const uint32_t queue_set[QUEUE_SET] = {0, 1, 2, 17, 40, 255};

typedef struct logged_op {
    int domain;
    uint32_t seq; /* 1-based position in its domain */
    int nfp;
    nx_footprint fp[NX_MAX_OPERANDS];
} logged_op;

typedef struct author {
    nx_builder *b;
    uint32_t cores;
    uint32_t sem[DOMAINS];
    uint32_t count[NX_MAX_CORES][DOMAINS];
    uint32_t satisfied[NX_MAX_CORES][NX_ENG_COUNT][DOMAINS];
    logged_op *ops[NX_MAX_CORES];
    int nops[NX_MAX_CORES];
    int ended[NX_MAX_CORES][NX_ENG_COUNT];
    test_coverage seen;
} author;

static void author_init(author *a, const nx_geometry *geo, uint32_t cores) {
    memset(a, 0, sizeof *a);
    a->b = nx_builder_new(geo, cores);
    assert_non_null(a->b);
    a->cores = cores;
    nx_error err;
    for (int d = 0; d < DOMAINS; d++)
        if (nx_builder_semaphore(a->b, &a->sem[d], &err) != 0) fail_msg("%s", err.msg);
    for (uint32_t c = 0; c < cores; c++) {
        a->ops[c] = calloc(MAX_OPS, sizeof(logged_op));
        assert_non_null(a->ops[c]);
    }
}

static void author_free(author *a) {
    for (uint32_t c = 0; c < a->cores; c++) free(a->ops[c]);
    if (a->b) nx_builder_free(a->b);
    a->b = NULL;
}

static int queue_domain(uint32_t q) {
    for (int i = 0; i < QUEUE_SET; i++)
        if (queue_set[i] == q) return 4 + i;
    fail_msg("queue %u is not in the test's queue set", q);
    return -1;
}

static int boxes_conflict(const nx_footprint *x, const nx_footprint *y) {
    if (!(x->write || y->write) || x->kind != y->kind) return 0;
    if (x->lo >= y->hi || y->lo >= x->hi) return 0;
    if (x->kind == NX_OPK_HBM) return 1;
    return x->p_lo < y->p_hi && y->p_lo < x->p_hi;
}

static void emit_raw(author *a, uint32_t core, nx_engine e, const nx_insn *in) {
    nx_error err;
    if (nx_builder_emit(a->b, core, e, in, NULL, &err) != 0) {
        char text[256];
        nx_format_insn(text, sizeof text, in);
        fail_msg("emit on core %u %s: %s (%s)", core, nx_engine_name(e), err.msg, text);
    }
}

/* Appends `in` on (core, e) after every earlier conflicting instruction. */
static void add(author *a, uint32_t core, nx_engine e, nx_insn in) {
    assert_false(a->ended[core][e]);
    test_coverage_add(&a->seen, in.opcode, e);
    int32_t queue = nx_insn_dma_queue(&in);
    int domain = queue >= 0 ? queue_domain((uint32_t)queue) : (e == NX_ENG_SP ? -1 : (int)e);
    logged_op self;
    memset(&self, 0, sizeof self);
    self.domain = domain;
    self.nfp = nx_insn_footprint(&in, self.fp);
    uint32_t need[DOMAINS] = {0};
    for (int i = 0; i < a->nops[core]; i++) {
        const logged_op *o = &a->ops[core][i];
        if (o->domain == domain || o->domain < 0) continue;
        int hit = 0;
        for (int x = 0; x < self.nfp && !hit; x++)
            for (int y = 0; y < o->nfp && !hit; y++) hit = boxes_conflict(&self.fp[x], &o->fp[y]);
        if (hit && o->seq > need[o->domain]) need[o->domain] = o->seq;
    }
    uint32_t *sat = a->satisfied[core][e];
    int waits[DOMAINS], nw = 0;
    for (int d = 0; d < DOMAINS; d++)
        if (need[d] > sat[d]) waits[nw++] = d;
    for (int k = 0; k < nw; k++) {
        int d = waits[k];
        sat[d] = need[d];
        if (k == nw - 1) {
            nx_insn_wait(&in, a->sem[d], need[d]);
            break;
        }
        nx_insn nop = nx_insn_make(NX_OP_NOP);
        nx_insn_wait(&nop, a->sem[d], need[d]);
        if (e != NX_ENG_SP) {
            nx_insn_inc(&nop, a->sem[e], 1);
            a->count[core][e]++;
            logged_op *slot = &a->ops[core][a->nops[core]++];
            memset(slot, 0, sizeof *slot);
            slot->domain = (int)e;
            slot->seq = a->count[core][e];
        }
        emit_raw(a, core, e, &nop);
    }
    if (domain >= 0 && in.opcode != NX_OP_END) {
        nx_insn_inc(&in, a->sem[domain], 1);
        self.seq = ++a->count[core][domain];
    }
    if (in.opcode == NX_OP_END) a->ended[core][e] = 1;
    assert_true(a->nops[core] < MAX_OPS);
    a->ops[core][a->nops[core]++] = self;
    emit_raw(a, core, e, &in);
}

static void author_finish(author *a, nx_program *p) {
    nx_error err;
    if (nx_builder_finish(a->b, p, &err) != 0) fail_msg("finish: %s", err.msg);
}

/* ---- running both and comparing ----------------------------------------- */

typedef struct pair {
    nx_state model, ref;
    int ready;
} pair;

static void fill_inputs(nx_state *st, const nx_program *p, uint64_t seed) {
    test_rng r = {seed};
    for (uint32_t t = 0; t < p->tensor_count; t++) {
        const nx_tensor_decl *d = &p->tensors[t];
        if (d->role != NX_ROLE_INPUT) continue;
        uint64_t n = nx_tensor_bytes(d) / 4;
        for (uint64_t i = 0; i < n; i++) {
            float v = (float)test_rng_uniform(&r, -2.0, 2.0);
            memcpy(st->hbm + d->offset + 4 * i, &v, 4);
        }
    }
}

static void compare(const nx_state *a, const nx_state *b, uint32_t cores, const char *what) {
    if (memcmp(a->hbm, b->hbm, a->hbm_bytes) != 0) fail_msg("%s: HBM differs", what);
    for (uint32_t c = 0; c < cores; c++) {
        const nx_core_state *x = &a->core[c], *y = &b->core[c];
        if (memcmp(x->sbuf, y->sbuf, (size_t)a->geo.partitions * a->geo.sbuf_partition_bytes) != 0)
            fail_msg("%s: core %u SBUF differs", what, c);
        if (memcmp(x->psum, y->psum, (size_t)a->geo.partitions * a->geo.psum_partition_bytes) != 0)
            fail_msg("%s: core %u PSUM differs", what, c);
        if (memcmp(x->sems, y->sems, (a->sem_count ? a->sem_count : 1) * sizeof(uint32_t)) != 0)
            fail_msg("%s: core %u semaphores differ", what, c);
        if (x->barriers_done != y->barriers_done) fail_msg("%s: core %u barrier counts differ", what, c);
        if (x->stationary_valid != y->stationary_valid ||
            (x->stationary_valid &&
             memcmp(x->stationary, y->stationary, (size_t)a->geo.pe_rows * a->geo.pe_cols * sizeof(float)) != 0))
            fail_msg("%s: core %u PE stationary tile differs", what, c);
    }
}

/* States for programs of up to `cores` cores and `hbm` bytes of HBM. */
static void pair_init(pair *s, const nx_machine *m, uint32_t cores, uint64_t hbm) {
    nx_error err;
    if (nx_state_init(&s->model, &m->geo, cores, hbm, DOMAINS, &err) != 0 ||
        nx_state_init(&s->ref, &m->geo, cores, hbm, DOMAINS, &err) != 0)
        fail_msg("%s", err.msg);
    s->ready = 1;
}

/* Runs p on both (fresh states, or the pair's reset ones). */
static void run_both(const nx_machine *m, const nx_program *p, pair *s, uint64_t seed, const char *what,
                     nx_sim_result *keep) {
    nx_error err;
    if (!s->ready) {
        if (nx_state_init(&s->model, &m->geo, p->cores, p->hbm_bytes, p->sem_count, &err) != 0 ||
            nx_state_init(&s->ref, &m->geo, p->cores, p->hbm_bytes, p->sem_count, &err) != 0)
            fail_msg("%s", err.msg);
        s->ready = 1;
    } else {
        nx_state_reset(&s->model);
        nx_state_reset(&s->ref);
    }
    fill_inputs(&s->model, p, seed);
    fill_inputs(&s->ref, p, seed);
    nx_sim_options opt = {keep != NULL, 0};
    nx_sim_result r;
    if (nx_sim_run(m, p, &s->model, &opt, &r, &err) != 0) fail_msg("%s: model: %s", what, err.msg);
    if (nx_exec_program(p, &s->ref, &err) != 0) fail_msg("%s: functional: %s", what, err.msg);
    compare(&s->model, &s->ref, p->cores, what);
    uint64_t insns = 0;
    for (uint32_t c = 0; c < p->cores; c++)
        for (int e = 0; e < NX_ENG_COUNT; e++) insns += p->stream[c][e].count;
    assert_int_equal(r.instructions, insns);
    if (keep) *keep = r;
    else nx_sim_result_free(&r);
}

/* The log: one record per instruction (queue -1) and one per DMA transfer
 * (its queue), and the happens-before numbering of model.h: a wait saw
 * enough increments of its semaphore with inc_seq <= wait_seq, each of them
 * visible (completion + semaphore latency) before the waiter started. */
static void check_log(const nx_machine *m, const nx_program *p, const nx_sim_result *r, const char *what) {
    size_t want = 0;
    for (uint32_t c = 0; c < p->cores; c++)
        for (int e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = &p->stream[c][e];
            want += s->count;
            for (uint32_t i = 0; i < s->count; i++)
                want += nx_opcode_is_dma(s->recs[i].opcode);
        }
    if (r->log_count != want) fail_msg("%s: %zu records, want %zu", what, r->log_count, want);
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *w = &r->log[i];
        const nx_insn_rec *in = &p->stream[w->core][w->engine].recs[w->index];
        assert_int_equal(w->opcode, in->opcode);
        int dma = nx_opcode_is_dma(in->opcode);
        if (w->queue >= 0) assert_int_equal(w->queue, in->iparam[0]);
        int incrementer = in->inc_sem != NX_SEM_NONE && (!dma || w->queue >= 0);
        if (incrementer) assert_true(w->inc_seq > 0);
        if (in->wait_sem == NX_SEM_NONE || w->queue >= 0) continue;
        assert_int_equal(w->waited, 1);
        uint64_t seen = 0;
        for (size_t j = 0; j < r->log_count; j++) {
            const nx_sim_record *x = &r->log[j];
            const nx_insn_rec *xi = &p->stream[x->core][x->engine].recs[x->index];
            int xdma = nx_opcode_is_dma(xi->opcode);
            if (x->core != w->core || xi->inc_sem != in->wait_sem || (xdma && x->queue < 0)) continue;
            if (x->inc_seq == 0 || x->inc_seq > w->wait_seq) continue;
            seen += xi->inc_amount;
            if (x->t_end_ns + m->semaphore_latency_ns > w->t_start_ns + 1e-6)
                fail_msg("%s: core %u %s #%u started at %.3f ns before the increment of %s #%u was visible (%.3f)",
                         what, w->core, nx_engine_name((nx_engine)w->engine), w->index, w->t_start_ns,
                         nx_engine_name((nx_engine)x->engine), x->index, x->t_end_ns + m->semaphore_latency_ns);
        }
        if (seen < in->wait_value)
            fail_msg("%s: core %u %s #%u waits for %u but saw %llu", what, w->core,
                     nx_engine_name((nx_engine)w->engine), w->index, in->wait_value, (unsigned long long)seen);
    }
}

static void pair_free(pair *s) {
    if (!s->ready) return;
    nx_state_free(&s->model);
    nx_state_free(&s->ref);
    s->ready = 0;
}

/* ---- operands ---------------------------------------------------------- */

/* ---- a program with every opcode ---------------------------------------- */

static void coverage_program(const nx_geometry *geo, nx_program *p, test_coverage *seen) {
    author a;
    author_init(&a, geo, 1);
    nx_error err;
    uint64_t in, out, out2, shape[2] = {128, 64};
    if (nx_builder_tensor(a.b, "in", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &in, &err) != 0 ||
        nx_builder_tensor(a.b, "out", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &out, &err) != 0 ||
        nx_builder_tensor(a.b, "out2", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &out2, &err) != 0)
        fail_msg("%s", err.msg);
    const nx_dtype F32 = NX_DT_FP32, BF = NX_DT_BF16, I32 = NX_DT_INT32;
    nx_operand A = test_sb(F32, 0, 128, 0, 64), E = test_sb(F32, 0, 128, 1280, 64);
    nx_operand hin = nx_ap_hbm_rows(F32, in, 128, 64, 64);
    /* DMA in, cast, transpose */
    add(&a, 0, NX_ENG_SP, test_dma(A, hin, 0));
    add(&a, 0, NX_ENG_SP, test_dma(test_sb(BF, 0, 128, 256, 64), hin, 1));
    nx_insn dt = test_insn2(NX_OP_DMA_TRANSPOSE, test_sb(BF, 0, 64, 512, 128), test_sb(BF, 0, 128, 256, 64));
    dt.iparam[0] = 2;
    add(&a, 0, NX_ENG_SP, dt);
    /* PE */
    nx_insn ld = nx_insn_make(NX_OP_LOAD_STATIONARY);
    ld.op[0] = A;
    add(&a, 0, NX_ENG_PE, ld);
    add(&a, 0, NX_ENG_PE, test_insn2(NX_OP_MULTIPLY_MOVING, test_ps(F32, 0, 64, 0, 64), test_sb(BF, 0, 128, 256, 64)));
    nx_insn mm = test_insn2(NX_OP_MULTIPLY_MOVING, test_ps(F32, 0, 64, 0, 64), A);
    mm.flags = NX_FLAG_ACCUMULATE;
    add(&a, 0, NX_ENG_PE, mm);
    add(&a, 0, NX_ENG_PE, test_insn2(NX_OP_TRANSPOSE, test_ps(F32, 0, 64, 2048, 128), A));
    add(&a, 0, NX_ENG_PE, nx_insn_make(NX_OP_NOP));
    /* DVE */
    nx_insn tt = test_insn2(NX_OP_TENSOR_TENSOR, test_sb(F32, 0, 64, 1024, 64), test_ps(F32, 0, 64, 0, 64));
    tt.op[2] = test_sb(F32, 0, 64, 0, 64);
    tt.alu0 = NX_ALU_ADD;
    add(&a, 0, NX_ENG_DVE, tt);
    nx_insn ts = test_insn2(NX_OP_TENSOR_SCALAR, E, A);
    ts.alu0 = NX_ALU_MULTIPLY;
    ts.alu1 = NX_ALU_ADD;
    ts.op[2] = nx_imm(0.5, F32);
    ts.op[3] = nx_imm(1.0, F32);
    add(&a, 0, NX_ENG_DVE, ts);
    nx_insn stt = test_insn2(NX_OP_SCALAR_TENSOR_TENSOR, test_sb(F32, 0, 128, 1536, 64), A);
    stt.alu0 = NX_ALU_MULTIPLY;
    stt.alu1 = NX_ALU_ADD;
    stt.op[2] = test_sb(F32, 0, 128, 0, 1);
    stt.op[3] = E;
    add(&a, 0, NX_ENG_DVE, stt);
    nx_insn tr = test_insn2(NX_OP_TENSOR_REDUCE, test_sb(F32, 0, 128, 1792, 1), A);
    tr.alu0 = NX_ALU_ADD;
    tr.iparam[0] = 1;
    add(&a, 0, NX_ENG_DVE, tr);
    nx_insn scan = test_insn2(NX_OP_TENSOR_TENSOR_SCAN, test_sb(F32, 0, 128, 2048, 64), A);
    scan.alu0 = NX_ALU_MULTIPLY;
    scan.alu1 = NX_ALU_ADD;
    scan.op[2] = E;
    scan.op[3] = nx_imm(0.0, F32);
    add(&a, 0, NX_ENG_DVE, scan);
    nx_insn sel = test_insn2(NX_OP_SELECT, test_sb(F32, 0, 128, 2304, 64), A);
    sel.op[2] = E;
    sel.op[3] = test_sb(F32, 0, 128, 1536, 64);
    add(&a, 0, NX_ENG_DVE, sel);
    add(&a, 0, NX_ENG_DVE, test_insn2(NX_OP_MEMSET, test_sb(F32, 0, 128, 2560, 64), nx_imm(1.25, F32)));
    nx_operand k8 = test_sb(F32, 0, 128, 2816, 8);
    add(&a, 0, NX_ENG_DVE, test_insn2(NX_OP_MAX8, k8, A));
    nx_insn fi = test_insn2(NX_OP_FIND_INDEX8, test_sb(I32, 0, 128, 2848, 8), A);
    fi.op[2] = k8;
    add(&a, 0, NX_ENG_DVE, fi);
    nx_insn mr = test_insn2(NX_OP_MATCH_REPLACE8, test_sb(F32, 0, 128, 2880, 64), A);
    mr.op[2] = k8;
    mr.op[3] = nx_imm(-1.0, F32);
    mr.op[4] = test_sb(I32, 0, 128, 3136, 8);
    add(&a, 0, NX_ENG_DVE, mr);
    nx_operand bs = test_sb(F32, 0, 128, 3168, 6);
    add(&a, 0, NX_ENG_DVE, test_insn2(NX_OP_BN_STATS, bs, A));
    add(&a, 0, NX_ENG_DVE, test_insn2(NX_OP_BN_AGGR, test_sb(F32, 0, 128, 3200, 2), bs));
    add(&a, 0, NX_ENG_DVE, test_insn2(NX_OP_TRANSPOSE, test_sb(F32, 0, 32, 3216, 32), test_sb(F32, 0, 32, 0, 32)));
    add(&a, 0, NX_ENG_DVE, nx_insn_make(NX_OP_CORE_BARRIER));
    add(&a, 0, NX_ENG_DVE, test_insn2(NX_OP_TENSOR_COPY, test_sb(F32, 0, 64, 4864, 128), test_ps(F32, 0, 64, 2048, 128)));
    /* ACT */
    nx_insn act = test_insn2(NX_OP_ACTIVATION, test_sb(F32, 0, 128, 3344, 64), A);
    act.func = NX_ACT_EXP;
    act.alu0 = NX_ALU_ADD;
    act.op[2] = nx_imm(0.5, F32);
    act.op[3] = test_sb(F32, 0, 128, 0, 1);
    act.op[4] = test_sb(F32, 0, 128, 3600, 1);
    add(&a, 0, NX_ENG_ACT, act);
    add(&a, 0, NX_ENG_ACT, test_insn2(NX_OP_TENSOR_COPY, test_ps(F32, 0, 128, 4096, 64), E));
    nx_insn gelu = test_insn2(NX_OP_ACTIVATION, test_sb(BF, 0, 128, 3616, 64), test_ps(F32, 0, 128, 4096, 64));
    gelu.func = NX_ACT_GELU;
    gelu.op[2] = nx_imm(1.0, F32);
    gelu.op[3] = nx_imm(0.0, F32);
    add(&a, 0, NX_ENG_ACT, gelu);
    /* POOL */
    const int32_t one = 1, neg = -1;
    const uint32_t n8 = 8, n64 = 64;
    nx_operand idx = test_sb(I32, 0, 128, 3872, 8);
    add(&a, 0, NX_ENG_POOL, test_insn2(NX_OP_IOTA, idx, nx_pattern(0, 0, 128, 1, &one, &n8)));
    nx_insn as = test_insn2(NX_OP_AFFINE_SELECT, test_sb(F32, 0, 128, 3904, 64), nx_pattern(0, 1, 128, 1, &neg, &n64));
    as.alu0 = NX_ALU_IS_GE;
    as.op[2] = A;
    as.op[3] = nx_imm(0.0, F32);
    add(&a, 0, NX_ENG_POOL, as);
    nx_insn lg = test_insn2(NX_OP_LOCAL_GATHER, test_sb(F32, 0, 128, 4160, 8), test_sb(F32, 0, 128, 0, 4));
    lg.op[2] = idx;
    add(&a, 0, NX_ENG_POOL, lg);
    nx_insn par = test_insn2(NX_OP_PARTITION_ALL_REDUCE, test_sb(F32, 0, 128, 4192, 8), test_sb(F32, 0, 128, 0, 8));
    par.alu0 = NX_ALU_ADD;
    add(&a, 0, NX_ENG_POOL, par);
    add(&a, 0, NX_ENG_POOL, test_insn2(NX_OP_PARTITION_BROADCAST, test_sb(F32, 0, 128, 4224, 8), test_sb(F32, 32, 1, 0, 8)));
    nx_insn ptt = test_insn2(NX_OP_TENSOR_TENSOR, test_sb(F32, 0, 128, 4256, 8), test_sb(F32, 0, 128, 0, 8));
    ptt.op[2] = test_sb(F32, 0, 128, 1280, 8);
    ptt.alu0 = NX_ALU_MULTIPLY;
    add(&a, 0, NX_ENG_POOL, ptt);
    nx_insn pts = test_insn2(NX_OP_TENSOR_SCALAR, test_sb(F32, 0, 128, 4288, 8), test_sb(F32, 0, 128, 0, 8));
    pts.alu0 = NX_ALU_MAX;
    pts.op[2] = nx_imm(0.0, F32);
    add(&a, 0, NX_ENG_POOL, pts);
    nx_insn pstt = test_insn2(NX_OP_SCALAR_TENSOR_TENSOR, test_sb(F32, 0, 128, 6144, 8), test_sb(F32, 0, 128, 0, 8));
    pstt.alu0 = NX_ALU_MULTIPLY;
    pstt.alu1 = NX_ALU_ADD;
    pstt.op[2] = nx_imm(2.0, F32);
    pstt.op[3] = test_sb(F32, 0, 128, 1280, 8);
    add(&a, 0, NX_ENG_POOL, pstt);
    nx_insn ptr = test_insn2(NX_OP_TENSOR_REDUCE, test_sb(F32, 0, 128, 4320, 1), test_sb(F32, 0, 128, 0, 8));
    ptr.alu0 = NX_ALU_MAX;
    ptr.iparam[0] = 1;
    add(&a, 0, NX_ENG_POOL, ptr);
    /* gather offsets 127 - p, scatter offsets 2 p (half out of bounds) */
    nx_operand off_g = test_sb(I32, 0, 128, 4336, 1), off_s = test_sb(I32, 0, 128, 4340, 1);
    add(&a, 0, NX_ENG_POOL, test_insn2(NX_OP_IOTA, off_g, nx_pattern(127, -1, 128, 0, NULL, NULL)));
    add(&a, 0, NX_ENG_POOL, test_insn2(NX_OP_IOTA, off_s, nx_pattern(0, 2, 128, 0, NULL, NULL)));
    add(&a, 0, NX_ENG_POOL, test_insn2(NX_OP_MEMSET, test_sb(F32, 0, 128, 4344, 2), nx_imm(-3.0, F32)));
    add(&a, 0, NX_ENG_POOL, test_insn2(NX_OP_TENSOR_COPY, test_sb(BF, 0, 128, 4352 + 4096, 64), A));
    add(&a, 0, NX_ENG_POOL, nx_insn_make(NX_OP_END));
    /* more DMA: gather, scatter with oob_skip, accumulate, SBUF to SBUF */
    nx_insn g = test_dma(test_sb(F32, 0, 128, 4352, 64), hin, 17);
    g.op[2] = off_g;
    g.iparam[1] = 128;
    add(&a, 0, NX_ENG_SP, g);
    nx_insn sc = test_dma(nx_ap_hbm_rows(F32, out, 128, 64, 64), E, 40);
    sc.op[2] = off_s;
    sc.iparam[1] = 128;
    sc.flags = NX_FLAG_SCATTER | NX_FLAG_OOB_SKIP;
    add(&a, 0, NX_ENG_SP, sc);
    nx_insn acc = test_dma(nx_ap_hbm_rows(F32, out2, 128, 64, 64), test_sb(F32, 0, 128, 1536, 64), 255);
    acc.flags = NX_FLAG_ACCUMULATE;
    add(&a, 0, NX_ENG_SP, acc);
    add(&a, 0, NX_ENG_SP, acc); /* twice: out2 = 2 F */
    add(&a, 0, NX_ENG_SP, test_dma(test_sb(F32, 0, 128, 4608, 64), test_sb(F32, 0, 128, 3344, 64), 0));
    add(&a, 0, NX_ENG_SP, test_dma(nx_ap_hbm_rows(F32, out, 64, 64, 64), test_sb(F32, 0, 64, 1024, 64), 1));
    add(&a, 0, NX_ENG_SP, nx_insn_make(NX_OP_NOP));
    add(&a, 0, NX_ENG_ACT, test_insn2(NX_OP_TENSOR_COPY, test_sb(F32, 0, 128, 5120, 64), test_sb(F32, 0, 128, 4352, 64)));
    add(&a, 0, NX_ENG_ACT, nx_insn_make(NX_OP_END));
    *seen = a.seen;
    author_finish(&a, p);
    author_free(&a);
}

static void every_opcode(void **state) {
    (void)state;
    const char *presets[2] = {"trn2", "trn1"};
    for (int k = 0; k < 2; k++) {
        nx_machine m = test_machine(presets[k]);
        nx_program p;
        test_coverage seen;
        coverage_program(&m.geo, &p, &seen);
        test_coverage_check(&seen, "the coverage program");
        pair s = {0};
        nx_sim_result r;
        run_both(&m, &p, &s, 42, presets[k], &r);
        /* one record per instruction plus one per DMA transfer */
        uint64_t insns = 0, dmas = 0;
        for (int e = 0; e < NX_ENG_COUNT; e++) insns += p.stream[0][e].count;
        for (uint32_t i = 0; i < p.stream[0][NX_ENG_SP].count; i++) {
            dmas += nx_opcode_is_dma(p.stream[0][NX_ENG_SP].recs[i].opcode);
        }
        assert_int_equal(r.log_count, insns + dmas);
        check_log(&m, &p, &r, presets[k]);
        printf("%s: every opcode, %llu instructions, %.1f ns simulated\n", presets[k],
               (unsigned long long)insns, r.total_ns);
        nx_sim_result_free(&r);
        pair_free(&s);
        nx_program_free(&p);
    }
}

/* ---- random race-free programs ------------------------------------------ */

typedef struct window {
    uint64_t in, out[NX_MAX_CORES]; /* HBM tensors [128, 64] fp32 */
} window;

static const struct {
    uint32_t start, parts;
} ranges[] = {{0, 128}, {0, 64}, {64, 64}, {0, 32}, {32, 32}, {64, 32}, {96, 32}, {0, 8}, {32, 16}, {96, 4}};
static const uint32_t frees[] = {1, 5, 8, 16, 33, 64};

#define PICK(r, arr) ((arr)[test_rng_next(r) % (sizeof(arr) / sizeof((arr)[0]))])
static uint32_t pick(test_rng *r, uint32_t n) { return (uint32_t)(test_rng_next(r) % n); }

/* Slots of 256 bytes: 16 in SBUF, 16 in PSUM (banks of 8). */
static nx_operand rnd_tile(test_rng *r, nx_operand_kind kind, nx_dtype dt, uint32_t start, uint32_t parts,
                           uint32_t n) {
    return nx_ap_tile(kind, dt, start, parts, 256ull * pick(r, 16), n);
}

static nx_dtype rnd_dt(test_rng *r) { return pick(r, 5) == 0 ? NX_DT_BF16 : NX_DT_FP32; }

static void random_op(author *a, test_rng *r, uint32_t core, const window *w) {
    uint32_t ri = pick(r, sizeof ranges / sizeof ranges[0]);
    uint32_t st = ranges[ri].start, np = ranges[ri].parts, n = PICK(r, frees);
    const nx_dtype F32 = NX_DT_FP32;
    switch (pick(r, 14)) {
    case 0: { /* tensor_tensor on DVE (SBUF/PSUM) or POOL (SBUF) */
        int dve = pick(r, 2);
        nx_operand_kind k1 = dve && pick(r, 2) ? NX_OPK_PSUM : NX_OPK_SBUF;
        nx_insn i = test_insn2(NX_OP_TENSOR_TENSOR, rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), st, np, n),
                        rnd_tile(r, k1, F32, st, np, n));
        i.op[2] = rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), st, np, n);
        static const nx_alu_op ops[] = {NX_ALU_ADD, NX_ALU_SUBTRACT, NX_ALU_MULTIPLY, NX_ALU_MAX};
        i.alu0 = (uint8_t)PICK(r, ops);
        add(a, core, dve ? NX_ENG_DVE : NX_ENG_POOL, i);
        return;
    }
    case 1: { /* tensor_scalar */
        int dve = pick(r, 2);
        nx_insn i = test_insn2(NX_OP_TENSOR_SCALAR, rnd_tile(r, dve ? NX_OPK_PSUM : NX_OPK_SBUF, F32, st, np, n),
                        rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), st, np, n));
        i.alu0 = NX_ALU_MULTIPLY;
        i.alu1 = NX_ALU_ADD;
        i.op[2] = nx_imm(1.5, F32);
        i.op[3] = pick(r, 2) ? nx_imm(-0.25, F32) : rnd_tile(r, NX_OPK_SBUF, F32, st, np, 1);
        add(a, core, dve ? NX_ENG_DVE : NX_ENG_POOL, i);
        return;
    }
    case 2: { /* tensor_copy on any of DVE, ACT, POOL */
        static const nx_engine engs[] = {NX_ENG_DVE, NX_ENG_ACT, NX_ENG_POOL};
        nx_engine e = PICK(r, engs);
        nx_operand_kind src = e != NX_ENG_POOL && pick(r, 2) ? NX_OPK_PSUM : NX_OPK_SBUF;
        add(a, core, e, test_insn2(NX_OP_TENSOR_COPY, rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), st, np, n),
                            rnd_tile(r, src, F32, st, np, n)));
        return;
    }
    case 3: /* memset */
        add(a, core, pick(r, 2) ? NX_ENG_DVE : NX_ENG_POOL,
            test_insn2(NX_OP_MEMSET, rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), st, np, n), nx_imm((double)pick(r, 9) - 4, F32)));
        return;
    case 4: { /* activation, sometimes with acc_out */
        static const nx_act_func fs[] = {NX_ACT_EXP, NX_ACT_TANH, NX_ACT_RELU, NX_ACT_SILU, NX_ACT_SQUARE};
        nx_insn i = test_insn2(NX_OP_ACTIVATION, rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), st, np, n),
                        rnd_tile(r, pick(r, 2) ? NX_OPK_PSUM : NX_OPK_SBUF, F32, st, np, n));
        i.func = (uint8_t)PICK(r, fs);
        i.op[2] = nx_imm(0.75, F32);
        i.op[3] = rnd_tile(r, NX_OPK_SBUF, F32, st, np, 1);
        if (pick(r, 2)) {
            i.alu0 = NX_ALU_ADD;
            i.op[4] = rnd_tile(r, NX_OPK_SBUF, F32, st, np, 1);
        }
        add(a, core, NX_ENG_ACT, i);
        return;
    }
    case 5: { /* iota */
        const int32_t one = 1;
        add(a, core, NX_ENG_POOL,
            test_insn2(NX_OP_IOTA, rnd_tile(r, NX_OPK_SBUF, pick(r, 2) ? NX_DT_INT32 : F32, st, np, n),
                nx_pattern((int64_t)pick(r, 100), 3, np, 1, &one, &n)));
        return;
    }
    case 6: { /* tensor_reduce */
        int dve = pick(r, 2);
        nx_insn i = test_insn2(NX_OP_TENSOR_REDUCE, rnd_tile(r, NX_OPK_SBUF, F32, st, np, 1),
                        rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), st, np, n));
        i.alu0 = pick(r, 2) ? NX_ALU_ADD : NX_ALU_MAX;
        i.iparam[0] = 1;
        add(a, core, dve ? NX_ENG_DVE : NX_ENG_POOL, i);
        return;
    }
    case 7: { /* scalar_tensor_tensor or select on DVE */
        if (pick(r, 2)) {
            nx_insn i = test_insn2(NX_OP_SCALAR_TENSOR_TENSOR, rnd_tile(r, NX_OPK_SBUF, F32, st, np, n),
                            rnd_tile(r, NX_OPK_SBUF, F32, st, np, n));
            i.alu0 = NX_ALU_MULTIPLY;
            i.alu1 = NX_ALU_SUBTRACT;
            i.op[2] = rnd_tile(r, NX_OPK_SBUF, F32, st, np, 1);
            i.op[3] = rnd_tile(r, NX_OPK_PSUM, F32, st, np, n);
            add(a, core, NX_ENG_DVE, i);
        } else {
            nx_insn i = test_insn2(NX_OP_SELECT, rnd_tile(r, NX_OPK_SBUF, F32, st, np, n),
                            rnd_tile(r, NX_OPK_SBUF, F32, st, np, n));
            i.op[2] = rnd_tile(r, NX_OPK_SBUF, F32, st, np, n);
            i.op[3] = nx_imm(9.0, F32);
            add(a, core, NX_ENG_DVE, i);
        }
        return;
    }
    case 8: { /* PE: a load and one to three multiplies with its K and M */
        static const uint32_t ks[] = {128, 64, 32, 16}, ms[] = {128, 64, 32, 8};
        uint32_t K = PICK(r, ks), M = PICK(r, ms);
        nx_insn ld = nx_insn_make(NX_OP_LOAD_STATIONARY);
        ld.op[0] = rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), 0, K, M);
        add(a, core, NX_ENG_PE, ld);
        for (uint32_t t = 0, nm = 1 + pick(r, 3); t < nm; t++) {
            nx_insn mm = test_insn2(NX_OP_MULTIPLY_MOVING, rnd_tile(r, NX_OPK_PSUM, F32, 0, M, n),
                             rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), 0, K, n));
            if (pick(r, 2)) mm.flags = NX_FLAG_ACCUMULATE;
            add(a, core, NX_ENG_PE, mm);
        }
        return;
    }
    case 9: { /* PE transpose [P <= 128, F <= 64] -> PSUM [F, P] in one bank */
        nx_operand src = rnd_tile(r, NX_OPK_SBUF, F32, 0, np > 64 ? 128 : 64, n);
        nx_operand dst = nx_ap_tile(NX_OPK_PSUM, F32, 0, n, 512ull * pick(r, 8), src.partition_count);
        add(a, core, NX_ENG_PE, test_insn2(NX_OP_TRANSPOSE, dst, src));
        return;
    }
    case 10: case 11: { /* DMA between HBM and SBUF, or SBUF and SBUF */
        uint32_t q = PICK(r, queue_set);
        uint32_t row0 = pick(r, 129 - np);
        nx_operand hi = nx_ap_hbm_rows(F32, w->in + (uint64_t)row0 * 256, np, 64, n);
        nx_operand ho = nx_ap_hbm_rows(F32, w->out[core] + (uint64_t)row0 * 256, np, 64, n);
        nx_operand s = rnd_tile(r, NX_OPK_SBUF, F32, pick(r, 129 - np), np, n);
        nx_insn i;
        switch (pick(r, 4)) {
        case 0: i = test_dma(s, hi, q); break;
        case 1: i = test_dma(ho, s, q); break;
        case 2: i = test_dma(s, rnd_tile(r, NX_OPK_SBUF, rnd_dt(r), pick(r, 129 - np), np, n), q); break;
        default:
            i = test_dma(ho, s, q);
            i.flags = NX_FLAG_ACCUMULATE;
            break;
        }
        add(a, core, NX_ENG_SP, i);
        return;
    }
    case 12: { /* POOL partition work */
        if (pick(r, 2)) {
            nx_insn i = test_insn2(NX_OP_PARTITION_ALL_REDUCE, rnd_tile(r, NX_OPK_SBUF, F32, st, np, n),
                            rnd_tile(r, NX_OPK_SBUF, F32, st, np, n));
            i.alu0 = NX_ALU_ADD;
            add(a, core, NX_ENG_POOL, i);
        } else {
            add(a, core, NX_ENG_POOL,
                test_insn2(NX_OP_PARTITION_BROADCAST, rnd_tile(r, NX_OPK_SBUF, F32, st, np, n),
                    rnd_tile(r, NX_OPK_SBUF, F32, 32 * pick(r, 4), 1, n)));
        }
        return;
    }
    default: { /* max8 on DVE */
        add(a, core, NX_ENG_DVE,
            test_insn2(NX_OP_MAX8, rnd_tile(r, NX_OPK_SBUF, F32, st, np, 8), rnd_tile(r, NX_OPK_SBUF, F32, st, np, 64)));
        return;
    }
    }
}

static void random_program(const nx_geometry *geo, uint32_t cores, int nops, uint64_t seed, nx_program *p) {
    author a;
    author_init(&a, geo, cores);
    nx_error err;
    window w;
    uint64_t shape[2] = {128, 64};
    if (nx_builder_tensor(a.b, "in", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &w.in, &err) != 0)
        fail_msg("%s", err.msg);
    for (uint32_t c = 0; c < cores; c++) {
        char name[16];
        snprintf(name, sizeof name, "out%u", c);
        if (nx_builder_tensor(a.b, name, NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &w.out[c], &err) != 0)
            fail_msg("%s", err.msg);
    }
    test_rng r = {seed * 2654435761u + 1};
    for (int i = 0; i < nops; i++)
        for (uint32_t c = 0; c < cores; c++) random_op(&a, &r, c, &w);
    author_finish(&a, p);
    author_free(&a);
}

/* A trn2/trn1 machine with small memories (8 KiB of SBUF and 4 KiB of PSUM
 * per partition: the random programs' window), so that comparing every byte
 * of every memory stays cheap. */
static nx_machine small_machine(const char *name) {
    nx_machine m = test_machine(name);
    m.geo.sbuf_partition_bytes = 8192;
    m.geo.psum_partition_bytes = 4096;
    return m;
}

static void random_programs(void **state) {
    (void)state;
    const char *presets[2] = {"trn2", "trn1"};
    for (int k = 0; k < 2; k++)
        for (uint32_t cores = 1; cores <= 2; cores++) {
            nx_machine m = small_machine(presets[k]);
            pair s = {0};
            for (uint64_t seed = 1; seed <= 12; seed++) {
                nx_program p;
                random_program(&m.geo, cores, 120, seed + 100 * cores, &p);
                char what[64];
                snprintf(what, sizeof what, "%s, %u cores, seed %llu", presets[k], cores, (unsigned long long)seed);
                nx_sim_result r;
                run_both(&m, &p, &s, seed, what, &r);
                /* the log is complete and consistent */
                check_log(&m, &p, &r, what);
                for (size_t i = 0; i < r.log_count; i++) {
                    const nx_sim_record *q = &r.log[i];
                    assert_true(q->t_ready_ns <= q->t_start_ns + 1e-9 || q->opcode == NX_OP_LOAD_STATIONARY);
                    assert_true(q->t_start_ns <= q->t_end_ns);
                    assert_true(q->t_end_ns <= r.total_ns + 1e-6);
                }
                nx_sim_result_free(&r);
                pair_free(&s); /* the programs' HBM sizes differ */
                nx_program_free(&p);
            }
        }
}

/* A thousand small programs through one platform (elaborated once), on one
 * pair of states reset between programs. */
static void thousand_small_programs(void **state) {
    (void)state;
    nx_machine m = small_machine("trn2");
    pair s = {0};
    pair_init(&s, &m, 2, 3 * 128 * 64 * 4);
    uint64_t insns = 0;
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        nx_program p;
        random_program(&m.geo, 1 + (uint32_t)(seed % 2), 6 + (int)(seed % 10), seed * 7919, &p);
        char what[48];
        snprintf(what, sizeof what, "small program %llu", (unsigned long long)seed);
        run_both(&m, &p, &s, seed, what, NULL);
        for (uint32_t c = 0; c < p.cores; c++)
            for (int e = 0; e < NX_ENG_COUNT; e++) insns += p.stream[c][e].count;
        nx_program_free(&p);
    }
    pair_free(&s);
    printf("1000 programs, %llu instructions, model == functional\n", (unsigned long long)insns);
}

/* Same program, same cycles, on every run: rerunning a program after others
 * (which leave the platform's threads in another order) gives a
 * byte-identical log, structural conflicts (trn1) included. */
static void same_cycles_every_run(void **state) {
    (void)state;
    const char *presets[2] = {"trn1", "trn2"};
    for (int k = 0; k < 2; k++) {
        nx_machine m = small_machine(presets[k]);
        nx_program first, other;
        random_program(&m.geo, 2, 80, 4242, &first);
        pair s = {0};
        nx_sim_result a, b;
        run_both(&m, &first, &s, 1, "first run", &a);
        pair_free(&s);
        for (uint64_t seed = 1; seed <= 5; seed++) {
            random_program(&m.geo, 1 + (uint32_t)(seed % 2), 50, seed, &other);
            run_both(&m, &other, &s, seed, "other run", NULL);
            pair_free(&s);
            nx_program_free(&other);
        }
        for (int again = 0; again < 2; again++) { /* right after others, then right after itself */
            run_both(&m, &first, &s, 1, "rerun", &b);
            pair_free(&s);
            assert_int_equal(a.log_count, b.log_count);
            assert_memory_equal(a.log, b.log, a.log_count * sizeof *a.log);
            assert_true(a.total_ns == b.total_ns);
            assert_memory_equal(a.engine, b.engine, sizeof a.engine);
            nx_sim_result_free(&b);
        }
        nx_sim_result_free(&a);
        nx_program_free(&first);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_opcode),
        cmocka_unit_test(random_programs),
        cmocka_unit_test(same_cycles_every_run),
        cmocka_unit_test(thousand_small_programs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
