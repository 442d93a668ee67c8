/* Whole-file reads and atomic writes, shared by everything that loads or
 * saves a file (.nxs, .nxb, .npy, machine descriptions, CLI outputs).
 * Messages are one line naming the path: "PATH: cannot open: <strerror>",
 * "PATH: cannot read: <strerror>", "PATH: cannot create: ...",
 * "PATH: cannot write: ...". */
#ifndef NXSIM_ISA_FILEIO_H
#define NXSIM_ISA_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the whole file (regular file or pipe) into a malloc'd buffer the
 * caller frees; the buffer holds one extra NUL byte after *len bytes so text
 * parsers may treat it as a string. */
int nx_read_file(const char *path, uint8_t **buf, size_t *len, nx_error *err);

/* Writes buf to a fresh temporary file beside `path` (created exclusively,
 * mode 0666 less the umask, like any output), fsyncs it and renames it over
 * `path`. On any failure the temporary file is removed and `path` is left as
 * it was: never a partial output. */
int nx_write_file_atomic(const char *path, const void *buf, size_t len, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
