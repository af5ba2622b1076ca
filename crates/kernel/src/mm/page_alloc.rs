//! The buddy allocator (mm/page_alloc.c: __rmqueue_smallest(), expand(),
//! __free_one_page()), one zone, no migratetypes, with per-CPU lists of
//! order-0 pages, the zone watermarks (calculate_min_free_kbytes(),
//! __setup_per_zone_wmarks()) and the allocation slow path's direct
//! reclaim (__alloc_pages_slowpath(), __alloc_pages_direct_reclaim(),
//! should_reclaim_retry()).
//!
//! Order-0 pages pass through the current CPU's list (`struct
//! per_cpu_pages`): an empty list is refilled from the buddy lists in a
//! batch that doubles on each refill without a free in between (up to 32
//! times `pcp->batch`, `nr_pcp_alloc()`), and a freed page goes to the
//! freeing CPU's list, which gives its oldest pages back once it holds
//! `pcp->high` (`free_frozen_page_commit()`, `nr_pcp_high()`: `high`
//! grows with refills while the zone is above its high watermark and
//! shrinks while it is below or kswapd reclaims). Pages on these lists
//! are not free for the watermarks, so a refill can take the free pages
//! far below the min watermark: the next allocation then reclaims, and
//! `throttle_direct_reclaim()` (mm/vmscan.rs) lets it wait for kswapd. The
//! periodic decay of `pcp->high` (`decay_pcp_high()`) and the lists of
//! orders 1-3 and of THPs are not modelled.
//!
//! An allocation takes the fast path while the free pages stay above the
//! low watermark (zone_watermark_fast()), else the slow path: it wakes
//! kswapd (`wakeup_kswapd()`, mm/vmscan.rs), retries at the min watermark
//! and then reclaims directly (`try_to_free_pages()`), draining every
//! CPU's list when reclaim made progress but the retry still fails
//! (`drain_all_pages()`), until the min watermark is met, or fails after
//! 16 attempts without progress (the OOM killer is not modelled: the fault
//! fails with VM_FAULT_OOM). While kswapd
//! is awake, each allocation first lets it catch up with the workload's
//! modelled time (`kswapd_run()`): the model's interleaving of kswapd with
//! the workload.
//! Only order-0 allocations reclaim: large folios fall back at once (as
//! THP and mTHP faults with the default defrag = madvise outside
//! MADV_HUGEPAGE; the kernel's compaction and reclaim for MADV_HUGEPAGE
//! VMAs and costly readahead orders are not modelled). Order-0 and
//! page-cache allocations of any order wake kswapd (`alloc_pages_gfp()`). All memory is one
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

/// `CONFIG_PCP_BATCH_SCALE_MAX`
const PCP_BATCH_SCALE_MAX: u32 = 5;
/// `MIN_PERCPU_PAGELIST_HIGH_FRACTION`
const MIN_PERCPU_PAGELIST_HIGH_FRACTION: u64 = 8;

/// A CPU's `struct per_cpu_pages` for order-0 pages.
#[derive(Debug, Default, Clone)]
struct Pcp {
    /// The list, its head at the front.
    list: std::collections::VecDeque<u32>,
    /// `pcp->high`
    high: u64,
    /// `pcp->alloc_factor`
    alloc_factor: u32,
    /// `pcp->free_count`
    free_count: u64,
}

/// The per-CPU lists' sizes, from the zone's managed pages, low
/// watermark and CPUs (`zone_batchsize()`, `zone_highsize()` as
/// `setup_per_zone_wmarks()` leaves them).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PcpSizes {
    pub batch: u64,
    pub high_min: u64,
    pub high_max: u64,
}

impl PcpSizes {
    pub(crate) fn new(managed: u64, low: u64, cpus: u64) -> PcpSizes {
        // zone_batchsize(): ~0.1% of the zone, at most 1 MiB, a quarter of
        // it rounded to 2^n - 1.
        let quarter = (managed >> 10).min((1 << 20) / PAGE_SIZE) / 4;
        let b = quarter.max(1);
        let batch = ((1u64 << (63 - (b + b / 2).leading_zeros())) - 1).max(1);
        // zone_highsize(): split across the node's CPUs, at least 4 batches.
        let cpus = cpus.max(1);
        let high = |total: u64| (total / cpus).max(batch << 2);
        PcpSizes {
            batch,
            high_min: high(low),
            high_max: high(managed / MIN_PERCPU_PAGELIST_HIGH_FRACTION),
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
    /// `machine.boot_used`), right after the zero page, then those the
    /// workload may not take (`machine.lowmem_reserve`).
    pub(crate) boot: std::ops::Range<u32>,
    /// The last pages of `boot`: free pages of the zones below the
    /// workload's that its allocations may not take
    /// (`machine.lowmem_reserve`). They count as free.
    pub(crate) lowmem: u64,
    /// Where the last partial cgroup walk of global direct reclaim stopped
    /// (the root's `mem_cgroup_reclaim_iter` position for the one node);
    /// None: the next walk starts at the root.
    pub(crate) reclaim_pos: Option<u16>,
    /// Each CPU's list of order-0 pages (`zone->per_cpu_pageset`).
    pcp: Vec<Pcp>,
    pub(crate) pcp_sizes: PcpSizes,
    /// `ZONE_BELOW_HIGH`: an allocation found the free pages at or below
    /// the high watermark; cleared by a free that finds them above.
    pub(crate) below_high: bool,
    /// `machine.pcp_list`: the pages the workload's CPU (0) finds on its
    /// list when the machine starts, taken from the buddy lists after the
    /// boot pages.
    boot_pcp: u64,
    /// `machine.kswapd_pcp_list`: the pages the next CPU's list (where
    /// kswapd runs) holds when the machine starts.
    boot_pcp_kswapd: u64,
    /// `ZONE_RECLAIM_ACTIVE`: kswapd is balancing the node, from
    /// `balance_pgdat()`'s start to its end (`set_reclaim_active()`,
    /// `clear_reclaim_active()` in mm/vmscan.rs; kswapd's own frees, made
    /// while its pass is taken out of `Kswapd::run`, see it set too).
    pub(crate) reclaim_active: bool,
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
            lowmem: 0,
            reclaim_pos: None,
            pcp: vec![Pcp::default()],
            pcp_sizes: PcpSizes::default(),
            below_high: false,
            boot_pcp: 0,
            boot_pcp_kswapd: 0,
            reclaim_active: false,
        }
    }

    /// Set the per-CPU lists up for `cpus` CPUs (`zone_pcp_update()`),
    /// giving whatever they hold back first.
    pub(crate) fn pcp_setup(&mut self, mem: &mut MemMap, cpus: usize) {
        self.drain_all_pages(mem);
        self.pcp = vec![Pcp::default(); cpus.max(1)];
        self.pcp_sizes = PcpSizes::new(self.managed, self.wmark.low, cpus as u64);
        self.rmqueue_bulk(mem, 0, self.boot_pcp);
        if self.pcp.len() > 1 {
            self.rmqueue_bulk(mem, 1, self.boot_pcp_kswapd);
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
        let used = cfg.machine_boot_used / PAGE_SIZE;
        // The CPUs' lists are part of the memory in use at boot.
        if cfg.machine_pcp_list + cfg.machine_kswapd_pcp_list > cfg.machine_boot_used {
            return Err(crate::KernelError::Unsupported(format!(
                "machine.pcp_list + machine.kswapd_pcp_list = {} KiB is more than \
                 machine.boot_used = {} KiB, which holds them",
                (cfg.machine_pcp_list + cfg.machine_kswapd_pcp_list) >> 10,
                cfg.machine_boot_used >> 10
            )));
        }
        self.boot_pcp = cfg.machine_pcp_list / PAGE_SIZE;
        self.boot_pcp_kswapd = cfg.machine_kswapd_pcp_list / PAGE_SIZE;
        // One zone: the lower zones' protected free pages are held with the
        // boot pages (__zone_watermark_ok() with the zone's lowmem_reserve
        // keeps movable allocations from them; setup_per_zone_lowmem_reserve()).
        self.lowmem = cfg.machine_lowmem_reserve / PAGE_SIZE;
        let n = unmanaged + used - self.boot_pcp - self.boot_pcp_kswapd + self.lowmem;
        let room = (16 << 20) / PAGE_SIZE;
        if n + room > self.nr_pages {
            return Err(crate::KernelError::Unsupported(format!(
                "machine.unmanaged + machine.boot_used + machine.lowmem_reserve = {} MiB \
                 leave less than 16 MiB of memory = {} MiB",
                (n * PAGE_SIZE) >> 20,
                (self.nr_pages * PAGE_SIZE) >> 20
            )));
        }
        let first = zero_pfn.0 + 1;
        for i in 0..n {
            let p = self
                .rmqueue_smallest(mem, 0)
                .expect("memory for the boot pages");
            debug_assert_eq!(p.0 as u64, first as u64 + i, "boot pages are contiguous");
        }
        self.boot = first..first + n as u32;
        self.managed = self.nr_pages - unmanaged;
        self.wmark = Watermarks::new(self.managed, cfg.min_free_kbytes);
        let cpus = self.pcp.len();
        self.pcp_setup(mem, cpus);
        Ok(())
    }

    /// Free pages in the never-used tail (not marked in the memory map).
    pub(crate) fn nr_fresh_pages(&self) -> u64 {
        self.nr_pages - self.fresh
    }

    /// `nr_free_pages()`: the pages on the buddy lists (not those on the
    /// per-CPU lists).
    pub(crate) fn nr_free_pages(&self) -> u64 {
        self.nr_free
    }

    /// The pages on the per-CPU lists.
    pub(crate) fn pcp_pages(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.pcp.iter().flat_map(|p| p.list.iter().map(|&p| Pfn(p)))
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

    /// `rmqueue()` on `cpu`: an order-0 page from its list
    /// (`rmqueue_pcplist()`), a larger block from the buddy lists; None if
    /// memory has none. The caller has checked the watermark.
    pub(crate) fn alloc_pages(&mut self, mem: &mut MemMap, order: u32, cpu: usize) -> Option<Pfn> {
        if order != 0 {
            return self.rmqueue_smallest(mem, order);
        }
        let cpu = cpu.min(self.pcp.len() - 1);
        self.pcp[cpu].free_count >>= 1;
        if self.pcp[cpu].list.is_empty() {
            // __rmqueue_pcplist(): refill the empty list.
            let batch = self.nr_pcp_alloc(cpu);
            self.rmqueue_bulk(mem, cpu, batch);
        }
        self.pcp[cpu].list.pop_front().map(Pfn)
    }

    /// `rmqueue_bulk()`: up to `n` order-0 pages from the buddy lists onto
    /// the tail of `cpu`'s list, in PFN order.
    fn rmqueue_bulk(&mut self, mem: &mut MemMap, cpu: usize, n: u64) {
        for _ in 0..n {
            let Some(p) = self.rmqueue_smallest(mem, 0) else {
                break;
            };
            self.pcp[cpu].list.push_back(p.0);
        }
    }

    /// `nr_pcp_alloc()` for order 0: how many pages the refill of `cpu`'s
    /// empty list takes.
    fn nr_pcp_alloc(&mut self, cpu: usize) -> u64 {
        let PcpSizes {
            batch: base,
            high_min,
            high_max,
        } = self.pcp_sizes;
        let below_high = self.below_high;
        let pcp = &mut self.pcp[cpu];
        let mut high = pcp.high.clamp(high_min, high_max);
        pcp.high = high;
        if high < base {
            return 1;
        }
        let mut batch = base << pcp.alloc_factor;
        if high_min != high_max && !below_high {
            high = (high + batch).min(high_max);
            pcp.high = high;
        }
        let count = pcp.list.len() as u64;
        let max_nr_alloc = high.saturating_sub(count + base).max(base);
        if batch <= max_nr_alloc && pcp.alloc_factor < PCP_BATCH_SCALE_MAX {
            pcp.alloc_factor += 1;
        }
        batch = batch.min(max_nr_alloc);
        if batch > 1 {
            batch = batch.max(2);
        }
        batch
    }

    /// `__rmqueue_smallest()` + `expand()`: a free block of `order` from the
    /// buddy lists, or None.
    pub(crate) fn rmqueue_smallest(&mut self, mem: &mut MemMap, order: u32) -> Option<Pfn> {
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

    /// Free a block on `cpu`: an order-0 page to its list
    /// (`free_frozen_page_commit()`), which gives pages back to the buddy
    /// lists once it holds `nr_pcp_high()`; a larger block to the buddy
    /// lists.
    pub(crate) fn free_pages(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32, cpu: usize) {
        if order != 0 {
            self.free_one_page(mem, pfn, order);
            return;
        }
        let cpu = cpu.min(self.pcp.len() - 1);
        let batch = self.pcp_sizes.batch;
        let pcp = &mut self.pcp[cpu];
        pcp.alloc_factor >>= 1;
        pcp.list.push_front(pfn.0);
        if pcp.free_count < batch << PCP_BATCH_SCALE_MAX {
            pcp.free_count += 1;
        }
        let high = self.nr_pcp_high(cpu);
        let pcp = &self.pcp[cpu];
        let count = pcp.list.len() as u64;
        if count < high {
            return;
        }
        // nr_pcp_free(): at least a batch, at most all but a batch of high.
        let n = if high < batch {
            1
        } else {
            pcp.free_count.max(batch).min(high - batch)
        };
        self.free_pcppages_bulk(mem, cpu, n);
        if self.below_high && self.watermark_ok(0, self.wmark.high) {
            self.below_high = false;
        }
    }

    /// `nr_pcp_high()` for an order-0 free on `cpu`: the count at which
    /// its list gives pages back; adjusts `pcp->high` as it goes.
    fn nr_pcp_high(&mut self, cpu: usize) -> u64 {
        let PcpSizes {
            batch,
            high_min,
            high_max,
        } = self.pcp_sizes;
        let pcp = &mut self.pcp[cpu];
        let high = pcp.high.clamp(high_min, high_max);
        pcp.high = high;
        if high == 0 {
            return 0;
        }
        let shrink = |pcp: &mut Pcp| {
            let free_count = pcp.free_count.max(batch);
            pcp.high = high.saturating_sub(free_count).max(high_min);
        };
        if self.reclaim_active {
            shrink(pcp);
            return (batch << 2).min(pcp.high);
        }
        if high_min == high_max {
            return high;
        }
        let count = pcp.list.len() as u64;
        if self.below_high {
            shrink(pcp);
            return count.max(high_min);
        }
        if count >= high {
            let need_high = pcp.free_count + batch;
            if pcp.high < need_high {
                pcp.high = need_high.clamp(high_min, high_max);
            }
        }
        high
    }

    /// `free_pcppages_bulk()`: give the `n` oldest pages of `cpu`'s list
    /// back to the buddy lists.
    fn free_pcppages_bulk(&mut self, mem: &mut MemMap, cpu: usize, n: u64) {
        for _ in 0..n {
            let Some(p) = self.pcp[cpu].list.pop_back() else {
                break;
            };
            self.free_one_page(mem, Pfn(p), 0);
        }
    }

    /// `drain_all_pages()`: every CPU's list back to the buddy lists.
    pub(crate) fn drain_all_pages(&mut self, mem: &mut MemMap) {
        for cpu in 0..self.pcp.len() {
            let n = self.pcp[cpu].list.len() as u64;
            self.free_pcppages_bulk(mem, cpu, n);
        }
    }

    /// `__free_one_page()`: return a block to the buddy lists and merge it
    /// with free buddies.
    pub(crate) fn free_one_page(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32) {
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
    /// `zone_managed_pages()` and `NR_FREE_PAGES` (with the lower zones'
    /// held back by `machine.lowmem_reserve`), and its
    /// `min_wmark_pages()`, `low_wmark_pages()`, `high_wmark_pages()`, and
    /// the pages on the per-CPU lists.
    pub fn machine_levels(&self) -> [u64; 6] {
        let w = self.buddy.wmark;
        [
            self.buddy.managed,
            self.buddy.nr_free_pages() + self.buddy.lowmem,
            w.min,
            w.low,
            w.high,
            self.buddy.pcp_pages().count() as u64,
        ]
    }

    /// `__alloc_pages()`: the fast path above the low watermark, then the
    /// slow path (min watermark, direct reclaim for order 0). `movable`:
    /// the gfp mask's highest zone is ZONE_MOVABLE (user folios) rather
    /// than ZONE_NORMAL (page tables), which names the allocstall counter.
    /// Order 0 wakes kswapd from the slow path.
    pub(crate) fn alloc_pages(&mut self, order: u32, movable: bool) -> Option<Pfn> {
        self.alloc_pages_gfp(order, movable, order == 0)
    }

    /// [`Self::alloc_pages`] with `kswapd`: whether the gfp mask has
    /// __GFP_KSWAPD_RECLAIM, so that the slow path wakes kswapd.
    pub(crate) fn alloc_pages_gfp(
        &mut self,
        order: u32,
        movable: bool,
        kswapd: bool,
    ) -> Option<Pfn> {
        if !self.lru.root && self.cfg.lru_order_root {
            // Global reclaim scans the root's lists: keep them ordered from
            // the first allocation on.
            self.lru.enable(self.mem.nr_pages());
            self.lru.root = true;
        }
        // kswapd's turn while it is awake (mm/vmscan.rs: kswapd_run()).
        self.kswapd_run();
        if let Some(p) = self.get_page_from_freelist(order, self.buddy.wmark.low) {
            return Some(p);
        }
        self.alloc_pages_slowpath(order, movable, kswapd)
    }

    /// `get_page_from_freelist()` for the one zone at watermark `mark`:
    /// notes whether the zone is below its high watermark
    /// (`ZONE_BELOW_HIGH`), then takes a block on the current CPU if the
    /// free pages stay above `mark`.
    fn get_page_from_freelist(&mut self, order: u32, mark: u64) -> Option<Pfn> {
        let cpu = self.cpus.current;
        if !self.buddy.below_high {
            if self.buddy.watermark_ok(order, self.buddy.wmark.high) {
                return self.buddy.alloc_pages(&mut self.mem, order, cpu);
            }
            self.buddy.below_high = true;
        }
        if !self.buddy.watermark_ok(order, mark) {
            return None;
        }
        self.buddy.alloc_pages(&mut self.mem, order, cpu)
    }

    /// Free a block the kernel allocated with [`Self::alloc_pages`] (or a
    /// page table's), on the current CPU.
    pub(crate) fn free_pages(&mut self, pfn: Pfn, order: u32) {
        let cpu = self.cpus.current;
        self.buddy.free_pages(&mut self.mem, pfn, order, cpu);
    }

    /// `__alloc_pages_slowpath()` without compaction or the OOM killer.
    fn alloc_pages_slowpath(&mut self, order: u32, movable: bool, kswapd: bool) -> Option<Pfn> {
        // wake_all_kswapds(). kswapd balances for order 0 whatever the
        // order that woke it (no high-order balancing, no kcompactd).
        if kswapd {
            self.wakeup_kswapd();
        }
        let min = self.buddy.wmark.min;
        let mut no_progress_loops = 0;
        loop {
            if let Some(p) = self.get_page_from_freelist(order, min) {
                return Some(p);
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
                // The retry in __alloc_pages_direct_reclaim(): once more
                // after draining the per-CPU lists.
                if let Some(p) = self.get_page_from_freelist(order, min) {
                    return Some(p);
                }
                self.buddy.drain_all_pages(&mut self.mem);
                if let Some(p) = self.get_page_from_freelist(order, min) {
                    return Some(p);
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64 MiB zone (16384 pages: min 256, low 320, high 384) with the
    /// per-CPU lists of 2 CPUs.
    fn zone() -> (MemMap, FreeArea) {
        let mut mem = MemMap::new(16384);
        let mut area = FreeArea::new(&mem);
        area.pcp_setup(&mut mem, 2);
        (mem, area)
    }

    /// `n` order-0 pages allocated on CPU 0.
    fn take(mem: &mut MemMap, area: &mut FreeArea, n: usize) -> Vec<Pfn> {
        (0..n)
            .map(|_| area.alloc_pages(mem, 0, 0).expect("memory"))
            .collect()
    }

    /// zone_batchsize(): min(managed >> 10, 256) / 4, then b + b / 2
    /// rounded down to a power of two, less one. zone_highsize(): the low
    /// watermark (high_min) or an eighth of the zone (high_max) split
    /// across the CPUs, at least 4 batches.
    /// * a 1 GiB guest's zone, 254,214 pages, low 1,245, 2 CPUs: 248 / 4 =
    ///   62, 62 + 31 = 93 → 64 - 1 = 63; 1,245 / 2 = 622; 31,776 / 2 =
    ///   15,888.
    /// * 64 MiB, low 320, 2 CPUs: 16 / 4 = 4, 4 + 2 = 6 → 3; 160; 1,024.
    /// * 16 GiB, low 5,120, 1 CPU: 256 / 4 = 64, 96 → 63; 5,120;
    ///   524,288.
    /// * 4 MiB (1024 pages): 1 / 4 = 0 → 1, 1 + 0 = 1 → 0 → at least 1;
    ///   high at least 4.
    #[test]
    fn pcp_sizes_follow_the_zone() {
        let s = |managed, low, cpus| {
            let p = PcpSizes::new(managed, low, cpus);
            (p.batch, p.high_min, p.high_max)
        };
        assert_eq!(s(254_214, 1_245, 2), (63, 622, 15_888));
        assert_eq!(s(16_384, 320, 2), (3, 160, 1_024));
        assert_eq!(s(4_194_304, 5_120, 1), (63, 5_120, 524_288));
        assert_eq!(s(1_024, 2, 1), (1, 4, 128));
    }

    /// nr_pcp_alloc(): an empty list is refilled with the batch shifted by
    /// `alloc_factor`, which grows by one per refill without a free in
    /// between, up to CONFIG_PCP_BATCH_SCALE_MAX (5): 3, 6, 12, 24, 48,
    /// then 96 each time (high, growing by each batch from 160, leaves
    /// room). The pages come in PFN order, and none is free meanwhile.
    #[test]
    fn refills_double_without_frees() {
        let (mut mem, mut area) = zone();
        let mut taken = Vec::new();
        let mut last = area.nr_free_pages();
        let mut prev: Option<Pfn> = None;
        for _ in 0..400 {
            let p = area.alloc_pages(&mut mem, 0, 0).expect("memory");
            if let Some(q) = prev {
                assert_eq!(p.0, q.0 + 1, "PFN order");
            }
            prev = Some(p);
            let now = area.nr_free_pages();
            if now != last {
                taken.push(last - now);
                last = now;
            }
        }
        assert_eq!(taken, [3, 6, 12, 24, 48, 96, 96, 96, 96]);
        assert_eq!(
            area.nr_free_pages() + area.pcp_pages().count() as u64 + 400,
            16384
        );
    }

    /// free_frozen_page_commit(): a freed page goes to the head of the
    /// freeing CPU's list, so that CPU's next allocation gets it back, and
    /// it halves `alloc_factor` (the next refill is smaller).
    #[test]
    fn a_freed_page_is_the_next_one_allocated() {
        let (mut mem, mut area) = zone();
        let pages = take(&mut mem, &mut area, 50);
        // 3 + 6 + 12 + 24 + 48 taken, 43 left on the list, factor 5.
        let free = area.nr_free_pages();
        area.free_pages(&mut mem, pages[7], 0, 0);
        assert_eq!(area.nr_free_pages(), free, "kept on the list");
        assert_eq!(area.alloc_pages(&mut mem, 0, 0), Some(pages[7]));
        assert_eq!(area.pcp[0].alloc_factor, 2);
    }

    /// nr_pcp_high() while kswapd reclaims (`ZONE_RECLAIM_ACTIVE`): a
    /// list keeps at most 4 batches (12 pages); at 12 it gives back
    /// nr_pcp_free() pages: `free_count` clamped to [batch, 12 - batch].
    /// 100 pages freed on CPU 1 (allocated on CPU 0): CPU 1's list never
    /// holds 12, and all but at most 11 go back to the buddy lists;
    /// drain_all_pages() returns the rest.
    #[test]
    fn reclaim_keeps_the_lists_short() {
        let (mut mem, mut area) = zone();
        let pages = take(&mut mem, &mut area, 100);
        area.reclaim_active = true;
        for &p in &pages {
            area.free_pages(&mut mem, p, 0, 1);
            assert!(area.pcp[1].list.len() < 12);
        }
        let on_lists = area.pcp_pages().count() as u64;
        assert_eq!(area.nr_free_pages() + on_lists, 16384);
        area.drain_all_pages(&mut mem);
        assert_eq!(area.nr_free_pages(), 16384);
        assert_eq!(area.pcp_pages().count(), 0);
    }
}
