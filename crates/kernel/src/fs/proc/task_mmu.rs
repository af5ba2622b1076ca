//! What `/proc/PID/pagemap` + `/proc/kpageflags` tell about a range
//! (fs/proc/task_mmu.c: pagemap_pmd_range(), pte_to_pagemap_entry()),
//! reduced to the folio-size histogram the outputs report.
//!
//! Buckets: `4kB`, `8kB` ... `2048kB` count the distinct folios with at least
//! one page mapped in the range (a PMD mapping counts its folio once);
//! `zero` counts zero-page entries and `huge_zero` huge-zero PMDs; the
//! pagemap summary adds `pages_present`, `pages_swapped`, `pages_file` and
//! `pages_exclusive`. Raw pagemap entries and PAGEMAP_SCAN are a later issue.

use std::collections::BTreeMap;

use crate::arch::Arch;
use crate::include::linux::pgtable::{pmd_addr_end, pte_index, size_label, Pfn, PAGE_SIZE};
use crate::{Kernel, MmId};

impl<A: Arch> Kernel<A> {
    /// The folio-size histogram of the mapped pages of `[start, end)`.
    pub fn folio_histogram(&self, mm: MmId, start: u64, end: u64) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        // Order-0 folios cannot repeat within one range of one mm; large ones
        // can (a COW'd page splits a folio's PTEs into runs).
        let mut seen_large: std::collections::HashSet<u32> = std::collections::HashSet::new();
        let mut count = |key: String, folio: Option<Pfn>| {
            if let Some(f) = folio {
                if self.mem.folio_test_large(f) && !seen_large.insert(f.0) {
                    return;
                }
            }
            *out.entry(key).or_insert(0) += 1;
        };
        let mut addr = start;
        while addr < end {
            let next = pmd_addr_end(addr, end);
            let Some(pmd) = self.walk_to_pmd(mm, addr) else {
                addr = next;
                continue;
            };
            let pmdval = self.pmdp_get(pmd);
            if A::pmd_trans_huge(pmdval) {
                if A::pte_special(pmdval) {
                    count("huge_zero".into(), None);
                } else {
                    let folio = self.mem.page_folio(A::pte_pfn(pmdval));
                    count(size_label(self.mem.order(folio)), Some(folio));
                }
            } else if let Some(tid) = self.entry_table(pmdval) {
                let first = pte_index(addr);
                let t = &self.pt.table(tid)[first..first + ((next - addr) / PAGE_SIZE) as usize];
                for &e in t {
                    if !A::pte_present(e) {
                        continue;
                    }
                    if A::pte_special(e) {
                        count("zero".into(), None);
                    } else {
                        let folio = self.mem.page_folio(A::pte_pfn(e));
                        count(size_label(self.mem.order(folio)), Some(folio));
                    }
                }
            }
            addr = next;
        }
        self.pagemap_summary(mm, start, end, &mut out);
        out
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
            let next = pmd_addr_end(addr, end);
            let pages = (next - addr) / PAGE_SIZE;
            let pmdval = self
                .walk_to_pmd(mm, addr)
                .map(|p| self.pmdp_get(p))
                .unwrap_or(0);
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
