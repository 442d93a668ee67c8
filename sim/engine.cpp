// The engine sequencer: see engine.hpp for the decoupling scheme and why the
// data effects equal the functional executor's.
#include "engine.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "dma.hpp"
#include "rtl/rtl_pe.hpp"
extern "C" {
#include "../isa/pe_input.h"
}

namespace nxsim {

Engine::Engine(sc_core::sc_module_name name, Platform &plat, uint32_t core, nx_engine engine)
    : sc_core::sc_module(name), plat_(plat), core_(core), engine_(engine) {
    SC_HAS_PROCESS(Engine);
    SC_THREAD(thread);
    // the semantics run on this stack (ASan builds need the headroom)
    set_stack_size(4u << 20);
}

void Engine::prepare(const nx_stream *stream, nx_sim_record *log, double period_fs) {
    recs_ = stream ? stream->recs : nullptr;
    std::fill(cur_ops_, cur_ops_ + NX_MAX_OPERANDS, UINT32_MAX);
    count_ = stream ? stream->count : 0;
    active_ = count_ > 0;
    log_ = log;
    period_fs_ = period_fs;
    pc_ = 0;
    t_free_ = t_last_ = mm_start_ = inc_vis_ = 0;
    nx_pe_cost_reset(&pe_);
    rtl_loaded_ = false;
    ring_head_ = ring_len_ = 0;
    in_barrier_ = false;
    barrier_id_ = 0;
    stats_ = nx_sim_engine_stats{};
    busy_fs_ = stall_fs_ = 0;
    flops_ = 0;
}

void Engine::thread() {
    for (;;) {
        wait(start_);
        if (!active_) continue;
        try {
            run_stream();
        } catch (const RunAborted &) {
            continue;
        }
        plat_.unit_done();
    }
}

void Engine::sync(fs_t t) {
    fs_t now = now_fs();
    if (t > now) wait(sc_core::sc_time::from_value(t - now));
    if (plat_.rs.abort) throw RunAborted();
}

fs_t Engine::wait_semaphore(const nx_insn &in, fs_t t, uint64_t *wait_seq) {
    RunState &rs = plat_.rs;
    const uint32_t *sems = rs.st->core[core_].sems;
    uint32_t short_sem = nx_wait_short(in.wait_sem, in.wait_span, in.wait_value, sems);
    if (short_sem != NX_SEM_NONE) {
        // it may become visible before our local time: catch up first
        sync(t);
        // a span: wait on each semaphore still short in turn (they only grow)
        while ((short_sem = nx_wait_short(in.wait_sem, in.wait_span, in.wait_value, sems)) != NX_SEM_NONE) {
            wait(plat_.sem_event(core_, short_sem));
            if (rs.abort) throw RunAborted();
        }
    }
    *wait_seq = rs.seq;
    // visible at or before now; only a background load's t can be earlier
    return std::max(t, now_fs());
}

fs_t Engine::pass_barrier(fs_t t, nx_sim_record *rec, uint64_t *wait_seq) {
    RunState &rs = plat_.rs;
    // arrivals are numbered in time order per core: be at our time first
    sync(t);
    barrier_id_ = ++rs.barrier_arrived[core_];
    in_barrier_ = true;
    uint32_t cores = rs.prog->cores;
    if (cores > 1) {
        fs_t lat = (fs_t)(rs.m->barrier_latency_ns * 1e6 + 0.5);
        plat_.hub().push_barrier(now_fs() + lat, core_, rec);
    } else {
        ++rs.seq;
        if (rec) rec->inc_seq = rs.seq;
    }
    for (;;) {
        bool open = true;
        for (uint32_t c = 0; c < cores; c++)
            if (c != core_ && rs.barrier_visible[c] < barrier_id_) open = false;
        if (open) break;
        wait(plat_.barrier_ev);
        if (rs.abort) throw RunAborted();
    }
    in_barrier_ = false;
    rs.st->core[core_].barriers_done++;
    *wait_seq = rs.seq;
    return std::max(t, now_fs());
}

static bool boxes_overlap(uint8_t kind, uint16_t p_lo, uint16_t p_hi, uint64_t lo, uint64_t hi,
                          const uint8_t bkind, uint16_t bp_lo, uint16_t bp_hi, uint64_t blo,
                          uint64_t bhi) {
    return kind == bkind && p_lo < bp_hi && bp_lo < p_hi && lo < bhi && blo < hi;
}

fs_t Engine::hazard_ready(const nx_insn &in, fs_t t) {
    nx_footprint fp[NX_MAX_OPERANDS];
    int n = nx_insn_footprint(&in, fp);
    fs_t ready = t;
    for (unsigned i = 0; i < ring_len_; i++) {
        const InFlight &w = ring_[(ring_head_ + i) % kRing];
        if (w.t_end <= ready) continue;
        bool hit = false;
        for (int f = 0; f < n && !hit; f++)
            for (unsigned b = 0; b < w.n && !hit; b++)
                hit = boxes_overlap(fp[f].kind, fp[f].p_lo, fp[f].p_hi, fp[f].lo, fp[f].hi, w.box[b].kind,
                                    w.box[b].p_lo, w.box[b].p_hi, w.box[b].lo, w.box[b].hi);
        if (hit) ready = w.t_end;
    }
    // every later instruction starts at or after `ready`
    while (ring_len_ && ring_[ring_head_].t_end <= ready) {
        ring_head_ = (ring_head_ + 1) % kRing;
        ring_len_--;
    }
    return ready;
}

void Engine::remember_writes(const nx_insn &in, fs_t t_end) {
    nx_footprint fp[NX_MAX_OPERANDS];
    int n = nx_insn_footprint(&in, fp);
    InFlight w{};
    w.t_end = t_end;
    for (int f = 0; f < n && w.n < 2; f++) {
        if (!fp[f].write) continue;
        w.box[w.n++] = Box{fp[f].lo, fp[f].hi, fp[f].p_lo, fp[f].p_hi, fp[f].kind};
    }
    if (w.n == 0) return;
    if (ring_len_ == kRing) { // deeper than any engine pipelines: forget the oldest
        ring_head_ = (ring_head_ + 1) % kRing;
        ring_len_--;
    }
    ring_[(ring_head_ + ring_len_) % kRing] = w;
    ring_len_++;
}

fs_t Engine::book_conflicts(const nx_insn &in, fs_t t, fs_t dur) {
    const nx_machine *m = plat_.rs.m;
    nx_insn_access a;
    nx_cost_access(&plat_.rs.st->geo, &in, &a);
    bool use_sbuf = m->sbuf_dve_pool_conflict && a.sbuf && (engine_ == NX_ENG_DVE || engine_ == NX_ENG_POOL);
    uint64_t psum_mask = 0;
    if (a.psum_banks && (engine_ == NX_ENG_DVE || engine_ == NX_ENG_ACT)) {
        if (m->psum_dve_act_conflict) psum_mask = ~0ull;
        else if (m->psum_same_bank_conflict) psum_mask = a.psum_banks;
    }
    if (!use_sbuf && !psum_mask) return t;
    Calendar &sb = plat_.sbuf_calendar(core_), &ps = plat_.psum_calendar(core_);
    for (;;) {
        fs_t t1 = use_sbuf ? sb.earliest(engine_, t, dur, 1) : t;
        fs_t t2 = psum_mask ? ps.earliest(engine_, t1, dur, psum_mask) : t1;
        if (t2 == t1) {
            t = t1;
            break;
        }
        t = t2;
    }
    const fs_t horizon = plat_.conflict_horizon(core_);
    if (use_sbuf) sb.insert(engine_, t, dur, 1, horizon);
    if (psum_mask) ps.insert(engine_, t, dur, psum_mask, horizon);
    return t;
}

void Engine::fail_run(const nx_error &e) {
    plat_.fail(e);
    throw RunAborted();
}

// The core's stationary tile (as the semantics cached it) into the RTL array.
// Returns the cycles spent.
uint64_t Engine::load_rtl_from_state() {
    const nx_state *st = plat_.rs.st;
    const nx_core_state &cs = st->core[core_];
    const uint32_t K = cs.stationary_k, M = cs.stationary_m, ld = st->geo.pe_cols;
    std::vector<float> w((size_t)K * M);
    for (uint32_t k = 0; k < K; k++)
        std::memcpy(&w[(size_t)k * M], cs.stationary + (size_t)k * ld, (size_t)M * sizeof(float));
    nx_error err;
    uint64_t n = 0;
    if (plat_.rtl_pe(core_).load_stationary(w.data(), K, M, &n, &err) != 0) {
        char where[96];
        nx_insn_where(where, sizeof where, core_, engine_, pc_, &cur_);
        nx_fail_prefix(&err, "%s: RTL PE", where);
        fail_run(err);
    }
    rtl_loaded_ = true;
    return n;
}

// --pe rtl for load_stationary and multiply_moving. The semantics run first
// exactly as in the model (the same state effects and error messages); then
// the RTL array of this core does the same operation from the same inputs,
// its fp32 results replace the multiply's PSUM dst, and its cycle count, at
// this engine's clock, is the instruction's cost. The array waits on its own
// clock, so SystemC time is brought up to the engine's local time first.
// *t_start moves to when the array actually started; returns the end time.
fs_t Engine::run_on_rtl(const nx_exec_ctx &ctx, const nx_insn &in, fs_t *t_start) {
    sync(*t_start);
    *t_start = std::max(*t_start, now_fs());
    uint64_t n = 0;
    if (in.opcode == NX_OP_LOAD_STATIONARY) {
        if (nx_insn_execute(&ctx, &in) != 0) fail_run(*ctx.err);
        n = load_rtl_from_state();
    } else {
        nx_view dst, mv;
        nx_view_init(&dst, &ctx, &in.op[0]);
        nx_view_init(&mv, &ctx, &in.op[1]);
        const uint32_t K = mv.partitions, M = dst.partitions, N = (uint32_t)mv.free_elems;
        const bool acc = (in.flags & NX_FLAG_ACCUMULATE) != 0;
        // inputs before the semantics overwrite dst (PSUM rows hold host-order fp32)
        std::vector<float> moving((size_t)K * N), out((size_t)M * N);
        nx_pe_rows_to_f32(&mv, K, moving.data(), N);
        if (acc)
            for (uint32_t m = 0; m < M; m++)
                for (uint32_t e = 0; e < N; e++)
                    std::memcpy(&out[(size_t)m * N + e], nx_view_addr(&dst, m, e), sizeof(float));
        if (nx_insn_execute(&ctx, &in) != 0) fail_run(*ctx.err);
        // the state's tile came from an earlier run: the array has not seen it
        if (!rtl_loaded_) load_rtl_from_state();
        nx_error err;
        if (plat_.rtl_pe(core_).multiply(moving.data(), K, N, out.data(), acc, &n, &err) != 0) {
            char where[96];
            nx_insn_where(where, sizeof where, core_, engine_, pc_, &in);
            nx_fail_prefix(&err, "%s: RTL PE", where);
            fail_run(err);
        }
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t e = 0; e < N; e++)
                std::memcpy(nx_view_addr(&dst, m, e), &out[(size_t)m * N + e], sizeof(float));
    }
    if (plat_.rs.abort) throw RunAborted();
    // the array ticks faster than any PE clock (platform.cpp): its cycles at
    // this engine's clock end at or after the SystemC time it reached
    return std::max(now_fs(), *t_start + cycles(n));
}

void Engine::run_stream() {
    RunState &rs = plat_.rs;
    const nx_machine *m = rs.m;
    const fs_t sem_lat = (fs_t)(m->semaphore_latency_ns * 1e6 + 0.5);
    const bool track_hazards = engine_ == NX_ENG_DVE || engine_ == NX_ENG_ACT || engine_ == NX_ENG_POOL;
    const bool conflicts = (engine_ == NX_ENG_DVE || engine_ == NX_ENG_ACT || engine_ == NX_ENG_POOL) &&
                           (m->sbuf_dve_pool_conflict || m->psum_dve_act_conflict ||
                            m->psum_same_bank_conflict);
    const bool progress = rs.opt.progress != 0;
    nx_error err;
    nx_exec_ctx ctx = {rs.st, core_, engine_, 0, &err};
    t_free_ = t_last_ = mm_start_ = inc_vis_ = rs.t0;
    uint64_t since_progress = 0;

    while (pc_ < count_) {
        if (rs.abort) throw RunAborted();
        const nx_insn &in = *nx_program_expand_next(rs.prog, &recs_[pc_], &cur_, cur_ops_);
        nx_sim_record *rec = log_ ? &log_[pc_] : nullptr;
        if (rec) rec->inc_seq = 0;
        nx_insn_cost c;
        nx_cost_insn(m, engine_, &in, &pe_, &c);
        const bool via_rtl = rs.pe.pe_rtl && engine_ == NX_ENG_PE &&
                             (in.opcode == NX_OP_LOAD_STATIONARY || in.opcode == NX_OP_MULTIPLY_MOVING);
        // the RTL array has no double-buffered weights: its loads never hide
        // under the previous multiply (docs/parts/rtl.md)
        const bool background = c.background && mm_start_ < t_free_ && !via_rtl;
        const fs_t t_ready = background ? mm_start_ : t_free_;
        fs_t t = t_ready;
        uint64_t wait_seq = 0;
        bool waited = false;
        if (in.wait_sem != NX_SEM_NONE) {
            waited = true;
            t = wait_semaphore(in, t, &wait_seq);
        }
        if (in.opcode == NX_OP_CORE_BARRIER) {
            waited = true;
            t = pass_barrier(t, rec, &wait_seq);
        }
        if (track_hazards && ring_len_) t = hazard_ready(in, t);
        fs_t occ = cycles(c.occupancy), lat = cycles(c.latency);
        if (conflicts && occ) t = book_conflicts(in, t, occ);
        if (via_rtl) {
            ctx.index = pc_;
            const fs_t t_fin = run_on_rtl(ctx, in, &t);
            occ = lat = t_fin - t;
        }
        const fs_t t_start = t, t_end = t + lat, t_done = t + occ;
        const fs_t prev_free = t_free_;
        const fs_t new_free = std::max(prev_free, t_done);
        const fs_t busy = new_free - std::min(new_free, std::max(prev_free, t_start));
        const fs_t stall = t_start > prev_free ? t_start - prev_free : 0;

        if (nx_opcode_is_dma(in.opcode)) {
            // the SP pushes the descriptor and moves on; the queue does the rest
            plat_.dma().issue(core_, (uint32_t)nx_insn_dma_queue(&in), &in, pc_, t_done, wait_seq);
        } else {
            ctx.index = pc_;
            if (!via_rtl && nx_insn_execute(&ctx, &in) != 0) {
                plat_.fail(err);
                throw RunAborted();
            }
            if (in.inc_sem != NX_SEM_NONE) {
                // in-order retirement: an engine's increments become visible in
                // stream order (a background load may finish before the multiply
                // ahead of it, but must not signal before it)
                inc_vis_ = std::max(inc_vis_, t_end + sem_lat);
                plat_.hub().push_sem(inc_vis_, core_, in.inc_sem, in.inc_amount,
                                     in.opcode == NX_OP_CORE_BARRIER ? nullptr : rec, engine_, pc_);
            }
        }
        if (in.opcode == NX_OP_MULTIPLY_MOVING) mm_start_ = t_start;
        if (track_hazards && lat > occ) remember_writes(in, t_end);
        t_free_ = new_free;
        if (t_end > t_last_) t_last_ = t_end;

        stats_.instructions++;
        busy_fs_ += busy;
        stall_fs_ += stall;
        flops_ += c.flops;
        if (rec) {
            rec->index = pc_;
            rec->core = (uint8_t)core_;
            rec->engine = (uint8_t)engine_;
            rec->opcode = in.opcode;
            rec->waited = waited;
            rec->queue = -1;
            rec->t_ready_ns = fs_to_ns(t_ready - rs.t0);
            rec->t_start_ns = fs_to_ns(t_start - rs.t0);
            rec->t_end_ns = fs_to_ns(t_end - rs.t0);
            rec->busy_ns = fs_to_ns(busy);
            rec->bytes = 0;
            rec->flops = c.flops;
            rec->wait_seq = wait_seq;
        }
        pc_ = in.opcode == NX_OP_END ? count_ : pc_ + 1;
        if (progress && ++since_progress == 4096) {
            plat_.progress(since_progress, t_free_);
            since_progress = 0;
        }
    }
    if (progress) plat_.progress(since_progress, t_free_);
    // the stream is done when its last results are visible
    sync(std::max(t_free_, t_last_));
}

} // namespace nxsim
