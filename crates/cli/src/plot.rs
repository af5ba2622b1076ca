//! `foliosim plot` (sweep plots, folio maps) and `foliosim report` (the
//! self-contained HTML report); the drawing is crates/plot.

use std::path::{Path, PathBuf};

use foliosim_plot::change::Change;
use foliosim_plot::html::{self, Inputs, Options};
use foliosim_plot::lines::{LinePlot, PlotSpec, XScale};
use foliosim_plot::map::MapPlot;
use foliosim_plot::sweep::Sweep;
use foliosim_plot::ImageFormat;
use foliosim_report::Report;

use crate::output;

fn x_scale_arg() -> impl clap::builder::TypedValueParser<Value = XScale> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(XScale::NAMES)
        .map(|s: String| XScale::from_name(&s).expect("a listed scale"))
}

#[derive(clap::Args)]
pub(crate) struct PlotArgs {
    /// The sweep table (`foliosim sweep` output, CSV or JSON lines).
    #[arg(required_unless_present = "map", conflicts_with = "map")]
    sweep: Option<PathBuf>,
    /// The value on the y axis: a counter (`pgfault`, `tlb:tlb_flush`),
    /// `modelled_ns`, `modelled_ns/<counter>` or `folios/<region>/<size>`.
    #[arg(long, required_unless_present = "map", value_name = "NAME")]
    y: Option<String>,
    /// The grid key on the x axis; the other grid keys (and the
    /// architecture, when the sweep has several) make one line each.
    #[arg(long, required_unless_present_any = ["map", "by"], value_name = "KEY")]
    x: Option<String>,
    /// The phase: of the plotted value (needed when it is in several), or
    /// of the folio map (required with --map).
    #[arg(long, value_name = "PHASE")]
    phase: Option<String>,
    /// x axis scale: log2 for powers of two (auto picks it when every value
    /// is one and they span 8× or more).
    #[arg(long, value_parser = x_scale_arg(), default_value = "auto")]
    x_scale: XScale,
    /// Logarithmic y axis.
    #[arg(long)]
    log_y: bool,
    /// Draw the folio map of a region from this JSON report instead (a
    /// `foliosim run --format json` of a scenario whose region has
    /// `map = true`).
    #[arg(long, value_name = "REPORT.json", requires_all = ["phase", "region"])]
    map: Option<PathBuf>,
    /// The region of the folio map.
    #[arg(long, requires = "map")]
    region: Option<String>,
    /// Columns (grid keys, arch, scenario, engine) whose values make one
    /// panel each, sharing the axes and the legend.
    #[arg(
        long,
        value_name = "KEY,...",
        value_delimiter = ',',
        conflicts_with = "map"
    )]
    facet: Vec<String>,
    /// Only the points whose KEY has one of these values (repeatable).
    #[arg(long = "where", value_name = "KEY=VALUE[,VALUE]", value_parser = where_arg)]
    filters: Vec<(String, Vec<String>)>,
    /// Draw what KEY changes instead: the % change of the --y value from
    /// its first value (base) to its second (patched), as a heatmap whose
    /// rows are the --x key (default: the key with the most values) and
    /// whose columns are the other keys' combinations.
    #[arg(long, value_name = "KEY[=BASE,PATCHED]", conflicts_with_all = ["map", "facet"])]
    by: Option<String>,
    /// The picture to write: `.svg` or `.png` (default: SVG on stdout).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

/// `--where KEY=VALUE[,VALUE...]`.
fn where_arg(s: &str) -> Result<(String, Vec<String>), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => Ok((
            k.trim().to_string(),
            v.split(',').map(|v| v.trim().to_string()).collect(),
        )),
        _ => Err(format!("{s}: expected KEY=VALUE or KEY=VALUE,VALUE,...")),
    }
}

#[derive(clap::Args)]
pub(crate) struct ReportArgs {
    /// JSON reports (`foliosim run --format json`, one report or a list)
    /// and sweep tables (CSV or JSON lines), in any order. With exactly two
    /// reports the first is the base and the second the patched run.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Values to plot from the sweeps (repeatable; default: modelled_ns and
    /// the key counters the sweep has: pgfault, pswpout, tlb:tlb_flush,
    /// sim/contpte_unfold, sim/set_ptes).
    #[arg(long, value_name = "NAME")]
    y: Vec<String>,
    /// The grid key of the sweep plots' x axis (default: the key with the
    /// most values, other than the --facet and --by keys).
    #[arg(long, value_name = "KEY")]
    x: Option<String>,
    /// Plot the sweep values of this phase only.
    #[arg(long, value_name = "PHASE")]
    phase: Option<String>,
    /// Columns (grid keys, arch, scenario, engine) whose values make one
    /// panel each in the sweep plots.
    #[arg(long, value_name = "KEY,...", value_delimiter = ',')]
    facet: Vec<String>,
    /// Only the sweep points whose KEY has one of these values (repeatable).
    #[arg(long = "where", value_name = "KEY=VALUE[,VALUE]", value_parser = where_arg)]
    filters: Vec<(String, Vec<String>)>,
    /// Show what KEY changes in each sweep: per --y value, the table and
    /// heatmap of its % change from KEY's first value (base) to its second
    /// (patched), as `foliosim diff --by` computes it.
    #[arg(long, value_name = "KEY[=BASE,PATCHED]")]
    by: Option<String>,
    /// The HTML file to write.
    #[arg(short = 'o', value_name = "FILE", required = true)]
    output: PathBuf,
}

/// The reports in a JSON file: a document `{"reports": [...]}`, a list of
/// reports, or one report object.
fn reports_in(path: &Path, v: &serde_json::Value) -> Result<Vec<Report>, String> {
    let bad = |e: String| format!("{}: not a foliosim report: {e}", path.display());
    let list = match v {
        serde_json::Value::Array(list) => list,
        serde_json::Value::Object(o) if !o.contains_key("reports") => {
            return Report::from_json_value(v).map(|r| vec![r]).map_err(bad);
        }
        _ => v
            .get("reports")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| bad("`reports` is not a list".into()))?,
    };
    list.iter()
        .enumerate()
        .map(|(i, r)| Report::from_json_value(r).map_err(|e| bad(format!("reports[{i}]: {e}"))))
        .collect()
}

/// What an input file holds.
enum Input {
    Reports(Vec<Report>),
    Sweep(Box<Sweep>),
}

/// Read an input of `report`: a JSON document is reports; anything else
/// (CSV, JSON lines, Arrow IPC) a sweep table.
fn read_input(path: &Path) -> Result<Input, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Ok(text) = std::str::from_utf8(&bytes) {
        let t = text.trim_start();
        if t.starts_with('[') || t.starts_with('{') {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
                if v.is_array() || v.get("phases").is_some() || v.get("reports").is_some() {
                    return reports_in(path, &v).map(Input::Reports);
                }
            }
        }
    }
    Sweep::load(path).map(|s| Input::Sweep(Box::new(s)))
}

fn write(path: &Path, bytes: &[u8], inputs: &[PathBuf]) -> Result<(), String> {
    output::write_output(path, bytes, inputs).map_err(|e| format!("{}: {e}", path.display()))
}

/// The folio map of `region` at the end of `phase` from the one report of
/// the JSON file `path` that has it.
fn map_of(path: &Path, phase: &str, region: &str) -> Result<MapPlot, String> {
    let in_file = |e: String| format!("{}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| in_file(e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| in_file(format!("not JSON: {e}")))?;
    let reports = reports_in(path, &v)?;
    let find = |r: &Report| foliosim_plot::map::find(r, phase, region).map(|_| ());
    let with: Vec<&Report> = reports.iter().filter(|r| find(r).is_ok()).collect();
    match (with.as_slice(), reports.first()) {
        ([r], _) => MapPlot::new(r, phase, region),
        ([], None) => Err(in_file("the document holds no report".into())),
        // The first report's reason.
        ([], Some(r)) => Err(in_file(find(r).expect_err("no report has the map"))),
        (many, _) => Err(in_file(format!(
            "{} reports have a folio map of {region} in {phase}; write one report per file",
            many.len()
        ))),
    }
}

pub(crate) fn cmd_plot(a: &PlotArgs) -> Result<bool, String> {
    let format = match &a.output {
        Some(p) => ImageFormat::from_path(p)?,
        None => ImageFormat::Svg,
    };
    let (bytes, notes, input) = match &a.map {
        Some(path) => {
            let phase = a.phase.as_deref().expect("clap requires --phase");
            let region = a.region.as_deref().expect("clap requires --region");
            let m = map_of(path, phase, region)?;
            (m.render(format)?, m.notes.clone(), path.clone())
        }
        None if a.by.is_some() => {
            let path = a.sweep.as_ref().expect("clap requires the sweep file");
            let y = a.y.clone().expect("clap requires --y");
            let by = a.by.as_deref().expect("checked");
            let mut c = changes_of(path, by, &y, a.x.as_deref(), a.phase.as_deref(), &a.filters)?;
            if c.len() > 1 {
                let phases: Vec<&str> = c.iter().map(|c| c.phase.as_str()).collect();
                return Err(format!(
                    "{y} is in several phases ({}); choose one with --phase",
                    phases.join(", ")
                ));
            }
            let c = c.pop().expect("one change");
            (c.render(format)?, Vec::new(), path.clone())
        }
        None => {
            let path = a.sweep.as_ref().expect("clap requires the sweep file");
            let sweep = Sweep::load(path)?;
            let spec = PlotSpec {
                y: a.y.clone().expect("clap requires --y"),
                x: a.x.clone().expect("clap requires --x"),
                phase: a.phase.clone(),
                x_scale: a.x_scale,
                log_y: a.log_y,
                facet: a.facet.clone(),
                filters: a.filters.clone(),
            };
            let p = LinePlot::new(&sweep, &spec).map_err(|e| format!("{}: {e}", path.display()))?;
            (p.render(format)?, p.notes.clone(), path.clone())
        }
    };
    for n in notes.iter().filter(|n| !n.contains(" pages: ")) {
        eprintln!("foliosim plot: note: {n}");
    }
    match &a.output {
        Some(p) => write(p, &bytes, &[input])?,
        None => {
            use std::io::Write as _;
            std::io::stdout()
                .write_all(&bytes)
                .map_err(|e| format!("stdout: {e}"))?;
        }
    }
    Ok(true)
}

pub(crate) fn cmd_report(a: &ReportArgs) -> Result<bool, String> {
    let mut inputs = Inputs::default();
    for path in &a.inputs {
        let name = path.display().to_string();
        match read_input(path)? {
            Input::Reports(rs) => {
                let n = rs.len();
                for (i, r) in rs.into_iter().enumerate() {
                    let label = if n > 1 {
                        format!("{name}[{i}]")
                    } else {
                        name.clone()
                    };
                    inputs.reports.push((label, r));
                }
            }
            Input::Sweep(s) => inputs.sweeps.push((name, *s)),
        }
    }
    if inputs.reports.is_empty() && inputs.sweeps.is_empty() {
        return Err("the inputs hold no report and no sweep: nothing to report".into());
    }
    let opts = Options {
        ys: a.y.clone(),
        x: a.x.clone(),
        phase: a.phase.clone(),
        facet: a.facet.clone(),
        filters: a.filters.clone(),
        by: a
            .by
            .as_deref()
            .map(|b| foliosim_explore::diff::parse_by(b).map(|(k, _)| k.to_string()))
            .transpose()?,
    };
    if let Some(by) = &a.by {
        let ys = if a.y.is_empty() {
            vec!["modelled_ns".to_string()]
        } else {
            a.y.clone()
        };
        for (file, path) in sweep_paths(a)? {
            for y in &ys {
                let c = changes_of(&path, by, y, a.x.as_deref(), a.phase.as_deref(), &a.filters)?;
                inputs
                    .changes
                    .extend(c.into_iter().map(|c| (file.clone(), c)));
            }
        }
    }
    let (page, notes) = html::page(&inputs, &opts)?;
    for n in notes {
        eprintln!("foliosim report: note: {n}");
    }
    write(&a.output, page.as_bytes(), &a.inputs)?;
    Ok(true)
}

/// The sweep tables among the report's inputs: (name shown, path).
fn sweep_paths(a: &ReportArgs) -> Result<Vec<(String, PathBuf)>, String> {
    let mut out = Vec::new();
    for path in &a.inputs {
        if let Input::Sweep(_) = read_input(path)? {
            out.push((path.display().to_string(), path.clone()));
        }
    }
    Ok(out)
}

/// What `by` changes in value `y` of the sweep table at `path`, one
/// [`Change`] per phase `y` is in (only `phase` when given): the diff of
/// `foliosim diff --by`, its rows the values of `rows_key` (default: the
/// varying key with the most values), its columns the combinations of the
/// other varying keys; only the points that pass `filters`.
fn changes_of(
    path: &Path,
    by: &str,
    y: &str,
    rows_key: Option<&str>,
    phase: Option<&str>,
    filters: &[(String, Vec<String>)],
) -> Result<Vec<Change>, String> {
    use foliosim_explore::{diff, Table};
    let in_file = |e: String| format!("{}: {e}", path.display());
    let mut table = Table::load(path)?;
    let (key, pair) = foliosim_explore::diff::parse_by(by)?;
    let value = |t: &Table, r: &foliosim_explore::Row, k: &str| -> Option<String> {
        match k {
            "scenario" => Some(r.scenario.clone()),
            "arch" => Some(r.arch.clone()),
            "engine" => Some(r.engine.clone()),
            _ => t
                .grid_columns
                .iter()
                .position(|c| c == k)
                .map(|i| r.grid[i].clone()),
        }
    };
    let mut columns: Vec<String> = table.grid_columns.clone();
    columns.extend(["scenario", "arch", "engine"].map(String::from));
    for (k, vs) in filters {
        if !columns.contains(k) {
            return Err(in_file(format!(
                "--where {k}: not a column of the sweep{}",
                foliosim_uapi::names::did_you_mean(k, columns.iter().map(String::as_str))
            )));
        }
        let t = table.clone();
        table
            .rows
            .retain(|r| value(&t, r, k).is_some_and(|v| vs.contains(&v)));
    }
    // The keys that vary among the points, with their number of values.
    let mut varying: Vec<(String, usize)> = Vec::new();
    for k in columns.iter().filter(|k| *k != key) {
        let mut vs: Vec<String> = table
            .rows
            .iter()
            .filter_map(|r| value(&table, r, k))
            .collect();
        vs.sort();
        vs.dedup();
        if vs.len() > 1 {
            varying.push((k.clone(), vs.len()));
        }
    }
    let rows_key = match rows_key {
        Some(k) if varying.iter().any(|(v, _)| v == k) => Some(k.to_string()),
        Some(k) => {
            return Err(in_file(format!(
                "--x {k}: not a key that varies in the sweep"
            )))
        }
        None => varying
            .iter()
            .fold(None::<&(String, usize)>, |best, kv| match best {
                Some(b) if b.1 >= kv.1 => Some(b),
                _ => Some(kv),
            })
            .map(|(k, _)| k.clone()),
    };
    let cols: Vec<String> = varying
        .iter()
        .map(|(k, _)| k.clone())
        .filter(|k| Some(k) != rows_key.as_ref())
        .collect();
    let d = diff::diff_table(&table, key, pair, Some(&cols)).map_err(in_file)?;
    change_tables(&d, y, phase).map_err(in_file)
}

/// The [`Change`]s of value `y` in diff `d` (one per phase, or `phase`).
fn change_tables(
    d: &foliosim_explore::diff::Diff,
    y: &str,
    phase: Option<&str>,
) -> Result<Vec<Change>, String> {
    let mut phases: Vec<&str> = Vec::new();
    for r in d
        .blocks
        .iter()
        .flat_map(|b| &b.rows)
        .filter(|r| r.name == y)
    {
        if !phases.contains(&r.phase.as_str()) && phase.is_none_or(|p| p == r.phase) {
            phases.push(&r.phase);
        }
    }
    if phases.is_empty() {
        return Err(match phase {
            Some(p) => format!("--y {y}: no such value in phase {p}"),
            None => format!("--y {y}: no such value in the sweep"),
        });
    }
    let block_key = d
        .blocks
        .first()
        .map(|b| {
            b.label
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    Ok(phases
        .into_iter()
        .map(|phase| Change {
            value: y.to_string(),
            phase: phase.to_string(),
            base: format!("{}={}", d.by, d.base),
            patched: format!("{}={}", d.by, d.patched),
            row_key: block_key.clone(),
            rows: d
                .blocks
                .iter()
                .map(|b| {
                    let v: Vec<&str> = b.label.iter().map(|(_, v)| v.as_str()).collect();
                    if v.is_empty() {
                        y.to_string()
                    } else {
                        v.join(", ")
                    }
                })
                .collect(),
            col_key: d.column_keys.join(", "),
            cols: d.groups.iter().map(|g| g.join(", ")).collect(),
            cells: d
                .blocks
                .iter()
                .map(|b| {
                    let row = b.rows.iter().find(|r| r.name == y && r.phase == phase);
                    (0..d.groups.len())
                        .map(|i| {
                            row.map_or((None, None), |r| (r.cells[i].base, r.cells[i].patched))
                        })
                        .collect()
                })
                .collect(),
        })
        .collect())
}
