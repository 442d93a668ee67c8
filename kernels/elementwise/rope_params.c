/* rope's operand and attribute rules (kernels/elementwise/elementwise.h),
 * shared by the rules and the kernel. */
#include <stdio.h>
#include <string.h>

#include "elementwise.h"

const char *const nx_rope_attrs[] = {"layout", NULL};

#define ROPE_D_MAX 256

static int read_layout(const nx_attrs *attrs, int *interleaved, nx_error *err) {
    *interleaved = 0;
    for (uint32_t i = 0; attrs && i < attrs->count; i++) {
        const nx_attr *a = &attrs->items[i];
        if (strcmp(a->name, "layout") != 0) continue;
        if (a->value.kind == NX_VAL_STRING && strcmp(a->value.s, "half") == 0) return 0;
        if (a->value.kind == NX_VAL_STRING && strcmp(a->value.s, "interleaved") == 0) {
            *interleaved = 1;
            return 0;
        }
        if (a->value.kind == NX_VAL_STRING) {
            nx_quoted q;
            return nx_fail(err, "attribute layout: '%s' is not one of half, interleaved", nx_quote(&q, a->value.s, 64));
        }
        return nx_fail(err, "attribute layout: must be a string, one of half, interleaved");
    }
    return 0;
}

int nx_rope_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_rope_params *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    if (read_layout(attrs, &p->interleaved, err) != 0) return -1;
    if (n_in != 3) return nx_fail(err, "rope takes 3 operands (x, cos, sin), the op has %u", n_in);
    for (uint32_t i = 0; i < 3; i++)
        if (nx_norm_float_operand(&in[i], i, "rope", err) != 0) return -1;
    const nx_norm_tensor *x = &in[0], *c = &in[1], *s = &in[2];
    if (x->ndims != 4) return nx_fail(err, "operand 0 (%s): rank %u, rope takes x [B, n_heads, S, D]", x->name, x->ndims);
    p->B = x->shape[0], p->H = x->shape[1], p->S = x->shape[2], p->D = x->shape[3];
    if (p->D % 2) return nx_fail(err, "operand 0 (%s): D = %llu must be even", x->name, (unsigned long long)p->D);
    if (p->D > ROPE_D_MAX)
        return nx_fail(err, "operand 0 (%s): D = %llu beyond %d", x->name, (unsigned long long)p->D, ROPE_D_MAX);
    p->dtype = x->dtype;
    p->cs_dtype = c->dtype;
    p->cs_batched = c->ndims == 3;
    int ok = (c->ndims == 2 && c->shape[0] == p->S && c->shape[1] == p->D / 2) ||
             (c->ndims == 3 && c->shape[0] == p->B && c->shape[1] == p->S && c->shape[2] == p->D / 2);
    if (!ok)
        return nx_fail(err, "operand 1 (%s): cos must be [%llu, %llu] or [%llu, %llu, %llu] ([S, D/2] or [B, S, D/2])",
                       c->name, (unsigned long long)p->S, (unsigned long long)(p->D / 2), (unsigned long long)p->B,
                       (unsigned long long)p->S, (unsigned long long)(p->D / 2));
    if (s->ndims != c->ndims || memcmp(s->shape, c->shape, c->ndims * sizeof *c->shape) != 0 || s->dtype != c->dtype)
        return nx_fail(err, "operand 2 (%s): sin must have cos's shape and dtype", s->name);
    return 0;
}
