//! N-way comparison of repeated runs, printed like mmtests'
//! compare-kernels: per value and input the arithmetic mean (`Amean`),
//! the sample standard deviation (`Stddev`) and the coefficient of
//! variation (`CoeffVar`), each with its % change from the first input
//! (the base). A change of the mean is marked significant (`*  -5.69%*`
//! instead of `(  -5.69%)`) when Welch's t-test of that input's runs
//! against the base's gives a two-sided p-value below the level.
//!
//! % change = 100 × (value − base) / base, `n/a` when the base is 0. A
//! side with fewer than 2 runs is never marked (no variance to test); two
//! sides without variance are significant when their means differ.

use std::fmt::Write as _;

use foliosim_report::stats::{self, group_runs, Key, Summary};
use foliosim_report::Report;
use serde_json::{json, Value};

/// One input of the comparison: a `foliosim run`, `native` or `vm` JSON
/// document (one or more runs per scenario).
pub struct Input {
    /// The column's title (`--label`, default the file name).
    pub label: String,
    /// The file it was read from.
    pub file: String,
    pub reports: Vec<Report>,
}

/// One compared value: each input's runs.
pub struct Row {
    pub key: Key,
    /// Per input, the value of each run (empty when it lacks the value).
    pub samples: Vec<Vec<f64>>,
}

/// The rows of one scenario (matched by position across the inputs).
pub struct Group {
    pub scenario: String,
    pub arch: String,
    pub engine: String,
    pub rows: Vec<Row>,
}

/// A whole N-way comparison.
pub struct Nway {
    /// The significance level of the t-test (two-sided p below it).
    pub level: f64,
    pub labels: Vec<String>,
    pub files: Vec<String>,
    /// Per input, the provenance of its first report of each scenario.
    pub provenance: Vec<Vec<Value>>,
    pub groups: Vec<Group>,
}

/// Compare `inputs` (the first is the base) at significance `level`.
pub fn compare(inputs: &[Input], level: f64) -> Result<Nway, String> {
    if !(level > 0.0 && level < 1.0) {
        return Err(format!(
            "--level {level}: expected a number between 0 and 1"
        ));
    }
    let per: Vec<Vec<&[Report]>> = inputs.iter().map(|i| group_runs(&i.reports)).collect();
    let n = per[0].len();
    if n == 0 {
        return Err(format!("{}: no reports", inputs[0].file));
    }
    if let Some((i, p)) = per.iter().enumerate().find(|(_, p)| p.len() != n) {
        return Err(format!(
            "{} holds {n} scenarios and {} holds {}; compare the same scenarios",
            inputs[0].file,
            inputs[i].file,
            p.len()
        ));
    }
    let mut groups = Vec::new();
    for g in 0..n {
        let sides: Vec<Vec<(Key, Vec<f64>)>> = per.iter().map(|p| stats::samples(p[g])).collect();
        let mut keys: Vec<Key> = Vec::new();
        for s in &sides {
            for (k, _) in s {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        let rows = keys
            .into_iter()
            .map(|k| Row {
                samples: sides
                    .iter()
                    .map(|s| {
                        s.iter()
                            .find(|(x, _)| *x == k)
                            .map_or_else(Vec::new, |(_, v)| v.clone())
                    })
                    .collect(),
                key: k,
            })
            .collect();
        let r = &per[0][g][0];
        groups.push(Group {
            scenario: r.scenario.clone(),
            arch: r.arch.clone(),
            engine: r.engine.clone(),
            rows,
        });
    }
    Ok(Nway {
        level,
        labels: inputs.iter().map(|i| i.label.clone()).collect(),
        files: inputs.iter().map(|i| i.file.clone()).collect(),
        provenance: per
            .iter()
            .map(|p| {
                p.iter()
                    .map(|runs| {
                        runs[0]
                            .provenance
                            .as_ref()
                            .map_or(Value::Null, |p| p.to_json_value())
                    })
                    .collect()
            })
            .collect(),
        groups,
    })
}

/// 100 × (x − base) / base; None when the base is 0.
fn pct(x: f64, base: f64) -> Option<f64> {
    (base != 0.0).then(|| 100.0 * (x - base) / base)
}

impl Row {
    /// Whether some input's mean differs from the base's (or a side lacks
    /// the value).
    fn changed(&self) -> bool {
        let m = |s: &Vec<f64>| Summary::of(s).map(|s| s.mean);
        self.samples.iter().any(|s| m(s) != m(&self.samples[0]))
    }

    /// Whether input `i`'s mean differs significantly from the base's.
    fn significant(&self, i: usize, level: f64) -> Option<bool> {
        let w = stats::welch(&self.samples[0], &self.samples[i])?;
        Some(w.p < level)
    }
}

impl Nway {
    /// Keep only the rows named in `names` (`--only`).
    pub fn retain_names(&mut self, names: &[String]) {
        for g in &mut self.groups {
            g.rows.retain(|r| names.contains(&r.key.2));
        }
    }

    /// The mmtests-style text: per scenario a heading, a line of column
    /// titles and run counts, then `Amean`, `Stddev` and `CoeffVar` lines
    /// per value (the changed ones, or `all`).
    pub fn text(&self, all: bool) -> String {
        let mut out = format!(
            "Welch's t-test at level {}: *...%* marks a significant change of the mean \
             from {}\n",
            self.level, self.labels[0]
        );
        for g in &self.groups {
            let _ = writeln!(
                out,
                "\nscenario {}  arch {}  engine {}",
                g.scenario, g.arch, g.engine
            );
            let rows: Vec<&Row> = g.rows.iter().filter(|r| all || r.changed()).collect();
            if rows.is_empty() {
                out += "(no value changed)\n";
                continue;
            }
            out += &self.group_text(&rows);
        }
        out
    }

    fn group_text(&self, rows: &[&Row]) -> String {
        let names: Vec<String> = rows
            .iter()
            .map(|r| format!("{}: {}", r.key.0, r.key.2))
            .collect();
        let nw = names.iter().map(String::len).max().unwrap_or(0);
        // Per line: the label, then per input (value, mark).
        let mut lines: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for (r, name) in rows.iter().zip(&names) {
            let sums: Vec<Option<Summary>> = r.samples.iter().map(|s| Summary::of(s)).collect();
            type Stat = fn(&Summary) -> Option<f64>;
            let stats: [(&str, Stat); 3] = [
                ("Amean", |s| Some(s.mean)),
                ("Stddev", |s| Some(s.stddev)),
                ("CoeffVar", Summary::cov_pct),
            ];
            for (si, (stat, f)) in stats.iter().enumerate() {
                let base = sums[0].as_ref().and_then(f);
                let cells = sums
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let v = s.as_ref().and_then(f);
                        let p = match (v, base) {
                            (Some(v), Some(b)) => pct(v, b),
                            _ => None,
                        };
                        let p = p.map_or("n/a".into(), |p| format!("{p:.2}%"));
                        let sig = si == 0 && i > 0 && r.significant(i, self.level) == Some(true);
                        let mark = if sig {
                            format!("*{p:>8}*")
                        } else {
                            format!("({p:>8})")
                        };
                        (v.map_or("n/a".into(), |v| format!("{v:.2}")), mark)
                    })
                    .collect();
                lines.push((format!("{stat:<9} {name:<nw$}"), cells));
            }
        }
        let lw = lines.iter().map(|l| l.0.len()).max().unwrap_or(0);
        let cw: Vec<usize> = (0..self.labels.len())
            .map(|i| {
                lines
                    .iter()
                    .map(|l| l.1[i].0.len() + 1 + l.1[i].1.len())
                    .chain([self.labels[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = format!("{:lw$}", "");
        for (l, w) in self.labels.iter().zip(&cw) {
            let _ = write!(out, "  {l:>w$}");
        }
        out.push('\n');
        let _ = write!(out, "{:lw$}", "");
        for (i, w) in cw.iter().enumerate() {
            let n = rows[0].samples[i].len();
            let _ = write!(out, "  {:>w$}", format!("n={n}"));
        }
        out.push('\n');
        for (label, cells) in &lines {
            let mut l = format!("{label:<lw$}");
            for ((v, m), w) in cells.iter().zip(&cw) {
                let _ = write!(l, "  {:>w$}", format!("{v} {m}"));
            }
            out += l.trim_end();
            out.push('\n');
        }
        out
    }

    /// One wrapper object: the foliosim version, the test and its level,
    /// the inputs (label, file, provenance) and per scenario and value
    /// each input's summary, % change of the mean, t, df, p and whether
    /// the change is significant (numbers as numbers; null where there is
    /// none).
    pub fn json(&self, all: bool) -> String {
        let inputs: Vec<Value> = (0..self.labels.len())
            .map(|i| {
                json!({
                    "label": self.labels[i],
                    "file": self.files[i],
                    "provenance": self.provenance[i],
                })
            })
            .collect();
        let scenarios: Vec<Value> = self
            .groups
            .iter()
            .map(|g| {
                let rows: Vec<Value> = g
                    .rows
                    .iter()
                    .filter(|r| all || r.changed())
                    .map(|r| self.row_json(r))
                    .collect();
                json!({"scenario": g.scenario, "arch": g.arch, "engine": g.engine, "rows": rows})
            })
            .collect();
        let doc = json!({
            "foliosim": foliosim_report::VERSION,
            "test": "welch",
            "level": self.level,
            "base": self.labels[0],
            "inputs": inputs,
            "scenarios": scenarios,
        });
        serde_json::to_string_pretty(&doc).expect("serialisable") + "\n"
    }

    fn row_json(&self, r: &Row) -> Value {
        let base = Summary::of(&r.samples[0]);
        let sides: Vec<Value> = r
            .samples
            .iter()
            .enumerate()
            .map(|(i, xs)| {
                let s = Summary::of(xs);
                let mut v = s.map_or(json!({"n": 0}), |s| s.to_json_value());
                v["label"] = json!(self.labels[i]);
                if i > 0 {
                    let w = stats::welch(&r.samples[0], xs);
                    v["change_pct"] = json!(match (s, base) {
                        (Some(s), Some(b)) => pct(s.mean, b.mean),
                        _ => None,
                    });
                    v["t"] = json!(w.map(|w| w.t).filter(|t| t.is_finite()));
                    v["df"] = json!(w.map(|w| w.df).filter(|d| d.is_finite()));
                    v["p"] = json!(w.map(|w| w.p));
                    v["significant"] = json!(w.map(|w| w.p < self.level));
                }
                v
            })
            .collect();
        json!({"phase": r.key.0, "kind": r.key.1, "name": r.key.2, "inputs": sides})
    }
}
