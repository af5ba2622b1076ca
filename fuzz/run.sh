#!/usr/bin/env bash
# Build the fuzz targets with libFuzzer's coverage instrumentation (the
# flags cargo-fuzz passes; stable Rust is enough) and run each for a time.
#   fuzz/run.sh [SECONDS_PER_TARGET]      default 30 (CI); days for a long run
# The corpus of interesting inputs is kept in fuzz/corpus/<target>/; new
# finds are added there, crashes are written to fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-30}
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions"
# An explicit --target keeps the flags off build scripts, as cargo-fuzz does.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --bins --target "$host"
for t in scenario model; do
    mkdir -p "corpus/$t" "artifacts/$t"
    "target/$host/release/$t" "corpus/$t" -max_total_time="$secs" -max_len=4096 \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 2>&1 | tail -12
done
