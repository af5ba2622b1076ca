//! The sweep's points and results as the tidy table (`foliosim-table`)
//! reads them.

use foliosim_report::{Override, Provenance, Report};
use foliosim_table::{PointOutcome, SweepPoint};

use crate::grid::Source;
use crate::run::{Engine, PointResult};
use crate::spec::{Point, SweepSpec};

impl SweepPoint for Point {
    fn index(&self) -> usize {
        self.index
    }
    fn scenario(&self) -> &str {
        &self.name
    }
    fn arch(&self) -> &str {
        &self.arch
    }
    fn grid(&self) -> &[(String, String)] {
        &self.grid
    }
}

impl PointOutcome for PointResult {
    type Point = Point;
    fn point(&self) -> &Point {
        &self.point
    }
    fn engine(&self) -> &str {
        &self.engine
    }
    fn report(&self) -> Result<&Report, &str> {
        self.result.as_ref().map_err(String::as_str)
    }
}

/// The provenance of a sweep's table: foliosim's version and commit, the
/// scenario files, the base overrides as options (`--arch`, `--seed`,
/// else `--set`, a sweep file's `[set]` included), the engine with its
/// kernel and architecture (native and VM), and the cost profile.
pub fn provenance(spec: &SweepSpec, engine: &Engine) -> Provenance {
    let overrides: Vec<Override> = spec
        .base
        .iter()
        .map(|s| Override {
            option: match (&s.source, s.key.as_str()) {
                (Source::ArchArg, _) => "--arch",
                (_, "seed") => "--seed",
                _ => "--set",
            }
            .into(),
            key: s.key.clone(),
            value: s.value.clone(),
        })
        .collect();
    let seed = spec
        .base
        .iter()
        .rev()
        .find(|s| s.key == "seed")
        .and_then(|s| s.value.parse().ok());
    let files: Vec<String> = spec
        .scenarios
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let (kernel, arch) = engine.platform();
    Provenance {
        foliosim: foliosim_report::VERSION.into(),
        scenario_path: foliosim_table::join_words(&files),
        seed,
        overrides,
        kernel,
        commit: Some(foliosim_run::COMMIT.into()),
        engine: Some(engine.name().into()),
        arch,
        profile: match engine {
            Engine::Sim(o) => o.profile.clone(),
            _ => None,
        },
        recording: None,
    }
}
