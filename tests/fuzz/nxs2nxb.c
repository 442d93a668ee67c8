/* Assembles a .nxs program into a .nxb file without validating it against a
 * machine: the seeds of the .nxb harness (tests/fuzz/CMakeLists.txt). */
#include <stdio.h>

#include "isa/asm.h"
#include "isa/encode.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN.nxs OUT.nxb\n", argv[0]);
        return 2;
    }
    nx_program p;
    nx_error err;
    if (nx_assemble_file(argv[1], &p, &err) != 0 || nx_program_save_file(argv[2], &p, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    nx_program_free(&p);
    return 0;
}
