/* ResizeNearest: the coordinate rules (kernels/resize/resize_rule.h), the reference
 * (nx_ref_resize_nearest) against ONNX's published Resize examples, and the
 * leaf resize_nearest_fixed_dma_kernel against the reference, bit for bit,
 * through the leaf-case suite (the run path, on the functional executor and
 * the SystemC model with the race check):
 * every mode pair, from out_shape and from scales, every dtype, 1x1 images,
 * OH or OW = 1, OH > 4H, downsampling, tiles across image boundaries,
 * channel chunks, and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/ref/ref.h"
#include "kernels/resize/resize_nearest.h"
#include "kernels/resize/resize_rule.h"
#include "leaf_cases.h"
#include "support.h"

/* ---- attributes ---- */

typedef struct attr_buf {
    nx_attr items[4];
    nx_value lists[2][4];
    char names[4][40];
    char strs[2][32];
    nx_attrs attrs;
} attr_buf;

static nx_attr *add_attr(attr_buf *a, const char *name) {
    nx_attr *at = &a->items[a->attrs.count];
    snprintf(a->names[a->attrs.count], sizeof a->names[0], "%s", name);
    at->name = a->names[a->attrs.count];
    a->attrs.count++;
    a->attrs.items = a->items;
    return at;
}

static void attr_list(attr_buf *a, const char *name, const double *v, int as_float) {
    int li = strcmp(name, "scales") == 0;
    nx_attr *at = add_attr(a, name);
    at->value.kind = NX_VAL_LIST;
    at->value.count = 4;
    at->value.items = a->lists[li];
    for (int i = 0; i < 4; i++) {
        a->lists[li][i].kind = as_float ? NX_VAL_FLOAT : NX_VAL_INT;
        a->lists[li][i].f = v[i];
        a->lists[li][i].i = (int64_t)v[i];
    }
}

static void attr_str(attr_buf *a, const char *name, const char *v) {
    int si = strcmp(name, "nearest_mode") == 0;
    nx_attr *at = add_attr(a, name);
    snprintf(a->strs[si], sizeof a->strs[0], "%s", v);
    at->value.kind = NX_VAL_STRING;
    at->value.s = a->strs[si];
}

/* Attributes: out_shape (always: the args builder adds it), optional scales
 * and modes (NULL = absent). */
static void make_attrs(attr_buf *a, const uint64_t out[4], const double *scales, const char *coord,
                       const char *nearest) {
    memset(a, 0, sizeof *a);
    double o[4] = {(double)out[0], (double)out[1], (double)out[2], (double)out[3]};
    attr_list(a, "out_shape", o, 0);
    if (scales) attr_list(a, "scales", scales, 1);
    if (coord) attr_str(a, "coordinate_transformation_mode", coord);
    if (nearest) attr_str(a, "nearest_mode", nearest);
}

static void rule_of(const attr_buf *a, const uint64_t in[4], const uint64_t out[4], nx_resize_rule *r) {
    nx_error err;
    if (nx_resize_rule_read(&a->attrs, in, out, r, &err) != 0) fail_msg("rule: %s", err.msg);
}

/* ---- the reference on ONNX's published examples (NHWC with C = 1) ---- */

static void expect_ref(const uint64_t in[4], const float *x, const uint64_t out[4], const double *scales,
                       const char *coord, const char *nearest, const float *want) {
    attr_buf a;
    make_attrs(&a, out, scales, coord, nearest);
    nx_resize_rule r;
    rule_of(&a, in, out, &r);
    uint64_t n = out[1] * out[2];
    float got[64];
    nx_error err;
    assert_int_equal(nx_ref_resize_nearest(x, NX_DT_FP32, in, &r, got, &err), 0);
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s + %s: pixel (%llu, %llu) is %g, ONNX says %g", coord, nearest, (unsigned long long)(i / out[2]),
                     (unsigned long long)(i % out[2]), got[i], want[i]);
}

static void test_ref_onnx_examples(void **state) {
    (void)state;
    /* resize_upsample_sizes_nearest: 2x2 -> 7x8, half_pixel + round_prefer_floor */
    const uint64_t in22[4] = {1, 2, 2, 1}, o78[4] = {1, 7, 8, 1};
    const float x22[4] = {1, 2, 3, 4};
    float w78[56];
    for (int y = 0; y < 7; y++)
        for (int c = 0; c < 8; c++) w78[y * 8 + c] = (float)((y < 4 ? 1 : 3) + (c < 4 ? 0 : 1));
    expect_ref(in22, x22, o78, NULL, "half_pixel", "round_prefer_floor", w78);
    /* resize_downsample_scales_nearest: 2x4, scales 0.6 -> 1x2 = [[1, 3]] */
    const uint64_t in24[4] = {1, 2, 4, 1}, o12[4] = {1, 1, 2, 1};
    const float x24[8] = {1, 2, 3, 4, 5, 6, 7, 8}, w12[2] = {1, 3};
    const double s06[4] = {1, 0.6, 0.6, 1};
    expect_ref(in24, x24, o12, s06, "half_pixel", "round_prefer_floor", w12);
    /* 4x4 -> 8x8 (x = 1..16): ceil + half_pixel, floor + align_corners,
     * round_prefer_ceil + asymmetric */
    const uint64_t in44[4] = {1, 4, 4, 1}, o88[4] = {1, 8, 8, 1};
    float x44[16];
    for (int i = 0; i < 16; i++) x44[i] = (float)(i + 1);
    static const int ceil_half[8] = {0, 1, 1, 2, 2, 3, 3, 3}, floor_align[8] = {0, 0, 0, 1, 1, 2, 2, 3};
    float w1[64], w2[64];
    for (int y = 0; y < 8; y++)
        for (int c = 0; c < 8; c++) {
            w1[y * 8 + c] = x44[ceil_half[y] * 4 + ceil_half[c]];
            w2[y * 8 + c] = x44[floor_align[y] * 4 + floor_align[c]];
        }
    expect_ref(in44, x44, o88, NULL, "half_pixel", "ceil", w1);
    expect_ref(in44, x44, o88, NULL, "align_corners", "floor", w2);
    expect_ref(in44, x44, o88, NULL, "asymmetric", "round_prefer_ceil", w1);
    /* resize_downsample_sizes_nearest: 2x4 -> 1x3 = [[1, 2, 4]] (x_orig 1.5 at
     * the middle column: round_prefer_floor keeps 1) */
    const uint64_t o13[4] = {1, 1, 3, 1};
    const float w13[3] = {1, 2, 4};
    expect_ref(in24, x24, o13, NULL, "half_pixel", "round_prefer_floor", w13);
}

/* The default rule is PyTorch's nearest: floor(fp32(x) * fp32(in/out)),
 * and the public kernel's 30x20 -> 59x38 example maps by it. */
static void test_rule_default(void **state) {
    (void)state;
    const uint64_t in[4] = {1, 30, 20, 3}, out[4] = {1, 59, 38, 3};
    attr_buf a;
    make_attrs(&a, out, NULL, NULL, NULL);
    nx_resize_rule r;
    rule_of(&a, in, out, &r);
    assert_false(r.onnx);
    for (uint64_t y = 0; y < 59; y++) {
        float t = (float)y * (30.0f / 59.0f);
        uint64_t want = (uint64_t)t; /* t >= 0: truncation is floor */
        assert_int_equal(nx_ref_resize_src(&r.axis[0], y), want > 29 ? 29 : want);
    }
    assert_int_equal(nx_ref_resize_src(&r.axis[1], 37), 19);
    /* scales give the result shape: floor(in * fp32(s)) */
    uint64_t got[4];
    nx_error err;
    const uint64_t in10[4] = {1, 10, 10, 1};
    make_attrs(&a, out, (const double[4]){1, 0.7, 2.5, 1}, NULL, NULL);
    a.attrs.items = &a.items[1];
    a.attrs.count = 1;
    assert_int_equal(nx_resize_out_shape(&a.attrs, in10, got, &err), 0);
    assert_int_equal(got[1], 6); /* 10 * fp32(0.7) = 6.99999988 */
    assert_int_equal(got[2], 25);
}

static void test_rule_refusals(void **state) {
    (void)state;
    const uint64_t in[4] = {2, 4, 4, 3}, out[4] = {2, 8, 8, 3};
    attr_buf a;
    nx_resize_rule r;
    nx_error err;
    make_attrs(&a, out, NULL, "half_pixels", NULL);
    assert_int_equal(nx_resize_rule_read(&a.attrs, in, out, &r, &err), -1);
    assert_string_equal(err.msg, "attribute coordinate_transformation_mode: 'half_pixels' is not one of asymmetric, "
                                 "half_pixel, align_corners, pytorch_half_pixel");
    make_attrs(&a, out, NULL, NULL, "nearest");
    assert_int_equal(nx_resize_rule_read(&a.attrs, in, out, &r, &err), -1);
    assert_string_equal(err.msg,
                        "attribute nearest_mode: 'nearest' is not one of floor, ceil, round_prefer_floor, round_prefer_ceil");
    make_attrs(&a, out, (const double[4]){1, 2, 2, 2}, NULL, NULL);
    assert_int_equal(nx_resize_rule_read(&a.attrs, in, out, &r, &err), -1);
    assert_string_equal(err.msg, "attribute scales [1, 2, 2, 2]: must be [1, sh, sw, 1] (ResizeNearest keeps N and C)");
    make_attrs(&a, out, (const double[4]){1, 2, 3, 1}, NULL, NULL);
    assert_int_equal(nx_resize_rule_read(&a.attrs, in, out, &r, &err), -1);
    assert_string_equal(err.msg, "attribute out_shape [2, 8, 8, 3] disagrees with attribute scales, which give [2, 8, 12, 3]");
    const uint64_t bad[4] = {2, 8, 8, 4};
    make_attrs(&a, bad, NULL, NULL, NULL);
    assert_int_equal(nx_resize_rule_read(&a.attrs, in, bad, &r, &err), -1);
    assert_string_equal(err.msg, "result shape [2, 8, 8, 4]: N and C must be the data's ([2, 4, 4, 3]): ResizeNearest keeps N and C");
    memset(&a, 0, sizeof a);
    uint64_t got[4];
    assert_int_equal(nx_resize_out_shape(&a.attrs, in, got, &err), -1);
    assert_string_equal(err.msg, "ResizeNearest needs attribute out_shape ([N, OH, OW, C]) or scales ([1, sh, sw, 1])");
}

/* ---- the leaf against the reference ---- */

/* The leaf case of ResizeNearest on data [n,h,w,c] -> [n,oh,ow,c] with the
 * attributes of a (tests/leaf_cases.h). */
static void make_case(leaf_case *c, const char *what, nx_dtype din, const uint64_t in[4], nx_dtype dout,
                      const uint64_t out[4], const attr_buf *a) {
    leaf_case_init(c, what, "ResizeNearest");
    leaf_case_operand(c, "data", din, 4, in);
    leaf_case_result(c, "out", dout, 4, out);
    nx_error err;
    nx_attrs_free(&c->op.attrs);
    if (nx_attrs_copy(&c->op.attrs, &a->attrs, &err) != 0) fail_msg("%s: %s", what, err.msg);
}

/* Runs the leaf on data [n,h,w,c] -> [n,oh,ow,c] through the leaf-case
 * suite: the run path, against the reference bit for bit (the rules' exact
 * tolerance), on the functional executor and (model) the SystemC model. */
static void check(nx_dtype dt, const uint64_t in[4], const uint64_t out[4], const double *scales,
                  const char *coord, const char *nearest, int model, const char *machine) {
    char what[256];
    snprintf(what, sizeof what, "%s [%llu,%llu,%llu,%llu] -> [%llu,%llu,%llu,%llu] %s %s%s%s", nx_dtype_name(dt),
             (unsigned long long)in[0], (unsigned long long)in[1], (unsigned long long)in[2],
             (unsigned long long)in[3], (unsigned long long)out[0], (unsigned long long)out[1],
             (unsigned long long)out[2], (unsigned long long)out[3], coord ? coord : "default",
             nearest ? nearest : "", scales ? " (scales)" : "", machine ? machine : "");
    attr_buf a;
    make_attrs(&a, out, scales, coord, nearest);
    leaf_case c;
    make_case(&c, what, dt, in, dt, out, &a);
    if (machine) snprintf(c.machine, sizeof c.machine, "%s", machine);
    c.seed = in[1] * 131 + in[2] * 7 + out[1] + dt;
    c.backends = LEAF_FUNCTIONAL | (model ? LEAF_MODEL : 0);
    leaf_case_check(&c, NULL);
    leaf_case_free(&c);
}

static void test_leaf_public_example(void **state) {
    (void)state;
    /* the public kernel's example (C reduced): 30x20 -> 59x38, two images
     * (tiles cross the image boundary) */
    const uint64_t in[4] = {2, 30, 20, 24}, out[4] = {2, 59, 38, 24};
    check(NX_DT_FP32, in, out, NULL, NULL, NULL, 1, NULL);
    check(NX_DT_BF16, in, out, NULL, NULL, NULL, 1, "trn1");
}

static void test_leaf_every_mode_pair(void **state) {
    (void)state;
    static const char *const coords[4] = {"asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel"};
    static const char *const nearests[4] = {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"};
    const uint64_t in[4] = {3, 7, 5, 4}, up[4] = {3, 17, 12, 4}, down[4] = {3, 3, 2, 4};
    const uint64_t one[4] = {3, 1, 9, 4};
    const double scales[4] = {1, 2.4, 2.5, 1}; /* 7 * 2.4 = 16.8 -> 16, 5 * 2.5 = 12.5 -> 12 */
    const uint64_t sc_out[4] = {3, 16, 12, 4};
    for (int ci = 0; ci < 4; ci++)
        for (int ni = 0; ni < 4; ni++) {
            int model = (ci + ni) % 4 == 0; /* the model on a quarter of them */
            check(NX_DT_FP32, in, up, NULL, coords[ci], nearests[ni], model, NULL);
            check(NX_DT_FP32, in, down, NULL, coords[ci], nearests[ni], 0, NULL);
            check(NX_DT_FP32, in, one, NULL, coords[ci], nearests[ni], 0, NULL);
            check(NX_DT_FP32, in, sc_out, scales, coords[ci], nearests[ni], model, NULL);
        }
}

static void test_leaf_every_dtype(void **state) {
    (void)state;
    const uint64_t in[4] = {2, 5, 6, 3}, out[4] = {2, 11, 4, 3};
    for (int dt = 0; dt < NX_DT_COUNT; dt++) check((nx_dtype)dt, in, out, NULL, NULL, NULL, dt % 3 == 0, NULL);
}

static void test_leaf_edge_shapes(void **state) {
    (void)state;
    const uint64_t i11[4] = {3, 1, 1, 5}, o11[4] = {3, 1, 1, 5}, o_up[4] = {3, 9, 4, 5};
    check(NX_DT_FP32, i11, o11, NULL, NULL, NULL, 1, NULL);         /* 1x1 -> 1x1 */
    check(NX_DT_FP32, i11, o_up, NULL, "half_pixel", "ceil", 1, NULL); /* 1x1 -> 9x4 */
    const uint64_t in[4] = {1, 6, 9, 2}, to1[4] = {1, 6, 1, 2}, row1[4] = {1, 1, 9, 2};
    check(NX_DT_BF16, in, to1, NULL, NULL, NULL, 1, NULL);          /* OW = 1 */
    check(NX_DT_BF16, in, row1, NULL, "align_corners", "floor", 1, NULL); /* OH = 1 */
    const uint64_t tall[4] = {1, 29, 4, 2};                         /* OH > 4H */
    check(NX_DT_INT16, in, tall, NULL, NULL, NULL, 1, NULL);
    /* many tiny images: a tile holds several, with their image computed on chip */
    const uint64_t tiny[4] = {40, 2, 3, 1}, tiny_o[4] = {40, 3, 2, 1};
    check(NX_DT_UINT8, tiny, tiny_o, NULL, "pytorch_half_pixel", "round_prefer_ceil", 1, NULL);
    /* wide rows: channel chunks (C beyond a stage) */
    const uint64_t wide[4] = {1, 2, 2, 20000}, wide_o[4] = {1, 3, 1, 20000};
    check(NX_DT_FP32, wide, wide_o, NULL, NULL, NULL, 1, NULL);
}

static void test_leaf_random_shapes(void **state) {
    (void)state;
    test_rng r = {2024};
    for (int i = 0; i < 12; i++) {
        uint64_t in[4], out[4];
        in[0] = out[0] = 1 + test_rng_next(&r) % 3;
        in[3] = out[3] = 1 + test_rng_next(&r) % 9;
        for (int d = 1; d < 3; d++) {
            in[d] = 1 + test_rng_next(&r) % 23;
            out[d] = 1 + test_rng_next(&r) % 41;
        }
        static const char *const coords[5] = {NULL, "asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel"};
        static const char *const nearests[4] = {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"};
        const char *cm = coords[test_rng_next(&r) % 5];
        const char *nm = cm ? nearests[test_rng_next(&r) % 4] : NULL;
        check((nx_dtype)(test_rng_next(&r) % NX_DT_COUNT), in, out, NULL, cm, nm, i % 3 == 0, i % 2 ? "trn1" : NULL);
    }
}

/* Chunks: more than 2^18 output pixels of one image (two chunks of output
 * rows, the second starting inside the image; functional executor only: two
 * thousand tiny gathers), and images of over 2^23 pixels (one image per
 * chunk, so the row indices stay below 2^24). */
static void test_leaf_chunks(void **state) {
    (void)state;
    const uint64_t in[4] = {1, 3, 5, 1}, out[4] = {1, 1030, 256, 1};
    check(NX_DT_FP8_E4M3, in, out, NULL, NULL, NULL, 0, NULL);
    const uint64_t big[4] = {2, 2900, 2900, 1}, small[4] = {2, 3, 2, 1};
    check(NX_DT_UINT8, big, small, NULL, "half_pixel", "round_prefer_ceil", 1, NULL);
}

static void expect_leaf_refusal(const uint64_t in[4], nx_dtype din, const uint64_t out[4], nx_dtype dout,
                                const attr_buf *a, const char *msg) {
    leaf_case c;
    make_case(&c, "refusal", din, in, dout, out, a);
    nx_error err;
    assert_int_equal(leaf_case_trace_leaf(&c, resize_nearest_fixed_dma_kernel, &err), -1);
    assert_string_equal(err.msg, msg);
    leaf_case_free(&c);
}

static void test_leaf_refusals(void **state) {
    (void)state;
    const uint64_t in[4] = {2, 4, 4, 3}, out[4] = {2, 8, 8, 3};
    attr_buf a;
    make_attrs(&a, out, NULL, NULL, NULL);
    expect_leaf_refusal(in, NX_DT_FP32, out, NX_DT_BF16, &a,
                        "operand 1 (out): dtype bf16 differs from operand 0 (data)'s fp32");
    const uint64_t c4[4] = {2, 8, 8, 4};
    expect_leaf_refusal(in, NX_DT_FP32, c4, NX_DT_FP32, &a,
                        "operand 1 (out): shape [2,8,8,4] must keep N 2 and C 3 of operand 0 (data)");
    make_attrs(&a, out, NULL, "tf_crop_and_resize", NULL);
    expect_leaf_refusal(in, NX_DT_FP32, out, NX_DT_FP32, &a,
                        "operand 0 (data): attribute coordinate_transformation_mode: 'tf_crop_and_resize' is not one of "
                        "asymmetric, half_pixel, align_corners, pytorch_half_pixel");
    const uint64_t big[4] = {1, 8192, 4096, 1}, big_o[4] = {1, 2, 2, 1};
    make_attrs(&a, big_o, NULL, NULL, NULL);
    expect_leaf_refusal(big, NX_DT_FP32, big_o, NX_DT_FP32, &a,
                        "operand 0 (data): an image of 8192 x 4096 pixels exceeds 2^24: the gather's row indices would "
                        "not be exact in fp32");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_onnx_examples),   cmocka_unit_test(test_rule_default),
        cmocka_unit_test(test_rule_refusals),       cmocka_unit_test(test_leaf_public_example),
        cmocka_unit_test(test_leaf_every_mode_pair), cmocka_unit_test(test_leaf_every_dtype),
        cmocka_unit_test(test_leaf_edge_shapes),    cmocka_unit_test(test_leaf_random_shapes),
        cmocka_unit_test(test_leaf_chunks),         cmocka_unit_test(test_leaf_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
