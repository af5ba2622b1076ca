//! Swap-in (mm/memory.c: do_swap_page(), alloc_swap_folio(),
//! can_swapin_thp(); mm/swap_state.c: swap_cache_get_folio();
//! mm/page_io.c: swap_read_folio()), Linux 6.18.
//!
//! A swap-cache hit maps the cached folio (minor fault). A miss reads the
//! slot (a major fault): on a SWP_SYNCHRONOUS_IO device with swap count 1
//! the swap cache is skipped and an mTHP order may be used (allowed and
//! suitable for the VMA, offset congruent with the address, contiguous
//! swap PTEs of count 1 with one zeromap state, none cached; zswap never
//! enabled); otherwise `swapin_readahead()` (mm/swap_state.rs) reads an
//! order-0 folio into the swap cache with its readahead window. A large
//! folio found in the swap cache is mapped whole by one fault when its
//! range lies in the VMA and the PMD block and its PTEs are its
//! consecutive swap entries (`swap_pte_batch()`), else page by page.
//! The swap PTEs' exclusive markers decide writability; a write fault on a
//! shared page goes on to do_wp_page(). New folios are charged to the
//! memory cgroup recorded for the slot. Not modelled: the
//! swpin_fallback(_charge) counters.

use crate::arch::{Arch, FolioSpan, PteProt};
use crate::include::linux::mm_types::{PG_ANON_EXCLUSIVE, PG_DIRTY, PG_LRU, PG_SWAPCACHE};
use crate::include::linux::pgtable::{
    align_down, pmd_addr_end, pte_index, Pfn, HPAGE_PMD_ORDER, PAGE_SIZE, PMD_SIZE,
};
use crate::mm::memory::{Vmf, VM_FAULT_MAJOR, VM_FAULT_OOM, VM_FAULT_SIGBUS};
use crate::mm::mmap::{MM_ANONPAGES, MM_SWAPENTS, VM_WRITE};
use crate::mm::swapfile::SwpEntry;
use crate::Kernel;

impl<A: Arch> Kernel<A> {
    /// `do_swap_page()`
    pub(crate) fn do_swap_page(&mut self, vmf: &mut Vmf) -> u32 {
        let (ty, offset) = A::pte_to_swp_entry(vmf.orig_pte);
        if ty as usize >= self.swap.len() {
            return VM_FAULT_SIGBUS;
        }
        let entry = SwpEntry { ty, offset };
        self.vmstat.sim.swapcache_lookup += 1;
        let cached = self.swap[ty as usize].table.page(offset);
        let mut ret = 0;
        let (folio, page, nr, addr) = if cached != crate::mm::filemap::NO_PAGE {
            let page = Pfn(cached);
            let folio = self.mem.page_folio(page);
            self.swap_update_readahead(folio, vmf);
            let (nr, addr) = self.swapcache_folio_batch(vmf, folio, page, entry);
            (folio, page, nr, addr)
        } else {
            ret |= VM_FAULT_MAJOR;
            self.count_pgmajfault();
            let Some((folio, nr)) = self.swapin_new_folio(vmf, entry) else {
                return VM_FAULT_OOM;
            };
            let addr = align_down(vmf.address, nr * PAGE_SIZE);
            let page = folio.plus((vmf.address - addr) / PAGE_SIZE);
            (folio, page, nr, addr)
        };
        self.swapin_map(vmf, folio, page, nr, addr, entry);
        if vmf.is_write()
            && !A::pte_write(
                self.pt
                    .get(vmf.pte_table.expect("table"), pte_index(vmf.address)),
            )
        {
            vmf.orig_pte = self
                .pt
                .get(vmf.pte_table.expect("table"), pte_index(vmf.address));
            return ret | self.do_wp_page(vmf);
        }
        ret
    }

    /// The pages of a large swap-cache folio that one fault maps, as
    /// `do_swap_page()` decides for `folio_test_large(folio) &&
    /// folio_test_swapcache(folio)`: the whole folio from its first page
    /// when that range lies inside the VMA and the faulting PMD block and
    /// its PTEs are the folio's consecutive swap entries with the faulting
    /// PTE's bits (the exclusive marker) and one swap cgroup
    /// (`swap_pte_batch()`); else only the faulting page. Returns (number
    /// of pages, first address).
    fn swapcache_folio_batch(
        &self,
        vmf: &Vmf,
        folio: Pfn,
        page: Pfn,
        entry: SwpEntry,
    ) -> (u64, u64) {
        let nr = self.mem.folio_nr_pages(folio);
        if nr == 1 {
            return (1, vmf.address);
        }
        let idx = page.0 - folio.0;
        let folio_start = vmf.address - idx as u64 * PAGE_SIZE;
        let folio_end = folio_start + nr * PAGE_SIZE;
        let pmd_start = vmf.address & !(PMD_SIZE - 1);
        if folio_start < pmd_start.max(vmf.vma.vm_start)
            || folio_end > pmd_addr_end(vmf.address, vmf.vma.vm_end)
        {
            return (1, vmf.address);
        }
        let first = SwpEntry {
            ty: entry.ty,
            offset: entry.offset - idx as u64,
        };
        if self.swap_pte_batch(vmf, pte_index(folio_start), first, nr) {
            (nr, folio_start)
        } else {
            (1, vmf.address)
        }
    }

    /// A new folio for a swap-cache miss: on the skip-swapcache path a
    /// folio of the order `alloc_swap_folio()` chooses, read outside the
    /// swap cache; otherwise the order-0 swap-cache folio that
    /// `swapin_readahead()` read with its window.
    fn swapin_new_folio(&mut self, vmf: &mut Vmf, entry: SwpEntry) -> Option<(Pfn, u64)> {
        let si = &self.swap[entry.ty as usize];
        let skip_cache = si.synchronous() && si.swap_count(entry.offset) == 1;
        if !skip_cache {
            let folio = self.swapin_readahead(vmf, entry)?;
            return Some((folio, 1));
        }
        let folio = self.alloc_swap_folio(vmf, entry)?;
        let nr = self.mem.folio_nr_pages(folio);
        self.swap_read_folio(folio, entry);
        // do_swap_page() looks up the slot's shadow itself
        // (`swap_cache_get_shadow()`) before the folio joins the LRU.
        self.mem
            .set(folio, crate::include::linux::mm_types::PG_SWAPBACKED);
        self.swapin_refault(folio, entry);
        Some((folio, nr))
    }

    /// `alloc_swap_folio()`: the highest usable order whose folio can be
    /// allocated and charged, else order 0. Charged to the cgroup the slot
    /// was swapped out from; None if memory or the charge failed.
    fn alloc_swap_folio(&mut self, vmf: &Vmf, entry: SwpEntry) -> Option<Pfn> {
        use crate::mm::memcontrol::{vma_thp_gfp, ChargeGfp};
        let mut orders = self.swapin_orders(vmf, entry);
        while orders != 0 {
            let o = 31 - orders.leading_zeros();
            orders &= !(1 << o);
            if o == 0 {
                break;
            }
            if let Some(folio) = self.folio_alloc(o) {
                if self.mem_cgroup_swapin_charge_folio(folio, entry, vma_thp_gfp(&vmf.vma)) {
                    return Some(folio);
                }
                self.folio_free(folio);
            }
        }
        let folio = self.folio_alloc(0)?;
        if !self.mem_cgroup_swapin_charge_folio(folio, entry, ChargeGfp::Kernel) {
            self.folio_free(folio);
            return None;
        }
        Some(folio)
    }

    /// `alloc_swap_folio()`'s orders (none once zswap was enabled,
    /// `zswap_never_enabled()`): from the highest allowed, suitable
    /// order whose aligned block holds contiguous, unshared, uncached swap
    /// entries of one zeromap state, one exclusive marker and one swap
    /// cgroup (`can_swapin_thp()`, offset congruent to the address) down;
    /// 0 if none.
    fn swapin_orders(&mut self, vmf: &Vmf, entry: SwpEntry) -> u32 {
        // A large folio may lie partly in zswap: once zswap was on, order 0
        // only.
        if self.zswap.ever_enabled() {
            return 0;
        }
        let allowed = self.thp_vma_allowable_orders(&vmf.vma) & ((1 << HPAGE_PMD_ORDER) - 1);
        let mut orders =
            crate::mm::huge_memory::thp_vma_suitable_orders(&vmf.vma, vmf.address, allowed);
        while orders != 0 {
            let o = 31 - orders.leading_zeros();
            orders &= !(1 << o);
            let nr = 1u64 << o;
            let idx0 = (vmf.address / PAGE_SIZE) & !(nr - 1);
            if (entry.offset & (nr - 1)) != ((vmf.address / PAGE_SIZE) & (nr - 1)) {
                continue;
            }
            let first = SwpEntry {
                ty: entry.ty,
                offset: entry.offset - ((vmf.address / PAGE_SIZE) - idx0),
            };
            let start = pte_index(align_down(vmf.address, nr * PAGE_SIZE));
            // can_swapin_thp(): besides the batch, every slot has count 1,
            // none is in the swap cache, and one zeromap state for all.
            let si = &self.swap[entry.ty as usize];
            let zero = si.zero(first.offset);
            let ok = self.swap_pte_batch(vmf, start, first, nr)
                && (first.offset..first.offset + nr).all(|off| {
                    si.swap_count(off) == 1
                        && si.swap_map[off as usize] & crate::mm::swapfile::SWAP_HAS_CACHE == 0
                        && si.zero(off) == zero
                });
            if ok {
                return orders | (1 << o);
            }
        }
        0
    }

    /// `swap_pte_batch()`: the `nr` PTEs of the faulting table from index
    /// `start` hold the consecutive swap entries from `first`, each with the
    /// faulting PTE's exclusive marker, and their slots were swapped out
    /// from one cgroup.
    fn swap_pte_batch(&self, vmf: &Vmf, start: usize, first: SwpEntry, nr: u64) -> bool {
        let tid = vmf.pte_table.expect("table");
        let marker = A::pte_swp_exclusive(vmf.orig_pte);
        let si = &self.swap[first.ty as usize];
        let memcg = si.memcg(first.offset);
        (0..nr).all(|i| {
            let pte = self.pt.get(tid, start + i as usize);
            if pte == 0 || A::pte_present(pte) {
                return false;
            }
            let (t, off) = A::pte_to_swp_entry(pte);
            t == first.ty
                && off == first.offset + i
                && A::pte_swp_exclusive(pte) == marker
                && si.memcg(off) == memcg
        })
    }

    /// Map `nr` pages of the swapped-in folio from `addr` and drop the swap
    /// references (`swap_free_nr()`), as the tail of `do_swap_page()` does:
    /// one exclusivity decision for the whole batch — the faulting swap
    /// PTE's marker, or a fresh folio never exposed to the swap cache, or a
    /// folio whose only reference is ours once `should_try_to_free_swap()`
    /// let `folio_free_swap()` drop the swap cache's.
    fn swapin_map(
        &mut self,
        vmf: &mut Vmf,
        folio: Pfn,
        page: Pfn,
        nr: u64,
        addr: u64,
        entry: SwpEntry,
    ) {
        let tid = vmf.pte_table.expect("table");
        let start = pte_index(addr);
        let first_entry = SwpEntry {
            ty: entry.ty,
            offset: entry.offset - (vmf.address - addr) / PAGE_SIZE,
        };
        let in_cache = self.mem.test(folio, PG_SWAPCACHE);
        let mapcount = self.mem.folio_mapcount(folio);
        let folio_nr = self.mem.folio_nr_pages(folio);
        // should_try_to_free_swap(): swap more than half full (the
        // machine's, or the cgroup's memory.swap.max), or a write
        // fault on a folio held only by the swap cache and this fault
        // (folio_ref_count() == 1 + folio_nr_pages(): no page of it mapped);
        // folio_free_swap() then succeeds if no other swap PTE references
        // the folio's slots.
        let try_free =
            in_cache && (self.mem_cgroup_swap_full(folio) || (vmf.is_write() && mapcount == 0));
        let frees_cache = try_free && {
            let e = self.folio_swap(folio).expect("swap cache");
            let si = &self.swap[e.ty as usize];
            (e.offset..e.offset + folio_nr).all(|off| {
                let ours = off >= first_entry.offset && off < first_entry.offset + nr;
                si.swap_count(off) == u8::from(ours)
            })
        };
        // KSM is not modelled; neither is SWP_STABLE_WRITES writeback (the
        // model's writeback completes at once).
        let exclusive =
            A::pte_swp_exclusive(vmf.orig_pte) || !in_cache || (frees_cache && mapcount == 0);
        // A folio just read (into the swap cache or not) is not anon yet.
        let fresh = !self.mem.folio_test_anon(folio);
        let first_page = if nr > 1 { folio } else { page };
        if fresh {
            self.folio_add_new_anon_rmap(folio, &vmf.vma, addr, false, vmf.mm);
            // A swap-cache folio went on the LRU when it was read.
            if !self.mem.test(folio, PG_LRU) {
                self.folio_add_lru(folio);
            }
        } else {
            self.folio_add_anon_rmap_ptes(folio, first_page, nr, vmf.mm);
        }
        // RMAP_EXCLUSIVE for the whole batch, or for none of it.
        for i in 0..nr {
            if exclusive {
                self.mem.set(first_page.plus(i), PG_ANON_EXCLUSIVE);
            } else {
                self.mem.clear(first_page.plus(i), PG_ANON_EXCLUSIVE);
            }
        }
        self.add_mm_counter(vmf.mm, MM_ANONPAGES, nr as i64);
        self.add_mm_counter(vmf.mm, MM_SWAPENTS, -(nr as i64));
        let w = exclusive && vmf.vma.vm_flags & VM_WRITE != 0;
        let prot = PteProt {
            write: w,
            dirty: w && vmf.is_write(),
            ..Self::vma_page_prot(&vmf.vma)
        };
        for i in 0..nr {
            self.pt.set(tid, start + i as usize, 0);
        }
        let span = FolioSpan {
            pfn: folio,
            nr: folio_nr,
        };
        A::set_ptes(
            self.pt.table_mut(tid),
            start,
            A::pfn_pte(first_page, prot),
            nr as usize,
            span,
            &mut self.vmstat.sim,
        );
        if w && vmf.is_write() {
            self.mem.set(folio, PG_DIRTY);
        }
        self.swap_free_nr(first_entry, nr);
        if frees_cache {
            self.folio_free_swap(folio);
        }
    }
}
