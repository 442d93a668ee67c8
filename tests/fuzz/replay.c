/* The replay driver: runs a harness (tests/fuzz/fuzz.h) once on every file
 * named on the command line, and on every file of every directory named
 * (not recursively), in name order: the seed corpora as a ctest where no
 * libFuzzer is built, and a reproducer by hand ("fuzz_asm_replay crash-..."). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "isa/fileio.h"

static int run_file(const char *path) {
    uint8_t *buf;
    size_t len;
    nx_error err;
    if (nx_read_file(path, &buf, &len, &err) != 0) {
        fprintf(stderr, "replay: %s\n", err.msg);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir, unsigned *count) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: cannot open the directory\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names) return -1;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0) rc = -1;
            (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    unsigned count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &count) != 0) rc = 1;
        } else {
            if (run_file(argv[i]) != 0) rc = 1;
            count++;
        }
    }
    printf("replay: %u inputs, no finding\n", count);
    if (count == 0) {
        fprintf(stderr, "replay: no inputs\n");
        return 1;
    }
    return rc;
}
