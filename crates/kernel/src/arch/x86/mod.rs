//! x86_64 page-table encoding (arch/x86/include/asm/pgtable_types.h,
//! arch/x86/include/asm/pgtable.h), 4-level paging with 4 KiB pages.
//!
//! Modelled: present/RW/user/accessed/dirty/PSE/NX bits, `_PAGE_SPECIAL`,
//! the `PAGE_COPY`/`PAGE_SHARED` style protections (which include
//! `_PAGE_ACCESSED`, so every new x86 entry is young). Not modelled: PAT and
//! cache bits, protection keys, shadow stacks (`_PAGE_SAVED_DIRTY`),
//! soft-dirty (compiled out on the 6.18 target).

pub mod mm;

use super::{Arch, PteProt};
use crate::include::linux::pgtable::Pfn;
use crate::kernel::sched::Cpus;
use crate::mm::vmstat::VmStat;
use crate::MmId;

pub(crate) const _PAGE_PRESENT: u64 = 1 << 0;
pub(crate) const _PAGE_RW: u64 = 1 << 1;
pub(crate) const _PAGE_USER: u64 = 1 << 2;
pub(crate) const _PAGE_ACCESSED: u64 = 1 << 5;
pub(crate) const _PAGE_DIRTY: u64 = 1 << 6;
pub(crate) const _PAGE_PSE: u64 = 1 << 7;
pub(crate) const _PAGE_SPECIAL: u64 = 1 << 9;
pub(crate) const _PAGE_NX: u64 = 1 << 63;
/// `PTE_PFN_MASK` for 52-bit physical addresses.
pub(crate) const PTE_PFN_MASK: u64 = ((1 << 52) - 1) & !0xfff;
/// `_PAGE_SWP_EXCLUSIVE` (= `_PAGE_PWT` on x86_64).
pub(crate) const _PAGE_SWP_EXCLUSIVE: u64 = 1 << 3;
/// `SWP_TYPE_BITS`
pub(crate) const SWP_TYPE_BITS: u32 = 5;
/// `SWP_OFFSET_SHIFT` = `_PAGE_BIT_PROTNONE + 1 + SWP_TYPE_BITS`.
pub(crate) const SWP_OFFSET_SHIFT: u32 = 9 + SWP_TYPE_BITS;
/// `_PAGE_TABLE`
pub(crate) const _PAGE_TABLE: u64 =
    _PAGE_PRESENT | _PAGE_RW | _PAGE_USER | _PAGE_ACCESSED | _PAGE_DIRTY;

/// x86_64.
#[derive(Clone, Copy, Debug, Default)]
pub struct X86_64;

impl Arch for X86_64 {
    const TRACE_PAGE_FAULT_USER: bool = true;
    const HW_NONLEAF_PMD_YOUNG: bool = true;
    const NAME: &'static str = "x86_64";

    fn pfn_pte(pfn: Pfn, prot: PteProt) -> u64 {
        // protection_map[] entries all carry _PAGE_ACCESSED on x86.
        let mut pte = ((pfn.0 as u64) << 12) | _PAGE_PRESENT | _PAGE_USER | _PAGE_ACCESSED;
        if prot.write {
            pte |= _PAGE_RW;
        }
        if prot.dirty {
            pte |= _PAGE_DIRTY;
        }
        if !prot.exec {
            pte |= _PAGE_NX;
        }
        if prot.special {
            pte |= _PAGE_SPECIAL;
        }
        // `young = false` is ignored: x86 does not want old prefaulted PTEs
        // and its protections already include ACCESSED.
        pte
    }
    #[inline]
    fn pte_present(pte: u64) -> bool {
        pte & _PAGE_PRESENT != 0
    }
    #[inline]
    fn pte_pfn(pte: u64) -> Pfn {
        Pfn(((pte & PTE_PFN_MASK) >> 12) as u32)
    }
    #[inline]
    fn pte_write(pte: u64) -> bool {
        pte & _PAGE_RW != 0
    }
    #[inline]
    fn pte_dirty(pte: u64) -> bool {
        pte & _PAGE_DIRTY != 0
    }
    #[inline]
    fn pte_young(pte: u64) -> bool {
        pte & _PAGE_ACCESSED != 0
    }
    #[inline]
    fn pte_special(pte: u64) -> bool {
        pte & _PAGE_SPECIAL != 0
    }
    fn pte_mkwrite(pte: u64) -> u64 {
        pte | _PAGE_RW
    }
    fn pte_wrprotect(pte: u64) -> u64 {
        pte & !_PAGE_RW
    }
    fn pte_mkdirty(pte: u64) -> u64 {
        pte | _PAGE_DIRTY
    }
    fn pte_mkclean(pte: u64) -> u64 {
        pte & !_PAGE_DIRTY
    }
    fn pte_mkyoung(pte: u64) -> u64 {
        pte | _PAGE_ACCESSED
    }
    fn pte_mkold(pte: u64) -> u64 {
        pte & !_PAGE_ACCESSED
    }
    #[inline]
    fn pte_advance_pfn(pte: u64, nr: u64) -> u64 {
        pte + (nr << 12)
    }
    fn mk_table(pfn: Pfn) -> u64 {
        ((pfn.0 as u64) << 12) | _PAGE_TABLE
    }
    #[inline]
    fn entry_is_table(entry: u64) -> bool {
        entry & _PAGE_PRESENT != 0 && entry & _PAGE_PSE == 0
    }
    #[inline]
    fn table_pfn(entry: u64) -> Pfn {
        Self::pte_pfn(entry)
    }
    fn pmd_mkhuge(pte: u64) -> u64 {
        pte | _PAGE_PSE
    }
    #[inline]
    fn pmd_trans_huge(pmd: u64) -> bool {
        pmd & (_PAGE_PRESENT | _PAGE_PSE) == (_PAGE_PRESENT | _PAGE_PSE)
    }
    fn arch_wants_old_prefaulted_pte() -> bool {
        false
    }
    fn flush_tlb_mm_range(c: &mut Cpus, mm: MmId, nr: u64, freed: bool, vs: &mut VmStat) {
        mm::tlb::flush_tlb_mm_range(c, mm, nr, freed, vs)
    }
    fn flush_tlb_mm_range_again(
        c: &mut Cpus,
        mm: MmId,
        nr: u64,
        times: u64,
        vs: &mut VmStat,
    ) -> bool {
        mm::tlb::flush_tlb_mm_range_again(c, mm, nr, times, vs)
    }
    fn tlbbatch_should_defer(c: &Cpus, mm: MmId) -> bool {
        mm::tlb::arch_tlbbatch_should_defer(c, mm)
    }
    fn tlbbatch_add_pending(c: &mut Cpus, mm: MmId, _nr_pages: u64, vs: &mut VmStat) {
        mm::tlb::arch_tlbbatch_add_pending(c, mm, vs)
    }
    fn tlbbatch_flush(c: &mut Cpus, vs: &mut VmStat) {
        mm::tlb::arch_tlbbatch_flush(c, vs)
    }
    /// `__swp_entry()`: type in the top 5 bits, the offset inverted from
    /// bit 9 up (L1TF mitigation), `_PAGE_SWP_EXCLUSIVE` = `_PAGE_PWT`.
    fn swp_entry_to_pte(ty: u32, offset: u64, exclusive: bool) -> u64 {
        let v = ((!offset) << SWP_OFFSET_SHIFT >> SWP_TYPE_BITS)
            | ((ty as u64) << (64 - SWP_TYPE_BITS));
        if exclusive {
            v | _PAGE_SWP_EXCLUSIVE
        } else {
            v
        }
    }
    fn pte_to_swp_entry(pte: u64) -> (u32, u64) {
        let v = pte & !_PAGE_SWP_EXCLUSIVE;
        (
            (v >> (64 - SWP_TYPE_BITS)) as u32,
            (!v) << SWP_TYPE_BITS >> SWP_OFFSET_SHIFT,
        )
    }
    fn pte_swp_exclusive(pte: u64) -> bool {
        pte & _PAGE_SWP_EXCLUSIVE != 0
    }
    fn pte_swp_clear_exclusive(pte: u64) -> u64 {
        pte & !_PAGE_SWP_EXCLUSIVE
    }
    #[inline]
    fn hw_access(pte: u64, write: bool) -> Option<u64> {
        if pte & _PAGE_PRESENT == 0 || (write && pte & _PAGE_RW == 0) {
            return None;
        }
        let mut new = pte | _PAGE_ACCESSED;
        if write {
            new |= _PAGE_DIRTY;
        }
        Some(new)
    }
}
