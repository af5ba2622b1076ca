//! What `/proc/PID/pagemap`, `PAGEMAP_SCAN` and `/proc/kpageflags` return,
//! as the kernel encodes it (fs/proc/task_mmu.c `PM_*`,
//! include/uapi/linux/fs.h `PAGE_IS_*` and `struct page_region`,
//! include/uapi/linux/kernel-page-flags.h `KPF_*`), and the counters a
//! pagemap step reports from those words. The kernel model produces these
//! words and the native engine reads them from the host; both report them
//! through [`pagemap_step_counters`].

use std::collections::BTreeMap;

use crate::PAGE_SIZE;

/// `PM_PFRAME_MASK`: bits 0-54, the PFN or swap type and offset.
pub const PM_PFRAME_MASK: u64 = (1 << 55) - 1;
/// `PM_SOFT_DIRTY`
pub const PM_SOFT_DIRTY: u64 = 1 << 55;
/// `PM_MMAP_EXCLUSIVE`
pub const PM_MMAP_EXCLUSIVE: u64 = 1 << 56;
/// `PM_UFFD_WP`
pub const PM_UFFD_WP: u64 = 1 << 57;
/// `PM_GUARD_REGION`
pub const PM_GUARD_REGION: u64 = 1 << 58;
/// `PM_FILE`
pub const PM_FILE: u64 = 1 << 61;
/// `PM_SWAP`
pub const PM_SWAP: u64 = 1 << 62;
/// `PM_PRESENT`
pub const PM_PRESENT: u64 = 1 << 63;
/// `MAX_SWAPFILES_SHIFT`: the swap type's width in a swap frame.
pub const MAX_SWAPFILES_SHIFT: u32 = 5;
/// `PM_ENTRY_BYTES`
pub const PM_ENTRY_BYTES: u64 = 8;

/// `PAGE_IS_*` categories of PAGEMAP_SCAN (include/uapi/linux/fs.h).
pub mod page_is {
    pub const WPALLOWED: u64 = 1 << 0;
    pub const WRITTEN: u64 = 1 << 1;
    pub const FILE: u64 = 1 << 2;
    pub const PRESENT: u64 = 1 << 3;
    pub const SWAPPED: u64 = 1 << 4;
    pub const PFNZERO: u64 = 1 << 5;
    pub const HUGE: u64 = 1 << 6;
    pub const SOFT_DIRTY: u64 = 1 << 7;
    pub const GUARD: u64 = 1 << 8;
    /// Every category, with names for reports.
    pub const ALL: [(u64, &str); 9] = [
        (WPALLOWED, "wpallowed"),
        (WRITTEN, "written"),
        (FILE, "file"),
        (PRESENT, "present"),
        (SWAPPED, "swapped"),
        (PFNZERO, "pfnzero"),
        (HUGE, "huge"),
        (SOFT_DIRTY, "soft_dirty"),
        (GUARD, "guard"),
    ];
}

/// One region of a PAGEMAP_SCAN result (`struct page_region`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRegion {
    pub start: u64,
    pub end: u64,
    pub categories: u64,
}

/// The `KPF_*` bit numbers (include/uapi/linux/kernel-page-flags.h and
/// include/linux/kernel-page-flags.h).
pub mod kpf {
    pub const REFERENCED: u32 = 2;
    pub const UPTODATE: u32 = 3;
    pub const DIRTY: u32 = 4;
    pub const LRU: u32 = 5;
    pub const ACTIVE: u32 = 6;
    pub const WRITEBACK: u32 = 8;
    pub const RECLAIM: u32 = 9;
    pub const BUDDY: u32 = 10;
    pub const MMAP: u32 = 11;
    pub const ANON: u32 = 12;
    pub const SWAPCACHE: u32 = 13;
    pub const SWAPBACKED: u32 = 14;
    pub const COMPOUND_HEAD: u32 = 15;
    pub const COMPOUND_TAIL: u32 = 16;
    pub const THP: u32 = 22;
    pub const ZERO_PAGE: u32 = 24;
    pub const PGTABLE: u32 = 26;
    pub const RESERVED: u32 = 32;
    pub const OWNER_2: u32 = 34;
}

/// Names of the kpageflags bits the pagemap step reports, in bit order.
pub const KPF_NAMES: [(u32, &str); 17] = [
    (kpf::REFERENCED, "referenced"),
    (kpf::UPTODATE, "uptodate"),
    (kpf::DIRTY, "dirty"),
    (kpf::LRU, "lru"),
    (kpf::ACTIVE, "active"),
    (kpf::WRITEBACK, "writeback"),
    (kpf::RECLAIM, "reclaim"),
    (kpf::MMAP, "mmap"),
    (kpf::ANON, "anon"),
    (kpf::SWAPCACHE, "swapcache"),
    (kpf::SWAPBACKED, "swapbacked"),
    (kpf::COMPOUND_HEAD, "compound_head"),
    (kpf::COMPOUND_TAIL, "compound_tail"),
    (kpf::THP, "thp"),
    (kpf::ZERO_PAGE, "zero_page"),
    (kpf::RESERVED, "reserved"),
    (kpf::OWNER_2, "owner_2"),
];
/// The decoded summary of pagemap entries, keyed as the pagemap step
/// reports it: `entries`, `pages_present`, `pages_swapped`, `pages_file`,
/// `pages_exclusive`, `pages_soft_dirty`, `pages_uffd_wp`, `pages_guard`
/// (always present, 0 included) and `swap_offset_log2/<k>` (swap entries
/// whose offset is in [2^k, 2^(k+1)), only non-zero buckets).
pub fn pagemap_summary(entries: &[u64]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut n = [0u64; 7];
    for &e in entries {
        for (i, bit) in [
            PM_PRESENT,
            PM_SWAP,
            PM_FILE,
            PM_MMAP_EXCLUSIVE,
            PM_SOFT_DIRTY,
            PM_UFFD_WP,
            PM_GUARD_REGION,
        ]
        .into_iter()
        .enumerate()
        {
            n[i] += (e & bit != 0) as u64;
        }
        if e & PM_SWAP != 0 && e & PM_GUARD_REGION == 0 {
            let off = (e & PM_PFRAME_MASK) >> MAX_SWAPFILES_SHIFT;
            if off > 0 {
                let k = 63 - off.leading_zeros();
                *out.entry(format!("swap_offset_log2/{k:02}")).or_insert(0) += 1;
            }
        }
    }
    out.insert("entries".into(), entries.len() as u64);
    for (key, v) in [
        "pages_present",
        "pages_swapped",
        "pages_file",
        "pages_exclusive",
        "pages_soft_dirty",
        "pages_uffd_wp",
        "pages_guard",
    ]
    .into_iter()
    .zip(n)
    {
        out.insert(key.into(), v);
    }
    out
}

/// The counters of one pagemap step named `name` (docs/scenarios.md),
/// without the `pagemap/<name>/` prefix: the [`pagemap_summary`] of
/// `entries`, `read_calls` (read(2) calls of `read_size` bytes), with a
/// PAGEMAP_SCAN result (start, end, categories) `scan/regions` and
/// `scan/<category>` (pages in regions with that category), with
/// kpageflags words of the present pages `kpf/<flag>` (pages with it).
pub fn pagemap_step_counters(
    read_size: u64,
    entries: &[u64],
    scan: Option<&[(u64, u64, u64)]>,
    kpageflags: Option<&[u64]>,
) -> BTreeMap<String, u64> {
    let mut out = pagemap_summary(entries);
    let bytes = entries.len() as u64 * PM_ENTRY_BYTES;
    out.insert("read_calls".into(), bytes.div_ceil(read_size.max(1)));
    if let Some(regions) = scan {
        out.insert("scan/regions".into(), regions.len() as u64);
        for (bit, name) in page_is::ALL {
            let pages: u64 = regions
                .iter()
                .filter(|r| r.2 & bit != 0)
                .map(|r| (r.1 - r.0) / PAGE_SIZE)
                .sum();
            out.insert(format!("scan/{name}"), pages);
        }
    }
    if let Some(flags) = kpageflags {
        for (bit, name) in KPF_NAMES {
            let n = flags.iter().filter(|&&f| f & (1 << bit) != 0).count();
            out.insert(format!("kpf/{name}"), n as u64);
        }
    }
    out
}

/// Bits 0-54 of a present entry cleared (PFNs differ between runs and
/// machines); swap frames are kept.
#[inline]
pub fn pagemap_mask_pfn(e: u64) -> u64 {
    if e & PM_PRESENT != 0 {
        e & !PM_PFRAME_MASK
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_counters_decode_the_entry_bits() {
        // A present exclusive anon page, a present file page, a swap entry
        // of type 1 at offset 5 (bits 0-4 type, 5-54 offset), a hole.
        let entries = [
            PM_PRESENT | PM_MMAP_EXCLUSIVE | 1234,
            PM_PRESENT | PM_FILE | 99,
            PM_SWAP | (5 << MAX_SWAPFILES_SHIFT) | 1,
            0,
        ];
        let scan = [(0x1000, 0x3000, page_is::PRESENT | page_is::WRITTEN)];
        let flags = [1 << kpf::ANON | 1 << kpf::LRU, 1 << kpf::LRU];
        let c = pagemap_step_counters(16, &entries, Some(&scan), Some(&flags));
        let want = [
            ("entries", 4),
            ("read_calls", 2), // 32 bytes in reads of 16
            ("pages_present", 2),
            ("pages_file", 1),
            ("pages_exclusive", 1),
            ("pages_swapped", 1),
            ("pages_soft_dirty", 0),
            ("swap_offset_log2/02", 1), // offset 5 is in [4, 8)
            ("scan/regions", 1),
            ("scan/present", 2),
            ("scan/huge", 0),
            ("kpf/lru", 2),
            ("kpf/anon", 1),
        ];
        for (k, v) in want {
            assert_eq!(c.get(k), Some(&v), "{k}");
        }
        assert_eq!(pagemap_mask_pfn(entries[0]), PM_PRESENT | PM_MMAP_EXCLUSIVE);
        assert_eq!(pagemap_mask_pfn(entries[2]), entries[2]);
    }
}
