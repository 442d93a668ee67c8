#!/usr/bin/env python3
"""Reads gather.py's CSV of a top-k sweep (scripts/sweep/topk_sweep.json:
the axis "method" over SCANNING, CASCADED, ROTATIONAL and AUTO) and prints,
per point (operands, k, machine), the fastest forced method and what AUTO
chose, with AUTO's simulated time over the fastest (docs/parts/sweeps.md).
Python 3 standard library only. Exit status 1 if a job failed or a point
has no AUTO row or no forced row.

    topk_best.py SWEEP.csv
"""
import csv
import json
import sys


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: topk_best.py SWEEP.csv")
    try:
        with open(argv[1], newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit("topk_best.py: %s: %s" % (argv[1], e.strerror))
    points, bad = {}, 0
    for r in rows:
        if r.get("status") != "ok":
            print("topk_best.py: %s: job failed: %s" % (r.get("file"), r.get("error")), file=sys.stderr)
            bad += 1
            continue
        try:
            method = json.loads(r["attr.method"])
            key = (r["operands"], json.loads(r["attr.k"]), r["machine"])
            points.setdefault(key, {})[method] = float(r["total_ns"])
        except (KeyError, ValueError) as e:
            sys.exit("topk_best.py: %s: not a top-k sweep row (%s)" % (r.get("file"), e))
    print("%-24s %5s %-6s %-11s %12s %-11s %12s %7s" %
          ("operands", "k", "mach", "fastest", "ns", "AUTO picks", "AUTO ns", "ratio"))
    for (operands, k, machine), by in sorted(points.items()):
        forced = {m: ns for m, ns in by.items() if m != "AUTO"}
        if "AUTO" not in by or not forced:
            print("topk_best.py: %s k=%s %s: needs AUTO and a forced method" % (operands, k, machine),
                  file=sys.stderr)
            bad += 1
            continue
        best = min(forced, key=forced.get)
        picks = [m for m, ns in forced.items() if ns == by["AUTO"]]
        print("%-24s %5s %-6s %-11s %12.0f %-11s %12.0f %7.3f" %
              (operands, k, machine, best, forced[best], picks[0] if picks else "?", by["AUTO"],
               by["AUTO"] / forced[best]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
