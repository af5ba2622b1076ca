//! What `/proc/PID/pagemap` + `/proc/kpageflags` tell about a range
//! (fs/proc/task_mmu.c: pagemap_pmd_range(), pte_to_pagemap_entry()),
//! reduced to the folio-size histogram the outputs report, and the folio
//! map of a `map = true` region (one `PageState` per page: the histogram's
//! walk plus the mapping level and arm64's contiguous bit, which only the
//! page tables show).
//!
//! Buckets: `4kB`, `8kB` ... `2048kB` count the distinct folios with at least
//! one page mapped in the range (a PMD mapping counts its folio once);
//! `zero` counts zero-page entries and `huge_zero` huge-zero PMDs; the
//! pagemap summary adds `pages_present`, `pages_swapped`, `pages_file` and
//! `pages_exclusive`.
//!
//! `/proc/PID/pagemap` itself (`pagemap_read()`, `pagemap_pmd_range()`,
//! `pte_to_pagemap_entry()`, `pagemap_pte_hole()`, `make_pme()`) produces
//! the raw 64-bit entries byte for byte as 6.18 does on the validation
//! kernel's configuration: no soft-dirty (bit 55 always 0), bit 56 by the
//! per-page precise mapcount (CONFIG_PAGE_MAPCOUNT), bit 61 for every page
//! that is not anon (file, shmem, the huge zero page; not the small zero
//! page), swap type and offset in bits 0-54 of swap PTEs, PMD leaves as 512
//! entries with the head page's exclusivity, holes as 0, and bits 0-54 only
//! for a privileged reader. `PAGEMAP_SCAN` (`do_pagemap_scan()`,
//! `pagemap_page_category()`, `pagemap_thp_category()`) is modelled for a
//! scan of every category with no write-protection (uffd-wp is not
//! modelled, so WPALLOWED never shows).
//! With `series.pagemap_shmem_swap` (seed 004) a none PTE of a shmem VMA
//! whose page-cache slot holds a swap entry reports PM_SWAP with that
//! entry's type and offset, found by a page-cache lookup. Lookups happen
//! only inside existing PTE tables (a missing table stays a hole, as the
//! seed's 0%-dirty row shows no extra cost). With
//! `series.pagemap_walk_to_pmd_end` `pagemap_read()` is that of kernels
//! before 6.5 (seed 004's): each read walks to its 2 MiB chunk's end and
//! copies only what was asked for. Not modelled: guard regions
//! and uffd-wp markers (no step installs them), migration entries (never
//! left in tables between steps), hugetlb, VM_PFNMAP, VM_SOFTDIRTY.

use crate::KResult;
use std::collections::BTreeMap;

use crate::arch::Arch;
use crate::include::linux::pgtable::{
    pmd_addr_end, pte_index, size_label, Pfn, MAX_PAGE_ORDER, PAGE_SIZE,
};
use crate::{FileId, Kernel, KernelError, MmId};
use foliosim_uapi::foliomap::{FolioMap, PageState};
pub use foliosim_uapi::pagemap::{
    page_is, pagemap_mask_pfn, pagemap_step_counters, pagemap_summary, PageRegion,
    MAX_SWAPFILES_SHIFT, PM_ENTRY_BYTES, PM_FILE, PM_GUARD_REGION, PM_MMAP_EXCLUSIVE,
    PM_PFRAME_MASK, PM_PRESENT, PM_SOFT_DIRTY, PM_SWAP, PM_UFFD_WP,
};

/// Folio orders a histogram counts: the buddy allocator's, 0 to
/// `MAX_PAGE_ORDER`.
const MAX_ORDER_SLOTS: usize = MAX_PAGE_ORDER as usize + 1;

impl<A: Arch> Kernel<A> {
    /// The folio-size histogram of the mapped pages of `[start, end)`.
    pub fn folio_histogram(&self, mm: MmId, start: u64, end: u64) -> BTreeMap<String, u64> {
        // Counts by folio order, then the zero page and the huge zero page
        // (named only at the end: this runs over every mapped page).
        const ZERO: usize = MAX_ORDER_SLOTS;
        const HUGE_ZERO: usize = MAX_ORDER_SLOTS + 1;
        let mut slots = [0u64; MAX_ORDER_SLOTS + 2];
        // Order-0 folios cannot repeat within one range of one mm; large ones
        // can (a COW'd page splits a folio's PTEs into runs).
        // The last large folio counted short-cuts the set for the usual
        // run of one folio's PTEs.
        let mut seen_large: std::collections::HashSet<u32> = std::collections::HashSet::new();
        let mut last_large = None;
        let mut count_folio = |folio: Pfn, slots: &mut [u64; MAX_ORDER_SLOTS + 2]| {
            let order = self.mem.order(folio);
            if order > 0 {
                if last_large == Some(folio.0) || !seen_large.insert(folio.0) {
                    return;
                }
                last_large = Some(folio.0);
            }
            slots[order as usize] += 1;
        };
        let mut addr = start;
        while addr < end {
            let (pmd, next) = self.pmd_range_step(mm, addr, end);
            let Some(pmd) = pmd else {
                addr = next;
                continue;
            };
            let pmdval = self.pmdp_get(pmd);
            if A::pmd_trans_huge(pmdval) {
                if A::pte_special(pmdval) {
                    slots[HUGE_ZERO] += 1;
                } else {
                    count_folio(self.mem.page_folio(A::pte_pfn(pmdval)), &mut slots);
                }
            } else if let Some(tid) = self.entry_table(pmdval) {
                let first = pte_index(addr);
                let t = &self.pt.table(tid)[first..first + ((next - addr) / PAGE_SIZE) as usize];
                for &e in t {
                    if !A::pte_present(e) {
                        continue;
                    }
                    if A::pte_special(e) {
                        slots[ZERO] += 1;
                    } else {
                        count_folio(self.mem.page_folio(A::pte_pfn(e)), &mut slots);
                    }
                }
            }
            addr = next;
        }
        let mut out = BTreeMap::new();
        for (slot, &n) in slots.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let key = match slot {
                ZERO => "zero".to_string(),
                HUGE_ZERO => "huge_zero".to_string(),
                order => size_label(order as u32),
            };
            out.insert(key, n);
        }
        self.pagemap_summary(mm, start, end, &mut out);
        out
    }

    /// The folio map of `[start, end)`: one [`PageState`] byte per page,
    /// from the same walk as [`Kernel::folio_histogram`] (what pagemap and
    /// kpageflags tell, plus the mapping level and the contiguous bit that
    /// only the page tables show). Holes and missing tables are
    /// [`PageState::None`]; a non-present, non-none PTE is a swap entry.
    pub fn folio_map(&self, mm: MmId, start: u64, end: u64) -> FolioMap {
        let mut pages = Vec::with_capacity(((end - start) / PAGE_SIZE) as usize);
        let mut addr = start;
        while addr < end {
            let (pmd, next) = self.pmd_range_step(mm, addr, end);
            let n = ((next - addr) / PAGE_SIZE) as usize;
            let pmdval = pmd.map(|p| self.pmdp_get(p)).unwrap_or(0);
            if A::pmd_trans_huge(pmdval) {
                let s = if A::pte_special(pmdval) {
                    PageState::Zero { huge: true }
                } else {
                    let folio = self.mem.page_folio(A::pte_pfn(pmdval));
                    PageState::Present {
                        order: self.mem.order(folio) as u8,
                        pmd: true,
                        contpte: false,
                    }
                };
                pages.resize(pages.len() + n, s.encode());
            } else if let Some(tid) = self.entry_table(pmdval) {
                let first = pte_index(addr);
                for &e in &self.pt.table(tid)[first..first + n] {
                    let s = if e == 0 {
                        PageState::None
                    } else if !A::pte_present(e) {
                        PageState::Swap
                    } else if A::pte_special(e) {
                        PageState::Zero { huge: false }
                    } else {
                        let folio = self.mem.page_folio(A::pte_pfn(e));
                        PageState::Present {
                            order: self.mem.order(folio) as u8,
                            pmd: false,
                            contpte: A::pte_valid_cont(e),
                        }
                    };
                    pages.push(s.encode());
                }
            } else {
                pages.resize(pages.len() + n, PageState::None.encode());
            }
            addr = next;
        }
        FolioMap {
            first_index: pte_index(start) as u16,
            pages,
        }
    }

    /// The per-page pagemap summary of `[start, end)`
    /// (`pte_to_pagemap_entry()`, `pagemap_pmd_range()`): `pages_present`,
    /// `pages_swapped`, `pages_file` (PM_FILE: the page is not anon; the huge
    /// zero page counts, the small one does not) and `pages_exclusive`
    /// (PM_MMAP_EXCLUSIVE: precise mapcount 1; for a PMD, that of the head
    /// page applied to all 512).
    fn pagemap_summary(&self, mm: MmId, start: u64, end: u64, out: &mut BTreeMap<String, u64>) {
        let mut n = [0u64; 4];
        let mut addr = start;
        while addr < end {
            let (pmd, next) = self.pmd_range_step(mm, addr, end);
            let pages = (next - addr) / PAGE_SIZE;
            let pmdval = pmd.map(|p| self.pmdp_get(p)).unwrap_or(0);
            if A::pmd_trans_huge(pmdval) {
                n[0] += pages;
                let page = A::pte_pfn(pmdval);
                let anon = !A::pte_special(pmdval) && self.mem.folio_test_anon(page);
                if !anon {
                    n[2] += pages;
                }
                if !A::pte_special(pmdval) && self.mem.precise_page_mapcount(page) == 1 {
                    n[3] += pages;
                }
            } else if let Some(tid) = self.entry_table(pmdval) {
                let first = pte_index(addr);
                for &e in &self.pt.table(tid)[first..first + pages as usize] {
                    if e == 0 {
                        continue;
                    }
                    if !A::pte_present(e) {
                        n[1] += 1;
                        continue;
                    }
                    n[0] += 1;
                    if A::pte_special(e) {
                        continue;
                    }
                    let page = A::pte_pfn(e);
                    if !self.mem.folio_test_anon(self.mem.page_folio(page)) {
                        n[2] += 1;
                    }
                    if self.mem.precise_page_mapcount(page) == 1 {
                        n[3] += 1;
                    }
                }
            }
            addr = next;
        }
        for (key, v) in [
            "pages_present",
            "pages_swapped",
            "pages_file",
            "pages_exclusive",
        ]
        .into_iter()
        .zip(n)
        {
            if v > 0 {
                out.insert(key.to_string(), v);
            }
        }
    }
}

/// `PAGEMAP_WALK_SIZE`: one walk (and one mmap-lock hold) per PMD block.
pub const PAGEMAP_WALK_SIZE: u64 = crate::include::linux::pgtable::PMD_SIZE;
/// `TASK_SIZE` of a 4-level x86_64 (47-bit) process; reads stop there.
pub const TASK_SIZE: u64 = (1 << 47) - PAGE_SIZE;

/// `make_pme()`: the frame field and the flag bits.
#[inline]
fn make_pme(frame: u64, flags: u64) -> u64 {
    (frame & PM_PFRAME_MASK) | flags
}

/// One page as the pagemap walk finds it.
#[derive(Clone, Copy)]
enum Slot {
    /// No VMA, no table, or a none PTE outside a shmem VMA.
    Hole,
    /// A PTE (present or swap) or a none PTE inside a PTE table.
    Pte {
        pte: u64,
        shmem_index: Option<(u32, u64)>,
    },
    /// Page `idx` of a PMD leaf.
    Pmd { pmd: u64, idx: u64 },
}

/// What one page-table walk did (for the `sim/pagemap_*` counters).
#[derive(Clone, Copy, Default)]
struct WalkCount {
    /// `pte_hole` callbacks.
    holes: u64,
    /// PTE tables mapped (`pte_offset_map_lock()`).
    pte_tables: u64,
    /// PMD leaves handled whole (`pmd_trans_huge_lock()`).
    pmd_leaves: u64,
}

/// The per-read() and per-walk costs of pagemap reads, and the seed-004
/// lookups, for [`Kernel::pagemap_read`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PagemapFile {
    /// The file position in bytes (`*ppos`).
    pub pos: u64,
    /// `pm.show_pfn`: the opener has CAP_SYS_ADMIN.
    pub show_pfn: bool,
}

impl<A: Arch> Kernel<A> {
    /// `walk_page_range()` over `[start, end)` of `mm` with the pagemap
    /// ops: calls `f(addr, slot)` for every page in order.
    fn pagemap_walk(
        &self,
        mm: MmId,
        start: u64,
        end: u64,
        f: &mut impl FnMut(u64, Slot),
    ) -> WalkCount {
        let mut wc = WalkCount::default();
        let mut addr = start;
        let vmas = &self.mm(mm).vmas;
        while addr < end {
            let vma = vmas
                .range(..=addr)
                .next_back()
                .map(|(_, v)| *v)
                .filter(|v| v.contains(addr))
                .or_else(|| vmas.range(addr..).next().map(|(_, v)| *v));
            let Some(vma) = vma.filter(|v| v.vm_start < end) else {
                // No VMA up to the end: one hole.
                wc.holes += 1;
                while addr < end {
                    f(addr, Slot::Hole);
                    addr += PAGE_SIZE;
                }
                break;
            };
            if addr < vma.vm_start {
                wc.holes += 1;
                while addr < vma.vm_start {
                    f(addr, Slot::Hole);
                    addr += PAGE_SIZE;
                }
            }
            let vend = vma.vm_end.min(end);
            let shmem_file = (vma.kind == crate::mm::mmap::VmaKind::Shmem)
                .then(|| vma.file.map(|o| self.open_files[o as usize].mapping.0))
                .flatten();
            while addr < vend {
                let next = pmd_addr_end(addr, vend);
                let pmdval = self
                    .walk_to_pmd(mm, addr)
                    .map(|p| self.pmdp_get(p))
                    .unwrap_or(0);
                if A::pmd_trans_huge(pmdval) {
                    wc.pmd_leaves += 1;
                    let mut idx = pte_index(addr) as u64;
                    while addr < next {
                        f(addr, Slot::Pmd { pmd: pmdval, idx });
                        addr += PAGE_SIZE;
                        idx += 1;
                    }
                } else if let Some(tid) = self.entry_table(pmdval) {
                    wc.pte_tables += 1;
                    let t = self.pt.table(tid);
                    while addr < next {
                        let pte = t[pte_index(addr)];
                        let shmem_index = shmem_file.map(|fid| (fid, vma.linear_page_index(addr)));
                        f(addr, Slot::Pte { pte, shmem_index });
                        addr += PAGE_SIZE;
                    }
                } else {
                    wc.holes += 1;
                    while addr < next {
                        f(addr, Slot::Hole);
                        addr += PAGE_SIZE;
                    }
                }
            }
        }
        wc
    }

    /// `pte_to_pagemap_entry()` / the PMD-leaf part of
    /// `pagemap_pmd_range()` for one page. Returns the entry, whether a
    /// seed-004 page-cache lookup was made and whether the entry had a
    /// struct page to inspect (folio anon flag, precise mapcount).
    fn pagemap_entry(&self, slot: Slot, show_pfn: bool) -> (u64, bool, bool) {
        let mut frame = 0;
        let mut flags = 0;
        let mut page = None;
        let mut looked_up = false;
        match slot {
            Slot::Hole => {}
            Slot::Pte { pte, shmem_index } => {
                if A::pte_present(pte) {
                    if show_pfn {
                        frame = A::pte_pfn(pte).0 as u64;
                    }
                    flags |= PM_PRESENT;
                    // vm_normal_page(): NULL for the zero page.
                    if !A::pte_special(pte) {
                        page = Some(A::pte_pfn(pte));
                    }
                } else if pte != 0 {
                    let (ty, offset) = A::pte_to_swp_entry(pte);
                    if show_pfn {
                        frame = ty as u64 | (offset << MAX_SWAPFILES_SHIFT);
                    }
                    flags |= PM_SWAP;
                } else if let (true, Some((fid, index))) =
                    (self.cfg.series.pagemap_shmem_swap, shmem_index)
                {
                    // Seed 004: the swap entry in the shmem page-cache slot.
                    looked_up = true;
                    if let Some(e) = self.shmem_swap_entry(FileId(fid), index) {
                        if show_pfn {
                            frame = e.ty as u64 | (e.offset << MAX_SWAPFILES_SHIFT);
                        }
                        flags |= PM_SWAP;
                    }
                }
            }
            Slot::Pmd { pmd, idx } => {
                let head = A::pte_pfn(pmd);
                flags |= PM_PRESENT;
                if show_pfn {
                    frame = head.0 as u64 + idx;
                }
                // pmd_page(): no vm_normal_page() filter, so the huge zero
                // folio (not anon) reports PM_FILE; exclusivity is that of
                // the head page, for all 512 entries.
                page = Some(head);
            }
        }
        let has_page = page.is_some();
        if let Some(p) = page {
            let folio = self.mem.page_folio(p);
            let huge_zero = self.huge_zero_folio == Some(folio);
            if huge_zero || !self.mem.folio_test_anon(folio) {
                flags |= PM_FILE;
            }
            if flags & PM_PRESENT != 0 && !huge_zero && self.mem.precise_page_mapcount(p) == 1 {
                flags |= PM_MMAP_EXCLUSIVE;
            }
        }
        (make_pme(frame, flags), looked_up, has_page)
    }

    /// `pagemap_read()`: one read(2) of `count` bytes at `file.pos` of
    /// `/proc/PID/pagemap` of `mm`; appends the entries to `out` and
    /// returns the bytes read (0 at the end of the address space).
    /// Errno EINVAL for a position or count that is not a multiple of 8.
    /// Counts `sim/pagemap_read_calls`, one `sim/pagemap_walks` (an
    /// mmap_read_lock round trip and a walk_page_range()) per
    /// PAGEMAP_WALK_SIZE chunk, `sim/pagemap_entries` of the requested range,
    /// those with a struct page (`sim/pagemap_page_entries`), the entries
    /// walked past it (`sim/pagemap_overwalk_entries`,
    /// `sim/pagemap_overwalk_page_entries`), the walk's PTE tables, PMD leaves
    /// and holes, and with seed 004 the page-cache lookups
    /// (`sim/pagemap_pagecache_lookups`, one per none PTE of a shmem VMA:
    /// each is a separate xarray descent from the root, so the cost is per
    /// lookup) and the walks that made at least one
    /// (`sim/pagemap_pagecache_walks`, informational).
    ///
    /// 6.18 walks only the requested pages. With
    /// `series.pagemap_walk_to_pmd_end` (kernels before 6.5, as in seed
    /// 004's measurements) the walk's end is the task size, not the
    /// requested end, so every chunk is walked to its 2 MiB boundary (the
    /// 512-entry buffer never fills first) and only `count` bytes of it are
    /// copied: an 8-byte read at page k of a chunk computes 512 - k entries,
    /// 511 - k of them past the requested end.
    pub fn pagemap_read(
        &mut self,
        mm: MmId,
        file: &mut PagemapFile,
        count: u64,
        out: &mut Vec<u64>,
    ) -> KResult<u64> {
        if !file.pos.is_multiple_of(PM_ENTRY_BYTES) || !count.is_multiple_of(PM_ENTRY_BYTES) {
            return Err(KernelError::Errno(
                "EINVAL",
                format!("pagemap read of {count} bytes at position {}", file.pos),
            ));
        }
        self.vmstat.sim.pagemap_read_calls += 1;
        if count == 0 {
            return Ok(0);
        }
        let svpfn = file.pos / PM_ENTRY_BYTES;
        let mut start = svpfn.saturating_mul(PAGE_SIZE).min(TASK_SIZE);
        let requested_end = start
            .saturating_add((count / PM_ENTRY_BYTES).saturating_mul(PAGE_SIZE))
            .min(TASK_SIZE);
        let end = if self.cfg.series.pagemap_walk_to_pmd_end {
            TASK_SIZE
        } else {
            requested_end
        };
        let show_pfn = file.show_pfn;
        let mut copied = 0;
        let mut left = count;
        while left > 0 && start < end {
            let chunk_end = ((start + PAGEMAP_WALK_SIZE) & !(PAGEMAP_WALK_SIZE - 1)).min(end);
            let first = out.len();
            let mut lookups = 0u64;
            let mut with_page = [0u64; 2];
            let wc = self.pagemap_walk(mm, start, chunk_end, &mut |addr, slot| {
                let (e, looked, has_page) = self.pagemap_entry(slot, show_pfn);
                lookups += looked as u64;
                with_page[(addr >= requested_end) as usize] += has_page as u64;
                out.push(e);
            });
            let s = &mut self.vmstat.sim;
            s.pagemap_walks += 1;
            s.pagemap_pte_tables += wc.pte_tables;
            s.pagemap_pmd_leaves += wc.pmd_leaves;
            s.pagemap_holes += wc.holes;
            s.pagemap_pagecache_lookups += lookups;
            s.pagemap_pagecache_walks += (lookups > 0) as u64;
            let n = (chunk_end - start) / PAGE_SIZE;
            let over = (chunk_end.saturating_sub(requested_end.max(start))) / PAGE_SIZE;
            s.pagemap_entries += n - over;
            s.pagemap_page_entries += with_page[0];
            s.pagemap_overwalk_entries += over;
            s.pagemap_overwalk_page_entries += with_page[1];
            let len = left.min(n * PM_ENTRY_BYTES);
            out.truncate(first + (len / PM_ENTRY_BYTES) as usize);
            copied += len;
            left -= len;
            start = chunk_end;
        }
        file.pos += copied;
        Ok(copied)
    }

    /// Read the pagemap entries of `[start, start + len)` of `mm` with
    /// read(2) calls of `read_size` bytes (the last one shorter), as a
    /// `pread` loop does; appends the entries to `out`.
    pub fn pagemap_read_range(
        &mut self,
        mm: MmId,
        start: u64,
        len: u64,
        read_size: u64,
        show_pfn: bool,
        out: &mut Vec<u64>,
    ) -> KResult<()> {
        let mut file = PagemapFile {
            pos: start / PAGE_SIZE * PM_ENTRY_BYTES,
            show_pfn,
        };
        let mut left = len / PAGE_SIZE * PM_ENTRY_BYTES;
        while left > 0 {
            let n = self.pagemap_read(mm, &mut file, read_size.min(left), out)?;
            if n == 0 {
                break;
            }
            left -= n;
        }
        Ok(())
    }

    /// `do_pagemap_scan()` of `[start, end)` with every category of
    /// interest, no category filter, `return_mask` = all categories and no
    /// write-protection: the regions of pages with equal categories
    /// (`pagemap_scan_output()` merging), VMA gaps skipped. Counts
    /// `sim/pagemap_scan_calls` and `sim/pagemap_scan_entries`.
    pub fn pagemap_scan(&mut self, mm: MmId, start: u64, end: u64) -> Vec<PageRegion> {
        let mut out: Vec<PageRegion> = Vec::new();
        let huge_zero = self.huge_zero_folio;
        let mut pages = 0u64;
        self.pagemap_walk(mm, start, end, &mut |addr, slot| {
            let cat = match slot {
                Slot::Hole => {
                    // pagemap_scan_pte_hole(): nothing outside a VMA.
                    if self.find_vma(mm, addr).is_none() {
                        return;
                    }
                    0
                }
                Slot::Pte { pte, .. } if A::pte_present(pte) => {
                    let mut c = page_is::PRESENT | page_is::WRITTEN;
                    if A::pte_special(pte) {
                        c |= page_is::PFNZERO;
                    } else if !self
                        .mem
                        .folio_test_anon(self.mem.page_folio(A::pte_pfn(pte)))
                    {
                        c |= page_is::FILE;
                    }
                    c
                }
                Slot::Pte { pte, .. } if pte != 0 => page_is::SWAPPED | page_is::WRITTEN,
                // A none PTE inside a table reports WRITTEN on 6.18.44
                // (observed; the 6.18.35 source read gives it 0), a missing
                // table (the hole callback) reports nothing.
                Slot::Pte { .. } => page_is::WRITTEN,
                Slot::Pmd { pmd, .. } => {
                    let mut c = page_is::HUGE | page_is::PRESENT | page_is::WRITTEN;
                    let folio = self.mem.page_folio(A::pte_pfn(pmd));
                    if huge_zero == Some(folio) {
                        c |= page_is::PFNZERO;
                    } else if !self.mem.folio_test_anon(folio) {
                        c |= page_is::FILE;
                    }
                    c
                }
            };
            pages += 1;
            match out.last_mut() {
                Some(r) if r.end == addr && r.categories == cat => r.end += PAGE_SIZE,
                _ => out.push(PageRegion {
                    start: addr,
                    end: addr + PAGE_SIZE,
                    categories: cat,
                }),
            }
        });
        self.vmstat.sim.pagemap_scan_calls += 1;
        self.vmstat.sim.pagemap_scan_entries += pages;
        out
    }
}
