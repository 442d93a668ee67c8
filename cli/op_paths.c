/* Op-file result paths confined to the op file's directory tree
 * (cli/op_paths.h). */
#undef _POSIX_C_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#include "op_paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when `path` (resolved) is `dir` (resolved) or below it. */
static int inside(const char *dir, const char *path) {
    size_t n = strlen(dir);
    if (strncmp(path, dir, n) != 0) return 0;
    return path[n] == '\0' || path[n] == '/' || (n == 1 && dir[0] == '/');
}

/* 1 when name has a ".." component. */
static int climbs(const char *name) {
    for (const char *c = name; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.') return 1;
        c += len;
        c += strspn(c, "/");
    }
    return 0;
}

/* 1 when the regular file at path starts with NumPy's magic. */
static int holds_npy(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return 0;
    char magic[6];
    ssize_t got = read(fd, magic, sizeof magic);
    close(fd);
    return got == (ssize_t)sizeof magic && memcmp(magic, "\x93NUMPY", 6) == 0;
}

/* The directory part of path ("." when it has none), malloc'd. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

/* Checks what `path` (op dir `root`, resolved) names now. 0 or -1. */
static int check_target(const char *root, const char *path, const char *shown, nx_error *err) {
    char *dir = dir_of(path);
    if (!dir) return nx_fail(err, "out of memory");
    char *rdir = realpath(dir, NULL);
    int e = errno;
    free(dir);
    if (!rdir) return nx_fail(err, "file '%s': its directory: %s", shown, strerror(e));
    int in = inside(root, rdir);
    free(rdir);
    if (!in) return nx_fail(err, "file '%s' leads out of the op file's directory through a link", shown);
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        return nx_fail(err, "file '%s': %s", shown, strerror(errno));
    }
    if (S_ISLNK(st.st_mode)) {
        char *target = realpath(path, NULL);
        if (!target) return nx_fail(err, "file '%s' is a link to nothing (an op file replaces only earlier results)", shown);
        in = inside(root, target);
        free(target);
        if (!in) return nx_fail(err, "file '%s' is a link that leads out of the op file's directory", shown);
        if (stat(path, &st) != 0) return nx_fail(err, "file '%s': %s", shown, strerror(errno));
    }
    if (!S_ISREG(st.st_mode) || !holds_npy(path))
        return nx_fail(err, "file '%s' exists and is not a .npy file: an op file replaces only earlier results", shown);
    return 0;
}

int cli_op_result_path(const char *op_file, const char *name, char **out, nx_error *err) {
    *out = NULL;
    nx_quoted q;
    const char *shown = nx_quote(&q, name, NX_QUOTE_PATH);
    if (!name[0]) return nx_fail(err, "file '': an empty name");
    if (name[0] == '/')
        return nx_fail(err, "file '%s' is an absolute path: an op file names its results inside its own directory",
                       shown);
    if (climbs(name))
        return nx_fail(err, "file '%s' climbs out with '..': an op file names its results inside its own directory",
                       shown);
    char *dir = dir_of(op_file);
    char *root = dir ? realpath(dir, NULL) : NULL;
    int e = errno;
    if (!root) {
        int oom = !dir;
        free(dir);
        return oom ? nx_fail(err, "out of memory") : nx_fail(err, "the op file's directory: %s", strerror(e));
    }
    size_t dl = strchr(op_file, '/') ? strlen(dir) + 1 : 0; /* "a.npy" beside "op.json" stays "a.npy" */
    char *p = malloc(dl + strlen(name) + 1);
    if (p) {
        if (dl) {
            memcpy(p, dir, dl - 1);
            p[dl - 1] = '/';
        }
        strcpy(p + dl, name);
    }
    free(dir);
    int rc = p ? check_target(root, p, shown, err) : nx_fail(err, "out of memory");
    free(root);
    if (rc != 0) {
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}
