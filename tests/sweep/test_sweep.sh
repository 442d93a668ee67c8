#!/usr/bin/env bash
# The sweep scripts (scripts/sweep/, docs/parts/sweeps.md): jobs.py expands
# a small spec (2 shapes x 2 dtypes x 2 machines, plus a shape the leaf
# refuses), every job line runs as Slurm or GNU parallel would run it (one
# shell command each), gather.py makes one CSV, and the CSV must hold
# exactly the figures of each job's own report, an error row for the
# refused job, and the axes as columns.
#
# Usage: test_sweep.sh NXSIM PYTHON3 TMPDIR
set -u
NXSIM=$1 PY=$2 T=$3
here=$(cd "$(dirname "$0")" && pwd)
scripts=$here/../../scripts/sweep
rm -rf "$T" && mkdir -p "$T"
cat >"$T/spec.json" <<'JSON'
{"kernel": "tiled_dve_transpose_10",
 "axes": {"shape": [[128, 64], [64, 256]], "dtype": ["fp32", "bf16"], "machine": ["trn1", "trn2"]},
 "operands": [{"name": "x", "shape": "$shape", "dtype": "$dtype"}],
 "attrs": {"permutation": [1, 0]},
 "options": ["--check"]}
JSON
"$PY" "$scripts/jobs.py" "$T/spec.json" "$T/sweep" --nxsim "$NXSIM" || exit 1
[ "$(wc -l <"$T/sweep/jobs.txt")" -eq 8 ] || { echo "FAIL: expected 8 jobs"; exit 1; }
# one more job the leaf refuses (a 3-d operand for a 2-d permutation)
cat >"$T/sweep/ops/0009.json" <<'JSON'
{"func_name": "tiled_dve_transpose_10", "operands": [{"name": "x", "shape": [4, 4, 4], "dtype": "fp32"}],
 "attrs": {"permutation": [1, 0]}}
JSON
echo "$NXSIM run --op $T/sweep/ops/0009.json --json --quiet > $T/sweep/out/0009.json 2> $T/sweep/out/0009.err" >>"$T/sweep/jobs.txt"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  bash -c "$line" || true # a failed job leaves its .err; the sweep goes on
done <"$T/sweep/jobs.txt"
"$PY" "$scripts/gather.py" -o "$T/sweep.csv" "$T/sweep/out" || exit 1
"$PY" - "$T/sweep.csv" "$T/sweep/out" <<'PY'
import csv, json, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = sys.argv[2]
fail = []
if len(rows) != 9:
    fail.append("%d rows, expected 9" % len(rows))
ok = [r for r in rows if r["status"] == "ok"]
bad = [r for r in rows if r["status"] == "error"]
if len(ok) != 8 or len(bad) != 1:
    fail.append("%d ok and %d error rows, expected 8 and 1" % (len(ok), len(bad)))
for r in ok:
    rep = json.load(open(r["file"]))
    p = rep["profile"]
    if float(r["total_ns"]) != p["total_ns"]:
        fail.append("%s: total_ns %s, the report says %r" % (r["file"], r["total_ns"], p["total_ns"]))
    if int(r["instructions"]) != p["instructions"]:
        fail.append("%s: instructions differ" % r["file"])
    want = max(c["engines"]["dve"]["busy_pct"] for c in p["per_core"])
    if float(r["busy_pct.dve"]) != want:
        fail.append("%s: busy_pct.dve %s, want %r" % (r["file"], r["busy_pct.dve"], want))
    if r["machine"] != rep["machine"] or r["check_ok"] != "True" or r["attr.permutation"] != "[1,0]":
        fail.append("%s: machine/check/attr columns %r %r %r" % (r["file"], r["machine"], r["check_ok"], r["attr.permutation"]))
    if int(r["dma_bytes"]) != sum(q["bytes"] for c in p["per_core"] for q in c["dma_queues"]):
        fail.append("%s: dma_bytes differ" % r["file"])
points = {(r["machine"], r["operands"]) for r in ok}
want = {(m, "x:%s[%s]" % (d, s)) for m in ("trn1", "trn2") for d in ("fp32", "bf16") for s in ("128,64", "64,256")}
if points != want:
    fail.append("sweep points %s, expected %s" % (sorted(points), sorted(want)))
if bad and not bad[0]["error"]:
    fail.append("the error row has no message")
for f in fail:
    print("FAIL: " + f)
if not fail:
    print("test_sweep: ok: 8 runs and 1 refused job gathered; error row: %s" % bad[0]["error"])
sys.exit(1 if fail else 0)
PY
[ $? -eq 0 ] || exit 1

# A top-k sweep over the forced methods and AUTO (scripts/sweep/topk_best.py):
# one point, four jobs; AUTO's pick must be the fastest forced method (the
# dispatch table is measured on these runs' model), and a CSV with a failed
# job makes the script fail.
cat >"$T/topk.json" <<'JSON'
{"kernel": "topk",
 "axes": {"shape": [[1, 4096]], "k": [8], "method": ["SCANNING", "CASCADED", "ROTATIONAL", "AUTO"]},
 "operands": [{"name": "x", "shape": "$shape", "dtype": "bf16"}],
 "attrs": {"k": "$k", "method": "$method"}}
JSON
"$PY" "$scripts/jobs.py" "$T/topk.json" "$T/topk" --nxsim "$NXSIM" || exit 1
bash "$T/topk/jobs.txt" || { echo "FAIL: a top-k sweep job failed"; exit 1; }
"$PY" "$scripts/gather.py" -o "$T/topk.csv" "$T/topk/out" || exit 1
best=$("$PY" "$scripts/topk_best.py" "$T/topk.csv") || { echo "FAIL: topk_best.py: $best"; exit 1; }
echo "$best"
row=$(echo "$best" | grep 'x:bf16\[1,4096\]')
[ "$(echo "$row" | awk '{print $4}')" = "$(echo "$row" | awk '{print $6}')" ] &&
  [ "$(echo "$row" | awk '{print $8}')" = "1.000" ] ||
  { echo "FAIL: AUTO is not the fastest forced method: $row"; exit 1; }
cp "$T/sweep.csv" "$T/with-error.csv"
if "$PY" "$scripts/topk_best.py" "$T/with-error.csv" >/dev/null 2>&1; then
  echo "FAIL: topk_best.py accepted a sweep with a failed job"; exit 1
fi
echo "test_sweep: ok: top-k sweep gathered, AUTO picks the fastest"
