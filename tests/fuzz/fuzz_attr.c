/* Fuzzes `nxsim run -a NAME=JSON` (registry/macro_op.h nx_value_parse and the
 * leaves' attribute readers). The input is NAME=JSON as on the command line.
 * Oracles: a rejected value gets a one-line message; an accepted one writes
 * back (nx_value_to_json) to text that parses to the same value (the same
 * text and canonical text again), and set on the default op of every
 * registry entry and of every composite (the string attributes of topk,
 * rmsnorm, rope, conv, ...) it goes down the run path (lower.h) with
 * one-line refusals. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lower.h"
#include "registry/composites.h"
#include "registry/registry.h"
#include "registry/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = nx_fuzz_text(data, size); /* a command-line argument holds no NUL */
    if (!text) return 0;
    char *eq = strchr(text, '=');
    if (!eq || eq == text) {
        free(text);
        return 0; /* the CLI refuses it as a usage error */
    }
    *eq = '\0';
    const char *name = text, *json = eq + 1;
    nx_error err;
    nx_value v;
    if (nx_value_parse("-a fuzz", json, &v, &err) != 0) {
        nx_fuzz_check_message("parse", err.msg);
        free(text);
        return 0;
    }
    char *j1 = nx_value_to_json(&v);
    if (!j1) nx_fuzz_fail("out of memory");
    nx_value back;
    if (nx_value_parse("written", j1, &back, &err) != 0) nx_fuzz_fail("the written value does not parse: %s", err.msg);
    char *j2 = nx_value_to_json(&back);
    if (!j2 || strcmp(j1, j2) != 0) nx_fuzz_fail("parse -> write -> parse -> write is not the identity");
    free(j1);
    free(j2);
    nx_value_free(&back);

    /* Each entry's default op, then the same op with the attribute set. An
     * attribute that makes the op larger than its default (a padding of
     * hundreds) is checked but not lowered: the leaves' planners take time
     * that grows with the shape (a second or more, ten times that under the
     * fuzzer's instrumentation), and a fuzz input must stay well inside the
     * hang timeout; the op harness lowers larger ops. */
    const nx_kernel_registry *reg = nx_get_internal_kernel_registry();
    for (uint32_t k = 0; k < reg->count; k++) {
        const nx_op_rules *rules = reg->entries[k].rules;
        if (!rules || !rules->default_op) continue;
        /* no operands: the preparation builds the default op (registry/prepare.h) */
        nx_macro_op op;
        nx_macro_op_init(&op);
        if (nx_macro_op_set_func_name(&op, reg->entries[k].key, &err) != 0)
            nx_fuzz_fail("default op of %s: %s", reg->entries[k].key, err.msg);
        uint64_t default_bytes = nx_fuzz_lower_and_run(&op, 0);
        nx_value copy;
        if (nx_value_copy(&copy, &v, &err) != 0) nx_fuzz_fail("%s", err.msg);
        if (nx_attrs_set(&op.attrs, name, &copy, &err) != 0) nx_fuzz_fail("%s", err.msg);
        nx_fuzz_lower_and_run(&op, default_bytes < NX_FUZZ_LOWER_MAX_BYTES ? default_bytes : NX_FUZZ_LOWER_MAX_BYTES);
        nx_macro_op_free(&op);
    }
    /* The composites the same way. One that does not read the attribute
     * refuses it in the preparation (the attribute check), before anything
     * is lowered: only that refusal is checked, so the composites' default
     * ops are lowered only for the names they read. */
    const nx_composite_table *comps = nx_composites();
    for (uint32_t c = 0; c < comps->count; c++) {
        const nx_composite *cp = &comps->items[c];
        if (!cp->rules || !cp->rules->default_op || !cp->config.kernel_func || !cp->config.kernel_func->fn) continue;
        int reads = nx_op_rules_reads_attr(cp->rules, name);
        nx_macro_op op;
        nx_macro_op_init(&op);
        if (nx_macro_op_set_func_name(&op, cp->name, &err) != 0)
            nx_fuzz_fail("default op of %s: %s", cp->name, err.msg);
        uint64_t default_bytes = reads ? nx_fuzz_lower_and_run(&op, 0) : 0;
        nx_value copy;
        if (nx_value_copy(&copy, &v, &err) != 0) nx_fuzz_fail("%s", err.msg);
        if (nx_attrs_set(&op.attrs, name, &copy, &err) != 0) nx_fuzz_fail("%s", err.msg);
        nx_fuzz_lower_and_run(&op, default_bytes < NX_FUZZ_LOWER_MAX_BYTES ? default_bytes : NX_FUZZ_LOWER_MAX_BYTES);
        nx_macro_op_free(&op);
    }
    nx_value_free(&v);
    free(text);
    return 0;
}
