/* The dense PE convolutions #3 conv2d_pbp_0f1b_0i1o_01fb_experimental_1
 * and #4 conv2d_pbp_fb01_io01_01bf_kernel_experimental_1
 * (kernels/conv/forward/conv2d_pbp.h) against the conv reference.
 *
 * Every case goes through the leaf-case suite (tests/conv_cases.h): the
 * run path, order-checked, on the functional executor and on the SystemC
 * model with the race check, compared element by element with nx_ref_conv
 * under the rules' tolerance (docs/parts/conv.md; K = C_in/G x KH x KW) and
 * the backends bit for bit. Shapes: 1x1 kernels, kernels larger than the image with
 * padding, stride larger than the kernel, C = 1, 129, 300, N = 1, 3, 513,
 * asymmetric and negative padding, rhs_dilation, grouped and depthwise
 * (channel multiplier) convolutions, every PE dtype; then the tiling
 * (pixel packing, the transposed store), and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "conv_cases.h"
#include "kernels/conv/forward/conv2d_pbp.h"
#include "kernels/conv/forward/conv2d_pbp_plan.h"
#include "support.h"

#define L3 "0f1b_0i1o->01fb"
#define L4 "fb01_io01->01bf"
#define K3 conv2d_pbp_0f1b_0i1o_01fb_experimental_1
#define K4 conv2d_pbp_fb01_io01_01bf_kernel_experimental_1
#define N3 "conv2d_pbp_0f1b_0i1o_01fb_experimental_1"
#define N4 "conv2d_pbp_fb01_io01_01bf_kernel_experimental_1"

/* #3 with img (H, C, W, N) and filt (KH, C/G, KW, O). */
/* attrs plus feature_group_count=G when G > 1 */
static const char *with_groups(char *buf, size_t len, const char *attrs, uint64_t G) {
    if (G <= 1) return attrs;
    snprintf(buf, len, "%s%sfeature_group_count=%llu", attrs ? attrs : "", attrs ? ";" : "", (unsigned long long)G);
    return buf;
}

static void check3(nx_dtype dt, uint64_t H, uint64_t C, uint64_t W, uint64_t N, uint64_t KH, uint64_t KW, uint64_t O,
                   uint64_t G, const char *attrs, uint64_t seed) {
    char buf[256];
    conv_case c = {L3, dt, {H, C, W, N}, {KH, C / G, KW, O}, with_groups(buf, sizeof buf, attrs, G), 0, seed};
    conv_check_leaf(K3, &c, 1);
}

/* #4 with img (C, N, H, W) and filt (C/G, O, KH, KW). */
static void check4(nx_dtype dt, uint64_t H, uint64_t C, uint64_t W, uint64_t N, uint64_t KH, uint64_t KW, uint64_t O,
                   uint64_t G, const char *attrs, uint64_t seed) {
    char buf[256];
    conv_case c = {L4, dt, {C, N, H, W}, {C / G, O, KH, KW}, with_groups(buf, sizeof buf, attrs, G), 0, seed};
    conv_check_leaf(K4, &c, 1);
}

static void test_basic(void **state) {
    (void)state;
    check3(NX_DT_FP32, 5, 3, 6, 2, 3, 3, 4, 1, NULL, 1);
    check3(NX_DT_BF16, 7, 8, 5, 1, 3, 3, 8, 1, "padding=[[1,1],[1,1]]", 2);
    check3(NX_DT_FP32, 9, 4, 9, 3, 3, 2, 5, 1, "stride=[2,2];padding=[[1,1],[0,2]]", 3);
}

/* Edge shapes: 1x1 kernels, kernels larger than the image with
 * padding, stride > kernel, C = 1, 129, 300, N = 1, 3, 513. */
static void test_shapes(void **state) {
    (void)state;
    check3(NX_DT_BF16, 6, 129, 7, 3, 1, 1, 130, 1, NULL, 10);                       /* 1x1, C and O > 128 */
    check3(NX_DT_FP32, 3, 2, 4, 2, 5, 6, 3, 1, "padding=[[2,2],[3,3]]", 11);        /* kernel > image */
    check3(NX_DT_BF16, 11, 3, 13, 2, 2, 2, 4, 1, "stride=[3,4]", 12);                /* stride > kernel */
    check3(NX_DT_FP32, 8, 1, 8, 1, 3, 3, 1, 1, "padding=[[1,1],[1,1]]", 13);         /* C = O = N = 1 */
    check3(NX_DT_BF16, 5, 300, 4, 3, 3, 3, 20, 1, "padding=[[1,1],[1,1]]", 14);      /* C = 300: 3 steps */
    check3(NX_DT_BF16, 4, 5, 3, 513, 2, 2, 6, 1, "padding=[[0,1],[1,0]]", 15);       /* N = 513: split */
    check3(NX_DT_FP16, 3, 129, 3, 3, 3, 3, 300, 1, "padding=[[1,1],[1,1]]", 16);     /* O = 300: 3 tiles */
    check3(NX_DT_FP32, 1, 2, 1, 1, 1, 1, 1, 1, NULL, 17);                            /* one element */
    /* rows-first loads of 2 and 3 full steps stacked on the partitions
     * (one PE transpose per column serves every step), one with rows cropped */
    check3(NX_DT_BF16, 5, 256, 3, 2, 3, 3, 8, 1, "padding=[[1,0],[0,1]]", 18);
    check3(NX_DT_FP32, 6, 384, 2, 3, 3, 2, 5, 1, "padding=[[-1,1],[1,0]]", 19);
}

static void test_padding_stride_dilation(void **state) {
    (void)state;
    check3(NX_DT_FP32, 10, 4, 9, 2, 3, 3, 5, 1, "padding=[[-1,2],[1,-2]]", 20);      /* crop + pad */
    check3(NX_DT_BF16, 12, 6, 11, 2, 3, 2, 4, 1, "rhs_dilation=[2,3];padding=[[2,1],[0,3]]", 21);
    check3(NX_DT_FP32, 15, 3, 14, 1, 3, 3, 2, 1, "stride=[2,3];rhs_dilation=[3,2];padding=[[-2,0],[1,1]]", 22);
    check3(NX_DT_BF16, 6, 3, 6, 2, 2, 2, 3, 1, "padding=[[5,0],[0,5]]", 23);         /* whole padding rows */
    check3(NX_DT_FP32, 4, 2, 4, 1, 1, 1, 2, 1, "padding=[[-3,0],[0,-3]]", 24);       /* 1x1 output */
}

static void test_groups(void **state) {
    (void)state;
    check3(NX_DT_FP32, 6, 6, 5, 2, 3, 3, 4, 2, "padding=[[1,1],[1,1]]", 30);          /* 2 groups packed */
    check3(NX_DT_BF16, 5, 160, 5, 1, 3, 3, 200, 4, "padding=[[1,1],[1,1]]", 31);      /* Cg 40, Og 50: 2 per tile */
    check3(NX_DT_BF16, 4, 390, 3, 2, 2, 2, 6, 3, "stride=[2,1]", 32);                 /* Cg 130: unpacked, 2 steps */
    check3(NX_DT_FP32, 7, 130, 6, 2, 3, 3, 260, 130, "padding=[[1,1],[1,1]]", 33);    /* depthwise, multiplier 2 */
    check3(NX_DT_BF16, 9, 5, 8, 3, 3, 3, 5, 5, "stride=[2,2];padding=[[1,1],[1,1]]", 34); /* depthwise */
    check3(NX_DT_FP16, 5, 12, 5, 1, 3, 1, 300, 3, "rhs_dilation=[2,1];padding=[[2,2],[0,0]]", 35); /* Og 100 */
}

static void test_dtypes(void **state) {
    (void)state;
    static const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++)
        check3(dts[i], 7, 20, 6, 4, 3, 3, 12, 1, "stride=[1,2];padding=[[1,1],[2,0]]", 40 + i);
}

/* Bands: several of them (pipelined), column-blocked rows, batch-split
 * windows. */
static void test_bands(void **state) {
    (void)state;
    check3(NX_DT_BF16, 40, 16, 37, 2, 3, 3, 16, 1, "padding=[[1,1],[1,1]]", 50);
    /* one row of 2000 x 64 bf16 does not fit a band: column blocks */
    check3(NX_DT_BF16, 1, 2, 2000, 64, 1, 3, 2, 1, NULL, 51);
    /* one pixel's window of 40000 bf16 does not fit: batch blocks */
    check3(NX_DT_BF16, 1, 1, 1, 40000, 1, 1, 3, 1, NULL, 52);
}

/* #4: the same convolutions in fb01_io01->01bf, through #3. */
static void test_fb01(void **state) {
    (void)state;
    check4(NX_DT_FP32, 5, 3, 6, 2, 3, 3, 4, 1, NULL, 60);
    check4(NX_DT_BF16, 9, 4, 9, 3, 3, 2, 5, 1, "stride=[2,2];padding=[[1,1],[0,2]]", 61);
    check4(NX_DT_BF16, 6, 129, 7, 3, 1, 1, 130, 1, NULL, 62);                        /* C, O > 128 */
    check4(NX_DT_FP32, 8, 1, 8, 1, 3, 3, 1, 1, "padding=[[1,1],[1,1]]", 63);          /* N = 1: direct result */
    check4(NX_DT_FP16, 4, 5, 3, 513, 2, 2, 6, 1, "padding=[[0,1],[1,0]]", 64);        /* N = 513 */
    check4(NX_DT_BF16, 12, 6, 11, 2, 3, 2, 4, 2, "rhs_dilation=[2,3];padding=[[-1,1],[0,3]]", 65);
    check4(NX_DT_FP8_E4M3, 7, 130, 6, 2, 3, 3, 260, 130, "padding=[[1,1],[1,1]]", 66); /* depthwise x2 */
    check4(NX_DT_FP32, 3, 300, 2, 1, 2, 2, 7, 1, "padding=[[1,0],[0,1]]", 67);        /* C = 300 */
    check4(NX_DT_BF16, 5, 20, 4, 3, 3, 3, 300, 1, "stride=[1,2];padding=[[1,1],[1,1]]", 70); /* 3 cout tiles stored together */
    check4(NX_DT_BF16, 140, 2, 3, 1, 3, 1, 3, 1, NULL, 68);                          /* H > 128 rows */
    /* one step, one cout tile, runs of H W >= 1 KiB: the image in batch
     * parts (2, 2, 4), (2, 3) and (1, 1, 4), each in a plane of its own */
    check4(NX_DT_BF16, 28, 8, 28, 8, 3, 3, 8, 1, "stride=[2,2];padding=[[1,1],[1,1]]", 71);
    check4(NX_DT_FP32, 16, 5, 16, 5, 3, 2, 6, 1, "padding=[[1,0],[0,1]]", 72);
    check4(NX_DT_BF16, 32, 4, 32, 6, 3, 3, 4, 1, "rhs_dilation=[2,1];padding=[[2,2],[1,1]]", 73);
    /* an image too large to stay resident: through the (H, C, W, N) scratch copy */
    check4(NX_DT_BF16, 200, 2, 200, 2, 3, 3, 2, 1, "padding=[[1,1],[1,1]]", 69);
}

/* Refusals name the operand or attribute and the rule. */
static void test_refusals(void **state) {
    (void)state;
    conv_case c = {L3, NX_DT_FP32, {5, 3, 6, 2}, {3, 3, 3, 4}, NULL, 0, 1};
    const uint64_t wrong[4] = {4, 4, 4, 2};
    conv_expect_refusal(K3, &c, wrong,
                        "operand 2 (out): shape [4,4,4,2] must be [3,4,4,2] (the convolution of operand 0 (img) "
                        "[5,3,6,2] and operand 1 (filt) [3,3,3,4]"
            "; layouts, labels 0f1b_0i1o->01fb: operand 0 (img) H,C,W,N, operand 1 (filt) KH,C/G,KW,O, result OH,OW,O,N)");
    c.attrs = "lhs_dilation=[1,2]";
    conv_expect_refusal(K3, &c, NULL,
                        N3 ": attribute lhs_dilation=[1,2] is not supported (this leaf takes lhs_dilation [1,1] only)");
    c.attrs = "batch_group_count=2";
    conv_expect_refusal(K3, &c, wrong,
                        N3 ": attribute batch_group_count=2 is not supported (this leaf takes batch_group_count 1 only)");
    c.attrs = "stride=[2]";
    conv_expect_refusal(K3, &c, wrong,
                        N3 ": attribute stride=[2]: must be a list of 2 ints >= 1 (one per spatial dim)");
    c.attrs = "dilation=[2,2]";
    conv_expect_refusal(K3, &c, wrong,
                        N3 ": attribute dilation: not a conv attribute (stride, padding, lhs_dilation, rhs_dilation, "
                           "feature_group_count, batch_group_count, out_shape)");
    c.attrs = "feature_group_count=2";
    conv_expect_refusal(K3, &c, wrong, "operand 0 (img): dim 1 (f) of 3 features is not divisible by feature_group_count 2"
            " (layouts, labels 0f1b_0i1o->01fb: operand 0 (img) H,C,W,N, operand 1 (filt) KH,C/G,KW,O, result OH,OW,O,N)");
    c.attrs = "rhs_dilation=[3,1]";
    conv_expect_refusal(K3, &c, wrong,
                        "conv spatial dim 0: the window (3 taps, rhs_dilation 3) does not fit the input (5, "
                        "lhs_dilation 1, padding [0,0]): no output"
            " (layouts, labels 0f1b_0i1o->01fb: operand 0 (img) H,C,W,N, operand 1 (filt) KH,C/G,KW,O, result OH,OW,O,N)");
    /* dtypes: equal, and a PE input type */
    conv_case i8 = {L3, NX_DT_INT8, {5, 3, 6, 2}, {3, 3, 3, 4}, NULL, 0, 1};
    conv_expect_refusal(K3, &i8, NULL,
                        "operand 0 (img): dtype int8 is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)");
    conv_case c4 = {L4, NX_DT_BF16, {3, 2, 5, 6}, {2, 4, 3, 3}, NULL, 0, 1};
    conv_expect_refusal(K4, &c4, NULL,
                        "operand 1 (filt): dim 0 (i) is 2 but operand 0 (img) features 3 / feature_group_count 1 = 3"
            " (layouts, labels fb01_io01->01bf: operand 0 (img) C,N,H,W, operand 1 (filt) C/G,O,KH,KW, result OH,OW,N,O)");
    c4.rhs[0] = 3;
    c4.attrs = "padding=[[1,1]]";
    conv_expect_refusal(K4, &c4, wrong,
                        N4 ": attribute padding=[[1,1]]: must hold 2 [lo, hi] pairs of ints (one per spatial dim)");
}

/* The tiling from the machine geometry: pixel packing, the stores, the
 * resident image and the block-diagonal groups (kernels/conv/forward/conv2d_pbp_plan.h). */
static nx_conv_pbp pb_of(nx_dtype dt, uint64_t H, uint64_t C, uint64_t W, uint64_t N, uint64_t K, uint64_t O,
                         uint64_t G, int64_t s) {
    nx_conv_pbp pb;
    memset(&pb, 0, sizeof pb);
    pb.dtype = dt;
    pb.H = H;
    pb.C = C;
    pb.W = W;
    pb.N = N;
    pb.KH = pb.KW = K;
    pb.O = O;
    nx_conv_params_default(&pb.p, 2);
    pb.p.stride[0] = pb.p.stride[1] = s;
    pb.p.pad_lo[0] = pb.p.pad_lo[1] = pb.p.pad_hi[0] = pb.p.pad_hi[1] = (int64_t)K / 2;
    pb.p.feature_group_count = (int64_t)G;
    pb.OH = nx_conv_out_size(H, K, s, (int64_t)K / 2, (int64_t)K / 2, 1, 1);
    pb.OW = nx_conv_out_size(W, K, s, (int64_t)K / 2, (int64_t)K / 2, 1, 1);
    return pb;
}

static pbp_plan plan_of(nx_dtype dt, uint64_t H, uint64_t C, uint64_t W, uint64_t N, uint64_t K, uint64_t O,
                        uint64_t G, int64_t s) {
    nx_conv_pbp pb = pb_of(dt, H, C, W, N, K, O, G, s);
    nx_machine m = test_machine("trn2");
    pbp_plan pl;
    nx_error err;
    if (pbp_plan_make(&pb, &m, 32, &pl, &err) != 0) fail_msg("%s", err.msg);
    return pl;
}

static void test_plan(void **state) {
    (void)state;
    /* ResNet 56x56x64, batch 1: 64 columns per matmul at least, pixels
     * packed along the row (N = 1 < 512), the image resident and loaded
     * rows-first, the output PE-transposed (runs of k x 64 x 1 x 2 bytes) */
    pbp_plan p = plan_of(NX_DT_BF16, 56, 64, 56, 1, 3, 64, 1, 1);
    assert_int_equal(p.nb, 1);
    assert_int_equal(p.pw, 56);
    assert_true(p.q * p.pw * p.nb >= 64 && p.q * p.pw * p.nb <= 512);
    assert_true(p.resident);
    assert_true(p.rt);
    assert_int_equal(p.store, PBP_STORE_TRANSPOSED);
    assert_true(p.kpack > 1);
    assert_int_equal(p.kc, 64);
    assert_int_equal(p.mo, 64);
    assert_int_equal(p.rt_spu, 1);
    /* ResNet stage 3, 14x14x256 batch 8: rows-first, the two steps' 14 rows
     * stacked on 28 partitions */
    p = plan_of(NX_DT_BF16, 14, 256, 14, 8, 3, 256, 1, 1);
    assert_true(p.rt);
    assert_int_equal(p.steps, 2);
    assert_int_equal(p.rt_spu, 2);
    assert_int_equal(p.rt_pad, 32);
    /* #4's (C, N, H, W) image of the same shape is read in place (no
     * rows-first transposes, one raw step per buffer); a 224x224x64 image
     * batch 8 is not resident and goes through the scratch copy */
    nx_machine m = test_machine("trn2");
    nx_conv_pbp pb = pb_of(NX_DT_BF16, 14, 256, 14, 8, 3, 256, 1, 1);
    assert_true(nx_conv_pbp_takes_cnhw(&pb, &m, 32));
    pb.img_cnhw = 1;
    nx_error err;
    assert_int_equal(pbp_plan_make(&pb, &m, 32, &p, &err), 0);
    assert_true(p.cnhw);
    assert_false(p.rt);
    assert_int_equal(p.cn_elems, 8 * 14 * 14);
    assert_int_equal(p.cn_bufs, 2);
    /* and its filter as it lies (one resident ungrouped chunk); not a
     * block-diagonal grouped one */
    pb.img_cnhw = 0;
    assert_true(nx_conv_pbp_takes_iohw(&pb, &m, 32));
    /* its result written as (OH, OW, N, O) by the transposed store, the two
     * cout tiles staged together (runs of N x O per pixel) */
    assert_true(nx_conv_pbp_takes_01bf(&pb, &m, 32));
    pb.out_01bf = 1;
    assert_int_equal(pbp_plan_make(&pb, &m, 32, &p, &err), 0);
    assert_true(p.out_comb);
    assert_int_equal(p.stage_bufs, 3);
    assert_int_equal(p.tstore_elems, 8 * 256);
    pb = pb_of(NX_DT_BF16, 9, 8, 8, 3, 3, 8, 2, 1);
    assert_false(nx_conv_pbp_takes_iohw(&pb, &m, 32));
    /* N = 1100 (runs of 2200 bytes): stored directly (C_out on partitions), so not in (OH, OW, N, O) */
    pb = pb_of(NX_DT_BF16, 4, 8, 4, 1100, 3, 8, 1, 1);
    assert_false(nx_conv_pbp_takes_01bf(&pb, &m, 32));
    /* The store reads the machine's dma.efficient_bytes_per_partition: runs
     * of 2 KiB are full speed on trn2 (stored directly), short on a machine
     * that needs 4 KiB (PE-transposed, so the result goes straight to
     * (OH, OW, N, O)) */
    nx_machine slow = m;
    slow.dma_efficient_bytes_per_partition = 4096;
    pb = pb_of(NX_DT_BF16, 4, 8, 4, 1024, 3, 4, 1, 1); /* runs of N x 2 = 2048 bytes */
    assert_int_equal(pbp_plan_make(&pb, &m, 32, &p, &err), 0);
    assert_int_equal(p.store, PBP_STORE_DIRECT);
    assert_false(nx_conv_pbp_takes_01bf(&pb, &m, 32));
    assert_int_equal(pbp_plan_make(&pb, &slow, 32, &p, &err), 0);
    assert_int_equal(p.store, PBP_STORE_TRANSPOSED);
    assert_true(nx_conv_pbp_takes_01bf(&pb, &slow, 32));
    pb = pb_of(NX_DT_BF16, 224, 64, 224, 8, 3, 64, 1, 1);
    assert_false(nx_conv_pbp_takes_cnhw(&pb, &m, 32));
    pb = pb_of(NX_DT_BF16, 200, 2, 200, 2, 3, 2, 1, 1); /* test_fb01's scratch case */
    assert_false(nx_conv_pbp_takes_cnhw(&pb, &m, 32));
    /* 28x28x128 stride 2, batch 8, fp32: W N runs of 896 bytes are loaded
     * directly; 128-wide tiles */
    p = plan_of(NX_DT_FP32, 28, 128, 28, 8, 3, 128, 1, 2);
    assert_true(p.resident);
    assert_false(p.rt);
    assert_int_equal(p.kc, 128);
    assert_int_equal(p.mo, 128);
    assert_int_equal(p.nb, 8);
    assert_int_equal(p.pw, 14);
    /* batch 1024: the batch fills the moving tile (two halves of 512) and
     * runs of 2 KiB store directly */
    p = plan_of(NX_DT_BF16, 4, 32, 4, 1024, 3, 32, 1, 1);
    assert_int_equal(p.nb, 512);
    assert_int_equal(p.pw, 1);
    assert_int_equal(p.store, PBP_STORE_DIRECT);
    /* C_in 300, C_out 300: 3 contraction steps, 3 cout tiles */
    p = plan_of(NX_DT_BF16, 8, 300, 8, 2, 3, 300, 1, 1);
    assert_int_equal(p.steps, 3);
    assert_int_equal(p.couts, 3);
    assert_int_equal(p.gp, 1);
    /* depthwise 256 channels x multiplier 2: 64 groups per block-diagonal tile */
    p = plan_of(NX_DT_BF16, 8, 256, 8, 1, 3, 512, 256, 1);
    assert_int_equal(p.gp, 64);
    assert_int_equal(p.nsg, 4);
    assert_int_equal(p.kc, 64);
    assert_int_equal(p.mo, 128);
    /* test_ring_bands' convolution does not stay resident: a ring of bands */
    p = plan_of(NX_DT_FP32, 64, 130, 64, 8, 3, 4, 1, 1);
    assert_false(p.resident);
    assert_true(p.R < 70);
}

/* A conv whose image does not stay resident: bands in a ring of two
 * buffers, double-buffered, still exact against the reference. */
static void test_ring_bands(void **state) {
    (void)state;
    check3(NX_DT_FP32, 64, 130, 64, 8, 3, 3, 4, 1, "padding=[[1,1],[1,1]]", 70);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_padding_stride_dilation),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_bands),
        cmocka_unit_test(test_fb01),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_ring_bands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
