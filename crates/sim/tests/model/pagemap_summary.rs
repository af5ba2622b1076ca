//! The per-region pagemap summary (pages present / swapped / file / exclusive),
//! derived from `pte_to_pagemap_entry()`, fs/proc/task_mmu.c (pagemap bits 63,
//! 62, 61, 56 on a CONFIG_PAGE_MAPCOUNT kernel).

use crate::common;

use common::*;

/// 2 MiB of MADV_HUGEPAGE anon memory, zram swap, on a 256 MiB machine.
fn base() -> String {
    [
        system_mem("256M", ""),
        swap("zram", "16M"),
        mmap("a", "anon", "2M", "madvise = [\"hugepage\"]"),
    ]
    .concat()
}

/// Run `setup` on a 256 MiB machine, then `step` in phase `name`.
fn measure(setup: &str, name: &str, step: &str) -> foliosim_report::Report {
    let system = system_mem("256M", "");
    run(&[system, setup.to_owned(), phase(name), step.to_owned()].concat())
}

/// A read of a MADV_HUGEPAGE region maps the huge zero PMD: 512 present pages
/// with PM_FILE (the huge zero folio is not anon) and no PM_MMAP_EXCLUSIVE
/// (`pagemap_pmd_range()`, fs/proc/task_mmu.c; observed flags 0x140).
#[test]
fn huge_zero_pmd_is_present_and_file() {
    let text = [base(), phase("r"), touch("a", "read", "len = \"4K\"")].concat();
    let r = run(&text);
    assert_eq!(pages(&r, "r", "a", "present"), 512);
    assert_eq!(pages(&r, "r", "a", "file"), 512);
    assert_eq!(pages(&r, "r", "a", "exclusive"), 0);
}

/// A written PMD THP: 512 present, anon (no PM_FILE), exclusive (precise
/// mapcount of the head = entire mapcount 1). After fork the child maps the PMD
/// too: nothing is exclusive (`copy_present_ptes()`, mm/memory.c;
/// `pte_to_pagemap_entry()`, fs/proc/task_mmu.c); after the child exits the
/// pages are exclusive again.
#[test]
fn pmd_thp_exclusive_until_fork() {
    let text = [
        base(),
        touch("a", "write", "len = \"4K\""),
        phase("alone"),
        phase("forked"),
        step("fork"),
        phase("exited"),
        step("wait"),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(pages(&r, "alone", "a", "exclusive"), 512);
    assert_eq!(pages(&r, "alone", "a", "file"), 0);
    assert_eq!(pages(&r, "forked", "a", "exclusive"), 0);
    assert_eq!(pages(&r, "forked", "a", "present"), 512);
    assert_eq!(pages(&r, "exited", "a", "exclusive"), 512);
}

/// MADV_PAGEOUT of 4 KiB folios to zram leaves swap PTEs: PM_SWAP on every
/// page, nothing present (`pte_to_pagemap_entry()`, fs/proc/task_mmu.c).
#[test]
fn paged_out_pages_are_swapped() {
    let setup = swap("zram", "16M") + &anon_written("a", "1M");
    let r = measure(&setup, "out", &madvise("a", "pageout", ""));
    assert_eq!(pages(&r, "out", "a", "swapped"), 256);
    assert_eq!(pages(&r, "out", "a", "present"), 0);
}

/// The small zero page: present, not file, not exclusive
/// (`pte_to_pagemap_entry()`, fs/proc/task_mmu.c: only bit 63 + the PFN,
/// observed 0x100 in bits 55-63).
#[test]
fn small_zero_page_is_only_present() {
    let r = measure(&mmap_anon("a", "64K"), "r", &touch("a", "read", ""));
    assert_eq!(pages(&r, "r", "a", "present"), 16);
    assert_eq!(pages(&r, "r", "a", "file"), 0);
    assert_eq!(pages(&r, "r", "a", "exclusive"), 0);
}
