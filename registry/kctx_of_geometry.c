/* nx_kctx_new (kernels/author/author.h) for callers that hold only a
 * builder: the machine description is the preset its geometry names, else
 * the default preset. It lives in registry/, which may load machine files,
 * because kernels/ never reaches sim/; callers that hold the description
 * use nx_kctx_new_machine. */
#include "isa/builder.h"
#include "kernels/author/author.h"
#include "sim/machine.h"

nx_kctx *nx_kctx_new(nx_builder *b, uint32_t program_id, uint32_t num_programs) {
    nx_machine m;
    nx_error err;
    if (!b || nx_machine_of_geometry(nx_builder_geometry(b), &m, &err) != 0) return NULL;
    return nx_kctx_new_machine(b, &m, program_id, num_programs);
}
