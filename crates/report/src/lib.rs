//! Results of a run, as every engine reports them, and their three renderings
//! (JSON, long-format CSV, a plain-text table for mails to linux-mm).
//!
//! The shapes are part of the user-facing contract (docs/output.md): a JSON
//! document is always `{"foliosim": VERSION, "reports": [REPORT, ...]}`,
//! whatever the number of scenarios, and a report is `{"scenario", "arch",
//! "engine", "provenance": {...}, "system": {...}, "phases": [{"name",
//! "counters": {NAME: NUMBER}, "folios": {REGION: {BUCKET: NUMBER}}}],
//! "expectations": [...]}`; a phase may also have `pagemap`, `maps` (folio
//! maps, docs/scenarios.md) and `modelled_ns` / `profile` / `breakdown`.
//! The CSV is written by the `csv` crate (RFC 4180 quoting), one row per
//! value of [`Report::tidy_rows`]. Maps are sorted, so the same inputs give
//! byte-identical output.

#![forbid(unsafe_code)]

pub mod compare;
pub mod stats;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

pub use foliosim_uapi::foliomap::{FolioMap, PageState};

/// One measured phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Phase {
    pub name: String,
    /// Counter deltas over the phase, by kernel name.
    pub counters: BTreeMap<String, i64>,
    /// Folio-size histogram per named region at the end of the phase.
    pub folios: BTreeMap<String, BTreeMap<String, u64>>,
    /// Modelled time (simulated runs with a cost profile; None otherwise).
    pub time: Option<PhaseTime>,
    /// Raw pagemap entries of the phase's `raw = true` pagemap steps, by
    /// step name.
    pub pagemap: BTreeMap<String, Vec<u64>>,
    /// Per-page folio maps at the end of the phase of the regions mapped
    /// with `map = true`, by region.
    pub maps: BTreeMap<String, FolioMap>,
}

/// The modelled time of a phase under a cost profile (crates/cost).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseTime {
    /// The profile's name.
    pub profile: String,
    /// Σ count × cost over the priced counters, ns.
    pub modelled_ns: u64,
    /// Each priced counter's share, ns (non-zero ones).
    pub breakdown: BTreeMap<String, u64>,
}

impl PhaseTime {
    /// The largest contributors, largest first (ties by name).
    pub fn top(&self, n: usize) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self
            .breakdown
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(n);
        v
    }
}

/// The outcome of one declared expectation.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectOutcome {
    /// `file:line:col` of the `[[expect]]`.
    pub at: String,
    pub phase: String,
    pub counter: String,
    pub expected: f64,
    /// None when the phase or counter does not exist in the result.
    pub actual: Option<f64>,
    /// The tolerance as written ("0", "5%").
    pub tolerance: String,
    pub ok: bool,
    /// Whether a miss fails the run: false for a counter the engine
    /// cannot measure for the scenario alone (a system-wide counter in a
    /// native run, which other processes move), shown for information.
    pub judged: bool,
}

/// What a tidy row holds (the `kind` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowKind {
    /// A counter delta over the phase (kernel names, `sim/...`, `kfunc/...`).
    Counter,
    /// A folio-histogram cell at the end of the phase.
    Folios,
    /// A raw pagemap entry of a `raw = true` pagemap step.
    Pagemap,
    /// Modelled time in ns (simulated runs with a cost profile).
    Time,
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Counter => "counter",
            RowKind::Folios => "folios",
            RowKind::Pagemap => "pagemap",
            RowKind::Time => "time",
        }
    }
}

/// One value of a report: see [`Report::tidy_rows`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TidyRow<'a> {
    pub phase: &'a str,
    pub kind: RowKind,
    pub name: String,
    /// Wide enough for a raw pagemap entry (u64) and a counter delta (i64).
    pub value: i128,
}

/// One override of the scenario given on the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Override {
    /// The option that gave it: `--set`, `--arch` or `--seed`.
    pub option: String,
    pub key: String,
    pub value: String,
}

impl Override {
    /// The override as command-line words (`--set`, `KEY=VALUE`).
    pub fn words(&self) -> [String; 2] {
        match self.option.as_str() {
            "--set" => [self.option.clone(), format!("{}={}", self.key, self.value)],
            _ => [self.option.clone(), self.value.clone()],
        }
    }
}

/// Where a report or a sweep table came from: what it takes to run it
/// again and what it ran on.
///
/// A report's provenance has the first five fields; a sweep table's
/// (`foliosim-table`) also has `commit` and `engine`, and `profile` and
/// `arch` when they apply. The optional fields appear in the JSON only
/// when set, so a report's JSON has the same keys as before they existed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    /// The version of foliosim that ran it.
    pub foliosim: String,
    /// The scenario file as given on the command line; `<stdin>` for `-`.
    /// A sweep table's: its scenario files, as shell words.
    pub scenario_path: String,
    /// The seed of the run's random choices (the scenario's `seed`, or
    /// `--seed`). A sweep table's: its `--seed`, None when each scenario
    /// uses its own.
    pub seed: Option<u64>,
    /// Every override, in the order given.
    pub overrides: Vec<Override>,
    /// The kernel: a `foliosim vm` run's guest (its name and release); a
    /// sweep table's guest, or `host` and the host's release for the
    /// native engine.
    pub kernel: Option<(String, String)>,
    /// The git commit foliosim was built from (`unknown` outside a git
    /// checkout).
    pub commit: Option<String>,
    /// The engine: `sim`, `native` or `vm`.
    pub engine: Option<String>,
    /// The architecture of the machine that ran it (native and VM runs).
    pub arch: Option<String>,
    /// The cost profile of the modelled time (`--profile`), when given.
    pub profile: Option<String>,
    /// A replay of a recording (`foliosim record`): the command recorded
    /// and where (`xz -9 big.bin` on x86_64 Linux 6.18.44).
    pub recording: Option<String>,
}

impl Provenance {
    /// The overrides as shell words (`--set 'k=v w' --arch arm64`), which
    /// `shlex.split` or a shell turns back into the arguments.
    pub fn overrides_shell(&self) -> String {
        let words: Vec<String> = self.overrides.iter().flat_map(Override::words).collect();
        shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
    }

    /// The `provenance` object of the JSON output.
    pub fn to_json_value(&self) -> Value {
        let overrides: Vec<Value> = self
            .overrides
            .iter()
            .map(|o| json!({"option": o.option, "key": o.key, "value": o.value}))
            .collect();
        let mut v = json!({
            "foliosim": self.foliosim,
            "scenario_path": self.scenario_path,
            "seed": self.seed,
            "overrides": overrides,
            "kernel": self.kernel.as_ref().map(|(name, release)| json!({"name": name, "release": release})),
        });
        for (k, x) in [
            ("commit", &self.commit),
            ("engine", &self.engine),
            ("arch", &self.arch),
            ("profile", &self.profile),
            ("recording", &self.recording),
        ] {
            if let Some(x) = x {
                v[k] = json!(x);
            }
        }
        v
    }

    /// The provenance of a JSON object [`Provenance::to_json_value`] wrote.
    pub fn from_json_value(v: &Value) -> Result<Provenance, String> {
        let text = |v: &Value, k: &str| -> Result<String, String> {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("provenance field `{k}` is missing or not a string"))
        };
        let mut overrides = Vec::new();
        for o in v
            .get("overrides")
            .and_then(Value::as_array)
            .ok_or("provenance field `overrides` is missing or not a list")?
        {
            overrides.push(Override {
                option: text(o, "option")?,
                key: text(o, "key")?,
                value: text(o, "value")?,
            });
        }
        let kernel = match v.get("kernel") {
            None | Some(Value::Null) => None,
            Some(k) => Some((text(k, "name")?, text(k, "release")?)),
        };
        let optional = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => text(v, k).map(Some),
        };
        Ok(Provenance {
            foliosim: text(v, "foliosim")?,
            scenario_path: text(v, "scenario_path")?,
            seed: match v.get("seed") {
                Some(Value::Null) => None,
                s => Some(
                    s.and_then(Value::as_u64)
                        .ok_or("provenance field `seed` is missing or not an integer")?,
                ),
            },
            overrides,
            kernel,
            commit: optional("commit")?,
            engine: optional("engine")?,
            arch: optional("arch")?,
            profile: optional("profile")?,
            recording: optional("recording")?,
        })
    }
}

/// A whole result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub scenario: String,
    pub arch: String,
    /// "sim", "native" or "vm".
    pub engine: String,
    /// How the run was made (set by the command line; None in a report
    /// an engine returns, and in JSON written before it existed).
    pub provenance: Option<Provenance>,
    pub system: BTreeMap<String, String>,
    pub phases: Vec<Phase>,
    pub expectations: Vec<ExpectOutcome>,
}

impl Report {
    /// Look a value up by counter name or `folios/<region>/<bucket>`.
    pub fn value(&self, phase: &str, counter: &str) -> Option<f64> {
        let p = self.phases.iter().find(|p| p.name == phase)?;
        if let Some(rest) = counter.strip_prefix("folios/") {
            let (region, bucket) = rest.split_once('/')?;
            let r = p.folios.get(region)?;
            return Some(r.get(bucket).copied().unwrap_or(0) as f64);
        }
        p.counters.get(counter).map(|&v| v as f64)
    }

    /// Did every judged expectation hold?
    pub fn expectations_ok(&self) -> bool {
        self.expectations.iter().all(|e| e.ok || !e.judged)
    }

    /// Evaluate the scenario's `[[expect]]`s against this report (the one
    /// place every engine's expectations are judged); see
    /// [`ExpectOutcome::judged`].
    pub fn evaluate(&mut self, expects: &[foliosim_scenario::Expect]) {
        let engine = self.engine.clone();
        self.expectations = expects
            .iter()
            .map(|e| {
                let actual = self.value(&e.phase, &e.counter);
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
                ExpectOutcome {
                    at: e.loc.to_string(),
                    phase: e.phase.clone(),
                    counter: e.counter.clone(),
                    expected: e.value,
                    actual,
                    tolerance,
                    ok,
                    // A counter the architecture does not have (the x86
                    // tracepoints on arm64) is absent, and not held
                    // against the run.
                    judged: !(foliosim_uapi::counters::x86_only(&e.counter)
                        && self.arch != "x86_64")
                        && (engine == "sim" || compare::judged_natively(&e.counter)),
                }
            })
            .collect();
    }

    pub fn to_json_value(&self) -> Value {
        let phases: Vec<Value> = self
            .phases
            .iter()
            .map(|p| {
                let counters: Map<String, Value> = p
                    .counters
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                let folios: Map<String, Value> = p
                    .folios
                    .iter()
                    .map(|(r, h)| {
                        (
                            r.clone(),
                            Value::Object(h.iter().map(|(b, n)| (b.clone(), json!(n))).collect()),
                        )
                    })
                    .collect();
                let mut v = json!({"name": p.name, "counters": counters, "folios": folios});
                if !p.pagemap.is_empty() {
                    v["pagemap"] = json!(p.pagemap);
                }
                if !p.maps.is_empty() {
                    let maps: Map<String, Value> = p
                        .maps
                        .iter()
                        .map(|(r, m)| {
                            let runs: Vec<Value> =
                                m.runs().iter().map(|(b, n)| json!([b, n])).collect();
                            (
                                r.clone(),
                                json!({"first_index": m.first_index, "runs": runs}),
                            )
                        })
                        .collect();
                    v["maps"] = Value::Object(maps);
                }
                if let Some(t) = &p.time {
                    let breakdown: Map<String, Value> = t
                        .breakdown
                        .iter()
                        .map(|(k, v)| (k.clone(), json!(v)))
                        .collect();
                    v["modelled_ns"] = json!(t.modelled_ns);
                    v["profile"] = json!(t.profile);
                    v["breakdown"] = Value::Object(breakdown);
                }
                v
            })
            .collect();
        let expectations: Vec<Value> = self
            .expectations
            .iter()
            .map(|e| {
                json!({"at": e.at, "phase": e.phase, "counter": e.counter, "expected": e.expected,
                       "actual": e.actual, "tolerance": e.tolerance, "ok": e.ok,
                       "judged": e.judged})
            })
            .collect();
        let system: Map<String, Value> = self
            .system
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        json!({
            "scenario": self.scenario,
            "arch": self.arch,
            "engine": self.engine,
            "provenance": self.provenance.as_ref().map(Provenance::to_json_value),
            "system": system,
            "phases": phases,
            "expectations": expectations,
        })
    }

    /// The report back from [`Report::to_json_value`]'s shape (a report
    /// another process or machine wrote, like a `foliosim vm` guest).
    pub fn from_json_value(v: &Value) -> Result<Report, String> {
        let obj = v.as_object().ok_or("a report is a JSON object")?;
        let text = |k: &str| -> Result<String, String> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("report field `{k}` is missing or not a string"))
        };
        let int_map = |v: Option<&Value>, what: &str| -> Result<BTreeMap<String, i64>, String> {
            let Some(v) = v else {
                return Ok(BTreeMap::new());
            };
            let m = v
                .as_object()
                .ok_or_else(|| format!("`{what}` is not an object"))?;
            m.iter()
                .map(|(k, n)| {
                    n.as_i64()
                        .map(|n| (k.clone(), n))
                        .ok_or_else(|| format!("`{what}.{k}` is not an integer"))
                })
                .collect()
        };
        let (scenario, arch, engine) = (text("scenario")?, text("arch")?, text("engine")?);
        let provenance = match obj.get("provenance") {
            None | Some(Value::Null) => None,
            Some(p) => Some(Provenance::from_json_value(p)?),
        };
        let system = obj
            .get("system")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let mut phases = Vec::new();
        for p in obj
            .get("phases")
            .and_then(Value::as_array)
            .ok_or("report field `phases` is missing")?
        {
            let name = p
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a phase without a name")?
                .to_string();
            let counters = int_map(p.get("counters"), "counters")?;
            let mut folios = BTreeMap::new();
            if let Some(f) = p.get("folios").and_then(Value::as_object) {
                for (region, h) in f {
                    let h = int_map(Some(h), "folios")?;
                    folios.insert(
                        region.clone(),
                        h.into_iter().map(|(b, n)| (b, n.max(0) as u64)).collect(),
                    );
                }
            }
            let mut pagemap = BTreeMap::new();
            if let Some(m) = p.get("pagemap").and_then(Value::as_object) {
                for (step, entries) in m {
                    let e: Option<Vec<u64>> = entries
                        .as_array()
                        .map(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
                        .unwrap_or(None);
                    pagemap.insert(
                        step.clone(),
                        e.ok_or_else(|| format!("pagemap `{step}` is not a list of integers"))?,
                    );
                }
            }
            let maps = match p.get("maps") {
                Some(m) => read_maps(m).map_err(|e| format!("phase `{name}`: {e}"))?,
                None => BTreeMap::new(),
            };
            let time = match p.get("modelled_ns") {
                Some(ns) => Some(PhaseTime {
                    profile: p
                        .get("profile")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    modelled_ns: ns.as_u64().ok_or_else(|| {
                        format!("phase `{name}`: `modelled_ns` is not a non-negative integer")
                    })?,
                    breakdown: int_map(p.get("breakdown"), "breakdown")?
                        .into_iter()
                        .map(|(k, v)| (k, v.max(0) as u64))
                        .collect(),
                }),
                None => None,
            };
            phases.push(Phase {
                name,
                counters,
                folios,
                time,
                pagemap,
                maps,
            });
        }
        let expectations = match obj.get("expectations") {
            Some(e) => read_expectations(e)?,
            None => Vec::new(),
        };
        Ok(Report {
            scenario,
            arch,
            engine,
            provenance,
            system,
            phases,
            expectations,
        })
    }

    /// Every value of the report as tidy rows, in a stable order: the one
    /// naming that the CSV output, sweeps, plots and the Python API share.
    /// Names never collide across kinds: counters keep the kernel's names,
    /// folio cells are `folios/<region>/<bucket>` (as [`Report::value`]
    /// looks them up), raw pagemap entries `pagemap/<step>/<index>`, and
    /// modelled time `modelled_ns` (the total) and `modelled_ns/<counter>`
    /// (its breakdown). Folio maps are not rows (a row per page would
    /// swamp a sweep): they are in the JSON output only.
    pub fn tidy_rows(&self) -> Vec<TidyRow<'_>> {
        let mut rows = Vec::new();
        for p in &self.phases {
            let row = |kind, name: String, value: i128| TidyRow {
                phase: &p.name,
                kind,
                name,
                value,
            };
            for (k, v) in &p.counters {
                rows.push(row(RowKind::Counter, k.clone(), *v as i128));
            }
            for (r, h) in &p.folios {
                for (b, n) in h {
                    rows.push(row(RowKind::Folios, format!("folios/{r}/{b}"), *n as i128));
                }
            }
            for (name, entries) in &p.pagemap {
                for (i, e) in entries.iter().enumerate() {
                    rows.push(row(
                        RowKind::Pagemap,
                        format!("pagemap/{name}/{i}"),
                        *e as i128,
                    ));
                }
            }
            if let Some(t) = &p.time {
                rows.push(row(
                    RowKind::Time,
                    "modelled_ns".into(),
                    t.modelled_ns as i128,
                ));
                for (k, v) in &t.breakdown {
                    rows.push(row(RowKind::Time, format!("modelled_ns/{k}"), *v as i128));
                }
            }
        }
        rows
    }

    /// Long-format CSV records (no header, [`CSV_COLUMNS`]): one per tidy
    /// row, with the report's identity and provenance on every record.
    fn csv_rows<W: std::io::Write>(&self, w: &mut csv::Writer<W>) -> csv::Result<()> {
        let p = self.provenance.clone().unwrap_or_default();
        let seed = p.seed.map(|s| s.to_string()).unwrap_or_default();
        let overrides = p.overrides_shell();
        let (kernel, release) = p.kernel.clone().unwrap_or_default();
        for r in self.tidy_rows() {
            w.write_record([
                self.scenario.as_str(),
                &self.arch,
                &self.engine,
                r.phase,
                r.kind.as_str(),
                &r.name,
                &r.value.to_string(),
                &p.foliosim,
                &p.scenario_path,
                &seed,
                &overrides,
                &kernel,
                &release,
            ])?;
        }
        Ok(())
    }

    /// The plain-text table: non-zero counters, histograms, expectations.
    fn table(&self, out: &mut String, color: bool) {
        let _ = writeln!(
            out,
            "scenario {}  arch {}  engine {}",
            self.scenario, self.arch, self.engine
        );
        if let Some(p) = &self.provenance {
            let _ = write!(out, "  foliosim {}  file {}", p.foliosim, p.scenario_path);
            if let Some(seed) = p.seed {
                let _ = write!(out, "  seed {seed}");
            }
            if !p.overrides.is_empty() {
                let _ = write!(out, "  {}", p.overrides_shell());
            }
            if let Some((name, release)) = &p.kernel {
                let _ = write!(out, "  kernel {name} (Linux {release})");
            }
            out.push('\n');
            if let Some(r) = &p.recording {
                let _ = writeln!(out, "  replayed from a recording of {r}");
            }
        }
        let knobs: Vec<String> = self
            .system
            .iter()
            .filter(|(k, _)| !k.contains("hugepages-"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(out, "  {}", knobs.join(" "));
        let sizes: Vec<String> = self
            .system
            .iter()
            .filter(|(k, v)| k.contains("hugepages-") && v.as_str() != "never")
            .map(|(k, v)| format!("{}={v}", k.trim_start_matches("transparent_hugepage.")))
            .collect();
        if !sizes.is_empty() {
            let _ = writeln!(out, "  {}", sizes.join(" "));
        }
        for p in &self.phases {
            let _ = writeln!(out, "\nphase {}", p.name);
            let w = p.counters.keys().map(|k| k.len()).max().unwrap_or(0);
            for (k, v) in p.counters.iter().filter(|(_, v)| **v != 0) {
                let _ = writeln!(out, "  {k:<w$}  {v:>14}");
            }
            if let Some(t) = &p.time {
                time_table(t, out);
            }
            for (r, h) in &p.folios {
                let cells: Vec<String> = h.iter().map(|(b, n)| format!("{b}:{n}")).collect();
                let _ = writeln!(
                    out,
                    "  folios {r}: {}",
                    if cells.is_empty() {
                        "(none mapped)".into()
                    } else {
                        cells.join(" ")
                    }
                );
            }
            for (name, entries) in &p.pagemap {
                let _ = writeln!(
                    out,
                    "  pagemap {name}: {} raw entries (in the JSON and CSV output)",
                    entries.len()
                );
            }
            for (region, m) in &p.maps {
                let _ = writeln!(
                    out,
                    "  folio map {region}: {} pages (in the JSON output; `foliosim plot --map` draws it)",
                    m.pages.len()
                );
            }
        }
        if !self.expectations.is_empty() {
            let _ = writeln!(out, "\nexpectations");
            for e in &self.expectations {
                let actual = e.actual.map_or("missing".to_string(), |a| format!("{a}"));
                let (verdict, style) = match (e.ok, e.judged) {
                    (true, _) => ("ok", OK_STYLE),
                    (false, true) => ("FAIL", FAIL_STYLE),
                    (false, false) => ("info", anstyle::Style::new()),
                };
                // Pad outside the escape sequences, so columns line up.
                let verdict = if color {
                    format!("{style}{verdict}{style:#}{}", " ".repeat(4 - verdict.len()))
                } else {
                    format!("{verdict:<4}")
                };
                let note = match (e.judged, e.actual) {
                    (true, _) => "",
                    (false, None) if foliosim_uapi::counters::x86_only(&e.counter) => {
                        " (an x86 tracepoint; this architecture has none; not judged)"
                    }
                    (false, None) => " (this engine does not measure it; not judged)",
                    (false, Some(_)) => " (other processes move it natively; not judged)",
                };
                let _ = writeln!(
                    out,
                    "  {verdict} {}:{} = {actual} (expected {} ± {}) at {}{note}",
                    e.phase, e.counter, e.expected, e.tolerance, e.at
                );
            }
        }
    }
}

/// The `maps` object of a phase: `{REGION: {"first_index": N, "runs":
/// [[BYTE, COUNT], ...]}}`.
fn read_maps(v: &Value) -> Result<BTreeMap<String, FolioMap>, String> {
    let obj = v.as_object().ok_or("`maps` is not an object")?;
    let mut out = BTreeMap::new();
    for (region, m) in obj {
        let bad = |what: &str| format!("`maps.{region}`: {what}");
        let first_index = m
            .get("first_index")
            .and_then(Value::as_u64)
            .filter(|&i| i < 512)
            .ok_or_else(|| bad("`first_index` is not an integer in 0..512"))?;
        let runs = m
            .get("runs")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("`runs` is not a list"))?;
        let mut pairs = Vec::with_capacity(runs.len());
        for (i, r) in runs.iter().enumerate() {
            let pair = r
                .as_array()
                .filter(|a| a.len() == 2)
                .and_then(|a| Some((u8::try_from(a[0].as_u64()?).ok()?, a[1].as_u64()?)))
                .ok_or_else(|| bad(&format!("run {i} is not [byte, count]")))?;
            pairs.push(pair);
        }
        let map =
            FolioMap::from_runs(first_index as u16, &pairs).map_err(|e| bad(&e.to_string()))?;
        out.insert(region.clone(), map);
    }
    Ok(out)
}

/// The `expectations` list of a report.
fn read_expectations(v: &Value) -> Result<Vec<ExpectOutcome>, String> {
    let list = v.as_array().ok_or("`expectations` is not a list")?;
    let mut out = Vec::new();
    for (i, e) in list.iter().enumerate() {
        let bad = |k: &str| format!("expectation {i}: `{k}` is missing or of the wrong type");
        let text = |k: &str| {
            e.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(k))
        };
        let flag = |k: &str| e.get(k).and_then(Value::as_bool).ok_or_else(|| bad(k));
        out.push(ExpectOutcome {
            at: text("at")?,
            phase: text("phase")?,
            counter: text("counter")?,
            expected: e
                .get("expected")
                .and_then(Value::as_f64)
                .ok_or_else(|| bad("expected"))?,
            actual: e.get("actual").and_then(Value::as_f64),
            tolerance: text("tolerance")?,
            ok: flag("ok")?,
            judged: flag("judged")?,
        });
    }
    Ok(out)
}

/// Modelled time in the table: the total and the top contributors.
fn time_table(t: &PhaseTime, out: &mut String) {
    const TOP: usize = 8;
    let ms = |ns: u64| ns as f64 / 1e6;
    let _ = writeln!(
        out,
        "  modelled time {:.3} ms (profile {}), top contributors:",
        ms(t.modelled_ns),
        t.profile
    );
    let w = t.top(TOP).iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in t.top(TOP) {
        let pct = if t.modelled_ns > 0 {
            100.0 * v as f64 / t.modelled_ns as f64
        } else {
            0.0
        };
        let _ = writeln!(out, "    {k:<w$}  {:>10.3} ms  {pct:>5.1}%", ms(v));
    }
}

/// Output formats of `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

impl Format {
    /// The names `--format` accepts, in the order of the enum.
    pub const NAMES: [&'static str; 3] = ["table", "json", "csv"];

    /// The format named `s` (one of [`Format::NAMES`]).
    pub fn from_name(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }
}

/// The provenance columns that end the records of every CSV output (run
/// and compare), in order.
pub const PROVENANCE_COLUMNS: [&str; 6] = [
    "foliosim",
    "scenario_path",
    "seed",
    "overrides",
    "kernel",
    "kernel_release",
];

/// `head` followed by [`PROVENANCE_COLUMNS`]; `M` must be `N + 6` (a
/// compile-time error otherwise).
pub const fn with_provenance_columns<const N: usize, const M: usize>(
    head: [&'static str; N],
) -> [&'static str; M] {
    assert!(M == N + PROVENANCE_COLUMNS.len(), "M must be N + 6");
    let mut out = [""; M];
    let mut i = 0;
    while i < M {
        out[i] = if i < N {
            head[i]
        } else {
            PROVENANCE_COLUMNS[i - N]
        };
        i += 1;
    }
    out
}

/// The CSV header: the columns of every CSV record, in order.
pub const CSV_COLUMNS: [&str; 13] = with_provenance_columns([
    "scenario", "arch", "engine", "phase", "kind", "name", "value",
]);

/// The verdict styles of the table's expectations (with colour).
const OK_STYLE: anstyle::Style =
    anstyle::Style::new().fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Green)));
const FAIL_STYLE: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Red)));

/// The JSON document of several reports: always
/// `{"foliosim": VERSION, "reports": [...]}`, one shape for any number of
/// reports. `version` is the writing foliosim's version.
pub fn json_document(reports: &[Report], version: &str) -> Value {
    json!({
        "foliosim": version,
        "reports": reports.iter().map(Report::to_json_value).collect::<Vec<_>>(),
    })
}

/// The reports of a JSON document [`json_document`] wrote. Files that
/// earlier foliosim versions wrote read too: a bare report (one scenario)
/// or a list of reports (several).
pub fn reports_from_json(v: &Value) -> Result<Vec<Report>, String> {
    let list = match v {
        Value::Array(list) => list,
        Value::Object(o) if !o.contains_key("reports") && o.contains_key("phases") => {
            return Report::from_json_value(v).map(|r| vec![r]);
        }
        _ => v
            .get("reports")
            .and_then(Value::as_array)
            .ok_or("not a foliosim JSON document: no `reports` list")?,
    };
    list.iter()
        .enumerate()
        .map(|(i, r)| Report::from_json_value(r).map_err(|e| format!("reports[{i}]: {e}")))
        .collect()
}

/// The version of this library, which the `foliosim` binary shares (one
/// workspace version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Render several reports in one document, without colour.
pub fn render(reports: &[Report], format: Format) -> String {
    render_styled(reports, format, false)
}

/// Render several reports in one document; `color` colours the table's
/// verdicts (ANSI escapes; the caller decides: a terminal, no `NO_COLOR`).
pub fn render_styled(reports: &[Report], format: Format, color: bool) -> String {
    let mut out = String::new();
    match format {
        Format::Json => {
            out = serde_json::to_string_pretty(&json_document(reports, VERSION))
                .expect("serialisable");
            out.push('\n');
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(CSV_COLUMNS).expect("writing to memory");
            for r in reports {
                r.csv_rows(&mut w).expect("writing to memory");
            }
            let bytes = w.into_inner().expect("writing to memory");
            out = String::from_utf8(bytes).expect("the records are UTF-8");
        }
        Format::Table => {
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                r.table(&mut out, color);
            }
        }
    }
    out
}

#[cfg(test)]
impl Report {
    /// A report of one phase, for the tests of this crate.
    pub(crate) fn of_phase(scenario: &str, arch: &str, engine: &str, phase: Phase) -> Report {
        Report {
            scenario: scenario.into(),
            arch: arch.into(),
            engine: engine.into(),
            phases: vec![phase],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut p = Phase {
            name: "measured".into(),
            ..Default::default()
        };
        p.counters.insert("pgfault".into(), 16);
        p.counters.insert("pgmajfault".into(), 0);
        p.folios
            .insert("data".into(), BTreeMap::from([("64kB".to_string(), 4u64)]));
        Report::of_phase("s", "x86_64", "sim", p)
    }

    #[test]
    fn json_has_contract_shape() {
        let v = sample().to_json_value();
        assert_eq!(v["phases"][0]["counters"]["pgfault"], 16);
        assert_eq!(v["phases"][0]["folios"]["data"]["64kB"], 4);
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "scenario",
                "arch",
                "engine",
                "provenance",
                "system",
                "phases",
                "expectations"
            ]
        );
    }

    #[test]
    fn json_reads_back() {
        let mut r = sample();
        r.system.insert("memory".into(), "1G".into());
        r.phases[0]
            .pagemap
            .insert("scan".into(), vec![1 << 63 | 42, 0, u64::MAX]);
        r.phases[0].maps.insert(
            "data".into(),
            FolioMap {
                first_index: 3,
                pages: vec![0x14, 0x14, 1, 0, 0x59],
            },
        );
        r.phases[0].time = Some(PhaseTime {
            profile: "p".into(),
            modelled_ns: 1234,
            breakdown: BTreeMap::from([("pgfault".to_string(), 1000u64)]),
        });
        r.expectations.push(ExpectOutcome {
            at: "s.toml:9:1".into(),
            phase: "measured".into(),
            counter: "pgfault".into(),
            expected: 16.0,
            actual: Some(16.0),
            tolerance: "0".into(),
            ok: true,
            judged: true,
        });
        let back = Report::from_json_value(&r.to_json_value()).unwrap();
        assert_eq!(back, r);
        // A map byte that is no page state is refused, naming the map.
        let mut v = r.to_json_value();
        v["phases"][0]["maps"]["data"]["runs"][0][0] = serde_json::json!(200);
        let err = Report::from_json_value(&v).unwrap_err();
        assert!(err.contains("maps.data") && err.contains("0xc8"), "{err}");
        let err = Report::from_json_value(&serde_json::json!({"scenario": "s"})).unwrap_err();
        assert!(err.contains("arch"), "{err}");
    }

    fn with_provenance(mut r: Report) -> Report {
        r.provenance = Some(Provenance {
            foliosim: "9.9.9".into(),
            scenario_path: "dir/a, \"b\".toml".into(),
            seed: Some(7),
            overrides: vec![
                Override {
                    option: "--set".into(),
                    key: "step.0.name".into(),
                    value: "x, \"y\" z".into(),
                },
                Override {
                    option: "--arch".into(),
                    key: "arch".into(),
                    value: "arm64".into(),
                },
            ],
            kernel: Some(("6.18.35-arm64".into(), "6.18.35".into())),
            ..Provenance::default()
        });
        r
    }

    #[test]
    fn csv_is_long_format() {
        let s = render(&[sample()], Format::Csv);
        assert!(s.starts_with(&(CSV_COLUMNS.join(",") + "\n")), "{s}");
        // Without provenance its columns are empty.
        assert!(s.contains("s,x86_64,sim,measured,counter,pgfault,16,,,,,,\n"));
        assert!(s.contains("s,x86_64,sim,measured,folios,folios/data/64kB,4,,,,,,\n"));
    }

    #[test]
    fn csv_quotes_commas_and_quotes_and_reads_back() {
        let mut r = with_provenance(sample());
        r.scenario = "odd, \"name\"".into();
        let text = render(&[r.clone()], Format::Csv);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            rd.headers().unwrap().iter().collect::<Vec<_>>(),
            CSV_COLUMNS
        );
        let recs: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        // One record per tidy row, each with all 13 fields.
        assert_eq!(recs.len(), r.tidy_rows().len());
        for rec in &recs {
            assert_eq!(rec.len(), CSV_COLUMNS.len());
            assert_eq!(&rec[0], "odd, \"name\"");
            assert_eq!(&rec[8], "dir/a, \"b\".toml");
            assert_eq!(&rec[9], "7");
            assert_eq!(&rec[11], "6.18.35-arm64");
            assert_eq!(&rec[12], "6.18.35");
        }
        // The overrides column is shell words that give the arguments back.
        let words = shlex::split(&recs[0][10]).unwrap();
        assert_eq!(
            words,
            ["--set", "step.0.name=x, \"y\" z", "--arch", "arm64"]
        );
        assert_eq!(&recs[0][5], "pgfault");
        assert_eq!(&recs[0][6], "16");
    }

    #[test]
    fn json_document_has_one_shape() {
        for n in [0, 1, 3] {
            let reports = vec![with_provenance(sample()); n];
            let v: Value = serde_json::from_str(&render(&reports, Format::Json)).unwrap();
            assert_eq!(v["foliosim"], VERSION);
            assert_eq!(v["reports"].as_array().unwrap().len(), n);
            assert_eq!(reports_from_json(&v).unwrap(), reports);
        }
        let e = reports_from_json(&json!({"foliosim": "x"})).unwrap_err();
        assert!(e.contains("reports"), "{e}");
        // The shapes earlier versions wrote: one report, or a list.
        let r = sample();
        assert_eq!(
            reports_from_json(&r.to_json_value()).unwrap(),
            std::slice::from_ref(&r)
        );
        let list = json!([r.to_json_value(), r.to_json_value()]);
        assert_eq!(reports_from_json(&list).unwrap(), [r.clone(), r]);
    }

    #[test]
    fn provenance_reads_back_and_may_be_absent() {
        let r = with_provenance(sample());
        let v = r.to_json_value();
        assert_eq!(v["provenance"]["seed"], 7);
        assert_eq!(v["provenance"]["overrides"][1]["option"], "--arch");
        assert_eq!(v["provenance"]["kernel"]["release"], "6.18.35");
        assert_eq!(Report::from_json_value(&v).unwrap(), r);
        // A report written without provenance (older foliosim) reads back.
        let mut old = v.clone();
        old.as_object_mut().unwrap().remove("provenance");
        assert_eq!(Report::from_json_value(&old).unwrap().provenance, None);
        let mut bad = v;
        bad["provenance"]["seed"] = json!("seven");
        let e = Report::from_json_value(&bad).unwrap_err();
        assert!(e.contains("seed"), "{e}");
    }

    #[test]
    fn table_shows_provenance_and_colours_only_when_asked() {
        let mut r = with_provenance(sample());
        r.expectations = vec![ExpectOutcome {
            at: "s.toml:9:1".into(),
            phase: "measured".into(),
            counter: "pgfault".into(),
            expected: 15.0,
            actual: Some(16.0),
            tolerance: "0".into(),
            ok: false,
            judged: true,
        }];
        let plain = render(&[r.clone()], Format::Table);
        assert!(
            plain.contains(
                "  foliosim 9.9.9  file dir/a, \"b\".toml  seed 7  --set 'step.0.name=x, \"y\" z' \
             --arch arm64  kernel 6.18.35-arm64 (Linux 6.18.35)\n"
            ),
            "{plain}"
        );
        assert!(plain.contains("  FAIL measured:pgfault = 16"), "{plain}");
        assert!(!plain.contains('\x1b'));
        let coloured = render_styled(&[r], Format::Table, true);
        assert!(
            coloured.contains("\x1b[1m\x1b[31mFAIL\x1b[0m measured:pgfault"),
            "{coloured:?}"
        );
    }

    #[test]
    fn tidy_names_never_collide_across_kinds() {
        let mut r = sample();
        r.phases[0].time = Some(PhaseTime {
            profile: "p".into(),
            modelled_ns: 100,
            breakdown: BTreeMap::from([("pgfault".to_string(), 60u64)]),
        });
        let rows = r.tidy_rows();
        let names: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names.len(), rows.len(), "{rows:?}");
        assert!(rows
            .iter()
            .any(|r| r.kind == RowKind::Time && r.name == "modelled_ns/pgfault" && r.value == 60));
        // Every folio row's name is what Report::value looks up.
        for row in rows.iter().filter(|r| r.kind == RowKind::Folios) {
            assert_eq!(r.value("measured", &row.name), Some(row.value as f64));
        }
    }

    #[test]
    fn table_hides_zero_counters() {
        let s = render(&[sample()], Format::Table);
        assert!(s.contains("pgfault"));
        assert!(!s.contains("pgmajfault"));
    }

    #[test]
    fn value_finds_folio_cells() {
        let r = sample();
        assert_eq!(r.value("measured", "folios/data/64kB"), Some(4.0));
        assert_eq!(r.value("measured", "folios/data/16kB"), Some(0.0));
        assert_eq!(r.value("nope", "pgfault"), None);
    }
}
