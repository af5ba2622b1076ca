//! arm64 contiguous-PTE ("contpte") management (arch/arm64/mm/contpte.c,
//! arch/arm64/include/asm/pgtable.h: set_ptes(), contpte_try_fold(),
//! contpte_try_unfold(), pte_batch_hint()), Linux 6.18.
//!
//! A naturally aligned block of [`CONT_PTES`] entries mapping a naturally
//! aligned, physically contiguous range of one folio with equal permissions
//! may carry `PTE_CONT`, so the TLB caches it as one entry. The model keeps
//! the kernel's rules: `set_ptes()` of several entries paints whole blocks
//! contiguous; a single-entry change inside a contiguous block first unfolds
//! it (`contpte_convert()`: clear all 16, gather access/dirty, flush, repaint);
//! a single `set_ptes()` that completes a block tries to fold it. `ptep_get()`
//! of a contiguous entry gathers access/dirty over the block.
//!
//! Young clearing: `ptep_clear_flush_young()` on a contiguous entry clears
//! the access flag of all 16 entries of its block and issues one range
//! TLBI (no DSB) if any was young; seed 002's `clear_flush_young_ptes()`
//! does the same over a whole batch widened to block boundaries.
//! Not modelled: BBML2 (the intermediate TLB flush is always counted), the
//! lockless getter.

use super::super::{Arm64, CONT_PTES, PTE_CONT};
use crate::arch::{Arch, FolioSpan};
use crate::mm::vmstat::{SimStat, VmStat};

const CONT_MASK: usize = CONT_PTES - 1;

#[inline]
fn pte_valid_cont(pte: u64) -> bool {
    Arm64::pte_present(pte) && pte & PTE_CONT != 0
}

/// `contpte_convert()`: clear the whole block (gathering access/dirty),
/// flush it, and repaint it with or without `PTE_CONT`.
fn contpte_convert(ptes: &mut [u64], idx: usize, cont: bool, st: &mut SimStat) {
    let start = idx & !CONT_MASK;
    let first = ptes[start];
    let base_pfn = Arm64::pte_pfn(first).0 as u64 & !(CONT_MASK as u64);
    let mut pte = (first & !crate::arch::arm64::PTE_ADDR_MASK) | (base_pfn << 12);
    for i in 0..CONT_PTES {
        let old = std::mem::take(&mut ptes[start + i]);
        st.pte_clear += 1;
        if Arm64::pte_dirty(old) {
            pte = Arm64::pte_mkdirty(pte);
        }
        if Arm64::pte_young(old) {
            pte = Arm64::pte_mkyoung(pte);
        }
    }
    // __flush_tlb_range() of the 64 KiB block (no BBML2-noabort).
    st.contpte_flush += 1;
    st.dsb_ishst += 1;
    st.tlbi_range += 1;
    st.dsb_ish += 1;
    pte = if cont {
        pte | PTE_CONT
    } else {
        pte & !PTE_CONT
    };
    for i in 0..CONT_PTES {
        ptes[start + i] = Arm64::pte_advance_pfn(pte, i as u64);
    }
    st.pte_write += CONT_PTES as u64;
}

/// `contpte_try_unfold()`
#[inline]
pub(crate) fn contpte_try_unfold(ptes: &mut [u64], idx: usize, st: &mut SimStat) {
    if pte_valid_cont(ptes[idx]) {
        st.contpte_unfold += 1;
        contpte_convert(ptes, idx, false, st);
    }
}

/// `__contpte_try_fold()`: fold the block ending at `idx` if all 16 entries
/// map consecutive pages of one folio with the same permissions.
fn contpte_try_fold(ptes: &mut [u64], idx: usize, folio: FolioSpan, st: &mut SimStat) {
    let pte = ptes[idx];
    if idx & CONT_MASK != CONT_MASK
        || Arm64::pte_pfn(pte).0 as usize & CONT_MASK != CONT_MASK
        || !Arm64::pte_present(pte)
        || pte & PTE_CONT != 0
        || Arm64::pte_special(pte)
        || folio.nr < CONT_PTES as u64
    {
        return;
    }
    let start = idx & !CONT_MASK;
    let first_pfn = Arm64::pte_pfn(ptes[start]).0 as u64;
    if first_pfn < folio.pfn.0 as u64
        || first_pfn + CONT_PTES as u64 > folio.pfn.0 as u64 + folio.nr
    {
        return;
    }
    // Permissions must match once access/dirty are ignored.
    let ignore =
        crate::arch::arm64::PTE_AF | crate::arch::arm64::PTE_DIRTY | crate::arch::arm64::PTE_RDONLY;
    let want = ptes[start] & !ignore;
    for i in 0..CONT_PTES {
        let e = ptes[start + i];
        if !Arm64::pte_present(e) || e & !ignore != Arm64::pte_advance_pfn(want, i as u64) {
            return;
        }
    }
    st.contpte_fold += 1;
    contpte_convert(ptes, idx, true, st);
}

/// Unfold the blocks at either end of `[idx, idx + nr)` that the range only
/// partly covers (`contpte_try_unfold_partial()`).
fn contpte_try_unfold_partial(ptes: &mut [u64], idx: usize, nr: usize, st: &mut SimStat) {
    if idx & CONT_MASK != 0 || nr < CONT_PTES {
        contpte_try_unfold(ptes, idx, st);
    }
    let last = idx + nr - 1;
    if (last + 1) & CONT_MASK != 0 || nr < CONT_PTES {
        contpte_try_unfold(ptes, last, st);
    }
}

/// arm64 `set_ptes()` / `contpte_set_ptes()`.
pub fn set_ptes(pt: &mut [u64], at: usize, pte: u64, nr: usize, span: FolioSpan, st: &mut SimStat) {
    st.set_ptes_calls += 1;
    st.set_ptes_entries += nr as u64;
    let pte = pte & !PTE_CONT;
    if nr == 1 {
        contpte_try_unfold(pt, at, st);
        pt[at] = pte;
        st.pte_write += 1;
        contpte_try_fold(pt, at, span, st);
        return;
    }
    contpte_try_unfold_partial(pt, at, nr, st);
    let end = at + nr;
    let mut i = at;
    let mut pte = pte;
    while i < end {
        let next = ((i + CONT_PTES) & !CONT_MASK).min(end);
        let n = next - i;
        let pfn = Arm64::pte_pfn(pte).0 as usize;
        let cont = i & CONT_MASK == 0 && next & CONT_MASK == 0 && pfn & CONT_MASK == 0;
        let p = if cont { pte | PTE_CONT } else { pte };
        if cont {
            st.contpte_blocks_set += 1;
        }
        for k in 0..n {
            pt[i + k] = Arm64::pte_advance_pfn(p, k as u64);
        }
        st.pte_write += n as u64;
        pte = Arm64::pte_advance_pfn(pte, n as u64);
        i = next;
    }
}

/// arm64 `ptep_get()` / `contpte_ptep_get()`: a contiguous entry reports the
/// access/dirty state of its whole block.
pub fn ptep_get(ptes: &[u64], idx: usize, st: &mut SimStat) -> u64 {
    st.ptep_get += 1;
    let mut pte = ptes[idx];
    if !pte_valid_cont(pte) {
        return pte;
    }
    let start = idx & !CONT_MASK;
    st.contpte_gather_reads += CONT_PTES as u64;
    for &e in &ptes[start..start + CONT_PTES] {
        if Arm64::pte_dirty(e) {
            pte = Arm64::pte_mkdirty(pte);
        }
        if Arm64::pte_young(e) {
            pte = Arm64::pte_mkyoung(pte);
        }
    }
    pte
}

/// arm64 `ptep_get_and_clear()`: unfold first, then clear one entry.
pub(crate) fn ptep_get_and_clear(ptes: &mut [u64], idx: usize, st: &mut SimStat) -> u64 {
    contpte_try_unfold(ptes, idx, st);
    st.pte_clear += 1;
    std::mem::take(&mut ptes[idx])
}

/// arm64 `get_and_clear_full_ptes()` / `contpte_get_and_clear_full_ptes()`:
/// whole contiguous blocks are cleared without unfolding.
pub(crate) fn get_and_clear_full_ptes(
    ptes: &mut [u64],
    idx: usize,
    nr: usize,
    st: &mut SimStat,
) -> u64 {
    if nr == 1 {
        return ptep_get_and_clear(ptes, idx, st);
    }
    contpte_try_unfold_partial(ptes, idx, nr, st);
    let mut first = 0;
    for i in 0..nr {
        let pte = std::mem::take(&mut ptes[idx + i]);
        st.pte_clear += 1;
        if i == 0 {
            first = pte & !PTE_CONT;
        }
        if Arm64::pte_dirty(pte) {
            first = Arm64::pte_mkdirty(first);
        }
        if Arm64::pte_young(pte) {
            first = Arm64::pte_mkyoung(first);
        }
    }
    first
}

/// arm64 `wrprotect_ptes()` / `contpte_wrprotect_ptes()`.
pub(crate) fn wrprotect_ptes(ptes: &mut [u64], idx: usize, nr: usize, st: &mut SimStat) {
    if nr == 1 {
        contpte_try_unfold(ptes, idx, st);
    } else {
        contpte_try_unfold_partial(ptes, idx, nr, st);
    }
    for i in 0..nr {
        st.pte_modify += 1;
        ptes[idx + i] = Arm64::pte_wrprotect(ptes[idx + i]);
    }
}

/// arm64 `ptep_set_access_flags()` / `contpte_ptep_set_access_flags()`:
/// access/dirty changes apply to the whole contiguous block; a change of the
/// write permission unfolds it first.
pub(crate) fn ptep_set_access_flags(ptes: &mut [u64], idx: usize, pte: u64, st: &mut SimStat) {
    let orig = ptes[idx];
    if !pte_valid_cont(orig) {
        st.pte_modify += 1;
        ptes[idx] = pte & !PTE_CONT;
        return;
    }
    if Arm64::pte_write(orig) == Arm64::pte_write(pte) {
        let start = idx & !CONT_MASK;
        let young = Arm64::pte_young(pte);
        let dirty = Arm64::pte_dirty(pte);
        for e in &mut ptes[start..start + CONT_PTES] {
            st.pte_modify += 1;
            if young {
                *e = Arm64::pte_mkyoung(*e);
            }
            if dirty {
                *e = Arm64::pte_mkdirty(*e);
            }
        }
        return;
    }
    contpte_try_unfold(ptes, idx, st);
    st.pte_modify += 1;
    ptes[idx] = pte & !PTE_CONT;
}

/// The entries `[idx, idx + nr)` widened to the contiguous blocks their
/// first and last entries are in, as (start, end); a single
/// non-contiguous entry is left as it is. The widening of
/// `contpte_clear_young_dirty_ptes()` and seed 002's
/// `contpte_align_addr_ptep()`.
fn contpte_align_range(ptes: &[u64], idx: usize, nr: usize) -> (usize, usize) {
    let (mut start, mut end) = (idx, idx + nr);
    if nr > 1 || ptes[idx] & PTE_CONT != 0 {
        if ptes[end - 1] & PTE_CONT != 0 {
            end = (end + CONT_MASK) & !CONT_MASK;
        }
        if ptes[start] & PTE_CONT != 0 {
            start &= !CONT_MASK;
        }
    }
    (start, end)
}

/// arm64 `clear_young_dirty_ptes()`: a single non-contiguous entry, or
/// `contpte_clear_young_dirty_ptes()`, which widens the range to the
/// blocks its first and last entries are in and changes the entries in
/// place without unfolding (access/dirty are tracked per folio). Old and
/// clean on arm64 means AF clear and, for a DBM entry, PTE_RDONLY set.
pub(crate) fn clear_young_dirty_ptes(
    ptes: &mut [u64],
    idx: usize,
    nr: usize,
    clear_dirty: bool,
    st: &mut SimStat,
) {
    let (start, end) = contpte_align_range(ptes, idx, nr);
    for e in &mut ptes[start..end] {
        let mut pte = Arm64::pte_mkold(*e);
        if clear_dirty {
            pte = Arm64::pte_mkclean(pte);
        }
        if pte != *e {
            *e = pte;
            st.pte_modify += 1;
        }
    }
}

/// `__ptep_test_and_clear_young()`: one cmpxchg loop on the access flag.
fn ptep_test_and_clear_young(ptes: &mut [u64], idx: usize, vs: &mut VmStat) -> bool {
    vs.sim.young_clear += 1;
    let pte = ptes[idx];
    if !Arm64::pte_young(pte) {
        return false;
    }
    ptes[idx] = Arm64::pte_mkold(pte);
    vs.sim.pte_modify += 1;
    true
}

/// arm64 `ptep_test_and_clear_young()` (`nr == 1`) and 7.x's
/// `test_and_clear_young_ptes()`: non-contiguous entries alone, contiguous
/// ones with their whole blocks (`contpte_test_and_clear_young_ptes()`,
/// the range widened by `contpte_align_addr_ptep()`), no TLB maintenance.
/// Returns whether one was young and the entries covered.
pub(crate) fn test_and_clear_young_ptes(
    ptes: &mut [u64],
    idx: usize,
    nr: usize,
    vs: &mut VmStat,
) -> (bool, usize) {
    let (start, end) = contpte_align_range(ptes, idx, nr);
    let mut young = false;
    for i in start..end {
        young |= ptep_test_and_clear_young(ptes, i, vs);
    }
    (young, end - start)
}

/// arm64 `ptep_clear_flush_young()` (`nr == 1`: `__ptep_clear_flush_young()`
/// with a TLBI by page, or `contpte_ptep_clear_flush_young()` over the
/// whole block) and seed 002's `clear_flush_young_ptes()` /
/// `contpte_clear_flush_young_ptes()`: `test_and_clear_young_ptes()`,
/// then one TLBI without DSB over the range if any was young.
pub(crate) fn clear_flush_young_ptes(
    ptes: &mut [u64],
    idx: usize,
    nr: usize,
    vs: &mut VmStat,
) -> bool {
    let (young, span) = test_and_clear_young_ptes(ptes, idx, nr, vs);
    if young {
        vs.sim.young_flush += 1;
        super::tlbflush::__flush_tlb_range_nosync(span as u64, vs);
    }
    young
}
