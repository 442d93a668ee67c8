/* The top-k method mapping (kernels/topk/topk_methods.h). */
#include "topk_methods.h"

#include <string.h>

#include "kernels/topk/topk.h"

static const nx_topk_method mapping[NX_TOPK_METHOD_COUNT] = {
    {NX_TOPK_SCANNING, "SCANNING", "SupportedTopkMethods.SCANNING", "naive_scanning_topk", naive_scanning_topk},
    {NX_TOPK_CASCADED, "CASCADED", "SupportedTopkMethods.CASCADED", "cascaded_2_stage_topk", cascaded_2_stage_topk},
    {NX_TOPK_ROTATIONAL, "ROTATIONAL", "SupportedTopkMethods.ROTATIONAL", "rotational_topk", rotational_topk},
};

const nx_topk_method *nx_topk_method_mapping(uint32_t *count) {
    *count = NX_TOPK_METHOD_COUNT;
    return mapping;
}

const nx_topk_method *nx_topk_method_get(nx_topk_method_id m) {
    for (int i = 0; i < NX_TOPK_METHOD_COUNT; i++)
        if (mapping[i].method == m) return &mapping[i];
    return NULL;
}

int nx_topk_method_from_name(const char *member, nx_topk_method_id *out, nx_error *err) {
    for (int i = 0; i < NX_TOPK_METHOD_COUNT; i++) {
        if (strcmp(mapping[i].member, member) == 0) {
            *out = mapping[i].method;
            return 0;
        }
    }
    nx_quoted q; /* the user's text, escaped: the message stays one line */
    return nx_fail(err, "unknown top-k method '%s' (SupportedTopkMethods: SCANNING, CASCADED, ROTATIONAL)",
                   nx_quote(&q, member, NX_QUOTE_NAME));
}
