/* File and program I/O for the subcommands (see cli/io.h). */
#define _POSIX_C_SOURCE 200809L /* open/write/fsync/unlink/getpid */

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isa/asm.h"
#include "isa/encode.h"

int cli_read_file(const char *path, uint8_t **buf, size_t *len, nx_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return nx_fail(err, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    int rc = 0;
    if (!b) rc = nx_fail(err, "%s: out of memory", path);
    while (rc == 0) {
        if (cap - n < 2) { /* room for one more byte and the NUL */
            uint8_t *nb = cap <= SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
            if (!nb) {
                rc = nx_fail(err, "%s: out of memory after %zu bytes", path, n);
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) rc = nx_fail(err, "%s: read error: %s", path, strerror(errno));
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

int cli_write_atomic(const char *path, const void *buf, size_t len, nx_error *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 48);
    if (!tmp) return nx_fail(err, "%s: out of memory", path);
    /* Exclusive create with 0666 (minus umask), like any ordinary output. */
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

int cli_is_nxb(const uint8_t *buf, size_t len) {
    return len >= 4 && memcmp(buf, NX_NXB_MAGIC, 4) == 0;
}

int cli_load_program(const char *path, nx_program *out, nx_error *err) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (cli_read_file(path, &buf, &len, err) != 0) return -1;
    int rc;
    if (cli_is_nxb(buf, len)) {
        rc = nx_program_decode(buf, len, out, err);
        if (rc != 0) nx_fail_prefix(err, "%s", path);
    } else {
        rc = nx_assemble(path, (const char *)buf, len, out, err);
    }
    free(buf);
    return rc;
}

static int is_preset(const char *name) {
    for (const char *const *p = nx_machine_presets(); *p; p++)
        if (strcmp(*p, name) == 0) return 1;
    return 0;
}

int cli_load_machine(const char *spec, const nx_program *p, const char *prog_path, nx_machine *out,
                     nx_error *err) {
    if (spec) return nx_machine_load(spec, out, err);
    const char *name = p->machine[0] ? p->machine : nx_machine_default();
    if (!is_preset(name)) {
        char list[128] = "";
        size_t used = 0;
        for (const char *const *q = nx_machine_presets(); *q; q++) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *q);
            if (n < 0 || (size_t)n >= sizeof list - used) break;
            used += (size_t)n;
        }
        return nx_fail(err,
                       "%s: unknown machine '%s' (presets: %s); for a machine file pass "
                       "--machine FILE.json",
                       prog_path, name, list);
    }
    return nx_machine_load(name, out, err);
}
