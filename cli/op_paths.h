/* Where an op file may put its results (docs/parts/security.md, "Op-file
 * result paths"). An op document is untrusted: the command line named only
 * the op file, so the results it names stay inside the op file's directory
 * tree and replace nothing but earlier results. */
#ifndef NXSIM_CLI_OP_PATHS_H
#define NXSIM_CLI_OP_PATHS_H

#include "isa/error.h"

/* The path of the result file `name` (the op file's "file" of a result),
 * relative to the directory of `op_file`, in *out (malloc'd). Refused, with
 * one line in err and -1: an empty name, an absolute one, one with a ".."
 * component, one whose directory does not exist or leads out of the op
 * file's directory through a link, a link at the name that leads out (or
 * to nothing), and an existing file that is not a regular file holding a
 * .npy (NumPy's magic "\x93NUMPY"), so that only an earlier result is
 * replaced. The checks see the file system as it is now (a path that
 * changes between them and the write is not guarded against). */
int cli_op_result_path(const char *op_file, const char *name, char **out, nx_error *err);

#endif
