/* The static order check (kcheck.h): a replay of the program's ordering
 * rules driving the happens-before core of isa/hb.h.
 *
 * Happens-before, from the program alone:
 *   - program order within each engine stream of each core;
 *   - a DMA transfer follows its issue on the SP (not the reverse) and the
 *     earlier transfers of its queue;
 *   - a wait "sem >= v" follows the first v increments of that semaphore;
 *     that set is only schedule-independent when every increment of the
 *     semaphore comes from one agent (one stream or one queue) in amounts of
 *     1, so programs that share a semaphore between agents are rejected as
 *     outside the check (the authoring layer never does that);
 *   - the k-th core_barrier of each core passes after every core's k-th
 *     arrival.
 * The replay runs each stream as far as its waits allow, round-robin, so
 * every instruction reaches the core after everything it follows (hb.h's
 * contract). Agents: per core the 5 streams and the queues its DMAs use; a
 * core_barrier is two events of its stream (arrival, pass). */
#include "kcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/exec.h"
#include "isa/hb.h"
#include "isa/opcodes.h"
#include "isa/validate.h"

typedef struct ck_event {
    uint32_t core, engine, index;
    int32_t queue; /* -1: not a transfer */
} ck_event;

typedef struct ck {
    const nx_program *p;
    nx_hb *hb;
    nx_hb_names names;
    uint32_t nagents;
    uint32_t **incs;    /* per (core, sem): clocks of its increments, in order */
    uint32_t *ninc, *capinc;
    int32_t *inc_agent; /* per (core, sem): the one agent incrementing it */
    uint32_t **arrivals; /* per core: clocks of its barrier arrivals */
    uint32_t narr[NX_MAX_CORES], caparr[NX_MAX_CORES];
    ck_event *events;   /* tag -> instruction, for the report */
    uint32_t nevents;
} ck;

static uint32_t stream_agent(const ck *c, uint32_t core, unsigned engine) {
    return nx_hb_names_find(&c->names, nx_hb_stream_key(core, engine));
}

static int record_inc(ck *c, uint32_t core, const nx_insn *in, uint32_t agent, const uint32_t *vc,
                      nx_error *err) {
    if (in->inc_sem == NX_SEM_NONE) return 0;
    size_t si = (size_t)core * c->p->sem_count + in->inc_sem;
    if (in->inc_amount != 1)
        return nx_fail(err, "order check: semaphore %u on core %u is incremented by %u (only 1 is supported)",
                       in->inc_sem, core, in->inc_amount);
    if (c->inc_agent[si] >= 0 && (uint32_t)c->inc_agent[si] != agent)
        return nx_fail(err, "order check: semaphore %u on core %u is incremented by two agents", in->inc_sem,
                       core);
    c->inc_agent[si] = (int32_t)agent;
    if (c->ninc[si] == c->capinc[si]) {
        uint32_t cap = c->capinc[si] ? c->capinc[si] * 2 : 64;
        uint32_t *grown = realloc(c->incs[si], (size_t)cap * c->nagents * sizeof(uint32_t));
        if (!grown) return nx_fail(err, "order check: out of memory");
        c->incs[si] = grown;
        c->capinc[si] = cap;
    }
    memcpy(c->incs[si] + (size_t)c->ninc[si] * c->nagents, vc, c->nagents * sizeof(uint32_t));
    c->ninc[si]++;
    return 0;
}

static void where(char *buf, size_t len, const ck *c, uint32_t tag) {
    const ck_event *ev = &c->events[tag];
    nx_insn scratch;
    const nx_insn *in = nx_program_insn(c->p, ev->core, (nx_engine)ev->engine, ev->index, &scratch);
    nx_insn_where(buf, len, ev->core, (nx_engine)ev->engine, ev->index, in);
    if (ev->queue >= 0) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, " on queue %d", (int)ev->queue);
    }
}

/* The pair in a fixed order, whatever the replay met first: memory, then
 * program position, then reads before writes. */
static int comes_first(const ck *c, const nx_hb_access *a, const nx_hb_access *b) {
    if (a->lo != b->lo) return a->lo < b->lo;
    const ck_event *x = &c->events[a->tag], *y = &c->events[b->tag];
    if (x->core != y->core) return x->core < y->core;
    if (x->engine != y->engine) return x->engine < y->engine;
    if (x->index != y->index) return x->index < y->index;
    return a->write < b->write;
}

/* Checks the footprint boxes of (core, engine, index) as an event of `agent`
 * at clock vc. Returns 0, 1 (race, reported) or -1. */
static int check(ck *c, uint32_t core, unsigned engine, uint32_t index, int32_t queue, uint32_t agent,
                 const uint32_t *vc, nx_error *err) {
    nx_insn scratch;
    const nx_insn *in = nx_program_insn(c->p, core, (nx_engine)engine, index, &scratch);
    uint32_t tag = c->nevents++;
    c->events[tag] = (ck_event){core, engine, index, queue};
    nx_footprint fp[NX_MAX_OPERANDS];
    int n = nx_insn_footprint(in, fp);
    for (int i = 0; i < n; i++) {
        nx_hb_race race;
        nx_error e;
        int status = nx_hb_check(c->hb, core, &fp[i], agent, vc, tag, &race, &e);
        if (status < 0) return nx_fail(err, "order check: %s", e.msg);
        if (status == 0) continue;
        const nx_hb_access *a = &race.earlier, *b = &race.later;
        if (!comes_first(c, a, b)) a = &race.later, b = &race.earlier;
        char wa[128], wb[128];
        where(wa, sizeof wa, c, a->tag);
        where(wb, sizeof wb, c, b->tag);
        return nx_hb_race_report(err, wa, a, wb, b, "nothing");
    }
    return 0;
}

/* Runs one step of (core, engine): returns 1 if it executed an instruction,
 * 0 if blocked or done, 2 on a race, -1 on error. */
static int step(ck *c, uint32_t core, unsigned e, uint32_t *pc, uint32_t *barriers_passed, nx_error *err) {
    const nx_stream *s = &c->p->stream[core][e];
    if (*pc >= s->count) return 0;
    nx_insn scratch;
    const nx_insn *in = nx_program_expand(c->p, &s->recs[*pc], &scratch);
    uint32_t n = c->nagents, self = stream_agent(c, core, e);
    uint32_t *vc = nx_hb_clock(c->hb, self);
    if (in->wait_sem != NX_SEM_NONE && in->wait_value > 0) {
        uint32_t span = nx_insn_wait_sems(in); /* each semaphore of a span */
        for (uint32_t j = 0; j < span; j++)
            if (c->ninc[(size_t)core * c->p->sem_count + in->wait_sem + j] < in->wait_value) return 0;
        for (uint32_t j = 0; j < span; j++) {
            size_t si = (size_t)core * c->p->sem_count + in->wait_sem + j;
            nx_vc_join(vc, c->incs[si] + (size_t)(in->wait_value - 1) * n, n);
        }
    }
    if (in->opcode == NX_OP_CORE_BARRIER) {
        uint32_t k = barriers_passed[core * NX_ENG_COUNT + e];
        if (c->narr[core] <= k) { /* arrival (once) */
            if (c->narr[core] == c->caparr[core]) {
                uint32_t cap = c->caparr[core] ? c->caparr[core] * 2 : 8;
                uint32_t *g = realloc(c->arrivals[core], (size_t)cap * n * sizeof(uint32_t));
                if (!g) return nx_fail(err, "order check: out of memory");
                c->arrivals[core] = g;
                c->caparr[core] = cap;
            }
            nx_hb_step(c->hb, self);
            memcpy(c->arrivals[core] + (size_t)c->narr[core] * n, vc, n * sizeof(uint32_t));
            c->narr[core]++;
        }
        for (uint32_t o = 0; o < c->p->cores; o++)
            if (c->narr[o] <= k) return 0;
        for (uint32_t o = 0; o < c->p->cores; o++) nx_vc_join(vc, c->arrivals[o] + (size_t)k * n, n);
        barriers_passed[core * NX_ENG_COUNT + e]++;
        nx_hb_step(c->hb, self);
        if (record_inc(c, core, in, self, vc, err) != 0) return -1;
        (*pc)++;
        return 1;
    }
    nx_hb_step(c->hb, self);
    int status;
    int32_t q = nx_insn_dma_queue(in);
    if (q >= 0) {
        uint32_t qa = nx_hb_names_find(&c->names, nx_hb_queue_key(core, (uint32_t)q));
        uint32_t *qvc = nx_hb_clock(c->hb, qa);
        nx_vc_join(qvc, vc, n);
        nx_hb_step(c->hb, qa);
        status = check(c, core, e, *pc, q, qa, qvc, err);
        if (status == 0 && record_inc(c, core, in, qa, qvc, err) != 0) return -1;
    } else {
        status = check(c, core, e, *pc, -1, self, vc, err);
        if (status == 0 && record_inc(c, core, in, self, vc, err) != 0) return -1;
    }
    if (status != 0) return status > 0 ? 2 : -1;
    (*pc)++;
    return 1;
}

/* Agents and their declared events: each stream's instructions (a barrier
 * counts twice), each queue's transfers. */
static int setup(ck *c, nx_error *err) {
    const nx_program *p = c->p;
    uint32_t insns = 0;
    for (uint32_t core = 0; core < p->cores; core++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = &p->stream[core][e];
            insns += s->count;
            if (nx_hb_names_add(&c->names, nx_hb_stream_key(core, e)) != 0) return -1;
            for (uint32_t i = 0; i < s->count; i++) {
                nx_insn scratch;
                int32_t q = nx_insn_dma_queue(nx_program_expand(p, &s->recs[i], &scratch));
                if (q >= 0 && nx_hb_names_add(&c->names, nx_hb_queue_key(core, (uint32_t)q)) != 0) return -1;
            }
        }
    nx_hb_names_seal(&c->names);
    c->hb = nx_hb_new(c->names.n);
    c->events = malloc((insns ? insns : 1) * sizeof *c->events);
    size_t nsem = (size_t)NX_MAX_CORES * p->sem_count;
    c->incs = calloc(nsem ? nsem : 1, sizeof *c->incs);
    c->ninc = calloc(nsem ? nsem : 1, sizeof *c->ninc);
    c->capinc = calloc(nsem ? nsem : 1, sizeof *c->capinc);
    c->inc_agent = malloc((nsem ? nsem : 1) * sizeof *c->inc_agent);
    c->arrivals = calloc(NX_MAX_CORES, sizeof *c->arrivals);
    if (!c->hb || !c->events || !c->incs || !c->ninc || !c->capinc || !c->inc_agent || !c->arrivals) return -1;
    (void)err;
    c->nagents = nx_hb_agents(c->hb);
    for (size_t i = 0; i < nsem; i++) c->inc_agent[i] = -1;
    for (uint32_t core = 0; core < p->cores; core++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = &p->stream[core][e];
            uint32_t events = s->count;
            for (uint32_t i = 0; i < s->count; i++) {
                nx_insn scratch;
                const nx_insn *in = nx_program_expand(p, &s->recs[i], &scratch);
                int32_t q = nx_insn_dma_queue(in);
                if (in->opcode == NX_OP_CORE_BARRIER) events++;
                if (q >= 0) nx_hb_expect(c->hb, nx_hb_names_find(&c->names, nx_hb_queue_key(core, (uint32_t)q)), 1);
            }
            nx_hb_expect(c->hb, stream_agent(c, core, e), events);
        }
    return 0;
}

static void ck_free(ck *c) {
    nx_hb_free(c->hb);
    nx_hb_names_free(&c->names);
    free(c->events);
    if (c->incs) {
        size_t n = (size_t)NX_MAX_CORES * c->p->sem_count;
        for (size_t i = 0; i < n; i++) free(c->incs[i]);
    }
    free(c->incs);
    free(c->ninc);
    free(c->capinc);
    free(c->inc_agent);
    if (c->arrivals)
        for (uint32_t k = 0; k < NX_MAX_CORES; k++) free(c->arrivals[k]);
    free(c->arrivals);
}

int test_kcheck_program(const nx_program *p, nx_error *err) {
    ck c;
    memset(&c, 0, sizeof c);
    c.p = p;
    int rc = -1;
    if (setup(&c, err) != 0) {
        nx_fail(err, "order check: out of memory");
        goto done;
    }
    uint32_t pc[NX_MAX_CORES][NX_ENG_COUNT] = {{0}};
    uint32_t passed[NX_MAX_CORES * NX_ENG_COUNT] = {0};
    for (;;) {
        int progress = 0, pending = 0;
        for (uint32_t core = 0; core < p->cores; core++)
            for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
                int r;
                while ((r = step(&c, core, e, &pc[core][e], passed, err)) == 1) progress = 1;
                if (r == 2) {
                    rc = 1;
                    goto done;
                }
                if (r < 0) goto done;
                if (pc[core][e] < p->stream[core][e].count) pending = 1;
            }
        if (!pending) break;
        if (!progress) {
            nx_fail(err, "order check: the program deadlocks");
            goto done;
        }
    }
    rc = 0;
done:
    ck_free(&c);
    return rc;
}
