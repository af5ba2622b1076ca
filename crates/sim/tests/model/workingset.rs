//! Workingset refault detection (mm/workingset.c, classic LRU): shadow
//! entries left by reclaim, the refault distance against the workingset
//! size, activation and restore. Every count is derived from the rules,
//! next to the test. MADV_PAGEOUT evicts exactly the folios asked for
//! (`reclaim_pages()` → `shrink_folio_list()` → `__remove_mapping()` with
//! the shadow of `workingset_eviction()`, target NULL: the root lruvec), so
//! the eviction timestamps are known: the root's `nonresident_age` counts
//! evictions and activations, starting at 0.

use crate::common;

use common::*;

/// A 1 MiB file (256 pages) made active: read through a mapping and
/// unmapped twice. Each zap of a young PTE calls `folio_mark_accessed()`
/// (mm/memory.c: zap_present_folio_ptes()): PG_referenced the first time,
/// activation the second, which ages the root by one page each
/// (`workingset_activation()`): age 256.
fn hot_file() -> String {
    let once = |region: &str| {
        format!(
            "[[step]]\nop = \"mmap\"\nregion = \"{region}\"\nkind = \"file\"\nfile = \"hot\"\nsize = \"1M\"\nprot = \"r\"\n{}[[step]]\nop = \"munmap\"\nregion = \"{region}\"\n",
            touch(region, "read", "")
        )
    };
    once("h1") + &once("h2")
}

const FILES: &str = "[[file]]\nname = \"hot\"\nsize = \"1M\"\nfill = \"cold\"\n";

fn sys() -> String {
    system("read_ahead_kb = 0\nfault_around_bytes = 4096") + &swap("zram", "16M")
}

/// Anon pages paged out and read back. With the hot file active: page i
/// of 256 is evicted at age 256 + i (age 512 after); its refault, after
/// `a` activations of earlier refaults, sees the distance 512 + a - (256 +
/// i) = 256 - i + a and the workingset size of an anon refault with free
/// swap, active file + inactive file + active anon = 256 + 0 + a: always
/// within, so all 256 are activated. Paged out again while active
/// (`madvise_cold_or_pageout_pte_range()` sets PG_workingset on active
/// folios) and read back, they are activated again and restored.
#[test]
fn anon_refaults_within_the_active_file_are_activated_then_restored() {
    let text = [
        sys(),
        FILES.to_string(),
        hot_file(),
        anon_written("a", "1M"),
        phase("out"),
        madvise("a", "pageout", ""),
        phase("in"),
        touch("a", "read", ""),
        phase("out2"),
        madvise("a", "pageout", ""),
        phase("in2"),
        touch("a", "read", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "out", "pswpout"), 256);
    assert_counters(
        &r,
        "in",
        "major-faults=256 workingset_refault_anon=256 workingset_activate_anon=256 \
         workingset_restore_anon=0 nr_active_anon=256",
    );
    assert_counters(
        &r,
        "in2",
        "workingset_refault_anon=256 workingset_activate_anon=256 workingset_restore_anon=256 \
         workingset_refault_file=0",
    );
}

/// Without the hot file the workingset of page i's refault is the a
/// activations before it, against a distance of 256 - i + a: never within.
#[test]
fn anon_refaults_beyond_the_workingset_stay_inactive() {
    let text = [
        sys(),
        anon_written("a", "1M"),
        phase("out"),
        madvise("a", "pageout", ""),
        phase("in"),
        touch("a", "read", ""),
    ]
    .concat();
    let r = run(&text);
    assert_counters(
        &r,
        "in",
        "workingset_refault_anon=256 workingset_activate_anon=0 nr_inactive_anon=256",
    );
}

/// A 4 MiB file (1024 pages) read twice through a MADV_RANDOM mapping (no
/// readahead, no recency: limit reclaim frees the oldest folios first)
/// under a 1 MiB memory-cgroup limit. Pass 1 evicts all but the newest
/// pages, leaving shadows of the reclaim target (the cgroup); pass 2 reads
/// from page 0, evicting the resident tail before it gets there, so every
/// one of its 1024 pages refaults, in /proc/vmstat and in the cgroup's
/// memory.stat. Nothing is ever active, so the workingset of a file
/// refault (active file; no anon) is empty: no activation.
#[test]
fn streaming_file_refaults_are_counted_and_not_activated() {
    let text = [
        system("fault_around_bytes = 4096"),
        "[[file]]\nname = \"data\"\nsize = \"4M\"\nfill = \"cold\"\n".to_string(),
        "[[step]]\nop = \"memcg\"\nlimit = \"1M\"\n".to_string(),
        "[[step]]\nop = \"mmap\"\nregion = \"f\"\nkind = \"file\"\nfile = \"data\"\nsize = \"4M\"\nprot = \"r\"\nmadvise = [\"random\"]\n".to_string(),
        phase("read1"),
        touch("f", "read", ""),
        phase("read2"),
        touch("f", "read", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "read1", "workingset_refault_file"), 0);
    assert_counters(
        &r,
        "read2",
        "major-faults=1024 workingset_refault_file=1024 memcg/0/workingset_refault_file=1024 \
         workingset_activate_file=0 pgactivate=0",
    );
}
