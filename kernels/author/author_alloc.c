/* Tiles: a first-fit pool allocator per memory (SBUF, PSUM) over space
 * taken from the builder's bump allocators on demand, with explicit release.
 * Released extents are merged and reused by later requests; the space the
 * pool has taken from the builder is never given back (the builder has no
 * release), so the pool only grows when no released extent fits. In SBUF a
 * released extent at the top of the pool grows into fresh space then, so
 * its bytes are not stranded below the new tile (a leaf that releases a
 * first stage's tiles and allocates larger ones keeps the whole SBUF). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "author_impl.h"
#include "isa/intmath.h"

#define SBUF_ALIGN 64u
#define PSUM_ALIGN 4u

void k_pool_free_all(nx_kctx *k) {
    for (int m = 0; m < 2; m++) {
        free(k->pool[m].ext);
        k->pool[m].ext = NULL;
        k->pool[m].n = k->pool[m].cap = 0;
        k->pool[m].top = 0;
    }
    free(k->tiles);
    k->tiles = NULL;
    k->ntiles = k->tiles_cap = 0;
}

static const char *mem_name(int psum) { return psum ? "PSUM" : "SBUF"; }

/* First placement of `bytes` inside [lo, hi) honouring alignment and (PSUM)
 * the rule that a region of at most one bank stays inside one bank. */
static int place(uint64_t lo, uint64_t hi, uint64_t bytes, int psum, uint64_t bank,
                 uint64_t *start) {
    uint64_t s = nx_round_up_u64(lo, psum ? PSUM_ALIGN : SBUF_ALIGN);
    if (psum && bank && bytes <= bank && s / bank != (s + bytes - 1) / bank) s = nx_round_up_u64(s, bank);
    if (s > hi || bytes > hi - s) return 0;
    *start = s;
    return 1;
}

static int pool_insert(kpool *p, uint64_t lo, uint64_t hi) {
    if (lo >= hi) return 0;
    uint32_t i = 0;
    while (i < p->n && p->ext[i].lo < lo) i++;
    int merge_prev = i > 0 && p->ext[i - 1].hi == lo;
    int merge_next = i < p->n && p->ext[i].lo == hi;
    if (merge_prev && merge_next) {
        p->ext[i - 1].hi = p->ext[i].hi;
        memmove(&p->ext[i], &p->ext[i + 1], (p->n - i - 1) * sizeof *p->ext);
        p->n--;
        return 0;
    }
    if (merge_prev) {
        p->ext[i - 1].hi = hi;
        return 0;
    }
    if (merge_next) {
        p->ext[i].lo = lo;
        return 0;
    }
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 16;
        kext *e = realloc(p->ext, cap * sizeof *e);
        if (!e) return -1;
        p->ext = e;
        p->cap = cap;
    }
    memmove(&p->ext[i + 1], &p->ext[i], (p->n - i) * sizeof *p->ext);
    p->ext[i].lo = lo;
    p->ext[i].hi = hi;
    p->n++;
    return 0;
}

/* Takes [start, start + bytes) out of extent i. */
static int pool_take(kpool *p, uint32_t i, uint64_t start, uint64_t bytes) {
    kext e = p->ext[i];
    memmove(&p->ext[i], &p->ext[i + 1], (p->n - i - 1) * sizeof *p->ext);
    p->n--;
    if (pool_insert(p, e.lo, start) != 0) return -1;
    return pool_insert(p, start + bytes, e.hi);
}

int nx_kctx_alloc(nx_kctx *k, nx_operand_kind mem, const char *name, nx_dtype dtype,
                  uint32_t partitions, uint64_t free_elems, nx_tile *out, nx_error *err) {
    if (k->broken) return nx_fail(err, "kernel context: an earlier error left the trace unusable");
    if (!name) name = "?";
    if (mem != NX_OPK_SBUF && mem != NX_OPK_PSUM)
        return nx_fail(err, "tile '%s': memory must be SBUF or PSUM", name);
    int psum = mem == NX_OPK_PSUM;
    size_t size = nx_dtype_size(dtype);
    if (size == 0) return nx_fail(err, "tile '%s': invalid dtype code %d", name, (int)dtype);
    if (partitions < 1 || partitions > k->geo.partitions)
        return nx_fail(err, "tile '%s': %u partitions (1..%u)", name, partitions, k->geo.partitions);
    uint64_t cap = psum ? k->geo.psum_partition_bytes : k->geo.sbuf_partition_bytes;
    if (free_elems < 1 || free_elems > cap / size)
        return nx_fail(err, "%s tile '%s': %llu elements of %s per partition (1..%llu)", mem_name(psum),
                       name, (unsigned long long)free_elems, nx_dtype_name(dtype),
                       (unsigned long long)(cap / size));
    uint64_t bytes = nx_round_up_u64(free_elems * size, psum ? PSUM_ALIGN : SBUF_ALIGN);
    kpool *p = &k->pool[psum];
    uint64_t start = 0;
    int found = 0;
    for (uint32_t i = 0; i < p->n && !found; i++) {
        if (place(p->ext[i].lo, p->ext[i].hi, bytes, psum, k->geo.psum_bank_bytes, &start)) {
            if (pool_take(p, i, start, bytes) != 0) goto oom;
            found = 1;
        }
    }
    if (!found && !psum && p->n > 0 && p->ext[p->n - 1].hi == p->top) {
        /* the top extent and fresh space just above it (the builder's bump
         * continues at the top: the pool's requests are all aligned alike) */
        kext last = p->ext[p->n - 1];
        uint64_t s = nx_round_up_u64(last.lo, SBUF_ALIGN), got;
        nx_error berr;
        if (s < last.hi && s + bytes > last.hi) {
            uint64_t need = s + bytes - last.hi;
            if (nx_builder_sbuf_alloc(k->b, k->pid, need, SBUF_ALIGN, &got, &berr) == 0) {
                if (got + need > p->top) p->top = got + need;
                if (got == last.hi) {
                    p->n--;
                    if (pool_insert(p, last.lo, s) != 0) goto oom;
                    start = s;
                    found = 1;
                } else if (pool_insert(p, got, got + need) != 0) { /* not adjacent: keep it released */
                    goto oom;
                }
            }
        }
    }
    if (!found) {
        nx_error berr;
        int rc = psum ? nx_builder_psum_alloc(k->b, k->pid, bytes, &start, &berr)
                      : nx_builder_sbuf_alloc(k->b, k->pid, bytes, SBUF_ALIGN, &start, &berr);
        if (rc == 0 && start + bytes > p->top) p->top = start + bytes;
        if (rc != 0) {
            uint64_t total = 0, largest = 0;
            for (uint32_t i = 0; i < p->n; i++) {
                uint64_t len = p->ext[i].hi - p->ext[i].lo;
                total += len;
                if (len > largest) largest = len;
            }
            return nx_fail(err,
                           "%s tile '%s' (%u x %llu %s, %llu bytes per partition) does not fit: %s; "
                           "released: %llu bytes per partition in %u extent%s (largest %llu)",
                           mem_name(psum), name, partitions, (unsigned long long)free_elems,
                           nx_dtype_name(dtype), (unsigned long long)bytes, berr.msg,
                           (unsigned long long)total, p->n, p->n == 1 ? "" : "s",
                           (unsigned long long)largest);
        }
    }
    if (k->ntiles == k->tiles_cap) {
        uint32_t c = k->tiles_cap ? k->tiles_cap * 2 : 16;
        ktile_rec *t = realloc(k->tiles, c * sizeof *t);
        if (!t) goto oom;
        k->tiles = t;
        k->tiles_cap = c;
    }
    ktile_rec *rec = &k->tiles[k->ntiles++];
    rec->mem = (uint8_t)mem;
    rec->offset = start;
    rec->bytes = bytes;
    snprintf(rec->name, sizeof rec->name, "%s", name);
    memset(out, 0, sizeof *out);
    out->mem = (uint8_t)mem;
    out->dtype = (uint8_t)dtype;
    out->partitions = partitions;
    out->free_elems = free_elems;
    out->offset = start;
    out->bytes = bytes;
    return 0;
oom:
    k->broken = 1;
    return nx_fail(err, "out of memory in the tile allocator");
}

int nx_kctx_release(nx_kctx *k, const nx_tile *t, nx_error *err) {
    int psum = t->mem == NX_OPK_PSUM;
    for (uint32_t i = 0; i < k->ntiles; i++) {
        ktile_rec *r = &k->tiles[i];
        if (r->mem != t->mem || r->offset != t->offset || r->bytes != t->bytes) continue;
        *r = k->tiles[--k->ntiles];
        if (pool_insert(&k->pool[psum], t->offset, t->offset + t->bytes) != 0) {
            k->broken = 1;
            return nx_fail(err, "out of memory in the tile allocator");
        }
        return 0;
    }
    return nx_fail(err, "release of the %s tile at byte %llu (%llu bytes per partition): it is not "
                        "allocated (released twice?)",
                   mem_name(psum), (unsigned long long)t->offset, (unsigned long long)t->bytes);
}

int nx_kctx_release_all(nx_kctx *k, nx_error *err) {
    while (k->ntiles > 0) {
        const ktile_rec *r = &k->tiles[--k->ntiles];
        const uint64_t lo = r->offset, hi = r->offset + r->bytes;
        if (pool_insert(&k->pool[r->mem == NX_OPK_PSUM], lo, hi) != 0) {
            k->broken = 1;
            return nx_fail(err, "out of memory in the tile allocator");
        }
    }
    return 0;
}

nx_operand nx_tile_ap(const nx_tile *t) {
    return nx_ap_tile((nx_operand_kind)t->mem, (nx_dtype)t->dtype, 0, t->partitions, t->offset,
                      (uint32_t)t->free_elems);
}

nx_operand nx_tile_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np,
                        uint64_t elem_offset, uint32_t ndims, const int32_t *strides,
                        const uint32_t *counts) {
    return nx_ap((nx_operand_kind)t->mem, as, p0, np, 0, t->offset + elem_offset * nx_dtype_size(as),
                 ndims, strides, counts);
}

nx_operand nx_operand_rows(const nx_operand *op, uint32_t p0, uint32_t np) {
    nx_operand r = *op;
    r.partition_count = (uint8_t)np;
    if (op->kind == NX_OPK_HBM) {
        int64_t delta = (int64_t)op->partition_stride * (int64_t)p0 *
                        (int64_t)nx_dtype_size((nx_dtype)op->dtype);
        r.offset = (uint64_t)((int64_t)op->offset + delta);
    } else if (op->kind == NX_OPK_SBUF || op->kind == NX_OPK_PSUM) {
        r.start_partition = (uint8_t)(op->start_partition + p0);
    }
    return r;
}
