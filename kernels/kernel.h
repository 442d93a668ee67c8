/* The leaf-kernel contract: what a leaf receives when the lowering driver
 * (registry/) traces it; the attribute values it reads are isa/values.h.
 *
 * A leaf is traced once per program_id of its grid (1 core, or VNC(2) = 2
 * cores): it emits its instructions for core `program_id` through the
 * authoring context (kernels/author/author.h), which allocates tiles and inserts
 * semaphores automatically. A leaf never runs anything (kernels/ never calls
 * sim/); the driver owns the program it builds.
 *
 * Ownership: everything a leaf receives is borrowed for the duration of the
 * call. Errors: a leaf returns 0, or -1 with a one-line message naming the
 * operand and the rule it breaks (e.g. "operand 0 (x): permutation [2,0,1]
 * does not reduce to a swap of the last two dim groups"). */
#ifndef NXSIM_KERNELS_KERNEL_H
#define NXSIM_KERNELS_KERNEL_H

#include <stdint.h>

#include "isa/dtype.h"
#include "isa/error.h"
#include "isa/values.h" /* attribute values: what the seed's get_attrs_dict() returns */

/* ---- call arguments ---- */
#define NX_KERNEL_MAX_DIMS 6
#define NX_KERNEL_MAX_ARGS 16

/* A tensor the leaf reads or writes: an HBM tensor of the program. */
typedef struct nx_tensor_ref {
    char name[64];          /* the program's tensor name */
    nx_dtype dtype;
    uint32_t ndims;
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    uint64_t hbm_offset;    /* bytes */
} nx_tensor_ref;

typedef struct nx_kernel_call {
    /* call_args: the first operand_count inputs (all if the config says none),
     * then the outputs. */
    const nx_tensor_ref *args;
    uint32_t nargs;
    uint32_t n_inputs;       /* args[0 .. n_inputs) are inputs, the rest outputs */
    const nx_attrs *additional_args; /* from the config's args builder (may be empty) */
    /* The op's own attribute dictionary (what the seed's get_attrs_dict()
     * returns), or NULL. nxsim addition: a leaf whose seed config passes no
     * arguments (SelectAndScatter has no args builder) still reads its
     * attributes here. */
    const nx_attrs *attrs;
} nx_kernel_call;

struct nx_kctx; /* kernels/author/author.h */

/* A leaf kernel: emits program `program_id` of the grid into k. */
typedef int (*nx_leaf_fn)(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
