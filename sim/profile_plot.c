/* Profiles (profile.h), line plots: a handful of series over evenly spaced
 * steps, drawn as one SVG. Written for the scaling bench (host time per unit
 * of work at four sizes, docs/parts/bench.md), kept general: nothing here
 * knows what the values mean. */
#include <math.h>
#include <stdio.h>

#include "../isa/fileio.h"
#include "profile.h"
#include "svg.h"

#define PLOT_X 90.0   /* left edge of the plot area (y labels to its left) */
#define PLOT_Y 70.0   /* top of the plot area (title above) */
#define PLOT_W 640.0
#define PLOT_H 320.0
#define LEGEND_LINE 18.0
#define MAX_SERIES 8

/* Distinct hues that read on white and in grey print. */
static const char *const colour[MAX_SERIES] = {"#1f6fb4", "#d9480f", "#2b8a3e", "#862e9c",
                                               "#c92a2a", "#0b7285", "#5c940d", "#495057"};

static int check(const char *path, const nx_plot *p, size_t *steps, double *ymax, nx_error *err) {
    if (p->n_series < 1 || p->n_series > MAX_SERIES)
        return nx_fail(err, "plot %s: %zu series (1 to %d)", path, p->n_series, MAX_SERIES);
    *steps = 0;
    *ymax = p->band_lo < p->band_hi ? p->band_hi : 0;
    for (size_t s = 0; s < p->n_series; s++) {
        const nx_plot_series *S = &p->series[s];
        if (S->n < 1 || S->n > NX_PLOT_MAX_STEPS)
            return nx_fail(err, "plot %s: series %zu has %zu points (1 to %d)", path, s, S->n, NX_PLOT_MAX_STEPS);
        for (size_t i = 0; i < S->n; i++) {
            if (!isfinite(S->y[i]) || S->y[i] < 0)
                return nx_fail(err, "plot %s: series %zu point %zu is %g (finite, >= 0 expected)", path, s, i,
                               S->y[i]);
            if (S->y[i] > *ymax) *ymax = S->y[i];
        }
        if (S->n > *steps) *steps = S->n;
    }
    if (*ymax <= 0) *ymax = 1;
    return 0;
}

static double x_of(size_t step, size_t steps) {
    return steps == 1 ? PLOT_X + PLOT_W / 2 : PLOT_X + 30 + (PLOT_W - 60) * (double)step / (double)(steps - 1);
}

static void write_plot(FILE *f, const nx_plot *p, size_t steps, double ymax) {
    double tick = nx_svg_nice_step(ymax * 1.08, 6);
    double ytop = ceil(ymax * 1.08 / tick) * tick;
    double legend_h = (double)p->n_series * LEGEND_LINE;
    double width = PLOT_X + PLOT_W + 30, height = PLOT_Y + PLOT_H + 60 + legend_h;
#define Y_OF(v) (PLOT_Y + PLOT_H - PLOT_H * (v) / ytop)
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" data-steps=\"%zu\" data-y-top=\"%g\">\n",
            width, height, width, height, steps, ytop);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    fprintf(f, "<text x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">");
    nx_svg_text(f, p->title ? p->title : "");
    fprintf(f, "</text>\n");
    if (p->subtitle) {
        fprintf(f, "<text x=\"16\" y=\"42\" font-size=\"11\" fill=\"#555\">");
        nx_svg_text(f, p->subtitle);
        fprintf(f, "</text>\n");
    }
    if (p->band_lo < p->band_hi)
        fprintf(f, "<rect class=\"band\" x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"#d3f9d8\" "
                   "data-lo=\"%g\" data-hi=\"%g\"/>\n",
                PLOT_X, Y_OF(p->band_hi), PLOT_W, Y_OF(p->band_lo) - Y_OF(p->band_hi), p->band_lo, p->band_hi);
    fprintf(f, "<g class=\"axis\" font-size=\"11\" fill=\"#333\">\n");
    for (double v = 0; v <= ytop * 1.0000001; v += tick) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#ddd\"/>\n", PLOT_X, Y_OF(v),
                PLOT_X + PLOT_W, Y_OF(v));
        fprintf(f, "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\">%g</text>\n", PLOT_X - 6, Y_OF(v) + 4, v);
    }
    for (size_t i = 0; i < steps; i++)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%zu</text>\n", x_of(i, steps),
                PLOT_Y + PLOT_H + 16, i + 1);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n", PLOT_X,
            PLOT_Y, PLOT_W, PLOT_H);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", PLOT_X + PLOT_W / 2, PLOT_Y + PLOT_H + 34);
    nx_svg_text(f, p->x_label ? p->x_label : "step");
    fprintf(f, "</text>\n<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" text-anchor=\"middle\">",
            PLOT_Y + PLOT_H / 2, PLOT_Y + PLOT_H / 2);
    nx_svg_text(f, p->y_label ? p->y_label : "");
    fprintf(f, "</text>\n</g>\n");
    for (size_t s = 0; s < p->n_series; s++) {
        const nx_plot_series *S = &p->series[s];
        fprintf(f, "<g class=\"series\" data-series=\"%zu\" stroke=\"%s\" fill=\"%s\">\n<polyline fill=\"none\" "
                   "stroke-width=\"2\" points=\"",
                s, colour[s], colour[s]);
        for (size_t i = 0; i < S->n; i++)
            fprintf(f, "%s%.1f,%.2f", i ? " " : "", x_of(i, steps), Y_OF(S->y[i]));
        fprintf(f, "\"/>\n");
        for (size_t i = 0; i < S->n; i++)
            fprintf(f, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.2f\" r=\"3.5\" data-series=\"%zu\" data-step=\"%zu\" "
                       "data-value=\"%.6g\"/>\n",
                    x_of(i, steps), Y_OF(S->y[i]), s, i, S->y[i]);
        double ly = PLOT_Y + PLOT_H + 56 + (double)s * LEGEND_LINE;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"4\" stroke=\"none\"/>\n", PLOT_X, ly - 6);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" stroke=\"none\" fill=\"#222\">", PLOT_X + 20, ly);
        nx_svg_text(f, S->name ? S->name : "");
        fprintf(f, "</text>\n</g>\n");
    }
#undef Y_OF
    fputs("</svg>\n", f);
}

int nx_profile_write_plot(const char *path, const nx_plot *p, nx_error *err) {
    size_t steps = 0;
    double ymax = 1;
    if (check(path, p, &steps, &ymax, err) != 0) return -1;
    nx_atomic_file af;
    nx_error ferr;
    if (nx_atomic_open(&af, path, &ferr) != 0) return nx_fail(err, "plot %s", ferr.msg);
    write_plot(af.f, p, steps, ymax);
    if (ferror(af.f)) {
        nx_atomic_abort(&af);
        return nx_fail(err, "plot %s: write error", path);
    }
    if (nx_atomic_commit(&af, &ferr) != 0) return nx_fail(err, "plot %s", ferr.msg);
    return 0;
}
