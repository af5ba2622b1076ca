//! Reclaim (mm/vmscan.c), Linux 6.18 with the classic two-list LRU:
//! memory-cgroup reclaim (`try_to_free_mem_cgroup_pages()`,
//! `do_try_to_free_pages()`, `shrink_node()`, `shrink_lruvec()`,
//! `get_scan_count()`, `shrink_list()`, `shrink_inactive_list()`,
//! `shrink_active_list()`, `isolate_lru_folios()`, `move_folios_to_lru()`,
//! `folio_check_references()`) and the reclaim of an isolated list shared
//! with MADV_PAGEOUT (`reclaim_pages()`, `shrink_folio_list()`, `pageout()`,
//! `__remove_mapping()`; mm/huge_memory.c: `split_folio_to_list()`).
//!
//! `shrink_folio_list()` follows the kernel's order: references (unless
//! MADV_PAGEOUT ignores them), swap allocation for anon folios (large ones
//! split when it fails, counting swpout_fallback / split), `try_to_unmap()`
//! through the rmap, dirty file folios activated (reclaim never writes
//! them), anon write-out (`swap_writeout()`), freeing of clean folios with
//! the batched TLB flush every 31 freed folios and at the end. Folios are
//! processed in isolation order; a split folio's tails follow right after it,
//! the last one first, as `list_add_tail()` and `lru_to_folio()` have it.
//!
//! Approximated: an asynchronous swap write leaves the folio in the swap
//! cache and `folio_end_writeback()` rotates it to the inactive tail right
//! after it went back to the LRU, unless `machine.swap_write_rate` or
//! `machine.swap_write_latency_ns` queues it on its device (mm/page_io.rs;
//! a folio met again under writeback is activated with PG_reclaim); no
//! writeback throttling; the LRU sizes the scan balance reads are exact
//! (the kernel reads rate-limited memcg statistics); `get_scan_count()`
//! weighs the lists by `vm.swappiness` (every cgroup's, as on cgroup v2).
//! Reclaimed folios leave shadow entries
//! and refaults activated since the last reclaim force deactivation
//! (`snapshot_refaults()`, mm/workingset.rs). Dirty shmem
//! folios go to swap through `shmem_writeout()` (mm/shmem.rs); without swap
//! the kernel activates them, as the model does.
//! Global direct reclaim (`try_to_free_pages()`, from the allocator below
//! the min watermark) walks the root and every cgroup (partial walks
//! resume where the last stopped), with `file_is_tiny` and the
//! DEF_PRIORITY full scan of direct reclaim. Lazyfree folios (MADV_FREE)
//! skip the swap allocation and are discarded when clean (pglazyfreed).
//! kswapd (`wakeup_kswapd()`, `balance_pgdat()`, `kswapd_shrink_node()`,
//! `kswapd_age_node()`, `pgdat_balanced()`) is woken by the allocator's
//! slow path and, while awake, takes steps of its priority loop before
//! each allocation for as long as its modelled CPU time is behind the
//! workload's (see `kswapd_run()`); it walks every cgroup and never scans
//! proportionally in full. After a pass it naps for HZ/10 of its time
//! (`kswapd_try_to_sleep()`).
//! With MGLRU on (`lru_gen.enabled`), `shrink_node()` and `shrink_lruvec()`
//! hand over to mm/lru_gen.rs, which shares `shrink_folio_list()`.
//! Not modelled: memory.low/min, demotion, slab shrinkers, memcg hierarchies deeper than one
//! level (the model's cgroups are children of the root).

use crate::arch::Arch;
use crate::include::linux::mm_inline::{
    is_active_lru, is_file_lru, LRU_ACTIVE, LRU_ACTIVE_ANON, LRU_ACTIVE_FILE, LRU_FILE,
    LRU_INACTIVE_ANON, LRU_INACTIVE_FILE, NR_LRU_LISTS,
};
use crate::include::linux::mm_types::{
    PG_ACTIVE, PG_ANON, PG_DIRTY, PG_LRU, PG_PARTIALLY_MAPPED, PG_READAHEAD, PG_REFERENCED,
    PG_SWAPBACKED, PG_SWAPCACHE, PG_WORKINGSET,
};
use crate::include::linux::pgtable::{Pfn, HPAGE_PMD_ORDER};
use crate::mm::memcontrol::MemcgId;
use crate::mm::memcontrol::{MAX_RECLAIM_RETRIES, ROOT_MEM_CGROUP};
use crate::mm::mmap::VM_EXEC;
use crate::mm::swap::SWAP_CLUSTER_MAX;
use crate::mm::swapfile::SwapOut;
use crate::mm::vmstat::{MemcgEvent, MthpStat, Trace, VmEvent};
use crate::Kernel;

/// `root_mem_cgroup`
const ROOT: MemcgId = ROOT_MEM_CGROUP;
/// `PAGEVEC_SIZE`: folios freed per batch.
const PAGEVEC_SIZE: u32 = 31;
/// `DEF_PRIORITY`
pub(crate) const DEF_PRIORITY: i32 = 12;
/// `MAX_SWAPPINESS`
pub(crate) const MAX_SWAPPINESS: u64 = 200;
/// `SWAPPINESS_ANON_ONLY`: memory.reclaim's `swappiness=max`, anonymous
/// pages only.
pub(crate) const SWAPPINESS_ANON_ONLY: u64 = MAX_SWAPPINESS + 1;
/// `DEACTIVATE_ANON`, `DEACTIVATE_FILE`
const DEACTIVATE_ANON: u8 = 1;
const DEACTIVATE_FILE: u8 = 2;

/// What one `shrink_folio_list()` call did (`struct reclaim_stat`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReclaimStat {
    pub(crate) nr_reclaimed: u64,
    /// Folios kept or activated.
    pub(crate) nr_kept: u64,
    /// Pages written out (`nr_pageout`).
    pub(crate) nr_pageout: u64,
    /// Pages activated, anon and file (`nr_activate[]`).
    pub(crate) nr_activate: [u64; 2],
    /// Pages kept for one more trip (`nr_ref_keep`).
    pub(crate) nr_ref_keep: u64,
}

/// `struct scan_control`
#[derive(Clone, Debug)]
#[doc(alias = "scan_control")]
pub(crate) struct ScanControl {
    pub(crate) nr_to_reclaim: u64,
    /// `target_mem_cgroup`: None for `reclaim_pages()` (MADV_PAGEOUT).
    pub target: Option<MemcgId>,
    pub priority: i32,
    pub(crate) may_swap: bool,
    pub(crate) proactive: bool,
    /// `proactive_swappiness`: memory.reclaim's `swappiness=` (201:
    /// `max`, anonymous pages only).
    pub(crate) proactive_swappiness: Option<u64>,
    /// `current_is_kswapd()`: this is kswapd's `balance_pgdat()`.
    pub(crate) kswapd: bool,
    pub(crate) nr_scanned: u64,
    pub(crate) nr_reclaimed: u64,
    may_deactivate: u8,
    force_deactivate: bool,
    skipped_deactivate: bool,
    cache_trim_mode: bool,
    file_is_tiny: bool,
    memcg_full_walk: bool,
    /// `memcg_low_reclaim`: this pass reclaims cgroups below memory.low
    /// too (the retry after one that skipped them found nothing else).
    memcg_low_reclaim: bool,
    /// `memcg_low_skipped`: a cgroup below memory.low was passed over.
    memcg_low_skipped: bool,
    anon_cost: u64,
    file_cost: u64,
}

impl ScanControl {
    fn new(target: Option<MemcgId>, nr_to_reclaim: u64, may_swap: bool, proactive: bool) -> Self {
        ScanControl {
            nr_to_reclaim,
            target,
            priority: DEF_PRIORITY,
            may_swap,
            proactive,
            proactive_swappiness: None,
            kswapd: false,
            nr_scanned: 0,
            nr_reclaimed: 0,
            may_deactivate: 0,
            force_deactivate: false,
            skipped_deactivate: false,
            cache_trim_mode: false,
            file_is_tiny: false,
            memcg_full_walk: false,
            memcg_low_reclaim: false,
            memcg_low_skipped: false,
            anon_cost: 0,
            file_cost: 0,
        }
    }

    /// `cgroup_reclaim()`
    fn cgroup_reclaim(&self) -> bool {
        self.target.is_some()
    }
}

/// `enum folio_references`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FolioRef {
    Reclaim,
    ReclaimClean,
    Keep,
    Activate,
}

/// What `shrink_folio_list()` decided for one folio.
enum Verdict {
    /// Freed: its pages.
    Reclaimed(u64),
    /// `keep` / `keep_locked`.
    Keep,
    /// Kept after an asynchronous write-out (`PAGE_SUCCESS` under
    /// writeback): rotated to the inactive tail when the write completes.
    KeepWriteback,
    /// `activate_locked` with this many pages (1 after a split).
    Activate(u64),
}

/// What `pageout()` did with a swap-cache folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pageout {
    /// Written (or zero-filled): clean and free to go.
    Written,
    /// An asynchronous write that ends as soon as the folio is back on
    /// the LRU (no `machine.swap_write_rate` or
    /// `machine.swap_write_latency_ns`).
    Writeback,
    /// An asynchronous write queued on its device (mm/page_io.rs).
    Queued,
    /// No swap entry referenced its slots: they were freed and the folio
    /// is dirty again (`folio_free_swap()` in `swap_writeout()`).
    Redirtied,
    /// The device failed the write: dirty again in the swap cache.
    Failed,
}

/// The folios `shrink_folio_list()` did not free, in processing order,
/// and those among them waiting for their write to complete.
#[derive(Default)]
pub(crate) struct Kept {
    pub folios: Vec<Pfn>,
    pub written: Vec<Pfn>,
}

impl<A: Arch> Kernel<A> {
    /// `folio_isolate_lru()`: take one folio off its LRU list.
    pub(crate) fn folio_isolate_lru(&mut self, folio: Pfn) {
        self.lruvec_del_folio(folio);
        self.mem.clear(folio, PG_LRU);
        self.vmstat.sim.lru_isolate += 1;
    }

    /// `reclaim_pages()` → `reclaim_folio_list()`: reclaim an isolated list
    /// (in isolation order), ignoring references; what is left goes back
    /// on the LRU.
    pub(crate) fn reclaim_pages(&mut self, list: Vec<Pfn>) -> ReclaimStat {
        if list.is_empty() {
            return ReclaimStat::default();
        }
        self.vmstat.trace(Trace::VmscanReclaimPages);
        for &f in &list {
            self.mem.clear(f, PG_ACTIVE);
        }
        let mut sc = ScanControl::new(None, 0, true, false);
        let mut todo = list;
        todo.reverse();
        let (stat, kept) = self.shrink_folio_list(todo, &mut sc, true);
        for &f in &kept.folios {
            self.folio_putback_lru(f);
        }
        for &f in &kept.written {
            self.folio_end_writeback_reclaim(f);
        }
        stat
    }

    /// `shrink_folio_list()`. `list` is taken from its end (the kernel's
    /// list tail), so the first folio to process comes last. The writes
    /// due by its end end before it returns, the kept folios still
    /// isolated (their callers put them back).
    pub(crate) fn shrink_folio_list(
        &mut self,
        mut list: Vec<Pfn>,
        sc: &mut ScanControl,
        ignore_references: bool,
    ) -> (ReclaimStat, Kept) {
        self.vmstat.sim.shrink_folio_list += 1;
        // Writes end while reclaim runs, as its clock advances.
        self.swap_io_complete();
        // Most folios of a batch may be kept, or wait for their write:
        // room for all up front.
        let mut kept = Kept {
            folios: Vec::with_capacity(list.len()),
            written: Vec::with_capacity(list.len()),
        };
        let mut stat = ReclaimStat::default();
        let mut batch = 0;
        while let Some(folio) = list.pop() {
            match self.shrink_one(folio, &mut list, sc, &mut stat, ignore_references) {
                Verdict::Reclaimed(nr) => {
                    stat.nr_reclaimed += nr;
                    batch += 1;
                    if batch == PAGEVEC_SIZE {
                        self.try_to_unmap_flush();
                        batch = 0;
                    }
                    continue;
                }
                Verdict::Activate(nr) => self.activate_locked(folio, nr, &mut stat),
                Verdict::KeepWriteback => kept.written.push(folio),
                Verdict::Keep => {}
            }
            stat.nr_kept += 1;
            kept.folios.push(folio);
        }
        self.try_to_unmap_flush();
        let pgactivate = stat.nr_activate[0] + stat.nr_activate[1];
        self.vmstat.count_vm_events(VmEvent::PgActivate, pgactivate);
        // A store the full zswap pool rejected queued the shrink worker: it
        // runs now (mm/zswap.rs).
        self.zswap_run_queued();
        // Writes that have ended by now ended while the kept folios are
        // still isolated: they miss their rotation, as
        // `folio_rotate_reclaimable()` moves only folios on the LRU (every
        // caller puts the kept folios back next).
        self.swap_io_complete();
        (stat, kept)
    }

    /// `activate_locked:` — drop the swap cache of an unreferenced swap-cache
    /// folio when swap (the machine's, or its cgroup's memory.swap.max) is
    /// more than half full, then set PG_active.
    fn activate_locked(&mut self, folio: Pfn, nr: u64, stat: &mut ReclaimStat) {
        if self.mem.test(folio, PG_SWAPCACHE) && self.mem_cgroup_swap_full(folio) {
            self.folio_free_swap(folio);
        }
        self.mem.set(folio, PG_ACTIVE);
        let file = self.folio_is_file_lru(folio);
        stat.nr_activate[file as usize] += nr;
        let memcg = self.folio_memcg(folio);
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgActivate, nr);
    }

    /// One folio of `shrink_folio_list()`, up to the unmap.
    fn shrink_one(
        &mut self,
        folio: Pfn,
        list: &mut Vec<Pfn>,
        sc: &mut ScanControl,
        stat: &mut ReclaimStat,
        ignore_references: bool,
    ) -> Verdict {
        if self.locked.contains(&folio) {
            return Verdict::Keep; // folio_trylock() failed
        }
        let mut nr_pages = self.mem.folio_nr_pages(folio);
        sc.nr_scanned += nr_pages;
        if self.folio_test_writeback(folio) {
            // Its write is still in flight (mm/page_io.rs): marked for
            // immediate reclaim and activated, out of the way until the
            // write ends and rotates it back (cases 1 and 2; memcg reclaim
            // as on cgroup v2, which does not wait for the write).
            self.mem.set(folio, PG_READAHEAD);
            return Verdict::Activate(nr_pages);
        }
        let references = if ignore_references {
            FolioRef::Reclaim
        } else {
            self.folio_check_references(folio, sc.target)
        };
        match references {
            FolioRef::Activate => return Verdict::Activate(nr_pages),
            FolioRef::Keep => {
                stat.nr_ref_keep += nr_pages;
                return Verdict::Keep;
            }
            FolioRef::Reclaim | FolioRef::ReclaimClean => {}
        }
        let anon = self.mem.folio_test_anon(folio);
        if anon && self.mem.test(folio, PG_SWAPBACKED) && !self.mem.test(folio, PG_SWAPCACHE) {
            if let Err(v) = self.shrink_anon_alloc_swap(folio, list) {
                if let Verdict::Activate(_) = v {
                    sc.nr_scanned -= nr_pages - 1; // activate_locked_split
                }
                return v;
            }
            self.mem.set(folio, PG_DIRTY); // folio_mark_dirty()
        }
        if nr_pages > 1 && !self.mem.folio_test_large(folio) {
            sc.nr_scanned -= nr_pages - 1;
            nr_pages = 1;
        }
        if self.mem.folio_mapped(folio) {
            self.try_to_unmap(folio);
            if self.mem.folio_mapped(folio) {
                return Verdict::Activate(nr_pages);
            }
        }
        self.shrink_unmapped(folio, nr_pages, references, stat, sc.target)
    }

    /// The anon swap-backed part of `shrink_folio_list()`: split a partly
    /// mapped large folio, allocate swap, and on failure split and retry
    /// with the head. Err(verdict) when the folio must be activated (its
    /// pages count as 1 after a split, `activate_locked_split`).
    fn shrink_anon_alloc_swap(
        &mut self,
        mut folio: Pfn,
        list: &mut Vec<Pfn>,
    ) -> Result<(), Verdict> {
        if self.mem.folio_test_large(folio) && self.mem.test(folio, PG_PARTIALLY_MAPPED) {
            folio = self.split_folio_to_list(folio, Some(list));
        }
        if self.folio_alloc_swap(folio) {
            return Ok(());
        }
        if !self.mem.folio_test_large(folio) || self.swap.is_empty() {
            return Err(Verdict::Activate(1));
        }
        let order = self.mem.order(folio);
        if order == HPAGE_PMD_ORDER {
            self.vmstat.count_vm_event(VmEvent::ThpSwpOutFallback);
        }
        self.vmstat.count_mthp_stat(order, MthpStat::SwpoutFallback);
        folio = self.split_folio_to_list(folio, Some(list));
        if !self.folio_alloc_swap(folio) {
            return Err(Verdict::Activate(1));
        }
        Ok(())
    }

    /// The rest of `shrink_folio_list()` for an unmapped folio: dirty file
    /// folios are activated, dirty anon ones written out; clean ones freed.
    fn shrink_unmapped(
        &mut self,
        folio: Pfn,
        nr_pages: u64,
        references: FolioRef,
        stat: &mut ReclaimStat,
        target: Option<MemcgId>,
    ) -> Verdict {
        if self.mem.test(folio, PG_DIRTY) {
            if self.folio_is_file_lru(folio) {
                // Reclaim never writes file folios: mark for immediate
                // reclaim (PG_reclaim aliases PG_readahead) and activate.
                self.mem.set(folio, PG_READAHEAD);
                return Verdict::Activate(nr_pages);
            }
            if references == FolioRef::ReclaimClean {
                return Verdict::Keep;
            }
            self.try_to_unmap_flush_dirty();
            if !self.mem.test(folio, PG_SWAPCACHE) {
                // A shmem folio: shmem_writeout() moves it to a swap slot
                // (mm/shmem.rs); without swap, or without a free slot, the
                // kernel redirties and activates it.
                if !self.can_reclaim_anon_pages(None) || !self.shmem_writeout(folio) {
                    return Verdict::Activate(nr_pages);
                }
            }
            stat.nr_pageout += nr_pages;
            match self.pageout(folio) {
                Pageout::Written => {}
                Pageout::Writeback => return Verdict::KeepWriteback,
                // Under writeback until the device has written it.
                Pageout::Queued => return Verdict::Keep,
                // folio_free_swap() redirtied it: kept (and freed at the
                // putback when nothing maps it).
                Pageout::Redirtied => return Verdict::Keep,
                // The write failed: dirty in the swap cache, kept.
                Pageout::Failed => return Verdict::Keep,
            }
        }
        if self.pinned == Some(folio) {
            return Verdict::Keep; // __remove_mapping(): an extra reference
        }
        Verdict::Reclaimed(self.remove_mapping_and_free(folio, target))
    }

    /// `pageout()` → `swap_writeout()` with PG_reclaim set for the write:
    /// written and free to go now (zero-filled, stored by zswap, or a
    /// synchronous device),
    /// under writeback while the (asynchronous) write runs, or redirtied
    /// when `folio_free_swap()` dropped its unreferenced slots instead.
    fn pageout(&mut self, folio: Pfn) -> Pageout {
        self.mem.set(folio, PG_READAHEAD);
        let out = self.swap_writeout(folio);
        if out == SwapOut::Redirtied {
            self.mem.clear(folio, PG_READAHEAD);
            return Pageout::Redirtied;
        }
        if out == SwapOut::Failed {
            // __end_swap_bio_write() clears PG_reclaim.
            self.mem.clear(folio, PG_READAHEAD);
            return Pageout::Failed;
        }
        let ty = self.folio_swap(folio).map(|e| e.ty as usize).unwrap_or(0);
        let done = self.swap[ty].synchronous() || out == SwapOut::NoIo;
        if done {
            self.mem.clear(folio, PG_READAHEAD);
            Pageout::Written
        } else if self.swap_io.queued() {
            self.swap_io_submit(folio, ty);
            Pageout::Queued
        } else {
            Pageout::Writeback
        }
    }

    /// `__remove_mapping()` + free: drop the folio from the swap cache or
    /// page cache, leaving a shadow entry of the reclaim `target`
    /// (`workingset_eviction()`; mm/workingset.rs) in its slots, and free
    /// it. Returns its pages.
    fn remove_mapping_and_free(&mut self, folio: Pfn, target: Option<MemcgId>) -> u64 {
        let nr = self.mem.folio_nr_pages(folio);
        let anon = self.mem.test(folio, PG_ANON);
        if anon && !self.mem.test(folio, PG_SWAPBACKED) {
            // A lazyfree folio: discarded, its data dropped (PGLAZYFREED).
            self.vmstat.count_vm_events(VmEvent::PgLazyFreed, nr);
            let memcg = self.folio_memcg(folio);
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::PgLazyFreed, nr);
        } else if self.mem.test(folio, PG_SWAPCACHE) {
            let shadow = self.workingset_eviction(folio, target);
            self.memcg1_swapout(folio);
            self.swap_cache_del_folio(folio, Some(shadow));
        } else if !anon {
            let shadow = if self.folio_is_file_lru(folio) {
                Some(self.workingset_eviction(folio, target))
            } else {
                None
            };
            let file = self.mem.folio_mapping(folio) as usize - 1;
            let index = self.mem.folio_index(folio) as u64;
            self.filemap_remove_folio(file, index, nr, shadow);
        }
        self.folio_free(folio);
        nr
    }

    /// `split_folio_to_list()`: unmap the folio to migration entries and
    /// back (`unmap_folio()` / `remap_page()`), split it into order-0 folios
    /// that keep its charge, and put the tails on `list` (an isolated head,
    /// `list_add_tail()`) or next to the head on its LRU list
    /// (`lru_add_split_folio()`). Returns the head.
    pub(crate) fn split_folio_to_list(&mut self, folio: Pfn, list: Option<&mut Vec<Pfn>>) -> Pfn {
        let order = self.mem.order(folio);
        let nr = 1u64 << order;
        self.vmstat.sim.folio_split += 1;
        // unmap_folio(): a PMD mapping is frozen at PMD level (one flush
        // per PMD in split_huge_pmd), PTEs become migration entries.
        self.try_to_migrate(folio);
        // The frozen folio leaves its deferred split queue.
        self.folio_unqueue_deferred_split(folio);
        let on_lru = self.mem.test(folio, PG_LRU);
        self.mem.split_to_order0(folio);
        self.split_page_memcg(folio, nr);
        // The folio's swap slots (if any) now belong to each page.
        if let Some(e) = self.swap_of.remove(folio.0) {
            for i in 0..nr {
                let entry = crate::mm::swapfile::SwpEntry {
                    ty: e.ty,
                    offset: e.offset + i,
                };
                self.swap_of.insert(folio.0 + i as u32, entry);
            }
        }
        self.vmstat.count_mthp_stat(order, MthpStat::Split);
        if order == HPAGE_PMD_ORDER {
            self.vmstat.count_vm_event(VmEvent::ThpSplitPage);
        }
        if self.mem.folio_test_anon(folio) {
            // __folio_split() → remap_page(RMP_USE_SHARED_ZEROPAGE).
            self.remap_split_pages(folio, nr);
        }
        match list {
            Some(list) => list.extend((1..nr).map(|i| folio.plus(i))),
            None => {
                debug_assert!(on_lru, "splitting an isolated folio without a list");
                for i in 1..nr {
                    self.lru_add_split_folio(folio, folio.plus(i));
                }
                // The split's own reference was the last of every new anon
                // folio that nothing maps any more (`free_folio_and_swap_cache()`
                // at the end of __folio_split()): zero-filled pages just
                // mapped to the zero page, pages a partial unmap left.
                for i in 0..nr {
                    self.folio_put_if_unused(folio.plus(i));
                }
            }
        }
        folio
    }

    /// `vm_swap_full()`: less than half of the swap space is free.
    pub(crate) fn vm_swap_full(&self) -> bool {
        let total: u64 = self.swap.iter().map(|s| s.nr_slots - 1).sum();
        let used: u64 = self.swap.iter().map(|s| s.inuse_pages).sum();
        (total - used) * 2 < total
    }

    /// `folio_free_swap()`: a swap-cache folio no swap PTE references
    /// leaves the swap cache (and becomes dirty again). True if it did.
    pub(crate) fn folio_free_swap(&mut self, folio: Pfn) -> bool {
        // folio_swapcache_freeable(): not while its write is in flight.
        if !self.mem.test(folio, PG_SWAPCACHE)
            || self.folio_test_writeback(folio)
            || !self.folio_swap_unused(folio)
        {
            return false;
        }
        self.delete_from_swap_cache(folio);
        self.mem.set(folio, PG_DIRTY);
        true
    }
}

impl<A: Arch> Kernel<A> {
    /// `try_to_free_mem_cgroup_pages()`: reclaim at least `nr_pages` (32 at
    /// least) from `memcg`, from priority 12 down. `proactive`: memory.reclaim's,
    /// with the swappiness it was given (`sc->proactive_swappiness`).
    /// Returns pages reclaimed.
    pub(crate) fn try_to_free_mem_cgroup_pages(
        &mut self,
        memcg: MemcgId,
        nr_pages: u64,
        may_swap: bool,
        proactive: Option<Option<u64>>,
    ) -> u64 {
        self.vmstat.trace(Trace::VmscanMemcgReclaimBegin);
        let nr_to_reclaim = nr_pages.max(SWAP_CLUSTER_MAX);
        let mut sc = ScanControl::new(Some(memcg), nr_to_reclaim, may_swap, proactive.is_some());
        sc.proactive_swappiness = proactive.flatten();
        self.do_try_to_free_pages(&mut sc)
    }

    /// `sc_swappiness()`: memory.reclaim's own swappiness, else the
    /// machine's (`mem_cgroup_swappiness()`).
    pub(crate) fn sc_swappiness(&self, sc: &ScanControl) -> u64 {
        match sc.proactive_swappiness {
            Some(s) if sc.proactive => s,
            _ => self.cfg.swappiness,
        }
    }

    /// `do_try_to_free_pages()`: the priority loop, then the kernel's
    /// retries when nothing was reclaimed (a full cgroup walk, then forced
    /// deactivation).
    fn do_try_to_free_pages(&mut self, sc: &mut ScanControl) -> u64 {
        // The reclaimer runs with PF_MEMALLOC (MGLRU: what it puts back is
        // not a fault's new folio).
        let saved = std::mem::replace(&mut self.lru_gen_task.memalloc, true);
        let r = self.reclaim_priority_loop(sc);
        self.lru_gen_task.memalloc = saved;
        r
    }

    /// The body of `do_try_to_free_pages()`.
    fn reclaim_priority_loop(&mut self, sc: &mut ScanControl) -> u64 {
        let initial_priority = sc.priority;
        loop {
            loop {
                sc.nr_scanned = 0;
                self.shrink_node(sc);
                if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.priority == 0 {
                    break;
                }
                sc.priority -= 1;
            }
            self.snapshot_refaults(sc.target);
            if sc.nr_reclaimed > 0 {
                return sc.nr_reclaimed;
            }
            if !sc.memcg_full_walk {
                sc.priority = initial_priority;
                sc.memcg_full_walk = true;
                continue;
            }
            if sc.skipped_deactivate {
                sc.priority = initial_priority;
                sc.force_deactivate = true;
                sc.skipped_deactivate = false;
                continue;
            }
            // Untapped memory.low reserves: retry before giving up.
            if sc.memcg_low_skipped {
                sc.priority = initial_priority;
                sc.force_deactivate = false;
                sc.memcg_low_reclaim = true;
                sc.memcg_low_skipped = false;
                continue;
            }
            return 0;
        }
    }

    /// `shrink_node()`: the cgroups' lists (`shrink_node_memcgs()`); any
    /// progress resets kswapd's failures (a successful direct reclaim
    /// revives a kswapd that gave up).
    fn shrink_node(&mut self, sc: &mut ScanControl) {
        if self.lru_gen_enabled() && sc.target.is_none_or(|m| m == ROOT) {
            self.lru_gen_shrink_node(sc);
            return;
        }
        let before = sc.nr_reclaimed;
        self.shrink_node_memcgs(sc);
        if sc.nr_reclaimed > before {
            self.kswapd.failures = 0;
        }
    }

    /// `shrink_node_memcgs()`: every cgroup of the target's
    /// subtree (the model's is the target alone) gets `shrink_lruvec()`,
    /// then `shrink_slab()` at the same priority.
    /// Global direct reclaim walks the root and then its children in
    /// order (`mem_cgroup_iter()`), partially: it resumes after the cgroup
    /// where the previous walk stopped and stops once `nr_to_reclaim` is
    /// met (a full walk after a fruitless pass). kswapd walks every cgroup
    /// a step at a time instead (`kswapd_step()`).
    fn shrink_node_memcgs(&mut self, sc: &mut ScanControl) {
        let Some(target) = sc.target else {
            self.prepare_scan_control(sc, ROOT);
            let n = self.memcg.memcgs.len() as u16;
            let partial = !sc.memcg_full_walk;
            // mem_cgroup_iter(): a walk resumes after the cgroup where the
            // last one stopped; one that would start past the end restarts
            // at the root, so that every walk sees at least one cgroup.
            let start = match self.buddy.reclaim_pos {
                Some(p) if partial && p + 1 < n => p + 1,
                _ => 0,
            };
            for m in start..n {
                self.buddy.reclaim_pos = Some(m);
                if self.memcg_protected(MemcgId(m), sc) {
                    continue;
                }
                self.shrink_lruvec(MemcgId(m), sc);
                self.shrink_slab(MemcgId(m), sc.priority as u32);
                if partial && sc.nr_reclaimed >= sc.nr_to_reclaim {
                    return;
                }
            }
            self.buddy.reclaim_pos = None;
            return;
        };
        self.prepare_scan_control(sc, target);
        self.shrink_lruvec(target, sc);
        self.shrink_slab(target, sc.priority as u32);
    }

    /// The protection checks of `shrink_node_memcgs()` for a cgroup of
    /// global reclaim: below memory.min it is passed over; below
    /// memory.low too, unless this pass reclaims below it
    /// (`memcg_low_reclaim`), which counts a `low` event (memory.events).
    /// True if it is passed over.
    fn memcg_protected(&mut self, memcg: MemcgId, sc: &mut ScanControl) -> bool {
        if self.mem_cgroup_below_min(sc.target, memcg) {
            return true;
        }
        if self.mem_cgroup_below_low(sc.target, memcg) {
            if !sc.memcg_low_reclaim {
                sc.memcg_low_skipped = true;
                return true;
            }
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::EventsLow, 1);
        }
        false
    }

    /// `apply_proportional_protection()`: a protected cgroup's list is
    /// scanned in proportion to how much of its usage lies above its
    /// protection (memory.low, or memory.min in a pass that reclaims below
    /// low; passing over low marks `memcg_low_skipped`), at least
    /// SWAP_CLUSTER_MAX pages.
    pub(crate) fn apply_proportional_protection(
        &self,
        memcg: MemcgId,
        sc: &mut ScanControl,
        scan: u64,
    ) -> u64 {
        let (min, low) = self.mem_cgroup_protection(sc.target, memcg);
        if min == 0 && low == 0 {
            return scan;
        }
        let protection = if !sc.memcg_low_reclaim && low > min {
            sc.memcg_low_skipped = true;
            low
        } else {
            min
        };
        let cgroup_size = self.memcg.memcgs[memcg.idx()].usage.max(protection);
        let scan =
            scan - (u128::from(scan) * u128::from(protection) / u128::from(cgroup_size + 1)) as u64;
        scan.max(SWAP_CLUSTER_MAX)
    }

    /// `try_to_free_pages()`: global direct reclaim for an allocation below
    /// the min watermark: at least 32 pages from every cgroup's lists,
    /// priority 12 down (`do_try_to_free_pages()` counts allocstall).
    /// Returns the pages reclaimed.
    pub(crate) fn try_to_free_pages(&mut self, movable: bool) -> u64 {
        self.throttle_direct_reclaim();
        let mut sc = ScanControl::new(None, SWAP_CLUSTER_MAX, true, false);
        let ev = if movable {
            VmEvent::AllocStallMovable
        } else {
            VmEvent::AllocStallNormal
        };
        self.vmstat.count_vm_event(ev);
        self.do_try_to_free_pages(&mut sc)
    }

    /// `prepare_scan_control()`: the cost balance, which active lists may be
    /// deactivated, and `cache_trim_mode`.
    fn prepare_scan_control(&mut self, sc: &mut ScanControl, target: MemcgId) {
        if self.lru_gen_enabled() {
            return;
        }
        // mem_cgroup_flush_stats_ratelimited(): the periodic worker keeps
        // the flushed sizes at most FLUSH_TIME old (mm/memcg_rstat.rs).
        self.flush_memcg_stats_dwork_due();
        if !sc.cgroup_reclaim() {
            // file_is_tiny: the node's file pages plus free pages would not
            // reach the high watermark, and anon can be scanned instead.
            let lru = self.node_lru_state();
            let file = lru[LRU_INACTIVE_FILE] + lru[LRU_ACTIVE_FILE];
            let free = self.buddy.nr_free_pages();
            sc.file_is_tiny = file + free <= self.buddy.marks().high
                && lru[LRU_INACTIVE_ANON] >> sc.priority != 0;
        }
        let l = &self.memcg.memcgs[target.idx()].lruvec;
        sc.anon_cost = l.anon_cost;
        sc.file_cost = l.file_cost;
        if sc.force_deactivate {
            sc.may_deactivate = DEACTIVATE_ANON | DEACTIVATE_FILE;
        } else {
            // Refaults activated since the last reclaim of this target mean
            // a new workingset is forming: deactivate (mm/workingset.rs).
            sc.may_deactivate = 0;
            let refaults = self.workingset_activations(target);
            let seen = self.memcg.memcgs[target.idx()].lruvec.refaults;
            if refaults[0] != seen[0] || self.inactive_is_low(target, LRU_INACTIVE_ANON) {
                sc.may_deactivate |= DEACTIVATE_ANON;
            }
            if refaults[1] != seen[1] || self.inactive_is_low(target, LRU_INACTIVE_FILE) {
                sc.may_deactivate |= DEACTIVATE_FILE;
            }
        }
        if sc.file_is_tiny && sc.may_deactivate & DEACTIVATE_ANON != 0 {
            sc.file_is_tiny = false;
        }
        let file = self.lru_state(target)[LRU_INACTIVE_FILE];
        sc.cache_trim_mode = file >> sc.priority != 0 && sc.may_deactivate & DEACTIVATE_FILE == 0;
    }

    /// `inactive_is_low()`: the inactive list is below its share
    /// (`int_sqrt(10 * GB)` : 1 against the active list).
    fn inactive_is_low(&self, memcg: MemcgId, inactive_lru: usize) -> bool {
        let lru = &self.lru_state(memcg);
        let inactive = lru[inactive_lru];
        let active = lru[inactive_lru + LRU_ACTIVE];
        let gb = (inactive + active) >> (30 - crate::include::linux::pgtable::PAGE_SHIFT);
        let ratio = if gb > 0 { (10 * gb).isqrt() } else { 1 };
        inactive * ratio < active
    }

    /// `can_reclaim_anon_pages()`: free swap space exists (`memcg` None)
    /// or the cgroup is below its memory.swap.max as well.
    pub(crate) fn can_reclaim_anon_pages(&self, memcg: Option<MemcgId>) -> bool {
        self.mem_cgroup_get_nr_swap_pages(memcg.unwrap_or(ROOT)) > 0
    }

    /// `can_age_anon_pages()`: swap is present.
    fn can_age_anon_pages(&self) -> bool {
        !self.swap.is_empty()
    }
}

/// A `shrink_lruvec()` in progress (kswapd's goes a round at a time).
#[derive(Clone, Debug)]
struct LruvecScan {
    /// What is left of each list's budget.
    nr: [u64; NR_LRU_LISTS],
    /// Each list's budget at the start.
    targets: [u64; NR_LRU_LISTS],
    nr_reclaimed: u64,
    /// `proportional_reclaim`: scan the whole budget.
    proportional_reclaim: bool,
}

/// `enum scan_balance` (SCAN_ANON: `swappiness=max` in memory.reclaim, or a
/// tiny file LRU under global reclaim).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanBalance {
    Equal,
    Fract,
    File,
    Anon,
}

impl<A: Arch> Kernel<A> {
    /// `get_scan_count()`: how many pages of each list to scan at this
    /// priority: file only without usable swap, in cgroup reclaim with
    /// swappiness 0, or in `cache_trim_mode`; both equally at priority 0
    /// (unless swappiness is 0); else in proportion to swappiness and the
    /// recent reclaim costs (`calculate_pressure_balance()`).
    fn get_scan_count(&self, memcg: MemcgId, sc: &mut ScanControl) -> [u64; NR_LRU_LISTS] {
        let swappiness = self.sc_swappiness(sc);
        let balance = if !sc.may_swap || !self.can_reclaim_anon_pages(Some(memcg)) {
            ScanBalance::File
        } else if sc.cgroup_reclaim() && swappiness == 0 {
            // Global reclaim swaps even then, to prevent OOM.
            ScanBalance::File
        } else if swappiness == SWAPPINESS_ANON_ONLY {
            ScanBalance::Anon
        } else if sc.priority == 0 && swappiness != 0 {
            ScanBalance::Equal
        } else if sc.file_is_tiny {
            ScanBalance::Anon
        } else if sc.cache_trim_mode {
            ScanBalance::File
        } else {
            ScanBalance::Fract
        };
        // Only SCAN_FRACT weighs the lists (swappiness 201 is never there).
        let (fraction, denominator) = if balance == ScanBalance::Fract {
            calculate_pressure_balance(sc, swappiness)
        } else {
            ([0; 2], 1)
        };
        let mut nr = [0; NR_LRU_LISTS];
        for (lru, n) in nr.iter_mut().enumerate() {
            let file = is_file_lru(lru);
            let size = self.vmstat.memcg[memcg.idx()].lru[lru];
            let scan = self.apply_proportional_protection(memcg, sc, size) >> sc.priority;
            *n = match balance {
                ScanBalance::Equal => scan,
                ScanBalance::Fract => scan * fraction[file as usize] / denominator,
                ScanBalance::File if file => scan,
                ScanBalance::File => 0,
                ScanBalance::Anon if file => 0,
                ScanBalance::Anon => scan,
            };
        }
        nr
    }

    /// `shrink_lruvec()`: scan the lists in rounds of up to 32 pages each
    /// until the budgets run out or `nr_to_reclaim` is met (then, for
    /// cgroup reclaim, one proportional nudge and stop); then age the anon
    /// active list if its inactive list is low.
    fn shrink_lruvec(&mut self, memcg: MemcgId, sc: &mut ScanControl) {
        if self.lru_gen_enabled() {
            // Cgroup reclaim (global reclaim went to lru_gen_shrink_node()).
            self.lru_gen_shrink_lruvec(memcg, sc);
            return;
        }
        let mut scan = self.lruvec_scan_begin(memcg, sc);
        while self.lruvec_scan_step(&mut scan, memcg, sc) {}
        self.lruvec_scan_end(scan, memcg, sc);
    }

    /// The start of `shrink_lruvec()`: each list's budget at this priority.
    fn lruvec_scan_begin(&self, memcg: MemcgId, sc: &mut ScanControl) -> LruvecScan {
        let nr = self.get_scan_count(memcg, sc);
        LruvecScan {
            nr,
            targets: nr,
            nr_reclaimed: 0,
            // Global direct reclaim at DEF_PRIORITY scans its whole budget.
            proportional_reclaim: !sc.cgroup_reclaim() && !sc.kswapd && sc.priority == DEF_PRIORITY,
        }
    }

    /// One round of `shrink_lruvec()`'s loop: up to 32 pages of every list
    /// with budget left. False once the scan is over.
    fn lruvec_scan_step(
        &mut self,
        scan: &mut LruvecScan,
        memcg: MemcgId,
        sc: &mut ScanControl,
    ) -> bool {
        let nr = &scan.nr;
        if nr[LRU_INACTIVE_ANON] == 0 && nr[LRU_ACTIVE_FILE] == 0 && nr[LRU_INACTIVE_FILE] == 0 {
            return false;
        }
        for lru in 0..NR_LRU_LISTS {
            let n = scan.nr[lru];
            if n != 0 {
                let nr_to_scan = n.min(SWAP_CLUSTER_MAX);
                scan.nr[lru] -= nr_to_scan;
                scan.nr_reclaimed += self.shrink_list(lru, nr_to_scan, memcg, sc);
            }
        }
        if scan.nr_reclaimed < sc.nr_to_reclaim || scan.proportional_reclaim {
            return true;
        }
        proportional_nudge(&mut scan.nr, &scan.targets)
    }

    /// The end of `shrink_lruvec()`: count what it reclaimed, and age the
    /// anon active list if its inactive list is low.
    fn lruvec_scan_end(&mut self, scan: LruvecScan, memcg: MemcgId, sc: &mut ScanControl) {
        sc.nr_reclaimed += scan.nr_reclaimed;
        if self.can_age_anon_pages() && self.inactive_is_low(memcg, LRU_INACTIVE_ANON) {
            self.shrink_active_list(SWAP_CLUSTER_MAX, memcg, LRU_ACTIVE_ANON, sc);
        }
    }

    /// `shrink_list()`: active lists only when deactivation is allowed.
    fn shrink_list(
        &mut self,
        lru: usize,
        nr_to_scan: u64,
        memcg: MemcgId,
        sc: &mut ScanControl,
    ) -> u64 {
        if is_active_lru(lru) {
            let bit = if is_file_lru(lru) {
                DEACTIVATE_FILE
            } else {
                DEACTIVATE_ANON
            };
            if sc.may_deactivate & bit != 0 {
                self.shrink_active_list(nr_to_scan, memcg, lru, sc);
            } else {
                sc.skipped_deactivate = true;
            }
            return 0;
        }
        self.shrink_inactive_list(nr_to_scan, memcg, lru, sc)
    }

    /// `isolate_lru_folios()`: take folios from the tail of the list until
    /// `nr_to_scan` base pages were looked at (a large folio counts all its
    /// pages). Returns them in isolation order and the pages scanned.
    fn isolate_lru_folios(
        &mut self,
        nr_to_scan: u64,
        memcg: MemcgId,
        lru: usize,
    ) -> (Vec<Pfn>, u64) {
        let mut taken = Vec::with_capacity(nr_to_scan.min(SWAP_CLUSTER_MAX) as usize);
        let mut scan = 0;
        while scan < nr_to_scan {
            let list = &self.memcg.memcgs[memcg.idx()].lruvec.lists[lru];
            let Some(folio) = self.lru.tail(list) else {
                break;
            };
            scan += self.mem.folio_nr_pages(folio);
            self.folio_isolate_lru(folio);
            taken.push(folio);
        }
        self.vmstat.trace(Trace::VmscanLruIsolate);
        (taken, scan)
    }

    /// `move_folios_to_lru()`: put isolated folios back (each at the head of
    /// the list its flags say), in order; each active one ages the
    /// non-resident pages (`workingset_age_nonresident()`). Returns the
    /// pages moved.
    pub(crate) fn move_folios_to_lru(&mut self, folios: &[Pfn]) -> u64 {
        let mut nr_moved = 0;
        for &f in folios {
            let nr = self.mem.folio_nr_pages(f);
            let active = self.mem.test(f, PG_ACTIVE);
            let memcg = self.folio_memcg(f);
            self.folio_putback_lru(f);
            nr_moved += nr;
            if active && self.mem.test(f, PG_LRU) {
                self.workingset_age_nonresident(memcg, nr);
            }
        }
        nr_moved
    }

    /// The pgscan/pgsteal event of this reclaimer (`reclaimer_offset()`):
    /// kswapd, proactive (memory.reclaim) or direct (an allocation or a
    /// charge); khugepaged does not reclaim in the model.
    pub(crate) fn reclaim_events(sc: &ScanControl) -> (MemcgEvent, MemcgEvent, VmEvent, VmEvent) {
        if sc.kswapd {
            let m = (MemcgEvent::PgScanKswapd, MemcgEvent::PgStealKswapd);
            (m.0, m.1, VmEvent::PgScanKswapd, VmEvent::PgStealKswapd)
        } else if sc.proactive {
            let m = (MemcgEvent::PgScanProactive, MemcgEvent::PgStealProactive);
            (
                m.0,
                m.1,
                VmEvent::PgScanProactive,
                VmEvent::PgStealProactive,
            )
        } else {
            let m = (MemcgEvent::PgScanDirect, MemcgEvent::PgStealDirect);
            (m.0, m.1, VmEvent::PgScanDirect, VmEvent::PgStealDirect)
        }
    }

    /// Whether this reclaim's pgscan/pgsteal/pgrefill events go to
    /// /proc/vmstat: 6.18 counts them there only for reclaim outside a
    /// memory cgroup (`if (!cgroup_reclaim(sc)) __count_vm_events()`);
    /// with `series.reclaim_stats_per_lruvec` (7.x) they are lruvec
    /// statistics (`mod_lruvec_state()`), counted for every reclaim.
    pub(crate) fn reclaim_counts_globally(&self, sc: &ScanControl) -> bool {
        !sc.cgroup_reclaim() || self.cfg.series.reclaim_stats_per_lruvec
    }

    /// The counting `shrink_inactive_list()` does for the pages it scans
    /// and again for those it reclaims: `(global, in_memcg, by_type)`, the
    /// per-reclaimer event of /proc/vmstat (`None`: not counted there),
    /// the cgroup's event and the anon or file event, each by `nr`.
    fn count_reclaim_events(
        &mut self,
        memcg: MemcgId,
        (global, in_memcg, by_type): (Option<VmEvent>, MemcgEvent, VmEvent),
        nr: u64,
    ) {
        if let Some(ev) = global {
            self.vmstat.count_vm_events(ev, nr);
        }
        self.vmstat.count_memcg_events(memcg, in_memcg, nr);
        self.vmstat.count_vm_events(by_type, nr);
    }

    /// `shrink_inactive_list()`: isolate up to `nr_to_scan` pages from the
    /// tail, `shrink_folio_list()` them with references, put the rest back
    /// and count pgscan/pgsteal (the global per-reclaimer counters only for
    /// non-cgroup reclaim) and the reclaim cost.
    fn shrink_inactive_list(
        &mut self,
        nr_to_scan: u64,
        memcg: MemcgId,
        lru: usize,
        sc: &mut ScanControl,
    ) -> u64 {
        let file = is_file_lru(lru);
        let (isolated, nr_scanned) = self.isolate_lru_folios(nr_to_scan, memcg, lru);
        let (m_scan, m_steal, g_scan, g_steal) = Self::reclaim_events(sc);
        let global = self.reclaim_counts_globally(sc);
        let (scan_ev, steal_ev) = if file {
            (VmEvent::PgScanFile, VmEvent::PgStealFile)
        } else {
            (VmEvent::PgScanAnon, VmEvent::PgStealAnon)
        };
        let scan = (global.then_some(g_scan), m_scan, scan_ev);
        self.count_reclaim_events(memcg, scan, nr_scanned);
        if isolated.is_empty() {
            return 0;
        }
        let mut list = isolated;
        list.reverse();
        let (stat, kept) = self.shrink_folio_list(list, sc, false);
        self.move_folios_to_lru(&kept.folios);
        for &f in &kept.written {
            self.folio_end_writeback_reclaim(f);
        }
        let nr_reclaimed = stat.nr_reclaimed;
        let steal = (global.then_some(g_steal), m_steal, steal_ev);
        self.count_reclaim_events(memcg, steal, nr_reclaimed);
        self.lru_note_cost(memcg, file, stat.nr_pageout, nr_scanned - nr_reclaimed);
        self.vmstat.trace(Trace::VmscanLruShrinkInactive);
        nr_reclaimed
    }

    /// `shrink_active_list()`: isolate from the active list's tail; folios
    /// referenced through an executable file mapping stay active, the rest
    /// go to the inactive list with PG_workingset.
    fn shrink_active_list(
        &mut self,
        nr_to_scan: u64,
        memcg: MemcgId,
        lru: usize,
        sc: &mut ScanControl,
    ) {
        let (l_hold, nr_scanned) = self.isolate_lru_folios(nr_to_scan, memcg, lru);
        if self.reclaim_counts_globally(sc) {
            self.vmstat.count_vm_events(VmEvent::PgRefill, nr_scanned);
        }
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgRefill, nr_scanned);
        let (mut l_active, mut l_inactive) = (Vec::new(), Vec::with_capacity(l_hold.len()));
        let mut nr_rotated = 0;
        for folio in l_hold {
            let (referenced, vm_flags) = self.folio_referenced(folio, false, sc.target);
            if referenced != 0 && vm_flags & VM_EXEC != 0 && self.folio_is_file_lru(folio) {
                nr_rotated += self.mem.folio_nr_pages(folio);
                l_active.push(folio);
                continue;
            }
            self.mem.clear(folio, PG_ACTIVE);
            self.mem.set(folio, PG_WORKINGSET);
            l_inactive.push(folio);
        }
        self.move_folios_to_lru(&l_active);
        let nr_deactivate = self.move_folios_to_lru(&l_inactive);
        self.vmstat
            .count_vm_events(VmEvent::PgDeactivate, nr_deactivate);
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgDeactivate, nr_deactivate);
        self.lru_note_cost(memcg, lru >= LRU_FILE, 0, nr_rotated);
        self.vmstat.trace(Trace::VmscanLruShrinkActive);
    }

    /// `folio_check_references()` (classic LRU): a folio seen young through
    /// its page tables gets PG_referenced and one more trip around the
    /// inactive list, or is activated if PG_referenced was set already,
    /// more than one mapping saw it, or it is executable file memory; an
    /// unreferenced folio is reclaimed (RECLAIM_CLEAN for a file folio that
    /// had PG_referenced: dirty ones are then kept, not written).
    fn folio_check_references(&mut self, folio: Pfn, target: Option<MemcgId>) -> FolioRef {
        let (referenced_ptes, vm_flags) = self.folio_referenced(folio, true, target);
        if self.lru_gen_enabled() {
            // MGLRU: a young mapping marks the folio (lru_gen_set_refs());
            // a second sighting activates it.
            if referenced_ptes == 0 {
                return FolioRef::Reclaim;
            }
            return if self.lru_gen_set_refs(folio) {
                FolioRef::Activate
            } else {
                FolioRef::Keep
            };
        }
        let referenced_folio = self.mem.test(folio, PG_REFERENCED);
        self.mem.clear(folio, PG_REFERENCED);
        let file = self.folio_is_file_lru(folio);
        if referenced_ptes != 0 {
            self.mem.set(folio, PG_REFERENCED);
            if referenced_folio || referenced_ptes > 1 || (vm_flags & VM_EXEC != 0 && file) {
                return FolioRef::Activate;
            }
            return FolioRef::Keep;
        }
        if referenced_folio && file {
            return FolioRef::ReclaimClean;
        }
        FolioRef::Reclaim
    }
}

/// `calculate_pressure_balance()`: anon and file weights from swappiness and
/// the relative reclaim costs.
fn calculate_pressure_balance(sc: &ScanControl, swappiness: u64) -> ([u64; 2], u64) {
    let total_cost = sc.anon_cost + sc.file_cost;
    let anon_cost = total_cost + sc.anon_cost;
    let file_cost = total_cost + sc.file_cost;
    let total_cost = anon_cost + file_cost;
    let ap = swappiness * (total_cost + 1) / (anon_cost + 1);
    let fp = (MAX_SWAPPINESS - swappiness) * (total_cost + 1) / (file_cost + 1);
    ([ap, fp], ap + fp)
}

/// The proportional step of `shrink_lruvec()` once `nr_to_reclaim` is met:
/// stop the smaller of anon and file and cut the other to the share of its
/// target not yet scanned. False to stop scanning.
fn proportional_nudge(nr: &mut [u64; NR_LRU_LISTS], targets: &[u64; NR_LRU_LISTS]) -> bool {
    let nr_file = nr[LRU_INACTIVE_FILE] + nr[LRU_ACTIVE_FILE];
    let nr_anon = nr[LRU_INACTIVE_ANON] + nr[LRU_ACTIVE_ANON];
    if nr_file == 0 || nr_anon == 0 {
        return false;
    }
    let (stop, percentage) = if nr_file > nr_anon {
        let scan_target = targets[LRU_INACTIVE_ANON] + targets[LRU_ACTIVE_ANON] + 1;
        (LRU_INACTIVE_ANON, nr_anon * 100 / scan_target)
    } else {
        let scan_target = targets[LRU_INACTIVE_FILE] + targets[LRU_ACTIVE_FILE] + 1;
        (LRU_INACTIVE_FILE, nr_file * 100 / scan_target)
    };
    nr[stop] = 0;
    nr[stop + LRU_ACTIVE] = 0;
    let other = if stop == LRU_FILE {
        LRU_INACTIVE_ANON
    } else {
        LRU_INACTIVE_FILE
    };
    for lru in [other, other + LRU_ACTIVE] {
        let nr_scanned = targets[lru] - nr[lru];
        nr[lru] = targets[lru] * (100 - percentage) / 100;
        nr[lru] -= nr[lru].min(nr_scanned);
    }
    true
}

/// kswapd of the one node (`pgdat->kswapd_wait`, `kswapd_failures`).
#[derive(Debug, Default)]
pub(crate) struct Kswapd {
    /// The `balance_pgdat()` pass in progress; None while kswapd sleeps.
    run: Option<ScanControl>,
    /// Where the pass's current priority round stands.
    round: Round,
    /// `pgdat->kswapd_failures`: passes in a row that reclaimed nothing.
    pub(crate) failures: u32,
    /// kswapd's modelled CPU time (ps): it runs while it is behind the
    /// workload's (`kswapd_run()`).
    clock: u64,
    /// `kswapd_try_to_sleep()`'s short sleep: when it ends (ps), while
    /// kswapd naps after a pass.
    nap_until: Option<u64>,
    /// `balance_pgdat()`'s `zone_boosts[]`: the watermark boost when the
    /// pass began, taken off at its end.
    zone_boost: u64,
    /// `nr_boost_reclaim`: what is left of the boost for the pass to
    /// reclaim; 0 once the node was found unbalanced.
    nr_boost_reclaim: u64,
}

/// `kswapd_try_to_sleep()`: the short sleep, HZ/10 (ps).
const KSWAPD_NAP_PS: u64 = 100_000_000_000;

/// A priority round of `balance_pgdat()`, which kswapd takes a step at a
/// time (`kswapd_step()`).
#[derive(Debug, Default)]
enum Round {
    /// Not begun: the balance check, `kswapd_age_node()`, the scan
    /// control's set-up.
    #[default]
    Start,
    /// `shrink_node_memcgs()`, kswapd's full walk without a reclaim
    /// cookie: at the cgroup `memcg` (all done when it is the number of
    /// cgroups), inside its `shrink_lruvec()` when `scan`;
    /// the pass had reclaimed `reclaimed_before` when the round began.
    Memcgs {
        memcg: u16,
        scan: Option<LruvecScan>,
        reclaimed_before: u64,
    },
    /// MGLRU's `lru_gen_shrink_node()` → `shrink_many()`: the memcg LRU
    /// walk `walk`, inside the `try_to_shrink_lruvec()` of a cgroup (with
    /// its loop's state) when `at`; the round ends at the next step once
    /// `done`.
    LruGen {
        walk: crate::mm::memcg_lru::ShrinkMany,
        at: Option<(MemcgId, crate::mm::lru_gen::TryShrink)>,
        done: bool,
        reclaimed_before: u64,
    },
}

impl Kswapd {
    /// Whether kswapd is awake (woken and not yet balanced).
    pub(crate) fn awake(&self) -> bool {
        self.run.is_some()
    }
}

impl<A: Arch> Kernel<A> {
    /// `pgdat_balanced()` for order 0: the zone's free pages are above its
    /// high watermark, boost included.
    fn pgdat_balanced(&self) -> bool {
        self.buddy.watermark_ok(0, self.buddy.marks().high, false)
    }

    /// `wakeup_kswapd()` from the allocator's slow path, or from
    /// `rmqueue()` after a fallback boosted the watermarks: wake kswapd
    /// unless it is awake already, the node is balanced and not boosted
    /// (`pgdat_watermark_boosted()`), or kswapd has failed
    /// `MAX_RECLAIM_RETRIES` times in a row (the node is left to direct
    /// reclaim). It wakes at the workload's time.
    pub(crate) fn wakeup_kswapd(&mut self) {
        if self.kswapd.awake()
            || self.vmstat.in_kthread()
            || self.kswapd.failures >= MAX_RECLAIM_RETRIES
            || (self.pgdat_balanced() && self.buddy.boost == 0)
        {
            return;
        }
        let now = self.vmstat.task_ps(&self.cfg.prices);
        self.kswapd.clock = self.kswapd.clock.max(now);
        self.kswapd_wake_from_nap();
        self.balance_pgdat_begin();
    }

    /// A wake-up while kswapd naps ends the nap early:
    /// `kswapd_low_wmark_hit_quickly` (`kswapd_try_to_sleep()`).
    fn kswapd_wake_from_nap(&mut self) {
        if self.kswapd.nap_until.take().is_some() {
            self.vmstat
                .count_vm_event(VmEvent::KswapdLowWmarkHitQuickly);
        }
    }

    /// The end of `balance_pgdat()`: `clear_reclaim_active()`, the boost
    /// the pass began with taken off the watermarks, and
    /// `snapshot_refaults()`.
    fn balance_pgdat_end(&mut self) {
        self.buddy.reclaim_active = false;
        let boost = std::mem::take(&mut self.kswapd.zone_boost);
        self.buddy.boost -= boost.min(self.buddy.boost);
        self.snapshot_refaults(None);
    }

    /// kswapd is done with a pass (balanced, or the node is hopeless):
    /// `kswapd_try_to_sleep()` naps for HZ/10 of kswapd's time first.
    fn kswapd_try_to_sleep(&mut self) {
        self.kswapd.nap_until = Some(self.kswapd.clock + KSWAPD_NAP_PS);
    }

    /// The end of kswapd's nap, once the workload's clock (`now`) has
    /// passed it: kswapd sleeps until woken if `prepare_kswapd_sleep()`
    /// still holds (balanced, or hopeless), else it counts
    /// `kswapd_high_wmark_hit_quickly` and starts another pass at the
    /// nap's end. True if it started one.
    fn kswapd_nap_end(&mut self, now: u64) -> bool {
        match self.kswapd.nap_until {
            Some(until) if now >= until => {
                self.kswapd.nap_until = None;
                if self.kswapd.failures >= MAX_RECLAIM_RETRIES || self.pgdat_balanced() {
                    return false;
                }
                self.vmstat
                    .count_vm_event(VmEvent::KswapdHighWmarkHitQuickly);
                self.kswapd.clock = self.kswapd.clock.max(until);
                self.balance_pgdat_begin();
                true
            }
            _ => false,
        }
    }

    /// The start of `balance_pgdat()`: `pageoutrun`, the watermark boost
    /// to reclaim, a kswapd scan control at `DEF_PRIORITY`.
    fn balance_pgdat_begin(&mut self) {
        self.vmstat.count_vm_event(VmEvent::PageOutRun);
        self.kswapd.zone_boost = self.buddy.boost;
        self.kswapd.nr_boost_reclaim = self.buddy.boost;
        let mut sc = ScanControl::new(None, SWAP_CLUSTER_MAX, true, false);
        sc.kswapd = true;
        self.kswapd.run = Some(sc);
        self.kswapd.round = Round::Start;
        // set_reclaim_active(): per-CPU lists keep fewer freed pages.
        self.buddy.reclaim_active = true;
    }

    /// kswapd's turn, taken before each of the workload's allocations while
    /// kswapd is awake: it runs beside the workload, so it takes steps
    /// (`kswapd_step()`) for as long as its modelled CPU time is behind the
    /// workload's (both at the cost profile's prices, `Config::prices`;
    /// docs/fidelity.md says what interleavings this stands for).
    /// Before that, the swap writes that have ended by the workload's
    /// time end (mm/page_io.rs) and a nap that has ended is resolved
    /// (`kswapd_nap_end()`). The workload's clock is priced once, again
    /// only when those counted events of its own.
    pub(crate) fn kswapd_run(&mut self) {
        if self.vmstat.in_kthread()
            || !(self.swap_io.in_flight() || self.kswapd.nap_until.is_some() || self.kswapd.awake())
        {
            return;
        }
        let mut now = self.vmstat.task_ps(&self.cfg.prices);
        if self.swap_io_complete_at(now) {
            now = self.vmstat.task_ps(&self.cfg.prices);
        }
        if self.kswapd_nap_end(now) {
            now = self.vmstat.task_ps(&self.cfg.prices);
        }
        if !self.kswapd.awake() || self.kswapd.clock > now {
            return;
        }
        self.kswapd_steps(|k| k.kswapd.clock <= now);
    }

    /// `allow_direct_reclaim()` without its wake-up: whether the zone's
    /// free pages are above half its min watermark (the pfmemalloc
    /// reserve), or kswapd has given up on the node.
    fn pfmemalloc_ok(&self) -> bool {
        let reserve = self.buddy.marks().min;
        self.kswapd.failures >= MAX_RECLAIM_RETRIES
            || reserve == 0
            || self.buddy.nr_free_pages() > reserve / 2
    }

    /// `throttle_direct_reclaim()`: a task (not a kernel thread) about to
    /// reclaim directly while the free pages are at or below half the min
    /// watermark waits on `pfmemalloc_wait` (`pgscan_direct_throttle`),
    /// kswapd woken if it sleeps, until kswapd wakes it: at the end of a
    /// priority round that leaves `allow_direct_reclaim()` true
    /// (`balance_pgdat()`), or when kswapd goes to sleep
    /// (`prepare_kswapd_sleep()`). kswapd runs meanwhile whatever its
    /// clock, so that it ends ahead of the workload's by the time waited.
    fn throttle_direct_reclaim(&mut self) {
        if self.vmstat.in_kthread() || self.pfmemalloc_ok() {
            return;
        }
        self.vmstat.count_vm_event(VmEvent::PgScanDirectThrottle);
        if !self.kswapd.awake() {
            // allow_direct_reclaim(): kswapd must be awake while tasks wait.
            let now = self.vmstat.task_ps(&self.cfg.prices);
            self.kswapd.clock = self.kswapd.clock.max(now);
            self.kswapd_wake_from_nap();
            self.balance_pgdat_begin();
        }
        self.kswapd_steps(|k| !(matches!(k.kswapd.round, Round::Start) && k.pfmemalloc_ok()));
        // Woken: the task slept until kswapd's time.
        let now = self.vmstat.task_ps(&self.cfg.prices);
        self.vmstat.throttled_ps += self.kswapd.clock.saturating_sub(now);
    }

    /// Run kswapd's steps (`kswapd_step()`) on its CPU as its own task,
    /// advancing its clock by what each costs, while it is awake and
    /// `more` says so.
    fn kswapd_steps(&mut self, more: impl Fn(&Self) -> bool) {
        let prices = std::sync::Arc::clone(&self.cfg.prices);
        // kswapd is its own task: not in the workload's fault, PF_MEMALLOC,
        // with its own reclaim TLB batch (`current->tlb_ubc`), and perf
        // counts its events for it, not for the workload.
        let saved = std::mem::replace(
            &mut self.lru_gen_task,
            crate::mm::lru_gen::LruGenTask {
                memalloc: true,
                ..Default::default()
            },
        );
        let saved_ubc = std::mem::take(&mut self.tlb_ubc);
        let saved_batch = std::mem::take(&mut self.cpus.batch_cpumask);
        // Its own `memcg_nr_pages_over_high`, never paid: a kernel thread
        // does not return to user space.
        let saved_over_high = std::mem::take(&mut self.memcg.nr_pages_over_high);
        let cpu = self.cpus.current;
        let kcpu = self.kswapd_cpu();
        let preempted_mm = self.cpus.cpu[kcpu].loaded_mm;
        let preempted = self.cpus.cpu[kcpu].ours;
        self.vmstat.enter_kthread();
        self.cpus.current = kcpu;
        // A kernel thread: the CPU keeps its mm loaded, lazily.
        self.sched_switch(kcpu, crate::kernel::sched::CpuRun::Idle);
        let mut t = self.vmstat.task_ps(&prices);
        while self.kswapd.awake() && more(self) {
            self.swap_io_complete();
            self.kswapd_step();
            let after = self.vmstat.task_ps(&prices);
            self.kswapd.clock += after - t;
            self.vmstat.kswapd_cpu_ps += after - t;
            t = after;
        }
        if preempted {
            if let Some(mm) = preempted_mm {
                self.sched_switch(kcpu, crate::kernel::sched::CpuRun::User(mm));
            }
        }
        self.cpus.current = cpu;
        self.vmstat.leave_kthread();
        self.tlb_ubc = saved_ubc;
        self.cpus.batch_cpumask = saved_batch;
        self.lru_gen_task = saved;
        self.memcg.nr_pages_over_high = saved_over_high;
    }

    /// kswapd's clock (ps), which its steps advance.
    pub(crate) fn kswapd_clock(&self) -> u64 {
        self.kswapd.clock
    }

    /// The CPU kswapd runs on: the first after the current one that runs
    /// no task of the workload (the node's CPUs; kswapd is woken on an
    /// idle one), else the current CPU, whose task it preempts.
    fn kswapd_cpu(&self) -> usize {
        let (cpu, nr) = (self.cpus.current, self.cpus.nr());
        (1..nr)
            .map(|i| (cpu + i) % nr)
            .find(|&c| !self.cpus.cpu[c].ours)
            .unwrap_or(cpu)
    }

    /// One step of `balance_pgdat()`'s priority loop: the start of a round
    /// (kswapd sleeps if the node is balanced), one round of a cgroup's
    /// `shrink_lruvec()` loop (up to 32 pages of each list), a cgroup's
    /// end (`shrink_slab()`), or the round's end; with MGLRU, one
    /// `evict_folios()` batch of a cgroup's `try_to_shrink_lruvec()`.
    fn kswapd_step(&mut self) {
        let Some(mut sc) = self.kswapd.run.take() else {
            return;
        };
        match std::mem::take(&mut self.kswapd.round) {
            Round::Start => {
                let balanced = self.pgdat_balanced();
                if !balanced && self.kswapd.nr_boost_reclaim > 0 {
                    // Unbalanced: the boost waits, and the pass restarts
                    // as a normal one.
                    self.kswapd.nr_boost_reclaim = 0;
                    sc.priority = DEF_PRIORITY;
                }
                if balanced && self.kswapd.nr_boost_reclaim == 0 {
                    self.balance_pgdat_end();
                    self.kswapd_try_to_sleep();
                    return;
                }
                // Boosted reclaim neither swaps nor writes.
                sc.may_swap = self.kswapd.nr_boost_reclaim == 0;
                self.kswapd_age_node(&mut sc);
                sc.nr_scanned = 0;
                let reclaimed_before = sc.nr_reclaimed;
                // kswapd_shrink_node(): the high watermark's worth of pages.
                sc.nr_to_reclaim = self.buddy.marks().high.max(SWAP_CLUSTER_MAX);
                if self.lru_gen_enabled() {
                    if self.kswapd.nr_boost_reclaim > 0 {
                        // Boosted reclaim clears may_writepage
                        // (balance_pgdat()), without which
                        // lru_gen_shrink_node() does nothing: the round
                        // reclaims nothing, which ends the boosted pass.
                        self.balance_pgdat_round_end(sc, reclaimed_before);
                        return;
                    }
                    self.lru_gen_shrink_node_begin(&mut sc);
                    self.kswapd.round = Round::LruGen {
                        walk: self.memcg.lru.shrink_many_begin(),
                        at: None,
                        done: false,
                        reclaimed_before,
                    };
                    self.kswapd.run = Some(sc);
                    return;
                }
                self.prepare_scan_control(&mut sc, ROOT);
                self.kswapd.round = Round::Memcgs {
                    memcg: 0,
                    scan: None,
                    reclaimed_before,
                };
            }
            Round::Memcgs {
                memcg,
                scan,
                reclaimed_before,
            } => {
                if usize::from(memcg) == self.memcg.memcgs.len() {
                    // shrink_node(): progress revives a failing kswapd.
                    if sc.nr_reclaimed > reclaimed_before {
                        self.kswapd.failures = 0;
                    }
                    self.balance_pgdat_round_end(sc, reclaimed_before);
                    return;
                }
                let m = MemcgId(memcg);
                let (memcg, scan) = if scan.is_none() && self.memcg_protected(m, &mut sc) {
                    (memcg + 1, None)
                } else {
                    let mut scan = scan.unwrap_or_else(|| self.lruvec_scan_begin(m, &mut sc));
                    if self.lruvec_scan_step(&mut scan, m, &mut sc) {
                        (memcg, Some(scan))
                    } else {
                        self.lruvec_scan_end(scan, m, &mut sc);
                        self.shrink_slab(m, sc.priority as u32);
                        (memcg + 1, None)
                    }
                };
                self.kswapd.round = Round::Memcgs {
                    memcg,
                    scan,
                    reclaimed_before,
                };
            }
            Round::LruGen {
                mut walk,
                at,
                done,
                reclaimed_before,
            } => {
                // shrink_many()'s turn: the walk is over, its next cgroup
                // was passed over (`shrink_one()` before any scan), or a
                // cgroup takes one more batch of `try_to_shrink_lruvec()`.
                enum Turn {
                    End,
                    PassedOver,
                    Shrink(MemcgId, crate::mm::lru_gen::TryShrink),
                }
                let turn = match (done, at) {
                    (true, _) => Turn::End,
                    (false, Some((m, st))) => Turn::Shrink(m, st),
                    (false, None) => match self.memcg.lru.shrink_many_next(&mut walk) {
                        None => Turn::End,
                        Some(m) => match self.lru_gen_shrink_one_begin(m) {
                            Some(skip) => {
                                walk.op = Some(skip);
                                Turn::PassedOver
                            }
                            None => Turn::Shrink(m, Default::default()),
                        },
                    },
                };
                let at = match turn {
                    Turn::End => {
                        self.lru_gen_shrink_node_end(&mut sc, reclaimed_before);
                        self.balance_pgdat_round_end(sc, reclaimed_before);
                        return;
                    }
                    Turn::PassedOver => None,
                    Turn::Shrink(m, mut st) => {
                        // set_mm_walk(): kswapd's reclaim carries its own walk.
                        let saved = std::mem::replace(&mut self.lru_gen_task.walk, true);
                        let more = self.lru_gen_shrink_step(m, &mut sc, &mut st);
                        self.lru_gen_task.walk = saved;
                        if more {
                            Some((m, st))
                        } else {
                            walk.op = self.lru_gen_shrink_one_end(m, &sc, st.rotate());
                            None
                        }
                    }
                };
                let done = at.is_none() && self.should_abort_scan(&sc);
                if done {
                    self.memcg.lru.shrink_many_end(&mut walk);
                }
                self.kswapd.round = Round::LruGen {
                    walk,
                    at,
                    done,
                    reclaimed_before,
                };
            }
        }
        self.kswapd.run = Some(sc);
    }

    /// The end of a priority round: the priority rises when the round
    /// scanned less than its aim (`kswapd_shrink_node()`) or reclaimed
    /// nothing. After the last priority kswapd counts a failure if the
    /// pass reclaimed nothing and either sleeps (balanced, or hopeless)
    /// or, as `kswapd()` does when `prepare_kswapd_sleep()` says no,
    /// counts `kswapd_high_wmark_hit_quickly` and starts another pass.
    fn balance_pgdat_round_end(&mut self, mut sc: ScanControl, reclaimed_before: u64) {
        let nr_reclaimed = sc.nr_reclaimed - reclaimed_before;
        let scanned_enough = sc.nr_scanned.max(nr_reclaimed) >= sc.nr_to_reclaim;
        let boosting = self.kswapd.nr_boost_reclaim > 0;
        // Boosted reclaim stops raising the priority at DEF_PRIORITY - 2.
        let raise = !(scanned_enough || boosting && sc.priority == DEF_PRIORITY - 2);
        self.kswapd.nr_boost_reclaim -= nr_reclaimed.min(self.kswapd.nr_boost_reclaim);
        // A boost that reclaims nothing ends the pass.
        let stop = self.kswapd.nr_boost_reclaim > 0 && nr_reclaimed == 0;
        if !stop && (raise || nr_reclaimed == 0) {
            sc.priority -= 1;
        }
        if !stop && sc.priority >= 1 {
            self.kswapd.run = Some(sc);
            return;
        }
        if sc.nr_reclaimed == 0 {
            self.kswapd.failures += 1;
        }
        self.balance_pgdat_end();
        if self.kswapd.failures < MAX_RECLAIM_RETRIES && !self.pgdat_balanced() {
            self.vmstat
                .count_vm_event(VmEvent::KswapdHighWmarkHitQuickly);
            self.balance_pgdat_begin();
        } else {
            self.kswapd_try_to_sleep();
        }
    }

    /// `kswapd_age_node()`: when the node's inactive anon list is low,
    /// deactivate up to 32 pages of every cgroup's active anon list.
    fn kswapd_age_node(&mut self, sc: &mut ScanControl) {
        if self.lru_gen_enabled() {
            self.lru_gen_age_node(sc);
            return;
        }
        if !self.can_age_anon_pages() || !self.inactive_is_low(ROOT, LRU_INACTIVE_ANON) {
            return;
        }
        for m in 0..self.memcg.memcgs.len() as u16 {
            self.shrink_active_list(SWAP_CLUSTER_MAX, MemcgId(m), LRU_ACTIVE_ANON, sc);
        }
    }
}
