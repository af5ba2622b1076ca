//! A native run killed together with its supervisor leaves the host
//! changed; the next `foliosim` command of any kind (here a simulation)
//! puts it back. A normal native run with block swap leaves the loop
//! device's queue settings as they were. Root only; skips otherwise.
//!
//! An executable of its own, unlike the other command tests: any
//! `foliosim` command restores a stale state, so one running beside these
//! tests would undo the state they look at.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STATE: &str = "/run/foliosim-native.saved";
const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// The two tests change and snapshot the same host state: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

fn skip_unless_root(test: &str) -> bool {
    let root = foliosim_testkit::is_root();
    if !root {
        eprintln!("SKIPPED {test}: needs root (it runs foliosim native)");
    }
    !root
}

/// The selected value of a THP `enabled` file (`always [madvise] never`).
fn selected(path: &str) -> String {
    let text = fs::read_to_string(path).unwrap();
    let start = text.find('[').map_or(0, |i| i + 1);
    let end = text.find(']').unwrap_or(text.len());
    text[start..end].trim().to_string()
}

/// The host state a native run may change: the per-size THP settings,
/// the swap areas and every loop device's queue settings.
fn host() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(THP).unwrap().flatten() {
        let p = e.path().join("enabled");
        if p.exists() {
            out.insert(p.display().to_string(), selected(&p.display().to_string()));
        }
    }
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    out.insert("swaps".into(), swaps);
    for e in fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("loop") {
            for k in ["read_ahead_kb", "rotational"] {
                let v = fs::read_to_string(e.path().join("queue").join(k)).unwrap_or_default();
                out.insert(format!("{name}/{k}"), v.trim().to_string());
            }
        }
    }
    out
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("foliosim-restore-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A scenario that sets the 64 KiB THP knob to something other than the
/// host's, adds a swap device of `swap` kind and works for a long time
/// (`phases` of writing and discarding 256 MiB).
fn scenario(swap: &str, phases: usize) -> String {
    let cur = selected(&format!("{THP}/hugepages-64kB/enabled"));
    let other = ["never", "always", "madvise"]
        .into_iter()
        .find(|v| *v != cur)
        .unwrap();
    let mut s = format!(
        "name = \"restore\"\n[system]\ntransparent_hugepage.hugepages-64kB.enabled = \
         \"{other}\"\n[[system.swap]]\nkind = \"{swap}\"\nsize = \"16M\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"heap\"\nkind = \"anon\"\nsize = \"256M\"\n"
    );
    for i in 0..phases {
        s += &format!("[[step]]\nop = \"phase\"\nname = \"p{i}\"\n");
        s += "[[step]]\nop = \"touch\"\nregion = \"heap\"\naccess = \"write\"\n";
        s += "[[step]]\nop = \"madvise\"\nregion = \"heap\"\nadvice = \"dontneed\"\n";
    }
    s
}

/// The children of `pid` that lead a session of their own: the native
/// engine's supervisor (it calls setsid()).
fn supervisors_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        // state ppid pgrp session
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 3 && f[1] == pid.to_string() && f[3] == child.to_string() {
            out.push(child);
        }
    }
    out
}

fn wait_for(what: &str, limit: Duration, child: &mut Child, ready: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the native run ended before {what}"
        );
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_run_killed_with_its_supervisor_is_restored_by_the_next_command() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if skip_unless_root("a_run_killed_with_its_supervisor_is_restored_by_the_next_command") {
        return;
    }
    let dir = TempDir::new("kill");
    let scn = dir.0.join("s.toml");
    fs::write(&scn, scenario("file", 200)).unwrap();
    let small = dir.0.join("small.toml");
    fs::write(&small, scenario("file", 1)).unwrap();
    let before = host();
    let mut engine = bin()
        .args(["native", "--no-trace"])
        .arg(&scn)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Set up: the state file lists the swap file, which is on.
    wait_for(
        "its swap file",
        Duration::from_secs(60),
        &mut engine,
        || {
            fs::read_to_string(STATE).is_ok_and(|s| s.contains("swapon"))
                && fs::read_to_string("/proc/swaps").is_ok_and(|s| s.contains("foliosim-native-"))
        },
    );
    std::thread::sleep(Duration::from_millis(300));
    let sup = supervisors_of(engine.id());
    assert_eq!(sup.len(), 1, "one supervisor: {sup:?}");
    // Both die at once: the supervisor first, so it cannot react.
    // (the supervisor of the run this test started)
    let killed = Command::new("kill")
        .args(["-KILL", &sup[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    engine.kill().unwrap();
    engine.wait().unwrap();
    let t0 = Instant::now();
    while Path::new(&format!("/proc/{}", sup[0])).exists() && t0.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Nobody has restored anything.
    std::thread::sleep(Duration::from_millis(500));
    let state = fs::read_to_string(STATE).expect("the state file is left");
    assert_ne!(host(), before, "the host was restored without a command");
    let workdir = state
        .lines()
        .find_map(|l| l.strip_prefix("workdir\t"))
        .map(PathBuf::from)
        .expect("the state names the work directory");
    assert!(workdir.exists());
    // Any command puts it back first: a simulation.
    let out = bin().args(["run", "-q"]).arg(&small).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("was killed before restoring the host; restored:"),
        "{err}"
    );
    assert_eq!(host(), before, "not restored; foliosim said: {err}");
    assert!(!Path::new(STATE).exists(), "the state file is left");
    assert!(!workdir.exists(), "{} is left", workdir.display());
    // Nothing left: the next command says nothing about it.
    let out = bin().args(["restore"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("nothing to restore"), "{err}");
}

/// Attaching a loop device sets its read_ahead_kb from the backing file's
/// device (2560 on this host's disk, from 128); a run with block swap
/// puts it back when it detaches a device it did not create.
#[test]
fn block_swap_leaves_the_loop_devices_as_they_were() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if skip_unless_root("block_swap_leaves_the_loop_devices_as_they_were") {
        return;
    }
    if !Path::new("/dev/loop-control").exists() {
        eprintln!("SKIPPED block_swap_leaves_the_loop_devices_as_they_were: no loop driver");
        return;
    }
    let dir = TempDir::new("loop");
    let scn = dir.0.join("s.toml");
    fs::write(&scn, scenario("block", 1)).unwrap();
    let before = host();
    let out = bin()
        .args(["native", "-q", "--no-trace"])
        .arg(&scn)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(host(), before, "{err}");
}
