//! `op = "mremap"`: a region's new size and where it may go; later steps
//! are bounded by the new size; bad values name file, line and field.

use crate::common;

use common::{error, parse, BASE};
use foliosim_scenario::{MremapStep, StepKind};

/// `BASE` (a 2 MiB region `buf`, its mmap step is step[1]) plus an mremap
/// step of `buf` whose `[[step]]` header is on line 12 and its keys from
/// line 13 on (`op`, `region`, then `extra`), and then `after`.
fn with_mremap(extra: &str, after: &str) -> String {
    format!("{BASE}\n[[step]]\nop = \"mremap\"\nregion = \"buf\"\n{extra}{after}")
}

fn mremap(s: &foliosim_scenario::Scenario) -> &MremapStep {
    match &s.steps[1].kind {
        StepKind::Mremap(m) => m,
        k => panic!("not an mremap step: {k:?}"),
    }
}

fn at(e: &foliosim_scenario::ScenarioError) -> (u32, u32, &str) {
    (e.line, e.col, e.field.as_str())
}

#[test]
fn grow_in_place_move_and_maymove() {
    let s = parse(&with_mremap("size = \"4M\"\n", ""));
    assert_eq!(
        mremap(&s),
        &MremapStep {
            region: "buf".into(),
            size: 4 << 20,
            addr: None,
            maymove: false,
        }
    );
    let s = parse(&with_mremap("size = \"4M\"\nmaymove = true\n", ""));
    assert!(mremap(&s).maymove);
    // `at` is MREMAP_FIXED, which implies MREMAP_MAYMOVE.
    let s = parse(&with_mremap("size = \"2M\"\nat = 0x400000000000\n", ""));
    assert_eq!(mremap(&s).addr, Some(0x4000_0000_0000));
    assert!(mremap(&s).maymove);
}

/// After the step the region is 4 MiB: a touch of its last 1 MiB parses;
/// after a shrink to 1 MiB, a touch reaching past it is refused, naming
/// the new size.
#[test]
fn later_steps_are_bounded_by_the_new_size() {
    let touch = "[[step]]\nop = \"touch\"\nregion = \"buf\"\naccess = \"write\"\n";
    let s = parse(&with_mremap(
        "size = \"4M\"\n",
        &format!("{touch}offset = \"3M\"\nlen = \"1M\"\n"),
    ));
    assert_eq!(s.steps.len(), 3);
    let e = error(&with_mremap(
        "size = \"1M\"\n",
        &format!("{touch}offset = \"512K\"\nlen = \"1M\"\n"),
    ));
    assert_eq!(at(&e), (21, 7, "step[3].len"));
    assert_eq!(
        e.message,
        "offset 524288 + len 1048576 exceeds the size of region \"buf\" (1048576 bytes)"
    );
}

/// A child's mremap changes the region's size in the child only.
#[test]
fn a_childs_mremap_stays_in_the_child() {
    let text = format!(
        "{BASE}\n[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"mremap\"\nregion = \"buf\"\n\
         size = \"4M\"\n[[step.child]]\nop = \"touch\"\nregion = \"buf\"\naccess = \"read\"\n\
         offset = \"3M\"\n[[step]]\nop = \"touch\"\nregion = \"buf\"\naccess = \"read\"\n\
         offset = \"3M\"\n"
    );
    let e = error(&text);
    assert_eq!(e.field, "step[3].offset");
    assert_eq!(
        e.message,
        "offset 3145728 is not inside region \"buf\" (2097152 bytes)"
    );
}

#[test]
fn bad_keys_name_line_and_field() {
    let e = error(&with_mremap("", ""));
    assert_eq!(e.field, "step[2].size");
    assert!(e.message.contains("size"), "{}", e.message);

    let e = error(&with_mremap("size = \"5K\"\n", ""));
    assert_eq!(at(&e), (15, 8, "step[2].size"));

    let e = error(&with_mremap(
        "size = \"2M\"\nat = 0x400000000000\nmaymove = false\n",
        "",
    ));
    assert_eq!(at(&e), (17, 11, "step[2].maymove"));
    assert!(e.message.contains("MREMAP_FIXED"), "{}", e.message);

    let e = error(&with_mremap("size = \"2M\"\nat = 0\n", ""));
    assert_eq!(at(&e), (16, 6, "step[2].at"));

    let e = error(&with_mremap("size = \"2M\"\ndontunmap = true\n", ""));
    assert_eq!(at(&e), (16, 13, "step[2].dontunmap"));
    assert!(
        e.message.starts_with("unsupported: MREMAP_DONTUNMAP"),
        "{}",
        e.message
    );

    let e = error(&with_mremap("size = \"2M\"\noffset = \"4K\"\n", ""));
    assert_eq!(e.field, "step[2].offset");

    let e = error(&format!(
        "{BASE}\n[[step]]\nop = \"mremap\"\nregion = \"nope\"\nsize = \"4K\"\n"
    ));
    assert_eq!(at(&e), (14, 10, "step[2].region"));
    assert_eq!(e.message, "unknown region \"nope\"; mapped regions: buf");
}
