/* Profiles (profile.h): the time of each region of a composite (its
 * sub-kernels, named by nx_kctx_set_region: the source locations' function
 * reads "REGION: func"). One pass over the log: a record's busy time and
 * its [start, end) go to its region; then each region's span (its first
 * start to its last end) beside the run's, and the overlap of the spans. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../isa/json_write.h"
#include "../isa/strbuf.h"
#include "log.h"
#include "profile.h"

#define REGIONS_MAX 32

typedef struct region_row {
    const char *name; /* into the program's srcs */
    size_t len;
    uint64_t instructions;
    double busy_ns[NX_ENG_COUNT + 1];
    double busy, first, last;
} region_row;

/* The region of a source location: the function's prefix before ": ". */
static int region_of(const nx_src_loc *s, size_t *len) {
    const char *c = s && s->func ? strstr(s->func, ": ") : NULL;
    if (!c) return 0;
    *len = (size_t)(c - s->func);
    return 1;
}

static int by_start(const void *pa, const void *pb) {
    const region_row *a = pa, *b = pb;
    return (a->first > b->first) - (a->first < b->first);
}

/* The regions of run r into rows[0 .. *n), in the order they first ran;
 * *t_end the run's last end. */
static void collect(const nx_program *prog, const nx_sim_result *r, region_row *rows, size_t *np, double *t_end_out) {
    size_t n = 0;
    double t_end = 0;
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        nx_insn scratch;
        if (!nx_sim_record_insn(prog, rec, &scratch)) continue;
        if (rec->t_end_ns > t_end) t_end = rec->t_end_ns;
        const nx_src_loc *src = nx_program_insn_src(prog, rec->core, (nx_engine)rec->engine, rec->index);
        size_t len;
        if (!region_of(src, &len)) continue;
        size_t j = 0;
        while (j < n && !(rows[j].len == len && strncmp(rows[j].name, src->func, len) == 0)) j++;
        if (j == n) {
            if (n == REGIONS_MAX) continue;
            memset(&rows[n], 0, sizeof rows[n]);
            rows[n].name = src->func, rows[n].len = len, rows[n].first = rec->t_start_ns;
            n++;
        }
        region_row *w = &rows[j];
        const double busy = rec->busy_ns > 0 ? rec->busy_ns : 0;
        w->instructions++;
        w->busy_ns[nx_sim_record_is_transfer(rec) ? NX_PROFILE_DMA : rec->engine] += busy;
        w->busy += busy;
        if (rec->t_start_ns < w->first) w->first = rec->t_start_ns;
        if (rec->t_end_ns > w->last) w->last = rec->t_end_ns;
    }
    qsort(rows, n, sizeof *rows, by_start);
    *np = n;
    *t_end_out = t_end;
}

int nx_profile_by_region(FILE *out, const nx_program *prog, const nx_sim_result *r, nx_error *err) {
    region_row rows[REGIONS_MAX];
    size_t n;
    double t_end;
    collect(prog, r, rows, &n, &t_end);
    if (n == 0) return 0;
    double spans = 0;
    fprintf(out, "\ntime by region (the composite's parts, in the order they first ran; span = first start to last "
                 "end)\n");
    fprintf(out, "  %-24s %8s %12s %7s %12s %12s %12s %12s %12s\n", "region", "instrs", "span ns", "span %", "from ns",
            "busy ns", "pe", "dve+act+pool", "dma");
    for (size_t j = 0; j < n; j++) {
        const region_row *w = &rows[j];
        const double span = w->last - w->first;
        spans += span;
        fprintf(out, "  %-24.*s %8" PRIu64 " %12.1f %6.1f%% %12.1f %12.1f %12.1f %12.1f %12.1f\n", (int)w->len, w->name,
                w->instructions, span, t_end > 0 ? 100.0 * span / t_end : 0.0, w->first, w->busy, w->busy_ns[NX_ENG_PE],
                w->busy_ns[NX_ENG_DVE] + w->busy_ns[NX_ENG_ACT] + w->busy_ns[NX_ENG_POOL], w->busy_ns[NX_PROFILE_DMA]);
    }
    fprintf(out, "  the spans sum to %.1f ns of the run's %.1f ns: %.1f ns %s\n", spans, t_end,
            spans > t_end ? spans - t_end : t_end - spans,
            spans > t_end ? "of overlap between regions" : "outside every region or between them");
    if (ferror(out)) return nx_fail(err, "time by region: write error");
    return 0;
}

char *nx_profile_by_region_json(const nx_program *prog, const nx_sim_result *r, nx_error *err) {
    region_row rows[REGIONS_MAX];
    size_t n;
    double t_end;
    collect(prog, r, rows, &n, &t_end);
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_putc(&b, '[');
    for (size_t j = 0; j < n; j++) {
        const region_row *w = &rows[j];
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(w->len < 63 ? w->len : 63), w->name);
        nx_sb_puts(&b, j ? ",\n {\"region\": " : "{\"region\": ");
        nx_json_string(&b, name);
        nx_sb_printf(&b, ", \"instructions\": %" PRIu64 ", \"start_ns\": ", w->instructions);
        nx_json_double(&b, w->first);
        nx_sb_puts(&b, ", \"span_ns\": ");
        nx_json_double(&b, w->last - w->first);
        nx_sb_puts(&b, ", \"share\": ");
        nx_json_double(&b, t_end > 0 ? (w->last - w->first) / t_end : 0.0);
        nx_sb_puts(&b, ", \"busy_ns\": ");
        nx_json_double(&b, w->busy);
        nx_sb_putc(&b, '}');
    }
    nx_sb_putc(&b, ']');
    char *text = nx_sb_take(&b);
    if (!text) nx_fail(err, "time by region: out of memory");
    return text;
}
