//! `foliosim sweep`, `foliosim diff` and `foliosim run --ab`: the command
//! line over `foliosim_explore`.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use foliosim_explore::{
    diff, expand, grid, nway, sweep, sweep_with, Engine, Point, PointResult, Setting, SimOptions,
    Source, SweepOptions, SweepSpec, Table, TableFormat,
};
use foliosim_scenario::Arch;

use crate::output;

/// `--format` of a sweep: csv, jsonl, arrow, parquet.
fn table_format_arg() -> impl clap::builder::TypedValueParser<Value = TableFormat> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(TableFormat::NAMES)
        .map(|s: String| TableFormat::from_name(&s).expect("a listed format"))
}

#[derive(clap::Args)]
pub(crate) struct SweepArgs {
    /// Scenario files (TOML); every grid point runs on each.
    scenarios: Vec<PathBuf>,
    /// A sweep file (TOML): scenarios, engine, base overrides, [grid] and
    /// [[zip]] tables (docs/scenarios.md, "Sweep files"). --grid and --set
    /// add to it.
    #[arg(long, value_name = "SWEEP.toml")]
    file: Option<PathBuf>,
    /// A key and its values: `KEY=V1,V2,...`, `KEY=[A..B]` (A to B),
    /// `KEY=BASE<<[A..B]` (BASE shifted by A to B). Any scenario key,
    /// `folio_size` (4K, 16K, ..., 2M) or `repeat` (run numbers, as
    /// --repeat). Repeatable; keys combine as a
    /// Cartesian product.
    #[arg(long, value_name = "KEY=VALUES")]
    grid: Vec<String>,
    /// Zip the --grid keys (equal-length lists, advancing together)
    /// instead of taking their product.
    #[arg(long)]
    zip: bool,
    /// Override a scenario key at every point (applied before the grid).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Simulated architecture of every point (a grid over `arch` sweeps it).
    #[arg(long, value_parser = crate::arch_arg())]
    arch: Option<Arch>,
    /// Seed for random choices without their own seed.
    #[arg(long)]
    seed: Option<u64>,
    /// The engine: the simulator, the host kernel (root), or a kernel in
    /// QEMU (with --kernel). Native and VM points run one at a time.
    #[arg(long, value_parser = ["sim", "native", "vm"])]
    engine: Option<String>,
    /// The guest kernel of --engine vm (see `foliosim vm kernel list`).
    #[arg(long, value_name = "NAME|PATH")]
    kernel: Option<String>,
    /// Simulations run in parallel (default: every core).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Write the table to FILE (atomically). Run again with the same FILE,
    /// a sweep skips the points it already holds and appends the others
    /// (points recorded as failed run again). One sweep at a time writes
    /// a FILE: while one runs (it locks `.FILE.foliosim-lock` beside it),
    /// another to the same FILE is refused at once, naming its process.
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// With -o: write the points run so far to FILE at most every SECS
    /// seconds (0: after every point), so that an interrupted sweep
    /// resumes where it stopped.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    checkpoint: u64,
    /// Table format (default: from the -o file's extension, .csv, .jsonl,
    /// .arrow, .parquet; else csv).
    #[arg(long, value_parser = table_format_arg())]
    format: Option<TableFormat>,
    /// Run every point N times, one after the other (native and vm; the
    /// simulator gives every run the same report): the table gets a
    /// `repeat` column, 1 to N, and `foliosim diff` of such tables
    /// compares each point's runs with Welch's t-test.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeat: usize,
    /// Run a sweep of more than 10,000 points.
    #[arg(long)]
    yes: bool,
    /// No progress bar and no summary on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Memory all parallel simulations together may use (like `16G`);
    /// each of N jobs gets 1/N. Default: 3/4 of the available memory.
    #[arg(long, value_name = "SIZE", value_parser = crate::size_arg)]
    max_memory: Option<u64>,
    /// Run the model's invariant checker after every step.
    #[arg(long)]
    check: bool,
    /// Cost profile of the modelled time (file or shipped name).
    #[arg(long, value_name = "FILE|NAME")]
    profile: Option<String>,
    /// Native engine: do not count tracepoints (timing runs).
    #[arg(long)]
    no_trace: bool,
}

/// Base overrides from `--set`, `--arch` and `--seed`.
fn base_settings(
    set: &[String],
    arch: Option<Arch>,
    seed: Option<u64>,
) -> Result<Vec<Setting>, String> {
    let mut out = Vec::new();
    for s in set {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("--set {s}: expected KEY=VALUE"))?;
        out.push(Setting {
            key: k.trim().to_string(),
            value: v.trim().to_string(),
            source: Source::SetArg(s.clone()),
        });
    }
    if let Some(a) = arch {
        out.push(Setting {
            key: "arch".into(),
            value: a.as_str().into(),
            source: Source::ArchArg,
        });
    }
    if let Some(seed) = seed {
        out.push(Setting {
            key: "seed".into(),
            value: seed.to_string(),
            source: Source::SetArg(format!("seed={seed}")),
        });
    }
    Ok(out)
}

/// The engine named `name` (`sim` by default).
fn engine(a: &SweepArgs, name: Option<&str>, kernel: Option<&str>) -> Result<Engine, String> {
    let sim_only = |what: &str, set: bool| {
        if set && name.is_some_and(|n| n != "sim") {
            Err(format!("{what} applies to simulated runs (--engine sim)"))
        } else {
            Ok(())
        }
    };
    sim_only("--profile", a.profile.is_some())?;
    sim_only("--check", a.check)?;
    Ok(match name.unwrap_or("sim") {
        "native" => Engine::Native { trace: !a.no_trace },
        "vm" => Engine::Vm(foliosim_vm::VmOptions {
            kernel: kernel.map(str::to_string).ok_or(
                "--engine vm needs --kernel: `foliosim vm kernel list` shows the kernels available",
            )?,
            arch: a.arch,
            timeout: std::time::Duration::from_secs(1800),
            accel: foliosim_vm::Accel::from_name("auto").expect("a listed accelerator"),
        }),
        _ => Engine::Sim(SimOptions {
            check: a.check,
            profile: a.profile.clone(),
            max_memory: a.max_memory,
        }),
    })
}

/// The sweep the arguments describe: the sweep file's, with the
/// scenarios, overrides and grid of the command line added.
fn sweep_spec(a: &SweepArgs) -> Result<SweepSpec, String> {
    let mut spec = match &a.file {
        Some(f) => foliosim_explore::parse_sweep_file(f)?,
        None => SweepSpec::new(Vec::new()),
    };
    spec.scenarios.extend(a.scenarios.iter().cloned());
    spec.base.extend(base_settings(&a.set, a.arch, a.seed)?);
    let dims = a
        .grid
        .iter()
        .map(|g| grid::parse_grid_arg(g))
        .collect::<Result<Vec<_>, _>>()?;
    spec.grid.add(dims, a.zip);
    match a.repeat {
        0 => return Err("--repeat 0: expected 1 or more runs per point".into()),
        1 => {}
        n => spec.grid.add(vec![grid::repeat_dim(n)], false),
    }
    spec.allow_large = a.yes;
    Ok(spec)
}

/// The table format: `--format`, else the -o file's extension (one
/// [`TableFormat::from_path`] knows; another is refused), else CSV
/// (Arrow and Parquet only to a file or a pipe).
fn table_format(a: &SweepArgs) -> Result<TableFormat, String> {
    let by_extension = |o: &Path| match o.extension() {
        Some(x) if !output::is_stream(o) => TableFormat::from_path(o).map(Some).ok_or_else(|| {
            format!(
                "-o {}: no table format has the extension .{}: use {} (or --format {})",
                o.display(),
                x.to_string_lossy(),
                TableFormat::EXTENSIONS.join(", "),
                TableFormat::NAMES.join("|")
            )
        }),
        _ => Ok(None),
    };
    let format = match (a.format, a.output.as_deref()) {
        (Some(f), _) => f,
        (None, Some(o)) => by_extension(o)?.unwrap_or(TableFormat::Csv),
        (None, None) => TableFormat::Csv,
    };
    let binary = matches!(format, TableFormat::Arrow | TableFormat::Parquet);
    if binary && a.output.is_none() && std::io::stdout().is_terminal() {
        return Err(format!(
            "--format {} is binary: write it to a file with -o FILE",
            format.name()
        ));
    }
    Ok(format)
}

/// The table a sweep starts from and the points it runs: with an -o file
/// that holds a table of the same grid and provenance `prov`, that table
/// and the points it does not hold yet (and how many it holds), else an
/// empty table and every point. A table whose points ran with another
/// provenance is refused, naming what differs.
fn resume(
    a: &SweepArgs,
    format: TableFormat,
    keys: &[String],
    points: Vec<Point>,
    engine: &Engine,
    prov: &foliosim_report::Provenance,
) -> Result<(Table, Vec<Point>, usize), String> {
    let Some(o) = a.output.as_deref().filter(|o| has_data(o)) else {
        let mut t = Table::new(keys);
        t.provenance = Some(prov.clone());
        return Ok((t, points, 0));
    };
    let mut old = Table::read(o, format)?;
    old.adopt_provenance(prov).map_err(|e| {
        format!(
            "{0}: {e}: use another -o, or delete {0} to run them again",
            o.display()
        )
    })?;
    let before = points.len();
    let points = old
        .resume(keys, points, engine.name())
        .map_err(|e| format!("{}: {e}", o.display()))?;
    let skipped = before - points.len();
    Ok((old, points, skipped))
}

/// Write the table to `out` (atomically), or to stdout.
fn write_table(
    out: Option<&Path>,
    format: TableFormat,
    t: &Table,
    inputs: &[PathBuf],
) -> Result<(), String> {
    let bytes = t.encode(format)?;
    match out {
        Some(o) => {
            output::write_output(o, &bytes, inputs).map_err(|e| format!("{}: {e}", o.display()))
        }
        None => {
            use std::io::Write as _;
            std::io::stdout()
                .write_all(&bytes)
                .map_err(|e| format!("stdout: {e}"))
        }
    }
}

/// A running sweep's finished points: the table so far replaces the -o
/// file (atomically) at most every --checkpoint seconds, so an
/// interrupted sweep resumes, and an interrupt writes it at once
/// ([`save_and_exit`]).
struct Progress {
    output: Option<PathBuf>,
    format: TableFormat,
    inputs: Vec<PathBuf>,
    keys: Vec<String>,
    /// The table the sweep started from and how many points it held.
    table: Table,
    skipped: usize,
    /// How many points the sweep runs.
    total: usize,
    every: Duration,
    /// The results so far and when the last checkpoint was written.
    done: Mutex<(Vec<PointResult>, Instant)>,
}

/// The sweep running now, for a terminal signal to save.
static RUNNING: Mutex<Option<Arc<Progress>>> = Mutex::new(None);

impl Progress {
    /// Whether the table goes to a file that checkpoints replace.
    fn to_file(&self) -> bool {
        self.output
            .as_deref()
            .is_some_and(|o| !output::is_stream(o))
    }

    /// The starting table and `done`, in point order.
    fn table_with(&self, done: &mut [PointResult]) -> Result<Table, String> {
        done.sort_by_key(|r| r.point.index);
        let mut t = self.table.clone();
        t.append(Table::from_results(&self.keys, done))?;
        Ok(t)
    }

    /// A point has run: write a checkpoint if one is due (never after the
    /// last point: the whole table follows).
    fn record(&self, r: &PointResult) {
        let mut g = self.done.lock().unwrap_or_else(|e| e.into_inner());
        g.0.push(r.clone());
        if !self.to_file() || g.1.elapsed() < self.every || g.0.len() == self.total {
            return;
        }
        let snapshot = self
            .table_with(&mut g.0)
            .and_then(|t| write_table(self.output.as_deref(), self.format, &t, &self.inputs));
        if let Err(e) = snapshot {
            eprintln!("foliosim sweep: checkpoint not written: {e}");
        }
        g.1 = Instant::now();
    }
}

/// SIGINT or SIGTERM during a sweep: write the points finished so far
/// where the table goes, say how many, and end the process with status
/// 130. Returns when no sweep runs.
fn save_and_exit() {
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = running.as_ref() else {
        return;
    };
    // Holding `done` keeps checkpoints from starting; one being written
    // has ended.
    let mut g = p.done.lock().unwrap_or_else(|e| e.into_inner());
    let saved = p
        .table_with(&mut g.0)
        .and_then(|t| write_table(p.output.as_deref(), p.format, &t, &p.inputs));
    let _no_temporary = output::hold_temporary_files();
    let _no_lock = output::release_for_exit();
    let (n, m) = (p.skipped + g.0.len(), p.skipped + p.total);
    match (saved, &p.output) {
        (Err(e), _) => eprintln!("foliosim sweep: interrupted; the table was not written: {e}"),
        (Ok(()), Some(o)) if p.to_file() => eprintln!(
            "foliosim sweep: {n} of {m} saved in {}; run again to continue",
            o.display()
        ),
        (Ok(()), _) => eprintln!("foliosim sweep: interrupted: {n} of {m} points written"),
    }
    std::process::exit(130);
}

pub(crate) fn cmd_sweep(a: &SweepArgs) -> Result<bool, String> {
    route_signals()?;
    let spec = sweep_spec(a)?;
    let engine = engine(
        a,
        a.engine.as_deref().or(spec.engine.as_deref()),
        a.kernel.as_deref().or(spec.kernel.as_deref()),
    )?;
    grid::check_engine(&spec.grid, &engine)?;
    let format = table_format(a)?;
    // Everything that can be refused is refused before a point runs; the
    // table is locked before it is read.
    let lock = match &a.output {
        Some(o) => output::OutputLock::take(o, &spec.scenarios)?,
        None => None,
    };
    let keys = spec.grid.keys();
    let prov = foliosim_explore::provenance(&spec, &engine);
    let (table, points, skipped) = resume(a, format, &keys, expand(&spec)?, &engine, &prov)?;
    let jobs = if engine.parallel() {
        a.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    } else {
        1
    };
    if !a.quiet && skipped > 0 {
        eprintln!(
            "foliosim sweep: {skipped} points already in {}, {} to run",
            a.output.as_deref().unwrap_or(Path::new("-")).display(),
            points.len()
        );
    }
    let start = Instant::now();
    let progress = Arc::new(Progress {
        output: a.output.clone(),
        format,
        inputs: spec.scenarios.clone(),
        keys: keys.clone(),
        table,
        skipped,
        total: points.len(),
        every: Duration::from_secs(a.checkpoint),
        done: Mutex::new((Vec::new(), Instant::now())),
    });
    let opts = SweepOptions {
        jobs: Some(jobs),
        progress: !a.quiet,
    };
    *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress.clone());
    let results = sweep_with(&points, &engine, &opts, &|r| progress.record(r));
    // From here a signal waits for the whole table to be written.
    RUNNING.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut table = Arc::try_unwrap(progress).map_or_else(|p| p.table.clone(), |p| p.table);
    let run_time = start.elapsed();
    let failed = results.iter().filter(|r| r.result.is_err()).count();
    table.append(Table::from_results(&keys, &results))?;
    write_table(a.output.as_deref(), format, &table, &spec.scenarios)?;
    if !a.quiet {
        eprintln!(
            "foliosim sweep: {} points run in {:.2} s ({} {}, engine {}){}",
            results.len(),
            run_time.as_secs_f64(),
            jobs,
            if jobs == 1 { "job" } else { "jobs" },
            engine.name(),
            a.output
                .as_ref()
                .map_or(String::new(), |o| format!(", table in {}", o.display()))
        );
    }
    if failed > 0 {
        eprintln!(
            "foliosim sweep: {failed} of {} points failed; the `error` column says why",
            results.len()
        );
        drop(lock);
        std::process::exit(1);
    }
    drop(lock);
    Ok(true)
}

/// Whether `path` is a regular file with contents (a table to resume;
/// never standard output).
fn has_data(path: &Path) -> bool {
    !output::is_stream(path) && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// Handle SIGINT, SIGTERM, SIGHUP and SIGQUIT in one thread from now on
/// (blocked in this thread and every worker it starts): each takes
/// effect once no temporary table file exists; one that ends the process
/// removes the sweep's lock file first. Call before any thread starts.
fn route_signals() -> Result<(), String> {
    foliosim_native::route_terminal_signals(|sig, ends, deliver| {
        if ends && (sig == libc::SIGINT || sig == libc::SIGTERM) {
            save_and_exit();
        }
        let _no_temporary = output::hold_temporary_files();
        // Held until the signal is delivered: no lock file is made after
        // the one there was is removed.
        let _no_lock = ends.then(output::release_for_exit);
        deliver();
    })
    .map_err(|e| format!("handling signals: {e}"))
}

#[derive(clap::Args)]
pub(crate) struct DiffArgs {
    /// Reports (`foliosim run|native|vm --format json -o FILE`), the first
    /// the base; or sweep tables (`foliosim sweep -o`, one kernel or
    /// setting each), the first the base, compared point by point in the
    /// mmtests style (a point's runs: its `--repeat` rows); or, with --by,
    /// one sweep table.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Compare the points of a sweep table whose KEY has its first value
    /// (base) with those where it has the second (patched); KEY=BASE,PATCHED
    /// names the pair.
    #[arg(long, value_name = "KEY[=BASE,PATCHED]")]
    by: Option<String>,
    /// Keys of the sweep that make the column groups (default: arch when it
    /// varies, else every varying key); the other varying keys make blocks
    /// of rows.
    #[arg(long, value_name = "KEY,...", value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Show only these values (counter names, `modelled_ns`); with one
    /// name, the blocks become the lines of one table.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    only: Option<Vec<String>>,
    /// Show every value, not only those that changed.
    #[arg(long)]
    all: bool,
    /// The title of each report file's column, in order (default: the
    /// file names); given or with repeated runs (`--repeat`) or more than
    /// two files, the comparison is the mmtests-style table.
    #[arg(long, value_name = "NAME")]
    label: Vec<String>,
    /// Significance level of Welch's t-test in the mmtests-style table: a
    /// change of the mean whose two-sided p-value is below it is marked.
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    level: f64,
    /// Output: fixed-width text for a mail, Markdown, CSV or JSON.
    #[arg(long, default_value = "text", value_parser = ["text", "md", "csv", "json"])]
    format: String,
    /// Write the table to FILE (atomically) instead of stdout.
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

/// The diff `d` in `format` (text, md, csv, json); `inputs` describe
/// what was compared in the JSON.
fn render_diff(
    d: &diff::Diff,
    format: &str,
    all: bool,
    inputs: &[serde_json::Value],
) -> Result<String, String> {
    d.render(format, all, inputs)
}

fn emit(text: &str, out: Option<&Path>, inputs: &[PathBuf]) -> Result<(), String> {
    match out {
        Some(o) => {
            output::write_output(o, text, inputs).map_err(|e| format!("{}: {e}", o.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// The reports of the JSON document `p`.
fn load_reports(p: &Path) -> Result<Vec<foliosim_report::Report>, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    diff::reports_from_json(&text).map_err(|e| {
        format!(
            "{}: {e} (expected `foliosim run --format json` output; sweep tables \
             are compared with sweep tables only, by extension .csv, .jsonl, .arrow or \
             .parquet)",
            p.display()
        )
    })
}

/// The diff of one sweep table `t` by `by`.
fn diff_of_table(a: &DiffArgs, t: &Path, by: &str) -> Result<diff::Diff, String> {
    let table = Table::load(t)?;
    let (key, pair) = diff::parse_by(by)?;
    diff::diff_table(&table, key, pair, a.columns.as_deref())
        .map_err(|e| format!("{}: {e}", t.display()))
}

/// The column titles of an mmtests-style `diff`: `--label`, one per file,
/// else the file names.
fn diff_labels(a: &DiffArgs) -> Result<Vec<String>, String> {
    if !a.label.is_empty() && a.label.len() != a.files.len() {
        return Err(format!(
            "{} --label for {} files: give one per file, in order",
            a.label.len(),
            a.files.len()
        ));
    }
    Ok(a.files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            a.label.get(i).cloned().unwrap_or_else(|| {
                f.file_name()
                    .map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into())
            })
        })
        .collect())
}

/// `diff` of report files in the mmtests style: N inputs, repeated runs,
/// Welch's t-test.
fn diff_nway(a: &DiffArgs, loaded: Vec<Vec<foliosim_report::Report>>) -> Result<String, String> {
    let inputs: Vec<nway::Input> = diff_labels(a)?
        .into_iter()
        .zip(&a.files)
        .zip(loaded)
        .map(|((label, f), reports)| nway::Input {
            label,
            file: f.display().to_string(),
            reports,
        })
        .collect();
    nway_text(a, nway::compare(&inputs, a.level)?)
}

/// `diff` of sweep tables (`A.csv B.csv ...`): per point, its runs in
/// each table compared in the mmtests style.
fn diff_tables(a: &DiffArgs) -> Result<String, String> {
    if a.columns.is_some() {
        return Err("--columns applies to a sweep table with --by".into());
    }
    let tables = a
        .files
        .iter()
        .map(|f| Table::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let inputs: Vec<nway::TableInput> = diff_labels(a)?
        .into_iter()
        .zip(&a.files)
        .zip(&tables)
        .map(|((label, f), table)| nway::TableInput {
            label,
            file: f.display().to_string(),
            table,
        })
        .collect();
    nway_text(a, nway::compare_tables(&inputs, a.level)?)
}

/// An mmtests-style comparison as `--format` text or JSON, `--only` its
/// named values.
fn nway_text(a: &DiffArgs, mut n: nway::Nway) -> Result<String, String> {
    if let Some(names) = &a.only {
        n.retain_names(names);
    }
    match a.format.as_str() {
        "json" => Ok(n.json(a.all)),
        "text" => Ok(n.text(a.all)),
        f => Err(format!(
            "--format {f}: the comparison of repeated runs or more than two \
             reports is written as text or json"
        )),
    }
}

pub(crate) fn cmd_diff(a: &DiffArgs) -> Result<bool, String> {
    let mut inputs: Vec<serde_json::Value> = Vec::new();
    let mut d = match (&a.by, a.files.as_slice()) {
        (Some(by), [t]) => {
            inputs.push(serde_json::json!({"file": t.display().to_string()}));
            diff_of_table(a, t, by)?
        }
        (Some(_), _) => return Err("--by compares the points of one sweep table".into()),
        (None, [_]) => {
            return Err(
                "give two or more report files or sweep tables (the first the base), or \
                 one sweep table with --by KEY"
                    .into(),
            )
        }
        (None, files) if files.iter().all(|f| TableFormat::from_path(f).is_some()) => {
            let text = diff_tables(a)?;
            emit(&text, a.output.as_deref(), &a.files)?;
            return Ok(true);
        }
        (None, files) => {
            if a.columns.is_some() {
                return Err("--columns applies to a sweep table with --by".into());
            }
            let loaded = files
                .iter()
                .map(|f| load_reports(f))
                .collect::<Result<Vec<_>, _>>()?;
            let repeated = loaded
                .iter()
                .any(|r| foliosim_report::stats::group_runs(r).len() < r.len());
            if files.len() > 2 || repeated || !a.label.is_empty() {
                let text = diff_nway(a, loaded)?;
                emit(&text, a.output.as_deref(), &a.files)?;
                return Ok(true);
            }
            for (f, r) in files.iter().zip(&loaded) {
                let prov: Vec<serde_json::Value> = r
                    .iter()
                    .map(|r| {
                        r.provenance
                            .as_ref()
                            .map_or(serde_json::Value::Null, |p| p.to_json_value())
                    })
                    .collect();
                inputs
                    .push(serde_json::json!({"file": f.display().to_string(), "provenance": prov}));
            }
            diff::diff_reports(&loaded[0], &loaded[1])?
        }
    };
    if let Some(names) = &a.only {
        d.retain_names(names)?;
    }
    let text = render_diff(&d, &a.format, a.all, &inputs)?;
    emit(&text, a.output.as_deref(), &a.files)?;
    Ok(true)
}

/// `foliosim run --ab KEY[=BASE,PATCHED]`: run the scenarios with KEY at
/// both values and print the diff (`--format table` is the text table).
pub(crate) fn run_ab(c: &crate::Common, ab: &str) -> Result<bool, String> {
    route_signals()?;
    let mut spec = SweepSpec::new(c.scenarios.clone());
    spec.base = base_settings(&c.set, c.arch, c.seed)?;
    let dim = grid::parse_ab_arg(ab)?;
    let (key, base, patched) = (
        dim.key.clone(),
        dim.values[0].clone(),
        dim.values[1].clone(),
    );
    spec.grid.add(vec![dim], false);
    let points = expand(&spec).map_err(|e| {
        if ab.contains('=') {
            e
        } else {
            format!("{e}\n(for a key that is not a switch: --ab {ab}=BASE,PATCHED)")
        }
    })?;
    let engine = Engine::Sim(SimOptions {
        check: c.check,
        profile: c.profile.clone(),
        max_memory: c.max_memory,
    });
    let results = sweep(&points, &engine, &SweepOptions::default());
    if let Some(e) = results.iter().find_map(|r| r.result.as_ref().err()) {
        return Err(e.clone());
    }
    let table = Table::from_results(&spec.grid.keys(), &results);
    let d = diff::diff_table(&table, &key, Some((&base, &patched)), None)?;
    let format = match c.format {
        foliosim_report::Format::Table => "text",
        foliosim_report::Format::Csv => "csv",
        foliosim_report::Format::Json => "json",
    };
    let inputs: Vec<serde_json::Value> = c
        .scenarios
        .iter()
        .map(|s| serde_json::json!({"scenario_path": s.display().to_string()}))
        .collect();
    let text = render_diff(&d, format, false, &inputs)?;
    emit(&text, c.output.as_deref(), &c.scenarios)?;
    Ok(true)
}
