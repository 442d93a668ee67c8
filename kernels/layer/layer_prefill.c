/* decoder_layer's prefill attention (S > 8; kernels/layer/layer_impl.h):
 * one flash attention over [cache ; new] per core (kernels/attention/flash.h
 * nx_attention_flash_cached: the cached columns masked at run time by L_b,
 * the new keys causal among themselves, their K and V read from qkv's
 * results), then the caches: this core's kv heads copied through to the
 * results and the S new rows of each scattered to L_b .. L_b + S - 1 (the
 * offsets from the run-time lengths, the head's S_max rows the scatter's
 * bound, so a length with L_b + S > S_max faults before anything is kept).
 * docs/parts/decoder-layer.md. */
#include <stdio.h>

#include "layer_impl.h"

#include "isa/intmath.h"
#include "kernels/attention/flash.h"
#include "kernels/norms/rows.h"

/* The kv heads this core writes: tp 1 a share of the B nkv (row, head)
 * pairs, tp 2 its nkvc heads of every row. Pair i is (b, g) with g the
 * global head. */
static void my_heads(const layer_run *L, uint64_t *lo, uint64_t *hi, uint64_t *per_b) {
    if (L->p.tp == 2) {
        *lo = 0, *hi = L->p.B * L->nkvc, *per_b = L->nkvc;
        return;
    }
    nx_kctx_rows(L->k, L->p.B * L->p.nkv, lo, hi);
    *per_b = L->p.nkv;
}

/* The cache copy-through and the new rows' scatter. kn, vn [B, nkvc, S, d]. */
static int write_caches(layer_run *L, uint64_t kn, uint64_t vn, nx_error *err) {
    nx_kctx *k = L->k;
    const nx_layer_params *p = &L->p;
    const uint64_t S = p->S, d = p->d, es = L->es, Sm = p->S_max, g0 = p->tp == 2 ? L->core * L->nkvc : 0;
    /* m new rows a partition (m d contiguous elements at L_b + p m: the
     * largest divisor of S with m d of at most 4 KiB, where a DMA saturates),
     * so a transfer moves long runs, not one d-element row a partition */
    uint64_t m = 1;
    for (uint64_t x = 1; x <= S && x * d * es <= 4096; x++)
        if (S % x == 0) m = x;
    const uint64_t parts = S / m;
    const uint32_t P = 128, nch = (uint32_t)nx_cdiv_u64(parts, P), B = (uint32_t)p->B;
    uint64_t lo, hi, per_b;
    my_heads(L, &lo, &hi, &per_b);
    if (lo >= hi) return 0;
    const uint64_t kc_in = L->a[10].hbm_offset, vc_in = L->a[11].hbm_offset, kc = L->a[14].hbm_offset,
                   vc = L->a[15].hbm_offset;
    /* the results are the operands' tensors (the rules' aliases): nothing
     * to copy through, the new rows are written in place */
    for (uint64_t i = lo; kc != kc_in && i < hi; i++) {
        const uint64_t b = i / per_b, g = g0 + i % per_b, o = (b * p->nkv + g) * Sm * d * es;
        if (nx_layer_copy_flat(k, L->dt, kc + o, kc_in + o, Sm * d, err) != 0 ||
            nx_layer_copy_flat(k, L->dt, vc + o, vc_in + o, Sm * d, err) != 0)
            return -1;
    }
    /* offsets: column b nch + ch holds L_b + (128 ch + partition) m (int32) */
    nx_tile lt, wt;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "append_lengths", NX_DT_FP32, P, 2 * (uint64_t)B + 1, &lt, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "append_rows", NX_DT_INT32, P, (uint64_t)B * nch, &wt, err) != 0)
        return -1;
    nx_rows r;
    nx_rows_init(&r, k);
    nx_operand li = nx_rows_view(&lt, NX_DT_INT32, P, B, B), lf = nx_rows_view(&lt, NX_DT_FP32, P, 0, B);
    nx_operand pp = nx_rows_view(&lt, NX_DT_FP32, P, 2 * (uint64_t)B, 1);
    nx_operand src = nx_ap_hbm_rows(NX_DT_INT32, L->a[12].hbm_offset, P, 0, B);
    const int32_t zero = 0;
    const uint32_t one = 1;
    nx_operand pat = nx_pattern(0, (int32_t)m, P, 1, &zero, &one);
    pat.dtype = NX_DT_INT32;
    if (nx_rows_load(&r, &li, &src, err) != 0 || nx_kctx_tensor_copy(k, NX_ENG_DVE, &lf, &li, err) != 0 ||
        nx_kctx_iota(k, &pp, &pat, err) != 0)
        return -1;
    const uint64_t b0 = lo / per_b, b1 = (hi - 1) / per_b + 1;
    for (uint64_t b = b0; b < b1; b++)
        for (uint32_t ch = 0; ch < nch; ch++) {
            nx_operand w = nx_rows_view(&wt, NX_DT_INT32, P, b * nch + ch, 1);
            nx_operand lb = nx_rows_view(&lt, NX_DT_FP32, P, b, 1), c0 = nx_imm((double)(ch * P * m), NX_DT_FP32);
            if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &w, &pp, NX_ALU_ADD, &lb, NX_ALU_ADD, &c0, err) != 0) return -1;
        }
    uint32_t lane = 0;
    for (uint64_t i = lo; i < hi; i++) {
        const uint64_t b = i / per_b, gl = i % per_b, g = g0 + gl, head = (b * p->nkv + g) * Sm * d * es;
        for (uint32_t ch = 0; ch < nch; ch++) {
            const uint32_t n = (uint32_t)nx_min_u64(P, parts - (uint64_t)ch * P);
            nx_operand w = nx_rows_view(&wt, NX_DT_INT32, n, b * nch + ch, 1);
            for (uint32_t kv = 0; kv < 2; kv++) {
                const uint64_t from = (kv ? vn : kn) + ((b * L->nkvc + gl) * S + (uint64_t)ch * P * m) * d * es;
                nx_insn dm = nx_insn_make(NX_OP_DMA_COPY);
                /* partition p: cache rows offset .. offset + m - 1 (the
                 * offsets count d-element rows; the bound keeps the last
                 * one inside the head's S_max rows) */
                dm.op[0] = nx_ap_hbm_rows(L->dt, (kv ? vc : kc) + head, n, (int32_t)d, (uint32_t)(m * d));
                dm.op[1] = nx_ap_hbm_rows(L->dt, from, n, (int32_t)(m * d), (uint32_t)(m * d));
                dm.op[2] = w;
                dm.iparam[1] = (int32_t)(Sm - m + 1);
                dm.flags = NX_FLAG_SCATTER;
                if (nx_kctx_dma_insn(k, r.store_lane + lane++ % r.engines, &dm, err) != 0) return -1;
            }
        }
    }
    return 0;
}

/* The cached key columns the trace reads: every L_b <= S_max - S (the
 * columns past L_b masked at run time). Rounding them up to whole key
 * blocks of 512 (loads of 4 d contiguous elements a partition) measured
 * slower on the shrunk prefill (the extra masked columns' softmax work):
 * docs/parts/decoder-layer.md. */
static uint64_t cached_columns(const nx_layer_params *p) { return p->S_max - p->S; }

/* The heads layout ao [B, nqc, S, d] into the tokens att [B, S, nqc d],
 * this core's token rows: per 128 tokens one transfer of every head (each
 * token a partition, its heads' d-element runs), cut by rows over the DMA
 * engines. Whole token rows a transfer: a transfer per head would write
 * boxes of rows that overlap the other heads' (the layer orders
 * overlapping writes one after another). */
static int rows_to_tokens(layer_run *L, uint64_t ao, uint64_t att, nx_error *err) {
    const uint64_t B = L->p.B, S = L->p.S, d = L->p.d, es = L->es, W = L->nqc * d;
    uint64_t r0, r1;
    nx_kctx_rows(L->k, B * S, &r0, &r1);
    nx_rows r;
    nx_rows_init(&r, L->k);
    for (uint64_t x = r0; x < r1;) {
        const uint64_t b = x / S, t = x % S, n = nx_min_u64(nx_min_u64(128, S - t), r1 - x);
        const int32_t ss[2] = {(int32_t)(S * d), 1};
        const uint32_t cn[2] = {(uint32_t)L->nqc, (uint32_t)d};
        nx_operand s = nx_ap(NX_OPK_HBM, L->dt, 0, (uint32_t)n, (int32_t)d, ao + (b * L->nqc * S + t) * d * es, 2, ss, cn);
        nx_operand o = nx_ap_hbm_rows(L->dt, att + x * W * es, (uint32_t)n, (int32_t)W, (uint32_t)W);
        if (nx_kctx_dma_split(L->k, r.store_lane, r.engines, &o, &s, err) != 0) return -1;
        x += n;
    }
    return 0;
}

int nx_layer_prefill_attention(layer_run *L, const nx_tensor_ref *q, const nx_tensor_ref *kn, const nx_tensor_ref *vn,
                               const nx_tensor_ref *att, nx_error *err) {
    const nx_layer_params *p = &L->p;
    const uint64_t d = p->d, es = L->es, Sm = p->S_max;
    /* tp 2 stores the rows in the token layout (its scratch is the core's
     * own); tp 1's cores share every token row (their units are heads, and
     * a store writes a box of rows), so the heads layout and a move */
    const int direct = p->tp == 2;
    nx_tensor_ref ao = *att;
    if (!direct) {
        const uint64_t sq[4] = {p->B, L->nqc, p->S, d};
        uint64_t off;
        if (nx_kctx_scratch(L->k, "layer.attn_heads", L->dt, 4, sq, &off, err) != 0) return nx_fail_prefix(err, "decoder_layer");
        ao = *q;
        snprintf(ao.name, sizeof ao.name, "layer.attn_heads");
        ao.hbm_offset = off;
    }
    const nx_tensor_ref args[4] = {*q, *kn, *vn, ao};
    const uint64_t first = (p->tp == 2 ? L->core * L->nkvc : 0) * Sm * d * es;
    const nx_attention_cache cache = {.k = L->a[10].hbm_offset + first, .v = L->a[11].hbm_offset + first,
                                      .b_pitch = p->nkv * Sm * d, .S_max = Sm, .lengths = L->a[12].hbm_offset,
                                      .Sc = cached_columns(p), .out_pitch = direct ? L->nqc * d : 0};
    nx_attrs none;
    nx_attrs_init(&none);
    nx_kernel_call c = {.args = args, .nargs = 4, .n_inputs = 3, .additional_args = &none, .attrs = &none};
    /* the cache writes first: their DMAs run under the attention's start
     * (the two touch different bytes; the attention reads the input caches) */
    if (nx_kctx_release_all(L->k, err) != 0) return -1;
    nx_kctx_set_region(L->k, "cache writes");
    int rc = write_caches(L, kn->hbm_offset, vn->hbm_offset, err);
    if (rc != 0 || nx_kctx_release_all(L->k, err) != 0) {
        nx_attrs_free(&none);
        return rc != 0 ? nx_fail_prefix(err, "decoder_layer (cache writes)") : -1;
    }
    nx_kctx_set_region(L->k, "attention");
    rc = nx_attention_flash_cached(L->k, &c, &cache, err);
    nx_attrs_free(&none);
    if (rc != 0) return nx_fail_prefix(err, "decoder_layer (attention)");
    if (nx_kctx_release_all(L->k, err) != 0) return -1;
    if (!direct) {
        nx_kctx_set_region(L->k, NULL);
        if (nx_kctx_num_programs(L->k) > 1 && nx_kctx_barrier(L->k, err) != 0) return -1;
        nx_kctx_set_region(L->k, "moves");
        if (rows_to_tokens(L, ao.hbm_offset, att->hbm_offset, err) != 0) return -1;
    }
    nx_kctx_set_region(L->k, NULL);
    return nx_kctx_release_all(L->k, err);
}
