//! x86 TLB flushing for an mm that runs on one CPU (arch/x86/mm/tlb.c:
//! flush_tlb_mm_range(), flush_tlb_func(), arch_tlbbatch_flush()), Linux
//! 6.18.
//!
//! Modelled: the 33-page `tlb_single_page_flush_ceiling` (INVLPG per page
//! up to 33, a full flush above), the `tlb:tlb_flush` event of each flush
//! (reason LOCAL_MM_SHOOTDOWN for range flushes, LOCAL_SHOOTDOWN for the
//! reclaim batch), and INVLPG / full-flush counts (`sim/`; the target kernel
//! has no `nr_tlb_*` vmstat counters). Not modelled yet: other CPUs
//! in mm_cpumask (IPIs, remote shootdowns, deferral), PCID/ASID
//! generations, INVLPGB.

use crate::mm::vmstat::{Trace, VmStat};

/// `tlb_single_page_flush_ceiling`
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

/// `flush_tlb_mm_range()` on the local CPU.
pub fn flush_tlb_mm_range(nr_pages: u64, vs: &mut VmStat) {
    vs.sim.flush_tlb_range += 1;
    vs.trace(Trace::TlbFlush);
    if nr_pages > TLB_SINGLE_PAGE_FLUSH_CEILING {
        vs.sim.tlb_flush_all += 1;
    } else {
        vs.sim.invlpg += nr_pages;
    }
}

/// `arch_tlbbatch_flush()` with only this CPU in the batch mask: one full
/// local flush.
pub fn arch_tlbbatch_flush(vs: &mut VmStat) {
    vs.sim.tlbbatch_flush += 1;
    vs.sim.tlb_flush_all += 1;
    vs.trace(Trace::TlbFlush);
}
