"""NKI-style kernels written for nxsim's tests (not copies of public
samples): one per group of the surface docs/parts/nki.md lists. The tests
in test_nki.py run each on both backends against NumPy."""
import numpy as np

import nxsim.nki as nki
import nxsim.nki.isa as nisa
import nxsim.nki.language as nl


@nki.jit
def add_rows(a, b):
    """Launch grid: program p adds rows [128 p, 128 p + 128)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    p = nl.program_id(0)
    i_p, i_f = nl.mgrid[0:128, 0:a.shape[1]]
    x = nl.load(a[p * 128 + i_p, i_f])
    y = nl.load(b[p * 128 + i_p, i_f])
    nl.store(out[p * 128 + i_p, i_f], x + y)
    return out


@nki.jit
def elementwise(a, s):
    """exp, scalar ops, maximum, a per-partition [P, 1] operand, negative."""
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    col = nl.load(s)  # [128, 1]
    e = nl.exp(x)
    t = nl.maximum(e * 0.5, x)
    u = nl.subtract(t, col)
    v = nl.negative(u) + 1.0
    nl.store(out, v)
    return out


@nki.jit
def ragged_copy(a):
    """Row tiles of 128 with mask= on the ragged last tile; slices and nl.ds."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + 127) // 128):
        x = nl.load(a[t * 128 + i_p, i_f], mask=(t * 128 + i_p < rows))
        y = nl.multiply(x, 3.0, mask=(t * 128 + i_p < rows))
        nl.store(out[t * 128 + i_p, i_f], value=y, mask=(t * 128 + i_p < rows))
    return out


@nki.jit
def tiled_matmul(lhsT, rhs):
    """out[M, N] = lhsT.T @ rhs, K accumulated in PSUM (+=), M, N tiled."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nisa.nc_matmul(a, b)
            res = nl.copy(acc, dtype=nl.float32)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out


@nki.jit
def matmul_forms(x, y):
    """nl.matmul without transpose_x (x is [M, K]): a PE transpose first."""
    out = nl.ndarray((x.shape[0], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    yt = nl.load(y)
    r = nl.matmul(xt, yt)
    nl.store(out, r)
    return out


@nki.jit
def transposes(a, s):
    """PE transpose of a [128, 64] tile and DVE transpose of a 32 x 32 one."""
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    out_s = nl.ndarray((32, 32), dtype=s.dtype, buffer=nl.shared_hbm)
    t = nl.transpose(nl.load(a))
    nl.store(out, t)
    u = nisa.nc_transpose(nl.load(s), engine=nisa.vector_engine)
    nl.store(out_s, u)
    return out, out_s


@nki.jit
def reductions(a):
    """sum and max over the free axis, keepdims, and a 3-D reduce of the middle axis."""
    P, F = a.shape
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(s, nl.sum(x, axis=1, keepdims=True))
    nl.store(m, nl.max(x, axis=[1], keepdims=True))
    x3 = nl.load(a.reshape((P, F // 8, 8)))
    nl.store(r, nisa.tensor_reduce(nl.add, x3, axis=1))
    return s, m, r


@nki.jit
def softmax_rows(a):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.softmax(nl.load(a), axis=1))
    return out


@nki.jit
def rmsnorm(a, w):
    """y = x * rsqrt(mean(x^2) + eps) * w: activation with a reduce on ACT."""
    P, F = a.shape
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    wt = nl.load(w)  # [128, F]: the weight row repeated by the caller
    ss = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(op=nl.square, data=x, reduce_op=nl.add, reduce_res=ss)
    ms = nisa.tensor_scalar(ss, nl.multiply, 1.0 / F, op1=nl.add, operand1=1e-6)
    r = nl.rsqrt(ms)
    y = nl.multiply(nl.multiply(x, r), wt)
    nl.store(out, y)
    return out


@nki.jit
def layernorm(a):
    """(x - mean) * rsqrt(var + eps) with bn_stats / bn_aggr."""
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    stats = nisa.bn_stats(x)
    mv = nisa.bn_aggr(stats)
    mean = mv[:, 0:1]
    var = mv[:, 1:2]
    rstd = nl.rsqrt(nl.add(var, 1e-5))
    y = nisa.tensor_scalar(x, nl.subtract, mean, op1=nl.multiply, operand1=rstd)
    nl.store(out, y)
    return out


@nki.jit
def scan(a, b):
    """h[t] = h[t-1] * a[t] + b[t] along each row (a selective-scan step)."""
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    h = nisa.tensor_tensor_scan(nl.load(a), nl.load(b), 0.0, np.multiply, np.add)  # NumPy names of the ops
    nl.store(out, h)
    return out


@nki.jit
def causal(a):
    """Keep x where column <= row, else -inf (affine_select), plus iota."""
    P, F = a.shape
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:P, 0:F]
    x = nl.load(a)
    nl.store(out, nisa.affine_select(i_p - i_f >= 0, x, -float("inf")))
    nl.store(idx, nisa.iota(i_p * F + i_f, dtype=nl.int32))
    return out, idx


@nki.jit
def avgpool(a):
    """2 x 2 average pool of [128, H, W] with mgrid index arithmetic."""
    C, H, W = a.shape
    out = nl.ndarray((C, H // 2, W // 2), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    acc = nl.zeros((C, H // 2, W // 2), dtype=nl.float32)
    i_c, i_h, i_w = nl.mgrid[0:C, 0:H // 2, 0:W // 2]
    for dy in nl.static_range(2):
        for dx in range(2):
            acc[...] = nl.add(acc, x[i_c, 2 * i_h + dy, 2 * i_w + dx])
    nl.store(out, nl.multiply(acc, 0.25))
    return out


@nki.jit
def blocked_matmul(lhsT, rhs):
    """The tutorial's next step: a column of K tiles loaded once into a
    block tile (K // 128, par_dim(128), 128) and reused for every N tile."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    KT = K // 128
    for m in nl.affine_range(M // 128):
        a = nl.ndarray((KT, nl.par_dim(128), 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            a[k] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(a[k], b, transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=acc)
    return out


@nki.jit
def causal_attention(qT, kT, v):
    """softmax(mask(q k^T * scale)) v for one 128-row block; qT, kT are
    [d, S] (head dim on partitions), v is [S, d]."""
    d, S = qT.shape
    out = nl.ndarray((S, d), dtype=nl.float32, buffer=nl.shared_hbm)
    q = nl.load(qT)
    k = nl.load(kT)
    vt = nl.load(v)
    scores = nisa.nc_matmul(q, k)  # [S, S] = q k^T in PSUM
    s = nl.multiply(scores, 1.0 / float(d) ** 0.5)
    i_p, i_f = nl.mgrid[0:S, 0:S]
    masked = nisa.affine_select(i_p - i_f >= 0, s, -1e30)
    m = nl.max(masked, axis=1, keepdims=True)
    negm = nl.multiply(m, -1.0)
    rowsum = nl.ndarray((S, 1), dtype=nl.float32, buffer=nl.sbuf)
    p = nisa.activation(op=nl.exp, data=masked, bias=negm, reduce_op=nl.add, reduce_res=rowsum)
    pT = nl.copy(nl.transpose(p))  # [S(keys), S(queries)] for the second matmul
    o = nisa.nc_matmul(pT, vt)  # [S, d] = p v
    nl.store(out, nl.divide(o, rowsum))
    return out


@nki.jit
def into_output_argument(a, result):
    """The older style: the result tensor is a parameter the kernel stores into."""
    x = nl.load(a)
    nl.store(result, nl.where(nl.greater(x, 0.0), x, nl.multiply(x, 0.1)))


@nki.jit
def rmsnorm_bcast(a, g):
    """RMSNorm with the weight as one row [1, F] broadcast to every partition."""
    P, F = a.shape
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    w = nl.load(g.reshape((1, F))).broadcast_to((P, F))
    ms = nl.mean(nl.square(x), axis=[1], keepdims=True)
    y = x * nl.rsqrt(ms + 1e-6) * w
    nl.store(out, y)
    return out


@nki.jit
def avgpool_reduce(a):
    """2 x 2 average pool as one 5-D index of the tile and a sum over two axes."""
    C, H, W = a.shape
    out = nl.ndarray((C, H // 2, W // 2), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    i_c, i_h, i_ph, i_w, i_pw = nl.mgrid[0:C, 0:H // 2, 0:2, 0:W // 2, 0:2]
    s = nl.sum(x[i_c, 2 * i_h + i_ph, 2 * i_w + i_pw], axis=[2, 4])
    nl.store(out, nl.multiply(s, 0.25))
    return out


@nki.jit
def assign_after_read(a):
    """y[...] = v after another instruction read y: v's write must stay after that read."""
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    out2 = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    y = nl.load(a)
    v = nl.multiply(y, 2.0)
    y1 = nl.add(y, 1.0)
    y[...] = v
    nl.store(out, y1)
    nl.store(out2, y)
    return out, out2


@nki.jit
def load_transposed(w):
    """nl.load_transpose2d of a bf16 [64, 128] weight: a [128, 64] tile."""
    out = nl.ndarray((w.shape[1], w.shape[0]), dtype=w.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load_transpose2d(w))
    return out


@nki.jit
def top8(a):
    """The 8 largest values of each row and their positions (max8, nc_find_index8)."""
    vals = nl.ndarray((a.shape[0], 8), dtype=a.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((a.shape[0], 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    x = nl.load(a)
    m = nisa.max8(src=x)
    nl.store(vals, m)
    nl.store(idx, nisa.nc_find_index8(data=x, vals=m))
    return vals, idx


@nki.jit
def printing(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.device_print("x =", x)
    nl.store(out, x)
    return out


@nki.jit
def top16(a):
    """Two rounds of max8 + nc_match_replace8: the 16 largest values per row and their positions."""
    P = a.shape[0]
    vals = nl.ndarray((P, 16), dtype=a.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 16), dtype=nl.uint32, buffer=nl.shared_hbm)
    x = nl.load(a)
    for r in nl.sequential_range(2):
        m = nisa.max8(src=x)
        pos = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.sbuf)
        x = nisa.nc_match_replace8(data=x, vals=m, imm=-float("inf"), dst_idx=pos)
        nl.store(vals[:, r * 8:(r + 1) * 8], m)
        nl.store(idx[:, r * 8:(r + 1) * 8], pos)
    return vals, idx


@nki.jit
def operators(a):
    """Python operators on tiles: comparisons, **, reflected arithmetic, nl.where."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(out, nl.where(x > 0.0, x ** 2.0, 2.0 * x - 1.0))
    return out


@nki.jit
def reuse_sbuf(a):
    """Ten 32 KiB-per-partition tiles in a loop: more than SBUF holds at once,
    fine because each iteration's tiles die when the names are rebound."""
    out = nl.ndarray((10,) + a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(10):
        x = nl.load(a)
        y = nl.add(x, float(i))
        nl.store(out[i], y)
    return out


@nki.jit
def add_2d_grid(a, b):
    """A 2-D launch grid: program (x, y) adds tile (x, y) of 128 x 256."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x, y = nl.program_id(0), nl.program_id(1)
    assert nl.num_programs(1) == a.shape[1] // 256 and nl.program_ndim() == 2
    ix = x * 128 + nl.arange(128)[:, None]
    iy = y * 256 + nl.arange(256)[None, :]
    nl.store(out[ix, iy], value=nl.load(a[ix, iy]) - nl.load(b[ix, iy]))
    return out


@nki.jit
def zeros_then_touched(lhsT, rhs):
    """nl.zeros in PSUM, then a write into half of it before the matmul
    accumulates: the zeros must stay (not folded into the matmul)."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    acc[:, 0:256] = nisa.nc_matmul(nl.load(lhsT), nl.load(rhs[:, 0:256]))
    acc += nisa.nc_matmul(nl.load(lhsT), nl.load(rhs))
    nl.store(out, value=nl.copy(acc))
    return out


@nki.jit
def copy_tiles(a, b):
    """a [128, 128] and b [4, 4096]: one nl.load each, stored back."""
    oa = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ob = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.shared_hbm)
    nl.store(oa, value=nl.load(a))
    nl.store(ob, value=nl.load(b))
    return oa, ob


@nki.jit
def big_tile_per_iteration(a):
    """A tile too big for two copies allocated inside a loop: the second
    iteration's takes the first's buffer (its name is rebound right after)."""
    out = nl.ndarray((2, 128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        big = nl.zeros((2, nl.par_dim(128), 15360), dtype=nl.float32, buffer=nl.sbuf)  # 120 KiB
        big[1, :, 0:512] = nl.add(nl.load(a), float(i + 1))
        nl.store(out[i], value=big[1, :, 0:512])
    return out



@nki.jit
def across_partitions(a):
    """Sums and maxima over the partitions: nisa.partition_all_reduce (on
    every partition) and nisa.tensor_partition_reduce (one row)."""
    P, F = a.shape
    s_all = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    m_one = nl.ndarray((1, F), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(s_all, nisa.partition_all_reduce(np.add, x))
    nl.store(m_one, nisa.tensor_partition_reduce(np.maximum, x))
    return s_all, m_one


@nki.jit
def truth_reductions(a):
    """nl.all and nl.any over the free axis (keepdims)."""
    P = a.shape[0]
    every = nl.ndarray((P, 1), dtype=nl.uint8, buffer=nl.shared_hbm)
    some = nl.ndarray((P, 1), dtype=nl.uint8, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(every, nl.all(x, axis=1, keepdims=True))
    nl.store(some, nl.any(x, axis=1, keepdims=True))
    return every, some


@nki.jit
def dma_transposed(w):
    """nisa.dma_transpose of a bf16 HBM region, then of the SBUF tile back."""
    t_out = nl.ndarray((w.shape[1], w.shape[0]), dtype=w.dtype, buffer=nl.shared_hbm)
    back = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.shared_hbm)
    t = nisa.dma_transpose(w)
    nl.store(t_out, t)
    nl.store(back, nisa.dma_transpose(t))
    return t_out, back


@nki.jit
def dst_forms(lhsT, rhs, a):
    """The newer package's dst= calls: DMA, a K loop of nc_matmul(dst=psum)
    accumulating, the positional nc_matmul(psum, stationary, moving) and
    tensor_copy(dst, src), tensor_tensor / activation / memset into dst."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    prod = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    first = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ew = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        st = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        mv = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=st, src=lhsT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=mv, src=rhs[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=st, moving=mv)
    sb = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(sb, acc)
    nisa.dma_copy(dst=prod, src=sb)
    # one K chunk alone, positional: overwrites a fresh PSUM tile
    st0 = nl.load(lhsT[0:128, :])
    mv0 = nl.load(rhs[0:128, :])
    one = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(one, st0, mv0)
    sb1 = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sb1, src=one)
    nisa.dma_copy(dst=first, src=sb1)
    x = nl.load(a)
    e = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=x, scale=0.5)
    two = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=two, value=2.0)
    s = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=s, data1=e, data2=two, op=nl.multiply)
    r = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=r, data=s)
    nisa.tensor_tensor(dst=s, data1=s, data2=r, op=nl.add)
    nisa.dma_copy(dst=ew, src=s)
    return prod, first, ew


@nki.jit
def bn_stats_ragged(a):
    """bn_stats per 512-column chunk with mask= on the ragged last chunk (the
    NKI layernorm tutorial's form), bn_aggr into (mean, var)."""
    P, F = a.shape
    mv_out = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    n = (F + 511) // 512
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(512)[None, :]
    i_s = nl.arange(6)[None, :]
    st = nl.ndarray((P, 6 * n), dtype=nl.float32)
    for j in nl.affine_range(n):
        st[i_p, j * 6 + i_s] = nisa.bn_stats(x[i_p, j * 512 + i_f], mask=(j * 512 + i_f < F), dtype=nl.float32)
    nl.store(mv_out, nisa.bn_aggr(st))
    return mv_out


@nki.jit
def _scale_into(x, out_tile, j):
    """A jitted helper another kernel calls: it runs inline on the caller's
    tiles and writes block j of out_tile."""
    out_tile[j, :, :] = x * float(j + 1)


@nki.jit
def calls_a_jitted_helper(a):
    """Two calls of a jitted helper into the blocks of one SBUF tile, then the
    last column of the second block kept as a [P, 1] column
    (col[...] = t[0:P, F - 1] assigns a [P] slice to a [P, 1] tile)."""
    P, F = a.shape
    out = nl.ndarray((2, P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    last = nl.ndarray((P, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    t = nl.ndarray([2, nl.par_dim(P), F], dtype=a.dtype, buffer=nl.sbuf)
    _scale_into(x, t, 0)
    _scale_into(x, t, 1)
    col = nl.zeros((P, 1), dtype=a.dtype)
    col[...] = t[1, 0:P, F - 1]
    nl.store(out[0], t[0, :, :])
    nl.store(out[1], t[1, :, :])
    nl.store(last, col)
    return out, last


@nki.jit
def scores_masked(q, k):
    """fp32 q and k loaded transposed as bf16 (load_transpose2d through the
    PE), their product in PSUM masked causally by affine_select (its PSUM
    input copied to SBUF first), the row max by tensor_reduce(np.max)."""
    S, D = q.shape
    masked = nl.ndarray((S, S), dtype=nl.float32, buffer=nl.shared_hbm)
    rowmax = nl.ndarray((S, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_s, i_d = nl.mgrid[0:S, 0:D]
    qT = nl.load_transpose2d(q[i_s, i_d], dtype=nl.bfloat16)
    kT = nl.load_transpose2d(k[i_s, i_d], dtype=nl.bfloat16)
    ps = nl.zeros((S, S), dtype=nl.float32, buffer=nl.psum)
    ps += nisa.nc_matmul(stationary=qT, moving=kT)
    ip, jf = nl.mgrid[0:S, 0:S]
    m = nisa.affine_select(pred=(ip >= jf), on_true_tile=ps[ip, jf], on_false_value=-9984.0, dtype=nl.float32)
    nl.store(masked, m)
    nl.store(rowmax, nisa.tensor_reduce(np.max, data=m, axis=(1,), keepdims=True))
    return masked, rowmax


@nki.jit(mode="trace")
def _fold_max(m_col, v_col):
    """A traced helper on [P] columns of the caller's tiles (t[:, j]): each
    indexed [:, 0] again, as [P, 1] (read, then written)."""
    old = nl.copy(m_col[:, 0])
    m_col[:, 0] = nl.maximum(old, v_col[:, 0])


@nki.jit(mode="trace")
def _fold_lse(l_col, m, total):
    """l = m + log(exp(l - m) + total): from the fp32.min start exp(l - m)
    is 0 and l becomes m + log(total)."""
    decay = nisa.activation(np.exp, m, bias=l_col[:, 0], scale=-1.0)
    l_col[:, 0] = nl.add(m, nisa.activation(nl.log, decay, bias=total))


@nki.jit
def block_row_stats(x):
    """Per-row statistics of x [P, n * 512] block by block: each block's max
    into column j of a [P, n] tile (a [P, 1] result into the [P] view
    t[:, j]), the running max and log-sum-exp started from nl.fp32.min and
    folded by helpers on [P] columns, exp(x - max) in bf16 with each block's
    row sum into column j of another tile (activation_reduce with reduce_res
    a slice)."""
    P, W = x.shape
    F = 512
    n = W // F
    maxes = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.shared_hbm)
    stats = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    e_out = nl.ndarray((P, W), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    sums_out = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    bmax = nl.ndarray((nl.par_dim(P), n), dtype=nl.float32)
    for j in nl.affine_range(n):
        bmax[:, j] = nisa.tensor_reduce(np.max, t[:, nl.ds(j * F, F)], axis=(1,), dtype=nl.float32)
    run = nl.full((nl.par_dim(P), 2), fill_value=nl.fp32.min, dtype=nl.float32)  # [max, log-sum-exp]
    for j in nl.sequential_range(n):
        _fold_max(run[:, 0], bmax[:, j])
    m = run[:, 0]
    sums = nl.ndarray((nl.par_dim(P), n), dtype=nl.float32)
    e = nl.ndarray((nl.par_dim(P), W), dtype=nl.bfloat16)
    for j in nl.affine_range(n):
        e[:, nl.ds(j * F, F)] = nisa.activation_reduce(np.exp, t[:, nl.ds(j * F, F)], bias=-1 * m, scale=1.0,
                                                       reduce_op=nl.add, reduce_res=sums[:, j],
                                                       dtype=nl.bfloat16)
    total = nl.sum(sums, axis=1, dtype=nl.float32)
    _fold_lse(run[:, 1], m, total)
    nl.store(maxes, bmax)
    nl.store(stats, run)
    nl.store(e_out, e)
    nl.store(sums_out, sums)
    return maxes, stats, e_out, sums_out


@nki.jit
def bool_masked_blocks(a, b):
    """Products a.T @ b block by block written into PSUM slices (ps[:, :] =
    nl.matmul(...)), one block zeroed (ps[:, :] = 0) instead; masks given as
    Python bools choose per block what is written: even blocks get ps + 1,
    odd ones -ps, and a result computed under mask=False and assigned
    writes nothing; a dst= call under mask=False leaves its dst as it was. Then the sum of the blocks' products in a lazily
    initialised PSUM accumulator."""
    K, M = a.shape
    _, N = b.shape
    F = 128
    n = N // F
    res_out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc_out = nl.ndarray((M, F), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    kept_out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.zeros((nl.par_dim(M), N), dtype=nl.float32)
    kept_all = nl.zeros((nl.par_dim(M), N), dtype=nl.float32)
    for j in nl.affine_range(n):
        ps = nl.ndarray((nl.par_dim(M), F), dtype=nl.float32, buffer=nl.psum)
        if j != 2:
            ps[:, :] = nl.matmul(at, bt[:, nl.ds(j * F, F)], transpose_x=True)
        else:
            ps[:, :] = 0
        even = j % 2 == 0
        res[:, nl.ds(j * F, F)] = nl.add(ps, 1.0, mask=even)
        res[:, nl.ds(j * F, F)] = nl.multiply(ps, -1.0, mask=not even)
        unused = nl.exp(ps, mask=False)
        res[:, nl.ds(j * F, F)] = unused
        kept = nl.full((nl.par_dim(M), F), fill_value=2.0, dtype=nl.float32)
        nisa.activation(op=nl.exp, data=ps, dst=kept, mask=False)  # a dst= form: kept keeps its 2.0
        kept_all[:, nl.ds(j * F, F)] = kept
    acc = nl.zeros((nl.par_dim(M), F), dtype=nl.float32, buffer=nl.psum, lazy_initialization=True)
    for j in nl.affine_range(n):
        acc[:, :] += nl.matmul(at, bt[:, nl.ds(j * F, F)], transpose_x=True)
    nl.store(res_out, res)
    nl.store(acc_out, acc)
    nl.store(kept_out, kept_all)
    return res_out, acc_out, kept_out


@nki.jit(mode="trace")
def nc_generation(a):
    """nisa.get_nc_version() of the machine traced for, as a value; and an
    element of a 1-D tensor loaded as a [1, 1] tile (a[2]) plus it."""
    out = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.shared_hbm)
    g = nisa.get_nc_version()
    newer = 1 if g >= nisa.nc_version.gen3 else 0
    t = nl.full((1, 2), fill_value=int(g) * 10 + newer, dtype=nl.int32)
    t[0:1, 1:2] = nl.add(nl.load(a[2]), int(g), dtype=nl.int32)
    nl.store(out, t)
    return out


@nki.jit
def uses_random_seed(a):
    """Seeds the engines' random number generator (refused: nxsim does not
    model its stream)."""
    out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    s = nl.load(a[0])
    nl.random_seed(seed=s)
    nl.store(out, s)
    return out


@nki.jit(mode="trace")
def _attend_block(q_t, k_blk, v_blk, o_acc, m_col, l_col, q0, k0):
    """One K block of an online (streaming) causal softmax for the 128
    queries from q0: scores into a PSUM view, masked by affine_select only
    on a block the diagonal crosses (masks as Python bools), the running max
    m and row sum l updated through [P] columns, exp with the block's row
    sum into a reduce_res view, P^T V accumulated in lazily zeroed PSUM."""
    P = q_t.shape[1]
    B = k_blk.shape[1]
    D = v_blk.shape[2]
    s_ps = nl.ndarray((nl.par_dim(P), B), dtype=nl.float32, buffer=nl.psum)
    s_ps[:, :] = nl.matmul(q_t, k_blk, transpose_x=True)
    crosses = q0 < k0 + B and k0 < q0 + P
    s = nl.ndarray((nl.par_dim(P), B), dtype=nl.float32)
    i_q, i_k = nl.mgrid[0:P, 0:B]
    s[...] = nisa.affine_select(pred=(q0 + i_q >= k0 + i_k), on_true_tile=s_ps, on_false_value=nl.fp32.min,
                                dtype=nl.float32, mask=crosses)
    s[...] = nl.copy(s_ps, dtype=nl.float32, mask=not crosses)
    m_old = nl.copy(m_col[:, 0])
    m_col[:, 0] = nl.maximum(m_old, nisa.tensor_reduce(np.max, s, axis=(1,)))
    alpha = nisa.activation(np.exp, m_col[:, 0], bias=m_old, scale=-1.0)
    p = nl.ndarray((nl.par_dim(P), B), dtype=nl.float32)
    rows = nl.ndarray((nl.par_dim(P), 2), dtype=nl.float32)
    p[...] = nisa.activation_reduce(np.exp, s, bias=-1 * m_col[:, 0], scale=1.0, reduce_op=nl.add,
                                    reduce_res=rows[:, 1])
    l_col[:, 0] = nl.add(nl.multiply(l_col[:, 0], alpha), rows[:, 1])
    pv = nl.zeros((nl.par_dim(P), D), dtype=nl.float32, buffer=nl.psum, lazy_initialization=True)
    for c in nl.affine_range(B // 128):
        p_t = nl.copy(nisa.nc_transpose(p[:, nl.ds(c * 128, 128)]), dtype=nl.float32)
        pv[:, :] += nl.matmul(p_t, v_blk[c], transpose_x=True)
    o_acc[:, :] = nl.add(nl.multiply(o_acc[:, :], alpha), pv)


@nki.jit
def streaming_causal_attention(q_t, k_t, v):
    """softmax(q k^T) v, causal, fp32, q_t and k_t [D, S], v [S, D]: 128
    queries at a time against K blocks of 256 (blocks wholly above the
    diagonal skipped), the accumulators [P, 1] columns of [P, n] tiles
    started from nl.fp32.min and 0."""
    D, S = q_t.shape
    P, B = 128, 256
    out = nl.ndarray((S, D), dtype=nl.float32, buffer=nl.shared_hbm)
    n = S // P
    m_all = nl.full((nl.par_dim(P), n), fill_value=nl.fp32.min, dtype=nl.float32)
    l_all = nl.zeros((nl.par_dim(P), n), dtype=nl.float32, lazy_initialization=False)
    for i in nl.affine_range(n):
        q_t_i = nl.load(q_t[:, nl.ds(i * P, P)])
        o_acc = nl.zeros((nl.par_dim(P), D), dtype=nl.float32)
        for j in nl.sequential_range(S // B):
            if j * B >= (i + 1) * P:
                continue
            k_blk = nl.load(k_t[:, nl.ds(j * B, B)])
            v_blk = nl.ndarray((B // 128, nl.par_dim(128), D), dtype=nl.float32)
            for c in nl.affine_range(B // 128):
                v_blk[c, :, :] = nl.load(v[nl.ds(j * B + c * 128, 128), :])
            _attend_block(q_t_i, k_blk, v_blk, o_acc, m_all[:, i], l_all[:, i], i * P, j * B)
        inv = nl.divide(1.0, l_all[:, i])
        nl.store(out[nl.ds(i * P, P), :], nl.multiply(o_acc, inv))
    return out
