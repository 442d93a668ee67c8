/* Machine descriptions (the plain struct nx_machine: isa/machine.h): every
 * clock, size and cost figure of a simulated machine, loaded from JSON data files (sim/machines/<name>.json, compiled
 * into the binary so presets work from any directory). Presets: "trn1"
 * (NeuronCore-v2-like) and "trn2" (NeuronCore-v3-like, the default).
 *
 * A user file may name a preset to start from ("base": "trn2") and override
 * any parameter; an unknown key, a wrong JSON type or an out-of-range value is
 * an error naming the file and the key path (e.g. "dve.min_ii").
 *
 * Units: clocks in GHz (each engine has its own clock; "cycles" of an engine
 * are cycles of that clock), bandwidths in bytes per ns (= GB/s), times in ns,
 * sizes in bytes, counts in elements. Plain C (C11) so the CLI, tests and
 * benches can use it without the SystemC model. */
#ifndef NXSIM_SIM_MACHINE_H
#define NXSIM_SIM_MACHINE_H

#include <stdint.h>

#include "../isa/error.h"
#include "../isa/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads a preset by name ("trn1", "trn2") or, if `spec` is not a preset name,
 * a JSON file at that path. Returns 0 or -1 with a one-line message. */
int nx_machine_load(const char *spec, nx_machine *out, nx_error *err);
/* Parses a JSON text; `source` names it in messages. */
int nx_machine_parse(const char *source, const char *json, nx_machine *out, nx_error *err);
/* The preset named geo->name ("trn1", "trn2"), else the default preset,
 * with *geo as its geometry: the whole description for a caller that holds
 * only a geometry (a user file's own figures are then not known). Returns 0
 * or -1 with a one-line message. */
int nx_machine_of_geometry(const nx_geometry *geo, nx_machine *out, nx_error *err);
/* The default preset name ("trn2"). */
const char *nx_machine_default(void);
/* Names of the presets, NULL-terminated. */
const char *const *nx_machine_presets(void);

#ifdef __cplusplus
}
#endif

#endif
