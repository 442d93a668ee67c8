/* See leaf_cases.h. */
#include "leaf_cases.h"
#include "registry/prepare.h"

#include <cjson/cJSON.h>
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
#include "isa/fileio.h"
#include "isa/npy.h"
#include "kernels/author/author.h"
#include "kcheck.h"
#include "registry/lower.h"
#include "registry/rules.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "support.h"

/* ---- building a case ------------------------------------------------------ */

void leaf_case_init(leaf_case *c, const char *name, const char *func_name) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    nx_macro_op_init(&c->op);
    nx_error err;
    if (func_name && nx_macro_op_set_func_name(&c->op, func_name, &err) != 0) fail_msg("%s: %s", name, err.msg);
    snprintf(c->machine, sizeof c->machine, "trn2");
    c->seed = 1;
    c->backends = LEAF_FUNCTIONAL | LEAF_MODEL;
}

void leaf_case_free(leaf_case *c) {
    for (uint32_t i = 0; i < NX_OP_MAX_TENSORS; i++) {
        free(c->owned[i]);
        c->owned[i] = NULL;
    }
    nx_macro_op_free(&c->op);
    free(c->expect_error);
    c->expect_error = NULL;
}

void leaf_case_operand(leaf_case *c, const char *name, nx_dtype dt, uint32_t ndims, const uint64_t *shape) {
    nx_error err;
    if (nx_macro_op_add_operand(&c->op, name, dt, ndims, shape, &err) != 0) fail_msg("%s: %s", c->name, err.msg);
}

void leaf_case_result(leaf_case *c, const char *name, nx_dtype dt, uint32_t ndims, const uint64_t *shape) {
    nx_error err;
    if (nx_macro_op_add_result(&c->op, name, dt, ndims, shape, &err) != 0) fail_msg("%s: %s", c->name, err.msg);
}

void leaf_case_attrs(leaf_case *c, const char *text) {
    if (!text || !*text) return;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) fail_msg("%s: attrs '%s': expected name=JSON", c->name, text);
        *eq = 0;
        nx_value v;
        nx_error err;
        if (nx_value_parse(tok, eq + 1, &v, &err) != 0) fail_msg("%s: attrs '%s': %s", c->name, text, err.msg);
        if (nx_attrs_set(&c->op.attrs, tok, &v, &err) != 0) {
            nx_value_free(&v);
            fail_msg("%s: attrs '%s': %s", c->name, text, err.msg);
        }
    }
}

void leaf_case_expect_error(leaf_case *c, const char *msg) {
    free(c->expect_error);
    c->expect_error = strdup(msg);
    assert_non_null(c->expect_error);
}

/* ---- case files ------------------------------------------------------------ */

static const char *const fill_names[] = {"rules", "random", "ties", "equal", "special", "ascending"};

/* The text of the top-level "op" value of a valid JSON object (cJSON keeps
 * one double per number, which cannot tell 2 from 2.0: the op parser reads
 * the text itself). */
static int op_span(const char *json, const char **start, size_t *len) {
    int depth = 0, want_value = 0;
    const char *value = NULL;
    for (const char *p = json; *p; p++) {
        if (*p == '"') {
            const char *s = ++p;
            while (*p && *p != '"') p += p[0] == '\\' && p[1] ? 2 : 1;
            if (!*p) return -1;
            if (depth == 1 && !value && p - s == 2 && memcmp(s, "op", 2) == 0) {
                const char *q = p + 1;
                while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
                if (*q == ':') want_value = 1;
            }
            continue;
        }
        if (want_value && *p == '{' && depth == 1) {
            value = p;
            want_value = 0;
        }
        if (*p == '{' || *p == '[') depth++;
        if (*p == '}' || *p == ']') {
            depth--;
            if (value && depth == 1) {
                *start = value;
                *len = (size_t)(p - value) + 1;
                return 0;
            }
        }
    }
    return -1;
}

static int parse_backends(const char *source, const cJSON *v, unsigned *out, nx_error *err) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
        return nx_fail(err, "%s: backends: expected a non-empty list of \"functional\", \"model\", \"rtl\"", source);
    *out = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, v) {
        const char *s = cJSON_GetStringValue(b);
        unsigned bit = !s ? 0 : strcmp(s, "functional") == 0 ? LEAF_FUNCTIONAL : strcmp(s, "model") == 0 ? LEAF_MODEL
                          : strcmp(s, "rtl") == 0 ? LEAF_RTL : 0;
        if (!bit) return nx_fail(err, "%s: backends: %s is not functional, model or rtl", source, s ? s : "a non-string");
        *out |= bit;
    }
    return 0;
}

static int parse_fill(const char *source, const cJSON *v, leaf_case *c, nx_error *err) {
    if (!cJSON_IsObject(v)) return nx_fail(err, "%s: fill: expected an object of operand name -> kind", source);
    const cJSON *f;
    cJSON_ArrayForEach(f, v) {
        uint32_t i = 0;
        while (i < c->op.n_operands && strcmp(c->op.operands[i].name, f->string) != 0) i++;
        if (i == c->op.n_operands) return nx_fail(err, "%s: fill: %s is not an operand of the op", source, f->string);
        const char *s = cJSON_GetStringValue(f);
        size_t k = 1;
        while (s && k < sizeof fill_names / sizeof fill_names[0] && strcmp(s, fill_names[k]) != 0) k++;
        if (!s || k == sizeof fill_names / sizeof fill_names[0])
            return nx_fail(err, "%s: fill.%s: expected random, ties, equal, special or ascending", source, f->string);
        c->fill[i] = (leaf_fill_kind)k;
    }
    return 0;
}

static int parse_expect(const char *source, const cJSON *v, leaf_case *c, nx_error *err) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "error"), *g = cJSON_GetObjectItemCaseSensitive(v, "grid");
    double cores = cJSON_GetNumberValue(g);
    if (cJSON_IsObject(v) && cJSON_GetArraySize(v) == 1 && cJSON_IsNumber(g) && (cores == 1 || cores == 2)) {
        c->expect_grid = (uint32_t)cores;
        return 0;
    }
    if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) != 1 || !cJSON_IsString(e))
        return nx_fail(err, "%s: expect: expected {\"error\": \"the exact message\"} or {\"grid\": 1 or 2}", source);
    c->expect_error = strdup(e->valuestring);
    if (!c->expect_error) return nx_fail(err, "%s: out of memory", source);
    return 0;
}

static int parse_keys(const char *source, const cJSON *doc, leaf_case *c, nx_error *err) {
    const cJSON *v;
    cJSON_ArrayForEach(v, doc) {
        const char *k = v->string;
        if (strcmp(k, "op") == 0 || strcmp(k, "what") == 0) {
            if (strcmp(k, "what") == 0 && !cJSON_IsString(v)) return nx_fail(err, "%s: what: expected a string", source);
        } else if (strcmp(k, "machine") == 0) {
            if (!cJSON_IsString(v) || strlen(v->valuestring) >= sizeof c->machine)
                return nx_fail(err, "%s: machine: expected a preset name or machine file", source);
            snprintf(c->machine, sizeof c->machine, "%s", v->valuestring);
        } else if (strcmp(k, "seed") == 0 || strcmp(k, "grid") == 0) {
            double d = cJSON_GetNumberValue(v);
            if (!cJSON_IsNumber(v) || d < 0 || d > 0x1p53 || d != floor(d) || (k[0] == 'g' && d > 2))
                return nx_fail(err, "%s: %s: expected %s", source, k, k[0] == 'g' ? "0, 1 or 2" : "an integer >= 0");
            if (k[0] == 's')
                c->seed = (uint64_t)d;
            else
                c->grid = (uint32_t)d;
        } else if (strcmp(k, "backends") == 0) {
            if (parse_backends(source, v, &c->backends, err) != 0) return -1;
        } else if (strcmp(k, "fill") == 0) {
            if (parse_fill(source, v, c, err) != 0) return -1;
        } else if (strcmp(k, "expect") == 0) {
            if (parse_expect(source, v, c, err) != 0) return -1;
        } else {
            return nx_fail(err, "%s: unknown key %s (what, op, machine, seed, grid, backends, fill, "
                                "expect)", source, k);
        }
    }
    return 0;
}

/* The operands with a "file": their .npy (beside the case file) gives the
 * bytes and, where the op omits them, the dtype and shape. */
static int file_operands(const char *source, const nx_op_files *files, leaf_case *c, nx_error *err) {
    const char *slash = strrchr(source, '/');
    int dir = slash ? (int)(slash - source) + 1 : 0;
    for (uint32_t j = 0; j < c->op.n_results; j++)
        if (files->result[j] || c->op.results[j].ndims == 0 || c->op.results[j].dtype == NX_OP_DTYPE_UNSET)
            return nx_fail(err, "%s: op: results[%u]: a case's result needs shape and dtype and no file (the reference "
                                "checks it)", source, j);
    for (uint32_t i = 0; i < c->op.n_operands; i++) {
        nx_op_tensor *t = &c->op.operands[i];
        if (!files->operand[i]) {
            if (t->ndims == 0 || t->dtype == NX_OP_DTYPE_UNSET)
                return nx_fail(err, "%s: op: operands[%u]: needs shape and dtype, or a file", source, i);
            continue;
        }
        char path[1024];
        snprintf(path, sizeof path, "%.*s%s", files->operand[i][0] == '/' ? 0 : dir, source, files->operand[i]);
        nx_npy a;
        if (nx_npy_load(path, &a, err) != 0) return -1;
        int same = t->ndims == 0 || (t->dtype == a.dtype && t->ndims == a.ndims &&
                                     memcmp(t->shape, a.shape, a.ndims * sizeof a.shape[0]) == 0);
        if (a.ndims < 1 || a.ndims > NX_KERNEL_MAX_DIMS || !same) {
            nx_npy_free(&a);
            return nx_fail(err, "%s: op: operands[%u]: %s is not the operand's tensor (1..%d dims, the declared dtype "
                                "and shape)", source, i, path, NX_KERNEL_MAX_DIMS);
        }
        t->dtype = a.dtype;
        t->ndims = a.ndims;
        memcpy(t->shape, a.shape, a.ndims * sizeof a.shape[0]);
        c->owned[i] = a.data;
        c->inputs[i] = a.data;
    }
    return 0;
}

int leaf_case_parse(const char *source, const char *json, leaf_case *c, nx_error *err) {
    leaf_case_init(c, source, NULL);
    cJSON *doc = cJSON_Parse(json);
    if (!doc || !cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return nx_fail(err, "%s: not a JSON object", source);
    }
    const char *start;
    size_t len;
    int rc = -1;
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "op")) || op_span(json, &start, &len) != 0) {
        nx_fail(err, "%s: op: expected an op document (an object)", source);
        goto out;
    }
    char *text = malloc(len + 1);
    if (!text) {
        nx_fail(err, "%s: out of memory", source);
        goto out;
    }
    memcpy(text, start, len);
    text[len] = 0;
    char opsrc[300];
    snprintf(opsrc, sizeof opsrc, "%s: op", source);
    nx_macro_op_free(&c->op);
    nx_op_files files;
    memset(&files, 0, sizeof files);
    int prc = nx_macro_op_parse(opsrc, text, &c->op, &files, err);
    free(text);
    if (prc == 0) prc = file_operands(source, &files, c, err);
    nx_op_files_free(&files);
    if (prc != 0) goto out;
    rc = parse_keys(source, doc, c, err);
out:
    cJSON_Delete(doc);
    if (rc != 0) leaf_case_free(c);
    return rc;
}

int leaf_case_load(const char *path, leaf_case *c, nx_error *err) {
    uint8_t *text;
    size_t len;
    if (nx_read_file_max(path, NX_OP_FILE_MAX, "the limit for an op file", &text, &len, err) != 0) return -1;
    char *z = realloc(text, len + 1);
    if (!z) {
        free(text);
        return nx_fail(err, "%s: out of memory", path);
    }
    z[len] = 0;
    int rc = memchr(z, 0, len) ? nx_fail(err, "%s: the case file holds a NUL byte", path)
                               : leaf_case_parse(path, z, c, err);
    free(z);
    return rc;
}

/* ---- operand values ------------------------------------------------------- */

static double special_value(nx_dtype dt, uint64_t r) {
    double big = dt == NX_DT_FP32 ? FLT_MAX : dt == NX_DT_BF16 ? 0x1.fep127 : dt == NX_DT_FP16 ? 65504
               : dt == NX_DT_FP8_E4M3 ? 448 : 57344;
    static const double fixed[] = {INFINITY, -INFINITY, NAN, -0.0, 0.0};
    switch (r % 9) {
    case 5: return big;
    case 6: return -big;
    case 7: return 1.0;
    case 8: return -1.0;
    default: return fixed[r % 9];
    }
}

void leaf_fill(uint8_t *x, nx_dtype dt, uint64_t n, leaf_fill_kind kind, uint64_t seed) {
    size_t es = nx_dtype_size(dt);
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 0x1234567u};
    int is_float = nx_dtype_is_float(dt);
    for (uint64_t i = 0; i < n; i++) {
        double v;
        switch (kind) {
        case LEAF_FILL_TIES: v = (double)(test_rng_next(&r) % 5) - 2; break;
        case LEAF_FILL_EQUAL: v = 3; break;
        case LEAF_FILL_ASCENDING: v = (double)(i % 1000); break;
        case LEAF_FILL_SPECIAL:
            if (test_rng_next(&r) % 3 == 0 && is_float) {
                v = special_value(dt, test_rng_next(&r));
                break;
            }
            /* fall through */
        default:
            v = is_float ? test_rng_uniform(&r, -1, 1) : (double)(int64_t)(test_rng_next(&r) % 200) - 100;
        }
        if ((dt == NX_DT_UINT8 || dt == NX_DT_UINT16) && v < 0) v = -v;
        nx_dtype_store(dt, x + i * es, v);
    }
}

/* ---- running ---------------------------------------------------------------- */

static uint64_t op_tensor_bytes(const nx_op_tensor *t) {
    uint64_t n = nx_dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->ndims; d++) n *= t->shape[d];
    return n;
}

/* The op as nx_run_op takes it, through the run path's one preparation
 * step (registry/prepare.h): the case's operands as given, attributes
 * checked, results by the rule. */
static int prepare(const leaf_case *c, const nx_lowerer *L, nx_prepared *p, nx_error *err) {
    if (nx_prepare_target(L, c->op.func_name, p, err) != 0) return -1;
    return nx_prepare_op(p, &c->op, NX_PREPARE_AS_GIVEN, NULL, err);
}

static const char *backend_name(unsigned b) {
    return b == LEAF_FUNCTIONAL ? "functional executor" : b == LEAF_MODEL ? "model" : "model with the RTL PE";
}

typedef struct run_state {
    const leaf_case *c;
    nx_machine m;
    nx_lowerer *L;
    nx_prepared prep;
    const void *inputs[NX_OP_MAX_TENSORS];
    uint8_t *first[NX_OP_MAX_TENSORS]; /* the first backend's results */
    unsigned first_backend;
} run_state;

static int first_difference(const nx_op_tensor *t, const uint8_t *a, const uint8_t *b, uint64_t *elem) {
    uint64_t n = op_tensor_bytes(t);
    if (memcmp(a, b, n) == 0) return 0;
    uint64_t i = 0;
    while (a[i] == b[i]) i++;
    *elem = i / nx_dtype_size(t->dtype);
    return 1;
}

static int run_backend(run_state *s, unsigned b, leaf_case_report *rep, nx_error *err) {
    const leaf_case *c = s->c;
    nx_run_options opt;
    memset(&opt, 0, sizeof opt);
    opt.backend = b == LEAF_FUNCTIONAL ? NX_RUN_FUNCTIONAL : NX_RUN_MODEL;
    opt.pe_rtl = b == LEAF_RTL;
    opt.race_check = b != LEAF_FUNCTIONAL;
    opt.check = !c->expect_error;
    opt.grid = c->grid;
    opt.seed = c->seed;
    opt.threads = 1;
    nx_run_result r;
    nx_error e;
    int rc = nx_run_op(s->L, &s->m, &s->prep, s->inputs, &opt, &r, &e);
    if (c->expect_error) {
        if (rc == 0) rc = nx_fail(err, "%s: the %s ran the op, expected the refusal: %s", c->name, backend_name(b),
                                  c->expect_error);
        else if (strcmp(e.msg, c->expect_error) != 0)
            rc = nx_fail(err, "%s: the %s refused with \"%s\", expected \"%s\"", c->name, backend_name(b), e.msg,
                         c->expect_error);
        else
            rc = 0;
        nx_run_result_free(&r);
        return rc;
    }
    if (rc != 0) {
        nx_fail(err, "%s: %s: %s", c->name, backend_name(b), e.msg);
        nx_run_result_free(&r);
        return -1;
    }
    if (test_kcheck_program(r.prog, &e) != 0) {
        nx_fail(err, "%s: order check: %s", c->name, e.msg);
        goto fail;
    }
    if (rep) {
        memset(rep->insns, 0, sizeof rep->insns);
        for (uint32_t core = 0; core < r.prog->cores; core++)
            for (int g = 0; g < NX_ENG_COUNT; g++) rep->insns[g] += r.prog->stream[core][g].count;
        if (b != LEAF_FUNCTIONAL) rep->model_ns = r.trace.sim.total_ns;
    }
    for (uint32_t j = 0; j < s->prep.op.n_results; j++) {
        const nx_check_result *k = &r.check[j];
        if (k->bad) {
            const nx_op_tensor *t = &s->prep.op.results[j];
            size_t es = nx_dtype_size(t->dtype);
            nx_fail(err, "%s on the %s: result %s: %llu elements beyond the tolerance (%s); first: element %llu is %.9g "
                         "(max |got - ref| %.3g)", c->name, backend_name(b), t->name, (unsigned long long)k->bad,
                    r.tolerance[j].text, (unsigned long long)k->first_bad,
                    nx_dtype_load(t->dtype, r.results[j] + k->first_bad * es), k->max_abs);
            goto fail;
        }
        uint64_t bytes = op_tensor_bytes(&s->prep.op.results[j]), elem;
        if (!s->first_backend) {
            s->first[j] = malloc(bytes ? bytes : 1);
            if (!s->first[j]) {
                nx_fail(err, "%s: out of memory", c->name);
                goto fail;
            }
            memcpy(s->first[j], r.results[j], bytes);
        } else if (first_difference(&s->prep.op.results[j], s->first[j], r.results[j], &elem)) {
            nx_fail(err, "%s: result %s on the %s differs from the %s's at element %llu", c->name,
                    s->prep.op.results[j].name, backend_name(b), backend_name(s->first_backend), (unsigned long long)elem);
            goto fail;
        }
    }
    if (c->expect_grid && r.grid != c->expect_grid) {
        nx_fail(err, "%s: ran on %u cores, expected %u", c->name, r.grid, c->expect_grid);
        goto fail;
    }
    if (!r.checked) {
        nx_fail(err, "%s: the %s ran without the reference check", c->name, backend_name(b));
        goto fail;
    }
    if (!s->first_backend) s->first_backend = b;
    if (rep && !rep->n_results) {
        rep->n_results = s->prep.op.n_results;
        memcpy(rep->result, s->prep.op.results, sizeof rep->result);
        for (uint32_t j = 0; j < s->prep.op.n_results; j++) {
            uint64_t bytes = op_tensor_bytes(&s->prep.op.results[j]);
            rep->results[j] = malloc(bytes ? bytes : 1);
            if (!rep->results[j]) {
                nx_fail(err, "%s: out of memory", c->name);
                goto fail;
            }
            memcpy(rep->results[j], r.results[j], bytes);
        }
    }
    nx_run_result_free(&r);
    return 0;
fail:
    nx_run_result_free(&r);
    return -1;
}

int leaf_case_run(const leaf_case *c, leaf_case_report *rep, nx_error *err) {
    run_state s;
    memset(&s, 0, sizeof s);
    s.c = c;
    nx_prepared_init(&s.prep);
    uint8_t *filled[NX_OP_MAX_TENSORS] = {0};
    int rc = -1;
    if (rep) memset(rep, 0, sizeof *rep);
    nx_error e;
    if (nx_machine_load(c->machine, &s.m, &e) != 0) {
        nx_fail(err, "%s: %s", c->name, e.msg);
        goto out;
    }
    s.L = nx_lowerer_new(&s.m.geo, c->registry);
    if (!s.L) {
        nx_fail(err, "%s: out of memory", c->name);
        goto out;
    }
    if (prepare(c, s.L, &s.prep, &e) != 0) {
        if (c->expect_error && strcmp(e.msg, c->expect_error) == 0)
            rc = 0;
        else if (c->expect_error)
            nx_fail(err, "%s: refused with \"%s\", expected \"%s\"", c->name, e.msg, c->expect_error);
        else
            nx_fail(err, "%s: %s", c->name, e.msg);
        goto out;
    }
    for (uint32_t i = 0; i < s.prep.op.n_operands; i++) {
        s.inputs[i] = c->inputs[i];
        if (c->inputs[i] || c->fill[i] == LEAF_FILL_RULES) continue;
        uint64_t bytes = op_tensor_bytes(&s.prep.op.operands[i]);
        filled[i] = malloc(bytes ? bytes : 1);
        if (!filled[i]) {
            nx_fail(err, "%s: out of memory", c->name);
            goto out;
        }
        leaf_fill(filled[i], s.prep.op.operands[i].dtype, bytes / nx_dtype_size(s.prep.op.operands[i].dtype), c->fill[i],
                  c->seed + i);
        s.inputs[i] = filled[i];
    }
    rc = 0;
    for (unsigned b = LEAF_FUNCTIONAL; b <= LEAF_RTL && rc == 0; b <<= 1)
        if (c->backends & b) rc = run_backend(&s, b, rep, err);
out:
    for (uint32_t i = 0; i < NX_OP_MAX_TENSORS; i++) {
        free(filled[i]);
        free(s.first[i]);
    }
    nx_prepared_free(&s.prep);
    nx_lowerer_free(s.L);
    if (rc != 0 && rep) leaf_case_report_free(rep);
    return rc;
}

int leaf_case_trace_leaf(const leaf_case *c, nx_leaf_fn leaf, nx_error *err) {
    nx_geometry geo = test_geometry(c->machine);
    uint32_t grid = c->grid ? c->grid : 1;
    nx_builder *b = nx_builder_new(&geo, grid);
    assert_non_null(b);
    nx_tensor_ref args[2 * NX_OP_MAX_TENSORS];
    uint32_t nargs = 0;
    memset(args, 0, sizeof args);
    for (uint32_t i = 0; i < c->op.n_operands + c->op.n_results; i++) {
        int in = i < c->op.n_operands;
        const nx_op_tensor *t = in ? &c->op.operands[i] : &c->op.results[i - c->op.n_operands];
        nx_tensor_ref *a = &args[nargs++];
        snprintf(a->name, sizeof a->name, "%s", t->name);
        a->dtype = t->dtype;
        a->ndims = t->ndims;
        memcpy(a->shape, t->shape, t->ndims * sizeof t->shape[0]);
        if (nx_builder_tensor(b, a->name, a->dtype, a->ndims, a->shape, in ? NX_ROLE_INPUT : NX_ROLE_OUTPUT,
                              &a->hbm_offset, err) != 0)
            fail_msg("%s: declare %s: %s", c->name, a->name, err->msg);
    }
    nx_kernel_call call = {.args = args, .nargs = nargs, .n_inputs = c->op.n_operands,
                           .additional_args = &c->op.attrs, .attrs = &c->op.attrs};
    int rc = 0;
    for (uint32_t pid = 0; pid < grid && rc == 0; pid++) {
        nx_kctx *k = nx_kctx_new(b, pid, grid);
        assert_non_null(k);
        rc = leaf(k, &call, err);
        if (rc == 0 && nx_kctx_finish(k, err) != 0) fail_msg("%s: finish: %s", c->name, err->msg);
        nx_kctx_free(k);
    }
    nx_builder_free(b);
    return rc;
}

void leaf_case_report_free(leaf_case_report *rep) {
    for (uint32_t j = 0; j < NX_OP_MAX_TENSORS; j++) free(rep->results[j]);
    memset(rep, 0, sizeof *rep);
}

void leaf_case_check(const leaf_case *c, leaf_case_report *rep) {
    nx_error err;
    if (leaf_case_run(c, rep, &err) != 0) fail_msg("%s", err.msg);
}
