/* conv2d_pbp_fb01_io01_01bf_kernel_experimental_1: the dense convolution
 * with img (C, N, H, W), filt (C/G, O, KH, KW) -> out (OH, OW, N, O), by
 * #3's emitter (conv2d_pbp.c and its parts).
 *
 * Follows the public AWS Neuron kernel of the same name
 * (neuronxcc.nki._private_kernels.conv): transpose the image and the
 * filter into #3's layouts through HBM, run #3, transpose the result back.
 * This one goes past it: wherever #3's plan allows (a resident image, one
 * resident ungrouped filter chunk, a PE-transposed store), #3's emitter
 * reads the image and the filter as they lie and writes the (OH, OW, N, O)
 * result itself (nx_conv_pbp_takes_cnhw / _iohw / _01bf; the same bits,
 * without the HBM round trips). Otherwise the tensor goes through HBM
 * scratch. That kernel moves one [<=128 x <=128] tile per (channel, row)
 * through a PE transpose with one load and one store each; this one moves
 * whole [C tile x rows] blocks:
 *
 *   img  (C, N, H, W)     -> (H, C, W, N)      np.transpose(x, (2, 0, 3, 1))
 *   filt (C/G, O, KH, KW) -> (KH, C/G, KW, O)  the same permutation
 *
 * by one PE emitter for x (A, B, R, E) -> (R, A, E, B): a tile of up to
 * 128 A x 128 R is loaded with A on partitions (runs of R x E elements),
 * each (e, b) slice [A, R] is PE-transposed into PSUM (bit-exact: dst dtype
 * = src dtype), DVE and ACT in turn copy each PSUM bank of slices into an
 * SBUF tile with R on partitions laid out (A, E, B), and one store writes
 * runs of A x E x B elements (the whole output row when A and E are whole).
 * Tiles are double-buffered: the next tile's load is issued before this
 * tile's transposes. The result (OH, OW, O, N) -> (OH, OW, N, O) is a
 * batched transpose done by the transpose leaves (kernels/transpose/transpose.h):
 * tiled_dve_transpose_10 for small [O, N] matrices (whole matrices per
 * partition), tiled_pf_transpose otherwise. With N = 1 the two result
 * layouts are the same bytes, so #3 writes the output directly. */
#include <stdio.h>
#include <string.h>

#include "conv2d_pbp.h"
#include "kernels/conv/conv_ap.h"
#include "kernels/transpose/transpose.h"
#include "isa/intmath.h"

#define PERM_BUFS 2
/* The PE route needs this many rows per transpose to beat the reorder
 * (measured on the bench's ResNet shapes: 14 rows still win by ~10%, 28
 * about break even; the PSUM -> SBUF copies of that route use only R
 * partitions). */
#define PERM_PE_MIN_ROWS 8u

/* x (A, B, R, E) at `src` -> y (R, A, E, B) at `dst`, both HBM byte offsets. */
typedef struct perm_job {
    uint64_t a0, r0, b0, e0;
    uint32_t pa, pr, bc, ec;
} perm_job;

typedef struct perm_state {
    nx_kctx *k;
    nx_dtype dt;
    uint64_t es, A, B, R, E, src, dst;
    uint32_t PA, PR, BC, EC; /* tile extents */
    uint32_t pa_pad, blocks; /* PSUM block stride, blocks per bank */
    nx_tile in[PERM_BUFS], out[PERM_BUFS], ps[2];
    uint32_t lanes_in, lanes_out, next_in, next_out;
    uint64_t n_ps;
} perm_state;

static int spread(perm_state *s, int out, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    uint32_t rows = dst->partition_count, pieces = out ? s->lanes_out : s->lanes_in;
    if (pieces > rows) pieces = rows;
    uint32_t base = rows / pieces, extra = rows % pieces, r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t n = base + (i < extra);
        nx_operand d = nx_operand_rows(dst, r0, n), sr = nx_operand_rows(src, r0, n);
        uint32_t lane = out ? s->lanes_in + s->next_out++ % s->lanes_out : s->next_in++ % s->lanes_in;
        if (nx_kctx_dma_on(s->k, lane, &d, &sr, err) != 0) return -1;
        r0 += n;
    }
    return 0;
}

static int perm_load(perm_state *s, const perm_job *j, const nx_tile *t, nx_error *err) {
    int32_t ds[3] = {(int32_t)(j->pr * j->ec), (int32_t)j->ec, 1};
    uint32_t c[3] = {j->bc, j->pr, j->ec};
    nx_operand dst = nx_conv_tile_view(t, s->dt, 0, j->pa, 0, 3, ds, c);
    int32_t ss[3] = {(int32_t)(s->R * s->E), (int32_t)s->E, 1};
    uint64_t el = ((j->a0 * s->B + j->b0) * s->R + j->r0) * s->E + j->e0;
    nx_operand src = nx_conv_hbm_view(s->dt, s->src + el * s->es, j->pa, (int64_t)(s->B * s->R * s->E), 3, ss, c);
    return spread(s, 0, &dst, &src, err);
}

static int perm_compute(perm_state *s, const perm_job *j, const nx_tile *in, const nx_tile *out, nx_error *err) {
    uint32_t nq = j->ec * j->bc; /* slices q = (e, b), in out-tile order */
    for (uint32_t q0 = 0; q0 < nq; q0 += s->blocks) {
        uint32_t n = (uint32_t)nx_min_u64(s->blocks, nq - q0);
        const nx_tile *ps = &s->ps[s->n_ps % 2];
        nx_engine copier = s->n_ps++ % 2 ? NX_ENG_DVE : NX_ENG_ACT;
        for (uint32_t q = q0; q < q0 + n; q++) {
            uint32_t e = q / j->bc, b = q % j->bc;
            int32_t st = (int32_t)j->ec;
            uint32_t ct = j->pr;
            nx_operand src = nx_conv_tile_view(in, s->dt, 0, j->pa, (uint64_t)b * j->pr * j->ec + e, 1, &st, &ct);
            int32_t one = 1;
            uint32_t pa = j->pa;
            nx_operand dst = nx_conv_tile_view(ps, s->dt, 0, j->pr, (uint64_t)(q - q0) * s->pa_pad, 1, &one, &pa);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
        }
        int32_t ds[2] = {(int32_t)(j->ec * j->bc), 1};
        uint32_t dc[2] = {j->pa, n};
        int32_t ss[2] = {1, (int32_t)s->pa_pad};
        nx_operand dst = nx_conv_tile_view(out, s->dt, 0, j->pr, q0, 2, ds, dc);
        nx_operand src = nx_conv_tile_view(ps, s->dt, 0, j->pr, 0, 2, ss, dc);
        if (nx_kctx_tensor_copy(s->k, copier, &dst, &src, err) != 0) return -1;
    }
    return 0;
}

static int perm_store(perm_state *s, const perm_job *j, const nx_tile *t, nx_error *err) {
    int32_t ss[3] = {(int32_t)(j->ec * j->bc), (int32_t)j->bc, 1};
    uint32_t c[3] = {j->pa, j->ec, j->bc};
    nx_operand src = nx_conv_tile_view(t, s->dt, 0, j->pr, 0, 3, ss, c);
    int32_t hs[3] = {(int32_t)(s->E * s->B), (int32_t)s->B, 1};
    uint64_t el = ((j->r0 * s->A + j->a0) * s->E + j->e0) * s->B + j->b0;
    nx_operand dst = nx_conv_hbm_view(s->dt, s->dst + el * s->es, j->pr, (int64_t)(s->A * s->E * s->B), 3, hs, c);
    return spread(s, 1, &dst, &src, err);
}

/* The bit-exact PE type of a float dtype's size: the PE moves bits when
 * dst dtype = src dtype, and every conv dtype is a PE input type. */
static int emit_perm_2031(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t R, uint64_t E, uint64_t src,
                          uint64_t dst, nx_error *err) {
    const nx_geometry *geo = nx_kctx_geometry(k);
    perm_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    s.dt = dt;
    s.es = nx_dtype_size(dt);
    s.A = A;
    s.B = B;
    s.R = R;
    s.E = E;
    s.src = src;
    s.dst = dst;
    uint32_t pe = geo->pe_rows < geo->pe_cols ? geo->pe_rows : geo->pe_cols;
    if (geo->partitions < pe) pe = geo->partitions;
    s.PA = (uint32_t)nx_min_u64(A, pe);
    s.PR = (uint32_t)nx_min_u64(R, pe);
    s.BC = (uint32_t)B;
    s.EC = (uint32_t)E;
    /* PERM_BUFS in + out tiles within the SBUF (less 1/16 for alignment);
     * keep whole B and E (the store's runs) as long as possible */
    uint64_t budget = (geo->sbuf_partition_bytes - geo->sbuf_partition_bytes / 16) / PERM_BUFS;
    uint64_t fmax = geo->sbuf_free_elems_max;
    for (;;) {
        uint64_t in = (uint64_t)s.BC * s.PR * s.EC, out = (uint64_t)s.PA * s.EC * s.BC;
        int in_ok = in <= fmax, out_ok = out <= fmax, sum_ok = (in + out) * s.es <= budget;
        if (in_ok && out_ok && sum_ok) break;
        if ((!in_ok || (!sum_ok && in >= out)) && s.PR > 1) s.PR = (s.PR + 1) / 2;
        else if ((!out_ok || !sum_ok) && s.PA > 1) s.PA = (s.PA + 1) / 2;
        else if (s.BC > 1) s.BC = (s.BC + 1) / 2;
        else if (s.EC > 1) s.EC = (s.EC + 1) / 2;
        else return nx_fail(err, "conv layout transform: no tile fits the SBUF");
    }
    s.pa_pad = nx_pow2_ceil_u32(s.PA);
    uint64_t block = (uint64_t)s.pa_pad * s.es;
    if (block > geo->psum_bank_bytes || geo->psum_bank_bytes % block)
        return nx_fail(err, "conv layout transform: a %u-element PSUM block does not tile a %llu-byte bank", s.pa_pad,
                       (unsigned long long)geo->psum_bank_bytes);
    s.blocks = (uint32_t)(geo->psum_bank_bytes / block);
    uint32_t lanes = nx_kctx_lanes(k);
    s.lanes_in = lanes > 1 ? lanes / 2 : 1;
    s.lanes_out = lanes > 1 ? lanes - s.lanes_in : 1;

    uint64_t na = nx_cdiv_u64(A, s.PA), nr = nx_cdiv_u64(R, s.PR), nb = nx_cdiv_u64(B, s.BC), ne = nx_cdiv_u64(E, s.EC);
    uint64_t total = na * nr * nb * ne;
    int rc = -1;
    uint32_t ni = 0, no = 0, np = 0;
    uint32_t bufs = total > 1 ? PERM_BUFS : 1;
    for (; ni < bufs; ni++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "conv_perm_in", dt, s.PA, (uint64_t)s.BC * s.PR * s.EC, &s.in[ni], err))
            goto done;
    for (; no < bufs; no++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "conv_perm_out", dt, s.PR, (uint64_t)s.PA * s.EC * s.BC, &s.out[no], err))
            goto done;
    for (; np < 2; np++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "conv_perm_psum", dt, s.PR, geo->psum_bank_bytes / s.es, &s.ps[np], err))
            goto done;
    perm_job prev = {0}, cur;
    uint64_t i = 0;
    /* rows outermost: the convolution that reads the result waits per row
     * band for the stores of its rows only, so it overlaps the transform */
    for (uint64_t ir = 0; ir < nr; ir++)
        for (uint64_t ia = 0; ia < na; ia++)
            for (uint64_t ib = 0; ib < nb; ib++)
                for (uint64_t ie = 0; ie < ne; ie++, i++) {
                    cur.a0 = ia * s.PA;
                    cur.r0 = ir * s.PR;
                    cur.b0 = ib * s.BC;
                    cur.e0 = ie * s.EC;
                    cur.pa = (uint32_t)nx_min_u64(s.PA, A - cur.a0);
                    cur.pr = (uint32_t)nx_min_u64(s.PR, R - cur.r0);
                    cur.bc = (uint32_t)nx_min_u64(s.BC, B - cur.b0);
                    cur.ec = (uint32_t)nx_min_u64(s.EC, E - cur.e0);
                    /* pipeline: load tile i, then transpose and store tile i - 1 */
                    if (perm_load(&s, &cur, &s.in[i % bufs], err) != 0) goto done;
                    if (i > 0) {
                        if (perm_compute(&s, &prev, &s.in[(i - 1) % bufs], &s.out[(i - 1) % bufs], err) != 0 ||
                            perm_store(&s, &prev, &s.out[(i - 1) % bufs], err) != 0)
                            goto done;
                    }
                    prev = cur;
                }
    if (perm_compute(&s, &prev, &s.in[(i - 1) % bufs], &s.out[(i - 1) % bufs], err) != 0 ||
        perm_store(&s, &prev, &s.out[(i - 1) % bufs], err) != 0)
        goto done;
    rc = 0;
done:;
    nx_error rerr;
    while (np > 0) nx_kctx_release(k, &s.ps[--np], &rerr);
    while (no > 0) nx_kctx_release(k, &s.out[--no], &rerr);
    while (ni > 0) nx_kctx_release(k, &s.in[--ni], &rerr);
    return rc;
}

/* The same permutation with A on the partitions on both sides, for when
 * the store's runs of E x B elements are long (filters: KW x C_out): a
 * tile [a, (b, r, e)] is loaded with runs of R x E, one copy on DVE or ACT
 * (in turn) reorders each partition's free data to (r, e, b), and the store
 * writes runs of E x B. No PE work. */
static int emit_perm_2031_free(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t R, uint64_t E,
                               uint64_t src, uint64_t dst, nx_error *err) {
    const nx_geometry *geo = nx_kctx_geometry(k);
    uint64_t es = nx_dtype_size(dt), fmax = geo->sbuf_free_elems_max;
    uint64_t budget = (geo->sbuf_partition_bytes - geo->sbuf_partition_bytes / 16) / (2 * PERM_BUFS);
    uint32_t PA = (uint32_t)nx_min_u64(A, geo->partitions);
    uint64_t RC = R; /* rows per tile */
    while (RC > 1 && (B * RC * E > fmax || B * RC * E * es > budget)) RC = (RC + 1) / 2;
    if (B * RC * E > fmax || B * RC * E * es > budget)
        return nx_fail(err, "conv layout transform: a %llu x %llu slice does not fit the SBUF",
                       (unsigned long long)B, (unsigned long long)E);
    uint32_t lanes = nx_kctx_lanes(k), half = lanes > 1 ? lanes / 2 : 1, next = 0;
    nx_tile in[PERM_BUFS], out[PERM_BUFS];
    uint32_t ni = 0, no = 0;
    int rc = -1;
    for (; ni < PERM_BUFS; ni++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "conv_perm_in", dt, PA, B * RC * E, &in[ni], err)) goto done;
    for (; no < PERM_BUFS; no++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "conv_perm_out", dt, PA, B * RC * E, &out[no], err)) goto done;
    uint64_t i = 0;
    for (uint64_t r0 = 0; r0 < R; r0 += RC)
        for (uint64_t a0 = 0; a0 < A; a0 += PA, i++) {
            uint32_t pa = (uint32_t)nx_min_u64(PA, A - a0), rr = (uint32_t)nx_min_u64(RC, R - r0);
            const nx_tile *ti = &in[i % PERM_BUFS], *to = &out[i % PERM_BUFS];
            int32_t ls[2] = {(int32_t)(rr * E), 1};
            uint32_t lc[2] = {(uint32_t)B, (uint32_t)(rr * E)};
            nx_operand ld = nx_conv_tile_view(ti, dt, 0, pa, 0, 2, ls, lc);
            int32_t hs[2] = {(int32_t)(R * E), 1};
            nx_operand lsrc = nx_conv_hbm_view(dt, src + ((a0 * B) * R * E + r0 * E) * es, pa, (int64_t)(B * R * E), 2, hs, lc);
            perm_state sp;
            memset(&sp, 0, sizeof sp);
            sp.k = k;
            sp.lanes_in = half;
            sp.lanes_out = lanes - half ? lanes - half : 1;
            sp.next_in = next;
            sp.next_out = next;
            if (spread(&sp, 0, &ld, &lsrc, err) != 0) goto done;
            /* (b, r, e) -> (r, e, b): read with strides (r: E, e: 1, b: rr E) */
            int32_t cs[3] = {(int32_t)E, 1, (int32_t)(rr * E)};
            uint32_t cc[3] = {rr, (uint32_t)E, (uint32_t)B};
            nx_operand csrc = nx_conv_tile_view(ti, dt, 0, pa, 0, 3, cs, cc);
            int32_t one = 1;
            uint32_t all = (uint32_t)(B * rr * E);
            nx_operand cdst = nx_conv_tile_view(to, dt, 0, pa, 0, 1, &one, &all);
            if (nx_kctx_tensor_copy(k, i % 2 ? NX_ENG_DVE : NX_ENG_ACT, &cdst, &csrc, err) != 0) goto done;
            /* one store per row r: all pa partitions' runs of E x B there
             * are one contiguous range, so the stores' HBM footprints are
             * disjoint and they run on their lanes in parallel (transfers
             * split by partitions would interleave across the rows and be
             * ordered one after the other) */
            for (uint32_t r = 0; r < rr; r++) {
                int32_t one = 1;
                uint32_t run = (uint32_t)(E * B);
                nx_operand st = nx_conv_tile_view(to, dt, 0, pa, (uint64_t)r * E * B, 1, &one, &run);
                nx_operand sdst = nx_conv_hbm_view(dt, dst + ((r0 + r) * A * E * B + a0 * E * B) * es, pa, (int64_t)(E * B), 1,
                                        &one, &run);
                uint32_t lane = half + (next + r) % (lanes - half ? lanes - half : 1);
                if (nx_kctx_dma_on(k, lanes > 1 ? lane : 0, &sdst, &st, err) != 0) goto done;
            }
            next = sp.next_in;
        }
    rc = 0;
done:;
    nx_error rerr;
    while (no > 0) nx_kctx_release(k, &out[--no], &rerr);
    while (ni > 0) nx_kctx_release(k, &in[--ni], &rerr);
    return rc;
}

/* (A, B, R, E) -> (R, A, E, B) by the cheaper route: the PE transposes
 * (store runs of A x E x B) when the free-dim reorder's store runs of E x B
 * are short and there are enough rows R for the transposes to be efficient
 * (a transpose costs at least 64 PE cycles and moves R elements per
 * column), else the free-dim reorder (no PE work at all). A store run of
 * half the machine's dma.efficient_bytes_per_partition (docs/parts/
 * machine.md) is efficient enough to reorder in the free dims. */
static int emit_perm(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t R, uint64_t E, uint64_t src,
                     uint64_t dst, nx_error *err) {
    uint64_t free_run = nx_kctx_machine(k)->dma_efficient_bytes_per_partition / 2;
    if (E * B * nx_dtype_size(dt) < free_run && R >= PERM_PE_MIN_ROWS)
        return emit_perm_2031(k, dt, A, B, R, E, src, dst, err);
    return emit_perm_2031_free(k, dt, A, B, R, E, src, dst, err);
}

/* (OH, OW, O, N) at `src` -> (OH, OW, N, O) at out->hbm_offset, by a
 * transpose leaf with permutation [0, 1, 3, 2]. */
static int transpose_result(nx_kctx *k, const nx_conv_pbp *pb, uint64_t src, const nx_tensor_ref *out,
                            nx_error *err) {
    nx_tensor_ref in;
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "%s", "conv_out_01fb");
    in.dtype = pb->dtype;
    in.ndims = 4;
    in.shape[0] = pb->OH;
    in.shape[1] = pb->OW;
    in.shape[2] = pb->O;
    in.shape[3] = pb->N;
    in.hbm_offset = src;
    static const int64_t perm[4] = {0, 1, 3, 2};
    /* whole [O, N] matrices per partition when they are small: the DVE leaf
     * moves them with contiguous transfers; large ones through the PE */
    return nx_transpose_tensors_sized(k, &in, out, perm, 4, pb->O * pb->N * nx_dtype_size(pb->dtype), err);
}

static int scratch(nx_kctx *k, const char *name, nx_dtype dt, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                   uint64_t *off, nx_error *err) {
    const uint64_t shape[4] = {a, b, c, d};
    return nx_kctx_scratch(k, name, dt, 4, shape, off, err);
}

int conv2d_pbp_fb01_io01_01bf_kernel_experimental_1(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    static const char leaf[] = "conv2d_pbp_fb01_io01_01bf_kernel_experimental_1";
    nx_conv_pbp pb;
    if (nx_conv_pbp_from_call(leaf, "fb01_io01->01bf", call, &pb, err) != 0) return -1;
    uint64_t Cg = pb.C / (uint64_t)pb.p.feature_group_count;
    uint64_t img = pb.img, filt = pb.filt;
    /* a resident image is read in place (C on the partitions) and reordered
     * on the chip; otherwise it goes through an (H, C, W, N) scratch copy */
    pb.img_cnhw = nx_conv_pbp_takes_cnhw(&pb, nx_kctx_machine(k), nx_kctx_lanes(k));
    /* likewise the filter when one resident ungrouped chunk holds it */
    pb.filt_iohw = nx_conv_pbp_takes_iohw(&pb, nx_kctx_machine(k), nx_kctx_lanes(k));
    if ((!pb.img_cnhw && scratch(k, "conv2d_pbp_fb01.img_0f1b", pb.dtype, pb.H, pb.C, pb.W, pb.N, &pb.img, err) != 0) ||
        (!pb.filt_iohw && scratch(k, "conv2d_pbp_fb01.filt_0i1o", pb.dtype, pb.KH, Cg, pb.KW, pb.O, &pb.filt, err) != 0))
        return nx_fail_prefix(err, "%s", leaf);
    /* with N = 1 (or O = 1) the result layouts 01fb and 01bf are the same bytes */
    int direct = pb.N == 1 || pb.O == 1;
    /* or the transposed store writes each pixel's [N, O] block itself */
    if (!direct) direct = pb.out_01bf = nx_conv_pbp_takes_01bf(&pb, nx_kctx_machine(k), nx_kctx_lanes(k));
    if (!direct && scratch(k, "conv2d_pbp_fb01.out_01fb", pb.dtype, pb.OH, pb.OW, pb.O, pb.N, &pb.out, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    if ((!pb.filt_iohw && emit_perm(k, pb.dtype, Cg, pb.O, pb.KH, pb.KW, filt, pb.filt, err) != 0) ||
        (!pb.img_cnhw && emit_perm(k, pb.dtype, pb.C, pb.N, pb.H, pb.W, img, pb.img, err) != 0))
        return nx_fail_prefix(err, "%s", leaf);
    if (nx_conv_pbp_emit(k, &pb, err) != 0) return -1;
    if (direct) return 0;
    return transpose_result(k, &pb, pb.out, &call->args[2], err) != 0 ? nx_fail_prefix(err, "%s", leaf) : 0;
}
