/* `nxsim run` with the test composites of tests/fixture_kernels.h after the
 * live registry: nxsim_test_kernels run racy_copy --race-check. Only `run`;
 * everything else is the real command's code (cli/run_cmd.h). */
#include <stdio.h>
#include <string.h>

#include "cli/run_cmd.h"
#include "tests/fixture_kernels.h"

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "usage: %s run KEY [nxsim run options]\n", argv[0]);
        return 2;
    }
    return cli_run_with(argc - 1, argv + 1, NULL, &fixture_composites);
}
