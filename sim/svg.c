/* See svg.h. */
#include "svg.h"

#include <math.h>

void nx_svg_text(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

double nx_svg_nice_step(double span, int ticks) {
    double raw = span / (ticks > 0 ? ticks : 1), p = pow(10, floor(log10(raw)));
    return raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
}
