#!/usr/bin/env python3
"""The error of a cost profile on saved calibration runs it was not fitted to.

    crates/cli/scripts/profile-error.py PROFILE.toml RUNS.json

RUNS.json is what `foliosim calibrate --save-runs` writes (per phase: the
model's counts and every native run's thread CPU time). For every phase
whose median native time is at least 1 ms, prints the median native time,
the profile's modelled time (the sum of count x cost over the counters the
profile prices, as `foliosim run` computes it) and the error; then the
median and worst absolute errors. docs/benchmarks.md uses it for the
out-of-sample check of profiles/x86_64-kvm-host.toml against
profiles/calibration/x86_64-kvm-host.check-runs.json.
"""
import json
import statistics
import sys
import tomllib


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], "rb") as f:
        cost = tomllib.load(f)["cost"]
    with open(sys.argv[2]) as f:
        runs = json.load(f)
    rows = []
    for p in runs["phases"]:
        med = statistics.median(p["thread_cpu_ns"])
        if med < 1e6:
            continue
        model = sum(n * cost[k]["ns"] for k, n in p["counters"].items() if k in cost)
        rows.append((p["name"], med / 1e6, model / 1e6, model / med - 1))
    for name, med, model, err in sorted(rows):
        print(f"{name:45s} {med:10.3f} {model:10.3f} {err * 100:+7.1f}%")
    errs = [abs(r[3]) for r in rows]
    worst = max(rows, key=lambda r: abs(r[3]))
    print(f"{len(rows)} phases: median |error| {statistics.median(errs) * 100:.1f}%, "
          f"worst {abs(worst[3]) * 100:.1f}% ({worst[0]})")


if __name__ == "__main__":
    main()
