/* The machine a program runs on, for the subcommands (see cli/io.h). */
#include "io.h"

#include <string.h>

#include "isa/strbuf.h"

int cli_is_machine_preset(const char *name) {
    for (const char *const *p = nx_machine_presets(); *p; p++)
        if (strcmp(*p, name) == 0) return 1;
    return 0;
}

int cli_load_machine(const char *spec, const nx_program *p, const char *prog_path, nx_machine *out,
                     nx_error *err) {
    if (spec) return nx_machine_load(spec, out, err);
    const char *name = p->machine[0] ? p->machine : nx_machine_default();
    if (!cli_is_machine_preset(name)) {
        nx_strbuf list = NX_STRBUF_INIT;
        for (const char *const *q = nx_machine_presets(); *q; q++) {
            if (q != nx_machine_presets()) nx_sb_puts(&list, ", ");
            nx_sb_puts(&list, *q);
        }
        nx_fail(err, "%s: unknown machine '%s' (presets: %s); for a machine file pass --machine FILE.json",
                prog_path, name, nx_sb_str(&list));
        nx_sb_free(&list);
        return -1;
    }
    return nx_machine_load(name, out, err);
}
