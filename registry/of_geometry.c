/* The kernels' entry points for callers that hold only a geometry
 * (nx_kctx_new, kernels/author/author.h; nx_wg_plan_make,
 * kernels/conv/wgrad/wgrad_core.h): the machine description is the preset
 * the geometry names, else the default preset (sim/machine.h
 * nx_machine_of_geometry). They live in registry/, which may load machine
 * files, because kernels/ never reaches sim/. Transitional: the benches that
 * trace leaves or describe plans themselves call them; every other caller
 * passes the whole description (nx_kctx_new_machine,
 * nx_wg_plan_make_machine). */
#include "isa/builder.h"
#include "kernels/author/author.h"
#include "kernels/conv/wgrad/wgrad_core.h"
#include "sim/machine.h"

nx_kctx *nx_kctx_new(nx_builder *b, uint32_t program_id, uint32_t num_programs) {
    nx_machine m;
    nx_error err;
    if (!b || nx_machine_of_geometry(nx_builder_geometry(b), &m, &err) != 0) return NULL;
    return nx_kctx_new_machine(b, &m, program_id, num_programs);
}

int nx_wg_plan_make(const nx_geometry *geo, const nx_wg_problem *p, const nx_wg_limits *lim, nx_wg_plan *pl,
                    nx_error *err) {
    nx_machine m;
    if (nx_machine_of_geometry(geo, &m, err) != 0) return -1;
    return nx_wg_plan_make_machine(&m, p, lim, pl, err);
}
