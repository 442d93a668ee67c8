/* The functional executor: instant instructions, ordered only by semaphores
 * and core barriers, run round-robin over engines in a fixed order so every
 * run is identical. */
#include "exec.h"

#include <stdio.h>
#include <string.h>

#include "opcodes.h"

void nx_insn_where(char *buf, size_t len, uint32_t core, nx_engine engine, uint32_t index,
                   const nx_insn *insn) {
    snprintf(buf, len, "core %u %s #%u (%s)", core, nx_engine_name(engine), index,
             nx_opcode_mnemonic(insn->opcode));
}

int nx_insn_execute(const nx_exec_ctx *ctx, const nx_insn *insn) {
    const nx_opcode_info *info = nx_opcode_lookup(insn->opcode);
    if (!info) return nx_fail(ctx->err, "unknown opcode %u", insn->opcode);
    if (info->exec(ctx, insn) == 0) return 0;
    char where[96];
    nx_insn_where(where, sizeof where, ctx->core, ctx->engine, ctx->index, insn);
    return nx_fail_prefix(ctx->err, "%s", where);
}

typedef struct engine_cursor {
    uint32_t pc;
    uint64_t barrier_id; /* nonzero while parked at a core_barrier */
    nx_insn insn;        /* the instruction at pc, expanded */
    uint32_t insn_ops[NX_MAX_OPERANDS]; /* the pool entries insn.op[] holds */
} engine_cursor;

typedef struct scheduler {
    const nx_program *prog;
    nx_state *st;
    engine_cursor cur[NX_MAX_CORES][NX_ENG_COUNT];
    uint64_t barriers_arrived[NX_MAX_CORES];
} scheduler;

static int barrier_open(const scheduler *s, uint64_t id) {
    for (uint32_t c = 0; c < s->prog->cores; c++)
        if (s->barriers_arrived[c] < id) return 0;
    return 1;
}

/* Runs one engine until it blocks or ends. Returns -1 on a fault, else the
 * number of instructions it completed. */
static long run_engine(scheduler *s, uint32_t core, nx_engine engine, nx_error *err) {
    const nx_stream *stream = &s->prog->stream[core][engine];
    engine_cursor *cur = &s->cur[core][engine];
    nx_core_state *cs = &s->st->core[core];
    long done = 0;
    while (cur->pc < stream->count) {
        const nx_insn_rec *rec = &stream->recs[cur->pc];
        if (nx_wait_short(rec->wait_sem, rec->wait_span, rec->wait_value, cs->sems) != NX_SEM_NONE) break;
        const nx_insn *insn = nx_program_expand_next(s->prog, rec, &cur->insn, cur->insn_ops);
        if (insn->opcode == NX_OP_CORE_BARRIER) {
            if (!cur->barrier_id) cur->barrier_id = ++s->barriers_arrived[core];
            if (!barrier_open(s, cur->barrier_id)) break;
            cur->barrier_id = 0;
            cs->barriers_done++;
        }
        nx_exec_ctx ctx = {s->st, core, engine, cur->pc, err};
        if (nx_insn_execute(&ctx, insn) != 0) return -1;
        if (insn->inc_sem != NX_SEM_NONE) {
            uint32_t *sem = &cs->sems[insn->inc_sem];
            if (*sem > UINT32_MAX - insn->inc_amount) {
                char where[96];
                nx_insn_where(where, sizeof where, core, engine, cur->pc, insn);
                return nx_fail(err, "%s: semaphore %u overflows (%u + %u)", where, insn->inc_sem,
                               *sem, insn->inc_amount);
            }
            *sem += insn->inc_amount;
        }
        cur->pc = insn->opcode == NX_OP_END ? stream->count : cur->pc + 1;
        done++;
    }
    return done;
}

static int report_deadlock(const scheduler *s, nx_error *err) {
    char msg[NX_ERROR_MAX];
    size_t used = (size_t)snprintf(msg, sizeof msg, "deadlock:");
    for (uint32_t c = 0; c < s->prog->cores; c++) {
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *stream = &s->prog->stream[c][e];
            const engine_cursor *cur = &s->cur[c][e];
            if (cur->pc >= stream->count || used >= sizeof msg) continue;
            nx_insn scratch;
            const nx_insn *insn = nx_program_expand(s->prog, &stream->recs[cur->pc], &scratch);
            char where[96];
            nx_insn_where(where, sizeof where, c, (nx_engine)e, cur->pc, insn);
            int n;
            uint32_t short_sem = nx_wait_short(insn->wait_sem, insn->wait_span, insn->wait_value,
                                               s->st->core[c].sems);
            if (insn->opcode == NX_OP_CORE_BARRIER && short_sem == NX_SEM_NONE)
                n = snprintf(msg + used, sizeof msg - used,
                             " %s waits at barrier %llu for the other core;", where,
                             (unsigned long long)cur->barrier_id);
            else
                n = snprintf(msg + used, sizeof msg - used, " %s waits for sem%u >= %u (is %u);",
                             where, short_sem, insn->wait_value,
                             s->st->core[c].sems[short_sem]);
            if (n > 0) used += (size_t)n;
        }
    }
    if (used > 0 && used < sizeof msg && msg[used - 1] == ';') msg[used - 1] = '\0';
    return nx_fail(err, "%s", msg);
}

int nx_exec_program(const nx_program *prog, nx_state *st, nx_error *err) {
    if (prog->cores > st->cores || prog->sem_count > st->sem_count ||
        prog->hbm_bytes > st->hbm_bytes)
        return nx_fail(err, "state was initialised for a smaller program (%u cores, %u semaphores, "
                            "%llu HBM bytes)",
                       st->cores, st->sem_count, (unsigned long long)st->hbm_bytes);
    scheduler s;
    memset(&s, 0, sizeof s);
    s.prog = prog;
    s.st = st;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            memset(s.cur[c][e].insn_ops, 0xff, sizeof s.cur[c][e].insn_ops); /* UINT32_MAX: none yet */
    for (;;) {
        long progress = 0;
        int pending = 0;
        for (uint32_t c = 0; c < prog->cores; c++) {
            for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
                long n = run_engine(&s, c, (nx_engine)e, err);
                if (n < 0) return -1;
                progress += n;
                if (s.cur[c][e].pc < prog->stream[c][e].count) pending = 1;
            }
        }
        if (!pending) return 0;
        if (!progress) return report_deadlock(&s, err);
    }
}
