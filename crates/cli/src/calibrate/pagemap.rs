//! `foliosim calibrate --pagemap`: fit the `pagemap` cost group.
//!
//! A pagemap step is executed by the native engine, not by the workload (the
//! engine preads the workload's `/proc/PID/pagemap`), so its kernel work is
//! charged to the engine thread and is in no phase's `native/thread_cpu_ns`:
//! the main fit leaves the group alone (`--exclude pagemap-`). This fit
//! takes the step's own measurement instead, `native/pagemap_cpu_ns/<step>`
//! (the engine thread's CPU time over its pread loop):
//!
//! 1. every `pagemap-*.toml` of the corpus runs natively `--repeat` times
//!    and once in the simulator (one pagemap step per phase);
//! 2. measured = the median of the repeats; counts = the simulator's
//!    `sim/pagemap_*` counters of [`COLS`];
//! 3. one non-negative cost per counter, minimising relative errors, and
//!    leave-one-out ([`foliosim_cost::fit::fit_counters`]).
//!
//! It prints the fit and writes no profile: the profile's lines are written
//! by hand with the fit in their `source`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::super::output::write_output;
use super::super::CalibrateArgs;
use foliosim_report::Phase;

use super::{
    corpus_files, error_summary, json_counters, json_nums, measure_phases, read_json, Timing,
};
use foliosim_cost::fit::{fit_counters, median};

/// The counters the pagemap fit prices, one unknown each.
pub(super) const COLS: [&str; 6] = [
    "sim/pagemap_read_calls",
    "sim/pagemap_walks",
    "sim/pagemap_entries",
    "sim/pagemap_page_entries",
    "sim/pagemap_pte_tables",
    "sim/pagemap_holes",
];

/// One pagemap phase over the repeats (an element of the JSON list that
/// `--save-runs` writes, with these field names).
struct PagemapRun {
    scenario: String,
    phase: String,
    counts: BTreeMap<String, i64>,
    /// The engine thread's CPU time of the step, every run.
    ns: Vec<f64>,
    /// The step's wall time, every run.
    wall_ns: Vec<f64>,
}

/// A pagemap phase's record, from its simulation (before the native runs).
fn new_run(scenario: &str, p: &Phase) -> PagemapRun {
    PagemapRun {
        scenario: scenario.to_string(),
        phase: p.name.clone(),
        counts: COLS
            .iter()
            .map(|k| (k.to_string(), p.counters.get(*k).copied().unwrap_or(0)))
            .collect(),
        ns: Vec::new(),
        wall_ns: Vec::new(),
    }
}

/// Add one native run's pagemap step times to the record.
fn add_run(m: &mut PagemapRun, _: &Phase, np: &Phase) -> Result<(), String> {
    let find = |prefix: &str| {
        np.counters
            .iter()
            .find(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| *v as f64)
            .ok_or_else(|| format!("phase {}: no {prefix}<step> counter", m.phase))
    };
    let (cpu, wall) = (find("native/pagemap_cpu_ns/")?, find("native/pagemap_ns/")?);
    m.ns.push(cpu);
    m.wall_ns.push(wall);
    Ok(())
}

fn load(path: &Path) -> Result<Vec<PagemapRun>, String> {
    let here = |e: String| format!("{}: {e}", path.display());
    let v = read_json(path)?;
    let nums = json_nums;
    let mut out = Vec::new();
    for (i, r) in v
        .as_array()
        .ok_or_else(|| here("expected a list of pagemap runs".into()))?
        .iter()
        .enumerate()
    {
        let field = |k: &str| {
            r[k].as_str()
                .map(str::to_string)
                .ok_or_else(|| here(format!("run {i}: no `{k}`")))
        };
        let counts =
            json_counters(&r["counts"]).ok_or_else(|| here(format!("run {i}: no `counts`")))?;
        let ns = nums(&r["ns"]);
        if ns.is_empty() {
            return Err(here(format!("run {i}: no `ns` times")));
        }
        out.push(PagemapRun {
            scenario: field("scenario")?,
            phase: field("phase")?,
            counts,
            ns,
            wall_ns: nums(&r["wall_ns"]),
        });
    }
    Ok(out)
}

fn save(runs: &[PagemapRun]) -> String {
    let list: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "scenario": r.scenario,
                "phase": r.phase,
                "counts": r.counts,
                "ns": r.ns,
                "wall_ns": r.wall_ns,
            })
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_default() + "\n"
}

/// The table of the fit, the error summary and the fitted costs.
fn fit_text(runs: &[PagemapRun]) -> Result<String, String> {
    let rows: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| {
            COLS.iter()
                .map(|k| r.counts.get(*k).copied().unwrap_or(0) as f64)
                .collect()
        })
        .collect();
    let meas: Vec<f64> = runs.iter().map(|r| median(&r.ns)).collect();
    let f = fit_counters(&rows, &meas)?;
    let names: Vec<String> = runs
        .iter()
        .map(|r| format!("{}/{}", r.scenario, r.phase))
        .collect();
    let w = names.iter().map(String::len).max().unwrap_or(5).max(14);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{:<w$} {:>8} {:>8} {:>7} {:>8} {:>7} {:>7}",
        "scenario/phase", "cpu ms", "wall ms", "spread", "fit ms", "err", "LOO"
    );
    let (mut errs, mut loos) = (Vec::new(), Vec::new());
    for (i, r) in runs.iter().enumerate() {
        let (lo, hi) =
            r.ns.iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let spread = (hi - lo) / meas[i];
        let e = f.modelled[i] / meas[i] - 1.0;
        let l = f.loo_modelled[i] / meas[i] - 1.0;
        errs.push(e.abs());
        loos.push(l.abs());
        let wall = if r.wall_ns.is_empty() {
            0.0
        } else {
            median(&r.wall_ns)
        };
        let _ = writeln!(
            text,
            "{:<w$} {:>8.3} {:>8.3} {:>6.1}% {:>8.3} {:>+6.1}% {:>+6.1}%",
            names[i],
            meas[i] / 1e6,
            wall / 1e6,
            100.0 * spread,
            f.modelled[i] / 1e6,
            100.0 * e,
            100.0 * l
        );
    }
    let [fit_med, fit_max, loo_med, loo_max] = error_summary(&errs, &loos);
    let _ = writeln!(
        text,
        "fit error median {fit_med:.1}% worst {fit_max:.1}%; \
         leave-one-out median {loo_med:.1}% worst {loo_max:.1}%"
    );
    for (k, v) in COLS.iter().zip(&f.ns) {
        let _ = writeln!(text, "{k:<28} {v:>10.2} ns");
    }
    Ok(text)
}

/// `foliosim calibrate --pagemap`.
pub(super) fn cmd_pagemap(a: &CalibrateArgs) -> Result<bool, String> {
    let runs = match &a.from_runs {
        Some(path) => load(path)?,
        None => {
            let files: Vec<_> = corpus_files(&a.corpus, &a.exclude)?
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("pagemap-"))
                })
                .collect();
            if files.is_empty() {
                return Err(format!(
                    "--pagemap: no pagemap-*.toml scenarios in {}",
                    a.corpus.display()
                ));
            }
            let timing = Timing::of(a)?;
            let mut runs = Vec::new();
            for f in &files {
                eprintln!("  {}", f.display());
                runs.extend(measure_phases(f, a.repeat, &timing, new_run, add_run)?);
            }
            runs
        }
    };
    if let Some(path) = &a.save_runs {
        write_output(path, &save(&runs), &[]).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    print!("{}", fit_text(&runs)?);
    Ok(true)
}
