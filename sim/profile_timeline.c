/* Profiles (profile.h), the timeline: one self-contained SVG picture of a
 * run, drawn from the model's log.
 *
 * Per core a group of lanes: one per engine that ran instructions, then one
 * per DMA queue that ran transfers (the SP's lane shows the issues, the
 * queue lanes the transfers). An instruction is a block from its start to
 * its end, filled with its engine's hue in a shade per opcode (the legend
 * names each); the time it spent waiting on a semaphore or a barrier
 * before it started is a hatched block in front of it. The axis gives
 * microseconds and cycles of the engine clocks; each lane's label gives its
 * busy share of the run.
 *
 * Size stays bounded whatever the log: blocks narrower than MERGE_PX are
 * merged with their neighbours on the lane into spans of at most SPAN_PX
 * whose opacity is the busy fraction of the span, coloured by the opcode
 * that filled most of it, so a lane costs at most a few elements per pixel
 * column and a busy stretch still shows where it thins out.
 *
 * Every lane is a <g class="lane"> with data-core, data-lane, data-busy-pct
 * and data-blocks; blocks are <rect class="blk"> (or "wait"), so tests and
 * scripts can read the picture as XML (docs/parts/timeline.md). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../isa/fileio.h"
#include "../isa/opcodes.h"
#include "log.h"
#include "profile.h"
#include "svg.h"

#define PLOT_X 230.0      /* left edge of the plot (labels to its left) */
#define PLOT_W 1150.0     /* plot width, px */
#define RIGHT_PAD 24.0
#define TOP_Y 84.0        /* first lane's top (title and axis above) */
#define ENGINE_LANE_H 20.0
#define QUEUE_LANE_H 12.0
#define CORE_HEAD_H 22.0
#define MERGE_PX 1.5      /* blocks narrower than this merge with neighbours */
#define SPAN_PX 4.0       /* into spans at most this wide (opacity follows the busy density) */
#define NO_LANE UINT32_MAX

/* Hues of pe, dve, act, pool, sp, then the DMA queues. */
static const double engine_hue[NX_ENG_COUNT + 1] = {215, 145, 28, 280, 0, 180};

/* A record of a lane, with its sort key. */
typedef struct entry {
    double start;
    uint32_t index; /* in its stream */
    uint32_t id;    /* in the log */
} entry;

typedef struct lane {
    uint32_t core;
    int engine;       /* nx_engine, or -1 for a DMA queue */
    uint32_t queue;
    double busy_ns;
    struct entry *ids; /* its records, by start time */
    size_t n, cap;
    double y, h;
} lane;

typedef struct tl {
    const nx_machine *m;
    const nx_program *prog;
    const nx_sim_result *r;
    lane *lanes;
    size_t nlanes;
    double total_ns;
    double px_per_ns;
    /* legend: shade index per (colour column, opcode), in order of use */
    int shade[NX_ENG_COUNT + 1][256];
    int shades_used[NX_ENG_COUNT + 1];
    FILE *f;
} tl;

static int column_of(const nx_sim_record *rec) {
    return nx_sim_record_is_transfer(rec) ? NX_ENG_COUNT : rec->engine;
}

static const char *column_name(int c) { return c == NX_ENG_COUNT ? "dma" : nx_engine_name((nx_engine)c); }

/* The fill of shade k of column c: the hue, lightness stepping by opcode. */
static void fill_of(int c, int k, char *buf, size_t len) {
    static const double light[] = {48, 63, 36, 72, 56, 42, 68, 30};
    double l = light[k % (int)(sizeof light / sizeof light[0])];
    double sat = c == NX_ENG_SP ? 0 : 62;
    snprintf(buf, len, "hsl(%.0f,%.0f%%,%.0f%%)", engine_hue[c], sat, l);
}

static int shade_of(tl *t, const nx_sim_record *rec) {
    int c = column_of(rec);
    int *s = &t->shade[c][rec->opcode];
    if (*s < 0) *s = t->shades_used[c]++;
    return *s;
}

static double x_of(const tl *t, double ns) { return PLOT_X + ns * t->px_per_ns; }

static int lane_push(lane *L, const nx_sim_record *rec, uint32_t id) {
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 64;
        entry *grown = realloc(L->ids, cap * sizeof *grown);
        if (!grown) return -1;
        L->ids = grown;
        L->cap = cap;
    }
    L->ids[L->n++] = (entry){rec->t_start_ns, rec->index, id};
    return 0;
}

static int by_start(const void *pa, const void *pb) {
    const entry *a = pa, *b = pb;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* A stream's `end` takes no time and would only crowd the legend. */
static int drawn(const nx_sim_record *rec) {
    return !nx_sim_record_is_blank(rec) && rec->core < NX_MAX_CORES && rec->opcode != NX_OP_END;
}

/* Lanes in drawing order: per core its engines, then its active queues. */
static int build_lanes(tl *t) {
    const nx_sim_result *r = t->r;
    uint32_t queues = nx_geometry_dma_queues(&t->m->geo);
    uint32_t per_core = NX_ENG_COUNT + queues;
    uint32_t *slot = malloc((size_t)NX_MAX_CORES * per_core * sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < (size_t)NX_MAX_CORES * per_core; i++) slot[i] = NO_LANE;
    /* which tracks are used, then lanes in order */
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (!drawn(rec)) continue;
        uint32_t k = nx_sim_record_is_transfer(rec) ? NX_ENG_COUNT + (uint32_t)rec->queue : rec->engine;
        slot[(size_t)rec->core * per_core + k] = 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < (size_t)NX_MAX_CORES * per_core; i++) n += slot[i] == 0;
    t->lanes = calloc(n ? n : 1, sizeof *t->lanes);
    if (!t->lanes) {
        free(slot);
        return -1;
    }
    for (uint32_t c = 0; c < NX_MAX_CORES; c++)
        for (uint32_t k = 0; k < per_core; k++) {
            uint32_t *s = &slot[(size_t)c * per_core + k];
            if (*s != 0) continue;
            lane *L = &t->lanes[t->nlanes];
            L->core = c;
            L->engine = k < NX_ENG_COUNT ? (int)k : -1;
            L->queue = k < NX_ENG_COUNT ? 0 : k - NX_ENG_COUNT;
            if (L->engine >= 0) L->busy_ns = r->engine[c][k].busy_ns;
            *s = (uint32_t)t->nlanes++;
        }
    int status = 0;
    for (size_t i = 0; i < r->log_count && status == 0; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (!drawn(rec)) continue;
        uint32_t k = nx_sim_record_is_transfer(rec) ? NX_ENG_COUNT + (uint32_t)rec->queue : rec->engine;
        lane *L = &t->lanes[slot[(size_t)rec->core * per_core + k]];
        if (L->engine < 0) L->busy_ns += rec->busy_ns > 0 ? rec->busy_ns : 0;
        status = lane_push(L, rec, (uint32_t)i);
    }
    free(slot);
    for (size_t l = 0; l < t->nlanes && status == 0; l++)
        qsort(t->lanes[l].ids, t->lanes[l].n, sizeof *t->lanes[l].ids, by_start);
    return status;
}

static void lanes_free(tl *t) {
    for (size_t l = 0; l < t->nlanes; l++) free(t->lanes[l].ids);
    free(t->lanes);
}

static double place_lanes(tl *t) {
    double y = TOP_Y;
    uint32_t core = UINT32_MAX;
    for (size_t l = 0; l < t->nlanes; l++) {
        lane *L = &t->lanes[l];
        if (L->core != core) {
            core = L->core;
            y += CORE_HEAD_H;
        }
        L->h = L->engine >= 0 ? ENGINE_LANE_H : QUEUE_LANE_H;
        L->y = y;
        y += L->h + 2;
    }
    return y;
}

static void format_cycles(char *buf, size_t len, double cycles) {
    if (cycles >= 1e6) snprintf(buf, len, "%.4gM", cycles / 1e6);
    else if (cycles >= 1e4) snprintf(buf, len, "%.4gk", cycles / 1e3);
    else snprintf(buf, len, "%.0f", cycles);
}

static void write_axis(tl *t, double bottom) {
    FILE *f = t->f;
    double step = nx_svg_nice_step(t->total_ns, 8);
    double ghz = t->m->clock_ghz[NX_ENG_PE];
    fprintf(f, "<g class=\"axis\" font-size=\"11\" fill=\"#333\">\n");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">us</text>\n", PLOT_X - 8, TOP_Y - 26);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">cycles</text>\n", PLOT_X - 8, TOP_Y - 12);
    for (double v = 0; v <= t->total_ns * 1.0000001; v += step) {
        double x = x_of(t, v);
        char cyc[32];
        format_cycles(cyc, sizeof cyc, v * ghz);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, TOP_Y - 6, x,
                bottom);
        fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, TOP_Y - 26, v / 1000);
        fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#777\">%s</text>\n", x, TOP_Y - 12,
                cyc);
    }
    fprintf(f, "<line class=\"end\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#c33\" "
               "stroke-dasharray=\"3,3\"/>\n",
            x_of(t, t->total_ns), TOP_Y - 6, x_of(t, t->total_ns), bottom);
    fprintf(f, "</g>\n");
}

/* One block: an instruction, or a merged span of several. */
typedef struct span {
    double s, e, busy;
    uint32_t count, first;
    double by_shade[8];
    int shade_of_first;
} span;

static void write_span(tl *t, const lane *L, const span *sp) {
    FILE *f = t->f;
    int c = L->engine >= 0 ? L->engine : NX_ENG_COUNT;
    const nx_sim_record *rec = &t->r->log[sp->first];
    int k = sp->shade_of_first;
    if (sp->count > 1) { /* the shade that filled most of the span */
        double best = -1;
        for (int j = 0; j < 8; j++)
            if (sp->by_shade[j] > best) best = sp->by_shade[j], k = j;
    }
    char fill[48];
    fill_of(c, k, fill, sizeof fill);
    double x = x_of(t, sp->s), w = (sp->e - sp->s) * t->px_per_ns;
    if (w < 0.6) w = 0.6;
    double opacity = 1.0;
    if (sp->count > 1 && sp->e > sp->s) {
        opacity = sp->busy / (sp->e - sp->s);
        if (opacity > 1) opacity = 1;
        if (opacity < 0.3) opacity = 0.3;
    }
    fprintf(f, "<rect class=\"blk\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"", x, L->y + 1, w,
            L->h - 2, fill);
    if (opacity < 1) fprintf(f, " fill-opacity=\"%.2f\"", opacity);
    if (w >= 3) fputs(" stroke=\"#fff\" stroke-width=\"0.4\"", f); /* back-to-back blocks stay apart */
    fputs("><title>", f);
    if (sp->count == 1) {
        char where[64];
        nx_sim_record_where(where, sizeof where, rec);
        nx_svg_text(f, where);
        fprintf(f, ": %.1f-%.1f ns", rec->t_start_ns, rec->t_end_ns);
        const nx_src_loc *src = nx_program_insn_src(t->prog, rec->core, (nx_engine)rec->engine, rec->index);
        if (src) {
            fputs(", ", f);
            nx_svg_text(f, src->file);
            fprintf(f, ":%u (", src->line);
            nx_svg_text(f, src->func);
            fputc(')', f);
        }
    } else {
        fprintf(f, "%u instructions, %.1f-%.1f ns, %.0f%% busy", sp->count, sp->s, sp->e, 100 * opacity);
    }
    fputs("</title></rect>\n", f);
}

static void write_wait(tl *t, const lane *L, double s, double e) {
    double w = (e - s) * t->px_per_ns;
    if (w < 0.5) return;
    fprintf(t->f,
            "<rect class=\"wait\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"url(#hatch)\"/>\n",
            x_of(t, s), L->y + 1, w, L->h - 2);
}

static size_t write_lane(tl *t, const lane *L) {
    FILE *f = t->f;
    const nx_sim_record *log = t->r->log;
    char name[64];
    if (L->engine >= 0)
        snprintf(name, sizeof name, "%s", nx_engine_name((nx_engine)L->engine));
    else
        snprintf(name, sizeof name, "dma q%u", L->queue);
    double run_ns = t->r->total_ns > 0 ? t->r->total_ns : t->total_ns; /* as the summary's busy % */
    double pct = 100 * L->busy_ns / run_ns;
    fprintf(f, "<g class=\"lane\" data-core=\"%u\" data-lane=\"%s\" data-busy-pct=\"%.2f\" data-blocks=\"%zu\">\n",
            L->core, name, pct, L->n);
    fprintf(f, "<rect class=\"bg\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", PLOT_X, L->y,
            PLOT_W, L->h, L->engine >= 0 ? "#f4f4f6" : "#f8f8f8");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"end\">", PLOT_X - 58,
            L->y + L->h / 2 + (L->engine >= 0 ? 4 : 3.5), L->engine >= 0 ? 12 : 10);
    if (L->engine >= 0) {
        nx_svg_text(f, name);
    } else {
        fprintf(f, "%s (engine %u.%u)", name, nx_dma_queue_engine(&t->m->geo, L->queue),
                nx_dma_queue_slot(&t->m->geo, L->queue));
    }
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"end\" fill=\"#555\">%.1f%%</text>\n",
            PLOT_X - 8, L->y + L->h / 2 + (L->engine >= 0 ? 4 : 3.5), L->engine >= 0 ? 11 : 9, pct);
    /* waits first (behind the blocks), then the blocks with merging */
    double prev_end = 0;
    for (size_t i = 0; i < L->n; i++) {
        const nx_sim_record *rec = &log[L->ids[i].id];
        double from = rec->t_ready_ns > prev_end ? rec->t_ready_ns : prev_end;
        if (rec->waited && rec->t_start_ns > from) write_wait(t, L, from, rec->t_start_ns);
        if (rec->t_end_ns > prev_end) prev_end = rec->t_end_ns;
    }
    span sp = {0};
    int open = 0;
    size_t drawn = 0;
    for (size_t i = 0; i < L->n; i++) {
        const nx_sim_record *rec = &log[L->ids[i].id];
        double s = rec->t_start_ns, e = rec->t_end_ns > s ? rec->t_end_ns : s;
        int k = shade_of(t, rec);
        double busy = rec->busy_ns > 0 ? rec->busy_ns : e - s;
        int narrow = (e - s) * t->px_per_ns < MERGE_PX;
        if (open && narrow && (s - sp.e) * t->px_per_ns < MERGE_PX && (e - sp.s) * t->px_per_ns <= SPAN_PX &&
            (sp.count > 1 || (sp.e - sp.s) * t->px_per_ns < MERGE_PX)) {
            if (e > sp.e) sp.e = e;
            sp.busy += busy;
            sp.count++;
            sp.by_shade[k % 8] += busy;
            continue;
        }
        if (open) {
            write_span(t, L, &sp);
            drawn++;
        }
        memset(&sp, 0, sizeof sp);
        sp.s = s;
        sp.e = e;
        sp.busy = busy;
        sp.count = 1;
        sp.first = L->ids[i].id;
        sp.shade_of_first = k;
        sp.by_shade[k % 8] = busy;
        open = 1;
    }
    if (open) {
        write_span(t, L, &sp);
        drawn++;
    }
    fputs("</g>\n", f);
    return drawn;
}

/* Draws the legend from y (f NULL: only measures it); returns its bottom. */
static double write_legend(tl *t, FILE *f, double y) {
    if (f) fprintf(f, "<g class=\"legend\" font-size=\"11\">\n");
    double x = PLOT_X;
    y += 14;
    for (int c = 0; c <= NX_ENG_COUNT; c++)
        for (int op = 0; op < 256; op++) {
            int k = t->shade[c][op];
            if (k < 0) continue;
            char fill[48], label[64];
            fill_of(c, k, fill, sizeof fill);
            snprintf(label, sizeof label, "%s %s", column_name(c), nx_opcode_mnemonic((nx_opcode)op));
            double w = 22 + 6.6 * (double)strlen(label);
            if (x + w > PLOT_X + PLOT_W) {
                x = PLOT_X;
                y += 18;
            }
            if (f) {
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"11\" fill=\"%s\"/>", x, y - 10, fill);
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 18, y, label);
            }
            x += w + 12;
        }
    double w = 22 + 6.6 * 26;
    if (x + w > PLOT_X + PLOT_W) {
        x = PLOT_X;
        y += 18;
    }
    if (f) {
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"11\" fill=\"url(#hatch)\" stroke=\"#999\"/>",
                x, y - 10);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">waiting on a semaphore or barrier</text>\n", x + 18, y);
        fprintf(f, "</g>\n");
    }
    return y + 12;
}

static int write_svg(tl *t) {
    FILE *f = t->f;
    double lanes_bottom = place_lanes(t);
    double width = PLOT_X + PLOT_W + RIGHT_PAD;
    /* pre-assign shades in lane order so the legend follows the picture */
    for (size_t l = 0; l < t->nlanes; l++)
        for (size_t i = 0; i < t->lanes[l].n; i++) shade_of(t, &t->r->log[t->lanes[l].ids[i].id]);
    double height = write_legend(t, NULL, lanes_bottom + 6) + 10;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
               "data-total-ns=\"%.3f\" data-plot-x=\"%.1f\" data-plot-width=\"%.1f\">\n",
            width, height, width, height, t->total_ns, PLOT_X, PLOT_W);
    fprintf(f, "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fff4d6\"/>"
               "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d08a00\" stroke-width=\"2.2\"/></pattern></defs>\n");
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    char machine[sizeof t->prog->machine + 1];
    memcpy(machine, t->prog->machine, sizeof t->prog->machine);
    machine[sizeof t->prog->machine] = '\0';
    fprintf(f, "<text x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">nxsim timeline: ");
    nx_svg_text(f, machine[0] ? machine : t->m->geo.name);
    fprintf(f, ", %u core%s, %.3f us simulated, %" PRIu64 " instructions</text>\n", t->prog->cores,
            t->prog->cores == 1 ? "" : "s", t->total_ns / 1000, t->r->instructions);
    fprintf(f, "<text x=\"16\" y=\"42\" font-size=\"11\" fill=\"#555\">axis: microseconds, and cycles of the "
               "%g GHz PE clock", t->m->clock_ghz[NX_ENG_PE]);
    for (unsigned e = 1; e < NX_ENG_COUNT; e++)
        if (t->m->clock_ghz[e] != t->m->clock_ghz[NX_ENG_PE]) {
            fprintf(f, " (other clocks:");
            for (unsigned k = 1; k < NX_ENG_COUNT; k++)
                fprintf(f, " %s %g GHz", nx_engine_name((nx_engine)k), t->m->clock_ghz[k]);
            fputc(')', f);
            break;
        }
    fprintf(f, "; right of each lane's name: its busy share of the run</text>\n");
    write_axis(t, lanes_bottom);
    uint32_t core = UINT32_MAX;
    for (size_t l = 0; l < t->nlanes; l++) {
        const lane *L = &t->lanes[l];
        if (L->core != core) {
            if (core != UINT32_MAX) fputs("</g>\n", f);
            core = L->core;
            fprintf(f, "<g class=\"core\" data-core=\"%u\">\n", core);
            fprintf(f, "<text x=\"16\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">core %u</text>\n",
                    L->y - 7, core);
            fprintf(f, "<line x1=\"16\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\"/>\n", L->y - 3,
                    PLOT_X + PLOT_W, L->y - 3);
        }
        write_lane(t, L);
    }
    if (core != UINT32_MAX) fputs("</g>\n", f);
    write_legend(t, f, lanes_bottom + 6);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}

int nx_profile_write_timeline_to(FILE *f, const char *path, const nx_machine *m, const nx_program *prog,
                                 const nx_sim_result *r, nx_error *err) {
    if (!r->log && (r->log_count > 0 || r->instructions > 0))
        return nx_fail(err, "timeline %s: the run kept no log (run with keep_log = 1)", path);
    if (r->log_count >= NO_LANE) return nx_fail(err, "timeline %s: %zu records is too many", path, r->log_count);
    nx_error lerr;
    if (nx_sim_log_check(prog, r->log, r->log_count, nx_geometry_dma_queues(&m->geo), &lerr) != 0)
        return nx_fail(err, "timeline %s: %s", path, lerr.msg);
    tl *t = calloc(1, sizeof *t);
    if (!t) return nx_fail(err, "timeline %s: out of memory", path);
    t->m = m;
    t->prog = prog;
    t->r = r;
    memset(t->shade, 0xff, sizeof t->shade);
    t->total_ns = r->total_ns > 0 ? r->total_ns : 1;
    for (size_t i = 0; i < r->log_count; i++) /* a transfer may end after the last engine */
        if (!nx_sim_record_is_blank(&r->log[i]) && r->log[i].t_end_ns > t->total_ns) t->total_ns = r->log[i].t_end_ns;
    t->px_per_ns = PLOT_W / t->total_ns;
    int status = -1;
    if (build_lanes(t) != 0) {
        nx_fail(err, "timeline %s: out of memory", path);
    } else {
        t->f = f;
        errno = 0;
        if (write_svg(t) != 0) {
            int e = errno;
            nx_fail(err, "timeline %s: cannot write: %s", path, strerror(e ? e : EIO));
        } else {
            status = 0;
        }
    }
    lanes_free(t);
    free(t);
    return status;
}

int nx_profile_write_timeline(const char *path, const nx_machine *m, const nx_program *prog,
                              const nx_sim_result *r, nx_error *err) {
    nx_atomic_file af;
    nx_error ferr;
    if (nx_atomic_open(&af, path, &ferr) != 0) return nx_fail(err, "timeline %s", ferr.msg);
    if (nx_profile_write_timeline_to(af.f, path, m, prog, r, err) != 0) {
        nx_atomic_abort(&af);
        return -1;
    }
    if (nx_atomic_commit(&af, &ferr) != 0) return nx_fail(err, "timeline %s", ferr.msg);
    return 0;
}
