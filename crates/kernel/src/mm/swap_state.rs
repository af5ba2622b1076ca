//! Swap readahead (mm/swap_state.c: swapin_readahead(),
//! swap_cluster_readahead(), swap_vma_readahead(), swap_vma_ra_win(),
//! __swapin_nr_pages(), swapin_nr_pages(), swap_update_readahead(),
//! __read_swap_cache_async(); mm/page_io.c: swap_read_folio()), Linux 6.18.
//!
//! A swap-cache miss that does not skip the swap cache reads a window of
//! order-0 folios into the swap cache: by virtual address around the fault
//! (VMA readahead, the window and hit history kept per VMA in
//! `swap_readahead_info`) when `vma_ra_enabled` is set and no swap area is
//! rotational, else an aligned block of swap offsets (cluster readahead,
//! with the machine-wide hit history). Both are sized by `page-cluster`.
//! The folios read ahead carry PG_readahead (`swap_ra`); a fault that finds
//! one counts a readahead hit (`swap_ra_hit`) and grows the next window.
//! Reads complete at once. Not modelled: shmem's cluster readahead
//! (shmem swap-in reads only the faulting slot), NUMA policies, the
//! workingset shadows of swap slots.

use crate::arch::Arch;
use crate::include::linux::mm_types::{PG_READAHEAD, PG_SWAPBACKED, PG_UPTODATE};
use crate::include::linux::pgtable::{pte_index, Pfn, PAGE_SHIFT, PAGE_SIZE, PMD_SIZE};
use crate::mm::memory::Vmf;
use crate::mm::mmap::Vma;
use crate::mm::swapfile::SwpEntry;
use crate::mm::vmstat::{MthpStat, VmEvent};
use crate::mm::workingset::Shadow;
use crate::Kernel;

/// `SWAP_RA_ORDER_CEILING` (64-bit).
const SWAP_RA_ORDER_CEILING: u32 = 5;
/// `SWAP_RA_WIN_SHIFT`: PAGE_SHIFT / 2.
const SWAP_RA_WIN_SHIFT: u32 = PAGE_SHIFT / 2;
/// `SWAP_RA_HITS_MASK`
const SWAP_RA_HITS_MASK: u64 = (1 << SWAP_RA_WIN_SHIFT) - 1;
/// `SWAP_RA_HITS_MAX`
const SWAP_RA_HITS_MAX: u64 = SWAP_RA_HITS_MASK;
/// `SWAP_RA_WIN_MASK`
const SWAP_RA_WIN_MASK: u64 = (PAGE_SIZE - 1) & !SWAP_RA_HITS_MASK;

/// `SWAP_RA_VAL()`: fault address, window and hits packed in one word.
fn swap_ra_val(addr: u64, win: u64, hits: u64) -> u64 {
    (addr & !(PAGE_SIZE - 1))
        | ((win << SWAP_RA_WIN_SHIFT) & SWAP_RA_WIN_MASK)
        | (hits & SWAP_RA_HITS_MASK)
}

/// `GET_SWAP_RA_VAL()`: a VMA without history starts with 4 hits.
fn get_swap_ra_val(vma: &Vma) -> u64 {
    match vma.swap_readahead_info {
        0 => 4,
        v => v,
    }
}

/// The machine-wide state of cluster readahead (statics of
/// mm/swap_state.c).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SwapRa {
    /// `swapin_readahead_hits` (starts at 4).
    pub(crate) hits: u64,
    /// `prev_offset` of `swapin_nr_pages()`.
    pub(crate) prev_offset: u64,
    /// `last_readahead_pages`
    pub(crate) last_readahead_pages: u64,
}

impl Default for SwapRa {
    fn default() -> Self {
        SwapRa {
            hits: 4,
            prev_offset: 0,
            last_readahead_pages: 0,
        }
    }
}

/// `__swapin_nr_pages()`: the next window from the hits since the last
/// one (any hit: a power of two at least 4; none: 2 for an offset next to
/// the previous one, else 1), capped at `max_pages` but never below half
/// the previous window.
fn swapin_nr_pages_of(
    prev_offset: u64,
    offset: u64,
    hits: u64,
    max_pages: u64,
    prev_win: u64,
) -> u64 {
    let mut pages = hits + 2;
    if pages == 2 {
        if offset != prev_offset.wrapping_add(1) && offset != prev_offset.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        pages = pages.next_power_of_two().max(4);
    }
    pages = pages.min(max_pages);
    pages.max(prev_win / 2)
}

impl<A: Arch> Kernel<A> {
    /// `swap_use_vma_readahead()`: enabled, and no rotational swap area is
    /// on (`nr_rotate_swap`).
    fn swap_use_vma_readahead(&self) -> bool {
        self.cfg.vma_ra_enabled && !self.swap.iter().any(|si| si.rotational())
    }

    /// The VMA's readahead word changed: keep the fault's copy and the
    /// mm's VMA in step.
    fn set_swap_ra_info(&mut self, vmf: &mut Vmf, val: u64) {
        vmf.vma.swap_readahead_info = val;
        self.vma_update(vmf.mm, &vmf.vma);
    }

    /// `swap_update_readahead()`: a fault found `folio` in the swap cache.
    /// A folio read ahead (PG_readahead, cleared now) is a hit; VMA
    /// readahead records the address and the hit in the VMA, cluster
    /// readahead counts the hit machine-wide. Large folios are left alone.
    pub(crate) fn swap_update_readahead(&mut self, folio: Pfn, vmf: &mut Vmf) {
        if self.mem.folio_test_large(folio) {
            return;
        }
        let readahead = self.mem.test(folio, PG_READAHEAD);
        self.mem.clear(folio, PG_READAHEAD);
        let vma_ra = self.swap_use_vma_readahead();
        if vma_ra {
            let ra_val = get_swap_ra_val(&vmf.vma);
            let win = (ra_val & SWAP_RA_WIN_MASK) >> SWAP_RA_WIN_SHIFT;
            let mut hits = ra_val & SWAP_RA_HITS_MASK;
            if readahead {
                hits = (hits + 1).min(SWAP_RA_HITS_MAX);
            }
            self.set_swap_ra_info(vmf, swap_ra_val(vmf.address, win, hits));
        }
        if readahead {
            self.vmstat.count_vm_event(VmEvent::SwapRaHit);
            if !vma_ra {
                self.swap_ra.hits += 1;
            }
        }
    }

    /// `swapin_readahead()`: read the faulting slot and its window into
    /// the swap cache; returns the faulting slot's folio (None if memory
    /// or the memory cgroup charge failed).
    pub(crate) fn swapin_readahead(&mut self, vmf: &mut Vmf, entry: SwpEntry) -> Option<Pfn> {
        if self.swap_use_vma_readahead() {
            self.swap_vma_readahead(vmf);
        } else {
            self.swap_cluster_readahead(entry);
        }
        self.read_swap_cache_async(entry, false)
    }

    /// `swapin_nr_pages()`: the cluster window from the machine-wide hits
    /// (which it resets); 1 when `page-cluster` is 0.
    fn swapin_nr_pages(&mut self, offset: u64) -> u64 {
        let max_pages = 1u64 << self.cfg.page_cluster;
        if max_pages <= 1 {
            return 1;
        }
        let ra = &mut self.swap_ra;
        let hits = std::mem::take(&mut ra.hits);
        let pages = swapin_nr_pages_of(
            ra.prev_offset,
            offset,
            hits,
            max_pages,
            ra.last_readahead_pages,
        );
        if hits == 0 {
            ra.prev_offset = offset;
        }
        ra.last_readahead_pages = pages;
        pages
    }

    /// `swap_cluster_readahead()`: the aligned block of swap offsets
    /// around the faulting one (the header slot and the area's end cut
    /// off).
    fn swap_cluster_readahead(&mut self, entry: SwpEntry) {
        let mask = self.swapin_nr_pages(entry.offset) - 1;
        if mask == 0 {
            return;
        }
        let max = self.swap[entry.ty as usize].nr_slots;
        let start = (entry.offset & !mask).max(1);
        let end = (entry.offset | mask).min(max - 1);
        for offset in start..=end {
            let e = SwpEntry {
                ty: entry.ty,
                offset,
            };
            self.read_swap_cache_async(e, offset != entry.offset);
        }
    }

    /// `swap_vma_ra_win()`: the window around the fault from the VMA's
    /// history (growing on hits, following a sequential walk in either
    /// direction), inside the VMA and the faulting PMD block. Returns
    /// (window, start, end).
    fn swap_vma_ra_win(&mut self, vmf: &mut Vmf) -> (u64, u64, u64) {
        let max_win = 1u64 << self.cfg.page_cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            return (1, 0, 0);
        }
        let faddr = vmf.address;
        let ra_val = get_swap_ra_val(&vmf.vma);
        let prev_faddr = ra_val & !(PAGE_SIZE - 1);
        let prev_win = (ra_val & SWAP_RA_WIN_MASK) >> SWAP_RA_WIN_SHIFT;
        let hits = ra_val & SWAP_RA_HITS_MASK;
        let win = swapin_nr_pages_of(
            prev_faddr >> PAGE_SHIFT,
            faddr >> PAGE_SHIFT,
            hits,
            max_win,
            prev_win,
        );
        self.set_swap_ra_info(vmf, swap_ra_val(faddr, win, 0));
        if win == 1 {
            return (1, 0, 0);
        }
        let left = if faddr == prev_faddr.wrapping_add(PAGE_SIZE) {
            faddr as i64
        } else if prev_faddr == faddr + PAGE_SIZE {
            faddr as i64 - ((win << PAGE_SHIFT) as i64) + PAGE_SIZE as i64
        } else {
            faddr as i64 - ((((win - 1) / 2) << PAGE_SHIFT) as i64)
        };
        let right = left + (win << PAGE_SHIFT) as i64;
        let left = left.max(0) as u64;
        let pmd_start = faddr & !(PMD_SIZE - 1);
        let start = left.max(vmf.vma.vm_start).max(pmd_start);
        let end = (right as u64).min(vmf.vma.vm_end).min(pmd_start + PMD_SIZE);
        (win, start, end)
    }

    /// `swap_vma_readahead()`: every swap PTE of the window (of any swap
    /// area) whose slot is still in use is read into the swap cache.
    fn swap_vma_readahead(&mut self, vmf: &mut Vmf) {
        let (win, start, end) = self.swap_vma_ra_win(vmf);
        if win == 1 {
            return;
        }
        let tid = vmf.pte_table.expect("table");
        let mut addr = start;
        while addr < end {
            let pte = self.pt.get(tid, pte_index(addr));
            if pte != 0 && !A::pte_present(pte) {
                let (ty, offset) = A::pte_to_swp_entry(pte);
                // Migration entries and markers are no swap area's.
                if (ty as usize) < self.swap.len() {
                    let e = SwpEntry { ty, offset };
                    self.read_swap_cache_async(e, addr != vmf.address);
                }
            }
            addr += PAGE_SIZE;
        }
    }

    /// `read_swap_cache_async()` / `__read_swap_cache_async()` +
    /// `swap_read_folio()`: the swap-cache folio of `entry`, or a new
    /// order-0 folio charged to the slot's cgroup, added to the swap cache
    /// and the LRU, and read (`readahead`: flagged PG_readahead and
    /// counted `swap_ra`). None for a slot no longer in use, or when
    /// memory or the charge failed.
    pub(crate) fn read_swap_cache_async(
        &mut self,
        entry: SwpEntry,
        readahead: bool,
    ) -> Option<Pfn> {
        use crate::mm::memcontrol::ChargeGfp;
        let si = &self.swap[entry.ty as usize];
        let cached = si.table.page(entry.offset);
        if cached != crate::mm::filemap::NO_PAGE {
            return Some(self.mem.page_folio(Pfn(cached)));
        }
        if si.swap_count(entry.offset) == 0 {
            return None;
        }
        let folio = self.folio_alloc(0)?;
        if !self.mem_cgroup_swapin_charge_folio(folio, entry, ChargeGfp::Kernel) {
            self.folio_free(folio);
            return None;
        }
        self.mem.set(folio, PG_SWAPBACKED);
        // swap_cache_add_folio() hands back the slot's shadow.
        let shadow = self.swap_cache_add_slot(folio, entry);
        self.refault_shadow(folio, shadow);
        self.folio_add_lru(folio);
        self.swap_read_folio(folio, entry);
        if readahead {
            self.mem.set(folio, PG_READAHEAD);
            self.vmstat.count_vm_event(VmEvent::SwapRa);
        }
        Some(folio)
    }

    /// The shadow reclaim left in the slots of a folio being swapped in
    /// (`swap_cache_get_shadow()`, `swap_cache_add_folio()`) is consumed:
    /// if there was one, the folio is a refault (`workingset_refault()`,
    /// before it joins the LRU).
    pub(crate) fn swapin_refault(&mut self, folio: Pfn, entry: SwpEntry) {
        let nr = self.mem.folio_nr_pages(folio);
        let first = entry.offset & !(nr - 1);
        let shadow = self.swap[entry.ty as usize].table.take_shadow(first);
        self.refault_shadow(folio, shadow);
    }

    /// A folio swapped in over a shadow is a refault (`workingset_refault()`).
    pub(crate) fn refault_shadow(&mut self, folio: Pfn, shadow: Option<Shadow>) {
        if let Some(shadow) = shadow {
            self.workingset_refault(folio, shadow);
        }
    }

    /// `swap_read_folio()`: the folio's slots come back from the zeromap
    /// (`swpin_zero`), zswap (`zswap_load()`, mm/zswap.rs) or the device
    /// (`pswpin`, per-size `swpin`); the read completes at once.
    pub(crate) fn swap_read_folio(&mut self, folio: Pfn, entry: SwpEntry) {
        let order = self.mem.order(folio);
        let nr = 1u64 << order;
        let first = entry.offset & !(nr - 1);
        let si = &self.swap[entry.ty as usize];
        let zero = si.zero(first);
        for i in 0..nr {
            let c = si.slot_content(first + i);
            self.mem.set_page_content(folio.plus(i), c);
        }
        let slot = SwpEntry {
            ty: entry.ty,
            offset: first,
        };
        if zero {
            self.vmstat.count_vm_events(VmEvent::SwpInZero, nr);
        } else if !self.zswap_load(folio, slot) {
            // zswap_folio_swapin(): a read from the device. Only the
            // zswap shrinker reads the count, so it is kept only while
            // that shrinker is on (a run's knobs do not change).
            if self.zswap.params.shrinker_enabled {
                let memcg = self.folio_memcg(folio);
                self.zswap_folio_swapin(memcg);
            }
            self.vmstat.count_vm_events(VmEvent::PswpIn, nr);
            self.vmstat.count_mthp_stat(order, MthpStat::Swpin);
        }
        self.mem.set(folio, PG_UPTODATE);
    }
}
