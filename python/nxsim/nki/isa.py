"""nxsim.nki.isa: the nki.isa instructions nxsim traces, each onto the nxsim
instruction that does the same work on the same engine (docs/parts/nki.md
has the table). Others are refused by name (module __getattr__)."""
import enum
import inspect
import numbers

from . import _emit
from . import language as nl
from ._dtype import dtype_of, float32
from ._errors import refuse, user_error
from ._index import Predicate
from ._tensor import AP, Tile, finalize, read
from ._trace import trace


class engine:
    """nki.isa engine names (the engine= argument)."""
    tensor = "pe"
    vector = "dve"
    scalar = "act"
    gpsimd = "pool"
    sync = "sp"
    unknown = None


class nc_version(enum.IntEnum):
    """nki.isa.nc_version: the NeuronCore generation of a target (gen2:
    Trn1/Inf2, gen3: Trn2, gen4: Trn3); kernels compare them
    (get_nc_version() >= nc_version.gen3)."""
    gen2 = 2
    gen3 = 3
    gen4 = 4


# the NeuronCore generation of each machine preset (docs/parts/nki.md):
# trn1 models NeuronCore-v2, trn2 NeuronCore-v3
_NC_VERSION = {"trn1": nc_version.gen2, "trn2": nc_version.gen3}


def get_nc_version():
    """The nc_version of the machine the kernel is traced for; a machine
    file that is not one of the presets has no known generation: refused."""
    m = trace().machine
    if m not in _NC_VERSION:
        refuse("nisa.get_nc_version on machine %r (nxsim knows the generation of the presets %s only)"
               % (m, ", ".join(sorted(_NC_VERSION))))
    return _NC_VERSION[m]


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


def _alu(op, what):
    a = nl._ALU.get(op)
    if a is None:
        if op is nl.negative:
            refuse("%s with op=nl.negative" % what)
        user_error("%s: op must be an nl arithmetic function (nl.add, nl.multiply, nl.maximum, ...), got %r"
                   % (what, getattr(op, "__name__", op)))
    return a


def _engine(e, allowed, default, what):
    if e is None:
        return default
    if e not in allowed:
        user_error("%s cannot run on engine %s (allowed: %s)" % (what, e, ", ".join(allowed)))
    return e


# ---- Tensor Engine ----
def nc_matmul(stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              tile_position=(), tile_size=(), mask=None, **kwargs):
    """load_stationary + multiply_moving on PE: stationary.T @ moving into a PSUM tile."""
    if is_transpose:
        refuse("nisa.nc_matmul(is_transpose=True)")
    if mask is not None:
        refuse("nisa.nc_matmul with mask= (slice the operands instead)")
    if tile_position or tile_size:
        refuse("nisa.nc_matmul tile_position / tile_size (PE tiling)")
    s = read(_emit.on_chip(stationary, "nisa.nc_matmul stationary"))
    m = read(_emit.on_chip(moving, "nisa.nc_matmul moving"))
    for x, name in ((s, "stationary"), (m, "moving")):
        if x.mem != "sbuf":
            user_error("nisa.nc_matmul: %s is in %s; the Tensor Engine reads SBUF" % (name, x.mem))
        if x.ndim != 2:
            user_error("nisa.nc_matmul: %s must be a 2-D tile, got %s" % (name, list(x.shape)))
    k, mm = s.shape
    k2, n = m.shape
    if k != k2:
        user_error("nisa.nc_matmul: the partition (contraction) sizes differ: stationary %s, moving %s"
                   % (list(s.shape), list(m.shape)))
    g = trace().geo
    if mm > g["pe_cols"]:
        user_error("nisa.nc_matmul: stationary free size %d exceeds %d (nl.tile_size.gemm_stationary_fmax)"
                   % (mm, g["pe_cols"]))
    if n > g["pe_moving_free_max"]:
        user_error("nisa.nc_matmul: moving free size %d exceeds %d (nl.tile_size.gemm_moving_fmax)"
                   % (n, g["pe_moving_free_max"]))
    dst = _emit.new_tile(nl.psum, float32, (mm, n), "nisa.nc_matmul result")
    _emit.compute("pe", "load_stationary", None, [("src", s)])
    return _emit.produced(dst, _emit.compute("pe", "multiply_moving", dst, [("moving", m)]), None)


def nc_transpose(data, engine=None, mask=None, dtype=None, **kwargs):
    """PE transpose into PSUM, or DVE's 32 x 32 block transpose in SBUF."""
    if mask is not None:
        refuse("nisa.nc_transpose with mask= (slice the operand instead)")
    a = read(_emit.on_chip(data, "nisa.nc_transpose"))
    if a.ndim != 2:
        user_error("nisa.nc_transpose: expected a 2-D tile, got %s" % (list(a.shape),))
    p, f = a.shape
    lim = trace().geo["dve_transpose_max"]
    if engine is None:
        engine = "dve" if p <= lim and f <= lim else "pe"
    e = _engine(engine, ("pe", "dve"), "pe", "nisa.nc_transpose")
    if e == "dve" and (p > lim or f > lim):
        user_error("nisa.nc_transpose on the Vector Engine: %d x %d exceeds its %d x %d block" % (p, f, lim, lim))
    if e == "pe" and a.mem != "sbuf":
        user_error("nisa.nc_transpose on the Tensor Engine reads SBUF; the tile is in %s" % a.mem)
    dst = _emit.new_tile(nl.psum if e == "pe" else nl.sbuf, dtype_of(dtype) if dtype else a.dtype, (f, p),
                         "nisa.nc_transpose result")
    insn = _emit.compute(e, "transpose", dst, [("src", a)], mask=mask)
    return _emit.produced(dst, insn, mask)


# ---- Vector / Scalar / GpSimd engines ----
def activation(op, data, bias=None, scale=1.0, mask=None, dtype=None, reduce_op=None, reduce_res=None, **kwargs):
    func = nl._ACT.get(op)
    if func is None:
        user_error("nisa.activation: op must be an nl activation function (nl.exp, nl.tanh, ...), got %r"
                   % (getattr(op, "__name__", op),))
    return nl.activate(func, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                       dtype=dtype, mask=mask, what="nisa.activation")


def activation_reduce(op, data, reduce_op, reduce_res, bias=None, scale=1.0, mask=None, dtype=None, **kwargs):
    return activation(op, data, bias=bias, scale=scale, mask=mask, dtype=dtype, reduce_op=reduce_op,
                      reduce_res=reduce_res)


def tensor_tensor(data1, data2, op, engine=None, dtype=None, mask=None, **kwargs):
    e = _engine(engine, ("dve", "pool"), "dve", "nisa.tensor_tensor")
    return nl._binary(_alu(op, "nisa.tensor_tensor"), data1, data2, dtype=dtype, mask=mask, engine=e,
                      what="tensor_tensor")


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, engine=None,
                  dtype=None, mask=None, **kwargs):
    e = _engine(engine, ("dve", "pool"), "dve", "nisa.tensor_scalar")
    a = read(_emit.on_chip(data, "nisa.tensor_scalar"))
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "nisa.tensor_scalar result")
    ins = [("in", a), ("scalar0", _emit.scalar_operand(operand0, a, "nisa.tensor_scalar operand0"))]
    params = [("op0", _alu(op0, "nisa.tensor_scalar op0"))] + ([("rev0", "1")] if reverse0 else [])
    if op1 is not None:
        ins.append(("scalar1", _emit.scalar_operand(operand1, a, "nisa.tensor_scalar operand1")))
        params += [("op1", _alu(op1, "nisa.tensor_scalar op1"))] + ([("rev1", "1")] if reverse1 else [])
    insn = _emit.compute(e, "tensor_scalar", dst, ins, params, mask)
    return _emit.produced(dst, insn, mask)


def scalar_tensor_tensor(data, op0, operand0, op1, operand1, reverse0=False, engine=None, dtype=None, mask=None,
                         **kwargs):
    e = _engine(engine, ("dve", "pool"), "dve", "nisa.scalar_tensor_tensor")
    a = read(_emit.on_chip(data, "nisa.scalar_tensor_tensor"))
    b = read(_emit.on_chip(operand1, "nisa.scalar_tensor_tensor operand1"))
    if a.shape != b.shape:
        user_error("nisa.scalar_tensor_tensor: data %s and operand1 %s differ" % (list(a.shape), list(b.shape)))
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "nisa.scalar_tensor_tensor result")
    ins = [("in0", a), ("scalar", _emit.scalar_operand(operand0, a, "nisa.scalar_tensor_tensor operand0")),
           ("in1", b)]
    params = [("op0", _alu(op0, "op0")), ("op1", _alu(op1, "op1"))] + ([("rev0", "1")] if reverse0 else [])
    insn = _emit.compute(e, "scalar_tensor_tensor", dst, ins, params, mask)
    return _emit.produced(dst, insn, mask)


def tensor_reduce(op, data, axis, negate=False, keepdims=False, dtype=None, mask=None, **kwargs):
    alu = _alu(op, "nisa.tensor_reduce")
    return nl.reduce(alu, data, axis, dtype=dtype, keepdims=keepdims, mask=mask, negate=negate,
                     what="tensor_reduce")


def reciprocal(data, dtype=None, mask=None, **kwargs):
    """nisa.reciprocal (VectorE): 1 / data as tensor_scalar divide with the
    operand first (reverse0), an IEEE division of each element."""
    return nl._binary("divide", 1.0, data, dtype=dtype, mask=mask, engine="dve", what="reciprocal")


def tensor_copy(src, engine=None, dtype=None, mask=None, **kwargs):
    e = _engine(engine, ("dve", "act", "pool"), "dve", "nisa.tensor_copy")
    a = read(_emit.on_chip(src, "nisa.tensor_copy"))
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "nisa.tensor_copy result")
    return _emit.produced(dst, _emit.tensor_copy(dst, a, mask=mask, engine=e), mask)


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, dtype=None, mask=None,
                       **kwargs):
    if reverse0 or reverse1:
        refuse("nisa.tensor_tensor_scan with reverse0/reverse1")
    a = read(_emit.on_chip(data0, "nisa.tensor_tensor_scan data0"))
    b = read(_emit.on_chip(data1, "nisa.tensor_tensor_scan data1"))
    if a.shape != b.shape:
        user_error("nisa.tensor_tensor_scan: data0 %s and data1 %s differ" % (list(a.shape), list(b.shape)))
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "nisa.tensor_tensor_scan result")
    ins = [("in0", a), ("in1", b), ("initial", _emit.scalar_operand(initial, a, "nisa.tensor_tensor_scan initial"))]
    params = [("op0", _alu(op0, "op0")), ("op1", _alu(op1, "op1"))]
    # NKI folds op0(data0, previous); nxsim's scan folds (previous op0 data0): equal for commutative ops
    if params[0][1] not in ("add", "multiply", "max", "min", "bitwise_and", "bitwise_or", "bitwise_xor",
                            "is_equal", "not_equal"):
        refuse("nisa.tensor_tensor_scan with op0=nl.%s (the operand order differs; commutative op0 only)"
               % getattr(op0, "__name__", op0))
    insn = _emit.compute("dve", "tensor_tensor_scan", dst, ins, params, mask)
    return _emit.produced(dst, insn, mask)


def memset(shape, value, dtype, mask=None, engine=None, **kwargs):
    e = _engine(engine, ("dve", "pool"), "dve", "nisa.memset")
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype), tuple(shape), "nisa.memset result")
    return _emit.produced(dst, _emit.memset(dst, value, mask=mask, engine=e), mask)


def iota(expr, dtype, mask=None, **kwargs):
    """POOL's iota: the values of an affine index expression."""
    from ._index import Affine

    shape = expr.shape if isinstance(expr, Affine) else (1, 1)
    if len(shape) == 1:
        shape = (shape[0], 1)
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype), shape, "nisa.iota result")
    pat = _emit.index_pattern(expr, shape, "nisa.iota")
    return _emit.produced(dst, _emit.compute("pool", "iota", dst, [("pattern", pat)], mask=mask), mask)


_CMP = {"<": "is_lt", "<=": "is_le", ">": "is_gt", ">=": "is_ge", "==": "is_equal", "!=": "not_equal"}


def affine_select(pred, on_true_tile, on_false_value, dtype=None, mask=None, **kwargs):
    """POOL's affine_select: on_true where the affine predicate holds, else the value."""
    if not isinstance(pred, Predicate) or len(pred.clauses) != 1:
        user_error("nisa.affine_select: pred must be one comparison of an index expression (e.g. i_p >= i_f)")
    a = read(_emit.on_chip(on_true_tile, "nisa.affine_select"))
    if a.mem != "sbuf":
        # GpSimd reads SBUF only: a PSUM on_true_tile (the SD-attention
        # tutorial masks its QK^T PSUM tile) is copied to SBUF first, in the
        # result dtype, as the NKI compiler does (one DVE tensor_copy)
        a = nl.copy(a, dtype=dtype_of(dtype) if dtype else a.dtype)
    if not isinstance(on_false_value, numbers.Number):
        refuse("nisa.affine_select with a tile as on_false_value")
    (expr, op), = pred.clauses
    pat = _emit.index_pattern(expr, a.shape, "nisa.affine_select")
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "nisa.affine_select result")
    insn = _emit.compute("pool", "affine_select", dst, [("pattern", pat), ("in", a), ("fill", _emit.imm(on_false_value))],
                         [("op0", _CMP[op])], mask)
    return _emit.produced(dst, insn, mask)


def _row_stats(mnemonic, data, width, dtype, mask):
    """bn_stats / bn_aggr: per-partition statistics of data's free elements
    into a [P, width] tile. mask= narrows the input (a ragged last chunk, as
    the NKI layernorm tutorial masks its bn_stats) and the result's
    partitions with it; the result's columns are always all written."""
    a = read(_emit.on_chip(data, "nisa." + mnemonic))
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else float32, (a.shape[0], width),
                         "nisa.%s result" % mnemonic)
    if mask is None:
        return _emit.produced(dst, _emit.compute("dve", mnemonic, dst, [("in", a)]), None)
    narrowed = finalize([a], mask)
    if narrowed is None:
        return dst
    na = narrowed[0]
    d = dst[na.pstart - a.pstart:na.pstart - a.pstart + na.partitions()]
    insn = _emit.compute("dve", mnemonic, d, [("in", na)])
    return _emit.produced(dst, insn, None if na.partitions() == a.partitions() else mask)


def bn_stats(data, dtype=None, mask=None, **kwargs):
    return _row_stats("bn_stats", data, 6, dtype, mask)


def bn_aggr(data, dtype=None, mask=None, **kwargs):
    return _row_stats("bn_aggr", data, 2, dtype, mask)


# ---- across partitions (GpSimd) ----
def partition_all_reduce(op, data, mask=None, dtype=None, **kwargs):
    """partition_all_reduce (POOL): op over the partitions of data, the
    result on every partition (the tile's shape)."""
    a = read(_emit.on_chip(data, "nisa.partition_all_reduce"))
    if a.mem != "sbuf":
        user_error("nisa.partition_all_reduce runs on GpSimd, which reads SBUF only; data is in %s" % a.mem)
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "nisa.partition_all_reduce result")
    insn = _emit.compute("pool", "partition_all_reduce", dst, [("in", a)],
                         [("op0", _alu(op, "nisa.partition_all_reduce"))], mask)
    return _emit.produced(dst, insn, mask)


def tensor_partition_reduce(op, data, mask=None, dtype=None, **kwargs):
    """op over the partitions of data: a [1, ...] tile (partition 0 of the
    POOL partition_all_reduce, which writes the result on every partition)."""
    if mask is not None:
        refuse("nisa.tensor_partition_reduce with mask= (slice the operand instead)")
    full = partition_all_reduce(op, data, dtype=dtype)
    return full[0:1]


# ---- top-k steps (DVE) ----
def max8(src, dtype=None, mask=None, **kwargs):
    """max8 (DVE): the 8 largest values of each partition, descending."""
    a = read(_emit.on_chip(src, "nisa.max8"))
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, (a.shape[0], 8), "nisa.max8 result")
    if mask is not None:
        refuse("nisa.max8 with mask=")
    return _emit.produced(dst, _emit.compute("dve", "max8", dst, [("in", a)]), None)


def nc_find_index8(data, vals, dtype=None, mask=None, **kwargs):
    """find_index8 (DVE): where each of 8 values first occurs (ties: successive occurrences)."""
    a = read(_emit.on_chip(data, "nisa.nc_find_index8 data"))
    v = read(_emit.on_chip(vals, "nisa.nc_find_index8 vals"))
    if mask is not None:
        refuse("nisa.nc_find_index8 with mask=")
    dt = dtype_of(dtype) if dtype else dtype_of("uint32")
    dst = _emit.new_tile(nl.sbuf, dt, (a.shape[0], 8), "nisa.nc_find_index8 result")
    return _emit.produced(dst, _emit.compute("dve", "find_index8", dst, [("in", a), ("values", v)]), None)


def nc_match_replace8(data, vals, imm, dst_idx=None, dtype=None, mask=None, **kwargs):
    """match_replace8 (DVE): data with the matches of 8 values replaced by imm;
    their positions into dst_idx (a [P, 8] int32/uint32 tile) when given."""
    a = read(_emit.on_chip(data, "nisa.nc_match_replace8 data"))
    v = read(_emit.on_chip(vals, "nisa.nc_match_replace8 vals"))
    if mask is not None:
        refuse("nisa.nc_match_replace8 with mask=")
    dst = _emit.new_tile(nl.sbuf, dtype_of(dtype) if dtype else a.dtype, a.shape, "nisa.nc_match_replace8 result")
    ins = [("in", a), ("values", v), ("replacement", _emit.imm(imm))]
    if dst_idx is not None:
        ins.append(("indices", _emit.on_chip(dst_idx, "nisa.nc_match_replace8 dst_idx")))
    return _emit.produced(dst, _emit.compute("dve", "match_replace8", dst, ins), None)


# ---- DMA ----
def dma_copy(dst=None, src=None, mask=None, dst_rmw_op=None, **kwargs):
    if dst_rmw_op is not None:
        refuse("nisa.dma_copy(dst_rmw_op=...)")
    if not isinstance(dst, AP) or not isinstance(src, AP):
        user_error("nisa.dma_copy needs dst= and src= tensors")
    if dst.shape != src.shape:
        user_error("nisa.dma_copy: dst %s and src %s differ" % (list(dst.shape), list(src.shape)))
    _emit.dma(dst, read(src), mask)


def dma_transpose(src, axes=None, mask=None, dtype=None, **kwargs):
    """dma_transpose (DMA) of a 2-D [A, B] HBM region or SBUF tile into a
    [B, A] SBUF tile: 2-byte dtypes, moved without conversion."""
    if axes is not None and tuple(axes) != (1, 0):
        refuse("nisa.dma_transpose with axes=%s (only the 2-D (1, 0))" % (tuple(axes),))
    if mask is not None:
        refuse("nisa.dma_transpose with mask= (slice the operand instead)")
    if not isinstance(src, AP) or src.mem not in ("hbm", "sbuf") or src.ndim != 2:
        user_error("nisa.dma_transpose reads a 2-D HBM region or SBUF tile")
    a = read(src)
    if a.dtype.itemsize != 2 or (dtype is not None and dtype_of(dtype).nx != a.dtype.nx):
        refuse("nisa.dma_transpose of %s data (the DMA transpose moves 2-byte types, without conversion)" % a.dtype)
    if a.shape[1] > nl.tile_size.pmax:
        user_error("nisa.dma_transpose: the result would have %d partitions (at most %d)"
                   % (a.shape[1], nl.tile_size.pmax))
    dst = _emit.new_tile(nl.sbuf, a.dtype, (a.shape[1], a.shape[0]), "nisa.dma_transpose result")
    return _emit.produced(dst, _emit.dma(dst, a, None, "dma_transpose"), None)


# ---- the dst= forms ----
# The newer nki package (SDK 2.28 on) passes the result tile as dst=; the
# classic calls return it. A classic call given dst= writes its result
# there (the instruction that computes it is retargeted: no extra copy), in
# dst's dtype; nc_matmul adds into dst with accumulate=True (a PSUM
# accumulation group) and overwrites it otherwise. Before these, dst= fell
# into **kwargs and was ignored: the kernel silently read an unwritten tile.
def _dst_first(fn, args):
    """The newer package's positional dst: nc_matmul(dst, stationary,
    moving) (a classic stationary is never a PSUM tile) and tensor_copy(dst,
    src) (a classic second argument is an engine name, not a tile)."""
    if fn.__name__ == "nc_matmul" and len(args) >= 3 and isinstance(args[0], AP) and args[0].mem == "psum":
        return args[0], args[1:]
    if fn.__name__ == "tensor_copy" and len(args) == 2 and isinstance(args[0], AP) and isinstance(args[1], AP):
        return args[0], args[1:]
    return None, args


def _matmul_into(dst, result, accumulate):
    """nc_matmul's dst form: accumulate=True adds into dst, False overwrites;
    None (the default) starts the accumulation group in a PSUM tile no
    matmul has written yet and adds into it afterwards, as a loop of
    nc_matmul(dst=psum, ...) over K accumulates (the tutorial's tiled
    matmul)."""
    base = dst if isinstance(dst, Tile) else dst.tile
    if accumulate is None:
        accumulate = getattr(base, "matmul_written", False)
    if accumulate:
        nl._accumulate(dst, result)
    else:
        nl._assign(dst, result)
    if base is not None:
        base.matmul_written = True


def _dst_form(fn):
    names = list(inspect.signature(fn).parameters)
    dtype_at = names.index("dtype") if "dtype" in names else None

    sig = inspect.signature(fn)

    def call(*args, dst=None, **kwargs):
        if dst is None:
            dst, args = _dst_first(fn, args)
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:  # the caller's arguments, named at the kernel's line
            user_error("nisa.%s: %s" % (fn.__name__, e))
        if dst is None:
            return fn(*args, **kwargs)
        if not isinstance(dst, AP) or dst.mem not in ("sbuf", "psum"):
            user_error("nisa.%s: dst= must be an SBUF or PSUM tile, got %r" % (fn.__name__, dst))
        accumulate = kwargs.pop("accumulate", None) if fn.__name__ == "nc_matmul" else None
        if dtype_at is not None and len(args) <= dtype_at and kwargs.get("dtype") is None:
            kwargs["dtype"] = dst.dtype
        result = fn(*args, **kwargs)
        if fn.__name__ == "nc_matmul":
            _matmul_into(dst, result, accumulate)
        else:
            nl._assign(dst, result)
        return dst

    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


def _memset_form(shape=None, value=None, dtype=None, mask=None, engine=None, dst=None, **kwargs):
    """nisa.memset(shape, value, dtype) or the dst= form memset(dst=, value=)."""
    if dst is None:
        return _memset(shape, value, dtype, mask=mask, engine=engine, **kwargs)
    if not isinstance(dst, AP) or dst.mem not in ("sbuf", "psum"):
        user_error("nisa.memset: dst= must be an SBUF or PSUM tile, got %r" % (dst,))
    if value is None:
        user_error("nisa.memset: value= is missing")
    e = _engine(engine, ("dve", "pool"), "dve", "nisa.memset")
    _emit.memset(dst, value, mask=mask, engine=e)
    return dst


for _name in ("nc_matmul", "nc_transpose", "activation", "activation_reduce", "tensor_tensor", "tensor_scalar",
              "reciprocal", "scalar_tensor_tensor", "tensor_reduce", "tensor_copy", "tensor_tensor_scan", "iota",
              "affine_select", "bn_stats", "bn_aggr", "partition_all_reduce", "tensor_partition_reduce", "max8",
              "nc_find_index8", "nc_match_replace8", "dma_transpose"):
    globals()[_name] = _dst_form(globals()[_name])
_memset = memset
memset = _memset_form
_emit.wrap_bool_masks(globals())


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    refuse("nisa.%s" % name)
