"""The trace of one kernel launch (docs/parts/nki.md, "How a kernel is traced").

The kernel's Python runs once per program of its launch grid; every NKI
call appends instructions here, in program order, each with the kernel's
file:line. The text is an ordered .nxs program (docs/parts/assembly.md:
no semaphores, `.src` lines) that libnxsim's nx_prog_assemble_ordered
synchronises. On-chip memory is allocated here: first fit per core, a
tile's space returns to its pool when the tile object dies (so a loop body
that rebinds a tile name double-buffers without asking).

The trace being built is found through a context variable: NKI calls take
no handle (nl.load(...)), so the tracer must be reachable from them; a
ContextVar keeps two threads tracing at once apart.
"""
import contextvars
import gc
import types
import weakref

from ._errors import user_error, user_location

current = contextvars.ContextVar("nxsim_nki_trace", default=None)


def trace():
    t = current.get()
    if t is None:
        user_error("an nxsim.nki call outside a traced kernel (call the kernel through nki.jit / simulate_kernel)")
    return t


class Insn:
    """One instruction: engine, mnemonic, slots and parameters as text."""

    __slots__ = ("core", "engine", "mnemonic", "slots", "params", "src")

    def __init__(self, core, engine, mnemonic, slots, params, src):
        self.core = core
        self.engine = engine
        self.mnemonic = mnemonic
        self.slots = slots  # [(name, text)], dict-like order
        self.params = params  # [(name, value text)]
        self.src = src

    def set_slot(self, name, text):
        self.slots = [(n, text if n == name else t) for n, t in self.slots]

    def last(self):
        return self

    def retarget(self, dst):
        """Writes dst (an AP) instead of what it wrote."""
        self.set_slot("dst", dst.render())

    def set_param(self, name, value):
        self.params = [(n, v) for n, v in self.params if n != name] + [(name, value)]

    def text(self):
        parts = [self.mnemonic] + ["%s=%s" % kv for kv in self.slots] + ["%s=%s" % kv for kv in self.params]
        return " ".join(parts)


class Pool:
    """First-fit allocator of bytes per partition [0, size); `bank` > 0: an
    allocation of at most `bank` bytes never straddles a multiple of it."""

    def __init__(self, what, size, align, bank=0):
        self.what = what
        self.size = size
        self.align = align
        self.bank = bank
        self.used = []  # sorted [(offset, bytes)]

    def in_use(self):
        return sum(b for _, b in self.used)

    def alloc(self, nbytes):
        nbytes = max(nbytes, 1)
        need = -(-nbytes // self.align) * self.align
        at = 0
        for off, b in self.used + [(self.size, 0)]:
            cand = at
            if self.bank and need <= self.bank and cand // self.bank != (cand + need - 1) // self.bank:
                cand = -(-cand // self.bank) * self.bank
            if cand + need <= off:
                self.used.append((cand, need))
                self.used.sort()
                return cand, need
            at = max(at, off + b)
        return None, need

    def free(self, offset, nbytes):
        try:
            self.used.remove((offset, nbytes))
        except ValueError:
            pass


class Trace:
    def __init__(self, geometry, machine, cores):
        self.geo = geometry
        self.machine = machine
        self.cores = cores
        self.tensors = []  # HbmTensor storages in declaration order
        self.insns = []
        self.core = 0
        self.program_id = (0,)
        self.grid = (1,)
        self.out_ordinal = 0
        self.shared = []  # shared_hbm storages by creation ordinal (one set for every program)
        self.scratch_count = 0
        self.prints = []  # nl.device_print: (prefix, storage, program id)
        self.suppress = 0  # > 0: inside a call under mask=False, whose instructions are dropped
        self.lane = [0] * cores
        self.group = [0] * cores
        # DMA lanes as the authoring layer numbers them (kernels/author):
        # lane l is DMA engine l % engines, that engine's queue l // engines;
        # two queues per engine, so two transfers of an engine can overlap
        self.dma_engines = max(1, int(geometry.get("dma_engines") or 16))
        self.dma_lanes = 2 * self.dma_engines
        self.pools = {}
        self.site_tiles = {}  # (core, buffer, (file, line)) -> [(weakref to tile, its finalizer)]
        for c in range(cores):
            self.pools[(c, "sbuf")] = Pool("SBUF", geometry["sbuf_partition_bytes"], 64)
            self.pools[(c, "psum")] = Pool("PSUM", geometry["psum_partition_bytes"], 4, geometry["psum_bank_bytes"])

    # ---- programs ----
    def begin_program(self, pid, grid, core):
        self.program_id = pid
        self.grid = grid
        self.core = core
        self.out_ordinal = 0

    # ---- memory ----
    def allocate(self, tile, buffer, nbytes, what):
        pool = self.pools[(self.core, buffer)]
        if buffer == "psum" and nbytes > self.geo["psum_bank_bytes"]:
            user_error("%s: a PSUM tile of %d bytes per partition exceeds the %d-byte PSUM bank "
                       "(nl.tile_size.psum_fmax = %d fp32)" % (what, nbytes, self.geo["psum_bank_bytes"],
                                                               self.geo["psum_bank_bytes"] // 4))
        site = (self.core, buffer, user_location()[:2])
        off, need = pool.alloc(nbytes)
        if off is None:
            off, need = self._reclaim_same_site(pool, site, nbytes)
        if off is None:
            user_error("%s: %s allocation of %d bytes per partition does not fit: %d of %d bytes in use"
                       % (what, pool.what, need, pool.in_use(), pool.size))
        fin = weakref.finalize(tile, pool.free, off, need)
        entries = self.site_tiles.setdefault(site, [])
        if len(entries) >= 8:  # the dead ones go: a loop allocates here once per iteration
            entries[:] = [e for e in entries if e[1].alive]
        entries.append((weakref.ref(tile), fin))
        return off

    def _reclaim_same_site(self, pool, site, nbytes):
        """A full pool, and tiles of an earlier iteration allocated on this
        same line still named (`t = nl.zeros(...)` inside a loop: the old
        tile lives until the name is rebound, after this allocation): their
        buffers go to the new tile, oldest first, as the NKI compiler gives
        one declaration one buffer. An old tile used after that is an error
        naming its line (_tensor.AP.render), never a silent overwrite; the
        layer orders the reuse after the old tile's last access."""
        entries = self.site_tiles.get(site, [])
        off, need = None, 0
        for entry in list(entries):
            if off is not None:
                break
            ref, fin = entry
            old = ref()
            if old is None or not fin.alive:
                entries.remove(entry)
                continue
            # only a tile that nothing but variables name: one a list, a
            # dict or a view holds is kept on purpose (tiles = [nl.zeros(...)
            # for ...] all come from one line)
            if any(not isinstance(r, types.FrameType) for r in gc.get_referrers(old)):
                continue
            entries.remove(entry)
            fin()  # frees its bytes now; the finalizer is spent
            old.reclaimed = True
            off, need = pool.alloc(nbytes)
        return off, need if off is not None else -(-max(nbytes, 1) // pool.align) * pool.align

    # ---- instructions ----
    def emit(self, engine, mnemonic, slots, params=(), where=None):
        """Appends one instruction; `where`: its user_location() if the
        caller has it already (the pieces of one transfer share one)."""
        insn = Insn(self.core, engine, mnemonic, list(slots), list(params), where or user_location())
        if not self.suppress:
            self.insns.append(insn)
        return insn

    def dma_lane(self):
        """The next lane for a transfer of one piece: every engine in turn."""
        lane = self.lane[self.core]
        self.lane[self.core] = (lane + 1) % self.dma_lanes
        return lane

    def dma_group(self):
        """The first lane of the next group of `dma_engines` lanes (one queue
        of every engine) for a transfer cut over the engines: successive cut
        transfers alternate between the engines' two queues."""
        g = self.group[self.core]
        self.group[self.core] = (g + 1) % 2
        return g * self.dma_engines

    # ---- the program text ----
    def text(self):
        lines = [".machine %s" % self.machine, ".cores %d" % self.cores]
        for t in self.tensors:
            lines.append(".tensor %s %s %s [%s]" % (t.name, t.role, t.dtype, ",".join(map(str, t.shape))))
        core, engine, src = None, None, None
        for i in self.insns:
            if i.core != core:
                lines.append(".core %d" % i.core)
                core, engine = i.core, None
            if i.src != src:
                file, line, func = i.src
                lines.append(".src %s:%d %s" % (_src_word(file), line, _src_word(func) if func else ""))
                src = i.src
            if i.engine != engine:
                lines.append(".engine %s" % i.engine)
                engine = i.engine
            lines.append("    " + i.text())
        return "\n".join(lines) + "\n"


def _src_word(s):
    """A .src word: no whitespace or ';' (docs/parts/assembly.md)."""
    return "".join("_" if c.isspace() or c == ";" else c for c in s) or "_"
