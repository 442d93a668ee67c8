/* Binary encodings: the fixed-size instruction word and the .nxb container.
 * Both are little-endian and documented byte by byte in docs/ISA.md
 * ("Encoding", "Container"). Decoding is total over untrusted bytes: every
 * field is range-checked and reserved/unused bytes must be zero, so that
 * encode(decode(x)) == x for every accepted x. */
#ifndef NXSIM_ISA_ENCODE_H
#define NXSIM_ISA_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "insn.h"
#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NX_INSN_WORD_BYTES 320
#define NX_OPERAND_BYTES 56
#define NX_NXB_MAGIC "NXSB"
#define NX_NXB_VERSION 1
#define NX_NXB_HEADER_BYTES 64
#define NX_NXB_TENSOR_BYTES 128
#define NX_NXB_MAX_TENSORS 4096u /* tensor table entries a container may hold */

/* Instruction word <-> record. decode checks field ranges (opcode, enums,
 * dtypes, kinds, ndims, zero reserved bytes and unused fields) but not
 * machine geometry (that is nx_program_validate's job). */
void nx_insn_encode(const nx_insn *insn, uint8_t word[NX_INSN_WORD_BYTES]);
int nx_insn_decode(const uint8_t word[NX_INSN_WORD_BYTES], nx_insn *insn, nx_error *err);

/* Program <-> .nxb bytes. encode returns a malloc'd buffer the caller frees.
 * decode fills `out` (caller calls nx_program_free on success; on failure out
 * holds nothing). Errors name the field and byte offset. */
int nx_program_encode(const nx_program *p, uint8_t **out, size_t *len, nx_error *err);
int nx_program_decode(const uint8_t *buf, size_t len, nx_program *out, nx_error *err);

/* File helpers: read whole file / write atomically (temp file + rename, so a
 * failed write leaves no partial output). Errors name the path. */
int nx_program_load_file(const char *path, nx_program *out, nx_error *err);
int nx_program_save_file(const char *path, const nx_program *p, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
