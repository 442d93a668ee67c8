#!/usr/bin/env bash
# Runs nxsim conformance traces (traces/README.md describes their layout).
#
# Usage: run_traces.sh --nxsim NXSIM --npycmp NPYCMP [--traces DIR] [--work DIR]
#                      [--backend functional|model|rtl] MODE [NAME...]
#   --backend    what `nxsim exec` runs the trace on, the way one suite runs
#                on every implementation: functional (`--functional`, the
#                executor), model (the SystemC model, the default) or rtl
#                (the model with its PE datapath on the Verilated RTL array,
#                `--pe rtl`; meant for traces with PE instructions). Every
#                backend must give the same outputs and the same errors.
#   MODE run     for each traces/NAME/program.nxs (all of them without NAME):
#                1. nxsim asm program.nxs -> a.nxb;
#                2. round trip: nxsim disasm a.nxb -> a.nxs, nxsim asm a.nxs -> b.nxb
#                   (byte-identical to a.nxb), nxsim disasm b.nxb == a.nxs;
#                3. nxsim exec a.nxb --in T=in_T.npy ... --out T=... for every
#                   expected_T.npy: exit 0, nothing on stderr;
#                4. npycmp expected_T.npy against the output, exactly unless
#                   the trace's `tolerance` file names a tolerance for T.
#   MODE errors  for each traces/errors/NAME/program.nxs: nxsim exec program.nxs
#                (run inside the trace directory, inputs from in_*.npy, every
#                output tensor requested with --out) must exit non-zero, print
#                exactly the line in expected_error.txt on stderr and write no
#                output file.
# tolerance file: `#` comments; lines `TENSOR SPEC` where TENSOR is an output
# tensor name or `*` (every tensor without its own line) and SPEC one of
# `exact`, `bits`, `ulp N`, `abs A`, `rel R`, `abs A rel R` (npycmp options).
# Prints one line per check; exits 0 when every check passed, 1 otherwise,
# 2 on usage errors.
set -u

usage() {
    echo "usage: $0 --nxsim NXSIM --npycmp NPYCMP [--traces DIR] [--work DIR] [--backend functional|model|rtl] run|errors [NAME...]" >&2
    exit 2
}

HERE=$(cd "$(dirname "$0")" && pwd)
NXSIM='' NPYCMP='' TRACES="$HERE/../../traces" WORK= BACKEND=model
while [ $# -gt 0 ]; do
    case $1 in
    --nxsim) NXSIM=${2:-}; shift 2 || usage ;;
    --npycmp) NPYCMP=${2:-}; shift 2 || usage ;;
    --traces) TRACES=${2:-}; shift 2 || usage ;;
    --work) WORK=${2:-}; shift 2 || usage ;;
    --backend) BACKEND=${2:-}; shift 2 || usage ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || usage
MODE=$1
shift
if [ -z "$NXSIM" ] || [ -z "$NPYCMP" ]; then usage; fi
case $BACKEND in
functional) EXEC_BACKEND=(--functional) ;;
model) EXEC_BACKEND=() ;;
rtl) EXEC_BACKEND=(--pe rtl) ;;
*) echo "run_traces: --backend expects functional, model or rtl, got '$BACKEND'" >&2; exit 2 ;;
esac
[ -x "$NXSIM" ] || { echo "run_traces: nxsim '$NXSIM' is not executable" >&2; exit 2; }
[ -x "$NPYCMP" ] || { echo "run_traces: npycmp '$NPYCMP' is not executable" >&2; exit 2; }
TRACES=$(cd "$TRACES" && pwd) || exit 2
NXSIM=$(cd "$(dirname "$NXSIM")" && pwd)/$(basename "$NXSIM")
if [ -z "$WORK" ]; then
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
fi
# each backend works in a directory of its own (ctest may run them at once)
WORK=$WORK/$BACKEND
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd) || exit 2

failures=0
pass() { echo "ok   [$BACKEND] $*"; }
fail() {
    echo "FAIL [$BACKEND] $*"
    failures=$((failures + 1))
}
# show FILE: indented copy of a (short) log
show() { [ -s "$1" ] && head -n 20 "$1" | sed 's/^/       | /'; }

# tolerance_args DIR TENSOR: the npycmp options for TENSOR (empty: exact)
tolerance_args() {
    local file=$1/tolerance name=$2 line key spec=() default=()
    [ -f "$file" ] || return 0
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%%#*}
        read -r -a spec <<<"$line"
        [ ${#spec[@]} -gt 0 ] || continue
        key=${spec[0]}
        spec=("${spec[@]:1}")
        if [ "$key" = "$name" ]; then
            spec_args "${spec[@]}"
            return
        fi
        if [ "$key" = "*" ]; then default=("${spec[@]}"); fi
    done <"$file"
    if [ ${#default[@]} -gt 0 ]; then spec_args "${default[@]}"; fi
    return 0
}
spec_args() {
    while [ $# -gt 0 ]; do
        case $1 in
        exact | bits) printf -- '--%s ' "$1"; shift ;;
        ulp | abs | rel) printf -- '--%s %s ' "$1" "$2"; shift 2 ;;
        *) echo "run_traces: bad tolerance '$*'" >&2; printf -- '--bad-tolerance '; return ;;
        esac
    done
}

# input_args DIR: --in options for every in_*.npy of DIR, relative to DIR
input_args() {
    local f n
    for f in "$1"/in_*.npy; do
        [ -e "$f" ] || continue
        n=$(basename "$f" .npy)
        printf -- '--in %s=%s\n' "${n#in_}" "$(basename "$f")"
    done
}

run_trace() {
    local name=$1 dir=$TRACES/$1 w=$WORK/$1 ok=1
    if [ ! -f "$dir/program.nxs" ]; then
        fail "$name: no $dir/program.nxs"
        return
    fi
    rm -rf "$w" && mkdir -p "$w"
    # 1-2: assemble and round-trip
    if ! "$NXSIM" asm "$dir/program.nxs" -o "$w/a.nxb" 2>"$w/asm.err"; then
        fail "$name: nxsim asm failed"; show "$w/asm.err"; return
    fi
    if ! "$NXSIM" disasm "$w/a.nxb" >"$w/a.nxs" 2>"$w/disasm.err" ||
        ! "$NXSIM" asm "$w/a.nxs" -o "$w/b.nxb" 2>"$w/asm2.err" ||
        ! "$NXSIM" disasm "$w/b.nxb" >"$w/b.nxs" 2>>"$w/disasm.err"; then
        fail "$name: round trip: disasm/asm failed"; show "$w/disasm.err"; show "$w/asm2.err"; return
    fi
    if cmp -s "$w/a.nxb" "$w/b.nxb" && cmp -s "$w/a.nxs" "$w/b.nxs"; then
        pass "$name: asm/disasm round trip byte-identical"
    else
        fail "$name: round trip differs (a.nxb/b.nxb or a.nxs/b.nxs in $w)"
        ok=0
    fi
    # 3: execute
    local args=() f t
    mapfile -t ins < <(input_args "$dir")
    for f in "${ins[@]}"; do
        args+=(--in "${f#--in }")
    done
    local outs=()
    for f in "$dir"/expected_*.npy; do
        [ -e "$f" ] || continue
        t=$(basename "$f" .npy)
        t=${t#expected_}
        outs+=("$t")
        args+=(--out "$t=$w/out_$t.npy")
    done
    if [ ${#outs[@]} -eq 0 ]; then
        fail "$name: no expected_*.npy"
        return
    fi
    # inputs are named relative to the trace directory
    if ! (cd "$dir" && "$NXSIM" exec "$w/a.nxb" "${EXEC_BACKEND[@]}" "${args[@]}") >"$w/exec.out" 2>"$w/exec.err"; then
        fail "$name: nxsim exec failed"; show "$w/exec.err"; return
    fi
    if [ -s "$w/exec.err" ]; then
        fail "$name: nxsim exec printed on stderr (a missing --in?)"; show "$w/exec.err"
        ok=0
    fi
    # 4: compare
    for t in "${outs[@]}"; do
        local tol
        tol=$(tolerance_args "$dir" "$t")
        # shellcheck disable=SC2086
        if "$NPYCMP" $tol --name "$t" "$dir/expected_$t.npy" "$w/out_$t.npy" >"$w/cmp_$t.log" 2>&1; then
            pass "$name: $(tail -n 1 "$w/cmp_$t.log")${tol:+ [$tol]}"
        else
            fail "$name: $t differs${tol:+ [$tol]}"; show "$w/cmp_$t.log"
            ok=0
        fi
    done
    [ $ok -eq 1 ] && pass "$name"
    return 0
}

error_trace() {
    local name=$1 dir=$TRACES/errors/$1 w=$WORK/errors/$1
    if [ ! -f "$dir/program.nxs" ] || [ ! -f "$dir/expected_error.txt" ]; then
        fail "errors/$name: needs program.nxs and expected_error.txt in $dir"
        return
    fi
    rm -rf "$w" && mkdir -p "$w"
    local args=() f t
    mapfile -t ins < <(input_args "$dir")
    for f in "${ins[@]}"; do
        args+=(--in "${f#--in }")
    done
    # every output tensor is requested: none may be written
    while read -r t; do
        args+=(--out "$t=$w/out_$t.npy")
    done < <(awk '$1 == ".tensor" && $3 == "output" { print $2 }' "$dir/program.nxs")
    (cd "$dir" && "$NXSIM" exec program.nxs "${EXEC_BACKEND[@]}" "${args[@]}") >"$w/exec.out" 2>"$w/exec.err"
    local rc=$?
    if [ $rc -eq 0 ]; then
        fail "errors/$name: nxsim exec succeeded, expected a failure"
        return
    fi
    if ! cmp -s "$w/exec.err" "$dir/expected_error.txt"; then
        fail "errors/$name: stderr differs from expected_error.txt (exit $rc)"
        echo "       expected: $(cat "$dir/expected_error.txt")"
        echo "       got:      $(head -n 3 "$w/exec.err")"
        return
    fi
    if ls "$w"/out_*.npy >/dev/null 2>&1; then
        fail "errors/$name: an output file was written despite the failure"
        return
    fi
    pass "errors/$name: exit $rc, $(cat "$w/exec.err")"
}

names=("$@")
case $MODE in
run)
    if [ ${#names[@]} -eq 0 ]; then
        for d in "$TRACES"/*/program.nxs; do names+=("$(basename "$(dirname "$d")")"); done
    fi
    for n in "${names[@]}"; do run_trace "$n"; done
    ;;
errors)
    if [ ${#names[@]} -eq 0 ]; then
        for d in "$TRACES"/errors/*/program.nxs; do names+=("$(basename "$(dirname "$d")")"); done
    fi
    for n in "${names[@]}"; do error_trace "$n"; done
    ;;
*) usage ;;
esac

if [ $failures -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
exit 0
