/* The lowering driver and its traced-program cache (registry/lower.h). */
#include "lower.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/builder.h"
#include "isa/strbuf.h"
#include "kernels/author/author.h"
#include "sim/machine.h"

typedef struct cache_entry {
    char *key;
    uint64_t hash;
    uint32_t grid;
    nx_program prog;
    struct cache_entry *next;
} cache_entry;

struct nx_lowerer {
    nx_machine machine; /* copy: what every authoring context gets */
    nx_geometry geo;    /* = machine.geo */
    const nx_kernel_registry *reg; /* NULL = the live registry */
    const nx_composite_table *comps; /* NULL = the inventory's composites */
    pthread_mutex_t lock;          /* guards everything below */
    cache_entry **buckets;
    size_t nbuckets;
    uint64_t count;
    uint64_t new_traces; /* NEW_NKI_FE */
    uint64_t hits;
};

nx_lowerer *nx_lowerer_new(const nx_geometry *geo, const nx_kernel_registry *reg) {
    return nx_lowerer_new_with(geo, reg, NULL);
}

nx_lowerer *nx_lowerer_new_with(const nx_geometry *geo, const nx_kernel_registry *reg,
                                const nx_composite_table *comps) {
    nx_machine m;
    nx_error err;
    if (nx_machine_of_geometry(geo, &m, &err) != 0) return NULL;
    return nx_lowerer_new_machine(&m, reg, comps);
}

nx_lowerer *nx_lowerer_new_machine(const nx_machine *m, const nx_kernel_registry *reg,
                                   const nx_composite_table *comps) {
    if (!m) return NULL;
    nx_lowerer *L = calloc(1, sizeof *L);
    if (!L) return NULL;
    L->machine = *m;
    L->geo = m->geo;
    L->reg = reg;
    L->comps = comps;
    L->nbuckets = 64;
    L->buckets = calloc(L->nbuckets, sizeof *L->buckets);
    if (!L->buckets || pthread_mutex_init(&L->lock, NULL) != 0) {
        free(L->buckets);
        free(L);
        return NULL;
    }
    return L;
}

void nx_lowerer_free(nx_lowerer *L) {
    if (!L) return;
    for (size_t b = 0; b < L->nbuckets; b++) {
        for (cache_entry *e = L->buckets[b], *next; e; e = next) {
            next = e->next;
            nx_program_free(&e->prog);
            free(e->key);
            free(e);
        }
    }
    free(L->buckets);
    pthread_mutex_destroy(&L->lock);
    free(L);
}

int nx_lowerer_lookup(const nx_lowerer *L, const char *func_name, nx_kernel_target *out, nx_error *err) {
    if (!func_name) return nx_fail(err, "the op has no func_name");
    return nx_kernel_lookup(L->reg, L->comps, func_name, out, err);
}

/* ---- the key ------------------------------------------------------------------ */

static void put_tensor(nx_strbuf *b, const nx_op_tensor *t) {
    char type[128];
    nx_op_tensor_format(type, sizeof type, t);
    if (t->alias) /* one tensor with its operand: another program */
        nx_sb_printf(b, "%s:%s=@%u;", t->name, type, t->alias - 1);
    else
        nx_sb_printf(b, "%s:%s;", t->name, type);
}

/* func_name | operands | results | attrs | grid | machine. Tensor names and
 * func_name cannot hold '|' or ';' except func_name, which comes first and
 * is followed by its length, so no two ops share a key text. */
char *nx_lower_cache_key(const nx_macro_op *op, uint32_t grid, const nx_geometry *geo) {
    char *attrs = nx_attrs_canonical(&op->attrs);
    if (!attrs) return NULL;
    const char *fn = op->func_name ? op->func_name : "";
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_printf(&b, "%s#%zu|", fn, strlen(fn));
    for (uint32_t i = 0; i < op->n_operands; i++) put_tensor(&b, &op->operands[i]);
    nx_sb_putc(&b, '|');
    for (uint32_t i = 0; i < op->n_results; i++) put_tensor(&b, &op->results[i]);
    nx_sb_printf(&b, "|%s|grid=%u|machine=%.*s", attrs, grid, (int)sizeof geo->name, geo->name);
    free(attrs);
    return nx_sb_take(&b);
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static cache_entry *cache_find(const nx_lowerer *L, const char *key, uint64_t hash) {
    for (cache_entry *e = L->buckets[hash % L->nbuckets]; e; e = e->next)
        if (e->hash == hash && strcmp(e->key, key) == 0) return e;
    return NULL;
}

/* Doubles the bucket array when the load passes 1 (best effort: on
 * out-of-memory the chains just get longer). */
static void cache_grow(nx_lowerer *L) {
    if (L->count < L->nbuckets) return;
    size_t n = L->nbuckets * 2;
    cache_entry **b = calloc(n, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < L->nbuckets; i++) {
        for (cache_entry *e = L->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash % n];
            b[e->hash % n] = e;
        }
    }
    free(L->buckets);
    L->buckets = b;
    L->nbuckets = n;
}

/* ---- tracing --------------------------------------------------------------- */

static int trace(const nx_lowerer *L, const nx_macro_op *op, nx_resolved *r, uint32_t grid, uint64_t max_bytes,
                 uint64_t beside, int *limited, nx_program *out, nx_error *err) {
    const char *key = r->key;
    if (grid > L->geo.cores)
        return nx_fail(err, "%s: needs a grid of %u cores, machine '%.16s' has %u", key, grid,
                       L->geo.name, L->geo.cores);
    nx_builder *b = nx_builder_new(&L->geo, grid);
    if (!b) return nx_fail(err, "%s: out of memory creating the program builder", key);
    nx_builder_set_memory_limit(b, max_bytes, beside);
    int rc = -1;
    /* Declare every operand (input) and result (output), in op order; an
     * aliased result declares nothing: it is its operand's tensor, so the
     * leaf's result argument has the operand's offset. */
    uint64_t off_in[NX_OP_MAX_TENSORS], off_out[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands; i++) {
        const nx_op_tensor *t = &op->operands[i];
        if (nx_builder_tensor(b, t->name, t->dtype, t->ndims, t->shape, NX_ROLE_INPUT, &off_in[i], err) != 0) {
            nx_fail_prefix(err, "%s: operand %u (%s)", key, i, t->name);
            goto done;
        }
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        const nx_op_tensor *t = &op->results[j];
        static const uint64_t one[1] = {1}; /* a 0-d result is one element */
        if (t->alias && t->alias <= op->n_operands) {
            off_out[j] = off_in[t->alias - 1];
            continue;
        }
        if (nx_builder_tensor(b, t->name, t->dtype, t->ndims ? t->ndims : 1, t->ndims ? t->shape : one, NX_ROLE_OUTPUT,
                              &off_out[j], err) != 0) {
            nx_fail_prefix(err, "%s: result %u (%s)", key, j, t->name);
            goto done;
        }
    }
    /* call_args: the first n_inputs operands, then the results. */
    for (uint32_t a = 0; a < r->nargs; a++)
        r->call_args[a].hbm_offset = a < r->n_inputs ? off_in[a] : off_out[a - r->n_inputs];
    nx_kernel_call call;
    call.args = r->call_args;
    call.nargs = r->nargs;
    call.n_inputs = r->n_inputs;
    call.additional_args = &r->additional_args;
    call.attrs = &op->attrs;
    for (uint32_t pid = 0; pid < grid; pid++) {
        nx_kctx *k = nx_kctx_new_machine(b, &L->machine, pid, grid);
        if (!k) {
            nx_fail(err, "%s: out of memory creating the authoring context", key);
            goto done;
        }
        int lrc = r->leaf->fn(k, &call, err);
        if (lrc == 0) lrc = nx_kctx_finish(k, err);
        nx_kctx_free(k);
        if (lrc != 0) {
            nx_error why; /* a trace stopped at a limit: the limit's message, naming the kernel */
            nx_builder_limit hit = nx_builder_limit_hit(b, &why);
            if (hit != NX_BUILDER_WITHIN) {
                nx_fail(err, "%s: %s", key, why.msg);
                if (limited) *limited = hit == NX_BUILDER_MEMORY;
            }
            goto done; /* else the leaf's message, unchanged */
        }
    }
    if (nx_builder_finish(b, out, err) != 0) {
        nx_fail_prefix(err, "%s", key);
        goto done;
    }
    rc = 0;
done:
    nx_builder_free(b);
    return rc;
}

static int lower(nx_lowerer *L, const nx_kernel_target *t, const nx_macro_op *op, uint32_t grid_override,
                 uint64_t max_bytes, uint64_t beside, int *limited, const nx_program **prog, uint32_t *grid_out,
                 nx_error *err) {
    if (limited) *limited = 0;
    nx_resolved r;
    if (nx_resolve_target(t, op, &r, err) != 0) return -1;
    uint32_t grid = grid_override ? grid_override : r.config->requires_multicore_grid ? NX_VNC_GRID : 1;
    char *key = nx_lower_cache_key(op, grid, &L->geo);
    if (!key) {
        nx_resolved_free(&r);
        return nx_fail(err, "out of memory");
    }
    uint64_t hash = fnv1a(key);
    int rc = 0;
    pthread_mutex_lock(&L->lock);
    cache_entry *e = cache_find(L, key, hash);
    if (e) {
        L->hits++;
        free(key);
    } else {
        e = calloc(1, sizeof *e);
        if (!e) {
            free(key);
            rc = nx_fail(err, "out of memory");
        } else {
            e->key = key;
            e->hash = hash;
            e->grid = grid;
            nx_program_init(&e->prog);
            if (trace(L, op, &r, grid, max_bytes, beside, limited, &e->prog, err) != 0) {
                free(e->key);
                free(e);
                e = NULL;
                rc = -1;
            } else {
                cache_grow(L);
                e->next = L->buckets[hash % L->nbuckets];
                L->buckets[hash % L->nbuckets] = e;
                L->count++;
                L->new_traces++;
            }
        }
    }
    pthread_mutex_unlock(&L->lock);
    nx_resolved_free(&r);
    if (rc != 0) return -1;
    *prog = &e->prog;
    if (grid_out) *grid_out = e->grid;
    return 0;
}

int nx_lower(nx_lowerer *L, const nx_kernel_target *t, const nx_macro_op *op, const nx_program **prog,
             uint32_t *grid_out, nx_error *err) {
    return lower(L, t, op, 0, 0, 0, NULL, prog, grid_out, err);
}

int nx_lower_within(nx_lowerer *L, const nx_kernel_target *t, const nx_macro_op *op, uint32_t grid,
                    uint64_t max_bytes, uint64_t beside, const nx_program **prog, uint32_t *grid_out, int *limited,
                    nx_error *err) {
    if (grid > NX_VNC_GRID) return nx_fail(err, "grid must be 1 or %d, got %u", NX_VNC_GRID, grid);
    return lower(L, t, op, grid, max_bytes, beside, limited, prog, grid_out, err);
}

int nx_lower_on_grid(nx_lowerer *L, const nx_kernel_target *t, const nx_macro_op *op, uint32_t grid,
                     const nx_program **prog, nx_error *err) {
    if (grid < 1 || grid > NX_VNC_GRID) return nx_fail(err, "grid must be 1 or %d, got %u", NX_VNC_GRID, grid);
    return lower(L, t, op, grid, 0, 0, NULL, prog, NULL, err);
}

/* The counters are read under the lock: they are 64-bit and updated by
 * other threads. */
static uint64_t read_locked(const nx_lowerer *L, const uint64_t *field) {
    nx_lowerer *m = (nx_lowerer *)L;
    pthread_mutex_lock(&m->lock);
    uint64_t v = *field;
    pthread_mutex_unlock(&m->lock);
    return v;
}

uint64_t nx_lowerer_new_traces(const nx_lowerer *L) { return read_locked(L, &L->new_traces); }
uint64_t nx_lowerer_cache_hits(const nx_lowerer *L) { return read_locked(L, &L->hits); }
uint64_t nx_lowerer_cached(const nx_lowerer *L) { return read_locked(L, &L->count); }
