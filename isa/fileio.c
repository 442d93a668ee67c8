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

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int nx_write_file_atomic(const char *path, const void *buf, size_t len, nx_error *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 48);
    if (!tmp) return nx_fail(err, "%s: out of memory", path);
    /* A fresh name in the same directory, so that rename is atomic. */
    int fd = -1;
    for (unsigned attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(tmp, plen + 48, "%s.tmp.%ld.%u", path, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return nx_fail(err, "%s: cannot create: %s", path, strerror(e));
    }
    int ok = write_all(fd, buf, len) == 0 && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) unlink(tmp);
    free(tmp);
    if (!ok) return nx_fail(err, "%s: cannot write: %s", path, strerror(e));
    return 0;
}
