/* Fuzzes the op document reader (registry/macro_op.h nx_macro_op_parse), in
 * both modes (strict, and the CLI's --op with "file"s). Oracles: a rejected
 * document gets a one-line message; an accepted strict one writes back
 * (nx_macro_op_to_json) to a document that parses to the same text again,
 * and goes down the run path (lower.h): lookup, attribute check, result
 * rules, lowering and a functional run when small. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lower.h"
#include "registry/macro_op.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = nx_fuzz_text(data, size); /* the CLI refuses an op file holding a NUL byte */
    if (!text) return 0;
    nx_error err;
    nx_macro_op op;
    nx_op_files files;
    if (nx_macro_op_parse("fuzz.json", text, &op, &files, &err) != 0) {
        nx_fuzz_check_message("parse (file mode)", err.msg);
    } else {
        nx_fuzz_lower_and_run(&op, NX_FUZZ_LOWER_MAX_BYTES);
        nx_macro_op_free(&op);
        nx_op_files_free(&files);
    }
    if (nx_macro_op_parse("fuzz.json", text, &op, NULL, &err) != 0) {
        nx_fuzz_check_message("parse", err.msg);
        free(text);
        return 0;
    }
    char *j1 = nx_macro_op_to_json(&op);
    if (!j1) nx_fuzz_fail("out of memory");
    nx_macro_op back;
    if (nx_macro_op_parse("written.json", j1, &back, NULL, &err) != 0)
        nx_fuzz_fail("the written op does not parse: %s\n%s", err.msg, j1);
    char *j2 = nx_macro_op_to_json(&back);
    if (!j2 || strcmp(j1, j2) != 0) nx_fuzz_fail("parse -> write -> parse -> write is not the identity");
    free(j1);
    free(j2);
    nx_macro_op_free(&back);
    nx_fuzz_lower_and_run(&op, NX_FUZZ_LOWER_MAX_BYTES);
    nx_macro_op_free(&op);
    free(text);
    return 0;
}
