/* topk_check.h: a top-k leaf on the executor and the model against nx_ref_topk. */
#include "topk_check.h"

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "kcheck.h"
#include "kernels/author/author.h"
#include "kernels/ref/ref.h"
#include "registry/macro_op.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "support.h"

typedef struct setup {
    nx_attrs attrs;
    nx_tensor_ref args[3];
    nx_kernel_call call;
    char what[256];
} setup;

static void set_int(nx_attrs *a, const char *name, int64_t v) {
    nx_error err;
    nx_value x = nx_value_int(v);
    if (nx_attrs_set(a, name, &x, &err) != 0) fail_msg("%s", err.msg);
}

static void make(const topk_case *c, setup *s) {
    memset(s, 0, sizeof *s);
    nx_attrs_init(&s->attrs);
    set_int(&s->attrs, "k", (int64_t)c->k);
    nx_value b = nx_value_bool(c->largest);
    nx_error err;
    if (nx_attrs_set(&s->attrs, "largest", &b, &err) != 0) fail_msg("%s", err.msg);
    if (c->attrs) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", c->attrs);
        for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
            char *eq = strchr(tok, '=');
            if (!eq) fail_msg("attrs '%s': expected name=JSON", c->attrs);
            *eq = 0;
            nx_value v;
            if (nx_value_parse(tok, eq + 1, &v, &err) != 0 || nx_attrs_set(&s->attrs, tok, &v, &err) != 0)
                fail_msg("attrs '%s': %s", c->attrs, err.msg);
        }
    }
    static const char *const names[3] = {"x", "values", "indices"};
    for (int i = 0; i < 3; i++) {
        strcpy(s->args[i].name, names[i]);
        s->args[i].ndims = 2;
        s->args[i].shape[0] = c->rows;
        s->args[i].shape[1] = i == 0 ? c->n : c->k;
        s->args[i].dtype = i == 2 ? NX_DT_INT32 : c->dtype;
    }
    s->call.args = s->args;
    s->call.nargs = 3;
    s->call.n_inputs = 1;
    s->call.additional_args = &s->attrs;
    s->call.attrs = &s->attrs;
    static const char *const kinds[] = {"random", "ties", "equal", "special", "ascending"};
    snprintf(s->what, sizeof s->what, "%s %s [%llu,%llu] k=%llu largest=%d %s grid=%u {%s}", c->name,
             nx_dtype_name(c->dtype), (unsigned long long)c->rows, (unsigned long long)c->n, (unsigned long long)c->k,
             c->largest, kinds[c->data], c->grid, c->attrs ? c->attrs : "");
}

static int trace(const topk_case *c, setup *s, nx_program *prog, nx_error *err) {
    nx_geometry geo = test_geometry("trn2");
    uint32_t grid = c->grid ? c->grid : 1;
    nx_builder *b = nx_builder_new(&geo, grid);
    assert_non_null(b);
    for (int i = 0; i < 3; i++)
        if (nx_builder_tensor(b, s->args[i].name, s->args[i].dtype, 2, s->args[i].shape,
                              i == 0 ? NX_ROLE_INPUT : NX_ROLE_OUTPUT, &s->args[i].hbm_offset, err) != 0)
            fail_msg("declare %s: %s", s->args[i].name, err->msg);
    int rc = 0;
    for (uint32_t pid = 0; pid < grid && rc == 0; pid++) {
        nx_machine km = test_machine_of(&geo);
        nx_kctx *k = nx_kctx_new_machine(b, &km, pid, grid);
        assert_non_null(k);
        rc = c->leaf(k, &s->call, err);
        if (rc == 0 && nx_kctx_finish(k, err) != 0) fail_msg("%s: finish: %s", s->what, err->msg);
        nx_kctx_free(k);
    }
    if (rc == 0 && nx_builder_finish(b, prog, err) != 0) fail_msg("%s: builder: %s", s->what, err->msg);
    nx_builder_free(b);
    return rc;
}

static double special_value(nx_dtype dt, uint64_t r) {
    double big = dt == NX_DT_FP32 ? FLT_MAX : dt == NX_DT_BF16 ? 0x1.fep127 : dt == NX_DT_FP16 ? 65504
               : dt == NX_DT_FP8_E4M3 ? 448 : 57344;
    switch (r % 9) {
    case 0: return INFINITY;
    case 1: return -INFINITY;
    case 2: return NAN;
    case 3: return -0.0;
    case 4: return 0.0;
    case 5: return big;
    case 6: return -big;
    case 7: return 1.0;
    default: return -1.0;
    }
}

void topk_fill(uint8_t *x, nx_dtype dt, uint64_t n, topk_data kind, uint64_t seed) {
    size_t es = nx_dtype_size(dt);
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 0x1234567u};
    int is_float = nx_dtype_is_float(dt);
    for (uint64_t i = 0; i < n; i++) {
        double v;
        switch (kind) {
        case TOPK_TIES: v = (double)(test_rng_next(&r) % 5) - 2; break;
        case TOPK_EQUAL: v = 3; break;
        case TOPK_ASCENDING: v = (double)(i % 1000); break;
        case TOPK_SPECIAL:
            if (test_rng_next(&r) % 3 == 0 && is_float) {
                v = special_value(dt, test_rng_next(&r));
                break;
            }
            /* fall through */
        default:
            v = is_float ? test_rng_uniform(&r, -1, 1) : (double)(int64_t)(test_rng_next(&r) % 200) - 100;
        }
        if (!is_float && dt == NX_DT_UINT8 && v < 0) v = -v;
        if (!is_float && dt == NX_DT_UINT16 && v < 0) v = -v;
        nx_dtype_store(dt, x + i * es, v);
    }
}

static void compare(const setup *s, const topk_case *c, const uint8_t *gv, const int32_t *gi, const uint8_t *wv,
                    const int32_t *wi, const char *backend) {
    size_t es = nx_dtype_size(c->dtype);
    for (uint64_t r = 0; r < c->rows; r++)
        for (uint64_t j = 0; j < c->k; j++) {
            uint64_t e = r * c->k + j;
            if (gi[e] != wi[e] || memcmp(gv + e * es, wv + e * es, es) != 0) {
                fail_msg("%s on the %s: row %llu rank %llu: got %.9g@%d, want %.9g@%d", s->what, backend,
                         (unsigned long long)r, (unsigned long long)j, nx_dtype_load(c->dtype, gv + e * es), gi[e],
                         nx_dtype_load(c->dtype, wv + e * es), wi[e]);
            }
        }
}

void topk_check(const topk_case *c) {
    setup s;
    make(c, &s);
    nx_error err;
    nx_program prog;
    if (trace(c, &s, &prog, &err) != 0) fail_msg("%s: %s", s.what, err.msg);
    if (test_kcheck_program(&prog, &err) != 0) fail_msg("%s: order check: %s", s.what, err.msg);
    size_t es = nx_dtype_size(c->dtype);
    uint64_t nx = c->rows * c->n, no = c->rows * c->k;
    uint8_t *x = malloc(nx * es), *wv = malloc(no * es);
    int32_t *wi = malloc(no * sizeof *wi);
    assert_true(x && wv && wi);
    topk_fill(x, c->dtype, nx, c->data, c->seed);
    const uint64_t shape[2] = {c->rows, c->n};
    if (nx_ref_topk(x, c->dtype, 2, shape, -1, c->k, c->largest, wv, wi, &err) != 0) fail_msg("ref: %s", err.msg);
    nx_geometry geo = test_geometry("trn2");
    nx_state st;
    if (nx_state_init(&st, &geo, prog.cores, prog.hbm_bytes, prog.sem_count, &err) != 0) fail_msg("state: %s", err.msg);
    memcpy(st.hbm + s.args[0].hbm_offset, x, nx * es);
    if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s: exec: %s", s.what, err.msg);
    compare(&s, c, st.hbm + s.args[1].hbm_offset, (const int32_t *)(st.hbm + s.args[2].hbm_offset), wv, wi,
            "executor");
    if (c->run_model) {
        nx_machine m;
        if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("machine: %s", err.msg);
        nx_state_reset(&st);
        memcpy(st.hbm + s.args[0].hbm_offset, x, nx * es);
        nx_sim_options opt = {1, 0};
        nx_sim_result res;
        memset(&res, 0, sizeof res);
        if (nx_sim_run(&m, &prog, &st, &opt, &res, &err) != 0) fail_msg("%s: model: %s", s.what, err.msg);
        if (nx_race_check(&prog, res.log, res.log_count, &err) != 0)
            fail_msg("%s: race detector: %s", s.what, err.msg);
        nx_sim_result_free(&res);
        compare(&s, c, st.hbm + s.args[1].hbm_offset, (const int32_t *)(st.hbm + s.args[2].hbm_offset), wv, wi,
                "model");
    }
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_attrs_free(&s.attrs);
    free(x);
    free(wv);
    free(wi);
}

void topk_expect_refusal(const topk_case *c, const char *msg) {
    setup s;
    make(c, &s);
    nx_error err;
    nx_program prog;
    if (trace(c, &s, &prog, &err) == 0) {
        nx_program_free(&prog);
        fail_msg("%s: the leaf accepted the case, expected: %s", s.what, msg);
    }
    assert_string_equal(err.msg, msg);
    nx_attrs_free(&s.attrs);
}
