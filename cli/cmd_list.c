/* nxsim list: the internal kernel registry (the live table, in the seed's
 * insertion order) and the top-k method mapping. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "registry/registry.h"
#include "kernels/topk/topk_methods.h"

void cmd_list_help(FILE *f) {
    fputs("Usage: nxsim list [--all]\n"
          "\n"
          "Prints the internal kernel registry: for each registered key (the\n"
          "macro-op's func_name), in the seed's insertion order, its seed number,\n"
          "the leaf function it traces (kernel_func), how many operands it takes\n"
          "(operand_count; 'all' = the seed's None), its argument builder, its grid\n"
          "(1 core, or VNC(2) = the two-core grid) and output_is_parameter. Then the\n"
          "top-k method mapping (SupportedTopkMethods -> function).\n"
          "\n"
          "Only entries whose leaf is implemented are in the registry; the others\n"
          "get the registry's 'not registered' error. --all lists every one of the\n"
          "seed's 13 entries with its status.\n"
          "\n"
          "Options:\n"
          "  -a, --all    list the whole seed catalogue, implemented or not\n"
          "  -h, --help   show this help and exit\n",
          f);
}

static const char *builder_text(const nx_kernel_config *c) {
    return c->additional_args_builder ? c->additional_args_builder->name : "none";
}

static void print_table(const nx_kernel_registry *reg, int with_status) {
    int wk = (int)strlen("key"), wf = (int)strlen("kernel_func"), wb = (int)strlen("args builder");
    for (uint32_t i = 0; i < reg->count; i++) {
        const nx_registry_entry *e = &reg->entries[i];
        int k = (int)strlen(e->key), f = (int)strlen(e->config.kernel_func->name),
            b = (int)strlen(builder_text(&e->config));
        if (k > wk) wk = k;
        if (f > wf) wf = f;
        if (b > wb) wb = b;
    }
    printf("  %-3s %-*s  %-*s  %-13s  %-*s  %-6s  %s%s\n", "#", wk, "key", wf, "kernel_func",
           "operand_count", wb, "args builder", "grid", "output_is_parameter",
           with_status ? "  status" : "");
    for (uint32_t i = 0; i < reg->count; i++) {
        const nx_registry_entry *e = &reg->entries[i];
        char oc[16];
        printf("  %-3u %-*s  %-*s  %-13s  %-*s  %-6s  %*s%s%s\n", e->seed_index, wk, e->key, wf,
               e->config.kernel_func->name, nx_operand_count_text(e->config.operand_count, oc, sizeof oc),
               wb, builder_text(&e->config), e->config.requires_multicore_grid ? "VNC(2)" : "1",
               with_status ? -19 : 0, e->config.output_is_parameter ? "true" : "false",
               with_status ? "  " : "",
               with_status ? (e->config.kernel_func->fn ? "registered" : "not implemented") : "");
    }
}

int cmd_list(int argc, char **argv) {
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int all = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ah", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': all = 1; break;
        case 'h': cmd_list_help(stdout); return CLI_EXIT_OK;
        default: return cli_option_error("list", c, argc, argv);
        }
    }
    if (optind < argc) return cli_usage_error("list", "unexpected argument '%s'", argv[optind]);

    const nx_kernel_registry *live = nx_get_internal_kernel_registry();
    const nx_kernel_registry *cat = nx_registry_catalogue();
    printf("Internal kernel registry: %u of the seed's %u entries registered (insertion order)\n",
           live->count, cat->count);
    print_table(all ? cat : live, all);
    if (!all && live->count < cat->count)
        printf("  (%u entries whose leaf is not implemented yet are not registered: nxsim list --all)\n",
               cat->count - live->count);

    uint32_t n;
    const nx_topk_method *m = nx_topk_method_mapping(&n);
    printf("\nTop-k methods (SupportedTopkMethods -> function)\n");
    for (uint32_t i = 0; i < n; i++)
        printf("  %-10s  %-21s  %s\n", m[i].member, m[i].function,
               m[i].fn ? "implemented" : "not implemented");
    return CLI_EXIT_OK;
}
