#!/usr/bin/env bash
# `nxsim run/exec --timeline` (and run --by-source): the SVG of a two-core run checked as XML
# against the same run's trace and summary (check_timeline.py), rendered to
# PNG by rsvg-convert (Debian librsvg2-bin, installed by scripts/setup.sh)
# to prove it renders; a failed write leaves no file.
#
# Usage: test_timeline.sh NXSIM PYTHON3 TMPDIR
set -u
NXSIM=$1 PY=$2 T=$3
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$T" && mkdir -p "$T"
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
command -v rsvg-convert >/dev/null || { echo "test_timeline: rsvg-convert is missing (apt-get install librsvg2-bin; scripts/setup.sh does)" >&2; exit 1; }

check() { # NAME: $T/NAME.svg $T/NAME.json [$T/NAME.report.json]
    local name=$1
    "$PY" "$HERE/check_timeline.py" "$T/$name.svg" "$T/$name.json" ${2:+"$2"} || fail "$name: check_timeline"
    rsvg-convert "$T/$name.svg" -o "$T/$name.png" || fail "$name: rsvg-convert failed"
    [ "$(head -c 8 "$T/$name.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$name: not a PNG"
}

# a registry leaf on the two-core VNC grid
"$NXSIM" run tiled_pf_transpose --timeline "$T/run.svg" --profile "$T/run.json" --json >"$T/run.report.json" 2>"$T/err" ||
    fail "run --timeline: exit $?"
check run "$T/run.report.json"
grep -q 'data-core="1"' "$T/run.svg" || fail "run: no lane of core 1 on the 2-core grid"

# an ISA program through exec, with semaphore waits and a barrier
"$NXSIM" exec "$HERE/../../traces/two_core_barrier/program.nxs" --timeline "$T/exec.svg" --profile "$T/exec.json" \
    >/dev/null 2>"$T/err" || fail "exec --timeline: exit $?"
check exec
grep -q 'class="wait"' "$T/exec.svg" || fail "exec: no hatched wait"

# the DVE transpose: 32x32 blocks on DVE, loads and stores over many queues
"$NXSIM" run tiled_dve_transpose_10 -a 'permutation=[1,0]' --timeline "$T/dve.svg" --profile "$T/dve.json" \
    --json >"$T/dve.report.json" 2>"$T/err" || fail "run tiled_dve_transpose_10: exit $?"
check dve "$T/dve.report.json"

# --by-source: the table after the summary, and the JSON key (rows that
# add up to the run's busy time are test_source_map's business)
"$NXSIM" run tiled_pf_transpose --by-source >"$T/bs.txt" 2>"$T/err" || fail "run --by-source: exit $?"
grep -q '^busy time by source line' "$T/bs.txt" || fail "run --by-source: no table"
grep -qE '  kernels/transpose/tiled_pf_transpose\.c:[0-9]+ \(pf_[a-z]+\)$' "$T/bs.txt" || fail "run --by-source: no leaf line"
"$NXSIM" run tiled_pf_transpose --by-source --json >"$T/bs.json" 2>"$T/err" || fail "run --by-source --json: exit $?"
"$PY" -c 'import json, sys; rows = json.load(open(sys.argv[1]))["by_source"]; assert rows and rows[0]["file"].startswith("kernels/"), rows' \
    "$T/bs.json" || fail "run --by-source --json: no by_source rows"

# an unwritable path: exit 1, a one-line message, nothing left behind
"$NXSIM" run tiled_pf_transpose --timeline "$T/no/such/dir/x.svg" >/dev/null 2>"$T/err"
rc=$?
[ "$rc" -eq 1 ] || fail "unwritable --timeline: exit $rc, expected 1"
[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q '^nxsim: timeline ' "$T/err" || fail "unwritable --timeline: stderr '$(cat "$T/err")'"
"$NXSIM" run tiled_pf_transpose --functional --timeline "$T/f.svg" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && [ ! -e "$T/f.svg" ] || fail "--timeline with --functional must be a usage error"

if [ "$failed" -eq 0 ]; then echo "test_timeline: ok"; fi
[ "$failed" -eq 0 ]
