//! Swap-in through the swap cache, with counts derived from the kernel's
//! rules (Linux 6.18 mm/memory.c: do_swap_page(), swap_pte_batch();
//! mm/swap_state.c: swapin_readahead(), swap_vma_readahead(),
//! swap_vma_ra_win(), swap_cluster_readahead(), swapin_nr_pages(),
//! __swapin_nr_pages(), swap_update_readahead()). Every scenario runs with
//! the invariant checker after every step.

use crate::common;

use common::*;

/// 2 MiB of written order-0 pages swapped out to zram (slots 1-512 in page
/// order, freed at once) and shared with a child by a fork, so that every
/// slot has swap count 2 and each swap-in goes through
/// `swapin_readahead()`; then `phase "in"` reads the region upwards.
/// `extra_system` goes in `[system]`, `more_swap` after the zram device.
fn shared_swapped(extra_system: &str, more_swap: &str) -> String {
    [
        system(extra_system),
        swap("zram", "64M"),
        more_swap.to_string(),
        anon_written("a", "2M"),
        madvise("a", "pageout", ""),
        step("fork"),
        phase("in"),
        touch("a", "read", ""),
    ]
    .concat()
}

/// page-cluster 0: no window at all (`swap_vma_ra_win()` returns 1), each
/// page is its own major fault.
#[test]
fn page_cluster_0_reads_one_page_per_fault() {
    let r = run(&shared_swapped("vm.page_cluster = 0", ""));
    assert_counters(
        &r,
        "in",
        "pgmajfault=512 pgfault=512 pswpin=512 swap_ra=0 swap_ra_hit=0",
    );
}

/// A rotational area anywhere (`nr_rotate_swap`) turns VMA readahead off:
/// cluster readahead by slot, page-cluster 1 (blocks of 2). The machine-wide
/// history starts at 4 hits. Slot 1: 4 + 2 → 8, capped at 2: block 0-1, cut
/// to slot 1 (the header), nothing read ahead, and as hits were not 0 the
/// previous offset stays 0. Slot 2: no hits, not next to 0: 1 page (half the
/// last window is 1). Slot 3: no hits, next to 2: block 2-3, slot 2 still
/// cached (the child's PTE keeps it): nothing read ahead. Slot 4: next to 3:
/// block 4-5, slot 5 read ahead; slot 5 hits; slot 6: 1 hit → 4, capped at
/// 2: block 6-7; and so on to slot 512 (block 512-513, slot 513 unused).
/// Majors: 1, 2, 3 and the 255 even slots 4-512 = 258; read ahead: the odd
/// slots 5-511 = 254, all hit; minor faults 512 - 258 = 254.
#[test]
fn rotational_area_selects_cluster_readahead() {
    let rot = "[[system.swap]]\nkind = \"block\"\nsize = \"64M\"\nrotational = true\n";
    let r = run(&shared_swapped("vm.page_cluster = 1", rot));
    assert_counters(
        &r,
        "in",
        "pgmajfault=258 pgfault=512 swap_ra=254 swap_ra_hit=254 pswpin=512",
    );
    // The same without the rotational area: VMA readahead, windows of 2
    // from the fault: every even page major (256), every odd one a hit.
    let r = run(&shared_swapped("vm.page_cluster = 1", ""));
    assert_counters(&r, "in", "pgmajfault=256 swap_ra=256 swap_ra_hit=256");
}

/// A read downwards: VMA readahead follows the direction. Page 511 first:
/// no history, window 8 centred (3 pages before): 508-511 inside the VMA's
/// PMD block end, 3 read ahead; 510, 509, 508 hit; page 507 is just below
/// the last hit address (508): 3 hits → 8, the window ends at the fault:
/// 500-507, 7 read ahead; then every 8 pages. Majors: 511 and 507 - 8k for
/// k = 0..63 (507 down to 3, whose window 0-3 is cut at the VMA start) = 65;
/// read ahead 3 + 63 * 7 + 3 = 447, all hit.
#[test]
fn vma_readahead_follows_a_downward_walk() {
    let mut steps = String::new();
    for p in (0..512).rev() {
        steps += &touch(
            "a",
            "read",
            &format!("offset = \"{}K\"\nlen = \"4K\"", p * 4),
        );
    }
    let text = [
        system(""),
        swap("zram", "64M"),
        anon_written("a", "2M"),
        madvise("a", "pageout", ""),
        step("fork"),
        phase("in"),
        steps,
    ]
    .concat();
    let r = run(&text);
    assert_counters(
        &r,
        "in",
        "pgmajfault=65 swap_ra=447 swap_ra_hit=447 pswpin=512",
    );
}

/// A 64 KiB swap-cache folio whose first half lies outside the VMA (the
/// first 32 KiB unmapped after swap-out) cannot be mapped whole
/// (`folio_start < vma->vm_start`): its 8 remaining pages take a fault
/// each, while the 63 whole folios take one fault each: 71 minor faults.
#[test]
fn swapcache_folio_cut_by_the_vma_maps_page_by_page() {
    let text = [
        system(&mthp(64, "always")),
        swap("block", "64M"),
        anon_written("a", "4M"),
        madvise("a", "pageout", ""),
        "[[step]]\nop = \"munmap\"\nregion = \"a\"\nlen = \"32K\"\n".to_string(),
        phase("in"),
        touch("a", "read", "offset = \"32K\""),
    ]
    .concat();
    let r = run(&text);
    assert_counters(&r, "in", "pgfault=71 pgmajfault=0 pswpin=0");
    assert_eq!(folios(&r, "in", "a"), hist(&[("64kB", 64)]));
}
