//! `foliosim calibrate --engine vm`: the corpus timed in a guest kernel.
//! Needs QEMU (`qemu-system-x86_64`), the 6.18.35 x86_64 guest kernel
//! (`FOLIOSIM_KERNELS`, see tools/setup-vm.sh) and the Rust target
//! x86_64-unknown-linux-musl; skips, saying which is missing, otherwise.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn foliosim(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("foliosim runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Why this machine cannot boot the 6.18.35 x86_64 guest, if it cannot.
fn no_guest(dir: &Path) -> Option<String> {
    let found = |cmd: &str, args: &[&str], part: &str| {
        Command::new(cmd)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success() && text(&o.stdout).contains(part))
    };
    if !found("which", &["qemu-system-x86_64"], "qemu") {
        return Some("qemu-system-x86_64 is not installed (tools/setup-vm.sh)".into());
    }
    let list = foliosim(&["vm", "kernel", "list"], dir);
    if !text(&list.stdout).contains("6.18.35-x86_64") {
        return Some("no 6.18.35-x86_64 kernel (FOLIOSIM_KERNELS)".into());
    }
    let target = "x86_64-unknown-linux-musl";
    if !found("rustup", &["target", "list", "--installed"], target) {
        return Some(format!("the Rust target {target} is missing"));
    }
    None
}

/// Two scenarios of the calibration corpus timed once each in a 6.18.35
/// x86_64 guest: 128 MiB of 4 KiB pages written (32,768 write faults, one
/// `do_anonymous_page()` each with THP off) and 128 MiB of zero-filled
/// pages paged out (32,768 `swpout_zero`: each is recorded in the swap
/// device's zeromap, nothing is written). The saved runs say they were a
/// guest's, counted with tracepoints, with the guest's time per phase;
/// the guest's faults agree with the model's; the profile names the
/// guest and the command. The saved runs then refit and recount without
/// a guest.
#[test]
fn a_profile_fitted_in_a_guest() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    if let Some(why) = no_guest(d) {
        eprintln!("SKIPPED a_profile_fitted_in_a_guest: {why}");
        return;
    }
    let corpus = d.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    for f in ["anon-4k-write.toml", "pageout-4k-zero.toml"] {
        let (_, src) = foliosim_testkit::repo_file(&format!("scenarios/calibrate/{f}"));
        std::fs::write(corpus.join(f), src).unwrap();
    }
    let (prior, _) = foliosim_testkit::repo_file("profiles/x86_64-prior.toml");
    let prior = prior.to_str().unwrap();
    let args = [
        "calibrate",
        "--prior",
        prior,
        "--engine",
        "vm",
        "--kernel",
        "6.18.35-x86_64",
        "--corpus",
        "corpus",
        "--repeat",
        "1",
        "--name",
        "t-tcg",
        "--out",
        "t.toml",
        "--save-runs",
        "runs.json",
        "-q",
    ];
    let out = foliosim(&args, d);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs.json")).unwrap()).unwrap();
    assert_eq!(runs["kernel"], "6.18.35-x86_64");
    assert_eq!(runs["traced"], true);
    let machine = runs["machine"].as_str().unwrap();
    assert!(
        machine.starts_with("guest 6.18.35-x86_64, Linux 6.18.35 in QEMU ("),
        "{machine}"
    );
    let phases = runs["phases"].as_array().unwrap();
    let phase = |name: &str| {
        phases
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {phases:?}"))
    };
    let write = phase("cal-anon-4k-write/measured");
    let pageout = phase("cal-pageout-4k-zero/measured");
    assert_eq!(write["counters"]["pgfault"], 32768);
    assert_eq!(pageout["counters"]["swpout_zero"], 32768);
    for p in [write, pageout] {
        let times = p["thread_cpu_ns"].as_array().unwrap();
        assert_eq!(times.len(), 1, "{p}");
        assert!(times[0].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["fault_mismatch"], Value::Null, "{p}");
    }
    let profile = std::fs::read_to_string(d.join("t.toml")).unwrap();
    assert!(
        profile.contains("foliosim calibrate --engine vm --kernel 6.18.35-x86_64"),
        "{profile}"
    );
    assert!(profile.contains("name = \"t-tcg\""), "{profile}");
    assert!(
        profile.contains(&format!("cpu = \"{machine}\"")),
        "{profile}"
    );
    // Refitted from the saved runs, recounted on the scenarios' own
    // machines: no guest needed.
    let args = [
        "calibrate",
        "--prior",
        prior,
        "--corpus",
        "corpus",
        "--from-runs",
        "runs.json",
        "--recount",
        "--check",
        "t.toml",
    ];
    let out = foliosim(&args, d);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("cal-anon-4k-write/measured"));
}

/// The prior prices one architecture's counters: a guest kernel of
/// another is refused before anything boots, naming both.
#[test]
fn a_prior_for_another_architecture_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let list = foliosim(&["vm", "kernel", "list"], d);
    if !text(&list.stdout).contains("6.18.35-arm64") {
        eprintln!("SKIPPED a_prior_for_another_architecture_is_refused: no 6.18.35-arm64 kernel");
        return;
    }
    let (prior, _) = foliosim_testkit::repo_file("profiles/x86_64-prior.toml");
    let args = [
        "calibrate",
        "--engine",
        "vm",
        "--kernel",
        "6.18.35-arm64",
        "--prior",
        prior.to_str().unwrap(),
    ];
    let out = foliosim(&args, d);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("prices x86_64, but the guest kernel 6.18.35-arm64 is arm64"),
        "{err}"
    );
}
