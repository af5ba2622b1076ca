//! Folio maps (`map = true` on an mmap step): the per-page state of a region
//! at the end of every phase, checked against the kernel's rules (Linux
//! 6.18); each comment names the kernel function a rule comes from. Every
//! expected state is derived in the comment next to it.

use crate::common;

use common::*;
use foliosim_report::{FolioMap, PageState, Report};

/// An anon mmap step with a folio map, `madvise` advice optional.
fn mapped_anon(region: &str, size: &str, advise: &str) -> String {
    format!(
        "[[step]]\nop = \"mmap\"\nregion = \"{region}\"\nkind = \"anon\"\nsize = \"{size}\"\nmap = true\nmadvise = [{advise}]\n"
    )
}

fn map<'a>(r: &'a Report, phase: &str, region: &str) -> &'a FolioMap {
    let p = r.phases.iter().find(|p| p.name == phase).expect("phase");
    p.maps
        .get(region)
        .unwrap_or_else(|| panic!("no folio map of {region:?} in {phase:?}"))
}

fn states(m: &FolioMap) -> Vec<PageState> {
    m.pages
        .iter()
        .map(|&b| PageState::decode(b).expect("a valid state"))
        .collect()
}

const PTE_64K: PageState = PageState::Present {
    order: 4,
    pmd: false,
    contpte: false,
};
const CONT_64K: PageState = PageState::Present {
    order: 4,
    pmd: false,
    contpte: true,
};

/// 1 MiB written in a 2 MiB region (2 MiB-aligned:
/// `__thp_get_unmapped_area()`, mm/huge_memory.c) with only 64 KiB mTHP
/// `always` (the PMD size is `inherit` under `madvise`, so not allowed:
/// `__thp_vma_allowable_orders()`). Each fault at an empty, naturally
/// aligned 64 KiB block inside the VMA installs a whole order-4 folio
/// (`alloc_anon_folio()`, `do_anonymous_page()`, mm/memory.c):
/// the first 256 pages are 16 folios of 16 pages, the other 256 pages were
/// never touched and have no entry (the first 1 MiB's table is the region's
/// only one and covers them, so they are none entries). On arm64
/// `contpte_set_ptes()` (arch/arm64/mm/contpte.c) folds every naturally
/// aligned 16-entry block of one folio, so all 256 are contpte; x86_64 has
/// no contiguous bit. Then MADV_PAGEOUT to zram
/// (`madvise_cold_or_pageout_pte_range()`, `reclaim_pages()`): every folio
/// is unmapped by `try_to_unmap_one()` (mm/rmap.c), each PTE replaced by a
/// swap entry, so the 256 pages become swap entries and the rest stays
/// empty.
fn write_then_pageout(arch: &str) -> Report {
    let text = [
        system_mem("256M", &mthp(64, "always")),
        swap("zram", "64M"),
        mapped_anon("a", "2M", ""),
        phase("fault"),
        touch("a", "write", "len = \"1M\""),
        phase("pageout"),
        madvise("a", "pageout", "len = \"1M\""),
    ]
    .concat();
    run_arch(&text, arch)
}

#[test]
fn write_64k_mthp_then_pageout() {
    for arch in ["x86_64", "arm64"] {
        let r = write_then_pageout(arch);
        let m = map(&r, "fault", "a");
        assert_eq!(m.pages.len(), 512, "{arch}: one state per page");
        assert_eq!(m.first_index, 0, "{arch}: the region is 2 MiB-aligned");
        let s = states(m);
        let want = if arch == "arm64" { CONT_64K } else { PTE_64K };
        assert!(
            s[..256].iter().all(|&p| p == want),
            "{arch}: {:?}",
            &s[..20]
        );
        assert!(s[256..].iter().all(|&p| p == PageState::None), "{arch}");
        // 16 folios: the folio histogram agrees with the map.
        assert_eq!(folios(&r, "fault", "a"), hist(&[("64kB", 16)]), "{arch}");
        let census = m.census();
        assert_eq!(census.get(&want), Some(&256), "{arch}");

        let s = states(map(&r, "pageout", "a"));
        assert!(s[..256].iter().all(|&p| p == PageState::Swap), "{arch}");
        assert!(s[256..].iter().all(|&p| p == PageState::None), "{arch}");
        assert_eq!(c(&r, "pageout", "pswpout"), 256, "{arch}");
    }
}

/// A read fault on anonymous memory with the default THP settings
/// (`madvise`, no MADV_HUGEPAGE: no THP at all) maps the shared zero page
/// (`do_anonymous_page()`: a read with `!mm_forbids_zeropage()`), one PTE
/// per fault, no fault-around for anon: 16 zero-page entries
/// for 64 KiB read.
#[test]
fn read_fault_maps_the_zero_page() {
    let text = [
        system(""),
        mapped_anon("a", "2M", ""),
        phase("read"),
        touch("a", "read", "len = \"64K\""),
    ]
    .concat();
    let r = run(&text);
    let s = states(map(&r, "read", "a"));
    assert!(s[..16]
        .iter()
        .all(|&p| p == PageState::Zero { huge: false }));
    assert!(s[16..].iter().all(|&p| p == PageState::None));
}

/// With MADV_HUGEPAGE and `use_zero_page = 1` (the default) a read fault
/// in a PMD-aligned 2 MiB range maps the huge zero folio with one PMD
/// (`do_huge_pmd_anonymous_page()`, mm/huge_memory.c): all 512 pages are
/// the huge zero page. A write then replaces it with a PMD-mapped THP
/// (`do_huge_zero_wp_pmd()`): 512 pages of one order-9
/// folio, each mapped by the PMD.
#[test]
fn huge_zero_then_pmd_thp() {
    let text = [
        system(""),
        mapped_anon("a", "2M", "\"hugepage\""),
        phase("read"),
        touch("a", "read", ""),
        phase("write"),
        touch("a", "write", ""),
    ]
    .concat();
    for arch in ["x86_64", "arm64"] {
        let r = run_arch(&text, arch);
        let s = states(map(&r, "read", "a"));
        assert_eq!(s.len(), 512);
        assert!(s.iter().all(|&p| p == PageState::Zero { huge: true }));
        let s = states(map(&r, "write", "a"));
        let thp = PageState::Present {
            order: 9,
            pmd: true,
            contpte: false,
        };
        assert!(s.iter().all(|&p| p == thp), "{arch}: {:?}", &s[..4]);
    }
}

/// Maps are opt-in: a region without `map = true` has none, and the map
/// of a phase survives the JSON report and its reading back.
#[test]
fn maps_are_opt_in_and_read_back() {
    let text = [
        system(&mthp(64, "always")),
        mapped_anon("a", "2M", ""),
        mmap_anon("b", "2M"),
        phase("w"),
        touch("a", "write", "len = \"1M\""),
        touch("b", "write", ""),
    ]
    .concat();
    let r = run(&text);
    let p = &r.phases[0];
    assert_eq!(p.maps.keys().collect::<Vec<_>>(), ["a"]);
    let back = Report::from_json_value(&r.to_json_value()).unwrap();
    assert_eq!(back.phases[0].maps, p.maps);
    // 256 64 KiB pages then 256 empty ones: two runs in the JSON.
    let json = r.to_json_value();
    assert_eq!(
        json["phases"][0]["maps"]["a"]["runs"].to_string(),
        format!("[[{},256],[0,256]]", PTE_64K.encode())
    );
}

/// A 2 MiB region written with 16, 32 and 64 KiB mTHP `always` (all 64 KiB
/// folios: the highest enabled order whose naturally aligned range is
/// empty, `alloc_anon_folio()`), then MADV_DONTNEED of pages 25..75 (100 KiB +
/// 200 KiB, unaligned) and the same range written again. Zapping part of a
/// folio leaves the rest mapped (pages 16..24 and 75..79 of two 64 KiB
/// folios); on arm64 clearing part of a contpte block unfolds it
/// (`contpte_try_unfold()`), so those remnants are not contpte.
/// Each refault takes the largest enabled order whose aligned range is all
/// none (`alloc_anon_folio()`): pages 25, 26, 27 → 4 KiB (their 16 KiB
/// block holds page 24), 28..31 → 16 KiB, 32..63 → two 64 KiB, 64..71 →
/// 32 KiB (the 64 KiB block holds 75..79), 72, 73, 74 → 4 KiB (their
/// 16 KiB block holds page 75). The histogram agrees: 32 64 KiB folios
/// (30 old, 2 new), one 16 KiB, one 32 KiB, six 4 KiB.
#[test]
fn unaligned_dontneed_then_refault() {
    let text = [
        system(&(mthp(16, "always") + &mthp(32, "always") + &mthp(64, "always"))),
        mapped_anon("a", "2M", ""),
        touch("a", "write", ""),
        madvise("a", "dontneed", "offset = \"100K\"\nlen = \"200K\""),
        phase("refault"),
        touch("a", "write", "offset = \"100K\"\nlen = \"200K\""),
    ]
    .concat();
    for arch in ["x86_64", "arm64"] {
        let r = run_arch(&text, arch);
        let s = states(map(&r, "refault", "a"));
        let cont = arch == "arm64";
        let p = |order, contpte| PageState::Present {
            order,
            pmd: false,
            contpte,
        };
        let mut want = vec![p(4, cont); 512];
        for i in (16..25).chain(75..80) {
            want[i] = p(4, false);
        }
        for i in [25, 26, 27, 72, 73, 74] {
            want[i] = p(0, false);
        }
        for w in &mut want[28..32] {
            *w = p(2, false);
        }
        for w in &mut want[64..72] {
            *w = p(3, false);
        }
        for (i, (got, w)) in s.iter().zip(&want).enumerate() {
            assert_eq!(got, w, "{arch}: page {i}");
        }
        assert_eq!(
            folios(&r, "refault", "a"),
            hist(&[("4kB", 6), ("16kB", 1), ("32kB", 1), ("64kB", 32)]),
            "{arch}"
        );
    }
}
