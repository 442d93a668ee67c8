"""Checks an `nxsim --timeline` SVG against the same run's Perfetto trace
(--profile) and summary (--json): the SVG parses as XML, has exactly the
lanes the trace has tracks (per core: every engine that ran, every DMA queue
that ran transfers), each engine lane's busy % equals the summary's, every
block lies inside the plot, the last block ends where the run ends, waits
are hatched, and the axis spans the run. Python 3 standard library only.

Usage: check_timeline.py TIMELINE.svg TRACE.json [SUMMARY.json]
Prints the failures and exits 1, or prints "ok: ..." and exits 0."""
import json
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def main(argv):
    svg_path, trace_path = argv[1], argv[2]
    summary = None
    if len(argv) > 3:
        with open(argv[3]) as f:
            report = json.load(f)
        summary = report["profile"]
    failures = []
    root = ET.parse(svg_path).getroot()
    if root.tag != SVG + "svg":
        failures.append("root element is %s, not svg" % root.tag)
    plot_x = float(root.get("data-plot-x"))
    plot_w = float(root.get("data-plot-width"))
    total_ns = float(root.get("data-total-ns"))

    with open(trace_path) as f:
        trace = json.load(f)
    names = {}
    used = set()
    last_end_ns = 0.0
    for ev in trace["traceEvents"]:
        if ev.get("ph") == "M" and ev.get("name") == "thread_name":
            # "dma q17 (engine 1, queue 1)" -> "dma q17"
            names[(ev["pid"], ev["tid"])] = ev["args"]["name"].split(" (")[0]
        if ev.get("ph") == "X" and ev.get("cat") not in ("wait", "stall") and ev["name"] != "end":
            used.add((ev["pid"], ev["tid"]))  # a stream's `end` alone draws no lane
            last_end_ns = max(last_end_ns, float(ev["args"]["end_ns"]))
    want = {(pid - 1, names[(pid, tid)]) for pid, tid in used}

    lanes = {}
    blocks = 0
    waits = 0
    right = 0.0
    for g in root.iter(SVG + "g"):
        if g.get("class") != "lane":
            continue
        key = (int(g.get("data-core")), g.get("data-lane"))
        if key in lanes:
            failures.append("lane %s drawn twice" % (key,))
        lanes[key] = float(g.get("data-busy-pct"))
        n = 0
        for r in g.iter(SVG + "rect"):
            cls = r.get("class")
            if cls not in ("blk", "wait"):
                continue
            x, w = float(r.get("x")), float(r.get("width"))
            if x < plot_x - 0.01 or x + w > plot_x + plot_w + 1.0:
                failures.append("lane %s: a block at x=%.2f w=%.2f is outside the plot [%.1f, %.1f]"
                                % (key, x, w, plot_x, plot_x + plot_w))
            if cls == "blk":
                n += 1
                right = max(right, x + w)
            else:
                waits += 1
                if r.get("fill") != "url(#hatch)":
                    failures.append("lane %s: a wait is not hatched" % (key,))
        if n == 0:
            failures.append("lane %s has no block" % (key,))
        blocks += n

    got = set(lanes)
    if got != want:
        failures.append("lanes %s, but the trace has tracks %s (missing %s, extra %s)"
                        % (sorted(got), sorted(want), sorted(want - got), sorted(got - want)))
    end_px = plot_x + plot_w * last_end_ns / total_ns
    if abs(right - end_px) > 1.0:
        failures.append("the last block ends at x=%.2f, the run's last instruction at x=%.2f" % (right, end_px))
    if total_ns + 1e-6 < last_end_ns:
        failures.append("the axis spans %.3f ns but an instruction ends at %.3f ns" % (total_ns, last_end_ns))
    if summary is not None:
        if total_ns + 1e-3 < summary["total_ns"]:
            failures.append("the axis spans %.3f ns, the summary says %.3f" % (total_ns, summary["total_ns"]))
        for core in summary["per_core"]:
            for engine, st in core["engines"].items():
                key = (core["core"], engine)
                if key in lanes and abs(lanes[key] - st["busy_pct"]) > 0.01:
                    failures.append("lane %s busy %.2f%%, the summary says %.2f%%" % (key, lanes[key], st["busy_pct"]))
                if st["instructions"] > 1 and key not in lanes:
                    failures.append("engine %s ran %d instructions but has no lane" % (key, st["instructions"]))
    ticks = [t.text for t in root.iter(SVG + "text") if t.text and t.text.replace(".", "").isdigit()]
    if not ticks:
        failures.append("no axis tick labels")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print("ok: %d lanes, %d blocks, %d waits, %.3f ns" % (len(lanes), blocks, waits, total_ns))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
