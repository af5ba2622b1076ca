//! Readahead (mm/readahead.c: page_cache_ra_order(), page_cache_sync_ra(),
//! page_cache_async_ra(), page_cache_ra_unbounded(), get_init_ra_size(),
//! get_next_ra_size()), Linux 6.18.
//!
//! Modelled: the window arithmetic, the PG_readahead marker, the folio order
//! ramp (+2 per async round, reset by sync readahead, capped by the window
//! and the mapping), the fallback to min-order folios when part of the window
//! is cached, EOF clamping. A read(2) larger than the window reads ahead
//! up to its own size, no further than the device's `io_pages`
//! (`ractl_max_pages()`); `force_page_cache_ra()` (WILLNEED) reads up to
//! the larger of `ra_pages` and `io_pages`. New
//! folios are charged to the reading task's memory cgroup with
//! __GFP_NORETRY: a failed charge ends the readahead, as a failed
//! allocation does. Not modelled: FMODE_RANDOM forced readahead,
//! blk-cgroup congestion, memory-pressure allocation failures.

use crate::arch::Arch;
use crate::include::linux::mm_types::{PG_READAHEAD, PG_UPTODATE};
use crate::include::linux::pgtable::{Pfn, PAGE_SHIFT};
use crate::mm::filemap::AddFolio;
use crate::mm::memcontrol::ChargeGfp;
use crate::Kernel;

/// `MMAP_LOTSAMISS`
pub(crate) const MMAP_LOTSAMISS: u16 = 100;

/// `struct file_ra_state`
#[derive(Clone, Copy, Debug, Default)]
pub struct FileRaState {
    pub start: u64,
    pub size: u64,
    pub(crate) async_size: u64,
    pub(crate) ra_pages: u64,
    pub order: u32,
    pub(crate) mmap_miss: u16,
    pub(crate) prev_pos: u64,
}

impl FileRaState {
    /// `file_ra_state_init()`: prev_pos = -1.
    pub fn new(ra_pages: u64) -> FileRaState {
        FileRaState {
            ra_pages,
            prev_pos: u64::MAX,
            ..Default::default()
        }
    }
}

/// `get_init_ra_size()`
fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// `get_next_ra_size()`
fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl<A: Arch> Kernel<A> {
    /// `ra_alloc_folio()`: allocate, mark, insert (charging with the
    /// readahead gfp mask, which has __GFP_NORETRY) and read one folio. The
    /// folio stays locked (reclaim keeps it) until the batch's `read_pages()`.
    fn ra_alloc_folio(&mut self, file: u32, index: u64, mark: u64, order: u32) -> bool {
        let f = self.open_files[file as usize].mapping;
        let Some(folio) = self.filemap_alloc_folio(order) else {
            return false;
        };
        if mark.wrapping_sub(index) < (1 << order) {
            self.mem.set(folio, PG_READAHEAD);
        }
        if self.filemap_add_folio(f, folio, index, ChargeGfp::NoRetry) != AddFolio::Added {
            self.folio_free(folio);
            return false;
        }
        self.read_folio(folio);
        self.locked.insert(folio);
        true
    }

    /// `read_pages()`: the batch's reads complete (at once in the model) and
    /// its folios are unlocked.
    fn read_pages(&mut self) {
        self.locked.clear();
    }

    /// `page_cache_ra_order()`: read `ra.size` pages from `start` in folios
    /// of the window's order.
    pub(crate) fn page_cache_ra_order(&mut self, file: u32, start: u64) {
        let f = self.open_files[file as usize].mapping;
        let (i_size, max_order) = {
            let a = &self.files[f.0 as usize];
            (a.i_size, a.max_order)
        };
        if i_size == 0 {
            return;
        }
        let ra = self.open_files[file as usize].ra;
        let mark = start + ra.size - ra.async_size;
        let limit = ((i_size - 1) >> PAGE_SHIFT).min(start + ra.size - 1);
        let new_order = ra
            .order
            .min(max_order)
            .min(63 - ra.size.max(1).leading_zeros());
        self.open_files[file as usize].ra.order = new_order;
        let mut index = start;
        let mut failed = false;
        while index <= limit {
            let mut order = new_order;
            if index & ((1 << order) - 1) != 0 {
                order = index.trailing_zeros();
            }
            while order > 0 && index + (1 << order) - 1 > limit {
                order -= 1;
            }
            if !self.ra_alloc_folio(file, index, mark, order) {
                failed = true;
                break;
            }
            index += 1 << order;
        }
        self.read_pages();
        if failed && ra.size > index - start {
            self.do_page_cache_ra(file, index, ra.size - (index - start), ra.async_size);
        }
    }

    /// `do_page_cache_ra()` + `page_cache_ra_unbounded()`: min-order folios
    /// for the uncached pages of `[index, index + nr)`, clamped to EOF.
    fn do_page_cache_ra(&mut self, file: u32, index: u64, nr: u64, lookahead: u64) {
        let f = self.open_files[file as usize].mapping;
        let i_size = self.files[f.0 as usize].i_size;
        if i_size == 0 {
            return;
        }
        let end_index = (i_size - 1) >> PAGE_SHIFT;
        if index > end_index {
            return;
        }
        let nr = nr.min(end_index - index + 1);
        for i in 0..nr {
            self.vmstat.sim.pagecache_lookup += 1;
            if self.files[f.0 as usize].lookup(index + i).is_some() {
                continue;
            }
            let mark = if lookahead > 0 && lookahead <= nr {
                index + nr - lookahead
            } else {
                u64::MAX
            };
            if !self.ra_alloc_folio(file, index + i, mark, 0) {
                break;
            }
        }
        self.read_pages();
    }

    /// `force_page_cache_ra()` of `nr` pages from `index`
    /// (`POSIX_FADV_WILLNEED`, MADV_WILLNEED of a file mapping): no more
    /// than the larger of the device's `io_pages` (`max_sectors_kb`) and
    /// the file's readahead window, read in 2 MiB chunks of min-order
    /// folios, each clamped to EOF and skipping what is cached.
    pub(crate) fn force_page_cache_ra(&mut self, file: u32, index: u64, nr: u64) {
        let ra_pages = self.open_files[file as usize].ra.ra_pages;
        let mut nr = nr.min(self.io_pages().max(ra_pages));
        let mut index = index;
        while nr > 0 {
            let chunk = nr.min((2 << 20) >> PAGE_SHIFT);
            self.do_page_cache_ra(file, index, chunk, 0);
            index += chunk;
            nr -= chunk;
        }
    }

    /// The bdi's `io_pages`: the device's largest request
    /// (`max_sectors_kb`) in pages (`blk_apply_bdi_limits()`).
    fn io_pages(&self) -> u64 {
        self.cfg.max_sectors_kb >> (PAGE_SHIFT - 10)
    }

    /// `ractl_max_pages()`: how far a request of `req_count` pages through
    /// open file `file` may read ahead: the file's window (`ra_pages`), or
    /// for a larger request (a read(2) of more than the window) up to the
    /// request, as far as the device's `io_pages` allows.
    fn ractl_max_pages(&self, file: u32, req_count: u64) -> u64 {
        let ra_pages = self.open_files[file as usize].ra.ra_pages;
        let io_pages = self.io_pages();
        if req_count > ra_pages && io_pages > ra_pages {
            req_count.min(io_pages)
        } else {
            ra_pages
        }
    }

    /// `page_cache_sync_ra()`: readahead on a cache miss at `index` for a
    /// request of `req_count` pages.
    pub(crate) fn page_cache_sync_ra(&mut self, file: u32, index: u64, req_count: u64) {
        let ra = self.open_files[file as usize].ra;
        if ra.ra_pages == 0 {
            self.do_page_cache_ra(file, index, 1, 0);
            return;
        }
        let max_pages = self.ractl_max_pages(file, req_count);
        let prev_index = if ra.prev_pos == u64::MAX {
            u64::MAX
        } else {
            ra.prev_pos >> PAGE_SHIFT
        };
        let (start, size, async_size);
        if index == 0 || req_count > max_pages || index.wrapping_sub(prev_index) <= 1 {
            start = index;
            size = get_init_ra_size(req_count, max_pages);
            async_size = if size > req_count {
                size - req_count
            } else {
                size >> 1
            };
        } else {
            let miss = self.page_cache_prev_miss(file, index - 1, max_pages);
            let mut contig = index - miss.map_or(0, |m| m + 1);
            if contig <= req_count {
                self.do_page_cache_ra(file, index, req_count, 0);
                return;
            }
            if miss.is_none() {
                contig *= 2;
            }
            start = index;
            size = (contig + req_count).min(max_pages);
            async_size = 1;
        }
        let r = &mut self.open_files[file as usize].ra;
        r.start = start;
        r.size = size;
        r.async_size = async_size;
        r.order = 0;
        self.page_cache_ra_order(file, start);
    }

    /// `page_cache_prev_miss()`: the highest uncached index in
    /// `(index - max_scan, index]`, None if all cached (ULONG_MAX in C, or
    /// the scan ran below 0).
    fn page_cache_prev_miss(&self, file: u32, index: u64, max_scan: u64) -> Option<u64> {
        let f = self.open_files[file as usize].mapping;
        let a = &self.files[f.0 as usize];
        let mut i = index;
        for _ in 0..max_scan {
            if a.lookup(i).is_none() {
                return Some(i);
            }
            if i == 0 {
                return None;
            }
            i -= 1;
        }
        Some(i)
    }

    /// `page_cache_next_miss()`: the first uncached index after `index`
    /// within `max_scan`.
    fn page_cache_next_miss(&self, file: u32, index: u64, max_scan: u64) -> u64 {
        let f = self.open_files[file as usize].mapping;
        let a = &self.files[f.0 as usize];
        let mut i = index;
        for _ in 0..max_scan {
            if a.lookup(i).is_none() {
                return i;
            }
            i += 1;
        }
        i
    }

    /// `page_cache_async_ra()`: a PG_readahead folio was hit at `index`.
    pub(crate) fn page_cache_async_ra(
        &mut self,
        file: u32,
        folio: Pfn,
        index: u64,
        req_count: u64,
    ) {
        let ra = self.open_files[file as usize].ra;
        if ra.ra_pages == 0 {
            return;
        }
        self.mem.clear(folio, PG_READAHEAD);
        debug_assert!(self.mem.test(folio, PG_UPTODATE));
        let max_pages = self.ractl_max_pages(file, req_count);
        let nr = self.mem.folio_nr_pages(folio);
        let expected = (ra.start + ra.size - ra.async_size) & !(nr - 1);
        let (mut start, mut size) = (ra.start, ra.size);
        if index == expected {
            start += size;
            size = size.max(get_next_ra_size(size, max_pages));
        } else {
            let s = self.page_cache_next_miss(file, index + 1, max_pages);
            if s == 0 || s - index > max_pages {
                return;
            }
            start = s;
            size = get_next_ra_size(s - index + req_count, max_pages);
        }
        let order = ra.order + 2;
        let align = 1u64 << order.min(max_pages.trailing_zeros());
        let end = start + size;
        let aligned_end = end & !(align - 1);
        if aligned_end > start {
            size -= end - aligned_end;
        }
        let r = &mut self.open_files[file as usize].ra;
        r.start = start;
        r.size = size;
        r.async_size = size;
        r.order = order;
        self.page_cache_ra_order(file, start);
    }
}
