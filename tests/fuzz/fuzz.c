/* Shared pieces of the fuzz harnesses (tests/fuzz/fuzz.h). */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/exec.h"
#include "isa/state.h"
#include "sim/machine.h"

void nx_fuzz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("nxsim fuzz finding: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void nx_fuzz_check_message(const char *what, const char *msg) {
    if (!msg || msg[0] == '\0') nx_fuzz_fail("%s: an empty error message", what);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            nx_fuzz_fail("%s: control byte 0x%02x at %zu of the error message: %s", what, *p,
                         (size_t)(p - (const unsigned char *)msg), msg);
}

char *nx_fuzz_text(const uint8_t *data, size_t size) {
    if (memchr(data, 0, size)) return NULL;
    char *s = malloc(size + 1);
    if (!s) nx_fuzz_fail("out of memory");
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

const nx_geometry *nx_fuzz_geometry(const char *preset) {
    static nx_machine trn1, trn2;
    static int loaded;
    if (!loaded) {
        nx_error err;
        if (nx_machine_load("trn1", &trn1, &err) != 0 || nx_machine_load("trn2", &trn2, &err) != 0)
            nx_fuzz_fail("presets: %s", err.msg);
        loaded = 1;
    }
    return strcmp(preset, "trn1") == 0 ? &trn1.geo : &trn2.geo;
}

uint64_t nx_fuzz_work(const nx_program *p) {
    uint64_t work = 0;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            for (uint32_t i = 0; i < p->stream[c][e].count; i++) {
                nx_insn scratch;
                const nx_insn *in = nx_program_expand(p, &p->stream[c][e].recs[i], &scratch);
                for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
                    const nx_operand *op = &in->op[s];
                    if (op->kind == NX_OPK_NONE || op->kind == NX_OPK_IMM) continue;
                    uint64_t n = op->partition_count ? op->partition_count : 1;
                    for (unsigned k = 0; k < op->ndims && k < NX_MAX_FREE_DIMS; k++) {
                        n *= op->count[k];
                        if (n > ((uint64_t)1 << 40)) return UINT64_MAX;
                    }
                    work += n;
                    if (work > ((uint64_t)1 << 40)) return UINT64_MAX;
                }
            }
    return work;
}

void nx_fuzz_exec_small(const nx_program *p, const nx_geometry *geo) {
    if (nx_program_insn_count(p) > 512 || p->hbm_bytes > ((uint64_t)1 << 20) ||
        nx_fuzz_work(p) > ((uint64_t)1 << 20))
        return;
    nx_state st;
    nx_error err;
    if (nx_state_init(&st, geo, p->cores, p->hbm_bytes, p->sem_count, &err) != 0)
        nx_fuzz_fail("state of a valid program: %s", err.msg);
    /* inputs: a fixed pattern, so runs are deterministic */
    for (uint64_t i = 0; i < p->hbm_bytes; i++) st.hbm[i] = (uint8_t)(i * 37 + 11);
    if (nx_exec_program(p, &st, &err) != 0) nx_fuzz_check_message("exec", err.msg);
    nx_state_free(&st);
}
