//! Memory-cgroup reclaim (classic LRU): memory.reclaim, limit reclaim,
//! force_empty, and the seed-002 switches, with counts derived from the
//! kernel's reclaim code (mm/vmscan.c, mm/rmap.c, mm/memcontrol.c), each cited
//! next to its number. Every scenario runs with the invariant checker (LRU
//! lists and sizes, cgroup charges, mapcounts, RSS) after every step.
//!
//! Folio sizes of a cold file read through faults come from readahead, so
//! the file tests read the folio histogram at the end of the "touch" phase
//! (before reclaim) and derive the expected counts from it: F folios, P
//! pages, and on arm64 the 64 KiB contiguous blocks.

use crate::common;

use std::collections::BTreeMap;

use common::*;

/// The pages of one histogram bucket ("64kB" → 16).
fn bucket_pages(k: &str) -> u64 {
    k.strip_suffix("kB")
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("unknown bucket {k:?}"))
        / 4
}

/// Folios, pages, pages in folios below 64 KiB, and contiguous 64 KiB
/// blocks (arm64 paints every naturally aligned block of a folio of at
/// least 64 KiB contiguous) of a histogram.
struct Shape {
    folios: u64,
    pages: u64,
    small_pages: u64,
    blocks: u64,
    large_folios: u64,
}

fn shape(h: &BTreeMap<String, u64>) -> Shape {
    let mut s = Shape {
        folios: 0,
        pages: 0,
        small_pages: 0,
        blocks: 0,
        large_folios: 0,
    };
    for (k, &n) in h {
        let p = bucket_pages(k);
        s.folios += n;
        s.pages += n * p;
        if p < 16 {
            s.small_pages += n * p;
        } else {
            s.blocks += n * p / 16;
        }
        if p > 1 {
            s.large_folios += n;
        }
    }
    s
}

/// A step that puts the process into a new memory cgroup limited to 1 MiB.
const MEMCG_1M: &str = "[[step]]\nop = \"memcg\"\nlimit = \"1M\"\n";

/// A cold `size` file faulted in by a read touch inside a cgroup (phase
/// "touch"), then `reclaim` bytes reclaimed through memory.reclaim (phase
/// "reclaim").
fn file_reclaim(size: &str, reclaim: &str, extra: &str) -> String {
    [
        system(""),
        file("data", size, "fill = \"cold\""),
        step("memcg"),
        phase("touch"),
        mmap_file("f", "data", size, &format!("prot = \"r\"\n{extra}")),
        touch("f", "read", ""),
        phase("reclaim"),
        step_with("memcg_reclaim", &format!("amount = \"{reclaim}\"")),
    ]
    .concat()
}

/// Clean file folios mapped once and reclaimed by memory.reclaim take two
/// passes each (`folio_check_references()` and `shrink_inactive_list()`,
/// mm/vmscan.c): pass 1 finds the young PTEs, clears them and keeps the folio
/// with PG_referenced; pass 2 finds none, RECLAIM_CLEAN, unmaps and frees.
/// Reclaiming the whole file means every folio gets both passes and nothing is
/// scanned a third time, so: folio_referenced 2F (`folio_check_references()`),
/// its pvmw iterations and x86 young test-and-clears 2P
/// (`folio_referenced_one()`: per PTE, no early exit), no young flush on x86
/// (`ptep_clear_flush_young()`, arch/x86/mm/pgtable.c), one try_to_unmap walk
/// per folio looping per PTE (`try_to_unmap_one()`: P iterations), one
/// immediate local flush per PTE (a single-CPU mm is never deferred,
/// `should_defer_flush()`, mm/rmap.c), one rss_stat update and one rmap removal
/// per PTE (`add_mm_counter()`, `folio_remove_rmap_ptes()`); pgscan_file 2P,
/// pgsteal_file P. Cgroup reclaim counts pgscan_proactive only in the cgroup's
/// memory.stat (shrink_inactive_list: `if (!cgroup_reclaim(sc))`).
#[test]
fn memory_reclaim_takes_two_passes_per_folio() {
    let r = run(&file_reclaim("4M", "4M", ""));
    let s = shape(&folios(&r, "touch", "f"));
    let (f, p) = (s.folios as i64, s.pages as i64);
    assert_eq!(p, 1024);
    assert_eq!(c(&r, "reclaim", "pgsteal_file"), p);
    assert_eq!(c(&r, "reclaim", "pgscan_file"), 2 * p);
    assert_eq!(c(&r, "reclaim", "memcg/0/pgscan_proactive"), 2 * p);
    assert_eq!(c(&r, "reclaim", "memcg/0/pgsteal_proactive"), p);
    assert_counters(
        &r,
        "reclaim",
        "memcg/0/pgscan_direct=0 pgscan_proactive=0 pgsteal_proactive=0",
    );
    assert_eq!(c(&r, "reclaim", "sim/folio_referenced"), 2 * f);
    assert_eq!(c(&r, "reclaim", "sim/pvmw_referenced"), 2 * p);
    assert_eq!(c(&r, "reclaim", "sim/young_test_and_clear"), 2 * p);
    assert_eq!(c(&r, "reclaim", "sim/young_flush"), 0);
    assert_eq!(c(&r, "reclaim", "sim/rmap_walk"), 3 * f);
    assert_eq!(c(&r, "reclaim", "sim/pvmw_iterations"), p);
    assert_eq!(c(&r, "reclaim", "tlb:tlb_flush"), p);
    assert_eq!(c(&r, "reclaim", "sim/rss_stat_update"), p);
    assert_eq!(c(&r, "reclaim", "sim/rmap_remove"), p);
    assert_eq!(c(&r, "reclaim", "pgactivate"), 0);
    // PTE reads (`page_vma_mapped_walk()`, mm/page_vma_mapped.c): 2 per PTE per
    // referenced pass; the unmap walk (TTU_SYNC: map_pte() reads nothing)
    // reads 2 for each folio's first PTE (check_pte(), the explicit
    // ptep_get()) and 3 for each next one (the next_pte read too); no folio
    // crosses a page table.
    assert_eq!(c(&r, "reclaim", "sim/ptep_get"), 4 * p + 3 * p - f);
    // Nothing of the file stays cached or mapped.
    assert_eq!(folios(&r, "reclaim", "f"), hist(&[]));
}

/// pgsteal_file is what was freed: the pages go back to the allocator
/// (pgfree) and leave the cgroup's inactive file list.
#[test]
fn pgsteal_equals_pages_freed() {
    let r = run(&file_reclaim("4M", "3M", ""));
    let steal = c(&r, "reclaim", "pgsteal_file");
    assert!(steal >= 768, "reclaimed {steal} of 768 pages");
    assert_eq!(c(&r, "reclaim", "pgfree"), steal);
    assert_eq!(c(&r, "reclaim", "nr_inactive_file"), -steal);
    assert_eq!(c(&r, "reclaim", "memcg/0/inactive_file"), -steal * 4096);
    let left = hist_pages(&folios(&r, "reclaim", "f")) as i64;
    assert_eq!(left, 1024 - steal);
}

/// Without recency (MADV_RANDOM, `vma_has_recency()`) folio_referenced()
/// skips the mapping (`invalid_folio_referenced_vma()`): the rmap walk runs
/// but no PTE is visited, so every folio is reclaimed on its first pass.
#[test]
fn random_advice_skips_the_young_check() {
    let r = run(&file_reclaim("2M", "2M", "madvise = [\"random\"]"));
    let s = shape(&folios(&r, "touch", "f"));
    assert_eq!(c(&r, "reclaim", "pgscan_file"), s.pages as i64);
    assert_eq!(c(&r, "reclaim", "pgsteal_file"), s.pages as i64);
    assert_eq!(c(&r, "reclaim", "sim/folio_referenced"), s.folios as i64);
    assert_counters(
        &r,
        "reclaim",
        "sim/pvmw_referenced=0 sim/young_test_and_clear=0",
    );
}

/// A PMD-mapped file THP (MADV_HUGEPAGE read-around of order 9,
/// `shrink_inactive_list()`, mm/vmscan.c): pass 1 clears the PMD's young bit
/// with a full flush on x86 (`pmdp_clear_flush_young()`,
/// arch/x86/mm/pgtable.c), pass 2 unmaps it by zapping the PMD
/// (TTU_SPLIT_HUGE_PMD on a file VMA, another 2 MiB flush), no PTE loop.
#[test]
fn pmd_mapped_file_folio() {
    let r = run(&file_reclaim("2M", "2M", "madvise = [\"hugepage\"]"));
    assert_eq!(folios(&r, "touch", "f"), hist(&[("2048kB", 1)]));
    assert_eq!(c(&r, "touch", "thp_file_mapped"), 1);
    assert_counters(
        &r,
        "reclaim",
        "pgsteal_file=512 pgscan_file=1024 sim/pvmw_referenced=2 sim/young_test_and_clear=2 \
         sim/young_flush=1 thp_split_pmd=1 sim/pvmw_iterations=0 tlb:tlb_flush=2 \
         sim/tlb_flush_all=2",
    );
}

/// The seed-002 switches on x86 (`folio_referenced_one()` and
/// `try_to_unmap_one()`, mm/rmap.c): with `batch_folio_referenced` one pvmw
/// iteration per folio and pass (`folio_referenced_one()`: one batch covers a
/// folio, which never crosses a PMD here) but still one young test-and-clear
/// per PTE (the generic clear_flush_young_ptes loops), and fewer PTE reads (per
/// batch 2 walk + 1 explicit + N - 1 in folio_pte_batch, against 2 per PTE);
/// with `batch_file_unmap` one unmap iteration, one flush, one rss_stat update
/// and one rmap removal per folio (`try_to_unmap_one()` with
/// `folio_unmap_pte_batch()`). Reclaim itself is unchanged: same
/// pgscan/pgsteal.
#[test]
fn seed002_switches_x86() {
    let text = file_reclaim("4M", "4M", "");
    let vanilla = run(&text);
    let refs = run_with(&text, &[("series.batch_folio_referenced", "true")]);
    let both = run_with(
        &text,
        &[
            ("series.batch_folio_referenced", "true"),
            ("series.batch_file_unmap", "true"),
        ],
    );
    let s = shape(&folios(&vanilla, "touch", "f"));
    let (f, p) = (s.folios as i64, s.pages as i64);
    for r in [&vanilla, &refs, &both] {
        assert_eq!(c(r, "reclaim", "pgscan_file"), 2 * p);
        assert_eq!(c(r, "reclaim", "pgsteal_file"), p);
        assert_eq!(c(r, "reclaim", "sim/young_test_and_clear"), 2 * p);
        assert_eq!(c(r, "reclaim", "sim/young_flush"), 0);
    }
    assert_eq!(c(&vanilla, "reclaim", "sim/pvmw_referenced"), 2 * p);
    assert_eq!(c(&refs, "reclaim", "sim/pvmw_referenced"), 2 * f);
    // Referenced-walk reads per pass: vanilla 2 per PTE, 2P; batched, per
    // large folio 2 (walk) + 1 (explicit) + N - 1 (folio_pte_batch), per
    // order-0 folio 2: P + F + L for L large folios.
    let l = s.large_folios as i64;
    let walk_vanilla = 4 * p;
    let walk_batched = 2 * (p + f + l);
    // try_to_unmap_one(): 2 reads for each folio's first PTE, 3 per next.
    let ttu_reads = 3 * p - f;
    assert_eq!(
        c(&vanilla, "reclaim", "sim/ptep_get"),
        walk_vanilla + ttu_reads
    );
    assert_eq!(
        c(&refs, "reclaim", "sim/ptep_get"),
        walk_batched + ttu_reads
    );
    for (r, per) in [(&refs, p), (&both, f)] {
        assert_eq!(c(r, "reclaim", "sim/pvmw_iterations"), per);
        assert_eq!(c(r, "reclaim", "sim/flush_tlb_range"), per);
        assert_eq!(c(r, "reclaim", "tlb:tlb_flush"), per);
        assert_eq!(c(r, "reclaim", "sim/rss_stat_update"), per);
        assert_eq!(c(r, "reclaim", "sim/rmap_remove"), per);
    }
    // The flushed pages stay the same: INVLPG per page up to 33 pages,
    // a full flush above (`flush_tlb_func()`, arch/x86/mm/tlb.c).
    assert_eq!(
        c(&vanilla, "reclaim", "sim/invlpg"),
        c(&refs, "reclaim", "sim/invlpg")
    );
}

/// arm64 (`contpte_ptep_clear_flush_young()`, `contpte_convert()`,
/// arch/arm64/mm/contpte.c; `arch_tlbbatch_add_pending()`): vanilla clears the
/// access flag of all 16 entries of a contiguous block once per PTE (256 per 64
/// KiB block and pass) and issues in pass 1 one TLBI by page per young
/// non-contiguous PTE and one range TLBI per young block; the batch clears each
/// entry once and issues one TLBI per folio. The vanilla unmap unfolds every
/// block (1 per block) and issues one deferred TLBI per PTE; the file batch
/// unfolds nothing and issues one per folio.
#[test]
fn seed002_switches_arm64() {
    let text = file_reclaim("4M", "4M", "");
    let set = |extra: &[(&str, &str)]| {
        let mut v = vec![("system.arch", "arm64")];
        v.extend_from_slice(extra);
        run_with(&text, &v)
    };
    let vanilla = set(&[]);
    let refs = set(&[("series.batch_folio_referenced", "true")]);
    let both = set(&[
        ("series.batch_folio_referenced", "true"),
        ("series.batch_file_unmap", "true"),
    ]);
    let s = shape(&folios(&vanilla, "touch", "f"));
    let (f, p) = (s.folios as i64, s.pages as i64);
    let (small, blocks) = (s.small_pages as i64, s.blocks as i64);
    assert!(blocks > 0, "the file has 64 KiB folios");
    let cont_ptes = p - small;
    assert_eq!(
        c(&vanilla, "reclaim", "sim/young_test_and_clear"),
        2 * (small + 16 * cont_ptes)
    );
    assert_eq!(c(&vanilla, "reclaim", "sim/young_flush"), small + blocks);
    for r in [&refs, &both] {
        assert_eq!(c(r, "reclaim", "sim/young_test_and_clear"), 2 * p);
        assert_eq!(c(r, "reclaim", "sim/young_flush"), f);
        assert_eq!(c(r, "reclaim", "sim/pvmw_referenced"), 2 * f);
    }
    assert_eq!(c(&vanilla, "reclaim", "sim/pvmw_referenced"), 2 * p);
    assert_eq!(c(&vanilla, "reclaim", "sim/contpte_unfold"), blocks);
    assert_eq!(c(&both, "reclaim", "sim/contpte_unfold"), 0);
    assert_eq!(c(&vanilla, "reclaim", "sim/tlbbatch_add_pending"), p);
    assert_eq!(c(&both, "reclaim", "sim/tlbbatch_add_pending"), f);
    assert_eq!(c(&both, "reclaim", "sim/pvmw_iterations"), f);
    for r in [&vanilla, &refs, &both] {
        assert_eq!(c(r, "reclaim", "pgsteal_file"), p);
        // arm64 has no tlb:tlb_flush tracepoint: absent, not 0.
        let phase = r.phases.iter().find(|ph| ph.name == "reclaim").unwrap();
        assert!(!phase.counters.contains_key("tlb:tlb_flush"));
    }
}

/// A cold file read through faults under a 1 MiB (256-page) limit, without
/// readahead (`read_ahead_kb = 0`: one order-0 folio per fault). Charges come
/// in 64-page batches from the per-CPU stock. Kernel memory is charged too:
/// the first fault allocates the PUD, PMD and PTE tables (3 pages,
/// GFP_PGTABLE_USER), and the page cache's xarray nodes (XA_FLAGS_ACCOUNT,
/// 592 bytes each: the node under index 1's store, then one per 64 indices
/// and the level-1 root) take 1 page through the object stock. So 252 folios
/// fit, and the 253rd fault is the first that does not: try_charge_memcg
/// reclaims (nr_to_reclaim = max(1, 32), `try_to_free_mem_cgroup_pages()`,
/// mm/vmscan.c). All 252 folios are young and inactive; the scan budget is
/// size >> priority (`get_scan_count()`, mm/vmscan.c): nothing at priorities
/// 12..8, then 1, 3, 7, 15, 31, 63 and 126 pages at 7..1 (in rounds of at
/// most 32: 11 calls) — 246 folios kept on their first pass — and at
/// priority 0 two rounds of 32: the 6 last first-pass folios with 26
/// second-pass ones (freed: 26 < 32, go on), then 32 more (freed). 58
/// reclaimed meets the target and the lruvec stops (no anon to balance
/// against). So: one reclaim call, 13 shrink_inactive_list calls, 310 pages
/// scanned, 58 stolen, counted as direct reclaim in the cgroup only.
#[test]
fn limit_reclaim_of_file_pages() {
    let text = [
        system("read_ahead_kb = 0"),
        file("data", "2M", "fill = \"cold\""),
        step_with("memcg", "limit = \"1M\""),
        mmap_file("f", "data", "2M", "prot = \"r\""),
        phase("first"),
        touch("f", "read", "len = \"1028K\""),
        phase("rest"),
        touch("f", "read", "offset = \"1028K\""),
    ]
    .concat();
    let r = run(&text);
    assert_counters(
        &r,
        "first",
        "major-faults=257 vmscan:mm_vmscan_memcg_reclaim_begin=1 \
         vmscan:mm_vmscan_lru_shrink_inactive=13 pgscan_file=310 pgsteal_file=58 \
         memcg/0/pgscan_direct=310 memcg/0/pgsteal_direct=58 pgscan_direct=0 \
         sim/folio_referenced=310 sim/pvmw_iterations=58",
    );
    // The rest of the file streams through the limit: everything read
    // beyond it is reclaimed, each folio in two passes.
    let cached = c(&r, "rest", "memcg/0/inactive_file") + c(&r, "first", "memcg/0/inactive_file");
    assert!(
        cached <= (1 << 20) - 4 * 4096,
        "cgroup holds {cached} bytes of file"
    );
    let steal = c(&r, "first", "pgsteal_file") + c(&r, "rest", "pgsteal_file");
    assert_eq!(steal, 512 - cached / 4096);
    let scan = c(&r, "first", "pgscan_file") + c(&r, "rest", "pgscan_file");
    assert!(
        scan >= 2 * steal && scan <= 2 * steal + 256,
        "scanned {scan}"
    );
}

/// Anon memory written under a limit with a zram swap device (synchronous: a
/// reclaimed page is written and freed in the same pass, `shrink_folio_list()`,
/// mm/vmscan.c, `swap_writeout()`, mm/page_io.c): only the anon lists are
/// scanned (no file pages, swap present: SCAN_FRACT, `get_scan_count()`,
/// mm/vmscan.c), every stolen page was swapped out once, and its slot remembers
/// the cgroup, so reading it back charges the cgroup again (and reclaims
/// again).
#[test]
fn anon_limit_reclaim_swaps_out() {
    let text = [
        system(""),
        swap("zram", "16M"),
        MEMCG_1M.to_string(),
        mmap_anon("a", "2M"),
        phase("write"),
        touch("a", "write", ""),
        phase("read"),
        touch("a", "read", "len = \"256K\""),
    ]
    .concat();
    let r = run(&text);
    let steal = c(&r, "write", "pgsteal_anon");
    assert!(steal >= 256, "stole {steal} anon pages");
    assert_eq!(c(&r, "write", "pswpout"), steal);
    assert_eq!(c(&r, "write", "memcg/0/pgsteal_direct"), steal);
    assert_eq!(c(&r, "write", "pgscan_file"), 0);
    assert!(c(&r, "write", "pgscan_anon") >= 2 * steal);
    assert_eq!(pages(&r, "write", "a", "swapped"), steal as u64);
    // The first 64 pages were swapped out first; reading them back is a
    // swap-in charged to the cgroup, which reclaims again.
    assert_eq!(c(&r, "read", "pswpin"), 64);
    assert!(c(&r, "read", "memcg/0/pgsteal_direct") > 0);
}

/// force_empty reclaims everything reclaimable: the whole mapped file.
#[test]
fn force_empty_reclaims_everything() {
    let text = file_reclaim("2M", "4K", "").replace(
        "op = \"memcg_reclaim\"\namount = \"4K\"",
        "op = \"force_empty\"",
    );
    let r = run(&text);
    assert_eq!(c(&r, "reclaim", "pgsteal_file"), 512);
    assert_eq!(c(&r, "reclaim", "memcg/0/inactive_file"), -(512 << 12));
    assert_eq!(folios(&r, "reclaim", "f"), hist(&[]));
}

/// Anon memory beyond the limit without swap cannot be reclaimed: the
/// kernel would invoke the memcg OOM killer, which the model refuses.
#[test]
fn memcg_oom_is_unsupported() {
    let text = [system(""), MEMCG_1M.to_string(), anon_written("a", "2M")].concat();
    match try_run_with(&text, &[]) {
        Err(foliosim_sim::SimError::Unsupported { what, .. }) => {
            assert!(what.contains("memcg OOM"), "{what}")
        }
        other => panic!("expected a memcg OOM refusal, got {other:?}"),
    }
}

/// The seed-002 scenario runs, at 64 MiB. Filled before the memcg step (as
/// written on 2026-11-21: `fill = "read"`), its page cache is charged to the
/// root (in both engines) and memory.reclaim of the new cgroup finds nothing
/// (EAGAIN after MAX_RECLAIM_RETRIES + 1 empty rounds). With the file cold,
/// the touch reads it inside the cgroup and 48 of 64 MiB are reclaimed, in
/// two passes: every page scanned once, the reclaimed ones twice, exactly
/// as the host does at this size (`shrink_inactive_list()`, mm/vmscan.c).
#[test]
fn seed002_scenario_runs_small() {
    let (_, text) = repo_file("scenarios/seed002/memcg-reclaim-file.toml");
    let small = [
        ("system.memory", "256M"),
        ("file.data.size", "64M"),
        ("step.2.size", "64M"),
        ("step.5.amount", "48M"),
    ];
    let cold = text
        .replace("fill = \"read\"", "fill = \"cold\"")
        .replace("read_size = \"1M\"\n", "");
    let r = run_with(&cold, &small);
    assert_eq!(c(&r, "measured", "pgsteal_file"), 12288);
    assert_eq!(c(&r, "measured", "pgscan_file"), 16384 + 12288);
    let r = run_with(&text, &small);
    if text.contains("fill = \"read\"") {
        assert_counters(
            &r,
            "measured",
            "pgsteal_file=0 vmscan:mm_vmscan_memcg_reclaim_begin=17",
        );
    } else {
        assert_eq!(c(&r, "measured", "pgsteal_file"), 12288);
    }
}

/// Random workloads inside memory cgroups, checked after every step by the
/// invariant checker (LRU lists and sizes, charges against usage, swap
/// counts, mapcounts): anon, file and (without swap) shmem regions, limits
/// that force reclaim, swap areas, forks, MADV_PAGEOUT / DONTNEED, munmap,
/// memory.reclaim and force_empty, both series switches. A run may only
/// end early with the memcg OOM refusal; anything else (a broken invariant,
/// a panic) fails. `FOLIOSIM_MEMCG_CASES=N` changes the number of cases.
#[test]
fn random_memcg_workloads() {
    let n: u64 = std::env::var("FOLIOSIM_MEMCG_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let mut failures = Vec::new();
    for seed in 0..n {
        for arch in ["x86_64", "arm64"] {
            let text = random_memcg_scenario(seed);
            let res = std::panic::catch_unwind(|| try_run_with(&text, &[("system.arch", arch)]));
            let err = match res {
                Ok(Ok(_)) => continue,
                Ok(Err(foliosim_sim::SimError::Unsupported { what, .. }))
                    if what.contains("memcg OOM") =>
                {
                    continue
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => "panic".to_string(),
            };
            failures.push(format!("seed {seed} {arch}: {err}\n{text}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The generator's random numbers (SplitMix64).
struct Rng(foliosim_scenario::SplitMix64);

impl Rng {
    /// Uniform in `0..n`.
    fn n(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
}

/// The regions of [`random_memcg_scenario`]: name, kind, mmap keys, size in
/// MiB.
const MEMCG_REGIONS: [(&str, &str, &str, u64); 3] = [
    ("a", "anon", "size = \"4M\"\nprot = \"rw\"", 4),
    ("f", "file", "file = \"d\"\nsize = \"8M\"\nprot = \"r\"", 8),
    (
        "s",
        "shmem",
        "size = \"2M\"\nshared = true\nprot = \"rw\"",
        2,
    ),
];

/// One random memcg scenario (see [`random_memcg_workloads`]).
fn random_memcg_scenario(seed: u64) -> String {
    use std::fmt::Write as _;
    let mut r = Rng(foliosim_scenario::SplitMix64::new(seed ^ 0x3e3c_9000));
    let (mut s, swap) = random_memcg_system(&mut r);
    let _ = writeln!(s, "[[file]]\nname = \"d\"\nsize = \"8M\"\nfill = \"cold\"");
    let limit = [
        "",
        "limit = \"1M\"\n",
        "limit = \"3M\"\n",
        "limit = \"6M\"\n",
    ];
    let _ = writeln!(s, "[[step]]\nop = \"memcg\"\n{}", limit[r.n(4) as usize]);
    // Swapping shmem out is not modelled: shmem only without swap.
    let regions = if swap {
        &MEMCG_REGIONS[..2]
    } else {
        &MEMCG_REGIONS[..]
    };
    for &(name, kind, keys, _) in regions {
        let adv = ["", "madvise = [\"hugepage\"]\n", "madvise = [\"random\"]\n"];
        let adv = adv[r.n(3) as usize];
        let _ = writeln!(
            s,
            "[[step]]\nop = \"mmap\"\nregion = \"{name}\"\nkind = \"{kind}\"\n{keys}\n{adv}"
        );
    }
    let _ = writeln!(s, "[[step]]\nop = \"phase\"\nname = \"p\"");
    for _ in 0..(4 + r.n(10)) {
        let step = random_memcg_step(&mut r, regions);
        let _ = writeln!(s, "[[step]]\n{step}\n");
    }
    s
}

/// The `[system]` table: mTHP sizes, readahead, the series switches and
/// perhaps one swap area (true if so).
fn random_memcg_system(r: &mut Rng) -> (String, bool) {
    use std::fmt::Write as _;
    let mut s = String::from("[system]\nmemory = \"256M\"\n");
    for kb in [16, 64, 2048] {
        let mode = ["never", "always", "inherit"][r.n(3) as usize];
        let _ = writeln!(
            s,
            "transparent_hugepage.hugepages-{kb}kB.enabled = \"{mode}\""
        );
    }
    let _ = writeln!(s, "read_ahead_kb = {}", [0, 128, 8192][r.n(3) as usize]);
    for sw in [
        "batch_folio_referenced",
        "batch_file_unmap",
        "batch_anon_unmap",
    ] {
        let _ = writeln!(s, "series.{sw} = {}", r.n(2) == 1);
    }
    let swap = r.n(2) == 1;
    if swap {
        let kind = ["file", "block", "zram"][r.n(3) as usize];
        let mib = [2, 16][r.n(2) as usize];
        let _ = writeln!(s, "[[system.swap]]\nkind = \"{kind}\"\nsize = \"{mib}M\"");
    }
    (s, swap)
}

/// One step on a random 256 KiB-aligned range of a random region.
fn random_memcg_step(r: &mut Rng, regions: &[(&str, &str, &str, u64)]) -> String {
    let (name, _, _, mib) = regions[r.n(regions.len() as u64) as usize];
    let off = r.n(mib * 4) * 256; // KiB
    let len = (mib * 1024 - off).min(256 * (1 + r.n(8)));
    let range = format!("offset = \"{off}K\"\nlen = \"{len}K\"");
    match r.n(9) {
        0..=2 => {
            let read = name == "f" || r.n(3) == 0;
            let access = if read { "read" } else { "write" };
            format!("op = \"touch\"\nregion = \"{name}\"\naccess = \"{access}\"\n{range}")
        }
        3 => format!("op = \"madvise\"\nregion = \"{name}\"\nadvice = \"pageout\"\n{range}"),
        4 => format!("op = \"madvise\"\nregion = \"{name}\"\nadvice = \"dontneed\"\n{range}"),
        5 => format!("op = \"memcg_reclaim\"\namount = \"{}K\"", 64 * (1 + r.n(64))),
        6 => "op = \"force_empty\"".to_string(),
        7 => format!(
            "op = \"fork\"\n[[step.child]]\nop = \"touch\"\nregion = \"{name}\"\naccess = \"read\"\n{range}"
        ),
        _ => "op = \"wait\"".to_string(),
    }
}

/// A shared anonymous mapping lives in an unlinked shmem file, and the
/// munmap of its only VMA drops the last reference (`fput()` → `iput()` →
/// `shmem_evict_inode()`): its pages leave the page cache and the cgroup at
/// once. Three rounds of 12 MiB written and unmapped under a 16 MiB limit
/// therefore never reach the limit: no reclaim, no swap-out, no failed
/// charge (were the pages kept, round 2 would have to push round 1's 3,072
/// dirty pages out to swap). Each round's write faults are one per page
/// (`do_shared_fault()`; no fault-around on writes): 9,216.
#[test]
fn unmapped_shared_anon_memory_leaves_the_cgroup() {
    let round = |s: &str| {
        [
            mmap(s, "shmem", "12M", "shared = true"),
            touch(s, "write", ""),
            munmap(s),
        ]
        .concat()
    };
    let text = [
        system_mem("256M", ""),
        swap("zram", "64M"),
        phase("run"),
        step_with("memcg", "limit = \"16M\""),
        round("s1"),
        round("s2"),
        round("s3"),
    ]
    .concat();
    let r = run(&text);
    assert_counters(
        &r,
        "run",
        "pgfault=9216 pswpout=0 pgscan_direct=0 memcg/0/pgscan_direct=0 memcg/0/failcnt=0",
    );
    // cgroup v1 memory.stat: each of the 9,216 order-0 folios is one
    // page-in at its charge (memcg1_commit_charge()) and one page-out at
    // the eviction's uncharge (uncharge_folio()); the faults are the
    // cgroup's task's. Linux 6.18.44 shows the same three numbers.
    assert_counters(
        &r,
        "run",
        "memcg/0/pgpgin=9216 memcg/0/pgpgout=9216 memcg/0/pgfault=9216 memcg/0/pgmajfault=0",
    );
}

/// A cgroup's usage and peak at each phase end (`memcg/<n>/usage_bytes`,
/// `peak_bytes`, levels, not deltas). 4 MiB of anonymous memory written
/// in an unlimited cgroup: 1024 order-0 folios and k page tables (a PTE
/// table per 2 MiB touched, perhaps a PMD table; 1 <= k <= 64), every one
/// charged through the per-CPU stock, which takes MEMCG_CHARGE_BATCH (64)
/// pages from the counter at a time (`try_charge_memcg()`,
/// mm/memcontrol.c): ceil((1024 + k) / 64) = 17 batches, 1088 pages, and
/// the stock keeps 64 - k. The munmap uncharges the folios from the
/// counter (`uncharge_batch()`): 64 pages left; the page tables go back
/// into the stock (`__memcg_kmem_uncharge_page()` → `refill_stock()`),
/// which then holds 64 pages, not more than a batch, so it is not drained
/// and the counter stays at 64 pages. The peak is reset to the usage at
/// each phase start (`page_counter_reset_watermark()`), so the unmap
/// phase's peak is the write phase's usage.
#[test]
fn usage_and_peak_at_phase_ends() {
    let text = [
        system(""),
        step("memcg"),
        mmap_anon("a", "4M"),
        phase("write"),
        touch("a", "write", ""),
        phase("unmap"),
        step_with("munmap", "region = \"a\""),
    ]
    .concat();
    let r = run(&text);
    let page = 4096;
    assert_eq!(c(&r, "write", "memcg/0/usage_bytes"), 1088 * page);
    assert_eq!(c(&r, "write", "memcg/0/peak_bytes"), 1088 * page);
    assert_eq!(c(&r, "unmap", "memcg/0/usage_bytes"), 64 * page);
    assert_eq!(c(&r, "unmap", "memcg/0/peak_bytes"), 1088 * page);
}

/// A 32 MiB cgroup with a swap file: a 16 MiB file read twice through
/// read(2) (the second access activates every folio,
/// `folio_mark_accessed()`), then 48 MiB of anonymous memory written in
/// phase "write", which limit reclaim must make room for, at
/// `vm.swappiness` = `swappiness`.
fn swappiness_scenario(swappiness: u32) -> String {
    format!(
        "[system]\nmemory = \"2G\"\ntransparent_hugepage.enabled = \"never\"\n\
         vm.swappiness = {swappiness}\n\
         [[system.swap]]\nkind = \"file\"\nsize = \"256M\"\n\
         [[file]]\nname = \"data\"\nsize = \"16M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"memcg\"\nlimit = \"32M\"\n\
         [[step]]\nop = \"read\"\nfile = \"data\"\ncount = 2\n\
         [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"48M\"\n\
         [[step]]\nop = \"phase\"\nname = \"write\"\n\
         [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n"
    )
}

#[test]
fn swappiness_weighs_anon_against_file() {
    // The file's 4,096 folios are all active, so the inactive file list is
    // low: limit reclaim deactivates file pages (DEACTIVATE_FILE) and is
    // never in cache_trim_mode, and get_scan_count() splits each priority's
    // budget by calculate_pressure_balance(): ap = swappiness * (total + 1)
    // / (anon_cost + 1), fp = (200 - swappiness) * (total + 1) /
    // (file_cost + 1). The cgroup's 8,192 pages hold the file's 4,096 when
    // the 12,288 written pages start arriving, so reclaim must free
    // 4,096 + 12,288 - 8,192 = 8,192 pages, give or take the few the
    // cgroup is below its limit at the end.
    //
    // At 200, fp = 0: file pages are scanned only in a pass that gets to
    // priority 0 without its target (SCAN_EQUAL, `!sc->priority &&
    // swappiness`), where the first pass over freshly written, still
    // referenced anon pages can end; a few SWAP_CLUSTER_MAX batches at
    // most. Swapping makes the room.
    let r = run(&swappiness_scenario(200));
    let file = c(&r, "write", "pgsteal_file");
    assert!(file <= 128, "pgsteal_file {file}");
    let anon = c(&r, "write", "pgsteal_anon");
    assert!(
        (8192 - 128..8192 + 256).contains(&anon),
        "pgsteal_anon {anon}"
    );
    // At 60 file pages carry 140 of 200 parts of the pressure: the file is
    // deactivated and dropped whole (clean page cache: no write), and
    // swap-outs make only the rest of the room, 4,096 pages: half the
    // swapping of 200.
    let r = run(&swappiness_scenario(60));
    assert_counters(&r, "write", "pgsteal_file=4096 pgdeactivate=4096");
    let anon = c(&r, "write", "pgsteal_anon");
    assert!((4096..4096 + 256).contains(&anon), "pgsteal_anon {anon}");
    // At 0, limit reclaim scans file pages only (`cgroup_reclaim(sc) &&
    // !swappiness`: SCAN_FILE): once the file is gone the written anon
    // cannot be reclaimed and the cgroup would OOM, which the model
    // refuses to simulate.
    let err = try_run_with(&swappiness_scenario(0), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("memcg OOM"), "{err}");
}

/// A cgroup without a limit holding a 16 MiB file read twice (active)
/// and 16 MiB of written anonymous memory, with a swap file; phase
/// "reclaim" asks memory.reclaim for 8 MiB with `swappiness` (a
/// memcg_reclaim step's `swappiness` key, as written there).
fn reclaim_swappiness_scenario(swappiness: &str) -> String {
    format!(
        "[system]\nmemory = \"2G\"\ntransparent_hugepage.enabled = \"never\"\n\
         [[system.swap]]\nkind = \"file\"\nsize = \"256M\"\n\
         [[file]]\nname = \"data\"\nsize = \"16M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"memcg\"\n\
         [[step]]\nop = \"read\"\nfile = \"data\"\ncount = 2\n\
         [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"16M\"\n\
         [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n\
         [[step]]\nop = \"phase\"\nname = \"reclaim\"\n\
         [[step]]\nop = \"memcg_reclaim\"\namount = \"8M\"\nswappiness = {swappiness}\n"
    )
}

#[test]
fn memory_reclaim_swappiness_picks_the_lists() {
    // user_proactive_reclaim() passes its swappiness= to every
    // try_to_free_mem_cgroup_pages() call (sc->proactive_swappiness), and
    // get_scan_count() reads it (sc_swappiness()). "max" is
    // SWAPPINESS_ANON_ONLY: SCAN_ANON, so the 2,048 pages asked for all
    // come from the anonymous pages, none from the file.
    let r = run(&reclaim_swappiness_scenario("\"max\""));
    assert_eq!(c(&r, "reclaim", "pgscan_file"), 0);
    assert_eq!(c(&r, "reclaim", "pgsteal_file"), 0);
    assert!(c(&r, "reclaim", "pgsteal_anon") >= 2048);
    // 0 in a cgroup's reclaim: SCAN_FILE, the file's active pages
    // deactivated and dropped, nothing swapped.
    let r = run(&reclaim_swappiness_scenario("0"));
    assert_counters(&r, "reclaim", "pgscan_anon=0 pgsteal_anon=0 pswpout=0");
    assert!(c(&r, "reclaim", "pgsteal_file") >= 2048);
    // A swappiness above 200 is refused (as the kernel's -EINVAL), naming
    // the file, line and field.
    let text = reclaim_swappiness_scenario("201");
    let err = foliosim_scenario::parse_str("t.toml", &text, &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("t.toml:") && err.contains("step[6].swappiness: expected a swappiness"),
        "{err}"
    );
}

/// A cgroup whose memory.swap.max is `swap_max` holding a 16 MiB file
/// (inactive) and 16 MiB of written anonymous memory, with a swap file;
/// phase "reclaim" asks memory.reclaim for 8 MiB of anonymous memory
/// first (`swappiness=max`), phase "swapin" reads the anonymous memory
/// back.
fn swap_max_scenario(swap_max: &str) -> String {
    format!(
        "[system]\nmemory = \"2G\"\ntransparent_hugepage.enabled = \"never\"\n\
         [[system.swap]]\nkind = \"file\"\nsize = \"256M\"\n\
         [[file]]\nname = \"data\"\nsize = \"16M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"memcg\"\nswap_max = {swap_max}\n\
         [[step]]\nop = \"read\"\nfile = \"data\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"16M\"\n\
         [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n\
         [[step]]\nop = \"phase\"\nname = \"reclaim\"\n\
         [[step]]\nop = \"memcg_reclaim\"\namount = \"8M\"\nswappiness = \"max\"\n\
         [[step]]\nop = \"phase\"\nname = \"swapin\"\n\
         [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"read\"\n"
    )
}

#[test]
fn memory_swap_max_caps_the_cgroups_swap() {
    // Without a limit every slot reclaim takes is charged to the cgroup
    // (__mem_cgroup_try_charge_swap()) and none is refused: SCAN_ANON
    // swaps out at least the 2,048 pages asked for.
    let r = run(&swap_max_scenario("\"max\""));
    let out = c(&r, "reclaim", "pswpout");
    assert!(out >= 2048, "{out}");
    assert_eq!(c(&r, "reclaim", "memcg/0/swap_bytes"), out * 4096);
    assert_counters(
        &r,
        "reclaim",
        "memcg/0/swap_events_max=0 memcg/0/swap_events_fail=0 pgsteal_file=0",
    );
    // memory.swap.max = 1 MiB: 256 slots. The 257th charge and those after
    // it in the same scan are refused (a `max` and a `fail` event each,
    // the folio activated); the next get_scan_count() finds the cgroup
    // can swap no more (mem_cgroup_get_nr_swap_pages() = 0) and scans the
    // file lists for the rest of the 2,048 pages.
    let r = run(&swap_max_scenario("\"1M\""));
    assert_counters(
        &r,
        "reclaim",
        "pswpout=256 pgsteal_anon=256 memcg/0/swap_bytes=1048576",
    );
    let refused = c(&r, "reclaim", "memcg/0/swap_events_max");
    assert!(refused > 0);
    assert_eq!(c(&r, "reclaim", "memcg/0/swap_events_fail"), refused);
    assert_eq!(c(&r, "reclaim", "pgactivate"), refused);
    assert!(c(&r, "reclaim", "pgsteal_file") >= 2048 - 256);
    // Reading the memory back: with the cgroup's swap at least half its
    // max (mem_cgroup_swap_full(): 2 · usage >= 256), do_swap_page() frees
    // the slot of each folio it maps; at 127 slots (254 < 256) it stops,
    // and the other 127 slots stay with their swap-cache folios.
    assert_counters(&r, "swapin", "pswpin=256");
    assert_eq!(c(&r, "swapin", "memcg/0/swap_bytes"), 127 * 4096);
}

/// The shipped scenario `scenarios/<rel>` with `sets`, simulated.
fn run_shipped(rel: &str, sets: &[(&str, &str)]) -> foliosim_report::Report {
    let sc = load_scenario(rel, sets);
    foliosim_sim::run(&sc, foliosim_sim::RunOptions::default()).expect("scenario runs")
}

/// A cgroup with `memory.high` and nothing to reclaim: 8 MiB of anonymous
/// memory written without swap into a cgroup whose memory.high is 4 MiB
/// (1,024 pages).
fn high_noswap_scenario() -> String {
    "[system]\nmemory = \"256M\"\ntransparent_hugepage.enabled = \"never\"\n\
     [[step]]\nop = \"memcg\"\nhigh = \"4M\"\n\
     [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"8M\"\n\
     [[step]]\nop = \"phase\"\nname = \"write\"\n\
     [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n"
        .into()
}

/// memory.high over memory reclaim cannot free: every batch above it is
/// reclaimed in vain and then slept off.
#[test]
fn memory_high_throttles_what_reclaim_cannot_free() {
    // try_charge_memcg() takes the counter 64 pages at a time (the per-CPU
    // stock), so the usage after the j-th batch is 64·j. The 2,048 written
    // pages and their few page tables need 33 batches; those from j = 17
    // (64·17 = 1,088 > 1,024) leave the usage above memory.high, each a
    // 64-page debt paid before the next fault (mem_cgroup_handle_over_high()).
    // With no swap and no file pages reclaim frees nothing, so each payment
    // is reclaim_high() once plus MAX_RECLAIM_RETRIES (16) retries, each a
    // `high` event: 17 × 17 = 289.
    let r = run(&high_noswap_scenario());
    assert_eq!(c(&r, "write", "memcg/0/events_high"), 17 * 17);
    assert_eq!(c(&r, "write", "memcg/0/pgsteal"), 0);
    // Then it sleeps calculate_high_delay(): overage = (usage - high) <<
    // 20 / high = 65,536·(j - 16); penalty = overage² · HZ >> 20 >> 14 =
    // 250·(j - 16)² / 4 jiffies, scaled by 64/64 and clamped to 2·HZ:
    // 62, 250, then 500 for j = 19..33 (15 batches). 62 + 250 + 15·500 =
    // 7,812 jiffies of 4 ms.
    assert_eq!(c(&r, "write", "sim/throttled_ns"), 7_812 * 4_000_000);
    // Nothing is refused: the usage ends where the charges put it.
    assert_eq!(c(&r, "write", "memcg/0/usage_bytes"), 33 * 64 * 4096);
}

/// memory.high over anonymous memory that zram can take: each batch above
/// it is reclaimed at the next return to user space, so the usage never
/// passes memory.high by more than the batch, and nothing sleeps.
#[test]
fn memory_high_reclaims_each_batch_above_it() {
    let r = run_shipped("guest/memcg-high-anon-zram.toml", &[]);
    // 8,192 + 64 pages: the batch that crossed memory.high, reclaimed
    // before the next fault.
    assert_eq!(c(&r, "write", "memcg/0/peak_bytes"), (8192 + 64) * 4096);
    // calculate_high_delay() at 64 pages over 8,192: overage = 64 << 20 /
    // 8,192 = 8,192; 8,192² · 250 >> 34 = 0 jiffies, no sleep.
    assert_eq!(c(&r, "write", "sim/throttled_ns"), 0);
    // The `high` events of the 6.18.35 x86_64 and arm64 and 7.1.5 x86_64
    // guests (runs/guest/memcg-high-anon-zram.*.json): 97 and 193.
    assert_eq!(c(&r, "write", "memcg/0/events_high"), 97);
    assert_eq!(c(&r, "read", "memcg/0/events_high"), 193);
    // Limit reclaim never ran: no charge was refused.
    assert_eq!(c(&r, "write", "memcg/0/events_max"), 0);
}

/// A memcg_high step below the usage: the write itself reclaims down to
/// the new memory.high (memory_high_write(): the stock drained, then
/// reclaim of the excess until the usage fits). A `high` event counts
/// only a payment on the way back to user space, so there is none.
#[test]
fn a_memory_high_write_reclaims_down_to_it() {
    let r = run_shipped("guest/memcg-high-write.toml", &[]);
    assert!(c(&r, "lower", "memcg/0/usage_bytes") <= 32 << 20);
    assert_eq!(c(&r, "lower", "memcg/0/events_high"), 0);
    // The guests' count (runs/guest/memcg-high-write.*.json): more than
    // the excess of about 8,200 pages, as reclaim stops between rounds.
    assert_eq!(c(&r, "lower", "pswpout"), 10471);
    // Back at "max", reading the region swaps in what the write swapped
    // out and reclaims nothing.
    assert_eq!(c(&r, "raise", "major-faults"), 10471);
    assert_eq!(c(&r, "raise", "pswpout"), 0);
}

/// memory.min and memory.low under global memory pressure (classic LRU):
/// a cgroup below its protection is passed over while another cgroup has
/// pages to reclaim (shrink_node_memcgs(): mem_cgroup_below_min(),
/// mem_cgroup_below_low()).
#[test]
fn protected_cgroups_are_passed_over_by_global_reclaim() {
    let r = run_shipped("guest/memcg-min-global-reclaim.toml", &[]);
    assert_eq!(c(&r, "pressure", "memcg/0/pgscan"), 0);
    // Every swap-out is the child's.
    let child = c(&r, "pressure", "memcg/1/pgsteal");
    assert!(child > 0);
    assert_eq!(c(&r, "pressure", "pswpout"), child);
    // memory.low protects the same way while the child's pages are there.
    let r = run_shipped(
        "guest/memcg-min-global-reclaim.toml",
        &[("step.1.min", "0"), ("step.1.low", "128M")],
    );
    assert_eq!(c(&r, "pressure", "memcg/0/pgscan"), 0);
    assert_eq!(c(&r, "pressure", "memcg/0/events_low"), 0);
    // The multi-gen LRU passes over it too: shrink_one() sends a cgroup
    // within memory.min to the young generation of the memcg LRU before
    // any scan, and get_nr_to_scan() gives it -1.
    let r = run_shipped(
        "guest/memcg-min-global-reclaim.toml",
        &[("lru_gen.enabled", "1")],
    );
    assert_eq!(c(&r, "pressure", "memcg/0/pgscan"), 0);
    assert_eq!(
        c(&r, "pressure", "pswpout"),
        c(&r, "pressure", "memcg/1/pgsteal")
    );
    // Without protection the parent's pages go too.
    let r = run_shipped(
        "guest/memcg-min-global-reclaim.toml",
        &[("step.1.min", "0")],
    );
    assert!(c(&r, "pressure", "memcg/0/pgsteal") > 0);
}

/// memory.low above everything the only cgroup can use: global reclaim
/// skips it, finds nothing, and the workload's direct reclaim retries
/// below memory.low (memcg_low_reclaim), a `low` event per visit. kswapd
/// has no such retry, so it reclaims nothing.
#[test]
fn reclaim_below_memory_low_only_when_nothing_else_is_left() {
    let r = run_shipped("guest/memcg-low-all-protected.toml", &[]);
    let steal = c(&r, "write", "memcg/0/pgsteal");
    assert!(steal > 0);
    assert_eq!(c(&r, "write", "memcg/0/pgsteal_direct"), steal);
    assert_eq!(c(&r, "write", "pgsteal_kswapd"), 0);
    // Each retry visits the cgroup once per priority it reaches: at least
    // one event per direct reclaim that reclaimed.
    assert!(c(&r, "write", "memcg/0/events_low") >= c(&r, "write", "allocstall_movable"));
}

/// The same cgroup with the multi-gen LRU: shrink_one() sends a cgroup
/// within memory.low to the tail of its memcg LRU generation the first
/// time it comes up, and reclaims it the next time, counting a `low`
/// event, for kswapd and the workload alike (mm/vmscan.c). So kswapd,
/// which never reclaims it with the classic LRU, takes pages from it, and
/// every visit that reclaims counted an event before it: at least one
/// event per reclaiming visit, and at most one per pass of either.
#[test]
fn the_multi_gen_lru_reclaims_below_memory_low_every_other_visit() {
    let r = run_shipped(
        "guest/memcg-low-all-protected.toml",
        &[("lru_gen.enabled", "1")],
    );
    let steal = c(&r, "write", "memcg/0/pgsteal");
    assert_eq!(c(&r, "write", "pgsteal_anon"), steal);
    assert!(c(&r, "write", "memcg/0/pgsteal_kswapd") > 0);
    assert!(c(&r, "write", "memcg/0/pgsteal_direct") > 0);
    let events = c(&r, "write", "memcg/0/events_low");
    assert!(events > 0);
    // At most one event per shrink_many() walk (it meets the cgroup at
    // most twice); a direct reclaim walks once per priority, 13 of them,
    // twice with the retry below memory.low (do_try_to_free_pages()), a
    // kswapd pass once per priority round, 12 of them (balance_pgdat()).
    let direct = c(&r, "write", "allocstall_movable") + c(&r, "write", "allocstall_normal");
    assert!(events <= 26 * direct + 12 * c(&r, "write", "pageoutrun"));
}

/// The order in which MGLRU's global reclaim visits two cgroups comes
/// from the memcg LRU's random bins (`get_random_u32_below()`, drawn
/// from `machine.random_seed`): over a few seeds how much the idle
/// parent loses changes, while one seed always gives the same run. The
/// classic LRU visits the cgroups in hierarchy order
/// (`shrink_node_memcgs()`), so there the seed changes nothing.
#[test]
fn the_memcg_lru_order_follows_the_random_seed() {
    let parent = |lru_gen: &str, seed: &str| {
        let r = run_shipped(
            "guest/memcg-min-global-reclaim.toml",
            &[
                ("step.1.min", "0"),
                ("lru_gen.enabled", lru_gen),
                ("machine.random_seed", seed),
            ],
        );
        c(&r, "pressure", "memcg/0/pgsteal")
    };
    let mglru: Vec<i64> = ["0", "1", "4"].iter().map(|s| parent("1", s)).collect();
    assert!(mglru.iter().all(|&p| p > 0), "{mglru:?}");
    assert!(mglru.iter().any(|&p| p != mglru[0]), "{mglru:?}");
    assert_eq!(parent("1", "4"), mglru[2]);
    assert_eq!(parent("0", "0"), parent("0", "4"));
}

/// A cgroup whose memory.swap.high is `swap_high` pages out 4 MiB of
/// anonymous memory to zram (1,024 slots charged to it), then writes
/// 1 MiB more.
fn swap_high_scenario(swap_high: &str) -> String {
    format!(
        "[system]\nmemory = \"512M\"\ntransparent_hugepage.enabled = \"never\"\n\
         [[system.swap]]\nkind = \"zram\"\nsize = \"64M\"\n\
         [[step]]\nop = \"memcg\"\nswap_high = {swap_high}\n\
         [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"4M\"\n\
         [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n\
         [[step]]\nop = \"phase\"\nname = \"out\"\n\
         [[step]]\nop = \"madvise\"\nregion = \"a\"\nadvice = \"pageout\"\n\
         [[step]]\nop = \"phase\"\nname = \"write\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"b\"\nkind = \"anon\"\nsize = \"1M\"\n\
         [[step]]\nop = \"touch\"\nregion = \"b\"\naccess = \"write\"\n"
    )
}

#[test]
fn memory_swap_high_throttles_the_cgroups_charges() {
    // The write phase charges 256 pages and one PTE table. The first
    // phase charged 1,024 pages and 3 table pages in 17 batches of 64
    // (try_charge_memcg()), leaving 61 in the stock, and the page-out
    // uncharges its folios straight from the counter; so 61 charges come
    // from the stock and the other 196 take 4 batches. Each batch finds
    // the cgroup's 1,024 slots above memory.swap.high and sets
    // memcg_nr_pages_over_high (64), which the return to user space pays
    // (__mem_cgroup_handle_over_high()): 4 times.
    //
    // swap.high 1 MiB (256 slots): the overage (calculate_overage()) is
    // (1,024 - 256) << 20 / 256 = 3 << 20, a penalty of
    // (3 << 20)^2 * HZ >> 20 >> 14 = 576 * HZ jiffies, cut to 2 s
    // (MEMCG_MAX_HIGH_DELAY_JIFFIES). reclaim_high() finds memory below
    // memory.high and reclaims nothing, so the task retries
    // MAX_RECLAIM_RETRIES (16) times, each look counting a `high` event of
    // memory.swap.events (swap_find_max_overage()), then sleeps 2 s.
    let r = run(&swap_high_scenario("\"1M\""));
    assert_eq!(
        c(&r, "out", "memcg/0/swap_events_high"),
        0,
        "no charge while paging out"
    );
    assert_counters(
        &r,
        "write",
        "memcg/0/swap_events_high=68 sim/throttled_ns=8000000000 memcg/0/events_high=0 \
         pgsteal_anon=0",
    );
    // swap.high 1,012 pages: an overage of (12 << 20) / 1,012 = 12,433, a
    // penalty of 12,433^2 * 250 >> 34 = 2 jiffies, not above HZ / 100: one
    // look and no sleep per return.
    let r = run(&swap_high_scenario(&(1012 * 4096).to_string()));
    assert_counters(&r, "write", "memcg/0/swap_events_high=4 sim/throttled_ns=0");
    // At or above the usage nothing is owed.
    let r = run(&swap_high_scenario("\"4M\""));
    assert_counters(&r, "write", "memcg/0/swap_events_high=0 sim/throttled_ns=0");
}

/// A cgroup of 4 MiB (`memsw` adds its memory+swap limit) under
/// vm.swappiness 200, with zram, `anon` of anonymous memory mapped as `a`
/// and a 16 MiB cold file mapped with MADV_RANDOM as `f`; `steps` follow.
fn memsw_scenario(memsw: &str, anon: &str, steps: &str) -> String {
    format!(
        "[system]\nmemory = \"512M\"\ntransparent_hugepage.enabled = \"never\"\n\
         vm.swappiness = 200\n\
         [[system.swap]]\nkind = \"zram\"\nsize = \"64M\"\n\
         [[file]]\nname = \"data\"\nsize = \"16M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"memcg\"\nlimit = \"4M\"\n{memsw}\n\
         [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"{anon}\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"f\"\nkind = \"file\"\nfile = \"data\"\n\
         size = \"16M\"\nprot = \"r\"\nmadvise = [\"random\"]\n{steps}"
    )
}

/// [`memsw_scenario`] writing 2 MiB, paging the first 1 MiB out and
/// reading it back.
fn memsw_swap_scenario(memsw: &str) -> String {
    memsw_scenario(
        memsw,
        "2M",
        "[[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n\
         [[step]]\nop = \"phase\"\nname = \"out\"\n\
         [[step]]\nop = \"madvise\"\nregion = \"a\"\nadvice = \"pageout\"\nlen = \"1M\"\n\
         [[step]]\nop = \"phase\"\nname = \"in\"\n\
         [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"read\"\nlen = \"1M\"\n",
    )
}

#[test]
fn a_memsw_limit_charges_swap_with_memory() {
    let r = run(&memsw_swap_scenario("memsw_limit = \"8M\""));
    let memsw =
        |phase| c(&r, phase, "memcg/0/memsw_usage_bytes") - c(&r, phase, "memcg/0/usage_bytes");
    // memcg1_swapout(): the 256 pages paged out leave memory but keep
    // their memory+swap charge with their slots.
    assert_eq!(c(&r, "out", "pswpout"), 256);
    assert_eq!(memsw("out"), 256 * 4096);
    // memcg1_swapin(): the folios read back take the charge over.
    assert_eq!(c(&r, "in", "pswpin"), 256);
    assert_eq!(memsw("in"), 0);
    // Without the limit the counter is not reported.
    let r = run(&memsw_swap_scenario(""));
    let out = r.phases.iter().find(|p| p.name == "out").unwrap();
    assert!(!out.counters.contains_key("memcg/0/memsw_usage_bytes"));
}

/// [`memsw_scenario`] filling the cgroup with anonymous memory, then
/// reading the file page by page.
fn memsw_full_scenario(memsw: &str) -> String {
    memsw_scenario(
        memsw,
        "4M",
        "[[step]]\nop = \"phase\"\nname = \"run\"\n\
         [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"write\"\n\
         [[step]]\nop = \"touch\"\nregion = \"f\"\naccess = \"read\"\n",
    )
}

#[test]
fn swapping_stops_within_a_batch_of_the_memsw_limit() {
    // vm.swappiness 200 weighs limit reclaim toward anonymous pages
    // (get_scan_count()): without a memory+swap limit the file read keeps
    // pushing the cgroup's anonymous memory out to swap.
    let r = run(&memsw_full_scenario(""));
    let unlimited = c(&r, "run", "pswpout");
    assert!(unlimited > 256, "{unlimited}");
    // memsw_limit 5 MiB (1,280 pages): each swapped page keeps its charge
    // there (memcg1_swapout()), and try_charge_memcg() charges memory+swap
    // first, a batch of 64 at a time; once the batch no longer fits, the
    // reclaim runs without MEMCG_RECLAIM_MAY_SWAP. With memory at its
    // limit (1,024 pages) swapping stops between 1,280 - 64 - 1,024 = 192
    // and 256 pages.
    let r = run(&memsw_full_scenario("memsw_limit = \"5M\""));
    let swapped = c(&r, "run", "pswpout");
    assert!((192..=256).contains(&swapped), "{swapped}");
    assert!(c(&r, "run", "pgsteal_file") > 0);
    // The batch is charged to memory+swap before the memory counter
    // refuses it, and the watermark keeps it; memory+swap moves a page at
    // a time (a charge, a swap-out's transfer, a freed file page), so a
    // batch is tried at 1,216 and the peak reaches the limit.
    assert_eq!(c(&r, "run", "memcg/0/memsw_peak_bytes"), 5 << 20);
}

/// The corpus scenario of limit reclaim reading flushed LRU sizes.
fn flushed_lru_balance() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/corpus/memcg-flushed-lru-balance.toml"
    ))
    .expect("the corpus scenario")
}

/// Reclaim in a cgroup reads the LRU sizes flushed when the engines read
/// memory.stat at the phase boundary (`lruvec_page_state()`), so the
/// file pages the read adds stay invisible to `prepare_scan_control()`
/// and anonymous pages are swapped all through the read. Linux 6.18.44
/// (cgroup v1) swapped 51 in the write in seven runs of seven and 1,419
/// in the read in the five of them where the periodic flush did not run
/// during the read.
#[test]
fn limit_reclaim_reads_the_sizes_flushed_at_the_phase_boundary() {
    let r = run(&flushed_lru_balance());
    assert_eq!(c(&r, "write", "pswpout"), 51);
    assert_eq!(c(&r, "read", "pswpout"), 1419);
}

/// The periodic worker (`flush_memcg_stats_dwork()`) runs every 2 s of
/// modelled time. Priced at 1 ms a major fault, the read (8,192 of them)
/// lasts about 8 s and the worker runs four times in it: after each run
/// reclaim sees the file pages read so far, and once the inactive file
/// list reaches 2^priority `prepare_scan_control()` sets
/// `cache_trim_mode` and reclaim takes file pages only. Fewer anonymous
/// pages are swapped than with the sizes of the phase start, and fewer
/// still at 2 s a fault, where the worker has run before every reclaim.
/// (The host, whose read lasts well under 2 s, swapped 744 and 1,097 in
/// the two runs of seven in which the worker ran during it.)
#[test]
fn the_periodic_flush_lets_limit_reclaim_see_the_file_pages() {
    let stale = c(&run(&flushed_lru_balance()), "read", "pswpout");
    let four = c(
        &run_priced(&flushed_lru_balance(), &[("pgmajfault", 1e6)]),
        "read",
        "pswpout",
    );
    let every = c(
        &run_priced(&flushed_lru_balance(), &[("pgmajfault", 2e9)]),
        "read",
        "pswpout",
    );
    assert!(every < four && four < stale, "{every} < {four} < {stale}");
    assert!(every * 4 < stale, "{every} against {stale}");
}

/// `machine.memcg_flush_ms` places the periodic flush. The read of the
/// flushed-balance scenario runs from about 4 ms to 60 ms of the model's
/// clock: the earlier a flush in it, the sooner reclaim sees the file
/// pages and trims them instead of swapping; a flush after the run's end
/// changes nothing.
#[test]
fn machine_memcg_flush_ms_places_the_periodic_flush() {
    let read = |ms: &str| {
        let r = run_with(&flushed_lru_balance(), &[("machine.memcg_flush_ms", ms)]);
        (c(&r, "write", "pswpout"), c(&r, "read", "pswpout"))
    };
    let none = read("2000");
    assert_eq!(read("1000"), none);
    let (early, late) = (read("10"), read("40"));
    assert_eq!((early.0, late.0), (none.0, none.0), "the write ends first");
    assert!(
        early.1 < late.1 && late.1 < none.1,
        "{early:?} {late:?} {none:?}"
    );
}
