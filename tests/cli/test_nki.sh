#!/usr/bin/env bash
# Tests of `nxsim nki` (cli/cmd_nki.c -> python3 -m nxsim.nki): an NKI kernel
# written here run from the shell against its own NumPy function (--check)
# and against .npy bytes written by hand, the launch grid, the usage, kernel,
# load and syntax errors as one line with the kernel file's line and the
# documented exit codes, outputs that are inputs refused with the input
# untouched, no output file on a failure, an interpreter that does not exist.
#
# Usage: test_nki.sh NXSIM TMPDIR   (TMPDIR is wiped and reused)
set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cat >"$T/k.py" <<'PY'
import nxsim.nki as nki
import nxsim.nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a) + nl.load(b))
    return out


def add_ref(a, b):
    return a + b


def wrong_ref(a, b):
    return a - b


@nki.jit
def rows(a):
    # program i of the grid copies row block i
    i = nl.program_id(0)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[i * 2:i * 2 + 2, :])
    nl.store(out[i * 2:i * 2 + 2, :], t * 2.0)
    return out


@nki.jit
def too_tall(a):
    out = nl.ndarray((256, 4), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a[0:256, 0:4]))  # ERR
    return out
PY
printf 'def broken(:\n' >"$T/syntax.py"
printf 'import nxsim.nki as nki\nraise RuntimeError("no")\n' >"$T/raises.py"

# fp32 bytes of 1, 2, 3, 4 and their doubles
make_npy "$T/a.npy" "'<f4'" "(2, 2)" 2 '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40'
make_npy "$T/b.npy" "'<f4'" "(2, 2)" 2 '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40'
make_npy "$T/a2.npy" "'<f4'" "(2, 2)" 2 '\x00\x00\x00\x40\x00\x00\x80\x40\x00\x00\xc0\x40\x00\x00\x00\x41'
make_npy "$T/x4.npy" "'<f4'" "(4, 2)" 4 '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40'
make_npy "$T/x4d.npy" "'<f4'" "(4, 2)" 4 '\x00\x00\x00\x40\x00\x00\x80\x40\x00\x00\xc0\x40\x00\x00\x00\x41\x00\x00\x00\x40\x00\x00\x80\x40\x00\x00\xc0\x40\x00\x00\x00\x41'

# a run on the model, checked against the file's own function and the bytes
expect 0 "add on the model" nki "$T/k.py:add" -i "$T/a.npy" -i "$T/b.npy" -o "$T/c.npy" --check add_ref
same_file "$T/c.npy" "$T/a2.npy"
stdout_has_line "check result 0: ok, max abs error 0, 0 of 4 beyond rtol=atol=1e-05"
if grep -qE '^simulated: [0-9.]+ us on trn2, 1 core$' "$T/out"; then pass; else fail "no simulated time line"; fi
rm -f "$T/c.npy"
expect 0 "add functional" nki "$T/k.py:add" -i "$T/a.npy" -i "$T/b.npy" -o "$T/c.npy" --functional
same_file "$T/c.npy" "$T/a2.npy"
# a launch grid of two programs
rm -f "$T/c.npy"
expect 0 "grid" nki "$T/k.py:rows" --grid 2 -i "$T/x4.npy" -o "$T/c.npy" --functional
same_file "$T/c.npy" "$T/x4d.npy"
# a failed --check is exit 1 and names the function
expect 1 "failed check" nki "$T/k.py:add" -i "$T/a.npy" -i "$T/b.npy" --functional --check wrong_ref
if grep -q "^check result 0: FAILED" "$T/out"; then pass; else fail "no FAILED check line"; fi

# the kernel's mistake: exit 3, one line, the kernel's file and line
rm -f "$T/c.npy"
expect 3 "partition dim" nki "$T/k.py:too_tall" -i "$T/x4.npy" -o "$T/c.npy"
err_line=$(grep -n "# ERR" "$T/k.py" | cut -d: -f1)
stderr_is "nxsim nki: $T/k.py:$err_line: a[4, 2]: slice 0:256 is out of bounds for dimension 0 of size 4"
absent "$T/c.npy"
expect 3 "syntax error" nki "$T/syntax.py:f"
stderr_is "nxsim nki: $T/syntax.py:1: invalid syntax"
expect 3 "the file raises" nki "$T/raises.py:f"
stderr_is "nxsim nki: $T/raises.py:2: loading the file raised RuntimeError: no"
expect 3 "no such kernel" nki "$T/k.py:nope"
stderr_is "nxsim nki: $T/k.py: no kernel 'nope' in the file"
expect 3 "no such file" nki "$T/none.py:add"
stderr_is "nxsim nki: $T/none.py: no such file"

# usage: one line, exit 2
expect 2 "no arguments" nki
stderr_is "nxsim nki: the following arguments are required: FILE.py:KERNEL; try 'nxsim nki --help'"
expect 2 "unknown option" nki "$T/k.py:add" --frobnicate
stderr_is "nxsim nki: unrecognized arguments: --frobnicate; try 'nxsim nki --help'"
expect 2 "bad grid" nki "$T/k.py:rows" --grid x -i "$T/x4.npy"
stderr_is "nxsim nki: --grid x: expected N or N,M"
cp "$T/a.npy" "$T/keep.npy"
expect 2 "output is an input" nki "$T/k.py:add" -i "$T/a.npy" -i "$T/b.npy" -o "$T/a.npy"
stderr_is "nxsim nki: -o '$T/a.npy' is the input -i '$T/a.npy': refusing to overwrite it"
same_file "$T/a.npy" "$T/keep.npy"
expect 2 "two outputs in one file" nki "$T/k.py:add" -i "$T/a.npy" -i "$T/b.npy" -o "$T/c.npy" --profile "$T/c.npy"
expect 0 "help" nki --help
if grep -q "^usage: nxsim nki" "$T/out"; then pass; else fail "help does not name nxsim nki"; fi
expect 0 "help nki" help nki
if grep -q "^Usage: nxsim nki FILE.py:KERNEL" "$T/out"; then pass; else fail "nxsim help nki"; fi

# an interpreter that is not there: exit 1, one line naming it
NXSIM_PYTHON="$T/no-python" run nki "$T/k.py:add"
if [ "$rc" -eq 1 ]; then pass; else fail "missing interpreter: exit $rc"; fi
if [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^nxsim: nki: cannot run $T/no-python: No such file or directory" "$T/err"; then
    pass
else fail "missing interpreter message"; fi

echo "test_nki: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
