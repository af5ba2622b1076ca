//! The second page walk of reads right after a read fault
//! (`sim/user_access_rewalk`, crates/hw `SpecWalk`): the CPU has walked the
//! next accesses' entries before the fault is taken, found them not
//! present, and walks again when they are read after the fault mapped
//! them. The rules the counts below follow:
//!
//! * a read fault in an existing page table arms a window of the next
//!   `SPEC_LOADS` (16) accesses; it counts each read in that window of
//!   one of the 16 pages after the fault, in its page table, that was not
//!   present before the fault and is present now;
//! * a fault into a missing page table arms nothing (the walks stopped at
//!   the PMD);
//! * writes neither arm nor count; the further loads of a word touch use
//!   up the window.
//!
//! Every scenario maps a 16 MiB file: 4096 pages in 8 page tables. The
//! host's fault-around window is 16 pages (fault_around_bytes = 64K), so a
//! sequential pass takes 256 faults, 8 of them first in their table.

use crate::common;
use common::*;

/// 16 MiB file of `folio` folios, mapped (`prot`), one phase with `touch`.
fn file_scenario(folio: &str, prot: &str, touch: &str) -> String {
    [
        system("transparent_hugepage.enabled = \"never\""),
        format!(
            "[[file]]\nname = \"data\"\nsize = \"16M\"\nfill = \"write\"\nwrite_size = \"{folio}\"\n"
        ),
        format!(
            "[[step]]\nop = \"mmap\"\nregion = \"f\"\nkind = \"file\"\nfile = \"data\"\nsize = \"16M\"\nprot = \"{prot}\"\nshared = true\n"
        ),
        phase("p"),
        touch.to_string(),
    ]
    .concat()
}

fn rewalks(r: &foliosim_report::Report) -> i64 {
    let p = r.phases.iter().find(|p| p.name == "p").expect("phase p");
    p.counters
        .get("sim/user_access_rewalk")
        .copied()
        .unwrap_or(0)
}

#[test]
fn sequential_reads_rewalk_the_rest_of_each_window() {
    for folio in ["4K", "64K"] {
        let r = run(&file_scenario(folio, "r", &touch("f", "read", "")));
        assert_eq!(c(&r, "p", "pgfault"), 256);
        // Each of the 248 faults in an existing table mapped its 16-page
        // window; the next 15 accesses read the other 15 pages.
        assert_eq!(rewalks(&r), 248 * 15, "{folio} folios");
    }
}

#[test]
fn a_stride_rewalks_only_the_pages_it_reads() {
    // Every second page: 8 accesses per window, the faulting one and 7
    // of the pages the fault mapped.
    let r = run(&file_scenario(
        "4K",
        "r",
        &touch("f", "read", "pattern = \"stride\"\nstride = \"8K\""),
    ));
    assert_eq!(c(&r, "p", "pgfault"), 256);
    assert_eq!(rewalks(&r), 248 * 7);
}

#[test]
fn whole_folio_faults_rewalk_the_window_of_accesses() {
    // 1 MiB folios: a fault maps the whole folio (256 entries), except the last
    // one: it ends at EOF, which fault-around's last-index test does not count
    // as large-mappable (`filemap_map_pages()`, mm/filemap.c), so its 256 pages
    // are mapped by 16 window faults. 15 + 16 = 31 faults. The first folio of
    // each 2 MiB faults into a missing table: nothing. Folios 1, 3, .., 13
    // fault into the table the one before allocated; the next 16 accesses read
    // pages 1..=16 of the folio, the 16 after the fault: 7 * 16. The last
    // folio's 16 windows are all in an existing table: 16 * 15.
    let r = run(&file_scenario("1M", "r", &touch("f", "read", "")));
    assert_eq!(c(&r, "p", "pgfault"), 31);
    assert_eq!(rewalks(&r), 7 * 16 + 16 * 15);
}

#[test]
fn random_reads_rarely_rewalk() {
    // The accesses after a fault land on random pages: each of the 16 hits
    // one of the 15 pages after the fault that it mapped with probability
    // about 15/4096, so about 248 * 16 * 15 / 4096 = 15 in all (fewer: a
    // page reached earlier in the random order was mapped already).
    let r = run(&file_scenario(
        "4K",
        "r",
        &touch("f", "read", "pattern = \"random\""),
    ));
    assert_eq!(c(&r, "p", "pgfault"), 256);
    let n = rewalks(&r);
    assert!(n <= 60, "{n} rewalks");
}

#[test]
fn word_reads_use_up_the_window_in_the_faulting_page() {
    // The 511 further loads of the faulting page come before the next
    // page's first word.
    let r = run(&file_scenario(
        "4K",
        "r",
        &touch("f", "read", "unit = \"word\""),
    ));
    assert_eq!(c(&r, "p", "pgfault"), 256);
    assert_eq!(rewalks(&r), 0);
}

#[test]
fn writes_do_not_rewalk() {
    // Write faults on a shared writable file map only the faulting page
    // (no fault-around for write faults), and writes never count.
    let r = run(&file_scenario("4K", "rw", &touch("f", "write", "")));
    assert_eq!(c(&r, "p", "pgfault"), 4096);
    assert_eq!(rewalks(&r), 0);
    // Anonymous 64 KiB mTHP write faults map 16 pages each: still none.
    let r = run(&[
        system(&("transparent_hugepage.enabled = \"never\"\n".to_string() + &mthp(64, "always"))),
        mmap_anon("a", "16M"),
        phase("p"),
        touch("a", "write", ""),
    ]
    .concat());
    assert_eq!(c(&r, "p", "pgfault"), 256);
    assert_eq!(rewalks(&r), 0);
}
