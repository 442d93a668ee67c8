/* The files a command line reads and writes, checked before anything runs:
 * an output that is one of the inputs, or two outputs that are one file,
 * are refused (exit 2), comparing files by device and inode (and, for files
 * that do not exist yet, by resolved path: isa/fileio.h nx_file_identify),
 * never by spelling, so "a.npy", "./a.npy" and a link to it are one file.
 * Devices, FIFOs and the standard streams are exempt: writing to /dev/null
 * twice overwrites nothing. */
#ifndef NXSIM_CLI_PATHS_H
#define NXSIM_CLI_PATHS_H

typedef struct cli_path {
    char *label; /* owned: how the command line names it ("-o", "--in x") */
    const char *path; /* borrowed */
    int output;
} cli_path;

typedef struct cli_paths {
    cli_path *items; /* owned */
    int count, cap;
    int failed; /* out of memory while adding */
} cli_paths;

#define CLI_PATHS_INIT {NULL, 0, 0, 0}

/* Adds an input or output; `label` is a printf format. Out of memory is
 * reported by cli_paths_check. */
void cli_paths_input(cli_paths *ps, const char *path, const char *label, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void cli_paths_output(cli_paths *ps, const char *path, const char *label, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Adds `spec` (a --machine argument) as the input "--machine" if it names
 * a file rather than a preset. */
void cli_paths_machine(cli_paths *ps, const char *spec);
/* CLI_EXIT_OK, or the usage error printed ("nxsim: CMD: -o 'p.nxs' is the
 * input 'p.nxs': refusing to overwrite it") and CLI_EXIT_USAGE. */
int cli_paths_check(const char *cmd, const cli_paths *ps);
void cli_paths_free(cli_paths *ps);

#endif
