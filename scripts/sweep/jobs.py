#!/usr/bin/env python3
"""Expands a sweep spec into one `nxsim run --json` job per point of its
axes (docs/parts/sweeps.md). Python 3 standard library only.

    jobs.py SPEC.json OUTDIR [--nxsim PATH]

SPEC.json:
    {"kernel": "tiled_pf_transpose",
     "axes": {"shape": [[512, 384], [2048, 2048]],
              "dtype": ["fp32", "bf16"],
              "machine": ["trn1", "trn2"]},
     "operands": [{"name": "x", "shape": "$shape", "dtype": "$dtype"}],
     "attrs": {"permutation": [1, 0]},
     "options": ["--check"]}

Every string "$AXIS" anywhere in operands and attrs is replaced by that
axis' value at the point ("$method" in attrs for top-k methods); the axis
"machine" (if any) becomes --machine. Writes OUTDIR/ops/NNNN.json (an op
file: operands without "file" get pseudo-random values) and OUTDIR/jobs.txt,
one shell command per line, which writes OUTDIR/out/NNNN.json (the report)
and OUTDIR/out/NNNN.err (stderr, empty when it went well):

    nxsim run --op OUTDIR/ops/0001.json --machine trn1 --json --quiet ... \\
        > OUTDIR/out/0001.json 2> OUTDIR/out/0001.err

Run the lines with GNU parallel (`parallel -j8 < OUTDIR/jobs.txt`), as a
Slurm job array (one line per task) or with plain bash, then gather the
reports into one CSV with gather.py."""
import argparse
import itertools
import json
import os
import shlex
import sys


def substitute(value, point):
    if isinstance(value, str) and value.startswith("$") and value[1:] in point:
        return point[value[1:]]
    if isinstance(value, list):
        return [substitute(v, point) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, point) for k, v in value.items()}
    return value


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("outdir")
    ap.add_argument("--nxsim", default="nxsim", help="the nxsim command (default: nxsim on PATH)")
    a = ap.parse_args(argv[1:])
    try:
        with open(a.spec) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("jobs.py: %s: %s" % (a.spec, e))
    for key in ("kernel", "axes", "operands"):
        if key not in spec:
            sys.exit("jobs.py: %s: no \"%s\"" % (a.spec, key))
    axes = spec["axes"]
    if not isinstance(axes, dict) or not all(isinstance(v, list) and v for v in axes.values()):
        sys.exit("jobs.py: %s: \"axes\" must map names to non-empty lists" % a.spec)
    names = list(axes)
    os.makedirs(os.path.join(a.outdir, "ops"), exist_ok=True)
    os.makedirs(os.path.join(a.outdir, "out"), exist_ok=True)
    lines = []
    for n, values in enumerate(itertools.product(*(axes[k] for k in names)), 1):
        point = dict(zip(names, values))
        op = {"func_name": spec["kernel"], "operands": substitute(spec["operands"], point)}
        if "attrs" in spec:
            op["attrs"] = substitute(spec["attrs"], point)
        op_path = os.path.join(a.outdir, "ops", "%04d.json" % n)
        with open(op_path, "w") as f:
            json.dump(op, f)
            f.write("\n")
        cmd = [a.nxsim, "run", "--op", op_path, "--json", "--quiet"]
        if "machine" in point:
            cmd += ["--machine", str(point["machine"])]
        cmd += [str(o) for o in spec.get("options", [])]
        out = os.path.join(a.outdir, "out", "%04d" % n)
        lines.append("%s > %s 2> %s" % (" ".join(shlex.quote(c) for c in cmd), shlex.quote(out + ".json"),
                                        shlex.quote(out + ".err")))
    with open(os.path.join(a.outdir, "jobs.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("jobs.py: %d jobs in %s" % (len(lines), os.path.join(a.outdir, "jobs.txt")))


if __name__ == "__main__":
    main(sys.argv)
