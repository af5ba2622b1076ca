#!/usr/bin/env bash
# Build the fuzz targets with libFuzzer's coverage instrumentation (the
# flags cargo-fuzz passes; stable Rust is enough), run the kept regression
# inputs through them, then fuzz each target for a time.
#   fuzz/run.sh [SECONDS_PER_TARGET]      default 30 (CI); days for a long run
#   FUZZ_TARGETS="engines tables" fuzz/run.sh 3600    some targets only
#   FUZZ_PROFILE=ci fuzz/run.sh 30    built faster, run slower (CI's profile)
# The targets run side by side, one process each.
# The corpus of interesting inputs is kept in fuzz/corpus/<target>/; new
# finds are added there, crashes are written to fuzz/artifacts/<target>/.
# An input running longer than 10 s is a crash (-timeout), as is one
# taking more than 2 GiB (-rss_limit_mb).
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-30}
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions"
# An explicit --target keeps the flags off build scripts, as cargo-fuzz does.
host=$(rustc -vV | sed -n 's/^host: //p')
profile=${FUZZ_PROFILE:-release}
cargo build --profile "$profile" --bins --target "$host"
bin=target/$host/$profile
limits=(-timeout=10 -rss_limit_mb=2048)
# The regression inputs: every one through the whole simulated run; all
# but the 10^6 phases through the parser alone too (parsing those needs
# more than the 2 GiB limit: the engines target refuses them first).
regr=$(mktemp -d)
trap 'rm -rf "$regr"' EXIT
./regressions.sh "$regr"
"$bin/engines" "${limits[@]}" "$regr"/*.toml 2>&1 | tail -3
"$bin/scenario" "${limits[@]}" "$regr"/munmap-*.toml "$regr"/files-*.toml 2>&1 | tail -3
# The targets fuzz at the same time, each in one process (on a machine
# with fewer cores than targets they share them); each one's last lines
# and final statistics are printed when all have stopped.
targets=(${FUZZ_TARGETS:-scenario model engines tables})
pids=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    # Reports and sweep tables of a few points are tens of KiB.
    len=4096
    [ "$t" = tables ] && len=131072
    "$bin/$t" "corpus/$t" "${limits[@]}" -max_total_time="$secs" -max_len="$len" \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$regr/$t.log" 2>&1 &
    pids+=($!)
done
failed=()
for i in "${!targets[@]}"; do
    wait "${pids[$i]}" || failed+=("${targets[$i]}")
done
for t in "${targets[@]}"; do
    echo "fuzz: $t"
    tail -12 "$regr/$t.log"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
