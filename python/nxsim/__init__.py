"""nxsim: run kernels of a simulated NeuronCore-like accelerator on NumPy arrays.

A thin ctypes binding over libnxsim (include/nxsim/nxsim.h), which is the
same run path as the `nxsim` command: the same results, bit for bit, and
the same cycle counts (docs/parts/python.md).

    import numpy as np, nxsim
    x = np.random.rand(512, 384).astype(np.float32)
    y, run = nxsim.run("tiled_pf_transpose", x, permutation=[1, 0])
    assert (y == x.T).all()
    print(run.total_ns, run.busy[(0, "pe")])
    print(run.summary)
    run.save_trace("trace.json")       # ui.perfetto.dev
    run.save_timeline("run.svg")

Errors raise nxsim.Error subclasses carrying the library's one-line message:
InputError (bad input: unknown kernel with the registry's miss text, a
shape or dtype the kernel refuses), RunError (fault, deadlock), RaceError
(the race check found a race), CheckError (check=True and a result beyond
its tolerance; the results and run are attached).
"""
import ctypes
import json
import os
import sys
import threading

import numpy as np

from . import _lib
from ._dtypes import bf16, convert, fp8_e4m3, fp8_e5m2, name_of, numpy_of

__all__ = ["run", "exec_program", "registry", "kernels", "Run", "Error", "InputError", "RunError",
           "RaceError", "CheckError", "UsageError", "bf16", "fp8_e4m3", "fp8_e5m2", "convert",
           "to_bf16", "to_float32", "version", "machines"]

__version__ = _lib.lib.nx_version().decode()


class Error(Exception):
    """An nxsim error: .message is the library's one-line message, .status its nx_status."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        self.status = status


class InputError(Error, ValueError):
    """Bad input (NX_ERR_INPUT)."""


class RunError(Error, RuntimeError):
    """The program faulted or deadlocked, or an output could not be written (NX_ERR_RUNTIME)."""


class RaceError(RunError):
    """The race check found a race (NX_ERR_RACE)."""


class UsageError(Error, TypeError):
    """The API was used wrongly (NX_ERR_USAGE)."""


class CheckError(Error, AssertionError):
    """check=True and a result differs from the reference beyond its tolerance."""

    def __init__(self, message, results, run):
        super().__init__(message)
        self.results = results
        self.run = run


_ERRORS = {1: InputError, 2: RunError, 3: RaceError, 4: UsageError, 5: MemoryError}


def _raise(status, msg):
    if status == 0:
        return
    text = msg.text.decode("utf-8", "replace")
    cls = _ERRORS.get(status, Error)
    if cls is MemoryError:
        raise MemoryError(text)
    raise cls(text, status)


def version():
    return __version__


def machines():
    """The machine presets built into the library."""
    names = _lib.lib.nx_machine_presets_list()
    out = []
    i = 0
    while names[i]:
        out.append(names[i].decode())
        i += 1
    return out


# ---- sessions: one per machine, shared (the library's trace cache) ----

class _Session:
    def __init__(self, machine):
        self.ptr = ctypes.c_void_p()
        msg = _lib.Message()
        _raise(_lib.lib.nx_session_open(_c_path("machine", machine) if machine else None, ctypes.byref(self.ptr),
                                        ctypes.byref(msg)), msg)
        self.machine = _lib.lib.nx_session_machine(self.ptr).decode()

    def __del__(self):
        if getattr(self, "ptr", None):
            _lib.lib.nx_session_close(self.ptr)
            self.ptr = None


_sessions = {}
_sessions_lock = threading.Lock()


def _session(machine):
    machine = _machine(machine)
    key = machine or ""
    with _sessions_lock:
        s = _sessions.get(key)
        if s is None:
            s = _sessions[key] = _Session(machine)
        return s


# ---- arguments: checked here, so a wrong one is a UsageError (or, for a
# name the library would cut at a NUL, an InputError), never an
# AttributeError or a value wrapped by ctypes (docs/parts/python.md)

def _c_name(what, s):
    """s (a str) as the C string the library reads; a NUL would end it early."""
    if not isinstance(s, str):
        raise UsageError("%s must be a str, got %s" % (what, type(s).__name__))
    if "\0" in s:
        raise InputError("%s %s holds a NUL byte" % (what, ascii(s)))
    return s.encode("utf-8", "surrogateescape")


def _c_path(what, path):
    """A path (str, bytes or os.PathLike) as bytes for the library."""
    try:
        p = os.fsencode(path)
    except TypeError:
        raise UsageError("%s must be a path (str, bytes or os.PathLike), got %s" % (what, type(path).__name__)) from None
    if b"\0" in p:
        raise InputError("%s %s holds a NUL byte" % (what, ascii(path)))
    return p


def _machine(machine):
    if machine is None:
        return None
    if isinstance(machine, str):
        return machine
    if isinstance(machine, os.PathLike):
        return os.fsdecode(os.fspath(machine))
    raise UsageError("machine must be None, a preset name or a machine file path, got %s" % type(machine).__name__)


def _integer(what, v, lo, hi, hint):
    """v as an int in [lo, hi]: an int or a NumPy integer, never a bool or a float."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise UsageError("%s must be an integer %s, got %r (%s)" % (what, hint, v, type(v).__name__))
    v = int(v)
    if v < lo or v > hi:
        raise UsageError("%s must be an integer %s, got %d" % (what, hint, v))
    return v


def _flag(what, v, none_ok=False):
    if v is None and none_ok:
        return None
    if isinstance(v, (bool, int, np.bool_, np.integer)):
        return bool(v)
    raise UsageError("%s must be True or False, got %s" % (what, type(v).__name__))


def _config(backend, race_check, check, keep_log, progress, grid, seed, pe):
    cfg = _lib.Config()
    _lib.lib.nx_config_init(ctypes.byref(cfg))
    if not isinstance(backend, str) or backend not in ("model", "functional"):
        raise UsageError("backend must be 'model' or 'functional', got %r" % (backend,))
    if not isinstance(pe, str) or pe not in ("model", "rtl"):
        raise UsageError("pe must be 'model' or 'rtl', got %r" % (pe,))
    race_check, check, keep_log = _flag("race_check", race_check), _flag("check", check), _flag("keep_log", keep_log)
    progress = _flag("progress", progress, none_ok=True)
    grid = _integer("grid", grid, 0, 2, "0 (the kernel's), 1 or 2")
    seed = _integer("seed", seed, 0, 2**64 - 1, "in [0, 2**64)")
    cfg.backend = 0 if backend == "model" else 1
    cfg.pe_rtl = 1 if pe == "rtl" else 0
    cfg.race_check = 1 if race_check else 0
    cfg.check = 1 if check else 0
    cfg.keep_log = 1 if keep_log and backend == "model" else 0
    if progress is None:
        progress = sys.stderr is not None and hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    cfg.progress = 1 if progress else 0
    cfg.grid = grid
    cfg.seed = seed
    return cfg


def _operand(i, a):
    """A C-contiguous array of an nxsim dtype, and its dtype name."""
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    name = name_of(a.dtype)
    if name is None:
        raise InputError("operand %d: NumPy dtype %s has no nxsim type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, "
                         "int8, uint8, int16, uint16, int32, uint32); convert it, e.g. a.astype(np.float32) or "
                         "nxsim.to_bf16(a)" % (i, a.dtype))
    if a.ndim < 1:
        raise InputError("operand %d: a 0-dimensional array; a tensor has 1..6 dims" % i)
    return np.ascontiguousarray(a), name


class Run:
    """What one run tells: times, per-engine busy time, the profile summary,
    the check, and the trace files (from the result kept by the library)."""

    def __init__(self, result, session, keep):
        self._ptr = result
        self._session = session  # the result borrows the session (and a program)
        self._keep = keep
        lib = _lib.lib
        self.kernel = lib.nx_result_kernel(result).decode()
        self.machine = session.machine
        self.cores = lib.nx_result_cores(result)
        self.on_model = bool(lib.nx_result_on_model(result))
        self.total_ns = lib.nx_result_total_ns(result)
        self.instructions = lib.nx_result_instructions(result)
        self.new_traces = lib.nx_result_new_traces(result)
        self.cache_hits = lib.nx_result_cache_hits(result)
        self.race_checked = bool(lib.nx_result_race_checked(result))
        self.engines = {}
        if self.on_model:
            for core in range(self.cores):
                for e in range(_lib.ENGINE_COUNT):
                    st = _lib.EngineStats()
                    if lib.nx_result_engine(result, core, e, ctypes.byref(st)) == 0:
                        self.engines[(core, lib.nx_engine_label(e).decode())] = {
                            "instructions": st.instructions, "busy_ns": st.busy_ns, "stall_ns": st.stall_ns,
                            "busy_pct": st.busy_pct, "clock_ghz": st.clock_ghz}
        self.busy = {k: v["busy_ns"] for k, v in self.engines.items()}
        op = _lib.take_string(lib.nx_result_op_json(result))
        self.op = json.loads(op) if op else None
        self.check = None
        if lib.nx_result_checked(result):
            self.check = []
            for j in range(lib.nx_result_count(result)):
                ci = _lib.CheckInfo()
                lib.nx_result_check(result, j, ctypes.byref(ci))
                self.check.append({"max_abs_error": ci.max_abs_error, "max_rel_error": ci.max_rel_error,
                                   "mismatches": ci.mismatches, "first_mismatch": ci.first_mismatch,
                                   "tolerance": ci.tolerance.decode(), "tolerance_abs": ci.tolerance_abs,
                                   "tolerance_rel": ci.tolerance_rel, "reference": ci.reference.decode()})
        self.results = {}

    def __del__(self):
        if getattr(self, "_ptr", None):
            _lib.lib.nx_result_free(self._ptr)
            self._ptr = None

    def __repr__(self):
        return "<nxsim.Run %s on %s, %d core%s, %.3f us simulated>" % (
            self.kernel or "program", self.machine, self.cores, "" if self.cores == 1 else "s", self.total_ns / 1000)

    @property
    def summary(self):
        """The profile summary table `nxsim run` prints (None on the functional backend)."""
        return _lib.take_string(_lib.lib.nx_result_summary(self._ptr, 0))

    @property
    def summary_json(self):
        text = _lib.take_string(_lib.lib.nx_result_summary(self._ptr, 1))
        return json.loads(text) if text else None

    def by_source(self):
        """Busy time grouped by the kernel source line that emitted each
        instruction: a list of dicts (file, line, function, instructions,
        busy_ns, share, engines_busy_ns), busiest first."""
        text = _lib.take_string(_lib.lib.nx_result_by_source(self._ptr, 1))
        if text is None:
            raise UsageError("by_source needs the model's log (keep_log=True, backend='model')")
        return json.loads(text)

    @property
    def by_source_text(self):
        return _lib.take_string(_lib.lib.nx_result_by_source(self._ptr, 0))

    def save_trace(self, path):
        """Writes the Perfetto/Chrome trace JSON (ui.perfetto.dev)."""
        msg = _lib.Message()
        _raise(_lib.lib.nx_result_write_trace(self._ptr, _c_path("trace path", path), ctypes.byref(msg)), msg)

    def save_timeline(self, path):
        """Writes the SVG timeline of the run."""
        msg = _lib.Message()
        _raise(_lib.lib.nx_result_write_timeline(self._ptr, _c_path("timeline path", path), ctypes.byref(msg)), msg)


def _arrays(result):
    """Copies of the result tensors, by name, in order."""
    lib = _lib.lib
    out = {}
    for j in range(lib.nx_result_count(result)):
        t = _lib.TensorInfo()
        lib.nx_result_tensor(result, j, ctypes.byref(t))
        shape = tuple(t.shape[d] for d in range(t.ndims))
        dt = numpy_of(t.dtype.decode())
        buf = ctypes.string_at(lib.nx_result_data(result, j), t.bytes)
        out[t.name.decode()] = np.frombuffer(buf, dtype=dt).reshape(shape).copy()
    return out


def run(func_name, *operands, machine=None, check=False, backend="model", race_check=False, seed=1, grid=0,
        pe="model", keep_log=True, progress=None, attrs=None, **kwargs):
    """Runs kernel `func_name` (a registry key or a composite, see registry()
    and kernels()) on the operands (NumPy arrays, in order; none: the
    kernel's default op) with attributes from `attrs` and keyword arguments
    (JSON-able values: stride=[1, 1], padding=[[0, 0], [3, 0]]).

    Returns (result_0, ..., result_n-1, run): the result arrays, then a Run.
    machine: "trn1", "trn2" (default) or a machine JSON file. check=True
    compares every result with the kernel's reference and raises CheckError
    beyond the tolerance."""
    if attrs is not None and not isinstance(attrs, dict):
        raise UsageError("attrs must be a dict of attribute values, got %s" % type(attrs).__name__)
    all_attrs = dict(attrs or {})
    all_attrs.update(kwargs)
    fname = _c_name("kernel name", func_name)
    names = {k: _c_name("attribute name", k) for k in all_attrs}
    cfg = _config(backend, race_check, check, keep_log, progress, grid, seed, pe)
    session = _session(machine)
    lib = _lib.lib
    msg = _lib.Message()
    call = ctypes.c_void_p()
    _raise(lib.nx_call_new(fname, ctypes.byref(call), ctypes.byref(msg)), msg)
    keep = []
    try:
        for i, a in enumerate(operands):
            arr, name = _operand(i, a)
            keep.append(arr)
            shape = (ctypes.c_uint64 * max(arr.ndim, 1))(*arr.shape)
            _raise(lib.nx_call_add_operand(call, name.encode(), arr.ndim, shape, arr.ctypes.data_as(ctypes.c_void_p),
                                           ctypes.byref(msg)), msg)
        for k, v in all_attrs.items():
            try:
                text = json.dumps(v, allow_nan=True)
            except (TypeError, ValueError, RecursionError) as e:
                raise InputError("attribute %s: %s" % (ascii(k), e)) from None
            _raise(lib.nx_call_set_attr(call, names[k], text.encode(), ctypes.byref(msg)), msg)
        result = ctypes.c_void_p()
        _raise(lib.nx_session_run(session.ptr, call, ctypes.byref(cfg), ctypes.byref(result), ctypes.byref(msg)), msg)
    finally:
        lib.nx_call_free(call)
    r = Run(result, session, None)
    r.results = _arrays(result)
    arrays = list(r.results.values())
    if r.check is not None and lib.nx_result_check_failures(result):
        bad = [name for name, c in zip(r.results, r.check) if c["mismatches"]]
        c = r.check[list(r.results).index(bad[0])]
        raise CheckError("%s: check failed: %s differs from %s beyond the tolerance (%s): %d elements, max abs error %g"
                         % (func_name, bad[0], c["reference"], c["tolerance"], c["mismatches"], c["max_abs_error"]),
                         arrays, r)
    return (*arrays, r)


class _Program:
    """A program of the library: loaded from a file, or an nx_prog pointer
    the library made (ptr, owned from here on)."""

    def __init__(self, path=None, ptr=None):
        self.ptr = ctypes.c_void_p()
        if ptr is not None:
            self.ptr = ptr
        else:
            msg = _lib.Message()
            _raise(_lib.lib.nx_prog_load(_c_path("program path", path), ctypes.byref(self.ptr), ctypes.byref(msg)), msg)
        self.machine = _lib.lib.nx_prog_machine(self.ptr).decode()
        self.tensors = {}
        for i in range(_lib.lib.nx_prog_tensor_count(self.ptr)):
            t = _lib.TensorInfo()
            _lib.lib.nx_prog_tensor(self.ptr, i, ctypes.byref(t))
            self.tensors[t.name.decode()] = (t.dtype.decode(), tuple(t.shape[d] for d in range(t.ndims)),
                                             t.role.decode())

    def __del__(self):
        if getattr(self, "ptr", None):
            _lib.lib.nx_prog_free(self.ptr)
            self.ptr = None


def exec_program(path, inputs=None, machine=None, backend="model", race_check=False, seed=1, pe="model",
                 keep_log=True, progress=None):
    """Runs an ISA program (.nxs or .nxb) like `nxsim exec`: `inputs` maps
    input tensor names to arrays of exactly the tensor's dtype and shape;
    other inputs get pseudo-random values from `seed`. Runs on the program's
    .machine unless `machine` is given. Returns ({output name: array}, Run)."""
    if inputs is not None and not isinstance(inputs, dict):
        raise UsageError("inputs must be a dict of input name to array, got %s" % type(inputs).__name__)
    _config(backend, race_check, False, keep_log, progress, 0, seed, pe)  # checked before the file is read
    machine = _machine(machine)
    prog = _Program(path)
    return exec_loaded(prog, path, inputs, _session(machine or prog.machine), backend, race_check, seed, pe,
                       keep_log, progress)


def exec_loaded(prog, label, inputs, session, backend="model", race_check=False, seed=1, pe="model",
                keep_log=True, progress=None):
    """exec_program's body for a _Program already made (`label` names it in
    messages): nxsim.nki runs its traced kernels through it."""
    path = label
    cfg = _config(backend, race_check, False, keep_log, progress, 0, seed, pe)
    if inputs is not None and not isinstance(inputs, dict):
        raise UsageError("inputs must be a dict of input name to array, got %s" % type(inputs).__name__)
    names, datas, sizes, keep = [], [], [], []
    for name, a in (inputs or {}).items():
        _c_name("input name", name)
        if name not in prog.tensors:
            raise InputError("%s: input %s: the program has no tensor '%s'" % (path, name, name))
        dtype, shape, role = prog.tensors[name]
        arr = np.ascontiguousarray(np.asarray(a))
        if name_of(arr.dtype) != dtype or tuple(arr.shape) != shape:
            raise InputError("%s: input %s: a %s array of shape %s, the tensor is %s %s"
                             % (path, name, name_of(arr.dtype) or arr.dtype, list(arr.shape), dtype, list(shape)))
        keep.append(arr)
        names.append(name.encode())
        datas.append(arr.ctypes.data_as(ctypes.c_void_p))
        sizes.append(arr.nbytes)
    n = len(names)
    result = ctypes.c_void_p()
    msg = _lib.Message()
    st = _lib.lib.nx_session_exec(session.ptr, prog.ptr, n, (ctypes.c_char_p * max(n, 1))(*names),
                                  (ctypes.c_void_p * max(n, 1))(*datas), (ctypes.c_uint64 * max(n, 1))(*sizes),
                                  ctypes.byref(cfg), ctypes.byref(result), ctypes.byref(msg))
    if st != 0:
        text = msg.text.decode("utf-8", "replace")
        msg.text = ("%s: %s" % (path, text)).encode()[: _lib.NX_MESSAGE_MAX - 1]
    _raise(st, msg)
    r = Run(result, session, prog)  # the result borrows the program
    r.results = _arrays(result)
    return r.results, r


def registry(all=False):
    """The internal kernel registry, in the seed's order: a list of dicts
    (index, key, kernel_func, operand_count, args_builder, grid,
    output_is_parameter, registered, family). all=True: the whole
    catalogue, implemented or not."""
    return json.loads(_lib.take_string(_lib.lib.nx_registry_json(1 if all else 0)))


def kernels():
    """Every kernel of the inventory: dicts (name, tier, family, registry_key, implemented, via)."""
    return json.loads(_lib.take_string(_lib.lib.nx_kernels_json()))


def to_bf16(a):
    """A float array as nxsim bf16 (round to nearest even)."""
    return convert(a, "bf16")


def to_float32(a):
    """Any nxsim-typed array as float32 (exact for every narrower float)."""
    return convert(a, "fp32")
