//! The swap table (mm/swap_table.h, Linux 6.18): one word per swap slot
//! holding the page of the slot's swap-cache folio, the shadow reclaim left
//! when it freed that folio from the swap cache, or nothing
//! (`folio_to_swp_tb()`, `shadow_swp_to_tb()`, `null_to_swp_tb()`).
//!
//! A word is 0 for nothing and odd for a shadow (`Shadow::pack()` makes it
//! an `xa_mk_value()`, as the kernel's are); an even word holds a PFN, plus
//! one and shifted left, where the kernel holds the folio pointer. A slot
//! has a cached folio or a shadow, never both: adding a folio to the swap
//! cache hands back the shadow it replaces (`__swap_cache_add_folio()`),
//! deleting it leaves the shadow in its place (`__swap_cache_del_folio()`).
//!
//! The kernel allocates a table for each cluster in use
//! (`swap_cluster_alloc_table()`). The model keeps one zero-filled array per
//! area instead: the host backs only the 4 KiB runs of it (512 slots, one
//! cluster) that were ever written, so an area costs host memory in
//! proportion to the slots it used.

use crate::mm::filemap::NO_PAGE;
use crate::mm::workingset::Shadow;

/// The swap table of one area.
#[derive(Debug)]
pub(crate) struct SwapTable(Vec<u64>);

impl SwapTable {
    /// An empty table of `nr_slots` words.
    pub(crate) fn new(nr_slots: usize) -> SwapTable {
        SwapTable(vec![0; nr_slots])
    }

    #[inline(always)]
    fn is_folio(word: u64) -> bool {
        word != 0 && word & 1 == 0
    }

    /// The PFN of the page cached for `off`, `NO_PAGE` for none
    /// (`swap_cache_get_folio()` without the reference).
    #[inline(always)]
    pub(crate) fn page(&self, off: u64) -> u32 {
        let w = self.0[off as usize];
        if Self::is_folio(w) {
            ((w >> 1) - 1) as u32
        } else {
            NO_PAGE
        }
    }

    /// Whether `off` has a page in the swap cache.
    #[inline(always)]
    pub(crate) fn cached(&self, off: u64) -> bool {
        Self::is_folio(self.0[off as usize])
    }

    /// Put page `pfn` in the swap cache at `off`, handing back the shadow
    /// it replaces.
    #[inline(always)]
    pub(crate) fn set_page(&mut self, off: u64, pfn: u32) -> Option<Shadow> {
        let old = std::mem::replace(&mut self.0[off as usize], (pfn as u64 + 1) << 1);
        debug_assert!(!Self::is_folio(old), "slot {off} is already cached");
        (old & 1 == 1).then_some(Shadow(old))
    }

    /// Drop the cached page of `off`, leaving `shadow` (or nothing).
    #[inline(always)]
    pub(crate) fn clear_page(&mut self, off: u64, shadow: Option<Shadow>) {
        debug_assert!(shadow.is_none_or(|s| s.0 & 1 == 1), "a shadow is odd");
        self.0[off as usize] = shadow.map_or(0, |s| s.0);
    }

    /// Take the shadow of a slot without a cached page
    /// (`swap_cache_get_shadow()`, consumed by the swap-in).
    #[inline(always)]
    pub(crate) fn take_shadow(&mut self, off: u64) -> Option<Shadow> {
        let w = &mut self.0[off as usize];
        if *w & 1 == 1 {
            Some(Shadow(std::mem::take(w)))
        } else {
            None
        }
    }

    /// A freed slot keeps nothing (`swap_cluster_assert_table_empty()`
    /// holds after `swap_entries_free()`).
    #[inline(always)]
    pub(crate) fn clear(&mut self, off: u64) {
        debug_assert!(!self.cached(off), "slot {off} freed while cached");
        self.0[off as usize] = 0;
    }

    /// Whether none of the slots in `range` has a cached page.
    pub(crate) fn none_cached(&self, range: std::ops::Range<usize>) -> bool {
        self.0[range].iter().all(|&w| !Self::is_folio(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::memcontrol::MemcgId;

    #[test]
    fn a_slot_holds_a_page_or_a_shadow() {
        let mut t = SwapTable::new(8);
        assert_eq!(t.page(3), NO_PAGE);
        // PFN 0 is a page like any other.
        assert_eq!(t.set_page(3, 0), None);
        assert!(t.cached(3));
        assert_eq!(t.page(3), 0);
        let s = Shadow::pack(MemcgId(2), 77, true);
        t.clear_page(3, Some(s));
        assert!(!t.cached(3));
        assert_eq!(t.page(3), NO_PAGE);
        // A swap-in hands back the shadow the page replaces.
        assert_eq!(t.set_page(3, u32::MAX - 1), Some(s));
        assert_eq!(t.page(3), u32::MAX - 1);
        assert_eq!(t.take_shadow(3), None, "a cached slot has no shadow");
        t.clear_page(3, Some(s));
        assert_eq!(t.take_shadow(3), Some(s));
        assert_eq!(t.take_shadow(3), None, "taken once");
        assert!(t.none_cached(0..8));
    }
}
