//! madvise(2) (mm/madvise.c: madvise_vma_behavior(), madvise_dontneed_single_vma();
//! mm/khugepaged.c: hugepage_madvise()), Linux 6.18.
//!
//! Modelled: MADV_HUGEPAGE / MADV_NOHUGEPAGE (VM flags only; khugepaged is
//! not modelled), MADV_RANDOM / MADV_SEQUENTIAL / MADV_NORMAL (readahead
//! flags), MADV_DONTNEED (zap with page-table reclaim), MADV_PAGEOUT
//! (madvise_cold_or_pageout_pte_range(): per PMD, isolate the folios this mm
//! maps exclusively, split only folios partly inside the range, then
//! reclaim_pages()). VMAs are split at the range ends and re-merged where
//! the flags allow.
//! Unsupported (loud error): every other advice until reclaim and swap are
//! modelled.

use crate::arch::Arch;
use crate::include::linux::mm_types::PG_LRU;
use crate::include::linux::pgtable::{Pfn, PAGE_SIZE};
use crate::mm::mmap::{VM_HUGEPAGE, VM_NOHUGEPAGE, VM_RAND_READ, VM_SEQ_READ};
use crate::{Kernel, KernelError, MmId};

/// The advice values the model knows (`MADV_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Madv {
    Normal,
    Random,
    Sequential,
    Dontneed,
    Hugepage,
    Nohugepage,
    Pageout,
}

impl<A: Arch> Kernel<A> {
    /// `do_madvise()` on `[start, start + len)`.
    pub fn do_madvise(
        &mut self,
        mm: MmId,
        start: u64,
        len: u64,
        advice: Madv,
    ) -> Result<(), KernelError> {
        if !start.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) {
            return Err(KernelError::Errno(
                "EINVAL",
                "madvise range must be page aligned".into(),
            ));
        }
        let end = start + len;
        if advice == Madv::Pageout {
            let vmas: Vec<_> = self
                .mm(mm)
                .vmas
                .values()
                .filter(|v| v.vm_start < end && v.vm_end > start)
                .copied()
                .collect();
            for v in vmas {
                self.madvise_pageout(mm, &v, v.vm_start.max(start), v.vm_end.min(end));
            }
            return Ok(());
        }
        if advice == Madv::Dontneed {
            let vmas: Vec<_> = self
                .mm(mm)
                .vmas
                .values()
                .filter(|v| v.vm_start < end && v.vm_end > start)
                .copied()
                .collect();
            for v in vmas {
                self.unmap_vma_range(mm, &v, v.vm_start.max(start), v.vm_end.min(end), true);
            }
            return Ok(());
        }
        let (set, clear) = match advice {
            Madv::Normal => (0, VM_RAND_READ | VM_SEQ_READ),
            Madv::Random => (VM_RAND_READ, VM_SEQ_READ),
            Madv::Sequential => (VM_SEQ_READ, VM_RAND_READ),
            Madv::Hugepage => (VM_HUGEPAGE, VM_NOHUGEPAGE),
            Madv::Nohugepage => (VM_NOHUGEPAGE, VM_HUGEPAGE),
            Madv::Dontneed | Madv::Pageout => unreachable!(),
        };
        for mut v in self.vmas_in_range_split(mm, start, end) {
            v.vm_flags = (v.vm_flags & !clear) | set;
            self.vma_update(mm, &v);
        }
        self.vma_merge_range(mm, start, end);
        Ok(())
    }
}

impl<A: Arch> Kernel<A> {
    /// `madvise_pageout()` over one VMA: `madvise_cold_or_pageout_pte_range()`
    /// once per PMD, each followed by `reclaim_pages()`.
    fn madvise_pageout(&mut self, mm: MmId, vma: &crate::mm::mmap::Vma, start: u64, end: u64) {
        use crate::include::linux::pgtable::pmd_addr_end;
        if vma.kind != crate::mm::mmap::VmaKind::Anon && vma.is_shared() {
            return; // can_do_file_pageout(): shared file pages are not ours to page out
        }
        let mut addr = start;
        while addr < end {
            let next = pmd_addr_end(addr, end);
            let list = self.pageout_pmd_range(mm, vma, addr, next);
            self.reclaim_pages(list);
            addr = next;
        }
    }

    /// `madvise_cold_or_pageout_pte_range()` for PAGEOUT: the isolated list.
    fn pageout_pmd_range(
        &mut self,
        mm: MmId,
        vma: &crate::mm::mmap::Vma,
        addr: u64,
        next: u64,
    ) -> Vec<Pfn> {
        use crate::include::linux::pgtable::{PAGE_SIZE, PMD_SIZE};
        let mut list = Vec::new();
        let Some(pmd) = self.walk_to_pmd(mm, addr) else {
            return list;
        };
        let pmdval = self.pmdp_get(pmd);
        if A::pmd_trans_huge(pmdval) {
            if A::pte_special(pmdval) {
                return list;
            }
            let folio = A::pte_pfn(pmdval);
            if self.mem.large(folio).maybe_shared || !self.pageout_wants(folio, vma) {
                return list;
            }
            if next - addr == PMD_SIZE {
                if self.mem.test(folio, PG_LRU) {
                    self.folio_isolate_lru(folio);
                    return vec![folio];
                }
                return list;
            }
            self.split_folio_to_list(folio, None);
        }
        let Some(tid) = self.entry_table(self.pmdp_get(pmd)) else {
            return list;
        };
        let mut a = addr;
        while a < next {
            let idx = crate::include::linux::pgtable::pte_index(a);
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
                    if self.mem.large(folio).maybe_shared || !self.pageout_wants(folio, vma) {
                        a += nr as u64 * PAGE_SIZE;
                        continue;
                    }
                    self.split_folio_to_list(folio, None);
                    continue; // re-examine: now an order-0 folio
                }
            }
            if self.mem.test(folio, PG_LRU)
                && self.mem.folio_mapcount(folio) as u64 == self.mem.folio_nr_pages(folio)
                && self.pageout_wants(folio, vma)
            {
                self.folio_isolate_lru(folio);
                list.push(folio);
            }
            a += nr as u64 * PAGE_SIZE;
        }
        list
    }

    /// `pageout_anon_only_filter`: private file mappings page out only their
    /// anon folios.
    fn pageout_wants(&self, folio: Pfn, vma: &crate::mm::mmap::Vma) -> bool {
        vma.kind == crate::mm::mmap::VmaKind::Anon
            || self.mem.folio_test_anon(folio)
            || vma.is_shared()
    }
}
