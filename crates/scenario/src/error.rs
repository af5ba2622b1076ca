//! The error type of the crate and the helpers that build it.

use std::fmt;
use std::sync::Arc;

use crate::ast::Loc;
use crate::tree::Origin;

/// The `file` of an error caused by a `--set KEY=VALUE` override.
pub const SET_FILE: &str = "--set";

/// A tool error in a scenario: where, which field, what was expected.
///
/// For an error in the scenario file, `file`, `line` and `col` (1-based)
/// point at the offending text and `field` names the field, such as
/// `step[3].pattern` (empty for TOML syntax and I/O errors, and line 0 for
/// the latter).
///
/// For an error caused by a `--set KEY=VALUE` override, `file` is `"--set"`,
/// `line` and `col` are 0, `field` is `KEY=VALUE` and `message` starts with
/// the scenario field the override resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file == SET_FILE {
            write!(f, "--set {}: {}", self.field, self.message)
        } else if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else if self.field.is_empty() {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            )
        } else {
            write!(
                f,
                "{}:{}:{}: {}: {}",
                self.file, self.line, self.col, self.field, self.message
            )
        }
    }
}

impl std::error::Error for ScenarioError {}

pub(crate) type Result<T, E = ScenarioError> = std::result::Result<T, E>;

/// What every validation step needs to build errors and locations.
pub(crate) struct Ctx {
    pub file: Arc<str>,
}

impl Ctx {
    pub fn new(file: &str) -> Self {
        Ctx { file: file.into() }
    }

    /// An error about `field`, located at `origin`.
    pub fn err(&self, origin: &Origin, field: &str, message: impl Into<String>) -> ScenarioError {
        let message = message.into();
        match origin {
            Origin::File { line, col } => ScenarioError {
                file: self.file.to_string(),
                line: *line,
                col: *col,
                field: field.to_owned(),
                message,
            },
            Origin::Set { key, value } => ScenarioError {
                file: SET_FILE.to_owned(),
                line: 0,
                col: 0,
                field: format!("{key}={value}"),
                message: if field.is_empty() {
                    message
                } else {
                    format!("{field}: {message}")
                },
            },
        }
    }

    /// The location of `origin` for the typed scenario.
    pub fn loc(&self, origin: &Origin) -> Loc {
        match origin {
            Origin::File { line, col } => Loc {
                file: Arc::clone(&self.file),
                line: *line,
                col: *col,
            },
            Origin::Set { key, value } => Loc {
                file: format!("{SET_FILE} {key}={value}").into(),
                line: 0,
                col: 0,
            },
        }
    }
}
