/* matmul: ONNX MatMul on the PE, tiled as the NKI matmul tutorial tiles it
 * (aws-neuron-sdk general/nki/tutorials/matrix_multiplication.rst: K on the
 * partitions, stationary [K <= 128, M <= 128], moving [K, N <= 512], PSUM
 * accumulation over the K tiles, and its blocked versions: several M tiles
 * share every moving B tile), for any M, K, N (ragged last tiles) and
 * broadcast batches. A arrives [M, K] (rows of K), so each row tile is
 * loaded once and transposed on the PE into K-major tiles (an exact bit
 * move).
 *
 * Blocks of MB row tiles (MB up to the PSUM banks left beside two for the
 * transposes: 6 on trn2, fewer when their transposed tiles do not fit SBUF):
 *   prep  per row tile: DMA A rows -> at (2 rotating); 4 PE transposes into
 *         one PSUM bank, one copy (DVE / ACT alternately) -> aT[m], the
 *         block's K-major tiles [K, MB x 128];
 *   per N tile of up to 512: per K tile: DMA B piece [128, 512] -> bt (8
 *         rotating), then for each row tile m of the block
 *         load_stationary aT[m][k], multiply_moving into PSUM bank m
 *         (accumulate); then each bank is copied (ACT / DVE) in the result
 *         dtype and stored.
 * So every B tile is loaded once per block (B is read M / (128 MB) times,
 * not M / 128), and the load_stationary of each multiply runs in the PE's
 * background. When two blocks' aT fit SBUF, the next block's prep is
 * emitted after the first N tile of the current one, so its loads and
 * transposes overlap the current block's multiplies. */
#include "matmul_tiles.h"

#include <string.h>

/* B load number j of this program: step j of (block, N tile, K tile). */
static int mm_load_b(mm_state *s, uint64_t j, nx_error *err) {
    const nx_matmul_params *p = s->p;
    const uint64_t kt = j % s->nk, nt = (j / s->nk) % s->ntiles, w = s->lo + j / (s->nk * s->ntiles);
    const uint64_t bi = w / s->blocks, n0 = nt * s->TN;
    const uint32_t kw = mm_clip32(s->Kp - kt * s->TK, s->TK), nw = mm_clip32(p->N - n0, s->TN);
    const uint64_t bbase = s->B->hbm_offset + nx_matmul_b_index(p, bi) * p->K * p->N * s->es;
    nx_operand bd = nx_rows_view(&s->bt[j % MM_BBUFS], s->dt, kw, 0, nw);
    nx_operand bs = nx_ap_hbm_rows(s->dt, bbase + ((s->k0 + kt * s->TK) * p->N + n0) * s->es, kw, (int32_t)p->N, nw);
    return nx_rows_load(&s->r, &bd, &bs, err);
}

/* N tile nt of the block (row tiles [mt0, mt0 + nm) of batch bi, in aT[buf]). */
static int mm_ntile(mm_state *s, uint64_t bi, uint64_t mt0, uint32_t nm, uint32_t buf, uint64_t nt, mm_prep *next,
                    nx_error *err) {
    const nx_matmul_params *p = s->p;
    const uint64_t cbase = s->C->hbm_offset + bi * p->M * p->N * s->es;
    const uint64_t n0 = nt * s->TN;
    const uint32_t nw = mm_clip32(p->N - n0, s->TN);
    for (uint64_t kt = 0; kt < s->nk; kt++) {
        const uint32_t kw = mm_clip32(s->Kp - kt * s->TK, s->TK);
        const uint64_t j = s->bsteps++;
        /* B loads run MM_BBUFS - 2 steps ahead, across N tiles and blocks,
         * so a store waiting for its copy never holds up the next loads */
        while (s->bloaded < s->bsteps_total && s->bloaded <= j + MM_BBUFS - 2)
            if (mm_load_b(s, s->bloaded++, err) != 0) return -1;
        nx_operand bd = nx_rows_view(&s->bt[j % MM_BBUFS], s->dt, kw, 0, nw);
        for (uint32_t m = 0; m < nm; m++) {
            const uint32_t mw = mm_clip32(p->M - (mt0 + m) * s->TM, s->TM);
            nx_operand acc = nx_rows_view(&s->acc[m], NX_DT_FP32, mw, 0, nw);
            nx_operand st = nx_rows_view(&s->aT[buf][m], s->dt, kw, kt * s->TM, mw);
            if (nx_kctx_load_stationary(s->k, &st, err) != 0 || nx_kctx_multiply_moving(s->k, &acc, &bd, kt > 0, err) != 0)
                return -1;
        }
        if (nx_matmul_prep_unit(s, next, err) != 0) return -1;
    }
    for (uint32_t m = 0; m < nm; m++, s->outs++) {
        const uint64_t m0 = (mt0 + m) * s->TM;
        const uint32_t mw = mm_clip32(p->M - m0, s->TM);
        nx_operand acc = nx_rows_view(&s->acc[m], NX_DT_FP32, mw, 0, nw);
        if (s->tile_out) {
            if (s->tile_out(s, bi, m0, mw, n0, nw, &acc, err) != 0) return -1;
            continue;
        }
        nx_operand od = nx_rows_view(&s->ot[s->outs % MM_OBUFS], s->dt, mw, 0, nw);
        nx_operand cd = nx_ap_hbm_rows(s->dt, cbase + (m0 * p->N + n0) * s->es, mw, (int32_t)p->N, nw);
        if (nx_kctx_tensor_copy(s->k, s->outs % 2 ? NX_ENG_DVE : NX_ENG_ACT, &od, &acc, err) != 0 ||
            nx_rows_store(&s->r, &cd, &od, err) != 0)
            return -1;
    }
    return s->ntile_end ? s->ntile_end(s, err) : 0;
}

/* Row tiles per block and aT buffers that fit SBUF (0: none fits). */
static uint32_t mm_plan(const mm_state *s, uint64_t sbuf, uint32_t banks, uint32_t *abufs, uint64_t *need1) {
    const uint64_t fixed = MM_ABUFS * nx_rows_tile_bytes(s->Kp, s->dt) + MM_BBUFS * nx_rows_tile_bytes(s->TN, s->dt) +
                           MM_OBUFS * nx_rows_tile_bytes(s->TN, s->dt);
    const uint64_t per = nx_rows_tile_bytes(s->nk * s->TM, s->dt);
    uint32_t mb_max = banks > 2 ? banks - 2 : 1;
    if (mb_max > MM_MB_MAX) mb_max = MM_MB_MAX;
    if (mb_max > s->mtiles) mb_max = (uint32_t)s->mtiles;
    *need1 = fixed + per;
    for (uint32_t bufs = 2; bufs >= 1; bufs--)
        for (uint32_t mb = mb_max; mb >= 1; mb--)
            if (fixed + (uint64_t)bufs * mb * per <= sbuf && (bufs == 1 || mb >= (mb_max + 1) / 2)) {
                *abufs = bufs;
                return mb;
            }
    return 0;
}

int nx_matmul_setup(mm_state *s, nx_kctx *k, const nx_matmul_params *p, const nx_tensor_ref *A, const nx_tensor_ref *B,
                    const nx_tensor_ref *C, uint64_t k0, uint64_t Kp, uint64_t reserve, nx_error *err) {
    memset(s, 0, sizeof *s);
    s->k = k;
    s->p = p;
    s->A = A;
    s->B = B;
    s->C = C;
    s->k0 = k0;
    s->Kp = Kp;
    nx_rows_init(&s->r, k);
    const nx_geometry *g = nx_kctx_geometry(k);
    s->TK = g->pe_rows < s->r.partitions ? g->pe_rows : s->r.partitions;
    s->TM = g->pe_cols;
    s->TN = g->pe_moving_free_max;
    if ((uint64_t)s->TN * 4 > g->psum_bank_bytes) s->TN = (uint32_t)(g->psum_bank_bytes / 4);
    s->dt = p->dtype;
    s->es = nx_dtype_size(p->dtype);
    s->nk = (Kp + s->TK - 1) / s->TK;
    s->mtiles = (p->M + s->TM - 1) / s->TM;
    s->ntiles = (p->N + s->TN - 1) / s->TN;
    uint64_t need1;
    const uint32_t banks = (uint32_t)(g->psum_partition_bytes / g->psum_bank_bytes);
    const uint64_t sbuf = s->r.sbuf_bytes > reserve ? s->r.sbuf_bytes - reserve : 0;
    s->MB = mm_plan(s, sbuf, banks, &s->abufs, &need1);
    if (s->MB == 0)
        return nx_fail(err, "operand 0 (%s): K = %llu needs %llu bytes per partition (a row block, its %llu transposed "
                            "tiles and the B and result buffers), SBUF has %llu",
                       A->name, (unsigned long long)Kp, (unsigned long long)need1, (unsigned long long)s->nk,
                       (unsigned long long)sbuf);
    for (uint32_t i = 0; i < MM_ABUFS; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "a_rows", s->dt, s->TM, Kp, &s->at[i], err) != 0) return -1;
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "a_t_psum", NX_DT_FP32, s->TK, (uint64_t)MM_TP_GROUP * s->TM, &s->tp[i], err) != 0)
            return -1;
    for (uint32_t b = 0; b < s->abufs; b++)
        for (uint32_t m = 0; m < s->MB; m++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "a_t", s->dt, s->TK, s->nk * s->TM, &s->aT[b][m], err) != 0) return -1;
    for (uint32_t i = 0; i < MM_BBUFS; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "b_tile", s->dt, s->TK, s->TN, &s->bt[i], err) != 0) return -1;
    for (uint32_t i = 0; i < MM_OBUFS; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "c_tile", s->dt, s->TM, s->TN, &s->ot[i], err) != 0) return -1;
    for (uint32_t m = 0; m < s->MB; m++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "acc", NX_DT_FP32, s->TM, s->TN, &s->acc[m], err) != 0) return -1;
    s->blocks = (s->mtiles + s->MB - 1) / s->MB;
    return 0;
}

int nx_matmul_blocks(mm_state *s, uint64_t lo, uint64_t hi, nx_error *err) {
    const uint64_t blocks = s->blocks;
    s->lo = lo;
    s->bsteps_total = (hi - lo) * s->ntiles * s->nk;
    mm_prep pr = {0};
    for (uint64_t w = lo; w < hi; w++) {
        const uint64_t bi = w / blocks, mt0 = (w % blocks) * s->MB;
        const uint32_t nm = mm_clip32(s->mtiles - mt0, s->MB), buf = s->abufs == 2 ? (uint32_t)((w - lo) % 2) : 0;
        /* this block's prep (begun during the previous block, or now) is done first */
        if (!pr.active && (s->abufs == 1 || w == lo) && nx_matmul_prep_begin(s, &pr, bi, mt0, nm, buf, err) != 0)
            return -1;
        if (nx_matmul_prep_flush(s, &pr, err) != 0) return -1;
        /* the next block's prep interleaves with this block's multiplies */
        if (s->abufs == 2 && w + 1 < hi) {
            const uint64_t b2 = (w + 1) / blocks, m2 = ((w + 1) % blocks) * s->MB;
            if (nx_matmul_prep_begin(s, &pr, b2, m2, mm_clip32(s->mtiles - m2, s->MB), 1 - buf, err) != 0) return -1;
        }
        for (uint64_t nt = 0; nt < s->ntiles; nt++)
            if (mm_ntile(s, bi, mt0, nm, buf, nt, &pr, err) != 0) return -1;
    }
    return 0;
}

int nx_matmul(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs != 2 || call->nargs != 3)
        return nx_fail(err, "matmul: expects 2 operands and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    nx_norm_tensor in[2];
    for (uint32_t i = 0; i < 2; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_matmul_params p;
    if (nx_matmul_read(in, 2, &p, err) != 0) return -1;
    mm_state s;
    if (nx_matmul_setup(&s, k, &p, &call->args[0], &call->args[1], &call->args[2], 0, p.K, 0, err) != 0) return -1;
    uint64_t lo, hi;
    nx_kctx_rows(k, p.batches * s.blocks, &lo, &hi);
    return nx_matmul_blocks(&s, lo, hi, err);
}
