//! One way to run a scenario, for the command line, sweeps and the Python
//! package: parse it with its overrides, compile it once
//! ([`foliosim_sim::compile`]: the kernel model's placement), run the
//! compiled workload on the simulator, the host kernel or a guest kernel
//! ([`Engine`]), add modelled time to simulated reports, judge the
//! expectations once (`Report::evaluate`) and stamp the provenance.
//!
//! This crate is the only caller of the engines (`foliosim_sim`,
//! `foliosim_native`, `foliosim_vm`). Failures come back as a typed
//! [`RunError`] whose kind says what went wrong (bad input, not modelled,
//! the process killed, a model bug, the host, the guest) and whose text is
//! the message the command line prints, naming the scenario file once
//! ([`in_file`]).

#![forbid(unsafe_code)]

mod error;
pub mod guest;
mod provenance;

pub use error::{in_file, RunError};
pub use provenance::{Given, COMMIT, VERSION_AND_COMMIT};

use foliosim_report::Report;
use foliosim_scenario::{Scenario, Source};
use foliosim_workload::Workload;

/// Options of simulated runs.
#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    /// Run the invariant checker after every step.
    pub check: bool,
    /// Cost profile (file or shipped name) for modelled time; None: the
    /// architecture's shipped profile.
    pub profile: Option<String>,
    /// Refuse a run whose estimated memory exceeds this many bytes
    /// (`foliosim_sim::RunOptions::max_memory`); None: 3/4 of the host's
    /// available memory.
    pub max_memory: Option<u64>,
}

/// The engine a scenario runs on.
#[derive(Clone, Debug)]
pub enum Engine {
    /// The kernel model (`foliosim run`).
    Sim(SimOptions),
    /// The host kernel (`foliosim native`, root); counting tracepoints or
    /// not.
    Native { trace: bool },
    /// A kernel booted in QEMU (`foliosim vm`).
    Vm(foliosim_vm::VmOptions),
}

impl Engine {
    /// The simulator with default options.
    pub fn sim() -> Engine {
        Engine::Sim(SimOptions::default())
    }

    /// The engine's name, as reports spell it (`sim`, `native`, `vm`).
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Sim(_) => "sim",
            Engine::Native { .. } => "native",
            Engine::Vm(_) => "vm",
        }
    }

    /// Whether runs may go in parallel: only simulated ones (the host and
    /// a VM are measured one run at a time).
    pub fn parallel(&self) -> bool {
        matches!(self, Engine::Sim(_))
    }

    /// The kernel (name, release) and architecture runs on this engine
    /// use: none for the simulator; `host`, the running kernel's release
    /// and the host's architecture natively; the guest kernel `--kernel`
    /// names and its architecture in a VM (its name as given and an empty
    /// release when it cannot be found).
    pub fn platform(&self) -> (Option<(String, String)>, Option<String>) {
        match self {
            Engine::Sim(_) => (None, None),
            Engine::Native { .. } => {
                let arch = std::env::consts::ARCH;
                let arch =
                    foliosim_uapi::Arch::from_name(arch).map_or(arch, foliosim_uapi::Arch::as_str);
                let release = foliosim_native::guest::kernel_release();
                (Some(("host".into(), release)), Some(arch.into()))
            }
            Engine::Vm(o) => match foliosim_vm::kernels::resolve(&o.kernel, o.arch) {
                Ok(k) => (Some((k.name, k.release)), Some(k.arch.as_str().into())),
                Err(_) => (
                    Some((o.kernel.clone(), String::new())),
                    o.arch.map(|a| a.as_str().into()),
                ),
            },
        }
    }
}

/// What to run: a scenario's text, its overrides and what to do with the
/// report.
#[derive(Clone, Copy, Debug)]
pub struct Job<'a> {
    pub source: &'a Source,
    /// Scenario keys to override, in order (`--set` pairs, then `arch`
    /// and `seed`).
    pub overrides: &'a [(String, String)],
    /// Judge the scenario's `[[expect]]`s (false: `--no-expect`).
    pub expect: bool,
    /// The overrides as the user gave them: the report's provenance
    /// (None: no provenance).
    pub given: Option<&'a Given>,
}

/// Run `job` on `engine`: the report with modelled time (simulated
/// runs), its expectations judged (unless `job.expect` is false) and its
/// provenance. The error names the scenario file.
pub fn run(job: &Job<'_>, engine: &Engine) -> Result<Report, RunError> {
    let label = &job.source.label;
    let report = match engine {
        Engine::Vm(opts) => {
            let out = vm::run(job, opts)?;
            let mut r = out.report;
            r.provenance = job
                .given
                .map(|g| g.provenance(label, out.scenario.seed, out.kernel));
            r
        }
        _ => {
            // Parsing needs memory in proportion to the text: the
            // simulator's memory guard admits the text first.
            if let Engine::Sim(o) = engine {
                let len = job.source.text.len() as u64;
                foliosim_sim::admit_text(len, &sim_options(o))
                    .map_err(|e| RunError::from_sim(label, e))?;
            }
            let sc = parse(job.source, job.overrides)?;
            let compiled = Compiled::new(label, sc, &[engine])?;
            let mut r = compiled.run_on(engine, job.expect)?;
            r.provenance = job
                .given
                .map(|g| g.provenance(label, compiled.scenario.seed, None));
            r
        }
    };
    Ok(report)
}

/// The scenario of `src` with `overrides` applied.
fn parse(src: &Source, overrides: &[(String, String)]) -> Result<Scenario, RunError> {
    src.parse(overrides)
        .map_err(|e| RunError::Usage(in_file(&src.label, e.to_string())))
}

/// A scenario compiled once, ready to run on any engine but a VM.
#[derive(Debug)]
pub struct Compiled {
    /// The label of the scenario in errors (its path as given).
    pub label: String,
    pub scenario: Scenario,
    pub workload: Workload,
}

/// What the model's one zone leaves out for `sc`, if it matters: under
/// MGLRU the kernel keeps a list per zone and `scan_folios()` evicts from
/// the highest zone first, and a machine whose memory reaches past the
/// 32-bit zone has a ZONE_NORMAL (a QEMU x86_64 machine of 3.5 GiB or
/// more puts all but 3 GiB above 4 GiB; arm64's memory starts at 1 GiB).
fn one_zone_note(sc: &Scenario) -> Option<String> {
    const GIB: u64 = 1 << 30;
    let memory = sc.system.memory;
    let normal = match sc.system.arch {
        foliosim_scenario::Arch::X86_64 => memory >= 7 * GIB / 2,
        foliosim_scenario::Arch::Arm64 => memory > 3 * GIB,
    };
    (sc.system.lru_gen_enabled && normal).then(|| {
        format!(
            "MGLRU on {} MiB: the kernel would have a ZONE_NORMAL and evict its \
             folios first; the model has one zone, so which folios go first can \
             differ (docs/fidelity.md, \"The multi-gen LRU\")",
            memory >> 20
        )
    })
}

/// A note printed once per process, however many runs meet it (sweeps).
fn note_once(n: String) {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.contains(&n) {
        foliosim_uapi::note!("{n}");
        seen.push(n);
    }
}

impl Compiled {
    /// Compile `sc` (named `label` in errors) to run on `engines`. When
    /// the simulator is one of them, its memory guard admits the scenario
    /// first (before anything is built); a step the compiler refuses is
    /// unsupported, in the words of the first engine.
    pub fn new(label: &str, sc: Scenario, engines: &[&Engine]) -> Result<Compiled, RunError> {
        for e in engines {
            if let Engine::Sim(o) = e {
                foliosim_sim::admit(&sc, &sim_options(o))
                    .map_err(|e| RunError::from_sim(label, e))?;
            }
        }
        if engines.iter().any(|e| matches!(e, Engine::Sim(_))) {
            if let Some(n) = one_zone_note(&sc) {
                note_once(format!("foliosim: note: {label}: {n}"));
            }
        }
        let workload = foliosim_sim::compile(&sc).map_err(|e| {
            let msg = match engines.first() {
                Some(Engine::Native { .. }) => foliosim_native::NativeError::Unsupported {
                    at: e.at,
                    what: e.what,
                }
                .to_string(),
                Some(Engine::Sim(_)) | None => foliosim_sim::SimError::Unsupported {
                    at: e.at,
                    what: e.what,
                }
                .to_string(),
                Some(Engine::Vm(_)) => e.to_string(),
            };
            RunError::Unsupported(in_file(label, msg))
        })?;
        Ok(Compiled {
            label: label.to_string(),
            scenario: sc,
            workload,
        })
    }

    /// Run the workload on `engine` (the simulator or the host): the
    /// report with modelled time (simulated runs), its expectations judged
    /// when `expect`, without provenance. A VM runs a [`Job`] ([`run`]).
    pub fn run_on(&self, engine: &Engine, expect: bool) -> Result<Report, RunError> {
        let (sc, wl, label) = (&self.scenario, &self.workload, self.label.as_str());
        let mut report = match engine {
            Engine::Sim(o) => simulate(label, sc, wl, o)?,
            // No panic guard here: the host guard restores settings while
            // unwinding.
            Engine::Native { trace } => {
                let opts = foliosim_native::NativeOptions {
                    trace: *trace,
                    ..foliosim_native::NativeOptions::default()
                };
                foliosim_native::run_workload(sc, wl, &opts)
                    .map_err(|e| RunError::from_native(label, e))?
            }
            Engine::Vm(_) => {
                return Err(RunError::Usage(
                    "a VM runs a scenario from its text (foliosim_run::run)".into(),
                ))
            }
        };
        if expect {
            report.evaluate(&sc.expects);
        }
        Ok(report)
    }
}

fn sim_options(o: &SimOptions) -> foliosim_sim::RunOptions {
    foliosim_sim::RunOptions {
        check: o.check,
        max_memory: o.max_memory,
        profile: None,
    }
}

/// Call `f` (a simulation of scenario `label`); a panic inside it comes
/// back as an error instead of unwinding into the caller: `Unsupported`
/// for a limit of the model, `Invariant` for a bug. Printed nowhere; safe
/// on several threads at once.
pub fn guarded<T>(label: &str, f: impl FnOnce() -> T) -> Result<T, RunError> {
    foliosim_sim::catch(f).map_err(|p| RunError::from_panic(label, p))
}

/// Simulate `wl` inside the panic guard and add modelled time. The cost
/// profile also paces kswapd inside the run.
fn simulate(label: &str, sc: &Scenario, wl: &Workload, o: &SimOptions) -> Result<Report, RunError> {
    let profile = foliosim_cost::profile_for(o.profile.as_deref(), sc.system.arch.as_str())
        .map_err(|e| RunError::Usage(in_file(label, e)))?
        .map(std::sync::Arc::new);
    let opts = foliosim_sim::RunOptions {
        profile: profile.clone(),
        ..sim_options(o)
    };
    let mut report = guarded(label, || foliosim_sim::run_workload(sc, wl, opts))?
        .map_err(|e| RunError::from_sim(label, e))?;
    if let Some(p) = &profile {
        foliosim_cost::annotate(&mut report, p).map_err(|e| RunError::Usage(in_file(label, e)))?;
    }
    Ok(report)
}

/// Compare the simulator with `other` (the host or a guest) on `job`:
/// the scenario is parsed and compiled once and both engines run it. On
/// the host, every knob the scenario leaves at its default takes the
/// host's value from `host_defaults` (the probed `[system]` fragment); a
/// guest runs exactly the scenario's settings, so the model runs them
/// too. Returns (simulated, other) with their provenance.
pub fn compare(
    job: &Job<'_>,
    other: &Engine,
    sim: &SimOptions,
    host_defaults: &[(String, String)],
) -> Result<(Report, Report), RunError> {
    let (mut simulated, mut runs) = compare_repeated(job, other, sim, host_defaults, 1)?;
    Ok((simulated.remove(0), runs.remove(0)))
}

/// [`compare`] against `n` (at least 1) runs of the other engine: the
/// simulated reports and the `n` measured ones. A guest is the whole
/// machine and each run reports its own memory (`machine.*`), so the
/// model runs once on each run's machine (a report per run, in order);
/// the host's runs share one scenario, so the model runs once.
pub fn compare_repeated(
    job: &Job<'_>,
    other: &Engine,
    sim: &SimOptions,
    host_defaults: &[(String, String)],
    n: usize,
) -> Result<(Vec<Report>, Vec<Report>), RunError> {
    let label = &job.source.label;
    let sim_engine = Engine::Sim(sim.clone());
    let (compiled, measured, kernel) = match other {
        Engine::Vm(opts) => vm::run(job, opts)?.into_parts(label),
        _ => {
            let sc = with_host_defaults(job.source, job.overrides, host_defaults)?;
            let compiled = Compiled::new(label, sc, &[other, &sim_engine])?;
            let r = compiled.run_on(other, job.expect)?;
            (compiled, r, None)
        }
    };
    let mut runs = vec![measured];
    let mut simulated = vec![compiled.run_on(&sim_engine, job.expect)?];
    for _ in 1..n {
        match other {
            Engine::Vm(opts) => {
                let (machine, report, _) = vm::run(job, opts)?.into_parts(label);
                simulated.push(machine.run_on(&sim_engine, job.expect)?);
                runs.push(report);
            }
            _ => runs.push(compiled.run_on(other, job.expect)?),
        }
    }
    let prov = job
        .given
        .map(|g| g.provenance(label, compiled.scenario.seed, kernel));
    for r in runs.iter_mut().chain(simulated.iter_mut()) {
        r.provenance = prov.clone();
    }
    Ok((simulated, runs))
}

/// `compare --runs`: the model beside `runs`, reports of the scenario of
/// `job` that a guest (`vm`) or the host (`native`) measured earlier, on
/// each run's machine as [`compare_repeated`] would have simulated it: the
/// run's own overrides, then `job`'s (a knob of the model alone, such as
/// `machine.swap_write_rate`, can be tried against the same runs); for a
/// guest run the series switches of its kernel's release
/// ([`foliosim_vm::derive_series`]) and its memory and measured machine
/// ([`foliosim_vm::adopt_machine`]), for a host run the host
/// settings a scenario leaves at their defaults
/// ([`foliosim_native::probed_in`]). Returns the simulated reports, one
/// per run, and the runs.
pub fn compare_saved(
    job: &Job<'_>,
    sim: &SimOptions,
    runs: Vec<Report>,
) -> Result<(Vec<Report>, Vec<Report>), RunError> {
    let (src, label) = (job.source, &job.source.label);
    let sim_engine = Engine::Sim(sim.clone());
    let mut simulated = Vec::with_capacity(runs.len());
    for run in &runs {
        let mut ov: Vec<(String, String)> = run
            .provenance
            .iter()
            .flat_map(|p| &p.overrides)
            .map(|o| (o.key.clone(), o.value.clone()))
            .collect();
        ov.extend(job.overrides.iter().cloned());
        let sc = if run.engine == "vm" {
            let release = run
                .provenance
                .as_ref()
                .and_then(|p| p.kernel.as_ref())
                .map(|(_, release)| release.clone())
                .ok_or_else(|| {
                    RunError::Usage(in_file(
                        label,
                        "a guest run without provenance.kernel: its release decides the \
                         series switches the model runs with"
                            .into(),
                    ))
                })?;
            ov.push(("arch".into(), run.arch.clone()));
            let mut sc = parse(src, &ov)?;
            foliosim_vm::derive_series(&mut sc, &release);
            foliosim_vm::adopt_machine(&mut sc, run);
            sc
        } else {
            with_host_defaults(src, &ov, &foliosim_native::probed_in(&run.system))?
        };
        let compiled = Compiled::new(label, sc, &[&sim_engine])?;
        let mut report = compiled.run_on(&sim_engine, job.expect)?;
        // The comparison's provenance: this command's overrides and the
        // runs' kernel.
        report.provenance = job.given.map(|g| {
            let kernel = run.provenance.as_ref().and_then(|p| p.kernel.clone());
            g.provenance(label, compiled.scenario.seed, kernel)
        });
        simulated.push(report);
    }
    Ok((simulated, runs))
}

/// The scenario of `src` with `overrides`, and the probed host's value
/// (`host`, a `[system]` fragment as pairs) for every knob it leaves at
/// its default: what a host run is compared with.
pub fn with_host_defaults(
    src: &Source,
    overrides: &[(String, String)],
    host: &[(String, String)],
) -> Result<Scenario, RunError> {
    let sc = parse(src, overrides)?;
    let mut all: Vec<(String, String)> = host
        .iter()
        .filter(|(k, _)| !sc.system.explicit.contains(k))
        .cloned()
        .collect();
    all.extend(overrides.iter().cloned());
    parse(src, &all)
}

pub mod vm {
    //! A run in a guest: the kernel found, the scenario parsed with the
    //! guest's overrides and compiled once on the host, the guest's
    //! unjudged report judged here.

    use super::*;

    /// A finished guest run.
    #[derive(Debug)]
    pub struct VmOutcome {
        /// The guest's report, expectations judged when the job asks.
        pub report: Report,
        /// The scenario as the guest ran it (the overrides its kernel
        /// implies): simulate this one.
        pub scenario: Scenario,
        /// Its compiled workload.
        pub workload: Workload,
        /// The kernel's name and release (`uname -r`).
        pub kernel: Option<(String, String)>,
        /// Every override the guest ran with.
        pub overrides: Vec<(String, String)>,
    }

    impl VmOutcome {
        /// The scenario as the guest ran it, compiled under `label` (what
        /// the model simulates beside this run), the guest's report and
        /// its kernel.
        pub fn into_parts(self, label: &str) -> (Compiled, Report, Option<(String, String)>) {
            let compiled = Compiled {
                label: label.to_string(),
                scenario: self.scenario,
                workload: self.workload,
            };
            (compiled, self.report, self.kernel)
        }
    }

    /// Run `job` in the guest `opts` describes.
    pub fn run(job: &Job<'_>, opts: &foliosim_vm::VmOptions) -> Result<VmOutcome, RunError> {
        let (src, ov, label) = (job.source, job.overrides, &job.source.label);
        let host = |e: String| RunError::Host(in_file(label, e));
        // A bare release (`6.18.35`) takes the architecture from --arch,
        // else from the scenario.
        let pre = match opts.arch {
            Some(_) => None,
            None => src.parse(ov).ok(),
        };
        let arch = opts.arch.or(pre.as_ref().map(|s| s.system.arch));
        let kernel = foliosim_vm::kernel_for(opts, arch).map_err(host)?;
        let mut user: Vec<(String, String)> = ov.to_vec();
        user.push(("arch".into(), kernel.arch.as_str().into()));
        // The scenario parsed without the arch override is the same
        // scenario when the kernel's arch is the one it names.
        let sc = match pre {
            Some(sc) if sc.system.arch == kernel.arch => sc,
            _ => parse(src, &user)?,
        };
        let mut sc = sc;
        let workload = foliosim_sim::compile(&sc)
            .map_err(|e| RunError::Unsupported(in_file(label, e.to_string())))?;
        let (overrides, notes) = foliosim_vm::guest_overrides(&mut sc, &workload, &user, &kernel);
        for n in &notes {
            foliosim_uapi::note!("foliosim vm: note: {n}");
        }
        let run = foliosim_vm::run_workload(src, &sc, &workload, &overrides, kernel, opts)
            .map_err(|e| RunError::from_vm(label, e))?;
        foliosim_uapi::note!(
            "foliosim vm: {} on {} (Linux {}, {}): {:.1} s",
            label,
            run.kernel.name,
            run.release,
            run.accel,
            run.seconds
        );
        let mut report = run.report;
        if job.expect {
            report.evaluate(&sc.expects);
        }
        foliosim_vm::adopt_machine(&mut sc, &report);
        Ok(VmOutcome {
            report,
            scenario: sc,
            workload,
            kernel: Some((run.kernel.name, run.release)),
            overrides,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::one_zone_note;

    /// The note names the machines whose kernel has a ZONE_NORMAL (QEMU's
    /// layouts: x86_64 keeps up to 3.5 GiB below 4 GiB, else 3 GiB;
    /// arm64's memory starts at 1 GiB) and only under MGLRU.
    #[test]
    fn one_zone_note_only_under_mglru_with_a_normal_zone() {
        let note = |arch: &str, memory: &str, lru_gen: &str| {
            let text = format!(
                "[system]\narch = \"{arch}\"\nmemory = \"{memory}\"\n\
                 lru_gen.enabled = {lru_gen}\n"
            );
            let sc = foliosim_scenario::parse_str("z.toml", &text, &[]).unwrap();
            one_zone_note(&sc).is_some()
        };
        assert!(note("x86_64", "4G", "1"));
        assert!(note("x86_64", "3584M", "1"));
        assert!(!note("x86_64", "3G", "1"));
        assert!(!note("x86_64", "4G", "0"));
        assert!(note("arm64", "4G", "1"));
        assert!(!note("arm64", "3G", "1"));
    }
}
