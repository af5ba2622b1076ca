//! The remap half of a folio split (mm/migrate.c: remove_migration_ptes(),
//! remove_migration_pte(), try_to_map_unused_to_zeropage()), Linux 6.18.
//!
//! After `try_to_migrate()` (mm/rmap.rs) left migration entries and the
//! folio was split, `remap_page()` gives each new order-0 folio its
//! mappings back with RMP_USE_SHARED_ZEROPAGE: one `rmap_walk()` per new
//! folio, and in each VMA one `page_vma_mapped_walk()` with PVMW_SYNC |
//! PVMW_MIGRATION (mm/page_vma_mapped.rs) over the entries that stand for
//! the migration entries. A zero-filled page is mapped by the shared zero
//! page instead and loses its mapping; any other entry is restored.
//! The model keeps a folio's mapcounts through the cycle instead of
//! removing them in `try_to_migrate_one()` and adding them here; only a
//! zero-page remap drops one (`folio_remove_rmap_ptes()`).
//! Not modelled: migration between folios (only the split's own cycle),
//! mlocked pages, soft-dirty and uffd-wp bits.

use crate::arch::Arch;
use crate::include::linux::pgtable::Pfn;
use crate::mm::mmap::MM_ANONPAGES;
use crate::mm::page_vma_mapped::{Pvmw, PvmwHit, PVMW_MIGRATION, PVMW_SYNC};
use crate::mm::pgtable_generic::TableId;
use crate::mm::rmap::RmapHit;
use crate::Kernel;

impl<A: Arch> Kernel<A> {
    /// `remap_page()`: `remove_migration_ptes(folio, folio,
    /// RMP_USE_SHARED_ZEROPAGE)` for each of the `nr` new order-0 folios
    /// from `first` of a split anon folio, restoring every migration
    /// entry. One walk over the old folio's pages finds the VMAs; each
    /// page's own walk (counted) is the part of them that holds it.
    pub(crate) fn remap_split_pages(&mut self, first: Pfn, nr: u64) {
        let span = self.rmap_walk_span(first, nr);
        let index = self.mem.folio_index(first);
        for i in 0..nr {
            self.vmstat.sim.rmap_walk += 1;
            let page = first.plus(i);
            let page_index = index.wrapping_add(i as u32);
            for hit in &span {
                if let Some(hit) = Self::rmap_hit_of_page(hit, page_index) {
                    self.remove_migration_pte(page, &hit);
                }
            }
        }
    }

    /// `remove_migration_pte()` for one VMA. Restoring an entry is a
    /// `set_pte_at()` of the entry the model left in place (counted only).
    fn remove_migration_pte(&mut self, folio: Pfn, hit: &RmapHit) {
        let nr_pages = self.mem.folio_nr_pages(folio);
        if nr_pages == 1 {
            // The split's new folios: a walk of one entry.
            let flags = PVMW_SYNC | PVMW_MIGRATION;
            if let Some((PvmwHit::Pte { tid, idx }, _)) = self.pvmw_one_page(folio, hit, flags) {
                self.restore_migration_pte(hit, tid, idx);
            }
            return;
        }
        let mut w = Pvmw::new(folio, nr_pages, hit, PVMW_SYNC | PVMW_MIGRATION);
        while let Some(h) = self.page_vma_mapped_walk(&mut w) {
            let PvmwHit::Pte { tid, idx } = h else {
                unreachable!("a migration walk has no PMD hits");
            };
            self.restore_migration_pte(hit, tid, idx);
        }
    }

    /// The body of `remove_migration_pte()`'s loop for the entry at `idx`:
    /// the zero page for an unused page, else the entry restored.
    fn restore_migration_pte(&mut self, hit: &RmapHit, tid: TableId, idx: usize) {
        let old = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
        if !self.try_to_map_unused_to_zeropage(hit, A::pte_pfn(old), tid, idx) {
            self.vmstat.sim.pte_write += 1;
        }
    }

    /// `try_to_map_unused_to_zeropage()`: the page of an order-0 folio
    /// whose migration entry the walk found is zero-filled, so the shared
    /// zero page (read-only, special) maps it instead; its rmap and RSS
    /// drop. Nothing is flushed: the entry replaced was a migration entry.
    /// The page stays on the split's list, unmapped. False for a large
    /// folio or a page with data.
    fn try_to_map_unused_to_zeropage(
        &mut self,
        hit: &RmapHit,
        page: Pfn,
        tid: TableId,
        idx: usize,
    ) -> bool {
        if self.mem.folio_test_large(page) || self.mem.page_nonzero(page) {
            return false;
        }
        let zero = self.zero_pte(&hit.vma);
        self.pt.set(tid, idx, zero);
        self.vmstat.sim.pte_write += 1;
        self.folio_remove_rmap_ptes(page, page, 1, hit.mm);
        self.add_mm_counter(hit.mm, MM_ANONPAGES, -1);
        true
    }
}
