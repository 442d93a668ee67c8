/* A program outside the nxsim tree, built against an installed nxsim (once
 * with pkg-config, once with find_package(nxsim)): transposes a 96 x 40
 * fp32 matrix with the registry's tiled_pf_transpose on the two-core grid
 * of the trn2 model, checks every element against the transpose computed
 * here, prints one line and exits 0 (1 on any mismatch or error). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxsim/nxsim.h>

int main(void) {
    enum { R = 96, C = 40 };
    static float x[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)(i % 97) * 0.5f - 20.0f;
    nx_message msg;
    nx_session *s;
    nx_call *call;
    nx_result *r;
    uint64_t shape[2] = {R, C};
    if (nx_session_open("trn2", &s, &msg) != NX_OK || nx_call_new("tiled_pf_transpose", &call, &msg) != NX_OK ||
        nx_call_add_operand(call, "fp32", 2, shape, x, &msg) != NX_OK ||
        nx_call_set_attr(call, "permutation", "[1, 0]", &msg) != NX_OK || nx_session_run(s, call, NULL, &r, &msg) != NX_OK) {
        fprintf(stderr, "example: %s\n", msg.text);
        return 1;
    }
    const float *y = nx_result_data(r, 0);
    int bad = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) bad += memcmp(&y[j * R + i], &x[i * C + j], sizeof *x) != 0;
    printf("nxsim %s: %s on %u cores, %.3f us simulated, %d of %d elements differ\n", nx_version(),
           nx_result_kernel(r), nx_result_cores(r), nx_result_total_ns(r) / 1000.0, bad, R * C);
    nx_result_free(r);
    nx_call_free(call);
    nx_session_close(s);
    return bad != 0 || strcmp(nx_version(), NXSIM_VERSION_STRING) != 0;
}
