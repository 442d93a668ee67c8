// One fp32 adder and one fp32 multiplier (nx_fp32_pkg) as a combinational
// module: what the unit tests drive with random and special operands, and
// the smallest thing to read the arithmetic's gate count from.
module nx_fp32_unit (
  input  logic [31:0] a,
  input  logic [31:0] b,
  output logic [31:0] sum,   // a + b, RNE
  output logic [31:0] prod   // a * b, RNE
);
  import nx_fp32_pkg::*;

  assign sum = fadd(a, b);
  assign prod = fmul(a, b);
endmodule
