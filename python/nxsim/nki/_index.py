"""Index expressions of traced NKI kernels (docs/parts/nki.md, "Indexing").

nl.arange(n) is an index variable: the values 0..n-1 along one axis of a
broadcast shape (arange(n)[:, None] is axis 0 of a 2-D index, [None, :]
axis 1). Arithmetic with integers keeps an index affine: c + sum(k * var).
A comparison of an affine index with an integer is a predicate; predicates
combine with & into a mask. Everything here is evaluated at trace time:
loop variables are plain Python integers.
"""
import itertools

from ._errors import refuse, user_error

_ids = itertools.count()


class IndexVar:
    """One nl.arange: values 0..size-1 on axis `axis` of an `ndim`-D index."""

    __slots__ = ("id", "size", "axis", "ndim")

    def __init__(self, size, axis, ndim):
        self.id = next(_ids)
        self.size = size
        self.axis = axis
        self.ndim = ndim


class Affine:
    """const + sum(coef * var): an index expression (nl.arange arithmetic)."""

    __slots__ = ("const", "terms", "_placement")

    def __init__(self, const=0, terms=None, placement=None):
        self.const = const
        self.terms = dict(terms or {})  # var -> coefficient
        self._placement = placement  # (axis, ndim) for a bare 1-D arange not yet placed

    # -- shape --
    @property
    def ndim(self):
        return max((v.ndim for v in self.terms), default=0)

    @property
    def shape(self):
        shape = [1] * self.ndim
        for v in self.terms:
            shape[v.axis + self.ndim - v.ndim] = v.size
        return tuple(shape)

    def __getitem__(self, key):
        """arange(n)[:, None] / [None, :]: places a 1-D index on an axis."""
        if len(self.terms) != 1 or self.ndim != 1:
            refuse("indexing an index expression other than nl.arange(n)[:, None] / [None, :]")
        if not isinstance(key, tuple):
            key = (key,)
        axes = [i for i, k in enumerate(key) if k is not None]
        if len(axes) != 1 or not isinstance(key[axes[0]], slice) or key[axes[0]] != slice(None):
            refuse("nl.arange indexing other than [:, None] or [None, :]")
        (var, coef), = self.terms.items()
        nv = IndexVar(var.size, axes[0], len(key))
        return Affine(self.const, {nv: coef})

    # -- arithmetic --
    def _combine(self, other, sign):
        if isinstance(other, Affine):
            terms = dict(self.terms)
            for v, c in other.terms.items():
                terms[v] = terms.get(v, 0) + sign * c
            return Affine(self.const + sign * other.const, {v: c for v, c in terms.items() if c})
        if isinstance(other, int) and not isinstance(other, bool):
            return Affine(self.const + sign * other, self.terms)
        return NotImplemented

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        neg = self * -1
        return neg + other

    def __mul__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return Affine(self.const * other, {v: c * other for v, c in self.terms.items() if c * other})
        if isinstance(other, Affine):
            refuse("the product of two index expressions (not affine)")
        return NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __floordiv__(self, other):
        refuse("// on an index expression (not affine)")

    def __mod__(self, other):
        refuse("% on an index expression (not affine)")

    # -- predicates --
    def _cmp(self, other, op):
        if isinstance(other, Affine):
            return Predicate(self - other, op)
        if isinstance(other, int) and not isinstance(other, bool):
            return Predicate(self - other, op)
        return NotImplemented

    def __lt__(self, o):
        return self._cmp(o, "<")

    def __le__(self, o):
        return self._cmp(o, "<=")

    def __gt__(self, o):
        return self._cmp(o, ">")

    def __ge__(self, o):
        return self._cmp(o, ">=")

    def __eq__(self, o):
        return self._cmp(o, "==")

    def __ne__(self, o):
        return self._cmp(o, "!=")

    __hash__ = object.__hash__

    def __bool__(self):
        user_error("an index expression has no truth value at trace time (use it in mask= or an index)")

    def bounds(self, ranges=None):
        """(min, max) over the variables' ranges ({var: (lo, count)} restricts)."""
        lo = hi = self.const
        for v, c in self.terms.items():
            a, n = (ranges or {}).get(v, (0, v.size))
            ends = (c * a, c * (a + n - 1))
            lo += min(ends)
            hi += max(ends)
        return lo, hi


class Predicate:
    """expr OP 0 for OP in < <= > >= == !=; & of predicates is a mask."""

    def __init__(self, expr, op):
        self.clauses = [(expr, op)]

    def __and__(self, other):
        if not isinstance(other, Predicate):
            return NotImplemented
        p = Predicate(Affine(), "==")
        p.clauses = self.clauses + other.clauses
        return p

    __rand__ = __and__

    def __or__(self, other):
        refuse("| of masks (a region that is not a box)")

    def __bool__(self):
        user_error("a mask has no truth value at trace time (pass it as mask=)")


def arange(*args):
    """nl.arange(stop) / nl.arange(start, stop): a 1-D index variable."""
    if len(args) == 1:
        start, stop = 0, args[0]
    elif len(args) == 2:
        start, stop = args
    else:
        refuse("nl.arange with a step")
    if not all(isinstance(a, int) for a in (start, stop)) or stop <= start:
        user_error("nl.arange(%s): needs integers start < stop" % ", ".join(map(str, args)))
    return Affine(start, {IndexVar(stop - start, 0, 1): 1})


class _MGrid:
    """nl.mgrid[0:P, 0:F]: one index variable per axis, like numpy.mgrid."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        out = []
        for axis, k in enumerate(key):
            if not isinstance(k, slice) or k.stop is None:
                user_error("nl.mgrid takes slices start:stop[:step]")
            start = k.start or 0
            step = k.step or 1
            n = len(range(start, k.stop, step))
            if n <= 0:
                user_error("nl.mgrid: an empty slice %s:%s" % (start, k.stop))
            out.append(Affine(start, {IndexVar(n, axis, len(key)): step}))
        return tuple(out) if len(out) > 1 else out[0]


mgrid = _MGrid()


def ds(start, size):
    """nl.ds(start, size): the slice start:start+size."""
    return slice(start, start + size)


def restrict(mask, ranges):
    """Applies a mask to {var: (lo, count)}: every clause must name one
    variable (a box-shaped region). Returns the narrowed ranges."""
    ranges = dict(ranges)
    for expr, op in mask.clauses:
        if len(expr.terms) != 1:
            refuse("mask= with a predicate over %s index variables (only boxes: one variable per clause)"
                   % ("no" if not expr.terms else "two or more"))
        (v, c), = expr.terms.items()
        lo, n = ranges.get(v, (0, v.size))
        keep = [i for i in range(lo, lo + n) if _holds(c * i + expr.const, op)]
        if not keep:
            ranges[v] = (lo, 0)
            continue
        if keep != list(range(keep[0], keep[-1] + 1)):
            refuse("mask= selecting a region with holes")
        ranges[v] = (keep[0], len(keep))
    return ranges


def _holds(x, op):
    return {"<": x < 0, "<=": x <= 0, ">": x > 0, ">=": x >= 0, "==": x == 0, "!=": x != 0}[op]
