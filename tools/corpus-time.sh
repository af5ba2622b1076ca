#!/bin/bash
# Whole-corpus wall time: simulator vs native (measured phases and whole runs).
cd "$(dirname "$0")/.."
B=./target/release/foliosim
s0=$(date +%s.%N)
for f in scenarios/corpus/*.toml; do $B run "$f" --format json > /dev/null 2>&1; done
s1=$(date +%s.%N)
phase_ns=0
for f in scenarios/corpus/*.toml; do
  n=$($B native "$f" --format json 2>/dev/null | python3 -c 'import json,sys
try:
  d=json.load(sys.stdin)
  r=d["reports"][0]
  print(sum(p["counters"].get("native/wall_ns",0) for p in r["phases"]))
except Exception: print(0)')
  phase_ns=$((phase_ns + n))
done
s2=$(date +%s.%N)
echo "sim whole runs: $(echo "$s1 - $s0" | bc) s"
echo "native whole runs: $(echo "$s2 - $s1" | bc) s; native measured phases: $(echo "scale=3; $phase_ns/1000000000" | bc) s"
