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
use crate::include::linux::mm_types::{MemMap, PG_BUDDY, PG_LRU};
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
    /// A list per migratetype (`pcp->lists[]` of order 0), each with its
    /// head at the front.
    lists: [std::collections::VecDeque<u32>; MIGRATE_PCPTYPES],
    /// `pcp->high`
    high: u64,
    /// `pcp->alloc_factor`
    alloc_factor: u32,
    /// `pcp->free_count`
    free_count: u64,
}

impl Pcp {
    /// `pcp->count`: the pages on all its lists.
    fn count(&self) -> u64 {
        self.lists.iter().map(|l| l.len() as u64).sum()
    }
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

/// `MIGRATE_UNMOVABLE`, `MIGRATE_MOVABLE`, `MIGRATE_RECLAIMABLE`: the
/// migratetypes of pageblocks and of allocations (`gfp_migratetype()`:
/// user folios, the page cache and zsmalloc's pages are movable, page
/// tables and the kernel's own pages unmovable). The model has no
/// reclaimable allocations (slab) of its own; the machine can start with
/// reclaimable pageblocks.
pub(crate) const MIGRATE_UNMOVABLE: usize = 0;
pub(crate) const MIGRATE_MOVABLE: usize = 1;
pub(crate) const MIGRATE_RECLAIMABLE: usize = 2;
/// `MIGRATE_PCPTYPES`
const MIGRATE_PCPTYPES: usize = 3;
/// `MIGRATE_CMA`: the contiguous memory allocator's pageblocks, which only
/// movable allocations take (ALLOC_CMA) and no fallback claims or steals.
/// Its free pages go on the per-CPU lists as movable ones.
pub(crate) const MIGRATE_CMA: usize = 3;
/// The migratetypes with free lists: the per-CPU types and CMA.
const MIGRATE_TYPES: usize = 4;
/// `fallbacks[]`: where an allocation of each migratetype looks when its
/// own lists are empty, in order.
const FALLBACKS: [[usize; 2]; MIGRATE_PCPTYPES] = [
    [MIGRATE_RECLAIMABLE, MIGRATE_MOVABLE],
    [MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE],
    [MIGRATE_UNMOVABLE, MIGRATE_MOVABLE],
];
/// `pageblock_order`: the PMD order on x86_64 and arm64 with 4 KiB pages.
pub(crate) const PAGEBLOCK_ORDER: u32 = crate::include::linux::pgtable::HPAGE_PMD_ORDER;
/// `NR_PAGE_ORDERS`
const NR_ORDERS: usize = MAX_PAGE_ORDER as usize + 1;

/// `__rmqueue()`'s `enum rmqueue_mode`: where a bulk refill found pages
/// last, so that it does not search again for each page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RmqueueMode {
    Normal,
    Cma,
    Steal,
}

/// `struct free_area[]` of the single zone.
#[derive(Debug)]
pub(crate) struct FreeArea {
    /// A stack of free blocks per migratetype and order (index
    /// `mt * NR_ORDERS + order`); entries of blocks that merged, were
    /// taken or moved to another migratetype are left behind and skipped.
    stacks: Vec<Vec<u32>>,
    /// The free blocks on each list (`free_area[order].nr_free` per
    /// migratetype), exact; the never-allocated tail is not counted.
    nr_blocks: [[u32; NR_ORDERS]; MIGRATE_TYPES],
    /// Per migratetype, a bit per order whose list has a free block (the
    /// never-allocated tail not included).
    nonempty: [u16; MIGRATE_TYPES],
    /// Each pageblock's migratetype (`get_pageblock_migratetype()`); all
    /// movable at first (`memmap_init_range()`).
    pageblock_mt: Vec<u8>,
    nr_free: u64,
    nr_pages: u64,
    /// First PFN of the never-allocated tail of memory (all free, in
    /// `MAX_PAGE_ORDER` blocks of movable pageblocks, unmarked).
    fresh: u64,
    /// Where that tail ends: the CMA pageblocks, if any, lie above it.
    fresh_end: u64,
    /// The CMA pageblocks' pages (`machine.cma_blocks`), at the top of
    /// memory.
    cma_pages: u64,
    /// The zone's watermarks (`zone->_watermark[]`, without the boost).
    pub(crate) wmark: Watermarks,
    /// `zone->watermark_boost`: added to every watermark
    /// (`wmark_pages()`).
    pub(crate) boost: u64,
    /// `ZONE_BOOSTED_WATERMARK`: a fallback boosted the watermarks and
    /// kswapd is to be woken after the allocation.
    pub(crate) boosted_flag: bool,
    /// `watermark_boost_factor`
    boost_factor: u64,
    /// Allocations served from another migratetype's pageblock since the
    /// caller last counted them (`trace_mm_page_alloc_extfrag()`).
    pub(crate) extfrag: u64,
    /// `zone_managed_pages()`: all pages but `machine.unmanaged`.
    pub(crate) managed: u64,
    /// The PFNs the kernel holds from boot (`machine.unmanaged` and
    /// `machine.boot_used`), right after the zero page, then those the
    /// workload may not take (`machine.lowmem_reserve`). The free blocks of
    /// the unmovable and reclaimable pageblocks (`machine.free_unmovable`,
    /// `machine.free_reclaimable`) lie among them: a page of the range
    /// with no flags is the kernel's.
    pub(crate) boot: std::ops::Range<u32>,
    /// The last pages of `boot`: free pages of the zones below the
    /// workload's that its allocations may not take
    /// (`machine.lowmem_reserve`). They count as free.
    pub(crate) lowmem: u64,
    /// Free blocks were laid among the boot pages.
    pub(crate) boot_holes: bool,
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
    /// `machine.pcp_high`, `machine.kswapd_pcp_high`: those two lists'
    /// `pcp->high` at the start (0: unknown, left to the first use's
    /// clamp to `high_min`).
    boot_pcp_high: [u64; 2],
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
        FreeArea {
            stacks: vec![Vec::new(); MIGRATE_TYPES * NR_ORDERS],
            nr_blocks: [[0; NR_ORDERS]; MIGRATE_TYPES],
            nonempty: [0; MIGRATE_TYPES],
            pageblock_mt: vec![MIGRATE_MOVABLE as u8; (nr_pages >> PAGEBLOCK_ORDER) as usize],
            nr_free: nr_pages,
            nr_pages,
            fresh: 0,
            fresh_end: nr_pages,
            cma_pages: 0,
            wmark: Watermarks::new(nr_pages, 0),
            boost: 0,
            boosted_flag: false,
            boost_factor: 0,
            extfrag: 0,
            managed: nr_pages,
            boot: 0..0,
            lowmem: 0,
            boot_holes: false,
            reclaim_pos: None,
            pcp: vec![Pcp::default()],
            pcp_sizes: PcpSizes::default(),
            below_high: false,
            boot_pcp: 0,
            boot_pcp_kswapd: 0,
            boot_pcp_high: [0; 2],
            reclaim_active: false,
        }
    }

    /// Set the per-CPU lists up for `cpus` CPUs (`zone_pcp_update()`),
    /// giving whatever they hold back first; the workload's CPU's and
    /// kswapd's start with the pages and `pcp->high` the machine knobs
    /// give them.
    pub(crate) fn pcp_setup(&mut self, mem: &mut MemMap, cpus: usize) {
        self.drain_all_pages(mem);
        self.pcp = vec![Pcp::default(); cpus.max(1)];
        self.pcp_sizes = PcpSizes::new(self.managed, self.wmark.low, cpus as u64);
        self.rmqueue_bulk(mem, 0, self.boot_pcp, MIGRATE_MOVABLE, false);
        if self.pcp.len() > 1 {
            self.rmqueue_bulk(mem, 1, self.boot_pcp_kswapd, MIGRATE_MOVABLE, false);
        }
        for (pcp, high) in self.pcp.iter_mut().zip(self.boot_pcp_high) {
            pcp.high = high;
        }
    }

    /// The machine's own memory: take `machine.unmanaged` and
    /// `machine.boot_used` from the allocator at boot (the pages right after
    /// the zero page: allocations walk memory upwards), give the first
    /// pageblocks their migratetypes (`machine.unmovable_blocks`,
    /// `machine.reclaimable_blocks`) and free blocks (`machine.free_*`),
    /// and set the watermarks from the managed pages and `min_free_kbytes`.
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
        self.boot_pcp_high = [cfg.machine_pcp_high, cfg.machine_kswapd_pcp_high];
        self.boost_factor = cfg.watermark_boost_factor;
        // One zone: the lower zones' protected free pages are held with the
        // boot pages (__zone_watermark_ok() with the zone's lowmem_reserve
        // keeps movable allocations from them; setup_per_zone_lowmem_reserve()).
        self.lowmem = cfg.machine_lowmem_reserve / PAGE_SIZE;
        let holes = cfg.machine_free_unmovable.pages() + cfg.machine_free_reclaimable.pages();
        self.boot_holes = holes > 0;
        let n = unmanaged + used - self.boot_pcp - self.boot_pcp_kswapd + self.lowmem + holes;
        let room = (16 << 20) / PAGE_SIZE;
        let cma = cfg.machine_cma_blocks << PAGEBLOCK_ORDER;
        if n + room + cma > self.nr_pages && cma > 0 {
            return Err(crate::KernelError::Unsupported(format!(
                "machine.cma_blocks: {} pageblocks ({} MiB) of CMA leave less than 16 MiB \
                 of the {} MiB of memory besides the kernel's at boot",
                cfg.machine_cma_blocks,
                (cma * PAGE_SIZE) >> 20,
                (self.nr_pages * PAGE_SIZE) >> 20
            )));
        }
        if n + room > self.nr_pages {
            return Err(crate::KernelError::Unsupported(format!(
                "machine.unmanaged + machine.boot_used + machine.lowmem_reserve + the free \
                 blocks of machine.free_unmovable and machine.free_reclaimable = {} MiB \
                 leave less than 16 MiB of memory = {} MiB",
                (n * PAGE_SIZE) >> 20,
                (self.nr_pages * PAGE_SIZE) >> 20
            )));
        }
        self.reserve_cma(mem, cma);
        let first = zero_pfn.0 + 1;
        for i in 0..n {
            let p = self
                .rmqueue_smallest(mem, 0, MIGRATE_MOVABLE)
                .expect("memory for the boot pages");
            debug_assert_eq!(p.0 as u64, first as u64 + i, "boot pages are contiguous");
        }
        self.boot = first..first + n as u32;
        self.layout_boot_blocks(mem, cfg)?;
        self.managed = self.nr_pages - unmanaged;
        self.wmark = Watermarks::new(self.managed, cfg.min_free_kbytes);
        let cpus = self.pcp.len();
        self.pcp_setup(mem, cpus);
        Ok(())
    }

    /// The unmovable, then the reclaimable pageblocks at the start of
    /// memory, and their free blocks, freed among the boot pages: the
    /// largest first, one to a pageblock in turn, each the upper half of
    /// an aligned block twice its size (the lower half stays the kernel's,
    /// so that no two merge). Where the pageblocks are full, the next
    /// pageblock of the boot pages joins them; a free block of the
    /// pageblock order or more takes pageblocks of its own. The kernel's
    /// own layout is not known; this one spreads the free blocks over the
    /// pageblocks as boot-time frees leave them.
    fn layout_boot_blocks(&mut self, mem: &mut MemMap, cfg: &crate::Config) -> crate::KResult<()> {
        let whole = (self.boot.end >> PAGEBLOCK_ORDER) as usize;
        let boot_start = self.boot.start as u64;
        let kinds = [
            (
                MIGRATE_UNMOVABLE,
                cfg.machine_unmovable_blocks,
                &cfg.machine_free_unmovable,
                "unmovable",
            ),
            (
                MIGRATE_RECLAIMABLE,
                cfg.machine_reclaimable_blocks,
                &cfg.machine_free_reclaimable,
                "reclaimable",
            ),
        ];
        let mut next_block = 0usize;
        for (mt, count, free, name) in kinds {
            let start = next_block;
            // Each pageblock of the type: where its free blocks go next,
            // below `top`, above the zero page.
            let mut top: Vec<u64> = Vec::new();
            let grow = |pmt: &mut [u8], top: &mut Vec<u64>, next_block: &mut usize| -> bool {
                if *next_block >= whole {
                    return false;
                }
                pmt[*next_block] = mt as u8;
                *next_block += 1;
                top.push((*next_block as u64) << PAGEBLOCK_ORDER);
                true
            };
            while (top.len() as u64) < count
                && grow(&mut self.pageblock_mt, &mut top, &mut next_block)
            {}
            let low = |b: usize| (((start + b) as u64) << PAGEBLOCK_ORDER).max(boot_start);
            let fail = || {
                crate::KernelError::Unsupported(format!(
                    "machine.free_{name}: the free blocks do not fit among the kernel's \
                     memory at boot ({whole} whole pageblocks, with machine.boot_used and \
                     the other free blocks)"
                ))
            };
            let mut turn = 0usize;
            for order in (0..NR_ORDERS as u32).rev() {
                let slot = 2u64 << order;
                // Where in pageblock `b` the next slot would start, if it fits.
                let fits = |top: &[u64], b: usize| {
                    let at = top[b].checked_sub(slot).map(|a| a & !(slot - 1));
                    at.filter(|&a| a >= low(b))
                };
                for _ in 0..free.0[order as usize] {
                    let a = if order >= PAGEBLOCK_ORDER {
                        // Pageblocks of its own, aligned; those of the free
                        // upper half take no small block.
                        let blocks = 1usize << (order + 1 - PAGEBLOCK_ORDER);
                        while !next_block.is_multiple_of(blocks) {
                            if !grow(&mut self.pageblock_mt, &mut top, &mut next_block) {
                                return Err(fail());
                            }
                        }
                        for _ in 0..blocks {
                            if !grow(&mut self.pageblock_mt, &mut top, &mut next_block) {
                                return Err(fail());
                            }
                        }
                        let n = top.len();
                        for (i, t) in top[n - blocks / 2..].iter_mut().enumerate() {
                            *t = ((next_block - blocks / 2 + i) as u64) << PAGEBLOCK_ORDER;
                        }
                        ((next_block - blocks) as u64) << PAGEBLOCK_ORDER
                    } else {
                        let found = loop {
                            let n = top.len();
                            let hit = (0..n)
                                .map(|i| (turn + i) % n)
                                .find(|&b| fits(&top, b).is_some());
                            if let Some(b) = hit {
                                turn = (b + 1) % n;
                                break fits(&top, b).map(|a| (b, a));
                            }
                            if !grow(&mut self.pageblock_mt, &mut top, &mut next_block) {
                                break None;
                            }
                        };
                        let (b, a) = found.ok_or_else(fail)?;
                        top[b] = a;
                        a
                    };
                    self.free_one_page(mem, Pfn((a + (slot >> 1)) as u32), order);
                }
            }
        }
        Ok(())
    }

    /// The top `pages` of memory (whole pageblocks) become CMA pageblocks,
    /// free on the CMA lists (`init_cma_reserved_pageblock()`: arm64 places
    /// its default area at the top of the DMA zone, which is the top of a
    /// QEMU guest's memory); the never-allocated tail ends below them.
    fn reserve_cma(&mut self, mem: &mut MemMap, pages: u64) {
        if pages == 0 {
            return;
        }
        let start = self.nr_pages - pages;
        let first = (start >> PAGEBLOCK_ORDER) as usize;
        self.pageblock_mt[first..].fill(MIGRATE_CMA as u8);
        self.cma_pages = pages;
        // The tail ends on a MAX_PAGE_ORDER boundary; a movable pageblock
        // between it and the CMA area goes on the movable list.
        self.fresh_end = start & !((1 << MAX_PAGE_ORDER) - 1);
        if self.fresh_end < start {
            self.push(
                mem,
                Pfn(self.fresh_end as u32),
                MIGRATE_MOVABLE,
                PAGEBLOCK_ORDER,
            );
        }
        let mut pfn = start;
        while pfn < self.nr_pages {
            let order = (pfn.trailing_zeros()).min(MAX_PAGE_ORDER);
            self.push(mem, Pfn(pfn as u32), MIGRATE_CMA, order);
            pfn += 1 << order;
        }
    }

    /// The migratetype of the pageblock holding `pfn`.
    #[inline]
    fn block_mt(&self, pfn: u32) -> usize {
        self.pageblock_mt[(pfn >> PAGEBLOCK_ORDER) as usize] as usize
    }

    /// Whether an allocation of `mt` may take CMA pageblocks on this
    /// machine: ALLOC_CMA, which `gfp_to_alloc_flags_cma()` gives movable
    /// allocations, and pageblocks to take.
    #[inline]
    fn alloc_cma(&self, mt: usize) -> bool {
        mt == MIGRATE_MOVABLE && self.cma_pages > 0
    }

    /// `NR_FREE_CMA_PAGES`: the free pages on the CMA lists (none without
    /// CMA pageblocks; counted from the lists, which only machines with
    /// CMA need).
    #[inline(never)]
    pub(crate) fn nr_free_cma(&self) -> u64 {
        self.nr_blocks[MIGRATE_CMA]
            .iter()
            .enumerate()
            .map(|(order, &n)| (n as u64) << order)
            .sum()
    }

    /// Free pages in the never-used tail (not marked in the memory map).
    pub(crate) fn nr_fresh_pages(&self) -> u64 {
        self.fresh_end - self.fresh
    }

    /// The never-allocated tail: free, unmarked in the memory map.
    pub(crate) fn fresh_range(&self) -> std::ops::Range<u64> {
        self.fresh..self.fresh_end
    }

    /// `nr_free_pages()`: the pages on the buddy lists (not those on the
    /// per-CPU lists).
    pub(crate) fn nr_free_pages(&self) -> u64 {
        self.nr_free
    }

    /// The pages on the per-CPU lists.
    pub(crate) fn pcp_pages(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.pcp
            .iter()
            .flat_map(|p| p.lists.iter().flat_map(|l| l.iter().map(|&p| Pfn(p))))
    }

    /// Whether `pfn` is one of the kernel's own pages from boot.
    pub(crate) fn is_boot_page(&self, mem: &MemMap, pfn: Pfn) -> bool {
        self.boot.contains(&pfn.0) && (!self.boot_holes || mem.flags(pfn) == 0)
    }

    /// `wmark_pages()`: the watermarks with the boost.
    #[inline]
    pub(crate) fn marks(&self) -> Watermarks {
        Watermarks {
            min: self.wmark.min + self.boost,
            low: self.wmark.low + self.boost,
            high: self.wmark.high + self.boost,
        }
    }

    /// Whether the never-allocated tail gives `mt` a free block of the
    /// largest order (it is movable pageblocks).
    #[inline]
    fn fresh_for(&self, mt: usize) -> bool {
        mt == MIGRATE_MOVABLE && self.fresh < self.fresh_end
    }

    /// A bit per order whose list of `mt` has a free block, the
    /// never-allocated tail included.
    #[inline]
    fn free_orders(&self, mt: usize) -> u32 {
        u32::from(self.nonempty[mt]) | (u32::from(self.fresh_for(mt)) << MAX_PAGE_ORDER)
    }

    /// Whether the list of `mt` and `order` has a free block.
    #[inline]
    fn has_free(&self, mt: usize, order: u32) -> bool {
        self.free_orders(mt) & (1 << order) != 0
    }

    /// `get_page_from_free_area()`: the block at the head of the list of
    /// `mt` and `order`, left on it; the never-allocated tail's next block
    /// after the movable list's own.
    #[inline]
    fn peek(&mut self, mem: &MemMap, mt: usize, order: u32) -> Option<Pfn> {
        let i = mt * NR_ORDERS + order as usize;
        while let Some(&p) = self.stacks[i].last() {
            if mem.is_buddy(Pfn(p), order) && self.block_mt(p) == mt {
                return Some(Pfn(p));
            }
            self.stacks[i].pop();
        }
        (order == MAX_PAGE_ORDER && self.fresh_for(mt)).then_some(Pfn(self.fresh as u32))
    }

    /// `del_page_from_free_list()`: take the block `pfn` that [`Self::peek`]
    /// found off its list.
    #[inline]
    fn take(&mut self, mem: &mut MemMap, pfn: Pfn, mt: usize, order: u32) {
        // (At the tail's end lie the CMA pageblocks, or a movable one.)
        if pfn.0 as u64 == self.fresh && self.fresh < self.fresh_end {
            self.fresh += 1 << MAX_PAGE_ORDER;
        } else {
            self.stacks[mt * NR_ORDERS + order as usize].pop();
            self.dec_blocks(mt, order);
            mem.clear_buddy(pfn);
        }
    }

    /// `__add_to_free_list()`: `pfn` becomes a free block of `order` on
    /// the list of `mt`.
    #[inline]
    fn push(&mut self, mem: &mut MemMap, pfn: Pfn, mt: usize, order: u32) {
        mem.set_buddy(pfn, order);
        self.stacks[mt * NR_ORDERS + order as usize].push(pfn.0);
        self.nr_blocks[mt][order as usize] += 1;
        self.nonempty[mt] |= 1 << order;
    }

    /// One free block fewer on the list of `mt` and `order`. A list left
    /// empty drops its stack: every entry left is stale.
    #[inline]
    fn dec_blocks(&mut self, mt: usize, order: u32) {
        let n = &mut self.nr_blocks[mt][order as usize];
        *n -= 1;
        if *n == 0 {
            self.nonempty[mt] &= !(1 << order);
            self.stacks[mt * NR_ORDERS + order as usize].clear();
        }
    }

    /// `page_del_and_expand()`: take the block `pfn` of order `high` off
    /// the list of `from`, keep its first `2^low` pages and put the rest on
    /// the lists of `to` (the block's pageblocks are `to`'s by now).
    #[inline]
    fn page_del_and_expand(
        &mut self,
        mem: &mut MemMap,
        pfn: Pfn,
        low: u32,
        high: u32,
        from: usize,
        to: usize,
    ) {
        self.take(mem, pfn, from, high);
        self.expand(mem, pfn, low, high, to);
        self.nr_free -= 1 << low;
    }

    /// `expand()`: of the block `pfn` of order `high`, keep the first
    /// `2^low` pages and put the upper halves on the lists of `mt`.
    #[inline]
    fn expand(&mut self, mem: &mut MemMap, pfn: Pfn, low: u32, high: u32, mt: usize) {
        let mut cur = high;
        while cur > low {
            cur -= 1;
            self.push(mem, pfn.plus(1 << cur), mt, cur);
        }
    }

    /// `rmqueue()` on `cpu`: an order-0 page from its list of `mt`
    /// (`rmqueue_pcplist()`), a larger block from the buddy lists
    /// (`rmqueue_buddy()`); None if memory has none. `kswapd`: the
    /// allocation may wake kswapd (ALLOC_KSWAPD), so that a watermark
    /// boost sets `ZONE_BOOSTED_WATERMARK`. The caller has checked the
    /// watermark.
    pub(crate) fn alloc_pages(
        &mut self,
        mem: &mut MemMap,
        order: u32,
        mt: usize,
        cpu: usize,
        kswapd: bool,
    ) -> Option<Pfn> {
        if order != 0 {
            let mut mode = RmqueueMode::Normal;
            return self.rmqueue(mem, order, mt, kswapd, &mut mode);
        }
        let cpu = cpu.min(self.pcp.len() - 1);
        self.pcp[cpu].free_count >>= 1;
        if self.pcp[cpu].lists[mt].is_empty() {
            // __rmqueue_pcplist(): refill the empty list.
            let batch = self.nr_pcp_alloc(cpu);
            self.rmqueue_bulk(mem, cpu, batch, mt, kswapd);
        }
        self.pcp[cpu].lists[mt].pop_front().map(Pfn)
    }

    /// `rmqueue_bulk()`: up to `n` order-0 pages for `mt` from the buddy
    /// lists onto the tail of `cpu`'s list of `mt`, in the order found:
    /// from `mt`'s own lists a block at a time
    /// ([`Self::rmqueue_smallest_order0`]), then page by page through the
    /// fallbacks.
    fn rmqueue_bulk(&mut self, mem: &mut MemMap, cpu: usize, n: u64, mt: usize, kswapd: bool) {
        let mut left = n;
        // With CMA pageblocks each movable page first weighs the CMA
        // lists against the others (`__rmqueue()`): page by page.
        while left > 0 && !self.alloc_cma(mt) {
            match self.rmqueue_smallest_order0(mem, cpu, left, mt) {
                0 => break,
                nr => left -= nr,
            }
        }
        let mut mode = RmqueueMode::Normal;
        for _ in 0..left {
            let Some(p) = self.rmqueue(mem, 0, mt, kswapd, &mut mode) else {
                break;
            };
            self.pcp[cpu].lists[mt].push_back(p.0);
        }
    }

    /// `__rmqueue()`: a block of `order` from the lists of `mt` (for a
    /// movable allocation on a machine with CMA pageblocks, from the CMA
    /// lists first while they hold more than half the free pages, and
    /// after `mt`'s own), else one claimed from another migratetype
    /// (`__rmqueue_claim()`), else one stolen (`__rmqueue_steal()`; the
    /// model's zone is never the Normal zone of a machine with DMA32, so
    /// ALLOC_NOFRAGMENT never holds). `mode` carries where a bulk refill
    /// found pages last (`enum rmqueue_mode`).
    #[inline]
    fn rmqueue(
        &mut self,
        mem: &mut MemMap,
        order: u32,
        mt: usize,
        kswapd: bool,
        mode: &mut RmqueueMode,
    ) -> Option<Pfn> {
        // ALLOC_CMA: a movable allocation takes from the CMA lists first
        // while they hold more than half the free pages, and after its own.
        let alloc_cma = self.alloc_cma(mt);
        if alloc_cma && self.nr_free_cma() > self.nr_free / 2 {
            if let Some(p) = self.rmqueue_smallest(mem, order, MIGRATE_CMA) {
                return Some(p);
            }
        }
        if *mode == RmqueueMode::Normal {
            if let Some(p) = self.rmqueue_smallest(mem, order, mt) {
                return Some(p);
            }
        }
        if alloc_cma && *mode != RmqueueMode::Steal {
            if let Some(p) = self.rmqueue_smallest(mem, order, MIGRATE_CMA) {
                *mode = RmqueueMode::Cma;
                return Some(p);
            }
        }
        if *mode != RmqueueMode::Steal {
            if let Some(p) = self.rmqueue_claim(mem, order, mt, kswapd) {
                *mode = RmqueueMode::Normal;
                self.extfrag += 1;
                return Some(p);
            }
        }
        let p = self.rmqueue_steal(mem, order, mt)?;
        *mode = RmqueueMode::Steal;
        self.extfrag += 1;
        Some(p)
    }

    /// `__rmqueue_smallest()` + `expand()`: a free block of `order` from
    /// the lists of `mt`, or None.
    pub(crate) fn rmqueue_smallest(
        &mut self,
        mem: &mut MemMap,
        order: u32,
        mt: usize,
    ) -> Option<Pfn> {
        let orders = self.free_orders(mt) >> order << order;
        if orders == 0 {
            return None;
        }
        let cur = orders.trailing_zeros();
        let pfn = self.peek(mem, mt, cur).expect("a counted free block");
        self.page_del_and_expand(mem, pfn, order, cur, mt, mt);
        Some(pfn)
    }

    /// `__rmqueue_smallest()` + `expand()` for order 0, repeated up to `n`
    /// times while the pages come from the one free block the first call
    /// finds: they go onto the tail of `cpu`'s list of `mt`. Returns how
    /// many (0: `mt`'s lists are empty).
    ///
    /// Every list of `mt` below the block's order is empty (its order is
    /// the smallest with a free block), so each call splits the lowest
    /// piece left of the block: the pages come in address order, each page
    /// after the first was a free block once and is cleared as taken, and
    /// the block's rest is left as its aligned pieces, one per order. The
    /// free lists, counts and memory map end as after the calls one by one.
    fn rmqueue_smallest_order0(&mut self, mem: &mut MemMap, cpu: usize, n: u64, mt: usize) -> u64 {
        let orders = self.free_orders(mt);
        if orders == 0 {
            return 0;
        }
        let cur = orders.trailing_zeros();
        let pfn = self.peek(mem, mt, cur).expect("a counted free block");
        self.take(mem, pfn, mt, cur);
        let nr = n.min(1 << cur);
        for i in 1..nr {
            mem.clear_buddy(pfn.plus(i));
        }
        let mut off = nr;
        while off < 1 << cur {
            let order = off.trailing_zeros();
            self.push(mem, pfn.plus(off), mt, order);
            off += 1 << order;
        }
        self.nr_free -= nr;
        self.pcp[cpu].lists[mt].extend(pfn.0..pfn.0 + nr as u32);
        nr
    }

    /// `find_suitable_fallback()`: the first migratetype `mt` falls back
    /// to that has a free block of `order`.
    fn find_suitable_fallback(&self, order: u32, mt: usize) -> Option<usize> {
        FALLBACKS[mt].into_iter().find(|&f| self.has_free(f, order))
    }

    /// `__rmqueue_claim()`: from the largest order down to
    /// `should_try_claim_block()`'s limit (half the pageblock order for a
    /// movable allocation, any order for the others), the first free block
    /// of a fallback migratetype whose pageblock `try_to_claim_block()`
    /// can claim.
    fn rmqueue_claim(
        &mut self,
        mem: &mut MemMap,
        order: u32,
        mt: usize,
        kswapd: bool,
    ) -> Option<Pfn> {
        for cur in (order..=MAX_PAGE_ORDER).rev() {
            let claimable = cur >= PAGEBLOCK_ORDER / 2 || mt != MIGRATE_MOVABLE;
            if !claimable {
                break;
            }
            let Some(fallback) = self.find_suitable_fallback(cur, mt) else {
                continue;
            };
            let Some(pfn) = self.peek(mem, fallback, cur) else {
                continue;
            };
            if let Some(p) = self.try_to_claim_block(mem, pfn, cur, order, mt, fallback, kswapd) {
                return Some(p);
            }
        }
        None
    }

    /// `try_to_claim_block()`: a free block of a pageblock order or more
    /// becomes `start`'s whole; below it, the watermarks are boosted
    /// (`boost_watermark()`), and the pageblock changes type if at least
    /// half of it is free or, for a movable allocation, free or movable
    /// (`prep_move_freepages_block()`: LRU pages and pages with movable
    /// ops, zsmalloc's).
    #[allow(clippy::too_many_arguments)]
    fn try_to_claim_block(
        &mut self,
        mem: &mut MemMap,
        pfn: Pfn,
        cur: u32,
        order: u32,
        start: usize,
        block_type: usize,
        kswapd: bool,
    ) -> Option<Pfn> {
        if cur >= PAGEBLOCK_ORDER {
            // change_pageblock_range()
            let first = (pfn.0 >> PAGEBLOCK_ORDER) as usize;
            self.pageblock_mt[first..first + (1 << (cur - PAGEBLOCK_ORDER))].fill(start as u8);
            self.page_del_and_expand(mem, pfn, order, cur, block_type, start);
            return Some(pfn);
        }
        if self.boost_watermark() && kswapd {
            self.boosted_flag = true;
        }
        let start_pfn = pfn.0 & !((1 << PAGEBLOCK_ORDER) - 1);
        let end = start_pfn + (1 << PAGEBLOCK_ORDER);
        let (mut free, mut movable) = (0u64, 0u64);
        let mut p = start_pfn;
        while p < end {
            let f = mem.flags(Pfn(p));
            if f & PG_BUDDY != 0 {
                let nr = 1u32 << mem.order(Pfn(p));
                free += nr as u64;
                p += nr;
                continue;
            }
            if mem.test(mem.page_folio(Pfn(p)), PG_LRU) || mem.has_movable_ops(Pfn(p)) {
                movable += 1;
            }
            p += 1;
        }
        let alike = if start == MIGRATE_MOVABLE {
            movable
        } else if block_type == MIGRATE_MOVABLE {
            (1 << PAGEBLOCK_ORDER) - (free + movable)
        } else {
            0
        };
        if free + alike < 1 << (PAGEBLOCK_ORDER - 1) {
            return None;
        }
        self.move_freepages_block(mem, start_pfn, block_type, start);
        self.pageblock_mt[(start_pfn >> PAGEBLOCK_ORDER) as usize] = start as u8;
        self.rmqueue_smallest(mem, order, start)
    }

    /// `__move_freepages_block()`: the free blocks of the pageblock at
    /// `start_pfn` move from the lists of `old` to those of `new`.
    fn move_freepages_block(&mut self, mem: &mut MemMap, start_pfn: u32, old: usize, new: usize) {
        let end = start_pfn + (1 << PAGEBLOCK_ORDER);
        let mut p = start_pfn;
        while p < end {
            if !mem.test(Pfn(p), PG_BUDDY) {
                p += 1;
                continue;
            }
            let order = mem.order(Pfn(p));
            // The old list's entry is skipped once the pageblock's type
            // has changed.
            self.dec_blocks(old, order);
            self.push(mem, Pfn(p), new, order);
            p += 1 << order;
        }
    }

    /// `__rmqueue_steal()`: the smallest free block of a fallback
    /// migratetype at `order` or above, split on its own lists; its
    /// pageblock keeps its type.
    fn rmqueue_steal(&mut self, mem: &mut MemMap, order: u32, mt: usize) -> Option<Pfn> {
        for cur in order..=MAX_PAGE_ORDER {
            let Some(fallback) = self.find_suitable_fallback(cur, mt) else {
                continue;
            };
            let Some(pfn) = self.peek(mem, fallback, cur) else {
                continue;
            };
            self.page_del_and_expand(mem, pfn, order, cur, fallback, fallback);
            return Some(pfn);
        }
        None
    }

    /// `boost_watermark()`: raise the watermarks by a pageblock, up to
    /// `watermark_boost_factor` / 10,000 of the high watermark (at least a
    /// pageblock); not in a zone of fewer than four pageblocks, nor while
    /// the high watermark is unset. True if boosted.
    fn boost_watermark(&mut self) -> bool {
        let pageblock = 1u64 << PAGEBLOCK_ORDER;
        if self.boost_factor == 0 || pageblock * 4 > self.managed {
            return false;
        }
        let max_boost = self.wmark.high * self.boost_factor / 10_000;
        if max_boost == 0 {
            return false;
        }
        let max_boost = max_boost.max(pageblock);
        self.boost = (self.boost + pageblock).min(max_boost);
        true
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
        let count = pcp.count();
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

    /// Free a block on `cpu`: an order-0 page to its list of the page's
    /// pageblock migratetype (`free_frozen_page_commit()`), which gives
    /// pages back to the buddy lists once it holds `nr_pcp_high()`; a
    /// larger block to the buddy lists.
    pub(crate) fn free_pages(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32, cpu: usize) {
        if order != 0 {
            self.free_one_page(mem, pfn, order);
            return;
        }
        let cpu = cpu.min(self.pcp.len() - 1);
        let batch = self.pcp_sizes.batch;
        // free_frozen_page_commit(): a CMA page goes on the movable list.
        let mt = match self.block_mt(pfn.0) {
            MIGRATE_CMA => MIGRATE_MOVABLE,
            mt => mt,
        };
        let pcp = &mut self.pcp[cpu];
        pcp.alloc_factor >>= 1;
        pcp.lists[mt].push_front(pfn.0);
        if pcp.free_count < batch << PCP_BATCH_SCALE_MAX {
            pcp.free_count += 1;
        }
        let high = self.nr_pcp_high(cpu);
        let count = self.pcp[cpu].count();
        if count < high {
            return;
        }
        // nr_pcp_free(): at least a batch, at most all but a batch of high.
        let n = if high < batch {
            1
        } else {
            self.pcp[cpu].free_count.max(batch).min(high - batch)
        };
        self.free_pcppages_bulk(mem, cpu, n, mt);
        if self.below_high && self.watermark_ok(0, self.marks().high, false) {
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
        let count = pcp.count();
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

    /// `free_pcppages_bulk()`: give `n` pages of `cpu`'s lists back to the
    /// buddy lists, the oldest first, from the list of `first` on and then
    /// the others in turn.
    fn free_pcppages_bulk(&mut self, mem: &mut MemMap, cpu: usize, n: u64, first: usize) {
        let mut left = n.min(self.pcp[cpu].count());
        let mut mt = first;
        while left > 0 {
            while self.pcp[cpu].lists[mt].is_empty() {
                mt = (mt + 1) % MIGRATE_PCPTYPES;
            }
            while left > 0 {
                let Some(p) = self.pcp[cpu].lists[mt].pop_back() else {
                    break;
                };
                left -= 1;
                self.free_one_page(mem, Pfn(p), 0);
            }
        }
    }

    /// `drain_all_pages()`: every CPU's list back to the buddy lists.
    pub(crate) fn drain_all_pages(&mut self, mem: &mut MemMap) {
        for cpu in 0..self.pcp.len() {
            let n = self.pcp[cpu].count();
            self.free_pcppages_bulk(mem, cpu, n, 0);
        }
    }

    /// `__free_one_page()`: return a block to the buddy lists of its
    /// pageblock's migratetype and merge it with free buddies (a buddy
    /// pageblock of another type takes this one's).
    #[inline(always)]
    pub(crate) fn free_one_page(&mut self, mem: &mut MemMap, pfn: Pfn, order: u32) {
        self.nr_free += 1 << order;
        let mt = self.block_mt(pfn.0);
        let mut pfn = pfn.0 as u64;
        let mut order = order;
        while order < MAX_PAGE_ORDER {
            let buddy = pfn ^ (1 << order);
            if buddy >= self.nr_pages || !mem.is_buddy(Pfn(buddy as u32), order) {
                break;
            }
            let buddy_mt = self.block_mt(buddy as u32);
            if buddy_mt != mt && (mt == MIGRATE_CMA || buddy_mt == MIGRATE_CMA) {
                break; // migratetype_is_mergeable()
            }
            self.dec_blocks(buddy_mt, order);
            if buddy_mt != mt {
                let first = (buddy >> PAGEBLOCK_ORDER) as usize;
                let n = 1usize << order.saturating_sub(PAGEBLOCK_ORDER);
                self.pageblock_mt[first..first + n].fill(mt as u8);
            }
            mem.clear_buddy(Pfn(buddy as u32));
            pfn &= !(1 << order);
            order += 1;
        }
        self.push(mem, Pfn(pfn as u32), mt, order);
    }
}
impl FreeArea {
    /// `__zone_watermark_ok()` without the per-order free-list check (the
    /// buddy allocation itself fails when no block is large enough): the
    /// free pages left after taking `order` stay above `mark`. `cma`:
    /// ALLOC_CMA (a movable allocation); without it the free CMA pages do
    /// not count (`__zone_watermark_unusable_free()`), as for kswapd's
    /// `pgdat_balanced()` and every check made with no allocation flags.
    #[inline]
    pub(crate) fn watermark_ok(&self, order: u32, mark: u64, cma: bool) -> bool {
        let free = self.nr_free.saturating_sub((1 << order) - 1);
        if cma || self.cma_pages == 0 {
            return free > mark;
        }
        self.watermark_ok_without_cma(free, mark)
    }

    /// [`Self::watermark_ok`] without ALLOC_CMA on a machine with CMA
    /// pageblocks: out of line.
    #[cold]
    #[inline(never)]
    fn watermark_ok_without_cma(&self, free: u64, mark: u64) -> bool {
        free.saturating_sub(self.nr_free_cma()) > mark
    }
}

impl<A: Arch> Kernel<A> {
    /// The machine's memory now, in the order of
    /// `foliosim_uapi::counters::MACHINE_LEVELS`: the one zone's
    /// `zone_managed_pages()` and `NR_FREE_PAGES` (with the lower zones'
    /// held back by `machine.lowmem_reserve`), and its
    /// `min_wmark_pages()`, `low_wmark_pages()`, `high_wmark_pages()` (the
    /// boost included), `watermark_boost`, and the pages on the per-CPU
    /// lists.
    pub fn machine_levels(&self) -> [u64; 7] {
        let w = self.buddy.marks();
        [
            self.buddy.managed,
            self.buddy.nr_free_pages() + self.buddy.lowmem,
            w.min,
            w.low,
            w.high,
            self.buddy.boost,
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
        let mt = if movable {
            MIGRATE_MOVABLE
        } else {
            MIGRATE_UNMOVABLE
        };
        if let Some(p) = self.get_page_from_freelist(order, self.buddy.marks().low, mt, kswapd) {
            return Some(p);
        }
        self.alloc_pages_slowpath(order, movable, kswapd)
    }

    /// `get_page_from_freelist()` for the one zone at watermark `mark`:
    /// notes whether the zone is below its high watermark
    /// (`ZONE_BELOW_HIGH`), then takes a block of migratetype `mt` on the
    /// current CPU if the free pages stay above `mark` (`rmqueue()`).
    fn get_page_from_freelist(
        &mut self,
        order: u32,
        mark: u64,
        mt: usize,
        kswapd: bool,
    ) -> Option<Pfn> {
        let cma = mt == MIGRATE_MOVABLE;
        if !self.buddy.below_high && !self.buddy.watermark_ok(order, self.buddy.marks().high, cma) {
            self.buddy.below_high = true;
        }
        if self.buddy.below_high && !self.buddy.watermark_ok(order, mark, cma) {
            return None;
        }
        let page = self.rmqueue(order, mt, kswapd);
        // rmqueue(): a fallback that boosted the watermarks wakes kswapd.
        if kswapd && self.buddy.boosted_flag {
            self.buddy.boosted_flag = false;
            self.wakeup_kswapd();
        }
        page
    }

    /// `rmqueue()` on the current CPU, with its fallbacks counted, but
    /// without the wake-up of kswapd after a boost, which only
    /// [`Self::get_page_from_freelist`] adds; the caller has checked the
    /// watermark, if any.
    pub(crate) fn rmqueue(&mut self, order: u32, mt: usize, kswapd: bool) -> Option<Pfn> {
        let cpu = self.cpus.current;
        let page = self
            .buddy
            .alloc_pages(&mut self.mem, order, mt, cpu, kswapd);
        self.count_extfrag();
        page
    }

    /// `kmem:mm_page_alloc_extfrag`: the fallbacks of the allocation just
    /// made, in the allocating task's context.
    pub(crate) fn count_extfrag(&mut self) {
        for _ in 0..std::mem::take(&mut self.buddy.extfrag) {
            self.vmstat
                .trace(foliosim_uapi::vmstat::Trace::MmPageAllocExtfrag);
        }
    }

    /// Free a block the kernel allocated with [`Self::alloc_pages`] (or a
    /// page table's), on the current CPU.
    pub(crate) fn free_pages(&mut self, pfn: Pfn, order: u32) {
        let cpu = self.cpus.current;
        self.buddy.free_pages(&mut self.mem, pfn, order, cpu);
    }

    /// `__alloc_pages_slowpath()` without compaction or the OOM killer.
    /// An order-0 page of migratetype `mt` that never enters direct
    /// reclaim (`__alloc_pages()` with __GFP_KSWAPD_RECLAIM): the fast
    /// path at the low watermark; below it the slow path wakes kswapd
    /// (`wake_all_kswapds()`) and then tries the min watermark once
    /// (GFP_NOWAIT), or, for a task in reclaim (`memalloc`: PF_MEMALLOC),
    /// takes the page without watermarks (`ALLOC_NO_WATERMARKS`). A
    /// fallback's boost wakes kswapd as for any allocation (`rmqueue()`).
    pub(crate) fn alloc_page_no_reclaim(&mut self, mt: usize, memalloc: bool) -> Option<Pfn> {
        let low = self.buddy.marks().low;
        if let Some(p) = self.get_page_from_freelist(0, low, mt, true) {
            return Some(p);
        }
        self.wakeup_kswapd();
        if memalloc {
            return self.rmqueue(0, mt, true);
        }
        let min = self.buddy.marks().min;
        self.get_page_from_freelist(0, min, mt, true)
    }

    fn alloc_pages_slowpath(&mut self, order: u32, movable: bool, kswapd: bool) -> Option<Pfn> {
        // wake_all_kswapds(). kswapd balances for order 0 whatever the
        // order that woke it (no high-order balancing, no kcompactd).
        if kswapd {
            self.wakeup_kswapd();
        }
        let mt = if movable {
            MIGRATE_MOVABLE
        } else {
            MIGRATE_UNMOVABLE
        };
        let mut no_progress_loops = 0;
        loop {
            let min = self.buddy.marks().min;
            if let Some(p) = self.get_page_from_freelist(order, min, mt, kswapd) {
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
                let min = self.buddy.marks().min;
                if let Some(p) = self.get_page_from_freelist(order, min, mt, kswapd) {
                    return Some(p);
                }
                self.buddy.drain_all_pages(&mut self.mem);
                if let Some(p) = self.get_page_from_freelist(order, min, mt, kswapd) {
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
            .map(|_| {
                area.alloc_pages(mem, 0, MIGRATE_MOVABLE, 0, false)
                    .expect("memory")
            })
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

    /// A list that starts with 300 pages (64 MiB zone, 2 CPUs: batch 3,
    /// high_min 160) and a known `pcp->high` of 400 keeps a page freed to
    /// it (`nr_pcp_high()`: 300 < 400). With the high unknown, the free's
    /// clamp sets it to high_min, 160, the list holds more, and
    /// `nr_pcp_free()` gives back max(free_count 1, batch 3) = 3 pages.
    #[test]
    fn a_boot_list_keeps_its_known_high() {
        for (high, given_back) in [(400, 0), (0, 3)] {
            let mut mem = MemMap::new(16384);
            let mut area = FreeArea::new(&mem);
            area.boot_pcp = 300;
            area.boot_pcp_high = [high, 0];
            area.pcp_setup(&mut mem, 2);
            assert_eq!(area.pcp[0].count(), 300);
            let free = area.nr_free_pages();
            let p = area
                .alloc_pages(&mut mem, 0, MIGRATE_MOVABLE, 0, false)
                .expect("a page");
            area.free_pages(&mut mem, p, 0, 0);
            assert_eq!(area.nr_free_pages() - free, given_back, "high {high}");
        }
    }

    /// A 64 MiB zone whose top `blocks` pageblocks are CMA, with the
    /// per-CPU lists of 2 CPUs.
    fn cma_zone(blocks: u64) -> (MemMap, FreeArea) {
        let mut mem = MemMap::new(16384);
        let mut area = FreeArea::new(&mem);
        area.reserve_cma(&mut mem, blocks << PAGEBLOCK_ORDER);
        area.pcp_setup(&mut mem, 2);
        (mem, area)
    }

    /// Only movable allocations take CMA pageblocks (ALLOC_CMA), and no
    /// fallback claims or steals them (`fallbacks[]` has no MIGRATE_CMA):
    /// with 4 of the 32 pageblocks CMA, unmovable allocations get the other
    /// 14,336 pages and then fail, the 2,048 CMA pages still free. For a
    /// watermark check without ALLOC_CMA those free pages do not count
    /// (`__zone_watermark_unusable_free()`).
    #[test]
    fn only_movable_allocations_take_cma_pageblocks() {
        let (mut mem, mut area) = cma_zone(4);
        assert_eq!((area.nr_free_pages(), area.nr_free_cma()), (16384, 2048));
        assert!(area.watermark_ok(0, 16000, true));
        assert!(!area.watermark_ok(0, 16000, false));
        assert!(area.watermark_ok(0, 14000, false));
        let mut got = 0u64;
        while let Some(p) = area.alloc_pages(&mut mem, 0, MIGRATE_UNMOVABLE, 0, false) {
            assert!(p.0 < 14336, "pfn {} is in the CMA area", p.0);
            got += 1;
        }
        assert_eq!(got, 14336);
        assert_eq!((area.nr_free_pages(), area.nr_free_cma()), (2048, 2048));
        // Movable allocations take them all (the first CMA block starts
        // where the never-allocated tail ended).
        let mut got = 0u64;
        while let Some(p) = area.alloc_pages(&mut mem, 0, MIGRATE_MOVABLE, 0, false) {
            assert!(p.0 >= 14336, "pfn {} is not in the CMA area", p.0);
            got += 1;
        }
        assert_eq!(
            (got, area.nr_free_pages(), area.nr_free_cma()),
            (2048, 0, 0)
        );
    }

    /// `__rmqueue()` balances movable allocations: from the CMA lists when
    /// they hold more than half the free pages, else from the movable
    /// lists first. 4 CMA pageblocks (2,048 pages) of 16,384; order-1
    /// allocations (no per-CPU list), the k-th (from 0) finding 16,384 - 2k
    /// free: CMA is taken once 2,048 > (16,384 - 2k) / 2, that is from k =
    /// 6,145 (4,094 free), and then every other time (4,092 free, 2,046
    /// CMA: not more than half). A CMA page freed goes on the movable
    /// per-CPU list (`free_frozen_page_commit()`) and, drained, back to the
    /// CMA lists.
    #[test]
    fn movable_allocations_take_cma_once_it_holds_half_the_free_pages() {
        let (mut mem, mut area) = cma_zone(4);
        let mut alloc = || {
            area.alloc_pages(&mut mem, 1, MIGRATE_MOVABLE, 0, false)
                .expect("memory")
        };
        for k in 0..=6144 {
            assert!(alloc().0 < 14336, "allocation {k} took CMA");
        }
        let first = alloc();
        assert!(first.0 >= 14336, "allocation 6145 took pfn {}", first.0);
        assert!(alloc().0 < 14336, "allocation 6146 took CMA");
        assert!(alloc().0 >= 14336, "allocation 6147 did not take CMA");
        assert_eq!(area.nr_free_cma(), 2048 - 4);
        area.free_pages(&mut mem, first, 0, 0);
        assert_eq!(area.pcp[0].lists[MIGRATE_MOVABLE].front(), Some(&first.0));
        area.drain_all_pages(&mut mem);
        assert_eq!(area.nr_free_cma(), 2048 - 3);
    }

    /// `__free_one_page()`: at the pageblock order a free CMA block and a
    /// free block of another type do not merge (`migratetype_is_mergeable()`).
    /// 3 CMA pageblocks from pfn 14,848: the movable pageblock below them
    /// (14,336, its order-9 buddy 14,848 is CMA) stays an order-9 block of
    /// its own when freed.
    #[test]
    fn cma_blocks_do_not_merge_with_others() {
        let (mut mem, mut area) = cma_zone(3);
        assert_eq!(area.nr_blocks[MIGRATE_CMA][9..], [1, 1]);
        let gap = area
            .rmqueue_smallest(&mut mem, 9, MIGRATE_MOVABLE)
            .expect("the movable pageblock below the CMA area");
        assert_eq!(gap.0, 14336);
        area.free_one_page(&mut mem, gap, 9);
        assert_eq!(area.nr_blocks[MIGRATE_MOVABLE][9..], [1, 0]);
        assert_eq!(area.nr_blocks[MIGRATE_CMA][9..], [1, 1]);
        assert_eq!(area.block_mt(14336), MIGRATE_MOVABLE);
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
            let p = area
                .alloc_pages(&mut mem, 0, MIGRATE_MOVABLE, 0, false)
                .expect("memory");
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
        assert_eq!(
            area.alloc_pages(&mut mem, 0, MIGRATE_MOVABLE, 0, false),
            Some(pages[7])
        );
        assert_eq!(area.pcp[0].alloc_factor, 2);
    }

    /// A zone fragmented by blocks of mixed orders, a third of them freed
    /// (on the other CPU, then drained).
    fn fragmented() -> (MemMap, FreeArea) {
        let (mut mem, mut area) = zone();
        let held: Vec<(Pfn, u32)> = (0..600)
            .map(|i| {
                let order = [0, 0, 1, 3, 0, 2][i % 6];
                let p = area
                    .alloc_pages(&mut mem, order, MIGRATE_MOVABLE, 0, false)
                    .expect("memory");
                (p, order)
            })
            .collect();
        for &(p, order) in held.iter().step_by(3) {
            area.free_pages(&mut mem, p, order, 1);
        }
        area.drain_all_pages(&mut mem);
        (mem, area)
    }

    /// rmqueue_bulk() takes a block's pages at once
    /// (`rmqueue_smallest_order0()`): the free lists (stale entries
    /// included), counts, per-CPU list and memory map end as after
    /// `__rmqueue()` page by page, refill after refill.
    #[test]
    fn a_bulk_refill_matches_page_by_page() {
        let (mut mem_a, mut a) = fragmented();
        let (mut mem_b, mut b) = fragmented();
        for n in [1, 5, 63, 2, 200, 700, 31, 4000] {
            a.rmqueue_bulk(&mut mem_a, 0, n, MIGRATE_MOVABLE, false);
            let mut mode = RmqueueMode::Normal;
            for _ in 0..n {
                let Some(p) = b.rmqueue(&mut mem_b, 0, MIGRATE_MOVABLE, false, &mut mode) else {
                    break;
                };
                b.pcp[0].lists[MIGRATE_MOVABLE].push_back(p.0);
            }
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "after {n}");
            assert_eq!(format!("{mem_a:?}"), format!("{mem_b:?}"), "after {n}");
        }
    }

    /// prep_move_freepages_block()'s census: an unmovable allocation
    /// that falls back to a movable pageblock claims it when the block's
    /// free pages plus those not movable make half of it. Every page is
    /// taken, then 8 pages of one block are freed: 8 free and 504 in use,
    /// none on the LRU. Pages without movable ops count as unmovable
    /// (504 + 8 >= 256): the block is claimed. The same 504 pages with
    /// movable ops (a zsmalloc pool's) are movable: 8 < 256, the block
    /// stays movable and the page is stolen.
    #[test]
    fn pages_with_movable_ops_are_movable_in_a_claim() {
        for movable_ops in [false, true] {
            let (mut mem, mut area) = zone();
            let mut pages = Vec::new();
            while let Some(p) = area.alloc_pages(&mut mem, 0, MIGRATE_MOVABLE, 0, false) {
                pages.push(p);
            }
            let block = 5u32;
            let first = block << PAGEBLOCK_ORDER;
            let in_block = |p: &&Pfn| p.0 >> PAGEBLOCK_ORDER == block;
            let mut ours: Vec<Pfn> = pages.iter().filter(in_block).copied().collect();
            ours.sort_by_key(|p| p.0);
            assert_eq!(ours.len(), 1 << PAGEBLOCK_ORDER, "the block is all in use");
            for &p in &ours[8..] {
                mem.set_movable_ops(p, movable_ops);
            }
            for &p in &ours[..8] {
                area.free_pages(&mut mem, p, 0, 1);
            }
            area.drain_all_pages(&mut mem);
            let got = area
                .alloc_pages(&mut mem, 0, MIGRATE_UNMOVABLE, 0, false)
                .expect("a free page");
            assert!(got.0 >= first && got.0 < first + 8, "from the freed pages");
            let claimed = area.pageblock_mt[block as usize] == MIGRATE_UNMOVABLE as u8;
            assert_eq!(claimed, !movable_ops, "movable ops {movable_ops}");
        }
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
            assert!(area.pcp[1].count() < 12);
        }
        let on_lists = area.pcp_pages().count() as u64;
        assert_eq!(area.nr_free_pages() + on_lists, 16384);
        area.drain_all_pages(&mut mem);
        assert_eq!(area.nr_free_pages(), 16384);
        assert_eq!(area.pcp_pages().count(), 0);
    }
}
