//! `foliosim census --pid`: a real process's folio sizes. Root only
//! (pagemap's frame numbers and kpageflags); needs python3 for the
//! process; skips otherwise.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

/// A python3 that maps 64 MiB of private anonymous memory with THP
/// disabled for itself (PR_SET_THP_DISABLE = 41: every fault takes one
/// 4 KiB page, do_anonymous_page()), writes every page and waits.
const PROGRAM: &str = r#"
import ctypes, mmap, sys, time
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(0, 64 << 20, 4096):
    m[i] = 1
print("ready", flush=True)
sys.stdin.read()
"#;

#[test]
fn a_census_counts_a_programs_anonymous_pages_by_folio_size() {
    if !foliosim_testkit::is_root() {
        eprintln!("SKIPPED a_census_counts_a_programs_anonymous_pages_by_folio_size: needs root");
        return;
    }
    let Ok(mut child) = Command::new("python3")
        .args(["-c", PROGRAM])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    else {
        eprintln!("SKIPPED a_census_counts_a_programs_anonymous_pages_by_folio_size: no python3");
        return;
    };
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args([
            "census",
            "--format",
            "json",
            "--pid",
            &child.id().to_string(),
        ])
        .output()
        .unwrap();
    drop(child.stdin.take()); // python reads end-of-file and exits
    child.wait().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let anon = &v["kinds"]["anon"];
    // The 16,384 pages written, plus python's own heap and stack: all in
    // 4 KiB folios, nothing larger.
    let small = anon["4kB"].as_u64().unwrap();
    assert!(small >= 16384, "{anon}");
    for (k, n) in anon.as_object().unwrap() {
        if k.ends_with("kB") && k != "4kB" {
            assert_eq!(n, 0, "{k} folios with THP disabled: {anon}");
        }
    }
    assert!(anon["pages_present"].as_u64().unwrap() >= 16384);
    // A process that is gone: an error naming it, exit status 2.
    let gone = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(["census", "--pid", &child.id().to_string()])
        .output()
        .unwrap();
    assert_eq!(gone.status.code(), Some(2));
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(err.contains(&format!("/proc/{}/maps", child.id())), "{err}");
}
