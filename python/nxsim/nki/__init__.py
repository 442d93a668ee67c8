"""nxsim.nki: run NKI kernels (the Python-embedded kernel language of
Trainium) on nxsim's functional executor or SystemC model, with values,
simulated time and the kernel's own source lines (docs/parts/nki.md).

    import numpy as np
    import nxsim.nki as nki
    import nxsim.nki.language as nl

    @nki.jit
    def double(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), 2.0))
        return out

    x = np.random.rand(128, 512).astype(np.float32)
    y = double(x)                                   # runs it
    y, run = nki.profile_kernel(double, x)          # values + simulated time
    print(run.total_ns, run.by_source_text)

Every entry point takes machine= (a preset such as "trn2", "trn1", or a
machine file; default $NXSIM_MACHINE, else trn2) and backend= ("model",
the default, or "functional"). Errors in a kernel raise KernelError (an
nxsim.InputError) whose message starts with the kernel's FILE:LINE;
Unsupported (also a NotImplementedError) names an NKI call nxsim does not
implement.
"""
import functools

from . import _trace, language
from ._errors import KernelError, Unsupported, entry_point
from ._launch import Traced, trace_kernel

__all__ = ["jit", "simulate_kernel", "simulate", "profile_kernel", "benchmark", "baremetal", "trace", "KernelError",
           "Unsupported", "Traced"]


class Kernel:
    """A jitted kernel: call it with NumPy arrays to run it; kernel[N] (or
    [N, M]) is the same kernel on a launch grid."""

    def __init__(self, fn, grid=None, options=None):
        self.fn = fn
        self.grid = grid
        self.options = dict(options or {})
        functools.update_wrapper(self, fn)

    @entry_point
    def __getitem__(self, grid):
        g = grid if isinstance(grid, tuple) else (grid,)
        if not g or any(not isinstance(n, int) or n < 1 for n in g):
            raise KernelError("%s[%r]: a launch grid is one or more positive integers" % (self.fn.__name__, grid))
        if any(isinstance(n, language._Cores) for n in g[1:]):
            # consecutive programs share a core: the core dimension is the first
            raise Unsupported("%s%r: nl.nc on a grid dimension after the first is not supported by nxsim.nki "
                              "(docs/parts/nki.md lists what is)" % (self.fn.__name__, list(g)))
        return Kernel(self.fn, tuple(n if isinstance(n, language._Cores) else int(n) for n in g), self.options)

    @entry_point
    def __call__(self, *args, **kwargs):
        if _trace.current.get() is not None:
            # called from a kernel being traced (a helper decorated with
            # nki.jit, as the public rotary tutorial's core is): its Python
            # runs inline on the caller's tiles, as NKI inlines it
            if self.grid:
                raise KernelError("%s%s: a kernel called from another kernel runs inline, without a launch grid"
                                  % (self.fn.__name__, list(self.grid)))
            return self.fn(*args, **kwargs)
        return simulate_kernel(self, *args, **kwargs)

    def __repr__(self):
        return "<nxsim.nki kernel %s%s>" % (self.fn.__name__, list(self.grid) if self.grid else "")


def jit(fn=None, **options):
    """@nki.jit or @nki.jit(...): options that mean something only to the
    public compiler (mode=, platform_target=, ...) are accepted and ignored."""
    if fn is None:
        return lambda f: Kernel(f, None, options)
    if isinstance(fn, Kernel):
        return fn
    return Kernel(fn, None, options)


def _kernel(k):
    if isinstance(k, Kernel):
        return k
    if isinstance(k, (_Runner, _Benchmarked)):  # baremetal(k)[grid] handed to simulate_kernel
        return k.kernel
    if callable(k):
        return Kernel(k)
    raise KernelError("expected an nki.jit kernel, got %r" % (k,))


@entry_point
def trace(kernel, *args, machine=None, **kwargs):
    """Traces kernel on these arguments without running it: a Traced with
    .text (the ordered .nxs), .save(path) (.nxs or .nxb for `nxsim exec`)."""
    k = _kernel(kernel)
    t = trace_kernel(k.fn, k.grid, args, kwargs, machine)
    t.program()
    return t


def _run(kernel, args, kwargs, machine, backend, keep_log, race_check=False):
    k = _kernel(kernel)
    t = trace_kernel(k.fn, k.grid, args, kwargs, machine)
    return t.run(backend=backend, keep_log=keep_log, race_check=race_check)


@entry_point
def simulate_kernel(kernel, *args, machine=None, backend="model", **kwargs):
    """Runs the kernel on NumPy arrays; returns what it returns, as arrays."""
    values, _ = _run(kernel, args, kwargs, machine, backend, keep_log=False)
    return values


class _Runner:
    """What nki.baremetal(kernel) / nki.simulate(kernel) return: calling it
    runs the kernel (simulate_kernel); [grid] is the same on a launch grid
    (the public flash-attention test's baremetal(flash_fwd)[bs, heads],
    which it also hands to simulate_kernel)."""

    def __init__(self, kernel, machine, backend):
        self.kernel = _kernel(kernel)
        self.machine = machine
        self.backend = backend
        functools.update_wrapper(self, self.kernel.fn)

    def __getitem__(self, grid):
        return _Runner(self.kernel[grid], self.machine, self.backend)

    @entry_point
    def __call__(self, *args, **kwargs):
        return simulate_kernel(self.kernel, *args, machine=self.machine, backend=self.backend, **kwargs)


def baremetal(kernel=None, machine=None, backend="model", **hardware_options):
    """nki.baremetal(kernel) / @nki.baremetal(...): like simulate_kernel
    (options for hardware runs, such as save_neff_name, are ignored)."""
    def wrap(k):
        return _Runner(k, machine, backend)

    return wrap if kernel is None else wrap(kernel)


def simulate(kernel=None, machine=None, backend="model", **options):
    """nki.simulate(kernel)(*args) (the newer nki package's CPU simulator
    entry point): the same run as simulate_kernel, on nxsim's model."""
    return baremetal(kernel, machine=machine, backend=backend, **options)


@entry_point
def profile_kernel(kernel, *args, machine=None, backend="model", trace_file=None, timeline_file=None,
                   race_check=False, **kwargs):
    """Runs the kernel and returns (values, run): run is an nxsim.Run with
    total_ns (simulated), summary, by_source() keyed by the kernel's file:line,
    save_trace(path) (Perfetto) and save_timeline(path) (SVG). race_check=True
    (model only) fails the run with nxsim.RaceError if two engines' accesses
    are not ordered (docs/parts/race.md)."""
    values, run = _run(kernel, args, kwargs, machine, backend, keep_log=True, race_check=race_check)
    if trace_file:
        run.save_trace(trace_file)
    if timeline_file:
        run.save_timeline(timeline_file)
    return values, run


class _Latency:
    def __init__(self, us):
        self.us = us

    def get_latency_percentile(self, percentile):
        """The simulated latency in microseconds (every percentile: the model is deterministic)."""
        return self.us


class _BenchmarkResult:
    def __init__(self, run):
        self.run = run
        self.nc_latency = _Latency(run.total_ns / 1000.0)


class _Benchmarked:
    def __init__(self, kernel, machine, backend, options):
        self.kernel = _kernel(kernel)
        self.machine = machine
        self.backend = backend
        self.options = options  # warmup=, iters=, save_neff_name=, ...: noted, one run suffices
        self.benchmark_result = None
        functools.update_wrapper(self, self.kernel.fn)

    def __getitem__(self, grid):
        return _Benchmarked(self.kernel[grid], self.machine, self.backend, self.options)

    @entry_point
    def __call__(self, *args, **kwargs):
        values, run = profile_kernel(self.kernel, *args, machine=self.machine, backend=self.backend, **kwargs)
        if not run.on_model:
            raise KernelError("nki.benchmark needs the model (backend='model'): the functional executor has no time")
        self.benchmark_result = _BenchmarkResult(run)
        return values


def benchmark(kernel=None, machine=None, backend="model", **options):
    """nki.benchmark(warmup=, iters=, ...)(kernel) or nki.benchmark(kernel):
    calling the result runs the kernel once on the model and sets
    .benchmark_result.nc_latency.get_latency_percentile(p) (microseconds)."""
    if kernel is None:
        return lambda k: _Benchmarked(k, machine, backend, options)
    return _Benchmarked(kernel, machine, backend, options)
