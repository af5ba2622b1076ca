//! Base versus patched: the comparison table kernel developers post to
//! linux-mm (in the manner of mmtests' compare-kernels), for every counter
//! and the modelled time (`modelled_ns`) of each phase.
//!
//! A [`Diff`] has column groups (one per architecture, or per value of
//! other keys) and row blocks (one per combination of the remaining swept
//! keys); each cell holds the base and patched value. Rendered as plain
//! fixed-width ASCII text that pastes into a mail unchanged
//! ([`Diff::text`]), Markdown ([`Diff::markdown`]), CSV ([`Diff::csv`]) or
//! JSON ([`Diff::json`]).
//!
//! Arithmetic: change = patched − base; % change = 100 × change / base,
//! shown with two decimals and a sign. A base of 0 has no percentage: it
//! is `n/a` in every format. A value missing on one side (a counter one
//! architecture does not have) is `-`, with change and % `n/a`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use foliosim_report::{Report, RowKind};
use serde_json::{json, Value};

use foliosim_table::Table;

/// A value's place: (phase, kind, name).
pub type ValueKey = (String, String, String);

/// A point's compared values.
type Values = BTreeMap<ValueKey, i128>;

/// Base and patched value of one row in one column group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    pub base: Option<i128>,
    pub patched: Option<i128>,
}

impl Cell {
    /// patched − base, when both exist.
    pub fn change(&self) -> Option<i128> {
        Some(self.patched? - self.base?)
    }

    /// 100 × change / base, when both exist and base is not 0.
    pub fn percent(&self) -> Option<f64> {
        let base = self.base?;
        if base == 0 {
            return None;
        }
        Some(100.0 * self.change()? as f64 / base as f64)
    }

    /// Whether base and patched differ (a value on one side only counts).
    pub fn changed(&self) -> bool {
        self.base != self.patched
    }

    fn fmt_value(v: Option<i128>) -> String {
        v.map_or_else(|| "-".into(), |v| v.to_string())
    }

    fn fmt_change(&self) -> String {
        match self.change() {
            None => "n/a".into(),
            Some(0) => "0".into(),
            Some(c) => format!("{c:+}"),
        }
    }

    fn fmt_percent(&self) -> String {
        self.percent()
            .map_or_else(|| "n/a".into(), |p| format!("{p:+.2}%"))
    }
}

/// One compared value across the column groups.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffRow {
    pub phase: String,
    /// `counter` or `time` (as in the tidy table).
    pub kind: String,
    pub name: String,
    /// One cell per column group.
    pub cells: Vec<Cell>,
}

/// The rows of one combination of the row-block keys.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// (key, value) of each row-block key; empty when there is one block.
    pub label: Vec<(String, String)>,
    pub rows: Vec<DiffRow>,
}

/// A whole comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    /// What differs between base and patched: a key (`series.batch_anon_unmap`)
    /// or `report` for two report files.
    pub by: String,
    pub base: String,
    pub patched: String,
    /// Lines of context printed above the table (scenario, engine, failed
    /// points).
    pub notes: Vec<String>,
    /// The keys that make the column groups (`arch`), possibly none.
    pub column_keys: Vec<String>,
    /// Each column group's values of `column_keys`.
    pub groups: Vec<Vec<String>>,
    pub blocks: Vec<Block>,
}

/// The values a diff compares in a report: every counter and the modelled
/// time of each phase.
fn report_values(r: &Report) -> BTreeMap<ValueKey, i128> {
    r.tidy_rows()
        .into_iter()
        .filter(|t| {
            t.kind == RowKind::Counter || (t.kind == RowKind::Time && t.name == "modelled_ns")
        })
        .map(|t| {
            (
                (t.phase.to_string(), t.kind.as_str().to_string(), t.name),
                t.value,
            )
        })
        .collect()
}

/// Order of rows: counters by name, then modelled time, within each phase
/// in order of first appearance.
fn row_keys<'a>(sides: impl Iterator<Item = &'a BTreeMap<ValueKey, i128>>) -> Vec<ValueKey> {
    let mut phases: Vec<String> = Vec::new();
    let mut keys: Vec<ValueKey> = Vec::new();
    for side in sides {
        for k in side.keys() {
            if !phases.contains(&k.0) {
                phases.push(k.0.clone());
            }
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.sort_by(|a, b| {
        let pa = phases.iter().position(|p| *p == a.0);
        let pb = phases.iter().position(|p| *p == b.0);
        pa.cmp(&pb)
            .then((a.1 == "time").cmp(&(b.1 == "time")))
            .then(a.2.cmp(&b.2))
    });
    keys
}

/// Compare two runs given as reports: `base[i]` with `patched[i]` (the
/// same scenarios in the same order, as two `foliosim run --format json`
/// files of them). Column groups are the reports' architectures when they
/// differ, else their scenarios, else their positions.
pub fn diff_reports(base: &[Report], patched: &[Report]) -> Result<Diff, String> {
    if base.is_empty() || base.len() != patched.len() {
        return Err(format!(
            "the two files hold {} and {} reports; compare the same scenarios",
            base.len(),
            patched.len()
        ));
    }
    let distinct = |f: &dyn Fn(&Report) -> &str| {
        let mut v: Vec<&str> = base.iter().map(f).collect();
        v.sort();
        v.dedup();
        v.len() == base.len()
    };
    let (column_keys, groups): (Vec<String>, Vec<Vec<String>>) = if base.len() == 1 {
        (Vec::new(), vec![Vec::new()])
    } else if distinct(&|r| &r.arch) {
        (
            vec!["arch".into()],
            base.iter().map(|r| vec![r.arch.clone()]).collect(),
        )
    } else if distinct(&|r| &r.scenario) {
        (
            vec!["scenario".into()],
            base.iter().map(|r| vec![r.scenario.clone()]).collect(),
        )
    } else {
        (
            vec!["report".into()],
            (1..=base.len()).map(|i| vec![format!("#{i}")]).collect(),
        )
    };
    let b: Vec<_> = base.iter().map(report_values).collect();
    let p: Vec<_> = patched.iter().map(report_values).collect();
    let sides: Vec<(&Values, &Values)> = b.iter().zip(&p).collect();
    let rows = diff_rows(row_keys(b.iter().chain(&p)), &sides);
    let mut notes = Vec::new();
    let mut scen: Vec<&str> = base.iter().map(|r| r.scenario.as_str()).collect();
    scen.dedup();
    notes.push(format!(
        "scenario {}  engine {}",
        scen.join(", "),
        base[0].engine
    ));
    Ok(Diff {
        by: "report".into(),
        base: "base".into(),
        patched: "patched".into(),
        notes,
        column_keys,
        groups,
        blocks: vec![Block {
            label: Vec::new(),
            rows,
        }],
    })
}

/// The rows `keys` comparing base and patched values, one cell per column
/// group (`sides[i]` are group `i`'s base and patched values).
fn diff_rows(keys: Vec<ValueKey>, sides: &[(&Values, &Values)]) -> Vec<DiffRow> {
    keys.into_iter()
        .map(|k| DiffRow {
            cells: sides
                .iter()
                .map(|(x, y)| Cell {
                    base: x.get(&k).copied(),
                    patched: y.get(&k).copied(),
                })
                .collect(),
            phase: k.0,
            kind: k.1,
            name: k.2,
        })
        .collect()
}

/// One point of a table, for [`diff_table`].
struct PointData {
    /// Column name → value: the grid columns, scenario, arch, engine.
    labels: BTreeMap<String, String>,
    values: BTreeMap<ValueKey, i128>,
}

/// The points of a table that did not fail, in table order, with their
/// compared values, and a note for each failed row.
fn table_points(t: &Table) -> (Vec<PointData>, Vec<String>) {
    let mut index: BTreeMap<u64, usize> = BTreeMap::new();
    let mut points: Vec<PointData> = Vec::new();
    let mut notes = Vec::new();
    for r in &t.rows {
        if r.failed() {
            notes.push(format!("point {} failed: {}", r.point, r.error));
            continue;
        }
        let i = *index.entry(r.point).or_insert_with(|| {
            let mut labels: BTreeMap<String, String> = t
                .grid_columns
                .iter()
                .cloned()
                .zip(r.grid.iter().cloned())
                .collect();
            labels.insert("scenario".into(), r.scenario.clone());
            labels.insert("arch".into(), r.arch.clone());
            labels.insert("engine".into(), r.engine.clone());
            points.push(PointData {
                labels,
                values: BTreeMap::new(),
            });
            points.len() - 1
        });
        let keep = r.kind == "counter" || (r.kind == "time" && r.name == "modelled_ns");
        if let (true, Some(v)) = (keep, r.value) {
            points[i]
                .values
                .insert((r.phase.clone(), r.kind.clone(), r.name.clone()), v);
        }
    }
    (points, notes)
}

/// The distinct values of the points' key `k`, in order of first
/// appearance.
fn values_of(pts: &[PointData], k: &str) -> Vec<String> {
    combos(pts, &[k.to_string()])
        .into_iter()
        .flatten()
        .collect()
}

/// The distinct combinations of the points' values of `ks`, in order of
/// first appearance.
fn combos(pts: &[PointData], ks: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for p in pts {
        let c: Vec<String> = ks.iter().map(|k| p.labels[k].clone()).collect();
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// The base and patched values of `by`: `pair`, both of which some point
/// must have, or else the two values `by` takes.
fn base_and_patched(
    by: &str,
    by_values: &[String],
    pair: Option<(&str, &str)>,
) -> Result<(String, String), String> {
    match pair {
        Some((b, p)) => {
            for v in [b, p] {
                if !by_values.iter().any(|x| x == v) {
                    return Err(format!(
                        "--by {by}: no point has {by} = {v}; its values: {}",
                        by_values.join(", ")
                    ));
                }
            }
            Ok((b.to_string(), p.to_string()))
        }
        None if by_values.len() == 2 => Ok((by_values[0].clone(), by_values[1].clone())),
        None => Err(format!(
            "--by {by}: takes {} values ({}), not two; name the pair as --by {by}=BASE,PATCHED",
            by_values.len(),
            by_values.join(", ")
        )),
    }
}

/// The keys making the column groups: `columns` (columns of the table
/// other than `by`), else `arch` when it varies, else every varying key.
fn column_keys(
    keys: &[String],
    by: &str,
    varying: &[String],
    columns: Option<&[String]>,
) -> Result<Vec<String>, String> {
    match columns {
        Some(c) => {
            for k in c {
                if !keys.contains(k) || k == by {
                    return Err(format!(
                        "--columns {k}: not a column of the table other than --by {by}{}",
                        foliosim_uapi::names::did_you_mean(
                            k,
                            keys.iter().map(String::as_str).filter(|c| *c != by)
                        )
                    ));
                }
            }
            Ok(c.to_vec())
        }
        None if varying.iter().any(|k| k == "arch") => Ok(vec!["arch".into()]),
        None => Ok(varying.to_vec()),
    }
}

/// How the points of a table are laid out in a diff: `by` tells base from
/// patched, `column_keys` the column groups, `block_keys` the row blocks.
struct Layout<'a> {
    pts: &'a [PointData],
    by: &'a str,
    column_keys: &'a [String],
    block_keys: &'a [String],
}

impl Layout<'_> {
    /// The point whose `by` is `side`, in column group `g` and row block
    /// `b`.
    fn find(&self, side: &str, g: &[String], b: &[String]) -> Option<&PointData> {
        self.pts.iter().find(|p| {
            p.labels[self.by] == side
                && self
                    .column_keys
                    .iter()
                    .zip(g)
                    .all(|(k, v)| p.labels[k] == *v)
                && self
                    .block_keys
                    .iter()
                    .zip(b)
                    .all(|(k, v)| p.labels[k] == *v)
        })
    }

    /// One block per combination of the row-block keys, comparing `base`
    /// with `patched` in each column group of `groups`.
    fn blocks(&self, base: &str, patched: &str, groups: &[Vec<String>]) -> Vec<Block> {
        let empty = BTreeMap::new();
        let mut blocks = Vec::new();
        for b in combos(self.pts, self.block_keys) {
            let sides: Vec<(&Values, &Values)> = groups
                .iter()
                .map(|g| {
                    (
                        self.find(base, g, &b).map_or(&empty, |p| &p.values),
                        self.find(patched, g, &b).map_or(&empty, |p| &p.values),
                    )
                })
                .collect();
            blocks.push(Block {
                label: self.block_keys.iter().cloned().zip(b).collect(),
                rows: diff_rows(row_keys(sides.iter().flat_map(|(x, y)| [*x, *y])), &sides),
            });
        }
        blocks
    }
}

/// Compare the points of a sweep table whose key `by` is `pair.0` (base)
/// with those where it is `pair.1` (patched), everything else equal.
/// Without `pair`, `by` must take exactly two values: the first in the
/// table is the base.
///
/// `by` is a grid column or `arch`, `scenario` or `engine`. The other
/// columns that vary make the column groups when named in `columns`, the
/// rest the row blocks; by default `arch` (when it varies) is the column
/// groups and every other varying key a row-block key; when `arch` does
/// not vary, every varying key is a column group key.
pub fn diff_table(
    t: &Table,
    by: &str,
    pair: Option<(&str, &str)>,
    columns: Option<&[String]>,
) -> Result<Diff, String> {
    let mut keys: Vec<String> = t.grid_columns.clone();
    keys.extend(["scenario", "arch", "engine"].map(String::from));
    if !keys.iter().any(|k| k == by) {
        return Err(format!(
            "--by {by}: the table has no such column{}; its grid columns: {}",
            foliosim_uapi::names::did_you_mean(by, keys.iter().map(String::as_str)),
            t.grid_columns.join(", ")
        ));
    }
    let (pts, mut notes) = table_points(t);
    let (base, patched) = base_and_patched(by, &values_of(&pts, by), pair)?;
    let varying: Vec<String> = keys
        .iter()
        .filter(|k| *k != by && values_of(&pts, k).len() > 1)
        .cloned()
        .collect();
    let column_keys = column_keys(&keys, by, &varying, columns)?;
    let block_keys: Vec<String> = varying
        .iter()
        .filter(|k| !column_keys.contains(k))
        .cloned()
        .collect();
    let groups = combos(&pts, &column_keys);
    let layout = Layout {
        pts: &pts,
        by,
        column_keys: &column_keys,
        block_keys: &block_keys,
    };
    let blocks = layout.blocks(&base, &patched, &groups);
    // Context: what every point shares.
    let fixed: Vec<String> = ["scenario", "engine"]
        .iter()
        .filter(|k| !varying.iter().any(|v| v == *k) && *k != &by)
        .filter_map(|k| pts.first().map(|p| format!("{k} {}", p.labels[*k])))
        .collect();
    if !fixed.is_empty() {
        notes.insert(0, fixed.join("  "));
    }
    Ok(Diff {
        by: by.to_string(),
        base,
        patched,
        notes,
        column_keys,
        groups,
        blocks,
    })
}

impl Diff {
    /// The rows of `b` to show: every row with `all`, else the changed ones.
    fn shown<'a>(&self, b: &'a Block, all: bool) -> Vec<&'a DiffRow> {
        b.rows
            .iter()
            .filter(|r| all || r.cells.iter().any(Cell::changed))
            .collect()
    }

    /// Whether rows need their phase in the label (more than one phase).
    fn multi_phase(&self) -> bool {
        let mut it = self.blocks.iter().flat_map(|b| &b.rows).map(|r| &r.phase);
        let first = it.next();
        it.any(|p| Some(p) != first)
    }

    fn row_label(&self, r: &DiffRow) -> String {
        if self.multi_phase() {
            format!("{}: {}", r.phase, r.name)
        } else {
            r.name.clone()
        }
    }

    fn group_label(&self, g: &[String]) -> String {
        match self.column_keys.as_slice() {
            [k] if k == "arch" => g[0].clone(),
            _ => self
                .column_keys
                .iter()
                .zip(g)
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    fn title(&self) -> String {
        if self.by == "report" {
            "base vs patched".to_string()
        } else {
            format!(
                "{by}={} (base) vs {by}={} (patched)",
                self.base,
                self.patched,
                by = self.by
            )
        }
    }

    /// Keep only the rows named in `names` (counter names, `modelled_ns`);
    /// `foliosim diff --only`. A name no row has is an error naming the
    /// closest names the diff has.
    pub fn retain_names(&mut self, names: &[String]) -> Result<(), String> {
        let have: std::collections::BTreeSet<&str> = self
            .blocks
            .iter()
            .flat_map(|b| b.rows.iter().map(|r| r.name.as_str()))
            .collect();
        if let Some(n) = names.iter().find(|n| !have.contains(n.as_str())) {
            return Err(format!(
                "--only {n}: no such value in the inputs{}",
                foliosim_uapi::names::did_you_mean(n, have.iter().copied())
            ));
        }
        for b in &mut self.blocks {
            b.rows.retain(|r| names.contains(&r.name));
        }
        Ok(())
    }

    /// Whether every block has one row (after [`Diff::retain_names`] of one
    /// name): then the blocks become the rows of one table.
    fn compact(&self) -> bool {
        self.blocks.len() > 1 && self.blocks.iter().all(|b| b.rows.len() == 1)
    }

    /// The sections to print: (heading, first column's title, rows with
    /// their labels). One per block; in the compact form one in all, each
    /// row labelled with its block's values (every block shown).
    #[allow(clippy::type_complexity)]
    fn sections(&self, all: bool) -> Vec<(String, String, Vec<(String, &DiffRow)>)> {
        if self.compact() {
            let keys: Vec<&str> = self.blocks[0]
                .label
                .iter()
                .map(|(k, _)| k.as_str())
                .collect();
            let rows = self
                .blocks
                .iter()
                .map(|b| {
                    let l: Vec<&str> = b.label.iter().map(|(_, v)| v.as_str()).collect();
                    (l.join(" "), &b.rows[0])
                })
                .collect();
            let r = &self.blocks[0].rows[0];
            return vec![(self.row_label(r), keys.join(" "), rows)];
        }
        self.blocks
            .iter()
            .map(|b| {
                let l: Vec<String> = b.label.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let rows = self
                    .shown(b, all)
                    .into_iter()
                    .map(|r| (self.row_label(r), r))
                    .collect();
                (l.join(" "), String::new(), rows)
            })
            .collect()
    }

    /// Plain fixed-width ASCII text: a title, the notes, then for each
    /// block its label, a header line per column group and a line per
    /// row: the changed ones, or `all` of them. When every block has one
    /// row (`--only NAME`), the blocks are the lines of one table.
    pub fn text(&self, all: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.title());
        for n in &self.notes {
            let _ = writeln!(out, "{n}");
        }
        let sections = self.sections(all);
        // Widths over every section, so the sections line up.
        let label_w = sections
            .iter()
            .flat_map(|(_, first, rows)| rows.iter().map(|(l, _)| l.len()).chain([first.len()]))
            .chain([7])
            .max()
            .unwrap_or(7);
        let heads = ["base", "patched", "change", "%"];
        let mut w = heads.map(str::len);
        for (_, r) in sections.iter().flat_map(|(_, _, rows)| rows) {
            for c in &r.cells {
                for (i, s) in Self::cols(c).iter().enumerate() {
                    w[i] = w[i].max(s.len());
                }
            }
        }
        let inner = w.iter().sum::<usize>() + 6;
        let group_w = self
            .groups
            .iter()
            .map(|g| self.group_label(g).len())
            .fold(inner, usize::max);
        let pad = group_w - inner;
        let cells = |line: &mut String, cols: &[String; 4]| {
            let _ = write!(line, "   {:pad$}", "");
            for (i, s) in cols.iter().enumerate() {
                let sep = if i == 0 { "" } else { "  " };
                let _ = write!(line, "{sep}{s:>width$}", width = w[i]);
            }
        };
        for (heading, first, rows) in &sections {
            out.push('\n');
            if !heading.is_empty() {
                let _ = writeln!(out, "{heading}");
            }
            if rows.is_empty() {
                let _ = writeln!(out, "(no value changed)");
                continue;
            }
            if !self.column_keys.is_empty() {
                let mut line = format!("{:label_w$}", "");
                for g in &self.groups {
                    let _ = write!(line, "   {:>group_w$}", self.group_label(g));
                }
                let _ = writeln!(out, "{}", line.trim_end());
            }
            let mut line = format!("{first:label_w$}");
            for _ in &self.groups {
                cells(&mut line, &heads.map(String::from));
            }
            let _ = writeln!(out, "{}", line.trim_end());
            for (label, r) in rows {
                let mut line = format!("{label:label_w$}");
                for c in &r.cells {
                    cells(&mut line, &Self::cols(c));
                }
                let _ = writeln!(out, "{}", line.trim_end());
            }
        }
        out
    }

    /// A cell's four columns as text.
    fn cols(c: &Cell) -> [String; 4] {
        [
            Cell::fmt_value(c.base),
            Cell::fmt_value(c.patched),
            c.fmt_change(),
            c.fmt_percent(),
        ]
    }

    /// Markdown: the title and notes as paragraphs, a table per block (one
    /// table in the compact form, as for [`Diff::text`]).
    pub fn markdown(&self, all: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "**{}**\n", self.title().replace('*', "\\*"));
        for n in &self.notes {
            let _ = writeln!(out, "{n}  ");
        }
        for (heading, first, rows) in self.sections(all) {
            out.push('\n');
            if !heading.is_empty() {
                let _ = writeln!(out, "`{heading}`\n");
            }
            if rows.is_empty() {
                let _ = writeln!(out, "(no value changed)");
                continue;
            }
            let first = if first.is_empty() { "counter" } else { &first };
            let mut head = format!("| {first} |");
            let mut rule = "|---|".to_string();
            for g in &self.groups {
                let gl = self.group_label(g);
                let p = if gl.is_empty() {
                    String::new()
                } else {
                    format!("{gl} ")
                };
                for h in ["base", "patched", "change", "%"] {
                    let _ = write!(head, " {p}{h} |");
                    rule.push_str("---:|");
                }
            }
            let _ = writeln!(out, "{head}\n{rule}");
            for (label, r) in rows {
                let mut line = format!("| `{label}` |");
                for c in &r.cells {
                    let [a, b, ch, pct] = Self::cols(c);
                    let _ = write!(line, " {a} | {b} | {ch} | {pct} |");
                }
                let _ = writeln!(out, "{line}");
            }
        }
        out
    }

    /// The long records of [`Diff::csv`] and [`Diff::json`]: block keys,
    /// column-group keys, phase, kind, name, base, patched, change,
    /// pct_change.
    fn records(&self, all: bool) -> (Vec<String>, Vec<Vec<String>>) {
        let mut head: Vec<String> = self
            .blocks
            .first()
            .map(|b| b.label.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        head.extend(self.column_keys.iter().cloned());
        head.extend(
            [
                "phase",
                "kind",
                "name",
                "base",
                "patched",
                "change",
                "pct_change",
            ]
            .map(String::from),
        );
        let mut recs = Vec::new();
        for b in &self.blocks {
            for r in self.shown(b, all) {
                for (g, c) in self.groups.iter().zip(&r.cells) {
                    if !all && !c.changed() {
                        continue;
                    }
                    let mut rec: Vec<String> = b.label.iter().map(|(_, v)| v.clone()).collect();
                    rec.extend(g.iter().cloned());
                    rec.extend([
                        r.phase.clone(),
                        r.kind.clone(),
                        r.name.clone(),
                        c.base.map(|v| v.to_string()).unwrap_or_default(),
                        c.patched.map(|v| v.to_string()).unwrap_or_default(),
                        c.change().map(|v| v.to_string()).unwrap_or("n/a".into()),
                        c.percent()
                            .map(|p| format!("{p:.4}"))
                            .unwrap_or("n/a".into()),
                    ]);
                    recs.push(rec);
                }
            }
        }
        (head, recs)
    }

    /// CSV: one record per changed cell (every cell with `all`), with the
    /// columns: the row-block keys, the column-group keys, `phase`, `kind`,
    /// `name`, `base`, `patched`, `change`, `pct_change` (a number with
    /// four decimals and no percent sign; `n/a` for a zero base, and
    /// `change` `n/a` for a value missing on one side).
    pub fn csv(&self, all: bool) -> Result<String, String> {
        let (head, recs) = self.records(all);
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&head).map_err(|e| e.to_string())?;
        for r in recs {
            w.write_record(&r).map_err(|e| e.to_string())?;
        }
        String::from_utf8(w.into_inner().map_err(|e| e.to_string())?).map_err(|e| e.to_string())
    }

    /// JSON: one wrapper object with the foliosim version, what was
    /// compared (`by`, `base`, `patched`), the notes, the inputs the
    /// caller describes (file names, provenance) and `rows`: objects with
    /// the fields of [`Diff::csv`], where base, patched, change and
    /// pct_change are numbers (null where there is none).
    /// The diff in `format`: `text` (fixed-width, for a mail), `md`,
    /// `csv` or `json` (`inputs` describe what was compared).
    pub fn render(&self, format: &str, all: bool, inputs: &[Value]) -> Result<String, String> {
        Ok(match format {
            "text" => self.text(all),
            "md" => self.markdown(all),
            "csv" => self.csv(all)?,
            "json" => self.json(all, inputs),
            f => return Err(format!("format {f:?}: expected text, md, csv or json")),
        })
    }

    pub fn json(&self, all: bool, inputs: &[Value]) -> String {
        let (head, recs) = self.records(all);
        let numeric = ["base", "patched", "change", "pct_change"];
        let rows: Vec<Value> = recs
            .into_iter()
            .map(|r| {
                Value::Object(
                    head.iter()
                        .zip(r)
                        .map(|(k, v)| {
                            let v = if numeric.contains(&k.as_str()) {
                                v.parse::<i64>()
                                    .map(Value::from)
                                    .or_else(|_| v.parse::<f64>().map(|f| json!(f)))
                                    .unwrap_or(Value::Null)
                            } else {
                                json!(v)
                            };
                            (k.clone(), v)
                        })
                        .collect(),
                )
            })
            .collect();
        let doc = json!({
            "foliosim": foliosim_report::VERSION,
            "by": self.by,
            "base": self.base,
            "patched": self.patched,
            "notes": self.notes,
            "inputs": inputs,
            "rows": rows,
        });
        serde_json::to_string_pretty(&doc).expect("serialisable") + "\n"
    }
}

/// A key to diff a table by and the pair of its values when named.
pub type By<'a> = (&'a str, Option<(&'a str, &'a str)>);

/// A `--by` argument, `KEY` or `KEY=BASE,PATCHED`: the key and the
/// pair of values when it names them.
pub fn parse_by(by: &str) -> Result<By<'_>, String> {
    match by.split_once('=') {
        None => Ok((by, None)),
        Some((k, v)) => match v.split(',').collect::<Vec<_>>()[..] {
            [b, p] => Ok((k, Some((b.trim(), p.trim())))),
            _ => Err(format!("--by {by}: expected KEY or KEY=BASE,PATCHED")),
        },
    }
}

/// Read `foliosim run --format json` output (the document's `reports`),
/// with each phase's modelled time (`modelled_ns`) when present.
pub fn reports_from_json(text: &str) -> Result<Vec<Report>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    // The document `{"foliosim": VERSION, "reports": [...]}`; also a bare
    // report or an array of them, as older versions wrote.
    let items = match v {
        Value::Array(a) => a,
        Value::Object(mut o) if o.contains_key("reports") => match o.remove("reports") {
            Some(Value::Array(a)) => a,
            _ => return Err("`reports` is not a list".into()),
        },
        one => vec![one],
    };
    items
        .iter()
        .map(|item| {
            let mut r = Report::from_json_value(item)?;
            // from_json_value leaves time out; a diff shows modelled_ns.
            if let Some(phases) = item.get("phases").and_then(Value::as_array) {
                for (p, jp) in r.phases.iter_mut().zip(phases) {
                    if let Some(ns) = jp.get("modelled_ns").and_then(Value::as_u64) {
                        p.time = Some(foliosim_report::PhaseTime {
                            profile: jp
                                .get("profile")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                            modelled_ns: ns,
                            breakdown: BTreeMap::new(),
                        });
                    }
                }
            }
            Ok(r)
        })
        .collect()
}
