/* The authoring context and the inferred synchronisation.
 *
 * Scheme (docs/parts/kernels.md "How synchronisation is inferred"):
 * - agents: PE, DVE, ACT, POOL and each DMA lane; every instruction an agent
 *   completes increments the agent's one semaphore by 1, so "sem[A] >= n"
 *   means A's first n instructions are done (streams and queues complete in
 *   order). Nops the layer adds carry waits only, no increment.
 * - per stream a vector clock of what its next instruction is known to
 *   follow; per instruction a snapshot, kept while one of its footprints is
 *   tracked, so a wait also implies everything the waited-for instruction
 *   itself followed (transitive waits are skipped).
 * - a new instruction waits for the latest conflicting earlier access of
 *   every other agent (RAW, WAR, WAW on footprint boxes); one wait rides on
 *   the instruction, the others on nops just before it in the same stream.
 * - a DMA's wait goes on the SP instruction that issues it; the transfer
 *   also follows everything earlier on its lane.
 * - tracked accesses are dropped when a later ordered write covers them, or
 *   when every stream that has been used is ordered after them (a stream's
 *   first instruction then waits for what was dropped). */
#include "author_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/opcodes.h"

nx_kctx *nx_kctx_new_machine(nx_builder *b, const nx_machine *m, uint32_t program_id,
                            uint32_t num_programs) {
    const nx_geometry *geo = b ? nx_builder_geometry(b) : NULL;
    if (!b || !geo || !m || num_programs == 0 || program_id >= num_programs ||
        program_id >= NX_MAX_CORES)
        return NULL;
    nx_kctx *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->b = b;
    k->geo = *geo;
    k->machine = *m;
    k->machine.geo = *geo;
    k->pid = program_id;
    k->nprog = num_programs;
    uint32_t queues = nx_geometry_dma_queues(geo);
    k->nlanes = queues < K_DEFAULT_LANES ? queues : K_DEFAULT_LANES;
    if (k->nlanes == 0) k->nlanes = 1;
    k->nagents = K_COMPUTE_AGENTS + k->nlanes;
    for (uint32_t a = 0; a < K_AGENTS_MAX; a++) k->sem[a] = -1;
    k->sweep_at = 256;
    k->wait_spans = 1;
    return k;
}


static void snap_unref(ksnap *s) {
    if (s && --s->refs == 0) free(s);
}

static void clear_live(nx_kctx *k) {
    for (size_t i = 0; i < k->nlive; i++) snap_unref(k->live[i].snap);
    k->nlive = 0;
}

void nx_kctx_free(nx_kctx *k) {
    if (!k) return;
    clear_live(k);
    free(k->live);
    for (uint32_t a = 0; a < K_AGENTS_MAX; a++) snap_unref(k->last[a]);
    snap_unref(k->barrier_snap);
    k_pool_free_all(k);
    free(k);
}

/* ---- source locations (the author.h macros) ---- */

void nx_kctx_src_begin_(nx_kctx *k, const char *file, uint32_t line, const char *func) {
    if (!k) return;
    if (k->src_depth++ == 0) k->src = (nx_src_here){file, func, line};
}

int nx_kctx_src_end_(nx_kctx *k, int rc) {
    if (k && k->src_depth > 0 && --k->src_depth == 0) k->src = (nx_src_here){NULL, NULL, 0};
    return rc;
}

uint32_t nx_kctx_program_id(const nx_kctx *k) { return k->solo ? 0 : k->pid; }
uint32_t nx_kctx_num_programs(const nx_kctx *k) { return k->solo ? 1 : k->nprog; }
void nx_kctx_set_solo(nx_kctx *k, int on) { k->solo = on != 0; }
void nx_kctx_set_region(nx_kctx *k, const char *name) {
    k->region = name;
    k->region_buf ^= 1;
}
int nx_kctx_solo(const nx_kctx *k) { return k->solo; }
uint32_t nx_kctx_core(const nx_kctx *k) { return k->pid; }
const nx_geometry *nx_kctx_geometry(const nx_kctx *k) { return &k->geo; }
const nx_machine *nx_kctx_machine(const nx_kctx *k) { return &k->machine; }
nx_builder *nx_kctx_builder(nx_kctx *k) { return k->b; }
uint32_t nx_kctx_lanes(const nx_kctx *k) { return k->nlanes; }

int nx_kctx_set_lanes(nx_kctx *k, uint32_t lanes, nx_error *err) {
    uint32_t queues = nx_geometry_dma_queues(&k->geo);
    if (lanes > queues) lanes = queues;
    if (lanes > K_LANES_MAX) lanes = K_LANES_MAX;
    if (lanes == 0) lanes = 1;
    if (lanes == k->nlanes) return 0; /* already so (a composite set them for its sub-kernels) */
    for (uint32_t a = 0; a < k->nagents; a++)
        if (k->count[a] != 0) return nx_fail(err, "nx_kctx_set_lanes: the trace already holds instructions");
    k->nlanes = lanes;
    k->nagents = K_COMPUTE_AGENTS + lanes;
    return 0;
}

void nx_kctx_rows(const nx_kctx *k, uint64_t total, uint64_t *lo, uint64_t *hi) {
    const uint64_t np = nx_kctx_num_programs(k);
    uint64_t chunk = total / np + (total % np != 0);
    uint64_t a = chunk * nx_kctx_program_id(k);
    *lo = a < total ? a : total;
    *hi = *lo + chunk < total ? *lo + chunk : total;
}

/* Lane l -> DMA engine l mod E, that engine's queue l / E (isa/geometry.h
 * numbers them), so consecutive lanes use different engines. */
uint32_t nx_kctx_lane_queue(const nx_kctx *k, uint32_t lane) {
    const nx_geometry *g = &k->geo;
    uint32_t engines = g->dma_engines ? g->dma_engines : 1;
    uint32_t per = g->dma_queues_per_engine ? g->dma_queues_per_engine : 1;
    uint32_t queues = nx_geometry_dma_queues(g);
    lane %= k->nlanes;
    uint32_t q = nx_dma_queue_of(g, lane % engines, (lane / engines) % per);
    return queues ? q % queues : 0; /* the modulo guards a hand-made geometry */
}

void nx_kctx_get_stats(const nx_kctx *k, nx_kctx_stats *out) { *out = k->stats; }

int nx_kctx_engine_semaphore(const nx_kctx *k, nx_engine engine) {
    return (unsigned)engine < K_COMPUTE_AGENTS ? k->sem[engine] : -1;
}

int nx_kctx_lane_semaphore(const nx_kctx *k, uint32_t lane) {
    return lane < k->nlanes ? k->sem[k_lane_agent(lane)] : -1;
}

/* ---- semaphores ---- */

/* The index another core of the builder already increments for `agent`
 * (-1 if none): an instruction of that engine, or a transfer on that lane's
 * queue, carrying an increment. */
static int32_t index_on_other_cores(nx_kctx *k, uint32_t agent) {
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        if (c == k->pid) continue;
        nx_engine e = agent < K_COMPUTE_AGENTS ? (nx_engine)agent : NX_ENG_SP;
        uint32_t queue = agent < K_COMPUTE_AGENTS ? 0 : nx_kctx_lane_queue(k, agent - K_COMPUTE_AGENTS);
        uint32_t n = nx_builder_stream_len(k->b, c, e);
        for (uint32_t i = 0; i < n; i++) {
            nx_insn scratch;
            const nx_insn *in = nx_builder_insn(k->b, c, e, i, &scratch);
            if (in->inc_sem == NX_SEM_NONE) continue;
            if (e == NX_ENG_SP && nx_insn_dma_queue(in) != (int32_t)queue) continue;
            return in->inc_sem;
        }
    }
    return -1;
}

/* 1 if this core's streams or this context already use semaphore s. */
static int index_taken_here(nx_kctx *k, uint32_t s) {
    for (uint32_t a = 0; a < K_AGENTS_MAX; a++)
        if (k->sem[a] == (int32_t)s) return 1;
    for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
        uint32_t n = nx_builder_stream_len(k->b, k->pid, (nx_engine)e);
        for (uint32_t i = 0; i < n; i++) {
            nx_insn scratch;
            const nx_insn *in = nx_builder_insn(k->b, k->pid, (nx_engine)e, i, &scratch);
            if ((in->wait_sem <= s && s < in->wait_sem + nx_insn_wait_sems(in)) || in->inc_sem == s)
                return 1;
        }
    }
    return 0;
}

static int sem_of(nx_kctx *k, uint32_t agent, uint32_t *out, nx_error *err) {
    if (k->sem[agent] < 0) {
        int32_t s = index_on_other_cores(k, agent);
        if (s < 0 || index_taken_here(k, (uint32_t)s)) {
            uint32_t fresh;
            if (nx_builder_semaphore(k->b, &fresh, err) != 0) return -1;
            s = (int32_t)fresh;
        }
        k->sem[agent] = s;
    }
    *out = (uint32_t)k->sem[agent];
    return 0;
}

/* ---- footprints ---- */

static int boxes_overlap(const nx_footprint *a, const nx_footprint *b) {
    if (a->kind != b->kind) return 0;
    if (a->lo >= b->hi || b->lo >= a->hi) return 0;
    if (a->kind != NX_OPK_HBM && (a->p_lo >= b->p_hi || b->p_lo >= a->p_hi)) return 0;
    return 1;
}

static int box_covers(const nx_footprint *outer, const nx_footprint *inner) {
    if (outer->kind != inner->kind) return 0;
    if (outer->lo > inner->lo || inner->hi > outer->hi) return 0;
    if (outer->kind != NX_OPK_HBM && (outer->p_lo > inner->p_lo || inner->p_hi > outer->p_hi))
        return 0;
    return 1;
}

static void live_remove(nx_kctx *k, size_t i) {
    snap_unref(k->live[i].snap);
    k->live[i] = k->live[--k->nlive];
}

/* Drops accesses every used stream is ordered after. */
static void sweep(nx_kctx *k) {
    uint32_t floor[K_AGENTS_MAX];
    int any = 0;
    for (uint32_t a = 0; a < k->nagents; a++) floor[a] = UINT32_MAX;
    for (unsigned s = 0; s < K_ISSUERS; s++) {
        if (!k->used[s]) continue;
        any = 1;
        for (uint32_t a = 0; a < k->nagents; a++)
            if (k->vc[s][a] < floor[a]) floor[a] = k->vc[s][a];
    }
    if (any) {
        for (uint32_t a = 0; a < k->nagents; a++)
            if (floor[a] > k->retired[a]) k->retired[a] = floor[a];
        for (size_t i = k->nlive; i-- > 0;)
            if (k->live[i].count <= floor[k->live[i].agent]) live_remove(k, i);
    }
    k->sweep_at = k->nlive * 2 > 256 ? k->nlive * 2 : 256;
}

/* ---- waits ---- */

static void need_max(kneed *n, uint32_t count, const ksnap *snap) {
    if (count > n->count || (count == n->count && snap && !n->snap)) {
        n->count = count;
        n->snap = snap;
    }
}

static void vc_join(nx_kctx *k, uint32_t *vc, const kneed *n, uint32_t agent) {
    if (n->snap)
        for (uint32_t a = 0; a < k->nagents; a++)
            if (n->snap->vc[a] > vc[a]) vc[a] = n->snap->vc[a];
    if (n->count > vc[agent]) vc[agent] = n->count;
}

typedef struct kwait {
    uint32_t agent, count;
} kwait;

/* A wait as emitted: semaphores sem .. sem + span - 1 each >= value. */
typedef struct kspan {
    uint32_t sem, span, value;
} kspan;

void nx_kctx_set_wait_spans(nx_kctx *k, int on) {
    if (k) k->wait_spans = on != 0;
}

/* The semaphores of waits[0 .. nw), in that order; with wait_spans, sorted
 * by index and merged into spans: two waits of one value join when every
 * semaphore between them is an agent of this context that `known` (what the
 * instruction follows once all its waits pass) already has at that value.
 * Returns the number of spans in out, or -1. */
static int pack_waits(nx_kctx *k, const kwait *waits, uint32_t nw, const uint32_t *known,
                      kspan *out, nx_error *err) {
    for (uint32_t i = 0; i < nw; i++) {
        if (sem_of(k, waits[i].agent, &out[i].sem, err) != 0) return -1;
        out[i].span = 1;
        out[i].value = waits[i].count;
    }
    if (!k->wait_spans || nw < 2) return (int)nw;
    for (uint32_t i = 1; i < nw; i++) /* insertion sort: nw <= K_AGENTS_MAX */
        for (uint32_t j = i; j > 0 && out[j - 1].sem > out[j].sem; j--) {
            kspan t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    uint32_t n = 1;
    for (uint32_t i = 1; i < nw; i++) {
        kspan *last = &out[n - 1];
        int join = out[i].value == last->value;
        for (uint32_t g = last->sem + last->span; join && g < out[i].sem; g++) {
            join = 0;
            for (uint32_t a = 0; a < k->nagents; a++)
                if (k->sem[a] == (int32_t)g) join = known[a] >= last->value;
        }
        if (join)
            last->span = out[i].sem + 1 - last->sem;
        else
            out[n++] = out[i];
    }
    return (int)n;
}

/* Orders the needs not yet implied by `known` into a short list of waits:
 * greedily the wait whose snapshot implies the most others first. Updates
 * known (and also, if not NULL, issuer_vc) with every wait. */
static uint32_t resolve(nx_kctx *k, const kneed *needs, uint32_t *known, uint32_t *issuer_vc,
                        kwait *waits) {
    uint32_t cand[K_AGENTS_MAX], nc = 0, nw = 0;
    for (uint32_t a = 0; a < k->nagents; a++)
        if (needs[a].count > known[a]) cand[nc++] = a;
    while (nc > 0) {
        uint32_t best = 0, best_score = 0;
        for (uint32_t i = 0; i < nc; i++) {
            const kneed *n = &needs[cand[i]];
            uint32_t score = 1;
            if (n->snap)
                for (uint32_t j = 0; j < nc; j++)
                    if (j != i && n->snap->vc[cand[j]] >= needs[cand[j]].count) score++;
            if (score > best_score) {
                best_score = score;
                best = i;
            }
        }
        uint32_t a = cand[best];
        waits[nw].agent = a;
        waits[nw].count = needs[a].count;
        nw++;
        vc_join(k, known, &needs[a], a);
        if (issuer_vc) vc_join(k, issuer_vc, &needs[a], a);
        uint32_t w = 0;
        for (uint32_t i = 0; i < nc; i++)
            if (needs[cand[i]].count > known[cand[i]]) cand[w++] = cand[i];
        nc = w;
    }
    return nw;
}

static int emit_raw(nx_kctx *k, nx_engine engine, const nx_insn *in, nx_error *err) {
    const nx_src_here *at = k->src_depth ? &k->src : NULL;
    nx_src_here tagged;
    if (at && k->region) { /* "region: func" (nx_kctx_set_region); the buffer flips with the region */
        char *fb = k->region_func[k->region_buf];
        snprintf(fb, sizeof k->region_func[0], "%s: %s", k->region, at->func ? at->func : "");
        tagged = *at;
        tagged.func = fb;
        at = &tagged;
    }
    if (nx_builder_emit_at(k->b, k->pid, engine, in, at, NULL, err) != 0) {
        k->broken = 1;
        return -1;
    }
    return 0;
}

/* Emits nops on `engine` carrying spans[0 .. n). */
static int emit_wait_nops(nx_kctx *k, nx_engine engine, const kspan *spans, uint32_t n,
                          nx_error *err) {
    for (uint32_t i = 0; i < n; i++) {
        nx_insn nop = nx_insn_make(NX_OP_NOP);
        nx_insn_wait_span(&nop, spans[i].sem, spans[i].span, spans[i].value);
        if (emit_raw(k, engine, &nop, err) != 0) return -1;
        k->stats.nops++;
        k->stats.waits++;
    }
    return 0;
}

static int live_push(nx_kctx *k, const nx_footprint *box, uint32_t agent, uint32_t count,
                     ksnap *snap, nx_error *err) {
    if (k->nlive == k->live_cap) {
        size_t cap = k->live_cap ? k->live_cap * 2 : 256;
        kaccess *p = realloc(k->live, cap * sizeof *p);
        if (!p) {
            k->broken = 1;
            return nx_fail(err, "out of memory tracking footprints");
        }
        k->live = p;
        k->live_cap = cap;
    }
    kaccess *acc = &k->live[k->nlive++];
    acc->box = *box;
    acc->agent = (uint16_t)agent;
    acc->count = count;
    acc->snap = snap;
    snap->refs++;
    if (k->nlive > k->stats.live_max) k->stats.live_max = k->nlive;
    return 0;
}

static int check_open(nx_kctx *k, nx_error *err) {
    if (k->broken) return nx_fail(err, "kernel context: an earlier error left the trace unusable");
    if (k->finished) return nx_fail(err, "kernel context: the trace is finished");
    return 0;
}

/* k_emit, with `nxfp` more footprints (`xfp`) counted as the instruction's
 * own: how a ranged barrier orders the accesses to its range. */
static int emit_with(nx_kctx *k, nx_engine engine, int lane, nx_insn *insn, const kneed *extra,
                     const nx_footprint *xfp, int nxfp, nx_error *err) {
    if (check_open(k, err) != 0) return -1;
    const char *mn = nx_opcode_mnemonic(insn->opcode);
    if (insn->wait_sem != NX_SEM_NONE || insn->inc_sem != NX_SEM_NONE)
        return nx_fail(err, "%s %s: carries a semaphore; the authoring layer adds them",
                       nx_engine_name(engine), mn);
    if (nx_insn_validate(insn, engine, &k->geo, k->geo.hbm_bytes, NX_MAX_SEMAPHORES, err) != 0)
        return nx_fail_prefix(err, "%s %s", nx_engine_name(engine), mn);

    int dma = engine == NX_ENG_SP;
    uint32_t self = dma ? k_lane_agent((uint32_t)lane) : (uint32_t)engine;
    uint32_t known[K_AGENTS_MAX], ivc[K_AGENTS_MAX];
    memcpy(ivc, k->vc[engine], sizeof ivc);
    memcpy(known, ivc, sizeof known);
    if (dma)
        for (uint32_t a = 0; a < k->nagents; a++)
            if (k->lane_vc[lane][a] > known[a]) known[a] = k->lane_vc[lane][a];

    kneed needs[K_AGENTS_MAX];
    memset(needs, 0, sizeof needs);
    if (!k->used[engine])
        for (uint32_t a = 0; a < k->nagents; a++) needs[a].count = k->retired[a];
    if (k->barrier_count) need_max(&needs[NX_ENG_POOL], k->barrier_count, k->barrier_snap);
    if (extra)
        for (uint32_t a = 0; a < k->nagents; a++)
            if (extra[a].count) need_max(&needs[a], extra[a].count, extra[a].snap);

    nx_footprint fp[NX_MAX_OPERANDS + 1];
    int nfp = nx_insn_footprint(insn, fp);
    for (int f = 0; f < nxfp && nfp < NX_MAX_OPERANDS + 1; f++) fp[nfp++] = xfp[f];
    for (size_t i = 0; i < k->nlive; i++) {
        const kaccess *acc = &k->live[i];
        if (acc->agent == self || acc->count <= known[acc->agent]) continue;
        for (int f = 0; f < nfp; f++) {
            if ((acc->box.write || fp[f].write) && boxes_overlap(&acc->box, &fp[f])) {
                need_max(&needs[acc->agent], acc->count, acc->snap);
                break;
            }
        }
    }

    kwait waits[K_AGENTS_MAX];
    kspan spans[K_AGENTS_MAX];
    int ns = pack_waits(k, waits, resolve(k, needs, known, ivc, waits), known, spans, err);
    if (ns < 0) return -1;
    if (ns > 1 && emit_wait_nops(k, engine, spans, (uint32_t)ns - 1, err) != 0) return -1;
    if (ns > 0) {
        nx_insn_wait_span(insn, spans[ns - 1].sem, spans[ns - 1].span, spans[ns - 1].value);
        k->stats.waits++;
    }
    uint32_t self_sem;
    if (sem_of(k, self, &self_sem, err) != 0) return -1;
    nx_insn_inc(insn, self_sem, 1);

    ksnap *snap = malloc(sizeof *snap + k->nagents * sizeof(uint32_t));
    if (!snap) {
        k->broken = 1;
        return nx_fail(err, "out of memory tracking clocks");
    }
    if (emit_raw(k, engine, insn, err) != 0) {
        free(snap);
        return -1;
    }
    k->stats.instructions++;
    k->count[self]++;
    known[self] = k->count[self];
    snap->refs = 1; /* held as last[self] */
    memcpy(snap->vc, known, k->nagents * sizeof(uint32_t));
    snap_unref(k->last[self]);
    k->last[self] = snap;
    if (dma) {
        memcpy(k->vc[engine], ivc, sizeof ivc);
        memcpy(k->lane_vc[lane], known, sizeof known);
    } else {
        memcpy(k->vc[engine], known, sizeof known);
    }
    k->used[engine] = 1;

    /* accesses this instruction's writes cover are ordered before it */
    for (int f = 0; f < nfp; f++) {
        if (!fp[f].write) continue;
        for (size_t i = k->nlive; i-- > 0;)
            if (box_covers(&fp[f], &k->live[i].box)) live_remove(k, i);
    }
    for (int f = 0; f < nfp; f++)
        if (live_push(k, &fp[f], self, k->count[self], snap, err) != 0) return -1;
    if (k->nlive >= k->sweep_at) sweep(k);
    return 0;
}

int k_emit(nx_kctx *k, nx_engine engine, int lane, nx_insn *insn, const kneed *extra,
           nx_error *err) {
    return emit_with(k, engine, lane, insn, extra, NULL, 0, err);
}

/* The barrier stands for a write of the whole range: so it waits for this
 * core's last access of every agent to the range (its arrival follows
 * them), and every later access to the range waits for it (for its pass,
 * where its increment happens); the rest is not ordered. */
int nx_kctx_barrier_hbm(nx_kctx *k, uint64_t lo, uint64_t hi, nx_error *err) {
    if (check_open(k, err) != 0) return -1;
    if (lo >= hi || hi > k->geo.hbm_bytes)
        return nx_fail(err, "pool core_barrier: HBM range [%llu, %llu) is empty or beyond HBM (%llu bytes)",
                       (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)k->geo.hbm_bytes);
    nx_footprint box = {.kind = NX_OPK_HBM, .write = 1, .read = 1, .lo = lo, .hi = hi};
    nx_insn in = nx_insn_make(NX_OP_CORE_BARRIER);
    return emit_with(k, NX_ENG_POOL, -1, &in, NULL, &box, 1, err);
}

int nx_kctx_barrier(nx_kctx *k, nx_error *err) {
    if (check_open(k, err) != 0) return -1;
    kneed extra[K_AGENTS_MAX];
    memset(extra, 0, sizeof extra);
    for (uint32_t a = 0; a < k->nagents; a++) {
        extra[a].count = k->count[a];
        extra[a].snap = k->last[a];
    }
    nx_insn in = nx_insn_make(NX_OP_CORE_BARRIER);
    if (k_emit(k, NX_ENG_POOL, -1, &in, extra, err) != 0) return -1;
    /* everything before is now ordered before every later instruction of
     * either core: later instructions wait for the barrier, nothing older
     * needs tracking */
    k->barrier_count = k->count[NX_ENG_POOL];
    snap_unref(k->barrier_snap);
    k->barrier_snap = k->last[NX_ENG_POOL];
    k->barrier_snap->refs++;
    clear_live(k);
    for (uint32_t a = 0; a < k->nagents; a++) k->retired[a] = k->count[a];
    return 0;
}

int nx_kctx_finish(nx_kctx *k, nx_error *err) {
    if (check_open(k, err) != 0) return -1;
    kneed needs[K_AGENTS_MAX];
    memset(needs, 0, sizeof needs);
    for (uint32_t l = 0; l < k->nlanes; l++) {
        uint32_t a = k_lane_agent(l);
        if (k->count[a]) need_max(&needs[a], k->count[a], k->last[a]);
    }
    uint32_t known[K_AGENTS_MAX];
    memcpy(known, k->vc[NX_ENG_SP], sizeof known);
    kwait waits[K_AGENTS_MAX];
    kspan spans[K_AGENTS_MAX];
    int ns = pack_waits(k, waits, resolve(k, needs, known, NULL, waits), known, spans, err);
    if (ns < 0 || emit_wait_nops(k, NX_ENG_SP, spans, (uint32_t)ns, err) != 0) return -1;
    memcpy(k->vc[NX_ENG_SP], known, sizeof known);
    for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
        if (nx_builder_stream_len(k->b, k->pid, (nx_engine)e) == 0) continue;
        nx_insn end = nx_insn_make(NX_OP_END);
        if (emit_raw(k, (nx_engine)e, &end, err) != 0) return -1;
    }
    k->finished = 1;
    return 0;
}
