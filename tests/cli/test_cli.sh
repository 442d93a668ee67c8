#!/usr/bin/env bash
# Tests of the nxsim command line: exit codes, asm/disasm round trip, exec on
# .npy files checked against bytes written here by hand, malformed inputs
# (exit 3, one-line message, no output file), and a corruption sweep that
# flips every byte of a small .nxb and checks nxsim never dies of a signal.
#
# Usage: test_cli.sh NXSIM TMPDIR   (TMPDIR is wiped and reused)
# Prints "N passed, M failed"; exits non-zero if anything failed.
# Needs only bash, cmp, od and coreutils (no Python, no numpy).
set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$@"

# The last run printed exactly one line on stderr, "nxsim: ..." containing $1.
one_line_error() {
    local lines
    lines=$(wc -l <"$T/err")
    if [ "$lines" -eq 1 ] && grep -q '^nxsim: ' "$T/err" && grep -qF -- "$1" "$T/err"; then
        pass
    else
        fail "expected one stderr line 'nxsim: ...$1...'"
    fi
}



# x = [[1, 2, -1.5, 0.25], [3, -4, 0.5, 100]] and y = 2x, as fp32 bytes.
X_DATA='\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\xc0\xbf\x00\x00\x80\x3e\x00\x00\x40\x40\x00\x00\x80\xc0\x00\x00\x00\x3f\x00\x00\xc8\x42'
Y_DATA='\x00\x00\x00\x40\x00\x00\x80\x40\x00\x00\x40\xc0\x00\x00\x00\x3f\x00\x00\xc0\x40\x00\x00\x00\xc1\x00\x00\x80\x3f\x00\x00\x48\x43'
make_npy "$T/x.npy" "'<f4'" "(2, 4)" 2 "$X_DATA"
make_npy "$T/y_expected.npy" "'<f4'" "(2, 4)" 2 "$Y_DATA"
PROG=$HERE/double.nxs

# ---- global options and usage errors (exit 0 / 2) -------------------------
expect 0 "--help" --help
if grep -q '^Exit status' "$T/out" && grep -q 'usage error' "$T/out"; then pass; else fail "--help lacks the exit status table"; fi
expect 0 "--version" --version
if grep -Eq '^nxsim [0-9]+\.[0-9]+\.[0-9]+$' "$T/out"; then pass; else fail "--version output: $(cat "$T/out")"; fi
expect 0 "help exec" help exec
if grep -q -- '--seed' "$T/out"; then pass; else fail "help exec lacks --seed"; fi
expect 0 "exec --help" exec --help
expect 0 "asm --help" asm --help
expect 0 "disasm -h" disasm -h
expect 0 "help" help
expect 2 "no command"
one_line_error "no command"
expect 2 "unknown global option" --bogus
one_line_error "unknown option '--bogus'"
expect 2 "unknown command" frobnicate
one_line_error "unknown command 'frobnicate'"
expect 2 "help for an unknown command" help frobnicate
expect 2 "asm unknown option" asm --frob "$PROG"
one_line_error "unknown option '--frob'"
expect 2 "asm without input" asm -o "$T/a.nxb"
expect 2 "asm without -o" asm "$PROG"
expect 2 "asm -o without argument" asm "$PROG" -o
one_line_error "needs an argument"
expect 2 "disasm two inputs" disasm a.nxb b.nxb
expect 2 "exec without program" exec
expect 2 "exec bad seed" exec --seed 12x "$PROG"
one_line_error "--seed"
expect 2 "exec --in without =" exec --in x "$PROG"
expect 2 "exec --in with empty file" exec --in x= "$PROG"
expect 2 "exec duplicate --in" exec --in x="$T/x.npy" --in x="$T/x.npy" "$PROG"
expect 2 "exec two --out to one file" exec --out x="$T/o.npy" --out y="$T/o.npy" "$PROG"
absent "$T/o.npy"

# ---- asm / disasm round trip ------------------------------------------------
expect 0 "asm double.nxs" asm "$PROG" -o "$T/double.nxb"
if [ "$(head -c 4 "$T/double.nxb")" = "NXSB" ]; then pass; else fail "double.nxb lacks the NXSB magic"; fi
expect 0 "disasm to stdout" disasm "$T/double.nxb"
cp "$T/out" "$T/double2.nxs"
expect 0 "disasm -o" disasm "$T/double.nxb" -o "$T/double3.nxs"
same_file "$T/double2.nxs" "$T/double3.nxs"
expect 0 "asm the disassembly" asm "$T/double2.nxs" -o "$T/double2.nxb"
same_file "$T/double.nxb" "$T/double2.nxb"
expect 0 "asm --machine trn1" asm --machine trn1 "$PROG" -o "$T/double_trn1.nxb"

# ---- exec: values ------------------------------------------------------------
for prog in "$T/double.nxb" "$PROG"; do
    rm -f "$T/y.npy"
    expect 0 "exec $prog --in --out" exec "$prog" --in x="$T/x.npy" --out y="$T/y.npy"
    same_file "$T/y.npy" "$T/y_expected.npy"
    if [ ! -s "$T/err" ] && [ ! -s "$T/out" ]; then pass; else fail "exec with all tensors bound printed something"; fi
done
for n in 2 4; do
    rm -f "$T/y.npy"
    expect 0 "exec --threads $n" exec "$T/double.nxb" --in x="$T/x.npy" --out y="$T/y.npy" --threads "$n"
    same_file "$T/y.npy" "$T/y_expected.npy"
done
expect 2 "exec --threads x" exec "$T/double.nxb" --threads x
one_line_error "--threads"
expect 0 "exec summary" exec "$T/double.nxb" --in x="$T/x.npy" --functional
if [ "$(cat "$T/out")" = "y fp32 [2,4] checksum=202.5 min=-8 max=200 first=[2, 4, -3, 0.5, 6, -8, 1, 200]" ]; then
    pass
else
    fail "exec summary: $(cat "$T/out")"
fi
expect 0 "exec reads an input back" exec "$T/double.nxb" -i x="$T/x.npy" -o x="$T/x_back.npy" -o y="$T/y2.npy"
same_file "$T/x_back.npy" "$T/x.npy"
same_file "$T/y2.npy" "$T/y_expected.npy"

# pseudo-random inputs: a note on stderr, deterministic per seed
expect 0 "exec random inputs" exec "$T/double.nxb" --seed 7
one_line_error "input x not given with --in"
cp "$T/out" "$T/seed7a"
expect 0 "exec random inputs again" exec "$T/double.nxb" --seed 7
same_file "$T/out" "$T/seed7a"
expect 0 "exec other seed" exec "$T/double.nxb" --seed 8
if cmp -s "$T/out" "$T/seed7a"; then fail "seeds 7 and 8 gave the same values"; else pass; fi
# --seed is decimal or 0x hex, never octal: 010, 10 and 0xa are one seed
expect 0 "exec --seed 10" exec "$T/double.nxb" --seed 10
cp "$T/out" "$T/seed10"
for s in 010 0xa 0XA; do
    expect 0 "exec --seed $s" exec "$T/double.nxb" --seed "$s"
    same_file "$T/out" "$T/seed10"
done
expect 0 "exec --seed 8 (octal 010)" exec "$T/double.nxb" --seed 8
if cmp -s "$T/out" "$T/seed10"; then fail "--seed 010 read as octal"; else pass; fi
for s in 0x -1 +1 " 1" 18446744073709551616; do
    expect 2 "exec --seed '$s'" exec "$T/double.nxb" --seed "$s"
    one_line_error "--seed expects a non-negative integer"
done

# ---- exec --race-check ------------------------------------------------------------
RACY=$HERE/racy.nxs
expect 0 "exec racy.nxs without --race-check" exec "$RACY" --in x="$T/x.npy" --out y="$T/racy_y.npy"
rm -f "$T/racy_y.npy"
expect 1 "exec racy.nxs --race-check" exec "$RACY" --race-check --in x="$T/x.npy" --out y="$T/racy_y.npy"
if [ "$(cat "$T/err")" = "nxsim: $RACY: race: core 0 sp #0 (dma_copy) on queue 0 writes hbm@[64, 96) and core 0 sp #1 (dma_copy) on queue 1 writes hbm@[64, 96) with no semaphore ordering them" ]; then
    pass
else
    fail "exec --race-check report: $(cat "$T/err")"
fi
absent "$T/racy_y.npy"
expect 0 "exec double.nxs --race-check" exec "$PROG" --race-check --in x="$T/x.npy" --out y="$T/y_rc.npy"
same_file "$T/y_rc.npy" "$T/y_expected.npy"
one_line_error "note: race check: no race in 5 log records"
expect 2 "exec --race-check --functional" exec "$PROG" --race-check --functional
one_line_error "--race-check needs the SystemC model"

# ---- exec: bad .npy inputs (exit 3, one line, no output) -----------------------
head -c 136 "$T/x.npy" >"$T/bad_truncated.npy" # the 128-byte header + 8 of 32 data bytes
make_npy "$T/bad_magic.npy" "'<f4'" "(2, 4)" 2 "$X_DATA"
printf 'X' | dd of="$T/bad_magic.npy" bs=1 seek=0 conv=notrunc status=none
make_npy "$T/bad_descr.npy" "'<c8'" "(2, 4)" 2 "$X_DATA$X_DATA"
make_npy "$T/bad_bool.npy" "'|b1'" "(2, 4)" 2 '\x01\x01\x01\x01\x01\x01\x01\x01'
make_npy "$T/bad_fortran.npy" "'<f4'" "(2, 4)" 2 "$X_DATA" True
make_npy "$T/bad_bigendian.npy" "'>f4'" "(2, 4)" 2 "$X_DATA"
make_npy "$T/bad_shape.npy" "'<f4'" "(4, 2)" 4 "$X_DATA"
make_npy "$T/bad_dtype.npy" "'<i4'" "(2, 4)" 2 "$X_DATA"
check_bad_input() { # FILE MESSAGE
    rm -f "$T/y.npy"
    expect 3 "exec --in $(basename "$1")" exec "$T/double.nxb" --in x="$1" --out y="$T/y.npy"
    one_line_error "$2"
    absent "$T/y.npy"
}
check_bad_input "$T/bad_truncated.npy" "bad_truncated.npy: truncated: header says 32 data bytes, file has 8"
check_bad_input "$T/bad_magic.npy" "bad_magic.npy: not a .npy file (bad magic)"
check_bad_input "$T/bad_descr.npy" "bad_descr.npy: unsupported dtype '<c8'"
check_bad_input "$T/bad_bool.npy" "bad_bool.npy: unsupported dtype '|b1'"
check_bad_input "$T/bad_fortran.npy" "bad_fortran.npy: fortran_order True is not supported"
check_bad_input "$T/bad_bigendian.npy" "big-endian dtype '>f4'"
check_bad_input "$T/bad_shape.npy" "tensor 'x' is fp32 [2,4], the file holds fp32 [4,2]"
check_bad_input "$T/bad_dtype.npy" "tensor 'x' is fp32 [2,4], the file holds int32 [2,4]"
check_bad_input "$T/missing.npy" "missing.npy: cannot open"

# ---- exec: tensor names ----------------------------------------------------------
rm -f "$T/y.npy" "$T/z.npy"
expect 3 "exec --in unknown tensor" exec "$T/double.nxb" --in z="$T/x.npy" --out y="$T/y.npy"
one_line_error "no tensor 'z'"
absent "$T/y.npy"
expect 3 "exec --out unknown tensor" exec "$T/double.nxb" --in x="$T/x.npy" --out y="$T/y.npy" --out z="$T/z.npy"
one_line_error "no tensor 'z'"
absent "$T/y.npy"
absent "$T/z.npy"
expect 3 "exec --in for an output tensor" exec "$T/double.nxb" --in y="$T/x.npy"
one_line_error "tensor 'y' has role output, not input"

# ---- bad programs and machines ---------------------------------------------------------
head -c 200 "$T/double.nxb" >"$T/truncated.nxb"
expect 3 "disasm truncated .nxb" disasm "$T/truncated.nxb"
one_line_error "truncated.nxb: "
expect 3 "exec truncated .nxb" exec "$T/truncated.nxb" --out y="$T/y.npy"
one_line_error "truncated.nxb: "
absent "$T/y.npy"
expect 3 "disasm of a text file" disasm "$PROG"
expect 3 "asm of a binary" asm "$T/double.nxb" -o "$T/a.nxb"
one_line_error "is a .nxb binary program"
absent "$T/a.nxb"
expect 3 "asm missing file" asm "$T/nope.nxs" -o "$T/a.nxb"
printf '.machine trn2\n.engine dve\n    tensor_tensr dst=sbuf:fp32[0:1]@0{}\n' >"$T/typo.nxs"
expect 3 "asm syntax error" asm "$T/typo.nxs" -o "$T/a.nxb"
one_line_error "typo.nxs:3:"
absent "$T/a.nxb"
sed 's/^\.machine trn2/.machine nosuch/' "$PROG" >"$T/nosuch.nxs"
expect 3 "asm unknown machine" asm "$T/nosuch.nxs" -o "$T/a.nxb"
one_line_error "unknown machine 'nosuch'"
absent "$T/a.nxb"
expect 0 "asm unknown machine with --machine" asm "$T/nosuch.nxs" --machine trn2 -o "$T/a.nxb"
expect 3 "exec --machine missing file" exec "$T/double.nxb" --machine "$T/none.json"
one_line_error "none.json"
sed 's/^\.cores 1/.cores 2/; s/^\.machine trn2/.machine trn2/' "$T/double2.nxs" >"$T/twocore.nxs"
printf '{"base": "trn2", "name": "one", "geometry": {"cores": 1}}\n' >"$T/one.json"
expect 3 "exec on a machine the program does not fit" exec "$T/twocore.nxs" --machine "$T/one.json"
one_line_error "twocore.nxs: "

# ---- runtime failures (exit 1) and output write failures ------------------------------
rm -f "$T/y.npy"
expect 1 "exec deadlock" exec "$HERE/deadlock.nxs" --in x="$T/x.npy" --out y="$T/y.npy"
one_line_error "deadlock"
absent "$T/y.npy"
expect 1 "exec unwritable second output" exec "$T/double.nxb" --in x="$T/x.npy" \
    --out x="$T/x_first.npy" --out y="$T/no/such/dir/y.npy"
one_line_error "no/such/dir/y.npy"
absent "$T/x_first.npy"
if ls "$T" | grep -q '\.tmp\.'; then fail "temporary files left in $T"; else pass; fi

# ---- corruption sweep: flip every byte of a small .nxb ----------------------------------
# Every result must be a clean exit (0, 1 or 3), never a signal (>= 128).
# The flipped file is written with bash's builtin printf (no fork per byte).
# disasm runs on every flipped file. exec runs on every file disasm accepts
# (those get past the decoder into validation and execution); on files the
# decoder rejects, exec runs the same decoder, so it runs on every 8th of
# them only, to keep the sweep short, and must then exit 3 as disasm did.
# In sanitizer builds the sweep skips the leak check at exit (it doubles each
# run's cost); every other run in this script keeps it.
SWEEP_ASAN="$ASAN_OPTIONS:detect_leaks=0"
expect 0 "asm tiny.nxs" asm "$HERE/tiny.nxs" -o "$T/tiny.nxb"
hex=$(od -An -v -tx1 "$T/tiny.nxb" | tr -d ' \n')
n=$((${#hex} / 2))
all=""
for ((i = 0; i < n; i++)); do all+="\\x${hex:2*i:2}"; done
sweep_bad=0
execs=0
for ((off = 0; off < n; off++)); do
    byte=$((16#${hex:2*off:2} ^ 0xff))
    printf "${all:0:4*off}\\x$(printf %02x $byte)${all:4*off+4}" >"$T/flip.nxb"
    ASAN_OPTIONS=$SWEEP_ASAN "$NXSIM" disasm "$T/flip.nxb" >/dev/null 2>"$T/err"
    r1=$?
    r2=skipped
    if [ "$r1" -eq 0 ] || [ $((off % 8)) -eq 0 ]; then
        ASAN_OPTIONS=$SWEEP_ASAN "$NXSIM" exec "$T/flip.nxb" --in x="$T/x.npy" >/dev/null 2>"$T/err"
        r2=$?
        execs=$((execs + 1))
    fi
    case "$r1:$r2" in
    0:0 | 0:1 | 0:3 | 3:3 | 3:skipped) ;;
    *)
        echo "FAIL: byte $off flipped: disasm exit $r1, exec exit $r2"
        sweep_bad=$((sweep_bad + 1))
        ;;
    esac
done
echo "corruption sweep: $n flipped files, $execs exec runs"
# the sweep really changed the file (guards against a broken flip)
if [ "$n" -gt 64 ] && ! cmp -s "$T/flip.nxb" "$T/tiny.nxb"; then pass; else fail "corruption sweep did not run"; fi
if [ "$sweep_bad" -eq 0 ]; then pass; else failed=$((failed + sweep_bad)); fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
