//! Unmapping (mm/memory.c: unmap_page_range(), zap_pmd_range(),
//! zap_pte_range(), do_zap_pte_range(), zap_present_ptes(),
//! zap_present_folio_ptes(); mm/pt_reclaim.c), Linux 6.18.
//!
//! Present entries of a large folio are cleared in batches
//! (`folio_pte_batch()`: consecutive PFNs of the same folio inside the range
//! and the table) with one rmap call per batch. A PMD leaf is zapped whole or
//! split first. MADV_DONTNEED frees a PTE table its range covered entirely
//! (CONFIG_PT_RECLAIM). Every cleared page goes into the mmu_gather
//! (mm/mmu_gather.rs); a full gather, or a dirty file PTE (delayed rmap),
//! flushes before the zap goes on.

use crate::arch::Arch;
use crate::include::linux::mm_types::PG_DIRTY;
use crate::include::linux::pgtable::{align_down, pte_index, Pfn, PAGE_SIZE, PMD_SIZE};
use crate::mm::mmap::{Vma, MM_ANONPAGES, MM_SWAPENTS, NR_MM_COUNTERS};
use crate::mm::pgtable_generic::TableId;
use crate::{Kernel, MmId};

impl<A: Arch> Kernel<A> {
    /// `unmap_page_range()` over `[start, end)` of one VMA. `reclaim_pt`
    /// frees PTE tables the range covered entirely (MADV_DONTNEED).
    pub(crate) fn unmap_vma_range(
        &mut self,
        mm: MmId,
        vma: &Vma,
        start: u64,
        end: u64,
        reclaim_pt: bool,
    ) {
        // The mmu_gather: one range flush at the end if a present entry was
        // cleared (tlb_finish_mmu(); swap entries do not set `tlb->end`).
        let present_cleared = |k: &Self| {
            k.vmstat.sim.pte_clear + k.vmstat.sim.pmd_clear - k.cpus.gather.nonpresent_cleared
        };
        let cleared = present_cleared(self);
        let mut addr = start;
        while addr < end {
            let (pmd, next) = self.pmd_range_step(mm, addr, end);
            if let Some(pmd) = pmd {
                self.zap_pmd(mm, vma, addr, next, pmd, reclaim_pt);
            }
            addr = next;
        }
        let cleared = present_cleared(self) != cleared;
        self.tlb_gather_range(mm, (end - start) / PAGE_SIZE, cleared);
    }

    /// One step of `zap_pmd_range()`.
    fn zap_pmd(
        &mut self,
        mm: MmId,
        vma: &Vma,
        addr: u64,
        next: u64,
        pmd: crate::mm::pgtable_generic::PmdSlot,
        reclaim_pt: bool,
    ) {
        let pmdval = self.pmdp_get(pmd);
        if pmdval == 0 {
            return;
        }
        let haddr = align_down(addr, PMD_SIZE);
        if A::pmd_trans_huge(pmdval) {
            if next - addr == PMD_SIZE {
                self.zap_huge_pmd(mm, vma, haddr, pmd);
                return;
            }
            self.split_huge_pmd(mm, vma, haddr, pmd);
            if self.pmdp_get(pmd) == 0 {
                return;
            }
        }
        let Some(tid) = self.entry_table(self.pmdp_get(pmd)) else {
            return;
        };
        self.zap_pte_range(mm, vma, tid, addr, next);
        if reclaim_pt && next - addr == PMD_SIZE && self.pt.table(tid).iter().all(|&e| e == 0) {
            self.cpus.gather.freed_tables = true;
            let _ = self.free_pte_table(pmd);
        }
    }

    /// `folio_pte_batch_flags()`: how many entries from `idx` map
    /// consecutive pages of `folio` (at most `max`). With `respect_dirty`
    /// (FPB_RESPECT_DIRTY) the batch also stops where the dirty bit changes;
    /// write, young and soft-dirty differences are ignored.
    pub(crate) fn folio_pte_batch(
        &mut self,
        tid: TableId,
        idx: usize,
        folio: Pfn,
        max: usize,
        respect_dirty: bool,
    ) -> usize {
        self.folio_pte_batch_flags(tid, idx, folio, max, respect_dirty, false)
    }

    /// `folio_pte_batch_flags()` with FPB_RESPECT_WRITE as well
    /// (`respect_write`: the batch stops where the write bit changes, as
    /// mremap's `mremap_folio_pte_batch()` asks).
    pub(crate) fn folio_pte_batch_flags(
        &mut self,
        tid: TableId,
        idx: usize,
        folio: Pfn,
        max: usize,
        respect_dirty: bool,
        respect_write: bool,
    ) -> usize {
        let first = self.pt.get(tid, idx);
        let pfn = A::pte_pfn(first);
        let folio_end = folio.0 as u64 + self.mem.folio_nr_pages(folio);
        let max = max.min((folio_end - pfn.0 as u64) as usize);
        // pte_batch_hint(): arm64 steps over a whole contiguous block per read.
        let mut nr = A::pte_batch_hint(self.pt.table(tid), idx);
        while nr < max {
            let e = A::ptep_get(self.pt.table(tid), idx + nr, &mut self.vmstat.sim);
            if !A::pte_present(e) || A::pte_special(e) || A::pte_pfn(e).0 != pfn.0 + nr as u32 {
                break;
            }
            if respect_dirty && A::pte_dirty(e) != A::pte_dirty(first) {
                break;
            }
            if respect_write && A::pte_write(e) != A::pte_write(first) {
                break;
            }
            nr += A::pte_batch_hint(self.pt.table(tid), idx + nr);
        }
        nr.min(max)
    }

    /// `zap_pte_range()`. A full gather stops the walk (force_break):
    /// the gather is flushed and the walk goes on from the next entry; a
    /// dirty PTE of a file folio (its rmap removal is delayed until after
    /// the flush, `tlb_delay_rmap()`) makes the table end with a flush
    /// (force_flush).
    fn zap_pte_range(&mut self, mm: MmId, vma: &Vma, tid: TableId, start: u64, end: u64) {
        self.flush_tlb_batched_pending(mm);
        let mut idx = pte_index(start);
        let end_idx = idx + ((end - start) / PAGE_SIZE) as usize;
        let mut rss = [0i64; NR_MM_COUNTERS];
        let mut force_flush = false;
        while idx < end_idx {
            let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            if pte == 0 {
                idx += 1;
                continue;
            }
            if !A::pte_present(pte) {
                self.zap_swap_pte(tid, idx, pte, &mut rss);
                idx += 1;
                continue;
            }
            let Some(page) = self.vm_normal_page(pte) else {
                A::ptep_get_and_clear(self.pt.table_mut(tid), idx, &mut self.vmstat.sim);
                self.tlb_remove_tlb_entry();
                idx += 1;
                continue;
            };
            let folio = self.mem.page_folio(page);
            let nr = if self.mem.folio_test_large(folio) {
                self.folio_pte_batch(tid, idx, folio, end_idx - idx, false)
            } else {
                1
            };
            let cleared =
                A::get_and_clear_full_ptes(self.pt.table_mut(tid), idx, nr, &mut self.vmstat.sim);
            force_flush |= !self.mem.folio_test_anon(folio) && A::pte_dirty(cleared);
            self.zap_present_folio(mm, vma, (folio, page), nr as u64, cleared, &mut rss);
            idx += nr;
            if self.tlb_remove_folio_pages(nr as u64) {
                self.tlb_flush_mmu(mm);
            }
        }
        self.add_mm_rss_vec(mm, &rss);
        if force_flush {
            self.tlb_flush_mmu(mm);
        }
    }

    /// `zap_nonpresent_ptes()` for a swap entry: clear it and drop the swap
    /// reference (`free_swap_and_cache_nr()`).
    fn zap_swap_pte(
        &mut self,
        tid: TableId,
        idx: usize,
        pte: u64,
        rss: &mut [i64; NR_MM_COUNTERS],
    ) {
        self.pt.set(tid, idx, 0);
        self.vmstat.sim.pte_clear += 1;
        self.cpus.gather.nonpresent_cleared += 1;
        let (ty, offset) = A::pte_to_swp_entry(pte);
        rss[MM_SWAPENTS] -= 1;
        self.swap_free_nr(crate::mm::swapfile::SwpEntry { ty, offset }, 1);
    }

    /// `zap_present_folio_ptes()`: account (in the pass's `rss[]`) and
    /// unmap a cleared batch.
    fn zap_present_folio(
        &mut self,
        mm: MmId,
        vma: &Vma,
        (folio, page): (Pfn, Pfn),
        nr: u64,
        cleared: u64,
        rss: &mut [i64; NR_MM_COUNTERS],
    ) {
        if self.mem.folio_test_anon(folio) {
            rss[MM_ANONPAGES] -= nr as i64;
        } else {
            if A::pte_dirty(cleared) {
                self.mem.set(folio, PG_DIRTY);
            }
            if A::pte_young(cleared) && crate::mm::swap::vma_has_recency(vma) {
                self.folio_mark_accessed(folio);
            }
            rss[self.mm_counter_file(folio)] -= nr as i64;
        }
        self.folio_remove_rmap_ptes(folio, page, nr, mm);
        self.free_swap_cache_and_put(folio);
    }
}
