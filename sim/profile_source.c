/* Profiles (profile.h): busy time grouped by the source line that emitted
 * each instruction. One pass over the log: a record's busy time goes to the
 * row of its instruction's source location (a small table indexed by the
 * program's location index), then the rows are sorted. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../isa/json_write.h"
#include "../isa/strbuf.h"
#include "log.h"
#include "profile.h"

static int row_cmp(const void *pa, const void *pb) {
    const nx_profile_source_row *a = pa, *b = pb;
    if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
    if (!a->src || !b->src) return (a->src == NULL) - (b->src == NULL); /* unknown last */
    int c = strcmp(a->src->file, b->src->file);
    if (c) return c;
    return (a->src->line > b->src->line) - (a->src->line < b->src->line);
}

int nx_profile_source_rows(const nx_program *prog, const nx_sim_result *r, nx_profile_source_row **rows,
                           size_t *n, double *all_ns, nx_error *err) {
    *rows = NULL;
    *n = 0;
    *all_ns = 0;
    if (!r->log && (r->log_count > 0 || r->instructions > 0))
        return nx_fail(err, "busy time by source: the run kept no log (run with keep_log = 1)");
    /* slot 0: no location; slot 1 + i: prog->srcs[i] */
    size_t slots = (size_t)prog->src_count + 1;
    nx_profile_source_row *t = calloc(slots, sizeof *t);
    if (!t) return nx_fail(err, "busy time by source: out of memory");
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        nx_insn scratch;
        if (!nx_sim_record_insn(prog, rec, &scratch)) continue; /* blank, or not of this program */
        const nx_src_loc *src = nx_program_insn_src(prog, rec->core, (nx_engine)rec->engine, rec->index);
        nx_profile_source_row *row = &t[src ? (size_t)(src - prog->srcs) + 1 : 0];
        row->src = src;
        row->instructions++;
        double busy = rec->busy_ns > 0 ? rec->busy_ns : 0;
        row->busy_ns[nx_sim_record_is_transfer(rec) ? NX_PROFILE_DMA : rec->engine] += busy;
        row->total_ns += busy;
        *all_ns += busy;
    }
    size_t used = 0;
    for (size_t s = 0; s < slots; s++)
        if (t[s].instructions) t[used++] = t[s];
    qsort(t, used, sizeof *t, row_cmp);
    *rows = t;
    *n = used;
    return 0;
}

static const char *column_name(unsigned c) { return c == NX_PROFILE_DMA ? "dma" : nx_engine_name((nx_engine)c); }

static double share(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

int nx_profile_by_source(FILE *out, const nx_program *prog, const nx_sim_result *r, size_t max_rows,
                         nx_error *err) {
    nx_profile_source_row *rows;
    size_t n;
    double all;
    if (nx_profile_source_rows(prog, r, &rows, &n, &all, err) != 0) return -1;
    fprintf(out, "\nbusy time by source line (every engine and DMA queue; %zu line%s, %.3f ns busy in all)\n", n,
            n == 1 ? "" : "s", all);
    fprintf(out, "  %6s %12s %8s", "share", "busy ns", "instrs");
    for (unsigned c = 0; c <= NX_PROFILE_DMA; c++) fprintf(out, " %10s", column_name(c));
    fprintf(out, "  source\n");
    size_t shown = max_rows && max_rows < n ? max_rows : n;
    for (size_t i = 0; i < shown; i++) {
        const nx_profile_source_row *row = &rows[i];
        fprintf(out, "  %5.1f%% %12.1f %8" PRIu64, share(row->total_ns, all), row->total_ns, row->instructions);
        for (unsigned c = 0; c <= NX_PROFILE_DMA; c++) fprintf(out, " %10.1f", row->busy_ns[c]);
        if (row->src)
            fprintf(out, "  %s:%u (%s)\n", row->src->file, row->src->line, row->src->func);
        else
            fprintf(out, "  (no source location: not emitted through kernels/author/author.h)\n");
    }
    if (shown < n) {
        double rest = 0;
        uint64_t instrs = 0;
        for (size_t i = shown; i < n; i++) {
            rest += rows[i].total_ns;
            instrs += rows[i].instructions;
        }
        fprintf(out, "  %5.1f%% %12.1f %8" PRIu64 "  ... %zu more lines\n", share(rest, all), rest, instrs, n - shown);
    }
    free(rows);
    if (ferror(out)) return nx_fail(err, "busy time by source: write error");
    return 0;
}

char *nx_profile_by_source_json(const nx_program *prog, const nx_sim_result *r, nx_error *err) {
    nx_profile_source_row *rows;
    size_t n;
    double all;
    if (nx_profile_source_rows(prog, r, &rows, &n, &all, err) != 0) return NULL;
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_putc(&b, '[');
    for (size_t i = 0; i < n; i++) {
        const nx_profile_source_row *row = &rows[i];
        nx_sb_puts(&b, i ? ",\n {\"file\": " : "{\"file\": ");
        if (row->src) {
            nx_json_string(&b, row->src->file);
            nx_sb_printf(&b, ", \"line\": %u, \"function\": ", row->src->line);
            nx_json_string(&b, row->src->func);
        } else {
            nx_sb_puts(&b, "null, \"line\": null, \"function\": null");
        }
        nx_sb_printf(&b, ", \"instructions\": %" PRIu64 ", \"busy_ns\": ", row->instructions);
        nx_json_double(&b, row->total_ns);
        nx_sb_puts(&b, ", \"share\": ");
        nx_json_double(&b, all > 0 ? row->total_ns / all : 0.0);
        nx_sb_puts(&b, ", \"engines_busy_ns\": {");
        for (unsigned c = 0; c <= NX_PROFILE_DMA; c++) {
            nx_sb_printf(&b, "%s\"%s\": ", c ? ", " : "", column_name(c));
            nx_json_double(&b, row->busy_ns[c]);
        }
        nx_sb_puts(&b, "}}");
    }
    nx_sb_putc(&b, ']');
    free(rows);
    char *text = nx_sb_take(&b);
    if (!text) nx_fail(err, "busy time by source: out of memory");
    return text;
}
