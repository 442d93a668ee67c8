/* The output files of `nxsim run` and `nxsim exec`, written so that nothing
 * is left half done: every file is serialised before the first is written,
 * each is written atomically (isa/fileio.h), and if writing one fails the
 * files this run already wrote are removed again. */
#ifndef NXSIM_CLI_OUTPUTS_H
#define NXSIM_CLI_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "isa/program.h"

typedef struct cli_output {
    const char *path;           /* borrowed */
    const nx_tensor_decl *decl; /* borrowed: the tensor's dtype and shape */
    const uint8_t *data;        /* borrowed: its bytes, C order */
    uint8_t *bytes;             /* owned: the serialised .npy */
    size_t len;
} cli_output;

typedef struct cli_outputs {
    cli_output *items; /* owned */
    int count;
    int written;       /* items[0..written) are on disk */
} cli_outputs;

/* Room for max outputs. 0, or -1 (out of memory; message printed). */
int cli_outputs_init(cli_outputs *o, int max);
/* Adds one (pointers borrowed until cli_outputs_free). */
void cli_outputs_add(cli_outputs *o, const char *path, const nx_tensor_decl *decl, const uint8_t *data);
/* Serialises every output. 0, or -1 with the message printed ("PATH: ..."). */
int cli_outputs_serialize(cli_outputs *o);
/* Writes every output atomically; on a failure removes the ones written and
 * returns -1 with the message printed. */
int cli_outputs_write(cli_outputs *o);
/* Removes the outputs this run wrote (a later step failed). */
void cli_outputs_undo(cli_outputs *o);
void cli_outputs_free(cli_outputs *o);

#endif
