//! arm64 page-table encoding with the 4 KiB granule
//! (arch/arm64/include/asm/pgtable-hwdef.h, pgtable-prot.h, pgtable.h).
//!
//! Modelled: valid/page/table/block descriptors, AP[1] (user), AP[2]
//! (`PTE_RDONLY`), AF, nG, the DBM bit that Linux uses as `PTE_WRITE`, the
//! software `PTE_DIRTY` and `PTE_SPECIAL` bits, the contiguous bit
//! (`PTE_CONT`, see [`mm::contpte`]) and hardware access-flag / dirty-state
//! management (FEAT_HAFDBS), so prefaulted entries start old. Not modelled:
//! 16 KiB/64 KiB granules, memory attributes, BBM/TLB conflict aborts, MTE,
//! POE and GCS.

pub mod mm;

use super::{Arch, FolioSpan, PteProt};
use crate::include::linux::pgtable::Pfn;
use crate::kernel::sched::Cpus;
use crate::mm::vmstat::{SimStat, VmStat};
use crate::MmId;

pub(crate) const PTE_VALID: u64 = 1 << 0;
/// Bits 1:0 = 0b11: page (level 3) or table (levels 0-2).
pub(crate) const PTE_TYPE_PAGE: u64 = 3;
/// Bits 1:0 = 0b01: block (PMD leaf).
pub(crate) const PMD_TYPE_SECT: u64 = 1;
pub(crate) const PTE_USER: u64 = 1 << 6;
pub(crate) const PTE_RDONLY: u64 = 1 << 7;
pub(crate) const PTE_SHARED: u64 = 3 << 8;
pub(crate) const PTE_AF: u64 = 1 << 10;
pub(crate) const PTE_NG: u64 = 1 << 11;
pub(crate) const PTE_DBM: u64 = 1 << 51;
/// Linux uses the hardware DBM bit as its write permission.
pub(crate) const PTE_WRITE: u64 = PTE_DBM;
pub(crate) const PTE_CONT: u64 = 1 << 52;
pub(crate) const PTE_PXN: u64 = 1 << 53;
pub(crate) const PTE_UXN: u64 = 1 << 54;
pub(crate) const PTE_DIRTY: u64 = 1 << 55;
pub(crate) const PTE_SPECIAL: u64 = 1 << 56;
/// `PTE_SWP_EXCLUSIVE` (swap PTEs only).
pub(crate) const PTE_SWP_EXCLUSIVE: u64 = 1 << 2;
/// Output address bits 47:12.
pub(crate) const PTE_ADDR_MASK: u64 = ((1 << 48) - 1) & !0xfff;
/// `CONT_PTES` with the 4 KiB granule.
pub(crate) const CONT_PTES: usize = 16;

/// arm64 with the 4 KiB granule.
#[derive(Clone, Copy, Debug, Default)]
pub struct Arm64;

impl Arch for Arm64 {
    const TRACE_PAGE_FAULT_USER: bool = false;
    const HW_NONLEAF_PMD_YOUNG: bool = false;
    const NAME: &'static str = "arm64";

    fn pfn_pte(pfn: Pfn, prot: PteProt) -> u64 {
        // PAGE_READONLY / PAGE_SHARED style: normal memory, inner shareable,
        // user, non-global, never kernel-executable.
        let mut pte = ((pfn.0 as u64) << 12)
            | PTE_TYPE_PAGE
            | PTE_SHARED
            | PTE_USER
            | PTE_NG
            | PTE_PXN
            | PTE_RDONLY;
        if prot.young {
            pte |= PTE_AF;
        }
        if !prot.exec {
            pte |= PTE_UXN;
        }
        if prot.special {
            pte |= PTE_SPECIAL;
        }
        if prot.write {
            pte = Self::pte_mkwrite(pte);
        }
        if prot.dirty {
            pte = Self::pte_mkdirty(pte);
        }
        pte
    }
    #[inline]
    fn pte_present(pte: u64) -> bool {
        pte & PTE_VALID != 0
    }
    #[inline]
    fn pte_pfn(pte: u64) -> Pfn {
        Pfn(((pte & PTE_ADDR_MASK) >> 12) as u32)
    }
    #[inline]
    fn pte_write(pte: u64) -> bool {
        pte & PTE_WRITE != 0
    }
    #[inline]
    fn pte_dirty(pte: u64) -> bool {
        // pte_sw_dirty() || pte_hw_dirty()
        pte & PTE_DIRTY != 0 || (pte & PTE_DBM != 0 && pte & PTE_RDONLY == 0)
    }
    #[inline]
    fn pte_young(pte: u64) -> bool {
        pte & PTE_AF != 0
    }
    #[inline]
    fn pte_special(pte: u64) -> bool {
        pte & PTE_SPECIAL != 0
    }
    #[inline]
    fn pte_valid_cont(pte: u64) -> bool {
        Self::pte_present(pte) && pte & PTE_CONT != 0
    }
    fn pte_mkwrite(pte: u64) -> u64 {
        let pte = pte | PTE_WRITE;
        if pte & PTE_DIRTY != 0 {
            pte & !PTE_RDONLY
        } else {
            pte
        }
    }
    fn pte_wrprotect(pte: u64) -> u64 {
        // Preserve a hardware-dirty state in the software bit first.
        let mut pte = pte;
        if Self::pte_dirty(pte) {
            pte |= PTE_DIRTY;
        }
        (pte & !PTE_WRITE) | PTE_RDONLY
    }
    fn pte_mkdirty(pte: u64) -> u64 {
        let pte = pte | PTE_DIRTY;
        if pte & PTE_WRITE != 0 {
            pte & !PTE_RDONLY
        } else {
            pte
        }
    }
    fn pte_mkclean(pte: u64) -> u64 {
        (pte & !PTE_DIRTY) | PTE_RDONLY
    }
    fn pte_mkyoung(pte: u64) -> u64 {
        pte | PTE_AF
    }
    fn pte_mkold(pte: u64) -> u64 {
        pte & !PTE_AF
    }
    #[inline]
    fn pte_advance_pfn(pte: u64, nr: u64) -> u64 {
        pte + (nr << 12)
    }
    fn mk_table(pfn: Pfn) -> u64 {
        ((pfn.0 as u64) << 12) | PTE_TYPE_PAGE
    }
    #[inline]
    fn entry_is_table(entry: u64) -> bool {
        entry & 3 == 3
    }
    #[inline]
    fn table_pfn(entry: u64) -> Pfn {
        Self::pte_pfn(entry)
    }
    fn pmd_mkhuge(pte: u64) -> u64 {
        (pte & !3) | PMD_TYPE_SECT
    }
    #[inline]
    fn pmd_trans_huge(pmd: u64) -> bool {
        pmd & 3 == PMD_TYPE_SECT
    }
    /// `__swp_entry()`: type in bits 6..11, offset from bit 12,
    /// `PTE_SWP_EXCLUSIVE` bit 2; never valid.
    fn swp_entry_to_pte(ty: u32, offset: u64, exclusive: bool) -> u64 {
        let v = ((ty as u64 & 0x1f) << 6) | (offset << 12);
        if exclusive {
            v | PTE_SWP_EXCLUSIVE
        } else {
            v
        }
    }
    fn pte_to_swp_entry(pte: u64) -> (u32, u64) {
        (((pte >> 6) & 0x1f) as u32, pte >> 12)
    }
    fn pte_swp_exclusive(pte: u64) -> bool {
        pte & PTE_SWP_EXCLUSIVE != 0
    }
    fn pte_swp_clear_exclusive(pte: u64) -> u64 {
        pte & !PTE_SWP_EXCLUSIVE
    }
    fn flush_tlb_mm_range(_: &mut Cpus, _: MmId, nr: u64, _: bool, vs: &mut VmStat) {
        // Broadcast TLBIs: the same instructions whichever CPUs ran the mm.
        mm::tlbflush::__flush_tlb_range(nr, vs)
    }
    fn tlbbatch_should_defer(_: &Cpus, _: MmId) -> bool {
        true
    }
    fn tlbbatch_add_pending(_: &mut Cpus, _: MmId, nr_pages: u64, vs: &mut VmStat) {
        vs.sim.tlbbatch_add += 1;
        mm::tlbflush::__flush_tlb_range_nosync(nr_pages, vs)
    }
    fn tlbbatch_flush(_: &mut Cpus, vs: &mut VmStat) {
        vs.sim.tlbbatch_flush += 1;
        vs.sim.dsb_ish += 1;
    }
    fn arch_wants_old_prefaulted_pte() -> bool {
        // cpu_has_hw_af(): the modelled CPU implements FEAT_HAFDBS.
        true
    }
    #[inline]
    fn hw_access(pte: u64, write: bool) -> Option<u64> {
        if pte & PTE_VALID == 0 {
            return None;
        }
        if write && pte & PTE_RDONLY != 0 {
            // Hardware dirty-state management clears AP[2] when DBM is set.
            if pte & PTE_DBM == 0 {
                return None;
            }
            return Some((pte | PTE_AF) & !PTE_RDONLY);
        }
        Some(pte | PTE_AF)
    }

    fn set_ptes(pt: &mut [u64], at: usize, pte: u64, nr: usize, span: FolioSpan, st: &mut SimStat) {
        mm::contpte::set_ptes(pt, at, pte, nr, span, st)
    }
    fn ptep_get(ptes: &[u64], idx: usize, st: &mut SimStat) -> u64 {
        mm::contpte::ptep_get(ptes, idx, st)
    }
    fn pte_batch_hint(ptes: &[u64], idx: usize) -> usize {
        if ptes[idx] & PTE_VALID != 0 && ptes[idx] & PTE_CONT != 0 {
            CONT_PTES - (idx & (CONT_PTES - 1))
        } else {
            1
        }
    }
    fn ptep_get_and_clear(ptes: &mut [u64], idx: usize, st: &mut SimStat) -> u64 {
        mm::contpte::ptep_get_and_clear(ptes, idx, st)
    }
    fn get_and_clear_full_ptes(ptes: &mut [u64], idx: usize, nr: usize, st: &mut SimStat) -> u64 {
        mm::contpte::get_and_clear_full_ptes(ptes, idx, nr, st)
    }
    fn wrprotect_ptes(ptes: &mut [u64], idx: usize, nr: usize, st: &mut SimStat) {
        mm::contpte::wrprotect_ptes(ptes, idx, nr, st)
    }
    fn clear_flush_young_ptes(ptes: &mut [u64], idx: usize, nr: usize, vs: &mut VmStat) -> bool {
        mm::contpte::clear_flush_young_ptes(ptes, idx, nr, vs)
    }
    fn test_and_clear_young_ptes(ptes: &mut [u64], idx: usize, nr: usize, vs: &mut VmStat) -> bool {
        mm::contpte::test_and_clear_young_ptes(ptes, idx, nr, vs).0
    }
    fn clear_young_dirty_ptes(
        ptes: &mut [u64],
        idx: usize,
        nr: usize,
        clear_dirty: bool,
        st: &mut SimStat,
    ) {
        mm::contpte::clear_young_dirty_ptes(ptes, idx, nr, clear_dirty, st)
    }
    fn ptep_set_access_flags(ptes: &mut [u64], idx: usize, pte: u64, st: &mut SimStat) {
        mm::contpte::ptep_set_access_flags(ptes, idx, pte, st)
    }
}
