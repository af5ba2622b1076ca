//! Page-fault handling and PTE-level mapping (mm/memory.c), Linux 6.18:
//! handle_mm_fault(), __handle_mm_fault(), handle_pte_fault(),
//! do_anonymous_page(), alloc_anon_folio(), do_fault(), do_read_fault(),
//! do_fault_around(), do_cow_fault(), do_shared_fault(), finish_fault(),
//! set_pte_range(), do_wp_page(), wp_page_reuse(), wp_page_copy(),
//! wp_page_shared(), mm_account_fault().
//!
//! Promises: one fault installs exactly the entries the kernel installs
//! (whole mTHP, fault-around window widened to whole folios, one PMD), with
//! the same counters. A fault retries (VM_FAULT_RETRY, not accounted) where
//! the kernel drops the mmap lock for I/O; I/O itself completes at once.
//! New folios are charged to the faulting mm's memory cgroup
//! (mm/memcontrol.rs); a failed mTHP charge falls back to the next order
//! (`anon_fault_fallback_charge`), a failed GFP_KERNEL charge is the memcg
//! OOM case (VM_FAULT_OOM, reported as unsupported).
//! Not modelled: userfaultfd, NUMA hinting, KSM, device/PFNMAP mappings,
//! mlock, allocation failure under global pressure (the allocator fails
//! only when memory is full).

use crate::arch::{Arch, FolioSpan, PteProt};
use crate::include::linux::mm_types::{PG_ANON_EXCLUSIVE, PG_DIRTY};
use crate::include::linux::pgtable::{
    align_down, pte_index, Pfn, HPAGE_PMD_ORDER, PAGE_SIZE, PTRS_PER_PTE,
};
use crate::mm::mmap::{
    Vma, VmaKind, MM_ANONPAGES, MM_FILEPAGES, MM_SHMEMPAGES, VM_READ, VM_SHARED, VM_WRITE,
};
use crate::mm::pgtable_generic::PmdSlot;
use crate::mm::pgtable_generic::TableId;
use crate::mm::rmap::AnonVmaId;
use crate::mm::vmstat::{MemcgEvent, MthpStat, VmEvent};
use crate::{Kernel, MmId};

pub const VM_FAULT_OOM: u32 = 0x0001;
pub const VM_FAULT_SIGBUS: u32 = 0x0002;
pub(crate) const VM_FAULT_MAJOR: u32 = 0x0004;
pub(crate) const VM_FAULT_SIGSEGV: u32 = 0x0040;
pub(crate) const VM_FAULT_NOPAGE: u32 = 0x0100;
pub(crate) const VM_FAULT_LOCKED: u32 = 0x0200;
pub(crate) const VM_FAULT_RETRY: u32 = 0x0400;
pub(crate) const VM_FAULT_FALLBACK: u32 = 0x0800;
pub const VM_FAULT_ERROR: u32 = VM_FAULT_OOM | VM_FAULT_SIGBUS | VM_FAULT_SIGSEGV;

pub(crate) const FAULT_FLAG_WRITE: u32 = 0x01;
pub(crate) const FAULT_FLAG_ALLOW_RETRY: u32 = 0x04;
pub(crate) const FAULT_FLAG_TRIED: u32 = 0x20;
pub(crate) const FAULT_FLAG_USER: u32 = 0x40;

/// `struct vm_fault`
#[derive(Clone, Debug)]
#[doc(alias = "vm_fault")]
pub(crate) struct Vmf {
    pub mm: MmId,
    pub(crate) vma: Vma,
    /// Page-aligned faulting address.
    pub address: u64,
    pub(crate) pgoff: u64,
    pub flags: u32,
    pub pmd: PmdSlot,
    /// The PTE table, once known to exist.
    pub(crate) pte_table: Option<TableId>,
    pub(crate) orig_pte: u64,
    /// `vmf->prealloc_pte`: (pfn, table id)
    pub(crate) prealloc_pte: Option<(Pfn, TableId)>,
}

impl Vmf {
    #[inline]
    pub(crate) fn is_write(&self) -> bool {
        self.flags & FAULT_FLAG_WRITE != 0
    }
}

/// What one user-visible fault did, for the per-task counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultOutcome {
    /// Final VM_FAULT_* bits.
    pub ret: u32,
    /// Counted as a major fault (VM_FAULT_MAJOR or a TRIED retry).
    pub major: bool,
}

/// `fault_around_bytes_set()`: round down to a power of two, at least one
/// page, at most a page table; returns `fault_around_pages`.
pub(crate) fn fault_around_bytes_set(bytes: u64) -> u64 {
    let pages = (bytes / PAGE_SIZE).clamp(1, PTRS_PER_PTE as u64);
    1 << (63 - pages.leading_zeros())
}

impl<A: Arch> Kernel<A> {
    /// `add_mm_counter()`
    #[inline]
    pub(crate) fn add_mm_counter(&mut self, mm: MmId, member: usize, value: i64) {
        if value != 0 {
            self.mm_mut(mm).rss[member] += value;
            self.vmstat.sim.rss_stat_update += 1;
        }
    }

    /// `add_mm_rss_vec()`: apply the per-counter deltas that a page-table
    /// pass (copy_pte_range(), zap_pte_range()) gathered in its local
    /// `rss[]`, one `add_mm_counter()` per non-zero counter.
    pub(crate) fn add_mm_rss_vec(
        &mut self,
        mm: MmId,
        rss: &[i64; crate::mm::mmap::NR_MM_COUNTERS],
    ) {
        for (member, &v) in rss.iter().enumerate() {
            self.add_mm_counter(mm, member, v);
        }
    }

    /// `mm_counter_file()`
    #[inline]
    pub(crate) fn mm_counter_file(&self, folio: Pfn) -> usize {
        if self
            .mem
            .test(folio, crate::include::linux::mm_types::PG_SWAPBACKED)
        {
            MM_SHMEMPAGES
        } else {
            MM_FILEPAGES
        }
    }

    /// `handle_mm_fault()` as called by the x86 user fault handler, with its
    /// retry loop and `mm_account_fault()`.
    pub fn handle_mm_fault(&mut self, mm: MmId, address: u64, write: bool) -> FaultOutcome {
        let mut flags = FAULT_FLAG_USER | FAULT_FLAG_ALLOW_RETRY;
        if write {
            flags |= FAULT_FLAG_WRITE;
        }
        self.handle_mm_fault_retry(mm, address, flags, true)
    }

    /// `handle_mm_fault()` with its retries and `mm_account_fault()`:
    /// `per_vma_lock` says whether the first attempt runs under the
    /// per-VMA lock (the user fault handler's `lock_vma_under_rcu()`), whose
    /// retry adds FAULT_FLAG_TRIED only after a major fault; a retry under
    /// mmap_lock (every retry of get_user_pages()) always adds it.
    #[inline]
    pub(crate) fn handle_mm_fault_retry(
        &mut self,
        mm: MmId,
        address: u64,
        mut flags: u32,
        per_vma_lock: bool,
    ) -> FaultOutcome {
        let mut first = per_vma_lock;
        // The faulting task's cgroup takes the page-cache charges.
        let memcg = self.mm_memcg(mm);
        let saved = std::mem::replace(&mut self.memcg.current, memcg);
        let ret = loop {
            let ret = self.__handle_mm_fault(mm, address, flags);
            if ret & VM_FAULT_RETRY != 0 {
                self.vmstat.sim.fault_retry += 1;
                // The per-VMA-lock attempt adds TRIED only for a major fault;
                // a retry under mmap_lock always does.
                if !first || ret & VM_FAULT_MAJOR != 0 {
                    flags |= FAULT_FLAG_TRIED;
                }
                first = false;
                continue;
            }
            self.vmstat.count_vm_event(VmEvent::PgFault);
            // mm_account_fault(): count_memcg_event_mm() of the faulting
            // mm's cgroup (`current` here).
            let memcg = self.memcg.current;
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::PgFault, 1);
            let major = ret & VM_FAULT_MAJOR != 0 || flags & FAULT_FLAG_TRIED != 0;
            break FaultOutcome { ret, major };
        };
        self.memcg.current = saved;
        ret
    }

    /// `__handle_mm_fault()`: VMA checks, the PMD-level try, then the PTE
    /// level.
    fn __handle_mm_fault(&mut self, mm: MmId, address: u64, flags: u32) -> u32 {
        let Some(vma) = self.find_vma(mm, address) else {
            return VM_FAULT_SIGSEGV;
        };
        let need = if flags & FAULT_FLAG_WRITE != 0 {
            VM_WRITE
        } else {
            VM_READ
        };
        if vma.vm_flags & need == 0 {
            return VM_FAULT_SIGSEGV;
        }
        // lru_gen_enter_fault() / lru_gen_exit_fault()
        self.lru_gen_task.in_fault = crate::mm::swap::vma_has_recency(&vma);
        let ret = self.handle_vma_fault(mm, vma, address, flags);
        self.lru_gen_task.in_fault = false;
        ret
    }

    /// The part of `__handle_mm_fault()` after the VMA checks.
    fn handle_vma_fault(&mut self, mm: MmId, vma: Vma, address: u64, flags: u32) -> u32 {
        let address = align_down(address, PAGE_SIZE);
        let pmd = self.pmd_alloc(mm, address);
        let mut vmf = Vmf {
            mm,
            vma,
            address,
            pgoff: vma.linear_page_index(address),
            flags,
            pmd,
            pte_table: None,
            orig_pte: 0,
            prealloc_pte: None,
        };
        let pmdval = self.pmdp_get(pmd);
        if pmdval == 0 && self.thp_vma_allowable_order(&vma, HPAGE_PMD_ORDER) {
            let ret = self.create_huge_pmd(&mut vmf);
            if ret & VM_FAULT_FALLBACK == 0 {
                return self.fault_done(&mut vmf, ret);
            }
        } else if A::pmd_trans_huge(pmdval) {
            if vmf.is_write() && !A::pte_write(pmdval) {
                let ret = self.wp_huge_pmd(&mut vmf);
                if ret & VM_FAULT_FALLBACK == 0 {
                    return self.fault_done(&mut vmf, ret);
                }
            } else {
                // huge_pmd_set_accessed()
                self.vmstat.sim.pte_modify += 1;
                return 0;
            }
        }
        let ret = self.handle_pte_fault(&mut vmf);
        self.fault_done(&mut vmf, ret)
    }

    /// End of a fault: free an unused preallocated table (do_fault()).
    fn fault_done(&mut self, vmf: &mut Vmf, ret: u32) -> u32 {
        if let Some((pfn, _)) = vmf.prealloc_pte.take() {
            self.pgtable_free(pfn);
        }
        ret
    }

    /// `handle_pte_fault()`
    fn handle_pte_fault(&mut self, vmf: &mut Vmf) -> u32 {
        let pmdval = self.pmdp_get(vmf.pmd);
        vmf.pte_table = self.entry_table(pmdval);
        vmf.orig_pte = match vmf.pte_table {
            Some(tid) => A::ptep_get(
                self.pt.table(tid),
                pte_index(vmf.address),
                &mut self.vmstat.sim,
            ),
            None => 0,
        };
        if vmf.orig_pte == 0 {
            return if vmf.vma.is_anonymous() {
                self.do_anonymous_page(vmf)
            } else {
                self.do_fault(vmf)
            };
        }
        if !A::pte_present(vmf.orig_pte) {
            return self.do_swap_page(vmf);
        }
        if vmf.is_write() && !A::pte_write(vmf.orig_pte) {
            return self.do_wp_page(vmf);
        }
        // Spurious fault: mark the entry young (and dirty on a write).
        let tid = vmf.pte_table.expect("table");
        let idx = pte_index(vmf.address);
        let mut pte = A::pte_mkyoung(vmf.orig_pte);
        if vmf.is_write() {
            pte = A::pte_mkdirty(pte);
        }
        self.pt.set(tid, idx, pte);
        self.vmstat.sim.pte_modify += 1;
        0
    }

    /// The protection bits of `vma->vm_page_prot` for a new entry: writable
    /// only for shared writable mappings without write-notify (shmem).
    pub(crate) fn vma_page_prot(vma: &Vma) -> PteProt {
        PteProt {
            write: vma.vm_flags & (VM_SHARED | VM_WRITE) == (VM_SHARED | VM_WRITE)
                && vma.kind == VmaKind::Shmem,
            young: true,
            dirty: false,
            exec: vma.vm_flags & crate::mm::mmap::VM_EXEC != 0,
            special: false,
        }
    }

    /// `pte_mkspecial(pfn_pte(my_zero_pfn(addr), vma->vm_page_prot))`: an
    /// entry of the shared zero page in `vma` (read-only: no VMA that can
    /// map the zero page has a writable `vm_page_prot`).
    pub(crate) fn zero_pte(&self, vma: &Vma) -> u64 {
        let prot = PteProt {
            special: true,
            ..Self::vma_page_prot(vma)
        };
        A::pfn_pte(self.zero_pfn, prot)
    }

    /// `vmf_anon_prepare()` / `anon_vma_prepare()`: give the VMA an anon_vma.
    pub(crate) fn anon_vma_prepare(&mut self, vmf: &mut Vmf) {
        if vmf.vma.anon_vma.is_none() {
            vmf.vma.anon_vma = Some(self.anon_vma_alloc(None));
            let v = vmf.vma;
            self.vma_update(vmf.mm, &v);
        }
    }

    /// Make sure the PMD points at a PTE table (using the preallocated one
    /// if any) and record it in `vmf`.
    pub(crate) fn pmd_install_prealloc(&mut self, vmf: &mut Vmf) -> Option<TableId> {
        if self.pmdp_get(vmf.pmd) == 0 {
            if let Some((pfn, id)) = vmf.prealloc_pte.take() {
                self.pt.set(vmf.pmd.table, vmf.pmd.idx, A::mk_table(pfn));
                vmf.pte_table = Some(id);
                return Some(id);
            }
        }
        vmf.pte_table = self.pte_alloc(vmf.pmd);
        vmf.pte_table
    }

    /// `do_anonymous_page()`
    fn do_anonymous_page(&mut self, vmf: &mut Vmf) -> u32 {
        if vmf.vma.is_shared() {
            return VM_FAULT_SIGBUS;
        }
        let Some(tid) = self.pte_alloc(vmf.pmd) else {
            return 0;
        };
        vmf.pte_table = Some(tid);
        if !vmf.is_write() {
            // The shared zero page, read-only.
            let pte = self.zero_pte(&vmf.vma);
            A::set_ptes(
                self.pt.table_mut(tid),
                pte_index(vmf.address),
                pte,
                1,
                FolioSpan::NONE,
                &mut self.vmstat.sim,
            );
            return 0;
        }
        self.anon_vma_prepare(vmf);
        let Some(folio) = self.alloc_anon_folio(vmf) else {
            return VM_FAULT_OOM;
        };
        let order = self.mem.order(folio);
        let nr = 1u64 << order;
        let addr = align_down(vmf.address, nr * PAGE_SIZE);
        self.vmstat.sim.page_zero += nr;
        let prot = PteProt {
            write: vmf.vma.vm_flags & VM_WRITE != 0,
            dirty: vmf.vma.vm_flags & VM_WRITE != 0,
            ..Self::vma_page_prot(&vmf.vma)
        };
        let pte = A::pfn_pte(folio, prot);
        self.add_mm_counter(vmf.mm, MM_ANONPAGES, nr as i64);
        self.vmstat.count_mthp_stat(order, MthpStat::AnonFaultAlloc);
        self.folio_add_new_anon_rmap(folio, &vmf.vma, addr, false, vmf.mm);
        self.folio_add_lru(folio);
        self.set_folio_ptes(tid, addr, pte, nr, folio);
        0
    }

    /// `alloc_anon_folio()`: the largest allowed, suitable, empty mTHP order
    /// whose allocation succeeds, else order 0.
    fn alloc_anon_folio(&mut self, vmf: &Vmf) -> Option<Pfn> {
        let allowed = self.thp_vma_allowable_orders(&vmf.vma) & ((1 << HPAGE_PMD_ORDER) - 1);
        let mut orders =
            crate::mm::huge_memory::thp_vma_suitable_orders(&vmf.vma, vmf.address, allowed);
        let tid = vmf.pte_table.expect("pte table");
        // Emptiness: drop orders from the top until an aligned block is all
        // none (pte_range_none()).
        while orders != 0 {
            let o = 31 - orders.leading_zeros();
            let nr = 1usize << o;
            let start = pte_index(align_down(vmf.address, (nr as u64) * PAGE_SIZE));
            if self.pt.table(tid)[start..start + nr]
                .iter()
                .all(|&e| e == 0)
            {
                break;
            }
            orders &= !(1 << o);
        }
        let memcg = self.mm_memcg(vmf.mm);
        let gfp = crate::mm::memcontrol::vma_thp_gfp(&vmf.vma);
        while orders != 0 {
            let o = 31 - orders.leading_zeros();
            if let Some(folio) = self.folio_alloc(o) {
                if self.mem_cgroup_charge(folio, memcg, gfp) {
                    return Some(folio);
                }
                self.vmstat
                    .count_mthp_stat(o, MthpStat::AnonFaultFallbackCharge);
                self.folio_free(folio);
            }
            self.vmstat.count_mthp_stat(o, MthpStat::AnonFaultFallback);
            orders &= !(1 << o);
        }
        self.folio_prealloc(vmf.mm)
    }

    /// `folio_prealloc()`: an order-0 anon folio charged with GFP_KERNEL
    /// (None if memory or the charge failed).
    pub(crate) fn folio_prealloc(&mut self, mm: MmId) -> Option<Pfn> {
        let folio = self.folio_alloc(0)?;
        let memcg = self.mm_memcg(mm);
        if !self.mem_cgroup_charge(folio, memcg, crate::mm::memcontrol::ChargeGfp::Kernel) {
            self.folio_free(folio);
            return None;
        }
        Some(folio)
    }

    /// `do_fault()`
    fn do_fault(&mut self, vmf: &mut Vmf) -> u32 {
        if !vmf.is_write() {
            self.do_read_fault(vmf)
        } else if !vmf.vma.is_shared() {
            self.do_cow_fault(vmf)
        } else {
            self.do_shared_fault(vmf)
        }
    }

    /// `->fault()`: filemap_fault() for files, shmem_fault() for shmem.
    fn vma_fault(&mut self, vmf: &mut Vmf) -> (u32, Option<Pfn>) {
        if self.pmdp_get(vmf.pmd) == 0 && vmf.prealloc_pte.is_none() {
            vmf.prealloc_pte = Some(self.pgtable_alloc());
        }
        match vmf.vma.kind {
            VmaKind::File => self.filemap_fault(vmf),
            VmaKind::Shmem => self.shmem_fault(vmf),
            VmaKind::Anon => unreachable!("anonymous VMAs have no ->fault"),
        }
    }

    /// `do_read_fault()`: fault-around first, then `->fault` and
    /// `finish_fault()`.
    fn do_read_fault(&mut self, vmf: &mut Vmf) -> u32 {
        if self.fault_around_pages > 1 {
            let ret = self.do_fault_around(vmf);
            if ret != 0 {
                return ret;
            }
        }
        let (ret, page) = self.vma_fault(vmf);
        if ret & (VM_FAULT_ERROR | VM_FAULT_NOPAGE | VM_FAULT_RETRY) != 0 {
            return ret;
        }
        ret | self.finish_fault(vmf, page.expect("locked page"), None)
    }

    /// `do_fault_around()`: hand the fault-around window (aligned in virtual
    /// address, clamped to the VMA and the page table) to `->map_pages`.
    fn do_fault_around(&mut self, vmf: &mut Vmf) -> u32 {
        let nr_pages = self.fault_around_pages;
        let pte_off = pte_index(vmf.address) as u64;
        let vma_off = vmf.pgoff - vmf.vma.vm_pgoff;
        let from_pte = align_down(pte_off, nr_pages).max(pte_off - pte_off.min(vma_off));
        let to_pte = (from_pte + nr_pages)
            .min(PTRS_PER_PTE as u64)
            .min(pte_off + vmf.vma.vma_pages() - vma_off)
            - 1;
        if self.pmdp_get(vmf.pmd) == 0 && vmf.prealloc_pte.is_none() {
            vmf.prealloc_pte = Some(self.pgtable_alloc());
        }
        self.vmstat.sim.fault_around += 1;
        self.filemap_map_pages(
            vmf,
            vmf.pgoff + from_pte - pte_off,
            vmf.pgoff + to_pte - pte_off,
        )
    }

    /// `do_cow_fault()`: a write to an unmapped page of a private file
    /// mapping copies one page into a new anon folio.
    fn do_cow_fault(&mut self, vmf: &mut Vmf) -> u32 {
        self.anon_vma_prepare(vmf);
        let Some(cow) = self.folio_prealloc(vmf.mm) else {
            return VM_FAULT_OOM;
        };
        let (ret, page) = self.vma_fault(vmf);
        if ret & (VM_FAULT_ERROR | VM_FAULT_NOPAGE | VM_FAULT_RETRY) != 0 {
            self.folio_free(cow);
            return ret;
        }
        let src = page.expect("locked page");
        self.vmstat.sim.page_copy += 1;
        self.mem.copy_page_content(cow, src);
        ret | self.finish_fault(vmf, cow, Some(cow))
    }

    /// `do_shared_fault()`: `->fault`, `->page_mkwrite` (ext4: dirty the
    /// folio), then map the whole folio writable.
    fn do_shared_fault(&mut self, vmf: &mut Vmf) -> u32 {
        let (ret, page) = self.vma_fault(vmf);
        if ret & (VM_FAULT_ERROR | VM_FAULT_NOPAGE | VM_FAULT_RETRY) != 0 {
            return ret;
        }
        let page = page.expect("locked page");
        let folio = self.mem.page_folio(page);
        self.mem.set(folio, PG_DIRTY);
        ret | self.finish_fault(vmf, page, None)
    }

    /// `finish_fault()`: map the faulting page's whole folio if it fits the
    /// VMA and the page table, a PMD for a PMD-size folio, or one page.
    /// `cow` is the new anon folio of a private write.
    pub(crate) fn finish_fault(&mut self, vmf: &mut Vmf, page: Pfn, cow: Option<Pfn>) -> u32 {
        let folio = self.mem.page_folio(page);
        let mut needs_fallback = false;
        if cow.is_none() && vmf.vma.kind == VmaKind::File {
            let f = self.open_files[vmf.vma.file.expect("file") as usize].mapping;
            let file_end = self.files[f.0 as usize].i_size.div_ceil(PAGE_SIZE);
            needs_fallback =
                file_end < self.mem.folio_index(folio) as u64 + self.mem.folio_nr_pages(folio);
        }
        if self.pmdp_get(vmf.pmd) == 0 {
            if !needs_fallback && self.mem.order(folio) == HPAGE_PMD_ORDER && cow.is_none() {
                let ret = self.do_set_pmd(vmf, folio, page);
                if ret != VM_FAULT_FALLBACK {
                    return ret;
                }
            }
            self.pmd_install_prealloc(vmf);
        }
        let Some(tid) = self.entry_table(self.pmdp_get(vmf.pmd)) else {
            return VM_FAULT_NOPAGE;
        };
        vmf.pte_table = Some(tid);
        let mut nr = self.mem.folio_nr_pages(folio);
        let mut addr = vmf.address;
        let mut first = page;
        if cow.is_some() || needs_fallback {
            nr = 1;
        } else if nr > 1 {
            let idx = (page.0 - folio.0) as u64;
            let vma_off = vmf.pgoff - vmf.vma.vm_pgoff;
            let pte_off = pte_index(vmf.address) as u64;
            if vma_off < idx
                || vma_off + (nr - idx) > vmf.vma.vma_pages()
                || pte_off < idx
                || pte_off + (nr - idx) > PTRS_PER_PTE as u64
            {
                nr = 1;
            } else {
                addr = vmf.address - idx * PAGE_SIZE;
                first = folio;
            }
        }
        let start = pte_index(addr);
        let table = self.pt.table(tid);
        if nr == 1 {
            if table[start] != vmf.orig_pte {
                return VM_FAULT_NOPAGE;
            }
        } else if table[start..start + nr as usize].iter().any(|&e| e != 0) {
            nr = 1;
            addr = vmf.address;
            first = page;
            if self.pt.table(tid)[pte_index(addr)] != vmf.orig_pte {
                return VM_FAULT_NOPAGE;
            }
        }
        self.set_pte_range(vmf, folio, first, nr, addr);
        let counter = if cow.is_some() {
            MM_ANONPAGES
        } else {
            self.mm_counter_file(folio)
        };
        self.add_mm_counter(vmf.mm, counter, nr as i64);
        0
    }

    /// `set_pte_range()`: map `nr` pages of `folio` from `page` at `addr`,
    /// with rmap. The caller accounts RSS.
    pub(crate) fn set_pte_range(
        &mut self,
        vmf: &mut Vmf,
        folio: Pfn,
        page: Pfn,
        nr: u64,
        addr: u64,
    ) {
        let write = vmf.is_write();
        let prefault = !(vmf.address >= addr && vmf.address < addr + nr * PAGE_SIZE);
        let mut prot = Self::vma_page_prot(&vmf.vma);
        if prefault && A::arch_wants_old_prefaulted_pte() {
            prot.young = false;
        }
        if write {
            prot.dirty = true;
            prot.write = vmf.vma.vm_flags & VM_WRITE != 0;
        } else if prot.write && self.mem.test(folio, PG_DIRTY) {
            prot.dirty = true;
        }
        let pte = A::pfn_pte(page, prot);
        if write && !vmf.vma.is_shared() {
            self.folio_add_new_anon_rmap(folio, &vmf.vma, addr, false, vmf.mm);
            self.folio_add_lru(folio);
        } else {
            self.folio_add_file_rmap_ptes(folio, page, nr, vmf.mm);
        }
        let tid = vmf.pte_table.expect("pte table");
        self.set_folio_ptes(tid, addr, pte, nr, folio);
    }

    /// `set_ptes()` of `nr` entries from `pte` at `addr` in table `tid`,
    /// every one mapping a page of `folio` (arm64 folds whole blocks of
    /// it into contiguous ranges).
    fn set_folio_ptes(&mut self, tid: TableId, addr: u64, pte: u64, nr: u64, folio: Pfn) {
        let span = FolioSpan {
            pfn: folio,
            nr: self.mem.folio_nr_pages(folio),
        };
        let table = self.pt.table_mut(tid);
        A::set_ptes(
            table,
            pte_index(addr),
            pte,
            nr as usize,
            span,
            &mut self.vmstat.sim,
        );
    }

    /// `vm_normal_page()`: the page behind a present entry, None for the
    /// zero page and other special entries.
    #[inline]
    pub(crate) fn vm_normal_page(&self, pte: u64) -> Option<Pfn> {
        (!A::pte_special(pte)).then(|| A::pte_pfn(pte))
    }

    /// `do_wp_page()`: a write to a present read-only entry.
    pub(crate) fn do_wp_page(&mut self, vmf: &mut Vmf) -> u32 {
        let page = self.vm_normal_page(vmf.orig_pte);
        if vmf.vma.vm_flags & (VM_SHARED | crate::mm::mmap::VM_MAYSHARE) != 0 {
            return self.wp_page_shared(vmf, page.expect("shared mappings map real pages"));
        }
        if let Some(page) = page {
            let folio = self.mem.page_folio(page);
            if self.mem.folio_test_anon(folio)
                && (self.mem.test(page, PG_ANON_EXCLUSIVE)
                    || self.wp_can_reuse_anon_folio(folio, &vmf.vma))
            {
                self.mem.set(page, PG_ANON_EXCLUSIVE);
                self.wp_page_reuse(vmf);
                return 0;
            }
        }
        self.wp_page_copy(vmf, page)
    }

    /// `wp_can_reuse_anon_folio()`: with no swap cache and no pins the
    /// reference count equals the mapcount, so a small folio is reused when
    /// mapped once, a large one when mapped more than once and only by this
    /// mm (`__wp_can_reuse_large_anon_folio()`).
    fn wp_can_reuse_anon_folio(&mut self, folio: Pfn, vma: &Vma) -> bool {
        // The swap cache holds references too: drop it if no swap PTE needs
        // it any more (folio_free_swap()), else the folio is not ours alone.
        if self
            .mem
            .test(folio, crate::include::linux::mm_types::PG_SWAPCACHE)
        {
            if self.folio_test_writeback(folio) || !self.folio_swap_unused(folio) {
                return false;
            }
            self.delete_from_swap_cache(folio);
        }
        if !self.mem.folio_test_large(folio) {
            if self.mem.folio_mapcount(folio) == 1 {
                // folio_move_anon_rmap(): the folio now belongs to this VMA's
                // own anon_vma.
                self.mem
                    .set_folio_mapping(folio, vma.anon_vma.map_or(1, AnonVmaId::mapping));
                return true;
            }
            return false;
        }
        let l = self.mem.large(folio);
        l.large_mapcount > 1 && !l.maybe_shared
    }

    /// `wp_page_reuse()`: make only the faulting entry writable and dirty.
    fn wp_page_reuse(&mut self, vmf: &mut Vmf) {
        let tid = vmf.pte_table.expect("pte table");
        let idx = pte_index(vmf.address);
        let mut pte = A::pte_mkdirty(A::pte_mkyoung(vmf.orig_pte));
        if vmf.vma.vm_flags & VM_WRITE != 0 {
            pte = A::pte_mkwrite(pte);
        }
        A::ptep_set_access_flags(self.pt.table_mut(tid), idx, pte, &mut self.vmstat.sim);
        self.vmstat.count_vm_event(VmEvent::PgReuse);
    }

    /// `wp_page_shared()`: `->page_mkwrite` dirties the folio, then reuse.
    fn wp_page_shared(&mut self, vmf: &mut Vmf, page: Pfn) -> u32 {
        let folio = self.mem.page_folio(page);
        self.mem.set(folio, PG_DIRTY);
        self.wp_page_reuse(vmf);
        0
    }

    /// The allocation of `wp_page_copy()`: a new charged folio, the old one
    /// pinned meanwhile (`folio_get()` in do_wp_page(): a reclaim the charge
    /// runs may unmap it but not free it). Err(VM_FAULT_OOM) if the charge
    /// failed, Err(0) if the entry no longer maps the old page (the
    /// `pte_same()` recheck: the access faults again).
    fn wp_page_prealloc(&mut self, vmf: &Vmf, old_page: Option<Pfn>) -> Result<Pfn, u32> {
        let old = old_page.map(|p| self.mem.page_folio(p));
        let saved = std::mem::replace(&mut self.pinned, old);
        let new = self.folio_prealloc(vmf.mm);
        self.pinned = saved;
        let new = new.ok_or(VM_FAULT_OOM)?;
        let pte = self
            .pt
            .get(vmf.pte_table.expect("pte table"), pte_index(vmf.address));
        if old_page.is_some_and(|p| !A::pte_present(pte) || A::pte_pfn(pte) != p) {
            self.folio_free(new);
            return Err(0);
        }
        Ok(new)
    }

    /// `wp_page_copy()`: copy one page (or zero it for the zero page) into a
    /// new order-0 anon folio and replace the entry.
    fn wp_page_copy(&mut self, vmf: &mut Vmf, old_page: Option<Pfn>) -> u32 {
        self.anon_vma_prepare(vmf);
        let new = match self.wp_page_prealloc(vmf, old_page) {
            Ok(new) => new,
            Err(ret) => return ret,
        };
        match old_page {
            Some(p) => {
                self.vmstat.sim.page_copy += 1;
                let old = self.mem.page_folio(p);
                // An anon source swaps one anon page for another: no change.
                if !self.mem.folio_test_anon(old) {
                    let c = self.mm_counter_file(old);
                    self.add_mm_counter(vmf.mm, c, -1);
                    self.add_mm_counter(vmf.mm, MM_ANONPAGES, 1);
                }
            }
            None => {
                self.vmstat.sim.page_zero += 1;
                self.add_mm_counter(vmf.mm, MM_ANONPAGES, 1);
            }
        }
        let tid = vmf.pte_table.expect("pte table");
        let idx = pte_index(vmf.address);
        // ptep_clear_flush()
        A::ptep_get_and_clear(self.pt.table_mut(tid), idx, &mut self.vmstat.sim);
        self.flush_tlb_range(vmf.mm, 1);
        self.folio_add_new_anon_rmap(new, &vmf.vma, vmf.address, false, vmf.mm);
        self.folio_add_lru(new);
        match old_page {
            Some(p) => self.mem.copy_page_content(new, p),
            None => self.mem.set_page_nonzero(new, false),
        }
        let prot = PteProt {
            write: vmf.vma.vm_flags & VM_WRITE != 0,
            dirty: true,
            ..Self::vma_page_prot(&vmf.vma)
        };
        let pte = A::pfn_pte(new, prot);
        A::set_pte_at(
            self.pt.table_mut(tid),
            idx,
            pte,
            FolioSpan { pfn: new, nr: 1 },
            &mut self.vmstat.sim,
        );
        if let Some(p) = old_page {
            let old = self.mem.page_folio(p);
            self.folio_remove_rmap_ptes(old, p, 1, vmf.mm);
            self.folio_put_if_unused(old);
        }
        0
    }
}

mod copy;
mod swap;
mod zap;
