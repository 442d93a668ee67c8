/* The expert passes on mlp's decode piece (kernels/mlp/mlp_decode.h): per
 * work item (pass s, block b of this core's share of I, md_item's order) a
 * GATE_UP job (K = H, the block's columns of I, the gate/up rows of pass
 * s's expert from run-time offsets) writing h^T into an aT region of its
 * own, then a DOWN job (K = the block's rows of w_down, n = H) adding
 * coef[:, s] y into acc. The piece streams the weights a ring ahead of the
 * PE across job boundaries, so the next item's (and the next expert's)
 * weights load under this one's compute. An unused pass (expert -1)
 * gathers no rows and gets coef 0 (the piece's contract for -1). */
#include "decode_impl.h"

#include "isa/intmath.h"
#include "kernels/mlp/mlp_decode.h"

void md_item(const md_plan *pl, uint64_t w, uint32_t *s, uint32_t *b) {
    const uint64_t full = pl->S / MD_GROUP, span = (uint64_t)MD_GROUP * pl->nblk, g = w / span;
    const uint64_t gs = g < full ? MD_GROUP : pl->S - full * MD_GROUP, r = w - g * span;
    *b = (uint32_t)(r / gs);
    *s = (uint32_t)(g * MD_GROUP + r % gs);
}

int md_passes(md_core *c, nx_error *err) {
    md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    const uint32_t T = (uint32_t)p->T, P = pl->P;
    const uint64_t es = pl->es, W = (uint64_t)pl->S * pl->nblk, span = (uint64_t)MD_GROUP * pl->nblk;
    if (W == 0) return 0;
    nx_kctx *k = c->k;
    /* the piece takes every PSUM bank: ours (routing, x^T) goes back */
    if (nx_kctx_release(k, &c->psum, err) != 0) return -1;
    nx_mlp_dec_cfg cfg = {.dtype = p->dtype, .T = T, .act = p->act};
    nx_mlp_dec *d;
    if (nx_mlp_dec_new(k, &cfg, &d, err) != 0) return -1;
    int rc = -1;
    /* h^T of two items in flight: item w at tiles (w % 2) nic + its first */
    nx_tile aT;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "moe_aT", p->dtype, P, nx_mlp_dec_tile_elems(2ull * pl->nic, T), &aT, err) != 0)
        goto out;
    const nx_tensor_ref *wg = &c->call->args[1], *wu = &c->call->args[2], *wd = &c->call->args[3];
    /* the operands a queued job points at live until its compute is
     * emitted (the next submit): one set per item of the last four */
    nx_operand og[4], od[4], coef[4];
    for (uint64_t w = 0; w < W; w++) {
        if (pl->runtime && w % span == 0) {
            const uint32_t g = (uint32_t)(w / span);
            for (uint32_t s = (g + (w == 0 ? 0 : 1)) * MD_GROUP; s < pl->S && s < (g + 2) * MD_GROUP; s++)
                if (md_offsets(c, s, err) != 0) goto out;
        }
        uint32_t s, b;
        md_item(pl, w, &s, &b);
        const uint64_t t0 = (uint64_t)b * MD_NIT, i0 = pl->ilo + t0 * P;
        const uint64_t bw = b + 1 == pl->nblk ? pl->ihi - i0 : (uint64_t)MD_NIT * P;
        const uint64_t a0 = (w % 2) * pl->nic + t0;
        const uint32_t set = s % MD_OFFSETS;
        const uint32_t q = (uint32_t)(w % 4);
        if (pl->runtime) {
            og[q] = md_view(&c->offg[set], NX_DT_INT32, 0, P, 0, 1);
            od[q] = md_view(&c->offd[set], NX_DT_INT32, 0, P, t0, 1);
        }
        coef[q] = md_view(&c->coef, NX_DT_FP32, 0, T, s, 1);
        nx_mlp_dec_job gu = {.kind = NX_MLP_DEC_GATE_UP, .K = p->H, .n = bw, .xT = &c->xt, .aT = &aT, .a0 = a0, .T = T};
        nx_mlp_dec_job dn = {.kind = NX_MLP_DEC_DOWN, .K = bw, .n = p->H, .aT = &aT, .a0 = a0, .out_acc = &c->acc,
                             .acc0 = 0, .T = T};
        dn.scale = &coef[q];
        if (pl->runtime) {
            gu.w0 = (nx_mlp_dec_weight){.base = wg->hbm_offset + i0 * es, .ld = p->inter, .rows = &og[q], .bound = p->E * p->H};
            gu.w1 = (nx_mlp_dec_weight){.base = wu->hbm_offset + i0 * es, .ld = p->inter, .rows = &og[q], .bound = p->E * p->H};
            dn.w0 = (nx_mlp_dec_weight){.base = wd->hbm_offset, .ld = p->H, .rows = &od[q], .bound = p->E * p->inter};
        } else {
            const uint64_t r = (uint64_t)s * p->H;
            gu.w0 = (nx_mlp_dec_weight){.base = wg->hbm_offset + (r * p->inter + i0) * es, .ld = p->inter};
            gu.w1 = (nx_mlp_dec_weight){.base = wu->hbm_offset + (r * p->inter + i0) * es, .ld = p->inter};
            dn.w0 = (nx_mlp_dec_weight){.base = wd->hbm_offset + ((uint64_t)s * p->inter + i0) * p->H * es, .ld = p->H};
        }
        if (nx_mlp_dec_submit(d, &gu, err) != 0 || nx_mlp_dec_submit(d, &dn, err) != 0) goto out;
    }
    if (nx_mlp_dec_flush(d, err) != 0) goto out;
    rc = 0;
out:
    nx_mlp_dec_free(d, rc == 0 ? err : NULL);
    return rc;
}
