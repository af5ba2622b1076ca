#!/usr/bin/env python3
"""Copy the generic kernel costs of profiles/x86_64-kvm-host.toml into
profiles/arm64-neoverse.toml.

The arm64 profile takes every cost it has no arm64 source for equal to the
host profile calibrated on this machine (see its header). Those lines carry
a source starting "assumed equal to x86_64-kvm-host"; this script rewrites
their `ns` (and the calibration date) from the x86_64 profile after a
recalibration, and leaves every derived or assumed arm64-only line alone.
Fails if a generic key is missing from the x86_64 profile.

Usage: tools/calibration/sync-arm64-generic.py [--check]
  --check: exit 1 if the arm64 file is not in sync (writes nothing).
"""
import re, sys

X86 = "profiles/x86_64-kvm-host.toml"
ARM = "profiles/arm64-neoverse.toml"
LINE = re.compile(r'^"(?P<key>[^"]+)" = \{ ns = (?P<ns>[0-9.]+)(?P<mid>.*?)source = "(?P<src>[^"]*)" \}$')


def fmt(ns):
    """The profile files' precision: one decimal from 100 ns, two from 1 ns, four below."""
    if ns >= 100:
        return f"{ns:.1f}"
    if ns >= 1:
        return f"{ns:.2f}"
    return f"{ns:.4f}"


def costs(path):
    out = {}
    for line in open(path):
        m = LINE.match(line.rstrip("\n"))
        if m:
            out[m["key"]] = (float(m["ns"]), m["src"])
    return out


def main():
    check = "--check" in sys.argv[1:]
    x86 = costs(X86)
    date = re.search(r"on (\d{4}-\d{2}-\d{2})", open(X86).readline())
    date = date[1] if date else None
    out, changed = [], 0
    for line in open(ARM):
        m = LINE.match(line.rstrip("\n"))
        if m and m["src"].startswith("assumed equal to x86_64-kvm-host"):
            key = m["key"]
            if key not in x86:
                sys.exit(f"{ARM}: {key} is assumed equal to x86_64-kvm-host, which has no such cost")
            src = m["src"]
            if date:
                src = re.sub(r"this machine \d{4}-\d{2}-\d{2}", f"this machine {date}", src)
            new = f'"{key}" = {{ ns = {fmt(x86[key][0])}{m["mid"]}source = "{src}" }}\n'
            changed += new != line
            line = new
        out.append(line)
    if check:
        if changed:
            sys.exit(f"{ARM}: {changed} generic costs differ from {X86} (run this script)")
        return
    open(ARM, "w").write("".join(out))
    print(f"{ARM}: {changed} lines updated from {X86}")


if __name__ == "__main__":
    main()
