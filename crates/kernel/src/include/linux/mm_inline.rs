//! LRU lists (include/linux/mmzone.h: enum lru_list, struct lruvec;
//! include/linux/mm_inline.h: folio_lru_list(), lruvec_add_folio(),
//! lruvec_add_folio_tail(), lruvec_del_folio(); mm/huge_memory.c:
//! lru_add_split_folio()), Linux 6.18, classic two-list LRU; with MGLRU
//! on, the same entry points keep generations instead (mm/lru_gen.rs).
//!
//! Every memory cgroup has one lruvec (a single node) with four evictable
//! lists; the unevictable list is not modelled (no mlock). A list keeps
//! the kernel's order: `lruvec_add_folio()` puts a folio at the head,
//! `isolate_lru_folios()` takes from the tail.
//!
//! The lists are intrusive: one `[prev, next]` pair per page frame, used by
//! folio heads only, allocated (zeroed) at the first folio allocation,
//! when the root's lists become ordered too (`LruLinks::root`): global
//! direct reclaim scans them. An engine that proves a scenario cannot
//! exhaust memory turns that off (`Config::lru_order_root`; 8 bytes per
//! page frame saved) until the first non-root cgroup needs the links.
//! Sizes are kept for every lruvec
//! (`lruvec_page_state()`), in
//! [`crate::mm::vmstat::MemcgStat::lru`].

use crate::arch::Arch;
use crate::include::linux::mm_types::{PG_ACTIVE, PG_LRU, PG_SWAPBACKED};
use crate::include::linux::pgtable::Pfn;
use crate::mm::memcontrol::MemcgId;
use crate::mm::memcontrol::ROOT_MEM_CGROUP;
use crate::Kernel;

/// `LRU_INACTIVE_ANON`
pub(crate) const LRU_INACTIVE_ANON: usize = 0;
/// `LRU_ACTIVE_ANON`
pub(crate) const LRU_ACTIVE_ANON: usize = 1;
/// `LRU_INACTIVE_FILE`
pub(crate) const LRU_INACTIVE_FILE: usize = 2;
/// `LRU_ACTIVE_FILE`
pub(crate) const LRU_ACTIVE_FILE: usize = 3;
/// The evictable lists (`for_each_evictable_lru()`); LRU_UNEVICTABLE is not
/// modelled.
pub(crate) const NR_LRU_LISTS: usize = 4;
/// `LRU_ACTIVE`: offset of the active list from its inactive list.
pub(crate) const LRU_ACTIVE: usize = 1;
/// `LRU_FILE`: offset of the file lists from the anon lists.
pub(crate) const LRU_FILE: usize = 2;

/// `is_file_lru()`
#[inline]
pub(crate) fn is_file_lru(lru: usize) -> bool {
    lru >= LRU_FILE
}

/// `is_active_lru()`
#[inline]
pub(crate) fn is_active_lru(lru: usize) -> bool {
    lru & LRU_ACTIVE != 0
}

/// `lru_list_name()`, as memory.stat spells it.
pub(crate) const LRU_NAMES: [&str; NR_LRU_LISTS] = foliosim_uapi::vmstat::LRU_NAMES;

const NIL: u32 = u32::MAX;

/// One ordered list (`lruvec->lists[lru]`): `head` is the most recently
/// added folio, `tail` the next one reclaim takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ListHead {
    head: u32,
    tail: u32,
    /// Folios on the list.
    pub len: u32,
}

impl Default for ListHead {
    fn default() -> Self {
        ListHead {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

/// `folio->lru` of every folio head, as `[prev, next]` PFNs (`prev` towards
/// the head of its list); empty until the first non-root cgroup exists.
#[derive(Debug, Default)]
pub(crate) struct LruLinks {
    links: Vec<[u32; 2]>,
    /// The root cgroup's lists are ordered too (global direct reclaim
    /// scans them; set before the first folio is allocated).
    pub root: bool,
}

impl LruLinks {
    /// Allocate the links for `nr_pages` frames (zeroed memory: the host
    /// backs only what is used).
    pub(crate) fn enable(&mut self, nr_pages: u64) {
        if self.links.is_empty() {
            self.links = vec![[0u32; 2]; nr_pages as usize];
        }
    }

    /// `list_add()` at the head.
    pub(crate) fn add_head(&mut self, list: &mut ListHead, folio: Pfn) {
        let f = folio.0;
        self.links[f as usize] = [NIL, list.head];
        match list.head {
            NIL => list.tail = f,
            h => self.links[h as usize][0] = f,
        }
        list.head = f;
        list.len += 1;
    }

    /// `list_add_tail()` at the tail.
    pub(crate) fn add_tail(&mut self, list: &mut ListHead, folio: Pfn) {
        let f = folio.0;
        self.links[f as usize] = [list.tail, NIL];
        match list.tail {
            NIL => list.head = f,
            t => self.links[t as usize][1] = f,
        }
        list.tail = f;
        list.len += 1;
    }

    /// `list_add_tail(&new->lru, &anchor->lru)`: `folio` goes right before
    /// `anchor`, on its head side.
    pub(crate) fn add_before(&mut self, list: &mut ListHead, folio: Pfn, anchor: Pfn) {
        let [prev, _] = self.links[anchor.idx()];
        self.links[folio.idx()] = [prev, anchor.0];
        self.links[anchor.idx()][0] = folio.0;
        match prev {
            NIL => list.head = folio.0,
            p => self.links[p as usize][1] = folio.0,
        }
        list.len += 1;
    }

    /// `list_del()`
    pub(crate) fn del(&mut self, list: &mut ListHead, folio: Pfn) {
        let [prev, next] = self.links[folio.idx()];
        match prev {
            NIL => list.head = next,
            p => self.links[p as usize][1] = next,
        }
        match next {
            NIL => list.tail = prev,
            n => self.links[n as usize][0] = prev,
        }
        list.len -= 1;
    }

    /// `lru_to_folio()`: the tail folio.
    #[inline]
    pub(crate) fn tail(&self, list: &ListHead) -> Option<Pfn> {
        (list.tail != NIL).then_some(Pfn(list.tail))
    }

    /// Visit the folios of `list` from head to tail, checking the back
    /// links, the tail and the length (for the invariant checker).
    pub(crate) fn walk(
        &self,
        list: &ListHead,
        mut visit: impl FnMut(Pfn) -> Result<(), String>,
    ) -> Result<(), String> {
        let (mut cur, mut prev, mut n) = (list.head, NIL, 0u64);
        while cur != NIL {
            if n >= list.len as u64 {
                return Err(format!("LRU list longer than its length {}", list.len));
            }
            let [p, next] = *self
                .links
                .get(cur as usize)
                .ok_or_else(|| format!("LRU list holds pfn {cur} beyond memory"))?;
            if p != prev {
                return Err(format!("LRU list: pfn {cur} has prev {p}, expected {prev}"));
            }
            visit(Pfn(cur))?;
            n += 1;
            prev = cur;
            cur = next;
        }
        if prev != list.tail || n != list.len as u64 {
            return Err(format!(
                "LRU list: tail {} / length {} but the links give {prev} / {n}",
                list.tail, list.len
            ));
        }
        Ok(())
    }
}

impl<A: Arch> Kernel<A> {
    /// `folio_lru_list()`: which list the folio's flags put it on.
    #[inline]
    pub(crate) fn folio_lru_list(&self, folio: Pfn) -> usize {
        let f = self.mem.flags(folio);
        let mut lru = if f & PG_SWAPBACKED != 0 {
            LRU_INACTIVE_ANON
        } else {
            LRU_INACTIVE_FILE
        };
        if f & PG_ACTIVE != 0 {
            lru += LRU_ACTIVE;
        }
        lru
    }

    /// `update_lru_size()` of the folio's lruvec.
    #[inline]
    pub(crate) fn update_lru_size(&mut self, memcg: MemcgId, lru: usize, nr: i64) {
        let m = &mut self.vmstat.memcg[memcg.idx()];
        m.lru[lru] = m.lru[lru].wrapping_add_signed(nr);
        // memcg_rstat_updated()
        m.stats_updates += nr.unsigned_abs();
    }

    /// What `lruvec_add_folio()`, `lruvec_add_folio_tail()` and
    /// `lruvec_del_folio()` share: the size of the list the folio's flags
    /// say changes by its pages times `sign`, and `op` links the folio into
    /// that list of its cgroup's lruvec or unlinks it (when the model keeps
    /// the list in order: every cgroup's, the root's once `root` is set).
    #[inline]
    fn lruvec_update(
        &mut self,
        folio: Pfn,
        sign: i64,
        op: impl FnOnce(&mut LruLinks, &mut ListHead, Pfn),
    ) {
        let lru = self.folio_lru_list(folio);
        let memcg = self.folio_memcg(folio);
        self.update_lru_size(memcg, lru, sign * self.mem.folio_nr_pages(folio) as i64);
        if memcg != ROOT_MEM_CGROUP || self.lru.root {
            let list = &mut self.memcg.memcgs[memcg.idx()].lruvec.lists[lru];
            op(&mut self.lru, list, folio);
        }
    }

    /// `lruvec_add_folio()`: the folio joins the head of the list its flags
    /// say, in its cgroup's lruvec. The caller sets PG_lru.
    #[inline]
    pub(crate) fn lruvec_add_folio(&mut self, folio: Pfn) {
        if self.lru_gen_enabled() {
            self.lru_gen_add_folio(folio, false);
            return;
        }
        self.lruvec_update(folio, 1, LruLinks::add_head);
    }

    /// `lruvec_add_folio_tail()`
    pub(crate) fn lruvec_add_folio_tail(&mut self, folio: Pfn) {
        if self.lru_gen_enabled() {
            self.lru_gen_add_folio(folio, true);
            return;
        }
        self.lruvec_update(folio, 1, LruLinks::add_tail);
    }

    /// `lruvec_del_folio()`: take the folio off its list (its flags must
    /// still say which). The caller clears PG_lru.
    #[inline]
    pub(crate) fn lruvec_del_folio(&mut self, folio: Pfn) {
        if self.lru_gen_enabled() {
            self.lru_gen_del_folio(folio, false);
            return;
        }
        self.lruvec_update(folio, -1, LruLinks::del);
    }

    /// `lru_add_split_folio()` for a head still on the LRU: the new order-0
    /// `tail` joins the head's list right before the head (so reclaim meets
    /// the head first, then the tails from the last one down), with PG_lru.
    /// Sizes do not change: the pages were on the list already.
    pub(crate) fn lru_add_split_folio(&mut self, head: Pfn, tail: Pfn) {
        debug_assert!(self.mem.test(head, PG_LRU));
        self.mem.set(tail, PG_LRU);
        if self.lru_gen_enabled() {
            self.lru_gen_add_split_folio(head, tail);
            return;
        }
        let memcg = self.folio_memcg(head);
        if memcg != ROOT_MEM_CGROUP || self.lru.root {
            let lru = self.folio_lru_list(head);
            let list = &mut self.memcg.memcgs[memcg.idx()].lruvec.lists[lru];
            self.lru.add_before(list, tail, head);
        }
    }
}
