/* The happens-before core (hb.h): agent names, clocks, and per memory space
 * a treap of live accesses.
 *
 * Live accesses can be many (two cores that never synchronise keep all of
 * each other's HBM accesses live), so each space keeps them in a treap keyed
 * by (byte lo, insertion number) whose nodes know their subtree's largest
 * byte hi: a query visits only the accesses whose bytes it overlaps
 * (partitions are then compared on the visit).
 *
 * Dropping. The floor of agent a is the least clock[a] over the agents with
 * declared events left; an access with epoch <= floor[agent] is followed by
 * everything still to come and can never race again. The floor is
 * recomputed every FLOOR_EVERY steps and before each sweep; a sweep of the
 * whole tree runs each time the tree has doubled, so it costs O(1)
 * amortised. A query also drops an old access that a new ordered access
 * covers: whatever is unordered with the old one is unordered with the new
 * one too and conflicts with it whenever it conflicted with the old one
 * (unless the old one wrote and the new one only reads, which keeps it). */
#include "hb.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "insn.h"

#define FLOOR_EVERY 256 /* steps between recomputations of the floor */
#define NIL UINT32_MAX

enum { SPACES = 1 + 2 * NX_MAX_CORES }; /* hbm, then sbuf and psum per core */

/* ---- names ---- */

int nx_hb_names_add(nx_hb_names *names, uint64_t key) {
    if (names->n == names->cap) {
        uint32_t cap = names->cap ? names->cap * 2 : 64;
        uint64_t *grown = realloc(names->keys, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        names->keys = grown;
        names->cap = cap;
    }
    names->keys[names->n++] = key;
    return 0;
}

static int key_cmp(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

void nx_hb_names_seal(nx_hb_names *names) {
    if (names->n == 0) return;
    qsort(names->keys, names->n, sizeof *names->keys, key_cmp);
    uint32_t w = 1;
    for (uint32_t i = 1; i < names->n; i++)
        if (names->keys[i] != names->keys[w - 1]) names->keys[w++] = names->keys[i];
    names->n = w;
}

uint32_t nx_hb_names_find(const nx_hb_names *names, uint64_t key) {
    uint32_t lo = 0, hi = names->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (names->keys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < names->n && names->keys[lo] == key ? lo : NX_HB_NONE;
}

void nx_hb_names_free(nx_hb_names *names) {
    free(names->keys);
    memset(names, 0, sizeof *names);
}

/* ---- the live-access treap ---- */

typedef struct hnode {
    nx_hb_access a;
    uint64_t maxhi; /* largest a.hi in this subtree */
    uint32_t seq;   /* insertion number: makes keys unique */
    uint32_t prio;
    uint32_t l, r;  /* children; l links the free list */
} hnode;

typedef struct htree {
    hnode *n;
    uint32_t cap, used, root, free_head, count, next_seq;
    uint32_t swept_at; /* count after the last sweep of prunable accesses */
    uint64_t rng;
    uint32_t *drop;    /* nodes a query found redundant */
    uint32_t drop_n, drop_cap;
} htree;

struct nx_hb {
    uint32_t agents;
    uint32_t *clk;       /* agents x agents: row a is agent a's clock */
    uint32_t *remaining; /* per agent: declared events not yet stepped */
    uint32_t *floor;     /* per agent a: least clock[a] over agents with events left */
    uint32_t since_floor;
    htree space[SPACES];
};

static void recompute_floor(nx_hb *hb) {
    uint32_t A = hb->agents;
    for (uint32_t a = 0; a < A; a++) hb->floor[a] = UINT32_MAX;
    for (uint32_t b = 0; b < A; b++) {
        if (hb->remaining[b] == 0) continue;
        const uint32_t *row = hb->clk + (size_t)b * A;
        for (uint32_t a = 0; a < A; a++)
            if (row[a] < hb->floor[a]) hb->floor[a] = row[a];
    }
    hb->since_floor = 0;
}

static int overlaps(const nx_hb_access *x, const nx_hb_access *y) {
    if (!(x->lo < y->hi && y->lo < x->hi)) return 0;
    if (x->kind == NX_OPK_HBM) return 1;
    return x->p_lo < y->p_hi && y->p_lo < x->p_hi;
}

static int contains(const nx_hb_access *outer, const nx_hb_access *inner) {
    if (inner->lo < outer->lo || inner->hi > outer->hi) return 0;
    if (inner->kind == NX_OPK_HBM) return 1;
    return inner->p_lo >= outer->p_lo && inner->p_hi <= outer->p_hi;
}

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

static int t_add(htree *t, const nx_hb_access *a) {
    uint32_t i;
    if (t->free_head != NIL) {
        i = t->free_head;
        t->free_head = t->n[i].l;
    } else {
        if (t->used == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 256;
            hnode *grown = realloc(t->n, (size_t)cap * sizeof *grown);
            if (!grown) return -1;
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

static int t_mark(htree *t, uint32_t i) {
    if (t->drop_n == t->drop_cap) {
        uint32_t cap = t->drop_cap ? t->drop_cap * 2 : 64;
        uint32_t *grown = realloc(t->drop, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        t->drop = grown;
        t->drop_cap = cap;
    }
    t->drop[t->drop_n++] = i;
    return 0;
}

/* Visits the accesses overlapping y (in order, left subtrees recursively);
 * marks the ones to drop. Returns 0, 1 (race, *race filled) or -1 (OOM). */
static int t_query(const nx_hb *hb, htree *t, uint32_t i, const nx_hb_access *y, const uint32_t *clock,
                   nx_hb_race *race) {
    while (i != NIL) {
        const hnode *n = &t->n[i];
        if (n->maxhi <= y->lo) return 0;
        int status = t_query(hb, t, n->l, y, clock, race);
        if (status != 0) return status;
        n = &t->n[i];
        if (n->a.lo >= y->hi) return 0; /* so does everything to its right */
        const nx_hb_access *x = &n->a;
        int drop = x->epoch <= hb->floor[x->agent];
        if (!drop && overlaps(x, y)) {
            int ordered = x->agent == y->agent || x->epoch <= clock[x->agent];
            if (!ordered && (x->write || y->write)) {
                race->earlier = *x;
                race->later = *y;
                return 1;
            }
            drop = ordered && contains(y, x) && (y->write || !x->write);
        }
        if (drop && t_mark(t, i) != 0) return -1;
        i = n->r;
    }
    return 0;
}

/* Drops every access all agents with work left follow. */
static int t_sweep(nx_hb *hb, htree *t) {
    recompute_floor(hb);
    t->drop_n = 0;
    /* in-order walk of the live tree with an explicit stack */
    uint32_t depth_cap = 128, sp = 0;
    uint32_t *stack = malloc(depth_cap * sizeof *stack);
    if (!stack) return -1;
    uint32_t i = t->root;
    while (i != NIL || sp > 0) {
        while (i != NIL) {
            if (sp == depth_cap) {
                uint32_t *grown = realloc(stack, (size_t)depth_cap * 2 * sizeof *grown);
                if (!grown) {
                    free(stack);
                    return -1;
                }
                stack = grown;
                depth_cap *= 2;
            }
            stack[sp++] = i;
            i = t->n[i].l;
        }
        i = stack[--sp];
        const nx_hb_access *x = &t->n[i].a;
        if (x->epoch <= hb->floor[x->agent] && t_mark(t, i) != 0) {
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

/* ---- the core ---- */

nx_hb *nx_hb_new(uint32_t agents) {
    if (agents == 0) agents = 1;
    nx_hb *hb = calloc(1, sizeof *hb);
    if (!hb) return NULL;
    hb->agents = agents;
    hb->clk = calloc((size_t)agents * agents, sizeof *hb->clk);
    hb->remaining = calloc(agents, sizeof *hb->remaining);
    hb->floor = calloc(agents, sizeof *hb->floor);
    for (unsigned s = 0; s < SPACES; s++) {
        hb->space[s].root = hb->space[s].free_head = NIL;
        hb->space[s].rng = 0x9E3779B97F4A7C15ull + s;
    }
    if (!hb->clk || !hb->remaining || !hb->floor) {
        nx_hb_free(hb);
        return NULL;
    }
    return hb;
}

void nx_hb_free(nx_hb *hb) {
    if (!hb) return;
    free(hb->clk);
    free(hb->remaining);
    free(hb->floor);
    for (unsigned s = 0; s < SPACES; s++) {
        free(hb->space[s].n);
        free(hb->space[s].drop);
    }
    free(hb);
}

uint32_t nx_hb_agents(const nx_hb *hb) { return hb->agents; }

uint32_t *nx_hb_clock(nx_hb *hb, uint32_t agent) { return hb->clk + (size_t)agent * hb->agents; }

void nx_hb_expect(nx_hb *hb, uint32_t agent, uint32_t events) {
    hb->remaining[agent] += events;
    /* an agent with work again must count in the floor at once: until the
     * next recomputation the floor drops nothing */
    memset(hb->floor, 0, (size_t)hb->agents * sizeof *hb->floor);
}

uint32_t nx_hb_step(nx_hb *hb, uint32_t agent) {
    uint32_t *c = nx_hb_clock(hb, agent);
    c[agent]++;
    if (hb->remaining[agent] > 0) hb->remaining[agent]--;
    if (++hb->since_floor >= FLOOR_EVERY) recompute_floor(hb);
    return c[agent];
}

int nx_hb_check(nx_hb *hb, uint32_t core, const nx_footprint *box, uint32_t agent, const uint32_t *clock,
                uint32_t tag, nx_hb_race *race, nx_error *err) {
    if (box->hi <= box->lo) return 0;
    if (core >= NX_MAX_CORES) return nx_fail(err, "happens-before: core %u (at most %d)", core, NX_MAX_CORES);
    nx_hb_access y;
    memset(&y, 0, sizeof y);
    y.lo = box->lo;
    y.hi = box->hi;
    y.tag = tag;
    y.agent = agent;
    y.epoch = clock[agent];
    y.core = core;
    y.write = box->write;
    y.kind = box->kind;
    uint32_t space = 0;
    if (box->kind != NX_OPK_HBM) {
        y.p_lo = box->p_lo;
        y.p_hi = box->p_hi;
        space = 1 + 2u * core + (box->kind == NX_OPK_PSUM);
    }
    htree *t = &hb->space[space];
    t->drop_n = 0;
    int status = t_query(hb, t, t->root, &y, clock, race);
    if (status < 0) return nx_fail(err, "happens-before: out of memory");
    if (status > 0) return 1;
    for (uint32_t k = 0; k < t->drop_n; k++) t_remove(t, t->drop[k]);
    t->drop_n = 0;
    if (t_add(t, &y) != 0) return nx_fail(err, "happens-before: out of memory");
    if (t->count >= 2 * t->swept_at + 1024 && t_sweep(hb, t) != 0)
        return nx_fail(err, "happens-before: out of memory");
    return 0;
}

/* ---- messages ---- */

void nx_hb_box_text(char *buf, size_t len, const nx_hb_access *a) {
    if (a->kind == NX_OPK_HBM)
        snprintf(buf, len, "hbm@[%" PRIu64 ", %" PRIu64 ")", a->lo, a->hi);
    else
        snprintf(buf, len, "%s[%u:%u]@[%" PRIu64 ", %" PRIu64 ")", a->kind == NX_OPK_SBUF ? "sbuf" : "psum",
                 a->p_lo, a->p_hi, a->lo, a->hi);
}

int nx_hb_race_report(nx_error *err, const char *where_a, const nx_hb_access *a, const char *where_b,
                      const nx_hb_access *b, const char *why) {
    char ba[96], bb[96];
    nx_hb_box_text(ba, sizeof ba, a);
    nx_hb_box_text(bb, sizeof bb, b);
    nx_fail(err, "race: %s %s %s and %s %s %s with %s ordering them", where_a, a->write ? "writes" : "reads", ba,
            where_b, b->write ? "writes" : "reads", bb, why);
    return 1;
}
