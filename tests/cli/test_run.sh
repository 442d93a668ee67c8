#!/usr/bin/env bash
# Tests of `nxsim list`, `nxsim kernels` and `nxsim run`: the registry listing
# in the seed's order, the registry's miss text verbatim, transposes checked
# against the reference and against .npy bytes written here by hand, op JSON
# files, attribute JSON errors, a leaf's refusal, and no output file on any
# failure.
#
# Usage: test_run.sh NXSIM TMPDIR   (TMPDIR is wiped and reused)
# Prints "N passed, M failed"; exits non-zero if anything failed.
# Needs only bash, cmp, grep, sed and coreutils (no Python, no numpy).
set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$@"



# x = [[1, 2, -1.5, 0.25], [3, -4, 0.5, 100]] (fp32) and its transpose,
# element bytes reordered by hand: x00 x10 x01 x11 x02 x12 x03 x13.
E1='\x00\x00\x80\x3f' E2='\x00\x00\x00\x40' EM15='\x00\x00\xc0\xbf' E025='\x00\x00\x80\x3e'
E3='\x00\x00\x40\x40' EM4='\x00\x00\x80\xc0' E05='\x00\x00\x00\x3f' E100='\x00\x00\xc8\x42'
make_npy "$T/x.npy" "'<f4'" "(2, 4)" 2 "$E1$E2$EM15$E025$E3$EM4$E05$E100"
make_npy "$T/xt_expected.npy" "'<f4'" "(4, 2)" 4 "$E1$E3$E2$EM4$EM15$E05$E025$E100"
# a [2,1,3] int16 tensor and its permutation [2,0,1] -> [3,2,1]
make_npy "$T/c.npy" "'<i2'" "(2, 1, 3)" 2 '\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00'
make_npy "$T/c201_expected.npy" "'<i2'" "(3, 2, 1)" 3 '\x01\x00\x04\x00\x02\x00\x05\x00\x03\x00\x06\x00'
# a [2,3,2] int8 tensor: no permutation of it that moves the middle dim first reduces
make_npy "$T/d.npy" "'|i1'" "(2, 3, 2)" 2 '\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c'

LIVE="dict_keys(['SelectAndScatter', 'ResizeNearest', 'Conv2d_pbp_0f1b_0i1o_01fb_experimental_1', 'Conv2d_pbp_fb01_io01_01bf_experimental_1', 'Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh', 'Conv1d_depthwise_bf01_oi01_bf01', 'conv2d_column_packing', 'conv2d_column_packing_io10', 'conv2d_column_packing_1', 'blockwise_mm', 'conv2d_depthwise_f01b_o01i_bf01', 'tiled_pf_transpose', 'tiled_dve_transpose_10'])"
MISS="Internal NKI kernel 'NoSuchKernel' is not registered. Available kernels: $LIVE"

# ---- nxsim list -------------------------------------------------------------------
expect 0 "list" list
# the registered rows in seed order, with the seed's configs
rows=$(grep -E '^  [0-9]+ ' "$T/out" | awk '{print $1, $2, $3, $4, $5, $6, $7}')
want_rows="1 SelectAndScatter select_and_scatter_kernel 2 none 1 false
2 ResizeNearest resize_nearest_fixed_dma_kernel 1 resize args 1
3 Conv2d_pbp_0f1b_0i1o_01fb_experimental_1 conv2d_pbp_0f1b_0i1o_01fb_experimental_1 all attrs 1 false
4 Conv2d_pbp_fb01_io01_01bf_experimental_1 conv2d_pbp_fb01_io01_01bf_kernel_experimental_1 all attrs 1 false
5 Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh 2 conv attrs +
6 Conv1d_depthwise_bf01_oi01_bf01 conv1d_depthwise_bf01_oi01_bf01 2 conv attrs +
7 conv2d_column_packing conv2d_column_packing 2 conv attrs +
8 conv2d_column_packing_io10 conv2d_column_packing_io10 2 conv attrs +
9 conv2d_column_packing_1 conv2d_column_packing_1 2 conv attrs +
10 blockwise_mm blockwise_mm all attrs 1 false
11 conv2d_depthwise_f01b_o01i_bf01 conv2d_depthwise_f01b_o01i_bf01 2 conv attrs +
12 tiled_pf_transpose tiled_pf_transpose all attrs VNC(2) false
13 tiled_dve_transpose_10 tiled_dve_transpose_10 all attrs VNC(2) false"
if [ "$rows" = "$want_rows" ]; then pass; else fail "list rows: '$rows'"; fi
topk=$(sed -n '/^Top-k methods/,$p' "$T/out" | awk 'NR > 1 {print $1, $2}')
want_topk="SCANNING naive_scanning_topk
CASCADED cascaded_2_stage_topk
ROTATIONAL rotational_topk"
if [ "$topk" = "$want_topk" ]; then pass; else fail "top-k methods: '$topk'"; fi
if grep -q NAIVE_SCANNING "$T/out"; then fail "NAIVE_SCANNING listed"; else pass; fi

expect 0 "list --all" list --all
keys=$(grep -E '^  [0-9]+ ' "$T/out" | awk '{print $2 "=" $3}' | tr '\n' ' ')
want_keys="SelectAndScatter=select_and_scatter_kernel ResizeNearest=resize_nearest_fixed_dma_kernel \
Conv2d_pbp_0f1b_0i1o_01fb_experimental_1=conv2d_pbp_0f1b_0i1o_01fb_experimental_1 \
Conv2d_pbp_fb01_io01_01bf_experimental_1=conv2d_pbp_fb01_io01_01bf_kernel_experimental_1 \
Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh=conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh \
Conv1d_depthwise_bf01_oi01_bf01=conv1d_depthwise_bf01_oi01_bf01 conv2d_column_packing=conv2d_column_packing \
conv2d_column_packing_io10=conv2d_column_packing_io10 conv2d_column_packing_1=conv2d_column_packing_1 \
blockwise_mm=blockwise_mm conv2d_depthwise_f01b_o01i_bf01=conv2d_depthwise_f01b_o01i_bf01 \
tiled_pf_transpose=tiled_pf_transpose tiled_dve_transpose_10=tiled_dve_transpose_10 "
if [ "$keys" = "$want_keys" ]; then pass; else fail "list --all keys: '$keys'"; fi
if grep -qi mlp "$T/out"; then fail "an MLP entry is listed"; else pass; fi
expect 2 "list extra argument" list extra

# ---- nxsim kernels ------------------------------------------------------------------
expect 0 "kernels" kernels
if grep -qE '^reference +nx_ref_transpose +transpose +- +implemented' "$T/out"; then pass; else fail "kernels: no reference row"; fi
# every seed entry is implemented today, and so are the top-k leaves
if grep -qE '^leaf +naive_scanning_topk +topk +- +implemented' "$T/out"; then pass; else fail "kernels: top-k row"; fi
if grep -qE '^leaf +conv2d_column_packing_io10 +conv +conv2d_column_packing_io10 +registered' "$T/out"; then pass; else fail "kernels: io10 row"; fi
if grep -qE '^leaf +tiled_dve_transpose_10 +transpose +tiled_dve_transpose_10 +registered' "$T/out"; then pass; else fail "kernels: dve row"; fi
if grep -qE '^composite +nx_tutorial_matmul_fully_optimized +tutorial +- +implemented +nxsim run nki_matmul_fully_optimized' "$T/out"; then
    pass; else fail "kernels: composite tier (the tutorial matmuls)"; fi
if grep -qE '^composite +topk +topk ' "$T/out"; then pass; else fail "kernels: composite tier"; fi

# ---- the miss error, verbatim ---------------------------------------------------------
expect 3 "run NoSuchKernel" run NoSuchKernel
stderr_is "$MISS"
expect 3 "run MLP" run MLP -i "$T/x.npy" -o "$T/never.npy"
absent "$T/never.npy"

# ---- default runs with --check (the SystemC model) ----------------------------------
for key in tiled_pf_transpose tiled_dve_transpose_10; do
    expect 0 "run $key --check" run "$key" --check --profile "$T/$key.trace.json"
    stdout_has_line "check: out0 vs nx_ref_transpose: max abs error 0, max rel error 0 (tolerance: exact): ok"
    stdout_has_line "NEW_NKI_FE: 1 (new traces in this run; 0 from the trace cache)"
    if grep -q "on VNC(2) (2 cores), machine trn2, SystemC model" "$T/out"; then pass; else fail "$key: header"; fi
    if [ -s "$T/$key.trace.json" ] && grep -q '"traceEvents"' "$T/$key.trace.json"; then pass; else fail "$key: no trace"; fi
done
# blockwise_mm on its built-in routing, model and functional, another seed too
for args in "" "--functional" "--seed 5"; do
    expect 0 "run blockwise_mm --check $args" run blockwise_mm --check $args
    if grep -qE '^check: output vs nx_ref_blockwise_mm: .*\(tolerance: [0-9.]+ x eps\(fp32\): k=4, H\+I=448\): ok$' "$T/out"
    then pass; else fail "blockwise_mm $args: check line"; fi
    if grep -qE '^  operand token_position_to_id int32\[288\] +built-in values' "$T/out"; then pass; else fail "blockwise_mm: routing"; fi
done
expect 3 "blockwise_mm bad mode" run blockwise_mm -a 'expert_affinities_scaling_mode="MAYBE"'
stderr_is 'nxsim: attribute expert_affinities_scaling_mode: "MAYBE" is not one of "POST_SCALE", "PRE_SCALE", "NO_SCALE"'
expect 0 "run --json" run tiled_pf_transpose --json --check --seed 7
if head -c 40 "$T/out" | grep -qF '{"kernel": "tiled_pf_transpose", "leaf"'; then pass; else fail "--json output"; fi
if grep -qF '"new_nki_fe": 1' "$T/out" && grep -qF '"ok": true' "$T/out"; then pass; else fail "--json fields"; fi

# ---- --race-check: the transposes are race-free; a racy test composite is not ------------
for key in tiled_pf_transpose tiled_dve_transpose_10; do
    expect 0 "run $key --race-check" run "$key" --race-check --check
    if grep -qE '^race check: no race \([0-9]+ log records\)$' "$T/out"; then pass; else fail "$key: no race-check line"; fi
done
expect 0 "run --json --race-check" run tiled_pf_transpose --json --race-check
if grep -qF '"race_check": "no race"' "$T/out"; then pass; else fail "--json lacks race_check"; fi
expect 2 "run --race-check --functional" run tiled_pf_transpose --race-check --functional
stderr_is "nxsim: run: --race-check needs the SystemC model's log: drop --functional; try 'nxsim run --help'"
# NXSIM_TEST_KERNELS (set by ctest): `nxsim run` over the test composites
# of tests/fixture_kernels.h, among them a deliberately racy copy.
if [ -n "${NXSIM_TEST_KERNELS:-}" ]; then
    REAL=$NXSIM
    NXSIM=$NXSIM_TEST_KERNELS
    expect 0 "racy_copy without --race-check" run racy_copy --check -o "$T/racy.npy"
    rm -f "$T/racy.npy"
    expect 1 "racy_copy --race-check" run racy_copy --race-check --check -o "$T/racy.npy"
    stderr_is "nxsim: racy_copy: race: core 0 sp #0 (dma_copy) on queue 0 writes hbm@[128, 256) and core 0 sp #1 (dma_copy) on queue 1 writes hbm@[128, 256) with no semaphore ordering them"
    absent "$T/racy.npy"
    expect 0 "synced_copy --race-check" run synced_copy --race-check --check
    stdout_has_line "check: out0 vs memcpy: max abs error 0, max rel error 0 (tolerance: exact): ok"
    if grep -q '^nxsim run: synced_copy -> composite fixture_synced_copy on VNC(2)' "$T/out"; then pass; else fail "composite header"; fi
    # an aliased result: one tensor with its operand, the -o file the whole result
    expect 0 "inplace_bump --race-check -o" run inplace_bump --race-check --check -o "$T/bump.npy"
    stdout_has_line "check: out0 vs bump: max abs error 0, max rel error 0 (tolerance: exact): ok"
    if grep -qE '^  result  out0 +fp32\[4,8\]  in place of in0  -> ' "$T/out"; then pass; else fail "in place of line"; fi
    if [ "$(wc -c < "$T/bump.npy")" -eq 256 ]; then pass; else fail "bump.npy is not 128 + 4 x 8 x 4 bytes"; fi
    expect 1 "racy_inplace --race-check" run racy_inplace --race-check --check
    if grep -qF 'hbm@[0, 32)' "$T/err"; then pass; else fail "racy_inplace: no race on the shared row"; fi
    # a name in neither table: the registry's miss text, unchanged
    expect 3 "test binary miss" run NoSuchKernel
    stderr_is "$MISS"
    NXSIM=$REAL
else
    fail "NXSIM_TEST_KERNELS is not set (run this script through ctest)"
fi

# ---- --seed: decimal or 0x hex, the same as nxsim exec -----------------------------------
expect 0 "run --seed 10" run tiled_pf_transpose --functional --seed 10
grep '^out0 ' "$T/out" >"$T/seed10"
for s in 010 0xa; do
    expect 0 "run --seed $s" run tiled_pf_transpose --functional --seed "$s"
    grep '^out0 ' "$T/out" >"$T/seed_s"
    same_file "$T/seed_s" "$T/seed10"
done
expect 0 "run --seed 8" run tiled_pf_transpose --functional --seed 8
grep '^out0 ' "$T/out" >"$T/seed_s"
if cmp -s "$T/seed_s" "$T/seed10"; then fail "--seed 010 read as octal"; else pass; fi
expect 2 "run --seed 0x" run tiled_pf_transpose --seed 0x
stderr_is "nxsim: run: --seed expects a non-negative integer, got '0x'; try 'nxsim run --help'"

# ---- given inputs, both leaves, model and functional: bytes written by hand -----------
for key in tiled_pf_transpose tiled_dve_transpose_10; do
    for mode in "" --functional; do
        rm -f "$T/xt.npy"
        expect 0 "$key $mode -i -o" run "$key" $mode -i "$T/x.npy" -a 'permutation=[1,0]' -o "$T/xt.npy" --check
        same_file "$T/xt.npy" "$T/xt_expected.npy"
    done
    rm -f "$T/c201.npy"
    expect 0 "$key 3-D int16" run "$key" -i "$T/c.npy" -a 'permutation=[2,0,1]' -o "$T/c201.npy" --check
    same_file "$T/c201.npy" "$T/c201_expected.npy"
done
# the permutation defaults to the reversed dims, like numpy
rm -f "$T/xt.npy"
expect 0 "no permutation" run tiled_pf_transpose -i "$T/x.npy" -o "$T/xt.npy"
same_file "$T/xt.npy" "$T/xt_expected.npy"
# trn1 too
rm -f "$T/xt.npy"
expect 0 "--machine trn1" run tiled_dve_transpose_10 --machine trn1 -i "$T/x.npy" -o "$T/xt.npy"
same_file "$T/xt.npy" "$T/xt_expected.npy"

# ---- the dense convolutions (#3, #4) ------------------------------------------------------
for key in Conv2d_pbp_0f1b_0i1o_01fb_experimental_1 Conv2d_pbp_fb01_io01_01bf_experimental_1; do
    expect 0 "run $key --check" run "$key" --check
    if grep -qE '^check: out0 vs nx_ref_conv: .*\(tolerance: K=864: 1.39 x eps\(bf16\)\): ok$' "$T/out"; then
        pass
    else
        fail "$key: check line"
    fi
done
# ONNX's conv_with_strides image (0..34 as 7 x 5, onnx/onnx docs/Operators.md) and its 3x3 box
# filter, stride 2, padding [[1,1],[0,2]]: the result shape (4, 3) comes from the formula; the
# first two columns are ONNX's test_conv_with_strides_and_asymmetric_padding. With one feature
# and one batch both leaves' layouts hold the same bytes.
IMG='\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40\x00\x00\xc0\x40\x00\x00\xe0\x40\x00\x00\x00\x41\x00\x00\x10\x41\x00\x00\x20\x41\x00\x00\x30\x41\x00\x00\x40\x41\x00\x00\x50\x41\x00\x00\x60\x41\x00\x00\x70\x41\x00\x00\x80\x41\x00\x00\x88\x41\x00\x00\x90\x41\x00\x00\x98\x41\x00\x00\xa0\x41\x00\x00\xa8\x41\x00\x00\xb0\x41\x00\x00\xb8\x41\x00\x00\xc0\x41\x00\x00\xc8\x41\x00\x00\xd0\x41\x00\x00\xd8\x41\x00\x00\xe0\x41\x00\x00\xe8\x41\x00\x00\xf0\x41\x00\x00\xf8\x41\x00\x00\x00\x42\x00\x00\x04\x42\x00\x00\x08\x42'
BOX="$E1$E1$E1$E1$E1$E1$E1$E1$E1"
# 21 33 13 / 99 117 42 / 189 207 72 / 171 183 63
CONV='\x00\x00\xa8\x41\x00\x00\x04\x42\x00\x00\x50\x41\x00\x00\xc6\x42\x00\x00\xea\x42\x00\x00\x28\x42\x00\x00\x3d\x43\x00\x00\x4f\x43\x00\x00\x90\x42\x00\x00\x2b\x43\x00\x00\x37\x43\x00\x00\x7c\x42'
make_npy "$T/img3.npy" "'<f4'" "(7, 1, 5, 1)" 7 "$IMG"
make_npy "$T/box3.npy" "'<f4'" "(3, 1, 3, 1)" 3 "$BOX"
make_npy "$T/img4.npy" "'<f4'" "(1, 1, 7, 5)" 1 "$IMG"
make_npy "$T/box4.npy" "'<f4'" "(1, 1, 3, 3)" 1 "$BOX"
make_npy "$T/conv_expected.npy" "'<f4'" "(4, 3, 1, 1)" 4 "$CONV"
for mode in "" --functional; do
    rm -f "$T/conv3.npy" "$T/conv4.npy"
    expect 0 "conv #3 $mode -i -a" run Conv2d_pbp_0f1b_0i1o_01fb_experimental_1 $mode -i "$T/img3.npy" \
        -i "$T/box3.npy" -o "$T/conv3.npy" -a 'stride=[2,2]' -a 'padding=[[1,1],[0,2]]' --check
    same_file "$T/conv3.npy" "$T/conv_expected.npy"
    expect 0 "conv #4 $mode -i -a" run Conv2d_pbp_fb01_io01_01bf_experimental_1 $mode -i "$T/img4.npy" \
        -i "$T/box4.npy" -o "$T/conv4.npy" -a 'stride=[2,2]' -a 'padding=[[1,1],[0,2]]' --check
    same_file "$T/conv4.npy" "$T/conv_expected.npy"
done
# The same problem in ONNX's own terms through the conv composite (X NCHW, W OIHW, ONNX pads
# [H_begin, W_begin, H_end, W_end]): the report names the leaf and the layout steps (one channel:
# group = C = O = 1 is a depthwise conv, and N = 1 takes #9 with no layout step).
make_npy "$T/conv_onnx_expected.npy" "'<f4'" "(1, 1, 4, 3)" 1 "$CONV"
rm -f "$T/conv_onnx.npy"
expect 0 "conv composite (ONNX layouts)" run conv -i "$T/img4.npy" -i "$T/box4.npy" -o "$T/conv_onnx.npy" \
    -a 'strides=[2,2]' -a 'pads=[1,0,1,2]' --check
same_file "$T/conv_onnx.npy" "$T/conv_onnx_expected.npy"
if grep -q '^  dispatch leaf conv2d_column_packing_1: depthwise (group = C = O), one image; layout: X NCHW, W OIHW and Y NCHW read and written as they are (the leaf.s layouts)$' "$T/out"; then
    pass
else
    fail "conv composite: dispatch line"
fi
expect 0 "run conv --check" run conv --check
if grep -qE '^check: Y vs nx_ref_conv_onnx: .*: ok$' "$T/out"; then pass; else fail "conv: check line"; fi
# An ONNX OIHW filter [2, 1, 3, 3] given to #4 (fb01_io01: filt I,O,KH,KW): the refusal names
# the layouts each operand must have.
make_npy "$T/box4x2.npy" "'<f4'" "(2, 1, 3, 3)" 2 "$BOX$BOX"
expect 3 "conv #4 with an OIHW filter" run Conv2d_pbp_fb01_io01_01bf_experimental_1 -i "$T/img4.npy" \
    -i "$T/box4x2.npy" -o "$T/never.npy"
stderr_is "nxsim: operand 1 (in1): dim 0 (i) is 2 but operand 0 (in0) features 1 / feature_group_count 1 = 1 (layouts, labels fb01_io01->01bf: operand 0 (in0) C,N,H,W, operand 1 (in1) C/G,O,KH,KW, result OH,OW,N,O)"
absent "$T/never.npy"
expect 3 "conv composite: group not dividing C" run conv -i "$T/img4.npy" -i "$T/box4.npy" -a 'group=2' \
    -o "$T/never.npy"
stderr_is "nxsim: attribute group=2: does not divide operand 0 (in0)'s C = 1 (X is NCHW: [N, C, H, W])"
absent "$T/never.npy"
# refusals name the attribute, its value and the rule; no output is written
expect 3 "conv lhs_dilation" run Conv2d_pbp_0f1b_0i1o_01fb_experimental_1 -i "$T/img3.npy" -i "$T/box3.npy" \
    -o "$T/never.npy" -a 'lhs_dilation=[2,1]'
stderr_is "nxsim: conv2d_pbp_0f1b_0i1o_01fb_experimental_1: attribute lhs_dilation=[2,1] is not supported (this leaf takes lhs_dilation [1,1] only)"
absent "$T/never.npy"
expect 3 "conv bad stride" run Conv2d_pbp_fb01_io01_01bf_experimental_1 -a 'stride=[0,1]' -o "$T/never.npy"
stderr_is "nxsim: attribute stride=[0,1]: entries must be >= 1"
absent "$T/never.npy"
expect 3 "conv window too large" run Conv2d_pbp_0f1b_0i1o_01fb_experimental_1 -i "$T/img3.npy" -i "$T/box3.npy" \
    -a 'rhs_dilation=[4,4]' -o "$T/never.npy"
stderr_is "nxsim: conv spatial dim 0: the window (3 taps, rhs_dilation 4) does not fit the input (7, lhs_dilation 1, padding [0,0]): no output (layouts, labels 0f1b_0i1o->01fb: operand 0 (in0) H,C,W,N, operand 1 (in1) KH,C/G,KW,O, result OH,OW,O,N)"
absent "$T/never.npy"

# ---- the weight-gradient convolutions (#5, #7, #8) ---------------------------------------
for key in Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh conv2d_column_packing conv2d_column_packing_io10; do
    expect 0 "run $key --check" run "$key" --check
    if grep -qE '^check: out0 vs nx_ref_conv: .* x eps\(bf16\)\): ok$' "$T/out"; then pass; else fail "$key: check line"; fi
done
# A 3 x 3 image 0..8 and a 2 x 2 gradient with one 1: each leaf's result is the 2 x 2 window of
# the image the 1 selects. The same bytes as io01 (#5, #7: y=0, x=1) select columns 1..2, as
# io10 (#8: x=0, y=1) rows 1..2; batch_group_count is taken as N = 1 when absent.
IMG9='\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40\x00\x00\xc0\x40\x00\x00\xe0\x40\x00\x00\x00\x41'
ONE='\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x00\x00\x00\x00\x00'
make_npy "$T/wg_img.npy" "'<f4'" "(1, 1, 3, 3)" 1 "$IMG9"
make_npy "$T/wg_filt.npy" "'<f4'" "(1, 1, 2, 2)" 1 "$ONE"
make_npy "$T/wg_cols.npy" "'<f4'" "(2, 2, 1, 1)" 2 '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x80\x40\x00\x00\xa0\x40'
make_npy "$T/wg_rows.npy" "'<f4'" "(2, 2, 1, 1)" 2 '\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xc0\x40\x00\x00\xe0\x40'
for mode in "" --functional; do
    for key in Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh conv2d_column_packing conv2d_column_packing_io10; do
        rm -f "$T/wg_out.npy"
        expect 0 "$key $mode -i" run "$key" $mode -i "$T/wg_img.npy" -i "$T/wg_filt.npy" -o "$T/wg_out.npy" --check
        if [ "$key" = conv2d_column_packing_io10 ]; then same_file "$T/wg_out.npy" "$T/wg_rows.npy";
        else same_file "$T/wg_out.npy" "$T/wg_cols.npy"; fi
    done
done
# refusals name the attribute, its value and the rule; no output is written
expect 3 "wgrad lhs_dilation" run Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh -i "$T/wg_img.npy" -i "$T/wg_filt.npy" \
    -o "$T/never.npy" -a 'lhs_dilation=[2,2]' -a 'padding=[[1,1],[1,1]]'
stderr_is "nxsim: Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: attribute lhs_dilation=[2,2] is not supported (this leaf takes lhs_dilation [1,1] only)"
absent "$T/never.npy"

# ---- --op JSON (paths relative to the op file) -----------------------------------------
mkdir -p "$T/op"
cp "$T/x.npy" "$T/op/x.npy"
cat >"$T/op/op.json" <<'EOF'
{"func_name": "tiled_dve_transpose_10",
 "operands": [{"name": "x", "file": "x.npy"}],
 "results": [{"name": "y", "file": "y.npy", "shape": [4, 2], "dtype": "fp32"}],
 "attrs": {"permutation": [1, 0]}}
EOF
expect 0 "--op" run --op "$T/op/op.json" --check
same_file "$T/op/y.npy" "$T/xt_expected.npy"
stdout_has_line "check: y vs nx_ref_transpose: max abs error 0, max rel error 0 (tolerance: exact): ok"
cat >"$T/op/random.json" <<'EOF'
{"func_name": "tiled_pf_transpose",
 "operands": [{"name": "a", "shape": [129, 257], "dtype": "bf16"}],
 "attrs": {"permutation": [1, 0]}}
EOF
expect 0 "--op pseudo-random operand" run --op "$T/op/random.json" --check
if grep -q '^out0 bf16 \[257,129\] checksum=' "$T/out"; then pass; else fail "--op result summary"; fi
cat >"$T/op/wrong.json" <<'EOF'
{"func_name": "tiled_pf_transpose",
 "operands": [{"name": "x", "file": "x.npy"}],
 "results": [{"name": "y", "file": "never.npy", "shape": [2, 4]}]}
EOF
expect 3 "--op result shape against the rule" run --op "$T/op/wrong.json"
stderr_is "nxsim: $T/op/wrong.json: result 0 (y) is declared fp32[2,4], but tiled_pf_transpose produces fp32[4,2]"
absent "$T/op/never.npy"
cat >"$T/op/miss.json" <<'EOF'
{"func_name": "NoSuchKernel", "operands": []}
EOF
expect 3 "--op miss" run --op "$T/op/miss.json"
stderr_is "$MISS"
printf '{"func_name": "tiled_pf_transpose", "operands": [,]}' >"$T/op/bad.json"
expect 3 "--op bad JSON" run --op "$T/op/bad.json"
stderr_is "nxsim: $T/op/bad.json: invalid JSON at line 1, column 50"
expect 2 "--op with -i" run --op "$T/op/op.json" -i "$T/x.npy"

# ---- attribute errors and leaf refusals (no output file) -------------------------------
expect 2 "bad -a JSON" run tiled_pf_transpose -a 'permutation=[1,0' -o "$T/never.npy"
stderr_is "nxsim: -a permutation: invalid JSON at line 1, column 5"
absent "$T/never.npy"
expect 2 "-a without =" run tiled_pf_transpose -a permutation
expect 2 "-a twice" run tiled_pf_transpose -a 'permutation=[1,0]' -a 'permutation=[0,1]'
expect 3 "not a permutation" run tiled_pf_transpose -a 'permutation=[0,0]' -o "$T/never.npy"
stderr_is "nxsim: operand 0 (in0): permutation [0,0] is not a permutation of the 2 dims"
absent "$T/never.npy"
expect 3 "permutation not reducible" run tiled_dve_transpose_10 -i "$T/d.npy" -a 'permutation=[1,0,2]' -o "$T/never.npy"
stderr_is "nxsim: operand 0 (in0): permutation [1,0,2] does not reduce to a swap of the last two dim groups (merged: shape [2,3,2], permutation [1,0,2])"
absent "$T/never.npy"
expect 3 "attribute of the wrong type" run tiled_pf_transpose -a 'permutation="10"'
stderr_is "nxsim: operand 0 (in0): attribute permutation: must be a list of ints"

# ---- usage and output errors -------------------------------------------------------------
expect 2 "run without a kernel" run
expect 2 "two -o for one result" run tiled_pf_transpose -o "$T/a.npy" -o "$T/b.npy"
absent "$T/a.npy"
expect 2 "--profile with --functional" run tiled_pf_transpose --functional --profile "$T/p.json"
expect 2 "unknown option" run tiled_pf_transpose --bogus
expect 3 "missing input file" run tiled_pf_transpose -i "$T/nope.npy"
expect 3 "unknown machine" run tiled_pf_transpose --machine trn9
expect 1 "unwritable output" run tiled_pf_transpose -o "$T/no/such/dir/y.npy"
absent "$T/no/such/dir/y.npy"
expect 0 "run --help" run --help
if grep -q '^Exit status' "$T/out"; then pass; else fail "run --help lacks the exit status"; fi

# ---- --threads / NXSIM_THREADS: the same report and result bytes for every count ----------
mkdir -p "$T/thr"
expect 0 "run --threads 1" run blockwise_mm -o "$T/thr/out.npy"
mv "$T/thr/out.npy" "$T/thr1.npy"
cp "$T/out" "$T/thr1.txt"
for n in 2 3; do
    expect 0 "run --threads $n" run blockwise_mm -o "$T/thr/out.npy" --threads "$n"
    same_file "$T/out" "$T/thr1.txt"
    same_file "$T/thr/out.npy" "$T/thr1.npy"
    rm -f "$T/thr/out.npy"
done
NXSIM_THREADS=2 expect 0 "run NXSIM_THREADS=2" run blockwise_mm -o "$T/thr/out.npy" --functional
same_file "$T/thr/out.npy" "$T/thr1.npy"
rm -f "$T/thr/out.npy"
expect 2 "run --threads 0" run blockwise_mm --threads 0
stderr_is "nxsim: run: --threads '0': must be a thread count in [1, 64]; try 'nxsim run --help'"
NXSIM_THREADS=many expect 3 "run NXSIM_THREADS=many" run blockwise_mm -o "$T/thr/out.npy"
stderr_is "nxsim: blockwise_mm: NXSIM_THREADS 'many': must be a thread count in [1, 64]"
absent "$T/thr/out.npy"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
