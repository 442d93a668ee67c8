/* The second, kernel-local registry of the seed: the top-k method mapping
 * (SUPPORTED_TOPK_METHOD_MAPPING, keyed by the enum SupportedTopkMethods).
 * The first member is SCANNING (its function is naive_scanning_topk); there
 * is no NAIVE_SCANNING. The mapping is static and read-only; `fn` is NULL
 * while a method's leaf is not implemented yet. */
#ifndef NXSIM_REGISTRY_TOPK_METHODS_H
#define NXSIM_REGISTRY_TOPK_METHODS_H

#include <stdint.h>

#include "kernels/kernel.h"

typedef enum SupportedTopkMethods {
    SCANNING = 0,   /* naive_scanning_topk */
    CASCADED = 1,   /* cascaded_2_stage_topk */
    ROTATIONAL = 2, /* rotational_topk */
} SupportedTopkMethods;

#define NX_TOPK_METHOD_COUNT 3

typedef struct nx_topk_method {
    SupportedTopkMethods method;
    const char *member;   /* "SCANNING" */
    const char *function; /* "naive_scanning_topk" */
    nx_leaf_fn fn;        /* NULL: not implemented yet */
} nx_topk_method;

/* The mapping in the seed's order (SCANNING, CASCADED, ROTATIONAL); *count
 * gets NX_TOPK_METHOD_COUNT. */
const nx_topk_method *nx_topk_method_mapping(uint32_t *count);
/* The entry of method m, or NULL for a value outside the enum. */
const nx_topk_method *nx_topk_method_get(SupportedTopkMethods m);
/* Parses a member name ("SCANNING", ...). 0, or -1 with the valid names. */
int nx_topk_method_from_name(const char *member, SupportedTopkMethods *out, nx_error *err);

#endif
