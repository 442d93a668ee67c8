/* The step plan of the `transpose` composite (transpose_steps.h): the
 * cheapest sequence of leaf rotations and dma reorderings from x's layout
 * to y's, by Dijkstra over the layouts of the merged dim groups. */
#include "transpose_steps.h"

#include <stdio.h>
#include <string.h>

#include "transpose.h"
#include "transpose_plan.h"

#define TS_MAXG NX_KERNEL_MAX_DIMS
#define TS_CODES 720 /* 6!: a layout of up to 6 groups by its rank among the permutations */

typedef struct ts_ctx {
    const nx_machine *m;
    uint32_t programs, ng, es;
    uint64_t size[TS_MAXG]; /* group sizes, by group id (input order) */
    uint64_t elems;
    double rate;  /* bytes per ns of the grid's DMA */
    double fixed; /* ns per step */
} ts_ctx;

/* The rank of layout l (a permutation of 0..n-1) in lexicographic order
 * (its Lehmer code), and back. */
static uint32_t code_of(const uint8_t *l, uint32_t n) {
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t smaller = 0;
        for (uint32_t j = i + 1; j < n; j++) smaller += l[j] < l[i];
        c = c * (n - i) + smaller;
    }
    return c;
}

static void layout_of(uint32_t c, uint32_t n, uint8_t *l) {
    uint32_t digit[TS_MAXG];
    for (uint32_t i = n; i-- > 0;) {
        digit[i] = c % (n - i);
        c /= n - i;
    }
    uint8_t left[TS_MAXG];
    for (uint32_t i = 0; i < n; i++) left[i] = (uint8_t)i;
    for (uint32_t i = 0, m = n; i < n; i++, m--) {
        l[i] = left[digit[i]];
        for (uint32_t j = digit[i]; j + 1 < m; j++) left[j] = left[j + 1];
    }
}

static double eff(const ts_ctx *c, uint64_t run_elems) {
    return nx_machine_dma_efficiency(c->m, (double)run_elems * c->es);
}

static uint64_t prod(const ts_ctx *c, const uint8_t *l, uint32_t a, uint32_t b) {
    uint64_t p = 1;
    for (uint32_t i = a; i < b; i++) p *= c->size[l[i]];
    return p;
}

/* The leaf rotating [0, a) [a, b) [b, n) of layout l into [0, a) [b, n)
 * [a, b): its leaf, B, R, C and estimate. */
static double leaf_cost(const ts_ctx *c, const uint8_t *l, uint32_t a, uint32_t b, nx_transpose_step *st) {
    uint64_t B = prod(c, l, 0, a), R = prod(c, l, a, b), C = prod(c, l, b, c->ng);
    double bytes = (double)c->elems * c->es, ein, eout;
    const char *name;
    nx_leaf_fn fn = nx_transpose_leaf_for(&c->m->geo, R * C * c->es, &name);
    if (fn == tiled_dve_transpose_10) {
        /* whole matrices per partition, about B / (4 x 128) of them a block
         * (kernels/transpose/tiled_dve_transpose_10.c): contiguous runs */
        uint64_t per = (B / c->programs + 4 * c->m->geo.partitions - 1) / (4 * c->m->geo.partitions);
        ein = eout = eff(c, (per ? per : 1) * R * C);
    } else {
        /* super-blocks of one PSUM bank of elements on each side */
        uint64_t w = c->m->geo.psum_bank_bytes / c->es;
        ein = eff(c, C < w ? C : w);
        eout = eff(c, R < w ? R : w);
    }
    if (st) {
        st->kind = NX_TSTEP_LEAF;
        st->leaf = fn;
        st->leaf_name = name;
        st->batch = B;
        st->rows = R;
        st->cols = C;
    }
    return c->fixed + bytes / (c->rate * ein) + bytes / (c->rate * eout);
}

/* A dma step from l to l2 (l2 keeps l's last group last): the runs are the
 * groups the two layouts end with in common. */
static double dma_cost(const ts_ctx *c, const uint8_t *l, const uint8_t *l2, uint64_t *run) {
    uint64_t r = 1;
    for (uint32_t i = c->ng; i-- > 0 && l[i] == l2[i];) r *= c->size[l[i]];
    if (run) *run = r;
    return c->fixed + (double)c->elems * c->es / (c->rate * eff(c, r));
}

/* The step from layout l to l2 in the step's own terms: input shape l's
 * sizes, perm[k] = position in l of l2[k]. */
static void step_shape(const ts_ctx *c, const uint8_t *l, const uint8_t *l2, nx_transpose_step *st) {
    st->ndims = c->ng;
    for (uint32_t i = 0; i < c->ng; i++) {
        st->shape[i] = c->size[l[i]];
        for (uint32_t j = 0; j < c->ng; j++)
            if (l[j] == l2[i]) st->perm[i] = j;
    }
}

typedef struct ts_node {
    double dist;
    uint32_t prev;  /* code of the previous layout */
    uint8_t kind;   /* 0: not reached; NX_TSTEP_*; 255: the start */
    uint8_t a, b;   /* leaf split points */
    uint8_t done;
} ts_node;

static int next_perm(uint8_t *v, uint32_t n) {
    if (n < 2) return 0;
    uint32_t i = n - 1;
    while (i > 0 && v[i - 1] >= v[i]) i--;
    if (i == 0) return 0;
    uint32_t j = n - 1;
    while (v[j] <= v[i - 1]) j--;
    uint8_t t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
    for (uint32_t x = i, y = n - 1; x < y; x++, y--) {
        t = v[x];
        v[x] = v[y];
        v[y] = t;
    }
    return 1;
}

static void relax(ts_node *nodes, uint32_t *open, uint32_t *nopen, uint32_t from, uint32_t to, double d,
                  uint8_t kind, uint8_t a, uint8_t b) {
    ts_node *t = &nodes[to];
    if (t->done || (t->kind && t->dist <= d)) return;
    if (!t->kind) open[(*nopen)++] = to;
    t->dist = d;
    t->prev = from;
    t->kind = kind;
    t->a = a;
    t->b = b;
}

int nx_transpose_steps_plan(const nx_machine *m, uint32_t programs, uint32_t ndims, const uint64_t *shape,
                            uint32_t es, const int64_t *perm, nx_transpose_steps *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    if (ndims < 1 || ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "transpose: rank %u (1..%d)", ndims, NX_KERNEL_MAX_DIMS);
    uint32_t p[NX_KERNEL_MAX_DIMS];
    for (uint32_t i = 0; i < ndims; i++) p[i] = (uint32_t)perm[i];
    ts_ctx c = {.m = m, .programs = programs ? programs : 1, .es = es};
    int64_t gperm[NX_KERNEL_MAX_DIMS];
    nx_transpose_groups(ndims, shape, p, &c.ng, c.size, gperm);
    c.elems = 1;
    for (uint32_t i = 0; i < ndims; i++) c.elems *= shape[i];
    out->elems = c.elems;
    double hbm = m->hbm_bytes_per_ns, dma = c.programs * nx_machine_dma_engines_bytes_per_ns(m);
    c.rate = hbm > 0 && hbm < dma ? hbm : dma;
    if (c.rate <= 0) c.rate = 1;
    c.fixed = 2 * m->dma_fixed_ns + m->barrier_latency_ns;
    if (c.ng <= 1) { /* the identity: one copy */
        nx_transpose_step *st = &out->step[out->n++];
        st->kind = NX_TSTEP_DMA;
        st->ndims = 1;
        st->shape[0] = c.elems;
        st->perm[0] = 0;
        st->run = c.elems;
        st->est_ns = out->est_ns = c.fixed + (double)c.elems * es / c.rate;
        return 0;
    }
    uint8_t start[TS_MAXG], goal[TS_MAXG];
    for (uint32_t i = 0; i < c.ng; i++) {
        start[i] = (uint8_t)i;
        goal[i] = (uint8_t)gperm[i];
    }
    ts_node nodes[TS_CODES];
    uint32_t open[TS_CODES];
    memset(nodes, 0, sizeof nodes);
    uint32_t nopen = 0, s0 = code_of(start, c.ng), g0 = code_of(goal, c.ng);
    nodes[s0].kind = 255;
    open[nopen++] = s0;
    while (nopen > 0) {
        uint32_t bi = 0;
        for (uint32_t i = 1; i < nopen; i++)
            if (nodes[open[i]].dist < nodes[open[bi]].dist) bi = i;
        uint32_t cur = open[bi];
        open[bi] = open[--nopen];
        nodes[cur].done = 1;
        if (cur == g0) break;
        uint8_t l[TS_MAXG], l2[TS_MAXG];
        layout_of(cur, c.ng, l);
        double d = nodes[cur].dist;
        for (uint32_t a = 0; a + 1 < c.ng; a++)
            for (uint32_t b = a + 1; b < c.ng; b++) {
                uint32_t j = 0;
                for (uint32_t i = 0; i < a; i++) l2[j++] = l[i];
                for (uint32_t i = b; i < c.ng; i++) l2[j++] = l[i];
                for (uint32_t i = a; i < b; i++) l2[j++] = l[i];
                relax(nodes, open, &nopen, cur, code_of(l2, c.ng), d + leaf_cost(&c, l, a, b, NULL), NX_TSTEP_LEAF,
                      (uint8_t)a, (uint8_t)b);
            }
        /* every reordering of the groups before the last */
        uint8_t rest[TS_MAXG];
        const uint32_t nr = c.ng - 1;
        for (uint32_t x = 0; x < nr && x < TS_MAXG; x++) rest[x] = l[x];
        for (uint32_t x = 0; x + 1 < nr; x++) /* sort for next_perm */
            for (uint32_t y = x + 1; y < nr; y++)
                if (rest[y] < rest[x]) {
                    uint8_t t = rest[x];
                    rest[x] = rest[y];
                    rest[y] = t;
                }
        do {
            int same = 1;
            for (uint32_t x = 0; x < nr && x < TS_MAXG; x++) {
                same &= rest[x] == l[x];
                l2[x] = rest[x];
            }
            if (same) continue;
            l2[nr] = l[nr];
            relax(nodes, open, &nopen, cur, code_of(l2, c.ng), d + dma_cost(&c, l, l2, NULL), NX_TSTEP_DMA, 0, 0);
        } while (next_perm(rest, nr));
    }
    if (!nodes[g0].done) return nx_fail(err, "transpose: no step plan found"); /* cannot happen */
    /* the path, backwards */
    uint32_t path[64], n = 0;
    for (uint32_t x = g0; nodes[x].kind != 255 && n < 64; x = nodes[x].prev) path[n++] = x;
    if (n > NX_TRANSPOSE_MAX_STEPS) return nx_fail(err, "transpose: a plan of %u steps", n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t to = path[n - 1 - i];
        const ts_node *nd = &nodes[to];
        uint8_t l[TS_MAXG], l2[TS_MAXG];
        layout_of(nd->prev, c.ng, l);
        layout_of(to, c.ng, l2);
        nx_transpose_step *st = &out->step[out->n++];
        step_shape(&c, l, l2, st);
        if (nd->kind == NX_TSTEP_LEAF) {
            st->est_ns = leaf_cost(&c, l, nd->a, nd->b, st);
        } else {
            st->kind = NX_TSTEP_DMA;
            st->est_ns = dma_cost(&c, l, l2, &st->run);
        }
        out->est_ns += st->est_ns;
    }
    return 0;
}

void nx_transpose_steps_text(const nx_transpose_steps *s, char *buf, size_t len) {
    if (len == 0) return;
    size_t used = (size_t)snprintf(buf, len, "%u step%s, est %.1f us:", s->n, s->n == 1 ? "" : "s", s->est_ns / 1e3);
    for (uint32_t i = 0; i < s->n && used < len; i++) {
        const nx_transpose_step *st = &s->step[i];
        char sh[96], pm[64];
        nx_format_u64_list(sh, sizeof sh, st->shape, st->ndims);
        nx_format_i64_list(pm, sizeof pm, st->perm, st->ndims);
        if (st->kind == NX_TSTEP_LEAF)
            used += (size_t)snprintf(buf + used, len - used, "%s %s %s perm %s", i ? ";" : "", st->leaf_name, sh, pm);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s dma %s perm %s (runs of %llu)", i ? ";" : "", sh, pm,
                                     (unsigned long long)st->run);
    }
}
