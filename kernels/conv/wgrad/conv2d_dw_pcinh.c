/* Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: the weight gradient of a dense
 * convolution, img (CI, N, H, W), filt (CI, CO, HF, WF) -> out (K0, K1, N,
 * CO), labels fb01_io01->01bf (kernels/conv/wgrad/wgrad.h; docs/parts/wgrad.md).
 * ResNet-50 conv1's weight gradient is [7,7,3,64] from img [16,3,224,224]
 * and the output gradient [16,64,112,112], padding [[3,2],[3,2]],
 * rhs_dilation [2,2].
 *
 * Follows the public AWS Neuron kernel of the same name (aws-neuron kernel
 * library, "Convolution kernels": "dw" derivative weight, "rep"
 * replication, "nhwc" the image laid out for the matmul, "Pcinh" C_in and
 * H on partitions): H_REP row-shifted copies of the image fill the PE rows
 * so that H_REP x C_in rows are contracted per matmul, the filter rows
 * meeting them sit on the same partitions, matmuls accumulate over the
 * filter width in PSUM with C_out on the PSUM partitions and (K0, K1, N) on
 * the moving axis in tiles of one bank. Where this one goes further
 * (kernels/conv/wgrad/wgrad_core.h has the details):
 *  - the replica blocks hold bands of filter rows (block r: rows [rB, rB +
 *    B)), so filter loads are runs of B x WF elements and the image is
 *    loaded once per band, not once per row; rhs_dilation shifts the bands
 *    (the public kernel spends partitions on the dilation's zero rows);
 *  - no HBM pre-transposes: the image is read in place (rows of W, batch
 *    outermost in SBUF) and the result is transposed on the PE in the fold;
 *  - column groups: when C_out leaves PE columns free, Gx x Gy shifted
 *    filter copies share the stationary and one moving window (more
 *    outputs per matmul), added back with their shifts in the fold;
 *  - any stride, padding of either sign (horizontal padding is never
 *    stored: each matmul covers the outputs its filter column reaches),
 *    C_in, C_out and N of any size (tiles of the PE rows, columns and one
 *    PSUM bank), double-buffered loads, and a tiling chosen by an estimate
 *    of its PE and DMA time. */
#include "wgrad.h"
#include "wgrad_core.h"

int conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_wg_problem p;
    if (nx_wg_prepare("Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh", NX_WG_DENSE, "fb01_io01->01bf", call, &p, err) != 0)
        return -1;
    return nx_wg_run(k, &p, err);
}
