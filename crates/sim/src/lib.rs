//! The simulation engine: runs a scenario on the kernel model, step by step,
//! on one simulated CPU, and reports the measured phases.
//!
//! Deterministic: the same scenario, seed and version give the same report.
//! In checking mode (`RunOptions::check`, which every test uses) the full
//! invariant checker runs after every step.

#![forbid(unsafe_code)]

mod engine;

use std::fmt;

use foliosim_kernel::mm::swapfile::SwapDevKind;
use foliosim_kernel::{AnonOrderMode, Arm64, Config, ThpMode, X86_64};
use foliosim_report::Report;
use foliosim_scenario::{Arch, Loc, MthpEnabled, Scenario, ThpEnabled};

/// How to run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Run the invariant checker after every step.
    pub check: bool,
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
        addr: u64,
    },
    /// A system call failed as the kernel would fail it.
    Syscall { at: String, what: String },
    /// A broken model invariant (a bug in foliosim).
    Invariant { at: String, what: String },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Unsupported { at, what } => {
                write!(f, "{at}: unsupported by the model: {what}")
            }
            SimError::Killed { at, signal, addr } => write!(
                f,
                "{at}: the process would receive {signal} at address {addr:#x}"
            ),
            SimError::Syscall { at, what } => write!(f, "{at}: {what}"),
            SimError::Invariant { at, what } => {
                write!(f, "{at}: model invariant broken (foliosim bug): {what}")
            }
        }
    }
}

impl std::error::Error for SimError {}

fn at(loc: &Loc) -> String {
    loc.to_string()
}

/// The kernel configuration a scenario's `[system]` describes.
pub fn kernel_config(sc: &Scenario) -> Config {
    let s = &sc.system;
    let mut cfg = Config {
        memory: s.memory,
        thp_enabled: match s.thp_enabled {
            ThpEnabled::Always => ThpMode::Always,
            ThpEnabled::Madvise => ThpMode::Madvise,
            ThpEnabled::Never => ThpMode::Never,
        },
        use_zero_page: s.thp_use_zero_page,
        fault_around_bytes: s.fault_around_bytes,
        read_ahead_kb: s.read_ahead_kb,
        ..Config::default()
    };
    cfg.swap = s
        .swap
        .iter()
        .map(|d| {
            let kind = match d.kind {
                foliosim_scenario::SwapKind::File => SwapDevKind::File,
                foliosim_scenario::SwapKind::Block { rotational } => {
                    SwapDevKind::Block { rotational }
                }
                foliosim_scenario::SwapKind::Zram => SwapDevKind::Zram,
            };
            (kind, d.size)
        })
        .collect();
    cfg.series = foliosim_kernel::Series {
        batch_anon_unmap: s.series.batch_anon_unmap,
        batch_folio_referenced: s.series.batch_folio_referenced,
        batch_file_unmap: s.series.batch_file_unmap,
        pagemap_shmem_swap: s.series.pagemap_shmem_swap,
    };
    for (&size, &mode) in &s.mthp_enabled {
        let order = (size / 4096).trailing_zeros() as usize;
        cfg.anon_orders[order] = match mode {
            MthpEnabled::Always => AnonOrderMode::Always,
            MthpEnabled::Inherit => AnonOrderMode::Inherit,
            MthpEnabled::Madvise => AnonOrderMode::Madvise,
            MthpEnabled::Never => AnonOrderMode::Never,
        };
    }
    cfg
}

/// Simulate `sc` and return its report (expectations evaluated).
pub fn run(sc: &Scenario, opts: RunOptions) -> Result<Report, SimError> {
    let mut cfg = kernel_config(sc);
    cfg.check_invariants = opts.check;
    let mut report = match sc.system.arch {
        Arch::X86_64 => engine::Engine::<X86_64>::run(sc, cfg)?,
        Arch::Arm64 => engine::Engine::<Arm64>::run(sc, cfg)?,
    };
    report.expectations = evaluate_expectations(sc, &report);
    Ok(report)
}

/// Compare every `[[expect]]` with the report.
pub fn evaluate_expectations(
    sc: &Scenario,
    report: &Report,
) -> Vec<foliosim_report::ExpectOutcome> {
    sc.expects
        .iter()
        .map(|e| {
            let actual = report.value(&e.phase, &e.counter);
            let (ok, tolerance) = match e.tolerance {
                foliosim_scenario::Tolerance::Abs(t) => (
                    actual.is_some_and(|a| (a - e.value).abs() <= t),
                    format!("{t}"),
                ),
                foliosim_scenario::Tolerance::Rel(p) => (
                    actual.is_some_and(|a| (a - e.value).abs() <= e.value.abs() * p / 100.0),
                    format!("{p}%"),
                ),
            };
            foliosim_report::ExpectOutcome {
                at: at(&e.loc),
                phase: e.phase.clone(),
                counter: e.counter.clone(),
                expected: e.value,
                actual,
                tolerance,
                ok,
            }
        })
        .collect()
}
