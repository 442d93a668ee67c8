/* cumsum's operand and attribute rules (kernels/elementwise/elementwise.h),
 * shared by the rules and the kernel. */
#include <string.h>

#include "elementwise.h"

const char *const nx_cumsum_attrs[] = {"axis", "exclusive", "reverse", NULL};

int nx_cumsum_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_cumsum_params *p,
                   nx_error *err) {
    memset(p, 0, sizeof *p);
    if (n_in != 1) return nx_fail(err, "cumsum takes 1 operand (x; axis is an attribute), the op has %u", n_in);
    const nx_norm_tensor *x = &in[0];
    /* int32 passes the float check as fp32 (same size); the kernel splits it */
    nx_norm_tensor xf = *x;
    if (x->dtype == NX_DT_INT32) xf.dtype = NX_DT_FP32;
    else if (x->dtype != NX_DT_FP32 && x->dtype != NX_DT_BF16)
        return nx_fail(err, "operand 0 (%s): dtype %s, cumsum takes fp32, bf16 or int32", x->name,
                       nx_dtype_name(x->dtype) ? nx_dtype_name(x->dtype) : "?");
    p->dtype = x->dtype;
    if (nx_norm_axis_operand(attrs, &xf, "cumsum", &p->axis, &p->outer, &p->A, &p->inner, err) != 0 ||
        nx_norm_attr_bool(attrs, "exclusive", 0, &p->exclusive, err) != 0 ||
        nx_norm_attr_bool(attrs, "reverse", 0, &p->reverse, err) != 0)
        return -1;
    return 0;
}
