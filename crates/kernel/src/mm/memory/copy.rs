//! Page-table copy at fork (mm/memory.c: copy_page_range(),
//! vma_needs_copy(), copy_pte_range(), copy_present_ptes(),
//! __copy_present_ptes()), Linux 6.18.
//!
//! Tables are copied only for VMAs with an anon_vma. Present entries of a
//! large folio are copied as a batch with one rmap call; in COW mappings
//! writable entries are write-protected in parent and child (with
//! `wrprotect_ptes()`), and the child's entries are old. Not modelled:
//! pinned pages (copied eagerly by the kernel), uffd-wp, swap entries.

use crate::arch::{Arch, FolioSpan};
use crate::include::linux::pgtable::{pte_index, PAGE_SIZE};
use crate::mm::mmap::{Vma, MM_ANONPAGES, MM_SWAPENTS, NR_MM_COUNTERS};
use crate::mm::pgtable_generic::TableId;
use crate::{KResult, Kernel, MmId};

impl<A: Arch> Kernel<A> {
    /// `copy_page_range()` for one VMA.
    pub(crate) fn copy_page_range(&mut self, dst: MmId, src: MmId, vma: &Vma) -> KResult<()> {
        if vma.anon_vma.is_none() {
            return Ok(()); // vma_needs_copy(): the child faults it in again.
        }
        let mut addr = vma.vm_start;
        while addr < vma.vm_end {
            let (spmd, next) = self.pmd_range_step(src, addr, vma.vm_end);
            if let Some(spmd) = spmd {
                let pmdval = self.pmdp_get(spmd);
                if A::pmd_trans_huge(pmdval) {
                    // copy_huge_pmd() copies anonymous PMDs only; the child
                    // faults page-cache THPs in again.
                    if vma.is_anonymous() {
                        self.copy_huge_pmd(src, dst, vma, addr)?;
                    }
                } else if let Some(stid) = self.entry_table(pmdval) {
                    self.copy_pte_range(dst, vma, stid, addr, next);
                }
            }
            addr = next;
        }
        Ok(())
    }

    /// `copy_pte_range()`: the child's RSS deltas gather in a local `rss[]`
    /// applied once at the end of the pass (`add_mm_rss_vec()`).
    fn copy_pte_range(&mut self, dst: MmId, vma: &Vma, stid: TableId, start: u64, end: u64) {
        let mut idx = pte_index(start);
        let end_idx = idx + ((end - start) / PAGE_SIZE) as usize;
        let mut dtid = None;
        let mut rss = [0i64; NR_MM_COUNTERS];
        while idx < end_idx {
            let pte = A::ptep_get(self.pt.table(stid), idx, &mut self.vmstat.sim);
            if pte == 0 {
                idx += 1;
                continue;
            }
            let addr = start + ((idx - pte_index(start)) as u64) * PAGE_SIZE;
            if !A::pte_present(pte) {
                let dt = self.child_table(dst, addr, &mut dtid);
                self.copy_nonpresent_pte((stid, dt), idx, pte, &mut rss);
                idx += 1;
                continue;
            }
            let dt = match dtid {
                Some(t) => t,
                None => {
                    let pmd = self.pmd_alloc(dst, addr);
                    let t = self.pte_alloc(pmd).expect("child table");
                    dtid = Some(t);
                    t
                }
            };
            idx += self.copy_present_ptes(dst, vma, (stid, dt), (idx, end_idx), pte, &mut rss);
        }
        self.add_mm_rss_vec(dst, &rss);
    }

    fn child_table(&mut self, dst: MmId, addr: u64, dtid: &mut Option<TableId>) -> TableId {
        if let Some(t) = *dtid {
            return t;
        }
        let pmd = self.pmd_alloc(dst, addr);
        let t = self.pte_alloc(pmd).expect("child table");
        *dtid = Some(t);
        t
    }

    /// `copy_nonpresent_pte()` for a swap entry: one more reference, the
    /// parent's entry loses its exclusive marker, the child gets a copy.
    fn copy_nonpresent_pte(
        &mut self,
        (stid, dtid): (TableId, TableId),
        idx: usize,
        pte: u64,
        rss: &mut [i64; NR_MM_COUNTERS],
    ) {
        let (ty, offset) = A::pte_to_swp_entry(pte);
        self.swap_duplicate(crate::mm::swapfile::SwpEntry { ty, offset }, 1);
        let shared = A::pte_swp_clear_exclusive(pte);
        if shared != pte {
            self.pt.set(stid, idx, shared);
            self.vmstat.sim.pte_write += 1;
        }
        rss[MM_SWAPENTS] += 1;
        self.pt.set(dtid, idx, shared);
        self.vmstat.sim.pte_write += 1;
    }

    /// `copy_present_ptes()`: returns the number of entries copied.
    fn copy_present_ptes(
        &mut self,
        dst: MmId,
        vma: &Vma,
        t: (TableId, TableId),
        (idx, end_idx): (usize, usize),
        pte: u64,
        rss: &mut [i64; NR_MM_COUNTERS],
    ) -> usize {
        let (stid, dtid) = t;
        let mut pte = pte;
        let (nr, span) = match self.vm_normal_page(pte) {
            None => (1, FolioSpan::NONE),
            Some(page) => {
                let folio = self.mem.page_folio(page);
                let nr = if self.mem.folio_test_large(folio) {
                    // FPB_MERGE_WRITE, and FPB_RESPECT_DIRTY for private VMAs.
                    self.folio_pte_batch(stid, idx, folio, end_idx - idx, !vma.is_shared())
                } else {
                    1
                };
                if self.mem.folio_test_anon(folio) {
                    self.folio_dup_anon_rmap_ptes(folio, page, nr as u64, dst);
                    rss[MM_ANONPAGES] += nr as i64;
                } else {
                    self.folio_add_file_rmap_ptes(folio, page, nr as u64, dst);
                    rss[self.mm_counter_file(folio)] += nr as i64;
                }
                (
                    nr,
                    FolioSpan {
                        pfn: folio,
                        nr: self.mem.folio_nr_pages(folio),
                    },
                )
            }
        };
        // FPB_MERGE_WRITE: the batch counts as writable if any entry is.
        let any_write = self.pt.table(stid)[idx..idx + nr]
            .iter()
            .any(|&e| A::pte_write(e));
        if any_write {
            pte = A::pte_mkwrite(pte);
        }
        if vma.is_cow_mapping() && any_write {
            A::wrprotect_ptes(self.pt.table_mut(stid), idx, nr, &mut self.vmstat.sim);
            pte = A::pte_wrprotect(pte);
        }
        if vma.is_shared() {
            pte = A::pte_mkclean(pte);
        }
        pte = A::pte_mkold(pte);
        A::set_ptes(
            self.pt.table_mut(dtid),
            idx,
            pte,
            nr,
            span,
            &mut self.vmstat.sim,
        );
        nr
    }
}
