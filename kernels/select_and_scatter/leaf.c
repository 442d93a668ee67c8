/* select_and_scatter_kernel: XLA SelectAndScatter (select = GE, scatter =
 * add) on NCHW operands, the max-pool gradient.
 *
 * Follows the public NKI vision kernel of the same name (aws-neuron
 * nki-samples, reference/vision.py): (n, c) planes on partitions, the window
 * maximum by a reduction over a strided window view, an equality mask, the
 * first maximum by a priority, and the scatter as shifted multiply-adds of
 * the source into the output planes. That kernel fixes a 3x3 window, stride
 * 2, padding 1, C = 64 and an even N (two images on 128 partitions) and
 * goes through HBM for its partial sums. Past it:
 *  - any window, stride and padding (negative crops) over H and W, windows
 *    of 1 over N and C with any stride and padding (source planes map to
 *    operand planes; planes no window reaches are init_value), any N, C, H,
 *    W, every float dtype, any init_value;
 *  - planes that do not fit SBUF are cut into bands of owned rows (and
 *    columns) that recompute the windows at their edges, so no partial sums
 *    leave the chip; bands of the same geometry from any planes share a tile,
 *    so few planes still fill the partitions;
 *  - padding is never selectable: the padded copy holds the dtype's lowest
 *    value there, and the first-maximum selection runs per window position
 *    only over the windows where that position is real;
 *  - sums follow XLA's order (the source's row-major order) exactly, so the
 *    result is bit-exact (also the sign of zeros for init_value +0).
 *
 * Per tile (up to 128 bands of one class on partitions), engine by engine:
 *   SP    loads the operand rows (real part only, contiguous) and the source
 *   ACT   copies them into the padded layout, fills the padding with -inf
 *   DVE   mx  = max over each window (tensor_reduce over [wr, wc, i, j])
 *   POOL  eq  = (window element == mx) for all windows and positions at once
 *   DVE   sel = the first window position k with eq, by selects in
 *               descending k, each over the windows where k is real
 *   POOL  for k descending: out[k's positions] (+)= source * (sel == k);
 *         the first position of each stride-residue class writes, the
 *         others add (descending k is the source's row-major order)
 *   ACT   copies the owned rows out (adding +0: -0 sums become +0, as XLA's)
 *   SP    stores them
 * Tiles are software-pipelined over three SBUF slots: loads and padding two
 * tiles ahead, the max and mask of the next tile before the selection of
 * this one (so DVE and POOL overlap), stores one tile behind. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

static int check_call(const nx_kernel_call *call, nx_sas_params *prm, uint64_t *src_shape, nx_error *err) {
    uint32_t outs = call->nargs >= call->n_inputs ? call->nargs - call->n_inputs : 0;
    if (call->nargs != 3 || call->n_inputs != 2)
        return nx_fail(err, "select_and_scatter_kernel: expects 2 inputs (operand, source) and 1 output, got %u input%s "
                       "and %u output%s",
                       call->n_inputs, call->n_inputs == 1 ? "" : "s", outs, outs == 1 ? "" : "s");
    const nx_tensor_ref *x = &call->args[0], *src = &call->args[1], *y = &call->args[2];
    if (x->ndims != 4)
        return nx_fail(err, "operand 0 (%s): select_and_scatter_kernel takes a rank-4 NCHW operand, got %u dims", x->name,
                       x->ndims);
    if (!nx_dtype_is_float(x->dtype))
        return nx_fail(err, "operand 0 (%s): dtype %s: select_and_scatter_kernel takes float dtypes (fp32, bf16, fp16, "
                       "fp8_e4m3, fp8_e5m2)",
                       x->name, nx_dtype_name(x->dtype));
    if (src->dtype != x->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from operand 0 (%s)'s %s", src->name,
                       nx_dtype_name(src->dtype), x->name, nx_dtype_name(x->dtype));
    if (y->dtype != x->dtype || y->ndims != 4 || memcmp(y->shape, x->shape, sizeof x->shape[0] * 4) != 0)
        return nx_fail(err, "result (%s): must have operand 0 (%s)'s shape and dtype", y->name, x->name);
    /* the seed gives this leaf no builder arguments: its attributes are the op's */
    if (nx_sas_params_read(call->attrs ? call->attrs : call->additional_args, 4, prm, err) != 0) return -1;
    if (nx_sas_init_check(prm, x->dtype, err) != 0) return -1;
    for (int d = 0; d < 2; d++)
        if (prm->window[d] != 1)
            return nx_fail(err, "attribute window_dimensions: dim %d (%s) has a window of %lld: select_and_scatter_kernel "
                           "windows H and W only (windows of 1 over N and C)",
                           d, d ? "C" : "N", (long long)prm->window[d]);
    if (nx_sas_source_shape(prm, x->shape, src_shape, err) != 0) return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    if (src->ndims != 4 || memcmp(src->shape, src_shape, 4 * sizeof *src_shape) != 0)
        return nx_fail(err, "operand 1 (%s): shape must be the window counts [%llu,%llu,%llu,%llu]", src->name,
                       (unsigned long long)src_shape[0], (unsigned long long)src_shape[1],
                       (unsigned long long)src_shape[2], (unsigned long long)src_shape[3]);
    for (int d = 2; d < 4; d++)
        if (x->shape[d] > INT32_MAX / 4 || prm->window[d] > 65536 || prm->stride[d] > INT32_MAX / 4 ||
            llabs(prm->lo[d]) > INT32_MAX / 4)
            return nx_fail(err, "operand 0 (%s): dim %d beyond the access patterns' 32-bit strides", x->name, d);
    return 0;
}

int select_and_scatter_kernel(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    sas_state s;
    memset(&s, 0, sizeof s);
    uint64_t src_shape[4];
    if (check_call(call, &s.prm, src_shape, err) != 0) return -1;
    const nx_tensor_ref *x = &call->args[0];
    s.k = k;
    s.dt = x->dtype;
    s.es = nx_dtype_size(x->dtype);
    s.H = x->shape[2];
    s.W = x->shape[3];
    s.SH = src_shape[2];
    s.SW = src_shape[3];
    s.x_off = x->hbm_offset;
    s.s_off = call->args[1].hbm_offset;
    s.o_off = call->args[2].hbm_offset;
    s.wh = s.prm.window[2];
    s.ww = s.prm.window[3];
    s.sh = s.prm.stride[2];
    s.sw = s.prm.stride[3];
    s.K = s.wh * s.ww;
    s.dh = (sas_dim){(int64_t)s.H, s.wh, s.sh, s.prm.lo[2], (int64_t)s.SH};
    s.dw = (sas_dim){(int64_t)s.W, s.ww, s.sw, s.prm.lo[3], (int64_t)s.SW};
    s.init_zero = s.prm.init == 0 && !signbit(s.prm.init);
    s.p = nx_kctx_geometry(k)->partitions;
    s.lanes = nx_kctx_lanes(k);
    s.load_lanes = s.lanes > 1 ? s.lanes / 2 : 1;
    if (s.K > 65536)
        return nx_fail(err, "attribute window_dimensions: a window of %lld positions exceeds 65536", (long long)s.K);

    int rc = -1;
    uint32_t nslots = 0, nb = 0, have_konst = 0;
    if (sas_plan_units(&s, x->shape, src_shape, err) != 0) goto done;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "sas_const", s.dt, s.p, 3, &s.konst, err) != 0) goto done;
    have_konst = 1;
    static const char *const names[B_COUNT] = {"sas_in", "sas_pad_out", "sas_src", "sas_max_part",
                                               "sas_mask", "sas_sel", "sas_acc", "sas_out"};
    for (; nslots < SAS_SLOTS; nslots++)
        for (nb = 0; nb < B_COUNT; nb++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, names[nb], sas_buf_dtype(&s, nb), s.p, s.cap[nb], &s.buf[nslots][nb], err) != 0)
                goto done;
    nb = 0;
    {
        /* the constants: 0, the padding fill (the dtype's lowest value;
         * -inf where the dtype has it) and init_value */
        nx_operand c0 = sas_v2(&s.konst, s.p, 0, 1, 1, 1, 1), c1 = sas_v2(&s.konst, s.p, 1, 1, 1, 1, 1);
        nx_operand c2 = sas_v2(&s.konst, s.p, 2, 1, 1, 1, 1);
        if (nx_kctx_memset(k, NX_ENG_POOL, &c0, 0.0, err) != 0 || nx_kctx_memset(k, NX_ENG_POOL, &c1, -INFINITY, err) != 0 ||
            nx_kctx_memset(k, NX_ENG_POOL, &c2, s.prm.init, err) != 0)
            goto done;
    }
    if (sas_fill_unhit_planes(&s, x->shape, src_shape, err) != 0) goto done;
    /* the software pipeline (see the file's comment): step st loads tile
     * st + 2 and pads it, prepares the output and computes the max and mask
     * of tile st + 1, selects and scatters tile st, stores tile st - 1.
     * Every engine's next instruction then depends on work that is already
     * one step old, except POOL's scatter on DVE's select of the same step. */
    for (int64_t st = -2; st <= (int64_t)s.ntiles; st++) {
        int64_t T = (int64_t)s.ntiles;
        if (st + 2 >= 0 && st + 2 < T && sas_emit_loads(&s, (uint32_t)(st + 2), err) != 0) goto done;
        if (st + 1 >= 0 && st + 1 < T && sas_emit_init(&s, (uint32_t)(st + 1), err) != 0) goto done;
        if (st + 2 >= 0 && st + 2 < T && sas_emit_pad(&s, (uint32_t)(st + 2), err) != 0) goto done;
        if (st + 1 >= 0 && st + 1 < T && sas_emit_max_eq(&s, (uint32_t)(st + 1), err) != 0) goto done;
        if (st >= 0 && st < T) {
            uint32_t t0 = (uint32_t)st;
            if (sas_emit_select(&s, t0, err) != 0 || sas_emit_scatter(&s, t0, err) != 0 || sas_emit_out(&s, t0, err) != 0)
                goto done;
        }
        if (st - 1 >= 0 && st - 1 < T && sas_emit_store(&s, (uint32_t)(st - 1), err) != 0) goto done;
    }
    rc = 0;
done:;
    nx_error rerr;
    if (nslots < SAS_SLOTS)
        while (nb > 0) nx_kctx_release(k, &s.buf[nslots][--nb], &rerr);
    while (nslots > 0) {
        nslots--;
        for (int b = B_COUNT; b-- > 0;) nx_kctx_release(k, &s.buf[nslots][b], &rerr);
    }
    if (have_konst) nx_kctx_release(k, &s.konst, &rerr);
    sas_dim_plan_free(&s.ph);
    sas_dim_plan_free(&s.pw);
    free(s.units);
    free(s.tiles);
    return rc;
}
