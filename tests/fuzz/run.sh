#!/usr/bin/env bash
# Runs the libFuzzer harnesses of tests/fuzz/ for a bounded time each.
# Usage: tests/fuzz/run.sh BUILD SECONDS [NAME...]
#   BUILD    a build directory configured with NXSIM_LIBFUZZER=ON (the
#            sanitizer build: build-asan), already built
#   SECONDS  fuzzing time per harness (libFuzzer -max_total_time)
#   NAME     harnesses to run (default: all of tests/fuzz/CMakeLists.txt's)
# Each harness starts from its seed corpus (tests/fuzz/seeds.txt in BUILD)
# plus what earlier runs in BUILD found, with its dictionary. A crash, a
# sanitizer report, a timeout (one input over 20 s: a hang) or an
# out-of-memory is a failure: the report's tail and every reproducer (path,
# hex dump, base64, and the command that replays it) are printed, and the
# script exits 1 after the other harnesses ran. A slow input (over 10 s, under
# the timeout: libFuzzer's slow-unit-*) is printed the same way as a warning,
# not a failure: how long an input takes under the instrumentation depends on
# the host's load. Environment: NXSIM_FUZZ_RSS_MB (default 2048), NXSIM_FUZZ_JOBS
# (parallel libFuzzer jobs per harness, default 1), NXSIM_FUZZ_SEED (libFuzzer's
# -seed: unset, a random one; CI sets 1 so that its campaign is the same
# sequence of inputs on every run and a red CI is reproducible).
set -uo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD SECONDS [NAME...]" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fuzz=$build/tests/fuzz
bins=$fuzz/libfuzzer
seeds=$fuzz/seeds.txt
if [ ! -x "$bins/fuzz_asm" ] || [ ! -f "$seeds" ]; then
    echo "run.sh: no libFuzzer harnesses in $bins (configure with -DNXSIM_LIBFUZZER=ON and build)" >&2
    exit 2
fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then mapfile -t names < <(cut -d' ' -f1 "$seeds"); fi

dict_of() {
    case $1 in
        asm) "$bins/dict_nxs" >"$fuzz/campaign/nxs.dict" && echo "$fuzz/campaign/nxs.dict" ;;
        nxb) echo "$here/dict/nxb.dict" ;;
        npy) echo "$here/dict/npy.dict" ;;
        *) echo "$here/dict/json.dict" ;;
    esac
}

export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"
export OPENBLAS_NUM_THREADS=1
mkdir -p "$fuzz/campaign"
jobs=()
if [ "${NXSIM_FUZZ_JOBS:-1}" -gt 1 ]; then jobs=(-jobs="$NXSIM_FUZZ_JOBS" -workers="$NXSIM_FUZZ_JOBS"); fi
if [ -n "${NXSIM_FUZZ_SEED:-}" ]; then jobs+=(-seed="$NXSIM_FUZZ_SEED"); fi
status=0
summary=()
for name in "${names[@]}"; do
    line=$(grep "^$name " "$seeds") || { echo "run.sh: unknown harness '$name'" >&2; exit 2; }
    work=$fuzz/campaign/$name
    mkdir -p "$work/corpus" "$work/artifacts"
    rm -f "$work/artifacts/"* "$work"/fuzz-*.log
    # the seeds: files, and the files of seed directories (names made unique)
    for s in ${line#* }; do
        if [ -d "$s" ]; then
            for f in "$s"/*; do [ -f "$f" ] && cp "$f" "$work/corpus/seed_$(basename "$s")_$(basename "$f")"; done
        elif [ -f "$s" ]; then
            cp "$s" "$work/corpus/seed_$(basename "$(dirname "$s")")_$(basename "$s")"
        fi
    done
    dict=$(dict_of "$name")
    echo "== fuzz_$name: ${seconds} s, corpus $(ls "$work/corpus" | wc -l) inputs, dictionary $(basename "$dict")"
    (cd "$work" && "$bins/fuzz_$name" -max_total_time="$seconds" -timeout=20 -rss_limit_mb="${NXSIM_FUZZ_RSS_MB:-2048}" \
        -max_len=65536 -dict="$dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
        ${jobs[@]+"${jobs[@]}"} "$work/corpus" >"$work/log" 2>&1)
    rc=$?
    runs=$(grep -h 'stat::number_of_executed_units' "$work/log" "$work"/fuzz-*.log 2>/dev/null | awk '{s += $2} END {print s + 0}')
    summary+=("fuzz_$name: $runs executions, corpus $(ls "$work/corpus" | wc -l)")
    findings=() slow=()
    for a in "$work"/artifacts/*; do
        [ -e "$a" ] || continue
        case $(basename "$a") in slow-unit-*) slow+=("$a") ;; *) findings+=("$a") ;; esac
    done
    show() {
        for a in "$@"; do
            echo "  reproducer $a ($(wc -c <"$a") bytes):"
            od -A d -t x1z "$a" | head -n 40 | sed 's/^/    /'
            echo "    base64: $(base64 -w0 "$a")"
            echo "    replay: $fuzz/fuzz_${name}_replay $a   (or $bins/fuzz_$name $a)"
        done
    }
    if [ $rc -ne 0 ] || [ ${#findings[@]} -gt 0 ]; then
        status=1
        echo "FAIL: fuzz_$name exited $rc; the end of its report:"
        tail -n 40 "$work/log" "$work"/fuzz-*.log 2>/dev/null | sed 's/^/    /'
        show ${findings[@]+"${findings[@]}"}
    else
        echo "   ok: $runs executions"
    fi
    if [ ${#slow[@]} -gt 0 ]; then
        echo "   warning: fuzz_$name: ${#slow[@]} slow input(s) (over 10 s, under the 20 s timeout):"
        show "${slow[@]}"
    fi
done
echo "== fuzzing summary (${seconds} s each)"
for s in "${summary[@]}"; do echo "   $s"; done
exit $status
