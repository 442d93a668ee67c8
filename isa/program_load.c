/* Loading a .nxb or .nxs program file (isa/program_load.h). */
#include "program_load.h"

#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "encode.h"
#include "fileio.h"

int nx_program_is_nxb(const uint8_t *buf, size_t len) { return len >= 4 && memcmp(buf, NX_NXB_MAGIC, 4) == 0; }

int nx_program_load(const char *path, nx_program *out, nx_error *err) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (nx_read_file_max(path, NX_PROGRAM_FILE_MAX, "the limit for a program file", &buf, &len, err) != 0)
        return -1;
    int rc;
    if (nx_program_is_nxb(buf, len)) {
        rc = nx_program_decode(buf, len, out, err);
        if (rc != 0) nx_fail_prefix(err, "%s", path);
    } else {
        rc = nx_assemble(path, (const char *)buf, len, out, err);
    }
    free(buf);
    return rc;
}
