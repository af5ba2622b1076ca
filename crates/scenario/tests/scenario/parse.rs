//! Valid scenarios parse into the expected typed values.

use crate::common;

use common::{mmap_step, parse, BASE};
use foliosim_scenario::*;

/// The protections `prot = "rw"` (what an mmap step without `prot` gets),
/// `"r"` and `"rwx"`.
const RW: Prot = Prot {
    read: true,
    write: true,
    exec: false,
};
const R: Prot = Prot {
    read: true,
    write: false,
    exec: false,
};
const RWX: Prot = Prot {
    read: true,
    write: true,
    exec: true,
};

const FULL: &str = r#"
name = "mthp-anon"
description = "64 KiB mTHP on anonymous memory"
seed = 7

[system]
arch = "arm64"
memory = "1G"
transparent_hugepage.enabled = "always"
transparent_hugepage.use_zero_page = 0
transparent_hugepage.hugepages-64kB.enabled = "always"
fault_around_bytes = "16K"
read_ahead_kb = 256

[[file]]
name = "data"
size = "4M"
fill = "read"
read_size = "1M"

[[file]]
name = "log"
size = 8192
fill = "cold"

[[step]]
op = "mmap"
region = "heap"
kind = "anon"
size = "2M"
prot = "rw"
madvise = ["hugepage", "willneed"]

[[step]]
op = "mmap"
region = "map"
kind = "file"
file = "data"
size = "1M"
offset = "64K"
shared = true
prot = "r"

[[step]]
op = "mmap"
region = "shm"
kind = "shmem"
shared = true
size = "4096<<4"

[[step]]
op = "phase"
name = "fault"

[[step]]
op = "touch"
region = "heap"
access = "write"

[[step]]
op = "touch"
region = "heap"
access = "read"
pattern = "random"
offset = "1M"
len = "64K"

[[step]]
op = "touch"
region = "map"
access = "read"
pattern = "random"
seed = 99

[[step]]
op = "touch"
region = "map"
access = "read"
pattern = "stride"
stride = "64K"

[[step]]
op = "touch"
region = "heap"
access = "write"
pattern = "one-per-pt"

[[step]]
op = "fork"

[[step.child]]
op = "touch"
region = "heap"
access = "write"

[[step.child]]
op = "mmap"
region = "child-buf"
kind = "anon"
size = 4096

[[step.child]]
op = "fork"
child = [{ op = "touch", region = "child-buf", access = "read" }]

[[step]]
op = "phase_end"

[[step]]
op = "madvise"
region = "heap"
advice = "dontneed"
offset = 0
len = "1M"

[[step]]
op = "munmap"
region = "shm"

[[step]]
op = "wait"

[[expect]]
phase = "fault"
counter = "pgfault"
value = 512

[[expect]]
phase = "fault"
counter = "hugepages-64kB/anon_fault_alloc"
value = 32.5
tolerance = "5%"

[[expect]]
phase = "fault"
counter = "sim/set_ptes"
value = 3
tolerance = 2
"#;

fn kinds(steps: &[Step]) -> Vec<&StepKind> {
    steps.iter().map(|s| &s.kind).collect()
}

#[test]
fn full_scenario_top_level_and_system() {
    let s = parse(FULL);
    assert_eq!(s.name, "mthp-anon");
    assert_eq!(s.description, "64 KiB mTHP on anonymous memory");
    assert_eq!(s.seed, 7);
    let sys = &s.system;
    assert_eq!(sys.arch, Arch::Arm64);
    assert_eq!(sys.memory, 1 << 30);
    assert_eq!(sys.thp_enabled, ThpMode::Always);
    assert!(!sys.thp_use_zero_page);
    assert_eq!(sys.mthp_enabled[&65536], MthpMode::Always);
    assert_eq!(sys.mthp_enabled[&(2 << 20)], MthpMode::Inherit);
    assert_eq!(sys.mthp_enabled[&16384], MthpMode::Never);
    assert_eq!(sys.fault_around_bytes, 16384);
    assert_eq!(sys.read_ahead_kb, 256);
    assert_eq!(sys.knobs["arch"], "arm64");
    assert_eq!(sys.knobs["memory"], "1073741824");
    assert_eq!(sys.knobs["transparent_hugepage.enabled"], "always");
    assert_eq!(sys.knobs["transparent_hugepage.use_zero_page"], "0");
    assert_eq!(
        sys.knobs["transparent_hugepage.hugepages-64kB.enabled"],
        "always"
    );
    assert_eq!(sys.knobs["fault_around_bytes"], "16384");
    assert_eq!(sys.knobs["read_ahead_kb"], "256");
}

#[test]
fn full_scenario_files() {
    let s = parse(FULL);
    assert_eq!(s.files.len(), 2);
    assert_eq!(s.files[0].name, "data");
    assert_eq!(s.files[0].size, 4 << 20);
    assert_eq!(s.files[0].fill, CacheFill::Read { read_size: 1 << 20 });
    assert_eq!(s.files[0].loc.to_string(), "t.toml:15:1");
    assert_eq!(s.files[1].size, 8192);
    assert_eq!(s.files[1].fill, CacheFill::Cold);
}

#[test]
fn full_scenario_mmaps() {
    let s = parse(FULL);
    assert_eq!(s.steps.len(), 14);
    let m = mmap_step(&s, 0);
    assert_eq!(m.region, "heap");
    assert!(!m.map, "folio maps are opt-in");
    assert_eq!(m.backing, Backing::Anon);
    assert!(!m.shared);
    assert_eq!(m.size, 2 << 20);
    assert_eq!(m.file_offset, 0);
    assert_eq!(m.prot, RW);
    assert_eq!(m.advise, [Madv::Hugepage, Madv::Willneed]);
    assert_eq!(s.steps[0].loc.line, 26);
    let m = mmap_step(&s, 1);
    assert_eq!(
        m.backing,
        Backing::File {
            file: "data".into()
        }
    );
    assert!(m.shared);
    assert_eq!(m.file_offset, 65536);
    assert_eq!(m.prot, R);
    let m = mmap_step(&s, 2);
    assert_eq!(m.backing, Backing::Shmem);
    assert_eq!(m.size, 65536);
}

#[test]
fn full_scenario_touches() {
    let s = parse(FULL);
    let steps = kinds(&s.steps);
    assert!(matches!(steps[3], StepKind::Phase { name } if name == "fault"));
    let touch = |i: usize| match steps[i] {
        StepKind::Touch {
            region,
            access,
            pattern,
            range,
            ..
        } => (region.as_str(), *access, pattern.clone(), *range),
        other => panic!("not a touch: {other:?}"),
    };
    let whole = Range {
        offset: 0,
        len: None,
    };
    assert_eq!(
        touch(4),
        ("heap", Access::Write, Pattern::Sequential, whole)
    );
    let part = Range {
        offset: 1 << 20,
        len: Some(65536),
    };
    // The default seed of a random touch is the scenario's seed.
    assert_eq!(
        touch(5),
        ("heap", Access::Read, Pattern::Random { seed: 7 }, part)
    );
    assert_eq!(touch(6).2, Pattern::Random { seed: 99 });
    assert_eq!(touch(7).2, Pattern::Stride { stride: 65536 });
    assert_eq!(touch(8).2, Pattern::OnePerPageTable);
}

#[test]
fn full_scenario_fork_and_the_rest() {
    let s = parse(FULL);
    let steps = kinds(&s.steps);
    let StepKind::Fork { child } = steps[9] else {
        panic!("not a fork");
    };
    assert_eq!(child.len(), 3);
    assert!(matches!(&child[0].kind, StepKind::Touch { region, .. } if region == "heap"));
    assert_eq!(child[0].loc.line, 91);
    let StepKind::Fork { child: grandchild } = &child[2].kind else {
        panic!("not a nested fork");
    };
    assert!(matches!(&grandchild[0].kind, StepKind::Touch { region, .. } if region == "child-buf"));
    assert!(matches!(steps[10], StepKind::PhaseEnd));
    let dontneed = StepKind::Madvise {
        region: "heap".into(),
        advice: Madv::Dontneed,
        range: Range {
            offset: 0,
            len: Some(1 << 20),
        },
        per_call: None,
        errno: None,
    };
    assert_eq!(format!("{:?}", steps[11]), format!("{dontneed:?}"));
    assert!(
        matches!(steps[12], StepKind::Munmap { region, range } if region == "shm" && range.len.is_none())
    );
    assert!(matches!(steps[13], StepKind::Wait));
}

#[test]
fn full_scenario_expects() {
    let s = parse(FULL);
    assert_eq!(s.expects.len(), 3);
    assert_eq!(s.expects[0].phase, "fault");
    assert_eq!(s.expects[0].counter, "pgfault");
    assert_eq!(s.expects[0].value, 512.0);
    assert_eq!(s.expects[0].tolerance, Tolerance::Abs(0.0));
    assert_eq!(s.expects[1].value, 32.5);
    assert_eq!(s.expects[1].tolerance, Tolerance::Rel(5.0));
    assert_eq!(s.expects[2].tolerance, Tolerance::Abs(2.0));
}

#[test]
fn empty_scenario_has_every_default() {
    let s = parse_str("dir/my-test.toml", "", &[]).expect("empty scenario parses");
    assert_eq!(s.name, "my-test");
    assert_eq!(s.description, "");
    assert_eq!(s.seed, 1);
    assert!(s.files.is_empty() && s.steps.is_empty() && s.expects.is_empty());
    let sys = &s.system;
    assert_eq!(sys.arch, Arch::X86_64);
    assert_eq!(sys.memory, 24 << 30);
    assert_eq!(sys.thp_enabled, ThpMode::Madvise);
    assert!(sys.thp_use_zero_page);
    assert_eq!(sys.fault_around_bytes, 65536);
    assert_eq!(sys.read_ahead_kb, 128);
    assert_eq!(sys.page_cluster, 3);
    assert!(sys.vma_ra_enabled);
    let sizes: Vec<u64> = sys.mthp_enabled.keys().copied().collect();
    assert_eq!(
        sizes,
        [16, 32, 64, 128, 256, 512, 1024, 2048].map(|kb| kb * 1024)
    );
    assert!(sys.mthp_enabled.iter().all(|(&size, &mode)| mode
        == if size == 2 << 20 {
            MthpMode::Inherit
        } else {
            MthpMode::Never
        }));
}

#[test]
fn default_knobs_are_complete_and_in_kernel_spelling() {
    let s = parse("");
    let knobs: Vec<(&str, &str)> = s
        .system
        .knobs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let want = [
        ("arch", "x86_64"),
        ("cpus", "2"),
        ("fault_around_bytes", "65536"),
        // /sys/kernel/mm/lru_gen/enabled: CONFIG_LRU_GEN_ENABLED is off
        // in distribution and reference configs alike.
        ("lru_gen.enabled", "0"),
        // mm/vmscan.c: lru_gen_min_ttl starts at 0 (no thrashing
        // prevention).
        ("lru_gen.min_ttl_ms", "0"),
        // block/blk-settings.c: blk_validate_limits() caps max_sectors at
        // BLK_DEF_MAX_SECTORS_CAP, 4 MiB, unless the driver sets less.
        ("max_sectors_kb", "4096"),
        ("memory", "25769803776"),
        ("read_ahead_kb", "128"),
        ("series.batch_anon_unmap", "0"),
        ("series.batch_file_unmap", "0"),
        ("series.batch_folio_referenced", "0"),
        ("series.mglru_memcg_abort", "0"),
        ("series.pagemap_shmem_swap", "0"),
        ("series.pagemap_walk_to_pmd_end", "0"),
        ("series.reclaim_stats_per_lruvec", "0"),
        ("swap", "0"),
        ("transparent_hugepage.enabled", "madvise"),
        ("transparent_hugepage.hugepages-1024kB.enabled", "never"),
        ("transparent_hugepage.hugepages-128kB.enabled", "never"),
        ("transparent_hugepage.hugepages-16kB.enabled", "never"),
        ("transparent_hugepage.hugepages-2048kB.enabled", "inherit"),
        ("transparent_hugepage.hugepages-256kB.enabled", "never"),
        ("transparent_hugepage.hugepages-32kB.enabled", "never"),
        ("transparent_hugepage.hugepages-512kB.enabled", "never"),
        ("transparent_hugepage.hugepages-64kB.enabled", "never"),
        ("transparent_hugepage.khugepaged.max_ptes_none", "511"),
        // mm/khugepaged.c: khugepaged_init() and the scan sleep's default.
        ("transparent_hugepage.khugepaged.max_ptes_shared", "256"),
        ("transparent_hugepage.khugepaged.max_ptes_swap", "64"),
        ("transparent_hugepage.khugepaged.pages_to_scan", "4096"),
        (
            "transparent_hugepage.khugepaged.scan_sleep_millisecs",
            "10000",
        ),
        ("transparent_hugepage.shrink_underused", "1"),
        ("transparent_hugepage.use_zero_page", "1"),
        ("vm.page_cluster", "3"),
        // mm/vmscan.c: vm_swappiness = 60.
        ("vm.swappiness", "60"),
        // mm/page_alloc.c: watermark_boost_factor = 15000.
        ("vm.watermark_boost_factor", "15000"),
        ("vma_ra_enabled", "1"),
        // mm/zswap.c: zswap_accept_thr_percent, CONFIG_ZSWAP_DEFAULT_ON
        // off, zswap_max_pool_percent, CONFIG_ZSWAP_SHRINKER_DEFAULT_ON
        // off.
        ("zswap.accept_threshold_percent", "90"),
        ("zswap.enabled", "0"),
        ("zswap.max_pool_percent", "20"),
        ("zswap.shrinker_enabled", "0"),
    ];
    assert_eq!(knobs, want);
    assert_eq!(System::default().knobs, s.system.knobs);
    assert!(s.system.explicit.is_empty());
    assert!(s.system.swap.is_empty());
    assert_eq!(s.system.series, Series::default());
}

#[test]
fn step_and_file_defaults() {
    let text = format!("{BASE}\n[[step]]\nop = \"touch\"\nregion = \"buf\"\naccess = \"read\"\n");
    let s = parse(&text);
    assert_eq!(s.files[0].fill, CacheFill::Write { write_size: 4096 });
    let m = mmap_step(&s, 0);
    assert!(!m.shared && m.advise.is_empty() && m.file_offset == 0);
    assert_eq!(m.prot, RW);
    let StepKind::Touch { pattern, range, .. } = &s.steps[1].kind else {
        panic!("not a touch");
    };
    assert_eq!(*pattern, Pattern::Sequential);
    assert_eq!(
        *range,
        Range {
            offset: 0,
            len: None
        }
    );
    let read = parse("[[file]]\nname = \"f\"\nsize = 1\nfill = \"read\"\n");
    assert_eq!(read.files[0].fill, CacheFill::Read { read_size: 131072 });
}

#[test]
fn dotted_and_nested_system_keys_are_equivalent() {
    let dotted = r#"
[system]
transparent_hugepage.enabled = "never"
"transparent_hugepage".hugepages-64kB.enabled = "always"
transparent_hugepage.use_zero_page = false
"#;
    let nested = r#"
[system.transparent_hugepage]
enabled = "never"
use_zero_page = false

[system.transparent_hugepage.hugepages-64kB]
enabled = "always"
"#;
    let inline = r#"
system = { transparent_hugepage = { enabled = "never", use_zero_page = false, hugepages-64kB = { enabled = "always" } } }
"#;
    let a = parse(dotted).system;
    for other in [nested, inline] {
        let b = parse(other).system;
        assert_eq!(a.knobs, b.knobs);
        assert_eq!(a.mthp_enabled, b.mthp_enabled);
    }
    assert_eq!(a.thp_enabled, ThpMode::Never);
    assert!(!a.thp_use_zero_page);
    assert_eq!(a.mthp_enabled[&65536], MthpMode::Always);
}

#[test]
fn use_zero_page_spellings() {
    for (value, want) in [
        ("0", false),
        ("1", true),
        ("true", true),
        ("false", false),
        ("\"0\"", false),
    ] {
        let s = parse(&format!(
            "[system]\ntransparent_hugepage.use_zero_page = {value}\n"
        ));
        assert_eq!(s.system.thp_use_zero_page, want, "{value}");
    }
}

#[test]
fn inline_steps_and_prot_spellings() {
    let text = r#"
step = [
  { op = "mmap", region = "a", kind = "anon", size = 4096, prot = "none" },
  { op = "mmap", region = "b", kind = "anon", size = 4096, prot = "xwr" },
  { op = "mmap", region = "c", kind = "shmem", shared = true, size = 4096, prot = "r" },
]
"#;
    let s = parse(text);
    let prots: Vec<Prot> = (0..s.steps.len()).map(|i| mmap_step(&s, i).prot).collect();
    assert_eq!(prots[0], Prot::default());
    assert_eq!(prots[1], RWX);
    assert_eq!(prots[2], R);
}

#[test]
fn child_sees_parent_regions_mapped_before_the_fork() {
    let text = format!(
        "{BASE}\n[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"munmap\"\nregion = \"buf\"\n\
         [[step.child]]\nop = \"wait\"\n"
    );
    let s = parse(&text);
    let StepKind::Fork { child } = &s.steps[1].kind else {
        panic!("not a fork");
    };
    assert_eq!(child.len(), 2);
}

#[test]
fn big_seed_as_a_string() {
    let s = parse("seed = \"18446744073709551615\"\n");
    assert_eq!(s.seed, u64::MAX);
}

#[test]
fn load_reads_a_file_and_reports_io_errors() {
    let dir = std::env::temp_dir().join(format!("foliosim-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("from-disk.toml");
    std::fs::write(&path, "seed = 3\n").expect("write");
    let s = load(&path, &[]).expect("loads");
    assert_eq!((s.name.as_str(), s.seed), ("from-disk", 3));
    let missing = load(&dir.join("missing.toml"), &[]).unwrap_err();
    assert_eq!(missing.line, 0);
    assert!(
        missing.to_string().contains("missing.toml: cannot read"),
        "{missing}"
    );
    // Invalid UTF-8 is located: line 2, column 7 (after `seed =`).
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        b"seed = 3
name =\xff\n",
    )
    .expect("write");
    let e = load(&bad, &[]).unwrap_err();
    assert_eq!((e.line, e.col), (2, 7), "{e}");
    assert!(
        e.to_string()
            .contains("bad.toml:2:7: the scenario is not UTF-8"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The TOML code blocks of docs/scenarios.md are valid scenarios (but the
/// sweep files the same page documents, which start with `scenarios = `;
/// crates/explore's tests parse those).
#[test]
fn examples_in_the_language_reference_parse() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md");
    let doc = std::fs::read_to_string(path).expect("docs/scenarios.md exists");
    let is_sweep_file = |block: &str| {
        block
            .lines()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .is_some_and(|l| l.starts_with("scenarios ="))
    };
    let blocks: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .filter(|b| !is_sweep_file(b))
        .collect();
    assert!(!blocks.is_empty());
    for block in &blocks {
        let s = parse(block);
        assert!(!s.steps.is_empty(), "{block}");
    }
    let first = parse(blocks[0]);
    assert_eq!(first.name, "mthp-64k-anon");
    assert_eq!(first.system.mthp_enabled[&65536], MthpMode::Always);
    assert!(matches!(
        first.steps[4].kind,
        StepKind::Touch {
            pattern: Pattern::Random { seed: 7 },
            ..
        }
    ));
}

#[test]
fn touch_unit_defaults_to_page_and_word_parses() {
    let text = "name = \"w\"\n[system]\nmemory = \"64M\"\n\
        [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"1M\"\n\
        [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"read\"\n\
        [[step]]\nop = \"touch\"\nregion = \"a\"\naccess = \"read\"\npattern = \"random\"\nunit = \"word\"\n";
    let s = parse(text);
    let units: Vec<TouchUnit> = s
        .steps
        .iter()
        .filter_map(|st| match &st.kind {
            StepKind::Touch { unit, .. } => Some(*unit),
            _ => None,
        })
        .collect();
    assert_eq!(units, vec![TouchUnit::Page, TouchUnit::Word]);
}
