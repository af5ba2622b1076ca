//! The page cache and file faults (mm/filemap.c: filemap_add_folio(),
//! __filemap_get_folio(), filemap_fault(), filemap_map_pages(),
//! next_uptodate_folio(), filemap_map_pmd(), filemap_map_folio_range(),
//! filemap_map_order0_folio(), do_async_mmap_readahead(),
//! do_sync_mmap_readahead(), generic_perform_write(), filemap_read()),
//! Linux 6.18.
//!
//! A file is an inode with an i_size and a page cache: one slot per page
//! index holding the PFN of that page (a large folio fills the slots of all
//! its pages, like a multi-index xarray entry). I/O completes instantly:
//! folios are never found locked or under read, so faults retry only where
//! the kernel drops the mmap lock to start I/O. Files are ext4-like (large
//! folios of orders 0..=9, `page_mkwrite`, write-notify) or shmem.
//!
//! Not modelled: shadow entries and workingset refaults, writeback (fills
//! leave clean folios, as after fsync), truncation, hole punching, xfs
//! block-size minimum orders, fsverity/encryption/data=journal (which turn
//! large folios off in ext4).

use crate::arch::Arch;
use crate::include::linux::mm_types::{
    PG_DIRTY, PG_LRU, PG_READAHEAD, PG_SWAPBACKED, PG_UPTODATE, PG_WORKINGSET,
};
use crate::include::linux::pgtable::{
    div_round_up, Pfn, HPAGE_PMD_ORDER, MAX_PAGECACHE_ORDER, PAGE_SHIFT, PAGE_SIZE,
};
use crate::mm::memcontrol::ChargeGfp;
use crate::mm::memory::{
    Vmf, VM_FAULT_LOCKED, VM_FAULT_MAJOR, VM_FAULT_NOPAGE, VM_FAULT_RETRY, VM_FAULT_SIGBUS,
};
use crate::mm::readahead::FileRaState;
use crate::mm::vmstat::{Trace, VmEvent};
use crate::{FileId, Kernel, KernelError};

/// Empty page-cache slot.
pub const NO_PAGE: u32 = u32::MAX;

/// What `filemap_add_folio()` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddFolio {
    Added,
    /// -EEXIST: a slot of the range is taken.
    Exists,
    /// -ENOMEM: the memory cgroup charge failed.
    NoMem,
}

/// An inode and its page cache (`struct address_space`).
#[derive(Debug)]
pub struct AddressSpace {
    pub id: FileId,
    pub name: String,
    pub i_size: u64,
    /// PFN of the page at each index, or [`NO_PAGE`].
    pub pages: Vec<u32>,
    /// `shmem_mapping()`
    pub shmem: bool,
    /// `mapping_max_folio_order()` (ext4 with 4 KiB blocks: 9; shmem with
    /// huge=never: 0).
    pub max_order: u32,
}

/// An open file (`struct file`) with its readahead state.
#[derive(Debug)]
pub struct File {
    pub mapping: FileId,
    pub ra: FileRaState,
}

impl AddressSpace {
    /// The page at `index`, if cached.
    #[inline]
    pub fn lookup(&self, index: u64) -> Option<Pfn> {
        match self.pages.get(index as usize) {
            Some(&p) if p != NO_PAGE => Some(Pfn(p)),
            _ => None,
        }
    }
}

impl<A: Arch> Kernel<A> {
    /// Create a regular file of `size` bytes with nothing cached.
    pub fn create_file(&mut self, name: &str, size: u64) -> FileId {
        let id = FileId(self.files.len() as u32);
        assert!(
            self.files.len() < 0x7fff,
            "unsupported: more than 32766 files"
        );
        let nr = div_round_up(size, PAGE_SIZE) as usize;
        self.files.push(AddressSpace {
            id,
            name: name.to_string(),
            i_size: size,
            pages: vec![NO_PAGE; nr],
            shmem: false,
            max_order: MAX_PAGECACHE_ORDER,
        });
        id
    }

    /// `open()`: a new struct file with fresh readahead state
    /// (`file_ra_state_init()`).
    pub fn open_file(&mut self, f: FileId) -> u32 {
        let ra = FileRaState::new(self.ra_pages);
        self.open_files.push(File { mapping: f, ra });
        (self.open_files.len() - 1) as u32
    }

    /// The mapping id stored in `folio->mapping` for a file.
    #[inline]
    pub fn file_mapping_id(f: FileId) -> u16 {
        (f.0 + 1) as u16
    }

    /// Allocate a folio of `order` (`filemap_alloc_folio()`), counted.
    pub fn folio_alloc(&mut self, order: u32) -> Option<Pfn> {
        let pfn = self.alloc_pages(order, true)?;
        self.mem.prep_new_folio(pfn, order);
        self.vmstat.sim.folio_alloc += 1;
        if let Some(n) = self.vmstat.page_alloc.get_mut(order as usize) {
            *n += 1;
        }
        self.vmstat.count_vm_events(VmEvent::PgAlloc, 1 << order);
        Some(pfn)
    }

    /// Free a folio that nothing references any more (`__folio_put()`:
    /// off the LRU, uncharged, back to the allocator).
    pub fn folio_free(&mut self, folio: Pfn) {
        let order = self.mem.order(folio);
        if self.mem.test(folio, PG_LRU) {
            self.lruvec_del_folio(folio);
            self.mem.clear(folio, PG_LRU);
        }
        self.folio_unqueue_deferred_split(folio);
        self.mem_cgroup_uncharge(folio);
        self.mem.destroy_folio(folio);
        self.buddy.free_pages(&mut self.mem, folio, order);
        self.vmstat.sim.folio_free += 1;
        self.vmstat.count_vm_events(VmEvent::PgFree, 1 << order);
    }

    /// `filemap_add_folio()`: charge a new folio to the cgroup of the task
    /// adding it (`mem_cgroup_charge(folio, NULL, gfp)`), then insert it at
    /// `index` and put it on the LRU. Fails with NoMem when the charge fails
    /// and with Exists (uncharged again) if any slot of the range is taken.
    pub fn filemap_add_folio(
        &mut self,
        f: FileId,
        folio: Pfn,
        index: u64,
        gfp: ChargeGfp,
    ) -> AddFolio {
        let memcg = self.memcg.current;
        if !self.mem_cgroup_charge(folio, memcg, gfp) {
            return AddFolio::NoMem;
        }
        let nr = self.mem.folio_nr_pages(folio);
        let as_ = &self.files[f.0 as usize];
        let end = (index + nr).min(as_.pages.len() as u64);
        if (index..end).any(|i| as_.pages[i as usize] != NO_PAGE) {
            self.mem_cgroup_uncharge(folio);
            return AddFolio::Exists;
        }
        let shmem = as_.shmem;
        let as_ = &mut self.files[f.0 as usize];
        if as_.pages.len() < (index + nr) as usize {
            as_.pages.resize((index + nr) as usize, NO_PAGE);
        }
        for i in 0..nr {
            as_.pages[(index + i) as usize] = folio.0 + i as u32;
        }
        self.mem.set_folio_index(folio, index);
        self.mem.set_folio_mapping(folio, Self::file_mapping_id(f));
        if shmem {
            self.mem.set(folio, PG_SWAPBACKED);
        }
        self.vmstat.sim.pagecache_add += 1;
        self.folio_add_lru(folio);
        // shmem inserts with shmem_add_to_page_cache(), which has no
        // tracepoint; __filemap_add_folio() fires it.
        if !shmem {
            self.vmstat.trace(Trace::FilemapAddToPageCache);
        }
        AddFolio::Added
    }

    /// `__filemap_get_folio()` with `FGP_CREAT`: the folio at `index`, or a
    /// new one of at most `order` (reduced to the index alignment and, for
    /// readahead-less creation, the mapping's range). Not uptodate if new.
    pub fn filemap_get_or_create(
        &mut self,
        f: FileId,
        index: u64,
        order: u32,
    ) -> Result<Pfn, KernelError> {
        self.vmstat.sim.pagecache_lookup += 1;
        if let Some(p) = self.files[f.0 as usize].lookup(index) {
            return Ok(self.mem.page_folio(p));
        }
        let max = self.files[f.0 as usize].max_order;
        let mut order = order.min(max);
        if index & ((1 << order) - 1) != 0 {
            order = index.trailing_zeros();
        }
        loop {
            // Higher orders try without retrying; fall back order by order.
            // The charge uses the mapping's gfp (retries) at every order.
            if let Some(folio) = self.folio_alloc(order) {
                let start = index & !((1 << order) - 1);
                match self.filemap_add_folio(f, folio, start, ChargeGfp::Kernel) {
                    AddFolio::Added => return Ok(folio),
                    AddFolio::Exists => self.folio_free(folio),
                    AddFolio::NoMem => {
                        self.folio_free(folio);
                        if let Some(what) = self.unsupported.clone() {
                            return Err(KernelError::Unsupported(what));
                        }
                    }
                }
            }
            if order == 0 {
                return Err(KernelError::Unsupported(
                    "out of memory in the page cache".into(),
                ));
            }
            order -= 1;
        }
    }

    /// Read a not-uptodate folio from the device (`filemap_read_folio()`).
    pub fn read_folio(&mut self, folio: Pfn) {
        let nr = self.mem.folio_nr_pages(folio);
        self.vmstat.sim.pages_read_io += nr;
        self.mem.set(folio, PG_UPTODATE);
        for i in 0..nr {
            self.mem.set_page_nonzero(folio.plus(i), true);
        }
    }

    /// `generic_perform_write()`: buffered write(2) calls of `write_size`
    /// bytes from offset 0 to the end of the file. Folio sizes follow the
    /// chunk hint (`fgf_set_order()`), the index alignment and reuse of
    /// existing folios. Folios end up uptodate and clean (written back).
    pub fn fill_by_write(&mut self, f: FileId, write_size: u64) -> Result<(), KernelError> {
        let size = self.files[f.0 as usize].i_size;
        let chunk = PAGE_SIZE << self.files[f.0 as usize].max_order;
        let mut pos = 0;
        while pos < size {
            let call_end = (pos + write_size).min(size);
            while pos < call_end {
                let offset = pos & (chunk - 1);
                let bytes = (chunk - offset).min(call_end - pos);
                let index = pos >> PAGE_SHIFT;
                let hint = if bytes > PAGE_SIZE {
                    63 - bytes.leading_zeros() - PAGE_SHIFT
                } else {
                    0
                };
                let folio = self.filemap_get_or_create(f, index, hint)?;
                self.mem.set(folio, PG_UPTODATE);
                self.mem.clear(folio, PG_DIRTY);
                for i in 0..self.mem.folio_nr_pages(folio) {
                    self.mem.set_page_nonzero(folio.plus(i), true);
                }
                let folio_end = (self.mem.folio_index(folio) as u64
                    + self.mem.folio_nr_pages(folio))
                    << PAGE_SHIFT;
                pos = folio_end.min(pos + bytes);
            }
        }
        Ok(())
    }

    /// `filemap_read()` of the whole file in `read_size` calls, through
    /// `filemap_get_pages()`: sync readahead on a miss, async readahead on a
    /// PG_readahead folio.
    pub fn fill_by_read(&mut self, f: FileId, read_size: u64) -> Result<(), KernelError> {
        let file = self.open_file(f);
        let size = self.files[f.0 as usize].i_size;
        let mut pos = 0;
        while pos < size {
            let count = read_size.min(size - pos);
            let last_index = div_round_up(pos + count, PAGE_SIZE);
            let mut index = pos >> PAGE_SHIFT;
            while index < last_index {
                self.vmstat.sim.pagecache_lookup += 1;
                if self.files[f.0 as usize].lookup(index).is_none() {
                    self.page_cache_sync_ra(file, index, last_index - index);
                }
                let folio = match self.files[f.0 as usize].lookup(index) {
                    Some(p) => self.mem.page_folio(p),
                    None => {
                        let folio = self.filemap_get_or_create(f, index, 0)?;
                        self.read_folio(folio);
                        folio
                    }
                };
                let fidx = self.mem.folio_index(folio) as u64;
                let next = fidx + self.mem.folio_nr_pages(folio);
                if self.mem.test(folio, PG_READAHEAD) {
                    self.page_cache_async_ra(file, folio, index, last_index - fidx);
                }
                // A read marks each folio it copies from accessed, except
                // one the previous read ended in (pos_same_folio()).
                let prev = self.open_files[file as usize].ra.prev_pos;
                let first = index == pos >> PAGE_SHIFT;
                let marks = !first || prev.wrapping_add(1) == 0 || prev >> PAGE_SHIFT < fidx;
                if marks && self.files[f.0 as usize].lookup(fidx) == Some(folio) {
                    self.folio_mark_accessed(folio);
                }
                index = next;
            }
            pos += count;
            self.open_files[file as usize].ra.prev_pos = pos - 1;
        }
        Ok(())
    }

    /// `filemap_fault()`: find (or read) the folio for `vmf.pgoff`. Returns
    /// the fault result and, with VM_FAULT_LOCKED, the page.
    pub fn filemap_fault(&mut self, vmf: &mut Vmf) -> (u32, Option<Pfn>) {
        let fid = self.vmf_file(vmf);
        let f = fid.mapping;
        let index = vmf.pgoff;
        let max_idx = div_round_up(self.files[f.0 as usize].i_size, PAGE_SIZE);
        if index >= max_idx {
            return (VM_FAULT_SIGBUS, None);
        }
        self.vmstat.trace(Trace::FilemapFault);
        self.vmstat.sim.pagecache_lookup += 1;
        let mut ret = 0;
        let mut dropped = false;
        let folio = match self.files[f.0 as usize].lookup(index) {
            Some(p) => {
                let folio = self.mem.page_folio(p);
                if vmf.flags & crate::mm::memory::FAULT_FLAG_TRIED == 0 {
                    dropped = self.do_async_mmap_readahead(vmf, folio);
                }
                folio
            }
            None => {
                self.vmstat.count_vm_event(VmEvent::PgMajFault);
                ret = VM_FAULT_MAJOR;
                dropped = self.do_sync_mmap_readahead(vmf);
                let folio = match self.filemap_get_or_create(f, index, 0) {
                    Ok(folio) => folio,
                    Err(_) => return (crate::mm::memory::VM_FAULT_OOM, None),
                };
                if !self.mem.test(folio, PG_UPTODATE) {
                    // page_not_uptodate: the lock is dropped for the read.
                    dropped = true;
                    self.read_folio(folio);
                }
                folio
            }
        };
        if dropped {
            return (ret | VM_FAULT_RETRY, None);
        }
        let page = folio.plus(index - self.mem.folio_index(folio) as u64);
        (ret | VM_FAULT_LOCKED, Some(page))
    }

    fn vmf_file(&self, vmf: &Vmf) -> &File {
        &self.open_files[vmf.vma.file.expect("file vma") as usize]
    }

    /// `do_async_mmap_readahead()`: returns true if the mmap lock was dropped
    /// (an async readahead was started), which makes the fault retry.
    fn do_async_mmap_readahead(&mut self, vmf: &Vmf, folio: Pfn) -> bool {
        let file = vmf.vma.file.expect("file vma");
        let ra = &mut self.open_files[file as usize].ra;
        if vmf.vma.vm_flags & crate::mm::mmap::VM_RAND_READ != 0 || ra.ra_pages == 0 {
            return false;
        }
        ra.mmap_miss = ra.mmap_miss.saturating_sub(1);
        if !self.mem.test(folio, PG_READAHEAD) {
            return false;
        }
        let ra_pages = ra.ra_pages;
        self.page_cache_async_ra(file, folio, vmf.pgoff, ra_pages);
        true
    }

    /// `do_sync_mmap_readahead()`: readahead for a page-cache miss. Returns
    /// true if the mmap lock was dropped for I/O.
    fn do_sync_mmap_readahead(&mut self, vmf: &Vmf) -> bool {
        use crate::mm::mmap::{VM_EXEC, VM_HUGEPAGE, VM_RAND_READ, VM_SEQ_READ};
        let file = vmf.vma.file.expect("file vma");
        let flags = vmf.vma.vm_flags;
        let ra_pages = self.open_files[file as usize].ra.ra_pages;
        if flags & VM_HUGEPAGE != 0 {
            let ra = &mut self.open_files[file as usize].ra;
            let start = vmf.pgoff & !((1 << HPAGE_PMD_ORDER) - 1);
            ra.size = 1 << HPAGE_PMD_ORDER;
            if flags & VM_RAND_READ == 0 {
                ra.size *= 2;
            }
            ra.async_size = 1 << HPAGE_PMD_ORDER;
            ra.order = HPAGE_PMD_ORDER;
            self.page_cache_ra_order(file, start);
            return true;
        }
        if flags & (VM_RAND_READ | VM_EXEC) == VM_RAND_READ || ra_pages == 0 {
            return false;
        }
        if flags & VM_SEQ_READ != 0 {
            self.page_cache_sync_ra(file, vmf.pgoff, ra_pages);
            return true;
        }
        let ra = &mut self.open_files[file as usize].ra;
        if ra.mmap_miss < crate::mm::readahead::MMAP_LOTSAMISS * 10 {
            ra.mmap_miss += 1;
        }
        if ra.mmap_miss > crate::mm::readahead::MMAP_LOTSAMISS {
            return false;
        }
        if flags & VM_EXEC != 0 {
            // exec_folio_order() is 0 on x86; arm64's 64 KiB text folios are
            // not modelled.
            let start = vmf.vma.vm_pgoff;
            let end = start + vmf.vma.vma_pages();
            ra.order = 0;
            ra.start = vmf.pgoff.max(start);
            ra.size = (ra.start + ra.ra_pages).min(end) - ra.start;
            ra.async_size = 0;
        } else {
            ra.start = vmf.pgoff.saturating_sub(ra.ra_pages / 2);
            ra.size = ra.ra_pages;
            ra.async_size = ra.ra_pages / 4;
            ra.order = 0;
        }
        let start = ra.start;
        self.page_cache_ra_order(file, start);
        true
    }

    /// `next_uptodate_folio()`: the next mappable folio at or after `*index`
    /// up to `end` (inclusive). Advances `*index` past it. Skips folios that
    /// are not uptodate or carry PG_readahead, and indices at/after EOF.
    fn next_uptodate_folio(&mut self, f: FileId, index: &mut u64, end: u64) -> Option<(Pfn, u64)> {
        let max_idx = div_round_up(self.files[f.0 as usize].i_size, PAGE_SIZE);
        while *index <= end {
            let i = *index;
            self.vmstat.sim.pagecache_lookup += 1;
            let Some(p) = self.files[f.0 as usize].lookup(i) else {
                *index += 1;
                continue;
            };
            let folio = self.mem.page_folio(p);
            *index = self.mem.folio_index(folio) as u64 + self.mem.folio_nr_pages(folio);
            let fl = self.mem.flags(folio);
            if fl & PG_UPTODATE == 0 || fl & PG_READAHEAD != 0 || i >= max_idx {
                continue;
            }
            return Some((folio, i));
        }
        None
    }

    /// `filemap_map_pages()`: map the uptodate folios of
    /// `[start_pgoff, end_pgoff]` around a read fault.
    pub fn filemap_map_pages(&mut self, vmf: &mut Vmf, start_pgoff: u64, end_pgoff: u64) -> u32 {
        let file = vmf.vma.file.expect("file vma");
        let f = self.open_files[file as usize].mapping;
        let shmem = self.files[f.0 as usize].shmem;
        let i_size = self.files[f.0 as usize].i_size;
        if i_size == 0 {
            return 0;
        }
        let file_end = div_round_up(i_size, PAGE_SIZE) - 1;
        let end_pgoff = end_pgoff.min(file_end);
        let mut xa_index = start_pgoff;
        let mut ret = 0;
        let mut mmap_miss = 0u64;
        let mut rss = 0u64;
        let Some((mut folio, mut idx)) = self.next_uptodate_folio(f, &mut xa_index, end_pgoff)
        else {
            self.filemap_map_pages_out(file, 0);
            return 0;
        };
        let next_index =
            |k: &Self, folio: Pfn| k.mem.folio_index(folio) as u64 + k.mem.folio_nr_pages(folio);
        if (file_end >= next_index(self, folio) || shmem)
            && self.filemap_map_pmd(vmf, folio, start_pgoff)
        {
            self.filemap_map_pages_out(file, 0);
            return VM_FAULT_NOPAGE;
        }
        // pte_offset_map_lock() fails on a none or huge PMD.
        let Some(tid) = self.entry_table(self.pmdp_get(vmf.pmd)) else {
            self.filemap_map_pages_out(file, 0);
            return 0;
        };
        vmf.pte_table = Some(tid);
        loop {
            let addr = vmf.vma.vm_start + ((idx - vmf.vma.vm_pgoff) << PAGE_SHIFT);
            let fidx = self.mem.folio_index(folio) as u64;
            let end = next_index(self, folio) - 1;
            let nr_pages = end.min(end_pgoff) - idx + 1;
            ret |= if !self.mem.folio_test_large(folio) {
                self.filemap_map_order0_folio(vmf, folio, addr, &mut rss, &mut mmap_miss)
            } else {
                let ctx = MapRange {
                    start: idx - fidx,
                    addr,
                    nr_pages,
                    file_end,
                    shmem,
                };
                self.filemap_map_folio_range(vmf, folio, ctx, &mut rss, &mut mmap_miss)
            };
            match self.next_uptodate_folio(f, &mut xa_index, end_pgoff) {
                Some((fo, i)) => (folio, idx) = (fo, i),
                None => break,
            }
        }
        let counter = if shmem {
            crate::mm::mmap::MM_SHMEMPAGES
        } else {
            crate::mm::mmap::MM_FILEPAGES
        };
        self.add_mm_counter(vmf.mm, counter, rss as i64);
        self.vmstat.trace(Trace::FilemapMapPages);
        self.filemap_map_pages_out(file, mmap_miss);
        ret
    }

    /// The end of `filemap_map_pages()`: the folios it mapped lower the
    /// file's `ra->mmap_miss` (never below 0).
    fn filemap_map_pages_out(&mut self, file: u32, mmap_miss: u64) {
        let ra = &mut self.open_files[file as usize].ra;
        ra.mmap_miss = ra
            .mmap_miss
            .saturating_sub(mmap_miss.min(u16::MAX as u64) as u16);
    }

    /// `filemap_map_pmd()`: true if the fault is finished at PMD level.
    fn filemap_map_pmd(&mut self, vmf: &mut Vmf, folio: Pfn, start: u64) -> bool {
        let pmdval = self.pmdp_get(vmf.pmd);
        if A::pmd_trans_huge(pmdval) {
            return true;
        }
        if pmdval == 0 && self.mem.order(folio) == HPAGE_PMD_ORDER {
            let page = folio.plus(start - self.mem.folio_index(folio) as u64);
            if self.do_set_pmd(vmf, folio, page) == 0 {
                return true;
            }
        }
        if self.pmdp_get(vmf.pmd) == 0 {
            self.pmd_install_prealloc(vmf);
        }
        false
    }

    /// `filemap_map_order0_folio()`
    fn filemap_map_order0_folio(
        &mut self,
        vmf: &mut Vmf,
        folio: Pfn,
        addr: u64,
        rss: &mut u64,
        miss: &mut u64,
    ) -> u32 {
        if !self.mem.test(folio, PG_WORKINGSET) {
            *miss += 1;
        }
        let tid = vmf.pte_table.expect("pte table");
        let idx = crate::include::linux::pgtable::pte_index(addr);
        if A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim) != 0 {
            return 0;
        }
        self.set_pte_range(vmf, folio, folio, 1, addr);
        *rss += 1;
        if vmf.address == addr {
            VM_FAULT_NOPAGE
        } else {
            0
        }
    }

    /// `filemap_map_folio_range()`: map the window's part of a large folio,
    /// widened to the whole folio when it lies inside EOF (or is shmem), the
    /// VMA and one page table. Runs of none entries go in one set_ptes().
    fn filemap_map_folio_range(
        &mut self,
        vmf: &mut Vmf,
        folio: Pfn,
        c: MapRange,
        rss: &mut u64,
        miss: &mut u64,
    ) -> u32 {
        use crate::include::linux::pgtable::{pte_index, PMD_SIZE};
        let nr_folio = self.mem.folio_nr_pages(folio);
        let next_index = self.mem.folio_index(folio) as u64 + nr_folio;
        let (mut start, mut addr, mut nr_pages) = (c.start, c.addr, c.nr_pages);
        let addr0 = addr - start * PAGE_SIZE;
        let within_vma =
            addr0 >= vmf.vma.vm_start && addr0 + nr_folio * PAGE_SIZE <= vmf.vma.vm_end;
        if (c.file_end >= next_index || c.shmem)
            && within_vma
            && addr0 / PMD_SIZE == (addr0 + nr_folio * PAGE_SIZE - 1) / PMD_SIZE
        {
            start = 0;
            addr = addr0;
            nr_pages = nr_folio;
        }
        let tid = vmf.pte_table.expect("pte table");
        let workingset = self.mem.test(folio, PG_WORKINGSET);
        let mut ret = 0;
        let mut run = 0u64;
        for k in 0..nr_pages {
            if !workingset {
                *miss += 1;
            }
            let a = addr + k * PAGE_SIZE;
            let none = A::ptep_get(self.pt.table(tid), pte_index(a), &mut self.vmstat.sim) == 0;
            if none {
                run += 1;
                continue;
            }
            ret |= self.map_run(
                vmf,
                folio,
                start + k - run,
                run,
                addr + (k - run) * PAGE_SIZE,
                rss,
            );
            run = 0;
        }
        ret | self.map_run(
            vmf,
            folio,
            start + nr_pages - run,
            run,
            addr + (nr_pages - run) * PAGE_SIZE,
            rss,
        )
    }

    /// One run of consecutive mappable pages of a folio, as
    /// `filemap_map_folio_range()` installs it: `set_pte_range()`, the
    /// pages added to the RSS, VM_FAULT_NOPAGE if the run covers the
    /// faulting address.
    fn map_run(
        &mut self,
        vmf: &mut Vmf,
        folio: Pfn,
        page: u64,
        run: u64,
        addr: u64,
        rss: &mut u64,
    ) -> u32 {
        if run == 0 {
            return 0;
        }
        self.set_pte_range(vmf, folio, folio.plus(page), run, addr);
        *rss += run;
        if vmf.address >= addr && vmf.address < addr + run * PAGE_SIZE {
            VM_FAULT_NOPAGE
        } else {
            0
        }
    }
}

/// Arguments of [`Kernel::filemap_map_folio_range`].
#[derive(Clone, Copy, Debug)]
struct MapRange {
    /// Page offset in the folio of the first page to map.
    start: u64,
    addr: u64,
    nr_pages: u64,
    file_end: u64,
    shmem: bool,
}
