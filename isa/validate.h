/* Static validation of one instruction, and its memory footprint.
 *
 * Generic checks (validate.c), in order: the opcode exists and may run on the
 * engine; unused parameters, flags and slots are zero; every slot's kind is
 * allowed by the row and by the engine (PE reads SBUF/writes PSUM, POOL never
 * PSUM, DMA only HBM/SBUF, compute engines never HBM); every memory access
 * pattern lies inside its memory (partition range, start-partition rule for
 * compute engines, per-partition byte range, HBM range, free-size limits,
 * dtype-aligned offset); semaphore indices < sem_count. Then the opcode's own
 * nx_validate_<id>. */
#ifndef NXSIM_ISA_VALIDATE_H
#define NXSIM_ISA_VALIDATE_H

#include <stdint.h>

#include "error.h"
#include "geometry.h"
#include "insn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message has no location prefix; nx_program_validate adds it. */
int nx_insn_validate(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                     uint64_t hbm_bytes, uint32_t sem_count, nx_error *err);

/* Checks one memory access pattern (used by nx_insn_validate and by opcode
 * validators for derived shapes). `what` names the slot in messages. */
int nx_check_access(const nx_operand *op, nx_engine engine, const nx_geometry *geo,
                    uint64_t hbm_bytes, const char *what, nx_error *err);

/* Shape rules shared by the opcode validators (messages name the slots):
 * a and b have the same partition count and elements per partition
 * ("in1 has 64 partitions, dst has 128"); a scalar slot is an immediate or
 * one element in each of in's partitions. */
int nx_check_same_shape(const nx_operand *a, const char *a_name, const nx_operand *b,
                        const char *b_name, nx_error *err);
int nx_check_scalar(const nx_operand *s, const char *s_name, const nx_operand *in, nx_error *err);

/* The public nki.isa rules for the bitvec ops (nx_alu_is_bitvec), applied to
 * an instruction whose ALU ops are ops[0 .. nops) (bypass counts as neither
 * kind) over the operands in slots[0 .. nslots) (names[] name them;
 * immediates included): a bitvec op runs on DVE only, its operands have
 * integer dtypes, and a bitvec op does not share an instruction with an
 * arithmetic op (docs/parts/insns-dve.md, "Bitvec ops"). One line each:
 * "op0 shift_right and op1 is_gt: a bitvec and an arithmetic op do not mix
 * in one instruction", "op0 bitwise_and: a bitvec op runs on dve only, not
 * pool", "in: dtype fp32: a bitvec op (bitwise_and) takes integer dtypes". */
int nx_check_bitvec(const nx_alu_op *ops, uint32_t nops, nx_engine engine, const nx_operand *slots,
                    const char *const *names, uint32_t nslots, nx_error *err);

/* A conservative box of memory an instruction touches:
 * kind NX_OPK_HBM: bytes [lo, hi) of HBM (partitions ignored);
 * SBUF/PSUM: partitions [p_lo, p_hi) x bytes [lo, hi) within each partition.
 * Indirect DMA covers every row the offsets could name. */
typedef struct nx_footprint {
    uint8_t kind;
    uint8_t write;       /* 1 if written (read-modify-write counts as write) */
    uint8_t read;        /* 1 if read */
    uint8_t slot;        /* operand slot index */
    uint16_t p_lo, p_hi;
    uint64_t lo, hi;
} nx_footprint;

/* Fills up to NX_MAX_OPERANDS entries; returns how many. Only for validated
 * instructions. */
int nx_insn_footprint(const nx_insn *insn, nx_footprint out[NX_MAX_OPERANDS]);

/* Byte span [lo, hi) one partition of a memory AP touches (min..max element
 * byte + size), relative to the partition (SBUF/PSUM) or HBM start including
 * the partition stride term for HBM. */
void nx_operand_span(const nx_operand *op, uint64_t *lo, uint64_t *hi);

#ifdef __cplusplus
}
#endif

#endif
