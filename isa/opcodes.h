/* The opcode table as C data (generated from opcodes.def by the preprocessor).
 * Everything that needs to know "what does opcode X look like" reads
 * nx_opcode_table[]; nothing else lists instructions. */
#ifndef NXSIM_ISA_OPCODES_H
#define NXSIM_ISA_OPCODES_H

#include <stdint.h>

#include "insn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nx_opcode {
#define NX_OP(id, mn, eng, cls, par, fl, ip0, ip1, s0, s1, s2, s3, s4) NX_OP_##id,
#include "opcodes.def"
#undef NX_OP
    NX_OP_COUNT
} nx_opcode;

/* Slot access modes. */
enum { NX_ACCESS_READ = 1, NX_ACCESS_WRITE = 2, NX_ACCESS_RW = 3 };
/* Bit per nx_operand_kind allowed in a slot. */
#define NX_KIND_BIT(k) (1u << (k))

/* What kind of work a row is, for everything that treats DMA and control
 * instructions apart from compute (the model, the cost model, the race
 * detector, profiles, the authoring layer):
 *   COMPUTE  runs on its engine and completes there;
 *   DMA      issued by the SP stream, runs as a transfer on DMA queue
 *            iparam 0 ("queue"; isa/geometry.h maps queues to engines),
 *            which completes it and does its increment;
 *   CONTROL  synchronisation and stream control (core_barrier, nop, end). */
typedef enum nx_opclass { NX_OPCLASS_COMPUTE = 0, NX_OPCLASS_DMA = 1, NX_OPCLASS_CONTROL = 2 } nx_opclass;

/* Which of the enum-valued parameters an opcode uses. */
enum { NX_PARAM_ALU0 = 1, NX_PARAM_ALU1 = 2, NX_PARAM_FUNC = 4 };

typedef struct nx_slot_spec {
    const char *name;  /* NULL: slot unused by this opcode */
    uint8_t access;    /* NX_ACCESS_* */
    uint8_t kinds;     /* NX_KIND_BIT(kind) mask */
    uint8_t required;  /* 0: may be NX_OPK_NONE */
} nx_slot_spec;

struct nx_geometry;
struct nx_error;
struct nx_exec_ctx;

/* Opcode-specific static checks (shapes, dtypes, limits), run after the
 * generic checks of isa/validate.c. Returns 0 or -1 with a message (without
 * the "core/engine/index" prefix, which the caller adds). */
typedef int (*nx_validate_fn)(const nx_insn *insn, nx_engine engine,
                              const struct nx_geometry *geo, struct nx_error *err);
/* The semantics: performs the instruction on ctx->state. Returns 0 or -1 with
 * a message for data-dependent faults (e.g. an indirect DMA index out of
 * bounds in error mode). Only called on instructions that validated. */
typedef int (*nx_exec_fn)(const struct nx_exec_ctx *ctx, const nx_insn *insn);

typedef struct nx_opcode_info {
    const char *mnemonic;
    uint8_t engines;  /* NX_ENG_BIT mask */
    uint8_t opclass;  /* nx_opclass */
    uint8_t params;   /* NX_PARAM_* mask */
    uint16_t flags;   /* accepted nx_flag bits */
    const char *iparam_name[2];
    nx_slot_spec slot[NX_MAX_OPERANDS];
    nx_validate_fn validate;
    nx_exec_fn exec;
} nx_opcode_info;

extern const nx_opcode_info nx_opcode_table[NX_OP_COUNT];

/* NULL for an out-of-range opcode. */
const nx_opcode_info *nx_opcode_lookup(unsigned opcode);
/* The mnemonic, or "?" for an out-of-range opcode (for messages). */
const char *nx_opcode_mnemonic(unsigned opcode);
/* -1 if no such mnemonic. */
int nx_opcode_from_mnemonic(const char *mnemonic);

/* 1 if `opcode` is a DMA row (NX_OPCLASS_DMA): the one "is this a DMA"
 * test. 0 for other or out-of-range opcodes. */
static inline int nx_opcode_is_dma(unsigned opcode) {
    return opcode < NX_OP_COUNT && nx_opcode_table[opcode].opclass == NX_OPCLASS_DMA;
}
/* The DMA queue a DMA instruction runs on (its iparam 0, per core), or -1
 * for any other instruction. Validated programs have 0 <= queue <
 * nx_geometry_dma_queues(geo). */
static inline int32_t nx_insn_dma_queue(const nx_insn *insn) {
    return nx_opcode_is_dma(insn->opcode) ? insn->iparam[0] : -1;
}

/* Flag names (for assembler/disassembler), bit index -> name or NULL. */
const char *nx_flag_name(unsigned bit);
#define NX_FLAG_BITS 16

#ifdef __cplusplus
}
#endif

#endif
