#!/usr/bin/env python3
"""The global-reclaim tables of docs/benchmarks.md, from the kept guest runs.

usage: tools/bench/global-reclaim-tables.py [--foliosim BIN] [--mglru] KERNEL...

For each `scenarios/guest/global-reclaim-*.toml` with kept runs of KERNEL
(`runs/guest/S.KERNEL.json`, with `--mglru` `runs/guest/S.mglru.KERNEL.json`,
and their `.b`/`.c` files), every guest run is compared on its own machine
(`foliosim compare --runs`, one run at a time), and a markdown row gives,
model / guest, the range over the runs of: pswpout; pgsteal and pgscan,
anon and file together; minor faults; the regions' resident pages; and the
workload's direct reclaims (allocstall, movable and normal).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

# The phase each scenario's row reports.
ROWS = [
    ("global-reclaim-anon-swapfile", "write"),
    ("global-reclaim-anon-zram", "write"),
    ("global-reclaim-anon-64k", "write"),
    ("global-reclaim-file-read", "read1"),
    ("global-reclaim-file-read", "read2"),
    ("global-reclaim-file-mmap", "read1"),
    ("global-reclaim-file-mmap", "read2"),
    ("global-reclaim-mixed", "file"),
    ("global-reclaim-two-processes", "child"),
]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def kept_runs(scenario, kernel, mglru):
    """The kept files of a scenario on a kernel, first run first."""
    stem = os.path.join(ROOT, "runs", "guest", f"{scenario}.{'mglru.' if mglru else ''}{kernel}")
    first = [stem + ".json"] if os.path.exists(stem + ".json") else []
    return first + sorted(glob.glob(stem + ".*.json"))


def figures(row):
    """The figures of one phase's compare rows: {name: (model, guest)}."""
    got = {r["name"]: (r["sim"], r["native"]) for r in row["rows"]}

    def pair(*names):
        return tuple(sum(got.get(n, (0, 0))[i] for n in names) for i in (0, 1))

    resident = [n for n in got if n.startswith("folios/") and n.endswith("/pages_present")]
    return {
        "pswpout": pair("pswpout"),
        "pgsteal_anon": pair("pgsteal_anon"),
        "pgsteal_file": pair("pgsteal_file"),
        "pgsteal": pair("pgsteal_anon", "pgsteal_file"),
        "pgscan": pair("pgscan_anon", "pgscan_file"),
        "minor": pair("minor-faults"),
        "resident": pair(*resident),
        "allocstall": pair("allocstall_movable", "allocstall_normal"),
    }


def compare_one(foliosim, scenario, report, envelope, tmp):
    """Compare one guest run (a report of a kept file) with the model."""
    path = os.path.join(tmp, "run.json")
    with open(path, "w") as f:
        json.dump({**envelope, "reports": [report]}, f)
    toml = os.path.join(ROOT, "scenarios", "guest", scenario + ".toml")
    out = subprocess.run(
        [foliosim, "compare", "--runs", path, "--format", "json", toml],
        capture_output=True,
        text=True,
        check=False,
    )
    if not out.stdout:
        sys.exit(f"foliosim compare {scenario}: {out.stderr.strip()}")
    return {ph["name"]: figures(ph) for ph in json.loads(out.stdout)["comparisons"][0]["phases"]}


def span(values):
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def cell(runs, key, blank_if_zero=True):
    model = [r[key][0] for r in runs]
    guest = [r[key][1] for r in runs]
    if blank_if_zero and not any(model) and not any(guest):
        return ""
    return f"{span(model)} / {span(guest)}"


def table(foliosim, kernel, mglru):
    lines = [
        "| scenario (phase) | pswpout | pgsteal | pgscan | minor faults | resident | allocstall |",
        "|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cache = {}
        for scenario, phase in ROWS:
            if scenario not in cache:
                runs = []
                for path in kept_runs(scenario, kernel, mglru):
                    with open(path) as f:
                        kept = json.load(f)
                    envelope = {k: v for k, v in kept.items() if k not in ("reports", "repeat")}
                    for report in kept["reports"]:
                        runs.append(compare_one(foliosim, scenario, report, envelope, tmp))
                cache[scenario] = runs
            runs = [r[phase] for r in cache[scenario] if phase in r]
            if not runs:
                continue
            steal = cell(runs, "pgsteal")
            if scenario == "global-reclaim-mixed":
                steal = f"anon {cell(runs, 'pgsteal_anon', False)}; file {cell(runs, 'pgsteal_file', False)}"
            lines.append(
                f"| `{scenario}` ({phase}) | {cell(runs, 'pswpout')} | {steal} | "
                f"{cell(runs, 'pgscan')} | {cell(runs, 'minor', False)} | "
                f"{cell(runs, 'resident')} | {cell(runs, 'allocstall', False)} |"
            )
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--foliosim", default=os.path.join(ROOT, "target", "release", "foliosim"))
    ap.add_argument("--mglru", action="store_true", help="the runs with MGLRU on")
    ap.add_argument("kernel", nargs="+", help="e.g. 6.18.35-x86_64")
    args = ap.parse_args()
    for kernel in args.kernel:
        print(f"{kernel}:\n\n{table(args.foliosim, kernel, args.mglru)}\n")


if __name__ == "__main__":
    main()
