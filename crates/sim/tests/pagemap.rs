//! pagemap emulation (issue 6): the seed-004 switch and its cost shape,
//! pagemap_read() mechanics, shmem swap-out and swap-in, the step's checks.
//!
//! Expected values are derived from the kernel's rules in each test
//! (fs/proc/task_mmu.c, mm/shmem.c, mm/swapfile.c); the seed-004 times come
//! from native runs on this host (see the test's comment).

mod common;

use common::{madvise, phase, swap, system_mem, touch};
use foliosim_kernel::fs::proc::task_mmu::{
    MAX_SWAPFILES_SHIFT, PM_FILE, PM_MMAP_EXCLUSIVE, PM_PFRAME_MASK, PM_PRESENT, PM_SWAP,
};
use foliosim_report::Report;
use foliosim_sim::{run, RunOptions};

fn path(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel)
}

fn run_file(rel: &str, sets: &[(&str, &str)]) -> Report {
    let ov: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let sc = foliosim_scenario::load(&path(rel), &ov).expect("scenario parses");
    run(&sc, RunOptions { check: true }).expect("scenario runs")
}

fn run_str(text: &str) -> Result<Report, String> {
    let sc = foliosim_scenario::parse_str("t.toml", text, &[]).map_err(|e| e.to_string())?;
    run(&sc, RunOptions { check: true }).map_err(|e| e.to_string())
}

fn get(r: &Report, phase: &str, counter: &str) -> i64 {
    r.value(phase, counter)
        .unwrap_or_else(|| panic!("no {counter} in phase {phase}")) as i64
}

const SEED: &str = "seed004/pagemap-shmem.toml";
/// A 4 MiB run of the seed-004 scenario (1024 pages), 100% dirty, the first
/// 3/4 paged out.
const SMALL: [(&str, &str); 3] = [
    ("step.1.size", "4M"),
    ("step.4.len", "3M"),
    ("step.6.raw", "true"),
];

/// Vanilla 6.18: a swapped-out shmem page's PTE is none and its swap entry
/// lives only in the page cache, so pagemap reports 0 for it; the option
/// reports PM_SWAP with type 0 and the slot's offset. MADV_PAGEOUT reclaims
/// the 768 pages in address order and a swap file gives order-0 slots
/// sequentially from 1 (slot 0 is the header), so page i has offset i + 1.
#[test]
fn seed004_vanilla_absent_option_swapped_with_offsets() {
    let vanilla = run_file(SEED, &SMALL);
    let mut sets = SMALL.to_vec();
    sets.push(("system.series.pagemap_shmem_swap", "1"));
    let option = run_file(SEED, &sets);
    for r in [&vanilla, &option] {
        assert_eq!(get(r, "pagemap", "pagemap/shm/entries"), 1024);
        assert_eq!(get(r, "pagemap", "pagemap/shm/pages_present"), 256);
    }
    assert_eq!(get(&vanilla, "pagemap", "pagemap/shm/pages_swapped"), 0);
    assert_eq!(get(&option, "pagemap", "pagemap/shm/pages_swapped"), 768);
    let v = &vanilla.phases[0].pagemap["shm"];
    let o = &option.phases[0].pagemap["shm"];
    for i in 0..768 {
        assert_eq!(v[i], 0, "vanilla entry {i}");
        assert_eq!(
            o[i],
            PM_SWAP | ((i as u64 + 1) << MAX_SWAPFILES_SHIFT),
            "entry {i}"
        );
    }
    for i in 768..1024 {
        assert_eq!(v[i], o[i]);
        assert_eq!(
            v[i] & !PM_PFRAME_MASK,
            PM_PRESENT | PM_FILE | PM_MMAP_EXCLUSIVE
        );
    }
    // One lookup per none PTE (768), in as many walks at 8-byte reads.
    assert_eq!(get(&vanilla, "pagemap", "sim/pagemap_pagecache_lookups"), 0);
    assert_eq!(
        get(&option, "pagemap", "sim/pagemap_pagecache_lookups"),
        768
    );
    assert_eq!(get(&option, "pagemap", "sim/pagemap_pagecache_walks"), 768);
    assert_eq!(get(&option, "pagemap", "pswpout"), 0);
}

fn modelled_ns(rel: &str, sets: &[(&str, &str)]) -> f64 {
    let mut r = run_file(rel, sets);
    let profile = foliosim_cost::Profile::resolve("x86_64-kvm-host").expect("profile");
    foliosim_cost::annotate(&mut r, &profile).expect("priced");
    r.phases[0].time.as_ref().expect("time").modelled_ns as f64
}

/// Seed 004 with costs measured on this host, not fitted to the seed: the
/// vanilla pagemap costs are fitted to native reads of
/// scenarios/calibrate/pagemap-*.toml, the option's page-cache lookup is
/// priced from mincore(2) over shmem (a native proxy; the host lacks the
/// patch). See docs/benchmarks.md, "Seed 004".
///
/// Run at 4 MiB (1024 pages; the default is 64 MiB), 100% dirty (the first
/// 3/4 paged out) and 50% (stride 8K, the first half paged out): either way
/// 3/4 of the PTEs are none and the option makes one lookup for each at
/// every read size. What is predicted and checked:
/// * vanilla read time within 25% of `foliosim native` on this host (the
///   engine thread's CPU time over the read loop, median of 5 runs,
///   2026-11-21: 14.76 ms at 8-byte reads, 2.12 ms at 64, 0.435 ms at 512);
/// * the option's extra time is the same at every read size (it is one
///   xarray descent per none PTE, nothing per call or per walk);
/// * so its ratio to vanilla grows with the read size as the per-call cost
///   amortises, and at 8-byte reads stays far below the seed's 3.78
///   (38.59 s / 10.20 s on a Xeon E5-2620, kernel 5.14): a ~0.9 us read
///   call plus 3/4 of a ~52 ns lookup, where the seed paid ~9 us more per
///   looking-up call. That gap is reported, not fitted away;
/// * the batch table's shape: time halving per doubling of the read size
///   while the per-call cost dominates, flat from 512 entries per call.
#[test]
fn seed004_measured_costs_ratio_and_batch_shape() {
    for (stride, len) in [("4K", "3M"), ("8K", "2M")] {
        let run_time = |rs: &str, opt: &str| {
            let s = [
                ("step.1.size", "4M"),
                ("step.2.stride", stride),
                ("step.4.len", len),
                ("step.6.read_size", rs),
                ("system.series.pagemap_shmem_swap", opt),
            ];
            modelled_ns(SEED, &s)
        };
        let mut times = std::collections::BTreeMap::new();
        for rs in ["8", "16", "64", "512", "4096", "8192"] {
            for opt in ["0", "1"] {
                times.insert((rs, opt), run_time(rs, opt));
            }
        }
        let t = |rs: &'static str, opt: &'static str| times[&(rs, opt)];
        if stride == "4K" {
            for (rs, native_ms) in [("8", 14.76), ("64", 2.12), ("512", 0.435)] {
                // 4 MiB: every count is 1/16 of the 64 MiB run's.
                let ms = 16.0 * t(rs, "0") / 1e6;
                assert!(
                    (ms / native_ms - 1.0).abs() < 0.25,
                    "read_size {rs}: modelled {ms:.3} ms, native {native_ms} ms"
                );
            }
        }
        let extra = |rs: &'static str| t(rs, "1") - t(rs, "0");
        let (e8, e4096) = (extra("8"), extra("4096"));
        assert!((e8 / e4096 - 1.0).abs() < 1e-9, "extra {e8} vs {e4096}");
        let ratio = |rs: &'static str| t(rs, "1") / t(rs, "0");
        let (r8, r64, r4096) = (ratio("8"), ratio("64"), ratio("4096"));
        assert!(r8 < r64 && r64 < r4096, "ratios {r8} {r64} {r4096}");
        assert!(r8 < 0.75 * (38.59 / 10.20), "ratio {r8} at 8-byte reads");
        for opt in ["0", "1"] {
            let t1 = t("8", opt);
            let t2 = t("16", opt);
            let t512 = t("4096", opt);
            let t1024 = t("8192", opt);
            assert!((t1 / t2 - 2.0).abs() < 0.5, "halving: {t1} vs {t2}");
            assert!((t512 / t1024 - 1.0).abs() < 0.15, "flat: {t512} vs {t1024}");
        }
    }
}

/// pagemap_read() mechanics (§6.5): one walk per PAGEMAP_WALK_SIZE chunk
/// touched; a 4 KiB read at a 2 MiB boundary is one walk, a 4 KiB read
/// straddling it two (an unaligned start), and the walk counts only.
#[test]
fn read_size_mechanics() {
    let text = |offset: &str, rs: u64| {
        format!(
            r#"
[system]
memory = "256M"
[[step]]
op = "mmap"
region = "a"
kind = "anon"
size = "8M"
[[step]]
op = "phase"
name = "p"
[[step]]
op = "pagemap"
region = "a"
offset = "{offset}"
len = "4M"
read_size = {rs}
"#
        )
    };
    // Aligned: 1024 entries, 2 chunks; 8 reads of 128 entries stay inside
    // one chunk each.
    // 1024 entries in reads of 128: 8 read(2) calls. The region is 2 MiB
    // aligned (a multiple of 2 MiB, top-down placement), so each read stays
    // inside one chunk: 8 walks.
    let r = run_str(&text("0", 1024)).unwrap();
    assert_eq!(get(&r, "p", "sim/pagemap_read_calls"), 8);
    assert_eq!(get(&r, "p", "sim/pagemap_walks"), 8);
    // From offset 4 KiB the range is [A + 4K, A + 4M + 4K): the fourth read
    // [A + 1.5M + 4K, A + 2M + 4K) and the eighth [A + 3.5M + 4K,
    // A + 4M + 4K) each straddle a 2 MiB boundary: 8 + 2 = 10 walks.
    let r = run_str(&text("4K", 1024)).unwrap();
    assert_eq!(get(&r, "p", "sim/pagemap_walks"), 10);
    assert_eq!(get(&r, "p", "sim/pagemap_entries"), 1024);
    assert_eq!(get(&r, "p", "pagemap/a/entries"), 1024);
    // Nothing mapped: every entry is 0.
    assert_eq!(get(&r, "p", "pagemap/a/pages_present"), 0);
}

/// Bad input: read_size must be a multiple of 8; kpageflags needs PFNs;
/// pagemap steps are top-level and their names unique.
#[test]
fn step_errors() {
    let base = "[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"4M\"\n";
    let bad = [
        ("[[step]]\nop = \"pagemap\"\nregion = \"a\"\nread_size = 12\n", "multiple of 8"),
        (
            "[[step]]\nop = \"pagemap\"\nregion = \"a\"\nprivileged = false\nkpageflags = true\n",
            "privileged = false",
        ),
        (
            "[[step]]\nop = \"pagemap\"\nregion = \"a\"\n[[step]]\nop = \"pagemap\"\nregion = \"a\"\n",
            "duplicate pagemap step name",
        ),
        (
            "[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"pagemap\"\nregion = \"a\"\n",
            "only allowed in top-level steps",
        ),
    ];
    for (step, want) in bad {
        let text = format!("{base}{step}");
        let e = foliosim_scenario::parse_str("t.toml", &text, &[]).unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
    }
}

/// shmem swap-out and swap-in (mm/shmem.c): 64 written shmem pages paged
/// out to zram are written (pswpout 64) and unmapped (rss drops); touching
/// them again faults each back from the device (64 major faults, pswpin
/// 64), dirty in the page cache, the slots freed (the invariant checker
/// runs after every step and counts the page cache's swap references).
#[test]
fn shmem_swap_out_and_in() {
    let text = [
        system_mem("256M", ""),
        swap("zram", "16M"),
        r#"[[step]]
op = "mmap"
region = "s"
kind = "shmem"
shared = true
size = "256K"
"#
        .to_string(),
        touch("s", "write", ""),
        phase("out"),
        madvise("s", "pageout", ""),
        phase("in"),
        touch("s", "read", ""),
        "[[step]]\nop = \"pagemap\"\nregion = \"s\"\n".to_string(),
    ]
    .concat();
    let r = run_str(&text).unwrap();
    assert_eq!(get(&r, "out", "pswpout"), 64);
    assert_eq!(get(&r, "in", "pswpin"), 64);
    assert_eq!(get(&r, "in", "pgmajfault"), 64);
    assert_eq!(get(&r, "in", "major-faults"), 64);
    assert_eq!(get(&r, "in", "pagemap/s/pages_present"), 64);
    assert_eq!(get(&r, "in", "pagemap/s/pages_file"), 64);
}
