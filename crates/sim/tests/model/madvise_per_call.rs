//! `per_call` on madvise steps: the range is advised in consecutive
//! madvise(2) calls of that many bytes. Counts derived from Linux 6.18
//! mm/madvise.c and arch/x86/mm/tlb.c: each MADV_DONTNEED call zaps its own
//! range under its own mmu_gather, and `tlb_finish_mmu()` of a call that
//! cleared present PTEs makes one `flush_tlb_mm_range()` over that call's
//! range (tlb:tlb_flush once per call). That flush invalidates page by page
//! (one INVLPG each, sim/invlpg) when the range has at most
//! `tlb_single_page_flush_ceiling` (33) pages, and flushes the whole TLB
//! (no INVLPG) above it. sim/syscall_mm counts the madvise(2) calls.

use crate::common;

use common::*;

/// `size` of written anon memory in region "a" (THP off, so every folio is
/// one 4 KiB page), then a phase "dn" of MADV_DONTNEED with `extra` keys.
fn dontneed(size: &str, extra: &str) -> String {
    [
        system("transparent_hugepage.enabled = \"never\"\n"),
        anon_written("a", size),
        phase("dn"),
        madvise("a", "dontneed", extra),
    ]
    .concat()
}

/// (syscall_mm, tlb:tlb_flush, sim/invlpg) of phase "dn".
fn calls(r: &foliosim_report::Report) -> (i64, i64, i64) {
    (
        c(r, "dn", "sim/syscall_mm"),
        c(r, "dn", "tlb:tlb_flush"),
        c(r, "dn", "sim/invlpg"),
    )
}

/// Run [`dontneed`] and check its [`calls`]; the report, for more checks.
#[track_caller]
fn assert_calls(size: &str, extra: &str, want: (i64, i64, i64)) -> foliosim_report::Report {
    let r = run(&dontneed(size, extra));
    assert_eq!(calls(&r), want, "{extra}");
    r
}

/// 16 pages in 4 KiB calls: 16 calls, each one flush_tlb_mm_range() of one
/// page (one INVLPG). Without per_call: one call, one flush of 16 pages
/// (16 <= 33: 16 INVLPGs).
#[test]
fn sixteen_pages_in_4k_calls() {
    let r = assert_calls("64K", "per_call = \"4K\"", (16, 16, 16));
    assert_eq!(folios(&r, "dn", "a"), hist(&[]));
    assert_calls("64K", "", (1, 1, 16));
}

/// 16 pages in 12 KiB calls: 3+3+3+3+3+1 pages, six calls, the last one
/// shorter; every page still gets its INVLPG.
#[test]
fn last_call_is_shorter() {
    let r = assert_calls("64K", "per_call = \"12K\"", (6, 6, 16));
    assert_eq!(folios(&r, "dn", "a"), hist(&[]));
}

/// 128 pages in 64-page calls: two calls, each above the 33-page ceiling,
/// so two full flushes and no INVLPG. In 32-page calls: four calls at the
/// ceiling or below, 128 INVLPGs.
#[test]
fn flush_ceiling_applies_per_call() {
    assert_calls("512K", "per_call = \"256K\"", (2, 2, 0));
    assert_calls("512K", "per_call = \"128K\"", (4, 4, 128));
}

/// per_call splits only the step's range: pages 2..10 of 16 in 16 KiB
/// calls are two calls of 4 pages; the other 8 pages stay mapped.
#[test]
fn only_the_range_is_split() {
    let r = assert_calls(
        "64K",
        "offset = \"8K\"\nlen = \"32K\"\nper_call = \"16K\"",
        (2, 2, 8),
    );
    assert_eq!(folios(&r, "dn", "a"), hist(&[("4kB", 8)]));
}

/// A per_call larger than the range is one call.
#[test]
fn per_call_above_the_range_is_one_call() {
    assert_calls("64K", "per_call = \"1M\"", (1, 1, 16));
}

/// `--set step.N.per_call` reaches the simulator.
#[test]
fn set_override_splits_the_calls() {
    let r = run_with(&dontneed("64K", ""), &[("step.4.per_call", "8K")]);
    assert_eq!(calls(&r), (8, 8, 16));
}
