//! The per-region pagemap summary (pages present / swapped / file / exclusive),
//! derived from `pte_to_pagemap_entry()`, fs/proc/task_mmu.c (pagemap bits 63,
//! 62, 61, 56 on a CONFIG_PAGE_MAPCOUNT kernel).

mod common;

use common::*;

const BASE: &str = r#"
[system]
memory = "256M"
[[system.swap]]
kind = "zram"
size = "16M"
[[step]]
op = "mmap"
region = "a"
kind = "anon"
size = "2M"
madvise = ["hugepage"]
"#;

/// A read of a MADV_HUGEPAGE region maps the huge zero PMD: 512 present pages
/// with PM_FILE (the huge zero folio is not anon) and no PM_MMAP_EXCLUSIVE
/// (`pagemap_pmd_range()`, fs/proc/task_mmu.c; observed flags 0x140).
#[test]
fn huge_zero_pmd_is_present_and_file() {
    let text = format!("{BASE}[[step]]\nop = \"phase\"\nname = \"r\"\n[[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"read\"\nlen = \"4K\"\n");
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
    let text = format!(
        "{BASE}[[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\nlen = \"4K\"\n\
         [[step]]\nop = \"phase\"\nname = \"alone\"\n\
         [[step]]\nop = \"phase\"\nname = \"forked\"\n[[step]]\nop = \"fork\"\n\
         [[step]]\nop = \"phase\"\nname = \"exited\"\n[[step]]\nop = \"wait\"\n"
    );
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
    let text = "[system]\nmemory = \"256M\"\n[[system.swap]]\nkind = \"zram\"\nsize = \"16M\"\n\
        [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"1M\"\n\
        [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n\
        [[step]]\nop = \"phase\"\nname = \"out\"\n[[step]]\nop = \"madvise\"\nregion = \"a\"\nadvice = \"pageout\"\n";
    let r = run(text);
    assert_eq!(pages(&r, "out", "a", "swapped"), 256);
    assert_eq!(pages(&r, "out", "a", "present"), 0);
}

/// The small zero page: present, not file, not exclusive
/// (`pte_to_pagemap_entry()`, fs/proc/task_mmu.c: only bit 63 + the PFN,
/// observed 0x100 in bits 55-63).
#[test]
fn small_zero_page_is_only_present() {
    let text = "[system]\nmemory = \"256M\"\n[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"64K\"\n\
        [[step]]\nop = \"phase\"\nname = \"r\"\n[[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"read\"\n";
    let r = run(text);
    assert_eq!(pages(&r, "r", "a", "present"), 16);
    assert_eq!(pages(&r, "r", "a", "file"), 0);
    assert_eq!(pages(&r, "r", "a", "exclusive"), 0);
}
