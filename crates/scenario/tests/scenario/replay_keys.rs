//! The keys a recording's replay writes: `at` on mmap steps and
//! `pattern = "list"` with `pages` on touch steps.

use crate::common;

use common::{error, parse, BASE};
use foliosim_scenario::{Pattern, StepKind};

fn touch(pages: &str) -> String {
    format!(
        "{BASE}\n[[step]]\nop = \"touch\"\nregion = \"buf\"\naccess = \"read\"\n\
         pattern = \"list\"\npages = \"{pages}\"\n"
    )
}

fn pattern(text: &str) -> Pattern {
    match &parse(text).steps[1].kind {
        StepKind::Touch { pattern, .. } => pattern.clone(),
        k => panic!("{k:?}"),
    }
}

#[test]
fn a_page_list_keeps_its_order_and_runs_go_both_ways() {
    assert_eq!(
        pattern(&touch("0-3,9,7-5,9")),
        Pattern::List(vec![0, 1, 2, 3, 9, 7, 6, 5, 9])
    );
}

#[test]
fn a_page_beyond_the_range_is_refused() {
    // The region is 2 MiB: pages 0 to 511.
    let e = error(&touch("510,511,512"));
    assert_eq!(e.field, "step[2].pages");
    assert!(
        e.message
            .contains("page 512 is beyond the range's 512 pages"),
        "{e}"
    );
}

#[test]
fn a_malformed_list_names_the_item() {
    let e = error(&touch("1,2-x"));
    assert_eq!(e.field, "step[2].pages");
    assert!(e.message.contains("found \"2-x\""), "{e}");
}

#[test]
fn pages_need_the_list_pattern() {
    let text = format!(
        "{BASE}\n[[step]]\nop = \"touch\"\nregion = \"buf\"\naccess = \"read\"\npages = \"1\"\n"
    );
    let e = error(&text);
    assert_eq!(e.field, "step[2].pages");
}

#[test]
fn at_is_a_page_aligned_user_address() {
    let mmap = |at: &str| {
        format!(
            "[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"2M\"\nat = {at}\n"
        )
    };
    let s = parse(&mmap("0x7fff_f780_0000"));
    assert_eq!(common::mmap_step(&s, 0).addr, Some(0x7fff_f780_0000));
    let e = error(&mmap("0x1001"));
    assert_eq!(e.field, "step[1].at");
    let e = error(&mmap("0x7fff_ffff_f000"));
    assert!(e.message.contains("below 0x800000000000"), "{e}");
}

#[test]
fn a_list_touch_is_not_split_among_threads() {
    let text = format!(
        "[system]\ncpus = 3\n{BASE}\n[[step]]\nop = \"threads\"\ncount = 2\n[[step.thread]]\nop = \"touch\"\n\
         region = \"buf\"\naccess = \"read\"\npattern = \"list\"\npages = \"1,2\"\n"
    );
    let e = error(&text);
    assert!(e.message.contains("cannot be split among threads"), "{e}");
}
