/* Option values shared by the subcommands (cli/options.h). */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int is_hex_digit(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int cli_parse_seed(const char *s, uint64_t *out) {
    if (s[0] < '0' || s[0] > '9') return -1; /* no sign, no space */
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex && !is_hex_digit(s[2])) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
    if (errno != 0 || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

int cli_parse_pe(const char *s, int *pe_rtl) {
    if (strcmp(s, "rtl") == 0) {
        *pe_rtl = 1;
        return 0;
    }
    if (strcmp(s, "model") == 0) {
        *pe_rtl = 0;
        return 0;
    }
    return -1;
}
