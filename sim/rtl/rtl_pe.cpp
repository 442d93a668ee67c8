/* See rtl_pe.hpp. The protocol driven here is the one in
 * docs/parts/rtl.md (same as tb/array_driver.hpp drives the --cc models). */
#include "sim/rtl/rtl_pe.hpp"

#include <cstdio>
#include <cstring>

#include <verilated.h>
#include <verilated_vcd_sc.h>

#include "Vnx_pe_sc.h"
#include "isa/bytes.h"

nx_rtl_pe::nx_rtl_pe(sc_core::sc_module_name name, const sc_core::sc_time &clock_period)
    : sc_core::sc_module(name), half_period_(clock_period / 2.0),
      st_bits_(new uint32_t[(size_t)rows * cols]()) {
    Verilated::traceEverOn(true);  // before the model exists, so a VCD can be added later
    rtl_.reset(new Vnx_pe_sc("array"));
    rtl_->clk(clk_);
    rtl_->rst_n(rst_n_);
    rtl_->ld_valid(ld_valid_);
    rtl_->ld_active(ld_active_);
    rtl_->ld_bf16(ld_bf16_);
    rtl_->ld_row(ld_row_);
    rtl_->mv_valid(mv_valid_);
    rtl_->mv_first(mv_first_);
    rtl_->mv_acc(mv_acc_);
    rtl_->mv_bf16(mv_bf16_);
    rtl_->mv_vec(mv_vec_);
    rtl_->ps_we(ps_we_);
    rtl_->ps_addr(ps_addr_);
    rtl_->ps_wdata(ps_wdata_);
    rtl_->ps_rdata(ps_rdata_);
    rtl_->ps_wr(ps_wr_);
    rtl_->busy(busy_);
}

nx_rtl_pe::~nx_rtl_pe() {
    if (vcd_) vcd_->close();
}

int nx_rtl_pe::trace_vcd(const char *path, nx_error *err) {
    if (path == nullptr || path[0] == '\0') return nx_fail(err, "VCD path is empty");
    if (!vcd_path_.empty()) return nx_fail(err, "VCD %s: this PE already traces to %s", path, vcd_path_.c_str());
    // Verilator ends the process when it cannot open the file: check first
    std::FILE *f = std::fopen(path, "w");
    if (f == nullptr) return nx_fail(err, "VCD %s: cannot open for writing", path);
    std::fclose(f);
    vcd_path_ = path;
    if (sc_core::sc_is_running()) return open_vcd(err);
    return 0;  // start_of_simulation opens it
}

void nx_rtl_pe::flush_vcd() {
    if (vcd_) vcd_->flush();
}

int nx_rtl_pe::open_vcd(nx_error *err) {
    (void)err;
    vcd_.reset(new VerilatedVcdSc);
    rtl_->trace(vcd_.get(), 99);
    vcd_->open(vcd_path_.c_str());
    return 0;
}

void nx_rtl_pe::start_of_simulation() {
    if (!vcd_path_.empty() && !vcd_) open_vcd(nullptr);
}

// One array clock cycle of simulated time; inputs as set are sampled at its
// rising edge, outputs are settled when it returns.
void nx_rtl_pe::timed_edge() {
    clk_.write(true);
    sc_core::wait(half_period_);
    clk_.write(false);
    sc_core::wait(half_period_);
}

// A clock edge in zero simulated time (reset, PSUM preload).
void nx_rtl_pe::delta_edge() {
    clk_.write(true);
    settle();
    clk_.write(false);
    settle();
}

// Lets written inputs reach the model and its outputs come back.
void nx_rtl_pe::settle() {
    sc_core::wait(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::SC_ZERO_TIME);
}

void nx_rtl_pe::set_idle() {
    ld_valid_.write(false);
    ld_active_.write(false);
    ld_bf16_.write(false);
    mv_valid_.write(false);
    mv_first_.write(false);
    mv_acc_.write(false);
    mv_bf16_.write(false);
    ps_we_.write(false);
}

void nx_rtl_pe::reset_if_needed() {
    if (reset_done_) return;
    set_idle();
    rst_n_.write(false);
    delta_edge();
    delta_edge();
    rst_n_.write(true);
    settle();
    reset_done_ = true;
}

// Stationary row k onto the load port: rows past K get zeros and
// ld_active = 0 (they pass partial sums through), columns past M zeros.
void nx_rtl_pe::set_stationary_row(uint32_t k) {
    sc_dt::sc_bv<cols * 32> row;
    for (uint32_t c = 0; c < cols; c++) row.set_word(c, st_bits_[(size_t)k * cols + c]);
    ld_valid_.write(true);
    ld_active_.write(k < st_k_);
    ld_row_.write(row);
}

void nx_rtl_pe::flush_pending_row() {
    if (!row_pending_) return;
    set_stationary_row(0);
    timed_edge();
    set_idle();
    row_pending_ = false;
}

int nx_rtl_pe::load_stationary(const float *w, uint32_t K, uint32_t M, uint64_t *cycles, nx_error *err) {
    if (w == nullptr) return nx_fail(err, "stationary tile is NULL");
    if (K < 1 || K > rows) return nx_fail(err, "stationary K = %u is outside 1..%u (array rows)", K, rows);
    if (M < 1 || M > cols) return nx_fail(err, "stationary M = %u is outside 1..%u (array columns)", M, cols);
    reset_if_needed();
    uint64_t spent = row_pending_ ? 1 : 0;
    flush_pending_row();  // the previous tile's last row, if no multiply took it
    for (uint32_t k = 0; k < rows; k++)
        for (uint32_t c = 0; c < cols; c++)
            st_bits_[(size_t)k * cols + c] = k < K && c < M ? nx_f32_bits(w[(size_t)k * M + c]) : 0u;
    st_k_ = K;
    st_m_ = M;
    // rows enter the top and shift down: feed k = rows-1 .. 1 now, row 0
    // with the first moving vector (or at the next load)
    for (uint32_t k = rows - 1; k >= 1; k--) {
        set_stationary_row(k);
        timed_edge();
        spent++;
    }
    set_idle();
    row_pending_ = true;
    loaded_ = true;
    if (cycles != nullptr) *cycles = spent;
    return 0;
}

int nx_rtl_pe::multiply(const float *mv, uint32_t K, uint32_t N, float *out, bool acc, uint64_t *cycles,
                        nx_error *err) {
    if (mv == nullptr || out == nullptr) return nx_fail(err, "moving tile or output is NULL");
    if (!loaded_) return nx_fail(err, "no stationary tile is loaded (load_stationary must come first)");
    if (K != st_k_)
        return nx_fail(err, "moving has K = %u partitions but the stationary tile has K = %u", K, st_k_);
    if (N < 1 || N > psum_entries) return nx_fail(err, "moving N = %u is outside 1..%u (PSUM entries)", N, psum_entries);
    reset_if_needed();
    const uint32_t M = st_m_;

    if (acc) {  // the prior PSUM values, in zero time
        set_idle();
        for (uint32_t n = 0; n < N; n++) {
            sc_dt::sc_bv<cols * 32> row;
            for (uint32_t c = 0; c < cols; c++) row.set_word(c, c < M ? nx_f32_bits(out[(size_t)c * N + n]) : 0u);
            ps_we_.write(true);
            ps_addr_.write(n);
            ps_wdata_.write(row);
            delta_edge();
        }
        set_idle();
    }

    uint64_t spent = 0, last_col_writes = 0;
    for (uint32_t n = 0; n < N; n++) {
        if (n == 0 && row_pending_) {
            set_stationary_row(0);
            row_pending_ = false;
        } else {
            ld_valid_.write(false);
        }
        sc_dt::sc_bv<rows * 32> vec;
        for (uint32_t k = 0; k < rows; k++) vec.set_word(k, k < K ? nx_f32_bits(mv[(size_t)k * N + n]) : 0u);
        mv_valid_.write(true);
        mv_first_.write(n == 0);
        mv_acc_.write(acc);
        mv_vec_.write(vec);
        timed_edge();
        spent++;
        last_col_writes += ps_wr_.read()[cols - 1].to_bool();
    }
    set_idle();
    // drain: until the last column's last result is written (busy falls)
    const uint64_t limit = 2ull * (rows + cols) + 4;
    for (uint64_t i = 0; busy_.read() && i < limit; i++) {
        timed_edge();
        spent++;
        last_col_writes += ps_wr_.read()[cols - 1].to_bool();
    }
    if (busy_.read() || last_col_writes != N)
        return nx_fail(err, "RTL array did not finish: %llu of %u results from the last column",
                       (unsigned long long)last_col_writes, N);

    for (uint32_t n = 0; n < N; n++) {  // read-out, in zero time
        ps_addr_.write(n);
        settle();
        const sc_dt::sc_bv<cols * 32> &row = ps_rdata_.read();
        for (uint32_t m = 0; m < M; m++) out[(size_t)m * N + n] = nx_f32_from_bits((uint32_t)row.get_word(m));
    }
    if (cycles != nullptr) *cycles = spent;
    return 0;
}
