#!/usr/bin/env bash
# Makes the pictures in docs/report/ and docs/report.png: folio maps of
# every page state (mixed.toml), and seed 000's
# MADV_PAGEOUT of 256 MiB on arm64 with 64 KiB folios, vanilla (base)
# against series.batch_anon_unmap (patched), folio maps after the fault and
# the pageout phases, a sweep of the buffer size × the series × the
# architecture, and the seed 000 sweep's pictures and report
# (docs/report-sweep.png). Needs a built foliosim (FOLIOSIM, default
# target/release/foliosim) and, for the screenshot, chromium
# (tools/setup-report.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
F=$(realpath "${FOLIOSIM:-target/release/foliosim}")
out=docs/report
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mthp=(--set transparent_hugepage.hugepages-64kB.enabled=always)

"$F" run $out/pageout-64k.toml --arch arm64 "${mthp[@]}" --format json -o "$tmp/base.json"
"$F" run $out/pageout-64k.toml --arch arm64 "${mthp[@]}" --set series.batch_anon_unmap=true \
    --format json -o "$tmp/patched.json"

# The sweep: buffer size × the series × the architecture.
"$F" sweep $out/pageout-64k.toml "${mthp[@]}" -q --grid arch=x86_64,arm64 \
    --grid step.1.size=16M,32M,64M,128M,256M --grid series.batch_anon_unmap=0,1 \
    -o "$tmp/sweep.csv"

# The 72-point seed 000 sweep of the README, as pictures: modelled time
# against the folio size, a panel per arch and swap kind; what the series
# changes, as a heatmap; and the sweep's HTML report.
"$F" sweep --file sweeps/seed000-pageout.toml -q -o "$tmp/seed000.arrow"
"$F" plot "$tmp/seed000.arrow" --y modelled_ns --x folio_size --phase measured \
    --facet arch,swap.0.kind -o $out/seed000-sweep.svg
"$F" plot "$tmp/seed000.arrow" --by series.batch_anon_unmap --y modelled_ns \
    -o $out/seed000-change.svg
(cd "$tmp" && "$F" report seed000.arrow --by series.batch_anon_unmap \
    --facet arch,swap.0.kind -q -o seed000.html)

"$F" run $out/mixed.toml --arch arm64 --format json -o "$tmp/mixed.json"
"$F" plot --map "$tmp/mixed.json" --phase end --region buf -o $out/map-mixed.png
"$F" plot --map "$tmp/mixed.json" --phase end --region thp -o $out/map-thp.png
"$F" plot --map "$tmp/base.json" --phase fault --region buf -o $out/map-fault.png
"$F" plot --map "$tmp/base.json" --phase pageout --region buf -o $out/map-pageout.png
"$F" plot "$tmp/sweep.csv" --y modelled_ns --x step.1.size --phase pageout -o $out/sweep-pageout.svg
(cd "$tmp" && "$F" report base.json patched.json sweep.csv \
    --y modelled_ns --y sim/tlbi_page --phase pageout -o report.html)
cp "$tmp/report.html" "${REPORT_HTML:-/dev/null}"
if command -v chromium >/dev/null; then
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$tmp/profile" --window-size=1280,2600 \
        --screenshot="$PWD/docs/report.png" "file://$tmp/report.html" 2>/dev/null
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$tmp/profile" --window-size=1440,1500 \
        --screenshot="$PWD/docs/report-sweep.png" "file://$tmp/seed000.html" 2>/dev/null
else
    echo "make.sh: no chromium (tools/setup-report.sh); docs/report*.png not made" >&2
fi
