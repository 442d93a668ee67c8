/* decoder_layer: one Llama-style decoder layer (the llama3_transformer
 * block of the production kernel inventory; the layer of Touvron et al.,
 * "Llama 2", 2023 and Meta's Llama 3 reference model.py: pre-norm
 * attention with RoPE and GQA, pre-norm SwiGLU MLP, two residuals) traced
 * as ONE program per core that calls the roster kernels' trace functions
 * on the same authoring context, through HBM scratch between them:
 *   qkv              rmsnorm(x) gamma_attn fused into the QKV projection,
 *                    RoPE on q and k, heads layout (kernels/qkv);
 *   attention        the S new tokens against the cache, the cache writes
 *                    fused: S <= 8 one attention_decode step; prefill one
 *                    flash attention over [cache ; new], the cached
 *                    columns masked at run time by L_b, the new keys causal
 *                    (kernels/layer/layer_prefill.c);
 *   qkv again        the o projection [T, nq d] x w_o: qkv's plans with
 *                    neither norm nor rope (run_oproj; kernels/matmul for
 *                    an H with no power-of-two head width);
 *   mlp              h = x + o fused as its residual, rmsnorm(h)
 *                    gamma_mlp fused, gate/up/silu/down (kernels/mlp);
 *   residual         out = h + mlp (kernels/layer/layer_moves.c).
 * tp 1: every sub-kernel splits its own work over the VNC grid's cores
 * (each its best split), a grid barrier between them. tp 2 (Megatron-LM's
 * tensor parallelism, Shoeybi et al. 2019): each core runs the sub-kernels
 * alone (nx_kctx_set_solo) on its shard: its n_q_heads / 2 query heads and
 * n_kv_heads / 2 kv heads, its I / 2 columns of w_gate and w_up and rows of
 * w_down; the partial o projection and the partial MLP are all-reduced
 * between the cores (kernels/author/collective.h). The op carries the
 * unsharded weights, which each core reads in place: its w_qkv head
 * columns through qkv's weight view, its w_gate and w_up columns with
 * mlp's row pitch (w_o's and w_down's rows are contiguous).
 * docs/parts/decoder-layer.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_impl.h"

#include "isa/intmath.h"
#include "kernels/attention/decode.h"
#include "kernels/author/collective.h"
#include "kernels/matmul/matmul.h"
#include "kernels/mlp/mlp.h"
#include "kernels/qkv/qkv.h"
#include "kernels/transpose/transpose.h"

static int set_int(nx_attrs *a, const char *n, int64_t v, nx_error *err) {
    nx_value x = nx_value_int(v);
    return nx_attrs_set(a, n, &x, err);
}
static int set_num(nx_attrs *a, const char *n, double v, nx_error *err) {
    nx_value x = nx_value_float(v);
    return nx_attrs_set(a, n, &x, err);
}
static int set_str(nx_attrs *a, const char *n, const char *v, nx_error *err) {
    nx_value x = {.kind = NX_VAL_STRING, .s = malloc(strlen(v) + 1)};
    if (!x.s) return nx_fail(err, "decoder_layer: out of memory");
    memcpy(x.s, v, strlen(v) + 1);
    return nx_attrs_set(a, n, &x, err);
}

/* An HBM scratch tensor (private to the core while solo is on). */
static int scratch(layer_run *L, const char *name, nx_dtype dt, uint32_t nd, const uint64_t *shape, nx_tensor_ref *t,
                   nx_error *err) {
    uint64_t off;
    if (nx_kctx_scratch(L->k, name, dt, nd, shape, &off, err) != 0) return nx_fail_prefix(err, "decoder_layer");
    *t = nx_tensor_ref_at(name, dt, nd, shape, off);
    return 0;
}

static nx_tensor_ref at(const nx_tensor_ref *t, uint64_t byte_off, uint32_t nd, const uint64_t *shape) {
    return nx_tensor_ref_at(t->name, t->dtype, nd, shape, t->hbm_offset + byte_off);
}

/* The grid barrier between two sub-kernels of tp 1 (tp 2's cores meet only
 * in the all-reduces). */
static int sync(layer_run *L, nx_error *err) {
    nx_kctx_set_region(L->k, NULL);
    if (L->p.tp == 1 && nx_kctx_num_programs(L->k) > 1) return nx_kctx_barrier(L->k, err);
    return 0;
}

/* The weights' views for tp 2 (the unsharded weights read in place). */
typedef struct layer_views {
    nx_qkv_wview qkv; /* w_qkv: this core's q, k and v head columns */
    uint64_t gu_ld;   /* w_gate, w_up: this core's I / 2 columns, rows I apart */
} layer_views;

/* A sub-kernel that reads this core's weight shard in place: qkv through its
 * weight view, mlp through its gate/up row pitch. */
typedef int (*layer_viewed_fn)(nx_kctx *k, const nx_kernel_call *c, const layer_views *v, nx_error *err);

static int qkv_in_place(nx_kctx *k, const nx_kernel_call *c, const layer_views *v, nx_error *err) {
    return nx_qkv_viewed(k, c, &v->qkv, err);
}

static int mlp_in_place(nx_kctx *k, const nx_kernel_call *c, const layer_views *v, nx_error *err) {
    return nx_mlp_pitched(k, c, v->gu_ld, err);
}

/* One part of the layer: its tiles returned before and after, its
 * instructions tagged with the region `what`; fn, or viewed(view). */
static int sub_run(layer_run *L, nx_leaf_fn fn, layer_viewed_fn viewed, const layer_views *view, const char *what,
                   const nx_tensor_ref *args, uint32_t n_in, uint32_t nargs, const nx_attrs *attrs, nx_error *err) {
    if (nx_kctx_release_all(L->k, err) != 0) return -1;
    nx_kernel_call c = {.args = args, .nargs = nargs, .n_inputs = n_in, .additional_args = attrs, .attrs = attrs};
    nx_kctx_set_region(L->k, what);
    const int rc = viewed ? viewed(L->k, &c, view, err) : fn(L->k, &c, err);
    if (rc != 0) return nx_fail_prefix(err, "decoder_layer (%s)", what);
    nx_kctx_set_region(L->k, NULL);
    return nx_kctx_release_all(L->k, err);
}

static int sub(layer_run *L, nx_leaf_fn fn, const char *what, const nx_tensor_ref *args, uint32_t n_in, uint32_t nargs,
               const nx_attrs *attrs, nx_error *err) {
    return sub_run(L, fn, NULL, NULL, what, args, n_in, nargs, attrs, err);
}

static int sub_viewed(layer_run *L, layer_viewed_fn viewed, const layer_views *view, const char *what,
                      const nx_tensor_ref *args, uint32_t n_in, uint32_t nargs, const nx_attrs *attrs, nx_error *err) {
    return sub_run(L, NULL, viewed, view, what, args, n_in, nargs, attrs, err);
}

typedef struct layer_bufs {
    nx_tensor_ref wqkv, wg, wu, wo, wd; /* this core's weights */
    layer_views views;                  /* how wqkv, wg and wu sit in the full weights */
    nx_tensor_ref q, kn, vn;            /* qkv's results, heads layout */
    nx_tensor_ref att;                  /* attention out, tokens [B, S, nqc d] */
    nx_tensor_ref o, h, m;              /* [B, S, H]: o projection, h, mlp out (all-reduced with tp 2) */
    nx_tensor_ref o_part, m_part;       /* tp 2: this core's partial sums */
} layer_bufs;

/* This core's weights, read in place: with tp 2 its w_qkv heads through
 * qkv's weight view (three column blocks of the full rows), its w_gate and
 * w_up columns as a [H, I / 2] block with rows I apart, its w_o and w_down
 * rows (contiguous). */
static void shard_weights(layer_run *L, layer_bufs *w) {
    const nx_layer_params *p = &L->p;
    const uint64_t d = p->d, H = p->H, N = (p->nq + 2 * p->nkv) * d, Nc = (L->nqc + 2 * L->nkvc) * d, es = L->es;
    const uint64_t c = p->tp == 2 ? L->core : 0;
    const uint64_t sq[2] = {H, Nc}, sgu[2] = {H, L->Ic}, so[2] = {L->nqc * d, H}, sd[2] = {L->Ic, H};
    w->wo = at(&L->a[3], c * L->nqc * d * H * es, 2, so);
    w->wd = at(&L->a[7], c * L->Ic * H * es, 2, sd);
    w->wqkv = at(&L->a[2], 0, 2, sq);
    w->wg = at(&L->a[5], c * L->Ic * es, 2, sgu);
    w->wu = at(&L->a[6], c * L->Ic * es, 2, sgu);
    /* q heads, k heads, v heads: each core's contiguous block of each */
    w->views.qkv = (nx_qkv_wview){N, {c * L->nqc * d, p->nq * d + c * L->nkvc * d, (p->nq + p->nkv) * d + c * L->nkvc * d}};
    w->views.gu_ld = p->inter;
}

static int run_qkv(layer_run *L, layer_bufs *w, nx_error *err) {
    const nx_layer_params *p = &L->p;
    nx_attrs a;
    nx_attrs_init(&a);
    int rc = set_int(&a, "n_q_heads", (int64_t)L->nqc, err) != 0 || set_int(&a, "n_kv_heads", (int64_t)L->nkvc, err) != 0 ||
             set_int(&a, "head_dim", (int64_t)p->d, err) != 0 || set_num(&a, "eps", p->eps, err) != 0 ||
             set_str(&a, "layout", "heads", err) != 0 || set_str(&a, "norm", "rms", err) != 0 ||
             nx_attrs_set(&a, "rope", &(nx_value){.kind = NX_VAL_BOOL, .i = 1}, err) != 0
                 ? -1
                 : 0;
    if (rc == 0) {
        const nx_tensor_ref args[8] = {L->a[0], w->wqkv, L->a[1], L->a[8], L->a[9], w->q, w->kn, w->vn};
        rc = sub_viewed(L, qkv_in_place, &w->views, "qkv+norm+rope", args, 5, 8, &a, err);
    }
    nx_attrs_free(&a);
    return rc;
}

/* Prefill (S > 8): one flash attention over [cache ; new], its rows
 * stored in the token layout, and the cache writes
 * (kernels/layer/layer_prefill.c). */
static int run_prefill(layer_run *L, layer_bufs *w, nx_error *err) {
    if (nx_layer_prefill_attention(L, &w->q, &w->kn, &w->vn, &w->att, err) != 0) return -1;
    return sync(L, err);
}

/* The attention of the S new tokens: decode (S <= 8) one attention_decode
 * step, the cache writes fused; prefill run_prefill. */
static int run_attention(layer_run *L, layer_bufs *w, nx_error *err) {
    const nx_layer_params *p = &L->p;
    if (p->S > NX_LAYER_STEP) return run_prefill(L, w, err);
    const uint64_t B = p->B, S = p->S, d = p->d, es = L->es;
    const nx_tensor_ref *kc_in = &L->a[10], *vc_in = &L->a[11], *kc = &L->a[14], *vc = &L->a[15];
    nx_tensor_ref ao;
    const uint64_t sq[4] = {B, L->nqc, S, d};
    if (scratch(L, "layer.attn_heads", L->dt, 4, sq, &ao, err) != 0) return -1;
    nx_attrs none;
    nx_attrs_init(&none);
    int rc = 0;
    if (p->tp == 1) {
        const nx_tensor_ref args[9] = {w->q, *kc_in, *vc_in, w->kn, w->vn, L->a[12], ao, *kc, *vc};
        rc = sub(L, nx_attention_decode, "attention_decode", args, 6, 9, &none, err) != 0 || sync(L, err) != 0 ? -1 : 0;
    } else {
        /* this core's kv heads of the caches copied through (unless the
         * results are the operands' tensors: the rules' aliases, nothing to
         * copy), then updated in place one row at a time (its kv heads of a
         * row are contiguous) */
        const uint64_t run = L->nkvc * p->S_max * d, off = L->core * run * es;
        nx_kctx_set_region(L->k, "moves");
        for (uint64_t b = 0; kc->hbm_offset != kc_in->hbm_offset && b < B && rc == 0; b++) {
            const uint64_t o = (b * p->nkv * p->S_max * d) * es + off;
            if (nx_layer_copy_flat(L->k, L->dt, kc->hbm_offset + o, kc_in->hbm_offset + o, run, err) != 0 ||
                nx_layer_copy_flat(L->k, L->dt, vc->hbm_offset + o, vc_in->hbm_offset + o, run, err) != 0)
                rc = -1;
        }
        const uint64_t q1[4] = {1, L->nqc, S, d}, k1[4] = {1, L->nkvc, S, d}, c1[4] = {1, L->nkvc, p->S_max, d}, l1[1] = {1};
        for (uint64_t b = 0; b < B && rc == 0; b++) {
            const uint64_t co = ((b * p->nkv + L->core * L->nkvc) * p->S_max * d) * es;
            const nx_tensor_ref kb = at(kc, co, 4, c1), vb = at(vc, co, 4, c1);
            const nx_tensor_ref args[9] = {at(&w->q, b * L->nqc * S * d * es, 4, q1), kb, vb,
                                           at(&w->kn, b * L->nkvc * S * d * es, 4, k1),
                                           at(&w->vn, b * L->nkvc * S * d * es, 4, k1), at(&L->a[12], b * 4, 1, l1),
                                           at(&ao, b * L->nqc * S * d * es, 4, q1), kb, vb};
            rc = sub(L, nx_attention_decode, "attention_decode", args, 6, 9, &none, err);
        }
    }
    nx_attrs_free(&none);
    if (rc != 0) return -1;
    uint64_t r0, r1;
    nx_kctx_rows(L->k, B, &r0, &r1);
    nx_kctx_set_region(L->k, "moves");
    if (nx_layer_heads_to_tokens(L, ao.hbm_offset, L->nqc, S, w->att.hbm_offset, L->nqc * d, 0, 0, r0, r1, err) != 0) return -1;
    return sync(L, err);
}

/* The o projection [T, nqc d] x w_o's rows of this core's heads. It is
 * qkv's projection with neither norm nor rope (the weight-streaming decode
 * plan, the PE-bound prefill plan), w_o's H columns read as heads: d' the
 * largest power of two up to 512 dividing H with at least 3 heads, as
 * n_q_heads = H / d' - 2 and one kv head (H = (nq' + 2) d'). An H with no
 * such d' of 32 or more takes the matmul composite. */
static int run_oproj(layer_run *L, layer_bufs *w, nx_error *err) {
    const uint64_t H = L->p.H, d = L->p.d;
    const nx_tensor_ref *o_dst = L->p.tp == 2 ? &w->o_part : &w->o;
    uint64_t dd = 512;
    while (dd >= 32 && (H % dd != 0 || H / dd < 3)) dd /= 2;
    nx_attrs a;
    nx_attrs_init(&a);
    int rc;
    if (dd >= 32) {
        const uint64_t a3[3] = {L->p.B, L->p.S, L->nqc * d};
        rc = set_int(&a, "n_q_heads", (int64_t)(H / dd - 2), err) != 0 || set_int(&a, "n_kv_heads", 1, err) != 0 ||
                     set_int(&a, "head_dim", (int64_t)dd, err) != 0 || set_str(&a, "norm", "none", err) != 0
                 ? -1
                 : 0;
        const nx_tensor_ref args[3] = {at(&w->att, 0, 3, a3), w->wo, *o_dst};
        if (rc == 0) rc = sub(L, nx_qkv, "o-proj", args, 2, 3, &a, err);
    } else {
        const uint64_t a2[2] = {L->T, L->nqc * d}, o2[2] = {L->T, H};
        const nx_tensor_ref args[3] = {at(&w->att, 0, 2, a2), w->wo, at(o_dst, 0, 2, o2)};
        rc = sub(L, nx_matmul, "o-proj", args, 2, 3, &a, err);
    }
    nx_attrs_free(&a);
    return rc;
}

static int all_reduce(layer_run *L, nx_coll *c, const nx_tensor_ref *part, const nx_tensor_ref *sum, nx_error *err) {
    const uint64_t H = L->p.H;
    nx_coll_buf src = nx_coll_hbm(L->dt, part->hbm_offset, L->T, H, H, 0);
    nx_coll_buf dst = nx_coll_hbm(L->dt, sum->hbm_offset, L->T, H, H, 1);
    nx_kctx_set_region(L->k, "all-reduce");
    if (nx_coll_all_reduce(L->k, c, &src, &dst, err) != 0) return nx_fail_prefix(err, "decoder_layer (all-reduce)");
    return 0;
}

static int run_layer(layer_run *L, nx_error *err) {
    const nx_layer_params *p = &L->p;
    const uint64_t B = p->B, S = p->S, H = p->H, d = p->d;
    const int tp2 = p->tp == 2;
    layer_bufs w;
    memset(&w, 0, sizeof w);
    const uint64_t sq[4] = {B, L->nqc, S, d}, skv[4] = {B, L->nkvc, S, d}, sat[3] = {B, S, L->nqc * d}, sh[3] = {B, S, H};
    /* shared tensors first (both cores declare them alike), then this core's */
    if (scratch(L, "layer.o", L->dt, 3, sh, &w.o, err) != 0 || scratch(L, "layer.mlp", L->dt, 3, sh, &w.m, err) != 0) return -1;
    nx_kctx_set_solo(L->k, tp2);
    if (scratch(L, "layer.h", L->dt, 3, sh, &w.h, err) != 0 || scratch(L, "layer.q", L->dt, 4, sq, &w.q, err) != 0 ||
        scratch(L, "layer.k_new", L->dt, 4, skv, &w.kn, err) != 0 || scratch(L, "layer.v_new", L->dt, 4, skv, &w.vn, err) != 0 ||
        scratch(L, "layer.attn", L->dt, 3, sat, &w.att, err) != 0)
        return -1;
    if (tp2 && (scratch(L, "layer.o_part", L->dt, 3, sh, &w.o_part, err) != 0 ||
                scratch(L, "layer.mlp_part", L->dt, 3, sh, &w.m_part, err) != 0))
        return -1;
    shard_weights(L, &w);
    if (run_qkv(L, &w, err) != 0 || sync(L, err) != 0 || run_attention(L, &w, err) != 0) return -1;
    if (run_oproj(L, &w, err) != 0 || sync(L, err) != 0) return -1;
    nx_coll coll;
    nx_kctx_set_solo(L->k, 0);
    if (tp2 && (nx_coll_init(L->k, &coll, "layer.allreduce", nx_min_u64(L->T, 128) * H * L->es, err) != 0 ||
                all_reduce(L, &coll, &w.o_part, &w.o, err) != 0))
        return -1;
    /* the mlp: h = x + o (its residual), rmsnorm(h) gamma_mlp, this core's I */
    nx_kctx_set_solo(L->k, tp2);
    nx_attrs a;
    nx_attrs_init(&a);
    int rc = set_str(&a, "norm", "rms", err) != 0 || set_num(&a, "eps", p->eps, err) != 0 ||
                 nx_attrs_set(&a, "residual", &(nx_value){.kind = NX_VAL_BOOL, .i = 1}, err) != 0
             ? -1
             : 0;
    if (rc == 0) {
        const nx_tensor_ref args[8] = {w.o, w.wg, w.wu, w.wd, L->a[4], L->a[0], tp2 ? w.m_part : w.m, w.h};
        rc = sub_viewed(L, mlp_in_place, &w.views, "mlp+norm+residual", args, 6, 8, &a, err);
    }
    nx_attrs_free(&a);
    if (rc != 0 || sync(L, err) != 0) return -1;
    nx_kctx_set_solo(L->k, 0);
    if (tp2 && all_reduce(L, &coll, &w.m_part, &w.m, err) != 0) return -1;
    /* out = h + mlp, the rows split over the cores */
    uint64_t r0, r1;
    nx_kctx_rows(L->k, L->T, &r0, &r1);
    if (nx_kctx_release_all(L->k, err) != 0) return -1;
    nx_kctx_set_region(L->k, "residual");
    return nx_layer_residual(L, L->a[13].hbm_offset, w.h.hbm_offset, w.m.hbm_offset, r0, r1, err);
}

int nx_decoder_layer(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_norm_tensor in[NX_KERNEL_MAX_ARGS];
    for (uint32_t i = 0; i < call->n_inputs && i < NX_KERNEL_MAX_ARGS; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    layer_run L;
    memset(&L, 0, sizeof L);
    if (nx_layer_read(call->attrs, in, call->n_inputs, &L.p, err) != 0) return -1;
    if (call->nargs != NX_LAYER_OPERANDS + 3)
        return nx_fail(err, "decoder_layer: expects 3 results (out, k_cache, v_cache), got %u", call->nargs - call->n_inputs);
    if (L.p.tp == 2 && nx_kctx_num_programs(k) != 2)
        return nx_fail(err, "attribute tp: 2 needs the VNC grid's 2 cores, the grid has %u", nx_kctx_num_programs(k));
    L.k = k, L.a = call->args, L.dt = L.p.dtype, L.es = nx_dtype_size(L.p.dtype), L.T = L.p.B * L.p.S;
    L.core = nx_kctx_core(k);
    L.nqc = L.p.nq / L.p.tp, L.nkvc = L.p.nkv / L.p.tp, L.Ic = L.p.inter / L.p.tp;
    /* attention_decode keeps its V tiles and cache copy on queues of their
     * own (its lanes), which a context takes only before its first
     * instruction: so here, for every sub-kernel */
    if (nx_kctx_set_lanes(k, NX_DECODE_LANES, err) != 0) return -1;
    /* prefill: the whole PSUM into the context's pool first, so that the
     * sub-kernels' PSUM tiles are all placed by bank from the pool (the
     * builder's bump would otherwise resume at wherever the largest earlier
     * sub-kernel ended, off a bank boundary: flash attention's tiles end
     * mid-bank and the o projection then found no whole bank) */
    if (L.p.S > NX_LAYER_STEP) {
        nx_tile all;
        const nx_geometry *g = nx_kctx_geometry(k);
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "psum_pool", NX_DT_FP32, 128, g->psum_partition_bytes / 4, &all, err) != 0 ||
            nx_kctx_release(k, &all, err) != 0)
            return -1;
    }
    const int rc = run_layer(&L, err);
    nx_kctx_set_solo(k, 0);
    return rc;
}
