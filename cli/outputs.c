/* The output files of a run (cli/outputs.h). */
#define _POSIX_C_SOURCE 200809L /* unlink */

#include "outputs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "isa/fileio.h"
#include "isa/npy.h"
#include "tensors.h"

int cli_outputs_init(cli_outputs *o, int max) {
    memset(o, 0, sizeof *o);
    o->items = calloc((size_t)max + 1, sizeof *o->items);
    if (!o->items) {
        cli_message("out of memory");
        return -1;
    }
    return 0;
}

void cli_outputs_add(cli_outputs *o, const char *path, const nx_tensor_decl *decl, const uint8_t *data) {
    cli_output *it = &o->items[o->count++];
    it->path = path;
    it->decl = decl;
    it->data = data;
}

int cli_outputs_serialize(cli_outputs *o) {
    nx_error err;
    for (int k = 0; k < o->count; k++) {
        cli_output *it = &o->items[k];
        nx_npy view = cli_tensor_view(it->decl, it->data);
        if (nx_npy_serialize(&view, &it->bytes, &it->len, &err) != 0) {
            cli_message("%s: %s", it->path, err.msg);
            return -1;
        }
    }
    return 0;
}

int cli_outputs_write(cli_outputs *o) {
    nx_error err;
    for (int k = 0; k < o->count; k++) {
        if (nx_write_file_atomic(o->items[k].path, o->items[k].bytes, o->items[k].len, &err) != 0) {
            cli_message("%s", err.msg);
            cli_outputs_undo(o);
            return -1;
        }
        o->written = k + 1;
    }
    return 0;
}

void cli_outputs_undo(cli_outputs *o) {
    for (int k = 0; k < o->written; k++) unlink(o->items[k].path);
    o->written = 0;
}

void cli_outputs_free(cli_outputs *o) {
    for (int k = 0; o->items && k < o->count; k++) free(o->items[k].bytes);
    free(o->items);
    memset(o, 0, sizeof *o);
}
