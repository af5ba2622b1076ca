//! zswap, the compressed cache in front of the swap devices (mm/zswap.c,
//! mm/page_io.c), Linux 6.18, with the lzo compressor (the guests'
//! `CONFIG_ZSWAP_COMPRESSOR_DEFAULT`) and zsmalloc (mm/zsmalloc.rs).
//!
//! Modelled:
//! * `swap_writeout()` → `zswap_store()` after the zeromap check: per page of
//!   the folio (large folios page by page), `zswap_compress()` (a page that
//!   does not compress below a page is stored as it is, 4096 bytes) and
//!   `zs_malloc()`; the pool limit checked once per folio
//!   (`zswap_check_limits()`: `max_pool_percent` of RAM, then stores resume
//!   below `accept_threshold_percent` of that), a failed store drops the
//!   folio's entries and the folio goes to the device; `zswpout`, the
//!   per-size `zswpout`.
//! * `swap_read_folio()` → `zswap_load()` after the zeromap: `zswpin`; a
//!   swap-cache folio takes over (dirty, the entry freed), a folio read
//!   outside the swap cache leaves the entry to the slot's free.
//! * `zswap_invalidate()` when a slot is freed.
//! * The shrink worker (`shrink_worker()`, `shrink_memcg()`,
//!   `shrink_memcg_cb()`, `zswap_writeback_entry()`): queued by a store the
//!   full pool rejected; it walks the cgroups round robin, one entry of
//!   each LRU per visit, giving referenced entries a second chance (each
//!   such visit counts as a failure, and 16 failures end the run), writing
//!   the others back through a new swap-cache folio (`zswpwb`, `pswpout`),
//!   until the pool is down to the accept threshold.
//! * `zswap_never_enabled()`: once zswap was on, large folios swap in page
//!   by page (`alloc_swap_folio()`).
//! * debugfs (`/sys/kernel/debug/zswap/`): `pool_total_size`,
//!   `stored_pages`, `stored_incompressible_pages`, `written_back_pages`,
//!   `pool_limit_hit`, `reject_reclaim_fail`, `reject_alloc_fail`.
//!
//! Approximated: the compressed size of a page is the size lzo1x-1
//! (the `lzo1x` crate) gives a page of its kind of data
//! ([`foliosim_uapi::pagedata`]), the same for every page of a kind. The
//! shrink worker runs on another CPU in the kernel, as soon as it is
//! scheduled; the model runs it once the reclaimer has had 32 more stores
//! rejected (SWAP_CLUSTER_MAX) and when the reclaim pass ends, taking its
//! folios without watermarks and charging them without reclaim; its
//! written-back folios complete at once.
//! * Memory cgroups (cgroup v2): an entry's compressed bytes are charged to
//!   the folio's cgroup from reclaim (`obj_cgroup_charge_zswap()`, forced
//!   over the limit) and counted in its `zswap` / `zswapped`; its events
//!   `zswpout`, `zswpin`, `zswpwb`; `memory.zswap.max`
//!   (`obj_cgroup_may_zswap()`): over it a store first writes one of the
//!   cgroup's entries back (`shrink_memcg()`) and is rejected if that
//!   fails. A written-back folio is charged to the slot's cgroup.
//!
//! The model charges as cgroup v2 does (cgroup v1 charges nothing for
//! zswap; the engines run zswap only in guests, which mount v2).
//! * The memory-pressure shrinker (`shrinker_enabled`,
//!   `zswap_shrinker_count()`, `zswap_shrinker_scan()`), called by
//!   shrink_slab() (mm/shrinker.rs) after each cgroup's LRU scan: the
//!   cgroup's entries scaled by its compression ratio, less the protection
//!   of recent disk swap-ins (`zswap_folio_swapin()`), walked with the
//!   second chance and written back.
//!
//! Unsupported: other compressors, zsmalloc compaction.

use std::collections::BTreeMap;

use crate::arch::Arch;
use crate::include::linux::mm_types::{
    PG_DIRTY, PG_READAHEAD, PG_SWAPBACKED, PG_SWAPCACHE, PG_UPTODATE,
};
use crate::include::linux::pgtable::{Pfn, PAGE_SIZE};
use crate::mm::memcontrol::{MemcgId, ROOT_MEM_CGROUP};
use crate::mm::swapfile::SwpEntry;
use crate::mm::vmstat::{MemcgEvent, VmEvent};
use crate::mm::zsmalloc::ZsPool;
use crate::Kernel;
use foliosim_uapi::knobs;
use foliosim_uapi::pagedata::{fill_page, PageContent};
use foliosim_uapi::vmstat::ZswapStat;

/// `MAX_RECLAIM_RETRIES`
const MAX_RECLAIM_RETRIES: u32 = 16;
/// `SWAP_CLUSTER_MAX`
const SWAP_CLUSTER_MAX: u32 = 32;

/// `struct zswap_entry`: where the compressed page lies, its length, the
/// second-chance bit, and its place on the LRU (0: no entry).
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    /// The zspage id + 1.
    zspage: u32,
    length: u16,
    referenced: bool,
    /// The cgroup charged for it (`entry->objcg`).
    memcg: MemcgId,
    /// Key of the entry on its cgroup's LRU.
    seq: u64,
}

/// zswap's state: the parameters, the pool, the entries of every slot
/// (`zswap_trees[]`), the LRU of each cgroup (`zswap_list_lru`) and the
/// debugfs statistics.
#[derive(Debug)]
pub(crate) struct Zswap {
    pub(crate) params: knobs::Zswap,
    /// `zswap_ever_enabled`
    ever_enabled: bool,
    pool: ZsPool,
    trees: Vec<Vec<Entry>>,
    lru: BTreeMap<MemcgId, BTreeMap<u64, SwpEntry>>,
    seq: u64,
    /// `zswap_pool_reached_full`
    reached_full: bool,
    /// The shrink work is queued.
    queued: bool,
    /// The shrink worker runs (its writes do not queue it again).
    running: bool,
    /// Stores rejected since the worker was queued.
    rejected: u32,
    /// `zswap_next_shrink`: the cgroup the last worker visit ended at.
    next_shrink: Option<MemcgId>,
    /// `zswap_lruvec_state.nr_disk_swapins` of each cgroup: swap-ins read
    /// from a device, which protect as many entries from the shrinker.
    disk_swapins: BTreeMap<MemcgId, u64>,
}

/// What one visit of `shrink_memcg_cb()` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Visit {
    /// The cgroup has no entry (the walk found nothing).
    Empty,
    /// A referenced entry lost the bit and rotated (LRU_ROTATE).
    Rotated,
    /// The entry was written back (LRU_REMOVED_RETRY).
    WrittenBack,
    /// The writeback failed (LRU_RETRY); `exists`: its slot already had a
    /// swap-cache folio (-EEXIST).
    Failed { exists: bool },
}

/// The length lzo1x-1 gives a page of each kind of data (at most a page:
/// a page that does not compress is stored as it is), computed the first
/// time a kind is asked for.
#[derive(Debug)]
pub(crate) struct LzoLens(Vec<u16>);

impl LzoLens {
    pub(crate) fn new() -> LzoLens {
        LzoLens(vec![0; PageContent::COUNT])
    }

    pub(crate) fn get(&mut self, c: PageContent) -> u16 {
        let slot = &mut self.0[c.0 as usize];
        if *slot == 0 {
            let mut page = vec![0u8; PAGE_SIZE as usize];
            fill_page(c, 0, &mut page);
            let n = lzo1x::compress(&page, lzo1x::CompressLevel::default()).len();
            *slot = n.min(PAGE_SIZE as usize) as u16;
        }
        *slot
    }
}

impl Zswap {
    pub(crate) fn new(params: knobs::Zswap, swap_slots: &[u64]) -> Zswap {
        let on = params.enabled;
        Zswap {
            params,
            ever_enabled: on,
            pool: ZsPool::new(),
            trees: if on {
                swap_slots
                    .iter()
                    .map(|&n| vec![Entry::default(); n as usize])
                    .collect()
            } else {
                Vec::new()
            },
            lru: BTreeMap::new(),
            seq: 0,
            reached_full: false,
            queued: false,
            running: false,
            rejected: 0,
            next_shrink: None,
            disk_swapins: BTreeMap::new(),
        }
    }

    /// `zs_get_total_pages()` of the pool.
    pub(crate) fn pool_pages_allocated(&self) -> u64 {
        self.pool.pages_allocated
    }

    /// `!zswap_never_enabled()`
    #[inline]
    pub(crate) fn ever_enabled(&self) -> bool {
        self.ever_enabled
    }

    fn entry(&self, e: SwpEntry) -> Option<Entry> {
        let en = *self.trees.get(e.ty as usize)?.get(e.offset as usize)?;
        (en.zspage != 0).then_some(en)
    }

    /// The pages of the pool (for the invariant checker).
    pub(crate) fn pool_pages(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.pool.pages()
    }
}

impl<A: Arch> Kernel<A> {
    /// `zswap_max_pages()`: `max_pool_percent` of `totalram_pages()`.
    fn zswap_max_pages(&self) -> u64 {
        self.buddy.managed * u64::from(self.zswap.params.max_pool_percent) / 100
    }

    /// `zswap_check_limits()`: whether the pool is (still) full.
    fn zswap_check_limits(&mut self) -> bool {
        let cur = self.zswap.pool.pages_allocated;
        let max = self.zswap_max_pages();
        let thr = max * u64::from(self.zswap.params.accept_threshold_percent) / 100;
        if cur >= max {
            self.vmstat.count_zswap(ZswapStat::PoolLimitHit, 1);
            self.zswap.reached_full = true;
        } else if self.zswap.reached_full && cur <= thr {
            self.zswap.reached_full = false;
        }
        self.zswap.reached_full
    }

    /// `zswap_store()` of a swap-cache folio: true when every page went to
    /// the pool.
    pub(crate) fn zswap_store(&mut self, folio: Pfn, entry: SwpEntry) -> bool {
        let nr = self.mem.folio_nr_pages(folio);
        let stored = self.zswap.params.enabled && self.zswap_store_pages(folio, entry, nr);
        if stored {
            let memcg = self.folio_memcg(folio);
            if memcg != ROOT_MEM_CGROUP {
                self.vmstat
                    .count_memcg_events(memcg, MemcgEvent::Zswpout, nr);
            }
            self.vmstat.count_vm_events(VmEvent::Zswpout, nr);
            return true;
        }
        if self.zswap.reached_full {
            // queue_work(): the worker runs after the reclaimer has gone on
            // for a reclaim batch (SWAP_CLUSTER_MAX folios) of rejected
            // stores, or when the reclaim pass ends.
            self.zswap.queued = true;
            self.zswap.rejected += 1;
            if self.zswap.rejected >= SWAP_CLUSTER_MAX {
                self.zswap_run_queued();
            }
        }
        // check_old: stale entries of the folio's slots go.
        for i in 0..nr {
            self.zswap_invalidate(SwpEntry {
                ty: entry.ty,
                offset: entry.offset + i,
            });
        }
        false
    }

    fn zswap_store_pages(&mut self, folio: Pfn, entry: SwpEntry, nr: u64) -> bool {
        let memcg = self.folio_memcg(folio);
        // obj_cgroup_may_zswap(): over its memory.zswap.max the cgroup
        // first writes one of its own entries back (shrink_memcg()); the
        // store goes on only if that worked.
        if !self.obj_cgroup_may_zswap(memcg) && self.zswap_shrink_memcg(memcg) != Some(true) {
            return false;
        }
        if self.zswap_check_limits() {
            return false;
        }
        for i in 0..nr {
            let c = self.mem.page_content(folio.plus(i));
            let length = self.lzo_lens.get(c);
            let buddy = &mut self.buddy;
            let cpu = self.cpus.current;
            // GFP_NOWAIT from reclaim (PF_MEMALLOC): no watermarks.
            let z = self
                .zswap
                .pool
                .malloc(u32::from(length), &mut self.mem, |mem| {
                    buddy.alloc_pages(mem, 0, crate::mm::page_alloc::MIGRATE_MOVABLE, cpu, true)
                });
            self.count_extfrag();
            let z = match z {
                Ok(z) => z,
                Err(pages) => {
                    for p in pages {
                        self.free_pages(p, 0);
                    }
                    self.vmstat.count_zswap(ZswapStat::RejectAllocFail, 1);
                    return false;
                }
            };
            let slot = SwpEntry {
                ty: entry.ty,
                offset: entry.offset + i,
            };
            self.zswap_invalidate(slot);
            let seq = self.zswap.seq;
            self.zswap.seq += 1;
            self.zswap.trees[slot.ty as usize][slot.offset as usize] = Entry {
                zspage: z + 1,
                length,
                referenced: true,
                memcg,
                seq,
            };
            // obj_cgroup_charge_zswap(): the compressed bytes are the
            // cgroup's, charged from reclaim (PF_MEMALLOC: forced).
            if memcg != ROOT_MEM_CGROUP {
                let gfp = crate::mm::memcontrol::ChargeGfp::Memalloc;
                self.obj_cgroup_charge_gfp(memcg, u64::from(length), gfp);
                let m = &mut self.vmstat.memcg[memcg.idx()];
                m.zswap_b += u64::from(length);
                m.zswapped += 1;
            }
            self.zswap.lru.entry(memcg).or_default().insert(seq, slot);
            self.vmstat.count_zswap(ZswapStat::StoredPages, 1);
            if u64::from(length) == PAGE_SIZE {
                self.vmstat
                    .count_zswap(ZswapStat::StoredIncompressiblePages, 1);
            }
            self.zswap_pool_size_changed();
        }
        true
    }

    /// `obj_cgroup_may_zswap()`: the cgroup's compressed pages are below
    /// its `memory.zswap.max` (the root has none; cgroups are children of
    /// the root in the model). A cgroup with a limit other than 0 has its
    /// statistics flushed first, forced (mm/memcg_rstat.rs).
    fn obj_cgroup_may_zswap(&mut self, memcg: MemcgId) -> bool {
        if memcg == ROOT_MEM_CGROUP {
            return true;
        }
        let max = self.memcg.memcgs[memcg.idx()].zswap_max;
        if max == crate::mm::memcontrol::PAGE_COUNTER_MAX {
            return true;
        }
        if max == 0 {
            return false;
        }
        self.mem_cgroup_flush_stats(memcg, true);
        self.vmstat.memcg[memcg.idx()].zswap_b / PAGE_SIZE < max
    }

    /// `pool_total_size` follows the pool's pages.
    fn zswap_pool_size_changed(&mut self) {
        self.vmstat.zswap[ZswapStat::PoolTotalSize as usize] =
            self.zswap.pool.pages_allocated * PAGE_SIZE;
        self.zspages_changed();
    }

    /// `zswap_entry_free()` of the entry of `slot`, if any
    /// (`zswap_invalidate()`).
    pub(crate) fn zswap_invalidate(&mut self, slot: SwpEntry) {
        let Some(en) = self.zswap.entry(slot) else {
            return;
        };
        self.zswap.trees[slot.ty as usize][slot.offset as usize] = Entry::default();
        let memcg = en.memcg;
        if let Some(l) = self.zswap.lru.get_mut(&memcg) {
            l.remove(&en.seq);
        }
        // obj_cgroup_uncharge_zswap()
        if memcg != ROOT_MEM_CGROUP {
            self.obj_cgroup_uncharge(memcg, u64::from(en.length));
            let m = &mut self.vmstat.memcg[memcg.idx()];
            m.zswap_b -= u64::from(en.length);
            m.zswapped -= 1;
        }
        for p in self.zswap.pool.free(en.zspage - 1, &mut self.mem) {
            self.free_pages(p, 0);
        }
        self.vmstat.uncount_zswap(ZswapStat::StoredPages, 1);
        if u64::from(en.length) == PAGE_SIZE {
            self.vmstat
                .uncount_zswap(ZswapStat::StoredIncompressiblePages, 1);
        }
        self.zswap_pool_size_changed();
    }

    /// `zswap_load()` of an order-0 folio reading `slot`: true when zswap
    /// held it. A swap-cache folio takes the data over (dirty; the entry
    /// freed).
    pub(crate) fn zswap_load(&mut self, folio: Pfn, slot: SwpEntry) -> bool {
        if !self.zswap.ever_enabled || self.zswap.entry(slot).is_none() {
            return false;
        }
        assert_eq!(self.mem.order(folio), 0, "zswap_load() of a large folio");
        self.vmstat.count_vm_event(VmEvent::Zswpin);
        let memcg = self.zswap.entry(slot).expect("checked above").memcg;
        if memcg != ROOT_MEM_CGROUP {
            self.vmstat.count_memcg_events(memcg, MemcgEvent::Zswpin, 1);
        }
        if self.mem.test(folio, PG_SWAPCACHE) {
            self.mem.set(folio, PG_DIRTY);
            self.zswap_invalidate(slot);
        }
        true
    }

    /// Run the shrink worker if a rejected store queued it.
    pub(crate) fn zswap_run_queued(&mut self) {
        if self.zswap.queued && !self.zswap.running {
            self.zswap.queued = false;
            self.zswap.rejected = 0;
            self.zswap.running = true;
            self.zswap_shrink_worker();
            self.zswap.running = false;
        }
    }

    /// `mem_cgroup_iter(NULL, zswap_next_shrink)`: the root, then each
    /// cgroup in id order, then None (the end of a walk).
    fn zswap_next_memcg(&mut self) -> Option<MemcgId> {
        let n = self.memcg.memcgs.len() as u16;
        let next = match self.zswap.next_shrink {
            None => Some(ROOT_MEM_CGROUP),
            Some(cur) => (cur.0 + 1 < n).then(|| MemcgId(cur.0 + 1)),
        };
        self.zswap.next_shrink = next;
        next
    }

    /// `shrink_worker()`: write entries back until the pool is down to
    /// the accept threshold or 16 visits failed.
    fn zswap_shrink_worker(&mut self) {
        let thr =
            self.zswap_max_pages() * u64::from(self.zswap.params.accept_threshold_percent) / 100;
        let (mut failures, mut attempts) = (0u32, 0u32);
        loop {
            match self.zswap_next_memcg() {
                None => {
                    if attempts == 0 {
                        failures += 1;
                        if failures == MAX_RECLAIM_RETRIES {
                            break;
                        }
                    }
                    attempts = 0;
                }
                Some(memcg) => match self.zswap_shrink_memcg(memcg) {
                    None => {} // -ENOENT: nothing of this cgroup in zswap
                    Some(ok) => {
                        attempts += 1;
                        if !ok {
                            failures += 1;
                            if failures == MAX_RECLAIM_RETRIES {
                                break;
                            }
                        }
                    }
                },
            }
            if self.zswap.pool.pages_allocated <= thr {
                break;
            }
        }
    }

    /// `shrink_memcg()`: one entry from the head of the cgroup's LRU (None:
    /// none there, -ENOENT); true when it was written back.
    fn zswap_shrink_memcg(&mut self, memcg: MemcgId) -> Option<bool> {
        match self.zswap_lru_visit(memcg) {
            Visit::Empty => None,
            Visit::WrittenBack => Some(true),
            Visit::Rotated | Visit::Failed { .. } => Some(false),
        }
    }

    /// `shrink_memcg_cb()` on the head of the cgroup's LRU: a referenced
    /// entry loses the bit and rotates; another rotates and is written
    /// back.
    fn zswap_lru_visit(&mut self, memcg: MemcgId) -> Visit {
        let Some(l) = self.zswap.lru.get_mut(&memcg) else {
            return Visit::Empty;
        };
        let Some((&seq, &slot)) = l.iter().next() else {
            return Visit::Empty;
        };
        l.remove(&seq);
        let new_seq = self.zswap.seq;
        self.zswap.seq += 1;
        l.insert(new_seq, slot);
        let en = &mut self.zswap.trees[slot.ty as usize][slot.offset as usize];
        en.seq = new_seq;
        if en.referenced {
            en.referenced = false;
            return Visit::Rotated;
        }
        let exists = self.swap[slot.ty as usize].table.cached(slot.offset);
        if self.zswap_writeback_entry(slot) {
            self.vmstat.count_zswap(ZswapStat::WrittenBackPages, 1);
            Visit::WrittenBack
        } else {
            self.vmstat.count_zswap(ZswapStat::RejectReclaimFail, 1);
            Visit::Failed { exists }
        }
    }

    /// `zswap_folio_swapin()`: a swap-in read from a device (not the
    /// zeromap, not zswap) into a folio of `memcg`.
    pub(crate) fn zswap_folio_swapin(&mut self, memcg: MemcgId) {
        *self.zswap.disk_swapins.entry(memcg).or_default() += 1;
    }

    /// `zswap_shrinker_count()`: how many of the cgroup's entries the
    /// shrinker may write back. None unless `shrinker_enabled` (reclaim's
    /// gfp always allows I/O and FS here). The cgroup's statistics are
    /// memcg_page_state()'s, hierarchical: the root's are its children's,
    /// since the root's own entries have no obj_cgroup and are neither
    /// charged nor counted. Its LRU's length, less the entries as many
    /// recent disk swap-ins protect (that protection used up), scaled by
    /// the compression ratio (compressed pages / stored entries).
    pub(crate) fn zswap_shrinker_count(&mut self, memcg: MemcgId) -> u64 {
        if !self.zswap.params.shrinker_enabled {
            return 0;
        }
        // The cgroup-wide counts it reads are flushed first when enough
        // updates are pending (mm/memcg_rstat.rs); so are its LRU sizes.
        self.mem_cgroup_flush_stats(memcg, false);
        let (backing_bytes, stored) = if memcg == ROOT_MEM_CGROUP {
            self.vmstat.memcg[1..]
                .iter()
                .fold((0, 0), |(b, n), m| (b + m.zswap_b, n + m.zswapped))
        } else {
            let m = &self.vmstat.memcg[memcg.idx()];
            (m.zswap_b, m.zswapped)
        };
        let backing = backing_bytes / PAGE_SIZE;
        if stored == 0 {
            return 0;
        }
        let mut freeable = self.zswap.lru.get(&memcg).map_or(0, |l| l.len() as u64);
        if freeable == 0 {
            return 0;
        }
        let swapins = self.zswap.disk_swapins.entry(memcg).or_default();
        let remain = swapins.saturating_sub(freeable);
        freeable -= *swapins - remain;
        *swapins = remain;
        if freeable == 0 {
            return 0;
        }
        // mult_frac(freeable, backing, stored)
        (freeable / stored) * backing + (freeable % stored) * backing / stored
    }

    /// `zswap_shrinker_scan()`: walk `nr_to_scan` entries of the cgroup's
    /// LRU (`list_lru_shrink_walk()` with shrink_memcg_cb()); the entries
    /// written back, or None (SHRINK_STOP) when none was or when a
    /// writeback found its slot already in the swap cache (shrinking into
    /// the warm part of the LRU).
    pub(crate) fn zswap_shrinker_scan(&mut self, memcg: MemcgId, nr_to_scan: u64) -> Option<u64> {
        if !self.zswap.params.shrinker_enabled {
            return None;
        }
        let mut written = 0;
        for _ in 0..nr_to_scan {
            match self.zswap_lru_visit(memcg) {
                Visit::Empty => break,
                Visit::WrittenBack => written += 1,
                Visit::Rotated | Visit::Failed { exists: false } => {}
                Visit::Failed { exists: true } => return None,
            }
        }
        (written > 0).then_some(written)
    }

    /// `zswap_writeback_entry()`: a new swap-cache folio for the slot,
    /// filled from the pool, written to the device; false when the slot
    /// already has a folio in the swap cache (-EEXIST) or no memory.
    fn zswap_writeback_entry(&mut self, slot: SwpEntry) -> bool {
        let si = &self.swap[slot.ty as usize];
        if si.table.cached(slot.offset) {
            return false;
        }
        // GFP_KERNEL from reclaim (PF_MEMALLOC), also for the worker.
        let movable = crate::mm::page_alloc::MIGRATE_MOVABLE;
        let Some(folio) = self.alloc_page_no_reclaim(movable, true) else {
            return false;
        };
        self.mem.prep_new_folio(folio, 0);
        self.vmstat.sim.folio_alloc += 1;
        // __read_swap_cache_async(): charged to the slot's cgroup; the
        // model charges as from reclaim (forced), also for the worker.
        let gfp = crate::mm::memcontrol::ChargeGfp::Memalloc;
        let charged = self.mem_cgroup_swapin_charge_folio(folio, slot, gfp);
        debug_assert!(charged, "a forced charge does not fail");
        let c = self.swap[slot.ty as usize].slot_content(slot.offset);
        self.mem.set_page_content(folio, c);
        self.mem.set(folio, PG_SWAPBACKED);
        let shadow = self.swap_cache_add_slot(folio, slot);
        self.refault_shadow(folio, shadow);
        self.folio_add_lru(folio);
        self.vmstat.count_vm_event(VmEvent::Zswpwb);
        let memcg = self.zswap.entry(slot).expect("the slot's entry").memcg;
        if memcg != ROOT_MEM_CGROUP {
            self.vmstat.count_memcg_events(memcg, MemcgEvent::Zswpwb, 1);
        }
        self.zswap_invalidate(slot);
        self.mem.set(folio, PG_UPTODATE);
        // __swap_writepage() with PG_reclaim; the write completes at once.
        // On a device with asynchronous I/O, folio_end_writeback() then
        // finds the folio on the LRU and rotates it to the inactive tail;
        // a synchronous device (zram) ends the write while the folio still
        // waits in the CPU's lru_add batch (folio_add_lru()), off the LRU,
        // so it is not rotated and joins the LRU's head.
        if !self.swap[slot.ty as usize].synchronous() {
            self.mem.set(folio, PG_READAHEAD);
        }
        self.vmstat.count_vm_event(VmEvent::PswpOut);
        self.vmstat.sim.swap_write_io += 1;
        if self.swap[slot.ty as usize].zram.is_some() && !self.zram_write_folio(folio, slot, 1) {
            // __end_swap_bio_write() of a failed write: dirty again, no
            // PG_reclaim, so not rotated.
            self.mem.set(folio, PG_DIRTY);
            self.mem.clear(folio, PG_READAHEAD);
        }
        self.folio_end_writeback_reclaim(folio);
        true
    }
}
