//! Fault counts, allocations and folio shapes derived from the kernel rules;
//! each comment names the kernel function (Linux 6.18) the rule comes from,
//! or says "observed" for behaviour measured on a 6.18.44 kernel.
//!
//! Every expected number is worked out from the rules in the comment next to
//! it, never copied from the model's output. A test whose expectation the model
//! does not meet and where the kernel's rule is unambiguous is a model bug: it
//! is kept, marked `#[ignore = "BUG: ..."]`.
//!
//! Conventions: a private anonymous mapping whose length is a multiple of 2 MiB
//! is 2 MiB-aligned (`__thp_get_unmapped_area()`, mm/huge_memory.c), and so is
//! a file mapping that covers an aligned 2 MiB of its file
//! (`__thp_get_unmapped_area()`, mm/huge_memory.c). Tests that need a
//! particular alignment get it that way, and cut VMAs down with munmap when
//! they need other shapes. The default `[system]` is 512 MiB with the kernel
//! defaults: `enabled = madvise`, the PMD size `inherit`, all other sizes
//! `never` (`__thp_vma_allowable_orders()`, mm/huge_memory.c),
//! fault_around_bytes 64 KiB (`do_fault_around()`, mm/memory.c).

use crate::common;

use common::{assert_counters, c, folios, hist, hist_pages, mthp, run, system, try_run_with};
use foliosim_sim::SimError;

const MB2: i64 = 2 << 20;

fn anon_region(name: &str, size: &str, advise: &[&str]) -> String {
    let adv: Vec<String> = advise.iter().map(|a| format!("\"{a}\"")).collect();
    format!(
        "[[step]]\nop = \"mmap\"\nregion = \"{name}\"\nkind = \"anon\"\nsize = \"{size}\"\nmadvise = [{}]\n",
        adv.join(", ")
    )
}

fn phase(name: &str) -> String {
    format!("[[step]]\nop = \"phase\"\nname = \"{name}\"\n")
}

fn touch(region: &str, access: &str, range: &str) -> String {
    format!("[[step]]\nop = \"touch\"\nregion = \"{region}\"\naccess = \"{access}\"\n{range}\n")
}

const SIZES_KB: [u64; 8] = [16, 32, 64, 128, 256, 512, 1024, 2048];

/// Assert that exactly the per-size counters in `want` (kB, value) are
/// non-zero for `stat` in `phase`.
fn assert_mthp_stat(r: &foliosim_report::Report, phase: &str, stat: &str, want: &[(u64, i64)]) {
    for kb in SIZES_KB {
        let w = want.iter().find(|(k, _)| *k == kb).map_or(0, |(_, v)| *v);
        assert_eq!(
            c(r, phase, &format!("hugepages-{kb}kB/{stat}")),
            w,
            "hugepages-{kb}kB/{stat} in phase {phase}"
        );
    }
}

// ---------------------------------------------------------------------------
// Anonymous write faults: one fault installs a whole mTHP
// (`do_anonymous_page()`, mm/memory.c).

/// Write every page of a 2 MiB-aligned 2 MiB anonymous region with only `kb`
/// enabled (`always`; the PMD size is `inherit` under top-level `madvise`
/// without MADV_HUGEPAGE, so not allowed: `__thp_vma_allowable_orders()`,
/// mm/huge_memory.c). Every naturally aligned `kb` block lies inside the VMA
/// and is empty when its first page is written (`alloc_anon_folio()`,
/// mm/memory.c), so each fault allocates one `kb` folio and maps all of it:
/// faults = 2 MiB / kb, anon_fault_alloc[kb] = faults, and nothing else is
/// allocated or counted as THP.
fn anon_mthp_always(kb: u64) {
    let text = format!(
        "{}{}{}",
        system(&mthp(kb, "always")),
        anon_region("heap", "2M", &[]),
        phase("w") + &touch("heap", "write", "")
    );
    let r = run(&text);
    let n = MB2 / (kb as i64 * 1024);
    assert_eq!(c(&r, "w", "pgfault"), n, "{kb}K: pgfault");
    assert_eq!(c(&r, "w", "minor-faults"), n, "{kb}K: minor-faults");
    assert_eq!(c(&r, "w", "major-faults"), 0);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(kb, n)]);
    assert_mthp_stat(&r, "w", "anon_fault_fallback", &[]);
    assert_counters(&r, "w", "thp_fault_alloc=0 thp_fault_fallback=0");
    assert_eq!(
        folios(&r, "w", "heap"),
        hist(&[(&format!("{kb}kB"), n as u64)]),
        "{kb}K: one folio per fault"
    );
}

#[test]
fn anon_write_mthp_16k_always() {
    anon_mthp_always(16);
}
#[test]
fn anon_write_mthp_32k_always() {
    anon_mthp_always(32);
}
#[test]
fn anon_write_mthp_64k_always() {
    anon_mthp_always(64);
}
#[test]
fn anon_write_mthp_128k_always() {
    anon_mthp_always(128);
}
#[test]
fn anon_write_mthp_256k_always() {
    anon_mthp_always(256);
}
#[test]
fn anon_write_mthp_512k_always() {
    anon_mthp_always(512);
}
#[test]
fn anon_write_mthp_1024k_always() {
    anon_mthp_always(1024);
}

/// All sizes 16K..1024K `always`: alloc_anon_folio() tries the highest allowed
/// order whose aligned block fits and is empty (`alloc_anon_folio()`,
/// mm/memory.c), so 1024K wins everywhere in a 2 MiB-aligned 2 MiB VMA: 2
/// faults, 2 × 1024K.
#[test]
fn anon_write_highest_enabled_order_wins() {
    let mut knobs = String::new();
    for kb in [16, 32, 64, 128, 256, 512, 1024] {
        knobs += &mthp(kb, "always");
    }
    let text = system(&knobs)
        + &anon_region("heap", "2M", &[])
        + &phase("w")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_eq!(c(&r, "w", "pgfault"), 2);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(1024, 2)]);
    assert_eq!(folios(&r, "w", "heap"), hist(&[("1024kB", 2)]));
}

/// Per-size `always` for the PMD size allows PMD THP without MADV_HUGEPAGE
/// whatever the top level says (`__thp_vma_allowable_orders()`,
/// mm/huge_memory.c: "always | any | yes"). The PMD path is tried first while
/// the PMD is none (`__handle_mm_fault()`, mm/memory.c;
/// `do_huge_pmd_anonymous_page()`, mm/huge_memory.c): 1 fault per 2 MiB,
/// thp_fault_alloc and anon_fault_alloc[2048K] once each per 2 MiB.
#[test]
fn anon_write_pmd_size_always_without_madvise() {
    let text =
        system(&("transparent_hugepage.enabled = \"never\"\n".to_owned() + &mthp(2048, "always")))
            + &anon_region("heap", "4M", &[])
            + &phase("w")
            + &touch("heap", "write", "");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=2 thp_fault_alloc=2");
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(2048, 2)]);
    assert_eq!(folios(&r, "w", "heap"), hist(&[("2048kB", 2)]));
}

// ---------------------------------------------------------------------------
// Which orders are allowed (`__thp_vma_allowable_orders()`, mm/huge_memory.c).

/// 64K set to `mode64` under `top`, with or without MADV_HUGEPAGE, and the PMD
/// size `never` so that only the 64K decision shows. A 2 MiB-aligned 2 MiB
/// region written page by page gives 32 faults and 32 × 64K if 64K is allowed,
/// otherwise 512 order-0 faults and no mTHP stat (`do_anonymous_page()` and
/// `alloc_anon_folio()`, mm/memory.c).
fn check_64k_allowed(top: &str, mode64: &str, hugepage: bool, allowed: bool) {
    let knobs = format!(
        "transparent_hugepage.enabled = \"{top}\"\n{}{}",
        mthp(64, mode64),
        mthp(2048, "never")
    );
    let adv: &[&str] = if hugepage { &["hugepage"] } else { &[] };
    let text = system(&knobs)
        + &anon_region("heap", "2M", adv)
        + &phase("w")
        + &touch("heap", "write", "");
    let r = run(&text);
    let what = format!("64K={mode64} top={top} MADV_HUGEPAGE={hugepage}");
    if allowed {
        assert_eq!(c(&r, "w", "pgfault"), 32, "{what}: pgfault");
        assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(64, 32)]);
        assert_eq!(folios(&r, "w", "heap"), hist(&[("64kB", 32)]), "{what}");
    } else {
        assert_eq!(c(&r, "w", "pgfault"), 512, "{what}: pgfault");
        assert_mthp_stat(&r, "w", "anon_fault_alloc", &[]);
        assert_eq!(folios(&r, "w", "heap"), hist(&[("4kB", 512)]), "{what}");
    }
    assert_eq!(c(&r, "w", "thp_fault_alloc"), 0, "{what}");
}

/// `__thp_vma_allowable_orders()`, mm/huge_memory.c: inherit | always → yes,
/// yes; inherit | madvise → no, yes; inherit | never → no, no.
#[test]
fn inherit_follows_top_level() {
    for (top, without, with) in [
        ("always", true, true),
        ("madvise", false, true),
        ("never", false, false),
    ] {
        check_64k_allowed(top, "inherit", false, without);
        check_64k_allowed(top, "inherit", true, with);
    }
}

/// `__thp_vma_allowable_orders()`, mm/huge_memory.c: madvise | any → no without
/// MADV_HUGEPAGE, yes with it.
#[test]
fn per_size_madvise_needs_madv_hugepage() {
    for top in ["always", "madvise", "never"] {
        check_64k_allowed(top, "madvise", false, false);
        check_64k_allowed(top, "madvise", true, true);
    }
}

/// `__thp_vma_allowable_orders()`, mm/huge_memory.c: never | any → no; always |
/// any → yes, with and without MADV_HUGEPAGE.
#[test]
fn per_size_always_and_never_ignore_top_level() {
    for top in ["always", "madvise", "never"] {
        for hp in [false, true] {
            check_64k_allowed(top, "always", hp, true);
            check_64k_allowed(top, "never", hp, false);
        }
    }
}

/// `inherit` for the PMD size (the default) under top-level `always` gives PMD
/// THP without any madvise (`__thp_vma_allowable_orders()`, mm/huge_memory.c
/// inherit|always, `do_huge_pmd_anonymous_page()`, mm/huge_memory.c): 1 fault.
#[test]
fn pmd_inherit_under_top_always() {
    let text = system("transparent_hugepage.enabled = \"always\"\n")
        + &anon_region("heap", "2M", &[])
        + &phase("w")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=1 thp_fault_alloc=1");
    assert_eq!(folios(&r, "w", "heap"), hist(&[("2048kB", 1)]));
}

/// MADV_NOHUGEPAGE beats everything (`__thp_vma_allowable_orders()`,
/// mm/huge_memory.c): top `always`, PMD `inherit` and 64K `always` would give a
/// PMD THP, but with VM_NOHUGEPAGE no order is allowed, so 512 order-0 faults
/// and no THP/mTHP stat.
#[test]
fn madv_nohugepage_beats_always() {
    let knobs = "transparent_hugepage.enabled = \"always\"\n".to_owned() + &mthp(64, "always");
    let text = system(&knobs)
        + &anon_region("heap", "2M", &["nohugepage"])
        + &phase("w")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=512 thp_fault_alloc=0");
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[]);
    assert_eq!(folios(&r, "w", "heap"), hist(&[("4kB", 512)]));
}

/// MADV_NOHUGEPAGE after MADV_HUGEPAGE clears VM_HUGEPAGE and sets
/// VM_NOHUGEPAGE (`__thp_vma_allowable_orders()`, mm/huge_memory.c): 64K
/// `always` is still refused. Applied to the second half only: the first MiB
/// gets 16 × 64K, the second MiB 256 order-0 pages.
#[test]
fn madv_nohugepage_on_half_of_a_region() {
    let text = system(&mthp(64, "always"))
        + &anon_region("heap", "2M", &["hugepage"])
        + "[[step]]\nop = \"madvise\"\nregion = \"heap\"\nadvice = \"nohugepage\"\noffset = \"1M\"\n"
        + &phase("w")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_eq!(c(&r, "w", "pgfault"), 16 + 256);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(64, 16)]);
    assert_eq!(folios(&r, "w", "heap"), hist(&[("4kB", 256), ("64kB", 16)]));
}

// ---------------------------------------------------------------------------
// PMD THP and the huge zero page (`do_huge_pmd_anonymous_page()`,
// mm/huge_memory.c; observed on Linux 6.18.44).

/// 4 MiB (2 MiB-aligned, `__thp_get_unmapped_area()`, mm/huge_memory.c) with
/// MADV_HUGEPAGE under the default top-level `madvise` and PMD `inherit`: each
/// 2 MiB takes one write fault that maps one PMD
/// (`do_huge_pmd_anonymous_page()`, mm/huge_memory.c): 2 faults,
/// thp_fault_alloc 2, anon_fault_alloc[2048K] 2. Enabling 64K changes nothing:
/// the PMD path runs before the PTE level (`__handle_mm_fault()`, mm/memory.c).
#[test]
fn pmd_thp_with_madv_hugepage() {
    for extra in [
        "",
        "transparent_hugepage.hugepages-64kB.enabled = \"always\"\n",
    ] {
        let text = system(extra)
            + &anon_region("heap", "4M", &["hugepage"])
            + &phase("w")
            + &touch("heap", "write", "");
        let r = run(&text);
        assert_eq!(c(&r, "w", "pgfault"), 2, "{extra}");
        assert_counters(&r, "w", "minor-faults=2 thp_fault_alloc=2");
        assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(2048, 2)]);
        assert_eq!(folios(&r, "w", "heap"), hist(&[("2048kB", 2)]));
    }
}

/// MADV_HUGEPAGE with PMD `inherit` under `madvise` allows the PMD order, but a
/// 1 MiB VMA contains no aligned 2 MiB block, so the PMD try falls back without
/// any counter (`do_huge_pmd_anonymous_page()`, mm/huge_memory.c) and
/// do_anonymous_page() uses the mTHP orders (`do_huge_pmd_anonymous_page()`,
/// mm/huge_memory.c): 64K `inherit` is allowed by MADV_HUGEPAGE
/// (`__thp_vma_allowable_orders()`, mm/huge_memory.c) and the VMA (the first
/// MiB of a 2 MiB-aligned region) holds 16 aligned 64K blocks: 16 faults, 16 ×
/// 64K, no THP counters.
#[test]
fn pmd_fallback_to_mthp_when_vma_too_small() {
    let text = system(&mthp(64, "inherit"))
        + &anon_region("v", "2M", &["hugepage"])
        + "[[step]]\nop = \"munmap\"\nregion = \"v\"\noffset = \"1M\"\n"
        + &phase("w")
        + &touch("v", "write", "len = \"1M\"");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=16 thp_fault_alloc=0 thp_fault_fallback=0");
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(64, 16)]);
    assert_mthp_stat(&r, "w", "anon_fault_fallback", &[]);
    assert_eq!(folios(&r, "w", "v"), hist(&[("64kB", 16)]));
}

/// A VMA that does not contain any aligned 2 MiB block cannot take the PMD path
/// (`do_huge_pmd_anonymous_page()`, mm/huge_memory.c: FALLBACK, no counter);
/// nothing else is enabled, so every page is an order-0 fault. Here the 2
/// MiB-aligned 2 MiB region loses its last page.
#[test]
fn pmd_thp_needs_the_whole_aligned_block() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + "[[step]]\nop = \"munmap\"\nregion = \"heap\"\noffset = \"2044K\"\n"
        + &phase("w")
        + &touch("heap", "write", "len = \"2044K\"");
    let r = run(&text);
    assert_counters(
        &r,
        "w",
        "pgfault=511 thp_fault_alloc=0 thp_fault_fallback=0",
    );
    assert_mthp_stat(&r, "w", "anon_fault_fallback", &[]);
    assert_eq!(folios(&r, "w", "heap"), hist(&[("4kB", 511)]));
}

/// `do_huge_pmd_anonymous_page()`, mm/huge_memory.c; observed on Linux 6.18.44:
/// a read in a MADV_HUGEPAGE region maps the huge zero folio with one PMD (1
/// fault for all 512 pages; thp_zero_page_alloc the first time only; no
/// anon_fault_alloc); a write then replaces it with a fresh PMD THP (1 fault,
/// thp_fault_alloc 1, anon_fault_alloc[2048K] 1). A second region reads through
/// the same, already allocated huge zero folio: thp_zero_page_alloc 0.
#[test]
fn huge_zero_page_then_thp_on_write() {
    let text = system("")
        + &anon_region("a", "2M", &["hugepage"])
        + &anon_region("b", "2M", &["hugepage"])
        + &phase("read")
        + &touch("a", "read", "")
        + &phase("write")
        + &touch("a", "write", "")
        + &phase("read_b")
        + &touch("b", "read", "");
    let r = run(&text);
    assert_counters(
        &r,
        "read",
        "pgfault=1 thp_zero_page_alloc=1 thp_fault_alloc=0",
    );
    assert_mthp_stat(&r, "read", "anon_fault_alloc", &[]);
    assert_eq!(folios(&r, "read", "a"), hist(&[("huge_zero", 1)]));

    assert_counters(
        &r,
        "write",
        "pgfault=1 thp_fault_alloc=1 thp_zero_page_alloc=0 thp_split_pmd=0",
    );
    assert_mthp_stat(&r, "write", "anon_fault_alloc", &[(2048, 1)]);
    assert_eq!(folios(&r, "write", "a"), hist(&[("2048kB", 1)]));

    assert_counters(&r, "read_b", "pgfault=1 thp_zero_page_alloc=0");
    assert_eq!(folios(&r, "read_b", "b"), hist(&[("huge_zero", 1)]));
}

/// use_zero_page = 0: a read in a MADV_HUGEPAGE region takes the write path of
/// do_huge_pmd_anonymous_page() (mm/huge_memory.c; it needs use_zero_page=1),
/// so the read fault itself allocates a PMD THP.
#[test]
fn huge_zero_page_disabled_read_allocates_thp() {
    let text = system("transparent_hugepage.use_zero_page = 0\n")
        + &anon_region("a", "2M", &["hugepage"])
        + &phase("read")
        + &touch("a", "read", "");
    let r = run(&text);
    assert_counters(
        &r,
        "read",
        "pgfault=1 thp_zero_page_alloc=0 thp_fault_alloc=1",
    );
    assert_eq!(folios(&r, "read", "a"), hist(&[("2048kB", 1)]));
}

/// `do_anonymous_page()` and `alloc_anon_folio()`, mm/memory.c: with 64K
/// `always` (PMD not allowed), reads map one zero-page PTE each (512 faults,
/// nothing allocated); each write then hits a present read-only zero PTE, so
/// do_wp_page() copies into an order-0 folio (`wp_page_copy()`, mm/memory.c):
/// 512 more faults, no anon_fault_alloc.
#[test]
fn zero_page_read_then_write_defeats_mthp() {
    let text = system(&mthp(64, "always"))
        + &anon_region("heap", "2M", &[])
        + &phase("read")
        + &touch("heap", "read", "")
        + &phase("write")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_counters(&r, "read", "pgfault=512 sim/folio_alloc=0");
    assert_eq!(folios(&r, "read", "heap"), hist(&[("zero", 512)]));
    assert_eq!(c(&r, "write", "pgfault"), 512);
    assert_mthp_stat(&r, "write", "anon_fault_alloc", &[]);
    assert_eq!(c(&r, "write", "sim/folio_alloc"), 512);
    assert_eq!(folios(&r, "write", "heap"), hist(&[("4kB", 512)]));
}

/// `alloc_anon_folio()`, mm/memory.c: a block already holding a zero-page PTE
/// is not none. With 64K and 16K enabled, a read of page 0 then a write of page
/// 1 gives order 0 (the 64K block 0-15 and the 16K block 0-3 both hold the zero
/// PTE); a write of page 4 then gets a 16K folio (block 4-7 is empty, block
/// 0-15 is not).
#[test]
fn zero_pte_in_block_lowers_the_order() {
    let text = system(&(mthp(64, "always") + &mthp(16, "always")))
        + &anon_region("heap", "2M", &[])
        + &touch("heap", "read", "len = \"4K\"")
        + &phase("w1")
        + &touch("heap", "write", "offset = \"4K\"\nlen = \"4K\"")
        + &phase("w4")
        + &touch("heap", "write", "offset = \"16K\"\nlen = \"4K\"");
    let r = run(&text);
    assert_eq!(c(&r, "w1", "pgfault"), 1);
    assert_mthp_stat(&r, "w1", "anon_fault_alloc", &[]);
    assert_mthp_stat(&r, "w1", "anon_fault_fallback", &[]);
    assert_eq!(c(&r, "w4", "pgfault"), 1);
    assert_mthp_stat(&r, "w4", "anon_fault_alloc", &[(16, 1)]);
    assert_eq!(
        folios(&r, "w4", "heap"),
        hist(&[("zero", 1), ("4kB", 1), ("16kB", 1)])
    );
}

// ---------------------------------------------------------------------------
// VMA boundaries (`alloc_anon_folio()`, mm/memory.c).

/// A 2 MiB-aligned region cut down to `pages` pages by munmap (so the VMA
/// starts 64K-aligned), 16K/32K/64K `always`, written page by page.
fn small_vma(pages: u64) -> foliosim_report::Report {
    let knobs = mthp(16, "always") + &mthp(32, "always") + &mthp(64, "always");
    let text = system(&knobs)
        + &anon_region("v", "2M", &[])
        + &format!(
            "[[step]]\nop = \"munmap\"\nregion = \"v\"\noffset = \"{}K\"\n",
            pages * 4
        )
        + &phase("w")
        + &touch("v", "write", &format!("len = \"{}K\"", pages * 4));
    run(&text)
}

/// `alloc_anon_folio()`, mm/memory.c: a 20-page VMA at a 64K-aligned address
/// with 16K/32K/64K enabled gets a 64K folio for pages 0-15, and a 16K folio
/// for a fault in pages 16-19 (the 64K and 32K blocks around page 16 reach past
/// the VMA end).
#[test]
fn vma_end_limits_order_20_pages() {
    let r = small_vma(20);
    assert_eq!(c(&r, "w", "pgfault"), 2);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(64, 1), (16, 1)]);
    assert_eq!(folios(&r, "w", "v"), hist(&[("64kB", 1), ("16kB", 1)]));
}

/// `alloc_anon_folio()`, mm/memory.c: a 24-page VMA gets 64K then 32K.
#[test]
fn vma_end_limits_order_24_pages() {
    let r = small_vma(24);
    assert_eq!(c(&r, "w", "pgfault"), 2);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(64, 1), (32, 1)]);
    assert_eq!(folios(&r, "w", "v"), hist(&[("64kB", 1), ("32kB", 1)]));
}

/// 22 pages: 64K (0-15), then at page 16 the 32K block 16-23 reaches past
/// the end, the 16K block 16-19 fits; at page 20 only order 0 fits the
/// 2-page tail (20-21): 4 faults: 64K, 16K, 4K, 4K.
#[test]
fn vma_end_limits_order_22_pages() {
    let r = small_vma(22);
    assert_eq!(c(&r, "w", "pgfault"), 4);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(64, 1), (16, 1)]);
    assert_eq!(
        folios(&r, "w", "v"),
        hist(&[("64kB", 1), ("16kB", 1), ("4kB", 2)])
    );
}

/// The VMA start matters too: the 2 MiB-aligned region loses its first 4
/// pages, so the VMA starts at +16K. Page 4: the 64K block 0-15 and the 32K
/// block 0-7 start before the VMA, the 16K block 4-7 fits → 16K. Page 8: the
/// 64K block 0-15 still does not fit, the 32K block 8-15 does → 32K. Pages
/// 16.. : 31 aligned 64K blocks. 33 faults.
#[test]
fn vma_start_limits_order() {
    let knobs = mthp(16, "always") + &mthp(32, "always") + &mthp(64, "always");
    let text = system(&knobs)
        + &anon_region("v", "2M", &[])
        + "[[step]]\nop = \"munmap\"\nregion = \"v\"\nlen = \"16K\"\n"
        + &phase("w")
        + &touch("v", "write", "offset = \"16K\"");
    let r = run(&text);
    assert_eq!(c(&r, "w", "pgfault"), 33);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(16, 1), (32, 1), (64, 31)]);
    assert_eq!(
        folios(&r, "w", "v"),
        hist(&[("16kB", 1), ("32kB", 1), ("64kB", 31)])
    );
}

/// A one-page hole punched by munmap at page 5 of a 2 MiB-aligned region splits
/// the VMA; with only 64K enabled, the 64K block 0-15 lies in neither part
/// (`alloc_anon_folio()`, mm/memory.c), so pages 0-4 and 6-15 are order-0
/// faults (15), and pages 16-511 are 31 aligned 64K blocks: 46 faults,
/// anon_fault_alloc[64K] 31.
#[test]
fn munmap_hole_limits_mthp() {
    let text = system(&mthp(64, "always"))
        + &anon_region("v", "2M", &[])
        + "[[step]]\nop = \"munmap\"\nregion = \"v\"\noffset = \"20K\"\nlen = \"4K\"\n"
        + &phase("w")
        + &touch("v", "write", "len = \"20K\"")
        + &touch("v", "write", "offset = \"24K\"");
    let r = run(&text);
    assert_eq!(c(&r, "w", "pgfault"), 46);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[(64, 31)]);
    assert_eq!(folios(&r, "w", "v"), hist(&[("4kB", 15), ("64kB", 31)]));
}

/// A 20-page mapping made directly (not a 2 MiB multiple, so its alignment is
/// whatever the placement gives, `__thp_get_unmapped_area()`,
/// mm/huge_memory.c), next to a read-only mapping that it cannot merge with (a
/// merged neighbour would widen the VMA). Whatever the address: every write
/// fault allocates exactly one folio (order 0, 16K, 32K or 64K) and maps all of
/// it inside the VMA (`alloc_anon_folio()`, mm/memory.c: only blocks inside the
/// VMA are used), so the histogram covers exactly the 20 pages and has one
/// folio per fault, and the mTHP counters add up to the large folios.
#[test]
fn unaligned_small_vma_maps_every_page_once() {
    for pages in [20u64, 24, 37, 100] {
        let knobs = mthp(16, "always") + &mthp(32, "always") + &mthp(64, "always");
        let text = system(&knobs)
            + "[[step]]\nop = \"mmap\"\nregion = \"pad\"\nkind = \"anon\"\nsize = \"12K\"\nprot = \"r\"\n"
            + &anon_region("v", &format!("{}K", pages * 4), &[])
            + &phase("w")
            + &touch("v", "write", "");
        let r = run(&text);
        let h = folios(&r, "w", "v");
        assert_eq!(hist_pages(&h), pages, "{pages} pages: {h:?}");
        let nfolios: u64 = h.values().sum();
        assert_eq!(c(&r, "w", "pgfault") as u64, nfolios, "{pages}: {h:?}");
        for kb in [16u64, 32, 64] {
            assert_eq!(
                c(&r, "w", &format!("hugepages-{kb}kB/anon_fault_alloc")) as u64,
                h.get(&format!("{kb}kB")).copied().unwrap_or(0),
                "{pages}: {kb}K"
            );
        }
        // At least the 64K blocks fully inside the VMA are 64K folios: a
        // VMA of n pages contains at least floor((n - 15) / 16) of them.
        let min64 = pages.saturating_sub(15) / 16;
        assert!(
            h.get("64kB").copied().unwrap_or(0) >= min64,
            "{pages}: {h:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// File read faults and fault-around (`do_read_fault()` and `finish_fault()`,
// mm/memory.c; `filemap_map_pages()`, mm/filemap.c).

/// A 4 MiB file mapped whole (2 MiB-aligned, `__thp_get_unmapped_area()`,
/// mm/huge_memory.c).
fn file_scenario(knobs: &str, fill: &str, advise: &[&str], body: &str) -> String {
    let adv: Vec<String> = advise.iter().map(|a| format!("\"{a}\"")).collect();
    format!(
        "{}[[file]]\nname = \"f\"\nsize = \"4M\"\n{fill}\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\nsize = \"4M\"\nprot = \"r\"\nmadvise = [{}]\n{body}",
        system(knobs),
        adv.join(", ")
    )
}

/// Warm order-0 page cache (4K writes, `__filemap_get_folio()`, mm/filemap.c:
/// order 0), sequential read of 1024 pages with fault_around_bytes = 4096 << n.
/// fault_around_pages = 2^n (`do_fault_around()`, mm/memory.c). For n ≥ 1 every
/// fault maps the whole VA-aligned 2^n window (the VMA is 2 MiB-aligned and a
/// multiple of the window, so nothing is clamped): faults = 1024 >> n, one
/// map_pages call each (filemap:mm_filemap_map_pages) and no ->fault (the
/// faulting page is mapped by fault-around, `do_read_fault()`, mm/memory.c). n
/// = 0 disables fault-around: every fault goes to filemap_fault() and
/// finish_fault() maps one order-0 page.
#[test]
fn fault_around_sweep_order0_cache() {
    for n in 0..=9u32 {
        let text = file_scenario(
            &format!("fault_around_bytes = \"4096<<{n}\"\n"),
            "fill = \"write\"\nwrite_size = \"4K\"",
            &[],
            &(phase("r") + &touch("m", "read", "")),
        );
        let r = run(&text);
        let faults = 1024 >> n;
        assert_eq!(c(&r, "r", "pgfault"), faults, "n={n}");
        assert_eq!(c(&r, "r", "minor-faults"), faults, "n={n}");
        assert_eq!(c(&r, "r", "major-faults"), 0, "n={n}");
        assert_eq!(c(&r, "r", "pgmajfault"), 0, "n={n}");
        let (map_pages, fault) = if n == 0 { (0, 1024) } else { (faults, 0) };
        assert_eq!(
            c(&r, "r", "filemap:mm_filemap_map_pages"),
            map_pages,
            "n={n}"
        );
        assert_eq!(c(&r, "r", "filemap:mm_filemap_fault"), fault, "n={n}");
        assert_eq!(folios(&r, "r", "m"), hist(&[("4kB", 1024)]), "n={n}");
    }
}

/// fault_around_bytes is rounded down to a power of two and capped at one page
/// table (`do_fault_around()`, mm/memory.c): 12 KiB → 2 pages (512 faults for
/// 1024 pages), 4 MiB → 512 pages (2 faults), 1 byte → 1 page (fault-around
/// off: 1024).
#[test]
fn fault_around_bytes_rounding() {
    for (bytes, faults) in [("12K", 512), ("4M", 2), ("1", 1024), ("65535", 128)] {
        let text = file_scenario(
            &format!("fault_around_bytes = \"{bytes}\"\n"),
            "fill = \"write\"\nwrite_size = \"4K\"",
            &[],
            &(phase("r") + &touch("m", "read", "")),
        );
        let r = run(&text);
        assert_eq!(c(&r, "r", "pgfault"), faults, "fault_around_bytes={bytes}");
    }
}

/// A file written with 64 KiB writes is cached as order-4 folios
/// (`__filemap_get_folio()`, mm/filemap.c). Reading it sequentially (1024
/// pages, 64 folios):
/// * fault-around 16 pages (default): each window is exactly one folio → 64;
/// * fault-around off (4 KiB): finish_fault() maps the whole folio
///   (mm/memory.c; needs_fallback is false even for the last folio, page-count
///   form) → 64;
/// * fault-around 32 pages: each window holds two whole folios → 32;
/// * fault-around 2 pages: the window is widened to the whole folio
///   (`filemap_map_pages()`, mm/filemap.c) for the first 63 folios → 63 faults;
///   the last folio ends at EOF, so fault-around's last-index test (file_end >=
///   next_index) makes it not large-mappable (`filemap_map_pages()`,
///   mm/filemap.c): only the 2-page window is mapped, 8 faults for it → 71.
#[test]
fn file_64k_folios_fault_around() {
    for (fab, faults) in [("64K", 64), ("4K", 64), ("128K", 32), ("8K", 71)] {
        let text = file_scenario(
            &format!("fault_around_bytes = \"{fab}\"\n"),
            "fill = \"write\"\nwrite_size = \"64K\"",
            &[],
            &(phase("r") + &touch("m", "read", "")),
        );
        let r = run(&text);
        assert_eq!(c(&r, "r", "pgfault"), faults, "fault_around_bytes={fab}");
        assert_counters(&r, "r", "major-faults=0 thp_file_mapped=0");
        assert_eq!(folios(&r, "r", "m"), hist(&[("64kB", 64)]), "{fab}");
    }
}

/// A file written with 2 MiB writes is cached as order-9 folios
/// (`__filemap_get_folio()`, mm/filemap.c). Read of the first 2 MiB:
/// fault-around finds a large-mappable PMD-size folio with the PMD none →
/// do_set_pmd() (`filemap_map_pages()`, mm/filemap.c): one fault maps 512
/// pages, thp_file_mapped 1 (observed on Linux 6.18.44). The second folio ends
/// at EOF: not large-mappable in fault-around, so map_pages maps nothing and
/// the fault goes to filemap_fault()/finish_fault(), whose page-count test
/// allows the PMD (`filemap_map_pages()`, mm/filemap.c; `finish_fault()`,
/// mm/memory.c): 1 more fault, thp_file_mapped 1. The sysfs `enabled` value is
/// not consulted (`finish_fault()`, mm/memory.c), so `never` changes nothing.
#[test]
fn file_2m_folios_map_by_pmd() {
    for top in ["madvise", "never"] {
        let text = file_scenario(
            &format!("transparent_hugepage.enabled = \"{top}\"\n"),
            "fill = \"write\"\nwrite_size = \"2M\"",
            &[],
            &(phase("first")
                + &touch("m", "read", "len = \"4K\"")
                + &phase("rest")
                + &touch("m", "read", "")),
        );
        let r = run(&text);
        assert_eq!(c(&r, "first", "pgfault"), 1, "{top}");
        assert_eq!(c(&r, "first", "thp_file_mapped"), 1, "{top}");
        assert_eq!(folios(&r, "first", "m"), hist(&[("2048kB", 1)]));
        assert_eq!(c(&r, "rest", "pgfault"), 1, "{top}");
        assert_eq!(c(&r, "rest", "thp_file_mapped"), 1, "{top}");
        assert_eq!(c(&r, "rest", "filemap:mm_filemap_fault"), 1, "{top}");
        assert_eq!(c(&r, "rest", "major-faults"), 0);
        assert_eq!(folios(&r, "rest", "m"), hist(&[("2048kB", 2)]));
    }
}

/// The first read of a PMD-size page-cache folio maps it by PMD whichever of
/// its pages is touched (observed on Linux 6.18.44: read 1 page → 512 (PMD),
/// thp_file_mapped +1; `do_set_pmd()`, mm/memory.c, refuses when THP disabled,
/// aligned block not inside the VMA, pgoff not congruent, not PMD order,
/// hwpoison — the page offset is not one of them: since 6.16 do_set_pmd() maps
/// &folio->page whatever page the caller passes). Page 0 and page 16 start a
/// fault-around window; pages 5, 100 and 511 do not, and must give the same: 1
/// fault, thp_file_mapped 1, one PMD.
#[test]
fn file_pmd_whatever_page_is_read_first() {
    for page in [0u64, 16, 5, 100, 511] {
        let text = file_scenario(
            "",
            "fill = \"write\"\nwrite_size = \"2M\"",
            &[],
            &(phase("r")
                + &touch(
                    "m",
                    "read",
                    &format!("offset = \"{}K\"\nlen = \"4K\"", page * 4),
                )),
        );
        let r = run(&text);
        assert_eq!(c(&r, "r", "pgfault"), 1, "page {page}");
        assert_eq!(c(&r, "r", "thp_file_mapped"), 1, "page {page}");
        assert_eq!(folios(&r, "r", "m"), hist(&[("2048kB", 1)]), "page {page}");
    }
}

/// A 2 MiB-folio file mapped from offset 4 KiB (4 MiB − 4 KiB long): the VMA
/// starts one page past a 2 MiB boundary and VA ≡ file offset mod 2 MiB
/// (`__thp_get_unmapped_area()`, mm/huge_memory.c), so vm_start and vm_pgoff
/// are congruent (`finish_fault()`, mm/memory.c).
/// * First folio (file pages 0-511): its aligned 2 MiB starts before the VMA,
///   so do_set_pmd() refuses and the folio is not inside the VMA, so
///   fault-around does not widen to it (`filemap_map_pages()`, mm/filemap.c):
///   the first read maps the 16-page window 1-16 (clamped at the VMA start,
///   `do_fault_around()`, mm/memory.c), and the rest of that page table takes
///   one fault per window: 17, 32, 48, ..., 496 → 31 more faults.
/// * Second folio (512-1023): it ends at EOF, so fault-around does not treat it
///   as large-mappable and, the PMD being none, maps nothing; the fault goes to
///   finish_fault(), which maps it with one PMD (aligned block inside the VMA,
///   congruent, no fallback: `filemap_map_pages()`, mm/filemap.c;
///   `finish_fault()`, mm/memory.c): 1 fault, thp_file_mapped 1.
#[test]
fn file_2m_folios_mapped_from_offset_4k() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"4M\"\nwrite_size = \"2M\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\noffset = \"4K\"\nsize = \"4092K\"\nprot = \"r\"\n{}{}{}{}",
        system(""),
        phase("first"),
        touch("m", "read", "len = \"4K\""),
        phase("all"),
        touch("m", "read", "")
    );
    let r = run(&text);
    assert_counters(&r, "first", "pgfault=1 thp_file_mapped=0");
    assert_eq!(folios(&r, "first", "m"), hist(&[("2048kB", 1)]));
    assert_counters(&r, "all", "pgfault=32 thp_file_mapped=1");
    assert_eq!(folios(&r, "all", "m"), hist(&[("2048kB", 2)]));
}

/// munmap of the last page of a 4 MiB mapping whose second 2 MiB is PMD-mapped
/// (a 2 MiB-write file): the PMD is only partly covered, so it is split, which
/// for a file PMD just zaps it (`zap_pte_range()` and `do_cow_fault()`,
/// mm/memory.c: thp_split_pmd 1). Reading pages 512-1022 again: the first fault
/// finds the PMD none and the folio (ending at EOF) not large-mappable for
/// fault-around, so finish_fault() maps it; do_set_pmd() refuses (the aligned 2
/// MiB is no longer inside the VMA) and the whole folio would pass the VMA end,
/// so one PTE (`finish_fault()`, mm/memory.c). Every later fault maps its
/// 16-page window without widening (`filemap_map_pages()`, mm/filemap.c): 513
/// (pages 513-527), then 528, 544, ..., 1008 (31 faults). 33 faults,
/// thp_file_mapped 0.
#[test]
fn munmap_tail_of_file_pmd_then_reread() {
    let text = file_scenario(
        "",
        "fill = \"write\"\nwrite_size = \"2M\"",
        &[],
        &(touch("m", "read", "offset = \"2M\"\nlen = \"4K\"")
            + &phase("cut")
            + "[[step]]\nop = \"munmap\"\nregion = \"m\"\noffset = \"4092K\"\n"
            + &phase("reread")
            + &touch("m", "read", "offset = \"2M\"\nlen = \"2044K\"")),
    );
    let r = run(&text);
    assert_eq!(c(&r, "cut", "thp_split_pmd"), 1);
    assert_eq!(folios(&r, "cut", "m"), hist(&[]));
    assert_counters(&r, "reread", "pgfault=33 thp_file_mapped=0");
    assert_eq!(folios(&r, "reread", "m"), hist(&[("2048kB", 1)]));
}

/// Readahead marker (`filemap_map_pages()`, `do_sync_mmap_readahead()` and
/// `filemap_fault()`, mm/filemap.c; `page_cache_ra_order()`, mm/readahead.c).
/// Cold 4 MiB file, default read_ahead_kb 128 (ra_pages 32). The first read of
/// page 0 reads around: start max(0, 0 − 16) = 0, size 32, async_size 8, so
/// pages 0-31 (order 0) with PG_readahead on page 24; the counted (retry) fault
/// maps the window 0-15. A read of page 16 maps its window 16-31 except the
/// marker page 24, which fault-around never maps: 31 pages present. A read of
/// page 24 then goes to filemap_fault(), which starts async readahead and
/// retries (not counted, not major: `mm_account_fault()`, mm/memory.c); the
/// retry maps page 24: 1 minor fault, no pgmajfault. The async window is the
/// next 32 pages (32-63) with the order raised by 2
/// (`do_sync_mmap_readahead()`, mm/filemap.c; `page_cache_ra_order()`,
/// mm/readahead.c: order 2, capped by ilog2(32) = 5 and the mapping's 9): 8
/// folios of 16 KiB, 32 pages read.
#[test]
fn readahead_marker_is_not_mapped_by_fault_around() {
    let text = file_scenario(
        "",
        "fill = \"cold\"",
        &[],
        &(phase("p0")
            + &touch("m", "read", "len = \"4K\"")
            + &phase("p16")
            + &touch("m", "read", "offset = \"64K\"\nlen = \"4K\"")
            + &phase("p24")
            + &touch("m", "read", "offset = \"96K\"\nlen = \"4K\"")),
    );
    let r = run(&text);
    assert_counters(&r, "p0", "major-faults=1 sim/pages_read_io=32");
    assert_eq!(folios(&r, "p0", "m"), hist(&[("4kB", 16)]));
    assert_counters(&r, "p16", "pgfault=1 major-faults=0 sim/pages_read_io=0");
    assert_eq!(folios(&r, "p16", "m"), hist(&[("4kB", 31)]));
    assert_counters(
        &r,
        "p24",
        "pgfault=1 minor-faults=1 major-faults=0 pgmajfault=0 sim/pages_read_io=32",
    );
    assert_eq!(folios(&r, "p24", "m"), hist(&[("4kB", 32)]));
}

/// MADV_NOHUGEPAGE makes do_set_pmd() refuse (`finish_fault()`, mm/memory.c:
/// vma_thp_disabled()). First folio: filemap_map_pmd() then installs a PTE
/// table and the folio (inside the VMA, inside one page table, before EOF) is
/// mapped whole by PTEs (`filemap_map_pages()`, mm/filemap.c): 1 fault. Last
/// folio: fault-around maps nothing (not large-mappable, PMD none,
/// `filemap_map_pages()`, mm/filemap.c), finish_fault() falls back from
/// do_set_pmd() to the table and maps the whole folio (`finish_fault()`,
/// mm/memory.c): 1 fault. 2 faults, no thp_file_mapped.
#[test]
fn file_2m_folios_with_nohugepage_map_by_ptes() {
    let text = file_scenario(
        "",
        "fill = \"write\"\nwrite_size = \"2M\"",
        &["nohugepage"],
        &(phase("r") + &touch("m", "read", "")),
    );
    let r = run(&text);
    assert_counters(&r, "r", "pgfault=2 thp_file_mapped=0");
    assert_eq!(folios(&r, "r", "m"), hist(&[("2048kB", 2)]));
}

/// The fault-around window is clamped to the VMA start and then extends
/// `fault_around_pages` from there (`do_fault_around()`, mm/memory.c: from =
/// max(ALIGN_DOWN(pte_off, 16), pte_off − min(pte_off, vma_off)), to =
/// min(from + 16, 512, VMA end) − 1). The file is mapped from offset 4 KiB, so the VMA
/// starts one page past a 2 MiB boundary (`__thp_get_unmapped_area()`,
/// mm/huge_memory.c: VA ≡ file offset mod 2 MiB). A read of its first page
/// (pte_off 1, vma_off 0) maps PTEs 1-16: 16 pages, not the 15 of the aligned
/// block 0-15. Reading the whole 1023-page mapping then faults at 1, 17, 32,
/// 48, ..., 496 in the first table (32 faults) and every 16 pages in the second
/// (32): 64.
#[test]
fn fault_around_window_clamped_at_vma_start() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"4M\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\noffset = \"4K\"\nsize = \"4092K\"\nprot = \"r\"\n{}{}{}{}",
        system(""),
        phase("first"),
        touch("m", "read", "len = \"4K\""),
        phase("all"),
        touch("m", "read", "")
    );
    let r = run(&text);
    assert_eq!(c(&r, "first", "pgfault"), 1);
    assert_eq!(folios(&r, "first", "m"), hist(&[("4kB", 16)]));
    assert_eq!(c(&r, "all", "pgfault"), 63);
    assert_eq!(folios(&r, "all", "m"), hist(&[("4kB", 1023)]));
}

/// A file smaller than its mapping: i_size = 10 KiB (3 pages, the last
/// partial), mapping 16 KiB. Reading pages 0-2 works, and fault-around never
/// maps beyond EOF (`filemap_map_pages()`, mm/filemap.c; `finish_fault()`,
/// mm/memory.c): exactly the 3 pages get mapped, by one fault, or two if the
/// 4-page VMA straddles a 16-page window boundary (its placement is not
/// aligned, `__thp_get_unmapped_area()`, mm/huge_memory.c). Page 3 is beyond
/// EOF: SIGBUS (`filemap_fault()`, mm/filemap.c).
#[test]
fn file_beyond_eof_sigbus() {
    let base = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"10K\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\nsize = \"16K\"\nprot = \"r\"\n",
        system("")
    );
    let ok = base.clone() + &phase("r") + &touch("m", "read", "len = \"12K\"");
    let r = run(&ok);
    assert!((1..=2).contains(&c(&r, "r", "pgfault")));
    assert_eq!(folios(&r, "r", "m"), hist(&[("4kB", 3)]));
    let bad = base + &touch("m", "read", "");
    match try_run_with(&bad, &[]) {
        Err(SimError::Killed { signal, .. }) => assert_eq!(signal, "SIGBUS"),
        other => panic!("expected SIGBUS, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Cold files: major faults and readahead (`mm_account_fault()`, mm/memory.c;
// `filemap_fault()` and `do_sync_mmap_readahead()`, mm/filemap.c;
// `page_cache_ra_order()`, mm/readahead.c, observed on Linux 6.18.44).

/// observed on Linux 6.18.44: cold 16 MiB file, read_ahead_kb 8192 (ra_pages
/// 2048). The first read of page 0 is a page-cache miss: pgmajfault 1, sync
/// read-around of pages 0-2047 (order 0, PG_readahead on page 1536), RETRY; the
/// retry maps the 16-page window and is the one counted fault, major
/// (FAULT_FLAG_TRIED, `mm_account_fault()`, mm/memory.c). Reading all 4096
/// pages afterwards: every other 16-page window faults once (255 faults), all
/// minor (readahead keeps ahead: the marker hit at 1536 reads 2048-4095 as
/// order-2 folios, `do_sync_mmap_readahead()`, mm/filemap.c;
/// `page_cache_ra_order()`, mm/readahead.c async +2; the marker's own retry is
/// not counted, `filemap_fault()`, mm/filemap.c), and no more major faults.
#[test]
fn cold_file_first_fault_is_major() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"16M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\nsize = \"16M\"\nprot = \"r\"\n{}{}{}{}",
        system("read_ahead_kb = 8192\n"),
        phase("first"),
        touch("m", "read", "len = \"4K\""),
        phase("rest"),
        touch("m", "read", "")
    );
    let r = run(&text);
    assert_counters(
        &r,
        "first",
        "pgfault=1 major-faults=1 minor-faults=0 pgmajfault=1",
    );
    assert_eq!(folios(&r, "first", "m"), hist(&[("4kB", 16)]));

    assert_counters(
        &r,
        "rest",
        "pgfault=255 minor-faults=255 major-faults=0 pgmajfault=0",
    );
    assert_eq!(
        folios(&r, "rest", "m"),
        hist(&[("4kB", 2048), ("16kB", 512)])
    );
}

/// Default read_ahead_kb (128 → 32 pages): still exactly one major fault for a
/// sequential read of a cold file (`filemap_fault()`, mm/filemap.c: a cold file
/// page gives one counted major fault; readahead then stays ahead of the
/// reader).
#[test]
fn cold_file_sequential_one_major_fault() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"4M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\nsize = \"4M\"\nprot = \"r\"\n{}{}",
        system(""),
        phase("r"),
        touch("m", "read", "")
    );
    let r = run(&text);
    assert_counters(&r, "r", "major-faults=1 pgmajfault=1");
    let h = folios(&r, "r", "m");
    assert_eq!(hist_pages(&h), 1024, "{h:?}");
}

/// MADV_RANDOM on a cold file: no readahead at all (`do_sync_mmap_readahead()`,
/// mm/filemap.c; `page_cache_ra_order()`, mm/readahead.c), each fault reads one
/// order-0 folio synchronously and is major (`filemap_fault()`, mm/filemap.c:
/// "1 major per page"): 64 pages → 64 major faults, pgmajfault 64, 64 order-0
/// folios.
#[test]
fn madv_random_cold_file_one_major_per_page() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"256K\"\nfill = \"cold\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\nsize = \"256K\"\nprot = \"r\"\nmadvise = [\"random\"]\n{}{}",
        system(""),
        phase("r"),
        touch("m", "read", "")
    );
    let r = run(&text);
    assert_counters(
        &r,
        "r",
        "pgfault=64 major-faults=64 minor-faults=0 pgmajfault=64",
    );
    assert_eq!(folios(&r, "r", "m"), hist(&[("4kB", 64)]));
}

/// MADV_HUGEPAGE on a cold file: do_sync_mmap_readahead() reads 1024 pages as
/// two order-9 folios whatever `enabled` says (`do_sync_mmap_readahead()`,
/// mm/filemap.c; `page_cache_ra_order()`, mm/readahead.c, observed with
/// enabled=never), and the faulting access maps the first by PMD: 1 major
/// fault, pgmajfault 1, thp_file_mapped 1.
#[test]
fn madv_hugepage_cold_file_reads_pmd_folios() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"8M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\nsize = \"8M\"\nprot = \"r\"\nmadvise = [\"hugepage\"]\n{}{}",
        system("transparent_hugepage.enabled = \"never\"\n"),
        phase("r"),
        touch("m", "read", "len = \"4K\"")
    );
    let r = run(&text);
    assert_counters(
        &r,
        "r",
        "pgfault=1 major-faults=1 pgmajfault=1 thp_file_mapped=1 sim/pages_read_io=1024",
    );
    assert_eq!(folios(&r, "r", "m"), hist(&[("2048kB", 1)]));
}

// ---------------------------------------------------------------------------
// fork and COW (`copy_present_ptes()`, mm/memory.c; `do_huge_pmd_wp_page()` and
// `deferred_split_folio()`, mm/huge_memory.c).

/// 64K `always`; the parent writes the first 64K (one 64K folio), forks a child
/// that stays alive. Parent write to page 0: the PTE is write-protected
/// (`copy_present_ptes()`, mm/memory.c), the folio is large and mapped by two
/// mms (maybe shared) → no reuse → wp_page_copy() of one page into an order-0
/// folio (`do_wp_page()`, mm/memory.c): 1 fault, 1 folio allocated, no mTHP
/// stat; the 64K folio stays (pages 1-15). Page 0's mapping by the child keeps
/// the folio fully mapped, so no deferred split. After `wait` the child's exit
/// unmaps pages 0-15 of the folio; page 0 loses its last mapping while 1-15
/// stay mapped, so the folio becomes partially mapped
/// (`deferred_split_folio()`, mm/huge_memory.c): split_deferred[64K] 1. Then
/// each write to pages 1-15 is a fault that reuses the now exclusive folio
/// (`do_wp_page()`, mm/memory.c: large mapcount 15 > 1, one MM): 15 faults,
/// pgreuse 15, nothing allocated (`do_wp_page()`, mm/memory.c).
#[test]
fn fork_then_parent_writes_64k_mthp() {
    let text = system(&mthp(64, "always"))
        + &anon_region("heap", "2M", &[])
        + &touch("heap", "write", "len = \"64K\"")
        + "[[step]]\nop = \"fork\"\n"
        + &phase("cow")
        + &touch("heap", "write", "len = \"4K\"")
        + &phase("wait")
        + "[[step]]\nop = \"wait\"\n"
        + &phase("reuse")
        + &touch("heap", "write", "offset = \"4K\"\nlen = \"60K\"");
    let r = run(&text);
    assert_counters(
        &r,
        "cow",
        "pgfault=1 sim/folio_alloc=1 sim/page_copy=1 pgreuse=0",
    );
    assert_mthp_stat(&r, "cow", "anon_fault_alloc", &[]);
    assert_mthp_stat(&r, "cow", "split_deferred", &[]);
    assert_eq!(folios(&r, "cow", "heap"), hist(&[("4kB", 1), ("64kB", 1)]));

    assert_eq!(c(&r, "wait", "pgfault"), 0);
    assert_mthp_stat(&r, "wait", "split_deferred", &[(64, 1)]);

    assert_counters(&r, "reuse", "pgfault=15 pgreuse=15 sim/folio_alloc=0");
    assert_eq!(
        folios(&r, "reuse", "heap"),
        hist(&[("4kB", 1), ("64kB", 1)])
    );
}

/// After the child exits, the parent's write-protected PTEs of a 64K folio
/// map a folio only this mm maps (large mapcount 16 > 1, not maybe-shared),
/// so every write reuses its page (`wp_can_reuse_anon_folio()`, mm/memory.c:
/// "each page still needs its own write fault (reuse), but nothing is
/// allocated"): 16 faults, pgreuse 16, no allocation, no split.
#[test]
fn fork_wait_then_write_reuses_64k_mthp() {
    let text = system(&mthp(64, "always"))
        + &anon_region("heap", "2M", &[])
        + &touch("heap", "write", "len = \"64K\"")
        + "[[step]]\nop = \"fork\"\n[[step]]\nop = \"wait\"\n"
        + &phase("w")
        + &touch("heap", "write", "len = \"64K\"");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=16 pgreuse=16 sim/folio_alloc=0");
    assert_mthp_stat(&r, "w", "split_deferred", &[]);
    assert_eq!(folios(&r, "w", "heap"), hist(&[("64kB", 1)]));
}

/// fork copies page tables only for VMAs with an anon_vma
/// (`copy_present_ptes()`, mm/memory.c): a region that was only read (zero-page
/// PTEs; the read path never prepares an anon_vma, `do_anonymous_page()`,
/// mm/memory.c) is faulted in again by the child, one zero PTE per fault (16
/// faults for 16 pages); a written region is copied (0 faults for the child's
/// reads). The read-only region has other flags, so the two do not merge into
/// one VMA.
#[test]
fn fork_copies_only_vmas_with_anon_vma() {
    let text = system("")
        + "[[step]]\nop = \"mmap\"\nregion = \"z\"\nkind = \"anon\"\nsize = \"64K\"\nprot = \"r\"\n"
        + &anon_region("w", "64K", &[])
        + &touch("z", "read", "")
        + &touch("w", "write", "")
        + &phase("child")
        + "[[step]]\nop = \"fork\"\n\
           [[step.child]]\nop = \"touch\"\nregion = \"z\"\naccess = \"read\"\n\
           [[step.child]]\nop = \"touch\"\nregion = \"w\"\naccess = \"read\"\n";
    let r = run(&text);
    assert_counters(&r, "child", "pgfault=16 sim/folio_alloc=0");
}

/// The huge-zero PMD path prepares the anon_vma before the read check
/// (`do_huge_pmd_anonymous_page()`, mm/huge_memory.c), so a fork copies the
/// huge-zero PMD (`copy_present_ptes()`, mm/memory.c: PMDs are shared at PMD
/// level) and the child's reads do not fault. A later parent write replaces its
/// huge-zero PMD with a new THP (`do_huge_pmd_anonymous_page()`,
/// mm/huge_memory.c): 1 fault.
#[test]
fn fork_shares_huge_zero_pmd() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + &touch("heap", "read", "")
        + &phase("child")
        + "[[step]]\nop = \"fork\"\n\
           [[step.child]]\nop = \"touch\"\nregion = \"heap\"\naccess = \"read\"\n"
        + &phase("w")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_eq!(c(&r, "child", "pgfault"), 0);
    assert_counters(&r, "w", "pgfault=1 thp_fault_alloc=1 thp_zero_page_alloc=0");
    assert_eq!(folios(&r, "w", "heap"), hist(&[("2048kB", 1)]));
}

/// Private file mappings that were never written and shared file mappings have
/// no anon_vma, so fork does not copy their page tables (`copy_present_ptes()`,
/// mm/memory.c): the child faults them in again with fault-around. The parent
/// read 1 MiB of each (order-0 cache: 16 windows each); the child reading the
/// same 2 MiB takes 32 faults, all minor, and allocates nothing.
#[test]
fn fork_does_not_copy_unwritten_file_mappings() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"4M\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"p\"\nkind = \"file\"\nfile = \"f\"\nsize = \"4M\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"s\"\nkind = \"file\"\nfile = \"f\"\nsize = \"4M\"\nshared = true\n{}{}{}{}{}",
        system(""),
        phase("parent"),
        touch("p", "read", "len = \"1M\""),
        touch("s", "read", "len = \"1M\""),
        phase("child"),
        "[[step]]\nop = \"fork\"\n\
         [[step.child]]\nop = \"touch\"\nregion = \"p\"\naccess = \"read\"\nlen = \"1M\"\n\
         [[step.child]]\nop = \"touch\"\nregion = \"s\"\naccess = \"read\"\nlen = \"1M\"\n"
    );
    let r = run(&text);
    assert_eq!(c(&r, "parent", "pgfault"), 32);
    assert_counters(&r, "child", "pgfault=32 major-faults=0 sim/folio_alloc=0");
}

/// Two PMD THPs shared after fork; the child writes one page in each: each
/// write splits that PMD in the child and copies one page
/// (`do_huge_pmd_wp_page()`, mm/huge_memory.c): 2 faults, thp_split_pmd 2, 2
/// order-0 folios. The parent's view is unchanged.
#[test]
fn fork_child_writes_two_pmd_thps() {
    let text = system("")
        + &anon_region("h", "4M", &["hugepage"])
        + &touch("h", "write", "")
        + &phase("child")
        + "[[step]]\nop = \"fork\"\n\
           [[step.child]]\nop = \"touch\"\nregion = \"h\"\naccess = \"write\"\npattern = \"stride\"\nstride = \"2M\"\n";
    let r = run(&text);
    assert_counters(
        &r,
        "child",
        "pgfault=2 thp_split_pmd=2 sim/folio_alloc=2 thp_fault_alloc=0",
    );
    assert_eq!(folios(&r, "child", "h"), hist(&[("2048kB", 2)]));
}

/// `do_wp_page()`, mm/memory.c: a large anon folio mapped by a single PTE is
/// never reused ("folio_large_mapcount ≤ 1 → do not reuse", so that a mostly
/// unmapped folio can be freed). After fork and wait the 64K folio's PTEs are
/// write-protected and not exclusive; MADV_DONTNEED of pages 1-15 leaves one
/// mapping (and marks the folio partially mapped, `deferred_split_folio()`,
/// mm/huge_memory.c). The write to page 0 then copies it into an order-0 folio
/// and the old folio loses its last mapping and is freed: 1 fault, 1 folio
/// allocated, 1 freed, no reuse.
#[test]
fn large_folio_mapped_once_is_copied_not_reused() {
    let text = system(&mthp(64, "always"))
        + &anon_region("a", "2M", &[])
        + &touch("a", "write", "len = \"64K\"")
        + "[[step]]\nop = \"fork\"\n[[step]]\nop = \"wait\"\n"
        + &phase("dn")
        + &madvise("a", "dontneed", "offset = \"4K\"\nlen = \"60K\"")
        + &phase("w")
        + &touch("a", "write", "len = \"4K\"");
    let r = run(&text);
    assert_mthp_stat(&r, "dn", "split_deferred", &[(64, 1)]);
    assert_counters(
        &r,
        "w",
        "pgfault=1 pgreuse=0 sim/folio_alloc=1 sim/folio_free=1",
    );
    assert_eq!(folios(&r, "w", "a"), hist(&[("4kB", 1)]));
}

/// Regression test (this was a model bug, fixed in e085f4b while these tests
/// were written): one order-0 anon page, fork, parent write. wp_page_copy()
/// replaces an anon page by an anon page, so MM_ANONPAGES must not change
/// (`wp_page_copy()`, mm/memory.c: if the old page was a file page, file RSS −1
/// and anon +1; if it was the zero page, anon +1); the checker compares
/// rss_stat with the page tables after the step.
#[test]
fn fork_cow_of_anon_page_keeps_rss() {
    let text = system("")
        + &anon_region("a", "4K", &[])
        + &touch("a", "write", "")
        + "[[step]]\nop = \"fork\"\n"
        + &phase("cow")
        + &touch("a", "write", "");
    let r = run(&text);
    assert_counters(&r, "cow", "pgfault=1 sim/folio_alloc=1");
    assert_eq!(folios(&r, "cow", "a"), hist(&[("4kB", 1)]));
}

/// The child writes instead: the same COW rule applies in the child (its PTEs
/// are write-protected copies, `copy_present_ptes()`, mm/memory.c): 1 fault, 1
/// order-0 folio. The parent's view is unchanged (one 64K folio).
#[test]
fn fork_child_writes_64k_mthp() {
    let text = system(&mthp(64, "always"))
        + &anon_region("heap", "2M", &[])
        + &touch("heap", "write", "len = \"64K\"")
        + &phase("child")
        + "[[step]]\nop = \"fork\"\n\
           [[step.child]]\nop = \"touch\"\nregion = \"heap\"\naccess = \"write\"\nlen = \"4K\"\n";
    let r = run(&text);
    assert_counters(&r, "child", "pgfault=1 sim/folio_alloc=1");
    assert_eq!(folios(&r, "child", "heap"), hist(&[("64kB", 1)]));
}

/// PMD THP after fork (`copy_present_ptes()`, mm/memory.c: shared at PMD level;
/// `do_huge_pmd_wp_page()`, mm/huge_memory.c): the parent's write finds a
/// non-exclusive PMD mapped twice → split the PMD (thp_split_pmd 1) and COW one
/// 4 KiB page: 1 fault, 1 order-0 folio.
#[test]
fn fork_then_parent_writes_pmd_thp() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + &touch("heap", "write", "len = \"4K\"")
        + "[[step]]\nop = \"fork\"\n"
        + &phase("cow")
        + &touch("heap", "write", "len = \"4K\"");
    let r = run(&text);
    assert_counters(
        &r,
        "cow",
        "pgfault=1 thp_split_pmd=1 sim/folio_alloc=1 thp_fault_alloc=0",
    );
    assert_eq!(
        folios(&r, "cow", "heap"),
        hist(&[("4kB", 1), ("2048kB", 1)])
    );
}

/// A PMD THP whose child has exited is mapped once again: the write fault on
/// the write-protected PMD reuses it whole (`do_huge_pmd_wp_page()`,
/// mm/huge_memory.c: refcount ≤ 1 → reuse the PMD): 1 fault for all 512 pages,
/// no split, no allocation.
#[test]
fn pmd_thp_reused_after_child_exit() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + &touch("heap", "write", "len = \"4K\"")
        + "[[step]]\nop = \"fork\"\n[[step]]\nop = \"wait\"\n"
        + &phase("w")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=1 thp_split_pmd=0 sim/folio_alloc=0");
    assert_eq!(folios(&r, "w", "heap"), hist(&[("2048kB", 1)]));
}

// ---------------------------------------------------------------------------
// Private and shared file mappings (`do_cow_fault()` and `wp_page_shared()`,
// mm/memory.c).

fn rw_file(fill: &str, shared: bool, body: &str) -> String {
    format!(
        "{}[[file]]\nname = \"f\"\nsize = \"4M\"\n{fill}\n\
         [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\nsize = \"4M\"\nshared = {shared}\n{body}",
        system("")
    )
}

/// Write to an unmapped page of a MAP_PRIVATE file mapping: do_cow_fault()
/// (`do_cow_fault()`, mm/memory.c): no fault-around, one page copied into a new
/// order-0 anon folio, 1 PTE: 1 fault, 1 folio, 1 page copied, one 4K folio
/// mapped.
#[test]
fn private_file_write_is_do_cow_fault() {
    let text = rw_file(
        "fill = \"write\"\nwrite_size = \"4K\"",
        false,
        &(phase("w") + &touch("m", "write", "len = \"4K\"")),
    );
    let r = run(&text);
    assert_counters(
        &r,
        "w",
        "pgfault=1 sim/folio_alloc=1 sim/page_copy=1 filemap:mm_filemap_map_pages=0",
    );
    assert_eq!(folios(&r, "w", "m"), hist(&[("4kB", 1)]));
}

/// Read then write in a MAP_PRIVATE file mapping: the read maps the 16-page
/// window read-only (`do_fault_around()`, mm/memory.c); the write hits a
/// present read-only page-cache PTE → do_wp_page() → wp_page_copy()
/// (`do_cow_fault()`, mm/memory.c): 1 fault, one order-0 anon folio, no reuse.
#[test]
fn private_file_read_then_write_copies() {
    let text = rw_file(
        "fill = \"write\"\nwrite_size = \"4K\"",
        false,
        &(phase("r")
            + &touch("m", "read", "len = \"4K\"")
            + &phase("w")
            + &touch("m", "write", "len = \"4K\"")),
    );
    let r = run(&text);
    assert_eq!(c(&r, "r", "pgfault"), 1);
    assert_eq!(folios(&r, "r", "m"), hist(&[("4kB", 16)]));
    assert_counters(
        &r,
        "w",
        "pgfault=1 pgreuse=0 sim/folio_alloc=1 sim/page_copy=1",
    );
    assert_eq!(folios(&r, "w", "m"), hist(&[("4kB", 16)]));
}

/// Write on a PMD-mapped page-cache THP in a private mapping (`do_cow_fault()`,
/// mm/memory.c): the PMD is zapped (thp_split_pmd 1), then do_cow_fault() maps
/// one anon page: 1 fault, only that page present. The next read fault maps the
/// rest of the folio by PTEs through fault-around (widened to the whole folio,
/// skipping the anon PTE): 1 fault, 512 pages present.
#[test]
fn private_file_write_on_pmd_mapped_thp() {
    let text = rw_file(
        "fill = \"write\"\nwrite_size = \"2M\"",
        false,
        &(phase("r")
            + &touch("m", "read", "len = \"4K\"")
            + &phase("w")
            + &touch("m", "write", "len = \"4K\"")
            + &phase("r2")
            + &touch("m", "read", "offset = \"4K\"\nlen = \"2044K\"")),
    );
    let r = run(&text);
    assert_counters(&r, "r", "pgfault=1 thp_file_mapped=1");
    assert_counters(&r, "w", "pgfault=1 thp_split_pmd=1 sim/folio_alloc=1");
    assert_eq!(folios(&r, "w", "m"), hist(&[("4kB", 1)]));
    assert_counters(&r, "r2", "pgfault=1 thp_file_mapped=0");
    let h = folios(&r, "r2", "m");
    assert_eq!(h, hist(&[("4kB", 1), ("2048kB", 1)]));
}

/// MAP_SHARED ext4-like file: read faults install read-only PTEs (write-notify,
/// `wp_page_shared()`, mm/memory.c), so after reading 16 pages each first write
/// takes its own write-protect fault that reuses the page (wp_page_shared() →
/// wp_page_reuse(), PGREUSE): 16 faults, pgreuse 16, nothing allocated.
#[test]
fn shared_file_read_then_write_faults_per_page() {
    let text = rw_file(
        "fill = \"write\"\nwrite_size = \"64K\"",
        true,
        &(phase("r")
            + &touch("m", "read", "len = \"64K\"")
            + &phase("w")
            + &touch("m", "write", "len = \"64K\"")),
    );
    let r = run(&text);
    assert_eq!(c(&r, "r", "pgfault"), 1);
    assert_counters(&r, "w", "pgfault=16 pgreuse=16 sim/folio_alloc=0");
    assert_eq!(folios(&r, "w", "m"), hist(&[("64kB", 1)]));
}

/// A write fault on an unmapped page of a MAP_SHARED file maps the whole
/// folio writable and dirty (do_shared_fault() → finish_fault(), mm/memory.c,
/// `finish_fault()`, mm/memory.c): 64K folios, 1 MiB written → 16 faults.
#[test]
fn shared_file_write_fault_maps_whole_folio() {
    let text = rw_file(
        "fill = \"write\"\nwrite_size = \"64K\"",
        true,
        &(phase("w") + &touch("m", "write", "len = \"1M\"")),
    );
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=16 pgreuse=0 sim/folio_alloc=0");
    assert_eq!(folios(&r, "w", "m"), hist(&[("64kB", 16)]));
}

/// Write on a PMD-mapped page-cache THP in a shared mapping
/// (`wp_page_shared()`, mm/memory.c, observed): 1 fault, thp_split_pmd 1,
/// thp_file_mapped 1 (a writable PMD again), and all 512 pages writable
/// afterwards.
#[test]
fn shared_file_write_on_pmd_mapped_thp() {
    let text = rw_file(
        "fill = \"write\"\nwrite_size = \"2M\"",
        true,
        &(phase("r")
            + &touch("m", "read", "len = \"4K\"")
            + &phase("w")
            + &touch("m", "write", "len = \"2M\"")),
    );
    let r = run(&text);
    assert_eq!(c(&r, "r", "pgfault"), 1);
    assert_counters(&r, "w", "pgfault=1 thp_split_pmd=1 thp_file_mapped=1");
    assert_eq!(folios(&r, "w", "m"), hist(&[("2048kB", 1)]));
}

// ---------------------------------------------------------------------------
// Shared anonymous memory (shmem) (`shmem_allowable_huge_orders()`, mm/shmem.c;
// `copy_present_ptes()`, mm/memory.c).

/// MAP_SHARED|MAP_ANONYMOUS with the default shmem settings (huge=never,
/// per-size never): each first touch of a hole allocates one order-0 folio and
/// maps 1 PTE, writable (no write-notify for shmem, `wp_page_shared()`,
/// mm/memory.c): 256 pages → 256 read faults; writing them afterwards takes no
/// fault. A forked child does not inherit the PTEs (no anon_vma,
/// `copy_present_ptes()`, mm/memory.c) and faults them in again through
/// fault-around over cached pages: 16 pages per fault, i.e. 16 faults if the
/// region starts 64K-aligned, 17 otherwise (the placement of a shmem mapping is
/// not PMD-aligned, `__thp_get_unmapped_area()`, mm/huge_memory.c).
#[test]
fn shmem_read_faults() {
    let text = system("")
        + "[[step]]\nop = \"mmap\"\nregion = \"s\"\nkind = \"shmem\"\nshared = true\nsize = \"1M\"\n"
        + &phase("r")
        + &touch("s", "read", "")
        + &phase("w")
        + &touch("s", "write", "")
        + &phase("child")
        + "[[step]]\nop = \"fork\"\n\
           [[step.child]]\nop = \"touch\"\nregion = \"s\"\naccess = \"read\"\n";
    let r = run(&text);
    assert_counters(&r, "r", "pgfault=256 sim/folio_alloc=256 major-faults=0");
    assert_eq!(folios(&r, "r", "s"), hist(&[("4kB", 256)]));
    assert_eq!(c(&r, "w", "pgfault"), 0);
    let child = c(&r, "child", "pgfault");
    assert!((16..=17).contains(&child), "child faults {child}");
    assert_eq!(c(&r, "child", "sim/folio_alloc"), 0);
}

// ---------------------------------------------------------------------------
// MADV_DONTNEED, munmap and deferred split (`zap_pte_range()` and
// `__handle_mm_fault()`, mm/memory.c; `deferred_split_folio()`,
// mm/huge_memory.c).

/// 64K `always`, 2 MiB region fully written (32 × 64K).
fn mthp64_written(body: &str) -> String {
    system(&mthp(64, "always"))
        + &anon_region("heap", "2M", &[])
        + &touch("heap", "write", "")
        + body
}

fn madvise(region: &str, advice: &str, range: &str) -> String {
    format!("[[step]]\nop = \"madvise\"\nregion = \"{region}\"\nadvice = \"{advice}\"\n{range}\n")
}

fn munmap(region: &str, range: &str) -> String {
    format!("[[step]]\nop = \"munmap\"\nregion = \"{region}\"\n{range}\n")
}

/// `deferred_split_folio()`, mm/huge_memory.c; observed: MADV_DONTNEED of 1
/// page of a 64K mTHP → split_deferred [64K] +1. A write to that page again:
/// its 64K and 16K... blocks are not empty (`alloc_anon_folio()`, mm/memory.c),
/// so it gets an order-0 folio: 1 fault, no anon_fault_alloc. DONTNEED of the
/// rest of the folio afterwards unmaps its last pages: the folio is freed and
/// not counted again.
#[test]
fn dontneed_one_page_of_64k_defers_split() {
    let text = mthp64_written(
        &(phase("dn")
            + &madvise("heap", "dontneed", "len = \"4K\"")
            + &phase("w")
            + &touch("heap", "write", "len = \"4K\"")
            + &phase("rest")
            + &madvise("heap", "dontneed", "offset = \"4K\"\nlen = \"60K\"")),
    );
    let r = run(&text);
    assert_mthp_stat(&r, "dn", "split_deferred", &[(64, 1)]);
    assert_eq!(c(&r, "dn", "thp_deferred_split_page"), 0);
    assert_eq!(folios(&r, "dn", "heap"), hist(&[("64kB", 32)]));
    assert_eq!(c(&r, "w", "pgfault"), 1);
    assert_mthp_stat(&r, "w", "anon_fault_alloc", &[]);
    assert_eq!(c(&r, "w", "sim/folio_alloc"), 1);
    assert_eq!(folios(&r, "w", "heap"), hist(&[("4kB", 1), ("64kB", 32)]));
    assert_mthp_stat(&r, "rest", "split_deferred", &[]);
    assert_eq!(c(&r, "rest", "sim/folio_free"), 1);
    assert_eq!(
        folios(&r, "rest", "heap"),
        hist(&[("4kB", 1), ("64kB", 31)])
    );
}

/// `deferred_split_folio()`, mm/huge_memory.c: unmapping a whole folio in one
/// zap does not queue it. Munmap of exactly one aligned 64K folio frees it,
/// split_deferred 0. Unmapping another folio in two calls queues it after the
/// first and frees it after the second (counted once).
#[test]
fn munmap_whole_folio_vs_two_halves() {
    let text = mthp64_written(
        &(phase("whole")
            + &munmap("heap", "offset = \"64K\"\nlen = \"64K\"")
            + &phase("half1")
            + &munmap("heap", "offset = \"128K\"\nlen = \"32K\"")
            + &phase("half2")
            + &munmap("heap", "offset = \"160K\"\nlen = \"32K\"")),
    );
    let r = run(&text);
    assert_mthp_stat(&r, "whole", "split_deferred", &[]);
    assert_eq!(c(&r, "whole", "sim/folio_free"), 1);
    assert_eq!(folios(&r, "whole", "heap"), hist(&[("64kB", 31)]));
    assert_mthp_stat(&r, "half1", "split_deferred", &[(64, 1)]);
    assert_eq!(c(&r, "half1", "sim/folio_free"), 0);
    assert_eq!(folios(&r, "half1", "heap"), hist(&[("64kB", 31)]));
    assert_mthp_stat(&r, "half2", "split_deferred", &[]);
    assert_eq!(c(&r, "half2", "sim/folio_free"), 1);
    assert_eq!(folios(&r, "half2", "heap"), hist(&[("64kB", 30)]));
}

/// munmap of a range that cuts two folios (pages 2-17: the tail of folio 0
/// and the head of folio 1) leaves both partially mapped: split_deferred
/// [64K] 2, nothing freed. A later touch of the unmapped range is SIGSEGV.
#[test]
fn munmap_part_of_mthp_region() {
    let text = mthp64_written(&(phase("cut") + &munmap("heap", "offset = \"8K\"\nlen = \"64K\"")));
    let r = run(&text);
    assert_mthp_stat(&r, "cut", "split_deferred", &[(64, 2)]);
    assert_eq!(c(&r, "cut", "sim/folio_free"), 0);
    assert_eq!(folios(&r, "cut", "heap"), hist(&[("64kB", 32)]));
    let bad = text + &touch("heap", "read", "offset = \"8K\"\nlen = \"4K\"");
    match try_run_with(&bad, &[]) {
        Err(SimError::Killed { signal, .. }) => assert_eq!(signal, "SIGSEGV"),
        other => panic!("expected SIGSEGV, got {other:?}"),
    }
}

/// `deferred_split_folio()`, mm/huge_memory.c; observed: DONTNEED of one page
/// of a PMD THP → thp_split_pmd 1 (the PMD becomes 512 PTEs),
/// split_deferred[2048K] 1, thp_deferred_split_page 1; the folio stays.
#[test]
fn dontneed_one_page_of_pmd_thp() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + &touch("heap", "write", "")
        + &phase("dn")
        + &madvise("heap", "dontneed", "offset = \"1M\"\nlen = \"4K\"");
    let r = run(&text);
    assert_eq!(c(&r, "dn", "thp_split_pmd"), 1);
    assert_mthp_stat(&r, "dn", "split_deferred", &[(2048, 1)]);
    assert_counters(&r, "dn", "thp_deferred_split_page=1 sim/folio_free=0");
    // Pages 0-255 and 257-511 still map the one folio.
    assert_eq!(folios(&r, "dn", "heap"), hist(&[("2048kB", 1)]));
}

/// munmap of one page of a PMD THP: the PMD is only partly covered, so it is
/// split first (`zap_pte_range()`, mm/memory.c: thp_split_pmd 1), then the page
/// is zapped: the folio is partially mapped (`deferred_split_folio()`,
/// mm/huge_memory.c: split_deferred[2048K] 1, thp_deferred_split_page 1) and
/// stays allocated.
#[test]
fn munmap_one_page_of_pmd_thp() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + &touch("heap", "write", "")
        + &phase("cut")
        + &munmap("heap", "offset = \"2044K\"");
    let r = run(&text);
    assert_eq!(c(&r, "cut", "thp_split_pmd"), 1);
    assert_mthp_stat(&r, "cut", "split_deferred", &[(2048, 1)]);
    assert_counters(&r, "cut", "thp_deferred_split_page=1 sim/folio_free=0");
    assert_eq!(folios(&r, "cut", "heap"), hist(&[("2048kB", 1)]));
}

/// A partly covered huge-zero PMD is split into small zero-page PTEs
/// (__split_huge_zero_page_pmd(), THP_SPLIT_PMD counted:
/// `do_huge_pmd_anonymous_page()`, mm/huge_memory.c; `zap_pte_range()`,
/// mm/memory.c); the unmapped page goes, 511 zero PTEs stay. A write to one of
/// them is then an ordinary zero-page COW at the PTE level
/// (`do_anonymous_page()`, mm/memory.c: order 0, the PMD is no longer none): 1
/// fault, one order-0 folio, no THP.
#[test]
fn munmap_part_of_huge_zero_pmd() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + &touch("heap", "read", "")
        + &phase("cut")
        + &munmap("heap", "len = \"4K\"")
        + &phase("w")
        + &touch("heap", "write", "offset = \"4K\"\nlen = \"4K\"");
    let r = run(&text);
    assert_eq!(c(&r, "cut", "thp_split_pmd"), 1);
    assert_mthp_stat(&r, "cut", "split_deferred", &[]);
    assert_eq!(folios(&r, "cut", "heap"), hist(&[("zero", 511)]));
    assert_counters(&r, "w", "pgfault=1 thp_fault_alloc=0 sim/folio_alloc=1");
    assert_eq!(folios(&r, "w", "heap"), hist(&[("zero", 510), ("4kB", 1)]));
}

/// `__handle_mm_fault()`, mm/memory.c and `zap_pte_range()`, mm/memory.c
/// (CONFIG_PT_RECLAIM): an order-0 write creates a PTE table; MADV_HUGEPAGE
/// afterwards does not help the next write in that 2 MiB (the PMD is not none:
/// order 0, no thp_fault_alloc). MADV_DONTNEED of the whole 2 MiB frees the
/// table, and the next write gets a PMD THP again (1 fault, thp_fault_alloc 1).
#[test]
fn dontneed_whole_pmd_range_reclaims_table() {
    let text = system("")
        + &anon_region("heap", "2M", &[])
        + &touch("heap", "write", "len = \"4K\"")
        + &madvise("heap", "hugepage", "")
        + &phase("blocked")
        + &touch("heap", "write", "offset = \"4K\"\nlen = \"4K\"")
        + &phase("dontneed")
        + &madvise("heap", "dontneed", "")
        + &phase("again")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_counters(&r, "blocked", "pgfault=1 thp_fault_alloc=0");
    assert_eq!(folios(&r, "blocked", "heap"), hist(&[("4kB", 2)]));
    assert_eq!(c(&r, "dontneed", "sim/pgtable_free"), 1);
    assert_eq!(folios(&r, "dontneed", "heap"), hist(&[]));
    assert_counters(&r, "again", "pgfault=1 thp_fault_alloc=1");
    assert_eq!(folios(&r, "again", "heap"), hist(&[("2048kB", 1)]));
}

/// The same with a PMD THP: DONTNEED of the whole 2 MiB zaps the PMD (no split:
/// the range covers it, `zap_pte_range()`, mm/memory.c), and the next write
/// maps a new PMD THP.
#[test]
fn dontneed_whole_pmd_thp_then_write_gets_thp_again() {
    let text = system("")
        + &anon_region("heap", "2M", &["hugepage"])
        + &touch("heap", "write", "")
        + &phase("dontneed")
        + &madvise("heap", "dontneed", "")
        + &phase("again")
        + &touch("heap", "write", "");
    let r = run(&text);
    assert_eq!(c(&r, "dontneed", "thp_split_pmd"), 0);
    assert_mthp_stat(&r, "dontneed", "split_deferred", &[]);
    assert_eq!(c(&r, "dontneed", "sim/folio_free"), 1);
    assert_counters(&r, "again", "pgfault=1 thp_fault_alloc=1");
    assert_eq!(folios(&r, "again", "heap"), hist(&[("2048kB", 1)]));
}

/// Partial MADV_DONTNEED of a 2 MiB range (everything but one page) does not
/// free the table (`zap_pte_range()`, mm/memory.c needs the whole table), so a
/// later write in MADV_HUGEPAGE memory stays at the PTE level: order 0
/// (`__handle_mm_fault()`, mm/memory.c).
#[test]
fn partial_dontneed_keeps_table() {
    let text = system("")
        + &anon_region("heap", "2M", &[])
        + &touch("heap", "write", "")
        + &madvise("heap", "hugepage", "")
        + &madvise("heap", "dontneed", "len = \"2044K\"")
        + &phase("w")
        + &touch("heap", "write", "len = \"4K\"");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=1 thp_fault_alloc=0");
    assert_eq!(folios(&r, "w", "heap"), hist(&[("4kB", 2)]));
}

/// Writing to a read-only mapping is SIGSEGV (`__handle_mm_fault()`,
/// mm/memory.c: VMA permission checks are the fault handler's first step; the
/// model's __handle_mm_fault()).
#[test]
fn write_to_read_only_mapping_is_sigsegv() {
    let text = system("")
        + "[[step]]\nop = \"mmap\"\nregion = \"ro\"\nkind = \"anon\"\nsize = \"64K\"\nprot = \"r\"\n"
        + &touch("ro", "read", "")
        + &touch("ro", "write", "len = \"4K\"");
    match try_run_with(&text, &[]) {
        Err(SimError::Killed { signal, .. }) => assert_eq!(signal, "SIGSEGV"),
        other => panic!("expected SIGSEGV, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Model bugs found by properties.rs, reduced to minimal scenarios;
// fixed, kept as regression tests.

/// fork() copies the PTEs of a large folio as one batch with
/// folio_pte_batch_flags(FPB_MERGE_WRITE) (`copy_present_ptes()`, mm/memory.c):
/// the batch counts as writable if any of its PTEs is, so all of them are
/// write-protected in the parent before PageAnonExclusive is cleared. Here the
/// 64K folio is exclusive again after the first child exits, and a write to
/// page 1 reuses it (`do_wp_page()`, mm/memory.c: only that PTE becomes
/// writable; page 0 stays read-only). The second fork must write-protect page 1
/// too; the parent's next write to it then faults and copies one page (the
/// folio is mapped by the child: maybe shared, `do_wp_page()`, mm/memory.c): 1
/// fault, 1 order-0 folio.
#[test]
fn fork_merges_write_bit_of_large_folio_batch() {
    let text = system(&mthp(64, "always"))
        + &anon_region("a", "2M", &[])
        + &touch("a", "write", "len = \"64K\"")
        + "[[step]]\nop = \"fork\"\n[[step]]\nop = \"wait\"\n"
        + &touch("a", "write", "offset = \"4K\"\nlen = \"4K\"")
        + "[[step]]\nop = \"fork\"\n"
        + &phase("w")
        + &touch("a", "write", "offset = \"4K\"\nlen = \"4K\"");
    let r = run(&text);
    assert_counters(&r, "w", "pgfault=1 sim/folio_alloc=1");
    assert_eq!(folios(&r, "w", "a"), hist(&[("64kB", 1), ("4kB", 1)]));
}

/// Splitting a VMA in the middle of a PMD-mapped THP splits the PMD first
/// (mm/vma.c: __split_vma() → vma_adjust_trans_huge() →
/// split_huge_pmd_if_needed(), which counts THP_SPLIT_PMD like every
/// __split_huge_pmd(), `zap_pte_range()`, mm/memory.c); all 512 pages stay
/// mapped by PTEs, so the folio is not partially mapped
/// (`deferred_split_folio()`, mm/huge_memory.c). A fork then copies those PTEs
/// once (`copy_present_ptes()`, mm/memory.c) and the child reads all 512 pages
/// without a fault.
#[test]
fn vma_split_inside_pmd_thp_then_fork() {
    let text = system("")
        + &anon_region("a", "2M", &["hugepage"])
        + &touch("a", "write", "")
        + &phase("split")
        + &madvise("a", "random", "len = \"1M\"")
        + &phase("fork")
        + "[[step]]\nop = \"fork\"\n\
           [[step.child]]\nop = \"touch\"\nregion = \"a\"\naccess = \"read\"\n";
    let r = run(&text);
    assert_eq!(c(&r, "split", "thp_split_pmd"), 1);
    assert_mthp_stat(&r, "split", "split_deferred", &[]);
    assert_eq!(folios(&r, "split", "a"), hist(&[("2048kB", 1)]));
    assert_eq!(c(&r, "fork", "pgfault"), 0);
}

/// A MAP_PRIVATE file VMA gets an anon_vma from its first COW
/// (`do_cow_fault()`, mm/memory.c), so fork copies its page tables
/// (`copy_present_ptes()`, mm/memory.c). A PMD-mapped page-cache THP in it is
/// not copied: copy_huge_pmd() returns early for non-anonymous VMAs
/// (mm/huge_memory.c, "Skip if can be re-fill on fault"), and the child
/// refaults it: its read of page 0 is 1 fault that maps the PMD again
/// (fault-around → do_set_pmd(), `filemap_map_pages()`, mm/filemap.c:
/// thp_file_mapped 1); its read of the COWed page in the second 2 MiB finds the
/// copied PTE (no fault).
#[test]
fn fork_after_private_file_cow_with_file_pmd() {
    let text = rw_file(
        "fill = \"write\"\nwrite_size = \"2M\"",
        false,
        &(touch("m", "read", "len = \"4K\"")
            + &touch("m", "write", "offset = \"2M\"\nlen = \"4K\"")
            + &phase("child")
            + "[[step]]\nop = \"fork\"\n\
               [[step.child]]\nop = \"touch\"\nregion = \"m\"\naccess = \"read\"\nlen = \"4K\"\n\
               [[step.child]]\nop = \"touch\"\nregion = \"m\"\naccess = \"read\"\noffset = \"2M\"\nlen = \"4K\"\n"),
    );
    let r = run(&text);
    assert_counters(&r, "child", "pgfault=1 thp_file_mapped=1");
}

/// Three mms map one 64K page-cache folio: a grandchild and a child take the
/// two MM-owner slots, so the parent's mappings are recorded in no slot (the
/// folio is "maybe shared", `folio_mapcount()`, include/linux/mm.h). After both
/// exit, the parent maps the folio a second time through another mapping and
/// takes slot 0 with only the new mappings. The kernel allows exactly this
/// (include/linux/rmap.h, folio_sub_return_large_mapcount(): "There are valid
/// corner cases where we might underflow a per-MM mapcount (some mappings added
/// when no slot was free, some mappings added once a slot was free)"), so the
/// model's state is right, but its invariant checker demands slot count ==
/// mappings and fails the run.
#[test]
fn three_processes_then_slot_reuse() {
    let text = format!(
        "{}[[file]]\nname = \"f\"\nsize = \"64K\"\nwrite_size = \"64K\"\n{}{}{}{}{}{}",
        system(""),
        "[[step]]\nop = \"mmap\"\nregion = \"r0\"\nkind = \"file\"\nfile = \"f\"\nsize = \"64K\"\nprot = \"r\"\n",
        "[[step]]\nop = \"fork\"\n\
         [[step.child]]\nop = \"fork\"\n\
         [[step.child.child]]\nop = \"touch\"\nregion = \"r0\"\naccess = \"read\"\n\
         [[step.child]]\nop = \"touch\"\nregion = \"r0\"\naccess = \"read\"\n",
        touch("r0", "read", ""),
        "[[step]]\nop = \"wait\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"r1\"\nkind = \"file\"\nfile = \"f\"\nsize = \"64K\"\nprot = \"r\"\n",
        phase("r1"),
        touch("r1", "read", "")
    );
    let r = run(&text);
    assert_eq!(folios(&r, "r1", "r1"), hist(&[("64kB", 1)]));
    assert_eq!(c(&r, "r1", "sim/folio_alloc"), 0);
}
