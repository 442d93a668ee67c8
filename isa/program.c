/* nx_program: construction, lookup and whole-program validation (how the
 * instructions are stored: isa/program_store.c). */
#include "program.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "opcodes.h"
#include "validate.h"

static const char *const role_names[NX_ROLE_COUNT] = {"input", "output", "scratch"};

const char *nx_role_name(nx_tensor_role r) {
    return (unsigned)r < NX_ROLE_COUNT ? role_names[r] : NULL;
}

int nx_role_from_name(const char *name, nx_tensor_role *out) {
    for (unsigned i = 0; i < NX_ROLE_COUNT; i++)
        if (strcmp(name, role_names[i]) == 0) {
            *out = (nx_tensor_role)i;
            return 0;
        }
    return -1;
}

uint64_t nx_tensor_bytes(const nx_tensor_decl *t) {
    uint64_t n = nx_dtype_size((nx_dtype)t->dtype);
    for (unsigned i = 0; i < t->ndims && i < NX_TENSOR_MAX_DIMS; i++) n *= t->shape[i];
    return n;
}

void nx_program_init(nx_program *p) {
    memset(p, 0, sizeof *p);
    strcpy(p->machine, "trn2");
    p->cores = 1;
}

void nx_program_free(nx_program *p) {
    for (unsigned c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            free(p->stream[c][e].recs);
            free(p->stream[c][e].src);
        }
    free(p->operands.ops);
    free(p->operands.slots);
    free(p->tensors);
    for (uint32_t i = 0; i < p->src_count; i++) {
        free(p->srcs[i].file);
        free(p->srcs[i].func);
    }
    free(p->srcs);
    nx_program_init(p);
}

int nx_program_add_tensor(nx_program *p, const nx_tensor_decl *t, nx_error *err) {
    if (p->tensor_count == p->tensor_capacity) {
        uint32_t cap = p->tensor_capacity ? p->tensor_capacity * 2 : 8;
        nx_tensor_decl *grown = realloc(p->tensors, (size_t)cap * sizeof *grown);
        if (!grown) return nx_fail(err, "program: out of memory adding tensor '%s'", t->name);
        p->tensors = grown;
        p->tensor_capacity = cap;
    }
    p->tensors[p->tensor_count++] = *t;
    return 0;
}

int nx_program_find_tensor(const nx_program *p, const char *name) {
    for (uint32_t i = 0; i < p->tensor_count; i++)
        if (strcmp(p->tensors[i].name, name) == 0) return (int)i;
    return -1;
}

static int valid_tensor_name(const char *s) {
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_')) return 0;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.'))
            return 0;
        if (i + 1 >= NX_TENSOR_NAME_MAX) return 0;
    }
    return 1;
}

static int validate_tensors(const nx_program *p, nx_error *err) {
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        const nx_tensor_decl *t = &p->tensors[i];
        if (memchr(t->name, '\0', NX_TENSOR_NAME_MAX) == NULL || !valid_tensor_name(t->name))
            return nx_fail(err, "tensor %u: invalid name", i);
        if (!nx_dtype_is_valid(t->dtype))
            return nx_fail(err, "tensor '%s': invalid dtype code %u", t->name, t->dtype);
        if (t->role >= NX_ROLE_COUNT)
            return nx_fail(err, "tensor '%s': invalid role code %u", t->name, t->role);
        if (t->ndims < 1 || t->ndims > NX_TENSOR_MAX_DIMS)
            return nx_fail(err, "tensor '%s': %u dims (1..%u)", t->name, t->ndims, NX_TENSOR_MAX_DIMS);
        uint64_t bytes = nx_dtype_size((nx_dtype)t->dtype);
        for (unsigned d = 0; d < t->ndims; d++) {
            if (t->shape[d] == 0) return nx_fail(err, "tensor '%s': dim %u is 0", t->name, d);
            if (bytes > UINT64_MAX / t->shape[d])
                return nx_fail(err, "tensor '%s': size overflows", t->name);
            bytes *= t->shape[d];
        }
        if (t->offset % nx_dtype_size((nx_dtype)t->dtype) != 0)
            return nx_fail(err, "tensor '%s': offset %llu is not a multiple of its element size %zu",
                           t->name, (unsigned long long)t->offset, nx_dtype_size((nx_dtype)t->dtype));
        if (t->offset > p->hbm_bytes || bytes > p->hbm_bytes - t->offset)
            return nx_fail(err, "tensor '%s': bytes [%llu, %llu) exceed the program's HBM extent %llu",
                           t->name, (unsigned long long)t->offset,
                           (unsigned long long)(t->offset + bytes), (unsigned long long)p->hbm_bytes);
        for (uint32_t j = 0; j < i; j++) {
            const nx_tensor_decl *u = &p->tensors[j];
            if (strcmp(t->name, u->name) == 0)
                return nx_fail(err, "tensor '%s' is declared twice", t->name);
            uint64_t ub = nx_tensor_bytes(u);
            if (t->offset < u->offset + ub && u->offset < t->offset + bytes)
                return nx_fail(err, "tensor '%s' overlaps tensor '%s' in HBM", t->name, u->name);
        }
    }
    return 0;
}

int nx_program_validate(const nx_program *p, const nx_geometry *geo, nx_error *err) {
    if (p->cores < 1 || p->cores > NX_MAX_CORES || p->cores > geo->cores)
        return nx_fail(err, "program uses %u cores; machine '%s' has %u", p->cores, geo->name,
                       geo->cores);
    if (p->sem_count > NX_MAX_SEMAPHORES)
        return nx_fail(err, "program declares %u semaphores; at most %u", p->sem_count,
                       NX_MAX_SEMAPHORES);
    if (p->hbm_bytes > geo->hbm_bytes)
        return nx_fail(err, "program needs %llu bytes of HBM; machine '%s' has %llu",
                       (unsigned long long)p->hbm_bytes, geo->name,
                       (unsigned long long)geo->hbm_bytes);
    if (validate_tensors(p, err) != 0) return -1;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = &p->stream[c][e];
            if (c >= p->cores && s->count > 0)
                return nx_fail(err, "core %u %s has %u instructions but the program has %u core(s)",
                               c, nx_engine_name((nx_engine)e), s->count, p->cores);
            for (uint32_t i = 0; i < s->count; i++) {
                nx_insn scratch;
                const nx_insn *insn = nx_program_expand(p, &s->recs[i], &scratch);
                if (nx_insn_validate(insn, (nx_engine)e, geo, p->hbm_bytes, p->sem_count, err) != 0 ||
                    (insn->opcode == NX_OP_END && i + 1 != s->count &&
                     nx_fail(err, "'end' must be the last instruction of its stream (%u follow)",
                             s->count - i - 1))) {
                    return nx_fail_prefix(err, "core %u %s #%u (%s)", c,
                                          nx_engine_name((nx_engine)e), i, nx_opcode_mnemonic(insn->opcode));
                }
            }
        }
    }
    return 0;
}
