/* See leaf_harness.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "kernels/author/author.h"
#include "leaf_harness.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "kcheck.h"
#include "support.h"

uint64_t leaf_tensor_bytes(const nx_tensor_ref *t) {
    uint64_t n = nx_dtype_size(t->dtype);
    for (uint32_t i = 0; i < t->ndims; i++) n *= t->shape[i];
    return n;
}

void leaf_tensor(nx_tensor_ref *t, const char *name, nx_dtype dt, uint32_t ndims, const uint64_t *shape) {
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt;
    t->ndims = ndims;
    memcpy(t->shape, shape, ndims * sizeof *shape);
}

static nx_builder *trace(leaf_case *c, nx_geometry *geo, nx_error *err, int *rc) {
    *geo = test_geometry(c->machine ? c->machine : "trn2");
    nx_builder *b = nx_builder_new(geo, 1);
    assert_non_null(b);
    for (uint32_t i = 0; i < c->nargs; i++)
        if (nx_builder_tensor(b, c->args[i].name, c->args[i].dtype, c->args[i].ndims, c->args[i].shape,
                              i < c->n_inputs ? NX_ROLE_INPUT : NX_ROLE_OUTPUT, &c->args[i].hbm_offset, err) != 0)
            fail_msg("%s: declare %s: %s", c->what, c->args[i].name, err->msg);
    nx_kernel_call call = {
        .args = c->args, .nargs = c->nargs, .n_inputs = c->n_inputs, .additional_args = c->attrs, .attrs = c->attrs};
    nx_machine km = test_machine_of(geo);
    nx_kctx *k = nx_kctx_new_machine(b, &km, 0, 1);
    assert_non_null(k);
    *rc = c->leaf(k, &call, err);
    if (*rc == 0 && nx_kctx_finish(k, err) != 0) fail_msg("%s: finish: %s", c->what, err->msg);
    nx_kctx_free(k);
    return b;
}

int leaf_trace_only(leaf_case *c, nx_error *err) {
    nx_geometry geo;
    int rc;
    nx_builder *b = trace(c, &geo, err, &rc);
    nx_builder_free(b);
    return rc;
}

static void load_inputs(const leaf_case *c, nx_state *st, const void *const *inputs) {
    for (uint32_t i = 0; i < c->n_inputs; i++)
        memcpy(st->hbm + c->args[i].hbm_offset, inputs[i], leaf_tensor_bytes(&c->args[i]));
}

static void take_outputs(const leaf_case *c, const nx_state *st, uint8_t **out) {
    for (uint32_t j = c->n_inputs; j < c->nargs; j++) {
        uint64_t n = leaf_tensor_bytes(&c->args[j]);
        uint8_t *p = malloc(n ? n : 1);
        assert_non_null(p);
        memcpy(p, st->hbm + c->args[j].hbm_offset, n);
        out[j - c->n_inputs] = p;
    }
}

void leaf_run(leaf_case *c, const void *const *inputs, leaf_result *r) {
    memset(r, 0, sizeof *r);
    nx_error err;
    nx_geometry geo;
    int rc;
    nx_builder *b = trace(c, &geo, &err, &rc);
    if (rc != 0) fail_msg("%s: %s", c->what, err.msg);
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s: builder finish: %s", c->what, err.msg);
    nx_builder_free(b);
    if (test_kcheck_program(&prog, &err) != 0) fail_msg("%s: order check: %s", c->what, err.msg);
    for (uint32_t e = 0; e < NX_ENG_COUNT; e++) r->instructions += prog.stream[0][e].count;

    r->nout = c->nargs - c->n_inputs;
    for (uint32_t j = 0; j < r->nout; j++) r->bytes[j] = leaf_tensor_bytes(&c->args[c->n_inputs + j]);
    nx_state st;
    if (nx_state_init(&st, &geo, 1, prog.hbm_bytes, prog.sem_count, &err) != 0)
        fail_msg("%s: state: %s", c->what, err.msg);
    load_inputs(c, &st, inputs);
    if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s: exec: %s", c->what, err.msg);
    take_outputs(c, &st, r->out);

    if (!c->skip_model) {
        nx_machine m;
        if (nx_machine_load(c->machine ? c->machine : "trn2", &m, &err) != 0) fail_msg("machine: %s", err.msg);
        nx_state_reset(&st);
        load_inputs(c, &st, inputs);
        nx_sim_options opt = {1, 0};
        nx_sim_result res;
        memset(&res, 0, sizeof res);
        if (nx_sim_run(&m, &prog, &st, &opt, &res, &err) != 0) fail_msg("%s: model: %s", c->what, err.msg);
        if (nx_race_check(&prog, res.log, res.log_count, &err) != 0)
            fail_msg("%s: race detector: %s", c->what, err.msg);
        r->model_ns = res.total_ns;
        nx_sim_result_free(&res);
        take_outputs(c, &st, r->model_out);
    }
    nx_state_free(&st);
    nx_program_free(&prog);
}

void leaf_result_free(leaf_result *r) {
    for (uint32_t j = 0; j < LEAF_MAX_TENSORS; j++) {
        free(r->out[j]);
        free(r->model_out[j]);
    }
    memset(r, 0, sizeof *r);
}

void leaf_expect_bytes(const uint8_t *got, const uint8_t *want, uint64_t bytes, size_t size, const char *what) {
    if (memcmp(got, want, bytes) == 0) return;
    for (uint64_t i = 0; i < bytes; i++)
        if (got[i] != want[i])
            fail_msg("%s: element %llu differs (byte %llu: got 0x%02x, want 0x%02x)", what,
                     (unsigned long long)(i / size), (unsigned long long)i, got[i], want[i]);
}
