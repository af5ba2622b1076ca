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
//! area instead: the host backs only the 4 KiB runs of it (1,024 slots, two
//! clusters) that were ever written, so an area costs host memory in
//! proportion to the slots it used.
//!
//! The array holds 32-bit words, half the kernel's: a page word holds the
//! PFN as above, a shadow word the shadow's workingset bit, memory cgroup
//! id (below 64) and the low 22 bits of its timestamp, tagged `01` in its
//! low bits; where the timestamp is 2^22 or more (past that many
//! evictions and activations of a cgroup), a bit of the word says so and
//! a byte array beside it holds the next 8 bits, so the host backs that
//! array only in long runs. A word whose PFN or shadow does not fit (a
//! machine of over 8 TiB, a cgroup id of 64 or more, a timestamp of 2^30
//! or more) is `FAR`, and its 64-bit form lives in a map beside the array:
//! nothing is lost, and only those slots cost more.

use std::collections::HashMap;

use crate::mm::filemap::NO_PAGE;
use crate::mm::memcontrol::MemcgId;
use crate::mm::workingset::Shadow;

/// The swap table of one area.
#[derive(Debug)]
pub(crate) struct SwapTable {
    words: Vec<u32>,
    /// The 64-bit words of the slots whose word is `FAR`.
    far: HashMap<u64, u64>,
    /// Bits 22 to 29 of the timestamp of each shadow word with `HIGH`
    /// set (stale elsewhere).
    high: Vec<u8>,
}

/// The word of a slot whose content lives in `far`.
const FAR: u32 = 3;
/// A shadow word, from the low bit up: the tag `01`, the workingset bit,
/// the memcg id, `HIGH`, the timestamp's low bits.
const SHADOW_TAG: u32 = 1;
const WORKINGSET: u32 = 1 << 2;
const MEMCG_SHIFT: u32 = 3;
const MEMCG_BITS: u32 = 6;
/// A shadow word's timestamp has high bits, in `high`.
const HIGH: u32 = 1 << (MEMCG_SHIFT + MEMCG_BITS);
const EVICTION_SHIFT: u32 = MEMCG_SHIFT + MEMCG_BITS + 1;
const EVICTION_BITS: u32 = 32 - EVICTION_SHIFT;

impl SwapTable {
    /// An empty table of `nr_slots` words.
    pub(crate) fn new(nr_slots: usize) -> SwapTable {
        SwapTable {
            words: vec![0; nr_slots],
            far: HashMap::new(),
            high: vec![0; nr_slots],
        }
    }

    #[inline(always)]
    fn is_folio(word: u64) -> bool {
        word != 0 && word & 1 == 0
    }

    /// The 32-bit word of a 64-bit one and its timestamp's high byte, if
    /// they hold it.
    #[inline(always)]
    fn narrow(word: u64) -> Option<(u32, u8)> {
        if word & 1 == 0 {
            // 0, or a page: (PFN + 1) << 1.
            return u32::try_from(word).ok().map(|w| (w, 0));
        }
        let (memcg, eviction, workingset) = Shadow(word).unpack();
        if u32::from(memcg.0) >> MEMCG_BITS != 0 || eviction >> (EVICTION_BITS + 8) != 0 {
            return None;
        }
        let high = (eviction >> EVICTION_BITS) as u8;
        let low = (eviction & ((1 << EVICTION_BITS) - 1)) as u32;
        let w = low << EVICTION_SHIFT
            | if high != 0 { HIGH } else { 0 }
            | u32::from(memcg.0) << MEMCG_SHIFT
            | if workingset { WORKINGSET } else { 0 }
            | SHADOW_TAG;
        debug_assert_eq!(Self::widen(w, high), word);
        Some((w, high))
    }

    /// The 64-bit word of a 32-bit one other than `FAR`; `high` is read
    /// only for a word with `HIGH`.
    #[inline(always)]
    fn widen(w: u32, high: u8) -> u64 {
        if w & 1 == 0 {
            return w as u64;
        }
        let mut eviction = (w >> EVICTION_SHIFT) as u64;
        if w & HIGH != 0 {
            eviction |= u64::from(high) << EVICTION_BITS;
        }
        let memcg = MemcgId(((w >> MEMCG_SHIFT) & ((1 << MEMCG_BITS) - 1)) as u16);
        Shadow::pack(memcg, eviction, w & WORKINGSET != 0).0
    }

    #[inline(always)]
    fn get(&self, off: u64) -> u64 {
        match self.words[off as usize] {
            FAR => self.get_far(off),
            w if w & 1 == 0 || w & HIGH == 0 => Self::widen(w, 0),
            w => Self::widen(w, self.high[off as usize]),
        }
    }

    #[cold]
    #[inline(never)]
    fn get_far(&self, off: u64) -> u64 {
        self.far[&off]
    }

    #[inline(always)]
    fn put(&mut self, off: u64, word: u64) {
        let i = off as usize;
        if self.words[i] == FAR {
            self.drop_far(off);
        }
        match Self::narrow(word) {
            Some((w, high)) => {
                self.words[i] = w;
                if w & HIGH != 0 {
                    self.high[i] = high;
                }
            }
            None => self.put_far(off, word),
        }
    }

    #[cold]
    #[inline(never)]
    fn drop_far(&mut self, off: u64) {
        self.far.remove(&off);
    }

    /// `put()` of a word that does not fit 32 bits.
    #[cold]
    #[inline(never)]
    fn put_far(&mut self, off: u64, word: u64) {
        self.words[off as usize] = FAR;
        self.far.insert(off, word);
    }

    /// The PFN of the page cached for `off`, `NO_PAGE` for none
    /// (`swap_cache_get_folio()` without the reference).
    #[inline(always)]
    pub(crate) fn page(&self, off: u64) -> u32 {
        let w = self.get(off);
        if Self::is_folio(w) {
            ((w >> 1) - 1) as u32
        } else {
            NO_PAGE
        }
    }

    /// Whether `off` has a page in the swap cache.
    #[inline(always)]
    pub(crate) fn cached(&self, off: u64) -> bool {
        match self.words[off as usize] {
            FAR => Self::is_folio(self.get_far(off)),
            w => Self::is_folio(w.into()),
        }
    }

    /// Put page `pfn` in the swap cache at `off`, handing back the shadow
    /// it replaces.
    #[inline(always)]
    pub(crate) fn set_page(&mut self, off: u64, pfn: u32) -> Option<Shadow> {
        let word = (pfn as u64 + 1) << 1;
        let slot = &mut self.words[off as usize];
        if let (0, Ok(w)) = (*slot, u32::try_from(word)) {
            // A free slot: the common case, nothing to widen.
            *slot = w;
            return None;
        }
        let old = self.get(off);
        debug_assert!(!Self::is_folio(old), "slot {off} is already cached");
        self.put(off, word);
        (old & 1 == 1).then_some(Shadow(old))
    }

    /// Drop the cached page of `off`, leaving `shadow` (or nothing).
    #[inline(always)]
    pub(crate) fn clear_page(&mut self, off: u64, shadow: Option<Shadow>) {
        debug_assert!(shadow.is_none_or(|s| s.0 & 1 == 1), "a shadow is odd");
        self.put(off, shadow.map_or(0, |s| s.0));
    }

    /// Take the shadow of a slot without a cached page
    /// (`swap_cache_get_shadow()`, consumed by the swap-in).
    #[inline(always)]
    pub(crate) fn take_shadow(&mut self, off: u64) -> Option<Shadow> {
        let w = self.get(off);
        if w & 1 == 1 {
            self.put(off, 0);
            Some(Shadow(w))
        } else {
            None
        }
    }

    /// A freed slot keeps nothing (`swap_cluster_assert_table_empty()`
    /// holds after `swap_entries_free()`).
    #[inline(always)]
    pub(crate) fn clear(&mut self, off: u64) {
        debug_assert!(!self.cached(off), "slot {off} freed while cached");
        self.put(off, 0);
    }

    /// Whether none of the slots in `range` has a cached page.
    pub(crate) fn none_cached(&self, range: std::ops::Range<usize>) -> bool {
        range.into_iter().all(|off| !self.cached(off as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn words_too_wide_for_32_bits_keep_every_bit() {
        let mut t = SwapTable::new(8);
        // Fits: memcg id 63, timestamp 2^23 - 1.
        let near = Shadow::pack(MemcgId(63), (1 << 23) - 1, false);
        // Each of these needs the 64-bit map: cgroup ids of 64 and more.
        let wide = [
            Shadow::pack(MemcgId(64), 5, true),
            Shadow::pack(MemcgId(1000), 1 << 23, false),
            Shadow::pack(
                MemcgId(u16::MAX),
                crate::mm::workingset::EVICTION_MASK,
                true,
            ),
        ];
        t.clear_page(0, Some(near));
        for (i, &s) in wide.iter().enumerate() {
            t.clear_page(i as u64 + 1, Some(s));
        }
        assert_eq!(t.far.len(), wide.len());
        assert_eq!(t.take_shadow(0), Some(near));
        for (i, &s) in wide.iter().enumerate() {
            assert!(!t.cached(i as u64 + 1));
            assert_eq!(t.set_page(i as u64 + 1, u32::MAX - 1), Some(s));
        }
        // A PFN of 2^31 - 1 or more (8 TiB) is wide too; the shadows the
        // pages replaced have left the map.
        assert_eq!(t.far.len(), wide.len());
        assert_eq!(t.set_page(4, (1 << 31) - 2), None);
        assert_eq!(t.far.len(), wide.len(), "PFN 2^31 - 2 fits");
        for off in 1..=3 {
            assert_eq!(t.page(off), u32::MAX - 1);
            t.clear_page(off, None);
        }
        assert!(t.far.is_empty());
        assert!(t.none_cached(0..4));
        assert!(!t.none_cached(0..8));
    }

    /// Timestamps of 2^22 and more keep their next 8 bits in the byte
    /// array, which nothing else touches; from 2^30 on a shadow is wide.
    #[test]
    fn long_runs_keep_the_timestamp_high_bits_beside() {
        let mut t = SwapTable::new(16);
        let small = Shadow::pack(MemcgId(2), (1 << 22) - 1, true);
        let a = Shadow::pack(MemcgId(2), (1 << 22) + 5, true);
        let b = Shadow::pack(MemcgId(3), (1 << 30) - 1, false);
        let c = Shadow::pack(MemcgId(2), 1 << 30, false);
        t.clear_page(3, Some(small));
        assert!(t.high.iter().all(|&h| h == 0), "no high byte below 2^22");
        t.clear_page(0, Some(a));
        t.clear_page(1, Some(b));
        t.clear_page(2, Some(c));
        assert_eq!((t.high[0], t.high[1]), (1, 255));
        assert_eq!(t.far.len(), 1, "2^30 is wide");
        assert_eq!(t.set_page(0, 9), Some(a));
        assert_eq!(t.page(0), 9);
        for (off, s) in [(1, b), (2, c), (3, small)] {
            assert_eq!(t.take_shadow(off), Some(s));
        }
        assert!(t.far.is_empty());
        // A long run: timestamps up to 2^26 in eight slots, each read back
        // whole, none wide.
        let mut kept = [None; 8];
        for (i, e) in (0..1u64 << 26).step_by(1 << 19).enumerate() {
            let off = i % 8;
            let s = Shadow::pack(MemcgId(7), e, i % 3 == 0);
            if let Some(old) = kept[off] {
                assert_eq!(t.take_shadow(off as u64), Some(old));
            }
            t.clear_page(off as u64, Some(s));
            kept[off] = Some(s);
        }
        assert!(t.far.is_empty());
    }
}
