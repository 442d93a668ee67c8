/* Writing JSON text into an nx_strbuf: the one JSON number and string
 * policy of nxsim, used by every JSON writer (macro-op documents, the
 * `nxsim run --json` report, profile summaries).
 *
 * Numbers: a double is written in the shortest form that reads back to the
 * same double, as Python's repr writes it (fixed notation for decimal
 * exponents in [-4, 16), always with a '.' or an exponent: 2.0, 0.1, 1e+20).
 * JSON (RFC 8259) has no NaN or infinity: a non-finite double is written as
 * null. A reader therefore gets null where a NaN or infinity was meant;
 * nx_json_repr_double keeps them apart where the text is not JSON (cache
 * keys). */
#ifndef NXSIM_ISA_JSON_WRITE_H
#define NXSIM_ISA_JSON_WRITE_H

#include <stdint.h>

#include "strbuf.h"

/* "..." with '"', '\\' and control characters escaped (\n, \t, \r, \u00XX);
 * other bytes (UTF-8) as they are. */
void nx_json_string(nx_strbuf *b, const char *s);
/* A double: the shortest round-trip form, null if not finite. */
void nx_json_double(nx_strbuf *b, double v);
/* The same, but NaN, Infinity and -Infinity for non-finite values (not
 * JSON: for canonical texts that must tell them from null). */
void nx_json_repr_double(nx_strbuf *b, double v);
void nx_json_int(nx_strbuf *b, int64_t v);
void nx_json_uint(nx_strbuf *b, uint64_t v);

#endif
