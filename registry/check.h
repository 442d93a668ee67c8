/* --check: one result compared element by element with its reference under
 * a tolerance (registry/rules.h). Used by the run path (registry/run/),
 * tests and benches. */
#ifndef NXSIM_REGISTRY_CHECK_H
#define NXSIM_REGISTRY_CHECK_H

#include <stdint.h>

#include "isa/dtype.h"
#include "rules.h"

typedef struct nx_check_result {
    double max_abs;     /* largest |got - ref| (INFINITY for a NaN/infinity mismatch) */
    double max_rel;     /* largest |got - ref| / |ref| (INFINITY where ref is 0 or not finite) */
    uint64_t bad;       /* elements beyond the tolerance */
    uint64_t first_bad; /* flat C-order index of the first one (with bad > 0) */
} nx_check_result;

/* Compares n elements of dtype dt (got and ref in C order). NaN matches NaN;
 * an infinity matches only the same infinity. */
void nx_check_compare(nx_dtype dt, const uint8_t *got, const uint8_t *ref, uint64_t n,
                      const nx_tolerance *tol, nx_check_result *out);

#endif
