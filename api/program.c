/* libnxsim (include/nxsim/nxsim.h): ISA programs and nx_session_exec, the
 * library's `nxsim exec` (cli/cmd_exec.c): validate against the machine,
 * place the inputs (given, or pseudo-random), nx_run_program, the outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "isa/program_load.h"
#include "isa/asm.h"
#include "isa/dtype.h"
#include "isa/tensor_random.h"

NXSIM_API nx_status nx_prog_load(const char *path, nx_prog **out, nx_message *msg) {
    if (!path || !out) return api_failf(msg, NX_ERR_USAGE, "nx_prog_load: a required argument is NULL");
    *out = NULL;
    nx_prog *p = calloc(1, sizeof *p);
    if (!p) return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    nx_error err;
    if (nx_program_load(path, &p->prog, &err) != 0) {
        free(p);
        return api_fail(msg, NX_ERR_INPUT, &err);
    }
    *out = p;
    api_ok(msg);
    return NX_OK;
}

NXSIM_API nx_status nx_prog_assemble(const char *text, const char *name, nx_prog **out, nx_message *msg) {
    if (!text || !out) return api_failf(msg, NX_ERR_USAGE, "nx_prog_assemble: a required argument is NULL");
    *out = NULL;
    nx_prog *p = calloc(1, sizeof *p);
    if (!p) return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    nx_error err;
    if (nx_assemble(name ? name : "<text>", text, strlen(text), &p->prog, &err) != 0) {
        free(p);
        return api_fail(msg, NX_ERR_INPUT, &err);
    }
    *out = p;
    api_ok(msg);
    return NX_OK;
}

NXSIM_API void nx_prog_free(nx_prog *p) {
    if (!p) return;
    nx_program_free(&p->prog);
    free(p);
}

NXSIM_API const char *nx_prog_machine(const nx_prog *p) { return p ? p->prog.machine : NULL; }

NXSIM_API uint32_t nx_prog_tensor_count(const nx_prog *p) { return p ? p->prog.tensor_count : 0; }

static void tensor_info(const nx_tensor_decl *t, nx_tensor_info *out) {
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = nx_dtype_name((nx_dtype)t->dtype);
    out->role = nx_role_name((nx_tensor_role)t->role);
    out->ndims = t->ndims;
    for (uint32_t d = 0; d < t->ndims && d < 6; d++) out->shape[d] = t->shape[d];
    out->bytes = nx_tensor_bytes(t);
}

NXSIM_API nx_status nx_prog_tensor(const nx_prog *p, uint32_t i, nx_tensor_info *out) {
    if (!p || !out || i >= p->prog.tensor_count) return NX_ERR_USAGE;
    tensor_info(&p->prog.tensors[i], out);
    return NX_OK;
}

NXSIM_API nx_status nx_result_tensor(const nx_result *r, uint32_t j, nx_tensor_info *out) {
    if (!r || !out || j >= r->count) return NX_ERR_USAGE;
    tensor_info(&r->prog->tensors[r->tensor[j]], out);
    if (r->is_op) {
        out->name = r->prep.op.results[j].name;
        if (r->prep.op.results[j].ndims == 0) out->ndims = 0; /* numpy.matmul of two 1-D operands */
    }
    return NX_OK;
}

/* Binds the given inputs; the other inputs get pseudo-random values. */
static nx_status place_inputs(const nx_program *p, nx_state *st, uint32_t n, const char *const *names,
                              const void *const *data, const uint64_t *bytes, uint64_t seed, nx_message *msg) {
    uint8_t *given = calloc(p->tensor_count ? p->tensor_count : 1, 1);
    if (!given) return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    nx_status status = NX_OK;
    for (uint32_t k = 0; k < n && status == NX_OK; k++) {
        int i = names[k] ? nx_program_find_tensor(p, names[k]) : -1;
        const nx_tensor_decl *t = i >= 0 ? &p->tensors[i] : NULL;
        if (!t)
            status = api_failf(msg, NX_ERR_INPUT, "input %s: the program has no tensor '%s'", names[k] ? names[k] : "(null)",
                               names[k] ? names[k] : "(null)");
        else if (t->role != NX_ROLE_INPUT)
            status = api_failf(msg, NX_ERR_INPUT, "input %s: tensor '%s' has role %s, not input", t->name, t->name,
                               nx_role_name((nx_tensor_role)t->role));
        else if (given[i])
            status = api_failf(msg, NX_ERR_INPUT, "input %s is given twice", t->name);
        else if (!data[k] || bytes[k] != nx_tensor_bytes(t))
            status = api_failf(msg, NX_ERR_INPUT, "input %s: %llu bytes given, the tensor (%s) has %llu", t->name,
                               (unsigned long long)(data[k] ? bytes[k] : 0), nx_dtype_name((nx_dtype)t->dtype),
                               (unsigned long long)nx_tensor_bytes(t));
        else {
            memcpy(st->hbm + t->offset, data[k], bytes[k]);
            given[i] = 1;
        }
    }
    for (uint32_t i = 0; i < p->tensor_count && status == NX_OK; i++)
        if (p->tensors[i].role == NX_ROLE_INPUT && !given[i])
            nx_tensor_fill_random(&p->tensors[i], st->hbm + p->tensors[i].offset, seed, i);
    free(given);
    return status;
}

NXSIM_API nx_status nx_session_exec(nx_session *s, const nx_prog *p, uint32_t n, const char *const *names,
                                    const void *const *data, const uint64_t *bytes, const nx_config *cfg,
                                    nx_result **out, nx_message *msg) {
    if (!s || !p || !out || (n && (!names || !data || !bytes)))
        return api_failf(msg, NX_ERR_USAGE, "nx_session_exec: a required argument is NULL");
    *out = NULL;
    nx_run_options opt;
    nx_status cs = api_run_options(cfg, "nx_session_exec", &opt, msg);
    if (cs != NX_OK) return cs;
    if (opt.check) return api_failf(msg, NX_ERR_USAGE, "nx_session_exec: a program has no reference to check against");
    nx_error err;
    const nx_program *prog = &p->prog;
    if (nx_program_validate(prog, &s->machine.geo, &err) != 0) return api_fail(msg, NX_ERR_INPUT, &err);
    nx_result *r = calloc(1, sizeof *r);
    if (!r) return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    r->session = s;
    r->prog = prog;
    if (nx_state_init(&r->state, &s->machine.geo, prog->cores, prog->hbm_bytes, prog->sem_count, &err) != 0) {
        nx_result_free(r);
        return api_fail(msg, NX_ERR_MEMORY, &err);
    }
    r->have_state = 1;
    nx_status st = place_inputs(prog, &r->state, n, names, data, bytes, opt.seed, msg);
    if (st != NX_OK) {
        nx_result_free(r);
        return st;
    }
    nx_run_failure why;
    if (nx_run_program(&s->machine, prog, &r->state, &opt, &r->trace, &why, &err) != 0) {
        nx_result_free(r);
        return api_fail(msg, why == NX_RUN_RACE ? NX_ERR_RACE : why == NX_RUN_BAD_INPUT ? NX_ERR_USAGE : NX_ERR_RUNTIME,
                        &err);
    }
    for (uint32_t i = 0; i < prog->tensor_count; i++) r->count += prog->tensors[i].role == NX_ROLE_OUTPUT;
    r->tensor = calloc(r->count ? r->count : 1, sizeof *r->tensor);
    r->data = calloc(r->count ? r->count : 1, sizeof *r->data);
    if (!r->tensor || !r->data) {
        nx_result_free(r);
        return api_failf(msg, NX_ERR_MEMORY, "out of memory");
    }
    uint32_t j = 0;
    for (uint32_t i = 0; i < prog->tensor_count; i++)
        if (prog->tensors[i].role == NX_ROLE_OUTPUT) {
            r->tensor[j] = (int)i;
            r->data[j++] = r->state.hbm + prog->tensors[i].offset;
        }
    *out = r;
    api_ok(msg);
    return NX_OK;
}
