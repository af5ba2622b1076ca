//! `foliosim plot` (sweep plots, folio maps) and `foliosim report` (the
//! self-contained HTML report); the drawing is crates/plot.

use std::path::{Path, PathBuf};

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
    #[arg(long, required_unless_present = "map", value_name = "KEY")]
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
    /// The picture to write: `.svg` or `.png` (default: SVG on stdout).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
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
    /// The grid key of the sweep plots' x axis (default: the first key
    /// with several values).
    #[arg(long, value_name = "KEY")]
    x: Option<String>,
    /// Plot the sweep values of this phase only.
    #[arg(long, value_name = "PHASE")]
    phase: Option<String>,
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
    Sweep(Sweep),
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
    Sweep::load(path).map(Input::Sweep)
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
        None => {
            let path = a.sweep.as_ref().expect("clap requires the sweep file");
            let sweep = Sweep::load(path)?;
            let spec = PlotSpec {
                y: a.y.clone().expect("clap requires --y"),
                x: a.x.clone().expect("clap requires --x"),
                phase: a.phase.clone(),
                x_scale: a.x_scale,
                log_y: a.log_y,
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
            Input::Sweep(s) => inputs.sweeps.push((name, s)),
        }
    }
    if inputs.reports.is_empty() && inputs.sweeps.is_empty() {
        return Err("the inputs hold no report and no sweep: nothing to report".into());
    }
    let opts = Options {
        ys: a.y.clone(),
        x: a.x.clone(),
        phase: a.phase.clone(),
    };
    let (page, notes) = html::page(&inputs, &opts)?;
    for n in notes {
        eprintln!("foliosim report: note: {n}");
    }
    write(&a.output, page.as_bytes(), &a.inputs)?;
    Ok(true)
}
