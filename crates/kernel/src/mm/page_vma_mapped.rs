//! The walk over one VMA's mappings of a folio (mm/page_vma_mapped.c:
//! page_vma_mapped_walk(), map_pte(), check_pte(), check_pmd();
//! include/linux/rmap.h: DEFINE_FOLIO_VMA_WALK(),
//! page_vma_mapped_walk_restart()), Linux 6.18.
//!
//! Every rmap user that looks at page-table entries walks through here:
//! `folio_referenced_one()`, `try_to_unmap_one()`, `try_to_migrate_one()`
//! (mm/rmap.rs) and `remove_migration_pte()` (mm/migrate.rs). Entries are
//! read as the kernel reads them, so `sim/ptep_get` counts the walk's own
//! loads: `map_pte()` reads the first entry of a table unless PVMW_SYNC
//! takes the lock instead, `check_pte()` reads each candidate again, and
//! the `next_pte` loop reads every entry it steps over. Crossing into
//! another table restarts from the PMD.
//!
//! Migration entries: the model leaves the entries of a folio being split
//! in place (present, as `__split_huge_pmd()` with freeze does) instead of
//! writing swap-format migration entries, so with PVMW_MIGRATION the walk
//! matches those present entries where the kernel matches the migration
//! entries standing in their place.
//! Not modelled: hugetlb, device-private and device-exclusive entries,
//! PMD migration entries (the model splits a PMD before migrating).

use crate::arch::Arch;
use crate::include::linux::pgtable::{pmd_addr_end, pte_index, Pfn, HPAGE_PMD_NR};
use crate::include::linux::pgtable::{PAGE_SIZE, PMD_SIZE};
use crate::mm::pgtable_generic::{PmdSlot, TableId};
use crate::mm::rmap::RmapHit;
use crate::{Kernel, MmId};

/// `PVMW_SYNC`: `map_pte()` takes the table lock without reading the first
/// entry (TTU_SYNC callers).
pub(crate) const PVMW_SYNC: u8 = 1 << 0;
/// `PVMW_MIGRATION`: look for the migration entries of a folio being split
/// (in the model, its entries left in place; see the file header).
pub(crate) const PVMW_MIGRATION: u8 = 1 << 1;

/// `struct page_vma_mapped_walk` over one VMA's range of a folio.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pvmw {
    mm: MmId,
    pfn: Pfn,
    nr_pages: u64,
    /// The address of the last hit (of the PMD's first page for a PMD hit).
    pub(crate) address: u64,
    /// `vma_address_end()`
    pub(crate) end: u64,
    flags: u8,
    /// The PTE table mapped at the last hit (`pvmw->pte` set).
    pte: Option<TableId>,
    /// The last hit was the PMD (`pvmw->pmd && !pvmw->pte`).
    pmd_hit: bool,
    done: bool,
}

/// A mapping of the folio found by the walk.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PvmwHit {
    Pte { tid: TableId, idx: usize },
    Pmd { pmd: PmdSlot },
}

impl Pvmw {
    /// `DEFINE_FOLIO_VMA_WALK()`: the pages `[pfn, pfn + nr_pages)` in the
    /// VMA of an rmap hit, whose `addr` is the address of `pfn` (possibly
    /// below `vm_start`). The range is clipped to the VMA.
    pub(crate) fn new(pfn: Pfn, nr_pages: u64, hit: &RmapHit, flags: u8) -> Pvmw {
        Pvmw {
            mm: hit.mm,
            pfn,
            nr_pages,
            address: hit.addr.max(hit.vma.vm_start),
            end: (hit.addr + nr_pages * PAGE_SIZE).min(hit.vma.vm_end),
            flags,
            pte: None,
            pmd_hit: false,
            done: false,
        }
    }

    /// `page_vma_mapped_walk_restart()`: walk again from the PMD of the
    /// current address (after the caller split the PMD it was given).
    pub(crate) fn restart(&mut self) {
        self.pte = None;
        self.pmd_hit = false;
        self.done = false;
    }

    /// `page_vma_mapped_walk_done()`: no further hits.
    pub(crate) fn finish(&mut self) {
        self.done = true;
    }

    /// Whether a PFN mapped at one entry lies in the walk's pages.
    fn covers(&self, pfn: Pfn, nr: u64) -> bool {
        let (pfn, first) = (pfn.0 as u64, self.pfn.0 as u64);
        pfn + nr > first && pfn < first + self.nr_pages
    }
}

impl<A: Arch> Kernel<A> {
    /// `page_vma_mapped_walk()`: the next PTE (or the PMD) of the walk's
    /// range that maps a page of the folio; None when there is none left.
    /// A trans-huge PMD is the only hit of its range; with PVMW_MIGRATION
    /// it ends the walk (no PMD migration entries in the model).
    #[inline(always)]
    pub(crate) fn page_vma_mapped_walk(&mut self, w: &mut Pvmw) -> Option<PvmwHit> {
        if w.done || w.pmd_hit {
            w.done = true;
            return None;
        }
        if let Some(tid) = w.pte {
            return self.pvmw_next_pte(w, tid);
        }
        self.pvmw_from_pmd(w)
    }

    /// The part of `page_vma_mapped_walk()` that starts from the PMD of
    /// the walk's address (its first call, a restart, or a new table).
    fn pvmw_from_pmd(&mut self, w: &mut Pvmw) -> Option<PvmwHit> {
        loop {
            if w.address >= w.end {
                w.done = true;
                return None;
            }
            let Some(pmd) = self.walk_to_pmd_cached(w.mm, w.address) else {
                w.address = pmd_addr_end(w.address, u64::MAX);
                continue;
            };
            let pmdval = self.pmdp_get(pmd);
            if A::pmd_trans_huge(pmdval) {
                let hit =
                    w.flags & PVMW_MIGRATION == 0 && w.covers(A::pte_pfn(pmdval), HPAGE_PMD_NR);
                w.done = !hit;
                w.pmd_hit = hit;
                return hit.then_some(PvmwHit::Pmd { pmd });
            }
            let Some(tid) = self.entry_table(pmdval) else {
                w.address = pmd_addr_end(w.address, u64::MAX);
                continue;
            };
            w.pte = Some(tid);
            let idx = pte_index(w.address);
            // map_pte(): without PVMW_SYNC, a first entry that maps nothing
            // sends the walk on without check_pte().
            let mapped = w.flags & PVMW_SYNC != 0
                || A::pte_present(A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim));
            if mapped && self.pvmw_check_pte(w, tid, idx) {
                return Some(PvmwHit::Pte { tid, idx });
            }
            return self.pvmw_next_pte(w, tid);
        }
    }

    /// The `next_pte:` loop of `page_vma_mapped_walk()`.
    #[inline(always)]
    fn pvmw_next_pte(&mut self, w: &mut Pvmw, tid: TableId) -> Option<PvmwHit> {
        loop {
            w.address += PAGE_SIZE;
            if w.address >= w.end {
                w.done = true;
                return None;
            }
            if w.address & (PMD_SIZE - PAGE_SIZE) == 0 {
                w.pte = None; // PVMW_PGTABLE_CROSSED: restart
                return self.pvmw_from_pmd(w);
            }
            let idx = pte_index(w.address);
            if A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim) == 0 {
                continue;
            }
            if self.pvmw_check_pte(w, tid, idx) {
                return Some(PvmwHit::Pte { tid, idx });
            }
        }
    }

    /// The walk of a single page (an order-0 folio) in the VMA of `hit`:
    /// its one hit, if any, and the hit's address. The same walk as a
    /// [`Pvmw`] of one page with `flags`, its entry reads counted alike
    /// (`map_pte()` without PVMW_SYNC, `check_pte()`), without the walk
    /// state: a one-page range has no next entry to step to, and the walk
    /// ends after its first hit. A PMD split after a PMD hit restarts the
    /// walk, which is this call again.
    #[inline(always)]
    pub(crate) fn pvmw_one_page(
        &mut self,
        pfn: Pfn,
        hit: &RmapHit,
        flags: u8,
    ) -> Option<(PvmwHit, u64)> {
        let address = hit.addr.max(hit.vma.vm_start);
        let end = (hit.addr + PAGE_SIZE).min(hit.vma.vm_end);
        if address >= end {
            return None;
        }
        // Past a missing PMD table the walk moves to the next PMD, which
        // lies beyond a one-page range.
        let pmd = self.walk_to_pmd_cached(hit.mm, address)?;
        let pmdval = self.pmdp_get(pmd);
        if A::pmd_trans_huge(pmdval) {
            let first = A::pte_pfn(pmdval).0 as u64;
            let covers = first <= pfn.0 as u64 && (pfn.0 as u64) < first + HPAGE_PMD_NR;
            return (flags & PVMW_MIGRATION == 0 && covers)
                .then_some((PvmwHit::Pmd { pmd }, address));
        }
        let tid = self.entry_table(pmdval)?;
        let idx = pte_index(address);
        if flags & PVMW_SYNC == 0
            && !A::pte_present(A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim))
        {
            return None;
        }
        let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
        (A::pte_present(pte) && A::pte_pfn(pte) == pfn)
            .then_some((PvmwHit::Pte { tid, idx }, address))
    }

    /// `check_pte()`: a present entry mapping a page of the folio.
    fn pvmw_check_pte(&mut self, w: &Pvmw, tid: TableId, idx: usize) -> bool {
        let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
        A::pte_present(pte) && w.covers(A::pte_pfn(pte), 1)
    }
}
