//! mremap(2) (mm/mremap.c: do_mremap(), check_mremap_params(),
//! check_prep_vma(), mremap_at(), shrink_vma(), expand_vma(),
//! vma_expandable(), expand_vma_in_place(), mremap_to(), remap_move(),
//! vrm_set_new_addr(), move_vma(), copy_vma_and_data(), unmap_source_vma(),
//! move_page_tables(), try_realign_addr(), get_extent(), move_normal_pud(),
//! move_normal_pmd(), move_ptes(), mremap_folio_pte_batch(); mm/vma.c:
//! copy_vma(), vma_merge_extend(); mm/huge_memory.c: move_huge_pmd()),
//! Linux 6.18.
//!
//! Modelled: the argument checks and their errno values; shrinking through
//! the munmap path; growing in place when the range ends at its VMA's end
//! and nothing is mapped in the gap (the VMA is extended and merged with a
//! compatible next one); moving, to the caller's address (MREMAP_FIXED,
//! which unmaps the target first) or, with MREMAP_MAYMOVE, to where
//! `get_unmapped_area()` puts a mapping of the new length with the VMA's
//! file offset (anonymous mappings of a PMD multiple THP-aligned). A move
//! copies the VMA (`copy_vma()`: same flags, file, offset and anon_vma; an
//! anonymous VMA that never faulted takes the new address as its offset)
//! and merges it with compatible neighbours, then moves the page tables:
//! a whole PMD table where old and new address and the remaining length
//! allow (after `try_realign_addr()`), likewise a whole PUD entry, a
//! PMD-mapped THP as one PMD (with its deposited table) when old and new
//! address are PMD-aligned, else split first (`split_huge_pmd()`), and
//! otherwise PTE by PTE, each entry keeping its folio and flags (x86 moves
//! one entry at a time; arm64 moves contiguous blocks of a large folio in
//! one batch whose dirty and young bits are gathered into every entry).
//! Pages keep their folios, rmap and mapcounts: nothing is remapped, only
//! the entries move. TLB flushes: one range flush per PTE table that held
//! a present entry, one per moved PMD table or PUD entry, one PMD-stride
//! flush per moved huge PMD, then the unmap of the old range (whose empty
//! PTE tables it frees). A move-only call (MREMAP_FIXED, same length)
//! moves every VMA of the range, keeping the gaps between them
//! (`remap_move()`).
//!
//! Not modelled: MREMAP_DONTUNMAP (refused as unsupported), hugetlb,
//! userfaultfd, mlock (no VM_LOCKED), VM_ACCOUNT charging, the map-count
//! limit, soft-dirty (compiled out on the 6.18 targets), the recovery path
//! of a failed page-table move (the model's allocations never fail: they
//! stop the run as a model limit).
//!
//! Promise: a move never changes a page's mapcount, its folio, the rss
//! counters or the anon_vma a folio points at; the entries at the new
//! address are the old ones (x86: bit for bit).

use crate::arch::{Arch, FolioSpan};
use crate::fs::proc::task_mmu::TASK_SIZE;
use crate::include::linux::pgtable::{
    align_down, pgd_index, pte_index, pud_index, HPAGE_PMD_NR, PAGE_SHIFT, PAGE_SIZE, PMD_SIZE,
    PUD_SIZE,
};
use crate::mm::mmap::{MmapArgs, Vma, VmaKind, VM_MAYSHARE, VM_SHARED};
use crate::mm::pgtable_generic::{PmdSlot, TableId};
use crate::{KResult, Kernel, KernelError, MmId};
use foliosim_uapi::mman::{MREMAP_DONTUNMAP, MREMAP_FIXED, MREMAP_MAYMOVE};

/// `enum mremap_type`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RemapType {
    NoResize,
    Shrink,
    Expand,
}

/// `struct vma_remap_struct`: one mremap(2) call as it goes.
#[derive(Clone, Copy, Debug)]
#[doc(alias = "vma_remap_struct")]
struct Vrm {
    mm: MmId,
    addr: u64,
    old_len: u64,
    new_len: u64,
    flags: i32,
    new_addr: u64,
    delta: u64,
    remap_type: RemapType,
}

impl Vrm {
    /// `vrm_implies_new_addr()`
    fn implies_new_addr(&self) -> bool {
        self.flags & (MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
    }

    /// `vrm_will_map_new()`
    fn will_map_new(&self) -> bool {
        self.remap_type == RemapType::Expand || self.implies_new_addr()
    }

    /// `vrm_move_only()`
    fn move_only(&self) -> bool {
        self.flags & MREMAP_FIXED != 0 && self.old_len == self.new_len
    }

    /// `vrm_overlaps()`
    fn overlaps(&self) -> bool {
        let end_old = self.addr.wrapping_add(self.old_len);
        let end_new = self.new_addr.wrapping_add(self.new_len);
        end_old > self.new_addr && end_new > self.addr
    }
}

/// `struct pagetable_move_control`: the range of one page-table move.
#[derive(Clone, Copy, Debug)]
#[doc(alias = "pagetable_move_control")]
struct Pmc {
    old_addr: u64,
    new_addr: u64,
    old_end: u64,
    len_in: u64,
}

impl Pmc {
    /// `get_extent()`: bytes to the next `size` boundary of both the old
    /// and the new address, at most to the end of the range.
    fn get_extent(&self, size: u64) -> u64 {
        let to_boundary = |a: u64| (a.wrapping_add(size) & !(size - 1)).wrapping_sub(a);
        to_boundary(self.old_addr)
            .min(self.old_end - self.old_addr)
            .min(to_boundary(self.new_addr))
    }
}

fn errno(name: &'static str, what: String) -> KernelError {
    KernelError::Errno(name, what)
}

/// `PAGE_ALIGN()` (wrapping, as in C: the checks after it catch a length
/// near the top of the address space).
fn page_align(len: u64) -> u64 {
    len.wrapping_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

impl<A: Arch> Kernel<A> {
    /// The mremap(2) system call (`SYSCALL_DEFINE5(mremap)` →
    /// `do_mremap()`): resize the mapping of `[addr, addr + old_len)` to
    /// `new_len` bytes, in place or, as `flags` (`MREMAP_*`) allow, at a
    /// new address (`new_addr` with MREMAP_FIXED). Context: the kernel
    /// holds the mmap_lock for writing. Returns the mapping's address.
    pub fn sys_mremap(
        &mut self,
        mm: MmId,
        addr: u64,
        old_len: u64,
        new_len: u64,
        flags: i32,
        new_addr: u64,
    ) -> KResult<u64> {
        self.vmstat.sim.syscall_mm += 1;
        let mut vrm = Vrm {
            mm,
            addr,
            old_len,
            new_len,
            flags,
            new_addr,
            delta: 0,
            remap_type: RemapType::NoResize,
        };
        self.do_mremap(&mut vrm)
    }

    /// `do_mremap()`
    fn do_mremap(&mut self, vrm: &mut Vrm) -> KResult<u64> {
        vrm.old_len = page_align(vrm.old_len);
        vrm.new_len = page_align(vrm.new_len);
        check_mremap_params(vrm)?;
        if vrm.move_only() {
            return self.remap_move(vrm);
        }
        let vma = self.find_vma(vrm.mm, vrm.addr);
        check_prep_vma(vrm, vma.as_ref())?;
        if vrm.implies_new_addr() {
            self.mremap_to(vrm)
        } else {
            self.mremap_at(vrm)
        }
    }

    /// `mremap_at()`: resize without a caller's address.
    fn mremap_at(&mut self, vrm: &mut Vrm) -> KResult<u64> {
        match vrm.remap_type {
            RemapType::NoResize => Ok(vrm.addr),
            RemapType::Shrink => {
                self.shrink_vma(vrm)?;
                Ok(vrm.addr)
            }
            RemapType::Expand => self.expand_vma(vrm),
        }
    }

    /// `shrink_vma()`: unmap the tail the new length leaves out
    /// (`do_vmi_munmap()`).
    fn shrink_vma(&mut self, vrm: &Vrm) -> KResult<()> {
        self.do_munmap(vrm.mm, vrm.addr + vrm.new_len, vrm.delta)?;
        match self.find_vma(vrm.mm, vrm.addr) {
            Some(_) => Ok(()),
            None => Err(errno("EFAULT", "the mapping went away".into())),
        }
    }

    /// `expand_vma()`: grow in place if the range ends at its VMA's end
    /// and the gap after it is free (`vrm_can_expand_in_place()`), else
    /// move, if MREMAP_MAYMOVE allows.
    fn expand_vma(&mut self, vrm: &mut Vrm) -> KResult<u64> {
        let vma = self.vma_at(vrm)?;
        if vma.vm_end - vrm.addr == vrm.old_len && self.vma_expandable(vrm.mm, &vma, vrm.delta) {
            self.expand_vma_in_place(vrm.mm, &vma, vrm.delta);
            return Ok(vrm.addr);
        }
        if vrm.flags & MREMAP_MAYMOVE == 0 {
            return Err(errno(
                "ENOMEM",
                format!(
                    "[{:#x}, {:#x}) cannot grow in place to {:#x} bytes (the range after it \
                     is mapped or it does not end its VMA) and MREMAP_MAYMOVE is not set",
                    vrm.addr,
                    vrm.addr + vrm.old_len,
                    vrm.new_len
                ),
            ));
        }
        self.vrm_set_new_addr(vrm, &vma)?;
        self.move_vma(vrm, &vma)
    }

    /// `vma_expandable()`: nothing is mapped in `[vm_end, vm_end + delta)`
    /// and the end stays in the user address space (`get_unmapped_area()`
    /// with MAP_FIXED only checks that).
    fn vma_expandable(&self, mm: MmId, vma: &Vma, delta: u64) -> bool {
        let Some(end) = vma.vm_end.checked_add(delta) else {
            return false;
        };
        end <= TASK_SIZE && self.find_vma_intersection(mm, vma.vm_end, end).is_none()
    }

    /// `expand_vma_in_place()` → `vma_merge_extend()`: the VMA takes the
    /// gap, then merges with a compatible VMA right after it.
    fn expand_vma_in_place(&mut self, mm: MmId, vma: &Vma, delta: u64) {
        let end = vma.vm_end + delta;
        if let Some(v) = self.mm_mut(mm).vmas.get_mut(&vma.vm_start) {
            v.vm_end = end;
        }
        self.vma_merge_range(mm, vma.vm_start, end);
    }

    /// `mremap_to()`: move to the caller's address (MREMAP_FIXED: whatever
    /// is mapped there is unmapped first), shrinking first if asked.
    fn mremap_to(&mut self, vrm: &mut Vrm) -> KResult<u64> {
        if vrm.flags & MREMAP_FIXED != 0 {
            self.do_munmap(vrm.mm, vrm.new_addr, vrm.new_len)?;
            self.vma_at(vrm)?;
        }
        if vrm.remap_type == RemapType::Shrink {
            self.shrink_vma(vrm)?;
            vrm.old_len = vrm.new_len;
        }
        let vma = self.vma_at(vrm)?;
        self.vrm_set_new_addr(vrm, &vma)?;
        self.move_vma(vrm, &vma)
    }

    /// `remap_move()`: a move-only call moves every VMA of the range, each
    /// at the same distance from the previous one as in the source; the
    /// range must start inside a VMA. Returns the first VMA's new address.
    fn remap_move(&mut self, vrm: &Vrm) -> KResult<u64> {
        let (start, end) = (vrm.addr, vrm.addr + vrm.old_len);
        let spans: Vec<(u64, u64)> = (self.mm(vrm.mm).vmas.values())
            .filter(|v| v.vm_end > start && v.vm_start < end)
            .map(|v| (v.vm_start, v.vm_end))
            .collect();
        let mut res = Err(errno("EFAULT", format!("nothing is mapped at {start:#x}")));
        let mut target = vrm.new_addr;
        let mut last_end = None;
        for (vm_start, vm_end) in spans {
            if last_end.is_none() && start < vm_start {
                return Err(errno("EFAULT", format!("nothing is mapped at {start:#x}")));
            }
            let addr = vm_start.max(start);
            let len = end.min(vm_end) - addr;
            let offset = last_end.map_or(0, |e| vm_start - e);
            last_end = Some(vm_end);
            let mut one = Vrm {
                addr,
                old_len: len,
                new_len: len,
                new_addr: target + offset,
                ..*vrm
            };
            let vma = self.find_vma(vrm.mm, addr);
            check_prep_vma(&mut one, vma.as_ref())?;
            let moved = self.mremap_to(&mut one)?;
            if res.is_err() {
                res = Ok(moved);
            }
            target = moved + len;
        }
        res
    }

    /// The VMA holding `vrm.addr` (`vma_lookup()`), else EFAULT.
    fn vma_at(&self, vrm: &Vrm) -> KResult<Vma> {
        self.find_vma(vrm.mm, vrm.addr)
            .ok_or_else(|| errno("EFAULT", format!("nothing is mapped at {:#x}", vrm.addr)))
    }

    /// `find_vma_intersection()`: the first VMA overlapping `[start, end)`.
    pub(crate) fn find_vma_intersection(&self, mm: MmId, start: u64, end: u64) -> Option<Vma> {
        let (_, v) = self.mm(mm).vmas.range(..end).next_back()?;
        (v.vm_end > start).then_some(*v)
    }

    /// `vrm_set_new_addr()`: where the moved mapping goes. MREMAP_FIXED:
    /// the caller's address; else `get_unmapped_area()` for the new length
    /// with no hint and the VMA's file offset at `addr` (a shared VMA asks
    /// as MAP_SHARED; an anonymous one ignores the offset).
    fn vrm_set_new_addr(&self, vrm: &mut Vrm, vma: &Vma) -> KResult<()> {
        if vrm.flags & MREMAP_FIXED != 0 {
            return Ok(());
        }
        let pgoff = vma.vm_pgoff + ((vrm.addr - vma.vm_start) >> PAGE_SHIFT);
        let args = MmapArgs {
            addr: 0,
            len: vrm.new_len,
            prot_read: false,
            prot_write: false,
            prot_exec: false,
            shared: vma.vm_flags & VM_MAYSHARE != 0,
            kind: vma.kind,
            file: None,
            offset: pgoff << PAGE_SHIFT,
            noreplace: false,
        };
        vrm.new_addr = self
            .get_unmapped_area(vrm.mm, &args)
            .ok_or_else(|| errno("ENOMEM", "no room in the address space".into()))?;
        Ok(())
    }

    /// `move_vma()` → `copy_vma_and_data()`, then `unmap_source_vma()`.
    /// Returns the new address.
    fn move_vma(&mut self, vrm: &Vrm, vma: &Vma) -> KResult<u64> {
        let mm = vrm.mm;
        let pgoff = vma.vm_pgoff + ((vrm.addr - vma.vm_start) >> PAGE_SHIFT);
        let new_vma = self.copy_vma(mm, vma, vrm.new_addr, vrm.new_len, pgoff)?;
        // The source may have been merged into the copy (an anonymous VMA
        // that never faulted, moved next to itself).
        let old_vma = self.find_vma(mm, vrm.addr).unwrap_or(*vma);
        self.move_page_tables(mm, &old_vma, &new_vma, vrm.addr, vrm.new_addr, vrm.old_len);
        // unmap_source_vma(): best effort, as in the kernel.
        let _ = self.do_munmap(mm, vrm.addr, vrm.old_len);
        Ok(vrm.new_addr)
    }

    /// `copy_vma()`: a VMA like `vma` at `[addr, addr + len)` with file
    /// offset `pgoff` and the same anon_vma (`anon_vma_clone()`), merged
    /// with compatible neighbours (`vma_merge_copied_range()`). An
    /// anonymous VMA that never faulted takes the new address as its
    /// offset, so that it can merge there. Returns the VMA holding `addr`.
    fn copy_vma(&mut self, mm: MmId, vma: &Vma, addr: u64, len: u64, pgoff: u64) -> KResult<Vma> {
        let vm_pgoff = if vma.kind == VmaKind::Anon && vma.anon_vma.is_none() {
            addr >> PAGE_SHIFT
        } else {
            pgoff
        };
        if self.find_vma_intersection(mm, addr, addr + len).is_some() {
            return Err(errno("ENOMEM", format!("{addr:#x} is still mapped")));
        }
        let copy = Vma {
            vm_start: addr,
            vm_end: addr + len,
            vm_pgoff,
            ..*vma
        };
        self.mm_mut(mm).vmas.insert(addr, copy);
        self.vma_merge_range(mm, addr, addr + len);
        Ok(self.find_vma(mm, addr).expect("the copied VMA"))
    }

    /// `move_page_tables()`: move the entries of `[old_addr, old_addr +
    /// len)` to `new_addr`, from the old VMA `old` to the new one `new`.
    fn move_page_tables(
        &mut self,
        mm: MmId,
        old: &Vma,
        new: &Vma,
        old_addr: u64,
        new_addr: u64,
        len: u64,
    ) {
        if len == 0 {
            return;
        }
        let mut pmc = Pmc {
            old_addr,
            new_addr,
            old_end: old_addr + len,
            len_in: len,
        };
        self.try_realign_addr(mm, &mut pmc, old, new);
        while pmc.old_addr < pmc.old_end {
            let extent = self.move_pgt_step(mm, old, &pmc);
            pmc.old_addr += extent;
            pmc.new_addr += extent;
        }
    }

    /// One pass of `move_page_tables()`'s loop: a whole PUD entry, a huge
    /// PMD, a whole PMD table, or the PTEs up to the next boundary.
    /// Returns the extent it covered.
    fn move_pgt_step(&mut self, mm: MmId, old: &Vma, pmc: &Pmc) -> u64 {
        let extent = pmc.get_extent(PUD_SIZE);
        let Some(old_pud) = self.get_old_pud(mm, pmc.old_addr) else {
            return extent;
        };
        let new_pud = self.alloc_new_pud(mm, pmc.new_addr);
        if extent == PUD_SIZE && self.move_normal_pud(mm, pmc, old_pud, new_pud) {
            return extent;
        }
        let extent = pmc.get_extent(PMD_SIZE);
        let Some(old_pmd) = self.get_old_pmd(mm, pmc.old_addr) else {
            return extent;
        };
        let new_pmd = self.pmd_alloc(mm, pmc.new_addr);
        if A::pmd_trans_huge(self.pmdp_get(old_pmd)) {
            if extent == PMD_SIZE && self.move_huge_pmd(mm, pmc, old_pmd, new_pmd) {
                return extent;
            }
            self.split_huge_pmd(mm, old, align_down(pmc.old_addr, PMD_SIZE), old_pmd);
        } else if extent == PMD_SIZE && self.move_normal_pmd(mm, old_pmd, new_pmd) {
            return extent;
        }
        let Some(old_t) = self.entry_table(self.pmdp_get(old_pmd)) else {
            // A file THP's split zapped the PMD: nothing left to move.
            return extent;
        };
        let new_t = self
            .pte_alloc(new_pmd)
            .expect("the new range maps no huge PMD");
        self.move_ptes(mm, old_t, new_t, pmc, extent);
        extent
    }

    /// `try_realign_addr()` at the PMD level: when old and new address sit
    /// at the same offset in their 2 MiB, the range reaches the next
    /// boundary, both start their VMA and nothing is mapped below them in
    /// that 2 MiB, the move starts at the boundary below, so that whole
    /// PTE tables move.
    fn try_realign_addr(&self, mm: MmId, pmc: &mut Pmc, old: &Vma, new: &Vma) {
        let mask = PMD_SIZE - 1;
        let old_align = pmc.old_addr & mask;
        if pmc.len_in < PMD_SIZE - old_align
            || old_align == 0
            || old_align != pmc.new_addr & mask
            || !self.can_align_down(mm, old, pmc.old_addr)
            || !self.can_align_down(mm, new, pmc.new_addr)
        {
            return;
        }
        pmc.old_addr &= !mask;
        pmc.new_addr &= !mask;
    }

    /// `can_align_down()` (not for the stack): `addr` starts `vma` and no
    /// VMA lies between the 2 MiB boundary below it and the VMA.
    fn can_align_down(&self, mm: MmId, vma: &Vma, addr: u64) -> bool {
        vma.vm_start == addr
            && (self.find_vma_intersection(mm, align_down(addr, PMD_SIZE), vma.vm_start)).is_none()
    }

    /// `get_old_pud()`: the PUD entry of `addr` if it points at a table.
    fn get_old_pud(&self, mm: MmId, addr: u64) -> Option<(TableId, usize)> {
        let pgd = self.mm(mm).pgd;
        let pud = self.entry_table(self.pt.get(pgd, pgd_index(addr)))?;
        let idx = pud_index(addr);
        (self.pt.get(pud, idx) != 0).then_some((pud, idx))
    }

    /// `alloc_new_pud()`: the PUD entry of `addr`, allocating the PUD table.
    fn alloc_new_pud(&mut self, mm: MmId, addr: u64) -> (TableId, usize) {
        let pgd = self.mm(mm).pgd;
        (self.next_level_alloc(pgd, pgd_index(addr)), pud_index(addr))
    }

    /// `get_old_pmd()`: the PMD entry of `addr` if it is not none.
    fn get_old_pmd(&self, mm: MmId, addr: u64) -> Option<PmdSlot> {
        let pmd = self.walk_to_pmd(mm, addr)?;
        (self.pmdp_get(pmd) != 0).then_some(pmd)
    }

    /// `move_normal_pud()`: move a whole PMD table (1 GiB) when the new PUD
    /// entry is none, with the deposited tables of its huge PMDs.
    fn move_normal_pud(
        &mut self,
        mm: MmId,
        pmc: &Pmc,
        old: (TableId, usize),
        new: (TableId, usize),
    ) -> bool {
        if self.pt.get(new.0, new.1) != 0 {
            return false;
        }
        let entry = self.pt.get(old.0, old.1);
        self.pt.set(old.0, old.1, 0);
        self.pt.set(new.0, new.1, entry);
        // The PMD table now maps another address: cached walks are stale.
        self.pt.generation += 1;
        self.move_deposits(mm, pmc.old_addr, PUD_SIZE, pmc.new_addr);
        self.flush_tlb_range(mm, PUD_SIZE / PAGE_SIZE);
        true
    }

    /// `move_normal_pmd()`: move a whole PTE table when the new PMD entry
    /// is none and the old one points at a table; flushes the old 2 MiB.
    fn move_normal_pmd(&mut self, mm: MmId, old: PmdSlot, new: PmdSlot) -> bool {
        if self.pmdp_get(new) != 0 {
            return false;
        }
        let entry = self.pmdp_get(old);
        if !A::entry_is_table(entry) {
            return false;
        }
        self.pt.set(old.table, old.idx, 0);
        self.pt.set(new.table, new.idx, entry);
        self.flush_tlb_range(mm, HPAGE_PMD_NR);
        true
    }

    /// `move_huge_pmd()`: move a PMD leaf, its deposited table with it
    /// (`pgtable_trans_huge_withdraw()` / `_deposit()`), and flush the old
    /// PMD (`flush_pmd_tlb_range()`: one entry at PMD stride).
    fn move_huge_pmd(&mut self, mm: MmId, pmc: &Pmc, old: PmdSlot, new: PmdSlot) -> bool {
        if self.pmdp_get(new) != 0 {
            return false;
        }
        let pmd = self.pmdp_get(old);
        self.pt.set(old.table, old.idx, 0);
        self.vmstat.sim.pmd_clear += 1;
        self.move_deposits(mm, pmc.old_addr, PMD_SIZE, pmc.new_addr);
        self.pt.set(new.table, new.idx, pmd);
        self.vmstat.sim.pmd_set += 1;
        self.flush_tlb_range(mm, 1);
        true
    }

    /// The tables deposited with huge PMDs in `[old, old + len)` follow
    /// them to `new` (the model keys deposits by address).
    fn move_deposits(&mut self, mm: MmId, old: u64, len: u64, new: u64) {
        let deposited = &mut self.mm_mut(mm).deposited;
        let keys: Vec<u64> = deposited.range(old..old + len).map(|(&k, _)| k).collect();
        for k in keys {
            if let Some(pfn) = deposited.remove(&k) {
                deposited.insert(k - old + new, pfn);
            }
        }
    }

    /// `move_ptes()`: move the entries of one extent (inside one PTE table
    /// on each side) one batch at a time (`get_and_clear_ptes()`, then
    /// `set_ptes()` of the gathered entry); a present entry makes the
    /// extent's old range be flushed at the end.
    fn move_ptes(&mut self, mm: MmId, old_t: TableId, new_t: TableId, pmc: &Pmc, extent: u64) {
        self.flush_tlb_batched_pending(mm);
        let n = (extent / PAGE_SIZE) as usize;
        let (oi, ni) = (pte_index(pmc.old_addr), pte_index(pmc.new_addr));
        let mut force_flush = false;
        let mut i = 0;
        while i < n {
            let pte = A::ptep_get(self.pt.table(old_t), oi + i, &mut self.vmstat.sim);
            if pte == 0 {
                i += 1;
                continue;
            }
            let (nr, span) = if A::pte_present(pte) {
                force_flush = true;
                self.mremap_folio_pte_batch(old_t, oi + i, pte, n - i)
            } else {
                (1, FolioSpan::NONE)
            };
            let moved = A::get_and_clear_full_ptes(
                self.pt.table_mut(old_t),
                oi + i,
                nr,
                &mut self.vmstat.sim,
            );
            A::set_ptes(
                self.pt.table_mut(new_t),
                ni + i,
                moved,
                nr,
                span,
                &mut self.vmstat.sim,
            );
            i += nr;
        }
        if force_flush {
            self.flush_tlb_range(mm, n as u64);
        }
    }

    /// `mremap_folio_pte_batch()`: how many entries from `idx` move as one
    /// batch, with the folio they map. Only where the architecture hints
    /// at a batch (`pte_batch_hint()`: arm64's contiguous blocks; always 1
    /// on x86) are the entries of a large folio with equal write bits
    /// taken together (`folio_pte_batch_flags()` with FPB_RESPECT_WRITE).
    fn mremap_folio_pte_batch(
        &mut self,
        tid: TableId,
        idx: usize,
        pte: u64,
        max_nr: usize,
    ) -> (usize, FolioSpan) {
        let span = match self.vm_normal_page(pte) {
            Some(page) => {
                let folio = self.mem.page_folio(page);
                FolioSpan {
                    pfn: folio,
                    nr: self.mem.folio_nr_pages(folio),
                }
            }
            None => FolioSpan::NONE,
        };
        if max_nr == 1 || A::pte_batch_hint(self.pt.table(tid), idx) == 1 || span.nr <= 1 {
            return (1, span);
        }
        let nr = self.folio_pte_batch_flags(tid, idx, span.pfn, max_nr, false, true);
        (nr, span)
    }
}

/// `check_mremap_params()`: the checks that need no VMA.
fn check_mremap_params(vrm: &Vrm) -> KResult<()> {
    let einval = |what: String| Err(errno("EINVAL", what));
    if vrm.flags & !(MREMAP_FIXED | MREMAP_MAYMOVE | MREMAP_DONTUNMAP) != 0 {
        return einval(format!("unknown mremap flags {:#x}", vrm.flags));
    }
    if vrm.flags & MREMAP_DONTUNMAP != 0 {
        return Err(KernelError::Unsupported(
            "MREMAP_DONTUNMAP (only MREMAP_MAYMOVE and MREMAP_FIXED are modelled)".into(),
        ));
    }
    if !vrm.addr.is_multiple_of(PAGE_SIZE) {
        return einval(format!("address {:#x} is not page-aligned", vrm.addr));
    }
    if vrm.new_len == 0 || vrm.new_len > TASK_SIZE {
        return einval(format!("new length {:#x}", vrm.new_len));
    }
    if !vrm.implies_new_addr() {
        return Ok(());
    }
    if vrm.new_addr > TASK_SIZE - vrm.new_len || !vrm.new_addr.is_multiple_of(PAGE_SIZE) {
        return einval(format!(
            "new address {:#x} is unaligned or outside the user address space",
            vrm.new_addr
        ));
    }
    if vrm.flags & MREMAP_MAYMOVE == 0 {
        return einval("MREMAP_FIXED without MREMAP_MAYMOVE".into());
    }
    if vrm.overlaps() {
        return einval(format!(
            "the new range [{:#x}, {:#x}) overlaps the old one [{:#x}, {:#x})",
            vrm.new_addr,
            vrm.new_addr + vrm.new_len,
            vrm.addr,
            vrm.addr.wrapping_add(vrm.old_len)
        ));
    }
    Ok(())
}

/// `check_prep_vma()`: the checks against the VMA at `vrm.addr`, which
/// also classify the call (`vrm_set_delta()`, `vrm_remap_type()`).
fn check_prep_vma(vrm: &mut Vrm, vma: Option<&Vma>) -> KResult<()> {
    let Some(vma) = vma else {
        return Err(errno(
            "EFAULT",
            format!("nothing is mapped at {:#x}", vrm.addr),
        ));
    };
    vrm.delta = vrm.old_len.abs_diff(vrm.new_len);
    vrm.remap_type = match vrm.old_len.cmp(&vrm.new_len) {
        std::cmp::Ordering::Equal => RemapType::NoResize,
        std::cmp::Ordering::Greater => RemapType::Shrink,
        std::cmp::Ordering::Less => RemapType::Expand,
    };
    if !vrm.implies_new_addr() {
        vrm.new_addr = vrm.addr;
    }
    if !vrm.will_map_new() {
        return Ok(());
    }
    if vrm.old_len == 0 && vma.vm_flags & (VM_SHARED | VM_MAYSHARE) == 0 {
        return Err(errno(
            "EINVAL",
            "old length 0 duplicates only shared mappings".into(),
        ));
    }
    // A shrink may cross VMA boundaries in the part it unmaps.
    let old_len = if vrm.remap_type == RemapType::Shrink {
        vrm.new_len
    } else {
        vrm.old_len
    };
    if old_len > vma.vm_end - vrm.addr {
        return Err(errno(
            "EFAULT",
            format!(
                "[{:#x}, {:#x}) reaches past the end of its VMA ({:#x})",
                vrm.addr,
                vrm.addr + old_len,
                vma.vm_end
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
