/* What every SVG picture of the profiles draws with (the timeline,
 * sim/profile_timeline.c, and the line plots, sim/profile_plot.c): XML text
 * escaping and axis steps. */
#ifndef NXSIM_SIM_SVG_H
#define NXSIM_SIM_SVG_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes s to f as XML text: & < > " escaped. */
void nx_svg_text(FILE *f, const char *s);
/* A tick step for an axis spanning `span` (> 0) units: 1, 2 or 5 times a
 * power of ten, about span / ticks (ticks >= 1). */
double nx_svg_nice_step(double span, int ticks);

#ifdef __cplusplus
}
#endif

#endif
