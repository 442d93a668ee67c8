/* The flash attention plan (kernels/attention/flash_impl.h): which units
 * this core runs, their key blocks and the steps (tile x block pairs) in
 * emission order, with each step's columns and statistics slots. */
#include <stdlib.h>
#include <string.h>

#include "flash_impl.h"

nx_operand fa_col(const nx_tile *t, uint32_t n, uint32_t c) {
    const int32_t one = 1;
    const uint32_t c1 = 1;
    return nx_tile_view(t, NX_DT_FP32, 0, n, c, 1, &one, &c1);
}

nx_operand fa_view(const nx_tile *t, nx_dtype as, uint32_t n, uint64_t off, uint32_t cols) {
    return nx_rows_view(t, as, n, off, cols);
}

uint64_t fa_head_base(const fa_ctx *c, const nx_tensor_ref *t, uint64_t b, uint64_t head, uint64_t H, uint64_t S) {
    return t->hbm_offset + ((b * H + head) * S) * c->p->D * c->es;
}

nx_engine fa_copy_engine(fa_ctx *c, uint64_t elems) {
    double d = c->dve_ns + ((double)elems + 32) / 0.96, a = c->act_ns + ((double)elems + 32) / 1.2;
    if (d <= a) {
        c->dve_ns = d;
        return NX_ENG_DVE;
    }
    c->act_ns = a;
    return NX_ENG_ACT;
}

void fa_tile_at(const fa_ctx *c, uint64_t t, fa_tile *ft) {
    const nx_attention_params *p = c->p;
    memset(ft, 0, sizeof *ft);
    ft->r0 = t * c->P;
    ft->n = (uint32_t)(p->Sq - ft->r0 < c->P ? p->Sq - ft->r0 : c->P);
    int64_t lo0, hi0, lo1, hi1;
    nx_attention_keys(p, ft->r0, &lo0, &hi0);
    nx_attention_keys(p, ft->r0 + ft->n - 1, &lo1, &hi1);
    ft->lo = lo0 > 0 ? lo0 : 0, ft->hi = hi1;
    ft->pos0 = (int64_t)p->Skv - (int64_t)p->Sq + (int64_t)ft->r0;
}

static uint64_t unit_cost(const fa_ctx *c, uint64_t t0, uint32_t nt) {
    uint64_t w = 0;
    for (uint32_t g = 0; g < nt; g++) {
        fa_tile ft;
        fa_tile_at(c, t0 + g, &ft);
        if (ft.lo < ft.hi) w += (uint64_t)(ft.hi - ft.lo) + 256; /* + a tile's fixed work */
    }
    return w;
}

static int grow(void **a, uint64_t *cap, uint64_t need, size_t sz) {
    if (need <= *cap) return 0;
    uint64_t n = *cap ? *cap * 2 : 64;
    while (n < need) n *= 2;
    void *q = realloc(*a, (size_t)n * sz);
    if (!q) return -1;
    *a = q, *cap = n;
    return 0;
}

typedef struct unit_cost_at {
    uint64_t cost, u;
} unit_cost_at;

static int by_cost(const void *a, const void *b) {
    const unit_cost_at *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return x->u < y->u ? -1 : x->u > y->u;
}

/* Longest first to the least loaded core (ties to the lower core): the
 * units this core takes (1) among nu. */
static uint8_t *deal(const fa_ctx *c, uint64_t nu, uint64_t per_head, uint64_t T, uint32_t me, uint32_t np) {
    unit_cost_at *at = malloc((size_t)(nu ? nu : 1) * sizeof *at);
    uint8_t *mine = calloc((size_t)(nu ? nu : 1), 1);
    if (!at || !mine) {
        free(at), free(mine);
        return NULL;
    }
    for (uint64_t u = 0; u < nu; u++) {
        uint64_t t0 = (u % per_head) * c->G;
        at[u] = (unit_cost_at){unit_cost(c, t0, (uint32_t)(T - t0 < c->G ? T - t0 : c->G)), u};
    }
    qsort(at, (size_t)nu, sizeof *at, by_cost);
    uint64_t load[NX_MAX_CORES] = {0};
    for (uint64_t i = 0; i < nu; i++) {
        uint32_t who = 0;
        for (uint32_t j = 1; j < np && j < NX_MAX_CORES; j++)
            if (load[j] < load[who]) who = j;
        load[who] += at[i].cost;
        if (who == me) mine[at[i].u] = 1;
    }
    free(at);
    return mine;
}

/* The end of the key block from c0: FA_BK keys, cut at the cache prefix's
 * end (a block reads one tensor) and at hi. */
static int64_t block_end(const fa_ctx *c, int64_t c0, int64_t hi) {
    int64_t e = c0 + FA_BK;
    if (c0 < (int64_t)c->Sc && e > (int64_t)c->Sc) e = (int64_t)c->Sc;
    return e < hi ? e : hi;
}

int fa_plan_build(const fa_ctx *c, fa_plan *pl, nx_error *err) {
    const nx_attention_params *p = c->p;
    memset(pl, 0, sizeof *pl);
    const uint64_t T = (p->Sq + c->P - 1) / c->P, per_head = (T + c->G - 1) / c->G;
    const uint32_t me = nx_kctx_program_id(c->k), np = nx_kctx_num_programs(c->k);
    const uint64_t nu = p->B * p->Hq * per_head;
    uint64_t cu = 0, cb = 0, cs = 0;
    uint8_t *mine = deal(c, nu, per_head, T, me, np);
    if (!mine) goto oom;
    for (uint64_t u = 0; u < nu; u++) {
        const uint64_t bh = u / per_head, t0 = (u % per_head) * c->G;
        const uint32_t nt = (uint32_t)(T - t0 < c->G ? T - t0 : c->G);
        if (!mine[u]) continue;
        if (grow((void **)&pl->units, &cu, pl->nunits + 1, sizeof *pl->units) != 0) goto oom;
        fa_unit *un = &pl->units[pl->nunits];
        *un = (fa_unit){.b = bh / p->Hq, .h = bh % p->Hq, .t0 = t0, .nt = nt, .par = (uint32_t)(pl->nunits % 2),
                        .first_step = pl->nsteps};
        fa_tile ft[FA_GMAX];
        uint32_t kstep[FA_GMAX] = {0}, total[FA_GMAX] = {0};
        uint64_t prev[FA_GMAX];
        for (uint32_t g = 0; g < FA_GMAX; g++) prev[g] = UINT64_MAX;
        int64_t glo = INT64_MAX, ghi = INT64_MIN;
        for (uint32_t g = 0; g < nt; g++) {
            fa_tile_at(c, t0 + g, &ft[g]);
            if (ft[g].lo >= ft[g].hi) continue;
            if (ft[g].lo < glo) glo = ft[g].lo;
            if (ft[g].hi > ghi) ghi = ft[g].hi;
        }
        for (int64_t c0 = glo, c1; c0 < ghi; c0 = c1) {
            c1 = block_end(c, c0, ghi);
            for (uint32_t g = 0; g < nt; g++)
                if (ft[g].lo < c1 && ft[g].hi > c0) total[g]++;
        }
        for (int64_t c0 = glo, c1; c0 < ghi; c0 = c1) {
            c1 = block_end(c, c0, ghi);
            if (grow((void **)&pl->blocks, &cb, pl->nblocks + 1, sizeof *pl->blocks) != 0) goto oom;
            pl->blocks[pl->nblocks] = (fa_block){.unit = pl->nunits, .first_step = pl->nsteps, .c0 = c0,
                                                 .w = (uint32_t)(c1 - c0), .perm = c1 - c0 == 4 * (int64_t)c->P};
            for (uint32_t g = 0; g < nt; g++) {
                if (!(ft[g].lo < c1 && ft[g].hi > c0)) continue;
                int64_t a = (ft[g].lo > c0 ? ft[g].lo : c0) - c0, e = (ft[g].hi < c1 ? ft[g].hi : c1) - c0;
                if (grow((void **)&pl->steps, &cs, pl->nsteps + 1, sizeof *pl->steps) != 0) goto oom;
                fa_step *s = &pl->steps[pl->nsteps];
                uint32_t ks = kstep[g]++;
                *s = (fa_step){.unit = pl->nunits, .block = pl->nblocks, .g = g};
                s->a_al = (uint32_t)(a / c->P * c->P);
                s->wa = (uint32_t)(e - s->a_al);
                s->nm_old = ST_NM + ks % 4, s->nm_new = ST_NM + (ks + 1) % 4, s->alpha = ST_ALPHA + ks % 4;
                s->rs = ST_RS + ks % 4;
                s->first = ks == 0, s->last = ks + 1 == total[g];
                s->prev = prev[g];
                prev[g] = pl->nsteps++;
            }
            pl->nblocks++;
        }
        pl->nunits++;
    }
    free(mine);
    return 0;
oom:
    free(mine);
    fa_plan_free(pl);
    return nx_fail(err, "attention: out of memory for the plan");
}

void fa_plan_free(fa_plan *pl) {
    free(pl->units), free(pl->blocks), free(pl->steps);
    memset(pl, 0, sizeof *pl);
}
