//! The mmu_gather's capacity (mm/mmu_gather.c, Linux 6.18): how many TLB
//! flushes a large zap takes.
//!
//! The gather holds MMU_GATHER_BUNDLE = 8 pointers on the stack, then batch
//! pages of MAX_GATHER_BATCH = (4096 - 16) / 8 = 510 pointers, at most
//! MAX_GATHER_BATCH_COUNT = 10000 / 510 = 19 of them. A batch is full one
//! pointer early (`batch->nr >= batch->max - 1`), so the gather takes
//! 7 + 19 * 509 = 9678 order-0 pages (one pointer each) before
//! __tlb_remove_folio_pages_size() says it is full; zap_pte_range() then
//! flushes and carries on with the emptied batches. A large folio takes
//! two pointers per batch of its pages (page, nr_pages).

use crate::common;

use common::*;

/// Pages one gather holds before a forced flush, derived above.
const GATHER_PAGES: u64 = 7 + 19 * 509;

fn munmap_scenario(size: &str, extra_system: &str) -> String {
    [
        system_mem(
            "2G",
            &format!("transparent_hugepage.enabled = \"never\"\n{extra_system}"),
        ),
        anon_written("a", size),
        phase("unmap"),
        "[[step]]\nop = \"munmap\"\nregion = \"a\"\n".to_string(),
    ]
    .concat()
}

#[test]
fn munmap_of_order0_pages_flushes_once_per_full_gather() {
    // 256 MiB = 65536 pages: floor(65536 / 9678) = 6 forced flushes, then
    // the rest (7468 pages) at tlb_finish_mmu(): 7 flushes, as the host
    // counts (tlb:tlb_flush in `foliosim compare
    // scenarios/calibrate/munmap-4k.toml`).
    let r = run(&munmap_scenario("256M", ""));
    assert_eq!(65536 / GATHER_PAGES, 6);
    assert_counters(&r, "unmap", "tlb:tlb_flush=7 sim/tlb_gather_flush=7");
}

#[test]
fn a_gather_exactly_full_flushes_at_the_full_point_only() {
    // 9678 pages fill the gather exactly: the forced flush covers them all
    // and tlb_finish_mmu() has no cleared entry left, but the freed page
    // tables still need their flush (tlb->freed_tables): 2 flushes. One
    // page less never fills it: 1 flush. (The host agrees at this
    // boundary: `foliosim compare` of a 9677-page munmap gives 1
    // tlb:tlb_flush natively, of a 9678-page one 2.)
    let exact = format!("{}K", GATHER_PAGES * 4);
    let less = format!("{}K", (GATHER_PAGES - 1) * 4);
    assert_eq!(
        c(&run(&munmap_scenario(&less, "")), "unmap", "tlb:tlb_flush"),
        1
    );
    assert_eq!(
        c(&run(&munmap_scenario(&exact, "")), "unmap", "tlb:tlb_flush"),
        2
    );
    assert_eq!(
        c(
            &run(&munmap_scenario(&exact, "")),
            "unmap",
            "sim/tlb_gather_flush"
        ),
        1
    );
}

#[test]
fn large_folios_take_two_pointers_and_fill_the_gather_later() {
    // 64 KiB folios: one batch of 16 pages per folio, two pointers each.
    // The bundle is full after 4 folios (8 >= 7), a batch page after 255
    // (510 >= 509), so the gather holds 4 + 19 * 255 = 4849 folios =
    // 77584 pages: 256 MiB (4096 folios) never fills it: one flush.
    let r = run(&munmap_scenario("256M", &mthp(64, "always")));
    assert_eq!(c(&r, "unmap", "tlb:tlb_flush"), 1);
}

#[test]
fn exit_flushes_nothing_whatever_the_gather_size() {
    // exit_mmap() gathers with fullmm: the exiting mm is loaded nowhere,
    // so even a gather that fills up 6 times flushes nothing.
    let sc = [
        system_mem("2G", "transparent_hugepage.enabled = \"never\"\n"),
        anon_written("a", "256M"),
        "[[step]]\nop = \"fork\"\n".to_string(),
        "[[step.child]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n".to_string(),
        phase("exit"),
        step("wait"),
    ]
    .concat();
    let r = run(&sc);
    assert_eq!(c(&r, "exit", "tlb:tlb_flush"), 0);
}

/// munmap of a range that was never touched frees no page table and
/// clears no entry, so tlb_finish_mmu() does not flush, even when the PMD
/// table of its 1 GiB exists because a neighbour was written
/// (free_pmd_range() skips none PMD entries; only pte_free_tlb() sets
/// tlb->freed_tables). The host agrees: glibc trims every new malloc
/// arena this way (zstd -T2 made six such calls).
#[test]
fn unmapping_untouched_memory_does_not_flush() {
    let text = "[[step]]\nop = \"mmap\"\nregion = \"s\"\nkind = \"anon\"\nsize = \"132K\"\n\
                at = 0x5ffff6a85000\n\
                [[step]]\nop = \"touch\"\nregion = \"s\"\naccess = \"write\"\n\
                [[step]]\nop = \"mmap\"\nregion = \"x\"\nkind = \"anon\"\nsize = \"128M\"\n\
                at = 0x5fffeea00000\n\
                [[step]]\nop = \"phase\"\nname = \"trim\"\n\
                [[step]]\nop = \"munmap\"\nregion = \"x\"\noffset = 0\nlen = \"22M\"\n";
    let r = run(text);
    assert_eq!(c(&r, "trim", "tlb:tlb_flush"), 0);
}
