// The DMA system: per core geo.dma_engines engines x
// geo.dma_queues_per_engine queues (queue q runs on engine
// nx_dma_queue_engine(geo, q), isa/geometry.h), for both cores at once
// because they share HBM.
//
// A transfer is issued by its core's SP onto queue iparam0 and runs when it
// reaches the head of the queue (queues are in order): a fixed phase
// (nx_cost_dma's fixed_ns: every DMA timing figure comes from sim/cost.h),
// then a data phase in which its bytes flow at a rate that is
// recomputed whenever the set of flowing transfers changes (nx_cost_dma_rates:
// the engine's bandwidth round-robin over its flowing queues, scaled by the
// small-row efficiency, HBM shared max-min fairly by every HBM transfer of
// both cores). One SC_THREAD drives every queue with one event, so the cost
// is O(transfers) events, never per byte. At completion the transfer's
// semantics run (nx_insn_execute, as the functional executor would run the
// dma instruction) and its semaphore increment is handed to the hub.
#ifndef NXSIM_SIM_DMA_HPP
#define NXSIM_SIM_DMA_HPP

#include <cstdint>
#include <vector>

#include "cost.h"
#include "platform.hpp"

namespace nxsim {

class DmaSystem : public sc_core::sc_module {
  public:
    DmaSystem(sc_core::sc_module_name name, Platform &plat);

    // Per run: room for `transfers` transfers per core; log slots (or NULL).
    void prepare(const uint64_t transfers[NX_MAX_CORES], nx_sim_record *const log[NX_MAX_CORES]);
    // From the SP sequencer of `core` (never later than t_issue in SystemC time).
    void issue(uint32_t core, uint32_t queue, const nx_insn *insn, uint32_t index, fs_t t_issue,
               uint64_t wait_seq);
    // Bytes and transfers per queue (result statistics).
    const std::vector<uint64_t> &queue_bytes() const { return q_bytes_; }
    const std::vector<uint64_t> &queue_transfers() const { return q_count_; }
    // Time each queue held a transfer; time each DMA engine had one flowing.
    const std::vector<double> &queue_busy_ns() const { return q_busy_; }
    const std::vector<double> &engine_busy_ns() const { return engine_busy_; }
    // Run aborted: drop everything at the next wake-up.
    void wake() { wake_.notify(sc_core::SC_ZERO_TIME); }

  private:
    enum Phase : uint8_t { kQueued, kFixed, kData, kDone };
    // The instruction is fetched again from the program when it completes:
    // the SP's own copy is gone by then.
    struct Transfer {
        nx_sim_record *rec;
        fs_t t_issue, t_head, t_data;
        double remaining, rate;
        uint64_t bytes, wait_seq;
        double efficiency;
        fs_t fixed;         // the fixed phase (nx_dma_cost.fixed_ns)
        int32_t next;       // next transfer on the same queue, -1 none
        uint32_t index;     // SP stream index
        uint32_t queue;     // global queue: core * queues + queue
        uint32_t engine;    // global DMA engine: core * dma_engines + engine
        uint8_t core;
        uint8_t hbm;
        Phase phase;
    };

    void thread();
    void advance(fs_t now);
    void complete(Transfer &x, fs_t now);
    void recompute_rates();
    void start_heads(fs_t now, bool *changed);
    void abandon();

    Platform &plat_;
    uint32_t queues_per_core_ = 0;
    uint32_t engines_per_core_ = 0;
    std::vector<Transfer> xfers_;
    std::vector<uint32_t> issued_;       // per core: transfers issued so far
    std::vector<uint32_t> first_;        // per core: first transfer slot
    nx_sim_record *log_[NX_MAX_CORES] = {};
    std::vector<int32_t> q_head_, q_tail_;
    std::vector<uint8_t> q_ready_;       // queue listed in ready_ (head not started)
    std::vector<uint32_t> ready_;        // queues whose head waits for its issue time
    std::vector<int32_t> active_;        // transfers in their fixed or data phase
    std::vector<uint32_t> engine_active_;
    std::vector<nx_dma_flow> flows_;
    std::vector<double> rates_, scratch_;
    std::vector<uint64_t> q_bytes_, q_count_;
    std::vector<double> q_busy_, engine_busy_;
    fs_t t_last_ = 0;
    sc_core::sc_event wake_;
};

} // namespace nxsim

#endif
