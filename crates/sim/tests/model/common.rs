//! Helpers shared by the foliosim-sim integration tests: run an inline TOML
//! scenario with the invariant checker on, and read counters and folio
//! histograms out of the report.
#![allow(dead_code)]

use std::collections::BTreeMap;

use foliosim_report::Report;
use foliosim_sim::{RunOptions, SimError};

/// What the failed system call of the scenario `text` says (errno name
/// first); panics if the run does not end with one.
#[allow(dead_code)]
pub fn failed_syscall(text: &str) -> String {
    match try_run_with(text, &[]) {
        Err(SimError::Syscall { what, .. }) => what,
        other => panic!("expected a failed system call, got {other:?}"),
    }
}

/// Assert that the scenario `text` ends with a failed system call whose
/// message starts with the errno name `errno`.
#[track_caller]
pub fn assert_fails_with(text: &str, errno: &str) {
    let what = failed_syscall(text);
    assert!(what.starts_with(errno), "{what}");
}

/// Parse `text` with `overrides` (`--set KEY=VALUE` pairs) and simulate it
/// with the invariant checker after every step.
pub fn try_run_with(text: &str, overrides: &[(&str, &str)]) -> Result<Report, SimError> {
    let sets: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let sc = match foliosim_scenario::parse_str("test.toml", text, &sets) {
        Ok(sc) => sc,
        Err(e) => panic!("scenario does not parse: {e}\n--- scenario ---\n{text}"),
    };
    foliosim_sim::run(
        &sc,
        RunOptions {
            check: true,
            ..Default::default()
        },
    )
}

/// The shipped scenario `scenarios/<rel>` with `sets` (`--set KEY=VALUE`
/// pairs).
pub fn load_scenario<V: AsRef<str>>(rel: &str, sets: &[(&str, V)]) -> foliosim_scenario::Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel);
    let ov: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.as_ref().to_owned()))
        .collect();
    foliosim_scenario::load(&path, &ov).expect("scenario parses")
}

/// [`try_run_with`] that must succeed.
pub fn run_with(text: &str, overrides: &[(&str, &str)]) -> Report {
    match try_run_with(text, overrides) {
        Ok(r) => r,
        Err(e) => panic!("simulation failed: {e}\n--- scenario ---\n{text}"),
    }
}

/// Run on the architecture the scenario names (x86_64 by default).
pub fn run(text: &str) -> Report {
    run_with(text, &[])
}

/// Run `text` (x86_64) with a cost profile of only `costs` (counter, ns),
/// which paces kswapd against the workload.
pub fn run_priced(text: &str, costs: &[(&str, f64)]) -> Report {
    run_priced_waits(text, costs, &[])
}

/// [`run_priced`] with `waits` too (the profile's `[wait]` table).
pub fn run_priced_waits(text: &str, costs: &[(&str, f64)], waits: &[(&str, f64)]) -> Report {
    let mut toml = String::from(
        "name = \"test\"\narch = \"x86_64\"\ncpu = \"test\"\ndescription = \"test\"\n[cost]\n",
    );
    for (name, ns) in costs {
        toml += &format!("\"{name}\" = {{ ns = {ns:?}, source = \"test\" }}\n");
    }
    toml += "[wait]\n";
    for (name, ns) in waits {
        toml += &format!("\"{name}\" = {{ ns = {ns:?}, source = \"test\" }}\n");
    }
    let profile =
        foliosim_cost::Profile::parse("test-profile.toml", &toml).expect("profile parses");
    let sc = foliosim_scenario::parse_str("test.toml", text, &[]).expect("scenario parses");
    foliosim_sim::run(
        &sc,
        RunOptions {
            check: true,
            profile: Some(std::sync::Arc::new(profile)),
            ..Default::default()
        },
    )
    .expect("scenario runs")
}

/// Run on `arch` ("x86_64" or "arm64").
pub fn run_arch(text: &str, arch: &str) -> Report {
    run_with(text, &[("system.arch", arch)])
}

/// A counter's delta over `phase`; panics if the phase or counter is absent.
pub fn c(r: &Report, phase: &str, counter: &str) -> i64 {
    let p = r
        .phases
        .iter()
        .find(|p| p.name == phase)
        .unwrap_or_else(|| panic!("no phase {phase:?} in the report"));
    *p.counters
        .get(counter)
        .unwrap_or_else(|| panic!("no counter {counter:?} in phase {phase:?}"))
}

/// The folio histogram of `region` at the end of `phase`, with zero cells
/// and the pagemap summary (`pages_*`) dropped.
pub fn folios(r: &Report, phase: &str, region: &str) -> BTreeMap<String, u64> {
    let p = r
        .phases
        .iter()
        .find(|p| p.name == phase)
        .unwrap_or_else(|| panic!("no phase {phase:?} in the report"));
    p.folios
        .get(region)
        .unwrap_or_else(|| panic!("no folio histogram for region {region:?} in {phase:?}"))
        .iter()
        .filter(|(k, &n)| n != 0 && !k.starts_with("pages_"))
        .map(|(k, &n)| (k.clone(), n))
        .collect()
}

/// The pagemap summary cell `pages_<what>` of `region` at the end of
/// `phase` (0 when absent).
pub fn pages(r: &Report, phase: &str, region: &str, what: &str) -> u64 {
    let p = r.phases.iter().find(|p| p.name == phase).expect("phase");
    p.folios
        .get(region)
        .and_then(|h| h.get(&format!("pages_{what}")))
        .copied()
        .unwrap_or(0)
}

/// A histogram literal: `hist(&[("64kB", 32)])`.
pub fn hist(cells: &[(&str, u64)]) -> BTreeMap<String, u64> {
    cells
        .iter()
        .filter(|(_, n)| *n != 0)
        .map(|(k, n)| ((*k).to_owned(), *n))
        .collect()
}

/// Pages covered by a histogram's folio buckets ("4kB", "64kB", "2048kB"),
/// counting each folio as whole; "zero" and "huge_zero" count 1 and 512.
pub fn hist_pages(h: &BTreeMap<String, u64>) -> u64 {
    h.iter()
        .map(|(k, n)| {
            let pages = match k.as_str() {
                "zero" => 1,
                "huge_zero" => 512,
                kb => {
                    kb.strip_suffix("kB")
                        .and_then(|s| s.parse::<u64>().ok())
                        .unwrap_or_else(|| panic!("unknown bucket {kb:?}"))
                        / 4
                }
            };
            pages * n
        })
        .sum()
}

// Scenario fragments (`system`, `swap`, `mmap_anon`, `touch`, `phase`, ...):
// a scenario is the `concat()` of an array of them.
#[allow(unused_imports)] // not every test file builds scenarios
pub use foliosim_testkit::*;

/// Assert several counters of `phase` at once: `want` is a list of
/// `counter=value` items separated by spaces, e.g.
/// `assert_counters(&r, "in", "pgmajfault=1 pswpin=1")`. The first counter that
/// differs fails the test, naming the phase and the counter.
#[track_caller]
pub fn assert_counters(r: &Report, phase: &str, want: &str) {
    for item in want.split_whitespace() {
        let (name, value) = item
            .rsplit_once('=')
            .unwrap_or_else(|| panic!("assert_counters: {item:?} is not counter=value"));
        let value: i64 = value
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("assert_counters: {item:?} has no number"));
        assert_eq!(
            c(r, phase, name),
            value,
            "phase {phase:?}, counter {name:?}"
        );
    }
}
