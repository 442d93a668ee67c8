/* Name tables for engines, ALU ops, activation functions and flags, and
 * small operand helpers. The enums themselves live in insn.h. */
#include "insn.h"

#include <string.h>

static const char *const engine_names[NX_ENG_COUNT] = {"pe", "dve", "act", "pool", "sp"};

const char *nx_engine_name(nx_engine e) {
    return (unsigned)e < NX_ENG_COUNT ? engine_names[e] : NULL;
}

int nx_engine_from_name(const char *name, nx_engine *out) {
    for (unsigned i = 0; i < NX_ENG_COUNT; i++)
        if (strcmp(name, engine_names[i]) == 0) {
            *out = (nx_engine)i;
            return 0;
        }
    return -1;
}

static const char *const alu_names[NX_ALU_COUNT] = {
#define NX_X(id, name) name,
    NX_ALU_OPS(NX_X)
#undef NX_X
};

const char *nx_alu_name(nx_alu_op op) {
    return (unsigned)op < NX_ALU_COUNT ? alu_names[op] : NULL;
}

int nx_alu_from_name(const char *name, nx_alu_op *out) {
    for (unsigned i = 0; i < NX_ALU_COUNT; i++)
        if (strcmp(name, alu_names[i]) == 0) {
            *out = (nx_alu_op)i;
            return 0;
        }
    return -1;
}

static const char *const act_names[NX_ACT_COUNT] = {
#define NX_X(id, name) name,
    NX_ACT_FUNCS(NX_X)
#undef NX_X
};

const char *nx_act_name(nx_act_func f) {
    return (unsigned)f < NX_ACT_COUNT ? act_names[f] : NULL;
}

int nx_act_from_name(const char *name, nx_act_func *out) {
    for (unsigned i = 0; i < NX_ACT_COUNT; i++)
        if (strcmp(name, act_names[i]) == 0) {
            *out = (nx_act_func)i;
            return 0;
        }
    return -1;
}

uint64_t nx_operand_free_elems(const nx_operand *op) {
    uint64_t n = 1;
    for (unsigned k = 0; k < op->ndims && k < NX_MAX_FREE_DIMS; k++) n *= op->count[k];
    return n;
}

int nx_operand_is_memory(const nx_operand *op) {
    return op->kind == NX_OPK_HBM || op->kind == NX_OPK_SBUF || op->kind == NX_OPK_PSUM;
}
