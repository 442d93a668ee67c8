/* conv2d_column_packing and conv2d_column_packing_io10: the depthwise
 * weight gradient, img (CI, C, H, W) fb01, filt (CI, C, HF, WF) io01 (#7) or
 * (CI, C, WF, HF) io10 (#8) -> out (K0, K1, 1, C) 01bf, batch_group_count
 * = C (kernels/conv/wgrad/wgrad.h; docs/parts/wgrad.md): channel c's filter
 * gradient pairs the activations' channel c with the output gradient's
 * channel c, contracted over the forward batch CI and the window.
 *
 * Follows the public AWS Neuron "column packing" strategy (aws-neuron
 * kernel library, "Convolution kernels"): the channel groups are packed on
 * the PE columns and run through the dense replicated weight-gradient
 * kernel (#5, Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh), so one matmul forms
 * every (image channel, filter channel) pair of a tile; the off-diagonal
 * pairs are masked away and the diagonal reduced. The public kernel writes
 * the whole pair product to HBM and masks and reduces it there; this one
 * shares #5's emitter (kernels/conv/wgrad/wgrad_core.h) and, per tile of at most
 * the PE columns' worth of channels:
 *  - keeps the pair product in PSUM: the fold selects n == c with a DVE
 *    `select` against a 0/1 mask (never a multiply, so a non-finite value
 *    of another channel cannot leak in) and reduces n on the DVE;
 *  - sizes the channel tile against shifted filter copies on the free PE
 *    columns (fewer channels per tile waste fewer pairs, more copies reuse
 *    each moving window), chosen with the rest of the tiling by an
 *    estimate of its PE and DMA time; larger C runs as several tiles.
 * #8 first swaps the filter's last two dims into HBM scratch with the DVE
 * transpose leaf's emitter (tiled_dve_transpose_10: whole WF x HF matrices
 * per partition, contiguous transfers) and then runs #7 on the copy: the
 * contraction needs each replica block's filter rows contiguous, which the
 * io10 layout only gives in runs of HF. */
#include <stdio.h>
#include <string.h>

#include "kernels/transpose/transpose.h"
#include "wgrad.h"
#include "wgrad_core.h"

int conv2d_column_packing(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_wg_problem p;
    if (nx_wg_prepare("conv2d_column_packing", NX_WG_DEPTHWISE, "fb01_io01->01bf", call, &p, err) != 0) return -1;
    return nx_wg_run(k, &p, err);
}

int conv2d_column_packing_io10(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    static const char leaf[] = "conv2d_column_packing_io10";
    nx_wg_problem p;
    if (nx_wg_prepare(leaf, NX_WG_DEPTHWISE, "fb01_io10->01bf", call, &p, err) != 0) return -1;
    /* the filter (CI, C, WF, HF) -> (CI, C, HF, WF) in HBM scratch */
    nx_tensor_ref t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s.filt_io01", leaf);
    t.dtype = p.dt;
    t.ndims = 4;
    const uint64_t shape[4] = {p.CI, p.N, (uint64_t)p.HF, (uint64_t)p.WF};
    memcpy(t.shape, shape, sizeof shape);
    if (nx_kctx_scratch(k, t.name, p.dt, 4, shape, &t.hbm_offset, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    static const int64_t swap[4] = {0, 1, 3, 2};
    if (nx_transpose_tensors(k, tiled_dve_transpose_10, &call->args[1], &t, swap, 4, err) != 0)
        return nx_fail_prefix(err, "%s: filter transpose", leaf);
    p.filt = t.hbm_offset;
    return nx_wg_run(k, &p, err);
}
