/* Machine descriptions: JSON text -> nx_machine.
 *
 * Every parameter is one row of `params` below: its key path in the JSON file
 * ("group.key"), its C type, where it lives in nx_machine and its legal range.
 * That one table drives parsing, type and range checks, unknown-key and
 * duplicate-key detection, and the "a file without base is complete" check,
 * so adding a parameter is one struct field plus one row. Relations between
 * parameters (max8 min <= max, queues = engines x queues per engine, ...) are
 * rows of the second table, `relations`.
 *
 * The preset files sim/machines/<name>.json are compiled in by
 * cmake/embed.cmake (arrays nx_machine_preset_names / _texts). */
#include "machine.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Generated at build time from the files in sim/machines/ (cmake/embed.cmake):
 * NULL-terminated, in file name order. */
extern const char *const nx_machine_preset_names[];
extern const char *const nx_machine_preset_texts[];

#define DEFAULT_PRESET "trn2"
#define MAX_FILE_BYTES (1u << 20) /* machine files are a few KiB */
#define NAME_MAX_CHARS 15         /* nx_geometry.name is char[16] */

typedef enum param_type {
    PT_U32,  /* JSON integer -> uint32_t */
    PT_U64,  /* JSON integer -> uint64_t */
    PT_F64,  /* JSON number  -> double */
    PT_FLAG, /* JSON true/false -> uint32_t 1/0 */
} param_type;

typedef struct param {
    const char *path; /* "group.key"; key = the field name without its group prefix */
    param_type type;
    size_t offset;    /* into nx_machine */
    double min, max;  /* inclusive; unused for PT_FLAG */
} param;

#define GEO(f) (offsetof(nx_machine, geo) + offsetof(nx_geometry, f))
#define FIELD(f) offsetof(nx_machine, f)
#define CLOCK(e) (offsetof(nx_machine, clock_ghz) + (size_t)(e) * sizeof(double))
#define FLAG 0.0, 1.0

/* Ranges: partition counts are <= 128 because the ISA encodes partitions in a
 * byte (nx_operand.start_partition / partition_count); cores <= NX_MAX_CORES.
 * The other bounds only keep a model's arithmetic sane (sizes fit uint32 and
 * a host allocation, no zero clocks or bandwidths). */
static const param params[] = {
    {"geometry.cores", PT_U32, GEO(cores), 1, NX_MAX_CORES},
    {"geometry.partitions", PT_U32, GEO(partitions), 1, 128},
    {"geometry.sbuf_partition_bytes", PT_U64, GEO(sbuf_partition_bytes), 1, 16777216},
    {"geometry.psum_partition_bytes", PT_U64, GEO(psum_partition_bytes), 1, 1048576},
    {"geometry.psum_bank_bytes", PT_U64, GEO(psum_bank_bytes), 1, 1048576},
    {"geometry.hbm_bytes", PT_U64, GEO(hbm_bytes), 1, 281474976710656.0 /* 2^48 */},
    {"geometry.sbuf_free_elems_max", PT_U32, GEO(sbuf_free_elems_max), 1, 16777216},
    {"geometry.psum_free_elems_max", PT_U32, GEO(psum_free_elems_max), 1, 16777216},
    {"geometry.pe_rows", PT_U32, GEO(pe_rows), 1, 128},
    {"geometry.pe_cols", PT_U32, GEO(pe_cols), 1, 128},
    {"geometry.pe_moving_free_max", PT_U32, GEO(pe_moving_free_max), 1, 65536},
    {"geometry.dve_transpose_max", PT_U32, GEO(dve_transpose_max), 1, 128},
    {"geometry.pool_partitions_per_core", PT_U32, GEO(pool_partitions_per_core), 1, 128},
    {"geometry.max8_min_elems", PT_U32, GEO(max8_min_elems), 8, 16777216},
    {"geometry.max8_max_elems", PT_U32, GEO(max8_max_elems), 8, 16777216},
    {"geometry.dma_queues", PT_U32, GEO(dma_queues), 1, 65536},

    {"clocks_ghz.pe", PT_F64, CLOCK(NX_ENG_PE), 0.001, 1000},
    {"clocks_ghz.dve", PT_F64, CLOCK(NX_ENG_DVE), 0.001, 1000},
    {"clocks_ghz.act", PT_F64, CLOCK(NX_ENG_ACT), 0.001, 1000},
    {"clocks_ghz.pool", PT_F64, CLOCK(NX_ENG_POOL), 0.001, 1000},
    {"clocks_ghz.sp", PT_F64, CLOCK(NX_ENG_SP), 0.001, 1000},

    {"pe.mm_init_latency", PT_U32, FIELD(pe_mm_init_latency), 1, 1000000},
    {"pe.fp32_factor", PT_U32, FIELD(pe_fp32_factor), 1, 64},
    {"pe.fast_load_factor", PT_U32, FIELD(pe_fast_load_factor), 1, 64},
    {"pe.background_load", PT_FLAG, FIELD(pe_background_load), FLAG},
    {"pe.fill_latency", PT_U32, FIELD(pe_fill_latency), 0, 1000000},
    {"pe.systolic_reference", PT_FLAG, FIELD(pe_systolic_reference), FLAG},

    {"dve.cycles_per_elem_one_input", PT_U32, FIELD(dve_cycles_per_elem_one_input), 1, 1024},
    {"dve.cycles_per_elem_two_inputs", PT_U32, FIELD(dve_cycles_per_elem_two_inputs), 1, 1024},
    {"dve.min_ii", PT_U32, FIELD(dve_min_ii), 1, 1000000},
    {"dve.dependency_overhead", PT_U32, FIELD(dve_dependency_overhead), 0, 1000000},
    {"dve.fixed_overhead", PT_U32, FIELD(dve_fixed_overhead), 0, 1000000},
    {"dve.perf_modes", PT_FLAG, FIELD(dve_perf_modes), FLAG},

    {"act.min_cycles", PT_U32, FIELD(act_min_cycles), 1, 1000000},
    {"act.accumulate_extra", PT_U32, FIELD(act_accumulate_extra), 0, 1000000},
    {"act.dependency_overhead", PT_U32, FIELD(act_dependency_overhead), 0, 1000000},

    {"pool.startup", PT_U32, FIELD(pool_startup), 0, 1000000},

    {"dma.engines", PT_U32, GEO(dma_engines), 1, 256},
    {"dma.queues_per_engine", PT_U32, GEO(dma_queues_per_engine), 1, 256},
    {"dma.engine_bytes_per_ns", PT_F64, FIELD(dma_engine_bytes_per_ns), 0.001, 1000000},
    {"dma.fixed_ns", PT_F64, FIELD(dma_fixed_ns), 0, 1e9},
    {"dma.efficient_bytes_per_partition", PT_U32, FIELD(dma_efficient_bytes_per_partition), 1,
     16777216},

    {"hbm.bytes_per_ns", PT_F64, FIELD(hbm_bytes_per_ns), 0.001, 1e7},

    {"sync.semaphore_latency_ns", PT_F64, FIELD(semaphore_latency_ns), 0, 1e9},
    {"sync.barrier_latency_ns", PT_F64, FIELD(barrier_latency_ns), 0, 1e9},

    {"conflicts.sbuf_dve_pool_conflict", PT_FLAG, FIELD(sbuf_dve_pool_conflict), FLAG},
    {"conflicts.psum_dve_act_conflict", PT_FLAG, FIELD(psum_dve_act_conflict), FLAG},
    {"conflicts.psum_same_bank_conflict", PT_FLAG, FIELD(psum_same_bank_conflict), FLAG},
};
#define PARAM_COUNT (sizeof params / sizeof params[0])

typedef enum relation_kind {
    REL_LE,       /* a * factor <= b */
    REL_MULTIPLE, /* a is a multiple of b */
    REL_PRODUCT,  /* a == b * c */
} relation_kind;

typedef struct relation {
    relation_kind kind;
    const char *a;
    unsigned factor; /* REL_LE only */
    const char *b, *c;
} relation;

static const relation relations[] = {
    {REL_LE, "geometry.max8_min_elems", 1, "geometry.max8_max_elems", NULL},
    {REL_LE, "geometry.pe_rows", 1, "geometry.partitions", NULL},
    {REL_LE, "geometry.pe_cols", 1, "geometry.partitions", NULL},
    {REL_LE, "geometry.dve_transpose_max", 1, "geometry.partitions", NULL},
    {REL_LE, "geometry.pool_partitions_per_core", 1, "geometry.partitions", NULL},
    /* One multiply's fp32 result row (N x 4 bytes) fills at most one PSUM bank. */
    {REL_LE, "geometry.pe_moving_free_max", 4, "geometry.psum_bank_bytes", NULL},
    {REL_MULTIPLE, "geometry.psum_partition_bytes", 1, "geometry.psum_bank_bytes", NULL},
    /* A DMA instruction names a queue as engine * queues_per_engine + queue. */
    {REL_PRODUCT, "geometry.dma_queues", 1, "dma.engines", "dma.queues_per_engine"},
};
#define RELATION_COUNT (sizeof relations / sizeof relations[0])

/* ---- small helpers ---------------------------------------------------- */

/* A JSON string made safe for a one-line message (isa/error.h
 * nx_msg_quote: control bytes escaped, cut after 40 bytes with "..."). */
static const char *clip(const char *s, char out[200]) { return nx_msg_quote(s, 40, out, 200); }

/* The shortest %g form that reads back as the same double (2.4, not
 * 2.3999999999999999), so messages show the value the file wrote. */
static const char *fmt_num(double v, char out[32]) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 32, "%.*g", prec, v);
        if (strtod(out, NULL) == v) break;
    }
    return out;
}

static const param *find_param(const char *group, const char *key) {
    size_t glen = strlen(group);
    for (size_t i = 0; i < PARAM_COUNT; i++) {
        const char *p = params[i].path;
        if (strncmp(p, group, glen) == 0 && p[glen] == '.' && strcmp(p + glen + 1, key) == 0)
            return &params[i];
    }
    return NULL;
}

static const param *find_path(const char *path) {
    for (size_t i = 0; i < PARAM_COUNT; i++)
        if (strcmp(params[i].path, path) == 0) return &params[i];
    return NULL;
}

static int is_group(const char *key) {
    size_t klen = strlen(key);
    for (size_t i = 0; i < PARAM_COUNT; i++)
        if (strncmp(params[i].path, key, klen) == 0 && params[i].path[klen] == '.') return 1;
    return 0;
}

static double get_value(const nx_machine *m, const param *p) {
    const char *src = (const char *)m + p->offset;
    uint32_t u32;
    uint64_t u64;
    double f64;
    switch (p->type) {
    case PT_U64:
        memcpy(&u64, src, sizeof u64);
        return (double)u64;
    case PT_F64:
        memcpy(&f64, src, sizeof f64);
        return f64;
    case PT_U32:
    case PT_FLAG:
        break;
    }
    memcpy(&u32, src, sizeof u32);
    return (double)u32;
}

static int set_value(const char *source, const param *p, const cJSON *item, nx_machine *m,
                     nx_error *err) {
    char *dst = (char *)m + p->offset;
    char v_s[32], lo_s[32], hi_s[32];
    if (p->type == PT_FLAG) {
        if (!cJSON_IsBool(item))
            return nx_fail(err, "%s: '%s' must be true or false", source, p->path);
        uint32_t flag = cJSON_IsTrue(item) ? 1u : 0u;
        memcpy(dst, &flag, sizeof flag);
        return 0;
    }
    if (!cJSON_IsNumber(item)) return nx_fail(err, "%s: '%s' must be a number", source, p->path);
    double v = item->valuedouble;
    if (p->type != PT_F64 && isfinite(v) && v != floor(v))
        return nx_fail(err, "%s: '%s' = %s must be an integer", source, p->path, fmt_num(v, v_s));
    if (!(v >= p->min && v <= p->max))
        return nx_fail(err, "%s: '%s' = %s is out of range [%s, %s]", source, p->path,
                       fmt_num(v, v_s), fmt_num(p->min, lo_s), fmt_num(p->max, hi_s));
    if (p->type == PT_U32) {
        uint32_t u = (uint32_t)v;
        memcpy(dst, &u, sizeof u);
    } else if (p->type == PT_U64) {
        uint64_t u = (uint64_t)v;
        memcpy(dst, &u, sizeof u);
    } else {
        memcpy(dst, &v, sizeof v);
    }
    return 0;
}

static int set_name(const char *source, const cJSON *item, nx_machine *m, nx_error *err) {
    char s[200];
    if (!cJSON_IsString(item)) return nx_fail(err, "%s: 'name' must be a string", source);
    const char *name = item->valuestring;
    size_t n = strlen(name);
    int ok = n >= 1 && n <= NAME_MAX_CHARS;
    for (size_t i = 0; ok && i < n; i++) {
        char c = name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '.' || c == '-';
    }
    /* The name appears as one token in assembly (".machine NAME"). */
    if (!ok)
        return nx_fail(err, "%s: 'name' = '%s' must be 1 to %d characters from [A-Za-z0-9_.-]",
                       source, clip(name, s), NAME_MAX_CHARS);
    memcpy(m->geo.name, name, n + 1);
    return 0;
}

/* cJSON keeps every member of an object, duplicates included. */
static int repeats_earlier_key(const cJSON *object, const cJSON *member) {
    for (const cJSON *c = object->child; c != member; c = c->next)
        if (strcmp(c->string, member->string) == 0) return 1;
    return 0;
}

static int preset_index(const char *name) {
    for (int i = 0; nx_machine_preset_names[i] != NULL; i++)
        if (strcmp(nx_machine_preset_names[i], name) == 0) return i;
    return -1;
}

static void preset_list(char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; nx_machine_preset_names[i] != NULL; i++) {
        int n = snprintf(out + len, cap - len, "%s%s", i ? ", " : "", nx_machine_preset_names[i]);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
}

/* ---- parsing ---------------------------------------------------------- */

static int parse_text(const char *source, const char *json, size_t len, int allow_base,
                      nx_machine *out, nx_error *err);

static int fail_json_at(const char *source, const char *json, size_t at, const char *why,
                        nx_error *err) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at; i++) {
        if (json[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return nx_fail(err, "%s: invalid JSON at line %zu, column %zu (byte %zu)%s", source, line, col,
                   at, why);
}

static int load_preset(int index, nx_machine *out, nx_error *err) {
    char source[64];
    const char *text = nx_machine_preset_texts[index];
    snprintf(source, sizeof source, "%s (built-in preset)", nx_machine_preset_names[index]);
    return parse_text(source, text, strlen(text), 0, out, err);
}

/* Starts from "base" if the file names one; otherwise from all-zero. */
static int apply_base(const char *source, const cJSON *root, int allow_base, nx_machine *m,
                      int *has_base, nx_error *err) {
    char s[200], list[128];
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
    memset(m, 0, sizeof *m);
    *has_base = base != NULL;
    if (base == NULL) return 0;
    if (!allow_base) return nx_fail(err, "%s: a preset may not have a 'base'", source);
    if (!cJSON_IsString(base)) return nx_fail(err, "%s: 'base' must be a string", source);
    int index = preset_index(base->valuestring);
    if (index < 0) {
        preset_list(list, sizeof list);
        return nx_fail(err, "%s: 'base' = '%s' is not a preset (%s)", source,
                       clip(base->valuestring, s), list);
    }
    return load_preset(index, m, err);
}

static int apply_group(const char *source, const cJSON *group, nx_machine *m,
                       unsigned char seen[PARAM_COUNT], nx_error *err) {
    char s[200];
    const char *g = group->string;
    for (const cJSON *member = group->child; member != NULL; member = member->next) {
        const char *key = member->string;
        if (repeats_earlier_key(group, member))
            return nx_fail(err, "%s: duplicate key '%s.%s'", source, g, clip(key, s));
        if (strcmp(key, "comment") == 0) {
            if (!cJSON_IsString(member))
                return nx_fail(err, "%s: '%s.comment' must be a string", source, g);
            continue;
        }
        const param *p = find_param(g, key);
        if (p == NULL) return nx_fail(err, "%s: unknown key '%s.%s'", source, g, clip(key, s));
        if (set_value(source, p, member, m, err) != 0) return -1;
        seen[p - params] = 1;
    }
    return 0;
}

static int apply_members(const char *source, const cJSON *root, nx_machine *m,
                         unsigned char seen[PARAM_COUNT], int *has_name, nx_error *err) {
    char s[200];
    for (const cJSON *member = root->child; member != NULL; member = member->next) {
        const char *key = member->string;
        if (repeats_earlier_key(root, member))
            return nx_fail(err, "%s: duplicate key '%s'", source, clip(key, s));
        if (strcmp(key, "base") == 0) continue; /* applied first, by apply_base */
        if (strcmp(key, "comment") == 0) {
            if (!cJSON_IsString(member))
                return nx_fail(err, "%s: 'comment' must be a string", source);
            continue;
        }
        if (strcmp(key, "name") == 0) {
            if (set_name(source, member, m, err) != 0) return -1;
            *has_name = 1;
            continue;
        }
        if (!is_group(key)) return nx_fail(err, "%s: unknown key '%s'", source, clip(key, s));
        if (!cJSON_IsObject(member))
            return nx_fail(err, "%s: '%s' must be an object", source, key);
        if (apply_group(source, member, m, seen, err) != 0) return -1;
    }
    return 0;
}

static int check_complete(const char *source, int has_name, const unsigned char seen[PARAM_COUNT],
                          nx_error *err) {
    const char *why = "(a file without \"base\" must give every parameter)";
    if (!has_name) return nx_fail(err, "%s: missing key 'name' %s", source, why);
    for (size_t i = 0; i < PARAM_COUNT; i++)
        if (!seen[i]) return nx_fail(err, "%s: missing key '%s' %s", source, params[i].path, why);
    return 0;
}

static int check_relations(const char *source, const nx_machine *m, nx_error *err) {
    char a_s[32], b_s[32], c_s[32];
    for (size_t i = 0; i < RELATION_COUNT; i++) {
        const relation *r = &relations[i];
        const param *pa = find_path(r->a), *pb = find_path(r->b);
        const param *pc = r->c != NULL ? find_path(r->c) : NULL;
        if (pa == NULL || pb == NULL || (r->c != NULL && pc == NULL))
            return nx_fail(err, "%s: internal error: relation %zu names an unknown key", source, i);
        /* Integer parameters only, all < 2^53: exact in double. */
        double a = get_value(m, pa), b = get_value(m, pb);
        switch (r->kind) {
        case REL_LE:
            if (a * r->factor <= b) break;
            if (r->factor == 1)
                return nx_fail(err, "%s: '%s' = %s must be <= '%s' = %s", source, r->a,
                               fmt_num(a, a_s), r->b, fmt_num(b, b_s));
            return nx_fail(err, "%s: '%s' x %u = %s must be <= '%s' = %s", source, r->a, r->factor,
                           fmt_num(a * r->factor, a_s), r->b, fmt_num(b, b_s));
        case REL_MULTIPLE:
            if (fmod(a, b) == 0) break;
            return nx_fail(err, "%s: '%s' = %s must be a multiple of '%s' = %s", source, r->a,
                           fmt_num(a, a_s), r->b, fmt_num(b, b_s));
        case REL_PRODUCT: {
            double c = get_value(m, pc);
            if (a == b * c) break;
            return nx_fail(err, "%s: '%s' = %s must equal '%s' x '%s' = %s x %s", source, r->a,
                           fmt_num(a, a_s), r->b, r->c, fmt_num(b, b_s), fmt_num(c, c_s));
        }
        }
    }
    return 0;
}

/* `json` holds `len` bytes followed by a NUL. */
static int parse_text(const char *source, const char *json, size_t len, int allow_base,
                      nx_machine *out, nx_error *err) {
    const char *nul = memchr(json, '\0', len);
    if (nul != NULL) return fail_json_at(source, json, (size_t)(nul - json), ": NUL byte", err);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len + 1, &end, 1);
    if (root == NULL) {
        size_t at = end != NULL && end >= json ? (size_t)(end - json) : 0;
        return fail_json_at(source, json, at > len ? len : at, "", err);
    }
    nx_machine m;
    unsigned char seen[PARAM_COUNT] = {0};
    int has_base = 0, has_name = 0, rc = -1;
    if (!cJSON_IsObject(root)) {
        nx_fail(err, "%s: the top level must be a JSON object", source);
    } else if (apply_base(source, root, allow_base, &m, &has_base, err) == 0 &&
               apply_members(source, root, &m, seen, &has_name, err) == 0 &&
               (has_base || check_complete(source, has_name, seen, err) == 0) &&
               check_relations(source, &m, err) == 0) {
        *out = m;
        rc = 0;
    }
    cJSON_Delete(root);
    return rc;
}

/* ---- files ------------------------------------------------------------ */

/* Reads a whole file into a NUL-terminated heap buffer. */
static int read_file(const char *path, char **text, size_t *len, nx_error *err) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        int looks_like_name = strchr(path, '/') == NULL && strchr(path, '.') == NULL;
        char list[128];
        preset_list(list, sizeof list);
        if (looks_like_name)
            return nx_fail(err, "%s: cannot open: %s (and it is not a preset: %s)", path,
                           strerror(e), list);
        return nx_fail(err, "%s: cannot open: %s", path, strerror(e));
    }
    char *buf = malloc(MAX_FILE_BYTES + 1);
    if (buf == NULL) {
        fclose(f);
        return nx_fail(err, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, MAX_FILE_BYTES + 1, f);
    int read_error = ferror(f) ? errno : 0;
    fclose(f);
    if (read_error != 0 || n > MAX_FILE_BYTES) {
        free(buf);
        if (read_error != 0) return nx_fail(err, "%s: cannot read: %s", path, strerror(read_error));
        return nx_fail(err, "%s: larger than %u bytes: not a machine description", path,
                       MAX_FILE_BYTES);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

/* ---- public ----------------------------------------------------------- */

int nx_machine_parse(const char *source, const char *json, nx_machine *out, nx_error *err) {
    if (source == NULL) source = "(machine text)";
    if (json == NULL || out == NULL) return nx_fail(err, "%s: no JSON text or no output", source);
    return parse_text(source, json, strlen(json), 1, out, err);
}

int nx_machine_load(const char *spec, nx_machine *out, nx_error *err) {
    if (spec == NULL || spec[0] == '\0') return nx_fail(err, "machine: no preset name or file given");
    if (out == NULL) return nx_fail(err, "%s: no output", spec);
    int index = preset_index(spec);
    if (index >= 0) return load_preset(index, out, err);
    char *text = NULL;
    size_t len = 0;
    if (read_file(spec, &text, &len, err) != 0) return -1;
    int rc = parse_text(spec, text, len, 1, out, err);
    free(text);
    return rc;
}

int nx_machine_of_geometry(const nx_geometry *geo, nx_machine *out, nx_error *err) {
    if (geo == NULL || out == NULL) return nx_fail(err, "machine: no geometry or no output");
    char name[sizeof geo->name + 1];
    memcpy(name, geo->name, sizeof geo->name);
    name[sizeof geo->name] = '\0';
    int index = preset_index(name);
    if (load_preset(index >= 0 ? index : preset_index(DEFAULT_PRESET), out, err) != 0) return -1;
    out->geo = *geo;
    return 0;
}

const char *nx_machine_default(void) { return DEFAULT_PRESET; }

const char *const *nx_machine_presets(void) { return nx_machine_preset_names; }
