//! Swap areas, slot allocation and swap counts (mm/swapfile.c:
//! folio_alloc_swap(), cluster_alloc_swap_entry(), alloc_swap_scan_cluster(),
//! __swap_duplicate(), swap_entries_put_map(), free_swap_and_cache_nr();
//! mm/swap_state.c: swap_cache_add_folio(), __swap_cache_del_folio();
//! mm/page_io.c: swap_writeout()), Linux 6.18 (swap table phase I).
//!
//! Each area has a one-byte swap map per slot (count | SWAP_HAS_CACHE), a
//! swap table (mm/swap_table.rs: each slot's swap-cache page or shadow), a
//! zeromap,
//! and 512-slot clusters that serve one order each. Slot 0 holds the
//! header. Large allocations need a block device (never a swap file) and an
//! aligned free run in a cluster of that order; a failed large allocation
//! tries only the first area. Zero-filled folios go to the zeromap without
//! I/O. I/O completes at once: zram frees the folio in the same reclaim
//! pass; other devices leave it in the swap cache (clean), as after async
//! writeback completes.
//! Each slot records the memory cgroup of the folio swapped out to it
//! (swap-in charges that cgroup).
//! zswap stores folios before the device (mm/zswap.rs).
//! Not modelled: discard, count
//! continuations (counts above 0x3e assert), per-CPU allocation caches,
//! memcg swap limits (memory.swap.max, memsw), and the swap tables' own
//! pages: `swap_cluster_alloc_table()` allocates one for each cluster it
//! takes from the free list, in reclaim with __GFP_HIGH | __GFP_NOMEMALLOC,
//! and when the page allocator refuses it (free pages below half the min
//! watermark), `folio_alloc_swap()` fails and reclaim activates the folio.
//! The model's tables take no memory and never fail.

use crate::arch::Arch;
use crate::drivers::zram::Zram;
use crate::include::linux::mm_types::{PG_DIRTY, PG_SWAPCACHE};
use crate::include::linux::pgtable::{Pfn, HPAGE_PMD_ORDER};
use crate::mm::filemap::NO_PAGE;
use crate::mm::memcontrol::{MemcgId, ROOT_MEM_CGROUP};
use crate::mm::swap_table::SwapTable;
use crate::mm::vmstat::{MthpStat, Trace, VmEvent};
use crate::mm::workingset::Shadow;
use crate::Kernel;
use foliosim_uapi::pagedata::PageContent;
use foliosim_uapi::pagemap::MAX_SWAPFILES_SHIFT;

/// `SWAPFILE_CLUSTER` with THP_SWAP.
pub(crate) const SWAPFILE_CLUSTER: u64 = 512;
/// `SWAP_HAS_CACHE`
pub(crate) const SWAP_HAS_CACHE: u8 = 0x40;
/// `SWAP_MAP_MAX`
pub(crate) const SWAP_MAP_MAX: u8 = 0x3e;
/// `SWAP_MAP_BAD`
pub(crate) const SWAP_MAP_BAD: u8 = 0x3f;
/// `SWAP_NR_ORDERS`: orders 0 to the PMD order.
const SWAP_NR_ORDERS: u32 = HPAGE_PMD_ORDER + 1;

/// What backs a swap area: a file (no SWP_BLKDEV), a block device
/// (SWP_BLKDEV, SWP_SOLIDSTATE unless rotational) or zram (SWP_BLKDEV,
/// SWP_SYNCHRONOUS_IO, solid state).
pub(crate) use foliosim_uapi::SwapKind;

/// A swap entry (`swp_entry_t`): area type and slot offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SwpEntry {
    pub(crate) ty: u32,
    pub offset: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Cluster {
    /// Slots in use (any count or cache; the header and slots past the
    /// end of the area count, as inc_cluster_info_page() counts them).
    count: u32,
    /// The order this cluster serves (valid while count > 0).
    order: u32,
    /// The list the cluster is on (`ci->flags`).
    list: ClusterList,
    /// Its place on that list: clusters join a list's tail
    /// (`move_cluster()`), so the smallest `seq` is the list's head.
    seq: u64,
}

/// `CLUSTER_FLAG_FREE` / `_NONFULL` / `_FRAG` / `_FULL`: which of the
/// area's lists holds a cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ClusterList {
    /// `free_clusters`: no slot in use.
    #[default]
    Free,
    /// `nonfull_clusters[order]`: a slot was freed since the last
    /// allocation in it.
    Nonfull,
    /// `frag_clusters[order]`: allocated in, and not full.
    Frag,
    /// `full_clusters`
    Full,
}

/// `struct swap_info_struct`
#[derive(Debug)]
pub(crate) struct SwapInfo {
    pub kind: SwapKind,
    pub(crate) nr_slots: u64,
    pub(crate) swap_map: Vec<u8>,
    /// The swap table: each slot's swap-cache page or shadow
    /// (mm/swap_table.rs).
    pub(crate) table: SwapTable,
    /// `si->zeromap`: one bit per slot, set for a slot written as a
    /// zero-filled page.
    zeromap: Vec<u64>,
    /// The kind of data written to each slot (zswap on; else empty).
    content: Vec<u8>,
    /// The swap cgroup record (`swap_cgroup`): the id of the memory cgroup
    /// of the folio swapped out to each slot. Zero-filled (the root's id),
    /// and written only where it changes: the host backs none of it while
    /// only the root cgroup swaps.
    memcg: Vec<u16>,
    clusters: Vec<Cluster>,
    /// Next offset to scan per order (the cluster being filled: the
    /// global cluster of a rotating device, the CPU's of a solid-state
    /// one; the model has one allocating CPU).
    next: Vec<Option<u64>>,
    /// The sequence number the next list move takes.
    seq: u64,
    /// How many clusters serve each order (their `order` field): none
    /// for an order above 0 means its non-full and fragmented lists are
    /// empty (`list_empty()`), known without a scan of every cluster.
    nr_of_order: [u32; SWAP_NR_ORDERS as usize],
    pub(crate) inuse_pages: u64,
    /// A zram device's own memory (drivers/zram.rs).
    pub(crate) zram: Option<Box<Zram>>,
}

impl SwapInfo {
    /// `swapon()`: a fresh area of `size` bytes (slot 0 is the header).
    /// The slots of an area of `size` bytes.
    pub(crate) fn slots_of(size: u64) -> u64 {
        (size / 4096).max(2)
    }

    pub(crate) fn new(kind: SwapKind, size: u64) -> SwapInfo {
        let nr_slots = Self::slots_of(size);
        let nr_clusters = nr_slots.div_ceil(SWAPFILE_CLUSTER) as usize;
        let mut si = SwapInfo {
            kind,
            nr_slots,
            swap_map: vec![0; nr_slots as usize],
            table: SwapTable::new(nr_slots as usize),
            zeromap: vec![0; nr_slots.div_ceil(64) as usize],
            content: Vec::new(),
            memcg: vec![ROOT_MEM_CGROUP.0; nr_slots as usize],
            clusters: vec![Cluster::default(); nr_clusters],
            next: vec![None; HPAGE_PMD_ORDER as usize + 1],
            seq: nr_clusters as u64,
            nr_of_order: [0; SWAP_NR_ORDERS as usize],
            inuse_pages: 0,
            zram: matches!(kind, SwapKind::Zram).then(|| Box::new(Zram::new(nr_slots))),
        };
        si.swap_map[0] = SWAP_MAP_BAD;
        // setup_clusters(): the header and the slots past the end are in
        // use; a cluster with a slot in use starts on nonfull_clusters[0],
        // the others on the free list, in index order.
        si.clusters[0].count = 1;
        let tail = nr_slots % SWAPFILE_CLUSTER;
        if tail != 0 {
            si.clusters[nr_clusters - 1].count += (SWAPFILE_CLUSTER - tail) as u32;
        }
        for (i, c) in si.clusters.iter_mut().enumerate() {
            c.seq = i as u64;
            if c.count > 0 {
                c.list = ClusterList::Nonfull;
            }
        }
        si.nr_of_order[0] = nr_clusters as u32;
        si
    }

    /// Set the order cluster `c` serves, keeping `nr_of_order`.
    fn set_cluster_order(&mut self, c: usize, order: u32) {
        self.nr_of_order[self.clusters[c].order as usize] -= 1;
        self.clusters[c].order = order;
        self.nr_of_order[order as usize] += 1;
    }

    /// SWP_BLKDEV
    pub(crate) fn blkdev(&self) -> bool {
        !matches!(self.kind, SwapKind::File)
    }

    /// Not SWP_SOLIDSTATE (counted in `nr_rotate_swap`): a block device
    /// flagged rotational, or a swap file, whose filesystem's device the
    /// model takes as rotational (a disk, as on the reference host).
    pub(crate) fn rotational(&self) -> bool {
        match self.kind {
            SwapKind::File => true,
            SwapKind::Block { rotational } => rotational,
            SwapKind::Zram => false,
        }
    }

    /// SWP_SYNCHRONOUS_IO
    pub(crate) fn synchronous(&self) -> bool {
        matches!(self.kind, SwapKind::Zram)
    }

    /// Keep the kind of data written to each slot (zswap on).
    pub(crate) fn keep_content(&mut self) {
        self.content = vec![PageContent::STORE.0; self.nr_slots as usize];
    }

    /// Whether the slot was written as a zero-filled page (its zeromap bit).
    #[inline(always)]
    pub(crate) fn zero(&self, offset: u64) -> bool {
        self.zeromap[(offset / 64) as usize] & (1 << (offset % 64)) != 0
    }

    #[inline(always)]
    fn set_zero(&mut self, offset: u64, zero: bool) {
        let (w, bit) = ((offset / 64) as usize, 1u64 << (offset % 64));
        if zero {
            self.zeromap[w] |= bit;
        } else {
            self.zeromap[w] &= !bit;
        }
    }

    /// The memory cgroup the slot's folio was charged to when swapped out
    /// (`lookup_swap_cgroup_id()`).
    #[inline(always)]
    pub(crate) fn memcg(&self, offset: u64) -> MemcgId {
        MemcgId(self.memcg[offset as usize])
    }

    /// `swap_cgroup_record()` of one slot.
    #[inline(always)]
    fn set_memcg(&mut self, offset: u64, memcg: MemcgId) {
        let m = &mut self.memcg[offset as usize];
        if *m != memcg.0 {
            *m = memcg.0;
        }
    }

    /// What was written to the slot (swap-in restores it).
    pub(crate) fn slot_content(&self, offset: u64) -> PageContent {
        if self.zero(offset) {
            return PageContent::ZERO;
        }
        PageContent(self.content.get(offset as usize).copied().unwrap_or(1))
    }

    /// The swap count of a slot (without SWAP_HAS_CACHE).
    pub(crate) fn swap_count(&self, offset: u64) -> u8 {
        self.swap_map[offset as usize] & !SWAP_HAS_CACHE
    }

    /// `alloc_swap_scan_cluster()`: an aligned run of 2^order free slots in
    /// cluster `c`, from `start`.
    fn scan_cluster(&self, c: usize, start: u64, order: u32) -> Option<u64> {
        let nr = 1u64 << order;
        let base = c as u64 * SWAPFILE_CLUSTER;
        let end = (base + SWAPFILE_CLUSTER).min(self.nr_slots);
        if order == 0 {
            // One slot: the first free one from `start`.
            let from = start.max(base);
            let free = self.swap_map.get(from as usize..end as usize)?;
            return free.iter().position(|&m| m == 0).map(|i| from + i as u64);
        }
        // ALIGN(): `nr` is a power of two.
        let mut off = (start.max(base) + nr - 1) & !(nr - 1);
        while off + nr <= end {
            if self.swap_map[off as usize..(off + nr) as usize]
                .iter()
                .all(|&m| m == 0)
            {
                return Some(off);
            }
            off += nr;
        }
        None
    }

    /// `move_cluster()`: to the tail of `list`.
    fn move_cluster(&mut self, c: usize, list: ClusterList) {
        self.clusters[c].list = list;
        self.clusters[c].seq = self.seq;
        self.seq += 1;
    }

    /// `relocate_cluster()` after an allocation attempt: full, or
    /// fragmented (with room left), or free.
    fn relocate_cluster(&mut self, c: usize) {
        let (count, list) = (self.clusters[c].count, self.clusters[c].list);
        let to = match count {
            0 => ClusterList::Free,
            n if n as u64 == SWAPFILE_CLUSTER => ClusterList::Full,
            _ => ClusterList::Frag,
        };
        if list != to {
            self.move_cluster(c, to);
        }
    }

    /// `alloc_swap_scan_cluster()`: 2^order slots in cluster `c` from
    /// `start`, claimed; sets the next offset to scan (none once the
    /// cluster is full or scanned to its end, or after a failure).
    #[inline(always)]
    fn alloc_scan_cluster(&mut self, c: usize, start: u64, order: u32) -> Option<u64> {
        let nr = 1u64 << order;
        let found = if self.clusters[c].count as u64 + nr > SWAPFILE_CLUSTER {
            None
        } else {
            self.scan_cluster(c, start, order)
        };
        let mut next = None;
        if let Some(off) = found {
            if self.clusters[c].count == 0 {
                self.set_cluster_order(c, order);
            }
            self.clusters[c].count += nr as u32;
            for o in off..off + nr {
                self.swap_map[o as usize] = SWAP_HAS_CACHE;
            }
            self.inuse_pages += nr;
            let end = ((c as u64 + 1) * SWAPFILE_CLUSTER).min(self.nr_slots);
            if (self.clusters[c].count as u64) < SWAPFILE_CLUSTER && off + nr + nr <= end {
                next = Some(off + nr);
            }
        }
        self.relocate_cluster(c);
        self.next[order as usize] = next;
        found
    }

    /// `alloc_swap_scan_list()`: clusters of `list` (serving `order`,
    /// except the free list) from its head; all of them or only the first.
    fn alloc_scan_list(
        &mut self,
        list: ClusterList,
        list_order: u32,
        order: u32,
        scan_all: bool,
    ) -> Option<u64> {
        let on =
            |cl: &Cluster| cl.list == list && (list == ClusterList::Free || cl.order == list_order);
        debug_assert_eq!(
            self.nr_of_order[list_order as usize] as usize,
            self.clusters
                .iter()
                .filter(|cl| cl.order == list_order)
                .count(),
            "nr_of_order disagrees with the clusters' orders"
        );
        if list != ClusterList::Free && self.nr_of_order[list_order as usize] == 0 {
            return None; // list_empty(): no cluster serves the order
        }
        if !scan_all {
            // Only the head (the smallest seq): no need to sort the list.
            let (c, _) = self
                .clusters
                .iter()
                .enumerate()
                .filter(|(_, cl)| on(cl))
                .min_by_key(|(i, cl)| (cl.seq, *i))?;
            let base = c as u64 * SWAPFILE_CLUSTER;
            return self.alloc_scan_cluster(c, base, order);
        }
        let mut on_list: Vec<(u64, usize)> = self
            .clusters
            .iter()
            .enumerate()
            .filter(|(_, cl)| on(cl))
            .map(|(i, cl)| (cl.seq, i))
            .collect();
        on_list.sort_unstable();
        for (_, c) in on_list {
            let base = c as u64 * SWAPFILE_CLUSTER;
            if let Some(off) = self.alloc_scan_cluster(c, base, order) {
                return Some(off);
            }
            if !scan_all {
                break;
            }
        }
        None
    }

    /// `cluster_alloc_swap_entry()`: the cluster being filled for this
    /// order (while it is in use and serves the order), then
    /// `nonfull_clusters[order]`, the free list, the first of
    /// `frag_clusters[order]`, and for order 0 any other order's fragmented
    /// or non-full clusters. A cluster emptied by frees went to the free
    /// list's tail and no longer holds a swap table, so the next offset
    /// into it is not used (`cluster_is_usable()`).
    #[inline(always)]
    fn cluster_alloc(&mut self, order: u32) -> Option<u64> {
        if order > 0 && !self.blkdev() {
            return None;
        }
        if let Some(n) = self.next[order as usize] {
            let c = (n / SWAPFILE_CLUSTER) as usize;
            let cl = self.clusters[c];
            if cl.count > 0 && (order == 0 || cl.order == order) {
                if let Some(off) = self.alloc_scan_cluster(c, n, order) {
                    return Some(off);
                }
            }
        }
        if order < HPAGE_PMD_ORDER {
            if let Some(off) = self.alloc_scan_list(ClusterList::Nonfull, order, order, true) {
                return Some(off);
            }
        }
        if let Some(off) = self.alloc_scan_list(ClusterList::Free, order, order, false) {
            return Some(off);
        }
        if order < HPAGE_PMD_ORDER {
            if let Some(off) = self.alloc_scan_list(ClusterList::Frag, order, order, false) {
                return Some(off);
            }
        }
        if order > 0 {
            return None;
        }
        for o in 1..SWAP_NR_ORDERS {
            for list in [ClusterList::Frag, ClusterList::Nonfull] {
                if let Some(off) = self.alloc_scan_list(list, o, 0, true) {
                    return Some(off);
                }
            }
        }
        None
    }

    /// Free a slot whose count and cache are both gone
    /// (`swap_entries_free()` → `swap_range_free()`): the cluster goes to
    /// the free list's tail when it empties (`free_cluster()`), else to
    /// its order's non-full list (`partial_free_cluster()`).
    /// Returns the cgroup the slot was charged to, to uncharge.
    #[inline(always)]
    #[must_use]
    fn free_slot(&mut self, offset: u64) -> MemcgId {
        let memcg = self.memcg(offset);
        self.swap_map[offset as usize] = 0;
        self.table.clear(offset);
        self.set_zero(offset, false);
        self.set_memcg(offset, ROOT_MEM_CGROUP);
        self.inuse_pages -= 1;
        let c = (offset / SWAPFILE_CLUSTER) as usize;
        self.clusters[c].count -= 1;
        if self.clusters[c].count == 0 {
            self.move_cluster(c, ClusterList::Free);
            self.set_cluster_order(c, 0);
        } else if self.clusters[c].list != ClusterList::Nonfull {
            self.move_cluster(c, ClusterList::Nonfull);
        }
        memcg
    }
}

impl<A: Arch> Kernel<A> {
    /// `folio->swap` of a folio in the swap cache.
    pub(crate) fn folio_swap(&self, folio: Pfn) -> Option<SwpEntry> {
        self.swap_of.get(folio.0)
    }

    /// `folio_alloc_swap()` + `swap_cache_add_folio()`: give the folio
    /// 2^order contiguous slots and put it in the swap cache.
    pub(crate) fn folio_alloc_swap(&mut self, folio: Pfn) -> bool {
        let order = self.mem.order(folio);
        self.vmstat.sim.swap_alloc += 1;
        let areas = if order > 0 {
            self.swap.len().min(1)
        } else {
            self.swap.len()
        };
        let nr = 1u64 << order;
        for ty in 0..areas {
            if let Some(offset) = self.swap[ty].cluster_alloc(order) {
                let entry = SwpEntry {
                    ty: ty as u32,
                    offset,
                };
                // mem_cgroup_try_charge_swap(): charge the folio's cgroup
                // and record it; over its memory.swap.max the slots go
                // back (put_swap_folio(), nothing written to them).
                if !self.mem_cgroup_try_charge_swap(folio, nr, true) {
                    let si = &mut self.swap[ty];
                    for o in offset..offset + nr {
                        // Not charged yet: the record is the root's.
                        let _ = si.free_slot(o);
                    }
                    self.vmstat.sim.swap_alloc_fail += 1;
                    return false;
                }
                let memcg = self.folio_memcg(folio);
                let si = &mut self.swap[ty];
                for i in 0..nr {
                    // A free slot has no shadow to hand back.
                    si.table.set_page(offset + i, folio.0 + i as u32);
                    si.set_memcg(offset + i, memcg);
                }
                self.swap_of.insert(folio.0, entry);
                self.mem.set(folio, PG_SWAPCACHE);
                self.vmstat.nr_swapcached += 1 << order;
                return true;
            }
        }
        self.mem_cgroup_try_charge_swap(folio, nr, false);
        self.vmstat.sim.swap_alloc_fail += 1;
        false
    }

    /// `swap_duplicate()`: one more swap PTE for `entry`.
    pub(crate) fn swap_duplicate(&mut self, entry: SwpEntry, nr: u64) {
        self.vmstat.sim.swap_lock += 1;
        let si = &mut self.swap[entry.ty as usize];
        for o in entry.offset..entry.offset + nr {
            let m = &mut si.swap_map[o as usize];
            if *m & !SWAP_HAS_CACHE >= SWAP_MAP_MAX {
                crate::model_limit(format!(
                    "swap count continuation (more than {SWAP_MAP_MAX} references to one \
                     swap slot)"
                ));
            }
            *m += 1;
        }
    }

    /// `__swap_cache_del_folio()` + `put_swap_folio()`: drop the folio
    /// from the swap cache and its SWAP_HAS_CACHE pins.
    pub(crate) fn delete_from_swap_cache(&mut self, folio: Pfn) {
        self.swap_cache_del_folio(folio, None);
    }

    /// `__swap_cache_del_folio()` with the shadow reclaim leaves in the
    /// swap table (kept while a swap PTE still holds the slot), then
    /// `put_swap_folio()`.
    pub(crate) fn swap_cache_del_folio(&mut self, folio: Pfn, shadow: Option<Shadow>) {
        let Some(entry) = self.swap_of.remove(folio.0) else {
            return;
        };
        self.mem.clear(folio, PG_SWAPCACHE);
        let nr = self.mem.folio_nr_pages(folio);
        self.vmstat.nr_swapcached -= nr;
        let si = &mut self.swap[entry.ty as usize];
        let mut freed = false;
        let mut uncharge = (ROOT_MEM_CGROUP, 0);
        for o in entry.offset..entry.offset + nr {
            si.table.clear_page(o, shadow);
            si.swap_map[o as usize] &= !SWAP_HAS_CACHE;
            if si.swap_map[o as usize] == 0 {
                uncharge = (si.free_slot(o), uncharge.1 + 1);
                freed = true;
            }
        }
        if freed && self.memcg1_swap_charged() {
            for o in entry.offset..entry.offset + nr {
                if self.swap[entry.ty as usize].swap_map[o as usize] == 0 {
                    self.memcg1_uncharge_swap_slot(uncharge.0, entry.ty, o);
                }
            }
        }
        if freed {
            self.mem_cgroup_uncharge_swap(uncharge.0, uncharge.1);
            self.swap_range_free(entry, nr);
        }
    }

    /// `swap_range_free()` of the freed slots among `nr` from `entry`:
    /// each slot's zswap entry goes (`zswap_invalidate()`), and a zram
    /// device drops its object (`swap_slot_free_notify()`,
    /// drivers/zram.rs).
    #[inline(always)]
    fn swap_range_free(&mut self, entry: SwpEntry, nr: u64) {
        if self.zswap.ever_enabled() || self.swap[entry.ty as usize].zram.is_some() {
            self.swap_range_free_slots(entry, nr);
        }
    }

    /// The part of [`Kernel::swap_range_free`] with zswap or zram to tell.
    fn swap_range_free_slots(&mut self, entry: SwpEntry, nr: u64) {
        let zswap = self.zswap.ever_enabled();
        let zram = self.swap[entry.ty as usize].zram.is_some();
        for offset in entry.offset..entry.offset + nr {
            if self.swap[entry.ty as usize].swap_map[offset as usize] != 0 {
                continue;
            }
            if zswap {
                self.zswap_invalidate(SwpEntry {
                    ty: entry.ty,
                    offset,
                });
            }
            if zram {
                self.zram_free_page(entry.ty, offset);
            }
        }
        if zram {
            self.zspages_changed();
        }
    }

    /// `swap_free_nr()` / the map part of `free_swap_and_cache_nr()`: drop
    /// `nr` swap references from `entry`; a slot left holding only an
    /// unmapped cached folio has that folio reclaimed
    /// (`__try_to_reclaim_swap()`).
    pub(crate) fn swap_free_nr(&mut self, entry: SwpEntry, nr: u64) {
        self.vmstat.sim.swap_lock += 1;
        let mut cached = Vec::new();
        let mut uncharged = Vec::new();
        let mut freed = false;
        {
            let si = &mut self.swap[entry.ty as usize];
            for o in entry.offset..entry.offset + nr {
                let m = &mut si.swap_map[o as usize];
                assert!(*m & !SWAP_HAS_CACHE > 0, "swap_free of a free slot");
                *m -= 1;
                if *m == 0 {
                    let memcg = si.free_slot(o);
                    if memcg != ROOT_MEM_CGROUP {
                        uncharged.push((memcg, o));
                    }
                    freed = true;
                } else if *m == SWAP_HAS_CACHE {
                    cached.push(si.table.page(o));
                }
            }
        }
        for (memcg, o) in uncharged {
            self.mem_cgroup_uncharge_swap(memcg, 1);
            self.memcg1_uncharge_swap_slot(memcg, entry.ty, o);
        }
        if freed {
            self.swap_range_free(entry, nr);
        }
        for p in cached {
            if p == NO_PAGE {
                continue;
            }
            let folio = self.mem.page_folio(Pfn(p));
            // __try_to_reclaim_swap(): not while its write is in flight;
            // reclaim frees it once the write has ended.
            if self.mem.test(folio, PG_SWAPCACHE)
                && !self.mem.folio_mapped(folio)
                && !self.folio_test_writeback(folio)
                && self.folio_swap_unused(folio)
            {
                self.delete_from_swap_cache(folio);
                self.folio_free(folio);
            }
        }
    }

    /// No slot of the folio has swap PTEs left.
    #[inline(always)]
    pub(crate) fn folio_swap_unused(&self, folio: Pfn) -> bool {
        let Some(e) = self.folio_swap(folio) else {
            return true;
        };
        let nr = self.mem.folio_nr_pages(folio);
        (e.offset..e.offset + nr).all(|o| self.swap[e.ty as usize].swap_count(o) == 0)
    }

    /// `swap_writeout()`: a folio whose slots no swap entry references
    /// leaves the swap cache unwritten (`folio_free_swap()`, dirty again);
    /// zero-filled → zeromap; then zswap (mm/zswap.rs); else count the
    /// write-out to the device.
    pub(crate) fn swap_writeout(&mut self, folio: Pfn) -> SwapOut {
        let entry = self.folio_swap(folio).expect("folio in swap cache");
        let order = self.mem.order(folio);
        let nr = 1u64 << order;
        // pageout() traces the write whatever swap_writeout() did.
        self.vmstat.trace(Trace::VmscanWriteFolio);
        self.mem.clear(folio, PG_DIRTY);
        if self.folio_free_swap(folio) {
            return SwapOut::Redirtied;
        }
        let zero = (0..nr).all(|i| !self.mem.page_nonzero(folio.plus(i)));
        let si = &mut self.swap[entry.ty as usize];
        for o in entry.offset..entry.offset + nr {
            si.set_zero(o, zero);
        }
        if zero {
            self.vmstat.count_vm_events(VmEvent::SwpOutZero, nr);
            return SwapOut::NoIo;
        }
        if !self.swap[entry.ty as usize].content.is_empty() {
            for i in 0..nr {
                let c = self.mem.page_content(folio.plus(i));
                self.swap[entry.ty as usize].content[(entry.offset + i) as usize] = c.0;
            }
        }
        if self.zswap.ever_enabled() && self.zswap_store(folio, entry) {
            self.vmstat.count_mthp_stat(order, MthpStat::Zswpout);
            return SwapOut::NoIo;
        }
        if order == HPAGE_PMD_ORDER {
            self.vmstat.count_vm_event(VmEvent::ThpSwpOut);
        }
        self.vmstat.count_mthp_stat(order, MthpStat::Swpout);
        self.vmstat.count_vm_events(VmEvent::PswpOut, nr);
        self.vmstat.sim.swap_write_io += 1;
        if self.swap[entry.ty as usize].zram.is_some() && !self.zram_write_folio(folio, entry, nr) {
            // __end_swap_bio_write() of a failed write.
            self.mem.set(folio, PG_DIRTY);
            return SwapOut::Failed;
        }
        SwapOut::Io
    }

    /// `swap_cache_add_folio()` of a new order-0 folio for `slot`: the
    /// shadow the folio replaces in the swap table comes back.
    pub(crate) fn swap_cache_add_slot(&mut self, folio: Pfn, slot: SwpEntry) -> Option<Shadow> {
        let si = &mut self.swap[slot.ty as usize];
        let shadow = si.table.set_page(slot.offset, folio.0);
        si.swap_map[slot.offset as usize] |= SWAP_HAS_CACHE;
        self.swap_of.insert(folio.0, slot);
        self.mem.set(folio, PG_SWAPCACHE);
        self.vmstat.nr_swapcached += 1;
        shadow
    }
}

/// What `swap_writeout()` did with a folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SwapOut {
    /// Its slots were unused: freed, and the folio is dirty again.
    Redirtied,
    /// Done without device I/O: zero-filled (zeromap) or stored by zswap.
    NoIo,
    /// A write to the device was issued.
    Io,
    /// The device failed the write (zram found no memory for its pool,
    /// drivers/zram.rs): dirty again, still in the swap cache.
    Failed,
}

/// Folio → swap entry of folios in the swap cache (`folio->swap`), by
/// PFN, as the kernel keeps the field in `struct folio`. Reclaim and
/// swap-in look it up, add and drop it per folio; a hash map (foldhash)
/// cost ~200 instructions a folio in those operations, an array a few.
/// Each entry packs the offset above the area's `MAX_SWAPFILES_SHIFT`
/// bits, as a swap PTE does; 0 is none (slot 0 of an area is its header,
/// never a folio's).
///
/// The array is cut into chunks of [`SwapOf::CHUNK`] page frames, each
/// backed only while it holds an entry: under memory pressure every frame
/// passes through the swap cache, but only the few folios between
/// `folio_alloc_swap()` and their freeing are in it at once, so a dense
/// array would keep 4 bytes for every frame of the machine. The chunks
/// live in an arena whose slot 0 stays empty: a frame range without
/// entries points there, so a lookup is two loads and no branch. A range
/// whose last entry goes keeps its chunk (reclaim adds and drops folios of
/// the same ranges over and over) but is queued in `emptied`; a range
/// that needs a chunk takes first that of a queued range still empty, so
/// the arena holds no more chunks than ranges had entries at once.
#[derive(Debug)]
pub(crate) struct SwapOf {
    /// The arena slot of each range of [`SwapOf::CHUNK`] frames.
    slot_of: Vec<u32>,
    arena: Vec<Chunk>,
    /// Ranges whose chunk became empty, each once ([`Chunk::queued`]).
    emptied: Vec<u32>,
}

/// The entries of one range of page frames.
#[derive(Clone, Debug)]
struct Chunk {
    words: [u32; SwapOf::CHUNK],
    /// Entries in `words`.
    live: u16,
    /// The owning range is in [`SwapOf::emptied`].
    queued: bool,
}

impl Chunk {
    const EMPTY: Chunk = Chunk {
        words: [SwapOf::NONE; SwapOf::CHUNK],
        live: 0,
        queued: false,
    };
}

/// The most slots of one area the model takes: the offset's share of a
/// [`SwapOf`] word (512 GiB of 4 KiB pages).
pub(crate) const MAX_SWAP_SLOTS: u64 = 1 << (32 - MAX_SWAPFILES_SHIFT);

impl SwapOf {
    /// No entry.
    const NONE: u32 = 0;
    /// Page frames a chunk covers (4 KiB of words).
    const CHUNK: usize = 1024;

    /// For a machine of `nr_pages` frames.
    pub(crate) fn new(nr_pages: u64) -> SwapOf {
        SwapOf {
            slot_of: vec![0; (nr_pages as usize).div_ceil(Self::CHUNK)],
            arena: vec![Chunk::EMPTY],
            emptied: Vec::new(),
        }
    }

    fn pack(e: SwpEntry) -> u32 {
        debug_assert!(e.offset != 0 && e.offset < MAX_SWAP_SLOTS);
        debug_assert!(e.ty < 1 << MAX_SWAPFILES_SHIFT);
        (e.offset as u32) << MAX_SWAPFILES_SHIFT | e.ty
    }

    fn unpack(v: u32) -> SwpEntry {
        SwpEntry {
            ty: v & ((1 << MAX_SWAPFILES_SHIFT) - 1),
            offset: (v >> MAX_SWAPFILES_SHIFT) as u64,
        }
    }

    /// The chunk and the index in it of `pfn`.
    #[inline(always)]
    fn locate(pfn: u32) -> (usize, usize) {
        (pfn as usize / Self::CHUNK, pfn as usize % Self::CHUNK)
    }

    /// The entry of the folio headed by `pfn`.
    #[inline(always)]
    pub(crate) fn get(&self, pfn: u32) -> Option<SwpEntry> {
        let (c, i) = Self::locate(pfn);
        match self.arena[self.slot_of[c] as usize].words[i] {
            Self::NONE => None,
            v => Some(Self::unpack(v)),
        }
    }

    /// Record the folio's entry.
    #[inline(always)]
    pub(crate) fn insert(&mut self, pfn: u32, e: SwpEntry) {
        let (c, i) = Self::locate(pfn);
        let mut slot = self.slot_of[c];
        if slot == 0 {
            slot = self.take_slot();
            self.slot_of[c] = slot;
        }
        let chunk = &mut self.arena[slot as usize];
        if chunk.words[i] == Self::NONE {
            chunk.live += 1;
        }
        chunk.words[i] = Self::pack(e);
    }

    /// An empty arena slot for a range that gets its first entry: that of
    /// a range emptied since, else a new one.
    #[cold]
    #[inline(never)]
    fn take_slot(&mut self) -> u32 {
        while let Some(c) = self.emptied.pop() {
            let s = self.slot_of[c as usize];
            let chunk = &mut self.arena[s as usize];
            chunk.queued = false;
            if chunk.live == 0 {
                self.slot_of[c as usize] = 0;
                return s;
            }
        }
        self.arena.push(Chunk::EMPTY);
        (self.arena.len() - 1) as u32
    }

    /// Drop the folio's entry, returning it.
    #[inline(always)]
    pub(crate) fn remove(&mut self, pfn: u32) -> Option<SwpEntry> {
        let (c, i) = Self::locate(pfn);
        let chunk = &mut self.arena[self.slot_of[c] as usize];
        match std::mem::replace(&mut chunk.words[i], Self::NONE) {
            Self::NONE => None,
            v => {
                chunk.live -= 1;
                if chunk.live == 0 && !chunk.queued {
                    chunk.queued = true;
                    self.emptied.push(c as u32);
                }
                Some(Self::unpack(v))
            }
        }
    }

    /// Every (PFN, entry), by PFN.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, SwpEntry)> + '_ {
        self.slot_of
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != 0)
            .flat_map(|(c, &s)| {
                self.arena[s as usize]
                    .words
                    .iter()
                    .enumerate()
                    .filter(|(_, &v)| v != Self::NONE)
                    .map(move |(i, &v)| ((c * Self::CHUNK + i) as u32, Self::unpack(v)))
            })
    }

    /// Whether every chunk's count of entries is right, slot 0 empty,
    /// every other slot some range's and no two ranges' (for the invariant
    /// checker).
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut owner = vec![None; self.arena.len()];
        for (c, &s) in self.slot_of.iter().enumerate() {
            if s != 0 {
                if let Some(o) = owner[s as usize].replace(c) {
                    return Err(format!("folio->swap: ranges {o} and {c} share slot {s}"));
                }
            }
        }
        for (s, chunk) in self.arena.iter().enumerate() {
            let n = chunk.words.iter().filter(|&&v| v != Self::NONE).count();
            let ok = if s == 0 {
                n == 0 && owner[s].is_none() && !chunk.queued
            } else {
                owner[s].is_some() && (n > 0 || chunk.queued)
            };
            if !ok || n != chunk.live as usize {
                return Err(format!(
                    "folio->swap slot {s}: {n} entries, counted {}, range {:?}",
                    chunk.live, owner[s]
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(offset: u64) -> SwpEntry {
        SwpEntry { ty: 1, offset }
    }

    #[test]
    fn folio_swap_keeps_a_chunk_only_while_it_holds_entries() {
        let mut s = SwapOf::new(3 * SwapOf::CHUNK as u64);
        assert_eq!(s.get(5), None);
        s.insert(5, e(7));
        s.insert(6, e(8));
        s.insert(2 * SwapOf::CHUNK as u32, e(9));
        assert_eq!(s.get(5), Some(e(7)));
        assert_eq!(s.arena.len(), 3, "the empty slot and two chunks");
        assert_eq!(s.remove(5), Some(e(7)));
        assert_eq!(s.remove(5), None, "gone");
        assert_ne!(s.slot_of[0], 0, "one entry left in the first chunk");
        assert_eq!(s.remove(6), Some(e(8)));
        assert!(s.slot_of[0] != 0 && s.emptied == [0], "emptied, queued");
        s.check().unwrap();
        // Refilled and emptied again: queued once.
        s.insert(7, e(11));
        assert_eq!(s.remove(7), Some(e(11)));
        assert_eq!(s.emptied, [0]);
        // The next range to need a chunk takes the emptied one.
        s.insert(SwapOf::CHUNK as u32 + 1, e(10));
        assert!(s.emptied.is_empty() && s.arena.len() == 3 && s.slot_of[0] == 0);
        let all: Vec<_> = s.iter().collect();
        assert_eq!(
            all,
            [
                (SwapOf::CHUNK as u32 + 1, e(10)),
                (2 * SwapOf::CHUNK as u32, e(9))
            ]
        );
        s.check().unwrap();
    }
}
