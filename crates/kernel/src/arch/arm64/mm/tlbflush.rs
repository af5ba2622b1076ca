//! arm64 TLB maintenance (arch/arm64/include/asm/tlbflush.h:
//! __flush_tlb_range_nosync(), __flush_tlb_range(), flush_tlb_page()),
//! Linux 6.18, on a CPU with FEAT_TLBIRANGE.
//!
//! A range of one page is one TLBI VALE1IS; more pages are one range TLBI
//! (RVALE1IS) while the encoding allows (up to 512 pages here; above, a
//! flush of the whole ASID, counted as a range op). Every sequence starts
//! with DSB ISHST; the synchronous forms end with DSB ISH. Broadcast TLBIs
//! need no IPIs. Not modelled: KPTI's doubled TLBIs, CPUs without
//! TLBIRANGE, BBML2.

use crate::mm::vmstat::VmStat;

/// `__flush_tlb_range_nosync()`
pub(crate) fn __flush_tlb_range_nosync(nr_pages: u64, vs: &mut VmStat) {
    vs.sim.dsb_ishst += 1;
    if nr_pages == 1 {
        vs.sim.tlbi_page += 1;
    } else {
        vs.sim.tlbi_range += 1;
    }
}

/// `__flush_tlb_range()`: the same, then wait for completion.
pub(crate) fn __flush_tlb_range(nr_pages: u64, vs: &mut VmStat) {
    vs.sim.flush_tlb_range += 1;
    __flush_tlb_range_nosync(nr_pages, vs);
    vs.sim.dsb_ish += 1;
}
