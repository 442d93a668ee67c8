"""Tensors, tiles and access patterns of traced NKI kernels
(docs/parts/nki.md, "Tensors, tiles and indexing").

An HBM tensor is a named program tensor (a kernel argument, an output, a
scratch buffer); a tile is an SBUF or PSUM allocation of one core. Indexing
either gives an AP: an access pattern in elements, axis 0 the partition
axis (for HBM: the row axis), the other axes free, each (stride, count).
Bounds are checked when an instruction uses the AP, after its mask= has
narrowed it (a ragged tail indexed past the end and masked off is fine).
"""
import numbers

from . import _index
from ._dtype import dtype_of
from ._errors import refuse, user_error
from ._index import Affine, Predicate
from ._trace import trace

BUFFERS = ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm")


class Storage:
    """A tensor of the program's table (docs/parts/assembly.md .tensor)."""

    def __init__(self, name, role, dtype, shape):
        self.name = name
        self.role = role
        self.dtype = dtype.nx
        self.shape = tuple(shape)
        self.read = False  # a DMA read it / wrote it (an input written is an output argument)
        self.written = False


def _row_major(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return list(reversed(strides))


class AP:
    """An access pattern into HBM, SBUF or PSUM (see the module comment)."""

    def __init__(self, mem, dtype, axes, offset=0, pstart=0, pdim=0, tile=None, storage=None, vars_=None,
                 checks=(), name=""):
        self.mem = mem
        self.dtype = dtype
        self.axes = [list(a) for a in axes]  # [stride, count]; the partition axis' stride is None
        self.offset = offset  # elements (tiles: within each partition, from the tile's start)
        self.pstart = pstart
        self.pdim = pdim  # which axis is the partition axis (tiles), None for HBM
        self._tile = tile
        self.storage = storage
        self.vars = vars_ or [set() for _ in axes]
        self.checks = list(checks)
        self.name = name
        self.assigned = False

    @property
    def tile(self):
        """The tile this AP is on (None in HBM); no reference cycle for a
        Tile itself, so a tile dies as soon as nothing names it."""
        return self._tile

    # ---- what NKI code sees ----
    @property
    def shape(self):
        return tuple(c for _, c in self.axes)

    @property
    def ndim(self):
        return len(self.axes)

    @property
    def buffer(self):
        return self.mem

    def __getitem__(self, key):
        return index(self, key)

    def __setitem__(self, key, value):
        from . import language

        language._assign(self[key], value)

    def __iadd__(self, other):
        from . import language

        return language._accumulate(self, other)

    def __isub__(self, other):
        from . import language

        language._assign(self, language.subtract(self, other))
        self.assigned = True
        return self

    def __imul__(self, other):
        from . import language

        language._assign(self, language.multiply(self, other))
        self.assigned = True
        return self

    def reshape(self, shape):
        return reshape(self, shape)

    def broadcast_to(self, shape):
        return broadcast(self, tuple(shape))

    def __len__(self):
        return self.shape[0]

    def __iter__(self):
        refuse("iterating over a tensor (index it instead)")

    def __bool__(self):
        user_error("a tensor has no truth value at trace time")

    def __repr__(self):
        return "<nxsim.nki %s tensor %s %s>" % (self.mem, list(self.shape), self.dtype)

    # ---- arithmetic: the nl functions ----
    def _bin(self, name, other, reverse=False):
        from . import language

        f = getattr(language, name)
        return f(other, self) if reverse else f(self, other)

    def __add__(self, o):
        return self._bin("add", o)

    def __radd__(self, o):
        return self._bin("add", o, True)

    def __sub__(self, o):
        return self._bin("subtract", o)

    def __rsub__(self, o):
        return self._bin("subtract", o, True)

    def __mul__(self, o):
        return self._bin("multiply", o)

    def __rmul__(self, o):
        return self._bin("multiply", o, True)

    def __truediv__(self, o):
        return self._bin("divide", o)

    def __rtruediv__(self, o):
        return self._bin("divide", o, True)

    def __pow__(self, o):
        return self._bin("power", o)

    def __lt__(self, o):  # (== and != keep their object meaning: tiles are compared by identity)
        return self._bin("less", o)

    def __le__(self, o):
        return self._bin("less_equal", o)

    def __gt__(self, o):
        return self._bin("greater", o)

    def __ge__(self, o):
        return self._bin("greater_equal", o)

    def __neg__(self):
        from . import language

        return language.negative(self)

    def __matmul__(self, o):
        refuse("the @ operator (use nl.matmul or nisa.nc_matmul)")

    __hash__ = object.__hash__

    # ---- the instruction operand ----
    def free_dims(self, groups=None):
        """The free axes as (stride, count), count-1 axes dropped and
        contiguous neighbours merged (within one of `groups`, a list of
        axis-index lists, if given)."""
        free = [i for i in range(len(self.axes)) if i != self.part_axis()]
        groups = groups or [free]
        out = []
        for g in groups:
            dims = []
            for i in g:
                s, c = self.axes[i]
                if c == 1:
                    continue
                if dims and dims[-1][0] == s * c:
                    dims[-1] = [s, dims[-1][1] * c]
                else:
                    dims.append([s, c])
            out.append(dims or [[1, 1]])
        return out

    def part_axis(self):
        return 0 if self.mem == "hbm" else self.pdim

    def rows(self, r0, n):
        """Partitions (HBM: rows) r0 .. r0 + n - 1 of this AP, n >= 1: the
        slice a transfer cut by rows takes, without the indexing machinery
        (a few microseconds each, and a cut transfer has 16)."""
        pa = self.part_axis()
        axes = [list(a) for a in self.axes]
        axes[pa][1] = n
        offset, pstart = self.offset, self.pstart
        if self.mem == "hbm":
            offset += r0 * self.axes[pa][0]
        else:
            pstart += r0
        return AP(self.mem, self.dtype, axes, offset=offset, pstart=pstart, pdim=self.pdim, tile=self.tile,
                  storage=self.storage, vars_=self.vars, checks=self.checks, name=self.name)

    def partitions(self):
        return self.axes[self.part_axis()][1] if self.axes else 1

    def render(self, groups=None, dtype=None):
        dt = (dtype or self.dtype).nx
        size = dtype_of(dt).itemsize
        dims = [d for g in self.free_dims(groups) for d in g]
        if len(dims) > 4:
            refuse("an access pattern of %d free dimensions after merging (the engines take 4)" % len(dims))
        body = "{%s}" % ",".join("%d:%d" % (s, c) for s, c in dims)
        if self.mem == "hbm":
            rows = self.axes[0][1] if self.axes else 1
            pstride = self.axes[0][0] if self.axes and rows > 1 else 0
            return "hbm:%s[%d/%d]@%s+%d%s" % (dt, rows, pstride, self.storage.name, self.offset * size, body)
        if getattr(self.tile, "reclaimed", False):
            user_error("%s: used after its buffer went to the tile this line allocates in a later iteration "
                       "(%s was full: give the tile a name outside the loop, or allocate it once)"
                       % (self.name or "a tile", self.mem.upper()))
        base = self.tile.offset_bytes + self.offset * size
        if base < 0:
            user_error("%s: the access starts before the tile" % self.name)
        p = self.partitions()
        return "%s:%s[%d:%d]@%d%s" % (self.mem, dt, self.pstart, self.pstart + p, base, body)

    def free_size(self):
        n = 1
        for i, (s, c) in enumerate(self.axes):
            if i != self.part_axis():
                n *= c
        return n


class HbmTensor(AP):
    """An NKI tensor in HBM: a kernel argument, result or scratch tensor."""

    def __init__(self, storage, dtype, shape, offset=0):
        strides = _row_major(shape)
        super().__init__("hbm", dtype, [[s, n] for s, n in zip(strides, shape)], offset=offset, pdim=None,
                         storage=storage, name=storage.name)
        self.vars = [set() for _ in shape]


class Tile(AP):
    """An SBUF or PSUM tile of one core: shape (blocks..., P, free...)."""

    def __init__(self, buffer, dtype, shape, pdim=0, name="tile"):
        shape = tuple(int(s) for s in shape)
        if not shape:
            user_error("a tile needs at least one dimension (the partition dimension)")
        if any(s < 1 for s in shape):
            user_error("a tile dimension must be positive, got shape %s" % (list(shape),))
        t = trace()
        if shape[pdim] > t.geo["partitions"]:
            user_error("partition dimension %d of tile %s exceeds %d (nl.tile_size.pmax)"
                       % (shape[pdim], list(shape), t.geo["partitions"]))
        rest = [n for i, n in enumerate(shape) if i != pdim]
        strides = _row_major(rest)
        axes, k = [], 0
        for i, n in enumerate(shape):
            if i == pdim:
                axes.append([None, n])
            else:
                axes.append([strides[k], n])
                k += 1
        super().__init__(buffer, dtype, axes, pdim=pdim, name=name)
        nbytes = dtype.itemsize
        for n in rest:
            nbytes *= n
        self.core = t.core
        self.offset_bytes = t.allocate(self, buffer, nbytes, "%s %s %s" % (name, list(shape), dtype))
        self.producer = None  # the instruction that wrote the whole tile, while nothing read it
        self.redirect = None  # after an assignment moved the producer's write: where the values are

    @property
    def tile(self):
        return self

    def view(self):
        return self.redirect if self.redirect is not None else self


def read(x):
    """The AP an instruction reads for x (a tile's values may have moved)."""
    if isinstance(x, Tile):
        x.producer = None
        return x.view()
    if isinstance(x, AP):
        if x.tile is not None:
            x.tile.producer = None
        return x
    return x


def column(ap):
    """An on-chip AP indexed down to its partition axis ([P]: t[:, j]) as
    the [P, 1] column NKI takes it for: an operand, an assignment target
    and an AP indexed again (flash attention's l_buffer[:, i] is indexed
    [:, 0] by its core, and a [P, 1] reduction is assigned into
    max_local[:, k]). Anything else is returned as it is."""
    if isinstance(ap, AP) and ap.mem != "hbm" and len(ap.axes) == 1 and ap.pdim == 0:
        if isinstance(ap, Tile) and ap.redirect is not None:
            return column(ap.redirect)
        return AP(ap.mem, ap.dtype, ap.axes + [[1, 1]], offset=ap.offset, pstart=ap.pstart, pdim=0, tile=ap.tile,
                  storage=ap.storage, vars_=ap.vars + [set()], checks=ap.checks, name=ap.name)
    return ap


def index(ap, key):
    if isinstance(ap, Tile) and ap.redirect is not None:
        return index(ap.redirect, key)
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) == 2 and len(ap.axes) == 1:
        ap = column(ap)
    if any(k is Ellipsis for k in key):
        at = key.index(Ellipsis)
        fill = len(ap.axes) - (len(key) - 1)
        key = key[:at] + (slice(None),) * fill + key[at + 1:]
    if len(key) > len(ap.axes):
        user_error("%d indices for a tensor of %d dimensions %s" % (len(key), len(ap.axes), list(ap.shape)))
    key = key + (slice(None),) * (len(ap.axes) - len(key))
    for k in key:
        if isinstance(k, AP):
            refuse("indirect indexing with a tensor (dynamic DMA)")
        if not isinstance(k, (slice, Affine, numbers.Integral)):
            user_error("an index must be an integer, a slice, nl.arange/nl.mgrid arithmetic or nl.ds, got %r" % (k,))
    if any(isinstance(k, Affine) for k in key):
        return _index_affine(ap, key)
    return _index_basic(ap, key)


def _new(ap, axes, offset, pstart, pdim, vars_, checks):
    out = AP(ap.mem, ap.dtype, axes, offset=offset, pstart=pstart, pdim=pdim, tile=ap.tile, storage=ap.storage,
             vars_=vars_, checks=ap.checks + checks, name=ap.name)
    return out


def _int_index(ap, d, k):
    n = ap.axes[d][1]
    k = int(k)
    if k < 0:
        k += n
    if not 0 <= k < n:
        user_error("%s%s: index %d is out of bounds for dimension %d of size %d"
                   % (ap.name, list(ap.shape), k, d, n))
    return k


def _index_basic(ap, key):
    axes, vars_, offset, pstart, pdim = [], [], ap.offset, ap.pstart, None
    for d, k in enumerate(key):
        stride, n = ap.axes[d]
        is_part = ap.mem != "hbm" and d == ap.pdim
        if isinstance(k, slice):
            start, stop, step = k.start, k.stop, k.step
            step = 1 if step is None else step
            if step == 0:
                user_error("a slice step of 0")
            if (start is not None and not 0 <= (start if start >= 0 else start + n) <= n) or \
                    (stop is not None and not -n <= stop <= n):
                user_error("%s%s: slice %s:%s is out of bounds for dimension %d of size %d"
                           % (ap.name, list(ap.shape), start, stop, d, n))
            r = range(*slice(start, stop, step).indices(n))
            if len(r) == 0:
                user_error("%s%s: slice %s:%s of dimension %d is empty" % (ap.name, list(ap.shape), start, stop, d))
            if is_part:
                if step != 1:
                    refuse("a partition-dimension slice with a step")
                pstart += r.start
                pdim = len(axes)
                axes.append([None, len(r)])
            else:
                offset += stride * r.start
                axes.append([stride * step, len(r)])
            vars_.append(set())
        else:
            k = _int_index(ap, d, k)
            if is_part:  # keeps a 1-partition axis: on-chip data always has one
                pstart += k
                pdim = len(axes)
                axes.append([None, 1])
                vars_.append(set())
            else:
                offset += stride * k
    return _new(ap, axes, offset, pstart, pdim, vars_, [])


def _index_affine(ap, key):
    if any(isinstance(k, slice) and k != slice(None) for k in key):
        refuse("mixing slices and nl.arange/nl.mgrid expressions in one index")
    nd = max(k.ndim for k in key if isinstance(k, Affine))
    counts, vars_ = [1] * nd, [set() for _ in range(nd)]

    def axis_of(v):
        return v.axis + nd - v.ndim

    for k in key:
        if isinstance(k, Affine):
            for v in k.terms:
                r = axis_of(v)
                if counts[r] not in (1, v.size) and v not in vars_[r]:
                    user_error("index expressions of sizes %d and %d on one axis" % (counts[r], v.size))
                counts[r] = v.size
                vars_[r].add(v)
    strides = [0] * nd
    offset, pstart, pdim, checks = ap.offset, ap.pstart, None, []
    part_int, extra = None, []
    for d, k in enumerate(key):
        stride, n = ap.axes[d]
        is_part = ap.mem != "hbm" and d == ap.pdim
        if isinstance(k, slice):  # a full ':' beside index expressions: a trailing axis
            if is_part:
                refuse("':' on the partition dimension beside nl.arange/nl.mgrid expressions")
            extra.append([stride, n])
            continue
        if isinstance(k, numbers.Integral):
            k = _int_index(ap, d, k)
            if is_part:
                part_int = k
            else:
                offset += stride * k
            continue
        checks.append((k, n, d, ap.name, ap.shape))
        if is_part:
            if len(k.terms) != 1 or list(k.terms.values())[0] != 1:
                refuse("a partition index other than start + nl.arange (a stride across partitions)")
            (v, _), = k.terms.items()
            pdim = axis_of(v)
            pstart += k.const
            continue
        offset += stride * k.const
        for v, c in k.terms.items():
            strides[axis_of(v)] += stride * c
    axes = [[strides[r], counts[r]] for r in range(nd)] + extra
    vars_ += [set() for _ in extra]
    if ap.mem != "hbm":
        if part_int is not None:
            pstart += part_int
            axes.insert(0, [None, 1])
            vars_.insert(0, set())
            pdim = 0
        elif pdim is None:
            refuse("an on-chip index without the partition dimension")
        else:
            if any(v for v in vars_[pdim] for k in key if isinstance(k, Affine) and v in k.terms
                   and k is not key[ap.pdim]):
                refuse("a partition index variable used in a free index too")
            axes[pdim][0] = None
    return _new(ap, axes, offset, pstart, pdim, vars_, checks)


def reshape(ap, shape):
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if isinstance(ap, HbmTensor) and ap.offset == 0 and list(ap.axes) == [[s, n] for s, n in zip(_row_major(ap.shape), ap.shape)]:
        n = 1
        for s in shape:
            n *= s
        if n != _prod(ap.shape):
            user_error("reshape of %s to %s changes the element count" % (list(ap.shape), list(shape)))
        return HbmTensor(ap.storage, ap.dtype, shape)
    refuse(".reshape of an on-chip tile or a view (reshape the HBM tensor)")


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def broadcast(ap, shape):
    """ap viewed as `shape` (numpy rules): count-1 free axes get stride 0."""
    if ap.shape == shape:
        return ap
    if len(shape) > len(ap.axes) and ap.pdim == 0 and all(n == 1 for n in shape[len(ap.axes):]):
        # a tile indexed down to its partition axis ([P], e.g. x[0:P, j]) is
        # the [P, 1] column NKI treats it as (the fused-Mamba tutorial's
        # scan_init[...] = scan_res[0:P, F - 1])
        ap = AP(ap.mem, ap.dtype, ap.axes + [[0, 1]] * (len(shape) - len(ap.axes)), offset=ap.offset,
                pstart=ap.pstart, pdim=ap.pdim, tile=ap.tile, storage=ap.storage,
                vars_=ap.vars + [set() for _ in range(len(shape) - len(ap.axes))], checks=ap.checks, name=ap.name)
        if ap.shape == shape:
            return ap
    if len(shape) != len(ap.axes):
        user_error("cannot broadcast %s to %s" % (list(ap.shape), list(shape)))
    pa = ap.part_axis()
    if ap.mem == "sbuf" and ap.axes[pa][1] == 1 and shape[pa] > 1:
        # along partitions: POOL's partition_broadcast into a fresh tile
        from . import _emit

        src = read(ap)
        wide = Tile("sbuf", ap.dtype, tuple(shape[pa] if i == pa else c for i, c in enumerate(ap.shape)),
                    pdim=pa, name="broadcast_to result")
        _emit.compute("pool", "partition_broadcast", wide, [("in", src)])
        return broadcast(wide, shape)
    axes = []
    for i, ((s, c), n) in enumerate(zip(ap.axes, shape)):
        if c == n:
            axes.append([s, c])
        elif c == 1:
            if i == ap.part_axis():
                refuse("broadcasting along the partition dimension (%s to %s)" % (list(ap.shape), list(shape)))
            axes.append([0, n])
        else:
            user_error("cannot broadcast %s to %s" % (list(ap.shape), list(shape)))
    return AP(ap.mem, ap.dtype, axes, offset=ap.offset, pstart=ap.pstart, pdim=ap.pdim, tile=ap.tile,
              storage=ap.storage, vars_=ap.vars, checks=ap.checks, name=ap.name)


def finalize(aps, mask):
    """Narrows the APs of one instruction by mask= (a box: each clause one
    index variable), then checks every index against its dimension. Returns
    the narrowed APs, or None when the mask leaves nothing."""
    ranges = {}
    if mask is not None:
        if isinstance(mask, bool):
            if not mask:
                return None
            mask = None
        elif not isinstance(mask, Predicate):
            user_error("mask= must be a predicate of index expressions (i_p < n, ...), got %r" % (mask,))
        else:
            ranges = _index.restrict(mask, {})
    by_pos = {}
    for ap in aps:
        if not isinstance(ap, AP):
            continue
        for r, vs in enumerate(ap.vars):
            for v in vs:
                if v in ranges:
                    by_pos.setdefault(r, ranges[v])
    out = []
    for ap in aps:
        if not isinstance(ap, AP):
            out.append(ap)
            continue
        if by_pos:
            axes = [list(a) for a in ap.axes]
            offset, pstart = ap.offset, ap.pstart
            for r, (lo, cnt) in by_pos.items():
                if r >= len(axes):
                    continue
                if cnt == 0:
                    return None
                if axes[r][0] is None:
                    pstart += lo
                else:
                    offset += axes[r][0] * lo
                axes[r][1] = cnt
            ap = AP(ap.mem, ap.dtype, axes, offset=offset, pstart=pstart, pdim=ap.pdim, tile=ap.tile,
                    storage=ap.storage, vars_=ap.vars, checks=ap.checks, name=ap.name)
        for expr, n, d, name, shape in ap.checks:
            lo, hi = expr.bounds(ranges)
            if lo < 0 or hi >= n:
                user_error("%s%s: index out of bounds: dimension %d takes %d..%d, its size is %d%s"
                           % (name, list(shape), d, lo, hi, n, "" if mask is None else " (after mask=)"))
        if ap.checks:  # checked: an AP handed on (a reduction's narrowed input) is not checked again
            ap = AP(ap.mem, ap.dtype, ap.axes, offset=ap.offset, pstart=ap.pstart, pdim=ap.pdim, tile=ap.tile,
                    storage=ap.storage, vars_=ap.vars, name=ap.name)
        out.append(ap)
    return out
