//! Every kind of `RunError` reached by a real scenario on the simulator,
//! with the message the command line prints.

use foliosim_run::{Engine, Given, Job, RunError, SimOptions};
use foliosim_scenario::Source;
use foliosim_testkit as tk;

fn source(text: String) -> Source {
    Source {
        label: "s.toml".into(),
        text,
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

#[test]
fn a_page_past_the_end_of_a_file_is_killed_by_sigbus() {
    // filemap_fault() finds no page beyond i_size: VM_FAULT_SIGBUS.
    let text = [
        tk::file("f", "64K", ""),
        tk::mmap_file("m", "f", "128K", "prot = \"r\"\n"),
        tk::touch("m", "read", ""),
    ]
    .concat();
    let e = run(text).unwrap_err();
    assert_eq!(e.kind(), "killed", "{e}");
    assert!(e.to_string().starts_with("s.toml:"), "{e}");
    assert!(e.to_string().contains("SIGBUS"), "{e}");
}

#[test]
fn an_unmapped_range_is_killed_by_sigsegv() {
    let text = [
        tk::mmap_anon("a", "64K"),
        tk::munmap("a"),
        tk::touch("a", "write", ""),
    ]
    .concat();
    let e = run(text).unwrap_err();
    assert!(matches!(e, RunError::Killed(_)), "{e:?}");
    assert!(e.to_string().contains("SIGSEGV"), "{e}");
}

#[test]
fn madv_willneed_is_unsupported() {
    let text = [tk::mmap_anon("a", "64K"), tk::madvise("a", "willneed", "")].concat();
    let e = run(text).unwrap_err();
    assert!(matches!(e, RunError::Unsupported(_)), "{e:?}");
    assert!(e.to_string().contains("unsupported by the model"), "{e}");
}

#[test]
fn a_model_limit_deep_in_a_step_is_unsupported() {
    // Read faults on anon memory map the shared zero page, so they take
    // only page tables: one PTE table per 2 MiB. 64 GiB touched once per
    // table needs 32,768 tables on a machine of 16,384 frames; the kernel
    // would call the OOM killer, which the model does not have, so the
    // model stops at its limit (a typed panic deep in the allocator).
    let text = [
        tk::system_mem("64M", ""),
        tk::mmap_anon("a", "64G"),
        tk::touch("a", "read", "pattern = \"one-per-pt\""),
    ]
    .concat();
    let e = run(text).unwrap_err();
    assert!(matches!(e, RunError::Unsupported(_)), "{e:?}");
    assert!(e.to_string().starts_with("s.toml:"), "{e}");
    assert!(
        e.to_string().contains("out of memory for a page table"),
        "{e}"
    );
}

#[test]
fn a_bad_override_is_usage_naming_the_file_once() {
    let ov = [("bogus_knob".to_string(), "1".to_string())];
    let e = run_with(tk::mmap_anon("a", "64K"), &ov, SimOptions::default()).unwrap_err();
    assert!(matches!(e, RunError::Usage(_)), "{e:?}");
    assert!(
        e.to_string().starts_with("s.toml: --set bogus_knob=1: "),
        "{e}"
    );
    // An error inside the file names it with its line already.
    let e = run("[system]\nmemory = \"lots\"\n".into()).unwrap_err();
    assert_eq!(e.kind(), "usage");
    assert!(e.to_string().starts_with("s.toml:2:"), "{e}");
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
    assert_eq!(e.kind(), "host", "{e}");
    assert!(e.to_string().contains("would need about"), "{e}");
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
    assert_eq!(e.kind(), "host", "{e}");
    assert!(e.to_string().contains("parsing the scenario text"), "{e}");
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
}

#[test]
fn a_panic_in_the_model_is_an_invariant_error() {
    let e = foliosim_run::guarded("s.toml", || panic!("rmap out of step")).unwrap_err();
    assert!(matches!(e, RunError::Invariant(_)), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("s.toml: internal error in the model"),
        "{e}"
    );
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
