//! The provenance stamped on a report: the version, the scenario as named,
//! its seed and every override as the user gave it.

use foliosim_report::{Override, Provenance};
use foliosim_uapi::Arch;

/// The git commit this foliosim was built from (`git rev-parse --short
/// HEAD`), `unknown` when it was not built from a git checkout.
pub const COMMIT: &str = env!("FOLIOSIM_COMMIT");

/// The version and the commit, as `foliosim --version` prints them
/// (`0.1.0 (1a2b3c4)`).
pub const VERSION_AND_COMMIT: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("FOLIOSIM_COMMIT"),
    ")"
);

/// The overrides of a run as the user gave them: `--set KEY=VALUE` pairs
/// in order, then `--arch` and `--seed` (which win).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Given {
    pub set: Vec<(String, String)>,
    pub arch: Option<Arch>,
    pub seed: Option<u64>,
}

impl Given {
    /// The scenario keys they set, in the order the parser applies them.
    pub fn overrides(&self) -> Vec<(String, String)> {
        let mut out = self.set.clone();
        if let Some(a) = self.arch {
            out.push(("arch".into(), a.as_str().into()));
        }
        if let Some(seed) = self.seed {
            out.push(("seed".into(), seed.to_string()));
        }
        out
    }

    /// The provenance of a run of the scenario named `label` with these
    /// overrides, its `seed`, and the guest kernel's name and release.
    pub fn provenance(
        &self,
        label: &str,
        seed: u64,
        kernel: Option<(String, String)>,
    ) -> Provenance {
        let mut overrides: Vec<Override> = self
            .set
            .iter()
            .map(|(k, v)| Override {
                option: "--set".into(),
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        if let Some(a) = self.arch {
            overrides.push(Override {
                option: "--arch".into(),
                key: "arch".into(),
                value: a.as_str().into(),
            });
        }
        if let Some(s) = self.seed {
            overrides.push(Override {
                option: "--seed".into(),
                key: "seed".into(),
                value: s.to_string(),
            });
        }
        // A recording's replay is labelled with its header's path.
        let recording = std::path::Path::new(label)
            .parent()
            .filter(|_| label.ends_with(foliosim_recording::HEADER))
            .and_then(foliosim_recording::describe);
        Provenance {
            foliosim: foliosim_report::VERSION.into(),
            scenario_path: label.to_string(),
            seed: Some(seed),
            overrides,
            kernel,
            recording,
            ..Provenance::default()
        }
    }
}
