/* Whole-file reads and atomic writes (fileio.h). */
#define _XOPEN_SOURCE 700 /* realpath (plus POSIX.1-2008: lstat, readlink, mkstemp) */

#include "fileio.h"

#include "strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINKS 40 /* as the kernel's MAXSYMLINKS */

/* ---- messages ------------------------------------------------------------------ */

static int fail_path(nx_error *err, const char *path, const char *what, int e) {
    nx_quoted q;
    return nx_fail(err, "%s: %s: %s", nx_quote(&q, path, NX_QUOTE_PATH), what, strerror(e));
}

const char *nx_format_bytes(uint64_t bytes, char *buf, size_t len) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%" PRIu64 " bytes", bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

/* ---- reads ------------------------------------------------------------------------ */

int nx_read_file_max(const char *path, uint64_t max, const char *what, uint8_t **buf, size_t *len,
                     nx_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fail_path(err, path, "cannot open", errno);
    struct stat st;
    char size_text[32];
    nx_quoted q;
    if (fstat(fd, &st) != 0) memset(&st, 0, sizeof st);
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return nx_fail(err, "%s: is a directory, not a file", nx_quote(&q, path, NX_QUOTE_PATH));
    }
    if (max > SIZE_MAX - 2) max = SIZE_MAX - 2;
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
        close(fd);
        return nx_fail(err, "%s: larger than %s (%s)", nx_quote(&q, path, NX_QUOTE_PATH),
                       nx_format_bytes(max, size_text, sizeof size_text), what ? what : "the read limit");
    }
    /* A regular file's size is the first guess; a stream grows the buffer. */
    size_t cap = S_ISREG(st.st_mode) && (uint64_t)st.st_size < max ? (size_t)st.st_size + 2 : 1 << 16;
    size_t n = 0;
    uint8_t *b = malloc(cap);
    int rc = b ? 0 : nx_fail(err, "%s: out of memory", nx_quote(&q, path, NX_QUOTE_PATH));
    while (rc == 0) {
        if (cap - n < 2) { /* room for one more byte and the NUL */
            size_t bigger_cap = cap <= SIZE_MAX / 2 ? cap * 2 : SIZE_MAX;
            if (bigger_cap > max + 2) bigger_cap = (size_t)max + 2;
            uint8_t *bigger = bigger_cap > cap ? realloc(b, bigger_cap) : NULL;
            if (!bigger) {
                rc = nx_fail(err, "%s: out of memory after %zu bytes", nx_quote(&q, path, NX_QUOTE_PATH), n);
                break;
            }
            b = bigger;
            cap = bigger_cap;
        }
        ssize_t got = read(fd, b + n, cap - n - 1);
        if (got < 0) {
            if (errno == EINTR) continue;
            rc = fail_path(err, path, "cannot read", errno);
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > max) {
            rc = nx_fail(err, "%s: larger than %s (%s)", nx_quote(&q, path, NX_QUOTE_PATH),
                         nx_format_bytes(max, size_text, sizeof size_text), what ? what : "the read limit");
            break;
        }
    }
    close(fd);
    if (rc != 0) {
        free(b);
        return rc;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

int nx_read_file(const char *path, uint8_t **buf, size_t *len, nx_error *err) {
    return nx_read_file_max(path, NX_READ_MAX_DEFAULT, "the read limit", buf, len, err);
}

/* ---- what a path names ---------------------------------------------------------- */

/* The descriptor a standard-stream name stands for (/dev/stdout,
 * /dev/fd/1, /proc/self/fd/1, ...), or -1. */
static int stream_fd(const char *p) {
    if (strcmp(p, "/dev/stdin") == 0) return 0;
    if (strcmp(p, "/dev/stdout") == 0) return 1;
    if (strcmp(p, "/dev/stderr") == 0) return 2;
    const char *rest = NULL;
    char self[48];
    snprintf(self, sizeof self, "/proc/%ld/fd/", (long)getpid());
    static const char *const dirs[] = {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !rest; i++)
        if (strncmp(p, dirs[i], strlen(dirs[i])) == 0) rest = p + strlen(dirs[i]);
    if (!rest && strncmp(p, self, strlen(self)) == 0) rest = p + strlen(self);
    if (!rest || *rest < '0' || *rest > '9') return -1;
    long v = 0;
    for (; *rest >= '0' && *rest <= '9'; rest++) {
        v = v * 10 + (*rest - '0');
        if (v > INT_MAX) return -1;
    }
    return *rest == '\0' ? (int)v : -1;
}

typedef struct resolved {
    char *target; /* owned: the path with links followed */
    int fd;       /* a standard stream: its descriptor, else -1 */
    int exists;
    struct stat st;
} resolved;

/* Follows `path` through symbolic links (each relative link against its
 * link's directory) to what it names. */
static int resolve(const char *path, resolved *r, nx_error *err) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
    char *cur = strdup(path);
    if (!cur) return nx_fail(err, "out of memory");
    nx_quoted q;
    for (int hop = 0; hop <= MAX_LINKS; hop++) {
        int fd = stream_fd(cur);
        if (fd >= 0) {
            if (fstat(fd, &r->st) != 0) {
                int e = errno;
                free(cur);
                return fail_path(err, path, "cannot use", e);
            }
            r->fd = fd;
            r->exists = 1;
            r->target = cur;
            return 0;
        }
        if (lstat(cur, &r->st) != 0) { /* nothing there yet, or unreachable: the open says which */
            r->target = cur;
            return 0;
        }
        if (!S_ISLNK(r->st.st_mode)) {
            r->exists = 1;
            r->target = cur;
            return 0;
        }
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) {
            int e = errno;
            free(cur);
            return fail_path(err, path, "cannot read the link", e);
        }
        link[n] = '\0';
        const char *slash = strrchr(cur, '/');
        size_t dir = link[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(dir + (size_t)n + 1);
        if (!next) {
            free(cur);
            return nx_fail(err, "out of memory");
        }
        memcpy(next, cur, dir);
        memcpy(next + dir, link, (size_t)n + 1);
        free(cur);
        cur = next;
    }
    free(cur);
    return nx_fail(err, "%s: too many levels of symbolic links", nx_quote(&q, path, NX_QUOTE_PATH));
}

int nx_file_identify(const char *path, nx_file_id *id, nx_error *err) {
    memset(id, 0, sizeof *id);
    resolved r;
    if (resolve(path, &r, err) != 0) return -1;
    id->exists = r.exists;
    id->regular = !r.exists || S_ISREG(r.st.st_mode);
    if (r.exists) {
        id->dev = r.st.st_dev;
        id->ino = r.st.st_ino;
    } else {
        /* the directory by realpath, then the name */
        const char *slash = strrchr(r.target, '/');
        const char *base = slash ? slash + 1 : r.target;
        char dir[PATH_MAX];
        if (slash == r.target) {
            snprintf(dir, sizeof dir, "/");
        } else if (slash) {
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - r.target), r.target);
        } else {
            snprintf(dir, sizeof dir, ".");
        }
        char real[PATH_MAX];
        const char *use = r.target;
        nx_strbuf b = NX_STRBUF_INIT;
        if (realpath(dir, real)) {
            nx_sb_printf(&b, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
            if (!b.failed) use = b.s;
        }
        size_t n = strlen(use);
        if (n >= sizeof id->resolved) n = sizeof id->resolved - 1;
        memcpy(id->resolved, use, n);
        id->resolved[n] = '\0';
        nx_sb_free(&b);
    }
    free(r.target);
    return 0;
}

int nx_file_same(const nx_file_id *a, const nx_file_id *b) {
    if (a->exists != b->exists) return 0;
    if (a->exists) return a->dev == b->dev && a->ino == b->ino;
    return strcmp(a->resolved, b->resolved) == 0;
}

/* ---- atomic writes --------------------------------------------------------------- */

static void release(nx_atomic_file *af) {
    free(af->path);
    free(af->target);
    free(af->tmp);
    memset(af, 0, sizeof *af);
    af->fd = -1;
}

/* Creates `name` exclusively and opens it as af->f. */
static int create_tmp(nx_atomic_file *af, const char *name, mode_t mode) {
    int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) return -1;
    af->f = fdopen(fd, "w+b");
    if (!af->f) {
        int e = errno;
        close(fd);
        unlink(name);
        errno = e;
        return -1;
    }
    return 0;
}

/* A fresh name beside `target` ("TARGET.tmp.PID.N"), so that rename is
 * atomic; open() applies the umask to 0666 as fopen would for a new file. */
static int tmp_beside(nx_atomic_file *af, const char *target) {
    size_t n = strlen(target) + 48;
    af->tmp = malloc(n);
    if (!af->tmp) {
        errno = ENOMEM;
        return -1;
    }
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        snprintf(af->tmp, n, "%s.tmp.%ld.%u", target, (long)getpid(), attempt);
        if (create_tmp(af, af->tmp, 0666) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    return -1;
}

/* A staging file in $TMPDIR (or /tmp) for a written-through target. */
static int tmp_staging(nx_atomic_file *af) {
    const char *dir = getenv("TMPDIR");
    if (!dir || dir[0] != '/') dir = "/tmp";
    size_t n = strlen(dir) + 32;
    af->tmp = malloc(n);
    if (!af->tmp) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(af->tmp, n, "%s/nxsim-out.XXXXXX", dir);
    int fd = mkstemp(af->tmp);
    if (fd < 0) return -1;
    af->f = fdopen(fd, "w+b");
    if (!af->f) {
        int e = errno;
        close(fd);
        unlink(af->tmp);
        errno = e;
        return -1;
    }
    return 0;
}

static int open_impl(nx_atomic_file *af, const char *path, const char *tmp, nx_error *err) {
    memset(af, 0, sizeof *af);
    af->fd = -1;
    resolved r;
    if (resolve(path, &r, err) != 0) return -1;
    af->path = strdup(path);
    af->target = r.target;
    nx_quoted q;
    if (!af->path) {
        release(af);
        return nx_fail(err, "%s: out of memory", nx_quote(&q, path, NX_QUOTE_PATH));
    }
    if (r.exists && r.fd < 0 && S_ISDIR(r.st.st_mode)) {
        release(af);
        return nx_fail(err, "%s: cannot create: is a directory", nx_quote(&q, path, NX_QUOTE_PATH));
    }
    af->through = r.fd >= 0 || (r.exists && !S_ISREG(r.st.st_mode));
    af->fd = r.fd;
    af->existed = r.exists && !af->through;
    af->mode = r.exists ? r.st.st_mode & 0777 : 0; /* never set-id bits */
    int rc;
    if (tmp) {
        af->tmp = strdup(tmp);
        rc = af->tmp ? create_tmp(af, af->tmp, 0666) : (errno = ENOMEM, -1);
    } else {
        rc = af->through ? tmp_staging(af) : tmp_beside(af, af->target);
    }
    if (rc != 0) { /* nothing was created */
        int e = errno;
        release(af);
        return fail_path(err, path, "cannot create", e);
    }
    return 0;
}

int nx_atomic_open(nx_atomic_file *af, const char *path, nx_error *err) {
    return open_impl(af, path, NULL, err);
}

int nx_atomic_open_at(nx_atomic_file *af, const char *path, const char *tmp, nx_error *err) {
    return open_impl(af, path, tmp, err);
}

void nx_atomic_abort(nx_atomic_file *af) {
    if (af->f) {
        fclose(af->f);
        unlink(af->tmp);
    }
    release(af);
}

int nx_atomic_sync(nx_atomic_file *af, nx_error *err) {
    if (!af->f) return nx_fail(err, "atomic write: sync without a successful open");
    if (af->synced) return 0;
    /* errno is only meaningful for the call that failed: keep the first. */
    int e = 0;
    if (ferror(af->f)) e = EIO;
    if (!e && fflush(af->f) != 0) e = errno;
    if (!e && !af->through && fsync(fileno(af->f)) != 0) e = errno;
    if (e) {
        int rc = fail_path(err, af->path, "cannot write", e);
        nx_atomic_abort(af);
        return rc;
    }
    af->synced = 1;
    return 0;
}

/* Writes all of buf[0..n) to fd. 0 or errno. */
static int write_all(int fd, const uint8_t *buf, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Copies the staged bytes (af->f from its start) to fd. 0 or errno. */
static int copy_staged(nx_atomic_file *af, int fd) {
    int in = fileno(af->f);
    if (lseek(in, 0, SEEK_SET) != 0) return errno;
    uint8_t buf[1 << 16];
    for (;;) {
        ssize_t got = read(in, buf, sizeof buf);
        if (got < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (got == 0) return 0;
        int e = write_all(fd, buf, (size_t)got);
        if (e) return e;
    }
}

/* Through: the staged bytes to the device, FIFO or stream. 0 or errno. */
static int commit_through(nx_atomic_file *af) {
    if (af->fd == 1) fflush(stdout); /* keep the order of what was printed */
    if (af->fd == 2) fflush(stderr);
    int out = af->fd >= 0 ? dup(af->fd) : open(af->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (out < 0) return errno;
    int e = copy_staged(af, out);
    if (close(out) != 0 && !e && errno != EINTR) e = errno;
    return e;
}

/* The temporary is on another file system than the target (a staging name
 * the caller chose): copy it to a fresh temporary beside the target. */
static int move_across(nx_atomic_file *af) {
    nx_atomic_file near;
    memset(&near, 0, sizeof near);
    if (tmp_beside(&near, af->target) != 0) {
        int e = errno;
        free(near.tmp);
        return e;
    }
    int e = copy_staged(af, fileno(near.f));
    if (!e && fsync(fileno(near.f)) != 0) e = errno;
    if (fclose(near.f) != 0 && !e) e = errno;
    if (!e && af->existed && chmod(near.tmp, af->mode) != 0) e = errno;
    if (!e && rename(near.tmp, af->target) != 0) e = errno;
    if (e) unlink(near.tmp);
    free(near.tmp);
    return e;
}

int nx_atomic_commit(nx_atomic_file *af, nx_error *err) {
    if (!af->f) {
        release(af);
        return nx_fail(err, "atomic write: commit without a successful open");
    }
    if (nx_atomic_sync(af, err) != 0) return -1; /* aborted */
    int e = 0;
    if (af->through) {
        e = commit_through(af);
        fclose(af->f);
        unlink(af->tmp);
    } else {
        /* the replaced file's permissions, not the umask's */
        if (af->existed && fchmod(fileno(af->f), af->mode) != 0) e = errno;
        if (fclose(af->f) != 0 && !e) e = errno;
        if (!e && rename(af->tmp, af->target) != 0) {
            e = errno;
            if (e == EXDEV) {
                FILE *again = fopen(af->tmp, "rb");
                e = again ? 0 : errno;
                if (again) {
                    af->f = again;
                    e = move_across(af);
                    fclose(again);
                }
            }
        }
        if (e || access(af->tmp, F_OK) == 0) unlink(af->tmp);
    }
    af->f = NULL;
    int rc = e ? fail_path(err, af->path, "cannot write", e) : 0;
    release(af);
    return rc;
}

int nx_write_file_atomic(const char *path, const void *buf, size_t len, nx_error *err) {
    nx_atomic_file af;
    if (nx_atomic_open(&af, path, err) != 0) return -1;
    if (len > 0 && fwrite(buf, 1, len, af.f) != len) {
        int e = errno;
        nx_atomic_abort(&af);
        return fail_path(err, path, "cannot write", e ? e : EIO);
    }
    return nx_atomic_commit(&af, err);
}
