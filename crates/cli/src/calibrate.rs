//! `foliosim calibrate`: fit a cost profile to native measurements.
//!
//! Measured time: the median over the repeats of the workload thread's CPU
//! time of the phase (`native/thread_cpu_ns`, CLOCK_THREAD_CPUTIME_ID).
//! The measured phases are system calls and faults that the workload thread
//! executes itself (faults, munmap, MADV_PAGEOUT, the memory.reclaim or
//! limit write), so their kernel work is charged to that thread; CPU time,
//! unlike wall time, does not include the time other processes on this
//! shared machine take the CPU away. It misses work done elsewhere
//! (interrupts completing swap I/O, kworkers); the wall time is printed
//! beside it so a large difference shows.
//!
//! The timing runs count no tracepoints (`NativeOptions::trace` off): with
//! perf counting `tlb:tlb_flush` (and its six per-reason filters) every
//! flush call paid about 0.5 µs of perf handlers on this VM, which the fit
//! then priced as kernel work. The counts come from the model anyway.
//!
//! With `--engine vm` the corpus is timed in a guest kernel booted in QEMU
//! (one boot a run), as `foliosim vm` runs it: with its tracepoints
//! counted, on the scenario's own machine. Under TCG the guest's CPU is
//! emulated and its costs are not the host's in proportion (a page fault
//! that zeroes and writes a page is slowed far more than reclaim's
//! bookkeeping); a profile fitted there paces the model's kswapd against
//! the workload as that guest's do.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use foliosim_cost::fit::{fit, median, rel_err, FitResult, Sample};
use foliosim_cost::Profile;
use foliosim_report::{Phase, Report};

use super::output::write_output;
use super::CalibrateArgs;

mod check;
mod pagemap;

/// One phase over the repeats.
struct Measured {
    name: String,
    counters: BTreeMap<String, i64>,
    cpu: Vec<f64>,
    wall: Vec<f64>,
    /// Model pgfault vs native minor+major faults, when they differ.
    fault_mismatch: Option<(i64, i64)>,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown x86_64 CPU".to_string(), |(_, m)| {
            m.trim().to_string()
        });
    let n = info.lines().filter(|l| l.starts_with("processor")).count();
    let virt = if info.contains(" hypervisor") {
        ", virtual machine"
    } else {
        ""
    };
    format!("{model}, {n} CPUs{virt}")
}

/// The corpus's `*.toml` files, sorted, without those whose file name
/// starts with one of `exclude`.
fn corpus_files(dir: &Path, exclude: &[String]) -> Result<Vec<PathBuf>, String> {
    let excluded = |p: &Path| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        exclude.iter().any(|x| name.starts_with(x.as_str()))
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && !excluded(p))
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(format!("{}: no *.toml scenarios", dir.display()));
    }
    Ok(v)
}

/// Where the corpus is timed.
pub(super) struct Timing {
    /// The engine of every timing run: natively without tracepoint
    /// counters (see the file header), or a guest.
    engine: foliosim_run::Engine,
    /// The knobs of the machine that runs it for everything a scenario
    /// leaves at its default (the probed host, as `compare` does; none
    /// for a guest, which is the scenario's machine).
    defaults: Vec<(String, String)>,
    /// What ran it, for the profile's `cpu`.
    machine: String,
    /// The guest kernel (`--kernel`), None natively.
    kernel: Option<String>,
}

impl Timing {
    /// The host, natively.
    fn native() -> Timing {
        Timing {
            engine: foliosim_run::Engine::Native { trace: false },
            defaults: foliosim_native::probe_overrides(
                &foliosim_native::NativeOptions::default().workdir,
            ),
            machine: cpu_model(),
            kernel: None,
        }
    }

    /// What `--engine` and `--kernel` name.
    pub(super) fn of(a: &CalibrateArgs) -> Result<Timing, String> {
        if a.engine != "vm" {
            return Ok(Timing::native());
        }
        let opts = a.vm.options(None)?;
        let kernel = foliosim_vm::kernel_for(&opts, None)?;
        let accel = foliosim_vm::accelerator(opts.accel, kernel.arch);
        let release = if kernel.release.is_empty() {
            String::new()
        } else {
            format!(", Linux {}", kernel.release)
        };
        Ok(Timing {
            machine: format!(
                "guest {}{release} in QEMU ({accel}) on {}",
                kernel.name,
                cpu_model()
            ),
            kernel: Some(opts.kernel.clone()),
            engine: foliosim_run::Engine::Vm(opts),
            defaults: Vec::new(),
        })
    }

    /// Whether the runs count tracepoints (a guest's do).
    fn traced(&self) -> bool {
        matches!(self.engine, foliosim_run::Engine::Vm(_))
    }
}

/// The scenario at `path` with `defaults` for every knob it leaves at its
/// default, compiled once for `engine` (the timing runs') and the model,
/// and its simulation.
fn simulate(
    path: &Path,
    defaults: &[(String, String)],
    engine: &foliosim_run::Engine,
) -> Result<(foliosim_run::Compiled, Report), String> {
    let src = foliosim_scenario::Source::read(path).map_err(|e| e.to_string())?;
    let sc = foliosim_run::with_host_defaults(&src, &[], defaults).map_err(|e| e.to_string())?;
    let sim_engine = foliosim_run::Engine::sim();
    let compiled = foliosim_run::Compiled::new(&src.label, sc, &[engine, &sim_engine])
        .map_err(|e| e.to_string())?;
    let sim = compiled
        .run_on(&sim_engine, true)
        .map_err(|e| e.to_string())?;
    Ok((compiled, sim))
}

/// Simulate the scenario at `path` once and run it `repeat` times on
/// `timing`: `new` makes one record per simulated phase (given the
/// scenario's name), `add` adds a measured run's phase to it (with the
/// simulated one). A guest's runs are simulated on the guest's machine,
/// as `compare` does.
fn measure_phases<T>(
    path: &Path,
    repeat: usize,
    timing: &Timing,
    new: impl Fn(&str, &Phase) -> T,
    mut add: impl FnMut(&mut T, &Phase, &Phase) -> Result<(), String>,
) -> Result<Vec<T>, String> {
    let (sim, runs) = match &timing.engine {
        foliosim_run::Engine::Vm(_) => {
            let src = foliosim_scenario::Source::read(path).map_err(|e| e.to_string())?;
            let job = foliosim_run::Job {
                source: &src,
                overrides: &[],
                expect: false,
                given: None,
            };
            let sim = foliosim_run::SimOptions::default();
            // The timing ratios price the model's first machine.
            let (mut sims, runs) =
                foliosim_run::compare_repeated(&job, &timing.engine, &sim, &[], repeat)
                    .map_err(|e| e.to_string())?;
            (sims.swap_remove(0), runs)
        }
        engine => {
            let (compiled, sim) = simulate(path, &timing.defaults, engine)?;
            let runs = (0..repeat)
                .map(|_| compiled.run_on(engine, true).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            (sim, runs)
        }
    };
    let mut out: Vec<T> = sim.phases.iter().map(|p| new(&sim.scenario, p)).collect();
    for run in &runs {
        for (m, (sp, np)) in out.iter_mut().zip(sim.phases.iter().zip(&run.phases)) {
            add(m, sp, np).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(out)
}

fn measure_scenario(path: &Path, repeat: usize, timing: &Timing) -> Result<Vec<Measured>, String> {
    let new = |scenario: &str, p: &Phase| Measured {
        name: format!("{scenario}/{}", p.name),
        counters: p.counters.clone(),
        cpu: Vec::new(),
        wall: Vec::new(),
        fault_mismatch: None,
    };
    let add = |m: &mut Measured, sp: &Phase, np: &Phase| {
        let get = |k: &str| np.counters.get(k).copied().unwrap_or(0);
        m.cpu.push(get("native/thread_cpu_ns") as f64);
        m.wall.push(get("native/wall_ns") as f64);
        let model = sp.counters.get("pgfault").copied().unwrap_or(0);
        let host_faults = get("minor-faults") + get("major-faults");
        if model != host_faults {
            m.fault_mismatch = Some((model, host_faults));
        }
        Ok(())
    };
    measure_phases(path, repeat, timing, new, add)
}

/// Replace the saved counts by a fresh simulation of the corpus (the model
/// changed, the measured times did not), with `defaults` for the knobs the
/// scenarios leave at their default.
fn recount(
    phases: &mut [Measured],
    corpus: &Path,
    exclude: &[String],
    defaults: &[(String, String)],
) -> Result<(), String> {
    let mut fresh = BTreeMap::new();
    for f in corpus_files(corpus, exclude)? {
        let (compiled, r) = simulate(&f, defaults, &foliosim_run::Engine::sim())?;
        for p in r.phases {
            fresh.insert(format!("{}/{}", compiled.scenario.name, p.name), p.counters);
        }
    }
    for m in phases.iter_mut() {
        match fresh.remove(&m.name) {
            Some(c) => m.counters = c,
            None => {
                return Err(format!(
                    "--recount: phase {} is not in the corpus {}",
                    m.name,
                    corpus.display()
                ))
            }
        }
    }
    Ok(())
}

/// The measurements as JSON, so that `--from-runs` can refit them.
/// `traced`: whether the timing runs counted tracepoints (runs before
/// 2026-11-21 did; their times include perf's handlers).
fn save_runs(runs: &Runs) -> String {
    let phases = &runs.phases;
    let list: Vec<serde_json::Value> = phases
        .iter()
        .map(|m| {
            serde_json::json!({
                "name": m.name,
                "counters": m
                    .counters
                    .iter()
                    .filter(|(_, v)| **v != 0)
                    .collect::<BTreeMap<_, _>>(),
                "thread_cpu_ns": m.cpu,
                "wall_ns": m.wall,
                "fault_mismatch": m.fault_mismatch.map(|(a, b)| vec![a, b]),
            })
        })
        .collect();
    let v = serde_json::json!({
        "load_start": runs.load_start,
        "load_end": runs.load_end,
        "traced": runs.traced,
        "machine": runs.machine,
        "kernel": runs.kernel,
        "phases": list,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// A JSON file of saved runs; errors name the file.
fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let here = |e: String| format!("{}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| here(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| here(e.to_string()))
}

/// The numbers of a JSON list (nothing if it is not one).
fn json_nums(x: &serde_json::Value) -> Vec<f64> {
    x.as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
        .unwrap_or_default()
}

/// A JSON object of counter values.
fn json_counters(x: &serde_json::Value) -> Option<BTreeMap<String, i64>> {
    Some(
        x.as_object()?
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap_or(0)))
            .collect(),
    )
}

/// Read what `save_runs` wrote.
fn load_runs(path: &Path) -> Result<Runs, String> {
    let here = |e: String| format!("{}: {e}", path.display());
    let v = read_json(path)?;
    let nums = json_nums;
    let mut out = Vec::new();
    for p in v["phases"]
        .as_array()
        .ok_or_else(|| here("no `phases` list".into()))?
    {
        let name = p["name"]
            .as_str()
            .ok_or_else(|| here("a phase without `name`".into()))?
            .to_string();
        let counters =
            json_counters(&p["counters"]).ok_or_else(|| here(format!("{name}: no `counters`")))?;
        let fm = p["fault_mismatch"]
            .as_array()
            .and_then(|a| Some((a.first()?.as_i64()?, a.get(1)?.as_i64()?)));
        out.push(Measured {
            name,
            counters,
            cpu: nums(&p["thread_cpu_ns"]),
            wall: nums(&p["wall_ns"]),
            fault_mismatch: fm,
        });
    }
    let s = |k: &str| v[k].as_str().unwrap_or("?").to_string();
    Ok(Runs {
        phases: out,
        load_start: s("load_start"),
        load_end: s("load_end"),
        // Files written before the key existed came from traced runs.
        traced: v["traced"].as_bool().unwrap_or(true),
        // ... and from this host, natively.
        machine: v["machine"].as_str().map_or_else(cpu_model, str::to_string),
        kernel: v["kernel"].as_str().map(str::to_string),
    })
}

/// The median and worst absolute errors of a fit and of its leave-one-out
/// predictions, in percent.
fn error_summary(errs: &[f64], loos: &[f64]) -> [f64; 4] {
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    [median(errs), max(errs), median(loos), max(loos)].map(|x| 100.0 * x)
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

/// The measured phases and when they were measured.
struct Runs {
    phases: Vec<Measured>,
    /// Load average before and after the timing runs.
    load_start: String,
    load_end: String,
    /// Whether the timing runs counted tracepoints.
    traced: bool,
    /// What ran them (the profile's `cpu`).
    machine: String,
    /// The guest kernel they ran in (`--kernel`; its machine is the
    /// scenario's), None natively.
    kernel: Option<String>,
}

/// Run every scenario of the corpus `--repeat` times on `timing`.
fn measure_corpus(a: &CalibrateArgs, timing: &Timing) -> Result<Runs, String> {
    let files = corpus_files(&a.corpus, &a.exclude)?;
    let load_start = loadavg();
    foliosim_uapi::note!(
        "foliosim calibrate: {} scenarios x {} {} runs (load average {load_start})",
        files.len(),
        a.repeat,
        timing.engine.name()
    );
    let mut phases = Vec::new();
    for f in &files {
        foliosim_uapi::note!("  {}", f.display());
        phases.extend(measure_scenario(f, a.repeat, timing)?);
    }
    Ok(Runs {
        phases,
        load_start,
        load_end: loadavg(),
        traced: timing.traced(),
        machine: timing.machine.clone(),
        kernel: timing.kernel.clone(),
    })
}

/// The runs to fit: read with `--from-runs` or measured, recounted with
/// `--recount`, saved with `--save-runs`.
fn gather_runs(a: &CalibrateArgs) -> Result<Runs, String> {
    let mut runs = match &a.from_runs {
        Some(path) => load_runs(path)?,
        None => measure_corpus(a, &Timing::of(a)?)?,
    };
    if a.recount {
        // Saved guest runs are recounted on the scenarios' own machines,
        // native ones with this host's knobs.
        let defaults = match runs.kernel {
            Some(_) => Vec::new(),
            None => Timing::native().defaults,
        };
        recount(&mut runs.phases, &a.corpus, &a.exclude, &defaults)?;
    }
    if let Some(path) = &a.save_runs {
        let text = save_runs(&runs);
        write_output(path, &text, &[]).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(runs)
}

/// The phases the fit uses, and what the others and the repeats' spread
/// tell.
struct Selection {
    samples: Vec<Sample>,
    /// Phases under `--min-ms` (not fitted).
    skipped: Vec<String>,
    /// Phases whose repeats spread more than `--max-spread`.
    noisy: Vec<String>,
    /// Per phase: (spread of the repeats / median, median wall time).
    spreads: BTreeMap<String, (f64, f64)>,
}

/// The samples of the phases measured long enough to fit (median thread
/// CPU time of the repeats).
fn select_samples(phases: &[Measured], a: &CalibrateArgs) -> Selection {
    let min_ns = a.min_ms * 1e6;
    let mut sel = Selection {
        samples: Vec::new(),
        skipped: Vec::new(),
        noisy: Vec::new(),
        spreads: BTreeMap::new(),
    };
    for m in phases {
        let med = median(&m.cpu);
        let spread = if med > 0.0 {
            (m.cpu.iter().cloned().fold(f64::MIN, f64::max)
                - m.cpu.iter().cloned().fold(f64::MAX, f64::min))
                / med
        } else {
            0.0
        };
        sel.spreads
            .insert(m.name.clone(), (spread, median(&m.wall)));
        if med < min_ns {
            sel.skipped
                .push(format!("{} ({:.3} ms)", m.name, med / 1e6));
            continue;
        }
        if spread > a.max_spread {
            sel.noisy
                .push(format!("{} ({:.0}%)", m.name, 100.0 * spread));
        }
        sel.samples.push(Sample {
            name: m.name.clone(),
            counters: m.counters.clone(),
            measured_ns: med,
        });
    }
    sel
}

/// One line per fitted phase: measured, wall and modelled time, the
/// fit's and the leave-one-out error; then the error summary.
fn phase_table(sel: &Selection, res: &FitResult) -> String {
    let mut text = String::new();
    let w = sel
        .samples
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(
        text,
        "{:<w$}  {:>11}  {:>11}  {:>7}  {:>11}  {:>8}  {:>8}",
        "phase", "measured ms", "wall ms", "spread", "modelled ms", "error", "LOO err"
    );
    let (mut errs, mut loos) = (Vec::new(), Vec::new());
    for (i, s) in sel.samples.iter().enumerate() {
        let e = rel_err(res.modelled[i], s.measured_ns);
        let l = rel_err(res.loo_modelled[i], s.measured_ns);
        errs.push(e.abs());
        loos.push(l.abs());
        let (spread, wall) = sel.spreads[&s.name];
        let _ = writeln!(
            text,
            "{:<w$}  {:>11.3}  {:>11.3}  {:>6.1}%  {:>11.3}  {:>8}  {:>8}",
            s.name,
            s.measured_ns / 1e6,
            wall / 1e6,
            100.0 * spread,
            res.modelled[i] / 1e6,
            pct(e),
            pct(l)
        );
    }
    let [fit_med, fit_max, loo_med, loo_max] = error_summary(&errs, &loos);
    let _ = writeln!(
        text,
        "\nfit: median |error| {fit_med:.1}%, worst {fit_max:.1}%; \
         leave-one-out: median {loo_med:.1}%, worst {loo_max:.1}%"
    );
    text
}

/// The fit's report: the phase table, the group scales, and notes on the
/// phases not fitted, fault counts and the machine's load.
fn fit_text(a: &CalibrateArgs, runs: &Runs, sel: &Selection, res: &FitResult) -> String {
    let mut text = phase_table(sel, res);
    let _ = writeln!(text, "group scales (x prior):");
    for (g, s) in &res.scales {
        let note = if res.unidentified.contains(g) {
            "  (not exercised by the corpus)"
        } else {
            ""
        };
        let _ = writeln!(text, "  {g:<10} {s:>8.3}{note}");
    }
    if !sel.skipped.is_empty() {
        let _ = writeln!(
            text,
            "not fitted (under {} ms natively): {}",
            a.min_ms,
            sel.skipped.join(", ")
        );
    }
    for m in runs.phases.iter().filter(|m| m.fault_mismatch.is_some()) {
        let (s, n) = m.fault_mismatch.unwrap_or_default();
        let _ = writeln!(
            text,
            "note: {}: model pgfault {s} vs native minor+major faults {n}",
            m.name
        );
    }
    let _ = writeln!(
        text,
        "load average: {} at the start, {} at the end",
        runs.load_start, runs.load_end
    );
    if !sel.noisy.is_empty() {
        let _ = writeln!(
            text,
            "warning: the machine is noisy: repeats spread more than {:.0}% of their median in {} \
             (rerun when the load is low, or raise --repeat)",
            100.0 * a.max_spread,
            sel.noisy.join(", ")
        );
    }
    text
}

/// The comment heading a written profile: the command, the runs, and the
/// fit's summary lines of `text`.
fn profile_header(
    a: &CalibrateArgs,
    runs: &Runs,
    date: &str,
    repeats: usize,
    text: &str,
    groups: usize,
) -> String {
    format!(
        "Cost profile written by `foliosim calibrate{} --corpus {} --prior {} --shrink {}{}` \
         on {date}\n({repeats} runs per scenario on {}{}, {}).\n\
         Load average {} -> {}.\n{}",
        match &runs.kernel {
            Some(k) => format!(" --engine vm --kernel {k}"),
            None => String::new(),
        },
        a.corpus.display(),
        a.prior,
        a.shrink,
        a.exclude
            .iter()
            .map(|x| format!(" --exclude {x}"))
            .collect::<String>(),
        runs.machine,
        a.from_runs
            .as_ref()
            .map(|p| format!(", refitted from {}", p.display()))
            .unwrap_or_default(),
        if runs.traced {
            "timed with tracepoints counted: perf's handlers are in the costs"
        } else {
            "timed without tracepoint counters"
        },
        runs.load_start,
        runs.load_end,
        text.lines()
            .skip_while(|l| !l.starts_with("fit:"))
            .take(1 + groups + 1)
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// Costs the prior does not price (added to the profile at `out` by hand,
/// e.g. from another measurement) are carried over unchanged.
fn carry_over_costs(profile: &mut Profile, out: &Path) {
    if !out.exists() {
        return;
    }
    match Profile::resolve(&out.to_string_lossy()) {
        Ok(old) => {
            for (k, c) in old.costs {
                if let std::collections::btree_map::Entry::Vacant(e) = profile.costs.entry(k) {
                    foliosim_uapi::note!(
                        "foliosim calibrate: keeping {} from {}",
                        e.key(),
                        out.display()
                    );
                    e.insert(c);
                }
            }
        }
        Err(e) => foliosim_uapi::note!(
            "foliosim calibrate: warning: not carrying costs over from {}: {e}",
            out.display()
        ),
    }
}

pub(super) fn cmd_calibrate(a: &CalibrateArgs) -> Result<bool, String> {
    if a.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    if a.pagemap {
        return pagemap::cmd_pagemap(a);
    }
    let prior = Profile::resolve(&a.prior).map_err(|e| e.to_string())?;
    if a.engine == "vm" && a.from_runs.is_none() {
        // The prior prices one architecture's counters.
        let kernel = foliosim_vm::kernel_for(&a.vm.options(None)?, None)?;
        if kernel.arch.as_str() != prior.arch {
            return Err(format!(
                "--prior {} prices {}, but the guest kernel {} is {}: give a prior for {}",
                a.prior,
                prior.arch,
                kernel.name,
                kernel.arch.as_str(),
                kernel.arch.as_str()
            ));
        }
    }
    let runs = gather_runs(a)?;
    if let Some(spec) = &a.check {
        let profile = Profile::resolve(spec).map_err(|e| e.to_string())?;
        print!("{}", check::check_text(&profile, &runs.phases, a.min_ms)?);
        return Ok(true);
    }
    let sel = select_samples(&runs.phases, a);
    // The runs actually behind the medians (with --from-runs, those saved).
    let repeats = runs.phases.iter().map(|m| m.cpu.len()).max().unwrap_or(0);
    let date = today();
    let source = format!(
        "fitted by foliosim calibrate on {} {date} ({} phases, median of {repeats} runs, \
         thread CPU time, shrink {})",
        a.corpus.display(),
        sel.samples.len(),
        a.shrink
    );
    let res = fit(&prior, &sel.samples, &source, a.shrink)?;
    let text = fit_text(a, &runs, &sel, &res);
    print!("{text}");
    if let Some(out) = &a.out {
        let mut profile = res.profile.clone();
        profile.name = a.name.clone();
        profile.cpu = runs.machine.clone();
        let place = if runs.kernel.is_some() {
            "in a guest kernel in QEMU on this host"
        } else {
            "on this host"
        };
        profile.description = format!(
            "Calibrated {place} with foliosim calibrate on {date} ({repeats} runs per \
             scenario, median thread CPU time); every group of the prior {} scaled by the fit.",
            prior.name
        );
        let header = profile_header(a, &runs, &date, repeats, &text, res.scales.len());
        carry_over_costs(&mut profile, out);
        write_output(out, &profile.to_toml(&header), &[])
            .map_err(|e| format!("{}: {e}", out.display()))?;
        foliosim_uapi::note!("foliosim calibrate: wrote {}", out.display());
    }
    Ok(true)
}
