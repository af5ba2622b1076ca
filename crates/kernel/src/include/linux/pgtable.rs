//! Page-table geometry and address helpers (include/linux/pgtable.h,
//! include/asm-generic/pgtable-nop4d.h, arch/*/include/asm/pgtable_types.h).
//!
//! Models a 4-level table with a 4 KiB base page on both architectures (x86_64
//! 4-level paging; arm64 4 KiB granule with 48-bit VA). Other granules and
//! 5-level paging are not modelled.

/// `PAGE_SHIFT` and `PAGE_SIZE`: the project's one page size.
pub use foliosim_uapi::{PAGE_SHIFT, PAGE_SIZE};
/// `PTRS_PER_PTE` (= PTRS_PER_PMD = PTRS_PER_PUD = PTRS_PER_PGD here).
pub(crate) const PTRS_PER_PTE: usize = 512;
/// `PMD_SHIFT`
pub const PMD_SHIFT: u32 = 21;
/// `PMD_SIZE`
pub const PMD_SIZE: u64 = 1 << PMD_SHIFT;
/// `PUD_SHIFT`
pub(crate) const PUD_SHIFT: u32 = 30;
/// `PGDIR_SHIFT`
pub(crate) const PGDIR_SHIFT: u32 = 39;
/// `HPAGE_PMD_ORDER`
pub(crate) const HPAGE_PMD_ORDER: u32 = PMD_SHIFT - PAGE_SHIFT;
/// `HPAGE_PMD_NR`
pub(crate) const HPAGE_PMD_NR: u64 = 1 << HPAGE_PMD_ORDER;
/// `MAX_PAGE_ORDER` of the buddy allocator (4 MiB blocks).
pub(crate) const MAX_PAGE_ORDER: u32 = 10;
/// `MAX_PAGECACHE_ORDER` on a 4 KiB-page THP kernel (= PMD order).
pub(crate) const MAX_PAGECACHE_ORDER: u32 = HPAGE_PMD_ORDER;

const _: () = assert!(PTRS_PER_PTE as u64 * PAGE_SIZE == PMD_SIZE);

/// `pte_index()`: index of `addr`'s entry in its PTE table.
#[inline]
pub fn pte_index(addr: u64) -> usize {
    ((addr >> PAGE_SHIFT) as usize) & (PTRS_PER_PTE - 1)
}

/// `pmd_index()`
#[inline]
pub(crate) fn pmd_index(addr: u64) -> usize {
    ((addr >> PMD_SHIFT) as usize) & (PTRS_PER_PTE - 1)
}

/// `pud_index()`
#[inline]
pub(crate) fn pud_index(addr: u64) -> usize {
    ((addr >> PUD_SHIFT) as usize) & (PTRS_PER_PTE - 1)
}

/// `pgd_index()`
#[inline]
pub(crate) fn pgd_index(addr: u64) -> usize {
    ((addr >> PGDIR_SHIFT) as usize) & (PTRS_PER_PTE - 1)
}

/// `PUD_SIZE`
pub(crate) const PUD_SIZE: u64 = 1 << PUD_SHIFT;
/// `PGDIR_SIZE`
pub(crate) const PGDIR_SIZE: u64 = 1 << PGDIR_SHIFT;

/// The end of the `size`-aligned block holding `addr`, capped at `end`
/// (the `*_addr_end()` macros: the comparison of `boundary - 1` and
/// `end - 1` makes an `end` or a boundary of 0 mean the top of the address
/// space).
#[inline]
fn addr_end(addr: u64, end: u64, size: u64) -> u64 {
    let boundary = addr.wrapping_add(size) & !(size - 1);
    if boundary.wrapping_sub(1) < end.wrapping_sub(1) {
        boundary
    } else {
        end
    }
}

/// `pmd_addr_end()`: the end of the PMD block holding `addr`, capped at `end`.
#[inline]
pub(crate) fn pmd_addr_end(addr: u64, end: u64) -> u64 {
    addr_end(addr, end, PMD_SIZE)
}

/// `pud_addr_end()`
#[inline]
pub(crate) fn pud_addr_end(addr: u64, end: u64) -> u64 {
    addr_end(addr, end, PUD_SIZE)
}

/// `pgd_addr_end()`
#[inline]
pub(crate) fn pgd_addr_end(addr: u64, end: u64) -> u64 {
    addr_end(addr, end, PGDIR_SIZE)
}

/// `ALIGN_DOWN()` for a power-of-two `a`.
#[inline]
pub const fn align_down(x: u64, a: u64) -> u64 {
    x & !(a - 1)
}

/// `IS_ALIGNED()`
#[inline]
pub(crate) const fn is_aligned(x: u64, a: u64) -> bool {
    x & (a - 1) == 0
}

/// `DIV_ROUND_UP()`
#[inline]
pub(crate) const fn div_round_up(x: u64, d: u64) -> u64 {
    x.div_ceil(d)
}

/// A physical frame number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pfn(pub u32);

impl Pfn {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
    #[inline]
    pub fn plus(self, n: u64) -> Pfn {
        Pfn(self.0 + n as u32)
    }
}

/// Size label used by sysfs and the folio histograms: `hugepages-64kB`
/// spells 64 KiB as "64kB".
pub fn size_label(order: u32) -> String {
    format!("{}kB", (PAGE_SIZE << order) / 1024)
}
