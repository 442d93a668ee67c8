/* The race detector (race.h): vector clocks over agents, driven by the log's
 * semaphore sequence numbers, and a list of live memory accesses per memory
 * space.
 *
 * Processing order. Each record is "computed" (its vector clock fixed and its
 * accesses checked) exactly once, in program order within its engine stream;
 * a DMA transfer is computed together with its issue by the SP. Semaphore
 * events are replayed in sequence order: a wait event computes its record
 * after joining the clock of every increment published so far, an increment
 * event publishes its record's clock (a snapshot taken when the record was
 * computed, since its stream may have moved on since). Records with no event
 * are computed on demand, when a later record of their stream is, and at the
 * end.
 *
 * Equal sequence numbers run increments first, so a waiter at w joins every
 * increment numbered <= w. model.h's contract says "< w"; the model numbers
 * an increment with the count of events once it is visible and gives a
 * waiter the count it has seen, which is "<= w". Joining the one extra
 * increment can only hide a race, never invent one (race.h). */
#include "race.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../isa/opcodes.h"
#include "../isa/validate.h"

#define NX_DMA_QUEUES_MAX 256
#define FLOOR_EVERY 256 /* records computed between recomputations of the floor */
#define NO_AGENT 0xFFFFu
#define NONE UINT32_MAX

enum { EV_INC = 0, EV_WAIT = 1 };
enum { R_COMPUTED = 1 };
enum { STREAMS = NX_MAX_CORES * NX_ENG_COUNT };

typedef struct rc_event {
    uint64_t key;
    uint32_t rec;
    uint32_t type;
} rc_event;

typedef struct rc_keyed {
    uint64_t key;
    uint32_t rec;
} rc_keyed;

/* One live access: a box of one memory space. */
typedef struct rc_access {
    uint64_t lo, hi;
    uint32_t rec;     /* log index */
    uint32_t epoch;   /* the agent's own clock component when it accessed */
    uint16_t p_lo, p_hi;
    uint16_t agent;
    uint8_t write;
    uint8_t kind;
} rc_access;

typedef struct rc_space {
    rc_access *a;
    size_t n, cap;
} rc_space;

enum { SPACES = 1 + 2 * NX_MAX_CORES }; /* hbm, then sbuf and psum per core */

typedef struct rc {
    const nx_program *prog;
    const nx_sim_record *log;
    size_t n;
    nx_error *err;

    uint32_t agents;                                  /* A */
    uint16_t stream_agent[NX_MAX_CORES][NX_ENG_COUNT];
    uint16_t queue_agent[NX_MAX_CORES][NX_DMA_QUEUES_MAX];
    uint32_t *clk;        /* A x A: row a is agent a's clock */
    uint32_t *remaining;  /* per agent: records not yet computed */
    uint32_t *floor;      /* per agent a: min of clock[a] over agents with work left */
    uint32_t since_floor;

    /* engine streams: record ids sorted by index, per (core, engine) */
    uint32_t *order;
    size_t begin[STREAMS + 1];
    size_t cursor[STREAMS];

    uint32_t *partner;    /* issue record <-> its transfer record, or NONE */
    uint8_t *flags;       /* per record */
    uint32_t *snap;       /* per record: snapshot slot + 1, or 0 */
    uint32_t *pool;       /* snapshot slots, A words each */
    uint32_t pool_cap, pool_used;
    uint32_t *pool_free;
    uint32_t pool_free_n;

    uint32_t *semclk;     /* (core * sem_count + sem) x A */
    uint32_t *barclk;     /* A: join of every barrier arrival so far */
    uint32_t *scratch;    /* A */

    rc_space space[SPACES];
} rc;

static const nx_insn *rec_insn(const rc *r, const nx_sim_record *rec) {
    return &r->prog->stream[rec->core][rec->engine].insns[rec->index];
}

/* A DMA transfer on its queue (as opposed to the SP's issue of it). */
static int is_xfer(const nx_sim_record *rec) { return rec->engine == NX_ENG_SP && rec->queue >= 0; }

static int is_dma_opcode(unsigned opcode) {
    return opcode == NX_OP_DMA_COPY || opcode == NX_OP_DMA_TRANSPOSE;
}

/* Records that take a place in their engine stream: everything but a
 * transfer whose issue is logged too. */
static int in_stream(const rc *r, uint32_t id) { return !is_xfer(&r->log[id]) || r->partner[id] == NONE; }

static uint32_t *clock_row(rc *r, uint32_t agent) { return r->clk + (size_t)agent * r->agents; }

static void join(uint32_t *dst, const uint32_t *src, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (src[i] > dst[i]) dst[i] = src[i];
}

static uint32_t *sem_row(rc *r, uint32_t core, uint32_t sem) {
    return r->semclk + ((size_t)core * r->prog->sem_count + sem) * r->agents;
}

static size_t stream_of(const nx_sim_record *rec) { return (size_t)rec->core * NX_ENG_COUNT + rec->engine; }

static int oom(rc *r) { return nx_fail(r->err, "race check: out of memory"); }

/* ---- messages ---- */

static const char *mnemonic(unsigned opcode) {
    const nx_opcode_info *info = nx_opcode_lookup(opcode);
    return info ? info->mnemonic : "?";
}

static void describe_where(char *buf, size_t len, const nx_sim_record *rec) {
    int n = snprintf(buf, len, "core %u %s #%u (%s)", rec->core, nx_engine_name((nx_engine)rec->engine),
                     rec->index, mnemonic(rec->opcode));
    if (is_xfer(rec) && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " on queue %d", rec->queue);
}

static void describe_box(char *buf, size_t len, const rc_access *a) {
    if (a->kind == NX_OPK_HBM)
        snprintf(buf, len, "hbm@[%" PRIu64 ", %" PRIu64 ")", a->lo, a->hi);
    else
        snprintf(buf, len, "%s[%u:%u]@[%" PRIu64 ", %" PRIu64 ")", a->kind == NX_OPK_SBUF ? "sbuf" : "psum",
                 a->p_lo, a->p_hi, a->lo, a->hi);
}

/* Orders the two records of a race for the message: earlier start first. */
static int starts_before(const nx_sim_record *a, const nx_sim_record *b) {
    if (a->t_start_ns != b->t_start_ns) return a->t_start_ns < b->t_start_ns;
    if (a->core != b->core) return a->core < b->core;
    if (a->engine != b->engine) return a->engine < b->engine;
    if (a->queue != b->queue) return a->queue < b->queue;
    return a->index < b->index;
}

static int report_race(rc *r, const rc_access *x, const rc_access *y) {
    const rc_access *first = x, *second = y;
    if (starts_before(&r->log[y->rec], &r->log[x->rec])) first = y, second = x;
    char w1[128], w2[128], b1[96], b2[96];
    describe_where(w1, sizeof w1, &r->log[first->rec]);
    describe_where(w2, sizeof w2, &r->log[second->rec]);
    describe_box(b1, sizeof b1, first);
    describe_box(b2, sizeof b2, second);
    nx_fail(r->err, "race: %s %s %s and %s %s %s with no semaphore ordering them", w1,
            first->write ? "writes" : "reads", b1, w2, second->write ? "writes" : "reads", b2);
    return 1;
}

/* ---- live accesses ---- */

static void recompute_floor(rc *r) {
    uint32_t A = r->agents;
    for (uint32_t a = 0; a < A; a++) r->floor[a] = UINT32_MAX;
    for (uint32_t b = 0; b < A; b++) {
        if (r->remaining[b] == 0) continue;
        const uint32_t *row = clock_row(r, b);
        for (uint32_t a = 0; a < A; a++)
            if (row[a] < r->floor[a]) r->floor[a] = row[a];
    }
    r->since_floor = 0;
}

static int overlaps(const rc_access *x, const rc_access *y) {
    if (!(x->lo < y->hi && y->lo < x->hi)) return 0;
    if (x->kind == NX_OPK_HBM) return 1;
    return x->p_lo < y->p_hi && y->p_lo < x->p_hi;
}

static int contains(const rc_access *outer, const rc_access *inner) {
    if (inner->lo < outer->lo || inner->hi > outer->hi) return 0;
    if (inner->kind == NX_OPK_HBM) return 1;
    return inner->p_lo >= outer->p_lo && inner->p_hi <= outer->p_hi;
}

/* Checks a new access against the live ones of its space, drops those that
 * can no longer matter, and records it. Returns 0, 1 (race) or -1 (OOM).
 * An access is dropped when every agent with work left is ordered after it
 * (the floor), or when an ordered later access covers it: anything unordered
 * with the old one is then unordered with the new one too, and conflicts with
 * it whenever it conflicted with the old one (unless the old one wrote and
 * the new one only reads, which keeps the old one). */
static int check_access(rc *r, uint32_t space, const rc_access *y, const uint32_t *clock) {
    rc_space *sp = &r->space[space];
    for (size_t i = 0; i < sp->n;) {
        rc_access *x = &sp->a[i];
        int drop = x->epoch <= r->floor[x->agent];
        if (!drop && overlaps(x, y)) {
            int ordered = x->agent == y->agent || x->epoch <= clock[x->agent];
            if (!ordered && (x->write || y->write)) return report_race(r, x, y);
            drop = ordered && contains(y, x) && (y->write || !x->write);
        }
        if (drop)
            sp->a[i] = sp->a[--sp->n];
        else
            i++;
    }
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 64;
        rc_access *grown = realloc(sp->a, cap * sizeof *grown);
        if (!grown) return oom(r);
        sp->a = grown;
        sp->cap = cap;
    }
    sp->a[sp->n++] = *y;
    return 0;
}

static int check_accesses(rc *r, uint32_t id, uint32_t agent, const uint32_t *clock) {
    const nx_sim_record *rec = &r->log[id];
    nx_footprint fp[NX_MAX_OPERANDS];
    int nfp = nx_insn_footprint(rec_insn(r, rec), fp);
    for (int i = 0; i < nfp; i++) {
        if (fp[i].hi <= fp[i].lo) continue;
        rc_access y;
        memset(&y, 0, sizeof y);
        y.lo = fp[i].lo;
        y.hi = fp[i].hi;
        y.rec = id;
        y.epoch = clock[agent];
        y.agent = (uint16_t)agent;
        y.write = fp[i].write;
        y.kind = fp[i].kind;
        uint32_t space = 0;
        if (fp[i].kind != NX_OPK_HBM) {
            y.p_lo = fp[i].p_lo;
            y.p_hi = fp[i].p_hi;
            space = 1 + 2u * rec->core + (fp[i].kind == NX_OPK_PSUM);
        }
        int status = check_access(r, space, &y, clock);
        if (status != 0) return status;
    }
    return 0;
}

/* ---- increments: published now, or snapshotted for their event ---- */

static int snapshot(rc *r, uint32_t id, const uint32_t *clock) {
    uint32_t slot;
    if (r->pool_free_n > 0) {
        slot = r->pool_free[--r->pool_free_n];
    } else {
        if (r->pool_used == r->pool_cap) {
            uint32_t cap = r->pool_cap ? r->pool_cap * 2 : 64;
            uint32_t *grown = realloc(r->pool, (size_t)cap * r->agents * sizeof *grown);
            if (grown) r->pool = grown;
            uint32_t *free_grown = realloc(r->pool_free, (size_t)cap * sizeof *free_grown);
            if (free_grown) r->pool_free = free_grown;
            if (!grown || !free_grown) return oom(r);
            r->pool_cap = cap;
        }
        slot = r->pool_used++;
    }
    memcpy(r->pool + (size_t)slot * r->agents, clock, r->agents * sizeof *clock);
    r->snap[id] = slot + 1;
    return 0;
}

/* The increment of record id (whose clock is `clock`), if its instruction
 * has one: a numbered one waits for its event; a barrier's own increment
 * (its number is the arrival) and an unnumbered one are published now. */
static int increment(rc *r, uint32_t id, const uint32_t *clock) {
    const nx_sim_record *rec = &r->log[id];
    const nx_insn *insn = rec_insn(r, rec);
    if (insn->inc_sem == NX_SEM_NONE) return 0;
    if (rec->inc_seq != 0 && insn->opcode != NX_OP_CORE_BARRIER) return snapshot(r, id, clock) == 0 ? 0 : -1;
    join(sem_row(r, rec->core, insn->inc_sem), clock, r->agents);
    return 0;
}

/* ---- computing records ---- */

/* A transfer runs after its queue's previous one and after its issue. */
static int compute_transfer(rc *r, uint32_t id, const uint32_t *issue_clock) {
    const nx_sim_record *rec = &r->log[id];
    uint32_t qa = r->queue_agent[rec->core][rec->queue];
    uint32_t *q = clock_row(r, qa);
    join(q, issue_clock, r->agents);
    q[qa]++;
    r->remaining[qa]--;
    r->flags[id] |= R_COMPUTED;
    int status = check_accesses(r, id, qa, q);
    return status != 0 ? status : increment(r, id, q);
}

/* Fixes the clock of a stream record (the next one of its stream) and checks
 * its accesses. Returns 0, 1 (race) or -1. */
static int compute(rc *r, uint32_t id) {
    const nx_sim_record *rec = &r->log[id];
    const nx_insn *insn = rec_insn(r, rec);
    uint32_t sa = r->stream_agent[rec->core][rec->engine];
    uint32_t *c = clock_row(r, sa);
    if (insn->wait_sem != NX_SEM_NONE) join(c, sem_row(r, rec->core, insn->wait_sem), r->agents);
    if (insn->opcode == NX_OP_CORE_BARRIER) {
        /* an arrival the log did not number is published now (late) */
        if (rec->inc_seq == 0) join(r->barclk, c, r->agents);
        join(c, r->barclk, r->agents);
    }
    c[sa]++;
    r->remaining[sa]--;
    r->flags[id] |= R_COMPUTED;
    if (++r->since_floor >= FLOOR_EVERY) recompute_floor(r);
    if (r->partner[id] != NONE) return compute_transfer(r, r->partner[id], c);
    if (is_xfer(rec)) return compute_transfer(r, id, c); /* transfer logged without its issue */
    int status = check_accesses(r, id, sa, c);
    return status != 0 ? status : increment(r, id, c);
}

/* Computes the stream of stream record id up to it, including it or not. */
static int compute_until(rc *r, uint32_t id, int including) {
    size_t s = stream_of(&r->log[id]);
    while (!(r->flags[id] & R_COMPUTED) && r->cursor[s] < r->begin[s + 1]) {
        uint32_t next = r->order[r->cursor[s]];
        if (next == id && !including) return 0;
        r->cursor[s]++;
        int status = compute(r, next);
        if (status != 0) return status;
    }
    return 0;
}

static int on_inc(rc *r, uint32_t id) {
    const nx_sim_record *rec = &r->log[id];
    const nx_insn *insn = rec_insn(r, rec);
    if (insn->opcode == NX_OP_CORE_BARRIER) {
        /* arrival: publish the clock the stream has reached before the pass */
        if (r->flags[id] & R_COMPUTED) return 0;
        int status = compute_until(r, id, 0);
        if (status != 0) return status;
        memcpy(r->scratch, clock_row(r, r->stream_agent[rec->core][rec->engine]), r->agents * sizeof *r->scratch);
        if (insn->wait_sem != NX_SEM_NONE) join(r->scratch, sem_row(r, rec->core, insn->wait_sem), r->agents);
        join(r->barclk, r->scratch, r->agents);
        return 0;
    }
    uint32_t owner = in_stream(r, id) ? id : r->partner[id];
    int status = compute_until(r, owner, 1);
    if (status != 0) return status;
    if (r->snap[id] != 0) {
        uint32_t slot = r->snap[id] - 1;
        join(sem_row(r, rec->core, insn->inc_sem), r->pool + (size_t)slot * r->agents, r->agents);
        r->pool_free[r->pool_free_n++] = slot;
        r->snap[id] = 0;
    }
    return 0;
}

/* ---- setup ---- */

static int check_record(const rc *r, size_t i) {
    const nx_sim_record *rec = &r->log[i];
    if (rec->core >= r->prog->cores)
        return nx_fail(r->err, "race check: log record %zu names core %u; the program has %u", i, rec->core,
                       r->prog->cores);
    if (rec->engine >= NX_ENG_COUNT)
        return nx_fail(r->err, "race check: log record %zu names engine %u (0..%d)", i, rec->engine,
                       NX_ENG_COUNT - 1);
    const nx_stream *s = &r->prog->stream[rec->core][rec->engine];
    if (rec->index >= s->count)
        return nx_fail(r->err, "race check: log record %zu names core %u %s #%u; the stream has %u instructions",
                       i, rec->core, nx_engine_name((nx_engine)rec->engine), rec->index, s->count);
    const nx_insn *insn = &s->insns[rec->index];
    if (insn->opcode != rec->opcode)
        return nx_fail(r->err, "race check: log record %zu is %s but core %u %s #%u is %s", i,
                       mnemonic(rec->opcode), rec->core, nx_engine_name((nx_engine)rec->engine), rec->index,
                       mnemonic(insn->opcode));
    if (rec->queue >= 0 &&
        (rec->queue >= NX_DMA_QUEUES_MAX || rec->engine != NX_ENG_SP || !is_dma_opcode(insn->opcode)))
        return nx_fail(r->err, "race check: log record %zu (core %u %s #%u, %s) names DMA queue %d", i,
                       rec->core, nx_engine_name((nx_engine)rec->engine), rec->index, mnemonic(rec->opcode),
                       rec->queue);
    if ((insn->wait_sem != NX_SEM_NONE && insn->wait_sem >= r->prog->sem_count) ||
        (insn->inc_sem != NX_SEM_NONE && insn->inc_sem >= r->prog->sem_count))
        return nx_fail(r->err, "race check: core %u %s #%u uses a semaphore beyond the program's %u",
                       rec->core, nx_engine_name((nx_engine)rec->engine), rec->index, r->prog->sem_count);
    return 0;
}

static int keyed_cmp(const void *pa, const void *pb) {
    const rc_keyed *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->rec > b->rec) - (a->rec < b->rec);
}

static int event_cmp(const void *pa, const void *pb) {
    const rc_event *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    if (a->type != b->type) return a->type < b->type ? -1 : 1;
    return (a->rec > b->rec) - (a->rec < b->rec);
}

static uint64_t place_key(const nx_sim_record *rec) {
    return ((uint64_t)stream_of(rec) << 32) | rec->index;
}

static int duplicate(rc *r, const nx_sim_record *rec) {
    return nx_fail(r->err, "race check: core %u %s #%u%s appears twice in the log", rec->core,
                   nx_engine_name((nx_engine)rec->engine), rec->index, is_xfer(rec) ? " (transfer)" : "");
}

/* Pairs each transfer with the SP record of its issue, when both are logged. */
static int pair_transfers(rc *r) {
    for (size_t i = 0; i < r->n; i++) r->partner[i] = NONE;
    size_t nx = 0;
    for (size_t i = 0; i < r->n; i++) nx += is_xfer(&r->log[i]);
    if (nx == 0) return 0;
    rc_keyed *x = malloc(nx * sizeof *x);
    if (!x) return oom(r);
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (is_xfer(&r->log[i])) x[k++] = (rc_keyed){place_key(&r->log[i]), (uint32_t)i};
    qsort(x, nx, sizeof *x, keyed_cmp);
    for (size_t j = 1; j < nx; j++)
        if (x[j].key == x[j - 1].key) {
            free(x);
            return duplicate(r, &r->log[x[j].rec]);
        }
    for (size_t i = 0; i < r->n; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (is_xfer(rec) || rec->engine != NX_ENG_SP || !is_dma_opcode(rec->opcode)) continue;
        uint64_t key = place_key(rec);
        size_t lo = 0, hi = nx;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (x[mid].key < key) lo = mid + 1;
            else hi = mid;
        }
        if (lo < nx && x[lo].key == key && r->partner[x[lo].rec] == NONE) {
            r->partner[i] = x[lo].rec;
            r->partner[x[lo].rec] = (uint32_t)i;
        }
    }
    free(x);
    return 0;
}

static int build_streams(rc *r) {
    size_t ns = 0;
    for (size_t i = 0; i < r->n; i++) ns += in_stream(r, (uint32_t)i);
    rc_keyed *v = malloc((ns ? ns : 1) * sizeof *v);
    if (!v) return oom(r);
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (in_stream(r, (uint32_t)i)) v[k++] = (rc_keyed){place_key(&r->log[i]), (uint32_t)i};
    qsort(v, ns, sizeof *v, keyed_cmp);
    size_t counts[STREAMS] = {0};
    for (size_t j = 0; j < ns; j++) {
        if (j > 0 && v[j].key == v[j - 1].key) {
            free(v);
            return duplicate(r, &r->log[v[j].rec]);
        }
        r->order[j] = v[j].rec;
        counts[v[j].key >> 32]++;
    }
    free(v);
    r->begin[0] = 0;
    for (size_t s = 0; s < STREAMS; s++) {
        r->begin[s + 1] = r->begin[s] + counts[s];
        r->cursor[s] = r->begin[s];
    }
    return 0;
}

static int assign_agents(rc *r) {
    for (unsigned c = 0; c < NX_MAX_CORES; c++) {
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) r->stream_agent[c][e] = NO_AGENT;
        for (unsigned q = 0; q < NX_DMA_QUEUES_MAX; q++) r->queue_agent[c][q] = NO_AGENT;
    }
    uint32_t a = 0;
    for (size_t i = 0; i < r->n; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (in_stream(r, (uint32_t)i) && r->stream_agent[rec->core][rec->engine] == NO_AGENT)
            r->stream_agent[rec->core][rec->engine] = (uint16_t)a++;
        if (is_xfer(rec) && r->queue_agent[rec->core][rec->queue] == NO_AGENT)
            r->queue_agent[rec->core][rec->queue] = (uint16_t)a++;
    }
    r->agents = a ? a : 1;
    uint32_t A = r->agents;
    r->clk = calloc((size_t)A * A, sizeof *r->clk);
    r->remaining = calloc(A, sizeof *r->remaining);
    r->floor = calloc(A, sizeof *r->floor);
    r->barclk = calloc(A, sizeof *r->barclk);
    r->scratch = calloc(A, sizeof *r->scratch);
    size_t sems = (size_t)r->prog->cores * r->prog->sem_count;
    r->semclk = calloc((sems ? sems : 1) * A, sizeof *r->semclk);
    if (!r->clk || !r->remaining || !r->floor || !r->barclk || !r->scratch || !r->semclk) return oom(r);
    for (size_t i = 0; i < r->n; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (in_stream(r, (uint32_t)i)) r->remaining[r->stream_agent[rec->core][rec->engine]]++;
        if (is_xfer(rec)) r->remaining[r->queue_agent[rec->core][rec->queue]]++;
    }
    return 0;
}

/* Events, with keys raised to be monotone in program order per stream (see
 * race.h): a record is never computed before a wait of an earlier record of
 * its stream has been replayed. */
static int build_events(rc *r, rc_event **out, size_t *count) {
    size_t n_ev = 0;
    for (size_t i = 0; i < r->n; i++) n_ev += (r->log[i].wait_seq != 0) + (r->log[i].inc_seq != 0);
    rc_event *ev = malloc((n_ev ? n_ev : 1) * sizeof *ev);
    if (!ev) return oom(r);
    size_t k = 0;
    for (size_t s = 0; s < STREAMS; s++) {
        uint64_t floor_key = 0;
        for (size_t j = r->begin[s]; j < r->begin[s + 1]; j++) {
            uint32_t id = r->order[j];
            const nx_sim_record *rec = &r->log[id];
            int barrier = rec->opcode == NX_OP_CORE_BARRIER;
            if (barrier && rec->inc_seq != 0) {
                floor_key = rec->inc_seq > floor_key ? rec->inc_seq : floor_key;
                ev[k++] = (rc_event){floor_key, id, EV_INC};
            }
            if (rec->wait_seq != 0) {
                floor_key = rec->wait_seq > floor_key ? rec->wait_seq : floor_key;
                ev[k++] = (rc_event){floor_key, id, EV_WAIT};
            }
            /* the increment is the transfer's when the issue has one */
            uint32_t inc_id = r->partner[id] != NONE ? r->partner[id] : id;
            uint64_t inc_seq = r->log[inc_id].inc_seq;
            if (!barrier && inc_seq != 0)
                ev[k++] = (rc_event){inc_seq > floor_key ? inc_seq : floor_key, inc_id, EV_INC};
        }
    }
    qsort(ev, k, sizeof *ev, event_cmp);
    *out = ev;
    *count = k;
    return 0;
}

static void rc_free(rc *r) {
    free(r->clk);
    free(r->remaining);
    free(r->floor);
    free(r->order);
    free(r->partner);
    free(r->flags);
    free(r->snap);
    free(r->pool);
    free(r->pool_free);
    free(r->semclk);
    free(r->barclk);
    free(r->scratch);
    for (unsigned s = 0; s < SPACES; s++) free(r->space[s].a);
}

static int run(rc *r) {
    for (size_t i = 0; i < r->n; i++)
        if (check_record(r, i) != 0) return -1;
    size_t n = r->n ? r->n : 1;
    r->order = malloc(n * sizeof *r->order);
    r->partner = malloc(n * sizeof *r->partner);
    r->flags = calloc(n, sizeof *r->flags);
    r->snap = calloc(n, sizeof *r->snap);
    if (!r->order || !r->partner || !r->flags || !r->snap) return oom(r);
    if (pair_transfers(r) != 0 || build_streams(r) != 0 || assign_agents(r) != 0) return -1;
    recompute_floor(r);
    rc_event *ev = NULL;
    size_t n_ev = 0;
    if (build_events(r, &ev, &n_ev) != 0) return -1;
    int status = 0;
    for (size_t i = 0; i < n_ev && status == 0; i++)
        status = ev[i].type == EV_WAIT ? compute_until(r, ev[i].rec, 1) : on_inc(r, ev[i].rec);
    free(ev);
    for (size_t s = 0; s < STREAMS && status == 0; s++)
        while (r->cursor[s] < r->begin[s + 1] && status == 0) status = compute(r, r->order[r->cursor[s]++]);
    return status;
}

int nx_race_check(const nx_program *prog, const nx_sim_record *log, size_t n, nx_error *err) {
    if (n >= UINT32_MAX) return nx_fail(err, "race check: log of %zu records is too long", n);
    if (n > 0 && !log) return nx_fail(err, "race check: no log (run with keep_log = 1)");
    rc *r = calloc(1, sizeof *r);
    if (!r) return nx_fail(err, "race check: out of memory");
    r->prog = prog;
    r->log = log;
    r->n = n;
    r->err = err;
    int status = run(r);
    rc_free(r);
    free(r);
    return status;
}
