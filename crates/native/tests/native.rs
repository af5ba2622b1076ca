//! Native runs of small scenarios on the host kernel (root only; each test
//! skips with a message when it cannot run), and refusals (anywhere).

mod common;

use common::*;
use foliosim_native::{NativeError, NativeOptions};
use foliosim_testkit as tk;

/// 256 MiB of anonymous memory written with 64 KiB mTHP: 4096 faults.
fn anon_64k() -> String {
    [
        tk::name("anon-64k"),
        format!("[system]\n{}", tk::mthp(64, "always")),
        tk::mmap_anon("heap", "256M"),
        tk::phase("measured"),
        tk::touch("heap", "write", ""),
        "[[expect]]\nphase = \"measured\"\ncounter = \"minor-faults\"\nvalue = 4096\n".into(),
    ]
    .concat()
}

#[test]
fn anon_64k_mthp_faults_once_per_folio() {
    let _s = serial();
    if skip_unless_root("anon_64k_mthp_faults_once_per_folio") {
        return;
    }
    defragment_host();
    let before = quiet(thp_knobs);
    let dir = TempDir::new("anon");
    let opts = NativeOptions {
        workdir: dir.0.clone(),
        ..NativeOptions::default()
    };
    let r = run(&scenario(&anon_64k()), &opts).expect("native run");
    assert_eq!(r.engine, "native");
    assert_eq!(r.arch, "x86_64");
    assert_eq!(
        r.system["transparent_hugepage.hugepages-64kB.enabled"],
        "always"
    );
    assert_eq!(r.phases.len(), 1);
    let p = &r.phases[0];
    assert_eq!(p.name, "measured");
    assert_eq!(p.counters["minor-faults"], 4096, "{:?}", p.counters);
    assert_eq!(p.counters["major-faults"], 0);
    // System-wide: everyone else's 64 KiB folios count too.
    assert!(p.counters["hugepages-64kB/anon_fault_alloc"] >= 4096);
    if let Some(&pfu) = p.counters.get("exceptions:page_fault_user") {
        assert_eq!(pfu, 4096);
    }
    assert_eq!(p.folios["heap"].get("64kB"), Some(&4096), "{:?}", p.folios);
    let buckets = p.folios["heap"]
        .keys()
        .filter(|k| !k.starts_with("pages_"))
        .count();
    assert_eq!(buckets, 1, "{:?}", p.folios);
    // Fresh anon mTHP: every page present and mapped exclusively.
    assert_eq!(p.folios["heap"].get("pages_present"), Some(&65536));
    assert_eq!(p.folios["heap"].get("pages_exclusive"), Some(&65536));
    assert!(p.counters["native/wall_ns"] > 0);
    assert!(r.expectations_ok(), "{:?}", r.expectations);
    // Host settings restored, nothing left behind.
    assert_eq!(quiet(thp_knobs), before);
    assert!(dir.is_empty());
}

#[test]
fn untraced_run_counts_no_tracepoints_but_the_same_faults() {
    // A timing run (NativeOptions::trace off, as `foliosim calibrate` and
    // `native --no-trace` make) opens no perf counter: the tracepoint
    // counters are absent (never zero), the fault counts and times remain.
    let _s = serial();
    if skip_unless_root("untraced_run_counts_no_tracepoints_but_the_same_faults") {
        return;
    }
    defragment_host();
    let dir = TempDir::new("untraced");
    let opts = NativeOptions {
        workdir: dir.0.clone(),
        trace: false,
        ..NativeOptions::default()
    };
    let r = run(&scenario(&anon_64k()), &opts).expect("native run");
    let p = &r.phases[0];
    // 256 MiB of 64 KiB mTHP: one fault per folio, 256M / 64K = 4096.
    assert_eq!(p.counters["minor-faults"], 4096, "{:?}", p.counters);
    let traced: Vec<&String> = p.counters.keys().filter(|k| k.contains(':')).collect();
    assert!(
        traced.is_empty(),
        "tracepoint counters in an untraced run: {traced:?}"
    );
    assert!(p.counters["native/thread_cpu_ns"] > 0);
    assert!(p.counters["native/missing_counters"] > 0);
    assert!(dir.is_empty());
}

#[test]
fn warm_file_faults_once_per_fault_around_window() {
    let _s = serial();
    if skip_unless_root("warm_file_faults_once_per_fault_around_window") {
        return;
    }
    let dir = TempDir::new("warm");
    let Some(ra) = read_ahead_kb(&dir.0) else {
        eprintln!("SKIPPED warm_file: read_ahead_kb of the device of /var/tmp is unknown");
        return;
    };
    let text = [
        tk::name("warm-file"),
        format!("[system]\nread_ahead_kb = {ra}\n"),
        tk::file("data", "16M", "fill = \"write\"\nwrite_size = \"4K\""),
        tk::mmap_file("map", "data", "16M", "prot = \"r\""),
        tk::phase("measured"),
        tk::touch("map", "read", ""),
    ]
    .concat();
    let before = quiet(thp_knobs);
    let opts = NativeOptions {
        workdir: dir.0.clone(),
        ..NativeOptions::default()
    };
    let r = run(&scenario(&text), &opts).expect("native run");
    let p = &r.phases[0];
    // 16 MiB / 64 KiB fault-around windows.
    assert_eq!(p.counters["minor-faults"], 256, "{:?}", p.counters);
    assert_eq!(p.counters["major-faults"], 0);
    if let Some(&n) = p.counters.get("filemap:mm_filemap_map_pages") {
        assert_eq!(n, 256);
    }
    assert!(p.counters.contains_key("native/repopulated"));
    // Buffered 4 KiB writes leave order-0 folios in the page cache.
    assert_eq!(p.folios["map"].get("4kB"), Some(&4096), "{:?}", p.folios);
    assert_eq!(quiet(thp_knobs), before);
    assert!(dir.is_empty());
}

#[test]
fn fork_child_faults_are_counted_without_overhead() {
    let _s = serial();
    if skip_unless_root("fork_child_faults_are_counted_without_overhead") {
        return;
    }
    // The child copies-on-write 1 MiB (256 faults, 4 KiB folios: the
    // mTHP sizes are never), the parent 2 MiB after the fork (512).
    let text = [
        "[system]\ntransparent_hugepage.enabled = \"never\"\n".into(),
        tk::anon_written("heap", "4M"),
        tk::phase("fork"),
        tk::step("fork"),
        tk::child(&tk::touch("heap", "write", "len = \"1M\"")),
        tk::touch("heap", "write", "len = \"2M\""),
        tk::phase("wait"),
        tk::step("wait"),
    ]
    .concat();
    let dir = TempDir::new("fork");
    let opts = NativeOptions {
        workdir: dir.0.clone(),
        ..NativeOptions::default()
    };
    let r = run(&scenario(&text), &opts).expect("native run");
    let fork = &r.phases[0];
    assert_eq!(fork.counters["minor-faults"], 768, "{:?}", fork.counters);
    assert!(fork.counters["native/overhead_faults"] > 0);
    assert_eq!(fork.folios["heap"]["4kB"], 1024);
    assert_eq!(r.phases[1].counters["minor-faults"], 0);
    assert!(dir.is_empty());
}

#[test]
fn a_bad_access_is_an_error_at_its_step() {
    let _s = serial();
    if skip_unless_root("a_bad_access_is_an_error_at_its_step") {
        return;
    }
    let text = [
        tk::mmap("ro", "anon", "64K", "prot = \"r\""),
        tk::touch("ro", "write", ""),
    ]
    .concat();
    // The error names the touch step: the line of the second [[step]].
    let touch_line = 1 + text
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == "[[step]]")
        .nth(1)
        .expect("two steps")
        .0;
    let before = quiet(thp_knobs);
    let e = run(&scenario(&text), &NativeOptions::default()).unwrap_err();
    // The kernel ended the workload: killed, not an error of the engine.
    match e {
        NativeError::Killed { at, what } => {
            assert!(at.starts_with(&format!("test.toml:{touch_line}:")), "{at}");
            assert!(what.contains("SIGSEGV"), "{what}");
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(quiet(thp_knobs), before);
}

#[test]
fn knobs_the_host_cannot_set_are_refused() {
    let sc = foliosim_scenario::parse_str(
        "test.toml",
        &anon_64k(),
        &[("fault_around_bytes".into(), "4096".into())],
    )
    .unwrap();
    match run(&sc, &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => {
            assert!(why.contains("fault_around_bytes = 4096"), "{why}");
            assert!(why.contains("65536"), "{why}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let sc =
        foliosim_scenario::parse_str("test.toml", &anon_64k(), &[("arch".into(), "arm64".into())])
            .unwrap();
    match run(&sc, &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => assert!(why.contains("arm64"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Every series switch describes a kernel the host (vanilla 6.18) is not.
    for switch in [
        "series.batch_anon_unmap",
        "series.batch_folio_referenced",
        "series.batch_file_unmap",
        "series.pagemap_shmem_swap",
        "series.reclaim_stats_per_lruvec",
        "series.mglru_memcg_abort",
        "series.pagemap_walk_to_pmd_end",
    ] {
        let sc =
            foliosim_scenario::parse_str("test.toml", &anon_64k(), &[(switch.into(), "1".into())])
                .unwrap();
        match run(&sc, &NativeOptions::default()) {
            Err(NativeError::Refused(why)) => {
                assert!(why.contains(&format!("{switch} = 1")), "{why}");
                assert!(why.contains(&format!("--set {switch}=0")), "{why}");
            }
            other => panic!("{switch}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn a_read_ahead_other_than_the_devices_is_refused() {
    let Some(ra) = read_ahead_kb(std::path::Path::new("/var/tmp")) else {
        eprintln!("SKIPPED: read_ahead_kb of the device of /var/tmp is unknown");
        return;
    };
    let text = format!(
        r#"
[system]
read_ahead_kb = {}
[[file]]
name = "data"
size = "1M"
"#,
        ra + 4
    );
    match run(&scenario(&text), &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => {
            assert!(why.contains(&format!("read_ahead_kb = {ra}")), "{why}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// max_sectors_kb matters natively only to MADV_WILLNEED of a file
/// mapping and to a read(2) larger than the readahead window: a scenario
/// that does either with another value than the disk's is refused naming
/// both, one that does neither is not checked.
#[test]
fn a_max_sectors_other_than_the_devices_is_refused_for_willneed() {
    let dir = std::path::Path::new("/var/tmp");
    let (Some(ra), Some(kb)) = (read_ahead_kb(dir), queue_attr(dir, "max_sectors_kb")) else {
        eprintln!("SKIPPED: read_ahead_kb or max_sectors_kb of the device of /var/tmp is unknown");
        return;
    };
    let text = |advice: &str| {
        format!(
            "[system]\nread_ahead_kb = {ra}\nmax_sectors_kb = {}\n\
             [[file]]\nname = \"data\"\nsize = \"1M\"\n\
             [[step]]\nop = \"mmap\"\nregion = \"f\"\nkind = \"file\"\nfile = \"data\"\n\
             size = \"1M\"\n\
             [[step]]\nop = \"madvise\"\nregion = \"f\"\nadvice = \"{advice}\"\n\
             [[step]]\nop = \"phase\"\nname = \"p\"\n",
            kb + 4
        )
    };
    match run(&scenario(&text("willneed")), &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => {
            assert!(
                why.contains(&format!("max_sectors_kb = {}", kb + 4)),
                "{why}"
            );
            assert!(why.contains(&format!("--set max_sectors_kb={kb}")), "{why}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let big_read = format!(
        "[system]\nread_ahead_kb = {ra}\nmax_sectors_kb = {}\n\
         [[file]]\nname = \"data\"\nsize = \"{}K\"\n\
         [[step]]\nop = \"read\"\nfile = \"data\"\nread_size = \"{}K\"\n\
         [[step]]\nop = \"phase\"\nname = \"p\"\n",
        kb + 4,
        ra * 2,
        ra * 2
    );
    match run(&scenario(&big_read), &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => {
            assert!(why.contains(&format!("--set max_sectors_kb={kb}")), "{why}")
        }
        other => panic!("expected a refusal of a read larger than the window, got {other:?}"),
    }
    if !is_root() {
        return;
    }
    let _s = serial();
    assert!(
        run(&scenario(&text("random")), &NativeOptions::default()).is_ok(),
        "without willneed max_sectors_kb is not checked"
    );
}

#[test]
fn without_root_a_run_is_refused() {
    if is_root() {
        eprintln!("SKIPPED without_root_a_run_is_refused: running as root");
        return;
    }
    match run(&scenario(&anon_64k()), &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => assert!(why.contains("root"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A zram device larger than twice the host's memory (512 GiB, or more on
/// a host with 256 GiB or more) for 64 MiB of work is refused before
/// anything is set up, naming its size: the kernel's zram documentation
/// expects at most a 2:1 compression ratio, and the device's table alone
/// took 2.9 GiB of the host's memory. No swap area, zram or loop device,
/// or memory cgroup appears. As root this reaches the point where a run
/// would set the device up.
#[test]
fn a_zram_larger_than_twice_the_memory_is_refused_naming_it() {
    let _s = serial();
    let total_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("MemTotal");
    let gib = 1u64 << 30;
    let size = (512 * gib).max((2 * (total_kib << 10)).next_multiple_of(gib) + gib);
    let text = [
        tk::system_mem("64M", ""),
        tk::swap("zram", &size.to_string()),
        tk::mmap_anon("heap", "64M"),
        tk::touch("heap", "write", ""),
    ]
    .concat();
    let before = host_devices();
    match run(&scenario(&text), &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => {
            let field = format!("system.swap[1].size = {} MiB", size >> 20);
            assert!(why.contains(&field), "{why}");
            assert!(why.contains("zram"), "{why}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(host_devices(), before);
}
