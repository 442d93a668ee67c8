/* Whole-file reads and atomic writes (fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nx_read_file(const char *path, uint8_t **buf, size_t *len, nx_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return nx_fail(err, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    int rc = b ? 0 : nx_fail(err, "%s: out of memory", path);
    while (rc == 0) {
        if (cap - n < 2) { /* room for one more byte and the NUL */
            uint8_t *bigger = cap <= SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
            if (!bigger) {
                rc = nx_fail(err, "%s: out of memory after %zu bytes", path, n);
                break;
            }
            b = bigger;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) rc = nx_fail(err, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (rc != 0) {
        free(b);
        return rc;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

static void release(nx_atomic_file *af) {
    free(af->path);
    free(af->tmp);
    af->f = NULL;
    af->path = af->tmp = NULL;
}

int nx_atomic_open(nx_atomic_file *af, const char *path, nx_error *err) {
    memset(af, 0, sizeof *af);
    size_t plen = strlen(path);
    af->path = malloc(plen + 1);
    af->tmp = malloc(plen + 48);
    if (!af->path || !af->tmp) {
        release(af);
        return nx_fail(err, "%s: out of memory", path);
    }
    memcpy(af->path, path, plen + 1);
    /* A fresh name in the same directory, so that rename is atomic; open()
     * applies the umask to 0666 as fopen would for a new file. */
    int fd = -1;
    for (unsigned attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(af->tmp, plen + 48, "%s.tmp.%ld.%u", path, (long)getpid(), attempt);
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd >= 0) af->f = fdopen(fd, "wb");
    if (!af->f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(af->tmp);
        }
        release(af);
        return nx_fail(err, "%s: cannot create: %s", path, strerror(e));
    }
    return 0;
}

void nx_atomic_abort(nx_atomic_file *af) {
    if (af->f) {
        fclose(af->f);
        unlink(af->tmp);
    }
    release(af);
}

int nx_atomic_commit(nx_atomic_file *af, nx_error *err) {
    if (!af->f) {
        release(af);
        return nx_fail(err, "atomic write: commit without a successful open");
    }
    /* errno is only meaningful for the call that failed: keep the first. */
    int e = 0;
    if (ferror(af->f)) e = EIO;
    if (!e && fflush(af->f) != 0) e = errno;
    if (!e && fsync(fileno(af->f)) != 0) e = errno;
    if (fclose(af->f) != 0 && !e) e = errno;
    if (!e && rename(af->tmp, af->path) != 0) e = errno;
    if (e) unlink(af->tmp);
    int rc = e ? nx_fail(err, "%s: cannot write: %s", af->path, strerror(e)) : 0;
    release(af);
    return rc;
}

int nx_write_file_atomic(const char *path, const void *buf, size_t len, nx_error *err) {
    nx_atomic_file af;
    if (nx_atomic_open(&af, path, err) != 0) return -1;
    if (len > 0 && fwrite(buf, 1, len, af.f) != len) {
        int e = errno;
        nx_atomic_abort(&af);
        return nx_fail(err, "%s: cannot write: %s", path, strerror(e));
    }
    return nx_atomic_commit(&af, err);
}
