/* Whole-file reads and atomic writes, shared by everything that loads or
 * saves a file (.nxs, .nxb, .npy, machine descriptions, CLI outputs).
 * Messages are one line naming the path: "PATH: cannot open: <strerror>",
 * "PATH: cannot read: <strerror>", "PATH: cannot create: ...",
 * "PATH: cannot write: ...". */
#ifndef NXSIM_ISA_FILEIO_H
#define NXSIM_ISA_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the whole file (regular file or pipe) into a malloc'd buffer the
 * caller frees; the buffer holds one extra NUL byte after *len bytes so text
 * parsers may treat it as a string. */
int nx_read_file(const char *path, uint8_t **buf, size_t *len, nx_error *err);

/* An output written atomically, for writers that stream (stdio) rather than
 * hand over one buffer. nx_atomic_open creates a fresh temporary file beside
 * `path` ("PATH.tmp.PID.N", created exclusively, mode 0666 less the umask,
 * like any output) and opens it as af->f; the caller writes to af->f, then
 * either nx_atomic_commit (flush, fsync, close, rename over `path`) or
 * nx_atomic_abort (close, remove). After a failed open, or after commit or
 * abort (whatever they return), af holds nothing: the temporary file is gone
 * or renamed, af->f is NULL. Commit fails if any write to af->f failed, and
 * then removes the temporary: `path` is either the complete new file or
 * untouched, never a partial output.
 * Messages: "PATH: cannot create: <strerror>", "PATH: cannot write: <strerror>",
 * "PATH: out of memory". */
typedef struct nx_atomic_file {
    FILE *f;    /* the temporary file, open for writing */
    char *path; /* owned copies of the target and the temporary's names */
    char *tmp;
} nx_atomic_file;

int nx_atomic_open(nx_atomic_file *af, const char *path, nx_error *err);
int nx_atomic_commit(nx_atomic_file *af, nx_error *err);
void nx_atomic_abort(nx_atomic_file *af);

/* The whole of buf through nx_atomic_open / fwrite / nx_atomic_commit. */
int nx_write_file_atomic(const char *path, const void *buf, size_t len, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
