/* The roster composites' test harness (roster_case.h). */
#include "roster_case.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kcheck.h"
#include "registry/lower.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "support.h"

static void set_attrs(nx_macro_op *op, const char *attrs) {
    char buf[1024];
    if (attrs && strlen(attrs) >= sizeof buf) fail_msg("attributes longer than %zu bytes: %s", sizeof buf - 1, attrs);
    snprintf(buf, sizeof buf, "%s", attrs ? attrs : "");
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) fail_msg("attribute '%s' has no '='", tok);
        *eq = 0;
        nx_error err;
        nx_value v;
        if (nx_value_parse(tok, eq + 1, &v, &err) != 0 || nx_attrs_set(&op->attrs, tok, &v, &err) != 0)
            fail_msg("%s: %s", tok, err.msg);
    }
}

static uint64_t elems(const roster_operand *o) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < o->nd; d++) n *= o->shape[d];
    return n;
}

int roster_make_op(nx_macro_op *op, const char *func, const roster_operand *ops, uint32_t n, const char *attrs,
                   nx_error *err) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    nx_macro_op_init(op);
    assert_int_equal(nx_macro_op_set_func_name(&given, func, err), 0);
    for (uint32_t i = 0; i < n; i++) {
        assert_true(ops[i].nd <= ROSTER_MAX_DIMS);
        assert_int_equal(nx_macro_op_add_operand(&given, ops[i].name, ops[i].dt, ops[i].nd, ops[i].shape, err), 0);
    }
    set_attrs(&given, attrs);
    nx_machine m = test_machine("trn2");
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    assert_non_null(L);
    nx_prepared p;
    int rc = nx_op_prepare(L, &given, NULL, &p, err);
    nx_macro_op_free(&given);
    nx_lowerer_free(L);
    *op = p.op; /* the prepared op moves to the caller */
    nx_macro_op_init(&p.op);
    nx_prepared_free(&p);
    return rc;
}

/* The prepared form nx_run_op takes, for op (already complete) on L. */
static int prepared_for(const nx_lowerer *L, const nx_macro_op *op, nx_prepared *p, nx_error *err) {
    nx_prepared_init(p);
    if (nx_prepare_target(L, op->func_name, p, err) != 0) return -1;
    return nx_prepare_op(p, op, NX_PREPARE_AS_GIVEN, NULL, err);
}

static uint8_t **make_inputs(const roster_operand *ops, uint32_t n) {
    uint64_t seed = n;
    for (uint32_t i = 0; i < n; i++) seed = seed * 31 + elems(&ops[i]);
    uint8_t **in = calloc(n ? n : 1, sizeof *in);
    assert_non_null(in);
    test_rng r = {seed * 0x9e3779b97f4a7c15ull + 3};
    for (uint32_t i = 0; i < n; i++) {
        uint64_t m = elems(&ops[i]);
        size_t es = nx_dtype_size(ops[i].dt);
        in[i] = malloc(m * es > 0 ? m * es : 1);
        assert_non_null(in[i]);
        for (uint64_t e = 0; e < m; e++)
            nx_dtype_store(ops[i].dt, in[i] + e * es,
                           ops[i].values ? ops[i].values[e] : test_rng_uniform(&r, -2, 2));
    }
    return in;
}

static void free_inputs(uint8_t **in, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) free(in[i]);
    free(in);
}

/* One backend with --check; the results copied into out. */
static void run_one(const char *machine, const nx_macro_op *op, uint8_t **in, int model, roster_outcome *out,
                    const char *what) {
    nx_machine m = test_machine(machine);
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    assert_non_null(L);
    nx_error err;
    nx_run_result res;
    nx_run_options opt = {.backend = model ? NX_RUN_MODEL : NX_RUN_FUNCTIONAL, .race_check = model, .check = 1};
    nx_prepared p;
    if (prepared_for(L, op, &p, &err) != 0) fail_msg("%s: %s", what, err.msg);
    if (nx_run_op(L, &m, &p, (const void *const *)in, &opt, &res, &err) != 0)
        fail_msg("%s (%s): %s", what, model ? "model" : "functional", err.msg);
    nx_prepared_free(&p);
    if (test_kcheck_program(res.prog, &err) != 0) fail_msg("%s: order check: %s", what, err.msg);
    for (uint32_t j = 0; j < op->n_results; j++)
        if (res.check[j].bad)
            fail_msg("%s (%s): result %u differs from the reference at element %llu (tolerance %s)", what,
                     model ? "model" : "functional", j, (unsigned long long)res.check[j].first_bad,
                     res.tolerance[j].text);
    assert_int_equal(res.check_failures, 0);
    assert_true(op->n_results <= ROSTER_MAX_RESULTS);
    out->n = op->n_results;
    for (uint32_t j = 0; j < op->n_results; j++) {
        uint64_t n = 1;
        for (uint32_t d = 0; d < op->results[j].ndims; d++) n *= op->results[j].shape[d];
        out->dt[j] = op->results[j].dtype;
        out->size[j] = n * nx_dtype_size(op->results[j].dtype);
        out->bytes[j] = malloc(out->size[j] ? out->size[j] : 1);
        assert_non_null(out->bytes[j]);
        memcpy(out->bytes[j], res.results[j], out->size[j]);
    }
    nx_run_result_free(&res);
    nx_lowerer_free(L);
}

void roster_outcome_free(roster_outcome *o) {
    for (uint32_t j = 0; j < o->n; j++) free(o->bytes[j]);
    o->n = 0;
}

void roster_run(const char *machine, const char *func, const roster_operand *ops, uint32_t n, const char *attrs,
                roster_outcome *out) {
    nx_macro_op op;
    nx_error err;
    char what[1200];
    snprintf(what, sizeof what, "%s {%s} on %s", func, attrs ? attrs : "", machine);
    if (roster_make_op(&op, func, ops, n, attrs, &err) != 0) fail_msg("%s: %s", what, err.msg);
    uint8_t **in = make_inputs(ops, n);
    roster_outcome model;
    run_one(machine, &op, in, 0, out, what);
    run_one(machine, &op, in, 1, &model, what);
    for (uint32_t j = 0; j < out->n; j++)
        if (memcmp(out->bytes[j], model.bytes[j], out->size[j]) != 0)
            fail_msg("%s: result %u: the model's bytes differ from the functional executor's", what, j);
    roster_outcome_free(&model);
    free_inputs(in, n);
    nx_macro_op_free(&op);
}

void roster_check(const char *machine, const char *func, const roster_operand *ops, uint32_t n, const char *attrs) {
    roster_outcome o;
    roster_run(machine, func, ops, n, attrs, &o);
    roster_outcome_free(&o);
}

void roster_refused(const char *machine, const char *func, const roster_operand *ops, uint32_t n, const char *attrs,
                    const char *msg) {
    nx_macro_op op;
    nx_error err;
    int rc = roster_make_op(&op, func, ops, n, attrs, &err);
    if (rc == 0) {
        /* given values matter to a run-time refusal; random inputs of an
         * absurd shape would only cost memory */
        int given = 0;
        for (uint32_t i = 0; i < n; i++) given |= ops[i].values != NULL;
        uint8_t **in = given ? make_inputs(ops, n) : NULL;
        nx_machine m = test_machine(machine);
        nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
        assert_non_null(L);
        nx_run_result res;
        nx_run_options opt = {.backend = NX_RUN_FUNCTIONAL};
        nx_prepared p;
        rc = prepared_for(L, &op, &p, &err);
        if (rc == 0) rc = nx_run_op(L, &m, &p, (const void *const *)in, &opt, &res, &err);
        if (rc == 0) nx_run_result_free(&res);
        nx_prepared_free(&p);
        nx_lowerer_free(L);
        if (in) free_inputs(in, n);
    }
    nx_macro_op_free(&op);
    if (rc == 0) fail_msg("%s {%s}: not refused (wanted \"%s\")", func, attrs ? attrs : "", msg);
    if (strcmp(err.msg, msg) != 0) fail_msg("%s {%s}: refused with \"%s\", wanted \"%s\"", func, attrs ? attrs : "", err.msg, msg);
}

double roster_value_at(const roster_outcome *o, uint32_t j, uint64_t e) {
    return nx_dtype_load(o->dt[j], o->bytes[j] + e * nx_dtype_size(o->dt[j]));
}
