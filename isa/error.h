/* Errors are values: every fallible function returns 0 on success or -1 on
 * failure and, on failure, fills an nx_error with one line naming the
 * offending input and the problem (no trailing newline). The caller owns the
 * nx_error; functions never allocate it. */
#ifndef NXSIM_ISA_ERROR_H
#define NXSIM_ISA_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#define NX_ERROR_MAX 512

typedef struct nx_error {
    char msg[NX_ERROR_MAX];
} nx_error;

/* Formats into err (if non-NULL) and returns -1, so `return nx_fail(err, ...)`. */
int nx_fail(nx_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prepends "prefix: " to an existing message (used to add context such as
 * "core 0 dve #12 (tensor_tensor)"). Returns -1. */
int nx_fail_prefix(nx_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
