//! Raw pagemap entries, simulator against the host kernel: every
//! `scenarios/corpus/pagemap-*.toml` scenario runs in both engines and each
//! `raw = true` pagemap step's entries must be equal once the PFNs of
//! present entries are masked (swap type and offset are compared as they
//! are). Root only; skips otherwise. The corpus test compares the summaries.

mod common;

use common::*;
use foliosim_kernel::fs::proc::task_mmu::pagemap_mask_pfn;
use foliosim_native::{run, NativeOptions};

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
        let sim = foliosim_sim::run(
            &sc,
            foliosim_sim::RunOptions {
                check: true,
                ..Default::default()
            },
        )
        .expect("simulation");
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
