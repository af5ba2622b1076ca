#!/bin/sh
# The wait of a cold file read, for the `[wait]` price of sim/pages_read_io
# (docs/cost-model.md): `foliosim native` reads a cold 512 MiB file through
# a mapping N times (default 7) and prints the medians of the phase's wall
# time and of the reading thread's CPU time, and their difference per page
# read from the device (sim/pages_read_io in the model: 131,072).
# The host's readahead window is used (`foliosim probe`; the native engine
# does not change it). Usage: sudo tools/calibration/read-wait.sh [repeats] [foliosim]
set -eu
repeats=${1:-7}
bin=${2:-target/release/foliosim}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ra=$("$bin" probe 2>/dev/null | sed -n 's/^read_ahead_kb = \([0-9]*\).*/\1/p')
cat > "$dir/read-cold.toml" <<'S'
name = "read-cold"
description = "A cold 512 MiB file read through a mapping."
[system]
transparent_hugepage.enabled = "never"
[[file]]
name = "data"
size = "512M"
fill = "cold"
[[step]]
op = "mmap"
region = "f"
kind = "file"
file = "data"
size = "512M"
prot = "r"
[[step]]
op = "phase"
name = "read"
[[step]]
op = "touch"
region = "f"
access = "read"
S
"$bin" native --repeat "$repeats" --no-expect --set read_ahead_kb="$ra" \
    --format json -o "$dir/out.json" "$dir/read-cold.toml"
python3 - "$dir/out.json" <<'P'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))["reports"]
c = [r["phases"][0]["counters"] for r in runs]
wall = statistics.median(x["native/wall_ns"] for x in c)
cpu = statistics.median(x["native/thread_cpu_ns"] for x in c)
pages = 512 * 256
print(f"wall {wall / 1e6:.1f} ms, thread CPU {cpu / 1e6:.1f} ms, "
      f"wait {(wall - cpu) / pages:.0f} ns per page read ({len(c)} runs)")
P
