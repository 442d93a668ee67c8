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
#include "isa/strbuf.h"

int cli_is_nxb(const uint8_t *buf, size_t len) {
    return len >= 4 && memcmp(buf, NX_NXB_MAGIC, 4) == 0;
}

int cli_load_program(const char *path, nx_program *out, nx_error *err) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (nx_read_file_max(path, NX_PROGRAM_FILE_MAX, "the limit for a program file", &buf, &len, err) != 0)
        return -1;
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

int cli_is_machine_preset(const char *name) {
    for (const char *const *p = nx_machine_presets(); *p; p++)
        if (strcmp(*p, name) == 0) return 1;
    return 0;
}

int cli_load_machine(const char *spec, const nx_program *p, const char *prog_path, nx_machine *out,
                     nx_error *err) {
    if (spec) return nx_machine_load(spec, out, err);
    const char *name = p->machine[0] ? p->machine : nx_machine_default();
    if (!cli_is_machine_preset(name)) {
        nx_strbuf list = NX_STRBUF_INIT;
        for (const char *const *q = nx_machine_presets(); *q; q++) {
            if (q != nx_machine_presets()) nx_sb_puts(&list, ", ");
            nx_sb_puts(&list, *q);
        }
        nx_fail(err, "%s: unknown machine '%s' (presets: %s); for a machine file pass --machine FILE.json",
                prog_path, name, nx_sb_str(&list));
        nx_sb_free(&list);
        return -1;
    }
    return nx_machine_load(name, out, err);
}
