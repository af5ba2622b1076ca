//! MADV_COLLAPSE and khugepaged (mm/khugepaged.c of Linux 6.18:
//! madvise_collapse(), hpage_collapse_scan_pmd(), collapse_huge_page(),
//! khugepaged_scan_mm_slot()). Each test derives its expected values from
//! those functions in its comments.

use crate::common;
use common::{
    assert_fails_with, c, folios, hist, madvise, mmap_anon, phase, run, step, step_with, swap,
    system, touch,
};

/// THP `enabled` = `top`, 2 MiB of anon memory written page by page
/// before any advice (order-0 folios: no VM_HUGEPAGE yet).
fn written(top: &str, extra: &str) -> String {
    [
        system(&format!(
            "transparent_hugepage.enabled = \"{top}\"\n\
             transparent_hugepage.khugepaged.scan_sleep_millisecs = 3600000\n{extra}"
        )),
        mmap_anon("heap", "2M"),
        touch("heap", "write", ""),
    ]
    .concat()
}

fn khugepaged(full_scans: u32) -> String {
    step_with("khugepaged", &format!("full_scans = {full_scans}"))
}

#[test]
fn collapse_of_an_untouched_range_is_einval() {
    // No page table under the range: find_pmd_or_thp_or_none() says
    // SCAN_PMD_NONE, which is not in madvise_collapse()'s whitelist, so the
    // call ends with madvise_collapse_errno(SCAN_PMD_NONE) = -EINVAL. (The
    // VMA has no anon_vma either: thp_vma_allowable_order() refuses first,
    // with the same errno.)
    let text = [
        system("transparent_hugepage.enabled = \"never\""),
        mmap_anon("heap", "2M"),
        madvise("heap", "collapse", ""),
    ]
    .concat();
    assert_fails_with(&text, "EINVAL");
}

#[test]
fn collapse_of_a_pmd_mapped_range_succeeds_without_allocating() {
    // A PMD THP fault maps the range (MADV_HUGEPAGE, enabled = madvise);
    // check_pmd_state() says SCAN_PMD_MAPPED, which madvise_collapse()
    // counts as a THP: success, no allocation.
    let text = [
        system("transparent_hugepage.enabled = \"madvise\""),
        mmap_anon("heap", "2M"),
        madvise("heap", "hugepage", ""),
        touch("heap", "write", ""),
        phase("collapse"),
        madvise("heap", "collapse", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "collapse", "thp_collapse_alloc"), 0);
    assert_eq!(c(&r, "collapse", "huge_memory:mm_khugepaged_scan_pmd"), 1);
    assert_eq!(c(&r, "collapse", "huge_memory:mm_collapse_huge_page"), 0);
}

#[test]
fn collapse_keeps_the_page_tables_and_the_rss() {
    // 512 written order-0 pages: collapse_huge_page() deposits the PTE
    // table with the new PMD (pgtable_trans_huge_deposit()) rather than
    // freeing it, and allocates none; the 512 old folios are freed
    // (pgfree 512) and the new one allocated (pgalloc_normal 512).
    let r = run(&(written("never", "") + &phase("collapse") + &madvise("heap", "collapse", "")));
    assert_eq!(c(&r, "collapse", "sim/pgtable_alloc"), 0);
    assert_eq!(c(&r, "collapse", "sim/pgtable_free"), 0);
    assert_eq!(c(&r, "collapse", "sim/page_copy"), 512);
    assert_eq!(c(&r, "collapse", "pgfree"), 512);
    assert_eq!(c(&r, "collapse", "pgalloc_normal"), 512);
    assert_eq!(folios(&r, "collapse", "heap"), hist(&[("2048kB", 1)]));
}

#[test]
fn khugepaged_needs_a_pmd_size_enabled_and_a_registered_mm() {
    // enabled = never: hugepage_pmd_enabled() is false, khugepaged has no
    // work (khugepaged_has_work()), nothing is scanned. With madvise but no
    // MADV_HUGEPAGE the mm never registered (khugepaged_enter_vma() is
    // only called for a VMA that allows the PMD order): no full scan.
    for top in ["never", "madvise"] {
        let text = [written(top, ""), phase("scan"), khugepaged(1)].concat();
        let r = run(&text);
        assert_eq!(c(&r, "scan", "khugepaged/full_scans"), 0, "{top}");
        assert_eq!(folios(&r, "scan", "heap"), hist(&[("4kB", 512)]), "{top}");
    }
}

#[test]
fn khugepaged_honours_max_ptes_shared_but_madv_collapse_does_not() {
    // After fork every page is mapped by parent and child:
    // folio_maybe_mapped_shared() for each of the 512 PTEs. With
    // max_ptes_shared = 511 the 512th exceeds it (SCAN_EXCEED_SHARED_PTE).
    // The child is registered too (khugepaged_fork()), so each full scan
    // meets the range twice: thp_scan_exceed_share_pte 4 in two full
    // scans, nothing collapsed. MADV_COLLAPSE (is_khugepaged false) then
    // collapses the parent's range.
    let text = [
        written(
            "madvise",
            "transparent_hugepage.khugepaged.max_ptes_shared = 511\n",
        ),
        madvise("heap", "hugepage", ""),
        step("fork"),
        phase("scan"),
        khugepaged(2),
        phase("collapse"),
        madvise("heap", "collapse", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "scan", "khugepaged/full_scans"), 2);
    assert_eq!(c(&r, "scan", "khugepaged/pages_collapsed"), 0);
    assert_eq!(c(&r, "scan", "thp_scan_exceed_share_pte"), 4);
    assert_eq!(c(&r, "collapse", "thp_collapse_alloc"), 1);
    assert_eq!(folios(&r, "collapse", "heap"), hist(&[("2048kB", 1)]));
}

#[test]
fn khugepaged_honours_max_ptes_swap() {
    // 8 of 512 pages paged out to zram. max_ptes_swap = 7: the 8th swap
    // PTE exceeds it (SCAN_EXCEED_SWAP_PTE). max_ptes_swap = 8: the scan
    // passes, but with swap PTEs khugepaged wants at least 256 young pages
    // (hpage_collapse_scan_pmd()); the 504 written ones are young, so
    // __collapse_huge_page_swapin() reads the 8 back (pswpin 8) and the
    // range collapses.
    for (max, collapsed, pswpin) in [(7, 0, 0), (8, 1, 8)] {
        let extra = format!("transparent_hugepage.khugepaged.max_ptes_swap = {max}\n");
        let text = [
            written("madvise", &extra),
            swap("zram", "16M"),
            madvise("heap", "pageout", "len = \"32K\""),
            madvise("heap", "hugepage", ""),
            phase("scan"),
            khugepaged(2),
        ]
        .concat();
        let r = run(&text);
        assert_eq!(
            c(&r, "scan", "khugepaged/pages_collapsed"),
            collapsed,
            "{max}"
        );
        assert_eq!(c(&r, "scan", "pswpin"), pswpin, "{max}");
        assert_eq!(
            c(&r, "scan", "thp_scan_exceed_swap_pte"),
            2 * (1 - collapsed),
            "{max}"
        );
        // khugepaged's allocation and flush are its own thread's
        // tracepoint hits, not the workload's.
        assert_eq!(c(&r, "scan", "kmem:mm_page_alloc/order=9"), 0, "{max}");
        assert_eq!(c(&r, "scan", "tlb:tlb_flush"), 0, "{max}");
    }
}

#[test]
fn khugepaged_step_outside_the_top_level_is_refused() {
    let text = [
        written("never", ""),
        step("fork"),
        khugepaged(1).replace("[[step]]", "[[step.child]]"),
    ]
    .concat();
    let err = foliosim_scenario::parse_str("t.toml", &text, &[]).unwrap_err();
    assert!(err.to_string().contains("top-level"), "{err}");
    let text = [written("never", ""), khugepaged(0)].concat();
    let err = foliosim_scenario::parse_str("t.toml", &text, &[]).unwrap_err();
    assert!(err.to_string().contains("full_scans"), "{err}");
}

/// 2 MiB of shared anonymous memory (shmem) at a PMD-aligned address,
/// every page written: 512 order-0 page-cache folios in one page table.
fn shmem_written() -> String {
    [
        system("transparent_hugepage.enabled = \"never\""),
        common::mmap("shm", "shmem", "2M", "shared = true\nat = 0x400000000000"),
        touch("shm", "write", ""),
    ]
    .concat()
}

#[test]
fn collapse_of_a_regular_file_is_einval() {
    // thp_vma_allowable_order(TVA_FORCED_COLLAPSE) for a file VMA that is
    // not shmem ends in file_thp_enabled(), false without
    // CONFIG_READ_ONLY_THP_FOR_FS: madvise_collapse() returns -EINVAL
    // before any scan. With `errno = "EINVAL"` the step expects just that,
    // and the run goes on with nothing allocated or scanned.
    let map = [
        system("transparent_hugepage.enabled = \"always\""),
        common::file("data", "2M", "fill = \"cold\""),
        common::mmap_file("map", "data", "2M", "prot = \"r\"\nat = 0x400000000000"),
        touch("map", "read", ""),
        phase("collapse"),
    ]
    .concat();
    assert_fails_with(&(map.clone() + &madvise("map", "collapse", "")), "EINVAL");
    let r = run(&(map + &madvise("map", "collapse", "errno = \"EINVAL\"")));
    assert_eq!(c(&r, "collapse", "thp_collapse_alloc"), 0);
    assert_eq!(c(&r, "collapse", "huge_memory:mm_khugepaged_scan_file"), 0);
}

#[test]
fn an_expected_errno_that_does_not_come_fails_the_run() {
    // 512 written anon pages collapse (SCAN_SUCCEED): the call returns 0,
    // so a step expecting EINVAL fails the run, saying so.
    let text = written("never", "") + &madvise("heap", "collapse", "errno = \"EINVAL\"");
    let what = common::failed_syscall(&text);
    assert!(
        what.contains("succeeded where the step expects EINVAL"),
        "{what}"
    );
}

#[test]
fn shmem_collapse_of_a_full_range_copies_every_page() {
    // collapse_file() finds 512 present order-0 folios (nr_none 0): one
    // PMD-size folio is allocated, each page copied (512) and none zeroed;
    // the 512 old folios are unmapped (try_to_unmap(), one PTE each) and
    // freed. retract_page_tables() takes the emptied table out of the one
    // mapping (pgtable_free 1) and collapse_pte_mapped_thp() finds the PMD
    // none and installs it (thp_file_mapped 1). No fault.
    let r = run(&(shmem_written() + &phase("collapse") + &madvise("shm", "collapse", "")));
    assert_eq!(c(&r, "collapse", "thp_collapse_alloc"), 1);
    assert_eq!(c(&r, "collapse", "sim/page_copy"), 512);
    assert_eq!(c(&r, "collapse", "sim/page_zero"), 0);
    assert_eq!(c(&r, "collapse", "pgfree"), 512);
    assert_eq!(c(&r, "collapse", "sim/pgtable_free"), 1);
    assert_eq!(c(&r, "collapse", "thp_file_mapped"), 1);
    assert_eq!(c(&r, "collapse", "minor-faults"), 0);
    assert_eq!(folios(&r, "collapse", "shm"), hist(&[("2048kB", 1)]));
}

#[test]
fn shmem_collapse_retracts_every_mappers_table() {
    // A forked child maps the same shmem (a shared VMA: fork copies no
    // PTEs, vma_needs_copy()) and reads it, faulting its own page table
    // in. The parent's collapse unmaps the 512 folios from both, and
    // retract_page_tables() walks i_mmap: neither VMA has an anon_vma and
    // both hold the whole aligned range, so both tables are taken out
    // (two pmdp_collapse_flush(), pgtable_free 2). Only the caller's range
    // is mapped again, by collapse_pte_mapped_thp() (thp_file_mapped 1).
    let text = [
        shmem_written(),
        step("fork"),
        common::child(&touch("shm", "read", "")),
        phase("collapse"),
        madvise("shm", "collapse", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "collapse", "sim/pgtable_free"), 2);
    assert_eq!(c(&r, "collapse", "sim/pmd_clear"), 2);
    assert_eq!(c(&r, "collapse", "thp_file_mapped"), 1);
    assert_eq!(c(&r, "collapse", "thp_collapse_alloc"), 1);
}

#[test]
fn shmem_collapse_of_an_empty_range_is_einval() {
    // Nothing of the range was ever touched: collapse_file() finds no
    // entry at all from the first index on and stops with SCAN_TRUNCATED
    // (not whitelisted: madvise_collapse_errno() gives -EINVAL) after the
    // new folio was allocated (thp_collapse_alloc 1) and freed again.
    let text = [
        system("transparent_hugepage.enabled = \"never\""),
        common::mmap("shm", "shmem", "2M", "shared = true\nat = 0x400000000000"),
        phase("collapse"),
        madvise("shm", "collapse", "errno = \"EINVAL\""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "collapse", "thp_collapse_alloc"), 1);
    assert_eq!(
        c(&r, "collapse", "huge_memory:mm_khugepaged_collapse_file"),
        1
    );
    assert_eq!(c(&r, "collapse", "pgfree"), 512);
}
