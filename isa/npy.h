/* .npy read and write (format version 1.0/2.0/3.0 read, 1.0 written; little-
 * endian, C order) for every ISA dtype. Standard numpy descrs are used where
 * numpy has the type ('<f4','<f2','|i1','|u1','<i2','<u2','<i4','<u4'); the
 * three types numpy lacks are stored as one-field structured types whose
 * field name says what the raw bits are:
 *   bf16      [('bf16', '<u2')]
 *   fp8_e4m3  [('fp8_e4m3', '|u1')]
 *   fp8_e5m2  [('fp8_e5m2', '|u1')]
 * (numpy loads these; `a['bf16']` is the raw uint16 view). */
#ifndef NXSIM_ISA_NPY_H
#define NXSIM_ISA_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NX_NPY_MAX_DIMS 8

typedef struct nx_npy {
    nx_dtype dtype;
    uint32_t ndims;                 /* 0 = scalar */
    uint64_t shape[NX_NPY_MAX_DIMS];
    uint8_t *data;                  /* malloc'd, element bytes in C order */
    uint64_t nbytes;
} nx_npy;

/* Parses a whole .npy file image. Errors name `name` (the path) and what is
 * wrong (bad magic, unsupported descr, fortran_order, size mismatch...). */
int nx_npy_parse(const char *name, const uint8_t *buf, size_t len, nx_npy *out, nx_error *err);
/* Loads a file of at most `max` bytes (`what` names the limit in the
 * message: fileio.h); nx_npy_load's limit is NX_READ_MAX_DEFAULT. The file
 * image and the array are both held while parsing: twice the data. */
int nx_npy_load_max(const char *path, uint64_t max, const char *what, nx_npy *out, nx_error *err);
int nx_npy_load(const char *path, nx_npy *out, nx_error *err);
/* Serialises to a malloc'd buffer. */
int nx_npy_serialize(const nx_npy *a, uint8_t **out, size_t *len, nx_error *err);
/* Writes atomically (temp + rename): no partial file on failure. */
int nx_npy_save(const char *path, const nx_npy *a, nx_error *err);
void nx_npy_free(nx_npy *a);
uint64_t nx_npy_elems(const nx_npy *a);

#ifdef __cplusplus
}
#endif

#endif
