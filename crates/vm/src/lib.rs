//! The VM engine: a scenario run by the native engine inside a Linux
//! kernel booted in QEMU, for any kernel and architecture.
//!
//! How a run goes:
//! 1. the kernel is found ([`kernel_for`]); the caller (crates/run)
//!    parses the scenario with the guest's architecture, compiles it once,
//!    and adds the series switches the kernel's release contains and the
//!    guest's RAM as `memory` ([`guest_overrides`]);
//! 2. a static foliosim-guest for the guest's architecture is found or
//!    built (`cargo build --profile guest -p foliosim-run --bin
//!    foliosim-guest --target <arch>-unknown-linux-musl`);
//! 3. an initramfs is written (the binary as `/init`, the scenario, the
//!    job) and, when the scenario has files or swap files, an ext4 work
//!    disk (virtio-blk), both in a temporary folder removed on every way
//!    out;
//! 4. QEMU boots the kernel with `-no-reboot` and no network; the guest
//!    runs the scenario with the native engine ([`guest`]) and sends the
//!    report, expectations not judged, on its console ([`wire`]), then
//!    restarts, which ends QEMU;
//! 5. a guest that panics, hangs or stops early is reported with the last
//!    lines of its console.
//!
//! Nothing on the host is changed: THP settings, swap, memory cgroups are
//! the guest's.

#![forbid(unsafe_code)]

pub mod guest;
mod initramfs;
pub mod kernels;
pub mod wire;

use std::collections::VecDeque;
use std::fs;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use foliosim_report::Report;
use foliosim_scenario::{Scenario, Source};
use foliosim_uapi::knobs::{self, Value as KnobValue};
use foliosim_uapi::{series::SWITCHES, Arch, SwapKind};
use foliosim_workload::Workload;
use serde_json::{json, Value};

pub use kernels::KernelImage;

/// `--set`-style (key, value) pairs.
pub type Overrides = Vec<(String, String)>;

/// How to accelerate the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// KVM when the host can run the guest with it, else TCG.
    Auto,
    Kvm,
    Tcg,
}

impl Accel {
    pub const NAMES: [&'static str; 3] = ["auto", "kvm", "tcg"];

    pub fn from_name(s: &str) -> Option<Accel> {
        match s {
            "auto" => Some(Accel::Auto),
            "kvm" => Some(Accel::Kvm),
            "tcg" => Some(Accel::Tcg),
            _ => None,
        }
    }
}

/// How to run in a virtual machine.
#[derive(Clone, Debug)]
pub struct VmOptions {
    /// A kernel name (see [`kernels::resolve`]) or path.
    pub kernel: String,
    /// The guest's architecture, if the user named one (must match the
    /// kernel's).
    pub arch: Option<Arch>,
    /// The whole run (boot, scenario, power-off) must end within this.
    pub timeout: Duration,
    pub accel: Accel,
}

/// Why a guest run produced no report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VmError {
    /// The host cannot run the guest: no QEMU, no such kernel, a kernel
    /// without what the scenario needs, too little memory, a work disk
    /// that cannot be made.
    Host(String),
    /// The guest brought back no result: it panicked, hung, stopped early
    /// or sent something unreadable.
    Guest(String),
    /// The run inside the guest failed; `kind` is the kind the guest named
    /// for it (`killed`, `unsupported`, `host`, ...).
    Run { kind: String, message: String },
}

impl std::fmt::Display for VmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VmError::Host(m) | VmError::Guest(m) => f.write_str(m),
            VmError::Run { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for VmError {}

/// A finished guest run.
#[derive(Debug)]
pub struct VmRun {
    /// The guest's report (engine "vm"), expectations not evaluated.
    pub report: Report,
    pub kernel: KernelImage,
    /// `uname -r` in the guest.
    pub release: String,
    /// "kvm" or "tcg".
    pub accel: &'static str,
    /// Boot, run and power-off.
    pub seconds: f64,
}

/// Set by SIGINT/SIGTERM/SIGHUP while a guest runs: the run stops, QEMU
/// is killed and the temporary files removed.
fn interrupted() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let f = Arc::new(AtomicBool::new(false));
        for sig in [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&f));
        }
        f
    })
    .clone()
}

/// The kernel `opts` names, for a guest of architecture `arch` (the
/// user's `--arch`, else the scenario's) when the name is a bare release;
/// refused when `--arch` names another architecture than the kernel's.
pub fn kernel_for(opts: &VmOptions, arch: Option<Arch>) -> Result<KernelImage, String> {
    let kernel = kernels::resolve(&opts.kernel, arch)?;
    if let Some(a) = opts.arch {
        if a != kernel.arch {
            return Err(format!(
                "--arch {} but kernel {} is for {}",
                a.as_str(),
                kernel.name,
                kernel.arch.as_str()
            ));
        }
    }
    Ok(kernel)
}

/// Make the scenario `sc` describe the guest of `kernel`: `ov` are the
/// overrides it was parsed with (the user's and the kernel's
/// architecture); to them come the series switches the kernel's release
/// contains ([`derive_series`]) and a `memory` for the guest when the
/// scenario leaves it at its default (from its compiled workload `wl`).
/// Each is set in `sc` as well, so that it need not be parsed again.
/// Returns every override (the guest parses the scenario's text with
/// them) and notes.
pub fn guest_overrides(
    sc: &mut Scenario,
    wl: &Workload,
    ov: &[(String, String)],
    kernel: &KernelImage,
) -> (Overrides, Vec<String>) {
    let mut out: Vec<(String, String)> = ov.to_vec();
    out.extend(derive_series(sc, &kernel.release));
    let mut notes = Vec::new();
    if !sc.system.explicit.contains(knobs::MEMORY.key) {
        let mib = guest_memory_mib(sc, wl);
        notes.push(format!(
            "memory is not set: the guest gets {mib} MiB (the working set and room for the \
             kernel); set memory to choose"
        ));
        out.push(derive(
            sc,
            knobs::MEMORY.key.into(),
            format!("{mib}M"),
            KnobValue::Int(mib << 20),
        ));
    }
    (out, notes)
}

/// The series switches a kernel of `release` (`6.18.35`) contains
/// ([`Switch::merged_by`](foliosim_uapi::series::Switch::merged_by)), set
/// on `sc` where the scenario does not set them; returned as overrides.
/// Also what the model runs with beside a guest's run kept earlier.
pub fn derive_series(sc: &mut Scenario, release: &str) -> Overrides {
    let mut out = Vec::new();
    for sw in SWITCHES.iter().filter(|sw| sw.merged_by(release)) {
        let key = format!("series.{}", sw.name);
        if !sc.system.explicit.contains(&key) {
            out.push(derive(sc, key, "1".into(), KnobValue::Flag(true)));
        }
    }
    out
}

/// Set `key` on `sc` to `value` (an engine's own setting), as the
/// override (`key`, `text`).
fn derive(sc: &mut Scenario, key: String, text: String, value: KnobValue) -> (String, String) {
    let stored = sc.system.set(&key, value);
    debug_assert!(stored, "{key}: not a [system] setting");
    (key, text)
}

/// The guest's own memory as the model's machine: its `memory` and the
/// `machine.*` knobs the guest measured before the workload (its report's
/// `system`), set on `sc` where the scenario leaves them at their
/// defaults, so that the model simulates a machine with the guest's free
/// memory and watermarks. (A live run has set `memory` already.)
pub fn adopt_machine(sc: &mut Scenario, guest: &Report) {
    let page = knobs::PAGE_SIZE;
    for knob in [
        knobs::MEMORY,
        knobs::MACHINE_UNMANAGED,
        knobs::MACHINE_BOOT_USED,
        knobs::MACHINE_PCP_LIST,
        knobs::MACHINE_KSWAPD_PCP_LIST,
        knobs::MACHINE_PCP_HIGH,
        knobs::MACHINE_KSWAPD_PCP_HIGH,
        knobs::MACHINE_LOWMEM_RESERVE,
        knobs::MACHINE_MIN_FREE_KBYTES,
        knobs::MACHINE_UNMOVABLE_BLOCKS,
        knobs::MACHINE_RECLAIMABLE_BLOCKS,
        knobs::MACHINE_CMA_BLOCKS,
        knobs::MACHINE_FREE_UNMOVABLE,
        knobs::MACHINE_FREE_RECLAIMABLE,
        knobs::MACHINE_UPTIME_MS,
    ] {
        if sc.system.explicit.contains(knob.key) {
            continue;
        }
        let Some(text) = guest.system.get(knob.key) else {
            continue;
        };
        let Some(v) = knob.parse(text) else {
            continue;
        };
        // The model reserves memory in whole pages.
        let v = match (knob.kind, v) {
            (knobs::Kind::Bytes { .. }, KnobValue::Int(v)) => KnobValue::Int(v / page * page),
            _ => v,
        };
        sc.system.set(knob.key, v);
    }
}

/// The kernel's last console lines a failed guest run kept (`console`
/// in its result), as lines to append to its error; empty if none.
fn console_said(v: &Value) -> String {
    let lines: Vec<&str> = v
        .get("console")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nthe guest kernel's last console lines:\n  {}",
        lines.join("\n  ")
    )
}

/// RAM for a guest whose scenario does not say: the anonymous memory and
/// files it uses, zram's worst case, a quarter more, and 512 MiB for the
/// kernel and the initramfs; at least 1 GiB, in 256 MiB steps.
fn guest_memory_mib(sc: &Scenario, w: &Workload) -> u64 {
    let files: u64 = sc.files.iter().map(|f| f.size).sum();
    let zram: u64 = sc
        .system
        .swap
        .iter()
        .filter(|d| d.kind == SwapKind::Zram)
        .map(|d| d.size)
        .sum();
    let need = (w.anon_bytes + files + zram) >> 20;
    let mib = (need + need / 4 + 512).max(1024);
    mib.div_ceil(256) * 256
}

/// Run the scenario `src` (a file's or standard input's text) in the
/// guest of `kernel` ([`kernel_for`]): `sc` is the scenario parsed with
/// `overrides` ([`guest_overrides`]), `wl` its compiled workload. The
/// guest parses the same text with the same overrides.
pub fn run_workload(
    src: &Source,
    sc: &Scenario,
    wl: &Workload,
    overrides: &[(String, String)],
    kernel: KernelImage,
    opts: &VmOptions,
) -> Result<VmRun, VmError> {
    let out = boot_run(src, sc, wl, overrides, &kernel, opts)?;
    let release = out
        .value
        .get("release")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(e) = out.value.get("error").and_then(Value::as_str) {
        return Err(VmError::Run {
            kind: out
                .value
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("guest")
                .to_string(),
            message: format!(
                "in the guest (Linux {release}): {e}{}",
                console_said(&out.value)
            ),
        });
    }
    let mut report = guest::report_of(&out.value).map_err(VmError::Guest)?;
    report.engine = "vm".into();
    report
        .system
        .insert("vm.kernel".into(), format!("{} ({release})", kernel.name));
    Ok(VmRun {
        report,
        kernel,
        release,
        accel: out.accel,
        seconds: out.seconds,
    })
}

/// What a booted guest sent back, and how it ran.
struct Booted {
    value: Value,
    accel: &'static str,
    seconds: f64,
}

/// Check what the guest needs, write its initramfs and disk, boot it and
/// return what it sent.
fn boot_run(
    src: &Source,
    sc: &Scenario,
    wl: &Workload,
    overrides: &[(String, String)],
    kernel: &KernelImage,
    opts: &VmOptions,
) -> Result<Booted, VmError> {
    let host = VmError::Host;
    let qemu = qemu_binary(kernel.arch).map_err(host)?;
    let total = foliosim_uapi::meminfo::meminfo().total.unwrap_or(0);
    if total > 0 && sc.system.memory > total {
        return Err(VmError::Host(format!(
            "memory = {} MiB is more than this host has ({} MiB): the guest's RAM is the \
             scenario's memory; run with --set memory=SIZE",
            sc.system.memory >> 20,
            total >> 20
        )));
    }
    let needs_disk = needs_disk(sc, wl);
    if needs_disk && kernel.has("VIRTIO_BLK") == Some(false) {
        return Err(VmError::Host(format!(
            "kernel {} has no virtio-blk driver (CONFIG_VIRTIO_BLK), and this scenario needs a \
             disk for its files or swap files; build a kernel with the project's fragment: \
             `foliosim vm kernel build --src LINUX_SOURCE --arch {}`",
            kernel.name,
            kernel.arch.as_str()
        )));
    }
    if uses_madvise(wl) && kernel.has("ADVISE_SYSCALLS") == Some(false) {
        return Err(VmError::Host(format!(
            "kernel {} was built without madvise(2) (CONFIG_ADVISE_SYSCALLS, which tinyconfig \
             leaves out) and this scenario calls it; build a kernel with the project's \
             fragment: `foliosim vm kernel build --src LINUX_SOURCE --arch {}`",
            kernel.name,
            kernel.arch.as_str()
        )));
    }
    let binary = guest_binary(kernel.arch).map_err(host)?;
    let stop = interrupted();
    let work = RunDir::new().map_err(host)?;
    let initrd = work.path().join("initramfs.cpio");
    write_initramfs(&initrd, &binary, src, overrides, needs_disk).map_err(host)?;
    let disk = if needs_disk {
        Some(make_disk(&work.path().join("work.img"), sc).map_err(host)?)
    } else {
        None
    };
    let (accel, accel_note) = choose_accel(opts.accel, kernel.arch);
    if let Some(n) = accel_note {
        foliosim_uapi::note!("foliosim vm: note: {n}");
    }
    let mut cmd = Command::new(&qemu);
    cmd.args(qemu_args(kernel, accel, sc, &initrd, disk.as_deref()));
    let started = Instant::now();
    let value = boot(cmd, kernel, &sc.name, opts.timeout, &stop).map_err(VmError::Guest)?;
    let seconds = started.elapsed().as_secs_f64();
    drop(work);
    Ok(Booted {
        value,
        accel,
        seconds,
    })
}

/// Whether the scenario needs the work disk: files, or swap on a file or
/// a loop device (whose backing file lives there).
fn needs_disk(sc: &Scenario, w: &Workload) -> bool {
    !sc.files.is_empty() || w.maps_files || sc.system.swap.iter().any(|d| d.kind != SwapKind::Zram)
}

/// Whether the compiled workload calls madvise(2) (a step, or advice
/// given with an mmap).
fn uses_madvise(w: &Workload) -> bool {
    use foliosim_workload::Op;
    fn any(ops: &[Op]) -> bool {
        ops.iter().any(|op| match op {
            Op::Madvise { .. } => true,
            Op::Mmap { advise, .. } => !advise.is_empty(),
            Op::Fork { child, .. } => any(child),
            Op::Threads { threads, .. } => threads.iter().any(|t| any(t)),
            _ => false,
        })
    }
    any(&w.root)
}

/// A temporary folder of one guest run, under the cache as
/// `run/vm-<pid>-<n>`, so that one a killed run left is found and removed
/// by the next (its process is gone), while runs of one process (tests,
/// threads) never share one.
struct RunDir(PathBuf);

impl RunDir {
    fn new() -> Result<RunDir, String> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let base = kernels::cache_dir().join("run");
        fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
        if let Ok(rd) = fs::read_dir(&base) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let dead = name
                    .strip_prefix("vm-")
                    .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok())
                    .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
                if dead {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let d = base.join(format!("vm-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        Ok(RunDir(d))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn qemu_binary(arch: Arch) -> Result<PathBuf, String> {
    let (bin, pkg) = match arch {
        Arch::X86_64 => ("qemu-system-x86_64", "qemu-system-x86"),
        Arch::Arm64 => ("qemu-system-aarch64", "qemu-system-arm"),
    };
    which(bin).ok_or_else(|| {
        format!("{bin} is not installed: apt-get install {pkg} (Debian/Ubuntu package)")
    })
}

/// The Rust target of a static foliosim for `arch`.
pub fn guest_target(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64-unknown-linux-musl",
        Arch::Arm64 => "aarch64-unknown-linux-musl",
    }
}

/// A static init for the guest (`foliosim-guest`, or a static `foliosim`):
/// `FOLIOSIM_GUEST_X86_64` / `FOLIOSIM_GUEST_ARM64` if set, else
/// foliosim-guest built from the checkout foliosim was built from (cargo
/// does nothing when it is up to date).
pub fn guest_binary(arch: Arch) -> Result<PathBuf, String> {
    let var = format!("FOLIOSIM_GUEST_{}", arch.as_str().to_uppercase());
    if let Some(p) = std::env::var_os(&var) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{var}={}: no such file", p.display()))
        };
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if !root.join("Cargo.toml").is_file() {
        return Err(format!(
            "no foliosim for the guest: set {var} to a statically linked foliosim-guest built \
             with `cargo build --profile guest -p foliosim-run --bin foliosim-guest --target {}`",
            guest_target(arch)
        ));
    }
    let target = guest_target(arch);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    foliosim_uapi::note!("foliosim vm: building the guest's foliosim ({target}) if it changed");
    let out = Command::new(&cargo)
        .current_dir(&root)
        .args([
            "build",
            "--quiet",
            "--profile",
            "guest",
            "-p",
            "foliosim-run",
            "--bin",
            "foliosim-guest",
            "--target",
            target,
        ])
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("may not be installed") || err.contains("can't find crate for `core`") {
            return Err(format!(
                "the Rust target {target} is missing: rustup target add {target}"
            ));
        }
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        return Err(format!(
            "building the guest's foliosim failed:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let bin = target_dir.join(target).join("guest/foliosim-guest");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("cargo built no {}", bin.display()))
    }
}

fn write_initramfs(
    at: &Path,
    binary: &Path,
    scenario: &Source,
    overrides: &[(String, String)],
    disk: bool,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("writing {}: {e}", at.display());
    let bin = fs::read(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let text = scenario.text.as_bytes();
    let job = json!({
        "label": scenario.label,
        "file": "/foliosim/scenario.toml",
        "overrides": overrides,
        "disk": disk.then_some("/dev/vda"),
    });
    let f = fs::File::create(at).map_err(io)?;
    let mut c = initramfs::Cpio::new(std::io::BufWriter::new(f));
    for d in ["dev", "proc", "sys", "run", "tmp", "work", "foliosim"] {
        c.dir(d).map_err(io)?;
    }
    // The kernel opens /dev/console for init before anything is mounted.
    c.char_dev("dev/console", 0o600, (5, 1)).map_err(io)?;
    c.file("init", 0o755, &bin).map_err(io)?;
    c.file("foliosim/scenario.toml", 0o644, text).map_err(io)?;
    c.file(
        "foliosim/job.json",
        0o644,
        serde_json::to_string(&job)
            .expect("serialisable")
            .as_bytes(),
    )
    .map_err(io)?;
    c.finish().map_err(io)?;
    Ok(())
}

/// An empty ext4 filesystem for the scenario's files and swap files
/// (without a journal: no journal thread writes during a phase; inode
/// tables initialised now, so no lazy-init thread runs in the guest).
fn make_disk(at: &Path, sc: &Scenario) -> Result<PathBuf, String> {
    let files: u64 = sc.files.iter().map(|f| f.size).sum();
    let swap: u64 = sc
        .system
        .swap
        .iter()
        .filter(|d| d.kind != SwapKind::Zram)
        .map(|d| d.size)
        .sum();
    // The native engine keeps a 256 MiB margin free on the work directory.
    let mib = ((files + swap) >> 20) * 11 / 10 + 384;
    let f = fs::File::create(at).map_err(|e| format!("{}: {e}", at.display()))?;
    f.set_len(mib << 20)
        .map_err(|e| format!("{}: {e}", at.display()))?;
    drop(f);
    let mkfs = which("mkfs.ext4")
        .or_else(|| {
            ["/sbin/mkfs.ext4", "/usr/sbin/mkfs.ext4"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .ok_or("mkfs.ext4 is not installed: apt-get install e2fsprogs")?;
    let out = Command::new(mkfs)
        .args([
            "-q",
            "-F",
            "-b",
            "4096",
            "-O",
            "^has_journal",
            "-E",
            "lazy_itable_init=0,nodiscard",
        ])
        .arg(at)
        .output()
        .map_err(|e| format!("mkfs.ext4: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mkfs.ext4 of the work disk failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(at.to_path_buf())
}

/// The accelerator a guest of `arch` runs with under `want`: `kvm` or
/// `tcg` (see `choose_accel()`).
pub fn accelerator(want: Accel, arch: Arch) -> &'static str {
    choose_accel(want, arch).0
}

/// The accelerator: KVM when asked or when it can run this guest (same
/// architecture, /dev/kvm usable, not the kvm_pvm module, which runs only
/// paravirtualised guests), else TCG; with a note when auto falls back.
fn choose_accel(want: Accel, arch: Arch) -> (&'static str, Option<String>) {
    let host = match std::env::consts::ARCH {
        "x86_64" => Some(Arch::X86_64),
        "aarch64" => Some(Arch::Arm64),
        _ => None,
    };
    match want {
        Accel::Tcg => ("tcg", None),
        Accel::Kvm => ("kvm", None),
        Accel::Auto => {
            if host != Some(arch) {
                return ("tcg", None);
            }
            let usable = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/kvm")
                .is_ok();
            if !usable {
                ("tcg", Some("/dev/kvm is not usable here: the guest runs under TCG (slower, same counts)".into()))
            } else if Path::new("/sys/module/kvm_pvm").exists() {
                ("tcg", Some("/dev/kvm is served by kvm_pvm, which cannot run a standard guest: the guest runs under TCG (slower, same counts)".into()))
            } else {
                ("kvm", None)
            }
        }
    }
}

fn qemu_args(
    k: &KernelImage,
    accel: &str,
    sc: &Scenario,
    initrd: &Path,
    disk: Option<&Path>,
) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let s = |v: &str| v.to_string();
    let (console, cpu) = match (k.arch, accel) {
        // 4-level paging as on the reference host and in the model.
        (Arch::X86_64, "kvm") => ("ttyS0", "host"),
        (Arch::X86_64, _) => ("ttyS0", "max,la57=off"),
        (Arch::Arm64, "kvm") => ("ttyAMA0", "host"),
        (Arch::Arm64, _) => ("ttyAMA0", "max"),
    };
    if k.arch == Arch::Arm64 {
        a.extend([s("-M"), s("virt")]);
    }
    a.extend([
        s("-accel"),
        s(accel),
        s("-cpu"),
        s(cpu),
        s("-m"),
        format!("{}M", sc.system.memory >> 20),
        s("-smp"),
        sc.system.cpus.to_string(),
        s("-nodefaults"),
        s("-no-user-config"),
        s("-display"),
        s("none"),
        s("-serial"),
        s("stdio"),
        s("-net"),
        s("none"),
        s("-no-reboot"),
        s("-kernel"),
        k.image.display().to_string(),
        s("-initrd"),
        initrd.display().to_string(),
        s("-append"),
        // rootfstype=ramfs: the initramfs is unpacked into ramfs, not
        // tmpfs (init_rootfs(), init/do_mounts.c, picks tmpfs when no
        // root= is given), so the runner's own binary and files are
        // unevictable: under global pressure reclaim neither scans nor
        // swaps them, and the runner takes no major faults on its text.
        format!("console={console} panic=-1 loglevel=4 rdinit=/init rootfstype=ramfs"),
    ]);
    if let Some(d) = disk {
        a.extend([
            s("-drive"),
            format!(
                "file={},format=raw,if=none,id=work,cache=unsafe",
                d.display()
            ),
            s("-device"),
            s("virtio-blk-pci,drive=work"),
        ]);
    }
    a
}

/// Boot, follow the console until the result arrives, and return it.
fn boot(
    mut cmd: Command,
    k: &KernelImage,
    scenario: &str,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Value, String> {
    use std::os::unix::process::CommandExt as _;
    // Its own process group: a Ctrl-C reaches foliosim, which stops QEMU
    // and removes the temporary files.
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {:?}: {e}", cmd.get_program()))?;
    let (rx, reader) = read_lines(child.stdout.take().expect("piped"));
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .expect("a valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar.set_message(format!("vm {}: booting", k.name));
    let deadline = Instant::now() + timeout;
    let mut console = Console {
        k,
        scenario,
        bar: &bar,
        tail: VecDeque::new(),
        data: String::new(),
        result: None,
    };
    let why_stopped = console.follow(&rx, deadline, timeout, stop);
    bar.finish_and_clear();
    // The guest restarts after its result, which ends QEMU; give it a
    // moment, then stop it.
    let grace = Duration::from_secs(if console.result.is_some() { 10 } else { 0 });
    stop_within(&mut child, grace);
    let qemu_err = err_reader.join().unwrap_or_default();
    drop(rx);
    let _ = reader.join();
    if let Some(r) = console.result {
        // A run the guest reports as failed: keep what the kernel said on
        // its console (an OOM kill, a warning) for the error.
        return r.map(|mut v| {
            if v.get("error").is_some() {
                let said: Vec<Value> = console
                    .tail
                    .iter()
                    .filter(|l| !l.trim().is_empty() && !l.starts_with("foliosim"))
                    .map(|l| Value::String(l.trim_end().to_string()))
                    .collect();
                if let Some(o) = v.as_object_mut() {
                    o.insert("console".into(), Value::Array(said));
                }
            }
            v
        });
    }
    Err(no_result(k, why_stopped, console.tail, &qemu_err))
}

/// A thread sending each line of `stdout` (lossily UTF-8), then None at
/// its end.
fn read_lines(
    stdout: std::process::ChildStdout,
) -> (mpsc::Receiver<Option<String>>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<Option<String>>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx
                        .send(Some(String::from_utf8_lossy(&buf).into_owned()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(None);
    });
    (rx, reader)
}

/// The guest's console as the host follows it.
struct Console<'a> {
    k: &'a KernelImage,
    scenario: &'a str,
    bar: &'a indicatif::ProgressBar,
    /// The last 30 plain console lines.
    tail: VecDeque<String>,
    /// The result's encoded data so far.
    data: String,
    result: Option<Result<Value, String>>,
}

impl Console<'_> {
    /// Read lines until the result arrives, the console ends, `stop` is
    /// set or `deadline` passes; why it stopped without a result, if
    /// interrupted or late.
    fn follow(
        &mut self,
        rx: &mpsc::Receiver<Option<String>>,
        deadline: Instant,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Option<String> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Some("interrupted".to_string());
            }
            if Instant::now() > deadline {
                return Some(format!(
                    "the guest did not finish within {} s (a hang, or a run too long for \
                     --timeout)",
                    timeout.as_secs()
                ));
            }
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(Some(line)) => self.line(&line),
                Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if self.result.is_some() {
                return None;
            }
        }
    }

    /// One console line: a status, part of the result, or guest output.
    fn line(&mut self, line: &str) {
        let k = self.k;
        match wire::parse(line) {
            wire::Line::Status(st) => {
                let what = match st {
                    "booted" => format!("vm {}: booted", k.name),
                    "running" => format!("vm {}: running {}", k.name, self.scenario),
                    other => format!("vm {}: {other}", k.name),
                };
                self.bar.set_message(what);
            }
            wire::Line::Data(d) => self.data.push_str(d),
            wire::Line::End { len, crc } => {
                self.result = Some(wire::decode(&self.data, len, crc).and_then(|b| {
                    serde_json::from_slice(&b)
                        .map_err(|e| format!("the guest's result is not JSON: {e}"))
                }));
            }
            wire::Line::Console(text) => {
                if text.starts_with("foliosim") {
                    self.bar.suspend(|| eprintln!("guest: {text}"));
                }
                if self.tail.len() == 30 {
                    self.tail.pop_front();
                }
                self.tail.push_back(text.to_string());
            }
        }
    }
}

/// Wait up to `grace` for QEMU to exit, then kill it.
fn stop_within(child: &mut std::process::Child, grace: Duration) {
    let end = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
}

/// The error of a boot that brought no result: why, what QEMU said and
/// the last console lines.
fn no_result(
    k: &KernelImage,
    why_stopped: Option<String>,
    tail: VecDeque<String>,
    qemu_err: &str,
) -> String {
    let last: Vec<String> = tail.into_iter().filter(|l| !l.trim().is_empty()).collect();
    let console = if last.is_empty() {
        "(the console stayed empty)".to_string()
    } else {
        last.join("\n  ")
    };
    let why = why_stopped.unwrap_or_else(|| "the guest stopped without a result".into());
    let qemu = qemu_err.trim();
    format!(
        "vm {}: {why}{}\nlast console lines:\n  {console}",
        k.name,
        if qemu.is_empty() {
            String::new()
        } else {
            format!("\nQEMU said: {qemu}")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest's measured machine goes into the scenario the model runs,
    /// except where the scenario chose: unmanaged memory rounded down to
    /// whole pages.
    #[test]
    fn the_guest_machine_becomes_the_models() {
        let text = "[system]\nmemory = \"1G\"\nmachine.min_free_kbytes = 4096\n";
        let mut sc = foliosim_scenario::parse_str("s.toml", text, &[]).unwrap();
        let mut guest = Report {
            scenario: "s".into(),
            arch: "x86_64".into(),
            engine: "native".into(),
            provenance: None,
            system: Default::default(),
            phases: Vec::new(),
            expectations: Vec::new(),
        };
        for (k, v) in [
            ("machine.unmanaged", "32493569"),
            ("machine.boot_used", "21807104"),
            ("machine.min_free_kbytes", "3964"),
            ("machine.unmovable_blocks", "11"),
            ("machine.free_unmovable", "0 1 0 0 1 1 1 1 1 1 0"),
        ] {
            guest.system.insert(k.into(), v.into());
        }
        adopt_machine(&mut sc, &guest);
        assert_eq!(sc.system.machine_unmanaged, 32_493_568);
        assert_eq!(sc.system.machine_boot_used, 21_807_104);
        assert_eq!(sc.system.machine_min_free_kbytes, 4096);
        assert_eq!(sc.system.machine_unmovable_blocks, 11);
        assert_eq!(
            sc.system.machine_free_unmovable.0,
            [0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0]
        );
    }

    #[test]
    fn run_folders_are_private_and_removed() {
        let (a, b) = (RunDir::new().unwrap(), RunDir::new().unwrap());
        assert_ne!(a.path(), b.path());
        let (pa, pb) = (a.path().to_path_buf(), b.path().to_path_buf());
        fs::write(pa.join("x"), b"x").unwrap();
        drop(a);
        assert!(!pa.exists());
        assert!(pb.exists());
        drop(b);
        assert!(!pb.exists());
        // A folder of a process that is gone is removed by the next run.
        let stale = kernels::cache_dir().join("run/vm-999999999-0");
        fs::create_dir_all(&stale).unwrap();
        let c = RunDir::new().unwrap();
        assert!(!stale.exists());
        drop(c);
    }
}
