/* Selections and their scheduler (kernels/topk/topk_core.h). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "topk_core.h"

/* Candidates a job leaves in out_x / out_i: every round's 8 are genuine
 * elements (or all n when fewer), so they are all kept. */
static uint64_t job_width(const tk_job *j) { return nx_min_u64(nx_cdiv_u64(j->L, 8) * 8, j->n); }

static int needs_keys(const tk *t, const tk_job *j) { return j->raw || !t->key_mode; }

uint64_t tk_sched_bytes(const tk *t, uint32_t S, uint64_t kcap, uint64_t lcap, int need_K) {
    kcap = nx_max_u64(kcap, 8);
    lcap = nx_cdiv_u64(lcap, 8) * 8;
    uint64_t slot = tk_tile_bytes(lcap, 4) + tk_tile_bytes(1, 4);
    if (need_K) slot += tk_tile_bytes(kcap, 4) + (t->is_float && !t->largest ? tk_tile_bytes(kcap, 1) : 0);
    if (!t->key_mode) slot += tk_tile_bytes(8, 4);
    return S * slot;
}

int tk_sched_init(tk *t, tk_sched *s, uint32_t P, uint32_t G, uint32_t S, uint64_t kcap, uint64_t L, int need_K,
                  nx_error *err) {
    memset(s, 0, sizeof *s);
    s->t = t;
    s->P = P;
    s->G = G < 1 ? 1 : G > 4 ? 4 : G;
    /* 2G slots let a group's keys overlap the rounds of the group before;
     * G slots (a scheduler that is flushed after every job) save space */
    s->S = S >= 2 * s->G ? 2 * s->G : s->G;
    s->kcap = nx_max_u64(kcap, 8);
    s->lcap = nx_cdiv_u64(L, 8) * 8;
    s->have_K = need_K;
    s->have_mask = need_K && t->is_float && !t->largest;
    s->have_V = !t->key_mode;
    for (uint32_t i = 0; i < s->S; i++) {
        if (nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_pos", NX_DT_INT32, P, s->lcap, &s->pos[i], err) != 0 ||
            nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_roff", NX_DT_FP32, P, 1, &s->roff[i], err) != 0)
            return -1;
        if (s->have_K && nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_keys", NX_DT_FP32, P, s->kcap, &s->K[i], err) != 0)
            return -1;
        if (s->have_mask && nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_nan", NX_DT_UINT8, P, s->kcap, &s->mask[i], err) != 0)
            return -1;
        if (s->have_V && nx_kctx_alloc(t->k, NX_OPK_SBUF, "topk_max8", NX_DT_FP32, P, 8, &s->V[i], err) != 0)
            return -1;
    }
    return 0;
}

void tk_sched_release(tk_sched *s) {
    nx_error e;
    for (uint32_t i = 0; i < s->S; i++) {
        nx_kctx_release(s->t->k, &s->pos[i], &e);
        nx_kctx_release(s->t->k, &s->roff[i], &e);
        if (s->have_K) nx_kctx_release(s->t->k, &s->K[i], &e);
        if (s->have_mask) nx_kctx_release(s->t->k, &s->mask[i], &e);
        if (s->have_V) nx_kctx_release(s->t->k, &s->V[i], &e);
    }
}


/* The tile and offset the rounds scan: the job's keys slot, or (key mode,
 * candidates) the candidates themselves, in place. */
static tk_cols scan_cols(tk_sched *s, const tk_job *j) {
    if (needs_keys(s->t, j)) return (tk_cols){&s->K[j->slot], 0};
    return j->x;
}

/* POOL: the keys of x (and the NaN mask for largest = false); pads to 8. */
static uint32_t job_P(const tk_sched *s, const tk_job *j) { return j->P ? j->P : s->P; }

static int emit_keys(tk_sched *s, const tk_job *j, nx_error *err) {
    tk *t = s->t;
    uint32_t P = job_P(s, j);
    tk_cols kc = scan_cols(s, j);
    if (needs_keys(t, j)) {
        nx_dtype src = j->raw ? t->dt : t->cand_dt;
        nx_operand kv = tk_view(&kc, NX_DT_FP32, P, j->n), xv = tk_view(&j->x, src, P, j->n);
        nx_operand lo = nx_imm(-t->clamp, NX_DT_FP32), neg = nx_imm(-1.0, NX_DT_FP32);
        if (t->largest) {
            if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &kv, &xv, NX_ALU_MAX, &lo, NX_ALU_BYPASS, NULL, err) != 0) return -1;
        } else {
            if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &kv, &xv, NX_ALU_MULTIPLY, &neg, NX_ALU_MAX, &lo, err) != 0) return -1;
            if (s->have_mask) {
                /* NaN is the largest value: with largest = false it ranks
                 * last among the real elements (-FLT_MAX, below -B), still
                 * above the knock-out */
                tk_cols mc = {&s->mask[j->slot], 0};
                nx_operand mv = tk_view(&mc, NX_DT_UINT8, P, j->n);
                if (nx_kctx_tensor_tensor(t->k, NX_ENG_POOL, NX_ALU_NOT_EQUAL, &mv, &xv, &xv, err) != 0) return -1;
                nx_insn sel = nx_insn_make(NX_OP_SELECT);
                sel.op[0] = kv;
                sel.op[1] = mv;
                sel.op[2] = nx_imm(-FLT_MAX, NX_DT_FP32);
                if (nx_kctx_emit(t->k, NX_ENG_DVE, &sel, err) != 0) return -1;
            }
        }
    }
    if (j->n < 8) {
        tk_cols pc = {kc.t, kc.off + j->n};
        nx_operand pv = tk_view(&pc, NX_DT_FP32, P, 8 - j->n);
        if (nx_kctx_memset(t->k, NX_ENG_POOL, &pv, -INFINITY, err) != 0) return -1;
    }
    return 0;
}

/* DVE: the rounds of a group, interleaved (max8 of every job, then their
 * match_replace8s), so no instruction waits for the one just before it. */
static int emit_rounds(tk_sched *s, const tk_job *g, uint32_t n, nx_error *err) {
    tk *t = s->t;
    int32_t one = 1;
    uint32_t eight = 8;
    uint64_t most = 0;
    for (uint32_t i = 0; i < n; i++) most = nx_max_u64(most, nx_cdiv_u64(g[i].L, 8));
    for (uint64_t r = 0; r < most; r++) {
        for (int phase = 0; phase < 2; phase++) {
            for (uint32_t i = 0; i < n; i++) {
                const tk_job *j = &g[i];
                uint32_t P = job_P(s, j);
                if (r >= nx_cdiv_u64(j->L, 8)) continue;
                tk_cols kc = scan_cols(s, j);
                uint32_t kn = (uint32_t)nx_max_u64(j->n, 8);
                nx_operand kv = nx_tile_view(kc.t, NX_DT_FP32, 0, P, kc.off, 1, &one, &kn);
                /* key mode: the keys max8 finds are the candidates */
                const nx_tile *vt = t->key_mode ? j->out_x.t : &s->V[j->slot];
                uint64_t voff = t->key_mode ? j->out_x.off + r * 8 : 0;
                if (phase == 0) {
                    nx_operand v8 = nx_tile_view(vt, NX_DT_FP32, 0, P, voff, 1, &one, &eight);
                    if (nx_topk_max8(t->k, &v8, &kv, err) != 0) return -1;
                } else if (nx_topk_knockout(t->k, &kv, &kv, vt, voff, &s->pos[j->slot], r * 8, P, -INFINITY, err) != 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

/* POOL: indices (and, payload mode, the elements) at the chosen positions. */
static int emit_post(tk_sched *s, const tk_job *j, nx_error *err) {
    tk *t = s->t;
    uint32_t P = job_P(s, j);
    uint64_t W = job_width(j);
    tk_cols pc = {&s->pos[j->slot], 0};
    nx_operand pv = tk_view(&pc, NX_DT_INT32, P, W);
    if (!j->idx.t) {
        nx_operand ov = tk_view(&j->out_i, NX_DT_INT32, P, W);
        nx_operand a = nx_imm((double)j->add, NX_DT_FP32);
        if (j->base) {
            nx_operand bv = nx_tile_view(j->base, NX_DT_INT32, 0, P, 0, 0, NULL, NULL);
            if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &ov, &pv, NX_ALU_ADD, &bv, NX_ALU_ADD, &a, err) != 0) return -1;
        } else if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &ov, &pv, NX_ALU_ADD, &a, NX_ALU_BYPASS, NULL, err) != 0) {
            return -1;
        }
    }
    if (j->idx.t || !t->key_mode) {
        /* gather indices: local_gather addresses the GpSimd core's
         * partitions flattened, so partition p's own data starts at (p mod
         * W) n */
        if (tk_pmod(t, err) != 0) return -1;
        nx_operand rv = nx_tile_view(&s->roff[j->slot], NX_DT_FP32, 0, P, 0, 0, NULL, NULL);
        nx_operand pm = nx_tile_view(&t->pmod, NX_DT_INT32, 0, P, 0, 0, NULL, NULL);
        nx_operand nn = nx_imm((double)j->n, NX_DT_FP32);
        if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &rv, &pm, NX_ALU_MULTIPLY, &nn, NX_ALU_BYPASS, NULL, err) != 0) return -1;
        if (nx_kctx_tensor_scalar(t->k, NX_ENG_POOL, &pv, &pv, NX_ALU_ADD, &rv, NX_ALU_BYPASS, NULL, err) != 0) return -1;
        nx_insn g = nx_insn_make(NX_OP_LOCAL_GATHER);
        g.op[2] = pv;
        if (j->idx.t) {
            g.op[0] = tk_view(&j->out_i, NX_DT_INT32, P, W);
            g.op[1] = tk_view(&j->idx, NX_DT_INT32, P, j->n);
            if (nx_kctx_emit(t->k, NX_ENG_POOL, &g, err) != 0) return -1;
        }
        if (!t->key_mode) {
            g.op[0] = tk_view(&j->out_x, t->bits, P, W);
            g.op[1] = tk_view(&j->x, t->bits, P, j->n);
            if (nx_kctx_emit(t->k, NX_ENG_POOL, &g, err) != 0) return -1;
        }
    }
    if (j->on_post) j->on_post(j->ctx, j->arg);
    return 0;
}

static int posts(tk_sched *s, tk_job *g, uint32_t n, nx_error *err) {
    for (uint32_t i = 0; i < n; i++)
        if (emit_post(s, &g[i], err) != 0) return -1;
    return 0;
}

int tk_sched_flush(tk_sched *s, nx_error *err) {
    if (s->nform && emit_rounds(s, s->form, s->nform, err) != 0) return -1;
    if (posts(s, s->pend, s->npend, err) != 0) return -1;
    uint32_t n = s->nform;
    s->npend = s->nform = 0;
    return posts(s, s->form, n, err);
}

int tk_sched_add(tk_sched *s, const tk_job *job, int depends, nx_error *err) {
    tk *t = s->t;
    if (job->L > job->n || (needs_keys(t, job) && job->n > s->kcap) || nx_cdiv_u64(job->L, 8) * 8 > s->lcap)
        return nx_fail(err, "%s: internal: a selection of %llu of %llu candidates exceeds its workspace", t->leaf,
                       (unsigned long long)job->L, (unsigned long long)job->n);
    if ((depends || (s->S == s->G && s->nform == 0 && s->npend)) && tk_sched_flush(s, err) != 0) return -1;
    tk_job j = *job;
    j.slot = s->next_slot++ % s->S;
    if (emit_keys(s, &j, err) != 0) return -1;
    s->form[s->nform++] = j;
    if (s->nform == s->G) {
        if (emit_rounds(s, s->form, s->nform, err) != 0) return -1;
        if (posts(s, s->pend, s->npend, err) != 0) return -1;
        memcpy(s->pend, s->form, s->nform * sizeof *s->form);
        s->npend = s->nform;
        s->nform = 0;
    }
    return 0;
}

uint64_t tk_job_width(const tk_job *j) { return job_width(j); }
