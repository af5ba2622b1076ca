//! The model's counters by name: `/proc/vmstat` events
//! (include/linux/vm_event_item.h, mm/vmstat.c: vmstat_text[]), the
//! per-cgroup memory.stat events, the per-size mTHP statistics
//! (mm/huge_memory.c: enum mthp_stat_item, shown as
//! `hugepages-<size>kB/<stat>`), tracepoint hit counts (`system:event`),
//! the `sim/` counts of primitive operations only the model can see, and
//! the LRU lists. The kernel model counts them (its `VmStat`); the cost
//! model and `foliosim counters` list them by name from here, without a
//! model to ask ([`model_counter_names`]).

use std::collections::BTreeSet;
use std::ops::RangeInclusive;

use crate::counters::MM_PAGE_ALLOC;
use crate::PAGE_SIZE;

macro_rules! counter_enum {
    ($(#[$m:meta])* $name:ident, $count:ident { $($variant:ident => $label:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum $name { $($variant,)* }
        pub const $count: usize = [$($label,)*].len();
        impl $name {
            pub const ALL: [$name; $count] = [$($name::$variant,)*];
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $label,)* }
            }
        }
    };
}

counter_enum!(
    /// `enum vm_event_item` entries the model counts, and the node
    /// statistics of mm/workingset.c that only grow (`workingset_*`).
    VmEvent, NR_VM_EVENTS {
        PgFault => "pgfault",
        PgMajFault => "pgmajfault",
        PgReuse => "pgreuse",
        ThpFaultAlloc => "thp_fault_alloc",
        ThpFaultFallback => "thp_fault_fallback",
        ThpFaultFallbackCharge => "thp_fault_fallback_charge",
        ThpCollapseAlloc => "thp_collapse_alloc",
        ThpCollapseAllocFailed => "thp_collapse_alloc_failed",
        ThpScanExceedNonePte => "thp_scan_exceed_none_pte",
        ThpScanExceedSwapPte => "thp_scan_exceed_swap_pte",
        ThpScanExceedSharedPte => "thp_scan_exceed_share_pte",
        ThpFileMapped => "thp_file_mapped",
        ThpSplitPmd => "thp_split_pmd",
        ThpDeferredSplitPage => "thp_deferred_split_page",
        ThpUnderusedSplitPage => "thp_underused_split_page",
        ThpZeroPageAlloc => "thp_zero_page_alloc",
        ThpZeroPageAllocFailed => "thp_zero_page_alloc_failed",
        PgAlloc => "pgalloc_normal",
        PgFree => "pgfree",
        PswpIn => "pswpin",
        PswpOut => "pswpout",
        SwpInZero => "swpin_zero",
        SwpOutZero => "swpout_zero",
        Zswpout => "zswpout",
        Zswpin => "zswpin",
        Zswpwb => "zswpwb",
        ThpSwpOut => "thp_swpout",
        ThpSwpOutFallback => "thp_swpout_fallback",
        SwapRa => "swap_ra",
        SwapRaHit => "swap_ra_hit",
        ThpSplitPage => "thp_split_page",
        PgStealAnon => "pgsteal_anon",
        PgStealFile => "pgsteal_file",
        PgScanAnon => "pgscan_anon",
        PgScanFile => "pgscan_file",
        PgActivate => "pgactivate",
        PgLazyFreed => "pglazyfreed",
        PgDeactivate => "pgdeactivate",
        PgRefill => "pgrefill",
        PgRotated => "pgrotated",
        PgStealKswapd => "pgsteal_kswapd",
        PgStealDirect => "pgsteal_direct",
        PgStealKhugepaged => "pgsteal_khugepaged",
        PgStealProactive => "pgsteal_proactive",
        PgScanKswapd => "pgscan_kswapd",
        PgScanDirect => "pgscan_direct",
        PgScanKhugepaged => "pgscan_khugepaged",
        PgScanProactive => "pgscan_proactive",
        PgScanDirectThrottle => "pgscan_direct_throttle",
        PgLazyFree => "pglazyfree",
        AllocStallNormal => "allocstall_normal",
        AllocStallMovable => "allocstall_movable",
        PageOutRun => "pageoutrun",
        KswapdLowWmarkHitQuickly => "kswapd_low_wmark_hit_quickly",
        KswapdHighWmarkHitQuickly => "kswapd_high_wmark_hit_quickly",
        WorkingsetRefaultAnon => "workingset_refault_anon",
        WorkingsetRefaultFile => "workingset_refault_file",
        WorkingsetActivateAnon => "workingset_activate_anon",
        WorkingsetActivateFile => "workingset_activate_file",
        WorkingsetRestoreAnon => "workingset_restore_anon",
        WorkingsetRestoreFile => "workingset_restore_file",
    }
);

counter_enum!(
    /// Per-cgroup events of memory.stat (cgroup v2 names, and the v1-only
    /// page-in/page-out events), counted by
    /// `count_memcg_events()`; `pgscan` and `pgsteal` are their sums. The
    /// `workingset_*` lruvec statistics (`mod_lruvec_state()`) are in both
    /// the v1 and the v2 memory.stat.
    MemcgEvent, NR_MEMCG_EVENTS {
        PgScanKswapd => "pgscan_kswapd",
        PgScanDirect => "pgscan_direct",
        PgScanKhugepaged => "pgscan_khugepaged",
        PgScanProactive => "pgscan_proactive",
        PgStealKswapd => "pgsteal_kswapd",
        PgStealDirect => "pgsteal_direct",
        PgStealKhugepaged => "pgsteal_khugepaged",
        PgStealProactive => "pgsteal_proactive",
        PgRefill => "pgrefill",
        PgActivate => "pgactivate",
        PgDeactivate => "pgdeactivate",
        PgLazyFree => "pglazyfree",
        PgLazyFreed => "pglazyfreed",
        // Not memory.stat: v1 `memory.failcnt` (charges that hit the
        // limit) and the memcg_limit steps whose write failed with EBUSY.
        Failcnt => "failcnt",
        LimitWriteEbusy => "limit_write_ebusy",
        // Not memory.stat: cgroup v2 memory.events `max` (a charge over
        // the limit about to reclaim, or forced) and `high` (reclaim of a
        // cgroup above memory.high on the way back to user space).
        EventsMax => "events_max",
        EventsHigh => "events_high",
        // memory.events `low`: a reclaim of the cgroup below memory.low
        // (nothing else was left to reclaim).
        EventsLow => "events_low",
        // memory.swap.events `max` (a swap charge refused at
        // memory.swap.max), `fail` (those, and swap allocations that
        // found no free slot) and `high` (a look at the swap usage above
        // memory.swap.high on the way back to user space).
        SwapEventsMax => "swap_events_max",
        SwapEventsFail => "swap_events_fail",
        SwapEventsHigh => "swap_events_high",
        WorkingsetRefaultAnon => "workingset_refault_anon",
        WorkingsetRefaultFile => "workingset_refault_file",
        WorkingsetActivateAnon => "workingset_activate_anon",
        WorkingsetActivateFile => "workingset_activate_file",
        WorkingsetRestoreAnon => "workingset_restore_anon",
        WorkingsetRestoreFile => "workingset_restore_file",
        // cgroup v1 memory.stat events (memcg1_charge_statistics(),
        // memcg1_uncharge_batch(), mm_account_fault() and the major-fault
        // sites): one per folio charged and per folio uncharged (of
        // user memory: page tables and slab do not count), and the
        // faults of the cgroup's tasks.
        PgPgIn => "pgpgin",
        PgPgOut => "pgpgout",
        PgFault => "pgfault",
        PgMajFault => "pgmajfault",
        // zswap's events of the cgroup's entries (count_objcg_events()).
        Zswpout => "zswpout",
        Zswpin => "zswpin",
        Zswpwb => "zswpwb",
    }
);

counter_enum!(
    /// `enum mthp_stat_item` (per folio order).
    MthpStat, NR_MTHP_STATS {
        AnonFaultAlloc => "anon_fault_alloc",
        AnonFaultFallback => "anon_fault_fallback",
        AnonFaultFallbackCharge => "anon_fault_fallback_charge",
        SplitDeferred => "split_deferred",
        Swpout => "swpout",
        SwpoutFallback => "swpout_fallback",
        Swpin => "swpin",
        Zswpout => "zswpout",
        Split => "split",
        NrAnonPartiallyMapped => "nr_anon_partially_mapped",
    }
);

counter_enum!(
    /// Tracepoints, counted per hit like `perf stat -e system:event`.
    Trace, NR_TRACES {
        PageFaultUser => "exceptions:page_fault_user",
        FilemapMapPages => "filemap:mm_filemap_map_pages",
        FilemapFault => "filemap:mm_filemap_fault",
        FilemapAddToPageCache => "filemap:mm_filemap_add_to_page_cache",
        TlbFlush => "tlb:tlb_flush",
        TlbFlushRemoteShootdown => "tlb:tlb_flush/remote_shootdown",
        TlbFlushLocalShootdown => "tlb:tlb_flush/local_shootdown",
        TlbFlushLocalMmShootdown => "tlb:tlb_flush/local_mm_shootdown",
        TlbFlushRemoteSendIpi => "tlb:tlb_flush/remote_ipi_send",
        TlbFlushRemoteWrongCpu => "tlb:tlb_flush/remote_wrong_cpu",
        VmscanReclaimPages => "vmscan:mm_vmscan_reclaim_pages",
        VmscanWriteFolio => "vmscan:mm_vmscan_write_folio",
        VmscanMemcgReclaimBegin => "vmscan:mm_vmscan_memcg_reclaim_begin",
        VmscanLruIsolate => "vmscan:mm_vmscan_lru_isolate",
        VmscanLruShrinkInactive => "vmscan:mm_vmscan_lru_shrink_inactive",
        VmscanLruShrinkActive => "vmscan:mm_vmscan_lru_shrink_active",
        MmPageAllocExtfrag => "kmem:mm_page_alloc_extfrag",
        KhugepagedScanPmd => "huge_memory:mm_khugepaged_scan_pmd",
        CollapseHugePage => "huge_memory:mm_collapse_huge_page",
        KhugepagedScanFile => "huge_memory:mm_khugepaged_scan_file",
        KhugepagedCollapseFile => "huge_memory:mm_khugepaged_collapse_file",
    }
);

counter_enum!(
    /// zswap's statistics in debugfs (`/sys/kernel/debug/zswap/<file>`,
    /// named `zswap/<file>`): gauges of the pool (`pool_total_size` in
    /// bytes, `stored_pages`, `stored_incompressible_pages`), of which a
    /// phase shows the change, and event counts.
    ZswapStat, NR_ZSWAP_STATS {
        PoolTotalSize => "zswap/pool_total_size",
        StoredPages => "zswap/stored_pages",
        StoredIncompressiblePages => "zswap/stored_incompressible_pages",
        WrittenBackPages => "zswap/written_back_pages",
        PoolLimitHit => "zswap/pool_limit_hit",
        RejectReclaimFail => "zswap/reject_reclaim_fail",
        RejectAllocFail => "zswap/reject_alloc_fail",
    }
);

counter_enum!(
    /// khugepaged's own counters (mm/khugepaged.c: `khugepaged_pages_collapsed`,
    /// `khugepaged_full_scans`), shown in
    /// `/sys/kernel/mm/transparent_hugepage/khugepaged/` and named
    /// `khugepaged/<file>`.
    Khugepaged, NR_KHUGEPAGED {
        PagesCollapsed => "khugepaged/pages_collapsed",
        FullScans => "khugepaged/full_scans",
    }
);

macro_rules! sim_stat {
    ($($(#[doc = $doc:literal])* $field:ident => $label:literal,)*) => {
        /// Primitive operations counted by the model (`sim/...`).
        #[derive(Clone, Debug, Default)]
        pub struct SimStat { $($(#[doc = $doc])* pub $field: u64,)* }
        impl SimStat {
            /// Every counter's name and its documentation (the field's doc
            /// comment, for `foliosim counters`).
            pub const DOCS: &'static [(&'static str, &'static str)] =
                &[$(($label, concat!($($doc),*)),)*];
            /// Calls `f` with every counter's name and value, in field
            /// order.
            pub fn for_each(&self, mut f: impl FnMut(&'static str, u64)) {
                $(f($label, self.$field);)*
            }
            /// How many counters there are.
            pub const LEN: usize = [$($label,)*].len();
            /// `Σ count · weight` over every counter (wrapping), `weights`
            /// in field order ([`SimStat::DOCS`]): the priced time of the
            /// counts.
            pub fn dot(&self, weights: &[u64; SimStat::LEN]) -> u64 {
                let mut w = weights.iter();
                let mut acc = 0u64;
                $(acc = acc.wrapping_add(self.$field.wrapping_mul(*w.next().unwrap_or(&0)));)*
                acc
            }
        }
    };
}

sim_stat! {
    /// `ptep_get()` calls (reads of one entry through the API).
    ptep_get => "sim/ptep_get",
    /// Extra entry reads when arm64 gathers a contiguous block.
    contpte_gather_reads => "sim/contpte_gather_reads",
    /// `set_ptes()` calls.
    set_ptes_calls => "sim/set_ptes",
    /// Entries written by `set_ptes()`.
    set_ptes_entries => "sim/set_ptes_entries",
    /// Raw entry stores (including arm64 repaints).
    pte_write => "sim/pte_write",
    /// Entries cleared (`ptep_get_and_clear()` and batched clears).
    pte_clear => "sim/pte_clear",
    /// Entries modified in place (write-protect, mkwrite, young/dirty).
    pte_modify => "sim/pte_modify",
    /// PMD leaf entries installed.
    pmd_set => "sim/set_pmd",
    /// PMD leaf entries cleared.
    pmd_clear => "sim/pmd_clear",
    /// Range TLB flushes requested by the arm64 contpte repaint.
    contpte_flush => "sim/contpte_flush_range",
    /// Blocks folded by `__contpte_try_fold()`.
    contpte_fold => "sim/contpte_fold",
    /// Blocks unfolded by `__contpte_try_unfold()`.
    contpte_unfold => "sim/contpte_unfold",
    /// Contiguous blocks painted directly by `contpte_set_ptes()`.
    contpte_blocks_set => "sim/contpte_set_blocks",
    /// Page-table pages allocated (`pte_alloc_one()` and upper levels).
    pt_alloc => "sim/pgtable_alloc",
    /// Page-table pages freed.
    pt_free => "sim/pgtable_free",
    /// Folios allocated, any order.
    folio_alloc => "sim/folio_alloc",
    /// Folios freed.
    folio_free => "sim/folio_free",
    /// Pages zeroed (`folio_zero_user()`, `clear_highpage()`).
    page_zero => "sim/page_zero",
    /// Pages copied (`copy_mc_user_highpage()` in COW).
    page_copy => "sim/page_copy",
    /// Page-cache lookups (`filemap_get_entry()`, `xas_next_entry()` steps).
    pagecache_lookup => "sim/pagecache_lookup",
    /// Folios inserted into a page cache.
    pagecache_add => "sim/pagecache_add",
    /// Pages read from a backing device (readahead and `read_folio`).
    pages_read_io => "sim/pages_read_io",
    /// rmap additions (`folio_add_*_rmap_*()` calls).
    rmap_add => "sim/rmap_add",
    /// rmap removals (`folio_remove_rmap_*()` calls).
    rmap_remove => "sim/rmap_remove",
    /// Per-page `_mapcount` updates (CONFIG_PAGE_MAPCOUNT) inside PTE-level
    /// rmap additions and removals: one per page, also in batched calls.
    page_mapcount => "sim/page_mapcount_update",
    /// Swap-cache lookups of a swap entry (`swap_cache_get_folio()` in
    /// `do_swap_page()`).
    swapcache_lookup => "sim/swapcache_lookup",
    /// Address spaces duplicated by fork (`dup_mm()`: the mm, its VMAs and
    /// the task around them, apart from the page tables).
    dup_mm => "sim/dup_mm",
    /// Folios written to a swap device (`__swap_writepage()`: one bio per
    /// folio; zero-filled folios go to the zeromap instead).
    swap_write_io => "sim/swap_write_io",
    /// `add_mm_counter()` / `inc_mm_counter()` updates of rss_stat.
    rss_stat_update => "sim/rss_stat_update",
    /// Fault-around windows handed to `->map_pages()`.
    fault_around => "sim/fault_around",
    /// Faults that retried (`VM_FAULT_RETRY`, not accounted).
    fault_retry => "sim/fault_retry",
    /// User accesses performed by the simulated CPU.
    user_access => "sim/user_access",
    /// User reads, soon after a read fault, of pages the fault mapped and
    /// whose entries the CPU had walked speculatively, found not present,
    /// before the fault was taken: a second page walk each (crates/hw,
    /// `SpecWalk`).
    user_access_rewalk => "sim/user_access_rewalk",
    /// Further user loads of a word touch (`unit = "word"`) in address
    /// order, after the page's first access: 511 per 4 KiB page, never
    /// faulting (the first access mapped the page); streaming loads.
    user_loads => "sim/user_loads",
    /// The same in the random word order, where consecutive loads land on
    /// different pages (a cache and usually a TLB miss each).
    user_loads_random => "sim/user_loads_random",
    /// madvise(2), munmap(2) and mremap(2) calls made by scenario steps: entry and
    /// exit, mmap_lock, VMA lookup, the mmu_gather set-up (the work on the
    /// range is counted by its own primitives).
    syscall_mm => "sim/syscall_mm",
    /// mmu_gathers that ended with cleared entries (`tlb_finish_mmu()` ->
    /// `tlb_flush_mmu()`): the release of the gathered batch
    /// (`free_pages_and_swap_cache()`, the batched memcg uncharge and LRU
    /// work); its flush is counted apart.
    tlb_gather_flush => "sim/tlb_gather_flush",
    /// Pages whose PageAnonExclusive a fork cleared
    /// (`__folio_try_dup_anon_rmap()`: an atomic bit clear per page).
    anon_exclusive_clear => "sim/anon_exclusive_clear",
    /// `flush_tlb_mm_range()` / `flush_tlb_range()` calls (immediate flushes).
    flush_tlb_range => "sim/flush_tlb_range",
    /// x86 single-page invalidations (INVLPG).
    invlpg => "sim/invlpg",
    /// x86 full local TLB flushes.
    tlb_flush_all => "sim/tlb_flush_all",
    /// arm64 TLBI by page (VALE1IS).
    tlbi_page => "sim/tlbi_page",
    /// arm64 TLBI by range (RVALE1IS).
    tlbi_range => "sim/tlbi_range",
    /// arm64 DSB ISHST barriers.
    dsb_ishst => "sim/dsb_ishst",
    /// arm64 DSB ISH barriers (TLBI completion).
    dsb_ish => "sim/dsb_ish",
    /// Deferred-flush additions (`set_tlb_ubc_flush_pending()`).
    tlbbatch_add => "sim/tlbbatch_add_pending",
    /// Batched flushes (`arch_tlbbatch_flush()`).
    tlbbatch_flush => "sim/tlbbatch_flush",
    /// x86 `flush_tlb_multi()` calls (NR_TLB_REMOTE_FLUSH: another CPU was
    /// in the cpumask).
    tlb_remote_flush => "sim/tlb_remote_flush",
    /// x86 flush IPIs handled by other CPUs (NR_TLB_REMOTE_FLUSH_RECEIVED).
    tlb_remote_flush_received => "sim/tlb_remote_flush_received",
    /// Inter-processor interrupts sent (function-call IPIs of TLB flushes).
    ipi => "sim/ipi",
    /// `switch_mm_irqs_off()` calls.
    tlb_switch => "sim/tlb_switch_mm",
    /// Of those, the ones that flushed the TLB (a new or stale context).
    tlb_switch_flush => "sim/tlb_switch_flush",
    /// Whole-mm flushes by `flush_tlb_batched_pending()`.
    tlb_batched_pending => "sim/tlb_batched_pending",
    /// `page_vma_mapped_walk()` iterations that found an entry in
    /// `try_to_unmap_one()` (one per PTE, or per batch).
    pvmw => "sim/pvmw_iterations",
    /// `folio_referenced()` calls that walked the rmap (from
    /// `folio_check_references()` and `shrink_active_list()`, mm/vmscan.c).
    folio_referenced => "sim/folio_referenced",
    /// `page_vma_mapped_walk()` iterations in `folio_referenced_one()`
    /// (one per PTE, or per batch with seed 002).
    pvmw_referenced => "sim/pvmw_referenced",
    /// Access-flag test-and-clears of single entries by the young ops
    /// (`ptep_test_and_clear_young()`, arm64 `__ptep_test_and_clear_young()`;
    /// `pmdp_test_and_clear_young()`), PMD ones included.
    young_clear => "sim/young_test_and_clear",
    /// TLB maintenance issued because a cleared entry was young (x86: the
    /// PMD flush; arm64: TLBI by page or range, no DSB).
    young_flush => "sim/young_flush",
    /// rmap walks (`rmap_walk()`: try_to_unmap, folio_referenced).
    rmap_walk => "sim/rmap_walk",
    /// `try_to_unmap_one()` calls: one per VMA the unmap walk visits.
    ttu_one => "sim/try_to_unmap_one",
    /// `folio_referenced_one()` calls: one per VMA the young-bit walk
    /// visits (those `invalid_folio_referenced_vma()` lets through).
    referenced_one => "sim/folio_referenced_one",
    /// `try_to_unmap_one()` PTE-clear calls (one per PTE or per batch).
    ttu_clear_calls => "sim/ttu_clear_calls",
    /// Swap PTEs written.
    swap_pte_write => "sim/swap_pte_write",
    /// Swap-count updates under the cluster lock (`swap_duplicate()`,
    /// `swap_free_nr()`), one per call.
    swap_lock => "sim/swap_count_lock",
    /// Swap slot allocations attempted (`folio_alloc_swap()`).
    swap_alloc => "sim/swap_alloc",
    /// Of those, the ones that found no slot (reclaim activates the folio).
    swap_alloc_fail => "sim/swap_alloc_fail",
    /// `shrink_folio_list()` calls (reclaim of an isolated batch).
    shrink_folio_list => "sim/shrink_folio_list",
    /// MGLRU: `try_to_inc_max_seq()` calls (an aging wanted).
    lru_gen_try_inc_max_seq => "sim/lru_gen_try_inc_max_seq",
    /// MGLRU: `inc_max_seq()` calls (a new generation).
    lru_gen_inc_max_seq => "sim/lru_gen_inc_max_seq",
    /// MGLRU: `evict_folios()` calls.
    lru_gen_evict_folios => "sim/lru_gen_evict_folios",
    /// MGLRU: `lru_gen_look_around()` calls (one per PTE, or per batch
    /// with seed 002, the rmap walk of reclaim finds).
    lru_gen_look_around => "sim/lru_gen_look_around",
    /// MGLRU: the `lru_gen_look_around()` calls that found their PTE (or
    /// one of their batch) young, which then reference the folio.
    lru_gen_look_around_young => "sim/lru_gen_look_around_young",
    /// read(2) calls on /proc/PID/pagemap (`pagemap_read()`).
    pagemap_read_calls => "sim/pagemap_read_calls",
    /// pagemap walks: one mmap_read_lock round trip and `walk_page_range()`
    /// per PAGEMAP_WALK_SIZE chunk of a read.
    pagemap_walks => "sim/pagemap_walks",
    /// pagemap entries produced for the requested range
    /// (`add_to_pagemap()`).
    pagemap_entries => "sim/pagemap_entries",
    /// pagemap entries of a present PTE or PMD leaf with a struct page
    /// (`vm_normal_page()` / `pmd_page()`): the folio's anon flag and the
    /// page's precise mapcount are read for each.
    pagemap_page_entries => "sim/pagemap_page_entries",
    /// `series.pagemap_walk_to_pmd_end` (before 6.5): entries computed
    /// past the requested end, to the chunk's end, and not copied. The
    /// next reads compute them again, so they are cache-hot work.
    pagemap_overwalk_entries => "sim/pagemap_overwalk_entries",
    /// Those of them with a struct page (as `sim/pagemap_page_entries`).
    pagemap_overwalk_page_entries => "sim/pagemap_overwalk_page_entries",
    /// PTE tables the pagemap walk mapped (`pte_offset_map_lock()`).
    pagemap_pte_tables => "sim/pagemap_pte_tables",
    /// PMD leaves the pagemap walk handled whole.
    pagemap_pmd_leaves => "sim/pagemap_pmd_leaves",
    /// `pagemap_pte_hole()` callbacks.
    pagemap_holes => "sim/pagemap_holes",
    /// Seed 004: shmem page-cache lookups for none PTEs.
    pagemap_pagecache_lookups => "sim/pagemap_pagecache_lookups",
    /// Seed 004: pagemap walks that made at least one page-cache lookup
    /// (informational: every lookup descends the xarray from its root, so
    /// the time is per lookup, not per walk).
    pagemap_pagecache_walks => "sim/pagemap_pagecache_walks",
    /// PAGEMAP_SCAN ioctls.
    pagemap_scan_calls => "sim/pagemap_scan_calls",
    /// Pages a PAGEMAP_SCAN walked.
    pagemap_scan_entries => "sim/pagemap_scan_entries",
    /// Anon-exclusive share barrier pairs (`folio_try_share_anon_rmap_*`).
    anon_share => "sim/anon_share_barrier",
    /// Folios isolated from the LRU.
    lru_isolate => "sim/lru_isolate",
    /// Folios split (`split_folio_to_list()`).
    folio_split => "sim/folio_split",
}

/// `lru_list_name()` of the evictable lists, as memory.stat spells them
/// (`inactive_anon`, ...; /proc/vmstat adds `nr_`).
pub const LRU_NAMES: [&str; 4] = [
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
];

/// The folio orders with per-size counters (mTHP statistics,
/// `kmem:mm_page_alloc` per order): 2 (16 kB) up to the PMD order (2 MB).
pub const SIZE_ORDERS: RangeInclusive<u32> = 2..=9;

/// The per-size mTHP statistic `stat` of order `order`:
/// `hugepages-<size>kB/<stat>`.
pub fn mthp_counter(order: u32, stat: MthpStat) -> String {
    let kb = (PAGE_SIZE << order) / 1024;
    format!("hugepages-{kb}kB/{}", stat.name())
}

/// `kmem:mm_page_alloc/order=<order>`.
pub fn page_alloc_counter(order: u32) -> String {
    format!("{MM_PAGE_ALLOC}/order={order}")
}

/// kswapd's modelled CPU time over a phase (ns): the clock that paces it
/// against the workload, at the run's cost profile's prices. Not a count
/// of a primitive, so not in [`SimStat`] and never priced.
pub const SIM_KSWAPD_CPU: (&str, &str) = (
    "sim/kswapd_cpu_ns",
    "kswapd's modelled CPU time over the phase at the cost profile's prices (what paces it against the workload), ns",
);

/// The modelled time the workload waited over a phase (ns): in
/// `throttle_direct_reclaim()` for kswapd, for a swap write, or above its
/// cgroup's memory.high; like [`SIM_KSWAPD_CPU`], never priced.
pub const SIM_THROTTLED: (&str, &str) = (
    "sim/throttled_ns",
    "modelled time the workload waited over the phase, ns: for kswapd in throttle_direct_reclaim() (kswapd's CPU time meanwhile), for a swap write to end (folio_wait_writeback()), or asleep above its cgroup's memory.high (mem_cgroup_handle_over_high())",
);

/// Failed writes to the machine's zram devices over a phase, kswapd's and
/// the workload's: `failed_writes` of /sys/block/zramN/io_stat, one per
/// write (bio) `zram_bio_write()` ends early, in the model one whose page
/// found no free page for its object in the device's pool
/// (`zram_write_page()` → -ENOMEM: the folio stays dirty in the swap
/// cache, and `pswpout` counted it). Not a count of a primitive, so not
/// in [`SimStat`] and never priced.
pub const ZRAM_FAILED_WRITES: (&str, &str) = (
    "zram/failed_writes",
    "writes to the machine's zram devices over the phase (kswapd's and the workload's) that failed (io_stat's failed_writes): a page found no free page for its object in the device's pool, so the folio stays dirty in the swap cache, and pswpout counted it",
);

/// Fields of the zram devices' `mm_stat` (/sys/block/zramN/mm_stat), summed
/// over the machine's devices, that a phase reports as their change: name
/// and description. Every engine reports them; natively and in guests they
/// are read where there are zram devices, with [`ZRAM_PAGES_COMPACTED`].
pub const ZRAM_MM_STAT: [(&str, &str); 4] = [
    (
        "zram/pages_stored",
        "pages the machine's zram devices hold (mm_stat's orig_data_size in pages): one per written slot, same-filled ones included",
    ),
    (
        "zram/compr_data_size",
        "bytes of compressed data the zram devices hold (mm_stat's compr_data_size): each object's compressed length, a whole page for one stored uncompressed",
    ),
    (
        "zram/same_pages",
        "pages the zram devices hold as one repeated word, without an object (mm_stat's same_pages, ZRAM_SAME)",
    ),
    (
        "zram/huge_pages",
        "pages the zram devices hold uncompressed, as they compressed to zsmalloc's huge class size or more (mm_stat's huge_pages)",
    ),
];

/// `mm_stat`'s `pages_compacted`, summed over the machine's zram devices
/// (its change over a phase): natively and in guests only, as the model
/// has no zsmalloc compaction.
pub const ZRAM_PAGES_COMPACTED: (&str, &str) = (
    "zram/pages_compacted",
    "pages zsmalloc's compaction freed from the zram devices' pools (mm_stat's pages_compacted); not modelled",
);

/// `mm_stat`'s `mem_used_total` and `mem_used_max`, summed over the
/// machine's zram devices (bytes; a phase reports their change): the
/// pages of the devices' zsmalloc pools, and the most they ever held
/// (`max_used_pages`, which `zram_can_store_page()` raises after each
/// object's `zs_malloc()`). Every engine reports them. For a device the
/// run sets up, the first phase's change of `mem_used_max` is the pool's
/// peak in that phase.
pub const ZRAM_MEM_USED: [(&str, &str); 2] = [
    (
        "zram/mem_used_total",
        "bytes of the pages the zram devices' pools hold (mm_stat's mem_used_total; zs_get_total_pages()): the devices' own memory, fragmentation included, where nr_zspages adds zswap's pool and lags per CPU",
    ),
    (
        "zram/mem_used_max",
        "how far the most the zram devices' pools ever held rose over the phase (mm_stat's mem_used_max, bytes; zram_can_store_page() raises it after each object is allocated): for a device the run set up, its peak over the phases so far",
    ),
];

/// The pages under writeback (`nr_writeback` in /proc/vmstat); a phase
/// reports its change.
pub const NR_WRITEBACK: &str = "nr_writeback";

/// The pages in the swap cache (`nr_swapcached` in /proc/vmstat); a phase
/// reports its change.
pub const NR_SWAPCACHED: &str = "nr_swapcached";

/// The pages of the zsmalloc pools, zswap's and zram's (`nr_zspages` in
/// /proc/vmstat); a phase reports its change.
pub const NR_ZSPAGES: &str = "nr_zspages";

/// Every counter name a fresh snapshot of the model's counters holds
/// (what a report of the model can contain, and so what a cost profile
/// may price), sorted. Memory cgroups add `memcg/<n>/...` names when a
/// scenario creates them; those are not listed.
pub fn model_counter_names() -> Vec<String> {
    let mut names: BTreeSet<String> = VmEvent::ALL.iter().map(|e| e.name().into()).collect();
    for order in SIZE_ORDERS {
        names.extend(MthpStat::ALL.iter().map(|&st| mthp_counter(order, st)));
        names.insert(page_alloc_counter(order));
    }
    names.extend(Trace::ALL.iter().map(|t| t.name().to_string()));
    names.extend(Khugepaged::ALL.iter().map(|k| k.name().to_string()));
    names.extend(ZswapStat::ALL.iter().map(|k| k.name().to_string()));
    names.extend(SimStat::DOCS.iter().map(|(name, _)| name.to_string()));
    names.insert(SIM_KSWAPD_CPU.0.to_string());
    names.insert(SIM_THROTTLED.0.to_string());
    names.extend(
        crate::counters::kswapd_model_counters()
            .into_iter()
            .map(|c| format!("{}{c}", crate::counters::KSWAPD_PREFIX)),
    );
    names.insert(ZRAM_FAILED_WRITES.0.to_string());
    names.extend(LRU_NAMES.iter().map(|l| format!("nr_{l}")));
    names.insert(NR_WRITEBACK.to_string());
    names.insert(NR_ZSPAGES.to_string());
    names.insert(NR_SWAPCACHED.to_string());
    names.extend(ZRAM_MM_STAT.iter().map(|(n, _)| n.to_string()));
    names.extend(ZRAM_MEM_USED.iter().map(|(n, _)| n.to_string()));
    names.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_size_names_are_the_sysfs_ones() {
        // /sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats/...
        assert_eq!(
            mthp_counter(4, MthpStat::AnonFaultAlloc),
            "hugepages-64kB/anon_fault_alloc"
        );
        assert_eq!(mthp_counter(9, MthpStat::Swpout), "hugepages-2048kB/swpout");
        assert_eq!(page_alloc_counter(2), "kmem:mm_page_alloc/order=2");
        let names = model_counter_names();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
        for n in ["pgfault", "nr_active_anon", "sim/ptep_get", "tlb:tlb_flush"] {
            assert!(names.iter().any(|m| m == n), "{n}");
        }
        assert!(!names.iter().any(|n| n.starts_with("hugepages-8kB/")));
    }
}
