//! THP collapse (mm/khugepaged.c: madvise_collapse(), hpage_collapse_scan_pmd(),
//! collapse_huge_page(), __collapse_huge_page_swapin(),
//! __collapse_huge_page_isolate(), __collapse_huge_page_copy(),
//! alloc_charge_folio(), khugepaged_enter_vma(), khugepaged_fork(),
//! khugepaged_exit(), khugepaged_scan_mm_slot(), khugepaged_do_scan(),
//! hugepage_pmd_enabled(); include/linux/huge_mm.h:
//! thp_vma_allowable_order() for TVA_KHUGEPAGED and TVA_FORCED_COLLAPSE),
//! Linux 6.18.
//!
//! Modelled: MADV_COLLAPSE of anonymous memory (synchronous, in the calling
//! task, `collapse_control.is_khugepaged` false: max_ptes_none/swap/shared
//! and the young-page rule do not apply), with the kernel's result codes
//! (`SCAN_*`) and their errno (madvise_collapse_errno()); khugepaged as a
//! scanner that runs only at a scenario's `khugepaged` step, pass by pass
//! (`pages_to_scan` of progress each), over the mms registered on fault
//! (do_huge_pmd_anonymous_page()), MADV_HUGEPAGE and fork, with its limits
//! (max_ptes_none, max_ptes_swap, max_ptes_shared, at least one young page,
//! half of them young when swap entries are swapped in) and its counters
//! (`khugepaged/full_scans`, `khugepaged/pages_collapsed`). A collapse
//! allocates and charges a PMD-size folio (thp_collapse_alloc /
//! thp_collapse_alloc_failed), swaps in swap PTEs with do_swap_page(),
//! clears the PMD with one TLB flush of the range, copies present pages
//! and zeroes none and zero-page entries, unmaps and frees the old folios,
//! deposits the emptied PTE table with the new PMD (the page-table count
//! does not change) and queues the folio for the deferred-split shrinker.
//! The `huge_memory:` tracepoints count only in the calling task
//! (MADV_COLLAPSE), as perf counts them for a process.
//! Approximated: the model is single-threaded, so the mmap_lock drops and
//! revalidations (hugepage_vma_revalidate()) always find what the scan
//! found; tlb_remove_table_sync_one()'s IPI is not counted; the folios are
//! not taken off the LRU while they are copied; the xarray nodes a shmem
//! collapse empties are not freed; khugepaged's sleeps
//! (scan_sleep_millisecs, alloc_sleep_millisecs) take no simulated time.
//! MADV_COLLAPSE of shmem (hpage_collapse_scan_file(), collapse_file(),
//! retract_page_tables(), collapse_pte_mapped_thp(), set_huge_pmd()): the
//! page cache's range becomes one PMD-size folio (swapped-out pages read
//! back first, holes zeroed), the mappers' emptied page tables are freed
//! and the caller's range is mapped with one PMD. A regular file's range
//! is EINVAL: file_thp_enabled() needs CONFIG_READ_ONLY_THP_FOR_FS, which
//! the modelled kernels lack.
//! Unsupported (loud): swap-in for a collapse from a swap device without
//! synchronous I/O (the kernel's do_swap_page() drops the mmap_lock for the
//! read and the collapse gives up with SCAN_PAGE_LOCK; shmem reads around
//! with shmem_swapin_cluster()), khugepaged registration when VMAs merge
//! (vma_merge_new_range()), mTHP collapse (in neither 6.18 nor 7.1).

use crate::arch::{Arch, PteProt};
use crate::include::linux::mm_types::{
    PG_DIRTY, PG_LRU, PG_REFERENCED, PG_SWAPBACKED, PG_UPTODATE,
};
use crate::include::linux::pgtable::{
    align_down, Pfn, HPAGE_PMD_NR, HPAGE_PMD_ORDER, PAGE_SIZE, PMD_SIZE,
};
use crate::mm::huge_memory::thp_vma_suitable_order;
use crate::mm::memcontrol::ChargeGfp;
use crate::mm::memory::{Vmf, FAULT_FLAG_ALLOW_RETRY, VM_FAULT_ERROR, VM_FAULT_RETRY};
use crate::mm::mmap::{Vma, VmaKind, MM_ANONPAGES, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_WRITE};
use crate::mm::pgtable_generic::{PmdSlot, TableId};
use crate::mm::vmstat::{Khugepaged, Trace, VmEvent};
use crate::{FileId, Kernel, KernelError, MmId, MthpMode, ThpMode};

/// `enum scan_result`: the outcomes the model can reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanResult {
    Fail,
    Succeed,
    PmdNull,
    PmdNone,
    PmdMapped,
    ExceedNonePte,
    ExceedSwapPte,
    ExceedSharedPte,
    PteNonPresent,
    LackReferencedPage,
    PageNull,
    PageCount,
    PageLru,
    PageLock,
    PageAnon,
    AllocHugePageFail,
    CgroupChargeFail,
    PteMappedHugepage,
    Truncated,
    PageCompound,
    VmaCheck,
}

impl ScanResult {
    /// `madvise_collapse_errno()`
    fn errno(self) -> &'static str {
        match self {
            ScanResult::AllocHugePageFail => "ENOMEM",
            ScanResult::CgroupChargeFail | ScanResult::ExceedNonePte => "EBUSY",
            ScanResult::PageCount | ScanResult::PageLock | ScanResult::PageLru => "EAGAIN",
            _ => "EINVAL",
        }
    }

    /// The results after which madvise_collapse() goes on with the next
    /// PMD range (its whitelist); any other failure ends the call.
    fn madvise_continues(self) -> bool {
        matches!(
            self,
            ScanResult::PmdNull
                | ScanResult::PteNonPresent
                | ScanResult::LackReferencedPage
                | ScanResult::PageNull
                | ScanResult::PageCount
                | ScanResult::PageLock
                | ScanResult::PageCompound
                | ScanResult::PageLru
        )
    }
}

/// `struct collapse_control`: who collapses.
#[derive(Clone, Copy, Debug)]
struct CollapseControl {
    is_khugepaged: bool,
}

/// `struct khugepaged_scan` and the `mm_slot` list: the registered mms in
/// list order, the cursor (`mm_slot`) and the address it reached.
#[derive(Debug, Default)]
pub(crate) struct KhugepagedScan {
    mm_head: Vec<MmId>,
    mm_slot: Option<MmId>,
    address: u64,
}

/// What one PTE of a range holds, as the collapse scans read it.
enum PteKind {
    Swap,
    NoneOrZero,
    Present(Pfn),
    Special,
}

/// The tallies of hpage_collapse_scan_pmd() / __collapse_huge_page_isolate().
#[derive(Default)]
struct Tally {
    none_or_zero: u32,
    unmapped: u32,
    shared: u32,
    referenced: u32,
}

impl<A: Arch> Kernel<A> {
    /// `hugepage_pmd_enabled()` for anonymous memory: some setting lets
    /// PMD-size THPs be allocated (else khugepaged does not run).
    fn hugepage_pmd_enabled(&self) -> bool {
        match self.cfg.anon_orders[HPAGE_PMD_ORDER as usize] {
            MthpMode::Always | MthpMode::Madvise => true,
            MthpMode::Inherit => self.cfg.thp_enabled != ThpMode::Never,
            MthpMode::Never => false,
        }
    }

    /// `thp_vma_allowable_order(vma, vm_flags, TVA_KHUGEPAGED or
    /// TVA_FORCED_COLLAPSE, PMD_ORDER)`.
    fn collapse_allowable(
        &self,
        vma: &Vma,
        vm_flags: u64,
        forced: bool,
    ) -> Result<bool, KernelError> {
        if vm_flags & VM_NOHUGEPAGE != 0 {
            return Ok(false);
        }
        let huge = vm_flags & VM_HUGEPAGE != 0;
        let top = self.cfg.thp_enabled;
        if !forced && vma.is_anonymous() {
            let on = match self.cfg.anon_orders[HPAGE_PMD_ORDER as usize] {
                MthpMode::Always => true,
                MthpMode::Madvise => huge,
                MthpMode::Inherit => top == ThpMode::Always || (huge && top == ThpMode::Madvise),
                MthpMode::Never => false,
            };
            if !on {
                return Ok(false);
            }
        }
        // The VMA must hold one aligned PMD block.
        if vma.vm_end - vma.vm_start < PMD_SIZE
            || !thp_vma_suitable_order(vma, vma.vm_end - PMD_SIZE, HPAGE_PMD_ORDER)
        {
            return Ok(false);
        }
        Ok(match vma.kind {
            VmaKind::Anon => vma.anon_vma.is_some(),
            // shmem_allowable_huge_orders() of anonymous shmem with the
            // model's shmem_enabled "never" and the per-size shmem knobs at
            // their defaults (PMD size "inherit", the others "never"): a
            // forced collapse takes the PMD order through "inherit"
            // (shmem_huge_global_enabled() with shmem_huge_force), khugepaged
            // gets no order.
            VmaKind::Shmem => forced,
            // file_thp_enabled(): the kernels the model stands for (the
            // host's and the guests') are built without
            // CONFIG_READ_ONLY_THP_FOR_FS, so a regular file's range is
            // never collapsed.
            VmaKind::File => false,
        })
    }

    /// `khugepaged_enter_vma()`: register the mm with khugepaged
    /// (`__khugepaged_enter()`, at the list's tail) when a PMD size is
    /// enabled and the VMA (with `vm_flags`) qualifies.
    pub(crate) fn khugepaged_enter_vma(&mut self, mm: MmId, vma: &Vma, vm_flags: u64) {
        if self.khugepaged.mm_head.contains(&mm) || !self.hugepage_pmd_enabled() {
            return;
        }
        if self.collapse_allowable(vma, vm_flags, false) == Ok(true) {
            self.khugepaged.mm_head.push(mm);
        }
    }

    /// `khugepaged_fork()`: a child of a registered mm is registered.
    pub(crate) fn khugepaged_fork(&mut self, child: MmId, parent: MmId) {
        if self.khugepaged.mm_head.contains(&parent) && !self.khugepaged.mm_head.contains(&child) {
            self.khugepaged.mm_head.push(child);
        }
    }

    /// `khugepaged_exit()` / `__khugepaged_exit()`: the slot goes unless
    /// the scan's cursor is on it (the scan then drops it).
    pub(crate) fn khugepaged_exit(&mut self, mm: MmId) {
        if self.khugepaged.mm_slot != Some(mm) {
            self.khugepaged.mm_head.retain(|&m| m != mm);
        }
    }

    /// What a PTE holds, for the collapse scans.
    fn collapse_pte_kind(&self, pte: u64) -> PteKind {
        if pte == 0 {
            return PteKind::NoneOrZero;
        }
        if !A::pte_present(pte) {
            return PteKind::Swap;
        }
        if A::pte_pfn(pte) == self.zero_pfn {
            return PteKind::NoneOrZero;
        }
        match self.vm_normal_page(pte) {
            Some(page) => PteKind::Present(page),
            None => PteKind::Special,
        }
    }

    /// `folio_maybe_mapped_shared()`
    fn folio_maybe_mapped_shared(&self, folio: Pfn) -> bool {
        let mapcount = self.mem.folio_mapcount(folio);
        if !self.mem.folio_test_large(folio) {
            return mapcount > 1;
        }
        if mapcount <= 1 {
            return false;
        }
        let l = self.mem.large(folio);
        l.entire_mapcount > 0 || mapcount as u64 > self.mem.folio_nr_pages(folio) || l.maybe_shared
    }

    /// The checks hpage_collapse_scan_pmd() and __collapse_huge_page_isolate()
    /// share for one present page, counting shared and young pages.
    fn collapse_check_page(
        &mut self,
        page: Pfn,
        pte: u64,
        cc: CollapseControl,
        t: &mut Tally,
    ) -> Result<(), ScanResult> {
        let folio = self.mem.page_folio(page);
        if !self.mem.folio_test_anon(folio) {
            return Err(ScanResult::PageAnon);
        }
        if self.folio_maybe_mapped_shared(folio) {
            let max = self.cfg.khugepaged_max_ptes_shared;
            let limit = (VmEvent::ThpScanExceedSharedPte, ScanResult::ExceedSharedPte);
            self.collapse_limit(cc, &mut t.shared, max, limit)?;
        }
        if !self.mem.test(folio, PG_LRU) {
            return Err(ScanResult::PageLru);
        }
        if self.locked.contains(&folio) {
            return Err(ScanResult::PageLock);
        }
        // folio_expected_ref_count() != folio_ref_count(): a pin.
        if self.pinned == Some(folio) {
            return Err(ScanResult::PageCount);
        }
        if cc.is_khugepaged && (A::pte_young(pte) || self.mem.test(folio, PG_REFERENCED)) {
            t.referenced += 1;
        }
        Ok(())
    }

    /// One PTE of hpage_collapse_scan_pmd() (`isolate`: of
    /// __collapse_huge_page_isolate(), where a swap entry is a failure).
    fn collapse_scan_pte(
        &mut self,
        pte: u64,
        cc: CollapseControl,
        t: &mut Tally,
        isolate: bool,
    ) -> Result<(), ScanResult> {
        match self.collapse_pte_kind(pte) {
            PteKind::Swap if isolate => Err(ScanResult::PteNonPresent),
            PteKind::Swap => {
                let max = self.cfg.khugepaged_max_ptes_swap;
                let limit = (VmEvent::ThpScanExceedSwapPte, ScanResult::ExceedSwapPte);
                self.collapse_limit(cc, &mut t.unmapped, max, limit)
            }
            PteKind::NoneOrZero => {
                let max = self.cfg.khugepaged_max_ptes_none;
                let limit = (VmEvent::ThpScanExceedNonePte, ScanResult::ExceedNonePte);
                self.collapse_limit(cc, &mut t.none_or_zero, max, limit)
            }
            PteKind::Special => Err(ScanResult::PageNull),
            PteKind::Present(page) => self.collapse_check_page(page, pte, cc, t),
        }
    }

    /// Count one more PTE of a kind khugepaged limits (`max_ptes_*`): past
    /// `max`, khugepaged counts the limit's event and fails with its result.
    fn collapse_limit(
        &mut self,
        cc: CollapseControl,
        count: &mut u32,
        max: u32,
        (ev, r): (VmEvent, ScanResult),
    ) -> Result<(), ScanResult> {
        *count += 1;
        if cc.is_khugepaged && *count > max {
            self.vmstat.count_vm_event(ev);
            return Err(r);
        }
        Ok(())
    }

    /// `find_pmd_or_thp_or_none()` + `check_pmd_state()`: the PTE table
    /// under `addr`'s PMD, or why there is none.
    fn find_pmd_or_thp_or_none(
        &self,
        mm: MmId,
        addr: u64,
    ) -> Result<(PmdSlot, TableId), ScanResult> {
        let pmd = self.walk_to_pmd(mm, addr).ok_or(ScanResult::PmdNull)?;
        let e = self.pmdp_get(pmd);
        if e == 0 {
            return Err(ScanResult::PmdNone);
        }
        if A::pmd_trans_huge(e) {
            return Err(ScanResult::PmdMapped);
        }
        let tid = self.entry_table(e).ok_or(ScanResult::PmdNull)?;
        Ok((pmd, tid))
    }

    /// `hpage_collapse_scan_pmd()`: scan the PMD range at `haddr` and
    /// collapse it if it qualifies. Also says whether a collapse was tried
    /// (`*mmap_locked` false: collapse_huge_page() dropped the lock).
    fn hpage_collapse_scan_pmd(
        &mut self,
        mm: MmId,
        vma: &Vma,
        haddr: u64,
        cc: CollapseControl,
    ) -> (ScanResult, bool) {
        let mut t = Tally::default();
        let mut tried = false;
        let result = match self.find_pmd_or_thp_or_none(mm, haddr) {
            Err(r) => r,
            Ok((_, tid)) => {
                let mut r = Ok(());
                for i in 0..HPAGE_PMD_NR as usize {
                    let pte = A::ptep_get(self.pt.table(tid), i, &mut self.vmstat.sim);
                    r = self.collapse_scan_pte(pte, cc, &mut t, false);
                    if r.is_err() {
                        break;
                    }
                }
                let lacks =
                    t.referenced == 0 || (t.unmapped > 0 && t.referenced < HPAGE_PMD_NR as u32 / 2);
                match r {
                    Err(e) => e,
                    Ok(()) if cc.is_khugepaged && lacks => ScanResult::LackReferencedPage,
                    Ok(()) => {
                        tried = true;
                        let r = self.collapse_huge_page(mm, vma, haddr, t.unmapped > 0, cc);
                        self.vmstat.trace(Trace::CollapseHugePage);
                        r
                    }
                }
            }
        };
        // khugepaged's hits are taken back by khugepaged_run(): they are
        // its thread's, not the workload's.
        self.vmstat.trace(Trace::KhugepagedScanPmd);
        (result, tried)
    }

    /// `alloc_charge_folio()`: a PMD-size folio charged to the mm's cgroup
    /// (GFP_TRANSHUGE: MADV_COLLAPSE, and khugepaged with its default
    /// `defrag`).
    fn alloc_charge_folio(&mut self, mm: MmId) -> Result<Pfn, ScanResult> {
        let Some(folio) = self.folio_alloc(HPAGE_PMD_ORDER) else {
            self.vmstat.count_vm_event(VmEvent::ThpCollapseAllocFailed);
            return Err(ScanResult::AllocHugePageFail);
        };
        self.vmstat.count_vm_event(VmEvent::ThpCollapseAlloc);
        let memcg = self.mm_memcg(mm);
        if !self.mem_cgroup_charge(folio, memcg, ChargeGfp::TransHuge) {
            self.folio_free(folio);
            return Err(ScanResult::CgroupChargeFail);
        }
        Ok(folio)
    }

    /// `collapse_huge_page()`: allocate, swap in, isolate, copy and map the
    /// new folio with one PMD.
    fn collapse_huge_page(
        &mut self,
        mm: MmId,
        vma: &Vma,
        haddr: u64,
        unmapped: bool,
        cc: CollapseControl,
    ) -> ScanResult {
        let folio = match self.alloc_charge_folio(mm) {
            Ok(f) => f,
            Err(r) => return r,
        };
        let (pmd, _) = match self.find_pmd_or_thp_or_none(mm, haddr) {
            Ok(p) => p,
            Err(r) => {
                self.folio_free(folio);
                return r;
            }
        };
        if unmapped {
            if let Err(r) = self.collapse_huge_page_swapin(mm, vma, haddr, pmd) {
                self.folio_free(folio);
                return r;
            }
        }
        // pmdp_collapse_flush(): the PMD is cleared and the range flushed;
        // the PTE table is now only this function's.
        let table_pfn = A::table_pfn(self.pmdp_get(pmd));
        let tid = self.mem.table_id(table_pfn);
        self.pt.set(pmd.table, pmd.idx, 0);
        self.flush_tlb_range(mm, HPAGE_PMD_NR);
        let mut t = Tally::default();
        for i in 0..HPAGE_PMD_NR as usize {
            let pte = A::ptep_get(self.pt.table(tid), i, &mut self.vmstat.sim);
            if let Err(r) = self.collapse_scan_pte(pte, cc, &mut t, true) {
                return self.collapse_isolate_failed(pmd, table_pfn, folio, r);
            }
        }
        if cc.is_khugepaged && t.referenced == 0 {
            let r = ScanResult::LackReferencedPage;
            return self.collapse_isolate_failed(pmd, table_pfn, folio, r);
        }
        self.collapse_huge_page_copy(mm, tid, folio, haddr);
        let old = self.mm_mut(mm).deposited.insert(haddr, table_pfn);
        debug_assert!(old.is_none(), "double deposit");
        let prot = PteProt {
            write: vma.vm_flags & VM_WRITE != 0,
            dirty: true,
            ..Self::vma_page_prot(vma)
        };
        self.folio_add_new_anon_rmap(folio, vma, haddr, true, mm);
        self.folio_add_lru(folio);
        self.pt
            .set(pmd.table, pmd.idx, A::pmd_mkhuge(A::pfn_pte(folio, prot)));
        self.vmstat.sim.pmd_set += 1;
        self.deferred_split_folio(folio, false);
        ScanResult::Succeed
    }

    /// A failed `__collapse_huge_page_isolate()`: the PMD points at the PTE
    /// table again (`pmd_populate()`) and the new folio is put.
    fn collapse_isolate_failed(
        &mut self,
        pmd: PmdSlot,
        table_pfn: Pfn,
        folio: Pfn,
        r: ScanResult,
    ) -> ScanResult {
        self.pt.set(pmd.table, pmd.idx, A::mk_table(table_pfn));
        self.folio_free(folio);
        r
    }

    /// `__collapse_huge_page_swapin()`: fault each swap PTE of the range in
    /// with do_swap_page() (no retry: a lost folio lock is SCAN_PAGE_LOCK).
    fn collapse_huge_page_swapin(
        &mut self,
        mm: MmId,
        vma: &Vma,
        haddr: u64,
        pmd: PmdSlot,
    ) -> Result<(), ScanResult> {
        let memcg = self.mm_memcg(mm);
        self.with_current_memcg(memcg, |k| {
            for i in 0..HPAGE_PMD_NR {
                let addr = haddr + i * PAGE_SIZE;
                let tid = k.entry_table(k.pmdp_get(pmd)).ok_or(ScanResult::PmdNull)?;
                let pte = A::ptep_get(k.pt.table(tid), i as usize, &mut k.vmstat.sim);
                if !matches!(k.collapse_pte_kind(pte), PteKind::Swap) {
                    continue;
                }
                k.collapse_swapin_supported(pte);
                let mut vmf = Vmf {
                    mm,
                    vma: *vma,
                    address: addr,
                    pgoff: vma.linear_page_index(addr),
                    flags: FAULT_FLAG_ALLOW_RETRY,
                    pmd,
                    pte_table: Some(tid),
                    orig_pte: pte,
                    prealloc_pte: None,
                };
                let ret = k.do_swap_page(&mut vmf);
                if ret & VM_FAULT_RETRY != 0 {
                    return Err(ScanResult::PageLock);
                }
                if ret & VM_FAULT_ERROR != 0 {
                    return Err(ScanResult::Fail);
                }
            }
            Ok(())
        })
    }

    /// A swap-in for a collapse the model can make: from the swap cache or
    /// from a device whose reads complete synchronously (zram). Elsewhere
    /// the kernel's do_swap_page() drops the mmap_lock while the read is in
    /// flight and the collapse fails with SCAN_PAGE_LOCK; that race is not
    /// modelled.
    fn collapse_swapin_supported(&self, pte: u64) {
        let (ty, offset) = A::pte_to_swp_entry(pte);
        self.collapse_swapin_entry_supported(ty, offset);
    }

    /// [`Self::collapse_swapin_supported`] for the swap entry `(ty,
    /// offset)`; for shmem, the kernel's read from a device without
    /// synchronous I/O is a swap readahead (shmem_swapin_cluster()), which
    /// the model does not have.
    fn collapse_swapin_entry_supported(&self, ty: u32, offset: u64) {
        let Some(si) = self.swap.get(ty as usize) else {
            return;
        };
        let cached = si.table.cached(offset);
        if !cached && !si.synchronous() {
            crate::model_limit(
                "a collapse swapping in from a swap device without synchronous I/O \
                 (do_swap_page() drops the mmap_lock for the read and the collapse gives up)",
            );
        }
    }

    /// `__collapse_huge_page_copy()` and `__collapse_huge_page_copy_succeeded()`:
    /// copy present pages into `folio`, zero the rest, then unmap and put the
    /// old folios.
    fn collapse_huge_page_copy(&mut self, mm: MmId, tid: TableId, folio: Pfn, haddr: u64) {
        let mut large = Vec::new();
        let mut idx = 0usize;
        let mut added = 0i64;
        while idx < HPAGE_PMD_NR as usize {
            let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            let dst = folio.plus(idx as u64);
            let PteKind::Present(page) = self.collapse_pte_kind(pte) else {
                // clear_user_highpage(); a zero-page entry is cleared.
                self.vmstat.sim.page_zero += 1;
                self.mem.set_page_nonzero(dst, false);
                added += 1;
                if pte != 0 {
                    A::ptep_get_and_clear(self.pt.table_mut(tid), idx, &mut self.vmstat.sim);
                }
                idx += 1;
                continue;
            };
            let src = self.mem.page_folio(page);
            let nr = if self.mem.folio_test_large(src) {
                let max = HPAGE_PMD_NR as usize - idx;
                self.folio_pte_batch(tid, idx, src, max, false)
            } else {
                1
            };
            for i in 0..nr as u64 {
                self.mem
                    .copy_page_content(folio.plus(idx as u64 + i), page.plus(i));
            }
            self.vmstat.sim.page_copy += nr as u64;
            A::get_and_clear_full_ptes(self.pt.table_mut(tid), idx, nr, &mut self.vmstat.sim);
            self.folio_remove_rmap_ptes(src, page, nr as u64, mm);
            if self.mem.folio_test_large(src) {
                if !large.contains(&src) {
                    large.push(src);
                }
            } else {
                self.free_swap_cache_and_put(src);
            }
            idx += nr;
        }
        debug_assert_eq!(align_down(haddr, PMD_SIZE), haddr);
        self.add_mm_counter(mm, MM_ANONPAGES, added);
        for src in large {
            self.free_swap_cache_and_put(src);
        }
    }

    /// `madvise_collapse()` on `[start, end)` of one VMA: every PMD range
    /// inside it must end PMD-mapped, else the errno of the last failure.
    pub(crate) fn madvise_collapse(
        &mut self,
        mm: MmId,
        vma: &Vma,
        range: std::ops::Range<u64>,
    ) -> Result<(), KernelError> {
        let (start, end) = (range.start, range.end);
        let einval = |why: &str| KernelError::Errno("EINVAL", format!("MADV_COLLAPSE: {why}"));
        if !self.collapse_allowable(vma, vma.vm_flags, true)? {
            if vma.kind == VmaKind::File {
                return Err(einval(
                    "a regular file's range is never collapsed (file_thp_enabled(): \
                     the kernel is built without CONFIG_READ_ONLY_THP_FOR_FS)",
                ));
            }
            return Err(einval("the VMA cannot hold a PMD THP"));
        }
        let cc = CollapseControl {
            is_khugepaged: false,
        };
        let hstart = start.next_multiple_of(PMD_SIZE);
        let hend = align_down(end, PMD_SIZE);
        if hstart > hend {
            // (hend - hstart) wraps in the kernel: never all collapsed.
            return Err(einval(ScanResult::Fail.describe()));
        }
        let mut thps = 0;
        let mut last_fail = ScanResult::Fail;
        let mut addr = hstart;
        while addr < hend {
            let mut result = if vma.kind == VmaKind::Shmem {
                let f = self.open_files[vma.file.expect("shmem file") as usize].mapping;
                self.hpage_collapse_scan_file(mm, f, vma.linear_page_index(addr), cc)
            } else {
                self.hpage_collapse_scan_pmd(mm, vma, addr, cc).0
            };
            if result == ScanResult::PteMappedHugepage {
                result = self.collapse_pte_mapped_thp(mm, addr, true);
            }
            match result {
                ScanResult::Succeed | ScanResult::PmdMapped => thps += 1,
                r if r.madvise_continues() => last_fail = r,
                r => {
                    last_fail = r;
                    break;
                }
            }
            addr += PMD_SIZE;
        }
        if thps == (hend - hstart) / PMD_SIZE {
            return Ok(());
        }
        Err(KernelError::Errno(
            last_fail.errno(),
            format!("MADV_COLLAPSE: {}", last_fail.describe()),
        ))
    }
}

/// Collapse of shmem (mm/khugepaged.c: hpage_collapse_scan_file(),
/// collapse_file(), retract_page_tables(), collapse_pte_mapped_thp(),
/// set_huge_pmd()).
impl<A: Arch> Kernel<A> {
    /// `hpage_collapse_scan_file()`: walk the page cache of `f` over the
    /// PMD range from index `start` and collapse it if
    /// it qualifies. The folio reference check is the model's pin.
    fn hpage_collapse_scan_file(
        &mut self,
        mm: MmId,
        f: FileId,
        start: u64,
        cc: CollapseControl,
    ) -> ScanResult {
        let end = start + HPAGE_PMD_NR;
        let (mut present, mut swap) = (0u64, 0u32);
        let mut result = ScanResult::Succeed;
        let mut index = start;
        while index < end {
            let Some(page) = self.files[f.0 as usize].lookup(index) else {
                if self.shmem_swap_entry(f, index).is_some() {
                    let max = self.cfg.khugepaged_max_ptes_swap;
                    let limit = (VmEvent::ThpScanExceedSwapPte, ScanResult::ExceedSwapPte);
                    if let Err(r) = self.collapse_limit(cc, &mut swap, max, limit) {
                        result = r;
                        break;
                    }
                }
                index += 1;
                continue;
            };
            let folio = self.mem.page_folio(page);
            let first = self.mem.folio_index(folio) as u64;
            if self.mem.order(folio) == HPAGE_PMD_ORDER && first == start {
                result = ScanResult::PteMappedHugepage;
                break;
            }
            if !self.mem.test(folio, PG_LRU) {
                result = ScanResult::PageLru;
                break;
            }
            if self.pinned == Some(folio) {
                result = ScanResult::PageCount;
                break;
            }
            // xas_for_each() meets a large folio once, at its first index.
            let nr = self.mem.folio_nr_pages(folio);
            present += nr;
            index = first + nr;
        }
        if result == ScanResult::Succeed {
            let none_max = HPAGE_PMD_NR - self.cfg.khugepaged_max_ptes_none as u64;
            if cc.is_khugepaged && present < none_max {
                self.vmstat.count_vm_event(VmEvent::ThpScanExceedNonePte);
                result = ScanResult::ExceedNonePte;
            } else {
                result = self.collapse_file(mm, f, start, cc);
            }
        }
        self.vmstat.trace(Trace::KhugepagedScanFile);
        result
    }

    /// `collapse_file()` for shmem: a new PMD-size folio takes the place of
    /// the range's folios in the page cache. Swapped-out pages are swapped
    /// in first (`shmem_get_folio()` with SGP_NOALLOC: no fault is
    /// counted), mapped folios are unmapped from every process
    /// (`try_to_unmap()` with one batched flush), present pages are copied
    /// and holes zeroed (and charged to the inode, `shmem_charge()`). The
    /// new folio is uptodate and dirty, on the LRU; the emptied page tables
    /// of the file's mappings are retracted and the old folios freed.
    fn collapse_file(
        &mut self,
        mm: MmId,
        f: FileId,
        start: u64,
        cc: CollapseControl,
    ) -> ScanResult {
        let new = match self.alloc_charge_folio(mm) {
            Ok(folio) => folio,
            Err(r) => {
                self.vmstat.trace(Trace::KhugepagedCollapseFile);
                return r;
            }
        };
        let result = self.collapse_file_gather(mm, f, start);
        // try_to_unmap_flush(): whatever the outcome.
        self.try_to_unmap_flush();
        let old = match result {
            Ok(old) => old,
            Err(r) => {
                self.folio_free(new);
                self.vmstat.trace(Trace::KhugepagedCollapseFile);
                return r;
            }
        };
        // The copy: each old page into its place, holes cleared.
        let mut filled = vec![false; HPAGE_PMD_NR as usize];
        for &folio in &old {
            let first = self.mem.folio_index(folio) as u64;
            let nr = self.mem.folio_nr_pages(folio);
            for i in 0..nr {
                let at = (first + i - start) as usize;
                self.mem
                    .copy_page_content(new.plus(at as u64), folio.plus(i));
                filled[at] = true;
            }
            self.vmstat.sim.page_copy += nr;
        }
        for (i, _) in filled.iter().enumerate().filter(|(_, &f)| !f) {
            self.vmstat.sim.page_zero += 1;
            self.mem.set_page_nonzero(new.plus(i as u64), false);
        }
        // The old folios leave the page cache; the new one takes the whole
        // range as one multi-index entry.
        for &folio in &old {
            self.mem.set_folio_mapping(folio, 0);
        }
        let as_ = &mut self.files[f.0 as usize];
        for i in 0..HPAGE_PMD_NR {
            as_.pages[(start + i) as usize] = new.0 + i as u32;
        }
        let memcg = self.mm_memcg(mm);
        let nodes = self.files[f.0 as usize].xa.store(start, HPAGE_PMD_ORDER);
        if nodes > 0 {
            let bytes = nodes * crate::mm::filemap::XA_NODE_CHARGE;
            self.files[f.0 as usize].xa.charge(memcg, bytes);
            self.obj_cgroup_charge(memcg, bytes);
        }
        self.mem.set_folio_index(new, start);
        self.mem.set_folio_mapping(new, Self::file_mapping_id(f));
        self.mem.set(new, PG_SWAPBACKED | PG_UPTODATE | PG_DIRTY);
        self.vmstat.sim.pagecache_add += 1;
        self.folio_add_lru(new);
        self.retract_page_tables(f, start);
        for folio in old {
            self.folio_free(folio);
        }
        self.vmstat.trace(Trace::KhugepagedCollapseFile);
        // MADV_COLLAPSE goes on to collapse_pte_mapped_thp(); khugepaged
        // leaves the PMD to the next fault.
        if cc.is_khugepaged {
            ScanResult::Succeed
        } else {
            ScanResult::PteMappedHugepage
        }
    }

    /// The loop of `collapse_file()` over the range for shmem: each folio
    /// found (swapped in if its slot holds a swap entry), checked and
    /// unmapped, in index order. The first failure ends it; the folios
    /// unmapped before it stay unmapped (their next access faults them
    /// back in), as on the kernel.
    fn collapse_file_gather(
        &mut self,
        mm: MmId,
        f: FileId,
        start: u64,
    ) -> Result<Vec<Pfn>, ScanResult> {
        let end = start + HPAGE_PMD_NR;
        let mut old = Vec::new();
        let mut index = start;
        while index < end {
            let folio = match self.files[f.0 as usize].lookup(index) {
                Some(page) => self.mem.page_folio(page),
                None => match self.shmem_swap_entry(f, index) {
                    Some(entry) => {
                        self.collapse_swapin_entry_supported(entry.ty, entry.offset);
                        let memcg = self.mm_memcg(mm);
                        let got = self.with_current_memcg(memcg, |k| {
                            k.shmem_swapin_folio(f, index, entry, false)
                        });
                        match got {
                            (_, Some(folio)) => folio,
                            (_, None) => return Err(ScanResult::Fail),
                        }
                    }
                    None => {
                        // At the first index only: is the whole range empty
                        // (xas_next_entry() finds nothing)?
                        if index == start
                            && (index..end).all(|i| {
                                self.files[f.0 as usize].lookup(i).is_none()
                                    && self.shmem_swap_entry(f, i).is_none()
                            })
                        {
                            return Err(ScanResult::Truncated);
                        }
                        index += 1;
                        continue;
                    }
                },
            };
            if self.locked.contains(&folio) {
                return Err(ScanResult::PageLock);
            }
            if self.mem.order(folio) == HPAGE_PMD_ORDER
                && self.mem.folio_index(folio) as u64 == start
            {
                return Err(ScanResult::PteMappedHugepage);
            }
            if !self.mem.test(folio, PG_LRU) {
                return Err(ScanResult::PageLru);
            }
            if self.mem.folio_mapped(folio) {
                self.try_to_unmap(folio);
            }
            if self.pinned == Some(folio) {
                return Err(ScanResult::PageCount);
            }
            old.push(folio);
            index = self.mem.folio_index(folio) as u64 + self.mem.folio_nr_pages(folio);
        }
        Ok(old)
    }

    /// `retract_page_tables()`: in every mapping of `f` that holds the
    /// whole PMD range at `pgoff` (and never had anonymous pages), the now
    /// empty PTE table is taken out (`pmdp_collapse_flush()`: the PMD
    /// cleared, the range flushed) and freed, so the next fault can map
    /// the new folio with a PMD.
    fn retract_page_tables(&mut self, f: FileId, pgoff: u64) {
        let mapping = Self::file_mapping_id(f);
        let mut hits = Vec::new();
        for m in self.live_mms() {
            for v in m.vmas.values() {
                let ours = v.file.is_some_and(|of| {
                    Self::file_mapping_id(self.open_files[of as usize].mapping) == mapping
                });
                let pages = (v.vm_end - v.vm_start) / PAGE_SIZE;
                if ours && pgoff >= v.vm_pgoff && pgoff < v.vm_pgoff + pages {
                    hits.push((m.id, *v));
                }
            }
        }
        for (mm, vma) in hits {
            if vma.anon_vma.is_some() {
                continue;
            }
            let addr = vma.vm_start + (pgoff - vma.vm_pgoff) * PAGE_SIZE;
            if !addr.is_multiple_of(PMD_SIZE) || vma.vm_end < addr + PMD_SIZE {
                continue;
            }
            let Ok((pmd, _)) = self.find_pmd_or_thp_or_none(mm, addr) else {
                continue;
            };
            self.pmdp_collapse_flush_table(mm, pmd);
        }
    }

    /// `pmdp_collapse_flush()` of a PMD pointing at an empty PTE table,
    /// then the table freed (`mm_dec_nr_ptes()`, `pte_free_defer()`).
    fn pmdp_collapse_flush_table(&mut self, mm: MmId, pmd: PmdSlot) {
        let table = A::table_pfn(self.pmdp_get(pmd));
        self.pt.set(pmd.table, pmd.idx, 0);
        self.vmstat.sim.pmd_clear += 1;
        self.flush_tlb_range(mm, HPAGE_PMD_NR);
        self.pgtable_free(table);
    }

    /// `collapse_pte_mapped_thp()`: once the page cache holds a PMD-size
    /// folio at `addr`'s range, take out the PTE table that maps (some of)
    /// its pages there and, with `install_pmd`, map it with one PMD
    /// (`set_huge_pmd()` → `do_set_pmd()` of a read fault: the PMD is
    /// clean and read-only, so a write then takes a fault).
    fn collapse_pte_mapped_thp(&mut self, mm: MmId, addr: u64, install_pmd: bool) -> ScanResult {
        let haddr = align_down(addr, PMD_SIZE);
        let vma = match self.find_vma(mm, haddr) {
            Some(v) if v.file.is_some() && v.vm_start <= haddr && haddr + PMD_SIZE <= v.vm_end => v,
            _ => return ScanResult::VmaCheck,
        };
        if let Err(ScanResult::PmdMapped) = self.find_pmd_or_thp_or_none(mm, haddr) {
            return ScanResult::PmdMapped;
        }
        if !self
            .collapse_allowable(&vma, vma.vm_flags, true)
            .unwrap_or(false)
        {
            return ScanResult::VmaCheck;
        }
        let f = self.open_files[vma.file.expect("file") as usize].mapping;
        let Some(page) = self.files[f.0 as usize].lookup(vma.linear_page_index(haddr)) else {
            return ScanResult::PageNull;
        };
        let folio = self.mem.page_folio(page);
        if self.mem.order(folio) != HPAGE_PMD_ORDER {
            return ScanResult::PageCompound;
        }
        let pmd = match self.find_pmd_or_thp_or_none(mm, haddr) {
            Ok((pmd, tid)) => {
                if let Err(r) = self.collapse_pte_mapped_retract(mm, folio, pmd, tid) {
                    return r;
                }
                pmd
            }
            Err(ScanResult::PmdNull) => self.pmd_alloc(mm, haddr),
            Err(ScanResult::PmdNone) => self.walk_to_pmd(mm, haddr).expect("a PMD table"),
            Err(r) => return r,
        };
        if !install_pmd {
            return ScanResult::Succeed;
        }
        let mut vmf = Vmf {
            mm,
            vma,
            address: haddr,
            pgoff: vma.linear_page_index(haddr),
            flags: 0,
            pmd,
            pte_table: None,
            orig_pte: 0,
            prealloc_pte: None,
        };
        if self.do_set_pmd(&mut vmf, folio, folio) != 0 {
            return ScanResult::Fail;
        }
        ScanResult::Succeed
    }

    /// Steps 1 to 4 of `collapse_pte_mapped_thp()` on the PTE table `tid`:
    /// every entry must be none or map the folio's own page there; those
    /// that do are cleared (in batches, their rmap and RSS dropped), then
    /// the table is taken out and freed.
    fn collapse_pte_mapped_retract(
        &mut self,
        mm: MmId,
        folio: Pfn,
        pmd: PmdSlot,
        tid: TableId,
    ) -> Result<(), ScanResult> {
        for i in 0..HPAGE_PMD_NR as usize {
            let pte = A::ptep_get(self.pt.table(tid), i, &mut self.vmstat.sim);
            if pte == 0 {
                continue;
            }
            if !A::pte_present(pte) {
                return Err(ScanResult::PteNonPresent);
            }
            if self.vm_normal_page(pte) != Some(folio.plus(i as u64)) {
                return Err(ScanResult::Fail);
            }
        }
        let mut i = 0usize;
        let mut mapped = 0i64;
        while i < HPAGE_PMD_NR as usize {
            if A::ptep_get(self.pt.table(tid), i, &mut self.vmstat.sim) == 0 {
                i += 1;
                continue;
            }
            let max = HPAGE_PMD_NR as usize - i;
            let nr = self.folio_pte_batch(tid, i, folio, max, false);
            A::get_and_clear_full_ptes(self.pt.table_mut(tid), i, nr, &mut self.vmstat.sim);
            self.folio_remove_rmap_ptes(folio, folio.plus(i as u64), nr as u64, mm);
            mapped += nr as i64;
            i += nr;
        }
        if mapped > 0 {
            let c = self.mm_counter_file(folio);
            self.add_mm_counter(mm, c, -mapped);
        }
        self.pmdp_collapse_flush_table(mm, pmd);
        Ok(())
    }
}

impl ScanResult {
    /// The kernel's name of the result (`SCAN_*`), for messages.
    fn describe(self) -> &'static str {
        match self {
            ScanResult::Fail => "SCAN_FAIL",
            ScanResult::Succeed => "SCAN_SUCCEED",
            ScanResult::PmdNull => "SCAN_PMD_NULL",
            ScanResult::PmdNone => "SCAN_PMD_NONE (no page table: nothing was ever touched)",
            ScanResult::PmdMapped => "SCAN_PMD_MAPPED",
            ScanResult::ExceedNonePte => "SCAN_EXCEED_NONE_PTE",
            ScanResult::ExceedSwapPte => "SCAN_EXCEED_SWAP_PTE",
            ScanResult::ExceedSharedPte => "SCAN_EXCEED_SHARED_PTE",
            ScanResult::PteNonPresent => "SCAN_PTE_NON_PRESENT",
            ScanResult::LackReferencedPage => "SCAN_LACK_REFERENCED_PAGE",
            ScanResult::PageNull => "SCAN_PAGE_NULL",
            ScanResult::PageCount => "SCAN_PAGE_COUNT",
            ScanResult::PageLru => "SCAN_PAGE_LRU",
            ScanResult::PageLock => "SCAN_PAGE_LOCK",
            ScanResult::PageAnon => "SCAN_PAGE_ANON",
            ScanResult::AllocHugePageFail => "SCAN_ALLOC_HUGE_PAGE_FAIL",
            ScanResult::CgroupChargeFail => "SCAN_CGROUP_CHARGE_FAIL",
            ScanResult::PteMappedHugepage => "SCAN_PTE_MAPPED_HUGEPAGE",
            ScanResult::Truncated => "SCAN_TRUNCATED (nothing of the range is in the page cache)",
            ScanResult::PageCompound => "SCAN_PAGE_COMPOUND",
            ScanResult::VmaCheck => "SCAN_VMA_CHECK",
        }
    }
}

/// khugepaged itself.
impl<A: Arch> Kernel<A> {
    /// `khugepaged_has_work()`
    fn khugepaged_has_work(&self) -> bool {
        !self.khugepaged.mm_head.is_empty() && self.hugepage_pmd_enabled()
    }

    /// Run khugepaged, pass after pass (`khugepaged_do_scan()`, with no
    /// time between passes), until `khugepaged/full_scans` has advanced by
    /// `full_scans` or it has no work (no mm registered, or no PMD size
    /// enabled).
    /// The tracepoints khugepaged hits (its allocations, its TLB flushes)
    /// are its own thread's, not the workload's, so they do not count.
    pub fn khugepaged_run(&mut self, full_scans: u64) -> Result<(), KernelError> {
        let target = self.vmstat.khugepaged[Khugepaged::FullScans as usize] + full_scans;
        let (trace, page_alloc) = (self.vmstat.trace, self.vmstat.page_alloc);
        // khugepaged's own memory.high debt: a kernel thread never pays it.
        let over_high = std::mem::take(&mut self.memcg.nr_pages_over_high);
        let mut result = Ok(());
        while self.vmstat.khugepaged[Khugepaged::FullScans as usize] < target
            && self.khugepaged_has_work()
        {
            result = self.khugepaged_do_scan();
            if result.is_err() {
                break;
            }
        }
        self.vmstat.trace = trace;
        self.vmstat.page_alloc = page_alloc;
        self.memcg.nr_pages_over_high = over_high;
        result
    }

    /// `khugepaged_do_scan()`: one pass of `pages_to_scan` progress; a
    /// failed huge-page allocation ends it on the second failure (the
    /// first one's `alloc_sleep_millisecs` takes no simulated time).
    fn khugepaged_do_scan(&mut self) -> Result<(), KernelError> {
        let pages = self.cfg.khugepaged_pages_to_scan as u64;
        let (mut progress, mut pass_through_head, mut wait) = (0u64, 0, true);
        loop {
            if self.khugepaged.mm_slot.is_none() {
                pass_through_head += 1;
            }
            let mut result = ScanResult::Succeed;
            if self.khugepaged_has_work() && pass_through_head < 2 {
                let (p, r) = self.khugepaged_scan_mm_slot(pages - progress)?;
                progress += p;
                result = r;
            } else {
                progress = pages;
            }
            if progress >= pages {
                return Ok(());
            }
            if result == ScanResult::AllocHugePageFail {
                if !wait {
                    return Ok(());
                }
                wait = false;
            }
        }
    }

    /// `khugepaged_scan_mm_slot()`: scan the cursor's mm from the address
    /// it reached, for at most `pages` of progress or until a collapse was
    /// tried; returns the progress and the last result.
    fn khugepaged_scan_mm_slot(&mut self, pages: u64) -> Result<(u64, ScanResult), KernelError> {
        let mm = match self.khugepaged.mm_slot {
            Some(mm) => mm,
            None => {
                let mm = self.khugepaged.mm_head[0];
                self.khugepaged.mm_slot = Some(mm);
                self.khugepaged.address = 0;
                mm
            }
        };
        let mut progress = 1;
        let mut result = ScanResult::Fail;
        let cc = CollapseControl {
            is_khugepaged: true,
        };
        // The walk stopped inside the mm (`vma` not NULL at the end).
        let mut stopped = false;
        if self.mm_alive(mm) {
            let vmas: Vec<Vma> = self
                .mm(mm)
                .vmas
                .values()
                .filter(|v| v.vm_end > self.khugepaged.address)
                .copied()
                .collect();
            'vmas: for vma in vmas {
                if !self.collapse_allowable(&vma, vma.vm_flags, false)? {
                    progress += 1;
                    continue;
                }
                let hstart = vma.vm_start.next_multiple_of(PMD_SIZE);
                let hend = align_down(vma.vm_end, PMD_SIZE);
                if self.khugepaged.address > hend {
                    progress += 1;
                    continue;
                }
                self.khugepaged.address = self.khugepaged.address.max(hstart);
                while self.khugepaged.address < hend {
                    let addr = self.khugepaged.address;
                    let (r, tried) = self.hpage_collapse_scan_pmd(mm, &vma, addr, cc);
                    result = r;
                    if result == ScanResult::Succeed {
                        self.vmstat.khugepaged[Khugepaged::PagesCollapsed as usize] += 1;
                    }
                    self.khugepaged.address += PMD_SIZE;
                    progress += HPAGE_PMD_NR;
                    if tried || progress >= pages {
                        stopped = true;
                        break 'vmas;
                    }
                }
            }
        }
        if !stopped || !self.mm_alive(mm) {
            self.khugepaged_next_slot(mm);
        }
        Ok((progress, result))
    }

    /// The end of `khugepaged_scan_mm_slot()` for an mm scanned to its end
    /// (or exited): the cursor moves to the next mm, or past the list's
    /// end, which completes a full scan; `collect_mm_slot()` drops an
    /// exited mm.
    fn khugepaged_next_slot(&mut self, mm: MmId) {
        let k = &mut self.khugepaged;
        let pos = k.mm_head.iter().position(|&m| m == mm).expect("slot");
        k.address = 0;
        if pos + 1 < k.mm_head.len() {
            k.mm_slot = Some(k.mm_head[pos + 1]);
        } else {
            k.mm_slot = None;
            self.vmstat.khugepaged[Khugepaged::FullScans as usize] += 1;
        }
        if !self.mm_alive(mm) {
            self.khugepaged.mm_head.remove(pos);
        }
    }
}
