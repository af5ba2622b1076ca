//! Memory cgroups (mm/memcontrol.c: mem_cgroup_charge(),
//! try_charge_memcg(), consume_stock(), refill_stock(), drain_all_stock(),
//! mem_cgroup_margin(), mem_cgroup_swapin_charge_folio(),
//! mem_cgroup_uncharge(), memory_reclaim(), __memcg_kmem_charge_page(),
//! __mem_cgroup_handle_over_high(), reclaim_high(), calculate_high_delay(),
//! memory_high_write(),
//! __memcg_kmem_uncharge_page(), obj_cgroup_charge(); mm/vmscan.c:
//! user_proactive_reclaim(); mm/memcontrol-v1.c: mem_cgroup_force_empty(),
//! mem_cgroup_resize_max();
//! mm/page_counter.c: page_counter_try_charge()), Linux 6.18.
//!
//! A table of cgroups, id 0 the root. Every mm belongs to one (the cgroup of
//! its owner task; a fork child inherits its parent's); the `memcg` step
//! moves a process into a new child of the root with an optional limit (the
//! native engine's cgroups are siblings too, so the model's hierarchy is
//! flat). Folios are charged where the kernel charges them: anon, COW and
//! swap-in folios to the faulting mm's cgroup (swap-in to the cgroup the
//! slot was swapped out from), page cache to the cgroup of the task that
//! adds it (a fault or its readahead; `[[file]]` fills run before any step,
//! in the root). A charge over the limit reclaims in that cgroup first
//! (`try_to_free_mem_cgroup_pages()`, mm/vmscan.rs), with the kernel's
//! retries; the per-CPU charge stock (64-page batches, 7 cached cgroups) of
//! the one simulated CPU is modelled, because it decides when the limit is
//! hit.
//!
//! Kernel memory is charged where the kernel accounts it: page tables
//! (`__memcg_kmem_charge_page()`, uncharged into the stock) and the page
//! cache's xarray nodes (`obj_cgroup_charge()` through the per-CPU object
//! stock). A v1 limit write (`mem_cgroup_resize_max()`) reclaims until the
//! usage fits or fails with EBUSY; `failcnt` counts refused charges.
//! cgroup v2's memory.high: what a task charges above it is reclaimed on
//! its way back to user space, and slept off when reclaim cannot keep up.
//!
//! Approximated: other slab objects (VMAs, anon_vmas, the task's own
//! allocations) are not charged, so a limited cgroup reaches its limit a
//! little later than natively; xarray nodes are never freed (shadow
//! entries keep them); when the stock has no free slot the kernel drains a
//! random one, the model the first. Unsupported (loud error): the memcg OOM
//! killer — a charge that reclaim cannot make room for stops the run.
//! memory.min / memory.low protection from global reclaim is applied by
//! mm/vmscan.rs (classic LRU) and mm/lru_gen.rs (MGLRU). The LRU sizes
//! reclaim reads of a cgroup are its statistics as last flushed
//! (mm/memcg_rstat.rs).
//!
//! Swap is charged as cgroup v2 charges it, apart from memory
//! (`__mem_cgroup_try_charge_swap()` at `folio_alloc_swap()`, uncharged
//! when the slot is freed): memory.swap.max refuses slots, keeps reclaim
//! off the cgroup's anonymous lists once reached
//! (`mem_cgroup_get_nr_swap_pages()`), and at half of it reclaim and
//! swap-in drop the swap cache of the folios they touch
//! (`mem_cgroup_swap_full()`, which also counts half of memory.swap.high);
//! above memory.swap.high the cgroup's charges pay a penalty on the way
//! back to user space, as above memory.high. A cgroup given a v1
//! memory+swap limit (`memory.memsw.limit_in_bytes`) is charged memory and
//! swap together: a charge tries that counter first and, refused there,
//! reclaims without swapping; a page swapped out leaves its charge with
//! its slot (`memcg1_swapout()`) until it is swapped in (`memcg1_swapin()`)
//! or the slot is freed. Not modelled: socket accounting, moving charges
//! between cgroups, cgroup removal.

use crate::arch::Arch;
use crate::include::linux::mm_inline::{ListHead, NR_LRU_LISTS};
use crate::include::linux::pgtable::{Pfn, PAGE_SIZE};
use crate::mm::lru_gen::{HZ, PS_PER_JIFFY};
use crate::mm::swap::SWAP_CLUSTER_MAX;
use crate::mm::swapfile::SwpEntry;
use crate::mm::vmstat::MemcgEvent;
use crate::KResult;
use crate::{Kernel, KernelError, MmId};

/// A memory cgroup (`struct mem_cgroup`): its index in
/// `MemcgState::memcgs`, 0 the root (what the model keeps per folio, 2 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
#[doc(alias = "mem_cgroup")]
pub struct MemcgId(pub(crate) u16);

impl MemcgId {
    /// The index into per-cgroup tables.
    #[inline]
    pub fn idx(self) -> usize {
        usize::from(self.0)
    }
}

impl std::fmt::Display for MemcgId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The root cgroup's id.
pub(crate) const ROOT_MEM_CGROUP: MemcgId = MemcgId(0);
/// `MEMCG_CHARGE_BATCH`: pages charged ahead into the per-CPU stock.
pub(crate) const MEMCG_CHARGE_BATCH: u64 = 64;
/// `NR_MEMCG_STOCK`: cgroups cached per CPU stock.
pub(crate) const NR_MEMCG_STOCK: usize = 7;
/// `MAX_RECLAIM_RETRIES`
pub(crate) const MAX_RECLAIM_RETRIES: u32 = 16;
/// `PAGE_ALLOC_COSTLY_ORDER`
pub(crate) const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
/// `PAGE_COUNTER_MAX`: no limit.
pub(crate) const PAGE_COUNTER_MAX: u64 = u64::MAX;
/// `MEMCG_MAX_HIGH_DELAY_JIFFIES`: the longest memory.high sleep per
/// return to user space (2 s).
const MEMCG_MAX_HIGH_DELAY_JIFFIES: u64 = 2 * HZ;
/// `MEMCG_DELAY_PRECISION_SHIFT`
const MEMCG_DELAY_PRECISION_SHIFT: u32 = 20;
/// `MEMCG_DELAY_SCALING_SHIFT`
const MEMCG_DELAY_SCALING_SHIFT: u32 = 14;

/// `struct lruvec` of one cgroup (one node).
#[derive(Clone, Debug, Default)]
pub(crate) struct Lruvec {
    /// The ordered lists; unused (empty) for the root, see
    /// include/linux/mm_inline.rs.
    pub lists: [ListHead; NR_LRU_LISTS],
    /// `lruvec->anon_cost`, `lruvec->file_cost` (`lru_note_cost()`).
    pub(crate) anon_cost: u64,
    pub(crate) file_cost: u64,
    /// `lruvec->nonresident_age`: evictions and activations in this
    /// cgroup and its descendants (mm/workingset.rs).
    pub(crate) nonresident_age: u64,
    /// `lruvec->refaults[]`: WORKINGSET_ACTIVATE_ANON / _FILE at the end
    /// of the last reclaim of this target (`snapshot_refaults()`).
    pub(crate) refaults: [u64; 2],
    /// What `lruvec_page_state()` reads: the statistics as of the last
    /// flush (mm/memcg_rstat.rs).
    pub(crate) flushed: crate::mm::memcg_rstat::FlushedStats,
    /// MGLRU's generations, refault feedback and mm list (mm/lru_gen.rs).
    pub(crate) lrugen: crate::mm::lru_gen::LruGenFolio,
}

/// `struct mem_cgroup`
#[derive(Clone, Debug)]
#[doc(alias = "mem_cgroup")]
pub(crate) struct MemCgroup {
    /// The parent's id (the root is its own parent).
    pub parent: MemcgId,
    /// `memory.max` (v1 `memory.limit_in_bytes`) in pages.
    pub max: u64,
    /// `page_counter_read(&memcg->memory)`: charged pages, the per-CPU
    /// stock's included (the root is not charged).
    pub usage: u64,
    /// `memcg->memory.watermark`: the highest `usage` since the cgroup
    /// was created or the watermark was last reset (v1
    /// `memory.max_usage_in_bytes`, v2 `memory.peak`).
    pub watermark: u64,
    /// Pages charged for slab objects (`obj_cgroup_charge()`), which no
    /// page of the model carries.
    pub(crate) obj_pages: u64,
    pub lruvec: Lruvec,
    /// `memcg->deferred_split_queue`: its large anon folios waiting for
    /// the deferred-split shrinker.
    pub(crate) deferred_split_queue: crate::mm::huge_memory::DeferredSplit,
    /// Each shrinker's `nr_deferred` in this cgroup's `shrinker_info` (one
    /// node), by [`crate::mm::shrinker::Shrinker`]: scan work carried to
    /// the next call.
    pub(crate) shrinker_nr_deferred: [u64; crate::mm::shrinker::NR_SHRINKERS],
    /// `memcg->zswap_max` (cgroup v2 `memory.zswap.max`) in pages of
    /// compressed data.
    pub(crate) zswap_max: u64,
    /// `memcg->swap.max` (cgroup v2 `memory.swap.max`) in swap slots.
    pub(crate) swap_max: u64,
    /// `memcg->swap.high` (cgroup v2 `memory.swap.high`) in swap slots.
    pub(crate) swap_high: u64,
    /// cgroup v1's memory+swap counter (`memcg->memsw`), kept for a cgroup
    /// whose `memory.memsw.limit_in_bytes` is set.
    pub(crate) memsw: Option<Memsw>,
    /// `page_counter_read(&memcg->swap)`: the swap slots charged to the
    /// cgroup (v2 `memory.swap.current`), from `folio_alloc_swap()` until
    /// the slot is freed.
    pub(crate) swap_usage: u64,
    /// `memcg->memory.high` (cgroup v2 `memory.high`) in pages.
    pub(crate) high: u64,
    /// `memcg->memory.min` (cgroup v2 `memory.min`) in pages.
    pub(crate) min: u64,
    /// `memcg->memory.low` (cgroup v2 `memory.low`) in pages.
    pub(crate) low: u64,
}

/// `struct memcg_stock_pcp` of the simulated CPU.
#[derive(Clone, Copy, Debug, Default)]
struct MemcgStock {
    /// Cached cgroups (0 = empty slot; the root never has a stock).
    cached: [MemcgId; NR_MEMCG_STOCK],
    nr_pages: [u64; NR_MEMCG_STOCK],
}

/// How a charge may reclaim: the parts of the allocation's gfp mask that
/// `try_charge_memcg()` looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChargeGfp {
    /// GFP_KERNEL / GFP_HIGHUSER_MOVABLE: reclaim and retry; failing means
    /// the OOM killer (unsupported).
    Kernel,
    /// `| __GFP_NORETRY` (readahead, large page-cache folios): one reclaim
    /// pass, then fail.
    NoRetry,
    /// GFP_TRANSHUGE_LIGHT (THP faults outside MADV_HUGEPAGE with the
    /// default `defrag=madvise`): no direct reclaim.
    NoReclaim,
    /// GFP_TRANSHUGE (THP faults in MADV_HUGEPAGE ranges): reclaim and
    /// retry; above PAGE_ALLOC_COSTLY_ORDER the OOM killer is skipped and
    /// the charge fails.
    TransHuge,
    /// A charge from reclaim (`PF_MEMALLOC`: zswap's compressed bytes):
    /// over the limit it is forced (`goto force` in try_charge_memcg()),
    /// never reclaiming or failing.
    Memalloc,
}

/// The memory-cgroup state of the kernel.
#[derive(Debug)]
pub(crate) struct MemcgState {
    pub memcgs: Vec<MemCgroup>,
    /// The cgroup of each mm's owner task, by `MmId` (missing = root).
    mm_memcg: Vec<MemcgId>,
    /// `folio_memcg()` by folio head; empty until a non-root cgroup exists.
    folio_memcg: Vec<MemcgId>,
    stock: MemcgStock,
    /// The per-CPU object stock (`struct obj_stock_pcp`): the cgroup whose
    /// bytes it holds and how many (pre-charged, not yet used by objects).
    obj_stock: (MemcgId, u64),
    /// The cgroup of the task in the kernel now (`current`), for page-cache
    /// charges: the faulting mm's while a fault runs, else the root.
    pub(crate) current: MemcgId,
    /// `current->memcg_nr_pages_over_high`: pages the running task charged
    /// above a cgroup's memory.high since it entered the kernel, reclaimed
    /// on its way back to user space ([`Kernel::resume_user_mode_work`]).
    /// kswapd keeps its own while it runs (mm/vmscan.rs).
    pub(crate) nr_pages_over_high: u64,
    /// MGLRU's memcg LRU (`pgdat->memcg_lru`), which orders global
    /// reclaim's visits to the cgroups (mm/memcg_lru.rs).
    pub(crate) lru: crate::mm::memcg_lru::MemcgLru,
    /// The swap slots (device, offset) whose memory+swap charge a v1
    /// cgroup's swapped-out page left with the slot (`memcg1_swapout()`),
    /// until the page is swapped in or the slot freed.
    memsw_slots: std::collections::HashSet<(u32, u64)>,
    /// The periodic statistics flusher (mm/memcg_rstat.rs).
    pub(crate) stats_flush: crate::mm::memcg_rstat::StatsFlush,
}

/// The page counter that refused a charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counter {
    Memory,
    Memsw,
}

/// cgroup v1's memory+swap page counter of one cgroup: what it holds is
/// the cgroup's memory usage plus `swap`, the swap slots its swapped-out
/// pages hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memsw {
    /// `memsw.max` in pages.
    max: u64,
    /// Slots charged: pages swapped out by reclaim and not swapped in.
    swap: u64,
    /// `memsw.watermark`: the highest memory+swap since the last reset.
    watermark: u64,
}

impl MemcgState {
    /// The root cgroup alone, its memcg LRU's bins drawn from `seed`
    /// (`machine.random_seed`).
    pub(crate) fn new(seed: u64) -> Self {
        MemcgState {
            memcgs: vec![MemCgroup {
                parent: ROOT_MEM_CGROUP,
                max: PAGE_COUNTER_MAX,
                usage: 0,
                watermark: 0,
                obj_pages: 0,
                lruvec: Lruvec::default(),
                deferred_split_queue: Default::default(),
                shrinker_nr_deferred: [0; crate::mm::shrinker::NR_SHRINKERS],
                zswap_max: PAGE_COUNTER_MAX,
                swap_max: PAGE_COUNTER_MAX,
                swap_high: PAGE_COUNTER_MAX,
                memsw: None,
                swap_usage: 0,
                high: PAGE_COUNTER_MAX,
                min: 0,
                low: 0,
            }],
            mm_memcg: Vec::new(),
            folio_memcg: Vec::new(),
            stock: MemcgStock::default(),
            obj_stock: (ROOT_MEM_CGROUP, 0),
            current: ROOT_MEM_CGROUP,
            nr_pages_over_high: 0,
            lru: crate::mm::memcg_lru::MemcgLru::new(seed),
            memsw_slots: Default::default(),
            stats_flush: Default::default(),
        }
    }
}

impl<A: Arch> Kernel<A> {
    /// A write of `bytes` to the cgroup's `memory.zswap.max` (cgroup v2;
    /// `page_counter_memparse()` rounds down to pages).
    pub fn mem_cgroup_set_zswap_max(&mut self, memcg: MemcgId, bytes: u64) {
        self.memcg.memcgs[memcg.idx()].zswap_max = bytes / PAGE_SIZE;
    }

    /// A write of `bytes` to the cgroup's `memory.swap.max` (cgroup v2;
    /// rounded down to pages). Slots already charged stay charged.
    pub fn mem_cgroup_set_swap_max(&mut self, memcg: MemcgId, bytes: u64) {
        self.memcg.memcgs[memcg.idx()].swap_max = bytes / PAGE_SIZE;
    }

    /// A write of `bytes` to the cgroup's `memory.swap.high` (cgroup v2,
    /// `swap_high_write()`: rounded down to pages, nothing reclaimed).
    pub fn mem_cgroup_set_swap_high(&mut self, memcg: MemcgId, bytes: u64) {
        self.memcg.memcgs[memcg.idx()].swap_high = bytes / PAGE_SIZE;
    }

    /// A write of `bytes` to the cgroup's v1 `memory.memsw.limit_in_bytes`
    /// at its creation (`mem_cgroup_resize_max()` with `memsw`, after the
    /// memory limit, which it must not be below): from now on the cgroup
    /// is charged memory and swap together.
    pub fn mem_cgroup_set_memsw_max(&mut self, memcg: MemcgId, bytes: u64) {
        let m = &mut self.memcg.memcgs[memcg.idx()];
        let usage = m.usage;
        m.memsw = Some(Memsw {
            max: bytes / PAGE_SIZE,
            swap: 0,
            watermark: usage,
        });
    }

    /// `memcg1_swapout()`: reclaim frees `folio` from the swap cache; a
    /// cgroup with a memory+swap counter keeps the folio's charge there,
    /// held by its swap slots (its memory is uncharged as it is freed).
    /// The folio's slots are looked up only for such a cgroup.
    pub(crate) fn memcg1_swapout(&mut self, folio: Pfn) {
        let memcg = self.folio_memcg(folio);
        if self.memcg.memcgs[memcg.idx()].memsw.is_none() {
            return;
        }
        let entry = self
            .folio_swap(folio)
            .expect("a swap-cache folio has its slots");
        let nr = self.mem.folio_nr_pages(folio);
        if let Some(m) = self.memcg.memcgs[memcg.idx()].memsw.as_mut() {
            m.swap += nr;
        }
        for o in entry.offset..entry.offset + nr {
            self.memcg.memsw_slots.insert((entry.ty, o));
        }
    }

    /// `mem_cgroup_uncharge_swap()` of cgroup v1 for the slot (`ty`,
    /// `offset`) last charged to `memcg`: at `memcg1_swapin()`, when the
    /// new swap-cache folio took the charge over, or when the slot is freed
    /// (`__mem_cgroup_uncharge_swap()`).
    pub(crate) fn memcg1_uncharge_swap_slot(&mut self, memcg: MemcgId, ty: u32, offset: u64) {
        if self.memcg1_swap_charged() && self.memcg.memsw_slots.remove(&(ty, offset)) {
            if let Some(m) = self.memcg.memcgs[memcg.idx()].memsw.as_mut() {
                m.swap -= 1;
            }
        }
    }

    /// Whether any swap slot holds a v1 memory+swap charge: reclaim's slot
    /// frees look no further when none does.
    #[inline]
    pub(crate) fn memcg1_swap_charged(&self) -> bool {
        !self.memcg.memsw_slots.is_empty()
    }

    /// Memory+swap usage and watermark of every cgroup but the root, in
    /// pages, in creation order (None: no memory+swap limit).
    pub fn memcg_memsw_counters(&self) -> Vec<Option<(u64, u64)>> {
        self.memcg.memcgs[1..]
            .iter()
            .map(|m| m.memsw.map(|w| (m.usage + w.swap, w.watermark)))
            .collect()
    }

    /// `__mem_cgroup_try_charge_swap()` (cgroup v2, which charges swap
    /// apart from memory): charge the `nr` slots `folio_alloc_swap()` just
    /// took for `folio` (`allocated`; none: the allocation failed, and the
    /// cgroup counts a `fail` event of memory.swap.events) to the folio's
    /// cgroup. False when the charge would take the cgroup above its
    /// memory.swap.max: a `max` and a `fail` event, and the caller gives
    /// the slots back. The root is not charged.
    pub(crate) fn mem_cgroup_try_charge_swap(
        &mut self,
        folio: Pfn,
        nr: u64,
        allocated: bool,
    ) -> bool {
        let memcg = self.folio_memcg(folio);
        if memcg == ROOT_MEM_CGROUP {
            return true;
        }
        if !allocated {
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::SwapEventsFail, 1);
            return true;
        }
        let m = &mut self.memcg.memcgs[memcg.idx()];
        if m.swap_usage + nr > m.swap_max {
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::SwapEventsMax, 1);
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::SwapEventsFail, 1);
            return false;
        }
        m.swap_usage += nr;
        true
    }

    /// `__mem_cgroup_uncharge_swap()` of `nr` freed slots that were charged
    /// to `memcg` (the id their `swap_cgroup` record held).
    #[inline]
    pub(crate) fn mem_cgroup_uncharge_swap(&mut self, memcg: MemcgId, nr: u64) {
        if memcg != ROOT_MEM_CGROUP {
            self.memcg.memcgs[memcg.idx()].swap_usage -= nr;
        }
    }

    /// `mem_cgroup_get_nr_swap_pages()` (cgroup v2): the machine's free
    /// swap slots, and for a cgroup below the root no more than what its
    /// memory.swap.max leaves (the model's cgroups are children of the
    /// root).
    pub(crate) fn mem_cgroup_get_nr_swap_pages(&self, memcg: MemcgId) -> u64 {
        let free = self.get_nr_swap_pages();
        if memcg == ROOT_MEM_CGROUP {
            return free;
        }
        let m = &self.memcg.memcgs[memcg.idx()];
        free.min(m.swap_max.saturating_sub(m.swap_usage))
    }

    /// `mem_cgroup_swap_full()`: the machine's swap is more than half full
    /// (`vm_swap_full()`), or the folio's cgroup has used half its
    /// memory.swap.high or memory.swap.max (cgroup v2).
    pub(crate) fn mem_cgroup_swap_full(&self, folio: Pfn) -> bool {
        if self.vm_swap_full() {
            return true;
        }
        let memcg = self.folio_memcg(folio);
        if memcg == ROOT_MEM_CGROUP {
            return false;
        }
        let m = &self.memcg.memcgs[memcg.idx()];
        let limit = m.swap_high.min(m.swap_max);
        limit != PAGE_COUNTER_MAX && m.swap_usage * 2 >= limit
    }

    /// The swap slots charged to every cgroup but the root
    /// (`memory.swap.current`, in pages), in the order they were created.
    pub fn memcg_swap_usage(&self) -> Vec<u64> {
        self.memcg.memcgs[1..]
            .iter()
            .map(|m| m.swap_usage)
            .collect()
    }

    /// The `memcg` step: create a child of the root (`mkdir`), set its limit
    /// (`memory.limit_in_bytes`, rounded down to pages) and move `mm`'s task
    /// into it (`cgroup.procs`). Charges already made stay where they are.
    pub fn mem_cgroup_create(&mut self, mm: MmId, limit_bytes: Option<u64>) -> KResult<MemcgId> {
        let id = self.memcg.memcgs.len();
        if id >= u16::MAX as usize {
            return Err(KernelError::Unsupported(
                "more than 65534 memory cgroups".into(),
            ));
        }
        let nr_pages = self.mem.nr_pages();
        if self.memcg.folio_memcg.is_empty() {
            self.memcg.folio_memcg = vec![ROOT_MEM_CGROUP; nr_pages as usize];
        }
        self.lru.enable(nr_pages);
        self.memcg.memcgs.push(MemCgroup {
            parent: ROOT_MEM_CGROUP,
            max: limit_bytes.map_or(PAGE_COUNTER_MAX, |b| b / PAGE_SIZE),
            usage: 0,
            watermark: 0,
            obj_pages: 0,
            lruvec: Lruvec::default(),
            deferred_split_queue: Default::default(),
            shrinker_nr_deferred: [0; crate::mm::shrinker::NR_SHRINKERS],
            zswap_max: PAGE_COUNTER_MAX,
            swap_max: PAGE_COUNTER_MAX,
            swap_high: PAGE_COUNTER_MAX,
            memsw: None,
            swap_usage: 0,
            high: PAGE_COUNTER_MAX,
            min: 0,
            low: 0,
        });
        self.vmstat.memcg.push(Default::default());
        let id = MemcgId(id as u16);
        self.memcg.lru.online(id);
        self.lru_gen_init_timestamps(id);
        self.set_mm_memcg(mm, id);
        Ok(id)
    }

    /// Writes to cgroup v2 `memory.min` and `memory.low` (bytes, rounded
    /// down to pages by `page_counter_memparse()`; a write does not
    /// reclaim).
    pub fn mem_cgroup_set_protection(&mut self, memcg: MemcgId, min_bytes: u64, low_bytes: u64) {
        let m = &mut self.memcg.memcgs[memcg.idx()];
        m.min = min_bytes / PAGE_SIZE;
        m.low = low_bytes / PAGE_SIZE;
    }

    /// `mem_cgroup_unprotected()`: the root has no protection, and a
    /// reclaim's target ignores its own (`target` None: global reclaim,
    /// whose target is the root).
    fn mem_cgroup_unprotected(target: Option<MemcgId>, memcg: MemcgId) -> bool {
        memcg == ROOT_MEM_CGROUP || target == Some(memcg)
    }

    /// `mem_cgroup_protection()`: the effective memory.min and memory.low
    /// of `memcg` for a reclaim of `target`, in pages. The model's
    /// cgroups are children of the root, whose effective protection is
    /// what they were given (`page_counter_calculate_protection()`).
    pub(crate) fn mem_cgroup_protection(
        &self,
        target: Option<MemcgId>,
        memcg: MemcgId,
    ) -> (u64, u64) {
        if Self::mem_cgroup_unprotected(target, memcg) {
            return (0, 0);
        }
        let m = &self.memcg.memcgs[memcg.idx()];
        (m.min, m.low)
    }

    /// `mem_cgroup_below_min()`: the usage is within memory.min.
    pub(crate) fn mem_cgroup_below_min(&self, target: Option<MemcgId>, memcg: MemcgId) -> bool {
        let m = &self.memcg.memcgs[memcg.idx()];
        !Self::mem_cgroup_unprotected(target, memcg) && m.min >= m.usage
    }

    /// `mem_cgroup_below_low()`: the usage is within memory.low.
    pub(crate) fn mem_cgroup_below_low(&self, target: Option<MemcgId>, memcg: MemcgId) -> bool {
        let m = &self.memcg.memcgs[memcg.idx()];
        !Self::mem_cgroup_unprotected(target, memcg) && m.low >= m.usage
    }

    /// The cgroup `mm` is charged to (`get_mem_cgroup_from_mm()`).
    #[inline]
    pub fn mm_memcg(&self, mm: MmId) -> MemcgId {
        self.memcg
            .mm_memcg
            .get(mm.0 as usize)
            .copied()
            .unwrap_or(ROOT_MEM_CGROUP)
    }

    /// Move `mm`'s task into `memcg` (also: a fork child inherits).
    pub(crate) fn set_mm_memcg(&mut self, mm: MmId, memcg: MemcgId) {
        let v = &mut self.memcg.mm_memcg;
        if v.len() <= mm.0 as usize {
            v.resize(mm.0 as usize + 1, ROOT_MEM_CGROUP);
        }
        v[mm.0 as usize] = memcg;
        self.lru_gen_migrate_mm(mm);
    }

    /// `folio_memcg()`
    #[inline]
    pub(crate) fn folio_memcg(&self, folio: Pfn) -> MemcgId {
        match self.memcg.folio_memcg.get(folio.idx()) {
            Some(&m) => m,
            None => ROOT_MEM_CGROUP,
        }
    }

    /// `mem_cgroup_is_descendant(memcg, root)`
    pub(crate) fn mem_cgroup_is_descendant(&self, memcg: MemcgId, root: MemcgId) -> bool {
        root == ROOT_MEM_CGROUP || memcg == root
    }

    /// `mem_cgroup_charge()`: charge a new folio to `memcg` (`commit_charge()`
    /// records it). False if the charge failed: the caller falls back to a
    /// smaller folio or fails the fault; a small GFP_KERNEL charge that
    /// fails is the memcg OOM killer's case, a model limit
    /// ([`Kernel::memcg_oom`]).
    pub(crate) fn mem_cgroup_charge(&mut self, folio: Pfn, memcg: MemcgId, gfp: ChargeGfp) -> bool {
        let nr = self.mem.folio_nr_pages(folio);
        if memcg != ROOT_MEM_CGROUP {
            if !self.try_charge_memcg(memcg, gfp, nr) {
                if gfp == ChargeGfp::Kernel && nr <= 1 << PAGE_ALLOC_COSTLY_ORDER {
                    self.memcg_oom(memcg, nr);
                }
                return false;
            }
            self.memcg.folio_memcg[folio.idx()] = memcg;
            // memcg1_commit_charge(): one page-in event per folio.
            self.vmstat.count_memcg_events(memcg, MemcgEvent::PgPgIn, 1);
        }
        true
    }

    /// A major fault: `count_vm_event(PGMAJFAULT)` and
    /// `count_memcg_event_mm(PGMAJFAULT)` for the faulting mm's cgroup
    /// (`current` during a fault).
    pub(crate) fn count_pgmajfault(&mut self) {
        self.vmstat
            .count_vm_event(crate::mm::vmstat::VmEvent::PgMajFault);
        let memcg = self.memcg.current;
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgMajFault, 1);
    }

    /// `mem_cgroup_swapin_charge_folio()`: charge to the cgroup recorded for
    /// the swap slot (`lookup_swap_cgroup_id()`).
    pub(crate) fn mem_cgroup_swapin_charge_folio(
        &mut self,
        folio: Pfn,
        entry: SwpEntry,
        gfp: ChargeGfp,
    ) -> bool {
        let memcg = self.swap[entry.ty as usize].memcg(entry.offset);
        if !self.mem_cgroup_charge(folio, memcg, gfp) {
            return false;
        }
        // memcg1_swapin(): the folio's memory+swap charge replaces the
        // slots'.
        for o in entry.offset..entry.offset + self.mem.folio_nr_pages(folio) {
            self.memcg1_uncharge_swap_slot(memcg, entry.ty, o);
        }
        true
    }

    /// `mem_cgroup_uncharge()` of a folio being freed.
    #[inline]
    pub(crate) fn mem_cgroup_uncharge(&mut self, folio: Pfn) {
        let memcg = self.folio_memcg(folio);
        if memcg != ROOT_MEM_CGROUP {
            let nr = self.mem.folio_nr_pages(folio);
            self.memcg.memcgs[memcg.idx()].usage -= nr;
            self.memcg.folio_memcg[folio.idx()] = ROOT_MEM_CGROUP;
            // uncharge_folio(): one page-out event per folio (at swap-out
            // memcg1_swapout() counts the same one).
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::PgPgOut, 1);
        }
    }

    /// `__memcg_kmem_charge_page()` of a page allocated with
    /// `__GFP_ACCOUNT` (page tables): charged like a folio, through the
    /// same stock and limit reclaim (`obj_cgroup_charge_pages()` ->
    /// `try_charge_memcg()`), to the cgroup of `current`. A charge that
    /// fails is the memcg OOM killer's case, a model limit
    /// ([`Kernel::memcg_oom`]).
    pub(crate) fn memcg_kmem_charge_page(&mut self, page: Pfn) {
        let memcg = self.memcg.current;
        if memcg == ROOT_MEM_CGROUP {
            return;
        }
        if self.try_charge_memcg(memcg, ChargeGfp::Kernel, 1) {
            self.memcg.folio_memcg[page.idx()] = memcg;
        } else {
            self.memcg_oom(memcg, 1);
        }
    }

    /// `__memcg_kmem_uncharge_page()` of a freed page table: its charge
    /// goes back through the per-CPU stock (`obj_cgroup_uncharge_pages()`
    /// -> `refill_stock()`), not straight to the counter as a folio's does.
    pub(crate) fn memcg_kmem_uncharge_page(&mut self, page: Pfn) {
        let memcg = self.folio_memcg(page);
        if memcg != ROOT_MEM_CGROUP {
            self.memcg.folio_memcg[page.idx()] = ROOT_MEM_CGROUP;
            self.refill_stock(memcg, 1);
        }
    }

    /// `obj_cgroup_charge()` of `size` bytes of slab objects (xarray
    /// nodes) for `memcg`: from the object stock's pre-charged bytes if it
    /// holds this cgroup's and enough (`consume_obj_stock()`), else whole
    /// pages through `try_charge_memcg()` (`obj_cgroup_charge_pages()`),
    /// the rest of the last page going to the stock (`refill_obj_stock()`;
    /// a stock of another cgroup is flushed first).
    /// A failed charge is the memcg OOM killer's case (unsupported).
    pub(crate) fn obj_cgroup_charge(&mut self, memcg: MemcgId, size: u64) {
        self.obj_cgroup_charge_gfp(memcg, size, ChargeGfp::Kernel);
    }

    /// `obj_cgroup_charge()` with the charge's reclaim rules `gfp`.
    pub(crate) fn obj_cgroup_charge_gfp(&mut self, memcg: MemcgId, size: u64, gfp: ChargeGfp) {
        if memcg == ROOT_MEM_CGROUP {
            return;
        }
        let (cached, bytes) = self.memcg.obj_stock;
        if cached == memcg && bytes >= size {
            self.memcg.obj_stock.1 -= size;
            return;
        }
        let nr_pages = size.div_ceil(PAGE_SIZE);
        if !self.try_charge_memcg(memcg, gfp, nr_pages) {
            self.memcg_oom(memcg, nr_pages);
        }
        self.memcg.memcgs[memcg.idx()].obj_pages += nr_pages;
        let rest = nr_pages * PAGE_SIZE - size;
        self.obj_stock_switch(memcg);
        self.memcg.obj_stock.1 += rest;
    }

    /// `obj_cgroup_uncharge()` of `size` bytes of freed slab objects
    /// (`refill_obj_stock()` with uncharging allowed): the bytes go to the
    /// object stock (switched to `memcg` first), and whole pages beyond one
    /// go back through the page stock (`obj_cgroup_uncharge_pages()`).
    pub(crate) fn obj_cgroup_uncharge(&mut self, memcg: MemcgId, size: u64) {
        if memcg == ROOT_MEM_CGROUP {
            return;
        }
        self.obj_stock_switch(memcg);
        let bytes = self.memcg.obj_stock.1 + size;
        if bytes > PAGE_SIZE {
            let nr_pages = bytes / PAGE_SIZE;
            self.memcg.obj_stock.1 = bytes % PAGE_SIZE;
            self.memcg.memcgs[memcg.idx()].obj_pages -= nr_pages;
            self.refill_stock(memcg, nr_pages);
        } else {
            self.memcg.obj_stock.1 = bytes;
        }
    }

    /// Make the object stock `memcg`'s: another cgroup's bytes go back
    /// first (`drain_obj_stock()`: whole pages to its counter; the model
    /// drops the sub-page rest, which the kernel keeps in
    /// `nr_charged_bytes`).
    fn obj_stock_switch(&mut self, memcg: MemcgId) {
        let (cached, bytes) = self.memcg.obj_stock;
        if cached == memcg {
            return;
        }
        if cached != ROOT_MEM_CGROUP {
            let pages = bytes / PAGE_SIZE;
            let m = &mut self.memcg.memcgs[cached.idx()];
            m.usage -= pages;
            m.obj_pages -= pages;
        }
        self.memcg.obj_stock = (memcg, 0);
    }

    /// Run `f` with `current` in `memcg` (the cgroup of the task the kernel
    /// runs for: the faulting task, the forking parent, a system call's
    /// caller).
    pub(crate) fn with_current_memcg<T>(
        &mut self,
        memcg: MemcgId,
        f: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let saved = std::mem::replace(&mut self.memcg.current, memcg);
        let r = f(self);
        self.memcg.current = saved;
        r
    }

    /// `split_page_memcg()`: the tails of a split folio keep its charge.
    pub(crate) fn split_page_memcg(&mut self, head: Pfn, nr: u64) {
        let memcg = self.folio_memcg(head);
        if memcg != ROOT_MEM_CGROUP {
            for i in 1..nr {
                self.memcg.folio_memcg[head.idx() + i as usize] = memcg;
            }
        }
    }

    /// `page_counter_try_charge()` (the root is unlimited, so only the
    /// cgroup's own counter can refuse). A refusal counts in the counter's
    /// `failcnt` (cgroup v1 `memory.failcnt`).
    /// With a memory+swap counter (cgroup v1) that one is tried first, as
    /// `try_charge_memcg()` does; its refusal counts nowhere (6.18 tracks
    /// `failcnt` for the memory counter only: `memory.memsw.failcnt` stays
    /// 0). The error names the counter that refused.
    fn page_counter_try_charge(&mut self, memcg: MemcgId, nr: u64) -> Result<(), Counter> {
        let m = &mut self.memcg.memcgs[memcg.idx()];
        if let Some(w) = m.memsw.as_mut() {
            let new = m.usage + w.swap + nr;
            if new > w.max {
                return Err(Counter::Memsw);
            }
            // Charged before the memory counter is tried (and taken back
            // if that one refuses): the watermark keeps it either way.
            w.watermark = w.watermark.max(new);
        }
        if m.usage + nr > m.max {
            self.vmstat
                .count_memcg_events(memcg, crate::mm::vmstat::MemcgEvent::Failcnt, 1);
            return Err(Counter::Memory);
        }
        Self::page_counter_charge(m, nr);
        Ok(())
    }

    /// `page_counter_charge()` of the memory counter (and of memory+swap,
    /// which holds it), with the watermarks.
    fn page_counter_charge(m: &mut MemCgroup, nr: u64) {
        m.usage += nr;
        m.watermark = m.watermark.max(m.usage);
        if let Some(w) = m.memsw.as_mut() {
            w.watermark = w.watermark.max(m.usage + w.swap);
        }
    }

    /// The usage and watermark of every cgroup but the root, in pages, in
    /// the order they were created (`page_counter_read()`, the counter's
    /// `watermark`).
    pub fn memcg_page_counters(&self) -> Vec<(u64, u64)> {
        self.memcg.memcgs[1..]
            .iter()
            .map(|m| (m.usage, m.watermark))
            .collect()
    }

    /// Reset every cgroup's watermark to its usage now, as a write to v1
    /// `memory.max_usage_in_bytes` does (`mem_cgroup_reset()` →
    /// `page_counter_reset_watermark()`); both engines do it at each phase
    /// start, so the peak a phase reports is the phase's own.
    pub fn memcg_reset_watermarks(&mut self) {
        for m in &mut self.memcg.memcgs {
            m.watermark = m.usage;
            if let Some(w) = m.memsw.as_mut() {
                w.watermark = m.usage + w.swap;
            }
        }
    }

    /// `mem_cgroup_margin()`: pages that can still be charged.
    pub(crate) fn mem_cgroup_margin(&self, memcg: MemcgId) -> u64 {
        let m = &self.memcg.memcgs[memcg.idx()];
        let margin = m.max.saturating_sub(m.usage);
        match m.memsw {
            Some(w) => margin.min(w.max.saturating_sub(m.usage + w.swap)),
            None => margin,
        }
    }

    /// `try_charge_memcg()`: the stock, then the counter in a batch, then
    /// the exact amount; over the limit, reclaim in the cgroup and retry as
    /// the kernel does. False where the kernel would fail the charge or go
    /// to the OOM killer.
    fn try_charge_memcg(&mut self, memcg: MemcgId, gfp: ChargeGfp, nr: u64) -> bool {
        let mut batch = nr.max(MEMCG_CHARGE_BATCH);
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        // MEMCG_RECLAIM_MAY_SWAP, dropped for good once the memory+swap
        // limit refused a charge: swapping cannot make room under it.
        let mut may_swap = true;
        loop {
            if self.consume_stock(memcg, nr) {
                return true;
            }
            match self.page_counter_try_charge(memcg, batch) {
                Ok(()) => {
                    if batch > nr {
                        self.refill_stock(memcg, batch - nr);
                    }
                    self.charge_check_high(memcg, batch, gfp);
                    return true;
                }
                Err(Counter::Memsw) => may_swap = false,
                Err(Counter::Memory) => {}
            }
            if batch > nr {
                batch = nr;
                continue;
            }
            if gfp == ChargeGfp::Memalloc {
                // `goto force`: the MEMCG_MAX event, then
                // page_counter_charge() over the limit.
                self.vmstat
                    .count_memcg_events(memcg, MemcgEvent::EventsMax, 1);
                Self::page_counter_charge(&mut self.memcg.memcgs[memcg.idx()], nr);
                return true;
            }
            if gfp == ChargeGfp::NoReclaim {
                return false;
            }
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::EventsMax, 1);
            let reclaimed = self.try_to_free_mem_cgroup_pages(memcg, nr, may_swap, None);
            if self.mem_cgroup_margin(memcg) >= nr {
                continue;
            }
            if !drained {
                self.drain_all_stock(memcg);
                drained = true;
                continue;
            }
            if gfp == ChargeGfp::NoRetry {
                return false;
            }
            if reclaimed > 0 && nr <= 1 << PAGE_ALLOC_COSTLY_ORDER {
                continue;
            }
            if nr_retries > 0 {
                nr_retries -= 1;
                continue;
            }
            // mem_cgroup_oom(): the OOM killer for small charges (refused
            // by the caller), skipped above PAGE_ALLOC_COSTLY_ORDER.
            return false;
        }
    }

    /// A GFP_KERNEL charge failed: the kernel would run the memcg OOM killer,
    /// which the model does not: a [`crate::model_limit`] saying why, which
    /// the engine reports as the step's.
    pub(crate) fn memcg_oom(&mut self, memcg: MemcgId, nr: u64) -> ! {
        let m = &self.memcg.memcgs[memcg.idx()];
        let what = format!(
            "memcg OOM: memory cgroup {} is at its limit ({} of {} pages charged) and \
             reclaim cannot make room for {nr} more page(s); the OOM killer is not modelled",
            memcg.0.saturating_sub(1),
            m.usage,
            m.max
        );
        crate::model_limit(what)
    }

    /// The end of a charge that took `batch` pages from the counter
    /// (`done_restock:` in `try_charge_memcg()`): a cgroup above its
    /// memory.high adds the batch to the task's debt, paid on its way back
    /// to user space; a task that owes more than one batch (it charged
    /// again before returning) pays here, when it may block and is not
    /// reclaiming itself (PF_MEMALLOC). The model's cgroups are children of
    /// the root, whose memory.high is `max`.
    fn charge_check_high(&mut self, memcg: MemcgId, batch: u64, gfp: ChargeGfp) {
        if self.mem_cgroup_over_high(memcg) || self.swap_over_high(memcg) {
            self.memcg.nr_pages_over_high += batch;
        }
        let may_block = matches!(
            gfp,
            ChargeGfp::Kernel | ChargeGfp::NoRetry | ChargeGfp::TransHuge
        );
        if self.memcg.nr_pages_over_high > MEMCG_CHARGE_BATCH && may_block {
            let current = self.memcg.current;
            self.mem_cgroup_handle_over_high(current);
        }
    }

    /// `resume_user_mode_work()` → `mem_cgroup_handle_over_high()`: the
    /// task of `mm` returns to user space after a fault or a system call
    /// and pays what it charged above memory.high. Runs after every fault:
    /// one test when nothing is owed.
    #[inline]
    pub fn resume_user_mode_work(&mut self, mm: MmId) {
        if self.memcg.nr_pages_over_high != 0 {
            let memcg = self.mm_memcg(mm);
            self.mem_cgroup_handle_over_high(memcg);
        }
    }

    /// `__mem_cgroup_handle_over_high()` for the task's cgroup `memcg`
    /// (`get_mem_cgroup_from_mm()`): reclaim what the task charged above
    /// memory.high (`reclaim_high()`), then, while the cgroup stays so far
    /// above it that the penalty (`calculate_high_delay()`) is more than
    /// HZ/100, reclaim again 32 pages at a time while that makes progress
    /// (and MAX_RECLAIM_RETRIES times more); failing that the task sleeps
    /// the penalty, at most two seconds (its clock waits,
    /// `sim/throttled_ns`). The penalty adds what the swap usage above
    /// memory.swap.high costs (`swap_find_max_overage()`, which counts a
    /// `high` event of memory.swap.events at each look); that excess is
    /// never reclaimed, so it alone takes the task through every retry
    /// before it sleeps.
    pub(crate) fn mem_cgroup_handle_over_high(&mut self, memcg: MemcgId) {
        let nr_pages = std::mem::take(&mut self.memcg.nr_pages_over_high);
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut in_retry = false;
        loop {
            let target = if in_retry { SWAP_CLUSTER_MAX } else { nr_pages };
            let nr_reclaimed = self.reclaim_high(memcg, target);
            let swap_overage = self.swap_find_max_overage(memcg);
            let penalty = (self.calculate_high_delay(nr_pages, self.mem_find_max_overage(memcg))
                + self.calculate_high_delay(nr_pages, swap_overage))
            .min(MEMCG_MAX_HIGH_DELAY_JIFFIES);
            if penalty <= HZ / 100 {
                return;
            }
            if nr_reclaimed > 0 || nr_retries > 0 {
                if nr_reclaimed == 0 {
                    nr_retries -= 1;
                }
                in_retry = true;
                continue;
            }
            self.vmstat.throttled_ps += penalty * PS_PER_JIFFY;
            return;
        }
    }

    /// `reclaim_high()`: a cgroup above its memory.high counts a `high`
    /// event (memory.events) and reclaims `nr_pages` in itself, swapping
    /// allowed. Returns the pages reclaimed.
    fn reclaim_high(&mut self, memcg: MemcgId, nr_pages: u64) -> u64 {
        if !self.mem_cgroup_over_high(memcg) {
            return 0;
        }
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::EventsHigh, 1);
        self.try_to_free_mem_cgroup_pages(memcg, nr_pages, true, None)
    }

    /// Whether the cgroup's usage is above its memory.high (the root's is
    /// `max`, and nothing is charged to it).
    fn mem_cgroup_over_high(&self, memcg: MemcgId) -> bool {
        let m = &self.memcg.memcgs[memcg.idx()];
        m.usage > m.high
    }

    /// `mem_find_max_overage()`: how far the cgroup is above its
    /// memory.high, as a fraction of it in 20-bit fixed point
    /// (`calculate_overage()`; the model's cgroups have no ancestor but
    /// the root).
    fn mem_find_max_overage(&self, memcg: MemcgId) -> u64 {
        if !self.mem_cgroup_over_high(memcg) {
            return 0;
        }
        let m = &self.memcg.memcgs[memcg.idx()];
        let high = m.high.max(1);
        ((m.usage - high) << MEMCG_DELAY_PRECISION_SHIFT) / high
    }

    /// Whether the cgroup's swap slots are above its memory.swap.high.
    fn swap_over_high(&self, memcg: MemcgId) -> bool {
        let m = &self.memcg.memcgs[memcg.idx()];
        m.swap_usage > m.swap_high
    }

    /// `swap_find_max_overage()`: how far the cgroup's swap slots are
    /// above its memory.swap.high, in the fixed point of
    /// `calculate_overage()`; a cgroup above it counts a `high` event of
    /// memory.swap.events (the root has no swap.high).
    fn swap_find_max_overage(&mut self, memcg: MemcgId) -> u64 {
        if memcg == ROOT_MEM_CGROUP || !self.swap_over_high(memcg) {
            return 0;
        }
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::SwapEventsHigh, 1);
        let m = &self.memcg.memcgs[memcg.idx()];
        let high = m.swap_high.max(1);
        ((m.swap_usage - high) << MEMCG_DELAY_PRECISION_SHIFT) / high
    }

    /// `calculate_high_delay()`: the sleep in jiffies, quadratic in the
    /// overage, scaled by the task's share (`nr_pages` against a batch).
    fn calculate_high_delay(&self, nr_pages: u64, max_overage: u64) -> u64 {
        if max_overage == 0 {
            return 0;
        }
        let penalty = (max_overage.saturating_mul(max_overage).saturating_mul(HZ))
            >> MEMCG_DELAY_PRECISION_SHIFT
            >> MEMCG_DELAY_SCALING_SHIFT;
        penalty.saturating_mul(nr_pages) / MEMCG_CHARGE_BATCH
    }

    /// cgroup v2 `memory.high` write (`memory_high_write()`): set it, then
    /// reclaim down to it: drain the per-CPU stock once, then reclaim the
    /// excess (swapping allowed) until the usage fits or reclaim has made
    /// no progress MAX_RECLAIM_RETRIES + 1 times. `high_bytes` None is
    /// `max`; bytes round down to pages (`page_counter_memparse()`).
    pub fn memory_high_write(&mut self, memcg: MemcgId, high_bytes: Option<u64>) {
        let high = high_bytes.map_or(PAGE_COUNTER_MAX, |b| b / PAGE_SIZE);
        self.memcg.memcgs[memcg.idx()].high = high;
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        loop {
            let usage = self.memcg.memcgs[memcg.idx()].usage;
            if usage <= high {
                return;
            }
            if !drained {
                self.drain_all_stock(memcg);
                drained = true;
                continue;
            }
            let reclaimed = self.try_to_free_mem_cgroup_pages(memcg, usage - high, true, None);
            if reclaimed == 0 {
                if nr_retries == 0 {
                    return;
                }
                nr_retries -= 1;
            }
        }
    }

    /// `consume_stock()`
    fn consume_stock(&mut self, memcg: MemcgId, nr: u64) -> bool {
        if nr > MEMCG_CHARGE_BATCH {
            return false;
        }
        let s = &mut self.memcg.stock;
        if let Some(i) = s.cached.iter().position(|&c| c == memcg) {
            if s.nr_pages[i] >= nr {
                s.nr_pages[i] -= nr;
                return true;
            }
        }
        false
    }

    /// `refill_stock()`: keep `nr` pre-charged pages for `memcg`.
    fn refill_stock(&mut self, memcg: MemcgId, nr: u64) {
        if nr > MEMCG_CHARGE_BATCH {
            self.memcg.memcgs[memcg.idx()].usage -= nr;
            return;
        }
        let s = &self.memcg.stock;
        if let Some(i) = s.cached.iter().position(|&c| c == memcg) {
            self.memcg.stock.nr_pages[i] += nr;
            if self.memcg.stock.nr_pages[i] > MEMCG_CHARGE_BATCH {
                self.drain_stock(i);
            }
            return;
        }
        // An empty slot, else (the kernel: a random one) the first.
        let i = s
            .cached
            .iter()
            .position(|&c| c == ROOT_MEM_CGROUP)
            .unwrap_or_else(|| {
                self.drain_stock(0);
                0
            });
        self.memcg.stock.cached[i] = memcg;
        self.memcg.stock.nr_pages[i] = nr;
    }

    /// `drain_stock()`: give slot `i`'s pages back to its cgroup's counter.
    fn drain_stock(&mut self, i: usize) {
        let s = &mut self.memcg.stock;
        let (memcg, nr) = (s.cached[i], s.nr_pages[i]);
        s.cached[i] = ROOT_MEM_CGROUP;
        s.nr_pages[i] = 0;
        if memcg != ROOT_MEM_CGROUP {
            self.memcg.memcgs[memcg.idx()].usage -= nr;
        }
    }

    /// `drain_all_stock(root_memcg)`: a CPU whose stock holds pages of the
    /// subtree drains all of its slots (`drain_stock_fully()`).
    pub(crate) fn drain_all_stock(&mut self, root_memcg: MemcgId) {
        let s = self.memcg.stock;
        let needed = (0..NR_MEMCG_STOCK).any(|i| {
            s.cached[i] != ROOT_MEM_CGROUP
                && s.nr_pages[i] > 0
                && self.mem_cgroup_is_descendant(s.cached[i], root_memcg)
        });
        if needed {
            for i in 0..NR_MEMCG_STOCK {
                self.drain_stock(i);
            }
        }
    }

    /// Pages of `memcg` held in the stock (for the invariant checker).
    pub(crate) fn memcg_stock_pages(&self, memcg: MemcgId) -> u64 {
        let s = &self.memcg.stock;
        (0..NR_MEMCG_STOCK)
            .filter(|&i| s.cached[i] == memcg)
            .map(|i| s.nr_pages[i])
            .sum()
    }

    /// cgroup v2 `memory.reclaim` (`user_proactive_reclaim()`): rounds of a
    /// quarter of what is left (reclaim enforces its 32-page minimum), each a
    /// proactive `try_to_free_mem_cgroup_pages()` that may swap, at the
    /// write's `swappiness=` if it had one (`sc->proactive_swappiness`;
    /// [`SWAPPINESS_ANON_ONLY`](crate::mm::vmscan::SWAPPINESS_ANON_ONLY) for
    /// `swappiness=max`). Returns the pages reclaimed; Err when the kernel
    /// returns -EAGAIN (more than MAX_RECLAIM_RETRIES rounds reclaimed
    /// nothing).
    pub fn memory_reclaim(
        &mut self,
        memcg: MemcgId,
        nr_to_reclaim: u64,
        swappiness: Option<u64>,
    ) -> Result<u64, u64> {
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut nr_reclaimed = 0;
        while nr_reclaimed < nr_to_reclaim {
            let batch_size = (nr_to_reclaim - nr_reclaimed) / 4;
            // With no retries left the kernel drains the per-CPU LRU batches
            // (lru_add_drain_all()); the model's are always drained.
            let reclaimed =
                self.try_to_free_mem_cgroup_pages(memcg, batch_size, true, Some(swappiness));
            if reclaimed == 0 {
                if nr_retries == 0 {
                    return Err(nr_reclaimed);
                }
                nr_retries -= 1;
            }
            nr_reclaimed += reclaimed;
        }
        Ok(nr_reclaimed)
    }

    /// cgroup v1 `memory.limit_in_bytes` write (`mem_cgroup_resize_max()`,
    /// mm/memcontrol-v1.c): set the limit if the usage fits under it
    /// (`page_counter_set_max()`); if not, drain the per-CPU stock once,
    /// then reclaim (`try_to_free_mem_cgroup_pages()`, at least 32 pages,
    /// may swap) and try again, until it fits or one reclaim call frees
    /// nothing: Err (-EBUSY), the limit unchanged. `max_pages`: None is
    /// unlimited.
    pub fn mem_cgroup_resize_max(&mut self, memcg: MemcgId, max_pages: Option<u64>) -> KResult<()> {
        let max = max_pages.unwrap_or(PAGE_COUNTER_MAX);
        if let Some(w) = self.memcg.memcgs[memcg.idx()].memsw {
            if max > w.max {
                return Err(KernelError::Errno(
                    "EINVAL",
                    format!(
                        "memory cgroup {}: a memory limit of {max} pages above its \
                         memory+swap limit ({} pages)",
                        memcg.0.saturating_sub(1),
                        w.max
                    ),
                ));
            }
        }
        let mut drained = false;
        loop {
            let m = &mut self.memcg.memcgs[memcg.idx()];
            if m.usage <= max {
                m.max = max;
                return Ok(());
            }
            if !drained {
                self.drain_all_stock(memcg);
                drained = true;
                continue;
            }
            if self.try_to_free_mem_cgroup_pages(memcg, 1, true, None) == 0 {
                self.vmstat.count_memcg_events(
                    memcg,
                    crate::mm::vmstat::MemcgEvent::LimitWriteEbusy,
                    1,
                );
                return Err(KernelError::Errno(
                    "EBUSY",
                    format!(
                        "memory cgroup {}: usage {} pages stays above the new limit {max}",
                        memcg.0.saturating_sub(1),
                        self.memcg.memcgs[memcg.idx()].usage
                    ),
                ));
            }
        }
    }

    /// cgroup v1 `memory.force_empty` (`mem_cgroup_force_empty()`): drain
    /// the stock, then reclaim 32 pages at a time until nothing is charged
    /// or MAX_RECLAIM_RETRIES calls reclaimed nothing. Returns the pages
    /// still charged.
    pub fn mem_cgroup_force_empty(&mut self, memcg: MemcgId) -> u64 {
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        self.drain_all_stock(memcg);
        while nr_retries > 0 && self.memcg.memcgs[memcg.idx()].usage > 0 {
            if self.try_to_free_mem_cgroup_pages(memcg, 1, true, None) == 0 {
                nr_retries -= 1;
            }
        }
        self.memcg.memcgs[memcg.idx()].usage
    }
}

/// `vma_thp_gfp_mask()` with the default `defrag = madvise`: direct reclaim
/// only in MADV_HUGEPAGE ranges.
pub(crate) fn vma_thp_gfp(vma: &crate::mm::mmap::Vma) -> ChargeGfp {
    if vma.vm_flags & crate::mm::mmap::VM_HUGEPAGE != 0 {
        ChargeGfp::TransHuge
    } else {
        ChargeGfp::NoReclaim
    }
}
