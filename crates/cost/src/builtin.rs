//! The shipped profiles, built from constants: build.rs parses
//! profiles/*.toml with the parser of [`crate::profile`] when the crate is
//! built and writes the constants, so that a run does not parse TOML.

use std::path::Path;

use crate::profile::{Cost, CostError, Profile, BUILTIN};

include!(concat!(env!("OUT_DIR"), "/builtin_profiles.rs"));

/// A shipped profile from its parts: costs and waits as (counter, ns,
/// group, source).
fn built(
    name: &str,
    arch: &str,
    cpu: &str,
    description: &str,
    costs: &[(&str, f64, Option<&str>, &str)],
    waits: &[(&str, f64, Option<&str>, &str)],
) -> Profile {
    let table = |list: &[(&str, f64, Option<&str>, &str)]| {
        list.iter()
            .map(|&(counter, ns, group, source)| {
                let cost = Cost {
                    ns,
                    group: group.map(str::to_string),
                    source: source.to_string(),
                };
                (counter.to_string(), cost)
            })
            .collect()
    };
    Profile {
        name: name.to_string(),
        arch: arch.to_string(),
        cpu: cpu.to_string(),
        description: description.to_string(),
        costs: table(costs),
        waits: table(waits),
    }
}

impl Profile {
    /// Load a profile by file path or by the name of a shipped profile.
    pub fn resolve(spec: &str) -> Result<Profile, CostError> {
        let path = Path::new(spec);
        if path.exists() || spec.ends_with(".toml") || spec.contains('/') {
            let text = std::fs::read_to_string(path).map_err(|e| CostError {
                file: spec.to_string(),
                line: 0,
                col: 0,
                field: String::new(),
                message: format!("cannot read the profile: {e}"),
            })?;
            return Profile::parse(spec, &text);
        }
        match builtin_profile(spec) {
            Some(p) => Ok(p),
            None => Err(CostError {
                file: spec.to_string(),
                line: 0,
                col: 0,
                field: String::new(),
                message: format!(
                    "no such profile file, and no shipped profile of that name (shipped: {})",
                    BUILTIN
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each shipped profile built from the constants equals what the
    /// parser reads from its file at run time.
    #[test]
    fn built_profiles_are_the_parsed_ones() {
        for (name, text) in BUILTIN {
            let parsed = Profile::parse(name, text).expect("a shipped profile parses");
            assert_eq!(builtin_profile(name), Some(parsed), "{name}");
            assert_eq!(Profile::resolve(name).ok(), builtin_profile(name));
        }
        assert_eq!(builtin_profile("no-such-profile"), None);
    }
}
