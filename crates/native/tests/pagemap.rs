//! Raw pagemap entries, simulator against the host kernel: every
//! `scenarios/corpus/pagemap-*.toml` scenario runs in both engines and each
//! `raw = true` pagemap step's entries must be equal once the PFNs of
//! present entries are masked (swap type and offset are compared as they
//! are). Root only; skips otherwise. The corpus test compares the summaries.

mod common;

use common::*;
use foliosim_native::NativeOptions;
use foliosim_uapi::pagemap::pagemap_mask_pfn;

#[test]
fn raw_pagemap_entries_equal_the_host_kernel() {
    let _s = serial();
    if skip_unless_root("raw_pagemap_entries_equal_the_host_kernel") {
        return;
    }
    let files = corpus_files("pagemap-");
    assert!(files.len() >= 10, "{} pagemap scenarios", files.len());
    let work = TempDir::new("pagemap");
    let opts = NativeOptions {
        workdir: work.0.clone(),
        ..NativeOptions::default()
    };
    let mut steps = 0;
    for path in &files {
        let sc = load_with_host_knobs(path, &work.0);
        let native =
            run(&sc, &opts).unwrap_or_else(|e| panic!("{}: native run: {e}", path.display()));
        let sim = simulate_checked(&sc);
        for (sp, np) in sim.phases.iter().zip(&native.phases) {
            for (name, s) in &sp.pagemap {
                let n = np
                    .pagemap
                    .get(name)
                    .unwrap_or_else(|| panic!("{}: no native raw {name}", path.display()));
                assert_eq!(s.len(), n.len(), "{}: {name}", path.display());
                for (i, (a, b)) in s.iter().zip(n).enumerate() {
                    assert_eq!(
                        pagemap_mask_pfn(*a),
                        pagemap_mask_pfn(*b),
                        "{}: step {name} entry {i}: sim {a:#x} native {b:#x}",
                        path.display()
                    );
                }
                steps += 1;
            }
        }
    }
    assert!(steps >= 12, "{steps} raw pagemap steps compared");
}

/// The model's run of `sc`, with the invariant checker after every step.
fn simulate_checked(sc: &foliosim_scenario::Scenario) -> foliosim_report::Report {
    let opts = foliosim_sim::RunOptions {
        check: true,
        ..Default::default()
    };
    foliosim_sim::run(sc, opts).expect("simulation")
}
/// Folio maps (`map = true`) from pagemap, kpageflags and PAGEMAP_SCAN
/// equal the model's page by page (the contiguous bit aside, which no host
/// interface shows): 64 KiB mTHP folios, the 4, 16 and 32 KiB folios of
/// refaults after an unaligned MADV_DONTNEED (`alloc_anon_folio()` takes the
/// largest enabled order whose aligned range is empty), zero pages
/// (`do_anonymous_page()` on a read), the huge zero page and a PMD-mapped
/// THP (`do_huge_pmd_anonymous_page()` under MADV_HUGEPAGE), holes.
#[test]
fn folio_maps_equal_the_model() {
    let _s = serial();
    if skip_unless_root("folio_maps_equal_the_model") {
        return;
    }
    let text = r#"
name = "folio-maps"
[system]
memory = "512M"
transparent_hugepage.hugepages-16kB.enabled = "always"
transparent_hugepage.hugepages-32kB.enabled = "always"
transparent_hugepage.hugepages-64kB.enabled = "always"
[[step]]
op = "mmap"
region = "buf"
kind = "anon"
size = "4M"
map = true
[[step]]
op = "mmap"
region = "thp"
kind = "anon"
size = "4M"
madvise = ["hugepage"]
map = true
[[step]]
op = "phase"
name = "fault"
[[step]]
op = "touch"
region = "buf"
access = "write"
len = "3M"
[[step]]
op = "touch"
region = "buf"
access = "read"
offset = "3M"
len = "64K"
[[step]]
op = "touch"
region = "thp"
access = "write"
len = "2M"
[[step]]
op = "touch"
region = "thp"
access = "read"
offset = "2M"
len = "64K"
[[step]]
op = "phase"
name = "refault"
[[step]]
op = "madvise"
region = "buf"
advice = "dontneed"
offset = "100K"
len = "200K"
[[step]]
op = "touch"
region = "buf"
access = "write"
offset = "100K"
len = "200K"
"#;
    let sc = scenario(text);
    let work = TempDir::new("folio-maps");
    let opts = NativeOptions {
        workdir: work.0.clone(),
        ..NativeOptions::default()
    };
    let native = run(&sc, &opts).unwrap_or_else(|e| panic!("native run: {e}"));
    let sim = simulate_checked(&sc);
    let mut compared = 0;
    for (sp, np) in sim.phases.iter().zip(&native.phases) {
        for region in ["buf", "thp"] {
            let s = &sp.maps[region];
            let n = np
                .maps
                .get(region)
                .unwrap_or_else(|| panic!("no native map of {region} in {}", np.name));
            assert_eq!(s.first_index, n.first_index, "{region} in {}", sp.name);
            assert_eq!(s.pages.len(), n.pages.len(), "{region} in {}", sp.name);
            for (i, (a, b)) in s.pages.iter().zip(&n.pages).enumerate() {
                assert_eq!(
                    a, b,
                    "{region} in {}: page {i}: sim {a:#x} native {b:#x}",
                    sp.name
                );
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 4);
    // The kernel's shapes, in the native map: a huge zero PMD after the
    // read of the MADV_HUGEPAGE region's second 2 MiB, a PMD-mapped order-9
    // folio in its first, and 4 KiB folios among the refaults.
    use foliosim_report::PageState;
    let thp = &native.phases[0].maps["thp"].pages;
    let pmd = PageState::Present {
        order: 9,
        pmd: true,
        contpte: false,
    };
    assert!(thp[..512].iter().all(|&b| b == pmd.encode()));
    assert!(thp[512..]
        .iter()
        .all(|&b| b == PageState::Zero { huge: true }.encode()));
    let buf = &native.phases[1].maps["buf"].pages;
    assert_eq!(
        PageState::decode(buf[25]).and_then(PageState::order),
        Some(0)
    );
    assert_eq!(
        PageState::decode(buf[28]).and_then(PageState::order),
        Some(2)
    );
}
