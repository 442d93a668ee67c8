// Weight-stationary systolic PE array with a PSUM-like result buffer.
//
//   psum[m][n] = sum_k stationary[k][m] * moving[k][n]   (fp32, RNE)
//
// ROWS x COLS processing elements; PE (r, c) holds the stationary weight
// w[r][c] = stationary[k = r][m = c]. Full protocol, timing and numerics:
// docs/parts/rtl.md. In short:
//
// * Stationary load: one row of COLS weights per cycle (ld_valid) enters the
//   top row and shifts down; after ROWS load cycles the row loaded first is
//   in the bottom row, so a [K, M] tile (1 <= K) is fed as rows
//   k = ROWS-1 .. 0, the rows k >= K (fed first) with ld_active = 0, which
//   makes those rows pass partial sums through untouched whatever their
//   weights. Columns m >= M may hold anything; their results are ignored.
// * Moving stream: one vector of ROWS values (moving[k][n], k = 0..ROWS-1)
//   per cycle (mv_valid); lane k is delayed k cycles (the input skew) and
//   then moves right one column per cycle. The first vector may enter in the
//   same cycle as the last stationary row.
// * Each PE: partial = (row 0) ? w * x : partial_from_above + w * x, two RNE
//   roundings (no fused multiply-add), so a column sums in k order starting
//   from the k = 0 product, exactly like the functional model.
// * The partial sum leaving the bottom of column c for moving vector n is
//   written to PSUM entry n of column c: overwrite, or (mv_acc) one more RNE
//   add, psum = psum + partial.
// * Inputs are fp32 bit patterns, or bf16 in lane bits [15:0] when
//   ld_bf16 / mv_bf16 is set (widened exactly by appending 16 zero bits).
//
// The arrays are updated by always_comb loops computing next state plus
// whole-array flop copies (rather than per-PE module instances) so that the
// verilated C++ holds one loop instead of ROWS*COLS copies of the datapath;
// synthesis unrolls the loops into identical cells.
module nx_pe_array #(
  parameter int ROWS = 128,  // >= 2
  parameter int COLS = 128,  // >= 2
  parameter int NMAX = 512   // PSUM entries per column (one 2 KiB bank of fp32)
) (
  input  logic                    clk,
  input  logic                    rst_n,
  // stationary load
  input  logic                    ld_valid,
  input  logic                    ld_active,  // this row is a real stationary row (k < K)
  input  logic                    ld_bf16,
  input  logic [COLS*32-1:0]      ld_row,     // lane c: weight of column c
  // moving stream
  input  logic                    mv_valid,
  input  logic                    mv_first,   // first vector of a multiply: PSUM index 0
  input  logic                    mv_acc,     // the multiply accumulates into PSUM
  input  logic                    mv_bf16,
  input  logic [ROWS*32-1:0]      mv_vec,     // lane k: moving[k][n]
  // PSUM host port: a whole PSUM row (one entry of every column) per cycle;
  // writes only while the array is not writing (busy low)
  input  logic                    ps_we,
  input  logic [$clog2(NMAX)-1:0] ps_addr,
  input  logic [COLS*32-1:0]      ps_wdata,
  output logic [COLS*32-1:0]      ps_rdata,   // entry ps_addr of every column
  // status
  output logic [COLS-1:0]         ps_wr,      // column c writes a result this cycle
  output logic                    busy        // a moving vector is still in flight
);
  import nx_fp32_pkg::*;

  localparam int AW = $clog2(NMAX);
  // edges from a vector entering row 0 until its last PSUM write (column COLS-1)
  localparam int DRAIN = ROWS + COLS;

  // A tag travels with every moving vector and partial sum (plain bits: the
  // verilated C++ of Verilator 5.006 mis-indexes arrays of packed structs).
  localparam int TV = 2;  // valid: a moving vector / its partial sum is here
  localparam int TF = 1;  // first: first vector of its multiply
  localparam int TA = 0;  // acc: its multiply accumulates

  function automatic logic [31:0] lane_value(input logic [31:0] lane, input logic bf16);
    return bf16 ? {lane[15:0], 16'h0000} : lane;
  endfunction

  // State arrays are packed (one wide vector each) so that a whole array is
  // committed by one assignment; an unpacked array's whole-array assignment
  // would be split into ROWS*COLS separate ones in the verilated C++. The
  // per-PE arrays are left out of waveforms (tracing_off): at 128 x 128 they
  // would add megabytes per cycle to a VCD.

  // ---- stationary weights: shift down one row per load cycle ---------------
  /* verilator tracing_off */
  logic [ROWS-1:0][COLS-1:0][31:0] w_q, w_d;
  /* verilator tracing_on */
  logic [ROWS-1:0]                 act_q, act_d;

  always_comb begin
    for (int c = 0; c < COLS; c++) w_d[0][c] = lane_value(ld_row[32*c +: 32], ld_bf16);
    for (int r = 1; r < ROWS; r++) w_d[r] = w_q[r-1];
    act_d = {act_q[ROWS-2:0], ld_active};
  end

  always_ff @(posedge clk) begin
    if (ld_valid) begin
      w_q <= w_d;
      act_q <= act_d;
    end
  end

  // ---- input skew: lane r waits r cycles before entering column 0 ----------
  // Stage s (1 <= s < ROWS) holds lanes r >= s, each one cycle older than in
  // stage s - 1; lane r leaves from stage r. Entries r < s are tied to zero
  // (synthesis removes them): the registers form the usual triangle.
  /* verilator tracing_off */
  logic [ROWS-1:1][ROWS-1:0][31:0] sk_q, sk_d;
  logic [ROWS-1:0][31:0]           skew_out;
  /* verilator tracing_on */

  always_comb begin
    for (int s = 1; s < ROWS; s++)
      for (int r = 0; r < ROWS; r++)
        if (r < s) sk_d[s][r] = '0;
        else if (s == 1) sk_d[s][r] = lane_value(mv_vec[32*r +: 32], mv_bf16);
        else sk_d[s][r] = sk_q[s-1][r];
    skew_out[0] = lane_value(mv_vec[31:0], mv_bf16);
    for (int r = 1; r < ROWS; r++) skew_out[r] = sk_q[r][r];
  end

  always_ff @(posedge clk) sk_q <= sk_d;

  // ---- moving values: every PE registers its input and passes it right ----
  /* verilator tracing_off */
  logic [ROWS-1:0][COLS-1:0][31:0] x_q, x_d;
  /* verilator tracing_on */
  logic [COLS-1:0][2:0]            xt_q, xt_d;  // row 0's tags (the rows below follow it)

  always_comb begin
    for (int r = 0; r < ROWS; r++) x_d[r] = {x_q[r][COLS-2:0], skew_out[r]};
    xt_d = {xt_q[COLS-2:0], mv_valid, mv_first, mv_acc};
  end

  // ---- processing elements: multiply, add the partial sum from above -----
  // Reads flops only, so the simulator evaluates it once per clock edge.
  /* verilator tracing_off */
  logic [ROWS-1:0][COLS-1:0][31:0] ps_q, ps_d;  // partial sum leaving PE (r, c) downwards
  logic [ROWS-1:0][COLS-1:0][2:0] pt_q, pt_d;  // its tag
  /* verilator tracing_on */

  always_comb begin
    // row 0 starts every column's sum with its own product
    pt_d[0] = xt_q;
    for (int c = 0; c < COLS; c++)
      ps_d[0][c] = xt_q[c][TV] ? fmul(w_q[0][c], x_q[0][c]) : ps_q[0][c];
    for (int r = 1; r < ROWS; r++) begin
      pt_d[r] = pt_q[r-1];
      for (int c = 0; c < COLS; c++) begin
        if (!pt_q[r-1][c][TV]) ps_d[r][c] = ps_q[r][c];  // idle: hold
        else if (!act_q[r]) ps_d[r][c] = ps_q[r-1][c];     // row past K: pass through
        else ps_d[r][c] = fadd(ps_q[r-1][c], fmul(w_q[r][c], x_q[r][c]));
      end
    end
  end

  always_ff @(posedge clk) begin
    x_q <= x_d;
    ps_q <= ps_d;
    if (!rst_n) begin
      xt_q <= '0;
      for (int r = 0; r < ROWS; r++) pt_q[r] <= '0;
    end else begin
      xt_q <= xt_d;
      pt_q <= pt_d;
    end
  end

  // ---- PSUM: one bank of NMAX fp32 entries per column ----------------------
  logic [AW-1:0] wp_q [COLS];    // next entry a column writes
  logic [AW-1:0] wp_d [COLS];
  logic [AW-1:0] waddr [COLS];
  logic [31:0]   rmw_rd [COLS];  // PSUM entry at waddr (the accumulate operand)
  logic [31:0]   wdata [COLS];

  always_comb begin
    for (int c = 0; c < COLS; c++) begin
      waddr[c] = pt_q[ROWS-1][c][TF] ? '0 : wp_q[c];
      wp_d[c] = pt_q[ROWS-1][c][TV] ? waddr[c] + 1'b1 : wp_q[c];
    end
  end

  always_comb begin
    for (int c = 0; c < COLS; c++)
      wdata[c] = pt_q[ROWS-1][c][TA] ? fadd(rmw_rd[c], ps_q[ROWS-1][c]) : ps_q[ROWS-1][c];
  end

  always_ff @(posedge clk) wp_q <= wp_d;

  for (genvar c = 0; c < COLS; c++) begin : g_psum
    logic [31:0] mem [NMAX];
    always_ff @(posedge clk) begin
      if (pt_q[ROWS-1][c][TV]) mem[waddr[c]] <= wdata[c];
      else if (ps_we) mem[ps_addr] <= ps_wdata[32*c +: 32];
    end
    assign rmw_rd[c] = mem[waddr[c]];
    assign ps_rdata[32*c +: 32] = mem[ps_addr];
    assign ps_wr[c] = pt_q[ROWS-1][c][TV];
  end

  // ---- busy: counts down from the last vector's entry to its last write ----
  logic [$clog2(DRAIN+1)-1:0] inflight_q;

  always_ff @(posedge clk) begin
    if (!rst_n) inflight_q <= '0;
    else if (mv_valid) inflight_q <= DRAIN[$clog2(DRAIN+1)-1:0];
    else if (inflight_q != '0) inflight_q <= inflight_q - 1'b1;
  end

  assign busy = inflight_q != '0;
endmodule
