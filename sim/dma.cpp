// The DMA system: queues, the fixed and data phases of each transfer, and
// the bandwidth split (see dma.hpp).
#include "dma.hpp"

#include <algorithm>
#include <cmath>
#include <limits>


namespace nxsim {

namespace {
constexpr double kDoneBytes = 1e-3; // rounding slack of the fluid model
constexpr fs_t kNever = std::numeric_limits<fs_t>::max();
} // namespace

DmaSystem::DmaSystem(sc_core::sc_module_name name, Platform &plat)
    : sc_core::sc_module(name), plat_(plat) {
    SC_HAS_PROCESS(DmaSystem);
    SC_THREAD(thread);
    set_stack_size(4u << 20); // runs the dma semantics
    issued_.assign(NX_MAX_CORES, 0);
    first_.assign(NX_MAX_CORES, 0);
}

void DmaSystem::prepare(const uint64_t transfers[NX_MAX_CORES],
                        nx_sim_record *const log[NX_MAX_CORES]) {
    const RunState &rs = plat_.rs;
    queues_per_core_ = nx_geometry_dma_queues(&rs.st->geo) ? nx_geometry_dma_queues(&rs.st->geo) : 1;
    uint64_t total = 0;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        first_[c] = (uint32_t)total;
        issued_[c] = 0;
        log_[c] = log[c];
        total += transfers[c];
    }
    xfers_.resize(total);
    size_t nq = (size_t)NX_MAX_CORES * queues_per_core_;
    q_head_.assign(nq, -1);
    q_tail_.assign(nq, -1);
    q_ready_.assign(nq, 0);
    q_bytes_.assign(nq, 0);
    q_count_.assign(nq, 0);
    ready_.clear();
    ready_.reserve(nq);
    active_.clear();
    active_.reserve(nq);
    engines_per_core_ = rs.st->geo.dma_engines ? rs.st->geo.dma_engines : 1;
    engine_active_.assign((size_t)NX_MAX_CORES * engines_per_core_, 0);
    engine_busy_.assign((size_t)NX_MAX_CORES * engines_per_core_, 0.0);
    q_busy_.assign(nq, 0.0);
    flows_.reserve(nq);
    rates_.reserve(nq);
    scratch_.reserve(nq);
    t_last_ = rs.t0;
    wake_.cancel();
}

void DmaSystem::issue(uint32_t core, uint32_t queue, const nx_insn *insn, uint32_t index,
                      fs_t t_issue, uint64_t wait_seq) {
    const RunState &rs = plat_.rs;
    uint32_t k = issued_[core]++;
    int32_t id = (int32_t)(first_[core] + k);
    Transfer &x = xfers_[(size_t)id];
    nx_dma_cost dc;
    nx_cost_dma(rs.m, insn, &dc);
    nx_cost_dma_skipped_rows(insn, rs.st, core, &dc);
    x.rec = log_[core] ? &log_[core][k] : nullptr;
    x.t_issue = t_issue;
    x.t_head = x.t_data = t_issue;
    x.remaining = (double)dc.bytes;
    x.rate = 0.0;
    x.bytes = dc.bytes;
    x.wait_seq = wait_seq;
    x.efficiency = dc.efficiency;
    x.fixed = (fs_t)(dc.fixed_ns * 1e6 + 0.5);
    x.next = -1;
    x.index = index;
    x.queue = core * queues_per_core_ + queue;
    // (the modulo only guards a hand-made geometry whose counts disagree)
    x.engine = core * engines_per_core_ + nx_dma_queue_engine(&rs.st->geo, queue) % engines_per_core_;
    x.core = (uint8_t)core;
    x.hbm = dc.touches_hbm;
    x.phase = kQueued;
    if (x.rec) x.rec->inc_seq = 0;
    uint32_t q = x.queue;
    if (q_tail_[q] < 0) {
        q_head_[q] = q_tail_[q] = id;
        if (!q_ready_[q]) {
            q_ready_[q] = 1;
            ready_.push_back(q);
        }
    } else {
        xfers_[(size_t)q_tail_[q]].next = id;
        q_tail_[q] = id;
    }
    // the earliest pending notification survives: no bookkeeping needed
    wake_.notify(sc_core::sc_time::from_value(t_issue - now_fs()));
}

void DmaSystem::advance(fs_t now) {
    if (now <= t_last_) return;
    double dt_ns = fs_to_ns(now - t_last_);
    for (int32_t id : active_) {
        Transfer &x = xfers_[(size_t)id];
        if (x.phase == kData) x.remaining -= x.rate * dt_ns;
    }
    // engine_active_ counts the data-phase transfers since the last change
    for (size_t e = 0; e < engine_active_.size(); e++)
        if (engine_active_[e]) engine_busy_[e] += dt_ns;
    t_last_ = now;
}

void DmaSystem::complete(Transfer &x, fs_t now) {
    RunState &rs = plat_.rs;
    x.phase = kDone;
    nx_error err;
    nx_exec_ctx ctx = {rs.st, x.core, NX_ENG_SP, x.index, &err};
    nx_insn scratch;
    const nx_insn *insn = nx_program_expand(rs.prog, &rs.prog->stream[x.core][NX_ENG_SP].recs[x.index], &scratch);
    if (nx_insn_execute(&ctx, insn) != 0) {
        plat_.fail(err);
        return;
    }
    if (insn->inc_sem != NX_SEM_NONE) {
        fs_t lat = (fs_t)(rs.m->semaphore_latency_ns * 1e6 + 0.5);
        plat_.hub().push_sem(now + lat, x.core, insn->inc_sem, insn->inc_amount, x.rec, NX_ENG_SP, x.index);
    }
    q_bytes_[x.queue] += x.bytes;
    q_busy_[x.queue] += fs_to_ns(now - x.t_data);
    q_count_[x.queue]++;
    if (x.rec) {
        nx_sim_record *r = x.rec;
        r->index = x.index;
        r->core = x.core;
        r->engine = NX_ENG_SP;
        r->opcode = insn->opcode;
        r->waited = 0;
        r->queue = (int32_t)(x.queue - x.core * queues_per_core_);
        r->t_ready_ns = fs_to_ns(x.t_head - rs.t0);
        r->t_start_ns = fs_to_ns(x.t_data - rs.t0);
        r->t_end_ns = fs_to_ns(now - rs.t0);
        r->busy_ns = fs_to_ns(now - x.t_data);
        r->bytes = x.bytes;
        r->flops = 0;
        r->wait_seq = x.wait_seq; // ordered after its issue
    }
    uint32_t q = x.queue;
    q_head_[q] = x.next;
    if (x.next < 0) {
        q_tail_[q] = -1;
    } else if (!q_ready_[q]) {
        q_ready_[q] = 1;
        ready_.push_back(q);
    }
    plat_.unit_done();
}

void DmaSystem::start_heads(fs_t now, bool *changed) {
    size_t w = 0;
    for (size_t i = 0; i < ready_.size(); i++) {
        uint32_t q = ready_[i];
        Transfer &x = xfers_[(size_t)q_head_[q]];
        if (x.t_issue > now) {
            ready_[w++] = q;
            continue;
        }
        q_ready_[q] = 0;
        x.t_head = now;
        // the fixed cost is the latency from the trigger to the start
        // (docs/parts/model.md, "DMA"): it runs from the issue, under the
        // transfers ahead of this one in its queue
        x.t_data = std::max(now, x.t_issue + x.fixed);
        x.phase = x.t_data > now ? kFixed : kData;
        active_.push_back(q_head_[q]);
        *changed = true;
    }
    ready_.resize(w);
}

void DmaSystem::recompute_rates() {
    std::fill(engine_active_.begin(), engine_active_.end(), 0u);
    for (int32_t id : active_) {
        const Transfer &x = xfers_[(size_t)id];
        if (x.phase == kData) engine_active_[x.engine]++;
    }
    flows_.clear();
    for (int32_t id : active_) {
        const Transfer &x = xfers_[(size_t)id];
        if (x.phase == kData) flows_.push_back(nx_dma_flow{engine_active_[x.engine], x.efficiency, x.hbm});
    }
    rates_.resize(flows_.size());
    scratch_.resize(flows_.size());
    nx_cost_dma_rates(plat_.rs.m, flows_.data(), flows_.size(), rates_.data(), scratch_.data());
    size_t k = 0;
    for (int32_t id : active_) {
        Transfer &x = xfers_[(size_t)id];
        if (x.phase != kData) continue;
        double r = rates_[k++];
        x.rate = r > 0.0 ? r : 1e-9; // a zero-bandwidth machine still ends
    }
}

void DmaSystem::abandon() {
    active_.clear();
    ready_.clear();
    std::fill(q_head_.begin(), q_head_.end(), -1);
    std::fill(q_tail_.begin(), q_tail_.end(), -1);
    std::fill(q_ready_.begin(), q_ready_.end(), 0);
    wake_.cancel();
}

void DmaSystem::thread() {
    for (;;) {
        wait(wake_);
        RunState &rs = plat_.rs;
        if (rs.abort) {
            abandon();
            continue;
        }
        fs_t now = now_fs();
        advance(now);
        bool changed = false;
        size_t w = 0;
        for (size_t i = 0; i < active_.size(); i++) {
            Transfer &x = xfers_[(size_t)active_[i]];
            if (x.phase == kFixed && x.t_data <= now) {
                x.phase = kData;
                changed = true;
            }
            if (x.phase == kData && x.remaining <= kDoneBytes) {
                complete(x, now);
                changed = true;
                if (rs.abort) break;
                continue;
            }
            active_[w++] = active_[i];
        }
        if (rs.abort) {
            abandon();
            continue;
        }
        active_.resize(w);
        start_heads(now, &changed);
        if (changed) recompute_rates();
        fs_t next = kNever;
        for (int32_t id : active_) {
            const Transfer &x = xfers_[(size_t)id];
            fs_t t = x.phase == kFixed
                         ? x.t_data
                         : now + std::max<fs_t>(1, (fs_t)std::ceil(x.remaining / x.rate * 1e6));
            next = std::min(next, t);
        }
        for (uint32_t q : ready_) next = std::min(next, xfers_[(size_t)q_head_[q]].t_issue);
        if (next != kNever) wake_.notify(sc_core::sc_time::from_value(next - now));
    }
}

} // namespace nxsim
