#!/usr/bin/env python3
"""Fit the "pagemap" cost group of a profile from native pagemap reads.

`foliosim calibrate` fits phase times measured as the workload thread's CPU
time; a pagemap step is executed by the engine process (it preads the
workload's /proc/PID/pagemap), so its time is not in that. This script fits
the pagemap costs separately from the step's own measurement,
`native/pagemap_cpu_ns/<name>`: the engine thread's CPU time over its pread
loop (the reads' kernel work is charged to the reading thread; unlike the
wall time `native/pagemap_ns/<name>`, it leaves out preemption by the other
work on a shared machine):

  1. every scenarios/calibrate/pagemap-*.toml runs natively --repeat times
     (root; fresh workload each time) and once in the simulator;
  2. per phase (one pagemap step each): measured = median pagemap_cpu_ns over
     the repeats; counts = the simulator's sim/pagemap_* counters;
  3. non-negative least squares of sum(count_c * ns_c) = measured with each
     row divided by its measured time (relative errors), solved exactly by
     trying every active set (a handful of unknowns);
  4. leave-one-out: each phase predicted by the fit of all the others.

Prints a table and the fitted ns per counter; it writes nothing. Usage:
  sudo crates/cli/scripts/fit-pagemap.py [--repeat 7] [--bin target/release/foliosim]
         [--save runs.json] [--from runs.json]
"""
import argparse, glob, itertools, json, statistics, subprocess, sys

COLS = ["sim/pagemap_read_calls", "sim/pagemap_walks", "sim/pagemap_entries",
        "sim/pagemap_page_entries",
        "sim/pagemap_pte_tables", "sim/pagemap_holes"]


def run(binary, engine, path):
    """The report of one scenario (the JSON document's only report)."""
    out = subprocess.run([binary, engine, path, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["reports"][0]


def solve(a, b):
    """Least squares by the normal equations (Gaussian elimination)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * y for r, y in zip(a, b))]
         for i in range(n)]
    scale = max(abs(m[i][i]) for i in range(n)) or 1.0
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[p] = m[p], m[i]
        if abs(m[i][i]) < 1e-12 * scale:
            return None  # collinear columns: a smaller active set fits
        for k in range(n):
            if k != i:
                f = m[k][i] / m[i][i]
                m[k] = [x - f * y for x, y in zip(m[k], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def nnls(rows, meas, cols):
    """Minimise sum(((row . x) / meas - 1)^2) over x >= 0."""
    best = None
    for k in range(1, len(cols) + 1):
        for act in itertools.combinations(range(len(cols)), k):
            a = [[r[c] / y for c in act] for r, y in zip(rows, meas)]
            x = solve(a, [1.0] * len(rows))
            if x is None or min(x) < 0:
                continue
            full = [0.0] * len(cols)
            for c, v in zip(act, x):
                full[c] = v
            res = sum((sum(r[i] * full[i] for i in range(len(cols))) / y - 1) ** 2
                      for r, y in zip(rows, meas))
            if best is None or res < best[0] - 1e-12:
                best = (res, full)
    return best[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--bin", default="target/release/foliosim")
    ap.add_argument("--corpus", default="scenarios/calibrate")
    ap.add_argument("--save")
    ap.add_argument("--from", dest="frm")
    args = ap.parse_args()
    if args.frm:
        data = json.load(open(args.frm))
    else:
        data = []
        for path in sorted(glob.glob(f"{args.corpus}/pagemap-*.toml")):
            sim = run(args.bin, "run", path)
            nat = [run(args.bin, "native", path) for _ in range(args.repeat)]
            for i, ph in enumerate(sim["phases"]):
                c = ph["counters"]
                nc = [n["phases"][i]["counters"] for n in nat]
                cpu = next(k for k in nc[0] if k.startswith("native/pagemap_cpu_ns/"))
                wall = next(k for k in nc[0] if k.startswith("native/pagemap_ns/"))
                data.append({"scenario": sim["scenario"], "phase": ph["name"],
                             "counts": {k: c.get(k, 0) for k in COLS},
                             "ns": [n[cpu] for n in nc], "wall_ns": [n[wall] for n in nc]})
        if args.save:
            json.dump(data, open(args.save, "w"), indent=1)
    rows = [[d["counts"][k] for k in COLS] for d in data]
    meas = [statistics.median(d["ns"]) for d in data]
    x = nnls(rows, meas, COLS)
    print(f"{'scenario/phase':40} {'cpu ms':>8} {'wall ms':>8} {'spread':>7} {'fit ms':>8} "
          f"{'err':>7} {'LOO':>7}")
    errs, loos = [], []
    for i, d in enumerate(data):
        fit = sum(a * b for a, b in zip(rows[i], x))
        xl = nnls(rows[:i] + rows[i + 1:], meas[:i] + meas[i + 1:], COLS)
        loo = sum(a * b for a, b in zip(rows[i], xl))
        spread = (max(d["ns"]) - min(d["ns"])) / meas[i]
        e, l = fit / meas[i] - 1, loo / meas[i] - 1
        errs.append(abs(e)); loos.append(abs(l))
        wall = statistics.median(d.get("wall_ns", [0]))
        print(f"{d['scenario'] + '/' + d['phase']:40} {meas[i] / 1e6:8.3f} {wall / 1e6:8.3f} {spread:7.1%} "
              f"{fit / 1e6:8.3f} {e:+7.1%} {l:+7.1%}")
    print(f"fit error median {statistics.median(errs):.1%} worst {max(errs):.1%}; "
          f"leave-one-out median {statistics.median(loos):.1%} worst {max(loos):.1%}")
    for k, v in zip(COLS, x):
        print(f"{k:28} {v:10.2f} ns")


if __name__ == "__main__":
    sys.exit(main())
