//! `/proc/kpageflags` and `/proc/kpagecount` (fs/proc/page.c:
//! stable_page_flags(), get_kpage_count(), kpage_read()), Linux 6.18 with
//! CONFIG_PAGE_MAPCOUNT (the validation kernel's configuration).
//!
//! Folio flags are read from the head page, so every page of a folio shows
//! the same LRU/active/referenced/dirty/uptodate bits; the compound bits say
//! where the page sits in its folio. Every large folio of the model is
//! "large rmappable" (anon mTHP/THP and large page-cache folios), so it
//! shows KPF_THP; the huge zero folio shows KPF_ZERO_PAGE + KPF_THP (as
//! observed on 6.18.44), the small zero page KPF_ZERO_PAGE + KPF_RESERVED,
//! the kernel's own pages of `machine.unmanaged` / `machine.boot_used`
//! KPF_RESERVED (the kernel's show what they hold: slab, reserved, ...).
//! Not modelled: slab, offline, hwpoison, mlock/unevictable, idle, KSM,
//! writeback (I/O completes at once), the private/arch bits; PFNs beyond
//! the simulated memory read as 0, as offline PFNs do.

use crate::arch::Arch;
use crate::include::linux::mm_types::{
    PG_ACTIVE, PG_ANON, PG_ANON_EXCLUSIVE, PG_BUDDY, PG_DIRTY, PG_HEAD, PG_LRU, PG_READAHEAD,
    PG_REFERENCED, PG_SWAPBACKED, PG_SWAPCACHE, PG_TABLE, PG_UPTODATE,
};
use crate::include::linux::pgtable::{Pfn, HPAGE_PMD_NR};
use crate::Kernel;
pub use foliosim_uapi::pagemap::{kpf, KPF_NAMES};

fn bit(on: bool, b: u32) -> u64 {
    (on as u64) << b
}

impl<A: Arch> Kernel<A> {
    /// `stable_page_flags()`: the kpageflags word of `pfn` (0 beyond the
    /// simulated memory, as `kpage_read()` gives for PFNs without a page).
    pub fn stable_page_flags(&self, pfn: Pfn) -> u64 {
        if pfn.0 as u64 >= self.mem.nr_pages() {
            return 0;
        }
        if pfn == self.zero_pfn {
            return bit(true, kpf::ZERO_PAGE) | bit(true, kpf::RESERVED);
        }
        if self.buddy.is_boot_page(&self.mem, pfn) {
            // machine.lowmem_reserve: free pages of a lower zone.
            if (self.buddy.boot.end - pfn.0) as u64 <= self.buddy.lowmem {
                return bit(true, kpf::BUDDY);
            }
            // machine.unmanaged and machine.boot_used, as reserved pages.
            return bit(true, kpf::RESERVED);
        }
        let own = self.mem.flags(pfn);
        if own & PG_BUDDY != 0 {
            return bit(true, kpf::BUDDY);
        }
        if own & PG_TABLE != 0 {
            return bit(true, kpf::PGTABLE);
        }
        let folio = self.mem.page_folio(pfn);
        let k = self.mem.flags(folio);
        let large = self.mem.folio_test_large(folio);
        let huge_zero = self
            .huge_zero_folio
            .is_some_and(|z| pfn.0 >= z.0 && (pfn.0 - z.0) < HPAGE_PMD_NR as u32);
        let anon = k & PG_ANON != 0;
        let mut u = bit(self.mem.folio_mapped(folio), kpf::MMAP) | bit(anon, kpf::ANON);
        if folio == pfn {
            u |= bit(k & PG_HEAD != 0 || (large && huge_zero), kpf::COMPOUND_HEAD);
        } else {
            u |= bit(true, kpf::COMPOUND_TAIL);
        }
        if huge_zero {
            u |= bit(true, kpf::ZERO_PAGE) | bit(true, kpf::THP);
        } else if large {
            u |= bit(true, kpf::THP);
        }
        for (flag, b) in [
            (PG_DIRTY, kpf::DIRTY),
            (PG_UPTODATE, kpf::UPTODATE),
            (PG_LRU, kpf::LRU),
            (PG_REFERENCED, kpf::REFERENCED),
            (PG_ACTIVE, kpf::ACTIVE),
            (PG_READAHEAD, kpf::RECLAIM),
            (PG_SWAPBACKED, kpf::SWAPBACKED),
        ] {
            u |= bit(k & flag != 0, b);
        }
        u |= bit(
            k & (PG_SWAPBACKED | PG_SWAPCACHE) == PG_SWAPBACKED | PG_SWAPCACHE,
            kpf::SWAPCACHE,
        );
        u |= bit(self.folio_test_writeback(folio), kpf::WRITEBACK);
        // PG_owner_2: PG_anon_exclusive on an anon folio's head,
        // PG_mappedtodisk on a page-cache folio.
        u |= bit(k & PG_ANON_EXCLUSIVE != 0, kpf::OWNER_2);
        u
    }

    /// `get_kpage_count()` with CONFIG_PAGE_MAPCOUNT: the precise mapcount
    /// of the page (its PTE mappings plus the folio's PMD mappings); 0 for
    /// the zero pages and for PFNs without a folio.
    pub fn kpagecount(&self, pfn: Pfn) -> u64 {
        if pfn.0 as u64 >= self.mem.nr_pages()
            || pfn == self.zero_pfn
            || self.buddy.is_boot_page(&self.mem, pfn)
            || self.mem.test(pfn, PG_BUDDY | PG_TABLE)
        {
            return 0;
        }
        if self
            .huge_zero_folio
            .is_some_and(|z| pfn.0 >= z.0 && (pfn.0 - z.0) < HPAGE_PMD_NR as u32)
        {
            return 0;
        }
        self.mem.precise_page_mapcount(pfn) as u64
    }
}
