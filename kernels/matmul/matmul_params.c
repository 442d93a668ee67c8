/* matmul's operand rules (kernels/matmul/matmul.h): numpy.matmul's
 * promotion and broadcasting. */
#include <stdio.h>
#include <string.h>

#include "matmul.h"

int nx_matmul_read(const nx_norm_tensor *in, uint32_t n_in, nx_matmul_params *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    if (n_in != 2) return nx_fail(err, "matmul takes 2 operands (A, B), the op has %u", n_in);
    const nx_norm_tensor *a = &in[0], *b = &in[1];
    if (nx_norm_float_operand(a, 0, "matmul", err) != 0 || nx_norm_float_operand(b, 1, "matmul", err) != 0) return -1;
    if (b->dtype != a->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from operand 0 (%s)'s %s", b->name,
                       nx_dtype_name(b->dtype), a->name, nx_dtype_name(a->dtype));
    p->dtype = a->dtype;
    uint32_t an = a->ndims, bn = b->ndims;
    uint64_t as[NX_KERNEL_MAX_DIMS + 1], bs[NX_KERNEL_MAX_DIMS + 1];
    memcpy(as, a->shape, an * sizeof *as);
    memcpy(bs, b->shape, bn * sizeof *bs);
    int a1 = an == 1, b1 = bn == 1;
    if (a1) as[1] = as[0], as[0] = 1, an = 2;
    if (b1) bs[1] = 1, bn = 2;
    p->M = as[an - 2], p->K = as[an - 1], p->N = bs[bn - 1];
    if (bs[bn - 2] != p->K)
        return nx_fail(err, "operand 1 (%s): K = %llu differs from operand 0 (%s)'s K = %llu (A [..., M, K] @ B [..., K, N])",
                       b->name, (unsigned long long)bs[bn - 2], a->name, (unsigned long long)p->K);
    uint32_t na = an - 2, nb = bn - 2, nd = na > nb ? na : nb;
    p->batch_ndims = nd;
    p->batches = 1;
    uint64_t ast = 1, bst = 1; /* matrix strides, innermost batch dim first */
    for (uint32_t i = 0; i < nd; i++) {
        uint32_t d = nd - 1 - i;
        uint64_t da = i < na ? as[na - 1 - i] : 1, db = i < nb ? bs[nb - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            return nx_fail(err, "operand 1 (%s): batch dim %u (%llu) does not broadcast with operand 0 (%s)'s (%llu)",
                           b->name, d, (unsigned long long)db, a->name, (unsigned long long)da);
        p->batch[d] = da > db ? da : db;
        p->a_stride[d] = da == 1 ? 0 : ast;
        p->b_stride[d] = db == 1 ? 0 : bst;
        ast *= da, bst *= db;
        p->batches *= p->batch[d];
    }
    uint32_t o = 0;
    for (uint32_t d = 0; d < nd; d++) p->out_shape[o++] = p->batch[d];
    if (!a1) p->out_shape[o++] = p->M;
    if (!b1) p->out_shape[o++] = p->N;
    /* o == 0 (1-D @ 1-D): numpy's 0-d scalar (the program holds it as one element) */
    p->out_ndims = o;
    if (p->K > INT32_MAX || p->N > INT32_MAX)
        return nx_fail(err, "operand 0 (%s): rows beyond a 32-bit access-pattern pitch", a->name);
    return 0;
}

static uint64_t index_of(const nx_matmul_params *p, const uint64_t *stride, uint64_t i) {
    uint64_t at = 0;
    for (uint32_t d = p->batch_ndims; d-- > 0;) {
        at += (i % p->batch[d]) * stride[d];
        i /= p->batch[d];
    }
    return at;
}

uint64_t nx_matmul_a_index(const nx_matmul_params *p, uint64_t i) { return index_of(p, p->a_stride, i); }
uint64_t nx_matmul_b_index(const nx_matmul_params *p, uint64_t i) { return index_of(p, p->b_stride, i); }
