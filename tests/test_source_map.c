/* Source mapping: every instruction emitted through the authoring layer
 * (kernels/author/author.h) records the file, line and function of the leaf's
 * call, the program keeps it beside the instructions (isa/program.h), the
 * Perfetto trace shows it and the by-source summary groups busy time by it
 * (sim/profile.h). Lines are pinned with __LINE__ next to each call, so the
 * expected values are independent of the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/fileio.h"
#include "isa/opcodes.h"
#include "kernels/author/author.h"
#include "registry/families/families.h"
#include "registry/lower.h"
#include "registry/run/run.h"
#include "sim/profile.h"
#include "support.h"

#define THIS_FILE "tests/test_source_map.c"

static void expect_src(const nx_program *p, uint32_t core, nx_engine e, uint32_t index, uint32_t line,
                       const char *func) {
    const nx_src_loc *s = nx_program_insn_src(p, core, e, index);
    if (!s) fail_msg("core %u %s #%u has no source location", core, nx_engine_name(e), index);
    assert_string_equal(s->file, THIS_FILE);
    assert_int_equal(s->line, line);
    assert_string_equal(s->func, func);
}

static void test_display_path(void **state) {
    (void)state;
    assert_string_equal(nx_src_display_path("../../kernels/x.c"), "kernels/x.c");
    assert_string_equal(nx_src_display_path("./../kernels/conv/y.c"), "kernels/conv/y.c");
    assert_string_equal(nx_src_display_path("kernels/x.c"), "kernels/x.c");
    assert_string_equal(nx_src_display_path("/elsewhere/x.c"), "/elsewhere/x.c");
    assert_string_equal(nx_src_display_path(__FILE__), THIS_FILE);
}

/* A leaf's own helper: its emits record the helper's lines. */
static uint32_t helper_line;
static int load_helper(nx_kctx *k, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    helper_line = __LINE__ + 1;
    return nx_kctx_dma_on(k, 3, dst, src, err);
}

static void test_emit_records_call_site(void **state) {
    (void)state;
    nx_geometry g = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&g, 1);
    uint64_t off;
    nx_error err;
    uint64_t shape[2] = {128, 64};
    assert_int_equal(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &off, &err), 0);
    nx_machine km = test_machine_of(&g);
    nx_kctx *k = nx_kctx_new_machine(b, &km, 0, 1);
    assert_non_null(k);
    nx_tile t, u;
    assert_int_equal(nx_kctx_alloc(k, NX_OPK_SBUF, "t", NX_DT_FP32, 128, 64, &t, &err), 0);
    assert_int_equal(nx_kctx_alloc(k, NX_OPK_SBUF, "u", NX_DT_FP32, 128, 64, &u, &err), 0);
    nx_operand hx = nx_ap_hbm_rows(NX_DT_FP32, off, 128, 64, 64), ta = nx_tile_ap(&t), ua = nx_tile_ap(&u);
    uint32_t l_load = __LINE__ + 1;
    assert_int_equal(nx_kctx_dma(k, &ta, &hx, &err), 0);
    uint32_t l_copy = __LINE__ + 1;
    assert_int_equal(nx_kctx_tensor_copy(k, NX_ENG_DVE, &ua, &ta, &err), 0);
    uint32_t l_act = __LINE__ + 1;
    assert_int_equal(nx_kctx_activation(k, NX_ACT_IDENTITY, &ta, &ua, 2.0, 0.0, &err), 0);
    assert_int_equal(load_helper(k, &ua, &hx, &err), 0); /* WAR on u after the activation */
    uint32_t l_store = __LINE__ + 1;
    assert_int_equal(nx_kctx_dma_split(k, 0, 2, &hx, &ta, &err), 0);
    uint32_t l_finish = __LINE__ + 1;
    assert_int_equal(nx_kctx_finish(k, &err), 0);
    nx_kctx_free(k);
    nx_program p;
    if (nx_builder_finish(b, &p, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);

    /* SP: load, helper's load (after a nop or with a wait), the split's two
     * pieces (and their nops), then finish's nops and end */
    const nx_stream *sp = &p.stream[0][NX_ENG_SP];
    uint32_t want_lines[16], n = 0;
    for (uint32_t i = 0; i < sp->count; i++) {
        const nx_insn_rec *in = &sp->recs[i];
        const nx_src_loc *s = nx_program_insn_src(&p, 0, NX_ENG_SP, i);
        assert_non_null(s);
        if (nx_opcode_is_dma(in->opcode) && n < 16) want_lines[n++] = s->line;
    }
    assert_int_equal(n, 4);
    assert_int_equal(want_lines[0], l_load);
    assert_int_equal(want_lines[1], helper_line);
    assert_int_equal(want_lines[2], l_store);
    assert_int_equal(want_lines[3], l_store);
    expect_src(&p, 0, NX_ENG_SP, 0, l_load, "test_emit_records_call_site");
    expect_src(&p, 0, NX_ENG_SP, sp->count - 1, l_finish, "test_emit_records_call_site");
    for (uint32_t i = 0; i < sp->count; i++)
        if (nx_program_insn_src(&p, 0, NX_ENG_SP, i)->line == helper_line)
            expect_src(&p, 0, NX_ENG_SP, i, helper_line, "load_helper");
    /* DVE: its wait nops (if any) and the copy carry the copy's line */
    const nx_stream *dve = &p.stream[0][NX_ENG_DVE];
    for (uint32_t i = 0; i + 1 < dve->count; i++) expect_src(&p, 0, NX_ENG_DVE, i, l_copy, "test_emit_records_call_site");
    expect_src(&p, 0, NX_ENG_DVE, dve->count - 1, l_finish, "test_emit_records_call_site"); /* end */
    expect_src(&p, 0, NX_ENG_ACT, 0, l_act, "test_emit_records_call_site");
    /* one entry per distinct place */
    assert_int_equal(p.src_count, 6);
    nx_program_free(&p);
}

/* Hand-built programs (builder without the layer) carry no locations. */
static void test_plain_builder_has_none(void **state) {
    (void)state;
    nx_geometry g = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&g, 1);
    nx_error err;
    nx_insn end = nx_insn_make(NX_OP_END);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_DVE, &end, NULL, &err), 0);
    nx_program p;
    assert_int_equal(nx_builder_finish(b, &p, &err), 0);
    nx_builder_free(b);
    assert_null(nx_program_insn_src(&p, 0, NX_ENG_DVE, 0));
    assert_null(p.stream[0][NX_ENG_DVE].src);
    assert_int_equal(p.src_count, 0);
    nx_program_free(&p);
}

/* A registry leaf: every instruction has a location in kernels/ (or the
 * lowerer's finish), the trace shows them and the by-source rows add up to
 * the run's busy time. */
static void test_registry_leaf_profile(void **state) {
    (void)state;
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    nx_macro_op given;
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, "tiled_pf_transpose", &err), 0);
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    nx_prepared op;
    if (nx_op_prepare(L, &given, NULL, &op, &err) != 0) fail_msg("%s", err.msg);
    nx_macro_op_free(&given);
    nx_run_options opt = {.backend = NX_RUN_MODEL, .keep_log = 1, .seed = 1};
    nx_run_result res;
    if (nx_run_op(L, &m, &op, NULL, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
    const nx_program *p = res.prog;
    uint32_t in_leaf = 0;
    for (uint32_t c = 0; c < p->cores; c++)
        for (int e = 0; e < NX_ENG_COUNT; e++)
            for (uint32_t i = 0; i < p->stream[c][e].count; i++) {
                const nx_src_loc *s = nx_program_insn_src(p, c, (nx_engine)e, i);
                if (!s) fail_msg("core %u %s #%u has no source location", c, nx_engine_name((nx_engine)e), i);
                in_leaf += strcmp(s->file, "kernels/transpose/tiled_pf_transpose.c") == 0;
                if (strcmp(s->file, "kernels/transpose/tiled_pf_transpose.c") != 0)
                    assert_string_equal(s->file, "registry/lower.c"); /* nx_kctx_finish */
            }
    assert_true(in_leaf > 0);

    nx_profile_source_row *rows;
    size_t n;
    double all, busy = 0, dma = 0;
    assert_int_equal(nx_profile_source_rows(p, &res.trace.sim, &rows, &n, &all, &err), 0);
    for (size_t i = 0; i < res.trace.sim.log_count; i++) {
        const nx_sim_record *rec = &res.trace.sim.log[i];
        if (rec->queue == 0 && rec->engine != NX_ENG_SP) continue;
        busy += rec->busy_ns;
        if (rec->engine == NX_ENG_SP && rec->queue >= 0) dma += rec->busy_ns;
    }
    double sum = 0, sum_dma = 0;
    for (size_t i = 0; i < n; i++) {
        assert_non_null(rows[i].src);
        if (i) assert_true(rows[i - 1].total_ns >= rows[i].total_ns);
        sum += rows[i].total_ns;
        sum_dma += rows[i].busy_ns[NX_PROFILE_DMA];
    }
    assert_true(fabs(sum - busy) <= 1e-9 * busy);
    assert_true(fabs(all - busy) <= 1e-9 * busy);
    assert_true(fabs(sum_dma - dma) <= 1e-9 * dma);
    /* the busiest line of a transpose is a DMA load or store of the leaf */
    assert_string_equal(rows[0].src->file, "kernels/transpose/tiled_pf_transpose.c");
    assert_true(rows[0].busy_ns[NX_PROFILE_DMA] > 0);
    free(rows);

    char *json = nx_profile_by_source_json(p, &res.trace.sim, &err);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"file\": \"kernels/transpose/tiled_pf_transpose.c\""));
    free(json);

    /* the Perfetto slices name their line */
    char path[] = "/tmp/nxsim-srcmap-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    if (nx_profile_write_trace(path, &m, p, &res.trace.sim, &err) != 0) fail_msg("%s", err.msg);
    uint8_t *text;
    size_t len;
    assert_int_equal(nx_read_file(path, &text, &len, &err), 0);
    unlink(path);
    const nx_src_loc *s0 = nx_program_insn_src(p, 0, NX_ENG_PE, 0);
    char want[256];
    snprintf(want, sizeof want, "\"source\":\"%s:%u\",\"function\":\"%s\"", s0->file, s0->line, s0->func);
    char *z = realloc(text, len + 1);
    assert_non_null(z);
    z[len] = '\0';
    assert_non_null(strstr(z, want));
    free(z);
    nx_run_result_free(&res);
    nx_lowerer_free(L);
    nx_prepared_free(&op);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_display_path),
        cmocka_unit_test(test_emit_records_call_site),
        cmocka_unit_test(test_plain_builder_has_none),
        cmocka_unit_test(test_registry_leaf_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
