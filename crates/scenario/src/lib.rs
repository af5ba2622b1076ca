//! The scenario language of foliosim: a TOML file that describes a machine
//! (`[system]`), files (`[[file]]`), a workload (`[[step]]`) and expected
//! counter values (`[[expect]]`). See `docs/scenarios.md` for the language.
//!
//! [`load`] and [`parse_str`] turn a scenario file plus `--set KEY=VALUE`
//! overrides into a validated [`Scenario`]; every error names the file,
//! line, column and field. [`parse_size`], [`SplitMix64`] and
//! [`random_order`] are the size syntax and the random touch order that the
//! rest of the project shares.

#![forbid(unsafe_code)]

pub mod ast;
mod check;
mod error;
mod expect;
mod files;
mod overrides;
mod rng;
mod scoped;
mod size;
mod steps;
mod system;
mod tree;

use std::path::{Path, PathBuf};

pub use ast::*;
pub use error::{ScenarioError, SET_FILE};
pub use rng::{random_order, SplitMix64};
pub use scoped::ScopedMap;
pub use size::parse_size;

use check::Fields;
use error::{Ctx, Result};
use tree::Node;

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "system",
    "file",
    "step",
    "expect",
];

/// The label that errors give a scenario read from standard input.
pub const STDIN_LABEL: &str = "<stdin>";

/// A scenario's text and the label its errors name (the path as given, or
/// [`STDIN_LABEL`]): read once, parsed as often as a run needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub label: String,
    pub text: String,
    /// The recording directory the text was generated from, if any: its
    /// `replay.*` overrides regenerate the text.
    pub recording: Option<PathBuf>,
}

impl Source {
    /// Read the scenario file at `path`; `-` reads standard input to its
    /// end. An I/O error is a [`ScenarioError`] with line 0; text that is
    /// not UTF-8 names the line and column of the first bad byte.
    pub fn read(path: &Path) -> Result<Source> {
        if path.is_dir() {
            return Source::recording(path);
        }
        let stdin = path.as_os_str() == "-";
        let label = if stdin {
            STDIN_LABEL.to_string()
        } else {
            path.display().to_string()
        };
        let read = if stdin {
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut b).map(|_| b)
        } else {
            std::fs::read(path)
        };
        let bytes = read.map_err(|e| ScenarioError {
            file: label.clone(),
            line: 0,
            col: 0,
            field: String::new(),
            message: format!("cannot read the scenario: {e}"),
        })?;
        Source::from_bytes(label, bytes)
    }

    /// The replay scenario of the recording directory `dir`
    /// ([`foliosim_recording`]): its header followed by the steps its
    /// trace becomes, labelled with the header's path.
    pub fn recording(dir: &Path) -> Result<Source> {
        Source::recording_with(dir, foliosim_recording::Options::default())
    }

    /// [`Source::recording`], the trace translated with `opts`.
    pub fn recording_with(dir: &Path, opts: foliosim_recording::Options) -> Result<Source> {
        if !foliosim_recording::is_recording(dir) {
            return Err(ScenarioError {
                file: dir.display().to_string(),
                line: 0,
                col: 0,
                field: String::new(),
                message: format!(
                    "cannot read the scenario: a directory, but not a recording (it has no {})",
                    foliosim_recording::HEADER
                ),
            });
        }
        let (label, text) =
            foliosim_recording::replay_text(dir, opts).map_err(|e| ScenarioError {
                file: e.file.display().to_string(),
                line: 0,
                col: 0,
                field: String::new(),
                message: e.what,
            })?;
        Ok(Source {
            label,
            text,
            recording: Some(dir.to_path_buf()),
        })
    }

    /// The scenario text `bytes` named `label`; text that is not UTF-8
    /// names the line and column of the first bad byte.
    pub fn from_bytes(label: String, bytes: Vec<u8>) -> Result<Source> {
        let text = String::from_utf8(bytes).map_err(|e| {
            // Point at the first byte that is not UTF-8: its line and
            // column (in characters, 1-based) in the valid text before it.
            let (bytes, at) = (e.as_bytes(), e.utf8_error().valid_up_to());
            let good = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
            let line = good.matches('\n').count() + 1;
            let col = good.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            ScenarioError {
                file: label.clone(),
                line: line as u32,
                col: col as u32,
                field: String::new(),
                message: format!(
                    "the scenario is not UTF-8 text (byte {:#04x} at offset {at})",
                    bytes[at]
                ),
            }
        })?;
        Ok(Source {
            label,
            text,
            recording: None,
        })
    }

    /// Parse the text, apply `overrides` and validate (see [`parse_str`]).
    /// The `replay.*` overrides of a recording (`replay.phase_every`)
    /// change how its trace becomes steps: the text is generated again.
    pub fn parse(&self, overrides: &[(String, String)]) -> Result<Scenario> {
        let (replay, rest): (Vec<_>, Vec<_>) = overrides
            .iter()
            .cloned()
            .partition(|(k, _)| k.starts_with("replay."));
        if replay.is_empty() {
            return parse_str(&self.label, &self.text, overrides);
        }
        let mut opts = foliosim_recording::Options::default();
        for (k, v) in &replay {
            let err = |message: String| ScenarioError {
                file: SET_FILE.to_owned(),
                line: 0,
                col: 0,
                field: format!("{k}={v}"),
                message,
            };
            if self.recording.is_none() {
                return Err(err(format!(
                    "{k}: replay settings apply to recordings, and {} is not one",
                    self.label
                )));
            }
            match k.as_str() {
                "replay.phase_every" => {
                    opts.phase_every = v.parse().map_err(|_| {
                        err(format!(
                            "{k}: expected a whole number of epochs per phase (0: one phase)"
                        ))
                    })?
                }
                _ => {
                    return Err(err(format!(
                        "{k}: no such replay setting (there is replay.phase_every)"
                    )))
                }
            }
        }
        let dir = self.recording.as_deref().unwrap_or(Path::new(""));
        let src = Source::recording_with(dir, opts)?;
        parse_str(&src.label, &src.text, &rest)
    }
}

/// Read and parse the scenario file at `path` (`-`: standard input; see
/// [`Source::read`]), then apply `overrides` (`--set KEY=VALUE` pairs, in
/// order) and validate.
pub fn load(path: &Path, overrides: &[(String, String)]) -> Result<Scenario> {
    Source::read(path)?.parse(overrides)
}

/// Parse scenario `text`, naming it `file_label` in errors (its file stem is
/// the default scenario name), apply `overrides` and validate.
pub fn parse_str(file_label: &str, text: &str, overrides: &[(String, String)]) -> Result<Scenario> {
    let ctx = Ctx::new(file_label);
    let mut root = tree::parse_document(&ctx, text)?;
    overrides::apply(&ctx, &mut root, overrides)?;
    scenario(&ctx, &root, file_label)
}

fn scenario(ctx: &Ctx, root: &Node, file_label: &str) -> Result<Scenario> {
    let top = Fields::new(ctx, root, "", "at the top level".to_owned())?;
    top.check_allowed(TOP_KEYS)?;
    let name = match top.opt("name", Ctx::name)? {
        Some(name) => name,
        None => default_name(file_label),
    };
    let description = top
        .opt("description", Ctx::string)?
        .unwrap_or_default()
        .to_owned();
    let seed = top.opt("seed", Ctx::seed)?.unwrap_or(1);
    let system = system::system(ctx, top.get("system"))?;
    let files = files::files(ctx, top.get("file"))?;
    let checked = steps::steps(ctx, top.get("step"), &files, seed, system.cpus)?;
    let expects = expect::expects(ctx, top.get("expect"), &checked.phases)?;
    Ok(Scenario {
        name,
        description,
        seed,
        system,
        files,
        steps: checked.steps,
        expects,
    })
}

/// The file stem of `file_label` (the label itself if it has none).
fn default_name(file_label: &str) -> String {
    if file_label == STDIN_LABEL {
        return "stdin".to_owned();
    }
    Path::new(file_label).file_stem().map_or_else(
        || file_label.to_owned(),
        |s| s.to_string_lossy().into_owned(),
    )
}
