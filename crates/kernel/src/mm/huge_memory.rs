//! Transparent huge pages (mm/huge_memory.c: __thp_vma_allowable_orders(),
//! do_huge_pmd_anonymous_page(), map_anon_folio_pmd(), set_huge_zero_folio(),
//! do_huge_pmd_wp_page(), do_huge_zero_wp_pmd(), __split_huge_pmd_locked(),
//! zap_huge_pmd(), copy_huge_pmd(); include/linux/huge_mm.h:
//! thp_vma_allowable_orders(), thp_vma_suitable_order(s);
//! mm/memory.c: create_huge_pmd(), wp_huge_pmd(), do_set_pmd()), Linux 6.18.
//!
//! Modelled: the per-size anon policy (top-level and per-size `enabled`,
//! `inherit`, `madvise` with VM_HUGEPAGE, VM_NOHUGEPAGE), PMD THP on first
//! write, the huge zero folio on read (allocated on first use), replacing a
//! huge-zero PMD with a THP on write, PMD reuse and split-then-COW after
//! fork, file PMD mappings of PMD-size page-cache folios (do_set_pmd), PMD
//! splits (anon to PTEs, file zapped, passing the PMD's dirty and young
//! bits to the folio). Page tables are deposited with anon PMDs as in the
//! kernel. THP faults are charged to the mm's memory cgroup with the VMA's
//! THP gfp mask (`thp_fault_fallback_charge` on failure).
//! The deferred split queue (deferred_split_folio(),
//! __folio_unqueue_deferred_split()), one per memory cgroup, and its
//! shrinker's callbacks (deferred_split_count(), deferred_split_scan(),
//! thp_underused()); mm/shrinker.rs drives them from reclaim.
//! Not modelled: prctl(PR_SET_THP_DISABLE), khugepaged, the huge-zero
//! shrinker, `defrag` (allocation succeeds while memory is free), PUD THP,
//! shmem huge pages.

use crate::KResult;
use std::collections::{BTreeMap, HashMap};

use crate::arch::{Arch, FolioSpan, PteProt};
use crate::include::linux::mm_types::{
    PG_ANON_EXCLUSIVE, PG_DIRTY, PG_PARTIALLY_MAPPED, PG_REFERENCED, PG_SWAPCACHE,
};
use crate::include::linux::pgtable::{
    align_down, Pfn, HPAGE_PMD_NR, HPAGE_PMD_ORDER, PAGE_SHIFT, PAGE_SIZE, PMD_SIZE,
};
use crate::mm::memcontrol::MemcgId;
use crate::mm::memory::{Vmf, VM_FAULT_FALLBACK};
use crate::mm::mmap::{Vma, VmaKind, MM_ANONPAGES, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_WRITE};
use crate::mm::pgtable_generic::TableId;
use crate::mm::vmstat::{MthpStat, VmEvent};
use crate::{Kernel, MmId, MthpMode, ThpMode};

/// `THP_ORDERS_ALL_ANON`: orders 2..=PMD_ORDER.
pub(crate) const THP_ORDERS_ALL_ANON: u32 = ((1 << (HPAGE_PMD_ORDER + 1)) - 1) & !0b11;

/// `thp_vma_suitable_order()`: the aligned block of `order` around `addr`
/// lies inside the VMA (and, for non-anonymous VMAs, the file offset is
/// congruent).
pub(crate) fn thp_vma_suitable_order(vma: &Vma, addr: u64, order: u32) -> bool {
    let nr = 1u64 << order;
    if !vma.is_anonymous()
        && ((vma.vm_start >> PAGE_SHIFT).wrapping_sub(vma.vm_pgoff)) & (nr - 1) != 0
    {
        return false;
    }
    let haddr = align_down(addr, nr * PAGE_SIZE);
    haddr >= vma.vm_start && haddr + nr * PAGE_SIZE <= vma.vm_end
}

/// `thp_vma_suitable_orders()`: keep the highest suitable order and all
/// lower ones.
pub(crate) fn thp_vma_suitable_orders(vma: &Vma, addr: u64, mut orders: u32) -> u32 {
    while orders != 0 {
        let o = 31 - orders.leading_zeros();
        if thp_vma_suitable_order(vma, addr, o) {
            break;
        }
        orders &= !(1 << o);
    }
    orders
}

impl<A: Arch> Kernel<A> {
    /// `thp_vma_allowable_orders(vma, vm_flags, TVA_PAGEFAULT, ALL)` for the
    /// page-fault path: a bitmap of orders.
    pub(crate) fn thp_vma_allowable_orders(&self, vma: &Vma) -> u32 {
        // File and shmem VMAs without ->huge_fault get nothing on this path.
        if !vma.is_anonymous() || vma.vm_flags & VM_NOHUGEPAGE != 0 {
            return 0;
        }
        let huge = vma.vm_flags & VM_HUGEPAGE != 0;
        let top = self.cfg.thp_enabled;
        let mut mask = 0;
        for order in 2..=HPAGE_PMD_ORDER {
            let on = match self.cfg.anon_orders[order as usize] {
                MthpMode::Always => true,
                MthpMode::Madvise => huge,
                MthpMode::Inherit => top == ThpMode::Always || (huge && top == ThpMode::Madvise),
                MthpMode::Never => false,
            };
            if on {
                mask |= 1 << order;
            }
        }
        mask & THP_ORDERS_ALL_ANON
    }

    /// Is one order allowed (`thp_vma_allowable_order()`)?
    pub(crate) fn thp_vma_allowable_order(&self, vma: &Vma, order: u32) -> bool {
        self.thp_vma_allowable_orders(vma) & (1 << order) != 0
    }

    /// `create_huge_pmd()`: anonymous VMAs only (no `->huge_fault` files).
    pub(crate) fn create_huge_pmd(&mut self, vmf: &mut Vmf) -> u32 {
        if vmf.vma.is_anonymous() {
            self.do_huge_pmd_anonymous_page(vmf)
        } else {
            VM_FAULT_FALLBACK
        }
    }

    /// `mm_get_huge_zero_folio()`: allocated on first use.
    fn get_huge_zero_folio(&mut self) -> Option<Pfn> {
        if let Some(p) = self.huge_zero_folio {
            return Some(p);
        }
        match self.folio_alloc(HPAGE_PMD_ORDER) {
            Some(p) => {
                // Zero-filled at allocation (__GFP_ZERO), never marked
                // uptodate: /proc/kpageflags shows it without.
                self.vmstat.sim.page_zero += HPAGE_PMD_NR;
                self.vmstat.count_vm_event(VmEvent::ThpZeroPageAlloc);
                self.huge_zero_folio = Some(p);
                Some(p)
            }
            None => {
                self.vmstat.count_vm_event(VmEvent::ThpZeroPageAllocFailed);
                None
            }
        }
    }

    /// `pgtable_trans_huge_deposit()`: keep a PTE table with an anon PMD.
    fn deposit_pgtable(&mut self, mm: MmId, haddr: u64) {
        let (pfn, _) = self.pgtable_alloc();
        let old = self.mm_mut(mm).deposited.insert(haddr, pfn);
        debug_assert!(old.is_none(), "double deposit");
    }

    /// `pgtable_trans_huge_withdraw()`
    pub(crate) fn withdraw_pgtable(&mut self, mm: MmId, haddr: u64) -> Option<(Pfn, TableId)> {
        let pfn = self.mm_mut(mm).deposited.remove(&haddr)?;
        Some((pfn, self.mem.table_id(pfn)))
    }

    /// `do_huge_pmd_anonymous_page()`
    fn do_huge_pmd_anonymous_page(&mut self, vmf: &mut Vmf) -> u32 {
        let haddr = align_down(vmf.address, PMD_SIZE);
        if !thp_vma_suitable_order(&vmf.vma, haddr, HPAGE_PMD_ORDER) {
            return VM_FAULT_FALLBACK;
        }
        self.anon_vma_prepare(vmf);
        let vma = vmf.vma;
        self.khugepaged_enter_vma(vmf.mm, &vma, vma.vm_flags);
        if !vmf.is_write() && self.cfg.use_zero_page {
            let Some(zero) = self.get_huge_zero_folio() else {
                self.vmstat.count_vm_event(VmEvent::ThpFaultFallback);
                return VM_FAULT_FALLBACK;
            };
            self.deposit_pgtable(vmf.mm, haddr);
            let prot = PteProt {
                special: true,
                ..Self::vma_page_prot(&vmf.vma)
            };
            self.set_pmd(vmf, A::pmd_mkhuge(A::pfn_pte(zero, prot)));
            return 0;
        }
        let Some(folio) = self.vma_alloc_anon_folio_pmd(vmf) else {
            return VM_FAULT_FALLBACK;
        };
        self.vmstat.sim.page_zero += HPAGE_PMD_NR;
        self.deposit_pgtable(vmf.mm, haddr);
        self.map_anon_folio_pmd(vmf, folio, haddr);
        0
    }

    /// `vma_alloc_anon_folio_pmd()`: a PMD-size folio charged with the
    /// VMA's THP gfp mask; a failure counts the fallback (and, for the
    /// charge, thp_fault_fallback_charge).
    fn vma_alloc_anon_folio_pmd(&mut self, vmf: &Vmf) -> Option<Pfn> {
        let order = HPAGE_PMD_ORDER;
        let Some(folio) = self.folio_alloc(order) else {
            self.vmstat.count_vm_event(VmEvent::ThpFaultFallback);
            self.vmstat
                .count_mthp_stat(order, MthpStat::AnonFaultFallback);
            return None;
        };
        let memcg = self.mm_memcg(vmf.mm);
        if !self.mem_cgroup_charge(folio, memcg, crate::mm::memcontrol::vma_thp_gfp(&vmf.vma)) {
            self.folio_free(folio);
            self.vmstat.count_vm_event(VmEvent::ThpFaultFallback);
            self.vmstat.count_vm_event(VmEvent::ThpFaultFallbackCharge);
            self.vmstat
                .count_mthp_stat(order, MthpStat::AnonFaultFallback);
            self.vmstat
                .count_mthp_stat(order, MthpStat::AnonFaultFallbackCharge);
            return None;
        }
        Some(folio)
    }

    /// `map_anon_folio_pmd()`: install a fresh anon THP with one PMD.
    fn map_anon_folio_pmd(&mut self, vmf: &mut Vmf, folio: Pfn, haddr: u64) {
        let w = vmf.vma.vm_flags & VM_WRITE != 0;
        let prot = PteProt {
            write: w,
            dirty: true,
            ..Self::vma_page_prot(&vmf.vma)
        };
        self.folio_add_new_anon_rmap(folio, &vmf.vma, haddr, true, vmf.mm);
        self.folio_add_lru(folio);
        self.add_mm_counter(vmf.mm, MM_ANONPAGES, HPAGE_PMD_NR as i64);
        self.set_pmd(vmf, A::pmd_mkhuge(A::pfn_pte(folio, prot)));
        self.vmstat.count_vm_event(VmEvent::ThpFaultAlloc);
        self.vmstat
            .count_mthp_stat(HPAGE_PMD_ORDER, MthpStat::AnonFaultAlloc);
        self.deferred_split_folio(folio, false);
    }

    fn set_pmd(&mut self, vmf: &Vmf, pmd: u64) {
        self.pt.set(vmf.pmd.table, vmf.pmd.idx, pmd);
        self.vmstat.sim.pmd_set += 1;
    }

    /// `wp_huge_pmd()`: a write to a read-only PMD leaf.
    pub(crate) fn wp_huge_pmd(&mut self, vmf: &mut Vmf) -> u32 {
        if vmf.vma.is_anonymous() {
            return self.do_huge_pmd_wp_page(vmf);
        }
        // File THP: no ->huge_fault; the PMD is zapped, the PTE level takes
        // over (do_cow_fault / do_shared_fault).
        self.split_huge_pmd(vmf.mm, &vmf.vma, align_down(vmf.address, PMD_SIZE), vmf.pmd);
        VM_FAULT_FALLBACK
    }

    /// `do_huge_pmd_wp_page()`
    fn do_huge_pmd_wp_page(&mut self, vmf: &mut Vmf) -> u32 {
        let pmdval = self.pmdp_get(vmf.pmd);
        let haddr = align_down(vmf.address, PMD_SIZE);
        if A::pte_special(pmdval) {
            return self.do_huge_zero_wp_pmd(vmf, haddr);
        }
        let folio = A::pte_pfn(pmdval);
        let reuse = self.mem.test(folio, PG_ANON_EXCLUSIVE) || self.mem.folio_mapcount(folio) == 1;
        if reuse {
            self.mem.set(folio, PG_ANON_EXCLUSIVE);
            let mut e = A::pte_mkdirty(A::pte_mkyoung(pmdval));
            if vmf.vma.vm_flags & VM_WRITE != 0 {
                e = A::pte_mkwrite(e);
            }
            self.pt.set(vmf.pmd.table, vmf.pmd.idx, e);
            self.vmstat.sim.pte_modify += 1;
            return 0;
        }
        self.split_huge_pmd(vmf.mm, &vmf.vma, haddr, vmf.pmd);
        VM_FAULT_FALLBACK
    }

    /// `do_huge_zero_wp_pmd()`: replace the huge-zero PMD with a new THP, or
    /// split it into zero-page PTEs if that fails.
    fn do_huge_zero_wp_pmd(&mut self, vmf: &mut Vmf, haddr: u64) -> u32 {
        let Some(folio) = self.vma_alloc_anon_folio_pmd(vmf) else {
            self.split_huge_pmd(vmf.mm, &vmf.vma, haddr, vmf.pmd);
            return VM_FAULT_FALLBACK;
        };
        self.vmstat.sim.page_zero += HPAGE_PMD_NR;
        // pmdp_huge_clear_flush() of the zero PMD.
        self.pt.set(vmf.pmd.table, vmf.pmd.idx, 0);
        self.vmstat.sim.pmd_clear += 1;
        self.flush_tlb_range(vmf.mm, HPAGE_PMD_NR);
        self.map_anon_folio_pmd(vmf, folio, haddr);
        0
    }

    /// `do_set_pmd()`: map a PMD-size page-cache folio with one PMD (the
    /// whole folio, whichever `page` the caller found). Returns 0 on success
    /// or VM_FAULT_FALLBACK.
    pub(crate) fn do_set_pmd(&mut self, vmf: &mut Vmf, folio: Pfn, _page: Pfn) -> u32 {
        let haddr = align_down(vmf.address, PMD_SIZE);
        let vma = vmf.vma;
        if vma.vm_flags & VM_NOHUGEPAGE != 0
            || !thp_vma_suitable_order(&vma, haddr, HPAGE_PMD_ORDER)
            || self.mem.order(folio) != HPAGE_PMD_ORDER
        {
            return VM_FAULT_FALLBACK;
        }
        let mut prot = Self::vma_page_prot(&vma);
        if vmf.is_write() {
            prot.dirty = true;
            prot.write = vma.vm_flags & VM_WRITE != 0;
        }
        self.folio_add_rmap_pmd(folio, vmf.mm);
        let c = self.mm_counter_file(folio);
        self.add_mm_counter(vmf.mm, c, HPAGE_PMD_NR as i64);
        self.set_pmd(vmf, A::pmd_mkhuge(A::pfn_pte(folio, prot)));
        self.vmstat.count_vm_event(VmEvent::ThpFileMapped);
        0
    }

    /// The file-VMA case of `__split_huge_pmd_locked()`: the PMD (already
    /// cleared) is simply zapped; its dirty and young bits go to the folio
    /// (PG_dirty, PG_referenced).
    fn split_huge_pmd_file(&mut self, mm: MmId, pmdval: u64) {
        let folio = A::pte_pfn(pmdval);
        if A::pte_dirty(pmdval) {
            self.mem.set(folio, PG_DIRTY);
        }
        if A::pte_young(pmdval) {
            self.mem.set(folio, PG_REFERENCED);
        }
        self.folio_remove_rmap_pmd(folio, mm);
        let c = self.mm_counter_file(folio);
        self.add_mm_counter(mm, c, -(HPAGE_PMD_NR as i64));
    }

    /// `__split_huge_pmd()`: anon PMDs become 512 PTEs of the same folio (or
    /// of the zero page); file PMDs are simply zapped.
    pub(crate) fn split_huge_pmd(
        &mut self,
        mm: MmId,
        vma: &Vma,
        haddr: u64,
        pmd: crate::mm::pgtable_generic::PmdSlot,
    ) {
        self.__split_huge_pmd(mm, vma, haddr, pmd, false);
    }

    /// `__split_huge_pmd()` with `freeze` (a folio split's `unmap_folio()`):
    /// the 512 entries stand for migration entries that remap_page()
    /// restores after the split, one order-0 folio each, so arm64 never
    /// folds them into contiguous blocks (`set_ptes()` of a large folio
    /// does, without freeze).
    pub(crate) fn __split_huge_pmd(
        &mut self,
        mm: MmId,
        vma: &Vma,
        haddr: u64,
        pmd: crate::mm::pgtable_generic::PmdSlot,
        freeze: bool,
    ) {
        let pmdval = self.pmdp_get(pmd);
        if !A::pmd_trans_huge(pmdval) {
            return;
        }
        self.vmstat.count_vm_event(VmEvent::ThpSplitPmd);
        self.pt.set(pmd.table, pmd.idx, 0);
        self.vmstat.sim.pmd_clear += 1;
        // pmdp_invalidate() / pmdp_huge_clear_flush(): flush the 2 MiB.
        self.flush_tlb_range(mm, HPAGE_PMD_NR);
        let pfn = A::pte_pfn(pmdval);
        if vma.kind != VmaKind::Anon {
            self.split_huge_pmd_file(mm, pmdval);
            return;
        }
        let (tpfn, tid) = self.withdraw_pgtable(mm, haddr).expect("deposited table");
        // The leaf bits become a PTE: drop the PMD leaf marker.
        let pte = Self::pmd_to_pte(pmdval);
        if !A::pte_special(pmdval) {
            let folio = pfn;
            let exclusive =
                self.mem.folio_test_anon(folio) && self.mem.test(folio, PG_ANON_EXCLUSIVE);
            for i in 0..HPAGE_PMD_NR {
                if exclusive {
                    self.mem.set(folio.plus(i), PG_ANON_EXCLUSIVE);
                }
            }
            // PMD mapping → 512 PTE mappings (rmap level change).
            for i in 0..HPAGE_PMD_NR {
                self.mem.page_mapcount_add(folio.plus(i), 1);
            }
            let mm_id = self.mm(mm).mm_id;
            let l = self.mem.large_mut(folio);
            l.entire_mapcount -= 1;
            l.nr_pages_mapped = HPAGE_PMD_NR as i32;
            l.large_mapcount += HPAGE_PMD_NR as i32 - 1;
            for s in 0..2 {
                if l.mm_id[s] == mm_id {
                    l.mm_id_mapcount[s] += HPAGE_PMD_NR as i32 - 1;
                }
            }
            self.folio_mapcount_sanity_checks(folio);
            let span = FolioSpan {
                pfn: folio,
                nr: HPAGE_PMD_NR,
            };
            if freeze {
                // One migration entry at a time (set_pte_at()), restored
                // after the split as order-0 folios: no contiguous blocks.
                let t = self.pt.table_mut(tid);
                for i in 0..HPAGE_PMD_NR as usize {
                    let e = A::pte_advance_pfn(pte, i as u64);
                    A::set_pte_at(t, i, e, FolioSpan::NONE, &mut self.vmstat.sim);
                }
            } else {
                A::set_ptes(
                    self.pt.table_mut(tid),
                    0,
                    pte,
                    HPAGE_PMD_NR as usize,
                    span,
                    &mut self.vmstat.sim,
                );
            }
        } else {
            // __split_huge_zero_page_pmd(): 512 entries of the small zero page.
            let zero = self.zero_pte(vma);
            for i in 0..HPAGE_PMD_NR as usize {
                A::set_ptes(
                    self.pt.table_mut(tid),
                    i,
                    zero,
                    1,
                    FolioSpan::NONE,
                    &mut self.vmstat.sim,
                );
            }
        }
        self.pt.set(pmd.table, pmd.idx, A::mk_table(tpfn));
    }

    /// A PMD leaf's bits as a PTE of its first page (the entry
    /// `__split_huge_pmd_locked()` builds for each page from the PMD's
    /// write, dirty and young bits).
    fn pmd_to_pte(pmdval: u64) -> u64 {
        let prot = PteProt {
            write: A::pte_write(pmdval),
            young: A::pte_young(pmdval),
            dirty: A::pte_dirty(pmdval),
            exec: false,
            special: A::pte_special(pmdval),
        };
        A::pfn_pte(A::pte_pfn(pmdval), prot)
    }

    /// `zap_huge_pmd()`: unmap a whole PMD leaf.
    pub(crate) fn zap_huge_pmd(
        &mut self,
        mm: MmId,
        vma: &Vma,
        haddr: u64,
        pmd: crate::mm::pgtable_generic::PmdSlot,
    ) {
        let pmdval = self.pmdp_get(pmd);
        self.pt.set(pmd.table, pmd.idx, 0);
        self.vmstat.sim.pmd_clear += 1;
        if let Some((tpfn, _)) = self.withdraw_pgtable(mm, haddr) {
            self.pgtable_free(tpfn);
        }
        if A::pte_special(pmdval) {
            self.tlb_remove_tlb_entry();
            return;
        }
        let folio = A::pte_pfn(pmdval);
        // tlb_remove_page_size(): one pointer; a full gather flushes now.
        if self.tlb_remove_folio_pages(1) {
            self.tlb_flush_mmu(mm);
        }
        if vma.kind == VmaKind::Anon {
            self.add_mm_counter(mm, MM_ANONPAGES, -(HPAGE_PMD_NR as i64));
        } else {
            if A::pte_dirty(pmdval) {
                self.mem.set(folio, PG_DIRTY);
            }
            let c = self.mm_counter_file(folio);
            self.add_mm_counter(mm, c, -(HPAGE_PMD_NR as i64));
        }
        self.folio_remove_rmap_pmd(folio, mm);
        if vma.kind != VmaKind::Anon
            && A::pte_young(pmdval)
            && crate::mm::swap::vma_has_recency(vma)
        {
            self.folio_mark_accessed(folio);
        }
        self.free_swap_cache_and_put(folio);
    }

    /// `copy_huge_pmd()` (fork): share the PMD write-protected; the child
    /// gets its own deposited table.
    pub(crate) fn copy_huge_pmd(
        &mut self,
        src: MmId,
        dst: MmId,
        vma: &Vma,
        haddr: u64,
    ) -> KResult<()> {
        let spmd = self.walk_to_pmd(src, haddr).expect("source pmd");
        let mut pmdval = self.pmdp_get(spmd);
        let dpmd = self.pmd_alloc(dst, haddr);
        self.deposit_pgtable(dst, haddr);
        if !A::pte_special(pmdval) {
            let folio = A::pte_pfn(pmdval);
            self.folio_add_rmap_pmd(folio, dst);
            self.add_mm_counter(dst, MM_ANONPAGES, HPAGE_PMD_NR as i64);
        }
        if vma.is_cow_mapping() && A::pte_write(pmdval) {
            pmdval = A::pte_wrprotect(pmdval);
            self.pt.set(spmd.table, spmd.idx, pmdval);
            self.vmstat.sim.pte_modify += 1;
        }
        self.pt.set(dpmd.table, dpmd.idx, A::pte_mkold(pmdval));
        self.vmstat.sim.pmd_set += 1;
        Ok(())
    }
}

/// `struct deferred_split`: one memory cgroup's queue of large anon
/// folios for the deferred-split shrinker, in list order (head first).
#[derive(Clone, Debug, Default)]
pub(crate) struct DeferredSplit {
    /// `split_queue`: list position → folio.
    split_queue: BTreeMap<u64, Pfn>,
    /// The list position of every queued folio (`folio->_deferred_list`
    /// not empty). Looked up only, never iterated: a fast fixed hasher.
    pos: HashMap<u32, u64, foldhash::fast::FixedState>,
    /// The next tail position.
    tail: u64,
}

impl DeferredSplit {
    /// `split_queue_len`
    pub(crate) fn len(&self) -> u64 {
        self.split_queue.len() as u64
    }

    /// No folio is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.split_queue.is_empty()
    }

    /// Whether `folio` is queued (`!list_empty(&folio->_deferred_list)`).
    pub(crate) fn contains(&self, folio: Pfn) -> bool {
        self.pos.contains_key(&folio.0)
    }

    /// `list_add_tail()`
    fn add_tail(&mut self, folio: Pfn) {
        self.split_queue.insert(self.tail, folio);
        self.pos.insert(folio.0, self.tail);
        self.tail += 1;
    }

    /// `list_del_init()`; false if the folio was not queued.
    fn del(&mut self, folio: Pfn) -> bool {
        match self.pos.remove(&folio.0) {
            Some(p) => {
                self.split_queue.remove(&p);
                true
            }
            None => false,
        }
    }

    /// The first `nr` folios, head first.
    fn first(&self, nr: u64) -> Vec<Pfn> {
        self.split_queue
            .values()
            .take(nr as usize)
            .copied()
            .collect()
    }
}

impl<A: Arch> Kernel<A> {
    /// `deferred_split_folio()`: queue a large anon folio on its memory
    /// cgroup's deferred split queue (`get_deferred_split_queue()`); with
    /// `partially_mapped`, flag it PG_partially_mapped and count
    /// `split_deferred` (and `thp_deferred_split_page` for a PMD-size
    /// folio) the first time. Order-1 folios have no list, swap-cache folios
    /// are left to reclaim, and a fully mapped folio is queued only while
    /// `shrink_underused` is on.
    pub(crate) fn deferred_split_folio(&mut self, folio: Pfn, partially_mapped: bool) {
        let order = self.mem.order(folio);
        if order <= 1 {
            return;
        }
        if !partially_mapped && !self.cfg.thp_shrink_underused {
            return;
        }
        if self.mem.test(folio, PG_SWAPCACHE) {
            return;
        }
        if partially_mapped && !self.mem.test(folio, PG_PARTIALLY_MAPPED) {
            self.mem.set(folio, PG_PARTIALLY_MAPPED);
            if order == HPAGE_PMD_ORDER {
                self.vmstat.count_vm_event(VmEvent::ThpDeferredSplitPage);
            }
            self.vmstat.count_mthp_stat(order, MthpStat::SplitDeferred);
            self.vmstat
                .mod_mthp_stat(order, MthpStat::NrAnonPartiallyMapped, 1);
        }
        let memcg = self.folio_memcg(folio);
        let q = &mut self.memcg.memcgs[memcg.idx()].deferred_split_queue;
        if !q.contains(folio) {
            q.add_tail(folio);
        }
    }

    /// `folio_unqueue_deferred_split()`: take a folio about to be freed or
    /// split off its queue, clearing PG_partially_mapped (the
    /// `nr_anon_partially_mapped` gauge drops). True if it was queued.
    #[inline(always)]
    pub(crate) fn folio_unqueue_deferred_split(&mut self, folio: Pfn) -> bool {
        // Order-0 and order-1 folios have no queue: the common case of
        // every free, decided without a call.
        if self.mem.order(folio) <= 1 {
            return false;
        }
        self.folio_unqueue_deferred_split_large(folio)
    }

    /// [`Kernel::folio_unqueue_deferred_split`] of a folio of order 2 or
    /// more.
    fn folio_unqueue_deferred_split_large(&mut self, folio: Pfn) -> bool {
        let order = self.mem.order(folio);
        if !self.mem.folio_test_anon(folio) {
            return false;
        }
        let memcg = self.folio_memcg(folio);
        if !self.memcg.memcgs[memcg.idx()]
            .deferred_split_queue
            .del(folio)
        {
            return false;
        }
        if self.mem.test(folio, PG_PARTIALLY_MAPPED) {
            self.mem.clear(folio, PG_PARTIALLY_MAPPED);
            self.vmstat
                .mod_mthp_stat(order, MthpStat::NrAnonPartiallyMapped, -1);
        }
        true
    }

    /// `deferred_split_count()`: the length of the cgroup's queue.
    pub(crate) fn deferred_split_count(&self, memcg: MemcgId) -> u64 {
        self.memcg.memcgs[memcg.idx()].deferred_split_queue.len()
    }

    /// `thp_underused()`: more than `khugepaged/max_ptes_none` of the
    /// folio's pages are zero-filled (never with the default 511). Reads
    /// pages in order and stops early either way, as the kernel does.
    fn thp_underused(&self, folio: Pfn) -> bool {
        let max_ptes_none = self.cfg.khugepaged_max_ptes_none as u64;
        if max_ptes_none == HPAGE_PMD_NR - 1 {
            return false;
        }
        let (mut zero, mut filled) = (0, 0);
        for i in 0..self.mem.folio_nr_pages(folio) {
            if self.mem.page_nonzero(folio.plus(i)) {
                filled += 1;
                if filled >= HPAGE_PMD_NR - max_ptes_none {
                    return false;
                }
            } else {
                zero += 1;
                if zero > max_ptes_none {
                    return true;
                }
            }
        }
        false
    }

    /// `deferred_split_scan()`: take up to `nr_to_scan` folios from the
    /// head of the cgroup's queue; split those partially mapped (their
    /// unmapped pages are freed) and the fully mapped ones
    /// [`thp_underused`](Self::thp_underused) finds underused
    /// (`thp_underused_split_page`); drop other fully mapped folios from the
    /// queue and put the rest back at its tail. Returns the folios split,
    /// or None for SHRINK_STOP (nothing split and the queue empty).
    pub(crate) fn deferred_split_scan(&mut self, memcg: MemcgId, nr_to_scan: u64) -> Option<u64> {
        let taken = self.memcg.memcgs[memcg.idx()]
            .deferred_split_queue
            .first(nr_to_scan);
        let mut split = 0;
        let mut keep = Vec::new();
        for folio in taken {
            self.memcg.memcgs[memcg.idx()]
                .deferred_split_queue
                .del(folio);
            let partially = self.mem.test(folio, PG_PARTIALLY_MAPPED);
            let underused = !partially && self.thp_underused(folio);
            if !partially && !underused {
                continue;
            }
            // split_folio(): the folio is back on the queue for the
            // split's own unqueue, which keeps the gauge's accounting.
            let q = &mut self.memcg.memcgs[memcg.idx()].deferred_split_queue;
            q.add_tail(folio);
            if self.can_split_folio(folio) {
                self.split_folio_to_list(folio, None);
                if underused {
                    self.vmstat.count_vm_event(VmEvent::ThpUnderusedSplitPage);
                }
                split += 1;
            } else if partially {
                let q = &mut self.memcg.memcgs[memcg.idx()].deferred_split_queue;
                q.del(folio);
                keep.push(folio);
            } else {
                let q = &mut self.memcg.memcgs[memcg.idx()].deferred_split_queue;
                q.del(folio);
            }
        }
        let q = &mut self.memcg.memcgs[memcg.idx()].deferred_split_queue;
        for folio in keep {
            q.add_tail(folio);
        }
        if split == 0 && q.is_empty() {
            return None;
        }
        Some(split)
    }

    /// `can_split_folio()` as `split_folio()` sees it: no reference beyond
    /// the mappings' (the model's only extra one is a fault's pin).
    fn can_split_folio(&self, folio: Pfn) -> bool {
        // __folio_split() refuses a folio under writeback too.
        self.pinned != Some(folio)
            && !self.locked.contains(&folio)
            && !self.folio_test_writeback(folio)
    }
}
