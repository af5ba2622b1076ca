//! The VM engine against real kernels booted in QEMU (TCG on hosts without
//! a usable KVM). Each test needs QEMU for the guest's architecture, the
//! Rust musl target and a kernel named `6.18.35-<arch>` (see
//! `foliosim vm kernel list`); where one is missing the test says which
//! and passes without running.

use std::path::{Path, PathBuf};
use std::time::Duration;

use foliosim_report::Report;
use foliosim_run::vm::VmOutcome;
use foliosim_uapi::Arch;
use foliosim_vm::{kernels, Accel, VmOptions};

fn scenario(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel)
}

/// Options for the 6.18.35 kernel of `arch`, or None (with the reason
/// printed) when this machine cannot boot it.
fn kernel_618(arch: Arch) -> Option<VmOptions> {
    let qemu = match arch {
        Arch::X86_64 => "qemu-system-x86_64",
        Arch::Arm64 => "qemu-system-aarch64",
    };
    let have = |bin: &str| {
        std::process::Command::new("which")
            .arg(bin)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !have(qemu) {
        eprintln!(
            "SKIP: {qemu} is not installed (apt-get install qemu-system-x86 qemu-system-arm)"
        );
        return None;
    }
    if let Err(e) = kernels::resolve("6.18.35", Some(arch)) {
        eprintln!("SKIP: no 6.18.35 kernel for {}: {e}", arch.as_str());
        return None;
    }
    let target = foliosim_vm::guest_target(arch);
    let installed = std::process::Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(target))
        .unwrap_or(false);
    if !installed {
        eprintln!("SKIP: the Rust target {target} is missing (rustup target add {target})");
        return None;
    }
    Some(VmOptions {
        kernel: "6.18.35".into(),
        arch: Some(arch),
        timeout: Duration::from_secs(600),
        accel: Accel::Auto,
    })
}

fn count(r: &Report, phase: &str, counter: &str) -> Option<i64> {
    r.phases
        .iter()
        .find(|p| p.name == phase)?
        .counters
        .get(counter)
        .copied()
}

fn folios(r: &Report, phase: &str, region: &str, bucket: &str) -> u64 {
    r.phases
        .iter()
        .find(|p| p.name == phase)
        .and_then(|p| p.folios.get(region))
        .and_then(|h| h.get(bucket))
        .copied()
        .unwrap_or(0)
}

/// Run scenario `rel` with overrides `ov` in the guest `opts` describes,
/// expectations judged.
fn run_ov(
    rel: &str,
    ov: &[(String, String)],
    opts: &VmOptions,
) -> Result<VmOutcome, foliosim_run::RunError> {
    run_job(rel, ov, opts, true)
}

/// [`run_ov`], with the scenario's expectations judged or not.
fn run_job(
    rel: &str,
    ov: &[(String, String)],
    opts: &VmOptions,
    expect: bool,
) -> Result<VmOutcome, foliosim_run::RunError> {
    let src = foliosim_scenario::Source::read(&scenario(rel)).unwrap();
    let job = foliosim_run::Job {
        source: &src,
        overrides: ov,
        expect,
        given: None,
    };
    foliosim_run::vm::run(&job, opts)
}

/// Assert that scenario `rel` fails in the guest `opts` describes with an
/// error of `kind` whose message contains every one of `parts`.
#[track_caller]
fn assert_run_fails(rel: &str, opts: &VmOptions, kind: &str, parts: &[&str]) {
    let err = run_ov(rel, &[], opts).unwrap_err();
    assert_eq!(err.kind(), kind, "{err}");
    let msg = err.to_string();
    for part in parts {
        assert!(msg.contains(part), "{msg}");
    }
}

fn run(rel: &str, opts: &VmOptions) -> VmOutcome {
    run_ov(rel, &[], opts).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The model on the scenario the guest ran.
fn simulate(r: &VmOutcome) -> Report {
    foliosim_sim::run(&r.scenario, foliosim_sim::RunOptions::default()).unwrap()
}

/// corpus/anon-mthp-64k-always writes every page of a 2 MiB anonymous
/// mapping with only 64 KiB mTHP allowed: do_anonymous_page() maps a whole
/// 64 KiB folio per fault (alloc_anon_folio() picks order 4), so 2 MiB /
/// 64 KiB = 32 faults, 32 anon_fault_alloc at 64 KiB and 32 folios of
/// 64 KiB, on both architectures.
fn check_anon_64k(arch: Arch) {
    let Some(opts) = kernel_618(arch) else { return };
    let r = run("corpus/anon-mthp-64k-always.toml", &opts);
    assert_eq!(r.kernel.as_ref().map(|k| k.1.as_str()), Some("6.18.35"));
    assert_eq!(r.report.engine, "vm");
    assert_eq!(r.report.arch, arch.as_str());
    assert_eq!(count(&r.report, "write", "minor-faults"), Some(32));
    assert_eq!(count(&r.report, "write", "major-faults"), Some(0));
    assert_eq!(
        count(&r.report, "write", "hugepages-64kB/anon_fault_alloc"),
        Some(32)
    );
    assert_eq!(folios(&r.report, "write", "heap", "64kB"), 32);
    assert_eq!(folios(&r.report, "write", "heap", "4kB"), 0);
    // The x86 tracepoints: counted on x86, absent (never 0) on arm64.
    let pfu = count(&r.report, "write", "exceptions:page_fault_user");
    match arch {
        Arch::X86_64 => assert_eq!(pfu, Some(32)),
        Arch::Arm64 => assert_eq!(pfu, None),
    }
    // The model, run with the guest's settings, agrees. The guest's
    // architecture is among them; `memory` is not, as the scenario sets it.
    assert!(r
        .overrides
        .contains(&("arch".to_string(), arch.as_str().to_string())));
    assert!(!r.overrides.iter().any(|(k, _)| k == "memory"));
    let sim = simulate(&r);
    let (text, _, ok) = foliosim_report::compare::compare(&sim, &r.report);
    assert!(ok, "{text}");
}

#[test]
fn anon_mthp_in_an_x86_64_guest() {
    check_anon_64k(Arch::X86_64);
}

#[test]
fn anon_mthp_in_an_arm64_guest() {
    check_anon_64k(Arch::Arm64);
}

/// A guest that does not finish in time is stopped and reported with its
/// console (the run's folder is removed on this path like on every other:
/// `RunDir`'s test in src/lib.rs).
#[test]
fn a_guest_past_its_time_limit_is_stopped() {
    let Some(mut opts) = kernel_618(Arch::X86_64) else {
        return;
    };
    opts.timeout = Duration::from_millis(300);
    assert_run_fails(
        "corpus/anon-mthp-64k-always.toml",
        &opts,
        "guest",
        &["did not finish within", "last console lines"],
    );
}

#[test]
fn an_unknown_kernel_names_the_build_command() {
    let opts = VmOptions {
        kernel: "no-such-kernel-9.9".into(),
        arch: None,
        timeout: Duration::from_secs(5),
        accel: Accel::Tcg,
    };
    assert_run_fails(
        "corpus/anon-never.toml",
        &opts,
        "host",
        &[
            "no kernel named no-such-kernel-9.9",
            "foliosim vm kernel build",
        ],
    );
}

/// A 7.x kernel contains seed 002: its switches are turned on unless the
/// scenario sets them; a scenario without `memory` gets a guest-sized one.
#[test]
fn a_kernel_release_turns_on_the_switches_it_contains() {
    let k = |release: &str| kernels::KernelImage {
        name: format!("{release}-x86_64"),
        image: PathBuf::from("/nonexistent"),
        arch: Arch::X86_64,
        release: release.into(),
        config: None,
    };
    // The scenario parsed with the user's overrides, compiled once; the
    // guest's settings applied to it are the scenario the guest parses
    // with every override.
    let guest_overrides = |user: &[(String, String)], k: &kernels::KernelImage| {
        let path = scenario("corpus/anon-never.toml");
        let mut sc = foliosim_scenario::load(&path, user).unwrap();
        let wl = foliosim_sim::compile(&sc).unwrap();
        let (ov, notes) = foliosim_vm::guest_overrides(&mut sc, &wl, user, k);
        let reparsed = foliosim_scenario::load(&path, &ov).unwrap();
        assert_eq!(format!("{sc:?}"), format!("{reparsed:?}"), "{ov:?}");
        (ov, notes)
    };
    let on = |ov: &[(String, String)]| -> Vec<String> {
        ov.iter()
            .filter(|(k, v)| k.starts_with("series.") && v == "1")
            .map(|(k, _)| k.clone())
            .collect()
    };
    let (ov, _) = guest_overrides(&[], &k("6.18.35"));
    assert!(on(&ov).is_empty(), "{ov:?}");
    // Seed 002 went into 7.0; per-lruvec reclaim statistics are in 7.1.
    let (ov, _) = guest_overrides(&[], &k("7.0.3"));
    assert_eq!(
        on(&ov),
        ["series.batch_folio_referenced", "series.batch_file_unmap"]
    );
    let (ov, _) = guest_overrides(&[], &k("7.1.5"));
    assert_eq!(
        on(&ov),
        [
            "series.batch_folio_referenced",
            "series.batch_file_unmap",
            "series.reclaim_stats_per_lruvec",
            "series.mglru_memcg_abort"
        ]
    );
    // Set by the user: left as given.
    let user = [("series.batch_file_unmap".to_string(), "0".to_string())];
    let (ov, _) = guest_overrides(&user, &k("7.1.5"));
    assert_eq!(
        on(&ov),
        [
            "series.batch_folio_referenced",
            "series.reclaim_stats_per_lruvec",
            "series.mglru_memcg_abort"
        ]
    );
}

/// The model beside the guest on `rel` with overrides `ov`: every judged
/// counter agrees; returns the guest's report.
fn agrees(rel: &str, ov: &[(String, String)], opts: &VmOptions) -> Report {
    let r = run_ov(rel, ov, opts).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let sim = simulate(&r);
    let (text, _, ok) = foliosim_report::compare::compare(&sim, &r.report);
    assert!(ok, "{rel}:\n{text}");
    r.report
}

/// seed000/pageout-256m with 64 KiB mTHP on arm64: MADV_PAGEOUT of 256 MiB
/// = 4,096 contpte-mapped 64 KiB folios. try_to_unmap_one() visits each
/// folio's one VMA once (4,096 calls), its first get-and-clear unfolds the
/// block (contpte_convert() without PTE_CONT: 4,096 unfolds, no fold), and
/// each folio gets one swap-slot allocation attempt (folio_alloc_swap()).
#[test]
fn contpte_unfolds_of_a_pageout_agree_with_the_arm64_kernel() {
    let Some(opts) = kernel_618(Arch::Arm64) else {
        return;
    };
    let ov = [(
        "transparent_hugepage.hugepages-64kB.enabled".to_string(),
        "always".to_string(),
    )];
    let r = agrees("seed000/pageout-256m.toml", &ov, &opts);
    for (k, want) in [
        ("kfunc/contpte_convert", 4096),
        ("kfunc/contpte_convert/fold", 0),
        ("kfunc/try_to_unmap_one", 4096),
        ("kfunc/folio_alloc_swap", 4096),
    ] {
        assert_eq!(count(&r, "measured", k), Some(want), "{k}");
    }
}

/// Scenarios that only a guest can run (knobs the host's debugfs keeps).
#[test]
fn guest_only_scenarios_agree_on_arm64() {
    let Some(opts) = kernel_618(Arch::Arm64) else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/guest");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let rel = format!("guest/{}", f.file_name().unwrap().to_string_lossy());
        // A `GUEST-XFAIL: reason` line names what the model lacks; such a
        // scenario documents the difference and is not held to agree.
        let sc = foliosim_scenario::load(&f, &[]).unwrap();
        if let Some(why) = sc
            .description
            .lines()
            .find_map(|l| l.trim().strip_prefix("GUEST-XFAIL:"))
        {
            eprintln!("{rel}: not compared ({})", why.trim());
            continue;
        }
        agrees(&rel, &[], &opts);
    }
}

/// The corpus's reclaim scenarios with the multi-gen LRU on
/// (`lru_gen.enabled = 1`; the host has no CONFIG_LRU_GEN, so only a
/// guest can hold the model's MGLRU to the kernel's): memcg reclaim of
/// file pages, MADV_COLD, MADV_PAGEOUT of 4 KiB and 64 KiB folios to a
/// swap file and a block device, swap-in after it, pageout after fork,
/// of private COW file pages, of shmem, and with threads, and a 2 GiB
/// file read three times inside a 1 GiB cgroup with and without
/// anonymous pages charged first. Every judged counter agrees with the
/// x86_64 6.18.35 guest. Their expectations are the classic LRU's and are
/// not judged.
///
/// The 2 GiB file is read on a 2 GiB machine, not the scenarios' 4 GiB:
/// all of a 2 GiB x86_64 guest is ZONE_DMA32 (and the few pages of
/// ZONE_DMA), one zone as in the model, and there each pass adds 3,732
/// folios with one major fault, as with the classic LRU. A 4 GiB guest
/// also has a 1 GiB ZONE_NORMAL. MGLRU keeps a list per zone and
/// generation, and `scan_folios()` takes the highest zone's first, so the
/// cgroup's reclaim evicts the newest folios of ZONE_NORMAL (where the
/// allocator puts new ones) before older ones in ZONE_DMA32: from the
/// second pass readahead finds survivors of the first and its folios
/// evicted before they are read, and the async readahead chain breaks
/// (two 4 GiB runs: 129 major faults and 263,261 and 265,309 folios added
/// in the second pass). The model has one zone (docs/fidelity.md).
#[test]
fn corpus_reclaim_agrees_under_mglru_on_x86_64() {
    let Some(opts) = kernel_618(Arch::X86_64) else {
        return;
    };
    let ov = [("lru_gen.enabled".to_string(), "1".to_string())];
    for name in [
        "madv-cold-file",
        "memcg-limit-file-reclaim",
        "memcg-reclaim-file-two-pass",
        "pageout-4k-swapfile",
        "pageout-64k-swapfile",
        "pageout-64k-block",
        "swapin-after-pageout-4k",
        "swapin-after-pageout-64k",
        "fork-then-pageout",
        "file-private-cow-pageout",
        "shmem-read-hole-clean-pageout",
        "pagemap-anon-pageout-swapfile",
        "threads-pageout-spin",
        "memcg-2g-file-1g-limit-seq",
        "memcg-2g-file-1g-limit-seq-anon",
    ] {
        let rel = format!("corpus/{name}.toml");
        let mut ov = ov.to_vec();
        if name.starts_with("memcg-2g-file") {
            ov.push(("memory".to_string(), "2G".to_string()));
        }
        let r = run_job(&rel, &ov, &opts, false).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(
            r.report.system.get("lru_gen.enabled").map(String::as_str),
            Some("1"),
            "{rel}: the guest ran MGLRU"
        );
        let sim = simulate(&r);
        let (text, _, ok) = foliosim_report::compare::compare(&sim, &r.report);
        assert!(ok, "{rel} under MGLRU:\n{text}");
    }
}

/// zswap in a memory cgroup (`guest/zswap-memcg-charge`, GUEST-XFAIL as a
/// whole: the guest's cgroup also carries slab objects the model does not
/// charge, so its reclaim steals a few pages more or fewer): zswap's own
/// counters, the machine's and the cgroup's, agree within 1% in every
/// phase on the arm64 6.18.35 guest (x86_64 and arm64 guests measured 0 to
/// 0.2% apart from the model). `zswap-memcg-zswap-max` is not held here:
/// at the cgroup's zswap.max every store alternates with a rejection or a
/// writeback, so its counts follow the reclaim's volume (arm64 guests
/// stored 2,112 to 2,176 pages in the write phase, the model 2,112).
#[test]
fn zswap_in_a_memory_cgroup_agrees_within_one_percent_on_arm64() {
    let Some(opts) = kernel_618(Arch::Arm64) else {
        return;
    };
    const COUNTERS: [&str; 6] = [
        "zswpout",
        "zswpin",
        "zswpwb",
        "memcg/0/zswpout",
        "memcg/0/zswpin",
        "memcg/0/zswpwb",
    ];
    for rel in ["guest/zswap-memcg-charge.toml"] {
        let r = run(rel, &opts);
        let sim = simulate(&r);
        for phase in ["write", "read"] {
            for k in COUNTERS {
                let model = count(&sim, phase, k).unwrap_or(0);
                let guest = count(&r.report, phase, k).unwrap_or(0);
                assert!(
                    (model - guest).abs() * 100 <= guest.abs(),
                    "{rel} {phase} {k}: model {model}, guest {guest}"
                );
            }
        }
    }
}

/// MGLRU's `min_ttl_ms` (`lru_gen_age_node()`, mm/vmscan.c): at each
/// priority of `balance_pgdat()` kswapd has the OOM killer kill a process
/// when no cgroup has a generation older than it. The root's generations
/// date from boot (`lru_gen_init_lruvec()`), and a guest is up for less
/// than its 600 s time limit, so with `min_ttl_ms` 600,000 the first
/// kswapd pass of `global-reclaim-anon-swapfile` (1 GiB written into a
/// 1 GiB guest) kills the workload in the 6.18.35 guest; so does the model
/// on a machine up for a few minutes or less when the workload starts (its
/// first kswapd pass comes under a second later), and with `min_ttl_ms` 0
/// neither kills (the scenario's other runs).
#[test]
fn min_ttl_has_the_guest_and_the_model_kill_the_workload() {
    let Some(opts) = kernel_618(Arch::X86_64) else {
        return;
    };
    let rel = "guest/global-reclaim-anon-swapfile.toml";
    let ov: Vec<(String, String)> = [("lru_gen.enabled", "1"), ("lru_gen.min_ttl_ms", "600000")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let Err(err) = run_job(rel, &ov, &opts, false) else {
        panic!("the guest's workload survived min_ttl_ms");
    };
    let msg = err.to_string();
    assert!(msg.contains("killed by SIGKILL"), "{msg}");
    assert!(msg.contains("Out of memory: Killed process"), "{msg}");
    for uptime in ["0", "300000"] {
        let mut ov = ov.clone();
        ov.push(("machine.uptime_ms".into(), uptime.into()));
        let sc = foliosim_scenario::load(&scenario(rel), &ov).unwrap();
        match foliosim_sim::run(&sc, foliosim_sim::RunOptions::default()) {
            Err(foliosim_sim::SimError::Killed { signal, .. }) => {
                assert!(signal.contains("OOM killer"), "{signal}")
            }
            other => panic!(
                "uptime {uptime}: expected an OOM kill, got {:?}",
                other.map(|_| "a report")
            ),
        }
    }
}
