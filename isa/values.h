/* Attribute values and attribute dictionaries: what a macro-op carries
 * (the seed's get_attrs_dict()), what a leaf reads (kernels/kernel.h) and
 * what the registry builds, parses and writes (registry/macro_op.h). One
 * definition and one set of accessors, so no leaf writes its own lookup.
 *
 * Why isa/: it is the tree's libc-only foundation that every layer already
 * links (errors, strings, JSON text, files); the values need nothing more,
 * and a folder of their own would be a layer between isa/ and kernels/
 * with one file and no dependency of its own (dependencies point down:
 * kernels/ and registry/ both sit above isa/).
 *
 * Ownership: a value owns its string and items, a dictionary its names and
 * values (nx_value_free, nx_attrs_free; both safe on a zeroed one).
 * Returned pointers (nx_attrs_get*) are borrowed from the dictionary.
 * Errors: 0, or -1 with one line in err naming the attribute. */
#ifndef NXSIM_ISA_VALUES_H
#define NXSIM_ISA_VALUES_H

#include <stdint.h>

#include "error.h"

typedef enum nx_value_kind {
    NX_VAL_NONE = 0,
    NX_VAL_BOOL,
    NX_VAL_INT,
    NX_VAL_FLOAT,
    NX_VAL_STRING,
    NX_VAL_LIST /* items may themselves be lists (nested lists) */
} nx_value_kind;

typedef struct nx_value {
    nx_value_kind kind;
    int64_t i;              /* BOOL (0/1) and INT */
    double f;               /* FLOAT */
    char *s;                /* STRING, owned by the value */
    struct nx_value *items; /* LIST, owned */
    uint32_t count;         /* LIST */
} nx_value;

typedef struct nx_attr {
    char *name;             /* owned */
    nx_value value;
} nx_attr;

/* An ordered attribute dictionary (insertion order kept, names unique). */
typedef struct nx_attrs {
    nx_attr *items;         /* owned */
    uint32_t count;
} nx_attrs;

/* ---- values ---------------------------------------------------------- */

void nx_value_free(nx_value *v);                 /* back to NX_VAL_NONE */
int nx_value_copy(nx_value *dst, const nx_value *src, nx_error *err);
nx_value nx_value_int(int64_t i);
nx_value nx_value_float(double f);
nx_value nx_value_bool(int b);
/* A list of INTs (e.g. a shape); -1 on out-of-memory. */
int nx_value_int_list(nx_value *out, const uint64_t *items, uint32_t count, nx_error *err);
/* Reads a flat list of INTs into items[0..*count); -1 naming `what` if v is
 * not such a list or has more than max items. */
int nx_value_get_int_list(const nx_value *v, const char *what, int64_t *items, uint32_t max,
                          uint32_t *count, nx_error *err);

/* ---- dictionaries ---------------------------------------------------- */

void nx_attrs_init(nx_attrs *a);
void nx_attrs_free(nx_attrs *a);
int nx_attrs_copy(nx_attrs *dst, const nx_attrs *src, nx_error *err);
/* The value named `name`, or NULL (a NULL dictionary has none). */
const nx_value *nx_attrs_get(const nx_attrs *a, const char *name);
/* The same, but a value that is null (NX_VAL_NONE, JSON null) counts as not
 * given: the leaf's default applies. */
const nx_value *nx_attrs_get_given(const nx_attrs *a, const char *name);
/* An INT attribute: *present says whether it is there; *out is set only
 * then. -1: "attribute NAME: must be an integer". */
int nx_attrs_get_int(const nx_attrs *a, const char *name, int64_t *out, int *present, nx_error *err);
/* Python dict assignment: replaces the value in place (keeping its position)
 * if `name` exists, else appends. The value is moved in (*value becomes
 * NX_VAL_NONE) on success; on failure it is left untouched. */
int nx_attrs_set(nx_attrs *a, const char *name, nx_value *value, nx_error *err);
/* nx_attrs_set of a list of INTs (a shape, a window, a permutation). */
int nx_attrs_set_int_list(nx_attrs *a, const char *name, const uint64_t *items, uint32_t count, nx_error *err);

#endif
