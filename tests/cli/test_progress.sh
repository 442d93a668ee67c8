#!/usr/bin/env bash
# The progress line of `nxsim run` and `nxsim exec` (docs/parts/cli.md):
# on a terminal (a pty made by script(1)) after NXSIM_PROGRESS_DELAY seconds
# (default 1), never when stderr is not a terminal, never with --quiet.
# The delay is set to 0 (always shown) or to 1000 (never reached) so that
# nothing here depends on how fast the host is.
#
# Usage: test_progress.sh NXSIM TMPDIR
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$@"

if ! command -v script >/dev/null; then
    echo "test_progress: script(1) (util-linux) is missing" >&2
    exit 1
fi

# on_tty DELAY ARGS...: runs nxsim with stdout and stderr on a pty; the
# terminal's output goes to $T/tty.
on_tty() {
    local delay=$1
    shift
    local cmd
    cmd=$(printf '%q ' "$NXSIM" "$@")
    NXSIM_PROGRESS_DELAY=$delay script -qec "$cmd" /dev/null >"$T/tty" 2>&1 </dev/null
    rc=$?
}

has_progress() {
    if grep -aqE 'nxsim: [0-9.]+ us simulated, [0-9]+/[0-9]+ instructions retired, [0-9.]+ s wall' "$T/tty"; then
        pass
    else
        fail "$1: no progress line on the terminal"
        sed 's/^/    tty: /' "$T/tty" | head -5
    fi
}
no_progress() {
    if grep -aq 'instructions retired' "$1"; then fail "$2: a progress line was printed"; else pass; fi
}

on_tty 0 run tiled_pf_transpose
if [ "$rc" -eq 0 ]; then pass; else fail "run on a pty: exit $rc"; fi
has_progress "run, delay 0"
# the last line shows the whole program retired
total=$(grep -aoE '[0-9]+/[0-9]+ instructions retired' "$T/tty" | tail -1)
if [ -n "$total" ] && [ "${total%%/*}" = "$(echo "${total#*/}" | cut -d' ' -f1)" ]; then pass; else
    fail "run: the last progress line is '$total', not every instruction retired"
fi

on_tty 0 run tiled_pf_transpose --quiet
no_progress "$T/tty" "run --quiet"
on_tty 0 run -q tiled_pf_transpose
no_progress "$T/tty" "run -q"
on_tty 1000 run tiled_pf_transpose
no_progress "$T/tty" "run shorter than the delay"

# not a terminal: nothing, even with delay 0
NXSIM_PROGRESS_DELAY=0 "$NXSIM" run tiled_pf_transpose >"$T/out" 2>"$T/err"
if [ $? -eq 0 ]; then pass; else fail "run to files: exit $?"; fi
no_progress "$T/err" "run with stderr to a file"

prog="$HERE/../../traces/two_core_barrier/program.nxs"
on_tty 0 exec "$prog"
has_progress "exec, delay 0"
on_tty 0 exec "$prog" --quiet
no_progress "$T/tty" "exec --quiet"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
