/* Internals of libnxsim (include/nxsim/nxsim.h): the object layouts shared
 * by the files of api/. The library is a facade over the run path
 * (registry/run/run.h): a session is a machine and a lowerer, a call an
 * nx_macro_op in the making, a result an nx_run_result (or, for a program,
 * its state and trace). */
#ifndef NXSIM_API_IMPL_H
#define NXSIM_API_IMPL_H

#define NXSIM_BUILDING_LIBRARY 1
#include "nxsim/nxsim.h"

#include "isa/error.h"
#include "isa/program.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "sim/machine.h"

struct nx_session {
    nx_machine machine;
    nx_lowerer *L;
};

struct nx_call {
    nx_macro_op op;                    /* func_name, operands, attrs (no results yet) */
    const void *data[NX_OP_MAX_TENSORS]; /* operand bytes (borrowed) or NULL */
};

struct nx_prog {
    nx_program prog;
};

struct nx_result {
    const nx_session *session;
    const nx_program *prog;   /* the lowerer's (run) or the nx_prog's (exec) */
    int is_op;
    nx_prepared prep;         /* is_op: the op as it ran and its target (registry/prepare.h) */
    nx_run_result run;        /* is_op */
    nx_state state;           /* exec */
    int have_state;
    nx_run_trace trace;       /* exec */
    uint32_t count;           /* result tensors */
    int *tensor;              /* result j -> program tensor (owned) */
    const uint8_t **data;     /* result j's bytes in the final HBM (owned array) */
};

/* nx_error -> the caller's message and a status. */
nx_status api_fail(nx_message *msg, nx_status st, const nx_error *err);
nx_status api_failf(nx_message *msg, nx_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void api_ok(nx_message *msg);
/* The run options of a config (NULL: defaults) into *out: NX_OK, or
 * NX_ERR_USAGE for a size that is no nx_config's, a backend or grid out of
 * range ("FN: nx_config.backend 7 is not a backend ..."). */
nx_status api_run_options(const nx_config *cfg, const char *fn, nx_run_options *out, nx_message *msg);
/* The trace of a result (the model's result inside it). */
const nx_run_trace *api_trace(const nx_result *r);

#endif
