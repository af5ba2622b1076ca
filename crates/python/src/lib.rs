//! The Python binding of foliosim: the extension module `foliosim._native`
//! that the `foliosim` package (`python/foliosim/`) wraps.
//!
//! It runs scenarios on the simulator exactly as `foliosim run` does
//! (overrides, `arch`, `seed`, the cost profile, the panic guard) and
//! hands results to Python as [`PyReport`] objects. Everything slow runs
//! with the interpreter's lock released, so Python threads (a Dask
//! worker's) simulate in parallel. Errors are Python exceptions: a
//! scenario that does not exist is `FileNotFoundError`, a bad scenario,
//! key, value or profile `foliosim.UsageError` (a `ValueError`; its
//! message names the file, line, column and field), and a run the model
//! stops or refuses a subclass of `foliosim.SimulationError` per kind of
//! `foliosim_run::RunError`: `UnsupportedError`, `KilledError` (a
//! modelled SIGSEGV or SIGBUS), `ModelBugError` (a broken invariant or a
//! panic in the model), `HostError` (the host cannot run it, such as a
//! memory estimate over the limit) and `GuestError`.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use foliosim_report::Report;
use foliosim_run::{Given, RunError};
use foliosim_scenario::{Arch, ScenarioError, SET_FILE};
use pyo3::exceptions::{PyFileNotFoundError, PyKeyError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

pyo3::create_exception!(
    foliosim,
    SimulationError,
    PyRuntimeError,
    "A run the model stopped or refused: an unsupported feature, a modelled \
     outcome that ends the process (SIGBUS, OOM), a memory estimate over the \
     limit, or an internal error of the model. Each kind is a subclass."
);
pyo3::create_exception!(
    foliosim,
    UnsupportedError,
    SimulationError,
    "The scenario asks for something the engine does not model or support."
);
pyo3::create_exception!(
    foliosim,
    KilledError,
    SimulationError,
    "The process ended as the kernel ends it: a signal (SIGSEGV, SIGBUS), an \
     OOM kill, a system call failing."
);
pyo3::create_exception!(
    foliosim,
    ModelBugError,
    SimulationError,
    "A broken invariant or a panic in the model: a foliosim bug."
);
pyo3::create_exception!(
    foliosim,
    HostError,
    SimulationError,
    "The host cannot run the scenario: too little memory for the simulation, \
     the host's limits or settings."
);
pyo3::create_exception!(
    foliosim,
    GuestError,
    SimulationError,
    "The guest kernel of a VM run brought back no result."
);
pyo3::create_exception!(
    foliosim,
    UsageError,
    PyValueError,
    "Bad input: the scenario, an override, an argument, a cost profile. A \
     ValueError; its message names the file, line, column and field."
);

/// Why a run failed, before it becomes a Python exception (the work runs
/// without the interpreter's lock, where no exception can be made).
#[derive(Debug, PartialEq)]
enum Failure {
    /// The scenario file does not exist.
    NotFound(String),
    /// Another I/O error reading it.
    Io(String),
    /// Bad input: the scenario, an override, the profile.
    Invalid(String),
    /// The run stopped or was refused.
    Run(RunError),
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::NotFound(m) => PyFileNotFoundError::new_err(m),
            Failure::Io(m) => PyOSError::new_err(m),
            Failure::Invalid(m) => UsageError::new_err(m),
            Failure::Run(e) => match e {
                RunError::Usage(m) => UsageError::new_err(m),
                RunError::Unsupported(m) => UnsupportedError::new_err(m),
                RunError::Killed(m) => KilledError::new_err(m),
                RunError::Invariant(m) => ModelBugError::new_err(m),
                RunError::Host(m) => HostError::new_err(m),
                RunError::Guest(m) => GuestError::new_err(m),
            },
        }
    }
}

/// A scenario error as the Python caller wrote it: an override is the
/// `set` argument's entry, not a `--set` option.
fn scenario_failure(path: &Path, e: ScenarioError) -> Failure {
    if e.file == SET_FILE {
        return Failure::Invalid(format!("set {}: {}", e.field, e.message));
    }
    if e.line == 0 {
        // Reading failed (load() reports I/O errors at line 0).
        return match std::fs::metadata(path) {
            Err(io) if io.kind() == std::io::ErrorKind::NotFound => {
                Failure::NotFound(e.to_string())
            }
            Err(_) => Failure::Io(e.to_string()),
            Ok(m) if m.is_dir() => Failure::Io(e.to_string()),
            Ok(_) => Failure::Invalid(e.to_string()),
        };
    }
    Failure::Invalid(e.to_string())
}

/// An override value as the scenario language reads it: strings as they
/// are, `True`/`False` as `true`/`false`, numbers in decimal. `arg` names
/// the argument it came from (`set`, `grid`) in errors.
fn override_value(arg: &str, key: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_owned());
    }
    if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
        return Ok(v.str()?.to_cow()?.into_owned());
    }
    Err(PyValueError::new_err(format!(
        "{arg} {key}: expected a string, a number or a bool, not {}",
        v.get_type().name()?
    )))
}

/// The `set` argument as (key, value) pairs in order: a mapping
/// `{key: value}`, or an iterable of `"KEY=VALUE"` strings (as `--set`).
fn overrides_of(set: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    let Some(set) = set else { return Ok(out) };
    if let Ok(d) = set.cast::<PyDict>() {
        for (k, v) in d.iter() {
            let key: String = k
                .extract()
                .map_err(|_| PyValueError::new_err("set: keys must be strings"))?;
            let value = override_value("set", &key, &v)?;
            out.push((key.trim().to_owned(), value.trim().to_owned()));
        }
        return Ok(out);
    }
    if set.is_instance_of::<PyString>() {
        return Err(PyValueError::new_err(
            "set: expected a dict {key: value} or a list of \"KEY=VALUE\" strings, not a string",
        ));
    }
    for item in set.try_iter()? {
        let item = item?;
        let s: String = item.extract().map_err(|_| {
            PyValueError::new_err("set: expected a dict {key: value} or \"KEY=VALUE\" strings")
        })?;
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| PyValueError::new_err(format!("set {s}: expected KEY=VALUE")))?;
        out.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(out)
}

/// Every override of a run as given: `set`, then `arch` and `seed`
/// (which win, as on the command line).
fn given_of(
    set: Option<&Bound<'_, PyAny>>,
    arch: Option<&str>,
    seed: Option<u64>,
) -> PyResult<Given> {
    let arch = arch
        .map(|a| {
            Arch::from_name(a).ok_or_else(|| {
                let names: Vec<&str> = Arch::ALL.iter().map(|a| a.as_str()).collect();
                PyValueError::new_err(format!("arch {a:?}: expected one of {}", names.join(", ")))
            })
        })
        .transpose()?;
    Ok(Given {
        set: overrides_of(set)?,
        arch,
        seed,
    })
}

/// Load and simulate one scenario, add modelled time and the run's
/// provenance; no Python here. The provenance names the overrides as the
/// command line would give them (`set` as `--set`, `arch` as `--arch`,
/// `seed` as `--seed`), so `foliosim run` can repeat the run.
fn simulate(path: &Path, given: &Given, engine: &foliosim_run::Engine) -> Result<Report, Failure> {
    let sc =
        foliosim_scenario::load(path, &given.overrides()).map_err(|e| scenario_failure(path, e))?;
    let label = path.display().to_string();
    let compiled = foliosim_run::Compiled::new(&label, sc, &[engine]).map_err(Failure::Run)?;
    let mut report = compiled.run_on(engine, true).map_err(Failure::Run)?;
    report.provenance = Some(given.provenance(&label, compiled.scenario.seed, None));
    Ok(report)
}

/// The result of one run: phases with counters, folio histograms and
/// modelled time (see `foliosim.Report` for the Python face).
#[pyclass(frozen, module = "foliosim._native", name = "NativeReport")]
struct PyReport {
    inner: Report,
}

#[pymethods]
impl PyReport {
    /// The scenario's name.
    #[getter]
    fn scenario(&self) -> &str {
        &self.inner.scenario
    }

    /// The simulated architecture (`x86_64`, `arm64`).
    #[getter]
    fn arch(&self) -> &str {
        &self.inner.arch
    }

    /// The engine that produced the report (`sim`).
    #[getter]
    fn engine(&self) -> &str {
        &self.inner.engine
    }

    /// The machine and kernel settings of the run, `{knob: value}`.
    #[getter]
    fn system(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.system.clone()
    }

    /// The names of the measured phases, in order.
    #[getter]
    fn phases(&self) -> Vec<String> {
        self.inner.phases.iter().map(|p| p.name.clone()).collect()
    }

    /// Whether every judged `[[expect]]` of the scenario held.
    #[getter]
    fn expectations_ok(&self) -> bool {
        self.inner.expectations_ok()
    }

    /// One value of a phase by its tidy name: a counter (`pgfault`,
    /// `hugepages-64kB/anon_fault_alloc`, `sim/set_ptes`), a folio cell
    /// `folios/<region>/<bucket>` (0 for a bucket the region does not
    /// have), `modelled_ns` or `modelled_ns/<counter>`, or
    /// `pagemap/<step>/<index>`. KeyError when the phase or name is absent
    /// (as `tlb:tlb_flush` is on arm64).
    fn value(&self, phase: &str, name: &str) -> PyResult<i128> {
        let p = self
            .inner
            .phases
            .iter()
            .find(|p| p.name == phase)
            .ok_or_else(|| {
                PyKeyError::new_err(format!(
                    "no phase {phase:?} (phases: {})",
                    self.phases().join(", ")
                ))
            })?;
        if let Some(v) = p.counters.get(name) {
            return Ok(i128::from(*v));
        }
        if let Some((region, bucket)) = name.strip_prefix("folios/").and_then(|r| r.split_once('/'))
        {
            if let Some(h) = p.folios.get(region) {
                return Ok(i128::from(h.get(bucket).copied().unwrap_or(0)));
            }
        }
        self.inner
            .tidy_rows()
            .into_iter()
            .find(|r| r.phase == phase && r.name == name)
            .map(|r| r.value)
            .ok_or_else(|| PyKeyError::new_err(format!("phase {phase:?} has no value {name:?}")))
    }

    /// The report as JSON text (the shape of `foliosim run --format json`).
    fn to_json(&self) -> String {
        serde_json::to_string(&self.inner.to_json_value()).expect("a report serialises")
    }

    /// Every value as tidy columns, `{column: [values]}`: scenario, arch,
    /// engine, phase, kind, name, value (`Report::tidy_rows`).
    fn tidy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rows = self.inner.tidy_rows();
        let n = rows.len();
        let r = &self.inner;
        let d = PyDict::new(py);
        d.set_item("scenario", vec![r.scenario.as_str(); n])?;
        d.set_item("arch", vec![r.arch.as_str(); n])?;
        d.set_item("engine", vec![r.engine.as_str(); n])?;
        d.set_item("phase", rows.iter().map(|t| t.phase).collect::<Vec<_>>())?;
        d.set_item(
            "kind",
            rows.iter().map(|t| t.kind.as_str()).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "name",
            rows.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        )?;
        d.set_item("value", rows.iter().map(|t| t.value).collect::<Vec<_>>())?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<foliosim report {} arch={} engine={} phases={:?}>",
            self.inner.scenario,
            self.inner.arch,
            self.inner.engine,
            self.phases()
        )
    }
}

/// Simulate the scenario at `path`. `set`: overrides, `{key: value}` or
/// `["KEY=VALUE", ...]` (as `--set`); `arch`, `seed` and `profile` as the
/// command line's options; `check` runs the invariant checker after every
/// step; `max_memory` refuses a simulation whose estimated memory exceeds
/// it (bytes).
#[pyfunction]
#[pyo3(signature = (path, arch=None, set=None, seed=None, profile=None, check=false, max_memory=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    path: PathBuf,
    arch: Option<&str>,
    set: Option<&Bound<'_, PyAny>>,
    seed: Option<u64>,
    profile: Option<&str>,
    check: bool,
    max_memory: Option<u64>,
) -> PyResult<PyReport> {
    let given = given_of(set, arch, seed)?;
    let engine = foliosim_run::Engine::Sim(foliosim_run::SimOptions {
        check,
        profile: profile.map(str::to_owned),
        max_memory,
    });
    let inner = py.detach(|| simulate(&path, &given, &engine))?;
    Ok(PyReport { inner })
}

/// A grid's values from Python: a string in the `--grid` syntax
/// (`"4096<<[0..4]"`, `"64K,2M"`), or a list whose strings are single
/// values or ranges and whose numbers and bools are values.
fn grid_values(key: &str, v: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let bad = |e: String| PyValueError::new_err(format!("grid {key}: {e}"));
    if let Ok(s) = v.cast::<PyString>() {
        return foliosim_explore::grid::parse_values(&s.to_cow()?).map_err(bad);
    }
    let mut out = Vec::new();
    for item in v.try_iter().map_err(|_| {
        PyValueError::new_err(format!(
            "grid {key}: expected a list of values or a string like \"4096<<[0..4]\""
        ))
    })? {
        let item = item?;
        match item.cast::<PyString>() {
            Ok(s) => out.extend(foliosim_explore::grid::parse_item(&s.to_cow()?).map_err(bad)?),
            Err(_) => out.push(override_value("grid", key, &item)?),
        }
    }
    Ok(out)
}

/// A point as Python holds it (and Dask ships it): (index, scenario file,
/// scenario name, arch, grid coordinates, overrides).
type PointTuple = (
    usize,
    PathBuf,
    String,
    String,
    Vec<(String, String)>,
    Vec<(String, String)>,
);

fn point_tuple(p: foliosim_explore::Point) -> PointTuple {
    (p.index, p.scenario, p.name, p.arch, p.grid, p.overrides)
}

fn point_of(t: PointTuple) -> foliosim_explore::Point {
    let (index, scenario, name, arch, grid, overrides) = t;
    foliosim_explore::Point {
        index,
        scenario,
        name,
        arch,
        grid,
        overrides,
    }
}

/// Expand a sweep into its points (foliosim_explore::expand): every
/// scenario × the grid (`zip`: the keys advance together), with `set`,
/// `arch` and `seed` as every point's base overrides. Returns the grid's
/// keys (in order) and the points. Every point's scenario is loaded, so a
/// bad key or value is an error before anything runs.
#[pyfunction]
#[pyo3(signature = (scenarios, grid, zip=false, arch=None, set=None, seed=None, allow_large=false, profile=None))]
#[allow(clippy::too_many_arguments)]
fn expand(
    py: Python<'_>,
    scenarios: Vec<PathBuf>,
    grid: &Bound<'_, PyDict>,
    zip: bool,
    arch: Option<&str>,
    set: Option<&Bound<'_, PyAny>>,
    seed: Option<u64>,
    allow_large: bool,
    profile: Option<String>,
) -> PyResult<(Vec<String>, Vec<PointTuple>, String)> {
    use foliosim_explore::{Dim, Setting, Source};
    for path in &scenarios {
        if let Err(e) = std::fs::metadata(path) {
            if e.kind() == std::io::ErrorKind::NotFound {
                return Err(PyFileNotFoundError::new_err(format!(
                    "{}: cannot read the scenario: {e}",
                    path.display()
                )));
            }
        }
    }
    let mut spec = foliosim_explore::SweepSpec::new(scenarios);
    spec.allow_large = allow_large;
    for (key, value) in given_of(set, arch, seed)?.overrides() {
        let source = match key.as_str() {
            "arch" => Source::ArchArg,
            _ => Source::SetArg(format!("{key}={value}")),
        };
        spec.base.push(Setting { key, value, source });
    }
    let mut dims = Vec::new();
    for (k, v) in grid.iter() {
        let key: String = k
            .extract()
            .map_err(|_| PyValueError::new_err("grid: keys must be strings"))?;
        let values = grid_values(&key, &v)?;
        let source = Source::GridArg(format!("{key}={}", values.join(",")));
        dims.push(Dim {
            key,
            values,
            source,
        });
    }
    spec.grid.add(dims, zip);
    let keys = spec.grid.keys();
    let engine = foliosim_explore::Engine::Sim(foliosim_explore::SimOptions {
        profile,
        ..Default::default()
    });
    let points = py
        .detach(|| {
            foliosim_explore::grid::check_engine(&spec.grid, &engine)?;
            foliosim_explore::expand(&spec)
        })
        .map_err(|e| {
            // Messages blame the argument as the command line spells it.
            let e = match e.strip_prefix("--") {
                Some(rest) if rest.starts_with("grid ") || rest.starts_with("set ") => {
                    rest.to_owned()
                }
                _ => e,
            };
            PyValueError::new_err(e)
        })?;
    let provenance = foliosim_explore::provenance(&spec, &engine).to_json_value();
    Ok((
        keys,
        points.into_iter().map(point_tuple).collect(),
        provenance.to_string(),
    ))
}

/// Simulate `points` (from [`expand`]) on `jobs` threads (None: every
/// core) and return their tidy table as (columns, {column: [values]}):
/// `point, <grid keys but arch>, scenario, arch, engine, phase, kind,
/// name, value, error`. A failed point is one row with its error and
/// no phase, kind, name (empty) or value (None).
#[pyfunction]
#[pyo3(signature = (points, grid_keys, jobs=None, profile=None, check=false, max_memory=None))]
#[allow(clippy::too_many_arguments)]
fn run_points<'py>(
    py: Python<'py>,
    points: Vec<PointTuple>,
    grid_keys: Vec<String>,
    jobs: Option<usize>,
    profile: Option<String>,
    check: bool,
    max_memory: Option<u64>,
) -> PyResult<(Vec<String>, Bound<'py, PyDict>)> {
    if jobs == Some(0) {
        return Err(PyValueError::new_err("jobs: expected at least 1"));
    }
    let points: Vec<foliosim_explore::Point> = points.into_iter().map(point_of).collect();
    let engine = foliosim_explore::Engine::Sim(foliosim_explore::SimOptions {
        check,
        profile,
        max_memory,
    });
    let opts = foliosim_explore::SweepOptions {
        jobs,
        progress: false,
    };
    let table = py.detach(|| {
        let results = foliosim_explore::sweep(&points, &engine, &opts);
        foliosim_explore::Table::from_results(&grid_keys, &results)
    });
    table_columns(py, &table)
}

/// A table's rows as (columns, {column: [values]}): `point, <grid keys
/// but arch>, scenario, arch, engine, phase, kind, name, value, error`,
/// every value text but `point` and `value` (None where empty).
fn table_columns<'py>(
    py: Python<'py>,
    table: &foliosim_explore::Table,
) -> PyResult<(Vec<String>, Bound<'py, PyDict>)> {
    let columns = table.row_columns();
    let rows = &table.rows;
    let d = PyDict::new(py);
    d.set_item("point", rows.iter().map(|r| r.point).collect::<Vec<_>>())?;
    for (i, c) in table.grid_columns.iter().enumerate() {
        d.set_item(
            c,
            rows.iter().map(|r| r.grid[i].as_str()).collect::<Vec<_>>(),
        )?;
    }
    let text = |f: fn(&foliosim_explore::Row) -> &str| rows.iter().map(f).collect::<Vec<_>>();
    d.set_item("scenario", text(|r| &r.scenario))?;
    d.set_item("arch", text(|r| &r.arch))?;
    d.set_item("engine", text(|r| &r.engine))?;
    d.set_item("phase", text(|r| &r.phase))?;
    d.set_item("kind", text(|r| &r.kind))?;
    d.set_item("name", text(|r| &r.name))?;
    d.set_item("value", rows.iter().map(|r| r.value).collect::<Vec<_>>())?;
    d.set_item("error", text(|r| &r.error))?;
    Ok((columns, d))
}

/// The type each grid column's values share (`int`, `float`, `bool`,
/// `str`), by the rule that types a Parquet table's grid columns.
#[pyfunction]
fn grid_types(columns: std::collections::BTreeMap<String, Vec<String>>) -> Vec<(String, String)> {
    columns
        .into_iter()
        .map(|(c, values)| {
            let ty = foliosim_explore::GridType::of(values.iter().map(String::as_str));
            (c, ty.name().to_string())
        })
        .collect()
}

/// Read the sweep table file at `path` (CSV, JSON lines, Arrow IPC or
/// Parquet, by its extension, else its contents): (columns, {column:
/// [values]}, grid columns, provenance as JSON text or None).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn read_table<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<(Vec<String>, Bound<'py, PyDict>, Vec<String>, Option<String>)> {
    let bytes = std::fs::read(&path).map_err(|e| {
        let m = format!("{}: {e}", path.display());
        match e.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(m),
            _ => PyOSError::new_err(m),
        }
    })?;
    let table = py
        .detach(|| foliosim_explore::Table::decode_file(&path, &bytes))
        .map_err(UsageError::new_err)?;
    let provenance = table
        .provenance
        .as_ref()
        .map(|p| p.to_json_value().to_string());
    let (columns, data) = table_columns(py, &table)?;
    Ok((columns, data, table.grid_columns.clone(), provenance))
}

/// The diff of two reports (`a`, `b`: JSON text, a report or a document
/// of reports) or, with `by`, of the sweep table file `a` by a key
/// (`KEY` or `KEY=BASE,PATCHED`), as `foliosim diff` renders it in
/// `format` (text, md, csv, json).
#[pyfunction]
#[pyo3(signature = (a, b=None, by=None, columns=None, only=None, all=false, format="text"))]
#[allow(clippy::too_many_arguments)]
fn diff(
    py: Python<'_>,
    a: String,
    b: Option<String>,
    by: Option<String>,
    columns: Option<Vec<String>>,
    only: Option<Vec<String>>,
    all: bool,
    format: &str,
) -> PyResult<String> {
    use foliosim_explore::diff as d;
    let made = py.detach(|| -> Result<String, String> {
        let mut diff = match (&by, b) {
            (Some(by), None) => {
                let path = Path::new(&a);
                let table = std::fs::read(path)
                    .map_err(|e| e.to_string())
                    .and_then(|bytes| {
                        let format = foliosim_explore::TableFormat::from_path(path)
                            .unwrap_or_else(|| foliosim_explore::TableFormat::sniff(&bytes));
                        foliosim_explore::Table::decode(&bytes, format)
                    })
                    .map_err(|e| format!("{a}: {e}"))?;
                let (key, pair) = d::parse_by(by)?;
                d::diff_table(&table, key, pair, columns.as_deref())?
            }
            (None, Some(b)) => {
                if columns.is_some() {
                    return Err("columns applies to a sweep table with by".into());
                }
                d::diff_reports(&d::reports_from_json(&a)?, &d::reports_from_json(&b)?)?
            }
            _ => return Err("give two reports, or one sweep table with by".into()),
        };
        if let Some(names) = &only {
            diff.retain_names(names)?;
        }
        diff.render(format, all, &[])
    });
    made.map_err(UsageError::new_err)
}

/// A panic raised inside the guard that protects every run, for the tests
/// to check that a panic in the model becomes `ModelBugError` and the
/// interpreter goes on.
#[pyfunction]
fn _panic_in_guard(py: Python<'_>, message: String) -> PyResult<()> {
    py.detach(|| foliosim_run::guarded("<test>", || panic!("{message}")))
        .map_err(|e| Failure::Run(e).into())
}

/// The extension module `foliosim._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyReport>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(run_points, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_in_guard, m)?)?;
    m.add_function(wrap_pyfunction!(grid_types, m)?)?;
    m.add_function(wrap_pyfunction!(read_table, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add("__version__", foliosim_report::VERSION)?;
    m.add("COMMIT", foliosim_run::COMMIT)?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("UnsupportedError", m.py().get_type::<UnsupportedError>())?;
    m.add("KilledError", m.py().get_type::<KilledError>())?;
    m.add("ModelBugError", m.py().get_type::<ModelBugError>())?;
    m.add("HostError", m.py().get_type::<HostError>())?;
    m.add("GuestError", m.py().get_type::<GuestError>())?;
    m.add("UsageError", m.py().get_type::<UsageError>())?;
    m.add(
        "ARCHS",
        Arch::ALL.iter().map(|a| a.as_str()).collect::<Vec<_>>(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_scenario_is_not_found() {
        let p = Path::new("/nonexistent/foliosim.toml");
        let f = simulate(p, &Given::default(), &foliosim_run::Engine::sim()).unwrap_err();
        match f {
            Failure::NotFound(m) => assert!(m.starts_with("/nonexistent/foliosim.toml:"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bad_override_names_the_key_as_python_wrote_it() {
        let p = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/seed003/anon-scan.toml"
        ));
        let given = Given {
            set: vec![("fault_around_bytes".to_owned(), "lots".to_owned())],
            ..Given::default()
        };
        match simulate(p, &given, &foliosim_run::Engine::sim()).unwrap_err() {
            Failure::Invalid(m) => {
                assert!(m.starts_with("set fault_around_bytes=lots: "), "{m}");
                assert!(m.contains("expected a size"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
}
