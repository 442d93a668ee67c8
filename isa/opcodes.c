/* The opcode table, expanded from opcodes.def. */
#include "opcodes.h"

#include <stddef.h>
#include <string.h>

#include "insns/insn_impl.h"

#define E_PE NX_ENG_BIT(NX_ENG_PE)
#define E_DVE NX_ENG_BIT(NX_ENG_DVE)
#define E_ACT NX_ENG_BIT(NX_ENG_ACT)
#define E_POOL NX_ENG_BIT(NX_ENG_POOL)
#define E_SP NX_ENG_BIT(NX_ENG_SP)
#define E_ALL (E_PE | E_DVE | E_ACT | E_POOL | E_SP)
#define C_COMPUTE NX_OPCLASS_COMPUTE
#define C_DMA NX_OPCLASS_DMA
#define C_CONTROL NX_OPCLASS_CONTROL
#define P_ALU0 NX_PARAM_ALU0
#define P_ALU1 NX_PARAM_ALU1
#define P_FUNC NX_PARAM_FUNC
#define F_ACCUMULATE NX_FLAG_ACCUMULATE
#define F_REVERSE0 NX_FLAG_REVERSE0
#define F_REVERSE1 NX_FLAG_REVERSE1
#define F_OOB_SKIP NX_FLAG_OOB_SKIP
#define F_SCATTER NX_FLAG_SCATTER
#define F_NEGATE NX_FLAG_NEGATE
#define A_R NX_ACCESS_READ
#define A_W NX_ACCESS_WRITE
#define A_RW NX_ACCESS_RW
#define K_HBM NX_KIND_BIT(NX_OPK_HBM)
#define K_SBUF NX_KIND_BIT(NX_OPK_SBUF)
#define K_PSUM NX_KIND_BIT(NX_OPK_PSUM)
#define K_IMM NX_KIND_BIT(NX_OPK_IMM)
#define K_PAT NX_KIND_BIT(NX_OPK_PATTERN)
#define SLOT(name, access, kinds, required) {name, access, kinds, required}
#define NOSLOT {NULL, 0, 0, 0}

const nx_opcode_info nx_opcode_table[NX_OP_COUNT] = {
#define NX_OP(id, mn, eng, cls, par, fl, ip0, ip1, s0, s1, s2, s3, s4) \
    {mn, eng, cls, par, fl, {ip0, ip1}, {s0, s1, s2, s3, s4}, nx_validate_##id, nx_exec_##id},
#include "opcodes.def"
#undef NX_OP
};

const nx_opcode_info *nx_opcode_lookup(unsigned opcode) {
    return opcode < NX_OP_COUNT ? &nx_opcode_table[opcode] : NULL;
}

const char *nx_opcode_mnemonic(unsigned opcode) {
    return opcode < NX_OP_COUNT ? nx_opcode_table[opcode].mnemonic : "?";
}

int nx_opcode_from_mnemonic(const char *mnemonic) {
    for (unsigned i = 0; i < NX_OP_COUNT; i++)
        if (strcmp(mnemonic, nx_opcode_table[i].mnemonic) == 0) return (int)i;
    return -1;
}

static const char *const flag_names[NX_FLAG_BITS] = {
#define NX_X(id, bit, name) [bit] = name,
    NX_FLAGS(NX_X)
#undef NX_X
};

const char *nx_flag_name(unsigned bit) {
    return bit < NX_FLAG_BITS ? flag_names[bit] : NULL;
}
