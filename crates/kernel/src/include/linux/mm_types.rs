//! `struct page` / `struct folio` as dense arrays indexed by PFN
//! (include/linux/mm_types.h, include/linux/page-flags.h), plus the large
//! folio fields that the kernel keeps in the first tail pages.
//!
//! Layout per PFN (10 bytes, so a 16 GiB scenario stays small):
//! * `flags: u32` — bits 0..16 page and folio flags (`PG_*` below, folio flags
//!   meaningful on the head page only), bits 16..20 the folio order (on head
//!   and tail pages, so `page_folio()` is a mask), bit 20 "holds non-zero
//!   data" (the model's stand-in for page contents), bits 21..32 the per-page
//!   mapcount (`page->_mapcount + 1`, CONFIG_PAGE_MAPCOUNT).
//! * `index: u32` — head: `folio->index` (low 32 bits; see [`MemMap`]);
//!   first tail of a large folio: the slot of its [`LargeFolio`] record;
//!   page-table page: its table id (like `struct ptdesc`).
//! * `mapping: u16` — head: the mapping id (a file, or an anon owner).
//!
//! The per-page mapcount field is 11 bits wide: more than 2046 mappings of
//! one page is a model limit ([`crate::model_limit`]); a mapcount going
//! below zero is a foliosim bug and asserts.

use crate::include::linux::pgtable::Pfn;
use crate::mm::pgtable_generic::TableId;
use foliosim_uapi::pagedata::PageContent;

pub(crate) const PG_REFERENCED: u32 = 1 << 0;
pub(crate) const PG_UPTODATE: u32 = 1 << 1;
pub(crate) const PG_DIRTY: u32 = 1 << 2;
pub(crate) const PG_LRU: u32 = 1 << 3;
pub(crate) const PG_HEAD: u32 = 1 << 4;
/// Not a kernel flag bit: the kernel marks tails via `compound_head`.
pub(crate) const PG_TAIL: u32 = 1 << 5;
pub(crate) const PG_ACTIVE: u32 = 1 << 6;
pub(crate) const PG_WORKINGSET: u32 = 1 << 7;
/// `PG_readahead` (aliases `PG_reclaim` in the kernel).
pub(crate) const PG_READAHEAD: u32 = 1 << 8;
pub(crate) const PG_SWAPBACKED: u32 = 1 << 9;
pub(crate) const PG_SWAPCACHE: u32 = 1 << 10;
/// `PG_anon_exclusive`: per page, on head and tail pages.
pub(crate) const PG_ANON_EXCLUSIVE: u32 = 1 << 11;
/// `PG_mappedtodisk`: a page-cache folio all of whose blocks are mapped
/// on disk. The kernel's bit too is `PG_owner_2`, shared with
/// `PG_anon_exclusive`, which only anon pages carry.
pub(crate) const PG_MAPPEDTODISK: u32 = PG_ANON_EXCLUSIVE;
/// `PAGE_MAPPING_ANON`: `folio->mapping` points at an anon owner.
pub(crate) const PG_ANON: u32 = 1 << 12;
/// `PG_partially_mapped` (large anon folios on the deferred split queue).
pub(crate) const PG_PARTIALLY_MAPPED: u32 = 1 << 13;
/// `PG_buddy`: the head of a free block in the buddy allocator.
pub(crate) const PG_BUDDY: u32 = 1 << 14;
/// A page-table page (`PageTable()`).
pub(crate) const PG_TABLE: u32 = 1 << 15;

const FLAG_MASK: u32 = 0xffff;
const ORDER_SHIFT: u32 = 16;
const ORDER_MASK: u32 = 0xf << ORDER_SHIFT;
/// Per page: the page holds a non-zero byte (set by user writes), which is
/// what `is_folio_zero_filled()` looks at when swapping out.
const PG_NONZERO_BIT: u32 = 1 << 20;
const MAPCOUNT_SHIFT: u32 = 21;
/// Largest per-page mapcount the packed field holds.
pub(crate) const MAX_PAGE_MAPCOUNT: u32 = (1 << (32 - MAPCOUNT_SHIFT)) - 2;

/// Folio-wide fields of a large folio (`_large_mapcount`, `_entire_mapcount`,
/// `_nr_pages_mapped`, `_mm_id[2]`, `_mm_id_mapcount[2]`,
/// `FOLIO_MM_IDS_SHARED_BIT`). Counts are stored without the kernel's −1
/// bias: 0 means unmapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LargeFolio {
    pub(crate) large_mapcount: i32,
    pub(crate) entire_mapcount: i32,
    /// Pages mapped by PTE (`_nr_pages_mapped` without ENTIRELY_MAPPED).
    pub(crate) nr_pages_mapped: i32,
    /// `_mm_id[]`, 0 = `MM_ID_DUMMY` (free slot).
    pub(crate) mm_id: [u32; 2],
    /// `_mm_id_mapcount[]` without the −1 bias.
    pub(crate) mm_id_mapcount: [i32; 2],
    /// `FOLIO_MM_IDS_SHARED_BIT`
    pub(crate) maybe_shared: bool,
}

/// The memory map: one entry per simulated physical page.
#[derive(Debug)]
pub(crate) struct MemMap {
    flags: Vec<u32>,
    index: Vec<u32>,
    mapping: Vec<u16>,
    large: Vec<LargeFolio>,
    large_free: Vec<u32>,
    /// The kind of data of each page whose PG_NONZERO bit is set
    /// ([`PageContent`]; zswap compresses by it): empty unless
    /// [`MemMap::keep_content`] asked for it, every non-zero page then
    /// being [`PageContent::STORE`] until a store says otherwise.
    content: Vec<u8>,
    /// One bit a page: the page has movable ops (`PageMovableOps()`; the
    /// pages of a zspage, `SetZsPageMovable()`), which
    /// `page_has_movable_ops()` finds. Zero-filled: backed only where a
    /// zsmalloc pool has been.
    movable_ops: Vec<u64>,
}

impl MemMap {
    /// A map for `nr_pages` frames. The arrays are zero-initialised, so the
    /// host only backs the parts the simulation touches.
    pub(crate) fn new(nr_pages: u64) -> MemMap {
        let n = nr_pages as usize;
        MemMap {
            flags: vec![0; n],
            index: vec![0; n],
            mapping: vec![0; n],
            large: Vec::new(),
            large_free: Vec::new(),
            content: Vec::new(),
            movable_ops: vec![0; n.div_ceil(64)],
        }
    }

    /// Set or clear the page's movable ops (`__zpdesc_set_movable()`, and
    /// the reset of the page type when a zspage is freed).
    pub(crate) fn set_movable_ops(&mut self, pfn: Pfn, on: bool) {
        let (w, bit) = (pfn.idx() / 64, 1u64 << (pfn.idx() % 64));
        if on {
            self.movable_ops[w] |= bit;
        } else {
            self.movable_ops[w] &= !bit;
        }
    }

    /// The pages with movable ops (for the invariant checker).
    pub(crate) fn nr_movable_ops(&self) -> u64 {
        self.movable_ops
            .iter()
            .map(|w| u64::from(w.count_ones()))
            .sum()
    }

    /// `page_has_movable_ops()`
    #[inline]
    pub(crate) fn has_movable_ops(&self, pfn: Pfn) -> bool {
        self.movable_ops[pfn.idx() / 64] & (1u64 << (pfn.idx() % 64)) != 0
    }

    /// Keep the kind of data of every page (zswap on).
    pub(crate) fn keep_content(&mut self) {
        self.content = vec![PageContent::STORE.0; self.flags.len()];
    }

    pub(crate) fn nr_pages(&self) -> u64 {
        self.flags.len() as u64
    }

    #[inline]
    pub(crate) fn flags(&self, pfn: Pfn) -> u32 {
        self.flags[pfn.idx()] & FLAG_MASK
    }
    #[inline]
    pub(crate) fn test(&self, pfn: Pfn, flag: u32) -> bool {
        self.flags[pfn.idx()] & flag != 0
    }
    #[inline]
    pub(crate) fn set(&mut self, pfn: Pfn, flag: u32) {
        self.flags[pfn.idx()] |= flag;
    }
    #[inline]
    pub(crate) fn clear(&mut self, pfn: Pfn, flag: u32) {
        self.flags[pfn.idx()] &= !flag;
    }

    /// The order recorded on a head, tail or free-block head page.
    #[inline]
    pub(crate) fn order(&self, pfn: Pfn) -> u32 {
        (self.flags[pfn.idx()] & ORDER_MASK) >> ORDER_SHIFT
    }
    #[inline]
    fn set_order(&mut self, pfn: Pfn, order: u32) {
        let f = &mut self.flags[pfn.idx()];
        *f = (*f & !ORDER_MASK) | (order << ORDER_SHIFT);
    }

    /// `page_folio()`: the head PFN of the folio holding `pfn`.
    #[inline]
    pub(crate) fn page_folio(&self, pfn: Pfn) -> Pfn {
        let order = self.order(pfn);
        Pfn(pfn.0 & !((1u32 << order) - 1))
    }

    /// `folio_nr_pages()`
    #[inline]
    pub(crate) fn folio_nr_pages(&self, folio: Pfn) -> u64 {
        1 << self.order(folio)
    }

    /// `folio_test_large()`
    #[inline]
    pub(crate) fn folio_test_large(&self, folio: Pfn) -> bool {
        self.order(folio) > 0
    }

    /// `folio_test_anon()`
    #[inline]
    pub(crate) fn folio_test_anon(&self, folio: Pfn) -> bool {
        self.test(folio, PG_ANON)
    }

    /// Does the page hold non-zero data?
    #[inline]
    pub(crate) fn page_nonzero(&self, pfn: Pfn) -> bool {
        self.flags[pfn.idx()] & PG_NONZERO_BIT != 0
    }

    /// Record what a user write stored in the page.
    #[inline]
    pub(crate) fn set_page_nonzero(&mut self, pfn: Pfn, nonzero: bool) {
        if nonzero {
            self.flags[pfn.idx()] |= PG_NONZERO_BIT;
        } else {
            self.flags[pfn.idx()] &= !PG_NONZERO_BIT;
        }
    }

    /// What the page holds.
    #[inline]
    pub(crate) fn page_content(&self, pfn: Pfn) -> PageContent {
        if !self.page_nonzero(pfn) {
            return PageContent::ZERO;
        }
        PageContent(self.content.get(pfn.idx()).copied().unwrap_or(1))
    }

    /// Record what the page now holds (a store, a copy, a swap-in).
    #[inline]
    pub(crate) fn set_page_content(&mut self, pfn: Pfn, c: PageContent) {
        self.set_page_nonzero(pfn, c.nonzero());
        if c.nonzero() {
            if let Some(slot) = self.content.get_mut(pfn.idx()) {
                *slot = c.0;
            }
        }
    }

    /// `copy_mc_user_highpage()` and the like: `dst` holds what `src` does.
    #[inline]
    pub(crate) fn copy_page_content(&mut self, dst: Pfn, src: Pfn) {
        let c = self.page_content(src);
        self.set_page_content(dst, c);
    }

    /// Per-page mapcount (`page_mapcount()` without the PMD part).
    #[inline]
    pub(crate) fn page_mapcount(&self, pfn: Pfn) -> u32 {
        self.flags[pfn.idx()] >> MAPCOUNT_SHIFT
    }

    /// Add `delta` to the per-page mapcount; returns the new value.
    #[inline]
    pub(crate) fn page_mapcount_add(&mut self, pfn: Pfn, delta: i32) -> u32 {
        let cur = self.page_mapcount(pfn) as i32 + delta;
        assert!(cur >= 0, "mapcount of pfn {} below zero", pfn.0);
        if cur > MAX_PAGE_MAPCOUNT as i32 {
            crate::model_limit(format!(
                "more than {MAX_PAGE_MAPCOUNT} mappings of one page (pfn {})",
                pfn.0
            ));
        }
        let f = &mut self.flags[pfn.idx()];
        *f = (*f & !(u32::MAX << MAPCOUNT_SHIFT)) | ((cur as u32) << MAPCOUNT_SHIFT);
        cur as u32
    }

    /// `folio->index` (low 32 bits).
    #[inline]
    pub(crate) fn folio_index(&self, folio: Pfn) -> u32 {
        self.index[folio.idx()]
    }
    #[inline]
    pub(crate) fn set_folio_index(&mut self, folio: Pfn, index: u64) {
        self.index[folio.idx()] = index as u32;
    }
    #[inline]
    pub(crate) fn folio_mapping(&self, folio: Pfn) -> u16 {
        self.mapping[folio.idx()]
    }
    #[inline]
    pub(crate) fn set_folio_mapping(&mut self, folio: Pfn, mapping: u16) {
        self.mapping[folio.idx()] = mapping;
    }

    /// The large-folio record of a large folio.
    #[inline]
    pub(crate) fn large(&self, folio: Pfn) -> &LargeFolio {
        &self.large[self.index[folio.idx() + 1] as usize]
    }
    #[inline]
    pub(crate) fn large_mut(&mut self, folio: Pfn) -> &mut LargeFolio {
        let slot = self.index[folio.idx() + 1] as usize;
        &mut self.large[slot]
    }

    /// `folio_mapcount()`: PTE plus PMD mappings of the folio.
    pub(crate) fn folio_mapcount(&self, folio: Pfn) -> u32 {
        if self.folio_test_large(folio) {
            self.large(folio).large_mapcount as u32
        } else {
            self.page_mapcount(folio)
        }
    }

    /// `folio_mapped()`
    pub(crate) fn folio_mapped(&self, folio: Pfn) -> bool {
        self.folio_mapcount(folio) > 0
    }

    /// `folio_precise_page_mapcount()`: PTE mappings of the page plus the
    /// folio's PMD mappings.
    pub(crate) fn precise_page_mapcount(&self, pfn: Pfn) -> u32 {
        let folio = self.page_folio(pfn);
        let mut n = self.page_mapcount(pfn);
        if self.folio_test_large(folio) {
            n += self.large(folio).entire_mapcount as u32;
        }
        n
    }

    /// `prep_compound_page()` + `page_rmappable_folio()`: turn a just
    /// allocated block into a folio of `order` with clean metadata.
    pub(crate) fn prep_new_folio(&mut self, head: Pfn, order: u32) {
        let nr = 1usize << order;
        for i in 0..nr {
            let pfn = head.idx() + i;
            self.flags[pfn] = order << ORDER_SHIFT;
            self.index[pfn] = 0;
            self.mapping[pfn] = 0;
        }
        if order > 0 {
            self.flags[head.idx()] |= PG_HEAD;
            for i in 1..nr {
                self.flags[head.idx() + i] |= PG_TAIL;
            }
            let slot = match self.large_free.pop() {
                Some(s) => {
                    self.large[s as usize] = LargeFolio::default();
                    s
                }
                None => {
                    self.large.push(LargeFolio::default());
                    (self.large.len() - 1) as u32
                }
            };
            self.index[head.idx() + 1] = slot;
        }
    }

    /// `__split_folio_to_order(folio, 0)`: every page becomes an order-0
    /// folio carrying the head's folio flags, mapping and consecutive
    /// indices; per-page flags and mapcounts stay.
    pub(crate) fn split_to_order0(&mut self, head: Pfn) {
        let order = self.order(head);
        if order == 0 {
            return;
        }
        let slot = self.index[head.idx() + 1];
        self.large_free.push(slot);
        let folio_flags = self.flags[head.idx()]
            & FLAG_MASK
            & !(PG_HEAD | PG_TAIL | PG_ANON_EXCLUSIVE | PG_PARTIALLY_MAPPED);
        let index = self.index[head.idx()];
        let mapping = self.mapping[head.idx()];
        let pages = head.idx()..head.idx() + (1usize << order);
        for f in &mut self.flags[pages.clone()] {
            *f = (*f & (PG_ANON_EXCLUSIVE | PG_NONZERO_BIT | (u32::MAX << MAPCOUNT_SHIFT)))
                | folio_flags;
        }
        for (i, x) in self.index[pages.clone()].iter_mut().enumerate() {
            *x = index.wrapping_add(i as u32);
        }
        self.mapping[pages].fill(mapping);
    }

    /// Tear down a folio's metadata before its pages go back to the buddy
    /// allocator.
    #[inline(always)]
    pub(crate) fn destroy_folio(&mut self, head: Pfn) {
        let order = self.order(head);
        if order > 0 {
            let slot = self.index[head.idx() + 1];
            self.large_free.push(slot);
        }
        for i in 0..(1usize << order) {
            let pfn = head.idx() + i;
            debug_assert_eq!(
                self.flags[pfn] >> MAPCOUNT_SHIFT,
                0,
                "freeing a mapped page"
            );
            self.flags[pfn] = 0;
            self.index[pfn] = 0;
            self.mapping[pfn] = 0;
        }
    }

    /// Mark `pfn` as the head of a free buddy block of `order`.
    pub(crate) fn set_buddy(&mut self, pfn: Pfn, order: u32) {
        self.flags[pfn.idx()] = PG_BUDDY;
        self.set_order(pfn, order);
    }

    /// Is `pfn` the head of a free block of exactly `order`?
    #[inline]
    pub(crate) fn is_buddy(&self, pfn: Pfn, order: u32) -> bool {
        self.test(pfn, PG_BUDDY) && self.order(pfn) == order
    }

    pub(crate) fn clear_buddy(&mut self, pfn: Pfn) {
        self.flags[pfn.idx()] = 0;
    }

    /// Store a page-table id on a page-table page.
    pub(crate) fn set_table(&mut self, pfn: Pfn, table_id: TableId) {
        self.flags[pfn.idx()] = PG_TABLE;
        self.index[pfn.idx()] = table_id.0;
    }

    /// The table id of a page-table page.
    #[inline]
    pub(crate) fn table_id(&self, pfn: Pfn) -> TableId {
        TableId(self.index[pfn.idx()])
    }

    pub(crate) fn clear_table(&mut self, pfn: Pfn) {
        self.flags[pfn.idx()] = 0;
        self.index[pfn.idx()] = 0;
    }
}
