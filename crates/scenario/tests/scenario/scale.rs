//! Parsing time grows linearly with the scenario: name lookups (files,
//! phases, an expectation's phase) go through hash tables, not scans of
//! everything declared before.
//!
//! Times are the parsing thread's CPU time (`/proc/thread-self/stat`,
//! in clock ticks), which other work on the machine disturbs far less
//! than the wall-clock time.

use std::fmt::Write as _;

use foliosim_scenario::parse_str;
use foliosim_testkit::big;

/// This thread's user + system CPU time in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("thread stat");
    // Fields after the command name in parentheses: utime and stime are
    // the 12th and 13th (fields 14 and 15 of proc_pid_stat(5)).
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn parse_cpu(text: &str) -> f64 {
    let start = cpu_seconds();
    if let Err(e) = parse_str("big.toml", text, &[]) {
        panic!("{e}");
    }
    cpu_seconds() - start
}

/// 100,000 `[[file]]` tables and a step naming the last one: 0.7-2.0 s
/// here with other builds running (toml_edit's parse is half of it); the
/// name check that scanned every earlier file took 27.9 s.
#[test]
fn a_hundred_thousand_files_parse_in_linear_time() {
    let took = parse_cpu(&big::many_files(100_000));
    assert!(took < 5.0, "{took} s");
}

/// 50,000 phases, each named by an expectation: the duplicate check of
/// phase names and an expectation's phase lookup scanned every phase
/// (1.25 × 10^9 name comparisons each).
#[test]
fn fifty_thousand_phases_and_expectations_parse_in_linear_time() {
    let mut text = big::many_phases(50_000);
    for i in 0..50_000 {
        let _ = write!(
            text,
            "[[expect]]\nphase = \"p{i}\"\ncounter = \"pgfault\"\nvalue = 0\n"
        );
    }
    let took = parse_cpu(&text);
    assert!(took < 5.0, "{took} s");
}
