/* The matmul composite's K-major A tiles (kernels/matmul/matmul_tiles.h):
 * each row tile of A loaded once, transposed on the PE four 128 x 128
 * pieces to a PSUM bank and copied out by VectorE or ScalarE, one group at
 * a time so that the caller interleaves them with its multiplies. */
#include "matmul_tiles.h"

static int mm_load_rows(mm_state *s, const mm_prep *pr, uint32_t m, nx_error *err) {
    const nx_matmul_params *p = s->p;
    const uint64_t abase = s->A->hbm_offset + nx_matmul_a_index(p, pr->bi) * p->M * p->K * s->es;
    const uint64_t m0 = (pr->mt0 + m) * s->TM;
    const uint32_t mw = mm_clip32(p->M - m0, s->TM);
    nx_operand ad = nx_rows_view(&s->at[(pr->at0 + m) % MM_ABUFS], s->dt, mw, 0, s->Kp);
    nx_operand as = nx_ap_hbm_rows(s->dt, abase + (m0 * p->K + s->k0) * s->es, mw, (int32_t)p->K, (uint32_t)s->Kp);
    return nx_rows_load(&s->r, &ad, &as, err);
}

int nx_matmul_prep_begin(mm_state *s, mm_prep *pr, uint64_t bi, uint64_t mt0, uint32_t nm, uint32_t buf, nx_error *err) {
    *pr = (mm_prep){.active = 1, .bi = bi, .mt0 = mt0, .nm = nm, .buf = buf, .at0 = s->loads};
    s->loads += nm;
    return mm_load_rows(s, pr, 0, err);
}

int nx_matmul_prep_unit(mm_state *s, mm_prep *pr, nx_error *err) {
    if (!pr->active) return 0;
    const nx_matmul_params *p = s->p;
    const uint32_t m = pr->m, mw = mm_clip32(p->M - (pr->mt0 + m) * s->TM, s->TM);
    const uint64_t kt = pr->kt;
    if (kt == 0 && m + 1 < pr->nm && mm_load_rows(s, pr, m + 1, err) != 0) return -1;
    const nx_tile *at = &s->at[(pr->at0 + m) % MM_ABUFS];
    const uint32_t kw = mm_clip32(s->Kp - kt * s->TK, s->TK);
    uint32_t g = 0; /* full K tiles share a bank; a ragged one goes alone */
    while (g < MM_TP_GROUP && kt + g < s->nk && mm_clip32(s->Kp - (kt + g) * s->TK, s->TK) == kw) g++;
    const nx_tile *tp = &s->tp[s->trs++ % 2];
    const int32_t one = 1, st2[2] = {(int32_t)s->TM, 1};
    const uint32_t c2[2] = {g, mw};
    for (uint32_t j = 0; j < g; j++) {
        nx_operand src = nx_tile_view(at, s->dt, 0, mw, (kt + j) * s->TK, 1, &one, &kw);
        nx_operand pt = nx_tile_view(tp, NX_DT_FP32, 0, kw, (uint64_t)j * s->TM, 1, &one, &mw);
        if (nx_kctx_transpose(s->k, NX_ENG_PE, &pt, &src, err) != 0) return -1;
    }
    nx_operand from = nx_tile_view(tp, NX_DT_FP32, 0, kw, 0, 2, st2, c2);
    nx_operand to = nx_tile_view(&s->aT[pr->buf][m], s->dt, 0, kw, kt * s->TM, 2, st2, c2);
    if (nx_kctx_tensor_copy(s->k, s->trs % 2 ? NX_ENG_DVE : NX_ENG_ACT, &to, &from, err) != 0) return -1;
    pr->kt += g;
    if (pr->kt >= s->nk) {
        pr->kt = 0;
        if (++pr->m >= pr->nm) pr->active = 0;
    }
    return 0;
}

int nx_matmul_prep_flush(mm_state *s, mm_prep *pr, nx_error *err) {
    while (pr->active)
        if (nx_matmul_prep_unit(s, pr, err) != 0) return -1;
    return 0;
}

