#!/usr/bin/env bash
# The simulator against the host kernel on scenarios/seed000/pageout-256m
# (64 KiB folios, a swap file, MADV_PAGEOUT of 256 MiB): the host's
# measured phase (`foliosim native --no-trace`, native/wall_ns) and the
# whole simulator process (`foliosim run`, wall time), alternating,
# N rounds (default 11); prints each median and their ratio. Needs root.
#
#   sudo tools/bench/pageout-vs-host.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
F=$(realpath "${FOLIOSIM:-target/release/foliosim}")
N=${1:-11}
S=(scenarios/seed000/pageout-256m.toml
    --set transparent_hugepage.hugepages-64kB.enabled=always --set swap.0.kind=file)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$N"); do
    "$F" native --no-trace "${S[@]}" -q --format csv -o "$tmp/native.csv"
    awk -F, '$4 == "measured" && $6 == "native/wall_ns" { print $7 / 1e6 }' \
        "$tmp/native.csv" >>"$tmp/host.ms"
    start=$EPOCHREALTIME
    "$F" run "${S[@]}" -q -o /dev/null
    end=$EPOCHREALTIME
    awk -v a="$start" -v b="$end" 'BEGIN { print (b - a) * 1000 }' >>"$tmp/sim.ms"
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
h=$(median "$tmp/host.ms")
s=$(median "$tmp/sim.ms")
echo "host kernel $(uname -r), measured phase, median of $N: $h ms"
echo "simulator, whole process (wall), median of $N: $s ms"
awk -v h="$h" -v s="$s" 'BEGIN { printf "simulator %.1fx faster\n", h / s }'
