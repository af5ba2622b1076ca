//! Reverse-map accounting (mm/rmap.c: folio_add_new_anon_rmap(),
//! __folio_add_rmap(), folio_add_file_rmap_ptes(), folio_add_file_rmap_pmd(),
//! __folio_remove_rmap(), folio_try_dup_anon_rmap_ptes();
//! include/linux/rmap.h: folio_add_return_large_mapcount(),
//! folio_sub_return_large_mapcount()), Linux 6.18 with CONFIG_PAGE_MAPCOUNT
//! and CONFIG_MM_ID.
//!
//! Maintains per-page mapcounts, the large mapcount, the entire (PMD)
//! mapcount, `_nr_pages_mapped`, the two MM-owner slots with the "maybe
//! mapped shared" bit, PageAnonExclusive, and the partially-mapped flag with
//! its split_deferred accounting. The anon_vma tree is not modelled: an anon
//! folio's mapping is the id of the mm that created it.
//! Not modelled yet: rmap walks (reclaim), NR_ANON_MAPPED/NR_FILE_MAPPED.

use crate::arch::Arch;
use crate::include::linux::mm_types::{
    PG_ANON, PG_ANON_EXCLUSIVE, PG_PARTIALLY_MAPPED, PG_SWAPBACKED, PG_UPTODATE,
};
use crate::include::linux::pgtable::{Pfn, HPAGE_PMD_ORDER};
use crate::mm::mmap::Vma;
use crate::mm::vmstat::{MthpStat, VmEvent};
use crate::{Kernel, MmId};

impl<A: Arch> Kernel<A> {
    /// `folio_add_return_large_mapcount()`: MM-owner slot bookkeeping.
    fn large_mapcount_add(&mut self, folio: Pfn, diff: i32, mm_id: u32) {
        let l = self.mem.large_mut(folio);
        l.large_mapcount += diff;
        let new = l.large_mapcount;
        if l.mm_id[0] == mm_id {
            l.mm_id_mapcount[0] += diff;
        } else if l.mm_id[1] == mm_id {
            l.mm_id_mapcount[1] += diff;
        } else if l.mm_id[0] == 0 {
            l.mm_id[0] = mm_id;
            l.mm_id_mapcount[0] = diff;
            if new != diff {
                l.maybe_shared = true;
            }
        } else if l.mm_id[1] == 0 {
            l.mm_id[1] = mm_id;
            l.mm_id_mapcount[1] = diff;
            l.maybe_shared = true;
        } else {
            // A third mm: no slot; the folio stays "maybe shared".
            l.maybe_shared = true;
        }
    }

    /// `folio_sub_return_large_mapcount()`
    fn large_mapcount_sub(&mut self, folio: Pfn, diff: i32, mm_id: u32) {
        let l = self.mem.large_mut(folio);
        l.large_mapcount -= diff;
        let new = l.large_mapcount;
        for s in 0..2 {
            if l.mm_id[s] == mm_id {
                l.mm_id_mapcount[s] -= diff;
                if l.mm_id_mapcount[s] > 0 {
                    return;
                }
                l.mm_id_mapcount[s] = 0;
                l.mm_id[s] = 0;
                break;
            }
        }
        // One slot owning every mapping (or none left) clears the bit.
        if (l.mm_id[0] != 0 && l.mm_id_mapcount[0] == new)
            || (l.mm_id[1] != 0 && l.mm_id_mapcount[1] == new)
            || new == 0
        {
            l.maybe_shared = false;
        }
    }

    /// `folio_add_new_anon_rmap()`: a fresh anon folio mapped exclusively by
    /// PTEs (or by one PMD when `pmd`).
    pub fn folio_add_new_anon_rmap(
        &mut self,
        folio: Pfn,
        vma: &Vma,
        addr: u64,
        pmd: bool,
        mm: MmId,
    ) {
        let nr = self.mem.folio_nr_pages(folio);
        let mm_id = self.mm(mm).mm_id;
        self.mem.set(folio, PG_ANON | PG_SWAPBACKED | PG_UPTODATE);
        self.mem
            .set_folio_mapping(folio, vma.anon_vma.max(1) as u16);
        self.mem.set_folio_index(folio, vma.linear_page_index(addr));
        self.vmstat.sim.rmap_add += 1;
        if nr == 1 {
            self.mem.page_mapcount_add(folio, 1);
            self.mem.set(folio, PG_ANON_EXCLUSIVE);
            return;
        }
        if pmd {
            self.mem.large_mut(folio).entire_mapcount = 1;
            self.large_mapcount_add(folio, 1, mm_id);
            self.mem.set(folio, PG_ANON_EXCLUSIVE);
        } else {
            for i in 0..nr {
                self.mem.page_mapcount_add(folio.plus(i), 1);
                self.mem.set(folio.plus(i), PG_ANON_EXCLUSIVE);
            }
            self.mem.large_mut(folio).nr_pages_mapped = nr as i32;
            self.large_mapcount_add(folio, nr as i32, mm_id);
        }
    }

    /// `__folio_add_rmap()` at PTE level for `nr` pages from `page`.
    fn folio_add_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        self.vmstat.sim.rmap_add += 1;
        let mut first = 0;
        for i in 0..nr {
            if self.mem.page_mapcount_add(page.plus(i), 1) == 1 {
                first += 1;
            }
        }
        if self.mem.folio_test_large(folio) {
            self.mem.large_mut(folio).nr_pages_mapped += first;
            let mm_id = self.mm(mm).mm_id;
            self.large_mapcount_add(folio, nr as i32, mm_id);
        }
    }

    /// `folio_add_file_rmap_ptes()`
    pub fn folio_add_file_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        self.folio_add_rmap_ptes(folio, page, nr, mm);
    }

    /// `folio_try_dup_anon_rmap_ptes()` (fork): the child maps the same
    /// pages; they stop being exclusive.
    pub fn folio_dup_anon_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, child: MmId) {
        for i in 0..nr {
            self.mem.clear(page.plus(i), PG_ANON_EXCLUSIVE);
        }
        self.folio_add_rmap_ptes(folio, page, nr, child);
    }

    /// `__folio_add_rmap()` at PMD level (`folio_add_file_rmap_pmd()`,
    /// `folio_try_dup_anon_rmap_pmd()`).
    pub fn folio_add_rmap_pmd(&mut self, folio: Pfn, mm: MmId) {
        self.vmstat.sim.rmap_add += 1;
        if self.mem.folio_test_anon(folio) {
            self.mem.clear(folio, PG_ANON_EXCLUSIVE);
        }
        self.mem.large_mut(folio).entire_mapcount += 1;
        let mm_id = self.mm(mm).mm_id;
        self.large_mapcount_add(folio, 1, mm_id);
    }

    /// `folio_remove_rmap_ptes()`: drop `nr` PTE mappings from `page`; an
    /// anon large folio left partly mapped is queued for deferred split.
    pub fn folio_remove_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        self.vmstat.sim.rmap_remove += 1;
        let mut last = 0;
        for i in 0..nr {
            if self.mem.page_mapcount_add(page.plus(i), -1) == 0 {
                last += 1;
            }
        }
        if !self.mem.folio_test_large(folio) {
            return;
        }
        let mm_id = self.mm(mm).mm_id;
        self.large_mapcount_sub(folio, nr as i32, mm_id);
        let l = self.mem.large_mut(folio);
        l.nr_pages_mapped -= last;
        let partially = last > 0 && l.entire_mapcount == 0 && l.nr_pages_mapped > 0;
        if partially {
            self.deferred_split_folio(folio);
        }
    }

    /// `folio_remove_rmap_pmd()`
    pub fn folio_remove_rmap_pmd(&mut self, folio: Pfn, mm: MmId) {
        self.vmstat.sim.rmap_remove += 1;
        let mm_id = self.mm(mm).mm_id;
        self.large_mapcount_sub(folio, 1, mm_id);
        let l = self.mem.large_mut(folio);
        l.entire_mapcount -= 1;
        let nr = self.mem.folio_nr_pages(folio) as i32;
        let l = self.mem.large(folio);
        // Pages that become unmapped: all those without a PTE mapping.
        let partially = l.entire_mapcount == 0 && l.nr_pages_mapped > 0 && l.nr_pages_mapped < nr;
        if partially {
            self.deferred_split_folio(folio);
        }
    }

    /// `deferred_split_folio(folio, partially_mapped = true)` for anon folios
    /// above order 1: flag and count once.
    fn deferred_split_folio(&mut self, folio: Pfn) {
        let order = self.mem.order(folio);
        if !self.mem.folio_test_anon(folio)
            || order <= 1
            || self.mem.test(folio, PG_PARTIALLY_MAPPED)
        {
            return;
        }
        self.mem.set(folio, PG_PARTIALLY_MAPPED);
        self.vmstat.count_mthp_stat(order, MthpStat::SplitDeferred);
        if order == HPAGE_PMD_ORDER {
            self.vmstat.count_vm_event(VmEvent::ThpDeferredSplitPage);
        }
    }

    /// `folio_put()` of the last mapping reference: an anon folio with no
    /// mappings left has no references (no swap cache, no pins) and is
    /// freed. Page-cache folios stay cached.
    pub fn folio_put_if_unused(&mut self, folio: Pfn) {
        if self.mem.folio_test_anon(folio) && !self.mem.folio_mapped(folio) {
            self.folio_free(folio);
        }
    }
}
