"""The instructions NKI calls become (docs/parts/nki.md, "How calls map").

Each helper checks what the user controls (buffers, shapes, sizes) with a
message naming the kernel's line, narrows its operands by mask=, and
appends one nxsim instruction (docs/ISA.md) to the trace. The engine rules
and geometry the helpers do not check are checked by libnxsim when the
trace is assembled, and reported at the same line.
"""
import inspect
import numbers

from ._dtype import FLOATS, dtype_of
from ._errors import user_error, user_location
from ._tensor import AP, Tile, column, finalize, read
from ._trace import trace

ENGINES = {"dve", "act", "pool", "pe", "sp"}


def imm(value, dtype=None):
    """An immediate operand: #VALUE[:DTYPE]."""
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, numbers.Number):
        user_error("expected a number, got %r" % (value,))
    if dtype is not None and dtype.nx not in FLOATS:
        if value != int(value):
            user_error("immediate %r for an integer dtype %s" % (value, dtype))
        return "#%d:%s" % (int(value), dtype.nx)
    return "#%s" % repr(float(value))


def new_tile(buffer, dtype, shape, name):
    return Tile(buffer, dtype_of(dtype), shape, name=name)


def on_chip(x, what):
    if isinstance(x, AP) and x.mem in ("sbuf", "psum"):
        x = column(x)
        if x.pdim != 0:
            user_error("%s: the partition dimension must be the first one (tile %s)" % (what, list(x.shape)))
        return x
    if isinstance(x, AP):
        user_error("%s: operand %s is in HBM; compute engines read SBUF/PSUM (nl.load it first)"
                   % (what, x.name or list(x.shape)))
    user_error("%s: expected a tile, got %r" % (what, x))


def same_shape(a, b, what):
    if a.shape != b.shape:
        user_error("%s: shapes %s and %s differ" % (what, list(a.shape), list(b.shape)))


def dma(dst, src, mask=None, mnemonic="dma_copy"):
    """dma_copy (or dma_transpose) on the next DMA lane of this core (the SP issues it)."""
    t = trace()
    ops = finalize([dst, src], mask)
    if ops is None:
        return None
    d, s = ops
    if d.mem == "hbm" and not t.suppress:
        d.storage.written = True
    if s.mem == "hbm" and not t.suppress:
        s.storage.read = True
    if d.mem == "psum" or s.mem == "psum":
        user_error("DMA cannot reach PSUM (copy the tile to SBUF first)")
    if mnemonic == "dma_copy" and d.shape != s.shape and (d.partitions() != s.partitions()
                                                          or d.free_size() != s.free_size()):
        user_error("DMA shapes %s and %s differ" % (list(d.shape), list(s.shape)))
    share = _dma_share(t, d, s) if mnemonic == "dma_copy" else 0
    rows = d.partitions()
    if share == 0 or share >= rows:
        return t.emit("sp", mnemonic, [("dst", d.render()), ("src", s.render())], [("queue", str(t.dma_lane()))])
    # a transfer of many partitions is cut by rows, one engine's share each,
    # on one queue of every engine (docs/parts/nki.md, "How a kernel is
    # traced"): the NKI DMA overview's [128, 128] tile as 16 transfers
    first, parts, where = t.dma_group(), [], user_location()
    for i, r0 in enumerate(range(0, rows, share)):
        n = min(share, rows - r0)
        parts.append((t.emit("sp", mnemonic, [("dst", d.rows(r0, n).render()), ("src", s.rows(r0, n).render())],
                             [("queue", str(first + i))], where=where), r0, n))
    return Pieces(parts)


class Pieces:
    """The instructions of one transfer cut by rows: retargeted together."""

    def __init__(self, parts):
        self.parts = parts  # [(insn, first row, rows)]
        self.mnemonic = parts[0][0].mnemonic
        self.engine = parts[0][0].engine

    def last(self):
        return self.parts[-1][0]

    def retarget(self, dst):
        pa = dst.part_axis()
        for insn, r0, n in self.parts:
            key = tuple(slice(r0, r0 + n) if i == pa else slice(None) for i in range(dst.ndim))
            insn.set_slot("dst", dst[key].render())


def _dma_share(t, d, s):
    """Rows per piece when a transfer is cut over the DMA engines: the
    partitions over the engines (8 of 128 on 16), or 0 (not cut: the two
    sides' rows are not both partitions)."""
    if d.part_axis() != 0 or s.part_axis() != 0 or d.partitions() != s.partitions():
        return 0
    return max(1, t.geo["partitions"] // t.dma_engines)


def compute(engine, mnemonic, dst, ins, params=(), mask=None, groups=None):
    """One compute instruction: dst and the named inputs (APs or immediates
    given as text), narrowed by mask together."""
    t = trace()
    names = [n for n, _ in ins]
    vals = [v for _, v in ins]
    ops = finalize([dst] + vals, mask)
    if ops is None:
        return None
    d = ops[0]
    slots = [] if d is None else [("dst", d.render(groups[0] if groups else None))]
    for i, (n, v) in enumerate(zip(names, ops[1:])):
        if isinstance(v, AP):
            g = groups[i + 1] if groups else None
            slots.append((n, v.render(g)))
        else:
            slots.append((n, v))
    return t.emit(engine, mnemonic, slots, params)


def python_bool_mask(fn):
    """Wraps an NKI call for mask= given as a Python bool (the flash
    attention kernel computes mask=diagonal from loop indices, True or
    False at trace time; the NKI masking guide: a compile-time constant
    predicate controls whether the instruction runs). True is no mask;
    False runs the call for its checks and its result tile, with every
    instruction it would emit dropped (Trace.suppress), and marks that tile
    masked off: assigning it writes nothing, as the instruction NKI writes
    into the target in place never runs."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None

    def call(*args, **kwargs):
        if sig is not None:
            try:
                sig.bind(*args, **kwargs)
            except TypeError as e:  # the caller's arguments, named at the kernel's line
                mod = getattr(fn, "__module__", "") or ""
                user_error("%s%s: %s" % ("nisa." if mod.endswith(".isa") else "nl." if mod.endswith(".language") else "",
                                         fn.__name__, e))
        m = kwargs.get("mask")
        if m is True:
            kwargs["mask"] = None
        elif m is False:
            kwargs["mask"] = None
            t = trace()
            t.suppress += 1
            try:
                result = fn(*args, **kwargs)
            finally:
                t.suppress -= 1
            # a fresh result tile; never a tile the caller passed (the dst=
            # forms return their dst, which keeps what it held)
            if isinstance(result, Tile) and all(result is not a for a in list(args) + list(kwargs.values())):
                result.masked_off = True
            return result
        return fn(*args, **kwargs)

    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    call.__wrapped__ = fn
    return call


def wrap_bool_masks(namespace, registries=()):
    """python_bool_mask on each public function of a module's globals that
    takes mask= (or any keyword); `registries`: dicts keyed by those
    functions (nl.add -> its ALU op), which then hold the wrapper too."""
    for n, f in list(namespace.items()):
        if n.startswith("_") or not inspect.isfunction(f) or f.__module__ != namespace["__name__"]:
            continue
        params = inspect.signature(f).parameters
        if "mask" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()):
            w = namespace[n] = python_bool_mask(f)
            for reg in registries:
                if f in reg:
                    reg[w] = reg[f]


def produced(tile, insn, mask):
    """Records the instruction that wrote all of a fresh tile (mask: not all)."""
    if insn is not None and mask is None:
        tile.producer = insn
    return tile


def memset(dst, value, mask=None, engine="dve"):
    if dst.mem == "psum" and engine == "pool":
        engine = "dve"
    return compute(engine, "memset", dst, [("value", imm(value, dst.dtype))], mask=mask)


def tensor_copy(dst, src, mask=None, engine="dve"):
    src = read(src)
    return compute(engine, "tensor_copy", dst, [("in", src)], mask=mask)


def scalar_operand(x, ref, what):
    """A per-partition scalar: a number (immediate) or a [P, 1] tile."""
    if isinstance(x, numbers.Number):
        return imm(x)
    x = read(on_chip(x, what))
    if x.partitions() != ref.partitions() or x.free_size() != 1:
        user_error("%s: a scalar operand is a number or a [%d, 1] tile, got %s"
                   % (what, ref.partitions(), list(x.shape)))
    return x


def index_pattern(expr, shape, what):
    """pat:int32[P](BASE,CM){...} of an affine index over the tile shape."""
    from ._index import Affine

    if isinstance(expr, numbers.Integral):
        expr = Affine(int(expr))
    if not isinstance(expr, Affine):
        user_error("%s: expected an index expression of nl.arange / nl.mgrid, got %r" % (what, expr))
    nd = len(shape)
    coef = [0] * nd
    for v, c in expr.terms.items():
        r = v.axis + nd - v.ndim
        if r < 0 or r >= nd or v.size != shape[r]:
            user_error("%s: index variable of size %d does not match the tile %s" % (what, v.size, list(shape)))
        coef[r] += c
    free = "".join("%d:%d," % (c, n) for c, n in zip(coef[1:], shape[1:]))
    return "pat:int32[%d](%d,%d){%s}" % (shape[0], expr.const, coef[0], free.rstrip(",") or "0:1")


__all__ = ["imm", "new_tile", "on_chip", "dma", "compute", "memset", "tensor_copy", "scalar_operand", "produced",
           "index_pattern"]
