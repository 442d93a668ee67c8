// The platform: elaboration, one run, the semaphore hub, the conflict
// calendars, deadlock reports and the result statistics.
#include "platform.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <sys/mman.h>

#include "dma.hpp"
#include "engine.hpp"
#include "rtl/rtl_pe.hpp"

namespace nxsim {

// ---- SemaphoreHub ----------------------------------------------------------

SemaphoreHub::SemaphoreHub(sc_core::sc_module_name name, Platform &plat)
    : sc_core::sc_module(name), plat_(plat) {
    SC_HAS_PROCESS(SemaphoreHub);
    SC_THREAD(thread);
}

void SemaphoreHub::reset() {
    heap_.clear();
    order_ = 0;
    wake_.cancel();
}

void SemaphoreHub::push(const Entry &e) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), later);
    // the earliest pending notification survives
    wake_.notify(sc_core::sc_time::from_value(e.t - now_fs()));
}

void SemaphoreHub::push_sem(fs_t t, uint32_t core, uint32_t sem, uint32_t amount,
                            nx_sim_record *rec, nx_engine engine, uint32_t index) {
    push(Entry{t, order_++, rec, amount, index, 0, (uint8_t)core, (uint8_t)sem, (uint8_t)engine});
}

void SemaphoreHub::push_barrier(fs_t t, uint32_t core, nx_sim_record *rec) {
    push(Entry{t, order_++, rec, 0, 0, 1, (uint8_t)core, 0, 0});
}

void SemaphoreHub::apply(const Entry &e, bool notify) {
    RunState &rs = plat_.rs;
    if (e.barrier) {
        rs.barrier_visible[e.core]++;
        rs.seq++;
        if (e.rec) e.rec->inc_seq = rs.seq;
        if (notify) plat_.barrier_ev.notify();
        return;
    }
    uint32_t *sem = &rs.st->core[e.core].sems[e.sem];
    if (*sem > UINT32_MAX - e.amount) {
        char where[96];
        nx_engine eng = (nx_engine)e.engine;
        nx_insn scratch;
        nx_insn_where(where, sizeof where, e.core, eng, e.index,
                      nx_program_insn(rs.prog, e.core, eng, e.index, &scratch));
        nx_error err;
        nx_fail(&err, "%s: semaphore %u overflows (%u + %u)", where, (unsigned)e.sem, *sem, e.amount);
        plat_.fail(err);
        return;
    }
    *sem += e.amount;
    rs.seq++;
    if (e.rec) e.rec->inc_seq = rs.seq;
    if (notify) plat_.sem_event(e.core, e.sem).notify();
}

void SemaphoreHub::flush() {
    while (!heap_.empty() && !plat_.rs.failed) {
        std::pop_heap(heap_.begin(), heap_.end(), later);
        Entry e = heap_.back();
        heap_.pop_back();
        apply(e, false);
    }
    heap_.clear();
}

void SemaphoreHub::thread() {
    for (;;) {
        wait(wake_);
        RunState &rs = plat_.rs;
        fs_t now = now_fs();
        while (!rs.abort && !heap_.empty() && heap_.front().t <= now) {
            std::pop_heap(heap_.begin(), heap_.end(), later);
            Entry e = heap_.back();
            heap_.pop_back();
            apply(e, true);
        }
        if (rs.abort) {
            heap_.clear();
            continue;
        }
        if (!heap_.empty()) wake_.notify(sc_core::sc_time::from_value(heap_.front().t - now));
    }
}

// ---- Calendar --------------------------------------------------------------

fs_t Calendar::earliest(nx_engine engine, fs_t ready, fs_t dur, uint64_t mask) const {
    fs_t t = ready;
    // the conflicting engine's intervals are disjoint and sorted by start
    for (const Slot &s : slots_) {
        if (s.engine == engine || !(s.mask & mask) || s.end <= t) continue;
        if (s.start >= t + dur) break;
        t = s.end;
    }
    return t;
}

void Calendar::insert(nx_engine engine, fs_t start, fs_t dur, uint64_t mask, fs_t horizon) {
    if (slots_.size() >= 64)
        slots_.erase(std::remove_if(slots_.begin(), slots_.end(),
                                    [horizon](const Slot &s) { return s.end <= horizon; }),
                     slots_.end());
    Slot s{start, start + dur, mask, engine};
    auto at = std::upper_bound(slots_.begin(), slots_.end(), start,
                               [](fs_t v, const Slot &x) { return v < x.start; });
    slots_.insert(at, s);
}

// ---- Platform --------------------------------------------------------------

fs_t Platform::conflict_horizon(uint32_t core) const {
    fs_t h = now_fs();
    fs_t lowest = ~(fs_t)0;
    for (nx_engine e : {NX_ENG_DVE, NX_ENG_ACT, NX_ENG_POOL})
        lowest = std::min(lowest, engine_[core][e]->horizon());
    return std::max(h, lowest);
}

Platform::Platform(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    hub_.reset(new SemaphoreHub("hub", *this));
    dma_.reset(new DmaSystem("dma", *this));
    for (uint32_t c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            char nm[32];
            std::snprintf(nm, sizeof nm, "core%u_%s", c, nx_engine_name((nx_engine)e));
            engine_[c][e].reset(new Engine(nm, *this, c, (nx_engine)e));
        }
    sem_ev_.reset(new sc_core::sc_event[(size_t)NX_MAX_CORES * NX_MAX_SEMAPHORES]);
    // The RTL's clock period is fixed at elaboration, but the PE clock comes
    // with each run's machine: the PE engine charges the RTL's cycle count at
    // the run's PE clock. The array itself ticks at 1 ps, shorter than any
    // real PE cycle, so a call always ends at or before the engine's local
    // end time (engines run ahead of SystemC time, never behind); in the VCD
    // each instruction's cycles are 1 ps apart from where it started.
    const sc_core::sc_time rtl_period(1, sc_core::SC_PS);
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        char nm[32];
        std::snprintf(nm, sizeof nm, "core%u_rtl_pe", c);
        rtl_pe_[c].reset(new nx_rtl_pe(nm, rtl_period));
    }
}

Platform::~Platform() = default;

void Platform::wake_all(bool immediate) {
    for (size_t i = 0; i < (size_t)NX_MAX_CORES * NX_MAX_SEMAPHORES; i++) {
        if (immediate) sem_ev_[i].notify();
        else sem_ev_[i].notify(sc_core::SC_ZERO_TIME);
    }
    if (immediate) barrier_ev.notify();
    else barrier_ev.notify(sc_core::SC_ZERO_TIME);
    hub_->wake();
    dma_->wake();
}

void Platform::fail(const nx_error &e) {
    if (!rs.failed) {
        rs.failed = true;
        rs.error = e;
    }
    if (!rs.abort) {
        rs.abort = true;
        wake_all(true);
    }
}

void Platform::unit_done() {
    if (rs.pending > 0 && --rs.pending == 0) sc_core::sc_pause();
}

static double wall_seconds() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void Platform::progress(uint64_t more_insns, fs_t local) {
    rs.done_insns += more_insns;
    if (local > rs.progress_time) rs.progress_time = local;
    double now = wall_seconds();
    if (now - rs.progress_start < rs.progress_delay) return;
    if (rs.progress_shown && now - rs.progress_last < 0.25) return;
    print_progress(now);
}

void Platform::print_progress(double now) {
    rs.progress_last = now;
    rs.progress_shown = true;
    std::fprintf(stderr, "\rnxsim: %.3f us simulated, %llu/%llu instructions retired, %.1f s wall   ",
                 fs_to_ns(std::max(rs.progress_time, now_fs()) - rs.t0) * 1e-3,
                 (unsigned long long)rs.done_insns, (unsigned long long)rs.total_insns, now - rs.progress_start);
    std::fflush(stderr);
}

// --vcd: core 0's array traces to `path`, core c > 0's to "<stem>.core<c>.vcd".
// nx_rtl_pe traces to one file for the life of the process, so a core that
// already traces to the same file keeps it (the file then holds every RTL
// run of the process since) and another file is an error.
int Platform::trace_rtl(const char *path, uint32_t cores, nx_error *err) {
    for (uint32_t c = 0; c < cores && c < NX_MAX_CORES; c++) {
        std::string file(std::strlen(path) + 32, '\0');
        file.resize(std::strlen(nx_sim_vcd_path(path, c, &file[0], file.size())));
        if (rtl_vcd_[c] == file) continue;
        if (rtl_pe_[c]->trace_vcd(file.c_str(), err) != 0) return -1;
        rtl_vcd_[c] = file;
    }
    return 0;
}

void Platform::flush_rtl_vcd() {
    for (uint32_t c = 0; c < NX_MAX_CORES; c++)
        if (!rtl_vcd_[c].empty()) rtl_pe_[c]->flush_vcd();
}

// The run's last state (when it lasted past the delay), then a newline.
void Platform::finish_progress() {
    double now = wall_seconds();
    if (rs.opt.progress && (rs.progress_shown || now - rs.progress_start >= rs.progress_delay)) print_progress(now);
    if (rs.progress_shown) std::fputc('\n', stderr);
    rs.progress_shown = false;
}

// The same text as the functional executor's report (isa/exec.c).
void Platform::report_deadlock() {
    char msg[NX_ERROR_MAX];
    size_t used = (size_t)std::snprintf(msg, sizeof msg, "deadlock:");
    for (uint32_t c = 0; c < rs.prog->cores; c++) {
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const Engine &eng = *engine_[c][e];
            if (eng.finished() || used >= sizeof msg) continue;
            nx_insn scratch;
            const nx_insn *insn = nx_program_insn(rs.prog, c, (nx_engine)e, eng.pc(), &scratch);
            char where[96];
            nx_insn_where(where, sizeof where, c, (nx_engine)e, eng.pc(), insn);
            const uint32_t *sems = rs.st->core[c].sems;
            int n;
            uint32_t short_sem = nx_wait_short(insn->wait_sem, insn->wait_span, insn->wait_value, sems);
            if (insn->opcode == NX_OP_CORE_BARRIER && short_sem == NX_SEM_NONE)
                n = std::snprintf(msg + used, sizeof msg - used, " %s waits at barrier %llu for the other core;",
                                  where, (unsigned long long)eng.barrier_id());
            else
                n = std::snprintf(msg + used, sizeof msg - used, " %s waits for sem%u >= %u (is %u);", where,
                                  short_sem, insn->wait_value, sems[short_sem]);
            if (n > 0) used += (size_t)n;
        }
    }
    if (used > 0 && used < sizeof msg && msg[used - 1] == ';') msg[used - 1] = '\0';
    nx_error err;
    nx_fail(&err, "%s", msg);
    if (!rs.failed) {
        rs.failed = true;
        rs.error = err;
    }
}

int Platform::collect(nx_sim_result *out, fs_t t_end) {
    out->start_ns = fs_to_ns(rs.t0);
    out->total_ns = fs_to_ns(t_end - rs.t0);
    for (uint32_t c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const Engine &eng = *engine_[c][e];
            nx_sim_engine_stats &s = out->engine[c][e];
            s.instructions = eng.stats().instructions;
            s.busy_ns = fs_to_ns(eng.busy_fs());
            s.stall_ns = fs_to_ns(eng.stall_fs());
            out->instructions += s.instructions;
            out->flops += eng.flops();
        }
    // every queue of the machine, core-major, as the DMA system keeps them
    const std::vector<uint64_t> &qb = dma_->queue_bytes(), &qn = dma_->queue_transfers();
    const std::vector<double> &qt = dma_->queue_busy_ns(), &eb = dma_->engine_busy_ns();
    out->dma_queues = (uint32_t)(qb.size() / NX_MAX_CORES);
    out->dma_engines = (uint32_t)(eb.size() / NX_MAX_CORES);
    if (!eb.empty()) {
        out->dma_engine_busy_ns = (double *)std::malloc(eb.size() * sizeof(double));
        if (!out->dma_engine_busy_ns) return -1;
        std::memcpy(out->dma_engine_busy_ns, eb.data(), eb.size() * sizeof(double));
    }
    if (qb.empty()) return 0;
    out->dma_queue_bytes = (uint64_t *)std::malloc(qb.size() * sizeof(uint64_t));
    out->dma_queue_transfers = (uint64_t *)std::malloc(qn.size() * sizeof(uint64_t));
    out->dma_queue_busy_ns = (double *)std::malloc(qt.size() * sizeof(double));
    if (!out->dma_queue_bytes || !out->dma_queue_transfers || !out->dma_queue_busy_ns) return -1;
    std::memcpy(out->dma_queue_bytes, qb.data(), qb.size() * sizeof(uint64_t));
    std::memcpy(out->dma_queue_transfers, qn.data(), qn.size() * sizeof(uint64_t));
    std::memcpy(out->dma_queue_busy_ns, qt.data(), qt.size() * sizeof(double));
    return 0;
}

// The log is written once per instruction: on a large run most of its cost
// would be page faults, so big logs ask for transparent huge pages. Freed
// with free() (nx_sim_result_free).
static nx_sim_record *alloc_log(uint64_t records) {
    size_t bytes = (size_t)records * sizeof(nx_sim_record);
    const size_t huge = (size_t)2 << 20;
    void *p = nullptr;
    if (bytes >= huge) {
        if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
        madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    } else {
        p = std::malloc(bytes);
        if (!p) return nullptr;
    }
    std::memset(p, 0, bytes);
    return (nx_sim_record *)p;
}

int Platform::run(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_sim_options *opt,
                  const nx_sim_pe_options *pe, nx_sim_result *out, nx_error *err) {
    std::memset(out, 0, sizeof *out);
    if (prog->cores > st->cores || prog->cores > NX_MAX_CORES || prog->sem_count > st->sem_count ||
        prog->hbm_bytes > st->hbm_bytes)
        return nx_fail(err, "state was initialised for a smaller program (%u cores, %u semaphores, "
                            "%llu HBM bytes)",
                       st->cores, st->sem_count, (unsigned long long)st->hbm_bytes);
    for (unsigned e = 0; e < NX_ENG_COUNT; e++)
        if (!(m->clock_ghz[e] > 0.0))
            return nx_fail(err, "machine %s: clock of %s is %g GHz, must be > 0", m->geo.name,
                           nx_engine_name((nx_engine)e), m->clock_ghz[e]);
    if (pe && pe->vcd_path) {
        if (!pe->pe_rtl) return nx_fail(err, "VCD %s: vcd_path needs pe_rtl (only the RTL has a waveform)", pe->vcd_path);
        // before the first sc_start the file opens at the start of simulation
        if (trace_rtl(pe->vcd_path, prog->cores, err) != 0) return -1;
    }
    if (!initialised_) {
        sc_core::sc_start(sc_core::SC_ZERO_TIME); // end of elaboration: threads reach their first wait
        initialised_ = true;
    }

    rs = RunState{};
    rs.m = m;
    rs.prog = prog;
    rs.st = st;
    if (opt) rs.opt = *opt;
    if (pe) rs.pe = *pe;
    rs.t0 = now_fs();
    if (rs.opt.progress) {
        rs.progress_start = wall_seconds();
        const char *delay = std::getenv("NXSIM_PROGRESS_DELAY");
        char *end = nullptr;
        double d = delay ? std::strtod(delay, &end) : 1.0;
        rs.progress_delay = delay && end != delay && d >= 0 ? d : 1.0;
    }

    // records: every instruction at base[c][e] + index, then per core one per DMA transfer
    uint64_t transfers[NX_MAX_CORES] = {};
    uint64_t records = 0, streams = 0;
    for (uint32_t c = 0; c < prog->cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = &prog->stream[c][e];
            records += s->count;
            rs.total_insns += s->count;
            if (s->count) streams++;
            if (e != NX_ENG_SP) continue;
            for (uint32_t i = 0; i < s->count; i++)
                if (nx_opcode_is_dma(s->recs[i].opcode)) transfers[c]++;
        }
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) records += transfers[c];
    nx_sim_record *log = nullptr;
    if (rs.opt.keep_log && records) {
        log = alloc_log(records);
        if (!log)
            return nx_fail(err, "out of memory for the log of %llu records", (unsigned long long)records);
    }
    rs.log = log;
    size_t at = 0;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = c < prog->cores ? &prog->stream[c][e] : nullptr;
            engine_[c][e]->prepare(s, log ? log + at : nullptr, 1e6 / m->clock_ghz[e]);
            if (s) at += s->count;
        }
    nx_sim_record *dma_log[NX_MAX_CORES] = {};
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        dma_log[c] = log && transfers[c] ? log + at : nullptr;
        at += transfers[c];
    }
    dma_->prepare(transfers, dma_log);
    hub_->reset();
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        sbuf_cal_[c].reset();
        psum_cal_[c].reset();
    }
    rs.pending = streams;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) rs.pending += transfers[c];

    if (rs.pending > 0) {
        for (uint32_t c = 0; c < NX_MAX_CORES; c++)
            for (unsigned e = 0; e < NX_ENG_COUNT; e++)
                if (engine_[c][e]->active()) engine_[c][e]->start();
        sc_core::sc_start();
        if (!rs.failed && rs.pending > 0) report_deadlock();
    }
    if (rs.failed) {
        // unwind every thread to its idle loop, ready for the next run
        rs.abort = true;
        wake_all(false);
        sc_core::sc_start();
        finish_progress();
        flush_rtl_vcd();
        std::free(log);
        if (err) *err = rs.error;
        return -1;
    }
    fs_t t_end = now_fs();
    hub_->flush();
    finish_progress();
    flush_rtl_vcd();
    if (rs.failed) {
        std::free(log);
        if (err) *err = rs.error;
        return -1;
    }
    if (collect(out, t_end) != 0) {
        nx_sim_result_free(out);
        std::free(log);
        return nx_fail(err, "out of memory for the DMA queue statistics");
    }
    out->log = log;
    out->log_count = log ? records : 0;
    return 0;
}

} // namespace nxsim
