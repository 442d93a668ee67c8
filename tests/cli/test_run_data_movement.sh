#!/usr/bin/env bash
# `nxsim run` on the two data-movement leaves: SelectAndScatter and
# ResizeNearest on their default ops with --check, StableHLO's
# select_and_scatter example and ONNX's Resize examples from .npy bytes
# written here by hand (on the model and the functional executor), and
# their refusals (exit 3, no output file).
#
# Usage: test_run_data_movement.sh NXSIM TMPDIR   (TMPDIR is wiped and reused)
# Prints "N passed, M failed"; exits non-zero if anything failed.
set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$@"

F0='\x00\x00\x00\x00' F1='\x00\x00\x80\x3f' F2='\x00\x00\x00\x40' F3='\x00\x00\x40\x40' F4='\x00\x00\x80\x40'
F5='\x00\x00\xa0\x40' F6='\x00\x00\xc0\x40' F7='\x00\x00\xe0\x40' F8='\x00\x00\x00\x41' F14='\x00\x00\x60\x41'

# ---- default ops, checked against the references ------------------------------------
expect 0 "run SelectAndScatter --check" run SelectAndScatter --check
stdout_has_line "check: out0 vs nx_ref_select_and_scatter: max abs error 0, max rel error 0 (tolerance: exact): ok"
expect 0 "run ResizeNearest --check" run ResizeNearest --check
stdout_has_line "check: out0 vs nx_ref_resize_nearest: max abs error 0, max rel error 0 (tolerance: exact): ok"
expect 0 "ResizeNearest ONNX modes --check" run ResizeNearest --check --machine trn1 \
    -a 'coordinate_transformation_mode="align_corners"' -a 'nearest_mode="round_prefer_ceil"'
stdout_has_line "check: out0 vs nx_ref_resize_nearest: max abs error 0, max rel error 0 (tolerance: exact): ok"

# ---- StableHLO's example as a rank-4 op: operand [[1,5],[2,5],[3,6],[4,4]],
# source [[5,6],[7,8]], window [3,1], strides [2,1], padding [[0,1],[0,0]]
make_npy "$T/op.npy" "'<f4'" "(1, 1, 4, 2)" 1 "$F1$F5$F2$F5$F3$F6$F4$F4"
make_npy "$T/src.npy" "'<f4'" "(1, 1, 2, 2)" 1 "$F5$F6$F7$F8"
make_npy "$T/sas_expected.npy" "'<f4'" "(1, 1, 4, 2)" 1 "$F0$F0$F0$F0$F5$F14$F7$F0"
for mode in "" --functional; do
    rm -f "$T/sas.npy"
    expect 0 "StableHLO example $mode" run SelectAndScatter $mode -i "$T/op.npy" -i "$T/src.npy" \
        -a 'window_dimensions=[1,1,3,1]' -a 'window_strides=[1,1,2,1]' -a 'padding=[[0,0],[0,0],[0,1],[0,0]]' \
        -o "$T/sas.npy" --check
    same_file "$T/sas.npy" "$T/sas_expected.npy"
done

# ---- ONNX Resize examples (NHWC, C = 1) ----------------------------------------------
# resize_upsample_sizes_nearest: [[1,2],[3,4]] -> 7 x 8, half_pixel + round_prefer_floor
make_npy "$T/x22.npy" "'<f4'" "(1, 2, 2, 1)" 1 "$F1$F2$F3$F4"
R12="$F1$F1$F1$F1$F2$F2$F2$F2" R34="$F3$F3$F3$F3$F4$F4$F4$F4"
make_npy "$T/up_expected.npy" "'<f4'" "(1, 7, 8, 1)" 1 "$R12$R12$R12$R12$R34$R34$R34"
rm -f "$T/up.npy"
expect 0 "ONNX upsample by sizes" run ResizeNearest -i "$T/x22.npy" -a 'out_shape=[1,7,8,1]' \
    -a 'coordinate_transformation_mode="half_pixel"' -a 'nearest_mode="round_prefer_floor"' -o "$T/up.npy" --check
same_file "$T/up.npy" "$T/up_expected.npy"
# resize_downsample_scales_nearest: [[1,2,3,4],[5,6,7,8]], scales 0.6 -> [[1,3]]
make_npy "$T/x24.npy" "'<f4'" "(1, 2, 4, 1)" 1 "$F1$F2$F3$F4$F5$F6$F7$F8"
make_npy "$T/down_expected.npy" "'<f4'" "(1, 1, 2, 1)" 1 "$F1$F3"
rm -f "$T/down.npy"
expect 0 "ONNX downsample by scales" run ResizeNearest --functional -i "$T/x24.npy" -a 'scales=[1,0.6,0.6,1]' \
    -a 'coordinate_transformation_mode="half_pixel"' -o "$T/down.npy" --check
same_file "$T/down.npy" "$T/down_expected.npy"

# ---- refusals: exit 3, no output --------------------------------------------------------
expect 3 "scales resize C" run ResizeNearest -i "$T/x22.npy" -a 'scales=[1,2,2,2]' -o "$T/never.npy"
stderr_is "nxsim: operand 0 (in0): attribute scales [1, 2, 2, 2]: must be [1, sh, sw, 1] (ResizeNearest keeps N and C)"
absent "$T/never.npy"
expect 3 "unknown nearest mode" run ResizeNearest -i "$T/x22.npy" -a 'out_shape=[1,3,3,1]' -a 'nearest_mode="up"' \
    -o "$T/never.npy"
stderr_is "nxsim: operand 0 (in0): attribute nearest_mode: 'up' is not one of floor, ceil, round_prefer_floor, round_prefer_ceil"
absent "$T/never.npy"
expect 3 "source of the wrong shape" run SelectAndScatter -i "$T/op.npy" -i "$T/src.npy" \
    -a 'window_dimensions=[1,1,3,1]' -a 'window_strides=[1,1,2,1]' -o "$T/never.npy"
stderr_is "nxsim: operand 1 (in1): is fp32[1,1,2,2], the window counts of operand 0 (in0) are fp32[1,1,1,2]"
absent "$T/never.npy"
make_npy "$T/op2.npy" "'<f4'" "(1, 2, 4, 2)" 1 "$F1$F5$F2$F5$F3$F6$F4$F4$F1$F5$F2$F5$F3$F6$F4$F4"
make_npy "$T/src2.npy" "'<f4'" "(1, 1, 1, 2)" 1 "$F5$F6"
expect 3 "window over C" run SelectAndScatter -i "$T/op2.npy" -i "$T/src2.npy" -a 'window_dimensions=[1,2,3,1]' \
    -a 'window_strides=[1,1,2,1]' -o "$T/never.npy"
stderr_is "nxsim: attribute window_dimensions: dim 1 (C) has a window of 2: select_and_scatter_kernel windows H and W only (windows of 1 over N and C)"
absent "$T/never.npy"
expect 3 "no window" run SelectAndScatter -i "$T/op.npy" -i "$T/src.npy" -o "$T/never.npy"
stderr_is "nxsim: attribute window_dimensions: missing (one window size per operand dim)"
absent "$T/never.npy"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
