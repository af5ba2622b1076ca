//! Every kind of `RunError` reached by a real scenario on the simulator,
//! with the message the command line prints.

use foliosim_run::{Engine, Given, Job, RunError, SimOptions};
use foliosim_scenario::Source;
use foliosim_testkit as tk;

fn source(text: String) -> Source {
    Source {
        label: "s.toml".into(),
        text,
        recording: None,
    }
}

fn run_with(
    text: String,
    ov: &[(String, String)],
    sim: SimOptions,
) -> Result<foliosim_report::Report, RunError> {
    let src = source(text);
    let job = Job {
        source: &src,
        overrides: ov,
        expect: true,
        given: None,
    };
    foliosim_run::run(&job, &Engine::Sim(sim))
}

fn run(text: String) -> Result<foliosim_report::Report, RunError> {
    run_with(text, &[], SimOptions::default())
}

/// Assert that `e` is of `kind` ([`RunError::kind`]) and that its message
/// starts with `prefix` and contains every one of `parts`.
#[track_caller]
fn assert_error(e: &RunError, kind: &str, prefix: &str, parts: &[&str]) {
    assert_eq!(e.kind(), kind, "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with(prefix), "{msg}");
    for part in parts {
        assert!(msg.contains(part), "{msg}");
    }
}

/// Scenarios the simulator stops: killed by a signal, or beyond the
/// model. Each row: what it shows, the scenario, and the error's kind,
/// message prefix and message parts.
#[test]
fn killed_and_unsupported_scenarios() {
    let rows: [(&str, String, &str, &str, &[&str]); 4] = [
        (
            // filemap_fault() finds no page beyond i_size: VM_FAULT_SIGBUS.
            "a page past the end of a file",
            [
                tk::file("f", "64K", ""),
                tk::mmap_file("m", "f", "128K", "prot = \"r\"\n"),
                tk::touch("m", "read", ""),
            ]
            .concat(),
            "killed",
            "s.toml:",
            &["SIGBUS"],
        ),
        (
            "an unmapped range",
            [
                tk::mmap_anon("a", "64K"),
                tk::munmap("a"),
                tk::touch("a", "write", ""),
            ]
            .concat(),
            "killed",
            "",
            &["SIGSEGV"],
        ),
        (
            // 1,024 anonymous pages written into a cgroup of 256 pages
            // without swap: reclaim finds nothing it may take, and the
            // kernel's memcg OOM killer is not modelled.
            "a memcg OOM",
            [
                tk::step_with("memcg", "limit = \"1M\""),
                tk::mmap_anon("a", "4M"),
                tk::touch("a", "write", ""),
            ]
            .concat(),
            "unsupported",
            "s.toml:",
            &[
                "unsupported by the model",
                "memcg OOM",
                "OOM killer is not modelled",
            ],
        ),
        (
            // Read faults on anon memory map the shared zero page, so they
            // take only page tables: one PTE table per 2 MiB. 64 GiB
            // touched once per table needs 32,768 tables on a machine of
            // 16,384 frames; the kernel would call the OOM killer, which
            // the model does not have, so the model stops at its limit (a
            // typed panic deep in the allocator).
            "a model limit deep in a step",
            tk::page_tables_beyond_memory(),
            "unsupported",
            "s.toml:",
            &["out of memory for a page table"],
        ),
    ];
    for (what, text, kind, prefix, parts) in rows {
        let Err(e) = run(text) else {
            panic!("{what}: the run succeeded");
        };
        assert_error(&e, kind, prefix, parts);
    }
}

#[test]
fn a_bad_override_is_usage_naming_the_file_once() {
    let ov = [("bogus_knob".to_string(), "1".to_string())];
    let e = run_with(tk::mmap_anon("a", "64K"), &ov, SimOptions::default()).unwrap_err();
    assert_error(&e, "usage", "s.toml: --set bogus_knob=1: ", &[]);
    // An error inside the file names it with its line already.
    let e = run("[system]\nmemory = \"lots\"\n".into()).unwrap_err();
    assert_error(&e, "usage", "s.toml:2:", &[]);
}

#[test]
fn an_unknown_profile_is_usage() {
    let sim = SimOptions {
        profile: Some("no-such-cpu".into()),
        ..SimOptions::default()
    };
    let e = run_with(tk::mmap_anon("a", "64K"), &[], sim).unwrap_err();
    assert_eq!(e.kind(), "usage", "{e}");
}

#[test]
fn a_simulation_over_the_memory_limit_is_the_hosts() {
    let sim = SimOptions {
        max_memory: Some(1 << 20),
        ..SimOptions::default()
    };
    let e = run_with(tk::anon_written("a", "256M"), &[], sim).unwrap_err();
    assert_error(&e, "host", "", &["would need about"]);
}

/// 10^6 phases: 39 MB of text whose parse alone would take 2.3 GB (62
/// bytes per byte of `[[step]]` tables; 18 GB to run). Under the
/// 2,000,000 KiB of `ulimit -v 2000000`, where it once aborted in an
/// allocation, the text is refused before it is parsed, naming it.
#[test]
fn a_million_phases_are_refused_before_parsing() {
    let sim = SimOptions {
        max_memory: Some(2_000_000 << 10),
        ..SimOptions::default()
    };
    let t = std::time::Instant::now();
    let e = run_with(tk::big::many_phases(1_000_000), &[], sim).unwrap_err();
    assert_error(&e, "host", "", &["parsing the scenario text"]);
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
}

#[test]
fn a_panic_in_the_model_is_an_invariant_error() {
    let e = foliosim_run::guarded("s.toml", || panic!("rmap out of step")).unwrap_err();
    assert_error(&e, "invariant", "s.toml: internal error in the model", &[]);
}

#[test]
fn a_run_is_judged_once_timed_and_stamped() {
    let text = [
        tk::mmap_anon("a", "64K"),
        tk::phase("p"),
        tk::touch("a", "write", ""),
        "[[expect]]\nphase = \"p\"\ncounter = \"pgfault\"\nvalue = 16\n".into(),
    ]
    .concat();
    let src = source(text);
    let given = Given {
        set: vec![("seed".into(), "9".into())],
        arch: Some(foliosim_uapi::Arch::Arm64),
        seed: None,
    };
    let ov = given.overrides();
    let job = Job {
        source: &src,
        overrides: &ov,
        expect: true,
        given: Some(&given),
    };
    // 16 pages written, one fault each (no THP for 64 KiB by default).
    let r = foliosim_run::run(&job, &Engine::sim()).unwrap();
    assert_eq!(r.expectations.len(), 1);
    assert!(r.expectations_ok(), "{:?}", r.expectations);
    assert_eq!(r.arch, "arm64");
    assert!(r.phases[0].time.is_some(), "modelled time added");
    let p = r.provenance.expect("provenance");
    assert_eq!(p.seed, Some(9));
    let opts: Vec<&str> = p.overrides.iter().map(|o| o.option.as_str()).collect();
    assert_eq!(opts, ["--set", "--arch"]);
    // --no-expect: nothing judged.
    let job = Job {
        expect: false,
        ..job
    };
    let r = foliosim_run::run(&job, &Engine::sim()).unwrap();
    assert!(r.expectations.is_empty());
}
