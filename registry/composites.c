/* The inventory's composite kernels and the lookup that reaches them after
 * the registry (registry/composites.h). */
#include "composites.h"

#include <string.h>

#include "registry/families/families.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/matmul/matmul.h"
#include "kernels/norms/norms.h"
#include "kernels/tutorial/tutorial.h"
#include "topk_composite.h"

static const nx_leaf topk_leaf = {"topk", nx_topk_composite};

/* The four kernels of the NKI matrix-multiplication tutorial
 * (kernels/tutorial/tutorial.h), in the tutorial's order. */
static const nx_leaf tut_tiled = {"nx_tutorial_matmul_tiled", nx_tutorial_matmul_tiled};
static const nx_leaf tut_hoist = {"nx_tutorial_matmul_hoist_load", nx_tutorial_matmul_hoist_load};
static const nx_leaf tut_block = {"nx_tutorial_matmul_block_free_dimension", nx_tutorial_matmul_block_free_dimension};
static const nx_leaf tut_opt = {"nx_tutorial_matmul_fully_optimized", nx_tutorial_matmul_fully_optimized};
static const nx_leaf rmsnorm_leaf = {"nx_rmsnorm", nx_rmsnorm};
static const nx_leaf softmax_leaf = {"nx_softmax", nx_softmax};
static const nx_leaf layernorm_leaf = {"nx_layernorm", nx_layernorm};
static const nx_leaf cumsum_leaf = {"nx_cumsum", nx_cumsum};
static const nx_leaf rope_leaf = {"nx_rope", nx_rope};
static const nx_leaf matmul_leaf = {"nx_matmul", nx_matmul};
#define TUT_CONFIG(leaf) {.kernel_func = &(leaf), .operand_count = NX_OPERANDS_ALL, .additional_args_builder = NULL, \
                          .requires_multicore_grid = false, .output_is_parameter = false}

/* The inventory's composites, one row each. */
static const nx_composite inventory_items[] = {
    {.name = "topk", .family = "topk",
     .config = {.kernel_func = &topk_leaf, .operand_count = NX_OPERANDS_ALL, .additional_args_builder = &nx_args_attrs,
                .requires_multicore_grid = true, .output_is_parameter = false},
     .rules = &nx_rules_topk,
     .via = "attribute method (SupportedTopkMethods; AUTO: measured cost table)"},
    {.name = "nki_matmul_tiled", .family = "tutorial", .config = TUT_CONFIG(tut_tiled),
     .rules = &nx_rules_tutorial_matmul, .via = "nxsim run nki_matmul_tiled (NKI matmul tutorial, original tiled)"},
    {.name = "nki_matmul_hoist_load", .family = "tutorial", .config = TUT_CONFIG(tut_hoist),
     .rules = &nx_rules_tutorial_matmul, .via = "nxsim run nki_matmul_hoist_load (NKI matmul tutorial, optimization 1)"},
    {.name = "nki_matmul_block_free_dimension", .family = "tutorial", .config = TUT_CONFIG(tut_block),
     .rules = &nx_rules_tutorial_matmul, .via = "nxsim run nki_matmul_block_free_dimension (NKI matmul tutorial, optimization 2)"},
    {.name = "nki_matmul_fully_optimized", .family = "tutorial", .config = TUT_CONFIG(tut_opt),
     .rules = &nx_rules_tutorial_matmul_fully_optimized, .via = "nxsim run nki_matmul_fully_optimized (NKI matmul tutorial, optimization 3)"},
    {.name = "rmsnorm", .family = "norms", .config = TUT_CONFIG(rmsnorm_leaf),
     .rules = &nx_rules_rmsnorm, .via = "nxsim run rmsnorm (attributes eps, quant, fp8_max, residual)"},
    {.name = "softmax", .family = "norms", .config = TUT_CONFIG(softmax_leaf),
     .rules = &nx_rules_softmax, .via = "nxsim run softmax (ONNX Softmax, attribute axis)"},
    {.name = "layernorm", .family = "norms", .config = TUT_CONFIG(layernorm_leaf),
     .rules = &nx_rules_layernorm, .via = "nxsim run layernorm (ONNX LayerNormalization, attributes axis, epsilon, bias)"},
    {.name = "cumsum", .family = "elementwise", .config = TUT_CONFIG(cumsum_leaf),
     .rules = &nx_rules_cumsum, .via = "nxsim run cumsum (ONNX CumSum, attributes axis, exclusive, reverse)"},
    {.name = "rope", .family = "elementwise", .config = TUT_CONFIG(rope_leaf),
     .rules = &nx_rules_rope, .via = "nxsim run rope (attribute layout: half, interleaved)"},
    {.name = "matmul", .family = "matmul", .config = TUT_CONFIG(matmul_leaf),
     .rules = &nx_rules_matmul, .via = "nxsim run matmul (ONNX MatMul: batched, broadcast, any M, K, N)"},
};
static const nx_composite_table inventory_composites = {inventory_items,
                                                        sizeof inventory_items / sizeof inventory_items[0]};

const nx_composite_table *nx_composites(void) { return &inventory_composites; }

const nx_composite *nx_composite_get(const nx_composite_table *t, const char *name) {
    if (!t) t = nx_composites();
    for (uint32_t i = 0; name && i < t->count; i++) {
        const nx_composite *c = &t->items[i];
        if (strcmp(c->name, name) == 0 && c->config.kernel_func && c->config.kernel_func->fn) return c;
    }
    return NULL;
}

int nx_kernel_lookup(const nx_kernel_registry *reg, const nx_composite_table *comps,
                     const char *func_name, nx_kernel_target *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    const nx_registry_entry *e = nx_registry_get(reg, func_name);
    if (e) {
        *out = (nx_kernel_target){e->key, &e->config, e->family, e->rules, e, NULL};
        return 0;
    }
    const nx_composite *c = nx_composite_get(comps, func_name);
    if (c) {
        *out = (nx_kernel_target){c->name, &c->config, c->family, c->rules, NULL, c};
        return 0;
    }
    return nx_registry_miss(reg, func_name, err);
}
