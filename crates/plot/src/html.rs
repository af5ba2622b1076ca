//! `foliosim report`: one self-contained HTML file (no scripts, no network,
//! the CSS and every picture inline as SVG) from JSON reports and sweep
//! tables: each report's scenario and system knobs, its non-zero counters,
//! modelled time, folio histograms, folio maps and expectations; the
//! difference of two reports (the first the base, the second the patched
//! run); and sweep plots.
//!
//! All text from the inputs goes through [`esc`]; the pictures come from
//! plotters' SVG backend, which escapes its text itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use foliosim_report::{ExpectOutcome, Phase, Report};

use crate::lines::{LinePlot, PlotSpec, XScale};
use crate::map::MapPlot;
use crate::sweep::Sweep;
use crate::ImageFormat;

/// The values plotted for each sweep when `--y` is not given (those the
/// sweep has).
pub const DEFAULT_YS: [&str; 6] = [
    "modelled_ns",
    "pgfault",
    "pswpout",
    "tlb:tlb_flush",
    "sim/contpte_unfold",
    "sim/set_ptes",
];

/// The inputs of one report page.
#[derive(Debug, Default)]
pub struct Inputs {
    /// (file name, report), in command-line order.
    pub reports: Vec<(String, Report)>,
    /// (file name, sweep).
    pub sweeps: Vec<(String, Sweep)>,
    /// (sweep file name, what `--by` changes in one of its values), in
    /// the order to show them.
    pub changes: Vec<(String, crate::change::Change)>,
}

/// What to draw from the sweeps.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Values to plot (default [`DEFAULT_YS`]).
    pub ys: Vec<String>,
    /// The grid key on the x axis (default: the first with several
    /// values).
    pub x: Option<String>,
    /// The phase of the plotted values (default: every phase they are in).
    pub phase: Option<String>,
    /// Columns whose values make the panels of each plot.
    pub facet: Vec<String>,
    /// `--where` filters of the plotted rows.
    pub filters: Vec<(String, Vec<String>)>,
    /// The key compared by `changes` (not a default x axis).
    pub by: Option<String>,
}

/// HTML-escape text (element content and attribute values).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font-family: 'DejaVu Sans', Verdana, sans-serif; margin: 2em auto; max-width: 1420px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; border-bottom: 2px solid #444; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #aaa; }
h3 { font-size: 1.1em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
td.n { text-align: right; font-family: 'DejaVu Sans Mono', monospace; }
th { background: #eee; }
tr.changed td { background: #fff6d5; }
.ok { color: #1a7f37; font-weight: bold; }
.fail { color: #cf222e; font-weight: bold; }
.info { color: #777; }
.knobs td, .knobs code { font-family: 'DejaVu Sans Mono', monospace; }
.knobs code { margin-right: 1em; white-space: nowrap; font-size: 0.85em; }
.pic { overflow-x: auto; margin: 0.8em 0; }
.note { color: #555; font-size: 0.9em; }
.cols { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
";

/// The whole page, and notes for the user (values not found, ...).
pub fn page(inputs: &Inputs, opts: &Options) -> Result<(String, Vec<String>), String> {
    let mut notes = Vec::new();
    let mut h = String::new();
    let names: Vec<&str> = inputs
        .reports
        .iter()
        .map(|(n, _)| n.as_str())
        .chain(inputs.sweeps.iter().map(|(n, _)| n.as_str()))
        .collect();
    let title = match inputs.reports.first() {
        Some((_, r)) => format!("foliosim report: {}", r.scenario),
        None => "foliosim report: sweep".to_string(),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n\
         <p class=\"note\">From {}.</p>\n",
        esc(&title),
        esc(&title),
        esc(&names.join(", "))
    );
    // Contents: links to the sections (plain anchors, no script).
    h.push_str("<ul class=\"note\">\n");
    if inputs.reports.len() == 2 {
        h.push_str("<li><a href=\"#diff\">Difference</a></li>\n");
    }
    for (i, (file, r)) in inputs.reports.iter().enumerate() {
        let (name, run) = report_title(file, r);
        let _ = writeln!(h, "<li><a href=\"#report-{i}\">{name} {run}</a></li>");
    }
    for (i, (file, _)) in inputs.sweeps.iter().enumerate() {
        let _ = writeln!(h, "<li><a href=\"#sweep-{i}\">Sweep {}</a></li>", esc(file));
    }
    h.push_str("</ul>\n");
    if inputs.reports.len() == 2 {
        h.push_str("<div id=\"diff\"></div>\n");
        diff(&mut h, &inputs.reports[0], &inputs.reports[1]);
    }
    for (i, (file, r)) in inputs.reports.iter().enumerate() {
        let _ = writeln!(h, "<div id=\"report-{i}\"></div>");
        report(&mut h, file, r, &mut notes)?;
    }
    for (i, (file, s)) in inputs.sweeps.iter().enumerate() {
        let _ = writeln!(h, "<div id=\"sweep-{i}\"></div>");
        sweep(&mut h, file, s, opts, &inputs.changes, &mut notes)?;
    }
    h.push_str("</body>\n</html>\n");
    Ok((h, notes))
}

/// A report's scenario, and its architecture, engine and file in
/// parentheses, escaped.
fn report_title(file: &str, r: &Report) -> (String, String) {
    let run = format!("({}, {}; {})", esc(&r.arch), esc(&r.engine), esc(file));
    (esc(&r.scenario), run)
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

/// One report: knobs, folio maps, per phase counters, time and folios,
/// then expectations.
fn report(h: &mut String, file: &str, r: &Report, notes: &mut Vec<String>) -> Result<(), String> {
    let (name, run) = report_title(file, r);
    let _ = writeln!(h, "<h2>{name} <span class=\"note\">{run}</span></h2>");
    provenance(h, r.provenance.as_ref());
    if !r.system.is_empty() {
        h.push_str("<p class=\"knobs\"><b>System knobs:</b>\n");
        for (k, v) in &r.system {
            let _ = writeln!(h, "<code>{}={}</code>", esc(k), esc(v));
        }
        h.push_str("</p>\n");
    }
    if r.phases.iter().any(|p| !p.maps.is_empty()) {
        h.push_str("<h3>Folio maps</h3>\n");
    }
    for p in &r.phases {
        for region in p.maps.keys() {
            let m = MapPlot::new(r, &p.name, region)?;
            notes.extend(
                m.notes
                    .iter()
                    .filter(|n| n.starts_with("showing"))
                    .map(|n| format!("{file}: {region} in {}: {n}", p.name)),
            );
            let svg = String::from_utf8(m.render(ImageFormat::Svg)?).expect("SVG is text");
            let _ = writeln!(h, "<div class=\"pic\">{svg}</div>");
        }
    }
    for p in &r.phases {
        let _ = writeln!(h, "<h3>Phase {}</h3>\n<div class=\"cols\">", esc(&p.name));
        phase_tables(h, p);
        h.push_str("</div>\n");
    }
    expectations(h, &r.expectations);
    Ok(())
}

/// A phase's non-zero counters, its modelled time and folio histograms.
fn phase_tables(h: &mut String, p: &Phase) {
    h.push_str("<table><tr><th>counter</th><th>value</th></tr>\n");
    let mut any = false;
    for (k, v) in p.counters.iter().filter(|(_, v)| **v != 0) {
        any = true;
        let _ = writeln!(h, "<tr><td>{}</td><td class=\"n\">{v}</td></tr>", esc(k));
    }
    if !any {
        h.push_str("<tr><td colspan=\"2\">(every counter is 0)</td></tr>\n");
    }
    h.push_str("</table>\n");
    if let Some(t) = &p.time {
        let _ = writeln!(
            h,
            "<table><tr><th colspan=\"3\">modelled time {:.3} ms (profile {})</th></tr>",
            t.modelled_ns as f64 / 1e6,
            esc(&t.profile)
        );
        for (k, ns) in t.top(12) {
            let pct = 100.0 * ns as f64 / (t.modelled_ns.max(1)) as f64;
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"n\">{:.3} ms</td><td class=\"n\">{pct:.1}%</td></tr>",
                esc(k),
                ns as f64 / 1e6
            );
        }
        h.push_str("</table>\n");
    }
    for (region, hist) in &p.folios {
        let _ = writeln!(
            h,
            "<table><tr><th colspan=\"2\">folios of {}</th></tr>",
            esc(region)
        );
        for (b, n) in hist.iter().filter(|(_, n)| **n != 0) {
            let _ = writeln!(h, "<tr><td>{}</td><td class=\"n\">{n}</td></tr>", esc(b));
        }
        h.push_str("</table>\n");
    }
}

/// The expectations' verdicts.
fn expectations(h: &mut String, list: &[ExpectOutcome]) {
    if list.is_empty() {
        return;
    }
    h.push_str(
        "<h3>Expectations</h3>\n<table><tr><th></th><th>phase</th><th>counter</th>\
         <th>actual</th><th>expected</th><th>tolerance</th><th>at</th></tr>\n",
    );
    for e in list {
        let (class, verdict) = match (e.ok, e.judged) {
            (true, _) => ("ok", "ok"),
            (false, true) => ("fail", "FAIL"),
            (false, false) => ("info", "info"),
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"{class}\">{verdict}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&e.phase),
            esc(&e.counter),
            e.actual.map_or("missing".into(), num),
            num(e.expected),
            esc(&e.tolerance),
            esc(&e.at)
        );
    }
    h.push_str("</table>\n");
}

/// Base (first) against patched (second): the knobs that differ, then per
/// phase both have the counters that changed (absolute and relative), the
/// unchanged ones folded away.
fn diff(h: &mut String, (bf, base): &(String, Report), (pf, new): &(String, Report)) {
    let _ = writeln!(
        h,
        "<h2>Difference</h2>\n<p>base: {} ({}), patched: {} ({}): the counters that changed.</p>",
        esc(bf),
        esc(&base.arch),
        esc(pf),
        esc(&new.arch)
    );
    let knobs: BTreeSet<&String> = base.system.keys().chain(new.system.keys()).collect();
    let changed: Vec<&String> = knobs
        .into_iter()
        .filter(|k| base.system.get(*k) != new.system.get(*k))
        .collect();
    if !changed.is_empty() {
        h.push_str("<table class=\"knobs\"><tr><th>knob</th><th>base</th><th>patched</th></tr>\n");
        for k in changed {
            let v = |r: &Report| r.system.get(k).map_or("(unset)".to_string(), |v| v.clone());
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(k),
                esc(&v(base)),
                esc(&v(new))
            );
        }
        h.push_str("</table>\n");
    }
    for bp in &base.phases {
        if let Some(np) = new.phases.iter().find(|p| p.name == bp.name) {
            diff_phase(h, bp, np);
        }
    }
}

/// One phase of [`diff`].
fn diff_phase(h: &mut String, bp: &Phase, np: &Phase) {
    let _ = writeln!(
        h,
        "<h3>Phase {}</h3>\n<table><tr><th>counter</th><th>base</th><th>patched</th>\
         <th>change</th><th>%</th></tr>",
        esc(&bp.name)
    );
    let mut rows: BTreeMap<String, (i128, i128)> = BTreeMap::new();
    for (k, v) in &bp.counters {
        rows.entry(k.clone()).or_default().0 = *v as i128;
    }
    for (k, v) in &np.counters {
        rows.entry(k.clone()).or_default().1 = *v as i128;
    }
    if let (Some(a), Some(b)) = (&bp.time, &np.time) {
        let ns = (a.modelled_ns as i128, b.modelled_ns as i128);
        rows.insert("modelled_ns".into(), ns);
    }
    let (changed, same): (Vec<_>, Vec<_>) = rows
        .into_iter()
        .filter(|(_, (a, b))| *a != 0 || *b != 0)
        .partition(|(_, (a, b))| a != b);
    for (k, (a, b)) in &changed {
        let d = b - a;
        let pct = if *a != 0 {
            format!("{:+.1}%", 100.0 * d as f64 / *a as f64)
        } else {
            "new".into()
        };
        let _ = writeln!(
            h,
            "<tr class=\"changed\"><td>{}</td><td class=\"n\">{a}</td><td class=\"n\">{b}</td>\
             <td class=\"n\">{d:+}</td><td class=\"n\">{pct}</td></tr>",
            esc(k),
        );
    }
    if changed.is_empty() {
        h.push_str("<tr><td colspan=\"5\">(no counter changed)</td></tr>\n");
    }
    h.push_str("</table>\n");
    if !same.is_empty() {
        let _ = writeln!(
            h,
            "<details><summary>{} counters unchanged</summary>\n<table>\
             <tr><th>counter</th><th>both</th></tr>",
            same.len()
        );
        for (k, (a, _)) in &same {
            let _ = writeln!(h, "<tr><td>{}</td><td class=\"n\">{a}</td></tr>", esc(k));
        }
        h.push_str("</table></details>\n");
    }
}

/// How a report or sweep was made, as one line: foliosim's version and
/// commit, the engine, kernel and arch, the scenario, the overrides, the
/// seed and the cost profile (what it takes to make it again).
fn provenance(h: &mut String, p: Option<&foliosim_report::Provenance>) {
    let Some(p) = p else {
        h.push_str("<p class=\"note\">Made by: unknown (written without provenance).</p>\n");
        return;
    };
    let mut parts = vec![format!(
        "foliosim {}{}",
        p.foliosim,
        p.commit
            .as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    )];
    parts.extend(p.engine.iter().map(|e| format!("engine {e}")));
    parts.extend(p.kernel.iter().map(|(k, r)| format!("kernel {k} {r}")));
    parts.extend(p.arch.iter().map(|a| format!("arch {a}")));
    parts.push(format!("scenario {}", p.scenario_path));
    let overrides = p.overrides_shell();
    if !overrides.is_empty() {
        parts.push(overrides);
    }
    parts.extend(p.seed.iter().map(|s| format!("seed {s}")));
    parts.extend(p.profile.iter().map(|c| format!("profile {c}")));
    let _ = writeln!(
        h,
        "<p class=\"note\">Made by: {}</p>",
        esc(&parts.join("; "))
    );
}

/// The x key of a sweep's plots: the one asked for, else the grid key
/// with the most values that is neither a facet nor the compared key
/// (the first of those with as many); None when no key varies.
fn default_x(s: &Sweep, opts: &Options) -> Option<String> {
    if let Some(x) = &opts.x {
        return Some(x.clone());
    }
    let free = |k: &String| !opts.facet.contains(k) && opts.by.as_ref() != Some(k);
    let mut best: Option<(usize, &String)> = None;
    for (i, k) in s.keys.iter().enumerate().filter(|(_, k)| free(k)) {
        let n = s.values_of(i).len();
        if n > 1 && best.is_none_or(|(m, _)| n > m) {
            best = Some((n, k));
        }
    }
    best.map(|(_, k)| k.clone())
}

/// What `--by` changes (its tables and heatmaps), then the sweep plots:
/// each asked-for value against the x key, one plot per phase the value
/// is in; a value that is 0 everywhere is noted, not drawn.
fn sweep(
    h: &mut String,
    file: &str,
    s: &Sweep,
    opts: &Options,
    inputs_changes: &[(String, crate::change::Change)],
    notes: &mut Vec<String>,
) -> Result<(), String> {
    let _ = writeln!(
        h,
        "<h2>Sweep {} <span class=\"note\">({} rows; grid keys: {})</span></h2>",
        esc(file),
        s.rows.len(),
        esc(&s.keys.join(", "))
    );
    provenance(h, s.provenance.as_ref());
    for (_, c) in inputs_changes.iter().filter(|(f, _)| f == file) {
        let _ = writeln!(
            h,
            "<h3>{}: {} against {}</h3>\n<p class=\"note\">% change of {} in phase {} \
             (hover a cell for its two values).</p>\n{}",
            esc(&c.value),
            esc(&c.patched),
            esc(&c.base),
            esc(&c.value),
            esc(&c.phase),
            c.html_table()
        );
        let svg = String::from_utf8(c.render(ImageFormat::Svg)?).expect("SVG is text");
        let _ = writeln!(h, "<div class=\"pic\">{svg}</div>");
    }
    let Some(x) = default_x(s, opts) else {
        h.push_str("<p>Every grid key has one value: nothing to plot against.</p>\n");
        return Ok(());
    };
    let names = s.names();
    let ys: Vec<String> = if opts.ys.is_empty() {
        DEFAULT_YS
            .iter()
            .filter(|y| names.contains(y))
            .map(|y| y.to_string())
            .collect()
    } else {
        opts.ys.clone()
    };
    let failed = s.rows.iter().filter(|r| r.value.is_none()).count();
    if failed > 0 {
        let _ = writeln!(
            h,
            "<p class=\"fail\">{failed} rows are failed points; the plots leave them out.</p>"
        );
    }
    for y in ys {
        let mut phases: Vec<&str> = Vec::new();
        for r in s.rows.iter().filter(|r| r.name == y) {
            if !phases.contains(&r.phase.as_str()) {
                phases.push(&r.phase);
            }
        }
        if let Some(p) = &opts.phase {
            phases.retain(|q| q == p);
        }
        if phases.is_empty() {
            notes.push(format!("{file}: no value {y} to plot"));
            let _ = writeln!(
                h,
                "<p class=\"note\">No value {} in this sweep.</p>",
                esc(&y)
            );
            continue;
        }
        for phase in phases {
            let spec = PlotSpec {
                y: y.clone(),
                x: x.clone(),
                phase: Some(phase.to_string()),
                x_scale: XScale::Auto,
                log_y: false,
                facet: opts.facet.clone(),
                filters: opts.filters.clone(),
            };
            let plot = LinePlot::new(s, &spec).map_err(|e| format!("{file}: {e}"))?;
            if plot.all_zero {
                let zero = format!("{y} is 0 at every point of phase {phase}: not drawn");
                let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(&zero));
                notes.push(format!("{file}: {zero}"));
                continue;
            }
            let svg = String::from_utf8(plot.render(ImageFormat::Svg)?).expect("SVG is text");
            let _ = writeln!(h, "<div class=\"pic\">{svg}</div>");
            for n in &plot.notes {
                let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(n));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim_report::{ExpectOutcome, Phase};

    fn report(name: &str, faults: i64) -> Report {
        let mut p = Phase {
            name: "m".into(),
            ..Default::default()
        };
        p.counters.insert("pgfault".into(), faults);
        p.counters.insert("pswpout".into(), 0);
        Report {
            scenario: name.into(),
            arch: "arm64".into(),
            engine: "sim".into(),
            system: BTreeMap::from([("series.x".to_string(), faults.to_string())]),
            phases: vec![p],
            expectations: vec![ExpectOutcome {
                at: "a.toml:3:1".into(),
                phase: "m".into(),
                counter: "pgfault".into(),
                expected: 10.0,
                actual: Some(faults as f64),
                tolerance: "0".into(),
                ok: faults == 10,
                judged: true,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn escapes_everything_from_the_inputs() {
        let evil = "<script>alert('x')</script>&";
        let inputs = Inputs {
            reports: vec![(evil.into(), report(evil, 10))],
            ..Default::default()
        };
        let (html, _) = page(&inputs, &Options::default()).unwrap();
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"));
        // The only tags are the page's own: no script, no external link.
        for bad in ["<script", "<link", "src=", "http:", "https:"] {
            assert!(!html.contains(bad), "{bad}");
        }
    }

    #[test]
    fn two_reports_give_a_diff() {
        let inputs = Inputs {
            reports: vec![
                ("a.json".into(), report("s", 10)),
                ("b.json".into(), report("s", 15)),
            ],
            ..Default::default()
        };
        let (html, _) = page(&inputs, &Options::default()).unwrap();
        assert!(html.contains("<h2>Difference</h2>"));
        assert!(html.contains(
            "<tr class=\"changed\"><td>pgfault</td><td class=\"n\">10</td><td class=\"n\">15</td>\
             <td class=\"n\">+5</td><td class=\"n\">+50.0%</td></tr>"
        ), "{html}");
        // The zero counter is in neither table.
        assert!(!html.contains("pswpout"));
        assert!(html.contains("class=\"ok\">ok<") && html.contains("class=\"fail\">FAIL<"));
    }
}
