//! Reclaim of an isolated folio list (mm/vmscan.c: reclaim_pages(),
//! reclaim_folio_list(), shrink_folio_list(), pageout(),
//! __remove_mapping(); mm/huge_memory.c: split_folio_to_list()), Linux 6.18.
//!
//! Modelled for the MADV_PAGEOUT path (`ignore_references`): anon
//! swap-backed folios get swap slots (large ones split on failure, counting
//! swpout_fallback / split), are unmapped through the rmap
//! (`try_to_unmap`, mm/rmap.rs), written out (`swap_writeout`) and
//! freed when the write finished at once (zram, zeromap); clean page-cache
//! folios are unmapped and dropped; dirty file folios are activated. The
//! batched TLB flush (`try_to_unmap_flush[_dirty]`) runs before each dirty
//! folio's write-out, every 31 freed folios and at the end.
//! Not modelled yet: folio_check_references (LRU aging), lazyfree,
//! writeback throttling, memcg charging, pgscan/pgsteal for this path
//! (the kernel counts them only in shrink_inactive_list()).

use std::collections::VecDeque;

use crate::arch::Arch;
use crate::include::linux::mm_types::{
    PG_ACTIVE, PG_ANON, PG_DIRTY, PG_LRU, PG_PARTIALLY_MAPPED, PG_SWAPBACKED, PG_SWAPCACHE,
};
use crate::include::linux::pgtable::{Pfn, HPAGE_PMD_ORDER};
use crate::mm::vmstat::{MthpStat, Trace, VmEvent};
use crate::Kernel;

/// `PAGEVEC_SIZE`: folios freed per batch.
const PAGEVEC_SIZE: u32 = 31;

/// The deferred-TLB-flush state of reclaim (`struct tlbflush_unmap_batch`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TlbUbc {
    pub flush_required: bool,
    pub writable: bool,
}

/// What one `shrink_folio_list()` call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimStat {
    pub nr_reclaimed: u64,
    pub nr_kept: u64,
}

impl<A: Arch> Kernel<A> {
    /// `try_to_unmap_flush()`
    pub fn try_to_unmap_flush(&mut self) {
        if self.tlb_ubc.flush_required {
            A::tlbbatch_flush(&mut self.vmstat);
            self.tlb_ubc = TlbUbc::default();
        }
    }

    /// `try_to_unmap_flush_dirty()`
    fn try_to_unmap_flush_dirty(&mut self) {
        if self.tlb_ubc.writable {
            self.try_to_unmap_flush();
        }
    }

    /// `reclaim_pages()` → `reclaim_folio_list()`: reclaim an isolated list,
    /// ignoring references; what is left goes back on the LRU.
    pub fn reclaim_pages(&mut self, list: Vec<Pfn>) -> ReclaimStat {
        if list.is_empty() {
            return ReclaimStat::default();
        }
        self.vmstat.trace(Trace::VmscanReclaimPages);
        for &f in &list {
            self.mem.clear(f, PG_ACTIVE);
        }
        let (stat, kept) = self.shrink_folio_list(list);
        for f in kept {
            self.mem.set(f, PG_LRU); // folio_putback_lru()
        }
        stat
    }

    /// `shrink_folio_list(..., ignore_references = true)`. Returns the stats
    /// and the folios kept.
    pub fn shrink_folio_list(&mut self, list: Vec<Pfn>) -> (ReclaimStat, Vec<Pfn>) {
        let mut todo: VecDeque<Pfn> = list.into();
        let mut kept = Vec::new();
        let mut stat = ReclaimStat::default();
        let mut batch = 0;
        while let Some(folio) = todo.pop_front() {
            match self.shrink_one(folio, &mut todo) {
                Some(nr) => {
                    stat.nr_reclaimed += nr;
                    batch += 1;
                    if batch == PAGEVEC_SIZE {
                        self.try_to_unmap_flush();
                        batch = 0;
                    }
                }
                None => {
                    stat.nr_kept += 1;
                    kept.push(folio);
                }
            }
        }
        self.try_to_unmap_flush();
        (stat, kept)
    }

    /// One folio of `shrink_folio_list()`: Some(pages freed) or None (kept).
    fn shrink_one(&mut self, mut folio: Pfn, todo: &mut VecDeque<Pfn>) -> Option<u64> {
        let anon = self.mem.folio_test_anon(folio);
        if anon && self.mem.test(folio, PG_SWAPBACKED) && !self.mem.test(folio, PG_SWAPCACHE) {
            if self.mem.folio_test_large(folio) && self.mem.test(folio, PG_PARTIALLY_MAPPED) {
                folio = self.split_folio_to_list(folio, todo);
            }
            if !self.folio_alloc_swap(folio) {
                if !self.mem.folio_test_large(folio) || self.swap.is_empty() {
                    self.vmstat.count_vm_event(VmEvent::PgActivate);
                    return None;
                }
                let order = self.mem.order(folio);
                if order == HPAGE_PMD_ORDER {
                    self.vmstat.count_vm_event(VmEvent::ThpSwpOutFallback);
                }
                self.vmstat.count_mthp_stat(order, MthpStat::SwpoutFallback);
                folio = self.split_folio_to_list(folio, todo);
                if !self.folio_alloc_swap(folio) {
                    return None;
                }
            }
            self.mem.set(folio, PG_DIRTY);
        }
        if self.mem.folio_mapped(folio) {
            self.try_to_unmap(folio);
            if self.mem.folio_mapped(folio) {
                return None;
            }
        }
        if self.mem.test(folio, PG_DIRTY) {
            if !self.mem.test(folio, PG_SWAPBACKED) {
                // Dirty file folios: reclaim never writes them; activate.
                self.vmstat.count_vm_event(VmEvent::PgActivate);
                return None;
            }
            self.try_to_unmap_flush_dirty();
            if !self.pageout(folio) {
                return None;
            }
        }
        Some(self.remove_mapping_and_free(folio))
    }

    /// `pageout()` → `swap_writeout()`: true if the folio is clean and free
    /// to go now.
    fn pageout(&mut self, folio: Pfn) -> bool {
        if !self.mem.test(folio, PG_SWAPCACHE) {
            return false; // shmem write-out is not modelled
        }
        let zero_or_sync = self.swap_writeout(folio);
        let ty = self.folio_swap(folio).map(|e| e.ty as usize).unwrap_or(0);
        zero_or_sync && (self.swap[ty].synchronous() || self.folio_all_zeromap(folio))
    }

    fn folio_all_zeromap(&self, folio: Pfn) -> bool {
        let e = self.folio_swap(folio).expect("swap cache");
        let nr = self.mem.folio_nr_pages(folio);
        (e.offset..e.offset + nr).all(|o| self.swap[e.ty as usize].zeromap[o as usize])
    }

    /// `__remove_mapping()` + free: drop the folio from the swap cache or
    /// page cache and free it. Returns its pages.
    fn remove_mapping_and_free(&mut self, folio: Pfn) -> u64 {
        let nr = self.mem.folio_nr_pages(folio);
        let anon = self.mem.test(folio, PG_ANON);
        if self.mem.test(folio, PG_SWAPCACHE) {
            self.delete_from_swap_cache(folio);
        } else if !anon {
            let file = self.mem.folio_mapping(folio) as usize - 1;
            let index = self.mem.folio_index(folio) as usize;
            for i in 0..nr as usize {
                self.files[file].pages[index + i] = crate::mm::filemap::NO_PAGE;
            }
        }
        self.mem.clear(folio, PG_PARTIALLY_MAPPED);
        self.folio_free(folio);
        nr
    }

    /// `split_folio_to_list()`: unmap the folio to migration entries and
    /// back (`unmap_folio()` / `remap_page()`), split it into order-0 folios
    /// and queue the tails. Returns the head.
    pub fn split_folio_to_list(&mut self, folio: Pfn, todo: &mut VecDeque<Pfn>) -> Pfn {
        let order = self.mem.order(folio);
        let nr = 1u64 << order;
        self.vmstat.sim.folio_split += 1;
        // A PMD-mapped folio is frozen at PMD level (one flush per PMD in
        // split_huge_pmd); a PTE-mapped one goes through migration entries.
        if self.mem.large(folio).entire_mapcount > 0 {
            self.split_folio_pmds(folio);
        } else {
            self.migrate_cycle_ptes(folio);
        }
        self.mem.split_to_order0(folio);
        // The folio's swap slots (if any) now belong to each page.
        if let Some(e) = self.swap_of.remove(&folio.0) {
            for i in 0..nr {
                self.swap_of.insert(
                    folio.0 + i as u32,
                    crate::mm::swapfile::SwpEntry {
                        ty: e.ty,
                        offset: e.offset + i,
                    },
                );
            }
        }
        self.vmstat.count_mthp_stat(order, MthpStat::Split);
        if order == HPAGE_PMD_ORDER {
            self.vmstat.count_vm_event(VmEvent::ThpSplitPage);
        }
        for i in 1..nr {
            todo.push_back(folio.plus(i));
        }
        folio
    }
}
