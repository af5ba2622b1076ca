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
//!
//! The inputs are report documents ([`compare`]: a scenario's runs are
//! its consecutive reports) or sweep tables ([`compare_tables`]: a
//! point's runs are its rows that differ only in the `repeat` column).

use std::fmt::Write as _;

use std::collections::BTreeMap;

use foliosim_report::stats::{self, group_runs, Key, Summary};
use foliosim_report::Report;
use foliosim_table::Table;
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
    check_level(level)?;
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
        let sides: Vec<&[(Key, Vec<f64>)]> = sides.iter().map(Vec::as_slice).collect();
        let rows = rows_of(&sides);
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

/// One sweep table of a comparison of tables.
pub struct TableInput<'a> {
    /// The column's title (`--label`, default the file name).
    pub label: String,
    /// The file it was read from.
    pub file: String,
    pub table: &'a Table,
}

/// The grid column a sweep's `--repeat` adds: rows that differ only in it
/// are runs of one point.
pub const REPEAT_KEY: &str = "repeat";

/// A point of a table, its runs folded: scenario, arch and the grid
/// columns but `repeat`, as `key=value` words.
type TablePoint = (String, String, Vec<String>);

/// Per value (in order of first appearance), the value of each run.
type Samples = Vec<(Key, Vec<f64>)>;

/// Per point of `t` (in table order): its engine and its samples. Failed
/// points are left out.
fn table_samples(t: &Table) -> Vec<(TablePoint, String, Samples)> {
    let mut points: BTreeMap<TablePoint, usize> = BTreeMap::new();
    // (point, value) → its position in the point's samples.
    let mut values: BTreeMap<(usize, Key), usize> = BTreeMap::new();
    let mut out: Vec<(TablePoint, String, Samples)> = Vec::new();
    for r in t.rows.iter().filter(|r| !r.failed()) {
        let keep = r.kind == "counter" || (r.kind == "time" && r.name == "modelled_ns");
        let Some(v) = r.value.filter(|_| keep) else {
            continue;
        };
        let coords = t
            .grid_columns
            .iter()
            .zip(&r.grid)
            .filter(|(k, _)| *k != REPEAT_KEY)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let point = (r.scenario.clone(), r.arch.clone(), coords);
        let i = *points.entry(point.clone()).or_insert_with(|| {
            out.push((point, r.engine.clone(), Vec::new()));
            out.len() - 1
        });
        let key: Key = (r.phase.clone(), r.kind.clone(), r.name.clone());
        let samples = &mut out[i].2;
        let j = *values.entry((i, key.clone())).or_insert_with(|| {
            samples.push((key, Vec::new()));
            samples.len() - 1
        });
        samples[j].1.push(v as f64);
    }
    out
}

/// Compare sweep tables (the first is the base) at significance `level`:
/// the points are matched by scenario, arch and grid values (but
/// `repeat`), a point's runs are its `repeat` rows (one without the
/// column), and each point is a group titled by its scenario and grid
/// values. Points of another input that the base lacks follow the base's.
pub fn compare_tables(inputs: &[TableInput], level: f64) -> Result<Nway, String> {
    check_level(level)?;
    let per: Vec<_> = inputs.iter().map(|i| table_samples(i.table)).collect();
    if per[0].is_empty() {
        return Err(format!("{}: no point with values", inputs[0].file));
    }
    // Per input, each point's samples; and every point once, in order.
    let found: Vec<BTreeMap<&TablePoint, &Samples>> = per
        .iter()
        .map(|p| p.iter().map(|(q, _, v)| (q, v)).collect())
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let points: Vec<(&TablePoint, &str)> = per
        .iter()
        .flatten()
        .filter(|(q, _, _)| seen.insert(q))
        .map(|(q, engine, _)| (q, engine.as_str()))
        .collect();
    let groups = points
        .iter()
        .map(|(point, engine)| {
            let (scenario, arch, coords) = point;
            let sides: Vec<&[(Key, Vec<f64>)]> = found
                .iter()
                .map(|f| f.get(point).map_or(&[][..], |v| v.as_slice()))
                .collect();
            let title = std::iter::once(scenario.clone())
                .chain(coords.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ");
            Group {
                scenario: title,
                arch: arch.clone(),
                engine: engine.to_string(),
                rows: rows_of(&sides),
            }
        })
        .collect();
    let provenance = inputs
        .iter()
        .map(|i| {
            let p = i
                .table
                .provenance
                .as_ref()
                .map_or(Value::Null, |p| p.to_json_value());
            vec![p; points.len()]
        })
        .collect();
    Ok(Nway {
        level,
        labels: inputs.iter().map(|i| i.label.clone()).collect(),
        files: inputs.iter().map(|i| i.file.clone()).collect(),
        provenance,
        groups,
    })
}

/// The compared rows of one scenario or point: every value any side has
/// (in order of first appearance), with each side's runs.
fn rows_of(sides: &[&[(Key, Vec<f64>)]]) -> Vec<Row> {
    let by_key: Vec<BTreeMap<&Key, &Vec<f64>>> = sides
        .iter()
        .map(|s| s.iter().map(|(k, v)| (k, v)).collect())
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    sides
        .iter()
        .flat_map(|s| s.iter().map(|(k, _)| k))
        .filter(|k| seen.insert(*k))
        .map(|k| Row {
            samples: by_key
                .iter()
                .map(|s| s.get(k).map_or_else(Vec::new, |v| (*v).clone()))
                .collect(),
            key: k.clone(),
        })
        .collect()
}

fn check_level(level: f64) -> Result<(), String> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(format!(
            "--level {level}: expected a number between 0 and 1"
        ))
    }
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
