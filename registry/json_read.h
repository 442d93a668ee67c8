/* Reading JSON text for the macro-op parser (private to registry/).
 *
 * INT or FLOAT by their spelling: cJSON keeps only a double per number,
 * which cannot tell 2 from 2.0 nor hold an int64 beyond 2^53. The text is
 * therefore scanned once more: the number tokens of valid JSON appear in the
 * same order as the number nodes of a pre-order walk of the tree, which pairs
 * each node with its spelling (a number spelt with '.', 'e' or 'E' is a
 * FLOAT, any other an INT, as Python's json module decides). */
#ifndef NXSIM_REGISTRY_JSON_READ_H
#define NXSIM_REGISTRY_JSON_READ_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "isa/error.h"

typedef struct nx_json_number {
    const cJSON *node;
    int is_int;
    int overflow; /* an INT spelling outside int64 */
    int64_t i;
} nx_json_number;

typedef struct nx_json_numbers {
    nx_json_number *items; /* owned: free(items) */
    size_t count, cap;
} nx_json_numbers;

/* Parses NUL-terminated `json` whole (trailing text is an error: "SOURCE:
 * invalid JSON at line L, column C") and pairs its numbers with their
 * spellings in *nums. The caller frees the tree (cJSON_Delete) and
 * nums->items. NULL on error. */
cJSON *nx_json_read(const char *source, const char *json, nx_json_numbers *nums, nx_error *err);

/* The spelling of number node `node`, or NULL. */
const nx_json_number *nx_json_number_of(const nx_json_numbers *t, const cJSON *node);

#endif
