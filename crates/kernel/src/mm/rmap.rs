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
use crate::include::linux::pgtable::{Pfn, HPAGE_PMD_NR, PAGE_SIZE};
use crate::mm::memcontrol::MemcgId;
use crate::mm::mmap::Vma;
use crate::mm::page_vma_mapped::{Pvmw, PvmwHit, PVMW_SYNC};
use crate::mm::pgtable_generic::TableId;
use crate::{Kernel, MmId};

/// Debug assertions of the rmap functions, after the kernel's
/// CONFIG_DEBUG_VM checks (`VM_WARN_ON_FOLIO()`), which warn where these
/// stop the run. Compiled only with debug assertions (tests).
impl<A: Arch> Kernel<A> {
    /// `__folio_rmap_sanity_checks()` (include/linux/rmap.h) at the entry of
    /// every rmap add and remove: `nr` pages from `page` at PTE level, or
    /// with `pmd` the folio's one entire mapping. Hugetlb folios, which the
    /// kernel also rules out here, do not exist in the model.
    #[inline]
    fn folio_rmap_sanity_checks(&self, folio: Pfn, page: Pfn, nr: u64, pmd: bool) {
        if !cfg!(debug_assertions) {
            return;
        }
        // is_zero_folio(): the zero pages are mapped without rmap.
        debug_assert!(
            folio != self.zero_pfn && Some(folio) != self.huge_zero_folio,
            "rmap of the zero folio {folio:?}"
        );
        debug_assert_eq!(self.mem.page_folio(folio), folio, "not a folio head");
        debug_assert!(nr > 0, "rmap of no pages of {folio:?}");
        if pmd {
            // PGTABLE_LEVEL_PMD: one entire mapping of a PMD-sized folio.
            let size = self.mem.folio_nr_pages(folio);
            debug_assert!(
                size == HPAGE_PMD_NR && nr == HPAGE_PMD_NR,
                "PMD mapping of {nr} pages of a folio of {size} pages"
            );
        }
        debug_assert_eq!(
            self.mem.page_folio(page),
            folio,
            "{page:?} outside {folio:?}"
        );
        debug_assert_eq!(
            self.mem.page_folio(page.plus(nr - 1)),
            folio,
            "{nr} pages from {page:?} run past the end of {folio:?}"
        );
        // A mapped anon folio has a live anon_vma.
        if self.mem.folio_test_anon(folio) {
            let av = AnonVmaId::from_mapping(self.mem.folio_mapping(folio));
            debug_assert!(
                av.is_some_and(|av| (av.0.get() as usize) < self.anon_vma_parent.len()),
                "anon {folio:?} without an anon_vma"
            );
        }
    }

    /// `__folio_large_mapcount_sanity_checks()` (include/linux/rmap.h) at
    /// the entry of the large mapcount updates: a large folio, a positive
    /// change of at most the folio's pages, a real mm, and MM-owner slots
    /// that agree with their counts.
    #[inline]
    fn folio_large_mapcount_sanity_checks(&self, folio: Pfn, diff: i32, mm_id: u32) {
        if !cfg!(debug_assertions) {
            return;
        }
        debug_assert!(self.mem.folio_test_large(folio), "{folio:?} is not large");
        debug_assert!(diff > 0, "large mapcount change {diff} of {folio:?}");
        debug_assert!(diff as u64 <= self.mem.folio_nr_pages(folio), "{folio:?}");
        debug_assert_ne!(mm_id, 0, "MM_ID_DUMMY maps {folio:?}");
        let l = self.mem.large(folio);
        for s in 0..2 {
            if l.mm_id[s] == 0 {
                debug_assert_eq!(l.mm_id_mapcount[s], 0, "free slot {s} of {folio:?}: {l:?}");
            } else {
                debug_assert!(l.mm_id_mapcount[s] > 0, "slot {s} of {folio:?}: {l:?}");
            }
        }
        debug_assert!(
            l.large_mapcount > 0 || !l.maybe_shared,
            "unmapped {folio:?} marked maybe shared: {l:?}"
        );
    }

    /// The mapcounts of `folio` after a change: none negative, and a large
    /// folio's folio-wide counts agree with its pages' (`_large_mapcount`
    /// is the entire mapcount plus every page's PTE mapcount;
    /// `_nr_pages_mapped` counts the pages with a PTE mapping; the MM-owner
    /// slots hold no more than all mappings). Per-page counts cannot go
    /// below zero: [`MemMap::page_mapcount_add`] asserts that.
    pub(crate) fn folio_mapcount_sanity_checks(&self, folio: Pfn) {
        if !cfg!(debug_assertions) || !self.mem.folio_test_large(folio) {
            return;
        }
        let l = *self.mem.large(folio);
        let nr = self.mem.folio_nr_pages(folio);
        debug_assert!(l.entire_mapcount >= 0, "{folio:?}: {l:?}");
        let (mut pte_maps, mut pages_mapped) = (0i64, 0i64);
        for i in 0..nr {
            let m = self.mem.page_mapcount(folio.plus(i)) as i64;
            pte_maps += m;
            pages_mapped += (m > 0) as i64;
        }
        debug_assert_eq!(
            l.large_mapcount as i64,
            l.entire_mapcount as i64 + pte_maps,
            "large mapcount of {folio:?}: {l:?}"
        );
        debug_assert_eq!(
            l.nr_pages_mapped as i64, pages_mapped,
            "_nr_pages_mapped of {folio:?}: {l:?}"
        );
        debug_assert!(
            l.mm_id_mapcount.iter().all(|&c| c >= 0)
                && l.mm_id_mapcount[0] + l.mm_id_mapcount[1] <= l.large_mapcount,
            "MM-owner slots of {folio:?}: {l:?}"
        );
    }
}

impl<A: Arch> Kernel<A> {
    /// `folio_add_return_large_mapcount()`: MM-owner slot bookkeeping.
    fn large_mapcount_add(&mut self, folio: Pfn, diff: i32, mm_id: u32) {
        self.folio_large_mapcount_sanity_checks(folio, diff, mm_id);
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
        self.folio_large_mapcount_sanity_checks(folio, diff, mm_id);
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
    pub(crate) fn folio_add_new_anon_rmap(
        &mut self,
        folio: Pfn,
        vma: &Vma,
        addr: u64,
        pmd: bool,
        mm: MmId,
    ) {
        let nr = self.mem.folio_nr_pages(folio);
        // folio_add_new_anon_rmap()'s own checks: a new folio (never the
        // zero page, not mapped yet) that the VMA covers.
        debug_assert!(folio != self.zero_pfn && Some(folio) != self.huge_zero_folio);
        debug_assert_eq!(self.mem.page_folio(folio), folio, "not a folio head");
        debug_assert!(!self.mem.folio_mapped(folio), "{folio:?} is not new");
        debug_assert!(
            addr >= vma.vm_start && addr + nr * PAGE_SIZE <= vma.vm_end,
            "{nr} pages at {addr:#x} outside the VMA {:#x}-{:#x}",
            vma.vm_start,
            vma.vm_end
        );
        debug_assert!(!pmd || nr == HPAGE_PMD_NR, "PMD mapping of {nr} pages");
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
        self.folio_mapcount_sanity_checks(folio);
    }

    /// `__folio_add_rmap()` at PTE level for `nr` pages from `page`.
    fn folio_add_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        self.folio_rmap_sanity_checks(folio, page, nr, false);
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
        self.folio_mapcount_sanity_checks(folio);
    }

    /// `__folio_add_anon_rmap()`'s checks after the mappings are added: a
    /// page mapped more than once (or inside a folio mapped by more than
    /// one PMD) is not exclusive.
    fn folio_anon_exclusive_checks(&self, folio: Pfn, page: Pfn, nr: u64) {
        if !cfg!(debug_assertions) {
            return;
        }
        let shared_pmd =
            self.mem.folio_test_large(folio) && self.mem.large(folio).entire_mapcount > 1;
        for p in (0..nr).map(|i| page.plus(i)) {
            debug_assert!(
                !self.mem.test(p, PG_ANON_EXCLUSIVE)
                    || (self.mem.page_mapcount(p) <= 1 && !shared_pmd),
                "{p:?} of {folio:?} is exclusive but mapped more than once"
            );
        }
    }

    /// `folio_add_anon_rmap_ptes()`: map pages of an anon folio that is
    /// already anon (a swap-cache hit); the caller sets PageAnonExclusive.
    pub(crate) fn folio_add_anon_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        debug_assert!(self.mem.folio_test_anon(folio), "{folio:?} is not anon");
        self.folio_add_rmap_ptes(folio, page, nr, mm);
        self.folio_anon_exclusive_checks(folio, page, nr);
    }

    /// `folio_add_file_rmap_ptes()`
    pub(crate) fn folio_add_file_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        debug_assert!(!self.mem.folio_test_anon(folio), "{folio:?} is anon");
        self.folio_add_rmap_ptes(folio, page, nr, mm);
    }

    /// `folio_try_dup_anon_rmap_ptes()` (fork): the child maps the same
    /// pages; they stop being exclusive (each exclusive page's flag is
    /// cleared atomically, counted as `sim/anon_exclusive_clear`).
    pub(crate) fn folio_dup_anon_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, child: MmId) {
        debug_assert!(self.mem.folio_test_anon(folio), "{folio:?} is not anon");
        for i in 0..nr {
            if self.mem.test(page.plus(i), PG_ANON_EXCLUSIVE) {
                self.mem.clear(page.plus(i), PG_ANON_EXCLUSIVE);
                self.vmstat.sim.anon_exclusive_clear += 1;
            }
        }
        self.folio_add_rmap_ptes(folio, page, nr, child);
        self.folio_anon_exclusive_checks(folio, page, nr);
    }

    /// `__folio_add_rmap()` at PMD level (`folio_add_file_rmap_pmd()`,
    /// `folio_try_dup_anon_rmap_pmd()`).
    pub(crate) fn folio_add_rmap_pmd(&mut self, folio: Pfn, mm: MmId) {
        self.folio_rmap_sanity_checks(folio, folio, HPAGE_PMD_NR, true);
        self.vmstat.sim.rmap_add += 1;
        if self.mem.folio_test_anon(folio) {
            self.mem.clear(folio, PG_ANON_EXCLUSIVE);
        }
        self.mem.large_mut(folio).entire_mapcount += 1;
        let mm_id = self.mm(mm).mm_id;
        self.large_mapcount_add(folio, 1, mm_id);
        self.folio_mapcount_sanity_checks(folio);
    }

    /// `folio_remove_rmap_ptes()`: drop `nr` PTE mappings from `page`; an
    /// anon large folio left partly mapped is queued for deferred split.
    /// The per-page part is inline: for an order-0 folio (reclaim's
    /// common case) it is all there is.
    #[inline(always)]
    pub(crate) fn folio_remove_rmap_ptes(&mut self, folio: Pfn, page: Pfn, nr: u64, mm: MmId) {
        self.folio_rmap_sanity_checks(folio, page, nr, false);
        self.vmstat.sim.rmap_remove += 1;
        self.vmstat.sim.page_mapcount += nr;
        let mut last = 0;
        for i in 0..nr {
            if self.mem.page_mapcount_add(page.plus(i), -1) == 0 {
                last += 1;
            }
        }
        if self.mem.folio_test_large(folio) {
            self.folio_remove_rmap_ptes_large(folio, nr, last, mm);
        }
    }

    /// The large-folio part of [`Kernel::folio_remove_rmap_ptes`], after
    /// `last` of its `nr` pages lost their last PTE mapping.
    fn folio_remove_rmap_ptes_large(&mut self, folio: Pfn, nr: u64, last: i32, mm: MmId) {
        let mm_id = self.mm(mm).mm_id;
        self.large_mapcount_sub(folio, nr as i32, mm_id);
        let l = self.mem.large_mut(folio);
        l.nr_pages_mapped -= last;
        let partially = last > 0 && l.entire_mapcount == 0 && l.nr_pages_mapped > 0;
        self.folio_mapcount_sanity_checks(folio);
        if partially
            && self.mem.folio_test_anon(folio)
            && !self.mem.test(folio, PG_PARTIALLY_MAPPED)
        {
            self.deferred_split_folio(folio, true);
        }
    }

    /// `folio_remove_rmap_pmd()`
    pub(crate) fn folio_remove_rmap_pmd(&mut self, folio: Pfn, mm: MmId) {
        self.folio_rmap_sanity_checks(folio, folio, HPAGE_PMD_NR, true);
        self.vmstat.sim.rmap_remove += 1;
        let mm_id = self.mm(mm).mm_id;
        self.large_mapcount_sub(folio, 1, mm_id);
        let l = self.mem.large_mut(folio);
        l.entire_mapcount -= 1;
        let nr = self.mem.folio_nr_pages(folio) as i32;
        let l = self.mem.large(folio);
        // Pages that become unmapped: all those without a PTE mapping.
        let partially = l.entire_mapcount == 0 && l.nr_pages_mapped > 0 && l.nr_pages_mapped < nr;
        self.folio_mapcount_sanity_checks(folio);
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
    pub(crate) fn folio_put_if_unused(&mut self, folio: Pfn) {
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

    /// `free_swap_cache()` + `folio_put()` as the zap path does
    /// (`free_pages_and_swap_cache()`): an unmapped swap-cache folio whose
    /// slots no PTE references any more leaves the swap cache and is freed.
    pub(crate) fn free_swap_cache_and_put(&mut self, folio: Pfn) {
        if self
            .mem
            .test(folio, crate::include::linux::mm_types::PG_SWAPCACHE)
            && !self.mem.folio_mapped(folio)
            && !self.folio_test_writeback(folio)
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
pub(crate) struct RmapHit {
    pub mm: MmId,
    pub(crate) vma: Vma,
    pub addr: u64,
}

/// The mappings an rmap walk found.
pub(crate) type RmapHits = smallvec::SmallVec<[RmapHit; 1]>;

/// Changes of any VMA, mm list or anon_vma tree, in any kernel of the
/// process: the anon rmap walk's cache ([`AnonRmapCache`]) is valid while
/// this has not moved since it was filled. Process-wide, so a cloned
/// kernel can never keep a stale cache: a change in either invalidates
/// both.
static VMAS_GEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Record a change of VMAs, the live mms or the anon_vma tree.
pub(crate) fn vmas_changed() {
    VMAS_GEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

fn vmas_gen() -> u64 {
    VMAS_GEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// The VMAs in the anon_vma tree of one anon_vma (every mm, in the
/// walk's order), kept between rmap walks of its folios: reclaim walks
/// the rmap of one region's folios in turn, and the VMAs rarely change
/// meanwhile. Filled at [`vmas_gen`] `gen`.
#[derive(Clone, Debug, Default)]
pub(crate) struct AnonRmapCache {
    gen: u64,
    anon_vma: Option<AnonVmaId>,
    vmas: Vec<(MmId, Vma)>,
}

/// The hit in `v` (of `mm`) of `nr` pages from file index `index`, if
/// any of them lies inside it: `vma_address()` (32-bit index arithmetic,
/// see mm_types.rs; the first page's address, possibly before the VMA).
fn rmap_hit(mm: MmId, v: &Vma, index: u32, nr: u64) -> Option<RmapHit> {
    let off = index.wrapping_sub(v.vm_pgoff as u32) as i32 as i64;
    let addr = v.vm_start as i64 + off * 4096;
    let end = addr + nr as i64 * 4096;
    (end > v.vm_start as i64 && addr < v.vm_end as i64).then_some(RmapHit {
        mm,
        vma: *v,
        addr: addr as u64,
    })
}

/// An anon_vma (`struct anon_vma`): its slot in `Kernel::anon_vma_parent`,
/// and the value an anon folio's `mapping` holds. Slot 0 is never used, so
/// a VMA without one is `None` at no cost in size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[doc(alias = "anon_vma")]
pub(crate) struct AnonVmaId(NonZeroU32);

impl AnonVmaId {
    /// The anon_vma an anon folio's `mapping` field names (0: none).
    #[inline]
    pub(crate) fn from_mapping(mapping: u16) -> Option<AnonVmaId> {
        NonZeroU32::new(u32::from(mapping)).map(AnonVmaId)
    }

    /// The value of an anon folio's `mapping` field for this anon_vma (ids
    /// above 16 bits are refused at allocation).
    #[inline]
    pub(crate) fn mapping(self) -> u16 {
        self.0.get() as u16
    }
}

impl<A: Arch> Kernel<A> {
    /// `anon_vma_alloc()`: a new anon_vma below `parent` (`None`: a root);
    /// returns its id. The folio's `mapping` field holds 16 bits, so ids
    /// are recycled: when they run out, [`Kernel::anon_vma_reclaim_ids`]
    /// frees those no VMA and no folio refers to, as `put_anon_vma()` frees
    /// an anon_vma whose last user went. Only more than 65,535 anon_vmas
    /// in use at once is reported. (The kernel's reuse of an emptied
    /// anon_vma in `anon_vma_clone()` is not modelled.)
    pub(crate) fn anon_vma_alloc(&mut self, parent: Option<AnonVmaId>) -> AnonVmaId {
        if self.anon_vma_free.is_empty() && self.anon_vma_parent.len() > u16::MAX as usize {
            self.anon_vma_reclaim_ids();
        }
        let id = match self.anon_vma_free.pop() {
            Some(id) => id as usize,
            None if self.anon_vma_parent.len() <= u16::MAX as usize => {
                self.anon_vma_parent.push(None);
                self.anon_vma_parent.len() - 1
            }
            None => crate::model_limit("more than 65535 anon_vmas in use at once"),
        };
        self.anon_vma_parent[id] = parent;
        vmas_changed();
        AnonVmaId(NonZeroU32::new(id as u32).expect("anon_vma slot 0 is never used"))
    }

    /// Collect the ids of anon_vmas nobody refers to any more: not the
    /// anon_vma of a live VMA nor an ancestor of one (a child anon_vma
    /// holds its parent), and not named by the `mapping` of any page
    /// (an unmapped anon folio may still point at its old anon_vma, as in
    /// the kernel, where `folio_get_anon_vma()` copes with that). They go
    /// on the free list, lowest id handed out first.
    fn anon_vma_reclaim_ids(&mut self) {
        use crate::include::linux::mm_types::{PG_ANON, PG_BUDDY, PG_TABLE};
        let mut used = vec![false; self.anon_vma_parent.len()];
        used[0] = true;
        let mark = |used: &mut Vec<bool>, mut av: Option<AnonVmaId>| {
            while let Some(a) = av {
                let i = a.0.get() as usize;
                if used[i] {
                    break;
                }
                used[i] = true;
                av = self.anon_vma_parent[i];
            }
        };
        for mm in self.live_mms() {
            for v in mm.vmas.values() {
                mark(&mut used, v.anon_vma);
            }
        }
        for pfn in 0..self.mem.nr_pages() as u32 {
            let p = Pfn(pfn);
            let f = self.mem.flags(p);
            if f & PG_ANON != 0 && f & (PG_BUDDY | PG_TABLE) == 0 {
                mark(
                    &mut used,
                    AnonVmaId::from_mapping(self.mem.folio_mapping(p)),
                );
            }
        }
        self.anon_vma_free = (0..used.len() as u32)
            .rev()
            .filter(|&i| !used[i as usize])
            .collect();
    }

    /// Whether a VMA whose anon_vma is `av` is in the interval tree of
    /// anon_vma `of`: `av` is `of` or descends from it (`anon_vma_fork()`
    /// chains a child's VMA into every ancestor's anon_vma).
    #[inline]
    pub(crate) fn anon_vma_in_tree(&self, mut av: Option<AnonVmaId>, of: AnonVmaId) -> bool {
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
    /// A folio mapped once (what reclaim meets for nearly every folio it
    /// scans) keeps its one hit inline, without a heap allocation. Anon
    /// walks take the anon_vma tree's VMAs from [`AnonRmapCache`].
    pub(crate) fn rmap_walk(&mut self, folio: Pfn) -> RmapHits {
        self.vmstat.sim.rmap_walk += 1;
        let nr = self.mem.folio_nr_pages(folio);
        if !self.mem.folio_test_anon(folio) {
            return self.rmap_walk_span(folio, nr);
        }
        let Some(of) = AnonVmaId::from_mapping(self.mem.folio_mapping(folio)) else {
            return RmapHits::new();
        };
        let gen = vmas_gen();
        if self.anon_rmap_cache.gen != gen || self.anon_rmap_cache.anon_vma != Some(of) {
            self.anon_rmap_cache_fill(gen, of);
        }
        let index = self.mem.folio_index(folio);
        // Pushed one by one: collecting a filter_map (no size hint) into
        // a SmallVec costs more than the walk itself.
        let mut hits = RmapHits::new();
        for (mm, v) in &self.anon_rmap_cache.vmas {
            if let Some(hit) = rmap_hit(*mm, v, index, nr) {
                hits.push(hit);
            }
        }
        debug_assert_eq!(
            hits.iter()
                .map(|h| (h.mm, h.vma, h.addr))
                .collect::<Vec<_>>(),
            self.rmap_walk_span(folio, nr)
                .iter()
                .map(|h| (h.mm, h.vma, h.addr))
                .collect::<Vec<_>>(),
            "the anon rmap cache disagrees with a walk"
        );
        hits
    }

    /// Fill [`AnonRmapCache`] with the VMAs of anon_vma `of`'s tree at
    /// [`vmas_gen`] `gen` (the walk of a folio of another anon_vma, or
    /// after the VMAs changed): out of line.
    #[cold]
    fn anon_rmap_cache_fill(&mut self, gen: u64, of: AnonVmaId) {
        let mut vmas = std::mem::take(&mut self.anon_rmap_cache.vmas);
        vmas.clear();
        for mm in self.live_mms() {
            for v in mm.vmas.values() {
                if self.anon_vma_in_tree(v.anon_vma, of) {
                    vmas.push((mm.id, *v));
                }
            }
        }
        self.anon_rmap_cache = AnonRmapCache {
            gen,
            anon_vma: Some(of),
            vmas,
        };
    }

    /// The VMAs `rmap_walk()` finds for `nr` pages from `first` (a folio,
    /// or the pages a split folio had), uncounted: a split remaps its new
    /// folios with the hits of one walk ([`Kernel::rmap_hit_of_page`]).
    pub(crate) fn rmap_walk_span(&self, first: Pfn, nr: u64) -> RmapHits {
        let anon = self.mem.folio_test_anon(first);
        let mapping = self.mem.folio_mapping(first);
        let index = self.mem.folio_index(first);
        let of = if anon {
            AnonVmaId::from_mapping(mapping)
        } else {
            None
        };
        let mut hits = RmapHits::new();
        for mm in self.live_mms() {
            for v in mm.vmas.values() {
                let Some(hit) = rmap_hit(mm.id, v, index, nr) else {
                    continue;
                };
                let ours = if anon {
                    of.is_some_and(|of| self.anon_vma_in_tree(v.anon_vma, of))
                } else {
                    v.file.is_some_and(|f| {
                        Self::file_mapping_id(self.open_files[f as usize].mapping) == mapping
                    })
                };
                if ours {
                    hits.push(hit);
                }
            }
        }
        hits
    }

    /// The hit of `rmap_walk()` of the page of index `index` in the VMA of
    /// `span`, a hit of a walk over pages that include it: None when that
    /// VMA does not hold the page.
    pub(crate) fn rmap_hit_of_page(span: &RmapHit, index: u32) -> Option<RmapHit> {
        rmap_hit(span.mm, &span.vma, index, 1)
    }

    /// `try_to_unmap()` with TTU_BATCH_FLUSH (| TTU_SPLIT_HUGE_PMD |
    /// TTU_SYNC): unmap every mapping of the folio.
    pub(crate) fn try_to_unmap(&mut self, folio: Pfn) {
        for hit in &self.rmap_walk(folio) {
            if !self.try_to_unmap_one(folio, hit) {
                break; // walk_abort: rmap_one returned false
            }
            if !self.mem.folio_mapped(folio) {
                break; // folio_not_mapped()
            }
        }
    }

    /// `try_to_unmap_one()` for one VMA: the page_vma_mapped_walk() loop
    /// (TTU_SYNC). A PMD mapping is discarded whole (lazyfree) or split
    /// (TTU_SPLIT_HUGE_PMD), after which the walk restarts at PTE level;
    /// each PTE hit unmaps a batch from that entry. False when it gave up
    /// (`walk_abort`: a lazyfree folio found dirty again or referenced
    /// elsewhere).
    fn try_to_unmap_one(&mut self, folio: Pfn, hit: &RmapHit) -> bool {
        use crate::include::linux::pgtable::{pmd_addr_end, PAGE_SIZE};
        self.vmstat.sim.ttu_one += 1;
        let nr_folio = self.mem.folio_nr_pages(folio);
        if nr_folio == 1 {
            return self.try_to_unmap_one_page(folio, hit);
        }
        let mut w = Pvmw::new(folio, nr_folio, hit, PVMW_SYNC);
        while let Some(h) = self.page_vma_mapped_walk(&mut w) {
            let (tid, idx) = match h {
                PvmwHit::Pmd { pmd } => {
                    if let Some(done) = self.ttu_pmd_hit(folio, hit, pmd, w.address) {
                        return done;
                    }
                    w.restart();
                    continue;
                }
                PvmwHit::Pte { tid, idx } => (tid, idx),
            };
            let page_off = self.ttu_hit_page(folio, tid, idx);
            let max = (pmd_addr_end(w.address, w.end) - w.address) / PAGE_SIZE;
            let nr = self.ttu_batch(folio, tid, idx, max as usize);
            if !self.ttu_unmap_ptes(folio, hit, tid, idx, page_off, nr as u64) {
                return false;
            }
            if nr as u64 == nr_folio {
                break; // walk_done
            }
        }
        true
    }

    /// [`Kernel::try_to_unmap_one`] of an order-0 folio: its walk has one
    /// hit at most (a PMD is split and the walk restarted), and one entry
    /// to unmap.
    fn try_to_unmap_one_page(&mut self, folio: Pfn, hit: &RmapHit) -> bool {
        loop {
            let Some((h, address)) = self.pvmw_one_page(folio, hit, PVMW_SYNC) else {
                return true;
            };
            match h {
                PvmwHit::Pmd { pmd } => {
                    if let Some(done) = self.ttu_pmd_hit(folio, hit, pmd, address) {
                        return done;
                    }
                }
                PvmwHit::Pte { tid, idx } => {
                    let page_off = self.ttu_hit_page(folio, tid, idx);
                    return self.ttu_unmap_ptes(folio, hit, tid, idx, page_off, 1);
                }
            }
        }
    }

    /// A PMD hit of `try_to_unmap_one()`'s walk at `address`: a lazyfree
    /// folio's PMD is discarded whole (`unmap_huge_pmd_locked()`, Some of
    /// its result); any other is split (TTU_SPLIT_HUGE_PMD,
    /// `split_huge_pmd_locked()`) and None restarts the walk at PTE level.
    #[inline(always)]
    fn ttu_pmd_hit(
        &mut self,
        folio: Pfn,
        hit: &RmapHit,
        pmd: crate::mm::pgtable_generic::PmdSlot,
        address: u64,
    ) -> Option<bool> {
        use crate::include::linux::pgtable::{align_down, PMD_SIZE};
        if self.folio_test_lazyfree(folio) {
            return Some(self.unmap_huge_pmd_locked(folio, hit, pmd));
        }
        let haddr = align_down(address, PMD_SIZE);
        self.split_huge_pmd(hit.mm, &hit.vma, haddr, pmd);
        None
    }

    /// A PTE hit of `try_to_unmap_one()`'s walk (counted, `sim/pvmw`): the
    /// offset in `folio` of the page the entry at `idx` maps (`subpage`).
    #[inline(always)]
    fn ttu_hit_page(&mut self, folio: Pfn, tid: TableId, idx: usize) -> u64 {
        let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
        self.vmstat.sim.pvmw += 1;
        (A::pte_pfn(pte).0 - folio.0) as u64
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
        hit: &RmapHit,
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
            // Each swap PTE keeps its page's exclusivity; the pages then
            // stop being exclusive.
            let mut any_exclusive = false;
            for i in 0..nr {
                let exclusive = self.mem.test(page.plus(i), PG_ANON_EXCLUSIVE);
                any_exclusive |= exclusive;
                let swp = A::swp_entry_to_pte(entry.ty, entry.offset + i, exclusive);
                self.pt.set(tid, idx + i as usize, swp);
            }
            if any_exclusive {
                self.vmstat.sim.anon_share += 1;
                for i in 0..nr {
                    self.mem.clear(page.plus(i), PG_ANON_EXCLUSIVE);
                }
            }
            self.add_mm_counter(hit.mm, MM_ANONPAGES, -(nr as i64));
            self.add_mm_counter(hit.mm, MM_SWAPENTS, nr as i64);
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
        hit: &RmapHit,
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
        hit: &RmapHit,
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

    /// `try_to_migrate()` of a folio being split (`unmap_folio()`:
    /// TTU_SYNC | TTU_SPLIT_HUGE_PMD | TTU_BATCH_FLUSH): every mapping of
    /// the folio becomes a migration entry, which `remap_page()` turns back
    /// into a mapping after the split (`remove_migration_ptes()`,
    /// mm/migrate.rs).
    ///
    /// The model keeps the mapcounts through the cycle, so the one effect
    /// of the kernel's rmap removal that outlives it is taken here:
    /// `try_to_migrate_one()` removes the rmap page by page, so once the
    /// first page is unmapped while another still is, a PTE-mapped anon
    /// folio is partially mapped (`__folio_remove_rmap()` →
    /// `deferred_split_folio()`).
    pub(crate) fn try_to_migrate(&mut self, folio: Pfn) {
        let l = self.mem.large(folio);
        if l.entire_mapcount == 0 && l.nr_pages_mapped >= 2 && self.mem.folio_test_anon(folio) {
            self.deferred_split_folio(folio, true);
        }
        for hit in &self.rmap_walk(folio) {
            self.try_to_migrate_one(folio, hit);
        }
    }

    /// `try_to_migrate_one()` for one VMA: the page_vma_mapped_walk() loop.
    /// A PMD mapping is split with freeze (`split_huge_pmd_locked()`),
    /// which leaves migration entries only, so the walk of that range ends
    /// there. A PTE is cleared with a flush (or a deferred one) and
    /// replaced by its migration entry (`set_pte_at()`); the model writes
    /// the old entry back as the migration entry, one page at a time, so
    /// arm64 contiguous blocks end up unfolded as the kernel leaves them.
    /// Not modelled: file folios, which `unmap_folio()` unmaps with
    /// `try_to_unmap()` instead (their entries come back like anon ones).
    fn try_to_migrate_one(&mut self, folio: Pfn, hit: &RmapHit) {
        use crate::include::linux::pgtable::{align_down, PMD_SIZE};
        let nr_folio = self.mem.folio_nr_pages(folio);
        let mut w = Pvmw::new(folio, nr_folio, hit, PVMW_SYNC);
        // The entries' own flushes (`ptep_clear_flush()`), made once the
        // walk is done: nothing the walk does reads or changes what they
        // change (the CPUs' TLB state), and they change nothing it reads
        // (the local-only flush `should_defer_flush()` leaves to them keeps
        // `mm_cpumask()`).
        let mut flushes = 0;
        while let Some(h) = self.page_vma_mapped_walk(&mut w) {
            let (tid, idx) = match h {
                PvmwHit::Pmd { pmd } => {
                    self.flush_tlb_range_times(hit.mm, 1, std::mem::take(&mut flushes));
                    let haddr = align_down(w.address, PMD_SIZE);
                    self.__split_huge_pmd(hit.mm, &hit.vma, haddr, pmd, true);
                    w.finish();
                    continue;
                }
                PvmwHit::Pte { tid, idx } => (tid, idx),
            };
            let page = A::pte_pfn(A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim));
            let old = A::ptep_get_and_clear(self.pt.table_mut(tid), idx, &mut self.vmstat.sim);
            if self.should_defer_flush(hit.mm) {
                self.tlbbatch_add_pending(hit.mm, 1);
                self.tlb_ubc.flush_required = true;
            } else {
                flushes += 1;
            }
            // The migration entry: the old entry again, one page at a time.
            let span = crate::arch::FolioSpan { pfn: page, nr: 1 };
            A::set_pte_at(self.pt.table_mut(tid), idx, old, span, &mut self.vmstat.sim);
        }
        self.flush_tlb_range_times(hit.mm, 1, flushes);
    }
}

/// What `folio_referenced()` gathers (`struct folio_referenced_arg`).
#[derive(Clone, Copy, Debug, Default)]
struct ReferencedArg {
    mapcount: i64,
    referenced: i32,
    vm_flags: u64,
}

impl<A: Arch> Kernel<A> {
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
        for hit in &self.rmap_walk(folio) {
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
    fn folio_referenced_one(&mut self, folio: Pfn, hit: &RmapHit, pra: &mut ReferencedArg) -> bool {
        use crate::include::linux::pgtable::{pmd_addr_end, PAGE_SIZE};
        self.vmstat.sim.referenced_one += 1;
        let nr_pages = self.mem.folio_nr_pages(folio);
        if nr_pages == 1 {
            return self.folio_referenced_one_page(folio, hit, pra);
        }
        let batched = self.cfg.series.batch_folio_referenced;
        let mut w = Pvmw::new(folio, nr_pages, hit, 0);
        let (mut referenced, mut ptes) = (0, 0);
        while let Some(h) = self.page_vma_mapped_walk(&mut w) {
            self.vmstat.sim.pvmw_referenced += 1;
            let mut nr = 1;
            if let (true, PvmwHit::Pte { tid, idx }) = (batched, h) {
                let max_nr = (pmd_addr_end(w.address, hit.vma.vm_end) - w.address) / PAGE_SIZE;
                A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
                nr = self.folio_pte_batch(tid, idx, folio, max_nr as usize, false) as u64;
            }
            let young = self.referenced_young(folio, hit, h, w.address, nr as usize);
            // A PMD hit is one entry (nr 1): the address stays.
            w.address += (nr - 1) * PAGE_SIZE;
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

    /// [`Kernel::folio_referenced_one`] of an order-0 folio: one hit at
    /// most, one entry (or the PMD) to test and clear.
    fn folio_referenced_one_page(
        &mut self,
        folio: Pfn,
        hit: &RmapHit,
        pra: &mut ReferencedArg,
    ) -> bool {
        if let Some((h, address)) = self.pvmw_one_page(folio, hit, 0) {
            self.vmstat.sim.pvmw_referenced += 1;
            let young = self.referenced_young(folio, hit, h, address, 1);
            pra.mapcount -= 1;
            if young {
                pra.referenced += 1;
                pra.vm_flags |= hit.vma.vm_flags;
            }
        }
        pra.mapcount != 0
    }

    /// A hit of `folio_referenced_one()`'s walk, its young bits tested and
    /// cleared: `nr` PTEs from the hit's entry at `address`
    /// (`lru_gen_look_around()` under MGLRU, else
    /// `clear_flush_young_ptes()`), or the PMD
    /// (`pmdp_clear_flush_young_notify()`).
    #[inline(always)]
    fn referenced_young(
        &mut self,
        folio: Pfn,
        hit: &RmapHit,
        h: PvmwHit,
        address: u64,
        nr: usize,
    ) -> bool {
        match h {
            PvmwHit::Pte { tid, idx } => {
                if self.lru_gen_enabled() {
                    let (mm, vma) = (hit.mm, &hit.vma);
                    self.lru_gen_look_around(folio, mm, vma, tid, address, nr)
                } else {
                    let table = self.pt.table_mut(tid);
                    A::clear_flush_young_ptes(table, idx, nr, &mut self.vmstat)
                }
            }
            PvmwHit::Pmd { pmd } => {
                let mut v = self.pt.get(pmd.table, pmd.idx);
                let young = self.pmdp_clear_flush_young(hit.mm, &mut v);
                self.pt.set(pmd.table, pmd.idx, v);
                young
            }
        }
    }
}

/// The deferred-TLB-flush state of reclaim's unmaps (`struct
/// tlbflush_unmap_batch`, `current->tlb_ubc`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TlbUbc {
    pub(crate) flush_required: bool,
    pub writable: bool,
}

/// Reclaim's batched TLB flushing (mm/rmap.c): try_to_unmap_one() with
/// TTU_BATCH_FLUSH defers its flush (should_defer_flush(),
/// set_tlb_ubc_flush_pending()) until shrink_folio_list() calls
/// try_to_unmap_flush(); a later page-table change of the same mm first
/// flushes what is still pending (flush_tlb_batched_pending()).
impl<A: Arch> Kernel<A> {
    /// `try_to_unmap_flush()`
    pub(crate) fn try_to_unmap_flush(&mut self) {
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
    pub(crate) fn should_defer_flush(&self, mm: MmId) -> bool {
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
    pub(crate) fn arch_tlbbatch_flush(&mut self) {
        A::tlbbatch_flush(&mut self.cpus, &mut self.vmstat);
    }

    /// `flush_tlb_batched_pending()`: an earlier deferred reclaim flush of
    /// `mm` may have left stale entries on other CPUs; the first page-table
    /// walk that changes entries after it flushes the whole mm.
    pub(crate) fn flush_tlb_batched_pending(&mut self, mm: MmId) {
        if let Some(p) = self.cpus.mm_batch_pending.get_mut(mm.0 as usize) {
            if std::mem::take(p) {
                self.vmstat.sim.tlb_batched_pending += 1;
                self.flush_tlb_mm(mm);
            }
        }
    }
}

/// The rmap sanity checks stop a wrong call (they exist only with debug
/// assertions, as in the test profile).
#[cfg(all(test, debug_assertions))]
mod sanity_tests {
    use crate::include::linux::pgtable::Pfn;
    use crate::{Config, Kernel, MmId, X86_64};

    /// A 64 MiB machine, an mm, and a new order-2 page-cache folio.
    fn machine() -> (Kernel<X86_64>, MmId, Pfn) {
        let cfg = Config {
            memory: 64 << 20,
            ..Config::default()
        };
        let mut k = Kernel::<X86_64>::new(cfg).expect("kernel");
        let mm = k.mm_alloc();
        let folio = k.folio_alloc(2).expect("a free order-2 folio");
        (k, mm, folio)
    }

    #[test]
    fn mapping_and_unmapping_keeps_the_counts_consistent() {
        let (mut k, mm, folio) = machine();
        k.folio_add_file_rmap_ptes(folio, folio.plus(1), 3, mm);
        k.folio_add_file_rmap_ptes(folio, folio.plus(1), 1, mm);
        let l = *k.mem.large(folio);
        assert_eq!((l.large_mapcount, l.nr_pages_mapped), (4, 3));
        k.folio_remove_rmap_ptes(folio, folio.plus(1), 3, mm);
        k.folio_remove_rmap_ptes(folio, folio.plus(1), 1, mm);
        assert_eq!(k.mem.large(folio).large_mapcount, 0);
    }

    #[test]
    #[should_panic(expected = "run past the end")]
    fn a_range_past_the_folio_is_refused() {
        let (mut k, mm, folio) = machine();
        k.folio_add_file_rmap_ptes(folio, folio.plus(3), 2, mm);
    }

    #[test]
    #[should_panic(expected = "rmap of no pages")]
    fn no_pages_is_refused() {
        let (mut k, mm, folio) = machine();
        k.folio_add_file_rmap_ptes(folio, folio, 0, mm);
    }

    #[test]
    #[should_panic(expected = "PMD mapping of 512 pages of a folio of 4 pages")]
    fn a_pmd_mapping_of_a_small_folio_is_refused() {
        let (mut k, mm, folio) = machine();
        k.folio_add_rmap_pmd(folio, mm);
    }

    #[test]
    #[should_panic(expected = "is not anon")]
    fn anon_rmap_of_a_file_folio_is_refused() {
        let (mut k, mm, folio) = machine();
        k.folio_add_anon_rmap_ptes(folio, folio, 1, mm);
    }

    #[test]
    #[should_panic(expected = "rmap of the zero folio")]
    fn the_zero_page_has_no_rmap() {
        let (mut k, mm, _) = machine();
        let zero = k.zero_pfn;
        k.folio_add_file_rmap_ptes(zero, zero, 1, mm);
    }

    #[test]
    #[should_panic(expected = "below zero")]
    fn unmapping_an_unmapped_page_is_a_bug() {
        let (mut k, mm, folio) = machine();
        k.folio_remove_rmap_ptes(folio, folio, 1, mm);
    }
}
