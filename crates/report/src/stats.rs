//! Statistics of repeated runs: per value the sample's minimum, maximum,
//! mean, standard deviation and coefficient of variation, and Welch's
//! t-test between two samples (the mark of a significant change in
//! `foliosim diff`).
//!
//! The standard deviation is the sample's (divisor n − 1, as
//! mmtests, `perf stat -r` and LKP report it); with one run it is 0. The
//! coefficient of variation is 100 × stddev / |mean| in percent, absent
//! when the mean is 0. The t distribution's CDF comes from the `statrs`
//! crate.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::{Report, RowKind};

/// The summary of one value over repeated runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The number of runs.
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// The sample standard deviation (n − 1); 0 with one run.
    pub stddev: f64,
}

impl Summary {
    /// The summary of `xs`; None when `xs` is empty.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Summary {
            n,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean,
            stddev: var.sqrt(),
        })
    }

    /// 100 × stddev / |mean|, in percent; None when the mean is 0.
    pub fn cov_pct(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| 100.0 * self.stddev / self.mean.abs())
    }

    /// The summary as a JSON object (numbers as numbers; `cov_pct` null
    /// when the mean is 0).
    pub fn to_json_value(&self) -> Value {
        json!({
            "n": self.n,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "stddev": self.stddev,
            "cov_pct": self.cov_pct(),
        })
    }
}

/// The outcome of Welch's unequal-variances t-test of two samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// t = (mean_b − mean_a) / sqrt(var_a/n_a + var_b/n_b).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test of `a` against `b`. None when a side has fewer than 2
/// runs (no variance to test with). When both samples have no variance
/// (deterministic values), p is 0 if the means differ and 1 if not, t and
/// df are infinite and NaN respectively.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (sa, sb) = (Summary::of(a)?, Summary::of(b)?);
    if sa.n < 2 || sb.n < 2 {
        return None;
    }
    let (va, vb) = (
        sa.stddev.powi(2) / sa.n as f64,
        sb.stddev.powi(2) / sb.n as f64,
    );
    let diff = sb.mean - sa.mean;
    if va + vb == 0.0 {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            t: if diff == 0.0 {
                0.0
            } else {
                diff.signum() * f64::INFINITY
            },
            df: f64::NAN,
            p,
        });
    }
    let t = diff / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va.powi(2) / (sa.n - 1) as f64 + vb.powi(2) / (sb.n - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0);
    Some(Welch { t, df, p })
}

/// A value's place in repeated reports: (phase, kind, name).
pub type Key = (String, String, String);

/// Every counter and modelled time of `runs` (runs of one scenario), in
/// the order of the first run, with each run's value; a value missing
/// from a run is left out of that run's sample.
pub fn samples(runs: &[Report]) -> Vec<(Key, Vec<f64>)> {
    let mut order: Vec<Key> = Vec::new();
    let mut by: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for t in r.tidy_rows() {
            if !(t.kind == RowKind::Counter || (t.kind == RowKind::Time && t.name == "modelled_ns"))
            {
                continue;
            }
            let k = (t.phase.to_string(), t.kind.as_str().to_string(), t.name);
            by.entry(k.clone())
                .or_insert_with(|| {
                    order.push(k);
                    Vec::new()
                })
                .push(t.value as f64);
        }
    }
    order
        .into_iter()
        .map(|k| {
            let v = by.remove(&k).unwrap_or_default();
            (k, v)
        })
        .collect()
}

/// Reports of repeated runs grouped per scenario: consecutive reports of
/// the same scenario, architecture and engine form a group, in order.
pub fn group_runs(reports: &[Report]) -> Vec<&[Report]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=reports.len() {
        let same = |a: &Report, b: &Report| {
            a.scenario == b.scenario && a.arch == b.arch && a.engine == b.engine
        };
        if i == reports.len() || !same(&reports[start], &reports[i]) {
            if i > start {
                out.push(&reports[start..i]);
            }
            start = i;
        }
    }
    out
}

/// The `repeat` object of a repeated run's JSON document: the number of
/// runs and, per scenario, per phase, per counter its [`Summary`].
pub fn repeat_json(groups: &[&[Report]]) -> Value {
    let scenarios: Vec<Value> = groups
        .iter()
        .map(|runs| {
            let r = &runs[0];
            let mut phases: Vec<(String, serde_json::Map<String, Value>)> = Vec::new();
            for ((phase, _, name), xs) in samples(runs) {
                let s = Summary::of(&xs).expect("a value of some run");
                match phases.iter_mut().find(|p| p.0 == phase) {
                    Some(p) => p.1.insert(name, s.to_json_value()),
                    None => {
                        let mut m = serde_json::Map::new();
                        m.insert(name, s.to_json_value());
                        phases.push((phase, m));
                        None
                    }
                };
            }
            json!({
                "scenario": r.scenario,
                "arch": r.arch,
                "engine": r.engine,
                "runs": runs.len(),
                "phases": phases
                    .into_iter()
                    .map(|(name, c)| json!({"name": name, "counters": c}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "runs": groups.first().map_or(0, |g| g.len()), "scenarios": scenarios })
}

/// The JSON document of repeated runs: the usual document (every run's
/// report, in order) with the `repeat` summary beside `reports`.
pub fn repeat_document(reports: &[Report], version: &str) -> Value {
    let mut doc = crate::json_document(reports, version);
    doc["repeat"] = repeat_json(&group_runs(reports));
    doc
}

/// A number for the tables: integers without decimals, else two.
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The table of repeated runs: per scenario a heading, then per phase and
/// counter `mean ± stddev`, the coefficient of variation and min / max.
pub fn repeat_table(reports: &[Report]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for runs in group_runs(reports) {
        let r = &runs[0];
        let _ = writeln!(
            out,
            "scenario {}  arch {}  engine {}  runs {}",
            r.scenario,
            r.arch,
            r.engine,
            runs.len()
        );
        let rows: Vec<[String; 5]> = samples(runs)
            .into_iter()
            .map(|((phase, _, name), xs)| {
                let s = Summary::of(&xs).expect("a value of some run");
                [
                    format!("{phase}: {name}"),
                    format!("{} ± {}", num(s.mean), num(s.stddev)),
                    s.cov_pct().map_or("n/a".into(), |c| format!("{c:.2}%")),
                    num(s.min),
                    num(s.max),
                ]
            })
            .collect();
        let head = ["counter", "mean ± stddev", "CoV", "min", "max"];
        let w: Vec<usize> = (0..5)
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([head[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |c: [&str; 5]| {
            let mut l = format!("  {:<w0$}", c[0], w0 = w[0]);
            for i in 1..5 {
                let pad = w[i] - c[i].chars().count();
                let _ = write!(l, "  {}{}", " ".repeat(pad), c[i]);
            }
            l.trim_end().to_string() + "\n"
        };
        out += &line(head);
        for r in &rows {
            out += &line([&r[0], &r[1], &r[2], &r[3], &r[4]]);
        }
        out.push('\n');
    }
    out
}

/// The CSV of repeated runs: one record per scenario, phase and value
/// with n, min, max, mean, stddev and cov_pct (empty when the mean is 0).
pub fn repeat_csv(reports: &[Report]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "scenario", "arch", "engine", "phase", "kind", "name", "n", "min", "max", "mean", "stddev",
        "cov_pct",
    ])
    .expect("writing to memory");
    for runs in group_runs(reports) {
        let r = &runs[0];
        for ((phase, kind, name), xs) in samples(runs) {
            let s = Summary::of(&xs).expect("a value of some run");
            w.write_record([
                r.scenario.clone(),
                r.arch.clone(),
                r.engine.clone(),
                phase,
                kind,
                name,
                s.n.to_string(),
                s.min.to_string(),
                s.max.to_string(),
                s.mean.to_string(),
                s.stddev.to_string(),
                s.cov_pct().map_or(String::new(), |c| c.to_string()),
            ])
            .expect("writing to memory");
        }
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("UTF-8")
}
