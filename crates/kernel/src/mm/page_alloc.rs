//! The buddy allocator (mm/page_alloc.c: __rmqueue_smallest(), expand(),
//! __free_one_page()), one zone, no per-CPU lists, no migratetypes, no
//! watermarks or reclaim yet.
//!
//! Free blocks are kept on one stack per order. A block merged into its
//! buddy leaves a stale stack entry behind, which is skipped when popped
//! (the head's `PG_buddy`/order no longer match). Splitting hands out the
//! lower half and keeps the upper halves free, so a run of allocations walks
//! memory upwards, as a fresh zone does in the kernel.

use crate::include::linux::mm_types::MemMap;
use crate::include::linux::pgtable::{Pfn, MAX_PAGE_ORDER};

/// `struct free_area[]` of the single zone.
#[derive(Debug)]
pub struct FreeArea {
    stacks: Vec<Vec<u32>>,
    nr_free: u64,
    nr_pages: u64,
}

impl FreeArea {
    /// All of `mem` free, in `MAX_PAGE_ORDER` blocks, lowest PFN first out.
    pub fn new(mem: &mut MemMap) -> FreeArea {
        let nr_pages = mem.nr_pages();
        let block = 1u64 << MAX_PAGE_ORDER;
        assert!(nr_pages % block == 0, "memory must be a multiple of 4 MiB");
        let mut stacks = vec![Vec::new(); MAX_PAGE_ORDER as usize + 1];
        for b in (0..nr_pages / block).rev() {
            let pfn = Pfn((b * block) as u32);
            mem.set_buddy(pfn, MAX_PAGE_ORDER);
            stacks[MAX_PAGE_ORDER as usize].push(pfn.0);
        }
        FreeArea { stacks, nr_free: nr_pages, nr_pages }
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
        let (pfn, mut cur) = (order..=MAX_PAGE_ORDER).find_map(|o| self.pop(mem, o).map(|p| (p, o)))?;
        mem.clear_buddy(pfn);
        while cur > order {
            cur -= 1;
            let upper = pfn.add(1 << cur);
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
