//! The buddy allocator (mm/page_alloc.c: __rmqueue_smallest(), expand(),
//! __free_one_page()), one zone, no per-CPU lists, no migratetypes, no
//! watermarks or reclaim yet.
//!
//! Free blocks are kept on one stack per order. A block merged into its
//! buddy leaves a stale stack entry behind, which is skipped when popped
//! (the head's `PG_buddy`/order no longer match). Splitting hands out the
//! lower half and keeps the upper halves free, so a run of allocations walks
//! memory upwards, as a fresh zone does in the kernel. Blocks never handed
//! out yet are not marked in the memory map (a "fresh" high-water mark), so
//! the host only backs the memory map of memory the simulation used.

use crate::include::linux::mm_types::MemMap;
use crate::include::linux::pgtable::{Pfn, MAX_PAGE_ORDER};

/// `struct free_area[]` of the single zone.
#[derive(Debug)]
pub struct FreeArea {
    stacks: Vec<Vec<u32>>,
    nr_free: u64,
    nr_pages: u64,
    /// First PFN of the never-allocated tail of memory (all free, in
    /// `MAX_PAGE_ORDER` blocks, unmarked).
    fresh: u64,
}

impl FreeArea {
    /// All of `mem` free, in `MAX_PAGE_ORDER` blocks, lowest PFN first out.
    pub fn new(mem: &MemMap) -> FreeArea {
        let nr_pages = mem.nr_pages();
        assert!(
            nr_pages.is_multiple_of(1u64 << MAX_PAGE_ORDER),
            "memory must be a multiple of 4 MiB"
        );
        let stacks = vec![Vec::new(); MAX_PAGE_ORDER as usize + 1];
        FreeArea {
            stacks,
            nr_free: nr_pages,
            nr_pages,
            fresh: 0,
        }
    }

    /// Free pages in the never-used tail (not marked in the memory map).
    pub fn nr_fresh_pages(&self) -> u64 {
        self.nr_pages - self.fresh
    }

    /// `nr_free_pages()`
    pub fn nr_free_pages(&self) -> u64 {
        self.nr_free
    }

    pub fn nr_pages(&self) -> u64 {
        self.nr_pages
    }

    fn pop(&mut self, mem: &MemMap, order: u32) -> Option<Pfn> {
        let stack = &mut self.stacks[order as usize];
        while let Some(p) = stack.pop() {
            if mem.is_buddy(Pfn(p), order) {
                return Some(Pfn(p));
            }
        }
        None
    }

    /// `__rmqueue_smallest()` + `expand()`: a free block of `order`, or None.
    pub fn alloc_pages(&mut self, mem: &mut MemMap, order: u32) -> Option<Pfn> {
        let found = (order..=MAX_PAGE_ORDER).find_map(|o| self.pop(mem, o).map(|p| (p, o)));
        let (pfn, mut cur) = match found {
            Some(f) => f,
            None if self.fresh < self.nr_pages => {
                let p = Pfn(self.fresh as u32);
                self.fresh += 1 << MAX_PAGE_ORDER;
                (p, MAX_PAGE_ORDER)
            }
            None => return None,
        };
        mem.clear_buddy(pfn);
        while cur > order {
            cur -= 1;
            let upper = pfn.plus(1 << cur);
            mem.set_buddy(upper, cur);
            self.stacks[cur as usize].push(upper.0);
        }
        self.nr_free -= 1 << order;
        Some(pfn)
    }

    /// `__free_one_page()`: return a block and merge it with free buddies.
    pub fn free_pages(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32) {
        self.nr_free += 1 << order;
        let mut pfn = pfn.0 as u64;
        let mut order = order;
        while order < MAX_PAGE_ORDER {
            let buddy = pfn ^ (1 << order);
            if buddy >= self.nr_pages || !mem.is_buddy(Pfn(buddy as u32), order) {
                break;
            }
            mem.clear_buddy(Pfn(buddy as u32));
            pfn &= !(1 << order);
            order += 1;
        }
        mem.set_buddy(Pfn(pfn as u32), order);
        self.stacks[order as usize].push(pfn as u32);
    }
}
