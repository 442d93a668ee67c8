/* libnxsim (include/nxsim/nxsim.h): nx_prog_save, a program written to a
 * file for `nxsim exec` (a traced NKI kernel, docs/parts/nki.md): .nxs as
 * the disassembler's canonical text, anything else as the .nxb container.
 * Both are written atomically (isa/fileio.h). */
#include <string.h>

#include "api_impl.h"
#include "isa/asm.h"
#include "isa/encode.h"
#include "isa/fileio.h"

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

NXSIM_API nx_status nx_prog_save(const nx_prog *p, const char *path, nx_message *msg) {
    if (!p || !path) return api_failf(msg, NX_ERR_USAGE, "nx_prog_save: a required argument is NULL");
    nx_error err;
    if (!ends_with(path, ".nxs")) {
        if (nx_program_save_file(path, &p->prog, &err) != 0) return api_fail(msg, NX_ERR_RUNTIME, &err);
        api_ok(msg);
        return NX_OK;
    }
    nx_atomic_file af;
    if (nx_atomic_open(&af, path, &err) != 0) return api_fail(msg, NX_ERR_RUNTIME, &err);
    if (nx_disassemble(&p->prog, af.f, &err) != 0) {
        nx_atomic_abort(&af);
        return api_fail(msg, NX_ERR_RUNTIME, &err);
    }
    if (nx_atomic_commit(&af, &err) != 0) return api_fail(msg, NX_ERR_RUNTIME, &err);
    api_ok(msg);
    return NX_OK;
}
