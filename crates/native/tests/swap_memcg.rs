//! Swap devices (`[[system.swap]]`: zram, swap file, loop block device),
//! the reclaim advice and memory cgroups, on the host kernel (root only;
//! each test skips with a message when it cannot run), and the cleanup of
//! everything a run creates: on success, on SIGINT in the middle of a
//! phase, and after SIGKILL by the next run.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use common::*;
use foliosim_native::{NativeError, NativeOptions};
use foliosim_testkit as tk;

/// 64 MiB of anonymous memory written, then paged out with MADV_PAGEOUT
/// in the measured phase, with one swap device of `kind`.
fn pageout_scenario(kind: &str) -> String {
    [
        tk::name(&format!("pageout-{kind}")),
        tk::swap(kind, "256M"),
        tk::anon_written("heap", "64M"),
        tk::phase("pageout"),
        tk::madvise("heap", "pageout", ""),
    ]
    .concat()
}

fn opts(dir: &TempDir) -> NativeOptions {
    NativeOptions {
        workdir: dir.0.clone(),
        ..NativeOptions::default()
    }
}

/// Run `text`; check that the host's devices and cgroups are as before and
/// nothing is left in the work directory. Returns the phases' counters.
fn run_clean(test: &str, text: &str) -> Vec<BTreeMap<String, i64>> {
    let (before, _) = quiet_host_devices();
    let dir = TempDir::new(test);
    let r = run(&scenario(text), &opts(&dir)).unwrap_or_else(|e| panic!("{test}: {e}"));
    let (after, saved) = quiet_host_devices();
    assert_eq!(after, before, "{test}: host devices not restored");
    assert!(dir.is_empty(), "{test}: files left in {}", dir.0.display());
    assert!(!saved, "{test}: the run's saved state was left");
    r.phases.into_iter().map(|p| p.counters).collect()
}

fn pageout_swaps_out(test: &str, kind: &str) {
    let p = &run_clean(test, &pageout_scenario(kind))[0];
    // /proc/vmstat is system-wide: at least our 16384 pages.
    assert!(p["pswpout"] > 0, "{test}: {p:?}");
    assert!(p["pswpout"] >= 16384, "{test}: pswpout = {}", p["pswpout"]);
    assert_eq!(p["minor-faults"], 0, "{test}: {p:?}");
    // shrink_folio_list() frees a folio whose write has ended by the time
    // pageout() returns (zram's are synchronous); an asynchronous write
    // keeps the folio, which stays in the swap cache, clean, once its
    // write ends (nothing reclaims it again): nr_swapcached grows by the
    // region's 16384 pages.
    let cached = if kind == "zram" { 0 } else { 16384 };
    let bound = vmstat_drift_bound();
    assert!(
        (p["nr_swapcached"] - cached).abs() <= bound,
        "{test}: nr_swapcached {}, want {cached} within {bound}",
        p["nr_swapcached"]
    );
    if kind == "zram" {
        // zram's mm_stat: every page stored and compressed (one stored
        // byte: neither same-filled nor incompressible), 41 bytes each
        // with lzo-rle, the default compressor (the model's lzo1x-1 gives
        // 44: drivers/zram.rs), all in the 64-byte class with their
        // handles, 64 to a page.
        assert_eq!(p["zram/pages_stored"], 16384, "{test}: {p:?}");
        assert_eq!(p["zram/same_pages"], 0, "{test}: {p:?}");
        assert_eq!(p["zram/huge_pages"], 0, "{test}: {p:?}");
        assert_eq!(p["zram/compr_data_size"], 16384 * 41, "{test}: {p:?}");
        let bound = vmstat_drift_bound();
        assert!(
            (p["nr_zspages"] - 16384 / 64).abs() <= bound,
            "{test}: nr_zspages {}, want 256 within {bound}",
            p["nr_zspages"]
        );
    }
    // Per-process tracepoints: every page written to swap by the workload.
    if let Some(&n) = p.get("vmscan:mm_vmscan_write_folio") {
        assert!(n > 0, "{test}: {p:?}");
    }
    if let Some(&n) = p.get("vmscan:mm_vmscan_reclaim_pages") {
        assert!(n > 0, "{test}: {p:?}");
    }
}

#[test]
fn zram_swap_and_pageout() {
    let _s = serial();
    if skip_unless_root("zram_swap_and_pageout") || skip_unless_zram("zram_swap_and_pageout") {
        return;
    }
    pageout_swaps_out("zram", "zram");
}

/// Twice the per-CPU thresholds of every zone in /proc/zoneinfo: how far
/// a phase's change of a zone counter in /proc/vmstat (such as
/// `nr_zspages`) may be from the truth, as each CPU folds its own changes
/// into the total only past its threshold, at the phase start and end.
fn vmstat_drift_bound() -> i64 {
    let zoneinfo = std::fs::read_to_string("/proc/zoneinfo").unwrap();
    let sum: i64 = zoneinfo
        .lines()
        .filter_map(|l| l.trim().strip_prefix("vm stats threshold:"))
        .filter_map(|v| v.trim().parse::<i64>().ok())
        .sum();
    2 * sum
}

#[test]
fn zram_compresses_one_byte_pages_into_a_page_per_64() {
    let test = "zram_compresses_one_byte_pages_into_a_page_per_64";
    let _s = serial();
    if skip_unless_root(test) || skip_unless_zram(test) {
        return;
    }
    // 1 GiB of pages each holding one stored byte, paged out to zram:
    // zram_write_page() compresses each (not same-filled) to a few dozen
    // bytes, which with zsmalloc's handle fall in the 64-byte class, 64
    // objects per one-page zspage: 262,144 / 64 = 4,096 pool pages, which
    // munmap (zram_slot_free_notify() of every slot) gives back. The model
    // counts the same (its model test derives 288 pages for 72 MiB).
    let text = [
        tk::name("zram-pool"),
        tk::swap("zram", "2G"),
        tk::anon_written("heap", "1G"),
        tk::phase("pageout"),
        tk::madvise("heap", "pageout", ""),
        tk::phase("free"),
        tk::munmap("heap"),
    ]
    .concat();
    let p = run_clean(test, &text);
    let bound = vmstat_drift_bound();
    assert!(p[0]["pswpout"] >= 262_144, "{test}: {:?}", p[0]);
    for (phase, want) in [(0, 4096), (1, -4096)] {
        let got = p[phase]["nr_zspages"];
        assert!(
            (got - want).abs() <= bound,
            "{test}: phase {phase}: nr_zspages {got}, want {want} within {bound}"
        );
    }
    // mm_stat's mem_used_total is the pool's own count, without the
    // per-CPU lag: exactly 4,096 pages. mem_used_max rises with it and
    // keeps its peak when munmap empties the pool.
    for (phase, used, max) in [(0, 4096, 4096), (1, -4096, 0)] {
        let got = (
            p[phase]["zram/mem_used_total"],
            p[phase]["zram/mem_used_max"],
        );
        assert_eq!(got, (used * 4096, max * 4096), "{test}: phase {phase}");
    }
}

#[test]
fn swap_file_and_pageout() {
    let _s = serial();
    if skip_unless_root("swap_file_and_pageout") {
        return;
    }
    pageout_swaps_out("file", "file");
}

#[test]
fn loop_block_device_and_pageout() {
    let _s = serial();
    if skip_unless_root("loop_block_device_and_pageout") {
        return;
    }
    if !Path::new("/dev/loop-control").exists() {
        eprintln!("SKIPPED loop_block_device_and_pageout: no /dev/loop-control");
        return;
    }
    pageout_swaps_out("block", "block");
    let rotational = pageout_scenario("block").replace(
        "kind = \"block\"\n",
        "kind = \"block\"\nrotational = true\n",
    );
    let p = &run_clean("block-rotational", &rotational)[0];
    assert!(p["pswpout"] > 0, "{p:?}");
}

#[test]
fn memcg_limit_reclaim_and_force_empty_swap_out() {
    let _s = serial();
    let test = "memcg_limit_reclaim_and_force_empty_swap_out";
    if skip_unless_root(test) || skip_unless_memcg_v1(test) {
        return;
    }
    // 128 MiB written into a cgroup limited to 64 MiB, with swap (zram, or
    // a swap file where there is no zram).
    let kind = if Path::new("/sys/class/zram-control").exists() {
        "zram"
    } else {
        "file"
    };
    let text = [
        tk::name("memcg-limit"),
        tk::swap(kind, "512M"),
        tk::step_with("memcg", "limit = \"64M\""),
        tk::mmap_anon("heap", "128M"),
        tk::phase("fill"),
        tk::touch("heap", "write", ""),
        tk::phase("reclaim"),
        tk::step_with("memcg_reclaim", "amount = \"16M\""),
        tk::phase("empty"),
        tk::step("force_empty"),
    ]
    .concat();
    let p = run_clean(test, &text);
    let (fill, reclaim, empty) = (&p[0], &p[1], &p[2]);
    assert_eq!(fill["minor-faults"], 32768, "{fill:?}");
    // At least the 64 MiB above the limit went to swap.
    assert!(fill["pswpout"] > 0, "{fill:?}");
    assert!(fill["pswpout"] >= 16384, "{fill:?}");
    assert!(fill["pgsteal_anon"] > 0, "{fill:?}");
    // The v1 emulation of memory.reclaim reclaims about the amount (4096
    // pages), in the workload's own context (its tracepoints count it).
    assert!(reclaim["pswpout"] > 0, "{reclaim:?}");
    // The cgroup's own memory.stat: 16 MiB more in swap, 16 MiB less rss.
    let mib = |v: i64| v >> 20;
    assert!(
        (15..=17).contains(&mib(reclaim["memcg/0/swap"])),
        "{reclaim:?}"
    );
    assert!(
        (-17..=-15).contains(&mib(reclaim["memcg/0/rss"])),
        "{reclaim:?}"
    );
    assert_eq!(fill["memcg/0/pgfault"], 32768, "{fill:?}");
    if let Some(&n) = reclaim.get("vmscan:mm_vmscan_write_folio") {
        assert!(n > 0, "{reclaim:?}");
    }
    // force_empty swaps out the rest (about 48 MiB).
    assert!(empty["pswpout"] > 0, "{empty:?}");
    assert!(mib(empty["memcg/0/swap"]) >= 40, "{empty:?}");
}

#[test]
fn a_child_moves_into_its_own_cgroup() {
    let _s = serial();
    let test = "a_child_moves_into_its_own_cgroup";
    if skip_unless_root(test) || skip_unless_memcg_v1(test) || skip_unless_zram(test) {
        return;
    }
    // The child's cgroup is limited; the parent's is not, and its later
    // touches do not swap.
    let child = [
        tk::step_with("memcg", "limit = \"16M\""),
        tk::anon_written("own", "64M"),
    ];
    let text = [
        tk::swap("zram", "256M"),
        tk::step("memcg"),
        tk::mmap_anon("heap", "64M"),
        tk::phase("child"),
        tk::step("fork"),
        tk::child(&child.concat()),
        tk::phase("parent"),
        tk::touch("heap", "write", ""),
        tk::step("wait"),
    ]
    .concat();
    let p = run_clean(test, &text);
    assert!(p[0]["pswpout"] >= 8192, "{:?}", p[0]);
    assert_eq!(p[1]["minor-faults"], 16384, "{:?}", p[1]);
    if let Some(&n) = p[1].get("vmscan:mm_vmscan_write_folio") {
        assert_eq!(n, 0, "{:?}", p[1]);
    }
}

#[test]
fn an_impossible_swap_device_is_refused_before_touching_the_host() {
    let _s = serial();
    let text = [tk::swap("file", "1024T"), tk::mmap_anon("heap", "1M")].concat();
    let (before, _) = quiet_host_devices();
    match run(&scenario(&text), &NativeOptions::default()) {
        Err(NativeError::Refused(why)) => {
            assert!(why.contains("MiB free"), "{why}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(quiet_host_devices().0, before);
}

/// A run that keeps a cgroup limited to 32 MiB swapping for a long time,
/// with one swap device of every kind.
fn long_swapping_scenario(zram: bool) -> String {
    let mut s = String::from("name = \"swap-long\"\n");
    s += "[[system.swap]]\nkind = \"file\"\nsize = \"64M\"\n";
    s += "[[system.swap]]\nkind = \"block\"\nsize = \"64M\"\nrotational = true\n";
    if zram {
        s += "[[system.swap]]\nkind = \"zram\"\nsize = \"256M\"\n";
    }
    s += "[[step]]\nop = \"memcg\"\nlimit = \"32M\"\n";
    s += "[[step]]\nop = \"mmap\"\nregion = \"heap\"\nkind = \"anon\"\nsize = \"96M\"\n";
    s += &busy_phases(200, "pageout");
    s
}

/// Start the test helper on `text` and wait until the run has created its
/// swap devices and memory cgroup, and runs.
fn start_swapping_run(tag: &str, text: &str, work: &TempDir, before: &HostDevices) -> Child {
    let scn_dir = TempDir::new(&format!("{tag}-scn"));
    let scn = scn_dir.0.join("long.toml");
    std::fs::write(&scn, text).unwrap();
    let mut child = spawn_testrun(&scn, work, true);
    let created = || {
        let now = host_devices();
        let cg = now
            .memcgs
            .iter()
            .any(|d| d.contains("/foliosim-") && !before.memcgs.contains(d));
        cg && now.swaps.len() > before.swaps.len()
    };
    wait_until(&mut child, Duration::from_secs(30), created, || {
        format!(
            "the run never created its swap devices and cgroup: {:?}",
            host_devices()
        )
    });
    assert_running_after(&mut child, Duration::from_millis(500));
    let during = host_devices();
    assert!(during.swaps.len() > before.swaps.len(), "{during:?}");
    assert!(!during.loops.is_empty() || !before.loops.is_empty());
    child
}

#[test]
fn sigint_mid_phase_removes_swap_devices_and_cgroups() {
    let _s = serial();
    let test = "sigint_mid_phase_removes_swap_devices_and_cgroups";
    if skip_unless_root(test) || skip_unless_memcg_v1(test) {
        return;
    }
    let zram = Path::new("/sys/class/zram-control").exists();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let (before, _) = quiet_host_devices();
        let work = TempDir::new(&format!("swapsig-{sig}"));
        let mut child =
            start_swapping_run("swapsig", &long_swapping_scenario(zram), &work, &before);
        signal_and_wait(&mut child, sig, Duration::from_secs(30));
        let what = format!("host devices after signal {sig}");
        assert_restored(quiet_host_devices(), &before, &work, &what);
    }
}

#[test]
fn after_sigkill_the_next_run_removes_swap_devices_and_cgroups() {
    let _s = serial();
    let test = "after_sigkill_the_next_run_removes_swap_devices_and_cgroups";
    if skip_unless_root(test) || skip_unless_memcg_v1(test) {
        return;
    }
    let zram = Path::new("/sys/class/zram-control").exists();
    let (before, _) = quiet_host_devices();
    let work = TempDir::new("swapkill");
    let mut child = start_swapping_run("swapkill", &long_swapping_scenario(zram), &work, &before);
    // SIGKILL: nothing runs in the killed process.
    signal_and_wait(&mut child, libc::SIGKILL, Duration::from_secs(30));
    // (Not `quiet`: any other native run would clean up first.)
    assert_ne!(host_devices(), before, "a SIGKILLed run cannot clean up");
    assert!(Path::new("/run/foliosim-native.saved").exists());
    // The next run puts the host back before its own work.
    let text = [
        tk::mmap_anon("heap", "1M"),
        tk::phase("p"),
        tk::touch("heap", "write", ""),
    ]
    .concat();
    let dir = TempDir::new("swapkill-next");
    run(&scenario(&text), &opts(&dir)).expect("the next run");
    let (after, saved) = quiet_host_devices();
    assert_eq!(after, before, "the next run did not clean up");
    assert!(work.is_empty(), "files left in {}", work.0.display());
    assert!(!saved, "the saved state was left");
}

#[test]
fn swappiness_moves_limit_reclaim_from_file_to_anon() {
    let test = "swappiness_moves_limit_reclaim_from_file_to_anon";
    let _s = serial();
    if skip_unless_root(test) || skip_unless_memcg_v1(test) {
        return;
    }
    // A 32 MiB cgroup holding a 16 MiB file read twice (every folio
    // active), then 48 MiB written: limit reclaim must free about 8,192
    // pages. get_scan_count() weighs file pages by 200 - swappiness: at
    // 200 they are left alone but for a pass that reaches priority 0
    // (SCAN_EQUAL), and swapping makes the room; at 60 the file goes
    // whole and swapping makes the rest, 4,096 pages. (The model test
    // swappiness_weighs_anon_against_file derives the same bounds; the
    // engine's own few pages in the cgroup add a little swapping here.)
    // The cgroup is created under the runner's cgroup, whose v1
    // memory.swappiness it would take: the engine gives it vm.swappiness.
    let before = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
    // The native engine reads the file with its device's readahead.
    let ra = read_ahead_kb(Path::new("/var/tmp")).unwrap_or(128);
    let text = |swappiness: u32| {
        [
            tk::name("swappiness"),
            tk::system_mem(
                "2G",
                &format!("vm.swappiness = {swappiness}\nread_ahead_kb = {ra}\n"),
            ),
            tk::swap("file", "256M"),
            tk::file("data", "16M", "fill = \"cold\"\n"),
            tk::step_with("memcg", "limit = \"32M\""),
            tk::step_with("read", "file = \"data\"\ncount = 2"),
            tk::mmap_anon("a", "48M"),
            tk::phase("write"),
            tk::touch("a", "write", ""),
        ]
        .concat()
    };
    let p = &run_clean(test, &text(200))[0];
    assert!(p["pgsteal_file"] <= 128, "{test}: 200: {p:?}");
    assert!(
        (8192 - 128..8192 + 512).contains(&p["pgsteal_anon"]),
        "{test}: 200: {p:?}"
    );
    let p = &run_clean(test, &text(60))[0];
    assert_eq!(p["pgsteal_file"], 4096, "{test}: 60: {p:?}");
    assert!(
        (4096..4096 + 512).contains(&p["pgsteal_anon"]),
        "{test}: 60: {p:?}"
    );
    let after = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
    assert_eq!(after, before, "{test}: vm.swappiness not restored");
}

/// cgroup v2's memory.high, memory.min, memory.low, memory.swap.max and
/// memory.swap.high on a cgroup v1 host:
/// refused before anything is changed, naming the step's file, line and
/// key, and pointing to the VM engine; the host's devices and cgroups are
/// as before.
#[test]
fn v2_only_memcg_files_are_refused_on_cgroup_v1() {
    let _s = serial();
    let test = "v2_only_memcg_files_are_refused_on_cgroup_v1";
    if skip_unless_root(test) || skip_unless_memcg_v1(test) {
        return;
    }
    let (before, _) = quiet_host_devices();
    let phase = "[[step]]\nop = \"phase\"\nname = \"p\"\n";
    // (the scenario's steps before its phase, what the refusal must say)
    let cases: [(&str, &[&str]); 6] = [
        (
            "[[step]]\nop = \"memcg\"\nhigh = \"32M\"\n\
             [[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"1M\"\n",
            &[":1:1: high is cgroup v2's memory.high", "--engine vm"],
        ),
        (
            "[[step]]\nop = \"memcg\"\nmin = \"8M\"\n",
            &["min is cgroup v2's memory.min"],
        ),
        (
            "[[step]]\nop = \"memcg\"\nlow = \"8M\"\n",
            &["low is cgroup v2's memory.low"],
        ),
        (
            "[[step]]\nop = \"memcg\"\nswap_max = \"4M\"\n",
            &[
                "swap_max is cgroup v2's memory.swap.max",
                "memory.memsw.limit_in_bytes",
            ],
        ),
        (
            "[[step]]\nop = \"memcg\"\nswap_high = \"4M\"\n",
            &["swap_high is cgroup v2's memory.swap.high"],
        ),
        // A run-time write of memory.high.
        (
            "[[step]]\nop = \"memcg\"\n[[step]]\nop = \"memcg_high\"\nhigh = \"max\"\n",
            &[":3:1: memcg_high writes cgroup v2's memory.high"],
        ),
    ];
    for (steps, says) in cases {
        match run(
            &scenario(&format!("{steps}{phase}")),
            &NativeOptions::default(),
        ) {
            Err(NativeError::Refused(why)) => {
                for s in says {
                    assert!(why.contains(s), "{why}");
                }
            }
            other => panic!("{steps}: expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(quiet_host_devices().0, before);
}
