/* Source locations of a program's instructions (isa/program.h): a table of
 * distinct (file, line, function) triples and, per stream, a column that
 * names each instruction's entry. Kept beside the instructions, never in
 * the instruction word: the encoding, the container and every backend are
 * untouched, and a program without locations costs nothing. */
#include <stdlib.h>
#include <string.h>

#include "program.h"

/* This file's own __FILE__ tells how the build spells paths of the tree:
 * "<root>isa/program_src.c". */
static const char self_path[] = __FILE__;
static const char self_tail[] = "isa/program_src.c";

const char *nx_src_display_path(const char *file) {
    if (!file) return "";
    size_t self_len = sizeof self_path - 1, tail_len = sizeof self_tail - 1;
    if (self_len >= tail_len && strcmp(self_path + self_len - tail_len, self_tail) == 0) {
        size_t root = self_len - tail_len;
        if (root > 0 && strncmp(file, self_path, root) == 0) file += root;
    }
    for (;;) {
        if (strncmp(file, "../", 3) == 0) file += 3;
        else if (strncmp(file, "./", 2) == 0) file += 2;
        else return file;
    }
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int nx_program_src_intern(nx_program *p, const char *file, uint32_t line, const char *func,
                          uint32_t *index_out, nx_error *err) {
    file = nx_src_display_path(file);
    if (!func) func = "";
    for (uint32_t i = p->src_count; i-- > 0;) {
        const nx_src_loc *s = &p->srcs[i];
        if (s->line == line && strcmp(s->file, file) == 0 && strcmp(s->func, func) == 0) {
            *index_out = i;
            return 0;
        }
    }
    if (p->src_count == p->src_capacity) {
        uint32_t cap = p->src_capacity ? p->src_capacity * 2 : 16;
        nx_src_loc *grown = realloc(p->srcs, (size_t)cap * sizeof *grown);
        if (!grown) return nx_fail(err, "program: out of memory for source locations");
        p->srcs = grown;
        p->src_capacity = cap;
    }
    nx_src_loc loc = {dup_str(file), dup_str(func), line};
    if (!loc.file || !loc.func) {
        free(loc.file);
        free(loc.func);
        return nx_fail(err, "program: out of memory for source locations");
    }
    p->srcs[p->src_count] = loc;
    *index_out = p->src_count++;
    return 0;
}

int nx_program_set_src(nx_program *p, uint32_t core, nx_engine engine, uint32_t index, uint32_t src,
                       nx_error *err) {
    if (core >= NX_MAX_CORES || (unsigned)engine >= NX_ENG_COUNT || src >= p->src_count)
        return nx_fail(err, "program: no instruction or source location to link");
    nx_stream *s = &p->stream[core][engine];
    if (index >= s->count) return nx_fail(err, "program: no instruction %u to link", index);
    if (!s->src) {
        s->src = calloc(s->capacity ? s->capacity : 1, sizeof *s->src);
        if (!s->src) return nx_fail(err, "program: out of memory for source locations");
    }
    s->src[index] = src + 1;
    return 0;
}

const nx_src_loc *nx_program_insn_src(const nx_program *p, uint32_t core, nx_engine engine,
                                      uint32_t index) {
    if (core >= NX_MAX_CORES || (unsigned)engine >= NX_ENG_COUNT) return NULL;
    const nx_stream *s = &p->stream[core][engine];
    if (!s->src || index >= s->count || s->src[index] == 0 || s->src[index] > p->src_count) return NULL;
    return &p->srcs[s->src[index] - 1];
}
