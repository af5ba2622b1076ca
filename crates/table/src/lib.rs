//! The tidy table of a sweep: a row per point, phase and value, with the
//! columns `point, <one per grid key>, scenario, arch, engine, phase,
//! kind, name, value, error`; its CSV, JSON-lines, Arrow IPC and Parquet
//! files.
//!
//! A table written by a sweep also has a provenance (a
//! `foliosim_report::Provenance`: foliosim's version and commit, the
//! scenario files, the overrides, the engine, its kernel and
//! architecture, the cost profile): in CSV and JSON lines as the columns
//! [`PROVENANCE_COLUMNS`], the same on every row, after `error`; in Arrow
//! and Parquet as the schema's metadata under [`METADATA_KEY`] (a JSON
//! object). A table without it (an older foliosim's) still reads.
//!
//! `phase`, `kind`, `name` and `value` are those of
//! `foliosim_report::Report::tidy_rows`. A failed point is one row whose
//! `error` holds the message and whose `phase`, `kind`, `name` and `value`
//! are empty (null in JSON lines and Arrow). A grid over `arch` fills the
//! `arch` column (no second column).
//!
//! The table knows a sweep's points and results only through
//! [`SweepPoint`] and [`PointOutcome`] (the sweep crate, `foliosim-explore`,
//! implements them), so that what reads and draws tables needs none of the
//! engines that run sweeps.

#![forbid(unsafe_code)]

mod arrow;
mod provenance;

pub use provenance::{join_words, METADATA_KEY, PROVENANCE_COLUMNS};

use std::collections::BTreeSet;
use std::path::Path;

use foliosim_report::{Provenance, Report};
use serde_json::{json, Map, Value};

/// A point of a sweep, as the table sees it.
pub trait SweepPoint {
    /// Position in the sweep's expansion, from 0 (the `point` column).
    fn index(&self) -> usize;
    /// The scenario's name with the point's overrides (the `scenario`
    /// column).
    fn scenario(&self) -> &str;
    /// The architecture with the point's overrides (the `arch` column).
    fn arch(&self) -> &str;
    /// The grid coordinates: each grid key (as written) and its value.
    fn grid(&self) -> &[(String, String)];
}

/// A point and what running it gave, as the table sees it.
pub trait PointOutcome {
    type Point: SweepPoint;
    fn point(&self) -> &Self::Point;
    /// The engine's name (the `engine` column).
    fn engine(&self) -> &str;
    /// The report, or why the point failed (the `error` column).
    fn report(&self) -> Result<&Report, &str>;
}

/// The file formats of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    /// Comma-separated values with a header (RFC 4180 quoting).
    Csv,
    /// One JSON object per row and line, keys in column order.
    Jsonl,
    /// The Arrow IPC file format (Feather v2): `pyarrow.feather`,
    /// `pandas.read_feather`, `polars.read_ipc` read it.
    Arrow,
    /// Parquet, grid columns typed (numbers as numbers): `pandas.read_parquet`,
    /// `polars.read_parquet`, DuckDB read it.
    Parquet,
}

impl TableFormat {
    /// The names `--format` accepts.
    pub const NAMES: [&'static str; 4] = ["csv", "jsonl", "arrow", "parquet"];

    /// The file name extensions [`TableFormat::from_path`] knows.
    pub const EXTENSIONS: [&'static str; 7] = [
        ".csv", ".jsonl", ".ndjson", ".arrow", ".feather", ".ipc", ".parquet",
    ];

    /// The format's name in [`TableFormat::NAMES`].
    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Csv => "csv",
            TableFormat::Jsonl => "jsonl",
            TableFormat::Arrow => "arrow",
            TableFormat::Parquet => "parquet",
        }
    }

    /// The format called `s` (one of [`TableFormat::NAMES`]).
    pub fn from_name(s: &str) -> Option<TableFormat> {
        match s {
            "csv" => Some(TableFormat::Csv),
            "jsonl" => Some(TableFormat::Jsonl),
            "arrow" => Some(TableFormat::Arrow),
            "parquet" => Some(TableFormat::Parquet),
            _ => None,
        }
    }

    /// The format a file name's extension implies: `.csv`; `.jsonl`,
    /// `.ndjson`; `.arrow`, `.feather`, `.ipc`; `.parquet`.
    pub fn from_path(path: &Path) -> Option<TableFormat> {
        match path.extension()?.to_str()? {
            "csv" => Some(TableFormat::Csv),
            "jsonl" | "ndjson" => Some(TableFormat::Jsonl),
            "arrow" | "feather" | "ipc" => Some(TableFormat::Arrow),
            "parquet" => Some(TableFormat::Parquet),
            _ => None,
        }
    }
}

impl TableFormat {
    /// The format of a table file's contents: Arrow's magic `ARROW1`,
    /// Parquet's `PAR1`, a JSON object per line, else CSV.
    pub fn sniff(bytes: &[u8]) -> TableFormat {
        if bytes.starts_with(b"ARROW1") {
            TableFormat::Arrow
        } else if bytes.starts_with(b"PAR1") {
            TableFormat::Parquet
        } else if bytes.first() == Some(&b'{') {
            TableFormat::Jsonl
        } else {
            TableFormat::Csv
        }
    }
}

/// The type a grid column's values share, which typed readers give it
/// (Parquet's columns, the Python package's DataFrames).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridType {
    /// Every value is an integer written plainly (`4096`, not `0100`).
    Int,
    /// Every value is a finite decimal number written as it reads back.
    Float,
    /// Every value is `true` or `false`.
    Bool,
    /// Anything else (`64K`, `zram`), and a column without values.
    Text,
}

impl GridType {
    /// The type of a grid column whose values are `values`.
    pub fn of<'a>(mut values: impl Iterator<Item = &'a str> + Clone) -> GridType {
        let int = |v: &str| v.parse::<i64>().is_ok_and(|n| n.to_string() == v);
        let float = |v: &str| {
            v.parse::<f64>()
                .is_ok_and(|x| x.is_finite() && x.to_string() == v)
        };
        if values.clone().next().is_none() {
            GridType::Text
        } else if values.clone().all(int) {
            GridType::Int
        } else if values.clone().all(float) {
            GridType::Float
        } else if values.all(|v| v == "true" || v == "false") {
            GridType::Bool
        } else {
            GridType::Text
        }
    }

    /// The type's name: `int`, `float`, `bool`, `str`.
    pub fn name(self) -> &'static str {
        match self {
            GridType::Int => "int",
            GridType::Float => "float",
            GridType::Bool => "bool",
            GridType::Text => "str",
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub point: u64,
    /// The value of each grid column ([`Table::grid_columns`]), in order.
    pub grid: Vec<String>,
    pub scenario: String,
    pub arch: String,
    pub engine: String,
    /// Empty on a failed point's row.
    pub phase: String,
    pub kind: String,
    pub name: String,
    /// None on a failed point's row.
    pub value: Option<i128>,
    /// Empty unless the point failed.
    pub error: String,
}

impl Row {
    /// Whether this row records a failed point.
    pub fn failed(&self) -> bool {
        !self.error.is_empty()
    }
}

/// The tidy table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// The grid keys that have a column, in grid order (every grid key
    /// but `arch`).
    pub grid_columns: Vec<String>,
    pub rows: Vec<Row>,
    /// Where the rows came from (None: not known, as in a table an older
    /// foliosim wrote).
    pub provenance: Option<Provenance>,
}

/// What identifies a point across runs of a sweep: scenario name, arch,
/// engine and the grid columns' values.
pub type PointKey = (String, String, String, Vec<String>);

impl Table {
    /// An empty table with a column for each of `grid_keys` (but `arch`).
    pub fn new(grid_keys: &[String]) -> Table {
        Table {
            grid_columns: grid_keys.iter().filter(|k| *k != "arch").cloned().collect(),
            rows: Vec::new(),
            provenance: None,
        }
    }

    /// Every column name, in order: the provenance columns only when the
    /// table has a provenance (they are not in Arrow and Parquet files).
    pub fn columns(&self) -> Vec<String> {
        let mut c = self.row_columns();
        if self.provenance.is_some() {
            c.extend(PROVENANCE_COLUMNS.map(String::from));
        }
        c
    }

    /// The columns of the rows' own fields, in order (no provenance).
    pub fn row_columns(&self) -> Vec<String> {
        let mut c = vec!["point".to_string()];
        c.extend(self.grid_columns.iter().cloned());
        c.extend(
            [
                "scenario", "arch", "engine", "phase", "kind", "name", "value", "error",
            ]
            .map(String::from),
        );
        c
    }

    /// The table of `results` of a sweep over `grid_keys`.
    pub fn from_results<R: PointOutcome>(grid_keys: &[String], results: &[R]) -> Table {
        let mut t = Table::new(grid_keys);
        for r in results {
            let point = r.point();
            let base = |phase: &str, kind: &str, name: String, value, error: String| Row {
                point: point.index() as u64,
                grid: t.grid_values(point),
                scenario: point.scenario().to_string(),
                arch: point.arch().to_string(),
                engine: r.engine().to_string(),
                phase: phase.to_string(),
                kind: kind.to_string(),
                name,
                value,
                error,
            };
            let rows: Vec<Row> = match r.report() {
                Ok(rep) => rep
                    .tidy_rows()
                    .into_iter()
                    .map(|tr| {
                        base(
                            tr.phase,
                            tr.kind.as_str(),
                            tr.name,
                            Some(tr.value),
                            String::new(),
                        )
                    })
                    .collect(),
                Err(e) => vec![base("", "", String::new(), None, e.to_string())],
            };
            t.rows.extend(rows);
        }
        t
    }

    /// `point`'s values of the grid columns.
    pub fn grid_values(&self, point: &impl SweepPoint) -> Vec<String> {
        self.grid_columns
            .iter()
            .map(|c| {
                point
                    .grid()
                    .iter()
                    .find(|(k, _)| k == c)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The key that identifies `point` run on engine `engine`.
    pub fn point_key(&self, point: &impl SweepPoint, engine: &str) -> PointKey {
        (
            point.scenario().to_string(),
            point.arch().to_string(),
            engine.to_string(),
            self.grid_values(point),
        )
    }

    /// The keys of the points this table holds results of (not the failed
    /// ones).
    pub fn completed(&self) -> BTreeSet<PointKey> {
        let failed: BTreeSet<u64> = self
            .rows
            .iter()
            .filter(|r| r.failed())
            .map(|r| r.point)
            .collect();
        self.rows
            .iter()
            .filter(|r| !failed.contains(&r.point))
            .map(|r| {
                (
                    r.scenario.clone(),
                    r.arch.clone(),
                    r.engine.clone(),
                    r.grid.clone(),
                )
            })
            .collect()
    }

    /// Drop the rows of failed points whose key is in `rerun` (they are
    /// run again).
    pub fn drop_failed(&mut self, rerun: &BTreeSet<PointKey>) {
        self.rows.retain(|r| {
            !(r.failed()
                && rerun.contains(&(
                    r.scenario.clone(),
                    r.arch.clone(),
                    r.engine.clone(),
                    r.grid.clone(),
                )))
        });
    }

    /// Prepare this table (read from a sweep's output file) for a re-run
    /// of a sweep over `grid_keys` on engine `engine`: refuse a table of
    /// another grid, drop the rows of failed points that run again, and
    /// return the `points` it does not hold. Append the new results with
    /// [`Table::append`].
    pub fn resume<P: SweepPoint>(
        &mut self,
        grid_keys: &[String],
        mut points: Vec<P>,
        engine: &str,
    ) -> Result<Vec<P>, String> {
        let want = Table::new(grid_keys).grid_columns;
        if self.grid_columns != want {
            let shown = |k: &[String]| {
                if k.is_empty() {
                    "no key but arch".to_string()
                } else {
                    k.join(", ")
                }
            };
            return Err(format!(
                "holds a sweep over {} and this sweep is over {}; write it to another file",
                shown(&self.grid_columns),
                shown(&want)
            ));
        }
        let done = self.completed();
        points.retain(|p| !done.contains(&self.point_key(p, engine)));
        let rerun = points.iter().map(|p| self.point_key(p, engine)).collect();
        self.drop_failed(&rerun);
        Ok(points)
    }

    /// Append `other`'s rows (same grid columns), numbering its points
    /// after this table's last point so that numbers stay unique.
    pub fn append(&mut self, other: Table) -> Result<(), String> {
        if other.grid_columns != self.grid_columns {
            return Err(format!(
                "the grid columns differ: {:?} and {:?}",
                self.grid_columns, other.grid_columns
            ));
        }
        let mut next = self.rows.iter().map(|r| r.point + 1).max().unwrap_or(0);
        let mut renumber: std::collections::HashMap<u64, u64> = Default::default();
        for mut r in other.rows {
            r.point = *renumber.entry(r.point).or_insert_with(|| {
                next += 1;
                next - 1
            });
            self.rows.push(r);
        }
        Ok(())
    }

    /// The table as a file of `format`.
    pub fn encode(&self, format: TableFormat) -> Result<Vec<u8>, String> {
        match format {
            TableFormat::Csv => self.to_csv(),
            TableFormat::Jsonl => Ok(self.to_jsonl()),
            TableFormat::Arrow => crate::arrow::encode(self),
            TableFormat::Parquet => crate::arrow::encode_parquet(self),
        }
    }

    /// Read the table file at `path`: its format from the extension
    /// ([`TableFormat::from_path`]), else from its first bytes. Errors
    /// name the file.
    pub fn load(path: &Path) -> Result<Table, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Table::decode_file(path, &bytes)
    }

    /// [`Table::load`] of the bytes already read from `path`.
    pub fn decode_file(path: &Path, bytes: &[u8]) -> Result<Table, String> {
        let format = TableFormat::from_path(path).unwrap_or_else(|| TableFormat::sniff(bytes));
        Table::decode(bytes, format).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Read a table file of `format` (as [`Table::encode`] writes it).
    pub fn decode(bytes: &[u8], format: TableFormat) -> Result<Table, String> {
        match format {
            TableFormat::Csv => Table::from_csv(bytes),
            TableFormat::Jsonl => Table::from_jsonl(bytes),
            TableFormat::Arrow => crate::arrow::decode(bytes),
            TableFormat::Parquet => crate::arrow::decode_parquet(bytes),
        }
    }

    /// Read the table file at `path`.
    pub fn read(path: &Path, format: TableFormat) -> Result<Table, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Table::decode(&bytes, format).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The grid columns named by a header (the columns between `point`
    /// and `scenario`), checking the fixed ones.
    pub(crate) fn from_header(cols: &[String]) -> Result<Table, String> {
        let want = |i: usize, name: &str| -> Result<(), String> {
            match cols.get(i) {
                Some(c) if c == name => Ok(()),
                other => Err(format!(
                    "not a sweep table: column {} is {:?}, expected `{name}`",
                    i + 1,
                    other.map_or("missing", |s| s.as_str())
                )),
            }
        };
        want(0, "point")?;
        let n = cols
            .iter()
            .position(|c| c == "scenario")
            .ok_or("not a sweep table: no `scenario` column")?;
        let mut t = Table {
            grid_columns: cols[1..n].to_vec(),
            rows: Vec::new(),
            provenance: None,
        };
        let own = t.row_columns();
        if cols.len() == own.len() + PROVENANCE_COLUMNS.len() {
            // Filled in from the rows.
            t.provenance = Some(Provenance::default());
        }
        for (i, c) in t.columns().iter().enumerate() {
            want(i, c)?;
        }
        if cols.len() != t.columns().len() {
            return Err(format!(
                "not a sweep table: {} columns, expected {} (or {} with the provenance columns)",
                cols.len(),
                own.len(),
                own.len() + PROVENANCE_COLUMNS.len()
            ));
        }
        Ok(t)
    }

    fn to_csv(&self) -> Result<Vec<u8>, String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let e = |e: csv::Error| e.to_string();
        w.write_record(self.columns()).map_err(e)?;
        let prov = self.provenance.as_ref().map(provenance::cells);
        let prov = prov.as_ref().map_or(&[][..], |p| &p[..]);
        for r in &self.rows {
            let mut rec = vec![r.point.to_string()];
            rec.extend(r.grid.iter().cloned());
            rec.extend([
                r.scenario.clone(),
                r.arch.clone(),
                r.engine.clone(),
                r.phase.clone(),
                r.kind.clone(),
                r.name.clone(),
                r.value.map(|v| v.to_string()).unwrap_or_default(),
                r.error.clone(),
            ]);
            rec.extend(prov.iter().cloned());
            w.write_record(rec).map_err(e)?;
        }
        w.into_inner().map_err(|e| e.to_string())
    }

    fn from_csv(bytes: &[u8]) -> Result<Table, String> {
        let mut rd = csv::ReaderBuilder::new().from_reader(bytes);
        let header: Vec<String> = rd
            .headers()
            .map_err(|e| e.to_string())?
            .iter()
            .map(String::from)
            .collect();
        let mut t = Table::from_header(&header)?;
        let g = t.grid_columns.len();
        let mut prov = ProvenanceCells::default();
        for (i, rec) in rd.records().enumerate() {
            let rec = rec.map_err(|e| e.to_string())?;
            let f = |j: usize| rec.get(j).unwrap_or_default().to_string();
            let line = i + 2;
            if t.provenance.is_some() {
                let cells: Vec<String> = (g + 9..g + 9 + PROVENANCE_COLUMNS.len()).map(f).collect();
                prov.add(cells, &f(g + 3), line)?;
            }
            let point = f(0)
                .parse()
                .map_err(|_| format!("line {line}: `point` is not a number"))?;
            let value = match f(g + 7).as_str() {
                "" => None,
                v => Some(
                    v.parse()
                        .map_err(|_| format!("line {line}: `value` {v:?} is not an integer"))?,
                ),
            };
            t.rows.push(Row {
                point,
                grid: (1..=g).map(f).collect(),
                scenario: f(g + 1),
                arch: f(g + 2),
                engine: f(g + 3),
                phase: f(g + 4),
                kind: f(g + 5),
                name: f(g + 6),
                value,
                error: f(g + 8),
            });
        }
        t.provenance = prov.provenance(t.provenance.is_some())?;
        Ok(t)
    }

    fn to_jsonl(&self) -> Vec<u8> {
        let mut out = String::new();
        let prov = self.provenance.as_ref().map(provenance::cells);
        let prov = prov.as_ref().map_or(&[][..], |p| &p[..]);
        let opt = |s: &str| {
            if s.is_empty() {
                Value::Null
            } else {
                json!(s)
            }
        };
        for r in &self.rows {
            let mut m = Map::new();
            m.insert("point".into(), json!(r.point));
            for (k, v) in self.grid_columns.iter().zip(&r.grid) {
                m.insert(k.clone(), json!(v));
            }
            m.insert("scenario".into(), json!(r.scenario));
            m.insert("arch".into(), json!(r.arch));
            m.insert("engine".into(), json!(r.engine));
            m.insert("phase".into(), opt(&r.phase));
            m.insert("kind".into(), opt(&r.kind));
            m.insert("name".into(), opt(&r.name));
            let value = match r.value {
                None => Value::Null,
                Some(v) => match (i64::try_from(v), u64::try_from(v)) {
                    (Ok(i), _) => json!(i),
                    (_, Ok(u)) => json!(u),
                    _ => json!(v.to_string()),
                },
            };
            m.insert("value".into(), value);
            m.insert("error".into(), opt(&r.error));
            for (k, v) in PROVENANCE_COLUMNS.iter().zip(prov) {
                let v = match (*k, v.parse::<u64>()) {
                    ("provenance.seed", Ok(n)) => json!(n),
                    _ => opt(v),
                };
                m.insert((*k).into(), v);
            }
            out.push_str(&Value::Object(m).to_string());
            out.push('\n');
        }
        out.into_bytes()
    }

    fn from_jsonl(bytes: &[u8]) -> Result<Table, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        let mut t: Option<Table> = None;
        let mut prov = ProvenanceCells::default();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let at = |m: String| format!("line {}: {m}", i + 1);
            let v: Value = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
            let obj = v
                .as_object()
                .ok_or_else(|| at("not a JSON object".into()))?;
            let table = match &mut t {
                Some(t) => t,
                None => {
                    let cols: Vec<String> = obj.keys().cloned().collect();
                    t.insert(Table::from_header(&cols).map_err(at)?)
                }
            };
            let s = |k: &str| -> String {
                match obj.get(k) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                }
            };
            let value = match obj.get("value") {
                Some(Value::Null) | None => None,
                Some(Value::Number(n)) => Some(
                    n.as_i64()
                        .map(i128::from)
                        .or_else(|| n.as_u64().map(i128::from))
                        .ok_or_else(|| at("`value` is not an integer".into()))?,
                ),
                Some(_) => return Err(at("`value` is not a number".into())),
            };
            let point = obj
                .get("point")
                .and_then(Value::as_u64)
                .ok_or_else(|| at("`point` is not a number".into()))?;
            let grid = table.grid_columns.iter().map(|k| s(k)).collect();
            if table.provenance.is_some() {
                let cells = PROVENANCE_COLUMNS.iter().map(|k| s(k)).collect();
                prov.add(cells, &s("engine"), i + 1)?;
            }
            table.rows.push(Row {
                point,
                grid,
                scenario: s("scenario"),
                arch: s("arch"),
                engine: s("engine"),
                phase: s("phase"),
                kind: s("kind"),
                name: s("name"),
                value,
                error: s("error"),
            });
        }
        let mut t = t.ok_or_else(|| "the file has no rows".to_string())?;
        t.provenance = prov.provenance(t.provenance.is_some())?;
        Ok(t)
    }
}

/// The provenance cells of a CSV or JSON-lines table's rows, which must
/// all be the same.
#[derive(Default)]
struct ProvenanceCells {
    /// The first row's cells, its engine and line.
    first: Option<(Vec<String>, String, usize)>,
}

impl ProvenanceCells {
    fn add(&mut self, cells: Vec<String>, engine: &str, line: usize) -> Result<(), String> {
        match &self.first {
            None => self.first = Some((cells, engine.to_string(), line)),
            Some((c, e, first)) if *c != cells || e != engine => {
                return Err(format!(
                    "line {line}: its provenance or engine is not line {first}'s: a table \
                     holds the runs of one sweep"
                ))
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// The table's provenance: None without the columns or rows.
    fn provenance(self, has_columns: bool) -> Result<Option<Provenance>, String> {
        match self.first {
            Some((cells, engine, line)) if has_columns => provenance::from_cells(&cells, &engine)
                .map(Some)
                .map_err(|e| format!("line {line}: {e}")),
            _ => Ok(None),
        }
    }
}

/// Check, before anything runs, that `path` can be written: not a
/// directory, in an existing directory where a file can be created. No
/// file is left behind.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!("{shown}: is a directory; name a file to write"));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(format!(
            "{shown}: the folder {} does not exist",
            dir.display()
        ));
    }
    let probe = dir.join(format!(
        ".foliosim-sweep-probe.{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("{shown}: cannot write there: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct P(usize, &'static str, Vec<(String, String)>);

    impl SweepPoint for P {
        fn index(&self) -> usize {
            self.0
        }
        fn scenario(&self) -> &str {
            self.1
        }
        fn arch(&self) -> &str {
            "x86_64"
        }
        fn grid(&self) -> &[(String, String)] {
            &self.2
        }
    }

    fn row(point: u64, size: &str, value: Option<i128>, error: &str) -> Row {
        Row {
            point,
            grid: vec![size.into()],
            scenario: "s".into(),
            arch: "x86_64".into(),
            engine: "sim".into(),
            phase: if error.is_empty() { "p" } else { "" }.into(),
            kind: match (error.is_empty(), value) {
                (false, _) => "",
                (true, Some(v)) if v > i64::MAX as i128 => "pagemap",
                _ => "counter",
            }
            .into(),
            name: if error.is_empty() { "pgfault" } else { "" }.into(),
            value,
            error: error.into(),
        }
    }

    fn table() -> Table {
        let keys = ["size".to_string(), "arch".to_string()];
        let mut t = Table::new(&keys);
        t.rows = vec![
            row(0, "4k", Some(-3), ""),
            // A present pagemap entry: bit 63 set.
            row(0, "4k", Some(1 << 63 | 5), ""),
            row(1, "64k", None, "s.toml: failed, \"quoted\""),
        ];
        t
    }

    #[test]
    fn every_format_reads_back_what_it_wrote() {
        let t = table();
        assert_eq!(
            t.columns(),
            [
                "point", "size", "scenario", "arch", "engine", "phase", "kind", "name", "value",
                "error"
            ]
        );
        for f in [
            TableFormat::Csv,
            TableFormat::Jsonl,
            TableFormat::Arrow,
            TableFormat::Parquet,
        ] {
            assert_eq!(TableFormat::from_name(f.name()), Some(f));
            let bytes = t.encode(f).unwrap();
            assert_eq!(TableFormat::sniff(&bytes), f);
            assert_eq!(Table::decode(&bytes, f).unwrap(), t, "{f:?}");
        }
        let err = Table::decode(b"point,scenario\n", TableFormat::Csv).unwrap_err();
        assert!(err.contains("not a sweep table"), "{err}");
    }

    #[test]
    fn a_damaged_arrow_file_is_an_error_not_a_panic() {
        // A table this crate wrote, with one byte of a buffer offset
        // changed: the Arrow reader panics on it ("the offset of the new
        // Buffer cannot exceed the existing length").
        let bytes = include_bytes!("../tests/data/damaged-buffer.arrow");
        assert_eq!(TableFormat::sniff(bytes), TableFormat::Arrow);
        let err = Table::decode(bytes, TableFormat::Arrow).unwrap_err();
        assert!(
            err.starts_with("not a readable Arrow IPC file: it is damaged"),
            "{err}"
        );
        // A footer that places a record batch far beyond the end of the
        // file (found by fuzzing): the Arrow reader would allocate what it
        // claims, 7.3 EB, and abort; it is refused first.
        let bytes = include_bytes!("../tests/data/huge-block.arrow");
        let err = Table::decode(bytes, TableFormat::Arrow).unwrap_err();
        assert!(
            err.contains("damaged (a block of") && err.contains("lies beyond its end"),
            "{err}"
        );
        // The thread reads the next table as before.
        let t = table();
        let good = t.encode(TableFormat::Arrow).unwrap();
        assert_eq!(Table::decode(&good, TableFormat::Arrow).unwrap(), t);
    }

    #[test]
    fn a_damaged_parquet_footer_is_an_error_not_an_abort() {
        // A table this crate wrote, with its footer damaged by the fuzzer:
        // parquet 54 reserved room for the 2^31-odd elements a Thrift list
        // header claimed, 76 GB, before reading any, and the process
        // aborted (apache/arrow-rs#10920). Parquet 60 refuses the footer
        // (a list of the wrong element type, found before its size).
        let bytes = include_bytes!("../tests/data/parquet-huge-list.parquet");
        assert_eq!(TableFormat::sniff(bytes), TableFormat::Parquet);
        let err = Table::decode(bytes, TableFormat::Parquet).unwrap_err();
        assert!(
            err.starts_with("not a Parquet file: Parquet error: "),
            "{err}"
        );
        // The footer of a table this crate writes, its schema list's header
        // (field 2 of the file metadata, after the version) changed from 11
        // elements to 2^31 - 1 (parquet 54 aborted on it too, reserving
        // 223 GB): refused for claiming more elements than the footer has
        // bytes, rather than reserving room for them.
        let t = table();
        let good = t.encode(TableFormat::Parquet).unwrap();
        let n = good.len();
        let len = u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap()) as usize;
        let footer = n - 8 - len;
        assert_eq!(good[footer..footer + 4], [0x15, 0x02, 0x19, 0xbc]);
        let mut bad = good[..footer + 3].to_vec();
        bad.extend([0xfc, 0xff, 0xff, 0xff, 0xff, 0x07]);
        bad.extend(&good[footer + 4..n - 8]);
        bad.extend((len as u32 + 5).to_le_bytes());
        bad.extend(b"PAR1");
        let err = Table::decode(&bad, TableFormat::Parquet).unwrap_err();
        assert!(
            err.contains("Thrift list size 2147483647 exceeds remaining input length"),
            "{err}"
        );
        // The thread reads the next table as before.
        assert_eq!(Table::decode(&good, TableFormat::Parquet).unwrap(), t);
    }

    #[test]
    fn parquet_lists_of_bools_cost_their_bytes() {
        // A table this crate wrote, damaged by the fuzzer: a page header
        // gained an unknown field holding a list claiming 2^31 bools.
        // Thrift's compact protocol gives each bool element a byte, but
        // parquet 60.1 skipped them without reading (`skip_till_depth`),
        // spinning 4 s for one list; the vendored copy reads them.
        let bytes = include_bytes!("../tests/data/parquet-bool-list.parquet");
        let err = Table::decode(bytes, TableFormat::Parquet).unwrap_err();
        assert!(err.starts_with("not a Parquet file: "), "{err}");
        // Found next: a page header whose unknown field claims a list of
        // 8-byte values running past the end of the column chunk. Parquet
        // 60.1's page-header reader skipped short without noticing the end
        // (32 s instrumented, one empty copy per element); the vendored
        // copy stops at the end of the input.
        let bytes = include_bytes!("../tests/data/parquet-double-list.parquet");
        let err = Table::decode(bytes, TableFormat::Parquet).unwrap_err();
        assert!(err.ends_with("EOF: Unexpected EOF"), "{err}");
        // The footer of a table this crate writes with an unknown field 100
        // appended (long-form header 0x09, zigzag id 0xc8 0x01): a list of
        // 1,000 lists (0xf9, count 0xe8 0x07) each claiming 2^31 - 1 bools
        // (0xf1, count 0xff 0xff 0xff 0xff 0x07). Skipped an element at a
        // time without reading, that is 2^41 steps, hours; skipped a byte
        // per bool, the first list runs out of footer.
        let t = table();
        let good = t.encode(TableFormat::Parquet).unwrap();
        let n = good.len();
        let len = u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap()) as usize;
        assert_eq!(good[n - 9], 0, "the footer ends with its struct's stop");
        let mut field = vec![0x09, 0xc8, 0x01, 0xf9, 0xe8, 0x07];
        for _ in 0..1000 {
            field.extend([0xf1, 0xff, 0xff, 0xff, 0xff, 0x07]);
        }
        let mut bad = good[..n - 9].to_vec();
        bad.extend(&field);
        bad.push(0);
        bad.extend(((len + field.len()) as u32).to_le_bytes());
        bad.extend(b"PAR1");
        let err = Table::decode(&bad, TableFormat::Parquet).unwrap_err();
        assert!(err.starts_with("not a Parquet file: "), "{err}");
        // The same field with its lists empty (0x01: no elements) is skipped
        // and the table reads back: unknown fields are allowed.
        let mut field = vec![0x09, 0xc8, 0x01, 0xf9, 0xe8, 0x07];
        field.extend([0x01; 1000]);
        let mut ok = good[..n - 9].to_vec();
        ok.extend(&field);
        ok.push(0);
        ok.extend(((len + field.len()) as u32).to_le_bytes());
        ok.extend(b"PAR1");
        assert_eq!(Table::decode(&ok, TableFormat::Parquet).unwrap(), t);
    }

    #[test]
    fn a_parquet_dictionary_claiming_gigabytes_is_refused() {
        // A table this crate wrote, damaged by the fuzzer: the dictionary
        // page of its `point` column claims 2^30 values, and the Parquet
        // reader sized the dictionary for them (8 GiB of i64) before
        // reading one (`DictDecoder::set_dict`).
        let bytes = include_bytes!("../tests/data/parquet-huge-page.parquet");
        let err = Table::decode(bytes, TableFormat::Parquet).unwrap_err();
        assert!(
            err.contains("a dictionary page of column 0 claims"),
            "{err}"
        );
        // 200,000 copies of one row: run-length encoding packs them into a
        // few KiB, far beyond the 16 rows per byte a table may claim.
        let mut t = table();
        t.rows = vec![t.rows[0].clone(); 200_000];
        let bytes = t.encode(TableFormat::Parquet).unwrap();
        assert!(bytes.len() * 16 < 200_000, "{} bytes", bytes.len());
        let err = Table::decode(&bytes, TableFormat::Parquet).unwrap_err();
        assert!(
            err.contains("claim 200000 rows, more than 16 per byte"),
            "{err}"
        );
        // A table at the density foliosim writes reads back.
        t.rows = (0..2000)
            .map(|i| row(i, "4k", Some(i as i128 * 7), ""))
            .collect();
        let bytes = t.encode(TableFormat::Parquet).unwrap();
        assert_eq!(Table::decode(&bytes, TableFormat::Parquet).unwrap(), t);
    }

    #[test]
    fn resume_keeps_the_points_not_done_and_drops_failed_rows() {
        let mut t = table();
        let at = |i, size: &str| P(i, "s", vec![("size".into(), size.into())]);
        let keys = ["size".to_string()];
        let left = t
            .resume(&keys, vec![at(0, "4k"), at(1, "64k"), at(2, "2M")], "sim")
            .unwrap();
        assert_eq!(left.iter().map(|p| p.0).collect::<Vec<_>>(), [1, 2]);
        assert!(
            t.rows.iter().all(|r| !r.failed()),
            "the failed point runs again"
        );
        let other = t.resume(&["other".to_string()], vec![at(0, "4k")], "sim");
        assert!(other.unwrap_err().contains("sweep over size"));
    }

    #[test]
    fn parquet_grid_columns_have_their_own_types() {
        use arrow_array::{Array as _, Float64Array, Int64Array, StringArray};
        use arrow_schema::DataType;
        let mut t = Table::new(&["memory".into(), "ratio".into(), "size".into(), "on".into()]);
        for (i, (m, r, s, on)) in [
            ("4096", "0.5", "64K", "true"),
            ("1073741824", "1.25", "2M", "false"),
        ]
        .into_iter()
        .enumerate()
        {
            let mut row = row(i as u64, s, Some(7), "");
            row.grid = vec![m.into(), r.into(), s.into(), on.into()];
            t.rows.push(row);
        }
        let bytes = t.encode(TableFormat::Parquet).unwrap();
        assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
        // Read with the parquet crate's own reader, not ours.
        let rd = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            bytes::Bytes::from(bytes.clone()),
        )
        .unwrap()
        .build()
        .unwrap();
        let batch = rd.into_iter().next().unwrap().unwrap();
        let types: Vec<(String, DataType)> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect();
        let ty = |n: &str| types.iter().find(|(c, _)| c == n).unwrap().1.clone();
        assert_eq!(ty("point"), DataType::UInt64);
        assert_eq!(ty("memory"), DataType::Int64);
        assert_eq!(ty("ratio"), DataType::Float64);
        assert_eq!(ty("size"), DataType::Utf8);
        assert_eq!(ty("on"), DataType::Boolean);
        assert_eq!(ty("value"), DataType::Int64);
        let col = |n: &str| batch.column(batch.schema().index_of(n).unwrap()).clone();
        let memory = col("memory");
        let memory = memory.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(memory.values().to_vec(), [4096, 1 << 30]);
        let ratio = col("ratio");
        let ratio = ratio.as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(ratio.values().to_vec(), [0.5, 1.25]);
        let size = col("size");
        let size = size.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(size.value(1), "2M");
        // An empty error is null, not "".
        assert_eq!(col("error").null_count(), 2);
        assert_eq!(Table::decode(&bytes, TableFormat::Parquet).unwrap(), t);
        // A plain-looking value that a number would not write back the
        // same way stays text.
        t.rows[0].grid[0] = "0100".into();
        let back = Table::decode(
            &t.encode(TableFormat::Parquet).unwrap(),
            TableFormat::Parquet,
        );
        assert_eq!(back.unwrap(), t);
    }
}
