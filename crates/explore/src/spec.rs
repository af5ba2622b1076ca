//! What a sweep runs: scenarios, base overrides and a grid, from the
//! command line or a sweep file, expanded into points.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml_edit::{Document, Item, Value};

use crate::grid::{expand_helper, parse_item, parse_values, Dim, Grid, Source};

/// The largest sweep that runs without `allow_large` (`--yes`).
pub const MAX_POINTS: usize = 10_000;

/// Column names of the tidy table that a grid key may not take (it would
/// shadow the column); `arch` is the exception: a grid over `arch` fills
/// the `arch` column.
pub const RESERVED_KEYS: &[&str] = &[
    "point", "scenario", "engine", "phase", "kind", "name", "value", "error",
];

/// A base override: set for every point before the grid's values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub source: Source,
}

/// Everything a sweep runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepSpec {
    /// Scenario files; every grid point runs on each (outermost loop).
    pub scenarios: Vec<PathBuf>,
    /// Overrides of every point (`--set`, `--arch`, a sweep file's `[set]`),
    /// applied in order before the grid's values.
    pub base: Vec<Setting>,
    pub grid: Grid,
    /// Refuse more than [`MAX_POINTS`] points unless true (`--yes`).
    pub allow_large: bool,
    /// The engine a sweep file asks for (`sim`, `native`, `vm`), if any.
    pub engine: Option<String>,
    /// The guest kernel a sweep file names for the VM engine, if any.
    pub kernel: Option<String>,
}

impl SweepSpec {
    /// A spec of `scenarios` with no overrides and an empty grid.
    pub fn new(scenarios: Vec<PathBuf>) -> SweepSpec {
        SweepSpec {
            scenarios,
            base: Vec::new(),
            grid: Grid::default(),
            allow_large: false,
            engine: None,
            kernel: None,
        }
    }
}

/// One run of a sweep: a scenario with its overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// Position in the expansion, from 0 (the `point` column).
    pub index: usize,
    /// The scenario file.
    pub scenario: PathBuf,
    /// The scenario's name with these overrides (the `scenario` column).
    pub name: String,
    /// The architecture with these overrides (the `arch` column).
    pub arch: String,
    /// The grid coordinates: each grid key (as written) and its value here.
    pub grid: Vec<(String, String)>,
    /// What the scenario is loaded with: the base overrides, then the grid
    /// values (helper keys expanded), in order; a later one wins.
    pub overrides: Vec<(String, String)>,
}

/// Expand `spec` into its points: every scenario × the grid's product
/// (zipped groups advance together), the last axis varying fastest.
///
/// Every point's scenario is loaded with its overrides, so a key the
/// scenario language does not know, or a value it refuses, is an error
/// here (before anything runs) that names the key's source: the `--grid`
/// or `--set` argument or the sweep file's line.
///
/// Errors: no scenario, an empty grid or value list, zipped lists of
/// different lengths, a grid key given twice or equal to a column of the
/// table ([`RESERVED_KEYS`]), more than [`MAX_POINTS`] points without
/// `allow_large`, and every scenario error.
pub fn expand(spec: &SweepSpec) -> Result<Vec<Point>, String> {
    if spec.scenarios.is_empty() {
        return Err("no scenario to sweep: name a scenario file".into());
    }
    if spec.grid.axes.is_empty() {
        return Err(
            "the grid is empty: give at least one --grid KEY=V1,V2,... (or a sweep file's \
             [grid] table); `foliosim run` runs a single point"
                .into(),
        );
    }
    let mut seen: BTreeMap<&str, &Source> = BTreeMap::new();
    for d in spec.grid.dims() {
        if d.values.is_empty() {
            return Err(format!("{}: `{}` has no values", d.source, d.key));
        }
        if RESERVED_KEYS.contains(&d.key.as_str()) {
            return Err(format!(
                "{}: `{}` is a column of the sweep's table, not a key to sweep",
                d.source, d.key
            ));
        }
        if let Some(first) = seen.insert(&d.key, &d.source) {
            return Err(format!(
                "{}: `{}` is already swept by {first}",
                d.source, d.key
            ));
        }
    }
    let per_scenario = spec.grid.count()?;
    let total = per_scenario.saturating_mul(spec.scenarios.len());
    if total > MAX_POINTS && !spec.allow_large {
        return Err(format!(
            "the sweep has {total} points, more than {MAX_POINTS}; pass --yes to run it"
        ));
    }
    let mut points = Vec::with_capacity(total);
    for path in &spec.scenarios {
        // Read once; every point parses the text with its overrides.
        // (A recording directory reads as its replay scenario.)
        let src = foliosim_scenario::Source::read(path).map_err(|e| e.to_string())?;
        for pos in 0..per_scenario {
            points.push(point(spec, path, &src, pos, points.len())?);
        }
    }
    Ok(points)
}

/// The point at product position `pos` of scenario `path`.
fn point(
    spec: &SweepSpec,
    path: &Path,
    src: &foliosim_scenario::Source,
    pos: usize,
    index: usize,
) -> Result<Point, String> {
    let mut coords: Vec<(&Dim, &str)> = Vec::new();
    let mut rest = pos;
    for axis in spec.grid.axes.iter().rev() {
        let i = rest % axis.len();
        rest /= axis.len();
        for d in axis.dims.iter().rev() {
            coords.push((d, &d.values[i]));
        }
    }
    coords.reverse();
    // Each override remembers its source, to blame it for an error.
    let mut ov: Vec<(String, String, &Source)> = spec
        .base
        .iter()
        .map(|s| (s.key.clone(), s.value.clone(), &s.source))
        .collect();
    for (d, v) in &coords {
        match expand_helper(&d.key, v) {
            Some(Ok(set)) => ov.extend(set.into_iter().map(|(k, v)| (k, v, &d.source))),
            Some(Err(e)) => return Err(format!("{}: {e}", d.source)),
            None => ov.push((d.key.clone(), v.to_string(), &d.source)),
        }
    }
    let plain: Vec<(String, String)> = ov.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect();
    // A recording's `replay.*` overrides regenerate its text (Source::parse).
    let src = foliosim_scenario::Source {
        label: path.display().to_string(),
        ..src.clone()
    };
    let sc = src.parse(&plain).map_err(|e| blame(e, &ov))?;
    Ok(Point {
        index,
        scenario: path.to_path_buf(),
        name: sc.name,
        arch: sc.system.arch.as_str().to_string(),
        grid: coords
            .iter()
            .map(|(d, v)| (d.key.clone(), v.to_string()))
            .collect(),
        overrides: plain,
    })
}

/// A scenario error caused by an override, told as coming from where the
/// override was written.
fn blame(e: foliosim_scenario::ScenarioError, ov: &[(String, String, &Source)]) -> String {
    if e.file != foliosim_scenario::SET_FILE {
        return e.to_string();
    }
    // `field` is KEY=VALUE of the override that caused it.
    let src = ov
        .iter()
        .rev()
        .find(|(k, v, _)| format!("{k}={v}") == e.field);
    match src {
        Some((k, v, source)) => {
            let via = match source {
                Source::GridArg(_) | Source::AbArg(_) | Source::File { .. } => {
                    format!(" (as {k}={v})")
                }
                _ => String::new(),
            };
            format!("{source}{via}: {}", e.message)
        }
        None => e.to_string(),
    }
}

/// Read a sweep file: scenarios, engine, base overrides, grid and zip
/// groups (see docs/scenarios.md, "Sweep files"). Scenario paths are
/// relative to the sweep file's folder. Errors name the file and line.
pub fn parse_sweep_file(path: &Path) -> Result<SweepSpec, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read the sweep file: {e}", path.display()))?;
    parse_sweep_str(path, &text)
}

/// [`parse_sweep_file`] of `text`, named `path` in errors.
pub fn parse_sweep_str(path: &Path, text: &str) -> Result<SweepSpec, String> {
    let doc = Document::parse(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_of(text, s.start));
        format!(
            "{}:{line}: TOML syntax error: {}",
            path.display(),
            e.message()
        )
    })?;
    let at = |span: Option<std::ops::Range<usize>>| Source::File {
        path: path.to_path_buf(),
        line: span.map_or(0, |s| line_of(text, s.start)),
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut spec = SweepSpec::new(Vec::new());
    for (key, item) in doc.as_table().iter() {
        let here = at(doc.as_table().key(key).and_then(|k| k.span()));
        let err = |m: String| format!("{here}: {key}: {m}");
        match key {
            "scenarios" => {
                let arr = item
                    .as_array()
                    .ok_or_else(|| err("expected a list of scenario files".into()))?;
                for v in arr {
                    let s = v
                        .as_str()
                        .ok_or_else(|| err("expected scenario paths (strings)".into()))?;
                    spec.scenarios.push(dir.join(s));
                }
            }
            "engine" | "kernel" => {
                let s = item
                    .as_str()
                    .ok_or_else(|| err("expected a string".into()))?
                    .to_string();
                if key == "engine" {
                    if !["sim", "native", "vm"].contains(&s.as_str()) {
                        return Err(err(format!("expected sim, native or vm, found {s:?}")));
                    }
                    spec.engine = Some(s);
                } else {
                    spec.kernel = Some(s);
                }
            }
            "set" => {
                let t = item
                    .as_table_like()
                    .ok_or_else(|| err("expected a table of KEY = VALUE".into()))?;
                for (k, v) in t.iter() {
                    let src = at(t.key(k).and_then(|k| k.span()));
                    let value = scalar(v).map_err(|m| format!("{src}: set.{k}: {m}"))?;
                    spec.base.push(Setting {
                        key: k.to_string(),
                        value,
                        source: src,
                    });
                }
            }
            "grid" => {
                let t = item
                    .as_table_like()
                    .ok_or_else(|| err("expected a table of KEY = [values]".into()))?;
                let dims = dims(t, &at, "grid")?;
                spec.grid.add(dims, false);
            }
            "zip" => {
                let arr = item
                    .as_array_of_tables()
                    .ok_or_else(|| err("expected [[zip]] tables, each of KEY = [values]".into()))?;
                for t in arr.iter() {
                    let dims = dims(t, &at, "zip")?;
                    if dims.is_empty() {
                        return Err(format!("{}: an empty [[zip]] table", at(t.span())));
                    }
                    spec.grid.add(dims, true);
                }
            }
            _ => {
                return Err(err(
                    "unknown key; expected one of: scenarios, engine, kernel, set, grid, zip"
                        .into(),
                ))
            }
        }
    }
    Ok(spec)
}

/// The dimensions of a `[grid]` or `[[zip]]` table.
fn dims(
    t: &dyn toml_edit::TableLike,
    at: &dyn Fn(Option<std::ops::Range<usize>>) -> Source,
    table: &str,
) -> Result<Vec<Dim>, String> {
    let mut out = Vec::new();
    for (k, v) in t.iter() {
        let source = at(t.key(k).and_then(|k| k.span()));
        let values = match v {
            Item::Value(Value::Array(a)) => {
                let mut vals = Vec::new();
                for x in a.iter() {
                    match x {
                        // A string element is one value (commas and all),
                        // or a range.
                        Value::String(s) => vals.extend(
                            parse_item(s.value())
                                .map_err(|m| format!("{source}: {table}.{k}: {m}"))?,
                        ),
                        other => vals.push(
                            scalar_value(other)
                                .map_err(|m| format!("{source}: {table}.{k}: {m}"))?,
                        ),
                    }
                }
                vals
            }
            Item::Value(Value::String(s)) => {
                parse_values(s.value()).map_err(|m| format!("{source}: {table}.{k}: {m}"))?
            }
            _ => {
                return Err(format!(
                    "{source}: {table}.{k}: expected a list of values or a string in the \
                     --grid syntax (\"4096<<[0..9]\")"
                ))
            }
        };
        out.push(Dim {
            key: k.to_string(),
            values,
            source,
        });
    }
    Ok(out)
}

/// A scalar TOML item as `--set` would take it.
fn scalar(item: &Item) -> Result<String, String> {
    match item {
        Item::Value(v) => scalar_value(v),
        _ => Err("expected a value".into()),
    }
}

fn scalar_value(v: &Value) -> Result<String, String> {
    Ok(match v {
        Value::String(s) => s.value().clone(),
        Value::Integer(i) => i.value().to_string(),
        Value::Boolean(b) => b.value().to_string(),
        Value::Float(f) => f.value().to_string(),
        _ => return Err("expected a string, integer, float or boolean".into()),
    })
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> u32 {
    text[..at.min(text.len())].matches('\n').count() as u32 + 1
}
