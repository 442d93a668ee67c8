/* A static ordering check of a finished program, independent of how the
 * authoring layer reasoned: it replays the program's own ordering rules and
 * compares every pair of conflicting memory accesses.
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
 * Vector clocks over the agents (per core: 5 streams + the queues used);
 * memory boxes from nx_insn_footprint (SBUF/PSUM per core, HBM shared). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "author_impl.h"
#include "isa/exec.h"
#include "isa/opcodes.h"

typedef struct ck_event {
    uint32_t *vc; /* nagents entries */
} ck_event;

typedef struct ck_access {
    nx_footprint box;
    uint32_t core, agent, event; /* agent's event number (1-based) */
    uint32_t insn_core, insn_engine, insn_index;
    int16_t queue;
    const uint32_t *vc;
} ck_access;

typedef struct ck {
    const nx_program *p;
    uint32_t nagents;
    int32_t queue_agent[NX_MAX_CORES][256]; /* -1: unused */
    uint32_t *clock;                        /* [agent][nagents]: running clocks */
    uint32_t **incs;                        /* per (core, sem): clocks of its increments, in order */
    uint32_t *ninc, *capinc;
    int32_t *inc_agent;                     /* per (core, sem): the one agent incrementing it */
    uint32_t **arrivals;                    /* per core: clocks of its barrier arrivals */
    uint32_t narr[NX_MAX_CORES], caparr[NX_MAX_CORES];
    ck_access *acc;
    size_t nacc, capacc;
    uint32_t **snaps; /* owned clock copies */
    size_t nsnaps, capsnaps;
} ck;

static uint32_t stream_agent(uint32_t core, unsigned engine) { return core * NX_ENG_COUNT + engine; }

static uint32_t *ck_copy(ck *c, const uint32_t *vc) {
    if (c->nsnaps == c->capsnaps) {
        size_t cap = c->capsnaps ? c->capsnaps * 2 : 1024;
        uint32_t **s = realloc(c->snaps, cap * sizeof *s);
        if (!s) return NULL;
        c->snaps = s;
        c->capsnaps = cap;
    }
    uint32_t *v = malloc(c->nagents * sizeof *v);
    if (!v) return NULL;
    memcpy(v, vc, c->nagents * sizeof *v);
    c->snaps[c->nsnaps++] = v;
    return v;
}

static void join(uint32_t n, uint32_t *dst, const uint32_t *src) {
    for (uint32_t a = 0; a < n; a++)
        if (src[a] > dst[a]) dst[a] = src[a];
}

static int push_access(ck *c, const nx_insn *in, uint32_t core, unsigned engine, uint32_t index,
                       uint32_t agent, int16_t queue, const uint32_t *vc) {
    nx_footprint fp[NX_MAX_OPERANDS];
    int n = nx_insn_footprint(in, fp);
    for (int i = 0; i < n; i++) {
        if (c->nacc == c->capacc) {
            size_t cap = c->capacc ? c->capacc * 2 : 1024;
            ck_access *a = realloc(c->acc, cap * sizeof *a);
            if (!a) return -1;
            c->acc = a;
            c->capacc = cap;
        }
        ck_access *a = &c->acc[c->nacc++];
        a->box = fp[i];
        a->core = core;
        a->agent = agent;
        a->event = vc[agent];
        a->insn_core = core;
        a->insn_engine = engine;
        a->insn_index = index;
        a->queue = queue;
        a->vc = vc;
    }
    return 0;
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

static void where(char *buf, size_t len, const ck_access *a, const nx_program *p) {
    const nx_insn *in = &p->stream[a->insn_core][a->insn_engine].insns[a->insn_index];
    nx_insn_where(buf, len, a->insn_core, (nx_engine)a->insn_engine, a->insn_index, in);
    if (a->queue >= 0) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, " on queue %d", a->queue);
    }
}

static void box_text(char *buf, size_t len, const nx_footprint *f) {
    if (f->kind == NX_OPK_HBM)
        snprintf(buf, len, "hbm@[%llu, %llu)", (unsigned long long)f->lo, (unsigned long long)f->hi);
    else
        snprintf(buf, len, "%s[%u:%u]@[%llu, %llu)", f->kind == NX_OPK_SBUF ? "sbuf" : "psum", f->p_lo,
                 f->p_hi, (unsigned long long)f->lo, (unsigned long long)f->hi);
}

static int overlap(const ck_access *a, const ck_access *b) {
    if (a->box.kind != b->box.kind) return 0;
    if (a->box.kind != NX_OPK_HBM && a->core != b->core) return 0;
    if (a->box.lo >= b->box.hi || b->box.lo >= a->box.hi) return 0;
    if (a->box.kind != NX_OPK_HBM && (a->box.p_lo >= b->box.p_hi || b->box.p_lo >= a->box.p_hi))
        return 0;
    return 1;
}

static int cmp_lo(const void *x, const void *y) {
    const ck_access *a = x, *b = y;
    if (a->box.kind != b->box.kind) return a->box.kind < b->box.kind ? -1 : 1;
    if (a->box.lo != b->box.lo) return a->box.lo < b->box.lo ? -1 : 1;
    /* ties in program position, so the report is deterministic */
    if (a->insn_core != b->insn_core) return a->insn_core < b->insn_core ? -1 : 1;
    if (a->insn_engine != b->insn_engine) return a->insn_engine < b->insn_engine ? -1 : 1;
    if (a->insn_index != b->insn_index) return a->insn_index < b->insn_index ? -1 : 1;
    return (a->box.write > b->box.write) - (a->box.write < b->box.write);
}

static int compare_all(ck *c, nx_error *err) {
    /* sort by memory kind then start; a pair can only overlap while the
     * second starts before the first ends */
    qsort(c->acc, c->nacc, sizeof *c->acc, cmp_lo);
    for (size_t i = 0; i < c->nacc; i++) {
        const ck_access *a = &c->acc[i];
        for (size_t j = i + 1; j < c->nacc; j++) {
            const ck_access *b = &c->acc[j];
            if (b->box.kind != a->box.kind || b->box.lo >= a->box.hi) break;
            if (a->agent == b->agent || !(a->box.write || b->box.write) || !overlap(a, b)) continue;
            if (b->vc[a->agent] >= a->event || a->vc[b->agent] >= b->event) continue;
            char wa[128], wb[128], ba[96], bb[96];
            where(wa, sizeof wa, a, c->p);
            where(wb, sizeof wb, b, c->p);
            box_text(ba, sizeof ba, &a->box);
            box_text(bb, sizeof bb, &b->box);
            nx_fail(err, "race: %s %s %s and %s %s %s with nothing ordering them", wa,
                    a->box.write ? "writes" : "reads", ba, wb, b->box.write ? "writes" : "reads", bb);
            return 1;
        }
    }
    return 0;
}

static void ck_free(ck *c) {
    free(c->clock);
    if (c->incs) {
        size_t n = (size_t)NX_MAX_CORES * c->p->sem_count;
        for (size_t i = 0; i < n; i++) free(c->incs[i]);
    }
    free(c->incs);
    free(c->ninc);
    free(c->capinc);
    free(c->inc_agent);
    for (uint32_t k = 0; k < NX_MAX_CORES; k++) free(c->arrivals[k]);
    free(c->arrivals);
    for (size_t i = 0; i < c->nsnaps; i++) free(c->snaps[i]);
    free(c->snaps);
    free(c->acc);
}

/* Runs one step of (core, engine): returns 1 if it executed an instruction,
 * 0 if blocked or done, -1 on error. */
static int step(ck *c, uint32_t core, unsigned e, uint32_t *pc, uint32_t *barriers_passed,
                nx_error *err) {
    const nx_stream *s = &c->p->stream[core][e];
    if (*pc >= s->count) return 0;
    const nx_insn *in = &s->insns[*pc];
    uint32_t n = c->nagents, self = stream_agent(core, e);
    uint32_t *vc = c->clock + (size_t)self * n;
    if (in->wait_sem != NX_SEM_NONE && in->wait_value > 0) {
        size_t si = (size_t)core * c->p->sem_count + in->wait_sem;
        if (c->ninc[si] < in->wait_value) return 0;
        join(n, vc, c->incs[si] + (size_t)(in->wait_value - 1) * n);
    }
    if (in->opcode == NX_OP_CORE_BARRIER) {
        uint32_t k = barriers_passed[core * NX_ENG_COUNT + e];
        /* arrival (once) */
        if (c->narr[core] <= k) {
            if (c->narr[core] == c->caparr[core]) {
                uint32_t cap = c->caparr[core] ? c->caparr[core] * 2 : 8;
                uint32_t *g = realloc(c->arrivals[core], (size_t)cap * n * sizeof(uint32_t));
                if (!g) return nx_fail(err, "order check: out of memory");
                c->arrivals[core] = g;
                c->caparr[core] = cap;
            }
            vc[self]++;
            memcpy(c->arrivals[core] + (size_t)c->narr[core] * n, vc, n * sizeof(uint32_t));
            c->narr[core]++;
        }
        for (uint32_t o = 0; o < c->p->cores; o++)
            if (c->narr[o] <= k) return 0;
        for (uint32_t o = 0; o < c->p->cores; o++) join(n, vc, c->arrivals[o] + (size_t)k * n);
        barriers_passed[core * NX_ENG_COUNT + e]++;
        vc[self]++;
        if (record_inc(c, core, in, self, vc, err) != 0) return -1;
        (*pc)++;
        return 1;
    }
    vc[self]++;
    int dma = in->opcode == NX_OP_DMA_COPY || in->opcode == NX_OP_DMA_TRANSPOSE;
    if (dma) {
        uint32_t q = (uint32_t)in->iparam[0];
        uint32_t qa = (uint32_t)c->queue_agent[core][q];
        uint32_t *qvc = c->clock + (size_t)qa * n;
        join(n, qvc, vc);
        qvc[qa]++;
        const uint32_t *snap = ck_copy(c, qvc);
        if (!snap) return nx_fail(err, "order check: out of memory");
        if (push_access(c, in, core, e, *pc, qa, (int16_t)q, snap) != 0)
            return nx_fail(err, "order check: out of memory");
        if (record_inc(c, core, in, qa, qvc, err) != 0) return -1;
    } else {
        const uint32_t *snap = ck_copy(c, vc);
        if (!snap) return nx_fail(err, "order check: out of memory");
        if (push_access(c, in, core, e, *pc, self, -1, snap) != 0)
            return nx_fail(err, "order check: out of memory");
        if (record_inc(c, core, in, self, vc, err) != 0) return -1;
    }
    (*pc)++;
    return 1;
}

int nx_kcheck_program(const nx_program *p, nx_error *err) {
    ck c;
    memset(&c, 0, sizeof c);
    c.p = p;
    uint32_t nag = NX_MAX_CORES * NX_ENG_COUNT;
    for (uint32_t core = 0; core < NX_MAX_CORES; core++) {
        for (uint32_t q = 0; q < 256; q++) c.queue_agent[core][q] = -1;
        const nx_stream *s = &p->stream[core][NX_ENG_SP];
        for (uint32_t i = 0; i < s->count; i++) {
            const nx_insn *in = &s->insns[i];
            if (in->opcode != NX_OP_DMA_COPY && in->opcode != NX_OP_DMA_TRANSPOSE) continue;
            uint32_t q = (uint32_t)in->iparam[0] & 255u;
            if (c.queue_agent[core][q] < 0) c.queue_agent[core][q] = (int32_t)nag++;
        }
    }
    c.nagents = nag;
    size_t nsem = (size_t)NX_MAX_CORES * p->sem_count;
    c.clock = calloc((size_t)nag * nag, sizeof(uint32_t));
    c.incs = calloc(nsem ? nsem : 1, sizeof *c.incs);
    c.ninc = calloc(nsem ? nsem : 1, sizeof *c.ninc);
    c.capinc = calloc(nsem ? nsem : 1, sizeof *c.capinc);
    c.inc_agent = malloc((nsem ? nsem : 1) * sizeof *c.inc_agent);
    c.arrivals = calloc(NX_MAX_CORES, sizeof *c.arrivals);
    int rc = -1;
    if (!c.clock || !c.incs || !c.ninc || !c.capinc || !c.inc_agent || !c.arrivals) {
        nx_fail(err, "order check: out of memory");
        goto done;
    }
    for (size_t i = 0; i < nsem; i++) c.inc_agent[i] = -1;
    uint32_t pc[NX_MAX_CORES][NX_ENG_COUNT] = {{0}};
    uint32_t passed[NX_MAX_CORES * NX_ENG_COUNT] = {0};
    for (;;) {
        int progress = 0, pending = 0;
        for (uint32_t core = 0; core < p->cores; core++)
            for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
                int r;
                while ((r = step(&c, core, e, &pc[core][e], passed, err)) == 1) progress = 1;
                if (r < 0) goto done;
                if (pc[core][e] < p->stream[core][e].count) pending = 1;
            }
        if (!pending) break;
        if (!progress) {
            nx_fail(err, "order check: the program deadlocks");
            goto done;
        }
    }
    rc = compare_all(&c, err);
done:
    ck_free(&c);
    return rc;
}
