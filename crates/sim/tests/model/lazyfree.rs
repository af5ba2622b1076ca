//! MADV_COLD, MADV_FREE and the reclaim of lazyfree folios, with counts derived
//! from the kernel's rules (`madvise_cold_or_pageout_pte_range()`,
//! mm/madvise.c; `shrink_folio_list()`, mm/vmscan.c; `folio_unmap_pte_batch()`,
//! mm/rmap.c and Linux 6.18 mm/madvise.c, mm/swap.c, mm/rmap.c, mm/vmscan.c).
//! Every scenario runs with the invariant checker after every step, on x86_64
//! unless it says arm64.

use crate::common;

use common::*;

/// `size` of anon memory in region "a" written (64 KiB mTHP `mthp64`, a
/// 64 MiB swap device of `swap_kind`), then `steps` (raw TOML steps).
fn anon(size: &str, mthp64: &str, swap_kind: &str, steps: &str) -> String {
    [
        system_mem("256M", &mthp(64, mthp64)),
        swap(swap_kind, "64M"),
        anon_written("a", size),
        steps.to_string(),
    ]
    .concat()
}

/// 4 MiB of order-0 anon folios: MADV_FREE marks all 1024 lazyfree
/// (`lru_lazyfree()`: pglazyfree per page) and clears their young and
/// dirty bits, gathered into one mmu_gather range flushed at
/// `tlb_end_vma()` (1024 pages > 33: one full flush). MADV_PAGEOUT then
/// isolates them (2 PMDs, 2 reclaim_pages calls) and `shrink_folio_list()`
/// skips the swap allocation (not swap-backed); `try_to_unmap_one()` clears
/// and flushes each PTE (a single-CPU mm does not defer), finds the folio
/// clean and discards it: pglazyfreed 1024, nothing written, one rss_stat
/// update per folio. A later read faults in the zero page.
#[test]
fn free_4k_then_reclaim_discards() {
    let steps = [
        phase("free"),
        madvise("a", "free", ""),
        phase("reclaim"),
        madvise("a", "pageout", ""),
        phase("read"),
        touch("a", "read", "len = \"4M\""),
    ]
    .concat();
    let r = run(&anon("4M", "never", "file", &steps));
    assert_counters(&r, "free", "pglazyfree=1024 tlb:tlb_flush=1 pgfault=0");
    assert_eq!(folios(&r, "free", "a"), hist(&[("4kB", 1024)]));
    assert_counters(
        &r,
        "reclaim",
        "pglazyfreed=1024 pswpout=0 sim/swap_alloc=0 vmscan:mm_vmscan_reclaim_pages=2 \
         tlb:tlb_flush=1024 sim/rss_stat_update=1024",
    );
    assert_eq!(folios(&r, "reclaim", "a"), hist(&[]));
    assert_counters(&r, "read", "pgfault=1024 pgmajfault=0");
}

/// Writing to half of the freed range again sets those PTEs dirty (the
/// hardware, no fault). Reclaim discards the 512 clean ones; for the 512
/// dirty ones `try_to_unmap_one()` finds the dirty bit in the cleared
/// entry, puts the entry back, makes the folio swap-backed again and gives
/// up: `shrink_folio_list()` activates it (pgactivate 512,
/// nr_lazyfree_fail). Every PTE was cleared and flushed once (1024). A
/// second MADV_PAGEOUT swaps the 512 re-dirtied folios out.
#[test]
fn free_then_redirty_keeps_the_written_half() {
    let steps = [
        madvise("a", "free", ""),
        phase("redirty"),
        touch("a", "write", "len = \"2M\""),
        phase("reclaim"),
        madvise("a", "pageout", ""),
        phase("again"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run(&anon("4M", "never", "file", &steps));
    assert_eq!(c(&r, "redirty", "pgfault"), 0);
    assert_counters(
        &r,
        "reclaim",
        "pglazyfreed=512 pgactivate=512 pswpout=0 tlb:tlb_flush=1024",
    );
    assert_eq!(folios(&r, "reclaim", "a"), hist(&[("4kB", 512)]));
    assert_counters(&r, "again", "pswpout=512 pglazyfreed=0");
    assert_eq!(folios(&r, "again", "a"), hist(&[]));
}

/// 64 KiB mTHP: MADV_FREE covers every folio whole (no split), 64 folios
/// lazyfree. Reclaim does not allocate swap, so a swap file does not split
/// them (no swpout_fallback / split), and since v6.15 a lazyfree large
/// folio is unmapped in one `folio_pte_batch()` run: one clear call, one
/// flush (16 pages ≤ 33: INVLPG each), one counter update per folio.
#[test]
fn free_64k_batched_unmap() {
    let steps = [
        phase("free"),
        madvise("a", "free", ""),
        phase("reclaim"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run(&anon("4M", "always", "file", &steps));
    assert_counters(
        &r,
        "free",
        "pglazyfree=1024 hugepages-64kB/split=0 tlb:tlb_flush=1",
    );
    assert_counters(
        &r,
        "reclaim",
        "pglazyfreed=1024 hugepages-64kB/split=0 hugepages-64kB/swpout_fallback=0 \
         tlb:tlb_flush=64 sim/invlpg=1024 sim/ttu_clear_calls=64 sim/pvmw_iterations=64 \
         sim/rss_stat_update=64 hugepages-64kB/split_deferred=0",
    );
    assert_eq!(folios(&r, "reclaim", "a"), hist(&[]));
}

/// arm64 with contpte: every 64 KiB folio is one contiguous block.
/// MADV_FREE's `contpte_clear_young_dirty_ptes()` changes the block in
/// place (no unfold), and reclaim's batched `get_and_clear_full_ptes()`
/// covers whole blocks (no unfold either); arm64 always defers the flush:
/// one pending range TLBI per folio, completed by `arch_tlbbatch_flush()`
/// every 31 freed folios and at the end of each `shrink_folio_list()` call
/// (2 PMDs: 32 folios each → flushes after folio 31 and at the end → 4).
#[test]
fn free_64k_contpte_arm64() {
    let steps = [
        phase("free"),
        madvise("a", "free", ""),
        phase("reclaim"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run_arch(&anon("4M", "always", "file", &steps), "arm64");
    assert_counters(&r, "free", "sim/contpte_unfold=0 pglazyfree=1024");
    assert_counters(
        &r,
        "reclaim",
        "sim/contpte_unfold=0 pglazyfreed=1024 sim/tlbbatch_add_pending=64 sim/tlbbatch_flush=4",
    );
    assert_eq!(folios(&r, "reclaim", "a"), hist(&[]));
}

/// Freeing part of a 64 KiB folio: `madvise_free_pte_range()` splits a
/// folio the range covers only partly (to order 0) and frees only the
/// covered pages: 4 KiB into a 64 KiB folio to 4 KiB before its end
/// leaves 14 pages; the folio's other 2 pages stay swap-backed.
#[test]
fn free_part_of_a_64k_folio_splits_it() {
    let steps = [
        phase("free"),
        madvise("a", "free", "offset = \"4K\"\nlen = \"56K\""),
    ]
    .concat();
    let r = run(&anon("64K", "always", "file", &steps));
    assert_counters(&r, "free", "hugepages-64kB/split=1 pglazyfree=14");
    assert_eq!(folios(&r, "free", "a"), hist(&[("4kB", 16)]));
}

/// A PMD-mapped THP (MADV_HUGEPAGE): MADV_FREE of the whole PMD clears its
/// young and dirty bits through `pmdp_invalidate()` (one flush) and the
/// gather adds the 2 MiB to the VMA's flush (one more); the folio becomes
/// lazyfree whole. Reclaim discards it at PMD level without splitting
/// (`unmap_huge_pmd_locked()`: one flush, no thp_split_pmd).
#[test]
fn free_pmd_thp_discarded_whole() {
    let text = [
        system_mem("256M", "transparent_hugepage.enabled = \"madvise\""),
        swap("file", "64M"),
        mmap_anon("a", "4M") + "madvise = [\"hugepage\"]\n",
        touch("a", "write", ""),
        phase("free"),
        madvise("a", "free", ""),
        phase("reclaim"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(folios(&r, "free", "a"), hist(&[("2048kB", 2)]));
    // pmdp_invalidate() per PMD (2) + the gathered range at tlb_end_vma (1).
    assert_counters(
        &r,
        "free",
        "tlb:tlb_flush=3 pglazyfree=1024 thp_split_pmd=0",
    );
    assert_counters(&r, "reclaim", "pglazyfreed=1024 thp_split_pmd=0 pswpout=0");
    // pmdp_huge_clear_flush() per THP; the deposited tables are freed.
    assert_counters(&r, "reclaim", "tlb:tlb_flush=2 sim/pgtable_free=2");
    assert_eq!(folios(&r, "reclaim", "a"), hist(&[]));
}

/// MADV_FREE over swapped-out pages drops the swap entries (a zero page is
/// cheaper than a swap-in): after MADV_PAGEOUT to a block device (async
/// write, the folios stay in the swap cache) the free clears all 1024 swap
/// PTEs, frees their slots and the cached folios, and nothing becomes
/// lazyfree.
#[test]
fn free_drops_swap_entries() {
    let steps = [
        madvise("a", "pageout", ""),
        phase("free"),
        madvise("a", "free", ""),
        phase("read"),
        touch("a", "read", "len = \"4M\""),
    ]
    .concat();
    let r = run(&anon("4M", "never", "block", &steps));
    assert_eq!(pages(&r, "free", "a", "swapped"), 0);
    assert_eq!(c(&r, "free", "pglazyfree"), 0);
    assert_counters(&r, "read", "pgmajfault=0 pswpin=0");
}

/// After fork every page is mapped twice. `madvise_free_pte_range()`
/// checks `folio_mapcount() == folio_nr_pages()` only for folios that are
/// PG_dirty or in the swap cache (and `folio_maybe_mapped_shared()` only
/// before splitting a partly covered large folio); freshly written anon
/// folios are neither, so all 256 shared order-0 folios become lazyfree
/// (6.18 behaviour). MADV_PAGEOUT then skips them (mapcount 2 ≠ 1).
#[test]
fn free_marks_clean_shared_folios_lazyfree() {
    let steps = [
        step("fork"),
        phase("free"),
        madvise("a", "free", ""),
        phase("pageout"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    let r = run(&anon("1M", "never", "file", &steps));
    assert_eq!(c(&r, "free", "pglazyfree"), 256);
    assert_counters(&r, "pageout", "pglazyfreed=0 sim/lru_isolate=0");
}

/// MADV_COLD of freshly written anon memory: every PTE young, cleared
/// with `clear_young_dirty_ptes(CYDP_CLEAR_YOUNG)` (x86: one
/// test-and-clear each), one gathered flush for the VMA; the folios start
/// on the inactive list, so `folio_deactivate()` moves nothing
/// (pgdeactivate 0). A second MADV_COLD finds no young entry: no flush.
#[test]
fn cold_anon_clears_young_bits() {
    let steps = [
        phase("cold"),
        madvise("a", "cold", ""),
        phase("again"),
        madvise("a", "cold", ""),
    ]
    .concat();
    let r = run(&anon("4M", "never", "file", &steps));
    assert_counters(
        &r,
        "cold",
        "tlb:tlb_flush=1 sim/pte_modify=1024 pgdeactivate=0",
    );
    assert_counters(&r, "again", "tlb:tlb_flush=0 sim/pte_modify=0");
}

/// MADV_COLD of active file folios: a read(2) fill marks each folio
/// accessed once (PG_referenced), and unmapping young PTEs marks it again
/// (`zap_present_folio_ptes()` → `folio_mark_accessed()`), which
/// activates it. Mapped again and read, MADV_COLD clears the young bits
/// and deactivates all 1024 pages (pgdeactivate 1024). 4 MiB file, order-0
/// folios (read_size 4K, no readahead on a MADV_RANDOM fill mapping is not
/// needed: fill = "read" reads through read(2) with readahead, so folio
/// sizes vary; pgdeactivate counts pages either way).
#[test]
fn cold_file_deactivates_active_folios() {
    let text = [
        system_mem("256M", ""),
        file("f", "4M", "fill = \"read\""),
        mmap_file("m", "f", "4M", "prot = \"r\""),
        touch("m", "read", ""),
        munmap("m"),
        mmap_file("a", "f", "4M", "prot = \"r\""),
        touch("a", "read", ""),
        phase("cold"),
        madvise("a", "cold", ""),
    ]
    .concat();
    let r = run(&text);
    assert_counters(&r, "cold", "pgdeactivate=1024 tlb:tlb_flush=1");
}

/// MADV_FREE on a file mapping fails with EINVAL.
#[test]
fn free_on_a_file_mapping_is_einval() {
    let text = [
        file("f", "64K", ""),
        mmap_file("a", "f", "64K", ""),
        madvise("a", "free", ""),
    ]
    .concat();
    let e = try_run_with(&text, &[]).unwrap_err().to_string();
    assert!(e.contains("EINVAL"), "{e}");
}

/// Global memory pressure: 96 MiB of anon memory written on a 64 MiB
/// machine (16384 pages; watermarks from `calculate_min_free_kbytes()`:
/// min_free_kbytes = int_sqrt(65536 * 16) = 1024 → min 256 pages, low 320,
/// high 384) with a 128 MiB zram device. Once an order-0 allocation finds
/// the free pages at the low watermark it wakes kswapd (`pageoutrun`),
/// which reclaims (pgscan/pgsteal_kswapd) beside the writes; direct
/// reclaim (allocstall) only if free memory still reaches the min
/// watermark. Anon is swapped out (zram: written and freed in the same
/// pass). Every written page ends up resident or in swap, and at least
/// the 8192 pages beyond the machine's size were written out.
#[test]
fn global_pressure_swaps_anon_out() {
    let text = [
        system_mem("64M", ""),
        swap("zram", "128M"),
        phase("fill"),
        anon_written("a", "96M"),
    ]
    .concat();
    for arch in ["x86_64", "arm64"] {
        let r = run_arch(&text, arch);
        let present = pages(&r, "fill", "a", "present");
        let swapped = pages(&r, "fill", "a", "swapped");
        assert_eq!(present + swapped, 24576, "{arch}");
        assert!(c(&r, "fill", "pswpout") >= 8192, "{arch}");
        assert!(c(&r, "fill", "pageoutrun") >= 1, "{arch}");
        assert!(c(&r, "fill", "pgsteal_kswapd") > 0, "{arch}");
        assert_eq!(
            c(&r, "fill", "pgsteal_kswapd") + c(&r, "fill", "pgsteal_direct"),
            c(&r, "fill", "pgsteal_anon"),
            "{arch}"
        );
        assert!(c(&r, "fill", "pgscan_kswapd") >= c(&r, "fill", "pgsteal_kswapd"));
        assert!(c(&r, "fill", "pgscan_direct") >= c(&r, "fill", "pgsteal_direct"));
        // The machine at the phase end (levels): the watermarks above, and
        // free memory that reclaim kept above the min watermark (an
        // order-0 allocation succeeds only while free - 0 > min,
        // `__zone_watermark_ok()`).
        // The watermarks include any boost left at the phase end (at most
        // 150% of the high watermark, 576).
        let boost = c(&r, "fill", "machine/wmark_boost");
        assert!((0..=576).contains(&boost), "{arch}: boost {boost}");
        assert_eq!(c(&r, "fill", "machine/managed_pages"), 16384, "{arch}");
        assert_eq!(c(&r, "fill", "machine/wmark_min"), 256 + boost, "{arch}");
        assert_eq!(c(&r, "fill", "machine/wmark_low"), 320 + boost, "{arch}");
        assert_eq!(c(&r, "fill", "machine/wmark_high"), 384 + boost, "{arch}");
        let free = c(&r, "fill", "machine/free_pages");
        assert!((256..=16384 - 8192).contains(&free), "{arch}: {free} free");
    }
}

/// A 96 MiB cold file read through a mapping on a 64 MiB machine
/// (`system`: more `[system]` lines), in the phase "read".
fn cold_96m_file_read_on_64m(system: &str) -> String {
    [
        system_mem("64M", system),
        file("f", "96M", "fill = \"cold\""),
        mmap_file("m", "f", "96M", "prot = \"r\""),
        phase("read"),
        touch("m", "read", ""),
    ]
    .concat()
}

/// Clean file pages under global pressure without swap: reading a 96 MiB
/// file through a mapping on a 64 MiB machine reclaims page cache
/// directly (SCAN_FILE: no swap); nothing is written, and the read
/// completes.
#[test]
fn global_pressure_reclaims_clean_file_pages() {
    let r = run(&cold_96m_file_read_on_64m(""));
    assert!(c(&r, "read", "pgsteal_file") > 0);
    assert_eq!(
        c(&r, "read", "pgsteal_kswapd") + c(&r, "read", "pgsteal_direct"),
        c(&r, "read", "pgsteal_file")
    );
    assert_eq!(c(&r, "read", "pswpout"), 0);
    assert!(c(&r, "read", "pageoutrun") >= 1);
}

/// When kswapd wakes: `wakeup_kswapd()` from the allocator's slow path,
/// entered when an allocation would leave the free pages at or below the
/// low watermark (`zone_watermark_fast()`); direct reclaim only at the min
/// watermark. On the 64 MiB machine (16384 pages: min 256, low 320, high
/// 384; no watermark boost, `vm.watermark_boost_factor` = 0), N written
/// anon pages (movable) with their page tables (unmovable: a PGD, a PUD,
/// a PMD and one PTE table per 512 pages from a 2 MiB-aligned start) are
/// order-0 allocations from CPU 0's per-CPU lists, one per migratetype.
/// The zone's batch is 3 (zone_batchsize(): 16384 >> 10 = 16, a quarter
/// 4, 4 + 2 = 6 rounded down to 2^n - 1: 3), and with no free in between
/// each refill, of either list, doubles it up to 3 << 5 = 96
/// (`nr_pcp_alloc()`). The PGD's refill takes 3 (the PUD and PMD use the
/// rest), the first PTE table's 6, the first folio's 12, then the folios
/// take 24, 48 and 96 at a time, and the tables' list, empty again after
/// five more tables, 96. N = 15,872 (62 MiB, 31 PTE tables) takes
/// 12 + 24 + 48 + 165 * 96 = 15,924 movable and 3 + 6 + 96 = 105
/// unmovable pages and leaves 16384 - 1 - 16,029 = 354 free, above the
/// low watermark, so kswapd never wakes. (The tables' first refill claims
/// a free 4 MiB block for the unmovable type, `__rmqueue_claim()`; once
/// the movable lists are empty the folios' refills take its free blocks
/// back: whole pageblocks, or a pageblock at least half free.)
/// N = 16,020: the refill at 354 free (above low) leaves 258, below low
/// but above min; the next allocation, from the list, wakes kswapd
/// (`pageoutrun`), and 94 more follow from the list.
///
/// Priced so that kswapd's work costs nothing, kswapd runs to the end
/// before the next allocation: its first pass's 12 rounds (priority 12
/// down to 1) scan 3 + 7 + 15 + ... + 8,000 = 15,993 pages of the
/// ~16,000-page inactive anon list (new anon folios start inactive), each
/// for the first time: every one is referenced by its write fault, so
/// kept (`folio_check_references()`: FOLIOREF_KEEP, PG_referenced set).
/// The pass reclaims nothing and, the node unbalanced, kswapd starts a
/// second pass at once (`kswapd_high_wmark_hit_quickly`, `pageoutrun` 2),
/// which reclaims the pages it now finds unreferenced up to the high
/// watermark. Free memory never reaches min: nobody stalls.
///
/// At the shipped x86_64 prices the 53 allocations (a write fault, a
/// zeroed page and a folio allocation each: about 1.5 us) give kswapd
/// about 80 us, in which it scans (about 0.4 us a folio: its isolation,
/// `folio_referenced()` and the rmap walk) far fewer pages than its first
/// pass: one pass, nothing reclaimed, and still no stall.
#[test]
fn kswapd_wakes_at_the_low_watermark() {
    let free = [("pgfault", 1000.0)];
    for (pages, runs) in [(15_872u64, 0), (16_020, 2)] {
        let text = [
            system_mem(
                "64M",
                "transparent_hugepage.enabled = \"never\"\nvm.watermark_boost_factor = 0\n",
            ),
            swap("zram", "128M"),
            phase("fill"),
            anon_written("a", &format!("{}K", pages * 4)),
        ]
        .concat();
        let r = run_priced(&text, &free);
        assert_eq!(c(&r, "fill", "pageoutrun"), runs, "{pages}");
        assert_eq!(
            c(&r, "fill", "kswapd_high_wmark_hit_quickly"),
            (runs > 1) as i64,
            "{pages}"
        );
        assert_eq!(c(&r, "fill", "allocstall_movable"), 0, "{pages}");
        assert_eq!(c(&r, "fill", "pgscan_direct"), 0, "{pages}");
        if runs > 0 {
            assert!(c(&r, "fill", "pgscan_kswapd") >= 15_993, "{pages}");
            assert!(
                c(&r, "fill", "machine/free_pages") >= 384,
                "{pages}: balanced"
            );
        }
        if runs == 0 {
            assert_eq!(c(&r, "fill", "pgscan_kswapd"), 0, "{pages}");
            assert_eq!(c(&r, "fill", "machine/free_pages"), 354, "{pages}");
        }
        let r = run(&text);
        assert_eq!(
            c(&r, "fill", "pageoutrun"),
            runs.min(1),
            "{pages}, shipped prices"
        );
        assert_eq!(
            c(&r, "fill", "allocstall_movable"),
            0,
            "{pages}, shipped prices"
        );
        let scanned = c(&r, "fill", "pgscan_kswapd");
        assert!(scanned < 15_993 / 4, "{pages}, shipped prices: {scanned}");
        assert_eq!(scanned > 0, runs > 0, "{pages}, shipped prices: {scanned}");
        assert_eq!(
            c(&r, "fill", "pgsteal_kswapd"),
            0,
            "{pages}, shipped prices"
        );
    }
}

/// Watermark boosting (`boost_watermark()`, mm/page_alloc.c): the first
/// machine of `kswapd_wakes_at_the_low_watermark`, 15,872 pages written,
/// now with the default `vm.watermark_boost_factor` (15,000). Without a
/// boost the phase ends with 354 free pages, never below the low
/// watermark. The page tables' first refill claimed a free 4 MiB block
/// (two pageblocks) for the unmovable type; when the folios find the
/// movable lists empty, `__rmqueue_claim()` takes its free pageblock whole
/// (order 9, the pageblock order: no boost) and later, the movable lists
/// empty again, the largest free block of the tables' own pageblock, below
/// the pageblock order: `try_to_claim_block()` boosts the watermarks by a
/// pageblock (512 pages; at most 150% of high, 576) and wakes kswapd
/// (`ZONE_BOOSTED_WATERMARK`). kswapd finds the node unbalanced against
/// the boosted high watermark (384 + 512 = 896), so its pass is a normal
/// one (`balance_pgdat()`: the boost waits); every folio is referenced by
/// its write fault, so the pass scans the whole inactive list (at least
/// the 15,000-odd pages of its priorities 12 to 1) and reclaims nothing,
/// and at its end takes off the boost it began with. kswapd's work priced
/// free, the phase ends unboosted, kswapd woken where the unboosted
/// machine never woke it, and nobody stalled.
#[test]
fn a_fallback_to_a_page_table_pageblock_boosts_the_watermarks() {
    let text = |factor: &str| {
        [
            system_mem(
                "64M",
                &format!(
                    "transparent_hugepage.enabled = \"never\"\n\
                     vm.watermark_boost_factor = {factor}\n"
                ),
            ),
            swap("zram", "128M"),
            phase("fill"),
            anon_written("a", &format!("{}K", 15_872 * 4)),
        ]
        .concat()
    };
    let free = [("pgfault", 1000.0)];
    let r = run_priced(&text("0"), &free);
    assert_eq!(c(&r, "fill", "pageoutrun"), 0);
    let r = run_priced(&text("15000"), &free);
    assert!(c(&r, "fill", "pageoutrun") >= 1);
    assert!(c(&r, "fill", "pgscan_kswapd") >= 15_000);
    assert_eq!(c(&r, "fill", "machine/wmark_boost"), 0);
    assert_eq!(c(&r, "fill", "machine/wmark_high"), 384);
    assert_eq!(c(&r, "fill", "allocstall_movable"), 0);
}

/// `machine.unmovable_blocks` and `machine.free_unmovable`: free blocks of
/// unmovable pageblocks at boot (a guest's /proc/pagetypeinfo), laid among
/// the kernel's own pages. They are free memory besides `machine.boot_used`:
/// the machine of `the_machines_own_memory_sets_free_pages_and_watermarks`
/// with two unmovable pageblocks holding two free order-4 blocks and one
/// of order 5 (64 pages) still has 16384 - 1 - 2048 = 14,335 free pages
/// before its page tables and folio take 9 + 12 (the tables now from
/// those free blocks, `__rmqueue_smallest()` of their own migratetype):
/// 14,314 free, as without them. Free blocks that the pageblocks of the
/// kernel's memory cannot hold are refused, naming the knob.
#[test]
fn free_blocks_of_unmovable_pageblocks_are_free_memory() {
    let text = |blocks: &str, free: &str| {
        [
            system_mem(
                "64M",
                &format!(
                    "machine.unmanaged = \"4M\"\nmachine.boot_used = \"4M\"\n\
                     machine.unmovable_blocks = {blocks}\nmachine.free_unmovable = \"{free}\"\n"
                ),
            ),
            phase("one"),
            anon_written("a", "4K"),
        ]
        .concat()
    };
    let r = run(&text("2", "0 0 0 0 2 1"));
    assert_eq!(c(&r, "one", "machine/free_pages"), 14314);
    assert_eq!(c(&r, "one", "machine/wmark_boost"), 0);
    // Twelve free order-8 blocks: with them the kernel's memory spans
    // 2048 + 3072 pages, ten whole pageblocks, but each such block needs
    // one of its own (the upper half of its aligned 512 pages), and the
    // first, which holds the zero page, cannot give one: nine fit.
    let e = try_run_with(&text("2", "0 0 0 0 0 0 0 0 12"), &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("machine.free_unmovable: the free blocks do not fit"),
        "{e}"
    );
}

/// kswapd runs beside the workload for as long as its modelled CPU time
/// is behind the workload's: how much reclaim the workload must do itself
/// follows from the prices. 80 MiB written on a 64 MiB machine with zram
/// (2 CPUs), a write fault priced 1 us:
/// * kswapd's work free: once awake it restores the high watermark before
///   each of the workload's allocations. The workload reclaims only where
///   a refill of its per-CPU list (up to 96 pages) took the free pages
///   from above the low watermark (320) to below min (256) at once: the
///   next allocation wakes kswapd, fails min and reclaims before kswapd
///   runs. That happens at most once per kswapd wake-up (`pageoutrun`),
///   and kswapd does most of the reclaim.
/// * every isolated folio 100 us (`sim/lru_isolate`, whoever isolates
///   it): one of kswapd's rounds of up to 32 folios costs 3.2 ms, in which
///   the workload faults thousands of pages against a low-to-min margin of
///   64: it stalls and reclaims directly. Both then reclaim at the same
///   cost per folio, so in the long run they share the work; the workload
///   still allocates, so kswapd does more than the workload but the
///   workload a large share (a third at least). kswapd's modelled CPU
///   time (`sim/kswapd_cpu_ns`) is 100 us per page it scanned.
#[test]
fn kswapd_is_paced_by_modelled_time() {
    let text = [
        system_mem(
            "64M",
            "transparent_hugepage.enabled = \"never\"\ncpus = 2\n",
        ),
        swap("zram", "128M"),
        phase("fill"),
        anon_written("a", "80M"),
    ]
    .concat();
    let free = run_priced(&text, &[("pgfault", 1000.0)]);
    let slow = run_priced(
        &text,
        &[("pgfault", 1000.0), ("sim/lru_isolate", 100_000.0)],
    );
    for r in [&free, &slow] {
        // The same memory is freed either way: 80 MiB into 64.
        assert!(c(r, "fill", "pswpout") > 4096);
        assert_eq!(
            c(r, "fill", "pgsteal_kswapd") + c(r, "fill", "pgsteal_direct"),
            c(r, "fill", "pgsteal_anon")
        );
    }
    assert!(c(&free, "fill", "allocstall_movable") <= c(&free, "fill", "pageoutrun"));
    assert!(c(&free, "fill", "pgsteal_direct") < c(&free, "fill", "pgsteal_kswapd"));
    assert_eq!(c(&free, "fill", "pgscan_direct_throttle"), 0);
    assert_eq!(c(&free, "fill", "sim/kswapd_cpu_ns"), 0);
    // kswapd's time is its isolations alone (4 KiB folios: one per page
    // scanned); the faults are the workload's.
    assert_eq!(
        c(&slow, "fill", "sim/kswapd_cpu_ns"),
        100_000 * c(&slow, "fill", "pgscan_kswapd")
    );
    let (kswapd, direct) = (
        c(&slow, "fill", "pgsteal_kswapd"),
        c(&slow, "fill", "pgsteal_direct"),
    );
    assert!(c(&slow, "fill", "allocstall_movable") > 0);
    assert!(
        3 * direct >= kswapd + direct,
        "kswapd {kswapd}, direct {direct}"
    );
    assert!(kswapd > 0, "kswapd {kswapd}, direct {direct}");
}

/// 1088 MiB of anonymous memory written in the phase "fill" on a 1 GiB
/// machine with 2 CPUs and a 1 GiB zram device, THP off.
fn anon_1088m_on_1g() -> String {
    [
        system_mem("1G", "transparent_hugepage.enabled = \"never\"\ncpus = 2\n"),
        swap("zram", "1G"),
        phase("fill"),
        anon_written("a", "1088M"),
    ]
    .concat()
}

/// A refill of the per-CPU list can take the free pages below half the
/// min watermark at once, and the task's next reclaim then waits for
/// kswapd (`throttle_direct_reclaim()`, `pgscan_direct_throttle`). On a
/// 1 GiB machine (262,144 pages: min_free_kbytes int_sqrt(1 GiB in KiB *
/// 16) = 4096 → min 1,024, low 1,286; batch 63, so refills of 63, 126,
/// 252, 504, 1,008 (1,953 pages) and then 2,016) with nothing in use but
/// the zero page, the writer's order-0 allocations leave
/// 262,143 - 1,953 - 2,016 j free after 5 + j refills: the 134th (j = 129) starts from
/// 2,142, above low, and leaves 126, below 1,024 / 2 = 512. The next
/// allocation wakes kswapd and, below min, reclaims: it first waits until
/// a kswapd round ends with more than 512 free. With kswapd's work free
/// the wait takes no time; at the shipped prices it takes kswapd's first
/// pass over the young pages (`sim/throttled_ns`), and that pass is
/// kswapd's, not the writer's.
#[test]
fn a_refill_below_half_min_throttles_the_writer() {
    let text = anon_1088m_on_1g();
    let free = run_priced(&text, &[("pgfault", 1000.0)]);
    let shipped = run(&text);
    for r in [&free, &shipped] {
        assert!(c(r, "fill", "pgscan_direct_throttle") >= 1);
        assert!(c(r, "fill", "pgscan_kswapd") > c(r, "fill", "pgscan_direct"));
    }
    assert_eq!(c(&free, "fill", "sim/throttled_ns"), 0);
    assert!(c(&shipped, "fill", "sim/throttled_ns") > 0);
}

/// Global direct reclaim starts at priority 12 and there scans its whole
/// budget (`shrink_lruvec()`'s `proportional_reclaim`), even past the 32
/// pages it needs; the walk over the cgroups (`mem_cgroup_iter()`) resumes
/// after the cgroup where the last one stopped, and restarts at the root
/// when that was the last one, so with one cgroup every walk scans the
/// root. The machine and writes of the test above, at the shipped prices
/// (the writer stalls after kswapd's first pass): the inactive anon list
/// then holds the resident pages, at least 60 << 12 = 245,760, so each
/// stall scans at least 60 pages at priority 12, and finds them
/// unreferenced (their young bits were cleared by the first pass): it
/// steals them all and does not go below priority 12.
#[test]
fn direct_reclaim_scans_its_whole_first_budget() {
    let text = anon_1088m_on_1g();
    let r = run(&text);
    let stalls = c(&r, "fill", "allocstall_movable");
    assert!(pages(&r, "fill", "a", "present") >= 60 << 12);
    assert!(stalls > 0);
    assert!(
        c(&r, "fill", "pgscan_direct") >= 60 * stalls,
        "{stalls} stalls"
    );
    assert!(
        c(&r, "fill", "pgsteal_direct") >= 60 * stalls,
        "{stalls} stalls"
    );
}

/// A task waiting for its reads lets kswapd run meanwhile: the profile's
/// `[wait]` prices count in the task's time against kswapd's. A 96 MiB
/// cold file read through a mapping on a 64 MiB machine, a fault priced
/// 1 us and each folio kswapd (or the reader) isolates 5 us:
/// * without waits a 128 KiB readahead folio costs the reader a few us,
///   and kswapd, 5 us a page, falls behind: the reader reclaims too.
/// * with 100 us of I/O wait a page read (`sim/pages_read_io`), each
///   readahead folio gives kswapd 3.2 ms, enough for 640 pages, against
///   the reader's 32: kswapd keeps the free pages above min. The reader
///   reclaims only where the refill of its per-CPU list took them from
///   above low to below min at once, at most once per kswapd wake-up
///   (`pageoutrun`): far less than without the waits.
#[test]
fn a_reader_waiting_for_io_lets_kswapd_keep_up() {
    let text = cold_96m_file_read_on_64m("transparent_hugepage.enabled = \"never\"\n");
    let costs = [("pgfault", 1000.0), ("sim/lru_isolate", 5000.0)];
    let busy = run_priced_waits(&text, &costs, &[]);
    let waiting = run_priced_waits(&text, &costs, &[("sim/pages_read_io", 100_000.0)]);
    assert!(c(&busy, "read", "pgsteal_direct") > 0);
    assert!(c(&busy, "read", "allocstall_movable") > 0);
    assert!(c(&waiting, "read", "allocstall_movable") <= c(&waiting, "read", "pageoutrun"));
    assert!(10 * c(&waiting, "read", "pgsteal_direct") < c(&busy, "read", "pgsteal_direct"));
    for r in [&busy, &waiting] {
        // Every page is read, a few twice (evicted before their fault).
        assert!(c(r, "read", "sim/pages_read_io") >= 96 * 256);
        assert!(c(r, "read", "pgsteal_kswapd") > 0);
    }
}

/// kswapd is a task of its own on another CPU: perf, counting the
/// workload's task, does not see kswapd's tracepoints (`vmscan:*`, the
/// reclaim's rmap walks), but kswapd's TLB flushes of the workload's mm
/// interrupt the workload: each IPI runs `flush_tlb_func()` on the
/// workload's CPU, in its context, traced as a remote shootdown.
/// 80 MiB written on a 64 MiB machine with zram (2 CPUs, the workload on
/// CPU 0): kswapd swaps out every page it steals, and each one is dirty
/// anon, so `shrink_folio_list()` flushes its deferred batch
/// (`try_to_unmap_flush_dirty()`) before `pageout()`: one flush, and one
/// remote shootdown on CPU 0, per page kswapd steals, none local. With
/// one CPU kswapd preempts the workload, and none of its flushes is seen.
#[test]
fn kswapd_is_counted_as_its_own_task() {
    for (cpus, remote) in [(2, true), (1, false)] {
        let text = [
            system_mem(
                "64M",
                &format!("transparent_hugepage.enabled = \"never\"\ncpus = {cpus}\n"),
            ),
            swap("zram", "128M"),
            phase("fill"),
            anon_written("a", "80M"),
        ]
        .concat();
        let r = run(&text);
        let kswapd = c(&r, "fill", "pgsteal_kswapd");
        assert!(kswapd > 1000, "{cpus} CPUs: kswapd stole {kswapd}");
        let direct = c(&r, "fill", "pgsteal_direct");
        // The workload's own reclaim is all perf sees of vmscan.
        assert_eq!(
            c(&r, "fill", "vmscan:mm_vmscan_write_folio"),
            direct,
            "{cpus}"
        );
        assert_eq!(c(&r, "fill", "sim/swap_alloc"), direct, "{cpus}");
        assert_eq!(
            c(&r, "fill", "tlb:tlb_flush/remote_shootdown"),
            if remote { kswapd } else { 0 },
            "{cpus} CPUs"
        );
        assert_eq!(
            c(&r, "fill", "tlb:tlb_flush/local_mm_shootdown"),
            direct,
            "{cpus} CPUs: the workload's own flushes"
        );
    }
}

/// Anon memory beyond RAM without swap: reclaim finds nothing to free,
/// the allocation fails after 16 fruitless attempts and the fault ends in
/// VM_FAULT_OOM (the OOM killer is not modelled): the run stops with the
/// step's location.
#[test]
fn global_pressure_without_swap_is_oom() {
    let text = system_mem("64M", "") + &anon_written("a", "96M");
    let e = try_run_with(&text, &[]).unwrap_err().to_string();
    assert!(
        e.to_lowercase().contains("oom") || e.contains("memory"),
        "{e}"
    );
}

/// Lazyfree folios under global pressure: 48 MiB written and freed with
/// MADV_FREE on a 64 MiB machine, then 48 MiB more written. Reclaim
/// (kswapd's, and direct when it falls behind) discards clean lazyfree folios (inactive file list, no swap needed)
/// instead of failing: pglazyfreed > 0 and nothing is swapped.
#[test]
fn global_pressure_discards_lazyfree_folios() {
    let text = [
        system_mem("64M", ""),
        anon_written("a", "48M"),
        madvise("a", "free", ""),
        phase("more"),
        anon_written("b", "48M"),
    ]
    .concat();
    let r = run(&text);
    assert!(c(&r, "more", "pglazyfreed") > 0);
    assert_eq!(
        c(&r, "more", "pglazyfreed"),
        c(&r, "more", "pgsteal_kswapd") + c(&r, "more", "pgsteal_direct")
    );
    assert_eq!(c(&r, "more", "pswpout"), 0);
    assert_eq!(pages(&r, "more", "b", "present"), 12288);
}

/// `machine.pcp_list`: of the memory in use at boot, the pages on the
/// workload CPU's per-CPU list, which its first allocations take. The
/// machine of the test below with 16 KiB of its 4 MiB on the list: the
/// boot holds 1024 - 4 = 1020 pages and CPU 0's list 4 (movable). One
/// written page is five order-0 allocations: four page tables
/// (unmovable: a list of their own, refilled with a batch of 3, then of 6
/// as the batch doubles, `nr_pcp_alloc()`; 5 left) and the folio, which
/// takes one of the list's four movable pages. Free: 16384 - 1 (zero
/// page) - 1024 (unmanaged) - 1020 - 4 - 9 = 14326, and 5 + 3 pages on
/// the lists (without the knob the folio's list is refilled with a batch
/// of 12: see below).
#[test]
fn the_workload_cpus_list_at_boot_is_taken_first() {
    let text = [
        system_mem(
            "64M",
            "machine.unmanaged = \"4M\"\nmachine.boot_used = \"4M\"\nmachine.pcp_list = \"16K\"\n",
        ),
        phase("one"),
        anon_written("a", "4K"),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "one", "machine/free_pages"), 14326);
    assert_eq!(c(&r, "one", "machine/pcp_pages"), 8);
    // The list is part of the memory in use at boot: more is refused.
    let text = system_mem("64M", "machine.pcp_list = \"8K\"\n") + &anon_written("a", "4K");
    let e = try_run_with(&text, &[]).unwrap_err().to_string();
    assert!(e.contains("machine.pcp_list"), "{e}");
}

/// `machine.kswapd_pcp_list`: of the memory in use at boot, the pages on
/// the list of the CPU kswapd runs on (CPU 1). The machine above with
/// 16 KiB on each list: the boot holds 1024 - 8 = 1016 pages. The
/// workload on CPU 0 takes its own lists' pages as above and leaves CPU
/// 1's four alone: free 14326 as before, 8 + 4 pages on the lists.
#[test]
fn kswapds_cpu_list_at_boot_is_held_apart() {
    let text = [
        system_mem(
            "64M",
            "machine.unmanaged = \"4M\"\nmachine.boot_used = \"4M\"\nmachine.pcp_list = \"16K\"\n\
             machine.kswapd_pcp_list = \"16K\"\n",
        ),
        phase("one"),
        anon_written("a", "4K"),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "one", "machine/free_pages"), 14326);
    assert_eq!(c(&r, "one", "machine/pcp_pages"), 12);
    // Both lists are part of the memory in use at boot.
    let text = system_mem(
        "64M",
        "machine.boot_used = \"8K\"\nmachine.pcp_list = \"4K\"\nmachine.kswapd_pcp_list = \"8K\"\n",
    ) + &anon_written("a", "4K");
    let e = try_run_with(&text, &[]).unwrap_err().to_string();
    assert!(e.contains("machine.kswapd_pcp_list"), "{e}");
}

/// The machine's own memory (`machine.*`, what a VM comparison sets from
/// the guest). On a 64 MiB machine (16384 pages) with 4 MiB unmanaged and
/// 4 MiB in use at boot: managed = 16384 - 1024 = 15360 pages;
/// `calculate_min_free_kbytes()` = int_sqrt(15360 * 4 * 16) = 991 KiB →
/// min 247 pages, step max(247 / 4, 15360 * 10 / 10000) = 61 → low 308,
/// high 369. One written page is five order-0 allocations from CPU 0's
/// per-CPU lists, one list per migratetype: the PGD, PUD, PMD and PTE
/// tables (unmovable) and then the folio (movable). The tables' list is
/// filled with a batch of 3 (zone_batchsize(): 15360 >> 10 = 15, a
/// quarter 3, 3 + 1 = 4 rounded down to 2^n - 1: 3), then with 6 (the
/// batch doubles per refill without a free in between, `nr_pcp_alloc()`,
/// whichever list it fills), the folio's with 12; the 5 + 11 pages left
/// on the lists are not free: 16384 - 1 (zero page) - 2048 (boot) - 9 -
/// 12 = 14314. With min_free_kbytes = 2048 set: min 512, step 128, low
/// 640, high 768, the same batches.
#[test]
fn the_machines_own_memory_sets_free_pages_and_watermarks() {
    for (extra, wmarks) in [
        ("", [247, 308, 369]),
        ("machine.min_free_kbytes = 2048\n", [512, 640, 768]),
    ] {
        let text = [
            system_mem(
                "64M",
                &format!("machine.unmanaged = \"4M\"\nmachine.boot_used = \"4M\"\n{extra}"),
            ),
            phase("one"),
            anon_written("a", "4K"),
        ]
        .concat();
        let r = run(&text);
        assert_eq!(c(&r, "one", "machine/managed_pages"), 15360, "{extra}");
        assert_eq!(c(&r, "one", "machine/free_pages"), 14314, "{extra}");
        assert_eq!(c(&r, "one", "machine/pcp_pages"), 16, "{extra}");
        let got = ["min", "low", "high"].map(|w| c(&r, "one", &format!("machine/wmark_{w}")));
        assert_eq!(got, wmarks, "{extra}");
    }
    // Leaving less than 16 MiB of memory is refused, naming the knobs.
    let text = system_mem("64M", "machine.boot_used = \"60M\"\n") + &anon_written("a", "4K");
    let e = try_run_with(&text, &[]).unwrap_err().to_string();
    assert!(e.contains("machine.boot_used"), "{e}");
}

/// kswapd naps for HZ/10 after a pass before it sleeps until woken
/// (`kswapd_try_to_sleep()`): a wake-up during the nap counts
/// `kswapd_low_wmark_hit_quickly`, and a nap that ends with the node
/// unbalanced counts `kswapd_high_wmark_hit_quickly` and starts another
/// pass. 80 MiB written on a 64 MiB machine with zram, kswapd's work free
/// (it restores the high watermark as soon as it runs), a write fault
/// priced `fault` ns:
/// * 1 us: 20,480 faults take about 20 ms, so no nap (100 ms) ever ends.
///   Every pass but the first starts either from a wake-up during a nap
///   or, after a pass that ended unbalanced, at once:
///   pageoutrun = 1 + low + high, and the low-watermark wake-ups happen.
/// * 1 s: a nap has always ended by the next allocation, which kswapd
///   sees first: balanced, it sleeps until woken, else it starts another
///   pass. Either way no wake-up comes during a nap (low = 0).
#[test]
fn kswapd_naps_before_it_sleeps() {
    let text = [
        system_mem("64M", "transparent_hugepage.enabled = \"never\"\n"),
        swap("zram", "128M"),
        phase("fill"),
        anon_written("a", "80M"),
    ]
    .concat();
    let r = run_priced(&text, &[("pgfault", 1000.0)]);
    let runs = c(&r, "fill", "pageoutrun");
    let low = c(&r, "fill", "kswapd_low_wmark_hit_quickly");
    let high = c(&r, "fill", "kswapd_high_wmark_hit_quickly");
    assert!(low > 0, "{runs} passes, {low} low, {high} high");
    assert_eq!(runs, 1 + low + high, "{low} low, {high} high");
    let r = run_priced(&text, &[("pgfault", 1e9)]);
    assert!(c(&r, "fill", "pageoutrun") > 1);
    assert_eq!(c(&r, "fill", "kswapd_low_wmark_hit_quickly"), 0);
}

/// `machine.lowmem_reserve`: free pages of the zones below the workload's
/// that its allocations may not take (`__zone_watermark_ok()` adds the
/// lower zone's `lowmem_reserve[]` for a movable allocation). 15,872
/// pages written on a 64 MiB machine without watermark boosting leave 354
/// free pages, above the low watermark (320): kswapd is never woken
/// (`kswapd_wakes_at_the_low_watermark`). With 1 MiB (256 pages) held
/// back, the workload sees 256 fewer, below the low watermark well
/// before the end, so it wakes kswapd, which reclaims; the held pages
/// still count as free (`machine/free_pages`), as a lower zone's free
/// pages do in /proc/zoneinfo.
#[test]
fn a_lower_zones_reserve_is_held_back_from_the_workload() {
    let text = |extra: &str| {
        [
            system_mem(
                "64M",
                &format!(
                    "transparent_hugepage.enabled = \"never\"\nvm.watermark_boost_factor = 0\n\
                     {extra}"
                ),
            ),
            swap("zram", "128M"),
            phase("fill"),
            anon_written("a", &format!("{}K", 15_872 * 4)),
        ]
        .concat()
    };
    let free = [("pgfault", 1000.0)];
    let r = run_priced(&text(""), &free);
    assert_eq!(c(&r, "fill", "pageoutrun"), 0);
    assert_eq!(c(&r, "fill", "machine/free_pages"), 354);
    let r = run_priced(&text("machine.lowmem_reserve = \"1M\"\n"), &free);
    assert!(c(&r, "fill", "pageoutrun") > 0);
    assert!(c(&r, "fill", "pgsteal_kswapd") > 0);
    assert!(c(&r, "fill", "machine/free_pages") > 256);
}
