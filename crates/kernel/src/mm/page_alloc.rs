//! The buddy allocator (mm/page_alloc.c: __rmqueue_smallest(), expand(),
//! __free_one_page()), one zone, no per-CPU lists, no migratetypes, with
//! the zone watermarks (calculate_min_free_kbytes(), __setup_per_zone_wmarks())
//! and the allocation slow path's direct reclaim (__alloc_pages_slowpath(),
//! __alloc_pages_direct_reclaim(), should_reclaim_retry()).
//!
//! An allocation takes the fast path while the free pages stay above the
//! low watermark (zone_watermark_fast()), else the slow path: it wakes
//! kswapd (`wakeup_kswapd()`, mm/vmscan.rs), retries at the min watermark
//! and then reclaims directly (`try_to_free_pages()`) until the min
//! watermark is met, or fails after 16 attempts without progress (the OOM
//! killer is not modelled: the fault fails with VM_FAULT_OOM). While kswapd
//! is awake, each allocation first lets it catch up with the workload's
//! modelled time (`kswapd_run()`): the model's interleaving of kswapd with
//! the workload.
//! Only order-0 allocations reclaim: large folios fall back at once (as
//! THP and mTHP faults with the default defrag = madvise outside
//! MADV_HUGEPAGE; the kernel's compaction and reclaim for MADV_HUGEPAGE
//! VMAs and costly readahead orders are not modelled). All memory is one
//! zone; its managed pages are all pages but `machine.unmanaged`, and the
//! kernel's own memory (`machine.unmanaged` + `machine.boot_used`) is taken
//! at boot right after the zero page.
//!
//! Free blocks are kept on one stack per order. A block merged into its
//! buddy leaves a stale stack entry behind, which is skipped when popped
//! (the head's `PG_buddy`/order no longer match). Splitting hands out the
//! lower half and keeps the upper halves free, so a run of allocations walks
//! memory upwards, as a fresh zone does in the kernel. Blocks never handed
//! out yet are not marked in the memory map (a "fresh" high-water mark), so
//! the host only backs the memory map of memory the simulation used.

use crate::arch::Arch;
use crate::include::linux::mm_types::MemMap;
use crate::include::linux::pgtable::{Pfn, MAX_PAGE_ORDER, PAGE_SIZE};
use crate::Kernel;

/// `MAX_RECLAIM_RETRIES`
const MAX_RECLAIM_RETRIES: u32 = 16;
/// `watermark_scale_factor` (default 10, i.e. 0.1% of memory).
const WATERMARK_SCALE_FACTOR: u64 = 10;

/// `zone->_watermark[WMARK_MIN / LOW / HIGH]`, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

impl Watermarks {
    /// `calculate_min_free_kbytes()` (int_sqrt(lowmem_kbytes * 16), clamped
    /// to 128 KiB .. 256 MiB; `min_free_kbytes` instead unless 0, as a
    /// write of vm.min_free_kbytes) and `__setup_per_zone_wmarks()` for one
    /// zone holding all `managed` pages.
    pub(crate) fn new(managed: u64, min_free_kbytes: u64) -> Watermarks {
        let lowmem_kbytes = managed * (PAGE_SIZE >> 10);
        let min_free_kbytes = match min_free_kbytes {
            0 => (lowmem_kbytes * 16).isqrt().clamp(128, 262_144),
            set => set,
        };
        let min = min_free_kbytes >> (crate::include::linux::pgtable::PAGE_SHIFT - 10);
        let step = (min >> 2).max(managed * WATERMARK_SCALE_FACTOR / 10_000);
        Watermarks {
            min,
            low: min + step,
            high: min + 2 * step,
        }
    }
}

/// `struct free_area[]` of the single zone.
#[derive(Debug)]
pub(crate) struct FreeArea {
    stacks: Vec<Vec<u32>>,
    nr_free: u64,
    nr_pages: u64,
    /// First PFN of the never-allocated tail of memory (all free, in
    /// `MAX_PAGE_ORDER` blocks, unmarked).
    fresh: u64,
    /// The zone's watermarks.
    pub(crate) wmark: Watermarks,
    /// `zone_managed_pages()`: all pages but `machine.unmanaged`.
    pub(crate) managed: u64,
    /// The PFNs the kernel holds from boot (`machine.unmanaged` and
    /// `machine.boot_used`), right after the zero page.
    pub(crate) boot: std::ops::Range<u32>,
    /// Where the last partial cgroup walk of global direct reclaim stopped
    /// (the root's `mem_cgroup_reclaim_iter` position for the one node);
    /// None: the next walk starts at the root.
    pub(crate) reclaim_pos: Option<u16>,
}

impl FreeArea {
    /// All of `mem` free, in `MAX_PAGE_ORDER` blocks, lowest PFN first out.
    pub(crate) fn new(mem: &MemMap) -> FreeArea {
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
            wmark: Watermarks::new(nr_pages, 0),
            managed: nr_pages,
            boot: 0..0,
            reclaim_pos: None,
        }
    }

    /// The machine's own memory: take `machine.unmanaged` and
    /// `machine.boot_used` from the allocator at boot (the pages right after
    /// the zero page: allocations walk memory upwards), and set the
    /// watermarks from the managed pages and `min_free_kbytes`.
    pub(crate) fn reserve_boot_pages(
        &mut self,
        mem: &mut MemMap,
        cfg: &crate::Config,
        zero_pfn: Pfn,
    ) -> crate::KResult<()> {
        let unmanaged = cfg.machine_unmanaged / PAGE_SIZE;
        let n = unmanaged + cfg.machine_boot_used / PAGE_SIZE;
        let room = (16 << 20) / PAGE_SIZE;
        if n + room > self.nr_pages {
            return Err(crate::KernelError::Unsupported(format!(
                "machine.unmanaged + machine.boot_used = {} MiB leave less than 16 MiB of \
                 memory = {} MiB",
                (n * PAGE_SIZE) >> 20,
                (self.nr_pages * PAGE_SIZE) >> 20
            )));
        }
        let first = zero_pfn.0 + 1;
        for i in 0..n {
            let p = self.alloc_pages(mem, 0).expect("memory for the boot pages");
            debug_assert_eq!(p.0 as u64, first as u64 + i, "boot pages are contiguous");
        }
        self.boot = first..first + n as u32;
        self.managed = self.nr_pages - unmanaged;
        self.wmark = Watermarks::new(self.managed, cfg.min_free_kbytes);
        Ok(())
    }

    /// Free pages in the never-used tail (not marked in the memory map).
    pub(crate) fn nr_fresh_pages(&self) -> u64 {
        self.nr_pages - self.fresh
    }

    /// `nr_free_pages()`
    pub(crate) fn nr_free_pages(&self) -> u64 {
        self.nr_free
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
    pub(crate) fn alloc_pages(&mut self, mem: &mut MemMap, order: u32) -> Option<Pfn> {
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
    pub(crate) fn free_pages(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32) {
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

impl FreeArea {
    /// `__zone_watermark_ok()` without the per-order free-list check (the
    /// buddy allocation itself fails when no block is large enough): the
    /// free pages left after taking `order` stay above `mark`.
    #[inline]
    pub(crate) fn watermark_ok(&self, order: u32, mark: u64) -> bool {
        self.nr_free.saturating_sub((1 << order) - 1) > mark
    }
}

impl<A: Arch> Kernel<A> {
    /// The machine's memory now, in the order of
    /// `foliosim_uapi::counters::MACHINE_LEVELS`: the one zone's
    /// `zone_managed_pages()` and `NR_FREE_PAGES`, and its
    /// `min_wmark_pages()`, `low_wmark_pages()`, `high_wmark_pages()`.
    pub fn machine_levels(&self) -> [u64; 5] {
        let w = self.buddy.wmark;
        [
            self.buddy.managed,
            self.buddy.nr_free_pages(),
            w.min,
            w.low,
            w.high,
        ]
    }

    /// `__alloc_pages()`: the fast path above the low watermark, then the
    /// slow path (min watermark, direct reclaim for order 0). `movable`:
    /// the gfp mask's highest zone is ZONE_MOVABLE (user folios) rather
    /// than ZONE_NORMAL (page tables), which names the allocstall counter.
    pub(crate) fn alloc_pages(&mut self, order: u32, movable: bool) -> Option<Pfn> {
        if !self.lru.root && self.cfg.lru_order_root {
            // Global reclaim scans the root's lists: keep them ordered from
            // the first allocation on.
            self.lru.enable(self.mem.nr_pages());
            self.lru.root = true;
        }
        // kswapd's turn while it is awake (mm/vmscan.rs: kswapd_run()).
        self.kswapd_run();
        let w = self.buddy.wmark;
        if self.buddy.watermark_ok(order, w.low) {
            if let Some(p) = self.buddy.alloc_pages(&mut self.mem, order) {
                return Some(p);
            }
        }
        self.alloc_pages_slowpath(order, movable)
    }

    /// `__alloc_pages_slowpath()` without compaction or the OOM killer.
    fn alloc_pages_slowpath(&mut self, order: u32, movable: bool) -> Option<Pfn> {
        // wake_all_kswapds(): order-0 allocations carry
        // __GFP_KSWAPD_RECLAIM; the model's large folios are THP and mTHP
        // faults outside MADV_HUGEPAGE (GFP_TRANSHUGE_LIGHT, which does not
        // wake kswapd) and readahead's (approximated: they would).
        if order == 0 {
            self.wakeup_kswapd();
        }
        let min = self.buddy.wmark.min;
        let mut no_progress_loops = 0;
        loop {
            if self.buddy.watermark_ok(order, min) {
                if let Some(p) = self.buddy.alloc_pages(&mut self.mem, order) {
                    return Some(p);
                }
            }
            if order > 0 {
                return None; // no __GFP_DIRECT_RECLAIM for large folios here
            }
            if !self.lru.root {
                crate::model_limit(
                    "global direct reclaim with the root LRU lists unordered (the engine \
                     judged that this scenario cannot run the machine out of memory)",
                );
            }
            // __alloc_pages_direct_reclaim() → __perform_reclaim()
            let progress = self.try_to_free_pages(movable);
            if progress > 0 {
                no_progress_loops = 0;
            } else {
                no_progress_loops += 1;
                if no_progress_loops > MAX_RECLAIM_RETRIES {
                    return None;
                }
            }
        }
    }
}
