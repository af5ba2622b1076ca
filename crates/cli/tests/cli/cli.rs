//! The `foliosim` command line as a program sees it: the built binary run
//! with arguments, standard input and environment; its standard output,
//! standard error and exit status checked.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use foliosim_testkit::{assert_contains, assert_starts_with};

/// A 64 KiB anonymous region written once with THP off: every one of its
/// 16 pages takes one write fault (anonymous faults map one page each and
/// do no fault-around: mm/memory.c do_anonymous_page()), so `pgfault` over
/// the phase is 16.
const SMALL: &str = r#"
name = "small"

[system]
memory = "64M"
transparent_hugepage.enabled = "never"

[[step]]
op = "mmap"
region = "heap"
kind = "anon"
size = "64K"

[[step]]
op = "phase"
name = "write"

[[step]]
op = "touch"
region = "heap"
access = "write"

[[expect]]
phase = "write"
counter = "pgfault"
value = 16
"#;

/// [`SMALL`] with an expectation the kernel's rules cannot meet (16
/// faults, not 17).
fn failing() -> String {
    SMALL.replace("value = 16", "value = 17")
}

/// A scenario that sets up a mapping and measures nothing.
const NO_PHASE: &str = r#"
name = "setup-only"

[[step]]
op = "mmap"
region = "heap"
kind = "anon"
size = "64K"
"#;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_foliosim"));
    // The colour decision must not depend on the environment of the test
    // runner.
    for v in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM"] {
        c.env_remove(v);
    }
    c
}

/// Run with `args` and `stdin`.
fn run(args: &[&str], stdin: &str) -> Output {
    run_env(args, stdin, &[])
}

fn run_env(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut c = bin();
    c.args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("foliosim runs");
    let mut input = child.stdin.take().unwrap();
    // A command that does not read its input may close it first.
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A scratch directory for this test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("foliosim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

#[test]
fn csv_with_commas_and_quotes_reads_back_as_written() {
    let name = r#"odd, "quoted" name"#;
    let set = format!("name={name}");
    let o = run(
        &["run", "-", "--format", "csv", "--set", &set, "--seed", "5"],
        SMALL,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut rd = csv::Reader::from_reader(o.stdout.as_slice());
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    // The documented columns (docs/output.md), in their order.
    assert_eq!(header, foliosim_report::CSV_COLUMNS);
    let recs: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert!(recs.len() > 16, "{}", stdout(&o));
    for r in &recs {
        assert_eq!(r.len(), header.len(), "{r:?}");
        assert_eq!(&r[0], name);
        assert_eq!(&r[8], "<stdin>");
        assert_eq!(&r[9], "5");
        assert_eq!(&r[7], env!("CARGO_PKG_VERSION"));
        assert_eq!(&r[11], "");
    }
    let pgfault = recs
        .iter()
        .find(|r| &r[3] == "write" && &r[5] == "pgfault")
        .unwrap();
    assert_eq!((&pgfault[4], &pgfault[6]), ("counter", "16"));
    // The overrides column reads back as the arguments given.
    assert_eq!(&recs[0][10], r#"--set 'name=odd, "quoted" name' --seed 5"#);
}

#[test]
fn json_is_one_document_shape_for_any_number_of_scenarios() {
    let d = scratch("shape");
    let a = write(&d, "a.toml", SMALL);
    let b = write(&d, "b.toml", &SMALL.replace("\"small\"", "\"other\""));
    for files in [vec![a.as_str()], vec![a.as_str(), b.as_str()]] {
        let mut args = vec!["run", "--format", "json"];
        args.extend(&files);
        let o = run(&args, "");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v = json(&o);
        assert_eq!(v["foliosim"], env!("CARGO_PKG_VERSION"));
        let reports = v["reports"].as_array().unwrap();
        assert_eq!(reports.len(), files.len());
        for (r, f) in reports.iter().zip(&files) {
            assert_eq!(r["provenance"]["scenario_path"], *f);
            assert_eq!(r["phases"][0]["counters"]["pgfault"], 16);
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn provenance_records_every_override_in_order() {
    let o = run(
        &[
            "run",
            "-",
            "--format",
            "json",
            "--set",
            "fault_around_bytes=4096",
            "--arch",
            "arm64",
            "--seed",
            "9",
        ],
        SMALL,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = &json(&o)["reports"][0];
    assert_eq!(r["arch"], "arm64");
    let p = &r["provenance"];
    assert_eq!(p["seed"], 9);
    assert_eq!(p["kernel"], serde_json::Value::Null);
    let ov: Vec<(String, String, String)> = p["overrides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let s = |k: &str| o[k].as_str().unwrap().to_string();
            (s("option"), s("key"), s("value"))
        })
        .collect();
    let want = [
        ("--set", "fault_around_bytes", "4096"),
        ("--arch", "arch", "arm64"),
        ("--seed", "seed", "9"),
    ];
    assert_eq!(
        ov,
        want.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    );
    // The table says the same in its header.
    let t = run(&["run", "-", "--arch", "arm64", "--seed", "9"], SMALL);
    assert_contains(
        &stdout(&t),
        "  foliosim 0.1.0  file <stdin>  seed 9  --arch arm64 --seed 9\n",
    );
}

#[test]
fn stdin_scenarios_and_their_errors_name_stdin() {
    let o = run(&["run", "-"], SMALL);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("scenario small  arch x86_64  engine sim\n"));
    let bad = SMALL.replace("kind = \"anon\"", "kind = \"anonymous\"");
    let o = run(&["run", "-"], &bad);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty());
    // `kind` is on line 11 of SMALL (which starts with a newline).
    assert_starts_with(&stderr(&o), "foliosim: <stdin>:11:8: ");
    let o = run(&["run", "-", "-"], SMALL);
    assert_eq!(o.status.code(), Some(2));
    assert_contains(&stderr(&o), "only once");
}

#[test]
fn one_bad_file_in_a_batch_does_not_hide_the_others() {
    let d = scratch("batch");
    let a = write(&d, "a.toml", SMALL);
    let bad = write(
        &d,
        "bad.toml",
        "name = \"bad\"\n[system]\nmemory = \"lots\"\n",
    );
    let c = write(&d, "c.toml", &SMALL.replace("\"small\"", "\"third\""));
    let o = run(&["run", "--format", "json", &a, &bad, &c], "");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let v = json(&o);
    let names: Vec<&str> = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["small", "third"]);
    let err = stderr(&o);
    assert!(err.contains(&format!("foliosim: {bad}:3:10: ")), "{err}");
    assert!(err.contains("1 of 3 scenarios could not run"), "{err}");
    // A missing file too, and with -o the file holds the good reports.
    let out = d.join("out.csv");
    let o = run(
        &[
            "run",
            "--format",
            "csv",
            "-o",
            out.to_str().unwrap(),
            &a,
            "/nonexistent/x.toml",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/x.toml: cannot read the scenario"));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.lines().skip(1).all(|l| l.starts_with("small,")));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn exit_codes_are_the_documented_ones() {
    let help = stdout(&run(&["--help"], ""));
    assert!(help.contains("Exit status:"), "{help}");
    assert!(help.contains("NO_COLOR"), "{help}");
    assert_eq!(run(&["run", "-"], SMALL).status.code(), Some(0));
    let o = run(&["run", "-"], &failing());
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("FAIL write:pgfault = 16 (expected 17"));
    assert!(stderr(&o).contains("expectations were not met"));
    // Usage errors.
    assert_eq!(run(&["run"], "").status.code(), Some(2));
    assert_eq!(run(&["run", "-", "--bogus"], SMALL).status.code(), Some(2));
    assert_eq!(
        run(&["run", "-", "--set", "novalue"], SMALL).status.code(),
        Some(2)
    );
    assert_eq!(run(&["-q", "-v", "counters"], "").status.code(), Some(2));
}

#[test]
fn no_expect_skips_the_judgement() {
    let o = run(&["run", "-", "--no-expect", "--format", "json"], &failing());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = &json(&o)["reports"][0];
    assert_eq!(r["expectations"], serde_json::json!([]));
    assert_eq!(r["phases"][0]["counters"]["pgfault"], 16);
}

#[test]
fn a_scenario_without_a_phase_warns_unless_quiet() {
    let o = run(&["run", "-"], NO_PHASE);
    assert_eq!(o.status.code(), Some(0));
    assert_contains(&stderr(&o), "warning: <stdin>: the scenario has no phase");
    assert!(stdout(&o).starts_with("scenario setup-only"));
    let o = run(&["--quiet", "run", "-"], NO_PHASE);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stderr(&o), "");
    // Quiet keeps errors.
    let o = run(&["run", "-q", "-"], "name = 3\n");
    assert_eq!(o.status.code(), Some(2));
    assert_starts_with(&stderr(&o), "foliosim: <stdin>:1:8: ");
    // Verbose says what ran.
    let o = run(&["run", "--verbose", "-"], SMALL);
    assert_contains(
        &stderr(&o),
        "foliosim: <stdin>: scenario small on sim (x86_64): 1 phases in",
    );
}

#[test]
fn colour_only_when_allowed_and_never_with_no_color() {
    // Piped: no colour.
    let o = run(&["run", "-"], &failing());
    assert!(!o.stdout.contains(&0x1b), "{}", stdout(&o));
    // Forced (as on a terminal): the verdict is red.
    let o = run_env(&["run", "-"], &failing(), &[("CLICOLOR_FORCE", "1")]);
    assert!(
        stdout(&o).contains("\x1b[31mFAIL\x1b[0m"),
        "{:?}",
        stdout(&o)
    );
    // NO_COLOR wins over everything.
    let o = run_env(
        &["run", "-"],
        &failing(),
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert!(!o.stdout.contains(&0x1b), "{:?}", stdout(&o));
    // Never in machine formats or files.
    let o = run_env(
        &["run", "-", "--format", "csv"],
        &failing(),
        &[("CLICOLOR_FORCE", "1")],
    );
    assert!(!o.stdout.contains(&0x1b));
}

#[test]
fn completions_generate_for_every_shell() {
    let o = run(&["completions", "bash"], "");
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(s.contains("_foliosim()"), "{s}");
    assert!(s.contains("complete -F _foliosim"), "{s}");
    for sub in ["run", "native", "compare", "counters", "completions", "man"] {
        assert!(s.contains(sub), "{sub} missing");
    }
    assert!(s.contains("--no-expect") && s.contains("--format"));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = run(&["completions", shell], "");
        assert_eq!(o.status.code(), Some(0), "{shell}");
        assert!(stdout(&o).contains("no-expect"), "{shell}");
    }
    assert_eq!(run(&["completions", "tcsh"], "").status.code(), Some(2));
    // bash accepts the script.
    if Command::new("bash").arg("--version").output().is_ok() {
        let mut b = Command::new("bash")
            .args(["-n"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        b.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
        assert!(b.wait().unwrap().success());
    }
}

#[test]
fn man_renders_one_page_or_a_page_per_command() {
    let o = run(&["man"], "");
    assert_eq!(o.status.code(), Some(0));
    let page = stdout(&o);
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH foliosim 1"), "{page}");
    assert!(page.contains("Exit status:"));
    let d = scratch("man");
    let o = run(&["man", "-o", d.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for f in [
        "foliosim.1",
        "foliosim-run.1",
        "foliosim-compare.1",
        "foliosim-vm-kernel-build.1",
        "foliosim-counters.1",
    ] {
        let t = std::fs::read_to_string(d.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(t.contains(".TH"), "{f}");
    }
    let run1 = std::fs::read_to_string(d.join("foliosim-run.1")).unwrap();
    assert!(run1.contains("no\\-expect"), "{run1}");
    // man(1) itself renders it, where installed.
    if Command::new("man").arg("--version").output().is_ok() {
        let o = Command::new("man")
            .args(["-l", d.join("foliosim-run.1").to_str().unwrap()])
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("scenario"));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn counters_lists_the_registry() {
    let o = run(&["counters", "--format", "json"], "");
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    let list = v["counters"].as_array().unwrap();
    let get = |n: &str| {
        list.iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    assert_eq!(get("pgfault")["kind"], "system-wide");
    assert_eq!(get("minor-faults")["kind"], "per-process");
    assert_eq!(get("sim/set_ptes")["kind"], "model-only");
    assert_eq!(get("sim/set_ptes")["engines"], serde_json::json!(["sim"]));
    assert_eq!(get("kfunc/contpte_convert")["kind"], "kernel-function");
    assert_eq!(get("kswapd/sim/lru_gen_evict_folios")["kind"], "model-only");
    assert_eq!(
        get("kswapd/sim/lru_gen_evict_folios")["engines"],
        serde_json::json!(["sim"])
    );
    assert_eq!(get("exceptions:page_fault_user")["x86_only"], true);
    assert_eq!(get("filemap:mm_filemap_fault")["x86_only"], false);
    let t = stdout(&run(&["counters"], ""));
    assert!(t.starts_with("name "), "{t}");
    assert!(t
        .lines()
        .any(|l| l.starts_with("tlb:tlb_flush ") && l.contains(" yes ")));
    assert_eq!(
        run(&["counters", "--format", "csv"], "").status.code(),
        Some(2)
    );
}

#[test]
fn output_errors_are_tool_errors() {
    if Path::new("/dev/full").exists() {
        let o = Command::new(env!("CARGO_BIN_EXE_foliosim"))
            .args(["run", "-"])
            .stdin(Stdio::piped())
            .stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().unwrap().write_all(SMALL.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert_contains(&stderr(&o), "standard output");
    }
}
