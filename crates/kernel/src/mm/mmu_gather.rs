//! The mmu_gather (mm/mmu_gather.c: tlb_gather_mmu(),
//! tlb_gather_mmu_fullmm(), tlb_next_batch(),
//! __tlb_remove_folio_pages_size(), tlb_flush_mmu(), tlb_finish_mmu();
//! include/asm-generic/tlb.h), Linux 6.18.
//!
//! A zap collects the pages it unmaps in the gather and flushes the TLB
//! once, at tlb_finish_mmu(), unless the gather fills up first. Its
//! capacity is the kernel's: the on-stack bundle of MMU_GATHER_BUNDLE
//! pointers, then batch pages of MAX_GATHER_BATCH pointers each, at most
//! MAX_GATHER_BATCH_COUNT of them, allocated with GFP_NOWAIT on first use
//! (order-0 pages of the simulated machine) and freed at tlb_finish_mmu().
//! A batch counts as full one pointer early (`batch->nr >= batch->max -
//! 1`), so that a folio entry, which takes two pointers (page and
//! ENCODED_PAGE_BIT_NR_PAGES_NEXT count), always fits. A full gather makes
//! the zap flush in the middle (zap_pte_range()'s force_flush and
//! force_break; tlb_remove_page_size() for a PMD), after which the
//! batches are empty and reused.
//!
//! Modelled: the flush count and the batch-page allocations; a fullmm
//! gather (exit_mmap()) flushes nothing, since the exiting mm is no longer
//! loaded on any CPU. Pages are freed by the zap at once (the model has no
//! reference counts to hold until the flush); the flush range is the
//! whole unmapped range, less what forced flushes already covered; the
//! delayed-rmap limit of tlb_next_batch() is not reached because a dirty
//! file PTE flushes at the end of its PTE table (zap_pte_range()).

use crate::arch::Arch;
use crate::include::linux::pgtable::{Pfn, PAGE_SIZE};
use crate::{Kernel, MmId};

/// `MMU_GATHER_BUNDLE`: pointers in the on-stack batch (`tlb->local`).
pub(crate) const MMU_GATHER_BUNDLE: usize = 8;
/// `MAX_GATHER_BATCH`: pointers in a batch page after its header
/// (`struct mmu_gather_batch`: next pointer, nr, max: 16 bytes).
pub(crate) const MAX_GATHER_BATCH: usize = (PAGE_SIZE as usize - 16) / 8;
/// `MAX_GATHER_BATCH_COUNT`: batch pages one gather may allocate.
pub(crate) const MAX_GATHER_BATCH_COUNT: usize = 10000 / MAX_GATHER_BATCH;

const _: () = assert!(MAX_GATHER_BATCH == 510 && MAX_GATHER_BATCH_COUNT == 19);

/// `struct mmu_gather`: what decides the flushes of one zap.
#[derive(Clone, Debug, Default)]
#[doc(alias = "mmu_gather")]
pub(crate) struct MmuGather {
    /// Between `tlb_gather_mmu()` and `tlb_finish_mmu()` of a munmap or an
    /// exit: the zaps of several VMAs add to one gather. Otherwise each
    /// zap (MADV_DONTNEED) is its own gather.
    pub(crate) active: bool,
    /// `tlb->fullmm`: the whole address space goes (exit_mmap()).
    pub(crate) fullmm: bool,
    /// Pages of the gathered ranges (the model takes the whole unmapped
    /// ranges, not only the span of the cleared entries).
    pub(crate) nr_pages: u64,
    /// Entries were cleared.
    pub(crate) cleared: bool,
    /// Non-present entries (swap entries) cleared: they leave the flush
    /// range alone (`zap_nonpresent_ptes()` calls no
    /// `tlb_remove_tlb_entry()`).
    pub(crate) nonpresent_cleared: u64,
    /// `tlb->freed_tables`: page tables were freed.
    pub(crate) freed_tables: bool,
    /// Pages whose entries were cleared since the last flush (`tlb->end`
    /// is set).
    pub(crate) pending: u64,
    /// Pages the forced flushes covered.
    pub(crate) flushed: u64,
    /// Forced flushes so far.
    pub(crate) nr_forced: u64,
    /// The batch pages allocated (`tlb->local.next` list).
    pub(crate) batches: Vec<Pfn>,
    /// The batch being filled: 0 is `tlb->local`, `i` is `batches[i - 1]`.
    pub(crate) active_batch: usize,
    /// `batch->nr` of that batch.
    pub(crate) batch_nr: usize,
}

impl<A: Arch> Kernel<A> {
    /// `tlb_gather_mmu()` (`fullmm = false`: a munmap) or
    /// `tlb_gather_mmu_fullmm()` (exit_mmap()).
    pub(crate) fn tlb_gather_mmu(&mut self, fullmm: bool) {
        self.cpus.gather = MmuGather {
            active: true,
            fullmm,
            ..MmuGather::default()
        };
    }

    /// `__tlb_remove_folio_pages_size()`: `nr` pages of one folio whose
    /// entries the zap cleared go into the gather (one pointer, or two for
    /// more than one page). Returns true when the gather is full: the
    /// caller must flush ([`Kernel::tlb_flush_mmu`]) before it gathers
    /// more.
    pub(crate) fn tlb_remove_folio_pages(&mut self, nr: u64) -> bool {
        let g = &mut self.cpus.gather;
        g.pending += nr;
        g.batch_nr += if nr == 1 { 1 } else { 2 };
        let max = if g.active_batch == 0 {
            MMU_GATHER_BUNDLE
        } else {
            MAX_GATHER_BATCH
        };
        if g.batch_nr >= max - 1 {
            return !self.tlb_next_batch();
        }
        false
    }

    /// An entry was cleared that puts no page into the gather (the zero
    /// page, a special mapping): only the flush range grows
    /// (`tlb_remove_tlb_entry()`).
    pub(crate) fn tlb_remove_tlb_entry(&mut self) {
        self.cpus.gather.pending += 1;
    }

    /// `tlb_next_batch()`: move to the next batch page, allocating one
    /// (GFP_NOWAIT: no reclaim) unless the gather has its
    /// MAX_GATHER_BATCH_COUNT already. False when there is none.
    fn tlb_next_batch(&mut self) -> bool {
        let g = &self.cpus.gather;
        if g.active_batch < g.batches.len() {
            let g = &mut self.cpus.gather;
            g.active_batch += 1;
            g.batch_nr = 0;
            return true;
        }
        if g.batches.len() == MAX_GATHER_BATCH_COUNT {
            return false;
        }
        // __get_free_page(GFP_NOWAIT)
        let unmovable = crate::mm::page_alloc::MIGRATE_UNMOVABLE;
        let Some(page) = self.alloc_page_no_reclaim(unmovable, false) else {
            return false;
        };
        let g = &mut self.cpus.gather;
        g.batches.push(page);
        g.active_batch = g.batches.len();
        g.batch_nr = 0;
        true
    }

    /// `tlb_flush_mmu()` in the middle of a zap: flush what was gathered
    /// since the last flush (nothing if no entry was cleared: `tlb->end`
    /// is 0), then empty the batches for reuse (tlb_batch_pages_flush()).
    pub(crate) fn tlb_flush_mmu(&mut self, mm: MmId) {
        let g = &mut self.cpus.gather;
        let pending = std::mem::take(&mut g.pending);
        g.active_batch = 0;
        g.batch_nr = 0;
        if pending == 0 {
            return;
        }
        g.flushed += pending;
        g.nr_forced += 1;
        if !g.fullmm {
            self.vmstat.sim.tlb_gather_flush += 1;
            self.flush_tlb_mm_range(mm, pending, false);
        }
    }

    /// The end of one `unmap_page_range()` of `nr_pages` pages (`cleared`:
    /// entries were cleared): MADV_DONTNEED's own mmu_gather ends here
    /// (`tlb_finish_mmu()`); a munmap's or an exit's adds to its gather.
    pub(crate) fn tlb_gather_range(&mut self, mm: MmId, nr_pages: u64, cleared: bool) {
        let g = &mut self.cpus.gather;
        g.nr_pages += nr_pages;
        g.cleared |= cleared;
        if !g.active {
            self.tlb_finish_mmu(mm);
        }
    }

    /// `tlb_finish_mmu()`: flush what is left (the gathered range if
    /// entries were cleared since the last forced flush, or page tables
    /// were freed; nothing for a fullmm gather), then free the batch pages
    /// (tlb_batch_list_free()).
    pub(crate) fn tlb_finish_mmu(&mut self, mm: MmId) {
        let g = std::mem::take(&mut self.cpus.gather);
        for page in &g.batches {
            self.free_pages(*page, 0);
        }
        if g.fullmm {
            return;
        }
        let cleared = if g.nr_forced == 0 {
            g.cleared
        } else {
            g.pending > 0
        };
        if cleared {
            self.vmstat.sim.tlb_gather_flush += 1;
        }
        if cleared || g.freed_tables {
            let nr_pages = g.nr_pages.saturating_sub(g.flushed).max(1);
            self.flush_tlb_mm_range(mm, nr_pages, g.freed_tables);
        }
    }
}
