/* Prints the libFuzzer dictionary of the .nxs harness (fuzz_asm) from the
 * tables themselves, so it never drifts from them: directives, mnemonics,
 * slot and parameter names, ALU ops, activation functions, flags, dtypes,
 * engines, roles, operand kinds and the punctuation of operands. */
#include <stdio.h>

#include "isa/dtype.h"
#include "isa/insn.h"
#include "isa/opcodes.h"
#include "isa/program.h"

static void word(const char *w) {
    if (!w) return;
    putchar('"');
    for (const char *p = w; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if ((unsigned char)*p < 0x20)
            printf("\\x%02X", (unsigned char)*p);
        else
            putchar(*p);
    }
    puts("\"");
}

int main(void) {
    static const char *const fixed[] = {
        ".machine ", ".cores ", ".semaphores ", ".hbm ", ".tensor ", ".core ", ".engine ",
        "sbuf:", "psum:", "hbm:", "pat:", "#", "@", "{}", "{1:", "[0:128]", "[1/", "](", ")",
        "wait=sem0>=", "inc=sem0", "+", "=", ",", ":", "\n", " ", ";", "#nan", "#-inf", "0x",
        "9223372036854775807", "-2147483648", "4294967295", "trn1", "trn2", "[", "]",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) word(fixed[i]);
    for (unsigned o = 0; nx_opcode_lookup(o); o++) {
        const nx_opcode_info *row = nx_opcode_lookup(o);
        word(row->mnemonic);
        for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) word(row->slot[s].name);
        for (unsigned k = 0; k < 2; k++) word(row->iparam_name[k]);
    }
    word("op0=");
    word("op1=");
    word("func=");
    for (unsigned a = 0; a < NX_ALU_COUNT; a++) word(nx_alu_name((nx_alu_op)a));
    for (unsigned f = 0; f < NX_ACT_COUNT; f++) word(nx_act_name((nx_act_func)f));
    for (unsigned b = 0; b < NX_FLAG_BITS; b++) word(nx_flag_name(b));
    for (unsigned d = 0; d < NX_DT_COUNT; d++) word(nx_dtype_name((nx_dtype)d));
    for (unsigned e = 0; e < NX_ENG_COUNT; e++) word(nx_engine_name((nx_engine)e));
    for (unsigned r = 0; r < NX_ROLE_COUNT; r++) word(nx_role_name((nx_tensor_role)r));
    return 0;
}
