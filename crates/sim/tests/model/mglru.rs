//! The multi-gen LRU (`lru_gen.enabled = 1`, crates/kernel/src/mm/lru_gen.rs).

use crate::common::*;
use foliosim_sim::SimError;

/// A fault's new folio joins the youngest generations, which memory.stat
/// and /proc/vmstat count as active: `folio_add_lru()` sets PG_active
/// while `current->in_lru_fault` (a VMA with recency), and
/// `lru_gen_folio_seq()` puts an active folio without PG_workingset in
/// `max_seq - 1` (MIN_NR_GENS - 0 from `max_seq + 1`), one of the two
/// generations `lru_gen_is_active()` calls active. The classic LRU puts
/// the same anon folios on the inactive list.
#[test]
fn a_faults_folios_join_the_young_generations() {
    let text = [
        system_mem("64M", "transparent_hugepage.enabled = \"never\"\n"),
        phase("fill"),
        anon_written("a", "2M"),
    ]
    .concat();
    let mglru = run_with(&text, &[("lru_gen.enabled", "1")]);
    assert_eq!(c(&mglru, "fill", "nr_active_anon"), 512);
    assert_eq!(c(&mglru, "fill", "nr_inactive_anon"), 0);
    let classic = run(&text);
    assert_eq!(c(&classic, "fill", "nr_active_anon"), 0);
    assert_eq!(c(&classic, "fill", "nr_inactive_anon"), 512);
}

/// The first reclaim of a 64 MiB cgroup filled with written anonymous
/// pages, on a swap file (mm/vmscan.c, 6.18, memory cgroup reclaim:
/// `try_to_free_mem_cgroup_pages()` → `lru_gen_shrink_lruvec()` at each
/// priority, nr_to_reclaim 32). The faults put all 16,350 pages the
/// cgroup holds in generation 2 (`max_seq` 3 - 1), generations 0 and 1
/// are empty:
/// * priority 12: nr_to_scan = 16,350 >> 12 = 3; `evict_folios()` finds
///   the oldest generations empty, `try_to_inc_min_seq()` moves both types'
///   `min_seq` to 2 (one call, nothing isolated);
/// * priorities 11 and 10: two generations left (then three), below
///   DEF_PRIORITY `get_nr_to_scan()` ages (`try_to_inc_max_seq()` →
///   `inc_max_seq()` twice: `max_seq` 5); the first walk marks every
///   young page PG_referenced, the second finds none young;
/// * priority 9: 16,350 >> 9 = 31 pages isolated and written (kept under
///   writeback, one `shrink_folio_list()`);
/// * priority 8: 63: the 31 written, rotated to the oldest generation's
///   tail by the drain at the pass's start, are freed, 32 more written;
/// * priority 7: 127: batches stop at 64 isolated (MIN_LRU_BATCH): 64
///   (32 freed, 32 written; the rotation batch reaches 31 and applies),
///   then 64 (32 freed, 32 written): 128 scanned >= 127, 95 freed >= 32.
///
/// 5 `evict_folios()`, 4 `shrink_folio_list()`, 2 agings and 222 pages
/// isolated: as 6.18.35 guests count them (kprobes, x86_64 and arm64).
/// How many pages the last batches free and write depends on when the
/// writes complete (x86_64: 93 and 129; arm64 wrote 159); on zram, whose
/// writes complete at once, guests and model agree on every count
/// (scenarios/guest/mglru-memcg-anon-first-reclaim.toml).
#[test]
fn the_first_cgroup_reclaim_ages_twice_then_evicts() {
    let text = [
        system_mem(
            "512M",
            "transparent_hugepage.enabled = \"never\"\nlru_gen.enabled = 1\n",
        ),
        swap("file", "256M"),
        "[[step]]\nop = \"memcg\"\nlimit = \"64M\"\n".to_string(),
        mmap_anon("a", "64M"),
        phase("fill"),
        touch("a", "write", "len = \"56M\"\n"),
        phase("first"),
        touch("a", "write", "offset = \"56M\"\nlen = \"8M\"\n"),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "fill", "pgscan_anon"), 0);
    for (counter, want) in [
        ("vmscan:mm_vmscan_memcg_reclaim_begin", 1),
        ("sim/lru_gen_inc_max_seq", 2),
        ("sim/lru_gen_try_inc_max_seq", 2),
        ("sim/lru_gen_evict_folios", 5),
        ("sim/shrink_folio_list", 4),
        ("pgscan_anon", 222),
        ("pgsteal_anon", 95),
        ("pswpout", 127),
    ] {
        assert_eq!(c(&r, "first", counter), want, "{counter}");
    }
}

/// Reclaim under MGLRU keeps every invariant (the checker runs after each
/// step): a cgroup much smaller than what is written, then read again
/// (swap-ins, readahead, refaults, agings, evictions of both), 4 KiB and
/// 64 KiB folios, on both architectures.
#[test]
fn reclaim_and_refaults_keep_the_generations_consistent() {
    for arch in ["x86_64", "arm64"] {
        for size in ["never", "always"] {
            let text = [
                system_mem(
                    "256M",
                    &format!(
                        "transparent_hugepage.enabled = \"never\"\nlru_gen.enabled = 1\n{}",
                        mthp(64, size)
                    ),
                ),
                swap("file", "128M"),
                "[[step]]\nop = \"memcg\"\nlimit = \"8M\"\n".to_string(),
                phase("write"),
                anon_written("a", "24M"),
                phase("read"),
                touch("a", "read", ""),
            ]
            .concat();
            let r = run_arch(&text, arch);
            let ctx = format!("{arch} 64K={size}");
            assert!(c(&r, "write", "pswpout") > 0, "{ctx}");
            assert!(c(&r, "read", "pswpin") > 0, "{ctx}");
            assert!(c(&r, "read", "sim/lru_gen_inc_max_seq") > 0, "{ctx}");
            assert!(c(&r, "read", "workingset_refault_anon") > 0, "{ctx}");
        }
    }
}

/// 96 MiB of anonymous memory written on a 64 MiB machine with a swap
/// file, under MGLRU with `min_ttl_ms` = 10 s, after `uptime`.
fn min_ttl_machine(uptime_ms: &str, memcg: bool) -> String {
    [
        system_mem(
            if memcg { "512M" } else { "64M" },
            &format!(
                "transparent_hugepage.enabled = \"never\"\nlru_gen.enabled = 1\n\
                 lru_gen.min_ttl_ms = 10000\nmachine.uptime_ms = {uptime_ms}\n"
            ),
        ),
        swap("file", "256M"),
        if memcg {
            "[[step]]\nop = \"memcg\"\nlimit = \"64M\"\n".to_string()
        } else {
            String::new()
        },
        phase("write"),
        anon_written("a", "96M"),
    ]
    .concat()
}

/// `lru_gen_age_node()` (mm/vmscan.c, 6.18), which kswapd calls at each
/// priority of `balance_pgdat()`: with `min_ttl_ms` set, unless some
/// cgroup's lruvec is sizable and its oldest evictable generation was
/// made more than `min_ttl` jiffies ago (`lruvec_is_reclaimable()`,
/// `time_is_before_jiffies(birth + min_ttl)`), kswapd calls
/// `out_of_memory()`, which kills the workload. The root's generations
/// are made at boot (`lru_gen_init_lruvec()`): on a machine up for 1 s,
/// kswapd's first pass finds them 1 s old, younger than 10 s, and the
/// workload is killed; with `min_ttl_ms` 0 (`reclaimable = !min_ttl`) it
/// never is.
#[test]
fn min_ttl_has_kswapd_kill_when_every_generation_is_young() {
    let text = min_ttl_machine("1000", false);
    match try_run_with(&text, &[]) {
        Err(SimError::Killed { signal, .. }) => {
            assert!(signal.contains("OOM killer"), "{signal}")
        }
        other => panic!("expected an OOM kill, got {:?}", other.map(|_| "a report")),
    }
    let r = run_with(&text, &[("lru_gen.min_ttl_ms", "0")]);
    assert!(c(&r, "write", "pgscan_kswapd") > 0, "kswapd reclaims");
    assert!(c(&r, "write", "pswpout") > 0);
}

/// Only kswapd asks (`lru_gen_age_node()` is kswapd's, through
/// `kswapd_age_node()`): a cgroup at its limit on a roomy machine reclaims
/// through `try_to_free_mem_cgroup_pages()` and is never killed, however
/// young its generations (the cgroup's are made when it is, in the run).
#[test]
fn min_ttl_leaves_cgroup_reclaim_alone() {
    let r = run(&min_ttl_machine("1000", true));
    assert_eq!(c(&r, "write", "pgscan_kswapd"), 0, "no global pressure");
    assert!(c(&r, "write", "pswpout") > 0, "the cgroup's own reclaim");
}

/// A kswapd pass woken by a watermark boost on a node balanced above the
/// boosted high watermark reclaims the boost with the classic LRU, and
/// nothing with MGLRU: boosted reclaim clears may_writepage (and
/// may_swap, `balance_pgdat()`), and `lru_gen_shrink_node()` returns at
/// once without may_writepage. The machine: 64 MiB, 8 MiB of kernel
/// memory in eight unmovable pageblocks holding ten free order-7 blocks
/// (1,280 pages). A cold 52 MiB file read with read(2) fills the page
/// cache until the movable free lists are empty; the next folio falls
/// back to an order-7 block of an unmovable pageblock, which boosts the
/// watermarks by a pageblock (512 pages, `boost_watermark()`) and wakes
/// kswapd. The free pages (the rest of the unmovable blocks) are above
/// high (384) + 512, so the pass is a boosted one: the classic LRU's
/// reclaims 512 clean file pages and takes off the boost; MGLRU's
/// reclaims none, and a later fallback boosts the watermarks again.
#[test]
fn a_boosted_kswapd_pass_reclaims_nothing_with_mglru() {
    let text = [
        system_mem(
            "64M",
            "transparent_hugepage.enabled = \"never\"\n\
             machine.unmovable_blocks = 8\nmachine.boot_used = \"8M\"\n\
             machine.free_unmovable = \"0 0 0 0 0 0 0 10\"\n",
        ),
        "[[file]]\nname = \"data\"\nsize = \"52M\"\nfill = \"cold\"\n".to_string(),
        phase("read"),
        "[[step]]\nop = \"read\"\nfile = \"data\"\n".to_string(),
    ]
    .concat();
    let classic = run(&text);
    let mglru = run_with(&text, &[("lru_gen.enabled", "1")]);
    assert_eq!(c(&classic, "read", "pageoutrun"), 1);
    assert_eq!(c(&classic, "read", "pgsteal_kswapd"), 512);
    assert_eq!(c(&classic, "read", "pgsteal_anon"), 0);
    assert_eq!(c(&classic, "read", "machine/wmark_boost"), 0);
    assert!(c(&mglru, "read", "pageoutrun") >= 1);
    assert_eq!(c(&mglru, "read", "pgscan_kswapd"), 0);
    assert_eq!(c(&mglru, "read", "pgsteal_kswapd"), 0);
    assert_eq!(c(&mglru, "read", "machine/wmark_boost"), 512);
}
