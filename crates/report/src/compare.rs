//! The simulator beside the host kernel (`foliosim compare`).
//!
//! Per phase and counter: the simulated value, the native value and their
//! difference, judged by [`default_tolerance`]: counters the native engine
//! measures per process ([`EXACT`]), the folio histograms and the swap
//! counters are deterministic on the host and compared exactly;
//! `tlb:tlb_flush` and its per-reason parts ([`TLB_REASONS`]) within 1% or
//! 4 events (background work on the mm) and 3 more per fork;
//! `pgscan_anon` / `pgscan_file` and their `pgsteal_` twins (reclaim's
//! volume, whoever reclaimed) within 5%; a memory cgroup's usage, peak and
//! swap within 1% or [`MEMCG_USAGE_SLACK`]; other system-wide counters pick up
//! other processes' activity and are shown for information. The scenario's
//! `[[expect]]`s on judged counters are evaluated against the native result,
//! and a judged counter with an `[[expect]]` is compared within that
//! expectation's tolerance when it is wider than the default.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::Report;
use foliosim_uapi::counters::{
    self, CounterKind, COLLAPSE_HUGE_PAGE, FILEMAP_FAULT, FILEMAP_MAP_PAGES, FOLIOS_PREFIX,
    KHUGEPAGED_COLLAPSE_FILE, KHUGEPAGED_SCAN_FILE, KHUGEPAGED_SCAN_PMD, MAJOR_FAULTS,
    MINOR_FAULTS, PAGEMAP_PREFIX, PAGE_FAULT_USER, TLB_FLUSH,
};
use serde_json::{json, Value};

/// Counters compared exactly by default.
pub const EXACT: [&str; 5] = [
    MINOR_FAULTS,
    MAJOR_FAULTS,
    PAGE_FAULT_USER,
    FILEMAP_MAP_PAGES,
    FILEMAP_FAULT,
];

/// Tracepoints of MADV_COLLAPSE, counted for the workload (khugepaged's
/// hits are in its own thread): exact when a scenario collapses, and not
/// shown otherwise.
const COLLAPSE_EXACT: [&str; 4] = [
    KHUGEPAGED_SCAN_PMD,
    COLLAPSE_HUGE_PAGE,
    KHUGEPAGED_SCAN_FILE,
    KHUGEPAGED_COLLAPSE_FILE,
];

/// Swap counters: system-wide, but nothing else on the host swaps.
const SWAP_EXACT: [&str; 8] = [
    "pswpout",
    "pswpin",
    "swap_ra",
    "swap_ra_hit",
    "swpout_zero",
    "swpin_zero",
    "thp_swpout",
    "thp_swpout_fallback",
];
/// zswap's events: system-wide, nothing else on a guest swaps; within 1%
/// (the compressed sizes are approximated, which moves the pool limit).
const ZSWAP_EVENTS: [&str; 3] = ["zswpout", "zswpin", "zswpwb"];

/// Per-size swap and split stats, compared exactly. `split_deferred` and
/// the `nr_anon_partially_mapped` gauge are not: any process that unmaps
/// part of a large folio moves them (on a busy host, dozens per second).
const SIZE_EXACT: [&str; 4] = ["/swpout", "/swpout_fallback", "/swpin", "/split"];

/// How far the native value may be from the simulated one: Some(relative
/// tolerance) (0.0 = exact), None = shown for information only.
pub fn default_tolerance(name: &str) -> Option<f64> {
    if EXACT.contains(&name)
        || name.starts_with(FOLIOS_PREFIX)
        || SWAP_EXACT.contains(&name)
        || COLLAPSE_EXACT.contains(&name)
    {
        return Some(0.0);
    }
    if name.starts_with(PAGEMAP_PREFIX) {
        return pagemap_tolerance(name);
    }
    if name.starts_with("kmem:mm_page_alloc/order=") {
        return Some(0.0);
    }
    if name.starts_with("hugepages-") && SIZE_EXACT.iter().any(|s| name.ends_with(s)) {
        return Some(0.0);
    }
    if name == TLB_FLUSH || TLB_REASONS.contains(&name) {
        return Some(0.01);
    }
    // Reclaim's volume, by the type of page: the sum over every reclaimer.
    // Who reclaimed (`pgscan_kswapd` / `pgscan_direct` and their
    // `pgsteal_` twins) is a race between kswapd and the allocating task
    // that the kernel does not repeat from run to run: shown only.
    if (name.starts_with("pgscan_") || name.starts_with("pgsteal_"))
        && (name.ends_with("_anon") || name.ends_with("_file"))
    {
        return Some(0.05);
    }
    if ZSWAP_EVENTS.contains(&name)
        || (name.starts_with("hugepages-") && name.ends_with("/zswpout"))
    {
        return Some(0.01);
    }
    // The pool's size depends on where zsmalloc put each object.
    if name == "zswap/pool_total_size" {
        return Some(0.05);
    }
    if name.starts_with("zswap/") {
        return Some(0.01);
    }
    // The result of a memcg_limit step's write is the scenario's, not the
    // machine's.
    if name.starts_with("memcg/") && name.ends_with("/limit_write_ebusy") {
        return Some(0.0);
    }
    if counters::is_memcg_level(name) {
        return Some(0.01);
    }
    // A cgroup's zswap statistics, as the machine's.
    const MEMCG_ZSWAP: [&str; 5] = ["/zswpout", "/zswpin", "/zswpwb", "/zswapped", "/zswap"];
    if name.starts_with("memcg/") && MEMCG_ZSWAP.iter().any(|s| name.ends_with(s)) {
        return Some(0.01);
    }
    None
}

/// How far the kernel may be from the model, under global memory
/// pressure, on a counter judged more closely without it: kswapd races the
/// workload for the pages it reclaims (which pages, and so which later
/// fault, swap-in or refault), and the kernel does not repeat itself from
/// run to run.
pub const PRESSURE_TOLERANCE: f64 = 0.05;

/// How far the kernel's `allocstall_*` (the workload's entries into direct
/// reclaim) may be from the model's under global memory pressure: how often
/// kswapd falls behind is the race itself.
pub const ALLOCSTALL_TOLERANCE: f64 = 0.25;

/// Whether the model's machine reclaimed globally in phase `p`: kswapd
/// scanned, or an allocation entered direct reclaim outside any memory
/// cgroup (`allocstall_*` counts only those, `do_try_to_free_pages()`).
/// The model decides it, not the kernel run: a kernel under pressure the
/// model does not predict is held to the rules without pressure, and a
/// host's unrelated kswapd work never loosens them.
pub fn under_global_pressure(p: &crate::Phase) -> bool {
    p.counters
        .iter()
        .any(|(k, v)| *v > 0 && (k == "pgscan_kswapd" || k.starts_with("allocstall_")))
}

/// [`default_tolerance`] in a phase under global memory pressure when
/// `pressure` is set: every judged counter within [`PRESSURE_TOLERANCE`]
/// at least, and `allocstall_*` judged within [`ALLOCSTALL_TOLERANCE`].
/// Which pages a mapping keeps is the race's outcome, so the page-by-page
/// pagemap rows are shown, not judged; their census counts are.
pub fn tolerance(name: &str, pressure: bool) -> Option<f64> {
    if !pressure {
        return default_tolerance(name);
    }
    if name.starts_with("allocstall_") {
        return Some(ALLOCSTALL_TOLERANCE);
    }
    default_tolerance(name).map(|t| t.max(PRESSURE_TOLERANCE))
}

/// Whether a native measurement of counter `name` is judged: a miss of
/// an `[[expect]]` on it fails a native run. Counters the native engine
/// measures for the workload alone and the deterministic system-wide ones
/// (swap) are; `tlb:tlb_flush` as a whole and the other system-wide
/// counters pick up other processes' work and are shown for information.
pub fn judged_natively(name: &str) -> bool {
    default_tolerance(name).is_some() && name != TLB_FLUSH
}

/// Pagemap step results are exact, except the kpageflags bits that follow
/// the host's LRU batching and reclaim timing (shown for information).
fn pagemap_tolerance(name: &str) -> Option<f64> {
    const TIMING: [&str; 6] = [
        "/kpf/lru",
        "/kpf/active",
        "/kpf/referenced",
        "/kpf/dirty",
        "/kpf/writeback",
        "/kpf/reclaim",
    ];
    if TIMING.iter().any(|t| name.ends_with(t)) {
        None
    } else {
        Some(0.0)
    }
}

/// Kernel function calls a guest counted beside the model counters they
/// equal ([`counters::KFUNCS`]), exactly; functions the guest could not
/// probe are left out.
/// A kernel function's row is exact, or within the widest tolerance of an
/// `[[expect]]` on the model counter it is compared with (a count the
/// kernel varies by a call or two that the model cannot).
fn kfunc_rows(
    sim: &Report,
    phase: &str,
    sp: Option<&crate::Phase>,
    np: Option<&crate::Phase>,
) -> Vec<Row> {
    let (Some(sp), Some(np)) = (sp, np) else {
        return Vec::new();
    };
    // The workload's calls, then kswapd's (`kswapd/kfunc/...` against the
    // model's `kswapd/sim/...`).
    let whose = ["", counters::KSWAPD_PREFIX];
    let kswapd_counts = counters::kswapd_model_counters();
    let kswapd_counts = &kswapd_counts;
    whose
        .iter()
        .flat_map(|who| {
            counters::KFUNCS
                .iter()
                .filter(|k| !k.model.is_empty())
                // The model reports only some counts as its kswapd's own.
                .filter(move |k| {
                    who.is_empty() || k.model.iter().all(|c| kswapd_counts.contains(c))
                })
                .map(move |k| (*who, k))
        })
        .filter_map(|(who, k)| {
            let n = *np
                .counters
                .get(&format!("{who}{}{}", counters::KFUNC_PREFIX, k.name))?;
            let model: Vec<String> = k.model.iter().map(|c| format!("{who}{c}")).collect();
            let s: i64 = model.iter().filter_map(|c| sp.counters.get(c)).sum();
            if s == 0 && n == 0 {
                return None;
            }
            let name = format!(
                "{who}{}{} = {}",
                counters::KFUNC_PREFIX,
                k.name,
                model.join(" + ")
            );
            let slack = model
                .iter()
                .map(|c| expect_slack(sim, phase, c))
                .fold(0.0, f64::max);
            Some(Row {
                expect_slack: slack,
                ..Row::exact(name, Some(s), Some(n))
            })
        })
        .collect()
}

/// Raw pagemap entries of the steps both reports kept: for each step, the
/// entries that differ once the PFNs of present entries are masked (swap
/// frames are compared as they are).
fn raw_pagemap_rows(sp: Option<&crate::Phase>, np: Option<&crate::Phase>) -> Vec<Row> {
    let (Some(sp), Some(np)) = (sp, np) else {
        return Vec::new();
    };
    let mask = |e: u64| {
        if e >> 63 != 0 {
            e & !((1u64 << 55) - 1)
        } else {
            e
        }
    };
    sp.pagemap
        .iter()
        .filter_map(|(name, s)| {
            let n = np.pagemap.get(name)?;
            let diff = s.len().abs_diff(n.len())
                + s.iter()
                    .zip(n)
                    .filter(|(a, b)| mask(**a) != mask(**b))
                    .count();
            Some(Row::mismatches(
                format!("pagemap/{name}/raw_mismatches"),
                diff,
            ))
        })
        .collect()
}

/// `maps/<region>/mismatches`: the pages whose folio-map states differ
/// when both runs have a map of the region, after clearing the contpte
/// mark (no host interface shows the contiguous bit) and a length
/// difference counted as mismatches too.
fn map_rows(sp: Option<&crate::Phase>, np: Option<&crate::Phase>) -> Vec<Row> {
    let (Some(sp), Some(np)) = (sp, np) else {
        return Vec::new();
    };
    let strip = |b: u8| match crate::PageState::decode(b) {
        Some(crate::PageState::Present { order, pmd, .. }) => crate::PageState::Present {
            order,
            pmd,
            contpte: false,
        }
        .encode(),
        _ => b,
    };
    sp.maps
        .iter()
        .filter_map(|(region, s)| {
            let n = np.maps.get(region)?;
            let differ = s
                .pages
                .iter()
                .zip(&n.pages)
                .filter(|(a, b)| strip(**a) != strip(**b))
                .count()
                + s.pages.len().abs_diff(n.pages.len());
            Some(Row::mismatches(format!("maps/{region}/mismatches"), differ))
        })
        .collect()
}

/// Events `tlb:tlb_flush` (and its remote-shootdown part) may differ by
/// whatever the relative tolerance.
pub const TLB_FLUSH_SLACK: f64 = 4.0;

/// More TLB flushes `tlb:tlb_flush` may differ by per fork in the phase
/// (the model's `sim/dup_mm`): a forked child of the native workload
/// copies on write some of its own memory (its stack, the engine's
/// state) before its counters open, and those faults' flushes count for
/// the workload (two to three per fork measured: a 29-process `make
/// -j2` replay flushed 59 more times natively).
pub const FORK_FLUSH_SLACK: f64 = 3.0;

/// Bytes a cgroup's usage, peak and swap (`memcg/<n>/usage_bytes`,
/// `peak_bytes`, `swap_bytes`) may differ by whatever the relative
/// tolerance: the
/// kernel charges ahead up to `MEMCG_CHARGE_BATCH` (64) pages into the
/// stock of each CPU the workload ran on, where the model has one CPU,
/// and charges slab objects the model does not (VMAs, anon_vmas, the
/// task's own allocations): 256 pages.
pub const MEMCG_USAGE_SLACK: f64 = (256 * 4096) as f64;

/// `tlb:tlb_flush` reasons judged like the total, within 1% or 4 events:
/// the workload's own flushes (`remote_ipi_send`, `local_mm_shootdown`,
/// `local_shootdown`) also include those of its set-up around a fork (its
/// own copy-on-write, not corrected) and differ by reclaim's batching
/// under a memcg limit; `remote_shootdown` also counts flushes of the mm
/// that other CPUs start (khugepaged, kswapd, DAMON). Not judged:
/// `remote_wrong_cpu` (other processes' IPIs to a CPU still in their
/// `mm_cpumask()` land in a workload thread too) and `task_switch` (fired
/// between two tasks' perf contexts, never a workload event). A scenario's
/// `[[expect]]` on a judged reason gates `compare` with its own tolerance.
pub const TLB_REASONS: [&str; 4] = [
    "tlb:tlb_flush/remote_ipi_send",
    "tlb:tlb_flush/local_mm_shootdown",
    "tlb:tlb_flush/local_shootdown",
    "tlb:tlb_flush/remote_shootdown",
];

/// One compared cell.
struct Row {
    name: String,
    sim: Option<i64>,
    native: Option<i64>,
    tolerance: Option<f64>,
    /// Simulated events the host may have done before the run: the huge
    /// zero folio is allocated once per boot (until a shrinker frees it),
    /// so the model's first-use allocation may be absent natively.
    host_state: i64,
    /// The widest distance a scenario's `[[expect]]` on this counter and
    /// phase allows (its `tolerance`, or `value × p%`), 0 without one.
    expect_slack: f64,
    /// The forks the phase made (the model's `sim/dup_mm`).
    forks: i64,
    /// Against repeated runs: the smallest and largest value the runs
    /// measured (`native` is their median).
    range: Option<(i64, i64)>,
    /// Against repeated guest runs, the model on each run's machine: the
    /// smallest and largest value it simulated (`sim` is their median).
    sim_range: Option<(i64, i64)>,
}

impl Row {
    /// A row compared exactly (no tolerance, no host state, no
    /// expectation).
    fn exact(name: String, sim: Option<i64>, native: Option<i64>) -> Row {
        Row {
            name,
            sim,
            native,
            tolerance: Some(0.0),
            host_state: 0,
            expect_slack: 0.0,
            forks: 0,
            range: None,
            sim_range: None,
        }
    }

    /// A count of mismatches between the runs, which must be 0.
    fn mismatches(name: String, count: usize) -> Row {
        Row::exact(name, Some(0), Some(count as i64))
    }

    /// Absolute slack: a few TLB flushes come from the host's background
    /// work on the workload's mm (khugepaged, page-cache eviction).
    fn slack(&self) -> f64 {
        let slack = if self.name == TLB_FLUSH || TLB_REASONS.contains(&self.name.as_str()) {
            TLB_FLUSH_SLACK + FORK_FLUSH_SLACK * self.forks as f64
        } else if counters::is_memcg_level(&self.name) {
            MEMCG_USAGE_SLACK
        } else {
            0.0
        };
        slack.max(self.expect_slack)
    }

    /// Whether the model disagrees: with the model on several machines,
    /// both ends of its range must agree (a value between them then does
    /// too: the distance allowed grows with the value, the distance to the
    /// runs' range shrinks toward it).
    fn mismatch(&self) -> bool {
        match self.sim_range {
            Some((lo, hi)) => self.mismatch_at(Some(lo)) || self.mismatch_at(Some(hi)),
            None => self.mismatch_at(self.sim),
        }
    }

    /// [`Row::mismatch`] for the simulated value `sim`.
    fn mismatch_at(&self, sim: Option<i64>) -> bool {
        let Some(t) = self.tolerance else {
            return false;
        };
        match (sim, self.native) {
            (Some(s), Some(n)) => {
                // Against repeated runs, the nearest value of their range.
                let n = self.range.map_or(n, |(lo, hi)| s.clamp(lo, hi));
                let off = if n < s {
                    (s - n - self.host_state).max(0)
                } else {
                    n - s
                };
                off as f64 > (t * s.abs() as f64).max(self.slack())
            }
            // A counter the host cannot provide is missing, not a mismatch.
            (_, None) => false,
            (None, Some(n)) => match self.range {
                Some((lo, hi)) => lo > 0 || hi < 0,
                None => n != 0,
            },
        }
    }
}

fn rows(sim: &Report, native: &Report, phase: &str) -> Vec<Row> {
    let sp = sim.phases.iter().find(|p| p.name == phase);
    let np = native.phases.iter().find(|p| p.name == phase);
    let pressure = sp.is_some_and(under_global_pressure);
    let mut out = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    if let Some(p) = sp {
        names.extend(
            p.counters
                .iter()
                .filter(|(k, v)| **v != 0 || EXACT.contains(&k.as_str()))
                .map(|(k, _)| k.clone()),
        );
    }
    // Judged counters the host saw but the model did not.
    if let Some(p) = np {
        let judged = |k: &String| {
            tolerance(k, pressure).is_some()
                && (sp.is_some_and(|s| s.counters.contains_key(k)) || k.starts_with(PAGEMAP_PREFIX))
        };
        names.extend(
            p.counters
                .iter()
                .filter(|(k, v)| **v != 0 && judged(k))
                .map(|(k, _)| k.clone()),
        );
    }
    for name in names {
        let s = sp.and_then(|p| p.counters.get(&name).copied());
        let n = np.and_then(|p| p.counters.get(&name).copied());
        if n.is_none() && counters::kind(&name) == CounterKind::ModelOnly {
            continue;
        }
        let host_state = if name == "kmem:mm_page_alloc/order=9" {
            sp.and_then(|p| p.counters.get("thp_zero_page_alloc").copied())
                .unwrap_or(0)
        } else {
            0
        };
        let forks = sp
            .and_then(|p| p.counters.get(counters::SIM_DUP_MM).copied())
            .unwrap_or(0);
        out.push(Row {
            host_state,
            forks,
            tolerance: tolerance(&name, pressure),
            expect_slack: expect_slack(sim, phase, &name),
            name,
            sim: s,
            native: n,
            range: None,
            sim_range: None,
        });
    }
    // Under pressure the kernel functions and folio histograms are judged
    // as `tolerance()` judges the counters, and which pages a mapping
    // keeps (the page-by-page rows) is the race's outcome: shown only.
    let judged = |r: Row| Row {
        tolerance: r.tolerance.map(|t| match pressure {
            true => t.max(PRESSURE_TOLERANCE),
            false => t,
        }),
        ..r
    };
    let by_page = |r: Row| Row {
        tolerance: r.tolerance.filter(|_| !pressure),
        ..r
    };
    out.extend(kfunc_rows(sim, phase, sp, np).into_iter().map(judged));
    out.extend(raw_pagemap_rows(sp, np).into_iter().map(by_page));
    out.extend(map_rows(sp, np).into_iter().map(by_page));
    let mut cells: BTreeSet<(String, String)> = BTreeSet::new();
    for p in [sp, np].into_iter().flatten() {
        for (r, h) in &p.folios {
            cells.extend(h.keys().map(|b| (r.clone(), b.clone())));
        }
    }
    for (r, b) in cells {
        let get = |p: Option<&crate::Phase>| {
            p.map(|p| {
                p.folios
                    .get(&r)
                    .and_then(|h| h.get(&b))
                    .copied()
                    .unwrap_or(0) as i64
            })
        };
        let name = format!("folios/{r}/{b}");
        out.push(judged(Row {
            expect_slack: expect_slack(sim, phase, &name),
            ..Row::exact(name, get(sp), get(np))
        }));
    }
    out
}

/// The distance a scenario's `[[expect]]`s on `name` in `phase` allow
/// (the widest; 0 without one): a counter the host measures with a spread
/// the model cannot have (readahead I/O timing, kernel memory charged to a
/// cgroup) is compared within the tolerance its expectation states.
fn expect_slack(report: &Report, phase: &str, name: &str) -> f64 {
    report
        .expectations
        .iter()
        .filter(|e| e.phase == phase && e.counter == name)
        .map(|e| match e.tolerance.strip_suffix('%') {
            Some(p) => p.parse::<f64>().unwrap_or(0.0) * e.expected.abs() / 100.0,
            None => e.tolerance.parse::<f64>().unwrap_or(0.0),
        })
        .fold(0.0, f64::max)
}

/// Render the comparison; returns (text, json, ok).
pub fn compare(sim: &Report, native: &Report) -> (String, Value, bool) {
    let phases: Vec<(String, Vec<Row>)> = sim
        .phases
        .iter()
        .map(|p| (p.name.clone(), rows(sim, native, &p.name)))
        .collect();
    let failed: Vec<(&crate::ExpectOutcome, usize)> = native
        .expectations
        .iter()
        .filter(|e| !e.ok)
        .map(|e| (e, 1))
        .collect();
    render(sim, native, &phases, &failed, 1)
}

/// `compare --repeat N`: the model against `runs`, N runs of the same
/// scenario by the other engine. A row's kernel value is the runs'
/// median, and the model agrees on it when it lies within the row's
/// tolerance of the range the runs spanned: a kernel that varies from run
/// to run (reclaim under global memory pressure, where kswapd races the
/// workload) holds the model to its own spread. An expectation of the
/// scenario fails the comparison only when every run missed it.
pub fn compare_runs(sim: &Report, runs: &[Report]) -> (String, Value, bool) {
    compare_runs_each(std::slice::from_ref(sim), runs)
}

/// [`compare_runs`] with the model run on each run's machine (`sims[i]`
/// beside `runs[i]`: a guest reports its own memory, `machine.*`), or
/// once for every run (`sims` of one). With several, a row's model value
/// is their median, and the model agrees when the value on every machine
/// lies within the row's tolerance of the runs' range.
pub fn compare_runs_each(sims: &[Report], runs: &[Report]) -> (String, Value, bool) {
    assert!(!runs.is_empty(), "compare_runs needs a run");
    assert!(
        sims.len() == 1 || sims.len() == runs.len(),
        "one simulated report, or one per run"
    );
    let sim = &sims[0];
    if runs.len() == 1 {
        return compare(sim, &runs[0]);
    }
    let sim_of = |i: usize| &sims[i.min(sims.len() - 1)];
    let mut phases = Vec::new();
    for p in &sim.phases {
        let per_run: Vec<Vec<Row>> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| rows(sim_of(i), r, &p.name))
            .collect();
        // Every row any run produced, in the first run's order.
        let mut merged: Vec<Row> = Vec::new();
        let mut values: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        let mut simulated: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for rs in per_run {
            for r in rs {
                if let Some(n) = r.native {
                    values.entry(r.name.clone()).or_default().push(n);
                }
                if let Some(s) = r.sim {
                    simulated.entry(r.name.clone()).or_default().push(s);
                }
                if !merged.iter().any(|m| m.name == r.name) {
                    merged.push(r);
                }
            }
        }
        let spread = |v: &mut Vec<i64>| {
            v.sort_unstable();
            (v[v.len() / 2], (v[0], v[v.len() - 1]))
        };
        for r in &mut merged {
            if let Some(v) = values.get_mut(&r.name) {
                let (median, range) = spread(v);
                r.native = Some(median);
                r.range = Some(range);
            }
            if sims.len() > 1 {
                if let Some(v) = simulated.get_mut(&r.name) {
                    let (median, range) = spread(v);
                    r.sim = Some(median);
                    r.sim_range = Some(range);
                }
            }
        }
        phases.push((p.name.clone(), merged));
    }
    // The scenario's expectations, by where they are written: how many
    // runs missed each.
    let mut failed: Vec<(&crate::ExpectOutcome, usize)> = Vec::new();
    for e in runs
        .iter()
        .flat_map(|r| r.expectations.iter())
        .filter(|e| !e.ok)
    {
        match failed
            .iter_mut()
            .find(|(f, _)| f.at == e.at && f.phase == e.phase && f.counter == e.counter)
        {
            Some((_, n)) => *n += 1,
            None => failed.push((e, 1)),
        }
    }
    render(sim, &runs[0], &phases, &failed, runs.len())
}

/// The text and JSON of a comparison of `sim` with `native` (the first
/// of `n` runs), row by row; returns (text, json, ok).
fn render(
    sim: &Report,
    native: &Report,
    phases: &[(String, Vec<Row>)],
    failed: &[(&crate::ExpectOutcome, usize)],
    n: usize,
) -> (String, Value, bool) {
    let mut text = String::new();
    let mut ok = true;
    let mut jphases = Vec::new();
    let runs = if n > 1 {
        format!(", {n} runs")
    } else {
        String::new()
    };
    // A guest by its kernel's name (`6.18.35-arm64`), the host by its
    // architecture.
    let other = match native.provenance.as_ref().and_then(|p| p.kernel.as_ref()) {
        Some((name, _)) if native.engine == "vm" => name.clone(),
        _ => native.arch.clone(),
    };
    let _ = writeln!(
        text,
        "scenario {}  (sim {} vs {} {other}{runs})",
        sim.scenario, sim.arch, native.engine
    );
    let fmt = |v: Option<i64>| v.map_or("missing".to_string(), |v| v.to_string());
    for (phase, rs) in phases {
        let pressure = sim
            .phases
            .iter()
            .find(|p| &p.name == phase)
            .is_some_and(under_global_pressure);
        let _ = match pressure {
            true => writeln!(
                text,
                "\nphase {phase}  (global reclaim: judged within {}%, allocstall_* within {}%)",
                PRESSURE_TOLERANCE * 100.0,
                ALLOCSTALL_TOLERANCE * 100.0
            ),
            false => writeln!(text, "\nphase {phase}"),
        };
        let w = rs.iter().map(|r| r.name.len()).max().unwrap_or(0);
        let engine = if n > 1 {
            format!("{} median", native.engine)
        } else {
            native.engine.clone()
        };
        let range_head = if n > 1 {
            format!("  {:>25}", "min .. max")
        } else {
            String::new()
        };
        // The model on each run's machine: its own spread.
        let per_machine = rs.iter().any(|r| r.sim_range.is_some());
        let (sim_head, sim_range_head) = if per_machine {
            ("sim median", format!("  {:>25}", "sim min .. max"))
        } else {
            ("sim", String::new())
        };
        let _ = writeln!(
            text,
            "  {:<w$}  {:>12}{sim_range_head}  {:>12}{range_head}  {:>10}",
            "counter", sim_head, engine, "diff"
        );
        let mut jrows = Vec::new();
        for r in rs {
            let diff = match (r.sim, r.native) {
                (Some(s), Some(n)) => (n - s).to_string(),
                _ => "-".into(),
            };
            let mark = match r.tolerance {
                _ if r.mismatch() => "  MISMATCH".to_string(),
                Some(0.0) if r.expect_slack > 0.0 => format!("  ±{} (expect)", r.expect_slack),
                Some(0.0) => "  exact".to_string(),
                Some(t) => format!("  ±{}%", t * 100.0),
                None => String::new(),
            };
            let span = |on: bool, range: Option<(i64, i64)>| match (on, range) {
                (false, _) => String::new(),
                (true, Some((lo, hi))) => format!("  {:>25}", format!("{lo} .. {hi}")),
                (true, None) => format!("  {:>25}", "-"),
            };
            let range = span(n > 1, r.range);
            let sim_range = span(per_machine, r.sim_range);
            let _ = writeln!(
                text,
                "  {:<w$}  {:>12}{sim_range}  {:>12}{range}  {:>10}{mark}",
                r.name,
                fmt(r.sim),
                fmt(r.native),
                diff
            );
            ok &= !r.mismatch();
            let mut j = json!({"name": r.name, "sim": r.sim, "native": r.native, "tolerance": r.tolerance, "ok": !r.mismatch()});
            if let Some((lo, hi)) = r.range {
                j["min"] = json!(lo);
                j["max"] = json!(hi);
            }
            if let Some((lo, hi)) = r.sim_range {
                j["sim_min"] = json!(lo);
                j["sim_max"] = json!(hi);
            }
            jrows.push(j);
        }
        jphases.push(json!({"name": phase, "global_reclaim": pressure, "rows": jrows}));
    }
    for (e, missed) in failed {
        // System-wide counters are noisy natively: a miss there is shown,
        // not held against the model; nor is one some runs met.
        let gating = e.judged && *missed == n;
        let tag = match (gating, n) {
            (true, 1) => "FAIL".to_string(),
            (true, _) => format!("FAIL (every run of {n})"),
            (false, 1) => "info (system-wide)".to_string(),
            (false, _) if e.judged => format!("info ({missed} of {n} runs)"),
            (false, _) => format!("info (system-wide, {missed} of {n} runs)"),
        };
        let _ = writeln!(
            text,
            "  {tag}: {} {}:{} = {:?}, expected {} ± {} at {}",
            native.engine, e.phase, e.counter, e.actual, e.expected, e.tolerance, e.at
        );
        ok &= !gating;
    }
    let _ = writeln!(text, "\n{}", if ok { "agree" } else { "DISAGREE" });
    let mut v = json!({"scenario": sim.scenario, "phases": jphases, "ok": ok});
    if n > 1 {
        v["runs"] = json!(n);
    }
    (text, v, ok)
}

/// The JSON document of `compare`: always
/// `{"foliosim": VERSION, "comparisons": [...]}`, each comparison the
/// object [`compare`] returns with its `provenance`.
pub fn json_document(comparisons: &[Value], version: &str) -> Value {
    json!({"foliosim": version, "comparisons": comparisons})
}

/// The CSV columns of `compare --format csv`.
pub const CSV_COLUMNS: [&str; 13] = crate::with_provenance_columns([
    "scenario",
    "phase",
    "name",
    "sim",
    "native",
    "tolerance",
    "ok",
]);

/// `compare --format csv`: one record per compared value of every
/// comparison (the objects [`compare`] returns, with `provenance`); a
/// value an engine does not report, and a missing tolerance, are empty.
pub fn csv(comparisons: &[Value]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS).expect("writing to memory");
    let cell = |v: &Value| match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    for c in comparisons {
        let prov = crate::Provenance::from_json_value(&c["provenance"]).ok();
        let (foliosim, path, seed, overrides, kernel, release) = match &prov {
            Some(p) => {
                let (k, r) = p.kernel.clone().unwrap_or_default();
                let (v, path) = (p.foliosim.clone(), p.scenario_path.clone());
                let seed = p.seed.map(|s| s.to_string()).unwrap_or_default();
                (v, path, seed, p.overrides_shell(), k, r)
            }
            None => Default::default(),
        };
        for p in c["phases"].as_array().into_iter().flatten() {
            for r in p["rows"].as_array().into_iter().flatten() {
                w.write_record([
                    cell(&c["scenario"]),
                    cell(&p["name"]),
                    cell(&r["name"]),
                    cell(&r["sim"]),
                    cell(&r["native"]),
                    cell(&r["tolerance"]),
                    cell(&r["ok"]),
                    foliosim.clone(),
                    path.clone(),
                    seed.clone(),
                    overrides.clone(),
                    kernel.clone(),
                    release.clone(),
                ])
                .expect("writing to memory");
            }
        }
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FolioMap, PageState, Phase, Provenance};

    fn report(engine: &str, pgfault: i64) -> Report {
        let mut p = Phase {
            name: "write".into(),
            ..Default::default()
        };
        p.counters.insert("minor-faults".into(), pgfault);
        Report::of_phase("a, \"b\"", "x86_64", engine, p)
    }

    fn with_map(states: &[(PageState, u64)]) -> Report {
        let runs: Vec<(u8, u64)> = states.iter().map(|(s, n)| (s.encode(), *n)).collect();
        let mut p = Phase {
            name: "m".into(),
            ..Default::default()
        };
        p.maps
            .insert("buf".into(), FolioMap::from_runs(0, &runs).unwrap());
        Report::of_phase("s", "arm64", "sim", p)
    }

    /// The TLB flush slack grows by three per fork of the phase.
    #[test]
    fn forks_widen_the_tlb_flush_slack() {
        let pair = |forks: i64, native: i64| {
            let mut sim = report("sim", 1);
            let p = &mut sim.phases[0].counters;
            p.insert(TLB_FLUSH.into(), 100);
            p.insert(counters::SIM_DUP_MM.into(), forks);
            let mut nat = report("native", 1);
            nat.phases[0].counters.insert(TLB_FLUSH.into(), native);
            compare(&sim, &nat).2
        };
        // 1% of 100 is below the 4 flushes of slack.
        assert!(pair(0, 104));
        assert!(!pair(0, 105));
        assert!(pair(10, 134));
        assert!(!pair(10, 135));
    }

    /// Reclaim's volume is judged by the type of page, whoever reclaimed;
    /// the split between kswapd and the allocating task is shown only.
    #[test]
    fn reclaim_is_judged_by_page_type_not_by_reclaimer() {
        let pair = |name: &str, native: i64| {
            let mut sim = report("sim", 1);
            sim.phases[0].counters.insert(name.into(), 1000);
            let mut nat = report("vm", 1);
            nat.phases[0].counters.insert(name.into(), native);
            compare(&sim, &nat).2
        };
        for judged in ["pgscan_anon", "pgscan_file", "pgsteal_anon", "pgsteal_file"] {
            assert!(pair(judged, 1050), "{judged}");
            assert!(!pair(judged, 1060), "{judged}");
        }
        for shown in [
            "pgscan_kswapd",
            "pgscan_direct",
            "pgsteal_kswapd",
            "pgsteal_direct",
        ] {
            assert_eq!(default_tolerance(shown), None, "{shown}");
            assert!(pair(shown, 64), "{shown}");
        }
    }

    /// Where the model's machine reclaims globally (kswapd scanned, or the
    /// workload stalled in direct reclaim), the counters judged exactly
    /// without pressure are judged within 5%, `allocstall_*` within 25%,
    /// and the page-by-page pagemap rows are shown only; a phase without
    /// pressure keeps the exact rules, whatever the kernel run reclaimed.
    #[test]
    fn global_reclaim_widens_the_judgement() {
        let pair = |pressure: &str, name: &str, sim: i64, native: i64| {
            let mut s = report("sim", 1000);
            let mut n = report("vm", 1000);
            for r in [&mut s, &mut n] {
                r.phases[0].counters.insert("pgscan_kswapd".into(), 0);
            }
            if !pressure.is_empty() {
                s.phases[0].counters.insert(pressure.into(), 7);
            }
            s.phases[0].counters.insert(name.into(), sim);
            n.phases[0].counters.insert(name.into(), native);
            compare(&s, &n)
        };
        for by in ["pgscan_kswapd", "allocstall_movable", "allocstall_normal"] {
            for name in ["minor-faults", "major-faults", "pswpout", "pswpin"] {
                assert!(pair(by, name, 1000, 1050).2, "{name} under {by}");
                assert!(!pair(by, name, 1000, 1051).2, "{name} under {by}");
            }
        }
        assert!(!pair("", "pswpout", 1000, 1001).2, "exact without pressure");
        // The kernel's kswapd alone does not loosen the rules.
        let mut s = report("sim", 1000);
        let mut n = report("vm", 1001);
        n.phases[0].counters.insert("pgscan_kswapd".into(), 500);
        s.phases[0].counters.insert("pswpout".into(), 0);
        assert!(!compare(&s, &n).2);
        // allocstall is shown without pressure and judged within 25% under it.
        assert!(pair("pgscan_kswapd", "allocstall_movable", 100, 125).2);
        assert!(!pair("pgscan_kswapd", "allocstall_movable", 100, 126).2);
        let (text, json, _) = pair("pgscan_kswapd", "minor-faults", 1000, 1000);
        assert!(text.contains("(global reclaim: judged within 5%"), "{text}");
        assert_eq!(json["phases"][0]["global_reclaim"], true);
        // A folio histogram and the page-by-page map under pressure.
        let page = PageState::Present {
            order: 0,
            pmd: false,
            contpte: false,
        };
        let mut s = with_map(&[(PageState::Swap, 3)]);
        let mut n = with_map(&[(PageState::Swap, 2), (page, 1)]);
        assert!(!compare(&s, &n).2, "a map differs without pressure");
        s.phases[0].counters.insert("pgscan_kswapd".into(), 1);
        assert!(compare(&s, &n).2, "shown only under pressure");
        n.phases[0].counters.insert("pgscan_kswapd".into(), 1);
        for (r, v) in [(&mut s, 100), (&mut n, 104)] {
            let h = r.phases[0].folios.entry("buf".into()).or_default();
            h.insert("pages_present".into(), v);
        }
        assert!(compare(&s, &n).2, "a histogram within 5%");
        n.phases[0]
            .folios
            .get_mut("buf")
            .unwrap()
            .insert("pages_present".into(), 106);
        assert!(!compare(&s, &n).2, "a histogram 6% off");
    }

    /// Against repeated runs the model is held to the range the kernel
    /// spanned: an exact counter agrees anywhere inside it and nowhere
    /// outside; a 5% counter within 5% of its nearest end.
    #[test]
    fn repeated_runs_hold_the_model_to_their_range() {
        let runs = |v: &[i64], steal: &[i64]| -> Vec<Report> {
            v.iter()
                .zip(steal)
                .map(|(&f, &st)| {
                    let mut r = report("vm", f);
                    r.phases[0].counters.insert("pgsteal_anon".into(), st);
                    r
                })
                .collect()
        };
        let sim = |f: i64, st: i64| {
            let mut r = report("sim", f);
            r.phases[0].counters.insert("pgsteal_anon".into(), st);
            r
        };
        let five = runs(&[100, 103, 101, 105, 102], &[1000, 1200, 1100, 1150, 1050]);
        let (text, j, ok) = compare_runs(&sim(104, 1100), &five);
        assert!(ok, "{text}");
        // The median of 100..105 is 102; the row keeps the range.
        let row = &j["phases"][0]["rows"][0];
        assert_eq!(row["name"], "minor-faults");
        assert_eq!(
            (
                row["native"].clone(),
                row["min"].clone(),
                row["max"].clone()
            ),
            (json!(102), json!(100), json!(105))
        );
        assert_eq!(j["runs"], 5);
        assert!(
            text.contains("vm median") && text.contains("100 .. 105"),
            "{text}"
        );
        // Exact: one fault outside the range disagrees.
        assert!(!compare_runs(&sim(106, 1100), &five).2);
        assert!(!compare_runs(&sim(99, 1100), &five).2);
        // 5%: 1,255 is within 5% of 1,200 (60 of 1,255 is 62.75); 1,270 is not.
        assert!(compare_runs(&sim(101, 1255), &five).2);
        assert!(!compare_runs(&sim(101, 1270), &five).2);
        // One run is the plain comparison.
        assert_eq!(
            compare_runs(&sim(101, 1000), &five[..1]).0,
            compare(&sim(101, 1000), &five[0]).0
        );
    }

    /// The model on each guest run's machine: the row shows the median of
    /// its values and their range, and every machine's value must lie
    /// within the row's tolerance of the runs' range.
    #[test]
    fn the_model_on_each_machine_is_held_to_the_runs_range() {
        let steal = |engine: &str, v: i64| {
            let mut r = report(engine, 100);
            r.phases[0].counters.insert("pgsteal_anon".into(), v);
            r
        };
        let runs: Vec<Report> = [1000, 1100, 1200].map(|v| steal("vm", v)).into();
        let sims = |v: [i64; 3]| -> Vec<Report> { v.map(|v| steal("sim", v)).into() };
        let (text, j, ok) = compare_runs_each(&sims([960, 1050, 1250]), &runs);
        assert!(ok, "{text}");
        assert!(
            text.contains("sim min .. max") && text.contains("960 .. 1250"),
            "{text}"
        );
        let row = &j["phases"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pgsteal_anon")
            .unwrap()
            .clone();
        assert_eq!(
            (
                row["sim"].clone(),
                row["sim_min"].clone(),
                row["sim_max"].clone()
            ),
            (json!(1050), json!(960), json!(1250))
        );
        // 940 is 60 below the runs' range, more than 5% of 940; 1270 is 70
        // above it, more than 5% of 1270 (63.5). Either end fails the row.
        assert!(!compare_runs_each(&sims([940, 1050, 1100]), &runs).2);
        assert!(!compare_runs_each(&sims([1000, 1050, 1270]), &runs).2);
        // One simulated report for every run is compare_runs.
        assert_eq!(
            compare_runs_each(&sims([1050, 0, 0])[..1], &runs).0,
            compare_runs(&steal("sim", 1050), &runs).0
        );
    }

    /// An expectation some of the runs met is shown, not held against the
    /// model; one every run missed fails the comparison.
    #[test]
    fn repeated_runs_fail_only_an_expectation_every_run_missed() {
        let run = |ok: bool| {
            let mut r = report("vm", 5);
            r.expectations.push(crate::ExpectOutcome {
                at: "s.toml:9:1".into(),
                phase: "write".into(),
                counter: "minor-faults".into(),
                expected: 5.0,
                actual: Some(if ok { 5.0 } else { 6.0 }),
                tolerance: "0".into(),
                ok,
                judged: true,
            });
            r
        };
        let (text, _, ok) = compare_runs(&report("sim", 5), &[run(true), run(false), run(true)]);
        assert!(ok, "{text}");
        assert!(text.contains("info (1 of 3 runs)"), "{text}");
        let (text, _, ok) = compare_runs(&report("sim", 5), &[run(false), run(false)]);
        assert!(!ok, "{text}");
        assert!(text.contains("FAIL (every run of 2)"), "{text}");
    }

    #[test]
    fn compare_json_and_csv_carry_every_row_and_the_provenance() {
        let (_, mut j, ok) = compare(&report("sim", 16), &report("native", 17));
        assert!(!ok, "minor-faults are compared exactly: 16 against 17");
        let prov = Provenance {
            foliosim: "1.2.3".into(),
            scenario_path: "x.toml".into(),
            seed: Some(3),
            ..Default::default()
        };
        j["provenance"] = prov.to_json_value();
        let doc = json_document(std::slice::from_ref(&j), "1.2.3");
        assert_eq!(doc["comparisons"][0]["ok"], false);
        let text = csv(&[j]);
        let mut rd = ::csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            rd.headers().unwrap().iter().collect::<Vec<_>>(),
            CSV_COLUMNS
        );
        let recs: Vec<::csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        let row = recs.iter().find(|r| &r[2] == "minor-faults").unwrap();
        assert_eq!(
            row.iter().collect::<Vec<_>>(),
            [
                "a, \"b\"",
                "write",
                "minor-faults",
                "16",
                "17",
                "0.0",
                "false",
                "1.2.3",
                "x.toml",
                "3",
                "",
                "",
                ""
            ]
        );
    }

    /// An `[[expect]]` with a tolerance widens the judgement of its counter
    /// in its phase (here 2% of 1000: 20 faults), and no further.
    #[test]
    fn an_expectation_tolerance_widens_the_comparison() {
        let expect = |tolerance: &str| crate::ExpectOutcome {
            at: "x.toml:1:1".into(),
            phase: "write".into(),
            counter: "minor-faults".into(),
            expected: 1000.0,
            actual: Some(1000.0),
            tolerance: tolerance.into(),
            ok: true,
            judged: true,
        };
        let mut sim = report("sim", 1000);
        sim.expectations = vec![expect("2%")];
        let (text, _, ok) = compare(&sim, &report("native", 1020));
        assert!(ok, "{text}");
        let (text, _, ok) = compare(&sim, &report("native", 1021));
        assert!(!ok, "{text}");
        sim.expectations = vec![expect("5")];
        let (text, _, ok) = compare(&sim, &report("native", 1006));
        assert!(!ok, "{text}");
    }

    /// The contiguous bit the host cannot show is not a mismatch; any
    /// other state difference is, page by page.
    #[test]
    fn maps_compare_without_the_contiguous_bit() {
        let page = |contpte| PageState::Present {
            order: 4,
            pmd: false,
            contpte,
        };
        let sim = with_map(&[(page(true), 32)]);
        let mut native = with_map(&[(page(false), 32)]);
        native.engine = "native".into();
        let (text, _, ok) = compare(&sim, &native);
        assert!(ok, "{text}");
        assert!(text.contains("maps/buf/mismatches"), "{text}");
        let mut native = with_map(&[(page(false), 30), (PageState::Swap, 2)]);
        native.engine = "native".into();
        let (text, _, ok) = compare(&sim, &native);
        assert!(!ok, "{text}");
        assert!(
            text.lines().any(|l| l.contains("maps/buf/mismatches")
                && l.contains(" 2 ")
                && l.contains("MISMATCH")),
            "{text}"
        );
    }
}
