/* The .nxs text assembly language: assembler and disassembler.
 * Grammar and examples: docs/ISA.md ("Assembly language"). The disassembler prints the
 * canonical form; assembling it gives the same program, so
 * .nxs -> .nxb -> .nxs -> .nxb is byte-identical. */
#ifndef NXSIM_ISA_ASM_H
#define NXSIM_ISA_ASM_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Assembles `text` (len bytes, need not be NUL-terminated). `filename` is
 * used in messages, which read "FILE:LINE:COL: expected X, found Y". Fills
 * `out` (caller frees with nx_program_free on success). Performs the checks
 * that need no machine (syntax, names, kinds, ranges); geometry checks are
 * nx_program_validate's. */
int nx_assemble(const char *filename, const char *text, size_t len,
                nx_program *out, nx_error *err);
int nx_assemble_file(const char *path, nx_program *out, nx_error *err);

/* An instruction of a program by place: stream (core, engine), position. */
typedef struct nx_insn_ref {
    uint32_t core;
    uint32_t engine; /* nx_engine */
    uint32_t index;
} nx_insn_ref;
/* nx_assemble, also telling the order in which the instructions appear in
 * the text, across streams: *order_out (malloc'd, the caller frees; NULL
 * when there is none) gets *count_out entries. A text written in program
 * order (each instruction as if the ones above it had completed) can so be
 * synchronised afterwards (api/program_order.c). */
int nx_assemble_ordered(const char *filename, const char *text, size_t len, nx_program *out,
                        nx_insn_ref **order_out, uint32_t *count_out, nx_error *err);

/* Writes the canonical text of `p` to f. Returns 0 or -1 (write error). */
int nx_disassemble(const nx_program *p, FILE *f, nx_error *err);
/* Canonical text of one operand / one instruction (including its wait= and
 * inc= suffixes) into buf, like snprintf: returns the length that would have
 * been written. */
size_t nx_format_operand(char *buf, size_t len, const nx_operand *op);
size_t nx_format_insn(char *buf, size_t len, const nx_insn *insn);

#ifdef __cplusplus
}
#endif

#endif
