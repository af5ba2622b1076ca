//! Helpers shared by the native engine's tests.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

pub const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// Held while a test uses the host; see [`serial`].
pub struct Serial {
    _file: Option<fs::File>,
    _inproc: MutexGuard<'static, ()>,
}

/// Tests change global host state and compare it before and after: run
/// them one at a time, in this process (a mutex) and across processes (an
/// flock on /run/foliosim-native-tests.lock, so that two `cargo test`
/// runs at once, or the test binaries of two checkouts, do not see each
/// other's swap devices and cgroups).
pub fn serial() -> Serial {
    static M: Mutex<()> = Mutex::new(());
    let inproc = M.lock().unwrap_or_else(|p| p.into_inner());
    Serial {
        _file: lock_exclusive("/run/foliosim-native-tests.lock"),
        _inproc: inproc,
    }
}

/// Open (creating it) the lock file `path` and wait for an exclusive
/// flock on it, held until the returned file is closed. `None` when the
/// file cannot be opened (no lock is taken then).
fn lock_exclusive(path: &str) -> Option<fs::File> {
    use std::os::fd::AsRawFd;
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok();
    if let Some(f) = &file {
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
    }
    file
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Skip (return true) with a message when the test cannot run here.
pub fn skip_unless_root(test: &str) -> bool {
    if !is_root() {
        eprintln!("SKIPPED {test}: needs root (run the tests as root to exercise the host)");
        return true;
    }
    if !Path::new(THP).join("enabled").exists() {
        eprintln!("SKIPPED {test}: no {THP} (kernel without transparent hugepages)");
        return true;
    }
    false
}

/// Every `enabled` / `use_zero_page` knob under the THP directory, with
/// its raw contents.
pub fn thp_knobs() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut add = |p: PathBuf| {
        if let Ok(v) = fs::read_to_string(&p) {
            out.insert(p.display().to_string(), v);
        }
    };
    add(Path::new(THP).join("enabled"));
    add(Path::new(THP).join("use_zero_page"));
    for e in fs::read_dir(THP).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("hugepages-") {
            add(e.path().join("enabled"));
        }
    }
    out
}

/// The bracketed word of a knob's contents.
pub fn word(contents: &str) -> &str {
    let t = contents.trim();
    match (t.find('['), t.find(']')) {
        (Some(a), Some(b)) if a < b => &t[a + 1..b],
        _ => t,
    }
}

/// read_ahead_kb of the device holding `dir`.
pub fn read_ahead_kb(dir: &Path) -> Option<u64> {
    queue_attr(dir, "read_ahead_kb")
}

/// The request-queue attribute `attr` of the device holding `dir`.
pub fn queue_attr(dir: &Path, attr: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = fs::metadata(dir).ok()?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let base = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    [
        base.join("queue").join(attr),
        base.join("../queue").join(attr),
    ]
    .iter()
    .find_map(|p| fs::read_to_string(p).ok()?.trim().parse().ok())
}

/// A fresh, empty directory under /var/tmp, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = PathBuf::from(format!(
            "/var/tmp/foliosim-native-test-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn is_empty(&self) -> bool {
        fs::read_dir(&self.0).unwrap().next().is_none()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub fn scenario(text: &str) -> foliosim_scenario::Scenario {
    foliosim_scenario::parse_str("test.toml", text, &[]).expect("a valid scenario")
}

/// What a run may create on the host and must remove: the swap areas,
/// the block devices (loop and zram), the attached loop devices with their
/// backing files, and every memory cgroup directory (cgroup v1 hierarchy,
/// recursively).
#[derive(Debug, PartialEq, Eq)]
pub struct HostDevices {
    pub swaps: Vec<String>,
    pub block: Vec<String>,
    pub loops: Vec<(String, String)>,
    pub memcgs: Vec<String>,
}

pub fn host_devices() -> HostDevices {
    let swaps = fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let mut block: Vec<String> = fs::read_dir("/sys/block")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("loop") || n.starts_with("zram"))
                .collect()
        })
        .unwrap_or_default();
    block.sort();
    let loops = block
        .iter()
        .filter_map(|n| {
            let b = fs::read_to_string(format!("/sys/block/{n}/loop/backing_file")).ok()?;
            Some((n.clone(), b.trim().to_string()))
        })
        .collect();
    fn walk(dir: &Path, out: &mut Vec<String>) {
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    out.push(e.path().display().to_string());
                    walk(&e.path(), out);
                }
            }
        }
    }
    let mut memcgs = Vec::new();
    for root in ["/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"] {
        walk(Path::new(root), &mut memcgs);
    }
    memcgs.sort();
    HostDevices {
        swaps,
        block,
        loops,
        memcgs,
    }
}

/// Skip (return true) unless the host has a cgroup v1 memory hierarchy.
pub fn skip_unless_memcg_v1(test: &str) -> bool {
    let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let v1 = own.lines().any(|l| {
        l.split(':')
            .nth(1)
            .is_some_and(|c| c.split(',').any(|c| c == "memory"))
    });
    if !v1 {
        eprintln!("SKIPPED {test}: no cgroup v1 memory controller on this host");
    }
    !v1
}

/// Skip (return true) unless zram can be used (built in or loaded).
pub fn skip_unless_zram(test: &str) -> bool {
    if !Path::new("/sys/class/zram-control").exists() {
        eprintln!("SKIPPED {test}: no /sys/class/zram-control (zram not loaded)");
        return true;
    }
    false
}

/// Run `f` while no native run is in progress on the host (holding the
/// engine's own run lock, /run/foliosim-native.lock): a run that another
/// process (a `foliosim native` or `compare` someone runs meanwhile)
/// started has then put everything back. Never call a native run inside.
pub fn quiet<T>(f: impl FnOnce() -> T) -> T {
    let file = lock_exclusive("/run/foliosim-native.lock");
    let out = f();
    drop(file); // closing the descriptor releases the lock
    out
}

/// The host's devices and cgroups, and whether a run's saved state is
/// left, while no native run is in progress.
pub fn quiet_host_devices() -> (HostDevices, bool) {
    quiet(|| {
        (
            host_devices(),
            Path::new("/run/foliosim-native.saved").exists(),
        )
    })
}

/// The `scenarios/corpus/*.toml` files whose name starts with `prefix`,
/// sorted.
pub fn corpus_files(prefix: &str) -> Vec<PathBuf> {
    scenario_files("corpus", prefix)
}

/// Every scenario file in `scenarios/<dir>/` whose name starts with
/// `prefix`, and every recording there (a `*.rec` directory, read as its
/// replay scenario), sorted.
pub fn scenario_files(dir: &str, prefix: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(prefix)
                    && (n.ends_with(".toml")
                        || (n.ends_with(".rec") && foliosim_recording::is_recording(p)))
            })
        })
        .collect();
    files.sort();
    files
}

/// Every folder under `scenarios/`, sorted (corpus, calibrate, seeds).
pub fn scenario_dirs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut dirs: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // scenarios/guest/ sets knobs only a guest kernel can (debugfs's
        // fault_around_bytes); the VM engine's tests run it.
        .filter(|d| d != "guest")
        .collect();
    dirs.sort();
    dirs
}

/// `path` loaded with the probed host's value for every `[system]` knob
/// the scenario leaves at its default (`probe` output fed back into the
/// simulation), probing with scratch files under `workdir`.
pub fn load_with_host_knobs(path: &Path, workdir: &Path) -> foliosim_scenario::Scenario {
    let sc = foliosim_scenario::load(path, &[]).expect("scenario parses");
    let host: Vec<(String, String)> = foliosim_native::probe_overrides(workdir)
        .into_iter()
        .filter(|(k, _)| !sc.system.explicit.contains(k))
        .collect();
    foliosim_scenario::load(path, &host).expect("scenario parses with the host's knobs")
}

/// Give the host back large free blocks before a run that needs them:
/// write back and drop the clean page cache (`drop_caches`), then compact
/// every zone (`compact_memory`). Both are one-shot actions, not settings:
/// nothing is left to restore. After builds and other tests the free
/// memory of this machine is often fragmented, and then 16 KiB to 2 MiB
/// anonymous folios fall back to order 0 and kswapd reclaims during the
/// measured phase (observed: 95 of 128 PMD THPs and 1,348 of 4,096 64 KiB
/// folios falling back right after a workspace build).
pub fn defragment_host() {
    let _ = std::process::Command::new("sync").status();
    for (knob, value) in [
        ("/proc/sys/vm/drop_caches", "3"),
        ("/proc/sys/vm/compact_memory", "1"),
    ] {
        if let Err(e) = std::fs::write(knob, value) {
            eprintln!("note: cannot write {knob}: {e}");
        }
    }
}

/// Start the test helper (`foliosim-native-testrun`) on the scenario file
/// `scenario` with `work` as its work directory; its standard error goes
/// to ours when `stderr` is true.
pub fn spawn_testrun(scenario: &Path, work: &TempDir, stderr: bool) -> std::process::Child {
    let err = if stderr {
        std::process::Stdio::inherit()
    } else {
        std::process::Stdio::null()
    };
    // With SIGINT and SIGTERM at their defaults, as from an interactive
    // shell: a background job of a script (CI started that way) inherits
    // SIGINT ignored, and the engine rightly keeps ignoring it. `env`
    // (coreutils) restores the default and execs the helper, same pid.
    std::process::Command::new("env")
        .arg("--default-signal=INT,TERM")
        .arg(env!("CARGO_BIN_EXE_foliosim-native-testrun"))
        .arg(scenario)
        .arg(&work.0)
        .stdout(std::process::Stdio::null())
        .stderr(err)
        .spawn()
        .expect("the test helper starts")
}

/// Poll every 5 ms until `ready()`; panics with `what()` after `limit`, or
/// when the child ends first.
pub fn wait_until(
    child: &mut std::process::Child,
    limit: std::time::Duration,
    mut ready: impl FnMut() -> bool,
    what: impl Fn() -> String,
) {
    let t0 = std::time::Instant::now();
    while !ready() {
        assert!(t0.elapsed() < limit, "{}", what());
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the run ended early: {st:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// After `settle` the child must still be running (a signal sent next
/// lands in the middle of its work).
pub fn assert_running_after(child: &mut std::process::Child, settle: std::time::Duration) {
    std::thread::sleep(settle);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before the signal: make the scenario longer"
    );
}

/// Assert that a run ended by a signal put the host back: `after` (the
/// state `what` and whether a saved state is left, read while no run is
/// in progress) matches `before`, and `work` is empty.
#[track_caller]
pub fn assert_restored<T: PartialEq + std::fmt::Debug>(
    (after, saved): (T, bool),
    before: &T,
    work: &TempDir,
    what: &str,
) {
    assert_eq!(&after, before, "{what} not restored");
    assert!(work.is_empty(), "files left in {}", work.0.display());
    assert!(!saved, "the run's saved state was left ({what})");
}

/// `n` phases "p0", "p1", ..., each a write touch of the region `heap`
/// and a madvise of it with `advice`: scenario steps that keep a run busy.
pub fn busy_phases(n: usize, advice: &str) -> String {
    let mut s = String::new();
    for i in 0..n {
        s += &format!("[[step]]\nop = \"phase\"\nname = \"p{i}\"\n");
        s += "[[step]]\nop = \"touch\"\nregion = \"heap\"\naccess = \"write\"\n";
        s += &format!("[[step]]\nop = \"madvise\"\nregion = \"heap\"\nadvice = \"{advice}\"\n");
    }
    s
}

/// Send `sig` to the child and wait up to `limit` for it to end
/// ([`wait_exit`]); assert that the signal ended it.
pub fn signal_and_wait(child: &mut std::process::Child, sig: i32, limit: std::time::Duration) {
    use std::os::unix::process::ExitStatusExt;
    // SAFETY: kill has no memory-safety preconditions; the pid is our child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = wait_exit(child, limit);
    assert_eq!(status.signal(), Some(sig), "{status:?}");
}

/// Wait up to `limit` for the child to end after a signal; kill it and
/// panic after that.
pub fn wait_exit(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::process::ExitStatus {
    let t1 = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t1.elapsed() > limit {
            let _ = child.kill();
            panic!("the run did not end after the signal");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The native engine on `sc` as `foliosim native` runs it: compiled with
/// the model's placement, expectations judged.
pub fn run(
    sc: &foliosim_scenario::Scenario,
    opts: &foliosim_native::NativeOptions,
) -> Result<foliosim_report::Report, foliosim_native::NativeError> {
    let wl = foliosim_sim::compile(sc).map_err(|e| foliosim_native::NativeError::Unsupported {
        at: e.at,
        what: e.what,
    })?;
    let mut r = foliosim_native::run_workload(sc, &wl, opts)?;
    r.evaluate(&sc.expects);
    Ok(r)
}
