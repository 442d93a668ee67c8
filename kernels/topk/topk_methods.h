/* The second, kernel-local registry (docs/parts/registry.md): the top-k
 * method mapping, keyed by the method enum. The Neuron compiler names them
 * SUPPORTED_TOPK_METHOD_MAPPING and the Python Enum SupportedTopkMethods;
 * those names are kept as data (`member`, printed as
 * "SupportedTopkMethods.SCANNING"), the C symbols carry the nx_ prefix.
 * The first member is SCANNING (its function is naive_scanning_topk); there
 * is no NAIVE_SCANNING. The mapping is static and read-only; `fn` is NULL
 * while a method's leaf is not implemented yet. */
#ifndef NXSIM_KERNELS_TOPK_METHODS_H
#define NXSIM_KERNELS_TOPK_METHODS_H

#include <stdint.h>

#include "kernels/kernel.h"

typedef enum nx_topk_method_id {
    NX_TOPK_SCANNING = 0,   /* SupportedTopkMethods.SCANNING: naive_scanning_topk */
    NX_TOPK_CASCADED = 1,   /* SupportedTopkMethods.CASCADED: cascaded_2_stage_topk */
    NX_TOPK_ROTATIONAL = 2, /* SupportedTopkMethods.ROTATIONAL: rotational_topk */
} nx_topk_method_id;

#define NX_TOPK_METHOD_COUNT 3

typedef struct nx_topk_method {
    nx_topk_method_id method;
    const char *member;   /* "SCANNING" */
    const char *via;      /* "SupportedTopkMethods.SCANNING" */
    const char *function; /* "naive_scanning_topk" */
    nx_leaf_fn fn;        /* NULL: not implemented yet */
} nx_topk_method;

/* The mapping in the seed's order (SCANNING, CASCADED, ROTATIONAL); *count
 * gets NX_TOPK_METHOD_COUNT. */
const nx_topk_method *nx_topk_method_mapping(uint32_t *count);
/* The entry of method m, or NULL for a value outside the enum. */
const nx_topk_method *nx_topk_method_get(nx_topk_method_id m);
/* Parses a member name ("SCANNING", ...). 0, or -1 with the valid names. */
int nx_topk_method_from_name(const char *member, nx_topk_method_id *out, nx_error *err);

#endif
