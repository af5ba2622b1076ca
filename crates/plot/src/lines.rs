//! Sweep plots: one value (a counter, `modelled_ns`, `folios/...`) against
//! one grid key, a line per combination of the other grid keys (and of the
//! architectures and scenarios when the sweep has several).

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::sweep::Sweep;
use crate::{de, size_label, ImageFormat, Picture, FAMILY};

/// The x axis scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XScale {
    /// log2 when every x value is a power of two spanning at least 8×,
    /// else linear.
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
#[derive(Clone, Debug)]
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

/// A sweep plot, ready to draw.
#[derive(Debug)]
pub struct LinePlot {
    title: String,
    x_label: String,
    y_label: String,
    /// (label, points (x in axis space, y in axis space)).
    series: Vec<(String, Vec<(f64, f64)>)>,
    /// Tick labels of a categorical or log2 axis: (axis position, text).
    x_ticks: Option<Vec<(f64, String)>>,
    log_y: bool,
    /// Notes for the user (failed points, averaged repeats).
    pub notes: Vec<String>,
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
        let Some(p) = xs.iter().map(|s| parse_x(s)).collect::<Option<Vec<_>>>() else {
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

/// The line label of each row: the grid keys other than `xk`, the
/// architecture, scenario and engine, those that vary.
fn line_labels(sweep: &Sweep, rows: &[Row], xk: usize, y: &str) -> Vec<String> {
    let varies = |f: &dyn Fn(Row) -> &str| {
        let mut v: Vec<&str> = rows.iter().map(|r| f(r)).collect();
        v.sort();
        v.dedup();
        v.len() > 1
    };
    let others: Vec<usize> = (0..sweep.keys.len())
        .filter(|&k| k != xk && varies(&|r| &r.grid[k]))
        .collect();
    let (by_scenario, by_arch, by_engine) = (
        varies(&|r| &r.scenario),
        varies(&|r| &r.arch),
        varies(&|r| &r.engine),
    );
    rows.iter()
        .map(|r| {
            let mut parts: Vec<String> = [
                (by_scenario, &r.scenario),
                (by_arch, &r.arch),
                (by_engine, &r.engine),
            ]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, v)| v.clone())
            .collect();
            parts.extend(
                others
                    .iter()
                    .map(|&k| format!("{}={}", sweep.keys[k], r.grid[k])),
            );
            if parts.is_empty() {
                y.to_string()
            } else {
                parts.join(", ")
            }
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
        let (rows, phase) = value_rows(sweep, spec)?;
        let mut notes: Vec<String> = failed_note(sweep, &spec.y).into_iter().collect();
        let xs = distinct(&rows, |r| &r.grid[xk]);
        let axis = XAxis::of(&xs, &spec.x, spec.x_scale)?;
        let (unit, scale) = y_unit(&spec.y);
        let labels = line_labels(sweep, &rows, xk, &spec.y);
        let (mut series, repeats) = lines(&rows, &labels, |r| axis.pos(&r.grid[xk]), scale);
        if series.is_empty() {
            return Err(format!(
                "{} in phase {phase}: every point failed; nothing to draw",
                spec.y
            ));
        }
        if repeats {
            notes.push("several rows per point (repeats): their mean is drawn".into());
        }
        if spec.log_y {
            for (label, v) in &mut series {
                if let Some(p) = v.iter().find(|p| p.1 <= 0.0) {
                    return Err(format!(
                        "--log-y: {} is {} at a point of `{label}`; a log scale needs positive values",
                        spec.y, p.1
                    ));
                }
                v.iter_mut().for_each(|p| p.1 = p.1.log10());
            }
        }
        let (x_label, x_ticks) = axis.labels(&spec.x, &xs);
        let scenarios = distinct(&rows, |r| &r.scenario);
        let log = if spec.log_y { ", log10 scale" } else { "" };
        Ok(LinePlot {
            title: format!("{}: {} in phase {phase}", scenarios.join(", "), spec.y),
            x_label,
            y_label: format!("{} ({unit}{log})", spec.y),
            series,
            x_ticks,
            log_y: spec.log_y,
            notes,
        })
    }

    /// The plot as SVG text or PNG bytes.
    pub fn render(&self, format: ImageFormat) -> Result<Vec<u8>, String> {
        crate::render(self, format)
    }

    /// The number of lines.
    pub fn lines(&self) -> usize {
        self.series.len()
    }
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
    /// The axes' ranges: every point with a margin, y from 0 on a linear
    /// axis.
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let all = self.series.iter().flat_map(|(_, v)| v.iter());
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
}

impl Picture for LinePlot {
    fn size(&self) -> (u32, u32) {
        (960, 600)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        root.fill(&WHITE).map_err(de)?;
        let ((x0, x1), (y0, y1)) = self.ranges();
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FAMILY, 18))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(90)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(de)?;
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
            .label_style((FAMILY, 13))
            .axis_desc_style((FAMILY, 14))
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
        for (i, (label, pts)) in self.series.iter().enumerate() {
            let c = line_colour(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(de)?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(de)?;
        }
        chart
            .configure_series_labels()
            .label_font((FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(de)?;
        Ok(())
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
            phase: None,
            x_scale: XScale::Auto,
            log_y: false,
        }
    }

    #[test]
    fn a_line_per_combination_of_the_other_keys() {
        let p = LinePlot::new(&sweep(), &spec("pgfault", "fault_around_bytes")).unwrap();
        // arch × series.batch = 4 lines of 4 points each.
        assert_eq!(p.lines(), 4);
        assert!(p.series.iter().all(|(_, v)| v.len() == 4));
        assert_eq!(p.series[0].0, "x86_64, series.batch=0");
        // Sizes that are powers of two spanning 64×: log2 axis in bytes.
        assert_eq!(p.x_label, "fault_around_bytes (bytes, log2 scale)");
        assert_eq!(p.series[0].1[0], (12.0, 1000.0));
        assert_eq!(p.series[0].1[3], (18.0, 15.0));
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
        // 0/1 parse as numbers: linear axis, points at 0 and 1, 5 ms.
        assert_eq!(p.series[0].1, vec![(0.0, 5.0), (1.0, 5.0)]);
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
        assert!(p.series.iter().all(|(_, v)| v.len() == 4));
    }

    #[test]
    fn scales() {
        let s = sweep();
        let mut sp = spec("pgfault", "fault_around_bytes");
        sp.x_scale = XScale::Linear;
        let p = LinePlot::new(&s, &sp).unwrap();
        assert_eq!(p.x_label, "fault_around_bytes (bytes)");
        assert_eq!(p.series[0].1[0], (4096.0, 1000.0));
        assert!(p.x_ticks.is_none());
        sp.log_y = true;
        let p = LinePlot::new(&s, &sp).unwrap();
        assert_eq!(p.series[0].1[0], (4096.0, 3.0));
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
}
