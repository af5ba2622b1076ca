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
//! A folio reclaim frees leaves a shadow entry in each of its slots
//! (`__filemap_remove_folio()` with the shadow of `workingset_eviction()`);
//! the folio that later takes the slot back is a refault
//! (`workingset_refault()`, mm/workingset.rs) unless it is added for a
//! write (`__GFP_WRITE`).
//!
//! Not modelled: writeback (fills
//! leave clean folios, as after fsync), truncation, hole punching, xfs
//! block-size minimum orders, fsverity/encryption/data=journal (which turn
//! large folios off in ext4).

use crate::arch::Arch;
use crate::include::linux::mm_types::{
    PG_DIRTY, PG_LRU, PG_MAPPEDTODISK, PG_READAHEAD, PG_SWAPBACKED, PG_UPTODATE, PG_WORKINGSET,
};
use crate::include::linux::pgtable::{
    div_round_up, Pfn, HPAGE_PMD_ORDER, MAX_PAGECACHE_ORDER, PAGE_SHIFT, PAGE_SIZE,
};
use crate::mm::memcontrol::{ChargeGfp, MemcgId};
use crate::mm::memory::{
    Vmf, VM_FAULT_LOCKED, VM_FAULT_MAJOR, VM_FAULT_NOPAGE, VM_FAULT_RETRY, VM_FAULT_SIGBUS,
};
use crate::mm::readahead::FileRaState;
use crate::mm::vmstat::{Trace, VmEvent};
use crate::KResult;
use crate::{FileId, Kernel, KernelError};

/// Empty page-cache slot.
pub(crate) const NO_PAGE: u32 = u32::MAX;

/// What `filemap_add_folio()` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AddFolio {
    Added,
    /// -EEXIST: a slot of the range is taken.
    Exists,
    /// -ENOMEM: the memory cgroup charge failed.
    NoMem,
}

/// An inode and its page cache (`struct address_space`).
#[derive(Debug, Default)]
pub(crate) struct AddressSpace {
    pub id: FileId,
    pub name: String,
    pub(crate) i_size: u64,
    /// PFN of the page at each index, or [`NO_PAGE`].
    pub pages: Vec<u32>,
    /// `shmem_mapping()`
    pub shmem: bool,
    /// `mapping_max_folio_order()` (ext4 with 4 KiB blocks: 9; shmem with
    /// huge=never: 0).
    pub(crate) max_order: u32,
    /// Which nodes of the page cache's xarray exist (for their memory
    /// cgroup charge).
    pub(crate) xa: XaNodes,
    /// The shadow entries (`xa_is_value()` slots) of evicted pages, by
    /// index (0: none); empty until the first eviction.
    pub(crate) shadows: Vec<u64>,
}

/// `XA_CHUNK_SHIFT`: an xarray node has 64 slots.
const XA_CHUNK_SHIFT: u32 = 6;
/// `obj_full_size()` of a `radix_tree_node` (xa_node): the 584-byte slab
/// object of x86_64 plus the obj_cgroup pointer that accounting adds.
pub(crate) const XA_NODE_CHARGE: u64 = 584 + 8;

/// The nodes of an address space's xarray (`struct xa_node`), as far as
/// their number goes: per level, one bit per node position. Nodes are
/// never freed: reclaim leaves shadow entries in them
/// (`workingset_eviction()`) and files are never truncated, so a node
/// lives from its first entry to the end of the run (the shadow-node
/// shrinker is not modelled).
#[derive(Debug, Default)]
pub(crate) struct XaNodes {
    /// `xa_head`'s height: the number of node levels (0: empty, or one
    /// order-0 entry at index 0 held in the head).
    height: u32,
    nonempty: bool,
    /// `present[l][k]`: the level-`l` node covering indices
    /// `[k << 6(l+1), (k + 1) << 6(l+1))` exists.
    present: Vec<Vec<bool>>,
    /// The bytes of nodes charged to each cgroup (the root's are not
    /// charged), given back when the nodes are freed.
    charged: Vec<(MemcgId, u64)>,
}

impl XaNodes {
    pub(crate) fn charge(&mut self, memcg: MemcgId, bytes: u64) {
        match self.charged.iter_mut().find(|(m, _)| *m == memcg) {
            Some((_, b)) => *b += bytes,
            None => self.charged.push((memcg, bytes)),
        }
    }

    /// Free every node: the bytes each cgroup was charged for them.
    pub(crate) fn free_all(&mut self) -> Vec<(MemcgId, u64)> {
        std::mem::take(self).charged
    }

    fn set(&mut self, level: u32, key: u64) -> bool {
        let l = level as usize;
        if self.present.len() <= l {
            self.present.resize(l + 1, Vec::new());
        }
        let v = &mut self.present[l];
        if v.len() <= key as usize {
            v.resize(key as usize + 1, false);
        }
        !std::mem::replace(&mut v[key as usize], true)
    }

    /// `xas_store()` of an entry of `order` at `index` (`xas_create()`,
    /// `xas_expand()`): the nodes it creates. The entry lives at level
    /// `order / 6` (sibling slots for the rest of the order); the tree
    /// grows until its top covers the highest index.
    pub(crate) fn store(&mut self, index: u64, order: u32) -> u64 {
        let level = order / XA_CHUNK_SHIFT;
        let last = index + (1u64 << order) - 1;
        let mut height = 0;
        while height < 11 && last >> (XA_CHUNK_SHIFT * height) != 0 {
            height += 1;
        }
        if order > 0 || index > 0 {
            height = height.max(level + 1);
        }
        let mut created = 0;
        if height > self.height {
            // xas_expand(): new top nodes over the old contents at index 0.
            if self.nonempty {
                for l in self.height.min(level)..height {
                    created += u64::from(self.set(l, 0));
                }
            }
            self.height = height;
        }
        for l in level..self.height {
            created += u64::from(self.set(l, index >> (XA_CHUNK_SHIFT * (l + 1))));
        }
        self.nonempty = true;
        created
    }
}

/// An open file (`struct file`) with its readahead state.
#[derive(Debug)]
pub struct File {
    pub mapping: FileId,
    pub ra: FileRaState,
    /// `f_pos`: where read(2) and write(2) go.
    pub(crate) f_pos: u64,
}

impl AddressSpace {
    /// The page at `index`, if cached.
    #[inline]
    pub(crate) fn lookup(&self, index: u64) -> Option<Pfn> {
        match self.pages.get(index as usize) {
            Some(&p) if p != NO_PAGE => Some(Pfn(p)),
            _ => None,
        }
    }
}

impl<A: Arch> Kernel<A> {
    /// Create a regular file of `size` bytes with nothing cached, in the
    /// slot of an evicted one if there is one.
    pub fn create_file(&mut self, name: &str, size: u64) -> FileId {
        let id = match self.free_files.pop() {
            Some(id) => id,
            None => {
                if self.files.len() >= 0x7fff {
                    crate::model_limit("more than 32767 files");
                }
                self.files.push(AddressSpace::default());
                FileId(self.files.len() as u32 - 1)
            }
        };
        let nr = div_round_up(size, PAGE_SIZE) as usize;
        self.files[id.0 as usize] = AddressSpace {
            id,
            name: name.to_string(),
            i_size: size,
            pages: vec![NO_PAGE; nr],
            shmem: false,
            max_order: MAX_PAGECACHE_ORDER,
            xa: XaNodes::default(),
            shadows: Vec::new(),
        };
        id
    }

    /// `open()`: a new struct file with fresh readahead state
    /// (`file_ra_state_init()`).
    pub fn open_file(&mut self, f: FileId) -> u32 {
        let ra = FileRaState::new(self.ra_pages);
        self.open_files.push(File {
            mapping: f,
            ra,
            f_pos: 0,
        });
        (self.open_files.len() - 1) as u32
    }

    /// The mapping id stored in `folio->mapping` for a file.
    #[inline]
    pub(crate) fn file_mapping_id(f: FileId) -> u16 {
        (f.0 + 1) as u16
    }

    /// Allocate a folio of `order` (`folio_alloc()`), counted. Only an
    /// order-0 allocation wakes kswapd (a THP or mTHP fault outside
    /// MADV_HUGEPAGE has GFP_TRANSHUGE_LIGHT).
    pub(crate) fn folio_alloc(&mut self, order: u32) -> Option<Pfn> {
        self.folio_alloc_gfp(order, order == 0)
    }

    /// A page-cache folio of `order` (`filemap_alloc_folio()`): the
    /// mapping's gfp mask, with __GFP_KSWAPD_RECLAIM at every order.
    pub(crate) fn filemap_alloc_folio(&mut self, order: u32) -> Option<Pfn> {
        self.folio_alloc_gfp(order, true)
    }

    /// A movable folio of `order`, counted; `kswapd`: its gfp mask has
    /// __GFP_KSWAPD_RECLAIM.
    fn folio_alloc_gfp(&mut self, order: u32, kswapd: bool) -> Option<Pfn> {
        let pfn = self.alloc_pages_gfp(order, true, kswapd)?;
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
    pub(crate) fn folio_free(&mut self, folio: Pfn) {
        debug_assert!(
            !self.folio_test_writeback(folio),
            "pfn {} freed under writeback",
            folio.0
        );
        let order = self.mem.order(folio);
        if self.mem.test(folio, PG_LRU) {
            self.lruvec_del_folio(folio);
            self.mem.clear(folio, PG_LRU);
        }
        self.folio_unqueue_deferred_split(folio);
        self.mem_cgroup_uncharge(folio);
        self.mem.destroy_folio(folio);
        self.free_pages(folio, order);
        self.vmstat.sim.folio_free += 1;
        self.vmstat.count_vm_events(VmEvent::PgFree, 1 << order);
    }

    /// `filemap_add_folio()`: charge a new folio to the cgroup of the task
    /// adding it (`mem_cgroup_charge(folio, NULL, gfp)`), then insert it at
    /// `index` and put it on the LRU. Fails with NoMem when the charge fails
    /// and with Exists (uncharged again) if any slot of the range is taken.
    pub(crate) fn filemap_add_folio(
        &mut self,
        f: FileId,
        folio: Pfn,
        index: u64,
        gfp: ChargeGfp,
    ) -> AddFolio {
        self.filemap_add_folio_gfp(f, folio, index, gfp, false)
    }

    /// `filemap_add_folio()` with `__GFP_WRITE` (`write`: a buffered write
    /// creates the folio, so a shadow it replaces is no refault). A
    /// replaced shadow (the last one of the range, as `__filemap_add_folio()`
    /// keeps it) makes the charged folio a refault before it joins the LRU.
    pub(crate) fn filemap_add_folio_gfp(
        &mut self,
        f: FileId,
        folio: Pfn,
        index: u64,
        gfp: ChargeGfp,
        write: bool,
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
        let mut shadow = None;
        let as_ = &mut self.files[f.0 as usize];
        if !as_.shadows.is_empty() {
            for i in index..(index + nr).min(as_.shadows.len() as u64) {
                let s = std::mem::take(&mut as_.shadows[i as usize]);
                if s != 0 {
                    shadow = Some(crate::mm::workingset::Shadow(s));
                }
            }
        }
        // The xarray nodes the store allocates (`xas_nomem()`: the
        // mapping's i_pages has XA_FLAGS_ACCOUNT, so they are slab objects
        // charged to `current`'s cgroup).
        let order = self.mem.order(folio);
        let xa = &mut self.files[f.0 as usize].xa;
        let nodes = xa.store(index, order);
        if nodes > 0 {
            xa.charge(memcg, nodes * XA_NODE_CHARGE);
            self.obj_cgroup_charge(memcg, nodes * XA_NODE_CHARGE);
        }
        self.mem.set_folio_index(folio, index);
        self.mem.set_folio_mapping(folio, Self::file_mapping_id(f));
        if shmem {
            self.mem.set(folio, PG_SWAPBACKED);
        }
        self.vmstat.sim.pagecache_add += 1;
        if let Some(shadow) = shadow.filter(|_| !write) {
            self.workingset_refault(folio, shadow);
        }
        self.folio_add_lru(folio);
        // shmem inserts with shmem_add_to_page_cache(), which has no
        // tracepoint; __filemap_add_folio() fires it.
        if !shmem {
            self.vmstat.trace(Trace::FilemapAddToPageCache);
        }
        AddFolio::Added
    }

    /// `__filemap_remove_folio()` of the `nr` slots from `index` of file
    /// number `file`, storing `shadow` in each (reclaim) or emptying them.
    pub(crate) fn filemap_remove_folio(
        &mut self,
        file: usize,
        index: u64,
        nr: u64,
        shadow: Option<crate::mm::workingset::Shadow>,
    ) {
        let as_ = &mut self.files[file];
        let range = index as usize..(index + nr) as usize;
        for p in &mut as_.pages[range.clone()] {
            *p = NO_PAGE;
        }
        if let Some(s) = shadow {
            if as_.shadows.len() < as_.pages.len() {
                as_.shadows.resize(as_.pages.len(), 0);
            }
            as_.shadows[range].fill(s.0);
        } else if !as_.shadows.is_empty() {
            as_.shadows[range].fill(0);
        }
    }

    /// `__filemap_get_folio()` with `FGP_CREAT`: the folio at `index`, or a
    /// new one of at most `order` (reduced to the index alignment and, for
    /// readahead-less creation, the mapping's range). Not uptodate if new.
    /// `write`: created for a buffered write (`__GFP_WRITE`).
    pub(crate) fn filemap_get_or_create(
        &mut self,
        f: FileId,
        index: u64,
        order: u32,
        write: bool,
    ) -> KResult<Pfn> {
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
            if let Some(folio) = self.filemap_alloc_folio(order) {
                let start = index & !((1 << order) - 1);
                match self.filemap_add_folio_gfp(f, folio, start, ChargeGfp::Kernel, write) {
                    AddFolio::Added => return Ok(folio),
                    AddFolio::Exists => self.folio_free(folio),
                    AddFolio::NoMem => self.folio_free(folio),
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

    /// Read a not-uptodate folio from the device (`filemap_read_folio()`,
    /// or a readahead batch's `read_pages()`), through ext4's
    /// `ext4_mpage_readpages()`: a folio whose blocks all lie within the
    /// file (none past EOF, and a written file has no holes) is marked
    /// `PG_mappedtodisk`.
    pub(crate) fn read_folio(&mut self, folio: Pfn) {
        let nr = self.mem.folio_nr_pages(folio);
        self.vmstat.sim.pages_read_io += nr;
        self.mem.set(folio, PG_UPTODATE);
        let file = self.mem.folio_mapping(folio) as usize - 1;
        let end = (self.mem.folio_index(folio) as u64 + nr) << PAGE_SHIFT;
        if !self.files[file].shmem && end <= self.files[file].i_size {
            self.mem.set(folio, PG_MAPPEDTODISK);
        }
        for i in 0..nr {
            self.mem.set_page_nonzero(folio.plus(i), true);
        }
    }

    /// Buffered write(2) calls of `write_size` bytes from offset 0 to the
    /// end of the file (a `[[file]]` fill), then written back: the folios
    /// end up uptodate and clean (as after fsync).
    pub fn fill_by_write(&mut self, f: FileId, write_size: u64) -> KResult<()> {
        let file = self.open_file(f);
        let size = self.files[f.0 as usize].i_size;
        let mut pos = 0;
        while pos < size {
            let count = write_size.min(size - pos);
            pos += self.generic_perform_write(file, pos, count)?;
        }
        self.file_write_and_wait(f);
        Ok(())
    }

    /// `generic_perform_write()`: one buffered write of `count` bytes at
    /// `pos` through open file `file` (inside the file: i_size does not
    /// change). Per chunk of at most the mapping's largest folio:
    /// `write_begin` finds or creates the folio (`__filemap_get_folio()`
    /// with FGP_WRITEBEGIN and the `fgf_set_order()` hint of the chunk, so
    /// the folio size follows the chunk, the index alignment and folios
    /// already cached; no FGP_ACCESSED: a write does not mark the folio
    /// accessed), the copy, and `write_end`, which dirties the folio
    /// (`folio_mark_dirty()`). A partly written new folio is read first
    /// (ext4's `ext4_block_write_begin()`), at once in the model. Returns
    /// the bytes written.
    pub(crate) fn generic_perform_write(
        &mut self,
        file: u32,
        pos: u64,
        count: u64,
    ) -> KResult<u64> {
        let f = self.open_files[file as usize].mapping;
        let chunk = PAGE_SIZE << self.files[f.0 as usize].max_order;
        let end = pos + count;
        let mut pos = pos;
        while pos < end {
            let offset = pos & (chunk - 1);
            let bytes = (chunk - offset).min(end - pos);
            let index = pos >> PAGE_SHIFT;
            // fgf_set_order(): ilog2(bytes) - PAGE_SHIFT, 0 up to a page.
            let hint = (63 - bytes.leading_zeros()).saturating_sub(PAGE_SHIFT);
            let folio = self.filemap_get_or_create(f, index, hint, true)?;
            if !self.mem.test(folio, PG_UPTODATE) {
                self.mem.set(folio, PG_UPTODATE);
            }
            for i in 0..self.mem.folio_nr_pages(folio) {
                self.mem.set_page_nonzero(folio.plus(i), true);
            }
            self.mem.set(folio, PG_DIRTY);
            let folio_end =
                (self.mem.folio_index(folio) as u64 + self.mem.folio_nr_pages(folio)) << PAGE_SHIFT;
            pos = folio_end.min(pos + bytes);
        }
        Ok(count)
    }

    /// `file_write_and_wait_range()` over the whole file (fsync(2)): every
    /// dirty folio is written back, at once in the model
    /// (`folio_clear_dirty_for_io()`, `folio_end_writeback()`, which rotates
    /// a folio reclaim marked with PG_reclaim to its list's tail).
    pub(crate) fn file_write_and_wait(&mut self, f: FileId) {
        let nr = self.files[f.0 as usize].pages.len() as u64;
        let mut index = 0;
        while index < nr {
            let Some(p) = self.files[f.0 as usize].lookup(index) else {
                index += 1;
                continue;
            };
            let folio = self.mem.page_folio(p);
            index = self.mem.folio_index(folio) as u64 + self.mem.folio_nr_pages(folio);
            if self.mem.test(folio, PG_DIRTY) {
                self.mem.clear(folio, PG_DIRTY);
                self.folio_end_writeback_reclaim(folio);
            }
        }
    }

    /// read(2) of the whole file in `read_size` calls (a `[[file]]` fill)
    /// through a file opened for it.
    pub fn fill_by_read(&mut self, f: FileId, read_size: u64) -> KResult<()> {
        let file = self.open_file(f);
        let size = self.files[f.0 as usize].i_size;
        let mut pos = 0;
        while pos < size {
            let n = self.filemap_read(file, pos, read_size.min(size - pos))?;
            if n == 0 {
                break;
            }
            pos += n;
        }
        Ok(())
    }

    /// `filemap_read()`: one read of `count` bytes at `pos` through open
    /// file `file`, folio by folio as `filemap_get_pages()` finds them:
    /// sync readahead on a miss (`page_cache_sync_ra()` for the pages to
    /// the end of the request), a folio created and read alone if that
    /// brought nothing, async readahead on a PG_readahead folio. Every
    /// folio copied from is marked accessed (`folio_mark_accessed()`)
    /// except the first one when the previous read through this file ended
    /// in it (`pos_same_folio()` with `ra->prev_pos`). Returns the bytes
    /// read (0 at or past EOF); `ra->prev_pos` is the end of the read.
    pub(crate) fn filemap_read(&mut self, file: u32, pos: u64, count: u64) -> KResult<u64> {
        let f = self.open_files[file as usize].mapping;
        let size = self.files[f.0 as usize].i_size;
        let last_pos = self.open_files[file as usize].ra.prev_pos;
        if pos >= size || count == 0 {
            return Ok(0);
        }
        let end = (pos + count).min(size);
        let last_index = div_round_up(pos + count, PAGE_SIZE);
        let mut ki_pos = pos;
        while ki_pos < end {
            let index = ki_pos >> PAGE_SHIFT;
            self.vmstat.sim.pagecache_lookup += 1;
            if self.files[f.0 as usize].lookup(index).is_none() {
                self.page_cache_sync_ra(file, index, last_index - index);
            }
            let folio = match self.files[f.0 as usize].lookup(index) {
                Some(p) => self.mem.page_folio(p),
                None => {
                    // filemap_create_folio()
                    let folio = self.filemap_get_or_create(f, index, 0, false)?;
                    self.read_folio(folio);
                    folio
                }
            };
            let fidx = self.mem.folio_index(folio) as u64;
            let nr = self.mem.folio_nr_pages(folio);
            if self.mem.test(folio, PG_READAHEAD) {
                self.page_cache_async_ra(file, folio, fidx, last_index - fidx);
            }
            let shift = PAGE_SHIFT + self.mem.order(folio);
            let same = ki_pos == pos && ki_pos >> shift == last_pos.wrapping_sub(1) >> shift;
            if !same && self.files[f.0 as usize].lookup(fidx) == Some(folio) {
                self.folio_mark_accessed(folio);
            }
            ki_pos = ((fidx + nr) << PAGE_SHIFT).min(end);
        }
        self.open_files[file as usize].ra.prev_pos = end;
        Ok(end - pos)
    }

    /// `filemap_fault()`: find (or read) the folio for `vmf.pgoff`. Returns
    /// the fault result and, with VM_FAULT_LOCKED, the page.
    pub(crate) fn filemap_fault(&mut self, vmf: &mut Vmf) -> (u32, Option<Pfn>) {
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
                self.count_pgmajfault();
                ret = VM_FAULT_MAJOR;
                dropped = self.do_sync_mmap_readahead(vmf);
                let folio = match self.filemap_get_or_create(f, index, 0, false) {
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
    pub(crate) fn filemap_map_pages(
        &mut self,
        vmf: &mut Vmf,
        start_pgoff: u64,
        end_pgoff: u64,
    ) -> u32 {
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
