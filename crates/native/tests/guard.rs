//! The host-state guard: a native run interrupted by SIGINT or SIGTERM in
//! the middle of a measured phase puts every THP knob back and leaves no
//! file behind (root only; skips with a message otherwise).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

/// A value different from `cur` for an `enabled` knob.
fn other(cur: &str, choices: &[&'static str]) -> &'static str {
    choices.iter().copied().find(|c| *c != cur).unwrap()
}

/// A scenario that changes every THP knob and runs for a long time.
fn long_scenario() -> String {
    let knobs = quiet(thp_knobs);
    let get = |p: &str| word(&knobs[&format!("{THP}/{p}")]).to_string();
    let mut s = String::from("name = \"guard-long\"\n[system]\n");
    let ra = read_ahead_kb(Path::new("/var/tmp")).unwrap_or(128);
    s += &format!("read_ahead_kb = {ra}\n");
    let top = other(&get("enabled"), &["never", "madvise", "always"]);
    s += &format!("transparent_hugepage.enabled = \"{top}\"\n");
    let zp = if get("use_zero_page") == "1" { 0 } else { 1 };
    s += &format!("transparent_hugepage.use_zero_page = {zp}\n");
    for kb in [16, 32, 64, 128, 256, 512, 1024, 2048] {
        let p = format!("hugepages-{kb}kB/enabled");
        if knobs.contains_key(&format!("{THP}/{p}")) {
            let v = other(&get(&p), &["always", "never", "madvise", "inherit"]);
            s += &format!("transparent_hugepage.hugepages-{kb}kB.enabled = \"{v}\"\n");
        }
    }
    s += "[[file]]\nname = \"data\"\nsize = \"1M\"\nfill = \"cold\"\n";
    s += "[[step]]\nop = \"mmap\"\nregion = \"heap\"\nkind = \"anon\"\nsize = \"1G\"\n";
    s += &busy_phases(60, "dontneed");
    s
}

fn interrupt_mid_run(sig: i32) {
    // Snapshots are taken while no native run is in progress (another
    // process may be running one: ours waits for it).
    let before = quiet(thp_knobs);
    let scn_dir = TempDir::new(&format!("guard-scn-{sig}"));
    let work = TempDir::new(&format!("guard-work-{sig}"));
    let scn = scn_dir.0.join("long.toml");
    std::fs::write(&scn, long_scenario()).unwrap();
    let mut child = spawn_testrun(&scn, &work, true);
    // Wait until the run has applied its settings and started working:
    // its fresh directory appears in `work` after the settings.
    wait_until(
        &mut child,
        Duration::from_secs(60),
        || !work.is_empty(),
        || "the run never created its work directory".into(),
    );
    assert_running_after(&mut child, Duration::from_millis(400));
    assert_ne!(
        thp_knobs(),
        before,
        "the run did not change the THP settings"
    );
    signal_and_wait(&mut child, sig, Duration::from_secs(10));
    let after = quiet(|| {
        (
            thp_knobs(),
            Path::new("/run/foliosim-native.saved").exists(),
        )
    });
    assert_restored(after, &before, &work, "THP settings");
}

#[test]
fn sigint_and_sigterm_mid_phase_restore_the_host() {
    let _s = serial();
    if skip_unless_root("sigint_and_sigterm_mid_phase_restore_the_host") {
        return;
    }
    interrupt_mid_run(libc::SIGINT);
    interrupt_mid_run(libc::SIGTERM);
}

/// A scenario that changes every kind of host state the engine can: THP
/// knobs, a swap file, a loop device (block swap), a zram device, a memory
/// cgroup, tracefs counters, and works for seconds.
fn every_change_scenario() -> String {
    let mut s = long_scenario();
    let at = s.find("[[file]]").unwrap();
    let swaps = "[[system.swap]]\nkind = \"file\"\nsize = \"16M\"\n\
                 [[system.swap]]\nkind = \"block\"\nsize = \"16M\"\n\
                 [[system.swap]]\nkind = \"zram\"\nsize = \"16M\"\n";
    s.insert_str(at, swaps);
    let at = s.find("[[step]]").unwrap();
    s.insert_str(at, "[[step]]\nop = \"memcg\"\nlimit = \"2G\"\n");
    s
}

/// SIGKILL cannot be caught: the supervisor the engine forked before its
/// first change restores the host from the state file once the engine is
/// gone. Killed before, during and after the set-up, the host is back as
/// it was within a second.
#[test]
fn sigkill_at_any_moment_restores_the_host_within_a_second() {
    let _s = serial();
    if skip_unless_root("sigkill_at_any_moment_restores_the_host_within_a_second")
        || skip_unless_memcg_v1("sigkill_at_any_moment_restores_the_host_within_a_second")
        || skip_unless_zram("sigkill_at_any_moment_restores_the_host_within_a_second")
    {
        return;
    }
    let before = quiet(|| (thp_knobs(), host_devices()));
    let scn_dir = TempDir::new("guard-kill-scn");
    let scn = scn_dir.0.join("every.toml");
    std::fs::write(&scn, every_change_scenario()).unwrap();
    for delay_ms in [30, 150, 600, 1500] {
        let work = TempDir::new(&format!("guard-kill-{delay_ms}"));
        let mut child = spawn_testrun(&scn, &work, false);
        std::thread::sleep(Duration::from_millis(delay_ms));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the kill at {delay_ms} ms"
        );
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        // Within a second the supervisor has restored everything.
        let t0 = Instant::now();
        let restored = || (thp_knobs(), host_devices()) == before && work.is_empty();
        while !restored() && t0.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = t0.elapsed();
        let (after, saved) = quiet(|| {
            (
                (thp_knobs(), host_devices()),
                Path::new("/run/foliosim-native.saved").exists(),
            )
        });
        assert_eq!(
            after, before,
            "host not restored after SIGKILL at {delay_ms} ms"
        );
        assert!(
            took < Duration::from_secs(1),
            "restoring after SIGKILL at {delay_ms} ms took {took:?}"
        );
        assert!(work.is_empty(), "files left in {}", work.0.display());
        assert!(
            !saved,
            "the saved state was left after SIGKILL at {delay_ms} ms"
        );
    }
}
