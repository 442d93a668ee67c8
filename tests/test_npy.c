/* Tests for isa/npy.c: .npy parse/serialize/load/save.
 *
 * The reference is numpy itself: the byte arrays below were written by
 * numpy 1.24.2 (np.save, and numpy.lib.format.write_array for versions 2.0
 * and 3.0; the call is in the comment above each). Reading them must give the
 * values in the comment, and writing the parsed array must give numpy's bytes
 * back exactly. Malformed files are built here byte by byte (not with the
 * serializer) and each class must give its exact one-line message. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, rmdir, opendir */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isa/npy.h"
#include "support.h"

/* ---- files written by numpy 1.24.2 ---------------------------------------- */

/* np.save(np.arange(1, 9, dtype='<f4').reshape(2, 4)) */
static const uint8_t np_fp32_2x4[160] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20,
    0x34, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40,
    0x00, 0x00, 0xa0, 0x40, 0x00, 0x00, 0xc0, 0x40, 0x00, 0x00, 0xe0, 0x40, 0x00, 0x00, 0x00, 0x41,
};
/* np.save(np.array(-7, dtype='<i2')) */
static const uint8_t np_int16_scalar[130] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x69, 0x32, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x29, 0x2c, 0x20,
    0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0xf9, 0xff,
};
/* np.save(np.array([(0x3f80,), (0xc000,), (0x7fc0,)], dtype=[('bf16', '<u2')])) */
static const uint8_t np_bf16_3[134] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x5b, 0x28, 0x27, 0x62, 0x66, 0x31, 0x36, 0x27, 0x2c, 0x20, 0x27, 0x3c,
    0x75, 0x32, 0x27, 0x29, 0x5d, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f,
    0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27,
    0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x33, 0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x80, 0x3f, 0x00, 0xc0, 0xc0, 0x7f,
};
/* np.save(np.zeros((2, 0), dtype=[('fp8_e4m3', '|u1')])) */
static const uint8_t np_e4m3_2x0[128] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x5b, 0x28, 0x27, 0x66, 0x70, 0x38, 0x5f, 0x65, 0x34, 0x6d, 0x33, 0x27,
    0x2c, 0x20, 0x27, 0x7c, 0x75, 0x31, 0x27, 0x29, 0x5d, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20,
    0x30, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
};
/* np.save(np.arange(8, dtype='|u1').reshape(1, 2, 1, 2, 1, 1, 2, 1)) */
static const uint8_t np_uint8_8d[136] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x7c, 0x75, 0x31, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x31, 0x2c, 0x20,
    0x32, 0x2c, 0x20, 0x31, 0x2c, 0x20, 0x32, 0x2c, 0x20, 0x31, 0x2c, 0x20, 0x31, 0x2c, 0x20, 0x32,
    0x2c, 0x20, 0x31, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
};
/* format.write_array(np.array([-1, 2**31 - 1, -2**31], dtype='<i4'), version=(2, 0)) */
static const uint8_t np_int32_v2[140] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x02, 0x00, 0x74, 0x00, 0x00, 0x00, 0x7b, 0x27, 0x64, 0x65,
    0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x69, 0x34, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f,
    0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61,
    0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x33,
    0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x00, 0x00, 0x80,
};
/* format.write_array(np.array([[1.5], [-2.0]], dtype='<f2'), version=(3, 0)) */
static const uint8_t np_fp16_v3[132] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x03, 0x00, 0x74, 0x00, 0x00, 0x00, 0x7b, 0x27, 0x64, 0x65,
    0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x32, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f,
    0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61,
    0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32,
    0x2c, 0x20, 0x31, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x3e, 0x00, 0xc0,
};

/* ---- helpers ----------------------------------------------------------------- */

static void parse_ok(const uint8_t *buf, size_t len, nx_npy *a) {
    nx_error err;
    memset(&err, 0, sizeof err);
    if (nx_npy_parse("in.npy", buf, len, a, &err) != 0) fail_msg("unexpected error: %s", err.msg);
}

static void expect_parse_error(const uint8_t *buf, size_t len, const char *msg) {
    nx_npy a;
    nx_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(nx_npy_parse("in.npy", buf, len, &a, &err), -1);
    assert_string_equal(err.msg, msg);
    assert_null(a.data);
}

static void check_shape(const nx_npy *a, nx_dtype dt, uint32_t ndims, const uint64_t *shape) {
    assert_int_equal(a->dtype, dt);
    assert_int_equal(a->ndims, ndims);
    for (uint32_t i = 0; i < ndims; i++) assert_int_equal(a->shape[i], shape[i]);
    assert_non_null(a->data);
}

/* Serialising what was parsed from a numpy 1.0 file must give the same bytes. */
static void check_rewrite_identical(const nx_npy *a, const uint8_t *file, size_t len) {
    uint8_t *out = NULL;
    size_t out_len = 0;
    nx_error err;
    if (nx_npy_serialize(a, &out, &out_len, &err) != 0) fail_msg("serialize: %s", err.msg);
    assert_int_equal(out_len, len);
    assert_memory_equal(out, file, len);
    free(out);
}

/* A file built by hand: magic, version MAJOR.0, the header length field
 * (2 bytes for 1.0, 4 for 2.0/3.0), the header text verbatim, then
 * data_len bytes of 0xab. Returns its length. */
static size_t build(uint8_t *out, size_t cap, unsigned major, const char *header, size_t data_len) {
    size_t hlen = strlen(header);
    size_t prefix = major == 1 ? 10 : 12;
    assert_true(prefix + hlen + data_len <= cap);
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)major;
    out[7] = 0;
    out[8] = (uint8_t)hlen;
    out[9] = (uint8_t)(hlen >> 8);
    if (prefix == 12) out[10] = out[11] = 0;
    memcpy(out + prefix, header, hlen);
    memset(out + prefix + hlen, 0xab, data_len);
    return prefix + hlen + data_len;
}

static void expect_header_error(const char *header, size_t data_len, const char *msg) {
    uint8_t buf[1024];
    size_t len = build(buf, sizeof buf, 1, header, data_len);
    expect_parse_error(buf, len, msg);
}

/* ---- reading numpy's files ------------------------------------------------------ */

static void test_numpy_fp32_2x4(void **state) {
    (void)state;
    nx_npy a;
    parse_ok(np_fp32_2x4, sizeof np_fp32_2x4, &a);
    check_shape(&a, NX_DT_FP32, 2, (const uint64_t[]){2, 4});
    assert_int_equal(a.nbytes, 32);
    assert_int_equal(nx_npy_elems(&a), 8);
    for (int i = 0; i < 8; i++) assert_true(nx_dtype_load(NX_DT_FP32, a.data + 4 * i) == (double)(i + 1));
    check_rewrite_identical(&a, np_fp32_2x4, sizeof np_fp32_2x4);
    nx_npy_free(&a);
    assert_null(a.data);
}

static void test_numpy_int16_scalar(void **state) {
    (void)state;
    nx_npy a;
    parse_ok(np_int16_scalar, sizeof np_int16_scalar, &a);
    check_shape(&a, NX_DT_INT16, 0, NULL);
    assert_int_equal(a.nbytes, 2);
    assert_int_equal(nx_npy_elems(&a), 1);
    assert_true(nx_dtype_load(NX_DT_INT16, a.data) == -7.0);
    check_rewrite_identical(&a, np_int16_scalar, sizeof np_int16_scalar);
    nx_npy_free(&a);
}

static void test_numpy_bf16_structured(void **state) {
    (void)state;
    nx_npy a;
    parse_ok(np_bf16_3, sizeof np_bf16_3, &a);
    check_shape(&a, NX_DT_BF16, 1, (const uint64_t[]){3});
    assert_int_equal(a.nbytes, 6);
    static const uint8_t raw[6] = {0x80, 0x3f, 0x00, 0xc0, 0xc0, 0x7f};
    assert_memory_equal(a.data, raw, 6);
    assert_true(nx_dtype_load(NX_DT_BF16, a.data) == 1.0);
    assert_true(nx_dtype_load(NX_DT_BF16, a.data + 2) == -2.0);
    check_rewrite_identical(&a, np_bf16_3, sizeof np_bf16_3);
    nx_npy_free(&a);
}

static void test_numpy_empty_fp8(void **state) {
    (void)state;
    nx_npy a;
    parse_ok(np_e4m3_2x0, sizeof np_e4m3_2x0, &a);
    check_shape(&a, NX_DT_FP8_E4M3, 2, (const uint64_t[]){2, 0});
    assert_int_equal(a.nbytes, 0);
    assert_int_equal(nx_npy_elems(&a), 0);
    check_rewrite_identical(&a, np_e4m3_2x0, sizeof np_e4m3_2x0);
    nx_npy_free(&a);
}

static void test_numpy_uint8_8_dims(void **state) {
    (void)state;
    nx_npy a;
    parse_ok(np_uint8_8d, sizeof np_uint8_8d, &a);
    check_shape(&a, NX_DT_UINT8, 8, (const uint64_t[]){1, 2, 1, 2, 1, 1, 2, 1});
    for (int i = 0; i < 8; i++) assert_int_equal(a.data[i], i);
    check_rewrite_identical(&a, np_uint8_8d, sizeof np_uint8_8d);
    nx_npy_free(&a);
}

static void test_numpy_version_2_and_3(void **state) {
    (void)state;
    nx_npy a;
    assert_int_equal(np_int32_v2[6], 2);
    parse_ok(np_int32_v2, sizeof np_int32_v2, &a);
    check_shape(&a, NX_DT_INT32, 1, (const uint64_t[]){3});
    assert_true(nx_dtype_load(NX_DT_INT32, a.data) == -1.0);
    assert_true(nx_dtype_load(NX_DT_INT32, a.data + 4) == 2147483647.0);
    assert_true(nx_dtype_load(NX_DT_INT32, a.data + 8) == -2147483648.0);
    nx_npy_free(&a);

    assert_int_equal(np_fp16_v3[6], 3);
    parse_ok(np_fp16_v3, sizeof np_fp16_v3, &a);
    check_shape(&a, NX_DT_FP16, 2, (const uint64_t[]){2, 1});
    assert_true(nx_dtype_load(NX_DT_FP16, a.data) == 1.5);
    assert_true(nx_dtype_load(NX_DT_FP16, a.data + 2) == -2.0);
    nx_npy_free(&a);
}

/* Headers numpy does not write but Python reads the same way. */
static void test_header_spellings(void **state) {
    (void)state;
    static const char *const headers[] = {
        /* keys in another order, double quotes, no trailing comma, tabs */
        "{\"shape\": (2,3), 'descr': \"<u2\",\t'fortran_order': False}\n",
        /* Python 2 long suffix, trailing comma in the tuple */
        "{'descr': '<u2', 'fortran_order': False, 'shape': (2L, 3L,), }   \n",
        /* '<' instead of '|' is accepted for one-byte types */
        "{'descr': [('fp8_e5m2', '<u1')], 'fortran_order': False, 'shape': (2, 3)}\n",
    };
    static const nx_dtype dts[] = {NX_DT_UINT16, NX_DT_UINT16, NX_DT_FP8_E5M2};
    for (size_t i = 0; i < 3; i++) {
        uint8_t buf[256];
        size_t data = 6 * nx_dtype_size(dts[i]);
        size_t len = build(buf, sizeof buf, 1, headers[i], data);
        nx_npy a;
        parse_ok(buf, len, &a);
        check_shape(&a, dts[i], 2, (const uint64_t[]){2, 3});
        assert_int_equal(a.nbytes, data);
        nx_npy_free(&a);
    }
}

/* ---- round trips ----------------------------------------------------------------- */

typedef struct shape_case {
    uint32_t ndims;
    uint64_t shape[NX_NPY_MAX_DIMS];
    uint64_t elems; /* computed by hand */
} shape_case;

static const shape_case SHAPES[] = {
    {0, {0}, 1},
    {1, {0}, 0},
    {1, {5}, 5},
    {2, {2, 3}, 6},
    {3, {3, 0, 2}, 0},
    {8, {1, 2, 1, 2, 1, 1, 2, 1}, 8},
    {2, {1000, 7}, 7000},
};

static void test_round_trip_every_dtype(void **state) {
    (void)state;
    for (int dt = 0; dt < NX_DT_COUNT; dt++) {
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
            const shape_case *sc = &SHAPES[s];
            nx_npy a;
            memset(&a, 0, sizeof a);
            a.dtype = (nx_dtype)dt;
            a.ndims = sc->ndims;
            memcpy(a.shape, sc->shape, sizeof a.shape);
            assert_int_equal(nx_npy_elems(&a), sc->elems);
            a.nbytes = sc->elems * nx_dtype_size((nx_dtype)dt);
            uint8_t *data = malloc(a.nbytes + 1);
            for (uint64_t i = 0; i < a.nbytes; i++) data[i] = (uint8_t)(i * 37 + (uint64_t)dt);
            a.data = data;

            uint8_t *file = NULL;
            size_t len = 0;
            nx_error err;
            if (nx_npy_serialize(&a, &file, &len, &err) != 0) fail_msg("serialize: %s", err.msg);
            /* 1.0 header, data aligned to 64 bytes as numpy does */
            assert_memory_equal(file, "\x93NUMPY\x01\x00", 8);
            size_t head = 10 + (size_t)(file[8] | (file[9] << 8));
            assert_int_equal(head % 64, 0);
            assert_int_equal(file[head - 1], '\n');
            assert_int_equal(len, head + a.nbytes);

            nx_npy b;
            parse_ok(file, len, &b);
            check_shape(&b, (nx_dtype)dt, sc->ndims, sc->shape);
            assert_int_equal(b.nbytes, a.nbytes);
            if (a.nbytes) assert_memory_equal(b.data, a.data, a.nbytes);
            nx_npy_free(&b);
            free(file);
            free(data);
        }
    }
}

/* ---- malformed files: one class each, exact messages --------------------------- */

static void test_bad_magic_and_version(void **state) {
    (void)state;
    expect_parse_error((const uint8_t *)"", 0, "in.npy: not a .npy file (bad magic)");
    expect_parse_error((const uint8_t *)"\x93NUMP", 5, "in.npy: not a .npy file (bad magic)");
    expect_parse_error((const uint8_t *)"PK\x03\x04 a zip, not npy", 22, "in.npy: not a .npy file (bad magic)");
    expect_parse_error((const uint8_t *)"\x93NUMPY\x01", 7,
                       "in.npy: truncated: file ends inside the .npy version bytes");
    expect_parse_error((const uint8_t *)"\x93NUMPY\x04\x00\x10\x00", 10,
                       "in.npy: unsupported .npy format version 4.0 (1.0, 2.0 and 3.0 are supported)");
    expect_parse_error((const uint8_t *)"\x93NUMPY\x01\x01\x10\x00", 10,
                       "in.npy: unsupported .npy format version 1.1 (1.0, 2.0 and 3.0 are supported)");
    expect_parse_error((const uint8_t *)"\x93NUMPY\x01\x00\x76", 9,
                       "in.npy: truncated: file ends inside the .npy header length (9 bytes)");
    expect_parse_error((const uint8_t *)"\x93NUMPY\x02\x00\x76\x00\x00", 11,
                       "in.npy: truncated: file ends inside the .npy header length (11 bytes)");
}

static void test_truncated_and_trailing(void **state) {
    (void)state;
    /* numpy's own file cut short: the header is 118 bytes, the file 50 */
    expect_parse_error(np_fp32_2x4, 50, "in.npy: truncated: header says 118 header bytes, file has 40");
    expect_parse_error(np_fp32_2x4, 128 + 8, "in.npy: truncated: header says 32 data bytes, file has 8");
    expect_parse_error(np_fp32_2x4, 128, "in.npy: truncated: header says 32 data bytes, file has 0");
    uint8_t longer[sizeof np_fp32_2x4 + 4];
    memcpy(longer, np_fp32_2x4, sizeof np_fp32_2x4);
    memset(longer + sizeof np_fp32_2x4, 0, 4);
    expect_parse_error(longer, sizeof longer, "in.npy: trailing data: header says 32 data bytes, file has 36");
    /* v2.0 header length field is 4 bytes: a huge one is a truncation, not a crash */
    uint8_t v2[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff, '{', '}', '\n', 0};
    expect_parse_error(v2, sizeof v2, "in.npy: truncated: header says 4294967295 header bytes, file has 4");
}

static void test_unsupported_dtypes(void **state) {
    (void)state;
    expect_header_error("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8,
                        "in.npy: big-endian dtype '>f4' is not supported (little-endian only)");
    expect_header_error("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16,
                        "in.npy: unsupported dtype '<c8'");
    expect_header_error("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }\n", 2,
                        "in.npy: unsupported dtype '|b1'");
    /* NumPy's 64-bit defaults: refused with the call that converts the file */
    expect_header_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", 16,
                        "in.npy: dtype float64 ('<f8') is not an nxsim type; convert it to fp32 with NumPy: "
                        "np.save('in.npy', np.load('in.npy').astype(np.float32))");
    expect_header_error("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }\n", 16,
                        "in.npy: dtype int64 ('<i8') is not an nxsim type; convert it to int32 with NumPy: "
                        "np.save('in.npy', np.load('in.npy').astype(np.int32))");
    expect_header_error("{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }\n", 16,
                        "in.npy: dtype uint64 ('<u8') is not an nxsim type; convert it to uint32 with NumPy: "
                        "np.save('in.npy', np.load('in.npy').astype(np.uint32))");
    expect_header_error("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }\n", 8,
                        "in.npy: unsupported dtype '|f4'");
    expect_header_error("{'descr': [('x', '<u2')], 'fortran_order': False, 'shape': (2,), }\n", 4,
                        "in.npy: unsupported dtype [('x', '<u2')]");
    expect_header_error("{'descr': [('bf16', '<u2'), ('y', '<u2')], 'fortran_order': False, 'shape': (2,), }\n", 8,
                        "in.npy: unsupported dtype [('bf16', '<u2'), ('y', '<u2')]");
    expect_header_error("{'descr': [('bf16', '>u2')], 'fortran_order': False, 'shape': (2,), }\n", 4,
                        "in.npy: big-endian dtype [('bf16', '>u2')] is not supported (little-endian only)");
    expect_header_error("{'descr': [('bf16', '<u2', (2,))], 'fortran_order': False, 'shape': (2,), }\n", 8,
                        "in.npy: unsupported dtype [('bf16', '<u2', (2,))]");
    expect_header_error("{'descr': [], 'fortran_order': False, 'shape': (2,), }\n", 0,
                        "in.npy: unsupported dtype []");
}

static void test_fortran_order(void **state) {
    (void)state;
    expect_header_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", 24,
                        "in.npy: fortran_order True is not supported (C order only)");
}

static void test_bad_headers(void **state) {
    (void)state;
    /* byte offsets count from the start of the file; the header starts at 10 */
    expect_header_error("{'descr': '<f4', 'fortran_order': False}\n", 4,
                        "in.npy: bad .npy header: missing key 'shape'");
    expect_header_error("{'descr': '<f4', 'foo': 1}\n", 4,
                        "in.npy: bad .npy header: unexpected key 'foo' at byte 27");
    expect_header_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}\n", 4,
                        "in.npy: bad .npy header: duplicate key 'descr' at byte 27");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (5)}\n", 20,
                        "in.npy: bad .npy header: shape must be a tuple; '(N)' is an int, write '(N,)'");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': [5]}\n", 20,
                        "in.npy: bad .npy header: expected '(' starting the shape tuple at byte 60, found '['");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}\n", 0,
                        "in.npy: bad .npy header: negative dimension in shape at byte 61");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}\n", 4,
                        "in.npy: shape has more than 8 dimensions");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,)}\n", 4,
                        "in.npy: bad .npy header: dimension at byte 61 does not fit 64 bits");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}\n", 4,
                        "in.npy: shape is too large (its byte size does not fit 64 bits)");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,)}\n", 4,
                        "in.npy: shape is too large (its byte size does not fit 64 bits)");
    expect_header_error("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}\n", 4,
                        "in.npy: bad .npy header: expected True or False at byte 44, found '0'");
    expect_header_error("{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}\n", 4,
                        "in.npy: bad .npy header: expected ',' or '}' after a value at byte 27, found 'f'");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x\n", 4,
                        "in.npy: bad .npy header: unexpected text after the dict at byte 66");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)\n", 4,
                        "in.npy: bad .npy header: expected ',' or '}' after a value at byte 65, found the end of the header");
    expect_header_error("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}\n", 4,
                        "in.npy: bad .npy header: escape sequence in a string at byte 23");
    expect_header_error("{'descr': '<f4\n', 'fortran_order': False, 'shape': (1,)}\n", 4,
                        "in.npy: bad .npy header: unterminated string at byte 20");
    expect_header_error("{'descr': '<f\r4', 'fortran_order': False, 'shape': (1,)}\n", 4,
                        "in.npy: bad .npy header: control character 0x0d in a string at byte 23");
    expect_header_error("", 0, "in.npy: bad .npy header: expected '{' starting the header dict at byte 10, found the end of the header");
    expect_header_error("\x01", 0, "in.npy: bad .npy header: expected '{' starting the header dict at byte 10, found byte 0x01");
}

/* ---- robustness: mutations of a valid file never crash -------------------------- */

static void parse_any(const uint8_t *buf, size_t len) {
    nx_npy a;
    nx_error err;
    memset(&err, 0, sizeof err);
    if (nx_npy_parse("in.npy", buf, len, &a, &err) == 0) {
        /* accepted: the array is self-consistent */
        assert_true(nx_dtype_is_valid((int)a.dtype));
        assert_true(a.ndims <= NX_NPY_MAX_DIMS);
        assert_int_equal(a.nbytes, nx_npy_elems(&a) * nx_dtype_size(a.dtype));
        assert_non_null(a.data);
        nx_npy_free(&a);
    } else {
        /* rejected: one line naming the file, no control characters */
        assert_int_equal(strncmp(err.msg, "in.npy: ", 8), 0);
        for (const char *c = err.msg; *c; c++) assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
        assert_null(a.data);
    }
}

static void test_mutations_never_crash(void **state) {
    (void)state;
    static const uint8_t *const files[] = {np_fp32_2x4, np_bf16_3, np_int32_v2};
    static const size_t lens[] = {sizeof np_fp32_2x4, sizeof np_bf16_3, sizeof np_int32_v2};
    static const uint8_t values[] = {0x00, 0xff, '(', ')', ',', '\'', '"', '[', ']', '{', '}', ':', '9', ' ', '\n', 'L'};
    uint8_t buf[512];
    for (size_t f = 0; f < 3; f++) {
        assert_true(lens[f] <= sizeof buf);
        for (size_t cut = 0; cut <= lens[f]; cut++) parse_any(files[f], cut);
        for (size_t at = 0; at < lens[f]; at++) {
            for (int bit = 0; bit < 8; bit++) {
                memcpy(buf, files[f], lens[f]);
                buf[at] ^= (uint8_t)(1u << bit);
                parse_any(buf, lens[f]);
            }
            for (size_t v = 0; v < sizeof values; v++) {
                memcpy(buf, files[f], lens[f]);
                buf[at] = values[v];
                parse_any(buf, lens[f]);
            }
        }
        /* several random bytes at once */
        test_rng rng = {0x1234 + f};
        for (int round = 0; round < 20000; round++) {
            memcpy(buf, files[f], lens[f]);
            int n = 1 + (int)(test_rng_next(&rng) % 4);
            for (int k = 0; k < n; k++) buf[test_rng_next(&rng) % lens[f]] = (uint8_t)test_rng_next(&rng);
            parse_any(buf, lens[f]);
        }
    }
}

/* ---- serialize errors ----------------------------------------------------------- */

static void test_serialize_rejects_inconsistent_arrays(void **state) {
    (void)state;
    uint8_t data[8] = {0};
    uint8_t *out = (uint8_t *)1;
    size_t len = 1;
    nx_error err;
    nx_npy a = {.dtype = (nx_dtype)99, .ndims = 1, .shape = {2}, .data = data, .nbytes = 8};
    assert_int_equal(nx_npy_serialize(&a, &out, &len, &err), -1);
    assert_string_equal(err.msg, "cannot write .npy: invalid dtype code 99");
    assert_null(out);
    a.dtype = NX_DT_FP32;
    a.nbytes = 4;
    assert_int_equal(nx_npy_serialize(&a, &out, &len, &err), -1);
    assert_string_equal(err.msg, "cannot write .npy: shape needs 8 data bytes, array has 4");
    a.ndims = 9;
    assert_int_equal(nx_npy_serialize(&a, &out, &len, &err), -1);
    assert_string_equal(err.msg, "cannot write .npy: 9 dimensions (at most 8)");
}

/* ---- files ------------------------------------------------------------------------ */

static void test_save_load_and_atomicity(void **state) {
    (void)state;
    char dir[] = "/tmp/nxsim_test_npy_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], missing[256], subdir[256];
    snprintf(path, sizeof path, "%s/a.npy", dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir/a.npy", dir);
    snprintf(subdir, sizeof subdir, "%s/d.npy", dir);
    nx_error err;

    /* save, load back, and compare with numpy's bytes */
    nx_npy a;
    parse_ok(np_fp32_2x4, sizeof np_fp32_2x4, &a);
    if (nx_npy_save(path, &a, &err) != 0) fail_msg("save: %s", err.msg);
    nx_npy b;
    if (nx_npy_load(path, &b, &err) != 0) fail_msg("load: %s", err.msg);
    check_shape(&b, NX_DT_FP32, 2, (const uint64_t[]){2, 4});
    assert_memory_equal(b.data, a.data, 32);
    nx_npy_free(&b);
    FILE *f = fopen(path, "rb");
    uint8_t back[256];
    size_t n = fread(back, 1, sizeof back, f);
    fclose(f);
    assert_int_equal(n, sizeof np_fp32_2x4);
    assert_memory_equal(back, np_fp32_2x4, n);

    /* overwriting replaces the whole file */
    nx_npy s;
    parse_ok(np_int16_scalar, sizeof np_int16_scalar, &s);
    if (nx_npy_save(path, &s, &err) != 0) fail_msg("save: %s", err.msg);
    if (nx_npy_load(path, &b, &err) != 0) fail_msg("load: %s", err.msg);
    check_shape(&b, NX_DT_INT16, 0, NULL);
    nx_npy_free(&b);
    nx_npy_free(&s);
    assert_int_equal(test_dir_entries(dir), 1);

    /* into a directory that does not exist: an error naming the path, nothing created */
    assert_int_equal(nx_npy_save(missing, &a, &err), -1);
    char want[512];
    snprintf(want, sizeof want, "%s: cannot create: No such file or directory", missing);
    assert_string_equal(err.msg, want);
    struct stat st;
    assert_int_equal(stat(missing, &st), -1);
    assert_int_equal(test_dir_entries(dir), 1);

    /* rename over a directory fails late: the temporary must be removed */
    assert_int_equal(mkdir(subdir, 0755), 0);
    assert_int_equal(nx_npy_save(subdir, &a, &err), -1);
    assert_int_equal(strncmp(err.msg, subdir, strlen(subdir)), 0);
    assert_int_equal(test_dir_entries(dir), 2); /* a.npy and the d.npy directory only */
    assert_int_equal(rmdir(subdir), 0);

    /* load errors name the file */
    assert_int_equal(nx_npy_load(missing, &b, &err), -1);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing);
    assert_string_equal(err.msg, want);
    assert_null(b.data);

    nx_npy_free(&a);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_fp32_2x4),
        cmocka_unit_test(test_numpy_int16_scalar),
        cmocka_unit_test(test_numpy_bf16_structured),
        cmocka_unit_test(test_numpy_empty_fp8),
        cmocka_unit_test(test_numpy_uint8_8_dims),
        cmocka_unit_test(test_numpy_version_2_and_3),
        cmocka_unit_test(test_header_spellings),
        cmocka_unit_test(test_round_trip_every_dtype),
        cmocka_unit_test(test_bad_magic_and_version),
        cmocka_unit_test(test_truncated_and_trailing),
        cmocka_unit_test(test_unsupported_dtypes),
        cmocka_unit_test(test_fortran_order),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_mutations_never_crash),
        cmocka_unit_test(test_serialize_rejects_inconsistent_arrays),
        cmocka_unit_test(test_save_load_and_atomicity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
