#!/usr/bin/env bash
# Hardening of the command (docs/parts/security.md), one section per guard:
# what an output path names (devices, FIFOs, links, standard streams), an
# output that is an input, waveforms of a failed run, strings echoed from op
# files, unknown attributes, the memory and fill limits and the read caps.
# Each case is a reproducer that misbehaved before its guard.
# Usage: test_harden.sh NXSIM TMPDIR
source "$(dirname "$0")/lib.sh" "$@"

# one_line: the error ($T/err) is exactly one line, starts with "nxsim: " (or
# is the registry's verbatim miss text), holds no control byte but its newline
one_line() {
    local what=$1
    if [ "$(wc -l <"$T/err")" -ne 1 ]; then fail "$what: $(wc -l <"$T/err") lines of error"; return; fi
    if LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <"$T/err"); then fail "$what: a control byte in the error"; return; fi
    pass
}
has() { # has FILE TEXT
    if grep -qF -- "$2" "$1"; then pass; else fail "expected '$2' in $1: $(head -c 300 "$1")"; fi
}

cp "$HERE/tiny.nxs" "$T/p.nxs"
expect 0 "asm tiny" asm "$T/p.nxs" -o "$T/want.nxb"

# ---- 1. outputs: written through what is not a regular file, links followed
mkfifo "$T/fifo"
timeout 20 cat "$T/fifo" >"$T/from_fifo" &
reader=$!
expect 0 "asm into a FIFO" asm "$T/p.nxs" -o "$T/fifo"
wait $reader
if [ -p "$T/fifo" ]; then pass; else fail "the FIFO was replaced by a regular file"; fi
same_file "$T/from_fifo" "$T/want.nxb"

mkdir -p "$T/elsewhere"
echo old >"$T/elsewhere/target.nxb"
chmod 640 "$T/elsewhere/target.nxb"
ln -s elsewhere/target.nxb "$T/link.nxb"
expect 0 "asm through a symlink" asm "$T/p.nxs" -o "$T/link.nxb"
if [ -L "$T/link.nxb" ]; then pass; else fail "the symlink was replaced"; fi
same_file "$T/elsewhere/target.nxb" "$T/want.nxb"
if [ "$(stat -c %a "$T/elsewhere/target.nxb")" = 640 ]; then pass; else fail "mode of the replaced file not kept"; fi
if [ -z "$(find "$T/elsewhere" "$T" -maxdepth 1 -name '*.tmp.*')" ]; then pass; else fail "a temporary file was left"; fi
ln -s dangling.nxb "$T/dangling_link.nxb"
expect 0 "asm through a dangling symlink" asm "$T/p.nxs" -o "$T/dangling_link.nxb"
same_file "$T/dangling.nxb" "$T/want.nxb"
ln -s loop_b "$T/loop_a"; ln -s loop_a "$T/loop_b"
expect 1 "a link loop" asm "$T/p.nxs" -o "$T/loop_a"
has "$T/err" "too many levels of symbolic links"
mkdir "$T/adir"
expect 1 "a directory" asm "$T/p.nxs" -o "$T/adir"
has "$T/err" "is a directory"

# /dev/stdout is this process's standard output: written through, in order
"$NXSIM" disasm "$T/want.nxb" >"$T/dis_plain" 2>"$T/err"
"$NXSIM" disasm "$T/want.nxb" -o /dev/stdout >"$T/dis_stdout" 2>"$T/err"
same_file "$T/dis_plain" "$T/dis_stdout"
{ echo first; "$NXSIM" disasm "$T/want.nxb" -o /dev/stdout; } >>"$T/dis_append" 2>"$T/err"
if [ "$(head -1 "$T/dis_append")" = first ] && tail -n +2 "$T/dis_append" | cmp -s - "$T/dis_plain"; then pass
else fail "-o /dev/stdout did not append to the redirected output"; fi

# device nodes of our own (as root), so that the bug, if back, replaces
# nothing of the system's: a null device and a full one
if [ "$(id -u)" -eq 0 ] && mknod "$T/null" c 1 3 2>/dev/null && mknod "$T/full" c 1 7 2>/dev/null; then
    expect 0 "asm into a null device" asm "$T/p.nxs" -o "$T/null"
    if [ -c "$T/null" ]; then pass; else fail "the null device was replaced by a regular file"; fi
    expect 1 "asm into a full device" asm "$T/p.nxs" -o "$T/full"
    has "$T/err" "No space left on device"
    if [ -c "$T/full" ]; then pass; else fail "the full device was replaced by a regular file"; fi
    expect 0 "exec --out into a null device" exec "$T/want.nxb" --functional --out "x=$T/null"
    if [ -c "$T/null" ]; then pass; else fail "exec replaced the null device"; fi
    expect 0 "run -o into a null device" run tiled_pf_transpose --functional -o "$T/null"
    if [ -c "$T/null" ]; then pass; else fail "run replaced the null device"; fi
fi

# a later output that cannot be written leaves the earlier ones untouched
echo keep >"$T/first.npy"
expect 2 "(--out twice is a usage error)" exec "$T/want.nxb" --out "x=$T/first.npy" --out "x=$T/x2.npy"
printf '.tensor x input fp32 [2,4]\n.tensor y output fp32 [2,4]\n.engine sp\n    dma_copy dst=hbm:fp32[2/4]@y{1:4} src=hbm:fp32[2/4]@x{1:4} queue=0\n' >"$T/copy.nxs"
expect 1 "one output into a missing directory" exec "$T/copy.nxs" --functional --out "x=$T/first.npy" --out "y=$T/nodir/y.npy"
if [ "$(cat "$T/first.npy")" = keep ]; then pass; else fail "the first output was written (or removed) although the run failed"; fi

# ---- 2. an output that is an input: refused by device and inode, exit 2
cp "$T/p.nxs" "$T/orig.nxs"
expect 2 "asm -o the input" asm "$T/p.nxs" -o "$T/p.nxs"
expect 2 "asm -o ./the input" asm "$T/p.nxs" -o "$T/./p.nxs"
ln -s p.nxs "$T/alias.nxs"; ln "$T/p.nxs" "$T/hard.nxs"
expect 2 "asm -o a symlink to the input" asm "$T/p.nxs" -o "$T/alias.nxs"
expect 2 "asm -o a hard link to the input" asm "$T/p.nxs" -o "$T/hard.nxs"
has "$T/err" "refusing to overwrite an input"
same_file "$T/p.nxs" "$T/orig.nxs"
cp "$T/want.nxb" "$T/prog.nxb"
expect 2 "exec --out the program" exec "$T/prog.nxb" --out "x=$T/prog.nxb"
same_file "$T/prog.nxb" "$T/want.nxb"
expect 2 "exec two --out, one file" exec "$T/copy.nxs" --out "x=$T/a.npy" --out "y=$T/./a.npy"
has "$T/err" "name the same file"
expect 0 "exec writes y" exec "$T/copy.nxs" --functional --out "y=$T/y.npy"
expect 2 "exec --out the --in file" exec "$T/copy.nxs" --in "x=$T/y.npy" --out "y=$T/./y.npy"
expect 2 "disasm -o the input" disasm "$T/prog.nxb" -o "$T/prog.nxb"
same_file "$T/prog.nxb" "$T/want.nxb"
expect 2 "run -o and --profile, one file" run tiled_pf_transpose -o "$T/r.json" --profile "$T/./r.json"
expect 0 "run writes an operand" run tiled_pf_transpose --functional -o "$T/x.npy"
cp "$T/x.npy" "$T/x_orig.npy"
printf '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "file": "x.npy"}], "results": [{"name": "y", "file": "./x.npy"}]}' >"$T/same.json"
expect 2 "--op result file = operand file" run --op "$T/same.json"
same_file "$T/x.npy" "$T/x_orig.npy"
printf '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "file": "x.npy"}], "results": [{"name": "y", "file": "p.json"}]}' >"$T/prof.json"
expect 2 "--op result file = --profile" run --op "$T/prof.json" --profile "$T/./p.json"
expect 2 "-o the -i file" run tiled_pf_transpose -i "$T/x.npy" -o "$T/x.npy"
same_file "$T/x.npy" "$T/x_orig.npy"

# ---- op-file result paths stay in the op file's tree and replace only earlier results
mkdir -p "$T/opdir/sub" "$T/outside"
cp "$T/x_orig.npy" "$T/opdir/sub/x.npy"
echo notes >"$T/opdir/sub/notes.txt"
ln -s ../../outside "$T/opdir/sub/away"
cp "$T/x_orig.npy" "$T/outside/y.npy"
ln -s ../../outside/y.npy "$T/opdir/sub/away.npy"
ln -s nothing.npy "$T/opdir/sub/dangling.npy"
result_op() { # result_op FILE: an op in opdir/sub whose result goes to FILE
    printf '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "file": "x.npy"}], "results": [{"name": "y", "file": "%s"}]}' "$1" >"$T/opdir/sub/op.json"
}
for bad in "../../x.npy:climbs out with '..'" "/tmp/nxsim_harden_y.npy:is an absolute path" \
    "away/y.npy:leads out of the op file's directory through a link" \
    "away.npy:is a link that leads out" "notes.txt:exists and is not a .npy file" \
    "sub2/../y.npy:climbs out" "dangling.npy:is a link to nothing" "nodir/y.npy:: its directory: No such file or directory"; do
    result_op "${bad%%:*}"
    expect 3 "op result ${bad%%:*}" run --op "$T/opdir/sub/op.json" --functional
    why=${bad#*:}; [ "${why:0:1}" = : ] || why=" $why" # "::" : the reason follows a colon
    has "$T/err" "op.json: result 0 (y): file '${bad%%:*}'$why"
    one_line "op result ${bad%%:*}"
done
same_file "$T/outside/y.npy" "$T/x_orig.npy"
if [ "$(cat "$T/opdir/sub/notes.txt")" = notes ] && [ "$(ls "$T/outside")" = y.npy ] && [ ! -e /tmp/nxsim_harden_y.npy ]; then pass
else fail "an op file's refused result touched a file"; fi
result_op "deeper/y.npy"
mkdir -p "$T/opdir/sub/deeper"
expect 0 "op result in a subdirectory" run --op "$T/opdir/sub/op.json" --functional
expect 0 "op result replaces its earlier result" run --op "$T/opdir/sub/op.json" --functional
(cd "$T/opdir/sub" && "$NXSIM" run --op op.json --functional >/dev/null 2>"$T/err") && pass || fail "op file in the working directory: $(cat "$T/err")"

# ---- 1+2 for the profile files: --timeline and exec's --profile are outputs
# of the run like -o/--out: refused when they are an input or another
# output, written through links and devices, staged with the results
expect 2 "run --timeline = -o" run tiled_pf_transpose -o "$T/t.svg" --timeline "$T/./t.svg"
has "$T/err" "name the same file"
ln -s tp.json "$T/tp_link.json"
expect 2 "run --timeline = --profile (by a link)" run tiled_pf_transpose --profile "$T/tp.json" --timeline "$T/tp_link.json"
printf '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "shape": [4, 4], "dtype": "fp32"}]}' >"$T/tl_op.json"
cp "$T/tl_op.json" "$T/tl_op_orig.json"
expect 2 "run --timeline = the --op file" run --op "$T/tl_op.json" --timeline "$T/./tl_op.json"
has "$T/err" "refusing to overwrite an input"
same_file "$T/tl_op.json" "$T/tl_op_orig.json"
expect 2 "run --timeline = an -i file" run tiled_pf_transpose -i "$T/x.npy" --timeline "$T/x.npy"
same_file "$T/x.npy" "$T/x_orig.npy"
expect 2 "exec --timeline = the program" exec "$T/prog.nxb" --timeline "$T/prog.nxb"
same_file "$T/prog.nxb" "$T/want.nxb"
expect 2 "exec --profile = the program (hard link)" exec "$T/p.nxs" --profile "$T/hard.nxs"
same_file "$T/p.nxs" "$T/orig.nxs"
expect 2 "exec --profile = an --in file" exec "$T/copy.nxs" --in "x=$T/y.npy" --profile "$T/y.npy"
expect 2 "exec --profile = --out" exec "$T/copy.nxs" --out "y=$T/py.npy" --profile "$T/./py.npy"
expect 2 "exec --timeline = --profile" exec "$T/copy.nxs" --profile "$T/pt" --timeline "$T/./pt"
expect 2 "exec --timeline --functional" exec "$T/copy.nxs" --functional --timeline "$T/f.svg"
# through a link and a FIFO
mkdir -p "$T/svgs"
echo old >"$T/svgs/target.svg"
ln -s svgs/target.svg "$T/tl_link.svg"
expect 0 "exec --timeline through a symlink" exec "$T/copy.nxs" --timeline "$T/tl_link.svg"
if [ -L "$T/tl_link.svg" ] && grep -q '</svg>' "$T/svgs/target.svg"; then pass; else fail "--timeline through a link"; fi
mkfifo "$T/tl_fifo"
timeout 20 cat "$T/tl_fifo" >"$T/from_tl_fifo" &
reader=$!
expect 0 "exec --profile into a FIFO" exec "$T/copy.nxs" --profile "$T/tl_fifo"
wait $reader
if [ -p "$T/tl_fifo" ] && grep -q traceEvents "$T/from_tl_fifo"; then pass; else fail "exec --profile into a FIFO"; fi
# a failed run writes neither, and keeps old ones
echo "old profile" >"$T/old.json"; echo "old timeline" >"$T/old.svg"
expect 1 "deadlock with --profile and --timeline" exec "$HERE/deadlock.nxs" --profile "$T/old.json" --timeline "$T/old.svg"
if [ "$(cat "$T/old.json")" = "old profile" ] && [ "$(cat "$T/old.svg")" = "old timeline" ]; then pass
else fail "a failed run touched --profile or --timeline"; fi
expect 1 "deadlock, new --timeline" exec "$HERE/deadlock.nxs" --timeline "$T/new.svg"
if [ -z "$(find "$T" -maxdepth 1 -name 'new.svg*')" ]; then pass; else fail "a failed run left a timeline"; fi
# an unwritable --timeline leaves the results and the profile as they were
echo keep >"$T/kept.npy"; echo keep >"$T/kept.json"
expect 1 "run --timeline into a missing directory" run tiled_pf_transpose -o "$T/kept.npy" --profile "$T/kept.json" \
    --timeline "$T/nodir/t.svg"
one_line "unwritable --timeline"
has "$T/err" "timeline "
if [ "$(cat "$T/kept.npy")" = keep ] && [ "$(cat "$T/kept.json")" = keep ]; then pass
else fail "a failed --timeline let the results or the profile through"; fi
expect 1 "exec --timeline into a missing directory" exec "$T/copy.nxs" --out "y=$T/kept.npy" --profile "$T/kept.json" \
    --timeline "$T/nodir/t.svg"
if [ "$(cat "$T/kept.npy")" = keep ] && [ "$(cat "$T/kept.json")" = keep ]; then pass
else fail "exec: a failed --timeline let the results or the profile through"; fi
if [ "$(id -u)" -eq 0 ] && [ -c "$T/null" ] && [ -c "$T/full" ]; then
    expect 0 "--timeline into a null device" run tiled_pf_transpose --timeline "$T/null" --profile "$T/null2.json"
    if [ -c "$T/null" ]; then pass; else fail "--timeline replaced the null device"; fi
    expect 1 "exec --profile into a full device" exec "$T/copy.nxs" --out "y=$T/kept.npy" --profile "$T/full"
    has "$T/err" "No space left on device"
    if [ -c "$T/full" ] && [ "$(cat "$T/kept.npy")" = keep ]; then pass
    else fail "exec --profile into a full device: device replaced or --out written"; fi
fi

# ---- 3. index patterns that would overflow int64 do not validate
printf '.engine pool\n    iota dst=sbuf:int32[0:1]@0{1:2} pattern=pat:int32[1](-9223372036854775808,0){-1:2}\n' >"$T/overflow.nxs"
expect 3 "pattern past int64" asm "$T/overflow.nxs" -o "$T/overflow.nxb"
has "$T/err" "pattern values [-9223372036854775809, -9223372036854775808] leave the signed 64-bit range"
expect 3 "exec of it" exec "$T/overflow.nxs" --functional
# and a byte span past 64 bits is printed whole
printf '.tensor x input fp32 [4]\n.engine sp\n    dma_copy dst=sbuf:fp32[0:1]@0{1:4} src=hbm:fp32[1/0]@4294967296{-2147483648:2147483647} queue=0\n' >"$T/span.nxs"
expect 3 "span past 64 bits" asm "$T/span.nxs" -o "$T/span.nxb"
has "$T/err" "HBM bytes [-18446744052234715136, 4294967300)"

# ---- 5. a failed run leaves no waveform, and keeps an old one
echo "old waveform" >"$T/w.vcd"
expect 1 "deadlock with --vcd" exec "$HERE/deadlock.nxs" --pe rtl --vcd "$T/w.vcd"
if [ "$(cat "$T/w.vcd")" = "old waveform" ]; then pass; else fail "the failed run touched the --vcd file"; fi
expect 1 "deadlock with --vcd (new)" exec "$HERE/deadlock.nxs" --pe rtl --vcd "$T/new.vcd"
if [ ! -e "$T/new.vcd" ] && [ -z "$(find "$T" -maxdepth 1 -name 'new.vcd*')" ]; then pass; else fail "the failed run left a waveform"; fi
printf '.semaphores 1\n.engine pe\n    load_stationary src=sbuf:fp32[0:2]@0{1:2}\n    multiply_moving dst=psum:fp32[0:2]@0{1:2} moving=sbuf:fp32[0:2]@64{1:2} inc=sem0\n.engine dve\n    tensor_copy dst=sbuf:fp32[0:2]@128{1:2} in=psum:fp32[0:2]@0{1:2} wait=sem0>=1\n' >"$T/mm.nxs"
expect 0 "a matmul with --vcd" exec "$T/mm.nxs" --pe rtl --vcd "$T/w.vcd"
if head -c 200 "$T/w.vcd" | grep -q '\$'; then pass; else fail "no waveform written by a good run"; fi

# ---- 6. strings from op files are echoed escaped, NUL refused
opfile() { printf '%s' "$1" >"$T/op.json"; }
opfile '{"func_name": "tiled_pf\ntranspose", "operands": [{"name": "x", "shape": [4, 4], "dtype": "fp32"}]}'
expect 3 "newline in func_name" run --op "$T/op.json"
one_line "newline in func_name"
has "$T/err" "'tiled_pf\\ntranspose' is not registered"
opfile '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x\u001b[31m", "shape": [4, 4], "dtype": "fp32"}]}'
expect 3 "ESC in a tensor name" run --op "$T/op.json"
one_line "ESC in a tensor name"
has "$T/err" 'x\x1b[31m'
opfile '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "shape": [4, 4], "dtype": "fp32", "k\ney": 1}]}'
expect 3 "newline in a key" run --op "$T/op.json"
one_line "newline in a key"
opfile '{"func_name": "tiled_pf_transpose\u0000junk", "operands": [{"name": "x", "shape": [4, 4], "dtype": "fp32"}]}'
expect 3 "NUL in func_name" run --op "$T/op.json"
one_line "NUL in func_name"
has "$T/err" '\u0000 (NUL)'
opfile '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "file": "in\nput.npy"}]}'
expect 3 "newline in a file name" run --op "$T/op.json"
one_line "newline in a file name"

# ---- 7. unknown attributes are errors naming the ones the leaf reads
expect 3 "-a stide" run Conv2d_pbp_0f1b_0i1o_01fb_experimental_1 -a 'stide=[2,2]'
has "$T/err" "unknown attribute 'stide' (did you mean 'stride'?)"
has "$T/err" "reads: stride, padding"
expect 3 "-a on a transpose" run tiled_pf_transpose -a 'k=1'
has "$T/err" "tiled_pf_transpose: unknown attribute 'k'; tiled_pf_transpose reads: permutation"
opfile '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "shape": [4, 4], "dtype": "fp32"}], "attrs": {"permutaton": [1, 0]}}'
expect 3 "attrs typo in an op file" run --op "$T/op.json"
has "$T/err" "op.json: tiled_pf_transpose: unknown attribute 'permutaton' (did you mean 'permutation'?)"
opfile '{"func_name": "tiled_dve_transpose_10", "operands": [{"name": "x", "shape": [4, 4, 4], "dtype": "fp32"}], "attrs": {"permutation": [1, 0, 2]}}'
expect 3 "a leaf's refusal names the op file" run --op "$T/op.json"
has "$T/err" "op.json: "
# negative axes count from the end, as numpy's transpose takes them
expect 0 "permutation [-1,0]" run tiled_pf_transpose --functional -a 'permutation=[-1,0]' -o "$T/neg.npy"
expect 0 "permutation [1,0]" run tiled_pf_transpose --functional -a 'permutation=[1,0]' -o "$T/pos.npy"
same_file "$T/neg.npy" "$T/pos.npy"
expect 3 "permutation [-3,0]" run tiled_pf_transpose -a 'permutation=[-3,0]'
expect 2 "-a k=1e999" run tiled_pf_transpose -a 'permutation=1e999'
has "$T/err" "outside the double range"
expect 0 "run --json" run tiled_pf_transpose --functional --json
if grep -q -w -E 'Infinity|NaN' "$T/out"; then fail "--json printed a bare Infinity or NaN"; else pass; fi
if command -v python3 >/dev/null; then
    if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" 2>/dev/null; then pass; else fail "--json is not JSON"; fi
fi

# ---- 8. resources: checked before anything is allocated or filled
printf '.tensor x input fp32 [1073741824]\n.engine sp\n    end\n' >"$T/big.nxs"
expect 3 "a 4 GiB pseudo-random input" exec "$T/big.nxs"
has "$T/err" "input x not given with --in would get 4.0 GiB of pseudo-random values, more than the fill limit of 1.0 GiB"
one_line "fill limit"
expect 3 "over --max-memory" exec "$T/big.nxs" --max-fill 8G --max-memory 64M
has "$T/err" "the run needs about 4.0 GiB (HBM 4.0 GiB, the largest tensor 'x' 4.0 GiB"
has "$T/err" "more than the memory limit of 64.0 MiB"
printf '.tensor x input fp32 [5368709120]\n.engine sp\n    end\n' >"$T/big20.nxs"
expect 3 "20 GiB on trn2 past the default limit" exec "$T/big20.nxs" --max-fill 32G --max-memory 1G
has "$T/err" "the largest tensor 'x' 20.0 GiB"
opfile '{"func_name": "tiled_pf_transpose", "operands": [{"name": "x", "shape": [1000, 1000000], "dtype": "fp32"}]}'
expect 3 "an op file of 10^9 elements" run --op "$T/op.json"
has "$T/err" "operand x would get 3.7 GiB of pseudo-random values"
expect 3 "over --max-memory (run)" run --op "$T/op.json" --max-fill 8G --max-memory 1G
has "$T/err" "more than the memory limit of 1.0 GiB"
# the trace counts while it runs: 1 partition and a 1x1 PE make nki_matmul_tiled
# trace millions of instructions; the limit stops it at once, not after
printf '{"base": "trn2", "name": "p1", "geometry": {"partitions": 1, "pe_rows": 1, "pe_cols": 1, "dve_transpose_max": 1, "pool_partitions_per_core": 1}}\n' >"$T/p1.json"
expect 3 "a trace past --max-memory" run nki_matmul_tiled --functional --machine "$T/p1.json" --max-memory 12M
has "$T/err" "nxsim: nki_matmul_tiled: the program being traced holds "
has "$T/err" "more than the memory limit of 12.0 MiB; allow more with --max-memory"
one_line "trace limit"
expect 2 "--max-memory garbage" exec "$T/big.nxs" --max-memory 12X
expect 2 "--max-memory 0" exec "$T/big.nxs" --max-memory 0
expect 2 "--max-fill negative" exec "$T/big.nxs" --max-fill -1
# every file read is capped: endless streams stop at the cap
expect 3 "--in from /dev/zero" exec "$T/copy.nxs" --functional --in x=/dev/zero
has "$T/err" "larger than"
expect 3 "--op from /dev/zero" run --op /dev/zero
has "$T/err" "larger than 16.0 MiB (the limit for an op file)"
expect 3 "-i from /dev/zero" run tiled_pf_transpose -i /dev/zero --max-memory 64M
has "$T/err" "larger than 32.0 MiB"

# string attributes of the composites are echoed escaped (topk's method)
expect 3 "topk method with ESC" run topk -a 'method="SCAN\u001b]0;x\u0007"' --functional
has "$T/err" "unknown top-k method 'SCAN\x1b]0;x\x07'"
one_line "topk method"

# NumPy's default float64: refused with the NumPy call that converts it
LC_ALL=C sed "s/'<f4'/'<f8'/" "$T/x_orig.npy" >"$T/f64.npy" # the dtype is read before the data
expect 3 "a float64 .npy" run tiled_pf_transpose -i "$T/f64.npy" --functional
has "$T/err" "f64.npy: dtype float64 ('<f8') is not an nxsim type; convert it to fp32 with NumPy: np.save('"
has "$T/err" "f64.npy').astype(np.float32))"
one_line "float64"

echo "test_harden: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
