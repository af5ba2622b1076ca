//! `--set KEY=VALUE` overrides.

use crate::common;

use common::{parse, parse_with, set_error, BASE};
use foliosim_scenario::*;
use foliosim_testkit::assert_starts_with;

fn ok(text: &str, sets: &[(&str, &str)]) -> Scenario {
    match parse_with(text, sets) {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

const TOUCH: &str = r#"
[[step]]
op = "touch"
region = "buf"
access = "read"
pattern = "random"
"#;

#[test]
fn top_level_keys() {
    let s = ok(
        "name = \"a\"\nseed = 2\n",
        &[("name", "b"), ("description", "\"hello\""), ("seed", "42")],
    );
    assert_eq!(
        (s.name.as_str(), s.description.as_str(), s.seed),
        ("b", "hello", 42)
    );
}

#[test]
fn seed_override_reaches_random_touches_without_a_seed() {
    let text = format!("seed = 5\n{BASE}{TOUCH}");
    let s = ok(&text, &[("seed", "9")]);
    let StepKind::Touch { pattern, .. } = &s.steps[1].kind else {
        panic!("not a touch");
    };
    assert_eq!(*pattern, Pattern::Random { seed: 9 });
}

#[test]
fn system_keys_with_and_without_prefix() {
    let sets = [
        ("fault_around_bytes", "4096"),
        ("system.read_ahead_kb", "512"),
        ("transparent_hugepage.hugepages-64kB.enabled", "always"),
        ("system.transparent_hugepage.enabled", "never"),
        ("memory", "4096<<20"),
        ("arch", "arm64"),
        ("transparent_hugepage.use_zero_page", "false"),
    ];
    let s = ok("", &sets);
    let sys = &s.system;
    assert_eq!(sys.fault_around_bytes, 4096);
    assert_eq!(sys.read_ahead_kb, 512);
    assert_eq!(sys.mthp_enabled[&65536], MthpMode::Always);
    assert_eq!(sys.thp_enabled, ThpMode::Never);
    assert_eq!(sys.memory, 4 << 30);
    assert_eq!(sys.arch, Arch::Arm64);
    assert!(!sys.thp_use_zero_page);
    assert_eq!(
        sys.knobs["transparent_hugepage.hugepages-64kB.enabled"],
        "always"
    );
    assert_eq!(sys.knobs["fault_around_bytes"], "4096");
}

#[test]
fn overrides_replace_file_values_in_both_spellings() {
    let dotted = "[system]\ntransparent_hugepage.hugepages-64kB.enabled = \"never\"\n";
    let nested = "[system.transparent_hugepage.hugepages-64kB]\nenabled = \"never\"\n";
    for text in [dotted, nested] {
        let s = ok(
            text,
            &[("transparent_hugepage.hugepages-64kB.enabled", "madvise")],
        );
        assert_eq!(s.system.mthp_enabled[&65536], MthpMode::Madvise);
    }
}

#[test]
fn override_replaces_a_non_table_on_the_way() {
    // The file's (invalid) value is replaced by a table holding the override.
    let s = ok(
        "[system]\ntransparent_hugepage = 3\n",
        &[("transparent_hugepage.enabled", "always")],
    );
    assert_eq!(s.system.thp_enabled, ThpMode::Always);
}

#[test]
fn file_fields_by_name() {
    let text = format!("{BASE}[[file]]\nname = \"v1.bin\"\nsize = 1\n");
    let s = ok(
        &text,
        &[("file.data.size", "16M"), ("file.v1.bin.fill", "cold")],
    );
    assert_eq!(s.files[0].size, 16 << 20);
    assert_eq!(s.files[1].fill, CacheFill::Cold);
}

#[test]
fn step_fields_by_number() {
    let text = format!("{BASE}{TOUCH}");
    let s = ok(
        &text,
        &[
            ("step.2.pattern", "stride"),
            ("step.2.stride", "64K"),
            ("step.1.size", "4M"),
        ],
    );
    let StepKind::Touch { pattern, .. } = &s.steps[1].kind else {
        panic!("not a touch");
    };
    assert_eq!(*pattern, Pattern::Stride { stride: 65536 });
    assert!(matches!(s.steps[0].kind, StepKind::Mmap(MmapStep { size, .. }) if size == 4 << 20));
}

#[test]
fn toml_values_and_plain_strings() {
    let text = format!("{BASE}{TOUCH}");
    // An array and a quoted string parse as TOML; `64K` stays a string.
    let s = ok(
        &text,
        &[
            ("step.1.madvise", "[\"hugepage\", \"cold\"]"),
            ("step.2.seed", "\"123\""),
            ("step.2.len", "64K"),
        ],
    );
    let StepKind::Mmap(MmapStep { advise, .. }) = &s.steps[0].kind else {
        panic!("not an mmap");
    };
    assert_eq!(advise, &[Madv::Hugepage, Madv::Cold]);
    let StepKind::Touch { pattern, range, .. } = &s.steps[1].kind else {
        panic!("not a touch");
    };
    assert_eq!(*pattern, Pattern::Random { seed: 123 });
    assert_eq!(range.len, Some(65536));
}

#[test]
fn later_override_wins() {
    let s = ok("", &[("seed", "3"), ("seed", "4")]);
    assert_eq!(s.seed, 4);
}

/// The message of the error of `text` with `--set key=value`.
fn set_says(text: &str, key: &str, value: &str) -> String {
    set_error(text, &[(key, value)]).to_string()
}

#[test]
fn bad_value_is_reported_as_the_set() {
    let e = set_error("", &[("fault_around_bytes", "0")]);
    assert_eq!((e.file.as_str(), e.line, e.col), ("--set", 0, 0));
    assert_eq!(e.field, "fault_around_bytes=0");
    assert_eq!(
        e.to_string(),
        "--set fault_around_bytes=0: system.fault_around_bytes: expected a size above 0, found 0"
    );
    assert_starts_with(
        &set_says("", "memory", "lots"),
        "--set memory=lots: system.memory: ",
    );
    assert_starts_with(
        &set_says("", "transparent_hugepage.enabled", "sometimes"),
        "--set transparent_hugepage.enabled=sometimes: ",
    );
}

#[test]
fn bad_value_in_a_step_is_reported_as_the_set() {
    let text = format!("{BASE}{TOUCH}");
    assert_eq!(
        set_says(&text, "step.2.region", "nope"),
        "--set step.2.region=nope: step[2].region: unknown region \"nope\"; mapped regions: buf"
    );
    assert_starts_with(
        &set_says(&text, "step.2.colour", "red"),
        "--set step.2.colour=red: step[2].colour: unknown key `colour`",
    );
}

#[test]
fn unknown_targets_are_errors() {
    let text = format!("{BASE}{TOUCH}");
    assert_eq!(
        set_says(&text, "file.nope.size", "1"),
        "--set file.nope.size=1: no [[file]] has name = \"nope\""
    );
    for key in ["step.3.op", "step.0.op", "step.x.op"] {
        assert_starts_with(
            &set_says(&text, key, "wait"),
            &format!("--set {key}=wait: no step"),
        );
    }
    let deep = vec!["a"; 10_000].join(".");
    for key in [
        "",
        "system",
        "step.1",
        "file.data",
        "a..b",
        "file",
        deep.as_str(),
    ] {
        assert_starts_with(
            &set_says(&text, key, "1"),
            &format!("--set {key}=1: expected"),
        );
    }
    assert_starts_with(
        &set_says("", "bogus", "1"),
        "--set bogus=1: system.bogus: unknown key `bogus` in [system]",
    );
}

#[test]
fn file_errors_stay_in_the_file() {
    // An override elsewhere does not move an error that the file makes.
    let e = set_error("[system]\nmemory = \"3M\"\n", &[("seed", "3")]);
    assert_eq!((e.file.as_str(), e.line, e.col), ("t.toml", 2, 10));
}

#[test]
fn steps_created_by_set_have_a_set_location() {
    let text = "[[step]]\nop = \"fork\"\n";
    let s = ok(text, &[("step.1.child", "[{ op = \"wait\" }]")]);
    let StepKind::Fork { child } = &s.steps[0].kind else {
        panic!("not a fork");
    };
    assert_eq!(child[0].loc.line, 0);
    assert!(child[0].loc.file.starts_with("--set step.1.child="));
    assert!(parse(text).steps.len() == 1);
}

/// `System::set` (a setting an engine derives) leaves the scenario as
/// parsing it with the same `--set` would.
#[test]
fn a_derived_setting_is_the_same_as_a_set() {
    use foliosim_uapi::knobs::Value;
    let sets = [
        ("memory", "3G"),
        ("series.batch_file_unmap", "1"),
        ("transparent_hugepage.hugepages-64kB.enabled", "always"),
    ];
    let want = ok(BASE, &sets);
    let mut got = parse(BASE);
    assert!(got.system.set("memory", Value::Int(3 << 30)));
    assert!(got.system.set("series.batch_file_unmap", Value::Flag(true)));
    let always = Value::Mthp(MthpMode::Always);
    assert!(got
        .system
        .set("transparent_hugepage.hugepages-64kB.enabled", always));
    assert_eq!(format!("{:?}", got.system), format!("{:?}", want.system));
    // Neither a knob nor a switch, or a value of another kind: nothing set.
    let before = format!("{:?}", got.system);
    assert!(!got.system.set("memroy", Value::Int(1 << 30)));
    assert!(!got.system.set("memory", Value::Flag(true)));
    assert!(!got.system.set("series.batch_file_unmap", Value::Int(1)));
    assert_eq!(format!("{:?}", got.system), before);
}
