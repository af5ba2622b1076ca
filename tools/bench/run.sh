#!/usr/bin/env bash
# Regenerates one table of docs/benchmarks.md and prints it (Markdown, or
# the command output the document shows) on standard output.
#
#   tools/bench/run.sh TABLE        tools/bench/run.sh list
#
# Needs a built foliosim (FOLIOSIM, default target/release/foliosim:
# `cargo build --release`). The simulator tables take seconds; `speed`
# builds and runs a divan benchmark (minutes). Tables measured on a host
# kernel or in a guest say what they need and how to rerun them, and exit 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
F=$(realpath "${FOLIOSIM:-target/release/foliosim}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run OUT ARGS...: a simulated run as CSV in $tmp/OUT.
run() {
    local out=$1
    shift
    "$F" run "$@" -q --no-expect --format csv -o "$tmp/$out"
}

# get OUT PHASE NAME: one value of a run (0 when the report lacks it).
get() {
    awk -F, -v p="$2" -v n="$3" '$4 == p && $6 == n { v = $7 } END { print v + 0 }' "$tmp/$1"
}

# ms NS: nanoseconds as milliseconds with one decimal.
ms() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1e6 }'; }

# ratio A B: A / B with three decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# thousands N: 1234567 as 1,234,567.
thousands() { printf "%s" "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }

# folios OUT PHASE REGION: the non-zero folio-size cells, "N × SIZE" joined by " + ".
folios() {
    awk -F, -v p="$2" -v r="folios/$3/" '
        $4 == p && index($6, r) == 1 && $7 > 0 {
            b = substr($6, length(r) + 1)
            if (b ~ /^[0-9]+[kM]B$/) {
                n = $7
                while (n ~ /[0-9][0-9][0-9][0-9]/) { sub(/[0-9][0-9][0-9]($|,)/, ",&", n) }
                sub(/[kM]B$/, " &", b)
                s = s (s ? " + " : "") n " × " b
            }
        }
        END { print s }' "$tmp/$1"
}

FA_ORDERS=(0 1 3 4 5 7 9)

seed001() {
    # The seed's figures (2014 kernel, 4-socket x86), per FAULT_AROUND_ORDER
    # 0 1 3 4 5 7 9: minor faults, and time relative to no fault-around.
    local -A faults=(
        [seq-16g]="4195437 2098275 525068 262251 131170 32856 8282"
        [random-1g]="262636 132743 34369 17299 8527 3451 1222"
        [one-per-pt-16g]="8372 8324 8270 8260 8249 8239 8237")
    local -A rel=(
        [seq-16g]="1.000 0.891 0.758 0.757 0.787 0.814 0.705"
        [random-1g]="1.000 1.082 1.079 0.989 1.079 1.080 1.001"
        [one-per-pt-16g]="1.000 1.137 1.300 1.596 1.983 4.425 13.567")
    local s i n
    for s in seq-16g random-1g one-per-pt-16g; do
        local seedf=(${faults[$s]}) seedr=(${rel[$s]}) pf=() ns=()
        for i in "${!FA_ORDERS[@]}"; do
            n=${FA_ORDERS[$i]}
            run "$s-$n" "scenarios/seed001/$s.toml" --set "fault_around_bytes=4096<<$n"
            pf[$i]=$(get "$s-$n" measured pgfault)
            ns[$i]=$(get "$s-$n" measured modelled_ns)
        done
        echo "scenarios/seed001/$s.toml, minor faults:"
        echo
        echo "| n | seed | model | seed − model |"
        echo "|---|---:|---:|---:|"
        for i in "${!FA_ORDERS[@]}"; do
            echo "| ${FA_ORDERS[$i]} | $(thousands "${seedf[$i]}") | $(thousands "${pf[$i]}") | $(thousands $((seedf[i] - pf[i]))) |"
        done
        echo
        echo "scenarios/seed001/$s.toml, modelled time of the measured phase:"
        echo
        local row1="| n |" row2="|---|" row3="| model ms |" row4="| model / n=0 |"
        local row5="| seed / baseline |" row6="| model ÷ seed |"
        for i in "${!FA_ORDERS[@]}"; do
            local r
            r=$(ratio "${ns[$i]}" "${ns[0]}")
            row1+=" ${FA_ORDERS[$i]} |"
            row2+="---:|"
            row3+=" $(ms "${ns[$i]}") |"
            row4+=" $r |"
            row5+=" ${seedr[$i]} |"
            row6+=" $(awk -v a="$r" -v b="${seedr[$i]}" 'BEGIN { printf "%.2f", a / b }') |"
        done
        printf '%s\n' "$row1" "$row2" "$row3" "$row4" "$row5" "$row6"
        echo
    done
}

seed003() {
    local always=(--set transparent_hugepage.hugepages-64kB.enabled=always)
    run always scenarios/seed003/anon-scan.toml "${always[@]}"
    run madvise scenarios/seed003/anon-scan.toml --set transparent_hugepage.hugepages-64kB.enabled=madvise
    run rw scenarios/seed003/anon-read-then-write.toml "${always[@]}"
    echo "| configuration | pgfault | hugepages-64kB/anon_fault_alloc | folios |"
    echo "|---|---:|---:|---|"
    local c
    for c in always madvise; do
        echo "| 64 KiB \`$c\` | $(thousands "$(get $c measured pgfault)") | $(thousands "$(get $c measured hugepages-64kB/anon_fault_alloc)") | $(folios $c measured heap) |"
    done
    local zr
    zr=$(get rw read folios/heap/zero)
    echo "| 64 KiB \`always\`, read pass then write pass | $(thousands "$(get rw read pgfault)") + $(thousands "$(get rw write pgfault)") | $(($(get rw read hugepages-64kB/anon_fault_alloc) + $(get rw write hugepages-64kB/anon_fault_alloc))) | $(thousands "$zr") zero pages, then $(folios rw write heap) |"
}

SEED000_COUNTERS=(sim/lru_isolate sim/swap_alloc sim/folio_split sim/pvmw_iterations
    sim/ttu_clear_calls sim/pte_clear sim/pte_write tlb:tlb_flush sim/invlpg
    sim/swap_count_lock sim/rss_stat_update sim/rmap_remove hugepages-64kB/swpout
    hugepages-64kB/swpout_fallback hugepages-64kB/split pswpout sim/ptep_get
    sim/contpte_unfold sim/tlbi_page sim/tlbi_range sim/dsb_ishst sim/dsb_ish)

seed000-counts() {
    local arch c k
    local -a cols=("never file 0" "always file 0" "always block 0" "always block 1")
    for arch in x86_64 arm64; do
        for k in "${!cols[@]}"; do
            local v=(${cols[$k]})
            run "$arch-$k" scenarios/seed000/pageout-256m.toml --arch "$arch" \
                --set "transparent_hugepage.hugepages-64kB.enabled=${v[0]}" \
                --set "swap.0.kind=${v[1]}" --set "series.batch_anon_unmap=${v[2]}" \
                --set step.2.access=write
        done
        echo "$arch:"
        echo
        echo "| counter | 4 KiB, swap file | 64 KiB, swap file | 64 KiB, block | 64 KiB, block + seed 000 |"
        echo "|---|---:|---:|---:|---:|"
        for c in "${SEED000_COUNTERS[@]}"; do
            local line="| \`$c\` |"
            for k in "${!cols[@]}"; do line+=" $(get "$arch-$k" measured "$c") |"; done
            echo "$line"
        done
        echo
    done
}

seed000-sweep() {
    "$F" sweep --file sweeps/seed000-pageout.toml -q -o "$tmp/pageout.csv"
    "$F" diff "$tmp/pageout.csv" --by series.batch_anon_unmap --only modelled_ns
}

seed000-sweep-all() {
    "$F" sweep --file sweeps/seed000-pageout.toml -q -o "$tmp/pageout.csv"
    "$F" diff "$tmp/pageout.csv" --by series.batch_anon_unmap
}

seed000-time() {
    local arch f s
    echo "| arch | folios | vanilla ms | seed 000 ms | ratio | seed's ratio |"
    echo "|---|---|---:|---:|---:|---:|"
    for arch in x86_64 arm64; do
        for f in 4 64; do
            local st=never seed=1.00
            [ $f = 64 ] && st=always
            [ $f = 64 ] && { [ $arch = x86_64 ] && seed=0.94 || seed=0.47; }
            for s in 0 1; do
                run "$arch-$f-$s" scenarios/seed000/pageout-256m.toml --arch $arch \
                    --set "transparent_hugepage.hugepages-64kB.enabled=$st" --set "series.batch_anon_unmap=$s"
            done
            local a b
            a=$(get "$arch-$f-0" measured modelled_ns)
            b=$(get "$arch-$f-1" measured modelled_ns)
            echo "| $arch | $f KiB | $(ms "$a") | $(ms "$b") | $(ratio "$b" "$a") | $seed |"
        done
    done
}

SEED002_COUNTERS=(pgscan_file pgsteal_file sim/folio_referenced sim/pvmw_referenced
    sim/young_test_and_clear sim/young_flush sim/ptep_get sim/contpte_gather_reads
    sim/pvmw_iterations sim/rss_stat_update sim/rmap_remove sim/contpte_unfold
    sim/tlbbatch_add_pending sim/tlbbatch_flush tlb:tlb_flush sim/invlpg
    sim/tlb_flush_all sim/tlbi_page sim/tlbi_range sim/dsb_ishst sim/dsb_ish thp_split_pmd)

# The scales of seed 002: 64 MiB file (48 MiB reclaimed) with readahead 8 MiB,
# 10 GiB with 128 KiB, 10 GiB with 8 MiB (the scenario), 64 MiB with 128 KiB.
SMALL002="--set system.memory=256M --set file.data.size=64M --set step.2.size=64M --set step.5.amount=48M"
SEED002_SCALES=("$SMALL002" "--set read_ahead_kb=128" "" "$SMALL002 --set read_ahead_kb=128")
SEED002_SWITCHES=("" "--set series.batch_folio_referenced=1"
    "--set series.batch_folio_referenced=1 --set series.batch_file_unmap=1")

# seed002-runs SCALE...: every arch and switch combination at those scales.
seed002-runs() {
    local arch sc sw
    for arch in x86_64 arm64; do
        for sc in "$@"; do
            for sw in 0 1 2; do
                # shellcheck disable=SC2086
                run "$arch-$sc-$sw" scenarios/seed002/memcg-reclaim-file.toml --arch $arch \
                    ${SEED002_SCALES[$sc]} ${SEED002_SWITCHES[$sw]}
            done
        done
    done
}

seed002-counts() {
    seed002-runs 0 1 2
    local arch c sc sw
    for arch in x86_64 arm64; do
        echo "$arch:"
        echo
        echo "| counter | 64 MiB | + refs | + refs + unmap | 10 GiB, ra 128 KiB | + refs | + refs + unmap | 10 GiB, ra 8 MiB | + refs | + refs + unmap |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        for c in "${SEED002_COUNTERS[@]}"; do
            local line="| \`$c\` |" any=0
            for sc in 0 1 2; do
                for sw in 0 1 2; do
                    local v
                    v=$(get "$arch-$sc-$sw" measured "$c")
                    [ "$v" != 0 ] && any=1
                    line+=" $v |"
                done
            done
            [ $any = 1 ] && echo "$line"
        done
        echo
    done
}

seed002-time() {
    seed002-runs 3 1
    local arch sc
    echo "| arch | scale | vanilla ms | + refs (1-4) ms | + refs + unmap (5) ms | ratio 5 | seed's ratio 5 |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for arch in x86_64 arm64; do
        local seed="≤ 0.5"
        [ $arch = arm64 ] && seed=0.245
        for sc in 3 1; do
            local name="64 MiB" a b c
            [ $sc = 1 ] && name="10 GiB"
            a=$(get "$arch-$sc-0" measured modelled_ns)
            b=$(get "$arch-$sc-1" measured modelled_ns)
            c=$(get "$arch-$sc-2" measured modelled_ns)
            echo "| $arch | $name, ra 128 KiB | $(ms "$a") | $(ms "$b") | $(ms "$c") | $(ratio "$c" "$b") | $seed |"
        done
    done
}

seed004() {
    local s=scenarios/seed004/pagemap-shmem.toml w b
    echo "| walk | batch | \`read_calls\` | \`walks\` | \`entries\` | \`overwalk_entries\` (with a page) | option: \`pagecache_lookups\` |"
    echo "|---|---|---|---|---|---|---|"
    for w in 0 1; do
        for b in 1 512; do
            run "w$w-$b" $s --set "series.pagemap_walk_to_pmd_end=$w" --set "step.6.read_size=$((b * 8))"
            run "w$w-$b-opt" $s --set "series.pagemap_walk_to_pmd_end=$w" --set "step.6.read_size=$((b * 8))" \
                --set series.pagemap_shmem_swap=1
            local name=6.18 p=w$w-$b
            [ $w = 1 ] && name=pre-6.5
            echo "| $name | $b | $(get $p pagemap sim/pagemap_read_calls) | $(get $p pagemap sim/pagemap_walks) | $(get $p pagemap sim/pagemap_entries) | $(get $p pagemap sim/pagemap_overwalk_entries) ($(get $p pagemap sim/pagemap_overwalk_page_entries)) | $(get $p-opt pagemap sim/pagemap_pagecache_lookups) |"
        done
    done
    echo
    echo "| batch | pre-6.5 walk: vanilla ms | option ms | ratio | 6.18 walk: vanilla ms | option ms | ratio |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for b in 1 2 8 64 512 1024; do
        local line="| $b |"
        for w in 1 0; do
            run v $s --set "series.pagemap_walk_to_pmd_end=$w" --set "step.6.read_size=$((b * 8))"
            run o $s --set "series.pagemap_walk_to_pmd_end=$w" --set "step.6.read_size=$((b * 8))" \
                --set series.pagemap_shmem_swap=1
            local v o
            v=$(get v pagemap modelled_ns)
            o=$(get o pagemap modelled_ns)
            line+=" $(awk -v v="$v" 'BEGIN { printf "%.3f", v / 1e6 }') | $(awk -v v="$o" 'BEGIN { printf "%.3f", v / 1e6 }') | $(awk -v a="$o" -v b="$v" 'BEGIN { printf "%.2f", a / b }') |"
        done
        echo "$line"
    done
}

calibration() {
    "$F" calibrate --from-runs profiles/calibration/x86_64-kvm-host.runs.json \
        --exclude pagemap- --out "$tmp/profile.toml" 2>&1 | sed '/^group scales/,$d'
}

calibration-check() {
    "$F" calibrate --from-runs profiles/calibration/x86_64-kvm-host.check-runs.json \
        --check profiles/x86_64-kvm-host.toml 2>&1
}

shrinkage() {
    local l
    echo "| λ | LOO median % | LOO worst % | fit median % |"
    echo "|---:|---:|---:|---:|"
    for l in 0 0.003 0.01 0.015 0.02 0.025 0.03 0.04 0.05 0.07 0.1 0.3; do
        "$F" calibrate --from-runs profiles/calibration/x86_64-kvm-host.runs.json \
            --exclude pagemap- --shrink "$l" --out "$tmp/p.toml" 2>&1 |
            awk -v l="$l" '/^fit:/ {
                gsub(/[%,;]/, "")
                # fit: median |error| F worst W leave-one-out: median LM worst LW
                print "| " l " | " $9 " | " $11 " | " $4 " |" }'
    done
}

speed() {
    nice cargo bench -q -p foliosim-sim --bench fault_around 2>&1 | grep -v '^$'
    echo
    /usr/bin/time -f "whole run: %e s, peak RSS %M KB" "$F" run scenarios/seed001/seq-16g.toml -q -o /dev/null
    /usr/bin/time -f "1 GiB random: %e s, peak RSS %M KB" "$F" run scenarios/seed001/random-1g.toml -q -o /dev/null
}

needs() {
    echo "tools/bench/run.sh $1: measured $2; rerun with: $3" >&2
    exit 2
}

case "${1:-list}" in
    seed001 | seed003 | seed000-counts | seed000-sweep | seed000-sweep-all | seed000-time | \
        seed002-counts | seed002-time | seed004 | calibration | calibration-check | shrinkage | speed) "$1" ;;
    # The model against the kept guest runs of runs/guest/ (seconds).
    global-reclaim) python3 tools/bench/global-reclaim-tables.py --foliosim "$F" \
        6.18.35-arm64 7.1.5-x86_64 7.1.5-arm64 ;;
    global-reclaim-mglru) python3 tools/bench/global-reclaim-tables.py --foliosim "$F" --mglru \
        6.18.35-x86_64 6.18.35-arm64 7.1.5-x86_64 7.1.5-arm64 ;;
    corpus-time) needs "$1" "natively (root)" "sudo tools/corpus-time.sh" ;;
    pageout-vs-host) needs "$1" "natively (root)" "sudo tools/bench/pageout-vs-host.sh" ;;
    native-corpus) needs "$1" "natively (root)" \
        "sudo cargo test --release -p foliosim-native --test corpus" ;;
    native-agreement | native-threads) needs "$1" "natively (root)" \
        "sudo foliosim compare scenarios/corpus/NAME.toml, per row" ;;
    vm-corpus) needs "$1" "in QEMU guests" \
        "foliosim compare --engine vm --kernel KERNEL SCENARIO, per scenario (docs/vm.md)" ;;
    calibration-runs) needs "$1" "natively (root)" \
        "sudo foliosim calibrate --repeat 11 --exclude pagemap- --save-runs RUNS" ;;
    pagemap-costs) needs "$1" "natively (root)" \
        "sudo foliosim calibrate --pagemap --repeat 11; tools/calibration/pagemap-walk.sh; tools/calibration/mincore-shmem.sh" ;;
    properties) needs "$1" "over about 7 CPU-hours" \
        "FOLIOSIM_PROP_STEPS=1000000 FOLIOSIM_PROP_CASES=100 cargo test --release -p foliosim-sim --test model -- --ignored long_random_runs" ;;
    list)
        echo "simulator: seed001 seed003 seed000-counts seed000-sweep seed000-sweep-all seed000-time"
        echo "           seed002-counts seed002-time seed004 calibration calibration-check shrinkage speed"
        echo "kept guest runs: global-reclaim global-reclaim-mglru"
        echo "host (root): corpus-time pageout-vs-host native-corpus native-agreement native-threads"
        echo "             calibration-runs pagemap-costs"
        echo "guest (QEMU): vm-corpus"
        echo "long: properties"
        ;;
    *)
        echo "tools/bench/run.sh: unknown table '$1' (tools/bench/run.sh list)" >&2
        exit 2
        ;;
esac
