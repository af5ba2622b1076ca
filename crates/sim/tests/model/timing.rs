//! Modelled time of the seeds' benchmarks, with the shipped cost
//! profiles (`profiles/x86_64-kvm-host.toml`, `profiles/arm64-neoverse.toml`).
//!
//! What is asserted: the properties that follow from the kernel's rules
//! (which counts a switch changes, and so which costs can differ), and the
//! seeds' published ratios where docs/benchmarks.md reports them reached.
//! The full tables, and the explanation of every ratio the model misses,
//! are in docs/benchmarks.md ("Modelled time").

use crate::common;

use common::load_scenario;
use foliosim_cost::{annotate, default_profile_name, Profile};
use foliosim_report::{render, Format, Report};
use foliosim_sim::{run, RunOptions};

/// Simulate with overrides and annotate with the architecture's shipped
/// profile.
fn timed_report(rel: &str, sets: &[(&str, &str)]) -> Report {
    let sc = load_scenario(rel, sets);
    let mut r = run(&sc, RunOptions::default()).expect("scenario runs");
    let name = default_profile_name(&r.arch).expect("a shipped profile per arch");
    let p = Profile::resolve(name).expect("shipped profile parses");
    annotate(&mut r, &p).expect("profile matches the arch");
    r
}

fn measured_ns(r: &Report) -> f64 {
    let p = r
        .phases
        .iter()
        .find(|p| p.name == "measured")
        .expect("a measured phase");
    p.time.as_ref().expect("modelled time").modelled_ns as f64
}

fn timed(rel: &str, sets: &[(&str, &str)]) -> f64 {
    measured_ns(&timed_report(rel, sets))
}

const SEED000: &str = "seed000/pageout-256m.toml";

/// Seed 000's ratio patched / vanilla for one architecture and folio size.
fn seed000_ratio(arch: &str, mthp_64k: &str) -> f64 {
    let base = [
        ("arch", arch),
        ("transparent_hugepage.hugepages-64kB.enabled", mthp_64k),
    ];
    let vanilla = timed(SEED000, &base);
    let mut sets = base.to_vec();
    sets.push(("series.batch_anon_unmap", "true"));
    timed(SEED000, &sets) / vanilla
}

#[test]
fn seed000_4k_folios_time_is_unchanged_on_both_arches() {
    // The batch of seed 000 (folio_unmap_pte_batch()) only ever covers more
    // than one PTE of a large folio: with 4 KiB folios every try_to_unmap_one()
    // iteration is the vanilla one, so every count, and the time, is equal.
    // The seed: "No regression observed on 4K folios" (ratio 1.00 ± 0.05).
    for arch in ["x86_64", "arm64"] {
        let r = seed000_ratio(arch, "never");
        assert_eq!(r, 1.0, "{arch}");
    }
}

#[test]
fn seed000_64k_batching_saves_more_on_arm64_than_on_x86() {
    // Both architectures drop the per-PTE rmap removals, swap-count lock
    // round trips, walk steps and rss updates to one per folio. x86 keeps
    // its 16 INVLPGs per folio (one flush of 16 pages); arm64 in addition
    // no longer unfolds the contpte block (16 clears + 16 writes + a range
    // TLBI + DSB ISH per folio) and replaces its 16 deferred TLBIs by one
    // range TLBI: so arm64's ratio must be the lower one (seed: 0.47 vs
    // 0.94).
    let x86 = seed000_ratio("x86_64", "always");
    let arm = seed000_ratio("arm64", "always");
    assert!(x86 < 1.0, "x86 {x86}");
    assert!(arm < x86, "arm64 {arm} vs x86 {x86}");
}

#[test]
fn seed000_64k_arm64_ratio_within_the_seeds_tolerance() {
    // The seed (Apple M3 VM): 37.4 -> 17.4 ms, "about 0.47", acceptance
    // +-0.05. The arm64 profile is not fitted to it: its per-byte costs
    // (the zero scan of every page dominates what the batch keeps) come
    // from a published Neoverse V2 bandwidth, its TLBI/DSB costs from a
    // published mesh latency (profiles/arm64-neoverse.toml).
    let r = seed000_ratio("arm64", "always");
    assert!((0.42..=0.52).contains(&r), "arm64 64 KiB ratio {r}");
}

/// Seed 002 at the small scale of docs/benchmarks.md (64 MiB file, 48 MiB
/// reclaimed) with 128 KiB readahead (PTE-mapped 128 KiB folios).
fn seed002(arch: &str, refs: &str, unmap: &str) -> f64 {
    timed(
        "seed002/memcg-reclaim-file.toml",
        &[
            ("arch", arch),
            ("read_ahead_kb", "128"),
            ("system.memory", "256M"),
            ("file.data.size", "64M"),
            ("step.2.size", "64M"),
            ("step.5.amount", "48M"),
            ("series.batch_folio_referenced", refs),
            ("series.batch_file_unmap", unmap),
        ],
    )
}

#[test]
fn seed002_file_unmap_batching_saves_time_on_both_arches() {
    // Patch 5 (measured with patches 1-4 applied, as in the seed) turns the
    // per-PTE unmap of a PTE-mapped file folio into one batch per folio:
    // fewer walk steps, rmap removals, rss updates and flush calls, the
    // same entries cleared. Time must drop on both architectures.
    for arch in ["x86_64", "arm64"] {
        let refs = seed002(arch, "true", "false");
        let both = seed002(arch, "true", "true");
        assert!(both < refs, "{arch}: {both} vs {refs}");
    }
    // x86: the seed reports "50%+" for patch 5 (ratio about 0.5 or lower,
    // acceptance +-0.1): the batch keeps the INVLPGs and drops the per-PTE
    // flush calls, walk steps and rmap removals, priced apart since the
    // MADV_DONTNEED calibration phases separate a flush call from its
    // INVLPGs.
    let x86 = seed002("x86_64", "true", "true") / seed002("x86_64", "true", "false");
    assert!(x86 <= 0.6, "x86 patch-5 ratio {x86}");
    // Patches 1-4 on arm64: vanilla clears all 16 entries of a contiguous
    // block for each of its PTEs (16x the young test-and-clears) and issues
    // a TLBI per young PTE; the batch clears each entry once per folio.
    let vanilla = seed002("arm64", "false", "false");
    let refs = seed002("arm64", "true", "false");
    assert!(refs < vanilla, "{refs} vs {vanilla}");
}

/// Seed 001's one-page-per-page-table workload at 1 GiB (512 page tables;
/// every fault is the same as at 16 GiB, so the ratios are the same).
fn one_per_pt(order: u32) -> f64 {
    let fab = (4096u64 << order).to_string();
    timed(
        "seed001/one-per-pt-16g.toml",
        &[
            ("fault_around_bytes", fab.as_str()),
            ("system.memory", "2G"),
            ("file.data.size", "1G"),
            ("step.1.size", "1G"),
        ],
    )
}

#[test]
fn seed001_one_per_pt_time_grows_with_the_window() {
    // One fault per page table at every order (the table is new, so the
    // window is all none entries): from order 1 on, each fault maps 2^n
    // pages, so the time grows with n, as in the seed's row
    // (0.040 0.045 0.052 0.064 0.079 0.177 0.541 s).
    let orders = [1u32, 3, 4, 5, 7, 9];
    let t: Vec<f64> = orders.iter().map(|&n| one_per_pt(n)).collect();
    for w in t.windows(2) {
        assert!(w[1] > w[0], "{t:?}");
    }
}

/// The model's time ratio `model` at order `n` (to its own order 0) is
/// within 25% of the seed's, `want`.
fn assert_within_25_percent(n: u32, model: f64, want: f64) {
    let q = model / want;
    assert!(
        (0.75..=1.25).contains(&q),
        "order {n}: model {model:.3} seed {want:.3}"
    );
}

#[test]
fn seed001_one_per_pt_ratios_within_25_percent_up_to_order_4() {
    // The seed's one-thread row against its baseline (no fault-around,
    // order 0): 0.039892712 s; orders 1, 3, 4 take 0.045369149,
    // 0.051846126, 0.063681685 s. The acceptance is the model's ratio to
    // its own order 0 within 25% of the seed's. Orders 5, 7 and 9 miss it
    // (docs/benchmarks.md: the per-page mapping cost of this host against
    // its per-fault cost is about twice the seed machine's).
    let seed = [(1u32, 0.045369149), (3, 0.051846126), (4, 0.063681685)];
    let base = one_per_pt(0);
    for (n, t) in seed {
        assert_within_25_percent(n, one_per_pt(n) / base, t / 0.039892712);
    }
}

#[test]
fn modelled_time_is_deterministic_and_adds_up() {
    let a = timed_report(SEED000, &[("arch", "arm64")]);
    let b = timed_report(SEED000, &[("arch", "arm64")]);
    assert_eq!(
        render(std::slice::from_ref(&a), Format::Json),
        render(&[b], Format::Json)
    );
    let t = a.phases[0].time.as_ref().unwrap();
    let sum: u64 = t.breakdown.values().sum();
    // Each share is rounded on its own.
    let slack = t.breakdown.len() as u64;
    assert!(
        sum.abs_diff(t.modelled_ns) <= slack,
        "{sum} vs {}",
        t.modelled_ns
    );
    for k in t.breakdown.keys() {
        assert!(a.phases[0].counters.get(k).is_some_and(|&n| n > 0), "{k}");
    }
}

fn measured_counter(r: &Report, name: &str) -> i64 {
    let p = r.phases.iter().find(|p| p.name == "measured").unwrap();
    p.counters.get(name).copied().unwrap_or(0)
}

#[test]
fn word_touches_walk_the_first_access_and_count_the_other_511_loads() {
    // unit = "word": 4096 / 8 = 512 loads per page; the first goes through
    // the simulated CPU (sim/user_access, possibly a fault), the other 511
    // are counted by order. The faults are those of the page touch: words
    // change no fault (seed 001's minor-fault rows are the same).
    let seq = timed_report("calibrate/words-seq.toml", &[]);
    assert_eq!(measured_counter(&seq, "sim/user_access"), 65536);
    assert_eq!(measured_counter(&seq, "sim/user_loads"), 65536 * 511);
    assert_eq!(measured_counter(&seq, "sim/user_loads_random"), 0);
    assert_eq!(measured_counter(&seq, "pgfault"), 0);
    let small = [
        ("system.memory", "256M"),
        ("file.data.size", "16M"),
        ("step.1.size", "16M"),
    ];
    let rand = timed_report("seed001/random-1g.toml", &small);
    assert_eq!(measured_counter(&rand, "sim/user_loads_random"), 4096 * 511);
    assert_eq!(measured_counter(&rand, "sim/user_loads"), 0);
    let mut pages = small.to_vec();
    pages.push(("step.3.unit", "page"));
    let by_page = timed_report("seed001/random-1g.toml", &pages);
    for c in ["pgfault", "sim/fault_around", "sim/user_access"] {
        assert_eq!(
            measured_counter(&rand, c),
            measured_counter(&by_page, c),
            "{c}"
        );
    }
    assert_eq!(measured_counter(&by_page, "sim/user_loads_random"), 0);
}

#[test]
fn seed001_random_word_ratios_within_25_percent() {
    // The seed's one-thread random row (every word of a 1 GiB file in a
    // random order): baseline 15.351890914 s; orders 1, 3, 4, 5, 7, 9 take
    // 16.613802482, 16.569227308, 15.179220992, 16.557356122,
    // 16.578247824, 15.365266994 s. The model's ratio to its own order 0
    // must be within 25% of the seed's (the target this test holds). The row is
    // dominated by the random loads (13.6 ns each here, about 114 ns per
    // word with the seed's loop), so the faults fault-around removes weigh
    // more here than in the seed: orders 5 and 7 are close to the bound
    // (0.76, 0.75; docs/benchmarks.md).
    let t = |n: u32| {
        let fab = (4096u64 << n).to_string();
        timed(
            "seed001/random-1g.toml",
            &[("fault_around_bytes", fab.as_str())],
        )
    };
    let base = t(0);
    let row = [
        (1u32, 16.613802482),
        (3, 16.569227308),
        (4, 15.179220992),
        (5, 16.557356122),
        (7, 16.578247824),
        (9, 15.365266994),
    ];
    for (n, s) in row {
        assert_within_25_percent(n, t(n) / base, s / 15.351890914);
    }
}
