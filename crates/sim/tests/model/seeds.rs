//! The seed benchmarks' fault counts (issue: core acceptance).
//!
//! Expected values come from the kernel's rules, derived in each test, and
//! are compared with the seed posts' measured rows (which include the test
//! program's own start-up faults, hence a small positive slack).

use crate::common;

use common::{assert_counters, load_scenario};
use foliosim_report::Report;
use foliosim_sim::{run, RunOptions};

fn run_with(rel: &str, sets: &[(&str, String)]) -> Report {
    let sc = load_scenario(rel, sets);
    run(&sc, RunOptions::default()).expect("scenario runs")
}

/// Run with a fault-around window of 2^`n` pages.
fn with_window(rel: &str, n: u32) -> Report {
    run_with(rel, &[("fault_around_bytes", format!("4096<<{n}"))])
}

/// Run with 64 KiB mTHP set to `mode`.
fn with_64k(rel: &str, mode: &str) -> Report {
    run_with(
        rel,
        &[("transparent_hugepage.hugepages-64kB.enabled", mode.into())],
    )
}

/// The seed's measured count at order `n` exceeds the model's `want` by 0
/// to `max` (the test program's own start-up faults).
fn assert_seed_slack(n: u32, seed: i64, want: i64, max: i64) {
    let slack = seed - want;
    assert!(
        (0..=max).contains(&slack),
        "order {n}: seed {seed} vs model {want}"
    );
}

fn measured(r: &Report, counter: &str) -> i64 {
    r.value("measured", counter)
        .unwrap_or_else(|| panic!("no {counter}")) as i64
}

/// Run `rel` with every fault-around order `n` of [`ORDERS`]: the model's
/// pgfault must be `want(n)`, which the seed's row `seed` exceeds by 0 to
/// `max` ([`assert_seed_slack`]). The runs with their order and `want`,
/// for more checks.
fn each_window(
    rel: &str,
    seed: &[i64; 7],
    max: i64,
    want: impl Fn(u32) -> i64,
) -> Vec<(u32, Report, i64)> {
    ORDERS
        .iter()
        .zip(seed)
        .map(|(&n, &row)| {
            let r = with_window(rel, n);
            let want = want(n);
            assert_eq!(measured(&r, "pgfault"), want, "order {n}");
            assert_seed_slack(n, row, want, max);
            (n, r, want)
        })
        .collect()
}

/// The seed's FAULT_AROUND_ORDER values.
const ORDERS: [u32; 7] = [0, 1, 3, 4, 5, 7, 9];

/// Seed 001, "Sequential access 16GiB file, 1 thread".
const SEED_SEQ: [i64; 7] = [
    4_195_437, 2_098_275, 525_068, 262_251, 131_170, 32_856, 8_282,
];
/// Seed 001, "Random access 1GiB file, 1 thread".
const SEED_RANDOM: [i64; 7] = [262_636, 132_743, 34_369, 17_299, 8_527, 3_451, 1_222];
/// Seed 001, "Touch only one page in page table in 16GiB file, 1 thread".
const SEED_ONE_PER_PT: [i64; 7] = [8_372, 8_324, 8_270, 8_260, 8_249, 8_239, 8_237];

/// With order-0 page-cache folios, a fault-around window of 2^n pages
/// (do_fault_around(): VA-aligned, inside one page table) maps every page of
/// the window, so each window faults exactly once: 16 GiB / 4 KiB = 2^22
/// pages give 2^22 >> n faults. n = 0 disables fault-around (one page per
/// fault through filemap_fault() and finish_fault()).
#[test]
fn seed001_sequential_16g() {
    let runs = each_window("seed001/seq-16g.toml", &SEED_SEQ, 1200, |n| {
        (1i64 << 22) >> n
    });
    for (n, r, want) in runs {
        assert_eq!(measured(&r, "minor-faults"), want, "order {n}");
        assert_eq!(measured(&r, "major-faults"), 0);
        // Fault-around calls ->map_pages once per fault; without it,
        // every fault goes through filemap_fault().
        let map_pages = if n == 0 { 0 } else { want };
        assert_eq!(measured(&r, "filemap:mm_filemap_map_pages"), map_pages);
        assert_eq!(
            measured(&r, "filemap:mm_filemap_fault"),
            if n == 0 { want } else { 0 }
        );
    }
}

/// Random order: still one fault per window, because the first touch of a
/// window maps all of it: 1 GiB = 2^18 pages give 2^18 >> n faults.
#[test]
fn seed001_random_1g() {
    each_window("seed001/random-1g.toml", &SEED_RANDOM, 1700, |n| {
        (1i64 << 18) >> n
    });
}

/// One page per 2 MiB: every touch is in a new page table, so every touch
/// faults whatever the window: 16 GiB / 2 MiB = 8192.
#[test]
fn seed001_one_page_per_page_table() {
    for (n, r, _) in each_window("seed001/one-per-pt-16g.toml", &SEED_ONE_PER_PT, 200, |_| {
        8192
    }) {
        // The window maps min(2^n, 512) pages per fault.
        let pages = 8192 * (1i64 << n).min(512);
        assert_eq!(r.phases[0].folios["file"]["4kB"] as i64, pages);
    }
}

/// Seed 003: only 64 KiB enabled (always). A write fault allocates a 64 KiB
/// folio and maps all 16 PTEs (do_anonymous_page() + alloc_anon_folio()):
/// 256 MiB / 64 KiB = 4096 faults and 4096 allocations.
#[test]
fn seed003_64k_always() {
    let r = with_64k("seed003/anon-scan.toml", "always");
    assert_counters(
        &r,
        "measured",
        "pgfault=4096 hugepages-64kB/anon_fault_alloc=4096 hugepages-64kB/anon_fault_fallback=0",
    );
    assert_eq!(r.phases[0].folios["heap"]["64kB"], 4096);
}

/// 64 KiB on `madvise` without MADV_HUGEPAGE is not allowed
/// (`__thp_vma_allowable_orders()`, mm/huge_memory.c truth table), and the top
/// level is madvise so PMD THP is off too: one 4 KiB fault per page, 65536, and
/// no mTHP allocation.
#[test]
fn seed003_64k_madvise_without_hint() {
    let r = with_64k("seed003/anon-scan.toml", "madvise");
    assert_counters(
        &r,
        "measured",
        "pgfault=65536 hugepages-64kB/anon_fault_alloc=0 thp_fault_alloc=0",
    );
}

/// A read pass maps the zero page one PTE per fault (read faults never allocate
/// mTHP); the write pass then finds non-none PTEs in every block, so each write
/// COWs the zero page into a 4 KiB folio (`do_anonymous_page()` and
/// `alloc_anon_folio()`, mm/memory.c, observed on 6.18.44): 65536 + 65536
/// faults, no mTHP allocation.
#[test]
fn seed003_read_then_write() {
    let r = with_64k("seed003/anon-read-then-write.toml", "always");
    let read = &r.phases[0];
    let write = &r.phases[1];
    assert_eq!(read.counters["pgfault"], 65536);
    assert_eq!(read.folios["heap"]["zero"], 65536);
    assert_eq!(write.counters["pgfault"], 65536);
    assert_eq!(write.counters["hugepages-64kB/anon_fault_alloc"], 0);
    assert_eq!(write.folios["heap"]["4kB"], 65536);
}

/// Byte-identical output for the same inputs.
#[test]
fn output_is_deterministic() {
    let a = run_with(
        "seed001/random-1g.toml",
        &[("fault_around_bytes", "65536".into())],
    );
    let b = run_with(
        "seed001/random-1g.toml",
        &[("fault_around_bytes", "65536".into())],
    );
    let fa = foliosim_report::render(&[a], foliosim_report::Format::Json);
    let fb = foliosim_report::render(&[b], foliosim_report::Format::Json);
    assert_eq!(fa, fb);
}
