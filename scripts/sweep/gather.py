#!/usr/bin/env python3
"""Gathers `nxsim run --json` reports into one CSV (docs/parts/sweeps.md).
Python 3 standard library only.

    gather.py [-o OUT.csv] REPORT.json... | DIR...

A DIR stands for its *.json files (jobs.py's OUTDIR/out). A file may hold
several reports one after another (e.g. `nxsim run --json ... >> all.json`).
A report file that is empty or not JSON is a failed job: its row has status
"error" and, from NAME.err beside it, the first line of the message.

One row per report; columns:
  file, status, error, kernel, function (the leaf or composite), machine,
  grid, executor, operands ("x:fp32[512,384] w:bf16[...]"), results,
  attr.NAME (the attribute's JSON, one column per name seen),
  total_ns, instructions, flops, tflops_achieved, tflops_peak,
  cycles.ENGINE (the run in each engine's clock),
  busy_pct.ENGINE (the busiest core), stall_ns.ENGINE (summed over cores),
  dma_bytes, dma_transfers, new_nki_fe, race_check,
  check_ok, check_max_abs_error, check_max_rel_error, check_tolerance
"""
import argparse
import csv
import glob
import json
import os
import sys

ENGINES = ["pe", "dve", "act", "pool", "sp"]


def reports_in(path):
    """The JSON documents of one file (concatenated), or raises ValueError."""
    with open(path) as f:
        text = f.read()
    dec = json.JSONDecoder()
    docs, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            break
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)
    if not docs:
        raise ValueError("no report")
    return docs


def tensor_text(ts):
    return " ".join("%s:%s[%s]" % (t["name"], t["dtype"], ",".join(str(d) for d in t["shape"])) for t in ts)


def row_of(path, r):
    row = {"file": path, "status": "ok", "error": "", "kernel": r.get("kernel"),
           "function": r.get("leaf") or r.get("composite"), "machine": r.get("machine"), "grid": r.get("grid"),
           "executor": r.get("executor"), "new_nki_fe": r.get("new_nki_fe"), "race_check": r.get("race_check") or ""}
    op = r.get("op") or {}
    row["operands"] = tensor_text(op.get("operands", []))
    row["results"] = tensor_text(op.get("results", []))
    for k, v in (op.get("attrs") or {}).items():
        row["attr." + k] = json.dumps(v, separators=(",", ":"))
    p = r.get("profile")
    if p:
        for k in ("total_ns", "instructions", "flops", "tflops_achieved", "tflops_peak"):
            row[k] = p.get(k)
        for e in ENGINES:
            row["cycles." + e] = p.get("total_cycles", {}).get(e)
            cores = [c["engines"][e] for c in p.get("per_core", []) if e in c.get("engines", {})]
            row["busy_pct." + e] = max((c["busy_pct"] for c in cores), default=None)
            row["stall_ns." + e] = sum(c["stall_ns"] for c in cores) if cores else None
        queues = [q for c in p.get("per_core", []) for q in c.get("dma_queues", [])]
        row["dma_bytes"] = sum(q["bytes"] for q in queues)
        row["dma_transfers"] = sum(q["transfers"] for q in queues)
    checks = [res["check"] for res in r.get("results", []) if "check" in res]
    if checks:
        row["check_ok"] = all(c["ok"] for c in checks)
        row["check_max_abs_error"] = max(c["max_abs_error"] or 0 for c in checks)
        row["check_max_rel_error"] = max(c["max_rel_error"] or 0 for c in checks)
        row["check_tolerance"] = "; ".join(sorted({c["tolerance"] for c in checks}))
    return row


def error_row(path, why):
    err = os.path.splitext(path)[0] + ".err"
    msg = why
    if os.path.exists(err):
        with open(err, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
        if lines:
            msg = lines[0]
    return {"file": path, "status": "error", "error": msg}


FIRST = ["file", "status", "error", "kernel", "function", "machine", "grid", "executor", "operands", "results"]
LAST = (["total_ns", "instructions", "flops", "tflops_achieved", "tflops_peak"] + ["cycles." + e for e in ENGINES]
        + ["busy_pct." + e for e in ENGINES] + ["stall_ns." + e for e in ENGINES]
        + ["dma_bytes", "dma_transfers", "new_nki_fe", "race_check", "check_ok", "check_max_abs_error",
           "check_max_rel_error", "check_tolerance"])


def main(argv):
    ap = argparse.ArgumentParser(description="Gathers nxsim run --json reports into one CSV.")
    ap.add_argument("-o", "--output", help="CSV file (default: standard output)")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args(argv[1:])
    files = []
    for p in a.paths:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "*.json")))
        elif os.path.exists(p):
            files.append(p)
        else:
            sys.exit("gather.py: %s: no such file or directory" % p)
    rows = []
    for path in files:
        try:
            rows += [row_of(path, r) for r in reports_in(path)]
        except (OSError, ValueError) as e:
            rows.append(error_row(path, "not a report: %s" % e))
    attrs = sorted({k for r in rows for k in r if k.startswith("attr.")})
    columns = FIRST + attrs + LAST
    # -o: written beside the target and renamed over it (never half a CSV)
    tmp = a.output + ".tmp.%d" % os.getpid() if a.output else None
    out = open(tmp, "w", newline="") if a.output else sys.stdout
    try:
        w = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})
        if a.output:
            out.close()
            os.replace(tmp, a.output)
    except BaseException:
        if a.output:
            out.close()
            os.unlink(tmp)
        raise
    bad = sum(r["status"] != "ok" for r in rows)
    print("gather.py: %d rows (%d failed jobs) from %d files" % (len(rows), bad, len(files)), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
