/* isa/fileio.h and isa/error.h's quoting: capped reads (files, streams,
 * directories), file identity (spellings, links, files not there yet), the
 * atomic writer's staging (links followed, modes kept, sync then commit or
 * abort, a temporary on another file system), and one-line echoes. The
 * write-through targets (devices, FIFOs, standard streams) are exercised
 * through the command in tests/cli/test_harden.sh. */
#define _XOPEN_SOURCE 700 /* mkdtemp, symlink, link */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isa/error.h"
#include "isa/fileio.h"
#include "support.h"

static char dir[64];

static const char *at(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *get(const char *path) {
    uint8_t *buf;
    size_t len;
    nx_error err;
    if (nx_read_file(path, &buf, &len, &err) != 0) fail_msg("%s", err.msg);
    return (char *)buf;
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_fileio.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_quote(void **state) {
    (void)state;
    char out[64];
    assert_string_equal(nx_msg_quote("plain name.npy", 0, out, sizeof out), "plain name.npy");
    assert_string_equal(nx_msg_quote("a\nb\tc\rd", 0, out, sizeof out), "a\\nb\\tc\\rd");
    assert_string_equal(nx_msg_quote("x\x1b[31m", 0, out, sizeof out), "x\\x1b[31m");
    assert_string_equal(nx_msg_quote("del\x7f", 0, out, sizeof out), "del\\x7f");
    /* UTF-8 stays; a C1 control (U+009B, CSI), a lone byte and an
     * overlong form do not */
    assert_string_equal(nx_msg_quote("caf\xc3\xa9", 0, out, sizeof out), "caf\xc3\xa9");
    assert_string_equal(nx_msg_quote("\xc2\x9b" "2J", 0, out, sizeof out), "\\xc2\\x9b2J");
    assert_string_equal(nx_msg_quote("\xff\xc0\xaf", 0, out, sizeof out), "\\xff\\xc0\\xaf");
    assert_string_equal(nx_msg_quote("\xe2\x82", 0, out, sizeof out), "\\xe2\\x82"); /* cut short */
    /* the limit, then "..." */
    assert_string_equal(nx_msg_quote("abcdefgh", 4, out, sizeof out), "abcd...");
    char small[12];
    assert_string_equal(nx_msg_quote("\n\n\n\n\n\n", 0, small, sizeof small), "\\n\\n\\n...");
    nx_quoted q;
    assert_string_equal(nx_quote(&q, NULL, 10), "(null)");
}

static void test_read_caps(void **state) {
    (void)state;
    put(at("ten"), "0123456789");
    uint8_t *buf;
    size_t len;
    nx_error err;
    assert_int_equal(nx_read_file_max(at("ten"), 10, "ten bytes", &buf, &len, &err), 0);
    assert_int_equal(len, 10);
    assert_int_equal(buf[10], 0);
    free(buf);
    assert_int_equal(nx_read_file_max(at("ten"), 9, "the test's limit", &buf, &len, &err), -1);
    char want[256];
    snprintf(want, sizeof want, "%s: larger than 9 bytes (the test's limit)", at("ten"));
    assert_string_equal(err.msg, want);
    /* a stream has no size: it stops one byte past the cap */
    assert_int_equal(nx_read_file_max("/dev/zero", 5000, "a stream limit", &buf, &len, &err), -1);
    assert_string_equal(err.msg, "/dev/zero: larger than 4.9 KiB (a stream limit)");
    /* directories and missing files */
    assert_int_equal(nx_read_file(dir, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "is a directory"));
    assert_int_equal(nx_read_file(at("no\nsuch"), &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "no\\nsuch: cannot open: No such file or directory"));
    assert_null(strchr(err.msg, '\n'));
    char sz[32];
    assert_string_equal(nx_format_bytes(37, sz, sizeof sz), "37 bytes");
    assert_string_equal(nx_format_bytes(3ull << 29, sz, sizeof sz), "1.5 GiB");
}

static void test_identity(void **state) {
    (void)state;
    put(at("a.npy"), "a");
    put(at("b.npy"), "b");
    assert_int_equal(symlink("a.npy", at("sym.npy")), 0);
    assert_int_equal(link(at("a.npy"), at("hard.npy")), 0);
    nx_file_id a, a2, s, h, b, n1, n2, n3;
    nx_error err;
    char dotted[256];
    snprintf(dotted, sizeof dotted, "%s/./a.npy", dir);
    assert_int_equal(nx_file_identify(at("a.npy"), &a, &err), 0);
    assert_int_equal(nx_file_identify(dotted, &a2, &err), 0);
    assert_int_equal(nx_file_identify(at("sym.npy"), &s, &err), 0);
    assert_int_equal(nx_file_identify(at("hard.npy"), &h, &err), 0);
    assert_int_equal(nx_file_identify(at("b.npy"), &b, &err), 0);
    assert_true(a.exists && a.regular);
    assert_true(nx_file_same(&a, &a2) && nx_file_same(&a, &s) && nx_file_same(&a, &h));
    assert_false(nx_file_same(&a, &b));
    /* not there yet: by resolved path; a dangling link is its target */
    assert_int_equal(symlink("new.npy", at("to_new.npy")), 0);
    char dotted_new[256];
    snprintf(dotted_new, sizeof dotted_new, "%s/./new.npy", dir);
    assert_int_equal(nx_file_identify(at("new.npy"), &n1, &err), 0);
    assert_int_equal(nx_file_identify(dotted_new, &n2, &err), 0);
    assert_int_equal(nx_file_identify(at("to_new.npy"), &n3, &err), 0);
    assert_false(n1.exists);
    assert_true(n1.regular);
    assert_true(nx_file_same(&n1, &n2) && nx_file_same(&n1, &n3));
    assert_false(nx_file_same(&n1, &a));
    nx_file_id dev;
    assert_int_equal(nx_file_identify("/dev/null", &dev, &err), 0);
    assert_true(dev.exists && !dev.regular);
    /* a loop is an error */
    assert_int_equal(symlink("loop2", at("loop1")), 0);
    assert_int_equal(symlink("loop1", at("loop2")), 0);
    assert_int_equal(nx_file_identify(at("loop1"), &n1, &err), -1);
    assert_non_null(strstr(err.msg, "too many levels of symbolic links"));
}

static void test_atomic(void **state) {
    (void)state;
    nx_error err;
    /* through a link: the target is replaced, the link stays, the mode is kept */
    assert_int_equal(mkdir(at("sub"), 0700), 0);
    put(at("sub/t.txt"), "old");
    assert_int_equal(chmod(at("sub/t.txt"), 0640), 0);
    assert_int_equal(symlink("sub/t.txt", at("l.txt")), 0);
    assert_int_equal(nx_write_file_atomic(at("l.txt"), "new", 3, &err), 0);
    struct stat st;
    assert_int_equal(lstat(at("l.txt"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *text = get(at("sub/t.txt"));
    assert_string_equal(text, "new");
    free(text);
    assert_int_equal(stat(at("sub/t.txt"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(test_dir_entries(at("sub")), 1); /* no temporary left */

    /* synced, then aborted: the target untouched, nothing left */
    nx_atomic_file af;
    assert_int_equal(nx_atomic_open(&af, at("sub/t.txt"), &err), 0);
    fputs("never", af.f);
    assert_int_equal(nx_atomic_sync(&af, &err), 0);
    assert_int_equal(test_dir_entries(at("sub")), 2);
    nx_atomic_abort(&af);
    assert_int_equal(test_dir_entries(at("sub")), 1);
    text = get(at("sub/t.txt"));
    assert_string_equal(text, "new");
    free(text);

    /* a staging name of the caller's choice on another file system (a
     * waveform written by name): committed by copy, then rename */
    char shm[64];
    snprintf(shm, sizeof shm, "/dev/shm/test_fileio.%ld", (long)getpid());
    if (access("/dev/shm", W_OK) == 0) {
        assert_int_equal(nx_atomic_open_at(&af, at("sub/t.txt"), shm, &err), 0);
        put(shm, "staged elsewhere"); /* the other writer, by name */
        assert_int_equal(nx_atomic_commit(&af, &err), 0);
        text = get(at("sub/t.txt"));
        assert_string_equal(text, "staged elsewhere");
        free(text);
        assert_int_equal(access(shm, F_OK), -1);
        assert_int_equal(test_dir_entries(at("sub")), 1);
    }
    /* a directory is refused before anything is created */
    assert_int_equal(nx_atomic_open(&af, at("sub"), &err), -1);
    assert_non_null(strstr(err.msg, "is a directory"));
    assert_null(af.f);
    assert_int_equal(test_dir_entries(at("sub")), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_read_caps),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_atomic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
