/* The output files of `nxsim run` and `nxsim exec` (results, the profile
 * trace and timeline, the RTL waveforms), written so that nothing is left half done:
 * every file is staged in a temporary (isa/fileio.h) before the first one is
 * committed, and a failure before the commit removes every temporary, so a
 * failed run touches none of its output paths. A written-through output (a
 * device, a FIFO, /dev/stdout) gets its bytes at the commit, before the
 * replaced files are renamed into place.
 *
 * Messages are printed ("nxsim: PATH: ..."); functions return 0 or -1. */
#ifndef NXSIM_CLI_OUTPUTS_H
#define NXSIM_CLI_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isa/error.h"
#include "isa/fileio.h"
#include "isa/program.h"
#include "sim/machine.h"
#include "sim/model.h"

/* Writes a streamed output (the profile trace) to f; `path` names it in
 * messages. 0, or -1 with err set. */
typedef int (*cli_stream_fn)(FILE *f, const char *path, const void *ctx, nx_error *err);

typedef struct cli_output {
    const char *path;           /* borrowed */
    const nx_tensor_decl *decl; /* .npy: borrowed, the tensor's dtype and shape */
    const uint8_t *data;        /* .npy: borrowed, its bytes, C order */
    cli_stream_fn stream;       /* streamed output (decl NULL) */
    const char *what;           /* streamed: what it is in messages ("timeline"), or NULL */
    const void *ctx;
    int staged;                 /* written by someone else at af.tmp (a waveform) */
    char *owned_path;           /* staged: its own copy of path */
    uint8_t *bytes;             /* owned: the serialised .npy */
    size_t len;
    nx_atomic_file af;          /* open from staging until commit or abort */
    int open;
} cli_output;

typedef struct cli_outputs {
    cli_output *items; /* owned */
    int count, max;
} cli_outputs;

/* Room for max outputs. 0, or -1 (out of memory; message printed). */
int cli_outputs_init(cli_outputs *o, int max);
/* A .npy output (pointers borrowed until cli_outputs_free). */
void cli_outputs_add(cli_outputs *o, const char *path, const nx_tensor_decl *decl, const uint8_t *data);
/* A streamed output, written by fn at cli_outputs_write; `what` (static, or
 * NULL) prefixes the messages of its file ("timeline PATH: cannot create"). */
void cli_outputs_add_stream(cli_outputs *o, const char *path, const char *what, cli_stream_fn fn,
                            const void *ctx);
/* The run's profile files from its log (sim/profile.h): the Perfetto trace
 * at `trace` and the SVG timeline at `timeline` (either NULL: none), written
 * at cli_outputs_write; `src` is borrowed until then. */
typedef struct cli_profile_src {
    const nx_machine *m;
    const nx_program *prog;
    const nx_sim_result *sim;
} cli_profile_src;
void cli_outputs_add_profile(cli_outputs *o, const char *trace, const char *timeline, const cli_profile_src *src);
/* A file another component writes by name during the run: its temporary is
 * created now (at `tmp` if non-NULL) and its name returned (valid until
 * cli_outputs_free), or NULL with the message printed. `path` is copied. */
const char *cli_outputs_stage(cli_outputs *o, const char *path, const char *tmp);
/* Serialises every .npy output. 0, or -1 with the message printed. */
int cli_outputs_serialize(cli_outputs *o);
/* Writes every output to its temporary, then commits them all; on a failure
 * removes every temporary not yet committed. */
int cli_outputs_write(cli_outputs *o);
/* Removes every temporary not committed (safe after a write), frees. */
void cli_outputs_free(cli_outputs *o);

#endif
