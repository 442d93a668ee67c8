/* libnxsim (include/nxsim/nxsim.h): sessions, calls and nx_session_run,
 * which prepares the macro-op through the registry's one preparation step
 * as `nxsim run` does (registry/prepare.h: the default op without operands,
 * attributes over it, the attribute check, results by the kernel's rule)
 * and runs it through nx_run_op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "isa/dtype.h"
#include "registry/prepare.h"

NXSIM_API nx_status nx_session_open(const char *machine, nx_session **out, nx_message *msg) {
    if (!out) return api_failf(msg, NX_ERR_USAGE, "nx_session_open: out is NULL");
    *out = NULL;
    nx_session *s = calloc(1, sizeof *s);
    if (!s) return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    nx_error err;
    if (nx_machine_load(machine ? machine : nx_machine_default(), &s->machine, &err) != 0) {
        free(s);
        return api_fail(msg, NX_ERR_INPUT, &err);
    }
    s->L = nx_lowerer_new_machine(&s->machine, NULL, NULL);
    if (!s->L) {
        free(s);
        return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    }
    *out = s;
    api_ok(msg);
    return NX_OK;
}

NXSIM_API void nx_session_close(nx_session *s) {
    if (!s) return;
    nx_lowerer_free(s->L);
    free(s);
}

NXSIM_API const char *nx_session_machine(const nx_session *s) { return s ? s->machine.geo.name : NULL; }

NXSIM_API const char *const *nx_machine_presets_list(void) { return nx_machine_presets(); }

NXSIM_API nx_status nx_call_new(const char *func_name, nx_call **out, nx_message *msg) {
    if (!out || !func_name) return api_failf(msg, NX_ERR_USAGE, "nx_call_new: a required argument is NULL");
    *out = NULL;
    nx_call *c = calloc(1, sizeof *c);
    if (!c) return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    nx_macro_op_init(&c->op);
    nx_error err;
    if (nx_macro_op_set_func_name(&c->op, func_name, &err) != 0) {
        nx_call_free(c);
        return api_fail(msg, NX_ERR_INPUT, &err);
    }
    *out = c;
    api_ok(msg);
    return NX_OK;
}

NXSIM_API void nx_call_free(nx_call *c) {
    if (!c) return;
    nx_macro_op_free(&c->op);
    free(c);
}

NXSIM_API nx_status nx_call_add_operand(nx_call *c, const char *dtype, uint32_t ndims, const uint64_t *shape,
                                        const void *data, nx_message *msg) {
    if (!c || !dtype || (ndims && !shape)) return api_failf(msg, NX_ERR_USAGE, "nx_call_add_operand: a required argument is NULL");
    nx_dtype dt;
    uint32_t i = c->op.n_operands;
    if (nx_dtype_from_name(dtype, &dt) != 0)
        return api_failf(msg, NX_ERR_INPUT, "operand %u: unknown dtype '%s'", i, dtype);
    if (i >= NX_OP_MAX_TENSORS) return api_failf(msg, NX_ERR_INPUT, "operand %u: at most %d operands", i, NX_OP_MAX_TENSORS);
    char name[16];
    snprintf(name, sizeof name, "in%u", i);
    nx_error err;
    if (nx_macro_op_add_operand(&c->op, name, dt, ndims, shape, &err) != 0) return api_fail(msg, NX_ERR_INPUT, &err);
    c->data[i] = data;
    api_ok(msg);
    return NX_OK;
}

NXSIM_API nx_status nx_call_set_attr(nx_call *c, const char *name, const char *json, nx_message *msg) {
    if (!c || !name || !json) return api_failf(msg, NX_ERR_USAGE, "nx_call_set_attr: a required argument is NULL");
    char source[128];
    snprintf(source, sizeof source, "attribute %.100s", name);
    nx_value v;
    nx_error err;
    if (nx_value_parse(source, json, &v, &err) != 0) return api_fail(msg, NX_ERR_INPUT, &err);
    if (nx_attrs_set(&c->op.attrs, name, &v, &err) != 0) {
        nx_value_free(&v);
        return api_fail(msg, NX_ERR_INPUT, &err);
    }
    api_ok(msg);
    return NX_OK;
}

static nx_status status_of(nx_run_failure f) {
    switch (f) {
    case NX_RUN_BAD_INPUT: return NX_ERR_INPUT;
    case NX_RUN_RACE: return NX_ERR_RACE;
    default: return NX_ERR_RUNTIME;
    }
}

NXSIM_API nx_status nx_session_run(nx_session *s, const nx_call *c, const nx_config *cfg, nx_result **out,
                                   nx_message *msg) {
    if (!s || !c || !out) return api_failf(msg, NX_ERR_USAGE, "nx_session_run: a required argument is NULL");
    *out = NULL;
    nx_run_options opt;
    nx_status cs = api_run_options(cfg, "nx_session_run", &opt, msg);
    if (cs != NX_OK) return cs;
    nx_error err;
    nx_result *r = calloc(1, sizeof *r);
    if (!r) return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    r->session = s;
    r->is_op = 1;
    /* the one preparation (registry/prepare.h): the call's operands, or the
     * kernel's default op with the call's attributes over it */
    if (nx_op_prepare(s->L, &c->op, NULL, &r->prep, &err) != 0) {
        nx_status st = r->prep.failed == NX_PREPARE_ATTR_SET ? NX_ERR_MEMORY : NX_ERR_INPUT;
        nx_result_free(r);
        return api_fail(msg, st, &err);
    }
    const void *inputs[NX_OP_MAX_TENSORS] = {0};
    for (uint32_t i = 0; i < c->op.n_operands; i++) inputs[i] = c->data[i];
    if (nx_run_op(s->L, &s->machine, &r->prep, inputs, &opt, &r->run, &err) != 0) {
        nx_status st = status_of(r->run.failure);
        nx_result_free(r);
        return api_fail(msg, st, &err);
    }
    r->prog = r->run.prog;
    r->count = r->prep.op.n_results;
    r->tensor = calloc(r->count ? r->count : 1, sizeof *r->tensor);
    r->data = calloc(r->count ? r->count : 1, sizeof *r->data);
    if (!r->tensor || !r->data) {
        nx_result_free(r);
        return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    }
    for (uint32_t j = 0; j < r->count; j++) {
        r->tensor[j] = r->run.result_tensor[j];
        r->data[j] = r->run.results[j];
    }
    *out = r;
    api_ok(msg);
    return NX_OK;
}
