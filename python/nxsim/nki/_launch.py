"""Launching a traced kernel (docs/parts/nki.md, "Running a kernel"): bind
the NumPy arguments to input tensors, run the kernel's Python once per
program of the launch grid (program g of N on core g * C // N of C), assemble the
ordered trace with libnxsim (nx_prog_assemble_ordered), run it on the
functional executor or the SystemC model, hand back the returned tensors.
"""
import ctypes
import inspect
import os
import zlib

import numpy as np

from .. import _lib
from .. import _session, _raise, exec_loaded
from .._dtypes import convert, name_of, numpy_of
from . import _dtype
from ._errors import KernelError, inside_nxsim, user_location
from ._tensor import HbmTensor, Storage
from ._trace import Trace, current
from .typing import TensorType

GEOMETRY_KEYS = ("cores", "partitions", "sbuf_partition_bytes", "psum_partition_bytes", "psum_bank_bytes",
                 "pe_cols", "pe_moving_free_max", "dve_transpose_max", "dma_engines")

for _name, _types in {"nx_prog_assemble_ordered": (ctypes.c_int, [_lib.P, _lib.S, _lib.S, _lib.PP, _lib.MSG]),
                      "nx_prog_save": (ctypes.c_int, [_lib.P, _lib.S, _lib.MSG]),
                      "nx_session_geometry": (ctypes.c_uint64, [_lib.P, _lib.S])}.items():
    _f = getattr(_lib.lib, _name)
    _f.restype, _f.argtypes = _types


class Traced:
    """A kernel traced on its arguments: the ordered program text, what it
    returns, the arrays its inputs get."""

    def __init__(self, text, name, returns, inputs, session, files=()):
        self.text = text
        self.files = sorted(set(files), key=len, reverse=True)
        self.name = name
        self.returns = returns  # the returned structure, HbmTensors at its leaves
        self.inputs = inputs  # {tensor name: array}
        self.session = session
        self._prog = None

    def program(self):
        if self._prog is None:
            from .. import _Program

            ptr = ctypes.c_void_p()
            msg = _lib.Message()
            st = _lib.lib.nx_prog_assemble_ordered(self.session.ptr, self.text.encode(), self.name.encode(),
                                                   ctypes.byref(ptr), ctypes.byref(msg))
            if st == 1:  # the machine refused an instruction: named by the kernel's line
                raise KernelError(self._full_path(msg.text.decode("utf-8", "replace")))
            _raise(st, msg)
            self._prog = _Program(ptr=ptr)
        return self._prog

    def _full_path(self, text):
        """The library shows paths inside the source tree relative to it
        (isa/program_src.c); a kernel's message names the file as Python does."""
        for f in self.files:
            for cut in range(len(f)):
                if f[cut] == os.sep and text.startswith(f[cut + 1:] + ":"):
                    return f + text[len(f) - cut - 1:]
        return text

    def save(self, path):
        """Writes the synchronised program (.nxs text or .nxb) for `nxsim exec`."""
        msg = _lib.Message()
        _raise(_lib.lib.nx_prog_save(self.program().ptr, str(path).encode(), ctypes.byref(msg)), msg)

    def run(self, backend="model", keep_log=True, race_check=False):
        results, run = exec_loaded(self.program(), self.name, self.inputs, self.session, backend=backend,
                                   keep_log=keep_log, race_check=race_check)
        for prefix, st, pid in self.prints:
            print("%s%s %s" % ("" if len(self.programs) < 2 else "[program %s] " % pid, prefix,
                               results[st.name]), flush=True)
        for name, array in getattr(self, "out_args", {}).items():
            np.copyto(array, results[name].reshape(array.shape))
        return _unflatten(self.returns, results), run


def _unflatten(ret, results):
    if isinstance(ret, HbmTensor):
        return results[ret.storage.name].reshape(ret.shape)
    if isinstance(ret, (tuple, list)):
        return type(ret)(_unflatten(r, results) for r in ret)
    if ret is None:
        return None
    raise KernelError("the kernel returned %r; a kernel returns its output tensors (nl.shared_hbm)" % (ret,))


def _storages(ret, out):
    if isinstance(ret, HbmTensor):
        out.append(ret.storage)
    elif isinstance(ret, (tuple, list)):
        for r in ret:
            _storages(r, out)
    elif ret is not None:
        raise KernelError("%s:%d: the kernel returned %r; a kernel returns its output tensors (nl.shared_hbm)"
                          % (*user_location()[:2], ret))
    return out


def _tensor_name(name, taken):
    n = "".join(c if c.isalnum() or c == "_" else "_" for c in name)[:60] or "arg"
    if not (n[0].isalpha() or n[0] == "_"):
        n = "a_" + n
    base, i = n, 1
    while n in taken:
        n = "%s_%d" % (base, i)
        i += 1
    return n


def _kernel_assertion(e):
    """An assert of the kernel's own code that failed, as the KernelError
    naming its line (what NKI's tracer reports too), the kernel's frames kept;
    an AssertionError raised inside nxsim is nxsim's fault and passes as it is."""
    tb = e.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    if inside_nxsim(tb):
        return e
    what = str(e)
    err = KernelError("%s:%d: assertion failed%s" % (tb.tb_frame.f_code.co_filename, tb.tb_lineno,
                                                      ": " + what if what else ""))
    return err.with_traceback(e.__traceback__)


def _kernel_call_error(e):
    """A TypeError of the kernel's own line (a call with the wrong
    arguments, e.g. nl.add(x) or a parameter of the newer nki package's
    signatures), as the KernelError naming that line instead of a
    traceback; one raised inside nxsim is nxsim's fault and passes as it is."""
    tb = e.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    if inside_nxsim(tb):
        return e
    err = KernelError("%s:%d: %s" % (tb.tb_frame.f_code.co_filename, tb.tb_lineno, e))
    return err.with_traceback(e.__traceback__)


def _typed_argument_values(pname, t):
    """An nt.tensor[shape, dtype] argument as an array: floats uniform in
    [-1, 1), integers in [0, 8), from a generator seeded by the argument's
    name (the same values every run)."""
    dt = _dtype.dtype_of(t.dtype)
    if not t.shape or any(not isinstance(n, int) or n < 1 for n in t.shape):
        raise KernelError("argument %s: %r has no valid shape" % (pname, t))
    n = 1
    for d in t.shape:
        n *= d
    if n > 1 << 28:
        raise KernelError("argument %s: %r is %d elements, more than a typed argument is filled with (2^28)"
                          % (pname, t, n))
    rng = np.random.default_rng(zlib.crc32(pname.encode()))
    if dt.nx in _dtype.FLOATS:
        return convert(rng.uniform(-1.0, 1.0, t.shape).astype(np.float32), dt.nx)
    return rng.integers(0, 8, t.shape).astype(numpy_of(dt.nx))


def _core_of(grid, pid0, g, cores, total):
    """The core program g (pid0 along the first dimension) runs on: the
    first dimension's nl.nc / nl.spmd_dim core mapping when its core count
    is the machine's, else consecutive programs share a core."""
    d = grid[0]
    if getattr(d, "count", None) == cores and cores > 1:
        return (pid0 // d.stride) % d.count
    return g * cores // total


def trace_kernel(fn, grid, args, kwargs, machine=None):
    """Runs fn's Python per program of `grid` and returns a Traced."""
    session = _session(machine or os.environ.get("NXSIM_MACHINE") or None)
    geo = {k: int(_lib.lib.nx_session_geometry(session.ptr, k.encode())) for k in GEOMETRY_KEYS}
    grid = grid or (1,)
    total = 1
    for g in grid:
        total *= g
    cores = max(1, min(total, geo["cores"]))
    tr = Trace(geo, session.machine, cores)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise KernelError("%s:%d: %s: %s" % (*user_location()[:2], fn.__name__, e)) from None
    call_args, inputs = {}, {}
    for pname, value in bound.arguments.items():
        if isinstance(value, TensorType):
            value = _typed_argument_values(pname, value)
        if isinstance(value, np.ndarray):
            nx = name_of(value.dtype)
            if nx is None:
                raise KernelError("%s:%d: argument %s: NumPy dtype %s has no nxsim type; convert it "
                                  "(e.g. %s.astype(np.float32))" % (*user_location()[:2], pname, value.dtype, pname))
            if value.ndim == 0:
                raise KernelError("%s:%d: argument %s: a 0-dimensional array" % (*user_location()[:2], pname))
            st = Storage(_tensor_name(pname, {s.name for s in tr.tensors}), "input", _dtype.BY_NX[nx], value.shape)
            tr.tensors.append(st)
            inputs[st.name] = np.ascontiguousarray(value)
            call_args[pname] = st
        else:
            call_args[pname] = value
    token = current.set(tr)
    returns = None
    try:
        for g in range(total):
            pid, rest = [], g
            for n in reversed(grid):
                pid.append(rest % n)
                rest //= n
            tr.begin_program(tuple(reversed(pid)), tuple(int(n) for n in grid),
                             _core_of(grid, pid[-1], g, cores, total))
            actual = {k: (HbmTensor(v, _dtype.BY_NX[v.dtype], v.shape) if isinstance(v, Storage) else v)
                      for k, v in call_args.items()}
            try:
                ret = fn(**actual)
            except AssertionError as e:
                raise _kernel_assertion(e) from None
            except TypeError as e:
                raise _kernel_call_error(e) from None
            names = [s.name for s in _storages(ret, [])]
            if g == 0:
                returns, first = ret, names
            elif names != first:
                raise KernelError("%s: program %s returns tensors %s, program 0 returned %s"
                                  % (fn.__name__, list(tr.program_id), names, first))
    finally:
        current.reset(token)
    # an input argument the kernel stores into is an output argument (the
    # style of kernels that take their result tensors as parameters): its
    # array is updated in place after the run
    out_args = {}
    for pname, st in call_args.items():
        if isinstance(st, Storage) and st.written:
            if st.read:
                raise KernelError("%s: argument %s is both read and written (an in-place update of an argument "
                                  "is not supported by nxsim.nki; return a new nl.shared_hbm tensor)"
                                  % (fn.__name__, pname))
            st.role = "output"
            out_args[st.name] = bound.arguments[pname]
            del inputs[st.name]
    for s in _storages(returns, []):
        if s.role != "output":
            raise KernelError("%s: returns %s, which is not an nl.shared_hbm tensor (allocate outputs with "
                              "nl.ndarray(..., buffer=nl.shared_hbm))" % (fn.__name__, s.name))
    t = Traced(tr.text(), "%s.nxs" % fn.__name__, returns, inputs, session, {i.src[0] for i in tr.insns})
    t.out_args = out_args
    t.prints = tr.prints
    t.programs = range(total)
    return t
