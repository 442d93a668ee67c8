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

/* The live accesses of one memory space. They can be many (two cores that
 * never synchronise keep all of each other's HBM accesses live), so they
 * live in a treap keyed by (byte lo, insertion number) whose nodes know
 * their subtree's largest byte hi: a query visits only the accesses whose
 * bytes it overlaps (partitions are then compared on the visit). */
#define NIL UINT32_MAX

typedef struct hnode {
    rc_access a;
    uint64_t maxhi;   /* largest a.hi in this subtree */
    uint32_t seq;     /* insertion number: makes keys unique */
    uint32_t prio;
    uint32_t l, r;    /* children; l links the free list */
} hnode;

typedef struct htree {
    hnode *n;
    uint32_t cap, used, root, free_head, count, next_seq;
    uint32_t swept_at;    /* count after the last sweep of prunable accesses */
    uint64_t rng;
    uint32_t *drop;       /* nodes a query found redundant */
    uint32_t drop_n, drop_cap;
} htree;

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

    htree space[SPACES];
} rc;

static const nx_insn *rec_insn(const rc *r, const nx_sim_record *rec) {
    return &r->prog->stream[rec->core][rec->engine].insns[rec->index];
}

/* A DMA transfer on its queue (as opposed to the SP's issue of it). */
static int is_xfer(const nx_sim_record *rec) { return rec->engine == NX_ENG_SP && rec->queue >= 0; }

static int is_dma_opcode(unsigned opcode) {
    return opcode == NX_OP_DMA_COPY || opcode == NX_OP_DMA_TRANSPOSE;
}

/* The model logs one slot per instruction; the slots of instructions that
 * never ran (after an `end`) stay zeroed. Queue 0 off the SP marks them: no
 * real record has it. */
static int is_blank(const nx_sim_record *rec) { return rec->queue == 0 && rec->engine != NX_ENG_SP; }

/* Records that take a place in their engine stream: everything but blanks
 * and a transfer whose issue is logged too. */
static int in_stream(const rc *r, uint32_t id) {
    const nx_sim_record *rec = &r->log[id];
    return !is_blank(rec) && (!is_xfer(rec) || r->partner[id] == NONE);
}

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

/* ---- the live-access treap ---- */

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

static void t_update(htree *t, uint32_t i) {
    hnode *n = &t->n[i];
    n->maxhi = max3(n->a.hi, n->l == NIL ? 0 : t->n[n->l].maxhi, n->r == NIL ? 0 : t->n[n->r].maxhi);
}

static int t_less(const htree *t, uint32_t x, uint32_t y) {
    const hnode *a = &t->n[x], *b = &t->n[y];
    return a->a.lo != b->a.lo ? a->a.lo < b->a.lo : a->seq < b->seq;
}

static uint32_t t_insert(htree *t, uint32_t root, uint32_t x) {
    if (root == NIL) return x;
    if (t_less(t, x, root)) {
        uint32_t l = t_insert(t, t->n[root].l, x);
        t->n[root].l = l;
        if (t->n[l].prio > t->n[root].prio) { /* rotate right */
            t->n[root].l = t->n[l].r;
            t->n[l].r = root;
            t_update(t, root);
            root = l;
        }
    } else {
        uint32_t rr = t_insert(t, t->n[root].r, x);
        t->n[root].r = rr;
        if (t->n[rr].prio > t->n[root].prio) { /* rotate left */
            t->n[root].r = t->n[rr].l;
            t->n[rr].l = root;
            t_update(t, root);
            root = rr;
        }
    }
    t_update(t, root);
    return root;
}

/* Joins two treaps, every key of a below every key of b. */
static uint32_t t_merge(htree *t, uint32_t a, uint32_t b) {
    if (a == NIL) return b;
    if (b == NIL) return a;
    if (t->n[a].prio > t->n[b].prio) {
        t->n[a].r = t_merge(t, t->n[a].r, b);
        t_update(t, a);
        return a;
    }
    t->n[b].l = t_merge(t, a, t->n[b].l);
    t_update(t, b);
    return b;
}

static uint32_t t_delete(htree *t, uint32_t root, uint32_t x) {
    if (root == NIL) return NIL;
    if (root == x) return t_merge(t, t->n[x].l, t->n[x].r);
    if (t_less(t, x, root))
        t->n[root].l = t_delete(t, t->n[root].l, x);
    else
        t->n[root].r = t_delete(t, t->n[root].r, x);
    t_update(t, root);
    return root;
}

static int t_add(rc *r, htree *t, const rc_access *a) {
    uint32_t i;
    if (t->free_head != NIL) {
        i = t->free_head;
        t->free_head = t->n[i].l;
    } else {
        if (t->used == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 256;
            hnode *grown = realloc(t->n, (size_t)cap * sizeof *grown);
            if (!grown) return oom(r);
            t->n = grown;
            t->cap = cap;
        }
        i = t->used++;
    }
    t->rng ^= t->rng << 13, t->rng ^= t->rng >> 7, t->rng ^= t->rng << 17;
    t->n[i] = (hnode){*a, a->hi, t->next_seq++, (uint32_t)(t->rng >> 32), NIL, NIL};
    t->root = t_insert(t, t->root, i);
    t->count++;
    return 0;
}

static void t_remove(htree *t, uint32_t i) {
    t->root = t_delete(t, t->root, i);
    t->n[i].l = t->free_head;
    t->free_head = i;
    t->count--;
}

static int t_mark(rc *r, htree *t, uint32_t i) {
    if (t->drop_n == t->drop_cap) {
        uint32_t cap = t->drop_cap ? t->drop_cap * 2 : 64;
        uint32_t *grown = realloc(t->drop, (size_t)cap * sizeof *grown);
        if (!grown) return oom(r);
        t->drop = grown;
        t->drop_cap = cap;
    }
    t->drop[t->drop_n++] = i;
    return 0;
}

/* Visits the accesses overlapping y (in-order, left subtrees recursively);
 * marks the ones to drop. Returns 0, 1 (race) or -1. */
static int t_query(rc *r, htree *t, uint32_t i, const rc_access *y, const uint32_t *clock) {
    while (i != NIL) {
        const hnode *n = &t->n[i];
        if (n->maxhi <= y->lo) return 0;
        int status = t_query(r, t, n->l, y, clock);
        if (status != 0) return status;
        n = &t->n[i];
        if (n->a.lo >= y->hi) return 0; /* so does everything to its right */
        const rc_access *x = &n->a;
        int drop = x->epoch <= r->floor[x->agent];
        if (!drop && overlaps(x, y)) {
            int ordered = x->agent == y->agent || x->epoch <= clock[x->agent];
            if (!ordered && (x->write || y->write)) return report_race(r, x, y);
            drop = ordered && contains(y, x) && (y->write || !x->write);
        }
        if (drop && t_mark(r, t, i) != 0) return -1;
        i = n->r;
    }
    return 0;
}

/* Drops every access all agents with work left are ordered after; run when
 * the tree has doubled since the last sweep, so it costs O(1) amortised. */
static int t_sweep(rc *r, htree *t) {
    recompute_floor(r);
    t->drop_n = 0;
    /* in-order walk of the live tree with an explicit stack */
    uint32_t depth_cap = 128, sp = 0;
    uint32_t *stack = malloc(depth_cap * sizeof *stack);
    if (!stack) return oom(r);
    uint32_t i = t->root;
    while (i != NIL || sp > 0) {
        while (i != NIL) {
            if (sp == depth_cap) {
                uint32_t *grown = realloc(stack, (size_t)depth_cap * 2 * sizeof *grown);
                if (!grown) {
                    free(stack);
                    return oom(r);
                }
                stack = grown;
                depth_cap *= 2;
            }
            stack[sp++] = i;
            i = t->n[i].l;
        }
        i = stack[--sp];
        const rc_access *x = &t->n[i].a;
        if (x->epoch <= r->floor[x->agent] && t_mark(r, t, i) != 0) {
            free(stack);
            return -1;
        }
        i = t->n[i].r;
    }
    free(stack);
    for (uint32_t k = 0; k < t->drop_n; k++) t_remove(t, t->drop[k]);
    t->drop_n = 0;
    t->swept_at = t->count;
    return 0;
}

/* Checks a new access against the live ones of its space, drops those that
 * can no longer matter, and records it. Returns 0, 1 (race) or -1 (OOM).
 * An access is dropped when every agent with work left is ordered after it
 * (the floor; checked on every visit, and by a sweep of the whole tree each
 * time it doubles), or when an ordered later access covers it: anything
 * unordered with the old one is then unordered with the new one too, and
 * conflicts with it whenever it conflicted with the old one (unless the old
 * one wrote and the new one only reads, which keeps the old one). */
static int check_access(rc *r, htree *t, const rc_access *y, const uint32_t *clock) {
    t->drop_n = 0;
    int status = t_query(r, t, t->root, y, clock);
    if (status != 0) return status;
    for (uint32_t k = 0; k < t->drop_n; k++) t_remove(t, t->drop[k]);
    t->drop_n = 0;
    if (t_add(r, t, y) != 0) return -1;
    if (t->count >= 2 * t->swept_at + 1024) return t_sweep(r, t);
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
        int status = check_access(r, &r->space[space], &y, clock);
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
    if (is_blank(rec)) return 0;
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
            uint32_t twice = x[j].rec;
            free(x);
            return duplicate(r, &r->log[twice]);
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
    for (unsigned s = 0; s < SPACES; s++) {
        free(r->space[s].n);
        free(r->space[s].drop);
    }
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
    for (unsigned s = 0; s < SPACES; s++) {
        r->space[s].root = r->space[s].free_head = NIL;
        r->space[s].rng = 0x9E3779B97F4A7C15ull + s;
    }
    int status = run(r);
    rc_free(r);
    free(r);
    return status;
}
