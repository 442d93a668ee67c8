/* Machine descriptions (sim/machine.h): the two presets against the
 * published figures of docs/parts/hardware.md, override files with "base", complete
 * files without it, and every error class with its exact message. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp, chdir (the build also sets it) */
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/machine.h"

#define GiB (1024ull * 1024ull * 1024ull)
#define KiB 1024ull

/* ---- expected machines, written out by hand ---------------------------- */

/* Figures common to both presets. docs/parts/hardware.md: 128 partitions; PSUM
 * 128 x 16 KiB = 8 banks x 2 KiB per partition; free-size limits 64K
 * elements (SBUF) and 4K (PSUM); PE 128x128, N <= 512; DVE transpose 32x32
 * blocks; GpSimd core i serves 16 partitions; max8 takes 8..16384 elements;
 * 16 DMA engines x 16 queues per core; MM_INIT_LATENCY = 64, fp32 4x, fast
 * LoadStationary up to 4x, background load; DVE ~N / ~2N cycles, min II ~64,
 * ~60 cycles access start-up; ACT max(64, N), +64 with accumulate; POOL
 * 150 + N; DMA ~1.3 us fixed cost, >= 2 KiB per partition for peak.
 * Chosen (not in docs/parts/hardware.md, see docs/parts/machine.md): fill latency
 * rows + cols = 256, semaphore 10 ns, barrier 250 ns, DVE fixed overhead 0,
 * SP clock = ACT/POOL clock, systolic reference off. */
static nx_machine common_expected(void) {
    nx_machine m;
    memset(&m, 0, sizeof m);
    m.geo.cores = 2;
    m.geo.partitions = 128;
    m.geo.psum_partition_bytes = 16 * KiB;
    m.geo.psum_bank_bytes = 2 * KiB;
    m.geo.sbuf_free_elems_max = 65536;
    m.geo.psum_free_elems_max = 4096;
    m.geo.pe_rows = 128;
    m.geo.pe_cols = 128;
    m.geo.pe_moving_free_max = 512;
    m.geo.dve_transpose_max = 32;
    m.geo.pool_partitions_per_core = 16;
    m.geo.max8_min_elems = 8;
    m.geo.max8_max_elems = 16384;
    m.geo.dma_queues = 16 * 16;
    m.geo.dma_engines = 16;
    m.geo.dma_queues_per_engine = 16;
    m.pe_mm_init_latency = 64;
    m.pe_fp32_factor = 4;
    m.pe_fast_load_factor = 4;
    m.pe_background_load = 1;
    m.pe_fill_latency = 128 + 128;
    m.pe_systolic_reference = 0;
    m.dve_cycles_per_elem_one_input = 1;
    m.dve_cycles_per_elem_two_inputs = 2;
    m.dve_min_ii = 64;
    m.dve_dependency_overhead = 100;
    m.dve_fixed_overhead = 0;
    m.act_min_cycles = 64;
    m.act_accumulate_extra = 64;
    m.pool_startup = 150;
    m.dma_fixed_ns = 1300;
    m.dma_efficient_bytes_per_partition = 2048;
    m.semaphore_latency_ns = 10;
    m.barrier_latency_ns = 250;
    return m;
}

/* docs/parts/hardware.md, v3 column: clocks PE 2.4, DVE 0.96, ACT 1.2, POOL 1.2 GHz;
 * SBUF 128 x 224 KiB; HBM 96 GiB for 8 cores (24 GiB per 2-core VNC) at
 * ~360 GB/s per core (720 for the pair); DMA 23 B/ns per engine (v3);
 * perf modes; v2 conflicts removed, PSUM same-bank conflicts only; dependent
 * tiny ScalarE instructions 266 cycles apart on v3 (the NKI performance
 * guide): 265 + the one streamed element. */
static nx_machine trn2_expected(void) {
    nx_machine m = common_expected();
    strcpy(m.geo.name, "trn2");
    m.geo.sbuf_partition_bytes = 224 * KiB;
    m.geo.hbm_bytes = 96 * GiB / 4;
    m.clock_ghz[NX_ENG_PE] = 2.4;
    m.clock_ghz[NX_ENG_DVE] = 0.96;
    m.clock_ghz[NX_ENG_ACT] = 1.2;
    m.clock_ghz[NX_ENG_POOL] = 1.2;
    m.clock_ghz[NX_ENG_SP] = 1.2;
    m.dve_perf_modes = 1;
    m.dma_engine_bytes_per_ns = 23;
    m.act_dependency_overhead = 265;
    m.hbm_bytes_per_ns = 2 * 360;
    m.sbuf_dve_pool_conflict = 0;
    m.psum_dve_act_conflict = 0;
    m.psum_same_bank_conflict = 1;
    return m;
}

/* docs/parts/hardware.md, v2 column: clocks PE 2.8, DVE 1.12, ACT 1.4, POOL 1.4 GHz;
 * SBUF 128 x 192 KiB; HBM 32 GiB at 820 GB/s per device of 2 cores; DMA
 * 17 B/ns per engine (v2); no perf modes; DVE/POOL SBUF and DVE/ACT PSUM
 * conflicts; dependent tiny ScalarE instructions 264 cycles (189 ns) apart on
 * v2 (the NKI performance guide): 263 + the one streamed element. */
static nx_machine trn1_expected(void) {
    nx_machine m = common_expected();
    strcpy(m.geo.name, "trn1");
    m.geo.sbuf_partition_bytes = 192 * KiB;
    m.geo.hbm_bytes = 32 * GiB;
    m.clock_ghz[NX_ENG_PE] = 2.8;
    m.clock_ghz[NX_ENG_DVE] = 1.12;
    m.clock_ghz[NX_ENG_ACT] = 1.4;
    m.clock_ghz[NX_ENG_POOL] = 1.4;
    m.clock_ghz[NX_ENG_SP] = 1.4;
    m.dve_perf_modes = 0;
    m.dma_engine_bytes_per_ns = 17;
    m.act_dependency_overhead = 263;
    m.hbm_bytes_per_ns = 820;
    m.sbuf_dve_pool_conflict = 1;
    m.psum_dve_act_conflict = 1;
    m.psum_same_bank_conflict = 0;
    return m;
}

/* Field by field, so a failure names the field. Doubles compare exactly: the
 * file's decimal text and the C literal round to the same double. */
#define EQ_U(f) assert_int_equal(got->f, want->f)
#define EQ_D(f) assert_true(got->f == want->f)
static void assert_machine_equal(const nx_machine *got, const nx_machine *want) {
    assert_string_equal(got->geo.name, want->geo.name);
    EQ_U(geo.cores);
    EQ_U(geo.partitions);
    EQ_U(geo.sbuf_partition_bytes);
    EQ_U(geo.psum_partition_bytes);
    EQ_U(geo.psum_bank_bytes);
    EQ_U(geo.hbm_bytes);
    EQ_U(geo.sbuf_free_elems_max);
    EQ_U(geo.psum_free_elems_max);
    EQ_U(geo.pe_rows);
    EQ_U(geo.pe_cols);
    EQ_U(geo.pe_moving_free_max);
    EQ_U(geo.dve_transpose_max);
    EQ_U(geo.pool_partitions_per_core);
    EQ_U(geo.max8_min_elems);
    EQ_U(geo.max8_max_elems);
    EQ_U(geo.dma_queues);
    EQ_U(geo.dma_engines);
    EQ_U(geo.dma_queues_per_engine);
    for (int e = 0; e < NX_ENG_COUNT; e++) assert_true(got->clock_ghz[e] == want->clock_ghz[e]);
    EQ_U(pe_mm_init_latency);
    EQ_U(pe_fp32_factor);
    EQ_U(pe_fast_load_factor);
    EQ_U(pe_background_load);
    EQ_U(pe_fill_latency);
    EQ_U(pe_systolic_reference);
    EQ_U(dve_cycles_per_elem_one_input);
    EQ_U(dve_cycles_per_elem_two_inputs);
    EQ_U(dve_min_ii);
    EQ_U(dve_dependency_overhead);
    EQ_U(dve_fixed_overhead);
    EQ_U(dve_perf_modes);
    EQ_U(act_min_cycles);
    EQ_U(act_accumulate_extra);
    EQ_U(act_dependency_overhead);
    EQ_U(pool_startup);
    EQ_D(dma_engine_bytes_per_ns);
    EQ_D(dma_fixed_ns);
    EQ_U(dma_efficient_bytes_per_partition);
    EQ_D(hbm_bytes_per_ns);
    EQ_D(semaphore_latency_ns);
    EQ_D(barrier_latency_ns);
    EQ_U(sbuf_dve_pool_conflict);
    EQ_U(psum_dve_act_conflict);
    EQ_U(psum_same_bank_conflict);
}

/* ---- files in a private temporary directory ----------------------------- */

typedef struct fixture {
    char dir[64];
    char paths[8][128];
    int count;
} fixture;

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    if (fx == NULL) return -1;
    strcpy(fx->dir, "/tmp/nxsim_test_machine_XXXXXX");
    if (mkdtemp(fx->dir) == NULL) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    for (int i = 0; i < fx->count; i++) unlink(fx->paths[i]);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

/* Writes `len` bytes to DIR/name and returns the path. */
static const char *write_bytes(fixture *fx, const char *name, const char *text, size_t len) {
    assert_true(fx->count < 8);
    char *path = fx->paths[fx->count++];
    char built[128]; /* built apart: gcc cannot tell path from fx->dir (-Wrestrict) */
    snprintf(built, sizeof built, "%s/%s", fx->dir, name);
    memcpy(path, built, sizeof built);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

static const char *write_text(fixture *fx, const char *name, const char *text) {
    return write_bytes(fx, name, text, strlen(text));
}

/* Parses `json` expecting failure with exactly `msg` (source "m.json"), and
 * checks the output is left untouched. */
static void expect_parse_error(const char *json, const char *msg) {
    nx_machine m, before;
    nx_error err = {{0}};
    memset(&m, 0xA5, sizeof m);
    memcpy(&before, &m, sizeof m);
    assert_int_equal(nx_machine_parse("m.json", json, &m, &err), -1);
    assert_string_equal(err.msg, msg);
    assert_memory_equal(&m, &before, sizeof m);
}

/* The source file's directory, for the preset files on disk. CMake compiles
 * with absolute source paths. */
static void machines_dir(char *out, size_t cap) {
    const char *file = __FILE__;
    const char *slash = strrchr(file, '/');
    assert_non_null(slash);
    snprintf(out, cap, "%.*s/../sim/machines", (int)(slash - file), file);
}

/* ---- presets ------------------------------------------------------------ */

static void test_presets_list(void **state) {
    (void)state;
    const char *const *names = nx_machine_presets();
    assert_non_null(names);
    assert_string_equal(names[0], "trn1");
    assert_string_equal(names[1], "trn2");
    assert_null(names[2]);
    assert_string_equal(nx_machine_default(), "trn2");
}

static void test_trn2_figures(void **state) {
    (void)state;
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(nx_machine_load("trn2", &m, &err), 0);
    nx_machine want = trn2_expected();
    assert_machine_equal(&m, &want);
    /* Cross-checks from docs/parts/hardware.md: 28 MiB SBUF, 2 MiB PSUM per core;
     * 16 engines x 23 B/ns = 368 B/ns per core, about the 360 GB/s HBM share;
     * 720 B/ns x 4 logical cores = 2.88 TB/s, about the 2.9 TB/s device. */
    assert_int_equal(m.geo.partitions * m.geo.sbuf_partition_bytes, 28 * KiB * KiB);
    assert_int_equal(m.geo.partitions * m.geo.psum_partition_bytes, 2 * KiB * KiB);
    assert_true(m.geo.dma_engines * m.dma_engine_bytes_per_ns == 368.0);
    assert_true(m.hbm_bytes_per_ns * 4 == 2880.0);
    assert_int_equal(m.geo.hbm_bytes * 4, 96 * GiB);
}

static void test_trn1_figures(void **state) {
    (void)state;
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(nx_machine_load("trn1", &m, &err), 0);
    nx_machine want = trn1_expected();
    assert_machine_equal(&m, &want);
    /* docs/parts/hardware.md: 24 MiB SBUF per core. */
    assert_int_equal(m.geo.partitions * m.geo.sbuf_partition_bytes, 24 * KiB * KiB);
}

/* The preset files on disk load to the same machines as the compiled-in
 * copies (the embedding is up to date and path loading works). */
static void test_preset_files_match_embedded(void **state) {
    (void)state;
    char dir[1024], path[1100];
    machines_dir(dir, sizeof dir);
    const char *names[] = {"trn1", "trn2"};
    for (int i = 0; i < 2; i++) {
        nx_machine from_file, embedded;
        nx_error err = {{0}};
        snprintf(path, sizeof path, "%s/%s.json", dir, names[i]);
        assert_int_equal(nx_machine_load(path, &from_file, &err), 0);
        assert_int_equal(nx_machine_load(names[i], &embedded, &err), 0);
        assert_machine_equal(&from_file, &embedded);
    }
}

/* A preset name never reads the working directory, even if a file of that
 * name is there. */
static void test_presets_work_from_any_directory(void **state) {
    fixture *fx = *state;
    char cwd[1024];
    write_text(fx, "trn2", "not json");
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(fx->dir), 0);
    nx_machine m;
    nx_error err = {{0}};
    int rc = nx_machine_load("trn2", &m, &err);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    nx_machine want = trn2_expected();
    assert_machine_equal(&m, &want);
}

/* ---- user files --------------------------------------------------------- */

static void test_override_with_base(void **state) {
    fixture *fx = *state;
    const char *path = write_text(fx, "slow_dve.json",
                                  "{\n"
                                  "  \"base\": \"trn1\",\n"
                                  "  \"name\": \"slow-dve\",\n"
                                  "  \"comment\": \"trn1 with a slower vector engine\",\n"
                                  "  \"clocks_ghz\": {\"dve\": 0.5, \"comment\": \"halved\"},\n"
                                  "  \"dve\": {\"min_ii\": 100, \"fixed_overhead\": 144},\n"
                                  "  \"conflicts\": {\"sbuf_dve_pool_conflict\": false},\n"
                                  "  \"geometry\": {\"hbm_bytes\": 1073741824, \"cores\": 1}\n"
                                  "}\n");
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(nx_machine_load(path, &m, &err), 0);
    nx_machine want = trn1_expected();
    strcpy(want.geo.name, "slow-dve");
    want.clock_ghz[NX_ENG_DVE] = 0.5;
    want.dve_min_ii = 100;
    want.dve_fixed_overhead = 144;
    want.sbuf_dve_pool_conflict = 0;
    want.geo.hbm_bytes = GiB;
    want.geo.cores = 1;
    assert_machine_equal(&m, &want);
}

static void test_base_alone_is_the_preset(void **state) {
    (void)state;
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(nx_machine_parse("m.json", "{\"base\": \"trn2\"}", &m, &err), 0);
    nx_machine want = trn2_expected();
    assert_machine_equal(&m, &want);
}

/* Every clock key lands on its own engine. */
static void test_clock_keys_map_to_engines(void **state) {
    (void)state;
    nx_machine m;
    nx_error err = {{0}};
    const char *json = "{\"base\": \"trn2\", \"clocks_ghz\": "
                       "{\"pe\": 1.5, \"dve\": 2.5, \"act\": 3.5, \"pool\": 4.5, \"sp\": 5.5}}";
    assert_int_equal(nx_machine_parse("m.json", json, &m, &err), 0);
    assert_true(m.clock_ghz[NX_ENG_PE] == 1.5);
    assert_true(m.clock_ghz[NX_ENG_DVE] == 2.5);
    assert_true(m.clock_ghz[NX_ENG_ACT] == 3.5);
    assert_true(m.clock_ghz[NX_ENG_POOL] == 4.5);
    assert_true(m.clock_ghz[NX_ENG_SP] == 5.5);
}

/* A complete file without base, every number distinct, so a key mapped to
 * the wrong field cannot go unnoticed; the flags are checked in two
 * complementary patterns. */
static const char *complete_file(int flags_pattern, char *buf, size_t cap) {
    const char *t = flags_pattern ? "true" : "false";
    const char *f = flags_pattern ? "false" : "true";
    snprintf(buf, cap,
             "{\"name\": \"custom\",\n"
             " \"geometry\": {\"cores\": 1, \"partitions\": 120, \"sbuf_partition_bytes\": 100000,\n"
             "  \"psum_partition_bytes\": 12288, \"psum_bank_bytes\": 3072, \"hbm_bytes\": 5000000000,\n"
             "  \"sbuf_free_elems_max\": 60000, \"psum_free_elems_max\": 3000, \"pe_rows\": 96,\n"
             "  \"pe_cols\": 80, \"pe_moving_free_max\": 700, \"dve_transpose_max\": 24,\n"
             "  \"pool_partitions_per_core\": 12, \"max8_min_elems\": 9, \"max8_max_elems\": 9000,\n"
             "  \"dma_queues\": 60},\n"
             " \"clocks_ghz\": {\"pe\": 2.25, \"dve\": 0.75, \"act\": 1.25, \"pool\": 1.75, \"sp\": 0.5},\n"
             " \"pe\": {\"mm_init_latency\": 65, \"fp32_factor\": 3, \"fast_load_factor\": 5,\n"
             "  \"background_load\": %s, \"fill_latency\": 201, \"systolic_reference\": %s},\n"
             " \"dve\": {\"cycles_per_elem_one_input\": 6, \"cycles_per_elem_two_inputs\": 7,\n"
             "  \"min_ii\": 66, \"dependency_overhead\": 61, \"fixed_overhead\": 144, \"perf_modes\": %s},\n"
             " \"act\": {\"min_cycles\": 67, \"accumulate_extra\": 68, \"dependency_overhead\": 69},\n"
             " \"pool\": {\"startup\": 151},\n"
             " \"dma\": {\"engines\": 12, \"queues_per_engine\": 5, \"engine_bytes_per_ns\": 27,\n"
             "  \"fixed_ns\": 1200.5, \"efficient_bytes_per_partition\": 4096},\n"
             " \"hbm\": {\"bytes_per_ns\": 333.25},\n"
             " \"sync\": {\"semaphore_latency_ns\": 12.5, \"barrier_latency_ns\": 640},\n"
             " \"conflicts\": {\"sbuf_dve_pool_conflict\": %s, \"psum_dve_act_conflict\": %s,\n"
             "  \"psum_same_bank_conflict\": %s}}\n",
             t, f, t, f, t, f);
    return buf;
}

static void test_complete_file_without_base(void **state) {
    (void)state;
    for (int pattern = 0; pattern < 2; pattern++) {
        char buf[4096];
        nx_machine m;
        nx_error err = {{0}};
        assert_int_equal(nx_machine_parse("custom.json", complete_file(pattern, buf, sizeof buf),
                                          &m, &err),
                         0);
        nx_machine want;
        memset(&want, 0, sizeof want);
        strcpy(want.geo.name, "custom");
        want.geo.cores = 1;
        want.geo.partitions = 120;
        want.geo.sbuf_partition_bytes = 100000;
        want.geo.psum_partition_bytes = 12288;
        want.geo.psum_bank_bytes = 3072;
        want.geo.hbm_bytes = 5000000000ull;
        want.geo.sbuf_free_elems_max = 60000;
        want.geo.psum_free_elems_max = 3000;
        want.geo.pe_rows = 96;
        want.geo.pe_cols = 80;
        want.geo.pe_moving_free_max = 700;
        want.geo.dve_transpose_max = 24;
        want.geo.pool_partitions_per_core = 12;
        want.geo.max8_min_elems = 9;
        want.geo.max8_max_elems = 9000;
        want.geo.dma_queues = 60;
        want.clock_ghz[NX_ENG_PE] = 2.25;
        want.clock_ghz[NX_ENG_DVE] = 0.75;
        want.clock_ghz[NX_ENG_ACT] = 1.25;
        want.clock_ghz[NX_ENG_POOL] = 1.75;
        want.clock_ghz[NX_ENG_SP] = 0.5;
        want.pe_mm_init_latency = 65;
        want.pe_fp32_factor = 3;
        want.pe_fast_load_factor = 5;
        want.pe_background_load = (uint32_t)pattern;
        want.pe_fill_latency = 201;
        want.pe_systolic_reference = (uint32_t)!pattern;
        want.dve_cycles_per_elem_one_input = 6;
        want.dve_cycles_per_elem_two_inputs = 7;
        want.dve_min_ii = 66;
        want.dve_dependency_overhead = 61;
        want.dve_fixed_overhead = 144;
        want.dve_perf_modes = (uint32_t)pattern;
        want.act_min_cycles = 67;
        want.act_accumulate_extra = 68;
        want.act_dependency_overhead = 69;
        want.pool_startup = 151;
        want.geo.dma_engines = 12;
        want.geo.dma_queues_per_engine = 5;
        want.dma_engine_bytes_per_ns = 27;
        want.dma_fixed_ns = 1200.5;
        want.dma_efficient_bytes_per_partition = 4096;
        want.hbm_bytes_per_ns = 333.25;
        want.semaphore_latency_ns = 12.5;
        want.barrier_latency_ns = 640;
        want.sbuf_dve_pool_conflict = (uint32_t)!pattern;
        want.psum_dve_act_conflict = (uint32_t)pattern;
        want.psum_same_bank_conflict = (uint32_t)!pattern;
        assert_machine_equal(&m, &want);
    }
}

/* ---- errors ------------------------------------------------------------- */

static void test_error_unreadable_file(void **state) {
    fixture *fx = *state;
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(nx_machine_load("/nonexistent-nxsim-dir/m.json", &m, &err), -1);
    assert_string_equal(err.msg, "/nonexistent-nxsim-dir/m.json: cannot open: No such file or directory");
    assert_int_equal(nx_machine_load("trn3", &m, &err), -1);
    assert_string_equal(err.msg,
                        "trn3: cannot open: No such file or directory (and it is not a preset: trn1, trn2)");
    char msg[256];
    assert_int_equal(nx_machine_load(fx->dir, &m, &err), -1);
    snprintf(msg, sizeof msg, "%s: cannot read: Is a directory", fx->dir);
    assert_string_equal(err.msg, msg);
    assert_int_equal(nx_machine_load("", &m, &err), -1);
    assert_string_equal(err.msg, "machine: no preset name or file given");
    assert_int_equal(nx_machine_load(NULL, &m, &err), -1);
    assert_string_equal(err.msg, "machine: no preset name or file given");
}

static void test_error_invalid_json(void **state) {
    fixture *fx = *state;
    /* Missing ':' after "min_ii": line 3, column 20 (byte 2 + 18 + 19 = 39) is the '6' where cJSON stops. */
    const char *path = write_text(fx, "bad.json",
                                  "{\n"
                                  "  \"base\": \"trn2\",\n"
                                  "  \"dve\": {\"min_ii\" 64}\n"
                                  "}\n");
    nx_machine m;
    nx_error err = {{0}};
    char msg[256];
    assert_int_equal(nx_machine_load(path, &m, &err), -1);
    snprintf(msg, sizeof msg, "%s: invalid JSON at line 3, column 20 (byte 39)", path);
    assert_string_equal(err.msg, msg);
    /* Trailing garbage after the object. */
    expect_parse_error("{\"base\": \"trn2\"} x", "m.json: invalid JSON at line 1, column 18 (byte 17)");
    expect_parse_error("", "m.json: invalid JSON at line 1, column 1 (byte 0)");
    /* A NUL byte inside a file is not JSON text. */
    path = write_bytes(fx, "nul.json", "{\"base\":\0\"trn2\"}", 16);
    assert_int_equal(nx_machine_load(path, &m, &err), -1);
    snprintf(msg, sizeof msg, "%s: invalid JSON at line 1, column 9 (byte 8): NUL byte", path);
    assert_string_equal(err.msg, msg);
    expect_parse_error("[1, 2]", "m.json: the top level must be a JSON object");
}

static void test_error_unknown_key(void **state) {
    (void)state;
    expect_parse_error("{\"base\": \"trn2\", \"dve\": {\"min_iii\": 64}}",
                       "m.json: unknown key 'dve.min_iii'");
    expect_parse_error("{\"base\": \"trn2\", \"dvee\": {}}", "m.json: unknown key 'dvee'");
    /* A group prefix is not part of the key. */
    expect_parse_error("{\"base\": \"trn2\", \"dve\": {\"dve_min_ii\": 64}}",
                       "m.json: unknown key 'dve.dve_min_ii'");
    /* A key under the wrong group. */
    expect_parse_error("{\"base\": \"trn2\", \"act\": {\"min_ii\": 64}}",
                       "m.json: unknown key 'act.min_ii'");
    /* Control characters in a key do not break the one-line message. */
    expect_parse_error("{\"base\": \"trn2\", \"a\\nb\": 1}", "m.json: unknown key 'a\\nb'");
    expect_parse_error("{\"base\": \"trn2\", \"dve\": {\"min_ii\": 64, \"min_ii\": 65}}",
                       "m.json: duplicate key 'dve.min_ii'");
    expect_parse_error("{\"base\": \"trn2\", \"name\": \"a\", \"name\": \"b\"}",
                       "m.json: duplicate key 'name'");
}

static void test_error_wrong_type(void **state) {
    (void)state;
    expect_parse_error("{\"base\": \"trn2\", \"dve\": {\"min_ii\": \"64\"}}",
                       "m.json: 'dve.min_ii' must be a number");
    expect_parse_error("{\"base\": \"trn2\", \"hbm\": {\"bytes_per_ns\": null}}",
                       "m.json: 'hbm.bytes_per_ns' must be a number");
    expect_parse_error("{\"base\": \"trn2\", \"dve\": {\"perf_modes\": 1}}",
                       "m.json: 'dve.perf_modes' must be true or false");
    expect_parse_error("{\"base\": \"trn2\", \"dve\": 64}", "m.json: 'dve' must be an object");
    expect_parse_error("{\"base\": \"trn2\", \"name\": 7}", "m.json: 'name' must be a string");
    expect_parse_error("{\"base\": 2}", "m.json: 'base' must be a string");
    expect_parse_error("{\"base\": \"trn2\", \"comment\": 1}", "m.json: 'comment' must be a string");
    expect_parse_error("{\"base\": \"trn2\", \"pe\": {\"comment\": []}}",
                       "m.json: 'pe.comment' must be a string");
}

static void test_error_out_of_range(void **state) {
    (void)state;
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"partitions\": 0}}",
                       "m.json: 'geometry.partitions' = 0 is out of range [1, 128]");
    /* Partitions are encoded in a byte: 129 is refused. */
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"partitions\": 129}}",
                       "m.json: 'geometry.partitions' = 129 is out of range [1, 128]");
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"cores\": 3}}",
                       "m.json: 'geometry.cores' = 3 is out of range [1, 2]");
    expect_parse_error("{\"base\": \"trn2\", \"clocks_ghz\": {\"pe\": 0}}",
                       "m.json: 'clocks_ghz.pe' = 0 is out of range [0.001, 1000]");
    expect_parse_error("{\"base\": \"trn2\", \"dma\": {\"engine_bytes_per_ns\": -2.5}}",
                       "m.json: 'dma.engine_bytes_per_ns' = -2.5 is out of range [0.001, 1000000]");
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"hbm_bytes\": 1e300}}",
                       "m.json: 'geometry.hbm_bytes' = 1e+300 is out of range [1, 281474976710656]");
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"max8_min_elems\": 7}}",
                       "m.json: 'geometry.max8_min_elems' = 7 is out of range [8, 16777216]");
}

static void test_error_not_integral(void **state) {
    (void)state;
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"partitions\": 64.5}}",
                       "m.json: 'geometry.partitions' = 64.5 must be an integer");
    expect_parse_error("{\"base\": \"trn2\", \"dve\": {\"min_ii\": 1e-3}}",
                       "m.json: 'dve.min_ii' = 0.001 must be an integer");
    /* Integral values written with a fraction or exponent are integers. */
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(
        nx_machine_parse("m.json", "{\"base\": \"trn2\", \"dve\": {\"min_ii\": 6.4e1}}", &m, &err), 0);
    assert_int_equal(m.dve_min_ii, 64);
}

static void test_error_name(void **state) {
    (void)state;
    expect_parse_error("{\"base\": \"trn2\", \"name\": \"sixteen_chars_xx\"}",
                       "m.json: 'name' = 'sixteen_chars_xx' must be 1 to 15 characters from [A-Za-z0-9_.-]");
    expect_parse_error("{\"base\": \"trn2\", \"name\": \"\"}",
                       "m.json: 'name' = '' must be 1 to 15 characters from [A-Za-z0-9_.-]");
    expect_parse_error("{\"base\": \"trn2\", \"name\": \"my trn\"}",
                       "m.json: 'name' = 'my trn' must be 1 to 15 characters from [A-Za-z0-9_.-]");
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(
        nx_machine_parse("m.json", "{\"base\": \"trn1\", \"name\": \"fifteen_chars_x\"}", &m, &err), 0);
    assert_string_equal(m.geo.name, "fifteen_chars_x");
}

static void test_error_base(void **state) {
    (void)state;
    expect_parse_error("{\"base\": \"trn3\"}", "m.json: 'base' = 'trn3' is not a preset (trn1, trn2)");
}

static void test_error_incomplete_without_base(void **state) {
    (void)state;
    expect_parse_error("{\"geometry\": {\"cores\": 1}}",
                       "m.json: missing key 'name' (a file without \"base\" must give every parameter)");
    expect_parse_error("{\"name\": \"x\", \"geometry\": {\"cores\": 1}}",
                       "m.json: missing key 'geometry.partitions' (a file without \"base\" must give "
                       "every parameter)");
    /* The complete file minus its last parameter. */
    char buf[4096];
    complete_file(1, buf, sizeof buf);
    char *last = strstr(buf, ",\n  \"psum_same_bank_conflict\": ");
    assert_non_null(last);
    strcpy(last, "}}\n");
    expect_parse_error(buf, "m.json: missing key 'conflicts.psum_same_bank_conflict' (a file without "
                            "\"base\" must give every parameter)");
}

static void test_error_relations(void **state) {
    (void)state;
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"max8_min_elems\": 20000}}",
                       "m.json: 'geometry.max8_min_elems' = 20000 must be <= 'geometry.max8_max_elems' = 16384");
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"partitions\": 64}}",
                       "m.json: 'geometry.pe_rows' = 128 must be <= 'geometry.partitions' = 64");
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"pe_moving_free_max\": 1024}}",
                       "m.json: 'geometry.pe_moving_free_max' x 4 = 4096 must be <= "
                       "'geometry.psum_bank_bytes' = 2048");
    expect_parse_error("{\"base\": \"trn2\", \"geometry\": {\"psum_partition_bytes\": 15000}}",
                       "m.json: 'geometry.psum_partition_bytes' = 15000 must be a multiple of "
                       "'geometry.psum_bank_bytes' = 2048");
    expect_parse_error("{\"base\": \"trn2\", \"dma\": {\"engines\": 8}}",
                       "m.json: 'geometry.dma_queues' = 256 must equal 'dma.engines' x "
                       "'dma.queues_per_engine' = 8 x 16");
    /* Changing both sides together is fine. */
    nx_machine m;
    nx_error err = {{0}};
    assert_int_equal(nx_machine_parse("m.json",
                                      "{\"base\": \"trn2\", \"dma\": {\"engines\": 8},"
                                      " \"geometry\": {\"dma_queues\": 128}}",
                                      &m, &err),
                     0);
    assert_int_equal(m.geo.dma_engines, 8);
    assert_int_equal(m.geo.dma_queues, 128);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_list),
        cmocka_unit_test(test_trn2_figures),
        cmocka_unit_test(test_trn1_figures),
        cmocka_unit_test(test_preset_files_match_embedded),
        cmocka_unit_test_setup_teardown(test_presets_work_from_any_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_with_base, setup, teardown),
        cmocka_unit_test(test_base_alone_is_the_preset),
        cmocka_unit_test(test_clock_keys_map_to_engines),
        cmocka_unit_test(test_complete_file_without_base),
        cmocka_unit_test_setup_teardown(test_error_unreadable_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_invalid_json, setup, teardown),
        cmocka_unit_test(test_error_unknown_key),
        cmocka_unit_test(test_error_wrong_type),
        cmocka_unit_test(test_error_out_of_range),
        cmocka_unit_test(test_error_not_integral),
        cmocka_unit_test(test_error_name),
        cmocka_unit_test(test_error_base),
        cmocka_unit_test(test_error_incomplete_without_base),
        cmocka_unit_test(test_error_relations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
