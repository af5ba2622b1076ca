//! get_user_pages() as MADV_POPULATE_READ / MADV_POPULATE_WRITE drive it
//! (mm/madvise.c: madvise_populate(); mm/gup.c: faultin_page_range(),
//! __get_user_pages(), check_vma_flags(), follow_page_mask(),
//! follow_page_pte(), follow_huge_pmd(), touch_pmd(), faultin_page()),
//! Linux 6.18.
//!
//! Modelled: page by page from the start, the entry is looked up; a present
//! entry (writable, for a write) is "followed": FOLL_TOUCH marks its folio
//! accessed (`folio_mark_accessed()`, so a second page of an inactive
//! large folio activates it) and, for a write through a clean entry of a
//! clean folio, dirties the folio; a PMD leaf is made young (and dirty, for
//! a write) instead, and the walk goes on at the next PMD. Any other entry
//! (none, swap, read-only for a write) is faulted in with
//! `handle_mm_fault()` without FAULT_FLAG_USER and under mmap_lock, then
//! looked up again. Such faults count in `pgfault` and in the task's
//! min_flt / maj_flt (`mm_account_fault()`), but there is no CPU exception:
//! no `exceptions:page_fault_user`, no perf page-fault event. Errors as
//! madvise_populate() maps them: no VMA → ENOMEM, a VMA without the
//! permission → EINVAL, SIGBUS/SIGSEGV → EFAULT, OOM → ENOMEM.
//! Not modelled: page references (populate takes none), FOLL_FORCE,
//! hugetlb, VM_IO / VM_PFNMAP mappings (the scenario cannot make them).
//! Guarantee: populating never changes a page's contents (a populated page
//! is still zero-filled, as the zeromap at swap-out sees it).

use crate::arch::Arch;
use crate::include::linux::mm_types::PG_DIRTY;
use crate::include::linux::pgtable::{pmd_addr_end, pte_index, PAGE_SIZE};
use crate::mm::memory::{
    FaultOutcome, FAULT_FLAG_ALLOW_RETRY, FAULT_FLAG_WRITE, VM_FAULT_ERROR, VM_FAULT_OOM,
};
use crate::mm::mmap::{VM_READ, VM_WRITE};
use crate::KResult;
use crate::{Kernel, KernelError, MmId};

/// Faults get_user_pages() took for the current task since the engine
/// last drained them (`current->min_flt` / `maj_flt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GupFaults {
    pub min_flt: u64,
    pub maj_flt: u64,
}

/// What `follow_page_mask()` found at an address.
enum Follow {
    /// A followable page; the walk goes on `nr` pages later (1, or to the
    /// end of a PMD leaf).
    Page { nr: u64 },
    /// Nothing followable: fault it in.
    Fault,
}

impl<A: Arch> Kernel<A> {
    /// `madvise_populate()` over `[start, end)`: every page readable (or
    /// writable) in the page tables afterwards.
    pub(crate) fn madvise_populate(
        &mut self,
        mm: MmId,
        start: u64,
        end: u64,
        write: bool,
    ) -> KResult<()> {
        let mut addr = start;
        while addr < end {
            // __get_user_pages(): FOLL_MADV_POPULATE looks the VMA up with
            // vma_lookup() and checks its flags once per VMA.
            let Some(vma) = self.find_vma(mm, addr) else {
                return Err(KernelError::Errno(
                    "ENOMEM",
                    format!("madvise populate: no mapping at {addr:#x}"),
                ));
            };
            let need = if write { VM_WRITE } else { VM_READ };
            if vma.vm_flags & need == 0 {
                return Err(KernelError::Errno(
                    "EINVAL",
                    format!(
                        "madvise populate_{}: the mapping at {addr:#x} is not {}",
                        if write { "write" } else { "read" },
                        if write { "writable" } else { "readable" }
                    ),
                ));
            }
            let vma_end = vma.vm_end.min(end);
            while addr < vma_end {
                addr += self.populate_one(mm, addr, write)? * PAGE_SIZE;
            }
            addr = addr.min(end);
        }
        Ok(())
    }

    /// One step of `__get_user_pages()`: follow the page at `addr`,
    /// faulting it in first if needed (`faultin_page()`, then `retry`).
    /// Returns the pages the step covered.
    fn populate_one(&mut self, mm: MmId, addr: u64, write: bool) -> KResult<u64> {
        for _ in 0..4 {
            if let Follow::Page { nr } = self.follow_page_mask(mm, addr, write) {
                return Ok(nr);
            }
            let mut flags = FAULT_FLAG_ALLOW_RETRY;
            if write {
                flags |= FAULT_FLAG_WRITE;
            }
            let FaultOutcome { ret, major } = self.handle_mm_fault_retry(mm, addr, flags, false);
            if ret & VM_FAULT_ERROR != 0 {
                let (errno, what) = if ret & VM_FAULT_OOM != 0 {
                    ("ENOMEM", "out of memory")
                } else {
                    ("EFAULT", "the fault failed (SIGBUS or SIGSEGV)")
                };
                return Err(KernelError::Errno(
                    errno,
                    format!("madvise populate at {addr:#x}: {what}"),
                ));
            }
            if major {
                self.gup_faults.maj_flt += 1;
            } else {
                self.gup_faults.min_flt += 1;
            }
        }
        panic!("model bug: populate at {addr:#x} still not followable after three faults");
    }

    /// `follow_page_mask()` with FOLL_TOUCH (and FOLL_WRITE for a write).
    fn follow_page_mask(&mut self, mm: MmId, addr: u64, write: bool) -> Follow {
        let Some(pmd) = self.walk_to_pmd(mm, addr) else {
            return Follow::Fault;
        };
        let pmdval = self.pmdp_get(pmd);
        if A::pmd_trans_huge(pmdval) {
            // follow_huge_pmd(): a read-only leaf is not followed for a
            // write; touch_pmd() marks the leaf young (and dirty).
            if write && !A::pte_write(pmdval) {
                return Follow::Fault;
            }
            let mut new = A::pte_mkyoung(pmdval);
            if write {
                new = A::pte_mkdirty(new);
            }
            if new != pmdval {
                self.pt.set(pmd.table, pmd.idx, new);
                self.vmstat.sim.pte_modify += 1;
            }
            return Follow::Page {
                nr: (pmd_addr_end(addr, u64::MAX) - addr) / PAGE_SIZE,
            };
        }
        let Some(tid) = self.entry_table(pmdval) else {
            return Follow::Fault;
        };
        let pte = A::ptep_get(self.pt.table(tid), pte_index(addr), &mut self.vmstat.sim);
        // follow_page_pte(): not present, or read-only for a write
        // (can_follow_write_pte() without FOLL_FORCE).
        if !A::pte_present(pte) || (write && !A::pte_write(pte)) {
            return Follow::Fault;
        }
        if let Some(page) = self.vm_normal_page(pte) {
            let folio = self.mem.page_folio(page);
            if write && !A::pte_dirty(pte) && !self.mem.test(folio, PG_DIRTY) {
                self.mem.set(folio, PG_DIRTY);
            }
            self.folio_mark_accessed(folio);
        }
        Follow::Page { nr: 1 }
    }
}
