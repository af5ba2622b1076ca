//! The native engine: runs a scenario on the host kernel with real system
//! calls and reports the same phases, counters and folio histograms as the
//! simulator, from /proc/vmstat, the per-size mTHP stats, getrusage-style
//! per-process fault counts, perf tracepoint counters and
//! /proc/PID/pagemap + /proc/kpageflags.
//!
//! How a run goes (docs/fidelity.md, "Host behaviours", says why):
//! 1. everything that can be checked without touching the host is checked
//!    (architecture, knobs the host cannot set, unsupported steps);
//! 2. a guard records every THP knob before setting the scenario's values,
//!    and everything the run creates on the host (swap devices, loop and
//!    zram devices, memory cgroups), and restores or removes them on every
//!    way out (return, error, panic, SIGINT / SIGTERM / SIGHUP / SIGQUIT,
//!    and after SIGKILL on the next run);
//! 3. a fresh work directory is made; the scenario's swap devices are
//!    created and enabled (swap files and loop backing files live in the
//!    work directory); the files are created there and their page cache
//!    filled as the scenario says;
//! 4. the memory cgroups of `memcg` steps are created (afresh for each
//!    attempt), the workload moving itself in at its step;
//! 5. the workload is forked pinned to one CPU and runs the steps in the
//!    simulator's order; at each phase marker it stops while the engine
//!    reads the counters and the folio histograms;
//! 6. a run whose warm page cache was evicted during a measured phase is
//!    rebuilt and run again (up to three times), and says so.
//!
//! All `unsafe` of the project lives in this crate; every block says why it
//! is sound.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod census;
mod engine;
mod files;
mod guard;
pub mod guest;
mod histogram;
mod host;
mod knobs;
mod memcg;
mod pagemap;
mod perf;
mod probe;
mod protocol;
pub mod record;
mod swapdev;
mod sys;
mod threads;
mod workload;
mod writetrack;

pub use guard::Recovery;
pub use probe::{probe, probe_overrides, probed_in};
pub use sys::{route_terminal_signals, with_signals_blocked};

use std::ffi::CString;
use std::fmt;
use std::path::{Path, PathBuf};

use foliosim_report::Report;
use foliosim_scenario::{Arch, Scenario};
use foliosim_workload::Workload;

/// How to run natively.
#[derive(Clone, Debug)]
pub struct NativeOptions {
    /// Where the scenario's files are created: a fresh directory is made
    /// inside it for each run and removed at the end. Default: /var/tmp
    /// (on the disk, unlike /tmp on some systems, so that `read_ahead_kb`
    /// and page-cache behaviour are those of a real block device).
    pub workdir: PathBuf,
    /// Count the tracepoints (`tlb:tlb_flush`, `kmem:mm_page_alloc/...`,
    /// ...) with perf during the run. Default: on. Every hit of a counted
    /// tracepoint runs perf's handler and its filters in the workload's
    /// context (about 0.5 µs per `tlb:tlb_flush`, which has seven counters,
    /// on this VM), so timing runs
    /// that want the kernel's own cost (`foliosim calibrate`) turn it off;
    /// the tracepoint counters are then reported missing.
    pub trace: bool,
    /// The run is the whole machine: a guest that `foliosim vm` booted
    /// with the scenario's `memory` as its RAM (no note that `memory` is
    /// only a simulator knob).
    pub guest: bool,
}

impl Default for NativeOptions {
    fn default() -> Self {
        NativeOptions {
            workdir: PathBuf::from("/var/tmp"),
            trace: true,
            guest: false,
        }
    }
}

/// Why a native run did not produce a report.
#[derive(Debug)]
pub enum NativeError {
    /// The host cannot run this scenario as written (no root, a missing
    /// kernel feature, a knob that cannot be set, another architecture),
    /// or the run was interrupted. Says what.
    Refused(String),
    /// A step the native engine does not support.
    Unsupported { at: String, what: String },
    /// A system call or file operation of the engine failed.
    Io { at: String, what: String },
    /// The workload ended as the kernel ended it: a signal (SIGSEGV,
    /// SIGBUS, an OOM kill) or a failed system call of a step.
    Killed { at: String, what: String },
    /// Host settings changed during the run (someone else changed THP
    /// settings or swap), so its system-wide counters mean nothing.
    Changed(String),
}

impl fmt::Display for NativeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NativeError::Refused(why) => write!(f, "native run refused: {why}"),
            NativeError::Unsupported { at, what } => {
                write!(f, "{at}: not supported by the native engine: {what}")
            }
            NativeError::Io { at, what } | NativeError::Killed { at, what } => {
                write!(f, "{at}: {what}")
            }
            NativeError::Changed(what) => write!(
                f,
                "host settings changed during the native run, the run is discarded: {what}"
            ),
        }
    }
}

impl std::error::Error for NativeError {}

/// Counters the simulator reports under kernel names that the host should
/// provide too (some of `VmEvent` in crates/uapi/src/vmstat.rs); any the host
/// lacks is listed as missing, never reported as zero.
const EXPECTED_VMSTAT: [&str; 26] = [
    "pgfault",
    "pgmajfault",
    "pgreuse",
    "thp_fault_alloc",
    "thp_fault_fallback",
    "thp_fault_fallback_charge",
    "thp_file_mapped",
    "thp_split_pmd",
    "thp_deferred_split_page",
    "thp_zero_page_alloc",
    "thp_zero_page_alloc_failed",
    "pgalloc_normal",
    "pgfree",
    "pswpin",
    "pswpout",
    "swpin_zero",
    "swpout_zero",
    "thp_swpout",
    "thp_swpout_fallback",
    "thp_split_page",
    "pgsteal_anon",
    "pgsteal_file",
    "pgscan_anon",
    "pgscan_file",
    "pgactivate",
    "pglazyfreed",
];
const EXPECTED_MTHP: [&str; 8] = [
    "anon_fault_alloc",
    "anon_fault_fallback",
    "anon_fault_fallback_charge",
    "split_deferred",
    "swpout",
    "swpout_fallback",
    "swpin",
    "split",
];

/// What the checks found.
struct Preflight {
    /// Where the memory cgroups of memcg steps go (None: no memcg step).
    memcg: Option<memcg::Hierarchy>,
    notes: Vec<String>,
    /// The workload's CPU and its scenario threads' CPUs.
    cpus: (usize, Vec<usize>),
    /// Knobs a guest sets that a host run only checks (read_ahead_kb,
    /// max_sectors_kb).
    guest_writes: Vec<(PathBuf, String)>,
}

/// The checks that need nothing from the host but reading it.
fn preflight(sc: &Scenario, p: &Workload, opts: &NativeOptions) -> Result<Preflight, NativeError> {
    check_arch(sc)?;
    knobs::check_host_knobs(sc, opts.guest)?;
    check_series(sc)?;
    let cpus = host_cpus(p)?;
    let mut notes = Vec::new();
    let memcg = match memcg::preflight(p)? {
        Some((h, n)) => {
            notes.extend(n);
            Some(h)
        }
        None => None,
    };
    notes.extend(swapdev::preflight(&sc.system.swap, &opts.workdir)?);
    let mut guest_writes = Vec::new();
    if !sc.files.is_empty() || p.maps_files {
        let dir = if opts.workdir.exists() {
            opts.workdir.clone()
        } else {
            opts.workdir
                .ancestors()
                .find(|a| a.exists())
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
        };
        // The device's largest request matters to MADV_WILLNEED of a file
        // mapping and to a read(2) larger than the readahead window
        // (`ractl_max_pages()`).
        let big_reads = p.max_read_pages > sc.system.read_ahead_kb / 4;
        let max_sectors = if p.willneed_files || big_reads {
            knobs::check_max_sectors(sc, &dir, opts.guest, &mut notes)?
        } else {
            None
        };
        // A max_sectors_kb write recomputes the device's readahead
        // (blk_apply_bdi_limits() never lowers it, and raises it to twice
        // the largest request on a rotational device): the readahead is
        // written after it, even when it had the value.
        let read_ahead =
            knobs::check_read_ahead(sc, &dir, opts.guest, max_sectors.is_some(), &mut notes)?;
        guest_writes.extend(max_sectors);
        guest_writes.extend(read_ahead);
    }
    check_memory(sc, opts, p, &mut notes)?;
    Ok(Preflight {
        memcg,
        notes,
        cpus,
        guest_writes,
    })
}

/// A native run measures the host's own architecture.
fn check_arch(sc: &Scenario) -> Result<(), NativeError> {
    if Arch::from_name(&sys::machine()) == Some(sc.system.arch) {
        return Ok(());
    }
    Err(NativeError::Refused(format!(
        "the scenario is for arch = {} but this host is {}; a native run measures the host's \
         own architecture (use `foliosim run --arch {}` to simulate it)",
        sc.system.arch.as_str(),
        sys::machine(),
        sc.system.arch.as_str()
    )))
}

/// The series switches describe the kernel: one that is on must be in the
/// running kernel's release, one that is off must not be (vanilla 6.18 has
/// none, Linux 7.0 contains seed 002).
fn check_series(sc: &Scenario) -> Result<(), NativeError> {
    let release = guest::kernel_release();
    for (switch, on) in sc.system.series.iter() {
        let key = format!("series.{}", switch.name);
        let merged = switch.merged_by(&release);
        if on && !merged {
            return Err(NativeError::Refused(format!(
                "{key} = 1 models a kernel change this kernel (Linux {release}) does not \
                 have; a native run measures the kernel as it is: run it with --set {key}=0, \
                 or simulate the switch with `foliosim run`"
            )));
        }
        if !on && merged {
            return Err(NativeError::Refused(format!(
                "{key} = 0 but this kernel (Linux {release}) contains the change (merged in \
                 {}): run it with --set {key}=1",
                switch.merged_in.unwrap_or("?")
            )));
        }
    }
    Ok(())
}

/// `memory` is the simulator's: natively the host's memory is used (a
/// note), and a scenario needing more than the host has available is
/// refused. A guest's RAM is the scenario's memory: running short is what
/// the scenario asks for (global reclaim), not a host to protect.
fn check_memory(
    sc: &Scenario,
    opts: &NativeOptions,
    p: &Workload,
    notes: &mut Vec<String>,
) -> Result<(), NativeError> {
    if opts.guest {
        return Ok(());
    }
    let (total, avail) = host::meminfo();
    notes.push(format!(
        "memory = {} MiB is a simulator knob; natively the host's memory is used ({} MiB, {} MiB \
         available)",
        sc.system.memory >> 20,
        total >> 20,
        avail >> 20
    ));
    let needed = p.anon_bytes + sc.files.iter().map(|f| f.size).sum::<u64>();
    if avail > 0 && needed > avail {
        return Err(NativeError::Refused(format!(
            "the scenario needs about {} MiB of memory (anonymous mappings and page cache) but \
             the host has {} MiB available",
            needed >> 20,
            avail >> 20
        )));
    }
    check_swap_memory(&sc.system.swap, needed, (total, avail))
}

/// Host memory the kernel keeps for a swap area of `size` bytes while it
/// is on, used or not: per slot the swap map (1 byte, `swap_map` of
/// setup_swap_map_and_extents()), the swap cgroup ids (2), the zero-page
/// bitmap and the cluster array (32 bytes per 512 slots), rounded up to
/// 8; a zram device adds its table (`struct zram_table_entry`, 16 bytes
/// per page, 24 with CONFIG_ZRAM_TRACK_ENTRY_ACTIME). A 512 GiB zram took
/// 2.9 GiB of the host's memory.
fn swap_kernel_bytes(d: &foliosim_scenario::SwapDevice) -> u64 {
    let slots = d.size / foliosim_uapi::PAGE_SIZE;
    let per_slot = match d.kind {
        foliosim_uapi::SwapKind::Zram => 8 + 24,
        _ => 8,
    };
    slots.saturating_mul(per_slot)
}

/// The scenario's swap areas against the host's memory (`total`,
/// `avail` bytes): a zram device no larger than twice the memory (the
/// kernel's zram documentation: beyond a 2:1 compression ratio a larger
/// device is only its table, wasted), and what the kernel keeps for every
/// area ([`swap_kernel_bytes`]) within what is available besides the
/// scenario's `needed` bytes. Refused naming the device's `size`.
fn check_swap_memory(
    swap: &[foliosim_scenario::SwapDevice],
    mut needed: u64,
    (total, avail): (u64, u64),
) -> Result<(), NativeError> {
    for (i, d) in swap.iter().enumerate() {
        let field = format!("system.swap[{}].size = {} MiB", i + 1, d.size >> 20);
        if d.kind == foliosim_uapi::SwapKind::Zram && total > 0 && d.size > 2 * total {
            return Err(NativeError::Refused(format!(
                "{field}: a zram device larger than twice the host's memory ({} MiB) cannot \
                 be filled at the 2:1 compression zram expects, and its table alone would take \
                 about {} MiB of the host's memory; use a smaller size",
                total >> 20,
                swap_kernel_bytes(d) >> 20
            )));
        }
        let kernel = swap_kernel_bytes(d);
        needed = needed.saturating_add(kernel);
        if avail > 0 && needed > avail {
            return Err(NativeError::Refused(format!(
                "{field}: the kernel keeps about {} MiB of the host's memory for this {} swap \
                 area, which with the scenario's other needs ({} MiB) is more than the {} MiB \
                 the host has available; use a smaller size",
                kernel >> 20,
                d.kind.name(),
                (needed - kernel) >> 20,
                avail >> 20
            )));
        }
    }
    Ok(())
}

fn require_readable(path: &str, what: &str) -> Result<(), NativeError> {
    std::fs::File::open(path)
        .map(|_| ())
        .map_err(|e| NativeError::Refused(format!("cannot read {path} ({e}): {what}")))
}

/// The CPU the workload is pinned to: the last one this thread may use.
fn workload_cpu() -> Result<usize, NativeError> {
    let set =
        sys::get_affinity().map_err(|e| NativeError::Refused(format!("sched_getaffinity: {e}")))?;
    sys::cpus(&set)
        .last()
        .copied()
        .ok_or_else(|| NativeError::Refused("no CPU to run on".into()))
}

/// The host CPUs of a run: the workload's main thread on the last CPU this
/// thread may use (the simulator's CPU 0), scenario thread `i` (the
/// simulator's CPU `i + 1`) on the `i`-th of the others in ascending order.
/// Refused, naming the threads step, when there are too few.
fn host_cpus(p: &Workload) -> Result<(usize, Vec<usize>), NativeError> {
    let main = workload_cpu()?;
    if p.max_threads == 0 {
        return Ok((main, Vec::new()));
    }
    let set =
        sys::get_affinity().map_err(|e| NativeError::Refused(format!("sched_getaffinity: {e}")))?;
    let allowed = sys::cpus(&set);
    let others: Vec<usize> = allowed.iter().copied().filter(|&c| c != main).collect();
    if others.len() < p.max_threads {
        return Err(NativeError::Unsupported {
            at: p.threads_at.clone().unwrap_or_default(),
            what: format!(
                "count = {n} threads need {} CPUs natively (the main thread's and one per                  thread) but this process may run on {} ({allowed:?}); run it on a host with                  more CPUs, or lower count (`foliosim run` simulates it)",
                p.max_threads + 1,
                allowed.len(),
                n = p.max_threads
            ),
        });
    }
    Ok((main, others[..p.max_threads].to_vec()))
}

/// Put back what a killed native run left on the host: its knob values,
/// swap areas, loop and zram devices, memory cgroups, tracefs mount and
/// work directory, once no native run is in progress. Every `foliosim`
/// command calls this first, so a run killed together with its supervisor
/// (a cgroup-wide kill, the OOM killer) is undone by the next command.
/// `foliosim restore` calls it with `sweep` true: then the work
/// directories of finished runs under `workdir` (the parent a run was
/// given) go too, even without a state file (a reboot clears /run, where
/// the state file lives, but not the swap files on disk; the next native
/// run removes them as well). Ok(None): nothing was left, or a native run
/// (or a killed run's supervisor) is in progress and owns it. Err: a
/// killed run's changes are left and this process is not root.
pub fn restore_stale(workdir: &Path, sweep: bool) -> Result<Option<Recovery>, NativeError> {
    let tmp = format!("{}.tmp", guard::STATE_FILE);
    let stale = Path::new(guard::STATE_FILE).exists() || Path::new(&tmp).exists();
    if !stale && !sweep {
        return Ok(None);
    }
    if sys::geteuid() != 0 {
        if !stale || guard::run_in_progress() {
            return Ok(None);
        }
        return Err(NativeError::Refused(format!(
            "{} lists host changes of a native run that was killed; run `foliosim restore` \
             as root to put them back",
            guard::STATE_FILE
        )));
    }
    let lock = guard::RunLock::try_acquire()
        .map_err(|e| NativeError::Refused(format!("cannot take the native-run lock: {e}")))?;
    let Some(_lock) = lock else {
        return Ok(None);
    };
    let mut r = guard::recover_stale();
    guard::clean_stale_workdirs(workdir, &mut r);
    Ok(Some(r))
}

/// Run the compiled workload `plan` of `sc` (see
/// `foliosim_workload::compile`) on the host kernel and return its report,
/// expectations not evaluated.
pub fn run_workload(
    sc: &Scenario,
    plan: &Workload,
    opts: &NativeOptions,
) -> Result<Report, NativeError> {
    let Preflight {
        memcg,
        notes,
        cpus,
        guest_writes,
    } = preflight(sc, plan, opts)?;
    if sys::geteuid() != 0 {
        return Err(NativeError::Refused(
            "the native engine needs root (to set THP knobs, read /proc/kpageflags and PFNs in \
             /proc/PID/pagemap, and count tracepoints of the workload)"
                .into(),
        ));
    }
    require_readable("/proc/kpageflags", "folio histograms need it")?;
    require_readable("/proc/self/pagemap", "folio histograms need it")?;
    let mut writes = knobs::writes(sc, opts.guest)?;
    writes.extend(guest_writes);
    for n in &notes {
        foliosim_uapi::note!("foliosim native: note: {n}");
    }

    let _lock = guard::RunLock::acquire()
        .map_err(|e| NativeError::Refused(format!("cannot take the native-run lock: {e}")))?;
    let mut stale = guard::recover_stale();
    guard::clean_stale_workdirs(&opts.workdir, &mut stale);
    stale.note("foliosim native");
    let mut g = guard::HostGuard::install()
        .map_err(|e| NativeError::Refused(format!("cannot install signal handling: {e}")))?;
    let result = run_guarded(sc, opts, plan, memcg, &writes, &cpus, &g);
    let errs = g.finish();
    let report = result?;
    if !errs.is_empty() {
        return Err(NativeError::Io {
            at: "restoring host settings".into(),
            what: errs.join("; "),
        });
    }
    Ok(report)
}

fn run_guarded(
    sc: &Scenario,
    opts: &NativeOptions,
    plan: &Workload,
    memcg: Option<memcg::Hierarchy>,
    writes: &[(PathBuf, String)],
    (cpu, thread_cpus): &(usize, Vec<usize>),
    g: &guard::HostGuard,
) -> Result<Report, NativeError> {
    for (p, v) in writes {
        g.set_knob(p, v).map_err(|e| NativeError::Io {
            at: "[system]".into(),
            what: format!("writing {v} to {}: {e}", p.display()),
        })?;
    }
    let dir = g
        .create_workdir(&opts.workdir)
        .map_err(|e| NativeError::Io {
            at: "native engine".into(),
            what: format!(
                "creating a work directory in {}: {e}",
                opts.workdir.display()
            ),
        })?;
    for c in swapdev::create_all(g, &sc.system.swap, &dir)? {
        foliosim_uapi::note!(
            "foliosim native: note: swap: {}: {}",
            c.path.display(),
            c.what
        );
    }
    let cgroups = memcg.map(|h| memcg::Cgroups::new(h, plan)).transpose()?;
    // A guest is the whole machine: its own memory before the workload,
    // for the model to start from the same (`machine.*` knobs).
    let machine = if opts.guest {
        host::machine_knobs(sc.system.memory, *cpu)
    } else {
        Vec::new()
    };
    let settings = host::settings_snapshot();
    let events = if opts.trace {
        perf::resolve(g)
    } else {
        perf::none_counted(perf::UNTRACED)
    };
    let (files, paths) = create_files(sc, &dir)?;
    let ctx = engine::Ctx {
        plan,
        files: &files,
        paths: &paths,
        events: &events,
        guard: g,
        cpu: *cpu,
        thread_cpus,
        // In a guest there is no hypervisor to warm up, and the guest is
        // the whole machine: writing its memory before a phase would
        // reclaim (or swap out) everything else the phase starts with.
        warm_bytes: if opts.guest {
            0
        } else {
            plan.anon_bytes.min(1 << 30)
        },
        settings: &settings,
        cgroups: cgroups.as_ref(),
    };
    let attempt = attempt_until_warm(&ctx, &files)?;
    let after = host::settings_snapshot();
    let changed = host::settings_diff(&settings, &after);
    if !changed.is_empty() {
        return Err(NativeError::Changed(changed.join("; ")));
    }
    let phases = finish_phases(sc, &events, attempt);
    let mut system = sc.system.knobs.clone();
    system.extend(machine);
    Ok(Report {
        scenario: sc.name.clone(),
        arch: sc.system.arch.as_str().to_string(),
        engine: "native".into(),
        provenance: None,
        system,
        phases,
        expectations: Vec::new(),
    })
}

/// Create the scenario's `[[file]]`s in `dir`; the files and their paths.
fn create_files(
    sc: &Scenario,
    dir: &Path,
) -> Result<(Vec<files::HostFile>, Vec<CString>), NativeError> {
    let files: Vec<files::HostFile> = sc
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| files::HostFile::new(f, i, dir))
        .collect();
    for f in &files {
        f.create().map_err(|e| NativeError::Io {
            at: f.spec.loc.to_string(),
            what: format!("creating {}: {e}", f.path.display()),
        })?;
    }
    let paths: Vec<CString> = files
        .iter()
        .map(|f| sys::cstr(&f.path))
        .collect::<Result<_, _>>()
        .map_err(|e| NativeError::Io {
            at: "native engine".into(),
            what: e.to_string(),
        })?;
    Ok((files, paths))
}

/// Attempts at most, while the warm page cache does not stay warm.
const ATTEMPTS: u64 = 3;

/// Run the workload until an attempt kept the page cache warm, or
/// `ATTEMPTS` times.
fn attempt_until_warm(
    ctx: &engine::Ctx<'_>,
    files: &[files::HostFile],
) -> Result<engine::Attempt, NativeError> {
    let mut reruns = 0;
    loop {
        engine::repopulate(files)?;
        let a = engine::attempt(ctx, reruns)?;
        match &a.not_warm {
            Some(why) if reruns + 1 < ATTEMPTS => {
                foliosim_uapi::note!(
                    "foliosim native: the page cache was not warm ({why}); rebuilding it and \
                     running again"
                );
                reruns += 1;
            }
            _ => return Ok(a),
        }
    }
}

/// The attempt's phases with `native/missing_counters` (and
/// `native/not_warm`) added; what the host could not count, and a page
/// cache that stayed cold, are said on stderr.
fn finish_phases(
    sc: &Scenario,
    events: &perf::Events,
    attempt: engine::Attempt,
) -> Vec<foliosim_report::Phase> {
    let mut phases = attempt.phases;
    let missing = missing_counters(sc, events, &attempt.missing, &phases);
    for p in &mut phases {
        p.counters
            .insert("native/missing_counters".into(), missing.len() as i64);
        if attempt.not_warm.is_some() {
            p.counters.insert("native/not_warm".into(), 1);
        }
    }
    if let Some(why) = &attempt.not_warm {
        foliosim_uapi::note!(
            "foliosim native: warning: the page cache was still not warm after {ATTEMPTS} \
             attempts ({why}); counters marked native/not_warm = 1"
        );
    }
    phases
}

/// Every counter the host could not provide, with why (sorted, each
/// once), as the tracepoints, the attempt and the first phase show; said
/// on stderr.
fn missing_counters(
    sc: &Scenario,
    events: &perf::Events,
    in_attempt: &[(String, String)],
    phases: &[foliosim_report::Phase],
) -> Vec<(String, String)> {
    let mut missing = events.missing.clone();
    missing.extend(in_attempt.iter().cloned());
    if let Some(p) = phases.first() {
        for n in EXPECTED_VMSTAT {
            if !p.counters.contains_key(n) {
                missing.push((n.to_string(), "not in /proc/vmstat".into()));
            }
        }
        for n in ["minor-faults", "major-faults"] {
            if !p.counters.contains_key(n) {
                missing.push((n.to_string(), "/proc/PID/stat was unreadable".into()));
            }
        }
        for &size in sc.system.mthp_enabled.keys() {
            if size < 16384 {
                continue;
            }
            for st in EXPECTED_MTHP {
                let n = format!("hugepages-{}kB/{st}", size / 1024);
                if !p.counters.contains_key(&n) {
                    missing.push((n, "no such mTHP stat file".into()));
                }
            }
        }
    }
    missing.sort();
    missing.dedup();
    let (quiet, loud): (Vec<_>, Vec<_>) =
        missing.iter().partition(|(_, why)| why == perf::UNTRACED);
    if !quiet.is_empty() {
        foliosim_uapi::note!(
            "foliosim native: note: tracepoints not counted (timing run): {} counters left out",
            quiet.len()
        );
    }
    if !loud.is_empty() {
        let list: Vec<String> = loud.iter().map(|(n, why)| format!("{n} ({why})")).collect();
        foliosim_uapi::note!(
            "foliosim native: counters the host cannot provide (left out): {}",
            list.join(", ")
        );
    }
    missing
}
