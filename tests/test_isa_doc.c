/* docs/ISA.md stays in step with the opcode table (isa/opcodes.def).
 *
 * For every row of nx_opcode_table the reference must have exactly one
 * `### mnemonic` section, inside the "## Instructions" chapter and in table
 * order, whose `Engines:` and `Opcode:` lines match the row, whose operand
 * table lists exactly the row's slots (access, kinds, required), whose
 * Parameters paragraph names exactly the row's parameters, that has the
 * Semantics / Validation / Example / Cost paragraphs, and whose examples
 * assemble, validate on trn2 and run. No `###` heading may name an
 * instruction the table does not have, and the chapter's summary table has
 * one row per opcode. So adding an instruction without documenting it (or
 * changing one without updating its section) fails CI.
 *
 * The document is found relative to this file (../docs/ISA.md from tests/),
 * so no build-system definition is needed. The environment variable
 * NXSIM_ISA_DOC overrides the path (to check that an edited copy fails).
 * Every problem found is printed as `PATH:LINE: message` before the test
 * fails, so one run lists all of them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/asm.h"
#include "isa/exec.h"
#include "isa/opcodes.h"
#include "isa/program.h"
#include "isa/state.h"
#include "support.h"

#define MAX_SECTIONS 256

typedef struct section {
    const char *title; /* text after "### " */
    size_t first;      /* line index of the heading */
    size_t end;        /* one past the last line of the section */
    int in_chapter;    /* inside "## Instructions" */
} section;

typedef struct doc {
    char path[4096];
    char *text;        /* the file, '\n' replaced by '\0' */
    char **line;       /* line starts */
    size_t lines;
    int *in_fence;     /* line is inside (or opens/closes) a ``` block */
    section sec[MAX_SECTIONS];
    size_t sections;
    int has_chapter;
    size_t chapter_first, chapter_end; /* lines of "## Instructions" */
    int problems;
} doc;

static void problem(doc *d, size_t line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%zu: ", d->path, line + 1);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    d->problems++;
}

static void doc_path(char *out, size_t len) {
    const char *env = getenv("NXSIM_ISA_DOC");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return;
    }
    const char *file = __FILE__;
    const char *slash = strrchr(file, '/');
    if (!slash) {
        snprintf(out, len, "../docs/ISA.md");
        return;
    }
    snprintf(out, len, "%.*s/../docs/ISA.md", (int)(slash - file), file);
}

static int starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

/* Splits the text into lines and finds fences, chapters and sections. */
static int doc_parse(doc *d, size_t len) {
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += d->text[i] == '\n';
    d->line = calloc(lines, sizeof *d->line);
    d->in_fence = calloc(lines, sizeof *d->in_fence);
    if (!d->line || !d->in_fence) return -1;
    d->lines = 0;
    char *p = d->text;
    while (p) {
        d->line[d->lines++] = p;
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        size_t n = strlen(p);
        if (n && p[n - 1] == '\r') p[n - 1] = '\0';
        p = nl ? nl + 1 : NULL;
    }
    int fence = 0;
    d->chapter_first = d->chapter_end = 0;
    int chapter_open = 0;
    for (size_t i = 0; i < d->lines; i++) {
        const char *l = d->line[i];
        if (starts_with(l, "```")) {
            d->in_fence[i] = 1;
            fence = !fence;
            continue;
        }
        d->in_fence[i] = fence;
        if (fence) continue;
        int h2 = starts_with(l, "## "), h3 = starts_with(l, "### ");
        if (h2 || h3) {
            if (d->sections && d->sec[d->sections - 1].end == 0) d->sec[d->sections - 1].end = i;
        }
        if (h2) {
            if (chapter_open) {
                d->chapter_end = i;
                chapter_open = 0;
            }
            if (strcmp(l, "## Instructions") == 0) {
                d->chapter_first = i;
                d->has_chapter = chapter_open = 1;
            }
        }
        if (h3) {
            if (d->sections == MAX_SECTIONS) return -1;
            section *s = &d->sec[d->sections++];
            s->title = l + 4;
            s->first = i;
            s->end = 0;
            s->in_chapter = chapter_open;
        }
    }
    if (d->sections && d->sec[d->sections - 1].end == 0) d->sec[d->sections - 1].end = d->lines;
    if (chapter_open) d->chapter_end = d->lines;
    return 0;
}

static int setup(void **state) {
    doc *d = calloc(1, sizeof *d);
    if (!d) return -1;
    doc_path(d->path, sizeof d->path);
    size_t len;
    d->text = read_file(d->path, &len);
    if (!d->text) {
        fprintf(stderr, "%s: cannot read the ISA reference\n", d->path);
        free(d);
        return -1;
    }
    if (doc_parse(d, len) != 0) {
        fprintf(stderr, "%s: cannot parse (out of memory or more than %d ### sections)\n",
                d->path, MAX_SECTIONS);
        free(d->line);
        free(d->in_fence);
        free(d->text);
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

static int teardown(void **state) {
    doc *d = *state;
    if (!d) return 0; /* setup failed and said why */
    free(d->line);
    free(d->in_fence);
    free(d->text);
    free(d);
    return 0;
}

static int is_identifier(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

/* The one section titled `mnemonic`, or NULL (problems are reported by
 * test_one_section_per_opcode). */
static const section *find_section(const doc *d, const char *mnemonic) {
    const section *found = NULL;
    for (size_t i = 0; i < d->sections; i++) {
        if (strcmp(d->sec[i].title, mnemonic) != 0) continue;
        if (found) return NULL;
        found = &d->sec[i];
    }
    return found;
}

static void check_no_problems(doc *d) {
    if (d->problems) fail_msg("%d problem(s) in %s (listed above)", d->problems, d->path);
}

/* Exactly one `### mnemonic` per row, in the Instructions chapter, in table
 * order; no instruction-like heading that the table does not have. */
static void test_one_section_per_opcode(void **state) {
    doc *d = *state;
    d->problems = 0;
    if (!d->has_chapter) problem(d, 0, "no '## Instructions' chapter");
    size_t prev_line = 0;
    for (unsigned op = 0; op < NX_OP_COUNT; op++) {
        const char *mn = nx_opcode_table[op].mnemonic;
        size_t count = 0, at = 0;
        for (size_t i = 0; i < d->sections; i++) {
            if (strcmp(d->sec[i].title, mn) != 0) continue;
            count++;
            at = i;
        }
        if (count != 1) {
            problem(d, count ? d->sec[at].first : d->lines - 1,
                    "opcode %u '%s' needs exactly one '### %s' section, found %zu", op, mn, mn,
                    count);
            continue;
        }
        const section *s = &d->sec[at];
        if (!s->in_chapter)
            problem(d, s->first, "'### %s' is outside the '## Instructions' chapter", mn);
        if (s->first < prev_line)
            problem(d, s->first, "'### %s' (opcode %u) is out of opcode-table order", mn, op);
        prev_line = s->first;
    }
    for (size_t i = 0; i < d->sections; i++) {
        const section *s = &d->sec[i];
        if (nx_opcode_from_mnemonic(s->title) >= 0) continue;
        if (s->in_chapter)
            problem(d, s->first, "'### %s' in the Instructions chapter is not an opcode in isa/opcodes.def",
                    s->title);
        else if (is_identifier(s->title))
            problem(d, s->first, "'### %s' looks like an instruction heading but is not an opcode",
                    s->title);
    }
    check_no_problems(d);
}

static void engines_text(uint8_t mask, char *out, size_t len) {
    out[0] = '\0';
    for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
        if (!(mask & NX_ENG_BIT(e))) continue;
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? ", " : "", nx_engine_name((nx_engine)e));
    }
}

/* The section's single line starting with `prefix`, or NULL (reported). */
static const char *unique_line(doc *d, const section *s, const char *prefix, const char *mn) {
    const char *found = NULL;
    for (size_t i = s->first + 1; i < s->end; i++) {
        if (d->in_fence[i] || !starts_with(d->line[i], prefix)) continue;
        if (found) {
            problem(d, i, "'%s': a second '%s' line", mn, prefix);
            return NULL;
        }
        found = d->line[i];
    }
    if (!found) problem(d, s->first, "'%s': no '%s' line", mn, prefix);
    return found;
}

static void test_engines_and_opcode_lines(void **state) {
    doc *d = *state;
    d->problems = 0;
    for (unsigned op = 0; op < NX_OP_COUNT; op++) {
        const nx_opcode_info *info = &nx_opcode_table[op];
        const section *s = find_section(d, info->mnemonic);
        if (!s) {
            problem(d, d->lines - 1, "no single section for '%s'", info->mnemonic);
            continue;
        }
        char want[128], got_opcode[32];
        char engines[96];
        engines_text(info->engines, engines, sizeof engines);
        snprintf(want, sizeof want, "Engines: %s", engines);
        const char *l = unique_line(d, s, "Engines:", info->mnemonic);
        if (l && strcmp(l, want) != 0)
            problem(d, s->first, "'%s': '%s' should read '%s'", info->mnemonic, l, want);
        snprintf(got_opcode, sizeof got_opcode, "Opcode: %u", op);
        l = unique_line(d, s, "Opcode:", info->mnemonic);
        if (l && strcmp(l, got_opcode) != 0)
            problem(d, s->first, "'%s': '%s' should read '%s'", info->mnemonic, l, got_opcode);
    }
    check_no_problems(d);
}

/* Splits a markdown table row into at most `max` trimmed cells. */
static size_t table_cells(const char *row, char cells[][128], size_t max) {
    size_t n = 0;
    const char *p = row;
    if (*p == '|') p++;
    while (*p && n < max) {
        const char *bar = strchr(p, '|');
        if (!bar) break;
        const char *a = p, *b = bar;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        snprintf(cells[n++], 128, "%.*s", (int)(b - a), a);
        p = bar + 1;
    }
    return n;
}

static const char *const kind_names[NX_OPK_COUNT] = {"none", "hbm", "sbuf", "psum", "imm", "pat"};

/* "sbuf, psum, imm" -> kind bit mask; -1 for an unknown word. */
static int parse_kinds(const char *text) {
    int mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
        int k = -1;
        for (int i = 1; i < NX_OPK_COUNT; i++)
            if (strcmp(tok, kind_names[i]) == 0) k = i;
        if (k < 0) return -1;
        mask |= (int)NX_KIND_BIT(k);
    }
    return mask;
}

static const char *access_text(uint8_t access) {
    return access == NX_ACCESS_RW ? "rw" : access == NX_ACCESS_WRITE ? "w" : "r";
}

static void check_operand_table(doc *d, const section *s, const nx_opcode_info *info) {
    const char *mn = info->mnemonic;
    unsigned slots = 0;
    for (unsigned k = 0; k < NX_MAX_OPERANDS; k++) slots += info->slot[k].name != NULL;
    size_t header = 0;
    for (size_t i = s->first + 1; i < s->end && !header; i++)
        if (!d->in_fence[i] && starts_with(d->line[i], "| slot |")) header = i;
    if (!slots) {
        if (header) problem(d, header, "'%s' has no operand slots but the section has an operand table", mn);
        int none = 0;
        for (size_t i = s->first + 1; i < s->end; i++)
            none |= !d->in_fence[i] && strcmp(d->line[i], "Operands: none.") == 0;
        if (!none) problem(d, s->first, "'%s' has no operands: say 'Operands: none.'", mn);
        return;
    }
    if (!header) {
        problem(d, s->first, "'%s': no operand table (a '| slot | access | kinds | required |' table)", mn);
        return;
    }
    char cells[8][128];
    size_t n = table_cells(d->line[header], cells, 8);
    if (n < 4 || strcmp(cells[1], "access") != 0 || strcmp(cells[2], "kinds") != 0 ||
        strcmp(cells[3], "required") != 0) {
        problem(d, header, "'%s': operand table columns must start slot | access | kinds | required", mn);
        return;
    }
    unsigned seen = 0; /* bit per slot index documented */
    size_t i = header + 2;  /* skip the |---| line */
    for (; i < s->end && d->line[i][0] == '|'; i++) {
        n = table_cells(d->line[i], cells, 8);
        char name[128];
        const char *c0 = cells[0];
        size_t l0 = strlen(c0);
        if (n < 4 || l0 < 3 || c0[0] != '`' || c0[l0 - 1] != '`') {
            problem(d, i, "'%s': operand row must start | `slot` | access | kinds | required |", mn);
            continue;
        }
        snprintf(name, sizeof name, "%.*s", (int)(l0 - 2), c0 + 1);
        int k = -1;
        for (unsigned j = 0; j < NX_MAX_OPERANDS; j++)
            if (info->slot[j].name && strcmp(info->slot[j].name, name) == 0) k = (int)j;
        if (k < 0) {
            problem(d, i, "'%s' has no slot '%s'", mn, name);
            continue;
        }
        if (seen & (1u << k)) problem(d, i, "'%s': slot '%s' listed twice", mn, name);
        seen |= 1u << k;
        const nx_slot_spec *spec = &info->slot[k];
        if (strcmp(cells[1], access_text(spec->access)) != 0)
            problem(d, i, "'%s' slot '%s': access '%s' should be '%s'", mn, name, cells[1],
                    access_text(spec->access));
        int kinds = parse_kinds(cells[2]);
        if (kinds != spec->kinds) {
            char want[64] = "";
            for (int j = 1; j < NX_OPK_COUNT; j++) {
                if (!(spec->kinds & NX_KIND_BIT(j))) continue;
                size_t used = strlen(want);
                snprintf(want + used, sizeof want - used, "%s%s", used ? ", " : "", kind_names[j]);
            }
            problem(d, i, "'%s' slot '%s': kinds '%s' should be '%s'", mn, name, cells[2], want);
        }
        const char *req = spec->required ? "required" : "optional";
        if (strcmp(cells[3], req) != 0)
            problem(d, i, "'%s' slot '%s': '%s' should be '%s'", mn, name, cells[3], req);
    }
    for (unsigned j = 0; j < NX_MAX_OPERANDS; j++)
        if (info->slot[j].name && !(seen & (1u << j)))
            problem(d, header, "'%s': slot '%s' missing from the operand table", mn, info->slot[j].name);
}

static void test_operand_tables(void **state) {
    doc *d = *state;
    d->problems = 0;
    for (unsigned op = 0; op < NX_OP_COUNT; op++) {
        const section *s = find_section(d, nx_opcode_table[op].mnemonic);
        if (!s) {
            problem(d, d->lines - 1, "no single section for '%s'", nx_opcode_table[op].mnemonic);
            continue;
        }
        check_operand_table(d, s, &nx_opcode_table[op]);
    }
    check_no_problems(d);
}

/* The paragraph starting with "Parameters:", joined into buf. */
static int parameters_paragraph(const doc *d, const section *s, char *buf, size_t len,
                                size_t *at) {
    for (size_t i = s->first + 1; i < s->end; i++) {
        if (d->in_fence[i] || !starts_with(d->line[i], "Parameters:")) continue;
        *at = i;
        buf[0] = '\0';
        for (size_t j = i; j < s->end && d->line[j][0]; j++) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s%s", used ? " " : "", d->line[j]);
        }
        return 0;
    }
    return -1;
}

static int mentions(const char *text, const char *name) {
    char token[64];
    snprintf(token, sizeof token, "`%s`", name);
    return strstr(text, token) != NULL;
}

typedef struct param_name {
    const char *name;
    int declared;
} param_name;

/* Declared parameters are named in backticks; undeclared ones are not. */
static void check_parameters(doc *d, const section *s, const nx_opcode_info *info) {
    const char *mn = info->mnemonic;
    char text[2048];
    size_t at = s->first;
    if (parameters_paragraph(d, s, text, sizeof text, &at) != 0) {
        problem(d, s->first, "'%s': no 'Parameters:' paragraph", mn);
        return;
    }
    int any = info->params || info->flags || info->iparam_name[0] || info->iparam_name[1];
    if (!any) {
        if (strcmp(text, "Parameters: none.") != 0)
            problem(d, at, "'%s' declares no parameters: write 'Parameters: none.'", mn);
        return;
    }
    param_name names[3 + NX_FLAG_BITS + 2 * NX_OP_COUNT];
    size_t n = 0;
    names[n++] = (param_name){"op0", (info->params & NX_PARAM_ALU0) != 0};
    names[n++] = (param_name){"op1", (info->params & NX_PARAM_ALU1) != 0};
    names[n++] = (param_name){"func", (info->params & NX_PARAM_FUNC) != 0};
    for (unsigned b = 0; b < NX_FLAG_BITS; b++)
        if (nx_flag_name(b)) names[n++] = (param_name){nx_flag_name(b), (info->flags >> b) & 1};
    /* every integer-parameter name of any row, declared only if this row's */
    for (unsigned op = 0; op < NX_OP_COUNT; op++)
        for (unsigned k = 0; k < 2; k++) {
            const char *ip = nx_opcode_table[op].iparam_name[k];
            if (!ip) continue;
            int declared = (info->iparam_name[0] && strcmp(info->iparam_name[0], ip) == 0) ||
                           (info->iparam_name[1] && strcmp(info->iparam_name[1], ip) == 0);
            names[n++] = (param_name){ip, declared};
        }
    for (size_t i = 0; i < n; i++) {
        int m = mentions(text, names[i].name);
        if (names[i].declared && !m)
            problem(d, at, "'%s': parameter `%s` is not documented in its Parameters paragraph", mn,
                    names[i].name);
        if (!names[i].declared && m)
            problem(d, at, "'%s' has no parameter `%s` but its Parameters paragraph names it", mn,
                    names[i].name);
    }
}

static void test_parameters(void **state) {
    doc *d = *state;
    d->problems = 0;
    for (unsigned op = 0; op < NX_OP_COUNT; op++) {
        const section *s = find_section(d, nx_opcode_table[op].mnemonic);
        if (!s) {
            problem(d, d->lines - 1, "no single section for '%s'", nx_opcode_table[op].mnemonic);
            continue;
        }
        check_parameters(d, s, &nx_opcode_table[op]);
    }
    check_no_problems(d);
}

static void test_sections_complete(void **state) {
    doc *d = *state;
    d->problems = 0;
    static const char *const parts[] = {"**Semantics.**", "**Validation.**", "**Example.**",
                                        "**Cost.**"};
    for (unsigned op = 0; op < NX_OP_COUNT; op++) {
        const section *s = find_section(d, nx_opcode_table[op].mnemonic);
        if (!s) {
            problem(d, d->lines - 1, "no single section for '%s'", nx_opcode_table[op].mnemonic);
            continue;
        }
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
            int found = 0;
            for (size_t i = s->first + 1; i < s->end && !found; i++)
                found = !d->in_fence[i] && starts_with(d->line[i], parts[k]);
            if (!found)
                problem(d, s->first, "'%s': no paragraph starting %s", nx_opcode_table[op].mnemonic,
                        parts[k]);
        }
    }
    check_no_problems(d);
}

/* The summary table of the chapter: `| N | [`mn`](#mn) | engines |`. */
static void test_summary_table(void **state) {
    doc *d = *state;
    d->problems = 0;
    for (unsigned op = 0; op < NX_OP_COUNT; op++) {
        const char *mn = nx_opcode_table[op].mnemonic;
        char engines[96], want[256];
        engines_text(nx_opcode_table[op].engines, engines, sizeof engines);
        snprintf(want, sizeof want, "| %u | [`%s`](#%s) | %s |", op, mn, mn, engines);
        int found = 0;
        for (size_t i = d->chapter_first; i < d->chapter_end && !found; i++)
            found = !d->in_fence[i] && starts_with(d->line[i], want);
        if (!found)
            problem(d, d->chapter_first, "summary table of '## Instructions' lacks a row starting '%s'",
                    want);
    }
    check_no_problems(d);
}

/* Assembles, validates (trn2) and runs one ```nxs block. Returns the mask
 * of opcodes it contains (bit per opcode), or 0 if it failed (reported). */
static uint64_t run_example(doc *d, size_t open, size_t close, const nx_geometry *geo) {
    size_t len = 0;
    for (size_t i = open + 1; i < close; i++) len += strlen(d->line[i]) + 1;
    char *text = malloc(len + 1);
    assert_non_null(text);
    text[0] = '\0';
    char *p = text;
    for (size_t i = open + 1; i < close; i++) {
        size_t n = strlen(d->line[i]);
        memcpy(p, d->line[i], n);
        p[n] = '\n';
        p += n + 1;
    }
    *p = '\0';
    nx_program prog;
    nx_error err;
    uint64_t ops = 0;
    /* messages read "example:LINE:COL: ..." with LINE counted in the block */
    if (nx_assemble("example", text, len, &prog, &err) != 0) {
        problem(d, open, "does not assemble: %s", err.msg);
        free(text);
        return 0;
    }
    free(text);
    nx_state st;
    if (nx_program_validate(&prog, geo, &err) != 0) {
        problem(d, open, "does not validate on trn2: %s", err.msg);
    } else if (nx_state_init(&st, geo, prog.cores, prog.hbm_bytes, prog.sem_count, &err) != 0) {
        problem(d, open, "state: %s", err.msg);
    } else {
        if (nx_exec_program(&prog, &st, &err) != 0) {
            problem(d, open, "does not run: %s", err.msg);
        } else {
            for (uint32_t c = 0; c < prog.cores; c++)
                for (unsigned e = 0; e < NX_ENG_COUNT; e++)
                    for (uint32_t i = 0; i < prog.stream[c][e].count; i++)
                        ops |= 1ull << prog.stream[c][e].recs[i].opcode;
        }
        nx_state_free(&st);
    }
    nx_program_free(&prog);
    return ops;
}

/* Every ```nxs block of the document works; every instruction section has
 * one that uses its instruction. */
static void test_examples_run(void **state) {
    doc *d = *state;
    d->problems = 0;
    nx_geometry geo = test_geometry("trn2");
    /* one bit per opcode in a uint64_t; grow the mask when the table does */
    assert_true(NX_OP_COUNT <= 64);
    uint64_t covered[MAX_SECTIONS] = {0};
    for (size_t i = 0; i < d->lines; i++) {
        if (strcmp(d->line[i], "```nxs") != 0) continue;
        size_t close = i + 1;
        while (close < d->lines && !starts_with(d->line[close], "```")) close++;
        if (close == d->lines) {
            problem(d, i, "unterminated ```nxs block");
            break;
        }
        uint64_t ops = run_example(d, i, close, &geo);
        for (size_t s = 0; s < d->sections; s++)
            if (d->sec[s].first < i && i < d->sec[s].end) covered[s] |= ops;
        i = close;
    }
    for (unsigned op = 0; op < NX_OP_COUNT; op++) {
        const char *mn = nx_opcode_table[op].mnemonic;
        const section *s = find_section(d, mn);
        if (!s) {
            problem(d, d->lines - 1, "no single section for '%s'", mn);
            continue;
        }
        if (!(covered[s - d->sec] & (1ull << op)))
            problem(d, s->first, "'%s': no working ```nxs example that uses %s", mn, mn);
    }
    check_no_problems(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_section_per_opcode),
        cmocka_unit_test(test_engines_and_opcode_lines),
        cmocka_unit_test(test_operand_tables),
        cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_sections_complete),
        cmocka_unit_test(test_summary_table),
        cmocka_unit_test(test_examples_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
