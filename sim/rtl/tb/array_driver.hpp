// Drives a Verilator --cc model of nx_pe_array (any ROWS x COLS build, both
// at least 3 so that every lane port is a VlWide) through the protocol in
// docs/parts/rtl.md: PSUM preload, stationary load, moving stream, drain,
// PSUM read-out; and measures the cycles. Header-only (a template over the
// verilated class) so every test and the bench share it.
#ifndef NXSIM_RTL_ARRAY_DRIVER_HPP
#define NXSIM_RTL_ARRAY_DRIVER_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <verilated.h>

#include "operands.hpp"

namespace nx_rtl_test {

inline bool port_bit(uint64_t v, unsigned i) { return ((v >> i) & 1u) != 0; }
template <std::size_t W> bool port_bit(const VlWide<W> &v, unsigned i) {
    return ((v[i / 32] >> (i % 32)) & 1u) != 0;
}

// Closed form for one tile (K <= R, M <= C) on an R x C array:
// SCALE-Sim v2 weight-stationary fold, (2R + C + N - 2) with its streamed
// row count = our moving N.
inline uint64_t closed_form_tile(uint64_t R, uint64_t C, uint64_t N) { return 2 * R + C + N - 2; }

// Edges are numbered from reset release; "cycles from A to B" counts edges
// A..B inclusive.
struct tile_timing {
    uint64_t array_cycles = 0;   // first load edge .. last column's last partial sum leaves the array
    uint64_t useful_cycles = 0;  // first load edge .. column M-1's last partial sum leaves the array
    uint64_t psum_cycles = 0;    // first load edge .. last PSUM write
    uint64_t busy_cycles = 0;    // first load edge .. the edge after which busy reads low (0: not waited for)
    uint64_t stream_cycles = 0;  // first moving edge .. last column's last partial sum leaves
    bool writes_ok = false;      // every column wrote exactly N results
};

struct tile_request {
    const uint32_t *st = nullptr;  // [K, M] fp32 bit patterns (bf16: low 16 bits zero)
    const uint32_t *mv = nullptr;  // [K, N]
    unsigned K = 0, M = 0, N = 0;
    bool acc = false;
    bool bf16 = false;      // send bf16 lanes (upper lane halves filled with junk)
    bool overlap = true;    // first moving vector enters with the last stationary row
    bool load = true;       // false: reuse the loaded stationary tile
};

template <class V> class array_driver {
public:
    array_driver(unsigned rows, unsigned cols, unsigned nmax, uint64_t junk_seed = 7)
        : rows_(rows), cols_(cols), nmax_(nmax), ctx_(new VerilatedContext), m_(new V(ctx_.get(), "pe")),
          junk_(junk_seed) {
        idle();
        m_->rst_n = 0;
        tick();
        tick();
        m_->rst_n = 1;
        edge_ = 0;
    }

    unsigned rows() const { return rows_; }
    unsigned cols() const { return cols_; }
    unsigned nmax() const { return nmax_; }
    uint64_t edges() const { return edge_; }
    V &model() { return *m_; }

    // One rising edge with the inputs as set, then the falling edge.
    void tick() {
        m_->clk = 1;
        m_->eval();
        m_->clk = 0;
        m_->eval();
        ++edge_;
    }

    // Writes psum[m][n] (M x N, row-major) into PSUM entries 0..N-1; other
    // columns get 0. Untimed.
    void psum_write(const uint32_t *v, unsigned M, unsigned N) {
        idle();
        for (unsigned n = 0; n < N; n++) {
            m_->ps_we = 1;
            m_->ps_addr = n;
            for (unsigned c = 0; c < cols_; c++) m_->ps_wdata[c] = c < M ? v[(uint64_t)c * N + n] : 0u;
            tick();
        }
        idle();
    }

    // Reads PSUM entries 0..N-1 of columns 0..M-1 into out (M x N).
    void psum_read(uint32_t *out, unsigned M, unsigned N) {
        idle();
        for (unsigned n = 0; n < N; n++) {
            m_->ps_addr = n;
            m_->eval();
            for (unsigned m = 0; m < M; m++) out[(uint64_t)m * N + n] = m_->ps_rdata[m];
        }
    }

    // Load (unless !req.load) + multiply + drain; out (M x N) holds the prior
    // PSUM values if req.acc, and the results on return.
    tile_timing run(const tile_request &req, uint32_t *out) {
        if (req.acc) psum_write(out, req.M, req.N);
        tile_timing t = stream(req);
        psum_read(out, req.M, req.N);
        return t;
    }

    // The timed part of run(): stationary rows, moving vectors, drain.
    tile_timing stream(const tile_request &req, bool wait_psum = true) {
        return stream_group(&req, 1, wait_psum);
    }

    // Several multiplies whose moving vectors follow each other with no gap
    // (only reqs[0] may load); the timing covers the whole group, M is
    // reqs[0].M. wait_psum: run until busy falls (after the last PSUM
    // write); else stop at the edge the last column's last partial sum
    // leaves the array, so that a next load may start right after it.
    tile_timing stream_group(const tile_request *reqs, size_t count, bool wait_psum = true) {
        tile_timing t;
        uint64_t total_n = 0;
        for (size_t i = 0; i < count; i++) total_n += reqs[i].N;
        observer ob(cols_, reqs[0].M);
        idle();
        const uint64_t first_edge = edge_;
        unsigned n0 = 0;
        if (reqs[0].load) {
            for (unsigned i = 0; i < rows_; i++) {
                unsigned k = rows_ - 1 - i;  // the row loaded first ends at the bottom
                set_stationary_row(reqs[0], k);
                if (reqs[0].overlap && i == rows_ - 1) set_moving(reqs[0], n0++);
                tick();
                ob.see(*m_, edge_ - 1);
            }
            m_->ld_valid = 0;
        }
        const uint64_t first_mv_edge = n0 > 0 ? edge_ - 1 : edge_;
        for (size_t i = 0; i < count; i++) {
            for (unsigned n = i == 0 ? n0 : 0; n < reqs[i].N; n++) {
                set_moving(reqs[i], n);
                tick();
                ob.see(*m_, edge_ - 1);
            }
        }
        idle();
        uint64_t guard = 4ull * (rows_ + cols_) + 16;
        if (wait_psum) {
            while (m_->busy && guard-- > 0) {
                tick();
                ob.see(*m_, edge_ - 1);
            }
            t.busy_cycles = edge_ - 1 - first_edge + 1;
        } else {
            while (ob.writes[cols_ - 1] < total_n && guard-- > 0) {
                tick();
                ob.see(*m_, edge_ - 1);
            }
        }
        t.array_cycles = ob.last_out - first_edge + 1;
        t.useful_cycles = ob.last_useful - first_edge + 1;
        t.psum_cycles = ob.last_out + 1 - first_edge + 1;  // the write is one edge after the array output
        t.stream_cycles = ob.last_out - first_mv_edge + 1;
        t.writes_ok = true;
        for (unsigned c = 0; c < cols_; c++)
            t.writes_ok = t.writes_ok && ob.writes[c] == total_n;
        return t;
    }

    void idle() {
        m_->ld_valid = 0;
        m_->ld_active = 0;
        m_->ld_bf16 = 0;
        m_->mv_valid = 0;
        m_->mv_first = 0;
        m_->mv_acc = 0;
        m_->mv_bf16 = 0;
        m_->ps_we = 0;
        for (unsigned c = 0; c < cols_; c++) m_->ld_row[c] = 0;
        for (unsigned k = 0; k < rows_; k++) m_->mv_vec[k] = 0;
    }

private:
    // ps_wr (the bottom row's valid bits) after each edge.
    struct observer {
        observer(unsigned cols, unsigned M) : cols(cols), M(M), writes(cols, 0) {}
        template <class M_> void see(M_ &m, uint64_t edge) {
            for (unsigned c = 0; c < cols; c++)
                if (port_bit(m.ps_wr, c)) writes[c]++;
            if (port_bit(m.ps_wr, cols - 1)) last_out = edge;
            if (port_bit(m.ps_wr, M - 1)) last_useful = edge;
        }
        unsigned cols, M;
        std::vector<uint64_t> writes;
        uint64_t last_out = 0, last_useful = 0;
    };

    uint32_t lane(uint32_t bits, bool bf16) {
        // bf16 lanes carry the value in [15:0]; the array must ignore [31:16]
        return bf16 ? (bits >> 16) | ((uint32_t)junk_.next() << 16) : bits;
    }

    void set_stationary_row(const tile_request &req, unsigned k) {
        bool active = k < req.K;
        m_->ld_valid = 1;
        m_->ld_active = active;
        m_->ld_bf16 = req.bf16;
        // rows past K and columns past M get junk (NaN and Inf included):
        // inactive rows must pass partial sums through untouched and columns
        // past M are never read
        for (unsigned c = 0; c < cols_; c++)
            m_->ld_row[c] = active && c < req.M ? lane(req.st[(uint64_t)k * req.M + c], req.bf16)
                                                : lane(wide_fp32(junk_), req.bf16);
    }

    void set_moving(const tile_request &req, unsigned n) {
        m_->mv_valid = 1;
        m_->mv_first = n == 0;
        m_->mv_acc = req.acc;
        m_->mv_bf16 = req.bf16;
        for (unsigned k = 0; k < rows_; k++)
            m_->mv_vec[k] = lane(k < req.K ? req.mv[(uint64_t)k * req.N + n] : wide_fp32(junk_), req.bf16);
    }

    unsigned rows_, cols_, nmax_;
    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<V> m_;
    rng junk_;
    uint64_t edge_ = 0;
};

}  // namespace nx_rtl_test

#endif
