//! The simulated CPUs and the mm-level TLB-flush entry points every caller
//! in `mm/` uses (include/asm-generic/tlb.h, arch/x86/include/asm/tlbflush.h
//! `flush_tlb_mm()` / `flush_tlb_range()`, mm/rmap.c `should_defer_flush()`,
//! `set_tlb_ubc_flush_pending()`, `try_to_unmap_flush()`), Linux 6.18.
//!
//! Each entry point knows the mm it flushes for; the architecture decides
//! what the flush costs.

use crate::arch::Arch;
use crate::include::linux::pgtable::HPAGE_PMD_NR;
use crate::{Kernel, MmId};

impl<A: Arch> Kernel<A> {
    /// `flush_tlb_range()` of `nr_pages` pages of `mm` (page stride, no
    /// page tables freed).
    pub fn flush_tlb_range(&mut self, mm: MmId, nr_pages: u64) {
        let _ = mm;
        A::flush_tlb_range(nr_pages, &mut self.vmstat);
    }

    /// `flush_tlb_mm()`: the whole address space of `mm`.
    pub fn flush_tlb_mm(&mut self, mm: MmId) {
        let _ = mm;
        A::flush_tlb_range(u64::MAX / 2, &mut self.vmstat);
    }

    /// `pmdp_clear_flush_young()` of a PMD leaf of `mm`: test and clear its
    /// access flag; flush its 2 MiB when it was young.
    pub fn pmdp_clear_flush_young(&mut self, mm: MmId, pmd: &mut u64) -> bool {
        let _ = mm;
        let _ = HPAGE_PMD_NR;
        A::pmdp_clear_flush_young(pmd, &mut self.vmstat)
    }

    /// `should_defer_flush()` of reclaim's unmap (TTU_BATCH_FLUSH set):
    /// `arch_tlbbatch_should_defer(mm)`.
    pub fn should_defer_flush(&self, mm: MmId) -> bool {
        let _ = mm;
        A::tlbbatch_should_defer()
    }

    /// `arch_tlbbatch_add_pending()` of `nr_pages` pages of `mm` (from
    /// `set_tlb_ubc_flush_pending()`).
    pub fn tlbbatch_add_pending(&mut self, mm: MmId, nr_pages: u64) {
        let _ = mm;
        A::tlbbatch_add_pending(nr_pages, &mut self.vmstat);
    }

    /// `arch_tlbbatch_flush()` of reclaim's batch (from
    /// `try_to_unmap_flush()`).
    pub fn arch_tlbbatch_flush(&mut self) {
        A::tlbbatch_flush(&mut self.vmstat);
    }
}
