/* Included by every isa/insns/<mnemonic>.c: declares the validate/exec pair
 * of every opcode (names generated from opcodes.def) and pulls in what the
 * semantics need. One file per instruction defines exactly its two
 * functions:
 *   int nx_validate_<ID>(const nx_insn *, nx_engine, const nx_geometry *, nx_error *);
 *   int nx_exec_<ID>(const nx_exec_ctx *, const nx_insn *);
 * where <ID> is the row id from opcodes.def (e.g. nx_exec_TENSOR_TENSOR). */
#ifndef NXSIM_ISA_INSN_IMPL_H
#define NXSIM_ISA_INSN_IMPL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../access.h"
#include "../dtype.h"
#include "../error.h"
#include "../exec.h"
#include "../geometry.h"
#include "../insn.h"
#include "../opcodes.h"
#include "../state.h"
#include "../validate.h"

#define NX_OP(id, mn, eng, cls, par, fl, ip0, ip1, s0, s1, s2, s3, s4)                   \
    int nx_validate_##id(const nx_insn *insn, nx_engine engine,                     \
                         const nx_geometry *geo, nx_error *err);                    \
    int nx_exec_##id(const nx_exec_ctx *ctx, const nx_insn *insn);
#include "../opcodes.def"
#undef NX_OP

#endif
