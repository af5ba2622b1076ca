//! The scenario corpus (scenarios/corpus/*.toml): every scenario pins one
//! kernel rule with exact expected counter values, derived in the scenario's
//! comments from the kernel function it comes from.
//!
//! Each scenario is run with the invariant checker on, and every
//! `[[expect]]` must hold. A scenario whose `description` contains a line
//! `XFAIL: <reason>` documents a suspected model bug: it must *fail* (at
//! least one expectation does not hold, or the run stops with an error), so
//! that it is flagged here as soon as the model is fixed and the marker can
//! be removed.

use std::path::{Path, PathBuf};

use foliosim_sim::{run, RunOptions};

/// The corpus must not shrink below this many scenarios.
const MIN_SCENARIOS: usize = 25;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/corpus")
}

fn corpus_files() -> Vec<PathBuf> {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// The reason of an `XFAIL: <reason>` line in the description, if any.
fn xfail_reason(description: &str) -> Option<String> {
    description.lines().find_map(|l| {
        l.trim()
            .strip_prefix("XFAIL:")
            .map(|r| r.trim().to_string())
    })
}

/// How one scenario went.
enum Outcome {
    /// Ran, and every expectation held.
    Pass,
    /// Ran, and these expectations failed (one line each).
    Fail(Vec<String>),
    /// Did not run (parse error, model error).
    Error(String),
}

fn run_one(path: &Path) -> (Option<String>, Outcome) {
    let sc = match foliosim_scenario::load(path, &[]) {
        Ok(sc) => sc,
        Err(e) => return (None, Outcome::Error(format!("does not load: {e}"))),
    };
    let xfail = xfail_reason(&sc.description);
    if sc.description.trim().is_empty() {
        return (xfail, Outcome::Error("has no description".into()));
    }
    if sc.expects.is_empty() {
        return (xfail, Outcome::Error("has no [[expect]]".into()));
    }
    let report = match run(
        &sc,
        RunOptions {
            check: true,
            ..Default::default()
        },
    ) {
        Ok(r) => r,
        Err(e) => return (xfail, Outcome::Error(format!("run failed: {e}"))),
    };
    assert_eq!(
        report.expectations.len(),
        sc.expects.len(),
        "{}: every expectation is evaluated",
        path.display()
    );
    let failed: Vec<String> = report
        .expectations
        .iter()
        .filter(|e| !e.ok)
        .map(|e| {
            let actual = e
                .actual
                .map_or_else(|| "missing".to_string(), |a| a.to_string());
            format!(
                "{}: phase {:?} counter {:?}: expected {} (tolerance {}), measured {}",
                e.at, e.phase, e.counter, e.expected, e.tolerance, actual
            )
        })
        .collect();
    if failed.is_empty() {
        (xfail, Outcome::Pass)
    } else {
        (xfail, Outcome::Fail(failed))
    }
}

#[test]
fn corpus_expectations_hold() {
    let files = corpus_files();
    assert!(
        files.len() >= MIN_SCENARIOS,
        "the corpus has {} scenarios, expected at least {MIN_SCENARIOS}",
        files.len()
    );

    let mut problems = Vec::new();
    let mut xfailed = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (xfail, outcome) = run_one(path);
        match (xfail, outcome) {
            (None, Outcome::Pass) => {}
            (None, Outcome::Fail(lines)) => {
                problems.push(format!("{name}: {} expectation(s) failed:", lines.len()));
                problems.extend(lines.into_iter().map(|l| format!("    {l}")));
            }
            (None, Outcome::Error(e)) => problems.push(format!("{name}: {e}")),
            (Some(reason), Outcome::Pass) => problems.push(format!(
                "{name}: marked XFAIL ({reason}) but every expectation holds: \
                 the model was fixed, remove the XFAIL line"
            )),
            (Some(reason), Outcome::Fail(lines)) => {
                xfailed.push(format!("{name}: XFAIL ({reason}):"));
                xfailed.extend(lines.into_iter().map(|l| format!("    {l}")));
            }
            (Some(reason), Outcome::Error(e)) => {
                xfailed.push(format!("{name}: XFAIL ({reason}): {e}"));
            }
        }
    }

    if !xfailed.is_empty() {
        eprintln!("expected failures (suspected model bugs):");
        for l in &xfailed {
            eprintln!("  {l}");
        }
    }
    assert!(
        problems.is_empty(),
        "{} corpus scenarios checked; problems:\n{}",
        files.len(),
        problems.join("\n")
    );
}

#[test]
fn xfail_marker_is_parsed() {
    assert_eq!(xfail_reason("a\nb"), None);
    assert_eq!(
        xfail_reason("rule text\n  XFAIL: model counts X twice  \nmore"),
        Some("model counts X twice".to_string())
    );
    assert_eq!(xfail_reason("mentions XFAIL: inline"), None);
}
