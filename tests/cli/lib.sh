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
