//! Shared anonymous memory (mm/shmem.c: shmem_zero_setup(), shmem_fault(),
//! shmem_get_folio_gfp(), shmem_writeout(), shmem_swapin_folio()), Linux
//! 6.18 with `shmem_enabled = never` and every per-size `shmem_enabled` at
//! `never` (the defaults): every hole is filled with a zeroed, clean
//! order-0 folio on its first fault (read or write; a write fault then
//! dirties it), and `filemap_map_pages()` maps cached pages around later
//! faults. Reclaim drops a clean shmem folio from the page cache without
//! writing it (`__remove_mapping()`, no shadow entry for a swap-backed
//! folio), so the next fault there allocates a new one.
//!
//! Swap: reclaim unmaps a shmem folio from every mapper (its PTEs become
//! none, `try_to_unmap()` of a file folio), then `shmem_writeout()` gives it
//! a swap slot whose count is the page cache's reference (the kernel's
//! SWAP_MAP_SHMEM, modelled as a count of 1), replaces the page-cache slot
//! by the swap entry (an xarray value entry, kept in [`ShmemSwap`]) and
//! writes the folio out from the swap cache. The next fault on that index
//! swaps it in (`shmem_swapin_folio()`): from the swap cache if the folio is
//! still there (minor), else read from the device or the zeromap (major,
//! pgmajfault, pswpin), back into the page cache, dirty, with the slot freed.
//! When the last VMA of a mapping goes (munmap, exit), the unlinked file
//! goes with it (`shmem_evict_inode()`): its folios, swap entries and
//! xarray nodes are freed.
//! MADV_WILLNEED reads the range's swapped-out pages into the swap cache
//! (`shmem_swapin_range()`).
//! Not modelled: shmem huge pages and their knobs, large shmem swap entries,
//! swap readahead, tmpfs files, memfd, fallocate, truncation of a file
//! still mapped.

use std::collections::BTreeMap;

use crate::arch::Arch;
use crate::include::linux::mm_types::{PG_DIRTY, PG_LRU, PG_SWAPBACKED, PG_UPTODATE};
use crate::include::linux::pgtable::{div_round_up, Pfn, PAGE_SIZE};
use crate::mm::filemap::NO_PAGE;
use crate::mm::memory::{Vmf, VM_FAULT_LOCKED, VM_FAULT_MAJOR, VM_FAULT_OOM, VM_FAULT_SIGBUS};
use crate::mm::swapfile::SwpEntry;
use crate::{FileId, Kernel};

/// The swap entries held in shmem page-cache slots: (file, index) → entry.
pub(crate) type ShmemSwap = BTreeMap<(u32, u64), SwpEntry>;

impl<A: Arch> Kernel<A> {
    /// `shmem_zero_setup()` → `shmem_kernel_file_setup()`: an unlinked shmem
    /// inode of `size` bytes.
    pub(crate) fn shmem_file_setup(&mut self, size: u64) -> FileId {
        let f = self.create_file("dev/zero (deleted)", size);
        let a = &mut self.files[f.0 as usize];
        a.shmem = true;
        a.max_order = 0;
        f
    }

    /// `shmem_fault()`: the folio at `vmf.pgoff`, swapped in if its slot
    /// holds a swap entry, allocated on a hole.
    pub(crate) fn shmem_fault(&mut self, vmf: &mut Vmf) -> (u32, Option<Pfn>) {
        let file = vmf.vma.file.expect("shmem file");
        let f = self.open_files[file as usize].mapping;
        if vmf.pgoff >= div_round_up(self.files[f.0 as usize].i_size, PAGE_SIZE) {
            return (VM_FAULT_SIGBUS, None);
        }
        self.vmstat.sim.pagecache_lookup += 1;
        if let Some(p) = self.files[f.0 as usize].lookup(vmf.pgoff) {
            return (VM_FAULT_LOCKED, Some(p));
        }
        if let Some(&entry) = self.shmem_swap.get(&(f.0, vmf.pgoff)) {
            return self.shmem_swapin_folio(f, vmf.pgoff, entry, true);
        }
        let Some(folio) = self.folio_alloc(0) else {
            return (VM_FAULT_OOM, None);
        };
        self.vmstat.sim.page_zero += 1;
        // shmem_alloc_and_add_folio(): charged to the faulting mm's cgroup
        // (the fault's `current`).
        let gfp = crate::mm::memcontrol::ChargeGfp::Kernel;
        let added = self.filemap_add_folio(f, folio, vmf.pgoff, gfp);
        if added == crate::mm::filemap::AddFolio::NoMem {
            self.folio_free(folio);
            return (VM_FAULT_OOM, None);
        }
        debug_assert_eq!(added, crate::mm::filemap::AddFolio::Added);
        // shmem_get_folio_gfp() zeroes a new folio and marks it uptodate,
        // not dirty: a hole that is only read stays clean, and reclaim
        // drops it from the page cache instead of writing it to swap (a
        // write fault dirties it in do_shared_fault(), a write through a
        // clean writable PTE through the PTE's dirty bit).
        self.mem.set(folio, PG_UPTODATE);
        (VM_FAULT_LOCKED, Some(folio))
    }

    /// The swap entry a shmem page-cache slot holds, if the page at `index`
    /// of `f` is swapped out (`xa_load()` finding a value entry).
    pub(crate) fn shmem_swap_entry(&self, f: FileId, index: u64) -> Option<SwpEntry> {
        self.shmem_swap.get(&(f.0, index)).copied()
    }

    /// `shmem_writeout()` for an unmapped order-0 shmem folio under
    /// reclaim: allocate a swap slot (the folio enters the swap cache),
    /// take the page cache's reference on it (`swap_shmem_alloc()`) and put
    /// the swap entry in the page-cache slot
    /// (`shmem_delete_from_page_cache()`). False when no slot was found
    /// (the folio is redirtied and activated). The caller writes it out.
    pub(crate) fn shmem_writeout(&mut self, folio: Pfn) -> bool {
        if self.mem.folio_test_large(folio) {
            crate::model_limit("swap-out of large shmem folios");
        }
        if !self.folio_alloc_swap(folio) {
            return false;
        }
        let entry = self
            .folio_swap(folio)
            .expect("just added to the swap cache");
        self.swap_duplicate(entry, 1);
        let file = self.mem.folio_mapping(folio) as u32 - 1;
        let index = self.mem.folio_index(folio) as u64;
        self.files[file as usize].pages[index as usize] = NO_PAGE;
        self.shmem_swap.insert((file, index), entry);
        self.mem.set_folio_mapping(folio, 0);
        true
    }

    /// The last reference to the unlinked shmem file `f` went (`fput()` of
    /// the last VMA's file → `iput()`): `shmem_evict_inode()`. Its
    /// `shmem_truncate_range()` frees every cached folio (none is mapped
    /// any more) and every swap entry (`shmem_free_swap()` →
    /// `free_swap_and_cache_nr()`, which also frees a folio left only in
    /// the swap cache); the xarray's nodes are freed and uncharged
    /// (`obj_cgroup_uncharge()`). The file's slot is reused.
    pub(crate) fn shmem_evict_inode(&mut self, f: FileId) {
        let pages = std::mem::take(&mut self.files[f.0 as usize].pages);
        for p in pages.into_iter().filter(|&p| p != NO_PAGE) {
            let folio = self.mem.page_folio(Pfn(p));
            if folio != Pfn(p) {
                continue; // a large folio goes with its first page
            }
            self.mem.set_folio_mapping(folio, 0);
            self.folio_free(folio);
        }
        let slots: Vec<_> = self
            .shmem_swap
            .range((f.0, 0)..(f.0 + 1, 0))
            .map(|(&k, &e)| (k, e))
            .collect();
        for (k, entry) in slots {
            self.shmem_swap.remove(&k);
            self.swap_free_nr(entry, 1);
        }
        for (memcg, bytes) in self.files[f.0 as usize].xa.free_all() {
            self.obj_cgroup_uncharge(memcg, bytes);
        }
        self.files[f.0 as usize].shadows = Vec::new();
        self.free_files.push(f);
    }

    /// `shmem_swapin_range()` (mm/madvise.c, MADV_WILLNEED of a shmem
    /// mapping): every swap entry held in the mapping's slots for
    /// `[start, end)` of `vma`, in index order, is read into the swap cache
    /// (`read_swap_cache_async()`, not marked as readahead); the page
    /// cache keeps the entries, so the faults that follow take the folios
    /// from the swap cache (`shmem_swapin_folio()`, minor faults).
    pub(crate) fn shmem_swapin_range(&mut self, vma: &crate::mm::mmap::Vma, start: u64, end: u64) {
        let file = vma.file.expect("a shmem VMA has its file");
        let f = self.open_files[file as usize].mapping;
        let first = vma.linear_page_index(start);
        let last = vma.linear_page_index(end) - 1;
        let entries: Vec<SwpEntry> = self
            .shmem_swap
            .range((f.0, first)..=(f.0, last))
            .map(|(_, &e)| e)
            .collect();
        for entry in entries {
            self.read_swap_cache_async(entry, false);
        }
    }

    /// `shmem_swapin_folio()` for the order-0 entry at `index`: the folio
    /// from the swap cache, or a new one read from the slot (a major
    /// fault when `fault`: called from shmem_fault() with a `fault_type`);
    /// it goes back into the page cache dirty and the slot is released
    /// (`swap_free_nr()`).
    pub(crate) fn shmem_swapin_folio(
        &mut self,
        f: FileId,
        index: u64,
        entry: SwpEntry,
        fault: bool,
    ) -> (u32, Option<Pfn>) {
        let cached = self.swap[entry.ty as usize].table.page(entry.offset);
        let mut ret = VM_FAULT_LOCKED;
        let folio = if cached != NO_PAGE {
            let folio = self.mem.page_folio(Pfn(cached));
            self.folio_wait_writeback(folio);
            self.delete_from_swap_cache(folio);
            folio
        } else {
            if fault {
                ret |= VM_FAULT_MAJOR;
                self.count_pgmajfault();
            }
            let Some(folio) = self.folio_alloc(0) else {
                return (VM_FAULT_OOM, None);
            };
            if !self.mem_cgroup_swapin_charge_folio(
                folio,
                entry,
                crate::mm::memcontrol::ChargeGfp::Kernel,
            ) {
                self.folio_free(folio);
                return (VM_FAULT_OOM, None);
            }
            // swap_read_folio(): the zeromap, zswap or the device.
            self.swap_read_folio(folio, entry);
            // The slot's shadow, if reclaim left one: a refault
            // (`__read_swap_cache_async()` → `workingset_refault()`).
            self.mem.set(folio, PG_SWAPBACKED);
            let shadow = self.swap[entry.ty as usize].table.take_shadow(entry.offset);
            self.refault_shadow(folio, shadow);
            folio
        };
        // shmem_add_to_page_cache() in place of the value entry.
        self.shmem_swap.remove(&(f.0, index));
        self.files[f.0 as usize].pages[index as usize] = folio.0;
        self.mem.set_folio_index(folio, index);
        self.mem.set_folio_mapping(folio, Self::file_mapping_id(f));
        self.mem.set(folio, PG_SWAPBACKED | PG_UPTODATE | PG_DIRTY);
        self.vmstat.sim.pagecache_add += 1;
        if !self.mem.test(folio, PG_LRU) {
            self.folio_add_lru(folio);
        }
        self.swap_free_nr(entry, 1);
        (ret, Some(folio))
    }
}
