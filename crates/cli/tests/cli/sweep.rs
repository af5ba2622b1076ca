//! `foliosim sweep`, `diff`, `run --ab` and `--repeat` as a user runs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn foliosim(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// [`foliosim`] that must succeed.
fn ok(args: &[&str], dir: &Path) -> Output {
    let out = foliosim(args, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// MADV_PAGEOUT of `size` of anonymous memory to a block swap device.
fn pageout(size: &str) -> String {
    use foliosim_testkit::{anon_written, madvise, name, phase, swap, system_mem};
    [
        name("pageout-4m"),
        system_mem("256M", ""),
        swap("block", "64M"),
        anon_written("buf", size),
        phase("measured"),
        madvise("buf", "pageout", ""),
    ]
    .concat()
}

/// A scratch directory holding `pageout.toml`: [`pageout`] of 4 MiB.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let s = foliosim_testkit::write(tmp.path(), "pageout.toml", &pageout("4M"));
    (tmp, s)
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn errors_leave_no_file() {
    let (tmp, _) = setup();
    let d = tmp.path();
    for args in [
        // An unknown key, named with its --grid argument.
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            "fault_around_byts=4K,8K",
            "-o",
            "out.csv",
        ][..],
        // An empty grid.
        &["sweep", "pageout.toml", "-o", "out.csv"],
        // Too many points without --yes.
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            "seed=[0..10000]",
            "-o",
            "out.csv",
        ],
        // A folder that does not exist.
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            "seed=1,2",
            "-o",
            "no/out.csv",
        ],
    ] {
        let out = foliosim(args, d);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(files(d), ["pageout.toml"], "{args:?}");
    }
    let out = foliosim(
        &["sweep", "pageout.toml", "--grid", "fault_around_byts=4K,8K"],
        d,
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("--grid fault_around_byts=4K,8K") && err.contains("unknown key"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // An existing table is left as it was when a sweep is refused.
    std::fs::write(d.join("old.csv"), "keep\n").unwrap();
    let out = foliosim(
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            "seed=[5..1]",
            "-o",
            "old.csv",
        ],
        d,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(d.join("old.csv")).unwrap(),
        "keep\n"
    );
    assert_eq!(files(d), ["old.csv", "pageout.toml"]);
}

#[test]
fn rerun_appends_only_new_points() {
    let (tmp, _) = setup();
    let d = tmp.path();
    let g = "series.batch_anon_unmap=0,1";
    let out = ok(
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            g,
            "--grid",
            "arch=x86_64",
            "-o",
            "t.csv",
        ],
        d,
    );
    // Not a terminal: no progress bar, only the summary line.
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("2 points"), "{err}");
    let first = std::fs::read_to_string(d.join("t.csv")).unwrap();
    let out = ok(
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            g,
            "--grid",
            "arch=x86_64,arm64",
            "-o",
            "t.csv",
        ],
        d,
    );
    assert!(
        text(&out.stderr).contains("2 points already in t.csv, 2 to run"),
        "{}",
        text(&out.stderr)
    );
    let second = std::fs::read_to_string(d.join("t.csv")).unwrap();
    // The first run's rows are kept byte for byte; the arm64 points follow.
    assert!(second.starts_with(&first));
    let points: std::collections::BTreeSet<(String, String)> = second
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[3].to_string())
        })
        .collect();
    let want: std::collections::BTreeSet<(String, String)> = [
        ("0", "x86_64"),
        ("1", "x86_64"),
        ("2", "arm64"),
        ("3", "arm64"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(points, want);
    // A third run has nothing to do and leaves the file as it is.
    let out = foliosim(
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            g,
            "--grid",
            "arch=x86_64,arm64",
            "-o",
            "t.csv",
            "-q",
        ],
        d,
    );
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(d.join("t.csv")).unwrap(), second);
    // Another grid does not mix into the file.
    let out = foliosim(
        &["sweep", "pageout.toml", "--grid", "seed=1,2", "-o", "t.csv"],
        d,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("another file"),
        "{}",
        text(&out.stderr)
    );
}

/// Every line of the diff text that starts with `name`, split on blanks.
fn diff_line(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn ab_and_diff_agree_on_the_batching_series() {
    // 4 MiB of 64 KiB folios: vanilla try_to_unmap_one() walks one PTE per
    // page_vma_mapped_walk() iteration, 4 MiB / 4 KiB = 1024 of them; with
    // batch_anon_unmap one iteration unmaps a whole folio, 4 MiB / 64 KiB
    // = 64. Change 64 − 1024 = −960, −93.75 %. The swap-outs are the same
    // (1024 pages, pswpout) either way, so they are not listed.
    let (tmp, _) = setup();
    let d = tmp.path();
    let thp = "transparent_hugepage.hugepages-64kB.enabled=always";
    let out = ok(
        &[
            "run",
            "pageout.toml",
            "--set",
            thp,
            "--ab",
            "series.batch_anon_unmap",
        ],
        d,
    );
    let ab = text(&out.stdout);
    assert!(
        ab.starts_with("series.batch_anon_unmap=0 (base) vs series.batch_anon_unmap=1 (patched)"),
        "{ab}"
    );
    assert_eq!(
        diff_line(&ab, "sim/pvmw_iterations"),
        ["sim/pvmw_iterations", "1024", "64", "-960", "-93.75%"]
    );
    assert!(!ab.contains("pswpout"), "{ab}");
    // The same from two JSON reports.
    for (sw, f) in [("0", "a.json"), ("1", "b.json")] {
        let set = format!("series.batch_anon_unmap={sw}");
        ok(
            &[
                "run",
                "pageout.toml",
                "--set",
                thp,
                "--set",
                &set,
                "--format",
                "json",
                "-o",
                f,
            ],
            d,
        );
    }
    let out = ok(&["diff", "a.json", "b.json"], d);
    let two = text(&out.stdout);
    assert_eq!(
        diff_line(&two, "sim/pvmw_iterations"),
        diff_line(&ab, "sim/pvmw_iterations")
    );
    assert_eq!(
        diff_line(&two, "modelled_ns"),
        diff_line(&ab, "modelled_ns")
    );
    // pswpout is there with --all: 1024 pages on both sides.
    let out = foliosim(&["diff", "a.json", "b.json", "--all"], d);
    assert_eq!(
        diff_line(&text(&out.stdout), "pswpout"),
        ["pswpout", "1024", "1024", "0", "+0.00%"]
    );
    // A non-switch key needs its two values.
    let out = foliosim(&["run", "pageout.toml", "--ab", "fault_around_bytes"], d);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--ab fault_around_bytes=BASE,PATCHED"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn diff_of_a_sweep_by_key_per_arch() {
    let (tmp, _) = setup();
    let d = tmp.path();
    ok(
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            "arch=x86_64,arm64",
            "--grid",
            "series.batch_anon_unmap=0,1",
            "--grid",
            "folio_size=4K,64K",
            "-o",
            "t.arrow",
            "-q",
        ],
        d,
    );
    let out = ok(&["diff", "t.arrow", "--by", "series.batch_anon_unmap"], d);
    let t = text(&out.stdout);
    // Column groups per arch, blocks per folio size.
    let head = t.lines().find(|l| l.contains("x86_64")).unwrap();
    assert!(head.trim_end().ends_with("arm64"), "{t}");
    let b64 = t.split("folio_size=64K").nth(1).expect("a 64K block");
    // 64 KiB folios: 1024 → 64 iterations on both architectures.
    assert_eq!(
        diff_line(b64, "sim/pvmw_iterations"),
        [
            "sim/pvmw_iterations",
            "1024",
            "64",
            "-960",
            "-93.75%",
            "1024",
            "64",
            "-960",
            "-93.75%"
        ]
    );
    // 4 KiB folios: a folio is one page, nothing to batch.
    let b4 = t
        .split("folio_size=4K")
        .nth(1)
        .unwrap()
        .split("folio_size=64K")
        .next()
        .unwrap();
    assert!(!b4.contains("pvmw_iterations"), "{b4}");
    let md = foliosim(
        &[
            "diff",
            "t.arrow",
            "--by",
            "series.batch_anon_unmap",
            "--format",
            "md",
        ],
        d,
    );
    assert!(text(&md.stdout).contains("| counter | x86_64 base |"));
}

#[test]
fn an_interrupted_sweep_keeps_its_checkpoint_and_resumes() {
    // 400 points of 32 MiB written and paged out (MADV_PAGEOUT writes
    // every 4 KiB page to swap: 8,192 pswpout a point), one at a time,
    // the table written after every point. SIGTERM follows the first
    // table (not SIGINT, which a shell's background job, and so the sweep
    // it starts, ignores); 400 points keep the sweep from ending first
    // even when this test waits a while for a CPU.
    const N: usize = 400;
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    foliosim_testkit::write(d, "anon.toml", &pageout("32M"));
    let args = [
        "sweep",
        "anon.toml",
        "--grid",
        "seed=[1..400]",
        "-o",
        "t.jsonl",
        "--jobs",
        "1",
        "-q",
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .args(["--checkpoint", "0"])
        .current_dir(d)
        .spawn()
        .unwrap();
    let t = d.join("t.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !t.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    // SIGTERM after the first checkpoint: the points run so far are
    // saved and the sweep exits 130.
    assert_eq!(
        status.code(),
        Some(130),
        "the sweep ended before SIGTERM: {status:?}"
    );
    // What is there is a whole table of whole points, and nothing else.
    assert_eq!(files(d), ["anon.toml", "t.jsonl"]);
    let part = foliosim_explore::Table::read(&t, foliosim_explore::TableFormat::Jsonl).unwrap();
    let kept: std::collections::BTreeSet<u64> = part.rows.iter().map(|r| r.point).collect();
    assert!(
        !kept.is_empty() && kept.len() < N,
        "{} points kept",
        kept.len()
    );
    for p in &kept {
        // Every kept point has its pswpout row: 32 MiB / 4 KiB = 8,192.
        assert!(part
            .rows
            .iter()
            .any(|r| r.point == *p && r.name == "pswpout" && r.value == Some(8192)));
    }
    // The re-run runs the rest only.
    let out = ok(&args[..args.len() - 1], d);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{} points already in t.jsonl, {} to run",
            kept.len(),
            N - kept.len()
        )),
        "{err}"
    );
    let all = foliosim_explore::Table::read(&t, foliosim_explore::TableFormat::Jsonl).unwrap();
    let seeds: std::collections::BTreeSet<&str> =
        all.rows.iter().map(|r| r.grid[0].as_str()).collect();
    let ids: std::collections::BTreeSet<u64> = all.rows.iter().map(|r| r.point).collect();
    assert_eq!((seeds.len(), ids.len()), (N, N));
}

/// A sweep of `n` points of [`pageout`] of 4 MiB to `out` on `jobs`
/// workers, a checkpoint after every point.
fn slow_sweep(d: &Path, n: usize, jobs: u32, out: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_foliosim"));
    c.args(["sweep", "pageout.toml", "--grid"])
        .arg(format!("seed=[1..{n}]"))
        .args(["-o", out, "--jobs", &jobs.to_string()])
        .args(["-q", "--checkpoint", "0"])
        .current_dir(d);
    c
}

#[test]
fn a_second_sweep_to_the_same_file_is_refused() {
    const N: usize = 100;
    let (tmp, _) = setup();
    let d = tmp.path();
    let mut first = slow_sweep(d, N, 1, "t.jsonl").spawn().unwrap();
    // The lock file names the first sweep once it holds the lock.
    let lock = d.join(".t.jsonl.foliosim-lock");
    let pid = first.id().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&lock).map_or(true, |s| s.trim() != pid) {
        assert!(std::time::Instant::now() < deadline, "no lock file");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let second = slow_sweep(d, N, 1, "t.jsonl").output().unwrap();
    let done = first.try_wait().unwrap();
    assert!(done.is_none(), "the first sweep ended too soon: {done:?}");
    assert_eq!(second.status.code(), Some(2));
    let err = text(&second.stderr);
    assert!(
        err.contains(&format!(
            "another sweep (process {pid}) is writing this table"
        )),
        "{err}"
    );
    assert!(first.wait().unwrap().success());
    // Every point of the first sweep is there, and nothing else.
    let t = foliosim_explore::Table::read(&d.join("t.jsonl"), foliosim_explore::TableFormat::Jsonl)
        .unwrap();
    let ids: std::collections::BTreeSet<u64> = t.rows.iter().map(|r| r.point).collect();
    assert_eq!(ids.len(), N);
    assert_eq!(files(d), ["pageout.toml", "t.jsonl"]);
}

#[test]
fn no_signal_leaves_a_temporary_file() {
    use std::os::unix::process::ExitStatusExt as _;
    // 100 signals, SIGINT and SIGTERM in turn, each at a moment drawn
    // from the run time of a whole sweep (a fixed-seed xorshift, so a
    // failure can be replayed), to sweeps of 12 points on 2 workers with
    // a checkpoint after every point: most land while a table is written
    // or about to be. After each, only the scenario and whole tables may
    // be there.
    let (tmp, _) = setup();
    let d = tmp.path();
    let start = std::time::Instant::now();
    assert!(slow_sweep(d, 12, 2, "t.csv").status().unwrap().success());
    let whole_us = start.elapsed().as_micros() as u64 + 1;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let (mut killed, mut finished) = (0, 0);
    for i in 0..100 {
        let _ = std::fs::remove_file(d.join("t.csv"));
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Every third lands in the first 4 ms, while the table's folder
        // is probed and its lock file made.
        let span = if i % 3 == 0 {
            whole_us.min(4000)
        } else {
            whole_us
        };
        let wait = std::time::Duration::from_micros(x % span);
        let sig = if i % 2 == 0 { "-INT" } else { "-TERM" };
        let mut child = slow_sweep(d, 12, 2, "t.csv").spawn().unwrap();
        std::thread::sleep(wait);
        let _ = Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status();
        let status = child.wait().unwrap();
        // Before the sweep handles signals the default action ends it;
        // after, it saves the points run so far and exits 130.
        match (status.signal(), status.code()) {
            (Some(2 | 15), _) | (None, Some(130)) => killed += 1,
            (None, Some(0)) => finished += 1,
            _ => panic!("signal {i} ({sig} after {wait:?}): {status:?}"),
        }
        let left = files(d);
        assert!(
            left == ["pageout.toml"] || left == ["pageout.toml", "t.csv"],
            "signal {i} ({sig} after {wait:?}) left {left:?}"
        );
        if left.len() == 2 {
            foliosim_explore::Table::read(&d.join("t.csv"), foliosim_explore::TableFormat::Csv)
                .unwrap();
        }
    }
    // The moments are drawn from one sweep's time; on a loaded machine
    // sweeps take longer and fewer finish before their signal.
    assert!(killed >= 25, "{killed} sweeps killed, {finished} finished");
}

// `--repeat` and the N-way `diff` of repeated runs.

/// 1 MiB of anonymous memory written after the phase begins.
fn tiny() -> String {
    foliosim_testkit::anon_measured("tiny", "256M", "1M")
}

/// [`tiny`] with THP off: one fault per 4 KiB page.
fn tiny_thp_never() -> String {
    tiny().replace(
        "[system]\n",
        "[system]\ntransparent_hugepage.enabled = \"never\"\n",
    )
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

/// Three native runs of a 1 MiB write with THP off: the workload's minor
/// faults are the same every run (one per 4 KiB page: 256), so their
/// standard deviation is 0.
#[test]
fn native_repeat_reports_every_run_and_their_statistics() {
    if !foliosim_testkit::is_root() {
        eprintln!("SKIPPED native_repeat_reports_every_run_and_their_statistics: needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    foliosim_testkit::write(d, "t.toml", &tiny_thp_never());
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

/// `sweep --repeat N` runs every point N times, numbered in a `repeat`
/// column; the simulator refuses it. Two native tables of a 1 MiB write,
/// 64 KiB mTHP off and on, 3 runs each, compared by `diff`: off, one
/// fault per 4 KiB page (256) every run; on, a fault per 64 KiB block
/// that lies inside the unaligned 1 MiB mapping (15 or 16) and one per
/// page of the partial blocks at its ends (0 or 16 pages together), so
/// 16 to 31 faults. The change is significant: Welch's t-test of 256,
/// 256, 256 against values at most 31.
#[test]
fn a_repeated_sweep_and_a_diff_of_two_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    foliosim_testkit::write(d, "t.toml", &tiny_thp_never());
    let out = foliosim(&["sweep", "t.toml", "--repeat", "3"], d);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--repeat 3: the simulator is deterministic"));
    if !foliosim_testkit::is_root() {
        eprintln!("SKIPPED a_repeated_sweep_and_a_diff_of_two_tables: needs root");
        return;
    }
    for (file, mode) in [("off.csv", "never"), ("on.csv", "always")] {
        let set = format!("transparent_hugepage.hugepages-64kB.enabled={mode}");
        let args = [
            "sweep",
            "--engine",
            "native",
            "--no-trace",
            "t.toml",
            "--set",
            &set,
            "--repeat",
            "3",
            "-o",
            file,
            "-q",
        ];
        let out = foliosim(&args, d);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let off = foliosim_explore::Table::load(&d.join("off.csv")).unwrap();
    assert_eq!(off.grid_columns, ["repeat"]);
    let faults: Vec<(String, i128)> = off
        .rows
        .iter()
        .filter(|r| r.name == "minor-faults")
        .map(|r| (r.grid[0].clone(), r.value.unwrap()))
        .collect();
    let want: Vec<(String, i128)> = (1..=3).map(|i| (i.to_string(), 256)).collect();
    assert_eq!(faults, want);
    let args = [
        "diff", "off.csv", "on.csv", "--label", "off", "--label", "on", "--format", "json",
    ];
    let out = foliosim(&args, d);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = j["scenarios"][0]["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r["name"] == "minor-faults").unwrap();
    let (a, b) = (&row["inputs"][0], &row["inputs"][1]);
    assert_eq!(
        (a["n"].as_u64(), a["mean"].as_f64()),
        (Some(3), Some(256.0)),
        "{row}"
    );
    let mean = b["mean"].as_f64().unwrap();
    assert!(b["n"] == 3 && (16.0..=31.0).contains(&mean), "{row}");
    assert_eq!(b["significant"], true, "{row}");
    // The text table marks it.
    let out = foliosim(&["diff", "off.csv", "on.csv", "--only", "minor-faults"], d);
    let t = text(&out.stdout);
    assert!(t.contains("n=3") && t.contains("Amean"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("Amean") && l.ends_with('*')),
        "{t}"
    );
}

#[test]
fn an_interrupt_saves_the_finished_points() {
    // SIGINT and SIGTERM with the default --checkpoint (30 s, so no
    // checkpoint is written before the signal): the points run so far are
    // written, the sweep says how many, exits 130, and a second run
    // continues from them. Each point pages out 64 MiB, so the 3,000
    // points take far longer than the seconds before the signal.
    const N: usize = 3000;
    let (tmp, _) = setup();
    let d = tmp.path();
    foliosim_testkit::write(d, "pageout.toml", &pageout("64M"));
    let sweep = || {
        // As from an interactive shell: a background job of a script (CI
        // started that way) inherits SIGINT ignored, and the sweep rightly
        // keeps ignoring it; `env` (coreutils) restores the default.
        let mut c = Command::new("env");
        c.args(["--default-signal=INT,TERM", env!("CARGO_BIN_EXE_foliosim")]);
        c.args(["sweep", "pageout.toml", "--grid"])
            .arg(format!("seed=[1..{N}]"))
            .args(["-o", "t.csv", "--jobs", "1", "-q"])
            .current_dir(d)
            .stderr(std::process::Stdio::piped());
        c
    };
    let mut saved = 0;
    // The second run starts from the first's points and adds to them.
    for sig in ["-INT", "-TERM"] {
        let child = sweep().spawn().unwrap();
        // Once the sweep holds the table's lock it handles signals; a
        // few points later it is interrupted.
        let lock = d.join(".t.csv.foliosim-lock");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !lock.exists() {
            assert!(std::time::Instant::now() < deadline, "no lock file");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_secs(3));
        let _ = Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{sig}: {err}");
        let t = foliosim_explore::Table::read(&d.join("t.csv"), foliosim_explore::TableFormat::Csv)
            .unwrap();
        let ids: std::collections::BTreeSet<u64> = t.rows.iter().map(|r| r.point).collect();
        assert!(
            ids.len() > saved && ids.len() < N,
            "{sig}: {} points",
            ids.len()
        );
        assert!(
            err.contains(&format!(
                "{} of {N} saved in t.csv; run again to continue",
                ids.len()
            )),
            "{sig}: {err}"
        );
        saved = ids.len();
        assert_eq!(files(d), ["pageout.toml", "t.csv"]);
    }
}

#[test]
fn parquet_tables_and_unknown_extensions() {
    use arrow_array::{Array as _, Int64Array, StringArray, UInt64Array};
    let (tmp, _) = setup();
    let d = tmp.path();
    let args = [
        "sweep",
        "pageout.toml",
        "--grid",
        "seed=7,9",
        "--grid",
        "folio_size=4K,64K",
        "-q",
        "-o",
    ];
    ok(&[&args[..], &["t.parquet"]].concat(), d);
    // Read with the parquet crate: the grid's numbers are numbers.
    let f = std::fs::File::open(d.join("t.parquet")).unwrap();
    let batches: Vec<_> = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let b = &batches[0];
    let col = |n: &str| b.column(b.schema().index_of(n).unwrap()).clone();
    let seed = col("seed");
    let seed = seed
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("seed is Int64");
    assert!(seed.values().iter().all(|s| [7, 9].contains(s)));
    let size = col("folio_size");
    let size = size
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("folio_size is Utf8");
    assert_eq!(size.value(0), "4K");
    assert!(col("point")
        .as_any()
        .downcast_ref::<UInt64Array>()
        .is_some());
    let value = col("value");
    let value = value
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("value is Int64");
    let name = col("name");
    let name = name.as_any().downcast_ref::<StringArray>().unwrap();
    // MADV_PAGEOUT of 4 MiB of written anonymous memory writes every
    // page to swap: 1024 pages.
    let pswpout = (0..b.num_rows())
        .find(|&i| name.value(i) == "pswpout")
        .map(|i| value.value(i));
    assert_eq!(pswpout, Some(1024));
    assert_eq!(col("error").null_count(), b.num_rows());
    // pandas reads it as well, where it is installed.
    let pandas = Command::new("python3")
        .args(["-c", "import pandas, pyarrow"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if pandas {
        let script = "import pandas as pd; df = pd.read_parquet('t.parquet'); \
                      assert str(df['seed'].dtype) == 'int64'; \
                      assert set(df['seed']) == {7, 9}";
        let st = Command::new("python3")
            .args(["-c", script])
            .current_dir(d)
            .status();
        assert!(st.unwrap().success());
    }
    // A second run resumes from the Parquet file.
    let out = ok(
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            "seed=7,9",
            "--grid",
            "folio_size=4K,64K",
            "-o",
            "t.parquet",
        ],
        d,
    );
    assert!(text(&out.stderr).contains("4 points already in t.parquet, 0 to run"));
    // Other extensions are refused, naming the supported ones.
    for bad in ["t.tsv", "t.xlsx"] {
        let out = foliosim(&[&args[..], &[bad]].concat(), d);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("-o {bad}: no table format has the extension"))
                && err.contains(".csv, .jsonl, .ndjson, .arrow, .feather, .ipc, .parquet"),
            "{err}"
        );
    }
    assert_eq!(files(d), ["pageout.toml", "t.parquet"]);
}

#[test]
fn unknown_names_suggest_the_closest_known_ones() {
    let (tmp, _) = setup();
    let d = tmp.path();
    // A misspelled counter in [[expect]] fails when the scenario loads,
    // naming the file, the line of the table and the counter.
    let bad =
        pageout("4M") + "[[expect]]\nphase = \"measured\"\ncounter = \"pgfualt\"\nvalue = 0\n";
    let line = bad.lines().position(|l| l == "[[expect]]").unwrap() + 1;
    foliosim_testkit::write(d, "bad.toml", &bad);
    ok(
        &[
            "sweep",
            "pageout.toml",
            "--grid",
            "series.batch_anon_unmap=0,1",
            "-q",
            "-o",
            "t.csv",
        ],
        d,
    );
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "pageout.toml", "--set", "fault_around_byte=4096"],
            "did you mean fault_around_bytes?",
        ),
        (
            &[
                "sweep",
                "pageout.toml",
                "--grid",
                "fault_around_byte=4096,8192",
            ],
            "did you mean fault_around_bytes?",
        ),
        (
            &["run", "pageout.toml", "--set", "series.batch_anon_umap=1"],
            "did you mean series.batch_anon_unmap",
        ),
        (&["run", "bad.toml"], "did you mean pgfault?"),
        (
            &[
                "diff",
                "t.csv",
                "--by",
                "series.batch_anon_unmap",
                "--only",
                "modeled_ns",
            ],
            "did you mean modelled_ns?",
        ),
        (
            &[
                "plot",
                "t.csv",
                "--y",
                "pgfualt",
                "--x",
                "series.batch_anon_unmap",
                "-o",
                "p.svg",
            ],
            "did you mean pgfault?",
        ),
    ];
    for (args, want) in cases {
        let out = foliosim(args, d);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let err = text(&foliosim(&["run", "bad.toml"], d).stderr);
    assert!(
        err.contains(&format!("bad.toml:{}", line + 2))
            && err.contains("unknown counter \"pgfualt\""),
        "{err}"
    );
    // --by and --columns name the closest columns.
    let out = foliosim(&["diff", "t.csv", "--by", "series.batch_anon_umap"], d);
    assert!(
        text(&out.stderr).contains("did you mean series.batch_anon_unmap"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(files(d), ["bad.toml", "pageout.toml", "t.csv"]);
}

/// The table's provenance cells (the `provenance.*` columns) of its first
/// row, by column name.
fn csv_provenance(table: &str) -> std::collections::BTreeMap<String, String> {
    let mut rd = csv::Reader::from_reader(table.as_bytes());
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let row = rd.records().next().unwrap().unwrap();
    header
        .into_iter()
        .zip(row.iter().map(String::from))
        .filter(|(k, _)| k.starts_with("provenance."))
        .collect()
}

#[test]
fn a_resumed_sweep_refuses_points_of_another_provenance() {
    let (tmp, _) = setup();
    let d = tmp.path();
    let sweep = |extra: &[&str]| {
        let args = [
            "sweep",
            "pageout.toml",
            "--grid",
            "series.batch_anon_unmap=0,1",
            "-o",
            "t.csv",
        ];
        foliosim(&[&args[..], extra].concat(), d)
    };
    let out = sweep(&["--set", "memory=2G", "--seed", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = std::fs::read_to_string(d.join("t.csv")).unwrap();
    let p = csv_provenance(&first);
    // The commit `foliosim --version` names, which is the checkout's
    // HEAD when the tests run from one.
    let version = text(&ok(&["--version"], d).stdout);
    let commit = version
        .trim()
        .rsplit_once('(')
        .unwrap()
        .1
        .trim_end_matches(')');
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| text(&o.stdout).trim().to_string());
    assert_eq!(commit, head.as_deref().unwrap_or("unknown"), "{version}");
    assert_eq!(p["provenance.commit"], commit);
    assert_eq!(p["provenance.scenarios"], "pageout.toml");
    assert_eq!(p["provenance.overrides"], "--set 'memory=2G' --seed 3");
    assert_eq!(p["provenance.seed"], "3");
    assert_eq!(p["provenance.kernel"], "", "the simulator runs no kernel");
    // Another --set: refused with status 2, saying what differs; the
    // table is untouched.
    let out = sweep(&["--set", "memory=1G", "--seed", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        "foliosim: t.csv: its 2 points ran with --set memory=2G; this sweep has --set \
         memory=1G: use another -o, or delete t.csv to run them again"
    );
    assert_eq!(std::fs::read_to_string(d.join("t.csv")).unwrap(), first);
    // No --seed, and a cost profile.
    let out = sweep(&["--set", "memory=2G", "--profile", "x86_64-prior"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "its 2 points ran with the default cost profile, --seed 3; this sweep has \
             --profile x86_64-prior, no --seed"
        ),
        "{err}"
    );
    // The same provenance resumes as before.
    let out = sweep(&["--set", "memory=2G", "--seed", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("2 points already in t.csv, 0 to run"));
    assert_eq!(std::fs::read_to_string(d.join("t.csv")).unwrap(), first);
    // A table without provenance (an older foliosim's) still reads, but
    // its points are not mixed with known ones.
    let old: String = first
        .lines()
        .map(|l| {
            let mut rd = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(l.as_bytes());
            let rec = rd.records().next().unwrap().unwrap();
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(rec.iter().take(10)).unwrap();
            String::from_utf8(w.into_inner().unwrap()).unwrap()
        })
        .collect();
    std::fs::write(d.join("t.csv"), &old).unwrap();
    let out = sweep(&["--set", "memory=2G", "--seed", "3"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("t.csv: its 2 points ran with an unknown provenance"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(d.join("t.csv")).unwrap(), old);
    // `diff --by` reads both kinds of table.
    ok(&["diff", "t.csv", "--by", "series.batch_anon_unmap"], d);
}
