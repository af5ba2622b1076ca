//! The simulation engine: runs a scenario on the kernel model, step by step,
//! on one simulated CPU, and reports the measured phases.
//!
//! Deterministic: the same scenario, seed and version give the same report.
//! In checking mode (`RunOptions::check`, which every test uses) the full
//! invariant checker runs after every step.

#![forbid(unsafe_code)]

mod engine;
mod estimate;
mod guarded;
mod layout;

pub use estimate::{estimate_peak, estimate_text, Estimate};
pub use guarded::{catch, guard, run_guarded, Panicked};
pub use layout::{compile, layout, Layout};

use std::fmt;

use std::sync::{Arc, OnceLock};

use foliosim_kernel::{Arm64, Config, Prices, X86_64};
use foliosim_report::Report;
use foliosim_scenario::{Arch, Backing, Scenario, Step, StepKind};
use foliosim_workload::Workload;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Run the invariant checker after every step.
    pub check: bool,
    /// Refuse a scenario whose estimated memory ([`estimate_peak`])
    /// exceeds this many bytes (None: the host's available memory).
    pub max_memory: Option<u64>,
    /// The cost profile whose prices pace kswapd against the workload
    /// (the modelled CPU time of each; mm/vmscan.rs `kswapd_run()`).
    /// None: the simulated architecture's shipped profile.
    pub profile: Option<Arc<foliosim_cost::Profile>>,
}

/// The prices of `profile` for the kernel model's task clocks: a task's
/// CPU time (`[cost]`) and its waits (`[wait]`), its time against
/// kswapd's.
fn prices(profile: &foliosim_cost::Profile) -> Prices {
    Prices::new(
        profile
            .costs
            .iter()
            .chain(&profile.waits)
            .map(|(name, c)| (name.as_str(), c.ns)),
    )
}

/// The prices of `arch`'s shipped profile (empty if it has none), parsed
/// once.
fn shipped_prices(arch: Arch) -> Arc<Prices> {
    static CACHE: OnceLock<Vec<(Arch, Arc<Prices>)>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| {
        Arch::ALL
            .iter()
            .map(|&a| {
                let p = foliosim_cost::profile_for(None, a.as_str())
                    .expect("a shipped cost profile parses (crates/cost tests)")
                    .map(|p| prices(&p))
                    .unwrap_or_default();
                (a, Arc::new(p))
            })
            .collect()
    });
    let (_, p) = cache.iter().find(|(a, _)| *a == arch).expect("every arch");
    Arc::clone(p)
}

/// Why a simulation stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The scenario asks for something the model does not support.
    Unsupported { at: String, what: String },
    /// The simulated process was killed (a modelled outcome that ends the run).
    Killed {
        at: String,
        signal: &'static str,
        /// The access that took the signal; None for a kill outside one.
        addr: Option<u64>,
    },
    /// A system call failed as the kernel would fail it.
    Syscall { at: String, what: String },
    /// A broken model invariant (a bug in foliosim).
    Invariant { at: String, what: String },
    /// The simulation would need more memory than it may use.
    TooBig { estimate: Estimate, limit: u64 },
    /// The host refused a trial reservation of the estimated memory (its
    /// overcommit policy or address-space limit), so the run would abort
    /// part-way in an allocation.
    HostRefused { estimate: Estimate },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Unsupported { at, what } => {
                write!(f, "{at}: unsupported by the model: {what}")
            }
            SimError::Killed { at, signal, addr } => match addr {
                Some(addr) => write!(
                    f,
                    "{at}: the process would receive {signal} at address {addr:#x}"
                ),
                None => write!(f, "{at}: the process would receive {signal}"),
            },
            SimError::Syscall { at, what } => write!(f, "{at}: {what}"),
            SimError::Invariant { at, what } => {
                write!(f, "{at}: model invariant broken (foliosim bug): {what}")
            }
            SimError::TooBig { estimate, limit } => {
                write!(
                    f,
                    "the simulation would need about {} MiB of memory, more than the {} MiB it \
                     may use (3/4 of the host's available memory, its address-space limit, \
                     or --max-memory); most of it:",
                    estimate.total >> 20,
                    limit >> 20
                )?;
                estimate_parts(estimate, f)
            }
            SimError::HostRefused { estimate } => {
                write!(
                    f,
                    "the host refused to reserve the {} MiB of memory the simulation would \
                     need (vm.overcommit_memory and the machine's RAM and swap decide); most \
                     of it:",
                    estimate.total >> 20
                )?;
                estimate_parts(estimate, f)
            }
        }
    }
}

/// The three largest parts of an estimate, a line each.
fn estimate_parts(estimate: &Estimate, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for (what, bytes) in estimate.parts.iter().take(3) {
        write!(f, "\n  {} MiB for {what}", bytes >> 20)?;
    }
    Ok(())
}

/// Can the host give this process `bytes` more memory? A reservation that
/// is released at once: the allocator maps address space without touching
/// it, so the host's overcommit check answers, and a refusal becomes an
/// error here instead of an abort in the middle of the run.
fn host_can_reserve(bytes: u64) -> bool {
    let Ok(n) = usize::try_from(bytes) else {
        return false;
    };
    let mut trial: Vec<u8> = Vec::new();
    trial.try_reserve_exact(n).is_ok()
}

impl std::error::Error for SimError {}

/// The kernel configuration a scenario's `[system]` describes.
pub fn kernel_config(sc: &Scenario) -> Config {
    let s = &sc.system;
    let mut cfg = Config {
        swap: s.swap.iter().map(|d| (d.kind, d.size)).collect(),
        series: s.series,
        lru_order_root: !fits_in_memory(sc),
        ..Config::default()
    };
    // Every knob both hold, through the knob table.
    let mut system = s.clone();
    for inst in foliosim_uapi::knobs::instances() {
        let from = system.knob_mut(inst.knob, inst.kb);
        if let (Some(from), Some(to)) = (from, cfg.knob_mut(inst.knob, inst.kb)) {
            to.set(from.get());
        }
    }
    cfg
}

/// The soft limit of this process's address space (`ulimit -v`), if any.
fn address_space_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    let soft = line
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

/// The most memory zswap's pool can take: its share of RAM (a store is
/// checked against the limit before it adds up to a folio's worth of
/// pages, hence the extra 2 MiB).
fn zswap_pool_bound(sc: &Scenario) -> u64 {
    let z = &sc.system.zswap;
    if !z.enabled {
        return 0;
    }
    sc.system.memory / 100 * u64::from(z.max_pool_percent) + (2 << 20)
}

/// Whether `sc` provably cannot run the simulated machine out of memory,
/// so that global direct reclaim never runs and the root cgroup's LRU lists
/// need no order (8 bytes per page frame saved). The bound is generous:
/// every anonymous, shmem or privately writable file mapping fully
/// populated once per process that may hold a private copy of it (1 + the
/// number of forks), every file fully cached, page
/// tables at 1/256 of that, plus 64 MiB and 1/16 of memory for the
/// watermarks, the huge zero folio and rounding.
fn fits_in_memory(sc: &Scenario) -> bool {
    fn walk(steps: &[Step], mapped: &mut u64, forks: &mut u64) {
        for st in steps {
            match &st.kind {
                // A file mapping's pages are the file's page cache (counted
                // with the files) unless private writes copy them.
                StepKind::Mmap(m) => {
                    let cached =
                        matches!(m.backing, Backing::File { .. }) && (m.shared || !m.prot.write);
                    if !cached {
                        *mapped = mapped.saturating_add(m.size);
                    }
                }
                // A grown region may populate its new size (generously: all
                // of it, whatever backs it).
                StepKind::Mremap(m) => *mapped = mapped.saturating_add(m.size),
                StepKind::Fork { child } => {
                    *forks += 1;
                    walk(child, mapped, forks);
                }
                StepKind::Threads { threads, .. } => {
                    for t in threads {
                        walk(t, mapped, forks);
                    }
                }
                _ => {}
            }
        }
    }
    let (mut mapped, mut forks) = (0u64, 0u64);
    walk(&sc.steps, &mut mapped, &mut forks);
    let files: u64 = sc.files.iter().map(|f| f.size).sum();
    let data = mapped.saturating_mul(1 + forks).saturating_add(files);
    let bound = data
        .saturating_add(data / 256)
        .saturating_add(64 << 20)
        .saturating_add(sc.system.memory / 16)
        .saturating_add(sc.system.machine_unmanaged)
        .saturating_add(sc.system.machine_boot_used)
        .saturating_add(zswap_pool_bound(sc));
    bound < sc.system.memory
}

/// Simulate `sc` and return its report (expectations evaluated):
/// [`admit`], [`compile`], [`run_workload`] and `Report::evaluate`.
pub fn run(sc: &Scenario, opts: RunOptions) -> Result<Report, SimError> {
    admit(sc, &opts)?;
    let wl = compile(sc).map_err(|e| SimError::Unsupported {
        at: e.at,
        what: e.what,
    })?;
    let mut report = run_workload(sc, &wl, opts)?;
    report.evaluate(&sc.expects);
    Ok(report)
}

/// Whether `sc` may be simulated here: its estimated memory within
/// `opts.max_memory` (else 3/4 of the host's available memory or its
/// address-space limit) and reservable, and its warm files within its
/// machine. Checked before anything of the scenario is built.
pub fn admit(sc: &Scenario, opts: &RunOptions) -> Result<(), SimError> {
    admit_estimate(estimate_peak(sc), opts)?;
    // A warm page cache larger than the machine cannot be warm: its fill
    // would only run global reclaim against itself (and slowly).
    let mut warm = 0u64;
    for f in &sc.files {
        if f.fill != foliosim_scenario::CacheFill::Cold {
            warm = warm.saturating_add(f.size);
            if warm > sc.system.memory {
                return Err(SimError::Unsupported {
                    at: f.loc.to_string(),
                    what: format!(
                        "file {:?} is filled warm, but the warm files ({} MiB up to here) do \
                         not fit in memory = {} MiB; raise memory or use fill = \"cold\"",
                        f.name,
                        warm >> 20,
                        sc.system.memory >> 20
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Whether a scenario text of `len` bytes may be parsed for a simulation
/// here: [`estimate_text`] within the limit of [`admit`]. Checked before
/// the text is parsed.
pub fn admit_text(len: u64, opts: &RunOptions) -> Result<(), SimError> {
    admit_estimate(estimate_text(len), opts)
}

/// `estimate` within `opts.max_memory` (else 3/4 of the host's available
/// memory or its address-space limit), and reservable.
fn admit_estimate(estimate: Estimate, opts: &RunOptions) -> Result<(), SimError> {
    // Without --max-memory: three quarters of the available memory (the
    // estimate is not exact, and the rest of the machine needs some too),
    // or the address-space limit.
    let limit = opts
        .max_memory
        .or_else(|| {
            let avail = foliosim_uapi::meminfo::meminfo()
                .available
                .map(|a| a / 4 * 3);
            match (avail, address_space_limit()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        })
        .unwrap_or(u64::MAX);
    if estimate.total > limit {
        return Err(SimError::TooBig { estimate, limit });
    }
    if !host_can_reserve(estimate.total) {
        return Err(SimError::HostRefused { estimate });
    }
    Ok(())
}

/// Simulate the compiled workload `wl` of `sc` (admitted by [`admit`])
/// and return its report, expectations not evaluated.
pub fn run_workload(sc: &Scenario, wl: &Workload, opts: RunOptions) -> Result<Report, SimError> {
    let mut cfg = kernel_config(sc);
    cfg.check_invariants = opts.check;
    cfg.prices = match &opts.profile {
        Some(p) => Arc::new(prices(p)),
        None => shipped_prices(sc.system.arch),
    };
    let mut report = match sc.system.arch {
        Arch::X86_64 => engine::Engine::<X86_64>::run(sc, wl, cfg)?,
        Arch::Arm64 => engine::Engine::<Arm64>::run(sc, wl, cfg)?,
    };
    // Only x86 defines these tracepoints (trace_page_fault_user() in
    // arch/x86/mm/fault.c, trace_tlb_flush() in arch/x86/mm/tlb.c): an
    // arm64 kernel has no such counter, so the model reports none either.
    if sc.system.arch != Arch::X86_64 {
        for p in &mut report.phases {
            p.counters
                .retain(|k, _| !foliosim_uapi::counters::x86_only(k));
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::fits_in_memory;
    use foliosim_uapi::knobs::{self, Kind, Value};
    use foliosim_uapi::{MthpMode, ThpMode};

    /// A value of `inst` other than its default, in `--set` spelling.
    fn other_value(inst: &knobs::Instance) -> Value {
        match (inst.knob.kind, inst.default) {
            (Kind::Int { max, .. }, Value::Int(n)) if n < max => Value::Int(n + 1),
            (Kind::Int { .. }, Value::Int(n)) => Value::Int(n - 1),
            (Kind::Bytes { align, .. }, Value::Int(n)) => Value::Int(n + align),
            (_, Value::Flag(b)) => Value::Flag(!b),
            (_, Value::Thp(m)) => Value::Thp(if m == ThpMode::Always {
                ThpMode::Never
            } else {
                ThpMode::Always
            }),
            (_, Value::Mthp(m)) => Value::Mthp(if m == MthpMode::Always {
                MthpMode::Never
            } else {
                MthpMode::Always
            }),
            (_, Value::Arch(_)) => Value::Arch(foliosim_uapi::Arch::Arm64),
            (_, Value::FreeCounts(mut c)) => {
                c.0[4] += 1;
                Value::FreeCounts(c)
            }
            (kind, v) => panic!("{}: {v:?} is not a {kind:?}", inst.key),
        }
    }

    /// The kernel model's defaults are the table's.
    #[test]
    fn kernel_config_defaults_are_the_tables() {
        let mut cfg = foliosim_kernel::Config::default();
        for inst in knobs::instances() {
            if let Some(f) = cfg.knob_mut(inst.knob, inst.kb) {
                assert_eq!(f.get(), inst.default, "{}", inst.key);
            }
        }
    }

    /// A knob set in a scenario reaches the kernel model's configuration,
    /// for every knob of the table but those the model takes elsewhere.
    #[test]
    fn every_knob_reaches_the_kernel_config() {
        let mut elsewhere = Vec::new();
        for inst in knobs::instances() {
            let value = other_value(&inst);
            let set = [(inst.key.clone(), value.to_string())];
            let sc = foliosim_scenario::parse_str("t.toml", "", &set).expect("valid");
            let mut cfg = super::kernel_config(&sc);
            match cfg.knob_mut(inst.knob, inst.kb) {
                Some(f) => assert_eq!(f.get(), value, "{}", inst.key),
                None => elsewhere.push(inst.key),
            }
        }
        // arch picks the Kernel's type parameter; cpus bounds the engine's
        // threads; the model's khugepaged has no background period (it
        // runs at khugepaged steps only).
        assert_eq!(
            elsewhere,
            [
                "arch",
                "cpus",
                "transparent_hugepage.khugepaged.scan_sleep_millisecs"
            ]
        );
    }

    fn sc(body: &str) -> foliosim_scenario::Scenario {
        foliosim_scenario::parse_str("t.toml", body, &[]).expect("valid scenario")
    }

    fn anon(size: &str) -> String {
        format!(
            "[[step]]\nop = \"mmap\"\nregion = \"r{size}\"\nkind = \"anon\"\nsize = \"{size}\"\n"
        )
    }

    #[test]
    fn footprint_bound_decides_whether_global_reclaim_is_possible() {
        // 24 GiB default machine: 20 GiB of anon leaves room (bound 20 GiB
        // + 80 MiB of tables + 64 MiB + 1.5 GiB); 23 GiB does not.
        assert!(fits_in_memory(&sc(&anon("20G"))));
        assert!(!fits_in_memory(&sc(&anon("23G"))));
        // Every fork may duplicate every private page: 8 GiB x 3 processes.
        let forked = anon("8G") + "[[step]]\nop = \"fork\"\n[[step]]\nop = \"fork\"\n";
        assert!(!fits_in_memory(&sc(&forked)));
        // A read-only mapping of a 16 GiB file is its page cache: 16 GiB.
        let file = "[[file]]\nname = \"f\"\nsize = \"16G\"\nfill = \"cold\"\n\
                    [[step]]\nop = \"mmap\"\nregion = \"m\"\nkind = \"file\"\nfile = \"f\"\n\
                    size = \"16G\"\nprot = \"r\"\n";
        assert!(fits_in_memory(&sc(file)));
        // Written privately, the same mapping may copy every page: 32 GiB.
        let cow = file.replace("prot = \"r\"", "prot = \"rw\"");
        assert!(!fits_in_memory(&sc(&cow)));
    }
}
