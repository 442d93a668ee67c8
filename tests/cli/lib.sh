# Shared by the CLI test scripts (sourced): argument handling, a fresh temp
# dir, sanitizer exit codes and the pass/fail/run/expect helpers.
# Usage from a script: source "$(dirname "$0")/lib.sh" "$@"

if [ $# -ne 2 ]; then
    echo "usage: $0 NXSIM TMPDIR" >&2
    exit 2
fi
NXSIM=$1
T=$2
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$T"
mkdir -p "$T"

# Sanitizer builds (-DNXSIM_SANITIZE=ON) exit 1 on an error by default, which
# would pass for nxsim's own "runtime failure": give them codes no command uses.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=86"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=87"

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*"
    if [ -s "$T/err" ]; then sed 's/^/    stderr: /' "$T/err" | head -5; fi
}

# run ARGS...: runs nxsim, stdout -> $T/out, stderr -> $T/err, status -> $rc
run() {
    "$NXSIM" "$@" >"$T/out" 2>"$T/err"
    rc=$?
}

# expect WANT_RC DESCRIPTION ARGS...
expect() {
    local want=$1 what=$2
    shift 2
    run "$@"
    if [ "$rc" -eq "$want" ]; then pass; else fail "$what: exit $rc, expected $want"; fi
}

# The last run printed exactly the one stderr line $1.
stderr_is() {
    if [ "$(cat "$T/err")" = "$1" ]; then pass; else fail "stderr is '$(cat "$T/err")', expected '$1'"; fi
}

# The last run's stdout holds the line $1 exactly.
stdout_has_line() {
    if grep -qxF -- "$1" "$T/out"; then pass; else fail "stdout lacks the line '$1'"; fi
}

absent() {
    if [ -e "$1" ]; then fail "$1 exists but must not"; else pass; fi
}

same_file() {
    if cmp -s "$1" "$2"; then pass; else fail "$1 and $2 differ"; fi
}

# make_npy FILE DESCR SHAPE FIRST_DIM DATA [FORTRAN]
# Writes the exact bytes numpy 1.24 writes (format 1.0): the dict with
# sorted keys, 21 - len(shape[0]) spaces of growth room, space padding so the
# data starts at a multiple of 64, '\n'. DATA is printf escapes.
make_npy() {
    local file=$1 descr=$2 shape=$3 first=$4 data=$5 fortran=${6:-False}
    local dict="{'descr': $descr, 'fortran_order': $fortran, 'shape': $shape, }"
    dict="$dict$(printf '%*s' $((21 - ${#first})) '')"
    local hlen=$((${#dict} + 1))
    local pad=$((64 - (10 + hlen) % 64))
    local total=$((hlen + pad))
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $((total & 255)))\\x$(printf %02x $((total >> 8)))"
        printf '%s%*s\n' "$dict" "$pad" ''
        printf "$data"
    } >"$file"
}
