#!/usr/bin/env bash
# Tests of `nxsim run topk` (the top-k composite): the public ONNX TopK
# cases (onnx/backend/test/case/node/topk.py: top_k, top_k_smallest,
# top_k_negative_axis) as .npy bytes written here by hand, every method and
# AUTO, --check and --race-check, the dispatch line, ties and NaN, an axis
# other than the last, refusals, no output file on a failure; `nxsim list`
# marks the three methods implemented.
#
# Usage: test_topk.sh NXSIM TMPDIR   (TMPDIR is wiped and reused)
set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$@"

# fp32 bytes of 0..11
F=(00000000 0000803f 00000040 00004040 00008040 0000a040 0000c040 0000e040 00000041 00001041 00002041 00003041)
f32() { local s="" v; for v in "$@"; do s="$s\\x${F[$v]:0:2}\\x${F[$v]:2:2}\\x${F[$v]:4:2}\\x${F[$v]:6:2}"; done; printf '%s' "$s"; }
i32() { local s="" v; for v in "$@"; do s="$s\\x$(printf %02x "$v")\\x00\\x00\\x00"; done; printf '%s' "$s"; }

# ONNX top_k / top_k_negative_axis: X = arange(12).reshape(3, 4), k = 3
make_npy "$T/x1.npy" "'<f4'" "(3, 4)" 3 "$(f32 0 1 2 3 4 5 6 7 8 9 10 11)"
make_npy "$T/v1.npy" "'<f4'" "(3, 3)" 3 "$(f32 3 2 1 7 6 5 11 10 9)"
make_npy "$T/i1.npy" "'<i4'" "(3, 3)" 3 "$(i32 3 2 1 3 2 1 3 2 1)"
# ONNX top_k_smallest: X = [[0,1,2,3],[4,5,6,7],[11,10,9,8]], k = 3, largest = 0
make_npy "$T/x2.npy" "'<f4'" "(3, 4)" 3 "$(f32 0 1 2 3 4 5 6 7 11 10 9 8)"
make_npy "$T/v2.npy" "'<f4'" "(3, 3)" 3 "$(f32 0 1 2 4 5 6 8 9 10)"
make_npy "$T/i2.npy" "'<i4'" "(3, 3)" 3 "$(i32 0 1 2 0 1 2 3 2 1)"
# ties, NaN (0x7fc00000) and -inf: [[1, NaN, 1, -inf, 3, 3], [2, 2, 2, 2, 2, 2]], k = 4
NAN='\x00\x00\xc0\x7f'
NINF='\x00\x00\x80\xff'
make_npy "$T/x3.npy" "'<f4'" "(2, 6)" 2 "$(f32 1)$NAN$(f32 1)$NINF$(f32 3 3)$(f32 2 2 2 2 2 2)"
make_npy "$T/v3.npy" "'<f4'" "(2, 4)" 2 "$NAN$(f32 3 3 1)$(f32 2 2 2 2)"
make_npy "$T/i3.npy" "'<i4'" "(2, 4)" 2 "$(i32 1 4 5 0 0 1 2 3)"
make_npy "$T/v3s.npy" "'<f4'" "(2, 4)" 2 "$NINF$(f32 1 1 3)$(f32 2 2 2 2)"
make_npy "$T/i3s.npy" "'<i4'" "(2, 4)" 2 "$(i32 3 0 2 4 0 1 2 3)"

for m in SCANNING CASCADED ROTATIONAL AUTO; do
    rm -f "$T/v.npy" "$T/i.npy"
    expect 0 "top_k $m" run topk -i "$T/x1.npy" -o "$T/v.npy" -o "$T/i.npy" -a k=3 -a "method=\"$m\"" --check --race-check
    same_file "$T/v.npy" "$T/v1.npy"
    same_file "$T/i.npy" "$T/i1.npy"
    stdout_has_line "check: out0 vs nx_ref_topk: max abs error 0, max rel error 0 (tolerance: exact): ok"
    if grep -qE '^race check: no race' "$T/out"; then pass; else fail "top_k $m: race check line"; fi
    expect 0 "top_k_negative_axis $m" run topk -i "$T/x1.npy" -o "$T/v.npy" -o "$T/i.npy" -a k=3 -a axis=-1 -a "method=\"$m\"" --functional
    same_file "$T/i.npy" "$T/i1.npy"
    expect 0 "top_k_smallest $m" run topk -i "$T/x2.npy" -o "$T/v.npy" -o "$T/i.npy" -a k=3 -a largest=0 -a "method=\"$m\"" --functional --check
    same_file "$T/v.npy" "$T/v2.npy"
    same_file "$T/i.npy" "$T/i2.npy"
    expect 0 "ties and NaN $m" run topk -i "$T/x3.npy" -o "$T/v.npy" -o "$T/i.npy" -a k=4 -a "method=\"$m\"" --functional
    same_file "$T/v.npy" "$T/v3.npy"
    same_file "$T/i.npy" "$T/i3.npy"
    expect 0 "ties and NaN, smallest $m" run topk -i "$T/x3.npy" -o "$T/v.npy" -o "$T/i.npy" -a k=4 -a largest=false -a "method=\"$m\"" --functional
    same_file "$T/v.npy" "$T/v3s.npy"
    same_file "$T/i.npy" "$T/i3s.npy"
done
# axis 0 of the ONNX input: the columns' top 2, through the transposes
make_npy "$T/i4.npy" "'<i4'" "(2, 4)" 2 "$(i32 2 2 2 2 1 1 1 1)"
expect 0 "axis 0" run topk -i "$T/x1.npy" -o "$T/v.npy" -o "$T/i.npy" -a k=2 -a axis=0 --check --race-check
same_file "$T/i.npy" "$T/i4.npy"

# the dispatch line says which method and why
expect 0 "dispatch, attribute" run topk -i "$T/x1.npy" -a k=3 -a 'method="CASCADED"' --functional
stdout_has_line "  dispatch method CASCADED (attribute method)"
expect 0 "dispatch, AUTO" run topk --functional
if grep -qE '^  dispatch method (SCANNING|CASCADED|ROTATIONAL): ' "$T/out"; then pass; else fail "dispatch line for AUTO"; fi
expect 0 "--json dispatch" run topk -i "$T/x1.npy" -a k=3 --functional --json
if grep -qF '"dispatch": "method' "$T/out"; then pass; else fail "--json lacks dispatch"; fi
expect 0 "default op --check" run topk --check
stdout_has_line "check: out1 vs nx_ref_topk: max abs error 0, max rel error 0 (tolerance: exact): ok"

# refusals: one line, exit 3, nothing written
rm -f "$T/v.npy" "$T/i.npy"
expect 3 "k too large" run topk -i "$T/x1.npy" -o "$T/v.npy" -o "$T/i.npy" -a k=5
stderr_is "nxsim: attribute k: 5 is larger than the axis length 4 of operand 0 (in0)"
absent "$T/v.npy"
expect 3 "no k" run topk -i "$T/x1.npy" -o "$T/v.npy"
stderr_is "nxsim: attribute k: required (the number of elements to select, e.g. -a k=8)"
expect 3 "unknown method" run topk -i "$T/x1.npy" -a k=1 -a 'method="NAIVE_SCANNING"' -o "$T/v.npy"
stderr_is "nxsim: attribute method: unknown top-k method 'NAIVE_SCANNING' (AUTO, SCANNING, CASCADED, ROTATIONAL)"
absent "$T/v.npy"
make_npy "$T/xi.npy" "'<i4'" "(3, 4)" 3 "$(i32 0 1 2 3 4 5 6 7 8 9 10 11)"
expect 3 "int32 input" run topk -i "$T/xi.npy" -a k=1
stderr_is "nxsim: operand 0 (in0): dtype int32 is not a top-k type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, uint8, int16, uint16: the keys are fp32)"

# nxsim list: the three methods implemented
expect 0 "list" list
topk=$(sed -n '/^Top-k methods/,$p' "$T/out" | awk 'NR > 1 {print $1, $2, $3}')
want="SCANNING naive_scanning_topk implemented
CASCADED cascaded_2_stage_topk implemented
ROTATIONAL rotational_topk implemented"
if [ "$topk" = "$want" ]; then pass; else fail "list: '$topk'"; fi
expect 0 "kernels" kernels
if grep -qE '^composite +topk +topk +- +implemented' "$T/out"; then pass; else fail "kernels: topk composite row"; fi
if grep -qE '^reference +nx_ref_topk +topk' "$T/out"; then pass; else fail "kernels: nx_ref_topk row"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
