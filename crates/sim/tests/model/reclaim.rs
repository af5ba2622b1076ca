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
         sim/swap_pte_write=512 vmscan:mm_vmscan_reclaim_pages=1 nr_swapcached=512",
    );
    // Async write-out on a block device: the folios stay in the swap cache,
    // unmapped (`shrink_folio_list()`, mm/vmscan.c; NR_SWAPCACHE +1 a page
    // in `__swap_cache_add_folio()`, nothing frees them after their write
    // ends), so nothing is mapped any more.
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
         pswpout=512 tlb:tlb_flush=1024 nr_swapcached=512",
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
    // Freed at once, so the swap cache is as before; swap-in of a slot
    // only this mapping holds skips the swap cache on a synchronous device
    // (`do_swap_page()`, SWP_SYNCHRONOUS_IO).
    assert_eq!(c(&r, "out", "nr_swapcached"), 0);
    assert_counters(
        &r,
        "in",
        "major-faults=32 pgmajfault=32 hugepages-64kB/swpin=32 pswpin=512 nr_swapcached=0",
    );
    assert_eq!(folios(&r, "in", "a"), hist(&[("64kB", 32)]));
}

/// A block device is not synchronous: swap-in is order 0 through the swap cache
/// (`do_swap_page()`, mm/memory.c); the folios written out are still in the
/// swap cache (async write-out keeps them), so every touch is a minor fault.
/// A read fault leaves each folio in the swap cache, as swap is far from
/// half full (`should_try_to_free_swap()`, mm/memory.c).
#[test]
fn block_swap_in_hits_the_swap_cache() {
    let text = pageout("never", "block", "") + &phase("in") + &touch("a", "read", "");
    let r = run(&text);
    assert_counters(
        &r,
        "in",
        "pgfault=512 major-faults=0 pswpin=0 nr_swapcached=0",
    );
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

/// 1 MiB of anon memory written (256 pages), paged out to a swap file whose
/// device writes `rate` bytes per second (`machine.swap_write_rate`), then
/// `after`.
fn pageout_on_a_slow_device(rate: &str, after: &str) -> String {
    pageout_on_a_device(&format!("machine.swap_write_rate = \"{rate}\"\n"), after)
}

/// The same pageout on a swap file whose device the `machine.*` lines of
/// `device` describe.
fn pageout_on_a_device(device: &str, after: &str) -> String {
    [
        system_mem("256M", device),
        swap("file", "64M"),
        anon_written("a", "1M"),
        phase("out"),
        madvise("a", "pageout", ""),
        after.to_string(),
    ]
    .concat()
}

/// Writes in flight end on the device's schedule (`end_swap_bio_write()` →
/// `folio_end_writeback()`, mm/page_io.c; mm/swap.c:
/// `folio_rotate_reclaimable()`). At 4,096,000 bytes per second a page
/// takes 1 ms; with a fault priced at 1 ms and nothing else, the
/// workload's clock is 1 ms per fault. The 256 setup faults put the
/// MADV_PAGEOUT at 256 ms, so its writes, queued one after another,
/// end at 257, 258, ... 512 ms.
/// * "out": `pageout()` submits 256 writes and MADV_PAGEOUT returns with
///   all of them in flight: pswpout = 256, nr_writeback +256, nothing
///   rotated yet.
/// * "wait": 128 write faults on a new region. A fault counts its pgfault
///   when it is done (`mm_account_fault()`), so fault j allocates at
///   256 + (j - 1) ms and ends the writes due by then: j - 1 of them.
///   By the 128th, 127 writes have ended; each folio is clean, unmapped
///   and on the LRU with PG_reclaim, so each is rotated (pgrotated = 127)
///   and nr_writeback falls by 127.
/// * "rest": 200 more faults allocate from 384 to 583 ms, past the last
///   write's end: the other 129 end and rotate.
#[test]
fn swap_writes_end_on_the_devices_schedule() {
    let after = [
        phase("wait"),
        anon_written("b", "512K"),
        phase("rest"),
        anon_written("c", "800K"),
    ]
    .concat();
    let r = run_priced(
        &pageout_on_a_slow_device("4096000", &after),
        &[("pgfault", 1_000_000.0)],
    );
    assert_counters(&r, "out", "pswpout=256 nr_writeback=256 pgrotated=0");
    assert_counters(&r, "wait", "pswpout=0 nr_writeback=-127 pgrotated=127");
    assert_counters(&r, "rest", "pswpout=0 nr_writeback=-129 pgrotated=129");
}

/// A write that ends while its folio is still isolated by reclaim misses
/// the rotation: `folio_end_writeback()` clears PG_reclaim, but
/// `folio_rotate_reclaimable()` moves only a folio on the LRU (mm/swap.c),
/// so the folio goes back to the head of the inactive list, clean and in
/// the swap cache, and is not reclaimed by the next pass.
/// At 4,096,000,000 bytes per second a page takes 1 µs. Faults and
/// pswpout are priced 1 ms each; a fault counts when it is done and
/// pswpout as each write is submitted (`swap_writeout()`). The 256 setup
/// faults take the clock to 256 ms, so the k-th of the 256 writes is
/// submitted at 256 + k ms and ends 1 µs later. MADV_PAGEOUT puts the
/// folios back at 512 ms (`reclaim_pages()`): writes 1 to 255 have ended
/// by then, off the LRU (nr_writeback +1, nothing rotated). The first
/// fault after allocates at 512 ms, the second at 513 ms, which ends the
/// last write with its folio on the LRU: rotated.
#[test]
fn a_write_ending_before_the_putback_is_not_rotated() {
    let after = [phase("after"), anon_written("b", "8K")].concat();
    let r = run_priced(
        &pageout_on_a_slow_device("4096000000", &after),
        &[("pgfault", 1_000_000.0), ("pswpout", 1_000_000.0)],
    );
    assert_counters(&r, "out", "pswpout=256 nr_writeback=1 pgrotated=0");
    assert_counters(&r, "after", "pswpout=0 nr_writeback=-1 pgrotated=1");
}

/// A device latency (`machine.swap_write_latency_ns`, no rate) delays
/// each write's end without queueing the writes behind one another.
/// Priced as in the test above, the k-th write is submitted at 256 + k ms
/// and, 10.5 ms later, ends at 266.5 + k ms (a queue would end them 10.5
/// ms apart). MADV_PAGEOUT puts the folios back at 512 ms, by which
/// writes 1 to 245 have ended while isolated: nothing rotated, 11 still
/// under writeback. The faults after allocate at 512, 513, ... ms; the
/// one at 523 ms ends the last write (522.5 ms), so 12 faults (48 KiB)
/// end all 11, each rotating its folio, now back on the LRU.
#[test]
fn a_device_latency_overlaps_the_writes() {
    let after = [phase("after"), anon_written("b", "48K")].concat();
    let r = run_priced(
        &pageout_on_a_device("machine.swap_write_latency_ns = 10500000\n", &after),
        &[("pgfault", 1_000_000.0), ("pswpout", 1_000_000.0)],
    );
    assert_counters(&r, "out", "pswpout=256 nr_writeback=11 pgrotated=0");
    assert_counters(&r, "after", "pswpout=0 nr_writeback=-11 pgrotated=11");
}

/// A folio reclaim meets again while its write is still in flight is
/// activated, not written again (`shrink_folio_list()`, mm/vmscan.c: a
/// folio under writeback, case 2 for reclaim without a cgroup target:
/// PG_reclaim set, `activate_locked`). With no prices the workload's clock
/// stands still and no write ever ends.
/// * "out": 256 writes in flight.
/// * "in": reading the region maps each folio from the swap cache: 256
///   minor faults, no swap-in I/O (pswpin = 0, no major fault); kpageflags
///   shows every page in the swap cache and under writeback
///   (`stable_page_flags()`: KPF_SWAPCACHE, KPF_WRITEBACK).
/// * "again": MADV_PAGEOUT isolates the 256 mapped folios and
///   `reclaim_pages()` finds each under writeback before it looks at
///   references or unmaps: 256 activations (pgactivate), no new write,
///   and the folios stay mapped.
#[test]
fn a_folio_under_writeback_is_activated_not_written_again() {
    let after = [
        phase("in"),
        touch("a", "read", ""),
        pagemap("a", "kpageflags = true"),
        phase("again"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run_priced(&pageout_on_a_slow_device("4096000", &after), &[]);
    assert_counters(&r, "out", "pswpout=256 nr_writeback=256");
    assert_counters(
        &r,
        "in",
        "minor-faults=256 major-faults=0 pswpin=0 pagemap/a/kpf/swapcache=256 \
         pagemap/a/kpf/writeback=256",
    );
    assert_counters(
        &r,
        "again",
        "pgactivate=256 pswpout=0 nr_writeback=0 pgrotated=0",
    );
    assert_eq!(folios(&r, "again", "a"), hist(&[("4kB", 256)]));
}

/// With the rate at 0 (the default) a write ends as soon as reclaim has put
/// its folio back on the LRU, which rotates it at once: the same pageout
/// leaves nothing under writeback and rotates all 256 folios in "out".
#[test]
fn without_a_rate_swap_writes_end_at_once() {
    let r = run_priced(&pageout_on_a_slow_device("0", ""), &[]);
    assert_counters(&r, "out", "pswpout=256 nr_writeback=0 pgrotated=256");
}

/// A shmem swap-in of a folio whose write is still in flight waits for
/// it (`shmem_swapin_folio()` → `folio_wait_writeback()`). 64 written
/// shmem pages paged out to a swap file whose device takes 1 ms a page,
/// with no prices: the workload's clock moves only by its waits. The 64
/// writes, queued back to back from time 0, end at 1, 2, ... 64 ms.
/// Reading the pages back finds each in the swap cache (no swap-in I/O,
/// no major fault) under writeback, and waits until its write has ended:
/// 64 ms of waiting in all, whatever order the writes went in, since the
/// last wait ends at the last write's end. Each ended write rotates its
/// folio (clean, on the LRU, PG_reclaim): pgrotated 64.
#[test]
fn a_shmem_swap_in_waits_for_the_write() {
    let text = [
        system_mem("256M", "machine.swap_write_rate = \"4096000\"\n"),
        swap("file", "16M"),
        mmap("s", "shmem", "256K", "shared = true"),
        touch("s", "write", ""),
        phase("out"),
        madvise("s", "pageout", ""),
        phase("in"),
        touch("s", "read", ""),
    ]
    .concat();
    let r = run_priced(&text, &[]);
    assert_counters(&r, "out", "pswpout=64 nr_writeback=64 sim/throttled_ns=0");
    assert_counters(
        &r,
        "in",
        "pswpin=0 major-faults=0 nr_writeback=-64 pgrotated=64 sim/throttled_ns=64000000",
    );
}
