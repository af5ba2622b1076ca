//! madvise(2) (mm/madvise.c: madvise_vma_behavior(), madvise_dontneed_single_vma(),
//! madvise_cold(), madvise_pageout(), madvise_cold_or_pageout_pte_range(),
//! madvise_free_single_vma(), madvise_free_pte_range(); mm/huge_memory.c:
//! madvise_free_huge_pmd(); mm/khugepaged.c: hugepage_madvise()), Linux 6.18.
//!
//! Modelled: MADV_HUGEPAGE / MADV_NOHUGEPAGE (VM flags only; khugepaged is
//! not modelled), MADV_RANDOM / MADV_SEQUENTIAL / MADV_NORMAL (readahead
//! flags), MADV_DONTNEED (zap with page-table reclaim), MADV_PAGEOUT and
//! MADV_COLD (one walk per PMD over the folios this mm maps exclusively,
//! splitting only folios partly inside the range; PAGEOUT isolates them and
//! calls reclaim_pages() per PMD, COLD clears their young bits and
//! deactivates them), MADV_FREE (anon VMAs only: swap entries in the range
//! are dropped, folios this mm maps exclusively lose their dirty and young
//! bits and become lazyfree; partly covered large folios are split first).
//! The young/dirty clears of COLD and FREE are gathered in the VMA's
//! mmu_gather and flushed once per VMA at `tlb_end_vma()`; a PMD whose
//! bits are cleared also pays `pmdp_invalidate()`'s own flush.
//! Approximated: the per-CPU LRU batches (`lru_deactivate`, `lru_lazyfree`)
//! are applied at once, so a folio never sits in a batch off the LRU.
//! MADV_POPULATE_READ / MADV_POPULATE_WRITE fault the range in through
//! get_user_pages() (mm/gup.rs). MADV_WILLNEED of anonymous memory reads
//! the range's swapped-out pages into the swap cache
//! (`swapin_walk_pmd_entry()`), of a file mapping the file's pages into the
//! page cache (`vfs_fadvise()`).
//! Unsupported (loud error at the engine): MADV_WILLNEED of shared
//! anonymous memory.

use crate::arch::Arch;
use crate::include::linux::mm_types::PG_WORKINGSET;
use crate::include::linux::mm_types::{PG_ACTIVE, PG_DIRTY, PG_LRU, PG_REFERENCED, PG_SWAPCACHE};
use crate::include::linux::pgtable::{pte_index, Pfn, HPAGE_PMD_NR, PAGE_SIZE, PMD_SIZE};
use crate::mm::mmap::{Vma, VmaKind, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_RAND_READ, VM_SEQ_READ};
use crate::mm::pgtable_generic::TableId;
use crate::KResult;
use crate::{Kernel, KernelError, MmId};

pub use foliosim_uapi::Madv;

/// The range an mmu_gather collected (`tlb->start`, `tlb->end`) and
/// whether PTEs (not only PMDs) were cleared (`tlb->cleared_ptes`), which
/// sets the flush stride.
#[derive(Clone, Copy, Debug)]
struct Gather {
    start: u64,
    end: u64,
    cleared_ptes: bool,
}

impl Gather {
    const EMPTY: Gather = Gather {
        start: u64::MAX,
        end: 0,
        cleared_ptes: false,
    };

    /// `tlb_remove_tlb_entries()` / `tlb_remove_pmd_tlb_entry()`.
    fn add(&mut self, addr: u64, len: u64, pte: bool) {
        self.start = self.start.min(addr);
        self.end = self.end.max(addr + len);
        self.cleared_ptes |= pte;
    }
}

impl<A: Arch> Kernel<A> {
    /// The madvise(2) system call: `behavior` is the raw `MADV_*` value
    /// (an unknown one fails with EINVAL, as madvise_behavior_valid()
    /// makes it).
    pub fn sys_madvise(&mut self, mm: MmId, start: u64, len: u64, behavior: i32) -> KResult<()> {
        let advice = Madv::from_raw(behavior).ok_or_else(|| {
            KernelError::Errno("EINVAL", format!("madvise advice {behavior} is not valid"))
        })?;
        self.vmstat.sim.syscall_mm += 1;
        self.do_madvise(mm, start, len, advice)
    }

    /// `do_madvise()` on `[start, start + len)`.
    pub fn do_madvise(&mut self, mm: MmId, start: u64, len: u64, advice: Madv) -> KResult<()> {
        if !start.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) {
            return Err(KernelError::Errno(
                "EINVAL",
                "madvise range must be page aligned".into(),
            ));
        }
        let end = start + len;
        if matches!(
            advice,
            Madv::Pageout | Madv::Cold | Madv::Dontneed | Madv::Free
        ) {
            for v in self.vmas_overlapping(mm, start, end) {
                let (s, e) = (v.vm_start.max(start), v.vm_end.min(end));
                match advice {
                    Madv::Pageout => self.madvise_cold_or_pageout(mm, &v, s, e, true),
                    Madv::Cold => self.madvise_cold_or_pageout(mm, &v, s, e, false),
                    Madv::Dontneed => self.unmap_vma_range(mm, &v, s, e, true),
                    _ => self.madvise_free_single_vma(mm, &v, s, e)?,
                }
            }
            return Ok(());
        }
        if advice == Madv::Collapse {
            return self.madvise_collapse_range(mm, start, end);
        }
        if advice == Madv::Willneed {
            for v in self.vmas_overlapping(mm, start, end) {
                self.madvise_willneed(mm, &v, v.vm_start.max(start), v.vm_end.min(end))?;
            }
            return Ok(());
        }
        if matches!(advice, Madv::PopulateRead | Madv::PopulateWrite) {
            // is_madvise_populate(): no walk over the VMAs' flags, straight
            // to get_user_pages() (mm/gup.rs).
            return self.madvise_populate(mm, start, end, advice == Madv::PopulateWrite);
        }
        let (set, clear) = match advice {
            Madv::Normal => (0, VM_RAND_READ | VM_SEQ_READ),
            Madv::Random => (VM_RAND_READ, VM_SEQ_READ),
            Madv::Sequential => (VM_SEQ_READ, VM_RAND_READ),
            Madv::Hugepage => (VM_HUGEPAGE, VM_NOHUGEPAGE),
            Madv::Nohugepage => (VM_NOHUGEPAGE, VM_HUGEPAGE),
            Madv::Willneed | Madv::PopulateRead | Madv::PopulateWrite | Madv::Collapse => {
                unreachable!()
            }
            Madv::Dontneed | Madv::Pageout | Madv::Cold | Madv::Free => unreachable!(),
        };
        for mut v in self.vmas_in_range_split(mm, start, end) {
            v.vm_flags = (v.vm_flags & !clear) | set;
            self.vma_update(mm, &v);
            if advice == Madv::Hugepage {
                // hugepage_madvise(): register without waiting for a fault.
                self.khugepaged_enter_vma(mm, &v, v.vm_flags);
            }
        }
        self.vma_merge_range(mm, start, end);
        Ok(())
    }

    /// `madvise_willneed()` of one VMA's part `[start, end)`. Anonymous
    /// memory: every swap PTE of the range that still refers to a slot in
    /// use has that slot read into the swap cache
    /// (`swapin_walk_pmd_entry()` → `read_swap_cache_async()`: an order-0
    /// folio charged to the slot's cgroup, on the LRU, nothing mapped); a
    /// PMD-mapped THP and a range without page tables read nothing. A file
    /// mapping: `vfs_fadvise(POSIX_FADV_WILLNEED)` over the range's file
    /// pages (`generic_fadvise()` → `force_page_cache_ra()`, mm/readahead.rs).
    /// Shared anonymous memory: `shmem_swapin_range()` (mm/shmem.rs).
    fn madvise_willneed(&mut self, mm: MmId, vma: &Vma, start: u64, end: u64) -> KResult<()> {
        match vma.kind {
            VmaKind::Anon => {}
            VmaKind::File => {
                let file = vma.file.expect("a file VMA has its file");
                let index = vma.linear_page_index(start);
                self.force_page_cache_ra(file, index, (end - start) / PAGE_SIZE);
                return Ok(());
            }
            VmaKind::Shmem => {
                self.shmem_swapin_range(vma, start, end);
                return Ok(());
            }
        }
        let mut addr = start;
        while addr < end {
            let (pmd, next) = self.pmd_range_step(mm, addr, end);
            let table = pmd
                .map(|pmd| self.pmdp_get(pmd))
                .filter(|&pmdval| !A::pmd_trans_huge(pmdval))
                .and_then(|pmdval| self.entry_table(pmdval));
            if let Some(tid) = table {
                for a in (addr..next).step_by(PAGE_SIZE as usize) {
                    let pte = self.pt.get(tid, pte_index(a));
                    if pte == 0 || A::pte_present(pte) {
                        continue;
                    }
                    let (ty, offset) = A::pte_to_swp_entry(pte);
                    // Migration entries and markers are no swap area's.
                    if (ty as usize) < self.swap.len() {
                        let entry = crate::mm::swapfile::SwpEntry { ty, offset };
                        self.read_swap_cache_async(entry, false);
                    }
                }
            }
            addr = next;
        }
        Ok(())
    }

    /// MADV_COLLAPSE over the VMAs of `[start, end)`, each clipped to the
    /// range (`madvise_collapse()` per VMA, mm/khugepaged.rs).
    fn madvise_collapse_range(
        &mut self,
        mm: MmId,
        start: u64,
        end: u64,
    ) -> Result<(), KernelError> {
        for v in self.vmas_overlapping(mm, start, end) {
            self.madvise_collapse(mm, &v, v.vm_start.max(start)..v.vm_end.min(end))?;
        }
        Ok(())
    }

    /// The VMAs that overlap `[start, end)`, in address order.
    fn vmas_overlapping(&self, mm: MmId, start: u64, end: u64) -> Vec<Vma> {
        self.mm(mm)
            .vmas
            .values()
            .filter(|v| v.vm_start < end && v.vm_end > start)
            .copied()
            .collect()
    }

    /// `tlb_end_vma()`: one flush of the gathered range, if any (page
    /// stride when PTEs were cleared, else PMD stride).
    fn tlb_end_vma(&mut self, mm: MmId, g: &Gather) {
        if g.end <= g.start {
            return;
        }
        let stride = if g.cleared_ptes { PAGE_SIZE } else { PMD_SIZE };
        self.flush_tlb_range(mm, (g.end - g.start).div_ceil(stride));
    }

    /// `pmdp_invalidate()` + `set_pmd_at()`: rewrite a PMD leaf with the
    /// young (and for MADV_FREE the dirty) bit cleared; the invalidation
    /// flushes the 2 MiB itself.
    fn pmd_clear_young_dirty(
        &mut self,
        mm: MmId,
        pmd: crate::mm::pgtable_generic::PmdSlot,
        clear_dirty: bool,
    ) {
        let v = self.pmdp_get(pmd);
        self.flush_tlb_range(mm, HPAGE_PMD_NR);
        let mut new = A::pte_mkold(v);
        if clear_dirty {
            new = A::pte_mkclean(new);
        }
        self.pt.set(pmd.table, pmd.idx, new);
        self.vmstat.sim.pte_modify += 1;
    }

    /// The entries from `idx` merged as `FPB_MERGE_YOUNG_DIRTY` batches them:
    /// (young, dirty) over `nr` entries (already read by the batch).
    fn merged_young_dirty(&self, tid: TableId, idx: usize, nr: usize) -> (bool, bool) {
        let t = self.pt.table(tid);
        t[idx..idx + nr].iter().fold((false, false), |(y, d), &e| {
            (y || A::pte_young(e), d || A::pte_dirty(e))
        })
    }
}

impl<A: Arch> Kernel<A> {
    /// `madvise_pageout()` / `madvise_cold()` over one VMA:
    /// `madvise_cold_or_pageout_pte_range()` once per PMD (PAGEOUT: each
    /// followed by `reclaim_pages()`), then `tlb_end_vma()`.
    fn madvise_cold_or_pageout(
        &mut self,
        mm: MmId,
        vma: &Vma,
        start: u64,
        end: u64,
        pageout: bool,
    ) {
        if pageout && vma.kind == VmaKind::File && vma.is_shared() {
            return; // can_do_file_pageout(): shared file pages are not ours to page out
        }
        // Shared anonymous memory: the process owns its shmem inode, so
        // can_do_file_pageout() allows it (inode_owner_or_capable()).
        let mut g = Gather::EMPTY;
        let mut addr = start;
        while addr < end {
            let (pmd, next) = self.pmd_range_step(mm, addr, end);
            if let Some(pmd) = pmd {
                let list =
                    self.cold_or_pageout_pmd_range(mm, vma, pmd, (addr, next), pageout, &mut g);
                if pageout {
                    self.reclaim_pages(list);
                }
            }
            addr = next;
        }
        self.tlb_end_vma(mm, &g);
    }

    /// What the walk does to one exclusively mapped LRU folio: forget its
    /// references (`folio_clear_referenced()`; PG_workingset if active),
    /// then isolate it for PAGEOUT or `folio_deactivate()` it for COLD.
    fn cold_or_pageout_folio(&mut self, folio: Pfn, pageout: bool, list: &mut Vec<Pfn>) {
        self.mem.clear(folio, PG_REFERENCED);
        if self.mem.test(folio, PG_ACTIVE) {
            self.mem.set(folio, PG_WORKINGSET);
        }
        if !pageout {
            self.folio_deactivate(folio);
        } else if self.mem.test(folio, PG_LRU) {
            self.folio_isolate_lru(folio);
            list.push(folio);
        }
    }

    /// `madvise_cold_or_pageout_pte_range()` for one PMD: the isolated list
    /// (PAGEOUT).
    fn cold_or_pageout_pmd_range(
        &mut self,
        mm: MmId,
        vma: &Vma,
        pmd: crate::mm::pgtable_generic::PmdSlot,
        (addr, next): (u64, u64),
        pageout: bool,
        g: &mut Gather,
    ) -> Vec<Pfn> {
        let mut list = Vec::new();
        let pmdval = self.pmdp_get(pmd);
        if A::pmd_trans_huge(pmdval) {
            if A::pte_special(pmdval) {
                return list;
            }
            let folio = A::pte_pfn(pmdval);
            if self.mem.large(folio).maybe_shared || (pageout && !self.pageout_wants(folio, vma)) {
                return list;
            }
            if next - addr == PMD_SIZE {
                if !pageout && A::pte_young(pmdval) {
                    self.pmd_clear_young_dirty(mm, pmd, false);
                    g.add(addr, PMD_SIZE, false);
                }
                self.cold_or_pageout_folio(folio, pageout, &mut list);
                return list;
            }
            self.split_folio_to_list(folio, None);
        }
        let Some(tid) = self.entry_table(self.pmdp_get(pmd)) else {
            return list;
        };
        // A deferred reclaim flush of this mm may still be pending on other
        // CPUs: flush it before changing entries (as the kernel does right
        // after mapping the PTE table).
        self.flush_tlb_batched_pending(mm);
        let mut a = addr;
        while a < next {
            let idx = pte_index(a);
            let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            let Some(page) = (A::pte_present(pte) && !A::pte_special(pte)).then(|| A::pte_pfn(pte))
            else {
                a += PAGE_SIZE;
                continue;
            };
            let folio = self.mem.page_folio(page);
            let mut nr = 1;
            if self.mem.folio_test_large(folio) {
                nr =
                    self.folio_pte_batch(tid, idx, folio, ((next - a) / PAGE_SIZE) as usize, false);
                if (nr as u64) < self.mem.folio_nr_pages(folio) {
                    if self.mem.large(folio).maybe_shared
                        || (pageout && !self.pageout_wants(folio, vma))
                        || self.locked.contains(&folio)
                        || self.folio_test_writeback(folio)
                    {
                        a += nr as u64 * PAGE_SIZE;
                        continue;
                    }
                    self.split_folio_to_list(folio, None);
                    continue; // re-examine: now an order-0 folio
                }
            }
            if self.mem.test(folio, PG_LRU)
                && self.mem.folio_mapcount(folio) as u64 == self.mem.folio_nr_pages(folio)
                && (!pageout || self.pageout_wants(folio, vma))
            {
                if !pageout && self.merged_young_dirty(tid, idx, nr).0 {
                    A::clear_young_dirty_ptes(
                        self.pt.table_mut(tid),
                        idx,
                        nr,
                        false,
                        &mut self.vmstat.sim,
                    );
                    g.add(a, nr as u64 * PAGE_SIZE, true);
                }
                self.cold_or_pageout_folio(folio, pageout, &mut list);
            }
            a += nr as u64 * PAGE_SIZE;
        }
        list
    }

    /// `pageout_anon_only_filter`: private file mappings page out only their
    /// anon folios.
    fn pageout_wants(&self, folio: Pfn, vma: &Vma) -> bool {
        vma.kind == VmaKind::Anon || self.mem.folio_test_anon(folio) || vma.is_shared()
    }
}

impl<A: Arch> Kernel<A> {
    /// `madvise_free_single_vma()`: anonymous private VMAs only (EINVAL
    /// otherwise), `madvise_free_pte_range()` per PMD, `tlb_end_vma()`.
    fn madvise_free_single_vma(
        &mut self,
        mm: MmId,
        vma: &Vma,
        start: u64,
        end: u64,
    ) -> KResult<()> {
        if vma.kind != VmaKind::Anon || vma.is_shared() {
            return Err(KernelError::Errno(
                "EINVAL",
                "MADV_FREE works on private anonymous mappings only".into(),
            ));
        }
        let mut g = Gather::EMPTY;
        let mut addr = start;
        while addr < end {
            let (pmd, next) = self.pmd_range_step(mm, addr, end);
            if let Some(pmd) = pmd {
                self.madvise_free_pte_range(mm, vma, pmd, (addr, next), &mut g);
            }
            addr = next;
        }
        self.tlb_end_vma(mm, &g);
        Ok(())
    }

    /// `madvise_free_huge_pmd()`: true when the PMD was handled whole (its
    /// folio made lazyfree); a partly covered THP is split and the PTE walk
    /// goes on.
    fn madvise_free_huge_pmd(
        &mut self,
        mm: MmId,
        pmd: crate::mm::pgtable_generic::PmdSlot,
        addr: u64,
        next: u64,
        g: &mut Gather,
    ) -> bool {
        let pmdval = self.pmdp_get(pmd);
        if A::pte_special(pmdval) {
            return false; // the huge zero folio: nothing to free
        }
        let folio = A::pte_pfn(pmdval);
        if self.mem.large(folio).maybe_shared
            || self.locked.contains(&folio)
            || self.folio_test_writeback(folio)
        {
            return false;
        }
        if next - addr != PMD_SIZE {
            self.split_folio_to_list(folio, None);
            return false;
        }
        self.mem.clear(folio, PG_DIRTY);
        if A::pte_young(pmdval) || A::pte_dirty(pmdval) {
            self.pmd_clear_young_dirty(mm, pmd, true);
            g.add(addr, PMD_SIZE, false);
        }
        self.folio_mark_lazyfree(folio);
        true
    }

    /// `madvise_free_pte_range()` for one PMD.
    fn madvise_free_pte_range(
        &mut self,
        mm: MmId,
        vma: &Vma,
        pmd: crate::mm::pgtable_generic::PmdSlot,
        (addr, next): (u64, u64),
        g: &mut Gather,
    ) {
        if A::pmd_trans_huge(self.pmdp_get(pmd))
            && self.madvise_free_huge_pmd(mm, pmd, addr, next, g)
        {
            return;
        }
        let Some(tid) = self.entry_table(self.pmdp_get(pmd)) else {
            return; // still a PMD leaf (zero folio, shared, locked)
        };
        // As in the cold/pageout walk: a deferred reclaim flush of this mm
        // is completed right after the PTE table is mapped.
        self.flush_tlb_batched_pending(mm);
        let _ = vma;
        let mut nr_swap = 0i64;
        let mut a = addr;
        while a < next {
            let idx = pte_index(a);
            let max = ((next - a) / PAGE_SIZE) as usize;
            let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            if pte == 0 {
                a += PAGE_SIZE;
                continue;
            }
            if !A::pte_present(pte) {
                let nr = self.madvise_free_swap_ptes(tid, idx, max, pte);
                nr_swap += nr as i64;
                a += nr as u64 * PAGE_SIZE;
                continue;
            }
            if A::pte_special(pte) {
                a += PAGE_SIZE;
                continue;
            }
            let folio = self.mem.page_folio(A::pte_pfn(pte));
            let nr_folio = self.mem.folio_nr_pages(folio);
            let mut nr = 1;
            if self.mem.folio_test_large(folio) {
                nr = self.folio_pte_batch(tid, idx, folio, max, false);
                if (nr as u64) < nr_folio {
                    if self.mem.large(folio).maybe_shared
                        || self.locked.contains(&folio)
                        || self.folio_test_writeback(folio)
                    {
                        a += nr as u64 * PAGE_SIZE;
                        continue;
                    }
                    self.split_folio_to_list(folio, None);
                    continue; // re-examine: now an order-0 folio
                }
            }
            if self.mem.test(folio, PG_SWAPCACHE) || self.mem.test(folio, PG_DIRTY) {
                if self.mem.folio_mapcount(folio) as u64 != nr_folio
                    || (self.mem.test(folio, PG_SWAPCACHE) && !self.folio_free_swap(folio))
                {
                    a += nr as u64 * PAGE_SIZE;
                    continue;
                }
                self.mem.clear(folio, PG_DIRTY);
            }
            let (young, dirty) = self.merged_young_dirty(tid, idx, nr);
            if young || dirty {
                A::clear_young_dirty_ptes(
                    self.pt.table_mut(tid),
                    idx,
                    nr,
                    true,
                    &mut self.vmstat.sim,
                );
                g.add(a, nr as u64 * PAGE_SIZE, true);
            }
            self.folio_mark_lazyfree(folio);
            a += nr as u64 * PAGE_SIZE;
        }
        if nr_swap != 0 {
            self.add_mm_counter(mm, crate::mm::mmap::MM_SWAPENTS, -nr_swap);
        }
    }

    /// The swap-entry case of `madvise_free_pte_range()`: a run of swap
    /// entries with consecutive slots (`swap_pte_batch()`) is cleared and
    /// its swap references dropped (`free_swap_and_cache_nr()`), since a
    /// fresh zero page is cheaper than a swap-in. Returns the run length.
    fn madvise_free_swap_ptes(&mut self, tid: TableId, idx: usize, max: usize, pte: u64) -> usize {
        let (ty, offset) = A::pte_to_swp_entry(pte);
        let mut nr = 1;
        while nr < max {
            let e = self.pt.get(tid, idx + nr);
            if e == 0 || A::pte_present(e) || A::pte_to_swp_entry(e) != (ty, offset + nr as u64) {
                break;
            }
            nr += 1;
        }
        for i in 0..nr {
            self.pt.set(tid, idx + i, 0);
        }
        self.vmstat.sim.pte_clear += nr as u64;
        self.swap_free_nr(crate::mm::swapfile::SwpEntry { ty, offset }, nr as u64);
        nr
    }
}
