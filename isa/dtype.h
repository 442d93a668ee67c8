/* nxsim ISA data types and conversions.
 *
 * Every tensor element in HBM, SBUF and PSUM has one of these types. Engines
 * compute on an internal "engine value" (a C double that always holds either an
 * fp32-representable number or an exact 32-bit integer) and convert on read and
 * on write. The conversion rules, per format, are the contract written down in
 * docs/ISA.md ("Data types"); in short:
 *
 *   float -> narrower float   round to nearest, ties to even (RNE).
 *                             fp32/bf16/fp16/fp8_e5m2: overflow -> +-Inf (IEEE).
 *                             fp8_e4m3 (OCP "e4m3fn": no Inf, max 448): a finite
 *                             value that rounds beyond 448 and +-Inf saturate to
 *                             +-448; NaN stays NaN (0x7f / 0xff).
 *                             Subnormals are kept (no flush to zero); NaN stays
 *                             NaN (quiet, sign kept, payload dropped).
 *   float -> integer          RNE, then saturate to the integer range;
 *                             NaN -> 0; +Inf -> max; -Inf -> min; -0 -> 0.
 *   integer -> float          exact where representable, otherwise RNE.
 *   integer -> integer        saturate to the destination range.
 *
 * Values in memory are little-endian.
 */
#ifndef NXSIM_ISA_DTYPE_H
#define NXSIM_ISA_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The numeric codes are part of the .nxb encoding: never renumber. */
typedef enum nx_dtype {
    NX_DT_FP32 = 0,
    NX_DT_BF16 = 1,
    NX_DT_FP16 = 2,
    NX_DT_FP8_E4M3 = 3,
    NX_DT_FP8_E5M2 = 4,
    NX_DT_INT8 = 5,
    NX_DT_UINT8 = 6,
    NX_DT_INT16 = 7,
    NX_DT_UINT16 = 8,
    NX_DT_INT32 = 9,
    NX_DT_UINT32 = 10,
    NX_DT_COUNT = 11
} nx_dtype;

/* Size of one element in bytes; 0 for an invalid code. */
size_t nx_dtype_size(nx_dtype dt);
/* Assembly / CLI name ("fp32", "bf16", "fp8_e4m3", ...); NULL for an invalid code. */
const char *nx_dtype_name(nx_dtype dt);
/* Parses a name made by nx_dtype_name. Returns 0 and sets *out, or -1. */
int nx_dtype_from_name(const char *name, nx_dtype *out);
int nx_dtype_is_float(nx_dtype dt);
int nx_dtype_is_signed_int(nx_dtype dt);
int nx_dtype_is_valid(int code);

/* Reads one element at `src` (unaligned access is fine) and returns its
 * engine value: floats are widened exactly, integers are exact. */
double nx_dtype_load(nx_dtype dt, const void *src);
/* Converts an engine value to `dt` by the rules above and stores it at `dst`.
 * The rounding is a single rounding of the exact value (an int32 engine value
 * going to bf16 is not first rounded to fp32). */
void nx_dtype_store(nx_dtype dt, void *dst, double value);

/* Run converters: n elements `step` bytes apart (any step, 0 and negative
 * included; any alignment). nx_dtype_load_run sets out[i] to exactly
 * nx_dtype_load(dt, src + i * step), bit for bit; nx_dtype_store_run writes
 * exactly the bytes of nx_dtype_store(dt, dst + i * step, in[i]) for i = 0,
 * 1, ..., n-1 in that order (a step of 0 leaves the last value). They are
 * the fast paths of the operand views (isa/access.h) and the DMA casts:
 * contiguous runs vectorise. in/out must not overlap the memory run. */
void nx_dtype_load_run(nx_dtype dt, const void *src, int64_t step, uint64_t n, double *out);
void nx_dtype_store_run(nx_dtype dt, void *dst, int64_t step, uint64_t n, const double *in);
/* The same over a walk of nd <= 4 dims (innermost last; count[k] elements
 * step[k] bytes apart), in row-major order: element i of the walk is
 * out[i] / in[i]. Short runs cost no call each (the operand views' rows). */
void nx_dtype_load_walk(nx_dtype dt, const void *base, uint32_t nd, const uint64_t *count, const int64_t *step,
                        double *out);
void nx_dtype_store_walk(nx_dtype dt, void *base, uint32_t nd, const uint64_t *count, const int64_t *step,
                         const double *in);
/* nx_dtype_store_walk of only the elements i whose pred[i] != 0 (NaN is
 * nonzero); the others are not written. */
void nx_dtype_store_walk_where(nx_dtype dt, void *base, uint32_t nd, const uint64_t *count, const int64_t *step,
                               const double *in, const double *pred);

/* n packed elements of dt rewritten as a load and a store of the same
 * dtype leave them: every NaN becomes its dtype's canonical NaN with its
 * sign (docs/parts/dtypes.md), everything else is kept bit for bit (that
 * round trip is exact for every other value). A same-dtype tensor_copy
 * is a bit copy plus this. */
void nx_dtype_canonical_nans(nx_dtype dt, void *packed, uint64_t n);

/* Narrow helpers used by the loaders/stores and by tests. */
float nx_bf16_to_f32(uint16_t bits);
uint16_t nx_f32_to_bf16(float value);
float nx_fp16_to_f32(uint16_t bits);
uint16_t nx_f32_to_fp16(float value);
float nx_fp8_e4m3_to_f32(uint8_t bits);
uint8_t nx_f32_to_fp8_e4m3(float value);
float nx_fp8_e5m2_to_f32(uint8_t bits);
uint8_t nx_f32_to_fp8_e5m2(float value);

/* Rounds an engine value to fp32 (RNE, overflow -> Inf): what every arithmetic
 * ALU op does to its inputs and its result. */
static inline double nx_fp32_round(double value) { return (double)(float)value; }

#ifdef __cplusplus
}
#endif

#endif
