/* Whole-file reads and atomic writes, shared by everything that loads or
 * saves a file (.nxs, .nxb, .npy, machine descriptions, CLI outputs,
 * profiles, waveforms). Messages are one line naming the path (quoted by
 * nx_msg_quote, so a name holding control bytes stays one line):
 * "PATH: cannot open: <strerror>", "PATH: cannot read: <strerror>",
 * "PATH: larger than N bytes (LIMIT)", "PATH: cannot create: ...",
 * "PATH: cannot write: ...".
 *
 * What an output path names decides how it is written (docs/parts/security.md):
 *   - a regular file, or nothing yet: replaced atomically (a temporary file
 *     beside it, renamed over it; an existing file keeps its mode);
 *   - a symbolic link: followed (up to 40 links); its final target is
 *     treated as above, so the link stays a link and the temporary lies in
 *     the target's directory;
 *   - anything else that exists (a device such as /dev/null or /dev/full, a
 *     FIFO, a terminal) and the standard streams (/dev/stdout, /dev/stderr,
 *     /dev/fd/N, /proc/self/fd/N): written through, never renamed over or
 *     removed; the bytes are staged in a temporary file in $TMPDIR (or /tmp)
 *     and copied to the target when the output is committed, so a failed
 *     run sends nothing;
 *   - a directory, or a link loop: refused. */
#ifndef NXSIM_ISA_FILEIO_H
#define NXSIM_ISA_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reads ---------------------------------------------------------------- */

/* The default cap of nx_read_file: no program, op or machine file is near it,
 * and no input can make a read take more memory than this by surprise. */
#define NX_READ_MAX_DEFAULT ((uint64_t)1 << 30) /* 1 GiB */

/* Reads the whole file (regular file, pipe or device) into a malloc'd buffer
 * the caller frees; the buffer holds one extra NUL byte after *len bytes so
 * text parsers may treat it as a string. At most `max` bytes: a regular file
 * larger than that is refused before anything is read, a stream after max + 1
 * bytes ("PATH: larger than MAX bytes (WHAT)"; `what` names the limit, e.g.
 * "the limit for a program file"). */
int nx_read_file_max(const char *path, uint64_t max, const char *what, uint8_t **buf, size_t *len,
                     nx_error *err);
/* nx_read_file_max with NX_READ_MAX_DEFAULT. */
int nx_read_file(const char *path, uint8_t **buf, size_t *len, nx_error *err);

/* ---- file identity ----------------------------------------------------------- */

/* What a path names, to tell whether two paths are one file (an output that
 * would overwrite an input, two outputs into one file) by device and inode,
 * never by spelling: "a.npy", "./a.npy" and a link to it are one file. For
 * a path that does not exist yet, the resolved path (its directory by
 * realpath, links followed) stands in. */
typedef struct nx_file_id {
    int exists;
    int regular;       /* exists and is a regular file (or does not exist) */
    dev_t dev;
    ino_t ino;
    char resolved[4096]; /* when !exists */
} nx_file_id;

/* 0, or -1 for a path that cannot be resolved (a link loop, a name too long;
 * a missing directory is not an error: the write will report it). */
int nx_file_identify(const char *path, nx_file_id *id, nx_error *err);
/* 1 if a and b name the same file. */
int nx_file_same(const nx_file_id *a, const nx_file_id *b);

/* ---- atomic writes ------------------------------------------------------------ */

/* An output written atomically, for writers that stream (stdio) rather than
 * hand over one buffer. nx_atomic_open resolves `path` (above) and creates a
 * fresh temporary file for it, exclusively, mode 0666 less the umask (the
 * mode of the file it replaces, if any), opened as af->f; the caller writes
 * to af->f, then either nx_atomic_commit (flush, fsync, then rename over the
 * target, or copy to a written-through target) or nx_atomic_abort (close,
 * remove). nx_atomic_sync does commit's first half (everything that can fail
 * for a replaced file), so several outputs can be synced first and committed
 * together. After a failed open, or after commit or abort (whatever they
 * return), af holds nothing: the temporary file is gone or renamed, af->f is
 * NULL. Commit fails if any write to af->f failed, and then removes the
 * temporary: a replaced target is either the complete new file or untouched,
 * never a partial output.
 * Messages: "PATH: cannot create: <strerror>", "PATH: is a directory",
 * "PATH: cannot write: <strerror>", "PATH: out of memory". */
typedef struct nx_atomic_file {
    FILE *f;      /* the temporary file, open for writing and reading */
    char *path;   /* owned: the path as given (for messages) */
    char *target; /* owned: what is written: the path with links followed */
    char *tmp;    /* owned: the temporary's name */
    int through;  /* 1: copy to target at commit (device, FIFO, stream) */
    int fd;       /* through a standard stream: its descriptor (else -1) */
    int synced;   /* nx_atomic_sync succeeded */
    int existed;  /* the target existed before (a replaced file) */
    mode_t mode;  /* the replaced file's permission bits */
} nx_atomic_file;

int nx_atomic_open(nx_atomic_file *af, const char *path, nx_error *err);
/* The same, with the temporary at `tmp` (created exclusively; it must lie on
 * the target's file system, or the commit fails): for a file that a library
 * writes by name (a waveform), staged at a name the caller chose. */
int nx_atomic_open_at(nx_atomic_file *af, const char *path, const char *tmp, nx_error *err);
int nx_atomic_sync(nx_atomic_file *af, nx_error *err);
int nx_atomic_commit(nx_atomic_file *af, nx_error *err);
void nx_atomic_abort(nx_atomic_file *af);

/* The whole of buf through nx_atomic_open / fwrite / nx_atomic_commit. */
int nx_write_file_atomic(const char *path, const void *buf, size_t len, nx_error *err);

/* "1.5 GiB", "512 KiB", "37 bytes" into buf (for messages about sizes). */
const char *nx_format_bytes(uint64_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
