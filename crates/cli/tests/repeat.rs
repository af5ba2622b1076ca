//! `--repeat` and the N-way `diff` of repeated runs as a user runs them.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn foliosim(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// 1 MiB of anonymous memory written after the phase begins.
fn tiny() -> String {
    foliosim_testkit::anon_measured("tiny", "256M", "1M")
}

#[test]
fn run_refuses_repeat() {
    let tmp = tempfile::tempdir().unwrap();
    foliosim_testkit::write(tmp.path(), "t.toml", &tiny());
    let out = foliosim(&["run", "--repeat", "3", "t.toml"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("deterministic"),
        "{}",
        text(&out.stderr)
    );
    let out = foliosim(&["run", "--repeat", "0", "t.toml"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
}

/// A JSON document of `values.len()` runs of the simulated report `one`,
/// run `i` with `pswpout` of the phase `measured` set to `values[i]`.
fn runs_of(one: &Value, values: &[i64]) -> String {
    let mut runs = Vec::new();
    for v in values {
        let mut r = one.clone();
        r["phases"][0]["counters"]["pswpout"] = Value::from(*v);
        runs.push(r);
    }
    serde_json::json!({"foliosim": "0", "reports": runs}).to_string()
}

/// Three inputs: base runs 1,2,3, B 4,5,6, C 2,3,4 (pswpout).
fn three_inputs(dir: &Path) {
    foliosim_testkit::write(dir, "t.toml", &tiny());
    let out = foliosim(&["run", "t.toml", "--format", "json"], dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let one = &doc["reports"][0];
    assert_eq!(one["phases"][0]["name"], "measured");
    for (f, v) in [
        ("a.json", [1, 2, 3]),
        ("b.json", [4, 5, 6]),
        ("c.json", [2, 3, 4]),
    ] {
        foliosim_testkit::write(dir, f, &runs_of(one, &v));
    }
}

#[test]
fn nway_diff_marks_significant_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    three_inputs(d);
    let args = ["diff", "a.json", "b.json", "c.json", "--label", "base"];
    let out = foliosim(&args, d);
    assert_eq!(out.status.code(), Some(2), "one label for three files");
    let args = [
        "diff", "a.json", "b.json", "c.json", "--label", "base", "--label", "B", "--label", "C",
    ];
    let out = foliosim(&args, d);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    // Base mean 2; B mean 5 (+150%), Welch p = 0.0213 (see
    // crates/report/tests/stats.rs: the same samples) < 0.05, marked; C
    // mean 3 (+50%): t = 1/sqrt(2/3) = 1.2247 at 4 degrees of freedom,
    // p = 0.29, not marked. Stddev is 1 on every side, CoeffVar 50%,
    // 20%, 33.33%.
    let line = |stat: &str| -> Vec<String> {
        t.lines()
            .find(|l| l.starts_with(stat) && l.contains("measured: pswpout"))
            .unwrap_or_else(|| panic!("no {stat} line for pswpout in\n{t}"))
            .split_whitespace()
            .skip(3)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        line("Amean").join(" "),
        "2.00 ( 0.00%) 5.00 * 150.00%* 3.00 ( 50.00%)",
        "{t}"
    );
    assert_eq!(
        line("Stddev").join(" "),
        "1.00 ( 0.00%) 1.00 ( 0.00%) 1.00 ( 0.00%)"
    );
    assert_eq!(
        line("CoeffVar").join(" "),
        "50.00 ( 0.00%) 20.00 ( -60.00%) 33.33 ( -33.33%)"
    );
    assert!(t.contains("level 0.05"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.split_whitespace().eq(["base", "B", "C"])),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.split_whitespace().eq(["n=3", "n=3", "n=3"])),
        "{t}"
    );
    // Only changed values: deterministic counters equal on every side
    // are left out.
    assert!(!t.contains("measured: pgfault"), "{t}");
    // A stricter level keeps B's change unmarked (p = 0.0213 > 0.01).
    let out = foliosim(
        &["diff", "a.json", "b.json", "c.json", "--level", "0.01"],
        d,
    );
    let t = text(&out.stdout);
    assert!(t.contains("5.00 ( 150.00%)"), "{t}");
    // Default labels are the file names.
    assert!(
        t.lines()
            .any(|l| l.split_whitespace().eq(["a.json", "b.json", "c.json"])),
        "{t}"
    );
}

#[test]
fn nway_diff_json_has_numbers_and_provenance() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    three_inputs(d);
    let out = foliosim(
        &["diff", "a.json", "b.json", "c.json", "--format", "json"],
        d,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["test"], "welch");
    assert_eq!(j["level"], 0.05);
    assert_eq!(j["inputs"].as_array().unwrap().len(), 3);
    assert_eq!(j["inputs"][1]["label"], "b.json");
    assert_eq!(j["inputs"][0]["provenance"][0]["scenario_path"], "t.toml");
    let rows = j["scenarios"][0]["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r["name"] == "pswpout").unwrap();
    let s = &row["inputs"];
    assert_eq!(s[0]["mean"], 2.0);
    assert_eq!(s[0]["n"], 3);
    assert!(
        s[0].get("p").is_none(),
        "the base is not tested against itself"
    );
    assert_eq!(s[1]["mean"], 5.0);
    assert_eq!(s[1]["change_pct"], 150.0);
    assert_eq!(s[1]["df"], 4.0);
    assert!(
        (s[1]["p"].as_f64().unwrap() - 0.021312).abs() < 2e-6,
        "{row}"
    );
    assert_eq!(s[1]["significant"], true);
    assert_eq!(s[2]["significant"], false);
    assert_eq!(
        s[2]["cov_pct"].as_f64().map(|c| (c * 100.0).round()),
        Some(3333.0)
    );
}

#[test]
fn two_report_diff_json_is_one_wrapper() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    three_inputs(d);
    // The first run of a and b each: a single run per file keeps the
    // base/patched table.
    for (f, v) in [("a1.json", 2), ("b1.json", 5)] {
        let a: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("a.json")).unwrap()).unwrap();
        let mut r = a["reports"][0].clone();
        r["phases"][0]["counters"]["pswpout"] = Value::from(v);
        let doc = serde_json::json!({"foliosim": "0", "reports": [r]});
        foliosim_testkit::write(d, f, &doc.to_string());
    }
    let out = foliosim(&["diff", "a1.json", "b1.json", "--format", "json"], d);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(j["foliosim"].is_string());
    assert_eq!(j["inputs"][1]["file"], "b1.json");
    assert_eq!(j["inputs"][0]["provenance"][0]["scenario_path"], "t.toml");
    let rows = j["rows"].as_array().unwrap();
    let r = rows.iter().find(|r| r["name"] == "pswpout").unwrap();
    // 2 → 5: change +3, +150%.
    assert_eq!(
        (&r["base"], &r["patched"]),
        (&Value::from(2), &Value::from(5))
    );
    assert_eq!(r["change"], 3);
    assert_eq!(r["pct_change"], 150.0);
}

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

/// Three native runs of a 1 MiB write with THP off: the workload's minor
/// faults are the same every run (one per 4 KiB page: 256), so their
/// standard deviation is 0.
#[test]
fn native_repeat_reports_every_run_and_their_statistics() {
    if !is_root() {
        eprintln!("SKIPPED native_repeat_reports_every_run_and_their_statistics: needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let scenario = foliosim_testkit::anon_measured("tiny", "256M", "1M").replace(
        "[system]\n",
        "[system]\ntransparent_hugepage.enabled = \"never\"\n",
    );
    foliosim_testkit::write(d, "t.toml", &scenario);
    let args = [
        "native",
        "--repeat",
        "3",
        "--no-trace",
        "t.toml",
        "--format",
        "json",
    ];
    let out = foliosim(&args, d);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["reports"].as_array().unwrap().len(), 3);
    assert_eq!(j["repeat"]["runs"], 3);
    let sc = &j["repeat"]["scenarios"][0];
    assert_eq!(sc["runs"], 3);
    let faults = &sc["phases"][0]["counters"]["minor-faults"];
    assert_eq!(faults["n"], 3, "{sc}");
    assert_eq!(faults["stddev"], 0.0, "{faults}");
    assert_eq!(faults["mean"], 256.0, "{faults}");
    // The text table: mean ± stddev per counter.
    let args = ["native", "--repeat", "2", "--no-trace", "t.toml"];
    let out = foliosim(&args, d);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("runs 2"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.contains("measured: minor-faults") && l.contains("256 ± 0")),
        "{t}"
    );
}
