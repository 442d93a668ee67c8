// One engine sequencer (PE, DVE, ACT, POOL or SP of one core): an SC_THREAD
// that fetches its own instruction stream and runs it.
//
// Temporal decoupling: the engine keeps its own time (t_free_, always >= the
// SystemC time) and only calls wait() when it must interact with the others:
// before a semaphore wait that is not yet satisfied, at a core barrier, and
// when its stream ends. Increments need no wait: they are handed to the
// semaphore hub with their visibility time, which is never earlier than the
// SystemC time of the push. A satisfied wait needs none either: semaphores
// only grow, so a value visible now is visible at any later local time.
//
// Each instruction's semantics (nx_insn_execute) run when the sequencer
// processes it, in stream order, before its increment is handed to the hub;
// another engine that waits for that increment runs its own instructions
// only after seeing it. So the data effects follow every order the program's
// semaphores and barriers impose, and a race-free program computes exactly
// what the functional executor computes.
#ifndef NXSIM_SIM_ENGINE_HPP
#define NXSIM_SIM_ENGINE_HPP

#include <cstdint>

#include "cost.h"
#include "platform.hpp"

namespace nxsim {

class Engine : public sc_core::sc_module {
  public:
    Engine(sc_core::sc_module_name name, Platform &plat, uint32_t core, nx_engine engine);

    // Per run: the stream (NULL or empty: inactive) and where its records go.
    void prepare(const nx_stream *stream, nx_sim_record *log, double period_fs);
    bool active() const { return active_; }
    // Starts the stream (delta notification). Each engine has its own event
    // and the platform notifies them in a fixed order, so every run starts
    // the engines in the same order whatever the previous run did.
    void start() { start_.notify(sc_core::SC_ZERO_TIME); }
    bool finished() const { return !active_ || pc_ >= count_; }
    uint32_t pc() const { return pc_; }
    // No later request of this engine is ready before this local time
    // (all-ones once it has finished): what the conflict calendars prune by.
    fs_t horizon() const { return finished() ? ~(fs_t)0 : t_free_; }
    bool at_barrier() const { return in_barrier_; }
    uint64_t barrier_id() const { return barrier_id_; }
    const nx_sim_engine_stats &stats() const { return stats_; }
    fs_t busy_fs() const { return busy_fs_; }
    fs_t stall_fs() const { return stall_fs_; }
    uint64_t flops() const { return flops_; }

  private:
    // Writes an instruction has in flight (results not yet visible), for
    // read-after-write and write-after-write hazards on this same engine.
    struct Box {
        uint64_t lo, hi;
        uint16_t p_lo, p_hi;
        uint8_t kind;
    };
    struct InFlight {
        fs_t t_end;
        uint8_t n;
        Box box[2];
    };
    static constexpr unsigned kRing = 16;

    void thread();
    void run_stream();
    void sync(fs_t t);
    fs_t wait_semaphore(const nx_insn &in, fs_t t, uint64_t *wait_seq);
    fs_t pass_barrier(fs_t t, nx_sim_record *rec, uint64_t *wait_seq);
    fs_t hazard_ready(const nx_insn &in, fs_t t);
    void remember_writes(const nx_insn &in, fs_t t_end);
    fs_t book_conflicts(const nx_insn &in, fs_t t, fs_t dur);
    fs_t run_on_rtl(const nx_exec_ctx &ctx, const nx_insn &in, fs_t *t_start);
    uint64_t load_rtl_from_state();
    [[noreturn]] void fail_run(const nx_error &e);
    fs_t cycles(uint64_t n) const { return (fs_t)((double)n * period_fs_ + 0.5); }

    Platform &plat_;
    sc_core::sc_event start_;
    const uint32_t core_;
    const nx_engine engine_;
    // per run
    const nx_insn_rec *recs_ = nullptr;
    nx_insn cur_{};  // the instruction at pc_, expanded from recs_[pc_]
    uint32_t cur_ops_[NX_MAX_OPERANDS];  // the pool entries cur_.op[] holds
    uint32_t count_ = 0;
    uint32_t pc_ = 0;
    bool active_ = false;
    nx_sim_record *log_ = nullptr;
    double period_fs_ = 1.0;
    fs_t t_free_ = 0;     // local time: when the next instruction may start
    fs_t t_last_ = 0;     // latest completion so far (pipelined results)
    fs_t mm_start_ = 0;   // PE: start of the previous multiply (background loads)
    fs_t inc_vis_ = 0;    // visibility time of this engine's latest increment
    nx_pe_cost_state pe_{};
    bool rtl_loaded_ = false;  // --pe rtl: the array holds this run's stationary tile
    InFlight ring_[kRing];
    unsigned ring_head_ = 0, ring_len_ = 0;
    bool in_barrier_ = false;
    uint64_t barrier_id_ = 0;
    nx_sim_engine_stats stats_{};
    fs_t busy_fs_ = 0, stall_fs_ = 0;
    uint64_t flops_ = 0;
};

} // namespace nxsim

#endif
