#!/usr/bin/env python3
"""Pool the runs of several `foliosim calibrate --save-runs` files into one,
phase by phase (how profiles/calibration/x86_64-kvm-host.runs.json was made
from two rounds of 11 runs). The files must list the same phases with the
same counts, and all be traced or all untraced (a file without the
"traced" key is traced, as `calibrate --from-runs` reads it).

Usage: tools/calibration/pool-runs.py OUT IN1 IN2 [...]
"""
import json, sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, ins = sys.argv[1], sys.argv[2:]
    runs = [json.load(open(f)) for f in ins]
    traced = {r.get("traced", True) for r in runs}
    if len(traced) != 1:
        sys.exit("pool-runs: traced and untraced runs cannot be pooled")
    base = runs[0]
    names = [p["name"] for p in base["phases"]]
    for f, r in zip(ins[1:], runs[1:]):
        if [p["name"] for p in r["phases"]] != names:
            sys.exit(f"pool-runs: {f}: not the phases of {ins[0]}")
        for p, q in zip(base["phases"], r["phases"]):
            if p["counters"] != q["counters"]:
                sys.exit(f"pool-runs: {f}: {p['name']}: other counts (recount first)")
            p["thread_cpu_ns"] += q["thread_cpu_ns"]
            p["wall_ns"] += q["wall_ns"]
            p["fault_mismatch"] = p["fault_mismatch"] or q["fault_mismatch"]
    for k in ("load_start", "load_end"):
        base[k] = ", ".join(f"{r[k]} (round {i + 1})" for i, r in enumerate(runs))
    base["traced"] = traced.pop()
    with open(out, "w") as f:
        json.dump(base, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
