/* nxsim kernels: every kernel of the environment with its tier (readable
 * references, production leaves, composite orchestrators;
 * docs/parts/registry.md), its family and the registry key that leads to it. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "registry/registry.h"

void cmd_kernels_help(FILE *f) {
    fputs("Usage: nxsim kernels\n"
          "\n"
          "Lists every kernel in nxsim, tier by tier:\n"
          "  reference  plain-C reference implementations (kernels/ref), the oracles\n"
          "             of the tests and of 'nxsim run --check'\n"
          "  leaf       production leaves that emit an instruction stream: the\n"
          "             registry's 13 seed entries and the top-k methods\n"
          "  composite  orchestrators that compose leaves\n"
          "with its family, the registry key that reaches it ('-' if none; top-k\n"
          "leaves are reached through SupportedTopkMethods) and its status: a leaf\n"
          "the seed names but nxsim does not implement yet says 'not implemented'.\n"
          "\n"
          "Options:\n"
          "  -h, --help   show this help and exit\n",
          f);
}

int cmd_kernels(int argc, char **argv) {
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': cmd_kernels_help(stdout); return CLI_EXIT_OK;
        default: return cli_option_error("kernels", c, argc, argv);
        }
    }
    if (optind < argc) return cli_usage_error("kernels", "unexpected argument '%s'", argv[optind]);

    nx_inventory_item items[128];
    uint32_t total = nx_kernel_inventory(items, 128);
    uint32_t n = total < 128 ? total : 128;
    int wn = (int)strlen("kernel"), wf = (int)strlen("family"), wk = (int)strlen("registry key");
    for (uint32_t i = 0; i < n; i++) {
        int a = (int)strlen(items[i].name), b = (int)strlen(items[i].family),
            k = items[i].registry_key ? (int)strlen(items[i].registry_key) : 1;
        if (a > wn) wn = a;
        if (b > wf) wf = b;
        if (k > wk) wk = k;
    }
    printf("%-9s  %-*s  %-*s  %-*s  %-15s  %s\n", "tier", wn, "kernel", wf, "family", wk,
           "registry key", "status", "reached through");
    uint32_t per_tier[3] = {0, 0, 0};
    for (int tier = NX_TIER_REFERENCE; tier <= NX_TIER_COMPOSITE; tier++) {
        for (uint32_t i = 0; i < n; i++) {
            if ((int)items[i].tier != tier) continue;
            per_tier[tier]++;
            const nx_inventory_item *it = &items[i];
            printf("%-9s  %-*s  %-*s  %-*s  %-15s  %s\n", nx_kernel_tier_name(it->tier), wn, it->name,
                   wf, it->family, wk, it->registry_key ? it->registry_key : "-",
                   it->implemented ? (it->registry_key ? "registered" : "implemented")
                                   : "not implemented",
                   it->via);
        }
        if (per_tier[tier] == 0)
            printf("%-9s  %s\n", nx_kernel_tier_name((nx_kernel_tier)tier), "(none yet)");
    }
    uint32_t impl = 0;
    for (uint32_t i = 0; i < n; i++) impl += items[i].implemented;
    printf("\n%u kernels: %u reference, %u leaf, %u composite; %u implemented, %u not implemented yet\n",
           total, per_tier[0], per_tier[1], per_tier[2], impl, total - impl);
    return CLI_EXIT_OK;
}
