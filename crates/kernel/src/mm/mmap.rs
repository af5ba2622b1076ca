//! Address spaces and VMAs (mm/mmap.c: do_mmap(), __get_unmapped_area(),
//! mm/vma.c: vma_merge_new_range(), __split_vma(), do_vmi_munmap(),
//! mm/huge_memory.c: __thp_get_unmapped_area()), Linux 6.18.
//!
//! Modelled: top-down placement below a fixed `mmap_base`, PMD alignment of
//! private anonymous mappings whose length is a multiple of 2 MiB and of file
//! mappings that cover an aligned 2 MiB of the file (the padded search, the
//! "already aligned moves up one PMD" rule), merging of compatible neighbours,
//! splitting on partial munmap/madvise, and freeing of PTE tables whose 2 MiB
//! no longer intersects a VMA.
//! Address hints are honoured where the range is free, as
//! generic_get_unmapped_area_topdown() honours them.
//! Not modelled: MAP_FIXED, stack and brk, ASLR (the base
//! is fixed), mprotect, freeing of upper-level tables, shmem's
//! huge-aware placement (shmem huge pages are not modelled). mremap(2) is
//! mm/mremap.rs.

use crate::KResult;
use std::collections::BTreeMap;

use crate::arch::Arch;
use crate::fs::proc::task_mmu::TASK_SIZE;
use crate::include::linux::pgtable::{align_down, is_aligned, PAGE_SHIFT, PAGE_SIZE, PMD_SIZE};
use crate::mm::pgtable_generic::TableId;
use crate::{FileId, Kernel, KernelError, MmId};

pub(crate) const VM_READ: u64 = 0x1;
pub(crate) const VM_WRITE: u64 = 0x2;
pub(crate) const VM_EXEC: u64 = 0x4;
pub(crate) const VM_SHARED: u64 = 0x8;
pub(crate) const VM_MAYREAD: u64 = 0x10;
pub(crate) const VM_MAYWRITE: u64 = 0x20;
pub(crate) const VM_MAYEXEC: u64 = 0x40;
pub(crate) const VM_MAYSHARE: u64 = 0x80;
pub(crate) const VM_SEQ_READ: u64 = 0x8000;
pub(crate) const VM_RAND_READ: u64 = 0x10000;
pub(crate) const VM_HUGEPAGE: u64 = 0x2000_0000;
pub(crate) const VM_NOHUGEPAGE: u64 = 0x4000_0000;

/// `enum` of `mm->rss_stat` counters.
pub(crate) const MM_FILEPAGES: usize = 0;
pub(crate) const MM_ANONPAGES: usize = 1;
pub(crate) const MM_SWAPENTS: usize = 2;
pub(crate) const MM_SHMEMPAGES: usize = 3;
pub(crate) const NR_MM_COUNTERS: usize = 4;

/// Fixed top of the mmap area. Real x86_64 processes start theirs just below
/// the stack gap, at a random offset (ASLR); the model uses a fixed base
/// below that randomised range, so the native engine can ask the host for
/// the model's addresses as mmap hints. Only alignment matters to the
/// modelled behaviour.
pub(crate) const MMAP_BASE: u64 = 0x6000_0000_0000;
/// `mmap_min_addr`
pub(crate) const MMAP_MIN_ADDR: u64 = 0x1_0000;

/// What backs a VMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmaKind {
    /// Private anonymous memory (`vma_is_anonymous()`).
    Anon,
    /// A regular file on a block filesystem (ext4-like ops: `filemap_fault`,
    /// `filemap_map_pages`, `page_mkwrite`).
    File,
    /// Shared anonymous memory (`vma_is_anon_shmem()`: shmem ops).
    Shmem,
}

/// `struct vm_area_struct`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "vm_area_struct")]
pub(crate) struct Vma {
    pub(crate) vm_start: u64,
    pub(crate) vm_end: u64,
    pub(crate) vm_pgoff: u64,
    pub(crate) vm_flags: u64,
    pub kind: VmaKind,
    /// `vm_file`: an open file (index into `Kernel::open_files`).
    pub file: Option<u32>,
    /// `anon_vma` is set once the VMA has anonymous pages.
    pub(crate) anon_vma: Option<crate::mm::rmap::AnonVmaId>,
    /// `swap_readahead_info`: the last swap fault's address, window and
    /// readahead hits (mm/swap_state.rs); 0 before the first.
    pub(crate) swap_readahead_info: u64,
}

impl Vma {
    /// `vma_pages()`
    #[inline]
    pub(crate) fn vma_pages(&self) -> u64 {
        (self.vm_end - self.vm_start) >> PAGE_SHIFT
    }
    /// `linear_page_index()`
    #[inline]
    pub(crate) fn linear_page_index(&self, addr: u64) -> u64 {
        ((addr - self.vm_start) >> PAGE_SHIFT) + self.vm_pgoff
    }
    /// `vma_is_anonymous()`
    #[inline]
    pub(crate) fn is_anonymous(&self) -> bool {
        self.kind == VmaKind::Anon
    }
    #[inline]
    pub(crate) fn is_shared(&self) -> bool {
        self.vm_flags & VM_SHARED != 0
    }
    /// `is_cow_mapping()`
    #[inline]
    pub(crate) fn is_cow_mapping(&self) -> bool {
        self.vm_flags & (VM_SHARED | VM_MAYWRITE) == VM_MAYWRITE
    }
    #[inline]
    pub(crate) fn contains(&self, addr: u64) -> bool {
        self.vm_start <= addr && addr < self.vm_end
    }
}

/// An mm's VMAs keyed by `vm_start` (the maple tree). Read through
/// `Deref`; every change goes through the methods here, which tell the
/// rmap walk's cache that the VMAs changed ([`crate::mm::rmap::vmas_changed`]).
#[derive(Debug, Default)]
pub(crate) struct VmaTree(BTreeMap<u64, Vma>);

impl std::ops::Deref for VmaTree {
    type Target = BTreeMap<u64, Vma>;
    fn deref(&self) -> &BTreeMap<u64, Vma> {
        &self.0
    }
}

impl VmaTree {
    pub(crate) fn insert(&mut self, start: u64, vma: Vma) -> Option<Vma> {
        crate::mm::rmap::vmas_changed();
        self.0.insert(start, vma)
    }

    pub(crate) fn remove(&mut self, start: &u64) -> Option<Vma> {
        crate::mm::rmap::vmas_changed();
        self.0.remove(start)
    }

    pub(crate) fn clear(&mut self) {
        crate::mm::rmap::vmas_changed();
        self.0.clear()
    }

    /// The VMA at `start` to change in place.
    pub(crate) fn get_mut(&mut self, start: &u64) -> Option<&mut Vma> {
        crate::mm::rmap::vmas_changed();
        self.0.get_mut(start)
    }
}

/// `struct mm_struct`
#[derive(Debug)]
#[doc(alias = "mm_struct")]
pub struct Mm {
    pub id: MmId,
    /// `mm->mm_id` for the large-folio MM ownership slots (never 0).
    pub(crate) mm_id: u32,
    /// Table id of the PGD page.
    pub(crate) pgd: TableId,
    pub(crate) pgd_pfn: crate::include::linux::pgtable::Pfn,
    /// VMAs keyed by `vm_start`.
    pub(crate) vmas: VmaTree,
    /// `rss_stat`
    pub(crate) rss: [i64; NR_MM_COUNTERS],
    /// Page tables deposited with PMD-mapped anon THPs, keyed by the PMD
    /// address (`pgtable_trans_huge_deposit()`).
    pub(crate) deposited: BTreeMap<u64, crate::include::linux::pgtable::Pfn>,
    /// Live child processes (for `wait`).
    pub children: Vec<MmId>,
    /// `mm->lru_gen`: MGLRU's list membership and use bit.
    pub(crate) lru_gen: crate::mm::lru_gen::MmLruGen,
}

/// Arguments of an mmap call, decoded by [`Kernel::sys_mmap`].
#[derive(Clone, Copy, Debug)]
pub struct MmapArgs {
    /// The address hint (0: none).
    pub addr: u64,
    pub len: u64,
    pub prot_read: bool,
    pub prot_write: bool,
    pub prot_exec: bool,
    pub shared: bool,
    pub kind: VmaKind,
    /// The file for `VmaKind::File`.
    pub file: Option<FileId>,
    /// File offset in bytes.
    pub offset: u64,
    /// MAP_FIXED_NOREPLACE: map exactly at `addr`, or fail with EEXIST
    /// when anything is mapped in the range.
    pub noreplace: bool,
}

impl<A: Arch> Kernel<A> {
    /// `mm_alloc()`: a new empty address space.
    pub fn mm_alloc(&mut self) -> MmId {
        let (pgd_pfn, pgd) = self.pgtable_alloc();
        let id = MmId(self.mms.len() as u32);
        self.mms.push(Some(Mm {
            id,
            mm_id: id.0 + 1,
            pgd,
            pgd_pfn,
            vmas: VmaTree::default(),
            rss: [0; NR_MM_COUNTERS],
            deposited: BTreeMap::new(),
            children: Vec::new(),
            lru_gen: Default::default(),
        }));
        self.live_mms.insert(id);
        crate::mm::rmap::vmas_changed();
        self.lru_gen_add_mm(id);
        id
    }

    /// `find_vma()` restricted to VMAs containing `addr`.
    #[inline]
    pub(crate) fn find_vma(&self, mm: MmId, addr: u64) -> Option<Vma> {
        let (_, v) = self.mm(mm).vmas.range(..=addr).next_back()?;
        v.contains(addr).then_some(*v)
    }

    /// Write back a VMA changed by a fault path (e.g. a new anon_vma).
    pub(crate) fn vma_update(&mut self, mm: MmId, vma: &Vma) {
        self.mm_mut(mm).vmas.insert(vma.vm_start, *vma);
    }

    /// Is `[addr, addr + len)` inside the mmap area and free of VMAs? (the
    /// hint check of generic_get_unmapped_area_topdown(); the model has no
    /// stack, so there are no guard gaps).
    fn hint_fits(&self, mm: MmId, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        addr >= MMAP_MIN_ADDR
            && is_aligned(addr, PAGE_SIZE)
            && end <= MMAP_BASE
            && self
                .mm(mm)
                .vmas
                .range(..end)
                .next_back()
                .is_none_or(|(_, v)| v.vm_end <= addr)
    }

    /// MAP_FIXED_NOREPLACE in do_mmap(): the range must lie in the user
    /// address space (`__get_unmapped_area()`'s checks with MAP_FIXED: at
    /// or above mmap_min_addr, below TASK_SIZE) and intersect no VMA
    /// (`find_vma_intersection()`, else EEXIST).
    fn fixed_noreplace(&self, mm: MmId, addr: u64, len: u64) -> KResult<u64> {
        let end = addr.checked_add(len).filter(|&e| e <= TASK_SIZE);
        if !is_aligned(addr, PAGE_SIZE) || addr < MMAP_MIN_ADDR || end.is_none() {
            return Err(KernelError::Errno(
                "EINVAL",
                format!("MAP_FIXED_NOREPLACE at {addr:#x}: outside the user address space"),
            ));
        }
        let end = end.unwrap_or(addr);
        let taken = self
            .mm(mm)
            .vmas
            .range(..end)
            .next_back()
            .is_some_and(|(_, v)| v.vm_end > addr);
        if taken {
            return Err(KernelError::Errno(
                "EEXIST",
                format!("MAP_FIXED_NOREPLACE at {addr:#x}: the range is mapped"),
            ));
        }
        Ok(addr)
    }

    /// `mm_get_unmapped_area_vmflags()`: the hint if it fits, else the
    /// top-down search.
    fn mm_get_unmapped_area(&self, mm: MmId, hint: u64, len: u64) -> Option<u64> {
        if hint != 0 && self.hint_fits(mm, hint, len) {
            return Some(hint);
        }
        self.unmapped_area_topdown(mm, len)
    }

    /// Top-down search for a free range of `len` bytes
    /// (`unmapped_area_topdown()`).
    fn unmapped_area_topdown(&self, mm: MmId, len: u64) -> Option<u64> {
        let mut high = MMAP_BASE;
        for v in self.mm(mm).vmas.values().rev() {
            if v.vm_start >= high {
                continue;
            }
            if v.vm_end <= high && high - v.vm_end >= len {
                return Some(high - len);
            }
            high = high.min(v.vm_start);
        }
        (high >= MMAP_MIN_ADDR + len).then(|| high - len)
    }

    /// `__thp_get_unmapped_area()` with `size = PMD_SIZE`: Some(aligned
    /// address, or the hint when the padded length fits there), or None to
    /// fall back to the plain search.
    fn thp_get_unmapped_area(&self, mm: MmId, hint: u64, len: u64, off: u64) -> Option<u64> {
        let off_end = off + len;
        let off_align = off.next_multiple_of(PMD_SIZE);
        if off_end <= off_align || off_end - off_align < PMD_SIZE {
            return None;
        }
        let ret = self.mm_get_unmapped_area(mm, hint, len + PMD_SIZE)?;
        if hint != 0 && ret == hint {
            return Some(hint);
        }
        let off_sub = off.wrapping_sub(ret) & (PMD_SIZE - 1);
        // Top-down layout: an already aligned result moves up by one PMD.
        Some(if off_sub == 0 {
            ret + PMD_SIZE
        } else {
            ret + off_sub
        })
    }

    /// `__get_unmapped_area()` for the mapping kinds the model knows: file
    /// mappings through the filesystem's thp_get_unmapped_area() (ext4,
    /// xfs), anonymous mappings of a PMD multiple without a hint through
    /// thp_get_unmapped_area_vmflags(), shmem (shmem_get_unmapped_area(),
    /// without huge shmem) and the rest through the plain search.
    pub(crate) fn get_unmapped_area(&self, mm: MmId, a: &MmapArgs) -> Option<u64> {
        let thp = match a.kind {
            VmaKind::Anon => a.addr == 0 && is_aligned(a.len, PMD_SIZE),
            VmaKind::File => true,
            VmaKind::Shmem => false,
        };
        let off = if a.kind == VmaKind::File { a.offset } else { 0 };
        thp.then(|| self.thp_get_unmapped_area(mm, a.addr, a.len, off))
            .flatten()
            .or_else(|| self.mm_get_unmapped_area(mm, a.addr, a.len))
    }

    /// The mmap(2) system call (ksys_mmap_pgoff() → do_mmap()): `prot` and
    /// `flags` are the raw `PROT_*` / `MAP_*` values and `file` the open
    /// file of a file mapping. What the flags mean is decided here, as the
    /// kernel decides it: MAP_ANONYMOUS with MAP_SHARED is shmem
    /// (shmem_zero_setup()), with MAP_PRIVATE private anonymous memory.
    /// Returns the address.
    #[allow(clippy::too_many_arguments)]
    pub fn sys_mmap(
        &mut self,
        mm: MmId,
        addr: u64,
        len: u64,
        prot: i32,
        flags: i32,
        file: Option<FileId>,
        offset: u64,
    ) -> KResult<u64> {
        use foliosim_uapi::mman::*;
        let known = MAP_TYPE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
        if flags & !known != 0 {
            return Err(KernelError::Unsupported(format!(
                "mmap flags {:#x} (only MAP_SHARED, MAP_PRIVATE, MAP_ANONYMOUS and \
                 MAP_NORESERVE are modelled)",
                flags & !known
            )));
        }
        let shared = match flags & MAP_TYPE {
            MAP_SHARED => true,
            MAP_PRIVATE => false,
            t => return Err(KernelError::Errno("EINVAL", format!("mmap type {t:#x}"))),
        };
        let kind = match (flags & MAP_ANONYMOUS != 0, shared) {
            (true, true) => VmaKind::Shmem,
            (true, false) => VmaKind::Anon,
            (false, _) => VmaKind::File,
        };
        if kind == VmaKind::File && file.is_none() {
            return Err(KernelError::Errno(
                "EBADF",
                "file mapping without a file".into(),
            ));
        }
        self.do_mmap(
            mm,
            MmapArgs {
                addr,
                len,
                prot_read: prot & PROT_READ != 0,
                prot_write: prot & PROT_WRITE != 0,
                prot_exec: prot & PROT_EXEC != 0,
                shared,
                kind,
                file: if kind == VmaKind::File { file } else { None },
                offset: if kind == VmaKind::File { offset } else { 0 },
                noreplace: flags & MAP_FIXED_NOREPLACE != 0,
            },
        )
    }

    /// `do_mmap()`. Returns the address.
    pub fn do_mmap(&mut self, mm: MmId, a: MmapArgs) -> KResult<u64> {
        if a.len == 0 || !a.len.is_multiple_of(PAGE_SIZE) || !a.offset.is_multiple_of(PAGE_SIZE) {
            return Err(KernelError::Errno(
                "EINVAL",
                "length and offset must be page multiples".into(),
            ));
        }
        // __get_unmapped_area(): a length beyond the address space fails
        // before any search (`len > TASK_SIZE`, `len > mmap_end -
        // mmap_min_addr`).
        if a.len > MMAP_BASE - MMAP_MIN_ADDR {
            return Err(KernelError::Errno(
                "ENOMEM",
                format!(
                    "a mapping of {} bytes does not fit in the address space",
                    a.len
                ),
            ));
        }
        if a.kind == VmaKind::Shmem && !a.shared {
            return Err(KernelError::Unsupported("private shmem mappings".into()));
        }
        let addr = if a.noreplace {
            self.fixed_noreplace(mm, a.addr, a.len)?
        } else {
            self.get_unmapped_area(mm, &a).ok_or_else(|| {
                KernelError::Errno("ENOMEM", "no room in the address space".into())
            })?
        };
        let mut vm_flags = VM_MAYREAD | VM_MAYWRITE | VM_MAYEXEC;
        if a.prot_read {
            vm_flags |= VM_READ;
        }
        if a.prot_write {
            vm_flags |= VM_WRITE;
        }
        if a.prot_exec {
            vm_flags |= VM_EXEC;
        }
        if a.shared {
            vm_flags |= VM_SHARED | VM_MAYSHARE;
        }
        let (file, vm_pgoff) = match a.kind {
            VmaKind::Anon => (None, addr >> PAGE_SHIFT),
            VmaKind::File => {
                let f = a.file.ok_or_else(|| {
                    KernelError::Unsupported("file mapping without a file".into())
                })?;
                (Some(self.open_file(f)), a.offset >> PAGE_SHIFT)
            }
            VmaKind::Shmem => {
                let f = self.shmem_file_setup(a.len);
                (Some(self.open_file(f)), 0)
            }
        };
        let vma = Vma {
            vm_start: addr,
            vm_end: addr + a.len,
            vm_pgoff,
            vm_flags,
            kind: a.kind,
            file,
            anon_vma: None,
            swap_readahead_info: 0,
        };
        self.mm_mut(mm).vmas.insert(addr, vma);
        self.vma_merge_range(mm, addr, addr + a.len);
        Ok(addr)
    }

    /// Can `a` (below) and `b` (above, adjacent) be one VMA?
    /// (`is_mergeable_vma()`, `is_mergeable_anon_vma()`, pgoff continuity).
    fn vmas_mergeable(a: &Vma, b: &Vma) -> bool {
        let files_ok = match (a.file, b.file) {
            (None, None) => true,
            (Some(_), Some(_)) => a.kind == VmaKind::File && a.file == b.file,
            _ => false,
        };
        a.vm_end == b.vm_start
            && a.vm_flags == b.vm_flags
            && a.kind == b.kind
            && files_ok
            && (a.anon_vma.is_none() || b.anon_vma.is_none() || a.anon_vma == b.anon_vma)
            && a.vm_pgoff + a.vma_pages() == b.vm_pgoff
    }

    /// Merge mergeable neighbours in and around `[start, end)`.
    pub(crate) fn vma_merge_range(&mut self, mm: MmId, start: u64, end: u64) {
        let keys: Vec<u64> = {
            let vmas = &self.mm(mm).vmas;
            let first = vmas
                .range(..start)
                .next_back()
                .map(|(k, _)| *k)
                .unwrap_or(start);
            vmas.range(first..=end).map(|(k, _)| *k).collect()
        };
        let vmas = &mut self.mm_mut(mm).vmas;
        let mut prev: Option<u64> = None;
        for k in keys {
            let Some(cur) = vmas.get(&k).copied() else {
                continue;
            };
            if let Some(p) = prev {
                let pv = vmas[&p];
                if Self::vmas_mergeable(&pv, &cur) {
                    let merged = Vma {
                        vm_end: cur.vm_end,
                        anon_vma: pv.anon_vma.max(cur.anon_vma),
                        ..pv
                    };
                    vmas.remove(&k);
                    vmas.insert(p, merged);
                    continue;
                }
            }
            prev = Some(k);
        }
    }

    /// `__split_vma()`: make `addr` a VMA boundary.
    pub(crate) fn split_vma(&mut self, mm: MmId, addr: u64) {
        let Some(v) = self.find_vma(mm, addr) else {
            return;
        };
        if v.vm_start == addr {
            return;
        }
        // vma_adjust_trans_huge(): a PMD mapping across the new boundary is
        // split first.
        if !is_aligned(addr, PMD_SIZE) {
            if let Some(pmd) = self.walk_to_pmd(mm, addr) {
                if A::pmd_trans_huge(self.pmdp_get(pmd)) {
                    self.split_huge_pmd(mm, &v, align_down(addr, PMD_SIZE), pmd);
                }
            }
        }
        let low = Vma { vm_end: addr, ..v };
        let high = Vma {
            vm_start: addr,
            vm_pgoff: v.vm_pgoff + ((addr - v.vm_start) >> PAGE_SHIFT),
            ..v
        };
        let vmas = &mut self.mm_mut(mm).vmas;
        vmas.insert(low.vm_start, low);
        vmas.insert(high.vm_start, high);
    }

    /// The VMAs overlapping `[start, end)`, after splitting at both ends.
    pub(crate) fn vmas_in_range_split(&mut self, mm: MmId, start: u64, end: u64) -> Vec<Vma> {
        self.split_vma(mm, start);
        self.split_vma(mm, end);
        self.mm(mm)
            .vmas
            .range(start..end)
            .map(|(_, v)| *v)
            .collect()
    }

    /// The munmap(2) system call (`__vm_munmap()`).
    pub fn sys_munmap(&mut self, mm: MmId, start: u64, len: u64) -> KResult<()> {
        self.vmstat.sim.syscall_mm += 1;
        self.do_munmap(mm, start, len)
    }

    /// `do_vmi_munmap()`: unmap `[start, start + len)`.
    pub(crate) fn do_munmap(&mut self, mm: MmId, start: u64, len: u64) -> KResult<()> {
        if !start.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) || len == 0 {
            return Err(KernelError::Errno(
                "EINVAL",
                "munmap range must be page aligned".into(),
            ));
        }
        // A range reaching past the top of the user address space is
        // refused before any VMA is looked at.
        use crate::fs::proc::task_mmu::TASK_SIZE;
        if start > TASK_SIZE || len > TASK_SIZE - start {
            return Err(KernelError::Errno(
                "EINVAL",
                format!("munmap range {start:#x}+{len:#x} ends beyond TASK_SIZE"),
            ));
        }
        let end = start + len;
        // One mmu_gather for the unmap and the page-table freeing.
        self.tlb_gather_mmu(false);
        let removed = self.vmas_in_range_split(mm, start, end);
        for v in &removed {
            self.unmap_vma_range(mm, v, v.vm_start, v.vm_end, false);
            self.mm_mut(mm).vmas.remove(&v.vm_start);
        }
        self.free_pgtables(mm, start, end);
        self.tlb_finish_mmu(mm);
        self.fput_vma_files(&removed);
        Ok(())
    }

    /// `remove_vma()` → `fput()` of the files of `removed` VMAs: an
    /// unlinked shmem file (a shared anonymous mapping's) that no VMA of
    /// any mm maps any more is evicted (`shmem_evict_inode()`). Named files
    /// stay cached.
    fn fput_vma_files(&mut self, removed: &[Vma]) {
        // The unlinked shmem file behind a VMA (`vma->vm_file->f_mapping`).
        let shmem_file = |v: &Vma| {
            v.file
                .filter(|_| v.kind == VmaKind::Shmem)
                .map(|of| self.open_files[of as usize].mapping)
        };
        let mut gone: Vec<FileId> = removed.iter().filter_map(shmem_file).collect();
        if gone.is_empty() {
            return;
        }
        let still: std::collections::HashSet<FileId> = self
            .live_mms()
            .flat_map(|m| m.vmas.values())
            .filter_map(shmem_file)
            .collect();
        gone.sort_unstable();
        gone.dedup();
        gone.retain(|f| !still.contains(f));
        for f in gone {
            self.shmem_evict_inode(f);
        }
    }

    /// `free_pgtables()` (PTE level only): free the PTE tables of 2 MiB
    /// blocks in `[start, end)` that no VMA overlaps any more.
    pub(crate) fn free_pgtables(&mut self, mm: MmId, start: u64, end: u64) {
        let mut addr = align_down(start, PMD_SIZE);
        while addr < end {
            // Whole blocks: a PMD block reaching past `end` is checked too.
            let (pmd, next) = self.pmd_range_step(mm, addr, 0);
            let Some(pmd) = pmd else {
                addr = next;
                continue;
            };
            let busy = {
                let vmas = &self.mm(mm).vmas;
                vmas.range(..next)
                    .next_back()
                    .is_some_and(|(_, v)| v.vm_end > addr)
            };
            // free_pmd_range() skips a none PMD entry: only a PTE table
            // actually freed makes the gather flush (pte_free_tlb() sets
            // tlb->freed_tables).
            if !busy && self.free_pte_table(pmd) {
                self.cpus.gather.freed_tables |= self.cpus.gather.active;
            }
            addr = next;
        }
    }

    /// `exit_mmap()`: tear the whole address space down.
    pub fn exit_mmap(&mut self, mm: MmId) {
        // __mmput(): khugepaged_exit() before exit_mmap(), then
        // lru_gen_del_mm() (the model has no mm left to walk either way).
        self.khugepaged_exit(mm);
        self.lru_gen_del_mm(mm);
        let vmas: Vec<Vma> = self.mm(mm).vmas.values().copied().collect();
        self.tlb_gather_mmu(true);
        for v in &vmas {
            self.unmap_vma_range(mm, v, v.vm_start, v.vm_end, false);
        }
        self.mm_mut(mm).vmas.clear();
        for v in &vmas {
            self.free_pgtables(mm, v.vm_start, v.vm_end);
        }
        self.tlb_finish_mmu(mm);
        self.free_upper_tables(mm);
        self.mms[mm.0 as usize] = None;
        self.live_mms.remove(&mm);
        crate::mm::rmap::vmas_changed();
        self.fput_vma_files(&vmas);
    }

    /// Free the PGD/PUD/PMD pages of an exiting mm (`exit_mmap()` →
    /// `free_pgtables()` / `free_pgd_range()`, then `mm_free_pgd()`).
    fn free_upper_tables(&mut self, mm: MmId) {
        let pgd = self.mm(mm).pgd;
        let pgd_pfn = self.mm(mm).pgd_pfn;
        for i in 0..crate::include::linux::pgtable::PTRS_PER_PTE {
            let e = self.pt.get(pgd, i);
            let Some(pud) = self.entry_table(e) else {
                continue;
            };
            for j in 0..crate::include::linux::pgtable::PTRS_PER_PTE {
                let pe = self.pt.get(pud, j);
                if A::entry_is_table(pe) {
                    self.pt.set(pud, j, 0);
                    self.pgtable_free(A::table_pfn(pe));
                }
            }
            self.pt.set(pgd, i, 0);
            self.pgtable_free(A::table_pfn(e));
        }
        self.pgtable_free(pgd_pfn);
    }
}
