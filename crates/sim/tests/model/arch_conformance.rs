//! x86_64 and arm64 (4 KiB granule) must fault alike.
//!
//! With 4 KiB pages the two architectures share every rule that decides faults,
//! allocations and folio sizes (arch/arm64/include/asm/pgtable.h: same PMD
//! order, same anon mTHP sizes, same fault_around_pages of 16, same page-cache
//! orders). What differs is invisible to the fault counters: arm64 paints
//! contiguous (PTE_CONT) blocks in set_ptes() and makes prefaulted PTEs old,
//! which its hardware access flag then sets without a fault.
//!
//! So the same scenarios run on both must give identical kernel-visible
//! counters (vmstat events, per-size mTHP stats, task fault counts, the
//! filemap tracepoints) and identical folio histograms; only `sim/*`
//! (primitive operations) and the x86-only tracepoints `exceptions:page_fault_user` and `tlb:tlb_flush`
//! tracepoint may differ. And arm64 shows `sim/contpte_set_blocks` for
//! naturally aligned 16-page blocks, x86 never.

use crate::common;

use std::collections::BTreeMap;

use common::{assert_counters, c, mthp, run_arch, system};
use foliosim_report::Report;

/// Counters that must agree between the architectures.
fn comparable(name: &str) -> bool {
    !name.starts_with("sim/") && !name.starts_with("exceptions:") && !name.starts_with("tlb:")
}

type Shape = Vec<(
    String,
    BTreeMap<String, i64>,
    BTreeMap<String, BTreeMap<String, u64>>,
)>;

fn shape(r: &Report) -> Shape {
    r.phases
        .iter()
        .map(|p| {
            let counters = p
                .counters
                .iter()
                .filter(|(k, _)| comparable(k))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            (p.name.clone(), counters, p.folios.clone())
        })
        .collect()
}

/// Run `text` on both architectures and compare; returns (x86, arm64).
fn conform(label: &str, text: &str) -> (Report, Report) {
    let x = run_arch(text, "x86_64");
    let a = run_arch(text, "arm64");
    assert_eq!(x.arch, "x86_64");
    assert_eq!(a.arch, "arm64");
    let (sx, sa) = (shape(&x), shape(&a));
    assert_eq!(sx.len(), sa.len(), "{label}: phases");
    for ((px, cx, fx), (_, ca, fa)) in sx.iter().zip(&sa) {
        let diff: Vec<String> = cx
            .keys()
            .chain(ca.keys())
            .filter(|k| cx.get(*k) != ca.get(*k))
            .map(|k| format!("{k}: x86_64 {:?} arm64 {:?}", cx.get(k), ca.get(k)))
            .collect();
        assert!(
            diff.is_empty(),
            "{label}: phase {px}: counters differ:\n  {}",
            diff.join("\n  ")
        );
        assert_eq!(fx, fa, "{label}: phase {px}: folio histograms differ");
    }
    // Faults happened at all (the scenarios are not vacuous).
    let faults: i64 = x.phases.iter().map(|p| p.counters["pgfault"]).sum();
    assert!(faults > 0, "{label}: no faults");
    (x, a)
}

fn anon(name: &str, size: &str, advise: &str) -> String {
    format!(
        "[[step]]\nop = \"mmap\"\nregion = \"{name}\"\nkind = \"anon\"\nsize = \"{size}\"\nmadvise = [{advise}]\n"
    )
}

fn phase(name: &str) -> String {
    format!("[[step]]\nop = \"phase\"\nname = \"{name}\"\n")
}

fn touch(region: &str, access: &str, extra: &str) -> String {
    format!("[[step]]\nop = \"touch\"\nregion = \"{region}\"\naccess = \"{access}\"\n{extra}\n")
}

fn file(fill: &str, size: &str) -> String {
    format!("[[file]]\nname = \"f\"\nsize = \"{size}\"\n{fill}\n")
}

fn map_file(region: &str, size: &str, extra: &str) -> String {
    format!(
        "[[step]]\nop = \"mmap\"\nregion = \"{region}\"\nkind = \"file\"\nfile = \"f\"\nsize = \"{size}\"\n{extra}\n"
    )
}

/// The scenario set: (label, TOML).
fn scenarios() -> Vec<(String, String)> {
    let mut v = Vec::new();
    // Anon write faults with each mTHP size, in a 2 MiB-aligned region and
    // in an unaligned one (placement is the same on both).
    for kb in [16u64, 32, 64, 128, 256, 512, 1024] {
        v.push((
            format!("anon-{kb}K"),
            system(&mthp(kb, "always"))
                + &anon("a", "2M", "")
                + &anon("b", "100K", "")
                + &phase("w")
                + &touch("a", "write", "")
                + &touch("b", "write", ""),
        ));
    }
    // Several sizes at once, random order.
    v.push((
        "anon-mixed-random".into(),
        system(&(mthp(16, "always") + &mthp(64, "always") + &mthp(256, "inherit")))
            + "transparent_hugepage.enabled = \"always\"\n"
            + &anon("a", "3M", "")
            + &phase("w")
            + &touch("a", "write", "pattern = \"random\"\nseed = 5"),
    ));
    // PMD THP, huge zero page, zero-page reads then writes.
    v.push((
        "pmd-thp-zero".into(),
        system(&mthp(64, "always"))
            + &anon("h", "4M", "\"hugepage\"")
            + &anon("z", "1M", "")
            + &phase("read")
            + &touch("h", "read", "len = \"2M\"")
            + &touch("z", "read", "")
            + &phase("write")
            + &touch("h", "write", "")
            + &touch("z", "write", ""),
    ));
    // Fork and COW of mTHP and PMD THP, reuse after the child exits.
    v.push((
        "fork-cow".into(),
        system(&mthp(64, "always"))
            + &anon("a", "2M", "")
            + &anon("h", "2M", "\"hugepage\"")
            + &touch("a", "write", "")
            + &touch("h", "write", "")
            + &phase("fork")
            + "[[step]]\nop = \"fork\"\n\
               [[step.child]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\npattern = \"stride\"\nstride = \"20K\"\n"
            + &phase("parent")
            + &touch("a", "write", "len = \"256K\"")
            + &touch("h", "write", "len = \"8K\"")
            + &phase("wait")
            + "[[step]]\nop = \"wait\"\n"
            + &phase("reuse")
            + &touch("a", "write", ""),
    ));
    // MADV_DONTNEED and munmap of parts of mTHPs and a PMD THP.
    v.push((
        "zap".into(),
        system(&mthp(32, "always"))
            + &anon("a", "2M", "")
            + &anon("h", "4M", "\"hugepage\"")
            + &touch("a", "write", "")
            + &touch("h", "write", "")
            + &phase("zap")
            + "[[step]]\nop = \"madvise\"\nregion = \"a\"\nadvice = \"dontneed\"\noffset = \"4K\"\nlen = \"100K\"\n"
            + "[[step]]\nop = \"munmap\"\nregion = \"h\"\noffset = \"1M\"\nlen = \"12K\"\n"
            + "[[step]]\nop = \"madvise\"\nregion = \"h\"\nadvice = \"dontneed\"\noffset = \"2M\"\nlen = \"2M\"\n"
            + &phase("refault")
            + &touch("a", "write", "")
            + &touch("h", "write", "offset = \"2M\""),
    ));
    // File read faults: order-0, 64K and 2M page-cache folios, several
    // fault-around sizes, private COW and shared writes.
    for (fill, fab) in [
        ("fill = \"write\"\nwrite_size = \"4K\"", "4096"),
        ("fill = \"write\"\nwrite_size = \"4K\"", "65536"),
        ("fill = \"write\"\nwrite_size = \"4K\"", "\"4096<<9\""),
        ("fill = \"write\"\nwrite_size = \"64K\"", "8192"),
        ("fill = \"write\"\nwrite_size = \"64K\"", "65536"),
        ("fill = \"write\"\nwrite_size = \"2M\"", "65536"),
        ("fill = \"read\"", "65536"),
    ] {
        v.push((
            format!("file {fill} fab={fab}"),
            system(&format!("fault_around_bytes = {fab}\n"))
                + &file(fill, "4M")
                + &map_file("r", "4M", "prot = \"r\"")
                + &map_file("p", "4M", "")
                + &map_file("s", "4M", "shared = true")
                + &phase("read")
                + &touch("r", "read", "")
                + &phase("private")
                + &touch("p", "read", "len = \"1M\"")
                + &touch("p", "write", "offset = \"512K\"\nlen = \"1M\"")
                + &phase("shared")
                + &touch("s", "read", "len = \"64K\"")
                + &touch("s", "write", "len = \"1M\""),
        ));
    }
    // Cold files: readahead, major faults, MADV_RANDOM, MADV_HUGEPAGE.
    for (ra, adv) in [
        (128, ""),
        (8192, ""),
        (128, "\"random\""),
        (128, "\"hugepage\""),
    ] {
        v.push((
            format!("cold ra={ra} madvise=[{adv}]"),
            system(&format!("read_ahead_kb = {ra}\n"))
                + &file("fill = \"cold\"", "8M")
                + &map_file("m", "8M", &format!("prot = \"r\"\nmadvise = [{adv}]"))
                + &phase("first")
                + &touch("m", "read", "len = \"4K\"")
                + &phase("rest")
                + &touch("m", "read", "len = \"2M\""),
        ));
    }
    // Shared anonymous memory, with a child that refaults it.
    v.push((
        "shmem".into(),
        system("")
            + "[[step]]\nop = \"mmap\"\nregion = \"s\"\nkind = \"shmem\"\nshared = true\nsize = \"1M\"\n"
            + &phase("r")
            + &touch("s", "read", "pattern = \"stride\"\nstride = \"12K\"")
            + &touch("s", "write", "")
            + &phase("child")
            + "[[step]]\nop = \"fork\"\n\
               [[step.child]]\nop = \"touch\"\nregion = \"s\"\naccess = \"read\"\n",
    ));
    v
}

#[test]
fn same_counters_and_folios_on_both_architectures() {
    for (label, text) in scenarios() {
        conform(&label, &text);
    }
}

/// A 64K mTHP write fault maps 16 PTEs with one set_ptes() at a 64K-aligned
/// address (the region is 2 MiB-aligned, `alloc_anon_folio()`, mm/memory.c;
/// `__thp_get_unmapped_area()`, mm/huge_memory.c) from a naturally aligned 64K
/// folio (buddy allocations are aligned to their order), so arm64's
/// contpte_set_ptes() marks exactly one contiguous block per fault
/// (arch/arm64/include/asm/pgtable.h): 2 MiB → 32 faults → 32 blocks. x86 has
/// no contiguous bit.
#[test]
fn contpte_blocks_for_64k_mthp_on_arm64_only() {
    let text =
        system(&mthp(64, "always")) + &anon("a", "2M", "") + &phase("w") + &touch("a", "write", "");
    let (x, a) = conform("64K", &text);
    assert_counters(&a, "w", "pgfault=32 sim/contpte_set_blocks=32");
    assert_eq!(c(&x, "w", "sim/contpte_set_blocks"), 0);
}

/// Larger mTHPs cover several blocks per fault (128K: 2 per fault, 16
/// faults → 32 blocks; 1024K: 16 per fault, 2 faults → 32 blocks); 16K and
/// 32K folios are smaller than a block and never get PTE_CONT; a PMD THP is
/// one PMD, no PTEs at all.
#[test]
fn contpte_blocks_by_folio_size() {
    for (kb, blocks) in [(16u64, 0i64), (32, 0), (64, 32), (128, 32), (1024, 32)] {
        let text = system(&mthp(kb, "always"))
            + &anon("a", "2M", "")
            + &phase("w")
            + &touch("a", "write", "");
        let (x, a) = conform(&format!("{kb}K"), &text);
        assert_eq!(c(&a, "w", "sim/contpte_set_blocks"), blocks, "arm64 {kb}K");
        assert_eq!(c(&x, "w", "sim/contpte_set_blocks"), 0, "x86 {kb}K");
    }
    let text =
        system("") + &anon("h", "2M", "\"hugepage\"") + &phase("w") + &touch("h", "write", "");
    let (x, a) = conform("pmd", &text);
    assert_counters(&a, "w", "thp_fault_alloc=1 sim/contpte_set_blocks=0");
    assert_eq!(c(&x, "w", "sim/contpte_set_blocks"), 0);
}

/// Page-cache 64K folios mapped by fault-around (whole folio per set_ptes,
/// `filemap_map_pages()`, mm/filemap.c) at 64K-aligned addresses (the 4 MiB
/// mapping is 2 MiB aligned, file index ≡ address): one block per folio on
/// arm64, 64 for the file; order-0 page cache gives none (each PTE maps its own
/// folio).
#[test]
fn contpte_blocks_for_64k_page_cache_on_arm64_only() {
    for (ws, blocks) in [("64K", 64i64), ("4K", 0)] {
        let text = system("")
            + &file(&format!("fill = \"write\"\nwrite_size = \"{ws}\""), "4M")
            + &map_file("m", "4M", "prot = \"r\"")
            + &phase("r")
            + &touch("m", "read", "");
        let (x, a) = conform(&format!("file {ws}"), &text);
        assert_eq!(c(&a, "r", "sim/contpte_set_blocks"), blocks, "{ws}");
        assert_eq!(c(&x, "r", "sim/contpte_set_blocks"), 0, "{ws}");
    }
}

/// The `arch` knob reaches the report (and the override path works).
#[test]
fn report_names_the_architecture() {
    let text = system("") + &anon("a", "64K", "") + &phase("w") + &touch("a", "write", "");
    let (x, a) = conform("arch", &text);
    assert_eq!(x.system.get("arch").map(String::as_str), Some("x86_64"));
    assert_eq!(a.system.get("arch").map(String::as_str), Some("arm64"));
}
