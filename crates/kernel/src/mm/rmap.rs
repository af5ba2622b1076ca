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
//! its split_deferred accounting. An anon folio's mapping is the id of its
//! anon_vma; anon_vmas keep only their parent (`anon_vma->parent`), which
//! is enough for the rmap walk to find the VMAs of the kernel's interval
//! tree (`anon_vma_in_tree`).
//! Lazyfree (MADV_FREE) folios: `try_to_unmap_one()` unmaps a large one in
//! `folio_pte_batch()` runs (vanilla 6.18) or whole at PMD level
//! (`unmap_huge_pmd_locked()`), and gives up if it was dirtied again.
//! Reclaim's deferred TLB flush: should_defer_flush(),
//! set_tlb_ubc_flush_pending() (arch_tlbbatch_add_pending()),
//! try_to_unmap_flush(), try_to_unmap_flush_dirty(),
//! flush_tlb_batched_pending().
//! Not modelled: NR_ANON_MAPPED/NR_FILE_MAPPED.

use std::num::NonZeroU32;

use crate::arch::Arch;
use crate::include::linux::mm_types::{
    PG_ANON, PG_ANON_EXCLUSIVE, PG_PARTIALLY_MAPPED, PG_SWAPBACKED, PG_UPTODATE,
};
use crate::include::linux::pgtable::Pfn;
use crate::mm::memcontrol::MemcgId;
use crate::mm::mmap::Vma;
use crate::mm::pgtable_generic::TableId;
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
            .set_folio_mapping(folio, vma.anon_vma.map_or(1, AnonVmaId::mapping));
        self.mem.set_folio_index(folio, vma.linear_page_index(addr));
        self.vmstat.sim.rmap_add += 1;
        if !pmd {
            self.vmstat.sim.page_mapcount += nr;
        }
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
        self.vmstat.sim.page_mapcount += nr;
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

    /// `folio_add_anon_rmap_ptes()`: map pages of an anon folio that is
    /// already anon (a swap-cache hit); the caller sets PageAnonExclusive.
    pub fn folio_add_anon_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        self.folio_add_rmap_ptes(folio, page, nr, mm);
    }

    /// `folio_add_file_rmap_ptes()`
    pub fn folio_add_file_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        self.folio_add_rmap_ptes(folio, page, nr, mm);
    }

    /// `folio_try_dup_anon_rmap_ptes()` (fork): the child maps the same
    /// pages; they stop being exclusive (each exclusive page's flag is
    /// cleared atomically, counted as `sim/anon_exclusive_clear`).
    pub fn folio_dup_anon_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, child: MmId) {
        for i in 0..nr {
            if self.mem.test(page.plus(i), PG_ANON_EXCLUSIVE) {
                self.mem.clear(page.plus(i), PG_ANON_EXCLUSIVE);
                self.vmstat.sim.anon_exclusive_clear += 1;
            }
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
        self.vmstat.sim.page_mapcount += nr;
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
        if partially
            && self.mem.folio_test_anon(folio)
            && !self.mem.test(folio, PG_PARTIALLY_MAPPED)
        {
            self.deferred_split_folio(folio, true);
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
        if partially
            && self.mem.folio_test_anon(folio)
            && !self.mem.test(folio, PG_PARTIALLY_MAPPED)
        {
            self.deferred_split_folio(folio, true);
        }
    }

    /// `folio_put()` of a mapping reference: an anon folio with no
    /// mappings, no swap cache and (in the model) no pins has no references
    /// left and is freed. A swap-cache folio keeps the cache's reference.
    /// Page-cache folios stay cached.
    pub fn folio_put_if_unused(&mut self, folio: Pfn) {
        if self.anon_folio_unreferenced(folio) {
            self.folio_free(folio);
        }
    }

    /// An anon folio that nothing maps and the swap cache does not hold:
    /// the caller's reference is its last one.
    pub(crate) fn anon_folio_unreferenced(&self, folio: Pfn) -> bool {
        self.mem.folio_test_anon(folio)
            && !self.mem.folio_mapped(folio)
            && !self
                .mem
                .test(folio, crate::include::linux::mm_types::PG_SWAPCACHE)
    }

    /// `try_to_map_unused_to_zeropage()` for the order-0 anon folio `page`
    /// just split off a large one: a zero-filled page that a PTE maps is
    /// mapped by the shared zero page instead (read-only, special), its
    /// rmap and RSS dropped; nothing is flushed (the kernel replaces a
    /// migration entry, never a present one). The page itself stays on
    /// the split's list, unmapped.
    pub(crate) fn try_to_map_unused_to_zeropage(&mut self, page: Pfn) {
        use crate::include::linux::pgtable::pte_index;
        if self.mem.page_nonzero(page) || !self.mem.folio_mapped(page) {
            return;
        }
        for hit in self.rmap_walk(page) {
            if !hit.vma.contains(hit.addr) {
                continue;
            }
            let Some(tid) = self
                .walk_to_pmd(hit.mm, hit.addr)
                .and_then(|p| self.entry_table(self.pmdp_get(p)))
            else {
                continue;
            };
            let idx = pte_index(hit.addr);
            let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            if !A::pte_present(pte) || A::pte_pfn(pte) != page {
                continue;
            }
            let zero = self.zero_pte(&hit.vma);
            self.pt.set(tid, idx, zero);
            self.vmstat.sim.pte_write += 1;
            self.folio_remove_rmap_ptes(page, page, 1, hit.mm);
            self.add_mm_counter(hit.mm, crate::mm::mmap::MM_ANONPAGES, -1);
        }
    }

    /// `free_swap_cache()` + `folio_put()` as the zap path does
    /// (`free_pages_and_swap_cache()`): an unmapped swap-cache folio whose
    /// slots no PTE references any more leaves the swap cache and is freed.
    pub fn free_swap_cache_and_put(&mut self, folio: Pfn) {
        if self
            .mem
            .test(folio, crate::include::linux::mm_types::PG_SWAPCACHE)
            && !self.mem.folio_mapped(folio)
            && self.folio_swap_unused(folio)
        {
            self.delete_from_swap_cache(folio);
        }
        self.folio_put_if_unused(folio);
    }
}

/// One mapping of a folio found by an rmap walk: the mm, its VMA, and the
/// address of the folio's first page in that VMA (it may lie below
/// `vm_start` when the VMA covers only part of the folio).
#[derive(Clone, Copy, Debug)]
pub struct RmapHit {
    pub mm: MmId,
    pub vma: Vma,
    pub addr: u64,
}

/// An anon_vma (`struct anon_vma`): its slot in `Kernel::anon_vma_parent`,
/// and the value an anon folio's `mapping` holds. Slot 0 is never used, so
/// a VMA without one is `None` at no cost in size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[doc(alias = "anon_vma")]
pub struct AnonVmaId(NonZeroU32);

impl AnonVmaId {
    /// The first anon_vma ever allocated.
    const FIRST: AnonVmaId = AnonVmaId(NonZeroU32::MIN);

    /// The anon_vma an anon folio's `mapping` field names (0: none).
    #[inline]
    pub fn from_mapping(mapping: u16) -> Option<AnonVmaId> {
        NonZeroU32::new(u32::from(mapping)).map(AnonVmaId)
    }

    /// The value of an anon folio's `mapping` field for this anon_vma (ids
    /// above 16 bits are refused at allocation).
    #[inline]
    pub fn mapping(self) -> u16 {
        self.0.get() as u16
    }
}

impl<A: Arch> Kernel<A> {
    /// `anon_vma_alloc()`: a new anon_vma below `parent` (0: a root);
    /// returns its id. Ids are never reused (the kernel's reuse of an
    /// emptied anon_vma in `anon_vma_clone()` is not modelled); the folio's
    /// `mapping` field holds 16 bits, so running out of them is reported.
    pub fn anon_vma_alloc(&mut self, parent: Option<AnonVmaId>) -> AnonVmaId {
        let id = self.anon_vma_parent.len();
        if id > u16::MAX as usize {
            self.unsupported("more than 65535 anon_vmas".into());
            return parent.unwrap_or(AnonVmaId::FIRST);
        }
        self.anon_vma_parent.push(parent);
        AnonVmaId(NonZeroU32::new(id as u32).expect("anon_vma slot 0 is never used"))
    }

    /// Whether a VMA whose anon_vma is `av` is in the interval tree of
    /// anon_vma `of`: `av` is `of` or descends from it (`anon_vma_fork()`
    /// chains a child's VMA into every ancestor's anon_vma).
    #[inline]
    pub fn anon_vma_in_tree(&self, mut av: Option<AnonVmaId>, of: AnonVmaId) -> bool {
        while let Some(a) = av {
            if a == of {
                return true;
            }
            av = self.anon_vma_parent[a.0.get() as usize];
        }
        false
    }

    /// `rmap_walk()`: every VMA that may map `folio`. Anon folios: the VMAs
    /// in the interval tree of the folio's anon_vma (its own and those of
    /// the fork children chained to it); file folios: every VMA of the file
    /// (`i_mmap`).
    pub fn rmap_walk(&mut self, folio: Pfn) -> Vec<RmapHit> {
        self.vmstat.sim.rmap_walk += 1;
        let anon = self.mem.folio_test_anon(folio);
        let mapping = self.mem.folio_mapping(folio);
        let index = self.mem.folio_index(folio);
        let nr = self.mem.folio_nr_pages(folio);
        let mut hits = Vec::new();
        for mm in self.mms.iter().flatten() {
            for v in mm.vmas.values() {
                let ours = if anon {
                    AnonVmaId::from_mapping(mapping)
                        .is_some_and(|of| self.anon_vma_in_tree(v.anon_vma, of))
                } else {
                    v.file.is_some_and(|f| {
                        Self::file_mapping_id(self.open_files[f as usize].mapping) == mapping
                    })
                };
                if !ours {
                    continue;
                }
                // vma_address(): page offset inside the VMA (32-bit index
                // arithmetic, see mm_types.rs), possibly before its start.
                let off = index.wrapping_sub(v.vm_pgoff as u32) as i32 as i64;
                let addr = v.vm_start as i64 + off * 4096;
                let end = addr + nr as i64 * 4096;
                if end > v.vm_start as i64 && addr < v.vm_end as i64 {
                    hits.push(RmapHit {
                        mm: mm.id,
                        vma: *v,
                        addr: addr as u64,
                    });
                }
            }
        }
        hits
    }

    /// `try_to_unmap()` with TTU_BATCH_FLUSH (| TTU_SPLIT_HUGE_PMD |
    /// TTU_SYNC): unmap every mapping of the folio.
    pub fn try_to_unmap(&mut self, folio: Pfn) {
        for hit in self.rmap_walk(folio) {
            if !self.try_to_unmap_one(folio, hit) {
                break; // walk_abort: rmap_one returned false
            }
            if !self.mem.folio_mapped(folio) {
                break; // folio_not_mapped()
            }
        }
    }

    /// `try_to_unmap_one()` for one VMA: the page_vma_mapped_walk() loop.
    /// False when it gave up (`walk_abort`: a lazyfree folio found dirty
    /// again or referenced elsewhere).
    fn try_to_unmap_one(&mut self, folio: Pfn, hit: RmapHit) -> bool {
        use crate::include::linux::pgtable::{pmd_addr_end, pte_index, PAGE_SIZE, PMD_SIZE};
        self.vmstat.sim.ttu_one += 1;
        let nr_folio = self.mem.folio_nr_pages(folio);
        let start = hit.addr.max(hit.vma.vm_start);
        let end = (hit.addr + nr_folio * PAGE_SIZE).min(hit.vma.vm_end);
        let mut addr = start;
        let mut first = true;
        while addr < end {
            let Some(pmd) = self.walk_to_pmd(hit.mm, addr) else {
                addr = pmd_addr_end(addr, end);
                continue;
            };
            let pmdval = self.pmdp_get(pmd);
            if A::pmd_trans_huge(pmdval) {
                if A::pte_pfn(pmdval) == folio && self.folio_test_lazyfree(folio) {
                    return self.unmap_huge_pmd_locked(folio, hit, pmd);
                }
                if A::pte_pfn(pmdval) == folio {
                    // TTU_SPLIT_HUGE_PMD: split, then continue at PTE level.
                    self.split_huge_pmd(
                        hit.mm,
                        &hit.vma,
                        crate::include::linux::pgtable::align_down(addr, PMD_SIZE),
                        pmd,
                    );
                    continue;
                }
                addr = pmd_addr_end(addr, end);
                continue;
            }
            let Some(tid) = self.entry_table(pmdval) else {
                addr = pmd_addr_end(addr, end);
                continue;
            };
            let idx = pte_index(addr);
            // Reads: check_pte + the explicit ptep_get, plus the walk's
            // next-PTE read after the first (TTU_SYNC maps without reading).
            let reads = if first && nr_folio > 1 { 2 } else { 3 };
            let mut pte = 0;
            for _ in 0..reads {
                pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            }
            first = false;
            let page_off = (addr as i64 - hit.addr as i64) / PAGE_SIZE as i64;
            if !A::pte_present(pte)
                || A::pte_special(pte)
                || A::pte_pfn(pte) != folio.plus(page_off as u64)
            {
                addr += PAGE_SIZE;
                continue;
            }
            self.vmstat.sim.pvmw += 1;
            let batch_end = pmd_addr_end(addr, end);
            let nr = self.ttu_batch(folio, tid, idx, ((batch_end - addr) / PAGE_SIZE) as usize);
            if !self.ttu_unmap_ptes(folio, hit, tid, idx, page_off as u64, nr as u64) {
                return false;
            }
            addr += nr as u64 * PAGE_SIZE;
            if nr as u64 == nr_folio {
                break;
            }
        }
        true
    }

    /// `folio_unmap_pte_batch()`: 1 in vanilla 6.18 for anon swap-backed and
    /// file folios; a whole `folio_pte_batch()` with the series switches.
    fn ttu_batch(&mut self, folio: Pfn, tid: TableId, idx: usize, max: usize) -> usize {
        if !self.mem.folio_test_large(folio) {
            return 1;
        }
        if self.folio_test_lazyfree(folio) {
            return self.lazyfree_pte_batch(folio, tid, idx, max);
        }
        let anon = self.mem.folio_test_anon(folio);
        let batched = if anon {
            self.cfg.series.batch_anon_unmap
        } else {
            self.cfg.series.batch_file_unmap
        };
        if !batched {
            return 1;
        }
        self.folio_pte_batch(tid, idx, folio, max, false)
    }

    /// Clear `nr` entries of the folio from `idx`, flush or defer, and turn
    /// them into swap entries (anon), nothing (file) or discard them
    /// (lazyfree), with the rmap and counter updates of one batch. False
    /// when a lazyfree folio's entries had to be put back (walk_abort).
    fn ttu_unmap_ptes(
        &mut self,
        folio: Pfn,
        hit: RmapHit,
        tid: TableId,
        idx: usize,
        page_off: u64,
        nr: u64,
    ) -> bool {
        use crate::include::linux::mm_types::{PG_ANON_EXCLUSIVE, PG_DIRTY};
        use crate::mm::mmap::{MM_ANONPAGES, MM_SWAPENTS};
        self.vmstat.sim.ttu_clear_calls += 1;
        let pteval = A::get_and_clear_full_ptes(
            self.pt.table_mut(tid),
            idx,
            nr as usize,
            &mut self.vmstat.sim,
        );
        if self.should_defer_flush(hit.mm) {
            self.tlbbatch_add_pending(hit.mm, nr);
            self.tlb_ubc.flush_required = true;
            self.tlb_ubc.writable |= A::pte_dirty(pteval);
        } else {
            self.flush_tlb_range(hit.mm, nr);
        }
        if A::pte_dirty(pteval) {
            self.mem.set(folio, PG_DIRTY);
        }
        let page = folio.plus(page_off);
        if self.folio_test_lazyfree(folio) {
            if !self.ttu_lazyfree(folio, hit, tid, idx, pteval, nr) {
                return false;
            }
        } else if self.mem.folio_test_anon(folio) {
            let e = self
                .folio_swap(folio)
                .expect("anon folio in swap cache before unmap");
            let entry = crate::mm::swapfile::SwpEntry {
                ty: e.ty,
                offset: e.offset + page_off,
            };
            self.swap_duplicate(entry, nr);
            let exclusive: Vec<bool> = (0..nr)
                .map(|i| self.mem.test(page.plus(i), PG_ANON_EXCLUSIVE))
                .collect();
            if exclusive.iter().any(|&x| x) {
                self.vmstat.sim.anon_share += 1;
                for i in 0..nr {
                    self.mem.clear(page.plus(i), PG_ANON_EXCLUSIVE);
                }
            }
            self.add_mm_counter(hit.mm, MM_ANONPAGES, -(nr as i64));
            self.add_mm_counter(hit.mm, MM_SWAPENTS, nr as i64);
            for i in 0..nr {
                let swp = A::swp_entry_to_pte(entry.ty, entry.offset + i, exclusive[i as usize]);
                self.pt.set(tid, idx + i as usize, swp);
            }
            self.vmstat.sim.swap_pte_write += nr;
            self.vmstat.sim.pte_write += nr;
        } else {
            let c = self.mm_counter_file(folio);
            self.add_mm_counter(hit.mm, c, -(nr as i64));
        }
        self.folio_remove_rmap_ptes(folio, page, nr, hit.mm);
        true
    }

    /// `folio_unmap_pte_batch()` for a lazyfree large folio (batched since
    /// v6.15, Barry Song's series): `folio_pte_batch_flags()` with
    /// FPB_RESPECT_WRITE, so the batch also ends where the write permission
    /// changes (restoring it must not make entries writable).
    fn lazyfree_pte_batch(&mut self, folio: Pfn, tid: TableId, idx: usize, max: usize) -> usize {
        let nr = self.folio_pte_batch(tid, idx, folio, max, false);
        let t = self.pt.table(tid);
        let write = A::pte_write(t[idx]);
        (1..nr)
            .find(|&i| A::pte_write(t[idx + i]) != write)
            .unwrap_or(nr)
    }

    /// The MADV_FREE branch of `try_to_unmap_one()` after the entries were
    /// cleared and flushed: a folio dirtied again since MADV_FREE (through
    /// an entry or PG_dirty) gets its entries back with one `set_ptes()`
    /// and becomes swap-backed again; so does one with an extra reference
    /// (its entries back only). Otherwise the pages are simply dropped from
    /// the mm's anon count (one update per batch). False on abort.
    fn ttu_lazyfree(
        &mut self,
        folio: Pfn,
        hit: RmapHit,
        tid: TableId,
        idx: usize,
        pteval: u64,
        nr: u64,
    ) -> bool {
        use crate::include::linux::mm_types::{PG_DIRTY, PG_SWAPBACKED};
        let dirty = self.mem.test(folio, PG_DIRTY);
        if dirty || self.pinned == Some(folio) {
            let span = crate::arch::FolioSpan {
                pfn: folio,
                nr: self.mem.folio_nr_pages(folio),
            };
            let table = self.pt.table_mut(tid);
            A::set_ptes(table, idx, pteval, nr as usize, span, &mut self.vmstat.sim);
            if dirty {
                self.mem.set(folio, PG_SWAPBACKED);
            }
            return false;
        }
        self.add_mm_counter(hit.mm, crate::mm::mmap::MM_ANONPAGES, -(nr as i64));
        true
    }

    /// `unmap_huge_pmd_locked()` → `__discard_anon_folio_pmd_locked()`: a
    /// PMD-mapped lazyfree THP is discarded whole, without a PMD split,
    /// unless it is dirty again (then it becomes swap-backed) or has an
    /// extra reference. `pmdp_huge_clear_flush()` flushes the 2 MiB; the
    /// deposited table is freed. False when the folio stays.
    fn unmap_huge_pmd_locked(
        &mut self,
        folio: Pfn,
        hit: RmapHit,
        pmd: crate::mm::pgtable_generic::PmdSlot,
    ) -> bool {
        use crate::include::linux::mm_types::{PG_DIRTY, PG_SWAPBACKED};
        use crate::include::linux::pgtable::{align_down, HPAGE_PMD_NR, PMD_SIZE};
        let pmdval = self.pmdp_get(pmd);
        if A::pte_dirty(pmdval) {
            self.mem.set(folio, PG_DIRTY);
        }
        if self.mem.test(folio, PG_DIRTY) {
            self.mem.set(folio, PG_SWAPBACKED);
            return false;
        }
        self.vmstat.sim.pvmw += 1;
        self.pt.set(pmd.table, pmd.idx, 0);
        self.vmstat.sim.pmd_clear += 1;
        self.flush_tlb_range(hit.mm, HPAGE_PMD_NR);
        if self.pinned == Some(folio) {
            self.pt.set(pmd.table, pmd.idx, pmdval);
            self.vmstat.sim.pmd_set += 1;
            return false;
        }
        self.folio_remove_rmap_pmd(folio, hit.mm);
        let haddr = align_down(hit.addr.max(hit.vma.vm_start), PMD_SIZE);
        if let Some((tpfn, _)) = self.withdraw_pgtable(hit.mm, haddr) {
            self.pgtable_free(tpfn); // zap_deposited_table()
        }
        self.add_mm_counter(
            hit.mm,
            crate::mm::mmap::MM_ANONPAGES,
            -(HPAGE_PMD_NR as i64),
        );
        true
    }

    /// Split every PMD mapping of a folio into PTEs (anon) or zap it (file)
    /// before a folio split: `unmap_folio()`'s TTU_SPLIT_HUGE_PMD, which
    /// `try_to_migrate_one()` / `try_to_unmap_one()` carry out with
    /// `split_huge_pmd_address()`.
    pub fn split_folio_pmds(&mut self, folio: Pfn) {
        use crate::include::linux::pgtable::{align_down, PMD_SIZE};
        if !self.mem.folio_test_large(folio) || self.mem.large(folio).entire_mapcount == 0 {
            return;
        }
        for hit in self.rmap_walk(folio) {
            if let Some(pmd) = self.walk_to_pmd(hit.mm, hit.addr) {
                let v = self.pmdp_get(pmd);
                if A::pmd_trans_huge(v) && A::pte_pfn(v) == folio {
                    let haddr = align_down(hit.addr, PMD_SIZE);
                    self.__split_huge_pmd(hit.mm, &hit.vma, haddr, pmd, true);
                }
            }
        }
    }

    /// `unmap_folio()` (try_to_migrate) and `remap_page()` of a folio being
    /// split: each PTE is cleared with a flush, replaced by a migration
    /// entry, and written back afterwards. The entries end up as before,
    /// except that arm64 contiguous blocks are left unfolded.
    pub fn migrate_cycle_ptes(&mut self, folio: Pfn) {
        use crate::include::linux::pgtable::{pte_index, PAGE_SIZE};
        let nr_folio = self.mem.folio_nr_pages(folio);
        for hit in self.rmap_walk(folio) {
            let start = hit.addr.max(hit.vma.vm_start);
            let end = (hit.addr + nr_folio * PAGE_SIZE).min(hit.vma.vm_end);
            let mut addr = start;
            while addr < end {
                let page = folio.plus((addr - hit.addr) / PAGE_SIZE);
                if let Some(tid) = self
                    .walk_to_pmd(hit.mm, addr)
                    .and_then(|p| self.entry_table(self.pmdp_get(p)))
                {
                    let idx = pte_index(addr);
                    let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
                    if A::pte_present(pte) && A::pte_pfn(pte) == page {
                        let old = A::ptep_get_and_clear(
                            self.pt.table_mut(tid),
                            idx,
                            &mut self.vmstat.sim,
                        );
                        if self.should_defer_flush(hit.mm) {
                            self.tlbbatch_add_pending(hit.mm, 1);
                            self.tlb_ubc.flush_required = true;
                        } else {
                            self.flush_tlb_range(hit.mm, 1);
                        }
                        self.vmstat.sim.pte_write += 1; // the migration entry
                        let span = crate::arch::FolioSpan { pfn: page, nr: 1 };
                        A::set_pte_at(self.pt.table_mut(tid), idx, old, span, &mut self.vmstat.sim);
                    }
                }
                addr += PAGE_SIZE;
            }
        }
        // remove_migration_ptes(): one rmap walk per new folio.
        self.vmstat.sim.rmap_walk += nr_folio;
    }
}

/// `struct page_vma_mapped_walk` without PVMW_SYNC or PVMW_MIGRATION.
#[derive(Clone, Copy, Debug)]
struct Pvmw {
    mm: MmId,
    pfn: Pfn,
    nr_pages: u64,
    address: u64,
    /// `vma_address_end()`
    end: u64,
    /// The PTE table mapped at the last hit (`pvmw->pte` set).
    pte: Option<TableId>,
    /// The last hit was the PMD (`pvmw->pmd && !pvmw->pte`).
    pmd_hit: bool,
    done: bool,
}

/// A mapping of the folio found by the walk.
#[derive(Clone, Copy, Debug)]
enum PvmwHit {
    Pte {
        tid: TableId,
        idx: usize,
    },
    Pmd {
        pmd: crate::mm::pgtable_generic::PmdSlot,
    },
}

/// What `folio_referenced()` gathers (`struct folio_referenced_arg`).
#[derive(Clone, Copy, Debug, Default)]
struct ReferencedArg {
    mapcount: i64,
    referenced: i32,
    vm_flags: u64,
}

impl<A: Arch> Kernel<A> {
    /// `page_vma_mapped_walk()`: the next PTE (or the PMD) of the walk's
    /// range that maps a page of the folio, reading entries as the kernel
    /// does: `map_pte()` reads the first entry of a table, `check_pte()`
    /// reads each candidate again, the `next_pte` loop reads every entry it
    /// steps over. Crossing into another table restarts from the PMD.
    fn page_vma_mapped_walk(&mut self, w: &mut Pvmw) -> Option<PvmwHit> {
        use crate::include::linux::pgtable::{pmd_addr_end, pte_index};
        if w.done || w.pmd_hit {
            w.done = true;
            return None;
        }
        if let Some(tid) = w.pte {
            return self.pvmw_next_pte(w, tid);
        }
        loop {
            if w.address >= w.end {
                w.done = true;
                return None;
            }
            let Some(pmd) = self.walk_to_pmd(w.mm, w.address) else {
                w.address = pmd_addr_end(w.address, u64::MAX);
                continue;
            };
            let pmdval = self.pmdp_get(pmd);
            if A::pmd_trans_huge(pmdval) {
                let pfn = A::pte_pfn(pmdval).0 as u64;
                let overlap = pfn + crate::include::linux::pgtable::HPAGE_PMD_NR > w.pfn.0 as u64
                    && pfn < w.pfn.0 as u64 + w.nr_pages;
                w.done = !overlap;
                w.pmd_hit = overlap;
                return overlap.then_some(PvmwHit::Pmd { pmd });
            }
            let Some(tid) = self.entry_table(pmdval) else {
                w.address = pmd_addr_end(w.address, u64::MAX);
                continue;
            };
            w.pte = Some(tid);
            let idx = pte_index(w.address);
            let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            if A::pte_present(pte) && self.pvmw_check_pte(w, tid, idx) {
                return Some(PvmwHit::Pte { tid, idx });
            }
            return self.pvmw_next_pte(w, tid);
        }
    }

    /// The `next_pte:` loop of `page_vma_mapped_walk()`.
    fn pvmw_next_pte(&mut self, w: &mut Pvmw, tid: TableId) -> Option<PvmwHit> {
        use crate::include::linux::pgtable::{pte_index, PAGE_SIZE, PMD_SIZE};
        loop {
            w.address += PAGE_SIZE;
            if w.address >= w.end {
                w.done = true;
                return None;
            }
            if w.address & (PMD_SIZE - PAGE_SIZE) == 0 {
                w.pte = None; // PVMW_PGTABLE_CROSSED: restart
                return self.page_vma_mapped_walk(w);
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

    /// `check_pte()`: a present entry mapping a page of the folio.
    fn pvmw_check_pte(&mut self, w: &Pvmw, tid: TableId, idx: usize) -> bool {
        let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
        if !A::pte_present(pte) {
            return false;
        }
        let pfn = A::pte_pfn(pte).0 as u64;
        pfn >= w.pfn.0 as u64 && pfn < w.pfn.0 as u64 + w.nr_pages
    }

    /// `folio_referenced()`: walk the folio's mappings (`rmap_walk()` with
    /// `invalid_folio_referenced_vma()`: no VMAs without recency, and under
    /// cgroup reclaim no mms outside the target cgroup), clearing the young
    /// bits. Returns how many mappings were referenced and their VMA
    /// flags. An unmapped folio is not walked; a file folio the caller has
    /// not locked and that is locked elsewhere counts as referenced.
    pub fn folio_referenced(
        &mut self,
        folio: Pfn,
        is_locked: bool,
        memcg: Option<MemcgId>,
    ) -> (i32, u64) {
        let mut pra = ReferencedArg {
            mapcount: self.mem.folio_mapcount(folio) as i64,
            ..Default::default()
        };
        if pra.mapcount == 0 || self.mem.folio_mapping(folio) == 0 {
            return (0, 0);
        }
        if !is_locked && !self.mem.folio_test_anon(folio) && self.locked.contains(&folio) {
            return (1, 0);
        }
        self.vmstat.sim.folio_referenced += 1;
        for hit in self.rmap_walk(folio) {
            if !crate::mm::swap::vma_has_recency(&hit.vma) {
                continue;
            }
            if memcg.is_some_and(|m| !self.mem_cgroup_is_descendant(self.mm_memcg(hit.mm), m)) {
                continue;
            }
            if !self.folio_referenced_one(folio, hit, &mut pra) {
                break;
            }
        }
        (pra.referenced, pra.vm_flags)
    }

    /// `folio_referenced_one()` for one VMA: test and clear the young bit of
    /// every PTE (or the PMD) mapping the folio. With
    /// `series.batch_folio_referenced` (seed 002) a large folio's PTEs go in
    /// `folio_pte_batch()` runs with one `clear_flush_young_ptes()` each, and
    /// the walk stops once the whole folio was seen. False stops the rmap
    /// walk (every mapping found).
    fn folio_referenced_one(&mut self, folio: Pfn, hit: RmapHit, pra: &mut ReferencedArg) -> bool {
        use crate::include::linux::pgtable::{pmd_addr_end, PAGE_SIZE};
        self.vmstat.sim.referenced_one += 1;
        let nr_pages = self.mem.folio_nr_pages(folio);
        let batched = self.cfg.series.batch_folio_referenced && nr_pages > 1;
        let mut w = Pvmw {
            mm: hit.mm,
            pfn: folio,
            nr_pages,
            address: hit.addr.max(hit.vma.vm_start),
            end: (hit.addr + nr_pages * PAGE_SIZE).min(hit.vma.vm_end),
            pte: None,
            pmd_hit: false,
            done: false,
        };
        let (mut referenced, mut ptes) = (0, 0);
        while let Some(h) = self.page_vma_mapped_walk(&mut w) {
            self.vmstat.sim.pvmw_referenced += 1;
            let mut nr = 1;
            let young = match h {
                PvmwHit::Pte { tid, idx } => {
                    if batched {
                        let max_nr =
                            (pmd_addr_end(w.address, hit.vma.vm_end) - w.address) / PAGE_SIZE;
                        A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
                        nr = self.folio_pte_batch(tid, idx, folio, max_nr as usize, false) as u64;
                    }
                    let table = self.pt.table_mut(tid);
                    let young =
                        A::clear_flush_young_ptes(table, idx, nr as usize, &mut self.vmstat);
                    w.address += (nr - 1) * PAGE_SIZE;
                    young
                }
                PvmwHit::Pmd { pmd } => {
                    let mut v = self.pt.get(pmd.table, pmd.idx);
                    let young = self.pmdp_clear_flush_young(hit.mm, &mut v);
                    self.pt.set(pmd.table, pmd.idx, v);
                    young
                }
            };
            referenced += young as i32;
            ptes += nr;
            pra.mapcount -= nr as i64;
            if batched && ptes == nr_pages {
                break; // page_vma_mapped_walk_done()
            }
        }
        if referenced > 0 {
            pra.referenced += 1;
            pra.vm_flags |= hit.vma.vm_flags;
        }
        pra.mapcount != 0
    }
}

/// The deferred-TLB-flush state of reclaim's unmaps (`struct
/// tlbflush_unmap_batch`, `current->tlb_ubc`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TlbUbc {
    pub flush_required: bool,
    pub writable: bool,
}

/// Reclaim's batched TLB flushing (mm/rmap.c): try_to_unmap_one() with
/// TTU_BATCH_FLUSH defers its flush (should_defer_flush(),
/// set_tlb_ubc_flush_pending()) until shrink_folio_list() calls
/// try_to_unmap_flush(); a later page-table change of the same mm first
/// flushes what is still pending (flush_tlb_batched_pending()).
impl<A: Arch> Kernel<A> {
    /// `try_to_unmap_flush()`
    pub fn try_to_unmap_flush(&mut self) {
        if self.tlb_ubc.flush_required {
            self.arch_tlbbatch_flush();
            self.tlb_ubc = TlbUbc::default();
        }
    }

    /// `try_to_unmap_flush_dirty()`
    pub(crate) fn try_to_unmap_flush_dirty(&mut self) {
        if self.tlb_ubc.writable {
            self.try_to_unmap_flush();
        }
    }

    /// `should_defer_flush()` of reclaim's unmap (TTU_BATCH_FLUSH set):
    /// `arch_tlbbatch_should_defer(mm)`.
    pub fn should_defer_flush(&self, mm: MmId) -> bool {
        A::tlbbatch_should_defer(&self.cpus, mm)
    }

    /// `set_tlb_ubc_flush_pending()`'s `arch_tlbbatch_add_pending()` of
    /// `nr_pages` pages of `mm`, and the mm's `tlb_flush_batched` pending
    /// generation.
    pub fn tlbbatch_add_pending(&mut self, mm: MmId, nr_pages: u64) {
        self.tlb_this_cpu(mm);
        A::tlbbatch_add_pending(&mut self.cpus, mm, nr_pages, &mut self.vmstat);
        self.cpus.grow(mm);
        self.cpus.mm_batch_pending[mm.0 as usize] = true;
    }

    /// `arch_tlbbatch_flush()` of reclaim's batch (from
    /// `try_to_unmap_flush()`).
    pub fn arch_tlbbatch_flush(&mut self) {
        A::tlbbatch_flush(&mut self.cpus, &mut self.vmstat);
    }

    /// `flush_tlb_batched_pending()`: an earlier deferred reclaim flush of
    /// `mm` may have left stale entries on other CPUs; the first page-table
    /// walk that changes entries after it flushes the whole mm.
    pub fn flush_tlb_batched_pending(&mut self, mm: MmId) {
        if let Some(p) = self.cpus.mm_batch_pending.get_mut(mm.0 as usize) {
            if std::mem::take(p) {
                self.vmstat.sim.tlb_batched_pending += 1;
                self.flush_tlb_mm(mm);
            }
        }
    }
}
