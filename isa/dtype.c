/* nxsim data types: names, sizes, and the element load/store conversions.
 *
 * Every narrowing float conversion is one generic routine, encode_binary()
 * (isa/dtype_codec.h), that rounds the exact double value once (RNE,
 * subnormals kept) to a binary format with E exponent bits and M mantissa
 * bits. The fp32 and bf16 stores have faster paths that give the same bits
 * as encode_binary() (see the comments there); the tests check every path
 * against an independent reference. The run converters over many elements
 * are in dtype_run.c. Memory is little-endian regardless of the host
 * (isa/bytes.h). */
#include "isa/dtype.h"

#include <string.h>

#include "isa/bytes.h"
#include "isa/dtype_codec.h"
#include "isa/dtype_lanes.h"

static const char *const dtype_names[NX_DT_COUNT] = {
    "fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8",
    "uint8", "int16", "uint16", "int32", "uint32",
};

static const unsigned char dtype_sizes[NX_DT_COUNT] = {4, 2, 2, 1, 1, 1, 1, 2, 2, 4, 4};

int nx_dtype_is_valid(int code) { return code >= 0 && code < NX_DT_COUNT; }

size_t nx_dtype_size(nx_dtype dt) { return nx_dtype_is_valid((int)dt) ? dtype_sizes[dt] : 0; }

const char *nx_dtype_name(nx_dtype dt) { return nx_dtype_is_valid((int)dt) ? dtype_names[dt] : NULL; }

int nx_dtype_from_name(const char *name, nx_dtype *out)
{
    if (name == NULL || out == NULL) return -1;
    for (int i = 0; i < NX_DT_COUNT; i++) {
        if (strcmp(name, dtype_names[i]) == 0) {
            *out = (nx_dtype)i;
            return 0;
        }
    }
    return -1;
}

int nx_dtype_is_float(nx_dtype dt) { return nx_dtype_is_valid((int)dt) && dt <= NX_DT_FP8_E5M2; }

int nx_dtype_is_signed_int(nx_dtype dt)
{
    return dt == NX_DT_INT8 || dt == NX_DT_INT16 || dt == NX_DT_INT32;
}

/* The 16-bit formats share their widening with the PE's input conversion
 * (isa/bytes.h), so a NaN reads the same on every path. */
float nx_bf16_to_f32(uint16_t bits) { return nx_bf16_bits_to_f32(bits); }
float nx_fp16_to_f32(uint16_t bits) { return nx_fp16_bits_to_f32(bits); }
float nx_fp8_e4m3_to_f32(uint8_t bits) { return decode_binary(bits, 4, 3, 0); }
float nx_fp8_e5m2_to_f32(uint8_t bits) { return decode_binary(bits, 5, 2, 1); }

uint16_t nx_f32_to_bf16(float value) { return bf16_from_f32_bits(nx_f32_bits(value)); }
uint16_t nx_f32_to_fp16(float value) { return (uint16_t)encode_fp16((double)value); }
uint8_t nx_f32_to_fp8_e4m3(float value) { return (uint8_t)encode_e4m3((double)value); }
uint8_t nx_f32_to_fp8_e5m2(float value) { return (uint8_t)encode_e5m2((double)value); }

/* ---- loads and stores ------------------------------------------------------ */

/* The element routines are shared with the run converters and the fused
 * kernels (isa/dtype_lanes.h), so every path gives the same bits. An invalid
 * code loads 0 and stores nothing (validation rejects these before
 * execution). */
double nx_dtype_load(nx_dtype dt, const void *src) { return elem_load(dt, src); }

void nx_dtype_store(nx_dtype dt, void *dst, double value) { elem_store(dt, dst, value); }
