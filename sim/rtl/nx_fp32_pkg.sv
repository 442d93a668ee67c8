// IEEE 754 binary32 multiply and add, round to nearest even, as pure
// functions (synthesis turns each call into one combinational unit).
//
// Matches C float arithmetic on x86-64 (SSE, MXCSR default: RNE, no
// flush-to-zero, no denormals-are-zero) bit for bit on every non-NaN result:
// subnormal inputs and outputs, overflow to +-Inf, signed zeros
// ((-0) + (-0) = -0, x + (-x) = +0, zero products carry the xor of the signs).
//
// NaN: every NaN result is the canonical quiet NaN 0x7fc00000. x86 instead
// propagates the first NaN operand (quietened) and makes 0xffc00000 for an
// invalid operation (Inf - Inf, 0 * Inf); since a C compiler may swap the
// operands of a commutative + or *, the payload a C program gets is not
// defined by its source, so the testbenches compare NaN-ness, not payloads.
package nx_fp32_pkg;

  localparam logic [31:0] QNAN = 32'h7fc00000;

  // Leading zeros of a 64-bit value (64 for zero), by halving: six
  // conditional shifts instead of a 64-way priority chain.
  function automatic logic [6:0] clz64(input logic [63:0] v);
    logic [63:0] x;
    logic [6:0] n;
    x = v;
    n = 7'd0;
    if (x[63:32] == 32'd0) begin n = n + 7'd32; x = x << 32; end
    if (x[63:48] == 16'd0) begin n = n + 7'd16; x = x << 16; end
    if (x[63:56] == 8'd0)  begin n = n + 7'd8;  x = x << 8;  end
    if (x[63:60] == 4'd0)  begin n = n + 7'd4;  x = x << 4;  end
    if (x[63:62] == 2'd0)  begin n = n + 7'd2;  x = x << 2;  end
    if (x[63] == 1'b0)     begin n = n + 7'd1;  x = x << 1;  end
    if (x[63] == 1'b0)     n = n + 7'd1;  // v == 0
    return n;
  endfunction

  // Classes of a magnitude (the value without its sign bit).
  function automatic logic is_nan(input logic [30:0] mag);
    return mag[30:23] == 8'hff && mag[22:0] != 23'd0;
  endfunction

  function automatic logic is_inf(input logic [30:0] mag);
    return mag[30:23] == 8'hff && mag[22:0] == 23'd0;
  endfunction

  function automatic logic is_zero(input logic [30:0] mag);
    return mag == 31'd0;
  endfunction

  // max(exponent field, 1): the exponent subnormals share with the
  // smallest normals, widened for signed arithmetic.
  function automatic logic signed [11:0] eff_exp(input logic [7:0] ef);
    return ef == 8'd0 ? 12'sd1 : $signed({4'd0, ef});
  endfunction

  // Rounds and packs a nonzero finite magnitude given as a 64-bit
  // significand m with its leading one at bit 63 and biased exponent e
  // (value = m / 2^63 * 2^(e - 127), e may be <= 0 or >= 255).
  // Returns the 31-bit {exponent, fraction} field, Inf's on overflow.
  function automatic logic [30:0] round_pack(input logic [63:0] m,
                                             input logic signed [11:0] e);
    logic [62:0] f;        // fraction bits aligned to exponent field ef
    logic [7:0] ef;
    logic sticky, guard, round_up;
    logic [6:0] sh;
    if (e >= 12'sd255) return {8'hff, 23'd0};
    if (e >= 12'sd1) begin
      f = m[62:0];
      ef = e[7:0];
    end else begin
      // subnormal range: shift right by 1 - e with sticky, exponent field 0
      // (a rounding carry into bit 63 then makes the smallest normal)
      ef = 8'd0;
      if (e <= -12'sd62) begin
        f = {62'd0, 1'b1};  // all bits below the guard position: sticky
      end else begin
        sh = 7'(12'sd1 - e);
        f = 63'(m >> sh);
        f[0] = f[0] | ((m << (7'd64 - sh)) != 64'd0);
      end
    end
    // f[62:40] fraction, f[39] guard, f[38:0] sticky
    guard = f[39];
    sticky = f[38:0] != 39'd0;
    round_up = guard & (sticky | f[40]);
    // a carry out of the fraction bumps the exponent (and reaches Inf at 255)
    return {ef, f[62:40]} + {30'd0, round_up};
  endfunction

  function automatic logic [31:0] fmul(input logic [31:0] a, input logic [31:0] b);
    logic s;
    logic [23:0] ma, mb;
    logic [47:0] p;
    logic [63:0] m;
    logic [6:0] lz;
    logic signed [11:0] e;
    s = a[31] ^ b[31];
    if (is_nan(a[30:0]) || is_nan(b[30:0]) || (is_inf(a[30:0]) && is_zero(b[30:0])) ||
        (is_zero(a[30:0]) && is_inf(b[30:0])))
      return QNAN;
    if (is_inf(a[30:0]) || is_inf(b[30:0])) return {s, 8'hff, 23'd0};
    if (is_zero(a[30:0]) || is_zero(b[30:0])) return {s, 31'd0};
    // subnormals: hidden bit 0 and exponent 1
    ma = {a[30:23] != 8'd0, a[22:0]};
    mb = {b[30:23] != 8'd0, b[22:0]};
    p = ma * mb;  // exact, nonzero
    lz = clz64({p, 16'd0});
    m = {p, 16'd0} << lz;
    // p * 2^(Ea + Eb - 300) with Ex = max(exponent field, 1)
    e = eff_exp(a[30:23]) + eff_exp(b[30:23]) - 12'sd126 - $signed({5'd0, lz});
    return {s, round_pack(m, e)};
  endfunction

  function automatic logic [31:0] fadd(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] x, y;      // |x| >= |y|
    logic [7:0] ex, ey;
    logic [7:0] d;
    logic [26:0] mx, my, ys;  // significand, then guard, round, sticky bits
    logic [27:0] sum;
    logic [63:0] m;
    logic [6:0] lz, sh;
    logic signed [11:0] e;
    if (is_nan(a[30:0]) || is_nan(b[30:0])) return QNAN;
    if (is_inf(a[30:0]) && is_inf(b[30:0])) return a[31] == b[31] ? a : QNAN;
    if (is_inf(a[30:0])) return a;
    if (is_inf(b[30:0])) return b;
    if (is_zero(a[30:0]) && is_zero(b[30:0])) return {a[31] & b[31], 31'd0};
    if (is_zero(a[30:0])) return b;
    if (is_zero(b[30:0])) return a;
    if (a[30:0] >= b[30:0]) begin x = a; y = b; end
    else begin x = b; y = a; end
    ex = x[30:23] == 8'd0 ? 8'd1 : x[30:23];
    ey = y[30:23] == 8'd0 ? 8'd1 : y[30:23];
    mx = {x[30:23] != 8'd0, x[22:0], 3'b000};
    my = {y[30:23] != 8'd0, y[22:0], 3'b000};
    d = ex - ey;
    // align y: bits shifted out are kept as a sticky bit in bit 0
    if (d >= 8'd27) begin
      ys = 27'd1;
    end else begin
      ys = my >> d;
      ys[0] = ys[0] | ((my << (8'd27 - d)) != 27'd0);
    end
    if (x[31] == y[31]) sum = {1'b0, mx} + {1'b0, ys};
    else sum = {1'b0, mx} - {1'b0, ys};
    if (sum == 28'd0) return 32'd0;  // exact cancellation: +0 under RNE
    // normalise to a leading one at bit 63 (sum bit 26 is the hidden bit
    // position at exponent ex) ...
    lz = clz64({sum, 36'd0});
    m = {sum, 36'd0} << lz;
    e = $signed({4'd0, ex}) + 12'sd1 - $signed({5'd0, lz});
    // ... but never below exponent 1: there the result is subnormal and
    // round_pack shifts it back right, losing no bits (the discarded
    // positions are zero: cancellation is exact)
    if (e < 12'sd1) begin
      sh = 7'(12'sd1 - e);
      m = m >> sh;
      e = 12'sd1;
      // m no longer has its leading one at 63: pack directly (exact, the
      // guard and sticky bits are zero) with exponent field 0
      return {x[31], 8'd0, m[62:40]};
    end
    return {x[31], round_pack(m, e)};
  endfunction

endpackage
