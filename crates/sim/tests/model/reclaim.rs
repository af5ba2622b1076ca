//! MADV_PAGEOUT, swap-out, swap-in and fork interactions, with counts
//! derived from the kernel's rules (mm/madvise.c, mm/vmscan.c, mm/rmap.c,
//! mm/swapfile.c), each cited next to its number.
//! Every scenario runs with the invariant checker (swap counts against swap
//! PTEs and the swap cache, mapcounts, RSS) after every step.

use crate::common;

use common::*;

/// 2 MiB of anon memory written, then paged out in phase "out".
fn pageout(mthp64: &str, swap_kind: &str, extra: &str) -> String {
    [
        system_mem("256M", &(mthp(64, mthp64) + extra)),
        swap(swap_kind, "64M"),
        anon_written("a", "2M"),
        phase("out"),
        madvise("a", "pageout", ""),
    ]
    .concat()
}

/// 4 KiB folios (`reclaim_pages()`, mm/vmscan.c; measured on Linux 6.18.44):
/// one walk per PMD, 512 folios isolated and swapped; per page one PTE clear,
/// one immediate local flush (single-CPU mm → no deferral,
/// `should_defer_flush()`, mm/rmap.c), one swap_duplicate, two rss_stat
/// updates, one swap-PTE write.
#[test]
fn pageout_4k_folios() {
    let r = run(&pageout("never", "block", ""));
    assert_counters(
        &r,
        "out",
        "pswpout=512 tlb:tlb_flush=512 sim/invlpg=512 sim/rss_stat_update=1024 \
         sim/swap_pte_write=512 vmscan:mm_vmscan_reclaim_pages=1",
    );
    // Async write-out on a block device: the folios stay in the swap cache,
    // unmapped (`shrink_folio_list()`, mm/vmscan.c), so nothing is mapped any
    // more.
    assert_eq!(folios(&r, "out", "a"), hist(&[]));
}

/// 64 KiB folios on a swap file: the order-4 allocation is refused (no
/// SWP_BLKDEV, `folio_alloc_swap()`, mm/swapfile.c), the folio is split
/// (swpout_fallback and split +1 each per folio, `shrink_folio_list()`,
/// mm/vmscan.c) and its 16 pages go out as order 0; the split's migration
/// entries cost one more flush per page (`try_to_migrate_one()`, mm/rmap.c: 2
/// per page).
#[test]
fn pageout_64k_on_a_swap_file_splits() {
    let r = run(&pageout("always", "file", ""));
    assert_counters(
        &r,
        "out",
        "hugepages-64kB/swpout_fallback=32 hugepages-64kB/split=32 hugepages-64kB/swpout=0 \
         pswpout=512 tlb:tlb_flush=1024",
    );
}

/// 64 KiB folios on a block device, vanilla 6.18: one order-4 allocation
/// per folio, but try_to_unmap_one() still loops per PTE (mm/rmap.c): 512
/// flushes, 512 pvmw iterations, swpout[64K] +1 per folio.
#[test]
fn pageout_64k_on_a_block_device_vanilla() {
    let r = run(&pageout("always", "block", ""));
    assert_counters(
        &r,
        "out",
        "hugepages-64kB/swpout=32 hugepages-64kB/swpout_fallback=0 pswpout=512 tlb:tlb_flush=512 \
         sim/pvmw_iterations=512 sim/swap_count_lock=512 sim/rss_stat_update=1024",
    );
    // Swap-cache folios are not queued for deferred split
    // (`try_to_unmap_one()`, mm/rmap.c).
    assert_eq!(c(&r, "out", "hugepages-64kB/split_deferred"), 0);
}

/// The seed-000 switch batches the whole folio (`try_to_unmap_one()`,
/// mm/rmap.c): one clear call, one flush of 16 pages, one swap-count lock, two
/// rss_stat updates and one rmap removal per folio; the invalidations stay 16
/// INVLPGs (≤ 33 pages).
#[test]
fn pageout_64k_with_seed000_batching() {
    let r = run(&pageout(
        "always",
        "block",
        "series.batch_anon_unmap = true",
    ));
    assert_counters(
        &r,
        "out",
        "tlb:tlb_flush=32 sim/invlpg=512 sim/pvmw_iterations=32 sim/swap_count_lock=32 \
         sim/rss_stat_update=64 sim/rmap_remove=32 sim/swap_pte_write=512 \
         hugepages-64kB/swpout=32",
    );
}

/// arm64, 64 KiB folios mapped contpte: vanilla unfolds every block on the
/// first single-PTE clear and issues one deferred TLBI per PTE; the batch
/// clears whole blocks without unfolding and issues one range TLBI per
/// folio (`contpte_try_unfold()`, arch/arm64/include/asm/pgtable.h).
#[test]
fn pageout_64k_arm64_unfolds_only_without_batching() {
    let vanilla = run_arch(&pageout("always", "block", ""), "arm64");
    assert_counters(&vanilla, "out", "sim/contpte_unfold=32 sim/tlbi_page=512");
    let batched = run_arch(
        &pageout("always", "block", "series.batch_anon_unmap = true"),
        "arm64",
    );
    assert_counters(
        &batched,
        "out",
        "sim/contpte_unfold=0 sim/tlbi_page=0 sim/tlbi_range=32",
    );
}

/// zram is synchronous: the written folio is freed in the same pass
/// (`swap_writeout()`, mm/page_io.c); reading it back is one major fault per
/// folio, and with 64K enabled a whole 64 KiB folio comes back
/// (`do_swap_page()`, mm/memory.c): swpin[64K] +1.
#[test]
fn zram_swap_in_brings_back_whole_mthp() {
    let text = pageout("always", "zram", "") + &phase("in") + &touch("a", "read", "");
    let r = run(&text);
    assert_eq!(c(&r, "out", "pswpout"), 512);
    assert_counters(
        &r,
        "in",
        "major-faults=32 pgmajfault=32 hugepages-64kB/swpin=32 pswpin=512",
    );
    assert_eq!(folios(&r, "in", "a"), hist(&[("64kB", 32)]));
}

/// A block device is not synchronous: swap-in is order 0 through the swap cache
/// (`do_swap_page()`, mm/memory.c); the folios written out are still in the
/// swap cache (async write-out keeps them), so every touch is a minor fault.
#[test]
fn block_swap_in_hits_the_swap_cache() {
    let text = pageout("never", "block", "") + &phase("in") + &touch("a", "read", "");
    let r = run(&text);
    assert_counters(&r, "in", "pgfault=512 major-faults=0 pswpin=0");
}

/// After fork every anon page is mapped twice, so MADV_PAGEOUT skips it
/// (folio_mapcount != folio_nr_pages, `madvise_cold_or_pageout_pte_range()`,
/// mm/madvise.c): nothing is swapped.
#[test]
fn fork_then_pageout_skips_shared_folios() {
    let text = [
        system_mem("256M", ""),
        swap("zram", "64M"),
        anon_written("a", "2M"),
        step("fork"),
        phase("out"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run(&text);
    assert_counters(&r, "out", "pswpout=0 sim/lru_isolate=0");
}

/// munmap of swapped-out memory drops every swap reference (the checker
/// verifies the swap map against the remaining swap PTEs after each step).
#[test]
fn munmap_frees_swap_slots() {
    let text = pageout("always", "zram", "") + &munmap("a");
    let r = run(&text);
    assert_eq!(c(&r, "out", "pswpout"), 512);
}

/// Without swap, anon folios cannot be paged out: they stay mapped.
#[test]
fn pageout_without_swap_keeps_anon_folios() {
    let text = [
        system_mem("256M", ""),
        anon_written("a", "2M"),
        phase("out"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "out", "pswpout"), 0);
    assert_eq!(folios(&r, "out", "a"), hist(&[("4kB", 512)]));
}

/// A 64 KiB folio whose pages carry different exclusive markers is swapped
/// back in page by page. After fork and the child's exit the parent's pages
/// are mapped once but no longer PageAnonExclusive (fork cleared it); a
/// write to page 0 reuses the folio (__wp_can_reuse_large_anon_folio(): not
/// maybe-shared, mapcount == refcount) and marks only that page exclusive.
/// On zram the folio is swapped out whole (vanilla try_to_unmap_one()
/// writes one swap PTE per page, carrying each page's marker: page 0
/// exclusive, pages 1..15 not). The write fault on page 5 finds swap count
/// 1 on a synchronous device, so it skips the swap cache, but
/// can_swapin_thp() refuses order 4: swap_pte_batch() compares whole swap
/// PTEs, marker included, and stops at page 1. So one order-0 folio is
/// read: 1 major fault, pswpin 1, no 64 kB swpin; the fresh folio is
/// certainly exclusive, so it is mapped writable (no COW after it).
#[test]
fn swap_in_batch_needs_one_exclusive_marker() {
    let text = [
        system_mem("256M", &mthp(64, "always")),
        swap("zram", "64M"),
        mmap_anon("a", "2M"),
        touch("a", "write", "len = \"64K\""),
        step("fork"),
        step("wait"),
        touch("a", "write", "len = \"4K\""),
        phase("out"),
        madvise("a", "pageout", "len = \"64K\""),
        phase("in"),
        touch("a", "write", "offset = \"20K\"\nlen = \"4K\""),
    ]
    .concat();
    let r = run(&text);
    assert_counters(&r, "out", "hugepages-64kB/swpout=1 pswpout=16");
    assert_counters(
        &r,
        "in",
        "pgmajfault=1 pswpin=1 hugepages-64kB/swpin=0 pgfault=1",
    );
}

/// The copies a private file mapping's write faults made are anon folios
/// of the VMA's anon_vma, and the rmap walk finds that file VMA through
/// it: MADV_PAGEOUT swaps all 16 out (zram: synchronous, so they are freed
/// at once), and reading them back is 16 major faults reading 16 pages
/// (order 0: mTHP is off), never the file's page cache.
#[test]
fn private_file_cow_copies_are_paged_out_through_the_anon_vma() {
    let text = [
        system_mem("256M", "transparent_hugepage.enabled = \"never\""),
        swap("zram", "64M"),
        file("f", "1M", "fill = \"write\""),
        mmap_file("m", "f", "1M", "prot = \"rw\""),
        touch("m", "write", "len = \"64K\""),
        phase("out"),
        madvise("m", "pageout", "len = \"64K\""),
        phase("in"),
        touch("m", "read", "len = \"64K\""),
    ]
    .concat();
    let r = run(&text);
    assert_counters(&r, "out", "pswpout=16 sim/rmap_walk=16");
    assert_counters(&r, "in", "pgmajfault=16 pswpin=16");
}
