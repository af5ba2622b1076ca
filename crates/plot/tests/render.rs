//! The HTML report of real simulated runs, opened in headless Chromium:
//! it must render (a screenshot with many colours, every inline SVG in
//! the DOM) without console errors or resource loads. Skips, saying so,
//! when Chromium is missing (tools/setup-report.sh installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use foliosim_plot::html::{page, Inputs, Options};
use foliosim_plot::sweep::Sweep;
use foliosim_report::Report;

/// The report's example scenario (docs/report/pageout-64k.toml, as
/// `foliosim plot`'s tests run it): 16 MiB of anon memory written (64 KiB
/// mTHP on arm64: contpte), then paged out to a block device, with a
/// folio map after each phase; `sets` override more keys.
fn run(sets: &[(&str, &str)]) -> Report {
    let (path, text) = foliosim_testkit::repo_file("docs/report/pageout-64k.toml");
    let example = [
        ("system.arch", "arm64"),
        ("transparent_hugepage.hugepages-64kB.enabled", "always"),
        ("step.1.size", "16M"),
    ];
    let sets: Vec<(String, String)> = example
        .iter()
        .chain(sets)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let sc = foliosim_scenario::parse_str(&path.to_string_lossy(), &text, &sets).expect("parses");
    foliosim_sim::run(&sc, Default::default()).expect("runs")
}

/// A sweep table of `size` × `series.batch_anon_unmap`, from the reports'
/// tidy rows, as `foliosim sweep` writes it.
fn sweep() -> Sweep {
    let mut csv = String::from(
        "point,step.1.size,series.batch_anon_unmap,scenario,arch,engine,phase,kind,name,value,error\n",
    );
    let mut point = 0;
    for size in ["4M", "8M", "16M"] {
        for batch in ["0", "1"] {
            let r = run(&[("step.1.size", size), ("series.batch_anon_unmap", batch)]);
            for row in r.tidy_rows() {
                csv += &format!(
                    "{point},{size},{batch},{},{},{},{},{},{},{},\n",
                    r.scenario,
                    r.arch,
                    r.engine,
                    row.phase,
                    row.kind.as_str(),
                    row.name,
                    row.value
                );
            }
            point += 1;
        }
    }
    Sweep::parse("sweep.csv", &csv).expect("a valid sweep")
}

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("FOLIOSIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Run Chromium headless on `url` with `args`; (stdout, stderr).
fn headless(bin: &Path, profile: &Path, args: &[String], url: &str) -> (String, String) {
    let out = Command::new("timeout")
        .arg("120")
        .arg(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("runs chromium");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Lines of Chromium's log about the page: console messages (script
/// errors) and failed resource loads.
fn page_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("CONSOLE") || l.contains("Failed to load resource") || l.contains("net::ERR")
        })
        .collect()
}

#[test]
fn report_renders_in_chromium() {
    let base = run(&[]);
    let patched = run(&[("series.batch_anon_unmap", "1")]);
    let inputs = Inputs {
        reports: vec![("base.json".into(), base), ("patched.json".into(), patched)],
        sweeps: vec![("sweep.csv".into(), sweep())],
        ..Default::default()
    };
    let (html, notes) = page(&inputs, &Options::default()).expect("a page");
    // Only values 0 at every point are noted (and not drawn): among them
    // pswpout while faulting, which writes nothing to swap.
    assert!(
        notes
            .iter()
            .all(|n| n.contains(" is 0 at every point of phase ")),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"sweep.csv: pswpout is 0 at every point of phase fault: not drawn".into())
    );
    // Two reports × two phases of folio maps, and sweep plots.
    let svgs = html.matches("<svg").count();
    assert!(svgs >= 4 + 2, "{svgs} pictures");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    std::fs::write(&file, &html).unwrap();

    let Some(bin) = chromium() else {
        eprintln!(
            "SKIP report_renders_in_chromium: no chromium on PATH (tools/setup-report.sh \
             installs it; FOLIOSIM_CHROMIUM names another binary)"
        );
        return;
    };
    let url = format!("file://{}", file.display());
    let shot = dir.path().join("shot.png");
    let (_, log) = headless(
        &bin,
        &dir.path().join("profile"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,3000".into(),
        ],
        &url,
    );
    assert_eq!(page_errors(&log), Vec::<&str>::new(), "console errors");
    let img = image::open(&shot).expect("a PNG screenshot").to_rgb8();
    assert_eq!(img.dimensions(), (1280, 3000));
    let mut colours = std::collections::HashSet::new();
    let mut ink = 0u64;
    for p in img.pixels() {
        colours.insert(p.0);
        if p.0 != [255, 255, 255] {
            ink += 1;
        }
    }
    // Text, tables and the folio-map palette: a blank or failed page has
    // one or two colours.
    assert!(colours.len() > 100, "{} colours", colours.len());
    let share = ink as f64 / (1280.0 * 3000.0);
    assert!(
        share > 0.02,
        "only {:.2}% of the page is not white",
        share * 100.0
    );

    // The DOM after loading holds every picture and table.
    let (dom, log) = headless(
        &bin,
        &dir.path().join("profile"),
        &["--dump-dom".into()],
        &url,
    );
    assert_eq!(page_errors(&log), Vec::<&str>::new(), "console errors");
    assert_eq!(dom.matches("<svg").count(), svgs);
    assert!(dom.contains("<h2>Difference</h2>"));
}
