/* Rows of any length from HBM through the selection scheduler
 * (kernels/topk/topk_core.h tk_rows). */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "topk_core.h"

#define MAX_X 9
#define MAX_O 9
#define ACTIONS 64

typedef struct plan {
    uint64_t F, nc, C;   /* chunk, chunks per row, candidate buffer (0: one chunk) */
    uint32_t G, S, NX, NO; /* group size, selection slots, input buffers, output list buffers */
} plan;

typedef struct action {
    int xbuf;  /* input buffer freed by the job's last read, or -1 */
    int tile;  /* tile completed by the job, or -1 */
    int obuf;
} action;

typedef struct rows {
    tk *t;
    const tk_layout *tiles;
    uint32_t ntiles, P;
    uint64_t L, Lw; /* selected, and kept per list (ceil8 in key mode) */
    int raw;
    plan pl;
    tk_sched s;
    nx_tile X[MAX_X], I[MAX_X], OX[MAX_O], OI[MAX_O], CX[2], CI[2];
    int xbusy[MAX_X], obusy[MAX_O];
    action act[ACTIONS];
    uint32_t nact;
    tk_tile_done done;
    void *ctx;
    int rc;
    nx_error *err;
} rows;

/* ---- the plan ----------------------------------------------------------------------- */

static uint64_t bytes_of(const rows *w, const plan *p) {
    const tk *t = w->t;
    uint64_t src_es = w->raw ? t->es : t->cand_es;
    uint64_t lw = nx_cdiv_u64(w->L, 8) * 8 + 8;
    uint64_t b = p->NX * tk_tile_bytes(p->F, src_es);
    if (!w->raw) b += p->NX * tk_tile_bytes(p->F, 4);
    if (p->nc > 1) b += 2 * (tk_tile_bytes(p->C + 8, t->cand_es) + tk_tile_bytes(p->C + 8, 4));
    b += p->NO * (tk_tile_bytes(lw, t->cand_es) + tk_tile_bytes(lw, 4));
    int need_K = w->raw || !t->key_mode;
    uint64_t kcap = t->key_mode ? p->F : nx_max_u64(p->F, p->C);
    return b + tk_sched_bytes(t, p->S, kcap, w->L, need_K);
}

static int make_plan(rows *w, nx_error *err) {
    const tk *t = w->t;
    uint64_t sf = w->tiles[0].sf, L = w->L, l8 = nx_cdiv_u64(L, 8) * 8;
    uint64_t sb = t->geo->sbuf_partition_bytes;
    uint64_t budget = sb > t->reserved ? (sb - t->reserved) * 7 / 8 : 0;
    /* With fewer than three units a single chunk leaves POOL and DVE in
     * series (keys, scan, gather): cut rows of a few tiles in chunks. */
    uint64_t F0 = nx_min_u64(sf, t->scan_max);
    if (w->ntiles < 3 && sf >= 4096 && 8 * l8 <= sf) {
        uint64_t want = nx_cdiv_u64(3, w->ntiles);
        F0 = nx_min_u64(F0, nx_max_u64(2048, nx_cdiv_u64(sf, want)));
    }
    static const uint32_t gs[3][2] = {{2, 4}, {1, 2}, {1, 1}};
    for (int gi = 0; gi < 3; gi++) {
        uint32_t G = gs[gi][0];
        for (uint64_t F = F0;; F = nx_cdiv_u64(F, 2)) {
            plan p = {0};
            p.G = G;
            p.S = gs[gi][1];
            p.nc = nx_cdiv_u64(sf, F);
            p.F = nx_cdiv_u64(sf, p.nc);
            int keyin = t->key_mode && w->raw;
            p.NX = p.nc > 1 || w->ntiles > 1 ? (keyin ? G + 2 : p.S + 1) : 1;
            p.NO = w->ntiles > 1 ? p.S + 1 : 1;
            int ok = 1;
            if (p.nc > 1) {
                /* every chunk must give back fewer candidates than it holds,
                 * and the buffer take at least two chunks' worth */
                uint64_t per = nx_min_u64(l8, p.F);
                ok = per < p.F && 2 * l8 + 8 <= t->scan_max;
                p.C = nx_min_u64(p.nc * per, t->scan_max);
                if (p.C < 2 * l8 + 8) p.C = 2 * l8 + 8;
                while (ok && bytes_of(w, &p) > budget && p.C > 2 * l8 + 8) p.C = nx_max_u64(2 * l8 + 8, p.C / 2);
            }
            if (ok && bytes_of(w, &p) <= budget) {
                w->pl = p;
                return 0;
            }
            if (F <= nx_max_u64(8, 2 * l8)) break;
        }
    }
    if (sf > t->scan_max && 2 * l8 + 8 > t->scan_max) {
        /* name what sets the scan length: the chunk attribute, or max8's limit */
        char by[96];
        if (t->scan_max < t->geo->max8_max_elems)
            snprintf(by, sizeof by, "the attribute chunk = %u", t->scan_max);
        else
            snprintf(by, sizeof by, "max8's limit on machine '%.16s'", t->geo->name);
        return nx_fail(err, "%s: k = %llu over rows of %llu elements: rows longer than one max8 scan (%u elements, "
                            "%s) need k <= %u (a scan must hold two lists of k); k = %llu needs scans of at least "
                            "%llu elements",
                       t->leaf, (unsigned long long)t->k_sel, (unsigned long long)sf, t->scan_max, by,
                       (t->scan_max - 8) / 2 / 8 * 8, (unsigned long long)t->k_sel,
                       (unsigned long long)(2 * l8 + 8));
    }
    return nx_fail(err, "%s: k = %llu over rows of %llu elements does not fit one partition's SBUF (%llu bytes, %llu "
                        "of them held by the leaf)",
                   t->leaf, (unsigned long long)t->k_sel, (unsigned long long)sf, (unsigned long long)sb,
                   (unsigned long long)t->reserved);
}

/* ---- loads ---------------------------------------------------------------------- */

/* The valid length of fold f. */
static uint64_t fold_len(const tk_layout *lay, uint32_t f) {
    uint64_t start = (uint64_t)f * lay->sf;
    return start >= lay->len ? 0 : nx_min_u64(lay->sf, lay->len - start);
}

/* Chunk [c0, c0 + cn) of every partition of a tile into xb (and ib). */
static int load_chunk(rows *w, const tk_layout *lay, uint64_t c0, uint64_t cn, const nx_tile *xb, const nx_tile *ib,
                      nx_error *err) {
    tk *t = w->t;
    uint32_t P = lay->rows * lay->nf;
    nx_dtype dt = lay->raw ? t->dt : t->cand_dt;
    uint64_t es = nx_dtype_size(dt);
    tk_cols xc = {xb, 0}, ic = {ib, 0};
    int uniform = lay->nf == 1 || (lay->len == lay->nf * lay->sf && lay->pitch == lay->len);
    if (uniform) {
        uint64_t ps = lay->nf == 1 ? lay->pitch : lay->sf;
        nx_operand d = tk_view(&xc, dt, P, cn);
        nx_operand s = nx_ap_hbm_rows(dt, lay->x_off + c0 * es, P, (int32_t)ps, (uint32_t)cn);
        if (tk_dma(t, &d, &s, err) != 0) return -1;
        if (!lay->raw) {
            nx_operand di = tk_view(&ic, NX_DT_INT32, P, cn);
            nx_operand si = nx_ap_hbm_rows(NX_DT_INT32, lay->i_off + c0 * 4, P, (int32_t)ps, (uint32_t)cn);
            if (tk_dma(t, &di, &si, err) != 0) return -1;
        }
        return 0;
    }
    /* The last fold of each row is shorter: fill, then load the valid parts
     * row by row. A fill ties with the lowest real key and sits at the end
     * of the row, so it is never chosen before a real element (k <= len). */
    uint64_t last = fold_len(lay, lay->nf - 1);
    if (c0 + cn > last) {
        nx_operand d = tk_view(&xc, dt, P, cn);
        if (nx_kctx_memset(t->k, NX_ENG_POOL, &d, t->pad, err) != 0) return -1;
    }
    int32_t one = 1;
    for (uint32_t r = 0; r < lay->rows; r++) {
        uint64_t row = lay->x_off + (uint64_t)r * lay->pitch * es;
        uint32_t p0 = r * lay->nf, c = (uint32_t)cn;
        if (lay->nf > 1) {
            nx_operand dd = nx_tile_view(xb, dt, p0, lay->nf - 1, 0, 1, &one, &c);
            nx_operand s = nx_ap_hbm_rows(dt, row + c0 * es, lay->nf - 1, (int32_t)lay->sf, c);
            if (tk_dma(t, &dd, &s, err) != 0) return -1;
        }
        if (c0 < last) {
            uint32_t v = (uint32_t)nx_min_u64(cn, last - c0);
            nx_operand dd = nx_tile_view(xb, dt, p0 + lay->nf - 1, 1, 0, 1, &one, &v);
            nx_operand s = nx_ap_hbm_rows(dt, row + ((uint64_t)(lay->nf - 1) * lay->sf + c0) * es, 1,
                                          (int32_t)lay->sf, v);
            if (tk_dma(t, &dd, &s, err) != 0) return -1;
        }
    }
    return 0;
}

/* ---- the stream ------------------------------------------------------------------- */

static void on_post(void *ctx, int arg) {
    rows *w = ctx;
    action *a = &w->act[arg];
    if (a->xbuf >= 0) w->xbusy[a->xbuf] = 0;
    if (a->tile >= 0) {
        tk_cols ox = {&w->OX[a->obuf], 0}, oi = {&w->OI[a->obuf], 0};
        if (w->rc == 0 && w->done(w->t, w->ctx, (uint32_t)a->tile, ox, oi, w->err) != 0) w->rc = -1;
        w->obusy[a->obuf] = 0;
    }
}

static int add(rows *w, tk_job *j, int depends, int xbuf, int tile, int obuf, nx_error *err) {
    /* key mode: the keys (emitted by tk_sched_add) are the input's last
     * read, so the buffer is free right after; else the gathers are */
    int free_now = xbuf >= 0 && w->t->key_mode && j->raw;
    int arg = (int)(w->nact++ % ACTIONS);
    w->act[arg] = (action){free_now ? -1 : xbuf, tile, obuf};
    j->on_post = on_post;
    j->ctx = w;
    j->arg = arg;
    if (tk_sched_add(&w->s, j, depends, err) != 0) return -1;
    if (free_now) w->xbusy[xbuf] = 0;
    return w->rc;
}

static int free_slot(const int *busy, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (!busy[i]) return (int)i;
    return -1;
}

/* A free buffer of `busy`, completing queued jobs if none is. */
static int claim(rows *w, int *busy, uint32_t n, nx_error *err) {
    int b = free_slot(busy, n);
    if (b < 0) {
        if (tk_sched_flush(&w->s, err) != 0 || w->rc != 0) return -1;
        b = free_slot(busy, n);
        if (b < 0) return nx_fail(err, "%s: internal: no free top-k buffer", w->t->leaf);
    }
    busy[b] = 1;
    return b;
}

/* Where the next list goes after one of W candidates: key mode rounds up
 * to 8 (the last round's max8 writes 8 columns; what it writes past W are
 * knocked-out -inf keys, never chosen), payload mode packs them. */
static uint64_t advance(const tk *t, uint64_t W) { return t->key_mode ? nx_cdiv_u64(W, 8) * 8 : W; }

static int stream(rows *w, nx_error *err) {
    tk *t = w->t;
    const plan *p = &w->pl;
    uint64_t units = (uint64_t)w->ntiles * p->nc;
    int ubuf[2 * MAX_X];
    uint64_t next_load = 0;
    uint32_t cur = 0;
    uint64_t fill = 0;
    for (uint64_t u = 0; u < units; u++) {
        /* loads run up to NX - 1 units ahead, into free buffers */
        while (next_load < units && next_load <= u + p->NX - 1) {
            int b = free_slot(w->xbusy, p->NX);
            if (b < 0) {
                if (next_load > u) break;
                if ((b = claim(w, w->xbusy, p->NX, err)) < 0) return -1;
            } else {
                w->xbusy[b] = 1;
            }
            const tk_layout *lay = &w->tiles[next_load / p->nc];
            uint64_t c0 = (next_load % p->nc) * p->F, cn = nx_min_u64(p->F, lay->sf - c0);
            if (load_chunk(w, lay, c0, cn, &w->X[b], w->raw ? NULL : &w->I[b], err) != 0) return -1;
            ubuf[next_load % (2 * MAX_X)] = b;
            next_load++;
        }
        uint32_t tile = (uint32_t)(u / p->nc), c = (uint32_t)(u % p->nc);
        const tk_layout *lay = &w->tiles[tile];
        uint32_t P = lay->rows * lay->nf;
        int b = ubuf[u % (2 * MAX_X)];
        uint64_t c0 = (uint64_t)c * p->F, cn = nx_min_u64(p->F, lay->sf - c0);
        tk_job j = {.x = {&w->X[b], 0}, .raw = w->raw, .idx = {w->raw ? NULL : &w->I[b], 0}, .base = lay->base,
                    .add = c0, .n = cn, .L = nx_min_u64(w->L, cn), .P = P};
        if (p->nc == 1) {
            int ob = claim(w, w->obusy, p->NO, err);
            if (ob < 0) return -1;
            j.out_x = (tk_cols){&w->OX[ob], 0};
            j.out_i = (tk_cols){&w->OI[ob], 0};
            if (add(w, &j, 0, b, (int)tile, ob, err) != 0) return -1;
            continue;
        }
        if (c == 0) fill = 0;
        uint64_t width = tk_job_width(&j);
        if (fill + advance(t, width) > p->C) {
            /* reduce the buffer to its best L, into the other one */
            tk_job r = {.x = {&w->CX[cur], 0}, .idx = {&w->CI[cur], 0}, .n = fill, .L = w->L, .P = P,
                        .out_x = {&w->CX[cur ^ 1], 0}, .out_i = {&w->CI[cur ^ 1], 0}};
            if (add(w, &r, 1, -1, -1, 0, err) != 0) return -1;
            cur ^= 1;
            fill = advance(t, tk_job_width(&r));
        }
        j.out_x = (tk_cols){&w->CX[cur], fill};
        j.out_i = (tk_cols){&w->CI[cur], fill};
        if (add(w, &j, 0, b, -1, 0, err) != 0) return -1;
        fill += advance(t, width);
        if (c + 1 == p->nc) {
            int ob = claim(w, w->obusy, p->NO, err);
            if (ob < 0) return -1;
            tk_job f = {.x = {&w->CX[cur], 0}, .idx = {&w->CI[cur], 0}, .n = fill, .L = w->L, .P = P,
                        .out_x = {&w->OX[ob], 0}, .out_i = {&w->OI[ob], 0}};
            /* the gaps between appends hold the slack of their last round
             * (key mode: genuine candidates, indices included) */
            if (add(w, &f, 1, -1, (int)tile, ob, err) != 0 || tk_sched_flush(&w->s, err) != 0 || w->rc != 0)
                return -1;
            cur = 0;
        }
    }
    if (tk_sched_flush(&w->s, err) != 0) return -1;
    (void)t;
    return w->rc;
}

int tk_rows(tk *t, const tk_layout *tiles, uint32_t ntiles, uint64_t L, tk_tile_done done, void *ctx,
            nx_error *err) {
    if (ntiles == 0) return 0;
    rows *w = calloc(1, sizeof *w);
    if (!w) return nx_fail(err, "%s: out of memory", t->leaf);
    w->t = t;
    w->tiles = tiles;
    w->ntiles = ntiles;
    w->L = L;
    w->Lw = nx_cdiv_u64(L, 8) * 8;
    w->raw = tiles[0].raw;
    w->done = done;
    w->ctx = ctx;
    w->err = err;
    for (uint32_t i = 0; i < ntiles; i++) w->P = (uint32_t)nx_max_u64(w->P, (uint64_t)tiles[i].rows * tiles[i].nf);
    int rc = -1;
    uint32_t nx = 0, no = 0, ncb = 0;
    int have_s = 0;
    if (make_plan(w, err) != 0) goto out;
    nx_dtype src = w->raw ? t->dt : t->cand_dt;
    for (; nx < w->pl.NX; nx++) {
        if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_chunk", src, w->P, nx_max_u64(w->pl.F, 8), &w->X[nx], err) != 0) goto out;
        if (!w->raw && nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_chunk_idx", NX_DT_INT32, w->P, nx_max_u64(w->pl.F, 8),
                                     &w->I[nx], err) != 0)
            goto out;
    }
    for (; no < w->pl.NO; no++)
        if (tk_alloc_list(t, "topk_list", t->cand_dt, w->P, w->Lw, &w->OX[no], err) != 0 ||
            tk_alloc_list(t, "topk_list_idx", NX_DT_INT32, w->P, w->Lw, &w->OI[no], err) != 0)
            goto out;
    for (; w->pl.nc > 1 && ncb < 2; ncb++)
        if (tk_alloc_list(t, "topk_cand", t->cand_dt, w->P, w->pl.C, &w->CX[ncb], err) != 0 ||
            tk_alloc_list(t, "topk_cand_idx", NX_DT_INT32, w->P, w->pl.C, &w->CI[ncb], err) != 0)
            goto out;
    int need_K = w->raw || !t->key_mode;
    uint64_t kcap = t->key_mode ? w->pl.F : nx_max_u64(w->pl.F, w->pl.C);
    if (tk_sched_init(t, &w->s, w->P, w->pl.G, w->pl.S, kcap, L, need_K, err) != 0) goto out;
    have_s = 1;
    rc = stream(w, err);
out:
    if (have_s) tk_sched_release(&w->s);
    nx_error e;
    for (uint32_t i = 0; i < nx; i++) {
        nx_kctx_release(t->k, &w->X[i], &e);
        if (!w->raw) nx_kctx_release(t->k, &w->I[i], &e);
    }
    for (uint32_t i = 0; i < no; i++) {
        nx_kctx_release(t->k, &w->OX[i], &e);
        nx_kctx_release(t->k, &w->OI[i], &e);
    }
    for (uint32_t i = 0; i < ncb; i++) {
        nx_kctx_release(t->k, &w->CX[i], &e);
        nx_kctx_release(t->k, &w->CI[i], &e);
    }
    free(w);
    return rc;
}
