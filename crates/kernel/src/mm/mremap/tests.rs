//! mremap(2) against the rules of mm/mremap.c. Every expected value is
//! derived in a comment from the kernel's rules, with the model's fixed
//! mmap base `MMAP_BASE` = 0x6000_0000_0000 and top-down placement.

use crate::include::linux::pgtable::{Pfn, HPAGE_PMD_ORDER, PAGE_SIZE, PMD_SIZE};
use crate::mm::mmap::MMAP_BASE;
use crate::{Config, Kernel, KernelError, MmId, MthpMode, ThpMode, X86_64};
use foliosim_uapi::mman::{
    MAP_ANONYMOUS, MAP_PRIVATE, MREMAP_DONTUNMAP, MREMAP_FIXED, MREMAP_MAYMOVE, PROT_READ,
    PROT_WRITE,
};

/// A 64 MiB machine with only the anonymous folio order `order` enabled
/// (None: order 0 only).
fn kernel(order: Option<u32>) -> (Kernel<X86_64>, MmId) {
    let mut cfg = Config {
        memory: 64 << 20,
        check_invariants: true,
        thp_enabled: ThpMode::Never,
        ..Config::default()
    };
    cfg.anon_orders = [MthpMode::Never; HPAGE_PMD_ORDER as usize + 1];
    if let Some(o) = order {
        cfg.anon_orders[o as usize] = MthpMode::Always;
    }
    let mut k = Kernel::<X86_64>::new(cfg).expect("kernel");
    let mm = k.mm_alloc();
    (k, mm)
}

fn mmap(k: &mut Kernel<X86_64>, mm: MmId, len: u64) -> u64 {
    let flags = MAP_PRIVATE | MAP_ANONYMOUS;
    k.sys_mmap(mm, 0, len, PROT_READ | PROT_WRITE, flags, None, 0)
        .expect("mmap")
}

/// Write every page of `[addr, addr + len)`.
fn write_all(k: &mut Kernel<X86_64>, mm: MmId, addr: u64, len: u64) {
    for a in (addr..addr + len).step_by(PAGE_SIZE as usize) {
        k.handle_mm_fault(mm, a, true);
    }
}

/// The PFN each page of `[addr, addr + len)` maps (None: not present),
/// from a walk of the page tables.
fn pfns(k: &Kernel<X86_64>, mm: MmId, addr: u64, len: u64) -> Vec<Option<Pfn>> {
    use crate::arch::Arch;
    (addr..addr + len)
        .step_by(PAGE_SIZE as usize)
        .map(|a| {
            let pmd = k.walk_to_pmd(mm, a)?;
            let e = k.pmdp_get(pmd);
            if X86_64::pmd_trans_huge(e) {
                return Some(X86_64::pte_pfn(e).plus((a % PMD_SIZE) / PAGE_SIZE));
            }
            let t = k.entry_table(e)?;
            let pte = k.pt.get(t, crate::include::linux::pgtable::pte_index(a));
            X86_64::pte_present(pte).then(|| X86_64::pte_pfn(pte))
        })
        .collect()
}

fn counter(k: &Kernel<X86_64>, name: &str) -> u64 {
    k.vmstat.snapshot().get(name).copied().unwrap_or(0)
}

/// The folio-size cells of the region's histogram (`<size>kB`).
fn histogram(k: &Kernel<X86_64>, mm: MmId, addr: u64, len: u64) -> Vec<(String, u64)> {
    (k.folio_histogram(mm, addr, addr + len).into_iter())
        .filter(|(key, _)| key.ends_with("kB"))
        .collect()
}

fn errno_of(r: crate::KResult<u64>) -> &'static str {
    match r {
        Err(KernelError::Errno(e, _)) => e,
        other => panic!("expected an errno, got {other:?}"),
    }
}

/// A free, PMD-aligned address far below the model's mappings.
const FAR: u64 = 0x4000_0000_0000;

/// Growing the topmost mapping: its range ends its VMA and nothing is
/// mapped above it, so `vrm_can_expand_in_place()` holds and the VMA
/// grows where it is (`expand_vma_in_place()`); its pages stay, the new
/// part faults on first touch.
#[test]
fn grows_in_place_when_the_gap_above_is_free() {
    let (mut k, mm) = kernel(None);
    let a = mmap(&mut k, mm, 1 << 20);
    // Top-down: the first mapping ends at the base.
    assert_eq!(a, MMAP_BASE - (1 << 20));
    write_all(&mut k, mm, a, 1 << 20);
    let before = pfns(&k, mm, a, 1 << 20);
    let r = k.sys_mremap(mm, a, 1 << 20, 2 << 20, 0, 0).expect("grow");
    assert_eq!(r, a);
    let vmas: Vec<(u64, u64)> = k
        .mm(mm)
        .vmas
        .values()
        .map(|v| (v.vm_start, v.vm_end))
        .collect();
    assert_eq!(vmas, [(a, a + (2 << 20))]);
    assert_eq!(pfns(&k, mm, a, 1 << 20), before);
    // The new half: 256 pages, each a fresh order-0 fault.
    let faults = counter(&k, "pgfault");
    write_all(&mut k, mm, a + (1 << 20), 1 << 20);
    assert_eq!(counter(&k, "pgfault") - faults, 256);
    k.check_invariants().expect("consistent");
}

/// A mapping with another right above it cannot grow in place: without
/// MREMAP_MAYMOVE that is ENOMEM (`expand_vma()`); with it the mapping
/// moves where `get_unmapped_area()` puts 2 MiB without a hint: a PMD
/// multiple, so `__thp_get_unmapped_area()` searches for 4 MiB below the
/// lowest mapping and aligns the result.
#[test]
fn a_blocked_growth_moves_only_with_maymove() {
    let (mut k, mm) = kernel(None);
    let top = mmap(&mut k, mm, 1 << 20);
    let a = mmap(&mut k, mm, 1 << 20);
    assert_eq!(a, top - (1 << 20));
    write_all(&mut k, mm, a, 1 << 20);
    let before = pfns(&k, mm, a, 1 << 20);
    assert_eq!(
        errno_of(k.sys_mremap(mm, a, 1 << 20, 2 << 20, 0, 0)),
        "ENOMEM"
    );
    let r = k
        .sys_mremap(mm, a, 1 << 20, 2 << 20, MREMAP_MAYMOVE, 0)
        .expect("move");
    // The padded search returns a - 4 MiB = 0x5fff_ffa0_0000, which is
    // 2 MiB-aligned: the top-down rule moves it up one PMD.
    let ret = a - (4 << 20);
    assert_eq!(ret % PMD_SIZE, 0);
    assert_eq!(r, ret + PMD_SIZE);
    assert_eq!(pfns(&k, mm, r, 1 << 20), before);
    assert!(k.find_vma(mm, a).is_none());
    k.check_invariants().expect("consistent");
}

/// MREMAP_FIXED to an address 4 KiB past a 64 KiB boundary: the 16
/// folios of 64 KiB keep their pages (each PTE moves as it is,
/// `move_ptes()`), so the region still holds 16 folios of 64 KiB, now
/// mapped across 64 KiB boundaries. x86 moves one entry per batch
/// (`pte_batch_hint()` is 1). The 1 MiB is one extent (FAR + 4 KiB +
/// 1 MiB stays below the target's next 2 MiB boundary) holding present
/// entries: one range flush; then the unmap of the old range frees the
/// old PTE table: another.
#[test]
fn a_fixed_move_keeps_large_folios_at_a_misaligned_address() {
    let (mut k, mm) = kernel(Some(4));
    let a = mmap(&mut k, mm, 1 << 20);
    write_all(&mut k, mm, a, 1 << 20);
    assert_eq!(histogram(&k, mm, a, 1 << 20), [("64kB".into(), 16)]);
    let before = pfns(&k, mm, a, 1 << 20);
    let rss = k.mm(mm).rss;
    let flushes = counter(&k, "sim/flush_tlb_range");
    let to = FAR + PAGE_SIZE;
    let r = k
        .sys_mremap(mm, a, 1 << 20, 1 << 20, MREMAP_MAYMOVE | MREMAP_FIXED, to)
        .expect("move");
    assert_eq!(r, to);
    assert_eq!(pfns(&k, mm, to, 1 << 20), before);
    assert_eq!(histogram(&k, mm, to, 1 << 20), [("64kB".into(), 16)]);
    assert!(pfns(&k, mm, a, 1 << 20).iter().all(Option::is_none));
    assert_eq!(k.mm(mm).rss, rss);
    // One move_ptes() flush (the 1 MiB is one extent: FAR + 4 KiB + 1 MiB
    // stays below the next 2 MiB boundary), one for the old PTE table
    // that munmap frees.
    assert_eq!(counter(&k, "sim/flush_tlb_range") - flushes, 2);
    // A write to the moved range finds every entry present and writable:
    // the hardware takes no fault.
    for p in (to..to + (1 << 20)).step_by(PAGE_SIZE as usize) {
        let t = k
            .entry_table(k.pmdp_get(k.walk_to_pmd(mm, p).unwrap()))
            .unwrap();
        let pte = k.pt.get(t, crate::include::linux::pgtable::pte_index(p));
        assert!(
            <X86_64 as crate::arch::Arch>::hw_access(pte, true).is_some(),
            "{p:#x}"
        );
    }
    k.check_invariants().expect("consistent");
}

/// Shrinking unmaps the tail through the munmap path (`shrink_vma()`):
/// the region keeps its address and first half; the second half's 128
/// pages leave the rss.
#[test]
fn shrinks_in_place_through_munmap() {
    let (mut k, mm) = kernel(None);
    let a = mmap(&mut k, mm, 1 << 20);
    write_all(&mut k, mm, a, 1 << 20);
    let before = pfns(&k, mm, a, 512 << 10);
    let rss = k.mm(mm).rss[crate::mm::mmap::MM_ANONPAGES];
    let r = k
        .sys_mremap(mm, a, 1 << 20, 512 << 10, 0, 0)
        .expect("shrink");
    assert_eq!(r, a);
    assert_eq!(k.find_vma(mm, a).map(|v| v.vm_end), Some(a + (512 << 10)));
    assert_eq!(pfns(&k, mm, a, 512 << 10), before);
    assert_eq!(k.mm(mm).rss[crate::mm::mmap::MM_ANONPAGES], rss - 128);
    k.check_invariants().expect("consistent");
}

/// Order-0 pages in two full PTE tables, moved to a 2 MiB-aligned
/// address: each extent is a whole PMD, so `move_normal_pmd()` moves the
/// tables themselves (no PTE table is allocated at the target, none is
/// left to free at the source); each move flushes its old 2 MiB. The
/// target needs a PUD and a PMD table of its own (its PGD entry, 128, is
/// not the source's, 191).
#[test]
fn aligned_pte_tables_move_whole() {
    let (mut k, mm) = kernel(None);
    let a = mmap(&mut k, mm, 4 << 20);
    assert_eq!(a % PMD_SIZE, 0);
    write_all(&mut k, mm, a, 4 << 20);
    let tables = |k: &Kernel<X86_64>, at: u64| {
        [at, at + PMD_SIZE].map(|x| k.entry_table(k.pmdp_get(k.walk_to_pmd(mm, x).unwrap())))
    };
    let old_tables = tables(&k, a);
    let before = pfns(&k, mm, a, 4 << 20);
    let (alloc, free, flushes) = (
        counter(&k, "sim/pgtable_alloc"),
        counter(&k, "sim/pgtable_free"),
        counter(&k, "sim/flush_tlb_range"),
    );
    let r = k
        .sys_mremap(mm, a, 4 << 20, 4 << 20, MREMAP_MAYMOVE | MREMAP_FIXED, FAR)
        .expect("move");
    assert_eq!(r, FAR);
    assert_eq!(tables(&k, FAR), old_tables);
    assert_eq!(pfns(&k, mm, FAR, 4 << 20), before);
    assert_eq!(counter(&k, "sim/pgtable_alloc") - alloc, 2);
    assert_eq!(counter(&k, "sim/pgtable_free") - free, 0);
    assert_eq!(counter(&k, "sim/flush_tlb_range") - flushes, 2);
    k.check_invariants().expect("consistent");
}

/// Two PMD-mapped THPs moved to a 2 MiB-aligned address: each extent is
/// HPAGE_PMD_SIZE, so `move_huge_pmd()` moves each leaf (and its deposited
/// table); nothing splits. Moved 4 KiB off the boundary instead, no
/// extent is a whole PMD: each THP is split first (`split_huge_pmd()`,
/// thp_split_pmd), its 512 PTEs move in two extents, and the folios stay
/// 2 MiB, now mapped by PTEs.
#[test]
fn pmd_thps_move_whole_when_aligned_and_split_when_not() {
    let (mut k, mm) = kernel(Some(HPAGE_PMD_ORDER));
    let a = mmap(&mut k, mm, 4 << 20);
    write_all(&mut k, mm, a, 4 << 20);
    assert_eq!(histogram(&k, mm, a, 4 << 20), [("2048kB".into(), 2)]);
    let before = pfns(&k, mm, a, 4 << 20);
    let splits = counter(&k, "thp_split_pmd");
    let r = k
        .sys_mremap(mm, a, 4 << 20, 4 << 20, MREMAP_MAYMOVE | MREMAP_FIXED, FAR)
        .expect("aligned move");
    assert_eq!(r, FAR);
    assert_eq!(counter(&k, "thp_split_pmd"), splits);
    for x in [FAR, FAR + PMD_SIZE] {
        let e = k.pmdp_get(k.walk_to_pmd(mm, x).unwrap());
        assert!(<X86_64 as crate::arch::Arch>::pmd_trans_huge(e), "{x:#x}");
    }
    let deposited: Vec<u64> = k.mm(mm).deposited.keys().copied().collect();
    assert_eq!(deposited, [FAR, FAR + PMD_SIZE]);
    assert_eq!(pfns(&k, mm, FAR, 4 << 20), before);

    let to = FAR + (64 << 20) + PAGE_SIZE;
    let r = k
        .sys_mremap(mm, FAR, 4 << 20, 4 << 20, MREMAP_MAYMOVE | MREMAP_FIXED, to)
        .expect("misaligned move");
    assert_eq!(r, to);
    assert_eq!(counter(&k, "thp_split_pmd") - splits, 2);
    assert_eq!(pfns(&k, mm, to, 4 << 20), before);
    assert_eq!(histogram(&k, mm, to, 4 << 20), [("2048kB".into(), 2)]);
    assert!(k.mm(mm).deposited.is_empty());
    k.check_invariants().expect("consistent");
}

/// The checks before any VMA is looked at (`check_mremap_params()`) and
/// against it (`check_prep_vma()`), with the kernel's errno values;
/// MREMAP_DONTUNMAP is refused as unsupported.
#[test]
fn bad_arguments_fail_as_in_the_kernel() {
    let (mut k, mm) = kernel(None);
    let a = mmap(&mut k, mm, 1 << 20);
    let fixed = MREMAP_MAYMOVE | MREMAP_FIXED;
    // MREMAP_FIXED needs MREMAP_MAYMOVE.
    assert_eq!(
        errno_of(k.sys_mremap(mm, a, 1 << 20, 1 << 20, MREMAP_FIXED, FAR)),
        "EINVAL"
    );
    // The target overlaps the source.
    let r = k.sys_mremap(mm, a, 1 << 20, 1 << 20, fixed, a + PAGE_SIZE);
    assert_eq!(errno_of(r), "EINVAL");
    // Nothing mapped at the address.
    assert_eq!(errno_of(k.sys_mremap(mm, FAR, 4096, 8192, 0, 0)), "EFAULT");
    // A range reaching past its VMA's end cannot grow.
    assert_eq!(
        errno_of(k.sys_mremap(mm, a, 2 << 20, 4 << 20, 0, 0)),
        "EFAULT"
    );
    assert_eq!(
        errno_of(k.sys_mremap(mm, a + 1, 4096, 8192, 0, 0)),
        "EINVAL"
    );
    assert_eq!(errno_of(k.sys_mremap(mm, a, 4096, 0, 0, 0)), "EINVAL");
    match k.sys_mremap(mm, a, 1 << 20, 1 << 20, fixed | MREMAP_DONTUNMAP, FAR) {
        Err(KernelError::Unsupported(w)) => assert!(w.contains("MREMAP_DONTUNMAP"), "{w}"),
        other => panic!("{other:?}"),
    }
}
