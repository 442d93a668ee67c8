/* nx_rtl_pe: the RTL PE array (sim/rtl/nx_pe_array.sv at 128 x 128,
 * verilated with --sc) as a SystemC module, for the PE engine's `--pe rtl`
 * mode: every matmul of a run goes through the RTL instead of the
 * functional model. Protocol, numerics and timing: docs/parts/rtl.md.
 *
 * Lifetime: construct during elaboration (a Verilated SystemC module cannot
 * be created after it), e.g. as a member or child of the PE engine module,
 * and keep it for the whole process (SystemC elaborates once).
 *
 * Calls: load_stationary() and multiply() must be called from an SC_THREAD
 * (they wait on the array's clock, so simulated time advances by the RTL's
 * cycles), from one process at a time. Array cycles advance SystemC time by
 * clock_period each; the PSUM preload (accumulate) and read-out exchange the
 * results with the caller in zero simulated time (the real array writes the
 * core's PSUM directly).
 *
 * Values: inputs are fp32 values (every PE input dtype converts to fp32
 * exactly); the RTL multiplies and adds with IEEE binary32 RNE in the
 * functional model's order, so results equal the model's bit for bit,
 * except that every NaN result is the canonical quiet NaN 0x7fc00000.
 *
 * Errors are values: -1 with one line in err (bad sizes, multiply without a
 * stationary tile, K mismatch, VCD file not writable); never throws. */
#ifndef NXSIM_SIM_RTL_RTL_PE_HPP
#define NXSIM_SIM_RTL_RTL_PE_HPP

#include <cstdint>
#include <memory>
#include <string>

#include <systemc>

#include "isa/error.h"

class Vnx_pe_sc;
class VerilatedVcdSc;

class nx_rtl_pe : public sc_core::sc_module {
public:
    static constexpr uint32_t rows = 128;          /* K max */
    static constexpr uint32_t cols = 128;          /* M max */
    static constexpr uint32_t psum_entries = 512;  /* N max */

    /* clock_period: one PE cycle (e.g. 1 / 2.4 GHz). */
    nx_rtl_pe(sc_core::sc_module_name name, const sc_core::sc_time &clock_period);
    ~nx_rtl_pe() override;
    nx_rtl_pe(const nx_rtl_pe &) = delete;
    nx_rtl_pe &operator=(const nx_rtl_pe &) = delete;

    /* Writes a VCD of the array's ports and narrow internal signals to path
     * (for GTKWave; about 20 KB per cycle). Callable before sc_start (the
     * file opens at the start of simulation) or from a process; one VCD per
     * instance. Returns 0, or -1 if the file cannot be written. */
    int trace_vcd(const char *path, nx_error *err);
    /* Writes buffered VCD data to the file (e.g. at the end of a run; the
     * destructor closes the file). No-op without a VCD. */
    void flush_vcd();

    /* Caches the stationary tile w [K, M] (row-major, 1 <= K <= rows,
     * 1 <= M <= cols). Takes rows - 1 cycles: the last stationary row enters
     * the array together with the next multiply's first moving vector.
     * cycles (may be NULL): the cycles this call spent. */
    int load_stationary(const float *w, uint32_t K, uint32_t M, uint64_t *cycles, nx_error *err);

    /* out [M, N] (row-major) = acc ? out + partial : partial, partial[m][n] =
     * sum_k w[k][m] * mv[k][n] with mv [K, N] row-major, K the loaded
     * tile's K, 1 <= N <= psum_entries. cycles (may be NULL): from the first
     * moving vector to the last PSUM write, N + rows + cols. */
    int multiply(const float *mv, uint32_t K, uint32_t N, float *out, bool acc, uint64_t *cycles,
                 nx_error *err);

private:
    void start_of_simulation() override;
    void reset_if_needed();
    void timed_edge();
    void delta_edge();
    void settle();
    void set_idle();
    void set_stationary_row(uint32_t k);
    void flush_pending_row();
    int open_vcd(nx_error *err);

    sc_core::sc_time half_period_;
    std::unique_ptr<Vnx_pe_sc> rtl_;
    std::unique_ptr<VerilatedVcdSc> vcd_;
    std::string vcd_path_;

    // the array's inputs (many writers: whichever thread calls us)
    sc_core::sc_signal<bool, sc_core::SC_MANY_WRITERS> clk_, rst_n_, ld_valid_, ld_active_, ld_bf16_,
        mv_valid_, mv_first_, mv_acc_, mv_bf16_, ps_we_;
    sc_core::sc_signal<uint32_t, sc_core::SC_MANY_WRITERS> ps_addr_;
    sc_core::sc_signal<sc_dt::sc_bv<cols * 32>, sc_core::SC_MANY_WRITERS> ld_row_, ps_wdata_;
    sc_core::sc_signal<sc_dt::sc_bv<rows * 32>, sc_core::SC_MANY_WRITERS> mv_vec_;
    // its outputs
    sc_core::sc_signal<sc_dt::sc_bv<cols * 32>> ps_rdata_;
    sc_core::sc_signal<sc_dt::sc_bv<cols>> ps_wr_;
    sc_core::sc_signal<bool> busy_;

    bool reset_done_ = false;
    bool row_pending_ = false;  // stationary row 0 still to enter the array
    bool loaded_ = false;
    uint32_t st_k_ = 0, st_m_ = 0;
    std::unique_ptr<uint32_t[]> st_bits_;  // [rows][cols] as loaded (for the pending row)
};

#endif
