//! Running points: one ([`run_point`]) or a whole sweep in parallel
//! ([`sweep`]).

use std::io::IsTerminal as _;

use foliosim_report::Report;
use rayon::prelude::*;

use crate::spec::Point;

pub use foliosim_run::{Engine, SimOptions};

/// How [`sweep`] runs.
#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    /// Worker threads for simulated points; None: every core.
    pub jobs: Option<usize>,
    /// Draw a progress bar on stderr (only when stderr is a terminal).
    pub progress: bool,
}

/// A point and what running it gave.
#[derive(Clone, Debug)]
pub struct PointResult {
    pub point: Point,
    /// The engine's name (the `engine` column).
    pub engine: String,
    /// The report, or why the point failed (the `error` column).
    pub result: Result<Report, String>,
}

/// Run one point on `engine`: load its scenario with its overrides, run
/// it, and return the report (expectations evaluated; modelled time added
/// to simulated runs), or the error, which names the scenario file.
pub fn run_point(point: &Point, engine: &Engine) -> Result<Report, String> {
    let src = foliosim_scenario::Source::read(&point.scenario).map_err(|e| e.to_string())?;
    let job = foliosim_run::Job {
        source: &src,
        overrides: &point.overrides,
        expect: true,
        given: None,
    };
    foliosim_run::run(&job, engine).map_err(|e| e.to_string())
}

/// The number of workers `opts` asks for on `engine`.
pub(crate) fn workers(engine: &Engine, opts: &SweepOptions) -> usize {
    if !engine.parallel() {
        return 1;
    }
    opts.jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// Run `points` on `engine` and return their results in point order. A
/// failed point is an `Err` result; the others still run.
///
/// Simulated points run on `opts.jobs` rayon workers (default: every
/// core). The simulator's memory guard then applies per worker: each
/// point may use `max_memory / jobs` (of `SimOptions::max_memory`, else
/// of 3/4 of the host's available memory), so the workers together stay
/// within what one run may use; a point too large for its share fails
/// with the simulator's "would need about N MiB" error (run it with fewer
/// jobs). Native and VM points run one at a time, in order.
pub fn sweep(points: &[Point], engine: &Engine, opts: &SweepOptions) -> Vec<PointResult> {
    sweep_with(points, engine, opts, &|_| {})
}

/// [`sweep`], calling `on_done` with each result as soon as its point has
/// run (from the worker thread that ran it, in completion order): for
/// checkpoints of long sweeps.
pub fn sweep_with(
    points: &[Point],
    engine: &Engine,
    opts: &SweepOptions,
    on_done: &(dyn Fn(&PointResult) + Sync),
) -> Vec<PointResult> {
    let jobs = workers(engine, opts);
    let engine = match engine {
        Engine::Sim(o) if jobs > 1 => {
            let total = o.max_memory.or_else(|| {
                foliosim_uapi::meminfo::meminfo()
                    .available
                    .map(|a| a / 4 * 3)
            });
            Engine::Sim(SimOptions {
                max_memory: total.map(|t| t / jobs as u64),
                ..o.clone()
            })
        }
        e => e.clone(),
    };
    let bar = if opts.progress && std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(points.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} points  {elapsed_precise} (eta {eta})  {msg}",
            )
            .expect("a valid template"),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let one = |p: &Point| {
        let result = run_point(p, &engine);
        if result.is_err() {
            bar.set_message(format!("point {} failed", p.index));
        }
        bar.inc(1);
        let r = PointResult {
            point: p.clone(),
            engine: engine.name().to_string(),
            result,
        };
        on_done(&r);
        r
    };
    let results = if jobs > 1 {
        match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
            Ok(pool) => pool.install(|| points.par_iter().map(one).collect()),
            Err(_) => points.iter().map(one).collect(),
        }
    } else {
        points.iter().map(one).collect()
    };
    bar.finish_and_clear();
    results
}

/// Expand `spec`, run its points on `engine` and return the tidy table:
/// [`crate::expand`], [`sweep`] and [`crate::Table::from_results`] in one
/// call.
pub fn run_sweep(
    spec: &crate::SweepSpec,
    engine: &Engine,
    opts: &SweepOptions,
) -> Result<crate::Table, String> {
    let points = crate::expand(spec)?;
    let results = sweep(&points, engine, opts);
    Ok(crate::Table::from_results(&spec.grid.keys(), &results))
}
