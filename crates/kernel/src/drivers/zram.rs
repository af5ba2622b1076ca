//! zram's own memory (drivers/block/zram/zram_drv.c), Linux 6.18: the
//! zsmalloc pool (mm/zsmalloc.rs) that a zram swap device compresses its
//! writes into, which takes pages from the machine as reclaim swaps out.
//!
//! Modelled:
//! * `zram_write_page()` of each page of a folio written to the device
//!   (a large folio's bio is written page by page): a page whose words all
//!   hold one value (`page_same_filled()`; the model's zero and repeated
//!   pages) keeps only that value in the slot (`ZRAM_SAME`) and takes no
//!   memory; any other page is compressed and `zs_malloc()`ed. A page that
//!   compresses to `huge_class_size` or more is stored as it is
//!   (`write_incompressible_page()`), in the same one-page zspage class its
//!   compressed length would have picked.
//! * The pool's pages come from the page allocator without watermarks: the
//!   write runs in reclaim (`PF_MEMALLOC`), and `GFP_NOIO` does not reclaim
//!   again. They are nobody's: not on an LRU, not charged to a cgroup.
//! * `zram_slot_free_notify()` when the swap slot is freed
//!   (`swap_range_free()`): the slot's object goes (`zram_free_page()`),
//!   and a zspage it empties gives its pages back.
//! * A page that finds no free page for its object (the free lists empty,
//!   say after a per-CPU list refill took the last pages) fails the write
//!   (-ENOMEM): `__end_swap_bio_write()` makes the folio dirty again and
//!   clears PG_reclaim, and reclaim keeps it in the swap cache. `pswpout`
//!   counted it already; `zram/failed_writes` counts the failures.
//! * `nr_zspages` in /proc/vmstat counts these pages and zswap's; the
//!   device's `mm_stat` fields `orig_data_size` (as pages),
//!   `compr_data_size`, `same_pages` and `huge_pages` are kept as the
//!   writes and frees change them (a page compressed to
//!   `zs_huge_class_size()` or more counts a whole page, as
//!   `write_incompressible_page()` stores it); `mem_used_total` is the
//!   pool's pages, and `mem_used_max` the most it held, raised after each
//!   object's `zs_malloc()` (`zram_can_store_page()`).
//!
//! Approximated: the compressed length is lzo1x-1's for the page's kind of
//! data (zswap's, mm/zswap.rs `LzoLens`); zram's default compressor is lzo-rle,
//! which encodes runs of zero bytes in fewer bytes.
//! Not modelled: `mem_limit`, writeback to a backing device, recompression,
//! compaction, `zram_slot_free_notify()` missing a slot it cannot lock.

use crate::arch::Arch;
use crate::include::linux::pgtable::{Pfn, PAGE_SIZE};
use crate::mm::swapfile::SwpEntry;
use crate::mm::zsmalloc::ZsPool;
use crate::Kernel;
use foliosim_uapi::pagedata::PageContent;

/// `struct zram`: its pool and each slot's object.
#[derive(Debug)]
pub(crate) struct Zram {
    pool: ZsPool,
    /// The zspage holding each slot's object, plus one (0: none, or a
    /// same-filled page).
    handle: Vec<u32>,
    /// What each slot holds, for `mm_stat`: 0 nothing, [`Zram::SAME`] a
    /// same-filled page, else the bytes `compr_data_size` counts for it.
    stored: Vec<u16>,
    /// The most pages the pool ever held (`stats.max_used_pages`).
    max_used_pages: u64,
}

impl Zram {
    /// A slot holding a same-filled page (ZRAM_SAME).
    const SAME: u16 = u16::MAX;

    pub(crate) fn new(nr_slots: u64) -> Zram {
        Zram {
            pool: ZsPool::new(),
            handle: vec![0; nr_slots as usize],
            stored: vec![0; nr_slots as usize],
            max_used_pages: 0,
        }
    }

    /// `zs_get_total_pages()`
    pub(crate) fn pool_pages_allocated(&self) -> u64 {
        self.pool.pages_allocated
    }

    /// `zram_can_store_page()` after an object was allocated: the pool's
    /// pages raise the device's peak (`update_used_max()`). The model has
    /// no `mem_limit`, so the page can always be stored.
    fn can_store_page(&mut self) {
        self.max_used_pages = self.max_used_pages.max(self.pool.pages_allocated);
    }

    /// What a slot recorded as `stored` adds to the `mm_stat` fields of
    /// `VmStat::zram_mm` (pages stored, compressed bytes, same-filled
    /// pages, uncompressed pages).
    fn mm_stat_of(stored: u16) -> [u64; 4] {
        match stored {
            0 => [0; 4],
            Self::SAME => [1, 0, 1, 0],
            len => {
                let len = u64::from(len);
                [1, len, 0, u64::from(len == PAGE_SIZE)]
            }
        }
    }

    /// Add what the slots hold to `mm` (the `mm_stat` fields of
    /// `VmStat::zram_mm`), for the invariant checker.
    pub(crate) fn add_mm_stat(&self, mm: &mut [u64; 4]) {
        for &s in &self.stored {
            for (m, v) in mm.iter_mut().zip(Self::mm_stat_of(s)) {
                *m += v;
            }
        }
    }

    /// The pages of the pool (for the invariant checker).
    pub(crate) fn pool_pages(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.pool.pages()
    }
}

/// `page_same_filled()` of a page of this kind of data.
fn same_filled(c: PageContent) -> bool {
    c == PageContent::ZERO || c == PageContent::REPEATED
}

impl<A: Arch> Kernel<A> {
    /// `zram_write_page()` of the `nr` pages of `folio`, written to the
    /// zram slots from `entry`: false when a page found no memory for its
    /// object, which ends the write there (`zram_bio_write()` fails the
    /// bio with the pages before it stored).
    pub(crate) fn zram_write_folio(&mut self, folio: Pfn, entry: SwpEntry, nr: u64) -> bool {
        let mut ok = true;
        for i in 0..nr {
            let offset = entry.offset + i;
            let c = self.mem.page_content(folio.plus(i));
            let Some((handle, stored)) = self.zram_store(entry.ty, c) else {
                self.vmstat.zram_write_fail += 1;
                ok = false;
                break;
            };
            if handle != 0 {
                self.zram_mut(entry.ty).can_store_page();
            }
            // zram_free_page() of what the slot held before (a swap-cache
            // folio written again to its slot), then the new object.
            self.zram_free_page(entry.ty, offset);
            let zram = self.zram_mut(entry.ty);
            zram.handle[offset as usize] = handle;
            zram.stored[offset as usize] = stored;
            self.zram_mm_stat(stored, true);
        }
        self.zspages_changed();
        ok
    }

    fn zram_mut(&mut self, ty: u32) -> &mut Zram {
        self.swap[ty as usize]
            .zram
            .as_deref_mut()
            .expect("a zram swap area")
    }

    /// The `mm_stat` fields of a slot that gets (`add`) or loses what
    /// [`Zram::stored`] says it holds.
    fn zram_mm_stat(&mut self, stored: u16, add: bool) {
        for (m, v) in self.vmstat.zram_mm.iter_mut().zip(Zram::mm_stat_of(stored)) {
            *m = if add { *m + v } else { *m - v };
        }
    }

    /// A page of kind `c` in area `ty`'s pool: its handle (0 for a
    /// same-filled page, ZRAM_SAME) and what [`Zram::stored`] records of
    /// it, or None when `zs_malloc()` found no page. GFP_NOIO from reclaim
    /// (PF_MEMALLOC): no watermarks, and no reclaim again when the free
    /// lists are empty.
    fn zram_store(&mut self, ty: u32, c: PageContent) -> Option<(u32, u16)> {
        if same_filled(c) {
            return Some((0, Zram::SAME));
        }
        let len = self.lzo_lens.get(c);
        let cpu = self.cpus.current;
        let buddy = &mut self.buddy;
        let zram = self.swap[ty as usize]
            .zram
            .as_deref_mut()
            .expect("a zram swap area");
        let z = zram.pool.malloc(u32::from(len), &mut self.mem, |mem| {
            buddy.alloc_pages(mem, 0, crate::mm::page_alloc::MIGRATE_MOVABLE, cpu, true)
        });
        // write_incompressible_page() stores a page that compressed to the
        // huge class size or more as it is.
        let stored = if u32::from(len) >= zram.pool.huge_class_size {
            PAGE_SIZE as u16
        } else {
            len
        };
        self.count_extfrag();
        match z {
            Ok(z) => Some((z + 1, stored)),
            Err(pages) => {
                for p in pages {
                    self.free_pages(p, 0);
                }
                None
            }
        }
    }

    /// `zram_free_page()`: the slot's object goes, and a zspage that leaves
    /// empty gives its pages back.
    pub(crate) fn zram_free_page(&mut self, ty: u32, offset: u64) {
        let Some(zram) = self.swap[ty as usize].zram.as_deref_mut() else {
            return;
        };
        let z = std::mem::take(&mut zram.handle[offset as usize]);
        let stored = std::mem::take(&mut zram.stored[offset as usize]);
        let emptied = match z {
            0 => Vec::new(),
            z => zram.pool.free(z - 1, &mut self.mem),
        };
        self.zram_mm_stat(stored, false);
        for p in emptied {
            self.free_pages(p, 0);
        }
    }

    /// `nr_zspages`: the pages of every zsmalloc pool, zswap's and zram's;
    /// and the zram devices' `mem_used_total` and `mem_used_max`.
    pub(crate) fn zspages_changed(&mut self) {
        let mut used = [0u64; 2];
        for z in self.swap.iter().filter_map(|si| si.zram.as_deref()) {
            used[0] += z.pool_pages_allocated();
            used[1] += z.max_used_pages;
        }
        self.vmstat.nr_zspages = self.zswap.pool_pages_allocated() + used[0];
        self.vmstat.zram_mem_used = used;
    }
}
