//! `per_call` on `op = "madvise"` steps: bytes per madvise(2) call, a
//! positive multiple of the page size; bad values name file, line and field.

use crate::common;

use common::{error, parse, parse_with, set_error, BASE};
use foliosim_scenario::StepKind;

/// `BASE` (whose mmap step is step[1]) plus a madvise step of `buf` written
/// from line 12 on (the `[[step]]` header), with `extra` keys.
fn with_madvise(extra: &str) -> String {
    format!("{BASE}\n[[step]]\nop = \"madvise\"\nregion = \"buf\"\nadvice = \"dontneed\"\n{extra}")
}

fn per_call(s: &foliosim_scenario::Scenario) -> Option<u64> {
    match &s.steps[1].kind {
        StepKind::Madvise { per_call, .. } => *per_call,
        k => panic!("not a madvise step: {k:?}"),
    }
}

#[test]
fn absent_means_one_call() {
    assert_eq!(per_call(&parse(&with_madvise(""))), None);
}

#[test]
fn sizes_and_integers() {
    for (extra, want) in [
        ("per_call = \"4K\"\n", 4096),
        ("per_call = \"1M\"\n", 1 << 20),
        ("per_call = 8192\n", 8192),
        // Larger than the range: still valid (one call).
        ("len = \"64K\"\nper_call = \"4M\"\n", 4 << 20),
    ] {
        assert_eq!(
            per_call(&parse(&with_madvise(extra))),
            Some(want),
            "{extra}"
        );
    }
}

#[test]
fn not_a_page_multiple_is_an_error() {
    let e = error(&with_madvise("per_call = \"6K\"\n"));
    assert_eq!((e.line, e.field.as_str()), (16, "step[2].per_call"));
    assert_eq!(
        e.to_string(),
        "t.toml:16:12: step[2].per_call: expected a multiple of the page size (4096), found 6144"
    );
}

#[test]
fn zero_and_junk_are_errors() {
    let e = error(&with_madvise("per_call = 0\n"));
    assert_eq!((e.line, e.field.as_str()), (16, "step[2].per_call"));
    assert!(e.message.contains("positive multiple"), "{e}");
    let e = error(&with_madvise("per_call = \"lots\"\n"));
    assert_eq!((e.line, e.field.as_str()), (16, "step[2].per_call"));
    let e = error(&with_madvise("per_call = true\n"));
    assert_eq!((e.line, e.field.as_str()), (16, "step[2].per_call"));
}

#[test]
fn only_on_madvise_steps() {
    let text = format!("{BASE}\n[[step]]\nop = \"munmap\"\nregion = \"buf\"\nper_call = \"4K\"\n");
    let e = error(&text);
    assert_eq!((e.line, e.field.as_str()), (15, "step[2].per_call"));
    assert!(e.message.starts_with("unknown key `per_call`"), "{e}");
}

#[test]
fn set_override() {
    let s = parse_with(&with_madvise(""), &[("step.2.per_call", "16K")]).unwrap();
    assert_eq!(per_call(&s), Some(16 << 10));
    let e = set_error(&with_madvise(""), &[("step.2.per_call", "100")]);
    assert_eq!(
        e.to_string(),
        "--set step.2.per_call=100: step[2].per_call: \
         expected a multiple of the page size (4096), found 100"
    );
}
