//! The simulated architecture: how page-table entries are encoded and which
//! generic `include/linux/pgtable.h` defaults an architecture overrides.
//!
//! The architecture is a run-time choice of the scenario (`arch`), never the
//! host's. The kernel model is generic over [`Arch`], so each architecture's
//! encoding is compiled into its own copy of the hot paths.

pub mod arm64;
pub mod x86;

use crate::include::linux::pgtable::Pfn;
use crate::kernel::sched::Cpus;
use crate::mm::vmstat::{SimStat, VmStat};
use crate::MmId;

/// Protection bits of a new leaf entry, in the generic kernel vocabulary
/// (`vm_page_prot` plus `pte_mkyoung`/`pte_mkdirty`/`maybe_mkwrite`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PteProt {
    pub write: bool,
    pub young: bool,
    pub dirty: bool,
    pub exec: bool,
    /// `pte_mkspecial()`: no struct page behind it (zero page).
    pub(crate) special: bool,
}

/// The physical extent of the folio an entry maps (`folio_pfn()`,
/// `folio_nr_pages()`); `nr == 0` for special mappings without a folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FolioSpan {
    pub pfn: Pfn,
    pub(crate) nr: u64,
}

impl FolioSpan {
    pub(crate) const NONE: FolioSpan = FolioSpan { pfn: Pfn(0), nr: 0 };
}

/// One architecture's page-table encoding (`arch/*/include/asm/pgtable.h`).
///
/// Entries are raw `u64` words exactly as the hardware would see them. The
/// batched helpers take the table and the first index; the generic versions
/// loop over single entries, arm64 overrides them for contpte.
pub trait Arch: Copy + Default + Send + Sync + 'static {
    /// `uname -m` spelling.
    const NAME: &'static str;
    /// Does a user page fault fire `exceptions:page_fault_user`? (x86 only;
    /// arm64 has no such tracepoint.)
    const TRACE_PAGE_FAULT_USER: bool;
    /// `arch_has_hw_nonleaf_pmd_young()`: the MMU sets the accessed bit of
    /// the PMD entries it walks through (x86), which MGLRU's page-table
    /// walk tests and clears.
    const HW_NONLEAF_PMD_YOUNG: bool;

    /// `pfn_pte()` with the generic protection bits.
    fn pfn_pte(pfn: Pfn, prot: PteProt) -> u64;
    /// `pte_present()`
    fn pte_present(pte: u64) -> bool;
    /// `pte_pfn()`
    fn pte_pfn(pte: u64) -> Pfn;
    /// `pte_write()`
    fn pte_write(pte: u64) -> bool;
    /// `pte_dirty()`
    fn pte_dirty(pte: u64) -> bool;
    /// `pte_young()`
    fn pte_young(pte: u64) -> bool;
    /// `pte_special()`
    fn pte_special(pte: u64) -> bool;
    /// `pte_mkwrite()`
    fn pte_mkwrite(pte: u64) -> u64;
    /// `pte_wrprotect()`
    fn pte_wrprotect(pte: u64) -> u64;
    /// `pte_mkdirty()`
    fn pte_mkdirty(pte: u64) -> u64;
    /// `pte_mkclean()`
    fn pte_mkclean(pte: u64) -> u64;
    /// `pte_mkyoung()`
    fn pte_mkyoung(pte: u64) -> u64;
    /// `pte_mkold()`
    fn pte_mkold(pte: u64) -> u64;
    /// `pte_advance_pfn()`
    fn pte_advance_pfn(pte: u64, nr: u64) -> u64;

    /// An upper-level entry (pgd/p4d/pud/pmd) pointing at a table page.
    fn mk_table(pfn: Pfn) -> u64;
    /// Is this upper-level entry a pointer to a table (not none, not a leaf)?
    fn entry_is_table(entry: u64) -> bool;
    /// The table page an upper-level table entry points at.
    fn table_pfn(entry: u64) -> Pfn;
    /// `pmd_mkhuge()` of a leaf made with [`Arch::pfn_pte`].
    fn pmd_mkhuge(pte: u64) -> u64;
    /// `pmd_trans_huge()`
    fn pmd_trans_huge(pmd: u64) -> bool;
    /// `pte_valid_cont()`: a present entry with the contiguous bit (only
    /// arm64 has one; false elsewhere).
    fn pte_valid_cont(_pte: u64) -> bool {
        false
    }

    /// `swp_entry_to_pte()` of (type, offset), with the exclusive marker
    /// (`pte_swp_mkexclusive()`).
    fn swp_entry_to_pte(ty: u32, offset: u64, exclusive: bool) -> u64;
    /// `pte_to_swp_entry()`: (type, offset) of a swap PTE.
    fn pte_to_swp_entry(pte: u64) -> (u32, u64);
    /// `pte_swp_exclusive()`
    fn pte_swp_exclusive(pte: u64) -> bool;
    /// `pte_swp_clear_exclusive()`
    fn pte_swp_clear_exclusive(pte: u64) -> u64;

    /// `flush_tlb_mm_range()` / `flush_tlb_range()` of `nr_pages` pages
    /// (`TLB_FLUSH_ALL` = `u64::MAX`) of `mm`, issued on `c.current`, done
    /// now; `freed_tables` when page tables were freed.
    fn flush_tlb_mm_range(
        c: &mut Cpus,
        mm: MmId,
        nr_pages: u64,
        freed_tables: bool,
        vs: &mut VmStat,
    );
    /// [`Arch::flush_tlb_mm_range`] of `nr_pages` pages of `mm` issued
    /// `times` more times right after one, with nothing else between them
    /// (a page-table walk flushing each entry it clears), counted at once
    /// when the arch knows what each does from the state the first left:
    /// true if done, false (nothing done) for the caller to make the
    /// calls.
    fn flush_tlb_mm_range_again(
        _c: &mut Cpus,
        _mm: MmId,
        _nr_pages: u64,
        _times: u64,
        _vs: &mut VmStat,
    ) -> bool {
        false
    }
    /// `arch_tlbbatch_should_defer(mm)`
    fn tlbbatch_should_defer(c: &Cpus, mm: MmId) -> bool;
    /// `arch_tlbbatch_add_pending()` for `nr_pages` pages of `mm`.
    fn tlbbatch_add_pending(c: &mut Cpus, mm: MmId, nr_pages: u64, vs: &mut VmStat);
    /// `arch_tlbbatch_flush()`
    fn tlbbatch_flush(c: &mut Cpus, vs: &mut VmStat);

    /// `arch_wants_old_prefaulted_pte()`: fault-around entries start old.
    fn arch_wants_old_prefaulted_pte() -> bool;

    /// The simulated MMU's access: returns the entry with the accessed (and
    /// for a write, dirty) state the hardware would record, or `None` when
    /// the access must fault (not present, or a write to a read-only entry).
    fn hw_access(pte: u64, write: bool) -> Option<u64>;

    /// `set_ptes()`: write `nr` entries from `pte`, advancing the PFN. All of
    /// them map pages of the folio `span` (first PFN, number of pages),
    /// which arm64 needs to decide on contpte folding.
    fn set_ptes(pt: &mut [u64], at: usize, pte: u64, nr: usize, span: FolioSpan, st: &mut SimStat) {
        let _ = span;
        st.set_ptes_calls += 1;
        st.set_ptes_entries += nr as u64;
        st.pte_write += nr as u64;
        for i in 0..nr {
            pt[at + i] = Self::pte_advance_pfn(pte, i as u64);
        }
    }

    /// `ptep_get()`
    #[inline]
    fn ptep_get(ptes: &[u64], idx: usize, st: &mut SimStat) -> u64 {
        st.ptep_get += 1;
        ptes[idx]
    }

    /// `pte_batch_hint()`: how many entries from `idx` are known to continue
    /// the batch without reading them (1 generically).
    #[inline]
    fn pte_batch_hint(_ptes: &[u64], _idx: usize) -> usize {
        1
    }

    /// `ptep_get_and_clear()` of one entry (the caller flushes).
    fn ptep_get_and_clear(ptes: &mut [u64], idx: usize, st: &mut SimStat) -> u64 {
        st.pte_clear += 1;
        std::mem::take(&mut ptes[idx])
    }

    /// `get_and_clear_full_ptes()`: clear `nr` entries of one folio, returning
    /// the first with the dirty/young bits of all of them gathered.
    fn get_and_clear_full_ptes(ptes: &mut [u64], idx: usize, nr: usize, st: &mut SimStat) -> u64 {
        let mut first = Self::ptep_get_and_clear(ptes, idx, st);
        for i in 1..nr {
            let pte = Self::ptep_get_and_clear(ptes, idx + i, st);
            if Self::pte_dirty(pte) {
                first = Self::pte_mkdirty(first);
            }
            if Self::pte_young(pte) {
                first = Self::pte_mkyoung(first);
            }
        }
        first
    }

    /// `ptep_clear_flush_young()` (`nr == 1`) and seed 002's
    /// `clear_flush_young_ptes()`: test and clear the access flag of `nr`
    /// entries mapping consecutive pages of one folio; true if any was
    /// young. Generic (x86): one test-and-clear per entry, no TLB flush (a
    /// stale accessed bit in the TLB only skews aging).
    fn clear_flush_young_ptes(ptes: &mut [u64], idx: usize, nr: usize, vs: &mut VmStat) -> bool {
        Self::test_and_clear_young_ptes(ptes, idx, nr, vs)
    }

    /// `ptep_test_and_clear_young()` (`nr == 1`) and 7.x's
    /// `test_and_clear_young_ptes()`: the same without any TLB maintenance
    /// (MGLRU's walks). Generic (x86): one test-and-clear per entry.
    fn test_and_clear_young_ptes(ptes: &mut [u64], idx: usize, nr: usize, vs: &mut VmStat) -> bool {
        let mut young = false;
        for pte in &mut ptes[idx..idx + nr] {
            vs.sim.young_clear += 1;
            if Self::pte_young(*pte) {
                *pte = Self::pte_mkold(*pte);
                vs.sim.pte_modify += 1;
                young = true;
            }
        }
        young
    }

    /// `clear_young_dirty_ptes()` (MADV_COLD: `clear_dirty` false, only the
    /// access flag; MADV_FREE: both). Generic (x86): per entry, a
    /// `ptep_test_and_clear_young()` for the access flag alone, or a
    /// `ptep_get_and_clear()` + `set_pte_at()` of the old, clean entry.
    /// No TLB flush here: the caller gathers the range.
    fn clear_young_dirty_ptes(
        ptes: &mut [u64],
        idx: usize,
        nr: usize,
        clear_dirty: bool,
        st: &mut SimStat,
    ) {
        for i in idx..idx + nr {
            if !clear_dirty {
                if Self::pte_young(ptes[i]) {
                    ptes[i] = Self::pte_mkold(ptes[i]);
                    st.pte_modify += 1;
                }
                continue;
            }
            let old = Self::ptep_get_and_clear(ptes, i, st);
            ptes[i] = Self::pte_mkclean(Self::pte_mkold(old));
            st.pte_write += 1;
        }
    }

    /// `wrprotect_ptes()`
    fn wrprotect_ptes(ptes: &mut [u64], idx: usize, nr: usize, st: &mut SimStat) {
        for i in 0..nr {
            st.pte_modify += 1;
            ptes[idx + i] = Self::pte_wrprotect(ptes[idx + i]);
        }
    }

    /// `ptep_set_access_flags()`: upgrade one present entry in place
    /// (young, dirty, write) as `wp_page_reuse()` does.
    fn ptep_set_access_flags(ptes: &mut [u64], idx: usize, pte: u64, st: &mut SimStat) {
        st.pte_modify += 1;
        ptes[idx] = pte;
    }

    /// `set_pte_at()` of one entry replacing whatever was there
    /// (`ptep_set_access_flags`, `wp_page_reuse`, COW replacement).
    fn set_pte_at(ptes: &mut [u64], idx: usize, pte: u64, folio: FolioSpan, st: &mut SimStat) {
        Self::set_ptes(ptes, idx, pte, 1, folio, st)
    }
}
