//! Sweep plots: one value (a counter, `modelled_ns`, `folios/...`) against
//! one grid key, a line per combination of the other grid keys (and of the
//! architectures and scenarios when the sweep has several).

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::sweep::Sweep;
use crate::{de, size_label, ImageFormat, Picture, FAMILY};

/// The x axis scale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XScale {
    /// Categories for a switch (values 0 and 1, or false and true) or a
    /// key of at most two values; else log2 when every x value is a power
    /// of two spanning at least 8×; else linear.
    #[default]
    Auto,
    Linear,
    Log2,
}

impl XScale {
    pub const NAMES: [&'static str; 3] = ["auto", "linear", "log2"];

    pub fn from_name(s: &str) -> Option<XScale> {
        match s {
            "auto" => Some(XScale::Auto),
            "linear" => Some(XScale::Linear),
            "log2" => Some(XScale::Log2),
            _ => None,
        }
    }
}

/// What to plot.
#[derive(Clone, Debug, Default)]
pub struct PlotSpec {
    /// The value's name (`pgfault`, `modelled_ns`, `folios/buf/64kB`).
    pub y: String,
    /// The grid key on the x axis.
    pub x: String,
    /// The phase; None when the value is in one phase only.
    pub phase: Option<String>,
    pub x_scale: XScale,
    /// Logarithmic (base 10) y axis.
    pub log_y: bool,
    /// Columns (grid keys, `arch`, `scenario`, `engine`) whose values
    /// make one panel each, sharing the axes; the lines are the other
    /// keys' combinations.
    pub facet: Vec<String>,
    /// Only the rows whose column (the first) has one of the values.
    pub filters: Vec<(String, Vec<String>)>,
}

/// The x values of one key: numbers (plain, or sizes like `64K` and
/// `4096<<4`), or categories in order of first appearance.
enum XAxis {
    Numeric {
        /// Whether the values were written as sizes (bytes).
        sizes: bool,
        log2: bool,
    },
    Categories(Vec<String>),
}

/// A sweep plot, ready to draw: one panel, or one per combination of the
/// facet columns' values, sharing axes and a legend.
#[derive(Debug)]
pub struct LinePlot {
    title: String,
    x_label: String,
    y_label: String,
    /// The lines' labels in order of first appearance: a line's colour is
    /// its place here, the same in every panel.
    legend: Vec<String>,
    panels: Vec<Panel>,
    /// Tick labels of a categorical or log2 axis: (axis position, text).
    x_ticks: Option<Vec<(f64, String)>>,
    log_y: bool,
    /// Whether every value drawn is 0 (a report leaves such a plot out).
    pub all_zero: bool,
    /// Notes for the user (failed points, averaged repeats, lines left
    /// out).
    pub notes: Vec<String>,
}

/// One panel: its title (the facet values; empty without facets) and its
/// lines (legend index, points (x, y) in axis space, sorted by x).
#[derive(Debug)]
struct Panel {
    title: String,
    series: Vec<(usize, Vec<(f64, f64)>)>,
}

/// A column of the table a plot can split or filter by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Column {
    Grid(usize),
    Scenario,
    Arch,
    Engine,
}

impl Column {
    /// The column called `name`, or an error naming `option` and listing
    /// the columns.
    fn named(sweep: &Sweep, option: &str, name: &str) -> Result<Column, String> {
        match name {
            "scenario" => return Ok(Column::Scenario),
            "arch" => return Ok(Column::Arch),
            "engine" => return Ok(Column::Engine),
            _ => {}
        }
        let all = sweep
            .keys
            .iter()
            .map(String::as_str)
            .chain(["arch", "scenario", "engine"]);
        sweep
            .keys
            .iter()
            .position(|k| k == name)
            .map(Column::Grid)
            .ok_or_else(|| {
                format!(
                    "{option} {name}: not a column of the sweep{}; its columns: {}",
                    foliosim_uapi::names::did_you_mean(name, all.clone()),
                    all.collect::<Vec<_>>().join(", ")
                )
            })
    }

    fn value<'a>(self, r: Row<'a>) -> &'a str {
        match self {
            Column::Grid(k) => &r.grid[k],
            Column::Scenario => &r.scenario,
            Column::Arch => &r.arch,
            Column::Engine => &r.engine,
        }
    }

    /// How a value of this column reads in a label: grid keys as
    /// `key=value`, the others as the value alone.
    fn show(self, sweep: &Sweep, r: Row) -> String {
        match self {
            Column::Grid(k) => format!("{}={}", sweep.keys[k], r.grid[k]),
            _ => self.value(r).to_string(),
        }
    }
}

/// The rows of `rows` that pass every `--where` filter; an error names a
/// column or value the sweep does not have.
fn filtered<'a>(
    sweep: &'a Sweep,
    rows: Vec<Row<'a>>,
    filters: &[(String, Vec<String>)],
) -> Result<Vec<Row<'a>>, String> {
    let mut keep = rows;
    for (name, values) in filters {
        let col = Column::named(sweep, "--where", name)?;
        let all: Vec<&str> = {
            let rows: Vec<Row> = sweep.rows.iter().collect();
            distinct(&rows, |r| col.value(r))
        };
        if let Some(v) = values.iter().find(|v| !all.contains(&v.as_str())) {
            return Err(format!(
                "--where {name}={v}: the sweep has no such value; its values: {}",
                all.join(", ")
            ));
        }
        keep.retain(|r| values.iter().any(|v| v == col.value(r)));
    }
    Ok(keep)
}

fn parse_x(s: &str) -> Option<(f64, bool)> {
    let t = s.trim();
    if let Ok(v) = t.parse::<f64>() {
        return Some((v, false));
    }
    match t {
        "true" => return Some((1.0, false)),
        "false" => return Some((0.0, false)),
        _ => {}
    }
    foliosim_scenario::parse_size(t)
        .ok()
        .map(|v| (v as f64, true))
}

fn is_pow2(v: f64) -> bool {
    v >= 1.0 && v.fract() == 0.0 && (v as u64).is_power_of_two()
}

/// The unit of a value by its name.
fn y_unit(name: &str) -> (&'static str, f64) {
    if name == "modelled_ns" || name.starts_with("modelled_ns/") {
        ("modelled time, ms", 1e-6)
    } else if name.ends_with("_ns") || name.contains("_ns/") {
        ("ns", 1.0)
    } else if name.starts_with("folios/") {
        ("folios", 1.0)
    } else if name.starts_with("pagemap/") {
        ("value", 1.0)
    } else {
        ("count", 1.0)
    }
}

type Row<'a> = &'a crate::sweep::SweepRow;

/// The distinct values of `f` over `rows`, in order of first appearance.
fn distinct<'a>(rows: &[Row<'a>], f: impl Fn(Row<'a>) -> &'a str) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for &r in rows {
        if !v.contains(&f(r)) {
            v.push(f(r));
        }
    }
    v
}

/// The index of grid key `x`, or an error listing the keys.
fn x_key(sweep: &Sweep, x: &str) -> Result<usize, String> {
    if ["arch", "scenario", "engine"].contains(&x) {
        return Err(format!(
            "--x {x}: a column of its own, not a grid column; each {x} is a line of its own"
        ));
    }
    sweep.keys.iter().position(|k| k == x).ok_or_else(|| {
        format!(
            "--x {x}: not a grid key of the sweep{}; its keys are: {}",
            foliosim_uapi::names::did_you_mean(x, sweep.keys.iter().map(String::as_str)),
            sweep.keys.join(", ")
        )
    })
}

/// The rows of `spec.y` in its phase (the one asked for, or its only one),
/// and that phase.
fn value_rows<'a>(sweep: &'a Sweep, spec: &PlotSpec) -> Result<(Vec<Row<'a>>, String), String> {
    let rows: Vec<Row> = sweep.rows.iter().filter(|r| r.name == spec.y).collect();
    if rows.is_empty() {
        let names = sweep.names();
        let shown: Vec<&str> = names.iter().take(30).copied().collect();
        return Err(format!(
            "--y {}: no such value in the sweep{}; it has {} names, like: {}",
            spec.y,
            foliosim_uapi::names::did_you_mean(&spec.y, names.iter().copied()),
            names.len(),
            shown.join(", ")
        ));
    }
    let phases = distinct(&rows, |r| &r.phase);
    let phase = match &spec.phase {
        Some(p) if phases.contains(&p.as_str()) => p.clone(),
        Some(p) => {
            return Err(format!(
                "--phase {p}: {} is not in that phase; its phases: {}",
                spec.y,
                phases.join(", ")
            ))
        }
        None if phases.len() == 1 => phases[0].to_string(),
        None => {
            return Err(format!(
                "{} is in several phases ({}); choose one with --phase",
                spec.y,
                phases.join(", ")
            ))
        }
    };
    let rows = rows.into_iter().filter(|r| r.phase == phase).collect();
    Ok((rows, phase))
}

/// A note on the failed points: one row with the error and no phase or
/// name (`foliosim sweep`), or rows of this value without a value.
fn failed_note(sweep: &Sweep, y: &str) -> Option<String> {
    let failed: Vec<Row> = sweep
        .rows
        .iter()
        .filter(|r| r.value.is_none() && (r.name.is_empty() || r.name == y))
        .collect();
    let first = failed.first()?;
    let mut points: Vec<u64> = failed.iter().map(|r| r.point).collect();
    points.dedup();
    Some(format!(
        "{} point(s) failed and are not drawn (line {}: {})",
        points.len(),
        first.line,
        first.error
    ))
}

impl XAxis {
    /// The axis of the values `xs` of key `key`.
    fn of(xs: &[&str], key: &str, scale: XScale) -> Result<XAxis, String> {
        let switch = xs.iter().all(|s| ["0", "1", "false", "true"].contains(s));
        let parsed = xs.iter().map(|s| parse_x(s)).collect::<Option<Vec<_>>>();
        let parsed = parsed.filter(|_| scale != XScale::Auto || !(switch || xs.len() <= 2));
        let Some(p) = parsed else {
            return Ok(XAxis::Categories(
                xs.iter().map(|s| s.to_string()).collect(),
            ));
        };
        let (lo, hi) = p.iter().fold((f64::MAX, f64::MIN), |(a, b), (v, _)| {
            (a.min(*v), b.max(*v))
        });
        let log2 = match scale {
            XScale::Linear => false,
            XScale::Log2 if lo > 0.0 => true,
            XScale::Log2 => {
                return Err(format!(
                    "--x-scale log2: {key} has values that are not positive"
                ))
            }
            XScale::Auto => p.iter().all(|(v, _)| is_pow2(*v)) && hi >= 8.0 * lo,
        };
        Ok(XAxis::Numeric {
            sizes: p.iter().any(|(_, s)| *s) || key.ends_with("_bytes"),
            log2,
        })
    }

    /// The axis position of value `s`.
    fn pos(&self, s: &str) -> f64 {
        match self {
            XAxis::Numeric { log2, .. } => {
                let v = parse_x(s).expect("parsed by XAxis::of").0;
                if *log2 {
                    v.log2()
                } else {
                    v
                }
            }
            XAxis::Categories(c) => c.iter().position(|c| c == s).expect("listed") as f64,
        }
    }

    /// The axis label, and tick labels when positions are not the values.
    fn labels(&self, key: &str, xs: &[&str]) -> (String, Option<Vec<(f64, String)>>) {
        match self {
            XAxis::Numeric { sizes, log2 } => {
                let paren: Vec<&str> = [(*sizes, "bytes"), (*log2, "log2 scale")]
                    .into_iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, s)| s)
                    .collect();
                let label = if paren.is_empty() {
                    key.to_string()
                } else {
                    format!("{key} ({})", paren.join(", "))
                };
                let tick = |s: &&str| {
                    let v = parse_x(s).expect("parsed by XAxis::of").0;
                    let text = if *sizes {
                        size_label(v)
                    } else {
                        format!("{v}")
                    };
                    (v.log2(), text)
                };
                (label, log2.then(|| xs.iter().map(tick).collect()))
            }
            XAxis::Categories(c) => (
                key.to_string(),
                Some(
                    c.iter()
                        .enumerate()
                        .map(|(i, s)| (i as f64, s.clone()))
                        .collect(),
                ),
            ),
        }
    }
}

/// The line label of each row: the columns other than the x key `xk`
/// and the facet columns, those that vary (the architecture, scenario
/// and engine first, then the grid keys); the value's name when none
/// does.
fn line_labels(sweep: &Sweep, rows: &[Row], xk: usize, facets: &[Column], y: &str) -> Vec<String> {
    let varies = |c: Column| {
        let mut v: Vec<&str> = rows.iter().map(|r| c.value(r)).collect();
        v.sort();
        v.dedup();
        v.len() > 1
    };
    let cols: Vec<Column> = [Column::Scenario, Column::Arch, Column::Engine]
        .into_iter()
        .chain((0..sweep.keys.len()).map(Column::Grid))
        .filter(|&c| c != Column::Grid(xk) && !facets.contains(&c) && varies(c))
        .collect();
    rows.iter()
        .map(|r| {
            if cols.is_empty() {
                return y.to_string();
            }
            let parts: Vec<String> = cols.iter().map(|c| c.show(sweep, r)).collect();
            parts.join(", ")
        })
        .collect()
}

/// The lines: (label, points sorted by x), the mean of repeated rows;
/// whether any point had repeats.
type Lines = (Vec<(String, Vec<(f64, f64)>)>, bool);

fn lines(rows: &[Row], labels: &[String], x: impl Fn(Row) -> f64, scale: f64) -> Lines {
    let mut groups: BTreeMap<&str, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (r, label) in rows.iter().zip(labels) {
        let Some(v) = r.value.map(|v| v as f64) else {
            continue;
        };
        if !order.contains(&label.as_str()) {
            order.push(label);
        }
        let at = groups.entry(label).or_default();
        at.entry(x(r).to_bits()).or_default().push(v * scale);
    }
    let mut repeats = false;
    let out = order
        .into_iter()
        .map(|label| {
            let mut v: Vec<(f64, f64)> = groups[label]
                .iter()
                .map(|(x, ys)| {
                    repeats |= ys.len() > 1;
                    (f64::from_bits(*x), ys.iter().sum::<f64>() / ys.len() as f64)
                })
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (label.to_string(), v)
        })
        .collect();
    (out, repeats)
}

impl LinePlot {
    /// Build the plot of `spec` from `sweep`; an error says which key,
    /// value or phase is missing and what there is.
    pub fn new(sweep: &Sweep, spec: &PlotSpec) -> Result<LinePlot, String> {
        let xk = x_key(sweep, &spec.x)?;
        let facets = spec
            .facet
            .iter()
            .map(|f| Column::named(sweep, "--facet", f))
            .collect::<Result<Vec<_>, _>>()?;
        if facets.contains(&Column::Grid(xk)) {
            return Err(format!("--facet {}: it is the x axis key", spec.x));
        }
        let (rows, phase) = value_rows(sweep, spec)?;
        let rows = filtered(sweep, rows, &spec.filters)?;
        if rows.is_empty() {
            return Err(format!("{}: no row passes the --where filters", spec.y));
        }
        let mut notes: Vec<String> = failed_note(sweep, &spec.y).into_iter().collect();
        let xs = distinct(&rows, |r| &r.grid[xk]);
        let axis = XAxis::of(&xs, &spec.x, spec.x_scale)?;
        let (unit, scale) = y_unit(&spec.y);
        let labels = line_labels(sweep, &rows, xk, &facets, &spec.y);
        let panel_of = |r: Row| -> String {
            let parts: Vec<String> = facets.iter().map(|c| c.show(sweep, r)).collect();
            parts.join(", ")
        };
        // Each row's panel, once; the panels in order of first appearance.
        let row_panel: Vec<String> = rows.iter().map(|&r| panel_of(r)).collect();
        let mut titles: Vec<&String> = Vec::new();
        for t in &row_panel {
            if !titles.contains(&t) {
                titles.push(t);
            }
        }
        let mut legend: Vec<String> = Vec::new();
        let mut panels = Vec::new();
        let mut repeats = false;
        for title in titles {
            let (rs, ls): (Vec<Row>, Vec<String>) = rows
                .iter()
                .zip(&labels)
                .zip(&row_panel)
                .filter(|(_, p)| *p == title)
                .map(|((r, l), _)| (*r, l.clone()))
                .unzip();
            let (series, rep) = lines(&rs, &ls, |r| axis.pos(&r.grid[xk]), scale);
            repeats |= rep;
            let series = series
                .into_iter()
                .map(|(label, pts)| {
                    let i = legend.iter().position(|l| *l == label).unwrap_or_else(|| {
                        legend.push(label);
                        legend.len() - 1
                    });
                    (i, pts)
                })
                .collect();
            panels.push(Panel {
                title: title.clone(),
                series,
            });
        }
        if panels.iter().all(|p| p.series.is_empty()) {
            return Err(format!(
                "{} in phase {phase}: every point failed; nothing to draw",
                spec.y
            ));
        }
        if repeats {
            notes.push("several rows per point (repeats): their mean is drawn".into());
        }
        let all_zero = drop_zero_lines(&mut panels, &legend, &mut notes);
        if spec.log_y {
            log10_values(&mut panels, &legend, &spec.y)?;
        }
        let (x_label, x_ticks) = axis.labels(&spec.x, &xs);
        let scenarios = distinct(&rows, |r| &r.scenario);
        let log = if spec.log_y { ", log10 scale" } else { "" };
        Ok(LinePlot {
            title: format!("{}: {} in phase {phase}", scenarios.join(", "), spec.y),
            x_label,
            y_label: format!("{} ({unit}{log})", spec.y),
            legend,
            panels,
            x_ticks,
            log_y: spec.log_y,
            all_zero,
            notes,
        })
    }

    /// The plot as SVG text or PNG bytes.
    pub fn render(&self, format: ImageFormat) -> Result<Vec<u8>, String> {
        crate::render(self, format)
    }

    /// The number of lines (over all panels).
    pub fn lines(&self) -> usize {
        self.panels.iter().map(|p| p.series.len()).sum()
    }

    /// The number of panels.
    pub fn panels(&self) -> usize {
        self.panels.len()
    }

    /// Every line: (panel title, line label, points), panel by panel.
    pub fn series(&self) -> impl Iterator<Item = (&str, &str, &[(f64, f64)])> {
        self.panels.iter().flat_map(move |p| {
            p.series
                .iter()
                .map(move |(i, v)| (p.title.as_str(), self.legend[*i].as_str(), v.as_slice()))
        })
    }
}

/// Leave out the lines that are 0 at every point, with a note, unless
/// every line is: then keep them all and return true.
fn drop_zero_lines(panels: &mut [Panel], legend: &[String], notes: &mut Vec<String>) -> bool {
    let zero = |v: &[(f64, f64)]| v.iter().all(|p| p.1 == 0.0);
    if panels.iter().flat_map(|p| &p.series).all(|(_, v)| zero(v)) {
        return true;
    }
    let mut gone: Vec<String> = Vec::new();
    for p in panels.iter_mut() {
        p.series.retain(|(i, v)| {
            if zero(v) {
                gone.push(match p.title.as_str() {
                    "" => legend[*i].clone(),
                    panel => format!("{} ({panel})", legend[*i]),
                });
            }
            !zero(v)
        });
    }
    if !gone.is_empty() {
        let shown: Vec<&str> = gone.iter().take(6).map(String::as_str).collect();
        let more = gone.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        notes.push(format!(
            "{} line(s) are 0 at every point and not drawn: {}{more}",
            gone.len(),
            shown.join("; ")
        ));
    }
    false
}

/// The values of every line as log10, or an error at a value that is not
/// positive.
fn log10_values(panels: &mut [Panel], legend: &[String], y: &str) -> Result<(), String> {
    for p in panels.iter_mut() {
        for (i, v) in &mut p.series {
            if let Some(pt) = v.iter().find(|pt| pt.1 <= 0.0) {
                return Err(format!(
                    "--log-y: {y} is {} at a point of `{}`; a log scale needs positive values",
                    pt.1, legend[*i]
                ));
            }
            v.iter_mut().for_each(|pt| pt.1 = pt.1.log10());
        }
    }
    Ok(())
}

/// The colour of line `i`: Tableau's ten (readable on white), then
/// plotters' larger palette.
fn line_colour(i: usize) -> RGBColor {
    const TAB10: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    match TAB10.get(i) {
        Some(&(r, g, b)) => RGBColor(r, g, b),
        None => {
            let c = Palette99::pick(i).to_rgba();
            RGBColor(c.0, c.1, c.2)
        }
    }
}

/// Short tick text for a y value.
fn y_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v}")
    } else {
        format!("{v:.3}")
    }
}

impl LinePlot {
    /// The axes' ranges, shared by the panels: every point with a margin,
    /// y from 0 on a linear axis.
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let all = self
            .panels
            .iter()
            .flat_map(|p| p.series.iter().flat_map(|(_, v)| v.iter()));
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in all {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 == x1 {
            (x0, x1) = (x0 - 1.0, x1 + 1.0);
        }
        let pad = (x1 - x0) * 0.04;
        if !self.log_y {
            y0 = y0.min(0.0);
        }
        if y0 == y1 {
            y1 = y0 + 1.0;
        }
        ((x0 - pad, x1 + pad), (y0, y1 + (y1 - y0) * 0.08))
    }

    /// The tick label of axis position `v` on the x axis.
    fn x_tick(&self, v: f64) -> String {
        match &self.x_ticks {
            Some(t) => t
                .iter()
                .find(|(p, _)| (p - v).abs() < 1e-9)
                .map(|(_, s)| s.clone())
                .unwrap_or_default(),
            None => y_tick(v),
        }
    }

    /// Panels per row of the grid.
    fn columns(&self) -> usize {
        match self.panels.len() {
            0 | 1 => 1,
            2 | 4 => 2,
            _ => 3,
        }
    }

    /// Width and height of one panel.
    fn panel_size(&self) -> (u32, u32) {
        match self.columns() {
            1 if self.panels.len() == 1 => (820, 560),
            1 | 2 => (480, 340),
            _ => (380, 300),
        }
    }

    /// Width of the legend to the right of the panels.
    fn legend_width(&self) -> u32 {
        let chars = self
            .legend
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0);
        (chars as u32 * 8 + 56).clamp(140, 520)
    }

    /// One panel on `area`.
    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, plotters::coord::Shift>,
        panel: &Panel,
    ) -> Result<(), String> {
        let ((x0, x1), (y0, y1)) = self.ranges();
        let single = self.panels.len() == 1;
        let mut chart = ChartBuilder::on(area);
        chart
            .margin(if single { 12 } else { 8 })
            .x_label_area_size(if single { 48 } else { 40 })
            .y_label_area_size(if single { 90 } else { 76 });
        if !panel.title.is_empty() {
            chart.caption(&panel.title, (FAMILY, 14));
        }
        let mut chart = chart.build_cartesian_2d(x0..x1, y0..y1).map_err(de)?;
        let x_fmt = |v: &f64| self.x_tick(*v);
        let y_fmt = |v: &f64| {
            if self.log_y {
                y_tick(10f64.powf(*v))
            } else {
                y_tick(*v)
            }
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style((FAMILY, if single { 13 } else { 11 }))
            .axis_desc_style((FAMILY, if single { 14 } else { 12 }))
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .light_line_style(RGBColor(235, 235, 235));
        if let Some(t) = &self.x_ticks {
            // One label per value: plotters places ticks evenly, so ask
            // for enough of them to hit every integer position.
            let span = (x1 - x0).ceil() as usize;
            mesh.x_labels((span + 1).max(t.len()).min(64));
        }
        mesh.draw().map_err(de)?;
        for (i, pts) in &panel.series {
            let c = line_colour(*i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(de)?;
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(de)?;
        }
        Ok(())
    }

    /// The legend, outside the data: a line sample and label per line.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        let font = (FAMILY, 13).into_font().color(&BLACK);
        for (i, label) in self.legend.iter().enumerate() {
            let y = 24 + 20 * i as i32;
            let c = line_colour(i).to_rgba();
            area.draw(&PathElement::new(vec![(8, y), (32, y)], c.stroke_width(2)))
                .map_err(de)?;
            area.draw(&Circle::new((20, y), 3, c.filled()))
                .map_err(de)?;
            area.draw(&Text::new(
                label.as_str(),
                (40, y),
                font.clone().pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                )),
            ))
            .map_err(de)?;
        }
        Ok(())
    }
}

impl Picture for LinePlot {
    fn size(&self) -> (u32, u32) {
        let (w, h) = self.panel_size();
        let cols = self.columns() as u32;
        let rows = self.panels.len().div_ceil(self.columns()) as u32;
        let legend_h = 40 + 20 * self.legend.len() as u32;
        (
            cols * w + self.legend_width(),
            (40 + rows * h).max(40 + legend_h),
        )
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        root.fill(&WHITE).map_err(de)?;
        let body = root.titled(&self.title, (FAMILY, 18)).map_err(de)?;
        let (w, h) = self.panel_size();
        let cols = self.columns();
        let (plots, legend) = body.split_horizontally(cols as u32 * w);
        let rows = self.panels.len().div_ceil(cols);
        let (plots, _) = plots.split_vertically(rows as u32 * h);
        let cells = plots.split_evenly((rows, cols));
        for (panel, area) in self.panels.iter().zip(&cells) {
            self.draw_panel(area, panel)?;
        }
        self.draw_legend(&legend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> Sweep {
        let mut csv = String::from(
            "point,fault_around_bytes,series.batch,scenario,arch,engine,phase,kind,name,value,error\n",
        );
        let mut p = 0;
        for arch in ["x86_64", "arm64"] {
            for batch in ["0", "1"] {
                for fab in ["4K", "16K", "64K", "256K"] {
                    let v = 1000 / (parse_x(fab).unwrap().0 as u64 / 4096);
                    csv += &format!("{p},{fab},{batch},s,{arch},sim,m,counter,pgfault,{v},\n");
                    csv += &format!("{p},{fab},{batch},s,{arch},sim,m,time,modelled_ns,5000000,\n");
                    p += 1;
                }
            }
        }
        Sweep::parse("t.csv", &csv).unwrap()
    }

    fn spec(y: &str, x: &str) -> PlotSpec {
        PlotSpec {
            y: y.into(),
            x: x.into(),
            ..PlotSpec::default()
        }
    }

    /// (label, points) of every line of `p`.
    fn series(p: &LinePlot) -> Vec<(String, Vec<(f64, f64)>)> {
        p.series()
            .map(|(_, l, v)| (l.to_string(), v.to_vec()))
            .collect()
    }

    #[test]
    fn a_line_per_combination_of_the_other_keys() {
        let p = LinePlot::new(&sweep(), &spec("pgfault", "fault_around_bytes")).unwrap();
        let series = series(&p);
        // arch × series.batch = 4 lines of 4 points each.
        assert_eq!(p.lines(), 4);
        assert!(series.iter().all(|(_, v)| v.len() == 4));
        assert_eq!(series[0].0, "x86_64, series.batch=0");
        // Sizes that are powers of two spanning 64×: log2 axis in bytes.
        assert_eq!(p.x_label, "fault_around_bytes (bytes, log2 scale)");
        assert_eq!(series[0].1[0], (12.0, 1000.0));
        assert_eq!(series[0].1[3], (18.0, 15.0));
        let ticks: Vec<&str> = p
            .x_ticks
            .as_ref()
            .unwrap()
            .iter()
            .map(|t| t.1.as_str())
            .collect();
        assert_eq!(ticks, ["4K", "16K", "64K", "256K"]);
        let svg = String::from_utf8(p.render(ImageFormat::Svg).unwrap()).unwrap();
        for t in [
            "x86_64, series.batch=0",
            "arm64, series.batch=1",
            "256K",
            "pgfault (count)",
        ] {
            assert!(svg.contains(t), "{t} missing from the SVG");
        }
        let png = p.render(ImageFormat::Png).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }

    #[test]
    fn modelled_time_in_ms_and_categorical_keys() {
        let p = LinePlot::new(&sweep(), &spec("modelled_ns", "series.batch")).unwrap();
        assert_eq!(p.y_label, "modelled_ns (modelled time, ms)");
        // A switch: two categories at positions 0 and 1, labelled with
        // its values, not a continuous axis; 5 ms.
        assert_eq!(series(&p)[0].1, vec![(0.0, 5.0), (1.0, 5.0)]);
        let ticks: Vec<&str> = p
            .x_ticks
            .as_ref()
            .unwrap()
            .iter()
            .map(|t| t.1.as_str())
            .collect();
        assert_eq!(ticks, ["0", "1"]);
        assert_eq!(p.lines(), 8);
    }

    #[test]
    fn failed_points_are_noted() {
        let mut s = sweep();
        s.rows.push(crate::sweep::SweepRow {
            row: foliosim_table::Row {
                point: 99,
                grid: vec!["8K".into(), "0".into()],
                scenario: "s".into(),
                arch: "x86_64".into(),
                engine: "sim".into(),
                phase: String::new(),
                kind: String::new(),
                name: String::new(),
                value: None,
                error: "out of memory".into(),
            },
            line: 42,
        });
        let p = LinePlot::new(&s, &spec("pgfault", "fault_around_bytes")).unwrap();
        assert_eq!(
            p.notes,
            ["1 point(s) failed and are not drawn (line 42: out of memory)"]
        );
        // Still 4 points per line: the failed one has no value.
        assert!(series(&p).iter().all(|(_, v)| v.len() == 4));
    }

    #[test]
    fn scales() {
        let s = sweep();
        let mut sp = spec("pgfault", "fault_around_bytes");
        sp.x_scale = XScale::Linear;
        let p = LinePlot::new(&s, &sp).unwrap();
        assert_eq!(p.x_label, "fault_around_bytes (bytes)");
        assert_eq!(series(&p)[0].1[0], (4096.0, 1000.0));
        assert!(p.x_ticks.is_none());
        sp.log_y = true;
        let p = LinePlot::new(&s, &sp).unwrap();
        assert_eq!(series(&p)[0].1[0], (4096.0, 3.0));
        assert_eq!(p.y_label, "pgfault (count, log10 scale)");
        // series.batch is 0 or 1: no log2 axis for a 0.
        let mut sp = spec("pgfault", "series.batch");
        sp.x_scale = XScale::Log2;
        let e = LinePlot::new(&s, &sp).unwrap_err();
        assert!(e.contains("not positive"), "{e}");
    }

    #[test]
    fn clear_errors() {
        let s = sweep();
        let e = LinePlot::new(&s, &spec("pgfault", "nope")).unwrap_err();
        assert!(e.contains("fault_around_bytes, series.batch"), "{e}");
        let e = LinePlot::new(&s, &spec("pgfault", "arch")).unwrap_err();
        assert!(e.contains("each arch is a line of its own"), "{e}");
        let e = LinePlot::new(&s, &spec("nope", "series.batch")).unwrap_err();
        assert!(e.contains("modelled_ns") && e.contains("pgfault"), "{e}");
        let mut sp = spec("pgfault", "series.batch");
        sp.phase = Some("other".into());
        let e = LinePlot::new(&s, &sp).unwrap_err();
        assert!(e.contains("its phases: m"), "{e}");
    }

    #[test]
    fn facets_make_panels_sharing_colours_and_filters_keep_rows() {
        let s = sweep();
        let mut sp = spec("pgfault", "fault_around_bytes");
        sp.facet = vec!["arch".into()];
        let p = LinePlot::new(&s, &sp).unwrap();
        // One panel per arch, a line per series.batch value in each: the
        // same two labels (and so colours) in both.
        assert_eq!(p.panels(), 2);
        assert_eq!(p.legend, ["series.batch=0", "series.batch=1"]);
        let got: Vec<(&str, &str)> = p.series().map(|(t, l, _)| (t, l)).collect();
        assert_eq!(
            got,
            [
                ("x86_64", "series.batch=0"),
                ("x86_64", "series.batch=1"),
                ("arm64", "series.batch=0"),
                ("arm64", "series.batch=1")
            ]
        );
        let svg = String::from_utf8(p.render(ImageFormat::Svg).unwrap()).unwrap();
        assert!(svg.contains("arm64") && svg.contains("series.batch=1"));
        sp.filters = vec![("series.batch".into(), vec!["1".into()])];
        let p = LinePlot::new(&s, &sp).unwrap();
        assert_eq!(p.lines(), 2);
        assert_eq!(p.legend, ["pgfault"]);
        sp.filters = vec![("series.batch".into(), vec!["2".into()])];
        let e = LinePlot::new(&s, &sp).unwrap_err();
        assert!(
            e.contains("--where series.batch=2") && e.contains("its values: 0, 1"),
            "{e}"
        );
        sp.filters = vec![("series.bach".into(), vec!["1".into()])];
        let e = LinePlot::new(&s, &sp).unwrap_err();
        assert!(e.contains("did you mean series.batch?"), "{e}");
        sp.filters.clear();
        sp.facet = vec!["fault_around_bytes".into()];
        let e = LinePlot::new(&s, &sp).unwrap_err();
        assert!(e.contains("it is the x axis key"), "{e}");
    }

    #[test]
    fn lines_that_are_zero_everywhere_are_left_out() {
        let mut s = sweep();
        // series.batch=1 on arm64 has no faults at all.
        for r in &mut s.rows {
            if r.arch == "arm64" && r.grid[1] == "1" && r.name == "pgfault" {
                r.row.value = Some(0);
            }
        }
        let p = LinePlot::new(&s, &spec("pgfault", "fault_around_bytes")).unwrap();
        assert_eq!(p.lines(), 3);
        assert!(!p.all_zero);
        assert_eq!(
            p.notes,
            ["1 line(s) are 0 at every point and not drawn: arm64, series.batch=1"]
        );
        for r in &mut s.rows {
            if r.name == "pgfault" {
                r.row.value = Some(0);
            }
        }
        let p = LinePlot::new(&s, &spec("pgfault", "fault_around_bytes")).unwrap();
        assert!(p.all_zero);
        assert_eq!(p.lines(), 4);
    }
}
