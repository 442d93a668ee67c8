// The SystemC platform: per core the five engine sequencers (PE, DVE, ACT,
// POOL, SP), the semaphores and the structural-conflict calendars; the DMA
// system (every queue of both cores, sharing HBM); the semaphore hub that
// makes increments visible in time order. Elaborated once per process and
// reused: Platform::run loads a program, resumes the kernel with sc_start()
// and returns when every stream has ended (the model calls sc_pause()).
//
// With --pe rtl (nx_sim_pe_options.pe_rtl) each core's PE engine also drives
// that core's RTL PE array (nx_rtl_pe, sim/rtl/). The arrays are built during
// elaboration (a Verilated SystemC module cannot be created later) and cost
// nothing while idle: they have no clock of their own (nx_rtl_pe toggles the
// array clock only inside its calls), so a model run schedules no events in
// them.
//
// Time: absolute SystemC time in femtoseconds (the resolution is 1 fs), kept
// as integers so that every run computes the same durations whatever its
// absolute start time. Engines are temporally decoupled (see engine.hpp).
#ifndef NXSIM_SIM_PLATFORM_HPP
#define NXSIM_SIM_PLATFORM_HPP

#include <systemc>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../isa/error.h"
#include "../isa/exec.h"
#include "../isa/insn.h"
#include "../isa/opcodes.h"
#include "../isa/program.h"
#include "../isa/state.h"
#include "../isa/validate.h"

#include "model.h"

class nx_rtl_pe;

namespace nxsim {

using fs_t = std::uint64_t;

inline fs_t now_fs() { return sc_core::sc_time_stamp().value(); }
inline double fs_to_ns(fs_t t) { return (double)t * 1e-6; }

// Thrown inside a SystemC thread to unwind it to its idle loop when the run
// is aborted (a fault, or after a deadlock). Never leaves the thread.
struct RunAborted {};

class Engine;
class DmaSystem;
class Platform;

// Makes semaphore increments and barrier arrivals visible at their time, in
// one global order (the sequence numbers of nx_sim_record). Pushes are
// always made at a SystemC time no later than the visibility time, so a
// heap ordered by (time, push order) suffices and nothing waits for it.
class SemaphoreHub : public sc_core::sc_module {
  public:
    SemaphoreHub(sc_core::sc_module_name name, Platform &plat);
    void reset();
    void push_sem(fs_t t, uint32_t core, uint32_t sem, uint32_t amount, nx_sim_record *rec,
                  nx_engine engine, uint32_t index);
    void push_barrier(fs_t t, uint32_t core, nx_sim_record *rec);
    // End of run: applies what is still pending (no one waits any more).
    void flush();
    void wake() { wake_.notify(sc_core::SC_ZERO_TIME); }

  private:
    struct Entry {
        fs_t t;
        uint64_t order;
        nx_sim_record *rec;
        uint32_t amount;
        uint32_t index;
        uint8_t barrier;
        uint8_t core;
        uint8_t sem;
        uint8_t engine;
    };
    static bool later(const Entry &a, const Entry &b) {
        return a.t != b.t ? a.t > b.t : a.order > b.order;
    }
    void push(const Entry &e);
    void apply(const Entry &e, bool notify);
    void thread();

    Platform &plat_;
    std::vector<Entry> heap_;
    uint64_t order_ = 0;
    sc_core::sc_event wake_;
};

// Structural conflicts (machine "conflicts"): a per-core calendar of
// intervals during which an engine holds SBUF or PSUM banks. A request takes
// the earliest start >= its ready time whose interval overlaps no interval of
// a conflicting engine. Bookings come in host order, not time order (engines
// are decoupled), so a later request may fill an earlier gap.
class Calendar {
  public:
    void reset() { slots_.clear(); }
    // Earliest start >= ready of [start, start + dur) that overlaps no
    // interval of another engine sharing a bit of `mask`.
    fs_t earliest(nx_engine engine, fs_t ready, fs_t dur, uint64_t mask) const;
    // Books [start, start + dur); intervals that ended by `horizon` are
    // dropped (every later request is ready at or after it).
    void insert(nx_engine engine, fs_t start, fs_t dur, uint64_t mask, fs_t horizon);

  private:
    struct Slot {
        fs_t start, end;
        uint64_t mask;
        nx_engine engine;
    };
    std::vector<Slot> slots_; // sorted by start
};

// Everything a run shares between the engines, the DMA system and the hub.
struct RunState {
    const nx_machine *m = nullptr;
    const nx_program *prog = nullptr;
    nx_state *st = nullptr;
    nx_sim_options opt{};
    nx_sim_pe_options pe{};  // PE datapath (RTL or model) and VCD
    fs_t t0 = 0;             // absolute start
    bool abort = false;      // a fault or a deadlock: every thread unwinds
    bool failed = false;
    nx_error error{};
    uint64_t pending = 0;    // engine streams + DMA transfers not finished
    uint64_t seq = 0;        // semaphore events made visible so far
    uint64_t barrier_arrived[NX_MAX_CORES] = {};  // arrivals per core (own view)
    uint64_t barrier_visible[NX_MAX_CORES] = {};  // arrivals the other cores see
    nx_sim_record *log = nullptr;
    uint64_t done_insns = 0;   // progress
    uint64_t total_insns = 0;
    fs_t progress_time = 0;    // latest engine time reported
    double progress_start = 0.0; // wall clock (s) at the start of the run
    double progress_delay = 1.0; // wall seconds before the first line
    double progress_last = 0.0;  // wall clock of the last line
    bool progress_shown = false;
};

class Platform : public sc_core::sc_module {
  public:
    explicit Platform(sc_core::sc_module_name name);
    ~Platform() override;

    // pe: NULL = the functional model on the PE (nx_sim_pe_options all zero).
    int run(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_sim_options *opt,
            const nx_sim_pe_options *pe, nx_sim_result *out, nx_error *err);

    // ---- for the engines, the DMA system and the hub ----
    RunState rs;
    sc_core::sc_event barrier_ev; // a barrier arrival became visible
    sc_core::sc_event &sem_event(uint32_t core, uint32_t sem) {
        return sem_ev_[core * NX_MAX_SEMAPHORES + sem];
    }
    SemaphoreHub &hub() { return *hub_; }
    DmaSystem &dma() { return *dma_; }
    Calendar &sbuf_calendar(uint32_t core) { return sbuf_cal_[core]; }
    Calendar &psum_calendar(uint32_t core) { return psum_cal_[core]; }
    nx_rtl_pe &rtl_pe(uint32_t core) { return *rtl_pe_[core]; }
    // The earliest local time at which an engine of `core` that books the
    // conflict calendars (DVE, ACT, POOL) may still make a request. Engines
    // are decoupled, so SystemC time lags far behind them; pruning by it
    // alone would keep every booking of a long run.
    fs_t conflict_horizon(uint32_t core) const;

    // A fault: keeps the first error, aborts the run, wakes every thread.
    void fail(const nx_error &e);
    // An engine stream or a DMA transfer finished; pauses when none is left.
    void unit_done();
    // Progress on stderr (opt.progress): nothing during the first second of
    // wall time (NXSIM_PROGRESS_DELAY seconds, for tests), then one line
    // rewritten in place four times a second at most: simulated time,
    // instructions retired of the program's total, wall time. `local` is the
    // reporting engine's own (decoupled) time.
    void progress(uint64_t more_insns, fs_t local);

  private:
    void wake_all(bool immediate);
    void report_deadlock();
    int collect(nx_sim_result *out, fs_t t_end); // -1: out of memory
    void finish_progress();
    void print_progress(double now);
    int trace_rtl(const char *path, uint32_t cores, nx_error *err);
    void flush_rtl_vcd();

    std::unique_ptr<SemaphoreHub> hub_;
    std::unique_ptr<DmaSystem> dma_;
    std::unique_ptr<Engine> engine_[NX_MAX_CORES][NX_ENG_COUNT];
    std::unique_ptr<nx_rtl_pe> rtl_pe_[NX_MAX_CORES];
    std::string rtl_vcd_[NX_MAX_CORES];  // the file each core's array traces to ("" = none)
    std::unique_ptr<sc_core::sc_event[]> sem_ev_;
    Calendar sbuf_cal_[NX_MAX_CORES], psum_cal_[NX_MAX_CORES];
    bool initialised_ = false;
};

} // namespace nxsim

#endif
