/* The three live argument builders of the seed (its Phase B lambdas). The
 * fourth, _get_conv_attrs, is constructed by the seed but bound by no
 * registry entry (a refactor remnant): it is deliberately absent. */
#include <string.h>

#include "registry.h"

/* _get_attrs = lambda inst: inst.get_attrs_dict() */
static int get_attrs(const nx_macro_op *inst, nx_attrs *out, nx_error *err) {
    return nx_attrs_copy(out, &inst->attrs, err);
}

/* The shape of the op's (first) result as an INT list. */
static int result_shape(const nx_macro_op *inst, nx_value *v, nx_error *err) {
    if (inst->n_results == 0) return nx_fail(err, "the op has no result to take out_shape from");
    return nx_value_int_list(v, inst->results[0].shape, inst->results[0].ndims, err);
}

/* _get_conv_attrs_with_out_shape = lambda inst: {**inst.get_attrs_dict(),
 *                                                'out_shape': <result shape>}
 * Python's dict merge: an existing 'out_shape' keeps its position and gets
 * the new value. */
static int get_conv_attrs_with_out_shape(const nx_macro_op *inst, nx_attrs *out, nx_error *err) {
    nx_attrs a;
    nx_value shape;
    if (result_shape(inst, &shape, err) != 0) return -1;
    if (nx_attrs_copy(&a, &inst->attrs, err) != 0) {
        nx_value_free(&shape);
        return -1;
    }
    if (nx_attrs_set(&a, "out_shape", &shape, err) != 0) {
        nx_value_free(&shape);
        nx_attrs_free(&a);
        return -1;
    }
    *out = a;
    return 0;
}

/* _get_resize_args: the result tensor, its access shape and out_shape. The
 * result tensor is passed by name (the leaf finds it among its call_args);
 * the access shape is the whole tensor's shape (a macro-op names whole
 * tensors). nxsim addition: the op's own attributes follow, so the ONNX
 * coordinate and nearest modes (docs/parts/registry.md) reach the leaf; an
 * attribute cannot override the three builder-made arguments. */
static int get_resize_args(const nx_macro_op *inst, nx_attrs *out, nx_error *err) {
    static const char *const own[] = {"result", "access_shape", "out_shape"};
    nx_attrs a;
    nx_attrs_init(&a);
    nx_value v;
    memset(&v, 0, sizeof v);
    if (inst->n_results == 0) return nx_fail(err, "the op has no result to resize into");
    v.kind = NX_VAL_STRING;
    v.s = strdup(inst->results[0].name);
    if (!v.s) return nx_fail(err, "out of memory");
    if (nx_attrs_set(&a, own[0], &v, err) != 0) goto fail;
    if (result_shape(inst, &v, err) != 0 || nx_attrs_set(&a, own[1], &v, err) != 0) goto fail;
    if (result_shape(inst, &v, err) != 0 || nx_attrs_set(&a, own[2], &v, err) != 0) goto fail;
    for (uint32_t i = 0; i < inst->attrs.count; i++) {
        const nx_attr *at = &inst->attrs.items[i];
        int is_own = 0;
        for (int k = 0; k < 3; k++) is_own |= strcmp(at->name, own[k]) == 0;
        if (is_own) continue;
        if (nx_value_copy(&v, &at->value, err) != 0 || nx_attrs_set(&a, at->name, &v, err) != 0)
            goto fail;
    }
    *out = a;
    return 0;
fail:
    nx_value_free(&v);
    nx_attrs_free(&a);
    return -1;
}

const nx_args_builder nx_args_attrs = {"attrs", "_get_attrs", get_attrs};
const nx_args_builder nx_args_conv_attrs_out_shape = {
    "conv attrs + out_shape", "_get_conv_attrs_with_out_shape", get_conv_attrs_with_out_shape};
const nx_args_builder nx_args_resize = {"resize args", "_get_resize_args", get_resize_args};
