/* The race detector (race.h): the happens-before core of isa/hb.h (vector
 * clocks over agents, the live memory accesses per memory space) driven by
 * the log's semaphore sequence numbers.
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

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../isa/hb.h"
#include "../isa/opcodes.h"
#include "../isa/validate.h"
#include "log.h"

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

typedef struct rc {
    const nx_program *prog;
    const nx_sim_record *log;
    size_t n;
    nx_error *err;

    nx_hb *hb;
    uint32_t agents;                                  /* A */
    nx_hb_names names;                                /* streams and queues that ran */
    uint32_t stream_agent[NX_MAX_CORES][NX_ENG_COUNT];

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
} rc;

/* Header fields only (the semaphores, the opcode): the stored record. */
static const nx_insn_rec *rec_of(const rc *r, const nx_sim_record *rec) {
    return &r->prog->stream[rec->core][rec->engine].recs[rec->index];
}

/* Records that take a place in their engine stream: everything but blanks
 * and a transfer whose issue is logged too. */
static int in_stream(const rc *r, uint32_t id) {
    const nx_sim_record *rec = &r->log[id];
    return !nx_sim_record_is_blank(rec) && (!nx_sim_record_is_transfer(rec) || r->partner[id] == NONE);
}

static uint32_t queue_agent(const rc *r, const nx_sim_record *rec) {
    return nx_hb_names_find(&r->names, nx_hb_queue_key(rec->core, (uint32_t)rec->queue));
}

static uint32_t *sem_row(rc *r, uint32_t core, uint32_t sem) {
    return r->semclk + ((size_t)core * r->prog->sem_count + sem) * r->agents;
}

static size_t stream_of(const nx_sim_record *rec) { return (size_t)rec->core * NX_ENG_COUNT + rec->engine; }

static int oom(rc *r) { return nx_fail(r->err, "race check: out of memory"); }

/* ---- messages ---- */

/* Orders the two records of a race for the message: earlier start first. */
static int starts_before(const nx_sim_record *a, const nx_sim_record *b) {
    if (a->t_start_ns != b->t_start_ns) return a->t_start_ns < b->t_start_ns;
    if (a->core != b->core) return a->core < b->core;
    if (a->engine != b->engine) return a->engine < b->engine;
    if (a->queue != b->queue) return a->queue < b->queue;
    return a->index < b->index;
}

static int report_race(rc *r, const nx_hb_race *race) {
    const nx_hb_access *first = &race->earlier, *second = &race->later;
    if (starts_before(&r->log[second->tag], &r->log[first->tag])) first = &race->later, second = &race->earlier;
    char w1[128], w2[128];
    nx_sim_record_where(w1, sizeof w1, &r->log[first->tag]);
    nx_sim_record_where(w2, sizeof w2, &r->log[second->tag]);
    return nx_hb_race_report(r->err, w1, first, w2, second, "no semaphore");
}

/* Checks every footprint box of record id (of `agent`, at `clock`). Returns
 * 0, 1 (race) or -1. */
static int check_accesses(rc *r, uint32_t id, uint32_t agent, const uint32_t *clock) {
    const nx_sim_record *rec = &r->log[id];
    nx_footprint fp[NX_MAX_OPERANDS];
    nx_insn scratch;
    int nfp = nx_insn_footprint(nx_program_expand(r->prog, rec_of(r, rec), &scratch), fp);
    for (int i = 0; i < nfp; i++) {
        nx_hb_race race;
        nx_error e;
        int status = nx_hb_check(r->hb, rec->core, &fp[i], agent, clock, id, &race, &e);
        if (status < 0) return nx_fail(r->err, "race check: %s", e.msg);
        if (status > 0) return report_race(r, &race);
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

/* A barrier whose arrival is numbered after its pass: the last core to
 * arrive (its arrival becomes visible to the others later). */
static int late_arrival(const nx_sim_record *rec) {
    return rec->opcode == NX_OP_CORE_BARRIER && rec->wait_seq != 0 && rec->inc_seq > rec->wait_seq;
}

/* The increment of record id (whose clock is `clock`), if its instruction
 * has one: a numbered one waits for its event; a barrier's own increment
 * (its number is the arrival) and an unnumbered one are published now. */
static int increment(rc *r, uint32_t id, const uint32_t *clock) {
    const nx_sim_record *rec = &r->log[id];
    const nx_insn_rec *insn = rec_of(r, rec);
    if (insn->inc_sem == NX_SEM_NONE) return 0;
    if (rec->inc_seq != 0 && insn->opcode != NX_OP_CORE_BARRIER) return snapshot(r, id, clock) == 0 ? 0 : -1;
    nx_vc_join(sem_row(r, rec->core, insn->inc_sem), clock, r->agents);
    return 0;
}

/* ---- computing records ---- */

/* A transfer runs after its queue's previous one and after its issue. */
static int compute_transfer(rc *r, uint32_t id, const uint32_t *issue_clock) {
    const nx_sim_record *rec = &r->log[id];
    uint32_t qa = queue_agent(r, rec);
    uint32_t *q = nx_hb_clock(r->hb, qa);
    nx_vc_join(q, issue_clock, r->agents);
    nx_hb_step(r->hb, qa);
    r->flags[id] |= R_COMPUTED;
    int status = check_accesses(r, id, qa, q);
    return status != 0 ? status : increment(r, id, q);
}

/* Joins into c what every semaphore of insn's wait (its span: each of them)
 * has published so far. */
static void join_waits(rc *r, uint32_t *c, uint32_t core, const nx_insn_rec *insn) {
    if (insn->wait_sem == NX_SEM_NONE) return;
    uint32_t n = insn->wait_span ? insn->wait_span : 1;
    for (uint32_t i = 0; i < n; i++) nx_vc_join(c, sem_row(r, core, insn->wait_sem + i), r->agents);
}

/* Fixes the clock of a stream record (the next one of its stream) and checks
 * its accesses. Returns 0, 1 (race) or -1. */
static int compute(rc *r, uint32_t id) {
    const nx_sim_record *rec = &r->log[id];
    const nx_insn_rec *insn = rec_of(r, rec);
    uint32_t sa = r->stream_agent[rec->core][rec->engine];
    uint32_t *c = nx_hb_clock(r->hb, sa);
    join_waits(r, c, rec->core, insn);
    if (insn->opcode == NX_OP_CORE_BARRIER) {
        /* an arrival the log did not number, or numbered after the pass, is
         * published now: the clock is the stream's before the pass, and
         * every pass computed after this one happens after the arrival */
        if (rec->inc_seq == 0 || late_arrival(rec)) nx_vc_join(r->barclk, c, r->agents);
        nx_vc_join(c, r->barclk, r->agents);
    }
    nx_hb_step(r->hb, sa);
    r->flags[id] |= R_COMPUTED;
    if (r->partner[id] != NONE) return compute_transfer(r, r->partner[id], c);
    if (nx_sim_record_is_transfer(rec)) return compute_transfer(r, id, c); /* logged without its issue */
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
    const nx_insn_rec *insn = rec_of(r, rec);
    if (insn->opcode == NX_OP_CORE_BARRIER) {
        /* arrival: publish the clock the stream has reached before the pass */
        if (r->flags[id] & R_COMPUTED) return 0;
        int status = compute_until(r, id, 0);
        if (status != 0) return status;
        memcpy(r->scratch, nx_hb_clock(r->hb, r->stream_agent[rec->core][rec->engine]),
               r->agents * sizeof *r->scratch);
        join_waits(r, r->scratch, rec->core, insn);
        nx_vc_join(r->barclk, r->scratch, r->agents);
        return 0;
    }
    uint32_t owner = in_stream(r, id) ? id : r->partner[id];
    int status = compute_until(r, owner, 1);
    if (status != 0) return status;
    if (r->snap[id] != 0) {
        uint32_t slot = r->snap[id] - 1;
        nx_vc_join(sem_row(r, rec->core, insn->inc_sem), r->pool + (size_t)slot * r->agents, r->agents);
        r->pool_free[r->pool_free_n++] = slot;
        r->snap[id] = 0;
    }
    return 0;
}

/* ---- setup ---- */

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
                   nx_engine_name((nx_engine)rec->engine), rec->index,
                   nx_sim_record_is_transfer(rec) ? " (transfer)" : "");
}

/* Pairs each transfer with the SP record of its issue, when both are logged. */
static int pair_transfers(rc *r) {
    for (size_t i = 0; i < r->n; i++) r->partner[i] = NONE;
    size_t nx = 0;
    for (size_t i = 0; i < r->n; i++) nx += nx_sim_record_is_transfer(&r->log[i]);
    if (nx == 0) return 0;
    rc_keyed *x = malloc(nx * sizeof *x);
    if (!x) return oom(r);
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (nx_sim_record_is_transfer(&r->log[i])) x[k++] = (rc_keyed){place_key(&r->log[i]), (uint32_t)i};
    qsort(x, nx, sizeof *x, keyed_cmp);
    for (size_t j = 1; j < nx; j++)
        if (x[j].key == x[j - 1].key) {
            uint32_t twice = x[j].rec;
            free(x);
            return duplicate(r, &r->log[twice]);
        }
    for (size_t i = 0; i < r->n; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (nx_sim_record_is_transfer(rec) || rec->engine != NX_ENG_SP || !nx_opcode_is_dma(rec->opcode)) continue;
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
            uint32_t twice = v[j].rec;
            free(v);
            return duplicate(r, &r->log[twice]);
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

/* One agent per engine stream and per DMA queue that the log shows running,
 * each expecting its records. */
static int assign_agents(rc *r) {
    for (size_t i = 0; i < r->n; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (in_stream(r, (uint32_t)i) && nx_hb_names_add(&r->names, nx_hb_stream_key(rec->core, rec->engine)) != 0)
            return oom(r);
        if (nx_sim_record_is_transfer(rec) &&
            nx_hb_names_add(&r->names, nx_hb_queue_key(rec->core, (uint32_t)rec->queue)) != 0)
            return oom(r);
    }
    nx_hb_names_seal(&r->names);
    for (unsigned c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            r->stream_agent[c][e] = nx_hb_names_find(&r->names, nx_hb_stream_key(c, e));
    r->hb = nx_hb_new(r->names.n);
    if (!r->hb) return oom(r);
    r->agents = nx_hb_agents(r->hb);
    uint32_t A = r->agents;
    r->barclk = calloc(A, sizeof *r->barclk);
    r->scratch = calloc(A, sizeof *r->scratch);
    size_t sems = (size_t)r->prog->cores * r->prog->sem_count;
    r->semclk = calloc((sems ? sems : 1) * A, sizeof *r->semclk);
    if (!r->barclk || !r->scratch || !r->semclk) return oom(r);
    for (size_t i = 0; i < r->n; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (in_stream(r, (uint32_t)i)) nx_hb_expect(r->hb, r->stream_agent[rec->core][rec->engine], 1);
        if (nx_sim_record_is_transfer(rec)) nx_hb_expect(r->hb, queue_agent(r, rec), 1);
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
                uint64_t arrival = rec->inc_seq > floor_key ? rec->inc_seq : floor_key;
                ev[k++] = (rc_event){arrival, id, EV_INC};
                /* The last core to arrive passes at once and its own arrival
                 * is numbered later (when the other core sees it): its pass
                 * does not wait for that number, and whatever waits for the
                 * barrier's increment must see it at the pass. */
                if (!late_arrival(rec)) floor_key = arrival;
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
    nx_hb_free(r->hb);
    nx_hb_names_free(&r->names);
    free(r->order);
    free(r->partner);
    free(r->flags);
    free(r->snap);
    free(r->pool);
    free(r->pool_free);
    free(r->semclk);
    free(r->barclk);
    free(r->scratch);
}

static int run(rc *r) {
    nx_error e;
    if (nx_sim_log_check(r->prog, r->log, r->n, 0, &e) != 0) return nx_fail(r->err, "race check: %s", e.msg);
    size_t n = r->n ? r->n : 1;
    r->order = malloc(n * sizeof *r->order);
    r->partner = malloc(n * sizeof *r->partner);
    r->flags = calloc(n, sizeof *r->flags);
    r->snap = calloc(n, sizeof *r->snap);
    if (!r->order || !r->partner || !r->flags || !r->snap) return oom(r);
    if (pair_transfers(r) != 0 || build_streams(r) != 0 || assign_agents(r) != 0) return -1;
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
